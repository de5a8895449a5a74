/* decode.c: one-token steps of the mixers' cores for incremental decoding (mixer.h), built
 * from the backend's ops so they run on every backend. They compute what the full causal
 * forward computes for the last position, up to float32 summation order. */
#include <math.h>
#include <stdlib.h>

#include "nn/mixers/mixer.h"

size_t linmix_decode_state(int H, int F, int d) { return (size_t)H * F * d + (size_t)H * F; }

size_t attn_decode_state(int H, int Nmax, int d) { return 2 * (size_t)H * Nmax * d + (size_t)H * Nmax; }

void attn_decode(real *oh, real *state, const real *qh, const real *kh, const real *vh, int H, int d, int Nmax, int pos) {
    real *K = state, *V = K + (size_t)H * Nmax * d, *P = V + (size_t)H * Nmax * d;
    size_t row = sizeof(real) * (size_t)d, n = (size_t)pos + 1;
    for (int h = 0; h < H; h++) {
        g_ops->copy(K + ((size_t)h * Nmax + pos) * d, kh + (size_t)h * d, row);
        g_ops->copy(V + ((size_t)h * Nmax + pos) * d, vh + (size_t)h * d, row);
    }
    /* scores over keys 0..pos (causal: all of them), softmax, then the weighted values */
    g_ops->matmul_strided(P, qh, K, 1, (int)n, d, 0, 1, 1, 0, H, (size_t)d, (size_t)Nmax * d, n);
    g_ops->softmax_rows(P, H, (int)n, (real)(1.0 / sqrt((double)d)), NULL);
    g_ops->matmul_strided(oh, P, V, 1, d, (int)n, 0, 0, 1, 0, H, n, (size_t)Nmax * d, (size_t)d);
}

size_t attn_mixer_decode_state(const Mixer *m, int Nmax) { return attn_decode_state(m->H, Nmax, m->d); }

void attn_mixer_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                       real *act, real *scratch) {
    size_t hs = (size_t)B * m->D, ss = attn_decode_state(m->H, Nmax, m->d);
    real *qh = act, *kh = qh + hs, *vh = kh + hs, *oh = vh + hs;
    attn_proj_qkv(m, params, h, qh, kh, vh, scratch, B, 1);
    for (int b = 0; b < B; b++) {
        size_t o = (size_t)b * m->D;
        attn_decode(oh + o, state + b * ss, qh + o, kh + o, vh + o, m->H, m->d, Nmax, pos);
    }
    attn_proj_out(m, params, y, oh, scratch, B, 1);
}
