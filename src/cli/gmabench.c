/* gmabench.c: speed and memory benchmarks, printed as tables with ratios measured side by
 * side in the same run (tests never assert timings).
 *
 *   gmabench mixer [--mixers gma,sdpa] [--seq 512,1024,...] [--D 256] [--H 4] [--Kc 64]
 *                  [--B 1] [--bidir] [--repeat 3] [--max-seconds 60] [--max-mem-gib 12]
 *     one mixer layer, forward + backward: median time (min-max over repeats) and peak
 *     extra memory (resident high-water mark above the layer's parameters, measured in a
 *     forked child per point), with the ratio against the first mixer listed, and cpu ms
 *     (the median process CPU time of a repeat: with --threads 1 the layer's own time on a
 *     shared machine); then, from
 *     one more pass through the profiling op table (as `model` counts): GEMM GF/s (the
 *     FLOPs of the products that go through the op table over the layer time), BLAS GF/s
 *     (the same FLOPs over those shapes replayed alone), their ratio, GEMM % (the share of
 *     that pass inside them), nom GF (those FLOPs plus the products inside the mixer's fused
 *     kernels, hidden_flops), nom GF/s (over the layer time) and nom/BLAS.
 *   gmabench model [--mixers gma,sdpa] [--L 4] [--D 256] [--H 4] [--V 8192] [--B 4] [--T 256]
 *                  [--steps 9] [--Kc 64] [--peak-tflops X]
 *     whole-model training steps (forward, backward, AdamW): tokens/s, achieved GFLOP/s
 *     of the step's matrix products, the GFLOP/s the same BLAS reaches on exactly those
 *     matrix shapes replayed alone in the same run, and the share of the step spent outside
 *     matrix products, in rounds of one timed step and one replay of its shapes (ratio:
 *     the median over the rounds of replay time / step time, with its range; on a GPU the
 *     time inside products comes from one extra step with the device synchronised around
 *     each, the timed steps run unhindered). On the CPU the "all" columns add the products
 *     the backend runs inside its other ops (GMA routing, mixing cores, tiled attention:
 *     ops_set_cpu_product_hook) to the replay, each at 1/threads of its time when it ran in
 *     a parallel region of that many threads. --peak-tflops X adds the model FLOP
 *     utilisation: step GF/s (the step's counted matrix-product FLOPs over its time) over
 *     the device's peak X TFLOP/s for the precision (the caller's figure, not guessed).
 *     --shapes (CPU) adds, after each row, every op-table product shape with its count per
 *     step, its time inside the timed steps (per step) and its best replay times the count,
 *     so the products that run slower inside the step than alone can be named.
 *   gmabench decode [--mixers gma,sdpa] [--L 4] [--D 256] [--H 4] [--V 8192] [--T 256] [--Kc 64]
 *                   [--samples 1,8,64] [--repeat 3] [--full-forward]
 *     generation: a random prompt of T/2 tokens continued by T/2 greedy tokens in M
 *     sequences at once (model_generate_batch, one decode step for all M), for each M of
 *     --samples: tokens/s of the generated tokens (median, min-max over repeats), the
 *     limit measured in the same run on the step's own shapes (its weight products
 *     replayed alone, after each repeat as many times as it took steps: cblas_sgemv at
 *     M = 1, the same GEMM at M > 1; plus one streaming read (cblas_sasum) of as many bytes
 *     as the step reads from its decode state at the mean context -- sdpa's key/value rows,
 *     the linear cores' S and z -- so a memory-bound step is held to the bandwidth measured
 *     on a buffer of that size; median over repeats; CPU only) and the ratio. --full-forward adds tokens/s with a full forward per token (M = 1). Mixers
 *     without a decode step (auto with its threshold inside the window) say so.
 *   gmabench all [--json FILE]: mixer and model with their defaults.
 * Common: --json FILE, --device cpu|cuda, --precision fp32|tf32|bf16 (cuda), --threads N,
 * --set key=value (any config key, e.g. performer.features=64 or linformer.k=128; repeatable).
 * On cuda, timings wait for the GPU (ops_sync) and memory is the backend's device memory
 * high-water mark (ops_mem_stats); mixer points run in-process (a CUDA context does not
 * survive fork). */
#include <cblas.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <omp.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/args/version.h"
#include "core/config.h"
#include "model/generate.h"
#include "model/model.h"
#include "nn/mixers/mixer.h"
#include "ops/ops.h"
#include "optim/optim.h"

typedef struct Opts {
    char mixers[512];
    int seq[32], n_seq;
    int samples[16], n_samples; /* decode: sequences generated at once */
    int full;                   /* decode: also a full forward per token */
    int shapes;                 /* model: each op-table product shape, in the step and replayed */
    int D, H, Kc, B, causal, repeat, L, V, T, steps;
    double max_seconds, max_mem_gib, peak_tflops;
    const char *json, *device, *precision;
    int threads;
    const char *sets[16]; /* --set key=value, applied to every benchmarked config */
    int n_sets;
} Opts;

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

/* a "VmHWM:" / "VmRSS:" line of /proc/self/status, in bytes */
static double proc_status_bytes(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) kb = atof(line + n);
    fclose(f);
    return kb * 1024;
}

