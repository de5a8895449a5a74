/* test64_gated.c: finite-difference gradient checks (float64 build) of the whole gated
 * layer (mixer "gated": y = g sdpa(x) + (1 - g) gma(x) per head, docs/model.md §3.7):
 * the input, the shared projections, GMA's components and the gate logits, causal and
 * bidirectional, padded or not, with gates away from 1/2, with the diversity loss and the
 * Dirichlet prior of its GMA path, and with K per layer. */
#include <string.h>

#include "gradcheck.h"
#include "testutil.h"

static void gated_case(const char *label, const char *sets, int causal, int padded) {
    Config cfg = tu_tiny_config("gated");
    tu_apply_sets(&cfg, sets);
    GcMix c;
    Rng rng;
    rng_seed(&rng, 11 + causal + 2 * padded);
    gc_mix_create(&c, &cfg, "gated", &rng);
    int gate = -1;
    for (int i = 0; i < c.pt.n; i++) {
        if (!strcmp(c.pt.t[i].name, "blocks.0.mixer.gate")) gate = i;
        if (strstr(c.pt.t[i].name, "prior_logits") || gate == i) gc_fill(c.params + c.pt.t[i].offset, c.pt.t[i].numel, &rng, 0.8);
    }
    ck_assert_msg(gate >= 0, "no gate tensor");
    ck_assert_int_eq(c.pt.t[gate].numel, 2); /* one per head */
    gc_mix_batch(&c, 2, 7, causal, padded ? gc_pad_mask : NULL, &rng);
    c.w = cfg_num(&cfg, "gma.div_weight");
    c.ctx.aux_scale = 1;
    if (cfg_num(&cfg, "gma.dirichlet_weight") == 0) { /* with the prior the objective has a term gc_mix_loss lacks */
        free(gc_mix_check(&c, label));
    } else { /* the prior's own check is test64_dirichlet; here: it does not change what the gate gets */
        gc_mix_loss(&c);
        real *dh = xcalloc(c.n, sizeof(real));
        c.m->vt->backward(c.m, &c.ctx, dh, c.r, c.h, c.params, c.grads, c.act, c.scratch);
        gc_assert_grad(label, "gate", gc_mix_loss, &c, c.params + c.pt.t[gate].offset, c.grads + c.pt.t[gate].offset, 2);
        free(dh);
    }
    gc_mix_free(&c);
}

static const struct {
    const char *label, *sets;
    int causal, padded;
} cases[] = {
    {"gated causal", "", 1, 0},
    {"gated bidir", "", 0, 0},
    {"gated causal padded", "", 1, 1},
    {"gated bidir padded", "gma.n_components=5", 0, 1},
    {"gated shared div", "gma.shared_components=true;gma.div_weight=0.3", 1, 0},
    {"gated dirichlet", "gma.dirichlet_weight=0.5", 1, 0},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };
START_TEST(test_gated) { gated_case(cases[_i].label, cases[_i].sets, cases[_i].causal, cases[_i].padded); }
END_TEST

/* the whole model: gated layers in a language model's objective */
START_TEST(test_gated_model) {
    Config cfg = tu_tiny_config("gated");
    tu_apply_sets(&cfg, "model.mixer=gated,sdpa");
    GcModel c;
    gc_model_setup(&c, &cfg);
    gc_model_check(&c, "model.mixer=gated,sdpa", "2-layer model gated,sdpa");
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("gated attention + GMA layer (float64 gradient checks)");
    TCase *tc = tcase_create("gated");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_gated, 0, N_CASES);
    tcase_add_test(tc, test_gated_model);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
