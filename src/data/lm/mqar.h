/* mqar.h: the multi-query associative recall task of Zoology (data.source "mqar"). The
 * example (keys, values, query gaps, targets, filler, checks) and the protocol with its
 * sources: docs/mqar.md. A split holds one or more (length, pairs) entries: train and valid
 * the training ones (data.mqar_lengths, data.mqar_pairs), test the test ones
 * (data.mqar_test_lengths, data.mqar_test_pairs). Example i of split s is generated from
 * (seed, s, i) alone; its entry is the one its batch names (mqar_entry_of). Shorter
 * examples are padded to the window (token 0, target -1): with causal mixers the padding
 * after an example changes nothing before it. */
#ifndef GMA_MQAR_H
#define GMA_MQAR_H
#include <stdint.h>

#define MQAR_MAX_ENTRIES 16

enum { MQAR_FILLER_RANDOM, MQAR_FILLER_ZERO }; /* data.mqar_filler: random|zero */

typedef struct MqarTask {
    int vocab;
    double power_a;
    int zero_filler;                   /* 1: filler 0 (random_non_queries False) */
    int n[3];                          /* entries per split */
    int len[3][MQAR_MAX_ENTRIES], pairs[3][MQAR_MAX_ENTRIES];
    uint64_t seed;
    uint64_t train_n;                  /* data.mqar_train: a fixed training set of this many examples (0: a fresh stream) */
} MqarTask;

/* Parse a comma-separated list of positive integers into out[max]; returns the count or -1
 * with the error naming `key`. */
int mqar_parse_list(const char *key, const char *s, int *out, int max);
/* Fill one split's entries from the lists (pairs: one value for every length, or one per
 * length) and check each: 4P <= N, N even, P < V/2, N <= window (0 = unchecked). -1 with an
 * error that names the key. */
int mqar_set_split(MqarTask *t, int split, const char *len_key, const char *lens, const char *pairs_key,
                   const char *pairs, int window);
/* Validate vocab and power_a and reset the entries. */
int mqar_init(MqarTask *t, int vocab, double power_a, int filler, uint64_t seed);
/* Write example `index` of `split` with `entry`'s length and pairs into tok[N], tgt[N]
 * (N >= the entry's length; the rest is padding). */
void mqar_example(const MqarTask *t, int split, int entry, uint64_t index, int N, int32_t *tok, int32_t *tgt);
/* The entry of training batch `batch` (batches cycle over the entries) and of evaluation
 * example `index` of split s at window N: test keeps to the entries of length N when it has
 * one (gmaeval --seq-len N scores one length), else cycles over those that fit. */
int mqar_train_entry(const MqarTask *t, uint64_t batch);
int mqar_eval_entry(const MqarTask *t, int split, uint64_t index, int N);
/* The gap-slot distribution p(g) over `space` slots, normalised (for tests and docs). */
void mqar_power_law(double a, int space, double *p);
#endif
