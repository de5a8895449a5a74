/* cuda_conv.cu: the convolutional stem's ops (docs/model.md §2.1; contracts in ops/ops.h):
 * im2col for the 3 x 3 dilated convolution (one thread per element; a negative dilation
 * mirrors the taps), and the per-channel normalisation over groups of rows,
 * whose sums run over fixed blocks of rows in double and are added in block order (the
 * same bits run after run). */
#include "ops/cuda/cuda_common.cuh"

#define CH_ROWS 256
#define CH_EPS 1e-5

__global__ void k_im2col(float *col, const float *x, int S, int H, int W, int C, int dil) {
    size_t P = (size_t)H * W, n = (size_t)S * P * 9 * C;
    GRID_STRIDE(e, n) {
        int c = (int)(e % C), k = (int)(e / C % 9);
        size_t sp = e / ((size_t)9 * C), s = sp / P, p = sp % P;
        int y = (int)(p / W) + (k / 3 - 1) * dil, xx = (int)(p % W) + (k % 3 - 1) * dil;
        col[e] = y < 0 || y >= H || xx < 0 || xx >= W ? 0.f : x[(s * P + (size_t)y * W + xx) * C + c];
    }
}
void cuda_im2col3x3(real *col, const real *x, int S, int H, int W, int C, int dil) {
    size_t n = (size_t)S * H * W * 9 * C;
    if (!n) return;
    k_im2col<<<grid_for(n), TPB>>>(col, x, S, H, W, C, dil);
    KERNEL_CHECK("k_im2col");
}
/* Partial sums over block rb of CH_ROWS rows of group s, channel c = blockIdx.x * 32 + tx:
 * mode 0: x; mode 1: (x - m)^2; mode 2: dout (into p) and dout * xhat (into q). Threads
 * (tx, ty) take rows ty, ty + 8, ...; the 8 partials are added in ty order. */
__global__ void k_ch_part(double *p, double *q, const float *x, const float *dout, const float *m, const float *rs,
                          int S, int N, int C, int nrb, int mode) {
    __shared__ double sp[8][33], sq[8][33];
    int c = blockIdx.x * 32 + threadIdx.x, rb = blockIdx.y, s = blockIdx.z;
    int r0 = rb * CH_ROWS, r1 = min(N, r0 + CH_ROWS);
    double a = 0, b = 0;
    if (c < C)
        for (int r = r0 + threadIdx.y; r < r1; r += 8) {
            size_t i = ((size_t)s * N + r) * C + c;
            if (mode == 0) a += x[i];
            else if (mode == 1) {
                double d = x[i] - m[(size_t)s * C + c];
                a += d * d;
            } else {
                float g = dout[i];
                a += g;
                b += (double)g * ((x[i] - m[(size_t)s * C + c]) * rs[(size_t)s * C + c]);
            }
        }
    sp[threadIdx.y][threadIdx.x] = a;
    sq[threadIdx.y][threadIdx.x] = b;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        double ta = 0, tb = 0;
        for (int i = 0; i < 8; i++) ta += sp[i][threadIdx.x], tb += sq[i][threadIdx.x];
        size_t o = ((size_t)s * nrb + rb) * C + c;
        p[o] = ta;
        if (mode == 2) q[o] = tb;
    }
}
/* out[s*C + c] = sum over the row blocks of the partials, in block order */
__global__ void k_ch_total(double *out, const double *part, int S, int C, int nrb) {
    GRID_STRIDE(e, (size_t)S * C) {
        size_t s = e / C, c = e % C;
        double t = 0;
        for (int b = 0; b < nrb; b++) t += part[(s * nrb + b) * C + c];
        out[e] = t;
    }
}
__global__ void k_ch_stat(float *v, const double *sum, size_t n, int N, int rstd) {
    GRID_STRIDE(e, n) { v[e] = rstd ? (float)(1.0 / sqrt(sum[e] / N + CH_EPS)) : (float)(sum[e] / N); }
}
__global__ void k_ch_apply(float *out, const float *x, const float *m, const float *rs, const float *w, const float *b,
                           int S, int N, int C) {
    GRID_STRIDE(e, (size_t)S * N * C) {
        size_t c = e % C, sc = e / ((size_t)N * C) * C + c;
        out[e] = (x[e] - m[sc]) * rs[sc] * w[c] + b[c];
    }
}
static dim3 ch_grid(int S, int N, int C) { return dim3((C + 31) / 32, (N + CH_ROWS - 1) / CH_ROWS, S); }

