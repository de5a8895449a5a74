/* bench_mixer.c: one mixer layer, forward + backward, per sequence length (bench.h): median
 * time over the repeats, peak extra memory (the resident high-water mark above the layer's
 * parameters, in a forked child per point on the CPU; the backend's device memory
 * high-water mark on a GPU, in-process: a CUDA context does not survive fork), process CPU
 * time, and one more pass through the profiling table for the products' FLOPs and shapes. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_report.h"
#include "nn/mixers/mixer.h"

/* a mixer layer with its buffers in backend memory: y doubles as dy's source */
typedef struct Layer {
    ParamTable pt;
    Mixer *m;
    real *params, *grads, *h, *y, *dh, *act, *scratch, *dy;
} Layer;

/* parameters and the input h (y = h), both drawn from seed 1 */
static int layer_new(Layer *L, const BenchOpts *o, const char *name, int N) {
    Config c = bench_config(o, name, N);
    *L = (Layer){0};
    L->m = mixer_find(name)->create(&c, 0, &L->pt, "blocks.0.mixer");
    if (!L->m) {
        pt_free(&L->pt);
        return -1;
    }
    size_t P = L->pt.total, n = (size_t)o->B * N * o->D;
    L->params = g_ops->alloc(P * sizeof(real)), L->grads = g_ops->alloc(P * sizeof(real));
    Rng rng;
    rng_seed(&rng, 1);
    real *host = xcalloc(P, sizeof(real));
    pt_init(&L->pt, host, &rng);
    if (L->m->vt->init) L->m->vt->init(L->m, host, &rng);
    g_ops->to_device(L->params, host, P * sizeof(real));
    free(host);
    real *hh = xmalloc(n * sizeof(real));
    for (size_t i = 0; i < n; i++) hh[i] = (real)rng_normal(&rng);
    L->h = g_ops->alloc(n * sizeof(real)), L->y = g_ops->alloc(n * sizeof(real));
    L->dh = g_ops->alloc(n * sizeof(real));
    g_ops->to_device(L->h, hh, n * sizeof(real));
    g_ops->to_device(L->y, hh, n * sizeof(real)); /* used as dy */
    free(hh);
    return 0;
}
/* the blocks the layer needs only while it runs: activations, scratch, dy */
static void layer_work(Layer *L, const BenchOpts *o, int N) {
    const MixerVT *vt = L->m->vt; /* may differ from the name's (sdpa falls back to sdpa_ref) */
    L->act = g_ops->alloc(vt->act_size(L->m, o->B, N) * sizeof(real));
    L->scratch = g_ops->alloc(vt->scratch_size(L->m, o->B, N) * sizeof(real));
    L->dy = g_ops->alloc((size_t)o->B * N * o->D * sizeof(real));
}
static void layer_free(Layer *L) {
    real *bufs[] = {L->params, L->grads, L->h, L->y, L->dh, L->act, L->scratch, L->dy};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) g_ops->free(bufs[i]);
    L->m->vt->destroy(L->m);
    pt_free(&L->pt);
}
static void layer_pass(Layer *L, const MixerCtx *ctx) {
    const MixerVT *vt = L->m->vt;
    vt->forward(L->m, ctx, L->y, L->h, L->params, L->act, L->scratch);
    vt->backward(L->m, ctx, L->dh, L->dy, L->h, L->params, L->grads, L->act, L->scratch);
}

/* One more forward + backward of the layer with the profiling op table: the FLOPs and the
 * (synchronised) time of the products that go through it, and their shapes replayed alone. */
static void gemm_pass(BenchMixResult *r, BenchProf *p, Layer *L, const MixerCtx *ctx) {
    const GmaOps *keep = g_ops;
    g_ops = &p->table;
    bench_prof_reset(p);
    p->recording = p->timing = 1;
    ops_sync();
    double t0 = gma_now();
    layer_pass(L, ctx);
    ops_sync();
    r->pass_time = gma_now() - t0;
    p->recording = p->timing = 0;
    g_ops = keep;
    r->gemm_flops = p->mm_flops;
    r->gemm_time = p->mm_time;
    r->blas_time = bench_replay_shapes(p, NULL);
}