static Config bench_config(const Opts *o, const char *mixer, int N) {
    Config c;
    cfg_defaults(&c);
    c.model.d_model = o->D;
    c.model.n_heads = o->H;
    c.model.n_layers = o->L;
    c.model.max_seq_len = N;
    c.train.seq_len = N;
    c.model.vocab_size = o->V;
    char kc[48];
    snprintf(kc, sizeof kc, "gma.n_components=%d", o->Kc);
    if (cfg_set(&c, kc) != 0) fprintf(stderr, "gmabench: --Kc: %s\n", gma_error());
    c.model.causal = o->causal;
    snprintf(c.model.mixer[0], sizeof c.model.mixer[0], "%s", mixer);
    c.model.n_mixer = 1;
    for (int i = 0; i < o->n_sets; i++)
        if (cfg_set(&c, o->sets[i]) != 0) fprintf(stderr, "gmabench: %s\n", gma_error());
    return c;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---------------- one mixer layer, measured in a child process ---------------- */
typedef struct MixResult {
    double med, lo, hi, peak, cpu_med; /* cpu_med: process CPU seconds of the median-CPU repeat */
    double gemm_flops, gemm_time, pass_time, blas_time; /* ops-table products of one pass (mixer_gemm_pass) */
    int ok;
} MixResult;
static void mixer_gemm_pass(MixResult *r, const MixerVT *vt, Mixer *m, const MixerCtx *ctx, real *y, const real *h,
                            real *dh, const real *dy, const real *params, real *grads, real *act, real *scratch);
static double hidden_flops(const Opts *o, const char *name, int N);

static int on_device(void) { return strcmp(g_ops->name, "cpu") != 0; }

/* CPU seconds of this process, all threads (with --threads 1, the layer's own time even
 * when other processes share the cores) */
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static MixResult mixer_measure(const Opts *o, const char *name, int N) {
    MixResult r = {0};
    Config c = bench_config(o, name, N);
    ParamTable pt = {0};
    Mixer *m = mixer_find(name)->create(&c, 0, &pt, "blocks.0.mixer");
    if (!m) {
        fprintf(stderr, "gmabench: %s\n", gma_error());
        pt_free(&pt);
        return r;
    }
    const MixerVT *vt = m->vt; /* may differ from the name's (sdpa falls back to sdpa_ref) */
    real *params = g_ops->alloc(pt.total * sizeof(real)), *grads = g_ops->alloc(pt.total * sizeof(real));
    Rng rng;
    rng_seed(&rng, 1);
    real *host = xcalloc(pt.total, sizeof(real));
    pt_init(&pt, host, &rng);
    if (vt->init) vt->init(m, host, &rng);
    g_ops->to_device(params, host, pt.total * sizeof(real));
    free(host);
    size_t n = (size_t)o->B * N * o->D;
    real *hh = xmalloc(n * sizeof(real));
    for (size_t i = 0; i < n; i++) hh[i] = (real)rng_normal(&rng);
    real *h = g_ops->alloc(n * sizeof(real)), *y = g_ops->alloc(n * sizeof(real)), *dh = g_ops->alloc(n * sizeof(real));
    g_ops->to_device(h, hh, n * sizeof(real));
    g_ops->to_device(y, hh, n * sizeof(real)); /* used as dy */
    free(hh);
    size_t dev_now, dev_peak;
    ops_sync();
    ops_mem_reset_peak();
    ops_mem_stats(&dev_now, &dev_peak);
    double base = on_device() ? (double)dev_now : proc_status_bytes("VmRSS:");
    real *act = g_ops->alloc(vt->act_size(m, o->B, N) * sizeof(real));
    real *scratch = g_ops->alloc(vt->scratch_size(m, o->B, N) * sizeof(real));
    real *dy = g_ops->alloc(n * sizeof(real));
    MixerCtx ctx = {.B = o->B, .N = N, .causal = o->causal, .training = 1};
    double t[64], tc[64];
    int R = GMA_MIN(o->repeat, 64);
    for (int i = -1; i < R; i++) {
        ops_sync();
        double t0 = gma_now(), c0 = cpu_seconds();
        vt->forward(m, &ctx, y, h, params, act, scratch);
        vt->backward(m, &ctx, dh, dy, h, params, grads, act, scratch);
        ops_sync();
        if (i >= 0) t[i] = gma_now() - t0, tc[i] = cpu_seconds() - c0;
    }
    qsort(t, R, sizeof(double), cmp_d);
    qsort(tc, R, sizeof(double), cmp_d);
    r.cpu_med = tc[R / 2];
    r.med = t[R / 2];
    r.lo = t[0];
    r.hi = t[R - 1];
    ops_mem_stats(&dev_now, &dev_peak);
    r.peak = (on_device() ? (double)dev_peak : proc_status_bytes("VmHWM:")) - base;
    mixer_gemm_pass(&r, vt, m, &ctx, y, h, dh, dy, params, grads, act, scratch);
    r.ok = 1;
    real *bufs[] = {params, grads, h, y, dh, act, scratch, dy};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) g_ops->free(bufs[i]);
    vt->destroy(m);
    pt_free(&pt);
    return r;
}

static void mixer_child(const Opts *o, const char *name, int N, int fd) {
    MixResult r = mixer_measure(o, name, N);
    if (write(fd, &r, sizeof r) != sizeof r) _exit(1);
    _exit(0);
}

static MixResult run_mixer_point(const Opts *o, const char *name, int N) {
    if (on_device()) return mixer_measure(o, name, N);
    MixResult r = {0};
    int p[2];
    if (pipe(p) != 0) return r;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        mixer_child(o, name, N, p[1]);
    }
    close(p[1]);
    if (read(p[0], &r, sizeof r) != sizeof r) r.ok = 0;
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    return r;
}

static double estimate_bytes(const Opts *o, const char *name, int N) {
    Config c = bench_config(o, name, N);
    ParamTable pt = {0};
    Mixer *m = mixer_find(name)->create(&c, 0, &pt, "x");
    if (!m) {
        pt_free(&pt);
        return 0;
    }
    const MixerVT *vt = m->vt;
    double b = (double)(vt->act_size(m, o->B, N) + vt->scratch_size(m, o->B, N)) * sizeof(real);
    vt->destroy(m);
    pt_free(&pt);
    return b;
}

static void bench_mixers(const Opts *o, cJSON *out) {
    char names[16][32];
    int nm = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", o->mixers);
    char *sv = NULL;
    for (char *t = strtok_r(buf, ",", &sv); t && nm < 16; t = strtok_r(NULL, ",", &sv)) snprintf(names[nm++], 32, "%s", t);
    printf("\n## mixer layer, forward+backward (%s, D=%d, H=%d, Kc=%d, B=%d, %s, %d repeats, %s)\n",
           o->causal ? "causal" : "bidirectional", o->D, o->H, o->Kc, o->B, g_ops->name, o->repeat, REAL_NAME);
    printf("%-10s %7s %12s %20s %14s %12s %9s %9s %9s %9s %7s %8s %9s %9s\n", "mixer", "N", "time ms", "min-max ms",
           "peak MiB", "time/first", "cpu ms", "GEMM GF/s", "BLAS GF/s", "ratio", "GEMM %", "nom GF", "nom GF/s",
           "nom/BLAS");
    cJSON *arr = cJSON_AddArrayToObject(out, "mixer");
    double first[32] = {0};
    double last_time[16] = {0};
    for (int s = 0; s < o->n_seq; s++) {
        int N = o->seq[s];
        for (int k = 0; k < nm; k++) {
            double est = estimate_bytes(o, names[k], N);
            MixResult r = {0};
            const char *why = NULL;
            const MixerVT *vt = mixer_find(names[k]);
            if (o->causal ? !vt->causal_ok : !vt->bidir_ok) why = o->causal ? "n/a: not causal" : "n/a: causal only";
            else if (est > o->max_mem_gib * 1073741824.0) why = "skipped: memory";
            else if (last_time[k] * 4.5 > o->max_seconds) why = "skipped: time";
            else r = run_mixer_point(o, names[k], N);
            if (!why && !r.ok) why = "failed";
            cJSON *row = cJSON_CreateObject();
            cJSON_AddStringToObject(row, "mixer", names[k]);
            cJSON_AddNumberToObject(row, "N", N);
            if (why) {
                printf("%-10s %7d %12s %20s %14.1f %12s  (planned %.1f MiB)\n", names[k], N, "-", why, 0.0, "-", est / 1048576);
                cJSON_AddStringToObject(row, "skipped", why);
                cJSON_AddNumberToObject(row, "planned_bytes", est);
                last_time[k] = 1e30;
            } else {
                if (k == 0) first[s] = r.med;
                char mm[64], ratio[32] = "-";
                snprintf(mm, sizeof mm, "%.2f-%.2f", r.lo * 1e3, r.hi * 1e3);
                if (first[s] > 0) snprintf(ratio, sizeof ratio, "%.3f", r.med / first[s]);
                /* GEMM: the products through the op table (their FLOPs over the layer time, the same
                 * FLOPs over their replay on this BLAS, the share of the recording pass spent inside
                 * them, each product synchronised); nom: those
                 * plus the products inside fused kernels (hidden_flops), over the layer time */
                double gf = r.gemm_flops / r.med / 1e9, bgf = r.blas_time > 0 ? r.gemm_flops / r.blas_time / 1e9 : 0;
                double nom = r.gemm_flops + hidden_flops(o, names[k], N), ngf = nom / r.med / 1e9;
                printf("%-10s %7d %12.2f %20s %14.1f %12s %9.2f %9.1f %9.1f %9.3f %6.1f%% %8.3f %9.1f %9.3f\n", names[k],
                       N, r.med * 1e3, mm, r.peak / 1048576, ratio, r.cpu_med * 1e3, gf, bgf, bgf > 0 ? gf / bgf : 0,
                       100 * r.gemm_time / r.pass_time, nom / 1e9, ngf, bgf > 0 ? ngf / bgf : 0);
                cJSON_AddNumberToObject(row, "ms", r.med * 1e3);
                cJSON_AddNumberToObject(row, "ms_min", r.lo * 1e3);
                cJSON_AddNumberToObject(row, "ms_max", r.hi * 1e3);
                cJSON_AddNumberToObject(row, "peak_bytes", r.peak);
                cJSON_AddNumberToObject(row, "planned_bytes", est);
                if (first[s] > 0) cJSON_AddNumberToObject(row, "ratio_to_first", r.med / first[s]);
                cJSON_AddNumberToObject(row, "cpu_ms", r.cpu_med * 1e3);
                cJSON_AddNumberToObject(row, "gemm_gflop", r.gemm_flops / 1e9);
                cJSON_AddNumberToObject(row, "gemm_gflops", gf);
                cJSON_AddNumberToObject(row, "blas_gflops_same_shapes", bgf);
                cJSON_AddNumberToObject(row, "share_in_gemm", r.gemm_time / r.pass_time);
                cJSON_AddNumberToObject(row, "nominal_gflop", nom / 1e9);
                cJSON_AddNumberToObject(row, "nominal_gflops", ngf);
                last_time[k] = r.med * o->repeat;
            }
            fflush(stdout);
            cJSON_AddItemToArray(arr, row);
        }
    }
}

