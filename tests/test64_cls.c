/* test64_cls.c: finite-difference gradient checks (float64 build) of the encoder
 * classifier: mean and max pooling over a padded batch, CLS pooling, the linear head, the
 * two-sequence head, and whole 2-layer classifiers (bidirectional gma and sdpa, padded
 * batches, mean, max and cls pooling, one and two sequences) on every parameter element;
 * a convolutional stem before the blocks (batch, instance and no normalisation); the
 * accumulate contract of the pooling; padding invariance of the logits, and padding as
 * content with model.key_padding_mask false; the block recipe (RMSNorm, SwiGLU) with
 * sdpa's symmetric sliding-window band. */
#include <string.h>

#include "gradcheck.h"
#include "model/model.h"
#include "nn/cls_head.h"
#include "nn/pool.h"
#include "testutil.h"

/* ---------------- pooling ---------------- */
enum { PR = 3, PN = 5, PD = 4 };
typedef struct {
    real x[PR * PN * PD], w[PR * PN], out[PR * PD], r[PR * PD];
} PoolCtx;

static double pool_loss(void *p) {
    PoolCtx *c = p;
    pool_forward(c->out, c->x, c->w, PR, PN, PD);
    return gc_dot(c->out, c->r, PR * PD);
}

static void pool_case(PoolKind kind, const char *name) {
    static const uint8_t mask[PR * PN] = {1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
    PoolCtx c;
    Rng rng;
    rng_seed(&rng, 5 + kind);
    gc_fill(c.x, PR * PN * PD, &rng, 1);
    gc_fill(c.r, PR * PD, &rng, 1);
    pool_weights(c.w, mask, PR, PN, kind);
    pool_loss(&c);
    real dx[PR * PN * PD] = {0}, dx2[PR * PN * PD] = {0};
    pool_backward(dx, c.r, c.w, PR, PN, PD);
    GC_ASSERT(name, gc_check(pool_loss, &c, c.x, dx, PR * PN * PD));
    /* accumulate: twice = double */
    pool_backward(dx2, c.r, c.w, PR, PN, PD);
    pool_backward(dx2, c.r, c.w, PR, PN, PD);
    for (int i = 0; i < PR * PN * PD; i++) ck_assert(fabs(dx2[i] - 2 * dx[i]) < 1e-12);
    /* padded positions get no gradient (mean) ; only position 0 (cls) */
    for (int r = 0; r < PR; r++)
        for (int n = 0; n < PN; n++)
            for (int e = 0; e < PD; e++) {
                int live = kind == POOL_CLS ? n == 0 : mask[r * PN + n];
                if (!live) ck_assert(dx[(r * PN + n) * PD + e] == 0);
            }
    /* the mean is the mean */
    if (kind == POOL_MEAN)
        for (int e = 0; e < PD; e++) {
            double s = (c.x[(5 + 0) * PD + e] + c.x[(5 + 1) * PD + e] + c.x[(5 + 2) * PD + e] + c.x[(5 + 3) * PD + e] +
                        c.x[(5 + 4) * PD + e]) / 5;
            ck_assert(fabs(c.out[PD + e] - s) < 1e-12);
            ck_assert(fabs(c.out[2 * PD + e] - c.x[(10) * PD + e]) < 1e-12);
        }
}
/* max pooling: the largest value of each channel over the real positions, the gradient at
 * that position only, a row without real positions pools to 0 */
typedef struct {
    real x[PR * PN * PD], w[PR * PN], out[PR * PD], r[PR * PD];
    int32_t arg[PR * PD];
} MaxCtx;
static double max_loss(void *p) {
    MaxCtx *c = p;
    g_ops->maxpool_forward(c->out, c->arg, c->x, c->w, PR, PN, PD);
    return gc_dot(c->out, c->r, PR * PD);
}
START_TEST(test_pool_max) {
    static const uint8_t mask[PR * PN] = {1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0};
    MaxCtx c;
    Rng rng;
    rng_seed(&rng, 9);
    gc_fill(c.x, PR * PN * PD, &rng, 1);
    gc_fill(c.r, PR * PD, &rng, 1);
    pool_weights(c.w, mask, PR, PN, POOL_MEAN);
    c.x[(0 * PN + 4) * PD + 1] = 100; /* padding never wins */
    max_loss(&c);
    for (int r = 0; r < 2; r++)
        for (int e = 0; e < PD; e++) {
            double best = -1e300;
            for (int n = 0; n < PN; n++)
                if (mask[r * PN + n]) best = fmax(best, c.x[(r * PN + n) * PD + e]);
            ck_assert(c.out[r * PD + e] == best);
        }
    for (int e = 0; e < PD; e++) ck_assert(c.out[2 * PD + e] == 0 && c.arg[2 * PD + e] == -1);
    real dx[PR * PN * PD] = {0};
    g_ops->maxpool_backward(dx, c.r, c.arg, PR, PN, PD);
    GC_ASSERT("max pooling (padded) dx", gc_check(max_loss, &c, c.x, dx, PR * PN * PD));
    int nonzero = 0;
    for (int i = 0; i < PR * PN * PD; i++) nonzero += dx[i] != 0;
    ck_assert_int_eq(nonzero, 2 * PD);
}
END_TEST

START_TEST(test_pool_mean) { pool_case(POOL_MEAN, "mean pooling (padded) dx"); }
END_TEST
START_TEST(test_pool_cls) { pool_case(POOL_CLS, "cls pooling dx"); }
END_TEST

/* ---------------- heads ---------------- */
typedef struct {
    ClsHead h;
    ParamTable pt;
    real *params, *grads, *act, *scratch, *pooled, *logits, *r;
    int B;
} HeadCtx;

static double head_loss(void *p) {
    HeadCtx *c = p;
    cls_head_forward(&c->h, c->logits, c->act, c->pooled, c->params, c->B, NULL);
    return gc_dot(c->logits, c->r, (size_t)c->B * c->h.C);
}

/* nh hidden layers of widths 6 and 5, ReLU or GELU */
static void head_case(int pair, int nh, int relu, const char *label) {
    HeadCtx c;
    memset(&c, 0, sizeof c);
    int D = 4, C = 3;
    c.B = 3;
    ClsHeadSpec spec = {.nh = nh, .Dh = {6, 5}, .relu = relu, .init = INIT_NORMAL, .std = 0.5};
    cls_head_add(&c.h, &c.pt, D, C, pair, &spec);
    ck_assert_int_eq(pt_find(&c.pt, "head.mlp.fc.weight") >= 0, nh >= 1);
    ck_assert_int_eq(pt_find(&c.pt, "head.mlp.fc2.weight") >= 0, nh >= 2);
    Rng rng;
    rng_seed(&rng, 17 + pair + 2 * nh + 8 * relu);
    c.params = xcalloc(c.pt.total, sizeof(real));
    c.grads = xcalloc(c.pt.total, sizeof(real));
    pt_init(&c.pt, c.params, &rng);
    for (int i = 0; i < c.pt.n; i++) /* non-zero biases too */
        gc_fill(c.params + c.pt.t[i].offset, c.pt.t[i].numel, &rng, 0.5);
    size_t np = (size_t)c.B * (pair ? 2 : 1) * D;
    c.pooled = gc_random(np, &rng, 1);
    c.logits = xcalloc((size_t)c.B * C, sizeof(real));
    c.r = gc_random((size_t)c.B * C, &rng, 1);
    size_t na = cls_head_act_size(&c.h, c.B);
    c.act = xcalloc(na + 1, sizeof(real));
    c.scratch = xcalloc(na + 1, sizeof(real));
    head_loss(&c);
    real *dp = xcalloc(np, sizeof(real));
    cls_head_backward(&c.h, dp, c.grads, c.r, c.act, c.pooled, c.params, c.scratch, c.B, NULL);
    if (nh) { /* the hidden activation is the activation of its pre-activation */
        real *hid = cls_head_hidden(&c.h, c.act, nh - 1, c.B), *pre = hid - (size_t)c.B * c.h.Dh[nh - 1];
        for (int i = 0; i < c.B * c.h.Dh[nh - 1]; i++)
            if (relu) ck_assert(hid[i] == (pre[i] > 0 ? pre[i] : 0));
    }
    gc_assert_grad(label, "d pooled", head_loss, &c, c.pooled, dp, np);
    for (int i = 0; i < c.pt.n; i++)
        gc_assert_grad(label, c.pt.t[i].name, head_loss, &c, c.params + c.pt.t[i].offset, c.grads + c.pt.t[i].offset,
                       c.pt.t[i].numel);
    free(dp);
    free(c.params), free(c.grads), free(c.act), free(c.scratch), free(c.pooled), free(c.logits), free(c.r);
    pt_free(&c.pt);
}
START_TEST(test_head_linear) { head_case(0, 0, 0, "linear head"); }
END_TEST
START_TEST(test_head_pair) { head_case(1, 1, 0, "two-sequence head, one GELU layer"); }
END_TEST
/* LRA's heads: Dense(mlp_dim), ReLU, Dense(classes); two sequences with two ReLU layers */
START_TEST(test_head_mlp_relu) {
    head_case(0, 1, 1, "MLP head, one ReLU layer");
    head_case(0, 2, 0, "MLP head, two GELU layers");
    head_case(1, 2, 1, "two-sequence head, two ReLU layers");
    head_case(1, 0, 0, "two-sequence head, no hidden layer");
}
END_TEST

/* ---------------- whole classifier ---------------- */
/* tu_tiny_config as a classifier (its gma.chunk only splits causal scans: unused here) */
static Config cls_config(const char *mixer, const char *pooling, int n_seq) {
    Config c = tu_tiny_config(mixer);
    char pool[64];
    snprintf(pool, sizeof pool, "model.pooling=%s", pooling);
    ck_assert(cfg_set(&c, "model.task=classify") == 0 && cfg_set(&c, "data.source=cls") == 0 && cfg_set(&c, pool) == 0);
    snprintf(c.data.path, sizeof c.data.path, "unused");
    c.model.vocab_size = 9;
    cls_head_cfg_mut(&c)->n_classes = 3;
    cls_head_cfg_mut(&c)->n_seq = n_seq;
    ck_assert(cfg_set(&c, "linformer.k=5") == 0); /* baselines: k < N_max = 8 */
    ck_assert(cfg_set(&c, "performer.features=5") == 0);
    return c;
}

enum { CB = 2, CN = 6 };
typedef struct {
    Model m;
    int32_t tok[2 * CB * CN], lab[CB];
    int n_seq;
} ModCtx;

static double cls_loss(void *p) {
    ModCtx *c = p;
    LossStats st;
    ck_assert_msg(model_forward(&c->m, c->tok, c->lab, CB, CN, NULL, 0, &st, 1, 0) == 0, "%s", gma_error());
    return st.loss_sum / st.count;
}

/* padded batch: every sequence of example 0 ends in padding */
static void fill_batch(ModCtx *c, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    for (int r = 0; r < c->n_seq * CB; r++)
        for (int n = 0; n < CN; n++) {
            int pad = (r % CB == 0 && n >= CN - 2 - r / CB) ;
            c->tok[r * CN + n] = pad ? 0 : 1 + (int32_t)rng_below(&rng, 8);
        }
    for (int b = 0; b < CB; b++) c->lab[b] = (int32_t)rng_below(&rng, 3);
}

/* sets: "key=value;..." applied over the classifier config */
static void model_case_sets(const char *mixer, const char *pooling, int n_seq, const char *sets) {
    Config cfg = cls_config(mixer, pooling, n_seq);
    tu_apply_sets(&cfg, sets);
    ModCtx c;
    memset(&c, 0, sizeof c);
    c.n_seq = n_seq;
    ck_assert_int_eq(model_build(&c.m, &cfg), 0);
    ck_assert_int_eq(c.m.causal, 0);
    model_alloc(&c.m, CB, CN);
    model_init_params(&c.m, 7);
    /* non-zero biases, so that every path is exercised */
    Rng rng;
    rng_seed(&rng, 99);
    for (int i = 0; i < c.m.pt.n; i++)
        if (c.m.pt.t[i].group == GROUP_BIAS) gc_fill(c.m.params + c.m.pt.t[i].offset, c.m.pt.t[i].numel, &rng, 0.2);
    fill_batch(&c, 3);
    double worst = gc_model_grads(&c.m, cls_loss, &c, mixer);
    ck_assert_int_ge(pt_find(&c.m.pt, "head.weight"), 0);
    ck_assert_int_eq(pt_find(&c.m.pt, "cls_token") >= 0, !strcmp(pooling, "cls"));
    int hidden = cls_head_cfg(&cfg)->head_hidden >= 0 ? cls_head_cfg(&cfg)->head_hidden > 0 : n_seq == 2;
    ck_assert_int_eq(pt_find(&c.m.pt, "head.mlp.fc.weight") >= 0, hidden);
    ck_assert_int_eq(pt_find(&c.m.pt, "pos_emb.weight") >= 0, !strcmp(cfg_enum_name(&cfg, "model.pos"), "learned"));
    ck_assert_int_eq(pt_find(&c.m.pt, "blocks.0.mixer.q.bias") >= 0, (int)cfg_num(&cfg, "model.attn_bias"));
    char nm[160];
    snprintf(nm, sizeof nm, "2-layer classifier %s %s n_seq %d %s(%d tensors)", mixer, pooling, n_seq,
             sets[0] ? "with settings " : "", c.m.pt.n);
    GC_ASSERT(nm, worst);
    model_free(&c.m);
}

static void model_case(const char *mixer, const char *pooling, int n_seq) { model_case_sets(mixer, pooling, n_seq, ""); }

/* the release's model settings: sinusoidal positions, projections without bias, q/k/v
 * width 6 != D = 8, a ReLU MLP head (two layers for two sequences), xavier_uniform dense
 * weights, the CLS token starting at zero */
#define LRA_SETS "model.pos=sinusoidal;model.attn_bias=false;model.qkv_dim=6;model.head_hidden=5;model.head_act=relu;" \
                 "model.dense_init=xavier_uniform;model.head_init=lecun_normal;model.embed_std=1;model.cls_std=0"
START_TEST(test_cls_lra_settings) {
    model_case_sets("sdpa", "cls", 1, LRA_SETS);
    model_case_sets("gma", "cls", 1, LRA_SETS);
    model_case_sets("sdpa", "cls", 2, LRA_SETS ";model.head_hidden2=3");
    model_case_sets("linformer", "cls", 1, LRA_SETS);
    model_case_sets("performer", "mean", 1, LRA_SETS);
    model_case_sets("linear", "cls", 1, LRA_SETS);
    /* the release's linear, performer and linformer attention take no padding mask */
    model_case_sets("linear", "cls", 1, LRA_SETS ";model.key_padding_mask=false;data.pad_full=true");
    model_case_sets("performer", "cls", 1, LRA_SETS ";model.key_padding_mask=false;data.pad_full=true");
    model_case_sets("linformer", "cls", 2, LRA_SETS ";model.key_padding_mask=false;data.pad_full=true");
}
END_TEST

/* the block recipe in a classifier (RMSNorm, SwiGLU; nn/recipe.h) and sdpa's symmetric
 * sliding-window band over padded sequences, pairs with a CLS slot */
START_TEST(test_cls_recipe_window) {
    model_case_sets("sdpa", "mean", 1, "model.norm=rmsnorm;model.mlp_act=swiglu;sdpa.window=2");
    model_case_sets("sdpa", "cls", 2, "model.norm=rmsnorm;model.mlp_act=swiglu;sdpa.window=3");
}
END_TEST

/* dropout on the head's hidden activations (model.head_dropout), both hidden layers, with
 * the residual sites on too: a fixed mask per check, and the head's mask acts alone */
START_TEST(test_cls_head_dropout) {
    model_case_sets("sdpa", "cls", 2, LRA_SETS ";model.head_hidden2=3;model.head_dropout=0.4;model.dropout=0.2");
    model_case_sets("gma", "mean", 1, LRA_SETS ";model.head_dropout=0.4");
    Config cfg = cls_config("gma", "mean", 1);
    tu_apply_sets(&cfg, LRA_SETS ";model.head_dropout=0.5");
    ModCtx c;
    memset(&c, 0, sizeof c);
    c.n_seq = 1;
    ck_assert_int_eq(model_build(&c.m, &cfg), 0);
    model_alloc(&c.m, CB, CN);
    model_init_params(&c.m, 7);
    fill_batch(&c, 3);
    LossStats tr, ev, tr2;
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.lab, CB, CN, NULL, 0, &tr, 1, 0), 0);
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.lab, CB, CN, NULL, 0, &ev, 0, 0), 0);
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.lab, CB, CN, NULL, 0, &tr2, 1, 0), 0);
    ck_assert_msg(fabs(tr.loss_sum - ev.loss_sum) > 1e-9, "head dropout changed nothing");
    ck_assert_msg(tr.loss_sum == tr2.loss_sum, "the same step drew another mask");
    model_free(&c.m);
}
END_TEST

