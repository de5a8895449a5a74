/* cuda_gma_div.cu: the GMA diversity loss (docs/model.md §4) on the GPU, same contract as
 * cpu_gma_div.c (see ops.h gma_div_forward): one block per (head, component) sums its
 * column over the unmasked rows in a fixed order (deterministic); the host adds the H*Kc
 * partial losses in index order. The row mask arrives in host memory and is copied. */
#include "ops/cuda/cuda_common.cuh"

#define DIV_EPS 1e-9

/* part[h*Kc+k] = sum_t f(g_htk), f = log(g + eps) (mode 0) or g (mode 1) */
__global__ void k_div_colsum(double *part, const float *g, const uint8_t *mask, int B, int H, int N, int Kc, int mode) {
    __shared__ double sh[32];
    int h = blockIdx.x / Kc, k = blockIdx.x % Kc;
    double s = 0;
    for (long t = threadIdx.x; t < (long)B * N; t += blockDim.x) {
        if (mask && !mask[t]) continue;
        long b = t / N, n = t % N;
        double v = g[(((size_t)b * H + h) * N + n) * Kc + k];
        s += mode == 0 ? log(v + DIV_EPS) : v;
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void k_div_bwd(float *dg, const float *g, const double *part, const uint8_t *mask, int B, int H, int N, int Kc,
                          int mode, double T, float scale) {
    size_t n_all = (size_t)B * H * N * Kc;
    GRID_STRIDE(idx, n_all) {
        int k = (int)(idx % Kc);
        size_t r = idx / Kc;
        int n = (int)(r % N), h = (int)((r / N) % H), b = (int)(r / N / H);
        if (mask && !mask[(size_t)b * N + n]) continue;
        double d = mode == 0 ? -1.0 / (T * ((double)g[idx] + DIV_EPS)) : -1.0 / (T * (part[h * Kc + k] / T + DIV_EPS));
        dg[idx] += scale * (float)d;
    }
}

static long div_rows(const uint8_t *mask, int B, int N) {
    if (!mask) return (long)B * N;
    long t = 0;
    for (long i = 0; i < (long)B * N; i++) t += mask[i] != 0;
    return t;
}

static const uint8_t *div_mask(const uint8_t *mask, int B, int N) {
    if (!mask) return NULL;
    uint8_t *km = (uint8_t *)cuda_ws(8, (size_t)B * N);
    CUDA_CHECK(cudaMemcpy(km, mask, (size_t)B * N, cudaMemcpyHostToDevice));
    return km;
}

double cuda_gma_div_forward(const real *gamma, const uint8_t *rowmask, int B, int H, int N, int Kc, int mode) {
    long T = div_rows(rowmask, B, N);
    if (T == 0 || H * Kc == 0) return 0;
    const uint8_t *km = div_mask(rowmask, B, N);
    double *part = (double *)cuda_ws(7, sizeof(double) * H * Kc);
    k_div_colsum<<<H * Kc, TPB>>>(part, gamma, km, B, H, N, Kc, mode);
    KERNEL_CHECK("k_div_colsum");
    double *host = (double *)malloc(sizeof(double) * H * Kc);
    CUDA_CHECK(cudaMemcpy(host, part, sizeof(double) * H * Kc, cudaMemcpyDeviceToHost));
    double total = 0;
    for (int i = 0; i < H * Kc; i++) total += mode == 0 ? -host[i] / T : -log(host[i] / T + DIV_EPS);
    free(host);
    return total;
}

void cuda_gma_div_backward(real *dgamma, const real *gamma, const uint8_t *rowmask, int B, int H, int N, int Kc, int mode,
                           real scale) {
    long T = div_rows(rowmask, B, N);
    if (T == 0 || H * Kc == 0) return;
    const uint8_t *km = div_mask(rowmask, B, N);
    double *part = (double *)cuda_ws(7, sizeof(double) * H * Kc);
    if (mode == 1) {
        k_div_colsum<<<H * Kc, TPB>>>(part, gamma, km, B, H, N, Kc, 1);
        KERNEL_CHECK("k_div_colsum");
    }
    size_t n = (size_t)B * H * N * Kc;
    k_div_bwd<<<grid_for(n), TPB>>>(dgamma, gamma, part, km, B, H, N, Kc, mode, (double)T, scale);
    KERNEL_CHECK("k_div_bwd");
}
