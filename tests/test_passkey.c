/* test_passkey.c: long context past the training length (docs/longctx.md): the passkey
 * generator (data/lm/passkey.h: layout, answer positions, depth, determinism, refusals),
 * LmData serving it, evaluation by position bucket and passkey accuracy, model_extend_window
 * (positions that extend, and the refusals), gmaeval --seq-len past max_seq_len and
 * --bucket-size on a run the test trains, and the warning of a dwarfing sinusoidal table. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/lm/lmdata.h"
#include "data/lm/passkey.h"
#include "model/model.h"
#include "nn/model_cfg.h"
#include "ops/ops.h"
#include "train/evaluate.h"
#include "testutil.h"

static Config pk_config(const char *sets) {
    Config c;
    cfg_defaults(&c);
    tu_apply_sets(&c, "data.source=passkey;model.max_seq_len=256;train.seq_len=128");
    if (sets && *sets) tu_apply_sets(&c, sets);
    return c;
}

/* filler before the key and between key and question; the key "1 d1..dk" at the offset
 * returned; the question "2 d1..dk" in the last k + 1 positions; targets at the mark and the
 * first k - 1 digits only, each the next digit; padding past n */
START_TEST(test_passkey_layout) {
    Config c = pk_config("data.passkey_digits=5;data.passkey_vocab=40");
    PasskeyTask t;
    ck_assert_int_eq(passkey_init(&t, passkey_cfg(&c), (uint64_t)c.seed, 128), 0);
    int32_t tok[150], tgt[150];
    for (uint64_t i = 0; i < 300; i++) {
        int n = 100 + (int)(i % 28), k = 5;
        int s = passkey_example(&t, 2, i, n, 150, tok, tgt);
        ck_assert(s >= 0 && s <= n - 2 * k - 2);
        ck_assert_int_eq(tok[s], PASSKEY_KEY);
        int a = n - k - 1;
        ck_assert_int_eq(tok[a], PASSKEY_ASK);
        for (int j = 0; j < k; j++) {
            ck_assert(tok[s + 1 + j] >= PASSKEY_DIGIT0 && tok[s + 1 + j] < PASSKEY_FILLER0);
            ck_assert_int_eq(tok[a + 1 + j], tok[s + 1 + j]);
            ck_assert_int_eq(tgt[a + j], tok[s + 1 + j]);
        }
        for (int p = 0; p < 150; p++) {
            int in_key = p >= s && p <= s + k, in_ask = p >= a && p < n;
            if (!(p >= a && p < a + k)) ck_assert_int_eq(tgt[p], -1);
            if (p >= n) ck_assert_int_eq(tok[p], PASSKEY_PAD);
            else if (!in_key && !in_ask) ck_assert_msg(tok[p] >= PASSKEY_FILLER0 && tok[p] < 40, "filler %d at %d", tok[p], p);
        }
        int b = passkey_depth_bucket(&t, tok, 150), want = (int)((double)s / (n - 2 * k - 2) * PASSKEY_DEPTH_BUCKETS);
        ck_assert_int_eq(b, GMA_MIN(want, PASSKEY_DEPTH_BUCKETS - 1));
    }
    for (int p = 0; p < 150; p++) tok[p] = 20;
    ck_assert_int_eq(passkey_depth_bucket(&t, tok, 150), -1);
}
END_TEST

/* the depth range pins the key: [0, 0] at the start, [1, 1] just before the question; the
 * repeated filler is one sentence over and over, the random one is not */