/* the fixed table: sin at even columns, cos at odd ones, frequencies 10000^(-2i/D) */
START_TEST(test_pos_sinusoidal) {
    enum { N = 5, D = 6 };
    real pe[N * D];
    pos_sinusoidal(pe, N, D);
    for (int n = 0; n < N; n++)
        for (int i = 0; i < D / 2; i++) {
            double w = pow(10000.0, -2.0 * i / D);
            ck_assert(fabs(pe[n * D + 2 * i] - sin(n * w)) < 1e-12);
            ck_assert(fabs(pe[n * D + 2 * i + 1] - cos(n * w)) < 1e-12);
        }
    ck_assert(fabs(pe[3 * D + 0] - sin(3.0)) < 1e-12);
}
END_TEST

/* the convolutional stem (docs/model.md §2.1) over 2 x 3 images, the padded positions as
 * pixels: batch norm (training statistics), instance norm and none; two dilations, so the
 * second layer's taps at dilation 2 fall partly outside; learned and fixed positions */
#define STEM_SETS "model.stem=conv;model.stem_dilations=1,2;model.stem_width=3;model.stem_norm="
START_TEST(test_cls_stem) {
    model_case_sets("gma", "mean", 1, STEM_SETS "batch");
    model_case_sets("gma", "mean", 1, STEM_SETS "instance;model.pos=sinusoidal");
    model_case_sets("sdpa", "mean", 1, STEM_SETS "none");
    model_case_sets("linear", "mean", 1, STEM_SETS "instance;model.dropout=0.2");
    model_case_sets("gma", "max", 1, STEM_SETS "batch");
}
END_TEST