/* ---------------- whole-model training step with matmul accounting ---------------- */
/* a recorded product shape; hidden: run by the CPU backend inside one of its other ops
 * (reported by ops_set_cpu_product_hook), par: threads of the parallel region it ran in,
 * so that its replayed time counts 1/par (the region runs par of them at once) */
typedef struct Shape { int M, N, K, ta, tb, batch, hidden, par; long count; double best, in_step; } Shape;
static Shape g_shapes[512];
static int g_nshapes, g_recording, g_timing;
static double g_mm_time, g_mm_flops, g_hid_flops;
static int g_in_table; /* inside a product of the op table: the backend's own report is not a hidden one */
static int g_shape_time; /* the timed rounds: each op-table product's time goes to its shape */
static const GmaOps *g_inner;
static GmaOps g_prof;

/* the recorded shape with these dimensions, or NULL */
static Shape *find_shape(int M, int N, int K, int ta, int tb, int batch, int hidden, int par) {
    for (int i = 0; i < g_nshapes; i++) {
        Shape *s = &g_shapes[i];
        if (s->M == M && s->N == N && s->K == K && s->ta == ta && s->tb == tb && s->batch == batch &&
            s->hidden == hidden && s->par == par)
            return s;
    }
    return NULL;
}
static void note_shape(int M, int N, int K, int ta, int tb, int batch, int hidden, int par) {
    if (!g_recording) return;
    Shape *s = find_shape(M, N, K, ta, tb, batch, hidden, par);
    if (s) s->count++;
    else if (g_nshapes < 512) g_shapes[g_nshapes++] = (Shape){M, N, K, ta, tb, batch, hidden, par, 1, 1e30, 0};
}
/* an op-table product's time in a timed round (op-table shapes are noted with hidden 0, par 1) */
static void shape_time(int M, int N, int K, int ta, int tb, int batch, double dt) {
    Shape *s = find_shape(M, N, K, ta, tb, batch, 0, 1);
    if (s) s->in_step += dt;
}
/* the CPU backend's products inside its other ops (ops_set_cpu_product_hook): counted in
 * every step, their shapes noted in the recording step; called from parallel regions too */
static void hidden_product(int M, int N, int K, int ta, int tb, int nthreads) {
    if (g_in_table) return;
#pragma omp critical(gmabench_hidden)
    {
        g_hid_flops += 2.0 * M * N * K;
        note_shape(M, N, K, ta, tb, 1, 1, nthreads);
    }
}
/* The products are timed (with the device synchronised around each) in the recording step,
 * and on the CPU in every step (timing costs nothing there); on a GPU the timed steps just
 * count their FLOPs, so it runs them unhindered. */
static void prof_matmul(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real al, real be) {
    double t0 = 0;
    if (g_timing) ops_sync(), t0 = gma_now();
    g_in_table = 1;
    g_inner->matmul(C, A, B, M, N, K, ta, tb, al, be);
    g_in_table = 0;
    if (g_timing) ops_sync(), g_mm_time += gma_now() - t0;
    if (g_shape_time) shape_time(M, N, K, ta, tb, 1, gma_now() - t0);
    g_mm_flops += 2.0 * M * N * K;
    note_shape(M, N, K, ta, tb, 1, 0, 1);
}
static void prof_matmul_strided(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real al,
                                real be, int batch, size_t sA, size_t sB, size_t sC) {
    double t0 = 0;
    if (g_timing) ops_sync(), t0 = gma_now();
    g_in_table = 1;
    g_inner->matmul_strided(C, A, B, M, N, K, ta, tb, al, be, batch, sA, sB, sC);
    g_in_table = 0;
    if (g_timing) ops_sync(), g_mm_time += gma_now() - t0;
    if (g_shape_time) shape_time(M, N, K, ta, tb, batch, gma_now() - t0);
    g_mm_flops += 2.0 * M * N * K * batch;
    note_shape(M, N, K, ta, tb, batch, 0, 1);
}

/* One replay round of the recorded shapes alone (operands of the shapes' sizes, beta = 0):
 * each shape runs REPLAY_REPS times after a warm call and its best time counts; returns this
 * round's seconds for one step's worth of the op table's products, adds the hidden ones'
 * (each best / par) to *hidden when given, and keeps each shape's best over all rounds in
 * Shape.best. */
#define REPLAY_REPS 3
static double replay_shapes(double *hidden) {
    double total = 0, hid = 0;
    g_in_table = 1; /* the replay's own products are not the backend's hidden ones */
    for (int i = 0; i < g_nshapes; i++) {
        Shape *s = &g_shapes[i];
        size_t a = (size_t)s->M * s->K * s->batch, b = (size_t)s->K * s->N * s->batch, c = (size_t)s->M * s->N * s->batch;
        real *A = g_inner->alloc(a * sizeof(real)), *Bm = g_inner->alloc(b * sizeof(real)), *C = g_inner->alloc(c * sizeof(real));
        double best = 1e30;
        for (int r = 0; r < REPLAY_REPS + 1; r++) {
            ops_sync();
            double t0 = gma_now();
            if (s->batch == 1) g_inner->matmul(C, A, Bm, s->M, s->N, s->K, s->ta, s->tb, 1, 0);
            else
                g_inner->matmul_strided(C, A, Bm, s->M, s->N, s->K, s->ta, s->tb, 1, 0, s->batch, (size_t)s->M * s->K,
                                        (size_t)s->K * s->N, (size_t)s->M * s->N);
            ops_sync();
            double dt = gma_now() - t0;
            if (r > 0 && dt < best) best = dt;
        }
        if (best < s->best) s->best = best;
        if (s->hidden) hid += best * s->count / s->par;
        else total += best * s->count;
        g_inner->free(A);
        g_inner->free(Bm);
        g_inner->free(C);
    }
    g_in_table = 0;
    if (hidden) *hidden += hid;
    return total;
}
/* the best over all rounds: the op table's products (hidden = 0) or the hidden ones */
static double replay_best(int hidden) {
    double total = 0;
    for (int i = 0; i < g_nshapes; i++)
        if (g_shapes[i].hidden == hidden) total += g_shapes[i].best * g_shapes[i].count / g_shapes[i].par;
    return total;
}

