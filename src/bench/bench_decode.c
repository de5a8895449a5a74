/* bench_decode.c: generation (model/generate.h). A random prompt of T/2 tokens continued
 * greedily by T/2 tokens for M sequences at once: tokens/s of the generated tokens after
 * the prompt (context T/2 .. T), the limit of the step's own shapes, their ratio; with
 * --full-forward also a full forward per token (one sequence).
 * The weight products of one decode step (the B operand a parameter: projections, MLP, LM
 * head) are recorded with their matrices (BenchProf.rec); replayed alone on the same BLAS
 * (gemv for one sequence, the step's own GEMM for M) they give the limit a step could
 * reach if everything else were free. At M = 1 one more generation times those products
 * where they run in the step: the rest of the step's time is the fraction "outside". */
#include <cblas.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "bench/bench_report.h"
#include "model/generate.h"

#ifdef GMA_DOUBLE
#define GEMM cblas_dgemm
#define GEMV cblas_dgemv
#define ASUM cblas_dasum
#else
#define GEMM cblas_sgemm
#define GEMV cblas_sgemv
#define ASUM cblas_sasum
#endif

/* one pass of the recorded weight products on x into y */
static void weight_pass(const BenchProf *p, const real *x, real *y) {
    for (int i = 0; i < p->nwprod; i++) {
        const BenchWProd *w = &p->wprod[i];
        if (w->M == 1) /* y = W x with W [N,K] (tb) or [K,N] */
            GEMV(CblasRowMajor, w->tb ? CblasNoTrans : CblasTrans, w->tb ? w->N : w->K, w->tb ? w->K : w->N, 1, w->W,
                 w->tb ? w->K : w->N, x, 1, 0, y, 1);
        else
            GEMM(CblasRowMajor, CblasNoTrans, w->tb ? CblasTrans : CblasNoTrans, w->M, w->N, w->K, 1, x, w->K, w->W,
                 w->tb ? w->K : w->N, 0, y, w->N);
    }
}

/* A step's limit: its weight products and one streaming read of state_bytes, the decode
 * state the step reads (sdpa: the key/value cache rows 0..pos; the linear cores: S and z),
 * so that what a memory-bound step has to read is counted at the bandwidth measured here
 * on a buffer of the same size. One pass runs right after each step of the generation
 * (replay_pass from its token callback) and its time is taken out of the generation's, so
 * that a step and its replay see the same share of a shared machine however the load
 * moves during a run, and the replay finds the weights where the step left them. */
typedef struct Replay {
    const BenchProf *p;
    real *x, *y, *st;
    size_t ns;
    double t;  /* seconds of the passes so far */
    int n;     /* passes so far */
} Replay;
static void replay_open(Replay *r, const BenchProf *p, size_t state_bytes) {
    int maxk = 1, maxn = 1, maxm = 1;
    for (int i = 0; i < p->nwprod; i++)
        maxk = GMA_MAX(maxk, p->wprod[i].K), maxn = GMA_MAX(maxn, p->wprod[i].N), maxm = GMA_MAX(maxm, p->wprod[i].M);
    *r = (Replay){.p = p, .ns = state_bytes / sizeof(real)};
    r->x = xcalloc((size_t)maxm * maxk, sizeof(real)), r->y = xcalloc((size_t)maxm * maxn, sizeof(real));
    for (size_t i = 0; i < (size_t)maxm * maxk; i++) r->x[i] = (real)(1.0f / (float)(1 + i % 7));
    r->st = r->ns ? xmalloc(sizeof(real) * r->ns) : NULL;
    for (size_t i = 0; i < r->ns; i++) r->st[i] = (real)(i % 5);
}
static volatile real g_sink; /* keeps the streaming read */
static void replay_pass(Replay *r) {
    double t0 = gma_now();
    weight_pass(r->p, r->x, r->y);
    if (r->ns) g_sink = ASUM((blasint)r->ns, r->st, 1);
    r->t += gma_now() - t0, r->n++;
}
static void replay_close(Replay *r) {
    free(r->st);
    free(r->x);
    free(r->y);
}

