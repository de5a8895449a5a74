/* passkey.c: the passkey retrieval generator (passkey.h) and the data source "passkey" that
 * serves it (lm_source.h; its keys data.passkey_*). */
#include "data/lm/passkey.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "data/lm/lm_source.h"
#include "data/lm/mqar.h"

#define O(f) offsetof(PasskeyCfg, f)
static const CfgKey g_keys[] = {
    {"passkey_vocab", CFGT_INT, O(vocab), 0, "64", 16, 65536, NULL,
     "Passkey: vocabulary (docs/longctx.md)."},
    {"passkey_digits", CFGT_INT, O(digits), 0, "5", 1, PASSKEY_MAX_DIGITS, NULL, "Passkey: digits of the hidden number."},
    {"passkey_filler", CFGT_ENUM, O(filler), 0, "repeat", 0, 0, "repeat|random",
     "Passkey: filler text: one fixed sentence of 16 tokens repeated, or uniform random filler tokens."},
    {"passkey_depth_min", CFGT_REAL, O(depth_min), 0, "0", 0, 1, NULL,
     "Passkey: the key's depth is uniform in [depth_min, depth_max] (0 = the start of the filler, 1 = its end)."},
    {"passkey_depth_max", CFGT_REAL, O(depth_max), 0, "1", 0, 1, NULL, "Passkey: see data.passkey_depth_min."},
    {"passkey_lengths", CFGT_STR, O(lengths), sizeof(((PasskeyCfg *)0)->lengths), "", 0, 0, NULL,
     "Passkey: training lengths, comma-separated, one per batch in turn (empty = train.seq_len; docs/longctx.md)."},
    {"passkey_valid", CFGT_INT, O(valid), 0, "256", 1, 100000000, NULL, "Passkey: validation examples."},
    {"passkey_test", CFGT_INT, O(test), 0, "500", 1, 100000000, NULL, "Passkey: test examples per evaluation."},
};
#undef O

const PasskeyCfg *passkey_cfg(const Config *c) { return cfg_section_of(c, &passkey_cfg_section); }

const CfgSection passkey_cfg_section = {"passkey", sizeof(PasskeyCfg), g_keys, CFG_N(g_keys), NULL, "data"};

int passkey_init(PasskeyTask *t, const PasskeyCfg *p, uint64_t seed, int N) {
    memset(t, 0, sizeof *t);
    int k = p->digits, need = passkey_min_len(k);
    if (p->vocab < PASSKEY_FILLER0 + 1)
        return gma_errorf("key data.passkey_vocab: %d leaves no filler token (%d specials and digits)", p->vocab, PASSKEY_FILLER0);
    if (p->depth_min > p->depth_max)
        return gma_errorf("key data.passkey_depth_min: %g is above data.passkey_depth_max %g", p->depth_min, p->depth_max);
    if (p->lengths[0]) {
        t->n_len = mqar_parse_list("data.passkey_lengths", p->lengths, t->len, PASSKEY_MAX_LENGTHS);
        if (t->n_len < 0) return -1;
    }
    for (int i = 0; i < t->n_len; i++) {
        if (t->len[i] < need)
            return gma_errorf("key data.passkey_lengths: length %d is too short for %d digits (at least %d)", t->len[i], k, need);
        if (N > 0 && t->len[i] > N)
            return gma_errorf("key data.passkey_lengths: length %d is longer than the window train.seq_len = %d", t->len[i], N);
    }
    if (N > 0 && N < need)
        return gma_errorf("key train.seq_len: %d is too short for a passkey of data.passkey_digits %d (at least %d)", N, k, need);
    t->vocab = p->vocab;
    t->digits = k;
    t->random_filler = p->filler == PASSKEY_FILLER_RANDOM;
    t->depth_min = p->depth_min;
    t->depth_max = p->depth_max;
    t->seed = seed;
    Rng r;
    rng_seed2(&r, t->seed ^ 0x504b4559ULL, 0x53454e54ULL);
    for (int i = 0; i < PASSKEY_SENTENCE; i++)
        t->sentence[i] = PASSKEY_FILLER0 + (int32_t)rng_below(&r, (uint64_t)(p->vocab - PASSKEY_FILLER0));
    return 0;
}