/* the causal language model of the bench shape with mixer t, allocated for B x T and
 * initialised; drop > 0: model.dropout and, where the mixer has it, model.attn_dropout at
 * that rate (docs/model.md §8). On failure the mixer's row says why and -1 is returned */
static int causal_model(const Opts *o, const char *t, int B, Model *m, double drop) {
    Opts oo = *o;
    oo.causal = 1;
    Config c = bench_config(&oo, t, o->T);
    if (drop > 0) {
        c.model.dropout = drop;
        if (mixer_find(t) && mixer_find(t)->attn_dropout_ok) c.model.attn_dropout = drop;
    }
    if (model_build(m, &c) != 0) {
        printf("%-10s %s\n", t, gma_error());
        return -1;
    }
    if (model_check_memory(m, B, o->T) != 0) {
        printf("%-10s skipped: %s\n", t, gma_error());
        model_free(m);
        return -1;
    }
    model_alloc(m, B, o->T);
    model_init_params(m, 1);
    return 0;
}

/* --shapes: each op-table product shape of the last mixer's step, its count per step, its time
 * inside the S timed steps (per step) and its best replay times the count (as printed and as
 * JSON "shapes" in row) */
static void shapes_table(cJSON *row, int S) {
    cJSON *arr = cJSON_AddArrayToObject(row, "shapes");
    printf("  %5s %5s %5s %2s %5s %5s %12s %12s %12s\n", "M", "N", "K", "t", "batch", "count", "in step ms",
           "replay ms", "replay/step");
    for (int i = 0; i < g_nshapes; i++) {
        const Shape *sh = &g_shapes[i];
        if (sh->hidden) continue;
        double step = sh->in_step / S, rep = sh->best * (double)sh->count;
        printf("  %5d %5d %5d %d%d %5d %5ld %12.3f %12.3f %12.3f\n", sh->M, sh->N, sh->K, sh->ta, sh->tb, sh->batch,
               sh->count, step * 1e3, rep * 1e3, step > 0 ? rep / step : 0);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "M", sh->M);
        cJSON_AddNumberToObject(e, "N", sh->N);
        cJSON_AddNumberToObject(e, "K", sh->K);
        cJSON_AddNumberToObject(e, "ta", sh->ta);
        cJSON_AddNumberToObject(e, "tb", sh->tb);
        cJSON_AddNumberToObject(e, "batch", sh->batch);
        cJSON_AddNumberToObject(e, "count", (double)sh->count);
        cJSON_AddNumberToObject(e, "step_ms", step * 1e3);
        cJSON_AddNumberToObject(e, "replay_ms", rep * 1e3);
        cJSON_AddItemToArray(arr, e);
    }
}

/* The whole-model step, measured in rounds: each round times one training step and then
 * replays the step's matrix shapes alone (replay_shapes), so a round's ratio (replay time /
 * step time) compares the two under the same machine load. The row gives the medians over the
 * rounds with their ranges; "BLAS GF/s" uses each shape's best over all rounds, and "best"
 * is that best replay over the fastest step (best against best: on a shared machine other
 * work only adds time to either). */
