/* test_lmdata.c: the data sources' registry and dispatcher (data/lm/lm_sources.h, lmdata.h):
 * every row has a reader and its config section in the reference, the enum and the choices
 * come from the rows; a source opens from its spec's window, never train.seq_len; the rows
 * a data-parallel rank draws are those rows of the global batch, for every source; "cls"
 * is refused by the language-model reader; the data's identity against a run's
 * (dataid_check, gmatrain --resume's and gmaeval's one check). */
#include <stdlib.h>
#include <string.h>

#include "data/lm/dataid.h"
#include "data/lm/lmdata.h"
#include "data/lm/lmmeta.h"
#include "data/lm/recall.h"
#include "data/lm/shard.h"
#include "testutil.h"

START_TEST(test_registry_rows) {
    /* the rows this page knows; a new source adds a row, not a line here */
    const char *known[] = {"recall", "mqar", "passkey", "xmqar", "shards", "cls"};
    int n_known = 0;
    char choices[512] = "";
    for (int i = 0; i < N_DATA_SOURCES; i++) {
        const LmSource *s = lmdata_source(i);
        ck_assert_ptr_nonnull(s);
        snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s", i ? "|" : "", s->name);
        for (int k = 0; k < 6; k++) n_known += !strcmp(s->name, known[k]);
        if (i == DATA_cls) { /* no reader: train/cls_task.c loads it */
            ck_assert(!strcmp(s->name, "cls") && !s->open && s->needs_path);
            continue;
        }
        ck_assert_msg(s->open && s->train_example && s->eval_count && s->eval_example, "%s: a reader without a part", s->name);
        ck_assert_int_eq(s->needs_path, i == DATA_shards);
        ck_assert(!s->scored || (s->label && !strcmp(s->label, s->name)));
        /* its own keys are in the reference as data.NAME_* */
        for (int k = 0; s->section && k < s->section->n_keys; k++) {
            char key[64];
            snprintf(key, sizeof key, "data.%s", s->section->keys[k].key);
            ck_assert_msg(!strncmp(s->section->keys[k].key, s->name, strlen(s->name)), "%s", key);
            Config c;
            cfg_defaults(&c);
            if (s->section->keys[k].type != CFGT_STR && s->section->keys[k].type != CFGT_ENUM)
                ck_assert_msg(cfg_num(&c, key) == atof(s->section->keys[k].def), "%s", key); /* cfg_num aborts on an unknown key */
        }
    }
    ck_assert_int_eq(n_known, 6);
    ck_assert_str_eq(DATA_SOURCE_CHOICES, choices); /* the config's choices are the rows */
    ck_assert(!lmdata_source(DATA_shards)->scored && lmdata_source(DATA_recall)->scored && lmdata_source(DATA_xmqar)->scored);
    ck_assert_ptr_null(lmdata_source(N_DATA_SOURCES));
    ck_assert_ptr_null(lmdata_source(-1));
    /* cls through the language-model reader: one line naming the key */
    Config c;
    cfg_defaults(&c);
    ck_assert_int_eq(cfg_set(&c, "data.source=cls"), 0);
    LmSpec s = lmdata_spec(&c, 16);
    LmData d;
    ck_assert_int_ne(lmdata_open(&d, &s), 0);
    ck_assert_msg(strstr(gma_error(), "key data.source") && strstr(gma_error(), "cls"), "%s", gma_error());
}
END_TEST

/* the window is the spec's: recall opened at 24 with train.seq_len 64 writes windows of 24 */
START_TEST(test_spec_window) {
    Config c;
    cfg_defaults(&c);
    tu_apply_sets(&c, "data.source=recall;data.recall_pairs=4;train.seq_len=64;model.max_seq_len=64;seed=9");
    LmSpec s = lmdata_spec(&c, 24);
    ck_assert_int_eq(s.window, 24);
    ck_assert(s.seed == 9 && s.source == DATA_recall && s.section);
    LmData d;
    ck_assert_msg(lmdata_open(&d, &s) == 0, "%s", gma_error());
    const RecallTask *t = lmdata_task(&d, DATA_recall);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_null(lmdata_task(&d, DATA_mqar));
    ck_assert_int_eq(t->seq_len, 24);
    ck_assert_int_eq(c.train.seq_len, 64);
    int32_t tok[24], tgt[24], want[24], wt[24];
    ck_assert_int_eq(lmdata_eval_batch(&d, SPLIT_VALID, 3, 1, 24, tok, tgt), 1);
    RecallTask ref;
    ck_assert_int_eq(recall_init(&ref, 64, 4, 0, 24, 9), 0);
    recall_example(&ref, SPLIT_VALID, 3, want, wt);
    ck_assert(!memcmp(tok, want, sizeof want) && !memcmp(tgt, wt, sizeof wt));
    lmdata_close(&d);
    /* a window too short for the pairs: refused at open, naming the window's key */
    s = lmdata_spec(&c, 8);
    ck_assert_int_ne(lmdata_open(&d, &s), 0);
    ck_assert_msg(strstr(gma_error(), "key train.seq_len"), "%s", gma_error());
}
END_TEST

