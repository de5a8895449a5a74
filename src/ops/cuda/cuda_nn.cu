/* cuda_nn.cu: CUDA kernels of the dense layers, twins of ops/cpu/cpu_nn.c: GELU, bias + GELU,
 * ReLU, LayerNorm, residual add + LayerNorm, embeddings, fused softmax + cross-entropy, argmax,
 * head split/merge, row softmax and the attention score mask. Every reduction has a fixed
 * order (shuffle trees, fixed row blocks), so results are the same bits run after run; no
 * atomics. */
#include "ops/cuda/cuda_common.cuh"

#define WS_LN WS_COLSUM /* layernorm dw/db partials */
#define GELU_K 0.7978845608028654f

/* ---------------------------------------------------------------- GELU */
__device__ __forceinline__ float gelu_f(float u) { return 0.5f * u * (1.f + tanhf(GELU_K * (u + 0.044715f * u * u * u))); }
__device__ __forceinline__ float gelu_grad_f(float u) {
    float t = tanhf(GELU_K * (u + 0.044715f * u * u * u));
    return 0.5f * (1.f + t) + 0.5f * u * (1.f - t * t) * GELU_K * (1.f + 3.f * 0.044715f * u * u);
}
__global__ void k_gelu_fwd(float *out, const float *x, size_t n) {
    GRID_STRIDE(i, n) { out[i] = gelu_f(x[i]); }
}
__global__ void k_gelu_bwd(float *dx, const float *dout, const float *x, size_t n) {
    GRID_STRIDE(i, n) { dx[i] += dout[i] * gelu_grad_f(x[i]); }
}
void cuda_gelu_forward(real *out, const real *x, size_t n) {
    if (!n) return;
    k_gelu_fwd<<<grid_for(n), TPB>>>(out, x, n);
    KERNEL_CHECK("k_gelu_fwd");
}
void cuda_gelu_backward(real *dx, const real *dout, const real *x, size_t n) {
    if (!n) return;
    k_gelu_bwd<<<grid_for(n), TPB>>>(dx, dout, x, n);
    KERNEL_CHECK("k_gelu_bwd");
}

/* bias + GELU: elementwise, the bias gradient by cuda_colsum_acc's fixed-order column sums */
__global__ void k_bias_gelu_fwd(float *pre, float *out, const float *bias, size_t n, int C) {
    GRID_STRIDE(i, n) {
        float u = pre[i] + (bias ? bias[i % (size_t)C] : 0.f);
        pre[i] = u;
        out[i] = gelu_f(u);
    }
}
__global__ void k_bias_gelu_bwd(float *dpre, const float *dout, const float *pre, size_t n) {
    GRID_STRIDE(i, n) { dpre[i] = dout[i] * gelu_grad_f(pre[i]); }
}
void cuda_bias_gelu_forward(real *pre, real *out, const real *bias, int R, int C) {
    size_t n = (size_t)R * C;
    if (!n) return;
    k_bias_gelu_fwd<<<grid_for(n), TPB>>>(pre, out, bias, n, C);
    KERNEL_CHECK("k_bias_gelu_fwd");
}
void cuda_bias_gelu_backward(real *dpre, real *dbias, const real *dout, const real *pre, int R, int C) {
    size_t n = (size_t)R * C;
    if (!n) return;
    k_bias_gelu_bwd<<<grid_for(n), TPB>>>(dpre, dout, pre, n);
    KERNEL_CHECK("k_bias_gelu_bwd");
    if (dbias) cuda_colsum_acc(dbias, dpre, R, C);
}

