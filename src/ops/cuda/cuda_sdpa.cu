/* cuda_sdpa.cu: tiled softmax attention (online softmax, FlashAttention-style; docs/model.md
 * §3.5) on the GPU, twin of ops/cpu/cpu_sdpa.c with its arguments: q, k, v, out [B,H,N,d],
 * lse [B,H,N] (-inf and a zero output for a row that sees no key), kbias [B,N] additive key
 * bias or NULL, causal hides j > i, window W > 0 the band of §3.5, drop the attention dropout
 * (§8) or NULL; and its decoding step. No N x N buffer exists: extra memory O(B H N). No
 * atomics, every sum in a fixed order and one writer per output row, so results repeat bit
 * for bit. Head width d <= 256 (AT_DT_MAX = 8 registers per lane per row); a larger d stops
 * with a message. */
#include <stdio.h>

#include "ops/cuda/cuda_common.cuh"

#define AT_Q 32 /* rows per block (queries in forward/dQ, keys in dK/dV) */
#define AT_K 32 /* streamed tile rows = warp width */
#define AT_WARPS 8
#define AT_RPW (AT_Q / AT_WARPS) /* rows per warp */
#define AT_DT_MAX 8
#define WS_ATT_D 4 /* D = rowsum(dO * O) [B*H*N] */

static void at_check(int d) {
    if (d > 32 * AT_DT_MAX) {
        char msg[128];
        snprintf(msg, sizeof msg, "head width d = %d: the CUDA attention kernels support d <= %d", d, 32 * AT_DT_MAX);
        cuda_fail(__FILE__, __LINE__, "attn", msg);
    }
}

/* load rows [j0, j0+L) of a [N,d] matrix into a tile of `rows` rows in sh (row stride ld:
 * d for a block's own rows, d + 1 for a streamed tile), zero rows past L */
__device__ __forceinline__ void load_tile(float *sh, int rows, int ld, const float *src, int j0, int L, int d) {
    for (int i = threadIdx.x; i < rows * d; i += blockDim.x) {
        int r = i / d, e = i % d;
        sh[r * ld + e] = r < L ? src[(size_t)(j0 + r) * d + e] : 0.f;
    }
}

/* the next key/value tile (rows [j0, j0+L)) into Ks, Vs, between two barriers: the
 * previous tile is no longer read before, the new one is complete after */
__device__ __forceinline__ void stream_kv(float *Ks, float *Vs, int ld, const float *k, const float *v, int j0, int L,
                                          int d) {
    __syncthreads();
    load_tile(Ks, AT_K, ld, k, j0, L, d);
    load_tile(Vs, AT_K, ld, v, j0, L, d);
    __syncthreads();
}

/* additive bias of key j: kb[j] (0 without kb) when the key exists, else -inf */
__device__ __forceinline__ float kbias_at(const float *kb, int j, int exists) {
    return exists ? (kb ? kb[j] : 0.f) : -INFINITY;
}

/* s = a . b and t = c . g over d columns (one pass, two independent sums) */
__device__ __forceinline__ void dot2(float &s, float &t, const float *a, const float *b, const float *c, const float *g,
                                     int d) {
    s = 0, t = 0;
    for (int e = 0; e < d; e++) s += a[e] * b[e], t += c[e] * g[e];
}

/* the band of keys query i sees, [band_lo, band_hi), and the queries that see key j,
 * [query_lo, query_hi) (window 0: no band): W > 0 gives i-W+1..i causal, i-W+1..i+W-1
 * bidirectional. A query block streams only the key tiles from its first row's band_lo to
 * its last row's band_hi, a key block only the query tiles that see its keys (O(N W) work);
 * attn_score masks the boundary tiles. */
__device__ __forceinline__ int band_lo(int i, int window) { return window ? max(0, i - window + 1) : 0; }
__device__ __forceinline__ int band_hi(int i, int N, int causal, int window) {
    return causal ? i + 1 : window ? min(N, i + window) : N;
}
__device__ __forceinline__ int query_lo(int j, int causal, int window) {
    return causal ? j : window ? max(0, j - window + 1) : 0;
}
__device__ __forceinline__ int query_hi(int j, int N, int window) { return window ? min(N, j + window) : N; }
/* 1 when query i sees key j */
__device__ __forceinline__ int attn_visible(int i, int j, int N, int causal, int window) {
    return j >= band_lo(i, window) && j < band_hi(i, N, causal, window);
}

