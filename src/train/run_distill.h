/* run_distill.h: the teacher of knowledge distillation (train.distill, docs/migration.md).
 *
 * train.distill.teacher names a run folder or checkpoint, resolved as --init-from resolves
 * it; the teacher is built from its own config.json on the same backend, planned for the
 * student's batches (its head's chunks as many rows as the student's, so no more than one
 * chunk of logits of each model exists at a time) and loaded from model.safetensors; its
 * vocabulary must be the student's. Every data-parallel rank loads it and distils its own
 * slice of the batch. No gradient reaches it. */
#ifndef GMA_RUN_DISTILL_H
#define GMA_RUN_DISTILL_H
#include "model/model.h"

/* Build and load the teacher of cfg (train.distill.teacher non-empty) into *t and attach
 * it to the student s (allocated already). 0, or -1 with gma_error naming the teacher's
 * folder and what does not fit. */
int distill_open(Model *s, const Config *cfg, Model *t, int quiet);
#endif
