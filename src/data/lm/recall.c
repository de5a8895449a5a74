/* recall.c: the multi-query associative recall generator (see recall.h) and the data source
 * "recall" that serves it (lm_source.h; its keys data.recall_*). */
#include "data/lm/recall.h"

#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "data/lm/lm_source.h"

int recall_init(RecallTask *t, int vocab, int pairs, int queries, int seq_len, uint64_t seed) {
    int K = (vocab - 2) / 2;
    if (pairs > K) return gma_errorf("key data.recall_pairs: %d pairs need %d distinct keys, vocabulary %d has %d", pairs, pairs, vocab, K);
    int fit = (seq_len - 2 * pairs - 1) / 2;
    if (fit < 1) return gma_errorf("key train.seq_len: %d leaves no room for a query after %d pairs", seq_len, pairs);
    if (queries == 0) queries = GMA_MIN(pairs, fit);
    if (queries > fit) return gma_errorf("key data.recall_queries: %d queries do not fit in %d tokens", queries, seq_len);
    t->vocab = vocab;
    t->pairs = pairs;
    t->queries = queries;
    t->seq_len = seq_len;
    t->seed = seed;
    return 0;
}

void recall_example(const RecallTask *t, int split, uint64_t index, int32_t *tok, int32_t *tgt) {
    Rng r;
    rng_seed2(&r, t->seed ^ 0x5245434c4cULL, ((uint64_t)split << 48) ^ index);
    int K = (t->vocab - 2) / 2, NV = t->vocab - 2 - K, N = t->seq_len, P = t->pairs;
    int keys[4096], vals[4096], perm[4096];
    /* distinct keys: partial Fisher-Yates over [0, K) using a sparse swap table */
    int pool_n = K;
    static _Thread_local int pool[1 << 16];
    int use_pool = K <= (1 << 16);
    if (use_pool)
        for (int i = 0; i < K; i++) pool[i] = i;
    for (int i = 0; i < P; i++) {
        if (use_pool) {
            int j = i + (int)rng_below(&r, (uint64_t)(pool_n - i));
            int tmp = pool[i];
            pool[i] = pool[j];
            pool[j] = tmp;
            keys[i] = pool[i];
        } else { /* rejection for huge vocabularies */
            int ok;
            do {
                keys[i] = (int)rng_below(&r, (uint64_t)K);
                ok = 1;
                for (int j = 0; j < i; j++) ok &= keys[j] != keys[i];
            } while (!ok);
        }
        vals[i] = (int)rng_below(&r, (uint64_t)NV);
    }
    for (int i = 0; i < N; i++) tok[i] = 0, tgt[i] = -1;
    int pos = 0;
    for (int i = 0; i < P; i++) {
        tok[pos++] = 2 + keys[i];
        tok[pos++] = 2 + K + vals[i];
    }
    tok[pos++] = 1;
    for (int i = 0; i < P; i++) perm[i] = i;
    for (int i = 0; i < t->queries; i++) {
        int j = i + (int)rng_below(&r, (uint64_t)(P - i));
        int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
        int q = perm[i];
        tok[pos] = 2 + keys[q];
        tgt[pos] = 2 + K + vals[q];
        pos++;
        tok[pos++] = 2 + K + vals[q];
    }
    /* next-token targets elsewhere are not scored: the task is the recall */
}

/* the value of the earliest pair whose count is largest among counts cnt[] (by pair) */
static int32_t most_frequent(const int32_t *tok, const int *cnt, int P) {
    int best = 0;
    for (int i = 1; i < P; i++)
        if (cnt[i] > cnt[best]) best = i;
    return tok[2 * best + 1];
}

void recall_baselines(const RecallTask *t, const int32_t *tok, int32_t *freq, int32_t *unans) {
    int P = t->pairs, cnt[4096], left[4096];
    /* cnt[i]: how often pair i's value occurs among the pairs; left[i]: of those, how many
     * the answers so far have not used up */
    for (int i = 0; i < P; i++) {
        cnt[i] = 0;
        for (int j = 0; j < P; j++) cnt[i] += tok[2 * j + 1] == tok[2 * i + 1];
        left[i] = cnt[i];
    }
    int32_t top = most_frequent(tok, cnt, P);
    for (int q = 0; q < t->queries; q++) {
        freq[q] = top;
        unans[q] = most_frequent(tok, left, P);
        int32_t answer = tok[recall_query_pos(t, q) + 1];
        for (int i = 0; i < P; i++)
            if (tok[2 * i + 1] == answer && left[i] > 0) left[i]--;
    }
}

/* ---- the source "recall" (lm_source.h): its keys data.recall_* and its reader ---- */

typedef struct RecallCfg {
    int vocab, pairs, queries, valid, test;
} RecallCfg;

#define RO(f) offsetof(RecallCfg, f)
static const CfgKey g_recall_keys[] = {
    {"recall_vocab", CFGT_INT, RO(vocab), 0, "64", 8, 1000000, NULL, "Recall task: vocabulary (half keys, half values, minus 2 specials)."},
    {"recall_pairs", CFGT_INT, RO(pairs), 0, "8", 1, 4096, NULL, "Recall task: key-value pairs per sequence."},
    {"recall_queries", CFGT_INT, RO(queries), 0, "0", 0, 1000000, NULL, "Recall task: queried keys (0 = as many as fit)."},
    {"recall_valid", CFGT_INT, RO(valid), 0, "256", 1, 100000000, NULL, "Recall task: validation sequences."},
    {"recall_test", CFGT_INT, RO(test), 0, "256", 1, 100000000, NULL, "Recall task: test sequences."},
};
#undef RO
static const CfgSection recall_cfg_section = {"recall", sizeof(RecallCfg), g_recall_keys, CFG_N(g_recall_keys), NULL, "data"};

static int recall_check(const LmSpec *s) {
    const RecallCfg *rc = s->section;
    int need = 2 * rc->pairs + 2;
    if (s->window < need)
        return gma_errorf("key train.seq_len: %d is too short for %d recall pairs (need at least %d)", s->window, rc->pairs,
                          need);
    if (rc->vocab < 2 * rc->pairs + 2)
        return gma_errorf("key data.recall_vocab: %d is too small for %d distinct keys", rc->vocab, rc->pairs);
    return 0;
}

static int recall_open(LmData *d, const LmSpec *s, unsigned mask, int required) {
    const RecallCfg *rc = s->section;
    RecallTask *t = d->task = xcalloc(1, sizeof *t);
    if (recall_init(t, rc->vocab, rc->pairs, rc->queries, s->window, s->seed) != 0) return -1;
    lm_generated(d, (uint32_t)rc->vocab, rc->valid, rc->test);
    return 0;
}

static void recall_train(const LmData *d, Rng *rng, uint64_t batch, uint64_t index, int N, int32_t *tok, int32_t *tgt) {
    if (tok) recall_example(d->task, SPLIT_TRAIN, index, tok, tgt);
}

static void recall_eval(const LmData *d, int split, uint64_t w, int N, int32_t *tok, int32_t *tgt) {
    recall_example(d->task, split, w, tok, tgt);
}

const LmSource recall_source = {"recall", "recall", 1, 0, &recall_cfg_section, recall_check, recall_open, NULL,
                                recall_train, lm_generated_count, recall_eval};