START_TEST(test_cls_gma_max) { model_case("gma", "max", 1); }
END_TEST

START_TEST(test_cls_gma_mean) { model_case("gma", "mean", 1); }
END_TEST
START_TEST(test_cls_gma_cls) { model_case("gma", "cls", 1); }
END_TEST
START_TEST(test_cls_gma_pair) { model_case("gma", "mean", 2); }
END_TEST
START_TEST(test_cls_gma_pair_cls) { model_case("gma", "cls", 2); }
END_TEST
START_TEST(test_cls_sdpa_mean) { model_case("sdpa", "mean", 1); }
END_TEST
START_TEST(test_cls_sdpa_cls) { model_case("sdpa", "cls", 1); }
END_TEST
/* the bidirectional baselines inside the classifier (padded batches, mean and CLS pooling) */
START_TEST(test_cls_baselines) {
    model_case("linformer", "mean", 1);
    model_case("linformer", "cls", 2);
    model_case("linear", "cls", 1);
    model_case("performer", "mean", 2);
}
END_TEST

/* ---------------- padding invariance ---------------- */
/* a classifier of cfg with its parameters (seed 8) and a padded batch (seed 4) */
static void pad_setup(ModCtx *c, const Config *cfg, int n_seq) {
    memset(c, 0, sizeof *c);
    c->n_seq = n_seq;
    ck_assert_int_eq(model_build(&c->m, cfg), 0);
    model_alloc(&c->m, CB, CN);
    model_init_params(&c->m, 8);
    fill_batch(c, 4);
}
static void pad_case(const char *mixer, const char *pooling, int n_seq) {
    Config cfg = cls_config(mixer, pooling, n_seq);
    ModCtx c;
    pad_setup(&c, &cfg, n_seq);
    uint8_t mask[2 * CB * CN];
    for (int i = 0; i < n_seq * CB * CN; i++) mask[i] = c.tok[i] != 0;
    LossStats st;
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.lab, CB, CN, mask, 0, &st, 0, 0), 0);
    real l0[CB * 3];
    memcpy(l0, c.m.logits, sizeof l0);
    /* the same batch padded to a longer length gives the same logits */
    int changed = 0;
    for (int i = 0; i < n_seq * CB * CN; i++)
        if (!mask[i]) c.tok[i] = 5, changed++;
    ck_assert_int_gt(changed, 0);
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.lab, CB, CN, mask, 0, &st, 0, 0), 0);
    for (int i = 0; i < CB * 3; i++) ck_assert_msg(c.m.logits[i] == l0[i], "logit %d changed with a padded token", i);
    /* a real token does change them */
    c.tok[CN - 1 + CN] = c.tok[CN - 1 + CN] == 1 ? 2 : 1; /* last token of example 1 (unpadded) */
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.lab, CB, CN, mask, 0, &st, 0, 0), 0);
    ck_assert(c.m.logits[3] != l0[3] || c.m.logits[4] != l0[4] || c.m.logits[5] != l0[5]);
    /* shorter padding: example 0 alone, cut to its real length, scores the same */
    model_free(&c.m);
}
START_TEST(test_pad_gma) {
    pad_case("gma", "mean", 1);
    pad_case("gma", "cls", 1);
    pad_case("gma", "mean", 2);
}
END_TEST
START_TEST(test_pad_sdpa) {
    pad_case("sdpa", "mean", 1);
    pad_case("sdpa", "cls", 2);
}
END_TEST
START_TEST(test_pad_baselines) {
    pad_case("linformer", "mean", 1);
    pad_case("linformer", "cls", 2);
    pad_case("linear", "mean", 2);
    pad_case("performer", "cls", 1);
}
END_TEST

