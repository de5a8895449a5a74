/* test_dense_f32.c: the float32 CPU kernels of the dense layers that run 8 or 16 lanes at
 * once or in blocks of rows (the float64 gradient checks run the scalar float64 path):
 * the vector exp (cpu_exp.h: every lane width, its edge values), cross-entropy with its
 * softmax - onehot, GELU forward and backward, AdamW and LayerNorm backward against float64 references
 * written here from the formulas (docs/model.md), to float32 rounding, on sizes with a
 * tail that is not a multiple of 8 and inputs that saturate the tanh; LayerNorm backward
 * gives the same bits on 1 and 2 threads; the optimiser's runs of tensors (optim.c) give
 * what one op call per tensor gives (AdamW with decay on weights only, clipping, an EMA
 * buffer that is never updated). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "ops/cpu/cpu_exp.h"
#include "ops/ops.h"
#include "optim/optim.h"
#include "testutil.h"

#define GK 0.7978845608028654

static double gelu_ref(double u) { return 0.5 * u * (1 + tanh(GK * (u + 0.044715 * u * u * u))); }
static double gelu_grad_ref(double u) {
    double t = tanh(GK * (u + 0.044715 * u * u * u));
    return 0.5 * (1 + t) + 0.5 * u * (1 - t * t) * GK * (1 + 3 * 0.044715 * u * u);
}

/* deterministic inputs in [-lo, lo] with a few extremes */
static void fill(real *x, size_t n, double lo, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (real)(lo * (2.0 * (seed >> 8) / 16777216.0 - 1));
    }
    if (n > 3) x[0] = 30, x[1] = -30, x[2] = 0;
}

/* The vector exp against libm: vexp_sub (VL lanes, then the scalar tail), vexp_mul and
 * vexp1 agree with exp to 3e-7 relative over [-87, 88]; below -87 and at -inf exactly 0,
 * above 88 saturated to e^88 (finite), NaN stays NaN, in every path. */
START_TEST(test_vexp_matches_libm) {
    enum { N = 4099 }; /* not a multiple of 8 or 16: the scalar tail runs too */
    static real x[N], y[N], z[N];
    for (int i = 0; i < N; i++) x[i] = (real)(-95.0 + 190.0 * i / (N - 1));
    /* -NaN and 3e38 too: a huge weight's logits; under UBSan (make asan) the exponent's shift
     * once overflowed on them */
    const real special[] = {-INFINITY, INFINITY, NAN, 0, -87.5f, 88.5f, 1e-30f, -1e-30f, -NAN, 3e38f, -3e38f};
    for (int k = 0; k < 11; k++) x[17 * k + 3] = special[k], x[N - 1 - k] = special[k];
    double s = vexp_sub(y, x, 0, N);
    vexp_mul(z, x, 1, N);
    double err = 0;
    for (int i = 0; i < N; i++) {
        double xi = x[i], ref;
        if (isnan(xi)) {
            ck_assert_msg(isnan(y[i]) && isnan(z[i]) && isnan(vexp1(x[i])), "exp(NaN) at %d is not NaN", i);
            continue;
        }
        ref = xi < -87 ? 0 : exp(fmin(xi, 88));
        real got[3] = {y[i], z[i], vexp1(x[i])};
        for (int p = 0; p < 3; p++) {
            if (xi < -87) ck_assert_msg(got[p] == 0, "exp(%g) = %g in path %d, not 0", xi, got[p], p);
            else err = fmax(err, fabs(got[p] - ref) / ref);
            ck_assert_msg(isfinite(got[p]), "exp(%g) = %g in path %d is not finite", xi, got[p], p);
        }
    }
    printf("vector exp (%d lanes) vs libm: max relative error %.2e over [-87, 88]\n", VL, err);
    ck_assert_msg(err < 3e-7, "vector exp relative error %g", err);
    ck_assert_msg(isnan(s), "the sum over a NaN is %g", s); /* the NaN reaches the sum too */
}
END_TEST

