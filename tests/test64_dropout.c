/* test64_dropout.c: float64 gradient checks with dropout on (docs/model.md §8). The mask
 * is a pure function of (seed, step, micro-batch, layer, site, element), so every forward
 * of a check draws the same one: the finite differences see a fixed mask. Whole models
 * with every site on (embedding sum, attention probabilities of the tiled sdpa and of
 * sdpa_ref, mixer output, MLP hidden activation, MLP output), and the attention dropout
 * of each mixer that has it (sdpa, sdpa_ref, linformer) on one layer, causal or not,
 * padded or not. Each case also checks that the dropout acted. */
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "testutil.h"

static const char *ALL_SITES = "model.dropout=0.3;model.attn_dropout=0.3;model.mlp_hidden_dropout=0.3";

static void model_case(const char *mixer, const char *sets) {
    Config cfg = tu_tiny_config(mixer);
    tu_apply_sets(&cfg, sets);
    GcModel c;
    gc_model_setup(&c, &cfg);
    /* the dropout acts: the training loss differs from the evaluation loss */
    LossStats tr, ev;
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.tgt, 2, 7, NULL, 0, &tr, 1, 0), 0);
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.tgt, 2, 7, NULL, 0, &ev, 0, 0), 0);
    ck_assert_msg(fabs(tr.loss_sum - ev.loss_sum) > 1e-6, "%s: dropout changed nothing", mixer);
    char nm[160];
    snprintf(nm, sizeof nm, "2-layer %s model, %s", mixer, sets);
    gc_model_check(&c, mixer, nm);
}

START_TEST(test_model_sdpa_all_sites) { model_case("sdpa", ALL_SITES); }
END_TEST
START_TEST(test_model_sdpa_ref_all_sites) { model_case("sdpa_ref", ALL_SITES); }
END_TEST
START_TEST(test_model_gma_residual_sites) { model_case("gma", "model.dropout=0.3;model.mlp_hidden_dropout=0.3"); }
END_TEST
START_TEST(test_model_linformer_bidir) {
    model_case("linformer", "model.causal=0;linformer.k=4;model.dropout=0.3;model.attn_dropout=0.3;model.mlp_hidden_dropout=0.3");
}
END_TEST

/* one mixer layer with attention dropout: a fixed mask for the (B 2, N 7) batch, as a rank
 * holding sequences 1 and 2 of a global batch of 3 */
static void attn_case(const char *name, int causal, int padded) {
    Config cfg = tu_tiny_config(name);
    if (!strcmp(name, "linformer")) tu_apply_sets(&cfg, "model.causal=0;linformer.k=4");
    GcMix c;
    gc_mix_setup(&c, &cfg, name, 2, 7, causal, padded ? gc_pad_mask : NULL, 91 + causal + 2 * padded);
    GmaDrop g = {.key = {5u, 0u}, .c2 = 3, .c3 = GMA_DROP_ATTN, .keep_below = gma_drop_threshold(0.4),
                 .scale = 1 / 0.6, .seg_local = 2, .seg_global = 3, .first = 1};
    /* the dropout acts */
    gc_mix_loss(&c);
    real *y0 = xcalloc(c.n, sizeof(real));
    memcpy(y0, c.y, c.n * sizeof(real));
    c.ctx.attn_drop = &g;
    gc_mix_loss(&c);
    double diff = 0;
    for (size_t i = 0; i < c.n; i++) diff = fmax(diff, fabs(c.y[i] - y0[i]));
    ck_assert_msg(diff > 1e-6, "%s: attention dropout changed nothing", name);
    free(y0);
    char label[128];
    snprintf(label, sizeof label, "%s %s%s attention dropout 0.4", name, causal ? "causal" : "bidir", padded ? " padded" : "");
    free(gc_mix_check(&c, label));
    gc_mix_free(&c);
}
START_TEST(test_attn_sdpa) {
    for (int k = 0; k < 4; k++) attn_case("sdpa", k & 1, k >> 1);
}
END_TEST
START_TEST(test_attn_sdpa_ref) {
    for (int k = 0; k < 4; k++) attn_case("sdpa_ref", k & 1, k >> 1);
}
END_TEST
START_TEST(test_attn_linformer) {
    attn_case("linformer", 0, 0);
    attn_case("linformer", 0, 1);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("dropout (float64 gradient checks with a fixed mask)");
    TCase *tc = tcase_create("dropout");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_model_sdpa_all_sites);
    tcase_add_test(tc, test_model_sdpa_ref_all_sites);
    tcase_add_test(tc, test_model_gma_residual_sites);
    tcase_add_test(tc, test_model_linformer_bidir);
    tcase_add_test(tc, test_attn_sdpa);
    tcase_add_test(tc, test_attn_sdpa_ref);
    tcase_add_test(tc, test_attn_linformer);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