/* bytes of decode state one step of M sequences reads at context n: each layer's
 * decode_state for a window of n (the attention caches grow with it; the others do not;
 * with model.short_conv it holds the convolutions' last inputs too) */
static size_t step_state_bytes(const Model *m, int M, int n) {
    size_t b = 0;
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        if (mx->vt->decode_state) b += (size_t)M * mx->vt->decode_state(mx, n) * sizeof(real);
    }
    return b;
}

/* record the weight products of one decode step of M sequences */
static void record_step(BenchProf *p, Model *m, int M) {
    DecodeState ds;
    int32_t *tok = xcalloc((size_t)M, sizeof(int32_t));
    if (model_decode_begin_batch(m, &ds, M) == 0) {
        const GmaOps *keep = g_ops;
        p->wlo = m->params, p->whi = m->params + m->pt.total;
        g_ops = &p->rec;
        model_decode_step_batch(m, &ds, tok);
        g_ops = keep;
        model_decode_end(m, &ds);
    }
    free(tok);
}

/* the generation's clock: the first token's time, and (replay set) a replay pass after
 * every step from then on, the last sequence's token being the step's end */
typedef struct GenClock { double first; int seen, M; BenchProf *prof; Replay *replay; } GenClock;
static int gen_tick(void *ctx, int b, int32_t token) {
    (void)token;
    GenClock *c = ctx;
    if (!c->seen && b == 0) {
        if (c->prof) c->prof->w_time = 0; /* count the products of the timed steps only */
        c->first = gma_now(), c->seen = 1;
    }
    if (c->replay && c->seen && b == c->M - 1) replay_pass(c->replay);
    return 0;
}

/* a row's inputs: the model, its prompt of np tokens, nn new ones, M sequences */
typedef struct Gen {
    Model *m;
    const int32_t *prompt;
    int np, nn;
    Rng *rng;
} Gen;

/* each repeat: the generation with a pass of the weight products alone after each step
 * (Replay), the step's tokens/s over the generation's time less the passes' */
static void time_decode(const BenchOpts *o, BenchProf *p, const Gen *g, BenchDecodeResult *r) {
    double *ts = xmalloc(sizeof(double) * (size_t)o->repeat), *ls = xcalloc((size_t)o->repeat, sizeof(double));
    SampleOpts so = {.temperature = 0, .top_k = 0, .top_p = 1};
    for (int k = 0; k < o->repeat; k++) {
        Replay rp;
        if (p->nwprod > 0) replay_open(&rp, p, r->state_bytes), replay_pass(&rp), rp.t = 0, rp.n = 0; /* warm */
        GenClock gc = {.M = r->M, .replay = p->nwprod > 0 ? &rp : NULL};
        if (model_generate_batch(g->m, g->prompt, g->np, g->nn, r->M, &so, g->rng, gen_tick, &gc) != 0)
            fprintf(stderr, "gmabench: %s\n", gma_error());
        ops_sync();
        double gen = gma_now() - gc.first - (gc.replay ? rp.t : 0);
        ts[k] = (double)r->M * (g->nn - 1) / gen;
        if (gc.replay) ls[k] = rp.n > 0 && rp.t > 0 ? r->M / (rp.t / rp.n) : 0, replay_close(&rp);
    }
    if (p->nwprod > 0) {
        bench_sort(ls, o->repeat);
        r->lim = ls[o->repeat / 2], r->lim_lo = ls[0], r->lim_hi = ls[o->repeat - 1];
    }
    bench_sort(ts, o->repeat);
    r->med = ts[o->repeat / 2], r->lo = ts[0], r->hi = ts[o->repeat - 1];
    free(ts);
    free(ls);
}

/* the fraction of the steps' time outside their weight products (the ones the limit
 * replays): one more generation of r->M sequences on the profiling table, each weight
 * product timed where it runs in the step */