/* Cross-entropy with its gradient (xent_grad: loss and softmax - onehot in place) and the
 * loss alone (xent_forward) against float64 on rows of 8,193 logits (a tail past every
 * lane width) with large magnitudes, and an ignored row (target -1: loss 0, gradient 0). */
START_TEST(test_xent_matches_reference) {
    enum { R = 5, V = 8193 };
    real *l = malloc(sizeof(real) * R * V), *g = malloc(sizeof(real) * R * V), loss[R], loss2[R], valid[R], valid2[R];
    int32_t tgt[R] = {0, V - 1, 4096, -1, 17};
    fill(l, (size_t)R * V, 40, 11u);
    memcpy(g, l, sizeof(real) * R * V);
    g_ops->xent_forward(loss2, valid2, l, tgt, R, V);
    g_ops->xent_grad(loss, valid, g, tgt, R, V);
    double el = 0, eg = 0;
    for (int r = 0; r < R; r++) {
        const real *lr = l + (size_t)r * V;
        if (tgt[r] < 0) {
            ck_assert(loss[r] == 0 && valid[r] == 0 && loss2[r] == 0 && valid2[r] == 0);
            for (int i = 0; i < V; i++) ck_assert(g[(size_t)r * V + i] == 0);
            continue;
        }
        double mx = -INFINITY, s = 0;
        for (int i = 0; i < V; i++) mx = fmax(mx, lr[i]);
        for (int i = 0; i < V; i++) s += exp(lr[i] - mx);
        double ref = log(s) + mx - lr[tgt[r]];
        el = fmax(el, fmax(fabs(loss[r] - ref), fabs(loss2[r] - ref)) / fmax(1, ref));
        ck_assert(valid[r] == 1 && valid2[r] == 1);
        for (int i = 0; i < V; i++) {
            double p = exp(lr[i] - mx) / s - (i == tgt[r]);
            eg = fmax(eg, fabs(g[(size_t)r * V + i] - p));
        }
    }
    printf("cross-entropy float32 vs float64 (V = %d): loss max rel err %.2e, gradient max abs err %.2e\n", V, el, eg);
    ck_assert_msg(el < 1e-6, "cross-entropy loss error %g", el);
    ck_assert_msg(eg < 1e-6, "softmax - onehot error %g", eg);
    free(l), free(g);
}
END_TEST

START_TEST(test_gelu_matches_reference) {
    size_t n = 70000 + 5; /* parallel, with a tail of 5 */
    real *x = malloc(n * sizeof(real)), *y = malloc(n * sizeof(real)), *d = malloc(n * sizeof(real)),
         *dx = malloc(n * sizeof(real));
    fill(x, n, 8, 1);
    fill(d, n, 1, 2);
    for (size_t i = 0; i < n; i++) dx[i] = (real)0.25; /* the backward accumulates */
    g_ops->gelu_forward(y, x, n);
    g_ops->gelu_backward(dx, d, x, n);
    double ey = 0, eg = 0;
    for (size_t i = 0; i < n; i++) {
        double u = x[i], ry = gelu_ref(u), rg = 0.25 + (double)d[i] * gelu_grad_ref(u);
        /* the tanh form loses digits in 1 + t and 1 - t^2 where the tanh saturates: errors
         * relative to max(1, |u|^3), the size of the terms that cancel */
        double sc = fmax(1, fabs(u * u * u));
        ey = fmax(ey, fabs(y[i] - ry) / sc);
        eg = fmax(eg, fabs(dx[i] - rg) / sc);
    }
    printf("gelu float32 vs float64: forward max err %.2e, backward %.2e\n", ey, eg);
    ck_assert_msg(ey < 1e-6 && eg < 1e-6, "forward %g backward %g", ey, eg);
    ck_assert(y[0] == 30 && y[1] == 0 && y[2] == 0);
    free(x), free(y), free(d), free(dx);
}
END_TEST

