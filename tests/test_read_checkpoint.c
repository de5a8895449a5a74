/* test_read_checkpoint.c: scripts/read_checkpoint.py (standard library + numpy) against
 * the C reader: every tensor's name, shape and float32 values (%.9g gives them back
 * exactly) and the run's config, on a tiny trained checkpoint. Skipped, on a "SKIP: "
 * line, when no python3 with numpy is found ($PYTHON, python3, /usr/bin/python3). */
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "testutil.h"

static const char *find_python(void) {
    static char py[512];
    const char *env = getenv("PYTHON");
    const char *cand[3] = {env && env[0] ? env : "python3", "python3", "/usr/bin/python3"};
    for (int i = 0; i < 3; i++)
        if (run("%s -c 'import numpy' >/dev/null 2>&1", cand[i]) == 0) return snprintf(py, sizeof py, "%s", cand[i]), py;
    return NULL;
}

START_TEST(test_reader_matches_the_c_reader) {
    const char *py = find_python();
    if (!py) {
        printf("SKIP: test_read_checkpoint: no python3 with numpy (set PYTHON=...)\n");
        return;
    }
    const char *r = tu_path("run");
    ck_assert_msg(run("./bin/gmatrain --config configs/quickstart.json --out %s --quiet --threads 1 --set model.d_model=16 "
                      "--set model.n_layers=1 --set train.steps=3 --set train.eval_every=0 --set data.recall_valid=8 "
                      "--set data.recall_test=8",
                      r) == 0,
                  "%s", g_out);
    const char *listing = tu_path("listing.txt");
    ck_assert_msg(run("%s scripts/read_checkpoint.py %s --values > %s", py, r, listing) == 0, "%s", g_out);
    char *text = gma_read_file(listing, NULL);
    ck_assert_ptr_nonnull(text);
    char path[1200];
    snprintf(path, sizeof path, "%s/latest/model.safetensors", r);
    StFile f;
    ck_assert_int_eq(st_open(&f, path), 0);
    size_t cap = 1 << 20;
    char *want = xmalloc(cap);
    for (int i = 0; i < f.n; i++) {
        const StEntry *e = &f.e[i];
        /* the name line: name, shape [a, b], dtype; then the values line */
        char head[256], shape[96] = "[";
        for (int d = 0; d < e->ndim; d++)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld", d ? ", " : "", (long long)e->shape[d]);
        strcat(shape, "]");
        snprintf(head, sizeof head, "\n%s ", e->name);
        char *at = strstr(text, head);
        ck_assert_msg(at, "%s is not listed", e->name);
        char *eol = strchr(at + 1, '\n');
        ck_assert_msg(eol && strstr(at, shape) && strstr(at, shape) < eol && strstr(at, "float32") < eol, "%.120s", at + 1);
        float *v = xmalloc(sizeof(float) * (e->numel + 1));
        memcpy(v, e->data, sizeof(float) * e->numel);
        size_t n = 0;
        for (size_t k = 0; k < e->numel && n + 32 < cap; k++) n += (size_t)snprintf(want + n, cap - n, "%s%.9g", k ? " " : "", v[k]);
        free(v);
        char *end = strchr(eol + 1, '\n');
        ck_assert_ptr_nonnull(end);
        ck_assert_msg((size_t)(end - eol - 1) == n && !strncmp(eol + 1, want, n), "%s: values differ from the C reader",
                      e->name);
    }
    char tail[64];
    snprintf(tail, sizeof tail, "\n%d tensors, ", f.n);
    ck_assert_msg(strstr(text, tail), "%s", tail);
    free(want);
    free(text);
    st_close(&f);
    /* the config comes with it */
    ck_assert_msg(run("%s scripts/read_checkpoint.py %s --config", py, r) == 0 && strstr(g_out, "\"d_model\": 16"), "%s", g_out);
    /* a file that is not a checkpoint: one line, exit 2 */
    tu_write(tu_path("junk.safetensors"), "not a checkpoint at all");
    ck_assert_int_eq(run("%s scripts/read_checkpoint.py %s", py, tu_path("junk.safetensors")), 2);
    ck_assert_msg(strstr(g_out, "junk.safetensors: not a safetensors file") && !strchr(strchr(g_out, '\n') + 1, '\n'), "%s",
                  g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("read_checkpoint");
    TCase *tc = tcase_create("read_checkpoint");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_reader_matches_the_c_reader);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
