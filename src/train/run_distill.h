/* run_distill.h: the teacher of knowledge distillation (train.distill): how it is resolved,
 * built, run, recorded in RUN/distill.json, and what a resume refuses: docs/migration.md.
 * The teacher is planned for the student's batches (its head's chunks as many rows as the
 * student's) and loaded from model.safetensors; no gradient reaches it. A refused resume
 * keeps the student distilling from the weights it started with, or not at all; a run made
 * before the record was kept resumes with a warning and records the teacher found. */
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
