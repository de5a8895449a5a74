/* gmabench.c: speed and memory benchmarks, printed as tables with ratios measured side by
 * side in the same run (tests never assert timings). This file parses the arguments and
 * wires them to the measurements in src/bench/ (bench.h): mixer, model, decode, prefill,
 * cross, calibrate, summary, all. What each subcommand measures and what its columns mean
 * (the nominal FLOPs are the mixers' fused_flops, mixer.h): docs/benchmarks.md; the options:
 * `gmabench --help`. On cuda, timings wait for the GPU (ops_sync), memory is the backend's
 * device high-water mark (ops_mem_stats), and mixer points run in-process (a CUDA context
 * does not survive fork). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "cli/args/opts.h"
#include "cli/args/version.h"
#include "train/config_registry.h"
#include "nn/mixers/mixer.h"
#include "ops/ops.h"

/* the options: the benchmarks' own and those of this program */
typedef struct Args {
    BenchOpts o;
    const char *what, *json, *mixers, *in, *torch, *calib;
    int device, precision; /* OpsDevice, OpsPrecision */
    int threads;
    int failed; /* summary: 2 when an input could not be read */
} Args;

static int parse_list(const char *s, int *out, int cap) {
    int n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    char *sv = NULL;
    for (char *t = strtok_r(buf, ",", &sv); t && n < cap; t = strtok_r(NULL, ",", &sv)) {
        char *end;
        errno = 0;
        long v = strtol(t, &end, 10);
        if (errno || end == t || v <= 0 || v > (1L << 24)) return -1; /* up to the max_seq_len range */
        if (*end == 'K' || *end == 'k') v *= 1024, end++;
        if (*end || v > (1L << 24)) return -1;
        out[n++] = (int)v;
    }
    return n;
}

static const char *const USAGE = "gmabench mixer|model|decode|prefill|cross|calibrate|summary|all [options]\n";
static const char *const ABOUT =
    "  mixer   one mixer layer, forward + backward: time and peak memory per sequence length\n"
    "  model   whole-model training steps: tokens/s, GFLOP/s, share outside matrix products\n"
    "  decode  generation: incremental decoding of M sequences at once against its measured limit\n"
    "  prefill time to first token against prompt length (--seq), beside the training forward\n"
    "  cross   one cross-attention layer (gma, sdpa), forward + backward, per context length (--seq)\n"
    "  calibrate auto's threshold: where gma's training forward overtakes sdpa's (--out FILE)\n"
    "  summary one table from the JSON of earlier runs (--in a.json,b.json; --torch DIR)\n"
    "  all     mixer and model with their defaults\n"
    "Defaults in brackets.\n";

/* --seq, --samples: a list of lengths ("512,1K,4096") */
static int seq_list(const char *v, void *o) {
    BenchOpts *b = o;
    b->seq_given = 1;
    return (b->n_seq = parse_list(v, b->seq, BENCH_MAX_SEQ)) <= 0 ? gma_errorf("--seq: bad list \"%s\"", v) : 0;
}
static int samples_list(const char *v, void *o) {
    BenchOpts *b = o;
    return (b->n_samples = parse_list(v, b->samples, BENCH_MAX_SAMPLES)) <= 0 ? gma_errorf("--samples: bad list \"%s\"", v)
                                                                               : 0;
}

/* the options of the benchmarks' shapes */
/* the options of the benchmarks' shapes, in the ranges of the config keys they stand for
 * (model.d_model, model.n_heads, gma.n_components, train.batch_size, model.n_layers,
 * model.vocab_size, train.seq_len), so that no size made of them wraps */
#define SHAPE_ROWS(o)                                                                                                    \
    OPTI("--D", &(o)->D, 1, 65536, "width [256]"), OPTI("--H", &(o)->H, 1, 1024, "heads [4]"),                          \
        OPTI("--Kc", &(o)->Kc, 1, 65536, "GMA components [64]"),                                                        \
        OPTI("--B", &(o)->B, 1, 1000000, "batch [mixer 1, model 4]"),                                                   \
        OPTI("--L", &(o)->L, 1, CFG_MAX_LAYERS, "layers (model, decode) [4]"),                                          \
        OPTI("--V", &(o)->V, 1, 16777216, "vocabulary (model, decode) [8192]"),                                         \
        OPTI("--T", &(o)->T, 1, 16777216, "tokens per sequence (model, decode) [256]")

