/* test_eval_text.c: bin/gmaeval --text FILE. A byte-level run trained a few steps on a digit
 * corpus scores a text file holding its test split exactly as it scores the split (the same
 * tokens through the run's own tokenizer: the same loss, tokens, words and word ppl), with
 * bits per byte = total NLL / ln 2 / the file's bytes; a run without a tokenizer (the recall
 * task), a missing file and --data with --text are refused with one line. Run from the
 * repository root (uses bin/). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char g_corpus[1100], g_run[1100];

/* the digit corpus (train, valid, test the same text), prepared with the bytes tokenizer,
 * and a 1-layer model trained on it (once per process) */
static void trained_run(void) {
    if (g_run[0]) return;
    snprintf(g_corpus, sizeof g_corpus, "%s", tu_path("digits"));
    char text[6000] = "", p[1200];
    for (int i = 0; i < 400; i++) strcat(text, (i % 10) == 9 ? "01234 56789\n" : "0123456789");
    ck_assert_int_eq(run("mkdir -p %s", g_corpus), 0);
    for (int s = 0; s < 3; s++) {
        snprintf(p, sizeof p, "%s/%s.txt", g_corpus, s == 0 ? "train" : s == 1 ? "valid" : "test");
        tu_write(p, text);
    }
    ck_assert_msg(run("bin/gmadata prepare %s --tokenizer bytes --out %s/shards --quiet", g_corpus, tu_tmpdir()) == 0, "%s",
                  g_out);
    snprintf(g_run, sizeof g_run, "%s/run", tu_tmpdir());
    ck_assert_msg(run("bin/gmatrain --config configs/quickstart.json --out %s --quiet --threads 1 --set data.source=shards "
                      "--set data.path=%s/shards --set model.vocab_size=256 --set model.n_layers=1 --set model.max_seq_len=32 "
                      "--set train.seq_len=32 --set train.batch_size=4 --set train.steps=10 --set train.eval_every=0 "
                      "--set train.checkpoint_every=10",
                      g_run, tu_tmpdir()) == 0,
                  "%s", g_out);
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(cJSON_IsNumber(v), "no number %s", key);
    return v->valuedouble;
}

static cJSON *load_json(const char *path) {
    char *s = gma_read_file(path, NULL);
    ck_assert_msg(s != NULL, "%s not written", path);
    cJSON *o = cJSON_Parse(s);
    free(s);
    ck_assert_ptr_nonnull(o);
    return o;
}

START_TEST(test_text_scores_as_the_split) {
    trained_run();
    char js[1200], jt[1200], txt[1200];
    snprintf(js, sizeof js, "%s/split.json", tu_tmpdir());
    snprintf(jt, sizeof jt, "%s/text.json", tu_tmpdir());
    snprintf(txt, sizeof txt, "%s/test.txt", g_corpus);
    ck_assert_msg(run("bin/gmaeval --checkpoint %s --data test --threads 1 --json %s", g_run, js) == 0, "%s", g_out);
    ck_assert_msg(run("bin/gmaeval --checkpoint %s --text %s --threads 1 --json %s", g_run, txt, jt) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "text loss ") && strstr(g_out, "| word ppl ") && strstr(g_out, "| bits/byte "), "%s", g_out);
    cJSON *s = load_json(js), *t = load_json(jt);
    /* the same tokens in the same windows: the same sums in the same order */
    ck_assert_double_eq(num(t, "tokens"), num(s, "tokens"));
    ck_assert_double_eq(num(t, "windows"), num(s, "windows"));
    ck_assert_double_eq(num(t, "loss"), num(s, "loss"));
    ck_assert_double_eq(num(t, "words"), num(s, "words"));
    ck_assert_double_eq(num(t, "word_ppl"), num(s, "word_ppl"));
    char *text = gma_read_file(txt, NULL);
    double bytes = (double)strlen(text);
    free(text);
    ck_assert_double_eq(num(t, "bytes"), bytes);
    double bpb = num(t, "loss") * num(t, "tokens") / (bytes * log(2.0));
    ck_assert_msg(fabs(num(t, "bits_per_byte") - bpb) <= 1e-12 * bpb, "bits per byte %g, want %g", num(t, "bits_per_byte"), bpb);
    cJSON_Delete(s), cJSON_Delete(t);
}
END_TEST

/* one line naming what is wrong, exit 2 */
static void refused(const char *what, const char *want, int rc) {
    ck_assert_msg(rc == 2 && strstr(g_out, want), "%s: rc %d: %s", what, rc, g_out);
    const char *first = strstr(g_out, "gmaeval: ");
    ck_assert_msg(first && !strstr(first + 1, "gmaeval: "), "%s: not one line: %s", what, g_out);
}

START_TEST(test_text_refusals) {
    trained_run();
    char rec[1200], txt[1200];
    snprintf(rec, sizeof rec, "%s/recall", tu_tmpdir());
    snprintf(txt, sizeof txt, "%s/test.txt", g_corpus);
    ck_assert_msg(run("bin/gmatrain --config configs/quickstart.json --out %s --quiet --threads 1 --set train.steps=1 "
                      "--set train.eval_every=0 --set data.recall_valid=4 --set data.recall_test=4",
                      rec) == 0,
                  "%s", g_out);
    refused("a run without a tokenizer", "has no tokenizer", run("bin/gmaeval --checkpoint %s --text %s", rec, txt));
    refused("a missing file", "nowhere.txt", run("bin/gmaeval --checkpoint %s --text %s/nowhere.txt", g_run, tu_tmpdir()));
    refused("--data and --text", "give one of them", run("bin/gmaeval --checkpoint %s --data test --text %s", g_run, txt));
    char one[1200];
    snprintf(one, sizeof one, "%s/one.txt", tu_tmpdir());
    tu_write(one, "7");
    refused("a text of one token", "only 1 token", run("bin/gmaeval --checkpoint %s --text %s", g_run, one));
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("eval_text");
    TCase *tc = tcase_create("eval_text");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_text_scores_as_the_split);
    tcase_add_test(tc, test_text_refusals);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
