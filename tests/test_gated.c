/* test_gated.c: the gated attention + GMA layer (mixer "gated", docs/model.md §3.7) in a
 * model: its decode step gives the full forward's logits, a run trains both paths and the
 * gate, and gmaeval --analyze reports the gates per layer; gma.memory "ema" is refused. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/model.h"
#include "testutil.h"

/* each token's decode step against a full forward over the tokens so far */
START_TEST(test_gated_decodes_like_the_forward) {
    Config c = tu_tiny_config("gated");
    tu_apply_sets(&c, "model.mixer=gated,sdpa");
    Model m;
    ck_assert_int_eq(model_build(&m, &c), 0);
    model_alloc(&m, 1, 8);
    model_init_params(&m, 2);
    /* gates away from 1/2, different per head */
    int t = pt_find(&m.pt, "blocks.0.mixer.gate");
    ck_assert(t >= 0);
    real a[2] = {1.5, -0.7};
    g_ops->to_device(m.params + m.pt.t[t].offset, a, sizeof a);
    ck_assert_int_eq(model_can_decode(&m), 1);
    int32_t tok[8] = {3, 1, 4, 1, 5, 9, 2, 6}, tgt[8] = {0};
    real full[11], step[11];
    DecodeState ds;
    ck_assert_int_eq(model_decode_begin(&m, &ds), 0);
    double worst = 0;
    for (int n = 1; n <= 8; n++) {
        LossStats st;
        ck_assert_int_eq(model_forward(&m, tok, tgt, 1, n, NULL, 0, &st, 0, 0), 0);
        g_ops->to_host(full, m.logits + (size_t)(n - 1) * 11, sizeof full);
        ck_assert_int_eq(model_decode_step(&m, &ds, tok[n - 1]), 0);
        g_ops->to_host(step, m.logits, sizeof step);
        double e = tu_row_rel_err(step, full, 11);
        ck_assert_msg(e < TU_F32_DECODE_BOUND, "position %d: decoded logits differ by %.2e of the row's largest", n - 1, e);
        worst = fmax(worst, e);
    }
    model_decode_end(&m, &ds);
    model_free(&m);
    printf("gated decode vs forward over 8 positions: %.1e\n", worst);
}
END_TEST

static const char *GT =
    "{\"name\": \"gt\", \"seed\": 4,\n"
    " \"model\": {\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"max_seq_len\": 24, \"mixer\": [\"gated\", \"gated\"]},\n"
    " \"gma\": {\"n_components\": [4, 6], \"chunk\": 5},\n"
    " \"train\": {\"steps\": 10, \"batch_size\": 4, \"seq_len\": 24, \"lr\": 0.03, \"warmup\": 0, \"schedule\": \"constant\",\n"
    "           \"eval_every\": 0, \"eval_batches\": 2, \"log_every\": 5, \"checkpoint_every\": 0},\n"
    " \"data\": {\"recall_vocab\": 20, \"recall_pairs\": 4, \"recall_valid\": 16, \"recall_test\": 16}}\n";

START_TEST(test_gated_trains_and_reports_gates) {
    tu_write(tu_path("gt.json"), GT);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("gt.json"), tu_path("g")) == 0, "%s", g_out);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --analyze-json %s", tu_path("g"), tu_path("a.json")) == 0, "%s",
                  g_out);
    ck_assert_msg(strstr(g_out, "gate of layer 0 (softmax path's share g per head):") && strstr(g_out, "gate of layer 1"), "%s",
                  g_out);
    char *aj = gma_read_file(tu_path("a.json"), NULL);
    cJSON *root = cJSON_Parse(aj);
    const cJSON *gates = cJSON_GetObjectItem(root, "gates");
    ck_assert_msg(cJSON_GetArraySize(gates) == 2, "%s", aj);
    int moved = 0;
    for (int l = 0; l < 2; l++) {
        const cJSON *g = cJSON_GetObjectItem(cJSON_GetArrayItem(gates, l), "gate");
        ck_assert_int_eq(cJSON_GetArraySize(g), 2);
        for (int h = 0; h < 2; h++) {
            double v = cJSON_GetArrayItem(g, h)->valuedouble;
            ck_assert(v > 0 && v < 1);
            moved += fabs(v - 0.5) > 1e-3; /* trained away from the initial 1/2 */
        }
    }
    ck_assert_msg(moved > 0, "%s", aj);
    /* the GMA path's components trained too (K per layer: 4 and 6) */
    ck_assert(cJSON_GetArraySize(cJSON_GetObjectItem(root, "layers")) == 2);
    cJSON_Delete(root);
    free(aj);
    int rc = run("./bin/gmatrain --config %s --out %s --quiet --set gma.memory=ema", tu_path("gt.json"), tu_path("bad"));
    ck_assert_msg(rc == 2 && strstr(g_out, "key gma.memory") && strstr(g_out, "gated"), "exit %d: %s", rc, g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("gated");
    TCase *tc = tcase_create("gated");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_gated_decodes_like_the_forward);
    tcase_add_test(tc, test_gated_trains_and_reports_gates);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
