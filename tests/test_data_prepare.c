/* test_data_prepare.c: `prepare` on a small WikiText-format fixture written by the test
 * (headings, @-@ and @,@, <unk>, blank lines) and on a train/valid/test.txt corpus: shards,
 * meta.json (tokenizer, vocabulary, tokens, words, sha256), word-level <unk> mapping, and
 * failures that leave no half-written shard or sidecar; a re-prepare killed between two files
 * (GMA_FAULT_PREPARE_KILL) leaves a set the loader refuses, by its prepare.incomplete and,
 * without it, by the manifest's digests; a meta.json without a manifest still loads. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/lm/lmdata.h"
#include "data/lm/manifest.h"
#include "data/lm/prepare.h"
#include "data/lm/shard.h"
#include "data/text/tokenizer.h"
#include "testutil.h"

static const char *TRAIN =
    " \n = Valkyria Chronicles III = \n \n Senj\xc5\x8d no Valkyria 3 : <unk> Chronicles is a tactical role @-@ playing "
    "game . \n \n = = Gameplay = = \n \n It sold 1 @,@ 000 copies in 2 @.@ 5 weeks . \n";
static const char *VALID = " \n = Robert Boulter = \n \n Robert is an English actor . \n";
static const char *TEST = " \n = = Career = = \n \n The game is a new role @-@ playing game . \n";

static void write_wikitext(const char *root) {
    char dir[600], p[700];
    snprintf(dir, sizeof dir, "%s/wikitext-2", root);
    gma_mkdirs(dir);
    snprintf(p, sizeof p, "%s/wiki.train.tokens", dir);
    tu_write(p, TRAIN);
    snprintf(p, sizeof p, "%s/wiki.valid.tokens", dir);
    tu_write(p, VALID);
    snprintf(p, sizeof p, "%s/wiki.test.tokens", dir);
    tu_write(p, TEST);
}

static cJSON *load_meta(const char *out) {
    char p[700];
    snprintf(p, sizeof p, "%s/meta.json", out);
    size_t len;
    char *txt = gma_read_file(p, &len);
    ck_assert_msg(txt != NULL, "%s", gma_error());
    cJSON *j = cJSON_Parse(txt);
    free(txt);
    ck_assert_ptr_nonnull(j);
    return j;
}

static double split_num(cJSON *meta, const char *split, const char *key) {
    cJSON *s = cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "splits"), split);
    ck_assert_ptr_nonnull(s);
    return cJSON_GetObjectItem(s, key)->valuedouble;
}

START_TEST(test_prepare_wikitext_word) {
    const char *root = tu_path("data");
    write_wikitext(root);
    const char *out = tu_path("out-word");
    PrepareOptions o = {"wikitext-2", "word", NULL, root, out, 2, 0};
    ck_assert_msg(prepare_run(&o) == 0, "%s", gma_error());
    cJSON *meta = load_meta(out);
    char spec[700];
    snprintf(spec, sizeof spec, "word:%s/vocab.txt", out);
    ck_assert_str_eq(cJSON_GetObjectItem(meta, "tokenizer")->valuestring, spec);
    int V = cJSON_GetObjectItem(meta, "vocab_size")->valueint;
    /* valid: " \n = Robert Boulter = \n \n Robert is an English actor . \n" = 4 lines, 10 words */
    ck_assert_int_eq((int)split_num(meta, "valid", "words"), 10 + 4);
    ck_assert_int_eq((int)split_num(meta, "valid", "tokens"), 14);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "splits"), "train"), "file")->valuestring,
                     "train.bin");
    ck_assert_int_eq(strlen(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(meta, "splits"), "train"), "sha256")->valuestring), 64);
    /* the shard: ids < vocab, <unk> for unseen words, <eos> at each line end */
    char p[700];
    snprintf(p, sizeof p, "%s/valid.bin", out);
    TokenShard s;
    ck_assert_int_eq(shard_open(&s, p, 1), 0);
    ck_assert_int_eq((int)s.count, 14);
    ck_assert_int_eq((int)s.vocab, V);
    Tokenizer *t = tokenizer_load(spec, NULL);
    ck_assert_ptr_nonnull(t);
    long unk = tokenizer_unk_id(t), eos = tokenizer_token_id(t, "<eos>");
    ck_assert_int_eq(shard_get(&s, 0), eos);                       /* " \n" */
    ck_assert_int_eq(shard_get(&s, 1), tokenizer_token_id(t, "=")); /* heading */
    ck_assert_int_eq(shard_get(&s, 2), unk);                       /* Robert: not in train */
    ck_assert_int_ge(tokenizer_token_id(t, "@-@"), 0);
    ck_assert_int_ge(tokenizer_token_id(t, "Senj\xc5\x8d"), 0);
    shard_close(&s);
    /* test split: "role @-@ playing game" are known words */
    snprintf(p, sizeof p, "%s/test.bin", out);
    ck_assert_int_eq(shard_open(&s, p, 1), 0);
    int unks = 0;
    for (uint64_t i = 0; i < s.count; i++) unks += shard_get(&s, i) == (uint32_t)unk;
    ck_assert_int_eq(unks, 3); /* Career, The, new */
    shard_close(&s);
    tokenizer_free(t);
    cJSON_Delete(meta);
}
END_TEST

