/* kmeans.c: k-means++ seeding and Lloyd iterations (see kmeans.h). Host code in double
 * accumulation; used once at initialisation and on collapse repair, never per step. */
#include "nn/kmeans.h"

#include <stdlib.h>
#include <string.h>

static double dist2(const real *a, const real *b, int d) {
    double s = 0;
    for (int e = 0; e < d; e++) {
        double t = (double)a[e] - b[e];
        s += t * t;
    }
    return s;
}

static double nearest(const real *x, const real *C, int m, int d, int *arg) {
    double best = INFINITY;
    int bi = 0;
    for (int j = 0; j < m; j++) {
        double t = dist2(x, C + (size_t)j * d, d);
        if (t < best) best = t, bi = j;
    }
    if (arg) *arg = bi;
    return best;
}

int kmeans_pp_pick(const real *X, int n, int d, const real *C, int m, Rng *rng) {
    if (n <= 0) return -1;
    if (m == 0) return (int)rng_below(rng, (uint64_t)n);
    double *w = xmalloc(sizeof(double) * n), tot = 0;
    for (int i = 0; i < n; i++) tot += (w[i] = nearest(X + (size_t)i * d, C, m, d, NULL));
    int pick;
    if (!(tot > 0)) pick = (int)rng_below(rng, (uint64_t)n);
    else {
        double u = rng_uniform(rng) * tot, acc = 0;
        pick = n - 1;
        for (int i = 0; i < n; i++) {
            acc += w[i];
            if (u < acc && w[i] > 0) {
                pick = i;
                break;
            }
        }
    }
    free(w);
    return pick;
}

void kmeans_pp_seed(const real *X, int n, int d, int k, real *centres, Rng *rng) {
    for (int j = 0; j < k; j++) {
        int i = kmeans_pp_pick(X, n, d, centres, j, rng);
        memcpy(centres + (size_t)j * d, X + (size_t)i * d, sizeof(real) * d);
    }
}

double kmeans_sse(const real *X, int n, int d, int k, const real *centres) {
    double s = 0;
    for (int i = 0; i < n; i++) s += nearest(X + (size_t)i * d, centres, k, d, NULL);
    return s;
}

double kmeans_lloyd_step(const real *X, int n, int d, int k, real *centres, int *assign) {
    double *sum = xcalloc((size_t)k * d, sizeof(double));
    long *cnt = xcalloc(k, sizeof(long));
    double sse = 0;
    for (int i = 0; i < n; i++) {
        int a;
        sse += nearest(X + (size_t)i * d, centres, k, d, &a);
        if (assign) assign[i] = a;
        cnt[a]++;
        for (int e = 0; e < d; e++) sum[(size_t)a * d + e] += X[(size_t)i * d + e];
    }
    for (int j = 0; j < k; j++)
        if (cnt[j] > 0)
            for (int e = 0; e < d; e++) centres[(size_t)j * d + e] = (real)(sum[(size_t)j * d + e] / cnt[j]);
    free(sum);
    free(cnt);
    return sse;
}

double kmeans_fit(const real *X, int n, int d, int k, int iters, real *centres, Rng *rng) {
    kmeans_pp_seed(X, n, d, k, centres, rng);
    int *a = xmalloc(sizeof(int) * n), *prev = xmalloc(sizeof(int) * n);
    for (int it = 0; it < iters; it++) {
        kmeans_lloyd_step(X, n, d, k, centres, a);
        if (it > 0 && memcmp(a, prev, sizeof(int) * n) == 0) break;
        memcpy(prev, a, sizeof(int) * n);
    }
    free(a);
    free(prev);
    return kmeans_sse(X, n, d, k, centres);
}
