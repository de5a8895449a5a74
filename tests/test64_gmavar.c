/* test64_gmavar.c: the GMA variants (docs/model.md §3.10, §3.12) in the float64 build. gma.write
 * "delta": central-difference gradient checks of every parameter and the input (Gaussian and
 * softmax routing, shared components, key padding, the short convolutions, the diversity
 * loss and the Dirichlet prior, one chunk and several); a 2-layer model's gradients and
 * causality; the parameters the write registers (and that the add write registers none);
 * the layer against a naive float64 loop of its definition; and the config checks that
 * refuse the combinations it is not built for, naming the key. gma.topk (§3.12): the
 * layer's gradients with the cut and a fixed noise (each routing, both writes, the EMA
 * memory, padding, bidirectional), the op against its definition and the Gumbel-max law, a
 * model's gradients, the noise per seed and step and none at evaluation, the refusals. */
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

/* each row {sets, key, word} of bad: the tiny gma config with base and then the row's sets
 * (";"-separated) is refused by cfg_validate in one line naming key and word */
static void assert_refusals(const char *base, const char *const (*bad)[3], size_t n) {
    for (size_t i = 0; i < n; i++) {
        Config c = tu_tiny_config("gma");
        char buf[200];
        snprintf(buf, sizeof buf, "%s%s", base, bad[i][0]);
        char *sv = NULL;
        for (char *t = strtok_r(buf, ";", &sv); t; t = strtok_r(NULL, ";", &sv))
            ck_assert_msg(cfg_set(&c, t) == 0, "%s", gma_error());
        ck_assert_msg(cfg_validate(&c) != 0, "%s accepted", bad[i][0]);
        ck_assert_msg(strstr(gma_error(), bad[i][1]) && strstr(gma_error(), bad[i][2]), "%s: %s", bad[i][0],
                      gma_error());
        ck_assert(!strchr(gma_error(), '\n'));
    }
}

