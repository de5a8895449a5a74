/* cuda_baselines.cu: the baseline mixers' elementwise and Performer ops on the GPU, twins
 * of ops/cpu/cpu_linear.c (elu+1), cpu_mamba.c (silu, softplus, the silu gate, the product) and
 * cpu_performer.c (FAVOR+ exponents and features, the ReLU kernel's features, maxval), cpu_rope.c (rotary
 * positions). The causal convolution and
 * the selective scan are in cuda_mamba.cu, the tiled attention in cuda_sdpa.cu.
 *
 * Elementwise maps are one thread per element (grid-stride). favor_logits is a
 * strided-batched GEMM per batch row (x omega_h^T over the heads) plus a warp-per-row
 * kernel for the |x|^2 term; favor_exp is warp per row (argmax with the CPU's tie rule:
 * the first maximum). No atomics: every output element has one writer and every sum runs
 * in a fixed order, so results repeat bit for bit. */
#include "ops/cuda/cuda_common.cuh"

/* ---------------------------------------------------------------- elementwise */
__device__ __forceinline__ float sigmf(float x) { return 1.f / (1.f + expf(-x)); }

__global__ void k_elu1_fwd(float *out, const float *x, size_t n) {
    GRID_STRIDE(i, n) out[i] = x[i] > 0 ? x[i] + 1.f : expf(x[i]);
}
__global__ void k_elu1_bwd(float *dx, const float *dout, const float *x, size_t n) {
    GRID_STRIDE(i, n) dx[i] += dout[i] * (x[i] > 0 ? 1.f : expf(x[i]));
}
__global__ void k_silu_fwd(float *out, const float *x, size_t n) { GRID_STRIDE(i, n) out[i] = x[i] * sigmf(x[i]); }
__global__ void k_silu_bwd(float *dx, const float *dout, const float *x, size_t n) {
    GRID_STRIDE(i, n) {
        float s = sigmf(x[i]);
        dx[i] += dout[i] * s * (1.f + x[i] * (1.f - s));
    }
}
__global__ void k_softplus_fwd(float *out, const float *x, size_t n) {
    GRID_STRIDE(i, n) out[i] = x[i] > 20.f ? x[i] : log1pf(expf(x[i]));
}
__global__ void k_softplus_bwd(float *dx, const float *dout, const float *x, size_t n) {
    GRID_STRIDE(i, n) dx[i] += dout[i] * sigmf(x[i]);
}
__global__ void k_gate_silu_fwd(float *out, const float *y, const float *z, size_t n) {
    GRID_STRIDE(i, n) out[i] = y[i] * z[i] * sigmf(z[i]);
}
__global__ void k_gate_silu_bwd(float *dy, float *dz, const float *dout, const float *y, const float *z, size_t n) {
    GRID_STRIDE(i, n) {
        float s = sigmf(z[i]);
        dy[i] += dout[i] * z[i] * s;
        dz[i] += dout[i] * y[i] * s * (1.f + z[i] * (1.f - s));
    }
}
__global__ void k_mul_fwd(float *out, const float *a, const float *b, size_t n) { GRID_STRIDE(i, n) out[i] = a[i] * b[i]; }
__global__ void k_mul_bwd(float *da, float *db, const float *dout, const float *a, const float *b, size_t n) {
    GRID_STRIDE(i, n) {
        da[i] += dout[i] * b[i];
        db[i] += dout[i] * a[i];
    }
}

