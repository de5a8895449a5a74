/* cuda_gma_route.cu: GMA Gaussian routing (docs/model.md §3.2) on the GPU, twin of
 * ops/cpu/cpu_gma_route.c; the Dirichlet prior's gradient (§4.1) at the end.
 *
 * Per parameter set (head, or one when shared): sigma2 = softplus(var_raw) + var_floor,
 * P = 1/sigma2, M = mu P, cst_k = log_softmax(prior)_k - 1/2 sum_d (mu^2 P + log sigma2).
 * Forward, fused: one warp per row x computes l_k = cst_k + sum_d x_d (M_kd - x_d P_kd / 2)
 * for its components (lanes over k, P and M stored transposed so the loads coalesce), then
 * the softmax of l / tau in the same warp; the log-densities never leave registers.
 * Backward: one warp per row forms dl = gamma (dgamma - <gamma, dgamma>) / tau and
 * dx += dl M - x (dl P); the parameter gradients are strided-batched GEMMs per (batch,
 * head) block (dM = dl^T x, dP = -1/2 dl^T x^2) reduced over blocks in a fixed order and
 * chained to mu, var_raw and prior. No atomics: deterministic. */
#include "ops/cuda/cuda_common.cuh"

#define WS_DL 0   /* dl [BH, N, Kc] */
#define WS_X2 1   /* x^2 [BH, N, d] */
#define WS_PART 2 /* dM, dP per block [2, BH, Kc, d] */
#define WS_PRE 3  /* P, M, PT, MT [Hp, Kc, d] each, cst [Hp, Kc] */
#define WS_DC 4   /* dc [Hp, Kc], then mx, sum exp, sum dc per set */

__device__ __forceinline__ float softplusf(float s) { return s > 20.f ? s : log1pf(expf(s)); }
__device__ __forceinline__ float sigmoidf(float s) { return 1.f / (1.f + expf(-s)); }

/* block (set, group of 8 components): the set's log-sum-exp of the prior over the block's
 * threads (fixed reduction tree), then one warp per component, lanes over the width */
#define PREP_WARPS 8
__global__ void k_route_prep(float *P, float *M, float *PT, float *MT, float *cst, const float *mu,
                             const float *var_raw, const float *prior, int Hp, int d, int Kc, float var_floor) {
    __shared__ float shm[32];
    __shared__ double shs[32];
    int h = blockIdx.y, lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const float *a = prior + (size_t)h * Kc;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < Kc; j += blockDim.x) mx = fmaxf(mx, a[j]);
    mx = block_max(mx, shm);
    double s = 0;
    for (int j = threadIdx.x; j < Kc; j += blockDim.x) s += exp((double)(a[j] - mx));
    s = block_sum(s, shs);
    float lse = mx + (float)log(s);
    int k = blockIdx.x * PREP_WARPS + w;
    if (k >= Kc) return;
    double c = 0;
    for (int e = lane; e < d; e += 32) {
        size_t o = ((size_t)h * Kc + k) * d + e, ot = ((size_t)h * d + e) * Kc + k;
        float s2 = softplusf(var_raw[o]) + var_floor, p = 1.f / s2, m = mu[o] * p;
        P[o] = p;
        M[o] = m;
        PT[ot] = p;
        MT[ot] = m;
        c += (double)mu[o] * mu[o] * p + log((double)s2);
    }
    c = warp_sum(c);
    if (lane == 0) cst[(size_t)h * Kc + k] = a[k] - lse - (float)(0.5 * c);
}

struct RoutePre {
    float *P, *M, *PT, *MT, *cst;
};
static RoutePre prep(const float *mu, const float *var_raw, const float *prior, int Hp, int d, int Kc,
                     float var_floor) {
    size_t n = (size_t)Hp * Kc * d;
    float *w = ws_f(WS_PRE, 4 * n + (size_t)Hp * Kc);
    RoutePre r = {w, w + n, w + 2 * n, w + 3 * n, w + 4 * n};
    dim3 grid((Kc + PREP_WARPS - 1) / PREP_WARPS, Hp);
    k_route_prep<<<grid, PREP_WARPS * 32>>>(r.P, r.M, r.PT, r.MT, r.cst, mu, var_raw, prior, Hp, d, Kc, var_floor);
    KERNEL_CHECK("k_route_prep");
    return r;
}

