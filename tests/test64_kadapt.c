/* test64_kadapt.c: the structural adaptation of K (train/kadapt.h, docs/model.md §4.2) adds
 * no gradient: it changes the shapes and the values of the parameters between steps. What
 * is checked here (float64 build) is the rebuilt model: after a split in layer 0 (K 3 -> 4)
 * and a prune in layer 1 (K 3 -> 2), every trained parameter of the 2-layer model against
 * central finite differences, at the new K. */
#include <string.h>

#include "gradcheck.h"
#include "testutil.h"
#include "train/kadapt.h"

START_TEST(test_rebuilt_model_gradients) {
    Config cfg = tu_tiny_config("gma");
    tu_apply_sets(&cfg, "gma.adapt_every=1;gma.split_above=1.5;gma.prune_below=0.2;gma.merge_dist=0;gma.k_max=8");
    GcModel c;
    gc_model_setup(&c, &cfg);
    int H = c.m.H, K = 3;
    double l0[6], l1[6]; /* [H, K] loads: layer 0 component 0 overloaded, layer 1 component 2 unused */
    for (int h = 0; h < H; h++) {
        l0[h * K + 0] = 0.8, l0[h * K + 1] = 0.1, l0[h * K + 2] = 0.1;
        l1[h * K + 0] = 0.5, l1[h * K + 1] = 0.5, l1[h * K + 2] = 0;
    }
    double *load[2] = {l0, l1};
    KadaptTally t;
    ck_assert_int_eq(kadapt_apply(&c.m, load, 1, NULL, &t), 1);
    ck_assert_int_eq(t.split, 2);
    ck_assert_int_eq(t.pruned, 2);
    ck_assert_int_eq(c.m.pt.t[pt_find(&c.m.pt, "blocks.0.mixer.gma.mu")].shape[1], 4);
    ck_assert_int_eq(c.m.pt.t[pt_find(&c.m.pt, "blocks.1.mixer.gma.prior_logits")].shape[1], 2);
    gc_model_check(&c, "kadapt", "2-layer gma model rebuilt at K 4, 2");
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("kadapt64");
    TCase *tc = tcase_create("kadapt64");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_rebuilt_model_gradients);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