#define EW_LAUNCH(kern, n, ...)                                                                                        \
    do {                                                                                                               \
        if (!(n)) return;                                                                                              \
        kern<<<grid_for(n), TPB>>>(__VA_ARGS__);                                                                       \
        KERNEL_CHECK(#kern);                                                                                           \
    } while (0)

void cuda_elu1_forward(real *out, const real *x, size_t n) { EW_LAUNCH(k_elu1_fwd, n, out, x, n); }
void cuda_elu1_backward(real *dx, const real *dout, const real *x, size_t n) { EW_LAUNCH(k_elu1_bwd, n, dx, dout, x, n); }
void cuda_silu_forward(real *out, const real *x, size_t n) { EW_LAUNCH(k_silu_fwd, n, out, x, n); }
void cuda_silu_backward(real *dx, const real *dout, const real *x, size_t n) { EW_LAUNCH(k_silu_bwd, n, dx, dout, x, n); }
void cuda_softplus_forward(real *out, const real *x, size_t n) { EW_LAUNCH(k_softplus_fwd, n, out, x, n); }
void cuda_softplus_backward(real *dx, const real *dout, const real *x, size_t n) {
    EW_LAUNCH(k_softplus_bwd, n, dx, dout, x, n);
}
void cuda_gate_silu_forward(real *out, const real *y, const real *z, size_t n) {
    EW_LAUNCH(k_gate_silu_fwd, n, out, y, z, n);
}
void cuda_gate_silu_backward(real *dy, real *dz, const real *dout, const real *y, const real *z, size_t n) {
    EW_LAUNCH(k_gate_silu_bwd, n, dy, dz, dout, y, z, n);
}
void cuda_mul_forward(real *out, const real *a, const real *b, size_t n) { EW_LAUNCH(k_mul_fwd, n, out, a, b, n); }
void cuda_mul_backward(real *da, real *db, const real *dout, const real *a, const real *b, size_t n) {
    EW_LAUNCH(k_mul_bwd, n, da, db, dout, a, b, n);
}

/* ---------------------------------------------------------------- rotary positions */
/* one thread per pair (i, i + d/2) of a row of x [B,H,N,d] (ops.h rope_forward); the angle
 * in double as the CPU's table, sign -1 for the inverse rotation (the backward) */
__global__ void k_rope(float *y, const float *x, size_t pairs, int N, int d, int pos0, double theta, double sign) {
    int h2 = d / 2;
    GRID_STRIDE(t, pairs) {
        int i = (int)(t % h2);
        size_t row = t / h2;
        int n = (int)(row % N);
        double a = (double)(pos0 + n) * pow(theta, -2.0 * i / d), s, c;
        sincos(a, &s, &c);
        s *= sign;
        const float *xr = x + row * d;
        float *yr = y + row * d;
        double u = xr[i], v = xr[i + h2];
        yr[i] = (float)(u * c - v * s);
        yr[i + h2] = (float)(v * c + u * s);
    }
}
void cuda_rope_forward(real *y, const real *x, int B, int H, int N, int d, int pos0, real theta) {
    size_t pairs = (size_t)B * H * N * (d / 2);
    EW_LAUNCH(k_rope, pairs, y, x, pairs, N, d, pos0, (double)theta, 1.0);
}
void cuda_rope_backward(real *dx, const real *dy, int B, int H, int N, int d, int pos0, real theta) {
    size_t pairs = (size_t)B * H * N * (d / 2);
    EW_LAUNCH(k_rope, pairs, dx, dy, pairs, N, d, pos0, (double)theta, -1.0);
}

/* ---------------------------------------------------------------- maxval */
#define MAX_BLOCKS 1024
/* pass 1: a max per block (grid-stride); pass 2: one block over the partials. max is
 * order-independent, so this is exact and repeatable. NaN is skipped like the CPU's
 * `x > mx` (fmaxf returns the other operand). */
__global__ void k_max_part(float *part, const float *x, size_t n) {
    __shared__ float sh[32];
    float m = -INFINITY;
    GRID_STRIDE(i, n) m = fmaxf(m, x[i]);
    m = block_max(m, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = m;
}
__global__ void k_max_final(float *out, const float *part, int n) {
    __shared__ float sh[32];
    float m = -INFINITY;
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, part[i]);
    m = block_max(m, sh);
    if (threadIdx.x == 0) out[0] = m;
}
double cuda_maxval(const real *x, size_t n) {
    if (!n) return -INFINITY;
    int g = grid_for(n);
    if (g > MAX_BLOCKS) g = MAX_BLOCKS;
    float *part = ws_f(0, (size_t)g + 1);
    k_max_part<<<g, TPB>>>(part, x, n);
    KERNEL_CHECK("k_max_part");
    k_max_final<<<1, TPB>>>(part + g, part, g);
    KERNEL_CHECK("k_max_final");
    float h;
    CUDA_CHECK(cudaMemcpy(&h, part + g, sizeof h, cudaMemcpyDeviceToHost));
    return (double)h;
}

/* ---------------------------------------------------------------- Performer FAVOR+ */
/* e[row, :] -= |x_row|^2 * s2 ; one warp per row (R rows of d; e rows of m) */
__global__ void k_favor_sq(float *e, const float *x, size_t R, int d, int m, float s2) {
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= R) return;
    const float *xr = x + row * d;
    float s = 0;
    for (int i = lane; i < d; i += 32) s += xr[i] * xr[i];
    s = warp_sum(s) * s2;
    float *er = e + row * m;
    for (int f = lane; f < m; f += 32) er[f] -= s;
}
/* dx[row, :] -= rowsum(de[row]) * s2 * x[row, :] */
__global__ void k_favor_sq_bwd(float *dx, const float *de, const float *x, size_t R, int d, int m, float s2) {
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= R) return;
    const float *der = de + row * m;
    float s = 0;
    for (int f = lane; f < m; f += 32) s += der[f];
    s = warp_sum(s) * s2;
    const float *xr = x + row * d;
    float *dxr = dx + row * d;
    for (int i = lane; i < d; i += 32) dxr[i] -= s * xr[i];
}

