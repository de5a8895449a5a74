/* test64_stem.c: the convolutional stem's ops and layer (float64 build; docs/model.md §2.1):
 * im2col3x3 against the definition of a dilated 3 x 3 convolution with zero padding (and
 * with the taps mirrored), the mirrored taps as the convolution's exact transpose, the
 * per-channel normalisation's
 * forward against the definition and its backward against central finite differences
 * (batch- and instance-shaped groups), and the batch norm's running statistics: one update
 * is 0.9 / 0.1 of the batch's mean and unbiased variance, evaluation uses them, and
 * instance norm evaluates as it trains; the stem's gradients on a batch of nine images
 * (the weight gradient's partial sums). The whole classifier with a stem is checked
 * element by element in test64_cls.c. */
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "model/model_cls.h"
#include "ops/ops.h"
#include "testutil.h"

/* x [S, H, W, C] at (s, i, j, c), 0 outside */
static real px(const real *x, int s, int i, int j, int c, int H, int W, int C) {
    return i < 0 || i >= H || j < 0 || j >= W ? 0 : x[(((size_t)s * H + i) * W + j) * C + c];
}

static void im2col_case(int S, int H, int W, int C, int dil) {
    Rng rng;
    rng_seed(&rng, 40 + dil);
    size_t nx = (size_t)S * H * W * C, ncol = nx * 9;
    real *x = gc_random(nx, &rng, 1), *col = xcalloc(ncol, sizeof(real)), *g = gc_random(nx, &rng, 1);
    real *Wt = gc_random((size_t)9 * C * C, &rng, 1), *Wr = xcalloc((size_t)9 * C * C, sizeof(real));
    real *y = xcalloc(nx, sizeof(real)), *dx = xcalloc(nx, sizeof(real));
    for (int sgn = 1; sgn >= -1; sgn -= 2) {
        int d = sgn * dil;
        g_ops->im2col3x3(col, x, S, H, W, C, d);
        for (int s = 0; s < S; s++)
            for (int i = 0; i < H; i++)
                for (int j = 0; j < W; j++)
                    for (int k = 0; k < 9; k++)
                        for (int c = 0; c < C; c++) {
                            real want = px(x, s, i + (k / 3 - 1) * d, j + (k % 3 - 1) * d, c, H, W, C);
                            ck_assert(col[((((size_t)s * H + i) * W + j) * 9 + k) * C + c] == want);
                        }
    }
    /* the stem's input gradient is the convolution's transpose: with y = im2col(x, dil) W^T
     * and dx = im2col(g, -dil) Wr, Wr [(k, co), ci] = W[co, (k, ci)] (split_heads),
     * <y, g> = <x, dx> */
    g_ops->im2col3x3(col, x, S, H, W, C, dil);
    g_ops->matmul(y, col, Wt, S * H * W, C, 9 * C, 0, 1, 1, 0);
    g_ops->split_heads(Wr, Wt, 1, C, 9, C);
    g_ops->im2col3x3(col, g, S, H, W, C, -dil);
    g_ops->matmul(dx, col, Wr, S * H * W, C, 9 * C, 0, 0, 1, 0);
    double lhs = gc_dot(y, g, nx), rhs = gc_dot(x, dx, nx);
    ck_assert_msg(fabs(lhs - rhs) < 1e-10 * (1 + fabs(rhs)), "mirrored taps are not the transpose: %g vs %g", lhs, rhs);
    free(x), free(col), free(g), free(Wt), free(Wr), free(y), free(dx);
}
START_TEST(test_im2col) {
    im2col_case(2, 3, 4, 2, 1);
    im2col_case(2, 5, 3, 3, 2);
    im2col_case(1, 4, 4, 1, 4); /* every off-centre tap outside */
    im2col_case(3, 1, 1, 2, 1);
}
END_TEST

