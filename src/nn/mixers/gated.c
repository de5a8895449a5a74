/* gated.c: `mixer: "gated"` (docs/model.md §3.7: the mix, tensors, gradients, refusals):
 * softmax attention and GMA side by side in one layer, mixed per head by a learned gate;
 * both paths run and train on every call and share the Q/K/V/O projections, so the tensors
 * are a gma layer's plus PREFIX.gate [H]. The GMA path is a `gma` child (gma_core.h: its
 * mixing between the projections, with its gma.* keys, K per layer, diversity loss,
 * Dirichlet prior and routing-health hooks); the softmax path the tiled attention op
 * (attn_forward / attn_backward, as `sdpa`).
 * act:     the child's block (qh, kh, vh, oh_gma, den), oh_sdpa [B,H,N,d], lse [B,H,N],
 *          kbias [B,N], oh [B,H,N,d] (the mix)
 * scratch: the child's block, then doh, tmp [B*N*D], dq, dk, dv of the softmax path
 *          [B,H,N,d], 2 H dot products
 * decode state: the child's linear-core state, then the softmax path's key/value cache. */
#include <stdlib.h>

#include "nn/mixers/gma_core.h"
#include "nn/mixers/head_gate.h"
#include "nn/mixers/mixer.h"

extern const MixerVT mixer_gma, mixer_sdpa;
const MixerVT mixer_gated;
enum { P_GATE = AP_N };

typedef struct GatedPriv {
    Mixer *gma;
    real *gate;   /* host: g_h = sigmoid(a_h) of the last call, then the gate backward's work (HEAD_GATE_HOST) */
    double scale; /* 1 / sqrt(d) */
} GatedPriv;

#define CHILD(m) (((GatedPriv *)(m)->priv)->gma)

static int gated_validate(const Config *c) {
    if (mixer_gma.validate(c) != 0) return -1;
    if (gma_cfg_memory(c)) return gma_errorf("key gma.memory: mixer \"gated\" mixes the values of the sequence itself: use gma.memory \"none\"");
    return 0;
}

static Mixer *gated_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    if (NEED_OP("gated", attn_forward) || NEED_OP("gated", attn_backward) || NEED_OP("gated", attn_step)) return NULL;
    Mixer *m = mixer_new(&mixer_gated, c, pt);
    GatedPriv *p = xcalloc(1, sizeof *p);
    p->gma = mixer_gma.create(c, layer, pt, prefix);
    if (!p->gma) {
        free(p);
        free(m);
        return NULL;
    }
    for (int i = 0; i < MIXER_MAX_PARAMS; i++) m->p[i] = -1;
    for (int i = 0; i < AP_N; i++) m->p[i] = p->gma->p[i];
    char name[128];
    snprintf(name, sizeof name, "%s.gate", prefix);
    m->p[P_GATE] = pt_add1(pt, name, m->H, INIT_ZERO, 0, GROUP_BIAS);
    p->gate = xcalloc(HEAD_GATE_HOST(m->H), sizeof(real));
    p->scale = 1.0 / sqrt((double)m->d);
    m->priv = p;
    return m;
}

static void gated_init(Mixer *m, real *params, Rng *rng) {
    Mixer *g = CHILD(m);
    if (g->vt->init) g->vt->init(g, params, rng);
}

/* the layer's own blocks after the child's */
typedef struct Blocks { real *qh, *kh, *vh, *ohg, *ohs, *lse, *kb, *oh; } Blocks;
static Blocks carve(const Mixer *m, int B, int N, real *act) {
    size_t hs = (size_t)B * N * m->D;
    Blocks b;
    b.qh = act, b.kh = act + hs, b.vh = act + 2 * hs, b.ohg = act + 3 * hs;
    b.ohs = act + CHILD(m)->vt->act_size(CHILD(m), B, N);
    b.lse = b.ohs + hs;
    b.kb = b.lse + (size_t)B * m->H * N;
    b.oh = b.kb + (size_t)B * N;
    return b;
}

static size_t gated_act(const Mixer *m, int B, int N) {
    size_t hs = (size_t)B * N * m->D;
    return CHILD(m)->vt->act_size(CHILD(m), B, N) + 2 * hs + (size_t)B * m->H * N + (size_t)B * N;
}
static size_t gated_scratch(const Mixer *m, int B, int N) {
    size_t hs = (size_t)B * N * m->D;
    return CHILD(m)->vt->scratch_size(CHILD(m), B, N) + 5 * hs + 2 * (size_t)m->H;
}
static double gated_fused_flops(const Mixer *m, int B, int N, int causal) {
    return CHILD(m)->vt->fused_flops(CHILD(m), B, N, causal) + mixer_sdpa.fused_flops(m, B, N, causal);
}

/* g_h = sigmoid(a_h) into the host copy */
static const real *gates(const Mixer *m, const real *params) {
    return head_gate_values(((GatedPriv *)m->priv)->gate, MP(m, params, P_GATE), m->H);
}

