/* cpu_dropout.c: inverted dropout with the counter-based mask of ops/dropout.h
 * (docs/model.md §7). Every element's multiplier is a pure function of its global index,
 * so the result does not depend on the thread count or the order of the loop. */
#include "ops/cpu/cpu.h"

void cpu_dropout(real *y, const real *x, int S, size_t per_seq, const GmaDrop *g) {
    size_t n = (size_t)S * per_seq;
    /* blocks of 4 global elements: one Philox call each */
#pragma omp parallel for schedule(static) if (PAR_WORTH(n))
    for (int s = 0; s < S; s++) {
        uint64_t e0 = (uint64_t)gma_drop_seq(g, s) * per_seq;
        const real *xs = x + (size_t)s * per_seq;
        real *ys = y + (size_t)s * per_seq;
        real sc = (real)g->scale;
        size_t i = 0;
        while (i < per_seq) {
            uint64_t e = e0 + i;
            uint32_t w[4];
            gma_drop_words(w, g, e >> 2);
            for (unsigned k = (unsigned)(e & 3); k < 4 && i < per_seq; k++, i++)
                ys[i] = w[k] < g->keep_below ? xs[i] * sc : 0;
        }
    }
}
