/* cpu_mamba.c: the Mamba block's kernels on the CPU (docs/model.md §3.5 `mamba`): SiLU,
 * softplus, the SiLU gate, the product of two tensors (BaseConv's gate), the causal
 * depthwise convolution and the selective scan per batch row b and channel c with S states,
 *   h_t = exp(dt_t A_c) h_{t-1} + dt_t Bm_t u_t ,  y_t = Cm_t . h_t + Dskip_c u_t,
 * the forward saving the state at the start of every `chunk` steps (hck). Sums run in a
 * fixed order, so results do not depend on the number of threads; time and memory are
 * linear in N. */
/* -std=c11 turns off the contraction of a * b + c into one fused multiply-add; the scan's
 * recurrences and its exp polynomial are chains of them (each rounds once instead of
 * twice, and takes one instruction). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/cpu_exp.h"

#define SCAN_CW 32
#define GMA_INLINE static inline __attribute__((always_inline))

static inline real sigm(real x) { return 1 / (1 + vexp1(-x)); }
static inline real softplus1(real x) { return x > 20 ? x : rlog1p(rexp(x)); }

/* The elementwise kernels run on eight lanes at a time in float32 (vexp8; softplus through
 * vlog1p8), with a scalar tail; float64 keeps the scalar loops. EW(n, i, vec, scal) runs
 * vec for each whole vector at i and scal for each remaining element i. */
#ifndef GMA_DOUBLE
static inline v8f sigm8(v8f x) { return 1 / (1 + vexp8(-x)); }
/* log(1 + t), t >= 0 (or NaN), as log(u) t / (u - 1) with u = 1 + t rounded (exact for
 * tiny t, where u - 1 = 0 gives t); log(u) by the exponent and a Cephes-style polynomial
 * on [sqrt(1/2), sqrt(2)) (relative error about 1e-7) */
static inline v8f vlog1p8(v8f t) {
    v8f u = 1 + t;
    v8i bits = (v8i)u, ex = ((bits >> 23) & 0xff) - 127;
    v8f m = (v8f)((bits & 0x007fffff) | 0x3f800000); /* [1, 2) */
    v8i big = m > 1.41421356f;
    m = (v8f)(((v8i)m & ~big) | ((v8i)(m * 0.5f) & big));
    v8f e = __builtin_convertvector(ex - big, v8f); /* big is -1 where true */
    v8f x = m - 1, z = x * x;
    v8f y = x * 7.0376836292e-2f - 1.1514610310e-1f;
    y = y * x + 1.1676998740e-1f;
    y = y * x - 1.2420140846e-1f;
    y = y * x + 1.4249322787e-1f;
    y = y * x - 1.6668057665e-1f;
    y = y * x + 2.0000714765e-1f;
    y = y * x - 2.4999993993e-1f;
    y = y * x + 3.3333331174e-1f;
    y = y * x * z - 2.12194440e-4f * e - 0.5f * z;
    v8f lg = x + y + 0.693359375f * e, d = u - 1;
    v8i tiny = d == 0;
    v8f r = lg * t / d;
    return (v8f)(((v8i)r & ~tiny) | ((v8i)t & tiny));
}
static inline v8f softplus8(v8f x) {
    v8i big = x > 20;
    v8f r = vlog1p8(vexp8(x));
    return (v8f)(((v8i)r & ~big) | ((v8i)x & big));
}
#define LDV(p) ({ v8f v_; memcpy(&v_, (p), sizeof v_); v_; })
#define STV(p, v) do { v8f v_ = (v); memcpy((p), &v_, sizeof v_); } while (0)
#define EW(n, i, vec, scal)                                                                   \
    do {                                                                                      \
        size_t nv_ = (n) / 8;                                                                 \
        _Pragma("omp parallel for schedule(static)") for (size_t j_ = 0; j_ < nv_; j_++) {    \
            size_t i = j_ * 8;                                                                \
            vec;                                                                              \
        }                                                                                     \
        for (size_t i = nv_ * 8; i < (n); i++) { scal; }                                      \
    } while (0)
#endif

