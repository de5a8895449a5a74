/* mqar.c: the Zoology multi-query associative recall generator (see mqar.h) and the data
 * source "mqar" that serves it (lm_source.h; its keys data.mqar_*). */
#include "data/lm/mqar.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "data/lm/lm_source.h"

#define MQAR_MAX_VOCAB (1 << 16)
#define MQAR_MAX_LEN 16384

int mqar_parse_list(const char *key, const char *s, int *out, int max) {
    int n = 0;
    const char *p = s;
    if (!s || !*s) return gma_errorf("key %s: empty (a comma-separated list of positive integers)", key);
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 1 || v > MQAR_MAX_LEN)
            return gma_errorf("key %s: \"%s\" is not a comma-separated list of integers in [1, %d]", key, s, MQAR_MAX_LEN);
        if (n == max) return gma_errorf("key %s: more than %d values in \"%s\"", key, max, s);
        out[n++] = (int)v;
        p = end;
        while (*p == ' ') p++;
        if (*p == ',') p++;
        else if (*p) return gma_errorf("key %s: \"%s\" is not a comma-separated list of integers", key, s);
    }
    return n;
}

int mqar_init(MqarTask *t, int vocab, double power_a, int filler, uint64_t seed) {
    memset(t, 0, sizeof *t);
    if (vocab < 8 || vocab % 2 || vocab > MQAR_MAX_VOCAB)
        return gma_errorf("key data.mqar_vocab: %d must be even, in [8, %d] (keys the lower half, values the upper)", vocab,
                          MQAR_MAX_VOCAB);
    if (!(power_a > 0) || power_a > 1)
        return gma_errorf("key data.mqar_power_a: %g must be in (0, 1] (1 = uniform gaps)", power_a);
    t->vocab = vocab;
    t->power_a = power_a;
    t->zero_filler = filler == MQAR_FILLER_ZERO;
    t->seed = seed;
    return 0;
}

int mqar_set_split(MqarTask *t, int split, const char *len_key, const char *lens, const char *pairs_key,
                   const char *pairs, int window) {
    int L[MQAR_MAX_ENTRIES], P[MQAR_MAX_ENTRIES];
    int nl = mqar_parse_list(len_key, lens, L, MQAR_MAX_ENTRIES);
    if (nl < 0) return -1;
    int np = mqar_parse_list(pairs_key, pairs, P, MQAR_MAX_ENTRIES);
    if (np < 0) return -1;
    if (np != 1 && np != nl)
        return gma_errorf("key %s: %d values for the %d lengths of %s (give one for all or one per length)", pairs_key, np,
                          nl, len_key);
    for (int i = 0; i < nl; i++) {
        int n = L[i], p = P[np == 1 ? 0 : i];
        if (n % 2) return gma_errorf("key %s: length %d is odd (queries sit at even offsets after the pairs)", len_key, n);
        if (n >= t->vocab)
            return gma_errorf("key %s: length %d is not below data.mqar_vocab %d (as Zoology asserts)", len_key, n, t->vocab);
        if (4 * p > n)
            return gma_errorf("key %s: %d pairs do not fit length %d (4 x pairs <= length: the pairs, then a slot for "
                              "every query)", pairs_key, p, n);
        if (p >= t->vocab / 2)
            return gma_errorf("key %s: %d pairs need %d distinct keys; data.mqar_vocab %d has %d", pairs_key, p, p,
                              t->vocab, t->vocab / 2 - 1);
        if (window > 0 && n > window)
            return gma_errorf("key %s: length %d is longer than the window train.seq_len = %d", len_key, n, window);
        t->len[split][i] = n;
        t->pairs[split][i] = p;
    }
    t->n[split] = nl;
    return 0;
}

void mqar_power_law(double a, int space, double *p) {
    double sum = 0;
    for (int g = 0; g < space; g++) sum += p[g] = a * pow(g + 1.0, a - 1.0);
    for (int g = 0; g < space; g++) p[g] /= sum;
}

