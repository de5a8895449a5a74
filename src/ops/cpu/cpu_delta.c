/* cpu_delta.c: the Gated DeltaNet kernels on the CPU: the row normalisation (L2 norm of q
 * and k, gated RMSNorm of the output) and the delta-rule recurrence with its decoding step,
 * per (batch, head) with the state S [dk,dv]. Forward, adjoint and chunk checkpoints:
 * docs/model.md §3.5 (`gdn`); the rows' decays sd (D = diag(sigmoid(sd_h)), NULL: I): §3.10,
 * with both a_t and sd the transition S' = a_t D S_{t-1} taking a_t S_{t-1}'s place. A thread
 * walks time for a head; a step's products go through cpu_matmul (a matrix-vector product
 * or a rank-one update), so the profiler counts them. The backward walks the chunks in
 * reverse, recomputing a chunk's states (and r_t) from its checkpoint into a work buffer of
 * chunk + 1 states: memory O(N / chunk dk dv) a head, time linear in N. dA_log, ddt_bias:
 * one partial a (batch, head), summed over the batch in a fixed order after the parallel
 * loop, so the result does not depend on the number of threads. */
#include <math.h>
#include <string.h>

#include "ops/cpu/cpu.h"

#define NORM_ROWS 256 /* rows a partial of rownorm_backward's dw sums */

static inline double sigmoid_d(double x) { return 1 / (1 + exp(-x)); }
static inline double softplus_d(double x) { return x > 20 ? x : log1p(exp(x)); }

/* ---------------------------------------------------------------- row normalisation */
void cpu_rownorm_forward(real *out, real *rstd, const real *x, const real *w, const real *g, int R, int C, real eps,
                         int mean) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * C))
    for (int r = 0; r < R; r++) {
        const real *xr = x + (size_t)r * C;
        real *yr = out + (size_t)r * C;
        double ss = 0;
        for (int c = 0; c < C; c++) ss += (double)xr[c] * xr[c];
        real rs = (real)(1 / sqrt(ss / (mean ? C : 1) + eps));
        rstd[r] = rs;
        for (int c = 0; c < C; c++) {
            real y = xr[c] * rs * (w ? w[c] : 1);
            if (g) {
                real gv = g[(size_t)r * C + c];
                y *= gv * (real)sigmoid_d(gv);
            }
            yr[c] = y;
        }
    }
}

void cpu_rownorm_backward(real *dx, real *dw, real *dg, const real *dout, const real *x, const real *w, const real *g,
                          const real *rstd, int R, int C, int mean) {
    int nblk = (R + NORM_ROWS - 1) / NORM_ROWS;
    double *part = w && dw ? (double *)cpu_workspace(1, sizeof(double) / sizeof(real) * ((size_t)nblk * C + 1)) : NULL;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * C))
    for (int blk = 0; blk < nblk; blk++) {
        double *pw = part ? part + (size_t)blk * C : NULL;
        if (pw)
            for (int c = 0; c < C; c++) pw[c] = 0;
        for (int r = blk * NORM_ROWS; r < GMA_MIN(R, (blk + 1) * NORM_ROWS); r++) {
            const real *xr = x + (size_t)r * C, *gr = dout + (size_t)r * C;
            real rs = rstd[r];
            double dot = 0;
            /* dn = dout silu(g) w, with n = x rstd; dx = rstd (dn - n (dn . n) / M) */
            for (int c = 0; c < C; c++) {
                real n = xr[c] * rs, dy0 = gr[c];
                if (g) {
                    real gv = g[(size_t)r * C + c], s = (real)sigmoid_d(gv);
                    if (dg) dg[(size_t)r * C + c] += gr[c] * n * (w ? w[c] : 1) * s * (1 + gv * (1 - s));
                    dy0 *= gv * s;
                }
                if (pw) pw[c] += (double)dy0 * n;
                dot += (double)dy0 * (w ? w[c] : 1) * n;
            }
            real m = (real)(dot / (mean ? C : 1));
            for (int c = 0; c < C; c++) {
                real dy0 = gr[c];
                if (g) {
                    real gv = g[(size_t)r * C + c];
                    dy0 *= gv * (real)sigmoid_d(gv);
                }
                dx[(size_t)r * C + c] += rs * (dy0 * (w ? w[c] : 1) - xr[c] * rs * m);
            }
        }
    }
    if (part)
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int blk = 0; blk < nblk; blk++) s += part[(size_t)blk * C + c];
            dw[c] += (real)s;
        }
}