void cpu_silu_forward(real *out, const real *x, size_t n) {
#ifndef GMA_DOUBLE
    EW(n, i, ({ v8f v = LDV(x + i); STV(out + i, v * sigm8(v)); }), out[i] = x[i] * sigm(x[i]));
#else
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = x[i] * sigm(x[i]);
#endif
}
void cpu_silu_backward(real *dx, const real *dout, const real *x, size_t n) {
#ifndef GMA_DOUBLE
    EW(n, i,
       ({
           v8f v = LDV(x + i), sv = sigm8(v);
           STV(dx + i, LDV(dx + i) + LDV(dout + i) * sv * (1 + v * (1 - sv)));
       }),
       ({
           real sv = sigm(x[i]);
           dx[i] += dout[i] * sv * (1 + x[i] * (1 - sv));
       }));
#else
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        real s = sigm(x[i]);
        dx[i] += dout[i] * s * (1 + x[i] * (1 - s));
    }
#endif
}
void cpu_softplus_forward(real *out, const real *x, size_t n) {
#ifndef GMA_DOUBLE
    EW(n, i, STV(out + i, softplus8(LDV(x + i))), out[i] = softplus1(x[i]));
#else
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = softplus1(x[i]);
#endif
}
void cpu_softplus_backward(real *dx, const real *dout, const real *x, size_t n) {
#ifndef GMA_DOUBLE
    EW(n, i, STV(dx + i, LDV(dx + i) + LDV(dout + i) * sigm8(LDV(x + i))), dx[i] += dout[i] * sigm(x[i]));
#else
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) dx[i] += dout[i] * sigm(x[i]);
#endif
}
void cpu_gate_silu_forward(real *out, const real *y, const real *z, size_t n) {
#ifndef GMA_DOUBLE
    EW(n, i, ({ v8f zv = LDV(z + i); STV(out + i, LDV(y + i) * zv * sigm8(zv)); }), out[i] = y[i] * z[i] * sigm(z[i]));
#else
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = y[i] * z[i] * sigm(z[i]);
#endif
}
void cpu_gate_silu_backward(real *dy, real *dz, const real *dout, const real *y, const real *z, size_t n) {
#ifndef GMA_DOUBLE
    EW(n, i,
       ({
           v8f zv = LDV(z + i), sv = sigm8(zv), g = LDV(dout + i);
           STV(dy + i, LDV(dy + i) + g * zv * sv);
           STV(dz + i, LDV(dz + i) + g * LDV(y + i) * sv * (1 + zv * (1 - sv)));
       }),
       ({
           real sv = sigm(z[i]);
           dy[i] += dout[i] * z[i] * sv;
           dz[i] += dout[i] * y[i] * sv * (1 + z[i] * (1 - sv));
       }));
#else
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        real s = sigm(z[i]);
        dy[i] += dout[i] * z[i] * s;
        dz[i] += dout[i] * y[i] * s * (1 + z[i] * (1 - s));
    }
#endif
}
/* the product of two tensors (BaseConv's gate): the compiler vectorises the plain loops */
void cpu_mul_forward(real *out, const real *a, const real *b, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = a[i] * b[i];
}
void cpu_mul_backward(real *da, real *db, const real *dout, const real *a, const real *b, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        da[i] += dout[i] * b[i];
        db[i] += dout[i] * a[i];
    }
}

#define CONV_CB 16
void cpu_conv1d_causal_forward(real *out, const real *x, const real *w, const real *b, int B, int N, int C, int K) {
#pragma omp parallel for collapse(2) schedule(static)
    for (int bb = 0; bb < B; bb++)
        for (int t = 0; t < N; t++) {
            real *o = out + ((size_t)bb * N + t) * C;
            for (int c = 0; c < C; c++) o[c] = b ? b[c] : 0;
            for (int k = 0; k < K; k++) {
                int ts = t - K + 1 + k;
                if (ts < 0) continue;
                const real *xs = x + ((size_t)bb * N + ts) * C;
                for (int c = 0; c < C; c++) o[c] += w[(size_t)c * K + k] * xs[c];
            }
        }
}

