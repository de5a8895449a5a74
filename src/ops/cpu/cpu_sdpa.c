/* cpu_sdpa.c: tiled softmax attention on the CPU (docs/model.md §3.5, the optimised `sdpa`)
 * and its decoding step. Shapes: q, k, v, out [B,H,N,d]; lse [B,H,N]; kbias [B,N] additive
 * key bias or NULL; causal hides j > i; window W > 0 the band of §3.5; drop the attention
 * dropout (§8) or NULL. Only TQ x TK scores exist at a time: extra memory O(N d) (out, lse)
 * instead of O(N^2). Every sum runs in a fixed order. */
#include <omp.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/cpu_exp.h"
#include "ops/cpu/drop_span.h"

#ifndef TQ
#define TQ 128
#endif
#ifndef TK
#define TK 128
#endif

/* the band of keys query i sees: [band_lo, band_hi), with W > 0 i-W+1..i causal,
 * i-W+1..i+W-1 bidirectional. A query tile walks only the key tiles from its first row's
 * band_lo to its last row's band_hi, a key tile only the query tiles that see it, so the
 * work is O(N W); the boundary tiles are masked row by row (mask_row). */
static inline int band_lo(int i, int window) { return window ? GMA_MAX(0, i - window + 1) : 0; }
static inline int band_hi(int i, int N, int causal, int window) {
    return causal ? i + 1 : window ? GMA_MIN(N, i + window) : N;
}
/* the queries that see key j: [query_lo, query_hi) */
static inline int query_lo(int j, int causal, int window) {
    return causal ? j : window ? GMA_MAX(0, j - window + 1) : 0;
}
static inline int query_hi(int j, int N, int window) { return window ? GMA_MIN(N, j + window) : N; }
/* -inf over the columns of score row i (keys j0..j0+Lk-1) outside its band */
static void mask_row(real *row, int i, int j0, int Lk, int N, int causal, int window) {
    int lo = band_lo(i, window) - j0, hi = band_hi(i, N, causal, window) - j0;
    for (int c = 0; c < GMA_MIN(lo, Lk); c++) row[c] = -INFINITY;
    for (int c = GMA_MAX(0, hi); c < Lk; c++) row[c] = -INFINITY;
}

/* attention dropout of row i, columns j0..j0+Lk-1 of head bh (docs/model.md §8): row *= mask / (1 - p).
 * With mul != NULL the multipliers go there instead and row is left alone. The words of the
 * row come from drop_span (AVX2 Philox where available), TK at a time. */
static void drop_row(real *row, real *mul, const GmaDrop *g, int bh, int H, int N, int i, int j0, int Lk) {
    uint64_t e0 = gma_drop_attn_index(g, bh / H, bh % H, H, N, i, j0);
    real sc = (real)g->scale;
    uint32_t kb = g->keep_below, w[TK];
    for (int c0 = 0; c0 < Lk; c0 += TK) { /* Lk <= 0: nothing */
        int n = GMA_MIN(TK, Lk - c0);
        drop_span(w, g, e0 + (uint64_t)c0, (size_t)n);
        if (mul)
            for (int c = 0; c < n; c++) mul[c0 + c] = w[c] < kb ? sc : 0;
        else
            for (int c = 0; c < n; c++) row[c0 + c] *= w[c] < kb ? sc : 0;
    }
}

/* FlashAttention-style online softmax: for each head and tile of TQ query rows, walk the key
 * tiles of TK columns (only up to the diagonal when causal), keeping per row the running max
 * m, the running sum l and the unnormalised output; at the end out = acc / l and
 * lse = m + log l is saved. */
