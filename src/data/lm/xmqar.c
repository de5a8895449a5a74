/* xmqar.c: the cross-sequence MQAR generator (xmqar.h) and the data source "xmqar" that
 * serves it (lm_source.h; its keys data.xmqar_*). */
#include "data/lm/xmqar.h"

#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "data/lm/lm_source.h"

#define XMQAR_MAX_VOCAB 65536

#define O(f) offsetof(XmqarCfg, f)
static const CfgKey g_keys[] = {
    {"xmqar_vocab", CFGT_INT, O(vocab), 0, "64", 8, XMQAR_MAX_VOCAB, NULL,
     "Cross-sequence MQAR: vocabulary V, even: keys from [1, V/2), values from [V/2, V) (docs/cross.md)."},
    {"xmqar_pairs", CFGT_INT, O(pairs), 0, "8", 1, 16384, NULL,
     "Cross-sequence MQAR: key-value pairs in the context sequence (2 x pairs <= data.xmqar_ctx)."},
    {"xmqar_ctx", CFGT_INT, O(ctx), 0, "16", 2, 1 << 24, NULL,
     "Cross-sequence MQAR: context length M, the first M positions of the window (docs/cross.md)."},
    {"xmqar_valid", CFGT_INT, O(valid), 0, "256", 1, 100000000, NULL, "Cross-sequence MQAR: validation examples."},
    {"xmqar_test", CFGT_INT, O(test), 0, "1000", 1, 100000000, NULL, "Cross-sequence MQAR: test examples."},
};
#undef O

const CfgSection xmqar_cfg_section = {"xmqar", sizeof(XmqarCfg), g_keys, CFG_N(g_keys), NULL, "data"};
const XmqarCfg *xmqar_cfg(const Config *c) { return cfg_section_of(c, &xmqar_cfg_section); }

int xmqar_init(XmqarTask *t, const XmqarCfg *x, uint64_t seed, int T) {
    memset(t, 0, sizeof *t);
    if (x->vocab % 2)
        return gma_errorf("key data.xmqar_vocab: %d must be even (keys the lower half, values the upper)", x->vocab);
    if (x->pairs >= x->vocab / 2)
        return gma_errorf("key data.xmqar_pairs: %d distinct keys do not fit [1, %d) of data.xmqar_vocab %d", x->pairs,
                          x->vocab / 2, x->vocab);
    if (2 * x->pairs > x->ctx)
        return gma_errorf("key data.xmqar_pairs: %d pairs take %d positions, more than data.xmqar_ctx %d", x->pairs,
                          2 * x->pairs, x->ctx);
    if (x->ctx >= T)
        return gma_errorf("key data.xmqar_ctx: a context of %d positions leaves no query in the window of %d "
                          "(train.seq_len)", x->ctx, T);
    t->vocab = x->vocab, t->pairs = x->pairs, t->ctx = x->ctx, t->T = T;
    t->seed = seed;
    return 0;
}

/* a random permutation of 0..n-1 into p */
static void permute(Rng *r, int *p, int n) {
    for (int i = 0; i < n; i++) p[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(r, (uint64_t)i + 1), s = p[i];
        p[i] = p[j], p[j] = s;
    }
}

/* k distinct values of [lo, lo + n) into out (a partial shuffle of pool [n]) */
static void draw_distinct(Rng *r, int *pool, int lo, int n, int k, int *out) {
    for (int i = 0; i < n; i++) pool[i] = i;
    for (int i = 0; i < k; i++) {
        int j = i + (int)rng_below(r, (uint64_t)(n - i)), s = pool[i];
        pool[i] = pool[j], pool[j] = s;
        out[i] = lo + pool[i];
    }
}

void xmqar_example(const XmqarTask *t, int split, uint64_t index, int32_t *tok, int32_t *tgt) {
    int P = t->pairs, V = t->vocab, half = V / 2, M = t->ctx, T = t->T;
    Rng r;
    rng_seed2(&r, t->seed ^ 0x584d514152ULL, ((uint64_t)split << 56) ^ index);
    int *keys = xmalloc(sizeof(int) * (size_t)(4 * P + half));
    int *vals = keys + P, *perm = vals + P, *pool = perm + 2 * P;
    draw_distinct(&r, pool, 1, half - 1, P, keys); /* 0 is never a key */
    draw_distinct(&r, pool, half, V - half, P, vals);
    for (int i = 0; i < T; i++) tok[i] = 0, tgt[i] = -1;
    for (int i = 0; i < P; i++) tok[2 * i] = keys[i], tok[2 * i + 1] = vals[i];
    for (int j = 0; j < T - M; j++) {
        if (j % P == 0) permute(&r, perm, P);
        int q = perm[j % P];
        tok[M + j] = keys[q];
        tgt[M + j] = vals[q];
    }
    free(keys);
}

/* ---- the source "xmqar" (lm_source.h): examples of the window (gmaeval evaluates at the
 * training window, or at --ctx-len's) ---- */

static int xmqar_check(const LmSpec *s) {
    XmqarTask t;
    return xmqar_init(&t, s->section, s->seed, s->window);
}

static int xmqar_open(LmData *d, const LmSpec *s, unsigned mask, int required) {
    const XmqarCfg *x = s->section;
    XmqarTask *t = d->task = xcalloc(1, sizeof *t);
    if (xmqar_init(t, x, s->seed, s->window) != 0) return -1;
    lm_generated(d, (uint32_t)x->vocab, x->valid, x->test);
    return 0;
}

static void xmqar_train(const LmData *d, Rng *rng, uint64_t batch, uint64_t index, int N, int32_t *tok, int32_t *tgt) {
    if (tok) xmqar_example(d->task, SPLIT_TRAIN, index, tok, tgt);
}

static void xmqar_eval(const LmData *d, int split, uint64_t w, int N, int32_t *tok, int32_t *tgt) {
    const XmqarTask *t = d->task;
    if (N == t->T) xmqar_example(t, split, w, tok, tgt);
}

const LmSource xmqar_source = {"xmqar", "xmqar", 1, 0, &xmqar_cfg_section, xmqar_check, xmqar_open, NULL,
                               xmqar_train, lm_generated_count, xmqar_eval};