/* ---------------------------------------------------------------- the delta rule */
/* the decay of a step: a = exp(lg), lg = -exp(A_log) softplus(ga + dt_bias) */
static inline double decay_log(real ga, real A_log, real dt_bias) { return -exp(A_log) * softplus_d((double)ga + dt_bias); }

/* one step on S [dk,dv]: S = a S (with the rows' decays ad [dk]: S = a diag(ad) S), then with
 * the delta rule (beta >= 0) r = v - S^T k and S += beta k r^T, r written (dv); without
 * (beta < 0) S += k v^T */
static void delta_update(real *S, real *r, const real *k, const real *v, real a, const real *ad, real beta, int dk,
                         int dv) {
    size_t SS = (size_t)dk * dv;
    if (ad) {
        for (int c = 0; c < dk; c++)
            for (int j = 0; j < dv; j++) S[(size_t)c * dv + j] *= a * ad[c];
    } else if (a != 1) {
        for (size_t i = 0; i < SS; i++) S[i] *= a;
    }
    if (beta >= 0) {
        cpu_matmul(r, k, S, 1, dv, dk, 0, 0, 1, 0); /* S^T k */
        for (int j = 0; j < dv; j++) r[j] = v[j] - r[j];
        cpu_matmul(S, k, r, dk, dv, 1, 0, 0, beta, 1);
    } else {
        cpu_matmul(S, k, v, dk, dv, 1, 0, 0, 1, 1);
    }
}

/* the rows' decays of head h, sigmoid(sd_h) (NULL without sd) into ad [dk] */
static const real *row_decays(real *ad, const real *sd, int h, int dk) {
    if (!sd) return NULL;
    for (int c = 0; c < dk; c++) ad[c] = (real)sigmoid_d(sd[(size_t)h * dk + c]);
    return ad;
}

/* a_t and b_t (b_t = -1: no delta rule) of step i of head h; returns log a_t (0 without ga) */
static inline double step_gates(const real *ga, const real *gb, const real *A_log, const real *dt_bias, int h, size_t i,
                                real *a, real *beta) {
    double lg = ga ? decay_log(ga[i], A_log[h], dt_bias[h]) : 0;
    *a = ga ? (real)exp(lg) : 1;
    *beta = gb ? (real)sigmoid_d(gb[i]) : -1;
    return lg;
}

void cpu_delta_forward(real *o, real *Sck, const real *q, const real *k, const real *v, const real *ga, const real *gb,
                       const real *A_log, const real *dt_bias, const real *sd, int B, int H, int N, int dk, int dv,
                       int chunk, real scale) {
    int BH = B * H, nck = (N + chunk - 1) / chunk;
    size_t SS = (size_t)dk * dv;
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < BH; bh++) {
        int h = bh % H;
        real *S = cpu_workspace(0, SS + dv + dk), *r = S + SS, *ck = Sck + (size_t)bh * (nck + 1) * SS;
        const real *ad = row_decays(r + dv, sd, h, dk);
        memset(S, 0, sizeof(real) * SS);
        for (int t = 0; t < N; t++) {
            size_t i = (size_t)bh * N + t;
            real a, beta;
            if (t % chunk == 0) memcpy(ck + (size_t)(t / chunk) * SS, S, sizeof(real) * SS);
            step_gates(ga, gb, A_log, dt_bias, h, i, &a, &beta);
            delta_update(S, r, k + i * dk, v + i * dv, a, ad, beta, dk, dv);
            cpu_matmul(o + i * dv, q + i * dk, S, 1, dv, dk, 0, 0, scale, 0);
        }
        memcpy(ck + (size_t)nck * SS, S, sizeof(real) * SS);
    }
}

