/* cuda_common.cuh: what every CUDA op file shares: the checked-call macros, the cuBLAS
 * handle, launch helpers, deterministic block reductions, work buffers and the row-major
 * GEMM wrappers. The CUDA build is float32 only (`real` = float).
 *
 * Errors: a failing CUDA or cuBLAS call, or a failing kernel launch, is a fault of the
 * device or of this code, never of user input, so it prints one line
 *   gma: CUDA error at FILE:LINE: <call>: <message>
 * and exits the process with status 1. Set GMA_CUDA_SYNC=1 to synchronise after every
 * kernel launch, so that an asynchronous fault is reported at the launch that caused it. */
#ifndef GMA_CUDA_COMMON_CUH
#define GMA_CUDA_COMMON_CUH

#ifdef GMA_DOUBLE
#error "the CUDA backend is float32 only: do not build src/ops/cuda with GMA_DOUBLE"
#endif

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/cuda/cuda.h"

/* ---- checked calls ---- */
void cuda_fail(const char *file, int line, const char *call, const char *msg);
const char *cublas_status_name(cublasStatus_t s);
extern int g_cuda_sync_launches; /* GMA_CUDA_SYNC */

#define CUDA_CHECK(call)                                                              \
    do {                                                                              \
        cudaError_t err_ = (call);                                                    \
        if (err_ != cudaSuccess) cuda_fail(__FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
    } while (0)

#define CUBLAS_CHECK(call)                                                            \
    do {                                                                              \
        cublasStatus_t st_ = (call);                                                  \
        if (st_ != CUBLAS_STATUS_SUCCESS) cuda_fail(__FILE__, __LINE__, #call, cublas_status_name(st_)); \
    } while (0)

/* after every <<<...>>>: launch errors now, execution errors now when GMA_CUDA_SYNC=1 */
#define KERNEL_CHECK(name)                                                            \
    do {                                                                              \
        cudaError_t err_ = cudaGetLastError();                                        \
        if (err_ == cudaSuccess && g_cuda_sync_launches) err_ = cudaDeviceSynchronize(); \
        if (err_ != cudaSuccess) cuda_fail(__FILE__, __LINE__, "launch " name, cudaGetErrorString(err_)); \
    } while (0)

/* ---- shared state (cuda_core.cu) ---- */
extern cublasHandle_t g_cublas;
enum CudaPrecision { PREC_FP32, PREC_TF32, PREC_BF16 };
extern int g_cuda_prec;

/* Work buffer `slot` (0..CUDA_WS_SLOTS-1) of at least `bytes`, grown on demand and kept.
 * Slots are used only inside one op call; ops are stream-ordered, so a slot can be reused
 * by the next op. */
#define CUDA_WS_SLOTS 12
#define WS_COLSUM 9 /* cuda_colsum_acc and the layernorm dw/db partials; 10, 11: bf16 operand copies */
void *cuda_ws(int slot, size_t bytes);
static inline float *ws_f(int slot, size_t n) { return (float *)cuda_ws(slot, n * sizeof(float)); }

/* row-major C[M,N] = alpha op(A) op(B) + beta C in fp32 (tf32 when that mode is on) */
void cuda_gemm(float *C, const float *A, const float *B, int M, int N, int K, int ta, int tb, float alpha, float beta);
void cuda_gemm_strided(float *C, const float *A, const float *B, int M, int N, int K, int ta, int tb, float alpha,
                       float beta, int batch, long long sA, long long sB, long long sC);

/* out[c] += sum_r X[r,c], deterministic (uses work slot WS_COLSUM) */
void cuda_colsum_acc(float *out, const float *X, int R, int C);

/* ---- launch helpers ---- */
#define TPB 256
static inline int grid_for(size_t n, int tpb = TPB) {
    size_t g = (n + tpb - 1) / tpb;
    if (g > 65535u * 8u) g = 65535u * 8u; /* kernels use grid-stride loops */
    return (int)(g ? g : 1);
}
#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)blockDim.x * gridDim.x)

/* ---- deterministic reductions (fixed shuffle tree, fixed order of warps) ---- */
template <class T> __device__ __forceinline__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
/* every thread of the block gets the total; blockDim.x a multiple of 32, at most 1024;
 * `sh` holds 32 values of T */
template <class T> __device__ T block_sum(T v, T *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    T t = 0;
    for (int i = 0; i < nw; i++) t += sh[i];
    return t;
}
__device__ inline float block_max(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    float t = -INFINITY;
    for (int i = 0; i < nw; i++) t = fmaxf(t, sh[i]);
    return t;
}

#endif
