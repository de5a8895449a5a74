/* test_mqar.c: the Zoology MQAR generator (data/lm/mqar.h): structure of an example,
 * the gaps' power law, the filler, determinism, refusals, and LmData serving it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/lm/lmdata.h"
#include "data/lm/mqar.h"
#include "testutil.h"

static void setup(MqarTask *t, int V, double a, const char *filler, const char *lens, const char *pairs) {
    ck_assert_int_eq(mqar_init(t, V, a, !strcmp(filler, "zero") ? MQAR_FILLER_ZERO : MQAR_FILLER_RANDOM, 7), 0);
    ck_assert_int_eq(mqar_set_split(t, 0, "data.mqar_lengths", lens, "data.mqar_pairs", pairs, 0), 0);
    ck_assert_int_eq(mqar_set_split(t, 1, "data.mqar_lengths", lens, "data.mqar_pairs", pairs, 0), 0);
    ck_assert_int_eq(mqar_set_split(t, 2, "data.mqar_test_lengths", lens, "data.mqar_test_pairs", pairs, 0), 0);
}

/* keys from [1, V/2), values from [V/2, V), each distinct within the example; each key
 * queried exactly once at an even offset after the pairs with its value as target; no
 * other position scored; the padding past the entry's length is 0 / -1 */
START_TEST(test_mqar_structure) {
    MqarTask t;
    setup(&t, 8192, 0.01, "random", "64,128,256", "4,8,16");
    int N = 300;
    int32_t tok[300], tgt[300];
    for (int e = 0; e < 3; e++)
        for (uint64_t i = 0; i < 200; i++) {
            mqar_example(&t, 0, e, i, N, tok, tgt);
            int n = t.len[0][e], P = t.pairs[0][e], C = 2 * P, seen[16] = {0};
            for (int a = 0; a < P; a++) {
                ck_assert(tok[2 * a] >= 1 && tok[2 * a] < 4096);
                ck_assert(tok[2 * a + 1] >= 4096 && tok[2 * a + 1] < 8192);
                ck_assert_int_eq(tgt[2 * a], -1);
                ck_assert_int_eq(tgt[2 * a + 1], -1);
                for (int b = 0; b < a; b++) {
                    ck_assert_int_ne(tok[2 * a], tok[2 * b]);
                    ck_assert_int_ne(tok[2 * a + 1], tok[2 * b + 1]);
                }
            }
            int scored = 0;
            for (int p = C; p < n; p++) {
                if (tgt[p] < 0) continue;
                scored++;
                ck_assert_int_eq((p - C) % 2, 0);
                int k = -1;
                for (int a = 0; a < P; a++)
                    if (tok[2 * a] == tok[p]) k = a;
                ck_assert_msg(k >= 0, "query %d at %d is no context key", tok[p], p);
                ck_assert_int_eq(tgt[p], tok[2 * k + 1]);
                seen[k]++;
            }
            ck_assert_int_eq(scored, P);
            for (int a = 0; a < P; a++) ck_assert_int_eq(seen[a], 1);
            for (int p = n; p < N; p++) {
                ck_assert_int_eq(tok[p], 0);
                ck_assert_int_eq(tgt[p], -1);
            }
        }
}
END_TEST

/* the gap slot of a single pair follows p(g) ~ a g^(a-1) over (N-2)/2 slots: the largest
 * distance between the empirical and the exact distribution functions (Kolmogorov) stays
 * under 1.63 / sqrt(M) (the 1% critical value) for a fixed seed, and the same samples are
 * far from the uniform law that a = 1 gives */
