/* lm_source.h: what a language-model data source is (data.source; the registry of them is
 * lm_sources.h, the dispatcher lmdata.h). The types only, so that every source's file and
 * the dispatcher include this header and none of them another's (no circle).
 *
 * A source opens from a spec its caller gives (LmSpec: the window, the seed, the source's
 * own config section, the shards' directory), never from the whole configuration, and
 * serves examples by index: a training row of batch k, an evaluation window w of a split.
 * Docs: docs/data.md, "Adding a data source". */
#ifndef GMA_LM_SOURCE_H
#define GMA_LM_SOURCE_H
#include <stdint.h>

#include "core/config.h"
#include "core/rng.h"
#include "data/lm/shard.h"

enum { SPLIT_TRAIN, SPLIT_VALID, SPLIT_TEST };

/* What a source opens from. */
typedef struct LmSpec {
    int source;          /* data.source (DataSource, lmdata.h) */
    int window;          /* tokens per window N: train.seq_len, or gmaeval's --seq-len */
    uint64_t seed;       /* the run's seed: a generated example comes from (seed, split, index) */
    const void *section; /* the source's own keys (the struct of its LmSource.section), NULL when none */
    const char *path;    /* data.path: the shards' directory */
    int eval_stride;     /* data.eval_stride (shards) */
} LmSpec;

typedef struct LmSource LmSource;

/* An open source. */
typedef struct LmData {
    int source;          /* DataSource */
    const LmSource *src;
    void *task;          /* the source's own state, allocated by its open, freed by lmdata_close */
    long n[3];           /* generated sources: evaluation examples per split (train: 0, unbounded) */
    TokenShard shard[3]; /* shards: the splits' token files */
    int have[3];         /* split s is open */
    uint32_t vocab;      /* token ids are < vocab */
    double words[3];     /* words of the source text (meta.json), 0 = unknown */
    int eval_stride;
} LmData;

/* One source: a line of the registry (lm_sources.h) names it. */
struct LmSource {
    const char *name;           /* data.source */
    const char *label;          /* what gmaeval's "data" line names (NULL: the data's directory) */
    int scored;                 /* accuracy is the figure of merit (gmaeval prints it; the trainer keeps the best) */
    int needs_path;             /* data.path required */
    const CfgSection *section;  /* its own keys (data.NAME_*), NULL when none; LmSpec.section points at them */
    /* checks of its keys at the training window s->window (config validation): 0, or -1 with
     * gma_error naming the key; NULL = none */
    int (*check)(const LmSpec *s);
    /* open the splits in mask (bit s: split s), split `required` of them required: fill
     * d->vocab, have[], n[] (or the shards), d->task; 0, or -1 with gma_error (lmdata_close
     * follows). NULL: not a language-model source (cls, opened by train/cls_task.c) */
    int (*open)(LmData *d, const LmSpec *s, unsigned mask, int required);
    void (*close)(LmData *d); /* what open holds besides d->task (NULL: nothing) */
    /* training row `index` (= batch * B_global + row) of batch `batch` into tok[N], tgt[N];
     * called for every row of the global batch in order, with tok and tgt NULL for the rows
     * of other data-parallel ranks (a source drawing from rng draws for them too) */
    void (*train_example)(const LmData *d, Rng *rng, uint64_t batch, uint64_t index, int N, int32_t *tok, int32_t *tgt);
    long (*eval_count)(const LmData *d, int split, int N); /* evaluation windows of split at N */
    /* evaluation window w of split into tok[N], tgt[N] (given as padding: 0 and -1) */
    void (*eval_example)(const LmData *d, int split, uint64_t w, int N, int32_t *tok, int32_t *tgt);
};

/* For generated sources: every split there, `valid` and `test` evaluation examples, train
 * an unbounded stream. */
static inline void lm_generated(LmData *d, uint32_t vocab, long valid, long test) {
    d->vocab = vocab;
    d->n[SPLIT_TRAIN] = 0;
    d->n[SPLIT_VALID] = valid;
    d->n[SPLIT_TEST] = test;
    d->have[SPLIT_TRAIN] = d->have[SPLIT_VALID] = d->have[SPLIT_TEST] = 1;
}
/* A generated source's eval_count: the examples its open set. */
static inline long lm_generated_count(const LmData *d, int split, int N) {
    (void)N;
    return d->n[split];
}

#endif
