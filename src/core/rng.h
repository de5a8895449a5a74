/* rng.h: the project's random numbers: xoshiro256** seeded by splitmix64.
 * The whole state is four u64 words, saved in checkpoints so resume is exact. */
#ifndef GMA_RNG_H
#define GMA_RNG_H
#include <stdint.h>

typedef struct Rng { uint64_t s[4]; } Rng;

void rng_seed(Rng *r, uint64_t seed);
/* A generator derived from (seed, stream): independent streams for splits, layers... */
void rng_seed2(Rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_u64(Rng *r);
/* Uniform in [0, 1). */
double rng_uniform(Rng *r);
/* Uniform integer in [0, n). */
uint64_t rng_below(Rng *r, uint64_t n);
/* Standard normal (Box-Muller, no cached second value so the state alone is the state). */
double rng_normal(Rng *r);
/* Serialize as 64 hex characters + NUL, and back (returns 0 or -1). */
void rng_to_hex(const Rng *r, char out[65]);
int rng_from_hex(Rng *r, const char *hex);
#endif
