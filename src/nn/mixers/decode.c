/* decode.c: one-token steps of the mixers' cores for incremental decoding (mixer.h), built
 * from the backend's ops so they run on every backend. They compute what the full causal
 * forward computes for the last position, up to float32 summation order. */
#include <math.h>
#include <stdlib.h>

#include "nn/mixers/mixer.h"

size_t linmix_decode_state(int H, int F, int d) { return (size_t)H * F * d + (size_t)H * F; }

size_t attn_decode_state(int H, int Nmax, int d) { return 2 * (size_t)H * Nmax * d + (size_t)H * Nmax; }

/* the caches, then the short convolutions' state */
size_t attn_mixer_decode_state(const Mixer *m, int Nmax) {
    return attn_decode_state(m->H, Nmax, m->d) + attn_proj_state_size(m);
}

void attn_mixer_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                       real *act, real *scratch) {
    size_t hs = (size_t)B * m->D, ss = attn_mixer_decode_state(m, Nmax);
    real *qh = act, *kh = qh + hs, *vh = kh + hs, *oh = vh + hs;
    attn_proj_qkv_step(m, params, h, qh, kh, vh, state + attn_decode_state(m->H, Nmax, m->d), ss,
                       attn_proj_act(m, act, B, 1), scratch, B);
    attn_rope(m, qh, kh, B, 1, pos); /* the cache keeps turned keys, as the forward's */
    /* the cache step of every (sequence, head) pair as one op: scores over keys 0..pos
     * (causal: all of them), softmax, then the weighted values */
    g_ops->attn_step(oh, state, ss, qh, kh, vh, B, m->H, m->d, Nmax, pos, (real)(1.0 / sqrt((double)m->d)));
    attn_proj_out(m, params, y, oh, scratch, B, 1);
}

void linmix_prefill(real *state, size_t ss, const real *phk, const real *v, int B, int H, int N, int F, int d) {
    for (int b = 0; b < B; b++) {
        real *S = state + b * ss, *z = S + (size_t)H * F * d;
        const real *pk = phk + (size_t)b * H * N * F, *vb = v + (size_t)b * H * N * d;
        /* one product a head, S_h [F,d] = phk_h^T [F,N] v_h [N,d], then z_h += the rows of phk_h */
        g_ops->matmul_strided(S, pk, vb, F, d, N, 1, 0, 1, 0, H, (size_t)N * F, (size_t)N * d, (size_t)F * d);
        for (int h = 0; h < H; h++) g_ops->bias_backward(z + (size_t)h * F, pk + (size_t)h * N * F, N, F);
    }
}

void attn_ring_prefill(real *cache, size_t ss, const real *kh, const real *vh, int B, int H, int N, int d, int Nmax) {
    size_t hk = (size_t)Nmax * d;
    /* the last n = min(N, Nmax) tokens, token p in row p mod Nmax (attn_step's ring): rows
     * s0.. of the first run, then rows 0.. of the wrapped rest (none when N <= Nmax) */
    int n = GMA_MIN(N, Nmax), first = N - n, s0 = first % Nmax, run = GMA_MIN(n, Nmax - s0);
    for (int b = 0; b < B; b++)
        for (int j = 0; j < H; j++) { /* head j's rows of K and of V */
            size_t src = (((size_t)b * H + j) * N + first) * d;
            real *K = cache + b * ss + j * hk, *V = cache + b * ss + (size_t)H * hk + j * hk;
            g_ops->copy(K + (size_t)s0 * d, kh + src, sizeof(real) * (size_t)run * d);
            g_ops->copy(V + (size_t)s0 * d, vh + src, sizeof(real) * (size_t)run * d);
            if (run < n) {
                g_ops->copy(K, kh + src + (size_t)run * d, sizeof(real) * (size_t)(n - run) * d);
                g_ops->copy(V, vh + src + (size_t)run * d, sizeof(real) * (size_t)(n - run) * d);
            }
        }
}

void attn_mixer_prefill(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                        int Nmax, real *scratch) {
    (void)h, (void)params, (void)scratch;
    int B = c->B, N = c->N, H = m->H, d = m->d;
    size_t hs = (size_t)B * N * m->D, ss = attn_mixer_decode_state(m, Nmax);
    const real *kh = act + hs, *vh = kh + hs;
    attn_ring_prefill(state, ss, kh, vh, B, H, N, d, Nmax);
    attn_proj_conv_prefill(m, c, attn_proj_act(m, act, B, N), state + attn_decode_state(H, Nmax, d), ss);
}
