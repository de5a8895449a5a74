/* test64_baselines.c: finite-difference gradient checks (float64 build) of the baseline
 * mixers (docs/model.md §3.5): sdpa_ref, linear, performer (causal and bidirectional, with and
 * without key padding), linformer (bidirectional, with padding), mamba (causal, two scan
 * chunks and two channel groups), baseconv (causal, with and without its activation;
 * its output against a direct evaluation), auto (both paths); every parameter
 * element and the input. Also: the tiled sdpa against sdpa_ref over several tiles (forward and every
 * gradient, one-pass and two-pass backward), causality of each causal mixer inside a
 * model, 2-layer models with mixer lists ("sdpa,linear", "mamba" without MLP,
 * "performer,linformer" bidirectional, "auto,gma", "baseconv,gma" and "baseconv,sdpa" with
 * model.pos "none"), the Performer redraw schedule and the
 * config checks that refuse bad mixer settings naming the key. The LRA release's variants:
 * performer.kernel "relu" (gradient checks in both modes with and without padding, its
 * features against a direct evaluation) and linformer.shared_kv (gradient checks, one
 * projection tensor, the same output as separate E, F set equal). The short convolutions on
 * q, k, v (model.short_conv): sdpa_ref, linear, performer (both kernels) as layers, in
 * models and in the causality check, and the refusals of the mixers that do not take them.
 * Sliding-window sdpa (sdpa.window 3 over 7 tokens: causal band and the symmetric one, with
 * and without padding; a 2-layer model; causality). */
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "ops/ops.h"
#include "testutil.h"

static Config tiny_config(const char *mixer) {
    Config c = tu_tiny_config(mixer);
    ck_assert(cfg_set(&c, "performer.features=5") == 0); /* d = 4: one full orthogonal block and a partial one */
    ck_assert(cfg_set(&c, "linformer.k=5") == 0);
    ck_assert(cfg_set(&c, "mamba.d_state=3") == 0);
    ck_assert(cfg_set(&c, "mamba.expand=5") == 0);       /* E = 40: two scan channel groups */
    ck_assert(cfg_set(&c, "mamba.d_conv=3") == 0);
    ck_assert(cfg_set(&c, "mamba.chunk=3") == 0);        /* N = 7: three scan chunks, the last partial */
    return c;
}

/* ---------------- one mixer layer (gradcheck.h gc_mixer_case) ---------------- */
static void mixer_case(const char *name, int causal, int padded) {
    Config cfg = tiny_config(name);
    cfg.model.causal = causal;
    gc_mixer_case(&cfg, name, causal, padded);
}

GC_MIXER_TESTS(sdpa_ref, "sdpa_ref")
GC_MIXER_TESTS(linear, "linear")
GC_MIXER_TESTS(performer, "performer")

/* performer.kernel "relu": phi = relu(x) + 0.001 on the d channels, no omega */
static Config relu_config(void) {
    Config c = tiny_config("performer");
    ck_assert(cfg_set(&c, "performer.kernel=relu") == 0);
    ck_assert(cfg_set(&c, "performer.features=0") == 0);
    return c;
}
static void relu_case(int causal, int padded) {
    Config cfg = relu_config();
    cfg.model.causal = causal;
    gc_mixer_case(&cfg, "performer", causal, padded);
}
START_TEST(test_performer_relu_causal) { relu_case(1, 0); }
END_TEST
START_TEST(test_performer_relu_bidir) { relu_case(0, 0); }
END_TEST
START_TEST(test_performer_relu_causal_padded) { relu_case(1, 1); }
END_TEST
START_TEST(test_performer_relu_bidir_padded) { relu_case(0, 1); }
END_TEST

/* the relu kernel's mixed values, from the projected q, k, v the layer saved (act starts
 * with qh, kh, vh, oh [B,H,N,d]), against a direct evaluation of
 * o_n = sum_j phi(q_n).phi(k_j) v_j / (sum_j phi(q_n).phi(k_j) + eps), phi = relu + 0.001,
 * over the visible keys j (j <= n when causal; padded keys skipped) */
