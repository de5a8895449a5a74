/* cuda_delta.cu: the Gated DeltaNet kernels on the GPU (docs/model.md §3.5, `gdn`; the rows'
 * decays sd: §3.10), twins of ops/cpu/cpu_delta.c with the same arguments and saved-state
 * layout (Sck [B, H, ceil(N/chunk)+1, dk, dv]): the row normalisation, the delta rule and its
 * decoding step (one block per (sequence, head) on the state in the decode buffer). Every
 * sum runs in a fixed order, with no atomics, so results repeat bit for bit. dk, dv at most
 * DELTA_MAXD. */
#include "ops/cuda/cuda_common.cuh"

#define WS_DSTATE 0 /* delta forward: the running states; backward: recomputed chunk states */
#define WS_DPART 1  /* delta backward: dA_log, ddt_bias partials; rownorm: dw products */
#define DELTA_MAXD 1024

/* ---------------------------------------------------------------- row normalisation */
__device__ __forceinline__ float sigm_f(float x) { return 1.f / (1.f + expf(-x)); }

/* one warp per row (a fixed shuffle tree for the sum of squares); 8 rows a block. The
 * backward writes dx and dg per row and the products dw sums into a work buffer, whose
 * column sums (cuda_colsum_acc, fixed order) go into dw. */
__global__ void k_rownorm_fwd(float *out, float *rstd, const float *x, const float *w, const float *g, int R, int C,
                              float eps, int mean) {
    int r = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (r >= R) return; /* a whole warp leaves together */
    const float *xr = x + (size_t)r * C;
    float ss = 0;
    for (int c = lane; c < C; c += 32) ss += xr[c] * xr[c];
    ss = warp_sum(ss);
    float rs = 1.f / sqrtf(ss / (mean ? C : 1) + eps);
    if (lane == 0) rstd[r] = rs;
    for (int c = lane; c < C; c += 32) {
        float y = xr[c] * rs * (w ? w[c] : 1.f);
        if (g) {
            float gv = g[(size_t)r * C + c];
            y *= gv * sigm_f(gv);
        }
        out[(size_t)r * C + c] = y;
    }
}

/* dx, dg of a row; P[r, c] = dout silu(g) n for dw (when P) */
__global__ void k_rownorm_bwd(float *dx, float *dg, float *P, const float *dout, const float *x, const float *w,
                              const float *g, const float *rstd, int R, int C, int mean) {
    int r = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (r >= R) return;
    size_t o = (size_t)r * C;
    float rs = rstd[r], dot = 0;
    for (int c = lane; c < C; c += 32) {
        float n = x[o + c] * rs, dy0 = dout[o + c];
        if (g) {
            float gv = g[o + c], s = sigm_f(gv);
            if (dg) dg[o + c] += dout[o + c] * n * (w ? w[c] : 1.f) * s * (1.f + gv * (1.f - s));
            dy0 *= gv * s;
        }
        if (P) P[o + c] = dy0 * n;
        dot += dy0 * (w ? w[c] : 1.f) * n;
    }
    float m = warp_sum(dot) / (mean ? C : 1);
    for (int c = lane; c < C; c += 32) {
        float dy0 = dout[o + c];
        if (g) dy0 *= g[o + c] * sigm_f(g[o + c]);
        dx[o + c] += rs * (dy0 * (w ? w[c] : 1.f) - x[o + c] * rs * m);
    }
}

void cuda_rownorm_forward(real *out, real *rstd, const real *x, const real *w, const real *g, int R, int C, real eps,
                          int mean) {
    if (R <= 0 || C <= 0) return;
    k_rownorm_fwd<<<(R + 7) / 8, 256>>>(out, rstd, x, w, g, R, C, eps, mean);
    KERNEL_CHECK("k_rownorm_fwd");
}

void cuda_rownorm_backward(real *dx, real *dw, real *dg, const real *dout, const real *x, const real *w, const real *g,
                           const real *rstd, int R, int C, int mean) {
    if (R <= 0 || C <= 0) return;
    float *P = w && dw ? ws_f(WS_DPART, (size_t)R * C) : NULL;
    k_rownorm_bwd<<<(R + 7) / 8, 256>>>(dx, dg, P, dout, x, w, g, rstd, R, C, mean);
    KERNEL_CHECK("k_rownorm_bwd");
    if (P) cuda_colsum_acc(dw, P, R, C);
}

