/* cls_task.h: classification data for the trainer and gmaeval: the splits of a ClsDataset
 * task (data.source "cls"), batches padded with 0 to the longest sequence of the batch (to
 * max_len with data.pad_full), the training order (a permutation per epoch derived from (seed, epoch), so micro-batch
 * k is a pure function of k and resume is exact), and evaluation (loss and accuracy). */
#ifndef GMA_CLS_TASK_H
#define GMA_CLS_TASK_H
#include <stdio.h>

#include "core/config.h"
#include "data/cls/clsdata.h"
#include "data/lm/lmdata.h"
#include "model/checkpoint.h"
#include "model/model.h"

typedef struct ClsTask {
    ClsDataset split[3];
    int have[3];
    int test_shares_valid; /* split[2] is a copy of split[1]'s handle (text with data.text_valid "test") */
    int n_seq, n_classes, max_len;
    uint32_t vocab;
    uint64_t seed;
    int B;           /* examples per batch (buffers) */
    int drop_last;   /* evaluation: whole batches of B only (train.eval_drop_last) */
    int pad_full;    /* batches padded to max_len (data.pad_full) */
    int *perm;       /* training order of epoch perm_epoch */
    long perm_epoch;
    int *idx;        /* [B] examples of the current batch */
    int32_t *tok;    /* [B*n_seq*max_len] */
    int32_t *lab;    /* [B] */
} ClsTask;

typedef struct ClsEval {
    double loss;     /* mean cross-entropy per example */
    double acc;      /* share of examples classified correctly */
    long examples;
} ClsEval;

/* data.task, truncate, text_valid, strip_headers (installed by config_register_all) */
extern const CfgSection clstask_cfg_section;
/* The sequence length a config allows: data.max_len, or train.seq_len less the CLS slot. */
int clstask_max_len(const Config *c);
/* Load the splits in `splits` (bit 1 << SPLIT_*) of the config's task; each one asked for
 * must exist and hold examples. Truncation counts
 * are reported as one warning line each on `warn` (NULL = silent). B: examples per batch. */
int clstask_open(ClsTask *t, const Config *c, unsigned splits, int B, FILE *warn);
void clstask_close(ClsTask *t);
/* Fill t->tok/t->lab with training micro-batch k (B examples in the epoch order);
 * returns the padded length N. */
int clstask_train_batch(ClsTask *t, long k);
/* Examples [first, first+B) of training micro-batch k of B_global examples (a
 * data-parallel rank's slice; B = t->B). clstask_train_batch(t, k) is (k, B, 0). */
int clstask_train_batch_part(ClsTask *t, long k, int B_global, int first);
/* Fill t->tok/t->lab with examples idx[0..nb) of split s; returns the padded length N. */
int clstask_fill(ClsTask *t, int s, const int *idx, int nb);
/* Evaluate split s in order (max_batches 0 = all; with t->drop_last the last, partial batch
 * is left out, and a split smaller than one batch is an error). Under data-parallel training
 * every rank calls it and the batches are shared out (dist.h); the result is the same. */
int clstask_evaluate(ClsTask *t, Model *m, int s, long max_batches, ClsEval *r);

/* LRA model selection while training (docs/lra.md): the checkpoint with the best
 * validation accuracy is kept as RUN/best, and the number LRA reports is the test
 * accuracy of that checkpoint. Both are collective under data-parallel training. */
/* After a validation accuracy `acc` at ts->step: when it beats ts->best_acc, record it
 * in ts and write RUN/best (rank 0 writes; a line on stderr unless quiet). 0, or
 * TRAIN_ERROR. */
int clstask_keep_best(const Model *m, TrainState *ts, const char *run_dir, double acc, int quiet);
/* At the end of training: *have_best is 1 when this run kept RUN/best (rank 0's answer,
 * on every rank). Then, when the data has a test split, the best checkpoint is loaded
 * into m (rank 0 reads it, every rank takes its parameters) and the test split is
 * evaluated into *r: returns 1. Returns 0 when there is nothing to evaluate, -1 with
 * gma_error when the checkpoint cannot be loaded or the evaluation fails. */
int clstask_test_at_best(ClsTask *t, Model *m, const TrainState *ts, const char *run_dir, int *have_best, ClsEval *r);
#endif