static void relu_direct_case(int causal) {
    Config cfg = relu_config();
    cfg.model.causal = causal;
    GcMix c;
    int B = 2, N = 7;
    gc_mix_setup(&c, &cfg, "performer", B, N, causal, gc_pad_mask, 3);
    ck_assert_int_lt(pt_find(&c.pt, "blocks.0.mixer.performer.omega"), 0); /* no random features */
    gc_mix_loss(&c);
    int H = c.m->H, d = c.m->d;
    size_t hs = (size_t)B * N * c.m->D;
    const real *qh = c.act, *kh = qh + hs, *vh = kh + hs, *oh = vh + hs;
    double eps = cfg_num(&cfg, "gma.eps"), err = 0, mx = 0;
    for (int b = 0; b < B; b++)
        for (int hh = 0; hh < H; hh++) {
            size_t o = ((size_t)b * H + hh) * N * d;
            for (int n = 0; n < N; n++) {
                double num[64] = {0}, den = eps;
                for (int j = 0; j < N; j++) {
                    if (!gc_pad_mask[b * N + j] || (causal && j > n)) continue;
                    double w = 0;
                    for (int i = 0; i < d; i++)
                        w += (fmax(qh[o + n * d + i], 0) + 0.001) * (fmax(kh[o + j * d + i], 0) + 0.001);
                    den += w;
                    for (int i = 0; i < d; i++) num[i] += w * vh[o + j * d + i];
                }
                for (int i = 0; i < d; i++) {
                    err = fmax(err, fabs(oh[o + n * d + i] - num[i] / den));
                    mx = fmax(mx, fabs(num[i] / den));
                }
            }
        }
    printf("performer relu %s: direct evaluation max |dO| %.2e (of %.2e)\n", causal ? "causal" : "bidir", err, mx);
    ck_assert(mx > 0);
    ck_assert(err < 1e-12 * mx);
    gc_mix_free(&c);
}
START_TEST(test_performer_relu_direct) {
    relu_direct_case(0);
    relu_direct_case(1);
}
END_TEST
START_TEST(test_linformer_bidir) { mixer_case("linformer", 0, 0); }
END_TEST
START_TEST(test_linformer_bidir_padded) { mixer_case("linformer", 0, 1); }
END_TEST

/* linformer.shared_kv: one projection E for keys and values */
static void shared_case(int padded) {
    Config cfg = tiny_config("linformer");
    cfg.model.causal = 0;
    ck_assert(cfg_set(&cfg, "linformer.shared_kv=true") == 0);
    gc_mixer_case(&cfg, "linformer", 0, padded);
}
START_TEST(test_linformer_shared_bidir) { shared_case(0); }
END_TEST
START_TEST(test_linformer_shared_bidir_padded) { shared_case(1); }
END_TEST
/* the shared layer has E and no F, and computes what the two-projection layer computes
 * with F set to E */
START_TEST(test_linformer_shared_equals_tied) {
    Config cfg = tiny_config("linformer"), cs;
    cfg.model.causal = 0;
    cs = cfg;
    ck_assert(cfg_set(&cs, "linformer.shared_kv=true") == 0);
    GcMix a, b;
    gc_mix_setup(&a, &cs, "linformer", 2, 7, 0, gc_pad_mask, 11);
    gc_mix_setup(&b, &cfg, "linformer", 2, 7, 0, gc_pad_mask, 11);
    int ae = pt_find(&a.pt, "blocks.0.mixer.linformer.E");
    ck_assert_int_ge(ae, 0);
    ck_assert_int_lt(pt_find(&a.pt, "blocks.0.mixer.linformer.F"), 0);
    ck_assert_int_eq(a.pt.n + 1, b.pt.n);
    for (int i = 0; i < a.pt.n; i++) { /* the same names in the same order: copy every tensor */
        int j = pt_find(&b.pt, a.pt.t[i].name);
        ck_assert_int_ge(j, 0);
        memcpy(b.params + b.pt.t[j].offset, a.params + a.pt.t[i].offset, a.pt.t[i].numel * sizeof(real));
    }
    int bf = pt_find(&b.pt, "blocks.0.mixer.linformer.F");
    memcpy(b.params + b.pt.t[bf].offset, a.params + a.pt.t[ae].offset, a.pt.t[ae].numel * sizeof(real));
    memcpy(b.h, a.h, a.n * sizeof(real));
    memcpy(b.r, a.r, a.n * sizeof(real));
    gc_mix_loss(&a);
    gc_mix_loss(&b);
    for (size_t i = 0; i < a.n; i++) ck_assert(a.y[i] == b.y[i]);
    memset(a.grads, 0, a.pt.total * sizeof(real));
    memset(b.grads, 0, b.pt.total * sizeof(real));
    /* and E's gradient is the sum of the tied layer's E and F gradients */
    real *da = xcalloc(a.n, sizeof(real)), *db = xcalloc(a.n, sizeof(real));
    a.m->vt->backward(a.m, &a.ctx, da, a.r, a.h, a.params, a.grads, a.act, a.scratch);
    b.m->vt->backward(b.m, &b.ctx, db, b.r, b.h, b.params, b.grads, b.act, b.scratch);
    const real *ga = a.grads + a.pt.t[ae].offset, *ge = b.grads + b.pt.t[pt_find(&b.pt, "blocks.0.mixer.linformer.E")].offset,
               *gf = b.grads + b.pt.t[bf].offset;
    double err = 0, mx = 0;
    for (size_t i = 0; i < a.pt.t[ae].numel; i++) err = fmax(err, fabs(ga[i] - ge[i] - gf[i])), mx = fmax(mx, fabs(ga[i]));
    printf("linformer shared_kv vs tied E = F: max |dE| %.2e (of %.2e)\n", err, mx);
    ck_assert(mx > 0);
    ck_assert(err < 1e-12 * mx);
    free(da), free(db);
    gc_mix_free(&a);
    gc_mix_free(&b);
}
END_TEST
START_TEST(test_mamba_causal) { mixer_case("mamba", 1, 0); }
END_TEST