static void bench_model(const Opts *o, cJSON *out) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", o->mixers);
    double load[3] = {0};
    if (getloadavg(load, 3) < 0) load[0] = load[1] = load[2] = -1;
    int S = GMA_MIN(GMA_MAX(o->steps, 1), 64);
    printf("\n## whole-model training step (L=%d, D=%d, H=%d, V=%d, B=%d, T=%d, Kc=%d, %s, %d rounds, %s, load %.2f %.2f %.2f)\n",
           o->L, o->D, o->H, o->V, o->B, o->T, o->Kc, g_ops->name, S, REAL_NAME, load[0], load[1], load[2]);
    int time_all = !on_device();
    if (time_all) /* the CPU backend also reports the products inside its other ops */
        printf("all: with the products the CPU backend runs inside its other ops (GMA routing, mixing cores, tiled\n"
               "attention) replayed too, each at 1/threads of its time when it ran in a parallel region\n");
    printf("%-10s %10s %10s %15s %10s %10s %10s %10s %7s %12s %6s %10s %7s %12s %6s%s\n", "mixer", "params", "step ms",
           "min-max", "tokens/s", "step GF/s", "GEMM GF/s", "BLAS GF/s", "ratio", "min-max", "best", "non-GEMM %",
           "all", "min-max", "best", o->peak_tflops > 0 ? "      MFU %" : "");
    cJSON *arr = cJSON_AddArrayToObject(out, "model");
    cJSON_AddNumberToObject(out, "model_load_average", load[0]);
    if (time_all) ops_set_cpu_product_hook(hidden_product);
    char *sv = NULL;
    for (char *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
        double base_ms = 0;
        /* each mixer without dropout, then with dropout 0.1 in the same run */
        for (int dk = 0; dk < 2; dk++) {
            double drop = dk ? 0.1 : 0;
            Model m;
            if (causal_model(o, t, o->B, &m, drop) != 0) continue;
            char label[40];
            snprintf(label, sizeof label, dk ? "%s+d0.1" : "%s", t);
            int32_t *tok = xmalloc(sizeof(int32_t) * o->B * o->T), *tgt = xmalloc(sizeof(int32_t) * o->B * o->T);
            Rng rng;
            rng_seed(&rng, 2);
            for (int i = 0; i < o->B * o->T; i++) tok[i] = (int32_t)rng_below(&rng, o->V), tgt[i] = (int32_t)rng_below(&rng, o->V);
            double times[64], ratios[64], alls[64], outs[64], sorted[64];
            g_nshapes = 0;
            double flops_step = 0, hid_step = 0, mm_rec = 0;
            /* step -2 warms up, step -1 records the shapes and the time inside the products,
             * rounds 0 .. S-1 each time a step and a replay of the shapes */
            for (int s = -2; s < S; s++) {
                g_mm_time = g_mm_flops = g_hid_flops = 0;
                g_recording = s == -1;
                g_timing = g_recording || (s >= 0 && time_all);
                g_shape_time = s >= 0 && time_all;
                ops_sync();
                double t0 = gma_now();
                LossStats st;
                model_zero_grad(&m);
                model_forward(&m, tok, tgt, o->B, o->T, NULL, 0, &st, 1, s + 2);
                model_backward(&m, 1.0);
                double gn = optim_grad_norm(&m);
                optim_step(&m, &m.cfg.train, s + 3, 1e-4, gn);
                ops_sync();
                double dt = gma_now() - t0;
                if (s == -1) mm_rec = g_mm_time;
                if (s >= 0) {
                    g_recording = g_timing = 0;
                    times[s] = dt, flops_step = g_mm_flops, hid_step = g_hid_flops;
                    outs[s] = 1 - (time_all ? g_mm_time : mm_rec) / dt;
                    double hid = 0, tab = replay_shapes(&hid);
                    ratios[s] = tab / dt, alls[s] = (tab + hid) / dt;
                }
            }
            g_recording = g_timing = g_shape_time = 0;
            double med_out, r_med, r_lo, r_hi;
            memcpy(sorted, outs, sizeof(double) * S);
            qsort(sorted, S, sizeof(double), cmp_d);
            med_out = sorted[S / 2];
            memcpy(sorted, ratios, sizeof(double) * S);
            qsort(sorted, S, sizeof(double), cmp_d);
            r_med = sorted[S / 2], r_lo = sorted[0], r_hi = sorted[S - 1];
            memcpy(sorted, alls, sizeof(double) * S);
            qsort(sorted, S, sizeof(double), cmp_d);
            double a_med = sorted[S / 2], a_lo = sorted[0], a_hi = sorted[S - 1];
            qsort(times, S, sizeof(double), cmp_d);
            double med = times[S / 2];
            double blas_time = replay_best(0), all_best = (blas_time + replay_best(1)) / times[0];
            double gf = flops_step / med / 1e9, blas_gf = flops_step / blas_time / 1e9;
            double mm_med = (1 - med_out) * med;
            char mm[48], rr[32], ar[32] = "-", a1[16] = "-", a2[16] = "-";
            snprintf(mm, sizeof mm, "%.1f-%.1f", times[0] * 1e3, times[S - 1] * 1e3);
            snprintf(rr, sizeof rr, "%.3f-%.3f", r_lo, r_hi);
            if (time_all) {
                snprintf(a1, sizeof a1, "%.3f", a_med), snprintf(ar, sizeof ar, "%.3f-%.3f", a_lo, a_hi);
                snprintf(a2, sizeof a2, "%.3f", all_best);
            }
            printf("%-10s %10zu %10.1f %15s %10.0f %10.2f %10.2f %10.2f %7.3f %12s %6.3f %9.1f%% %7s %12s %6s", label,
                   model_param_count(&m), med * 1e3, mm, o->B * o->T / med, gf, flops_step / mm_med / 1e9, blas_gf, r_med, rr,
                   blas_time / times[0], 100 * med_out, a1, ar, a2);
            if (o->peak_tflops > 0) printf(" %11.2f%%", 100 * gf / (o->peak_tflops * 1e3));
            if (dk && base_ms > 0) printf("  (dropout 0.1 / 0: %.3f)", med * 1e3 / base_ms);
            printf("\n");
            cJSON *row = cJSON_CreateObject();
            cJSON_AddStringToObject(row, "mixer", t);
            cJSON_AddNumberToObject(row, "dropout", drop);
            cJSON_AddNumberToObject(row, "attn_dropout", m.cfg.model.attn_dropout);
            if (dk && base_ms > 0) cJSON_AddNumberToObject(row, "step_ms_vs_no_dropout", med * 1e3 / base_ms);
            if (!dk) base_ms = med * 1e3;
            cJSON_AddNumberToObject(row, "params", (double)model_param_count(&m));
            cJSON_AddNumberToObject(row, "rounds", S);
            cJSON_AddNumberToObject(row, "step_ms", med * 1e3);
            cJSON_AddNumberToObject(row, "step_ms_min", times[0] * 1e3);
            cJSON_AddNumberToObject(row, "step_ms_max", times[S - 1] * 1e3);
            cJSON_AddNumberToObject(row, "tokens_per_s", o->B * o->T / med);
            cJSON_AddNumberToObject(row, "gemm_gflop_per_step", flops_step / 1e9);
            cJSON_AddNumberToObject(row, "achieved_gflops", gf);
            cJSON_AddNumberToObject(row, "gemm_gflops_in_step", flops_step / mm_med / 1e9);
            cJSON_AddNumberToObject(row, "blas_gflops_same_shapes", blas_gf);
            cJSON_AddNumberToObject(row, "ratio", r_med);
            cJSON_AddNumberToObject(row, "ratio_min", r_lo);
            cJSON_AddNumberToObject(row, "ratio_max", r_hi);
            cJSON_AddNumberToObject(row, "ratio_best", blas_time / times[0]);
            cJSON_AddNumberToObject(row, "share_outside_gemm", med_out);
            if (time_all) {
                cJSON_AddNumberToObject(row, "hidden_gflop_per_step", hid_step / 1e9);
                cJSON_AddNumberToObject(row, "ratio_all", a_med);
                cJSON_AddNumberToObject(row, "ratio_all_min", a_lo);
                cJSON_AddNumberToObject(row, "ratio_all_max", a_hi);
                cJSON_AddNumberToObject(row, "ratio_all_best", all_best);
            }
            if (o->peak_tflops > 0) {
                cJSON_AddNumberToObject(row, "peak_tflops", o->peak_tflops);
                cJSON_AddNumberToObject(row, "mfu", gf / (o->peak_tflops * 1e3));
            }
            if (o->shapes && time_all) shapes_table(row, S);
            cJSON_AddItemToArray(arr, row);
            fflush(stdout);
            free(tok);
            free(tgt);
            model_free(&m);
        }
    }
    ops_set_cpu_product_hook(NULL);
}

/* ---------------- a mixer layer's matrix products ----------------
 * One more forward + backward of the layer with the profiling op table: the FLOPs and the
 * (synchronised) time of the products that go through it, and their shapes replayed alone. */
static void mixer_gemm_pass(MixResult *r, const MixerVT *vt, Mixer *m, const MixerCtx *ctx, real *y, const real *h,
                            real *dh, const real *dy, const real *params, real *grads, real *act, real *scratch) {
    const GmaOps *keep = g_ops;
    g_ops = &g_prof;
    g_nshapes = 0;
    g_mm_time = g_mm_flops = 0;
    g_recording = g_timing = 1;
    ops_sync();
    double t0 = gma_now();
    vt->forward(m, ctx, y, h, params, act, scratch);
    vt->backward(m, ctx, dh, dy, h, params, grads, act, scratch);
    ops_sync();
    r->pass_time = gma_now() - t0;
    g_recording = g_timing = 0;
    g_ops = keep;
    r->gemm_flops = g_mm_flops;
    r->gemm_time = g_mm_time;
    r->blas_time = replay_shapes(NULL);
}

/* the causal (chunk C) or bidirectional mixing core of docs/model.md §3.1 over BH heads: the
 * products cpu_linmix.c does, forward and backward */
static double linmix_flops(double BH, int N, int F, int d, int causal, int C) {
    if (!causal) return BH * 6 * 2.0 * N * F * d; /* S, out; dS, dphk, dV, dphq */
    double f = 0;
    for (int c0 = 0; c0 < N; c0 += C) {
        double L = GMA_MIN(C, N - c0), last = c0 + C >= N;
        f += (c0 > 0) * 2.0 * F * d * C;                       /* running state */
        f += 2 * L * L * F + 2 * L * d * F + 2 * L * L * d;     /* A, phq S, A V */
        f += (1 - last) * 2 * (2 * L * F * d);                  /* dphk, dV through later chunks */
        f += 2 * L * F * d + 2 * L * L * F + 2 * L * L * d;     /* dphq via S, A again, dA */
        f += 2 * (2 * L * L * F) + 2 * L * L * d + 2 * F * d * L; /* dphq, dphk via dA, dV via A, dS */
    }
    return BH * f;
}

/* FLOPs of the products a mixer does inside fused ops (not through the op table): GMA's
 * Gaussian routing and mixing core, the Linear Transformer's and Performer's core and
 * Performer's feature logits, the tiled sdpa's tile products (causal: the N (N + 1) / 2
 * visible pairs). sdpa_ref, linformer and mamba do all theirs through the table. */
