/* test64_gmavar.c: the GMA variants (docs/model.md §3.10) in the float64 build. gma.write
 * "delta": central-difference gradient checks of every parameter and the input (Gaussian and
 * softmax routing, shared components, key padding, the short convolutions, the diversity
 * loss and the Dirichlet prior, one chunk and several); a 2-layer model's gradients and
 * causality; the parameters the write registers (and that the add write registers none);
 * the layer against a naive float64 loop of its definition; and the config checks that
 * refuse the combinations it is not built for, naming the key. */
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "ops/ops.h"
#include "testutil.h"

static Config delta_config(const char *extra) {
    Config c = tu_tiny_config("gma"); /* D 8, H 2: d 4; Kc 3; chunk 3 (N 7: three chunks, the last partial) */
    ck_assert(cfg_set(&c, "gma.write=delta") == 0);
    if (extra) tu_apply_sets(&c, extra);
    ck_assert_msg(cfg_validate(&c) == 0, "%s", gma_error());
    return c;
}

static double sigm(double x) { return 1 / (1 + exp(-x)); }

static void layer_case(const char *extra, int padded) {
    Config cfg = delta_config(extra);
    gc_mixer_case(&cfg, "gma", 1, padded);
}
START_TEST(test_delta_gaussian) {
    layer_case(NULL, 0);
    layer_case(NULL, 1);
    layer_case("gma.chunk=64", 0); /* one chunk */
    layer_case("gma.chunk=1", 1);
}
END_TEST
START_TEST(test_delta_softmax) {
    layer_case("gma.routing=softmax", 0);
    layer_case("gma.routing=softmax;gma.temperature=0.5;gma.n_components=5", 1);
}
END_TEST
START_TEST(test_slot_decay) {
    layer_case("gma.slot_decay=true", 0);
    layer_case("gma.slot_decay=true;gma.routing=softmax;model.short_conv=2", 1);
    layer_case("gma.slot_decay=true;gma.shared_components=true;gma.chunk=2", 0);
}
END_TEST
START_TEST(test_delta_options) {
    layer_case("gma.shared_components=true", 1);
    layer_case("model.short_conv=4", 1);
    layer_case("gma.div_weight=0.3", 1);
    layer_case("gma.dirichlet_weight=0.2", 0);
}
END_TEST

/* ---------------- the layer against its definition ---------------- */
/* softmax routing with tau 1: gamma = softmax(x W_h^T + b_h) */
static void route(double *g, const real *x, const real *W, const real *bias, int Kc, int d) {
    double mx = -1e300, s = 0;
    for (int c = 0; c < Kc; c++) {
        double l = bias[c];
        for (int e = 0; e < d; e++) l += (double)W[c * d + e] * x[e];
        g[c] = l;
        mx = fmax(mx, l);
    }
    for (int c = 0; c < Kc; c++) s += g[c] = exp(g[c] - mx);
    for (int c = 0; c < Kc; c++) g[c] /= s;
}

/* one layer without biases on q, k, v, o (model.attn_bias false): y from h by docs/model.md
 * §3.10 written out, S_t = S_{t-1} + r_t (b_t (v_t - S_{t-1}^T r_t))^T, o_t = S_t^T gq_t */
