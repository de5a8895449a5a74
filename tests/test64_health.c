/* test64_health.c: finite-difference gradient checks (float64 build) of GMA's second design
 * and of the diversity loss: softmax routing (causal, bidirectional, padded, shared,
 * orthogonal init), the EMA-memory variant (gradient through gamma_q only), the diversity
 * loss in token and batch form on both routings, and a whole 2-layer model with the
 * diversity loss in its objective. */
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "testutil.h"

static Config tiny_config(void) { return tu_tiny_config("gma"); }

/* sets: "a.b=v;c.d=w" config assignments */
static void mixer_case(const char *label, const char *sets, int causal, int padded) {
    Config cfg = tiny_config();
    tu_apply_sets(&cfg, sets);
    GcMix c;
    Rng rng;
    rng_seed(&rng, 42 + causal + 2 * padded);
    gc_mix_create(&c, &cfg, "gma", &rng);
    /* give the biases and router something to do */
    for (int i = 0; i < c.pt.n; i++)
        if (strstr(c.pt.t[i].name, "router.bias") || strstr(c.pt.t[i].name, "prior_logits"))
            gc_fill(c.params + c.pt.t[i].offset, c.pt.t[i].numel, &rng, 0.5);
    gc_mix_batch(&c, 2, 7, causal, padded ? gc_pad_mask : NULL, &rng);
    c.w = cfg_num(&cfg, "gma.div_weight");
    c.ctx.aux_scale = c.w != 0 ? 1 : 0;
    free(gc_mix_check(&c, label)); /* buffers (the EMA memory) get no gradient */
    gc_mix_free(&c);
}

static const struct {
    const char *label, *sets;
    int causal, padded;
} mixer_cases[] = {
    {"softmax causal", "gma.routing=softmax", 1, 0},
    {"softmax bidir padded", "gma.routing=softmax;gma.temperature=0.7", 0, 1},
    {"softmax shared orthogonal", "gma.routing=softmax;gma.shared_components=true;gma.init=orthogonal", 1, 1},
    {"ema gaussian causal", "gma.memory=ema", 1, 0},
    {"ema softmax div-batch padded", "gma.memory=ema;gma.routing=softmax;gma.div_weight=0.3;gma.div_mode=batch", 0, 1},
    {"div-token gaussian causal", "gma.div_weight=0.2", 1, 0},
    {"div-batch gaussian padded", "gma.div_weight=0.5;gma.div_mode=batch", 0, 1},
    {"div-token softmax padded", "gma.routing=softmax;gma.div_weight=0.2", 1, 1},
};
enum { N_MIXER_CASES = sizeof mixer_cases / sizeof mixer_cases[0] };
/* one Check loop test per row (_i: the row) */
START_TEST(test_mixer) { mixer_case(mixer_cases[_i].label, mixer_cases[_i].sets, mixer_cases[_i].causal, mixer_cases[_i].padded); }
END_TEST

/* ---------------- whole model with the diversity loss ---------------- */
static void model_case(const char *sets) {
    Config cfg = tiny_config();
    tu_apply_sets(&cfg, sets);
    GcModel c;
    gc_model_setup(&c, &cfg);
    gc_model_loss(&c);
    ck_assert(model_aux_loss(&c.m, NULL) > 0);
    char nm[160];
    snprintf(nm, sizeof nm, "2-layer model %s", sets);
    gc_model_check(&c, sets, nm);
}

START_TEST(test_model_softmax_div) { model_case("gma.routing=softmax;gma.div_weight=0.1"); }
END_TEST
START_TEST(test_model_gaussian_div_batch) { model_case("model.mixer=sdpa,gma;gma.div_weight=0.1;gma.div_mode=batch"); }
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("GMA second design and diversity loss (float64 gradient checks)");
    TCase *tc = tcase_create("mixer");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_mixer, 0, N_MIXER_CASES);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("model");
    tcase_set_timeout(tm, 300);
    tcase_add_test(tm, test_model_softmax_div);
    tcase_add_test(tm, test_model_gaussian_div_batch);
    suite_add_tcase(s, tm);
    return s;
}

GMA_TEST_MAIN()