/* a string key SECTION.KEY of config c ("" when absent) */
static void cfg_str(const Config *c, const char *section, const char *key, char *out, size_t cap) {
    char *txt = cfg_to_json(c);
    cJSON *j = cJSON_Parse(txt);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, section), key);
    snprintf(out, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
    cJSON_Delete(j);
    free(txt);
}

static double hidden_flops(const Opts *o, const char *name, int N) {
    Config c = bench_config(o, name, N);
    double BH = (double)o->B * o->H, n = N;
    int d = o->D / o->H, causal = o->causal;
    char s1[32], s2[32];
    if (!strcmp(name, "gma")) {
        int Kc = (int)cfg_num(&c, "gma.n_components");
        cfg_str(&c, "gma", "routing", s1, sizeof s1);
        cfg_str(&c, "gma", "memory", s2, sizeof s2);
        double route = strcmp(s1, "softmax") ? 2 * BH * 6 * 2.0 * n * Kc * d : 0; /* q and k: 2 + 4 products */
        if (!strcmp(s2, "ema")) return route;
        return route + linmix_flops(BH, N, Kc, d, causal, (int)cfg_num(&c, "gma.chunk"));
    }
    if (!strcmp(name, "linear")) return linmix_flops(BH, N, d, d, causal, (int)cfg_num(&c, "gma.chunk"));
    if (!strcmp(name, "performer")) {
        cfg_str(&c, "performer", "kernel", s1, sizeof s1);
        if (!strcmp(s1, "relu")) return linmix_flops(BH, N, d, d, causal, (int)cfg_num(&c, "gma.chunk"));
        int F = (int)cfg_num(&c, "performer.features");
        if (F == 0) F = 2 * d;
        return 2 * BH * 2 * 2.0 * n * F * d + linmix_flops(BH, N, F, d, causal, (int)cfg_num(&c, "gma.chunk"));
    }
    if (!strcmp(name, "sdpa")) /* S, PV; S again, dP, dV, dK, dQ */
        return BH * 7 * 2.0 * d * (causal ? n * (n + 1) / 2 : n * n);
    return 0;
}

/* ---------------- generation (model/generate.h) ----------------
 * The weight products of one decode step (the B operand a parameter: projections, MLP,
 * LM head) are recorded with their matrices; replayed alone on the same BLAS (cblas_sgemv
 * for one sequence, the step's own GEMM for M) they give the limit a step could reach if
 * everything else were free. */
typedef struct WProd { const real *W; int M, N, K, tb; } WProd;
static WProd g_wprod[256];
static int g_nwprod;
static const real *g_wlo, *g_whi;
static void rec_matmul(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real al, real be) {
    if (B >= g_wlo && B < g_whi && !ta && g_nwprod < 256) g_wprod[g_nwprod++] = (WProd){B, M, N, K, tb};
    g_inner->matmul(C, A, B, M, N, K, ta, tb, al, be);
}

/* seconds of one step's limit: its weight products and one streaming read (cblas_sasum) of
 * state_bytes, the decode state the step reads (sdpa: the key/value cache rows 0..pos; the
 * linear cores: S and z), so that what a memory-bound step has to read is counted at the
 * bandwidth measured here on a buffer of the same size; the mean of `passes` passes after a
 * warm one */
static volatile float g_sink;
static double replay_limit(int passes, size_t state_bytes) {
    int maxk = 1, maxn = 1, maxm = 1;
    for (int i = 0; i < g_nwprod; i++)
        maxk = GMA_MAX(maxk, g_wprod[i].K), maxn = GMA_MAX(maxn, g_wprod[i].N), maxm = GMA_MAX(maxm, g_wprod[i].M);
    float *x = xcalloc((size_t)maxm * maxk, sizeof(float)), *y = xcalloc((size_t)maxm * maxn, sizeof(float));
    for (size_t i = 0; i < (size_t)maxm * maxk; i++) x[i] = 1.0f / (float)(1 + i % 7);
    size_t ns = state_bytes / sizeof(float);
    float *st = ns ? xmalloc(sizeof(float) * ns) : NULL;
    for (size_t i = 0; i < ns; i++) st[i] = (float)(i % 5);
    double t0 = 0;
    for (int pass = -1; pass < passes; pass++) {
        if (pass == 0) t0 = gma_now(); /* pass -1 warms the caches */
        for (int i = 0; i < g_nwprod; i++) {
            const WProd *p = &g_wprod[i];
            if (p->M == 1) /* y = W x with W [N,K] (tb) or [K,N] */
                cblas_sgemv(CblasRowMajor, p->tb ? CblasNoTrans : CblasTrans, p->tb ? p->N : p->K, p->tb ? p->K : p->N, 1,
                            p->W, p->tb ? p->K : p->N, x, 1, 0, y, 1);
            else
                cblas_sgemm(CblasRowMajor, CblasNoTrans, p->tb ? CblasTrans : CblasNoTrans, p->M, p->N, p->K, 1, x, p->K,
                            p->W, p->tb ? p->K : p->N, 0, y, p->N);
        }
        if (ns) g_sink = cblas_sasum((blasint)ns, st, 1);
    }
    double dt = (gma_now() - t0) / passes;
    free(st);
    free(x);
    free(y);
    return dt;
}

/* bytes of decode state one step of M sequences reads at context n: each layer's
 * decode_state for a window of n (the attention caches grow with it; the others do not) */
static size_t step_state_bytes(const Model *m, int M, int n) {
    size_t b = 0;
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        if (mx->vt->decode_state) b += (size_t)M * mx->vt->decode_state(mx, n) * sizeof(real);
    }
    return b;
}

typedef struct GenClock { double first; int seen; } GenClock;
static int gen_tick(void *ctx, int b, int32_t token) {
    (void)token;
    GenClock *c = ctx;
    if (!c->seen && b == 0) c->first = gma_now(), c->seen = 1;
    return 0;
}

/* A random prompt of T/2 tokens continued greedily by T/2 tokens for M sequences at once:
 * tokens/s of the generated tokens after the prompt (context T/2 .. T), the limit of the
 * step's weight products on the same shapes, their ratio; with --full-forward also a full
 * forward per token (one sequence). */
