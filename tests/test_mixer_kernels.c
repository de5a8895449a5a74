/* test_mixer_kernels.c: the float32 CPU kernels of GMA's Gaussian routing and Mamba's
 * selective scan (their vector paths: fused products, the exp for non-positive arguments,
 * the adjoint step reduced eight states at a time) against plain double-precision loops of
 * the formulas in their file headers (docs/model.md §3.2, §3.5), forward and backward, at
 * shapes whose channel groups are whole (32) and partial (40 = 32 + 8, 12), and the scan's
 * decoding step (scan_step) against the forward's outputs and checkpoints; sdpa's decoding
 * step (attn_step) against causal attention in double; the elementwise
 * kernels (SiLU, softplus, the gate) and the causal convolution's backward; and gmabench
 * mixer's FLOP accounting (the op-table products of a layer, the nominal FLOPs: every
 * mixer's declared fused FLOPs against the products the CPU backend reports from inside its
 * ops, GMA's and sdpa's against the formulas gmabench used before the mixers declared them),
 * an unknown mixer refused, and gmabench model --shapes (its shapes carry the step's FLOPs). The float64
 * gradient checks (test64_*) compile the double-precision paths, not these. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench/bench.h"
#include "nn/mixers/mixer.h"
#include "ops/ops.h"
#include "testutil.h"

static void fill(real *p, size_t n, Rng *r, double lo, double hi) {
    for (size_t i = 0; i < n; i++) p[i] = (real)(lo + (hi - lo) * rng_uniform(r));
}

/* max |a - b| / max |b| over n values (a float32 result, b its double reference) */
static double rel_err(const real *a, const double *b, size_t n) {
    double e = 0, m = 1e-30;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs(b[i]));
    }
    return e / m;
}

static double sp(double s) { return s > 20 ? s : log1p(exp(s)); }

/* ---- Gaussian routing: l = -1/2 sum_e (x_e - mu_ke)^2 / s2_ke - 1/2 sum_e log s2_ke + log prior_k ---- */
static void route_ref(double *g, const real *x, const real *mu, const real *vr, const real *pr, int BH, int H, int N,
                      int d, int Kc, double tau, double fl) {
    for (int bh = 0; bh < BH; bh++) {
        int h = bh % H;
        double mx = -INFINITY, s = 0;
        for (int k = 0; k < Kc; k++) mx = fmax(mx, pr[h * Kc + k]);
        for (int k = 0; k < Kc; k++) s += exp(pr[h * Kc + k] - mx);
        for (int i = 0; i < N; i++) {
            double *row = g + ((size_t)bh * N + i) * Kc, m = -INFINITY, z = 0;
            for (int k = 0; k < Kc; k++) {
                double l = pr[h * Kc + k] - mx - log(s);
                for (int e = 0; e < d; e++) {
                    size_t o = ((size_t)h * Kc + k) * d + e;
                    double s2 = sp(vr[o]) + fl, dx = x[((size_t)bh * N + i) * d + e] - mu[o];
                    l -= 0.5 * (dx * dx / s2 + log(s2));
                }
                row[k] = l / tau;
                m = fmax(m, row[k]);
            }
            for (int k = 0; k < Kc; k++) z += (row[k] = exp(row[k] - m));
            for (int k = 0; k < Kc; k++) row[k] /= z;
        }
    }
}

/* N above the kernel's 256-row blocks takes several; every stride-th argument is probed */
static void route_case(int N, int stride) {
    int B = 2, H = 2, d = 16, Kc = 24, BH = B * H;
    real tau = 0.7f, fl = 1e-4f;
    Rng r;
    rng_seed(&r, 3);
    size_t nx = (size_t)BH * N * d, ng = (size_t)BH * N * Kc, np = (size_t)H * Kc * d;
    real *x = xmalloc(nx * sizeof(real)), *mu = xmalloc(np * sizeof(real)), *vr = xmalloc(np * sizeof(real));
    real *pr = xmalloc((size_t)H * Kc * sizeof(real)), *g = xmalloc(ng * sizeof(real)), *dg = xmalloc(ng * sizeof(real));
    fill(x, nx, &r, -1.5, 1.5), fill(mu, np, &r, -1, 1), fill(vr, np, &r, -1, 1), fill(pr, (size_t)H * Kc, &r, -1, 1);
    fill(dg, ng, &r, -1, 1);
    double *gr = xmalloc(ng * sizeof(double));
    g_ops->gma_route_forward(g, x, mu, vr, pr, B, H, N, d, Kc, tau, fl, 0);
    route_ref(gr, x, mu, vr, pr, BH, H, N, d, Kc, tau, fl);
    double e = rel_err(g, gr, ng);
    ck_assert_msg(e < 2e-5, "route forward: rel err %g", e);
    /* backward: L = sum dg * gamma; its input gradient against central differences of the
     * double reference (step 1e-3: truncation error about 1e-6 here) */
    real *dx = xcalloc(nx, sizeof(real)), *dmu = xcalloc(np, sizeof(real)), *dvr = xcalloc(np, sizeof(real));
    real *dpr = xcalloc((size_t)H * Kc, sizeof(real));
    g_ops->gma_route_backward(dx, dmu, dvr, dpr, dg, g, x, mu, vr, pr, B, H, N, d, Kc, tau, fl, 0);
    double *tp = xmalloc(ng * sizeof(double)), *tm = xmalloc(ng * sizeof(double));
    real *bufs[] = {x, mu, vr, pr};
    real *grads[] = {dx, dmu, dvr, dpr};
    size_t sizes[] = {nx, np, np, (size_t)H * Kc};
    for (int which = 0; which < 4; which++) {
        double num = 0, den = 1e-30;
        for (size_t i = 0; i < sizes[which]; i += (size_t)stride) {
            real keep = bufs[which][i];
            double h = 1e-3 * fmax(1, fabs(keep)), lp = 0, lm = 0;
            bufs[which][i] = (real)(keep + h);
            double hp = (double)bufs[which][i] - keep;
            route_ref(tp, x, mu, vr, pr, BH, H, N, d, Kc, tau, fl);
            bufs[which][i] = (real)(keep - h);
            double hm = keep - (double)bufs[which][i];
            route_ref(tm, x, mu, vr, pr, BH, H, N, d, Kc, tau, fl);
            bufs[which][i] = keep;
            for (size_t j = 0; j < ng; j++) lp += dg[j] * tp[j], lm += dg[j] * tm[j];
            double fd = (lp - lm) / (hp + hm);
            num = fmax(num, fabs(fd - grads[which][i]));
            den = fmax(den, fabs(fd));
        }
        ck_assert_msg(num / den < 2e-4, "route backward, argument %d: rel err %g", which, num / den);
    }
    free(x), free(mu), free(vr), free(pr), free(g), free(dg), free(gr), free(dx), free(dmu), free(dvr), free(dpr);
    free(tp), free(tm);
}

