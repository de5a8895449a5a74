/* conv_state.c: a causal convolution's decoding state (see conv_state.h). */
#include "nn/mixers/conv_state.h"

#include "ops/ops.h"

size_t conv_state_scratch(int B, int K, int C) { return 2 * (size_t)B * K * C; }

void conv_state_step(real *out, const real *x, real *st, size_t ss, const real *w, const real *bias, int B, int K,
                     int C, real *win) {
    size_t KC = (size_t)K * C, hist = (size_t)(K - 1) * C, row = sizeof(real) * (size_t)C;
    real *cv = win + (size_t)B * KC;
    for (int b = 0; b < B; b++) {
        if (K > 1) g_ops->copy(win + b * KC, st + b * ss, sizeof(real) * hist);
        g_ops->copy(win + b * KC + hist, x + (size_t)b * C, row);
    }
    g_ops->conv1d_causal_forward(cv, win, w, bias, B, K, C, K);
    for (int b = 0; b < B; b++) {
        g_ops->copy(out + (size_t)b * C, cv + b * KC + hist, row);
        if (K > 1) g_ops->copy(st + b * ss, win + b * KC + C, sizeof(real) * hist);
    }
}

void conv_state_prefill(real *st, size_t ss, const real *x, int B, int N, int K, int C) {
    int n = GMA_MIN(K - 1, N);
    for (int b = 0; n > 0 && b < B; b++)
        g_ops->copy(st + b * ss + (size_t)(K - 1 - n) * C, x + ((size_t)b * N + N - n) * C, sizeof(real) * (size_t)n * C);
}
