/* cpu_conv.c: the convolutional stem's ops (docs/model.md §2.1): the 3 x 3 dilated
 * convolution's im2col (mirrored taps, for the transposed convolution, at a negative
 * dilation) and the per-channel normalisation over groups of rows (batch norm: one group
 * of every pixel of the batch; instance norm: one group per image). Reductions run over fixed blocks of rows added in block order, so results do not
 * depend on the number of threads. */
#include <math.h>

#include "ops/cpu/cpu.h"

#define CH_EPS 1e-5
#define CH_ROWS 256 /* rows of one partial sum */

/* the tap (ky, kx) of pixel (i, j) at dilation dil, or -1 outside the image */
static inline long tap(int i, int j, int ky, int kx, int H, int W, int dil) {
    int y = i + (ky - 1) * dil, x = j + (kx - 1) * dil;
    return y < 0 || y >= H || x < 0 || x >= W ? -1 : (long)y * W + x;
}

void cpu_im2col3x3(real *col, const real *x, int S, int H, int W, int C, int dil) {
    long P = (long)H * W;
#pragma omp parallel for collapse(2) schedule(static) if (PAR_WORTH((size_t)S * P * 9 * C))
    for (int s = 0; s < S; s++)
        for (long p = 0; p < P; p++) {
            int i = (int)(p / W), j = (int)(p % W);
            real *row = col + ((size_t)s * P + p) * 9 * C;
            for (int k = 0; k < 9; k++) {
                long q = tap(i, j, k / 3, k % 3, H, W, dil);
                real *dst = row + (size_t)k * C;
                if (q < 0)
                    for (int c = 0; c < C; c++) dst[c] = 0;
                else {
                    const real *src = x + ((size_t)s * P + q) * C;
                    for (int c = 0; c < C; c++) dst[c] = src[c];
                }
            }
        }
}

/* part[(s*nb + blk)*C + c] = sum over the rows of block blk of group s of f(x - m[s,c]) in
 * double, f = identity (m NULL) or square; then per (s, c) the blocks in order */
static void group_sums(double *out, double *part, const real *x, const real *m, int S, int N, int C) {
    int nb = (N + CH_ROWS - 1) / CH_ROWS;
#pragma omp parallel for collapse(2) schedule(static) if (PAR_WORTH((size_t)S * N * C))
    for (int s = 0; s < S; s++)
        for (int blk = 0; blk < nb; blk++) {
            double *p = part + ((size_t)s * nb + blk) * C;
            for (int c = 0; c < C; c++) p[c] = 0;
            int n1 = GMA_MIN(N, (blk + 1) * CH_ROWS);
            const real *ms = m ? m + (size_t)s * C : NULL;
            for (int n = blk * CH_ROWS; n < n1; n++) {
                const real *xr = x + ((size_t)s * N + n) * C;
                if (ms)
                    for (int c = 0; c < C; c++) p[c] += (double)(xr[c] - ms[c]) * (xr[c] - ms[c]);
                else
                    for (int c = 0; c < C; c++) p[c] += xr[c];
            }
        }
    for (int s = 0; s < S; s++)
        for (int c = 0; c < C; c++) {
            double t = 0;
            for (int blk = 0; blk < nb; blk++) t += part[((size_t)s * nb + blk) * C + c];
            out[(size_t)s * C + c] = t;
        }
}

