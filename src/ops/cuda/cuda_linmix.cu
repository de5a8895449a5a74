/* cuda_linmix.cu: the normalised linear mixing core (docs/model.md §3.1) on the GPU, twin of
 * ops/cpu/cpu_linmix.c with the same arguments and saved state layout ([BH, nc, F*d + F],
 * the (S, z) at the START of each chunk; one slot holding the full (S, z) when
 * bidirectional), so the backward pass and the CPU backend read it the same way; given no
 * saved state (NULL), the backward first recomputes it by the forward's own kernels.
 * Memory: chunk buffers of BH * ceil(N/C) * C^2 floats, never N x N. */
#include "ops/cuda/cuda_common.cuh"

#define WS_T 0    /* T / G chunk sums [BH, nc, st] */
#define WS_A 1    /* A chunks [BH, nc, C, C] */
#define WS_DA 2   /* dA chunks */
#define WS_DNUM 3 /* [BH, N, d] */
#define WS_DDEN 4 /* [BH, N] */
#define WS_S 5    /* states recomputed by the backward when none were saved [BH, nc, st] */
#define LEN (-1)  /* a GEMM dimension equal to the chunk length */

/* For every chunk c of every head h: C_hc = alpha op(A_hc) op(B_hc) + beta C_hc, where an
 * operand's chunk starts at base + h*sh + c*sc and dimensions given as LEN equal the chunk
 * length (C, or N - (nc-1) C for the last one). Operands are contiguous row-major blocks. */
struct Opnd {
    const float *p;
    size_t sh, sc;
};
static void chunk_gemm(int BH, int N, int C, int M_, int N_, int K_, int ta, int tb, float alpha, float beta, Opnd a,
                       Opnd b, float *c, size_t ch, size_t cc) {
    int nc = (N + C - 1) / C, nf = N / C, L = N - nf * C;
#define DIM(x, l) ((x) == LEN ? (l) : (x))
    if (nf > 0) {
        if (L == 0 && a.sh == (size_t)nc * a.sc && b.sh == (size_t)nc * b.sc && ch == (size_t)nc * cc) {
            cuda_gemm_strided(c, a.p, b.p, DIM(M_, C), DIM(N_, C), DIM(K_, C), ta, tb, alpha, beta, BH * nf,
                              (long long)a.sc, (long long)b.sc, (long long)cc);
        } else {
            for (int h = 0; h < BH; h++)
                cuda_gemm_strided(c + h * ch, a.p + h * a.sh, b.p + h * b.sh, DIM(M_, C), DIM(N_, C), DIM(K_, C), ta, tb,
                                  alpha, beta, nf, (long long)a.sc, (long long)b.sc, (long long)cc);
        }
    }
    if (L > 0)
        cuda_gemm_strided(c + nf * cc, a.p + nf * a.sc, b.p + nf * b.sc, DIM(M_, L), DIM(N_, L), DIM(K_, L), ta, tb,
                          alpha, beta, BH, (long long)a.sh, (long long)b.sh, (long long)ch);
#undef DIM
}

/* out[(h*nc + c)*st + F*d + f] = sum over rows i of chunk c of X[h, c*C + i, f] * (w ? w[h, c*C+i] : 1),
 * for chunks c < nchunks (nc = the layout's chunk count) */
__global__ void k_chunk_colsum(float *out, size_t st, const float *X, const float *w, int BH, int N, int C, int nc,
                               int nchunks, int F, int d) {
    size_t n = (size_t)BH * nchunks * F;
    GRID_STRIDE(idx, n) {
        int f = (int)(idx % F);
        size_t hc = idx / F;
        int c = (int)(hc % nchunks), h = (int)(hc / nchunks);
        int r0 = c * C, r1 = min(N, r0 + C);
        const float *x = X + (size_t)h * N * F;
        float s = 0;
        for (int r = r0; r < r1; r++) s += x[(size_t)r * F + f] * (w ? w[(size_t)h * N + r] : 1.f);
        out[((size_t)h * nc + c) * st + (size_t)F * d + f] = s;
    }
}

/* state[h, c] = sum_{c' < c} T[h, c'] (forward, reverse = 0) or, in place over T,
 * T[h, c] = sum_{c' > c} T[h, c'] (reverse = 1). One thread per (h, element). */