/* score of query i and key j from their dot product qk: scale qk + key bias, -inf where
 * causal or the window hides j */
__device__ __forceinline__ float attn_score(float qk, float scale, float kbj, int N, int causal, int window, int i,
                                            int j) {
    float s = qk * scale + kbj;
    return attn_visible(i, j, N, causal, window) ? s : -INFINITY;
}

/* the dropout multiplier of probability (bh, i, j) (docs/model.md §8): the lane that computes
 * the probability of key j also computes its multiplier from ops/dropout.h (the CPU's bits),
 * so the forward accumulates P * mask / (1 - p) into the output while l sums the undropped P;
 * the backward regenerates the multipliers: dS = P (mask dP' - D), dV += (P mask)^T dO */
__device__ __forceinline__ float drop_mul(const GmaDrop &g, int bh, int H, int N, int i, int j) {
    return (float)gma_drop_mult(&g, gma_drop_attn_index(&g, bh / H, bh % H, H, N, i, j));
}

/* a lane's share of a head-width row in registers: acc[t] holds column lane + 32 t */
template <int DT> __device__ __forceinline__ void lane_axpy(float (&acc)[DT], float a, const float *row, int lane, int d) {
#pragma unroll
    for (int t = 0; t < DT; t++) {
        int e = lane + 32 * t;
        if (e < d) acc[t] += a * row[e];
    }
}
/* row = s acc (add = 0) or row += s acc (add = 1), this lane's columns */
template <int DT>
__device__ __forceinline__ void lane_put(float *row, const float (&acc)[DT], float s, int add, int lane, int d) {
#pragma unroll
    for (int t = 0; t < DT; t++) {
        int e = lane + 32 * t;
        if (e < d) row[e] = (add ? row[e] : 0.f) + s * acc[t];
    }
}

/* ---------------------------------------------------------------- forward */
/* One block per (batch*head, tile of AT_Q query rows), AT_WARPS warps, each owning AT_RPW of
 * the tile's rows. Key/value tiles of AT_K rows stream through shared memory (rows padded to
 * d+1 floats, so lane j reading key j is free of bank conflicts); lane j computes the score
 * of key j, the warp keeps each row's running max and sum, and lane e holds output columns
 * e, e+32, ... of the unnormalised output in registers. At the end out = acc / l and
 * lse = m + log l. shared: Q [AT_Q][d], K [AT_K][d+1], V [AT_K][d+1] */
template <int DT>
__global__ void __launch_bounds__(AT_WARPS * 32) k_attn_fwd(float *out, float *lse, const float *q, const float *k,
                                                             const float *v, const float *kbias, int H, int N, int d,
                                                             int causal, int window, float scale, GmaDrop dg,
                                                             int don) {
    extern __shared__ float sm[];
    float *Qs = sm, *Ks = Qs + AT_Q * d, *Vs = Ks + AT_K * (d + 1);
    int bh = blockIdx.y, b = bh / H, i0 = blockIdx.x * AT_Q, Lq = min(AT_Q, N - i0);
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31, ld = d + 1;
    size_t base = (size_t)bh * N * d;
    const float *kb = kbias ? kbias + (size_t)b * N : NULL;
    load_tile(Qs, AT_Q, d, q + base, i0, Lq, d);
    float acc[AT_RPW][DT], m[AT_RPW], l[AT_RPW];
#pragma unroll
    for (int rr = 0; rr < AT_RPW; rr++) {
        m[rr] = -INFINITY, l[rr] = 0;
#pragma unroll
        for (int t = 0; t < DT; t++) acc[rr][t] = 0;
    }
    int jend = band_hi(i0 + Lq - 1, N, causal, window);
    for (int j0 = band_lo(i0, window); j0 < jend; j0 += AT_K) {
        int Lk = min(AT_K, jend - j0), j = j0 + lane;
        stream_kv(Ks, Vs, ld, k + base, v + base, j0, Lk, d);
        float kbj = kbias_at(kb, j, lane < Lk);
#pragma unroll
        for (int rr = 0; rr < AT_RPW; rr++) {
            int r = w * AT_RPW + rr, i = i0 + r;
            if (r >= Lq) continue; /* warp-uniform */
            const float *qr = Qs + r * d, *kr = Ks + lane * ld;
            float qk = 0;
            for (int e = 0; e < d; e++) qk += qr[e] * kr[e];
            float s = attn_score(qk, scale, kbj, N, causal, window, i, j);
            float mnew = fmaxf(m[rr], warp_max(s));
            if (mnew == -INFINITY) continue; /* nothing visible yet (warp-uniform) */
            float alpha = expf(m[rr] - mnew), p = expf(s - mnew);
            l[rr] = l[rr] * alpha + warp_sum(p);
            m[rr] = mnew;
#pragma unroll
            for (int t = 0; t < DT; t++) acc[rr][t] *= alpha;
            if (don && lane < Lk) p *= drop_mul(dg, bh, H, N, i, j);
            for (int jj = 0; jj < Lk; jj++) {
                float pj = __shfl_sync(0xffffffffu, p, jj);
                lane_axpy(acc[rr], pj, Vs + jj * ld, lane, d);
            }
        }
    }
#pragma unroll
    for (int rr = 0; rr < AT_RPW; rr++) {
        int r = w * AT_RPW + rr;
        if (r >= Lq) continue;
        size_t row = (size_t)bh * N + i0 + r;
        lane_put(out + row * d, acc[rr], l[rr] > 0 ? 1.f / l[rr] : 0.f, 0, lane, d);
        if (lane == 0) lse[row] = l[rr] > 0 ? m[rr] + logf(l[rr]) : -INFINITY;
    }
}

