/* test64_layers.c: finite-difference gradient checks (float64 build) of every op a layer
 * uses: linear, layernorm, GELU, embedding, cross-entropy, row softmax, the normalised
 * linear-mixing core (bidirectional and causal, chunk not dividing N) and GMA Gaussian
 * routing (per-head and shared components). Also the accumulate contract: a second
 * backward call doubles the gradient; the training cross-entropy (xent_grad) equals
 * xent_forward + xent_backward. */
#include <string.h>

#include "gradcheck.h"
#include "nn/linear.h"
#include "ops/ops.h"
#include "testutil.h"

/* ---------------- linear ---------------- */
typedef struct {
    int R, I, O;
    real *x, *W, *b, *out, *r;
} LinCtx;
static double lin_loss(void *p) {
    LinCtx *c = p;
    linear_forward(c->out, c->x, c->W, c->b, c->R, c->I, c->O);
    return gc_dot(c->out, c->r, (size_t)c->R * c->O);
}
START_TEST(test_linear) {
    Rng rng;
    rng_seed(&rng, 1);
    LinCtx c = {.R = 5, .I = 4, .O = 3};
    c.x = gc_random(20, &rng, 1);
    c.W = gc_random(12, &rng, 1);
    c.b = gc_random(3, &rng, 1);
    c.out = xcalloc(15, sizeof(real));
    c.r = gc_random(15, &rng, 1);
    real dx[20] = {0}, dW[12] = {0}, db[3] = {0};
    lin_loss(&c);
    linear_backward(dx, dW, db, c.r, c.x, c.W, c.R, c.I, c.O);
    GC_ASSERT("linear dx", gc_check(lin_loss, &c, c.x, dx, 20));
    GC_ASSERT("linear dW", gc_check(lin_loss, &c, c.W, dW, 12));
    GC_ASSERT("linear db", gc_check(lin_loss, &c, c.b, db, 3));
    /* accumulate contract */
    real dW2[12];
    memcpy(dW2, dW, sizeof dW);
    linear_backward(NULL, dW2, NULL, c.r, c.x, c.W, c.R, c.I, c.O);
    for (int i = 0; i < 12; i++) ck_assert(fabs(dW2[i] - 2 * dW[i]) < 1e-12);
}
END_TEST

/* ---------------- layernorm ---------------- */
typedef struct {
    int R, C;
    real *x, *w, *b, *out, *mean, *rstd, *r;
} LnCtx;
static double ln_loss(void *p) {
    LnCtx *c = p;
    g_ops->layernorm_forward(c->out, c->mean, c->rstd, c->x, c->w, c->b, c->R, c->C);
    return gc_dot(c->out, c->r, (size_t)c->R * c->C);
}
START_TEST(test_layernorm) {
    Rng rng;
    rng_seed(&rng, 2);
    int R = 4, C = 7;
    LnCtx c = {.R = R, .C = C};
    c.x = gc_random(R * C, &rng, 2);
    c.w = gc_random(C, &rng, 1);
    c.b = gc_random(C, &rng, 1);
    c.out = xcalloc(R * C, sizeof(real));
    c.r = gc_random(R * C, &rng, 1);
    c.mean = xcalloc(R, sizeof(real));
    c.rstd = xcalloc(R, sizeof(real));
    real dx[28] = {0}, dw[7] = {0}, db[7] = {0};
    ln_loss(&c);
    g_ops->layernorm_backward(dx, dw, db, c.r, c.x, c.w, c.mean, c.rstd, R, C);
    GC_ASSERT("layernorm dx", gc_check(ln_loss, &c, c.x, dx, R * C));
    GC_ASSERT("layernorm dw", gc_check(ln_loss, &c, c.w, dw, C));
    GC_ASSERT("layernorm db", gc_check(ln_loss, &c, c.b, db, C));
    real dx2[28];
    memcpy(dx2, dx, sizeof dx);
    g_ops->layernorm_backward(dx2, dw, db, c.r, c.x, c.w, c.mean, c.rstd, R, C);
    for (int i = 0; i < R * C; i++) ck_assert(fabs(dx2[i] - 2 * dx[i]) < 1e-12);
}
END_TEST