/* Blocks of CONV_CB channels run in parallel; a block's taps and their gradients are held
 * tap-major ([k][c], on the stack up to 64 taps) so that the channel loops vectorise. */
void cpu_conv1d_causal_backward(real *dx, real *dw, real *db, const real *dout, const real *x, const real *w, int B,
                                int N, int C, int K) {
    int nblk = (C + CONV_CB - 1) / CONV_CB;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * CONV_CB, cb = GMA_MIN(C, c0 + CONV_CB) - c0;
        real wt_s[64 * CONV_CB], dwt_s[64 * CONV_CB], dbl[CONV_CB] = {0};
        real *wt = K <= 64 ? wt_s : xmalloc(sizeof(real) * K * CONV_CB);
        real *dwt = K <= 64 ? dwt_s : xmalloc(sizeof(real) * K * CONV_CB);
        for (int k = 0; k < K; k++)
            for (int c = 0; c < cb; c++) wt[k * CONV_CB + c] = w[(size_t)(c0 + c) * K + k], dwt[k * CONV_CB + c] = 0;
        for (int bb = 0; bb < B; bb++)
            for (int t = 0; t < N; t++) {
                const real *g = dout + ((size_t)bb * N + t) * C + c0;
                for (int c = 0; c < cb; c++) dbl[c] += g[c];
                for (int k = 0; k < K; k++) {
                    int ts = t - K + 1 + k;
                    if (ts < 0) continue;
                    const real *restrict xs = x + ((size_t)bb * N + ts) * C + c0;
                    real *restrict dxs = dx + ((size_t)bb * N + ts) * C + c0;
                    real *restrict dwk = dwt + k * CONV_CB;
                    const real *restrict wk = wt + k * CONV_CB;
#pragma omp simd
                    for (int c = 0; c < cb; c++) {
                        dwk[c] += g[c] * xs[c];
                        dxs[c] += g[c] * wk[c];
                    }
                }
            }
        for (int c = 0; c < cb; c++) {
            if (db) db[c0 + c] += dbl[c];
            for (int k = 0; k < K; k++) dw[(size_t)(c0 + c) * K + k] += dwt[k * CONV_CB + c];
        }
        if (K > 64) free(wt), free(dwt);
    }
}

/* Channels are processed in fixed groups of SCAN_CW (a thread walks time for its group,
 * reading contiguous channel slices).
 * Within a channel group the state, A and exp(dt A) are held state-major, [s][c]: every
 * inner loop runs over the group's contiguous channels (vectorised), and the sums over s
 * (y, du, ddt) become per-channel vector accumulators. hck keeps the [E][S] layout. */
static void scan_load_A(real *A, const real *A_log, int c0, int cw, int S) {
    for (int c = 0; c < cw; c++)
        for (int s = 0; s < S; s++) A[(size_t)s * cw + c] = -rexp(A_log[(size_t)(c0 + c) * S + s]);
}
#ifndef GMA_DOUBLE
/* exp(x) for x <= 0 or NaN (the scan's dt A: dt > 0, A < 0), eight lanes: vexp8's range
 * reduction and polynomial without its overflow clamp; n = round(x log2 e) by the 1.5 2^23
 * shift, whose low bits are then n itself; exactly 0 below -87, NaN stays NaN. */
GMA_INLINE v8f vexpn8(v8f x) {
    const v8f lo = {-87, -87, -87, -87, -87, -87, -87, -87};
    v8i low = x < lo;
    v8f xc = (v8f)(((v8i)x & ~low) | ((v8i)lo & low));
    v8f t = xc * 1.44269504088896341f + 12582912.0f;
    v8f n = t - 12582912.0f;
    v8f r = xc - n * 0.693359375f + n * 2.12194440e-4f;
    v8f p = vexp_poly8(r);
    v8i bits = (v8i)(((v8u)t << 23) + (127u << 23)); /* 2^n (unsigned: defined for any t) */
    return (v8f)((v8i)(p * (v8f)bits) & ~low);
}
#endif