/* baseconv (causal only; it reads no key mask: right padding cannot reach earlier
 * positions, test_causal_baselines): the default (kernel 3, no activation), and
 * baseconv.act with a kernel (9) longer than the sequence (7) */
START_TEST(test_baseconv_causal) { mixer_case("baseconv", 1, 0); }
END_TEST
START_TEST(test_baseconv_act) {
    Config cfg = tiny_config("baseconv");
    ck_assert_int_eq(cfg_set(&cfg, "baseconv.act=true"), 0);
    ck_assert_int_eq(cfg_set(&cfg, "baseconv.kernel=9"), 0);
    gc_mixer_case(&cfg, "baseconv", 1, 0);
}
END_TEST
/* the layer's output against a direct evaluation of docs/model.md's definition,
 * y[t] = (cb + sum_k cw[:,k] h[t-K+1+k]) * (W h[t] + b) + h[t] (act: silu of both factors),
 * and its tensors' shapes and initialisation */
static double silu_d(double x) { return x / (1 + exp(-x)); }
static void baseconv_direct_case(int act, int K) {
    Config cfg = tiny_config("baseconv");
    ck_assert_int_eq(cfg_set(&cfg, act ? "baseconv.act=true" : "baseconv.act=false"), 0);
    char set[64];
    snprintf(set, sizeof set, "baseconv.kernel=%d", K);
    ck_assert_int_eq(cfg_set(&cfg, set), 0);
    GcMix c;
    int B = 2, N = 7;
    gc_mix_setup(&c, &cfg, "baseconv", B, N, 1, NULL, 17);
    ck_assert_int_eq(c.pt.n, 4);
    int iw = pt_find(&c.pt, "blocks.0.mixer.baseconv.projection.weight"), ib = pt_find(&c.pt, "blocks.0.mixer.baseconv.projection.bias"),
        icw = pt_find(&c.pt, "blocks.0.mixer.baseconv.conv.weight"), icb = pt_find(&c.pt, "blocks.0.mixer.baseconv.conv.bias");
    ck_assert(iw >= 0 && ib >= 0 && icw >= 0 && icb >= 0);
    int D = c.m->Dm;
    ck_assert_int_eq(c.pt.t[icw].numel, (size_t)D * K);
    const real *W = c.params + c.pt.t[iw].offset, *bb = c.params + c.pt.t[ib].offset,
               *cw = c.params + c.pt.t[icw].offset, *cb = c.params + c.pt.t[icb].offset;
    /* PyTorch's Conv1d default: uniform in [-1/sqrt(K), 1/sqrt(K)], weight and bias */
    double bound = 1 / sqrt((double)K), wmax = 0;
    for (size_t i = 0; i < c.pt.t[icw].numel; i++) wmax = fmax(wmax, fabs(cw[i]));
    for (int i = 0; i < D; i++) wmax = fmax(wmax, fabs(cb[i]));
    ck_assert(wmax <= bound && wmax > 0.3 * bound);
    for (int i = 0; i < D; i++) ck_assert(bb[i] == 0);
    for (int i = 0; i < D; i++) ((real *)bb)[i] = 0.1 * (i - 3); /* a bias that shows */
    gc_mix_loss(&c);
    double err = 0, mx = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < N; t++) {
            const real *ht = c.h + ((size_t)b * N + t) * D;
            for (int e = 0; e < D; e++) {
                double cv = cb[e], pj = bb[e];
                for (int k = 0; k < K; k++) {
                    int ts = t - K + 1 + k;
                    if (ts >= 0) cv += cw[e * K + k] * c.h[((size_t)b * N + ts) * D + e];
                }
                for (int i = 0; i < D; i++) pj += W[e * D + i] * ht[i];
                double want = (act ? silu_d(cv) * silu_d(pj) : cv * pj) + ht[e];
                err = fmax(err, fabs(c.y[((size_t)b * N + t) * D + e] - want));
                mx = fmax(mx, fabs(want));
            }
        }
    printf("baseconv K=%d%s: direct evaluation max |dy| %.2e (of %.2e)\n", K, act ? " act" : "", err, mx);
    ck_assert(mx > 0);
    ck_assert(err < 1e-12 * mx);
    gc_mix_free(&c);
}
START_TEST(test_baseconv_direct) {
    baseconv_direct_case(0, 3);
    baseconv_direct_case(1, 3);
    baseconv_direct_case(0, 1);
    baseconv_direct_case(0, 9);
}
END_TEST
START_TEST(test_auto_both_paths) {
    Config cfg = tiny_config("auto");
    ck_assert_int_eq(cfg_set(&cfg, "model.auto_threshold=8"), 0); /* N = 7 < 8: sdpa */
    GcMix c;
    gc_mix_setup(&c, &cfg, "auto", 2, 7, 1, NULL, 5);
    ck_assert_str_eq(mixer_auto_choice(c.m, 7), "sdpa");
    ck_assert_str_eq(mixer_auto_choice(c.m, 8), "gma");
    ck_assert_int_ge(pt_find(&c.pt, "blocks.0.mixer.gma.mu"), 0);
    ck_assert_int_ge(pt_find(&c.pt, "blocks.0.mixer.q.weight"), 0);
    /* the sdpa path equals a sdpa layer with the same projections */
    GcMix s;
    gc_mix_setup(&s, &cfg, "sdpa", 2, 7, 1, NULL, 5);
    for (int i = 0; i < AP_N; i++)
        memcpy(s.params + s.pt.t[i].offset, c.params + c.pt.t[c.m->p[i]].offset, s.pt.t[i].numel * sizeof(real));
    memcpy(s.h, c.h, c.n * sizeof(real));
    gc_mix_loss(&c);
    gc_mix_loss(&s);
    for (size_t i = 0; i < c.n; i++) ck_assert(c.y[i] == s.y[i]);
    gc_mix_free(&s);
    gc_mix_free(&c);
    gc_mixer_case(&cfg, "auto", 1, 1);
    ck_assert_int_eq(cfg_set(&cfg, "model.auto_threshold=4"), 0); /* N = 7 >= 4: gma */
    gc_mixer_case(&cfg, "auto", 1, 1);
    gc_mixer_case(&cfg, "auto", 0, 0);
}
END_TEST

