/* generate.h: sampling from a causal language model (bin/gmasample).
 *
 * While the sequence fits the window (model.max_seq_len) and every mixer has a decode
 * step (model_can_decode: every mixer but linformer), each token is one incremental step
 * (of all M sequences at once with model_generate_batch)
 * (model_decode_step: the linear core's state, or a key/value cache). Otherwise, and past
 * the window, each new token costs one forward pass over the context (the last
 * max_seq_len tokens, batch 1), as llm.c samples. With incremental decoding the prompt is
 * prefilled: one forward over it fills every layer's state (model_prefill), unless
 * SampleOpts.no_prefill feeds it a token a step. All give the logits of model_forward
 * (the incremental path up to float32 summation order). The next token is drawn from the
 * last position's logits with a temperature, then top-k and top-p (nucleus) truncation. */
#ifndef GMA_GENERATE_H
#define GMA_GENERATE_H
#include <stdint.h>

#include "core/rng.h"
#include "model/model.h"

typedef struct SampleOpts {
    double temperature; /* <= 0: greedy (argmax, the lowest id among ties) */
    int top_k;          /* keep the k most likely tokens (0 = all) */
    double top_p;       /* then the fewest most likely tokens whose probability reaches p (1 = all) */
    int no_cache;       /* 1: a full forward per token even where incremental decoding works */
    int vocab_limit;    /* > 0: draw only ids below it (a tokenizer smaller than the model's vocabulary) */
    int no_prefill;     /* 1: incremental decoding feeds the prompt one token a step (else model_prefill) */
} SampleOpts;

/* One token from logits[V] (host). `order` is scratch for V ints, `prob` for V doubles.
 * Candidates are ranked by logit, ties by id, so a draw depends on the rng alone. */
int sample_token(const real *logits, int V, const SampleOpts *o, Rng *rng, int *order, double *prob);

/* Called with each new token; a non-zero return stops generation (returned as is). */
typedef int (*generate_fn)(void *ctx, int32_t token);

/* Append n_new tokens to the np-token prompt (np >= 1; ids checked by model_forward),
 * calling emit for each. The model must be causal and allocated for batch 1 and its
 * max_seq_len. Returns 0, emit's non-zero value, or -1 with gma_error set. */
int model_generate(Model *m, const int32_t *prompt, int np, int n_new, const SampleOpts *o, Rng *rng, generate_fn emit,
                   void *ctx);

/* Called with each new token of sequence b (tokens of one position for b = 0..M-1, then
 * the next position); a non-zero return stops generation (returned as is). */
typedef int (*generate_batch_fn)(void *ctx, int b, int32_t token);

/* M continuations of the same prompt at once, sequence b drawn with rng[b]: the same
 * tokens as M calls of model_generate with those streams (up to float32 summation order
 * in the logits). While incremental decoding works, one model_decode_step_batch feeds a
 * token of every sequence (the weights are read once per position for M tokens; M must
 * fit the rows the model was allocated for); otherwise each sequence takes a forward. */
int model_generate_batch(Model *m, const int32_t *prompt, int np, int n_new, int M, const SampleOpts *o, Rng *rng,
                         generate_batch_fn emit, void *ctx);
#endif
