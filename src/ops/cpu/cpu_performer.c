/* cpu_performer.c: Performer FAVOR+ positive random features on the CPU (docs/model.md §3.5
 * `performer`). For a head's rows x [N,d] and random features omega [m,d]:
 *   e = (x omega^T) / d^(1/4) - |x|^2 / (2 sqrt d)     (favor_logits)
 *   phi = scale * rexp(e - c)                            (favor_exp)
 * with c the row maximum (queries; its argmax is kept so that the backward pass can
 * differentiate through it) or a constant (keys). omega is a buffer, not trained.
 * The generalized ReLU kernel (performer.kernel "relu") has no projection:
 *   phi = max(x, 0) + eps                                 (favor_relu)
 * and its backward pass is relu_backward (cpu_nn.c). */
#include <string.h>

#include "ops/cpu/cpu.h"

void cpu_favor_logits_forward(real *e, const real *x, const real *omega, int B, int H, int N, int d, int m) {
    real s4 = (real)pow((double)d, -0.25), s2 = (real)(0.5 / sqrt((double)d));
    /* a product's multiply-adds over 8, as matmul_strided counts them: a decode step's few
     * rows (B H of N = 1) stay on one thread */
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * H * N * m * d / 8))
    for (int bh = 0; bh < B * H; bh++) {
        const real *xh = x + (size_t)bh * N * d, *om = omega + (size_t)(bh % H) * m * d;
        real *eh = e + (size_t)bh * N * m;
        cpu_matmul(eh, xh, om, N, m, d, 0, 1, s4, 0);
        for (int n = 0; n < N; n++) {
            double sq = 0;
            for (int i = 0; i < d; i++) sq += (double)xh[(size_t)n * d + i] * xh[(size_t)n * d + i];
            real sub = (real)(sq * s2);
            for (int f = 0; f < m; f++) eh[(size_t)n * m + f] -= sub;
        }
    }
}

void cpu_favor_logits_backward(real *dx, const real *de, const real *x, const real *omega, int B, int H, int N, int d,
                               int m) {
    real s4 = (real)pow((double)d, -0.25), s2 = (real)(1.0 / sqrt((double)d));
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < B * H; bh++) {
        const real *xh = x + (size_t)bh * N * d, *om = omega + (size_t)(bh % H) * m * d, *deh = de + (size_t)bh * N * m;
        real *dxh = dx + (size_t)bh * N * d;
        cpu_matmul(dxh, deh, om, N, d, m, 0, 0, s4, 1);
        for (int n = 0; n < N; n++) {
            double s = 0;
            for (int f = 0; f < m; f++) s += deh[(size_t)n * m + f];
            real g = (real)(s * s2);
            for (int i = 0; i < d; i++) dxh[(size_t)n * d + i] -= g * xh[(size_t)n * d + i];
        }
    }
}

void cpu_favor_exp_forward(real *phi, real *rowmax, const real *e, int R, int m, real c, real scale) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)m))
    for (int r = 0; r < R; r++) {
        const real *er = e + (size_t)r * m;
        real *pr = phi + (size_t)r * m, cr = c;
        if (rowmax) {
            int am = 0;
            for (int f = 1; f < m; f++)
                if (er[f] > er[am]) am = f;
            cr = er[am];
            rowmax[r] = (real)am;
        }
        for (int f = 0; f < m; f++) pr[f] = scale * rexp(er[f] - cr);
    }
}

void cpu_favor_exp_backward(real *de, const real *dphi, const real *phi, const real *rowmax, int R, int m) {
#pragma omp parallel for schedule(static)
    for (int r = 0; r < R; r++) {
        const real *g = dphi + (size_t)r * m, *p = phi + (size_t)r * m;
        real *d = de + (size_t)r * m;
        double s = 0;
        for (int f = 0; f < m; f++) {
            real t = g[f] * p[f];
            d[f] += t;
            s += t;
        }
        if (rowmax) d[(int)rowmax[r]] -= (real)s;
    }
}

void cpu_favor_relu_forward(real *phi, const real *x, size_t n, real eps) {
#pragma omp parallel for schedule(static) if (PAR_WORTH(n))
    for (size_t i = 0; i < n; i++) phi[i] = (x[i] > 0 ? x[i] : 0) + eps;
}

double cpu_maxval(const real *x, size_t n) {
    real mx = -INFINITY;
#pragma omp parallel for schedule(static) reduction(max : mx) if (PAR_WORTH(n))
    for (size_t i = 0; i < n; i++)
        if (x[i] > mx) mx = x[i];
    return mx;
}