/* model.key_padding_mask false: padding is content, so a padded token changes the logits of
 * its example and of no other */
static void unmasked_case(const char *mixer) {
    Config cfg = cls_config(mixer, "cls", 1);
    tu_apply_sets(&cfg, "model.key_padding_mask=false;data.pad_full=true");
    ModCtx c;
    pad_setup(&c, &cfg, 1);
    LossStats st;
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.lab, CB, CN, NULL, 0, &st, 0, 0), 0);
    real l0[CB * 3];
    memcpy(l0, c.m.logits, sizeof l0);
    ck_assert_int_eq(c.tok[CN - 1], 0); /* example 0 ends in padding */
    c.tok[CN - 1] = 5;
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.lab, CB, CN, NULL, 0, &st, 0, 0), 0);
    ck_assert_msg(c.m.logits[0] != l0[0] || c.m.logits[1] != l0[1] || c.m.logits[2] != l0[2], "%s: padding is ignored", mixer);
    for (int i = 3; i < CB * 3; i++) ck_assert_msg(c.m.logits[i] == l0[i], "%s: logit %d of another example changed", mixer, i);
    model_free(&c.m);
}
START_TEST(test_unmasked_padding) {
    unmasked_case("linear");
    unmasked_case("performer");
    unmasked_case("linformer");
    unmasked_case("sdpa");
}
END_TEST

