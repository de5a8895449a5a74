/* test64_gdn.c: the Gated DeltaNet mixer (docs/model.md §3.5 `gdn`) in the float64 build:
 * central-difference gradient checks of every parameter and the input for all four
 * (gdn.delta, gdn.decay) combinations (through the convolutions, SiLU, the L2 norms, the
 * gates, the recurrence, the gated RMSNorm and the projections), with expand_v 2 and a
 * kernel longer than a chunk; the op delta_forward against a naive float64 loop of the
 * recurrence written here (outputs and the final state, chunk sizes 1 .. past N); the
 * backward's gradients independent of the checkpoint interval; 2-layer models' gradients
 * (gdn,sdpa, and gdn with model.qkv_dim apart from d_model) and causality; the parameters
 * each switch registers and their initialisation; and the config checks that refuse bad
 * settings naming the key. */
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "ops/ops.h"
#include "testutil.h"

static Config gdn_config(int delta, int decay) {
    Config c = tu_tiny_config("gdn"); /* D 8, H 2: d 4 */
    ck_assert(cfg_set(&c, delta ? "gdn.delta=true" : "gdn.delta=false") == 0);
    ck_assert(cfg_set(&c, decay ? "gdn.decay=true" : "gdn.decay=false") == 0);
    ck_assert(cfg_set(&c, "gdn.chunk=3") == 0); /* N = 7: three chunks, the last partial */
    return c;
}

/* ---------------- one layer, every parameter and the input ---------------- */
static void layer_case(int delta, int decay, const char *extra) {
    Config cfg = gdn_config(delta, decay);
    if (extra) ck_assert_msg(cfg_set(&cfg, extra) == 0, "%s", gma_error());
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    gc_mixer_case(&cfg, "gdn", 1, 0);
}
START_TEST(test_gdn_delta_decay) { layer_case(1, 1, NULL); }
END_TEST
START_TEST(test_gdn_delta_only) { layer_case(1, 0, NULL); }
END_TEST
START_TEST(test_gdn_decay_only) { layer_case(0, 1, NULL); }
END_TEST
START_TEST(test_gdn_neither) { layer_case(0, 0, NULL); }
END_TEST
START_TEST(test_gdn_expand_v) {
    layer_case(1, 1, "gdn.expand_v=2");
    layer_case(0, 1, "gdn.expand_v=2");
    layer_case(1, 1, "gdn.conv_size=5"); /* a kernel longer than a chunk */
}
END_TEST

/* ---------------- the op against a naive loop ---------------- */
static double sigm(double x) { return 1 / (1 + exp(-x)); }
static double softplus(double x) { return log1p(exp(x)); }

/* the recurrence as docs/model.md writes it, one head at a time: o [BH,N,dv], S [BH,dk,dv];
 * with sd [H,dk] row r of S decays by sigmoid(sd_hr) too (the rows' decays of gma.slot_decay) */
static void naive_delta(double *o, double *S, const real *q, const real *k, const real *v, const real *ga,
                        const real *gb, const real *A_log, const real *dtb, const real *sd, int B, int H, int N, int dk,
                        int dv, double scale) {
    for (int bh = 0; bh < B * H; bh++) {
        int h = bh % H;
        double *s = S + (size_t)bh * dk * dv;
        memset(s, 0, sizeof(double) * dk * dv);
        for (int t = 0; t < N; t++) {
            size_t i = (size_t)bh * N + t;
            const real *kt = k + i * dk, *vt = v + i * dv, *qt = q + i * dk;
            double a = ga ? exp(-exp(A_log[h]) * softplus(ga[i] + dtb[h])) : 1;
            for (int e = 0; e < dk * dv; e++) s[e] *= a * (sd ? sigm(sd[h * dk + e / dv]) : 1);
            for (int j = 0; j < dv; j++) {
                double pred = 0;
                for (int r = 0; r < dk; r++) pred += s[r * dv + j] * kt[r];
                double upd = gb ? sigm(gb[i]) * (vt[j] - pred) : vt[j];
                for (int r = 0; r < dk; r++) s[r * dv + j] += kt[r] * upd;
            }
            for (int j = 0; j < dv; j++) {
                double acc = 0;
                for (int r = 0; r < dk; r++) acc += s[r * dv + j] * qt[r];
                o[i * dv + j] = scale * acc;
            }
        }
    }
}