/* ---------------------------------------------------------------- ReLU */
__global__ void k_relu_fwd(float *out, const float *x, size_t n) {
    GRID_STRIDE(i, n) { out[i] = x[i] > 0.f ? x[i] : 0.f; }
}
__global__ void k_relu_bwd(float *dx, const float *dout, const float *x, size_t n) {
    GRID_STRIDE(i, n) {
        if (x[i] > 0.f) dx[i] += dout[i];
    }
}
void cuda_relu_forward(real *out, const real *x, size_t n) {
    if (!n) return;
    k_relu_fwd<<<grid_for(n), TPB>>>(out, x, n);
    KERNEL_CHECK("k_relu_fwd");
}
void cuda_relu_backward(real *dx, const real *dout, const real *x, size_t n) {
    if (!n) return;
    k_relu_bwd<<<grid_for(n), TPB>>>(dx, dout, x, n);
    KERNEL_CHECK("k_relu_bwd");
}

/* ---------------------------------------------------------------- LayerNorm */
/* one warp per row: the row's stats and the normalised row (each lane reads only its own
 * columns c = lane, lane + 32, ...). mean NULL: RMSNorm (mean 0, eps 1e-6); b NULL: no shift */
__device__ __forceinline__ void ln_row_warp(float *o, float *mean, float *rstd, const float *xr, const float *w,
                                            const float *b, int C, int lane, float s) {
    float m = mean ? warp_sum(s) / C : 0.f;
    float v = 0;
    for (int c = lane; c < C; c += 32) {
        float t = xr[c] - m;
        v += t * t;
    }
    v = warp_sum(v) / C;
    float rs = 1.f / sqrtf(v + (mean ? 1e-5f : 1e-6f));
    for (int c = lane; c < C; c += 32) o[c] = (xr[c] - m) * rs * w[c] + (b ? b[c] : 0.f);
    if (lane == 0) {
        if (mean) *mean = m;
        *rstd = rs;
    }
}
__global__ void k_ln_fwd(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b, int R,
                         int C) {
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (r >= R) return;
    const float *xr = x + (size_t)r * C;
    float s = 0;
    for (int c = lane; c < C; c += 32) s += xr[c];
    ln_row_warp(out + (size_t)r * C, mean ? mean + r : NULL, rstd + r, xr, w, b, C, lane, s);
}
void cuda_layernorm_forward(real *out, real *mean, real *rstd, const real *x, const real *w, const real *b, int R,
                            int C) {
    if (R <= 0) return;
    k_ln_fwd<<<(R + 7) / 8, 256>>>(out, mean, rstd, x, w, b, R, C);
    KERNEL_CHECK("k_ln_fwd");
}

/* sum = a + b, then k_ln_fwd's row over sum (each lane reads back only what it wrote) */
__global__ void k_add_ln_fwd(float *sum, float *out, float *mean, float *rstd, const float *a, const float *b,
                             const float *w, const float *bias, int R, int C) {
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (r >= R) return;
    float *sr = sum + (size_t)r * C;
    const float *ar = a + (size_t)r * C, *br = b + (size_t)r * C;
    float s = 0;
    for (int c = lane; c < C; c += 32) {
        float t = ar[c] + br[c];
        sr[c] = t;
        s += t;
    }
    ln_row_warp(out + (size_t)r * C, mean ? mean + r : NULL, rstd + r, sr, w, bias, C, lane, s);
}
void cuda_add_layernorm_forward(real *sum, real *out, real *mean, real *rstd, const real *a, const real *b, const real *w,
                                const real *bias, int R, int C) {
    if (R <= 0) return;
    k_add_ln_fwd<<<(R + 7) / 8, 256>>>(sum, out, mean, rstd, a, b, w, bias, R, C);
    KERNEL_CHECK("k_add_ln_fwd");
}