START_TEST(test_delta_config_errors) {
    static const char *bad[][3] = {
        {"gma.memory=ema", "gma.write", "gma.memory"},
        {"model.causal=0", "gma.write", "bidirectional"},
        {"gma.adapt_every=10", "gma.adapt_every", "delta"},
        {"model.mixer=gated", "gma.write", "gated"},
        {"model.mixer=sdpa,auto", "gma.write", "auto"},
        {"cross.mixer=gma;cross.ctx_len=2;model.mixer=gma", "gma.write", "cross"},
    };
    assert_refusals("gma.write=delta;", bad, sizeof bad / sizeof bad[0]);
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

/* ================= gma.topk (docs/model.md §3.12) ================= */
static Config topk_config(const char *extra) {
    Config c = tu_tiny_config("gma"); /* D 8, H 2: d 4; chunk 3 */
    tu_apply_sets(&c, "gma.n_components=5;gma.topk=2");
    if (extra) tu_apply_sets(&c, extra);
    ck_assert_msg(cfg_validate(&c) == 0, "%s", gma_error());
    return c;
}

/* a fixed noise stream, as the model's for layer 0 at step 3 */
static const GmaDrop topk_stream = {.key = {7, 0}, .c2 = 3, .c3 = 6 /* layer 0, GMA_DROP_ROUTE */, .scale = 1,
                                    .seg_local = 2, .seg_global = 2};

/* the layer's gradients with the cut, with the noise of a training forward (fixed: the same
 * stream in every probe) or none; the accumulate contract */
static void topk_case(const char *extra, int causal, int padded, int noisy) {
    Config cfg = topk_config(extra);
    GcMix c;
    gc_mix_setup(&c, &cfg, "gma", 2, 7, causal, padded ? gc_pad_mask : NULL, 42 + causal + 2 * padded);
    if (noisy) c.ctx.noise = &topk_stream;
    char label[160];
    snprintf(label, sizeof label, "gma topk %s%s%s %s", causal ? "causal" : "bidir", padded ? " padded" : "",
             noisy ? " noisy" : "", extra ? extra : "");
    real *dh = gc_mix_check(&c, label);
    gc_mix_accumulates(&c, dh);
    free(dh);
    gc_mix_free(&c);
}
START_TEST(test_topk_add) {
    topk_case(NULL, 1, 0, 0);
    topk_case(NULL, 1, 1, 1);
    topk_case(NULL, 0, 1, 1);
    topk_case("gma.routing=softmax;gma.temperature=0.7", 1, 0, 1);
    topk_case("gma.routing=softmax;gma.topk=1", 0, 0, 1);
    topk_case("gma.topk_noise=0.5;gma.chunk=64", 1, 0, 1);
    topk_case("gma.div_weight=0.3", 1, 1, 1);
    topk_case("gma.memory=ema", 1, 1, 1);
}
END_TEST
/* the routing monitor reads the dense responsibilities (every entry > 0), the layer the cut */
static void topk_monitor_case(const char *extra) {
    Config cfg = topk_config(extra);
    GcMix c;
    gc_mix_setup(&c, &cfg, "gma", 2, 7, 1, NULL, 3);
    gc_mix_loss(&c);
    MixerComponents mc;
    c.m->vt->health->components(c.m, c.act, 2, 7, &mc);
    ck_assert(mc.gq != NULL);
    for (size_t i = 0; i < (size_t)2 * 2 * 7 * 5; i++) ck_assert_msg(mc.gq[i] > 0, "%s: entry %zu cut", extra, i);
    gc_mix_free(&c);
}
START_TEST(test_topk_monitor) {
    topk_monitor_case("gma.write=add");
    topk_monitor_case("gma.write=delta");
    topk_monitor_case("gma.memory=ema");
}
END_TEST
START_TEST(test_topk_delta) {
    topk_case("gma.write=delta", 1, 0, 0);
    topk_case("gma.write=delta", 1, 1, 1);
    topk_case("gma.write=delta;gma.routing=softmax;gma.slot_decay=true;model.short_conv=2", 1, 0, 1);
}
END_TEST

/* the op against its definition: each row's k largest of gamma m (m = 1 without noise, else
 * the stream's multipliers), renormalised; with k = 1 the Gumbel-max trick picks component c
 * with probability gamma_c (the noise's law and sign) */
START_TEST(test_topk_op) {
    int B = 2, H = 3, N = 4, Kc = 6;
    size_t rows = (size_t)B * H * N, n = rows * Kc;
    Rng rng;
    rng_seed(&rng, 5);
    real *g = xcalloc(n, sizeof(real)), *out = xcalloc(n, sizeof(real));
    for (size_t r = 0; r < rows; r++) { /* softmax rows; row 0 all ties: the lower indices win */
        double s = 0;
        for (int c = 0; c < Kc; c++) s += g[r * Kc + c] = r == 0 ? 1 : exp(2 * rng_normal(&rng));
        for (int c = 0; c < Kc; c++) g[r * Kc + c] /= s;
    }
    GmaTopkNoise z = {.drop = topk_stream, .scale = 0.7, .which = 1, .b0 = 0, .h0 = 0, .H = H};
    for (int noisy = 0; noisy < 2; noisy++)
        for (int k = 1; k < Kc; k++) {
            g_ops->gma_topk_forward(out, g, B, H, N, Kc, k, noisy ? &z : NULL);
            for (size_t r = 0; r < rows; r++) {
                double w[6], m[6] = {1, 1, 1, 1, 1, 1}, sum = 0;
                int i = (int)(r % N), h = (int)(r / N % H), b = (int)(r / (N * H)), keep[6] = {0};
                if (noisy) gma_topk_mults(m, &z, b, h, N, i, Kc, 0, Kc);
                for (int c = 0; c < Kc; c++) w[c] = g[r * Kc + c] * m[c];
                for (int t = 0; t < k; t++) { /* the largest not yet kept, the lower index on ties */
                    int best = -1;
                    for (int c = 0; c < Kc; c++)
                        if (!keep[c] && (best < 0 || w[c] > w[best])) best = c;
                    keep[best] = 1, sum += w[best];
                }
                if (r == 0 && !noisy)
                    for (int c = 0; c < Kc; c++) ck_assert_int_eq(keep[c], c < k);
                for (int c = 0; c < Kc; c++) {
                    double want = keep[c] ? w[c] / sum : 0;
                    ck_assert_msg(fabs(out[r * Kc + c] - want) <= 1e-15, "row %zu k %d noise %d: %g, want %g", r, k,
                                  noisy, (double)out[r * Kc + c], want);
                }
            }
        }
    /* Gumbel-max: 40000 rows of gamma (0.5, 0.3, 0.15, 0.05), k = 1 */
    int R = 40000, K4 = 4, cnt[4] = {0};
    real *g4 = xcalloc((size_t)R * K4, sizeof(real)), *o4 = xcalloc((size_t)R * K4, sizeof(real));
    const double p[4] = {0.5, 0.3, 0.15, 0.05};
    for (int r = 0; r < R; r++)
        for (int c = 0; c < K4; c++) g4[(size_t)r * K4 + c] = p[c];
    GmaTopkNoise z1 = {.drop = topk_stream, .scale = 1, .which = 0, .H = 1};
    z1.drop.seg_local = z1.drop.seg_global = 1;
    g_ops->gma_topk_forward(o4, g4, 1, 1, R, K4, 1, &z1);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < K4; c++)
            if (o4[(size_t)r * K4 + c] != 0) cnt[c]++, ck_assert(fabs(o4[(size_t)r * K4 + c] - 1) < 1e-15);
    for (int c = 0; c < K4; c++) /* 5 standard deviations of a binomial share: at most 0.0125 */
        ck_assert_msg(fabs((double)cnt[c] / R - p[c]) < 0.0125, "component %d picked %.4f of the rows, gamma %.2f", c,
                      (double)cnt[c] / R, p[c]);
    free(g), free(out), free(g4), free(o4);
}
END_TEST