void cuda_chnorm_forward(real *out, real *mean, real *rstd, const real *x, const real *w, const real *b, int S, int N,
                         int C, int stats) {
    if ((size_t)S * N * C == 0) return;
    if (stats) {
        int nrb = (N + CH_ROWS - 1) / CH_ROWS;
        size_t np = (size_t)S * nrb * C, ns = (size_t)S * C;
        double *part = (double *)cuda_ws(WS_COLSUM, (np + ns) * sizeof(double)), *sum = part + np;
        for (int pass = 0; pass < 2; pass++) {
            k_ch_part<<<ch_grid(S, N, C), dim3(32, 8)>>>(part, NULL, x, NULL, mean, NULL, S, N, C, nrb, pass);
            KERNEL_CHECK("k_ch_part");
            k_ch_total<<<grid_for(ns), TPB>>>(sum, part, S, C, nrb);
            KERNEL_CHECK("k_ch_total");
            k_ch_stat<<<grid_for(ns), TPB>>>(pass ? rstd : mean, sum, ns, N, pass);
            KERNEL_CHECK("k_ch_stat");
        }
    }
    k_ch_apply<<<grid_for((size_t)S * N * C), TPB>>>(out, x, mean, rstd, w, b, S, N, C);
    KERNEL_CHECK("k_ch_apply");
}

/* dw[c] += sum_s g[s,c], db[c] += sum_s a[s,c], in s order */
__global__ void k_ch_dwdb(float *dw, float *db, const double *sa, const double *sg, int S, int C) {
    GRID_STRIDE(c, (size_t)C) {
        double tw = 0, tb = 0;
        for (int s = 0; s < S; s++) tw += sg[(size_t)s * C + c], tb += sa[(size_t)s * C + c];
        dw[c] += (float)tw;
        db[c] += (float)tb;
    }
}
__global__ void k_ch_dx(float *dx, const float *dout, const float *x, const float *w, const float *m, const float *rs,
                        const double *sa, const double *sg, int S, int N, int C) {
    GRID_STRIDE(e, (size_t)S * N * C) {
        size_t c = e % C, sc = e / ((size_t)N * C) * C + c;
        float xh = (x[e] - m[sc]) * rs[sc];
        dx[e] += rs[sc] * w[c] * (dout[e] - (float)(sa[sc] / N) - xh * (float)(sg[sc] / N));
    }
}
void cuda_chnorm_backward(real *dx, real *dw, real *db, const real *dout, const real *x, const real *w,
                          const real *mean, const real *rstd, int S, int N, int C) {
    if ((size_t)S * N * C == 0) return;
    int nrb = (N + CH_ROWS - 1) / CH_ROWS;
    size_t np = (size_t)S * nrb * C, ns = (size_t)S * C;
    double *pa = (double *)cuda_ws(WS_COLSUM, (2 * np + 2 * ns) * sizeof(double)), *pg = pa + np, *sa = pg + np,
           *sg = sa + ns;
    k_ch_part<<<ch_grid(S, N, C), dim3(32, 8)>>>(pa, pg, x, dout, mean, rstd, S, N, C, nrb, 2);
    KERNEL_CHECK("k_ch_part");
    k_ch_total<<<grid_for(ns), TPB>>>(sa, pa, S, C, nrb);
    KERNEL_CHECK("k_ch_total");
    k_ch_total<<<grid_for(ns), TPB>>>(sg, pg, S, C, nrb);
    KERNEL_CHECK("k_ch_total");
    k_ch_dwdb<<<grid_for(C), TPB>>>(dw, db, sa, sg, S, C);
    KERNEL_CHECK("k_ch_dwdb");
    k_ch_dx<<<grid_for((size_t)S * N * C), TPB>>>(dx, dout, x, w, mean, rstd, sa, sg, S, N, C);
    KERNEL_CHECK("k_ch_dx");
}
