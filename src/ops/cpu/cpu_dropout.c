/* cpu_dropout.c: inverted dropout with the counter-based mask of ops/dropout.h
 * (docs/model.md §8). Every element's multiplier is a pure function of its global index,
 * so the result does not depend on the thread count or the order of the loop. */
#include "ops/cpu/cpu.h"

#ifdef __AVX2__
#include <immintrin.h>
/* gma_drop_words8 with AVX2: the 32 x 32 -> 64-bit products of the even and the odd lanes */
static inline void words8(uint32_t w[4][GMA_DROP_LANES], const GmaDrop *g, uint64_t g0) {
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    uint32_t lo = (uint32_t)g0, hi = (uint32_t)(g0 >> 32);
    __m256i x0 = _mm256_add_epi32(_mm256_set1_epi32((int)lo), lane);
    /* carry into the high word where lo + lane wrapped */
    __m256i wrapped = _mm256_cmpgt_epi32(_mm256_xor_si256(_mm256_set1_epi32((int)lo), _mm256_set1_epi32(INT32_MIN)),
                                         _mm256_xor_si256(x0, _mm256_set1_epi32(INT32_MIN)));
    __m256i x1 = _mm256_sub_epi32(_mm256_set1_epi32((int)hi), wrapped);
    __m256i x2 = _mm256_set1_epi32((int)g->c2), x3 = _mm256_set1_epi32((int)g->c3);
    const __m256i M0 = _mm256_set1_epi64x(0xD2511F53), M1 = _mm256_set1_epi64x(0xCD9E8D57);
    uint32_t k0 = g->key[0], k1 = g->key[1];
    for (int r = 0; r < 10; r++) {
        __m256i e0 = _mm256_mul_epu32(x0, M0), o0 = _mm256_mul_epu32(_mm256_srli_epi64(x0, 32), M0);
        __m256i e1 = _mm256_mul_epu32(x2, M1), o1 = _mm256_mul_epu32(_mm256_srli_epi64(x2, 32), M1);
        __m256i lo0 = _mm256_blend_epi32(e0, _mm256_slli_epi64(o0, 32), 0xAA);
        __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(e0, 32), o0, 0xAA);
        __m256i lo1 = _mm256_blend_epi32(e1, _mm256_slli_epi64(o1, 32), 0xAA);
        __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(e1, 32), o1, 0xAA);
        __m256i y0 = _mm256_xor_si256(_mm256_xor_si256(hi1, x1), _mm256_set1_epi32((int)k0));
        __m256i y2 = _mm256_xor_si256(_mm256_xor_si256(hi0, x3), _mm256_set1_epi32((int)k1));
        x1 = lo1;
        x3 = lo0;
        x0 = y0;
        x2 = y2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    _mm256_storeu_si256((__m256i *)w[0], x0);
    _mm256_storeu_si256((__m256i *)w[1], x1);
    _mm256_storeu_si256((__m256i *)w[2], x2);
    _mm256_storeu_si256((__m256i *)w[3], x3);
}
#else
#define words8 gma_drop_words8
#endif

void cpu_dropout(real *y, const real *x, int S, size_t per_seq, const GmaDrop *g) {
    size_t n = (size_t)S * per_seq;
#pragma omp parallel for schedule(static) if (PAR_WORTH(n))
    for (int s = 0; s < S; s++) {
        uint64_t e0 = (uint64_t)gma_drop_seq(g, s) * per_seq;
        const real *xs = x + (size_t)s * per_seq;
        real *ys = y + (size_t)s * per_seq;
        real sc = (real)g->scale;
        uint32_t kb = g->keep_below;
        size_t i = 0;
        /* up to the first group boundary one element at a time, then 8 groups (32
         * elements) per lane-parallel Philox call, then the tail */
        while (i < per_seq && ((e0 + i) & 3)) {
            ys[i] = gma_drop_mult(g, e0 + i) != 0 ? xs[i] * sc : 0;
            i++;
        }
        uint32_t w[4][GMA_DROP_LANES];
        for (; i + 4 * GMA_DROP_LANES <= per_seq; i += 4 * GMA_DROP_LANES) {
            words8(w, g, (e0 + i) >> 2);
            for (int l = 0; l < GMA_DROP_LANES; l++)
                for (int k = 0; k < 4; k++) {
                    size_t j = i + 4 * (size_t)l + k;
                    ys[j] = w[k][l] < kb ? xs[j] * sc : 0;
                }
        }
        for (; i < per_seq; i++) ys[i] = gma_drop_mult(g, e0 + i) != 0 ? xs[i] * sc : 0;
    }
}
