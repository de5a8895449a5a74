/* sdpa_ref.c: plain softmax attention (docs/model.md §3.5, `mixer: "sdpa_ref"`), the readable
 * reference that the tiled `sdpa` (sdpa.c) is tested against: per head
 * P = softmax(Q K^T / sqrt(d) + mask), O = P V, with the N x N matrix P
 * stored for the backward pass. Causal and bidirectional; key padding masked with -inf.
 * Attention dropout (docs/model.md §8): O = drop(P) V; drop(P) lives in the scratch dP
 * block during the forward and is regenerated (same mask) in the backward.
 *
 * With model.short_conv the projections go through the short convolutions (mixer.h); with
 * model.pos "rope" q and k then turn by their positions (attn_rope, mixer.h).
 *
 * act:     qh, kh, vh, oh [B,H,N,d] ; P [B,H,N,N]; the projections' block
 * scratch: two [B*N*D] buffers + dP [B,H,N,N] + dq, dk, dv [B,H,N,d] */
#include <stdlib.h>
#include <string.h>

#include "nn/mixers/mixer.h"

const MixerVT mixer_sdpa_ref;
static Mixer *ref_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    Mixer *m = mixer_new(&mixer_sdpa_ref, c, pt);
    attn_proj_add(m, c, pt, prefix);
    return m;
}

static size_t ref_act(const Mixer *m, int B, int N) {
    return 4 * (size_t)B * N * m->D + (size_t)B * m->H * N * N + attn_proj_act_size(m, B, N);
}
static size_t ref_scratch(const Mixer *m, int B, int N) {
    return 5 * (size_t)B * N * m->D + (size_t)B * m->H * N * N;
}

static void ref_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                         real *scratch) {
    int B = c->B, N = c->N, H = m->H, d = m->d;
    size_t hs = (size_t)B * N * m->D;
    real *qh = act, *kh = qh + hs, *vh = kh + hs, *oh = vh + hs, *P = oh + hs;
    attn_proj_qkv_conv(m, c, params, h, qh, kh, vh, attn_proj_act(m, act, B, N), scratch);
    attn_rope(m, qh, kh, B, N, 0);
    g_ops->matmul_strided(P, qh, kh, N, N, d, 0, 1, 1, 0, B * H, (size_t)N * d, (size_t)N * d, (size_t)N * N);
    g_ops->attn_mask(P, c->keymask, B, H, N, c->causal);
    g_ops->softmax_rows(P, B * H * N, N, (real)(1.0 / sqrt((double)d)), NULL);
    const real *Pv = P;
    if (c->attn_drop) {
        real *Pd = scratch + 5 * hs;
        g_ops->dropout(Pd, P, B, (size_t)H * N * N, c->attn_drop);
        Pv = Pd;
    }
    g_ops->matmul_strided(oh, Pv, vh, N, d, N, 0, 0, 1, 0, B * H, (size_t)N * N, (size_t)N * d, (size_t)N * d);
    attn_proj_out(m, params, y, oh, scratch, B, N);
}

static void ref_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                          real *grads, real *act, real *scratch) {
    int B = c->B, N = c->N, H = m->H, d = m->d;
    size_t hs = (size_t)B * N * m->D;
    real *qh = act, *kh = qh + hs, *vh = kh + hs, *oh = vh + hs, *P = oh + hs;
    real *t1 = scratch, *t2 = t1 + hs, *dq = t2 + hs, *dk = dq + hs, *dv = dk + hs, *dP = dv + hs;
    real *doh = t1; /* the output projection's backward writes it over t1 */
    attn_proj_out_backward(m, params, grads, doh, dy, oh, t1, t2, B, N);
    real sc = (real)(1.0 / sqrt((double)d));
    size_t sNd = (size_t)N * d, sNN = (size_t)N * N;
    /* dP = dO V^T ; dV = P^T dO */
    if (c->attn_drop) { /* O = drop(P) V: dV = drop(P)^T dO, dP = drop(dO V^T) */
        g_ops->dropout(dP, P, B, (size_t)H * N * N, c->attn_drop);
        g_ops->matmul_strided(dv, dP, doh, N, d, N, 1, 0, 1, 0, B * H, sNN, sNd, sNd);
        g_ops->matmul_strided(dP, doh, vh, N, N, d, 0, 1, 1, 0, B * H, sNd, sNd, sNN);
        g_ops->dropout(dP, dP, B, (size_t)H * N * N, c->attn_drop);
    } else {
        g_ops->matmul_strided(dP, doh, vh, N, N, d, 0, 1, 1, 0, B * H, sNd, sNd, sNN);
        g_ops->matmul_strided(dv, P, doh, N, d, N, 1, 0, 1, 0, B * H, sNN, sNd, sNd);
    }
    g_ops->softmax_rows_backward(dP, P, B * H * N, N); /* dS (before the 1/sqrt(d) scale) */
    g_ops->matmul_strided(dq, dP, kh, N, d, N, 0, 0, sc, 0, B * H, sNN, sNd, sNd);
    g_ops->matmul_strided(dk, dP, qh, N, d, N, 1, 0, sc, 0, B * H, sNN, sNd, sNd);
    attn_rope_backward(m, dq, dk, B, N);
    attn_proj_qkv_conv_backward(m, c, params, grads, dh, h, dq, dk, dv, attn_proj_act(m, act, B, N), t2);
}

static void ref_destroy(Mixer *m) { free(m); }

const MixerVT mixer_sdpa_ref = {
    .name = "sdpa_ref",
    .causal_ok = 1,
    .bidir_ok = 1,
    .attn_dropout_ok = 1,
    .short_conv_ok = 1,
    .rope_ok = 1,
    .create = ref_create,
    .act_size = ref_act,
    .scratch_size = ref_scratch,
    .forward = ref_forward,
    .backward = ref_backward,
    .decode_state = attn_mixer_decode_state,
    .decode = attn_mixer_decode,
    .prefill = attn_mixer_prefill,
    .destroy = ref_destroy,
    .fused_flops = mixer_no_fused_flops,
};