/* ---------------- tiled sdpa against sdpa_ref over several tiles ---------------- */
static void tiled_case(int B, int H, int N, int causal, int padded, int threads) {
    Config cfg = tiny_config("sdpa");
    cfg.model.n_heads = H;
    cfg.model.d_model = 4 * H;
    cfg.model.max_seq_len = N;
    uint8_t *mask = NULL;
    if (padded) {
        mask = xcalloc((size_t)B * N, 1);
        for (int i = 0; i < B * N; i++) mask[i] = (i % N) < N - 1 - 13 * (i / N) || (i % N) == 3 ? 1 : 0;
    }
    ops_set_threads(threads);
    GcMix a, b;
    gc_mix_setup(&a, &cfg, "sdpa", B, N, causal, mask, 9);
    gc_mix_setup(&b, &cfg, "sdpa_ref", B, N, causal, mask, 9);
    gc_mix_loss(&a);
    gc_mix_loss(&b);
    double ey = 0, ym = 0;
    for (size_t i = 0; i < a.n; i++) ey = fmax(ey, fabs(a.y[i] - b.y[i])), ym = fmax(ym, fabs(b.y[i]));
    real *da = xcalloc(a.n, sizeof(real)), *db = xcalloc(a.n, sizeof(real));
    a.m->vt->backward(a.m, &a.ctx, da, a.r, a.h, a.params, a.grads, a.act, a.scratch);
    b.m->vt->backward(b.m, &b.ctx, db, b.r, b.h, b.params, b.grads, b.act, b.scratch);
    double eg = 0, gm = 0;
    for (size_t i = 0; i < a.n; i++) eg = fmax(eg, fabs(da[i] - db[i])), gm = fmax(gm, fabs(db[i]));
    for (size_t i = 0; i < a.pt.total; i++) eg = fmax(eg, fabs(a.grads[i] - b.grads[i])), gm = fmax(gm, fabs(b.grads[i]));
    printf("tiled sdpa vs sdpa_ref B=%d H=%d N=%d %s%s threads=%d: max |dy| %.2e (of %.2e), max |dgrad| %.2e (of %.2e)\n",
           B, H, N, causal ? "causal" : "bidir", padded ? " padded" : "", threads, ey, ym, eg, gm);
    ck_assert(ey < 1e-12 * ym);
    ck_assert(eg < 1e-12 * gm);
    free(da), free(db), free(mask);
    gc_mix_free(&a);
    gc_mix_free(&b);
    ops_set_threads(2);
}
START_TEST(test_tiled_vs_ref) {
    tiled_case(2, 2, 150, 1, 0, 1); /* one-pass backward */
    tiled_case(2, 2, 150, 0, 1, 1);
    tiled_case(1, 1, 150, 1, 1, 2); /* two-pass backward */
    tiled_case(1, 2, 130, 0, 0, 4);
}
END_TEST

