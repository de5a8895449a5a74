/* gma_topk.h: GMA's sparse routing (gma.topk; docs/model.md §3.12: the cut, its Gumbel noise
 * and the noise's stream element), the cut of one row of responsibilities written once for
 * the CPU and CUDA backends, so that both keep the same components and draw the same noise,
 * whatever the thread count or the grouping of the rows into calls. The noise multiplier is
 * m_c = exp(s g_c) = E_c^(-s), from ops/dropout.h's stream (the run's seed, the step, the
 * micro-batch, the layer) at site GMA_DROP_ROUTE. Header-only, plain C11 and CUDA. */
#ifndef GMA_TOPK_H
#define GMA_TOPK_H
#include <math.h>
#include <stdint.h>

#include "core/common.h"
#include "ops/dropout.h"

typedef struct GmaTopkNoise {
    GmaDrop drop;  /* the stream (keep_below and scale unused) */
    double scale;  /* s > 0 */
    int which;     /* 0 queries, 1 keys */
    int b0, h0, H; /* the call's first local sequence and first head; the layer's heads */
} GmaTopkNoise;

/* m_c of row (local sequence s, head h, position i), for c = c0 .. c0 + n - 1, into m */
GMA_PHILOX_FN void gma_topk_mults(double *m, const GmaTopkNoise *z, int64_t s, int h, int N, int i, int Kc, int c0,
                                  int n) {
    uint64_t e0 = ((((uint64_t)gma_drop_seq(&z->drop, s) * 2 + (uint64_t)z->which) * (uint64_t)z->H + (uint64_t)h) *
                       (uint64_t)N + (uint64_t)i) * (uint64_t)Kc + (uint64_t)c0;
    uint32_t w[4];
    uint64_t got = ~(uint64_t)0;
    for (int j = 0; j < n; j++) {
        uint64_t e = e0 + (uint64_t)j;
        if (e >> 2 != got) gma_drop_words(w, &z->drop, got = e >> 2);
        double E = -log(((double)w[e & 3] + 0.5) * (1.0 / 4294967296.0));
        m[j] = z->scale == 1 ? 1 / E : pow(E, -z->scale);
    }
}

/* One row: out [Kc] from gamma [Kc] (out may be gamma); z NULL: no noise, else the row is
 * (local sequence s, head h, position i). k <= 0 or k >= Kc keeps every component. */
GMA_PHILOX_FN void gma_topk_row(real *out, const real *gamma, int Kc, int k, const GmaTopkNoise *z, int64_t s, int h,
                                int N, int i) {
    if (z) {
        double m[16];
        for (int c0 = 0; c0 < Kc; c0 += 16) {
            int n = Kc - c0 < 16 ? Kc - c0 : 16;
            gma_topk_mults(m, z, s, h, N, i, Kc, c0, n);
            for (int j = 0; j < n; j++) out[c0 + j] = (real)(gamma[c0 + j] * m[j]);
        }
    } else if (out != gamma)
        for (int c = 0; c < Kc; c++) out[c] = gamma[c];
    /* the k-th of the order (larger w first, then the lower index): k passes, each the
     * first entry after the last one found */
    real tv = 0;
    int ti = -1;
    if (k > 0 && k < Kc)
        for (int p = 0; p < k; p++) {
            int bi = -1;
            real bv = 0;
            for (int c = 0; c < Kc; c++) {
                real v = out[c];
                if (ti >= 0 && !(v < tv || (v == tv && c > ti))) continue;
                if (bi < 0 || v > bv) bi = c, bv = v;
            }
            if (bi < 0) break;
            ti = bi, tv = bv;
        }
    int all = !(k > 0 && k < Kc) || ti < 0;
    double sum = 0;
    for (int c = 0; c < Kc; c++)
        if (all || out[c] > tv || (out[c] == tv && c <= ti)) sum += out[c];
    real inv = sum > 0 ? (real)(1 / sum) : 0;
    for (int c = 0; c < Kc; c++) out[c] = (all || out[c] > tv || (out[c] == tv && c <= ti)) ? out[c] * inv : 0;
}
#endif