__global__ void k_chunk_scan(float *state, float *T, int BH, int nc, size_t st, int reverse) {
    GRID_STRIDE(idx, (size_t)BH * st) {
        size_t h = idx / st, e = idx % st;
        float run = 0;
        if (!reverse) {
            for (int c = 0; c < nc; c++) {
                size_t o = (h * nc + c) * st + e;
                state[o] = run;
                if (c + 1 < nc) run += T[o];
            }
        } else {
            for (int c = nc - 1; c >= 0; c--) {
                size_t o = (h * nc + c) * st + e;
                float t = T[o];
                T[o] = run;
                run += t;
            }
        }
    }
}

/* causal: mask A_c (zero above the diagonal) and den = eps + phq . z_c + rowsum(A_c).
 * One warp per row (h, n). */
__global__ void k_causal_den(float *den, float *A, const float *q, const float *state, int BH, int N, int C, int F,
                             int d, float eps) {
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= (size_t)BH * N) return;
    int h = (int)(row / N), n = (int)(row % N);
    int nc = (N + C - 1) / C, c = n / C, i = n % C, L = min(C, N - c * C);
    size_t st = (size_t)F * d + F;
    float *Ar = A + ((size_t)h * nc + c) * C * C + (size_t)i * L;
    const float *z = state + ((size_t)h * nc + c) * st + (size_t)F * d, *qr = q + row * F;
    float s = 0;
    for (int j = lane; j < L; j += 32) {
        if (j > i) Ar[j] = 0;
        else s += Ar[j];
    }
    for (int f = lane; f < F; f += 32) s += qr[f] * z[f];
    s = warp_sum(s);
    if (lane == 0) den[row] = s + eps;
}

/* bidirectional: den = eps + phq . z and out /= den. One warp per row. */
__global__ void k_bidir_den(float *out, float *den, const float *q, const float *state, int BH, int N, int F, int d,
                            float eps) {
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= (size_t)BH * N) return;
    int h = (int)(row / N);
    size_t st = (size_t)F * d + F;
    const float *z = state + (size_t)h * st + (size_t)F * d, *qr = q + row * F;
    float s = 0;
    for (int f = lane; f < F; f += 32) s += qr[f] * z[f];
    s = warp_sum(s) + eps;
    if (lane == 0) den[row] = s;
    float inv = 1.f / s;
    for (int e = lane; e < d; e += 32) out[row * d + e] *= inv;
}

__global__ void k_div_rows(float *out, const float *den, size_t rows, int d) {
    GRID_STRIDE(i, rows * d) out[i] /= den[i / d];
}

static size_t lm_rows_grid(size_t rows) { return (rows + 7) / 8; } /* 8 warps per 256-thread block */

/* the running state at the start of each chunk [BH, nc, st] (the first zero); uses WS_T */
static void causal_states(float *state, const float *phk, const float *v, int BH, int N, int F, int d, int C) {
    int nc = (N + C - 1) / C;
    size_t st = (size_t)F * d + F, hN_F = (size_t)N * F, hN_d = (size_t)N * d;
    Opnd k = {phk, hN_F, (size_t)C * F}, vv = {v, hN_d, (size_t)C * d};
    if (nc > 1) {
        float *T = ws_f(WS_T, (size_t)BH * nc * st);
        chunk_gemm(BH, N, C, F, d, LEN, 1, 0, 1, 0, k, vv, T, nc * st, st);
        k_chunk_colsum<<<grid_for((size_t)BH * (nc - 1) * F), TPB>>>(T, st, phk, NULL, BH, N, C, nc, nc - 1, F, d);
        KERNEL_CHECK("k_chunk_colsum (T)");
        k_chunk_scan<<<grid_for((size_t)BH * st), TPB>>>(state, T, BH, nc, st, 0);
        KERNEL_CHECK("k_chunk_scan");
    } else {
        CUDA_CHECK(cudaMemsetAsync(state, 0, (size_t)BH * st * sizeof(float), 0));
    }
}

