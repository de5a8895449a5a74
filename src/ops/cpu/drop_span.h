/* drop_span.h: the dropout words (ops/dropout.h, docs/model.md §8) of a run of consecutive
 * elements on the CPU, in element order: w[i] = word(e0 + i). With AVX2 the Philox rounds
 * run on 16 groups (64 elements) at once, two independent 8-lane chains so that the
 * multiplier latency overlaps, and a 4 x 8 transpose puts the words in element order;
 * elements before the first whole block and after the last one take the scalar
 * definition. Without AVX2 the scalar definition does it all. Both give the same words
 * (tests/test_dropout.c checks it over lengths and offsets that split the blocks). */
#ifndef GMA_CPU_DROP_SPAN_H
#define GMA_CPU_DROP_SPAN_H
#include <stddef.h>
#include <stdint.h>

#include "ops/dropout.h"

#ifdef __AVX2__
#include <immintrin.h>
#endif

/* the definition: one Philox call per group of four elements */
static inline void drop_span_scalar(uint32_t *w, const GmaDrop *g, uint64_t e0, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint64_t e = e0 + i;
        uint32_t q[4];
        gma_drop_words(q, g, e >> 2);
        for (unsigned t = (unsigned)(e & 3); t < 4 && i < n; t++, i++) w[i] = q[t];
    }
}

#ifdef __AVX2__
/* the (low, high) counter words of the 8 groups g0 .. g0 + 7: lo + lane, with the carry
 * into the high word where it wraps */
static inline void drop_counter8(__m256i *x0, __m256i *x1, uint64_t g0) {
    const __m256i sign = _mm256_set1_epi32(INT32_MIN);
    __m256i lo = _mm256_set1_epi32((int)(uint32_t)g0);
    *x0 = _mm256_add_epi32(lo, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256i wrapped = _mm256_cmpgt_epi32(_mm256_xor_si256(lo, sign), _mm256_xor_si256(*x0, sign));
    *x1 = _mm256_sub_epi32(_mm256_set1_epi32((int)(uint32_t)(g0 >> 32)), wrapped);
}

/* one Philox round on 8 lanes: the 32 x 32 -> 64-bit products of the even and the odd lanes */
#define DROP_ROUND8(x0, x1, x2, x3, K0, K1)                                                                        \
    do {                                                                                                           \
        __m256i e0_ = _mm256_mul_epu32(x0, M0), o0_ = _mm256_mul_epu32(_mm256_srli_epi64(x0, 32), M0);             \
        __m256i e1_ = _mm256_mul_epu32(x2, M1), o1_ = _mm256_mul_epu32(_mm256_srli_epi64(x2, 32), M1);             \
        __m256i lo0_ = _mm256_blend_epi32(e0_, _mm256_slli_epi64(o0_, 32), 0xAA);                                 \
        __m256i hi0_ = _mm256_blend_epi32(_mm256_srli_epi64(e0_, 32), o0_, 0xAA);                                 \
        __m256i lo1_ = _mm256_blend_epi32(e1_, _mm256_slli_epi64(o1_, 32), 0xAA);                                 \
        __m256i hi1_ = _mm256_blend_epi32(_mm256_srli_epi64(e1_, 32), o1_, 0xAA);                                 \
        x0 = _mm256_xor_si256(_mm256_xor_si256(hi1_, x1), K0);                                                     \
        x2 = _mm256_xor_si256(_mm256_xor_si256(hi0_, x3), K1);                                                     \
        x1 = lo1_;                                                                                                 \
        x3 = lo0_;                                                                                                 \
    } while (0)

/* words k of lanes 0..7 (x0..x3) to element order at w[0..31] */
static inline void drop_store8(uint32_t *w, __m256i x0, __m256i x1, __m256i x2, __m256i x3) {
    __m256i t0 = _mm256_unpacklo_epi32(x0, x1), t1 = _mm256_unpackhi_epi32(x0, x1);
    __m256i t2 = _mm256_unpacklo_epi32(x2, x3), t3 = _mm256_unpackhi_epi32(x2, x3);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2); /* groups 0|4, 1|5 */
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3); /* groups 2|6, 3|7 */
    _mm256_storeu_si256((__m256i *)w, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256((__m256i *)(w + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256((__m256i *)(w + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256((__m256i *)(w + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
}

/* the words of the 16 groups g0 .. g0 + 15 (64 elements) in element order */
static inline void drop_block64(uint32_t *w, const GmaDrop *g, uint64_t g0) {
    const __m256i M0 = _mm256_set1_epi64x(0xD2511F53), M1 = _mm256_set1_epi64x(0xCD9E8D57);
    __m256i a0, a1, b0, b1;
    drop_counter8(&a0, &a1, g0);
    drop_counter8(&b0, &b1, g0 + 8);
    __m256i a2 = _mm256_set1_epi32((int)g->c2), a3 = _mm256_set1_epi32((int)g->c3), b2 = a2, b3 = a3;
    uint32_t k0 = g->key[0], k1 = g->key[1];
    for (int r = 0; r < 10; r++) {
        __m256i K0 = _mm256_set1_epi32((int)k0), K1 = _mm256_set1_epi32((int)k1);
        DROP_ROUND8(a0, a1, a2, a3, K0, K1);
        DROP_ROUND8(b0, b1, b2, b3, K0, K1);
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    drop_store8(w, a0, a1, a2, a3);
    drop_store8(w + 32, b0, b1, b2, b3);
}
#undef DROP_ROUND8
#endif

/* w[i] = word(e0 + i), i < n */
static inline void drop_span(uint32_t *w, const GmaDrop *g, uint64_t e0, size_t n) {
#ifdef __AVX2__
    size_t head = (size_t)((4 - (e0 & 3)) & 3);
    if (head > n) head = n;
    drop_span_scalar(w, g, e0, head);
    size_t i = head;
    for (; i + 64 <= n; i += 64) drop_block64(w + i, g, (e0 + i) >> 2);
    if (n - i >= 16) { /* a partial block: the whole block into a buffer, its start copied */
        uint32_t t[64];
        drop_block64(t, g, (e0 + i) >> 2);
        for (size_t j = 0; j < n - i; j++) w[i + j] = t[j];
        return;
    }
    drop_span_scalar(w + i, g, e0 + i, n - i);
#else
    drop_span_scalar(w, g, e0, n);
#endif
}
#endif