START_TEST(test_passkey_depth_filler) {
    Config c = pk_config("data.passkey_depth_min=0;data.passkey_depth_max=0");
    PasskeyTask t;
    int32_t tok[128], tgt[128];
    ck_assert_int_eq(passkey_init(&t, passkey_cfg(&c), (uint64_t)c.seed, 128), 0);
    for (uint64_t i = 0; i < 50; i++) ck_assert_int_eq(passkey_example(&t, 0, i, 128, 128, tok, tgt), 0);
    tu_apply_sets(&c, "data.passkey_depth_min=1;data.passkey_depth_max=1");
    ck_assert_int_eq(passkey_init(&t, passkey_cfg(&c), (uint64_t)c.seed, 128), 0);
    for (uint64_t i = 0; i < 50; i++) ck_assert_int_eq(passkey_example(&t, 0, i, 128, 128, tok, tgt), 128 - 2 * 5 - 2);
    tu_apply_sets(&c, "data.passkey_depth_min=0.5;data.passkey_depth_max=0.5");
    ck_assert_int_eq(passkey_init(&t, passkey_cfg(&c), (uint64_t)c.seed, 128), 0);
    int s = passkey_example(&t, 0, 3, 128, 128, tok, tgt);
    ck_assert_int_eq(s, 58); /* 0.5 x 116, rounded */
    ck_assert_int_eq(passkey_depth_bucket(&t, tok, 128), 5);
    /* repeat: the tokens before the key follow the sentence's period */
    for (int p = PASSKEY_SENTENCE; p < s; p++) ck_assert_int_eq(tok[p], tok[p - PASSKEY_SENTENCE]);
    tu_apply_sets(&c, "data.passkey_filler=random");
    ck_assert_int_eq(passkey_init(&t, passkey_cfg(&c), (uint64_t)c.seed, 128), 0);
    s = passkey_example(&t, 0, 3, 128, 128, tok, tgt);
    int differ = 0;
    for (int p = PASSKEY_SENTENCE; p < s; p++) differ += tok[p] != tok[p - PASSKEY_SENTENCE];
    ck_assert_msg(differ > s / 2, "random filler repeats: %d of %d differ", differ, s - PASSKEY_SENTENCE);
}
END_TEST

/* example (seed, split, index, n) alone: the same twice, another index, split, length or
 * seed another example */
START_TEST(test_passkey_determinism) {
    Config c = pk_config(NULL);
    PasskeyTask t, u;
    ck_assert_int_eq(passkey_init(&t, passkey_cfg(&c), (uint64_t)c.seed, 128), 0);
    ck_assert_int_eq(passkey_init(&u, passkey_cfg(&c), (uint64_t)c.seed, 128), 0);
    int32_t a[128], ga[128], b[128], gb[128];
    passkey_example(&t, 1, 7, 128, 128, a, ga);
    passkey_example(&u, 1, 7, 128, 128, b, gb);
    ck_assert(!memcmp(a, b, sizeof a) && !memcmp(ga, gb, sizeof ga));
    passkey_example(&t, 1, 8, 128, 128, b, gb);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    passkey_example(&t, 2, 7, 128, 128, b, gb);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    passkey_example(&t, 1, 7, 120, 128, b, gb);
    ck_assert(memcmp(a, b, sizeof a) != 0);
    c.seed = 99;
    ck_assert_int_eq(passkey_init(&u, passkey_cfg(&c), (uint64_t)c.seed, 128), 0);
    passkey_example(&u, 1, 7, 128, 128, b, gb);
    ck_assert(memcmp(a, b, sizeof a) != 0);
}
END_TEST

/* bad keys: one line naming the key */
START_TEST(test_passkey_refusals) {
    Config c;
    cfg_defaults(&c);
    tu_apply_sets(&c, "data.source=passkey;model.max_seq_len=256;train.seq_len=128");
    ck_assert_int_ne(cfg_set(&c, "data.passkey_vocab=12"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "data.passkey_vocab"));
    ck_assert_int_ne(cfg_set(&c, "data.passkey_digits=17"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "data.passkey_digits"));
    ck_assert_int_ne(cfg_set(&c, "data.passkey_filler=lorem"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "data.passkey_filler"));
    ck_assert_int_eq(cfg_set(&c, "data.passkey_depth_min=0.8"), 0);
    ck_assert_int_eq(cfg_set(&c, "data.passkey_depth_max=0.2"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "key data.passkey_depth_min") && strstr(gma_error(), "data.passkey_depth_max"), "%s",
                  gma_error());
    tu_apply_sets(&c, "data.passkey_depth_min=0;data.passkey_depth_max=1");
    ck_assert_int_eq(cfg_set(&c, "data.passkey_lengths=64,256"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "key data.passkey_lengths") && strstr(gma_error(), "256"), "%s", gma_error());
    ck_assert_int_eq(cfg_set(&c, "data.passkey_lengths=64,x"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key data.passkey_lengths"));
    ck_assert_int_eq(cfg_set(&c, "data.passkey_lengths=20"), 0);
    ck_assert_int_eq(cfg_set(&c, "data.passkey_digits=10"), 0); /* 20 < 2 x 10 + 4 */
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "key data.passkey_lengths") && strstr(gma_error(), "too short"), "%s", gma_error());
    tu_apply_sets(&c, "data.passkey_lengths=;data.passkey_digits=5");
    c.train.seq_len = 10; /* a window too short for the passkey */
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key train.seq_len"));
}
END_TEST