/* ---------------- gelu ---------------- */
typedef struct {
    size_t n;
    real *x, *out, *r;
} GeluCtx;
static double gelu_loss(void *p) {
    GeluCtx *c = p;
    g_ops->gelu_forward(c->out, c->x, c->n);
    return gc_dot(c->out, c->r, c->n);
}
START_TEST(test_gelu) {
    Rng rng;
    rng_seed(&rng, 3);
    GeluCtx c = {.n = 40};
    c.x = gc_random(40, &rng, 2);
    c.out = xcalloc(40, sizeof(real));
    c.r = gc_random(40, &rng, 1);
    real dx[40] = {0};
    g_ops->gelu_backward(dx, c.r, c.x, 40);
    GC_ASSERT("gelu dx", gc_check(gelu_loss, &c, c.x, dx, 40));
}
END_TEST

/* bias + GELU: dpre and dbias against the loss over pre0 + bias; the backward also in place */
typedef struct {
    int R, C;
    real *pre0, *pre, *bias, *out, *r;
} BiasGeluCtx;
static double bias_gelu_loss(void *p) {
    BiasGeluCtx *c = p;
    size_t n = (size_t)c->R * c->C;
    memcpy(c->pre, c->pre0, n * sizeof(real));
    g_ops->bias_gelu_forward(c->pre, c->out, c->bias, c->R, c->C);
    return gc_dot(c->out, c->r, n);
}
START_TEST(test_bias_gelu) {
    Rng rng;
    rng_seed(&rng, 4);
    BiasGeluCtx c = {.R = 150, .C = 7}; /* 150 rows: the blocks of rows of the bias sum, the last one short */
    size_t n = (size_t)c.R * c.C;
    c.pre0 = gc_random(n, &rng, 2);
    c.bias = gc_random(c.C, &rng, 1);
    c.pre = xcalloc(n, sizeof(real));
    c.out = xcalloc(n, sizeof(real));
    c.r = gc_random(n, &rng, 1);
    bias_gelu_loss(&c);
    real *dpre = xcalloc(n, sizeof(real)), *dbias = xcalloc(c.C, sizeof(real)), *inplace = xcalloc(n, sizeof(real));
    g_ops->bias_gelu_backward(dpre, dbias, c.r, c.pre, c.R, c.C);
    memcpy(inplace, c.r, n * sizeof(real));
    g_ops->bias_gelu_backward(inplace, NULL, inplace, c.pre, c.R, c.C);
    ck_assert(!memcmp(inplace, dpre, n * sizeof(real)));
    for (size_t i = 0; i < n; i++) { /* the plain GELU with the bias added first gives the same */
        real u = c.pre0[i] + c.bias[i % c.C], o;
        g_ops->gelu_forward(&o, &u, 1);
        ck_assert(fabs(o - c.out[i]) < 1e-14);
    }
    GC_ASSERT("bias_gelu dpre", gc_check(bias_gelu_loss, &c, c.pre0, dpre, n));
    GC_ASSERT("bias_gelu dbias", gc_check(bias_gelu_loss, &c, c.bias, dbias, c.C));
    free(c.pre0), free(c.bias), free(c.pre), free(c.out), free(c.r), free(dpre), free(dbias), free(inplace);
}
END_TEST

/* residual add + LayerNorm: the sum and exactly what layernorm_forward gives on it, in place too */
START_TEST(test_add_layernorm) {
    Rng rng;
    rng_seed(&rng, 6);
    int R = 9, C = 13;
    size_t n = (size_t)R * C;
    real *a = gc_random(n, &rng, 2), *b = gc_random(n, &rng, 2), *w = gc_random(C, &rng, 1), *bias = gc_random(C, &rng, 1);
    real *sum = xcalloc(n, sizeof(real)), *out = xcalloc(n, sizeof(real)), *ref = xcalloc(n, sizeof(real));
    real *m1 = xcalloc(R, sizeof(real)), *r1 = xcalloc(R, sizeof(real)), *m2 = xcalloc(R, sizeof(real)),
         *r2 = xcalloc(R, sizeof(real));
    g_ops->add_layernorm_forward(sum, out, m1, r1, a, b, w, bias, R, C);
    for (size_t i = 0; i < n; i++) ck_assert(sum[i] == a[i] + b[i]);
    g_ops->layernorm_forward(ref, m2, r2, sum, w, bias, R, C);
    ck_assert(!memcmp(out, ref, n * sizeof(real)) && !memcmp(m1, m2, R * sizeof(real)) && !memcmp(r1, r2, R * sizeof(real)));
    g_ops->add_layernorm_forward(a, out, m1, r1, a, b, w, bias, R, C); /* sum = a */
    ck_assert(!memcmp(a, sum, n * sizeof(real)) && !memcmp(out, ref, n * sizeof(real)));
    free(a), free(b), free(w), free(bias), free(sum), free(out), free(ref), free(m1), free(r1), free(m2), free(r2);
}
END_TEST