/* bidirectional: S = phk^T V, z = colsum phk [BH, st] */
static void bidir_state(float *state, const float *phk, const float *v, int BH, int N, int F, int d) {
    size_t st = (size_t)F * d + F;
    cuda_gemm_strided(state, phk, v, F, d, N, 1, 0, 1, 0, BH, (long long)N * F, (long long)N * d, (long long)st);
    k_chunk_colsum<<<grid_for((size_t)BH * F), TPB>>>(state, st, phk, NULL, BH, N, N, 1, 1, F, d);
    KERNEL_CHECK("k_chunk_colsum (z)");
}

/* Bidirectional: S = phk^T V and O = phq S are strided-batched GEMMs over heads.
 * Causal (chunked scan, chunk C): every chunk of every head at once --
 *   T_c = phk_c^T V_c, z-part colsum(phk_c)        (batched GEMM + kernel)
 *   state_c = sum_{c' < c} T_c'                    (exclusive scan over chunks, in order)
 *   A_c = mask(phq_c phk_c^T)                      (batched C x C GEMM + mask kernel)
 *   O_c = (phq_c S_c + A_c V_c) / (phq_c . z_c + rowsum A_c + eps)
 * Full chunks run as one batched GEMM (or one per head when N is not a multiple of C); the
 * shorter last chunk of every head as one more. */
void cuda_linmix_forward(real *out, real *den, real *state, const real *phq, const real *phk, const real *v, int BH,
                         int N, int F, int d, int causal, int chunk, real eps) {
    if (BH <= 0 || N <= 0) return;
    size_t st = (size_t)F * d + F, rows = (size_t)BH * N;
    if (!causal) {
        bidir_state(state, phk, v, BH, N, F, d);
        cuda_gemm_strided(out, phq, state, N, d, F, 0, 0, 1, 0, BH, (long long)N * F, (long long)st, (long long)N * d);
        k_bidir_den<<<lm_rows_grid(rows), 256>>>(out, den, phq, state, BH, N, F, d, eps);
        KERNEL_CHECK("k_bidir_den");
        return;
    }
    int C = chunk, nc = (N + C - 1) / C;
    size_t hN_F = (size_t)N * F, hN_d = (size_t)N * d;
    Opnd q = {phq, hN_F, (size_t)C * F}, k = {phk, hN_F, (size_t)C * F}, vv = {v, hN_d, (size_t)C * d};
    causal_states(state, phk, v, BH, N, F, d, C);
    /* in-chunk scores, masked, and the denominators */
    float *A = ws_f(WS_A, (size_t)BH * nc * C * C);
    size_t aC = (size_t)C * C;
    Opnd a = {A, nc * aC, aC}, S = {state, nc * st, st};
    chunk_gemm(BH, N, C, LEN, LEN, F, 0, 1, 1, 0, q, k, A, nc * aC, aC);
    k_causal_den<<<lm_rows_grid(rows), 256>>>(den, A, phq, state, BH, N, C, F, d, eps);
    KERNEL_CHECK("k_causal_den");
    /* out = (phq S + A V) / den */
    chunk_gemm(BH, N, C, LEN, d, F, 0, 0, 1, 0, q, S, out, hN_d, (size_t)C * d);
    chunk_gemm(BH, N, C, LEN, d, LEN, 0, 0, 1, 1, a, vv, out, hN_d, (size_t)C * d);
    k_div_rows<<<grid_for(rows * d), TPB>>>(out, den, rows, d);
    KERNEL_CHECK("k_div_rows");
}

/* dnum = dout / den ; dden = -(dout . out) / den. One warp per row. */
__global__ void k_dnum_dden(float *dnum, float *dden, const float *dout, const float *out, const float *den,
                            size_t rows, int d) {
    size_t row = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    float inv = 1.f / den[row], s = 0;
    for (int e = lane; e < d; e += 32) {
        float g = dout[row * d + e];
        dnum[row * d + e] = g * inv;
        s += g * out[row * d + e];
    }
    s = warp_sum(s);
    if (lane == 0) dden[row] = -s * inv;
}

