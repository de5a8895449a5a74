/* test_xmqar.c: the cross-sequence MQAR source (data/lm/xmqar.h): layout (pairs at the
 * start of the context, zeros after them, every query a context key whose target is its
 * value, each P queries a permutation of the pairs), determinism by (seed, split, index),
 * the splits differing, LmData serving it for training and evaluation, and the refusals
 * naming their keys. */
#include <string.h>

#include "data/lm/lmdata.h"
#include "data/lm/xmqar.h"
#include "testutil.h"

static Config xq_config(const char *sets) {
    Config c;
    cfg_defaults(&c);
    tu_apply_sets(&c, "data.source=xmqar;model.max_seq_len=64;train.seq_len=40");
    if (sets && *sets) tu_apply_sets(&c, sets);
    return c;
}

START_TEST(test_xmqar_layout) {
    Config c = xq_config("data.xmqar_vocab=40;data.xmqar_pairs=6;data.xmqar_ctx=16");
    XmqarTask t;
    ck_assert_int_eq(xmqar_init(&t, &c, 40), 0);
    int32_t tok[40], tgt[40];
    for (uint64_t i = 0; i < 200; i++) {
        xmqar_example(&t, (int)(i % 3), i, tok, tgt);
        int val_of[40];
        for (int k = 0; k < 40; k++) val_of[k] = -1;
        for (int p = 0; p < 6; p++) {
            int k = tok[2 * p], v = tok[2 * p + 1];
            ck_assert(k >= 1 && k < 20 && v >= 20 && v < 40);
            ck_assert_msg(val_of[k] < 0, "key %d twice", k);
            val_of[k] = v;
        }
        for (int p = 12; p < 16; p++) ck_assert_int_eq(tok[p], 0);
        for (int p = 0; p < 16; p++) ck_assert_int_eq(tgt[p], -1);
        int seen = 0;
        for (int j = 0; j < 24; j++) {
            int k = tok[16 + j];
            ck_assert_msg(k >= 1 && k < 20 && val_of[k] >= 0, "query %d: %d is no context key", j, k);
            ck_assert_int_eq(tgt[16 + j], val_of[k]);
            for (int p = 0; p < 6; p++) seen |= (tok[2 * p] == k) << p;
            if (j % 6 == 5) { /* each block of P queries asks every pair once */
                ck_assert_int_eq(seen, 63);
                seen = 0;
            }
        }
    }
}
END_TEST

START_TEST(test_xmqar_determinism) {
    Config c = xq_config(NULL);
    XmqarTask t;
    ck_assert_int_eq(xmqar_init(&t, &c, 40), 0);
    int32_t a[40], ta[40], b[40], tb[40];
    xmqar_example(&t, 1, 17, a, ta);
    xmqar_example(&t, 1, 17, b, tb);
    ck_assert(!memcmp(a, b, sizeof a) && !memcmp(ta, tb, sizeof ta));
    xmqar_example(&t, 2, 17, b, tb);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    xmqar_example(&t, 1, 18, b, tb);
    ck_assert(memcmp(a, b, sizeof a) != 0);
}
END_TEST

START_TEST(test_xmqar_lmdata) {
    Config c = xq_config("data.xmqar_valid=5");
    LmData d;
    ck_assert_msg(lmdata_open(&d, &c) == 0, "%s", gma_error());
    ck_assert(d.is_xmqar);
    ck_assert_int_eq(d.vocab, 64);
    ck_assert_int_eq(lmdata_eval_windows(&d, SPLIT_VALID, 40), 5);
    int32_t tok[3 * 40], tgt[3 * 40], want[40], wt[40];
    Rng r;
    rng_seed(&r, 1);
    lmdata_train_batch(&d, &r, 2, 3, 40, tok, tgt);
    xmqar_example(&d.xmqar, SPLIT_TRAIN, 2 * 3 + 1, want, wt);
    ck_assert(!memcmp(tok + 40, want, sizeof want) && !memcmp(tgt + 40, wt, sizeof wt));
    ck_assert_int_eq(lmdata_eval_batch(&d, SPLIT_VALID, 1, 3, 40, tok, tgt), 2);
    xmqar_example(&d.xmqar, SPLIT_VALID, 4, want, wt);
    ck_assert(!memcmp(tok + 40, want, sizeof want));
    for (int i = 0; i < 40; i++) ck_assert_int_eq(tgt[80 + i], -1); /* past the split: padding */
    lmdata_close(&d);
}
END_TEST

static void refused(const char *sets, const char *key) {
    Config c;
    cfg_defaults(&c);
    tu_apply_sets(&c, "model.max_seq_len=64;train.seq_len=40");
    ck_assert(cfg_set(&c, "data.source=xmqar") == 0);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", sets);
    char *sv = NULL;
    for (char *s = strtok_r(buf, ";", &sv); s; s = strtok_r(NULL, ";", &sv)) ck_assert(cfg_set(&c, s) == 0);
    ck_assert(cfg_validate(&c) != 0);
    ck_assert_msg(strstr(gma_error(), key) != NULL, "%s: %s", key, gma_error());
}

START_TEST(test_xmqar_refusals) {
    refused("data.xmqar_vocab=41", "key data.xmqar_vocab");
    refused("data.xmqar_vocab=16;data.xmqar_pairs=8", "key data.xmqar_pairs");
    refused("data.xmqar_pairs=9;data.xmqar_ctx=16", "key data.xmqar_pairs");
    refused("data.xmqar_ctx=40", "key data.xmqar_ctx");
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("cross-sequence MQAR source");
    TCase *tc = tcase_create("xmqar");
    tcase_add_test(tc, test_xmqar_layout);
    tcase_add_test(tc, test_xmqar_determinism);
    tcase_add_test(tc, test_xmqar_lmdata);
    tcase_add_test(tc, test_xmqar_refusals);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
