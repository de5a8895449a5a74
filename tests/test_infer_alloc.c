/* test_infer_alloc.c: models allocated for inference only (Model.infer: no gradients,
 * optimiser moments or backward buffers) give the same bits as training-allocated ones
 * with the same parameters: the logits of an evaluation forward (the head in one chunk and
 * in several), the classifier's, and those of prefill and incremental decoding, for every
 * kind of mixer; they plan and take less memory (parameters alone, no backward buffers);
 * a training forward on one is refused. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_cls.h"
#include "nn/cls_head.h"
#include "ops/ops.h"
#include "testutil.h"

static const char *g_cases[][2] = {
    {"gma", ""},
    {"gma", "gma.memory=ema"},
    {"sdpa", ""},
    {"linear", ""},
    {"performer", ""},
    {"mamba", "mamba.chunk=4"},
    {"linformer", "model.causal=0;linformer.k=5"},
    {"gma", "model.mixer=sdpa,gma;model.head_chunk=5"},
    {"gma", "model.mixer=baseconv,gma;model.pos=none"},
};
enum { B = 2, N = 8, V = 11, NEW = 3 }; /* prompt 5 + NEW fit the window N */

/* a model of case c allocated for training (infer 0) or inference (1), parameters from seed 7 */
static void build(Model *m, const char *mixer, const char *sets, int infer) {
    Config cfg = tu_tiny_config(mixer);
    if (sets[0]) tu_apply_sets(&cfg, sets);
    else ck_assert_int_eq(cfg_validate(&cfg), 0);
    ck_assert_msg(model_build(m, &cfg) == 0, "%s", gma_error());
    m->infer = infer;
    model_alloc(m, B, N);
    model_init_params(m, 7);
}

/* the host logits of an evaluation forward over a fixed batch: rows logits_row0.. of the last chunk */
static real *eval_logits(Model *m, size_t *n, double *loss) {
    int32_t tok[B * N], tgt[B * N];
    for (int i = 0; i < B * N; i++) tok[i] = (int32_t)((i * 5 + 3) % V), tgt[i] = (int32_t)((i * 7 + 1) % V);
    LossStats st;
    ck_assert_msg(model_forward(m, tok, tgt, B, N, NULL, 0, &st, 0, 0) == 0, "%s", gma_error());
    *n = (size_t)(B * N - m->logits_row0) * V;
    real *h = xmalloc(*n * sizeof(real));
    g_ops->to_host(h, m->logits, *n * sizeof(real));
    *loss = st.loss_sum;
    return h;
}

/* prefill of a 5-token prompt then NEW greedy steps: (NEW + 1) x V host logits */
static real *decode_logits(Model *m) {
    static const int32_t prompt[5] = {1, 4, 9, 2, 6};
    real *h = xmalloc((size_t)(NEW + 1) * V * sizeof(real));
    DecodeState ds;
    ck_assert_msg(model_decode_begin(m, &ds) == 0, "%s", gma_error());
    ck_assert_msg(model_prefill(m, &ds, prompt, 5) == 0, "%s", gma_error());
    for (int t = 0; t <= NEW; t++) {
        g_ops->to_host(h + (size_t)t * V, m->logits, sizeof(real) * V);
        if (t == NEW) break;
        ck_assert_int_eq(model_decode_step(m, &ds, (int32_t)((t * 3 + 2) % V)), 0);
    }
    model_decode_end(m, &ds);
    return h;
}