/* gk[h,n,f] += dz_c[f] ; gq[h,n,f] += dden[h,n] z_c[f]  (c = n / C; dz from G, z from state) */
__global__ void k_rank1(float *gq, float *gk, const float *dden, const float *state, const float *G, int BH, int N,
                        int C, int F, int d) {
    int nc = (N + C - 1) / C;
    size_t st = (size_t)F * d + F;
    GRID_STRIDE(idx, (size_t)BH * N * F) {
        int f = (int)(idx % F);
        size_t row = idx / F;
        int h = (int)(row / N), n = (int)(row % N), c = n / C;
        size_t o = ((size_t)h * nc + c) * st + (size_t)F * d + f;
        gk[idx] += G[o];
        gq[idx] += dden[row] * state[o];
    }
}

/* A: zero above the diagonal ; dA: (dA + dden_i) on and below it, 0 above. One thread per
 * element of the chunk buffers, addressed by (h, n, j). */
__global__ void k_mask_dA(float *A, float *dA, const float *dden, int BH, int N, int C) {
    int nc = (N + C - 1) / C;
    GRID_STRIDE(idx, (size_t)BH * N * C) {
        int j = (int)(idx % C);
        size_t row = idx / C;
        int h = (int)(row / N), n = (int)(row % N), c = n / C, i = n % C, L = min(C, N - c * C);
        if (j >= L) continue;
        size_t o = ((size_t)h * nc + c) * C * C + (size_t)i * L + j;
        if (j > i) {
            A[o] = 0;
            dA[o] = 0;
        } else {
            dA[o] += dden[row];
        }
    }
}

/* The forward in reverse: the gradient of each chunk's state is the reverse exclusive scan
 * of G_c = phq_c^T dnum_c (and phq_c^T dden_c for z). */
void cuda_linmix_backward(real *dphq, real *dphk, real *dv, const real *dout, const real *out, const real *den,
                          const real *state, const real *phq, const real *phk, const real *v, int BH, int N, int F,
                          int d, int causal, int chunk) {
    if (BH <= 0 || N <= 0) return;
    size_t st = (size_t)F * d + F, rows = (size_t)BH * N;
    int C = causal ? chunk : N, nc = (N + C - 1) / C;
    if (!state) { /* none saved: the forward's states again, before WS_T holds G */
        float *S = ws_f(WS_S, (size_t)BH * nc * st);
        if (causal)
            causal_states(S, phk, v, BH, N, F, d, C);
        else
            bidir_state(S, phk, v, BH, N, F, d);
        state = S;
    }
    float *dnum = ws_f(WS_DNUM, rows * d), *dden = ws_f(WS_DDEN, rows);
    k_dnum_dden<<<lm_rows_grid(rows), 256>>>(dnum, dden, dout, out, den, rows, d);
    KERNEL_CHECK("k_dnum_dden");
    float *G = ws_f(WS_T, (size_t)BH * nc * st);
    if (!causal) {
        long long sNF = (long long)N * F, sNd = (long long)N * d, sst = (long long)st;
        cuda_gemm_strided(dphq, dnum, state, N, F, d, 0, 1, 1, 1, BH, sNd, sst, sNF);
        cuda_gemm_strided(G, phq, dnum, F, d, N, 1, 0, 1, 0, BH, sNF, sNd, sst);
        k_chunk_colsum<<<grid_for((size_t)BH * F), TPB>>>(G, st, phq, dden, BH, N, N, 1, 1, F, d);
        KERNEL_CHECK("k_chunk_colsum (dz)");
        cuda_gemm_strided(dphk, v, G, N, F, d, 0, 1, 1, 1, BH, sNd, sst, sNF);
        cuda_gemm_strided(dv, phk, G, N, d, F, 0, 0, 1, 1, BH, sNF, sst, sNd);
        k_rank1<<<grid_for(rows * F), TPB>>>(dphq, dphk, dden, state, G, BH, N, N, F, d);
        KERNEL_CHECK("k_rank1");
        return;
    }
    size_t hN_F = (size_t)N * F, hN_d = (size_t)N * d, cF = (size_t)C * F, cd = (size_t)C * d, aC = (size_t)C * C;
    Opnd q = {phq, hN_F, cF}, k = {phk, hN_F, cF}, vv = {v, hN_d, cd}, dn = {dnum, hN_d, cd};
    Opnd S = {state, nc * st, st}, g = {G, nc * st, st};
    /* gradient of each chunk's starting state: reverse exclusive scan of phq_c^T (dnum_c, dden_c) */
    chunk_gemm(BH, N, C, F, d, LEN, 1, 0, 1, 0, q, dn, G, nc * st, st);
    k_chunk_colsum<<<grid_for((size_t)BH * nc * F), TPB>>>(G, st, phq, dden, BH, N, C, nc, nc, F, d);
    KERNEL_CHECK("k_chunk_colsum (G)");
    k_chunk_scan<<<grid_for((size_t)BH * st), TPB>>>(NULL, G, BH, nc, st, 1);
    KERNEL_CHECK("k_chunk_scan (reverse)");
    /* through the states: dphk += V dS^T + dz, dV += phk dS, dphq += dnum S^T + dden z^T */
    chunk_gemm(BH, N, C, LEN, F, d, 0, 1, 1, 1, vv, g, dphk, hN_F, cF);
    chunk_gemm(BH, N, C, LEN, d, F, 0, 0, 1, 1, k, g, dv, hN_d, cd);
    chunk_gemm(BH, N, C, LEN, F, d, 0, 1, 1, 1, dn, S, dphq, hN_F, cF);
    k_rank1<<<grid_for(rows * F), TPB>>>(dphq, dphk, dden, state, G, BH, N, C, F, d);
    KERNEL_CHECK("k_rank1");
    /* through the masked in-chunk products */
    float *A = ws_f(WS_A, (size_t)BH * nc * aC), *dA = ws_f(WS_DA, (size_t)BH * nc * aC);
    Opnd a = {A, nc * aC, aC}, da = {dA, nc * aC, aC};
    chunk_gemm(BH, N, C, LEN, LEN, F, 0, 1, 1, 0, q, k, A, nc * aC, aC);
    chunk_gemm(BH, N, C, LEN, LEN, d, 0, 1, 1, 0, dn, vv, dA, nc * aC, aC);
    k_mask_dA<<<grid_for(rows * C), TPB>>>(A, dA, dden, BH, N, C);
    KERNEL_CHECK("k_mask_dA");
    chunk_gemm(BH, N, C, LEN, F, LEN, 0, 0, 1, 1, da, k, dphq, hN_F, cF);
    chunk_gemm(BH, N, C, LEN, F, LEN, 1, 0, 1, 1, da, q, dphk, hN_F, cF);
    chunk_gemm(BH, N, C, LEN, d, LEN, 1, 0, 1, 1, a, dn, dv, hN_d, cd);
}

