/* test_mixer_hooks.c: what the mixers declare through their vtables (run from the
 * repository root): the configuration sections they register (every key reachable by
 * JSON, --set and cfg_num, the resolved JSON with the same keys), the per-mixer
 * validation, the auxiliary loss and rank-averaged buffers the model collects, auto's
 * incremental decoding through its children, gmacheck
 * stepping with the trainer's optimiser (buffers untouched), gmabench validating its
 * --set values, and model.short_conv's default leaving every model as it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/model.h"
#include "ops/ops.h"
#include "testutil.h"

/* every registered section is in the resolved JSON, and reloading it gives the same values */
START_TEST(test_sections_round_trip) {
    Config c;
    cfg_defaults(&c);
    ck_assert(cfg_set(&c, "gma.n_components=7") == 0);
    ck_assert(cfg_set(&c, "gma.routing=softmax") == 0);
    ck_assert(cfg_set(&c, "performer.redraw=4") == 0);
    ck_assert(cfg_set(&c, "linformer.k=32") == 0);
    ck_assert(cfg_set(&c, "mamba.d_state=5") == 0);
    ck_assert(cfg_set(&c, "baseconv.kernel=5") == 0);
    ck_assert(cfg_num(&c, "baseconv.kernel") == 5);
    ck_assert(cfg_num(&c, "gma.n_components") == 7);
    ck_assert(cfg_num(&c, "performer.redraw") == 4);
    ck_assert(cfg_num(&c, "mamba.d_state") == 5);
    ck_assert(cfg_num(&c, "gma.temperature") == 1);
    char *js = cfg_to_json(&c);
    cJSON *j = cJSON_Parse(js);
    ck_assert_ptr_nonnull(j);
    const char *sections[] = {"gma", "performer", "linformer", "mamba", "baseconv"};
    for (int i = 0; i < 5; i++) ck_assert_msg(cJSON_IsObject(cJSON_GetObjectItem(j, sections[i])), "%s missing", sections[i]);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "gma"), "routing")->valuestring, "softmax");
    cJSON_Delete(j);
    Config d;
    cfg_defaults(&d);
    ck_assert_msg(cfg_load_text(&d, js, "resolved") == 0, "%s", gma_error());
    char *js2 = cfg_to_json(&d);
    ck_assert_str_eq(js, js2);
    free(js), free(js2);
    /* unknown keys in a section, and the section's own ranges */
    ck_assert_int_ne(cfg_set(&c, "gma.no_such_key=1"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "unknown key gma.no_such_key"));
    ck_assert_int_ne(cfg_load_text(&c, "{\"mamba\": {\"expand\": 0}}", "x.json"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "x.json: key mamba.expand: 0 is out of range"));
    ck_assert_int_ne(cfg_set(&c, "model.mixer=gma,nope"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "unknown mixer \"nope\""));
}
END_TEST

/* the model sums the declared auxiliary losses with their weights; GMA's EMA memory is the
 * only buffer the ranks average (Performer's features are the same on every rank) */
START_TEST(test_aux_loss_and_buffers) {
    Config c = tu_tiny_config("gma");
    tu_apply_sets(&c, "model.mixer=gma,performer;gma.div_weight=0.25;gma.memory=ema");
    Model m;
    ck_assert_int_eq(model_build(&m, &c), 0);
    model_alloc(&m, 2, 8);
    model_init_params(&m, 1);
    ck_assert_int_eq(model_aux_on(&m), 1);
    int32_t tok[16], tgt[16];
    for (int i = 0; i < 16; i++) tok[i] = (int32_t)(i % 11), tgt[i] = (int32_t)((i + 3) % 11);
    LossStats st;
    ck_assert_int_eq(model_forward(&m, tok, tgt, 2, 8, NULL, 0, &st, 1, 0), 0);
    double weighted = 0, plain = model_aux_loss(&m, &weighted);
    ck_assert(plain > 0);
    ck_assert(fabs(weighted - 0.25 * plain) <= 1e-12 * plain);
    int averaged = 0;
    for (int i = 0; i < m.pt.n; i++)
        if (model_rank_averaged(&m, i)) {
            averaged++;
            ck_assert_str_eq(m.pt.t[i].name, "blocks.0.mixer.gma.memory");
        }
    ck_assert_int_eq(averaged, 1);
    model_free(&m);
    tu_apply_sets(&c, "gma.div_weight=0");
    ck_assert_int_eq(model_build(&m, &c), 0);
    ck_assert_int_eq(model_aux_on(&m), 0);
    model_free(&m);
}
END_TEST

