/* rng.c: xoshiro256** with splitmix64 seeding; normal draws by Box-Muller. */
#include "core/rng.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_seed(Rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

void rng_seed2(Rng *r, uint64_t seed, uint64_t stream) {
    uint64_t x = seed;
    uint64_t a = splitmix64(&x);
    rng_seed(r, a ^ (stream * 0xd1342543de82ef95ULL + 0x2545f4914f6cdd1dULL));
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_u64(Rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double rng_uniform(Rng *r) { return (double)(rng_u64(r) >> 11) * 0x1.0p-53; }

uint64_t rng_below(Rng *r, uint64_t n) {
    if (n <= 1) return 0;
    uint64_t lim = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = rng_u64(r);
    while (x >= lim);
    return x % n;
}

double rng_normal(Rng *r) {
    double u1 = rng_uniform(r), u2 = rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void rng_to_hex(const Rng *r, char out[65]) {
    for (int i = 0; i < 4; i++) snprintf(out + 16 * i, 17, "%016llx", (unsigned long long)r->s[i]);
}

int rng_from_hex(Rng *r, const char *hex) {
    if (strlen(hex) != 64) return -1;
    for (int i = 0; i < 4; i++) {
        unsigned long long v = 0;
        for (int j = 0; j < 16; j++) {
            char c = hex[16 * i + j];
            int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
            if (d < 0) return -1;
            v = v * 16 + (unsigned)d;
        }
        r->s[i] = v;
    }
    return 0;
}
