/* generate.c: sampling from a causal language model (see generate.h). */
#include "model/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

static const real *g_sort_logits; /* qsort has no context argument */
static int by_logit(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    real x = g_sort_logits[i], y = g_sort_logits[j];
    if (x != y) return x > y ? -1 : 1;
    return (i > j) - (i < j);
}

int sample_token(const real *logits, int V, const SampleOpts *o, Rng *rng, int *order, double *prob) {
    if (o->vocab_limit > 0 && o->vocab_limit < V) V = o->vocab_limit;
    if (!(o->temperature > 0)) {
        int best = 0;
        for (int i = 1; i < V; i++)
            if (logits[i] > logits[best]) best = i;
        return best;
    }
    for (int i = 0; i < V; i++) order[i] = i;
    g_sort_logits = logits;
    qsort(order, (size_t)V, sizeof(int), by_logit);
    int keep = o->top_k > 0 && o->top_k < V ? o->top_k : V;
    double mx = logits[order[0]], z = 0;
    for (int r = 0; r < keep; r++) z += prob[r] = exp(((double)logits[order[r]] - mx) / o->temperature);
    if (o->top_p < 1) { /* the fewest leading candidates whose share reaches top_p */
        double acc = 0;
        int r = 0;
        while (r < keep && acc < o->top_p * z) acc += prob[r++];
        keep = r > 0 ? r : 1;
        z = acc > 0 ? acc : prob[0];
    }
    double u = rng_uniform(rng) * z, acc = 0;
    for (int r = 0; r < keep; r++)
        if ((acc += prob[r]) > u) return order[r];
    return order[keep - 1]; /* u within rounding of z */
}

typedef struct One { generate_fn emit; void *ctx; } One;
static int emit_one(void *ctx, int b, int32_t token) {
    (void)b;
    const One *o = ctx;
    return o->emit ? o->emit(o->ctx, token) : 0;
}

int model_generate(Model *m, const int32_t *prompt, int np, int n_new, const SampleOpts *o, Rng *rng, generate_fn emit,
                   void *ctx) {
    One one = {emit, ctx};
    return model_generate_batch(m, prompt, np, n_new, 1, o, rng, emit_one, &one);
}

int model_generate_batch(Model *m, const int32_t *prompt, int np, int n_new, int M, const SampleOpts *o, Rng *rng,
                         generate_batch_fn emit, void *ctx) {
    if (m->cls) return gma_errorf("this model is a classifier: it does not generate text");
    if (!m->causal) return gma_errorf("this model is bidirectional (model.causal false): it cannot generate text");
    if (np < 1) return gma_errorf("generation needs a prompt of at least one token");
    if (M < 1) return gma_errorf("generation needs at least one sequence");
    int W = m->Nmax < m->Nmax_act ? m->Nmax : m->Nmax_act, V = m->V, rc = 0;
    int total = np + n_new;
    /* seq: M sequences of `total` tokens */
    int32_t *seq = xmalloc(sizeof(int32_t) * (size_t)total * M), *tgt = xmalloc(sizeof(int32_t) * (size_t)W);
    int32_t *col = xmalloc(sizeof(int32_t) * (size_t)M);
    real *rows = xmalloc(sizeof(real) * (size_t)V * M);
    int *order = xmalloc(sizeof(int) * (size_t)V);
    double *prob = xmalloc(sizeof(double) * (size_t)V);
    for (int b = 0; b < M; b++) memcpy(seq + (size_t)b * total, prompt, sizeof(int32_t) * (size_t)np);
    for (int i = 0; i < W; i++) tgt[i] = -1;
    DecodeState ds = {0};
    int cache = !o->no_cache && np <= W && model_can_decode(m) && model_decode_begin_batch(m, &ds, M) == 0;
    /* the prompt as one forward that fills the states (model_prefill), unless fed token by token */
    if (cache && !o->no_prefill && np < total) rc = model_prefill(m, &ds, prompt, np);
    for (int t = np; t < total && rc == 0; t++) {
        int n = t < W ? t : W; /* the context: the last n tokens */
        if (cache && t <= ds.W) { /* tokens 0..t-1 into the states, one step each */
            while (ds.pos < t && rc == 0) {
                for (int b = 0; b < M; b++) col[b] = seq[(size_t)b * total + ds.pos];
                rc = model_decode_step_batch(m, &ds, col);
            }
            if (rc) break;
            g_ops->to_host(rows, m->logits, sizeof(real) * (size_t)V * M);
        } else {
            for (int b = 0; b < M && rc == 0; b++) {
                LossStats st;
                if (model_forward(m, seq + (size_t)b * total + t - n, tgt, 1, n, NULL, 0, &st, 0, 0) != 0) rc = -1;
                else /* the last row the head scored (a cross model scores its query rows only) */
                    g_ops->to_host(rows + (size_t)b * V, m->logits + (size_t)(m->N - 1 - m->logits_row0) * V,
                                    sizeof(real) * (size_t)V);
            }
            if (rc) break;
        }
        for (int b = 0; b < M && rc == 0; b++) {
            const real *row = rows + (size_t)b * V;
            for (int i = 0; i < V && rc == 0; i++)
                if (!isfinite(row[i]))
                    rc = gma_errorf("the logits at position %d (sample %d) are not finite (token %d: %g): the weights give "
                                    "non-finite values", t, b, i, (double)row[i]);
            if (rc) break;
            int32_t tok = seq[(size_t)b * total + t] = sample_token(rows + (size_t)b * V, V, o, rng + b, order, prob);
            if (emit) rc = emit(ctx, b, tok);
        }
    }
    if (cache) model_decode_end(m, &ds);
    free(seq);
    free(tgt);
    free(col);
    free(rows);
    free(order);
    free(prob);
    return rc;
}
