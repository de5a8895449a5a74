/* run_dist.h: what a training run does about its data-parallel replicas (dist.h,
 * docs/distributed.md). With one rank each of these is a no-op or a plain call. */
#ifndef GMA_RUN_DIST_H
#define GMA_RUN_DIST_H
#include "model/checkpoint.h"
#include "model/model.h"

/* An error on one rank in the middle of training, while the others wait in a collective:
 * print it and end the whole job. With one rank the code is returned. */
int run_fatal(int rc);
/* Checkpoint (rank 0 writes; see ckpt_save). With several ranks, first check that every
 * rank holds the same parameters bit for bit (else the job stops: replicas diverged).
 * Collective. 0, or TRAIN_ERROR. */
int run_save_ckpt(const Model *m, const TrainState *ts, const char *run_dir, int keep, const char *tag);
/* Average over ranks the buffers each rank updates from its own batch. Collective. */
void sync_buffers(Model *m);
/* Every rank takes rank 0's parameters (buffers included) and, when `moments`, its
 * optimiser moments. Collective. */
void run_bcast_model(Model *m, int moments);
#endif