/* ---------------------------------------------------------------- backward */
/* D = rowsum(dO * O) first; then the dQ pass per (head, query tile) as the forward,
 * recomputing P = exp(s - lse) and dS = P (dO V^T - D) tile by tile, dQ += scale dS K; and
 * the dK/dV pass per (head, key tile), streaming the query tiles (q, dO, lse, D):
 * dV += P^T dO, dK += scale dS^T Q. */
/* D[row] = sum_e dout[row, e] out[row, e]; one warp per row */
__global__ void k_attn_drow(float *D, const float *dout, const float *out, size_t R, int d) {
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= R) return;
    float s = 0;
    for (int e = lane; e < d; e += 32) s += dout[row * d + e] * out[row * d + e];
    s = warp_sum(s);
    if (lane == 0) D[row] = s;
}

/* dQ: per (bh, query tile). shared: Q [AT_Q][d], dO [AT_Q][d], K, V [AT_K][d+1] */
template <int DT>
__global__ void __launch_bounds__(AT_WARPS * 32) k_attn_bwd_dq(float *dq, const float *dout, const float *lse,
                                                                const float *Drow, const float *q, const float *k,
                                                                const float *v, const float *kbias, int H, int N,
                                                                int d, int causal, int window, float scale, GmaDrop dg,
                                                                int don) {
    extern __shared__ float sm[];
    float *Qs = sm, *dOs = Qs + AT_Q * d, *Ks = dOs + AT_Q * d, *Vs = Ks + AT_K * (d + 1);
    int bh = blockIdx.y, b = bh / H, i0 = blockIdx.x * AT_Q, Lq = min(AT_Q, N - i0);
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31, ld = d + 1;
    size_t base = (size_t)bh * N * d;
    const float *kb = kbias ? kbias + (size_t)b * N : NULL;
    load_tile(Qs, AT_Q, d, q + base, i0, Lq, d);
    load_tile(dOs, AT_Q, d, dout + base, i0, Lq, d);
    float acc[AT_RPW][DT], ls[AT_RPW], Dr[AT_RPW];
#pragma unroll
    for (int rr = 0; rr < AT_RPW; rr++) {
        int r = w * AT_RPW + rr;
        size_t row = (size_t)bh * N + i0 + r;
        ls[rr] = r < Lq ? lse[row] : -INFINITY;
        Dr[rr] = r < Lq ? Drow[row] : 0.f;
#pragma unroll
        for (int t = 0; t < DT; t++) acc[rr][t] = 0;
    }
    int jend = band_hi(i0 + Lq - 1, N, causal, window);
    for (int j0 = band_lo(i0, window); j0 < jend; j0 += AT_K) {
        int Lk = min(AT_K, jend - j0), j = j0 + lane;
        stream_kv(Ks, Vs, ld, k + base, v + base, j0, Lk, d);
        float kbj = kbias_at(kb, j, lane < Lk);
#pragma unroll
        for (int rr = 0; rr < AT_RPW; rr++) {
            int r = w * AT_RPW + rr, i = i0 + r;
            if (r >= Lq || ls[rr] == -INFINITY) continue; /* warp-uniform; P = 0 */
            float qk, dp;
            dot2(qk, dp, Qs + r * d, Ks + lane * ld, dOs + r * d, Vs + lane * ld, d);
            float s = attn_score(qk, scale, kbj, N, causal, window, i, j);
            float mk = don && lane < Lk ? drop_mul(dg, bh, H, N, i, j) : 1.f;
            float p = expf(s - ls[rr]), ds = p * (mk * dp - Dr[rr]);
            for (int jj = 0; jj < Lk; jj++) {
                float dsj = __shfl_sync(0xffffffffu, ds, jj);
                lane_axpy(acc[rr], dsj, Ks + jj * ld, lane, d);
            }
        }
    }
#pragma unroll
    for (int rr = 0; rr < AT_RPW; rr++) {
        int r = w * AT_RPW + rr;
        if (r >= Lq) continue;
        size_t row = (size_t)bh * N + i0 + r;
        lane_put(dq + row * d, acc[rr], scale, 1, lane, d);
    }
}