/* One decoding token (linmix_step): a block per (sequence, head). Thread 0 updates z and
 * sums the denominator phq . z in f order (as the CPU does); each thread owns columns of
 * S, updating and reading every row of its columns in one pass (coalesced across threads). */
__global__ void k_linmix_step(float *out, float *state, size_t state_stride, const float *phq, const float *phk,
                              const float *v, int H, int F, int d, float eps) {
    __shared__ float sden[1];
    int bh = blockIdx.x, b = bh / H, h = bh % H;
    float *S = state + (size_t)b * state_stride + (size_t)h * F * d;
    float *z = state + (size_t)b * state_stride + (size_t)H * F * d + (size_t)h * F;
    const float *q = phq + (size_t)bh * F, *k = phk + (size_t)bh * F, *vv = v + (size_t)bh * d;
    if (threadIdx.x == 0) {
        float den = 0;
        for (int f = 0; f < F; f++) {
            z[f] += k[f];
            den += q[f] * z[f];
        }
        sden[0] = den;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < d; e += blockDim.x) {
        float ve = vv[e], acc = 0;
        for (int f = 0; f < F; f++) {
            float s = S[(size_t)f * d + e] + k[f] * ve;
            S[(size_t)f * d + e] = s;
            acc += q[f] * s;
        }
        out[(size_t)bh * d + e] = acc * (1 / (sden[0] + eps));
    }
}

void cuda_linmix_step(real *out, real *state, size_t state_stride, const real *phq, const real *phk, const real *v,
                      int B, int H, int F, int d, real eps) {
    if (B <= 0 || H <= 0) return;
    int tpb = d >= 128 ? 128 : (d + 31) / 32 * 32;
    k_linmix_step<<<B * H, tpb>>>(out, state, state_stride, phq, phk, v, H, F, d, eps);
    KERNEL_CHECK("k_linmix_step");
}
