/* sdpa.c: softmax attention, the optimised version that models use (docs/model.md §3.5,
 * `mixer: "sdpa"`): per head O = softmax(Q K^T / sqrt(d) + mask) V computed by the tiled
 * online-softmax op (g_ops->attn_forward), which never forms the N x N matrix; the
 * backward op recomputes the score tiles from Q, K and the saved row log-sum-exp. Causal
 * and bidirectional; padded keys get a -inf bias. Memory O(N d) per head, with attention
 * dropout too (the ops regenerate the mask in the backward pass, docs/model.md §8). The plain
 * version that stores P is registered as `sdpa_ref` (sdpa_ref.c) and is the test reference;
 * on a backend that lacks attn_forward/attn_backward, `sdpa` creates that plain version.
 * Parameters: PREFIX.{q,k,v,o}.{weight,bias}.
 *
 * With model.short_conv the projections go through the short convolutions (mixer.h).
 *
 * act:     qh, kh, vh, oh [B,H,N,d]; lse [B,H,N]; kbias [B,N]; the projections' block
 * scratch: two [B*N*D] buffers, dq, dk, dv [B,H,N,d] */
#include <stdlib.h>

#include "nn/mixers/mixer.h"

extern const MixerVT mixer_sdpa_ref;
const MixerVT mixer_sdpa;
static Mixer *sdpa_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    /* a backend without the tiled ops runs the plain version (same parameters, O(N^2) memory) */
    if (!g_ops->attn_forward || !g_ops->attn_backward) return mixer_sdpa_ref.create(c, layer, pt, prefix);
    Mixer *m = mixer_new(&mixer_sdpa, c, pt);
    attn_proj_add(m, c, pt, prefix);
    return m;
}

static size_t sdpa_act(const Mixer *m, int B, int N) {
    return 4 * (size_t)B * N * m->D + (size_t)B * m->H * N + (size_t)B * N + attn_proj_act_size(m, B, N);
}
static size_t sdpa_scratch(const Mixer *m, int B, int N) { return 5 * (size_t)B * N * m->D; }
/* the tile products: S and P V forward; S again, dP, dV, dK, dQ backward; 2 d each per
 * visible (query, key) pair (causal: N (N + 1) / 2 of them) */
static double sdpa_fused_flops(const Mixer *m, int B, int N, int causal) {
    double n = N, pairs = causal ? n * (n + 1) / 2 : n * n;
    return (double)B * m->H * 7 * 2.0 * m->d * pairs;
}

static void sdpa_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                         real *scratch) {
    int B = c->B, N = c->N, H = m->H, d = m->d;
    size_t hs = (size_t)B * N * m->D;
    real *qh = act, *kh = qh + hs, *vh = kh + hs, *oh = vh + hs, *lse = oh + hs, *kb = lse + (size_t)B * H * N;
    attn_proj_qkv_conv(m, c, params, h, qh, kh, vh, attn_proj_act(m, act, B, N), scratch);
    if (c->keymask) key_bias(kb, c->keymask, B, N);
    g_ops->attn_forward(oh, lse, qh, kh, vh, c->keymask ? kb : NULL, B, H, N, d, c->causal,
                        (real)(1.0 / sqrt((double)d)), c->attn_drop);
    attn_proj_out(m, params, y, oh, scratch, B, N);
}

static void sdpa_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                          real *grads, real *act, real *scratch) {
    int B = c->B, N = c->N, H = m->H, d = m->d;
    size_t hs = (size_t)B * N * m->D;
    real *qh = act, *kh = qh + hs, *vh = kh + hs, *oh = vh + hs, *lse = oh + hs, *kb = lse + (size_t)B * H * N;
    real *t1 = scratch, *t2 = t1 + hs, *dq = t2 + hs, *dk = dq + hs, *dv = dk + hs;
    real *doh = t1;
    attn_proj_out_backward(m, params, grads, doh, dy, oh, t1, t2, B, N);
    g_ops->zero(dq, sizeof(real) * 3 * hs);
    g_ops->attn_backward(dq, dk, dv, doh, oh, lse, qh, kh, vh, c->keymask ? kb : NULL, B, H, N, d, c->causal,
                         (real)(1.0 / sqrt((double)d)), c->attn_drop);
    attn_proj_qkv_conv_backward(m, c, params, grads, dh, h, dq, dk, dv, attn_proj_act(m, act, B, N), t2);
}

static void sdpa_destroy(Mixer *m) { free(m); }

const MixerVT mixer_sdpa = {
    .name = "sdpa",
    .causal_ok = 1,
    .bidir_ok = 1,
    .attn_dropout_ok = 1,
    .short_conv_ok = 1,
    .create = sdpa_create,
    .act_size = sdpa_act,
    .scratch_size = sdpa_scratch,
    .forward = sdpa_forward,
    .backward = sdpa_backward,
    .decode_state = attn_mixer_decode_state,
    .decode = attn_mixer_decode,
    .prefill = attn_mixer_prefill,
    .destroy = sdpa_destroy,
    .fused_flops = sdpa_fused_flops,
};