/* ---------------- the short convolutions on q, k, v (model.short_conv, docs/model.md §3.9) ---------------- */
/* one layer with `sets`: the [D, K] weights in the table, then gc_mixer_case */
static void conv_case(const char *name, const char *sets, int causal, int padded) {
    Config cfg = tiny_config(name);
    tu_apply_sets(&cfg, sets);
    cfg.model.causal = causal;
    GcMix c;
    gc_mix_setup(&c, &cfg, name, 2, 7, causal, NULL, 1);
    ck_assert_int_eq(c.m->conv_k, (int)cfg_num(&cfg, "model.short_conv"));
    ck_assert_int_ge(pt_find(&c.pt, "blocks.0.mixer.q_conv.weight"), 0);
    ck_assert_int_ge(pt_find(&c.pt, "blocks.0.mixer.k_conv.weight"), 0);
    ck_assert_int_ge(pt_find(&c.pt, "blocks.0.mixer.v_conv.weight"), 0);
    gc_mix_free(&c);
    printf("%s %s:\n", name, sets);
    gc_mixer_case(&cfg, name, causal, padded);
}
static void conv_cases(const char *name, const char *sets) {
    for (int k = 0; k < 4; k++) conv_case(name, sets, k & 1, k >> 1);
}
START_TEST(test_short_conv_mixers) {
    conv_cases("sdpa_ref", "model.short_conv=4");
    conv_cases("linear", "model.short_conv=4");
    conv_cases("performer", "model.short_conv=4");
    conv_case("performer", "model.short_conv=2;performer.kernel=relu;performer.features=0", 1, 1);
    conv_case("performer", "model.short_conv=4;performer.kernel=relu;performer.features=0", 0, 1);
    conv_case("linear", "model.short_conv=2", 1, 1);
    conv_case("sdpa_ref", "model.short_conv=2", 0, 1);
}
END_TEST

/* ---------------- sliding-window sdpa (sdpa.window = 3 < N = 7) ---------------- */
static void window_case(int causal, int padded) {
    Config cfg = tiny_config("sdpa");
    ck_assert_int_eq(cfg_set(&cfg, "sdpa.window=3"), 0);
    cfg.model.causal = causal;
    gc_mixer_case(&cfg, "sdpa", causal, padded);
}
START_TEST(test_sdpa_window) {
    window_case(1, 0);
    window_case(1, 1);
    window_case(0, 0); /* the symmetric band i-2..i+2 */
    window_case(0, 1);
}
END_TEST

/* ---------------- whole models ---------------- */
static void model_case(const char *mixers, const char *extra, const char *extra2) {
    Config cfg = tiny_config("gma");
    ck_assert_int_eq(cfg_set(&cfg, mixers), 0);
    if (extra) ck_assert_int_eq(cfg_set(&cfg, extra), 0);
    if (extra2) ck_assert_int_eq(cfg_set(&cfg, extra2), 0);
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    GcModel c;
    gc_model_setup(&c, &cfg);
    char nm[128];
    snprintf(nm, sizeof nm, "2-layer model %s%s%s (%d tensors)", mixers + 12, extra ? " " : "", extra ? extra : "",
             c.m.pt.n);
    gc_model_check(&c, mixers, nm);
}