START_TEST(test_route_float32) { route_case(37, 7); }
END_TEST
START_TEST(test_route_float32_blocks) { route_case(300, 211); }
END_TEST

/* ---- selective scan: h_t = exp(dt_t A) h_{t-1} + dt_t Bm_t u_t, y_t = Cm_t . h_t + D u_t ---- */
typedef struct {
    int B, N, E, S, chunk;
    real *u, *dt, *Bm, *Cm, *Al, *D, *dy;
} ScanCase;

/* y and (with dy) every gradient by the double-precision recurrence and its adjoint */
static void scan_ref(const ScanCase *c, double *y, double *du, double *ddt, double *dB, double *dC, double *dAl,
                     double *dD) {
    int N = c->N, E = c->E, S = c->S;
    double *h = xmalloc(sizeof(double) * (size_t)(N + 1) * S), *dh = xmalloc(sizeof(double) * S);
    for (int b = 0; b < c->B; b++)
        for (int e = 0; e < E; e++) {
            for (int s = 0; s < S; s++) h[s] = 0;
            for (int t = 0; t < N; t++) {
                size_t r = (size_t)b * N + t, ie = r * E + e;
                double acc = c->D[e] * c->u[ie];
                for (int s = 0; s < S; s++) {
                    double A = -exp(c->Al[e * S + s]);
                    double v = exp(c->dt[ie] * A) * h[(size_t)t * S + s] + c->dt[ie] * c->Bm[r * S + s] * c->u[ie];
                    h[(size_t)(t + 1) * S + s] = v;
                    acc += c->Cm[r * S + s] * v;
                }
                y[ie] = acc;
            }
            for (int s = 0; s < S; s++) dh[s] = 0;
            for (int t = N - 1; t >= 0; t--) {
                size_t r = (size_t)b * N + t, ie = r * E + e;
                double g = c->dy[ie], u = c->u[ie], dt = c->dt[ie];
                du[ie] += g * c->D[e];
                dD[e] += g * u;
                for (int s = 0; s < S; s++) {
                    double A = -exp(c->Al[e * S + s]), ea = exp(dt * A), hp = h[(size_t)t * S + s];
                    double d = dh[s] + g * c->Cm[r * S + s];
                    dC[r * S + s] += g * h[(size_t)(t + 1) * S + s];
                    ddt[ie] += d * (hp * ea * A + c->Bm[r * S + s] * u);
                    dAl[e * S + s] += d * hp * ea * dt * A;
                    dB[r * S + s] += d * dt * u;
                    du[ie] += d * dt * c->Bm[r * S + s];
                    dh[s] = d * ea;
                }
            }
        }
    free(h), free(dh);
}

