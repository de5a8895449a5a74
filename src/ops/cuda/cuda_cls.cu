/* cuda_cls.cu: CUDA kernels of the classifier heads, twins of ops/cpu/cpu_cls.c:
 * the two-sequence interaction features [u, v, u*v, u-v] and their backward. */
#include "ops/cuda/cuda_common.cuh"

__global__ void k_pair_fwd(float *out, const float *u, const float *v, int B, int D) {
    GRID_STRIDE(i, (size_t)B * D) {
        size_t b = i / D, e = i % D;
        float a = u[i], c = v[i];
        float *o = out + b * 4 * D;
        o[e] = a;
        o[D + e] = c;
        o[2 * D + e] = a * c;
        o[3 * D + e] = a - c;
    }
}
__global__ void k_pair_bwd(float *du, float *dv, const float *dout, const float *u, const float *v, int B, int D) {
    GRID_STRIDE(i, (size_t)B * D) {
        size_t b = i / D, e = i % D;
        const float *g = dout + b * 4 * D;
        du[i] += g[e] + g[2 * D + e] * v[i] + g[3 * D + e];
        dv[i] += g[D + e] + g[2 * D + e] * u[i] - g[3 * D + e];
    }
}

void cuda_pair_features_forward(real *out, const real *u, const real *v, int B, int D) {
    size_t n = (size_t)B * D;
    if (!n) return;
    k_pair_fwd<<<grid_for(n), TPB>>>(out, u, v, B, D);
    KERNEL_CHECK("k_pair_fwd");
}
void cuda_pair_features_backward(real *du, real *dv, const real *dout, const real *u, const real *v, int B, int D) {
    size_t n = (size_t)B * D;
    if (!n) return;
    k_pair_bwd<<<grid_for(n), TPB>>>(du, dv, dout, u, v, B, D);
    KERNEL_CHECK("k_pair_bwd");
}
