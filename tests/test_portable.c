/* test_portable.c: runs and data directories that move (docs/data.md): gmadata prepare
 * copies the tokenizer's files into the data directory, a run keeps RUN/data.json and
 * RUN/tokenizer/, so gmaeval, gmasample and gmatrain --resume work from another folder
 * after the run and the data moved, and a train.sample_prompt run works after the BPE
 * tokenizer's own folder is gone. Run from the repository root (the binaries are called by
 * absolute path from other folders). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/checkpoint.h"
#include "testutil.h"

static char g_bin[1024];

static const char *bin(void) {
    if (!g_bin[0]) {
        char cwd[900];
        ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
        snprintf(g_bin, sizeof g_bin, "%s/bin", cwd);
    }
    return g_bin;
}

static int has(const char *s) { return strstr(g_out, s) != NULL; }

/* A/corpus prepared with a BPE tokenizer trained into A/tok (then deleted), and a run
 * trained from inside A with the relative data.path "shards" and a text sample prompt. */
static void make_run(const char *A) {
    char p[1200], text[20000] = "";
    ck_assert_int_eq(run("rm -rf %s && mkdir -p %s/corpus", A, A), 0);
    for (int i = 0; i < 400; i++) {
        char l[64];
        snprintf(l, sizeof l, "the cat sat on the mat %d\n", i % 7);
        strcat(text, l);
    }
    for (int s = 0; s < 3; s++) {
        snprintf(p, sizeof p, "%s/corpus/%s.txt", A, s == 0 ? "train" : s == 1 ? "valid" : "test");
        tu_write(p, text);
    }
    ck_assert_msg(run("cd %s && %s/gmadata train-tokenizer --vocab-size 300 --out tok --quiet corpus/train.txt && "
                      "%s/gmadata prepare corpus --tokenizer bpe:tok --out shards --quiet && rm -r tok",
                      A, bin(), bin()) == 0,
                  "%s", g_out);
    ck_assert_msg(run("cd %s && %s/gmatrain --config %s/../configs/quickstart.json --out run --quiet --threads 1 "
                      "--set data.source=shards --set data.path=shards --set model.vocab_size=300 --set model.n_layers=1 "
                      "--set model.max_seq_len=32 --set train.seq_len=32 --set train.batch_size=4 --set train.steps=20 "
                      "--set train.eval_every=0 --set train.checkpoint_every=10 --set train.sample_every=10 "
                      "--set 'train.sample_prompt=the cat' --set train.sample_tokens=4",
                      A, bin(), bin()) == 0,
                  "the sample prompt needs the tokenizer the data directory keeps: %s", g_out);
}

START_TEST(test_prepare_copies_the_tokenizer) {
    const char *A = tu_path("prep");
    make_run(A);
    char p[1200];
    snprintf(p, sizeof p, "%s/shards/meta.json", A);
    char *meta = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(meta);
    ck_assert_msg(strstr(meta, "\"tokenizer_files\":\t[\"encoder.json\", \"vocab.bpe\"]"), "%s", meta);
    free(meta);
    snprintf(p, sizeof p, "%s/run/data.json", A);
    char *dj = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(dj);
    ck_assert_msg(strstr(dj, "\"path\":\t\"shards\"") && strstr(dj, "\"path_abs\":\t\"/") &&
                      strstr(dj, "tokenizer/vocab.bpe"),
                  "%s", dj);
    free(dj);
    snprintf(p, sizeof p, "%s/run/tokenizer/encoder.json", A);
    ck_assert(gma_path_exists(p));
    /* the training samples are text, continuing the prompt */
    snprintf(p, sizeof p, "%s/run/metrics.jsonl", A);
    char *m = gma_read_file(p, NULL);
    ck_assert_msg(m && strstr(m, "\"prompt\":\"the cat\""), "%s", m ? m : "");
    free(m);
}
END_TEST

