/* lmdata.c: the data sources' dispatcher (the registry lm_sources.h as a table, opening,
 * training and evaluation batches through each source's reader) and the token shards'
 * reader, the source "shards". */
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

/* ---- the registry ---- */

#define DATA_SOURCE_ROW_(name, reader, doc) &reader,
static const LmSource *const g_sources[] = {DATA_SOURCES(DATA_SOURCE_ROW_, )};
#undef DATA_SOURCE_ROW_

const LmSource *lmdata_source(int s) { return s >= 0 && s < N_DATA_SOURCES ? g_sources[s] : NULL; }

LmSpec lmdata_spec(const Config *c, int window) {
    const LmSource *src = lmdata_source(c->data.source);
    LmSpec s = {c->data.source, window, (uint64_t)c->seed, NULL, c->data.path, c->data.eval_stride};
    if (src && src->section) s.section = cfg_section_of(c, src->section);
    return s;
}

const void *lmdata_task(const LmData *d, int s) { return d->src && d->source == s ? d->task : NULL; }

int lmdata_open(LmData *d, const LmSpec *s) { return lmdata_open_splits(d, s, 7, SPLIT_TRAIN); }

int lmdata_open_splits(LmData *d, const LmSpec *s, unsigned mask, int required) {
    memset(d, 0, sizeof *d);
    const LmSource *src = lmdata_source(s->source);
    if (!src || !src->open)
        return gma_errorf("key data.source: \"%s\" is not language-model data", src ? src->name : "?");
    d->source = s->source;
    d->src = src;
    d->eval_stride = s->eval_stride;
    if (src->open(d, s, mask, required) != 0) {
        lmdata_close(d);
        return -1;
    }
    return 0;
}

int lmdata_check_train_window(const LmData *d, const LmSpec *s) {
    uint64_t need = (uint64_t)s->window + 1, have = d->shard[SPLIT_TRAIN].count;
    if (d->source != DATA_shards || have >= need) return 0; /* a window: seq_len inputs and the token after them */
    return gma_errorf("%s/train.bin: %llu tokens; one training window of train.seq_len %d needs %llu (a larger train "
                      "split, or a smaller train.seq_len)", s->path, (unsigned long long)have, s->window,
                      (unsigned long long)need);
}

void lmdata_close(LmData *d) {
    if (d->src && d->src->close) d->src->close(d);
    free(d->task);
    memset(d, 0, sizeof *d);
}

void lmdata_train_batch(const LmData *d, Rng *rng, uint64_t batch_index, int B, int N, int32_t *tok, int32_t *tgt) {
    lmdata_train_batch_part(d, rng, batch_index, B, 0, B, N, tok, tgt);
}

void lmdata_train_batch_part(const LmData *d, Rng *rng, uint64_t batch_index, int B_global, int first, int B, int N,
                             int32_t *tok, int32_t *tgt) {
    for (int g = 0; g < B_global; g++) {
        int b = g - first, mine = b >= 0 && b < B;
        d->src->train_example(d, rng, batch_index, batch_index * B_global + g, N, mine ? tok + (size_t)b * N : NULL,
                              mine ? tgt + (size_t)b * N : NULL);
    }
}

long lmdata_eval_windows(const LmData *d, int s, int N) { return d->src->eval_count(d, s, N); }

int lmdata_eval_batch(const LmData *d, int s, long b, int B, int N, int32_t *tok, int32_t *tgt) {
    long total = lmdata_eval_windows(d, s, N);
    int filled = 0;
    for (int r = 0; r < B; r++) {
        long w = b * B + r;
        int32_t *tk = tok + (size_t)r * N, *tg = tgt + (size_t)r * N;
        for (int i = 0; i < N; i++) tk[i] = 0, tg[i] = -1;
        if (w >= total) continue;
        filled++;
        d->src->eval_example(d, s, (uint64_t)w, N, tk, tg);
    }
    return filled;
}

/* ---- token shards ---- */

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

static int shards_open(LmData *d, const LmSpec *sp, unsigned mask, int required) {
    if (manifest_check(sp->path, mask) != 0) return -1; /* a set written as a whole, or refused */
    for (int s = 0; s < 3; s++) {
        char path[2100];
        snprintf(path, sizeof path, "%s/%s.bin", sp->path, g_split_names[s]);
        if (!(mask & (1u << s))) continue;
        if (!gma_path_exists(path)) {
            if (s == required)
                return gma_errorf("%s: missing (key data.path names a directory with %s.bin)", path, g_split_names[s]);
            continue;
        }
        if (shard_open(&d->shard[s], path, 1) != 0) return -1;
        d->have[s] = 1;
        if (d->shard[s].count < 2) return gma_errorf("%s: only %llu tokens", path, (unsigned long long)d->shard[s].count);
        if (shard_vocab_too_big(&d->shard[s])) return -1;
        d->vocab = GMA_MAX(d->vocab, d->shard[s].vocab);
    }
    read_meta(d, sp->path);
    return 0;
}

