/* cpu_linmix.c: the normalised linear mixing core on the CPU (docs/model.md §3.1: the sums,
 * the causal chunks, the saved (S, z)), shared by GMA, the Linear Transformer and Performer.
 * The state at the start of each chunk is saved ([ceil(N/C)] x (F*d + F) per head), so the
 * backward walks the chunks in reverse without recomputing the scan; given no saved state
 * (NULL), it recomputes one head's states at a time by the forward's own scan (the same sums
 * in the same order; Rescan). No N x N matrix and no per-position F x d state is ever
 * formed. Heads run in parallel (OpenMP); BLAS calls inside run single-threaded. Per-thread
 * work buffers are cached across calls. */
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h"

#define workspace(n) cpu_workspace(0, (n))

static size_t n_chunks(int N, int causal, int chunk) { return causal ? (size_t)(N + chunk - 1) / chunk : 1; }

/* zero A[i][j] for j > i (keep the causal lower triangle, diagonal included) */
static void mask_upper(real *A, int L) {
    for (int i = 0; i < L; i++)
        for (int j = i + 1; j < L; j++) A[(size_t)i * L + j] = 0;
}

static void colsum_acc(real *z, const real *X, int R, int F) {
    for (int r = 0; r < R; r++)
        for (int f = 0; f < F; f++) z[f] += X[(size_t)r * F + f];
}

/* (S, z) += chunk c's phk^T V and colsum phk (a whole chunk: c is not the last) */
static void advance(real *S, const real *k, const real *vv, size_t c, int F, int d, int chunk) {
    size_t p0 = c * chunk;
    cpu_matmul(S, k + p0 * F, vv + p0 * d, F, d, chunk, 1, 0, 1, 1);
    colsum_acc(S + (size_t)F * d, k + p0 * F, chunk, F);
}

/* one head's saved states, the forward's scan: causal, (S, z) at the start of each chunk
 * (the first zero; each the one before plus that chunk); bidirectional, S = phk^T V and
 * z = colsum phk over all N */
static void head_states(real *state, const real *k, const real *vv, int N, int F, int d, int causal, int chunk) {
    size_t nc = n_chunks(N, causal, chunk), st = (size_t)F * d + F;
    if (!causal) {
        cpu_matmul(state, k, vv, F, d, N, 1, 0, 1, 0);
        memset(state + (size_t)F * d, 0, sizeof(real) * F);
        colsum_acc(state + (size_t)F * d, k, N, F);
        return;
    }
    memset(state, 0, sizeof(real) * st);
    for (size_t c = 1; c < nc; c++) {
        memcpy(state + c * st, state + (c - 1) * st, sizeof(real) * st);
        advance(state + c * st, k, vv, c - 1, F, d, chunk);
    }
}

/* The backward's rescan without saved states, in segments of G ~ sqrt(nc) chunks: first the
 * state at the start of every segment (coarse, nc / G of them), then, as the reverse walk
 * enters a segment, that segment's G states from its first (fine). Each state is the one
 * before plus its chunk, as in head_states, so the same values; (nc / G + G) states a
 * thread instead of nc, for one more pass of the running-state products. */
typedef struct Rescan { real *coarse, *fine; size_t G, st; } Rescan;
static size_t rescan_seg(size_t nc) {
    size_t G = 1;
    while (G * G < nc) G++;
    return G;
}
static void rescan_coarse(Rescan *r, const real *k, const real *vv, size_t nc, int F, int d, int chunk) {
    real *run = r->fine;
    memset(run, 0, sizeof(real) * r->st);
    for (size_t c = 0; c < nc; c++) {
        if (c % r->G == 0) memcpy(r->coarse + (c / r->G) * r->st, run, sizeof(real) * r->st);
        if (c + 1 < nc) advance(run, k, vv, c, F, d, chunk);
    }
}
/* the state at the start of chunk c (walked from the last chunk down) */
static const real *rescan_at(Rescan *r, const real *k, const real *vv, size_t c, size_t nc, int F, int d, int chunk) {
    size_t s = c / r->G, c0 = s * r->G, j = c - c0;
    if (c == nc - 1 || j == r->G - 1) { /* entering segment s from above: its states */
        size_t len = j + 1;
        memcpy(r->fine, r->coarse + s * r->st, sizeof(real) * r->st);
        for (size_t i = 1; i < len; i++) {
            memcpy(r->fine + i * r->st, r->fine + (i - 1) * r->st, sizeof(real) * r->st);
            advance(r->fine + i * r->st, k, vv, c0 + i - 1, F, d, chunk);
        }
    }
    return r->fine + j * r->st;
}