/* inside a model: the gradients of a 2-layer model in a training forward (the model's noise,
 * fixed within a step); the noise depends on the step and the seed and is the same when
 * drawn again; an evaluation forward has none (it equals a training forward with
 * gma.topk_noise 0); k cuts (the loss differs from dense routing's) */
static double topk_loss(const char *extra, int training, long step, int seed) {
    Config cfg = topk_config(extra);
    cfg.seed = seed;
    Model m;
    ck_assert_int_eq(model_build(&m, &cfg), 0);
    model_alloc(&m, 2, 7);
    model_init_params(&m, 7);
    int32_t tok[14], tgt[14];
    for (int i = 0; i < 14; i++) tok[i] = (i * 5 + 1) % 11, tgt[i] = (i * 3 + 2) % 11;
    LossStats st;
    ck_assert_int_eq(model_forward(&m, tok, tgt, 2, 7, NULL, 0, &st, training, step), 0);
    model_free(&m);
    return st.loss_sum / st.count;
}
START_TEST(test_topk_model) {
    Config cfg = topk_config("model.mixer=sdpa,gma");
    GcModel c;
    gc_model_setup(&c, &cfg);
    gc_model_check(&c, "sdpa,gma topk", "2-layer model sdpa,gma with gma.topk 2");
    cfg = topk_config("gma.write=delta");
    gc_model_setup(&c, &cfg);
    gc_model_check(&c, "gma topk delta", "1-layer model gma.write delta with gma.topk 2");
    double a = topk_loss(NULL, 1, 5, 1);
    ck_assert(a == topk_loss(NULL, 1, 5, 1));
    ck_assert(a != topk_loss(NULL, 1, 6, 1));
    ck_assert(a != topk_loss(NULL, 1, 5, 2));
    double e = topk_loss(NULL, 0, 5, 1);
    ck_assert(e != a);
    ck_assert(e == topk_loss("gma.topk_noise=0", 1, 5, 1));
    ck_assert(e == topk_loss("gma.topk_noise=0", 0, 9, 1));
    ck_assert(e != topk_loss("gma.topk=0", 0, 5, 1));
    cfg = topk_config("model.short_conv=3");
    gc_causal_case(&cfg, "gma", 0);
}
END_TEST

START_TEST(test_topk_config_errors) {
    static const char *bad[][3] = {
        {"gma.topk=5", "gma.topk", "components"},
        {"gma.n_components=8,4;model.mixer=gma,gma;gma.topk=4", "gma.topk", "layer 1"},
        {"model.mixer=gated", "gma.topk", "gated"},
        {"model.mixer=sdpa,auto", "gma.topk", "auto"},
        {"cross.mixer=gma;cross.ctx_len=2;model.mixer=gma", "gma.topk", "cross"},
        {"gma.adapt_every=10", "gma.topk", "adapt_every"},
    };
    assert_refusals("gma.n_components=5;gma.topk=2;", bad, sizeof bad / sizeof bad[0]);
    Config c = tu_tiny_config("gma");
    ck_assert(cfg_set(&c, "gma.topk=-1") != 0);
    ck_assert_msg(strstr(gma_error(), "gma.topk"), "%s", gma_error());
    ck_assert(cfg_set(&c, "gma.topk_noise=-0.5") != 0);
    ck_assert_msg(strstr(gma_error(), "gma.topk_noise"), "%s", gma_error());
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
    tc = tcase_create("topk");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_topk_add);
    tcase_add_test(tc, test_topk_delta);
    tcase_add_test(tc, test_topk_monitor);
    tcase_add_test(tc, test_topk_op);
    tcase_add_test(tc, test_topk_model);
    tcase_add_test(tc, test_topk_config_errors);
    suite_add_tcase(s, tc);
    return s;
}
GMA_TEST_MAIN()
