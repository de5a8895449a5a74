/* philox.h: the Philox-4x32-10 counter-based generator (Salmon, Moraes, Dror and Shaw,
 * "Parallel random numbers: as easy as 1, 2, 3", SC 2011), and the dropout mask drawn
 * from it. A counter-based generator gives element e of a stream as a pure function of
 * (key, counter), so a mask does not depend on the order or the thread that draws it:
 * the CPU and CUDA backends, any thread count, a resumed run and R data-parallel ranks
 * all draw the same bits (docs/model.md, dropout).
 *
 * Header-only, plain C11 and CUDA: the CUDA backend includes it in its kernels. */
#ifndef GMA_PHILOX_H
#define GMA_PHILOX_H
#include <stdint.h>

#if defined(__CUDACC__)
#define GMA_PHILOX_FN static __host__ __device__ __forceinline__
#else
#define GMA_PHILOX_FN static inline
#endif

/* out = Philox4x32-10(counter c, key k) */
GMA_PHILOX_FN void philox4x32_10(uint32_t out[4], const uint32_t c[4], const uint32_t k[2]) {
    uint32_t x0 = c[0], x1 = c[1], x2 = c[2], x3 = c[3], k0 = k[0], k1 = k[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * x0, p1 = (uint64_t)0xCD9E8D57u * x2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0, hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        x0 = hi1 ^ x1 ^ k0;
        x1 = lo1;
        x2 = hi0 ^ x3 ^ k1;
        x3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = x0; out[1] = x1; out[2] = x2; out[3] = x3;
}
#endif