START_TEST(test_prepare_text_corpus_bytes_and_bpe) {
    const char *dir = tu_path("corpus");
    gma_mkdirs(dir);
    char p[700];
    const char *text[3] = {TRAIN, VALID, TEST}, *names[3] = {"train", "valid", "test"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s.txt", dir, names[i]);
        tu_write(p, text[i]);
    }
    const char *out = tu_path("out-bytes");
    PrepareOptions o = {dir, "bytes", NULL, tu_path("nodata"), out, 2, 0};
    ck_assert_msg(prepare_run(&o) == 0, "%s", gma_error());
    cJSON *meta = load_meta(out);
    ck_assert_str_eq(cJSON_GetObjectItem(meta, "tokenizer")->valuestring, "bytes");
    ck_assert_int_eq(cJSON_GetObjectItem(meta, "vocab_size")->valueint, 256);
    ck_assert_int_eq((int)split_num(meta, "train", "tokens"), (int)strlen(TRAIN));
    cJSON_Delete(meta);
    /* train a BPE with the CLI, then prepare with it */
    char cmd[2048], outbuf[4096];
    snprintf(cmd, sizeof cmd,
             "bin/gmadata train-tokenizer --vocab-size 300 --out %s/tok --quiet %s/train.txt && "
             "bin/gmadata prepare %s --tokenizer bpe:%s/tok --out %s/out-bpe --quiet",
             tu_tmpdir(), dir, dir, tu_tmpdir(), tu_tmpdir());
    ck_assert_msg(tu_run(cmd, outbuf, sizeof outbuf) == 0, "%s", outbuf);
    meta = load_meta(tu_path("out-bpe"));
    ck_assert_int_eq(cJSON_GetObjectItem(meta, "vocab_size")->valueint, 300);
    ck_assert_int_lt((int)split_num(meta, "train", "tokens"), (int)strlen(TRAIN));
    cJSON_Delete(meta);
}
END_TEST

static int count_tmp(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp")) n++;
    closedir(d);
    return n;
}

START_TEST(test_prepare_errors) {
    const char *root = tu_path("data2");
    gma_mkdirs(root);
    PrepareOptions o = {"wikitext-103", "word", NULL, root, tu_path("o1"), 1, 0};
    ck_assert_int_eq(prepare_run(&o), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "gmadata fetch wikitext-103"));
    /* a corpus without a test split */
    const char *dir = tu_path("partial");
    gma_mkdirs(dir);
    char p[700];
    snprintf(p, sizeof p, "%s/train.txt", dir);
    tu_write(p, "a b\n");
    PrepareOptions o2 = {dir, "bytes", NULL, root, tu_path("o2"), 1, 0};
    ck_assert_int_eq(prepare_run(&o2), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "partial"));
    /* the test split unreadable (a directory): no sidecar, no temporary or partial shard */
    snprintf(p, sizeof p, "%s/valid.txt", dir);
    tu_write(p, "c d\n");
    snprintf(p, sizeof p, "%s/test.txt", dir);
    mkdir(p, 0755);
    const char *out = tu_path("o3");
    PrepareOptions o3 = {dir, "bytes", NULL, root, out, 1, 0};
    ck_assert_int_eq(prepare_run(&o3), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "test.txt"));
    snprintf(p, sizeof p, "%s/test.bin", out);
    ck_assert(!gma_path_exists(p));
    snprintf(p, sizeof p, "%s/meta.json", out);
    ck_assert(!gma_path_exists(p));
    ck_assert_int_eq(count_tmp(out), 0);
    /* CLI: one line, non-zero exit */
    char cmd[1024], buf[2048];
    snprintf(cmd, sizeof cmd, "bin/gmadata prepare %s --tokenizer bpe:%s/none --out %s/o4", dir, tu_tmpdir(), tu_tmpdir());
    ck_assert_int_ne(tu_run(cmd, buf, sizeof buf), 0);
    ck_assert_msg(strncmp(buf, "gmadata: ", 9) == 0 && strchr(buf, '\n') == buf + strlen(buf) - 1, "%s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "encoder.json"));
}
END_TEST