START_TEST(test_delta_op_naive) {
    int B = 2, H = 3, N = 11, dk = 4, dv = 5, BH = B * H;
    Rng rng;
    rng_seed(&rng, 9);
    size_t nq = (size_t)BH * N * dk, nv = (size_t)BH * N * dv, SS = (size_t)dk * dv;
    real *q = gc_random(nq, &rng, 0.5), *k = gc_random(nq, &rng, 0.5), *v = gc_random(nv, &rng, 1);
    real *ga = gc_random((size_t)BH * N, &rng, 1), *gb = gc_random((size_t)BH * N, &rng, 1.5);
    real *Al = gc_random(H, &rng, 0.5), *dtb = gc_random(H, &rng, 0.5), *sdv = gc_random((size_t)H * dk, &rng, 2);
    real *o = xcalloc(nv, sizeof(real));
    double *o_ref = xcalloc(nv, sizeof(double)), *S_ref = xcalloc(BH * SS, sizeof(double));
    int chunks[] = {1, 3, 11, 16};
    for (int mode = 0; mode < 8; mode++) { /* bits: decay, delta, the rows' decays */
        const real *pa = mode & 1 ? ga : NULL, *pb = mode & 2 ? gb : NULL, *ps = mode & 4 ? sdv : NULL;
        naive_delta(o_ref, S_ref, q, k, v, pa, pb, Al, dtb, ps, B, H, N, dk, dv, 0.7);
        double omax = 0;
        for (size_t i = 0; i < nv; i++) omax = fmax(omax, fabs(o_ref[i]));
        ck_assert(omax > 0.05);
        for (int ci = 0; ci < 4; ci++) {
            int C = chunks[ci], nck = (N + C - 1) / C;
            real *Sck = xcalloc((size_t)BH * (nck + 1) * SS, sizeof(real));
            g_ops->delta_forward(o, Sck, q, k, v, pa, pb, Al, dtb, ps, B, H, N, dk, dv, C, 0.7);
            double eo = 0, es = 0;
            for (size_t i = 0; i < nv; i++) eo = fmax(eo, fabs(o[i] - o_ref[i]));
            for (int bh = 0; bh < BH; bh++) {
                for (size_t e = 0; e < SS; e++) {
                    es = fmax(es, fabs(Sck[((size_t)bh * (nck + 1) + nck) * SS + e] - S_ref[bh * SS + e]));
                    ck_assert(Sck[(size_t)bh * (nck + 1) * SS + e] == 0); /* the state before step 0 */
                }
            }
            ck_assert_msg(eo < 1e-12 && es < 1e-12, "delta %d decay %d rows %d chunk %d: |o| err %.3e, |S| err %.3e",
                          (mode >> 1) & 1, mode & 1, mode >> 2, C, eo, es);
            free(Sck);
        }
        /* the decoding step: N steps from a zero state give the same outputs and state */
        real *st = xcalloc((size_t)B * (H * SS + 3), sizeof(real)), *qs = xcalloc((size_t)BH * dk, sizeof(real)),
             *ks = xcalloc((size_t)BH * dk, sizeof(real)), *vs = xcalloc((size_t)BH * dv, sizeof(real)),
             *as = xcalloc(BH, sizeof(real)), *bs = xcalloc(BH, sizeof(real)), *os = xcalloc((size_t)BH * dv, sizeof(real));
        double eo = 0;
        for (int t = 0; t < N; t++) {
            for (int bh = 0; bh < BH; bh++) {
                size_t i = (size_t)bh * N + t;
                memcpy(qs + bh * dk, q + i * dk, sizeof(real) * dk);
                memcpy(ks + bh * dk, k + i * dk, sizeof(real) * dk);
                memcpy(vs + bh * dv, v + i * dv, sizeof(real) * dv);
                as[bh] = ga[i], bs[bh] = gb[i];
            }
            g_ops->delta_step(os, st, H * SS + 3, qs, ks, vs, pa ? as : NULL, pb ? bs : NULL, Al, dtb, ps, B, H, dk, dv,
                              0.7);
            for (int bh = 0; bh < BH; bh++)
                for (int j = 0; j < dv; j++) eo = fmax(eo, fabs(os[bh * dv + j] - o_ref[((size_t)bh * N + t) * dv + j]));
        }
        double es = 0;
        for (int bh = 0; bh < BH; bh++)
            for (size_t e = 0; e < SS; e++)
                es = fmax(es, fabs(st[(bh / H) * (H * SS + 3) + (bh % H) * SS + e] - S_ref[bh * SS + e]));
        ck_assert_msg(eo < 1e-12 && es < 1e-12, "delta_step delta %d decay %d rows %d: %.3e %.3e", (mode >> 1) & 1,
                      mode & 1, mode >> 2, eo, es);
        free(st), free(qs), free(ks), free(vs), free(as), free(bs), free(os);
    }
    free(q), free(k), free(v), free(ga), free(gb), free(Al), free(dtb), free(sdv), free(o), free(o_ref), free(S_ref);
}
END_TEST