/* ea[s][c] = exp(dt[c] A[s][c]); float32 groups of whole vectors in one pass */
GMA_INLINE void scan_decay(real *restrict ea, const real *restrict A, const real *restrict dtt, int cw, int S) {
#ifndef GMA_DOUBLE
    if (cw % 8 == 0) {
        for (int s = 0; s < S; s++)
            for (int c = 0; c < cw; c += 8) {
                v8f d, av;
                memcpy(&d, dtt + c, sizeof d);
                memcpy(&av, A + (size_t)s * cw + c, sizeof av);
                av = vexpn8(d * av);
                memcpy(ea + (size_t)s * cw + c, &av, sizeof av);
            }
        return;
    }
#endif
    for (int s = 0; s < S; s++) {
        const real *As = A + (size_t)s * cw;
        real *es = ea + (size_t)s * cw;
#pragma omp simd
        for (int c = 0; c < cw; c++) es[c] = dtt[c] * As[c];
    }
    vexp_sub(ea, ea, 0, cw * S);
}
/* hn[s][c] = ea[s][c] hp[s][c] + dt[c] u[c] Bm[s] */
GMA_INLINE void scan_step(real *restrict hn, const real *hp, const real *restrict ea, const real *restrict xb,
                          const real *restrict Bt, int cw, int S) {
    for (int s = 0; s < S; s++) {
        const real *es = ea + (size_t)s * cw, *hps = hp + (size_t)s * cw;
        real *hns = hn + (size_t)s * cw, bs = Bt[s];
#pragma omp simd
        for (int c = 0; c < cw; c++) hns[c] = es[c] * hps[c] + xb[c] * bs;
    }
}

/* One time step of a channel group, state h [s][c] in place: y = Cm . h' + Dskip u with
 * h' = exp(dt A) h + dt u Bm (ea: the decay's scratch) */
GMA_INLINE void scan_time_step(real *restrict y, real *restrict h, real *restrict ea, const real *restrict A,
                               const real *restrict ut, const real *restrict dtt, const real *restrict Bt,
                               const real *restrict Ct, const real *restrict Dk, int cw, int S) {
    real xb[SCAN_CW], acc[SCAN_CW];
    scan_decay(ea, A, dtt, cw, S);
    for (int c = 0; c < cw; c++) xb[c] = dtt[c] * ut[c], acc[c] = 0;
    for (int s = 0; s < S; s++) {
        const real *restrict es = ea + (size_t)s * cw;
        real *restrict hs = h + (size_t)s * cw;
        real bs = Bt[s], cs_ = Ct[s];
#pragma omp simd
        for (int c = 0; c < cw; c++) {
            real v = es[c] * hs[c] + xb[c] * bs;
            hs[c] = v;
            acc[c] += cs_ * v;
        }
    }
    for (int c = 0; c < cw; c++) y[c] = acc[c] + Dk[c] * ut[c];
}

/* Rows t of [B, N, E] arrays are E apart: a group's slice of a row ahead is fetched
 * SCAN_PF steps early (the hardware prefetcher does not follow that stride in time). */
#define SCAN_PF 8
GMA_INLINE void scan_prefetch(const real *p, int cw) {
    for (int c = 0; c < cw; c += 64 / (int)sizeof(real)) __builtin_prefetch(p + c);
}

/* The arguments shared by the forward and backward group kernels. */
typedef struct {
    const real *u, *dt, *Bm, *Cm, *Dskip;
    int N, E, S, chunk, nck;
} ScanArgs;

/* One (batch row, channel group) of the forward; GMA_INLINE with cw a constant SCAN_CW
 * for full groups, so that the channel loops unroll. */
