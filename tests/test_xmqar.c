/* test_xmqar.c: the cross-sequence MQAR source (data/lm/xmqar.h): layout (pairs at the
 * start of the context, zeros after them, every query a context key whose target is its
 * value, each P queries a permutation of the pairs), determinism by (seed, split, index),
 * the splits differing, the same pairs and queries at any context length, LmData serving it
 * for training and evaluation, the refusals naming their keys, and gmaeval --ctx-len on a
 * trained cross model (a longer context of the same examples, its refusals). */
#include <stdlib.h>
#include <string.h>

#include "data/lm/lmdata.h"
#include "data/lm/xmqar.h"
#include "model/model.h"
#include "model/model_cross.h"
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
    ck_assert_int_eq(xmqar_init(&t, xmqar_cfg(&c), (uint64_t)c.seed, 40), 0);
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

/* an example at context 64 is the one at context 16 with 48 more zeros before its queries */
START_TEST(test_xmqar_longer_context) {
    Config c = xq_config("data.xmqar_pairs=5;data.xmqar_ctx=16;train.seq_len=40;model.max_seq_len=100");
    XmqarTask a, b;
    ck_assert_int_eq(xmqar_init(&a, xmqar_cfg(&c), (uint64_t)c.seed, 40), 0);
    ck_assert(cfg_set(&c, "data.xmqar_ctx=64") == 0);
    ck_assert_int_eq(xmqar_init(&b, xmqar_cfg(&c), (uint64_t)c.seed, 88), 0);
    int32_t ta[40], ga[40], tb[88], gb[88];
    for (uint64_t i = 0; i < 50; i++) {
        xmqar_example(&a, (int)(i % 3), i, ta, ga);
        xmqar_example(&b, (int)(i % 3), i, tb, gb);
        ck_assert(!memcmp(ta, tb, sizeof(int32_t) * 10));                                /* the pairs */
        for (int p = 10; p < 64; p++) ck_assert_int_eq(tb[p], 0);                       /* zeros to M */
        ck_assert(!memcmp(ta + 16, tb + 64, sizeof(int32_t) * 24));                      /* the queries */
        ck_assert(!memcmp(ga + 16, gb + 64, sizeof(int32_t) * 24) && gb[63] == -1);      /* their targets */
    }
}
END_TEST

START_TEST(test_xmqar_determinism) {
    Config c = xq_config(NULL);
    XmqarTask t;
    ck_assert_int_eq(xmqar_init(&t, xmqar_cfg(&c), (uint64_t)c.seed, 40), 0);
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
    LmSpec s = lmdata_spec(&c, c.train.seq_len);
    ck_assert_msg(lmdata_open(&d, &s) == 0, "%s", gma_error());
    ck_assert(d.source == DATA_xmqar && d.src->scored);
    const XmqarTask *t = lmdata_task(&d, DATA_xmqar);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(d.vocab, 64);
    ck_assert_int_eq(lmdata_eval_windows(&d, SPLIT_VALID, 40), 5);
    int32_t tok[3 * 40], tgt[3 * 40], want[40], wt[40];
    Rng r;
    rng_seed(&r, 1);
    lmdata_train_batch(&d, &r, 2, 3, 40, tok, tgt);
    xmqar_example(t, SPLIT_TRAIN, 2 * 3 + 1, want, wt);
    ck_assert(!memcmp(tok + 40, want, sizeof want) && !memcmp(tgt + 40, wt, sizeof wt));
    ck_assert_int_eq(lmdata_eval_batch(&d, SPLIT_VALID, 1, 3, 40, tok, tgt), 2);
    xmqar_example(t, SPLIT_VALID, 4, want, wt);
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
    /* a cross model's context is the xmqar context (checked at the run level, train/run_cfg.c) */
    refused("cross.mixer=sdpa;cross.ctx_len=12;data.xmqar_ctx=16", "but the xmqar context is data.xmqar_ctx = 16");
}
END_TEST

/* "KEY VALUE" of gmaeval's printed line (e.g. "acc 0.2500"), as a number; -1 when absent */
static double printed(const char *key) {
    const char *p = strstr(g_out, key);
    return p ? atof(p + strlen(key)) : -1;
}

/* gmaeval --ctx-len: a cross model trained at context 16 read at 16 (the plain evaluation's
 * figures) and at 200 (the same 16 queries a window, the window 216); --batches; refusals */
