/* evaluate.c: walk an evaluation split in order and accumulate loss and accuracy. */
#include "train/evaluate.h"

#include <stdlib.h>
#include <string.h>

int evaluate(Model *m, const LmData *d, int s, int B, int N, long max_batches, EvalResult *r) {
    memset(r, 0, sizeof *r);
    if (!d->have[s]) return gma_errorf("no %s split in this data", s == SPLIT_VALID ? "valid" : s == SPLIT_TEST ? "test" : "train");
    int32_t *tok = xmalloc(sizeof(int32_t) * B * N), *tgt = xmalloc(sizeof(int32_t) * B * N);
    double nll = 0, count = 0, correct = 0;
    long nb = (lmdata_eval_windows(d, s, N) + B - 1) / B;
    if (max_batches > 0 && max_batches < nb) nb = max_batches;
    int rc = 0;
    for (long b = 0; b < nb; b++) {
        int filled = lmdata_eval_batch(d, s, b, B, N, tok, tgt);
        if (!filled) break;
        LossStats st;
        if ((rc = model_forward(m, tok, tgt, B, N, NULL, 1, &st, 0, 0)) != 0) break;
        nll += st.loss_sum;
        count += st.count;
        correct += st.correct;
        r->windows += filled;
    }
    free(tok);
    free(tgt);
    if (rc) return rc;
    r->tokens = count;
    r->loss = count > 0 ? nll / count : 0;
    r->ppl = exp(r->loss);
    r->acc = count > 0 ? correct / count : 0;
    /* word-level perplexity only when the whole split was scored */
    if (d->words[s] > 0 && (max_batches == 0 || r->windows >= lmdata_eval_windows(d, s, N))) {
        r->words = d->words[s];
        r->word_ppl = exp(nll / d->words[s]);
    }
    return 0;
}