/* ---------------------------------------------------------------- the delta rule */
static void delta_check(int dk, int dv) {
    if (dk > DELTA_MAXD || dv > DELTA_MAXD) {
        char msg[128];
        snprintf(msg, sizeof msg, "head widths %d, %d: the CUDA delta rule supports at most %d", dk, dv, DELTA_MAXD);
        cuda_fail(__FILE__, __LINE__, "delta", msg);
    }
}
static int delta_threads(int dk, int dv) {
    int m = dk > dv ? dk : dv;
    return (m + 31) / 32 * 32;
}

/* a_t and b_t (b_t = -1: no delta rule); lg = log a_t */
__device__ __forceinline__ void gates(const float *ga, const float *gb, const float *A_log, const float *dt_bias, int h,
                                      size_t i, float *a, float *lg, float *beta) {
    *lg = 0, *a = 1;
    if (ga) {
        float x = ga[i] + dt_bias[h];
        *lg = -expf(A_log[h]) * (x > 20.f ? x : log1pf(expf(x)));
        *a = expf(*lg);
    }
    *beta = gb ? sigm_f(gb[i]) : -1.f;
}

/* one step on column j of S [dk,dv] (row stride dv): S = a S (with the rows' decays ad:
 * S[i,j] = a ad_i S[i,j]), r_j = v_j - S[:,j] . k, S[:,j] += beta k r_j (without delta:
 * S[:,j] += k v_j); the new column's S^T q, scaled */
__device__ __forceinline__ float step_col(float *S, float *r, const float *sk, const float *sq, const float *ad, float vj,
                                          float a, float beta, int dk, int dv, int j, float scale) {
    float u = 0;
    for (int i = 0; i < dk; i++) {
        float s = S[(size_t)i * dv + j] * (ad ? a * ad[i] : a);
        S[(size_t)i * dv + j] = s;
        u += s * sk[i];
    }
    float rj = beta >= 0 ? vj - u : vj, c = beta >= 0 ? beta * rj : vj, o = 0;
    if (r) *r = rj;
    for (int i = 0; i < dk; i++) {
        float s = S[(size_t)i * dv + j] + sk[i] * c;
        S[(size_t)i * dv + j] = s;
        o += s * (sq ? sq[i] : 0.f);
    }
    return o * scale;
}

/* the rows' decays of head h, sigmoid(sd_h), into shared ad [dk] (NULL without sd); the
 * caller synchronises before reading them */
__device__ __forceinline__ const float *row_decays(float *ad, const float *sd, int h, int dk) {
    if (!sd) return NULL;
    for (int c = threadIdx.x; c < dk; c += blockDim.x) ad[c] = sigm_f(sd[(size_t)h * dk + c]);
    return ad;
}

/* One block per (batch, head), sequential over time, the state S in global memory (a work
 * buffer, [B H, dk, dv]). Thread j owns column j of S (S^T k, the rank-one update and S^T q
 * are all per column), so the only barrier a step is the one around loading q_t, k_t into
 * shared memory. With sd, row i of S is scaled by a_t D_i, D = diag(sigmoid(sd_h)). */
__global__ void k_delta_fwd(float *o, float *Sck, float *Sws, const float *q, const float *k, const float *v,
                            const float *ga, const float *gb, const float *A_log, const float *dt_bias, const float *sd,
                            int H, int N, int dk, int dv, int chunk, float scale) {
    extern __shared__ float sm[]; /* q [dk], k [dk], the rows' decays [dk] */
    float *sq = sm, *sk = sm + dk;
    int bh = blockIdx.x, h = bh % H, nck = (N + chunk - 1) / chunk;
    const float *ad = row_decays(sk + dk, sd, h, dk);
    size_t SS = (size_t)dk * dv;
    float *S = Sws + (size_t)bh * SS, *ck = Sck + (size_t)bh * (nck + 1) * SS;
    for (size_t e = threadIdx.x; e < SS; e += blockDim.x) S[e] = 0;
    for (int t = 0; t < N; t++) {
        size_t i = (size_t)bh * N + t;
        __syncthreads();
        for (int c = threadIdx.x; c < dk; c += blockDim.x) sq[c] = q[i * dk + c], sk[c] = k[i * dk + c];
        __syncthreads();
        float a, lg, beta;
        gates(ga, gb, A_log, dt_bias, h, i, &a, &lg, &beta);
        for (int j = threadIdx.x; j < dv; j += blockDim.x) {
            if (t % chunk == 0)
                for (int r = 0; r < dk; r++) ck[(size_t)(t / chunk) * SS + (size_t)r * dv + j] = S[(size_t)r * dv + j];
            o[i * dv + j] = step_col(S, NULL, sk, sq, ad, v[i * dv + j], a, beta, dk, dv, j, scale);
        }
    }
    for (int j = threadIdx.x; j < dv; j += blockDim.x)
        for (int r = 0; r < dk; r++) ck[(size_t)nck * SS + (size_t)r * dv + j] = S[(size_t)r * dv + j];
}

