/* cpu_gma_route.c: GMA Gaussian routing (docs/model.md §3.2) on the CPU: the fused
 * log-density + softmax and its backward; the Dirichlet prior's gradient (§4.1).
 *
 * Per head, with sigma2 = softplus(var_raw) + var_floor, P = 1/sigma2, M = mu P and
 * cst_k = log_softmax(prior)_k - 1/2 sum_d (mu^2 P + log sigma2):
 *   l(x) = -1/2 (x*x) P^T + x M^T + cst        (two matrix products per block of rows)
 *   gamma(x) = softmax(l(x) / tau)
 * Blocks of rows are (batch, head) pairs and run in parallel; parameter gradients are
 * summed per pair into separate buffers and reduced in a fixed order (deterministic). */
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/cpu_exp.h"

static inline real softplus(real s) { return s > 20 ? s : rlog1p(rexp(s)); }
static inline real sigmoid(real s) { return 1 / (1 + rexp(-s)); }

/* W [Hp,Kc,2d] = [M | P] and cst [Hp,Kc] for the Hp parameter sets: W is the backward's
 * operand as it stands and the forward's against [x | -x*x/2] (the halving is exact, so
 * either side may carry it) */
static void prep(real *W, real *cst, const real *mu, const real *var_raw, const real *prior, int Hp, int d, int Kc,
                 real var_floor) {
    for (int h = 0; h < Hp; h++) {
        const real *a = prior + (size_t)h * Kc;
        real mx = -INFINITY;
        for (int k = 0; k < Kc; k++) mx = a[k] > mx ? a[k] : mx;
        double s = 0;
        for (int k = 0; k < Kc; k++) s += rexp(a[k] - mx);
        real lse = mx + (real)log(s);
        for (int k = 0; k < Kc; k++) {
            size_t o = ((size_t)h * Kc + k) * d;
            real *w = W + 2 * o;
            double c = 0;
            for (int e = 0; e < d; e++) {
                real s2 = softplus(var_raw[o + e]) + var_floor;
                real p = 1 / s2;
                w[d + e] = p;
                w[e] = mu[o + e] * p;
                c += mu[o + e] * mu[o + e] * p + log(s2);
            }
            cst[(size_t)h * Kc + k] = a[k] - lse - (real)(0.5 * c);
        }
    }
}

/* prep's results for the last PREP_CACHE parameter sets (a set per GMA layer), for calls that
 * route few rows per set (prep_params). Incremental decoding routes one token at a time, and
 * recomputing P, M and cst (a softplus and a log per entry) would cost more than the routing
 * itself. An entry keeps a copy of the mu,
 * var_raw and prior it was made from and is reused only when they are equal byte for byte
 * (memcmp, at cache bandwidth: no hash to collide, no writer to be told), together with the
 * sizes and var_floor; so any in-place update of the parameters (an optimiser step, a
 * checkpoint load, k-means init, a finite-difference probe) makes it miss. A miss takes
 * the entry last made from the same mu pointer (the same layer's parameters, changed by a
 * step) before any other, so that training keeps one entry per GMA layer, not PREP_CACHE
 * stale ones (32 x 258 KB at D 256, H 4, Kc 64, that the memory plan does not count). */
#define PREP_CACHE 32
typedef struct PrepEntry {
    int dims[3];
    real var_floor;
    size_t n, cap;
    const real *src; /* the mu it was made from (an address, never read through) */
    real *buf;       /* W, cst (n), the copy of mu, var_raw, prior (n) */
} PrepEntry;
static PrepEntry g_prep[PREP_CACHE];
static int g_prep_next, g_prep_last;

static int prep_matches(const PrepEntry *e, const real *mu, const real *var_raw, const real *prior, const int *dims,
                        real var_floor, size_t nkd, size_t n) {
    if (!e->buf || e->n != n || memcmp(e->dims, dims, sizeof e->dims) || memcmp(&e->var_floor, &var_floor, sizeof var_floor))
        return 0;
    const real *c = e->buf + n;
    return !memcmp(c, mu, sizeof(real) * nkd) && !memcmp(c + nkd, var_raw, sizeof(real) * nkd) &&
           !memcmp(c + 2 * nkd, prior, sizeof(real) * (n - 2 * nkd));
}