GMA_INLINE void scan_fwd_group(const ScanArgs *a, real *y, real *hck, const real *A, real *h, real *ea, int b,
                               int c0, int cw) {
    int N = a->N, E = a->E, S = a->S, chunk = a->chunk;
    size_t cs = (size_t)cw * S;
    memset(h, 0, sizeof(real) * cs);
    for (int t = 0; t < N; t++) {
        if (t % chunk == 0) {
            real *hk = hck + (((size_t)b * a->nck + t / chunk) * E + c0) * S;
            for (int c = 0; c < cw; c++)
                for (int s = 0; s < S; s++) hk[(size_t)c * S + s] = h[(size_t)s * cw + c];
        }
        size_t row = (size_t)b * N + t;
        const real *ut = a->u + row * E + c0, *dtt = a->dt + row * E + c0, *Bt = a->Bm + row * S,
                   *Ct = a->Cm + row * S;
        real *yt = y + row * E + c0;
        if (t + SCAN_PF < N) {
            size_t ahead = (size_t)SCAN_PF * E;
            scan_prefetch(ut + ahead, cw), scan_prefetch(dtt + ahead, cw), scan_prefetch(yt + ahead, cw);
        }
        scan_time_step(yt, h, ea, A, ut, dtt, Bt, Ct, a->Dskip + c0, cw, S);
    }
}

void cpu_scan_forward(real *y, real *hck, const real *u, const real *dt, const real *Bm, const real *Cm,
                      const real *A_log, const real *Dskip, int B, int N, int E, int S, int chunk) {
    int G = (E + SCAN_CW - 1) / SCAN_CW;
    ScanArgs a = {u, dt, Bm, Cm, Dskip, N, E, S, chunk, (N + chunk - 1) / chunk};
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int g = 0; g < G; g++) {
            int c0 = g * SCAN_CW, cw = GMA_MIN(SCAN_CW, E - c0);
            size_t cs = (size_t)cw * S;
            real *h = cpu_workspace(1, 3 * cs), *A = h + cs, *ea = A + cs;
            scan_load_A(A, A_log, c0, cw, S);
            if (cw == SCAN_CW) scan_fwd_group(&a, y, hck, A, h, ea, b, c0, SCAN_CW);
            else scan_fwd_group(&a, y, hck, A, h, ea, b, c0, cw);
        }
}

/* One step per (sequence, channel group), scan_fwd_group's time step: the carried
 * state [E][S] is turned state-major for the group's vector loops and back. A = -exp(A_log)
 * is made once per call for every group (not per sequence). Serial below a few thousand
 * state entries (batch-1 decoding), where a parallel region costs more. */
void cpu_scan_step(real *y, real *h, size_t h_stride, const real *u, const real *dt, const real *Bm, const real *Cm,
                   const real *A_log, const real *Dskip, int B, int E, int S) {
    int G = (E + SCAN_CW - 1) / SCAN_CW;
    real *Aall = cpu_workspace(2, (size_t)E * S); /* group g's [S][cw] at c0 S; read by every thread */
    for (int g = 0; g < G; g++) {
        int c0 = g * SCAN_CW;
        scan_load_A(Aall + (size_t)c0 * S, A_log, c0, GMA_MIN(SCAN_CW, E - c0), S);
    }
#pragma omp parallel for collapse(2) schedule(static) if ((size_t)B * E * S > 16384)
    for (int b = 0; b < B; b++)
        for (int g = 0; g < G; g++) {
            int c0 = g * SCAN_CW, cw = GMA_MIN(SCAN_CW, E - c0);
            size_t cs = (size_t)cw * S;
            real *hl = cpu_workspace(1, 2 * cs), *ea = hl + cs;
            const real *A = Aall + (size_t)c0 * S;
            real *hb = h + b * h_stride + (size_t)c0 * S;
            size_t r = (size_t)b * E + c0;
            for (int c = 0; c < cw; c++)
                for (int s = 0; s < S; s++) hl[(size_t)s * cw + c] = hb[(size_t)c * S + s];
            scan_time_step(y + r, hl, ea, A, u + r, dt + r, Bm + (size_t)b * S, Cm + (size_t)b * S, Dskip + c0, cw, S);
            for (int c = 0; c < cw; c++)
                for (int s = 0; s < S; s++) hb[(size_t)c * S + s] = hl[(size_t)s * cw + c];
        }
}