/* dK, dV: per (bh, key tile of AT_Q keys); warps own keys, lanes index the streamed
 * queries. shared: K [AT_Q][d], V [AT_Q][d], Q, dO [AT_K][d+1], lse, D [AT_K] */
template <int DT>
__global__ void __launch_bounds__(AT_WARPS * 32) k_attn_bwd_dkv(float *dk, float *dv, const float *dout,
                                                                 const float *lse, const float *Drow, const float *q,
                                                                 const float *k, const float *v, const float *kbias,
                                                                 int H, int N, int d, int causal, int window,
                                                                 float scale, GmaDrop dg, int don) {
    extern __shared__ float sm[];
    float *Ksh = sm, *Vsh = Ksh + AT_Q * d, *Qs = Vsh + AT_Q * d, *dOs = Qs + AT_K * (d + 1);
    float *lss = dOs + AT_K * (d + 1), *Ds = lss + AT_K;
    int bh = blockIdx.y, b = bh / H, j0 = blockIdx.x * AT_Q, Lk = min(AT_Q, N - j0);
    int w = threadIdx.x >> 5, lane = threadIdx.x & 31, ld = d + 1;
    size_t base = (size_t)bh * N * d;
    const float *kb = kbias ? kbias + (size_t)b * N : NULL;
    load_tile(Ksh, AT_Q, d, k + base, j0, Lk, d);
    load_tile(Vsh, AT_Q, d, v + base, j0, Lk, d);
    float adk[AT_RPW][DT], adv[AT_RPW][DT], kbr[AT_RPW];
#pragma unroll
    for (int rr = 0; rr < AT_RPW; rr++) {
        int r = w * AT_RPW + rr;
        kbr[rr] = kbias_at(kb, j0 + r, r < Lk);
#pragma unroll
        for (int t = 0; t < DT; t++) adk[rr][t] = 0, adv[rr][t] = 0;
    }
    /* only the query rows that see some of these keys (causal: i >= j0) */
    int qend = query_hi(j0 + Lk - 1, N, window);
    for (int q0 = query_lo(j0, causal, window); q0 < qend; q0 += AT_K) {
        int Lq = min(AT_K, qend - q0);
        __syncthreads();
        load_tile(Qs, AT_K, ld, q + base, q0, Lq, d);
        load_tile(dOs, AT_K, ld, dout + base, q0, Lq, d);
        if (threadIdx.x < AT_K) {
            int r = threadIdx.x;
            lss[r] = r < Lq ? lse[(size_t)bh * N + q0 + r] : -INFINITY;
            Ds[r] = r < Lq ? Drow[(size_t)bh * N + q0 + r] : 0.f;
        }
        __syncthreads();
        int i = q0 + lane;
        float li = lss[lane], Di = Ds[lane];
#pragma unroll
        for (int rr = 0; rr < AT_RPW; rr++) {
            int r = w * AT_RPW + rr, j = j0 + r;
            if (r >= Lk || kbr[rr] == -INFINITY) continue; /* warp-uniform: a hidden key gets no gradient */
            float s, dp;
            dot2(s, dp, Qs + lane * ld, Ksh + r * d, dOs + lane * ld, Vsh + r * d, d);
            s = s * scale + kbr[rr];
            float p = (lane < Lq && li != -INFINITY && attn_visible(i, j, N, causal, window)) ? expf(s - li) : 0.f;
            float mk = don && p != 0.f ? drop_mul(dg, bh, H, N, i, j) : 1.f;
            float ds = p * (mk * dp - Di);
            p *= mk;
            for (int ii = 0; ii < Lq; ii++) {
                float pi = __shfl_sync(0xffffffffu, p, ii), dsi = __shfl_sync(0xffffffffu, ds, ii);
                lane_axpy(adv[rr], pi, dOs + ii * ld, lane, d);
                lane_axpy(adk[rr], dsi, Qs + ii * ld, lane, d);
            }
        }
    }
#pragma unroll
    for (int rr = 0; rr < AT_RPW; rr++) {
        int r = w * AT_RPW + rr;
        if (r >= Lk) continue;
        size_t row = (size_t)bh * N + j0 + r;
        lane_put(dv + row * d, adv[rr], 1.f, 1, lane, d);
        lane_put(dk + row * d, adk[rr], scale, 1, lane, d);
    }
}

