/* test_bench_summary.c: the plumbing of `make bench`'s end (timings are never asserted):
 * gmabench prefill writes a row per mixer and N with the time to first token, the training
 * forward and decode after the prefill, and the crossover rows against sdpa; gmabench
 * summary reads such files back into one table (date, CPU model, BLAS build and kernels,
 * every section with its columns), takes the PyTorch peer from bench_torch.sh's directory
 * (a hand-written pair of files: the ratio is theirs), and refuses an unreadable or
 * non-JSON input naming it; gmabench cross writes a row per context length and kind;
 * scripts/bench_all.sh --quick runs the whole chain. Run from the
 * repository root (uses bin/ and scripts/). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SHAPE "--L 1 --D 16 --H 2 --V 64 --Kc 4 --threads 1"

START_TEST(test_prefill_rows) {
    char js[1100];
    snprintf(js, sizeof js, "%s/prefill.json", tu_tmpdir());
    ck_assert_msg(run("bin/gmabench prefill --mixers gma,sdpa,mamba " SHAPE " --seq 40,80 --repeat 2 --feed-max 40 "
                      "--json %s", js) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "ttft ms") && strstr(g_out, "crossover against sdpa"), "%s", g_out);
    char *x = gma_read_file(js, NULL);
    ck_assert_ptr_nonnull(x);
    cJSON *j = cJSON_Parse(x), *rows = cJSON_GetObjectItem(j, "prefill");
    ck_assert_int_eq(cJSON_GetArraySize(rows), 6);
    const char *mix[] = {"gma", "sdpa", "mamba"};
    for (int i = 0; i < 6; i++) { /* N outer, mixers inner: side by side at each N */
        cJSON *r = cJSON_GetArrayItem(rows, i);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "mixer")), mix[i % 3]);
        ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "N")), i < 3 ? 40 : 80);
        const char *keys[] = {"ttft_s", "prefill_tokens_per_s", "train_forward_tokens_per_s", "prefill_over_forward",
                              "decode_tokens_per_s", "ttft_s_min", "ttft_s_max"};
        for (int k = 0; k < 7; k++)
            ck_assert_msg(cJSON_GetNumberValue(cJSON_GetObjectItem(r, keys[k])) > 0, "row %d lacks %s", i, keys[k]);
        /* fed a step a token only up to --feed-max */
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(r, "fed_s")) == (i < 3));
    }
    cJSON *cr = cJSON_GetObjectItem(j, "prefill_crossover");
    ck_assert_int_eq(cJSON_GetArraySize(cr), 2); /* gma and mamba against sdpa */
    for (int i = 0; i < 2; i++) {
        double at = cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cr, i), "prefill_ahead_from_N"));
        ck_assert_msg(at == -1 || at == 40 || at == 80, "crossover %g is not a measured N", at);
    }
    cJSON_Delete(j);
    free(x);
}
END_TEST

/* gmabench cross: a row per context length and kind, side by side, with time, CPU time and
 * memory; a kind without a cross layer says so; a point past --max-mem-gib is skipped */
START_TEST(test_cross_rows) {
    char js[1100];
    snprintf(js, sizeof js, "%s/cross.json", tu_tmpdir());
    ck_assert_msg(run("bin/gmabench cross --mixers gma,sdpa,linear --seq 24,48 --D 16 --H 2 --Kc 4 --threads 1 --repeat 2 "
                      "--json %s", js) == 0, "%s", g_out);
    char *x = gma_read_file(js, NULL);
    ck_assert_ptr_nonnull(x);
    cJSON *j = cJSON_Parse(x), *rows = cJSON_GetObjectItem(j, "cross");
    ck_assert_int_eq(cJSON_GetArraySize(rows), 6);
    const char *kind[] = {"gma", "sdpa", "linear"};
    for (int i = 0; i < 6; i++) {
        cJSON *r = cJSON_GetArrayItem(rows, i);
        ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "kind")), kind[i % 3]);
        ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "M")), i < 3 ? 24 : 48);
        if (i % 3 == 2) {
            ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "skipped")), "n/a: no cross layer");
            continue;
        }
        const char *keys[] = {"ms", "cpu_ms", "planned_mib", "ms_min", "ms_max"};
        for (int k = 0; k < 5; k++)
            ck_assert_msg(cJSON_GetNumberValue(cJSON_GetObjectItem(r, keys[k])) > 0, "row %d lacks %s", i, keys[k]);
        ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(r, "peak_mib")));
    }
    /* the planned memory grows with M */
    ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 3), "planned_mib")) >
              cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 0), "planned_mib")));
    cJSON_Delete(j);
    free(x);
    ck_assert_msg(run("bin/gmabench cross --mixers sdpa --seq 24 --D 16 --H 2 --threads 1 --max-mem-gib 0") == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "skipped: memory"), "%s", g_out);
}
END_TEST

