/* passkey.h: passkey retrieval (data.source "passkey"; docs/longctx.md): a number hidden at
 * a random depth in filler text, asked for at the end, as in the long-context evaluations
 * of Landmark Attention and LongLoRA, here as a generated token task.
 *
 * Vocabulary V (data.passkey_vocab >= 16): 0 padding, 1 the key's mark, 2 the question's
 * mark, 3..12 the digits 0..9, 13..V-1 filler. An example of length n with k digits:
 * filler over [0, n - k - 1) with the key "1 d1 .. dk" written over it at offset s, then the
 * question "2 d1 .. dk" in the last k + 1 positions. Scored: the question's mark (target d1)
 * and its first k - 1 digits (targets d2 .. dk); every other target is -1. Greedy decoding
 * after the mark reads back all k digits exactly when these k teacher-forced predictions
 * are all right, so exact match is read off one forward pass.
 * The depth s / (n - 2k - 2) is drawn uniformly from [depth_min, depth_max] (0 = the key at
 * the start, 1 = just before the question). Filler "repeat": one fixed sentence of
 * PASSKEY_SENTENCE filler tokens (drawn from the seed) repeated, as the "The grass is
 * green. The sky is blue." of the published test; "random": uniform filler tokens.
 * Example i of split s at length n is generated from (seed, s, i, n) alone. Training
 * batches cycle over data.passkey_lengths (empty: the window train.seq_len), padded to the
 * window; evaluation examples fill the window (gmaeval --seq-len N tests at length N). */
#ifndef GMA_PASSKEY_H
#define GMA_PASSKEY_H
#include <stdint.h>

#include "core/config.h"

#define PASSKEY_MAX_DIGITS 16
#define PASSKEY_MAX_LENGTHS 16
#define PASSKEY_SENTENCE 16
#define PASSKEY_DEPTH_BUCKETS 10 /* gmaeval's accuracy by depth: [0, 0.1), ..., [0.9, 1] */
enum { PASSKEY_PAD, PASSKEY_KEY, PASSKEY_ASK, PASSKEY_DIGIT0 };
#define PASSKEY_FILLER0 (PASSKEY_DIGIT0 + 10)
enum { PASSKEY_FILLER_REPEAT, PASSKEY_FILLER_RANDOM }; /* data.passkey_filler: repeat|random */

/* The keys data.passkey_* (a stored section, its keys under data.). */
typedef struct PasskeyCfg {
    int vocab, digits, filler, valid, test;
    double depth_min, depth_max;
    char lengths[128];
} PasskeyCfg;
extern const CfgSection passkey_cfg_section;
const PasskeyCfg *passkey_cfg(const Config *c);

typedef struct PasskeyTask {
    int vocab, digits, random_filler;
    double depth_min, depth_max;
    int n_len, len[PASSKEY_MAX_LENGTHS]; /* training lengths (0 entries: the window) */
    int32_t sentence[PASSKEY_SENTENCE];
    uint64_t seed;
} PasskeyTask;

/* The task of the keys p and the run's seed for a window of N tokens (N 0: no training
 * window to check): 0, or -1 with an error naming the key. */
int passkey_init(PasskeyTask *t, const PasskeyCfg *p, uint64_t seed, int N);
/* The shortest example of k digits (key, question and one filler token). */
static inline int passkey_min_len(int k) { return 2 * k + 4; }
/* Example `index` of `split` at length n (<= N) into tok[N], tgt[N] (the rest padding);
 * returns the key's offset s. */
int passkey_example(const PasskeyTask *t, int split, uint64_t index, int n, int N, int32_t *tok, int32_t *tgt);
/* The training length of batch `batch` (cycling over the lengths; N when none is set). */
int passkey_train_len(const PasskeyTask *t, uint64_t batch, int N);
/* The depth bucket of the example in window tok[N] (its key mark's offset s over n - 2k - 2,
 * n the example's length read off its question mark, in PASSKEY_DEPTH_BUCKETS), -1 when the
 * window holds no example. */
int passkey_depth_bucket(const PasskeyTask *t, const int32_t *tok, int N);
#endif