/* auto decodes incrementally through the child every prefix of the window takes (sdpa:
 * threshold past the window; GMA: threshold 1): each token gets the logits of a full
 * forward over the tokens so far. A threshold inside the window falls back to forwards. */
static double auto_decode_case(int threshold) {
    Config c = tu_tiny_config("auto");
    char set[64];
    snprintf(set, sizeof set, "model.auto_threshold=%d", threshold);
    ck_assert_int_eq(cfg_set(&c, set), 0);
    Model m;
    ck_assert_int_eq(model_build(&m, &c), 0);
    model_alloc(&m, 1, 8);
    model_init_params(&m, 2);
    double worst = -1;
    if (threshold > 1 && threshold <= 8) {
        ck_assert_int_eq(model_can_decode(&m), 0);
        model_free(&m);
        return worst;
    }
    ck_assert_int_eq(model_can_decode(&m), 1);
    int32_t tok[8] = {3, 1, 4, 1, 5, 9, 2, 6}, tgt[8] = {0};
    real full[11], step[11];
    DecodeState ds;
    ck_assert_int_eq(model_decode_begin(&m, &ds), 0);
    for (int n = 1; n <= 8; n++) {
        LossStats st;
        ck_assert_int_eq(model_forward(&m, tok, tgt, 1, n, NULL, 0, &st, 0, 0), 0);
        g_ops->to_host(full, m.logits + (size_t)(n - 1) * 11, sizeof full);
        ck_assert_int_eq(model_decode_step(&m, &ds, tok[n - 1]), 0);
        g_ops->to_host(step, m.logits, sizeof step);
        double e = tu_row_rel_err(step, full, 11);
        ck_assert_msg(e < TU_F32_DECODE_BOUND, "threshold %d position %d: decoded logits differ by %.2e of the row's largest",
                      threshold, n - 1, e);
        worst = fmax(worst, e);
    }
    model_decode_end(&m, &ds);
    model_free(&m);
    return worst;
}

START_TEST(test_auto_decodes_like_the_forward) {
    double es = auto_decode_case(100), eg = auto_decode_case(1);
    auto_decode_case(4);
    printf("auto decode vs forward over 8 positions: sdpa path %.1e, gma path %.1e; threshold 4 falls back\n", es, eg);
}
END_TEST

/* gmacheck takes the trainer's step: no buffer (EMA memory, Performer features) moves */
START_TEST(test_gmacheck_keeps_buffers) {
    const char *sets[] = {"--set model.mixer=performer", "--set gma.memory=ema"};
    for (int i = 0; i < 2; i++) {
        int rc = run("bin/gmacheck --device cpu --steps 2 --batch 2 --seq 24 --quiet %s", sets[i]);
        ck_assert_msg(rc == 0, "%s", g_out);
        ck_assert_msg(strstr(g_out, "buffer tensors, unchanged by the optimiser steps") && !strstr(g_out, " 0 buffer tensors"), "%s",
                      g_out);
    }
}
END_TEST

/* gmabench refuses a --set that makes a benchmarked config invalid: exit 2, one line */
START_TEST(test_gmabench_validates_set) {
    int rc = run("bin/gmabench mixer --mixers gma --seq 64 --set gma.init=orthogonal");
    ck_assert_msg(rc == 2, "exit %d: %s", rc, g_out);
    ck_assert_msg(strstr(g_out, "gmabench: --set: mixer gma, N = 64: key gma.init"), "%s", g_out);
    ck_assert_msg(strchr(g_out, '\n') == g_out + strlen(g_out) - 1, "not one line: %s", g_out);
    rc = run("bin/gmabench mixer --mixers sdpa --seq 64 --set train.seq_len=100");
    ck_assert_msg(rc == 2 && strstr(g_out, "key train.seq_len: 100 is longer than model.max_seq_len = 64"), "exit %d: %s", rc, g_out);
}
END_TEST

/* model.short_conv: 0 by default, and then every mixer's table, initial values, act and
 * decode state are those without the key; K = 4 adds exactly PREFIX.{q,k,v}_conv.weight
 * [D, 4] after the projections of each layer (every other tensor in its place, the ones
 * before the first addition with the same initial values), U(-1/2, 1/2) as PyTorch's
 * nn.Conv1d (bound 1/sqrt(K), variance 1/(3K)), 3 (K-1) D more reals of decode state a
 * layer and its act block */