/* one warp per row of x [B,H,N,d] -> gamma row [Kc]; shared: one x row per warp */
__global__ void k_route_fwd(float *gamma, const float *x, const float *PT, const float *MT, const float *cst,
                            size_t rows, int H, int N, int d, int Kc, float inv_tau, int shared) {
    extern __shared__ float sx[];
    int wib = threadIdx.x / 32, lane = threadIdx.x & 31;
    float *xs = sx + (size_t)wib * d;
    for (size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + wib; row < rows;
         row += (size_t)gridDim.x * (blockDim.x / 32)) {
        int hp = shared ? 0 : (int)((row / N) % H);
        __syncwarp();
        for (int e = lane; e < d; e += 32) xs[e] = x[row * d + e];
        __syncwarp();
        const float *pt = PT + (size_t)hp * d * Kc, *mt = MT + (size_t)hp * d * Kc, *c = cst + (size_t)hp * Kc;
        float *g = gamma + row * Kc;
        float mx = -INFINITY;
        for (int k = lane; k < Kc; k += 32) {
            float acc = 0;
            for (int e = 0; e < d; e++) {
                float xe = xs[e];
                acc += xe * (mt[(size_t)e * Kc + k] - 0.5f * xe * pt[(size_t)e * Kc + k]);
            }
            float l = (acc + c[k]) * inv_tau;
            g[k] = l;
            mx = fmaxf(mx, l);
        }
        mx = warp_max(mx);
        float s = 0;
        for (int k = lane; k < Kc; k += 32) {
            float ex = expf(g[k] - mx);
            g[k] = ex;
            s += ex;
        }
        float inv = 1.f / warp_sum(s);
        for (int k = lane; k < Kc; k += 32) g[k] *= inv;
    }
}

static int rows_blocks(size_t rows, int warps) {
    size_t b = (rows + warps - 1) / warps;
    return (int)(b > 65535u * 16u ? 65535u * 16u : b);
}

void cuda_gma_route_forward(real *gamma, const real *x, const real *mu, const real *var_raw, const real *prior, int B,
                            int H, int N, int d, int Kc, real tau, real var_floor, int shared) {
    size_t rows = (size_t)B * H * N;
    if (!rows) return;
    int Hp = shared ? 1 : H;
    RoutePre r = prep(mu, var_raw, prior, Hp, d, Kc, var_floor);
    const int warps = 4;
    size_t shm = (size_t)warps * d * sizeof(float);
    if (shm > 48 * 1024) cuda_fail(__FILE__, __LINE__, "cuda_gma_route_forward", "head width d too large (d > 3072)");
    k_route_fwd<<<rows_blocks(rows, warps), warps * 32, shm>>>(gamma, x, r.PT, r.MT, r.cst, rows, H, N, d, Kc,
                                                                 1.f / tau, shared);
    KERNEL_CHECK("k_route_fwd");
}

/* one warp per row: dl = gamma (dgamma - <gamma, dgamma>) / tau ; dx += dl M - x (dl P) ; x2 = x^2 */
__global__ void k_route_bwd_rows(float *dl, float *x2, float *dx, const float *dgamma, const float *gamma,
                                 const float *x, const float *P, const float *M, size_t rows, int H, int N, int d,
                                 int Kc, float inv_tau, int shared) {
    int wib = threadIdx.x / 32, lane = threadIdx.x & 31;
    for (size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + wib; row < rows;
         row += (size_t)gridDim.x * (blockDim.x / 32)) {
        int hp = shared ? 0 : (int)((row / N) % H);
        const float *g = gamma + row * Kc, *dg = dgamma + row * Kc;
        float *dlr = dl + row * Kc;
        float dot = 0;
        for (int k = lane; k < Kc; k += 32) dot += g[k] * dg[k];
        dot = warp_sum(dot);
        for (int k = lane; k < Kc; k += 32) dlr[k] = g[k] * (dg[k] - dot) * inv_tau;
        __syncwarp();
        const float *Ph = P + (size_t)hp * Kc * d, *Mh = M + (size_t)hp * Kc * d;
        for (int e = lane; e < d; e += 32) {
            float xe = x[row * d + e], a = 0;
            for (int k = 0; k < Kc; k++) a += dlr[k] * (Mh[(size_t)k * d + e] - xe * Ph[(size_t)k * d + e]);
            x2[row * d + e] = xe * xe;
            dx[row * d + e] += a;
        }
        __syncwarp();
    }
}

