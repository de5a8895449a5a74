/* cpu_sdpa.c: tiled softmax attention on the CPU (GMA_SPEC 3.5, the optimised `sdpa`).
 *
 * Forward (FlashAttention-style online softmax): for each head and tile of TQ query rows,
 * walk the key tiles of TK columns (only up to the diagonal when causal), keeping per row
 * the running max m, the running sum l and the unnormalised output; at the end
 * out = acc / l and lse = m + log l is saved. Only TQ x TK scores exist at a time, so the
 * extra memory is O(N d) (out, lse) instead of O(N^2).
 *
 * Backward recomputes each score tile from q, k and lse: P = exp(scale q k^T + bias - lse),
 * dP = dO V^T, dS = P (dP - rowsum(dO * O)), dV += P^T dO, dK += scale dS^T Q,
 * dQ += scale dS K. With at least as many heads as threads each thread owns whole heads
 * (one pass); otherwise the key tiles (dK, dV) and the query tiles (dQ) are two parallel
 * passes, so no two threads write the same rows. Every sum runs in a fixed order.
 *
 * Shapes: q, k, v, out [B,H,N,d]; lse [B,H,N]; kbias [B,N]. */
#include <omp.h>
#include <string.h>

#include "ops/cpu/cpu.h"

#ifndef TQ
#define TQ 64
#endif
#ifndef TK
#define TK 64
#endif
/* exp over the score tiles. float32: a Cephes-style expf (range reduction by ln 2,
 * degree-6 polynomial, relative error about 2e-7), written with GCC vector extensions so
 * that eight lanes run at once; exactly 0 below -87 (so -inf masks give 0), NaN stays NaN.
 * float64:
 * libm's exp (the gradient checks). vexp_sub(y, x, m, n): y[i] = exp(x[i] - m), returns
 * the sum of y (y may alias x). */
