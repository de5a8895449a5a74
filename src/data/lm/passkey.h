/* passkey.h: passkey retrieval (data.source "passkey"), the long-context test of Landmark
 * Attention and LongLoRA as a generated token task: a number hidden at a random depth in
 * filler text, asked for at the end. Vocabulary, layout, targets, depth, filler
 * (PASSKEY_SENTENCE tokens for "repeat") and lengths: docs/longctx.md, "Passkey retrieval".
 * Scoring the question's mark and its first k - 1 digits makes exact match readable from one
 * teacher-forced forward pass. Example i of split s at length n is generated from
 * (seed, s, i, n) alone. */
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