static void scan_case(int B, int N, int E, int S, int chunk) {
    ScanCase c = {B, N, E, S, chunk, 0, 0, 0, 0, 0, 0, 0};
    Rng r;
    rng_seed(&r, 11);
    size_t ne = (size_t)B * N * E, ns = (size_t)B * N * S, nes = (size_t)E * S;
    c.u = xmalloc(ne * sizeof(real)), c.dt = xmalloc(ne * sizeof(real)), c.dy = xmalloc(ne * sizeof(real));
    c.Bm = xmalloc(ns * sizeof(real)), c.Cm = xmalloc(ns * sizeof(real));
    c.Al = xmalloc(nes * sizeof(real)), c.D = xmalloc(E * sizeof(real));
    fill(c.u, ne, &r, -1, 1), fill(c.dt, ne, &r, 1e-3, 0.5), fill(c.dy, ne, &r, -1, 1);
    fill(c.Bm, ns, &r, -1, 1), fill(c.Cm, ns, &r, -1, 1), fill(c.Al, nes, &r, -1, 3), fill(c.D, E, &r, 0.5, 1.5);
    real *y = xmalloc(ne * sizeof(real)), *hck = xmalloc(sizeof(real) * B * ((N + chunk - 1) / chunk) * nes);
    real *du = xcalloc(ne, sizeof(real)), *ddt = xcalloc(ne, sizeof(real)), *dB = xcalloc(ns, sizeof(real));
    real *dC = xcalloc(ns, sizeof(real)), *dAl = xcalloc(nes, sizeof(real)), *dD = xcalloc(E, sizeof(real));
    g_ops->scan_forward(y, hck, c.u, c.dt, c.Bm, c.Cm, c.Al, c.D, B, N, E, S, chunk);
    g_ops->scan_backward(du, ddt, dB, dC, dAl, dD, c.dy, hck, c.u, c.dt, c.Bm, c.Cm, c.Al, c.D, B, N, E, S, chunk);
    double *ry = xcalloc(ne, sizeof(double)), *rdu = xcalloc(ne, sizeof(double)), *rddt = xcalloc(ne, sizeof(double));
    double *rdB = xcalloc(ns, sizeof(double)), *rdC = xcalloc(ns, sizeof(double)), *rdAl = xcalloc(nes, sizeof(double));
    double *rdD = xcalloc(E, sizeof(double));
    scan_ref(&c, ry, rdu, rddt, rdB, rdC, rdAl, rdD);
    const char *names[] = {"y", "du", "ddt", "dBm", "dCm", "dA_log", "dD"};
    const real *got[] = {y, du, ddt, dB, dC, dAl, dD};
    const double *want[] = {ry, rdu, rddt, rdB, rdC, rdAl, rdD};
    size_t n[] = {ne, ne, ne, ns, ns, nes, (size_t)E};
    for (int i = 0; i < 7; i++) {
        double e = rel_err(got[i], want[i], n[i]);
        ck_assert_msg(e < 5e-6, "scan B=%d N=%d E=%d S=%d chunk %d: %s rel err %g", B, N, E, S, chunk, names[i], e);
    }
    /* the decoding step: N steps from a zero state give the forward's y, and the state at
     * each chunk start is the forward's checkpoint; the states sit h_stride apart */
    size_t hs = nes + 3;
    real *st = xcalloc(B * hs, sizeof(real)), *ys = xmalloc(sizeof(real) * B * E), *in = xmalloc(sizeof(real) * B * (2 * E + 2 * S));
    for (int t = 0; t < N; t++) {
        real *ut = in, *dtt = ut + (size_t)B * E, *Bt = dtt + (size_t)B * E, *Ct = Bt + (size_t)B * S;
        for (int b = 0; b < B; b++) {
            size_t row = (size_t)b * N + t;
            memcpy(ut + (size_t)b * E, c.u + row * E, sizeof(real) * E), memcpy(dtt + (size_t)b * E, c.dt + row * E, sizeof(real) * E);
            memcpy(Bt + (size_t)b * S, c.Bm + row * S, sizeof(real) * S), memcpy(Ct + (size_t)b * S, c.Cm + row * S, sizeof(real) * S);
            if (t % chunk == 0) {
                const real *hk = hck + ((size_t)b * ((N + chunk - 1) / chunk) + t / chunk) * nes;
                for (size_t i = 0; i < nes; i++)
                    ck_assert_msg(fabs(st[b * hs + i] - hk[i]) <= 1e-5 * (1 + fabs(hk[i])), "scan_step state b %d t %d [%zu]: %g, forward %g",
                                  b, t, i, st[b * hs + i], hk[i]);
            }
        }
        g_ops->scan_step(ys, st, hs, ut, dtt, Bt, Ct, c.Al, c.D, B, E, S);
        for (int b = 0; b < B; b++)
            for (int e = 0; e < E; e++) {
                real want_y = y[((size_t)b * N + t) * E + e];
                ck_assert_msg(fabs(ys[(size_t)b * E + e] - want_y) <= 1e-5 * (1 + fabs(want_y)), "scan_step y b %d t %d e %d: %g, forward %g",
                              b, t, e, ys[(size_t)b * E + e], want_y);
            }
    }
    free(st), free(ys), free(in);
    void *all[] = {c.u, c.dt, c.dy, c.Bm, c.Cm, c.Al, c.D, y, hck, du, ddt, dB, dC, dAl, dD, ry, rdu, rddt, rdB, rdC, rdAl, rdD};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

START_TEST(test_scan_float32_whole_groups) { scan_case(2, 45, 64, 16, 8); }
END_TEST
START_TEST(test_scan_float32_partial_groups) { scan_case(1, 30, 40, 8, 7); }
END_TEST
START_TEST(test_scan_float32_odd_states) { scan_case(1, 20, 12, 5, 64); }
END_TEST
/* B E S above the decoding step's serial bound: its parallel path, 5 groups of 32 */
START_TEST(test_scan_float32_many_rows) { scan_case(4, 12, 160, 32, 4); }
END_TEST

/* ---- Mamba's elementwise kernels (vectorised sigmoid, softplus through a vector log1p) ---- */
static double rel1(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

/* ---- sdpa's decoding step (attn_step): B sequences of H heads, one token at a time, over a
 * cache of Nmax rows, against causal softmax attention in double over the same tokens (over
 * the last Nmax of them when N > Nmax: the ring of sdpa.window); the cache rows are the
 * tokens' keys and values (the layout of ops.h, token j in row j mod Nmax); the same outputs
 * bit for bit with one and two threads (each (sequence, head) pair is one thread's) ---- */
static void attn_step_case(int B, int H, int d, int N, int Nmax) {
    Rng r;
    rng_seed(&r, 71 + N);
    size_t hd = (size_t)H * d, tok = (size_t)B * N * hd, ss = attn_decode_state(H, Nmax, d);
    real *q = xmalloc(sizeof(real) * tok), *k = xmalloc(sizeof(real) * tok), *v = xmalloc(sizeof(real) * tok);
    fill(q, tok, &r, -2, 2), fill(k, tok, &r, -2, 2), fill(v, tok, &r, -1, 1);
    real *st[2], *out[2];
    double *want = xmalloc(sizeof(double) * hd * B), *sc = xmalloc(sizeof(double) * N), scale = 1 / sqrt((double)d);
    int threads[2] = {1, 2};
    for (int t = 0; t < 2; t++) {
        st[t] = xcalloc((size_t)B * ss, sizeof(real));
        out[t] = xmalloc(sizeof(real) * (size_t)N * B * hd);
    }
    real *qt = xmalloc(sizeof(real) * B * hd), *kt = xmalloc(sizeof(real) * B * hd), *vt = xmalloc(sizeof(real) * B * hd);
    for (int t = 0; t < 2; t++) {
        ops_set_threads(threads[t]);
        for (int i = 0; i < N; i++) {
            for (int b = 0; b < B; b++) { /* token i of sequence b, tokens stored [B,N,H,d] */
                size_t o = ((size_t)b * N + i) * hd;
                memcpy(qt + b * hd, q + o, sizeof(real) * hd);
                memcpy(kt + b * hd, k + o, sizeof(real) * hd);
                memcpy(vt + b * hd, v + o, sizeof(real) * hd);
            }
            g_ops->attn_step(out[t] + (size_t)i * B * hd, st[t], ss, qt, kt, vt, B, H, d, Nmax, i, (real)scale);
        }
    }
    ops_set_threads(1);
    ck_assert_int_eq(memcmp(out[0], out[1], sizeof(real) * (size_t)N * B * hd), 0);
    double worst = 0;
    for (int i = 0; i < N; i += i < 4 || i > N - 4 ? 1 : 37) {
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                const real *qi = q + ((size_t)b * N + i) * hd + (size_t)h * d;
                double mx = -INFINITY, sum = 0;
                int j0 = GMA_MAX(0, i - Nmax + 1);
                for (int j = j0; j <= i; j++) {
                    const real *kj = k + ((size_t)b * N + j) * hd + (size_t)h * d;
                    double s = 0;
                    for (int e = 0; e < d; e++) s += (double)qi[e] * kj[e];
                    sc[j] = s * scale, mx = fmax(mx, sc[j]);
                }
                for (int j = j0; j <= i; j++) sum += (sc[j] = exp(sc[j] - mx));
                for (int e = 0; e < d; e++) {
                    double a = 0;
                    for (int j = j0; j <= i; j++) a += sc[j] * v[((size_t)b * N + j) * hd + (size_t)h * d + e];
                    want[(size_t)b * hd + (size_t)h * d + e] = a / sum;
                }
            }
        worst = fmax(worst, rel_err(out[0] + (size_t)i * B * hd, want, (size_t)B * hd));
    }
    ck_assert_msg(worst < 1e-5, "attn_step B%d H%d d%d N%d: rel err %.2e", B, H, d, N, worst);
    for (int b = 0; b < B; b++) /* the cache: K then V [H,Nmax,d], head h's row j mod Nmax token j's */
        for (int h = 0; h < H; h++)
            for (int j = GMA_MAX(0, N - Nmax); j < N; j += 13) {
                const real *K = st[1] + b * ss + ((size_t)h * Nmax + j % Nmax) * d, *V = K + hd * Nmax;
                size_t o = ((size_t)b * N + j) * hd + (size_t)h * d;
                ck_assert_int_eq(memcmp(K, k + o, sizeof(real) * d), 0);
                ck_assert_int_eq(memcmp(V, v + o, sizeof(real) * d), 0);
            }
    printf("attn_step B%d H%d d%d N%d Nmax %d: max rel err %.1e\n", B, H, d, N, Nmax, worst);
    for (int t = 0; t < 2; t++) free(st[t]), free(out[t]);
    free(q), free(k), free(v), free(qt), free(kt), free(vt), free(want), free(sc);
}
/* more sequences than threads, a context past the forward's 128-row tiles, a cache longer
 * than the context; one sequence of one head (no parallel region); a ring of 70 rows (the
 * sliding window) walked four times, and a ring of one row */
START_TEST(test_attn_step_float32) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    attn_step_case(5, 3, 16, 300, 320);
    attn_step_case(1, 1, 24, 40, 40);
    attn_step_case(3, 2, 16, 300, 70);
    attn_step_case(2, 1, 8, 20, 1);
}
END_TEST

