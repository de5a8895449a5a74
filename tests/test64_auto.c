/* test64_auto.c: finite-difference gradient checks (float64 build) of `auto` with the
 * distillation of its GMA path (auto.distill_weight, docs/model.md §3.6): on a call below
 * the threshold the layer's objective is <y_sdpa, r> + w |oh_gma - sg(oh_sdpa)|^2 / |sg(oh_sdpa)|^2,
 * checked for the input, the shared projections and GMA's components, causal and
 * bidirectional, padded or not, with GMA's diversity loss beside it; the output stays
 * sdpa's, and without distillation GMA's components get no gradient below the threshold.
 * The stop-gradient: the checks hold the sdpa target of the first forward as a constant
 * (mixer_auto_hold_target), so the differences see the objective the backward
 * differentiates. Attention transfer: a model sdpa, auto, auto with train.lm_weight 0, every
 * parameter's gradient of the auto layers' terms alone, its logits the all-sdpa model's. */
#include <string.h>

#include "gradcheck.h"
#include "testutil.h"

/* the layer below its threshold (N 7 < 8) with the sets applied */
static void setup(GcMix *c, const char *sets, int causal, int padded, int seed) {
    Config cfg = tu_tiny_config("auto");
    tu_apply_sets(&cfg, "model.auto_threshold=8");
    tu_apply_sets(&cfg, sets);
    gc_mix_setup(c, &cfg, "auto", 2, 7, causal, padded ? gc_pad_mask : NULL, seed);
    ck_assert_str_eq(mixer_auto_choice(c->m, 7), "sdpa");
    double w = 0;
    c->m->vt->aux_loss(c->m, &w);
    c->w = w; /* 1 with distillation (its value is w x the loss), else the diversity weight */
    c->ctx.aux_scale = 1;
}

static void distill_case(const char *label, const char *sets, int causal, int padded) {
    GcMix c;
    setup(&c, sets, causal, padded, 17 + causal + 2 * padded);
    ck_assert(c.w == 1);
    mixer_auto_hold_target(c.m, 1); /* stopgrad(oh_sdpa): a constant under the differences */
    real *dh = gc_mix_check(&c, label);
    /* the distillation is there: GMA's means get a gradient (a call below the threshold) */
    int mu = pt_find(&c.pt, "blocks.0.mixer.gma.mu");
    double g2 = gc_dot(c.grads + c.pt.t[mu].offset, c.grads + c.pt.t[mu].offset, c.pt.t[mu].numel);
    ck_assert_msg(g2 > 0, "%s: no gradient on gma.mu", label);
    double w = 0, v = c.m->vt->aux_loss(c.m, &w);
    ck_assert_msg(v > 0, "%s: distillation loss %g", label, v);
    free(dh);
    gc_mix_free(&c);
}

static const struct {
    const char *label, *sets;
    int causal, padded;
} cases[] = {
    {"auto distill causal", "auto.distill_weight=0.7", 1, 0},
    {"auto distill bidir", "auto.distill_weight=2", 0, 0},
    {"auto distill causal padded", "auto.distill_weight=0.7", 1, 1},
    {"auto distill bidir padded", "auto.distill_weight=0.7;gma.n_components=5", 0, 1},
    {"auto distill div", "auto.distill_weight=0.7;gma.div_weight=0.3", 1, 0},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };
START_TEST(test_distill) { distill_case(cases[_i].label, cases[_i].sets, cases[_i].causal, cases[_i].padded); }
END_TEST

/* the output is the sdpa path's with or without distillation; without it GMA's own tensors
 * get no gradient below the threshold (what distillation changes) */
START_TEST(test_distill_output_and_off) {
    GcMix a, b;
    setup(&a, "auto.distill_weight=0.7", 1, 0, 5);
    setup(&b, "", 1, 0, 5);
    ck_assert_int_eq(a.pt.total, b.pt.total);
    memcpy(b.params, a.params, a.pt.total * sizeof(real));
    memcpy(b.h, a.h, a.n * sizeof(real));
    gc_mix_loss(&a);
    gc_mix_loss(&b);
    for (size_t i = 0; i < a.n; i++) ck_assert_msg(fabs(a.y[i] - b.y[i]) < 1e-12, "output %zu differs", i);
    real *dh = xcalloc(b.n, sizeof(real));
    b.m->vt->backward(b.m, &b.ctx, dh, b.r, b.h, b.params, b.grads, b.act, b.scratch);
    const char *own[] = {"blocks.0.mixer.gma.mu", "blocks.0.mixer.gma.var_raw", "blocks.0.mixer.gma.prior_logits"};
    for (int k = 0; k < 3; k++) {
        int t = pt_find(&b.pt, own[k]);
        ck_assert_int_ge(t, 0);
        for (size_t j = 0; j < b.pt.t[t].numel; j++) ck_assert(b.grads[b.pt.t[t].offset + j] == 0);
    }
    free(dh);
    gc_mix_free(&a);
    gc_mix_free(&b);
}
END_TEST