/* trimming the padding off (a batch of one padded example vs. its unpadded form) */
START_TEST(test_trim_padding) {
    Config cfg = cls_config("gma", "mean", 1);
    Model m;
    ck_assert_int_eq(model_build(&m, &cfg), 0);
    model_alloc(&m, 1, CN);
    model_init_params(&m, 9);
    int32_t tok[CN] = {3, 1, 4, 1, 0, 0}, lab[1] = {2};
    LossStats st;
    ck_assert_int_eq(model_forward(&m, tok, lab, 1, CN, NULL, 0, &st, 0, 0), 0);
    real a[3];
    memcpy(a, m.logits, sizeof a);
    ck_assert_int_eq(model_forward(&m, tok, lab, 1, 4, NULL, 0, &st, 0, 0), 0);
    for (int i = 0; i < 3; i++) ck_assert_msg(fabs(m.logits[i] - a[i]) < 1e-12, "%g vs %g", m.logits[i], a[i]);
    /* a label outside the classes is refused */
    lab[0] = 3;
    ck_assert_int_ne(model_forward(&m, tok, lab, 1, 4, NULL, 0, &st, 0, 0), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "outside the classes"));
    model_free(&m);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("encoder classifier (float64 gradient checks)");
    TCase *tl = tcase_create("layers");
    tcase_add_test(tl, test_pool_mean);
    tcase_add_test(tl, test_pool_cls);
    tcase_add_test(tl, test_pool_max);
    tcase_add_test(tl, test_head_linear);
    tcase_add_test(tl, test_head_pair);
    tcase_add_test(tl, test_head_mlp_relu);
    tcase_add_test(tl, test_pos_sinusoidal);
    suite_add_tcase(s, tl);
    TCase *tm = tcase_create("model");
    tcase_set_timeout(tm, 300);
    tcase_add_test(tm, test_cls_gma_mean);
    tcase_add_test(tm, test_cls_gma_cls);
    tcase_add_test(tm, test_cls_gma_pair);
    tcase_add_test(tm, test_cls_gma_pair_cls);
    tcase_add_test(tm, test_cls_sdpa_mean);
    tcase_add_test(tm, test_cls_sdpa_cls);
    tcase_add_test(tm, test_cls_baselines);
    tcase_add_test(tm, test_cls_lra_settings);
    tcase_add_test(tm, test_cls_recipe_window);
    tcase_add_test(tm, test_cls_head_dropout);
    tcase_add_test(tm, test_cls_stem);
    tcase_add_test(tm, test_cls_gma_max);
    tcase_add_test(tm, test_pad_gma);
    tcase_add_test(tm, test_pad_sdpa);
    tcase_add_test(tm, test_pad_baselines);
    tcase_add_test(tm, test_unmasked_padding);
    tcase_add_test(tm, test_trim_padding);
    suite_add_tcase(s, tm);
    return s;
}

GMA_TEST_MAIN()