static double time_outside(BenchProf *p, const Gen *g, int M) {
    SampleOpts so = {.temperature = 0, .top_k = 0, .top_p = 1};
    GenClock gc = {.prof = p};
    const GmaOps *keep = g_ops;
    p->wlo = g->m->params, p->whi = g->m->params + g->m->pt.total;
    p->timing = 1;
    g_ops = &p->table;
    int rc = model_generate_batch(g->m, g->prompt, g->np, g->nn, M, &so, g->rng, gen_tick, &gc);
    double dt = gma_now() - gc.first;
    g_ops = keep;
    p->timing = 0;
    if (rc != 0 || !gc.seen || dt <= 0) return -1;
    return GMA_MAX(0.0, 1 - p->w_time / dt);
}

/* tokens/s with a full forward per token, one sequence */
static double time_full(const Gen *g) {
    SampleOpts sf = {.temperature = 0, .top_k = 0, .top_p = 1, .no_cache = 1};
    double t0 = gma_now();
    if (model_generate(g->m, g->prompt, g->np, g->nn, &sf, g->rng, NULL, NULL) != 0)
        fprintf(stderr, "gmabench: %s\n", gma_error());
    ops_sync();
    return g->nn / (gma_now() - t0);
}

/* one row (t: its label); returns its seconds; late: the mixer's last row took over
 * --max-seconds, so this one (a larger M, or as large) is skipped */
static double decode_row(const BenchOpts *o, BenchProf *p, cJSON *arr, const char *t, const Gen *g, int M, int late) {
    double t0 = gma_now();
    BenchDecodeResult r = {.mixer = t, .M = M, .outside = -1, .prompt = g->np, .new_tokens = g->nn, .can = model_can_decode(g->m)};
    if (late) {
        r.why = "skipped: time";
        bench_report_decode_row(arr, o, &r);
        return 0;
    }
    r.state_bytes = r.can ? step_state_bytes(g->m, M, g->np + g->nn / 2) : 0; /* at the mean context */
    p->nwprod = 0;
    if (r.can && !bench_on_device()) record_step(p, g->m, M);
    if (r.can) time_decode(o, p, g, &r);
    if (r.can && M == 1 && !bench_on_device()) r.outside = time_outside(p, g, M);
    if (o->full && M == 1) r.full = time_full(g);
    bench_report_decode_row(arr, o, &r);
    return gma_now() - t0;
}

void bench_decode(const BenchOpts *o, BenchProf *p, cJSON *out) {
    int np = o->T / 2, nn = o->T - np, Mmax = 1;
    for (int i = 0; i < o->n_samples; i++) Mmax = GMA_MAX(Mmax, o->samples[i]);
    bench_report_decode_head(o, np, nn, !bench_on_device());
    cJSON *arr = cJSON_AddArrayToObject(out, "decode");
    char names[BENCH_MAX_MIXERS][32];
    int nm = bench_mixer_names(o, names, BENCH_MAX_MIXERS);
    char labels[BENCH_MAX_MIXERS][BENCH_LABEL];
    bench_mixer_labels(o, names, nm, labels);
    for (int k = 0; k < nm; k++) {
        Model m;
        if (bench_causal_model(o, names[k], (Mmax + o->T - 1) / o->T, &m, 0) != 0) continue;
        int32_t *prompt = xmalloc(sizeof(int32_t) * (size_t)np);
        Rng *rng = xcalloc((size_t)Mmax, sizeof(Rng));
        rng_seed(&rng[0], 3);
        for (int i = 0; i < np; i++) prompt[i] = (int32_t)rng_below(&rng[0], (uint64_t)o->V);
        Gen g = {&m, prompt, np, nn, rng};
        int late = 0; /* a row past --max-seconds skips the mixer's later ones (--samples ascending: larger M) */
        for (int s = 0; s < o->n_samples; s++)
            if (decode_row(o, p, arr, labels[k], &g, o->samples[s], late) > o->max_seconds) late = 1;
        free(rng);
        free(prompt);
        model_free(&m);
    }
}