START_TEST(test_mqar_power_law) {
    const int M = 20000, N = 64, space = (N - 2) / 2;
    double a_vals[2] = {0.01, 1.0};
    for (int ai = 0; ai < 2; ai++) {
        MqarTask t;
        setup(&t, 8192, a_vals[ai], "zero", "64", "1");
        int hist[31] = {0};
        int32_t tok[64], tgt[64];
        for (int i = 0; i < M; i++) {
            mqar_example(&t, 0, 0, (uint64_t)i, N, tok, tgt);
            int g = -1;
            for (int p = 2; p < N; p++)
                if (tgt[p] >= 0) g = (p - 2) / 2;
            ck_assert(g >= 0 && g < space);
            hist[g]++;
        }
        double p[31], u[31], cp = 0, cu = 0, ce = 0, d = 0, du = 0;
        mqar_power_law(a_vals[ai], space, p);
        mqar_power_law(1.0, space, u);
        for (int g = 0; g < space; g++) {
            cp += p[g], cu += u[g], ce += (double)hist[g] / M;
            d = fmax(d, fabs(ce - cp));
            du = fmax(du, fabs(ce - cu));
        }
        ck_assert_msg(d < 1.63 / sqrt(M), "a=%g: Kolmogorov distance %g", a_vals[ai], d);
        if (ai == 0) ck_assert_msg(du > 0.1, "a=0.01 looks uniform (distance %g)", du);
    }
    /* a = 0.01 puts the most weight on the first slot: p(0) / p(1) = 2^0.99 */
    double p[31];
    mqar_power_law(0.01, 31, p);
    ck_assert(fabs(p[0] / p[1] - pow(2.0, 0.99)) < 1e-12);
}
END_TEST

/* filler as Zoology's random_non_queries: uniform over the whole vocabulary [0, V), key
 * and value halves alike (so a filler token can repeat a context key; it is never scored);
 * "zero" leaves it 0 */
START_TEST(test_mqar_filler) {
    MqarTask t;
    setup(&t, 64, 1.0, "random", "32", "2");
    long low = 0, high = 0, zero = 0, n = 0;
    int32_t tok[32], tgt[32];
    for (uint64_t i = 0; i < 4000; i++) {
        mqar_example(&t, 0, 0, i, 32, tok, tgt);
        for (int p = 4; p < 32; p++) {
            if (tgt[p] >= 0) continue;
            ck_assert(tok[p] >= 0 && tok[p] < 64);
            n++, low += tok[p] < 32, high += tok[p] >= 32, zero += tok[p] == 0;
        }
    }
    /* each half holds half the filler (binomial sd sqrt(n)/2 ~ 160 of n ~ 104000) */
    ck_assert_msg(labs(low - n / 2) < 1000, "filler below V/2: %ld of %ld", low, n);
    ck_assert(zero > 0 && high > 0);
    setup(&t, 64, 1.0, "zero", "32", "2");
    mqar_example(&t, 0, 0, 5, 32, tok, tgt);
    for (int p = 4; p < 32; p++)
        if (tgt[p] < 0) ck_assert_int_eq(tok[p], 0);
}
END_TEST

/* an example is a function of (seed, split, entry, index) alone */
START_TEST(test_mqar_determinism) {
    MqarTask t, t2;
    setup(&t, 8192, 0.01, "random", "64,128", "4,8");
    setup(&t2, 8192, 0.01, "random", "64,128", "4,8");
    int32_t a[128], ag[128], b[128], bg[128];
    mqar_example(&t, 1, 1, 9, 128, a, ag);
    mqar_example(&t, 1, 0, 3, 128, b, bg); /* an unrelated draw in between */
    mqar_example(&t2, 1, 1, 9, 128, b, bg);
    ck_assert(!memcmp(a, b, sizeof a) && !memcmp(ag, bg, sizeof ag));
    mqar_example(&t, 2, 1, 9, 128, b, bg); /* another split: another example */
    ck_assert(memcmp(a, b, sizeof a));
    mqar_example(&t, 1, 1, 10, 128, b, bg);
    ck_assert(memcmp(a, b, sizeof a));
    t2.seed = 8;
    mqar_example(&t2, 1, 1, 9, 128, b, bg);
    ck_assert(memcmp(a, b, sizeof a));
    /* batches cycle over the training lengths; test at window N keeps to length N */
    ck_assert_int_eq(mqar_train_entry(&t, 0), 0);
    ck_assert_int_eq(mqar_train_entry(&t, 3), 1);
    ck_assert_int_eq(mqar_eval_entry(&t, 2, 0, 128), 1);
    ck_assert_int_eq(mqar_eval_entry(&t, 2, 1, 128), 1);
    ck_assert_int_eq(mqar_eval_entry(&t, 1, 1, 128), 1); /* valid: every length that fits */
    ck_assert_int_eq(mqar_eval_entry(&t, 1, 2, 128), 0);
    ck_assert_int_eq(mqar_eval_entry(&t, 2, 0, 100), 0);
    ck_assert_int_eq(mqar_eval_entry(&t, 2, 0, 32), -1);
}
END_TEST

