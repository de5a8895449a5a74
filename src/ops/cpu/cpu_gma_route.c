/* cpu_gma_route.c: GMA Gaussian routing (docs/model.md §3.2) on the CPU: the fused
 * log-density + softmax and its backward.
 *
 * Per head, with sigma2 = softplus(var_raw) + var_floor, P = 1/sigma2, M = mu P and
 * cst_k = log_softmax(prior)_k - 1/2 sum_d (mu^2 P + log sigma2):
 *   l(x) = -1/2 (x*x) P^T + x M^T + cst        (two matrix products per block of rows)
 *   gamma(x) = softmax(l(x) / tau)
 * Blocks of rows are (batch, head) pairs and run in parallel; parameter gradients are
 * summed per pair into separate buffers and reduced in a fixed order (deterministic). */
#include <string.h>

#include "ops/cpu/cpu.h"

static inline real softplus(real s) { return s > 20 ? s : rlog1p(rexp(s)); }
static inline real sigmoid(real s) { return 1 / (1 + rexp(-s)); }

/* P, M [Hp,Kc,d], cst [Hp,Kc] for the Hp parameter sets */
static void prep(real *P, real *M, real *cst, const real *mu, const real *var_raw, const real *prior, int Hp, int d,
                 int Kc, real var_floor) {
    for (int h = 0; h < Hp; h++) {
        const real *a = prior + (size_t)h * Kc;
        real mx = -INFINITY;
        for (int k = 0; k < Kc; k++) mx = a[k] > mx ? a[k] : mx;
        double s = 0;
        for (int k = 0; k < Kc; k++) s += rexp(a[k] - mx);
        real lse = mx + (real)log(s);
        for (int k = 0; k < Kc; k++) {
            size_t o = ((size_t)h * Kc + k) * d;
            double c = 0;
            for (int e = 0; e < d; e++) {
                real s2 = softplus(var_raw[o + e]) + var_floor;
                real p = 1 / s2;
                P[o + e] = p;
                M[o + e] = mu[o + e] * p;
                c += mu[o + e] * mu[o + e] * p + log(s2);
            }
            cst[(size_t)h * Kc + k] = a[k] - lse - (real)(0.5 * c);
        }
    }
}

/* prep's results for the last PREP_CACHE parameter sets (a set per GMA layer). Incremental
 * decoding routes one token at a time, and recomputing P, M and cst (a softplus and a log
 * per entry) would cost more than the routing itself. An entry keeps a copy of the mu,
 * var_raw and prior it was made from and is reused only when they are equal byte for byte
 * (memcmp, at cache bandwidth: no hash to collide, no writer to be told), together with the
 * sizes and var_floor; so any in-place update of the parameters (an optimiser step, a
 * checkpoint load, k-means init, a finite-difference probe) makes it miss. */
#define PREP_CACHE 32
typedef struct PrepEntry {
    int dims[3];
    real var_floor;
    size_t n, cap;
    real *buf; /* P, M, cst (n), then the copy of mu, var_raw, prior */
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
    PrepEntry *e = &g_prep[g_prep_last = g_prep_next];
    g_prep_next = (g_prep_next + 1) % PREP_CACHE;
    if (e->cap < 2 * n) e->buf = xrealloc(e->buf, sizeof(real) * 2 * n), e->cap = 2 * n;
    e->n = n;
    memcpy(e->dims, dims, sizeof dims);
    e->var_floor = var_floor;
    real *c = e->buf + n;
    memcpy(c, mu, sizeof(real) * nkd);
    memcpy(c + nkd, var_raw, sizeof(real) * nkd);
    memcpy(c + 2 * nkd, prior, sizeof(real) * (size_t)Hp * Kc);
    prep(e->buf, e->buf + nkd, e->buf + 2 * nkd, mu, var_raw, prior, Hp, d, Kc, var_floor);
    return e->buf;
}

void cpu_gma_route_forward(real *gamma, const real *x, const real *mu, const real *var_raw, const real *prior, int B,
                           int H, int N, int d, int Kc, real tau, real var_floor, int shared) {
    int Hp = shared ? 1 : H;
    const real *P = prep_cached(mu, var_raw, prior, Hp, d, Kc, var_floor), *M = P + (size_t)Hp * Kc * d,
               *cst = M + (size_t)Hp * Kc * d;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * (size_t)H * (size_t)N * (size_t)Kc * (size_t)d))
    for (int bh = 0; bh < B * H; bh++) {
        int hp = shared ? 0 : bh % H;
        const real *xb = x + (size_t)bh * N * d;
        real *g = gamma + (size_t)bh * N * Kc;
        real *x2 = cpu_workspace(0, (size_t)N * d);
        for (size_t i = 0; i < (size_t)N * d; i++) x2[i] = xb[i] * xb[i];
        cpu_matmul(g, xb, M + (size_t)hp * Kc * d, N, Kc, d, 0, 1, 1, 0);
        cpu_matmul(g, x2, P + (size_t)hp * Kc * d, N, Kc, d, 0, 1, -0.5, 1);
        const real *c = cst + (size_t)hp * Kc;
        for (int i = 0; i < N; i++) {
            real *row = g + (size_t)i * Kc;
            real mx = -INFINITY;
            for (int k = 0; k < Kc; k++) {
                row[k] = (row[k] + c[k]) / tau;
                mx = row[k] > mx ? row[k] : mx;
            }
            double s = 0;
            for (int k = 0; k < Kc; k++) s += (row[k] = rexp(row[k] - mx));
            real inv = (real)(1.0 / s);
            for (int k = 0; k < Kc; k++) row[k] *= inv;
        }
    }
}

