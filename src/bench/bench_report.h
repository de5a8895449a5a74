/* bench_report.h: the tables gmabench prints and the JSON rows it writes, one function per
 * table head and per row, from the results the benchmarks measure (bench.h). */
#ifndef GMA_BENCH_REPORT_H
#define GMA_BENCH_REPORT_H
#include <cjson/cJSON.h>

#include "bench/bench.h"

/* one mixer layer at one N (bench_mixer.c) */
typedef struct BenchMixResult {
    double med, lo, hi, peak, cpu_med; /* seconds; cpu_med: process CPU seconds of the median-CPU repeat */
    double gemm_flops, gemm_time, pass_time, blas_time; /* op-table products of one pass */
    double fused_flops;                /* the mixer's products inside fused ops (MixerVT.fused_flops) */
    int ok;
} BenchMixResult;

void bench_report_mixer_head(const BenchOpts *o);
/* a point not measured: why, with its planned bytes */
void bench_report_mixer_skip(cJSON *arr, const char *mixer, int N, const char *why, double planned);
/* a measured point; first: the first mixer's median time at this N (0: none) */
void bench_report_mixer_row(cJSON *arr, const char *mixer, int N, const BenchMixResult *r, double planned,
                            double first);

/* one whole-model row (bench_model.c) */
typedef struct BenchModelResult {
    const char *mixer;
    double drop, attn_drop, base_ms; /* base_ms: the same mixer's step without dropout (0: none) */
    size_t params;
    int rounds, time_all;            /* time_all: the CPU's products inside other ops are counted too */
    double med, tmin, tmax;          /* step seconds */
    double flops_step, hid_step;     /* op-table and hidden products of a step */
    double mm_med;                   /* seconds inside op-table products of the median step */
    double blas_time;                /* the best replay of the op-table shapes */
    double r_med, r_lo, r_hi, med_out, a_med, a_lo, a_hi, all_best;
    int peak_whole;                  /* the peak is the whole child's (the mark could not be reset) */
    double peak, plan, pmem;         /* bytes: measured high-water mark above the start, model_memory_plan's
                                      * parameters + activations, its parameters, gradients and moments alone */
} BenchModelResult;

void bench_report_model_head(const BenchOpts *o, int S, int time_all, const double load[3]);
cJSON *bench_report_model_row(cJSON *arr, const BenchOpts *o, const BenchModelResult *r);
/* --shapes: each op-table product shape of the step, its count per step, its time inside
 * the S timed steps (per step) and its best replay times the count (JSON "shapes" in row) */
void bench_report_shapes(cJSON *row, const BenchProf *p, int S);

/* one generation row (bench_decode.c); the median and range of each repeat's tokens/s */
typedef struct BenchDecodeResult {
    const char *mixer;
    int M, prompt, new_tokens, can; /* can: the model has a decode step */
    size_t state_bytes;             /* decode state a step reads at the mean context */
    double med, lo, hi;             /* tokens/s */
    double lim, lim_lo, lim_hi;     /* the limit's tokens/s (0: not measured) */
    double full;                    /* tokens/s with a full forward per token (0: not measured) */
    double outside;                 /* fraction of the step's time outside its weight products (< 0: not measured) */
    const char *why;                /* not NULL: not measured, and why ("skipped: time") */
} BenchDecodeResult;

void bench_report_decode_head(const BenchOpts *o, int np, int nn, int cpu);
void bench_report_decode_row(cJSON *arr, const BenchOpts *o, const BenchDecodeResult *r);

/* one prefill point (bench_prefill.c): seconds unless named otherwise */
typedef struct BenchPrefillResult {
    const char *mixer, *why;    /* why: the reason it was not measured (ok 0) */
    int N, ok, repeats;
    double med, lo, hi;         /* the prefill: time to first token */
    double fwd, fwd_lo, fwd_hi; /* the training forward over the same N tokens */
    double dec, dec_lo, dec_hi; /* decode tokens/s at context N after the prefill */
    double feed;                /* the prompt fed a decode step a token (0: not measured) */
} BenchPrefillResult;

void bench_report_prefill_head(const BenchOpts *o, int ndec);
void bench_report_prefill_row(cJSON *arr, const BenchPrefillResult *r);
/* rs[k * ns + s]: mixer k at seq[s]; against the mixer named sdpa when it is listed */
void bench_report_prefill_crossover(cJSON *out, const BenchPrefillResult *rs, char names[][BENCH_LABEL], int nm, const int *seq,
                                    int ns);
#endif
