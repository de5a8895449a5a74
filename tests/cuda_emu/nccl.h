/* nccl.h (emulation): the NCCL calls of src/ops/cuda/cuda_nccl.cu over MPI, for the
 * emulated `cuda-mpi` binaries (scripts/cuda_emu_check.sh mpi). Each rank is a process with
 * its own emulated device (emu_cuda.h; EMU_DEVICES=n gives n device ids). What real NCCL
 * would refuse or hang on is refused here with ncclInvalidUsage/ncclInvalidArgument:
 * ranks joining with different ids or counts, two ranks on one device, a collective on
 * memory that is not device memory or too short, a type other than float, an op other
 * than sum, a communicator used before init or after destroy. */
#pragma once
#define OMPI_SKIP_MPICXX 1 /* the C API only: no MPI C++ bindings to link */
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <unistd.h>

typedef enum { ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
               ncclInvalidArgument = 4, ncclInvalidUsage = 5 } ncclResult_t;
typedef enum { ncclFloat32 = 7, ncclFloat = 7 } ncclDataType_t;
typedef enum { ncclSum = 0 } ncclRedOp_t;
typedef struct { char internal[128]; } ncclUniqueId;
struct EmuNcclComm { MPI_Comm comm; int rank, n, dev, live; };
typedef EmuNcclComm *ncclComm_t;

inline const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (emulated NCCL)";
    case ncclInvalidUsage: return "invalid usage (emulated NCCL)";
    default: return "emulated NCCL error";
    }
}
inline ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    static int calls;
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "emu-nccl %d %d", (int)getpid(), ++calls);
    return ncclSuccess;
}
/* 1 when v is the same on every rank of c */
inline int emu_nccl_same(MPI_Comm c, const void *v, int bytes) {
    int n = 0;
    MPI_Comm_size(c, &n);
    std::vector<char> all((size_t)n * bytes);
    MPI_Allgather(v, bytes, MPI_BYTE, all.data(), bytes, MPI_BYTE, c);
    for (int i = 1; i < n; i++)
        if (memcmp(all.data(), all.data() + (size_t)i * bytes, bytes)) return 0;
    return 1;
}
inline ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
    int wn = 0, wr = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &wn);
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    /* the emulation's communicator is MPI_COMM_WORLD: the ranks must be numbered alike */
    if (nranks != wn || rank != wr) return ncclInvalidArgument;
    int bad = !emu_nccl_same(MPI_COMM_WORLD, &id, (int)sizeof id);
    std::vector<int> devs(wn);
    MPI_Allgather(&g_emu_dev, 1, MPI_INT, devs.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < wn; i++)
        for (int j = i + 1; j < wn; j++) bad |= devs[i] == devs[j]; /* NCCL: "Duplicate GPU detected" */
    if (bad) return ncclInvalidUsage;
    EmuNcclComm *c = new EmuNcclComm{MPI_COMM_NULL, rank, nranks, g_emu_dev, 1};
    MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
    *out = c;
    return ncclSuccess;
}
inline ncclResult_t emu_nccl_check(ncclComm_t c, const void *a, const void *b, size_t count, ncclDataType_t t, const char *what) {
    if (!c || !c->live || c->dev != g_emu_dev) return ncclInvalidUsage;
    if (t != ncclFloat || count > ((size_t)1 << 40)) return ncclInvalidArgument;
    emu_need_dev(a, count * sizeof(float), what, "sendbuff");
    emu_need_dev(b, count * sizeof(float), what, "recvbuff");
    return ncclSuccess;
}
inline ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t c,
                                  cudaStream_t) {
    ncclResult_t e = emu_nccl_check(c, s, r, count, t, "ncclAllReduce");
    if (e != ncclSuccess || op != ncclSum) return e != ncclSuccess ? e : ncclInvalidArgument;
    EmuDevScope g("ncclAllReduce");
    for (size_t o = 0; o < count; o += (size_t)1 << 28) {
        int k = (int)std::min(count - o, (size_t)1 << 28);
        MPI_Allreduce(s == r ? MPI_IN_PLACE : (const float *)s + o, (float *)r + o, k, MPI_FLOAT, MPI_SUM, c->comm);
    }
    return ncclSuccess;
}
inline ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t t, int root, ncclComm_t c, cudaStream_t) {
    ncclResult_t e = emu_nccl_check(c, c && c->rank == root ? s : r, r, count, t, "ncclBroadcast");
    if (e != ncclSuccess || root < 0 || root >= c->n) return e != ncclSuccess ? e : ncclInvalidArgument;
    EmuDevScope g("ncclBroadcast");
    if (c->rank == root && s != r) memmove(r, s, count * sizeof(float));
    for (size_t o = 0; o < count; o += (size_t)1 << 28)
        MPI_Bcast((float *)r + o, (int)std::min(count - o, (size_t)1 << 28), MPI_FLOAT, root, c->comm);
    return ncclSuccess;
}
inline ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *a) {
    *a = ncclSuccess;
    return c && c->live ? ncclSuccess : ncclInvalidUsage;
}
inline ncclResult_t ncclCommDestroy(ncclComm_t c) {
    if (!c || !c->live) return ncclInvalidUsage;
    MPI_Comm_free(&c->comm);
    c->live = 0;
    delete c;
    return ncclSuccess;
}