START_TEST(test_summary_table) {
    const char *d = tu_tmpdir();
    char in[4096], torch[1100], p[1200];
    snprintf(torch, sizeof torch, "%s/torch", d);
    ck_assert_int_eq(run("mkdir -p %s", torch), 0);
    ck_assert_int_eq(run("bin/gmabench mixer --mixers gma,sdpa --seq 32,64 --D 16 --H 2 --Kc 4 --threads 1 --repeat 1 "
                         "--json %s/m.json", d), 0);
    ck_assert_int_eq(run("bin/gmabench model --mixers gma,sdpa " SHAPE " --T 16 --B 2 --steps 1 --json %s/mo.json", d), 0);
    ck_assert_int_eq(run("bin/gmabench decode --mixers gma,sdpa " SHAPE " --T 16 --samples 1,3 --repeat 1 --json %s/de.json",
                         d), 0);
    ck_assert_int_eq(run("bin/gmabench prefill --mixers gma,sdpa " SHAPE " --seq 32 --repeat 1 --json %s/p.json", d), 0);
    /* the peer's pair: torch 100 tok/s, gma 250 tok/s on its shapes -> 2.50 */
    snprintf(p, sizeof p, "%s/torch_gma.json", torch);
    tu_write(p, "{\"tokens_per_s\": 100, \"torch\": \"2.x\"}");
    snprintf(p, sizeof p, "%s/gma_gma.json", torch);
    tu_write(p, "{\"model\": [{\"mixer\": \"gma\", \"dropout\": 0.1, \"tokens_per_s\": 99},"
                " {\"mixer\": \"gma\", \"dropout\": 0, \"tokens_per_s\": 250}]}");
    snprintf(in, sizeof in, "%s/m.json,%s/mo.json,%s/de.json,%s/p.json", d, d, d, d);
    ck_assert_msg(run("bin/gmabench summary --in %s --torch %s", in, torch) == 0, "%s", g_out);
    const char *want[] = {"## summary | 20", " UTC | ", " cores | ", "kernels ", "training tok/s", "torch eager",
                          "layer time / sdpa", "layer peak MiB", "N=32", "N=64", "decode tok/s (/limit)", "M=1", "M=3",
                          "ttft ms (/train fwd)"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) ck_assert_msg(strstr(g_out, want[i]), "no \"%s\" in:\n%s", want[i], g_out);
    /* gma's training row: its 250 against torch's 100; sdpa has no peer files */
    const char *g = strstr(strstr(g_out, "training tok/s"), "\n") + 1;
    ck_assert_msg(strstr(g, "250") && strstr(g, "100") && strstr(g, "2.50") && strstr(g, "2.50") < strstr(g, "\n"),
                  "%s", g_out);
    ck_assert_msg(strstr(g_out, "no peer files"), "%s", g_out);
    /* sdpa's own layer ratio is 1.00 at every N */
    const char *l = strstr(g_out, "layer time / sdpa"), *s = strstr(l, "sdpa ");
    ck_assert_msg(s && strstr(s, "1.00"), "%s", g_out);
    /* unreadable and non-JSON inputs: exit 2 naming the file */
    ck_assert_int_eq(run("bin/gmabench summary --in %s/absent.json", d), 2);
    ck_assert_msg(strstr(g_out, "absent.json"), "%s", g_out);
    snprintf(p, sizeof p, "%s/bad.json", d);
    tu_write(p, "{\"mixer\": [");
    ck_assert_int_eq(run("bin/gmabench summary --in %s", p), 2);
    ck_assert_msg(strstr(g_out, "bad.json: not JSON"), "%s", g_out);
}
END_TEST

/* a row's label is the model's model.mixer list where --set replaces the mixer; gmabench
 * model's rows carry their peak and planned memory, one step only past --max-seconds and the
 * plan alone past --max-mem-gib;
 * plot_scaling.sh tabulates and plots mixer and model rows against N */