/* k distinct draws from [lo, lo + n) by a partial Fisher-Yates over a scratch pool */
static void draw_distinct(Rng *r, int lo, int n, int k, int *out) {
    static _Thread_local int pool[MQAR_MAX_VOCAB / 2];
    for (int i = 0; i < n; i++) pool[i] = i;
    for (int i = 0; i < k; i++) {
        int j = i + (int)rng_below(r, (uint64_t)(n - i));
        int tmp = pool[i];
        pool[i] = pool[j];
        pool[j] = tmp;
        out[i] = lo + pool[i];
    }
}

void mqar_example(const MqarTask *t, int split, int entry, uint64_t index, int N, int32_t *tok, int32_t *tgt) {
    static _Thread_local double w[MQAR_MAX_LEN / 2];
    Rng r;
    rng_seed2(&r, t->seed ^ 0x4d514152ULL, ((uint64_t)split << 56) ^ ((uint64_t)entry << 48) ^ index);
    int n = t->len[split][entry], P = t->pairs[split][entry], V = t->vocab, half = V / 2;
    int keys[MQAR_MAX_LEN / 4], vals[MQAR_MAX_LEN / 4];
    draw_distinct(&r, 1, half - 1, P, keys);  /* [1, V/2): 0 is never a key */
    draw_distinct(&r, half, V - half, P, vals); /* [V/2, V) */
    for (int i = 0; i < N; i++) tok[i] = 0, tgt[i] = -1;
    for (int i = 0; i < P; i++) tok[2 * i] = keys[i], tok[2 * i + 1] = vals[i];
    /* the gap slots: P draws without replacement, each by the weights of the slots left */
    int C = 2 * P, space = (n - C) / 2;
    double left = 0;
    for (int g = 0; g < space; g++) left += w[g] = t->power_a * pow(g + 1.0, t->power_a - 1.0);
    uint8_t query[MQAR_MAX_LEN];
    memset(query, 0, (size_t)n);
    for (int i = 0; i < P; i++) {
        double u = rng_uniform(&r) * left, acc = 0;
        int g = -1, last = -1;
        for (int s = 0; s < space; s++) {
            if (w[s] == 0) continue;
            last = s;
            acc += w[s];
            if (u < acc) {
                g = s;
                break;
            }
        }
        if (g < 0) g = last; /* rounding at the top end */
        left -= w[g];
        w[g] = 0;
        int pos = C + 2 * g;
        tok[pos] = keys[i];
        tgt[pos] = vals[i];
        query[pos] = 1;
    }
    for (int i = C; i < n; i++)
        if (!query[i]) tok[i] = t->zero_filler ? 0 : (int32_t)rng_below(&r, (uint64_t)V);
}

int mqar_train_entry(const MqarTask *t, uint64_t batch) { return (int)(batch % (uint64_t)t->n[0]); }

int mqar_eval_entry(const MqarTask *t, int split, uint64_t index, int N) {
    int idx[MQAR_MAX_ENTRIES], k = 0;
    for (int e = 0; e < t->n[split]; e++)
        if (split == 2 && t->len[split][e] == N) idx[k++] = e;
    if (k == 0) /* no test entry of length N: all that fit, cycling */
        for (int e = 0; e < t->n[split]; e++)
            if (t->len[split][e] <= N) idx[k++] = e;
    return k ? idx[index % (uint64_t)k] : -1;
}

/* ---- the source "mqar" (lm_source.h): its keys data.mqar_* and its reader ---- */

typedef struct MqarCfg {
    int vocab, valid, test, train;
    double power_a;
    int filler; /* MQAR_FILLER_RANDOM | MQAR_FILLER_ZERO */
    char lengths[128], pairs[128], test_lengths[128], test_pairs[128];
} MqarCfg;

