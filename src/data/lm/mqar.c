/* mqar.c: the Zoology multi-query associative recall generator (see mqar.h). */
#include "data/lm/mqar.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"

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