START_TEST(test_short_conv_default) {
    Config d;
    cfg_defaults(&d);
    ck_assert(cfg_num(&d, "model.short_conv") == 0);
    const char *mixers[] = {"gma", "sdpa", "sdpa_ref", "linear", "performer"};
    for (int i = 0; i < 5; i++) {
        Model m[3];
        for (int k = 0; k < 3; k++) {
            Config c = tu_tiny_config(mixers[i]);
            c.model.d_model = 64;
            c.model.n_heads = 4;
            if (k) tu_apply_sets(&c, k == 1 ? "model.short_conv=0" : "model.short_conv=4");
            ck_assert_int_eq(model_build(&m[k], &c), 0);
            model_alloc(&m[k], 1, 8);
            model_init_params(&m[k], 5);
        }
        /* default and 0: the same table and bits */
        ck_assert_int_eq(m[0].pt.n, m[1].pt.n);
        ck_assert(m[0].pt.total == m[1].pt.total);
        for (int t = 0; t < m[0].pt.n; t++) {
            ck_assert_str_eq(m[0].pt.t[t].name, m[1].pt.t[t].name);
            ck_assert_msg(!strstr(m[0].pt.t[t].name, "_conv."), "%s: %s by default", mixers[i], m[0].pt.t[t].name);
        }
        ck_assert(memcmp(m[0].params, m[1].params, m[0].pt.total * sizeof(real)) == 0);
        /* K = 4: the default's tensors in order, plus three a layer */
        int t0 = 0, added = 0, first = -1;
        double s2 = 0, amax = 0;
        size_t nw = 0;
        for (int t = 0; t < m[2].pt.n; t++) {
            const ParamInfo *p = &m[2].pt.t[t];
            if (strstr(p->name, "_conv.weight")) {
                ck_assert(p->ndim == 2 && p->shape[0] == 64 && p->shape[1] == 4 && p->group == GROUP_WEIGHT);
                if (first < 0) first = t;
                added++;
                for (size_t j = 0; j < p->numel; j++) {
                    double w = m[2].params[p->offset + j];
                    s2 += w * w, amax = fmax(amax, fabs(w)), nw++;
                }
                continue;
            }
            ck_assert_str_eq(p->name, m[0].pt.t[t0].name);
            ck_assert(p->numel == m[0].pt.t[t0].numel);
            if (first < 0) /* drawn before any convolution: the same values */
                ck_assert(memcmp(m[2].params + p->offset, m[0].params + m[0].pt.t[t0].offset, p->numel * sizeof(real)) == 0);
            t0++;
        }
        ck_assert_int_eq(t0, m[0].pt.n);
        ck_assert_int_eq(added, 3 * 2);
        ck_assert_str_eq(m[2].pt.t[first].name, "blocks.0.mixer.q_conv.weight");
        double var = s2 / (double)nw;
        printf("short_conv %-9s %d tensors, +%d; conv weights: max |w| %.3f (bound 0.5), variance %.4f (1/12 = %.4f)\n",
               mixers[i], m[0].pt.n, added, amax, var, 1 / 12.0);
        ck_assert(amax <= 0.5 && amax > 0.45);
        ck_assert_msg(fabs(var * 12 - 1) < 0.15, "variance %g", var);
        /* decode state and act: the default's, 3 (K - 1) D a layer more */
        for (int l = 0; l < 2; l++) {
            const Mixer *a = m[0].blocks[l].mixer, *c = m[2].blocks[l].mixer;
            ck_assert_int_eq(a->conv_k, 0);
            ck_assert_int_eq(c->conv_k, 4);
            ck_assert(c->vt->decode_state(c, 8) == a->vt->decode_state(a, 8) + 3 * 3 * 64);
            ck_assert(c->vt->act_size(c, 2, 8) == a->vt->act_size(a, 2, 8) + 6 * 2 * 8 * 64);
            ck_assert(c->vt->act_size(c, 2, 1) == a->vt->act_size(a, 2, 1) + 2 * 2 * 4 * 64); /* the decode windows */
        }
        for (int k = 0; k < 3; k++) model_free(&m[k]);
    }
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("mixer_hooks");
    TCase *tc = tcase_create("mixer_hooks");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_sections_round_trip);
    tcase_add_test(tc, test_aux_loss_and_buffers);
    tcase_add_test(tc, test_auto_decodes_like_the_forward);
    tcase_add_test(tc, test_gmacheck_keeps_buffers);
    tcase_add_test(tc, test_gmabench_validates_set);
    tcase_add_test(tc, test_short_conv_default);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
