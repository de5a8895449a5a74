/* cpu_exp.h: exp over arrays for the CPU kernels (tiled attention, the Mamba scan).
 * float32: a Cephes-style expf (range reduction by ln 2,
 * degree-6 polynomial, relative error about 2e-7), written with GCC vector extensions so
 * that 8 or 16 lanes (VL) run at once; exactly 0 below -87 (so -inf masks give 0), NaN stays NaN.
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
typedef uint32_t v8u __attribute__((vector_size(32)));
/* The widest lanes the build's CPU has for the array loops: 16 with AVX-512, else 8 (GCC
 * splits a wider vector into what the CPU has, so VL only picks the faster width). */
#ifdef __AVX512F__
#define VL 16
#else
#define VL 8
#endif
typedef float vf __attribute__((vector_size(4 * VL)));
typedef int32_t vi __attribute__((vector_size(4 * VL)));
typedef uint32_t vu __attribute__((vector_size(4 * VL)));
static inline float vexp1(float x) {
    if (x < -87.0f) return 0.0f; /* NaN falls through and stays NaN */
    float xc = x > 88.0f ? 88.0f : x;
    float xn = xc == xc ? xc : 0.0f; /* NaN: n from 0 (r stays NaN), so the int conversion and shift are defined */
    float n = (float)(int32_t)(xn * 1.44269504088896341f + 128.5f) - 128.0f;
    float r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = (int32_t)((uint32_t)((int32_t)n + 127) << 23);
    float sc;
    memcpy(&sc, &bits, sizeof sc);
    return p * sc;
}
/* e^r for the reduced argument r (|r| <= ln 2 / 2) and e^x on all lanes of a vector type:
 * vexp1's formulas lane by lane (the same value in every lane width). Defined for eight lanes
 * (vexp_poly8, vexp8: the Mamba scan's vexpn8 in cpu_mamba.c uses them) and for VL lanes
 * (vexpv). */
#define GMA_DEF_VEXP(poly, vexp, VF, VI, VU)                                                                     \
    static inline __attribute__((always_inline)) VF poly(VF r) {                                                 \
        VF p = r * 1.9875691500e-4f + 1.3981999507e-3f;                                                          \
        p = p * r + 8.3334519073e-3f;                                                                            \
        p = p * r + 4.1665795894e-2f;                                                                            \
        p = p * r + 1.6666665459e-1f;                                                                            \
        p = p * r + 5.0000001201e-1f;                                                                            \
        return p * r * r + r + 1.0f;                                                                             \
    }                                                                                                            \
    static inline VF vexp(VF x) {                                                                                \
        VI low = x < -87.0f; /* true for -inf; false for NaN, which stays NaN */                                 \
        VI big = x > 88.0f;                                                                                      \
        VF xc = (VF)(((VI)x & ~big) | ((VI)((VF){0} + 88.0f) & big));                                            \
        xc = (VF)(((VI)xc & ~low) | ((VI)((VF){0} - 87.0f) & low));                                              \
        VF xn = (VF)((VI)xc & (VI)(xc == xc)); /* NaN lanes: n from 0, r stays NaN (defined conversion) */       \
        VF n = __builtin_convertvector(__builtin_convertvector(xn * 1.44269504088896341f + 128.5f, VI), VF) -    \
               128.0f;                                                                                           \
        VF r = xc - n * 0.693359375f + n * 2.12194440e-4f;                                                       \
        VF p = poly(r);                                                                                          \
        VI bits = (VI)((VU)(__builtin_convertvector(n, VI) + 127) << 23); /* unsigned: a defined shift */        \
        return (VF)((VI)(p * (VF)bits) & ~low);                                                                  \
    }
GMA_DEF_VEXP(vexp_poly8, vexp8, v8f, v8i, v8u)
#if VL == 8
#define vexpv vexp8
#else
GMA_DEF_VEXP(vexp_polyv, vexpv, vf, vi, vu)
#endif
#undef GMA_DEF_VEXP
/* the sum of a vector's lanes in double, lane order */
static inline double vhsum(vf a) {
    double s = 0;
    for (int j = 0; j < VL; j++) s += a[j];
    return s;
}
static inline double vexp_sub(real *y, const real *x, real m, int n) {
    vf acc = {0};
    int i = 0;
    for (; i + VL <= n; i += VL) {
        vf v;
        memcpy(&v, x + i, sizeof v);
        v = vexpv(v - m);
        memcpy(y + i, &v, sizeof v);
        acc += v;
    }
    double s = vhsum(acc);
    for (; i < n; i++) s += (y[i] = vexp1(x[i] - m));
    return s;
}
static inline void vexp_mul(real *y, const real *x, real sc, int n) {
    int i = 0;
    for (; i + VL <= n; i += VL) {
        vf v;
        memcpy(&v, x + i, sizeof v);
        v = vexpv(v * sc);
        memcpy(y + i, &v, sizeof v);
    }
    for (; i < n; i++) y[i] = vexp1(sc * x[i]);
}
#endif
#endif