/* dc[hp,k] = sum over the set's rows of dl: block (32 components, set), lanes over the
 * components, warp w over the set's rows w, w + 32, ... (in order), the warps' partial sums
 * added in order */
#define DC_WARPS 32
__global__ void k_route_dc(float *dc, const float *dl, int B, int H, int N, int Kc, int Hp, int shared) {
    __shared__ double part[DC_WARPS][32];
    int hp = blockIdx.y, lane = threadIdx.x & 31, w = threadIdx.x >> 5, k = blockIdx.x * 32 + lane;
    size_t nrows = (size_t)(shared ? B * H : B) * N;
    double s = 0;
    if (k < Kc)
        for (size_t i = w; i < nrows; i += DC_WARPS) {
            size_t bh = shared ? i / N : (i / N) * H + hp, n = i % N;
            s += dl[(bh * N + n) * Kc + k];
        }
    part[w][lane] = s;
    __syncthreads();
    if (w == 0 && k < Kc) {
        double t = 0;
        for (int j = 0; j < DC_WARPS; j++) t += part[j][lane];
        dc[(size_t)hp * Kc + k] = (float)t;
    }
}

/* per set, one warp: max prior, sum exp(prior - max), sum dc (fixed reduction tree) */
__global__ void k_route_scalars(float *sc, const float *dc, const float *prior, int Hp, int Kc) {
    int hp = blockIdx.x, lane = threadIdx.x;
    const float *a = prior + (size_t)hp * Kc, *c = dc + (size_t)hp * Kc;
    float mx = -INFINITY;
    for (int k = lane; k < Kc; k += 32) mx = fmaxf(mx, a[k]);
    mx = warp_max(mx);
    double s = 0, sdc = 0;
    for (int k = lane; k < Kc; k += 32) s += exp((double)(a[k] - mx)), sdc += c[k];
    s = warp_sum(s);
    sdc = warp_sum(sdc);
    if (lane == 0) {
        sc[3 * hp] = mx;
        sc[3 * hp + 1] = (float)s;
        sc[3 * hp + 2] = (float)sdc;
    }
}

/* one thread per (set, k, e): reduce the blocks' dM, dP in order and chain to mu, var_raw
 * (and, for e == 0, prior) */
__global__ void k_route_params(float *dmu, float *dvar_raw, float *dprior, const float *dMp, const float *dPp,
                               const float *dc, const float *sc, const float *mu, const float *var_raw,
                               const float *prior, int B, int H, int Kc, int d, int Hp, int shared, float var_floor) {
    GRID_STRIDE(idx, (size_t)Hp * Kc * d) {
        int e = (int)(idx % d);
        size_t hk = idx / d;
        int k = (int)(hk % Kc), hp = (int)(hk / Kc);
        size_t ko = (size_t)k * d + e, blk = (size_t)Kc * d;
        double dM = 0, dP = 0;
        for (int bh = 0; bh < B * H; bh++) {
            if (!shared && bh % H != hp) continue;
            dM += dMp[bh * blk + ko];
            dP += dPp[bh * blk + ko];
        }
        float dck = dc[hk];
        if (e == 0) {
            float pk = (float)(exp((double)(prior[hk] - sc[3 * hp])) / sc[3 * hp + 1]);
            dprior[hk] += dck - pk * sc[3 * hp + 2];
        }
        float s2 = softplusf(var_raw[idx]) + var_floor, p = 1.f / s2, m = mu[idx];
        dmu[idx] += (float)dM * p - dck * m * p;
        float dPt = (float)dP + (float)dM * m - 0.5f * dck * m * m;
        float ds2 = -dPt * p * p - 0.5f * dck * p;
        dvar_raw[idx] += ds2 * sigmoidf(var_raw[idx]);
    }
}