START_TEST(test_count_words) {
    tu_write(tu_path("c.txt"), " a b \n\n c");
    TextCounts c;
    char hex[65];
    ck_assert_int_eq(prepare_count_file(tu_path("c.txt"), &c, hex), 0);
    ck_assert_int_eq((int)c.lines, 3);
    ck_assert_int_eq((int)c.words, 3 + 3);
    ck_assert_int_eq((int)c.bytes, 9);
}
END_TEST

static void write_corpus(const char *dir) {
    char p[700];
    const char *text[3] = {TRAIN, VALID, TEST}, *names[3] = {"train", "valid", "test"};
    gma_mkdirs(dir);
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s.txt", dir, names[i]);
        tu_write(p, text[i]);
    }
}

/* lmdata_open of the shards in dir: 0, or -1 with gma_error */
static int open_set(const char *dir) {
    Config c;
    cfg_defaults(&c);
    ck_assert_int_eq(cfg_set(&c, "data.source=shards"), 0);
    snprintf(c.data.path, sizeof c.data.path, "%s", dir);
    LmData d;
    LmSpec s = lmdata_spec(&c, 16);
    int rc = lmdata_open(&d, &s);
    if (!rc) lmdata_close(&d);
    return rc;
}

START_TEST(test_prepare_killed_between_files) {
    const char *corpus = tu_path("kc"), *set = tu_path("kset");
    write_corpus(corpus);
    ck_assert_int_eq(run("bin/gmadata train-tokenizer --vocab-size 300 --out %s/ktok --quiet %s/train.txt", tu_tmpdir(), corpus),
                     0);
    char marker[700], meta[700];
    snprintf(marker, sizeof marker, "%s/%s", set, MANIFEST_INCOMPLETE);
    snprintf(meta, sizeof meta, "%s/meta.json", set);
    static const char *const kill_after[4] = {"train.bin", "valid.bin", "test.bin", "meta.json"};
    for (int k = 0; k < 4; k++) {
        /* a whole set with the bytes tokenizer: it loads, its meta.json has a manifest, no marker */
        ck_assert_msg(run("bin/gmadata prepare %s --tokenizer bytes --out %s --quiet", corpus, set) == 0, "%s", g_out);
        ck_assert_msg(open_set(set) == 0, "%s", gma_error());
        ck_assert(!gma_path_exists(marker));
        cJSON *m = load_meta(set);
        ck_assert_ptr_nonnull(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "manifest"), "train.bin"));
        cJSON_Delete(m);
        /* re-prepared with the BPE, killed once kill_after[k] is in place */
        ck_assert_int_ne(run("GMA_FAULT_PREPARE_KILL=%s bin/gmadata prepare %s --tokenizer bpe:%s/ktok --out %s --quiet",
                             kill_after[k], corpus, tu_tmpdir(), set),
                         0);
        ck_assert_msg(gma_path_exists(marker), "killed after %s: no %s", kill_after[k], MANIFEST_INCOMPLETE);
        ck_assert_int_eq(open_set(set), -1);
        ck_assert_msg(strstr(gma_error(), MANIFEST_INCOMPLETE) && strstr(gma_error(), "incomplete"), "%s", gma_error());
        /* the trainer says so in one line, exit 2 */
        ck_assert_int_eq(run("bin/gmatrain --config configs/quickstart.json --out %s/krun%d --quiet --threads 1 "
                             "--set data.source=shards --set data.path=%s --set train.steps=1",
                             tu_tmpdir(), k, set),
                         2);
        ck_assert_msg(strstr(g_out, "incomplete") && strchr(g_out, '\n') == g_out + strlen(g_out) - 1, "%s", g_out);
        /* without the marker the digests still tell the mixture (or, killed after meta.json, a whole new set) */
        unlink(marker);
        if (k < 3) {
            ck_assert_int_eq(open_set(set), -1);
            ck_assert_msg(strstr(gma_error(), "train.bin") && strstr(gma_error(), "manifest"), "%s", gma_error()); /* first rewritten */
        } else {
            ck_assert_msg(open_set(set) == 0, "%s", gma_error());
        }
    }
    /* a meta.json without a manifest (a set prepared before it existed) loads as it did */
    ck_assert_msg(run("bin/gmadata prepare %s --tokenizer bytes --out %s --quiet", corpus, set) == 0, "%s", g_out);
    cJSON *m = load_meta(set);
    cJSON_DeleteItemFromObject(m, "manifest");
    char *txt = cJSON_Print(m);
    tu_write(meta, txt);
    free(txt);
    cJSON_Delete(m);
    ck_assert_msg(open_set(set) == 0, "%s", gma_error());
    /* a shard replaced afterwards by another set's: refused, naming it */
    ck_assert_msg(run("bin/gmadata prepare %s --tokenizer bpe:%s/ktok --out %s/kother --quiet && "
                      "bin/gmadata prepare %s --tokenizer bytes --out %s --quiet && cp %s/kother/valid.bin %s/valid.bin",
                      corpus, tu_tmpdir(), tu_tmpdir(), corpus, set, tu_tmpdir(), set) == 0,
                  "%s", g_out);
    ck_assert_int_eq(open_set(set), -1);
    ck_assert_msg(strstr(gma_error(), "valid.bin"), "%s", gma_error());
}
END_TEST

