/* cpu_cls.c: CPU ops of the classifier heads and of max pooling (ops.h, section "classifier"). */
#include "ops/cpu/cpu.h"

void cpu_pair_features_forward(real *out, const real *u, const real *v, int B, int D) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * (size_t)D))
    for (int b = 0; b < B; b++) {
        const real *u_b = u + (size_t)b * D, *v_b = v + (size_t)b * D;
        real *o_b = out + (size_t)b * 4 * D;
        for (int e = 0; e < D; e++) {
            o_b[e] = u_b[e];
            o_b[D + e] = v_b[e];
            o_b[2 * D + e] = u_b[e] * v_b[e];
            o_b[3 * D + e] = u_b[e] - v_b[e];
        }
    }
}

void cpu_pair_features_backward(real *du, real *dv, const real *dout, const real *u, const real *v, int B, int D) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * (size_t)D))
    for (int b = 0; b < B; b++) {
        const real *u_b = u + (size_t)b * D, *v_b = v + (size_t)b * D, *g = dout + (size_t)b * 4 * D;
        real *du_b = du + (size_t)b * D, *dv_b = dv + (size_t)b * D;
        for (int e = 0; e < D; e++) {
            du_b[e] += g[e] + g[2 * D + e] * v_b[e] + g[3 * D + e];
            dv_b[e] += g[D + e] + g[2 * D + e] * u_b[e] - g[3 * D + e];
        }
    }
}

void cpu_maxpool_forward(real *out, int32_t *arg, const real *x, const real *w, int S, int N, int D) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)S * N * D))
    for (int s = 0; s < S; s++) {
        real *o = out + (size_t)s * D;
        int32_t *a = arg + (size_t)s * D;
        for (int d = 0; d < D; d++) o[d] = 0, a[d] = -1;
        for (int n = 0; n < N; n++) {
            if (!(w[(size_t)s * N + n] > 0)) continue;
            const real *xr = x + ((size_t)s * N + n) * D;
            for (int d = 0; d < D; d++)
                if (a[d] < 0 || xr[d] > o[d]) o[d] = xr[d], a[d] = n;
        }
    }
}

void cpu_maxpool_backward(real *dx, const real *dout, const int32_t *arg, int S, int N, int D) {
    for (int s = 0; s < S; s++)
        for (int d = 0; d < D; d++) {
            int32_t n = arg[(size_t)s * D + d];
            if (n >= 0) dx[((size_t)s * N + n) * D + d] += dout[(size_t)s * D + d];
        }
}