/* ---- sliding-window attention (attn_forward / attn_backward with window W): the tiled
 * float32 op against the naive masked softmax in double, P = softmax(scale q k^T + mask)
 * with the band's mask, O = P V, lse; dP = dO V^T, dS = P (dP - rowsum(dO O)),
 * dq = scale dS K, dk = scale dS^T q, dv = P^T dO ---- */
static double rel_err_floor(const real *a, const double *b, size_t n) {
    double e = 0, m = 1e-2;
    for (size_t i = 0; i < n; i++) e = fmax(e, fabs((double)a[i] - b[i])), m = fmax(m, fabs(b[i]));
    return e / m;
}
static int band_visible(int i, int j, int causal, int W) {
    if (causal && j > i) return 0;
    return W <= 0 || (j > i - W && j < i + W);
}
static void attn_window_case(int B, int H, int N, int d, int causal, int W, int threads) {
    Rng r;
    rng_seed(&r, 91 + N + W);
    size_t n = (size_t)B * H * N * d, R = (size_t)B * H * N;
    real *q = xmalloc(sizeof(real) * n), *k = xmalloc(sizeof(real) * n), *v = xmalloc(sizeof(real) * n);
    real *go = xmalloc(sizeof(real) * n), *o = xmalloc(sizeof(real) * n), *lse = xmalloc(sizeof(real) * R);
    real *dq = xcalloc(n, sizeof(real)), *dk = xcalloc(n, sizeof(real)), *dv = xcalloc(n, sizeof(real));
    fill(q, n, &r, -2, 2), fill(k, n, &r, -2, 2), fill(v, n, &r, -1, 1), fill(go, n, &r, -1, 1);
    double sc = 1 / sqrt((double)d);
    ops_set_threads(threads);
    g_ops->attn_forward(o, lse, q, k, v, NULL, B, H, N, d, causal, W, (real)sc, NULL);
    g_ops->attn_backward(dq, dk, dv, go, o, lse, q, k, v, NULL, B, H, N, d, causal, W, (real)sc, NULL);
    ops_set_threads(1);
    double *wo = xcalloc(n, sizeof(double)), *wl = xcalloc(R, sizeof(double)), *wdq = xcalloc(n, sizeof(double));
    double *wdk = xcalloc(n, sizeof(double)), *wdv = xcalloc(n, sizeof(double)), *P = xmalloc(sizeof(double) * N);
    double *dP = xmalloc(sizeof(double) * N);
    for (size_t bh = 0; bh < (size_t)B * H; bh++) {
        const real *qh = q + bh * N * d, *kh = k + bh * N * d, *vh = v + bh * N * d, *gh = go + bh * N * d;
        double *oh = wo + bh * N * d, *dqh = wdq + bh * N * d, *dkh = wdk + bh * N * d, *dvh = wdv + bh * N * d;
        for (int i = 0; i < N; i++) {
            double mx = -INFINITY, sum = 0, D = 0;
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int e = 0; e < d; e++) s += (double)qh[(size_t)i * d + e] * kh[(size_t)j * d + e];
                P[j] = band_visible(i, j, causal, W) ? s * sc : -INFINITY;
                mx = fmax(mx, P[j]);
            }
            for (int j = 0; j < N; j++) sum += (P[j] = exp(P[j] - mx));
            for (int j = 0; j < N; j++) P[j] /= sum;
            wl[bh * N + i] = mx + log(sum);
            for (int e = 0; e < d; e++) {
                for (int j = 0; j < N; j++) oh[(size_t)i * d + e] += P[j] * vh[(size_t)j * d + e];
                D += gh[(size_t)i * d + e] * oh[(size_t)i * d + e];
            }
            for (int j = 0; j < N; j++) {
                double g = 0;
                for (int e = 0; e < d; e++) g += (double)gh[(size_t)i * d + e] * vh[(size_t)j * d + e];
                dP[j] = P[j] * (g - D); /* dS */
                for (int e = 0; e < d; e++) {
                    dvh[(size_t)j * d + e] += P[j] * gh[(size_t)i * d + e];
                    dqh[(size_t)i * d + e] += sc * dP[j] * kh[(size_t)j * d + e];
                    dkh[(size_t)j * d + e] += sc * dP[j] * qh[(size_t)i * d + e];
                }
            }
        }
    }
    /* relative to the largest value, at least 0.01 (W = 1: dS and so dq, dk are 0) */
    double eo = rel_err_floor(o, wo, n), el = rel_err_floor(lse, wl, R), eq = rel_err_floor(dq, wdq, n),
           ek = rel_err_floor(dk, wdk, n), ev = rel_err_floor(dv, wdv, n);
    printf("attn window B%d H%d N%d d%d causal %d W %d threads %d: rel err out %.1e lse %.1e dq %.1e dk %.1e dv %.1e\n",
           B, H, N, d, causal, W, threads, eo, el, eq, ek, ev);
    /* float32 sums of at most N terms of O(1) relative to the largest value */
    double tol = 64 * N * 6e-8;
    ck_assert_msg(eo < tol && el < tol && eq < tol && ek < tol && ev < tol,
                  "attn window N%d causal %d W %d: rel err out %.1e lse %.1e dq %.1e dk %.1e dv %.1e > %.1e", N,
                  causal, W, eo, el, eq, ek, ev, tol);
    free(q), free(k), free(v), free(go), free(o), free(lse), free(dq), free(dk), free(dv);
    free(wo), free(wl), free(wdq), free(wdk), free(wdv), free(P), free(dP);
}
/* bands inside one 128-row tile, across tiles, of one key, wider than the sequence;
 * causal and the symmetric band; one pass (heads >= threads) and the two-pass backward */
