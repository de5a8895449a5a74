/* performer.c: Performer (Choromanski et al. 2021; `mixer: "performer"`): FAVOR+ positive
 * orthogonal random features (performer.kernel "softmax") or the LRA release's relu
 * features ("relu"), then the shared normalised linear core; features, stabilisers, the
 * omega draw and decoding: docs/model.md §3.5. With model.short_conv the projections go
 * through the short convolutions (mixer.h).
 * Parameters: PREFIX.{q,k,v,o}.{weight,bias}; FAVOR+ also PREFIX.performer.omega [H,m,d], a
 * buffer (not trained, saved in checkpoints).
 * act:     qh, kh, vh, oh [B,H,N,d]; fq, fk [B,H,N,m]; argmax, den [B,H,N]; chunk states; the
 *          projections' block
 * scratch: two [B*N*D] buffers, dq, dk, dv [B,H,N,d]; dfq, dfk, e [B,H,N,m] */
#include <stdlib.h>
#include <string.h>

#include "nn/mixers/linear_core.h"
#include "nn/mixers/mixer.h"

const MixerVT mixer_performer;
enum { P_OMEGA = AP_N };

/* the keys performer.* */
enum { KERNEL_SOFTMAX, KERNEL_RELU }; /* performer.kernel: softmax|relu */
typedef struct PerformerCfg {
    int kernel;      /* KERNEL_SOFTMAX | KERNEL_RELU */
    int features; /* m random features (0 = 2 d) */
    int redraw;   /* redraw omega every this many training steps (0 = never) */
} PerformerCfg;
#define O(f) offsetof(PerformerCfg, f)
static const CfgKey perf_keys[] = {
    {"kernel", CFGT_ENUM, O(kernel), 0, "softmax", 0, 0, "softmax|relu",
     "Performer features: softmax (FAVOR+ random features) or relu (the LRA release's relu(x) + 0.001; "
     "docs/model.md §3.5)."},
    {"features", CFGT_INT, O(features), 0, "0", 0, 65536, NULL, "Performer: random features m per head (0 = 2 d)."},
    {"redraw", CFGT_INT, O(redraw), 0, "0", 0, 1000000000, NULL,
     "Performer: redraw the random features every this many training steps (0 = never)."},
};
#undef O
static const CfgSection perf_section = {"performer", sizeof(PerformerCfg), perf_keys,
                                        (int)(sizeof perf_keys / sizeof perf_keys[0]), NULL, NULL};

/* performer.kernel "relu": the LRA release's generalized attention with deterministic
 * features (lra_benchmarks/models/performer/performer_attention.py:263-270, its default
 * for every task but ListOps): features_type 'deterministic' makes matrix_creator None
 * (:282-283), so there is no projection and the features are the head's d channels;
 * normalize_data is False (:293) and generalized_kernel_feature_creator returns
 * kernel_fn(x) + kernel_epsilon (:185-186) with kernel_fn relu and kernel_epsilon 0.001.
 * No random features, so no omega buffer and nothing to redraw (redraw_features False).
 * The release's denominator stabiliser is 0 there (numerical_stabilizer, :265, used at
 * :695-696); ours adds gma.eps as every user of the core does. */
#define RELU_KERNEL_EPS 0.001 /* kernel_epsilon of make_fast_generalized_attention */

static int perf_validate(const Config *c) {
    const PerformerCfg *pc = cfg_section_of(c, &perf_section);
    if (pc->kernel != KERNEL_RELU) return 0;
    if (pc->features != 0)
        return gma_errorf("key performer.features: %d, but the relu kernel's features are the head's d channels "
                          "(deterministic, no projection): leave it 0",
                          pc->features);
    if (pc->redraw != 0)
        return gma_errorf("key performer.redraw: %d, but the relu kernel has no random features to redraw: leave it 0",
                          pc->redraw);
    return 0;
}

typedef struct PerfPriv {
    int relu; /* performer.kernel "relu": phi = relu(x) + 0.001, F = d, no omega */
    int m, redraw, chunk, layer;
    uint64_t seed;
    long drawn; /* draw index of the omega now in the parameters */
    real eps;
    real cmax_last; /* the key exponents' maximum of the last forward (FAVOR+; perf_prefill) */
} PerfPriv;

