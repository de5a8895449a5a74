/* lmdata.c: training and evaluation batches from the recall task, MQAR or token shards. */
#include "data/lm/lmdata.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "data/lm/lmmeta.h"
#include "data/lm/manifest.h"

/* data.mqar_* (the stored section mqar_cfg_section, at the end) */
typedef struct MqarCfg {
    int vocab, valid, test;
    double power_a;
    int filler; /* MQAR_FILLER_RANDOM | MQAR_FILLER_ZERO (mqar.h) */
    char lengths[128], pairs[128], test_lengths[128], test_pairs[128];
} MqarCfg;
static const CfgSection mqar_cfg_section;
static const MqarCfg *mqar_cfg(const Config *c) { return cfg_section_of(c, &mqar_cfg_section); }

/* data.recall_* (the stored section recall_cfg_section, at the end) */
typedef struct RecallCfg {
    int vocab, pairs, queries, valid, test;
} RecallCfg;
static const CfgSection recall_cfg_section;
static const RecallCfg *recall_cfg(const Config *c) { return cfg_section_of(c, &recall_cfg_section); }

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
    const MqarCfg *g = mqar_cfg(c);
    MqarTask *t = &d->mqar;
    if (mqar_init(t, g->vocab, g->power_a, g->filler, (uint64_t)c->seed) != 0 ||
        mqar_set_split(t, SPLIT_TRAIN, "data.mqar_lengths", g->lengths, "data.mqar_pairs", g->pairs,
                       (mask & 1u) ? c->train.seq_len : 0) != 0 ||
        mqar_set_split(t, SPLIT_VALID, "data.mqar_lengths", g->lengths, "data.mqar_pairs", g->pairs, 0) != 0 ||
        mqar_set_split(t, SPLIT_TEST, "data.mqar_test_lengths", g->test_lengths, "data.mqar_test_pairs",
                       g->test_pairs, 0) != 0)
        return -1;
    if ((mask & 4u) && mqar_eval_entry(t, SPLIT_TEST, 0, c->train.seq_len) < 0)
        return gma_errorf("key data.mqar_test_lengths: no test length in \"%s\" fits the window of %d tokens "
                          "(gmaeval --seq-len N)", g->test_lengths, c->train.seq_len);
    d->is_mqar = 1;
    d->vocab = (uint32_t)g->vocab;
    d->n_recall[SPLIT_TRAIN] = 0; /* unbounded stream */
    d->n_recall[SPLIT_VALID] = g->valid;
    d->n_recall[SPLIT_TEST] = g->test;
    d->have[0] = d->have[1] = d->have[2] = 1;
    return 0;
}

/* passkey: the training lengths within the window train.seq_len when train is opened; the
 * window (gmaeval's --seq-len for test) holds one example */
static int passkey_open(LmData *d, const Config *c, unsigned mask) {
    PasskeyTask *t = &d->passkey;
    if (passkey_init(t, c, (mask & 1u) ? c->train.seq_len : 0) != 0) return -1;
    if (c->train.seq_len < passkey_min_len(t->digits))
        return gma_errorf("key train.seq_len: a window of %d tokens is too short for a passkey of data.passkey_digits %d "
                          "(at least %d; gmaeval --seq-len N)", c->train.seq_len, t->digits, passkey_min_len(t->digits));
    const PasskeyCfg *p = passkey_cfg(c);
    d->is_passkey = 1;
    d->vocab = (uint32_t)t->vocab;
    d->n_recall[SPLIT_TRAIN] = 0; /* unbounded stream */
    d->n_recall[SPLIT_VALID] = p->valid;
    d->n_recall[SPLIT_TEST] = p->test;
    d->have[0] = d->have[1] = d->have[2] = 1;
    return 0;
}

/* cross-sequence MQAR: examples of the window train.seq_len (gmaeval evaluates at the
 * training window: the context's length is fixed) */
static int xmqar_open(LmData *d, const Config *c) {
    if (xmqar_init(&d->xmqar, c, c->train.seq_len) != 0) return -1;
    const XmqarCfg *x = xmqar_cfg(c);
    d->is_xmqar = 1;
    d->vocab = (uint32_t)x->vocab;
    d->n_recall[SPLIT_TRAIN] = 0; /* unbounded stream */
    d->n_recall[SPLIT_VALID] = x->valid;
    d->n_recall[SPLIT_TEST] = x->test;
    d->have[0] = d->have[1] = d->have[2] = 1;
    return 0;
}

int lmdata_open(LmData *d, const Config *c) { return lmdata_open_splits(d, c, 7, SPLIT_TRAIN); }

