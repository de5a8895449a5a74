/* trainer.h: the training loop behind gmatrain: data, model, optimiser, logging,
 * evaluation, checkpoints, signals and resume. */
#ifndef GMA_TRAINER_H
#define GMA_TRAINER_H
#include "core/config.h"

typedef struct TrainerOptions {
    const char *run_dir;     /* where config.json, metrics.jsonl, checkpoints go */
    const char *resume_dir;  /* checkpoint (or run dir) to resume from, NULL = fresh */
    int progress_tty;        /* 1: one updating progress line; 0: plain periodic lines */
    int quiet;
} TrainerOptions;

/* Exit codes of trainer_run (and gmatrain). */
enum { TRAIN_OK = 0, TRAIN_ERROR = 1, TRAIN_BAD_INPUT = 2, TRAIN_NONFINITE = 3, TRAIN_COLLAPSE = 4, TRAIN_INTERRUPTED = 130 };

/* Run training to cfg->train.steps, then evaluate the final model and write the summary.
 * Errors are reported through gma_error(); a final evaluation or a run file (config.json,
 * summary.json) that fails is an error (TRAIN_ERROR). The stages: run.h. */
int trainer_run(const Config *cfg, const TrainerOptions *o);
#endif
