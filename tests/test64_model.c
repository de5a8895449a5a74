/* test64_model.c: finite-difference gradient checks (float64 build) of the mixers (sdpa
 * and gma, causal and bidirectional, with and without key padding, gradcheck.h
 * gc_mixer_case: also the accumulate contract and padding isolation) and of a whole 2-layer
 * model (every parameter element; also with the head in chunks of rows, and the chunked
 * head equal to the whole one; distilled from a teacher, the KL term with it), plus causality: changing a future token leaves
 * earlier outputs and losses unchanged. The same with the short convolutions on q, k, v
 * (model.short_conv; gma, also with its EMA memory and softmax routing, and sdpa; a model of
 * each). The block recipe (nn/recipe.h): RMSNorm, the SwiGLU MLP, an untied head, each
 * alone and all together (with a chunked head, a sliding window and a distilled student), and
 * causality with them. */
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "nn/mixers/gma_core.h"
#include "testutil.h"

#define tiny_config tu_tiny_config

/* ---------------- one mixer layer ---------------- */
static void mixer_case(const char *name, int causal, int padded) {
    Config cfg = tiny_config(name);
    gc_mixer_case(&cfg, name, causal, padded);
}

GC_MIXER_TESTS(sdpa, "sdpa")
GC_MIXER_TESTS(gma, "gma")

/* the backward in groups of (batch, head) rows (gma_backward_group): whole batches with a
 * last, shorter group (B 5 in groups of 2 batches, key padding in the batches of the
 * second group), and heads in groups of 2 of 3; the grouping asserted, then every gradient */
static void group_case(const char *sets, int B, int causal, int want) {
    static const uint8_t mask[35] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0,
                                     1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1};
    Config cfg = tiny_config("gma");
    tu_apply_sets(&cfg, sets);
    GcMix c;
    gc_mix_setup(&c, &cfg, "gma", B, 7, causal, B == 5 ? mask : NULL, 11 + causal);
    ck_assert_int_eq(gma_backward_group(c.m, B, 7), want);
    char label[128];
    snprintf(label, sizeof label, "gma %s, B %d, groups of %d", causal ? "causal" : "bidir", B, want);
    free(gc_mix_check(&c, label));
    gc_mix_free(&c);
}
START_TEST(test_gma_groups_of_batches) {
    group_case("model.d_model=4;model.n_heads=2;gma.n_components=4", 5, 1, 4);
    group_case("model.d_model=4;model.n_heads=2;gma.n_components=4", 5, 0, 4);
}
END_TEST
START_TEST(test_gma_groups_of_heads) {
    group_case("model.d_model=6;model.n_heads=3;gma.n_components=4", 2, 1, 2);
}
END_TEST

/* ---------------- whole model ---------------- */
static void model_case(const char *mixers) {
    Config cfg = tiny_config("gma");
    ck_assert_int_eq(cfg_set(&cfg, mixers), 0);
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    GcModel c;
    gc_model_setup(&c, &cfg);
    char nm[96];
    snprintf(nm, sizeof nm, "2-layer model %s (%d tensors)", strncmp(mixers, "model.mixer=", 12) ? mixers : mixers + 12, c.m.pt.n);
    gc_model_check(&c, mixers, nm);
}

/* the block recipe: several keys (tu_apply_sets) */
static void recipe_case(const char *sets) {
    Config cfg = tiny_config("gma");
    tu_apply_sets(&cfg, sets);
    GcModel c;
    gc_model_setup(&c, &cfg);
    char nm[160];
    snprintf(nm, sizeof nm, "2-layer model %s (%d tensors)", sets, c.m.pt.n);
    gc_model_check(&c, sets, nm);
}
START_TEST(test_model_rmsnorm) { recipe_case("model.mixer=sdpa,gma;model.norm=rmsnorm"); }
END_TEST
START_TEST(test_model_swiglu) { recipe_case("model.mixer=sdpa,gma;model.mlp_act=swiglu"); }
END_TEST
START_TEST(test_model_untied) { recipe_case("model.mixer=sdpa,gma;model.tie_embeddings=false"); }
END_TEST
START_TEST(test_model_recipe_all) {
    recipe_case("model.mixer=sdpa,gma;model.norm=rmsnorm;model.mlp_act=swiglu;model.tie_embeddings=false");
    recipe_case("model.mixer=sdpa;sdpa.window=3;model.norm=rmsnorm;model.mlp_act=swiglu;model.tie_embeddings=false;"
                "model.head_chunk=5;model.mlp_hidden_dropout=0.3");
}
END_TEST
START_TEST(test_causal_recipe) {
    Config cfg = tiny_config("sdpa");
    tu_apply_sets(&cfg, "model.norm=rmsnorm;model.mlp_act=swiglu;model.tie_embeddings=false;sdpa.window=2");
    gc_causal_case(&cfg, "sdpa (rmsnorm, swiglu, untied, window 2)", 0);
}
END_TEST