void cpu_linmix_forward(real *out, real *den, real *state, const real *phq, const real *phk, const real *v, int BH,
                        int N, int F, int d, int causal, int chunk, real eps) {
    size_t nc = n_chunks(N, causal, chunk), st = (size_t)F * d + F;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)BH * (size_t)N * (size_t)F * (size_t)d))
    for (int h = 0; h < BH; h++) {
        const real *q = phq + (size_t)h * N * F, *k = phk + (size_t)h * N * F, *vv = v + (size_t)h * N * d;
        real *o = out + (size_t)h * N * d, *dn = den + (size_t)h * N;
        real *S = state + (size_t)h * nc * st; /* slot 0 */
        if (!causal) {
            real *z = S + (size_t)F * d;
            head_states(S, k, vv, N, F, d, 0, chunk); /* S = phk^T V, z = colsum phk */
            cpu_matmul(o, q, S, N, d, F, 0, 0, 1, 0);
            for (int i = 0; i < N; i++) {
                double s = eps;
                for (int f = 0; f < F; f++) s += q[(size_t)i * F + f] * z[f];
                dn[i] = (real)s;
                real inv = (real)(1.0 / s);
                for (int e = 0; e < d; e++) o[(size_t)i * d + e] *= inv;
            }
            continue;
        }
        real *A = workspace((size_t)chunk * chunk);
        head_states(S, k, vv, N, F, d, 1, chunk);
        for (size_t c = 0; c < nc; c++) {
            int c0 = (int)c * chunk, L = GMA_MIN(chunk, N - c0);
            real *Sc = state + ((size_t)h * nc + c) * st, *zc = Sc + (size_t)F * d;
            const real *qc = q + (size_t)c0 * F, *kc = k + (size_t)c0 * F, *vc = vv + (size_t)c0 * d;
            real *oc = o + (size_t)c0 * d;
            cpu_matmul(A, qc, kc, L, L, F, 0, 1, 1, 0);
            mask_upper(A, L);
            cpu_matmul(oc, qc, Sc, L, d, F, 0, 0, 1, 0);
            cpu_matmul(oc, A, vc, L, d, L, 0, 0, 1, 1);
            for (int i = 0; i < L; i++) {
                double s = eps;
                for (int f = 0; f < F; f++) s += qc[(size_t)i * F + f] * zc[f];
                for (int j = 0; j <= i; j++) s += A[(size_t)i * L + j];
                dn[c0 + i] = (real)s;
                real inv = (real)(1.0 / s);
                for (int e = 0; e < d; e++) oc[(size_t)i * d + e] *= inv;
            }
        }
    }
}