START_TEST(test_attn_window_float32) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    int Ws[] = {1, 7, 40, 150, 400};
    for (int causal = 1; causal >= 0; causal--)
        for (int w = 0; w < 5; w++) attn_window_case(2, 2, 300, 16, causal, Ws[w], w % 2 ? 1 : 2);
    attn_window_case(1, 1, 300, 8, 1, 40, 2);
    attn_window_case(1, 1, 300, 8, 0, 40, 2);
}
END_TEST

/* the tiles outside the band are never read: rows of q, k, v and dO before 300 are NaN;
 * queries and keys from 600 on (whose tiles lie 300 or more rows past any NaN row with
 * W 64, TQ = TK = 128) come out as with finite rows there, bit for bit: a kernel that
 * visited those tiles, even masked, would carry the NaN (NaN times 0) into them */
START_TEST(test_attn_window_skips_tiles) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    int N = 1024, d = 8, W = 64;
    size_t n = (size_t)N * d;
    for (int causal = 1; causal >= 0; causal--) {
        real *x[2][10];
        for (int t = 0; t < 2; t++) {
            Rng r;
            rng_seed(&r, 5);
            for (int a = 0; a < 10; a++) x[t][a] = xcalloc(a == 4 ? (size_t)N : n, sizeof(real));
            for (int a = 0; a < 4; a++) fill(x[t][a], n, &r, -1, 1);
            if (t)
                for (int a = 0; a < 4; a++)
                    for (size_t e = 0; e < (size_t)300 * d; e++) x[t][a][e] = NAN;
            real **p = x[t]; /* q k v dO, lse, out, dq dk dv */
            g_ops->attn_forward(p[5], p[4], p[0], p[1], p[2], NULL, 1, 1, N, d, causal, W, (real)0.3, NULL);
            g_ops->attn_backward(p[6], p[7], p[8], p[3], p[5], p[4], p[0], p[1], p[2], NULL, 1, 1, N, d, causal, W,
                                 (real)0.3, NULL);
        }
        size_t from = (size_t)600 * d;
        ck_assert_int_eq(memcmp(x[0][4] + 600, x[1][4] + 600, sizeof(real) * (N - 600)), 0);
        for (int a = 5; a < 9; a++) ck_assert_int_eq(memcmp(x[0][a] + from, x[1][a] + from, sizeof(real) * (n - from)), 0);
        ck_assert(memcmp(x[0][5], x[1][5], sizeof(real) * d) != 0); /* the NaN rows did change their own */
        for (int t = 0; t < 2; t++)
            for (int a = 0; a < 10; a++) free(x[t][a]);
    }
}
END_TEST

START_TEST(test_elementwise_float32) {
    enum { n = 2003 }; /* 250 vectors and a tail of 3 */
    static real x[n], z[n], g[n], o1[n], o2[n], d1[n], d2[n];
    Rng r;
    rng_seed(&r, 7);
    for (int i = 0; i < n; i++) {
        double u = rng_uniform(&r);
        x[i] = (real)(i % 5 == 0 ? 200 * u - 100 : i % 5 == 1 ? 1e-3 * (u - 0.5) : 24 * u - 12);
        z[i] = (real)(30 * rng_uniform(&r) - 15), g[i] = (real)(rng_uniform(&r) - 0.5);
    }
    const real edge[] = {-87.5f, -20.5f, -1e-8f, 0.0f, 1e-8f, 19.99f, 20.0f, 20.01f, 88.5f, 100.0f};
    for (int i = 0; i < 10; i++) x[11 * i + 3] = edge[i];
    double e_silu = 0, e_sp = 0, e_dsilu = 0, e_dsp = 0, e_gate = 0, e_dgy = 0, e_dgz = 0;
    g_ops->silu_forward(o1, x, n);
    g_ops->softplus_forward(o2, x, n);
    memset(d1, 0, sizeof d1), memset(d2, 0, sizeof d2);
    g_ops->silu_backward(d1, g, x, n);
    g_ops->softplus_backward(d2, g, x, n);
    for (int i = 0; i < n; i++) {
        double v = x[i], s = 1 / (1 + exp(-v));
        double sp = v > 20 ? v : log1p(exp(v));
        /* below exp's float range (x < -87) softplus is 0 instead of a denormal */
        if (v > -87) e_sp = fmax(e_sp, rel1(o2[i], sp));
        else ck_assert_msg(o2[i] >= 0 && o2[i] < 1e-37, "softplus(%g) = %g", v, o2[i]);
        e_silu = fmax(e_silu, fabs(o1[i] - v * s) / fmax(fabs(v * s), 1e-6));
        e_dsilu = fmax(e_dsilu, fabs(d1[i] - g[i] * s * (1 + v * (1 - s))) / 1.2);
        e_dsp = fmax(e_dsp, fabs(d2[i] - g[i] * s));
    }
    g_ops->gate_silu_forward(o1, x, z, n);
    memset(d1, 0, sizeof d1), memset(d2, 0, sizeof d2);
    g_ops->gate_silu_backward(d1, d2, g, x, z, n);
    for (int i = 0; i < n; i++) {
        double zz = z[i], s = 1 / (1 + exp(-zz)), want = x[i] * zz * s;
        e_gate = fmax(e_gate, fabs(o1[i] - want) / fmax(fabs(want), 1e-6));
        e_dgy = fmax(e_dgy, fabs(d1[i] - g[i] * zz * s) / fmax(fabs(g[i] * zz * s), 1e-6));
        e_dgz = fmax(e_dgz, fabs(d2[i] - g[i] * x[i] * s * (1 + zz * (1 - s))) / fmax(fabs(x[i]), 1));
    }
    ck_assert_msg(e_sp < 1e-6, "softplus rel err %g", e_sp);
    ck_assert_msg(e_silu < 1e-6, "silu rel err %g", e_silu);
    ck_assert_msg(e_dsilu < 1e-6 && e_dsp < 1e-6, "silu, softplus backward err %g %g", e_dsilu, e_dsp);
    ck_assert_msg(e_gate < 1e-6 && e_dgy < 1e-6 && e_dgz < 1e-6, "gate err %g %g %g", e_gate, e_dgy, e_dgz);
    /* NaN stays NaN */
    x[0] = NAN;
    g_ops->softplus_forward(o2, x, 8);
    g_ops->silu_forward(o1, x, 8);
    ck_assert(isnan(o2[0]) && isnan(o1[0]));
}
END_TEST

