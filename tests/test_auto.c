/* test_auto.c: `mixer: "auto"` with both paths trained and its calibrated threshold
 * (docs/baselines.md, docs/model.md §3.6): the calibration file's reader on files this test
 * writes (never on timings), model.auto_threshold "calibrated" through the configuration,
 * and short gmatrain runs below the threshold showing that without distillation GMA's own
 * tensors keep their initial values while with auto.distill_weight both paths' tensors move. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "model/model.h"
#include "nn/mixers/auto_calib.h"
#include "testutil.h"

static const char *calib(const char *name, const char *text) {
    const char *p = tu_path(name);
    tu_write(p, text);
    return p;
}

START_TEST(test_reader) {
    static const struct {
        const char *crossover;
        int measured, threshold;
    } ok[] = {{"3000", 3000, 3000}, {"2048", 2048, 2048}, {"512", 512, 2048}, {"9000", 9000, 4096}, {"-1", -1, 4096}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "{\"format\": \"%s\", \"crossover\": %s, \"measure\": \"train_forward\"}", AUTO_CALIB_FORMAT,
                 ok[i].crossover);
        int m = 0, t = 0;
        ck_assert_msg(auto_calibration_read(calib("c.json", text), &m, &t) == 0, "%s", gma_error());
        ck_assert_int_eq(m, ok[i].measured);
        ck_assert_int_eq(t, ok[i].threshold);
    }
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"{\"format\": \"gma-auto-calibration\", \"crossover\": 0}", "key crossover"},
        {"{\"format\": \"gma-auto-calibration\", \"crossover\": 2500.5}", "key crossover"},
        {"{\"format\": \"gma-auto-calibration\", \"crossover\": \"2K\"}", "key crossover"},
        {"{\"format\": \"gma-auto-calibration\"}", "key crossover"},
        {"{\"format\": \"other\", \"crossover\": 3000}", "key format"},
        {"{\"crossover\": 3000", "not a JSON object"},
        {"[3000]", "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int m = 7, t = 7;
        const char *p = calib("bad.json", bad[i].text);
        ck_assert_int_ne(auto_calibration_read(p, &m, &t), 0);
        ck_assert_msg(strstr(gma_error(), p) && strstr(gma_error(), bad[i].msg), "%s: %s", bad[i].text, gma_error());
        ck_assert_int_eq(m, 7); /* nothing written on an error */
        ck_assert_int_eq(t, 7);
    }
    ck_assert_int_ne(auto_calibration_read(tu_path("none.json"), &(int){0}, &(int){0}), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "gmabench calibrate"));
}
END_TEST

/* the configuration: "calibrated" is kept as the word, read at validation and creation */
START_TEST(test_config_calibrated) {
    Config c = tu_tiny_config("auto");
    char set[1200];
    const char *p = calib("cal.json", "{\"format\": \"gma-auto-calibration\", \"crossover\": 1000}");
    snprintf(set, sizeof set, "auto.calibration=%s", p);
    ck_assert_int_eq(cfg_set(&c, set), 0);
    ck_assert_int_eq(cfg_set(&c, "model.auto_threshold=calibrated"), 0);
    ck_assert_int_eq(cfg_validate(&c), 0);
    char *js = cfg_to_json(&c);
    ck_assert_ptr_nonnull(strstr(js, "\"auto_threshold\":\t\"calibrated\""));
    Config back;
    cfg_defaults(&back);
    ck_assert_int_eq(cfg_load_text(&back, js, "dump"), 0); /* the dump loads back */
    ck_assert(cfg_num(&back, "model.auto_threshold") == cfg_num(&c, "model.auto_threshold"));
    free(js);
    Model m;
    ck_assert_int_eq(model_build(&m, &c), 0);
    ck_assert_int_eq(mixer_auto_threshold(m.blocks[0].mixer), AUTO_BAND_LO); /* 1000 below the band */
    model_free(&m);
    ck_assert_int_eq(cfg_set(&c, "model.auto_threshold=3000"), 0);
    ck_assert_int_eq(model_build(&m, &c), 0);
    ck_assert_int_eq(mixer_auto_threshold(m.blocks[0].mixer), 3000); /* a number is taken as it is */
    model_free(&m);
    /* errors: an unknown word, a missing file */
    ck_assert_int_ne(cfg_set(&c, "model.auto_threshold=measured"), 0);
    ck_assert_msg(strstr(gma_error(), "key model.auto_threshold: \"measured\" is not a number in [1, 16777216] or one of calibrated"), "%s", gma_error());
    ck_assert_int_ne(cfg_load_text(&c, "{\"model\": {\"auto_threshold\": true}}", "f.json"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "f.json: key model.auto_threshold: expected a number or one of calibrated"));
    snprintf(set, sizeof set, "auto.calibration=%s", tu_path("missing.json"));
    ck_assert_int_eq(cfg_set(&c, set), 0);
    ck_assert_int_eq(cfg_set(&c, "model.auto_threshold=calibrated"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "key model.auto_threshold \"calibrated\"") && strstr(gma_error(), "missing.json"), "%s",
                  gma_error());
}
END_TEST

