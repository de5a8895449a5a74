/* cpu_linear.c: the Linear Transformer's feature map on the CPU (docs/model.md §3.5 `linear`):
 * phi(x) = elu(x) + 1 = x + 1 for x > 0, rexp(x) otherwise (always positive), and its
 * derivative 1 for x > 0, rexp(x) otherwise. The mixing itself is the shared core
 * (cpu_linmix.c). */
#include "ops/cpu/cpu.h"

void cpu_elu1_forward(real *out, const real *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = x[i] > 0 ? x[i] + 1 : rexp(x[i]);
}

void cpu_elu1_backward(real *dx, const real *dout, const real *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) dx[i] += dout[i] * (x[i] > 0 ? 1 : rexp(x[i]));
}
