/* linear_attn.c: the Linear Transformer (Katharopoulos et al. 2020; docs/model.md §3.5,
 * `mixer: "linear"`): per head phi(x) = elu(x) + 1 applied to the rows of Q and K (feature
 * width F = d), then the shared normalised linear-mixing core (3.1) with the same chunked
 * causal scan as GMA (chunk = gma.chunk, eps = gma.eps):
 *   O_i = phi(q_i)^T sum_j phi(k_j) v_j^T / (phi(q_i) . sum_j phi(k_j) + eps).
 * Padded keys: their phi(k) rows are zeroed. Parameters: PREFIX.{q,k,v,o}.{weight,bias}.
 *
 * With model.short_conv the projections go through the short convolutions (mixer.h).
 *
 * act:     qh, kh, vh, oh, fq, fk [B,H,N,d]; den [B,H,N]; chunk states; the projections' block
 * scratch: two [B*N*D] buffers, dq, dk, dv, dfq, dfk [B,H,N,d] */
#include <stdlib.h>

#include "nn/mixers/linear_core.h"
#include "nn/mixers/mixer.h"

const MixerVT mixer_linear;
typedef struct LinPriv { int chunk; real eps; } LinPriv;

static Mixer *lin_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    if (NEED_OP("linear", elu1_forward) || NEED_OP("linear", elu1_backward)) return NULL;
    Mixer *m = mixer_new(&mixer_linear, c, pt);
    LinPriv *p = xcalloc(1, sizeof *p);
    p->chunk = linear_core_cfg(c)->chunk;
    p->eps = (real)linear_core_cfg(c)->eps;
    m->priv = p;
    attn_proj_add(m, c, pt, prefix);
    return m;
}

static size_t n_state(const Mixer *m, int B, int N) {
    const LinPriv *p = m->priv;
    size_t nc = GMA_MAX((size_t)(N + p->chunk - 1) / p->chunk, 1);
    return (size_t)B * m->H * nc * ((size_t)m->d * m->d + m->d);
}
static size_t lin_act(const Mixer *m, int B, int N) {
    return 6 * (size_t)B * N * m->D + (size_t)B * m->H * N + n_state(m, B, N) + attn_proj_act_size(m, B, N);
}
static size_t lin_scratch(const Mixer *m, int B, int N) { return 7 * (size_t)B * N * m->D; }
/* the mixing core with F = d features */
static double lin_fused_flops(const Mixer *m, int B, int N, int causal) {
    return linmix_flops((double)B * m->H, N, m->d, m->d, causal, ((const LinPriv *)m->priv)->chunk);
}

typedef struct Acts { real *qh, *kh, *vh, *oh, *fq, *fk, *den, *state; } Acts;
static Acts carve(const Mixer *m, int B, int N, real *act) {
    size_t hs = (size_t)B * N * m->D;
    Acts a = {act, act + hs, act + 2 * hs, act + 3 * hs, act + 4 * hs, act + 5 * hs, act + 6 * hs, NULL};
    a.state = a.den + (size_t)B * m->H * N;
    return a;
}

static void lin_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                        real *scratch) {
    const LinPriv *p = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d;
    size_t hs = (size_t)B * N * m->D;
    Acts a = carve(m, B, N, act);
    attn_proj_qkv_conv(m, c, params, h, a.qh, a.kh, a.vh, attn_proj_act(m, act, B, N), scratch);
    g_ops->elu1_forward(a.fq, a.qh, hs);
    g_ops->elu1_forward(a.fk, a.kh, hs);
    mask_rows(a.fk, c->keymask, B, H, N, d);
    g_ops->linmix_forward(a.oh, a.den, a.state, a.fq, a.fk, a.vh, B * H, N, d, d, c->causal, p->chunk, p->eps);
    attn_proj_out(m, params, y, a.oh, scratch, B, N);
}

/* the core's S and z, then the short convolutions' state */
static size_t lin_dstate(const Mixer *m, int Nmax) { return linmix_decode_state(m->H, m->d, m->d) + attn_proj_state_size(m); }
static void lin_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                       real *act, real *scratch) {
    const LinPriv *p = m->priv;
    size_t hs = (size_t)m->D, ss = lin_dstate(m, Nmax);
    Acts a = carve(m, B, 1, act);
    attn_proj_qkv_step(m, params, h, a.qh, a.kh, a.vh, state + linmix_decode_state(m->H, m->d, m->d), ss,
                       attn_proj_act(m, act, B, 1), scratch, B);
    g_ops->elu1_forward(a.fq, a.qh, B * hs);
    g_ops->elu1_forward(a.fk, a.kh, B * hs);
    g_ops->linmix_step(a.oh, state, ss, a.fq, a.fk, a.vh, B, m->H, m->d, m->d, p->eps);
    attn_proj_out(m, params, y, a.oh, scratch, B, 1);
}

/* prefill: the core's state from the forward's key features and values */
static void lin_prefill(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                        int Nmax, real *scratch) {
    (void)h, (void)params, (void)scratch;
    Acts a = carve(m, c->B, c->N, (real *)act);
    linmix_prefill(state, lin_dstate(m, Nmax), a.fk, a.vh, c->B, m->H, c->N, m->d, m->d);
    attn_proj_conv_prefill(m, c, attn_proj_act(m, act, c->B, c->N), state + linmix_decode_state(m->H, m->d, m->d),
                           lin_dstate(m, Nmax));
}

static void lin_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                         real *grads, real *act, real *scratch) {
    const LinPriv *p = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d;
    size_t hs = (size_t)B * N * m->D;
    Acts a = carve(m, B, N, act);
    real *t1 = scratch, *t2 = t1 + hs, *dq = t2 + hs, *dk = dq + hs, *dv = dk + hs, *dfq = dv + hs, *dfk = dfq + hs;
    real *doh = t1;
    attn_proj_out_backward(m, params, grads, doh, dy, a.oh, t1, t2, B, N);
    g_ops->zero(dq, sizeof(real) * 5 * hs); /* dq, dk, dv, dfq, dfk */
    g_ops->linmix_backward(dfq, dfk, dv, doh, a.oh, a.den, a.state, a.fq, a.fk, a.vh, B * H, N, d, d, c->causal,
                           p->chunk);
    mask_rows(dfk, c->keymask, B, H, N, d);
    g_ops->elu1_backward(dq, dfq, a.qh, hs);
    g_ops->elu1_backward(dk, dfk, a.kh, hs);
    attn_proj_qkv_conv_backward(m, c, params, grads, dh, h, dq, dk, dv, attn_proj_act(m, act, B, N), t2);
}

static void lin_destroy(Mixer *m) {
    free(m->priv);
    free(m);
}

const MixerVT mixer_linear = {
    .name = "linear",
    .causal_ok = 1,
    .bidir_ok = 1,
    .attn_dropout_why = "has no attention probabilities to drop (the LRA release's Linear Transformer applies no attention dropout)",
    .short_conv_ok = 1,
    .create = lin_create,
    .act_size = lin_act,
    .scratch_size = lin_scratch,
    .forward = lin_forward,
    .backward = lin_backward,
    .decode_state = lin_dstate,
    .decode = lin_decode,
    .prefill = lin_prefill,
    .destroy = lin_destroy,
    .fused_flops = lin_fused_flops,
};