/* the causal convolution's backward (tap-major blocks) against its definition */
START_TEST(test_conv_backward_float32) {
    int B = 2, N = 23, C = 37, K = 4;
    Rng r;
    rng_seed(&r, 9);
    size_t n = (size_t)B * N * C;
    real *x = xmalloc(n * sizeof(real)), *w = xmalloc((size_t)C * K * sizeof(real)), *g = xmalloc(n * sizeof(real));
    real *dx = xcalloc(n, sizeof(real)), *dw = xcalloc((size_t)C * K, sizeof(real)), *db = xcalloc(C, sizeof(real));
    fill(x, n, &r, -1, 1), fill(w, (size_t)C * K, &r, -1, 1), fill(g, n, &r, -1, 1);
    g_ops->conv1d_causal_backward(dx, dw, db, g, x, w, B, N, C, K);
    double *rx = xcalloc(n, sizeof(double)), *rw = xcalloc((size_t)C * K, sizeof(double)), *rb = xcalloc(C, sizeof(double));
    for (int b = 0; b < B; b++)
        for (int t = 0; t < N; t++)
            for (int c = 0; c < C; c++) {
                double gg = g[((size_t)b * N + t) * C + c];
                rb[c] += gg;
                for (int k = 0; k < K; k++) {
                    int ts = t - K + 1 + k;
                    if (ts < 0) continue;
                    rw[(size_t)c * K + k] += gg * x[((size_t)b * N + ts) * C + c];
                    rx[((size_t)b * N + ts) * C + c] += gg * w[(size_t)c * K + k];
                }
            }
    ck_assert(rel_err(dx, rx, n) < 1e-6 && rel_err(dw, rw, (size_t)C * K) < 1e-6 && rel_err(db, rb, C) < 1e-6);
    free(x), free(w), free(g), free(dx), free(dw), free(db), free(rx), free(rw), free(rb);
}
END_TEST

/* ---- gmabench mixer: the op-table products of a layer and the nominal FLOPs ---- */
static const cJSON *row_of(const cJSON *arr, const char *mixer, int N) {
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (!strcmp(cJSON_GetObjectItem(it, "mixer")->valuestring, mixer) && cJSON_GetObjectItem(it, "N")->valueint == N)
            return it;
    }
    return NULL;
}
static double num(const cJSON *row, const char *key) {
    const cJSON *v = cJSON_GetObjectItem(row, key);
    ck_assert_msg(cJSON_IsNumber(v), "no %s", key);
    return v->valuedouble;
}

static cJSON *read_json(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *j = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(j);
    return j;
}

/* bin/gmabench with args and --json path: asserts it exits 0 (its output in g_out) and
 * returns the parsed JSON */
static cJSON *bench_json(const char *path, const char *args) {
    int rc = run("bin/gmabench %s --json %s", args, path);
    ck_assert_msg(rc == 0, "%s", g_out);
    return read_json(path);
}

START_TEST(test_bench_mixer_flops) {
    const char *js = tu_path("bench.json");
    cJSON *j = bench_json(js, "mixer --mixers gma,sdpa,mamba --seq 64,96 --D 32 --H 2 --Kc 8 --repeat 1 --threads 1");
    ck_assert_msg(strstr(g_out, "GEMM GF/s") && strstr(g_out, "nom/BLAS"), "%s", g_out);
    const cJSON *arr = cJSON_GetObjectItem(j, "mixer");
    int Ns[2] = {64, 96};
    for (int i = 0; i < 2; i++) {
        int N = Ns[i], D = 32;
        const cJSON *g = row_of(arr, "gma", N), *s = row_of(arr, "sdpa", N), *m = row_of(arr, "mamba", N);
        ck_assert(g && s && m);
        /* q, k, v, o: forward, input and weight gradients, 2 R D^2 each */
        double proj = 12 * 2.0 * N * D * D / 1e9;
        ck_assert_msg(fabs(num(g, "gemm_gflop") - proj) < 1e-12, "gma %g, want %g", num(g, "gemm_gflop"), proj);
        ck_assert_msg(fabs(num(s, "gemm_gflop") - proj) < 1e-12, "sdpa %g, want %g", num(s, "gemm_gflop"), proj);
        /* sdpa's tile products: 7 per visible (query, key) pair, 2 d each, H heads */
        double att = 2 * 7 * 2.0 * 16 * N * (N + 1) / 2.0 / 1e9;
        ck_assert_msg(fabs(num(s, "nominal_gflop") - proj - att) < 1e-12, "sdpa nominal %g", num(s, "nominal_gflop"));
        ck_assert(num(g, "nominal_gflop") > proj);
        /* mamba: every product goes through the table */
        ck_assert(num(m, "gemm_gflop") > proj);
        ck_assert(num(m, "nominal_gflop") == num(m, "gemm_gflop"));
        const cJSON *rows[] = {g, s, m};
        for (int k = 0; k < 3; k++) {
            ck_assert(num(rows[k], "blas_gflops_same_shapes") > 0);
            ck_assert(num(rows[k], "gemm_gflops") > 0);
            double sh = num(rows[k], "share_in_gemm");
            ck_assert_msg(sh > 0 && sh <= 1, "share %g", sh);
        }
    }
    /* the causal core's products grow linearly in N at a fixed chunk, the routing's too */
    double g64 = num(row_of(arr, "gma", 64), "nominal_gflop") - 12 * 2.0 * 64 * 32 * 32 / 1e9;
    double g96 = num(row_of(arr, "gma", 96), "nominal_gflop") - 12 * 2.0 * 96 * 32 * 32 / 1e9;
    ck_assert_msg(g96 > g64 * 1.2 && g96 < g64 * 2, "gma hidden %g at 64, %g at 96", g64, g96);
    cJSON_Delete(j);
}
END_TEST

/* gmabench refuses a mixer it does not know: exit 2, one line naming it and the known ones */
START_TEST(test_bench_unknown_mixer) {
    int rc = run("bin/gmabench mixer --mixers gma,nosuch --seq 64 --D 32 --H 2 --repeat 1");
    ck_assert_int_eq(rc, 2);
    char want[512];
    snprintf(want, sizeof want, "gmabench: --mixers: unknown mixer \"nosuch\" (known: %s)\n", mixer_names());
    ck_assert_msg(!strcmp(g_out, want), "%s", g_out);
    ck_assert_int_eq(run("bin/gmabench model --mixers nosuch"), 2);
    ck_assert_msg(strstr(g_out, "unknown mixer \"nosuch\"") && !strchr(strchr(g_out, '\n') + 1, '\n'), "%s", g_out);
}
END_TEST

/* the CPU backend's products inside its other ops (ops_set_cpu_product_hook): the hook
 * reports every product, those of the op table's matmul and matmul_strided too, which the
 * wrapped table marks */