void cuda_favor_logits_forward(real *e, const real *x, const real *omega, int B, int H, int N, int d, int m) {
    size_t R = (size_t)B * H * N;
    if (!R || !m) return;
    float s4 = (float)pow((double)d, -0.25), s2 = (float)(0.5 / sqrt((double)d));
    for (int b = 0; b < B; b++) /* e_bh = s4 x_bh omega_h^T, batched over heads */
        cuda_gemm_strided(e + (size_t)b * H * N * m, x + (size_t)b * H * N * d, omega, N, m, d, 0, 1, s4, 0.f, H,
                          (long long)N * d, (long long)m * d, (long long)N * m);
    k_favor_sq<<<(unsigned)((R + 7) / 8), 256>>>(e, x, R, d, m, s2);
    KERNEL_CHECK("k_favor_sq");
}

void cuda_favor_logits_backward(real *dx, const real *de, const real *x, const real *omega, int B, int H, int N, int d,
                                int m) {
    size_t R = (size_t)B * H * N;
    if (!R) return;
    float s4 = (float)pow((double)d, -0.25), s2 = (float)(1.0 / sqrt((double)d));
    for (int b = 0; b < B; b++) /* dx_bh += s4 de_bh omega_h */
        cuda_gemm_strided(dx + (size_t)b * H * N * d, de + (size_t)b * H * N * m, omega, N, d, m, 0, 0, s4, 1.f, H,
                          (long long)N * m, (long long)m * d, (long long)N * d);
    k_favor_sq_bwd<<<(unsigned)((R + 7) / 8), 256>>>(dx, de, x, R, d, m, s2);
    KERNEL_CHECK("k_favor_sq_bwd");
}

/* one warp per row: c = row max (first argmax, saved as a real) or the constant */
__global__ void k_favor_exp(float *phi, float *rowmax, const float *e, int R, int m, float c, float scale) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (row >= R) return;
    const float *er = e + (size_t)row * m;
    float *pr = phi + (size_t)row * m, cr = c;
    if (rowmax) {
        float bv = -INFINITY;
        int bi = m; /* the first index holding the largest value */
        for (int f = lane; f < m; f += 32) {
            float v = er[f];
            if (v > bv || bi == m) bv = v, bi = f;
            else if (v == bv && f < bi) bi = f;
        }
        /* lanes hold increasing indices, so on ties the smaller index wins */
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (oi < m && (bi == m || ov > bv || (ov == bv && oi < bi))) bv = ov, bi = oi;
        }
        if (bi == m) bi = 0;
        cr = er[bi];
        if (lane == 0) rowmax[row] = (float)bi;
    }
    for (int f = lane; f < m; f += 32) pr[f] = scale * expf(er[f] - cr);
}
/* one warp per row: de += dphi phi ; de[argmax] -= sum_f dphi phi */
__global__ void k_favor_exp_bwd(float *de, const float *dphi, const float *phi, const float *rowmax, int R, int m) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (row >= R) return;
    const float *g = dphi + (size_t)row * m, *p = phi + (size_t)row * m;
    float *dr = de + (size_t)row * m;
    float s = 0;
    if (rowmax) {
        for (int f = lane; f < m; f += 32) s += g[f] * p[f];
        s = warp_sum(s);
    }
    int am = rowmax ? (int)rowmax[row] : -1;
    for (int f = lane; f < m; f += 32) {
        float t = g[f] * p[f];
        dr[f] += f == am ? t - s : t;
    }
}

void cuda_favor_exp_forward(real *phi, real *rowmax, const real *e, int R, int m, real c, real scale) {
    if (R <= 0 || m <= 0) return;
    k_favor_exp<<<(R + 7) / 8, 256>>>(phi, rowmax, e, R, m, c, scale);
    KERNEL_CHECK("k_favor_exp");
}
void cuda_favor_exp_backward(real *de, const real *dphi, const real *phi, const real *rowmax, int R, int m) {
    if (R <= 0 || m <= 0) return;
    k_favor_exp_bwd<<<(R + 7) / 8, 256>>>(de, dphi, phi, rowmax, R, m);
    KERNEL_CHECK("k_favor_exp_bwd");
}

/* ---------------------------------------------------------------- Performer ReLU kernel */
/* phi = max(x, 0) + eps, one thread per element; the backward pass is relu_backward */
__global__ void k_favor_relu(float *phi, const float *x, size_t n, float eps) {
    GRID_STRIDE(i, n) phi[i] = (x[i] > 0.f ? x[i] : 0.f) + eps;
}
void cuda_favor_relu_forward(real *phi, const real *x, size_t n, real eps) { EW_LAUNCH(k_favor_relu, n, phi, x, n, eps); }