/* a re-run of prepare removes the NAME.tmp.PID a killed one left (PID gone), not a live
 * process's, nor files of other names */
START_TEST(test_prepare_sweeps_stale_tmp) {
    const char *corpus = tu_path("sc"), *set = tu_path("sset");
    write_corpus(corpus);
    gma_mkdirs(set);
    int dead = tu_dead_pid(), live = (int)getpid();
    char p[4][700];
    snprintf(p[0], sizeof p[0], "%s/train.bin.tmp.%d", set, dead);
    snprintf(p[1], sizeof p[1], "%s/meta.json.tmp.%d", set, dead);
    snprintf(p[2], sizeof p[2], "%s/valid.bin.tmp.%d", set, live);
    snprintf(p[3], sizeof p[3], "%s/notes.txt.tmp.%d", set, dead);
    for (int i = 0; i < 4; i++) tu_write(p[i], "left behind");
    ck_assert_msg(run("bin/gmadata prepare %s --tokenizer bytes --out %s", corpus, set) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "removed 2 stale temporary files"), "%s", g_out);
    ck_assert(!gma_path_exists(p[0]) && !gma_path_exists(p[1]));
    ck_assert_msg(gma_path_exists(p[2]), "a live process's temporary was removed");
    ck_assert_msg(gma_path_exists(p[3]), "a file prepare does not write was removed");
    ck_assert_msg(run("bin/gmadata prepare %s --tokenizer bytes --out %s", corpus, set) == 0, "%s", g_out);
    ck_assert_msg(!strstr(g_out, "removed"), "%s", g_out);
}
END_TEST

/* an empty split is refused by name before anything is written; a train split shorter than
 * one training window is refused by gmatrain with both counts */
START_TEST(test_prepare_empty_split_and_short_train) {
    const char *corpus = tu_path("ec"), *set = tu_path("eset");
    write_corpus(corpus);
    char p[700];
    snprintf(p, sizeof p, "%s/valid.txt", corpus);
    tu_write(p, "");
    ck_assert_int_eq(run("bin/gmadata prepare %s --tokenizer bytes --out %s --quiet", corpus, set), 1);
    ck_assert_msg(strstr(g_out, "valid.txt: the valid split is empty") && strchr(g_out, '\n') == g_out + strlen(g_out) - 1,
                  "%s", g_out);
    ck_assert(!gma_path_exists(set));
    /* word level: a split of white space gives one <eos> per line only: too few tokens */
    tu_write(p, "   ");
    ck_assert_int_eq(run("bin/gmadata prepare %s --tokenizer word --out %s --quiet", corpus, set), 1);
    ck_assert_msg(strstr(g_out, "the valid split gives 1 token;"), "%s", g_out);
    tu_write(p, VALID);
    ck_assert_msg(run("bin/gmadata prepare %s --tokenizer bytes --out %s --quiet", corpus, set) == 0, "%s", g_out);
    /* train.bin holds strlen(TRAIN) tokens: a window of seq_len 512 needs 513 */
    ck_assert_int_eq(run("bin/gmatrain --config configs/quickstart.json --out %s/erun --quiet --threads 1 "
                         "--set data.source=shards --set data.path=%s --set train.steps=1 --set train.seq_len=512 "
                         "--set model.max_seq_len=512",
                         tu_tmpdir(), set),
                     2);
    char want[128];
    snprintf(want, sizeof want, "train.bin: %zu tokens; one training window of train.seq_len 512 needs 513", strlen(TRAIN));
    ck_assert_msg(strstr(g_out, want) && strchr(g_out, '\n') == g_out + strlen(g_out) - 1, "%s", g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("data_prepare");
    TCase *tc = tcase_create("prepare");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_prepare_wikitext_word);
    tcase_add_test(tc, test_prepare_text_corpus_bytes_and_bpe);
    tcase_add_test(tc, test_prepare_errors);
    tcase_add_test(tc, test_count_words);
    tcase_add_test(tc, test_prepare_killed_between_files);
    tcase_add_test(tc, test_prepare_sweeps_stale_tmp);
    tcase_add_test(tc, test_prepare_empty_split_and_short_train);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