void cuda_gma_route_backward(real *dx, real *dmu, real *dvar_raw, real *dprior, const real *dgamma,
                             const real *gamma, const real *x, const real *mu, const real *var_raw, const real *prior,
                             int B, int H, int N, int d, int Kc, real tau, real var_floor, int shared) {
    size_t rows = (size_t)B * H * N;
    if (!rows) return;
    int Hp = shared ? 1 : H, BH = B * H;
    RoutePre r = prep(mu, var_raw, prior, Hp, d, Kc, var_floor);
    float *dl = ws_f(WS_DL, rows * Kc), *x2 = ws_f(WS_X2, rows * d);
    const int warps = 8;
    k_route_bwd_rows<<<rows_blocks(rows, warps), warps * 32>>>(dl, x2, dx, dgamma, gamma, x, r.P, r.M, rows, H, N, d,
                                                                Kc, 1.f / tau, shared);
    KERNEL_CHECK("k_route_bwd_rows");
    size_t blk = (size_t)Kc * d;
    float *dMp = ws_f(WS_PART, 2 * (size_t)BH * blk), *dPp = dMp + (size_t)BH * blk;
    cuda_gemm_strided(dMp, dl, x, Kc, d, N, 1, 0, 1, 0, BH, (long long)N * Kc, (long long)N * d, (long long)blk);
    cuda_gemm_strided(dPp, dl, x2, Kc, d, N, 1, 0, -0.5f, 0, BH, (long long)N * Kc, (long long)N * d, (long long)blk);
    float *dc = ws_f(WS_DC, (size_t)Hp * Kc + 3 * (size_t)Hp), *sc = dc + (size_t)Hp * Kc;
    k_route_dc<<<dim3((Kc + 31) / 32, Hp), DC_WARPS * 32>>>(dc, dl, B, H, N, Kc, Hp, shared);
    KERNEL_CHECK("k_route_dc");
    k_route_scalars<<<Hp, 32>>>(sc, dc, prior, Hp, Kc);
    KERNEL_CHECK("k_route_scalars");
    k_route_params<<<grid_for((size_t)Hp * blk), TPB>>>(dmu, dvar_raw, dprior, dMp, dPp, dc, sc, mu, var_raw, prior, B,
                                                         H, Kc, d, Hp, shared, var_floor);
    KERNEL_CHECK("k_route_params");
}

/* the Dirichlet prior's gradient, one thread per parameter set (Hp is a few heads; the
 * prior logits stay on the device), the CPU's arithmetic in double */
__global__ void k_dirichlet(float *dl, const float *l, int Hp, int Kc, double c, float live_above) {
    GRID_STRIDE(h, (size_t)Hp) {
        const float *lh = l + h * Kc;
        float *gh = dl + h * Kc;
        double mx = lh[0], sum = 0;
        int live = 0;
        for (int k = 1; k < Kc; k++) mx = fmax(mx, (double)lh[k]);
        for (int k = 0; k < Kc; k++) sum += exp(lh[k] - mx), live += lh[k] > live_above;
        for (int k = 0; k < Kc; k++) gh[k] += (float)(c * ((lh[k] > live_above) - live * exp(lh[k] - mx) / sum));
    }
}
void cuda_gma_dirichlet_backward(real *dl, const real *l, int Hp, int Kc, double c, real live_above) {
    if (Hp <= 0 || Kc <= 0) return;
    k_dirichlet<<<grid_for((size_t)Hp, 32), 32>>>(dl, l, Hp, Kc, c, live_above);
    KERNEL_CHECK("k_dirichlet");
}