/* argv into a: OPTS_GO_ON, or the exit code (--help 0, bad input 2) */
static int parse_args(Args *a, int argc, char **argv) {
    int bidir = 0, n_pos = 0;
    BenchOpts *o = &a->o;
    OptList sets = {o->sets, &o->n_sets, BENCH_MAX_SETS};
    const Opt opts[] = {
        OPTS("--mixers", &a->mixers, "a,b", "mixers to compare, the first is the reference [gma,sdpa]"),
        OPTFN("--seq", seq_list, o, "512,1K,...", "sequence lengths (mixer) [512,...,16384]"),
        SHAPE_ROWS(o),
        OPTF("--bidir", &bidir, "bidirectional instead of causal"),
        OPTI("--repeat", &o->repeat, 1, 1000000, "repeats per point (median reported) [3]"), /* a time per repeat is kept */
        OPTD("--max-seconds", &o->max_seconds, 0, 1e9, "time limit of a point: longer ones are skipped [60]"),
        OPTD("--max-mem-gib", &o->max_mem_gib, 0, 1e9, "memory limit of a point: larger ones are skipped [12]"),
        OPTI("--steps", &o->steps, 1, INT_MAX, "timed rounds of the training step (model) [9]"),
        OPTFN("--samples", samples_list, o, "1,8,64", "sequences generated at once (decode) [1]"),
        OPTF("--full-forward", &o->full, "also time a full forward per token (decode, M = 1)"),
        OPTI("--feed-max", &o->feed_max, 0, INT_MAX, "prefill: also feed prompts up to this length a step a token [4096]"),
        OPTF("--shapes", &o->shapes, "per op-table product shape: its time in the step against its replay (model, CPU)"),
        OPTD("--peak-tflops", &o->peak_tflops, 1e-12, 1e6, "the device's peak TFLOP/s: adds model FLOP utilisation"),
        OPTS("--json", &a->json, "FILE", "also write the results as JSON"),
        OPTS("--out", &a->calib, "FILE", "calibrate: the calibration file [auto_calibration.json]"),
        OPTS("--in", &a->in, "A.json,B.json", "summary: the JSON files of earlier gmabench runs"),
        OPTS("--torch", &a->torch, "DIR", "summary: scripts/bench_torch.sh's --out directory"),
        OPTE("--device", &a->device, OPS_DEVICES, "backend [cpu]"),
        OPTE("--precision", &a->precision, OPS_PRECISIONS, "precision (cuda) [fp32]"),
        OPT_THREADS(&a->threads, "CPU threads, 0 all"),
        OPTR("--set", &sets, "key=value", "any config key, up to 16"),
    };
    OptProg p = {.name = "gmabench", .usage = USAGE, .about = ABOUT, .opts = opts, .n_opts = OPT_COUNT(opts),
                 .exit_codes = "0 done, 1 failure while running, 2 bad input", .pos = &a->what, .n_pos = &n_pos,
                 .max_pos = 1, .need_args = 1};
    int rc = cli_parse(&p, argc, argv, 1);
    if (rc != OPTS_GO_ON) return rc;
    if (a->mixers) snprintf(o->mixers, sizeof o->mixers, "%s", a->mixers);
    if (bidir) o->causal = 0;
    const char *w = a->what ? a->what : "";
    if (strcmp(w, "mixer") && strcmp(w, "model") && strcmp(w, "decode") && strcmp(w, "prefill") && strcmp(w, "cross") &&
        strcmp(w, "calibrate") && strcmp(w, "summary") && strcmp(w, "all")) {
        fprintf(stderr, "gmabench: unknown benchmark \"%s\" (mixer, model, decode, prefill, cross, calibrate, summary or all)\n", w);
        return 2;
    }
    return OPTS_GO_ON;
}