static void bench_decode(const Opts *o, cJSON *out) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", o->mixers);
    int np = o->T / 2, nn = o->T - np, Mmax = 1;
    for (int i = 0; i < o->n_samples; i++) Mmax = GMA_MAX(Mmax, o->samples[i]);
    int cpu = !on_device();
    printf("\n## generation (L=%d, D=%d, H=%d, V=%d, Kc=%d, prompt %d + %d new tokens, %s, %d thread(s), median of %d)\n",
           o->L, o->D, o->H, o->V, o->Kc, np, nn, g_ops->name, omp_get_max_threads(), o->repeat);
    if (cpu)
        printf("limit: the step's weight products replayed alone (sgemv at M = 1, its GEMM at M > 1) plus one read of\n"
               "the decode state it reads (state MB: sdpa's key/value rows at the mean context, the linear cores' S, z)\n");
    printf("%-10s %5s %12s %20s %10s %14s %8s%s\n", "mixer", "M", "tokens/s", "min-max", "state MB", "limit tok/s",
           "ratio", o->full ? "  full fwd tok/s" : "");
    cJSON *arr = cJSON_AddArrayToObject(out, "decode");
    char *sv = NULL;
    for (char *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
        Model m;
        if (causal_model(o, t, (Mmax + o->T - 1) / o->T, &m, 0) != 0) continue;
        int32_t *prompt = xmalloc(sizeof(int32_t) * (size_t)np);
        Rng *rng = xcalloc((size_t)Mmax, sizeof(Rng));
        rng_seed(&rng[0], 3);
        for (int i = 0; i < np; i++) prompt[i] = (int32_t)rng_below(&rng[0], (uint64_t)o->V);
        for (int k = 0; k < o->n_samples; k++) {
            int M = o->samples[k];
            double *ts = xmalloc(sizeof(double) * (size_t)o->repeat), *ls = xcalloc((size_t)o->repeat, sizeof(double));
            double lim = 0, full = 0;
            SampleOpts so = {.temperature = 0, .top_k = 0, .top_p = 1};
            int can = model_can_decode(&m);
            size_t sbytes = can ? step_state_bytes(&m, M, np + nn / 2) : 0; /* at the mean context */
            g_nwprod = 0;
            if (can && cpu) { /* record one step's weight products */
                DecodeState ds;
                int32_t *tok = xcalloc((size_t)M, sizeof(int32_t));
                if (model_decode_begin_batch(&m, &ds, M) == 0) {
                    g_wlo = m.params, g_whi = m.params + m.pt.total;
                    g_prof = *g_inner;
                    g_prof.matmul = rec_matmul;
                    g_ops = &g_prof;
                    model_decode_step_batch(&m, &ds, tok);
                    g_ops = g_inner;
                    model_decode_end(&m, &ds);
                }
                free(tok);
            }
            /* each repeat: the generation, then as many passes of the weight products alone
             * as it took steps, so that both see the same share of a shared machine */
            for (int r = 0; r < o->repeat && can; r++) {
                GenClock gc = {0};
                if (model_generate_batch(&m, prompt, np, nn, M, &so, rng, gen_tick, &gc) != 0)
                    fprintf(stderr, "gmabench: %s\n", gma_error());
                ops_sync();
                ts[r] = (double)M * (nn - 1) / (gma_now() - gc.first);
                if (g_nwprod > 0) ls[r] = M / replay_limit(GMA_MAX(nn - 1, 1), sbytes);
            }
            if (g_nwprod > 0 && can) {
                qsort(ls, (size_t)o->repeat, sizeof(double), cmp_d);
                lim = ls[o->repeat / 2];
            }
            if (o->full && M == 1) {
                SampleOpts sf = so;
                sf.no_cache = 1;
                double t0 = gma_now();
                if (model_generate(&m, prompt, np, nn, &sf, rng, NULL, NULL) != 0) fprintf(stderr, "gmabench: %s\n", gma_error());
                ops_sync();
                full = nn / (gma_now() - t0);
            }
            char tps[32] = "no decode step", mm[48] = "-", lstr[32] = "-", ratio[32] = "-", fs[40] = "";
            double med = 0;
            if (can) {
                qsort(ts, (size_t)o->repeat, sizeof(double), cmp_d);
                med = ts[o->repeat / 2];
                snprintf(tps, sizeof tps, "%.1f", med);
                snprintf(mm, sizeof mm, "%.1f-%.1f", ts[0], ts[o->repeat - 1]);
                if (lim > 0) snprintf(lstr, sizeof lstr, "%.1f", lim), snprintf(ratio, sizeof ratio, "%.3f", med / lim);
            }
            if (o->full && M == 1) snprintf(fs, sizeof fs, "  %15.1f", full);
            else if (o->full) snprintf(fs, sizeof fs, "  %15s", "-");
            printf("%-10s %5d %12s %20s %10.2f %14s %8s%s\n", t, M, tps, mm, (double)sbytes / 1e6, lstr, ratio, fs);
            fflush(stdout);
            cJSON *row = cJSON_CreateObject();
            cJSON_AddStringToObject(row, "mixer", t);
            cJSON_AddNumberToObject(row, "samples", M);
            cJSON_AddNumberToObject(row, "prompt", np);
            cJSON_AddNumberToObject(row, "new_tokens", nn);
            cJSON_AddNumberToObject(row, "threads", omp_get_max_threads());
            if (can) {
                cJSON_AddNumberToObject(row, "tokens_per_s", med);
                cJSON_AddNumberToObject(row, "tokens_per_s_min", ts[0]);
                cJSON_AddNumberToObject(row, "tokens_per_s_max", ts[o->repeat - 1]);
            }
            if (can) cJSON_AddNumberToObject(row, "state_bytes_per_step", (double)sbytes);
            if (lim > 0) {
                cJSON_AddNumberToObject(row, "limit_tokens_per_s", lim);
                cJSON_AddNumberToObject(row, "limit_tokens_per_s_min", ls[0]);
                cJSON_AddNumberToObject(row, "limit_tokens_per_s_max", ls[o->repeat - 1]);
                cJSON_AddNumberToObject(row, "ratio_to_limit", med / lim);
            }
            if (full > 0) cJSON_AddNumberToObject(row, "full_forward_tokens_per_s", full);
            cJSON_AddItemToArray(arr, row);
            free(ts);
            free(ls);
        }
        free(rng);
        free(prompt);
        model_free(&m);
    }
}

static void usage(FILE *f) {
    fprintf(f, "usage: gmabench mixer|model|decode|all [options]\n"
               "       gmabench --help | --version\n"
               "  mixer   one mixer layer, forward + backward: time and peak memory per sequence length\n"
               "  model   whole-model training steps: tokens/s, GFLOP/s, share outside matrix products\n"
               "  decode  generation: incremental decoding of M sequences at once against its measured limit\n"
               "  all     mixer and model with their defaults\n"
               "options (defaults in brackets):\n"
               "  --mixers a,b          mixers to compare, the first is the reference [gma,sdpa]\n"
               "  --seq 512,1K,...      sequence lengths (mixer) [512,...,16384]\n"
               "  --D N --H N --Kc N    width, heads, GMA components [256, 4, 64]\n"
               "  --B N                 batch [mixer 1, model 4]\n"
               "  --bidir               bidirectional instead of causal\n"
               "  --repeat N            repeats per point (median reported) [3]\n"
               "  --max-seconds X       time limit of a point: longer ones are skipped [60]\n"
               "  --max-mem-gib X       memory limit of a point: larger ones are skipped [12]\n"
               "  --L N --V N --T N     layers, vocabulary, tokens per sequence (model, decode) [4, 8192, 256]\n"
               "  --steps N             timed rounds of the training step (model): a step, then a replay of its shapes [9]\n"
               "  --samples 1,8,64      sequences generated at once (decode) [1]\n"
               "  --full-forward        also time a full forward per token (decode, M = 1)\n"
               "  --shapes              per op-table product shape: its time in the step against its replay (model, CPU)\n"
               "  --peak-tflops X       the device's peak TFLOP/s: adds model FLOP utilisation (model)\n"
               "  --json FILE           also write the results as JSON\n"
               "  --device cpu|cuda  --precision fp32|tf32|bf16  --threads N\n"
               "  --set key=value       any config key (repeatable, up to 16)\n"
               "Exit codes: 0 done, 1 failure while running, 2 bad input.\n");
}

