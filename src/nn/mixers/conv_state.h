/* conv_state.h: the decoding state of a causal depthwise convolution of kernel K over C
 * channels (docs/model.md §3.9): a sequence's last K-1 inputs [K-1,C], zeros before
 * position 0. Shared by the short convolutions on q, k, v (mixer.c), baseconv, gdn and
 * mamba. */
#ifndef GMA_CONV_STATE_H
#define GMA_CONV_STATE_H
#include <stddef.h>

#include "core/common.h"

/* reals of the scratch a step needs for B sequences: their windows [B,K,C] and the
 * convolution of the windows [B,K,C] */
size_t conv_state_scratch(int B, int K, int C);
/* One decoding step of B sequences: out [B,C] is the convolution (weights w [C,K], bias
 * NULL or [C]) at this position of sequence b's state (at st + b ss) followed by its new
 * input x [B,C] (out may be x), and each state moves on by one row. The B windows are
 * convolved in one call of the op; the last row of each is the forward's sum. win:
 * conv_state_scratch(B, K, C) reals. */
void conv_state_step(real *out, const real *x, real *st, size_t ss, const real *w, const real *bias, int B, int K,
                     int C, real *win);
/* Prefill: the states (at st + b ss, zeroed by the caller) after the N inputs x [B,N,C] of
 * a forward from position 0: rows K-1-n .. K-2 hold inputs N-n .. N-1, n = min(K-1, N). */
void conv_state_prefill(real *st, size_t ss, const real *x, int B, int N, int K, int C);
#endif
