/* cuda_cls.cu: CUDA kernels of the classifier heads, twins of ops/cpu/cpu_cls.c:
 * the two-sequence interaction features [u, v, u*v, u-v] and their backward, and max
 * pooling over positions. */
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

/* max pooling: one thread per (sequence, channel), positions in order (the first of equals
 * wins, as on the CPU); the backward writes one element per (sequence, channel), so no two
 * threads meet */
__global__ void k_maxpool_fwd(float *out, int32_t *arg, const float *x, const float *w, int S, int N, int D) {
    GRID_STRIDE(i, (size_t)S * D) {
        size_t s = i / D, d = i % D;
        float best = 0.f;
        int32_t a = -1;
        for (int n = 0; n < N; n++) {
            if (!(w[s * N + n] > 0.f)) continue;
            float v = x[(s * N + n) * D + d];
            if (a < 0 || v > best) best = v, a = n;
        }
        out[i] = best;
        arg[i] = a;
    }
}
__global__ void k_maxpool_bwd(float *dx, const float *dout, const int32_t *arg, int S, int N, int D) {
    GRID_STRIDE(i, (size_t)S * D) {
        size_t s = i / D, d = i % D;
        int32_t n = arg[i];
        if (n >= 0) dx[(s * N + n) * D + d] += dout[i];
    }
}
void cuda_maxpool_forward(real *out, int32_t *arg, const real *x, const real *w, int S, int N, int D) {
    size_t n = (size_t)S * D;
    if (!n) return;
    k_maxpool_fwd<<<grid_for(n), TPB>>>(out, arg, x, w, S, N, D);
    KERNEL_CHECK("k_maxpool_fwd");
}
void cuda_maxpool_backward(real *dx, const real *dout, const int32_t *arg, int S, int N, int D) {
    size_t n = (size_t)S * D;
    if (!n) return;
    k_maxpool_bwd<<<grid_for(n), TPB>>>(dx, dout, arg, S, N, D);
    KERNEL_CHECK("k_maxpool_bwd");
}