/* bias + GELU on rows of 8-lane groups and a tail: forward and backward against the double
 * formulas, the bias gradient the same bits on 1 and 2 threads */
START_TEST(test_bias_gelu_matches_reference) {
    int R = 301, C = 21;
    size_t n = (size_t)R * C;
    real *x = malloc(n * sizeof(real)), *pre = malloc(n * sizeof(real)), *y = malloc(n * sizeof(real)),
         *d = malloc(n * sizeof(real)), *bias = malloc(C * sizeof(real)), *dx[2], *db[2];
    fill(x, n, 8, 11);
    fill(d, n, 1, 12);
    fill(bias, C, 1, 13);
    memcpy(pre, x, n * sizeof(real));
    g_ops->bias_gelu_forward(pre, y, bias, R, C);
    int threads = omp_get_max_threads();
    for (int k = 0; k < 2; k++) {
        dx[k] = malloc(n * sizeof(real)), db[k] = calloc(C, sizeof(real));
        omp_set_num_threads(k ? 2 : 1);
        g_ops->bias_gelu_backward(dx[k], db[k], d, pre, R, C);
    }
    omp_set_num_threads(threads);
    ck_assert(!memcmp(dx[0], dx[1], n * sizeof(real)) && !memcmp(db[0], db[1], C * sizeof(real)));
    double ey = 0, eg = 0, eb = 0, *rdb = calloc(C, sizeof(double));
    for (size_t i = 0; i < n; i++) {
        double u = (double)x[i] + bias[i % C], sc = fmax(1, fabs(u * u * u)), rg = (double)d[i] * gelu_grad_ref(u);
        ck_assert(pre[i] == x[i] + bias[i % C]);
        ey = fmax(ey, fabs(y[i] - gelu_ref(u)) / sc);
        eg = fmax(eg, fabs(dx[0][i] - rg) / sc);
        rdb[i % C] += dx[0][i];
    }
    for (int c = 0; c < C; c++) eb = fmax(eb, fabs(db[0][c] - rdb[c]) / R);
    printf("bias_gelu float32 vs float64: forward max err %.2e, backward %.2e, dbias %.2e per row\n", ey, eg, eb);
    ck_assert_msg(ey < 1e-6 && eg < 1e-6 && eb < 1e-6, "forward %g backward %g dbias %g", ey, eg, eb);
    for (int k = 0; k < 2; k++) free(dx[k]), free(db[k]);
    free(x), free(pre), free(y), free(d), free(bias), free(rdb);
}
END_TEST

START_TEST(test_adamw_matches_reference) {
    size_t n = 40000 + 3;
    real *p = malloc(n * sizeof(real)), *g = malloc(n * sizeof(real)), *m = calloc(n, sizeof(real)),
         *v = calloc(n, sizeof(real));
    double *rp = malloc(n * sizeof(double)), *rm = calloc(n, sizeof(double)), *rv = calloc(n, sizeof(double));
    fill(p, n, 1, 3);
    for (size_t i = 0; i < n; i++) rp[i] = p[i];
    double lr = 1e-2, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1, err = 0;
    for (int step = 1; step <= 3; step++) {
        fill(g, n, 0.5, 10 + step);
        double bc1 = 1 - pow(b1, step), bc2 = 1 - pow(b2, step);
        g_ops->adamw(p, g, m, v, n, (real)lr, (real)b1, (real)b2, (real)eps, (real)wd, (real)bc1, (real)bc2);
        for (size_t i = 0; i < n; i++) {
            rm[i] = b1 * rm[i] + (1 - b1) * g[i];
            rv[i] = b2 * rv[i] + (1 - b2) * (double)g[i] * g[i];
            rp[i] -= lr * (rm[i] / bc1 / (sqrt(rv[i] / bc2) + eps) + wd * rp[i]);
        }
    }
    for (size_t i = 0; i < n; i++) err = fmax(err, fabs(p[i] - rp[i]) / fmax(1, fabs(rp[i])));
    printf("adamw float32 vs float64, 3 steps: max err %.2e relative to max(1, |p|) (lr %g)\n", err, lr);
    ck_assert_msg(err < 3e-7, "adamw err %g", err);
    free(p), free(g), free(m), free(v), free(rp), free(rm), free(rv);
}
END_TEST