#ifndef GMA_DOUBLE
#ifdef __clang__
#define SHUF8(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define SHUF8(a, b, ...) __builtin_shuffle(a, b, (v8i){__VA_ARGS__})
#endif
/* the pairwise sums of a and b within each 128-bit half (AVX's hadd) */
GMA_INLINE v8f hadd8(v8f a, v8f b) { return SHUF8(a, b, 0, 2, 8, 10, 4, 6, 12, 14) + SHUF8(a, b, 1, 3, 9, 11, 5, 7, 13, 15); }
/* {sum of the lanes of v[0], ..., sum of the lanes of v[7]} */
GMA_INLINE v8f sum8x8(const v8f *v) {
    v8f q0 = hadd8(hadd8(v[0], v[1]), hadd8(v[2], v[3])), q1 = hadd8(hadd8(v[4], v[5]), hadd8(v[6], v[7]));
    return SHUF8(q0, q1, 0, 1, 2, 3, 8, 9, 10, 11) + SHUF8(q0, q1, 4, 5, 6, 7, 12, 13, 14, 15);
}
#define LD8(p) ({ v8f v_; memcpy(&v_, (p), sizeof v_); v_; })
#define ST8(p, v) do { v8f v_ = (v); memcpy((p), &v_, sizeof v_); } while (0)

/* One reverse step of the adjoint scan (the generic loop in scan_bwd_group) on whole
 * vectors, with the sums over states regrouped: with w = dh_s h_{t-1,s} e_s and
 * q = sum_s dh_s Bm_s, ddt = sum_s w A_s + u q and du = dt q (+ the caller's dy Dskip);
 * the sums over channels for dCm and dBm are kept as one vector per state and reduced
 * eight states at a time (sum8x8), not one horizontal sum per state. */
GMA_INLINE void scan_rev_vec(real *restrict dh, real *restrict dAg, real *restrict dBt, real *restrict dCt,
                             real *restrict du_acc, real *restrict ddt_acc, const real *restrict hp,
                             const real *restrict hn, const real *restrict al, const real *restrict A,
                             const real *restrict gy, const real *restrict dtt, const real *restrict ut,
                             const real *restrict xb, const real *restrict Bt, const real *restrict Ct, int cw, int S) {
    v8f wa[SCAN_CW / 8] = {{0}}, qa[SCAN_CW / 8] = {{0}};
    for (int s0 = 0; s0 < S; s0 += 8) {
        v8f pC[8], pB[8];
        for (int j = 0; j < 8; j++) {
            int s = s0 + j;
            size_t o = (size_t)s * cw;
            real bs = Bt[s], cs_ = Ct[s];
            v8f aC = {0}, aB = {0};
            for (int c = 0; c < cw; c += 8) {
                v8f gc = LD8(gy + c), e = LD8(al + o + c);
                v8f dhs = LD8(dh + o + c) + gc * cs_;
                v8f w = dhs * (LD8(hp + o + c) * e);
                aC += gc * LD8(hn + o + c);
                ST8(dAg + o + c, LD8(dAg + o + c) + w * LD8(dtt + c));
                wa[c / 8] += w * LD8(A + o + c);
                qa[c / 8] += dhs * bs;
                aB += dhs * LD8(xb + c);
                ST8(dh + o + c, dhs * e);
            }
            pC[j] = aC, pB[j] = aB;
        }
        ST8(dCt + s0, LD8(dCt + s0) + sum8x8(pC));
        ST8(dBt + s0, LD8(dBt + s0) + sum8x8(pB));
    }
    for (int c = 0; c < cw; c += 8) {
        ST8(ddt_acc + c, LD8(ddt_acc + c) + wa[c / 8] + LD8(ut + c) * qa[c / 8]);
        ST8(du_acc + c, LD8(du_acc + c) + LD8(dtt + c) * qa[c / 8]);
    }
}
#endif

/* One (batch row, channel group) of the backward. hbuf: states h_{t0-1} .. h_{t0+L-1};
 * abuf: exp(dt A) of each step of the chunk; all [s][c] per step, as A, dh and the
 * group's dA accumulator dAg (zeroed by the caller). */
