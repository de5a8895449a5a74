/* evaluate.c: walk an evaluation split in order and accumulate loss and accuracy. */
#include "train/evaluate.h"

#include <stdlib.h>
#include <string.h>

#include "data/lm/recall.h"
#include "ops/ops.h"
#include "train/dist.h"

/* Add one batch of recall windows to t: [0] the scored queries, [1] and [2] the two rules'
 * correct answers over all of them, then for each of the first Qc queries its count and the
 * correct answers of the model and of the two rules. */
static void recall_tally(const RecallTask *rt, const int32_t *tok, const int32_t *tgt, const int32_t *pred, int filled,
                         int N, int Qc, double *t) {
    int32_t freq[4096], unans[4096];
    for (int w = 0; w < filled; w++) {
        const int32_t *tw = tok + (size_t)w * N, *gw = tgt + (size_t)w * N, *pw = pred + (size_t)w * N;
        recall_baselines(rt, tw, freq, unans);
        for (int q = 0; q < rt->queries; q++) {
            int i = recall_query_pos(rt, q);
            if (gw[i] < 0) continue;
            t[0] += 1, t[1] += freq[q] == gw[i], t[2] += unans[q] == gw[i];
            if (q >= Qc) continue;
            double *c = t + 3 + 4 * (size_t)q;
            c[0] += 1, c[1] += pw[i] == gw[i], c[2] += freq[q] == gw[i], c[3] += unans[q] == gw[i];
        }
    }
}

/* Add one batch of passkey windows to t: examples, exact, digit share, then per depth bucket
 * the same three */
static void passkey_tally(const PasskeyTask *pk, const int32_t *tok, const int32_t *tgt, const int32_t *pred, int filled,
                          int N, double *t) {
    for (int w = 0; w < filled; w++) {
        const int32_t *tw = tok + (size_t)w * N, *gw = tgt + (size_t)w * N, *pw = pred + (size_t)w * N;
        int k = 0, right = 0, b = passkey_depth_bucket(pk, tw, N);
        for (int i = 0; i < N; i++)
            if (gw[i] >= 0) k++, right += pw[i] == gw[i];
        if (k == 0 || b < 0) continue;
        double ex = right == k, dg = (double)right / k;
        t[0] += 1, t[1] += ex, t[2] += dg;
        double *c = t + 3 + 3 * (size_t)b;
        c[0] += 1, c[1] += ex, c[2] += dg;
    }
}

static void passkey_result(EvalResult *r, const double *t) {
    r->pk_examples = t[0];
    double n = t[0] > 0 ? t[0] : 1;
    r->pk_exact = t[1] / n, r->pk_digit = t[2] / n;
    for (int b = 0; b < PASSKEY_DEPTH_BUCKETS; b++) {
        const double *c = t + 3 + 3 * (size_t)b;
        double m = c[0] > 0 ? c[0] : 1;
        r->pk_depth_n[b] = c[0], r->pk_depth_exact[b] = c[1] / m, r->pk_depth_digit[b] = c[2] / m;
    }
}

/* Add one batch's per-token losses (host copies) to the position buckets t: tokens, NLL */
static void bucket_tally(const real *loss, const int32_t *tgt, int filled, int N, int bucket, double *t) {
    for (int w = 0; w < filled; w++)
        for (int i = 0; i < N; i++) {
            size_t j = (size_t)w * N + i;
            if (tgt[j] < 0) continue;
            double *c = t + 2 * (size_t)(i / bucket);
            c[0] += 1, c[1] += loss[j];
        }
}

static void recall_result(EvalResult *r, const double *t, int Q, int Qc) {
    r->queries = Q;
    r->base_freq = t[0] > 0 ? t[1] / t[0] : 0;
    r->base_unans = t[0] > 0 ? t[2] / t[0] : 0;
    for (int q = 0; q < Qc; q++) {
        const double *c = t + 3 + 4 * (size_t)q;
        double n = c[0] > 0 ? c[0] : 1;
        r->query_acc[q] = c[1] / n, r->query_freq[q] = c[2] / n, r->query_unans[q] = c[3] / n;
    }
}

