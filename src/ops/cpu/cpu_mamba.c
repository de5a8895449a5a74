/* cpu_mamba.c: the Mamba block's kernels on the CPU (docs/model.md §3.5 `mamba`): SiLU,
 * softplus, the SiLU gate, the causal depthwise convolution and the selective scan.
 *
 * Selective scan, per batch row b and channel c with S states:
 *   h_t = exp(dt_t A_c) h_{t-1} + dt_t Bm_t u_t ,  y_t = Cm_t . h_t + Dskip_c u_t.
 * Channels are processed in fixed groups of SCAN_CW (a thread walks time for its group,
 * reading contiguous channel slices). The forward pass saves the state at the start of
 * every `chunk` steps; the backward pass walks the chunks in reverse, recomputes the
 * chunk's states from its checkpoint, and runs the reverse (adjoint) scan:
 *   dh_t = dh_{t+1} exp(dt_{t+1} A) + dy_t Cm_t
 *   ddt_t = sum_s dh_t (A h_{t-1} e^{dt A} + Bm_t u_t), dA += dh_t h_{t-1} e^{dt A} dt,
 *   dBm_t += dh_t dt u_t, du_t += dh_t . (dt Bm_t) + dy_t Dskip, dCm_t += dy_t h_t.
 * dBm, dCm (shared by all channels) go to one partial buffer per channel group and
 * dA_log, dDskip to one per batch row; the partials are summed in a fixed order, so the
 * result does not depend on the number of threads. Time and memory are linear in N. */
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/cpu_exp.h"

#define SCAN_CW 32

static inline real sigm(real x) { return 1 / (1 + vexp1(-x)); }

void cpu_silu_forward(real *out, const real *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = x[i] * sigm(x[i]);
}
void cpu_silu_backward(real *dx, const real *dout, const real *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        real s = sigm(x[i]);
        dx[i] += dout[i] * s * (1 + x[i] * (1 - s));
    }
}
void cpu_softplus_forward(real *out, const real *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = x[i] > 20 ? x[i] : rlog1p(rexp(x[i]));
}
void cpu_softplus_backward(real *dx, const real *dout, const real *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) dx[i] += dout[i] * sigm(x[i]);
}
void cpu_gate_silu_forward(real *out, const real *y, const real *z, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = y[i] * z[i] * sigm(z[i]);
}
void cpu_gate_silu_backward(real *dy, real *dz, const real *dout, const real *y, const real *z, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        real s = sigm(z[i]);
        dy[i] += dout[i] * z[i] * s;
        dz[i] += dout[i] * y[i] * s * (1 + z[i] * (1 - s));
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

void cpu_conv1d_causal_backward(real *dx, real *dw, real *db, const real *dout, const real *x, const real *w, int B,
                                int N, int C, int K) {
    int nblk = (C + CONV_CB - 1) / CONV_CB;
#pragma omp parallel for schedule(static)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * CONV_CB, c1 = GMA_MIN(C, c0 + CONV_CB);
        for (int bb = 0; bb < B; bb++)
            for (int t = 0; t < N; t++) {
                const real *g = dout + ((size_t)bb * N + t) * C;
                for (int c = c0; c < c1; c++)
                    if (db) db[c] += g[c];
                for (int k = 0; k < K; k++) {
                    int ts = t - K + 1 + k;
                    if (ts < 0) continue;
                    const real *xs = x + ((size_t)bb * N + ts) * C;
                    real *dxs = dx + ((size_t)bb * N + ts) * C;
                    for (int c = c0; c < c1; c++) {
                        dw[(size_t)c * K + k] += g[c] * xs[c];
                        dxs[c] += g[c] * w[(size_t)c * K + k];
                    }
                }
            }
    }
}

void cpu_scan_forward(real *y, real *hck, const real *u, const real *dt, const real *Bm, const real *Cm,
                      const real *A_log, const real *Dskip, int B, int N, int E, int S, int chunk) {
    int G = (E + SCAN_CW - 1) / SCAN_CW, nck = (N + chunk - 1) / chunk;
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int b = 0; b < B; b++)
        for (int g = 0; g < G; g++) {
            int c0 = g * SCAN_CW, cw = GMA_MIN(SCAN_CW, E - c0);
            real *h = cpu_workspace(1, 2 * (size_t)cw * S + S), *A = h + (size_t)cw * S, *ea = A + (size_t)cw * S;
            for (int i = 0; i < cw * S; i++) A[i] = -rexp(A_log[(size_t)c0 * S + i]), h[i] = 0;
            for (int t = 0; t < N; t++) {
                if (t % chunk == 0)
                    memcpy(hck + (((size_t)b * nck + t / chunk) * E + c0) * S, h, sizeof(real) * cw * S);
                size_t row = (size_t)b * N + t;
                const real *ut = u + row * E + c0, *dtt = dt + row * E + c0, *Bt = Bm + row * S, *Ct = Cm + row * S;
                real *yt = y + row * E + c0;
                for (int c = 0; c < cw; c++) {
                    real dtc = dtt[c], xb = dtc * ut[c], acc = 0;
                    real *hc = h + (size_t)c * S;
                    const real *Ac = A + (size_t)c * S;
                    vexp_mul(ea, Ac, dtc, S);
                    for (int s = 0; s < S; s++) {
                        real hs = ea[s] * hc[s] + xb * Bt[s];
                        hc[s] = hs;
                        acc += Ct[s] * hs;
                    }
                    yt[c] = acc + Dskip[c0 + c] * ut[c];
                }
            }
        }
}