/* LmData: training batches cycle over the lengths, padded to the window; evaluation fills
 * the window it is opened at, with data.passkey_test examples */
START_TEST(test_passkey_lmdata) {
    Config c = pk_config("data.passkey_lengths=64,128;data.passkey_test=10");
    LmData d;
    LmSpec s = lmdata_spec(&c, c.train.seq_len);
    ck_assert_int_eq(lmdata_open(&d, &s), 0);
    ck_assert(d.source == DATA_passkey && lmdata_task(&d, DATA_passkey) && d.src->scored);
    ck_assert_int_eq((int)d.vocab, 64);
    ck_assert_int_eq(lmdata_eval_windows(&d, SPLIT_TEST, 128), 10);
    int scored[4], last[4];
    tu_train_batch_rows(&d, 2, 2, 128, scored, last);
    for (int k = 0; k < 2; k++)
        for (int b = 0; b < 2; b++) {
            ck_assert_int_eq(scored[k * 2 + b], 5);
            ck_assert_int_eq(last[k * 2 + b], (k ? 128 : 64) - 2);
        }
    lmdata_close(&d);
    /* gmaeval --seq-len 1024 opens test alone at that window (the spec's; train.seq_len as trained) */
    s = lmdata_spec(&c, 1024);
    ck_assert_int_eq(lmdata_open_splits(&d, &s, 1u << SPLIT_TEST, SPLIT_TEST), 0);
    int32_t *t2 = xmalloc(sizeof(int32_t) * 1024), *g2 = xmalloc(sizeof(int32_t) * 1024);
    ck_assert_int_eq(lmdata_eval_batch(&d, SPLIT_TEST, 0, 1, 1024, t2, g2), 1);
    ck_assert_int_eq(t2[1024 - 6], PASSKEY_ASK);
    ck_assert_int_eq(g2[1024 - 2], t2[1024 - 1]);
    free(t2);
    free(g2);
    lmdata_close(&d);
}
END_TEST

/* model_extend_window: "none", "sinusoidal" and "rope" (an sdpa layer) extend, "learned" is refused naming the key
 * and the checkpoint; the extended model evaluates windows past the old max_seq_len with its
 * buffers planned for them; the buckets add up to the whole; passkey tallies are shares */
