/* evaluate.h: loss, perplexity and accuracy of a model over an evaluation split. */
#ifndef GMA_EVALUATE_H
#define GMA_EVALUATE_H
#include "data/lm/lmdata.h"
#include "data/lm/passkey.h"
#include "model/model.h"

#define RECALL_EVAL_Q 64
#define EVAL_MAX_BUCKETS 1024 /* position buckets (evaluate_buckets) */

typedef struct EvalResult {
    double loss;      /* mean NLL per scored token (nats) */
    double ppl;       /* exp(loss) */
    double acc;       /* share of scored tokens predicted exactly (argmax) */
    double tokens;    /* scored tokens */
    double words;     /* words of the source (0 = unknown) */
    double word_ppl;  /* exp(total NLL / words) when words are known, else 0 */
    long windows;
    long bad_window;  /* the first window of the first batch whose loss is not finite; -1 when all are */
    /* the recall task (0 queries otherwise): accuracy at each of the first RECALL_EVAL_Q
     * queries of a window, of the model and of the two rules that use no key-value
     * matching (recall_baselines), and those rules over all queries */
    int queries;
    double query_acc[RECALL_EVAL_Q], query_freq[RECALL_EVAL_Q], query_unans[RECALL_EVAL_Q];
    double base_freq, base_unans;
    /* position buckets (evaluate_buckets with bucket > 0): scored tokens and their mean
     * NLL at window positions [i*bucket, (i+1)*bucket), as flash-linear-attention's
     * evals/ppl.py (docs/longctx.md) */
    int bucket, n_buckets, window; /* window: N */
    double bucket_tokens[EVAL_MAX_BUCKETS], bucket_loss[EVAL_MAX_BUCKETS];
    /* passkey retrieval (0 examples otherwise): the share of examples whose digits were all
     * predicted (exact) and of digits predicted, overall and by the key's depth bucket */
    double pk_examples, pk_exact, pk_digit;
    double pk_depth_n[PASSKEY_DEPTH_BUCKETS], pk_depth_exact[PASSKEY_DEPTH_BUCKETS], pk_depth_digit[PASSKEY_DEPTH_BUCKETS];
} EvalResult;

/* Evaluate split s with batches of B x N; max_batches 0 = the whole split. */
int evaluate(Model *m, const LmData *d, int s, int B, int N, long max_batches, EvalResult *r);
/* The same with the loss by position bucket of `bucket` tokens (0 = none; at most
 * EVAL_MAX_BUCKETS buckets: larger buckets are refused by the caller). */
int evaluate_buckets(Model *m, const LmData *d, int s, int B, int N, long max_batches, int bucket, EvalResult *r);
#endif