static void gated_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                          real *scratch) {
    int B = c->B, N = c->N;
    Blocks k = carve(m, B, N, act);
    attn_proj_qkv(m, params, h, k.qh, k.kh, k.vh, scratch, B, N);
    gma_mix_forward(CHILD(m), c, params, act, scratch);
    if (c->keymask) key_bias(k.kb, c->keymask, B, N);
    g_ops->attn_forward(k.ohs, k.lse, k.qh, k.kh, k.vh, c->keymask ? k.kb : NULL, B, m->H, N, m->d, c->causal, 0,
                        (real)((GatedPriv *)m->priv)->scale, NULL);
    head_gate_mix(k.oh, k.ohs, k.ohg, gates(m, params), B, m->H, (size_t)N * m->d, 1, 1);
    attn_proj_out(m, params, y, k.oh, scratch, B, N);
}

static void gated_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                           real *grads, real *act, real *scratch) {
    int B = c->B, N = c->N, H = m->H;
    size_t hs = (size_t)B * N * m->D, L = (size_t)N * m->d;
    Blocks k = carve(m, B, N, act);
    real *sg = scratch, *doh = sg + CHILD(m)->vt->scratch_size(CHILD(m), B, N), *tmp = doh + hs, *dq = tmp + hs,
         *dk = dq + hs, *dv = dk + hs, *dots = dv + hs;
    attn_proj_out_backward(m, params, grads, doh, dy, k.oh, doh, tmp, B, N);
    const real *g = gates(m, params);
    /* the gate: dL/da_h = g (1 - g) <doh_h, oh_sdpa_h - oh_gma_h> */
    head_gate_backward(MP(m, grads, P_GATE), g, doh, k.ohs, k.ohg, dots, ((GatedPriv *)m->priv)->gate + H, B, H, L);
    /* the GMA path with (1 - g) doh, then the softmax path with g doh */
    head_gate_mix(sg, NULL, doh, g, B, H, L, 0, 1);
    real *free_sg = gma_mix_backward(CHILD(m), c, params, grads, act, sg);
    (void)free_sg;
    head_gate_mix(doh, doh, NULL, g, B, H, L, 1, 0);
    g_ops->zero(dq, sizeof(real) * 3 * hs);
    g_ops->attn_backward(dq, dk, dv, doh, k.ohs, k.lse, k.qh, k.kh, k.vh, c->keymask ? k.kb : NULL, B, H, N, m->d, c->causal,
                         0, (real)((GatedPriv *)m->priv)->scale, NULL);
    g_ops->axpy(dq, 1, sg, hs);          /* the child's dq */
    g_ops->axpy(dv, 1, sg + hs, hs);     /* dv */
    g_ops->axpy(dk, 1, sg + 2 * hs, hs); /* dk */
    attn_proj_qkv_backward(m, params, grads, dh, h, dq, dk, dv, tmp, B, N);
}

static void gated_destroy(Mixer *m) {
    GatedPriv *p = m->priv;
    p->gma->vt->destroy(p->gma);
    free(p->gate);
    free(p);
    free(m);
}

/* ---- decoding: both paths one token on ---- */
static size_t gated_dstate(const Mixer *m, int Nmax) {
    return gma_mix_step_state(CHILD(m)) + attn_decode_state(m->H, Nmax, m->d);
}
static void gated_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                         real *act, real *scratch) {
    size_t ss = gated_dstate(m, Nmax), ls = gma_mix_step_state(CHILD(m)), hs = (size_t)B * m->D;
    Blocks k = carve(m, B, 1, act);
    attn_proj_qkv(m, params, h, k.qh, k.kh, k.vh, scratch, B, 1);
    gma_mix_step(CHILD(m), params, k.ohg, state, ss, k.qh, k.kh, k.vh, B, scratch + hs);
    g_ops->attn_step(k.ohs, state + ls, ss, k.qh, k.kh, k.vh, B, m->H, m->d, Nmax, pos, (real)((GatedPriv *)m->priv)->scale);
    head_gate_mix(k.oh, k.ohs, k.ohg, gates(m, params), B, m->H, (size_t)m->d, 1, 1);
    attn_proj_out(m, params, y, k.oh, scratch, B, 1);
}

/* ---- the GMA child's hooks ---- */
static double gated_aux_loss(const Mixer *m, double *weight) { return CHILD(m)->vt->aux_loss(CHILD(m), weight); }
static int gated_rank_averaged(const Mixer *m, int tensor) { return CHILD(m)->vt->rank_averaged(CHILD(m), tensor); }
/* the child's act block starts the layer's: its query rows and responsibilities are there */
static void gh_components(const Mixer *m, const real *act, int B, int N, MixerComponents *out) {
    CHILD(m)->vt->health->components(CHILD(m), act, B, N, out);
}
static void gh_update_buffers(Mixer *m, const MixerCtx *c, real *params, const real *act) {
    CHILD(m)->vt->health->update_buffers(CHILD(m), c, params, act);
}
static const MixerHealth gated_health = {.components = gh_components, .update_buffers = gh_update_buffers};

const MixerVT mixer_gated = {
    .name = "gated",
    .gma_layer = 1,
    .causal_ok = 1,
    .bidir_ok = 1,
    .attn_dropout_why = "mixes its softmax path with a GMA path, which has no attention probabilities to drop",
    .validate = gated_validate,
    .create = gated_create,
    .init = gated_init,
    .act_size = gated_act,
    .scratch_size = gated_scratch,
    .forward = gated_forward,
    .backward = gated_backward,
    .destroy = gated_destroy,
    .decode_state = gated_dstate,
    .decode = gated_decode,
    .aux_loss = gated_aux_loss,
    .rank_averaged = gated_rank_averaged,
    .health = &gated_health,
    .fused_flops = gated_fused_flops,
};