typedef struct {
    int S, N, C;
    real *x, *w, *b, *out, *mean, *rstd, *r;
} ChCtx;
static double ch_loss(void *p) {
    ChCtx *c = p;
    g_ops->chnorm_forward(c->out, c->mean, c->rstd, c->x, c->w, c->b, c->S, c->N, c->C, 1);
    return gc_dot(c->out, c->r, (size_t)c->S * c->N * c->C);
}
static void chnorm_case(int S, int N, int C, const char *name) {
    Rng rng;
    rng_seed(&rng, 50 + S);
    size_t n = (size_t)S * N * C;
    ChCtx c = {.S = S, .N = N, .C = C};
    c.x = gc_random(n, &rng, 2);
    for (size_t i = 0; i < n; i++) c.x[i] += (real)(i % C); /* channel offsets */
    c.w = gc_random(C, &rng, 1);
    c.b = gc_random(C, &rng, 1);
    c.r = gc_random(n, &rng, 1);
    if (N > 64) /* a few weighted outputs: the loss's rounding noise stays below the check's */
        for (size_t i = 0; i < n; i++) c.r[i] *= i % 37 == 0;
    c.out = xcalloc(n, sizeof(real));
    c.mean = xcalloc((size_t)S * C, sizeof(real));
    c.rstd = xcalloc((size_t)S * C, sizeof(real));
    ch_loss(&c);
    /* the definition: statistics of group s and channel ch over its N rows */
    for (int s = 0; s < S; s++)
        for (int ch = 0; ch < C; ch++) {
            double m = 0, v = 0;
            for (int i = 0; i < N; i++) m += c.x[((size_t)s * N + i) * C + ch];
            m /= N;
            for (int i = 0; i < N; i++) v += pow(c.x[((size_t)s * N + i) * C + ch] - m, 2);
            v /= N;
            for (int i = 0; i < N; i++) {
                size_t e = ((size_t)s * N + i) * C + ch;
                ck_assert(fabs(c.out[e] - ((c.x[e] - m) / sqrt(v + 1e-5) * c.w[ch] + c.b[ch])) < 1e-12);
            }
        }
    real *dx = xcalloc(n, sizeof(real)), *dw = xcalloc(C, sizeof(real)), *db = xcalloc(C, sizeof(real));
    g_ops->chnorm_backward(dx, dw, db, c.r, c.x, c.w, c.mean, c.rstd, S, N, C);
    gc_assert_grad(name, "dx", ch_loss, &c, c.x, dx, n);
    gc_assert_grad(name, "dw", ch_loss, &c, c.w, dw, C);
    gc_assert_grad(name, "db", ch_loss, &c, c.b, db, C);
    /* given statistics (stats 0) reuse mean and rstd */
    ch_loss(&c);
    real *out2 = xcalloc(n, sizeof(real));
    g_ops->chnorm_forward(out2, c.mean, c.rstd, c.x, c.w, c.b, S, N, C, 0);
    for (size_t i = 0; i < n; i++) ck_assert(out2[i] == c.out[i]);
    free(c.x), free(c.w), free(c.b), free(c.r), free(c.out), free(c.mean), free(c.rstd), free(dx), free(dw), free(db),
        free(out2);
}
START_TEST(test_chnorm) {
    chnorm_case(1, 7, 3, "chnorm one group (batch norm)");
    chnorm_case(3, 5, 2, "chnorm three groups (instance norm)");
    chnorm_case(2, 600, 2, "chnorm 600 rows (several row blocks)");
}
END_TEST

/* a one-layer stem classifier over 2 x 3 images, for up to Bmax examples */
static void stem_model_b(Model *m, const char *norm, int Bmax) {
    Config c = tu_tiny_config("gma");
    char sets[256];
    snprintf(sets, sizeof sets,
             "model.task=classify;data.source=cls;data.path=unused;model.vocab_size=9;model.n_classes=3;model.n_seq=1;"
             "model.stem=conv;model.stem_dilations=1;model.stem_width=3;model.stem_norm=%s", norm);
    tu_apply_sets(&c, sets);
    ck_assert_msg(model_build(m, &c) == 0, "%s", gma_error());
    model_alloc(m, Bmax, 6);
    model_init_params(m, 3);
}
static void stem_model(Model *m, const char *norm) { stem_model_b(m, norm, 2); }
static const int32_t TOK[12] = {1, 2, 3, 4, 5, 6, 8, 7, 6, 5, 4, 3};
static const int32_t LAB[2] = {0, 2};