START_TEST(test_same_logits) {
    Model a, b;
    build(&a, g_cases[_i][0], g_cases[_i][1], 0);
    build(&b, g_cases[_i][0], g_cases[_i][1], 1);
    ck_assert_ptr_nonnull(a.grads);
    ck_assert(b.grads == NULL && b.m == NULL && b.v == NULL && b.dresid == NULL && b.dtmp == NULL && b.dfc == NULL);
    ck_assert_msg(b.act_bytes < a.act_bytes, "activations: inference %zu, training %zu", b.act_bytes, a.act_bytes);
    size_t na, nb;
    double la, lb;
    real *ha = eval_logits(&a, &na, &la), *hb = eval_logits(&b, &nb, &lb);
    ck_assert_uint_eq(na, nb);
    ck_assert_msg(memcmp(ha, hb, na * sizeof(real)) == 0, "%s: forward logits differ", g_cases[_i][0]);
    ck_assert_msg(memcmp(&la, &lb, sizeof la) == 0, "loss %.17g vs %.17g", la, lb);
    free(ha), free(hb);
    if (model_can_decode(&a)) {
        ck_assert(model_can_decode(&b));
        ha = decode_logits(&a), hb = decode_logits(&b);
        ck_assert_msg(memcmp(ha, hb, (size_t)(NEW + 1) * V * sizeof(real)) == 0, "%s: decode logits differ", g_cases[_i][0]);
        free(ha), free(hb);
    }
    /* a training forward is refused, the model untouched */
    int32_t tok[N] = {1, 2, 3, 4, 5, 6, 7, 8}, tgt[N] = {2, 3, 4, 5, 6, 7, 8, 9};
    LossStats st;
    ck_assert_int_eq(model_forward(&b, tok, tgt, 1, N, NULL, 0, &st, 1, 0), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "inference only"));
    model_free(&a), model_free(&b);
}
END_TEST

/* the memory plan: parameters alone (a quarter of training's 4P) and fewer activation bytes */
START_TEST(test_plan) {
    Model a, b;
    Config cfg = tu_tiny_config("gma");
    ck_assert_int_eq(model_build(&a, &cfg), 0);
    ck_assert_int_eq(model_build(&b, &cfg), 0);
    b.infer = 1;
    MemPlan pa, pb;
    model_memory_plan(&a, 4, 8, &pa);
    model_memory_plan(&b, 4, 8, &pb);
    ck_assert_double_eq(pa.params, 4 * pb.params);
    ck_assert_double_eq(pb.params, (double)b.pt.total * sizeof(real));
    ck_assert(pb.acts < pa.acts && pb.total < pa.total);
    ck_assert_double_eq(pa.rows, 4 * 8); /* the rows the backbone runs, the check's INT_MAX bound reads */
    ck_assert_double_eq(pb.rows, 4 * 8);
    model_alloc(&b, 4, 8);
    ck_assert_double_eq((double)b.act_bytes, pb.acts); /* what the plan says is what is taken */
    model_free(&a), model_free(&b);
}
END_TEST

/* a classifier (mean and cls pooling): the same logits, allocated either way */
START_TEST(test_classifier) {
    static const char *pool[] = {"mean", "cls"};
    for (int k = 0; k < 2; k++) {
        Model m[2];
        real h[2][B * 3];
        double loss[2];
        for (int infer = 0; infer < 2; infer++) {
            Config cfg = tu_tiny_config("sdpa");
            char sets[200];
            snprintf(sets, sizeof sets, "model.task=classify;data.source=cls;model.pooling=%s", pool[k]);
            snprintf(cfg.data.path, sizeof cfg.data.path, "unused");
            cls_head_cfg_mut(&cfg)->n_classes = 3;
            tu_apply_sets(&cfg, sets);
            ck_assert_msg(model_build(&m[infer], &cfg) == 0, "%s", gma_error());
            m[infer].infer = infer;
            model_alloc(&m[infer], B, 6);
            model_init_params(&m[infer], 3);
            int32_t tok[B * 6] = {1, 2, 3, 4, 0, 0, 5, 6, 7, 8, 9, 10};
            int32_t lab[B] = {0, 2};
            LossStats st;
            ck_assert_msg(model_forward(&m[infer], tok, lab, B, 6, NULL, 0, &st, 0, 0) == 0, "%s", gma_error());
            g_ops->to_host(h[infer], m[infer].logits, sizeof(real) * B * 3);
            loss[infer] = st.loss_sum;
        }
        ck_assert(m[1].cls->dpooled == NULL && m[1].cls->head_scratch == NULL);
        MemPlan p; /* the rows the backbone runs: B sequences of the 6 tokens and the CLS slot (cls pooling) */
        model_memory_plan(&m[1], B, 6, &p);
        ck_assert_double_eq(p.rows, B * (6 + k));
        ck_assert_msg(memcmp(h[0], h[1], sizeof h[0]) == 0, "pooling %s: classifier logits differ", pool[k]);
        ck_assert(loss[0] == loss[1]);
        model_free(&m[0]), model_free(&m[1]);
    }
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("infer_alloc");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_same_logits, 0, (int)(sizeof g_cases / sizeof g_cases[0]));
    tcase_add_test(tc, test_plan);
    tcase_add_test(tc, test_classifier);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