int lmdata_check_train_window(const LmData *d, const Config *c) {
    uint64_t need = (uint64_t)c->train.seq_len + 1, have = d->shard[SPLIT_TRAIN].count;
    if (d->is_recall || d->is_mqar || d->is_passkey || d->is_xmqar || have >= need) return 0; /* a window: seq_len inputs and the token after them */
    return gma_errorf("%s/train.bin: %llu tokens; one training window of train.seq_len %d needs %llu (a larger train "
                      "split, or a smaller train.seq_len)", c->data.path, (unsigned long long)have, c->train.seq_len,
                      (unsigned long long)need);
}

int lmdata_open_splits(LmData *d, const Config *c, unsigned mask, int required) {
    memset(d, 0, sizeof *d);
    d->eval_stride = c->data.eval_stride;
    if (c->data.source == DATA_recall) {
        const RecallCfg *rc = recall_cfg(c);
        d->is_recall = 1;
        if (recall_init(&d->recall, rc->vocab, rc->pairs, rc->queries, c->train.seq_len, (uint64_t)c->seed) != 0)
            return -1;
        d->vocab = (uint32_t)rc->vocab;
        d->n_recall[SPLIT_TRAIN] = 0; /* unbounded stream */
        d->n_recall[SPLIT_VALID] = rc->valid;
        d->n_recall[SPLIT_TEST] = rc->test;
        d->have[0] = d->have[1] = d->have[2] = 1;
        return 0;
    }
    if (c->data.source == DATA_mqar) return mqar_open(d, c, mask);
    if (c->data.source == DATA_passkey) return passkey_open(d, c, mask);
    if (c->data.source == DATA_xmqar) return xmqar_open(d, c);
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

int lmdata_open_tokens(LmData *d, const char *name, const uint32_t *ids, uint64_t n, uint32_t vocab, double words) {
    memset(d, 0, sizeof *d);
    if (n < 2) /* evaluation scores token i+1 from token i: it needs two */
        return gma_errorf("%s: only %llu token%s (evaluation needs at least 2)", name, (unsigned long long)n, n == 1 ? "" : "s");
    TokenShard *s = &d->shard[SPLIT_TEST]; /* no mapping: shard_close leaves the caller's ids alone */
    snprintf(s->path, sizeof s->path, "%s", name);
    s->tok = (const uint8_t *)ids;
    s->width = 4;
    s->count = n;
    s->vocab = vocab;
    d->have[SPLIT_TEST] = 1;
    d->vocab = vocab;
    d->words[SPLIT_TEST] = words;
    return 0;
}

void lmdata_close(LmData *d) {
    for (int s = 0; s < 3; s++)
        if (d->have[s] && !d->is_recall && !d->is_mqar && !d->is_passkey && !d->is_xmqar) shard_close(&d->shard[s]);
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
    if (d->is_xmqar) {
        for (int b = 0; b < B; b++)
            xmqar_example(&d->xmqar, SPLIT_TRAIN, batch_index * B_global + first + b, tok + (size_t)b * N,
                          tgt + (size_t)b * N);
        return;
    }
    if (d->is_passkey) { /* one length per batch, cycling over data.passkey_lengths */
        int n = passkey_train_len(&d->passkey, batch_index, N);
        for (int b = 0; b < B; b++)
            passkey_example(&d->passkey, SPLIT_TRAIN, batch_index * B_global + first + b, n, N, tok + (size_t)b * N,
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
    if (d->is_recall || d->is_mqar || d->is_passkey || d->is_xmqar) return d->n_recall[s];
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
        if (d->is_xmqar) {
            if (N == d->xmqar.T) xmqar_example(&d->xmqar, s, (uint64_t)w, tk, tg);
            continue;
        }
        if (d->is_passkey) {
            passkey_example(&d->passkey, s, (uint64_t)w, N, N, tk, tg);
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

/* ---- configuration: the LM data sources (data.source, data.path, the recall task, MQAR, eval_stride) ---- */

#define O(f) CFG_OFF(f)
#define S(f) CFG_SIZE(f)
static const CfgKey g_lm_keys[] = {
    {"data.source", CFGT_ENUM, O(data.source), 0, "recall", 0, 0, DATA_SOURCE_CHOICES,
     "recall: the embedded associative-recall generator; mqar: Zoology's multi-query associative recall (docs/mqar.md); passkey: passkey retrieval at long lengths (docs/longctx.md); xmqar: MQAR split in a context and a query sequence, for cross-attention (docs/cross.md); shards: token shards in data.path; cls: a classification "
     "task (data.task) for model.task \"classify\"."},
    {"data.path", CFGT_STR, O(data.path), S(data.path), "", 0, 0, NULL, "Directory with train.bin/valid.bin/test.bin (+ meta.json)."},
};

static const CfgKey g_lm_tail_keys[] = {
    {"data.eval_stride", CFGT_INT, O(data.eval_stride), 0, "0", 0, 16777216, NULL,
     "Evaluation on shards: 0 = windows without overlap; S = sliding windows advanced by S, scoring only the last S tokens."},
};
#undef O
#undef S

#define MO(f) offsetof(MqarCfg, f)
#define MS(f) sizeof(((MqarCfg *)0)->f)
static const CfgKey g_mqar_keys[] = {
    {"mqar_vocab", CFGT_INT, MO(vocab), 0, "8192", 8, 65536, NULL,
     "MQAR: vocabulary V, even: keys from [1, V/2), values from [V/2, V) (docs/mqar.md)."},
    {"mqar_lengths", CFGT_STR, MO(lengths), MS(lengths), "64", 0, 0, NULL,
     "MQAR: training lengths, comma-separated; each training batch holds one of them, cycling, padded to train.seq_len."},
    {"mqar_pairs", CFGT_STR, MO(pairs), MS(pairs), "4", 0, 0, NULL,
     "MQAR: key-value pairs of each training length (one value for all, or one per length; 4 x pairs <= length)."},
    {"mqar_test_lengths", CFGT_STR, MO(test_lengths), MS(test_lengths), "64", 0, 0, NULL,
     "MQAR: test lengths, comma-separated (gmaeval --data test --seq-len N scores the test length N alone)."},
    {"mqar_test_pairs", CFGT_STR, MO(test_pairs), MS(test_pairs), "4", 0, 0, NULL,
     "MQAR: key-value pairs of each test length (one for all, or one per length)."},
    {"mqar_power_a", CFGT_REAL, MO(power_a), 0, "0.01", 0, 1, NULL,
     "MQAR: query gaps' power law p(g) proportional to a g^(a-1) (1 = uniform)."},
    {"mqar_filler", CFGT_ENUM, MO(filler), 0, "random", 0, 0, "random|zero",
     "MQAR: the positions after the pairs that hold no query: uniform over [0, V) (Zoology's random_non_queries), or 0."},
    {"mqar_valid", CFGT_INT, MO(valid), 0, "256", 1, 100000000, NULL, "MQAR: validation examples."},
    {"mqar_test", CFGT_INT, MO(test), 0, "1000", 1, 100000000, NULL, "MQAR: test examples per evaluation."},
};
#undef MO
#undef MS
static const CfgSection mqar_cfg_section = {"mqar", sizeof(MqarCfg), g_mqar_keys, CFG_N(g_mqar_keys), NULL, "data"};

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

static int validate_recall(const Config *c) {
    const RecallCfg *rc = recall_cfg(c);
    int need = 2 * rc->pairs + 2;
    if (c->train.seq_len < need)
        return gma_errorf("key train.seq_len: %d is too short for %d recall pairs (need at least %d)", c->train.seq_len,
                          rc->pairs, need);
    if (rc->vocab < 2 * rc->pairs + 2)
        return gma_errorf("key data.recall_vocab: %d is too small for %d distinct keys", rc->vocab, rc->pairs);
    return 0;
}

static int validate_passkey(const Config *c) {
    PasskeyTask t;
    return passkey_init(&t, c, c->train.seq_len);
}

static int validate_xmqar(const Config *c) {
    XmqarTask t;
    return xmqar_init(&t, c, c->train.seq_len);
}

typedef struct SourceInfo {
    const char *name;
    int needs_path;
    int (*validate)(const Config *c);
} SourceInfo;

#define SOURCE_ROW(name, needs_path, validate) {#name, needs_path, validate},
static const SourceInfo g_sources[] = {DATA_SOURCES(SOURCE_ROW, )};
#undef SOURCE_ROW

static int validate_source(const Config *c) {
    const SourceInfo *s = &g_sources[c->data.source];
    if (s->needs_path && !c->data.path[0]) return gma_errorf("key data.path: required when data.source is \"%s\"", s->name);
    if (c->data.eval_stride > c->train.seq_len)
        return gma_errorf("key data.eval_stride: %d is larger than train.seq_len = %d", c->data.eval_stride, c->train.seq_len);
    return s->validate ? s->validate(c) : 0;
}

static const CfgSection lmdata_cfg_section = {NULL, 0, g_lm_keys, CFG_N(g_lm_keys), validate_source, NULL};
static const CfgSection lmdata_tail_cfg_section = {NULL, 0, g_lm_tail_keys, CFG_N(g_lm_tail_keys), NULL, NULL};

int lmdata_config_sections(const CfgSection **out, int max) {
    const CfgSection *s[] = {&lmdata_cfg_section, &recall_cfg_section, &mqar_cfg_section, &lmdata_tail_cfg_section};
    int n = 0;
    for (; n < CFG_N(s) && n < max; n++) out[n] = s[n];
    return n;
}