static const real *prep_cached(const real *mu, const real *var_raw, const real *prior, int Hp, int d, int Kc,
                               real var_floor) {
    size_t nkd = (size_t)Hp * Kc * d, n = 2 * nkd + (size_t)Hp * Kc;
    int dims[3] = {Hp, d, Kc};
    /* layers are routed in turn: start the search after the entry found last */
    for (int j = 1; j <= PREP_CACHE; j++) {
        int i = (g_prep_last + j) % PREP_CACHE;
        if (prep_matches(&g_prep[i], mu, var_raw, prior, dims, var_floor, nkd, n)) return g_prep[g_prep_last = i].buf;
    }
    int slot = -1;
    for (int i = 0; i < PREP_CACHE && slot < 0; i++)
        if (g_prep[i].buf && g_prep[i].src == mu) slot = i;
    if (slot < 0) slot = g_prep_next, g_prep_next = (g_prep_next + 1) % PREP_CACHE;
    PrepEntry *e = &g_prep[g_prep_last = slot];
    e->src = mu;
    size_t need = 2 * n;
    if (e->cap < need) e->buf = xrealloc(e->buf, sizeof(real) * need), e->cap = need;
    e->n = n;
    memcpy(e->dims, dims, sizeof dims);
    e->var_floor = var_floor;
    real *c = e->buf + n;
    memcpy(c, mu, sizeof(real) * nkd);
    memcpy(c + nkd, var_raw, sizeof(real) * nkd);
    memcpy(c + 2 * nkd, prior, sizeof(real) * (size_t)Hp * Kc);
    prep(e->buf, e->buf + 2 * nkd, mu, var_raw, prior, Hp, d, Kc, var_floor);
    return e->buf;
}

/* rows of a (batch, head) block routed together: [x | x*x] and the backward's buffers of
 * that many rows stay in cache */
#define ROUTE_ROWS 64

/* W and cst (prep) for a call routing rows rows per parameter set. Up to PREP_CACHE_ROWS
 * (incremental decoding: B rows of one position) from prep_cached; more (training, prefill)
 * prepared again into the calling thread's workspace slot 2, which every layer shares: the
 * routing's B H N Kc 2d multiply-adds per set then outweigh prep's Hp Kc d softplus and log,
 * and the memory is one set's (129 KB at D 256, H 4, Kc 64) instead of one cache entry per
 * layer (258 KB each) outside the memory plan. Slot 2 is free here: the loops below take
 * slot 0 per thread and the backward slot 1. */
#define PREP_CACHE_ROWS 256
static const real *prep_params(const real *mu, const real *var_raw, const real *prior, int Hp, int d, int Kc,
                               real var_floor, size_t rows) {
    if (rows <= PREP_CACHE_ROWS) return prep_cached(mu, var_raw, prior, Hp, d, Kc, var_floor);
    size_t nkd = (size_t)Hp * Kc * d;
    real *buf = cpu_workspace(2, 2 * nkd + (size_t)Hp * Kc);
    prep(buf, buf + 2 * nkd, mu, var_raw, prior, Hp, d, Kc, var_floor);
    return buf;
}

/* Xc [N, 2d] = [x | a x*x] of N rows: the one matrix operand of the forward
 * product (a = -1/2) and of the backward's parameter product (a = 1) */
static void cat_x_x2(real *restrict Xc, const real *restrict x, int N, int d, real a) {
    for (int i = 0; i < N; i++) {
        const real *xi = x + (size_t)i * d;
        real *o = Xc + (size_t)i * 2 * d;
#pragma omp simd
        for (int e = 0; e < d; e++) o[e] = xi[e], o[d + e] = a * (xi[e] * xi[e]);
    }
}
/* L rows x (row i at x + i xs) routed to out [L, Kc]: l = [x | -x*x/2] W^T / tau + c (one
 * product with inner size 2d; W = [M | P], c = cst / tau), then each row's softmax
 * (vectorised exp). Xc holds L rows of [x | -x*x/2]. */
static void route_rows(real *out, const real *x, size_t xs, int L, const real *W, const real *c, int d, int Kc,
                       real itau, real *Xc) {
    for (int i = 0; i < L; i++) cat_x_x2(Xc + (size_t)i * 2 * d, x + (size_t)i * xs, 1, d, (real)-0.5);
    cpu_matmul(out, Xc, W, L, Kc, 2 * d, 0, 1, itau, 0);
    for (int i = 0; i < L; i++) {
        real *row = out + (size_t)i * Kc;
        real mx = -INFINITY;
#pragma omp simd reduction(max : mx)
        for (int k = 0; k < Kc; k++) {
            row[k] += c[k];
            mx = row[k] > mx ? row[k] : mx;
        }
        real inv = (real)(1.0 / vexp_sub(row, row, mx, Kc));
#pragma omp simd
        for (int k = 0; k < Kc; k++) row[k] *= inv;
    }
}