#ifdef GMA_DOUBLE
static inline real rexp(real x) { return exp(x); }
static double vexp_sub(real *y, const real *x, real m, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (y[i] = exp(x[i] - m));
    return s;
}
#else
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
static inline float rexp(float x) {
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
static inline v8f vexp8(v8f x) {
    const v8f lo = {-87, -87, -87, -87, -87, -87, -87, -87}, hi = {88, 88, 88, 88, 88, 88, 88, 88};
    v8i low = x < lo; /* true for -inf; false for NaN, which stays NaN */
    v8i big = x > hi;
    v8f xc = (v8f)(((v8i)x & ~big) | ((v8i)hi & big));
    xc = (v8f)(((v8i)xc & ~low) | ((v8i)lo & low));
    v8f n = __builtin_convertvector(__builtin_convertvector(xc * 1.44269504088896341f + 128.5f, v8i), v8f) - 128.0f;
    v8f r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    v8f p = r * 1.9875691500e-4f + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    v8i bits = (__builtin_convertvector(n, v8i) + 127) << 23;
    return (v8f)((v8i)(p * (v8f)bits) & ~low);
}
static double vexp_sub(real *y, const real *x, real m, int n) {
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
    for (; i < n; i++) s += (y[i] = rexp(x[i] - m));
    return s;
}
#endif

void cpu_attn_forward(real *out, real *lse, const real *q, const real *k, const real *v, const real *kbias, int B,
                      int H, int N, int d, int causal, real scale) {
    int nq = (N + TQ - 1) / TQ;
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int bh = 0; bh < B * H; bh++)
        for (int qt = 0; qt < nq; qt++) {
            int b = bh / H, i0 = qt * TQ, Lq = GMA_MIN(TQ, N - i0);
            const real *qi = q + ((size_t)bh * N + i0) * d, *kh = k + (size_t)bh * N * d, *vh = v + (size_t)bh * N * d;
            const real *kb = kbias ? kbias + (size_t)b * N : NULL;
            real *S = cpu_workspace(0, (size_t)TQ * TK + (size_t)TQ * d + 2 * TQ);
            real *acc = S + (size_t)TQ * TK, *mrow = acc + (size_t)TQ * d, *lrow = mrow + TQ;
            memset(acc, 0, sizeof(real) * (size_t)Lq * d);
            for (int r = 0; r < Lq; r++) mrow[r] = -INFINITY, lrow[r] = 0;
            int jend = causal ? i0 + Lq : N;
            for (int j0 = 0; j0 < jend; j0 += TK) {
                int Lk = GMA_MIN(TK, jend - j0);
                cpu_matmul(S, qi, kh + (size_t)j0 * d, Lq, Lk, d, 0, 1, scale, 0);
                for (int r = 0; r < Lq; r++) {
                    real *row = S + (size_t)r * Lk;
                    int i = i0 + r;
                    if (kb)
                        for (int c = 0; c < Lk; c++) row[c] += kb[j0 + c];
                    if (causal)
                        for (int c = GMA_MAX(0, i - j0 + 1); c < Lk; c++) row[c] = -INFINITY;
                    real mx = -INFINITY;
#pragma omp simd reduction(max : mx)
                    for (int c = 0; c < Lk; c++) mx = row[c] > mx ? row[c] : mx;
                    real mnew = GMA_MAX(mrow[r], mx);
                    if (mnew == -INFINITY) {
                        memset(row, 0, sizeof(real) * Lk);
                        continue;
                    }
                    real alpha = rexp(mrow[r] - mnew), sum = (real)vexp_sub(row, row, mnew, Lk);
                    lrow[r] = lrow[r] * alpha + sum;
                    mrow[r] = mnew;
                    if (alpha != 1)
                        for (int e = 0; e < d; e++) acc[(size_t)r * d + e] *= alpha;
                }
                cpu_matmul(acc, S, vh + (size_t)j0 * d, Lq, d, Lk, 0, 0, 1, 1);
            }
            real *o = out + ((size_t)bh * N + i0) * d, *ls = lse + (size_t)bh * N + i0;
            for (int r = 0; r < Lq; r++) {
                if (lrow[r] == 0) {
                    memset(o + (size_t)r * d, 0, sizeof(real) * d);
                    ls[r] = -INFINITY;
                    continue;
                }
                real inv = 1 / lrow[r];
                for (int e = 0; e < d; e++) o[(size_t)r * d + e] = acc[(size_t)r * d + e] * inv;
                ls[r] = mrow[r] + log(lrow[r]);
            }
        }
}

/* P and dS of one (query tile, key tile) pair into S and dP (both [Lq, Lk]). */
static void tile_grads(real *S, real *dP, real *Drow, const real *qi, const real *kj, const real *vj, const real *doi,
                       const real *oi, const real *lsi, const real *kb, int i0, int j0, int Lq, int Lk, int d,
                       int causal, real scale) {
    cpu_matmul(S, qi, kj, Lq, Lk, d, 0, 1, scale, 0);
    cpu_matmul(dP, doi, vj, Lq, Lk, d, 0, 1, 1, 0);
    for (int r = 0; r < Lq; r++) {
        double s = 0;
        for (int e = 0; e < d; e++) s += doi[(size_t)r * d + e] * oi[(size_t)r * d + e];
        Drow[r] = (real)s;
    }
    for (int r = 0; r < Lq; r++) {
        real *row = S + (size_t)r * Lk, *drow = dP + (size_t)r * Lk, l = lsi[r], D = Drow[r];
        int i = i0 + r;
        if (l == -INFINITY) { /* no visible key: P = 0 */
            memset(row, 0, sizeof(real) * Lk);
            memset(drow, 0, sizeof(real) * Lk);
            continue;
        }
        if (kb)
            for (int c = 0; c < Lk; c++) row[c] += kb[j0 + c];
        if (causal)
            for (int c = GMA_MAX(0, i - j0 + 1); c < Lk; c++) row[c] = -INFINITY;
        vexp_sub(row, row, l, Lk);
        for (int c = 0; c < Lk; c++) drow[c] = row[c] * (drow[c] - D);
    }
}