/* the whole model: an auto layer distilled inside a language model's objective */
START_TEST(test_distill_model) {
    Config cfg = tu_tiny_config("auto");
    tu_apply_sets(&cfg, "model.mixer=auto,sdpa;model.auto_threshold=8;auto.distill_weight=0.5");
    GcModel c;
    gc_model_setup(&c, &cfg);
    c.w = 1;
    mixer_auto_hold_target(c.m.blocks[0].mixer, 1);
    gc_model_check(&c, "auto distill", "2-layer model auto,sdpa distilled");
}
END_TEST

/* attention transfer (docs/migration.md): auto layers above an sdpa layer, train.lm_weight 0
 * (Model.lm_weight), so the objective is the sum over the auto layers of
 * w |oh_gma - sg(oh_sdpa)|^2 / |sg(oh_sdpa)|^2 alone, each layer fed the sdpa (teacher's)
 * output of the layers below: every parameter's gradient against central differences of
 * that sum; the logits are the all-sdpa model's (teacher-forced); each layer's logged
 * transfer loss (mixer_auto_transfer) is its term / w; the head gets no gradient */
static double transfer_loss(void *p) {
    GcModel *c = p;
    LossStats st;
    ck_assert_int_eq(model_forward(&c->m, c->tok, c->tgt, 2, 7, NULL, 0, &st, 1, 0), 0);
    double weighted = 0;
    model_aux_loss(&c->m, &weighted);
    return weighted;
}

START_TEST(test_transfer_model) {
    Config cfg = tu_tiny_config("auto");
    tu_apply_sets(&cfg, "model.n_layers=3;model.mixer=sdpa,auto,auto;model.auto_threshold=8;auto.distill_weight=0.6");
    GcModel c;
    gc_model_setup(&c, &cfg);
    c.m.lm_weight = 0;
    /* the teacher: the same weights in an all-sdpa model (the tensors of auto are gma's,
     * a superset of sdpa's: copied by name) */
    Config tcfg = cfg;
    tu_apply_sets(&tcfg, "model.mixer=sdpa");
    GcModel t;
    gc_model_setup(&t, &tcfg);
    for (int i = 0; i < t.m.pt.n; i++) {
        int j = pt_find(&c.m.pt, t.m.pt.t[i].name);
        ck_assert_int_ge(j, 0);
        memcpy(t.m.params + t.m.pt.t[i].offset, c.m.params + c.m.pt.t[j].offset, t.m.pt.t[i].numel * sizeof(real));
    }
    LossStats a, b;
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.tgt, 2, 7, NULL, 0, &a, 1, 0), 0);
    ck_assert_int_eq(model_forward(&t.m, t.tok, t.tgt, 2, 7, NULL, 0, &b, 1, 0), 0);
    ck_assert_msg(fabs(a.loss_sum - b.loss_sum) <= 1e-12 * fabs(b.loss_sum), "teacher-forced loss %.17g, teacher %.17g",
                  a.loss_sum, b.loss_sum);
    double w = 0, sum = 0, d;
    for (int l = 1; l < 3; l++) {
        ck_assert(mixer_auto_transfer(c.m.blocks[l].mixer, &d));
        ck_assert_msg(d > 0, "layer %d: transfer loss %g", l, d);
        sum += d;
    }
    ck_assert(!mixer_auto_transfer(c.m.blocks[0].mixer, &d)); /* sdpa */
    ck_assert_msg(fabs(model_aux_loss(&c.m, &w) - 0.6 * sum) <= 1e-12 * sum, "the aux loss is not w x the layers' sum");
    for (int l = 1; l < 3; l++) mixer_auto_hold_target(c.m.blocks[l].mixer, 1);
    double worst = gc_model_grads(&c.m, transfer_loss, &c, "attention transfer");
    GC_ASSERT("attention transfer (sdpa, auto, auto; lm_weight 0)", worst);
    int head = pt_find(&c.m.pt, "ln_f.weight");
    ck_assert_int_ge(head, 0);
    for (size_t j = 0; j < c.m.pt.t[head].numel; j++) ck_assert(c.m.grads[c.m.pt.t[head].offset + j] == 0);
    model_free(&c.m);
    model_free(&t.m);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("auto with distillation (float64 gradient checks)");
    TCase *tc = tcase_create("auto");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_distill, 0, N_CASES);
    tcase_add_test(tc, test_distill_output_and_off);
    tcase_add_test(tc, test_distill_model);
    tcase_add_test(tc, test_transfer_model);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
