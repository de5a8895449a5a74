/* emu_cuda.h: CPU shims for the CUDA runtime and cuBLAS calls of src/ops/cuda (used through
 * the emulated ops/cuda/cuda_common.cuh in this folder). "Device" memory is host memory, so
 * every copy is a memcpy and every call is synchronous; there is one fake device ("emu",
 * compute capability 9.0). cuBLAS is a plain column-major GEMM accumulating in double that
 * honours transposes, leading dimensions, alpha/beta (beta == 0 overwrites C, as cuBLAS),
 * strides and batch; the tf32 math mode and bf16 operands round the operands as the GPU
 * does (tf32: 10 mantissa bits, bf16: 7, round to nearest even). Streams are the default
 * stream only. */
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stddef.h>

/* ---- runtime ---- */
typedef int cudaError_t;
#define cudaSuccess 0
#define cudaErrorMemoryAllocation 2
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
typedef void *cudaStream_t;
#define cudaFuncAttributeMaxDynamicSharedMemorySize 0
struct cudaDeviceProp { char name[256]; int major, minor; size_t totalGlobalMem; int multiProcessorCount; };
inline cudaError_t cudaMalloc(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
template <class T> inline cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
inline cudaError_t cudaMallocHost(void **p, size_t n) { return cudaMalloc(p, n); }
template <class T> inline cudaError_t cudaMallocHost(T **p, size_t n) { return cudaMalloc((void **)p, n); }
inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaMemset(void *p, int v, size_t n) { memset(p, v, n); return cudaSuccess; }
inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t = 0) { memset(p, v, n); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int) { if (n && d != s) memmove(d, s, n); return cudaSuccess; }
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, int k, cudaStream_t = 0) { return cudaMemcpy(d, s, n, k); }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline const char *cudaGetErrorString(cudaError_t e) { return e ? "emulated error" : "no error"; }
inline const char *cudaGetErrorName(cudaError_t e) { return e ? "cudaErrorEmu" : "cudaSuccess"; }
inline cudaError_t cudaMemGetInfo(size_t *fr, size_t *tot) { *fr = *tot = (size_t)1 << 34; return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : 1; }
inline cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
    memset(p, 0, sizeof *p); strcpy(p->name, "emu"); p->major = 9; p->minor = 0; p->totalGlobalMem = (size_t)1 << 34;
    p->multiProcessorCount = 4; return cudaSuccess;
}
template <class K> inline cudaError_t cudaFuncSetAttribute(K, int, int) { return cudaSuccess; }

/* ---- bf16 (cuda_bf16.h) ---- */
struct __nv_bfloat16 { uint16_t bits; };
inline float emu_round_bits(float x, int mbits) { /* keep mbits mantissa bits, round to nearest even */
    if (!std::isfinite(x)) return x;
    uint32_t u; memcpy(&u, &x, 4); int drop = 23 - mbits;
    uint32_t half = 1u << (drop - 1), lsb = (u >> drop) & 1u;
    u = (u + half - 1 + lsb) & ~((1u << drop) - 1); memcpy(&x, &u, 4); return x;
}
inline __nv_bfloat16 __float2bfloat16_rn(float x) { x = emu_round_bits(x, 7); uint32_t u; memcpy(&u, &x, 4); return __nv_bfloat16{(uint16_t)(u >> 16)}; }
inline float __bfloat162float(__nv_bfloat16 b) { uint32_t u = (uint32_t)b.bits << 16; float x; memcpy(&x, &u, 4); return x; }

/* ---- cuBLAS ---- */
typedef enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_ALLOC_FAILED = 3,
               CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_ARCH_MISMATCH = 8, CUBLAS_STATUS_MAPPING_ERROR = 11,
               CUBLAS_STATUS_EXECUTION_FAILED = 13, CUBLAS_STATUS_INTERNAL_ERROR = 14, CUBLAS_STATUS_NOT_SUPPORTED = 15,
               CUBLAS_STATUS_LICENSE_ERROR = 16 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TENSOR_OP_MATH = 1, CUBLAS_PEDANTIC_MATH = 2, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
