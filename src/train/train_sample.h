/* train_sample.h: text samples while a language model trains (train.sample_every), as
 * llm.c prints them: every sample_every steps rank 0 continues train.sample_prompt by
 * train.sample_tokens tokens (temperature 1, the random stream (seed, step), so a resumed
 * run draws the same samples), prints the text and logs a metrics.jsonl row
 * {"step", "event": "sample", "prompt", "text" | "ids"}. */
#ifndef GMA_TRAIN_SAMPLE_H
#define GMA_TRAIN_SAMPLE_H
#include <stdio.h>

#include "core/config.h"
#include "data/text/tokenizer.h"
#include "model/model.h"

typedef struct TrainSampler {
    Tokenizer *tk; /* the data's tokenizer (meta.json), or NULL: samples are ids */
    int32_t *prompt;
    int np, n_new;
    uint64_t seed;
} TrainSampler;

/* Set up from the config: the tokenizer of data.path (a missing one is a warning on
 * `log`, and samples are ids) and the prompt. 0, or -1 with gma_error (a prompt that
 * does not encode). */
int train_sampler_init(TrainSampler *s, const Config *c, FILE *log);
/* One sample at `step` into the metrics file mf (may be NULL); printed on `out` (may be
 * NULL). The model is left as after any evaluation forward. */
int train_sampler_run(TrainSampler *s, Model *m, long step, FILE *mf, FILE *out);
void train_sampler_free(TrainSampler *s);
#endif
