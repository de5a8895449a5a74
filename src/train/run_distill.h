/* run_distill.h: the teacher of knowledge distillation (train.distill, docs/migration.md).
 *
 * train.distill.teacher names a run folder or checkpoint, resolved as --init-from resolves
 * it; the teacher is built from its own config.json on the same backend, planned for the
 * student's batches (its head's chunks as many rows as the student's, so no more than one
 * chunk of logits of each model exists at a time) and loaded from model.safetensors; its
 * vocabulary must be the student's. Every data-parallel rank loads it and distils its own
 * slice of the batch. No gradient reaches it.
 *
 * The teacher a run distils from is recorded in RUN/distill.json ("teacher": the
 * checkpoint folder it resolved to, its step and the SHA-256 of its model.safetensors). A
 * resume resolves train.distill.teacher again and refuses, in one line naming both, a
 * teacher of another step or digest (a teacher run trained on since: its `latest` moved):
 * the student goes on distilling from the weights it started with, or not at all. A run
 * made before the record was kept is resumed with a warning, and the teacher found is
 * recorded. */
#ifndef GMA_RUN_DISTILL_H
#define GMA_RUN_DISTILL_H
#include "model/model.h"

typedef struct DistillId {
    char ckpt[2048]; /* the checkpoint folder train.distill.teacher resolved to (its real path) */
    long step;       /* the step in its model.safetensors' metadata (-1: none) */
    char sha[65];    /* SHA-256 of its model.safetensors, hex */
} DistillId;

/* Build and load the teacher of cfg (train.distill.teacher non-empty) into *t, attach it
 * to the student s (allocated already) and fill *id. 0, or -1 with gma_error naming the
 * teacher's folder and what does not fit. */
int distill_open(Model *s, const Config *cfg, Model *t, DistillId *id, int quiet);
/* A resume of the run in run_dir: the teacher RUN/distill.json records against id. 0 when
 * they are the same teacher (step and digest), or when nothing is recorded (a warning
 * unless quiet); -1 with gma_error naming both. */
int distill_check(const char *run_dir, const DistillId *id, int quiet);
/* Write RUN/distill.json for id. 0, or -1 with gma_error. */
int distill_record(const char *run_dir, const DistillId *id);
#endif