START_TEST(test_layernorm_backward_matches_reference) {
    int R = 301, C = 37; /* blocks of rows, the last one short; rows of whole lanes and a tail */
    size_t n = (size_t)R * C;
    real *x = malloc(n * sizeof(real)), *dout = malloc(n * sizeof(real)), *out = malloc(n * sizeof(real));
    real *w = malloc(C * sizeof(real)), *b = malloc(C * sizeof(real)), *mean = malloc(R * sizeof(real)),
         *rstd = malloc(R * sizeof(real));
    real *dx[2], *dw[2], *db[2];
    fill(x, n, 2, 5);
    fill(dout, n, 1, 6);
    fill(w, C, 1, 7);
    fill(b, C, 1, 8);
    g_ops->layernorm_forward(out, mean, rstd, x, w, b, R, C);
    int threads = omp_get_max_threads();
    for (int k = 0; k < 2; k++) {
        dx[k] = calloc(n, sizeof(real)), dw[k] = calloc(C, sizeof(real)), db[k] = calloc(C, sizeof(real));
        omp_set_num_threads(k ? 2 : 1);
        g_ops->layernorm_backward(dx[k], dw[k], db[k], dout, x, w, mean, rstd, R, C);
    }
    omp_set_num_threads(threads);
    ck_assert(!memcmp(dx[0], dx[1], n * sizeof(real)) && !memcmp(dw[0], dw[1], C * sizeof(real)) &&
              !memcmp(db[0], db[1], C * sizeof(real)));
    double *rdw = calloc(C, sizeof(double)), *rdb = calloc(C, sizeof(double)), edx = 0, ew = 0, eout = 0;
    for (int r = 0; r < R; r++) {
        const real *xr = x + (size_t)r * C, *dr = dout + (size_t)r * C;
        double m = 0, var = 0, a = 0, bs = 0;
        for (int c = 0; c < C; c++) m += xr[c];
        m /= C;
        for (int c = 0; c < C; c++) var += (xr[c] - m) * (xr[c] - m);
        double s = 1 / sqrt(var / C + 1e-5);
        for (int c = 0; c < C; c++) {
            double nn = (xr[c] - m) * s, dn = (double)dr[c] * w[c];
            a += dn / C, bs += dn * nn / C;
            rdw[c] += dr[c] * nn, rdb[c] += dr[c];
        }
        for (int c = 0; c < C; c++) {
            double nn = (xr[c] - m) * s, dn = (double)dr[c] * w[c];
            edx = fmax(edx, fabs(dx[0][(size_t)r * C + c] - s * (dn - a - nn * bs)));
            double ref = nn * w[c] + b[c];
            eout = fmax(eout, fabs(out[(size_t)r * C + c] - ref) / fmax(1, fabs(ref)));
        }
        eout = fmax(eout, fmax(fabs(mean[r] - m) / fmax(1, fabs(m)), fabs(rstd[r] - s) / s));
    }
    for (int c = 0; c < C; c++) ew = fmax(ew, fmax(fabs(dw[0][c] - rdw[c]), fabs(db[0][c] - rdb[c])) / R);
    printf("layernorm float32 vs float64: forward (out, mean, rstd) max err %.2e relative to max(1, |ref|); backward dx max abs err %.2e, "
           "dw/db %.2e per row\n", eout, edx, ew);
    ck_assert_msg(eout < 1e-5 && edx < 1e-4 && ew < 1e-5, "out %g dx %g dw %g", eout, edx, ew);
    for (int k = 0; k < 2; k++) free(dx[k]), free(dw[k]), free(db[k]);
    free(x), free(dout), free(out), free(w), free(b), free(mean), free(rstd), free(rdw), free(rdb);
}
END_TEST

