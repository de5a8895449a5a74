/* dropout.h: the dropout mask (docs/model.md §8: the Philox counter, key and element index),
 * one definition for the CPU and CUDA backends, so that both, any thread count, a resumed
 * run and R data-parallel ranks draw the same bits: element e of a site is kept iff
 * word(e) < keep_below = round((1 - p) 2^32), and a kept element is scaled by 1 / (1 - p).
 * One Philox call gives four consecutive elements. Header-only, plain C11 and CUDA. */
#ifndef GMA_DROPOUT_H
#define GMA_DROPOUT_H
#include <stdint.h>

#include "ops/philox.h"

/* dropout sites (the low 4 bits of counter word 3); GMA_DROP_ROUTE is no dropout but the
 * stream of GMA's top-k routing noise (ops/gma_topk.h) */
enum { GMA_DROP_EMBED = 0, GMA_DROP_MIXER = 1, GMA_DROP_MLP_HIDDEN = 2, GMA_DROP_MLP = 3, GMA_DROP_ATTN = 4,
       GMA_DROP_HEAD = 5, GMA_DROP_ROUTE = 6 };

typedef struct GmaDrop {
    uint32_t key[2];     /* the run's seed */
    uint32_t c2, c3;     /* step; micro-batch << 16 | layer << 4 | site */
    uint32_t keep_below; /* keep iff word < keep_below */
    double scale;        /* 1 / (1 - p) */
    int seg_local;       /* local sequences per segment (> 0) */
    int64_t seg_global;  /* global sequences per segment */
    int64_t first;       /* this process's first sequence in each segment */
} GmaDrop;

/* counter word 3: micro-batch << 16 | layer << 4 | site */
GMA_PHILOX_FN uint32_t gma_drop_c3(uint32_t micro, int layer, int site) {
    return micro << 16 | ((uint32_t)layer & 0xfffu) << 4 | ((uint32_t)site & 0xfu);
}
/* keep_below for rate p in (0, 1) */
GMA_PHILOX_FN uint32_t gma_drop_threshold(double p) {
    double t = (1.0 - p) * 4294967296.0 + 0.5;
    return t >= 4294967295.0 ? 4294967295u : t <= 0 ? 0u : (uint32_t)t;
}

/* the global sequence index of local sequence s */
GMA_PHILOX_FN int64_t gma_drop_seq(const GmaDrop *g, int64_t s) {
    return (s / g->seg_local) * g->seg_global + g->first + s % g->seg_local;
}

/* element index of attention probability (i, j) of head h of local sequence s: the site's
 * tensor is [global sequence, head, N, N] */
GMA_PHILOX_FN uint64_t gma_drop_attn_index(const GmaDrop *g, int64_t s, int h, int H, int N, int i, int j) {
    return ((uint64_t)gma_drop_seq(g, s) * (uint64_t)H + (uint64_t)h) * (uint64_t)N * (uint64_t)N + (uint64_t)i * (uint64_t)N +
           (uint64_t)j;
}

/* the four words of element group e / 4 */
GMA_PHILOX_FN void gma_drop_words(uint32_t w[4], const GmaDrop *g, uint64_t group) {
    uint32_t c[4] = {(uint32_t)group, (uint32_t)(group >> 32), g->c2, g->c3};
    philox4x32_10(w, c, g->key);
}

/* the multiplier of element e: scale when kept, else 0 */
GMA_PHILOX_FN double gma_drop_mult(const GmaDrop *g, uint64_t e) {
    uint32_t w[4];
    gma_drop_words(w, g, e >> 2);
    return w[e & 3] < g->keep_below ? g->scale : 0.0;
}
#endif