/* Zoology's mixed test set repeats a length with other pair counts ((64, 4), (64, 8),
 * (64, 16), (128, 32)): a test at window 64 cycles over the three entries of length 64, each
 * example with its own pairs, and never takes the 128 one */
START_TEST(test_mqar_repeated_lengths) {
    MqarTask t;
    setup(&t, 8192, 0.01, "random", "64,64,64,128", "4,8,16,32");
    int32_t tok[128], tgt[128];
    for (uint64_t i = 0; i < 6; i++) {
        int e = mqar_eval_entry(&t, 2, i, 64);
        ck_assert_int_eq(e, (int)(i % 3));
        mqar_example(&t, 2, e, i, 64, tok, tgt);
        int scored = 0;
        for (int j = 0; j < 64; j++) scored += tgt[j] >= 0;
        ck_assert_int_eq(scored, 4 << e);
    }
    ck_assert_int_eq(mqar_eval_entry(&t, 2, 5, 128), 3);
}
END_TEST

/* refusals name the key */
START_TEST(test_mqar_refusals) {
    MqarTask t;
    ck_assert_int_eq(mqar_init(&t, 8192, 0.01, MQAR_FILLER_RANDOM, 1), 0);
    ck_assert_int_ne(mqar_set_split(&t, 0, "data.mqar_lengths", "64", "data.mqar_pairs", "17", 0), 0);
    ck_assert_msg(strstr(gma_error(), "key data.mqar_pairs") && strstr(gma_error(), "17 pairs do not fit length 64"),
                  "%s", gma_error());
    ck_assert_int_eq(mqar_set_split(&t, 0, "data.mqar_lengths", "64", "data.mqar_pairs", "16", 0), 0);
    ck_assert_int_ne(mqar_set_split(&t, 0, "data.mqar_lengths", "64,128", "data.mqar_pairs", "4,8,16", 0), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key data.mqar_pairs"));
    ck_assert_int_ne(mqar_set_split(&t, 0, "data.mqar_lengths", "65", "data.mqar_pairs", "4", 0), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key data.mqar_lengths"));
    ck_assert_int_ne(mqar_set_split(&t, 0, "data.mqar_lengths", "64,x", "data.mqar_pairs", "4", 0), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key data.mqar_lengths"));
    ck_assert_int_ne(mqar_set_split(&t, 0, "data.mqar_lengths", "128", "data.mqar_pairs", "4", 64), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "train.seq_len"));
    ck_assert_int_ne(mqar_init(&t, 8191, 0.01, MQAR_FILLER_RANDOM, 1), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key data.mqar_vocab"));
    ck_assert_int_ne(mqar_init(&t, 64, 0, MQAR_FILLER_RANDOM, 1), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key data.mqar_power_a"));
    ck_assert_int_eq(mqar_init(&t, 64, 0.01, MQAR_FILLER_RANDOM, 1), 0);
    ck_assert_int_ne(mqar_set_split(&t, 0, "data.mqar_lengths", "64", "data.mqar_pairs", "4", 0), 0); /* N >= V */
    ck_assert_ptr_nonnull(strstr(gma_error(), "data.mqar_vocab"));
}
END_TEST

/* LmData serves it: one length per training batch, padded to the window; test at a window
 * with no test length of that size is refused at open */
START_TEST(test_mqar_lmdata) {
    Config c;
    cfg_defaults(&c);
    tu_apply_sets(&c, "data.source=mqar;data.mqar_lengths=64,128;data.mqar_pairs=4,8;data.mqar_test_lengths=128,256;"
                      "data.mqar_test_pairs=8,16;model.max_seq_len=256;train.seq_len=128;data.mqar_test=10");
    LmData d;
    LmSpec s = lmdata_spec(&c, 128);
    ck_assert_int_eq(lmdata_open(&d, &s), 0);
    ck_assert(d.source == DATA_mqar && lmdata_task(&d, DATA_mqar) && !lmdata_task(&d, DATA_recall) && d.src->scored);
    ck_assert_int_eq((int)d.vocab, 8192);
    ck_assert_int_eq(lmdata_eval_windows(&d, SPLIT_TEST, 128), 10);
    int32_t tok[2 * 128], tgt[2 * 128];
    int n_scored[4], last[4];
    tu_train_batch_rows(&d, 2, 2, 128, n_scored, last);
    for (int k = 0; k < 2; k++)
        for (int b = 0; b < 2; b++) {
            ck_assert_int_eq(n_scored[k * 2 + b], k ? 8 : 4);
            ck_assert(last[k * 2 + b] < (k ? 128 : 64));
        }
    ck_assert_int_eq(lmdata_eval_batch(&d, SPLIT_TEST, 0, 2, 128, tok, tgt), 2);
    int scored = 0;
    for (int i = 0; i < 128; i++) scored += tgt[i] >= 0;
    ck_assert_int_eq(scored, 8);
    lmdata_close(&d);
    s = lmdata_spec(&c, 64);
    ck_assert_int_ne(lmdata_open(&d, &s), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key data.mqar_lengths"));
    /* gmaeval --data test --seq-len 64 opens test alone (the spec's window, not train.seq_len):
     * no test length 64, so the ones that fit */
    tu_apply_sets(&c, "data.mqar_test_lengths=64,128;data.mqar_test_pairs=4,8");
    s = lmdata_spec(&c, 64);
    ck_assert_int_eq(c.train.seq_len, 128);
    ck_assert_int_eq(lmdata_open_splits(&d, &s, 1u << SPLIT_TEST, SPLIT_TEST), 0);
    ck_assert_int_eq(lmdata_eval_batch(&d, SPLIT_TEST, 0, 1, 64, tok, tgt), 1);
    scored = 0;
    for (int i = 0; i < 64; i++) scored += tgt[i] >= 0;
    ck_assert_int_eq(scored, 4);
    lmdata_close(&d);
    tu_apply_sets(&c, "data.mqar_test_lengths=128,256;data.mqar_test_pairs=8,16");
    tu_apply_sets(&c, "data.mqar_lengths=64;data.mqar_pairs=4");
    ck_assert_int_ne(lmdata_open(&d, &s), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key data.mqar_test_lengths"));
}
END_TEST

/* gmaeval with a window shorter than every example scores nothing: refused in one line
 * (exit 2), never "loss 0.0000, ppl 1.000, 0 tokens" */
START_TEST(test_mqar_gmaeval_nothing_scored) {
    /* a generated source's refusal names its key only, never how to prepare shards */
    ck_assert_int_eq(run("./bin/gmatrain --config configs/mqar.json --out %s --set data.mqar_vocab=64 --quiet", tu_path("mq0")), 2);
    ck_assert_msg(strstr(g_out, "key data.mqar_lengths") && !strstr(g_out, "gmadata prepare"), "%s", g_out);
    const char *rd = tu_path("mq");
    ck_assert_msg(run("./bin/gmatrain --config configs/mqar.json --out %s --threads 1 --quiet --set model.d_model=16 "
                      "--set model.n_layers=1 --set train.steps=2 --set train.batch_size=2 --set train.eval_every=0 "
                      "--set data.mqar_vocab=256 --set data.mqar_valid=8 --set data.mqar_test=8 --set model.max_seq_len=128 "
                      "--set train.seq_len=128 --set data.mqar_lengths=64,128 --set data.mqar_pairs=4,8 "
                      "--set data.mqar_test_lengths=64,128 --set data.mqar_test_pairs=4,8", rd) == 0, "%s", g_out);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data valid --seq-len 32 --threads 1", rd), 2);
    ck_assert_msg(strstr(g_out, "no token of the valid split was scored in 8 windows of 32 tokens") &&
                  !strchr(strchr(g_out, '\n') + 1, '\n'), "%s", g_out);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data valid --seq-len 64 --threads 1", rd) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "32 tokens in 8 windows"), "%s", g_out);
}
END_TEST

/* data.mqar_train N: the training draws walk a fixed set of N examples, again every N
 * (Zoology's fixed training set); 0 (the default) a fresh example every draw */
START_TEST(test_mqar_fixed_train_set) {
    Config c;
    cfg_defaults(&c);
    tu_apply_sets(&c, "data.source=mqar;data.mqar_vocab=256;data.mqar_lengths=64;data.mqar_pairs=4;"
                      "data.mqar_test_lengths=64;data.mqar_test_pairs=4;model.max_seq_len=64;train.seq_len=64");
    int32_t a[3][4 * 64], at[3][4 * 64];
    for (int fixed = 0; fixed < 2; fixed++) {
        if (fixed) tu_apply_sets(&c, "data.mqar_train=8");
        LmData d;
        LmSpec s = lmdata_spec(&c, 64);
        ck_assert_int_eq(lmdata_open(&d, &s), 0);
        Rng r;
        rng_seed(&r, 1);
        for (int k = 0; k < 3; k++) lmdata_train_batch(&d, &r, (uint64_t)k, 4, 64, a[k], at[k]); /* examples 4k..4k+3 */
        int same02 = !memcmp(a[0], a[2], sizeof a[0]) && !memcmp(at[0], at[2], sizeof at[0]);
        int same01 = !memcmp(a[0], a[1], sizeof a[0]);
        ck_assert_msg(same02 == fixed, "fixed %d: batch 2 %s batch 0", fixed, same02 ? "repeats" : "differs from");
        ck_assert_msg(!same01, "fixed %d: batches 0 and 1 hold the same examples", fixed);
        lmdata_close(&d);
    }
}
END_TEST

/* train.stop_acc: the run ends at the first validation above it (Zoology's early stop), as
 * at its last step (closing evaluations, summary.json with "early_stop"), and a resume of it
 * has nothing to do; refused on data that scores no accuracy and without validations */
START_TEST(test_mqar_stop_acc) {
    const char *rd = tu_path("stop");
    const char *common = "--threads 1 --quiet --set model.d_model=16 --set model.n_layers=1 --set train.batch_size=2 "
                         "--set data.mqar_vocab=32 --set data.mqar_valid=64 --set data.mqar_test=8 --set model.max_seq_len=16 "
                         "--set train.seq_len=16 --set data.mqar_lengths=16 --set data.mqar_pairs=4 "
                         "--set data.mqar_test_lengths=16 --set data.mqar_test_pairs=4 --set train.steps=20";
    /* 256 queries over 16 values: some answered right by any model, so the threshold 1e-9
     * stops at the first validation, step 4 */
    ck_assert_msg(run("./bin/gmatrain --config configs/mqar.json --out %s %s --set train.eval_every=4 --set train.stop_acc=1e-9 "
                      "--set data.mqar_train=16", rd, common) == 0, "%s", g_out);
    char p[512];
    snprintf(p, sizeof p, "%s/summary.json", rd);
    char *sum = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(sum);
    ck_assert_msg(strstr(sum, "\"steps\":\t4") && strstr(sum, "\"early_stop\":\ttrue") && strstr(sum, "\"test\""), "%s", sum);
    free(sum);
    snprintf(p, sizeof p, "%s/metrics.jsonl", rd);
    char *m = gma_read_file(p, NULL);
    ck_assert_msg(strstr(m, "\"event\":\"early_stop\"") && !strstr(m, "{\"step\":8,"), "%s", m);
    free(m);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet", rd) == 0 && strstr(g_out, "stopped early at train.stop_acc"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config configs/mqar.json --out %s %s --set train.eval_every=0 --set train.stop_acc=0.99",
                         tu_path("stop0"), common), 2);
    ck_assert_msg(strstr(g_out, "key train.stop_acc: needs train.eval_every > 0"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config configs/quickstart.json --out %s --quiet --set data.source=shards "
                         "--set data.path=%s --set train.stop_acc=0.5", tu_path("stop1"), tu_path("none")), 2);
    ck_assert_msg(strstr(g_out, "key train.stop_acc: data.source \"shards\" scores no accuracy"), "%s", g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("mqar");
    TCase *tc = tcase_create("mqar");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_mqar_structure);
    tcase_add_test(tc, test_mqar_power_law);
    tcase_add_test(tc, test_mqar_filler);
    tcase_add_test(tc, test_mqar_determinism);
    tcase_add_test(tc, test_mqar_repeated_lengths);
    tcase_add_test(tc, test_mqar_refusals);
    tcase_add_test(tc, test_mqar_lmdata);
    tcase_add_test(tc, test_mqar_gmaeval_nothing_scored);
    tcase_add_test(tc, test_mqar_fixed_train_set);
    tcase_add_test(tc, test_mqar_stop_acc);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