static Mixer *perf_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    const PerformerCfg *pc = cfg_section_of(c, &perf_section);
    int relu = pc->kernel == KERNEL_RELU;
    if (perf_validate(c) != 0) return NULL; /* also for callers that build without cfg_validate */
    if (relu ? NEED_OP("performer", favor_relu_forward) || NEED_OP("performer", relu_backward)
             : NEED_OP("performer", favor_logits_forward) || NEED_OP("performer", favor_logits_backward) ||
                   NEED_OP("performer", favor_exp_forward) || NEED_OP("performer", favor_exp_backward) ||
                   NEED_OP("performer", maxval))
        return NULL;
    Mixer *m = mixer_new(&mixer_performer, c, pt);
    PerfPriv *p = xcalloc(1, sizeof *p);
    p->relu = relu;
    p->m = relu ? m->d : pc->features > 0 ? pc->features : 2 * m->d;
    p->redraw = pc->redraw;
    p->chunk = linear_core_cfg(c)->chunk; /* the linear core's scan, as GMA's */
    p->eps = (real)linear_core_cfg(c)->eps;
    p->layer = layer;
    p->seed = (uint64_t)c->seed;
    m->priv = p;
    attn_proj_add(m, c, pt, prefix);
    if (relu) return m;
    char name[128];
    int s3[3] = {m->H, p->m, m->d};
    snprintf(name, sizeof name, "%s.performer.omega", prefix);
    m->p[P_OMEGA] = pt_add(pt, name, 3, s3, INIT_ZERO, 0, GROUP_BUFFER);
    return m;
}

/* omega [H,m,d] on the host for draw index idx (a pure function of seed, layer, idx; rows
 * orthogonalised in blocks of d by Gram-Schmidt) */
static void draw_omega(real *om, const Mixer *mx, long idx) {
    const PerfPriv *p = mx->priv;
    int d = mx->d, m = p->m;
    double *blk = xmalloc(sizeof(double) * d * d);
    for (int h = 0; h < mx->H; h++) {
        Rng r;
        rng_seed2(&r, p->seed, ((uint64_t)(p->layer + 1) << 48) ^ ((uint64_t)idx << 16) ^ (uint64_t)h ^ 0x5eedf00dULL);
        for (int r0 = 0; r0 < m; r0 += d) {
            int nr = GMA_MIN(d, m - r0);
            for (int i = 0; i < d * d; i++) blk[i] = rng_normal(&r);
            for (int i = 0; i < d; i++) { /* Gram-Schmidt on the rows */
                double *ri = blk + (size_t)i * d;
                for (int j = 0; j < i; j++) {
                    double *rj = blk + (size_t)j * d, dot = 0;
                    for (int e = 0; e < d; e++) dot += ri[e] * rj[e];
                    for (int e = 0; e < d; e++) ri[e] -= dot * rj[e];
                }
                double nn = 0;
                for (int e = 0; e < d; e++) nn += ri[e] * ri[e];
                nn = 1 / sqrt(nn);
                for (int e = 0; e < d; e++) ri[e] *= nn;
            }
            for (int i = 0; i < nr; i++) {
                double len = 0;
                for (int e = 0; e < d; e++) {
                    double g = rng_normal(&r);
                    len += g * g;
                }
                len = sqrt(len);
                for (int e = 0; e < d; e++)
                    om[((size_t)h * m + r0 + i) * d + e] = (real)(len * blk[(size_t)i * d + e]);
            }
        }
    }
    free(blk);
}

static void perf_init(Mixer *m, real *params, Rng *rng) {
    PerfPriv *p = m->priv;
    if (p->relu) return;
    draw_omega(MP(m, params, P_OMEGA), m, 0);
    p->drawn = 0;
}

static size_t n_state(const Mixer *m, int B, int N) {
    const PerfPriv *p = m->priv;
    size_t nc = GMA_MAX((size_t)(N + p->chunk - 1) / p->chunk, 1);
    return (size_t)B * m->H * nc * ((size_t)p->m * m->d + p->m);
}
static size_t gsz(const Mixer *m, int B, int N) { return (size_t)B * m->H * N * ((const PerfPriv *)m->priv)->m; }
static size_t perf_act(const Mixer *m, int B, int N) {
    return 4 * (size_t)B * N * m->D + 2 * gsz(m, B, N) + 2 * (size_t)B * m->H * N + n_state(m, B, N) +
           attn_proj_act_size(m, B, N);
}
static size_t perf_scratch(const Mixer *m, int B, int N) { return 5 * (size_t)B * N * m->D + 3 * gsz(m, B, N); }
/* the mixing core with F features; FAVOR+ adds the feature logits of queries and keys
 * (forward 1, backward 1 product of 2 N F d each; the relu kernel has none) */