/* l(x) = [x | -x*x/2] [M | P]^T + cst, gamma = softmax(l / tau): each (batch, head) pair's
 * rows in blocks of ROUTE_ROWS, or, for one position per sequence (incremental decoding of
 * B > 1 sequences), each head's B rows in one block */
void cpu_gma_route_forward(real *gamma, const real *x, const real *mu, const real *var_raw, const real *prior, int B,
                           int H, int N, int d, int Kc, real tau, real var_floor, int shared) {
    int Hp = shared ? 1 : H;
    const real *Wf = prep_params(mu, var_raw, prior, Hp, d, Kc, var_floor, (size_t)B * N * (shared ? H : 1)),
               *cst = Wf + 2 * (size_t)Hp * Kc * d;
    real itau = 1 / tau;
    int by_head = N == 1 && B > 1, groups = by_head ? H : B * H;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * (size_t)H * (size_t)N * (size_t)Kc * (size_t)d))
    for (int gi = 0; gi < groups; gi++) {
        int hp = shared ? 0 : gi % H;
        int R = by_head ? B : GMA_MIN(N, ROUTE_ROWS);
        real *c = cpu_workspace(0, (size_t)Kc + (size_t)R * (2 * d + Kc)), *Xc = c + Kc, *t = Xc + (size_t)R * 2 * d;
        const real *W = Wf + (size_t)hp * Kc * 2 * d;
        for (int k = 0; k < Kc; k++) c[k] = cst[(size_t)hp * Kc + k] * itau;
        if (by_head) { /* rows (b, gi) of every sequence b: x and gamma rows H apart */
            route_rows(t, x + (size_t)gi * d, (size_t)H * d, B, W, c, d, Kc, itau, Xc);
            for (int b = 0; b < B; b++)
                memcpy(gamma + ((size_t)b * H + gi) * Kc, t + (size_t)b * Kc, sizeof(real) * Kc);
            continue;
        }
        const real *xb = x + (size_t)gi * N * d;
        real *g = gamma + (size_t)gi * N * Kc;
        for (int i0 = 0; i0 < N; i0 += R)
            route_rows(g + (size_t)i0 * Kc, xb + (size_t)i0 * d, (size_t)d, GMA_MIN(R, N - i0), W, c, d, Kc, itau, Xc);
    }
}

/* dl = gamma * (dgamma - gamma . dgamma) / tau, then per block of rows
 *   [dl M | dl P] = dl [M | P]            (one product):  dx += dl M - x * (dl P)
 *   [dM | dQ]     = dl^T [x | x*x]        (one product):  dP = -dQ / 2
 *   dcst          = column sums of dl */