void cpu_linmix_backward(real *dphq, real *dphk, real *dv, const real *dout, const real *out, const real *den,
                         const real *state, const real *phq, const real *phk, const real *v, int BH, int N, int F,
                         int d, int causal, int chunk) {
    size_t nc = n_chunks(N, causal, chunk), st = (size_t)F * d + F;
    int C = causal ? chunk : N;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)BH * (size_t)N * (size_t)F * (size_t)d))
    for (int h = 0; h < BH; h++) {
        const real *q = phq + (size_t)h * N * F, *k = phk + (size_t)h * N * F, *vv = v + (size_t)h * N * d;
        const real *o = out + (size_t)h * N * d, *dn = den + (size_t)h * N, *go = dout + (size_t)h * N * d;
        real *gq = dphq + (size_t)h * N * F, *gk = dphk + (size_t)h * N * F, *gv = dv + (size_t)h * N * d;
        size_t need = st /* dS_run,dz_run */ + (size_t)C * d /* dnum */ + C /* dden */;
        if (causal) need += 2 * (size_t)C * C; /* A, dA */
        size_t G = causal ? rescan_seg(nc) : 1, ns = (nc + G - 1) / G;
        real *w = workspace(need + (state ? 0 : (ns + G) * st));
        Rescan rs = {w + need, w + need + ns * st, G, st};
        if (!state) {
            if (causal)
                rescan_coarse(&rs, k, vv, nc, F, d, chunk);
            else
                head_states(rs.fine, k, vv, N, F, d, 0, chunk);
        }
        real *dS = w, *dz = w + (size_t)F * d, *dnum = w + st, *dden = dnum + (size_t)C * d;
        real *A = dden + C, *dA = A + (size_t)C * C;
        memset(dS, 0, sizeof(real) * st);
        for (size_t cc = nc; cc-- > 0;) {
            int c0 = (int)cc * C, L = GMA_MIN(C, N - c0);
            const real *Sp = state    ? state + ((size_t)h * nc + cc) * st
                             : causal ? rescan_at(&rs, k, vv, cc, nc, F, d, chunk)
                                      : rs.fine,
                       *zp = Sp + (size_t)F * d;
            const real *qc = q + (size_t)c0 * F, *kc = k + (size_t)c0 * F, *vc = vv + (size_t)c0 * d;
            real *gqc = gq + (size_t)c0 * F, *gkc = gk + (size_t)c0 * F, *gvc = gv + (size_t)c0 * d;
            for (int i = 0; i < L; i++) {
                real inv = 1 / dn[c0 + i];
                double s = 0;
                for (int e = 0; e < d; e++) {
                    real g = go[(size_t)(c0 + i) * d + e];
                    dnum[(size_t)i * d + e] = g * inv;
                    s += g * o[(size_t)(c0 + i) * d + e];
                }
                dden[i] = (real)(-s * inv);
            }
            if (causal && cc + 1 < nc) {
                /* later chunks read S_after = S_prev + phk_c^T V_c */
                cpu_matmul(gkc, vc, dS, L, F, d, 0, 1, 1, 1); /* dphk += V dS^T */
                for (int j = 0; j < L; j++)
                    for (int f = 0; f < F; f++) gkc[(size_t)j * F + f] += dz[f];
                cpu_matmul(gvc, kc, dS, L, d, F, 0, 0, 1, 1); /* dV += phk dS */
            }
            /* through phq_i^T S_prev and phq_i . z_prev */
            cpu_matmul(gqc, dnum, Sp, L, F, d, 0, 1, 1, 1);
            for (int i = 0; i < L; i++)
                for (int f = 0; f < F; f++) gqc[(size_t)i * F + f] += dden[i] * zp[f];
            if (causal) {
                /* the masked in-chunk product A = phq phk^T */
                cpu_matmul(A, qc, kc, L, L, F, 0, 1, 1, 0);
                mask_upper(A, L);
                cpu_matmul(dA, dnum, vc, L, L, d, 0, 1, 1, 0);
                for (int i = 0; i < L; i++)
                    for (int j = 0; j < L; j++) dA[(size_t)i * L + j] += dden[i];
                mask_upper(dA, L);
                cpu_matmul(gqc, dA, kc, L, F, L, 0, 0, 1, 1);
                cpu_matmul(gkc, dA, qc, L, F, L, 1, 0, 1, 1);
                cpu_matmul(gvc, A, dnum, L, d, L, 1, 0, 1, 1);
                /* this chunk's queries read S_prev: its gradient joins the running one */
                cpu_matmul(dS, qc, dnum, F, d, L, 1, 0, 1, 1);
                for (int i = 0; i < L; i++)
                    for (int f = 0; f < F; f++) dz[f] += qc[(size_t)i * F + f] * dden[i];
            } else {
                /* bidirectional: S = phk^T V, z = colsum phk over all N */
                cpu_matmul(dS, qc, dnum, F, d, L, 1, 0, 1, 0);
                memset(dz, 0, sizeof(real) * F);
                for (int i = 0; i < L; i++)
                    for (int f = 0; f < F; f++) dz[f] += qc[(size_t)i * F + f] * dden[i];
                cpu_matmul(gkc, vc, dS, L, F, d, 0, 1, 1, 1);
                for (int j = 0; j < L; j++)
                    for (int f = 0; f < F; f++) gkc[(size_t)j * F + f] += dz[f];
                cpu_matmul(gvc, kc, dS, L, d, F, 0, 0, 1, 1);
            }
        }
    }
}

/* One decoding token: per (sequence, head) one sweep over the F rows of S, each row updated
 * (S_f += phk_f v) and read at once (acc += phq_f S_f), so S is read and written once; the
 * (sequence, head) pairs run in parallel. */
void cpu_linmix_step(real *out, real *state, size_t state_stride, const real *phq, const real *phk, const real *v,
                     int B, int H, int F, int d, real eps) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * (size_t)H * (size_t)F * (size_t)d))
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        real *S = state + (size_t)b * state_stride + (size_t)h * F * d;
        real *z = state + (size_t)b * state_stride + (size_t)H * F * d + (size_t)h * F;
        const real *q = phq + (size_t)bh * F, *k = phk + (size_t)bh * F, *vv = v + (size_t)bh * d;
        real *restrict o = out + (size_t)bh * d;
        real den = 0;
        memset(o, 0, sizeof(real) * d);
        for (int f = 0; f < F; f++) {
            real kf = k[f], qf = q[f];
            z[f] += kf;
            den += qf * z[f];
            real *restrict Sf = S + (size_t)f * d;
#pragma omp simd
            for (int e = 0; e < d; e++) {
                real s = Sf[e] + kf * vv[e];
                Sf[e] = s;
                o[e] += qf * s;
            }
        }
        real inv = 1 / (den + eps);
        for (int e = 0; e < d; e++) o[e] *= inv;
    }
}