void cpu_attn_forward(real *out, real *lse, const real *q, const real *k, const real *v, const real *kbias, int B,
                      int H, int N, int d, int causal, int window, real scale, const GmaDrop *drop) {
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
            int jend = band_hi(i0 + Lq - 1, N, causal, window);
            for (int j0 = band_lo(i0, window); j0 < jend; j0 += TK) {
                int Lk = GMA_MIN(TK, jend - j0);
                cpu_matmul(S, qi, kh + (size_t)j0 * d, Lq, Lk, d, 0, 1, scale, 0);
                for (int r = 0; r < Lq; r++) {
                    real *row = S + (size_t)r * Lk;
                    int i = i0 + r;
                    if (kb)
                        for (int c = 0; c < Lk; c++) row[c] += kb[j0 + c];
                    if (causal || window) mask_row(row, i, j0, Lk, N, causal, window);
                    real mx = -INFINITY;
#pragma omp simd reduction(max : mx)
                    for (int c = 0; c < Lk; c++) mx = row[c] > mx ? row[c] : mx;
                    real mnew = GMA_MAX(mrow[r], mx);
                    if (mnew == -INFINITY) {
                        memset(row, 0, sizeof(real) * Lk);
                        continue;
                    }
                    real alpha = vexp1(mrow[r] - mnew), sum = (real)vexp_sub(row, row, mnew, Lk);
                    lrow[r] = lrow[r] * alpha + sum;
                    mrow[r] = mnew;
                    if (alpha != 1)
                        for (int e = 0; e < d; e++) acc[(size_t)r * d + e] *= alpha;
                    /* after the sum: l is undropped; a row's hidden columns are 0 already */
                    if (drop) drop_row(row, NULL, drop, bh, H, N, i, j0, GMA_MIN(Lk, band_hi(i, N, causal, window) - j0));
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
                       int causal, int window, real scale, const GmaDrop *drop, int bh, int H, int N) {
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
        if (causal || window) mask_row(row, i, j0, Lk, N, causal, window);
        vexp_sub(row, row, l, Lk);
        if (drop) { /* dS = P (mask dP' - D), and S becomes the dropped P for dV (docs/model.md §8) */
            real *mul = Drow + Lq;
            drop_row(row, mul, drop, bh, H, N, i, j0, Lk);
            for (int c = 0; c < Lk; c++) {
                drow[c] = row[c] * (mul[c] * drow[c] - D);
                row[c] *= mul[c];
            }
            continue;
        }
        for (int c = 0; c < Lk; c++) drow[c] = row[c] * (drow[c] - D);
    }
}

/* dK, dV of key tile kt of head bh (and dQ of every query tile when dq != NULL). */
static void kv_tile(real *dq, real *dk, real *dv, const real *dout, const real *out, const real *lse, const real *q,
                    const real *k, const real *v, const real *kbias, int bh, int kt, int H, int N, int d, int causal,
                    int window, real scale, const GmaDrop *drop) {
    int b = bh / H, j0 = kt * TK, Lk = GMA_MIN(TK, N - j0);
    size_t base = (size_t)bh * N * d;
    const real *kj = k + base + (size_t)j0 * d, *vj = v + base + (size_t)j0 * d;
    real *dkj = dk + base + (size_t)j0 * d, *dvj = dv + base + (size_t)j0 * d;
    const real *kb = kbias ? kbias + (size_t)b * N : NULL;
    real *S = cpu_workspace(0, 2 * (size_t)TQ * TK + TQ + TK), *dP = S + (size_t)TQ * TK, *Drow = dP + (size_t)TQ * TK;
    int iend = query_hi(j0 + Lk - 1, N, window);
    for (int i0 = (query_lo(j0, causal, window) / TQ) * TQ; i0 < iend; i0 += TQ) {
        int Lq = GMA_MIN(TQ, iend - i0);
        size_t qo = base + (size_t)i0 * d;
        tile_grads(S, dP, Drow, q + qo, kj, vj, dout + qo, out + qo, lse + (size_t)bh * N + i0, kb, i0, j0, Lq, Lk, d,
                   causal, window, scale, drop, bh, H, N);
        cpu_matmul(dvj, S, dout + qo, Lk, d, Lq, 1, 0, 1, 1);
        cpu_matmul(dkj, dP, q + qo, Lk, d, Lq, 1, 0, scale, 1);
        if (dq) cpu_matmul(dq + qo, dP, kj, Lq, d, Lk, 0, 0, scale, 1);
    }
}

static void q_tile(real *dq, const real *dout, const real *out, const real *lse, const real *q, const real *k,
                   const real *v, const real *kbias, int bh, int qt, int H, int N, int d, int causal, int window,
                   real scale, const GmaDrop *drop) {
    int b = bh / H, i0 = qt * TQ, Lq = GMA_MIN(TQ, N - i0);
    size_t base = (size_t)bh * N * d, qo = base + (size_t)i0 * d;
    const real *kb = kbias ? kbias + (size_t)b * N : NULL;
    real *S = cpu_workspace(0, 2 * (size_t)TQ * TK + TQ + TK), *dP = S + (size_t)TQ * TK, *Drow = dP + (size_t)TQ * TK;
    int jend = band_hi(i0 + Lq - 1, N, causal, window);
    for (int j0 = band_lo(i0, window); j0 < jend; j0 += TK) {
        int Lk = GMA_MIN(TK, jend - j0);
        const real *kj = k + base + (size_t)j0 * d;
        tile_grads(S, dP, Drow, q + qo, kj, v + base + (size_t)j0 * d, dout + qo, out + qo, lse + (size_t)bh * N + i0,
                   kb, i0, j0, Lq, Lk, d, causal, window, scale, drop, bh, H, N);
        cpu_matmul(dq + qo, dP, kj, Lq, d, Lk, 0, 0, scale, 1);
    }
}

/* Recomputes each score tile from q, k and lse: P = exp(scale q k^T + bias - lse),
 * dP = dO V^T, dS = P (dP - rowsum(dO * O)), dV += P^T dO, dK += scale dS^T Q,
 * dQ += scale dS K. With at least as many heads as threads each thread owns whole heads
 * (one pass); otherwise the key tiles (dK, dV) and the query tiles (dQ) are two parallel
 * passes, so no two threads write the same rows. */
void cpu_attn_backward(real *dq, real *dk, real *dv, const real *dout, const real *out, const real *lse, const real *q,
                       const real *k, const real *v, const real *kbias, int B, int H, int N, int d, int causal,
                       int window, real scale, const GmaDrop *drop) {
    int BH = B * H, nk = (N + TK - 1) / TK, nq = (N + TQ - 1) / TQ;
    if (BH >= omp_get_max_threads()) {
#pragma omp parallel for schedule(dynamic)
        for (int bh = 0; bh < BH; bh++)
            for (int kt = 0; kt < nk; kt++)
                kv_tile(dq, dk, dv, dout, out, lse, q, k, v, kbias, bh, kt, H, N, d, causal, window, scale, drop);
        return;
    }
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int bh = 0; bh < BH; bh++)
        for (int kt = 0; kt < nk; kt++)
            kv_tile(NULL, dk, dv, dout, out, lse, q, k, v, kbias, bh, kt, H, N, d, causal, window, scale, drop);
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int bh = 0; bh < BH; bh++)
        for (int qt = 0; qt < nq; qt++) q_tile(dq, dout, out, lse, q, k, v, kbias, bh, qt, H, N, d, causal, window, scale,
                                                    drop);
}