START_TEST(test_moved_run_and_data) {
    const char *A = tu_path("orig"), *B = tu_path("moved"), *D = tu_path("elsewhere");
    make_run(A);
    ck_assert_int_eq(run("mkdir -p %s && mv %s %s", D, A, B), 0);
    /* the whole folder moved: data.path "shards" is found beside the run */
    ck_assert_msg(run("cd %s && %s/gmaeval --checkpoint %s/run --data test", D, bin(), B) == 0, "%s", g_out);
    ck_assert_msg(has("\ntest loss ") && has(" | ppl ") && has(" | word ppl ") && has(" tokens in ") && !has(" | acc "),
                  "labelled values, acc only where it is measured: %s", g_out);
    /* resumed from elsewhere, the data found beside the run: the checkpoints keep data.path as given */
    ck_assert_msg(run("cd %s && %s/gmatrain --resume %s/run --quiet --set train.steps=25", D, bin(), B) == 0, "%s", g_out);
    Config c25;
    char p25[1200];
    snprintf(p25, sizeof p25, "%s/run/latest", B);
    ck_assert_int_eq(ckpt_read_config(p25, &c25), 0);
    ck_assert_str_eq(c25.data.path, "shards");
    /* now the run and the data apart, evaluated from a third folder */
    ck_assert_int_eq(run("mkdir -p %s/r %s/d && mv %s/run %s/r/run && mv %s/shards %s/d/shards", B, B, B, B, B, B), 0);
    ck_assert_int_eq(run("cd %s && %s/gmaeval --checkpoint %s/r/run --data valid", D, bin(), B), 2);
    ck_assert_msg(has("--data-path DIR") && has("/moved/shards, shards, ") && !strchr(strchr(g_out, '\n') + 1, '\n'),
                  "one line naming the paths tried and the flag: %s", g_out);
    ck_assert_msg(run("cd %s && %s/gmaeval --checkpoint %s/r/run --data valid --data-path %s/d/shards", D, bin(), B, B) == 0,
                  "%s", g_out);
    ck_assert_msg(has("valid loss "), "%s", g_out);
    /* the split evaluated is the only shard read */
    ck_assert_int_eq(run("mkdir -p %s/v && cp %s/d/shards/valid.bin %s/d/shards/meta.json %s/v/", B, B, B, B), 0);
    ck_assert_msg(run("cd %s && %s/gmaeval --checkpoint %s/r/run --data valid --data-path %s/v", D, bin(), B, B) == 0,
                  "no train.bin needed: %s", g_out);
    /* sampling needs no data directory: the run keeps the tokenizer */
    ck_assert_int_eq(run("mv %s/d/shards %s/d/hidden", B, B), 0);
    ck_assert_msg(run("cd %s && %s/gmasample --checkpoint %s/r/run --prompt 'the cat' --tokens 4 ", D, bin(), B) == 0,
                  "%s", g_out);
    ck_assert_msg(has("\nthe cat"), "%s", g_out); /* after the banner line */
    /* resume: refused with the override named, then continued with it */
    ck_assert_int_eq(run("cd %s && %s/gmatrain --resume %s/r/run --quiet --set train.steps=30", D, bin(), B), 2);
    ck_assert_msg(has("--set data.path=DIR"), "%s", g_out);
    char s2[1200];
    snprintf(s2, sizeof s2, "%s/d/hidden", B);
    ck_assert_msg(run("cd %s && %s/gmatrain --resume %s/r/run --quiet --set train.steps=30 --set data.path=%s", D, bin(), B,
                      s2) == 0,
                  "%s", g_out);
    char p[1200];
    snprintf(p, sizeof p, "%s/r/run/summary.json", B);
    char *s = gma_read_file(p, NULL);
    ck_assert_msg(s && strstr(s, "\"steps\":\t30"), "%s", s ? s : "");
    free(s);
    /* the checkpoint has the data.path given on resume; data.json records where the data is */
    Config cfg;
    snprintf(p, sizeof p, "%s/r/run/latest", B);
    ck_assert_int_eq(ckpt_read_config(p, &cfg), 0);
    ck_assert_str_eq(cfg.data.path, s2);
    snprintf(p, sizeof p, "%s/r/run/data.json", B);
    s = gma_read_file(p, NULL);
    ck_assert_msg(s && strstr(s, "/d/hidden\""), "%s", s ? s : "");
    free(s);
}
END_TEST

/* An older data directory (meta.json with the tokenizer's name only) and a run without
 * data.json: the tokenizer is found as before. */
START_TEST(test_older_meta_json) {
    const char *A = tu_path("old");
    make_run(A);
    ck_assert_int_eq(run("cd %s && rm -r run/data.json run/tokenizer && mkdir tok2 && mv shards/encoder.json shards/vocab.bpe tok2/ && "
                         "printf '{\"tokenizer\": \"bpe:tok2\", \"vocab_size\": 276}\\n' > shards/meta.json",
                         A),
                     0);
    ck_assert_msg(run("cd %s && %s/gmasample --checkpoint run --prompt 'the cat' --tokens 2", A, bin()) == 0, "%s",
                  g_out);
    ck_assert_msg(has("\nthe cat"), "%s", g_out); /* after the banner line */
    ck_assert_msg(run("cd %s && %s/gmaeval --checkpoint run --data test", A, bin()) == 0, "%s", g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("portable");
    TCase *tc = tcase_create("portable");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_prepare_copies_the_tokenizer);
    tcase_add_test(tc, test_moved_run_and_data);
    tcase_add_test(tc, test_older_meta_json);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