START_TEST(test_model_sdpa_linear) { model_case("model.mixer=sdpa,linear", NULL, NULL); }
END_TEST
START_TEST(test_model_sdpa_window) { model_case("model.mixer=sdpa,linear", "sdpa.window=2", NULL); }
END_TEST
START_TEST(test_model_mamba_nomlp) { model_case("model.mixer=mamba", "model.mlp=false", NULL); }
END_TEST
START_TEST(test_model_performer_linformer) { model_case("model.mixer=performer,linformer", "model.causal=0", NULL); }
END_TEST
START_TEST(test_model_lra_variants) {
    model_case("model.mixer=performer,linformer", "model.causal=0", "linformer.shared_kv=true");
    Config cfg = relu_config();
    ck_assert_int_eq(cfg_set(&cfg, "model.mixer=sdpa,performer"), 0);
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    GcModel c;
    gc_model_setup(&c, &cfg);
    gc_model_check(&c, "sdpa,performer", "2-layer model sdpa,performer (relu kernel)");
}
END_TEST
START_TEST(test_model_short_conv) {
    model_case("model.mixer=sdpa,linear", "model.short_conv=4", NULL);
    model_case("model.mixer=performer,sdpa_ref", "model.short_conv=3", NULL);
}
END_TEST
START_TEST(test_model_auto_gma) { model_case("model.mixer=auto,gma", "model.auto_threshold=4", NULL); }
END_TEST
/* Zoology's sub-quadratic MQAR model: baseconv then the mixer, no positions (model.pos
 * "none": no pos_emb tensor); and baseconv on both layers with its activation, no MLP */
START_TEST(test_model_baseconv) {
    Config cfg = tiny_config("gma");
    ck_assert_int_eq(cfg_set(&cfg, "model.pos=none"), 0);
    GcModel c;
    gc_model_setup(&c, &cfg);
    ck_assert_int_lt(pt_find(&c.m.pt, "pos_emb.weight"), 0);
    model_free(&c.m);
    model_case("model.mixer=baseconv,gma", "model.pos=none", NULL);
    model_case("model.mixer=baseconv,sdpa", "model.pos=none", "model.mlp=false");
    model_case("model.mixer=baseconv", "baseconv.act=true", "model.mlp=false");
}
END_TEST

/* ---------------- causality inside a model ---------------- */
static void causal_case(const char *mixer, double tol) {
    Config cfg = tiny_config(mixer);
    if (!strcmp(mixer, "mamba")) ck_assert_int_eq(cfg_set(&cfg, "model.mlp=false"), 0);
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    gc_causal_case(&cfg, mixer, tol);
}
START_TEST(test_causal_baselines) {
    causal_case("sdpa", 0);
    causal_case("sdpa_ref", 0);
    causal_case("linear", 0);
    causal_case("mamba", 0);
    causal_case("baseconv", 0);
    causal_case("auto", 0);
    Config wc = tiny_config("sdpa");
    ck_assert_int_eq(cfg_set(&wc, "sdpa.window=2"), 0);
    ck_assert_msg(cfg_validate(&wc) == 0, "%s", gma_error());
    gc_causal_case(&wc, "sdpa", 0);
    causal_case("performer", 1e-13); /* the key stabiliser cancels exactly; only rounding remains */
    Config cfg = relu_config();
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    gc_causal_case(&cfg, "performer", 0);
    const char *conv[] = {"sdpa_ref", "linear", "performer"};
    for (int i = 0; i < 3; i++) { /* with the short convolutions */
        Config cc = tiny_config(conv[i]);
        tu_apply_sets(&cc, "model.short_conv=4");
        char nm[32];
        snprintf(nm, sizeof nm, "%s conv4", conv[i]);
        gc_causal_case(&cc, nm, i == 2 ? 1e-13 : 0);
    }
}
END_TEST

/* ---------------- performer redraw schedule ---------------- */
START_TEST(test_performer_redraw) {
    Config cfg = tiny_config("performer");
    ck_assert(cfg_set(&cfg, "performer.redraw=2") == 0);
    GcMix c;
    gc_mix_setup(&c, &cfg, "performer", 1, 7, 1, NULL, 1);
    int io = pt_find(&c.pt, "blocks.0.mixer.performer.omega");
    ck_assert_int_ge(io, 0);
    ck_assert_int_eq(c.pt.t[io].group, GROUP_BUFFER);
    ck_assert_int_eq(c.pt.t[io].numel, 2 * 5 * 4);
    size_t n = c.pt.t[io].numel;
    real *om = c.params + c.pt.t[io].offset, o0[40], o2[40];
    memcpy(o0, om, sizeof o0);
    /* orthogonal rows within a block of d */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++) ck_assert(fabs(gc_dot(om + i * 4, om + j * 4, 4)) < 1e-12);
    c.ctx.step = 1;
    gc_mix_loss(&c);
    ck_assert(memcmp(om, o0, n * sizeof(real)) == 0);
    c.ctx.step = 2;
    gc_mix_loss(&c);
    ck_assert(memcmp(om, o0, n * sizeof(real)) != 0);
    memcpy(o2, om, sizeof o2);
    c.ctx.step = 3;
    gc_mix_loss(&c);
    ck_assert(memcmp(om, o2, n * sizeof(real)) == 0);
    c.ctx.step = 4;
    c.ctx.training = 0; /* evaluation never redraws */
    gc_mix_loss(&c);
    ck_assert(memcmp(om, o2, n * sizeof(real)) == 0);
    /* resume: a fresh mixer at step 3 draws the same features (a pure function of seed, layer, step / redraw) */
    GcMix d;
    gc_mix_setup(&d, &cfg, "performer", 1, 7, 1, NULL, 99);
    d.ctx.step = 3;
    gc_mix_loss(&d);
    ck_assert(memcmp(d.params + d.pt.t[io].offset, o2, n * sizeof(real)) == 0);
    /* omega is not counted as a trained parameter */
    size_t trained = 0;
    for (int i = 0; i < c.pt.n; i++)
        if (c.pt.t[i].group != GROUP_BUFFER) trained += c.pt.t[i].numel;
    ck_assert_uint_eq(pt_count_trained(&c.pt), trained);
    gc_mix_free(&d);
    gc_mix_free(&c);
}
END_TEST