/* One decoding token (ops.h attn_step): one parallel region over the (sequence, head) pairs,
 * each pair's scores, softmax and weighted values done by one thread in plain loops (no
 * BLAS call, so no threading nested inside), reading the head's contiguous key rows 0..pos
 * and then its value rows once each. Past the cache's end it is a ring: the token goes to
 * row pos mod Nmax and all Nmax rows are read. */
void cpu_attn_step(real *out, real *state, size_t state_stride, const real *q, const real *k, const real *v, int B,
                   int H, int d, int Nmax, int pos, real scale) {
    int BH = B * H, n = GMA_MIN(pos + 1, Nmax), slot = pos % Nmax;
    size_t hk = (size_t)Nmax * d;
#pragma omp parallel for schedule(static) if (BH > 1 && PAR_WORTH((size_t)BH * n * d))
    for (int bh = 0; bh < BH; bh++) {
        int b = bh / H, h = bh % H;
        real *st = state + (size_t)b * state_stride;
        real *K = st + h * hk, *V = st + (size_t)H * hk + h * hk, *P = st + 2 * (size_t)H * hk + (size_t)h * Nmax;
        const real *restrict qh = q + (size_t)bh * d;
        real *restrict o = out + (size_t)bh * d;
        memcpy(K + (size_t)slot * d, k + (size_t)bh * d, sizeof(real) * d);
        memcpy(V + (size_t)slot * d, v + (size_t)bh * d, sizeof(real) * d);
        real mx = -INFINITY;
        for (int j = 0; j < n; j++) {
            const real *restrict kj = K + (size_t)j * d;
            real s = 0;
#pragma omp simd reduction(+ : s)
            for (int e = 0; e < d; e++) s += qh[e] * kj[e];
            s *= scale;
            P[j] = s;
            mx = s > mx ? s : mx;
        }
        real inv = (real)(1 / vexp_sub(P, P, mx, n));
        memset(o, 0, sizeof(real) * d);
        for (int j = 0; j < n; j++) {
            const real *restrict vj = V + (size_t)j * d;
            real p = P[j];
#pragma omp simd
            for (int e = 0; e < d; e++) o[e] += p * vj[e];
        }
        for (int e = 0; e < d; e++) o[e] *= inv;
    }
}