void cuda_delta_forward(real *o, real *Sck, const real *q, const real *k, const real *v, const real *ga, const real *gb,
                        const real *A_log, const real *dt_bias, const real *sd, int B, int H, int N, int dk, int dv,
                        int chunk, real scale) {
    if (B * H == 0 || N == 0) return;
    delta_check(dk, dv);
    float *Sws = ws_f(WS_DSTATE, (size_t)B * H * dk * dv);
    k_delta_fwd<<<B * H, delta_threads(dk, dv), 3 * dk * sizeof(float)>>>(o, Sck, Sws, q, k, v, ga, gb, A_log, dt_bias,
                                                                          sd, H, N, dk, dv, chunk, scale);
    KERNEL_CHECK("k_delta_fwd");
}

/* Recomputes a chunk's states from its checkpoint into a work buffer [B H, chunk+1, dk, dv]
 * (with r_t), then runs the adjoint steps in three phases a step: per column (dS += scale
 * q do^T, dd = dS^T k, dv, du), per row (dq, dk: sums over the columns in order), per column
 * (dS += k du^T, <dS, S_{t-1}>, dS *= a); the step's scalars (db, da) are summed over the
 * columns in order by thread 0. With sd a per-row phase follows the third (<dS, S_{t-1}> of
 * each row, summed over the columns in order, then dS *= a D). dA_log, ddt_bias, dsd: one
 * partial a (batch, head), summed over the batch in order by a second kernel. */
