/* test_train_errors.c: failures at the ends of a run through bin/gmatrain (run from the
 * repository root): a run file that cannot be written (config.json at the start,
 * summary.json at the end) and a final evaluation that fails are errors, with one line
 * naming what failed and a non-zero exit, and leave what is already on disk intact. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safetensors.h"
#include "testutil.h"

static const char *TINY =
    "{\"name\": \"tiny\", \"seed\": 5,\n"
    " \"model\": {\"d_model\": 16, \"n_layers\": 1, \"n_heads\": 2, \"max_seq_len\": 16, \"mixer\": \"gma\"},\n"
    " \"gma\": {\"n_components\": 4, \"chunk\": 4},\n"
    " \"train\": {\"steps\": 4, \"batch_size\": 4, \"seq_len\": 16, \"lr\": 0.01, \"warmup\": 0,\n"
    "           \"eval_every\": 0, \"log_every\": 2, \"checkpoint_every\": 0},\n"
    " \"data\": {\"recall_vocab\": 20, \"recall_pairs\": 3, \"recall_valid\": 16, \"recall_test\": 16}}\n";

/* the contents of RUN/name (NULL when missing) */
static char *slurp(const char *run_dir, const char *name, size_t *len) {
    char p[1100];
    snprintf(p, sizeof p, "%s/%s", run_dir, name);
    return gma_read_file(p, len);
}

static long latest_step(const char *run_dir) {
    char p[1100];
    snprintf(p, sizeof p, "%s/latest/model.safetensors", run_dir);
    StFile f;
    ck_assert_msg(st_open(&f, p) == 0, "%s", gma_error());
    long step = atol(st_meta(&f, "step"));
    st_close(&f);
    return step;
}

/* the output holds exactly one "gmatrain: " line, and it contains `what` */
static void one_line_naming(const char *what) {
    const char *first = strstr(g_out, "gmatrain: ");
    ck_assert_msg(first && !strstr(first + 1, "gmatrain: "), "not one line: %s", g_out);
    const char *eol = strchr(first, '\n');
    ck_assert_msg(eol && !strchr(eol + 1, '\n'), "more than one line: %s", g_out);
    ck_assert_msg(strstr(first, what), "no \"%s\" in: %s", what, g_out);
}

static void make_dir(const char *run_dir, const char *name) {
    char p[1100];
    gma_mkdirs(run_dir);
    snprintf(p, sizeof p, "%s/%s", run_dir, name);
    ck_assert_int_eq(mkdir(p, 0755), 0);
}

START_TEST(test_config_json_unwritable) {
    tu_write(tu_path("tiny.json"), TINY);
    /* fresh run: config.json cannot be replaced (a directory holds its name) */
    const char *fresh = tu_path("fresh");
    make_dir(fresh, "config.json");
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("tiny.json"), fresh), 1);
    one_line_naming("config.json");
    char *m = slurp(fresh, "metrics.jsonl", NULL);
    ck_assert_msg(m == NULL, "metrics.jsonl was written");
    char p[1100];
    snprintf(p, sizeof p, "%s/latest", fresh);
    ck_assert(!gma_path_exists(p));
    /* resume: the run's files stay as they were */
    const char *res = tu_path("res");
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("tiny.json"), res) == 0, "%s", g_out);
    size_t lm0, ls0, lk0, lm1, ls1, lk1;
    char *m0 = slurp(res, "metrics.jsonl", &lm0), *s0 = slurp(res, "summary.json", &ls0),
         *k0 = slurp(res, "latest/model.safetensors", &lk0);
    ck_assert(m0 && s0 && k0);
    snprintf(p, sizeof p, "%s/config.json", res);
    ck_assert_int_eq(unlink(p), 0);
    make_dir(res, "config.json");
    ck_assert_int_eq(run("./bin/gmatrain --config %s --resume %s --quiet --set train.steps=8", tu_path("tiny.json"), res), 1);
    one_line_naming("config.json");
    char *m1 = slurp(res, "metrics.jsonl", &lm1), *s1 = slurp(res, "summary.json", &ls1),
         *k1 = slurp(res, "latest/model.safetensors", &lk1);
    ck_assert(lm0 == lm1 && !memcmp(m0, m1, lm0));
    ck_assert(ls0 == ls1 && !memcmp(s0, s1, ls0));
    ck_assert(lk0 == lk1 && !memcmp(k0, k1, lk0));
    ck_assert_int_eq(latest_step(res), 4);
    free(m0), free(s0), free(k0), free(m1), free(s1), free(k1);
}
END_TEST

START_TEST(test_final_eval_fails) {
    tu_write(tu_path("tiny.json"), TINY);
    /* fresh: exit 1, one line, the trained model kept, no summary */
    const char *a = tu_path("a");
    setenv("GMA_FAULT_FINAL_EVAL", "valid", 1);
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("tiny.json"), a), 1);
    unsetenv("GMA_FAULT_FINAL_EVAL");
    one_line_naming("final evaluation of the valid split failed");
    char *s = slurp(a, "summary.json", NULL);
    ck_assert_msg(s == NULL, "summary.json written after a failed evaluation");
    ck_assert_int_eq(latest_step(a), 4);
    /* resumed: the earlier summary and metrics rows are kept as they were */
    size_t lm0, ls0, lm1, ls1;
    const char *b = tu_path("b");
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("tiny.json"), b) == 0, "%s", g_out);
    char *m0 = slurp(b, "metrics.jsonl", &lm0), *s0 = slurp(b, "summary.json", &ls0);
    setenv("GMA_FAULT_FINAL_EVAL", "test", 1);
    ck_assert_int_eq(run("./bin/gmatrain --resume %s --quiet --set train.steps=6", b), 1);
    unsetenv("GMA_FAULT_FINAL_EVAL");
    one_line_naming("final evaluation of the test split failed");
    char *m1 = slurp(b, "metrics.jsonl", &lm1), *s1 = slurp(b, "summary.json", &ls1);
    ck_assert(ls0 == ls1 && !memcmp(s0, s1, ls0));
    ck_assert(lm1 >= lm0 && !memcmp(m0, m1, lm0));
    ck_assert_msg(!strstr(m1 + lm0, "\"split\":\"test\""), "a test row after the failed evaluation: %s", m1 + lm0);
    ck_assert_int_eq(latest_step(b), 6);
    free(m0), free(s0), free(m1), free(s1);
    /* and the next resume evaluates and writes the summary */
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=6", b) == 0, "%s", g_out);
    s1 = slurp(b, "summary.json", NULL);
    ck_assert_ptr_nonnull(s1);
    ck_assert_msg(strstr(s1, "\"steps\":\t6"), "%s", s1);
    free(s1);
}
END_TEST

START_TEST(test_summary_json_unwritable) {
    tu_write(tu_path("tiny.json"), TINY);
    const char *c = tu_path("c");
    make_dir(c, "summary.json");
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("tiny.json"), c), 1);
    one_line_naming("summary.json");
    ck_assert_int_eq(latest_step(c), 4);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("train_errors");
    TCase *tc = tcase_create("train_errors");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_config_json_unwritable);
    tcase_add_test(tc, test_final_eval_fails);
    tcase_add_test(tc, test_summary_json_unwritable);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