/* dK, dV of key tile kt of head bh (and dQ of every query tile when dq != NULL). */
static void kv_tile(real *dq, real *dk, real *dv, const real *dout, const real *out, const real *lse, const real *q,
                    const real *k, const real *v, const real *kbias, int bh, int kt, int H, int N, int d, int causal,
                    real scale) {
    int b = bh / H, j0 = kt * TK, Lk = GMA_MIN(TK, N - j0);
    size_t base = (size_t)bh * N * d;
    const real *kj = k + base + (size_t)j0 * d, *vj = v + base + (size_t)j0 * d;
    real *dkj = dk + base + (size_t)j0 * d, *dvj = dv + base + (size_t)j0 * d;
    const real *kb = kbias ? kbias + (size_t)b * N : NULL;
    real *S = cpu_workspace(0, 2 * (size_t)TQ * TK + TQ), *dP = S + (size_t)TQ * TK, *Drow = dP + (size_t)TQ * TK;
    for (int i0 = causal ? (j0 / TQ) * TQ : 0; i0 < N; i0 += TQ) {
        int Lq = GMA_MIN(TQ, N - i0);
        size_t qo = base + (size_t)i0 * d;
        tile_grads(S, dP, Drow, q + qo, kj, vj, dout + qo, out + qo, lse + (size_t)bh * N + i0, kb, i0, j0, Lq, Lk, d,
                   causal, scale);
        cpu_matmul(dvj, S, dout + qo, Lk, d, Lq, 1, 0, 1, 1);
        cpu_matmul(dkj, dP, q + qo, Lk, d, Lq, 1, 0, scale, 1);
        if (dq) cpu_matmul(dq + qo, dP, kj, Lq, d, Lk, 0, 0, scale, 1);
    }
}

static void q_tile(real *dq, const real *dout, const real *out, const real *lse, const real *q, const real *k,
                   const real *v, const real *kbias, int bh, int qt, int H, int N, int d, int causal, real scale) {
    int b = bh / H, i0 = qt * TQ, Lq = GMA_MIN(TQ, N - i0);
    size_t base = (size_t)bh * N * d, qo = base + (size_t)i0 * d;
    const real *kb = kbias ? kbias + (size_t)b * N : NULL;
    real *S = cpu_workspace(0, 2 * (size_t)TQ * TK + TQ), *dP = S + (size_t)TQ * TK, *Drow = dP + (size_t)TQ * TK;
    int jend = causal ? i0 + Lq : N;
    for (int j0 = 0; j0 < jend; j0 += TK) {
        int Lk = GMA_MIN(TK, jend - j0);
        const real *kj = k + base + (size_t)j0 * d;
        tile_grads(S, dP, Drow, q + qo, kj, v + base + (size_t)j0 * d, dout + qo, out + qo, lse + (size_t)bh * N + i0,
                   kb, i0, j0, Lq, Lk, d, causal, scale);
        cpu_matmul(dq + qo, dP, kj, Lq, d, Lk, 0, 0, scale, 1);
    }
}

void cpu_attn_backward(real *dq, real *dk, real *dv, const real *dout, const real *out, const real *lse, const real *q,
                       const real *k, const real *v, const real *kbias, int B, int H, int N, int d, int causal,
                       real scale) {
    int BH = B * H, nk = (N + TK - 1) / TK, nq = (N + TQ - 1) / TQ;
    if (BH >= omp_get_max_threads()) {
#pragma omp parallel for schedule(dynamic)
        for (int bh = 0; bh < BH; bh++)
            for (int kt = 0; kt < nk; kt++)
                kv_tile(dq, dk, dv, dout, out, lse, q, k, v, kbias, bh, kt, H, N, d, causal, scale);
        return;
    }
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int bh = 0; bh < BH; bh++)
        for (int kt = 0; kt < nk; kt++)
            kv_tile(NULL, dk, dv, dout, out, lse, q, k, v, kbias, bh, kt, H, N, d, causal, scale);
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int bh = 0; bh < BH; bh++)
        for (int qt = 0; qt < nq; qt++) q_tile(dq, dout, out, lse, q, k, v, kbias, bh, qt, H, N, d, causal, scale);
}