static double g_hook_flops;
static int g_in_table;
static const GmaOps *g_base;
static void count_product(int M, int N, int K, int ta, int tb, int nthreads) {
    if (g_in_table) return;
#pragma omp critical(test_hook)
    g_hook_flops += 2.0 * M * N * K;
}
static void table_matmul(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real al, real be) {
    g_in_table = 1;
    g_base->matmul(C, A, B, M, N, K, ta, tb, al, be);
    g_in_table = 0;
}
static void table_matmul_strided(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real al,
                                 real be, int batch, size_t sA, size_t sB, size_t sC) {
    g_in_table = 1;
    g_base->matmul_strided(C, A, B, M, N, K, ta, tb, al, be, batch, sA, sB, sC);
    g_in_table = 0;
}

/* products counted by the CPU backend inside its ops in one forward + backward of mixer
 * name (B 1, N tokens, D 32, H 2, Kc 8, linformer.k 32, and the key=value `set`, NULL: none);
 * *declared: its fused_flops at that shape */
static double fused_of_layer(const char *name, int N, int causal, const char *set, double *declared) {
    BenchOpts o;
    bench_opts_defaults(&o);
    o.D = 32, o.H = 2, o.Kc = 8, o.B = 1, o.causal = causal;
    o.sets[o.n_sets++] = "linformer.k=32"; /* below N */
    if (set) o.sets[o.n_sets++] = set;
    Config c = bench_config(&o, name, N);
    ParamTable pt = {0};
    Mixer *m = mixer_find(name)->create(&c, 0, &pt, "blocks.0.mixer");
    ck_assert_msg(m != NULL, "%s: %s", name, gma_error());
    ck_assert_msg(m->vt->fused_flops != NULL, "mixer %s declares no fused_flops", name);
    *declared = m->vt->fused_flops(m, 1, N, causal);
    Rng rng;
    rng_seed(&rng, 5);
    real *params = xcalloc(pt.total, sizeof(real)), *grads = xcalloc(pt.total, sizeof(real));
    pt_init(&pt, params, &rng);
    if (m->vt->init) m->vt->init(m, params, &rng);
    size_t n = (size_t)N * o.D;
    real *h = xmalloc(n * sizeof(real)), *y = xmalloc(n * sizeof(real)), *dh = xcalloc(n, sizeof(real));
    fill(h, n, &rng, -1, 1);
    real *act = xcalloc(m->vt->act_size(m, 1, N) + 1, sizeof(real));
    real *scratch = xcalloc(m->vt->scratch_size(m, 1, N) + 1, sizeof(real));
    MixerCtx ctx = {.B = 1, .N = N, .causal = causal, .training = 1};
    g_hook_flops = 0;
    g_base = g_ops;
    GmaOps wrap = *g_ops;
    wrap.matmul = table_matmul, wrap.matmul_strided = table_matmul_strided;
    g_ops = &wrap;
    ops_set_cpu_product_hook(count_product);
    m->vt->forward(m, &ctx, y, h, params, act, scratch);
    m->vt->backward(m, &ctx, dh, h, h, params, grads, act, scratch);
    ops_set_cpu_product_hook(NULL);
    g_ops = g_base;
    m->vt->destroy(m);
    pt_free(&pt);
    free(params), free(grads), free(h), free(y), free(dh), free(act), free(scratch);
    return g_hook_flops;
}

/* every registered mixer declares its fused FLOPs, and they are the products the CPU
 * backend runs inside its ops for that layer: bidirectional where the mixer runs so (the
 * tiled attention's tiles are then all whole), else causal, at N = 128 (two GMA chunks);
 * non-zero for the mixers with fused kernels (auto at N = 128 takes its sdpa path) */
START_TEST(test_mixers_declare_fused_flops) {
    char names[256];
    snprintf(names, sizeof names, "%s", mixer_names());
    int n_fused = 0, n = 0;
    char *sv = NULL;
    for (char *t = strtok_r(names, "|", &sv); t; t = strtok_r(NULL, "|", &sv), n++) {
        int causal = !mixer_find(t)->bidir_ok;
        double declared, counted = fused_of_layer(t, 128, causal, NULL, &declared);
        ck_assert_msg(fabs(declared - counted) <= 1e-9 * counted, "%s: declares %g fused FLOPs, the kernels ran %g", t,
                      declared, counted);
        n_fused += declared > 0;
        if (!strcmp(t, "gma") || !strcmp(t, "sdpa") || !strcmp(t, "linear") || !strcmp(t, "performer"))
            ck_assert_msg(declared > 0, "%s: no fused FLOPs at N = 128", t);
    }
    ck_assert_int_ge(n, 8);
    ck_assert_int_ge(n_fused, 5);
    /* causal GMA: the chunked core's count (64 + 32 tokens: a ragged last chunk) */
    double declared, counted = fused_of_layer("gma", 96, 1, NULL, &declared);
    ck_assert_msg(declared > 0 && fabs(declared - counted) <= 1e-9 * counted, "causal gma: %g declared, %g ran",
                  declared, counted);
    /* gma with its window (gma.window, docs/model.md §3.11) declares the window's tiles as
     * sdpa.window does (the visible pairs of the band, sdpa_fused_flops), beside its own */
    for (int causal = 0; causal < 2; causal++) {
        double plain, swa;
        fused_of_layer("gma", 160, causal, "gma.window=40", &declared);
        fused_of_layer("gma", 160, causal, NULL, &plain);
        fused_of_layer("sdpa", 160, causal, "sdpa.window=40", &swa);
        ck_assert_msg(swa > 0 && fabs(declared - plain - swa) <= 1e-9 * declared,
                      "gma.window=40 %s: %g declared, gma %g + sdpa.window %g", causal ? "causal" : "bidir", declared, plain,
                      swa);
    }
}
END_TEST

/* the chunked causal core's products as gmabench counted them before the mixers declared
 * their FLOPs (its fused_flops, docs/benchmarks.md), written out again here */
static double old_linmix_flops(double BH, int N, int F, int d, int causal, int C) {
    if (!causal) return BH * 6 * 2.0 * N * F * d;
    double f = 0;
    for (int c0 = 0; c0 < N; c0 += C) {
        double L = c0 + C <= N ? C : N - c0, last = c0 + C >= N;
        f += (c0 > 0) * 2.0 * F * d * C;
        f += 2 * L * L * F + 2 * L * d * F + 2 * L * L * d;
        f += (1 - last) * 2 * (2 * L * F * d);
        f += 2 * L * F * d + 2 * L * L * F + 2 * L * L * d;
        f += 2 * (2 * L * L * F) + 2 * L * L * d + 2 * F * d * L;
    }
    return BH * f;
}

