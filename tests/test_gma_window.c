/* test_gma_window.c: a gma layer with an exact local window (gma.window, docs/model.md §3.11)
 * through the programs: a run trains the window's gates, gmaeval --analyze reports them per
 * layer (the text and "window_gates" in the analysis JSON), gmasample draws the same tokens
 * with its decode cache as with a full forward per token, and a config that asks the window
 * of a mixer without it is refused in one line, exit 2. Run from the repository root. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "testutil.h"

static const char *GW =
    "{\"name\": \"gw\", \"seed\": 4,\n"
    " \"model\": {\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"max_seq_len\": 24, \"mixer\": [\"sdpa\", \"gma\"]},\n"
    " \"gma\": {\"n_components\": 4, \"chunk\": 5, \"window\": 6},\n"
    " \"train\": {\"steps\": 10, \"batch_size\": 4, \"seq_len\": 24, \"lr\": 0.03, \"warmup\": 0, \"schedule\": \"constant\",\n"
    "           \"eval_every\": 0, \"eval_batches\": 2, \"log_every\": 5, \"checkpoint_every\": 0},\n"
    " \"data\": {\"recall_vocab\": 20, \"recall_pairs\": 4, \"recall_valid\": 16, \"recall_test\": 16}}\n";

START_TEST(test_window_trains_reports_samples) {
    tu_write(tu_path("gw.json"), GW);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --threads 1", tu_path("gw.json"), tu_path("g")) == 0, "%s",
                  g_out);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --threads 1 --analyze-json %s", tu_path("g"),
                      tu_path("a.json")) == 0,
                  "%s", g_out);
    ck_assert_msg(strstr(g_out, "window gate of layer 1 (the window path's share g per head):") &&
                      !strstr(g_out, "gate of layer 0"),
                  "%s", g_out);
    char *aj = gma_read_file(tu_path("a.json"), NULL);
    cJSON *root = cJSON_Parse(aj);
    const cJSON *gates = cJSON_GetObjectItem(root, "window_gates");
    ck_assert_msg(cJSON_GetArraySize(gates) == 1 && !cJSON_GetObjectItem(root, "gates"), "%s", aj);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(gates, 0), "layer")->valueint, 1);
    const cJSON *g = cJSON_GetObjectItem(cJSON_GetArrayItem(gates, 0), "gate");
    ck_assert_int_eq(cJSON_GetArraySize(g), 2);
    int moved = 0;
    for (int h = 0; h < 2; h++) {
        double v = cJSON_GetArrayItem(g, h)->valuedouble;
        ck_assert(v > 0 && v < 1);
        moved += fabs(v - 0.5) > 1e-3; /* trained away from the initial 1/2 */
    }
    ck_assert_msg(moved > 0, "%s", aj);
    cJSON_Delete(root);
    free(aj);
    /* sampling past the window: the decode cache's ring against a full forward per token */
    char *out[2];
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(run("./bin/gmasample --checkpoint %s --prompt-ids '1 2 3' --tokens 16 --temperature 1.5 --seed 7 "
                          "--threads 1%s",
                          tu_path("g"), k ? " --no-cache" : "") == 0,
                      "%s", g_out);
        char *ids = strstr(g_out, "\n1 2 3 "); /* the line of the ids */
        ck_assert_msg(ids != NULL, "%s", g_out);
        out[k] = strndup(ids + 1, strcspn(ids + 1, "\n"));
    }
    ck_assert_msg(!strcmp(out[0], out[1]), "cached '%s' vs full forwards '%s'", out[0], out[1]);
    printf("gmasample past the window of 6: %s\n", out[0]);
    free(out[0]), free(out[1]);
    /* refused: the window of a gated layer */
    int rc = run("./bin/gmatrain --config %s --out %s --quiet --set model.mixer=gated", tu_path("gw.json"), tu_path("bad"));
    ck_assert_msg(rc == 2 && strstr(g_out, "key gma.window") && strstr(g_out, "gated") &&
                      strchr(g_out, '\n') == strrchr(g_out, '\n'),
                  "exit %d: %s", rc, g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("gma_window");
    TCase *tc = tcase_create("gma_window");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_window_trains_reports_samples);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