GMA_INLINE void scan_bwd_group(const ScanArgs *a, real *du, real *ddt, real *dBg, real *dCg, real *dAg, real *dDb,
                               const real *dy, const real *hck, const real *A, real *hbuf, real *abuf, real *dh,
                               int b, int c0, int cw) {
    int N = a->N, E = a->E, S = a->S, chunk = a->chunk;
    size_t cs = (size_t)cw * S;
    real xb[SCAN_CW], du_acc[SCAN_CW], ddt_acc[SCAN_CW];
    for (int ck = a->nck - 1; ck >= 0; ck--) {
        int t0 = ck * chunk, L = GMA_MIN(chunk, N - t0);
        const real *hk = hck + (((size_t)b * a->nck + ck) * E + c0) * S;
        for (int c = 0; c < cw; c++)
            for (int s = 0; s < S; s++) hbuf[(size_t)s * cw + c] = hk[(size_t)c * S + s];
        for (int l = 0; l < L; l++) {
            size_t row = (size_t)b * N + t0 + l;
            const real *ut = a->u + row * E + c0, *dtt = a->dt + row * E + c0;
            real *al = abuf + (size_t)l * cs;
            if (t0 + l + SCAN_PF < N) {
                size_t ahead = (size_t)SCAN_PF * E;
                scan_prefetch(ut + ahead, cw), scan_prefetch(dtt + ahead, cw), scan_prefetch(dy + (row * E + c0) + ahead, cw);
                scan_prefetch(du + (row * E + c0) + ahead, cw), scan_prefetch(ddt + (row * E + c0) + ahead, cw);
            }
            scan_decay(al, A, dtt, cw, S);
            for (int c = 0; c < cw; c++) xb[c] = dtt[c] * ut[c];
            scan_step(hbuf + (size_t)(l + 1) * cs, hbuf + (size_t)l * cs, al, xb, a->Bm + row * S, cw, S);
        }
        for (int l = L - 1; l >= 0; l--) {
            size_t row = (size_t)b * N + t0 + l;
            const real *ut = a->u + row * E + c0, *dtt = a->dt + row * E + c0, *Bt = a->Bm + row * S,
                       *Ct = a->Cm + row * S, *gy = dy + row * E + c0;
            const real *hp = hbuf + (size_t)l * cs, *hn = hp + cs, *al = abuf + (size_t)l * cs;
            real *dBt = dBg + row * S, *dCt = dCg + row * S;
            for (int c = 0; c < cw; c++) {
                du_acc[c] = gy[c] * a->Dskip[c0 + c], ddt_acc[c] = 0, xb[c] = dtt[c] * ut[c];
                dDb[c] += gy[c] * ut[c];
            }
#ifndef GMA_DOUBLE
            if (cw % 8 == 0 && S % 8 == 0) {
                scan_rev_vec(dh, dAg, dBt, dCt, du_acc, ddt_acc, hp, hn, al, A, gy, dtt, ut, xb, Bt, Ct, cw, S);
                goto step_done;
            }
#endif
            for (int s = 0; s < S; s++) {
                size_t o = (size_t)s * cw;
                const real *restrict hps = hp + o, *restrict hns = hn + o, *restrict as = al + o, *restrict As = A + o;
                real *restrict dhs_ = dh + o, *restrict dAs = dAg + o;
                real bs = Bt[s], cs_ = Ct[s], sumC = 0, sumB = 0;
#pragma omp simd reduction(+ : sumC, sumB)
                for (int c = 0; c < cw; c++) {
                    real gc = gy[c], dtc = dtt[c];
                    sumC += gc * hns[c];
                    real dhs = dhs_[c] + gc * cs_;
                    real e = as[c], ha = hps[c] * e;
                    ddt_acc[c] += dhs * (ha * As[c] + bs * ut[c]);
                    dAs[c] += dhs * ha * dtc;
                    sumB += dhs * xb[c];
                    du_acc[c] += dhs * dtc * bs;
                    dhs_[c] = dhs * e;
                }
                dCt[s] += sumC;
                dBt[s] += sumB;
            }
#ifndef GMA_DOUBLE
        step_done:;
#endif
            real *dut = du + row * E + c0, *ddtt = ddt + row * E + c0;
            for (int c = 0; c < cw; c++) dut[c] += du_acc[c], ddtt[c] += ddt_acc[c];
        }
    }
}