int evaluate(Model *m, const LmData *d, int s, int B, int N, long max_batches, EvalResult *r) {
    return evaluate_buckets(m, d, s, B, N, max_batches, 0, r);
}

int evaluate_buckets(Model *m, const LmData *d, int s, int B, int N, long max_batches, int bucket, EvalResult *r) {
    memset(r, 0, sizeof *r);
    if (!d->have[s]) return gma_errorf("no %s split in this data", s == SPLIT_VALID ? "valid" : s == SPLIT_TEST ? "test" : "train");
    int32_t *tok = xmalloc(sizeof(int32_t) * B * N), *tgt = xmalloc(sizeof(int32_t) * B * N);
    double nll = 0, count = 0, correct = 0;
    long nb = (lmdata_eval_windows(d, s, N) + B - 1) / B;
    if (max_batches > 0 && max_batches < nb) nb = max_batches;
    /* per-batch sums (loss, count, correct, windows, then the recall tallies), added up in
     * batch order; with R
     * data-parallel ranks rank r evaluates batches r, r+R, ... and the tables are summed */
    const RecallTask *rt = lmdata_task(d, DATA_recall);
    const PasskeyTask *pk = lmdata_task(d, DATA_passkey);
    int Q = rt ? rt->queries : 0, Qc = GMA_MIN(Q, RECALL_EVAL_Q);
    int nbk = bucket > 0 ? GMA_DIV_UP(N, bucket) : 0;
    if (nbk > EVAL_MAX_BUCKETS) return gma_errorf("%d position buckets of %d tokens in a window of %d: more than %d", nbk, bucket, N,
                                                 EVAL_MAX_BUCKETS);
    size_t WR = 7 + 4 * (size_t)Qc, WP = pk ? 3 + 3 * PASSKEY_DEPTH_BUCKETS : 0, W = WR + WP + 2 * (size_t)nbk;
    double *per = xcalloc((size_t)nb * W + 1, sizeof(double));
    real *loss = nbk ? xmalloc(sizeof(real) * (size_t)B * N) : NULL;
    int rc = 0;
    for (long b = 0; b < nb; b++) {
        if (!dist_owns(b)) continue;
        int filled = lmdata_eval_batch(d, s, b, B, N, tok, tgt);
        if (!filled) break;
        LossStats st;
        if ((rc = model_forward(m, tok, tgt, B, N, NULL, 1, &st, 0, 0)) != 0) break;
        double *e = per + (size_t)b * W;
        e[0] = st.loss_sum, e[1] = st.count, e[2] = st.correct, e[3] = filled;
        if (Q) recall_tally(rt, tok, tgt, m->pred_host, filled, N, Qc, e + 4);
        if (WP) passkey_tally(pk, tok, tgt, m->pred_host, filled, N, e + WR);
        if (nbk) {
            g_ops->to_host(loss, m->loss_rows, sizeof(real) * (size_t)B * N);
            bucket_tally(loss, tgt, filled, N, bucket, e + WR + WP);
        }
    }
    free(loss);
    free(tok);
    free(tgt);
    if (dist_sum_table(per, (size_t)nb * W, rc != 0) && rc == 0) rc = gma_errorf("evaluation failed on another rank");
    double *sum = xcalloc(W, sizeof(double));
    r->bad_window = -1;
    for (long b = 0; b < nb; b++) {
        if (r->bad_window < 0 && !isfinite(per[(size_t)b * W])) r->bad_window = b * B;
        for (size_t j = 0; j < W; j++) sum[j] += per[(size_t)b * W + j];
    }
    nll = sum[0], count = sum[1], correct = sum[2], r->windows = (long)sum[3];
    if (Q) recall_result(r, sum + 4, Q, Qc);
    if (WP) passkey_result(r, sum + WR);
    r->bucket = bucket, r->n_buckets = nbk, r->window = N;
    for (int i = 0; i < nbk; i++) {
        double n = sum[WR + WP + 2 * i];
        r->bucket_tokens[i] = n, r->bucket_loss[i] = n > 0 ? sum[WR + WP + 2 * i + 1] / n : 0;
    }
    free(sum);
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