__global__ void k_ln_bwd_dx(float *dx, const float *dout, const float *x, const float *w, const float *mean,
                            const float *rstd, int R, int C) {
    int r = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (r >= R) return;
    const float *xr = x + (size_t)r * C, *dr = dout + (size_t)r * C;
    float m = mean ? mean[r] : 0.f, s = rstd[r]; /* mean NULL: RMSNorm */
    float a = 0, bs = 0;
    for (int c = lane; c < C; c += 32) {
        float n = (xr[c] - m) * s, dn = dr[c] * w[c];
        a += dn;
        bs += dn * n;
    }
    a = mean ? warp_sum(a) / C : 0.f; /* RMSNorm: no centring term */
    bs = warp_sum(bs) / C;
    float *dxr = dx + (size_t)r * C;
    for (int c = lane; c < C; c += 32) {
        float n = (xr[c] - m) * s, dn = dr[c] * w[c];
        dxr[c] += s * (dn - a - n * bs);
    }
}
#define LN_ROWS 256
__global__ void k_ln_dwdb_part(double *pw, double *pb, const float *dout, const float *x, const float *mean,
                               const float *rstd, int R, int C) {
    __shared__ double shw[8][33], shb[8][33];
    int c = blockIdx.x * 32 + threadIdx.x, rb = blockIdx.y;
    int r0 = rb * LN_ROWS, r1 = min(R, r0 + LN_ROWS);
    double gw = 0, gb = 0;
    if (c < C)
        for (int r = r0 + threadIdx.y; r < r1; r += 8) {
            float g = dout[(size_t)r * C + c];
            gw += g * ((x[(size_t)r * C + c] - (mean ? mean[r] : 0.f)) * rstd[r]);
            gb += g;
        }
    shw[threadIdx.y][threadIdx.x] = gw;
    shb[threadIdx.y][threadIdx.x] = gb;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        double tw = 0, tb = 0;
        for (int i = 0; i < 8; i++) tw += shw[i][threadIdx.x], tb += shb[i][threadIdx.x];
        pw[(size_t)rb * C + c] = tw;
        pb[(size_t)rb * C + c] = tb;
    }
}
__global__ void k_ln_dwdb_final(float *dw, float *db, const double *pw, const double *pb, int nrb, int C) {
    GRID_STRIDE(c, (size_t)C) {
        double tw = 0, tb = 0;
        for (int b = 0; b < nrb; b++) tw += pw[(size_t)b * C + c], tb += pb[(size_t)b * C + c];
        dw[c] += (float)tw;
        if (db) db[c] += (float)tb;
    }
}
void cuda_layernorm_backward(real *dx, real *dw, real *db, const real *dout, const real *x, const real *w,
                             const real *mean, const real *rstd, int R, int C) {
    if (R <= 0) return;
    k_ln_bwd_dx<<<(R + 7) / 8, 256>>>(dx, dout, x, w, mean, rstd, R, C);
    KERNEL_CHECK("k_ln_bwd_dx");
    int nrb = (R + LN_ROWS - 1) / LN_ROWS;
    double *pw = (double *)cuda_ws(WS_LN, 2 * (size_t)nrb * C * sizeof(double)), *pb = pw + (size_t)nrb * C;
    k_ln_dwdb_part<<<dim3((C + 31) / 32, nrb), dim3(32, 8)>>>(pw, pb, dout, x, mean, rstd, R, C);
    KERNEL_CHECK("k_ln_dwdb_part");
    k_ln_dwdb_final<<<grid_for(C), TPB>>>(dw, db, pw, pb, nrb, C);
    KERNEL_CHECK("k_ln_dwdb_final");
}

/* ---------------------------------------------------------------- embeddings */
__global__ void k_embed_fwd(float *out, const int32_t *tok, const float *wte, const float *wpe, int B, int T, int C) {
    size_t n = (size_t)B * T * C;
    GRID_STRIDE(i, n) {
        size_t bt = i / C;
        int c = (int)(i % C), t = (int)(bt % T);
        float v = wte[(size_t)tok[bt] * C + c];
        if (wpe) v += wpe[(size_t)t * C + c];
        out[i] = v;
    }
}
void cuda_embed_forward(real *out, const int32_t *tok, const real *wte, const real *wpe, int B, int T, int C) {
    size_t n = (size_t)B * T * C;
    if (!n) return;
    k_embed_fwd<<<grid_for(n), TPB>>>(out, tok, wte, wpe, B, T, C);
    KERNEL_CHECK("k_embed_fwd");
}
/* dwpe[t,c] += sum_b dout[b,t,c], b in order */
__global__ void k_embed_bwd_pos(float *dwpe, const float *dout, int B, int T, int C) {
    GRID_STRIDE(i, (size_t)T * C) {
        float v = dwpe[i];
        for (int b = 0; b < B; b++) v += dout[(size_t)b * T * C + i];
        dwpe[i] = v;
    }
}
/* dwte: block (x: 128 channels, y: one of EMB_VSLICES classes of token ids, id mod
 * EMB_VSLICES); each thread owns channel c of the rows of its class and walks every token in
 * (b, t) order: no two threads write one element (no atomics), and each element receives its
 * additions in the same order as on the CPU backend. */
