/* cpu_exp.h: exp over arrays for the CPU kernels (tiled attention, the Mamba scan).
 * float32: a Cephes-style expf (range reduction by ln 2,
 * degree-6 polynomial, relative error about 2e-7), written with GCC vector extensions so
 * that eight lanes run at once; exactly 0 below -87 (so -inf masks give 0), NaN stays NaN.
 * float64:
 * libm's exp (the gradient checks).
 *   vexp1(x)              one value
 *   vexp_sub(y, x, m, n)  y[i] = exp(x[i] - m), returns sum y (y may alias x)
 *   vexp_mul(y, x, s, n)  y[i] = exp(s x[i]) */
#ifndef GMA_CPU_EXP_H
#define GMA_CPU_EXP_H
#include <stdint.h>
#include <string.h>

#include "core/common.h"

#ifdef GMA_DOUBLE
static inline real vexp1(real x) { return exp(x); }
static inline double vexp_sub(real *y, const real *x, real m, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (y[i] = exp(x[i] - m));
    return s;
}
static inline void vexp_mul(real *y, const real *x, real sc, int n) {
    for (int i = 0; i < n; i++) y[i] = exp(sc * x[i]);
}
#else
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
static inline float vexp1(float x) {
    if (x < -87.0f) return 0.0f; /* NaN falls through and stays NaN */
    float xc = x > 88.0f ? 88.0f : x;
    float n = (float)(int32_t)(xc * 1.44269504088896341f + 128.5f) - 128.0f;
    float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float sc;
    memcpy(&sc, &bits, sizeof sc);
    return p * sc;
}
/* e^r for the reduced argument r (|r| <= ln 2 / 2), eight lanes: the degree-6 polynomial of
 * vexp8 and of the Mamba scan's vexpn8 (cpu_mamba.c) */
static inline __attribute__((always_inline)) v8f vexp_poly8(v8f r) {
    v8f p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * r * r + r + 1.0f;
}
static inline v8f vexp8(v8f x) {
    const v8f lo = {-87, -87, -87, -87, -87, -87, -87, -87}, hi = {88, 88, 88, 88, 88, 88, 88, 88};
    v8i low = x < lo; /* true for -inf; false for NaN, which stays NaN */
    v8i big = x > hi;
    v8f xc = (v8f)(((v8i)x & ~big) | ((v8i)hi & big));
    xc = (v8f)(((v8i)xc & ~low) | ((v8i)lo & low));
    v8f n = __builtin_convertvector(__builtin_convertvector(xc * 1.44269504088896341f + 128.5f, v8i), v8f) - 128.0f;
    v8f r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    v8f p = vexp_poly8(r);
    v8i bits = (__builtin_convertvector(n, v8i) + 127) << 23;
    return (v8f)((v8i)(p * (v8f)bits) & ~low);
}
static inline double vexp_sub(real *y, const real *x, real m, int n) {
    v8f acc = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f v;
        memcpy(&v, x + i, sizeof v);
        v = vexp8(v - m);
        memcpy(y + i, &v, sizeof v);
        acc += v;
    }
    double s = 0;
    for (int j = 0; j < 8; j++) s += acc[j];
    for (; i < n; i++) s += (y[i] = vexp1(x[i] - m));
    return s;
}
static inline void vexp_mul(real *y, const real *x, real sc, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f v;
        memcpy(&v, x + i, sizeof v);
        v = vexp8(v * sc);
        memcpy(y + i, &v, sizeof v);
    }
    for (; i < n; i++) y[i] = vexp1(sc * x[i]);
}
#endif
#endif