/* model.pos "rope": rotary positions on q and k of the softmax-attention layers (after the
 * short convolutions), every parameter of models with sdpa and gma, sdpa_ref and windowed
 * sdpa; causality with them; an odd head width refused in one line naming model.pos */
START_TEST(test_model_rope) {
    recipe_case("model.mixer=sdpa,gma;model.pos=rope;model.short_conv=4");
    recipe_case("model.mixer=sdpa_ref,sdpa;model.pos=rope;sdpa.window=3;model.norm=rmsnorm;model.mlp_act=swiglu");
}
END_TEST
START_TEST(test_causal_rope) {
    Config cfg = tiny_config("sdpa");
    tu_apply_sets(&cfg, "model.pos=rope;model.short_conv=3");
    gc_causal_case(&cfg, "sdpa (rope, short_conv 3)", 0);
}
END_TEST
START_TEST(test_rope_odd_width) {
    Config cfg = tiny_config("sdpa");
    tu_apply_sets(&cfg, "model.pos=rope;model.d_model=6;model.n_heads=2");
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    Model m;
    ck_assert_int_eq(model_build(&m, &cfg), -1);
    ck_assert_msg(strstr(gma_error(), "model.pos") && strstr(gma_error(), "odd"), "%s", gma_error());
    printf("odd head width: %s\n", gma_error());
    tu_apply_sets(&cfg, "model.mixer=gma"); /* no softmax attention: no rotation, any width */
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    ck_assert_int_eq(model_build(&m, &cfg), 0);
    model_free(&m);
}
END_TEST

START_TEST(test_model_gma) { model_case("model.mixer=gma"); }
END_TEST
START_TEST(test_model_hybrid) { model_case("model.mixer=sdpa,gma"); }
END_TEST

/* ---------------- distillation (train.distill): CE + w T^2 KL(teacher || model) ---------------- */
typedef struct {
    GcModel c;
    Model t;
    double w, T;
} GcDistill;
static double distill_loss(void *p) {
    GcDistill *d = p;
    LossStats st;
    ck_assert_int_eq(model_forward(&d->c.m, d->c.tok, d->c.tgt, 2, 7, NULL, 0, &st, 1, 0), 0);
    return (st.loss_sum + d->w * d->T * d->T * st.kl_sum) / st.count;
}
/* every parameter of a gma student (head whole or in chunks of 5 rows) against central
 * differences of the distilled loss, the teacher an sdpa model of other weights; the KL
 * part alone is checked too (CE weight left in: w large), and KL > 0 */
static void distill_case(const char *chunk, double w, double T) {
    GcDistill d;
    Config cfg = tiny_config("gma");
    ck_assert_int_eq(cfg_set(&cfg, chunk), 0);
    ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
    gc_model_setup(&d.c, &cfg);
    Config tc = tiny_config("sdpa");
    ck_assert_int_eq(model_build(&d.t, &tc), 0);
    model_alloc(&d.t, 2, 7);
    model_init_params(&d.t, 99);
    d.w = w, d.T = T;
    ck_assert_int_eq(model_set_teacher(&d.c.m, &d.t, w, T), 0);
    LossStats st;
    ck_assert_int_eq(model_forward(&d.c.m, d.c.tok, d.c.tgt, 2, 7, NULL, 0, &st, 1, 0), 0);
    ck_assert_msg(st.kl_sum > 1e-6, "KL %g", st.kl_sum);
    char nm[96];
    snprintf(nm, sizeof nm, "distilled model %s w %g T %g", chunk, w, T);
    GC_ASSERT(nm, gc_model_grads(&d.c.m, distill_loss, &d, nm));
    /* an evaluation forward is not distilled */
    ck_assert_int_eq(model_forward(&d.c.m, d.c.tok, d.c.tgt, 2, 7, NULL, 0, &st, 0, 0), 0);
    ck_assert(st.kl_sum == 0);
    model_free(&d.c.m);
    model_free(&d.t);
}
START_TEST(test_model_distill) {
    distill_case("model.head_chunk=0", 0.5, 2.0);
    distill_case("model.head_chunk=5", 3.0, 0.7); /* 14 rows: 5, 5, 4 */
}
END_TEST
/* a teacher of another vocabulary is refused */
START_TEST(test_distill_vocab) {
    Config a = tiny_config("gma"), b = tiny_config("sdpa");
    ck_assert_int_eq(cfg_set(&b, "model.vocab_size=12"), 0);
    Model s, t;
    ck_assert_int_eq(model_build(&s, &a), 0);
    ck_assert_int_eq(model_build(&t, &b), 0);
    model_alloc(&s, 2, 7), model_alloc(&t, 2, 7);
    ck_assert_int_eq(model_set_teacher(&s, &t, 1, 1), -1);
    ck_assert_msg(strstr(gma_error(), "vocabulary is 12 tokens, the model's 11"), "%s", gma_error());
    model_free(&s), model_free(&t);
}
END_TEST