/* the checks before any benchmark runs: 0, or 2 with one line */
static int check_args(const Args *a) {
    char names[BENCH_MAX_MIXERS][32];
    int n = bench_mixer_names(&a->o, names, BENCH_MAX_MIXERS);
    for (int k = 0; k < n; k++) {
        const MixerVT *vt = mixer_find(names[k]);
        if (!vt) {
            fprintf(stderr, "gmabench: --mixers: unknown mixer \"%s\" (known: %s)\n", names[k], mixer_names());
            return 2;
        }
        if (!vt->fused_flops) { /* required of every mixer (mixer.h) */
            fprintf(stderr, "gmabench: --mixers: mixer \"%s\" declares no FLOP count (MixerVT.fused_flops)\n", names[k]);
            return 2;
        }
    }
    if (bench_check_sets(&a->o) != 0) {
        fprintf(stderr, "gmabench: %s\n", gma_error());
        return 2;
    }
    if (n == 0) {
        fprintf(stderr, "gmabench: --mixers: empty list \"%s\"\n", a->o.mixers);
        return 2;
    }
    if (a->o.D % a->o.H) {
        fprintf(stderr, "gmabench: --D %d is not divisible by --H %d\n", a->o.D, a->o.H);
        return 2;
    }
    return 0;
}

/* the first line and the JSON's fields of the machine */
static void header(const Args *a, cJSON *out) {
    const char *prec = ops_precision_name(a->precision);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("# gmabench %s | backend %s (%s, precision %s) | %ld cores | %s | OpenBLAS kernels %s\n", GMA_VERSION,
           g_ops->name, ops_device_name(), prec, ncpu, REAL_NAME, ops_blas_core());
    cJSON_AddStringToObject(out, "backend", g_ops->name);
    cJSON_AddStringToObject(out, "device_name", ops_device_name());
    cJSON_AddStringToObject(out, "blas_core", ops_blas_core());
    cJSON_AddStringToObject(out, "precision", prec);
    cJSON_AddNumberToObject(out, "cores", (double)ncpu);
}

/* the benchmarks a->what names; B given or each one's default */
static void run_benchmarks(Args *a, BenchProf *prof, cJSON *out) {
    const char *w = a->what;
    int B_given = a->o.B;
    if (!strcmp(w, "mixer") || !strcmp(w, "all")) {
        a->o.B = B_given ? B_given : 1;
        bench_mixers(&a->o, prof, out);
    }
    if (!strcmp(w, "model") || !strcmp(w, "all")) {
        a->o.B = B_given ? B_given : 4;
        bench_model(&a->o, prof, out);
    }
    if (!strcmp(w, "decode")) bench_decode(&a->o, prof, out);
    if (!strcmp(w, "prefill")) bench_prefill(&a->o, prof, out);
    if (!strcmp(w, "cross")) {
        a->o.B = B_given ? B_given : 1;
        bench_cross(&a->o, out);
    }
    if (!strcmp(w, "calibrate")) {
        static const int seq[] = {512, 1024, 2048, 4096, 8192};
        if (!a->o.seq_given) memcpy(a->o.seq, seq, sizeof seq), a->o.n_seq = (int)(sizeof seq / sizeof seq[0]);
        if (bench_calibrate(&a->o, prof, out, a->calib ? a->calib : "auto_calibration.json") != 0) {
            fprintf(stderr, "gmabench: %s\n", gma_error());
            a->failed = 1;
        }
    }
    if (!strcmp(w, "summary") && bench_summary(a->in, a->torch) != 0) a->failed = 2;
}

/* --json: 0, or 1 with one line */
static int write_json(const char *path, const cJSON *out) {
    char *s = cJSON_Print(out);
    int rc = gma_write_file_atomic(path, s, strlen(s));
    if (rc != 0) fprintf(stderr, "gmabench: %s\n", gma_error());
    free(s);
    return rc != 0;
}

int main(int argc, char **argv) {
    gma_openmp_env(argv);
    config_register_all();
    if (cli_version("gmabench", argc, argv)) return 0;
    Args a = {.threads = -1};
    bench_opts_defaults(&a.o);
    int rc = parse_args(&a, argc, argv);
    if (rc != OPTS_GO_ON) return rc;
    if ((rc = check_args(&a)) != 0) return rc;
    if (ops_select(a.device) != 0 || ops_set_precision(a.precision) != 0) {
        fprintf(stderr, "gmabench: %s\n", gma_error());
        return 2;
    }
    if (a.threads >= 0) ops_set_threads(a.threads);
    BenchProf *prof = xmalloc(sizeof *prof);
    bench_prof_init(prof);
    cJSON *out = cJSON_CreateObject();
    header(&a, out);
    run_benchmarks(&a, prof, out);
    rc = a.json ? write_json(a.json, out) : 0;
    if (a.failed) rc = a.failed;
    cJSON_Delete(out);
    free(prof);
    return rc;
}