#define MO(f) offsetof(MqarCfg, f)
#define MS(f) sizeof(((MqarCfg *)0)->f)
static const CfgKey g_mqar_keys[] = {
    {"mqar_vocab", CFGT_INT, MO(vocab), 0, "8192", 8, 65536, NULL,
     "MQAR: vocabulary V, even: keys from [1, V/2), values from [V/2, V) (docs/mqar.md)."},
    {"mqar_lengths", CFGT_STR, MO(lengths), MS(lengths), "64", 0, 0, NULL,
     "MQAR: training lengths, comma-separated, one per batch in turn (docs/mqar.md)."},
    {"mqar_pairs", CFGT_STR, MO(pairs), MS(pairs), "4", 0, 0, NULL,
     "MQAR: key-value pairs of each training length (one value for all, or one per length; 4 x pairs <= length)."},
    {"mqar_test_lengths", CFGT_STR, MO(test_lengths), MS(test_lengths), "64", 0, 0, NULL,
     "MQAR: test lengths, comma-separated (gmaeval --data test --seq-len N scores the test length N alone)."},
    {"mqar_test_pairs", CFGT_STR, MO(test_pairs), MS(test_pairs), "4", 0, 0, NULL,
     "MQAR: key-value pairs of each test length (one for all, or one per length)."},
    {"mqar_power_a", CFGT_REAL, MO(power_a), 0, "0.01", 0, 1, NULL,
     "MQAR: query gaps' power law p(g) proportional to a g^(a-1) (1 = uniform)."},
    {"mqar_filler", CFGT_ENUM, MO(filler), 0, "random", 0, 0, "random|zero",
     "MQAR: positions after the pairs that hold no query: random (Zoology's) or 0."},
    {"mqar_valid", CFGT_INT, MO(valid), 0, "256", 1, 100000000, NULL, "MQAR: validation examples."},
    {"mqar_train", CFGT_INT, MO(train), 0, "0", 0, 1000000000, NULL,
     "MQAR: training examples of each training length: 0 a fresh example for every draw; N a fixed set of N, "
     "drawn in the same order every epoch of N, as Zoology's training data (docs/mqar.md)."},
    {"mqar_test", CFGT_INT, MO(test), 0, "1000", 1, 100000000, NULL, "MQAR: test examples per evaluation."},
};
#undef MO
#undef MS
static const CfgSection mqar_cfg_section = {"mqar", sizeof(MqarCfg), g_mqar_keys, CFG_N(g_mqar_keys), NULL, "data"};

/* train and valid hold the training lengths (each within the window when train is opened;
 * gmaeval opens one split at its own window), test the test lengths, of which one at least
 * must fit the window it is evaluated at */
static int mqar_open(LmData *d, const LmSpec *s, unsigned mask, int required) {
    const MqarCfg *g = s->section;
    MqarTask *t = d->task = xcalloc(1, sizeof *t);
    if (mqar_init(t, g->vocab, g->power_a, g->filler, s->seed) != 0 ||
        mqar_set_split(t, SPLIT_TRAIN, "data.mqar_lengths", g->lengths, "data.mqar_pairs", g->pairs,
                       (mask & 1u) ? s->window : 0) != 0 ||
        mqar_set_split(t, SPLIT_VALID, "data.mqar_lengths", g->lengths, "data.mqar_pairs", g->pairs, 0) != 0 ||
        mqar_set_split(t, SPLIT_TEST, "data.mqar_test_lengths", g->test_lengths, "data.mqar_test_pairs",
                       g->test_pairs, 0) != 0)
        return -1;
    if ((mask & 4u) && mqar_eval_entry(t, SPLIT_TEST, 0, s->window) < 0)
        return gma_errorf("key data.mqar_test_lengths: no test length in \"%s\" fits the window of %d tokens "
                          "(gmaeval --seq-len N)", g->test_lengths, s->window);
    t->train_n = (uint64_t)g->train;
    lm_generated(d, (uint32_t)g->vocab, g->valid, g->test);
    return 0;
}

/* one length per batch, cycling over data.mqar_lengths; with data.mqar_train N the draws
 * walk N examples in order, again every N (Zoology's fixed training set) */
static void mqar_train(const LmData *d, Rng *rng, uint64_t batch, uint64_t index, int N, int32_t *tok, int32_t *tgt) {
    const MqarTask *t = d->task;
    if (tok) mqar_example(t, SPLIT_TRAIN, mqar_train_entry(t, batch), t->train_n ? index % t->train_n : index, N, tok, tgt);
}

static void mqar_eval(const LmData *d, int split, uint64_t w, int N, int32_t *tok, int32_t *tgt) {
    int e = mqar_eval_entry(d->task, split, w, N);
    if (e >= 0) mqar_example(d->task, split, e, w, N, tok, tgt);
}

const LmSource mqar_source = {"mqar", "mqar", 1, 0, &mqar_cfg_section, NULL, mqar_open, NULL,
                              mqar_train, lm_generated_count, mqar_eval};
