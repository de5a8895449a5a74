/* cpu_rope.c: rotary position embeddings on the CPU (ops.h rope_forward, rope_backward;
 * docs/model.md §1). The angles p theta^(-2i/d) of the N positions are tabulated once a
 * (N, d, pos0, theta) (cos and sin in double, kept for the next call), then every (sequence, head) row turns its pairs
 * (i, i + d/2) by them; the backward turns by the opposite angles. Each output pair has
 * one writer, so the result does not depend on the number of threads. */
#include <math.h>
#include <stdlib.h>

#include "ops/cpu/cpu.h"

/* The angle table cos, sin [N, d/2] of the last (N, d, pos0, theta): a layer's q and k and
 * their backward turn by the same angles, so the table is made once and kept, one a calling
 * thread; the loop below is the parallel part). */
static _Thread_local struct {
    double *cs; size_t cap; int N, d, pos0; real theta;
} g_tab;
static const double *angles(int N, int d, int pos0, real theta) {
    int h2 = d / 2;
    size_t nt = (size_t)N * h2;
    if (g_tab.cs && g_tab.N == N && g_tab.d == d && g_tab.pos0 == pos0 && g_tab.theta == theta) return g_tab.cs;
    if (2 * nt > g_tab.cap) {
        free(g_tab.cs);
        g_tab.cs = xmalloc(2 * nt * sizeof *g_tab.cs);
        g_tab.cap = 2 * nt;
    }
    double *cs = g_tab.cs, *sn = cs + nt;
    for (int i = 0; i < h2; i++) {
        double f = pow((double)theta, -2.0 * i / d);
        for (int n = 0; n < N; n++) {
            double a = (double)(pos0 + n) * f;
            cs[(size_t)n * h2 + i] = cos(a), sn[(size_t)n * h2 + i] = sin(a);
        }
    }
    g_tab.N = N, g_tab.d = d, g_tab.pos0 = pos0, g_tab.theta = theta;
    return cs;
}

/* sign +1: the rotation, -1: its inverse */
static void rope_rotate(real *y, const real *x, int B, int H, int N, int d, int pos0, real theta, double sign) {
    int h2 = d / 2;
    size_t rows = (size_t)B * H, nt = (size_t)N * h2;
    if (!rows || !nt) return;
    const double *cs = angles(N, d, pos0, theta), *sn = cs + nt;
#pragma omp parallel for schedule(static) if (PAR_WORTH(rows * N * d))
    for (size_t r = 0; r < rows; r++)
        for (int n = 0; n < N; n++) {
            const real *xr = x + (r * N + n) * d;
            real *yr = y + (r * N + n) * d;
            const double *c = cs + (size_t)n * h2, *s = sn + (size_t)n * h2;
            for (int i = 0; i < h2; i++) {
                double a = xr[i], b = xr[i + h2], si = sign * s[i];
                yr[i] = (real)(a * c[i] - b * si);
                yr[i + h2] = (real)(b * c[i] + a * si);
            }
        }
}

void cpu_rope_forward(real *y, const real *x, int B, int H, int N, int d, int pos0, real theta) {
    rope_rotate(y, x, B, H, N, d, pos0, theta, 1);
}
void cpu_rope_backward(real *dx, const real *dy, int B, int H, int N, int d, int pos0, real theta) {
    rope_rotate(dx, dy, B, H, N, d, pos0, theta, -1);
}