/* the backward's gradients do not depend on the checkpoint interval (chunk 1, 4, N, > N):
 * the recomputed states are the forward's */
START_TEST(test_delta_backward_chunks) {
    int B = 1, H = 2, N = 9, dk = 3, dv = 4, BH = B * H;
    Rng rng;
    rng_seed(&rng, 4);
    size_t nq = (size_t)BH * N * dk, nv = (size_t)BH * N * dv, SS = (size_t)dk * dv, ng = (size_t)BH * N;
    real *q = gc_random(nq, &rng, 0.5), *k = gc_random(nq, &rng, 0.5), *v = gc_random(nv, &rng, 1);
    real *ga = gc_random(ng, &rng, 1), *gb = gc_random(ng, &rng, 1), *Al = gc_random(H, &rng, 0.5);
    real *dtb = gc_random(H, &rng, 0.5), *dout = gc_random(nv, &rng, 1), *o = xcalloc(nv, sizeof(real));
    real *sdv = gc_random((size_t)H * dk, &rng, 2); /* with the rows' decays (gma.slot_decay) */
    size_t ntot = 2 * nq + nv + 2 * ng + 2 * H + (size_t)H * dk;
    real *ref = xcalloc(ntot, sizeof(real)), *g = xcalloc(ntot, sizeof(real));
    int chunks[] = {9, 1, 4, 20};
    for (int ci = 0; ci < 4; ci++) {
        int C = chunks[ci], nck = (N + C - 1) / C;
        real *Sck = xcalloc((size_t)BH * (nck + 1) * SS, sizeof(real));
        memset(g, 0, sizeof(real) * ntot);
        g_ops->delta_forward(o, Sck, q, k, v, ga, gb, Al, dtb, sdv, B, H, N, dk, dv, C, 0.5);
        g_ops->delta_backward(g, g + nq, g + 2 * nq, g + 2 * nq + nv, g + 2 * nq + nv + ng, g + 2 * nq + nv + 2 * ng,
                              g + 2 * nq + nv + 2 * ng + H, g + 2 * nq + nv + 2 * ng + 2 * H, dout, Sck, q, k, v, ga, gb,
                              Al, dtb, sdv, B, H, N, dk, dv, C, 0.5);
        if (ci == 0) memcpy(ref, g, sizeof(real) * ntot);
        double e = 0, gm = 0;
        for (size_t i = 0; i < ntot; i++) e = fmax(e, fabs(g[i] - ref[i])), gm = fmax(gm, fabs(ref[i]));
        ck_assert(gm > 0.1);
        ck_assert_msg(e < 1e-12 * gm, "chunk %d: gradients differ from chunk N by %.3e", C, e);
        free(Sck);
    }
    free(q), free(k), free(v), free(ga), free(gb), free(Al), free(dtb), free(sdv), free(dout), free(o), free(ref), free(g);
}
END_TEST

/* ---------------- inside a model ---------------- */
START_TEST(test_gdn_model) {
    Config cfg = gdn_config(1, 1);
    ck_assert(cfg_set(&cfg, "model.mixer=gdn,sdpa") == 0);
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    GcModel c;
    gc_model_setup(&c, &cfg);
    gc_model_check(&c, "gdn,sdpa", "2-layer model gdn,sdpa");
    /* q, k, v widths apart from the model's (model.qkv_dim 16: d 8, D 16 against d_model 8) */
    cfg = gdn_config(1, 1);
    ck_assert(cfg_set(&cfg, "model.qkv_dim=16") == 0);
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    gc_model_setup(&c, &cfg);
    gc_model_check(&c, "gdn qkv_dim 16", "2-layer gdn model, qkv_dim 16");
    for (int mode = 0; mode < 4; mode++) {
        Config cc = gdn_config(mode & 2, mode & 1);
        ck_assert_msg(cfg_validate(&cc) == 0, "%s", gma_error());
        gc_causal_case(&cc, "gdn", 0);
    }
}
END_TEST