int main(int argc, char **argv) {
    gma_openmp_env(argv);
    mixer_register_all();
    int rc = cli_start("gmabench", argc, argv, usage);
    if (rc >= 0) return rc;
    const char *what = argv[1];
    if (strcmp(what, "mixer") && strcmp(what, "model") && strcmp(what, "decode") && strcmp(what, "all")) {
        fprintf(stderr, "gmabench: unknown benchmark \"%s\" (mixer, model, decode or all)\n", what);
        return 2;
    }
    Opts o = {.D = 256, .H = 4, .Kc = 64, .B = 0, .causal = 1, .repeat = 3, .L = 4, .V = 8192, .T = 256, .steps = 9,
              .max_seconds = 60, .max_mem_gib = 12, .threads = -1};
    snprintf(o.mixers, sizeof o.mixers, "gma,sdpa");
    o.n_seq = parse_list("512,1024,2048,4096,8192,16384", o.seq, 32);
    o.n_samples = parse_list("1", o.samples, 16);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int nx = i + 1 < argc;
#define INTOPT(flag, field)                                                                \
    else if (!strcmp(a, flag) && nx) {                                                     \
        long x_;                                                                           \
        if (gma_parse_long(argv[++i], 1, INT_MAX, &x_) != 0) {                             \
            fprintf(stderr, "gmabench: %s: \"%s\" is not a positive integer\n", flag, argv[i]); \
            return 2;                                                                      \
        }                                                                                  \
        o.field = (int)x_;                                                                 \
    }
        if (!strcmp(a, "--mixers") && nx) {
            snprintf(o.mixers, sizeof o.mixers, "%s", argv[++i]);
        } else if (!strcmp(a, "--seq") && nx) {
            if ((o.n_seq = parse_list(argv[++i], o.seq, 32)) <= 0) {
                fprintf(stderr, "gmabench: --seq: bad list \"%s\"\n", argv[i]);
                return 2;
            }
        }
        else if (!strcmp(a, "--samples") && nx) {
            if ((o.n_samples = parse_list(argv[++i], o.samples, 16)) <= 0) {
                fprintf(stderr, "gmabench: --samples: bad list \"%s\"\n", argv[i]);
                return 2;
            }
        }
        else if (!strcmp(a, "--full-forward")) o.full = 1;
        else if (!strcmp(a, "--shapes")) o.shapes = 1;
        INTOPT("--D", D) INTOPT("--H", H) INTOPT("--Kc", Kc) INTOPT("--B", B) INTOPT("--repeat", repeat)
        INTOPT("--L", L) INTOPT("--V", V) INTOPT("--T", T) INTOPT("--steps", steps)
        else if (!strcmp(a, "--bidir")) o.causal = 0;
        else if (!strcmp(a, "--max-seconds") && nx) o.max_seconds = atof(argv[++i]);
        else if (!strcmp(a, "--max-mem-gib") && nx) o.max_mem_gib = atof(argv[++i]);
        else if (!strcmp(a, "--peak-tflops") && nx) {
            if (gma_parse_double(argv[++i], 1e-12, 1e6, &o.peak_tflops) != 0) {
                fprintf(stderr, "gmabench: --peak-tflops: \"%s\" is not a positive number\n", argv[i]);
                return 2;
            }
        }
        else if (!strcmp(a, "--json") && nx) o.json = argv[++i];
        else if (!strcmp(a, "--device") && nx) o.device = argv[++i];
        else if (!strcmp(a, "--precision") && nx) o.precision = argv[++i];
        else if (!strcmp(a, "--threads") && nx) {
            long x;
            if (gma_parse_long(argv[++i], 0, 1024, &x) != 0) {
                fprintf(stderr, "gmabench: --threads: \"%s\" is not an integer in [0, 1024]\n", argv[i]);
                return 2;
            }
            o.threads = (int)x;
        }
        else if (!strcmp(a, "--set") && nx && o.n_sets < 16) o.sets[o.n_sets++] = argv[++i];
        else {
            fprintf(stderr, "gmabench: unknown or incomplete option \"%s\"\n", a);
            return 2;
        }
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", o.mixers);
    char *sv = NULL;
    int n_mixers = 0;
    for (char *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv), n_mixers++)
        if (!mixer_find(t)) {
            fprintf(stderr, "gmabench: --mixers: unknown mixer \"%s\" (known: %s)\n", t, mixer_names());
            return 2;
        }
    for (int i = 0; i < o.n_sets; i++) { /* refuse a bad --set before any benchmark runs */
        Config c;
        cfg_defaults(&c);
        if (cfg_set(&c, o.sets[i]) != 0) {
            fprintf(stderr, "gmabench: %s\n", gma_error());
            return 2;
        }
    }
    if (o.n_sets > 0) { /* ... and --set values that make a benchmarked config invalid */
        char mb[512];
        snprintf(mb, sizeof mb, "%s", o.mixers);
        char *sm = NULL;
        for (char *t = strtok_r(mb, ",", &sm); t; t = strtok_r(NULL, ",", &sm))
            for (int s = 0; s <= o.n_seq; s++) {
                Opts bare = o;
                bare.n_sets = 0;
                int N = s < o.n_seq ? o.seq[s] : o.T;
                Config with = bench_config(&o, t, N), without = bench_config(&bare, t, N);
                if (cfg_validate(&with) != 0 && cfg_validate(&without) == 0) {
                    cfg_validate(&with);
                    fprintf(stderr, "gmabench: --set: mixer %s, N = %d: %s\n", t, N, gma_error());
                    return 2;
                }
            }
    }
    if (n_mixers == 0) {
        fprintf(stderr, "gmabench: --mixers: empty list \"%s\"\n", o.mixers);
        return 2;
    }
    if (o.D % o.H) {
        fprintf(stderr, "gmabench: --D %d is not divisible by --H %d\n", o.D, o.H);
        return 2;
    }
    if (ops_select(o.device ? o.device : "cpu") != 0 || ops_set_precision(o.precision ? o.precision : "fp32") != 0) {
        fprintf(stderr, "gmabench: %s\n", gma_error());
        return 2;
    }
    if (o.threads >= 0) ops_set_threads(o.threads);
    g_inner = g_ops;
    g_prof = *g_ops;
    g_prof.matmul = prof_matmul;
    g_prof.matmul_strided = prof_matmul_strided;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("# gmabench %s | backend %s (%s, precision %s) | %ld cores | %s | OpenBLAS kernels %s\n", GMA_VERSION,
           g_ops->name, ops_device_name(), o.precision ? o.precision : "fp32", ncpu, REAL_NAME, ops_blas_core());
    cJSON *out = cJSON_CreateObject();
    cJSON_AddStringToObject(out, "backend", g_ops->name);
    cJSON_AddStringToObject(out, "device_name", ops_device_name());
    cJSON_AddStringToObject(out, "blas_core", ops_blas_core());
    cJSON_AddStringToObject(out, "precision", o.precision ? o.precision : "fp32");
    cJSON_AddNumberToObject(out, "cores", (double)ncpu);
    int B_given = o.B;
    if (!strcmp(what, "mixer") || !strcmp(what, "all")) {
        o.B = B_given ? B_given : 1;
        bench_mixers(&o, out);
    }
    if (!strcmp(what, "model") || !strcmp(what, "all")) {
        o.B = B_given ? B_given : 4;
        g_ops = &g_prof;
        bench_model(&o, out);
        g_ops = g_inner;
    }
    if (!strcmp(what, "decode")) bench_decode(&o, out);
    if (o.json) {
        char *s = cJSON_Print(out);
        int rc = gma_write_file_atomic(o.json, s, strlen(s));
        if (rc != 0) fprintf(stderr, "gmabench: %s\n", gma_error());
        free(s);
        if (rc != 0) {
            cJSON_Delete(out);
            return 1;
        }
    }
    cJSON_Delete(out);
    return 0;
}