int passkey_example(const PasskeyTask *t, int split, uint64_t index, int n, int N, int32_t *tok, int32_t *tgt) {
    Rng r;
    rng_seed2(&r, t->seed ^ 0x504b4559ULL, ((uint64_t)split << 56) ^ ((uint64_t)n << 32) ^ index);
    int k = t->digits, span = n - 2 * k - 2, nf = t->vocab - PASSKEY_FILLER0;
    int32_t digit[PASSKEY_MAX_DIGITS];
    for (int i = 0; i < k; i++) digit[i] = PASSKEY_DIGIT0 + (int32_t)rng_below(&r, 10);
    double u = t->depth_min + (t->depth_max - t->depth_min) * rng_uniform(&r);
    int s = (int)floor(u * span + 0.5);
    s = GMA_MAX(0, GMA_MIN(s, span));
    for (int i = 0; i < N; i++) tok[i] = PASSKEY_PAD, tgt[i] = -1;
    for (int i = 0; i < n - k - 1; i++)
        tok[i] = t->random_filler ? PASSKEY_FILLER0 + (int32_t)rng_below(&r, (uint64_t)nf) : t->sentence[i % PASSKEY_SENTENCE];
    tok[s] = PASSKEY_KEY;
    for (int i = 0; i < k; i++) tok[s + 1 + i] = digit[i];
    int a = n - k - 1; /* the question: its mark, then the digits, each the target of the token before */
    tok[a] = PASSKEY_ASK;
    for (int i = 0; i < k; i++) {
        tok[a + 1 + i] = digit[i];
        tgt[a + i] = digit[i];
    }
    return s;
}

int passkey_train_len(const PasskeyTask *t, uint64_t batch, int N) {
    return t->n_len ? t->len[batch % (uint64_t)t->n_len] : N;
}

int passkey_depth_bucket(const PasskeyTask *t, const int32_t *tok, int N) {
    int s = -1, a = -1;
    for (int i = 0; i < N; i++) {
        if (tok[i] == PASSKEY_KEY && s < 0) s = i;
        if (tok[i] == PASSKEY_ASK) a = i;
    }
    int span = a - t->digits - 1; /* n - 2k - 2 with n = a + k + 1 */
    if (s < 0 || a < 0 || span < 0) return -1;
    double depth = span > 0 ? (double)s / span : 0;
    return GMA_MIN((int)(depth * PASSKEY_DEPTH_BUCKETS), PASSKEY_DEPTH_BUCKETS - 1);
}

/* ---- the source "passkey" (lm_source.h) ---- */

static int passkey_check(const LmSpec *s) {
    PasskeyTask t;
    return passkey_init(&t, s->section, s->seed, s->window);
}

/* the training lengths within the window when train is opened; the window (gmaeval's
 * --seq-len for test) holds one example */
static int passkey_open(LmData *d, const LmSpec *s, unsigned mask, int required) {
    const PasskeyCfg *p = s->section;
    PasskeyTask *t = d->task = xcalloc(1, sizeof *t);
    if (passkey_init(t, p, s->seed, (mask & 1u) ? s->window : 0) != 0) return -1;
    if (s->window < passkey_min_len(t->digits))
        return gma_errorf("key train.seq_len: a window of %d tokens is too short for a passkey of data.passkey_digits %d "
                          "(at least %d; gmaeval --seq-len N)", s->window, t->digits, passkey_min_len(t->digits));
    lm_generated(d, (uint32_t)t->vocab, p->valid, p->test);
    return 0;
}

/* one length per batch, cycling over data.passkey_lengths */
static void passkey_train(const LmData *d, Rng *rng, uint64_t batch, uint64_t index, int N, int32_t *tok, int32_t *tgt) {
    if (tok) passkey_example(d->task, SPLIT_TRAIN, index, passkey_train_len(d->task, batch, N), N, tok, tgt);
}

static void passkey_eval(const LmData *d, int split, uint64_t w, int N, int32_t *tok, int32_t *tgt) {
    passkey_example(d->task, split, w, N, N, tok, tgt);
}

const LmSource passkey_source = {"passkey", "passkey", 1, 0, &passkey_cfg_section, passkey_check, passkey_open, NULL,
                                 passkey_train, lm_generated_count, passkey_eval};