static void naive_case(int slot_decay) {
    Config cfg = delta_config(slot_decay ? "gma.routing=softmax;model.attn_bias=false;gma.n_components=4;gma.slot_decay=true"
                                         : "gma.routing=softmax;model.attn_bias=false;gma.n_components=4");
    GcMix c;
    int B = 2, N = 7;
    gc_mix_setup(&c, &cfg, "gma", B, N, 1, NULL, 5);
    gc_mix_loss(&c);
    int D = 8, H = 2, d = 4, Kc = 4;
#define T(nm) (c.params + c.pt.t[pt_find(&c.pt, "blocks.0.mixer." nm)].offset)
    const real *Wq = T("q.weight"), *Wk = T("k.weight"), *Wv = T("v.weight"), *Wo = T("o.weight");
    const real *Rw = T("gma.router.weight"), *Rb = T("gma.router.bias"), *Bw = T("gma.b_proj.weight"),
               *Bb = T("gma.b_proj.bias");
    real *th = slot_decay ? T("gma.slot_decay") : NULL;
#undef T
    if (th) /* the slots' decays apart from each other and from 1 */
        for (int i = 0; i < H * Kc; i++) th[i] = (real)(0.5 * i - 1);
    if (th) gc_mix_loss(&c);
    double err = 0, ymax = 0;
    for (int b = 0; b < B; b++) {
        double S[2][4][4] = {{{0}}}, o[7][8];
        for (int t = 0; t < N; t++) {
            const real *x = c.h + ((size_t)b * N + t) * D;
            double q[8], k[8], v[8];
            for (int j = 0; j < D; j++) {
                q[j] = k[j] = v[j] = 0;
                for (int e = 0; e < D; e++)
                    q[j] += (double)Wq[j * D + e] * x[e], k[j] += (double)Wk[j * D + e] * x[e],
                        v[j] += (double)Wv[j * D + e] * x[e];
            }
            for (int h = 0; h < H; h++) {
                real qh[4], kh[4];
                for (int e = 0; e < d; e++) qh[e] = (real)q[h * d + e], kh[e] = (real)k[h * d + e];
                double gq[4], gk[4], pre = Bb[h], pred[4] = {0};
                route(gq, qh, Rw + h * Kc * d, Rb + h * Kc, Kc, d);
                route(gk, kh, Rw + h * Kc * d, Rb + h * Kc, Kc, d);
                for (int e = 0; e < D; e++) pre += (double)Bw[h * D + e] * x[e];
                double beta = sigm(pre);
                if (th) /* S <- diag(a) S, a_c = sigmoid(theta_hc) */
                    for (int cc = 0; cc < Kc; cc++)
                        for (int j = 0; j < d; j++) S[h][cc][j] *= sigm(th[h * Kc + cc]);
                for (int j = 0; j < d; j++)
                    for (int cc = 0; cc < Kc; cc++) pred[j] += S[h][cc][j] * gk[cc];
                for (int cc = 0; cc < Kc; cc++)
                    for (int j = 0; j < d; j++) S[h][cc][j] += gk[cc] * beta * (v[h * d + j] - pred[j]);
                for (int j = 0; j < d; j++) {
                    o[t][h * d + j] = 0;
                    for (int cc = 0; cc < Kc; cc++) o[t][h * d + j] += S[h][cc][j] * gq[cc];
                }
            }
            for (int j = 0; j < D; j++) {
                double y = 0;
                for (int e = 0; e < D; e++) y += (double)Wo[j * D + e] * o[t][e];
                err = fmax(err, fabs(y - c.y[((size_t)b * N + t) * D + j]));
                ymax = fmax(ymax, fabs(y));
            }
        }
    }
    ck_assert(ymax > 1e-2);
    ck_assert_msg(err < 1e-12 * ymax, "layer (slot decay %d) against the naive loop: %.3e of %.3e", slot_decay, err, ymax);
    gc_mix_free(&c);
}
START_TEST(test_delta_naive) {
    naive_case(0);
    naive_case(1);
}
END_TEST

/* ---------------- inside a model ---------------- */
START_TEST(test_delta_model) {
    Config cfg = delta_config("model.mixer=sdpa,gma");
    GcModel c;
    gc_model_setup(&c, &cfg);
    gc_model_check(&c, "sdpa,gma delta", "2-layer model sdpa,gma with gma.write delta");
    cfg = delta_config("model.short_conv=3");
    gc_causal_case(&cfg, "gma", 0);
}
END_TEST

