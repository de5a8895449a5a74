/* test_read_checkpoint.c: scripts/read_checkpoint.py (standard library + numpy) against
 * the C reader: every tensor's name, shape, the --values summary (min, max, mean, std of
 * the finite values, the non-finite count) and first values (%.9g gives them back
 * exactly), and the run's config, on a tiny trained checkpoint; the non-finite count on a
 * file holding NaN and Inf; quiet on a closed pipe. Skipped, on a "SKIP: " line, when no
 * python3 with numpy is found ($PYTHON, python3, /usr/bin/python3). */
#include <math.h>
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

/* the --values line under a tensor's name line: "  min A max B mean C std D non-finite N |
 * first K of M: V..." against the values v[0..n) */
static void check_summary(const char *name, const char *line, const float *v, size_t n) {
    double lo = INFINITY, hi = -INFINITY, sum = 0, ss = 0, st[4];
    size_t nf = 0;
    for (size_t k = 0; k < n; k++)
        if (isfinite(v[k])) lo = fmin(lo, v[k]), hi = fmax(hi, v[k]), sum += v[k], nf++;
    double mean = sum / (double)nf;
    for (size_t k = 0; k < n; k++)
        if (isfinite(v[k])) ss += (v[k] - mean) * (v[k] - mean);
    double want[4] = {lo, hi, mean, sqrt(ss / (double)nf)};
    int bad, first, used = 0;
    size_t of;
    ck_assert_msg(sscanf(line, "  min %lf max %lf mean %lf std %lf non-finite %d | first %d of %zu:%n", &st[0], &st[1], &st[2],
                         &st[3], &bad, &first, &of, &used) == 7 && used > 0,
                  "%s: %.200s", name, line);
    for (int j = 0; j < 4; j++)
        ck_assert_msg(fabs(st[j] - want[j]) <= 1e-5 * fabs(want[j]) + 1e-9, "%s: statistic %d is %g, want %g", name, j, st[j],
                      want[j]);
    ck_assert_msg(bad == (int)(n - nf) && of == n && first == (int)(n < 8 ? n : 8), "%s: %.200s", name, line);
    char want_first[512] = "";
    for (int k = 0; k < first; k++) snprintf(want_first + strlen(want_first), 32, " %.9g", v[k]);
    const char *eol = strchr(line, '\n');
    ck_assert_msg(eol && (size_t)(eol - line - used) == strlen(want_first) && !strncmp(line + used, want_first, strlen(want_first)),
                  "%s: first values '%.*s', want '%s'", name, eol ? (int)(eol - line - used) : 80, line + used, want_first);
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
        check_summary(e->name, eol + 1, v, e->numel);
        free(v);
    }
    char tail[64];
    snprintf(tail, sizeof tail, "\n%d tensors, ", f.n);
    ck_assert_msg(strstr(text, tail), "%s", tail);
    free(text);
    st_close(&f);
    /* non-finite values are counted, the statistics are those of the finite ones */
    float odd[5] = {1.0f, NAN, 3.0f, INFINITY, -2.0f};
    StTensor t = {.name = "odd", .ndim = 1, .shape = {5}, .data = odd};
    const char *mk[2] = {"format", "config"}, *mv[2] = {"gma-ckpt-1", "{}"};
    ck_assert_int_eq(st_write(tu_path("odd.safetensors"), &t, 1, mk, mv, 2), 0);
    ck_assert_msg(run("%s scripts/read_checkpoint.py %s --values", py, tu_path("odd.safetensors")) == 0, "%s", g_out);
    char *at = strstr(g_out, "\n  min ");
    ck_assert_msg(at && strstr(g_out, "non-finite 2 | first 5 of 5: 1 nan 3 inf -2"), "%s", g_out);
    check_summary("odd", at + 1, odd, 5);
    /* a closed pipe: no traceback. A listing of 2,000 tensors (over 100 KiB, more than a
     * pipe holds) cut by head after its first line: nothing on stderr */
    static StTensor many[2000];
    static char names[2000][16];
    for (int i = 0; i < 2000; i++) {
        snprintf(names[i], sizeof names[i], "t%04d", i);
        many[i] = (StTensor){.name = names[i], .ndim = 1, .shape = {1}, .data = odd};
    }
    ck_assert_int_eq(st_write(tu_path("many.safetensors"), many, 2000, mk, mv, 2), 0);
    ck_assert_msg(run("%s scripts/read_checkpoint.py %s --values 2>%s | head -1", py, tu_path("many.safetensors"),
                      tu_path("pipe.err")) == 0,
                  "%s", g_out);
    char *err = gma_read_file(tu_path("pipe.err"), NULL);
    ck_assert_msg(err && !err[0], "a closed pipe: %s", err ? err : "(no stderr file)");
    free(err);
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