__global__ void k_delta_bwd(float *dq, float *dk_, float *dv_, float *dga, float *dgb, float *part, int np, float *ws,
                            const float *dout, const float *Sck, const float *q, const float *k, const float *v,
                            const float *ga, const float *gb, const float *A_log, const float *dt_bias, const float *sd,
                            int H, int N, int dk, int dv, int chunk, float scale) {
    /* q, k [dk]; do, v, du, per-column db and da partials [dv]; the rows' decays [dk] */
    extern __shared__ float sm[];
    float *sq = sm, *sk = sq + dk, *sdo = sk + dk, *sv = sdo + dv, *sdu = sv + dv, *pdb = sdu + dv, *pda = pdb + dv;
    int bh = blockIdx.x, h = bh % H, nck = (N + chunk - 1) / chunk, C = chunk < N ? chunk : N;
    const float *ad = row_decays(pda + dv, sd, h, dk);
    float *psd = sd ? part + (size_t)np * bh + (ga ? 2 : 0) : NULL; /* dsd partial [dk] of this (batch, head) */
    if (psd)
        for (int e = threadIdx.x; e < dk; e += blockDim.x) psd[e] = 0;
    size_t SS = (size_t)dk * dv;
    float *st = ws + (size_t)bh * ((C + 2) * SS + (size_t)C * dv), *dS = st + (C + 1) * SS, *rr = dS + SS;
    const float *ck = Sck + (size_t)bh * (nck + 1) * SS;
    float pA = 0, pdt = 0;
    for (size_t e = threadIdx.x; e < SS; e += blockDim.x) dS[e] = 0;
    for (int c = nck - 1; c >= 0; c--) {
        int t0 = c * chunk, t1 = t0 + chunk < N ? t0 + chunk : N;
        for (size_t e = threadIdx.x; e < SS; e += blockDim.x) st[e] = ck[(size_t)c * SS + e];
        for (int t = t0; t < t1; t++) { /* recompute: column j of S_t from column j of S_{t-1} */
            size_t i = (size_t)bh * N + t;
            __syncthreads();
            for (int e = threadIdx.x; e < dk; e += blockDim.x) sk[e] = k[i * dk + e];
            __syncthreads();
            float a, lg, beta;
            gates(ga, gb, A_log, dt_bias, h, i, &a, &lg, &beta);
            float *S = st + (size_t)(t - t0 + 1) * SS;
            for (int j = threadIdx.x; j < dv; j += blockDim.x) {
                for (int r = 0; r < dk; r++) S[(size_t)r * dv + j] = S[(size_t)r * dv + j - SS];
                step_col(S, rr + (size_t)(t - t0) * dv + j, sk, NULL, ad, v[i * dv + j], a, beta, dk, dv, j, 0.f);
            }
        }
        for (int t = t1 - 1; t >= t0; t--) {
            size_t i = (size_t)bh * N + t;
            float a, lg, beta;
            gates(ga, gb, A_log, dt_bias, h, i, &a, &lg, &beta);
            const float *Sp = st + (size_t)(t - t0) * SS, *St = Sp + SS, *r = rr + (size_t)(t - t0) * dv;
            __syncthreads();
            for (int e = threadIdx.x; e < dk; e += blockDim.x) sq[e] = q[i * dk + e], sk[e] = k[i * dk + e];
            for (int e = threadIdx.x; e < dv; e += blockDim.x) sdo[e] = dout[i * dv + e], sv[e] = v[i * dv + e];
            __syncthreads();
            /* columns: dS += scale q do^T, dd = dS^T k, dv, du, db partials */
            for (int j = threadIdx.x; j < dv; j += blockDim.x) {
                float dd = 0, dj = scale * sdo[j];
                for (int e = 0; e < dk; e++) {
                    float s = dS[(size_t)e * dv + j] + sq[e] * dj;
                    dS[(size_t)e * dv + j] = s;
                    dd += s * sk[e];
                }
                if (gb) {
                    dv_[i * dv + j] += beta * dd;
                    sdu[j] = -beta * dd;
                    pdb[j] = dd * r[j];
                } else {
                    dv_[i * dv + j] += dd;
                }
            }
            __syncthreads();
            /* rows: dq = scale S_t do; dk = beta dS r + a S_{t-1} du (without delta: dS v) */
            for (int e = threadIdx.x; e < dk; e += blockDim.x) {
                float sq_ = 0, sk1 = 0, sk2 = 0;
                for (int j = 0; j < dv; j++) {
                    sq_ += St[(size_t)e * dv + j] * sdo[j];
                    if (gb) sk1 += dS[(size_t)e * dv + j] * r[j], sk2 += Sp[(size_t)e * dv + j] * sdu[j];
                    else sk1 += dS[(size_t)e * dv + j] * sv[j];
                }
                dq[i * dk + e] += scale * sq_;
                dk_[i * dk + e] += gb ? beta * sk1 + (ad ? a * ad[e] : a) * sk2 : sk1;
            }
            __syncthreads();
            /* columns: dS += k du^T, da partials, dS *= a (with the rows' decays: the next phase) */
            for (int j = threadIdx.x; j < dv; j += blockDim.x) {
                float da = 0;
                for (int e = 0; e < dk; e++) {
                    float s = dS[(size_t)e * dv + j] + (gb ? sk[e] * sdu[j] : 0.f);
                    da += s * Sp[(size_t)e * dv + j] * (ad ? ad[e] : 1.f);
                    dS[(size_t)e * dv + j] = ad ? s : s * a;
                }
                pda[j] = da;
            }
            __syncthreads();
            if (ad) { /* rows: <dS, S_{t-1}> of the row, dsd, dS *= a D */
                for (int e = threadIdx.x; e < dk; e += blockDim.x) {
                    float rs = 0;
                    for (int j = 0; j < dv; j++) rs += dS[(size_t)e * dv + j] * Sp[(size_t)e * dv + j];
                    psd[e] += a * rs * ad[e] * (1.f - ad[e]);
                    for (int j = 0; j < dv; j++) dS[(size_t)e * dv + j] *= a * ad[e];
                }
                __syncthreads();
            }
            if (threadIdx.x == 0) {
                if (gb) {
                    float db = 0;
                    for (int j = 0; j < dv; j++) db += pdb[j];
                    dgb[i] += db * beta * (1 - beta);
                }
                if (ga) {
                    float da = 0;
                    for (int j = 0; j < dv; j++) da += pda[j];
                    float dlg = da * a, x = ga[i] + dt_bias[h], dpre = dlg * -expf(A_log[h]) * sigm_f(x);
                    dga[i] += dpre;
                    pA += dlg * lg;
                    pdt += dpre;
                }
            }
        }
    }
    if (threadIdx.x == 0 && ga) part[(size_t)np * bh] = pA, part[(size_t)np * bh + 1] = pdt;
}

