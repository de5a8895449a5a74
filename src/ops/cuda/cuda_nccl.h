/* cuda_nccl.h: NCCL collectives on device buffers, for data-parallel training with the
 * CUDA backend (src/train/dist.c calls these; docs/distributed.md). Compiled only into
 * the `make cuda-mpi` build when NCCL is found (GMA_NCCL); dist.c bootstraps the
 * communicator over MPI: rank 0 makes the unique id, MPI broadcasts it, every rank
 * calls cuda_nccl_init. All return 0, or -1 with a one-line message in gma_error(). */
#ifndef GMA_CUDA_NCCL_H
#define GMA_CUDA_NCCL_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
/* bytes of an ncclUniqueId */
size_t cuda_nccl_id_bytes(void);
int cuda_nccl_get_id(void *id);
/* join the communicator of `nranks` ranks as `rank` on the current device */
int cuda_nccl_init(const void *id, int nranks, int rank);
/* "<PCI bus id>" of the current device (two ranks on one GPU cannot share NCCL) */
int cuda_nccl_device_key(char *out, size_t cap);
/* in-place sum over ranks / copy of root's values, float32 device buffers; both wait for
 * the stream, so a failure is reported here */
int cuda_nccl_sum(float *x, size_t n);
int cuda_nccl_bcast(float *x, size_t n, int root);
void cuda_nccl_finalize(void);
#ifdef __cplusplus
}
#endif
#endif