/* ---------------- parameters, initialisation, config ---------------- */
START_TEST(test_gdn_params) {
    static const char *names[] = {"q_proj.weight", "k_proj.weight", "v_proj.weight", "q_conv.weight", "k_conv.weight",
                                  "v_conv.weight", "a_proj.weight", "A_log",         "dt_bias",       "b_proj.weight",
                                  "g_proj.weight", "o_norm.weight", "o_proj.weight"};
    for (int mode = 0; mode < 4; mode++) {
        int delta = mode >> 1, decay = mode & 1;
        Config cfg = gdn_config(delta, decay);
        ck_assert(cfg_set(&cfg, "gdn.expand_v=2") == 0);
        GcMix c;
        gc_mix_setup(&c, &cfg, "gdn", 1, 4, 1, NULL, 3);
        for (int i = 0; i < 13; i++) {
            char full[128];
            snprintf(full, sizeof full, "blocks.0.mixer.gdn.%s", names[i]);
            int want = (i >= 6 && i <= 8) ? decay : i == 9 ? delta : 1;
            ck_assert_msg((pt_find(&c.pt, full) >= 0) == want, "%s: delta %d decay %d", full, delta, decay);
        }
        ck_assert_int_eq(c.pt.t[pt_find(&c.pt, "blocks.0.mixer.gdn.v_proj.weight")].shape[0], 16); /* Dv = 2 D */
        ck_assert_int_eq(c.pt.t[pt_find(&c.pt, "blocks.0.mixer.gdn.o_norm.weight")].numel, 8);     /* dv = 2 d */
        ck_assert_int_eq(c.pt.t[pt_find(&c.pt, "blocks.0.mixer.gdn.q_conv.weight")].shape[1], 4);
        const real *w = c.params + c.pt.t[pt_find(&c.pt, "blocks.0.mixer.gdn.o_norm.weight")].offset;
        for (int j = 0; j < 8; j++) ck_assert(w[j] == 1);
        if (decay) {
            const real *al = c.params + c.pt.t[pt_find(&c.pt, "blocks.0.mixer.gdn.A_log")].offset;
            const real *dt = c.params + c.pt.t[pt_find(&c.pt, "blocks.0.mixer.gdn.dt_bias")].offset;
            for (int h = 0; h < 2; h++) {
                ck_assert(al[h] <= log(16.0) && al[h] > -20);
                double sp = log1p(exp(dt[h])); /* softplus(dt_bias) = dt in [1e-3, 1e-1] */
                ck_assert(sp >= 1e-3 - 1e-12 && sp <= 1e-1 + 1e-12);
            }
        }
        gc_mix_free(&c);
    }
}
END_TEST

START_TEST(test_gdn_config_errors) {
    static const char *bad[][2] = {{"gdn.conv_size=0", "gdn.conv_size"}, {"gdn.expand_v=9", "gdn.expand_v"},
                                   {"gdn.chunk=0", "gdn.chunk"},         {"gdn.delta=maybe", "gdn.delta"},
                                   {"gdn.width=3", "gdn.width"}};
    for (int i = 0; i < 5; i++) {
        Config c = tu_tiny_config("gdn");
        ck_assert_msg(cfg_set(&c, bad[i][0]) != 0, "%s accepted", bad[i][0]);
        ck_assert_msg(strstr(gma_error(), bad[i][1]), "%s: %s", bad[i][0], gma_error());
    }
    Config c = tu_tiny_config("gdn");
    c.model.causal = 0;
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "model.mixer") && strstr(gma_error(), "gdn"), "%s", gma_error());
    ParamTable pt = {0};
    ck_assert_ptr_null(mixer_find("gdn")->create(&c, 0, &pt, "x"));
    pt_free(&pt);
    c = tu_tiny_config("gdn"); /* the CUDA kernels' head widths */
    ck_assert(cfg_set(&c, "gdn.expand_v=8") == 0);
    c.model.d_model = 512, c.model.n_heads = 2;
    ck_assert_int_eq(cfg_validate(&c), 0); /* on the cpu */
    c.device = OPS_CUDA;
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "gdn.expand_v") && strstr(gma_error(), "2048"), "%s", gma_error());
    c = tu_tiny_config("gdn");
    ck_assert(cfg_set(&c, "model.attn_dropout=0.1") == 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "model.attn_dropout"), "%s", gma_error());
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("gdn");
    TCase *tc = tcase_create("gdn");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_gdn_delta_decay);
    tcase_add_test(tc, test_gdn_delta_only);
    tcase_add_test(tc, test_gdn_decay_only);
    tcase_add_test(tc, test_gdn_neither);
    tcase_add_test(tc, test_gdn_expand_v);
    tcase_add_test(tc, test_delta_op_naive);
    tcase_add_test(tc, test_delta_backward_chunks);
    tcase_add_test(tc, test_gdn_model);
    tcase_add_test(tc, test_gdn_params);
    tcase_add_test(tc, test_gdn_config_errors);
    suite_add_tcase(s, tc);
    return s;
}
GMA_TEST_MAIN()