/* ---------------- config refusals ---------------- */
static void refused(const char *json, const char *key) {
    Config c;
    cfg_defaults(&c);
    int rc = cfg_load_text(&c, json, "test.json");
    if (rc == 0) rc = cfg_validate(&c);
    ck_assert_msg(rc != 0, "accepted: %s", json);
    ck_assert_msg(strstr(gma_error(), key) != NULL, "message \"%s\" does not name %s", gma_error(), key);
    printf("refused %-70s -> %s\n", json, gma_error());
}
START_TEST(test_config_refusals) {
    refused("{\"model\": {\"mixer\": \"flash\"}}", "model.mixer");
    refused("{\"model\": {\"mixer\": [\"sdpa\", \"nope\"]}}", "model.mixer");
    refused("{\"model\": {\"mixer\": \"linformer\"}}", "model.mixer"); /* lm: causal */
    refused("{\"model\": {\"mixer\": [\"sdpa\",\"linformer\",\"gma\",\"gma\"], \"causal\": 1}}", "model.mixer");
    refused("{\"model\": {\"mixer\": \"mamba\", \"task\": \"classify\"}}", "model.mixer");
    refused("{\"model\": {\"mixer\": [\"baseconv\", \"linformer\", \"gma\", \"gma\"], \"causal\": 0}}", "mixer \"baseconv\" (layer 0) cannot run bidirectionally");
    refused("{\"model\": {\"mixer\": \"baseconv\"}, \"baseconv\": {\"kernel\": 0}}", "baseconv.kernel");
    refused("{\"model\": {\"mixer\": \"baseconv\"}, \"baseconv\": {\"kernel\": 1025}}", "baseconv.kernel");
    refused("{\"baseconv\": {\"width\": 2}}", "baseconv.width");
    refused("{\"model\": {\"mixer\": [\"baseconv\", \"gma\", \"gma\", \"gma\"], \"attn_dropout\": 0.1}}", "model.attn_dropout");
    refused("{\"model\": {\"mixer\": \"linformer\", \"causal\": 0, \"max_seq_len\": 128}, \"train\": {\"seq_len\": 128}}",
            "linformer.k");
    refused("{\"model\": {\"d_model\": 100, \"n_heads\": 3}}", "model.d_model");
    refused("{\"mamba\": {\"d_state\": 0}}", "mamba.d_state");
    refused("{\"model\": {\"mixer\": \"performer\"}, \"performer\": {\"kernel\": \"cosine\"}}", "performer.kernel");
    refused("{\"model\": {\"mixer\": \"performer\"}, \"performer\": {\"kernel\": \"relu\", \"features\": 256}}",
            "performer.features");
    refused("{\"model\": {\"mixer\": \"performer\"}, \"performer\": {\"kernel\": \"relu\", \"redraw\": 1}}",
            "performer.redraw");
    /* model.short_conv: its range, and the mixers that do not take it, by name and layer */
    refused("{\"model\": {\"short_conv\": 65}}", "model.short_conv");
    refused("{\"model\": {\"short_conv\": -1}}", "model.short_conv");
    refused("{\"model\": {\"mixer\": \"mamba\", \"short_conv\": 4}}", "model.short_conv");
    ck_assert(strstr(gma_error(), "no layer's mixer takes it (mamba keeps its own convolution)"));
    /* a layer with its own convolution is left as it is where another layer takes it (Zoology's
     * baseconv layer before the mixer, the short convolution in the mixer) */
    {
        Config z;
        cfg_defaults(&z);
        ck_assert_int_eq(cfg_load_text(&z, "{\"model\": {\"mixer\": [\"baseconv\",\"gma\"], \"n_layers\": 2, \"short_conv\": 4}}", "t"), 0);
        ck_assert_msg(cfg_validate(&z) == 0, "%s", gma_error());
        ck_assert_int_eq(cfg_load_text(&z, "{\"model\": {\"mixer\": [\"mamba\",\"linear\"], \"n_layers\": 2, \"short_conv\": 3}}", "t"), 0);
        ck_assert_msg(cfg_validate(&z) == 0, "%s", gma_error());
    }
    refused("{\"model\": {\"mixer\": [\"baseconv\",\"mamba\"], \"n_layers\": 2, \"short_conv\": 4}}", "model.short_conv");
    refused("{\"model\": {\"mixer\": [\"gma\", \"auto\", \"gma\", \"gma\"], \"short_conv\": 4}}", "model.short_conv");
    ck_assert(strstr(gma_error(), "mixer \"auto\" (layer 1)"));
    ck_assert(strstr(gma_error(), "gma, sdpa, sdpa_ref, linear, performer"));
    refused("{\"model\": {\"mixer\": \"gated\", \"short_conv\": 2}}", "model.short_conv");
    refused("{\"model\": {\"mixer\": \"linformer\", \"causal\": 0, \"short_conv\": 4}, \"linformer\": {\"k\": 64}}",
            "model.short_conv");
    Config c;
    cfg_defaults(&c);
    ck_assert_int_eq(cfg_load_text(&c, "{\"model\": {\"mixer\": [\"sdpa\",\"gma\",\"gma\",\"gma\"]}}", "t"), 0);
    ck_assert_int_eq(cfg_validate(&c), 0);
    ck_assert_int_eq(cfg_load_text(&c, "{\"model\": {\"mixer\": \"linformer\", \"causal\": 0}, \"linformer\": {\"k\": 64}}", "t"), 0);
    ck_assert_msg(cfg_validate(&c) == 0, "%s", gma_error());
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("baseline mixers (float64 gradient checks)");
    TCase *tc = tcase_create("mixers");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_sdpa_ref_causal);
    tcase_add_test(tc, test_sdpa_ref_bidir);
    tcase_add_test(tc, test_sdpa_ref_causal_padded);
    tcase_add_test(tc, test_sdpa_ref_bidir_padded);
    tcase_add_test(tc, test_linear_causal);
    tcase_add_test(tc, test_linear_bidir);
    tcase_add_test(tc, test_linear_causal_padded);
    tcase_add_test(tc, test_linear_bidir_padded);
    tcase_add_test(tc, test_performer_causal);
    tcase_add_test(tc, test_performer_bidir);
    tcase_add_test(tc, test_performer_causal_padded);
    tcase_add_test(tc, test_performer_bidir_padded);
    tcase_add_test(tc, test_linformer_bidir);
    tcase_add_test(tc, test_linformer_bidir_padded);
    tcase_add_test(tc, test_performer_relu_causal);
    tcase_add_test(tc, test_performer_relu_bidir);
    tcase_add_test(tc, test_performer_relu_causal_padded);
    tcase_add_test(tc, test_performer_relu_bidir_padded);
    tcase_add_test(tc, test_performer_relu_direct);
    tcase_add_test(tc, test_linformer_shared_bidir);
    tcase_add_test(tc, test_linformer_shared_bidir_padded);
    tcase_add_test(tc, test_linformer_shared_equals_tied);
    tcase_add_test(tc, test_mamba_causal);
    tcase_add_test(tc, test_baseconv_causal);
    tcase_add_test(tc, test_baseconv_act);
    tcase_add_test(tc, test_baseconv_direct);
    tcase_add_test(tc, test_auto_both_paths);
    tcase_add_test(tc, test_tiled_vs_ref);
    tcase_add_test(tc, test_short_conv_mixers);
    tcase_add_test(tc, test_sdpa_window);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("models");
    tcase_set_timeout(tm, 300);
    tcase_add_test(tm, test_model_sdpa_linear);
    tcase_add_test(tm, test_model_sdpa_window);
    tcase_add_test(tm, test_model_mamba_nomlp);
    tcase_add_test(tm, test_model_performer_linformer);
    tcase_add_test(tm, test_model_lra_variants);
    tcase_add_test(tm, test_model_auto_gma);
    tcase_add_test(tm, test_model_short_conv);
    tcase_add_test(tm, test_model_baseconv);
    tcase_add_test(tm, test_causal_baselines);
    tcase_add_test(tm, test_performer_redraw);
    tcase_add_test(tm, test_config_refusals);
    suite_add_tcase(s, tm);
    return s;
}

GMA_TEST_MAIN()