/* ---------------- the head in chunks of rows (model.head_chunk) ---------------- */
START_TEST(test_model_head_chunk) { model_case("model.head_chunk=5"); } /* 14 rows: 5, 5, 4 */
END_TEST

/* the same batch through the whole head and through chunks of 5 rows: equal losses, argmax
 * and gradients, after a training forward (the head's backward runs in the forward) and
 * after an evaluation forward (the backward computes each chunk's logits again); a second
 * backward doubles the gradient; the logits left are the last chunk's rows */
START_TEST(test_head_chunk_equal) {
    GcModel c[2];
    for (int k = 0; k < 2; k++) {
        Config cfg = tiny_config("gma");
        ck_assert_int_eq(cfg_set(&cfg, k ? "model.head_chunk=5" : "model.head_chunk=0"), 0);
        ck_assert_msg(cfg_validate(&cfg) == 0, "%s", gma_error());
        gc_model_setup(&c[k], &cfg);
    }
    ck_assert_int_eq(c[0].m.head_rows, 14);
    ck_assert_int_eq(c[1].m.head_rows, 5);
    ck_assert_ptr_null(c[0].m.head_gw);
    ck_assert_ptr_nonnull(c[1].m.head_gw);
    size_t P = c[0].m.pt.total, V = (size_t)c[0].m.V;
    real *g0 = xcalloc(P, sizeof(real));
    for (int training = 1; training >= 0; training--) {
        LossStats st[2];
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(model_forward(&c[k].m, c[k].tok, c[k].tgt, 2, 7, NULL, 1, &st[k], training, 0), 0);
            model_zero_grad(&c[k].m);
            model_backward(&c[k].m, 1.0);
        }
        ck_assert_msg(fabs(st[0].loss_sum - st[1].loss_sum) <= 1e-12 * fabs(st[0].loss_sum), "loss %.17g against %.17g",
                      st[0].loss_sum, st[1].loss_sum);
        ck_assert(st[0].count == st[1].count && st[0].correct == st[1].correct);
        double worst = 0, big = 0;
        for (size_t i = 0; i < P; i++) {
            worst = fmax(worst, fabs(c[0].m.grads[i] - c[1].m.grads[i]));
            big = fmax(big, fabs(c[0].m.grads[i]));
        }
        printf("head in chunks of 5 rows (%s forward): loss %.3e apart, gradients %.3e of their largest\n",
               training ? "training" : "evaluation", fabs(st[0].loss_sum - st[1].loss_sum), worst / big);
        ck_assert_msg(worst <= 1e-12 * big, "gradients differ by %.3e (largest %.3e)", worst, big);
        memcpy(g0, c[1].m.grads, P * sizeof(real));
        model_backward(&c[1].m, 1.0); /* a second backward adds the same gradient again */
        worst = 0;
        for (size_t i = 0; i < P; i++) worst = fmax(worst, fabs(c[1].m.grads[i] - 2 * g0[i]));
        ck_assert_msg(worst <= 1e-12 * big, "a second backward: %.3e from twice the first", worst);
    }
    /* after the evaluation forward: rows 10..13 in the chunked model's logits */
    LossStats st;
    for (int k = 0; k < 2; k++) ck_assert_int_eq(model_forward(&c[k].m, c[k].tok, c[k].tgt, 2, 7, NULL, 0, &st, 0, 0), 0);
    ck_assert_int_eq(c[0].m.logits_row0, 0);
    ck_assert_int_eq(c[1].m.logits_row0, 10);
    for (size_t i = 0; i < 4 * V; i++) ck_assert(fabs(c[1].m.logits[i] - c[0].m.logits[10 * V + i]) <= 1e-12);
    /* incremental decoding of more sequences (7) than one chunk's rows: the logits get their
     * own buffer while decoding (the same as the whole head's), then the model's is back */
    DecodeState dd[2];
    real *own = c[1].m.logits;
    int32_t toks[7] = {1, 4, 2, 8, 5, 7, 3};
    for (int k = 0; k < 2; k++) ck_assert_int_eq(model_decode_begin_batch(&c[k].m, &dd[k], 7), 0);
    ck_assert_ptr_ne(c[1].m.logits, own);
    for (int step = 0; step < 3; step++) {
        for (int k = 0; k < 2; k++) ck_assert_int_eq(model_decode_step_batch(&c[k].m, &dd[k], toks), 0);
        for (size_t i = 0; i < 7 * V; i++) ck_assert(fabs(c[1].m.logits[i] - c[0].m.logits[i]) <= 1e-12);
        for (int b = 0; b < 7; b++) toks[b] = (toks[b] + 3) % (int32_t)V;
    }
    for (int k = 0; k < 2; k++) model_decode_end(&c[k].m, &dd[k]);
    ck_assert_ptr_eq(c[1].m.logits, own);
    free(g0);
    for (int k = 0; k < 2; k++) model_free(&c[k].m);
}
END_TEST

