/* dist.h: data-parallel training across processes (docs/distributed.md).
 *
 * Built with -DGMA_MPI (make mpi, make cuda-mpi), these wrap MPI on MPI_COMM_WORLD; otherwise (the
 * default build, and any program that never calls dist_init) they are single-process
 * no-ops: rank 0 of 1, reductions leave the buffer as it is. Only src/train/dist.c may
 * test GMA_MPI, so the rest of the library is the same object code in both builds.
 *
 * Every function here except dist_rank/dist_size/dist_abort/dist_enabled is collective:
 * all ranks must call it, in the same order, with the same sizes. Buffers are host
 * memory unless the name says _backend (those stage through the host when the active
 * backend's memory is not host memory, e.g. CUDA), or go through NCCL in a `make cuda-mpi`
 * build with NCCL (GMA_NCCL) when every rank has a GPU of its own. */
#ifndef GMA_DIST_H
#define GMA_DIST_H
#include <stddef.h>
#include <stdint.h>

#include "core/common.h"

/* 1 in a build with MPI (GMA_MPI), else 0. */
int dist_enabled(void);
/* Initialise MPI (a no-op without GMA_MPI). Returns 0, or -1 with gma_error. */
int dist_init(int *argc, char ***argv);
/* Finalise MPI if dist_init started it. */
void dist_finalize(void);
int dist_rank(void); /* 0 when not initialised */
int dist_size(void); /* 1 when not initialised */
/* rank and number of ranks on this machine (MPI_COMM_TYPE_SHARED): the CUDA backend takes
 * GPU dist_local_rank() mod the GPU count unless GMA_CUDA_DEVICE says otherwise */
int dist_local_rank(void);
int dist_local_size(void);
/* Terminate every rank with this exit code (MPI_Abort); exit(code) in a single process. */
_Noreturn void dist_abort(int code);
void dist_barrier(void);

/* In-place sums over ranks. */
void dist_sum_real(real *x, size_t n);
void dist_sum_double(double *x, size_t n);
/* A loop shared out over ranks: item k belongs to rank k mod R (every item with one rank). */
int dist_owns(long k);
/* Each rank fills the rows of a zeroed table [n] that its items own; this sums the tables
 * over ranks in place (so the caller adds rows up in item order, as one process does) and
 * returns 1 when `failed` is set on any rank. */
int dist_sum_table(double *table, size_t n, int failed);
/* Largest / smallest value over ranks. */
int dist_max_int(int v);
int dist_min_int(int v);
/* 1 when v is the same on every rank. */
int dist_same_u64(uint64_t v);
/* Copy root's bytes to every rank. */
void dist_bcast(void *buf, size_t bytes, int root);
/* The n rows of d reals (host memory) of every rank, rank 0's first, in a new buffer on
 * every rank; *n_all is their number (a copy of x in one process). */
real *dist_allgather_rows(const real *x, int n, int d, int *n_all);
/* The same with the signature of a mixer's gather callback (MixerGatherFn in
 * nn/mixers/mixer.h; ctx unused): the trainer sets Model.gather to it. */
real *dist_gather_rows_cb(const real *x, int n, int d, int *n_all, void *ctx);

/* The same on buffers in the active backend's memory (n reals). */
void dist_sum_real_backend(real *x, size_t n);
void dist_bcast_real_backend(real *x, size_t n, int root);
/* How the two above move data: "MPI" (CPU backend), "MPI through host memory" or "NCCL",
 * chosen (collectively, setting up NCCL) at the first call of either; before that
 * "not chosen yet". Not collective. */
const char *dist_transport(void);

/* Collective agreement on a status (0 = fine, > 0 an exit code whose message is in
 * gma_error()): returns the largest status over ranks. When some rank failed, the
 * lowest failing rank becomes the one that reports (dist_reports() is 1 there and 0
 * elsewhere) and its message is prefixed with "rank R: " when R > 0; when all ranks
 * agree it is rank 0. */
int dist_agree(int status);
/* 1 on the rank that should print run-wide messages and errors (rank 0 unless
 * dist_agree chose another). */
int dist_reports(void);
#endif