static double perf_fused_flops(const Mixer *m, int B, int N, int causal) {
    const PerfPriv *p = m->priv;
    double BH = (double)B * m->H, logits = p->relu ? 0 : 2 * BH * 2 * 2.0 * N * p->m * m->d;
    return logits + linmix_flops(BH, N, p->m, m->d, causal, p->chunk);
}

typedef struct Acts { real *qh, *kh, *vh, *oh, *fq, *fk, *amax, *den, *state; } Acts;
static Acts carve(const Mixer *m, int B, int N, real *act) {
    size_t hs = (size_t)B * N * m->D, gs = gsz(m, B, N), rs = (size_t)B * m->H * N;
    Acts a;
    a.qh = act;
    a.kh = a.qh + hs;
    a.vh = a.kh + hs;
    a.oh = a.vh + hs;
    a.fq = a.oh + hs;
    a.fk = a.fq + gs;
    a.amax = a.fk + gs;
    a.den = a.amax + rs;
    a.state = a.den + rs;
    return a;
}

/* with performer.redraw R > 0 the draw index is step / R, redrawn on the first training
 * forward of each new index */
static void maybe_redraw(Mixer *m, const MixerCtx *c, const real *params) {
    PerfPriv *p = m->priv;
    if (p->relu || !c->training || p->redraw <= 0) return;
    long idx = c->step / p->redraw;
    if (idx == p->drawn) return;
    size_t n = (size_t)m->H * p->m * m->d;
    real *host = xmalloc(n * sizeof(real));
    draw_omega(host, m, idx);
    /* omega is a buffer in the parameter memory: state of the mixer, not a trained value */
    g_ops->to_device((real *)MP(m, params, P_OMEGA), host, n * sizeof(real));
    free(host);
    p->drawn = idx;
}

static void perf_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                         real *scratch) {
    PerfPriv *p = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, F = p->m, R = B * H * N;
    size_t hs = (size_t)B * N * m->D;
    maybe_redraw(m, c, params);
    Acts a = carve(m, B, N, act);
    attn_proj_qkv_conv(m, c, params, h, a.qh, a.kh, a.vh, attn_proj_act(m, act, B, N), scratch);
    if (p->relu) { /* phi = relu(x) + 0.001 on the d channels (F = d) */
        g_ops->favor_relu_forward(a.fq, a.qh, hs, (real)RELU_KERNEL_EPS);
        g_ops->favor_relu_forward(a.fk, a.kh, hs, (real)RELU_KERNEL_EPS);
        mask_rows(a.fk, c->keymask, B, H, N, F);
        g_ops->linmix_forward(a.oh, a.den, a.state, a.fq, a.fk, a.vh, B * H, N, F, d, c->causal, p->chunk, p->eps);
        attn_proj_out(m, params, y, a.oh, scratch, B, N);
        return;
    }
    const real *om = MP(m, params, P_OMEGA);
    real *e = scratch + 2 * hs, sc = (real)(1.0 / sqrt((double)F));
    g_ops->favor_logits_forward(e, a.qh, om, B, H, N, d, F);
    g_ops->favor_exp_forward(a.fq, a.amax, e, R, F, 0, sc);
    /* query stabiliser: each row's maximum, which the core's normalisation cancels (the
     * backward differentiates through the argmax, so gradients stay exact with eps > 0);
     * key stabiliser: the maximum over every real key, feature, head and sequence, with eps
     * scaled by exp(-c) so that c cancels exactly. It spans the whole sequence, so in causal
     * mode a later key can change an earlier output only through rounding. */
    g_ops->favor_logits_forward(e, a.kh, om, B, H, N, d, F);
    mask_rows(e, c->keymask, B, H, N, F);
    double cmax = g_ops->maxval(e, (size_t)R * F);
    p->cmax_last = (real)cmax;
    g_ops->favor_exp_forward(a.fk, NULL, e, R, F, (real)cmax, sc);
    mask_rows(a.fk, c->keymask, B, H, N, F);
    g_ops->linmix_forward(a.oh, a.den, a.state, a.fq, a.fk, a.vh, B * H, N, F, d, c->causal, p->chunk,
                          (real)(p->eps * exp(-cmax)));
    attn_proj_out(m, params, y, a.oh, scratch, B, N);
}