/* the repeats (after a warm one): median time, its range, median CPU time */
static void time_repeats(BenchMixResult *r, Layer *L, const MixerCtx *ctx, int repeat) {
    double t[64], tc[64];
    int R = GMA_MIN(repeat, 64);
    for (int i = -1; i < R; i++) {
        ops_sync();
        double t0 = gma_now(), c0 = bench_cpu_seconds();
        layer_pass(L, ctx);
        ops_sync();
        if (i >= 0) t[i] = gma_now() - t0, tc[i] = bench_cpu_seconds() - c0;
    }
    bench_sort(t, R);
    bench_sort(tc, R);
    r->cpu_med = tc[R / 2];
    r->med = t[R / 2];
    r->lo = t[0];
    r->hi = t[R - 1];
}

static BenchMixResult mixer_measure(const BenchOpts *o, BenchProf *p, const char *name, int N) {
    BenchMixResult r = {0};
    Layer L;
    if (layer_new(&L, o, name, N) != 0) {
        fprintf(stderr, "gmabench: %s\n", gma_error());
        return r;
    }
    ops_sync();
    ops_mem_reset_peak();
    double base = bench_mem_now();
    layer_work(&L, o, N);
    MixerCtx ctx = {.B = o->B, .N = N, .causal = o->causal, .training = 1};
    time_repeats(&r, &L, &ctx, o->repeat);
    r.peak = bench_mem_peak() - base;
    gemm_pass(&r, p, &L, &ctx);
    r.fused_flops = L.m->vt->fused_flops(L.m, o->B, N, o->causal);
    r.ok = 1;
    layer_free(&L);
    return r;
}

typedef struct MixPoint { const BenchOpts *o; BenchProf *p; const char *name; int N; } MixPoint;
static void point_run(void *ctx, void *res) {
    const MixPoint *x = ctx;
    *(BenchMixResult *)res = mixer_measure(x->o, x->p, x->name, x->N);
}
/* in a forked child on the CPU, so that its high-water mark is the point's own */
static BenchMixResult run_point(const BenchOpts *o, BenchProf *p, const char *name, int N) {
    BenchMixResult r;
    MixPoint x = {o, p, name, N};
    bench_in_child(point_run, &x, &r, sizeof r);
    return r;
}

/* the bytes of activations and scratch the layer plans for B x N */
static double estimate_bytes(const BenchOpts *o, const char *name, int N) {
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

/* why a point is not measured (NULL: it is); last: the mixer's last time (1e30 after a skip) */
static const char *skip_reason(const BenchOpts *o, const char *name, double est, double last) {
    const MixerVT *vt = mixer_find(name);
    if (o->causal ? !vt->causal_ok : !vt->bidir_ok) return o->causal ? "n/a: not causal" : "n/a: causal only";
    if (est > o->max_mem_gib * 1073741824.0) return "skipped: memory";
    if (last * 4.5 > o->max_seconds) return "skipped: time";
    return NULL;
}

void bench_mixers(const BenchOpts *o, BenchProf *p, cJSON *out) {
    char names[BENCH_MAX_MIXERS][32];
    int nm = bench_mixer_names(o, names, BENCH_MAX_MIXERS);
    bench_report_mixer_head(o);
    cJSON *arr = cJSON_AddArrayToObject(out, "mixer");
    double last_time[BENCH_MAX_MIXERS] = {0};
    for (int s = 0; s < o->n_seq; s++) {
        int N = o->seq[s];
        double first = 0;
        for (int k = 0; k < nm; k++) {
            double est = estimate_bytes(o, names[k], N);
            BenchMixResult r = {0};
            const char *why = skip_reason(o, names[k], est, last_time[k]);
            if (!why) r = run_point(o, p, names[k], N);
            if (!why && !r.ok) why = "failed";
            if (why) {
                bench_report_mixer_skip(arr, names[k], N, why, est);
                last_time[k] = 1e30;
            } else {
                if (k == 0) first = r.med;
                bench_report_mixer_row(arr, names[k], N, &r, est, first);
                last_time[k] = r.med * o->repeat;
            }
            fflush(stdout);
        }
    }
}