START_TEST(test_passkey_long_eval) {
    ops_select(OPS_CPU);
    Config c = tu_tiny_config("gma");
    ck_assert_int_eq(cfg_set(&c, "model.pos=learned"), 0);
    ck_assert_int_ne(model_extend_window(&c, 64, NULL, "RUN/latest"), 0);
    ck_assert_msg(strstr(gma_error(), "model.pos \"learned\"") && strstr(gma_error(), "RUN/latest") &&
                  strstr(gma_error(), "pos_emb.weight"), "%s", gma_error());
    ck_assert_int_eq(c.model.max_seq_len, 8);
    ck_assert_int_eq(model_extend_window(&c, 8, NULL, "RUN/latest"), 0); /* within: nothing to do */
    const char *pos[] = {"model.pos=none", "model.pos=sinusoidal", "model.pos=rope;model.mixer=sdpa,gma"};
    for (int p = 0; p < 3; p++) {
        Config e = tu_tiny_config("gma");
        tu_apply_sets(&e, pos[p]);
        ck_assert_int_eq(cfg_set(&e, "data.source=passkey"), 0);
        ck_assert_int_eq(cfg_set(&e, "data.passkey_digits=2"), 0);
        ck_assert_int_eq(cfg_set(&e, "data.passkey_vocab=16"), 0);
        ck_assert_int_eq(cfg_set(&e, "data.passkey_test=6"), 0);
        e.model.vocab_size = 16;
        ck_assert_int_eq(model_extend_window(&e, 48, NULL, "RUN"), 0);
        ck_assert_int_eq(e.model.max_seq_len, 48);
        LmData d;
        LmSpec s = lmdata_spec(&e, 48);
        ck_assert_msg(lmdata_open_splits(&d, &s, 1u << SPLIT_TEST, SPLIT_TEST) == 0, "%s", gma_error());
        Model m;
        ck_assert_int_eq(model_build(&m, &e), 0);
        model_alloc(&m, 4, 48);
        model_init_params(&m, 3);
        EvalResult r;
        ck_assert_msg(evaluate_buckets(&m, &d, SPLIT_TEST, 4, 48, 0, 16, &r) == 0, "%s", gma_error());
        ck_assert_int_eq(r.n_buckets, 3);
        ck_assert(isfinite(r.loss) && r.loss > 0);
        double n = 0, l = 0;
        for (int i = 0; i < 3; i++) n += r.bucket_tokens[i], l += r.bucket_tokens[i] * r.bucket_loss[i];
        ck_assert(fabs(n - r.tokens) < 1e-9 && r.tokens == 12);
        ck_assert(fabs(l / n - r.loss) < 1e-5);
        ck_assert(r.bucket_tokens[0] == 0 && r.bucket_tokens[2] == 12); /* the answers are at the end */
        /* a bucket near INT_MAX: one bucket of the whole window ((N + S - 1) / S in int overflowed to -1) */
        EvalResult big;
        ck_assert_msg(evaluate_buckets(&m, &d, SPLIT_TEST, 4, 48, 0, INT_MAX, &big) == 0, "%s", gma_error());
        ck_assert_int_eq(big.n_buckets, 1);
        ck_assert(big.bucket_tokens[0] == big.tokens && big.tokens == 12);
        ck_assert(r.pk_examples == 6 && r.pk_exact <= r.pk_digit && r.pk_digit >= 0 && r.pk_digit <= 1);
        ck_assert(fabs(r.pk_digit - r.acc) < 1e-9); /* the same 2 digits of each example */
        double dn = 0;
        for (int b = 0; b < PASSKEY_DEPTH_BUCKETS; b++) dn += r.pk_depth_n[b];
        ck_assert(dn == 6);
        model_free(&m);
        lmdata_close(&d);
    }
}
END_TEST

/* a mixer sized by the length (linformer, bidirectional) refused by name */
START_TEST(test_passkey_fixed_window) {
    Config c = tu_tiny_config("linformer");
    ck_assert_int_eq(cfg_set(&c, "model.pos=none"), 0);
    ck_assert_int_ne(model_extend_window(&c, 64, NULL, "RUN"), 0);
    ck_assert_msg(strstr(gma_error(), "linformer") && strstr(gma_error(), "model.max_seq_len"), "%s", gma_error());
}
END_TEST

/* gmaeval on a run trained here: --seq-len 4x max_seq_len with positions "none", the
 * passkey and the position buckets in the JSON; a learned-position run refused in one line
 * (exit 2) */
