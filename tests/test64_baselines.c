/* test64_baselines.c: finite-difference gradient checks (float64 build) of the baseline
 * mixers (docs/model.md §3.5): sdpa_ref, linear, performer (causal and bidirectional, with and
 * without key padding), linformer (bidirectional, with padding), mamba (causal, two scan
 * chunks and two channel groups), auto (both paths); every parameter element and the
 * input. Also: the tiled sdpa against sdpa_ref over several tiles (forward and every
 * gradient, one-pass and two-pass backward), causality of each causal mixer inside a
 * model, 2-layer models with mixer lists ("sdpa,linear", "mamba" without MLP,
 * "performer,linformer" bidirectional, "auto,gma"), the Performer redraw schedule and the
 * config checks that refuse bad mixer settings naming the key. */
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
START_TEST(test_linformer_bidir) { mixer_case("linformer", 0, 0); }
END_TEST
START_TEST(test_linformer_bidir_padded) { mixer_case("linformer", 0, 1); }
END_TEST
START_TEST(test_mamba_causal) { mixer_case("mamba", 1, 0); }
END_TEST
START_TEST(test_auto_both_paths) {
    Config cfg = tiny_config("auto");
    cfg.model.auto_threshold = 8; /* N = 7 < 8: sdpa */
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
    cfg.model.auto_threshold = 4; /* N = 7 >= 4: gma */
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
START_TEST(test_model_mamba_nomlp) { model_case("model.mixer=mamba", "model.mlp=false", NULL); }
END_TEST
START_TEST(test_model_performer_linformer) { model_case("model.mixer=performer,linformer", "model.causal=0", NULL); }
END_TEST
START_TEST(test_model_auto_gma) { model_case("model.mixer=auto,gma", "model.auto_threshold=4", NULL); }
END_TEST

/* ---------------- causality inside a model ---------------- */
static void causal_case(const char *mixer, double tol) {
    Config cfg = tiny_config(mixer);
    if (!strcmp(mixer, "mamba")) cfg.model.mlp = 0;
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    gc_causal_case(&cfg, mixer, tol);
}
START_TEST(test_causal_baselines) {
    causal_case("sdpa", 0);
    causal_case("sdpa_ref", 0);
    causal_case("linear", 0);
    causal_case("mamba", 0);
    causal_case("auto", 0);
    causal_case("performer", 1e-13); /* the key stabiliser cancels exactly; only rounding remains */
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
    refused("{\"model\": {\"mixer\": \"linformer\", \"causal\": 0, \"max_seq_len\": 128}, \"train\": {\"seq_len\": 128}}",
            "linformer.k");
    refused("{\"model\": {\"d_model\": 100, \"n_heads\": 3}}", "model.d_model");
    refused("{\"mamba\": {\"d_state\": 0}}", "mamba.d_state");
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
    tcase_add_test(tc, test_mamba_causal);
    tcase_add_test(tc, test_auto_both_paths);
    tcase_add_test(tc, test_tiled_vs_ref);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("models");
    tcase_set_timeout(tm, 300);
    tcase_add_test(tm, test_model_sdpa_linear);
    tcase_add_test(tm, test_model_mamba_nomlp);
    tcase_add_test(tm, test_model_performer_linformer);
    tcase_add_test(tm, test_model_auto_gma);
    tcase_add_test(tm, test_causal_baselines);
    tcase_add_test(tm, test_performer_redraw);
    tcase_add_test(tm, test_config_refusals);
    suite_add_tcase(s, tm);
    return s;
}

GMA_TEST_MAIN()