/* ---------------------------------------------------------------- launch */
static size_t shm_fwd(int d) { return ((size_t)AT_Q * d + 2 * (size_t)AT_K * (d + 1)) * sizeof(float); }
static size_t shm_dq(int d) { return (2 * (size_t)AT_Q * d + 2 * (size_t)AT_K * (d + 1)) * sizeof(float); }
static size_t shm_dkv(int d) { return (2 * (size_t)AT_Q * d + 2 * (size_t)AT_K * (d + 1) + 2 * AT_K) * sizeof(float); }

/* kernels needing more than the default 48 KiB of shared memory must opt in (once) */
template <class K> static void allow_shm(K kern, size_t bytes) {
    if (bytes > 48 * 1024) CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

template <int DT>
static void fwd_t(real *out, real *lse, const real *q, const real *k, const real *v, const real *kbias, int BH, int H,
                  int N, int d, int causal, int window, real scale, const GmaDrop &dg, int don) {
    size_t shm = shm_fwd(d);
    allow_shm(k_attn_fwd<DT>, shm);
    k_attn_fwd<DT><<<dim3((N + AT_Q - 1) / AT_Q, BH), AT_WARPS * 32, shm>>>(out, lse, q, k, v, kbias, H, N, d, causal,
                                                                            window, scale, dg, don);
    KERNEL_CHECK("k_attn_fwd");
}

template <int DT>
static void bwd_t(real *dq, real *dk, real *dv, const real *dout, const real *lse, const real *D, const real *q,
                  const real *k, const real *v, const real *kbias, int BH, int H, int N, int d, int causal,
                  int window, real scale, const GmaDrop &dg, int don) {
    size_t s1 = shm_dq(d), s2 = shm_dkv(d);
    allow_shm(k_attn_bwd_dq<DT>, s1);
    allow_shm(k_attn_bwd_dkv<DT>, s2);
    dim3 grid((N + AT_Q - 1) / AT_Q, BH);
    k_attn_bwd_dq<DT><<<grid, AT_WARPS * 32, s1>>>(dq, dout, lse, D, q, k, v, kbias, H, N, d, causal, window, scale, dg,
                                                   don);
    KERNEL_CHECK("k_attn_bwd_dq");
    k_attn_bwd_dkv<DT><<<grid, AT_WARPS * 32, s2>>>(dk, dv, dout, lse, D, q, k, v, kbias, H, N, d, causal, window, scale,
                                                   dg, don);
    KERNEL_CHECK("k_attn_bwd_dkv");
}

void cuda_attn_forward(real *out, real *lse, const real *q, const real *k, const real *v, const real *kbias, int B,
                       int H, int N, int d, int causal, int window, real scale, const GmaDrop *drop) {
    int BH = B * H;
    GmaDrop dg = drop ? *drop : GmaDrop{};
    int don = drop != NULL;
    if (BH <= 0 || N <= 0 || d <= 0) return;
    at_check(d);
    int dt = (d + 31) / 32;
    if (dt <= 1) fwd_t<1>(out, lse, q, k, v, kbias, BH, H, N, d, causal, window, scale, dg, don);
    else if (dt <= 2) fwd_t<2>(out, lse, q, k, v, kbias, BH, H, N, d, causal, window, scale, dg, don);
    else if (dt <= 4) fwd_t<4>(out, lse, q, k, v, kbias, BH, H, N, d, causal, window, scale, dg, don);
    else fwd_t<8>(out, lse, q, k, v, kbias, BH, H, N, d, causal, window, scale, dg, don);
}

void cuda_attn_backward(real *dq, real *dk, real *dv, const real *dout, const real *out, const real *lse,
                        const real *q, const real *k, const real *v, const real *kbias, int B, int H, int N, int d,
                        int causal, int window, real scale, const GmaDrop *drop) {
    int BH = B * H;
    GmaDrop dg = drop ? *drop : GmaDrop{};
    int don = drop != NULL;
    if (BH <= 0 || N <= 0 || d <= 0) return;
    at_check(d);
    size_t R = (size_t)BH * N;
    float *D = ws_f(WS_ATT_D, R);
    k_attn_drow<<<(unsigned)((R + 7) / 8), 256>>>(D, dout, out, R, d);
    KERNEL_CHECK("k_attn_drow");
    int dt = (d + 31) / 32;
    if (dt <= 1) bwd_t<1>(dq, dk, dv, dout, lse, D, q, k, v, kbias, BH, H, N, d, causal, window, scale, dg, don);
    else if (dt <= 2) bwd_t<2>(dq, dk, dv, dout, lse, D, q, k, v, kbias, BH, H, N, d, causal, window, scale, dg, don);
    else if (dt <= 4) bwd_t<4>(dq, dk, dv, dout, lse, D, q, k, v, kbias, BH, H, N, d, causal, window, scale, dg, don);
    else bwd_t<8>(dq, dk, dv, dout, lse, D, q, k, v, kbias, BH, H, N, d, causal, window, scale, dg, don);
}

/* One decoding token (attn_step): a block per (sequence, head). The first d threads write
 * k, v into row pos of the cache (row pos mod Nmax past its end: a ring); each thread then scores keys j = t, t + blockDim, ...
 * (a key row a thread), the block takes the max and the sum of exp, and each thread owns
 * value columns, reading every row of them (coalesced across threads). */
__global__ void k_attn_step(float *out, float *state, size_t state_stride, const float *q, const float *k,
                            const float *v, int H, int d, int Nmax, int pos, float scale) {
    __shared__ float sh[32];
    int bh = blockIdx.x, b = bh / H, h = bh % H, n = min(pos + 1, Nmax), slot = pos % Nmax;
    size_t hk = (size_t)Nmax * d;
    float *st = state + (size_t)b * state_stride;
    float *K = st + h * hk, *V = st + (size_t)H * hk + h * hk, *P = st + 2 * (size_t)H * hk + (size_t)h * Nmax;
    const float *qh = q + (size_t)bh * d;
    for (int e = threadIdx.x; e < d; e += blockDim.x) {
        K[(size_t)slot * d + e] = k[(size_t)bh * d + e];
        V[(size_t)slot * d + e] = v[(size_t)bh * d + e];
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const float *kj = K + (size_t)j * d;
        float s = 0;
        for (int e = 0; e < d; e++) s += qh[e] * kj[e];
        s *= scale;
        P[j] = s;
        mx = fmaxf(mx, s);
    }
    mx = block_max(mx, sh);
    float sum = 0;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float p = expf(P[j] - mx);
        P[j] = p;
        sum += p;
    }
    sum = block_sum(sum, sh); /* its barriers also order the P writes before the reads below */
    for (int e = threadIdx.x; e < d; e += blockDim.x) {
        float acc = 0;
        for (int j = 0; j < n; j++) acc += P[j] * V[(size_t)j * d + e];
        out[(size_t)bh * d + e] = acc / sum;
    }
}

void cuda_attn_step(real *out, real *state, size_t state_stride, const real *q, const real *k, const real *v, int B,
                    int H, int d, int Nmax, int pos, real scale) {
    if (B <= 0 || H <= 0 || d <= 0) return;
    k_attn_step<<<B * H, 128>>>(out, state, state_stride, q, k, v, H, d, Nmax, pos, scale);
    KERNEL_CHECK("k_attn_step");
}
