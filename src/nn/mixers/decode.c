/* decode.c: one-token steps of the mixers' cores for incremental decoding (mixer.h), built
 * from the backend's ops so they run on every backend. They compute what the full causal
 * forward computes for the last position, up to float32 summation order. */
#include <math.h>
#include <stdlib.h>

#include "nn/mixers/mixer.h"

size_t linmix_decode_state(int H, int F, int d) { return (size_t)H * F * d + (size_t)H * F; }

size_t attn_decode_state(int H, int Nmax, int d) { return 2 * (size_t)H * Nmax * d + (size_t)H * Nmax; }

size_t attn_mixer_decode_state(const Mixer *m, int Nmax) { return attn_decode_state(m->H, Nmax, m->d); }

void attn_mixer_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                       real *act, real *scratch) {
    size_t hs = (size_t)B * m->D, ss = attn_decode_state(m->H, Nmax, m->d);
    real *qh = act, *kh = qh + hs, *vh = kh + hs, *oh = vh + hs;
    attn_proj_qkv(m, params, h, qh, kh, vh, scratch, B, 1);
    /* the cache step of every (sequence, head) pair as one op: scores over keys 0..pos
     * (causal: all of them), softmax, then the weighted values */
    g_ops->attn_step(oh, state, ss, qh, kh, vh, B, m->H, m->d, Nmax, pos, (real)(1.0 / sqrt((double)m->d)));
    attn_proj_out(m, params, y, oh, scratch, B, 1);
}