static void perf_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                          real *grads, real *act, real *scratch) {
    PerfPriv *p = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, F = p->m, R = B * H * N;
    size_t hs = (size_t)B * N * m->D, gs = gsz(m, B, N);
    Acts a = carve(m, B, N, act);
    real *t1 = scratch, *t2 = t1 + hs, *dq = t2 + hs, *dk = dq + hs, *dv = dk + hs;
    real *dfq = dv + hs, *dfk = dfq + gs, *e = dfk + gs;
    real *doh = t1;
    attn_proj_out_backward(m, params, grads, doh, dy, a.oh, t1, t2, B, N);
    g_ops->zero(dq, sizeof(real) * 3 * hs);
    g_ops->zero(dfq, sizeof(real) * 3 * gs);
    g_ops->linmix_backward(dfq, dfk, dv, doh, a.oh, a.den, a.state, a.fq, a.fk, a.vh, B * H, N, F, d, c->causal,
                           p->chunk);
    mask_rows(dfk, c->keymask, B, H, N, F);
    if (p->relu) { /* d phi / dx = [x > 0]; padded keys' dfk rows are zero */
        g_ops->relu_backward(dq, dfq, a.qh, hs);
        g_ops->relu_backward(dk, dfk, a.kh, hs);
        attn_proj_qkv_conv_backward(m, c, params, grads, dh, h, dq, dk, dv, attn_proj_act(m, act, B, N), t2);
        return;
    }
    const real *om = MP(m, params, P_OMEGA);
    g_ops->favor_exp_backward(e, dfq, a.fq, a.amax, R, F);
    g_ops->favor_logits_backward(dq, e, a.qh, om, B, H, N, d, F);
    g_ops->zero(e, sizeof(real) * gs);
    g_ops->favor_exp_backward(e, dfk, a.fk, NULL, R, F); /* key stabiliser cancels exactly: no gradient */
    g_ops->favor_logits_backward(dk, e, a.kh, om, B, H, N, d, F);
    attn_proj_qkv_conv_backward(m, c, params, grads, dh, h, dq, dk, dv, attn_proj_act(m, act, B, N), t2);
}

/* incremental decoding: the linear core's S and z (linmix_step) kept scaled by exp(-c)
 * with c the running maximum of the key exponents so far (the last real of a sequence's
 * state), rescaled when a key raises it, and the core's eps scaled by exp(-c) as in the
 * forward: the same output, since c cancels exactly (the forward takes the maximum over
 * the whole sequence; the two differ by rounding only) */
/* the widest spread of the sequences' running maxima that one batched core step takes
 * (exp(-20) keeps the scaled query features far from float32's underflow); wider: a core
 * step a sequence */