/* ---------------- causality ---------------- */
static void causal_case(const char *mixer) {
    Config cfg = tiny_config(mixer);
    gc_causal_case(&cfg, mixer, 0);
}
START_TEST(test_causal_gma) { causal_case("gma"); }
END_TEST
START_TEST(test_causal_sdpa) { causal_case("sdpa"); }
END_TEST

/* ---------------- the short convolutions on q, k, v (model.short_conv, docs/model.md §3.9) ---------------- */
/* one layer with `sets` (model.short_conv=K among them): the three [D, K] weights are in
 * the table (so their gradients are checked with every other tensor's), then
 * gc_mixer_case: gradients, the accumulate contract, padding isolation */
static void conv_case(const char *name, const char *sets, int causal, int padded) {
    Config cfg = tiny_config(name);
    tu_apply_sets(&cfg, sets);
    GcMix c;
    gc_mix_setup(&c, &cfg, name, 2, 7, causal, NULL, 1);
    int K = (int)cfg_num(&cfg, "model.short_conv");
    ck_assert_int_eq(c.m->conv_k, K);
    const char *w[] = {"blocks.0.mixer.q_conv.weight", "blocks.0.mixer.k_conv.weight", "blocks.0.mixer.v_conv.weight"};
    for (int i = 0; i < 3; i++) {
        int t = pt_find(&c.pt, w[i]);
        ck_assert_msg(t >= 0, "%s %s: no %s", name, sets, w[i]);
        ck_assert(c.pt.t[t].shape[0] == c.m->D && c.pt.t[t].shape[1] == K);
    }
    gc_mix_free(&c);
    printf("%s %s:\n", name, sets);
    gc_mixer_case(&cfg, name, causal, padded);
}
static void conv_cases(const char *name, const char *sets) {
    for (int k = 0; k < 4; k++) conv_case(name, sets, k & 1, k >> 1);
}
START_TEST(test_gma_short_conv) {
    conv_cases("gma", "model.short_conv=4"); /* N = 7: windows cut at position 0 and whole */
    conv_case("gma", "model.short_conv=2", 1, 1);
    conv_case("gma", "model.short_conv=4;gma.memory=ema", 1, 1);
    conv_case("gma", "model.short_conv=3;gma.routing=softmax;model.attn_bias=false", 0, 1);
}
END_TEST
START_TEST(test_sdpa_short_conv) {
    conv_cases("sdpa", "model.short_conv=4");
    conv_case("sdpa", "model.short_conv=2", 1, 1);
}
END_TEST
/* a padded position with real rows after it inside their windows: its row enters the
 * convolutions as zeros (as FLA's mask), so changing it leaves every other output as it
 * was; and the gradients with that mask */
