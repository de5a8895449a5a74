/* bench.h: the measurements of gmabench (docs/benchmarks.md): one mixer layer forward +
 * backward (bench_mixer.c), whole-model training steps (bench_model.c) and generation
 * (bench_decode.c), printed as tables with their ratios measured side by side in the same
 * run and added to a JSON object (bench_report.c). The command line (src/cli/gmabench.c)
 * fills BenchOpts, selects the backend and calls these. */
#ifndef GMA_BENCH_H
#define GMA_BENCH_H
#include <cjson/cJSON.h>

#include "bench/bench_prof.h"
#include "core/config.h"
#include "model/model.h"

#define BENCH_MAX_SEQ 32
#define BENCH_MAX_SAMPLES 16
#define BENCH_MAX_SETS 16
#define BENCH_MAX_MIXERS 16
#define BENCH_LABEL 160 /* a row's label: a mixer name, or the layers' model.mixer list */
typedef struct BenchOpts {
    char mixers[512];                     /* comma-separated, the first is the reference */
    int seq[BENCH_MAX_SEQ], n_seq;        /* mixer: sequence lengths */
    int samples[BENCH_MAX_SAMPLES], n_samples; /* decode: sequences generated at once */
    int full;                             /* decode: also a full forward per token */
    int feed_max;                         /* prefill: also feed prompts up to this length a step a token */
    int shapes;                           /* model: each op-table product shape, in the step and replayed */
    int D, H, Kc, B, causal, repeat, L, V, T, steps;
    double max_seconds, max_mem_gib, peak_tflops;
    const char *sets[BENCH_MAX_SETS];     /* --set key=value, applied to every benchmarked config */
    int n_sets;
    int seq_given;                        /* --seq was given (calibrate's own default otherwise) */
} BenchOpts;

/* the defaults of gmabench's options (B 0: each benchmark's own) */
void bench_opts_defaults(BenchOpts *o);
/* the names of o->mixers into names (at most cap); returns their number */
int bench_mixer_names(const BenchOpts *o, char names[][32], int cap);
/* the label of each row of mixer names[k] (at most cap): the name, or, where --set
 * model.mixer replaces it, the model's model.mixer list as the config holds it ("gma,sdpa,...") */
void bench_mixer_labels(const BenchOpts *o, char names[][32], int n, char labels[][BENCH_LABEL]);
/* the config of a one-mixer model at the bench shape with N tokens and the --set values */
Config bench_config(const BenchOpts *o, const char *mixer, int N);
/* 0, or -1 with the error when a --set value is refused by the config or makes a
 * benchmarked config (any mixer, any N of --seq and T) invalid that is valid without it */
int bench_check_sets(const BenchOpts *o);

/* one mixer layer, forward + backward, per N of o->seq and mixer (B = o->B) */
void bench_mixers(const BenchOpts *o, BenchProf *p, cJSON *out);
/* whole-model training steps per mixer, without and with dropout 0.1 */
void bench_model(const BenchOpts *o, BenchProf *p, cJSON *out);
/* generation of M sequences at once, per mixer and M of o->samples */
void bench_decode(const BenchOpts *o, BenchProf *p, cJSON *out);
/* time to first token (prefill), decode after it and the training forward, per N of o->seq
 * and mixer, then the crossover table against sdpa (bench_prefill.c) */
void bench_prefill(const BenchOpts *o, BenchProf *p, cJSON *out);
/* one cross-attention layer (nn/mixers/cross.h), forward + backward, per context length M
 * of o->seq with N = M queries, for the kinds of o->mixers that have one (gma, sdpa;
 * bench_cross.c) */
void bench_cross(const BenchOpts *o, cJSON *out);
/* auto's calibration (bench_calibrate.c): bench_prefill of gma and sdpa, then the crossover
 * of the training forward (and of decode) written to path as the file model.auto_threshold
 * "calibrated" reads (nn/mixers/auto_calib.h); 0, or -1 with the error */
int bench_calibrate(const BenchOpts *o, BenchProf *p, cJSON *out, const char *path);
/* the summary table of `make bench` from the JSON files of earlier runs (comma-separated
 * `inputs`) and bench_torch.sh's directory (NULL: none), with the date, the CPU model and
 * the BLAS build (bench_summary.c): 0, or -1 when a file could not be read (named on stderr) */
int bench_summary(const char *inputs, const char *torch_dir);

/* ---- shared by the benchmarks ---- */
/* 1 when the active backend is not the CPU */
int bench_on_device(void);
/* memory in use now (the backend's device bytes, or the resident set of this process) and
 * its high-water mark (ops_mem_reset_peak resets the device's; a process's is its own) */
double bench_mem_now(void);
double bench_mem_peak(void);
/* the high-water mark back to what is in use now (the device's; this process's through
 * /proc/self/clear_refs): 0, or -1 where the system does not allow it */
int bench_mem_reset_peak(void);
/* CPU seconds of this process, all threads (with --threads 1, a point's own time even when
 * other processes share the cores) */
double bench_cpu_seconds(void);
/* fn(ctx, res) in a forked child on the CPU, so that its high-water mark is the point's own
 * (in-process on a device: a CUDA context does not survive fork); res (size bytes) holds
 * what fn wrote: 0, or -1 when the child could not run or report (res zeroed) */
int bench_in_child(void (*fn)(void *ctx, void *res), void *ctx, void *res, size_t size);
/* x[0..n-1] in ascending order */
void bench_sort(double *x, int n);
/* the causal language model of the bench shape with mixer t, allocated for B x T and
 * initialised; drop > 0: model.dropout and, where the mixer has it, model.attn_dropout at
 * that rate (docs/model.md §8). On failure the mixer's row says why and -1 is returned */
int bench_causal_model(const BenchOpts *o, const char *t, int B, Model *m, double drop);
#endif