START_TEST(test_labels_memory_scaling) {
    const char *d = tu_tmpdir();
    ck_assert_msg(run("bin/gmabench prefill --mixers gma --L 2 --D 16 --H 2 --V 64 --Kc 4 --threads 1 --seq 32 --repeat 1 "
                      "--feed-max 0 --set model.mixer=gma,sdpa --json %s/pl.json", d) == 0, "%s", g_out);
    char p[1200];
    snprintf(p, sizeof p, "%s/pl.json", d);
    char *x = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(x);
    cJSON *j = cJSON_Parse(x);
    cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "prefill"), 0);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r0, "mixer")), "gma,sdpa");
    cJSON_Delete(j);
    free(x);
    for (int one = 0; one < 2; one++) {
        ck_assert_msg(run("bin/gmabench model --mixers gma,sdpa " SHAPE " --T %d --B 2 --steps 1 --max-seconds %s "
                          "--json %s/mo%d.json", one ? 32 : 16, one ? "0" : "60", d, one) == 0, "%s", g_out);
        snprintf(p, sizeof p, "%s/mo%d.json", d, one);
        x = gma_read_file(p, NULL);
        j = cJSON_Parse(x);
        cJSON *rows = cJSON_GetObjectItem(j, "model");
        ck_assert_int_eq(cJSON_GetArraySize(rows), one ? 2 : 4); /* past the limit: no dropout rows */
        for (int i = 0; i < cJSON_GetArraySize(rows); i++) {
            cJSON *r = cJSON_GetArrayItem(rows, i);
            double peak = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "peak_mib"));
            double plan = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "planned_mib"));
            double par = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "params_grads_moments_mib"));
            ck_assert_msg(par > 0 && plan > par && peak >= par, "row %d: peak %g plan %g params %g", i, peak, plan, par);
            ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(r, "ratio")) == !one); /* one step: no replay */
            ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItem(r, "step_ms")) > 0);
        }
        cJSON_Delete(j);
        free(x);
    }
    /* a row whose plan passes --max-mem-gib: the plan alone, no step, no dropout row */
    ck_assert_msg(run("bin/gmabench model --mixers sdpa " SHAPE " --T 32 --B 2 --steps 1 --max-mem-gib 1e-6 "
                      "--json %s/mm.json", d) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "sdpa       skipped: memory (planned "), "%s", g_out);
    snprintf(p, sizeof p, "%s/mm.json", d);
    x = gma_read_file(p, NULL);
    j = cJSON_Parse(x);
    cJSON *mr = cJSON_GetObjectItem(j, "model");
    ck_assert_int_eq(cJSON_GetArraySize(mr), 1);
    cJSON *m0 = cJSON_GetArrayItem(mr, 0);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(m0, "skipped")), "skipped: memory");
    ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItem(m0, "planned_mib")) >
              cJSON_GetNumberValue(cJSON_GetObjectItem(m0, "params_grads_moments_mib")));
    ck_assert_ptr_null(cJSON_GetObjectItem(m0, "step_ms"));
    cJSON_Delete(j);
    free(x);
    /* decode: a row past --max-seconds skips the mixer's later M */
    ck_assert_int_eq(run("bin/gmabench decode --mixers gma " SHAPE " --T 16 --samples 1,3 --repeat 1 --max-seconds 0 "
                         "--json %s/de0.json", d), 0);
    snprintf(p, sizeof p, "%s/de0.json", d);
    x = gma_read_file(p, NULL);
    j = cJSON_Parse(x);
    cJSON *dr = cJSON_GetObjectItem(j, "decode");
    ck_assert_int_eq(cJSON_GetArraySize(dr), 2);
    ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(dr, 0), "tokens_per_s")) > 0);
    ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(dr, 1), "skipped")), "skipped: time");
    cJSON_Delete(j);
    free(x);
    ck_assert_int_eq(run("bin/gmabench mixer --mixers gma,sdpa --seq 32,64 --D 16 --H 2 --Kc 4 --threads 1 --repeat 1 "
                         "--json %s/mx.json", d), 0);
    ck_assert_msg(run("GNUPLOT=no-such-gnuplot bash scripts/plot_scaling.sh --out %s/sc %s/mx.json %s/mo0.json %s/mo1.json", d, d,
                      d, d) == 0 && strstr(g_out, "plots skipped"), "%s", g_out);
    snprintf(p, sizeof p, "%s/sc/scaling.md", d);
    x = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(x);
    const char *want[] = {"One mixer layer", "| N | gma | sdpa |", "| 32 | ", "| 64 | ", "Whole training step", "| 16 | "};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) ck_assert_msg(strstr(x, want[i]), "no \"%s\" in:\n%s", want[i], x);
    ck_assert_msg(strstr(strstr(x, "Whole training step"), "| 32 | "), "%s", x);
    free(x);
    snprintf(p, sizeof p, "%s/sc/layer.dat", d);
    x = gma_read_file(p, NULL);
    ck_assert_msg(x && strstr(x, "# gma\n32 ") && strstr(x, "# sdpa\n32 "), "%s", x ? x : "no layer.dat");
    free(x);
    ck_assert_int_eq(run("bash scripts/plot_scaling.sh --out %s/sc2 %s/absent.json", d, d), 2);
    ck_assert_msg(strstr(g_out, "absent.json"), "%s", g_out);
}
END_TEST

/* the whole chain in its quick profile, the peer skipped (no torch interpreter) */
START_TEST(test_bench_all_quick) {
    ck_assert_msg(run("PYTHON=/bin/false bash scripts/bench_all.sh --quick --threads 1 --out %s/bq", tu_tmpdir()) == 0,
                  "%s", g_out);
    const char *s = strstr(g_out, "## summary");
    ck_assert_msg(s, "%s", g_out);
    const char *want[] = {"training tok/s", "layer time / sdpa", "decode tok/s", "ttft ms", "torch not importable"};
    for (size_t i = 0; i < 4; i++) ck_assert_msg(strstr(s, want[i]), "no \"%s\" after the summary head:\n%s", want[i], s);
    ck_assert_msg(strstr(g_out, want[4]) && strstr(g_out, want[4]) < s, "%s", g_out);
    ck_assert_int_eq(run("bash scripts/bench_all.sh --threads x"), 2);
    ck_assert_int_eq(run("bash scripts/bench_all.sh --bogus"), 2);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("bench_summary");
    TCase *tc = tcase_create("bench_summary");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_prefill_rows);
    tcase_add_test(tc, test_cross_rows);
    tcase_add_test(tc, test_summary_table);
    tcase_add_test(tc, test_labels_memory_scaling);
    tcase_add_test(tc, test_bench_all_quick);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
