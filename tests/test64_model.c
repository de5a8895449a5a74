/* test64_model.c: finite-difference gradient checks (float64 build) of the mixers (sdpa
 * and gma, causal and bidirectional, with and without key padding) and of a whole 2-layer
 * model (every parameter element), plus causality: changing a future token leaves
 * earlier outputs and losses unchanged. */
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "testutil.h"

#define tiny_config tu_tiny_config

/* ---------------- one mixer layer ---------------- */
typedef struct {
    Mixer *m;
    ParamTable pt;
    real *params, *grads, *act, *scratch, *h, *y, *r;
    MixerCtx ctx;
    size_t n;
} MixCtx;

static double mix_loss(void *p) {
    MixCtx *c = p;
    c->m->vt->forward(c->m, &c->ctx, c->y, c->h, c->params, c->act, c->scratch);
    return gc_dot(c->y, c->r, c->n);
}

static void mixer_case(const char *name, int causal, int padded) {
    Config cfg = tiny_config(name);
    MixCtx c;
    memset(&c, 0, sizeof c);
    int B = 2, N = 7, D = cfg.model.d_model;
    c.m = mixer_find(name)->create(&cfg, 0, &c.pt, "blocks.0.mixer");
    Rng rng;
    rng_seed(&rng, 42 + causal + 2 * padded);
    c.params = xcalloc(c.pt.total, sizeof(real));
    c.grads = xcalloc(c.pt.total, sizeof(real));
    pt_init(&c.pt, c.params, &rng);
    if (c.m->vt->init) c.m->vt->init(c.m, c.params, &rng);
    c.act = xcalloc(c.m->vt->act_size(c.m, B, N), sizeof(real));
    c.scratch = xcalloc(c.m->vt->scratch_size(c.m, B, N), sizeof(real));
    c.n = (size_t)B * N * D;
    c.h = xcalloc(c.n, sizeof(real));
    c.y = xcalloc(c.n, sizeof(real));
    c.r = xcalloc(c.n, sizeof(real));
    gc_fill(c.h, c.n, &rng, 1);
    gc_fill(c.r, c.n, &rng, 1);
    static uint8_t mask[14] = {1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1}; /* sequence 0: 2 pad tokens at the end */
    c.ctx = (MixerCtx){.B = B, .N = N, .causal = causal, .keymask = padded ? mask : NULL, .training = 1};
    mix_loss(&c);
    real *dh = xcalloc(c.n, sizeof(real));
    c.m->vt->backward(c.m, &c.ctx, dh, c.r, c.h, c.params, c.grads, c.act, c.scratch);
    char nm[128];
    snprintf(nm, sizeof nm, "%s %s%s dh", name, causal ? "causal" : "bidir", padded ? " padded" : "");
    GC_ASSERT(nm, gc_check(mix_loss, &c, c.h, dh, c.n));
    for (int i = 0; i < c.pt.n; i++) {
        ParamInfo *p = &c.pt.t[i];
        snprintf(nm, sizeof nm, "%s %s%s %s", name, causal ? "causal" : "bidir", padded ? " padded" : "", p->name + 15);
        GC_ASSERT(nm, gc_check(mix_loss, &c, c.params + p->offset, c.grads + p->offset, p->numel));
    }
    if (padded) { /* padded keys: changing h at a padded position leaves other rows' outputs unchanged */
        mix_loss(&c);
        real *y0 = xcalloc(c.n, sizeof(real));
        memcpy(y0, c.y, c.n * sizeof(real));
        for (int e = 0; e < D; e++) c.h[5 * D + e] += 3;
        mix_loss(&c);
        for (int n = 0; n < N; n++)
            if (n != 5)
                for (int e = 0; e < D; e++) ck_assert(fabs(c.y[n * D + e] - y0[n * D + e]) < 1e-12);
        free(y0);
    }
    c.m->vt->destroy(c.m);
    pt_free(&c.pt);
}

START_TEST(test_sdpa_causal) { mixer_case("sdpa", 1, 0); }
END_TEST
START_TEST(test_sdpa_bidir) { mixer_case("sdpa", 0, 0); }
END_TEST
START_TEST(test_sdpa_bidir_padded) { mixer_case("sdpa", 0, 1); }
END_TEST
START_TEST(test_sdpa_causal_padded) { mixer_case("sdpa", 1, 1); }
END_TEST
START_TEST(test_gma_causal) { mixer_case("gma", 1, 0); }
END_TEST
START_TEST(test_gma_bidir) { mixer_case("gma", 0, 0); }
END_TEST
START_TEST(test_gma_bidir_padded) { mixer_case("gma", 0, 1); }
END_TEST
START_TEST(test_gma_causal_padded) { mixer_case("gma", 1, 1); }
END_TEST

/* ---------------- whole model ---------------- */
static void model_case(const char *mixers) {
    Config cfg = tiny_config("gma");
    ck_assert_int_eq(cfg_set(&cfg, mixers), 0);
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    GcModel c;
    gc_model_setup(&c, &cfg);
    char nm[96];
    snprintf(nm, sizeof nm, "2-layer model %s (%d tensors)", mixers + 12, c.m.pt.n);
    gc_model_check(&c, mixers, nm);
}

START_TEST(test_model_gma) { model_case("model.mixer=gma"); }
END_TEST
START_TEST(test_model_hybrid) { model_case("model.mixer=sdpa,gma"); }
END_TEST

/* ---------------- causality ---------------- */
static void causal_case(const char *mixer) {
    Config cfg = tiny_config(mixer);
    Model m;
    ck_assert_int_eq(model_build(&m, &cfg), 0);
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
    for (int i = 0; i < 6; i++) {
        ck_assert(m.loss_rows[i] == loss0[i]);
        for (int v = 0; v < m.V; v++) ck_assert(m.logits[i * m.V + v] == logit0[i * m.V + v]);
    }
    int changed = 0;
    for (int v = 0; v < m.V; v++) changed |= m.logits[6 * m.V + v] != logit0[6 * m.V + v];
    ck_assert_msg(changed, "position 6 must see its own token");
    free(loss0);
    free(logit0);
    model_free(&m);
}
START_TEST(test_causal_gma) { causal_case("gma"); }
END_TEST
START_TEST(test_causal_sdpa) { causal_case("sdpa"); }
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("mixers and model (float64 gradient checks)");
    TCase *tc = tcase_create("mixers");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_sdpa_causal);
    tcase_add_test(tc, test_sdpa_bidir);
    tcase_add_test(tc, test_sdpa_bidir_padded);
    tcase_add_test(tc, test_sdpa_causal_padded);
    tcase_add_test(tc, test_gma_causal);
    tcase_add_test(tc, test_gma_bidir);
    tcase_add_test(tc, test_gma_bidir_padded);
    tcase_add_test(tc, test_gma_causal_padded);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("model");
    tcase_set_timeout(tm, 300);
    tcase_add_test(tm, test_model_gma);
    tcase_add_test(tm, test_model_hybrid);
    tcase_add_test(tm, test_causal_gma);
    tcase_add_test(tm, test_causal_sdpa);
    suite_add_tcase(s, tm);
    return s;
}

GMA_TEST_MAIN()