static void shards_close(LmData *d) {
    for (int s = 0; s < 3; s++)
        if (d->have[s]) shard_close(&d->shard[s]);
}

int lmdata_open_file(LmData *d, const char *path) {
    memset(d, 0, sizeof *d);
    d->source = DATA_shards;
    d->src = &shards_source;
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
    d->source = DATA_shards;
    d->src = &shards_source;
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

/* a random window of N+1 tokens of the train shard, drawn for every row of the global batch */
static void shards_train_example(const LmData *d, Rng *rng, uint64_t batch, uint64_t index, int N, int32_t *tok,
                                 int32_t *tgt) {
    const TokenShard *s = &d->shard[SPLIT_TRAIN];
    uint64_t span = s->count > (uint64_t)N + 1 ? s->count - N - 1 : 0;
    uint64_t start = span ? rng_below(rng, span + 1) : 0;
    if (!tok) return;
    for (int i = 0; i < N; i++) {
        uint64_t p = start + i;
        int ok = p + 1 < s->count;
        tok[i] = ok ? (int32_t)shard_get(s, p) : 0;
        tgt[i] = ok ? (int32_t)shard_get(s, p + 1) : -1;
    }
}

/* window w starts at w*S (S = stride or N) and, past the first, scores only positions >=
 * N-S (the new tokens) */
static long shards_eval_count(const LmData *d, int s, int N) {
    uint64_t T = d->shard[s].count - 1; /* scored targets */
    int S = d->eval_stride > 0 && d->eval_stride < N ? d->eval_stride : N;
    if (T <= (uint64_t)N) return 1;
    return 1 + (long)((T - N + S - 1) / S);
}

static void shards_eval_example(const LmData *d, int s, uint64_t w, int N, int32_t *tk, int32_t *tg) {
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
        uint64_t end = GMA_MIN((uint64_t)N + w * S, T);
        uint64_t new_from = (uint64_t)N + (w - 1) * S;
        start = end > (uint64_t)N ? end - N : 0;
        first_scored = (int)(new_from - start);
        if (S == N) { /* plain non-overlapping windows: the last one is partial, not shifted back */
            start = w * N;
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

const LmSource shards_source = {"shards", NULL, 0, 1, NULL, NULL, shards_open, shards_close,
                                shards_train_example, shards_eval_count, shards_eval_example};

/* data.source "cls": a classification task, loaded by train/cls_task.c (no reader here) */
const LmSource cls_source = {"cls", NULL, 0, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

/* ---- configuration: the LM data sources (data.source, data.path, data.eval_stride; each source's own keys) ---- */

#define DATA_SOURCE_DOC_(name, reader, doc) #name ": " doc
#define O(f) CFG_OFF(f)
#define S(f) CFG_SIZE(f)
static const CfgKey g_lm_keys[] = {
    {"data.source", CFGT_ENUM, O(data.source), 0, "recall", 0, 0, DATA_SOURCE_CHOICES, DATA_SOURCES(DATA_SOURCE_DOC_, "; ") "."},
    {"data.path", CFGT_STR, O(data.path), S(data.path), "", 0, 0, NULL, "Directory with train.bin/valid.bin/test.bin (+ meta.json)."},
};

static const CfgKey g_lm_tail_keys[] = {
    {"data.eval_stride", CFGT_INT, O(data.eval_stride), 0, "0", 0, 16777216, NULL,
     "Evaluation on shards: 0 = windows without overlap; S = sliding windows advanced by S, scoring only the last S tokens."},
};
#undef O
#undef S
#undef DATA_SOURCE_DOC_

/* the keys of the source data.source names, at the training window */
static int validate_source(const Config *c) {
    const LmSource *s = lmdata_source(c->data.source);
    if (s->needs_path && !c->data.path[0]) return gma_errorf("key data.path: required when data.source is \"%s\"", s->name);
    if (c->data.eval_stride > c->train.seq_len)
        return gma_errorf("key data.eval_stride: %d is larger than train.seq_len = %d", c->data.eval_stride, c->train.seq_len);
    if (!s->check) return 0;
    LmSpec spec = lmdata_spec(c, c->train.seq_len);
    return s->check(&spec);
}

static const CfgSection lmdata_cfg_section = {NULL, 0, g_lm_keys, CFG_N(g_lm_keys), validate_source, NULL};
static const CfgSection lmdata_tail_cfg_section = {NULL, 0, g_lm_tail_keys, CFG_N(g_lm_tail_keys), NULL, NULL};

int lmdata_config_sections(const CfgSection **out, int max) {
    int n = 0;
    if (n < max) out[n++] = &lmdata_cfg_section;
    for (int i = 0; i < N_DATA_SOURCES && n < max; i++)
        if (g_sources[i]->section) out[n++] = g_sources[i]->section;
    if (n < max) out[n++] = &lmdata_tail_cfg_section;
    return n;
}
