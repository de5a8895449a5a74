/* gradcheck.h: central finite differences in double precision (tests linked against the
 * float64 library). Every element of every checked tensor is perturbed by +-h; the
 * analytic gradient must match with relative error below GC_TOL, where
 * rel = |analytic - numeric| / max(|analytic|, |numeric|, GC_FLOOR * max_i |analytic_i|):
 * elements whose gradient is tiny next to the tensor's largest are judged against it, and
 * an absolute difference below GC_ABS_TOL (the rounding noise of the difference quotient,
 * about 1e-16 |loss| / h) counts as agreement. */
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
    return st.loss_sum / st.count + (c->w != 0 ? c->w * model_div_loss(&c->m) : 0);
}

static inline void gc_model_setup(GcModel *c, const Config *cfg) {
    memset(c, 0, sizeof *c);
    c->w = cfg->gma.div_weight;
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

/* forward, backward, every trained parameter against central differences (GC_ASSERT under
 * name), then the model is freed */
static inline void gc_model_check(GcModel *c, const char *label, const char *name) {
    gc_model_loss(c);
    model_zero_grad(&c->m);
    model_backward(&c->m, 1.0);
    real *g = xcalloc(c->m.pt.total, sizeof(real));
    memcpy(g, c->m.grads, c->m.pt.total * sizeof(real));
    double worst = gc_check_table(&c->m.pt, c->m.params, g, gc_model_loss, c, label);
    GC_ASSERT(name, worst);
    free(g);
    model_free(&c->m);
}
#endif