void cpu_chnorm_forward(real *out, real *mean, real *rstd, const real *x, const real *w, const real *b, int S, int N,
                        int C, int stats) {
    if (stats) {
        int nb = (N + CH_ROWS - 1) / CH_ROWS;
        size_t np = (size_t)S * nb * C, ns = (size_t)S * C;
        double *part = (double *)cpu_workspace(3, (np + ns) * sizeof(double) / sizeof(real)), *sum = part + np;
        group_sums(sum, part, x, NULL, S, N, C);
        for (size_t i = 0; i < ns; i++) mean[i] = (real)(sum[i] / N);
        group_sums(sum, part, x, mean, S, N, C);
        for (size_t i = 0; i < ns; i++) rstd[i] = (real)(1.0 / sqrt(sum[i] / N + CH_EPS));
    }
#pragma omp parallel for collapse(2) schedule(static) if (PAR_WORTH((size_t)S * N * C))
    for (int s = 0; s < S; s++)
        for (int n = 0; n < N; n++) {
            const real *xr = x + ((size_t)s * N + n) * C, *ms = mean + (size_t)s * C, *rs = rstd + (size_t)s * C;
            real *o = out + ((size_t)s * N + n) * C;
            for (int c = 0; c < C; c++) o[c] = (xr[c] - ms[c]) * rs[c] * w[c] + b[c];
        }
}

/* per (s, c): a = sum dout, g = sum dout * xhat (the bias and weight gradients of group s);
 * dx = rstd w (dout - a / N - xhat g / N) */
void cpu_chnorm_backward(real *dx, real *dw, real *db, const real *dout, const real *x, const real *w,
                         const real *mean, const real *rstd, int S, int N, int C) {
    int nb = (N + CH_ROWS - 1) / CH_ROWS;
    size_t np = (size_t)S * nb * C, ns = (size_t)S * C;
    double *pa = (double *)cpu_workspace(3, 2 * (np + ns) * sizeof(double) / sizeof(real)), *pg = pa + np;
    double *sa = pg + np, *sg = sa + ns;
#pragma omp parallel for collapse(2) schedule(static) if (PAR_WORTH((size_t)S * N * C))
    for (int s = 0; s < S; s++)
        for (int blk = 0; blk < nb; blk++) {
            double *a = pa + ((size_t)s * nb + blk) * C, *g = pg + ((size_t)s * nb + blk) * C;
            for (int c = 0; c < C; c++) a[c] = g[c] = 0;
            const real *ms = mean + (size_t)s * C, *rs = rstd + (size_t)s * C;
            for (int n = blk * CH_ROWS; n < GMA_MIN(N, (blk + 1) * CH_ROWS); n++) {
                const real *xr = x + ((size_t)s * N + n) * C, *dr = dout + ((size_t)s * N + n) * C;
                for (int c = 0; c < C; c++) {
                    a[c] += dr[c];
                    g[c] += (double)dr[c] * ((xr[c] - ms[c]) * rs[c]);
                }
            }
        }
    for (int s = 0; s < S; s++)
        for (int c = 0; c < C; c++) {
            double ta = 0, tg = 0;
            for (int blk = 0; blk < nb; blk++) ta += pa[((size_t)s * nb + blk) * C + c], tg += pg[((size_t)s * nb + blk) * C + c];
            sa[(size_t)s * C + c] = ta;
            sg[(size_t)s * C + c] = tg;
        }
    for (int c = 0; c < C; c++) {
        double tw = 0, tb = 0;
        for (int s = 0; s < S; s++) tw += sg[(size_t)s * C + c], tb += sa[(size_t)s * C + c];
        dw[c] += (real)tw;
        db[c] += (real)tb;
    }
#pragma omp parallel for collapse(2) schedule(static) if (PAR_WORTH((size_t)S * N * C))
    for (int s = 0; s < S; s++)
        for (int n = 0; n < N; n++) {
            const real *xr = x + ((size_t)s * N + n) * C, *dr = dout + ((size_t)s * N + n) * C;
            const real *ms = mean + (size_t)s * C, *rs = rstd + (size_t)s * C;
            const double *a = sa + (size_t)s * C, *g = sg + (size_t)s * C;
            real *d = dx + ((size_t)s * N + n) * C;
            for (int c = 0; c < C; c++) {
                real xh = (xr[c] - ms[c]) * rs[c];
                d[c] += rs[c] * w[c] * (dr[c] - (real)(a[c] / N) - xh * (real)(g[c] / N));
            }
        }
}