/* ---------------- parameters, config ---------------- */
START_TEST(test_delta_params) {
    for (int delta = 0; delta < 2; delta++) {
        Config cfg = tu_tiny_config("gma");
        if (delta) ck_assert(cfg_set(&cfg, "gma.write=delta") == 0);
        if (delta) ck_assert(cfg_set(&cfg, "gma.slot_decay=true") == 0);
        GcMix c;
        gc_mix_setup(&c, &cfg, "gma", 1, 4, 1, NULL, 3);
        int w = pt_find(&c.pt, "blocks.0.mixer.gma.b_proj.weight"), bb = pt_find(&c.pt, "blocks.0.mixer.gma.b_proj.bias");
        ck_assert_int_eq(w >= 0, delta);
        ck_assert_int_eq(bb >= 0, delta);
        if (delta) {
            ck_assert_int_eq(c.pt.t[w].shape[0], 2); /* [H, d_model] */
            ck_assert_int_eq(c.pt.t[w].shape[1], 8);
            ck_assert_int_eq(c.pt.t[bb].numel, 2);
            for (int h = 0; h < 2; h++) ck_assert(c.params[c.pt.t[bb].offset + h] == 0); /* b = 1/2 at the start */
            int sd = pt_find(&c.pt, "blocks.0.mixer.gma.slot_decay");
            ck_assert_int_ge(sd, 0);
            ck_assert_int_eq(c.pt.t[sd].shape[0], 2); /* [H, Kc] */
            ck_assert_int_eq(c.pt.t[sd].shape[1], 3);
            for (int i = 0; i < 6; i++) ck_assert(c.params[c.pt.t[sd].offset + i] == 5); /* a = sigmoid(5) */
        } else {
            ck_assert_int_lt(pt_find(&c.pt, "blocks.0.mixer.gma.slot_decay"), 0);
        }
        gc_mix_free(&c);
    }
}
END_TEST

START_TEST(test_delta_config_errors) {
    static const char *bad[][3] = {
        {"gma.memory=ema", "gma.write", "gma.memory"},
        {"model.causal=0", "gma.write", "bidirectional"},
        {"gma.adapt_every=10", "gma.adapt_every", "delta"},
        {"model.mixer=gated", "gma.write", "gated"},
        {"model.mixer=sdpa,auto", "gma.write", "auto"},
        {"cross.mixer=gma;cross.ctx_len=2;model.mixer=gma", "gma.write", "cross"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Config c = tu_tiny_config("gma");
        ck_assert(cfg_set(&c, "gma.write=delta") == 0);
        char buf[128];
        snprintf(buf, sizeof buf, "%s", bad[i][0]);
        char *sv = NULL;
        for (char *t = strtok_r(buf, ";", &sv); t; t = strtok_r(NULL, ";", &sv))
            ck_assert_msg(cfg_set(&c, t) == 0, "%s", gma_error());
        ck_assert_msg(cfg_validate(&c) != 0, "%s accepted", bad[i][0]);
        ck_assert_msg(strstr(gma_error(), bad[i][1]) && strstr(gma_error(), bad[i][2]), "%s: %s", bad[i][0],
                      gma_error());
        ck_assert(!strchr(gma_error(), '\n'));
    }
    Config c = tu_tiny_config("gma"); /* the add write has no per-slot decay */
    ck_assert(cfg_set(&c, "gma.slot_decay=true") == 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "gma.slot_decay") && strstr(gma_error(), "delta"), "%s", gma_error());
    c = tu_tiny_config("gma");
    ck_assert(cfg_set(&c, "gma.write=overwrite") != 0);
    ck_assert_msg(strstr(gma_error(), "gma.write"), "%s", gma_error());
    c = tu_tiny_config("gma"); /* the CUDA kernels' widths */
    ck_assert(cfg_set(&c, "gma.write=delta") == 0);
    ck_assert(cfg_set(&c, "gma.n_components=2000") == 0);
    ck_assert_int_eq(cfg_validate(&c), 0); /* on the cpu */
    c.device = OPS_CUDA;
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "gma.n_components") && strstr(gma_error(), "2000"), "%s", gma_error());
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("gmavar64");
    TCase *tc = tcase_create("delta");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_delta_gaussian);
    tcase_add_test(tc, test_delta_softmax);
    tcase_add_test(tc, test_delta_options);
    tcase_add_test(tc, test_slot_decay);
    tcase_add_test(tc, test_delta_naive);
    tcase_add_test(tc, test_delta_model);
    tcase_add_test(tc, test_delta_params);
    tcase_add_test(tc, test_delta_config_errors);
    suite_add_tcase(s, tc);
    return s;
}
GMA_TEST_MAIN()
