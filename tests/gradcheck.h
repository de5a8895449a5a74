/* gradcheck.h: central finite differences in double precision (tests linked against the
 * float64 library). Every element of every checked tensor is perturbed by +-h; the
 * analytic gradient must match with relative error below GC_TOL, where
 * rel = |analytic - numeric| / max(|analytic|, |numeric|, GC_FLOOR * max_i |analytic_i|):
 * elements whose gradient is tiny next to the tensor's largest are judged against it, and
 * an absolute difference below GC_ABS_TOL (the rounding noise of the difference quotient,
 * about 1e-16 |loss| / h) counts as agreement. Also the one-mixer-layer (GcMix,
 * gc_mixer_case) and whole-model (GcModel, gc_causal_case) cases the float64 suites share. */
#ifndef GMA_GRADCHECK_H
#define GMA_GRADCHECK_H
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "model/model.h"
#include "nn/params.h"

#define GC_H 1e-5
#define GC_TOL 1e-6
#define GC_FLOOR 1e-3
#define GC_ABS_TOL 1e-9

typedef double (*gc_loss_fn)(void *ctx);
static double gc_last_abs; /* largest |analytic - numeric| of the last gc_check */

/* Max relative error of analytic gradient g for parameters x[0..n) of loss f. */
static inline double gc_check(gc_loss_fn f, void *ctx, real *x, const real *g, size_t n) {
    double worst = 0, gmax = 1e-12;
    gc_last_abs = 0;
    for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(g[i]));
    for (size_t i = 0; i < n; i++) {
        real s = x[i];
        x[i] = s + GC_H;
        double lp = f(ctx);
        x[i] = s - GC_H;
        double lm = f(ctx);
        x[i] = s;
        double num = (lp - lm) / (2 * GC_H);
        double den = fmax(GC_FLOOR * gmax, fmax(fabs(num), fabs(g[i])));
        gc_last_abs = fmax(gc_last_abs, fabs(num - g[i]));
        double e = fabs(num - g[i]) < GC_ABS_TOL ? 0 : fabs(num - g[i]) / den;
        if (e > worst) worst = e;
        if (getenv("GC_VERBOSE") && e > GC_TOL) printf("  element %zu: analytic %.10g numeric %.10g\n", i, (double)g[i], num);
    }
    return worst;
}

static inline void gc_fill(real *x, size_t n, Rng *r, double scale) {
    for (size_t i = 0; i < n; i++) x[i] = (real)(scale * rng_normal(r));
}

/* n fresh elements drawn as gc_fill draws them */
static inline real *gc_random(size_t n, Rng *r, double scale) {
    real *x = xcalloc(n, sizeof(real));
    gc_fill(x, n, r, scale);
    return x;
}

