/* run_task.h: what differs between training a language model and a classifier (data,
 * micro-batches, forward, evaluation) behind one small interface; the run (run.h) is
 * the same for both. */
#ifndef GMA_RUN_TASK_H
#define GMA_RUN_TASK_H
#include "core/config.h"
#include "data/lm/lmdata.h"
#include "model/model.h"
#include "train/cls_task.h"
#include "train/evaluate.h"

typedef struct Task Task;
struct Task {
    int have[3];
    int report_acc; /* accuracy is a figure of merit (recall, classifiers) */
    int classify;
    /* draw training micro-batch k and run the training forward; *tokens: tokens in it */
    int (*train_forward)(Task *t, Model *m, Rng *rng, long k, long step, LossStats *st, double *tokens);
    /* k-means initialisation (docs/model.md §5) on the batch of the last train_forward */
    int (*kmeans)(Task *t, Model *m, Rng *krng);
    /* the training forward of the last train_forward's batch again (st refilled) */
    int (*reforward)(Task *t, Model *m, long step, LossStats *st);
    /* evaluate split s (max_batches 0 = all) */
    int (*eval)(Task *t, Model *m, int s, long max_batches, EvalResult *r);
    void (*close)(Task *t);
    int B, N;
    int B_global, first; /* data parallel: this rank's rows [first, first+B) of B_global */
    int cls_N; /* padded length of the last classifier batch */
    int32_t *tok, *tgt;
    LmData lm;
    ClsTask cls;
};

/* Open the data of cfg (and fill the model keys the data decides: vocabulary, n_seq,
 * data.max_len). On failure nothing is left open. quiet: no truncation warnings. */
int task_open(Task *t, Config *cfg, int quiet);
/* A classifier's evaluation as an EvalResult (tokens and windows count examples). */
void task_cls_result(const ClsEval *e, EvalResult *r);
#endif