typedef enum { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 } cudaDataType;
typedef enum { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
struct EmuCublas { int math; int live; };
typedef EmuCublas *cublasHandle_t;
extern int g_emu_gemm_calls; /* cuBLAS GEMM calls so far (the drivers report it) */
inline cublasStatus_t cublasCreate(cublasHandle_t *h) { *h = new EmuCublas{CUBLAS_DEFAULT_MATH, 1}; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasDestroy(cublasHandle_t h) { if (!h || !h->live) return CUBLAS_STATUS_NOT_INITIALIZED; h->live = 0; delete h; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) { if (!h) return CUBLAS_STATUS_NOT_INITIALIZED; h->math = m; return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t) { return h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED; }
/* column-major C[m,n] = alpha op(A)[m,k] op(B)[k,n] + beta C, batch matrices at strides sA, sB, sC;
 * operand elements read through ld (element type T), rounded to `mbits` mantissa bits (23 = none) */
template <class TA, class TB>
inline cublasStatus_t emu_gemm(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n, int k, float alpha,
                               const TA *A, int lda, long long sA, const TB *B, int ldb, long long sB, float beta, float *C,
                               int ldc, long long sC, int batch, float (*rd)(TA), float (*rdb)(TB), int mbits) {
    if (!h || !h->live) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || oa == CUBLAS_OP_C || ob == CUBLAS_OP_C) return CUBLAS_STATUS_INVALID_VALUE;
    if (lda < (oa == CUBLAS_OP_N ? (m > 1 ? m : 1) : (k > 1 ? k : 1)) || ldb < (ob == CUBLAS_OP_N ? (k > 1 ? k : 1) : (n > 1 ? n : 1)) ||
        ldc < (m > 1 ? m : 1)) return CUBLAS_STATUS_INVALID_VALUE;
    g_emu_gemm_calls++;
    for (int b = 0; b < batch; b++) {
        const TA *Ab = A + b * sA; const TB *Bb = B + b * sB; float *Cb = C + b * sC;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double s = 0;
                for (int p = 0; p < k; p++) {
                    float a = rd(oa == CUBLAS_OP_N ? Ab[i + (size_t)p * lda] : Ab[p + (size_t)i * lda]);
                    float bb = rdb(ob == CUBLAS_OP_N ? Bb[p + (size_t)j * ldb] : Bb[j + (size_t)p * ldb]);
                    if (mbits < 23) a = emu_round_bits(a, mbits), bb = emu_round_bits(bb, mbits);
                    s += (double)a * bb;
                }
                float &c = Cb[i + (size_t)j * ldc];
                c = (float)(alpha * s + (beta == 0 ? 0.0 : (double)beta * c));
            }
    }
    return CUBLAS_STATUS_SUCCESS;
}
inline float emu_rd_f(float x) { return x; }
inline float emu_rd_bf(__nv_bfloat16 x) { return __bfloat162float(x); }
inline cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n, int k,
                                                const float *alpha, const float *A, int lda, long long sA, const float *B, int ldb,
                                                long long sB, const float *beta, float *C, int ldc, long long sC, int batch) {
    return emu_gemm(h, oa, ob, m, n, k, *alpha, A, lda, sA, B, ldb, sB, *beta, C, ldc, sC, batch, emu_rd_f, emu_rd_f,
                    h && h->math == CUBLAS_TF32_TENSOR_OP_MATH ? 10 : 23);
}
inline cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n, int k, const float *alpha,
                                  const float *A, int lda, const float *B, int ldb, const float *beta, float *C, int ldc) {
    return cublasSgemmStridedBatched(h, oa, ob, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
inline cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n, int k,
                                                 const void *alpha, const void *A, cudaDataType ta, int lda, long long sA,
                                                 const void *B, cudaDataType tb, int ldb, long long sB, const void *beta, void *C,
                                                 cudaDataType tc, int ldc, long long sC, int batch, cublasComputeType_t ct,
                                                 cublasGemmAlgo_t) {
    if (tc != CUDA_R_32F || ta != tb || ct != CUBLAS_COMPUTE_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    float al = *(const float *)alpha, be = *(const float *)beta;
    if (ta == CUDA_R_16BF)
        return emu_gemm(h, oa, ob, m, n, k, al, (const __nv_bfloat16 *)A, lda, sA, (const __nv_bfloat16 *)B, ldb, sB, be, (float *)C,
                        ldc, sC, batch, emu_rd_bf, emu_rd_bf, 23);
    if (ta == CUDA_R_32F)
        return emu_gemm(h, oa, ob, m, n, k, al, (const float *)A, lda, sA, (const float *)B, ldb, sB, be, (float *)C, ldc, sC,
                        batch, emu_rd_f, emu_rd_f, 23);
    return CUBLAS_STATUS_NOT_SUPPORTED;
}
inline cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t oa, cublasOperation_t ob, int m, int n, int k, const void *alpha,
                                   const void *A, cudaDataType ta, int lda, const void *B, cudaDataType tb, int ldb, const void *beta,
                                   void *C, cudaDataType tc, int ldc, cublasComputeType_t ct, cublasGemmAlgo_t al) {
    return cublasGemmStridedBatchedEx(h, oa, ob, m, n, k, alpha, A, ta, lda, 0, B, tb, ldb, 0, beta, C, tc, ldc, 0, 1, ct, al);
}