/* gmabench mixer's nominal FLOPs of gma and sdpa at one shape are those of the formulas it
 * used before the move: GMA's routing (8 products of 2 N Kc d per head, queries and keys:
 * forward 2, the backward's recompute 2, backward 4) plus the core with Kc features in chunks
 * of gma.chunk = 64 and the backward's rescan of its states; sdpa's 7 tile products of
 * 2 d per visible pair */
START_TEST(test_bench_flops_as_before) {
    const char *js = tu_path("bench_before.json");
    for (int causal = 1; causal >= 0; causal--) {
        char args[200];
        snprintf(args, sizeof args, "mixer --mixers gma,sdpa --seq 96 --D 32 --H 2 --Kc 8 --repeat 1 --threads 1%s",
                 causal ? "" : " --bidir");
        cJSON *j = bench_json(js, args);
        const cJSON *arr = cJSON_GetObjectItem(j, "mixer"), *g = row_of(arr, "gma", 96), *s = row_of(arr, "sdpa", 96);
        ck_assert(g && s);
        double BH = 2, N = 96, d = 16, Kc = 8;
        /* since the backward recomputes the routing (2 more products a route) and rescans the
         * chunk states (two chunks, one segment: the running-state product of the first chunk
         * in the coarse pass and again in the segment's; bidirectional S) */
        double rescan = BH * 2.0 * Kc * d * (causal ? 2 * 64 : N);
        double gma = 2 * BH * 8 * 2.0 * N * Kc * d + old_linmix_flops(BH, 96, 8, 16, causal, 64) + rescan;
        double sdpa = BH * 7 * 2.0 * d * (causal ? N * (N + 1) / 2 : N * N);
        double fg = (num(g, "nominal_gflop") - num(g, "gemm_gflop")) * 1e9;
        double fs = (num(s, "nominal_gflop") - num(s, "gemm_gflop")) * 1e9;
        ck_assert_msg(fabs(fg - gma) <= 1e-6 * gma, "gma %s: %g FLOPs, before %g", causal ? "causal" : "bidir", fg, gma);
        ck_assert_msg(fabs(fs - sdpa) <= 1e-6 * sdpa, "sdpa %s: %g FLOPs, before %g", causal ? "causal" : "bidir", fs,
                      sdpa);
        cJSON_Delete(j);
    }
}
END_TEST

/* gmabench model counts the products the CPU backend runs inside its other ops through
 * ops_set_cpu_product_hook: one layer's count must equal what gmabench mixer derives from the
 * kernels' shapes (nominal - op table), the tiled sdpa's diagonal tile counted whole (one tile
 * at N = 64); the "all" ratio adds their replay to the op table's */
START_TEST(test_bench_model_hidden_flops) {
    const char *mixers[] = {"gma", "linear", "performer", "sdpa"};
    const char *jm = tu_path("model.json"), *jx = tu_path("mixer.json");
    for (int i = 0; i < 4; i++) {
        char args[256];
        snprintf(args, sizeof args, "model --mixers %s --L 1 --D 32 --H 2 --Kc 8 --T 64 --B 1 --V 64 --steps 2 --threads 1",
                 mixers[i]);
        cJSON *a = bench_json(jm, args);
        snprintf(args, sizeof args, "mixer --mixers %s --seq 64 --D 32 --H 2 --Kc 8 --B 1 --repeat 1 --threads 1", mixers[i]);
        cJSON *b = bench_json(jx, args);
        const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "model"), 0);
        const cJSON *x = row_of(cJSON_GetObjectItem(b, "mixer"), mixers[i], 64);
        ck_assert(m && x);
        double hid = num(m, "hidden_gflop_per_step"), want = num(x, "nominal_gflop") - num(x, "gemm_gflop");
        if (!strcmp(mixers[i], "sdpa")) want *= 64.0 * 64 / (64 * 65 / 2.0);
        ck_assert_msg(fabs(hid - want) < 1e-12, "%s: hidden %g GFLOP, want %g", mixers[i], hid, want);
        ck_assert_msg(hid > 0 && num(m, "ratio_all") >= num(m, "ratio") && num(m, "ratio_all_best") >= num(m, "ratio_best"),
                      "%s: all %g ratio %g", mixers[i], num(m, "ratio_all"), num(m, "ratio"));
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
}
END_TEST

/* gmabench model --shapes: the op-table shapes listed with their counts carry exactly the
 * step's counted FLOPs, each with a time inside the step and a replay time */
START_TEST(test_bench_model_shapes) {
    const char *jm = tu_path("shapes.json");
    cJSON *a = bench_json(jm, "model --mixers gma --L 1 --D 32 --H 2 --Kc 8 --T 64 --B 1 --V 64 --steps 2 --threads 1 --shapes");
    ck_assert_msg(strstr(g_out, "in step ms") != NULL, "%s", g_out);
    const cJSON *m = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "model"), 0), *sh = cJSON_GetObjectItem(m, "shapes");
    ck_assert(m && cJSON_GetArraySize(sh) > 0);
    double flop = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, sh) {
        flop += num(e, "count") * 2 * num(e, "M") * num(e, "N") * num(e, "K") * num(e, "batch");
        ck_assert_msg(num(e, "step_ms") > 0 && num(e, "replay_ms") > 0, "shape %gx%gx%g: step %g replay %g ms",
                      num(e, "M"), num(e, "N"), num(e, "K"), num(e, "step_ms"), num(e, "replay_ms"));
    }
    double want = num(m, "gemm_gflop_per_step") * 1e9;
    ck_assert_msg(fabs(flop - want) <= 1e-9 * want, "shapes carry %g FLOP, the step %g", flop, want);
    cJSON_Delete(a);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("mixer_kernels");
    TCase *tc = tcase_create("kernels");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_route_float32);
    tcase_add_test(tc, test_route_float32_blocks);
    tcase_add_test(tc, test_scan_float32_whole_groups);
    tcase_add_test(tc, test_scan_float32_partial_groups);
    tcase_add_test(tc, test_scan_float32_odd_states);
    tcase_add_test(tc, test_scan_float32_many_rows);
    tcase_add_test(tc, test_attn_step_float32);
    tcase_add_test(tc, test_attn_window_float32);
    tcase_add_test(tc, test_attn_window_skips_tiles);
    tcase_add_test(tc, test_elementwise_float32);
    tcase_add_test(tc, test_conv_backward_float32);
    tcase_add_test(tc, test_bench_mixer_flops);
    tcase_add_test(tc, test_bench_model_hidden_flops);
    tcase_add_test(tc, test_bench_model_shapes);
    tcase_add_test(tc, test_bench_unknown_mixer);
    tcase_add_test(tc, test_mixers_declare_fused_flops);
    tcase_add_test(tc, test_bench_flops_as_before);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