#define EMB_VSLICES 64
__global__ void k_embed_bwd_tok(float *dwte, const float *dout, const int32_t *tok, int BT, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    int cls = blockIdx.y;
    for (int i = 0; i < BT; i++) {
        int t = tok[i];
        if (t % EMB_VSLICES == cls) dwte[(size_t)t * C + c] += dout[(size_t)i * C + c];
    }
}
void cuda_embed_backward(real *dwte, real *dwpe, const real *dout, const int32_t *tok, int B, int T, int C) {
    if ((size_t)B * T * C == 0) return;
    if (dwpe) {
        k_embed_bwd_pos<<<grid_for((size_t)T * C), TPB>>>(dwpe, dout, B, T, C);
        KERNEL_CHECK("k_embed_bwd_pos");
    }
    k_embed_bwd_tok<<<dim3((C + 127) / 128, EMB_VSLICES), 128>>>(dwte, dout, tok, B * T, C);
    KERNEL_CHECK("k_embed_bwd_tok");
}

/* ---------------------------------------------------------------- cross-entropy */
/* one block per row: loss = log sum exp(l - max) + max - l[target] */
__global__ void k_xent_fwd(float *loss, float *valid, const float *logits, const int32_t *target, int V) {
    __shared__ float shf[32];
    __shared__ double shd[32];
    int r = blockIdx.x, t = target[r];
    if (t < 0) {
        if (threadIdx.x == 0) loss[r] = 0, valid[r] = 0;
        return;
    }
    const float *l = logits + (size_t)r * V;
    float mx = -INFINITY;
    for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, l[i]);
    mx = block_max(mx, shf);
    float s = 0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf(l[i] - mx);
    double S = block_sum((double)s, shd);
    if (threadIdx.x == 0) {
        loss[r] = (float)(log(S) + mx - l[t]);
        valid[r] = 1;
    }
}
void cuda_xent_forward(real *loss, real *valid, const real *logits, const int32_t *target, int R, int V) {
    if (R <= 0) return;
    k_xent_fwd<<<R, 256>>>(loss, valid, logits, target, V);
    KERNEL_CHECK("k_xent_fwd");
}
/* in place: l = scale * (softmax(l) - onehot(target)); rows with target < 0 become 0 */
__global__ void k_xent_bwd(float *dl, const int32_t *target, int V, float scale) {
    __shared__ float shf[32];
    __shared__ double shd[32];
    int r = blockIdx.x, t = target[r];
    float *l = dl + (size_t)r * V;
    if (t < 0) {
        for (int i = threadIdx.x; i < V; i += blockDim.x) l[i] = 0;
        return;
    }
    float mx = -INFINITY;
    for (int i = threadIdx.x; i < V; i += blockDim.x) mx = fmaxf(mx, l[i]);
    mx = block_max(mx, shf);
    float s = 0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) s += expf(l[i] - mx);
    float inv = (float)(1.0 / block_sum((double)s, shd));
    for (int i = threadIdx.x; i < V; i += blockDim.x) l[i] = expf(l[i] - mx) * inv * scale;
    __syncthreads();
    if (threadIdx.x == 0) l[t] -= scale;
}
void cuda_xent_backward(real *dlogits, const int32_t *target, int R, int V, real scale) {
    if (R <= 0) return;
    k_xent_bwd<<<R, 256>>>(dlogits, target, V, scale);
    KERNEL_CHECK("k_xent_bwd");
}
/* training: the loss, then softmax - onehot in place (the backward kernel at scale 1) */
void cuda_xent_grad(real *loss, real *valid, real *logits, const int32_t *target, int R, int V) {
    cuda_xent_forward(loss, valid, logits, target, R, V);
    cuda_xent_backward(logits, target, R, V, 1);
}

