/* sample_run.h: gmasample's generation: the prompt as token ids and the samples drawn in
 * batches of up to max_seq_len sequences (model_generate_batch), printed as they come (one
 * sample) or when their batch is done, and collected as JSON. */
#ifndef GMA_SAMPLE_RUN_H
#define GMA_SAMPLE_RUN_H
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

#include "data/text/tokenizer.h"
#include "model/generate.h"
#include "model/model.h"

typedef struct SampleRun {
    long tokens, samples, seed; /* new tokens per sample, samples, seed (sample m: stream (seed, m)) */
    long batch;                 /* sequences a batch at most: the rows m is allocated for */
    SampleOpts so;
    FILE *out;                  /* the text (or the ids without a tokenizer) */
    double *first_at;           /* NULL, or set to gma_now() when the first new token comes (time to first token) */
} SampleRun;

/* The prompt: ids ("1 2 3", commas or spaces) when given, else text through tk, else the
 * tokenizer's start token. xmalloc'd with *np; NULL with gma_error. */
int32_t *sample_prompt_ids(Tokenizer *tk, const char *text, size_t text_len, const char *ids, int *np);
/* Every sample of r from the prompt p (np ids) through m (allocated for r->batch
 * rows), each appended to arr as {"ids", "text"}. 0, or -1 with gma_error. */
int sample_run(Model *m, Tokenizer *tk, const int32_t *p, int np, const SampleRun *r, cJSON *arr);
#endif