/* The backward walks the chunks in reverse, recomputes the chunk's states from its
 * checkpoint, and runs the reverse (adjoint) scan:
 *   dh_t = dh_{t+1} exp(dt_{t+1} A) + dy_t Cm_t
 *   ddt_t = sum_s dh_t (A h_{t-1} e^{dt A} + Bm_t u_t), dA += dh_t h_{t-1} e^{dt A} dt,
 *   dBm_t += dh_t dt u_t, du_t += dh_t . (dt Bm_t) + dy_t Dskip, dCm_t += dy_t h_t.
 * dBm, dCm (shared by all channels) go to one partial buffer per channel group and
 * dA_log, dDskip to one per batch row; the partials are summed in a fixed order. */
static real *g_scan_part;
static size_t g_scan_cap;

void cpu_scan_backward(real *du, real *ddt, real *dBm, real *dCm, real *dA_log, real *dDskip, const real *dy,
                       const real *hck, const real *u, const real *dt, const real *Bm, const real *Cm,
                       const real *A_log, const real *Dskip, int B, int N, int E, int S, int chunk) {
    int G = (E + SCAN_CW - 1) / SCAN_CW;
    ScanArgs a = {u, dt, Bm, Cm, Dskip, N, E, S, chunk, (N + chunk - 1) / chunk};
    size_t nbs = (size_t)B * N * S;
    size_t need = 2 * (size_t)G * nbs + (size_t)B * E * S + (size_t)B * E;
    if (need > g_scan_cap) {
        free(g_scan_part);
        g_scan_part = xmalloc(need * sizeof(real));
        g_scan_cap = need;
    }
    real *dBp = g_scan_part, *dCp = dBp + (size_t)G * nbs, *dAp = dCp + (size_t)G * nbs, *dDp = dAp + (size_t)B * E * S;
    memset(g_scan_part, 0, need * sizeof(real));
#pragma omp parallel for collapse(2) schedule(static)
    for (int b = 0; b < B; b++)
        for (int g = 0; g < G; g++) {
            int c0 = g * SCAN_CW, cw = GMA_MIN(SCAN_CW, E - c0);
            size_t cs = (size_t)cw * S;
            real *hbuf = cpu_workspace(1, (size_t)(2 * chunk + 1) * cs + 3 * cs), *abuf = hbuf + (size_t)(chunk + 1) * cs;
            real *A = abuf + (size_t)chunk * cs, *dh = A + cs, *dAg = dh + cs;
            scan_load_A(A, A_log, c0, cw, S);
            memset(dh, 0, sizeof(real) * 2 * cs);
            real *dBg = dBp + (size_t)g * nbs, *dCg = dCp + (size_t)g * nbs, *dDb = dDp + (size_t)b * E + c0;
            if (cw == SCAN_CW)
                scan_bwd_group(&a, du, ddt, dBg, dCg, dAg, dDb, dy, hck, A, hbuf, abuf, dh, b, c0, SCAN_CW);
            else scan_bwd_group(&a, du, ddt, dBg, dCg, dAg, dDb, dy, hck, A, hbuf, abuf, dh, b, c0, cw);
            real *dAb = dAp + ((size_t)b * E + c0) * S;
            for (int c = 0; c < cw; c++)
                for (int s = 0; s < S; s++) dAb[(size_t)c * S + s] += dAg[(size_t)s * cw + c];
        }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < nbs; i++) {
        real sb = 0, sc = 0;
        for (int g = 0; g < G; g++) sb += dBp[(size_t)g * nbs + i], sc += dCp[(size_t)g * nbs + i];
        dBm[i] += sb;
        dCm[i] += sc;
    }
#pragma omp parallel for schedule(static)
    for (int c = 0; c < E; c++) {
        real sd = 0;
        for (int b = 0; b < B; b++) sd += dDp[(size_t)b * E + c];
        dDskip[c] += sd;
        for (int s = 0; s < S; s++) {
            real sa = 0;
            for (int b = 0; b < B; b++) sa += dAp[((size_t)b * E + c) * S + s];
            dA_log[(size_t)c * S + s] += sa * -rexp(A_log[(size_t)c * S + s]);
        }
    }
}
