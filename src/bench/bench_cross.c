/* bench_cross.c: one cross-attention layer (nn/mixers/cross.h), forward + backward, per
 * context length M of --seq, with as many queries as context rows (N = M: neither side is
 * padded, so neither kind pays for the shared row layout), for each kind of --mixers that
 * has a cross layer (gma, sdpa): median time over the repeats (min-max), process CPU time,
 * the planned activation + scratch bytes and the peak extra memory (the resident high-water
 * mark above the layer's parameters and inputs, in a forked child per point on the CPU;
 * the device's high-water mark on a GPU). A kind's longer M is skipped once its last time x
 * 4.5 passes --max-seconds (sdpa grows ~4x a doubling) or its plan passes --max-mem-gib. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "nn/mixers/cross.h"

typedef struct XRes {
    int ok;
    double med, lo, hi, cpu, peak;
} XRes;

static double mem_of(int peak) { return peak ? bench_mem_peak() : bench_mem_now(); }

static int kind_of(const char *name) {
    return !strcmp(name, "gma") ? CROSS_GMA : !strcmp(name, "sdpa") ? CROSS_SDPA : CROSS_NONE;
}

static Cross *layer(const BenchOpts *o, int kind, int M, ParamTable *pt) {
    Config c = bench_config(o, "gma", M);
    return cross_create(&c, kind, o->Kc, pt, "x");
}

static double planned(const BenchOpts *o, int kind, int M) {
    ParamTable pt = {0};
    Cross *x = layer(o, kind, M, &pt);
    double b = (double)(cross_act_size(x, o->B, M, M) + cross_scratch_size(x, o->B, M, M)) * sizeof(real);
    cross_destroy(x);
    pt_free(&pt);
    return b;
}

static real *dev_random(size_t n, Rng *r) {
    real *h = xmalloc(n * sizeof(real)), *d = g_ops->alloc(n * sizeof(real));
    for (size_t i = 0; i < n; i++) h[i] = (real)rng_normal(r);
    g_ops->to_device(d, h, n * sizeof(real));
    free(h);
    return d;
}

static XRes measure(const BenchOpts *o, int kind, int M) {
    XRes r = {0};
    ParamTable pt = {0};
    Cross *x = layer(o, kind, M, &pt);
    Rng rng;
    rng_seed(&rng, 1);
    size_t P = pt.total, n = (size_t)o->B * M * o->D;
    real *host = xcalloc(P, sizeof(real));
    pt_init(&pt, host, &rng);
    real *params = g_ops->alloc(P * sizeof(real)), *grads = g_ops->alloc(P * sizeof(real));
    g_ops->to_device(params, host, P * sizeof(real));
    free(host);
    real *hq = dev_random(n, &rng), *hc = dev_random(n, &rng), *dy = dev_random(n, &rng);
    ops_sync();
    ops_mem_reset_peak();
    double base = mem_of(0);
    real *y = g_ops->alloc(n * sizeof(real)), *dq = g_ops->alloc(n * sizeof(real)), *dc = g_ops->alloc(n * sizeof(real));
    real *act = g_ops->alloc(cross_act_size(x, o->B, M, M) * sizeof(real));
    real *scr = g_ops->alloc(cross_scratch_size(x, o->B, M, M) * sizeof(real));
    double t[64], tc[64];
    int R = GMA_MIN(o->repeat, 64);
    for (int i = -1; i < R; i++) { /* one warm pass */
        ops_sync();
        double t0 = gma_now(), c0 = bench_cpu_seconds();
        cross_forward(x, y, hq, hc, params, act, scr, o->B, M, M);
        cross_backward(x, dq, dc, dy, hq, hc, params, grads, act, scr, o->B, M, M);
        ops_sync();
        if (i >= 0) t[i] = gma_now() - t0, tc[i] = bench_cpu_seconds() - c0;
    }
    r.peak = mem_of(1) - base;
    bench_sort(t, R);
    bench_sort(tc, R);
    r.med = t[R / 2], r.lo = t[0], r.hi = t[R - 1], r.cpu = tc[R / 2];
    r.ok = 1;
    real *bufs[] = {params, grads, hq, hc, dy, y, dq, dc, act, scr};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) g_ops->free(bufs[i]);
    cross_destroy(x);
    pt_free(&pt);
    return r;
}

typedef struct XPoint { const BenchOpts *o; int kind, M; } XPoint;
static void point_run(void *ctx, void *res) {
    const XPoint *x = ctx;
    *(XRes *)res = measure(x->o, x->kind, x->M);
}
/* in a forked child on the CPU, so that its high-water mark is the point's own */
static XRes point(const BenchOpts *o, int kind, int M) {
    XRes r;
    XPoint x = {o, kind, M};
    bench_in_child(point_run, &x, &r, sizeof r);
    return r;
}

void bench_cross(const BenchOpts *o, cJSON *out) {
    char names[BENCH_MAX_MIXERS][32];
    int nk = bench_mixer_names(o, names, BENCH_MAX_MIXERS);
    printf("## cross-attention layer, forward + backward | B %d, D %d, H %d, Kc %d, N = M queries\n", o->B, o->D, o->H,
           o->Kc);
    printf("%8s %-6s %12s %19s %10s %11s %12s %8s\n", "M", "kind", "ms", "(min-max)", "cpu ms", "peak MiB", "planned MiB",
           "vs first");
    cJSON *arr = cJSON_AddArrayToObject(out, "cross");
    double last[BENCH_MAX_MIXERS] = {0};
    for (int s = 0; s < o->n_seq; s++) {
        int M = o->seq[s];
        double first = 0;
        for (int k = 0; k < nk; k++) {
            int kind = kind_of(names[k]);
            cJSON *row = cJSON_CreateObject();
            cJSON_AddStringToObject(row, "kind", names[k]);
            cJSON_AddNumberToObject(row, "M", M);
            cJSON_AddNumberToObject(row, "N", M);
            const char *why = NULL;
            double plan = kind == CROSS_NONE ? 0 : planned(o, kind, M);
            if (kind == CROSS_NONE) why = "n/a: no cross layer";
            else if (plan > o->max_mem_gib * 1073741824.0) why = "skipped: memory";
            else if (last[k] * 4.5 > o->max_seconds) why = "skipped: time";
            XRes r = {0};
            if (!why && !(r = point(o, kind, M)).ok) why = "failed";
            cJSON_AddNumberToObject(row, "planned_mib", plan / 1048576.0);
            if (why) {
                printf("%8d %-6s %s (planned %.1f MiB)\n", M, names[k], why, plan / 1048576.0);
                cJSON_AddStringToObject(row, "skipped", why);
                last[k] = 1e30;
            } else {
                if (k == 0) first = r.med;
                printf("%8d %-6s %12.2f %9.2f-%-9.2f %10.2f %11.1f %12.1f %8.2f\n", M, names[k], 1e3 * r.med, 1e3 * r.lo,
                       1e3 * r.hi, 1e3 * r.cpu, r.peak / 1048576.0, plan / 1048576.0, first > 0 ? r.med / first : 0);
                cJSON_AddNumberToObject(row, "ms", 1e3 * r.med);
                cJSON_AddNumberToObject(row, "ms_min", 1e3 * r.lo);
                cJSON_AddNumberToObject(row, "ms_max", 1e3 * r.hi);
                cJSON_AddNumberToObject(row, "cpu_ms", 1e3 * r.cpu);
                cJSON_AddNumberToObject(row, "peak_mib", r.peak / 1048576.0);
                last[k] = r.med * o->repeat;
            }
            cJSON_AddItemToArray(arr, row);
            fflush(stdout);
        }
    }
}