/* dA_log[h] += sum_b part[b, h, 0], ddt_bias[h] += sum_b part[b, h, 1], b in order */
__global__ void k_delta_gate_sum(float *dA_log, float *ddt_bias, const float *part, int np, int B, int H) {
    int h = blockIdx.x * blockDim.x + threadIdx.x;
    if (h >= H) return;
    float sA = 0, sdt = 0;
    for (int b = 0; b < B; b++) sA += part[(size_t)np * ((size_t)b * H + h)], sdt += part[(size_t)np * ((size_t)b * H + h) + 1];
    dA_log[h] += sA;
    ddt_bias[h] += sdt;
}
/* dsd[h, e] += sum_b part[b, h, off + e], b in order */
__global__ void k_delta_sd_sum(float *dsd, const float *part, int np, int off, int B, int H, int dk) {
    int he = blockIdx.x * blockDim.x + threadIdx.x;
    if (he >= H * dk) return;
    int h = he / dk, e = he % dk;
    float s = 0;
    for (int b = 0; b < B; b++) s += part[(size_t)np * ((size_t)b * H + h) + off + e];
    dsd[he] += s;
}

void cuda_delta_backward(real *dq, real *dk_, real *dv_, real *dga, real *dgb, real *dA_log, real *ddt_bias, real *dsd,
                         const real *dout, const real *Sck, const real *q, const real *k, const real *v, const real *ga,
                         const real *gb, const real *A_log, const real *dt_bias, const real *sd, int B, int H, int N,
                         int dk, int dv, int chunk, real scale) {
    if (B * H == 0 || N == 0) return;
    delta_check(dk, dv);
    int C = chunk < N ? chunk : N, np = (ga ? 2 : 0) + (sd ? dk : 0); /* partials a (batch, head) */
    size_t SS = (size_t)dk * dv;
    float *ws = ws_f(WS_DSTATE, (size_t)B * H * ((C + 2) * SS + (size_t)C * dv));
    float *part = np ? ws_f(WS_DPART, (size_t)np * B * H) : NULL;
    size_t shm = (3 * (size_t)dk + 5 * (size_t)dv) * sizeof(float);
    k_delta_bwd<<<B * H, delta_threads(dk, dv), shm>>>(dq, dk_, dv_, dga, dgb, part, np, ws, dout, Sck, q, k, v, ga, gb,
                                                       A_log, dt_bias, sd, H, N, dk, dv, chunk, scale);
    KERNEL_CHECK("k_delta_bwd");
    if (ga) {
        k_delta_gate_sum<<<(H + 127) / 128, 128>>>(dA_log, ddt_bias, part, np, B, H);
        KERNEL_CHECK("k_delta_gate_sum");
    }
    if (sd) {
        k_delta_sd_sum<<<(H * dk + 127) / 128, 128>>>(dsd, part, np, ga ? 2 : 0, B, H, dk);
        KERNEL_CHECK("k_delta_sd_sum");
    }
}

__global__ void k_delta_step(float *o, float *state, size_t state_stride, const float *q, const float *k,
                             const float *v, const float *ga, const float *gb, const float *A_log,
                             const float *dt_bias, const float *sd, int H, int dk, int dv, float scale) {
    extern __shared__ float sm[];
    float *sq = sm, *sk = sm + dk;
    int bh = blockIdx.x, b = bh / H, h = bh % H;
    const float *ad = row_decays(sk + dk, sd, h, dk);
    float *S = state + b * state_stride + (size_t)h * dk * dv;
    for (int c = threadIdx.x; c < dk; c += blockDim.x) sq[c] = q[(size_t)bh * dk + c], sk[c] = k[(size_t)bh * dk + c];
    __syncthreads();
    float a, lg, beta;
    gates(ga, gb, A_log, dt_bias, h, bh, &a, &lg, &beta);
    for (int j = threadIdx.x; j < dv; j += blockDim.x)
        o[(size_t)bh * dv + j] = step_col(S, NULL, sk, sq, ad, v[(size_t)bh * dv + j], a, beta, dk, dv, j, scale);
}

void cuda_delta_step(real *o, real *state, size_t state_stride, const real *q, const real *k, const real *v,
                     const real *ga, const real *gb, const real *A_log, const real *dt_bias, const real *sd, int B, int H,
                     int dk, int dv, real scale) {
    if (B * H == 0) return;
    delta_check(dk, dv);
    k_delta_step<<<B * H, delta_threads(dk, dv), 3 * dk * sizeof(float)>>>(o, state, state_stride, q, k, v, ga, gb,
                                                                           A_log, dt_bias, sd, H, dk, dv, scale);
    KERNEL_CHECK("k_delta_step");
}
