/* cpu_dropout.c: inverted dropout with the counter-based mask of ops/dropout.h
 * (docs/model.md §8). Every element's multiplier is a pure function of its global index,
 * so the result does not depend on the thread count or the order of the loop: the
 * tensor is cut into chunks of CHUNK elements inside each sequence, shared among the
 * threads; a chunk draws its words with drop_span (AVX2 Philox where available) and
 * applies them in one pass, y = x * (word < keep_below ? scale : 0), the product of
 * ops/dropout.h's gma_drop_mult as the CUDA kernel takes it. */
#include "ops/cpu/cpu.h"
#include "ops/cpu/drop_span.h"

#define CHUNK 1024

void cpu_dropout(real *y, const real *x, int S, size_t per_seq, const GmaDrop *g) {
    size_t n = (size_t)S * per_seq, nch = (per_seq + CHUNK - 1) / CHUNK;
    if (n == 0) return;
    real sc = (real)g->scale;
    uint32_t kb = g->keep_below;
#pragma omp parallel for schedule(static) if (PAR_WORTH(n))
    for (size_t c = 0; c < (size_t)S * nch; c++) {
        size_t s = c / nch, i0 = (c % nch) * CHUNK, len = GMA_MIN((size_t)CHUNK, per_seq - i0);
        uint32_t w[CHUNK];
        drop_span(w, g, (uint64_t)gma_drop_seq(g, (int64_t)s) * per_seq + i0, len);
        const real *xs = x + s * per_seq + i0;
        real *ys = y + s * per_seq + i0;
#pragma omp simd
        for (size_t j = 0; j < len; j++) ys[j] = xs[j] * (w[j] < kb ? sc : 0);
    }
}