/* ---------------- embedding ---------------- */
typedef struct {
    int B, T, C, V;
    int32_t tok[6];
    real *wte, *wpe, *out, *r;
} EmbCtx;
static double emb_loss(void *p) {
    EmbCtx *c = p;
    g_ops->embed_forward(c->out, c->tok, c->wte, c->wpe, c->B, c->T, c->C);
    return gc_dot(c->out, c->r, (size_t)c->B * c->T * c->C);
}
START_TEST(test_embedding) {
    Rng rng;
    rng_seed(&rng, 4);
    EmbCtx c = {.B = 2, .T = 3, .C = 4, .V = 5, .tok = {1, 4, 1, 0, 2, 4}};
    c.wte = gc_random(20, &rng, 1);
    c.wpe = gc_random(12, &rng, 1);
    c.out = xcalloc(24, sizeof(real));
    c.r = gc_random(24, &rng, 1);
    real dwte[20] = {0}, dwpe[12] = {0};
    g_ops->embed_backward(dwte, dwpe, c.r, c.tok, 2, 3, 4);
    GC_ASSERT("embedding dwte", gc_check(emb_loss, &c, c.wte, dwte, 20));
    GC_ASSERT("embedding dwpe", gc_check(emb_loss, &c, c.wpe, dwpe, 12));
}
END_TEST

/* ---------------- cross-entropy ---------------- */
typedef struct {
    int R, V;
    int32_t tgt[5];
    real *logits, *loss, *valid;
} XeCtx;
static double xe_loss(void *p) {
    XeCtx *c = p;
    g_ops->xent_forward(c->loss, c->valid, c->logits, c->tgt, c->R, c->V);
    return g_ops->sum(c->loss, c->R) / g_ops->sum(c->valid, c->R);
}
START_TEST(test_xent) {
    Rng rng;
    rng_seed(&rng, 5);
    XeCtx c = {.R = 5, .V = 6, .tgt = {2, -1, 0, 5, 3}};
    c.logits = gc_random(30, &rng, 2);
    c.loss = xcalloc(5, sizeof(real));
    c.valid = xcalloc(5, sizeof(real));
    double l = xe_loss(&c);
    ck_assert(l > 0);
    real g[30];
    memcpy(g, c.logits, sizeof g);
    g_ops->xent_backward(g, c.tgt, 5, 6, (real)(1.0 / 4)); /* 4 scored rows */
    GC_ASSERT("cross-entropy dlogits", gc_check(xe_loss, &c, c.logits, g, 30));
    for (int v = 0; v < 6; v++) ck_assert(g[6 + v] == 0); /* ignored row */
    /* the training forward's fused op: the same losses, and softmax - onehot that scaled
     * by 1/4 is the gradient just checked */
    real gg[30], loss2[5], valid2[5];
    xe_loss(&c); /* the losses of the unperturbed logits */
    memcpy(gg, c.logits, sizeof gg);
    for (int r = 0; r < 5; r++) loss2[r] = valid2[r] = -7;
    g_ops->xent_grad(loss2, valid2, gg, c.tgt, 5, 6);
    double worst = 0;
    for (int r = 0; r < 5; r++) {
        worst = fmax(worst, fabs(loss2[r] - c.loss[r]));
        ck_assert(valid2[r] == c.valid[r]);
    }
    for (int i = 0; i < 30; i++) worst = fmax(worst, fabs(gg[i] / 4 - g[i]));
    printf("xent_grad against xent_forward + xent_backward: max abs difference %.2e\n", worst);
    ck_assert_msg(worst < 1e-14, "xent_grad differs by %g", worst);
    for (int v = 0; v < 6; v++) ck_assert(gg[6 + v] == 0);
}
END_TEST

/* ---------------- row softmax ---------------- */
typedef struct {
    int R, C;
    real *x, *y, *r;
} SmCtx;
static double sm_loss(void *p) {
    SmCtx *c = p;
    memcpy(c->y, c->x, sizeof(real) * c->R * c->C);
    g_ops->softmax_rows(c->y, c->R, c->C, 0.7, NULL);
    return gc_dot(c->y, c->r, (size_t)c->R * c->C);
}
START_TEST(test_softmax_rows) {
    Rng rng;
    rng_seed(&rng, 6);
    SmCtx c = {.R = 3, .C = 5};
    c.x = gc_random(15, &rng, 1);
    c.y = xcalloc(15, sizeof(real));
    c.r = gc_random(15, &rng, 1);
    sm_loss(&c);
    real g[15];
    memcpy(g, c.r, sizeof g);
    g_ops->softmax_rows_backward(g, c.y, 3, 5);
    for (int i = 0; i < 15; i++) g[i] *= 0.7; /* chain through the scale */
    GC_ASSERT("softmax rows dx", gc_check(sm_loss, &c, c.x, g, 15));
}
END_TEST