void cpu_gma_route_backward(real *dx, real *dmu, real *dvar_raw, real *dprior, const real *dgamma, const real *gamma,
                            const real *x, const real *mu, const real *var_raw, const real *prior, int B, int H, int N,
                            int d, int Kc, real tau, real var_floor, int shared) {
    int Hp = shared ? 1 : H;
    size_t per = (size_t)Kc * (2 * d + 1); /* dP, dM, dcst of one (batch, head) pair */
    real *acc = cpu_workspace(1, (size_t)B * H * per);
    const real *P = prep_cached(mu, var_raw, prior, Hp, d, Kc, var_floor), *M = P + (size_t)Hp * Kc * d;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * (size_t)H * (size_t)N * (size_t)Kc * (size_t)d))
    for (int bh = 0; bh < B * H; bh++) {
        int hp = shared ? 0 : bh % H;
        const real *xb = x + (size_t)bh * N * d, *g = gamma + (size_t)bh * N * Kc, *dg = dgamma + (size_t)bh * N * Kc;
        real *dxb = dx + (size_t)bh * N * d;
        real *w = cpu_workspace(0, (size_t)N * (Kc + 2 * d));
        real *dl = w, *x2 = w + (size_t)N * Kc, *t = x2 + (size_t)N * d;
        for (int i = 0; i < N; i++) {
            const real *gi = g + (size_t)i * Kc, *dgi = dg + (size_t)i * Kc;
            double dot = 0;
            for (int k = 0; k < Kc; k++) dot += gi[k] * dgi[k];
            for (int k = 0; k < Kc; k++) dl[(size_t)i * Kc + k] = gi[k] * (dgi[k] - (real)dot) / tau;
        }
        for (size_t i = 0; i < (size_t)N * d; i++) x2[i] = xb[i] * xb[i];
        const real *Ph = P + (size_t)hp * Kc * d, *Mh = M + (size_t)hp * Kc * d;
        /* dx += dl M - x * (dl P) */
        cpu_matmul(dxb, dl, Mh, N, d, Kc, 0, 0, 1, 1);
        cpu_matmul(t, dl, Ph, N, d, Kc, 0, 0, 1, 0);
        for (size_t i = 0; i < (size_t)N * d; i++) dxb[i] -= xb[i] * t[i];
        real *dP = acc + (size_t)bh * per, *dM = dP + (size_t)Kc * d, *dc = dM + (size_t)Kc * d;
        cpu_matmul(dP, dl, x2, Kc, d, N, 1, 0, -0.5, 0);
        cpu_matmul(dM, dl, xb, Kc, d, N, 1, 0, 1, 0);
        for (int k = 0; k < Kc; k++) dc[k] = 0;
        for (int i = 0; i < N; i++)
            for (int k = 0; k < Kc; k++) dc[k] += dl[(size_t)i * Kc + k];
    }
    /* reduce the pairs of each parameter set in a fixed order, then chain to mu, var_raw, prior */
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * (size_t)H * (size_t)N * (size_t)Kc * (size_t)d))
    for (int hp = 0; hp < Hp; hp++) {
        real *dP = cpu_workspace(0, per), *dM = dP + (size_t)Kc * d, *dc = dM + (size_t)Kc * d;
        memset(dP, 0, sizeof(real) * per);
        for (int bh = 0; bh < B * H; bh++) {
            if (!shared && bh % H != hp) continue;
            const real *src = acc + (size_t)bh * per;
            for (size_t i = 0; i < per; i++) dP[i] += src[i];
        }
        const real *a = prior + (size_t)hp * Kc;
        real mx = -INFINITY;
        for (int k = 0; k < Kc; k++) mx = a[k] > mx ? a[k] : mx;
        double s = 0, sdc = 0;
        for (int k = 0; k < Kc; k++) s += rexp(a[k] - mx), sdc += dc[k];
        for (int k = 0; k < Kc; k++) {
            real pk = (real)(rexp(a[k] - mx) / s);
            dprior[(size_t)hp * Kc + k] += dc[k] - pk * (real)sdc;
            for (int e = 0; e < d; e++) {
                size_t o = ((size_t)hp * Kc + k) * d + e, ko = (size_t)k * d + e;
                real s2 = softplus(var_raw[o]) + var_floor, p = 1 / s2, m = mu[o];
                dmu[o] += dM[ko] * p - dc[k] * m * p;
                real dPt = dP[ko] + dM[ko] * m - (real)0.5 * dc[k] * m * m;
                real ds2 = -dPt * p * p - (real)0.5 * dc[k] * p;
                dvar_raw[o] += ds2 * sigmoid(var_raw[o]);
            }
        }
    }
}
