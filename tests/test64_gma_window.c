/* test64_gma_window.c: finite-difference gradient checks (float64 build) of a gma layer with
 * an exact local window (gma.window W, docs/model.md §3.11: oh = g swa_W(q, k, v) + (1 - g)
 * gma(q, k, v) per head): the input, the shared projections, GMA's components and the gate
 * logits PREFIX.gma.window_gate, causal and bidirectional, padded or not, windows shorter
 * than the sequence, of one token and past it, with the short convolutions and softmax
 * routing; the accumulate contract; then a whole model with a windowed gma layer. */
#include <string.h>

#include "gradcheck.h"
#include "testutil.h"

static const struct {
    const char *sets;
    int causal, padded;
} cases[] = {
    {"gma.window=3", 1, 0},
    {"gma.window=3", 0, 0},
    {"gma.window=3", 1, 1},
    {"gma.window=2;gma.n_components=5", 0, 1},
    {"gma.window=1;gma.window_share=0.8", 1, 0},       /* the diagonal alone; the gate away from 1/2 */
    {"gma.window=10;gma.window_share=0.2", 1, 1},      /* past the 7 tokens: full causal softmax */
    {"gma.window=4;model.short_conv=3", 1, 0},         /* the convolutions before both paths */
    {"gma.window=3;gma.routing=softmax;gma.div_weight=0.3", 1, 0},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

START_TEST(test_window_layer) {
    Config cfg = tu_tiny_config("gma");
    tu_apply_sets(&cfg, cases[_i].sets);
    printf("gma window case %d: %s, %s%s\n", _i, cases[_i].sets, cases[_i].causal ? "causal" : "bidir",
           cases[_i].padded ? " padded" : "");
    if (cfg_num(&cfg, "gma.div_weight") == 0) {
        gc_mixer_case(&cfg, "gma", cases[_i].causal, cases[_i].padded);
        return;
    }
    GcMix c;
    gc_mix_setup(&c, &cfg, "gma", 2, 7, cases[_i].causal, NULL, 5);
    c.w = cfg_num(&cfg, "gma.div_weight");
    c.ctx.aux_scale = 1;
    free(gc_mix_check(&c, "gma window div"));
    gc_mix_free(&c);
}
END_TEST

/* the gate tensor: one logit a head at logit(gma.window_share); none without a window */
START_TEST(test_window_gate_tensor) {
    for (int on = 0; on < 2; on++) {
        Config cfg = tu_tiny_config("gma");
        tu_apply_sets(&cfg, on ? "gma.window=3;gma.window_share=0.75" : "");
        GcMix c;
        gc_mix_setup(&c, &cfg, "gma", 1, 4, 1, NULL, 1);
        int gate = -1;
        for (int i = 0; i < c.pt.n; i++)
            if (!strcmp(c.pt.t[i].name, "blocks.0.mixer.gma.window_gate")) gate = i;
        ck_assert_int_eq(gate >= 0, on);
        if (on) {
            ck_assert_int_eq(c.pt.t[gate].numel, 2); /* one per head */
            for (int h = 0; h < 2; h++) ck_assert(fabs(c.params[c.pt.t[gate].offset + h] - log(3.0)) < 1e-12);
        }
        gc_mix_free(&c);
    }
}
END_TEST

/* refusals, one line each naming the key: the mixers that embed a GMA path without the
 * window, the delta write, the EMA memory, a share outside (0, 1), a negative window */
START_TEST(test_window_refusals) {
    const char *bad[][2] = {
        {"model.mixer=gated;gma.window=3", "gated"},
        {"model.mixer=auto;gma.window=3", "auto"},
        {"gma.write=delta;gma.window=3", "delta"},
        {"gma.memory=ema;gma.window=3", "ema"},
    };
    for (int i = 0; i < 4; i++) {
        Config c = tu_tiny_config("gma");
        char buf[128], *sv = NULL;
        snprintf(buf, sizeof buf, "%s", bad[i][0]);
        for (char *t = strtok_r(buf, ";", &sv); t; t = strtok_r(NULL, ";", &sv)) ck_assert(cfg_set(&c, t) == 0);
        ck_assert_msg(cfg_validate(&c) != 0, "%s accepted", bad[i][0]);
        ck_assert_msg(strstr(gma_error(), "gma.window") && strstr(gma_error(), bad[i][1]), "%s: %s", bad[i][0],
                      gma_error());
        ck_assert(!strchr(gma_error(), '\n'));
    }
    Config c = tu_tiny_config("gma");
    ck_assert(cfg_set(&c, "gma.window_share=1") != 0);
    ck_assert_msg(strstr(gma_error(), "gma.window_share"), "%s", gma_error());
    ck_assert(cfg_set(&c, "gma.window=-1") != 0);
    ck_assert_msg(strstr(gma_error(), "gma.window"), "%s", gma_error());
    /* the keys are inert without a GMA layer, as gma's others */
    c = tu_tiny_config("sdpa");
    tu_apply_sets(&c, "gma.window=3;gma.write=delta");
}
END_TEST

/* causality: a windowed gma layer's earlier outputs do not see a later token */
START_TEST(test_window_causal) {
    Config cfg = tu_tiny_config("gma");
    tu_apply_sets(&cfg, "gma.window=2");
    gc_causal_case(&cfg, "gma window 2", 1e-13);
}
END_TEST

/* the whole model: a windowed gma layer under an sdpa layer in a language model's objective */
START_TEST(test_window_model) {
    Config cfg = tu_tiny_config("gma");
    tu_apply_sets(&cfg, "model.mixer=gma,sdpa;gma.window=2");
    GcModel c;
    gc_model_setup(&c, &cfg);
    gc_model_check(&c, "model.mixer=gma,sdpa;gma.window=2", "2-layer model gma (window 2),sdpa");
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("gma layer with an exact local window (float64 gradient checks)");
    TCase *tc = tcase_create("gma_window");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_window_layer, 0, N_CASES);
    tcase_add_test(tc, test_window_gate_tensor);
    tcase_add_test(tc, test_window_refusals);
    tcase_add_test(tc, test_window_causal);
    tcase_add_test(tc, test_window_model);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
