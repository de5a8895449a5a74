/* cuda_dropout.cu: inverted dropout on the GPU, twin of ops/cpu/cpu_dropout.c: the mask of
 * ops/dropout.h (docs/model.md §8), one thread per element, so both backends keep the
 * same elements. */
#include "ops/cuda/cuda_common.cuh"

__global__ void k_dropout(float *y, const float *x, size_t n, size_t per_seq, GmaDrop g) {
    GRID_STRIDE(i, n) {
        size_t s = i / per_seq, r = i % per_seq;
        uint64_t e = (uint64_t)gma_drop_seq(&g, (int64_t)s) * per_seq + r;
        y[i] = x[i] * (float)gma_drop_mult(&g, e);
    }
}
void cuda_dropout(real *y, const real *x, int S, size_t per_seq, const GmaDrop *drop) {
    size_t n = (size_t)S * per_seq;
    if (!n) return;
    k_dropout<<<grid_for(n), TPB>>>(y, x, n, per_seq, *drop);
    KERNEL_CHECK("k_dropout");
}