#define PERF_STEP_SPREAD 20
/* the core's S and z, the running maximum c (real `core`), then the short convolutions' state */
static size_t perf_core(const Mixer *m) { return linmix_decode_state(m->H, ((const PerfPriv *)m->priv)->m, m->d); }
static size_t perf_dstate(const Mixer *m, int Nmax) {
    (void)Nmax;
    return perf_core(m) + 1 + attn_proj_state_size(m);
}
static void perf_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                        real *act, real *scratch) {
    const PerfPriv *p = m->priv;
    int H = m->H, d = m->d, F = p->m;
    size_t hs = (size_t)m->D, gs = (size_t)H * F, ss = perf_dstate(m, Nmax), core = perf_core(m);
    Acts a = carve(m, B, 1, act);
    attn_proj_qkv_step(m, params, h, a.qh, a.kh, a.vh, state + core + 1, ss, attn_proj_act(m, act, B, 1), scratch, B);
    if (p->relu) {
        g_ops->favor_relu_forward(a.fq, a.qh, B * hs, (real)RELU_KERNEL_EPS);
        g_ops->favor_relu_forward(a.fk, a.kh, B * hs, (real)RELU_KERNEL_EPS);
        g_ops->linmix_step(a.oh, state, ss, a.fq, a.fk, a.vh, B, H, F, d, p->eps);
        attn_proj_out(m, params, y, a.oh, scratch, B, 1);
        return;
    }
    const real *om = MP(m, params, P_OMEGA);
    real *e = scratch + 2 * (size_t)B * hs, *ek = e + (size_t)B * gs, sc = (real)(1.0 / sqrt((double)F));
    /* qh and kh lie one after the other ([2B,H,1,d]): the logits of both in one op */
    g_ops->favor_logits_forward(e, a.qh, om, 2 * B, H, 1, d, F);
    g_ops->favor_exp_forward(a.fq, a.amax, e, B * H, F, 0, sc);
    real *cs = xmalloc(sizeof(real) * (size_t)B), cref = -INFINITY, cmin = INFINITY;
    for (int b = 0; b < B; b++) { /* the running maximum c_b of each sequence, and its key features */
        real *st = state + b * ss, c;
        double kmax = g_ops->maxval(ek + b * gs, gs);
        g_ops->to_host(&c, st + core, sizeof c);
        if (pos == 0 || kmax > c) { /* a new running maximum: S and z follow it */
            if (pos > 0) g_ops->scale(st, (real)exp((double)c - kmax), (size_t)H * F * d + (size_t)H * F);
            c = (real)kmax;
            g_ops->to_device(st + core, &c, sizeof c);
        }
        g_ops->favor_exp_forward(a.fk + b * gs, NULL, ek + b * gs, H, F, c, sc);
        cs[b] = c, cref = GMA_MAX(cref, c), cmin = GMA_MIN(cmin, c);
    }
    if (cref - cmin <= PERF_STEP_SPREAD) {
        /* one core step for the batch with eps exp(-cref): sequence b's query features times
         * exp(c_b - cref) give q S_b / (q z_b + eps exp(-c_b)), its own output (exact in the
         * reals; a sequence at cref, and so every one at M = 1, computes what it did alone) */
        for (int b = 0; b < B; b++)
            if (cs[b] != cref) g_ops->scale(a.fq + b * gs, (real)exp((double)cs[b] - cref), gs);
        g_ops->linmix_step(a.oh, state, ss, a.fq, a.fk, a.vh, B, H, F, d, (real)(p->eps * exp(-(double)cref)));
    } else /* maxima too far apart for one shared scale: a step a sequence */
        for (int b = 0; b < B; b++)
            g_ops->linmix_step(a.oh + b * hs, state + b * ss, ss, a.fq + b * gs, a.fk + b * gs, a.vh + b * hs, 1, H,
                               F, d, (real)(p->eps * exp(-(double)cs[b])));
    free(cs);
    attn_proj_out(m, params, y, a.oh, scratch, B, 1);
}

/* prefill: S and z from the forward's key features, which FAVOR+ scaled by exp(-c) with c
 * the maximum over the forward's keys: that c becomes each sequence's running maximum */
static void perf_prefill(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                         int Nmax, real *scratch) {
    const PerfPriv *p = m->priv;
    (void)h, (void)params, (void)scratch;
    size_t ss = perf_dstate(m, Nmax), core = perf_core(m);
    Acts a = carve(m, c->B, c->N, (real *)act);
    linmix_prefill(state, ss, a.fk, a.vh, c->B, m->H, c->N, p->m, m->d);
    if (!p->relu)
        for (int b = 0; b < c->B; b++) g_ops->to_device(state + b * ss + core, &p->cmax_last, sizeof(real));
    attn_proj_conv_prefill(m, c, attn_proj_act(m, act, c->B, c->N), state + core + 1, ss);
}

static void perf_destroy(Mixer *m) {
    free(m->priv);
    free(m);
}

const MixerVT mixer_performer = {
    .name = "performer",
    .config = &perf_section,
    .validate = perf_validate,
    .short_conv_ok = 1,
    .causal_ok = 1,
    .bidir_ok = 1,
    .attn_dropout_why = "has no attention probabilities to drop (the LRA release's Performer accepts the rate and never applies it)",
    .create = perf_create,
    .init = perf_init,
    .act_size = perf_act,
    .scratch_size = perf_scratch,
    .forward = perf_forward,
    .backward = perf_backward,
    .destroy = perf_destroy,
    .decode_state = perf_dstate,
    .decode = perf_decode,
    .prefill = perf_prefill,
    .fused_flops = perf_fused_flops,
};
