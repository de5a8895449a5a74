/* sdpa.c: softmax attention, the optimised version that models use (`mixer: "sdpa"`; math,
 * sdpa.window and decoding: docs/model.md §3.5): the tiled online-softmax ops (g_ops->attn_*),
 * causal or bidirectional, padded keys a -inf bias, memory O(N d) per head also with
 * attention dropout (the ops regenerate the mask, §8). The plain version that stores P is
 * `sdpa_ref` (sdpa_ref.c), the test reference; on a backend without attn_forward/
 * attn_backward `sdpa` creates that one. With model.short_conv the projections go through
 * the short convolutions, with model.pos "rope" q and k then turn by their positions
 * (attn_rope; mixer.h). Parameters: PREFIX.{q,k,v,o}.{weight,bias}.
 * act:     qh, kh, vh, oh [B,H,N,d]; lse [B,H,N]; kbias [B,N]; the projections' block
 * scratch: two [B*N*D] buffers, dq, dk, dv [B,H,N,d] */
#include <stdlib.h>

#include "nn/mixers/mixer.h"

extern const MixerVT mixer_sdpa_ref;
const MixerVT mixer_sdpa;

/* the keys sdpa.* */
typedef struct SdpaCfg {
    int window; /* sliding window W (0 = full attention) */
} SdpaCfg;
static const CfgKey sdpa_keys[] = {
    {"window", CFGT_INT, offsetof(SdpaCfg, window), 0, "0", 0, 16777216, NULL,
     "Sliding-window attention of mixer sdpa: query i sees the W keys i-W+1..i (bidirectional: the symmetric band "
     "i-W+1..i+W-1), at O(N W) cost; decoding keeps W key/value rows. 0 = full attention."},
};
static const CfgSection sdpa_section = {"sdpa", sizeof(SdpaCfg), sdpa_keys, CFG_N(sdpa_keys), NULL, NULL};
static int sdpa_window_of(const Config *c) { return ((const SdpaCfg *)cfg_section_of(c, &sdpa_section))->window; }
/* the layer's window; 0 for the sdpa paths that auto and gated build around their own
 * state (mixer_new without sdpa_create: no priv, or theirs) */
static int window_of(const Mixer *m) { return m->vt == &mixer_sdpa && m->priv ? *(const int *)m->priv : 0; }

static Mixer *sdpa_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    int window = sdpa_window_of(c);
    /* a backend without the tiled ops runs the plain version (same parameters, O(N^2) memory) */
    if (!g_ops->attn_forward || !g_ops->attn_backward) {
        if (window > 0)
            return gma_errorf("key sdpa.window: %d needs the tiled attention ops (attn_forward, attn_backward), "
                              "which backend %s lacks",
                              window, g_ops->name),
                   NULL;
        return mixer_sdpa_ref.create(c, layer, pt, prefix);
    }
    Mixer *m = mixer_new(&mixer_sdpa, c, pt);
    int *w = xcalloc(1, sizeof *w);
    *w = window;
    m->priv = w;
    attn_proj_add(m, c, pt, prefix);
    return m;
}

static size_t sdpa_act(const Mixer *m, int B, int N) {
    return 4 * (size_t)B * N * m->D + (size_t)B * m->H * N + (size_t)B * N + attn_proj_act_size(m, B, N);
}
static size_t sdpa_scratch(const Mixer *m, int B, int N) { return 5 * (size_t)B * N * m->D; }
static double sdpa_fused_flops(const Mixer *m, int B, int N, int causal) {
    return attn_tile_flops((double)B * m->H, N, m->d, causal, window_of(m));
}

static void sdpa_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                         real *scratch) {
    int B = c->B, N = c->N, H = m->H, d = m->d;
    size_t hs = (size_t)B * N * m->D;
    real *qh = act, *kh = qh + hs, *vh = kh + hs, *oh = vh + hs, *lse = oh + hs, *kb = lse + (size_t)B * H * N;
    attn_proj_qkv_conv(m, c, params, h, qh, kh, vh, attn_proj_act(m, act, B, N), scratch);
    attn_rope(m, qh, kh, B, N, 0); /* the act keeps the turned q, k: the backward's and prefill's */
    if (c->keymask) key_bias(kb, c->keymask, B, N);
    g_ops->attn_forward(oh, lse, qh, kh, vh, c->keymask ? kb : NULL, B, H, N, d, c->causal, window_of(m),
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
                         window_of(m), (real)(1.0 / sqrt((double)d)), c->attn_drop);
    attn_rope_backward(m, dq, dk, B, N);
    attn_proj_qkv_conv_backward(m, c, params, grads, dh, h, dq, dk, dv, attn_proj_act(m, act, B, N), t2);
}

/* decoding: the key/value cache keeps the last min(W, Nmax) tokens (all Nmax without a window) */
static int cache_rows(const Mixer *m, int Nmax) { return window_of(m) > 0 ? GMA_MIN(window_of(m), Nmax) : Nmax; }
static size_t sdpa_decode_state(const Mixer *m, int Nmax) { return attn_mixer_decode_state(m, cache_rows(m, Nmax)); }
static void sdpa_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                        real *act, real *scratch) {
    attn_mixer_decode(m, y, h, params, state, B, pos, cache_rows(m, Nmax), act, scratch);
}
static void sdpa_prefill(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                         int Nmax, real *scratch) {
    attn_mixer_prefill(m, c, h, params, act, state, cache_rows(m, Nmax), scratch);
}

static void sdpa_destroy(Mixer *m) {
    free(m->priv);
    free(m);
}

const MixerVT mixer_sdpa = {
    .name = "sdpa",
    .causal_ok = 1,
    .bidir_ok = 1,
    .attn_dropout_ok = 1,
    .short_conv_ok = 1,
    .rope_ok = 1,
    .config = &sdpa_section,
    .create = sdpa_create,
    .act_size = sdpa_act,
    .scratch_size = sdpa_scratch,
    .forward = sdpa_forward,
    .backward = sdpa_backward,
    .decode_state = sdpa_decode_state,
    .decode = sdpa_decode,
    .prefill = sdpa_prefill,
    .destroy = sdpa_destroy,
    .fused_flops = sdpa_fused_flops,
};