START_TEST(test_running_stats) {
    Model m;
    stem_model(&m, "batch");
    LossStats tr, ev, ev2;
    ck_assert_int_eq(model_forward(&m, TOK, LAB, 2, 6, NULL, 0, &ev, 0, 0), 0);
    ck_assert_int_eq(model_forward(&m, TOK, LAB, 2, 6, NULL, 0, &tr, 1, 0), 0);
    ck_assert_msg(fabs(tr.loss_sum - ev.loss_sum) > 1e-9, "batch statistics and the initial running ones agree");
    /* the batch's statistics of the convolution's output, channel by channel */
    int D = m.D, R = 12;
    const real *y = m.cls->stem.y[0];
    model_update_buffers(&m);
    const real *rm = m.params + m.pt.t[m.cls->stem.rmean[0]].offset, *rv = m.params + m.pt.t[m.cls->stem.rvar[0]].offset;
    for (int c = 0; c < D; c++) {
        double mu = 0, v = 0;
        for (int r = 0; r < R; r++) mu += y[r * D + c];
        mu /= R;
        for (int r = 0; r < R; r++) v += pow(y[r * D + c] - mu, 2);
        v /= R - 1;
        ck_assert_msg(fabs(rm[c] - 0.1 * mu) < 1e-9, "running mean %g, want %g", rm[c], 0.1 * mu);
        ck_assert_msg(fabs(rv[c] - (0.9 + 0.1 * v)) < 1e-9, "running var %g, want %g", rv[c], 0.9 + 0.1 * v);
    }
    ck_assert(model_rank_averaged(&m, m.cls->stem.rmean[0]) && model_rank_averaged(&m, m.cls->stem.rvar[0]));
    ck_assert(!model_rank_averaged(&m, m.cls->stem.convw[0]));
    /* evaluation reads the running statistics: a second update moves them, and the loss with them */
    ck_assert_int_eq(model_forward(&m, TOK, LAB, 2, 6, NULL, 0, &ev2, 0, 0), 0);
    ck_assert_msg(fabs(ev2.loss_sum - ev.loss_sum) > 1e-9, "evaluation ignored the running statistics");
    /* an evaluation forward changes no buffer */
    real before = rm[0];
    model_update_buffers(&m);
    ck_assert(rm[0] == before);
    model_free(&m);
    /* instance norm: the same in training and evaluation, and no buffers */
    stem_model(&m, "instance");
    ck_assert_int_eq(model_forward(&m, TOK, LAB, 2, 6, NULL, 0, &tr, 1, 0), 0);
    ck_assert_int_eq(model_forward(&m, TOK, LAB, 2, 6, NULL, 0, &ev, 0, 0), 0);
    ck_assert(tr.loss_sum == ev.loss_sum);
    ck_assert_int_lt(pt_find(&m.pt, "stem.0.norm.running_mean"), 0);
    ck_assert_int_ge(pt_find(&m.pt, "stem.0.norm.weight"), 0);
    /* a sequence that is not whole rows of the image is refused, naming the setting */
    ck_assert_int_ne(model_forward(&m, TOK, LAB, 2, 5, NULL, 0, &tr, 1, 0), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "model.stem_width"));
    model_free(&m);
}
END_TEST

/* nine images: the convolutions over runs of whole images (4, 4 and 1 left over, as the
 * CPU cuts a batch whose im2col exceeds its cache budget) give the gradients of one run of
 * all nine, and finite differences agree on every tensor of the stem */
typedef struct {
    Model m;
    int32_t tok[9 * 6], lab[9];
} NineCtx;
static double nine_loss(void *p) {
    NineCtx *c = p;
    LossStats st;
    ck_assert(model_forward(&c->m, c->tok, c->lab, 9, 6, NULL, 0, &st, 1, 0) == 0);
    return st.loss_sum / st.count;
}
START_TEST(test_nine_images) {
    NineCtx c;
    stem_model_b(&c.m, "batch", 9);
    for (int i = 0; i < 9 * 6; i++) c.tok[i] = 1 + (i * 7 + i / 5) % 8;
    for (int b = 0; b < 9; b++) c.lab[b] = b % 3;
    ck_assert_int_eq(c.m.cls->stem.run, 9); /* a tiny batch fits in one run */
    size_t np = c.m.pt.total;
    real *whole = xcalloc(np, sizeof(real));
    double loss_whole = nine_loss(&c);
    model_zero_grad(&c.m);
    model_backward(&c.m, 1.0);
    memcpy(whole, c.m.grads, np * sizeof(real));
    c.m.cls->stem.run = 4; /* the buffers hold 9; runs of fewer images fit in them */
    ck_assert(fabs(nine_loss(&c) - loss_whole) < 1e-12);
    model_zero_grad(&c.m);
    model_backward(&c.m, 1.0);
    for (size_t i = 0; i < np; i++)
        ck_assert_msg(fabs(c.m.grads[i] - whole[i]) <= 1e-12 * (1 + fabs(whole[i])), "gradient %zu: runs of 4 %g, one run %g",
                      i, c.m.grads[i], whole[i]);
    for (int i = 0; i < c.m.pt.n; i++) {
        const ParamInfo *t = &c.m.pt.t[i];
        if (strncmp(t->name, "stem.", 5) || t->group == GROUP_BUFFER) continue;
        real *g = xcalloc(t->numel, sizeof(real));
        memcpy(g, c.m.grads + t->offset, t->numel * sizeof(real));
        gc_assert_grad("stem of nine images", t->name, nine_loss, &c, c.m.params + t->offset, g, t->numel);
        free(g);
    }
    free(whole);
    model_free(&c.m);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("convolutional stem (float64)");
    TCase *tc = tcase_create("stem");
    tcase_add_test(tc, test_im2col);
    tcase_add_test(tc, test_chnorm);
    tcase_add_test(tc, test_running_stats);
    tcase_add_test(tc, test_nine_images);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
