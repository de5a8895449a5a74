/* cpu_gma_div.c: the GMA diversity loss (docs/model.md §4) on the CPU and its gradient.
 *
 * For each head h, over the T rows t = (b, n) with rowmask[b,n] != 0:
 *   token: L_h = -sum_k (1/T) sum_t log(g_tk + 1e-9)     dL/dg_tk = -1 / (T (g_tk + 1e-9))
 *   batch: L_h = -sum_k log(m_k + 1e-9), m_k = (1/T) sum_t g_tk
 *                                                    dL/dg_tk = -1 / (T (m_k + 1e-9))
 * Heads run in parallel, each summed in a fixed order (deterministic). */
#include <string.h>

#include "ops/cpu/cpu.h"

#define DIV_EPS 1e-9

static long count_rows(const uint8_t *mask, int B, int N) {
    if (!mask) return (long)B * N;
    long t = 0;
    for (long i = 0; i < (long)B * N; i++) t += mask[i] != 0;
    return t;
}

double cpu_gma_div_forward(const real *gamma, const uint8_t *rowmask, int B, int H, int N, int Kc, int mode) {
    long T = count_rows(rowmask, B, N);
    if (T == 0) return 0;
    double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total) if (PAR_WORTH((size_t)B * H * N * Kc))
    for (int h = 0; h < H; h++) {
        double *acc = (double *)cpu_workspace(0, (size_t)Kc * sizeof(double) / sizeof(real) + 1);
        memset(acc, 0, sizeof(double) * Kc);
        for (int b = 0; b < B; b++)
            for (int n = 0; n < N; n++) {
                if (rowmask && !rowmask[(size_t)b * N + n]) continue;
                const real *g = gamma + (((size_t)b * H + h) * N + n) * Kc;
                if (mode == 0)
                    for (int k = 0; k < Kc; k++) acc[k] += log((double)g[k] + DIV_EPS);
                else
                    for (int k = 0; k < Kc; k++) acc[k] += g[k];
            }
        double l = 0;
        for (int k = 0; k < Kc; k++) l += mode == 0 ? -acc[k] / T : -log(acc[k] / T + DIV_EPS);
        total += l;
    }
    return total;
}

void cpu_gma_div_backward(real *dgamma, const real *gamma, const uint8_t *rowmask, int B, int H, int N, int Kc, int mode,
                          real scale) {
    long T = count_rows(rowmask, B, N);
    if (T == 0) return;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * H * N * Kc))
    for (int h = 0; h < H; h++) {
        double *mean = (double *)cpu_workspace(0, (size_t)Kc * sizeof(double) / sizeof(real) + 1);
        if (mode == 1) {
            memset(mean, 0, sizeof(double) * Kc);
            for (int b = 0; b < B; b++)
                for (int n = 0; n < N; n++) {
                    if (rowmask && !rowmask[(size_t)b * N + n]) continue;
                    const real *g = gamma + (((size_t)b * H + h) * N + n) * Kc;
                    for (int k = 0; k < Kc; k++) mean[k] += g[k];
                }
            for (int k = 0; k < Kc; k++) mean[k] = -1.0 / (T * (mean[k] / T + DIV_EPS));
        }
        for (int b = 0; b < B; b++)
            for (int n = 0; n < N; n++) {
                if (rowmask && !rowmask[(size_t)b * N + n]) continue;
                size_t o = (((size_t)b * H + h) * N + n) * Kc;
                const real *g = gamma + o;
                real *dg = dgamma + o;
                if (mode == 0)
                    for (int k = 0; k < Kc; k++) dg[k] += scale * (real)(-1.0 / (T * ((double)g[k] + DIV_EPS)));
                else
                    for (int k = 0; k < Kc; k++) dg[k] += scale * (real)mean[k];
            }
    }
}