static inline double gc_dot(const real *a, const real *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Check every trained tensor of a parameter table (buffers are state, not trained): the
 * analytic gradient g (a copy taken before checking) against central differences of f
 * over params. Asserts each tensor below GC_TOL naming it; returns the worst relative error
 * and leaves the worst absolute difference over all tensors in gc_last_abs. */
static inline double gc_check_table(const ParamTable *pt, real *params, const real *g, gc_loss_fn f, void *ctx,
                                    const char *label) {
    double worst = 0, worst_abs = 0;
    for (int i = 0; i < pt->n; i++) {
        const ParamInfo *p = &pt->t[i];
        if (p->group == GROUP_BUFFER) continue;
        double e = gc_check(f, ctx, params + p->offset, g + p->offset, p->numel);
        if (e > 1e-7) printf("  %-36s %.2e\n", p->name, e);
        ck_assert_msg(e < GC_TOL, "%s: %s max relative error %.3e", label, p->name, e);
        worst = fmax(worst, e);
        worst_abs = fmax(worst_abs, gc_last_abs);
    }
    gc_last_abs = worst_abs;
    return worst;
}

#define GC_ASSERT(name, err)                                                            \
    do {                                                                                \
        double e_ = (err);                                                              \
        printf("gradcheck %-40s max rel err %.2e  max abs err %.2e\n", name, e_, gc_last_abs);                         \
        ck_assert_msg(e_ < GC_TOL, "%s: max relative error %.3e >= %.1e", name, e_, GC_TOL); \
    } while (0)

/* GC_ASSERT of gc_check(f, ctx, x, g, n) under the name "<label> <what>" */
static inline void gc_assert_grad(const char *label, const char *what, gc_loss_fn f, void *ctx, real *x, const real *g,
                                  size_t n) {
    char nm[192];
    snprintf(nm, sizeof nm, "%s %s", label, what);
    GC_ASSERT(nm, gc_check(f, ctx, x, g, n));
}

/* ---- one mixer layer (blocks.0.mixer of a config) on a B x N training batch: loss =
 * <y, r> + w x the mixer's diversity value ---- */
typedef struct GcMix {
    Mixer *m;
    ParamTable pt;
    real *params, *grads, *act, *scratch, *h, *y, *r;
    MixerCtx ctx;
    size_t n;
    double w; /* diversity weight (the mixer's aux_loss weight; ctx.aux_scale 1); 0: none */
} GcMix;

/* the padded cases' key mask for B 2, N 7: sequence 0 ends in 2 pad tokens */
static const uint8_t gc_pad_mask[14] = {1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1};

static inline double gc_mix_loss(void *p) {
    GcMix *c = p;
    c->m->vt->forward(c->m, &c->ctx, c->y, c->h, c->params, c->act, c->scratch);
    double l = gc_dot(c->y, c->r, c->n);
    if (c->w != 0) { /* the auxiliary loss with the weight the mixer declares */
        double wt = 0, v = c->m->vt->aux_loss(c->m, &wt);
        ck_assert(wt == c->w);
        l += wt * v;
    }
    return l;
}

/* the mixer `name` built from cfg, parameters drawn from rng (pt_init, then its own init) */
static inline void gc_mix_create(GcMix *c, const Config *cfg, const char *name, Rng *rng) {
    memset(c, 0, sizeof *c);
    c->m = mixer_find(name)->create(cfg, 0, &c->pt, "blocks.0.mixer");
    ck_assert_msg(c->m != NULL, "%s", gma_error());
    c->params = xcalloc(c->pt.total, sizeof(real));
    c->grads = xcalloc(c->pt.total, sizeof(real));
    pt_init(&c->pt, c->params, rng);
    if (c->m->vt->init) c->m->vt->init(c->m, c->params, rng);
}

/* buffers for a B x N training batch (keymask mask, NULL: none); h and r drawn from rng */
static inline void gc_mix_batch(GcMix *c, int B, int N, int causal, const uint8_t *mask, Rng *rng) {
    c->act = xcalloc(c->m->vt->act_size(c->m, B, N), sizeof(real));
    c->scratch = xcalloc(c->m->vt->scratch_size(c->m, B, N), sizeof(real));
    c->n = (size_t)B * N * c->m->D;
    c->h = gc_random(c->n, rng, 1);
    c->y = xcalloc(c->n, sizeof(real));
    c->r = gc_random(c->n, rng, 1);
    c->ctx = (MixerCtx){.B = B, .N = N, .causal = causal, .keymask = mask, .training = 1};
}

static inline void gc_mix_setup(GcMix *c, const Config *cfg, const char *name, int B, int N, int causal,
                                const uint8_t *mask, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    gc_mix_create(c, cfg, name, &rng);
    gc_mix_batch(c, B, N, causal, mask, &rng);
}

static inline void gc_mix_free(GcMix *c) {
    c->m->vt->destroy(c->m);
    pt_free(&c->pt);
    free(c->params), free(c->grads), free(c->act), free(c->scratch), free(c->h), free(c->y), free(c->r);
}

/* forward, backward, then dh and every trained parameter against central differences
 * (GC_ASSERT as "<label> dh", "<label> <tensor>"); buffers must get no gradient. Returns dh. */
static inline real *gc_mix_check(GcMix *c, const char *label) {
    gc_mix_loss(c);
    real *dh = xcalloc(c->n, sizeof(real));
    c->m->vt->backward(c->m, &c->ctx, dh, c->r, c->h, c->params, c->grads, c->act, c->scratch);
    gc_assert_grad(label, "dh", gc_mix_loss, c, c->h, dh, c->n);
    for (int i = 0; i < c->pt.n; i++) {
        const ParamInfo *p = &c->pt.t[i];
        if (p->group == GROUP_BUFFER) { /* not trained (performer omega, gma memory) */
            for (size_t j = 0; j < p->numel; j++) ck_assert(c->grads[p->offset + j] == 0);
            continue;
        }
        gc_assert_grad(label, p->name + 15, gc_mix_loss, c, c->params + p->offset, c->grads + p->offset, p->numel);
    }
    return dh;
}

/* START_TEST test_<nm>_causal, _bidir, _causal_padded and _bidir_padded, each a call of
 * mixer_case(name, causal, padded), which the suite defines */
#define GC_MIXER_TESTS(nm, name)                                           \
    START_TEST(test_##nm##_causal) { mixer_case(name, 1, 0); }             \
    END_TEST                                                               \
    START_TEST(test_##nm##_bidir) { mixer_case(name, 0, 0); }              \
    END_TEST                                                               \
    START_TEST(test_##nm##_causal_padded) { mixer_case(name, 1, 1); }      \
    END_TEST                                                               \
    START_TEST(test_##nm##_bidir_padded) { mixer_case(name, 0, 1); }       \
    END_TEST

/* the accumulate contract after gc_mix_check: a second backward (into dh, the check's input
 * gradient) doubles every parameter gradient */
static inline void gc_mix_accumulates(GcMix *c, real *dh) {
    real *g1 = xcalloc(c->pt.total, sizeof(real));
    memcpy(g1, c->grads, c->pt.total * sizeof(real));
    gc_mix_loss(c);
    c->m->vt->backward(c->m, &c->ctx, dh, c->r, c->h, c->params, c->grads, c->act, c->scratch);
    for (size_t i = 0; i < c->pt.total; i++) ck_assert(fabs(c->grads[i] - 2 * g1[i]) <= 1e-12 * (1 + fabs(g1[i])));
    free(g1);
}

/* The mixer `name` of cfg on B 2, N 7, causal or not, padded (gc_pad_mask) or not: the
 * gradient check; the accumulate contract (a second backward doubles the gradients); with
 * padding, a change at a padded position leaves every other position's output unchanged. */
static inline void gc_mixer_case(const Config *cfg, const char *name, int causal, int padded) {
    GcMix c;
    int B = 2, N = 7;
    gc_mix_setup(&c, cfg, name, B, N, causal, padded ? gc_pad_mask : NULL, 42 + causal + 2 * padded);
    char label[128];
    snprintf(label, sizeof label, "%s %s%s", name, causal ? "causal" : "bidir", padded ? " padded" : "");
    real *dh = gc_mix_check(&c, label);
    gc_mix_accumulates(&c, dh);
    if (padded) { /* a change at a padded position leaves other positions' outputs unchanged */
        int D = c.m->D;
        gc_mix_loss(&c);
        real *y0 = xcalloc(c.n, sizeof(real));
        memcpy(y0, c.y, c.n * sizeof(real));
        for (int e = 0; e < D; e++) c.h[5 * D + e] += 3;
        gc_mix_loss(&c);
        for (int n = 0; n < B * N; n++)
            if (n != 5)
                for (int e = 0; e < D; e++)
                    ck_assert_msg(fabs(c.y[n * D + e] - y0[n * D + e]) < 1e-12, "%s: padding leaked into row %d", name, n);
        free(y0);
    }
    free(dh);
    gc_mix_free(&c);
}

/* ---- whole language models: the config's model on one fixed batch (B 2, N 7, tokens from
 * seed 3, every fifth target ignored); loss = mean cross-entropy + gma.div_weight x the
 * diversity loss ---- */
typedef struct GcModel {
    Model m;
    int32_t tok[14], tgt[14];
    double w;
} GcModel;

static inline double gc_model_loss(void *p) {
    GcModel *c = p;
    LossStats st;
    ck_assert_int_eq(model_forward(&c->m, c->tok, c->tgt, 2, 7, NULL, 0, &st, 1, 0), 0);
    double weighted = 0;
    model_aux_loss(&c->m, &weighted);
    return st.loss_sum / st.count + (c->w != 0 ? weighted : 0);
}

static inline void gc_model_setup(GcModel *c, const Config *cfg) {
    memset(c, 0, sizeof *c);
    c->w = cfg_num(cfg, "gma.div_weight");
    ck_assert_int_eq(model_build(&c->m, cfg), 0);
    model_alloc(&c->m, 2, 7);
    model_init_params(&c->m, 7);
    Rng rng;
    rng_seed(&rng, 3);
    for (int i = 0; i < 14; i++) {
        c->tok[i] = (int32_t)rng_below(&rng, 11);
        c->tgt[i] = (i % 5 == 2) ? -1 : (int32_t)rng_below(&rng, 11);
    }
}

/* loss f(ctx) forward, backward of m, then every trained parameter of m against central
 * differences of f (gc_check_table under label); returns the worst relative error */
static inline double gc_model_grads(Model *m, gc_loss_fn f, void *ctx, const char *label) {
    f(ctx);
    model_zero_grad(m);
    model_backward(m, 1.0);
    real *g = xcalloc(m->pt.total, sizeof(real));
    memcpy(g, m->grads, m->pt.total * sizeof(real));
    double worst = gc_check_table(&m->pt, m->params, g, f, ctx, label);
    free(g);
    return worst;
}

/* causality inside a model (built from cfg, named mixer in the report): changing the token
 * at position 6 of one sequence (B 1, N 8) leaves the logits and losses of positions 0..5
 * unchanged within tol and changes the logits of position 6 */
static inline void gc_causal_case(const Config *cfg, const char *mixer, double tol) {
    Model m;
    ck_assert_int_eq(model_build(&m, cfg), 0);
    int B = 1, N = 8;
    model_alloc(&m, B, N);
    model_init_params(&m, 11);
    int32_t tok[8] = {1, 5, 2, 7, 3, 9, 4, 6}, tgt[8] = {5, 2, 7, 3, 9, 4, 6, 1};
    LossStats st;
    ck_assert_int_eq(model_forward(&m, tok, tgt, B, N, NULL, 0, &st, 0, 0), 0);
    size_t R = (size_t)B * N;
    real *loss0 = xcalloc(R, sizeof(real)), *logit0 = xcalloc(R * m.V, sizeof(real));
    memcpy(loss0, m.loss_rows, R * sizeof(real));
    memcpy(logit0, m.logits, R * m.V * sizeof(real));
    tok[6] = 10; /* change a future token */
    ck_assert_int_eq(model_forward(&m, tok, tgt, B, N, NULL, 0, &st, 0, 0), 0);
    double worst = 0, worst_loss = 0;
    for (int i = 0; i < 6; i++) {
        worst_loss = fmax(worst_loss, fabs(m.loss_rows[i] - loss0[i]));
        for (int v = 0; v < m.V; v++) worst = fmax(worst, fabs(m.logits[i * m.V + v] - logit0[i * m.V + v]));
    }
    printf("causality %-10s max change of earlier logits %.2e, losses %.2e\n", mixer, worst, worst_loss);
    ck_assert_msg(worst <= tol, "%s: earlier logits changed by %.3e", mixer, worst);
    ck_assert_msg(worst_loss <= tol, "%s: earlier losses changed by %.3e", mixer, worst_loss);
    int changed = 0;
    for (int v = 0; v < m.V; v++) changed |= m.logits[6 * m.V + v] != logit0[6 * m.V + v];
    ck_assert_msg(changed, "position 6 must see its own token");
    free(loss0);
    free(logit0);
    model_free(&m);
}

/* gc_model_grads of the batch's loss (GC_ASSERT under name), then the model is freed */
static inline void gc_model_check(GcModel *c, const char *label, const char *name) {
    GC_ASSERT(name, gc_model_grads(&c->m, gc_model_loss, c, label));
    model_free(&c->m);
}
#endif