static const char *TINY =
    "{\"name\": \"a\", \"seed\": 5,\n"
    " \"model\": {\"d_model\": 16, \"n_layers\": 1, \"n_heads\": 2, \"max_seq_len\": 16, \"mixer\": \"auto\", \"auto_threshold\": 100},\n"
    " \"gma\": {\"n_components\": 4, \"chunk\": 8, \"monitor_every\": 0},\n"
    " \"train\": {\"steps\": 6, \"batch_size\": 4, \"seq_len\": 16, \"lr\": 0.01, \"warmup\": 0, \"eval_every\": 0,\n"
    "           \"log_every\": 1, \"checkpoint_every\": 0},\n"
    " \"data\": {\"recall_vocab\": 20, \"recall_pairs\": 3, \"recall_valid\": 8, \"recall_test\": 8}}\n";

/* the largest |a - b| of tensor name between the runs' final checkpoints */
static double tensor_diff(const char *run_a, const char *run_b, const char *name) {
    char pa[1200], pb[1200];
    snprintf(pa, sizeof pa, "%s/latest/model.safetensors", run_a);
    snprintf(pb, sizeof pb, "%s/latest/model.safetensors", run_b);
    StFile a, b;
    ck_assert_int_eq(st_open(&a, pa), 0);
    ck_assert_int_eq(st_open(&b, pb), 0);
    const StEntry *ea = st_find(&a, name), *eb = st_find(&b, name);
    ck_assert_msg(ea && eb && ea->numel == eb->numel, "%s", name);
    real *x = xcalloc(2 * ea->numel, sizeof(real));
    st_read_tensor(ea, x);
    st_read_tensor(eb, x + ea->numel);
    double d = 0;
    for (size_t i = 0; i < ea->numel; i++) d = fmax(d, fabs((double)x[i] - x[ea->numel + i]));
    free(x);
    st_close(&a);
    st_close(&b);
    return d;
}

START_TEST(test_both_paths_train) {
    tu_write(tu_path("a.json"), TINY);
    /* a missing calibration: one line naming the key and the file, exit 2, no run folder */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet --set model.auto_threshold=calibrated "
                         "--set auto.calibration=%s", tu_path("a.json"), tu_path("nocal"), tu_path("nocal.json")), 2);
    const char *nl = strchr(g_out, '\n');
    ck_assert_msg(strstr(g_out, "model.auto_threshold") && strstr(g_out, "nocal.json") && nl && !nl[1], "%s", g_out);
    ck_assert(!gma_path_exists(tu_path("nocal")));
    const char *runs[3][2] = {{"init", "--set train.lr=0"}, {"old", ""}, {"distill", "--set auto.distill_weight=1"}};
    char dir[3][1024];
    for (int i = 0; i < 3; i++) {
        snprintf(dir[i], sizeof dir[i], "%s", tu_path(runs[i][0]));
        ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set threads=1 %s", tu_path("a.json"), dir[i], runs[i][1]) == 0,
                      "%s", g_out);
    }
    const char *sdpa_t[] = {"blocks.0.mixer.q.weight", "blocks.0.mixer.v.weight", "blocks.0.mixer.o.weight"};
    const char *gma_t[] = {"blocks.0.mixer.gma.mu", "blocks.0.mixer.gma.var_raw", "blocks.0.mixer.gma.prior_logits"};
    for (int k = 0; k < 3; k++) {
        double old = tensor_diff(dir[0], dir[1], sdpa_t[k]), dis = tensor_diff(dir[0], dir[2], sdpa_t[k]);
        printf("%-34s moved: old auto %.3g, distilled %.3g\n", sdpa_t[k], old, dis);
        ck_assert(old > 1e-4 && dis > 1e-4); /* the shared projections train in both */
    }
    for (int k = 0; k < 3; k++) {
        double old = tensor_diff(dir[0], dir[1], gma_t[k]), dis = tensor_diff(dir[0], dir[2], gma_t[k]);
        printf("%-34s moved: old auto %.3g, distilled %.3g\n", gma_t[k], old, dis);
        ck_assert_msg(old == 0, "%s moved without distillation", gma_t[k]); /* only the sdpa path ran */
        ck_assert_msg(dis > 1e-4, "%s did not move with distillation", gma_t[k]);
    }
    /* the distillation loss is logged (div_loss: w x it) and falls */
    char p[1200];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir[2]);
    char *m = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(m);
    const char *first = strstr(m, "\"div_loss\":"), *last = first;
    ck_assert_ptr_nonnull(first);
    for (const char *q = first; (q = strstr(q + 1, "\"div_loss\":"));) last = q;
    double d0 = atof(first + 11), d1 = atof(last + 11);
    printf("distillation loss: step 1 %.4f, last step %.4f\n", d0, d1);
    ck_assert(d0 > 0 && d1 < d0);
    free(m);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("auto: calibration and both paths");
    TCase *tc = tcase_create("auto");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_reader);
    tcase_add_test(tc, test_config_calibrated);
    tcase_add_test(tc, test_both_paths_train);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