void cpu_gma_route_backward(real *dx, real *dmu, real *dvar_raw, real *dprior, const real *dgamma, const real *gamma,
                            const real *x, const real *mu, const real *var_raw, const real *prior, int B, int H, int N,
                            int d, int Kc, real tau, real var_floor, int shared) {
    int Hp = shared ? 1 : H;
    size_t per = (size_t)Kc * (2 * d + 1); /* [dM | dQ] and dcst of one (batch, head) pair */
    real *acc = cpu_workspace(1, (size_t)B * H * per);
    const real *Wf = prep_params(mu, var_raw, prior, Hp, d, Kc, var_floor, (size_t)B * N * (shared ? H : 1));
    real itau = 1 / tau;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * (size_t)H * (size_t)N * (size_t)Kc * (size_t)d))
    for (int bh = 0; bh < B * H; bh++) {
        int hp = shared ? 0 : bh % H;
        const real *xb = x + (size_t)bh * N * d, *g = gamma + (size_t)bh * N * Kc, *dg = dgamma + (size_t)bh * N * Kc;
        real *dxb = dx + (size_t)bh * N * d;
        int R = GMA_MIN(N, ROUTE_ROWS);
        real *dl = cpu_workspace(0, (size_t)R * (Kc + 4 * d)), *Xc = dl + (size_t)R * Kc, *t = Xc + (size_t)R * 2 * d;
        const real *W = Wf + (size_t)hp * Kc * 2 * d;
        real *dG = acc + (size_t)bh * per, *dc = dG + (size_t)Kc * 2 * d;
        for (int k = 0; k < Kc; k++) dc[k] = 0;
        for (int i0 = 0; i0 < N; i0 += R) { /* blocks of rows: the work buffers stay in cache */
            int L = GMA_MIN(R, N - i0);
            for (int i = 0; i < L; i++) {
                const real *gi = g + (size_t)(i0 + i) * Kc, *dgi = dg + (size_t)(i0 + i) * Kc;
                real *dli = dl + (size_t)i * Kc;
                real dot = 0;
#pragma omp simd reduction(+ : dot)
                for (int k = 0; k < Kc; k++) dot += gi[k] * dgi[k];
#pragma omp simd
                for (int k = 0; k < Kc; k++) {
                    dli[k] = gi[k] * (dgi[k] - dot) * itau;
                    dc[k] += dli[k];
                }
            }
            const real *xr = xb + (size_t)i0 * d;
            cat_x_x2(Xc, xr, L, d, 1);
            cpu_matmul(t, dl, W, L, 2 * d, Kc, 0, 0, 1, 0);
            for (int i = 0; i < L; i++) {
                const real *ti = t + (size_t)i * 2 * d, *xi = xr + (size_t)i * d;
                real *o = dxb + (size_t)(i0 + i) * d;
#pragma omp simd
                for (int e = 0; e < d; e++) o[e] += ti[e] - xi[e] * ti[d + e];
            }
            cpu_matmul(dG, dl, Xc, Kc, 2 * d, L, 1, 0, 1, i0 > 0);
        }
    }
    /* reduce the pairs of each parameter set in a fixed order, then chain to mu, var_raw, prior */
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * (size_t)H * (size_t)N * (size_t)Kc * (size_t)d))
    for (int hp = 0; hp < Hp; hp++) {
        real *dG = cpu_workspace(0, per), *dc = dG + (size_t)Kc * 2 * d;
        memset(dG, 0, sizeof(real) * per);
        for (int bh = 0; bh < B * H; bh++) {
            if (!shared && bh % H != hp) continue;
            const real *src = acc + (size_t)bh * per;
            for (size_t i = 0; i < per; i++) dG[i] += src[i];
        }
        const real *a = prior + (size_t)hp * Kc;
        real mx = -INFINITY;
        for (int k = 0; k < Kc; k++) mx = a[k] > mx ? a[k] : mx;
        double s = 0, sdc = 0;
        for (int k = 0; k < Kc; k++) s += rexp(a[k] - mx), sdc += dc[k];
        for (int k = 0; k < Kc; k++) {
            real pk = (real)(rexp(a[k] - mx) / s);
            dprior[(size_t)hp * Kc + k] += dc[k] - pk * (real)sdc;
            const real *dMk = dG + (size_t)k * 2 * d, *dQk = dMk + d;
            for (int e = 0; e < d; e++) {
                size_t o = ((size_t)hp * Kc + k) * d + e;
                real p = Wf[2 * (o - e) + d + e], m = mu[o]; /* P = 1 / sigma2, as prep computed it */
                dmu[o] += dMk[e] * p - dc[k] * m * p;
                real dPt = (real)-0.5 * dQk[e] + dMk[e] * m - (real)0.5 * dc[k] * m * m;
                real ds2 = -dPt * p * p - (real)0.5 * dc[k] * p; /* sigma2 = softplus(var_raw) + floor */
                dvar_raw[o] += ds2 * sigmoid(var_raw[o]);
            }
        }
    }
}

/* one pass per parameter set; the sums in double (ops.h) */
void cpu_gma_dirichlet_backward(real *dl, const real *l, int Hp, int Kc, double c, real live_above) {
    for (int h = 0; h < Hp; h++) {
        const real *lh = l + (size_t)h * Kc;
        real *gh = dl + (size_t)h * Kc;
        double mx = lh[0], sum = 0;
        int live = 0;
        for (int k = 1; k < Kc; k++) mx = fmax(mx, lh[k]);
        for (int k = 0; k < Kc; k++) sum += exp(lh[k] - mx), live += lh[k] > live_above;
        for (int k = 0; k < Kc; k++) gh[k] += (real)(c * ((lh[k] > live_above) - live * exp(lh[k] - mx) / sum));
    }
}