/* rows [first, first+B) of lmdata_train_batch_part are those rows of the whole global batch,
 * and the rng ends where the whole batch leaves it, for every source */
START_TEST(test_batch_part_every_source) {
    const char *dir = tu_path("shards");
    ck_assert_int_eq(gma_mkdirs(dir), 0);
    uint32_t ids[500];
    for (int i = 0; i < 500; i++) ids[i] = (uint32_t)(i * 7 % 50);
    char p[2100];
    snprintf(p, sizeof p, "%s/train.bin", dir);
    ck_assert_int_eq(shard_write(p, ids, 500, 50), 0);
    const char *sets[] = {"data.source=recall", "data.source=mqar", "data.source=passkey",
                          "data.source=xmqar;data.xmqar_ctx=16", "data.source=shards"};
    for (int i = 0; i < (int)(sizeof sets / sizeof *sets); i++) {
        Config c;
        cfg_defaults(&c);
        tu_apply_sets(&c, "model.max_seq_len=64;train.seq_len=64");
        snprintf(c.data.path, sizeof c.data.path, "%s", dir);
        tu_apply_sets(&c, sets[i]);
        LmSpec s = lmdata_spec(&c, 64);
        LmData d;
        ck_assert_msg(lmdata_open(&d, &s) == 0, "%s: %s", sets[i], gma_error());
        enum { G = 4, F = 1, B = 2, N = 64 };
        int32_t tok[G * N], tgt[G * N], pt[B * N], pg[B * N];
        Rng a, b;
        rng_seed(&a, 5), rng_seed(&b, 5);
        lmdata_train_batch(&d, &a, 3, G, N, tok, tgt);
        lmdata_train_batch_part(&d, &b, 3, G, F, B, N, pt, pg);
        ck_assert_msg(!memcmp(pt, tok + F * N, sizeof pt) && !memcmp(pg, tgt + F * N, sizeof pg), "%s", sets[i]);
        ck_assert_msg(rng_below(&a, 1000000) == rng_below(&b, 1000000), "%s: the rng", sets[i]);
        int scored = 0;
        for (int j = 0; j < G * N; j++) scored += tgt[j] >= 0;
        ck_assert_msg(scored > 0, "%s: nothing scored", sets[i]);
        lmdata_close(&d);
    }
}
END_TEST

/* shards of vocabulary V in dir (train and valid) */
static void make_shards(const char *dir, uint32_t V) {
    ck_assert_int_eq(gma_mkdirs(dir), 0);
    uint32_t ids[64];
    for (int i = 0; i < 64; i++) ids[i] = (uint32_t)i % V;
    char p[2100];
    snprintf(p, sizeof p, "%s/train.bin", dir);
    ck_assert_int_eq(shard_write(p, ids, 64, V), 0);
    snprintf(p, sizeof p, "%s/valid.bin", dir);
    ck_assert_int_eq(shard_write(p, ids, 32, V), 0);
}

START_TEST(test_identity_check) {
    const char *a = tu_path("id_a"), *b = tu_path("id_b"), *run = tu_path("id_run");
    make_shards(a, 50);
    make_shards(b, 60);
    ck_assert_int_eq(gma_mkdirs(run), 0);
    char what[512] = "";
    ck_assert_int_eq(dataid_check(run, a, NULL, 1, what, sizeof what), 0); /* no data.json: nothing recorded */
    ck_assert_msg(lmmeta_write_run(run, a, a) == 0, "%s", gma_error());
    ck_assert_int_eq(dataid_check(run, a, NULL, 1, what, sizeof what), 1);
    ck_assert_int_eq(dataid_check(run, b, NULL, 0, what, sizeof what), 2);
    ck_assert_msg(strstr(what, "vocabulary 50 there, 60 here"), "%s", what);
    char f[2100];
    snprintf(f, sizeof f, "%s/valid.bin", a); /* a bare shard: its vocabulary alone */
    ck_assert_int_eq(dataid_check(run, NULL, f, 0, what, sizeof what), 1);
    snprintf(f, sizeof f, "%s/valid.bin", b);
    ck_assert_int_eq(dataid_check(run, NULL, f, 0, what, sizeof what), 2);
    /* the shards too with shards 1: another valid.bin in a (its header differs) */
    uint32_t ids[30] = {0};
    snprintf(f, sizeof f, "%s/valid.bin", a);
    ck_assert_int_eq(shard_write(f, ids, 30, 50), 0);
    ck_assert_int_eq(dataid_check(run, a, NULL, 0, what, sizeof what), 1);
    ck_assert_int_eq(dataid_check(run, a, NULL, 1, what, sizeof what), 2);
    ck_assert_msg(strstr(what, "valid"), "%s", what);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("language-model data sources");
    TCase *tc = tcase_create("lmdata");
    tcase_add_test(tc, test_registry_rows);
    tcase_add_test(tc, test_spec_window);
    tcase_add_test(tc, test_batch_part_every_source);
    tcase_add_test(tc, test_identity_check);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