void cpu_delta_backward(real *dq, real *dk_, real *dv_, real *dga, real *dgb, real *dA_log, real *ddt_bias, real *dsd,
                        const real *dout, const real *Sck, const real *q, const real *k, const real *v, const real *ga,
                        const real *gb, const real *A_log, const real *dt_bias, const real *sd, int B, int H, int N,
                        int dk, int dv, int chunk, real scale) {
    int BH = B * H, nck = (N + chunk - 1) / chunk, C = GMA_MIN(chunk, N);
    size_t SS = (size_t)dk * dv, np = (ga ? 2 : 0) + (sd ? (size_t)dk : 0); /* partials a (batch, head) */
    double *part = np ? (double *)cpu_workspace(1, sizeof(double) / sizeof(real) * (np * BH + 1)) : NULL;
#pragma omp parallel for schedule(static)
    for (int bh = 0; bh < BH; bh++) {
        int h = bh % H;
        double pA = 0, pdt = 0, *psd = sd ? part + np * bh + (ga ? 2 : 0) : NULL;
        /* the chunk's gates, computed once a step by the recomputing walk for the adjoint one:
         * lgc log a_t [C] (doubles, first), ac a_t, bc b_t [C]; st: the chunk's states
         * S_{t0-1} .. S_{t1-1}; rr: its r_t; dS; dd, du; with sd the rows' decays ad and S' du
         * (tk) [dk] */
        size_t nlg = (size_t)C * (sizeof(double) / sizeof(real));
        double *lgc = (double *)cpu_workspace(
            0, nlg + (C + 1) * SS + SS + (size_t)C * dv + 2 * (size_t)dv + 2 * (size_t)dk + 2 * (size_t)C);
        real *st = (real *)lgc + nlg;
        real *dS = st + (C + 1) * SS, *rr = dS + SS, *dd = rr + (size_t)C * dv, *du = dd + dv, *tk = du + dv + dk;
        real *ac = tk + dk, *bc = ac + C;
        const real *ad = row_decays(du + dv, sd, h, dk);
        const double nexpA = ga ? -exp(A_log[h]) : 0; /* d lg / d softplus */
        if (psd)
            for (int e = 0; e < dk; e++) psd[e] = 0;
        const real *ck = Sck + (size_t)bh * (nck + 1) * SS;
        memset(dS, 0, sizeof(real) * SS);
        for (int c = nck - 1; c >= 0; c--) {
            int t0 = c * chunk, t1 = GMA_MIN(N, t0 + chunk);
            memcpy(st, ck + (size_t)c * SS, sizeof(real) * SS);
            for (int t = t0; t < t1; t++) {
                size_t i = (size_t)bh * N + t;
                real *S = st + (size_t)(t - t0 + 1) * SS;
                memcpy(S, S - SS, sizeof(real) * SS);
                lgc[t - t0] = step_gates(ga, gb, A_log, dt_bias, h, i, &ac[t - t0], &bc[t - t0]);
                delta_update(S, rr + (size_t)(t - t0) * dv, k + i * dk, v + i * dv, ac[t - t0], ad, bc[t - t0], dk, dv);
            }
            for (int t = t1 - 1; t >= t0; t--) {
                size_t i = (size_t)bh * N + t;
                real a = ac[t - t0], beta = bc[t - t0];
                const real *Sp = st + (size_t)(t - t0) * SS, *St = Sp + SS, *r = rr + (size_t)(t - t0) * dv;
                const real *qt = q + i * dk, *kt = k + i * dk, *vt = v + i * dv, *dot = dout + i * dv;
                real *dqt = dq + i * dk, *dkt = dk_ + i * dk, *dvt = dv_ + i * dv;
                cpu_matmul(dS, qt, dot, dk, dv, 1, 0, 0, scale, 1); /* dS += scale q do^T */
                cpu_matmul(dqt, dot, St, 1, dk, dv, 0, 1, scale, 1); /* dq += scale S_t do */
                if (gb) {
                    double db = 0;
                    cpu_matmul(dd, kt, dS, 1, dv, dk, 0, 0, 1, 0);    /* dd = dS^T k */
                    cpu_matmul(dkt, r, dS, 1, dk, dv, 0, 1, beta, 1); /* dk += beta dS r */
                    for (int j = 0; j < dv; j++) {
                        db += (double)dd[j] * r[j];
                        dvt[j] += beta * dd[j];
                        du[j] = -beta * dd[j];
                    }
                    if (ad) { /* dk += S' du, S' = a D S_{t-1} */
                        cpu_matmul(tk, du, Sp, 1, dk, dv, 0, 1, 1, 0);
                        for (int e = 0; e < dk; e++) dkt[e] += a * ad[e] * tk[e];
                    } else {
                        cpu_matmul(dkt, du, Sp, 1, dk, dv, 0, 1, a, 1); /* dk += S' du, S' = a S_{t-1} */
                    }
                    cpu_matmul(dS, kt, du, dk, dv, 1, 0, 0, 1, 1);  /* dS += k du^T */
                    dgb[i] += (real)(db * beta * (1 - beta));
                } else {
                    cpu_matmul(dvt, kt, dS, 1, dv, dk, 0, 0, 1, 1); /* dv += dS^T k */
                    cpu_matmul(dkt, vt, dS, 1, dk, dv, 0, 1, 1, 1); /* dk += dS v */
                }
                double da = 0; /* da_t = <dS, D S_{t-1}> (D = I without sd) */
                if (ad) { /* da_t, dsd; dS = a D dS */
                    for (int e = 0; e < dk; e++) {
                        double rs = 0;
                        for (int j = 0; j < dv; j++) rs += (double)dS[(size_t)e * dv + j] * Sp[(size_t)e * dv + j];
                        da += rs * ad[e];
                        psd[e] += a * rs * ad[e] * (1 - ad[e]);
                        for (int j = 0; j < dv; j++) dS[(size_t)e * dv + j] *= a * ad[e];
                    }
                } else if (ga) { /* da_t; dS = a dS */
                    for (size_t e = 0; e < SS; e++) da += (double)dS[e] * Sp[e];
                    for (size_t e = 0; e < SS; e++) dS[e] *= a;
                }
                if (ga) {
                    double dlg = da * a, dpre = dlg * nexpA * sigmoid_d((double)ga[i] + dt_bias[h]);
                    dga[i] += (real)dpre;
                    pA += dlg * lgc[t - t0]; /* d lg / d A_log = lg */
                    pdt += dpre;
                }
            }
        }
        if (ga) part[np * bh] = pA, part[np * bh + 1] = pdt;
    }
    if (ga)
        for (int h = 0; h < H; h++) {
            double sA = 0, sdt = 0;
            for (int b = 0; b < B; b++) sA += part[np * ((size_t)b * H + h)], sdt += part[np * ((size_t)b * H + h) + 1];
            dA_log[h] += (real)sA;
            ddt_bias[h] += (real)sdt;
        }
    if (sd)
        for (int h = 0; h < H; h++)
            for (int e = 0; e < dk; e++) {
                double s = 0;
                for (int b = 0; b < B; b++) s += part[np * ((size_t)b * H + h) + (ga ? 2 : 0) + e];
                dsd[(size_t)h * dk + e] += (real)s;
            }
}

void cpu_delta_step(real *o, real *state, size_t state_stride, const real *q, const real *k, const real *v,
                    const real *ga, const real *gb, const real *A_log, const real *dt_bias, const real *sd, int B, int H,
                    int dk, int dv, real scale) {
    size_t SS = (size_t)dk * dv;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * H * SS))
    for (int bh = 0; bh < B * H; bh++) {
        int b = bh / H, h = bh % H;
        real a, beta, *S = state + b * state_stride + h * SS, *r = cpu_workspace(0, dv + dk);
        const real *ad = row_decays(r + dv, sd, h, dk);
        step_gates(ga, gb, A_log, dt_bias, h, bh, &a, &beta);
        delta_update(S, r, k + (size_t)bh * dk, v + (size_t)bh * dv, a, ad, beta, dk, dv);
        cpu_matmul(o + (size_t)bh * dv, q + (size_t)bh * dk, S, 1, dv, dk, 0, 0, scale, 0);
    }
}