/* ---------------- linear mixing core ---------------- */
typedef struct {
    int BH, N, F, d, causal, chunk;
    real *q, *k, *v, *out, *den, *state, *r;
} LmCtx;
static double lm_loss(void *p) {
    LmCtx *c = p;
    g_ops->linmix_forward(c->out, c->den, c->state, c->q, c->k, c->v, c->BH, c->N, c->F, c->d, c->causal, c->chunk,
                          1e-6);
    return gc_dot(c->out, c->r, (size_t)c->BH * c->N * c->d);
}
static void linmix_case(int causal, int chunk, const char *label) {
    Rng rng;
    rng_seed(&rng, 7 + causal);
    LmCtx c = {.BH = 2, .N = 7, .F = 3, .d = 4, .causal = causal, .chunk = chunk};
    size_t nf = (size_t)c.BH * c.N * c.F, nd = (size_t)c.BH * c.N * c.d;
    c.q = xcalloc(nf, sizeof(real));
    c.k = xcalloc(nf, sizeof(real));
    for (size_t i = 0; i < nf; i++) c.q[i] = (real)(0.1 + rng_uniform(&rng)), c.k[i] = (real)(0.1 + rng_uniform(&rng));
    c.v = gc_random(nd, &rng, 1);
    c.out = xcalloc(nd, sizeof(real));
    c.r = gc_random(nd, &rng, 1);
    c.den = xcalloc(c.BH * c.N, sizeof(real));
    c.state = xcalloc((size_t)c.BH * c.N * (c.F * c.d + c.F), sizeof(real));
    real *dq = xcalloc(nf, sizeof(real)), *dk = xcalloc(nf, sizeof(real)), *dv = xcalloc(nd, sizeof(real));
    lm_loss(&c);
    g_ops->linmix_backward(dq, dk, dv, c.r, c.out, c.den, c.state, c.q, c.k, c.v, c.BH, c.N, c.F, c.d, causal, chunk);
    gc_assert_grad(label, "dphq", lm_loss, &c, c.q, dq, nf);
    gc_assert_grad(label, "dphk", lm_loss, &c, c.k, dk, nf);
    gc_assert_grad(label, "dv", lm_loss, &c, c.v, dv, nd);
    lm_loss(&c); /* outputs at the unperturbed inputs */
    if (causal) { /* causal output i must not depend on v_j, j > i: compare with the quadratic form */
        for (int h = 0; h < c.BH; h++)
            for (int i = 0; i < c.N; i++) {
                double den = 1e-6;
                double num[4] = {0};
                for (int j = 0; j <= i; j++) {
                    double a = 0;
                    for (int f = 0; f < c.F; f++) a += c.q[(h * c.N + i) * c.F + f] * c.k[(h * c.N + j) * c.F + f];
                    den += a;
                    for (int e = 0; e < c.d; e++) num[e] += a * c.v[(h * c.N + j) * c.d + e];
                }
                for (int e = 0; e < c.d; e++) ck_assert(fabs(num[e] / den - c.out[(h * c.N + i) * c.d + e]) < 1e-12);
            }
    }
}
START_TEST(test_linmix_bidir) { linmix_case(0, 64, "linmix bidirectional"); }
END_TEST
START_TEST(test_linmix_causal) { linmix_case(1, 3, "linmix causal chunk 3"); }
END_TEST
START_TEST(test_linmix_causal_one_chunk) { linmix_case(1, 64, "linmix causal chunk 64"); }
END_TEST

/* ---------------- GMA routing ---------------- */
typedef struct {
    int B, H, N, d, Kc, shared;
    real *x, *mu, *var, *prior, *gamma, *r;
} RtCtx;
static double rt_loss(void *p) {
    RtCtx *c = p;
    g_ops->gma_route_forward(c->gamma, c->x, c->mu, c->var, c->prior, c->B, c->H, c->N, c->d, c->Kc, 0.8, 1e-4,
                             c->shared);
    return gc_dot(c->gamma, c->r, (size_t)c->B * c->H * c->N * c->Kc);
}
/* B N rows per head; more than 256 per parameter set (B N, or B H N shared) take the
 * parameters prepared for the call instead of the cache of decoding's few-row calls */
