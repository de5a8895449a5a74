/* lmdata.c: training and evaluation batches from the recall task, MQAR or token shards. */
#include "data/lm/lmdata.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "data/lm/lmmeta.h"
#include "data/lm/manifest.h"

static const char *g_split_names[3] = {"train", "valid", "test"};

const char *lmdata_split_name(int s) { return s >= 0 && s < 3 ? g_split_names[s] : "?"; }

int lmdata_split_index(const char *name) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, g_split_names[i])) return i;
    if (!strcmp(name, "val") || !strcmp(name, "validation")) return SPLIT_VALID;
    return -1;
}

static void read_meta(LmData *d, const char *dir) {
    char path[2100];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    char *text = gma_read_file(path, NULL);
    if (!text) {
        gma_error_clear();
        return;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    const cJSON *splits = cJSON_GetObjectItemCaseSensitive(j, "splits");
    for (int s = 0; s < 3 && splits; s++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(splits, g_split_names[s]);
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(e, "words");
        if (cJSON_IsNumber(w)) d->words[s] = w->valuedouble;
    }
    cJSON_Delete(j);
}

Tokenizer *lmdata_tokenizer(const char *dir) {
    char path[2100];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    return lmmeta_tokenizer(path);
}

/* Ids go to the model as int32 and index a vocabulary of at most 2^24 (model.vocab_size):
 * a larger stated vocabulary could carry ids that turn negative. */
static int shard_vocab_too_big(const TokenShard *s) {
    if (s->vocab <= (1u << 24)) return 0;
    return gma_errorf("%s: vocabulary %u at offset 24 is larger than %u (the range of model.vocab_size)", s->path, s->vocab,
                      1u << 24);
}

/* MQAR: train and valid hold the training lengths (each within the window train.seq_len
 * when train is opened; gmaeval opens one split at its own window),
 * test the test lengths, of which one at least must fit the window it is evaluated at */
static int mqar_open(LmData *d, const Config *c, unsigned mask) {
    const DataCfg *g = &c->data;
    MqarTask *t = &d->mqar;
    if (mqar_init(t, g->mqar_vocab, g->mqar_power_a, g->mqar_filler, (uint64_t)c->seed) != 0 ||
        mqar_set_split(t, SPLIT_TRAIN, "data.mqar_lengths", g->mqar_lengths, "data.mqar_pairs", g->mqar_pairs,
                       (mask & 1u) ? c->train.seq_len : 0) != 0 ||
        mqar_set_split(t, SPLIT_VALID, "data.mqar_lengths", g->mqar_lengths, "data.mqar_pairs", g->mqar_pairs, 0) != 0 ||
        mqar_set_split(t, SPLIT_TEST, "data.mqar_test_lengths", g->mqar_test_lengths, "data.mqar_test_pairs",
                       g->mqar_test_pairs, 0) != 0)
        return -1;
    if ((mask & 4u) && mqar_eval_entry(t, SPLIT_TEST, 0, c->train.seq_len) < 0)
        return gma_errorf("key data.mqar_test_lengths: no test length in \"%s\" fits the window of %d tokens "
                          "(gmaeval --seq-len N)", g->mqar_test_lengths, c->train.seq_len);
    d->is_mqar = 1;
    d->vocab = (uint32_t)g->mqar_vocab;
    d->n_recall[SPLIT_TRAIN] = 0; /* unbounded stream */
    d->n_recall[SPLIT_VALID] = g->mqar_valid;
    d->n_recall[SPLIT_TEST] = g->mqar_test;
    d->have[0] = d->have[1] = d->have[2] = 1;
    return 0;
}

int lmdata_open(LmData *d, const Config *c) { return lmdata_open_splits(d, c, 7, SPLIT_TRAIN); }

int lmdata_check_train_window(const LmData *d, const Config *c) {
    uint64_t need = (uint64_t)c->train.seq_len + 1, have = d->shard[SPLIT_TRAIN].count;
    if (d->is_recall || d->is_mqar || have >= need) return 0; /* a window: seq_len inputs and the token after them */
    return gma_errorf("%s/train.bin: %llu tokens; one training window of train.seq_len %d needs %llu (a larger train "
                      "split, or a smaller train.seq_len)", c->data.path, (unsigned long long)have, c->train.seq_len,
                      (unsigned long long)need);
}

int lmdata_open_splits(LmData *d, const Config *c, unsigned mask, int required) {
    memset(d, 0, sizeof *d);
    d->eval_stride = c->data.eval_stride;
    if (!strcmp(c->data.source, "recall")) {
        d->is_recall = 1;
        if (recall_init(&d->recall, c->data.recall_vocab, c->data.recall_pairs, c->data.recall_queries, c->train.seq_len,
                        (uint64_t)c->seed) != 0)
            return -1;
        d->vocab = (uint32_t)c->data.recall_vocab;
        d->n_recall[SPLIT_TRAIN] = 0; /* unbounded stream */
        d->n_recall[SPLIT_VALID] = c->data.recall_valid;
        d->n_recall[SPLIT_TEST] = c->data.recall_test;
        d->have[0] = d->have[1] = d->have[2] = 1;
        return 0;
    }
    if (!strcmp(c->data.source, "mqar")) return mqar_open(d, c, mask);
    if (manifest_check(c->data.path, mask) != 0) return -1; /* a set written as a whole, or refused */
    for (int s = 0; s < 3; s++) {
        char path[2100];
        snprintf(path, sizeof path, "%s/%s.bin", c->data.path, g_split_names[s]);
        if (!(mask & (1u << s))) continue;
        if (!gma_path_exists(path)) {
            if (s == required)
                return gma_errorf("%s: missing (key data.path names a directory with %s.bin)", path, g_split_names[s]);
            continue;
        }
        if (shard_open(&d->shard[s], path, 1) != 0) {
            lmdata_close(d);
            return -1;
        }
        d->have[s] = 1;
        if (d->shard[s].count < 2) {
            lmdata_close(d);
            return gma_errorf("%s: only %llu tokens", path, (unsigned long long)d->shard[s].count);
        }
        if (shard_vocab_too_big(&d->shard[s])) {
            lmdata_close(d);
            return -1;
        }
        d->vocab = GMA_MAX(d->vocab, d->shard[s].vocab);
    }
    read_meta(d, c->data.path);
    return 0;
}

int lmdata_open_file(LmData *d, const char *path) {
    memset(d, 0, sizeof *d);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return gma_errorf("%s: a directory; --data takes a token shard (FILE.bin) or a split name (train, valid or test; "
                          "the data directory with --data-path %s)", path, path);
    if (shard_open(&d->shard[SPLIT_TEST], path, 1) != 0) return -1;
    d->have[SPLIT_TEST] = 1;
    if (d->shard[SPLIT_TEST].count < 2) { /* evaluation scores token i+1 from token i: it needs two */
        uint64_t n = d->shard[SPLIT_TEST].count;
        lmdata_close(d);
        return gma_errorf("%s: only %llu tokens at offset %d (evaluation needs at least 2)", path, (unsigned long long)n,
                          SHARD_HEADER_BYTES);
    }
    if (shard_vocab_too_big(&d->shard[SPLIT_TEST])) {
        lmdata_close(d);
        return -1;
    }
    d->vocab = d->shard[SPLIT_TEST].vocab;
    return 0;
}

void lmdata_close(LmData *d) {
    for (int s = 0; s < 3; s++)
        if (d->have[s] && !d->is_recall && !d->is_mqar) shard_close(&d->shard[s]);
    memset(d, 0, sizeof *d);
}

void lmdata_train_batch(const LmData *d, Rng *rng, uint64_t batch_index, int B, int N, int32_t *tok, int32_t *tgt) {
    lmdata_train_batch_part(d, rng, batch_index, B, 0, B, N, tok, tgt);
}

void lmdata_train_batch_part(const LmData *d, Rng *rng, uint64_t batch_index, int B_global, int first, int B, int N,
                             int32_t *tok, int32_t *tgt) {
    if (d->is_recall) {
        for (int b = 0; b < B; b++)
            recall_example(&d->recall, SPLIT_TRAIN, batch_index * B_global + first + b, tok + (size_t)b * N,
                           tgt + (size_t)b * N);
        return;
    }
    if (d->is_mqar) { /* one length per batch, cycling over data.mqar_lengths */
        int e = mqar_train_entry(&d->mqar, batch_index);
        for (int b = 0; b < B; b++)
            mqar_example(&d->mqar, SPLIT_TRAIN, e, batch_index * B_global + first + b, N, tok + (size_t)b * N,
                         tgt + (size_t)b * N);
        return;
    }
    const TokenShard *s = &d->shard[SPLIT_TRAIN];
    for (int g = 0; g < B_global; g++) {
        uint64_t span = s->count > (uint64_t)N + 1 ? s->count - N - 1 : 0;
        uint64_t start = span ? rng_below(rng, span + 1) : 0; /* drawn for every row of the global batch */
        int b = g - first;
        if (b < 0 || b >= B) continue;
        for (int i = 0; i < N; i++) {
            uint64_t p = start + i;
            int ok = p + 1 < s->count;
            tok[(size_t)b * N + i] = ok ? (int32_t)shard_get(s, p) : 0;
            tgt[(size_t)b * N + i] = ok ? (int32_t)shard_get(s, p + 1) : -1;
        }
    }
}

/* shards: window w starts at w*S (S = stride or N) and, past the first, scores only
 * positions >= N-S (the new tokens) */
long lmdata_eval_windows(const LmData *d, int s, int N) {
    if (d->is_recall || d->is_mqar) return d->n_recall[s];
    uint64_t T = d->shard[s].count - 1; /* scored targets */
    int S = d->eval_stride > 0 && d->eval_stride < N ? d->eval_stride : N;
    if (T <= (uint64_t)N) return 1;
    return 1 + (long)((T - N + S - 1) / S);
}

int lmdata_eval_batch(const LmData *d, int s, long b, int B, int N, int32_t *tok, int32_t *tgt) {
    long total = lmdata_eval_windows(d, s, N);
    int filled = 0;
    for (int r = 0; r < B; r++) {
        long w = b * B + r;
        int32_t *tk = tok + (size_t)r * N, *tg = tgt + (size_t)r * N;
        for (int i = 0; i < N; i++) tk[i] = 0, tg[i] = -1;
        if (w >= total) continue;
        filled++;
        if (d->is_recall) {
            recall_example(&d->recall, s, (uint64_t)w, tk, tg);
            continue;
        }
        if (d->is_mqar) {
            int e = mqar_eval_entry(&d->mqar, s, (uint64_t)w, N);
            if (e >= 0) mqar_example(&d->mqar, s, e, (uint64_t)w, N, tk, tg);
            continue;
        }
        const TokenShard *sh = &d->shard[s];
        int S = d->eval_stride > 0 && d->eval_stride < N ? d->eval_stride : N;
        uint64_t T = sh->count - 1;
        uint64_t start;
        int first_scored;
        if (w == 0) {
            start = 0;
            first_scored = 0;
        } else {
            /* window w covers targets [N + (w-1) S, N + w S) clipped to T; it starts N before its end */
            uint64_t end = GMA_MIN((uint64_t)N + (uint64_t)w * S, T);
            uint64_t new_from = (uint64_t)N + (uint64_t)(w - 1) * S;
            start = end > (uint64_t)N ? end - N : 0;
            first_scored = (int)(new_from - start);
            if (S == N) { /* plain non-overlapping windows: the last one is partial, not shifted back */
                start = (uint64_t)w * N;
                first_scored = 0;
            }
        }
        for (int i = 0; i < N; i++) {
            uint64_t p = start + i;
            if (p >= T) break;
            tk[i] = (int32_t)shard_get(sh, p);
            if (i >= first_scored) tg[i] = (int32_t)shard_get(sh, p + 1);
        }
    }
    return filled;
}
