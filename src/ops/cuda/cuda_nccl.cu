/* cuda_nccl.cu: NCCL all-reduce and broadcast on device buffers (cuda_nccl.h). The whole
 * file is empty unless GMA_NCCL is defined: `make cuda` compiles it to nothing and
 * `make cuda-mpi` compiles it again with -DGMA_NCCL when nccl.h is found. The collectives
 * run on the default stream, after the kernels that wrote the buffer and before those
 * that read it, and then wait for it (once per step: the cost is the all-reduce itself). */
#ifdef GMA_NCCL
#include <stdio.h>
#include <string.h>

#include "ops/cuda/cuda_common.cuh"
#include "ops/cuda/cuda_nccl.h"
#include <nccl.h> /* after cuda_common.cuh: the CPU emulation's nccl.h builds on its runtime */

static ncclComm_t g_comm;
static int g_live;

static int nccl_failed(const char *call, ncclResult_t r) {
    return gma_errorf("NCCL: %s: %s (%s)", call, ncclGetErrorString(r),
                      r == ncclInvalidUsage ? "invalid usage, e.g. two ranks on one GPU" : "see NCCL_DEBUG=WARN");
}
#define NCCL_TRY(call)                                          \
    do {                                                        \
        ncclResult_t r_ = (call);                               \
        if (r_ != ncclSuccess) return nccl_failed(#call, r_);   \
    } while (0)

/* the stream's status after a collective: a CUDA fault is this code's or the device's */
static int wait_stream(const char *what) {
    cudaError_t e = cudaStreamSynchronize(0);
    if (e != cudaSuccess) return gma_errorf("NCCL: %s: %s", what, cudaGetErrorString(e));
    ncclResult_t a = ncclSuccess;
    NCCL_TRY(ncclCommGetAsyncError(g_comm, &a));
    if (a != ncclSuccess) return nccl_failed(what, a);
    return 0;
}

extern "C" size_t cuda_nccl_id_bytes(void) { return sizeof(ncclUniqueId); }

extern "C" int cuda_nccl_get_id(void *id) {
    ncclUniqueId u;
    NCCL_TRY(ncclGetUniqueId(&u));
    memcpy(id, &u, sizeof u);
    return 0;
}

extern "C" int cuda_nccl_init(const void *id, int nranks, int rank) {
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    NCCL_TRY(ncclCommInitRank(&g_comm, nranks, u, rank));
    g_live = 1;
    return 0;
}

extern "C" int cuda_nccl_device_key(char *out, size_t cap) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetPCIBusId(out, (int)cap, dev);
    if (e != cudaSuccess) return gma_errorf("cudaDeviceGetPCIBusId: %s", cudaGetErrorString(e));
    return 0;
}

extern "C" int cuda_nccl_sum(float *x, size_t n) {
    NCCL_TRY(ncclAllReduce(x, x, n, ncclFloat, ncclSum, g_comm, 0));
    return wait_stream("ncclAllReduce");
}

extern "C" int cuda_nccl_bcast(float *x, size_t n, int root) {
    NCCL_TRY(ncclBroadcast(x, x, n, ncclFloat, root, g_comm, 0));
    return wait_stream("ncclBroadcast");
}

extern "C" void cuda_nccl_finalize(void) {
    if (g_live) ncclCommDestroy(g_comm);
    g_live = 0;
}
#endif