static real *g_scan_part;
static size_t g_scan_cap;

void cpu_scan_backward(real *du, real *ddt, real *dBm, real *dCm, real *dA_log, real *dDskip, const real *dy,
                       const real *hck, const real *u, const real *dt, const real *Bm, const real *Cm,
                       const real *A_log, const real *Dskip, int B, int N, int E, int S, int chunk) {
    int G = (E + SCAN_CW - 1) / SCAN_CW, nck = (N + chunk - 1) / chunk;
    size_t nbs = (size_t)B * N * S;
    size_t need = 2 * (size_t)G * nbs + (size_t)B * E * S + (size_t)B * E;
    if (need > g_scan_cap) {
        free(g_scan_part);
        g_scan_part = xmalloc(need * sizeof(real));
        g_scan_cap = need;
    }
    real *dBp = g_scan_part, *dCp = dBp + (size_t)G * nbs, *dAp = dCp + (size_t)G * nbs, *dDp = dAp + (size_t)B * E * S;
    memset(g_scan_part, 0, need * sizeof(real));
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int b = 0; b < B; b++)
        for (int g = 0; g < G; g++) {
            int c0 = g * SCAN_CW, cw = GMA_MIN(SCAN_CW, E - c0);
            size_t cs = (size_t)cw * S;
            /* hbuf: states h_{t0-1} .. h_{t0+L-1}; abuf: exp(dt A) of each step of the chunk */
            real *hbuf = cpu_workspace(1, (size_t)(2 * chunk + 1) * cs + 2 * cs), *abuf = hbuf + (size_t)(chunk + 1) * cs;
            real *A = abuf + (size_t)chunk * cs, *dh = A + cs;
            for (size_t i = 0; i < cs; i++) A[i] = -rexp(A_log[(size_t)c0 * S + i]), dh[i] = 0;
            real *dBg = dBp + (size_t)g * nbs, *dCg = dCp + (size_t)g * nbs;
            real *dAb = dAp + ((size_t)b * E + c0) * S, *dDb = dDp + (size_t)b * E + c0;
            for (int ck = nck - 1; ck >= 0; ck--) {
                int t0 = ck * chunk, L = GMA_MIN(chunk, N - t0);
                memcpy(hbuf, hck + (((size_t)b * nck + ck) * E + c0) * S, sizeof(real) * cs);
                for (int l = 0; l < L; l++) {
                    size_t row = (size_t)b * N + t0 + l;
                    const real *ut = u + row * E + c0, *dtt = dt + row * E + c0, *Bt = Bm + row * S;
                    const real *hp = hbuf + (size_t)l * cs;
                    real *hn = hbuf + (size_t)(l + 1) * cs, *al = abuf + (size_t)l * cs;
                    for (int c = 0; c < cw; c++) {
                        real dtc = dtt[c], xb = dtc * ut[c], *ac = al + (size_t)c * S;
                        vexp_mul(ac, A + (size_t)c * S, dtc, S);
                        for (int s = 0; s < S; s++) hn[(size_t)c * S + s] = ac[s] * hp[(size_t)c * S + s] + xb * Bt[s];
                    }
                }
                for (int l = L - 1; l >= 0; l--) {
                    size_t row = (size_t)b * N + t0 + l;
                    const real *ut = u + row * E + c0, *dtt = dt + row * E + c0, *Bt = Bm + row * S, *Ct = Cm + row * S;
                    const real *gy = dy + row * E + c0;
                    const real *hp = hbuf + (size_t)l * cs, *hn = hp + cs;
                    real *dBt = dBg + row * S, *dCt = dCg + row * S, *dut = du + row * E + c0, *ddtt = ddt + row * E + c0;
                    for (int c = 0; c < cw; c++) {
                        real gc = gy[c], x = ut[c], dtc = dtt[c];
                        real du_acc = gc * Dskip[c0 + c], ddt_acc = 0;
                        dDb[c] += gc * x;
                        const real *Ac = A + (size_t)c * S, *hpc = hp + (size_t)c * S, *hnc = hn + (size_t)c * S;
                        const real *ac = abuf + (size_t)l * cs + (size_t)c * S;
                        real *dhc = dh + (size_t)c * S, *dAc = dAb + (size_t)c * S;
                        for (int s = 0; s < S; s++) {
                            dCt[s] += gc * hnc[s];
                            real dhs = dhc[s] + gc * Ct[s];
                            real a = ac[s];
                            ddt_acc += dhs * (hpc[s] * a * Ac[s] + Bt[s] * x);
                            dAc[s] += dhs * hpc[s] * a * dtc;
                            dBt[s] += dhs * dtc * x;
                            du_acc += dhs * dtc * Bt[s];
                            dhc[s] = dhs * a;
                        }
                        dut[c] += du_acc;
                        ddtt[c] += ddt_acc;
                    }
                }
            }
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
