/* recall.h: the embedded default task, multi-query associative recall (MQAR).
 *
 * Vocabulary V: id 0 = padding, id 1 = separator, keys [2, 2+K), values [2+K, V) with
 * K = (V-2)/2. A sequence of length N holds P key-value pairs (distinct keys, random
 * values), one separator, then Q queries written as "key value" where the key is one of
 * the P and the value is its value; then padding. Only the query keys are scored: their
 * target is the value that follows (every other target is -1). Q = as many as fit in N
 * (at most P) unless set. Example i of split s (0 train, 1 valid, 2 test) is generated from
 * (seed, s, i) alone, so splits are fixed and disjoint streams, and training example
 * order depends only on the step. Chance accuracy is 1/(V-2-K). */
#ifndef GMA_RECALL_H
#define GMA_RECALL_H
#include <stdint.h>

typedef struct RecallTask {
    int vocab, pairs, queries, seq_len;
    uint64_t seed;
} RecallTask;

/* Validate and fill queries (0 = as many as fit). Returns 0 or -1 with the error set. */
int recall_init(RecallTask *t, int vocab, int pairs, int queries, int seq_len, uint64_t seed);
/* Write example `index` of `split` into tok[N], tgt[N]. */
void recall_example(const RecallTask *t, int split, uint64_t index, int32_t *tok, int32_t *tgt);
/* Position in a window of query q's key (its target is the value that follows). */
static inline int recall_query_pos(const RecallTask *t, int q) { return 2 * t->pairs + 1 + 2 * q; }
/* The answers of the two rules that use no key-value matching, for each query q of the
 * window tok[N] (docs/quickstart.md): freq[q] the value most frequent
 * among the P pairs, unans[q] the value most frequent among the pairs' values that the
 * answers of queries 0..q-1 have not used up (each answer in the window takes one
 * occurrence). Ties go to the value of the earliest pair. */
void recall_baselines(const RecallTask *t, const int32_t *tok, int32_t *freq, int32_t *unans);
#endif