static void route_case(int shared, int B, int N, const char *s) {
    Rng rng;
    rng_seed(&rng, 9 + shared + N);
    RtCtx c = {.B = B, .H = 2, .N = N, .d = N > 3 ? 2 : 4, .Kc = 3, .shared = shared};
    int Hp = shared ? 1 : c.H;
    size_t nx = (size_t)c.B * c.H * c.N * c.d, np = (size_t)Hp * c.Kc * c.d, ng = (size_t)c.B * c.H * c.N * c.Kc;
    c.x = gc_random(nx, &rng, 1);
    c.mu = gc_random(np, &rng, 1);
    c.var = gc_random(np, &rng, 0.5);
    c.prior = gc_random(Hp * c.Kc, &rng, 0.5);
    c.gamma = xcalloc(ng, sizeof(real));
    c.r = gc_random(ng, &rng, 1);
    rt_loss(&c);
    for (int i = 0; i < c.B * c.H * c.N; i++) { /* responsibilities sum to one */
        double s = 0;
        for (int k = 0; k < c.Kc; k++) s += c.gamma[i * c.Kc + k];
        ck_assert(fabs(s - 1) < 1e-12);
    }
    real *dx = xcalloc(nx, sizeof(real)), *dmu = xcalloc(np, sizeof(real)), *dvar = xcalloc(np, sizeof(real));
    real *dpr = xcalloc(Hp * c.Kc, sizeof(real));
    g_ops->gma_route_backward(dx, dmu, dvar, dpr, c.r, c.gamma, c.x, c.mu, c.var, c.prior, c.B, c.H, c.N, c.d, c.Kc,
                              0.8, 1e-4, shared);
    gc_assert_grad(s, "dx", rt_loss, &c, c.x, dx, nx);
    gc_assert_grad(s, "dmu", rt_loss, &c, c.mu, dmu, np);
    gc_assert_grad(s, "dvar_raw", rt_loss, &c, c.var, dvar, np);
    gc_assert_grad(s, "dprior", rt_loss, &c, c.prior, dpr, Hp * c.Kc);
    rt_loss(&c);
    /* the formula of docs/model.md §3.2, written out for one row */
    int h = 1 % Hp, row = 1 * c.N + 2; /* batch 0, head 1, position 2 */
    double l[3], mx = -1e300, lse_a = 0;
    for (int k = 0; k < c.Kc; k++) lse_a += exp(c.prior[h * c.Kc + k]);
    for (int k = 0; k < c.Kc; k++) {
        double q = 0;
        for (int e = 0; e < c.d; e++) {
            double s2 = log1p(exp(c.var[(h * c.Kc + k) * c.d + e])) + 1e-4;
            double diff = c.x[row * c.d + e] - c.mu[(h * c.Kc + k) * c.d + e];
            q += diff * diff / s2 + log(s2);
        }
        l[k] = (c.prior[h * c.Kc + k] - log(lse_a) - 0.5 * q) / 0.8;
        mx = fmax(mx, l[k]);
    }
    double z = 0;
    for (int k = 0; k < c.Kc; k++) z += exp(l[k] - mx);
    for (int k = 0; k < c.Kc; k++) ck_assert(fabs(exp(l[k] - mx) / z - c.gamma[row * c.Kc + k]) < 1e-12);
}
START_TEST(test_route) { route_case(0, 2, 3, "gma route"); }
END_TEST
START_TEST(test_route_shared) { route_case(1, 2, 3, "gma route shared"); }
END_TEST
START_TEST(test_route_many_rows) { route_case(0, 1, 300, "gma route, 300 rows"); }
END_TEST
START_TEST(test_route_shared_many_rows) { route_case(1, 2, 70, "gma route shared, 280 rows"); }
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("layers (float64 gradient checks)");
    TCase *tc = tcase_create("ops");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_linear);
    tcase_add_test(tc, test_layernorm);
    tcase_add_test(tc, test_gelu);
    tcase_add_test(tc, test_bias_gelu);
    tcase_add_test(tc, test_add_layernorm);
    tcase_add_test(tc, test_embedding);
    tcase_add_test(tc, test_xent);
    tcase_add_test(tc, test_softmax_rows);
    tcase_add_test(tc, test_linmix_bidir);
    tcase_add_test(tc, test_linmix_causal);
    tcase_add_test(tc, test_linmix_causal_one_chunk);
    tcase_add_test(tc, test_route);
    tcase_add_test(tc, test_route_shared);
    tcase_add_test(tc, test_route_many_rows);
    tcase_add_test(tc, test_route_shared_many_rows);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
