/* test64_model.c: finite-difference gradient checks (float64 build) of the mixers (sdpa
 * and gma, causal and bidirectional, with and without key padding, gradcheck.h
 * gc_mixer_case: also the accumulate contract and padding isolation) and of a whole 2-layer
 * model (every parameter element), plus causality: changing a future token leaves
 * earlier outputs and losses unchanged. */
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "testutil.h"

#define tiny_config tu_tiny_config

/* ---------------- one mixer layer ---------------- */
static void mixer_case(const char *name, int causal, int padded) {
    Config cfg = tiny_config(name);
    gc_mixer_case(&cfg, name, causal, padded);
}

GC_MIXER_TESTS(sdpa, "sdpa")
GC_MIXER_TESTS(gma, "gma")

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
    gc_causal_case(&cfg, mixer, 0);
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