START_TEST(test_passkey_gmaeval) {
    const char *sets = "--set model.d_model=16 --set model.n_heads=2 --set model.n_layers=1 --set model.max_seq_len=32 "
                       "--set train.seq_len=32 --set train.steps=2 --set train.batch_size=2 --set train.eval_every=0 "
                       "--set train.checkpoint_every=0 --set data.passkey_digits=3 --set data.passkey_test=8 "
                       "--set gma.chunk=16 --set threads=1 --quiet";
    ck_assert_int_eq(run("./bin/gmatrain --config configs/passkey.json --out %s --set model.pos=none %s", tu_path("pn"), sets), 0);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --seq-len 128 --bucket-size 32 --threads 1 --json %s",
                         tu_path("pn"), tu_path("pn.json")), 0);
    ck_assert_msg(strstr(g_out, "passkey: exact") && strstr(g_out, "96-127"), "%s", g_out);
    char *j = gma_read_file(tu_path("pn.json"), NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_msg(strstr(j, "\"seq_len\":\t128") && strstr(j, "\"position_buckets\"") && strstr(j, "\"by_depth\""), "%s", j);
    free(j);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --bucket-size 0 --seq-len 100000 --batch 1 --threads 1 "
                         "--bucket-size 1", tu_path("pn")), 2);
    ck_assert_msg(strstr(g_out, "--bucket-size 1") && strstr(g_out, "buckets"), "%s", g_out);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --seq-len 128 --bucket-size 2147483647 --threads 1",
                      tu_path("pn")) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "buckets of 2147483647 tokens") && strstr(g_out, "\n0-127 "), "%s", g_out);
    /* the buffers are planned for the longer window: one far too long for this machine is refused before anything is taken */
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --seq-len 16000000 --batch 4096 --threads 1", tu_path("pn")), 2);
    ck_assert_msg(strstr(g_out, "batch 4096 x 16000000") && strstr(g_out, "GiB"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config configs/passkey.json --out %s --set model.pos=learned %s", tu_path("pl"), sets), 0);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --seq-len 64 --threads 1", tu_path("pl")), 2);
    ck_assert_msg(strstr(g_out, "model.pos \"learned\"") && strstr(g_out, "pl/") && !strchr(strchr(g_out, '\n') + 1, '\n'),
                  "%s", g_out);
}
END_TEST

/* the warning of a sinusoidal table that dwarfs the token embeddings: once, above the
 * stated ratio only */
START_TEST(test_passkey_pos_warning) {
    Config c = tu_tiny_config("gma");
    ck_assert_int_eq(cfg_set(&c, "model.pos=sinusoidal"), 0);
    ck_assert_int_eq(cfg_set(&c, "model.embed_std=0.5"), 0);
    ck_assert(fabs(cfg_pos_scale_ratio(&c) - sqrt(0.5) / 0.5) < 1e-12);
    ck_assert_int_eq(cfg_pos_scale_warn(&c, stderr, "test"), 0);
    ck_assert_int_eq(cfg_set(&c, "model.embed_std=-1"), 0);
    c.model.init_std = 0.02; /* the defaults: 35x */
    ck_assert(cfg_pos_scale_ratio(&c) > POS_SCALE_WARN);
    ck_assert_int_eq(cfg_set(&c, "model.pos=learned"), 0);
    ck_assert(cfg_pos_scale_ratio(&c) == 0);
    const char *sets = "--set model.d_model=16 --set model.n_heads=2 --set model.n_layers=1 --set model.max_seq_len=32 "
                       "--set train.seq_len=32 --set train.steps=2 --set train.batch_size=2 --set train.eval_every=0 "
                       "--set train.checkpoint_every=0 --set data.passkey_digits=3 --set data.passkey_test=8 "
                       "--set gma.chunk=16 --set threads=1 --quiet --set model.pos=sinusoidal";
    ck_assert_int_eq(run("./bin/gmatrain --config configs/passkey.json --out %s %s", tu_path("w1"), sets), 0);
    char *w = strstr(g_out, "warning: model.pos \"sinusoidal\"");
    ck_assert_msg(w && !strstr(w + 1, "warning: model.pos \"sinusoidal\"") && strstr(g_out, "35x"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config configs/passkey.json --out %s %s --set model.embed_std=0.5", tu_path("w2"), sets), 0);
    ck_assert_msg(!strstr(g_out, "warning: model.pos"), "%s", g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("passkey");
    TCase *tc = tcase_create("passkey");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_passkey_layout);
    tcase_add_test(tc, test_passkey_depth_filler);
    tcase_add_test(tc, test_passkey_determinism);
    tcase_add_test(tc, test_passkey_refusals);
    tcase_add_test(tc, test_passkey_lmdata);
    tcase_add_test(tc, test_passkey_long_eval);
    tcase_add_test(tc, test_passkey_fixed_window);
    tcase_add_test(tc, test_passkey_gmaeval);
    tcase_add_test(tc, test_passkey_pos_warning);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
