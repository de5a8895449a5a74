/* evaluate.c: walk an evaluation split in order and accumulate loss and accuracy. */
#include "train/evaluate.h"

#include <stdlib.h>
#include <string.h>

#include "train/dist.h"

int evaluate(Model *m, const LmData *d, int s, int B, int N, long max_batches, EvalResult *r) {
    memset(r, 0, sizeof *r);
    if (!d->have[s]) return gma_errorf("no %s split in this data", s == SPLIT_VALID ? "valid" : s == SPLIT_TEST ? "test" : "train");
    int32_t *tok = xmalloc(sizeof(int32_t) * B * N), *tgt = xmalloc(sizeof(int32_t) * B * N);
    double nll = 0, count = 0, correct = 0;
    long nb = (lmdata_eval_windows(d, s, N) + B - 1) / B;
    if (max_batches > 0 && max_batches < nb) nb = max_batches;
    /* per-batch sums (loss, count, correct, windows), added up in batch order; with R
     * data-parallel ranks rank r evaluates batches r, r+R, ... and the tables are summed */
    double *per = xcalloc((size_t)nb * 4 + 1, sizeof(double));
    int rc = 0;
    for (long b = 0; b < nb; b++) {
        if (!dist_owns(b)) continue;
        int filled = lmdata_eval_batch(d, s, b, B, N, tok, tgt);
        if (!filled) break;
        LossStats st;
        if ((rc = model_forward(m, tok, tgt, B, N, NULL, 1, &st, 0, 0)) != 0) break;
        double *e = per + (size_t)b * 4;
        e[0] = st.loss_sum, e[1] = st.count, e[2] = st.correct, e[3] = filled;
    }
    free(tok);
    free(tgt);
    if (dist_sum_table(per, (size_t)nb * 4, rc != 0) && rc == 0) rc = gma_errorf("evaluation failed on another rank");
    r->bad_window = -1;
    for (long b = 0; b < nb; b++) {
        const double *e = per + (size_t)b * 4;
        if (r->bad_window < 0 && !isfinite(e[0])) r->bad_window = b * B;
        nll += e[0];
        count += e[1];
        correct += e[2];
        r->windows += (long)e[3];
    }
    free(per);
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
