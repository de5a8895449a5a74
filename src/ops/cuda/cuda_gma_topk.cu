/* cuda_gma_topk.cu: GMA's sparse routing (gma.topk, docs/model.md §3.12) on the GPU, twin of
 * ops/cpu/cpu_gma_topk.c: one thread per row of responsibilities runs ops/gma_topk.h's
 * gma_topk_row, the CPU's definition, so both backends keep the same components and draw
 * the same Gumbel noise. */
#include "ops/cuda/cuda_common.cuh"

__global__ void k_gma_topk(float *out, const float *gamma, size_t rows, int H, int N, int Kc, int k, GmaTopkNoise z,
                           int noisy) {
    GRID_STRIDE(r, rows) {
        int i = (int)(r % (size_t)N), h = (int)(r / (size_t)N % (size_t)H), b = (int)(r / ((size_t)N * H));
        gma_topk_row(out + r * Kc, gamma + r * Kc, Kc, k, noisy ? &z : NULL, noisy ? (int64_t)z.b0 + b : 0,
                     noisy ? z.h0 + h : 0, N, i);
    }
}
void cuda_gma_topk_forward(real *out, const real *gamma, int B, int H, int N, int Kc, int k,
                           const GmaTopkNoise *noise) {
    size_t rows = (size_t)B * H * N;
    if (!rows || Kc <= 0) return;
    GmaTopkNoise z = {};
    if (noise) z = *noise;
    k_gma_topk<<<grid_for(rows), TPB>>>(out, gamma, rows, H, N, Kc, k, z, noise != NULL);
    KERNEL_CHECK("k_gma_topk");
}