START_TEST(test_short_conv_inner_padding) {
    static const uint8_t mask[14] = {1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0};
    const char *names[] = {"gma", "sdpa"};
    for (int i = 0; i < 2; i++) {
        Config cfg = tiny_config(names[i]);
        tu_apply_sets(&cfg, "model.short_conv=4");
        GcMix c;
        gc_mix_setup(&c, &cfg, names[i], 2, 7, 1, mask, 3);
        int D = c.m->D;
        gc_mix_loss(&c);
        real *y0 = xcalloc(c.n, sizeof(real));
        memcpy(y0, c.y, c.n * sizeof(real));
        for (int e = 0; e < D; e++) c.h[2 * D + e] += 3;
        gc_mix_loss(&c);
        double worst = 0;
        for (int n = 0; n < 14; n++)
            if (n != 2)
                for (int e = 0; e < D; e++) worst = fmax(worst, fabs(c.y[n * D + e] - y0[n * D + e]));
        printf("%s short_conv 4, padded position 2: other rows moved by %.1e\n", names[i], worst);
        ck_assert_msg(worst < 1e-12, "%s: the padded row reached later rows (%.3e)", names[i], worst);
        char label[64];
        snprintf(label, sizeof label, "%s conv4 inner padding", names[i]);
        free(gc_mix_check(&c, label));
        free(y0);
        gc_mix_free(&c);
    }
}
END_TEST
START_TEST(test_model_short_conv) {
    const char *sets[] = {"model.mixer=gma;model.short_conv=4", "model.mixer=sdpa,gma;model.short_conv=2"};
    for (int i = 0; i < 2; i++) {
        Config cfg = tiny_config("gma");
        tu_apply_sets(&cfg, sets[i]);
        GcModel c;
        gc_model_setup(&c, &cfg);
        ck_assert_int_ge(pt_find(&c.m.pt, "blocks.1.mixer.v_conv.weight"), 0);
        char nm[96];
        snprintf(nm, sizeof nm, "2-layer model %s (%d tensors)", sets[i] + 12, c.m.pt.n);
        gc_model_check(&c, sets[i], nm);
    }
}
END_TEST
START_TEST(test_causal_short_conv) {
    for (int i = 0; i < 2; i++) {
        Config cfg = tiny_config(i ? "sdpa" : "gma");
        tu_apply_sets(&cfg, "model.short_conv=4");
        gc_causal_case(&cfg, i ? "sdpa conv4" : "gma conv4", 0);
    }
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("mixers and model (float64 gradient checks)");
    TCase *tc = tcase_create("mixers");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_sdpa_causal);
    tcase_add_test(tc, test_sdpa_bidir);
    tcase_add_test(tc, test_sdpa_bidir_padded);
    tcase_add_test(tc, test_sdpa_causal_padded);
    tcase_add_test(tc, test_gma_causal);
    tcase_add_test(tc, test_gma_bidir);
    tcase_add_test(tc, test_gma_bidir_padded);
    tcase_add_test(tc, test_gma_causal_padded);
    tcase_add_test(tc, test_gma_groups_of_batches);
    tcase_add_test(tc, test_gma_groups_of_heads);
    tcase_add_test(tc, test_gma_short_conv);
    tcase_add_test(tc, test_sdpa_short_conv);
    tcase_add_test(tc, test_short_conv_inner_padding);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("model");
    tcase_set_timeout(tm, 300);
    tcase_add_test(tm, test_model_gma);
    tcase_add_test(tm, test_model_hybrid);
    tcase_add_test(tm, test_model_rmsnorm);
    tcase_add_test(tm, test_model_swiglu);
    tcase_add_test(tm, test_model_untied);
    tcase_add_test(tm, test_model_recipe_all);
    tcase_add_test(tm, test_causal_recipe);
    tcase_add_test(tm, test_model_head_chunk);
    tcase_add_test(tm, test_head_chunk_equal);
    tcase_add_test(tm, test_model_distill);
    tcase_add_test(tm, test_distill_vocab);
    tcase_add_test(tm, test_causal_gma);
    tcase_add_test(tm, test_causal_sdpa);
    tcase_add_test(tm, test_model_short_conv);
    tcase_add_test(tm, test_causal_short_conv);
    tcase_add_test(tm, test_model_rope);
    tcase_add_test(tm, test_causal_rope);
    tcase_add_test(tm, test_rope_odd_width);
    suite_add_tcase(s, tm);
    return s;
}

GMA_TEST_MAIN()