START_TEST(test_gmaeval_ctx_len) {
    const char *cfg = tu_path("x.json");
    tu_write(cfg, "{\"cross\":{\"mixer\":\"sdpa\",\"ctx_len\":16,\"enc_causal\":true},\"seed\":2,"
                  "\"data\":{\"source\":\"xmqar\",\"xmqar_vocab\":32,\"xmqar_pairs\":4,\"xmqar_ctx\":16,\"xmqar_test\":24},"
                  "\"model\":{\"d_model\":16,\"n_layers\":1,\"n_heads\":2,\"mixer\":\"sdpa\",\"mlp\":false,"
                  "\"max_seq_len\":32,\"pos\":\"none\"},"
                  "\"train\":{\"batch_size\":8,\"seq_len\":32,\"lr\":0.003,\"steps\":6,\"eval_every\":0}}");
    const char *rd = tu_path("xrun");
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --threads 1 --quiet", cfg, rd) == 0, "%s", g_out);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --threads 1", rd) == 0, "%s", g_out);
    double loss = printed("test loss "), acc = printed("acc ");
    ck_assert_msg(strstr(g_out, "384 tokens in 24 windows"), "%s", g_out);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --threads 1 --ctx-len 16", rd) == 0, "%s", g_out);
    ck_assert_msg(printed("test loss ") == loss && printed("acc ") == acc, "--ctx-len 16 of a model of 16: %s", g_out);
    const char *js = tu_path("x200.json");
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --threads 1 --ctx-len 200 --batch 8 --batches 2 --json %s",
                      rd, js) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "256 tokens in 16 windows"), "%s", g_out);
    ck_assert_msg(run("grep -q '\"seq_len\":[[:space:]]*216' %s && grep -q '\"ctx_len\":[[:space:]]*200' %s", js, js) == 0,
                  "%s", js);
    /* refusals: one line, exit 2 */
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --ctx-len 7", rd), 2);
    ck_assert_msg(strstr(g_out, "--ctx-len 7: the 4 pairs of ") && strstr(g_out, "take 8 positions"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --ctx-len 40 --seq-len 40", rd), 2);
    ck_assert_msg(strstr(g_out, "--seq-len 40 leaves no query after the context of --ctx-len 40"), "%s", g_out);
    /* the encoder and cross buffers are planned: a context they cannot hold is refused naming them, never an abort */
    ck_assert_int_eq(run("ulimit -v 4000000; ./bin/gmaeval --checkpoint %s --data test --threads 1 --ctx-len 1000000 --batch 8",
                         rd), 2);
    ck_assert_msg(strstr(g_out, "GiB") && strstr(g_out, "cross.ctx_len 1000000") && !strchr(strchr(g_out, '\n') + 1, '\n'),
                  "%s", g_out);
    /* a context near INT_MAX: refused naming --ctx-len, never a --seq-len not given (ctx + queries overflowed) */
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --ctx-len 2147483647", rd), 2);
    ck_assert_msg(strstr(g_out, "--ctx-len") && !strstr(g_out, "--seq-len") && !strchr(strchr(g_out, '\n') + 1, '\n'), "%s",
                  g_out);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --ctx-len 16777215", rd), 2);
    ck_assert_msg(strstr(g_out, "--ctx-len 16777215: with the 16 query positions of ") && !strstr(g_out, "--seq-len"), "%s",
                  g_out);
    const char *plain = tu_path("plain");
    ck_assert_msg(run("./bin/gmatrain --config %s --set cross.mixer=none --set train.steps=1 --out %s --threads 1 --quiet", cfg,
                      plain) == 0, "%s", g_out);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --ctx-len 32", plain), 2);
    ck_assert_msg(strstr(g_out, "is not a cross model (cross.mixer is none)"), "%s", g_out);
    const char *learned = tu_path("learned");
    ck_assert_msg(run("./bin/gmatrain --config %s --set model.pos=learned --set train.steps=1 --out %s --threads 1 --quiet", cfg,
                      learned) == 0, "%s", g_out);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --ctx-len 64", learned), 2);
    ck_assert_msg(strstr(g_out, "model.pos \"learned\"") && strstr(g_out, "--ctx-len 64 (a window of 80)") &&
                  !strstr(g_out, "--seq-len"), "%s", g_out);
}
END_TEST

/* the memory plan holds the encoder and the cross sub-layers: what model_alloc carves plus
 * xmodel_alloc's buffers, at least the [B,M,D] and [B,T,D] rows counted here from the shapes */
START_TEST(test_cross_plan) {
    Config c = xq_config("cross.mixer=sdpa;cross.ctx_len=16;data.xmqar_ctx=16;data.xmqar_vocab=32;data.xmqar_pairs=4;"
                         "model.d_model=16;model.n_heads=2;model.n_layers=2;cross.enc_layers=2");
    c.model.vocab_size = 32;
    Model m;
    ck_assert_msg(model_build(&m, &c) == 0, "%s", gma_error());
    m.infer = 1;
    const int B = 3, T = 40, M = 16, D = 16, E = 2, L = 2;
    MemPlan p;
    model_memory_plan(&m, B, T, &p);
    double cross = (double)xmodel_act_size(m.x, B, T) * sizeof(real);
    /* e, the encoder's ln, ctx, dctx, de, dtmp of [B,M,D]; tmp, and xmid, ln, out per layer of [B,T,D] */
    double rows = (double)(E + 1 + E + 4) * B * M * D + (double)(1 + 3 * L) * B * T * D;
    ck_assert_msg(cross >= rows * sizeof(real), "cross buffers %.0f bytes, the rows alone %.0f", cross, rows * sizeof(real));
    model_alloc(&m, B, T);
    ck_assert_msg(p.acts == (double)m.act_bytes + cross, "plan %.0f, model %.0f + cross %.0f", p.acts, (double)m.act_bytes,
                  cross);
    model_free(&m);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("cross-sequence MQAR source");
    TCase *tc = tcase_create("xmqar");
    tcase_add_test(tc, test_xmqar_layout);
    tcase_add_test(tc, test_xmqar_determinism);
    tcase_add_test(tc, test_xmqar_lmdata);
    tcase_add_test(tc, test_xmqar_refusals);
    tcase_add_test(tc, test_xmqar_longer_context);
    tcase_add_test(tc, test_cross_plan);
    tcase_add_test(tc, test_gmaeval_ctx_len);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