/* distillation, one block per row: p = softmax(t / T), q = softmax(s / T); kl = KL(p || q),
 * t becomes scale (q - p); rows with target < 0 become 0 */
__global__ void k_distill(float *kl, float *t, const float *s, const int32_t *target, int V, float T, float scale) {
    __shared__ float shf[32];
    __shared__ double shd[32];
    int r = blockIdx.x;
    float *tr = t + (size_t)r * V;
    const float *sr = s + (size_t)r * V;
    if (target[r] < 0) {
        for (int i = threadIdx.x; i < V; i += blockDim.x) tr[i] = 0;
        if (threadIdx.x == 0) kl[r] = 0;
        return;
    }
    float it = 1.0f / T, mt = -INFINITY, ms = -INFINITY;
    for (int i = threadIdx.x; i < V; i += blockDim.x) mt = fmaxf(mt, tr[i] * it), ms = fmaxf(ms, sr[i] * it);
    mt = block_max(mt, shf);
    ms = block_max(ms, shf);
    double zt = 0, zs = 0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) zt += exp((double)(tr[i] * it - mt)), zs += exp((double)(sr[i] * it - ms));
    zt = block_sum(zt, shd);
    zs = block_sum(zs, shd);
    double lzt = log(zt) + mt, lzs = log(zs) + ms, acc = 0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        double lp = tr[i] * it - lzt, lq = sr[i] * it - lzs, p = exp(lp);
        acc += p * (lp - lq);
        tr[i] = (float)(scale * (exp(lq) - p));
    }
    acc = block_sum(acc, shd);
    if (threadIdx.x == 0) kl[r] = (float)acc;
}
void cuda_distill_grad(real *kl, real *t, const real *s, const int32_t *target, int R, int V, real T, real scale) {
    if (R <= 0) return;
    k_distill<<<R, 256>>>(kl, t, s, target, V, T, scale);
    KERNEL_CHECK("k_distill");
}

/* first index of the row maximum (as the CPU loop); out is backend (device) memory */
__global__ void k_argmax(int32_t *out, const float *x, int V) {
    __shared__ float sv[32];
    __shared__ int si[32];
    const float *l = x + (size_t)blockIdx.x * V;
    float bv = -INFINITY;
    int bi = V;
    for (int i = threadIdx.x; i < V; i += blockDim.x)
        if (l[i] > bv || bi == V) bv = l[i], bi = i;
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ov > bv || (ov == bv && oi < bi)) bv = ov, bi = oi;
    }
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) sv[w] = bv, si[w] = bi;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < (int)(blockDim.x >> 5); i++)
            if (sv[i] > bv || (sv[i] == bv && si[i] < bi)) bv = sv[i], bi = si[i];
        out[blockIdx.x] = bi < V ? bi : 0;
    }
}
void cuda_argmax_rows(int32_t *out, const real *x, int R, int V) {
    if (R <= 0) return;
    k_argmax<<<R, 256>>>(out, x, V);
    KERNEL_CHECK("k_argmax");
}