START_TEST(test_optim_runs_equal_per_tensor) {
    Config c = tu_tiny_config("gma");
    c.model.d_model = 16, c.model.d_ff = 32, c.model.vocab_size = 16; /* sizes that leave no alignment gaps */
    tu_apply_sets(&c, "gma.memory=ema;train.weight_decay=0.1;train.grad_clip=0.5");
    Model m;
    ck_assert_int_eq(model_build(&m, &c), 0);
    model_alloc(&m, 1, 8);
    model_init_params(&m, 3);
    size_t P = m.pt.total;
    fill(m.grads, P, 1, 9);
    real *p0 = malloc(P * sizeof(real)), *g0 = malloc(P * sizeof(real)), *mm = calloc(P, sizeof(real)),
         *vv = calloc(P, sizeof(real));
    memcpy(p0, m.params, P * sizeof(real));
    memcpy(g0, m.grads, P * sizeof(real));
    double ref = 0;
    for (int i = 0; i < m.pt.n; i++)
        if (m.pt.t[i].group != GROUP_BUFFER)
            for (size_t k = 0; k < m.pt.t[i].numel; k++) ref += (double)g0[m.pt.t[i].offset + k] * g0[m.pt.t[i].offset + k];
    double gn = optim_grad_norm(&m);
    ck_assert_msg(fabs(gn - sqrt(ref)) < 1e-6 * sqrt(ref), "grad norm %g, reference %g", gn, sqrt(ref));
    const OptimCfg *t = optim_cfg(&m.cfg);
    double lr = 1e-2, clip = optim_step(&m, t, 1, lr, gn);
    ck_assert(clip < 1);
    double beta1 = cfg_num(&m.cfg, "train.beta1"), beta2 = cfg_num(&m.cfg, "train.beta2");
    real bc1 = (real)(1 - beta1), bc2 = (real)(1 - beta2);
    double err = 0;
    int buffers = 0;
    for (int i = 0; i < m.pt.n; i++) {
        const ParamInfo *q = &m.pt.t[i];
        real *pp = p0 + q->offset, *gg = g0 + q->offset;
        if (q->group == GROUP_BUFFER) {
            buffers++;
            ck_assert(!memcmp(pp, m.params + q->offset, q->numel * sizeof(real)));
            continue;
        }
        g_ops->scale(gg, (real)clip, q->numel);
        g_ops->adamw(pp, gg, mm + q->offset, vv + q->offset, q->numel, (real)lr, (real)beta1, (real)beta2,
                     (real)cfg_num(&m.cfg, "train.adam_eps"), (real)optim_decay_for(t, q->group), bc1, bc2);
        for (size_t k = 0; k < q->numel; k++)
            err = fmax(err, fabs(pp[k] - m.params[q->offset + k]) / fmax(1, fabs(pp[k])));
    }
    printf("optimiser runs vs one call per tensor (%d tensors, %d buffers): max err %.2e\n", m.pt.n, buffers, err);
    ck_assert_int_gt(buffers, 0);
    ck_assert_msg(err < 1e-6, "optimiser runs differ from per-tensor calls: %g", err);
    free(p0), free(g0), free(mm), free(vv);
    model_free(&m);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("dense_f32");
    TCase *tc = tcase_create("dense_f32");
    tcase_add_test(tc, test_vexp_matches_libm);
    tcase_add_test(tc, test_xent_matches_reference);
    tcase_add_test(tc, test_gelu_matches_reference);
    tcase_add_test(tc, test_bias_gelu_matches_reference);
    tcase_add_test(tc, test_adamw_matches_reference);
    tcase_add_test(tc, test_layernorm_backward_matches_reference);
    tcase_add_test(tc, test_optim_runs_equal_per_tensor);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
