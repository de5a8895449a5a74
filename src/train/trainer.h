/* trainer.h: the training loop behind gmatrain: data, model, optimiser, logging,
 * evaluation, checkpoints, signals and resume. */
#ifndef GMA_TRAINER_H
#define GMA_TRAINER_H
#include "core/config.h"
#include "train/train_opts.h"

/* Run training to cfg->train.steps, then evaluate the final model and write the summary.
 * Errors are reported through gma_error(); a final evaluation or a run file (config.json,
 * summary.json) that fails is an error (TRAIN_ERROR). The stages: run.h. */
int trainer_run(const Config *cfg, const TrainerOptions *o);
#endif