/* ---------------------------------------------------------------- heads */
/* x [B,N,H*d] <-> xh [B,H,N,d]; one thread per element of xh */
__global__ void k_heads(float *xh, float *x, int B, int N, int H, int d, int merge) {
    size_t n = (size_t)B * N * H * d;
    GRID_STRIDE(i, n) {
        int e = (int)(i % d);
        size_t r = i / d;
        int t = (int)(r % N);
        size_t bh = r / N;
        int h = (int)(bh % H), b = (int)(bh / H);
        size_t j = ((size_t)b * N + t) * H * d + (size_t)h * d + e;
        if (merge) x[j] = xh[i];
        else xh[i] = x[j];
    }
}
void cuda_split_heads(real *xh, const real *x, int B, int N, int H, int d) {
    size_t n = (size_t)B * N * H * d;
    if (!n) return;
    k_heads<<<grid_for(n), TPB>>>(xh, (float *)x, B, N, H, d, 0);
    KERNEL_CHECK("k_heads split");
}
void cuda_merge_heads(real *x, const real *xh, int B, int N, int H, int d) {
    size_t n = (size_t)B * N * H * d;
    if (!n) return;
    k_heads<<<grid_for(n), TPB>>>((float *)xh, x, B, N, H, d, 1);
    KERNEL_CHECK("k_heads merge");
}

/* ---------------------------------------------------------------- row softmax */
__global__ void k_softmax_rows(float *x, int C, float scale, const float *colbias) {
    __shared__ float shf[32];
    __shared__ double shd[32];
    float *row = x + (size_t)blockIdx.x * C;
    float mx = -INFINITY;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float v = row[c] * scale + (colbias ? colbias[c] : 0.f);
        row[c] = v;
        mx = fmaxf(mx, v);
    }
    mx = block_max(mx, shf);
    if (mx == -INFINITY) {
        for (int c = threadIdx.x; c < C; c += blockDim.x) row[c] = 0;
        return;
    }
    float s = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float e = expf(row[c] - mx);
        row[c] = e;
        s += e;
    }
    float inv = (float)(1.0 / block_sum((double)s, shd));
    for (int c = threadIdx.x; c < C; c += blockDim.x) row[c] *= inv;
}
static int row_threads(int C) { return C >= 256 ? 256 : ((C + 31) / 32) * 32; }
void cuda_softmax_rows(real *x, int R, int C, real scale, const real *colbias) {
    if (R <= 0 || C <= 0) return;
    k_softmax_rows<<<R, row_threads(C)>>>(x, C, scale, colbias);
    KERNEL_CHECK("k_softmax_rows");
}
__global__ void k_softmax_rows_bwd(float *dy, const float *y, int C) {
    __shared__ double shd[32];
    float *g = dy + (size_t)blockIdx.x * C;
    const float *p = y + (size_t)blockIdx.x * C;
    float dot = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) dot += g[c] * p[c];
    float D = (float)block_sum((double)dot, shd);
    for (int c = threadIdx.x; c < C; c += blockDim.x) g[c] = p[c] * (g[c] - D);
}
void cuda_softmax_rows_backward(real *dy, const real *y, int R, int C) {
    if (R <= 0 || C <= 0) return;
    k_softmax_rows_bwd<<<R, row_threads(C)>>>(dy, y, C);
    KERNEL_CHECK("k_softmax_rows_bwd");
}

/* ---------------------------------------------------------------- attention mask */
#define WS_MASK 8
__global__ void k_attn_mask(float *S, const uint8_t *km, int B, int H, int N, int causal) {
    size_t n = (size_t)B * H * N * N;
    GRID_STRIDE(idx, n) {
        int j = (int)(idx % N);
        size_t r = idx / N;
        int i = (int)(r % N), b = (int)(r / N / H);
        if ((causal && j > i) || (km && !km[(size_t)b * N + j])) S[idx] = -INFINITY;
    }
}
void cuda_attn_mask(real *S, const uint8_t *keymask, int B, int H, int N, int causal) {
    if (!causal && !keymask) return;
    size_t n = (size_t)B * H * N * N;
    if (!n) return;
    uint8_t *km = NULL;
    if (keymask) {
        km = (uint8_t *)cuda_ws(WS_MASK, (size_t)B * N);
        CUDA_CHECK(cudaMemcpy(km, keymask, (size_t)B * N, cudaMemcpyHostToDevice));
    }
    k_attn_mask<<<grid_for(n), TPB>>>(S, km, B, H, N, causal);
    KERNEL_CHECK("k_attn_mask");
}
