/* cpu_gma_topk.c: GMA's sparse routing (gma.topk, docs/model.md §3.12): each row of
 * responsibilities cut to its k largest entries, after the Gumbel noise of a training
 * forward, and renormalised, by ops/gma_topk.h's gma_topk_row (the CUDA twin's
 * definition too). The rows are independent, so the result does not depend on the thread
 * count. */
#include "ops/cpu/cpu.h"

void cpu_gma_topk_forward(real *out, const real *gamma, int B, int H, int N, int Kc, int k, const GmaTopkNoise *noise) {
    size_t rows = (size_t)B * H * N;
#pragma omp parallel for schedule(static) if (PAR_WORTH(rows * (size_t)Kc * (size_t)(k > 0 ? k : 1)))
    for (size_t r = 0; r < rows; r++) {
        int i = (int)(r % (size_t)N), h = (int)(r / (size_t)N % (size_t)H), b = (int)(r / ((size_t)N * H));
        gma_topk_row(out + r * Kc, gamma + r * Kc, Kc, k, noise, noise ? (int64_t)noise->b0 + b : 0,
                     noise ? noise->h0 + h : 0, N, i);
    }
}
