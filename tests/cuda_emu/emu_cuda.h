/* emu_cuda.h: CPU shims for the CUDA runtime and cuBLAS calls of src/ops/cuda (used through
 * the emulated ops/cuda/cuda_common.cuh in this folder). "Device" memory is host memory, so
 * every copy is a memcpy and every call is synchronous; there is one fake device ("emu",
 * compute capability 9.0). cuBLAS is a column-major GEMM accumulating in double (through
 * the host BLAS's dgemm) that honours transposes, leading dimensions, alpha/beta (beta == 0
 * overwrites C, as cuBLAS), strides and batch; the tf32 math mode and bf16 operands round the operands as the GPU
 * does (tf32: 10 mantissa bits, bf16: 7, round to nearest even). Streams are the default
 * stream only.
 *
 * With EMU_DEVICE_MEMORY defined (the emulated CLI binaries; emu_core and emu_baselines hand
 * host arrays straight to the ops, so they run without it), "device" memory
 * is kept apart from the host: each cudaMalloc is its own mapping, placed so that it ends
 * (to 256 bytes) against a guard page, and it is readable only while a kernel, a cuBLAS
 * call or a cudaMemcpy/cudaMemset runs. Host code that reads or writes device memory, a
 * kernel that runs past the end of an allocation, a kernel argument or cuBLAS operand that
 * is not device memory, and a copy whose direction or extent does not match its pointers
 * all stop the program with one line naming the kernel or call (and a backtrace): the
 * faults that a CPU emulation would otherwise hide because every pointer is a host pointer.
 * Launch configurations are checked against the CUDA limits (1024 threads a block,
 * 65535 blocks in y and z, 48 KiB of dynamic shared memory unless the kernel opted in with
 * cudaFuncSetAttribute, at most 227 KiB). */
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <stddef.h>
#include <algorithm>
#include <map>
#include <vector>

/* ---- runtime ---- */
typedef int cudaError_t;
#define cudaSuccess 0
#define cudaErrorMemoryAllocation 2
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
typedef void *cudaStream_t;
#define cudaFuncAttributeMaxDynamicSharedMemorySize 0
struct cudaDeviceProp { char name[256]; int major, minor; size_t totalGlobalMem; int multiProcessorCount; };
#ifdef EMU_DEVICE_MEMORY
#include <execinfo.h>
#include <stdarg.h>
#include <map>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
struct EmuAlloc { char *map; size_t span; char *p; size_t n; }; /* span: data pages; guard page after */
inline std::map<uintptr_t, EmuAlloc> g_emu_allocs; /* by user pointer */
inline int g_emu_access;                            /* > 0 while device code runs */
inline const char *g_emu_what = "host code";        /* the kernel or call that runs */
[[noreturn]] inline void emu_die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "emu: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    void *bt[48];
    int n = backtrace(bt, 48);
    backtrace_symbols_fd(bt, n, 2);
    _exit(98);
}
inline const EmuAlloc *emu_find(const void *q) { /* the allocation holding q, one past its end included */
    uintptr_t u = (uintptr_t)q;
    auto it = g_emu_allocs.upper_bound(u);
    if (it == g_emu_allocs.begin()) return nullptr;
    --it;
    return u <= it->first + it->second.n ? &it->second : nullptr;
}
inline void emu_protect_all(int prot) {
    for (auto &kv : g_emu_allocs) mprotect(kv.second.map, kv.second.span, prot);
}
inline void emu_segv(int, siginfo_t *si, void *) {
    uintptr_t a = (uintptr_t)si->si_addr;
    for (auto &kv : g_emu_allocs) {
        const EmuAlloc &e = kv.second;
        uintptr_t m = (uintptr_t)e.map;
        if (a >= m + e.span && a < m + e.span + 4096)
            emu_die("%s: out-of-bounds access %zu bytes past the end of a %zu-byte device allocation", g_emu_what,
                    a - (uintptr_t)e.p - e.n, e.n);
        if (a >= m && a < m + e.span && !g_emu_access)
            emu_die("%s touched device memory (byte %zu of a %zu-byte allocation) outside a kernel or copy", g_emu_what,
                    a - (uintptr_t)e.p, e.n);
    }
    signal(SIGSEGV, SIG_DFL); /* not ours: fault again, as usual */
}
struct EmuDevScope { /* device memory readable while this lives */
    const char *prev;
    explicit EmuDevScope(const char *what) : prev(g_emu_what) {
        g_emu_what = what;
        if (g_emu_access++ == 0) emu_protect_all(PROT_READ | PROT_WRITE);
    }
    ~EmuDevScope() {
        if (--g_emu_access == 0) emu_protect_all(PROT_NONE);
        g_emu_what = prev;
    }
};
inline void emu_need_dev(const void *q, size_t bytes, const char *what, const char *arg) {
    if (!q) return;
    const EmuAlloc *e = emu_find(q);
    if (!e) emu_die("%s: %s (%p) is not device memory", what, arg, q);
    if ((const char *)q + bytes > e->p + e->n)
        emu_die("%s: %s extends %zu bytes past the end of a %zu-byte device allocation", what, arg,
                (size_t)((const char *)q + bytes - (e->p + e->n)), e->n);
}
inline void emu_need_host(const void *q, const char *what) {
    if (q && emu_find(q)) emu_die("%s: a host pointer was expected, got device memory", what);
}
inline cudaError_t cudaMalloc(void **p, size_t n) {
    static bool handler;
    if (!handler) {
        struct sigaction sa; memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = emu_segv; sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, nullptr);
        handler = true;
    }
    size_t n256 = ((n ? n : 1) + 255) / 256 * 256, span = (n256 + 4095) / 4096 * 4096;
    void *m = mmap(nullptr, span + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { *p = nullptr; return cudaErrorMemoryAllocation; }
    if (g_emu_access) mprotect(m, span, PROT_READ | PROT_WRITE);
    char *u = (char *)m + span - n256;
    g_emu_allocs[(uintptr_t)u] = EmuAlloc{(char *)m, span, u, n};
    *p = u;
    return cudaSuccess;
}
template <class T> inline cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
inline cudaError_t cudaMallocHost(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
template <class T> inline cudaError_t cudaMallocHost(T **p, size_t n) { return cudaMallocHost((void **)p, n); }
inline cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    auto it = g_emu_allocs.find((uintptr_t)p);
    if (it == g_emu_allocs.end()) emu_die("cudaFree: %p is not the start of a device allocation", p);
    munmap(it->second.map, it->second.span + 4096);
    g_emu_allocs.erase(it);
    return cudaSuccess;
}
inline cudaError_t cudaFreeHost(void *p) { emu_need_host(p, "cudaFreeHost"); free(p); return cudaSuccess; }
inline cudaError_t cudaMemset(void *p, int v, size_t n) {
    emu_need_dev(p, n, "cudaMemset", "the destination");
    EmuDevScope g("cudaMemset");
    memset(p, v, n);
    return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int k) {
    if (!n) return cudaSuccess;
    if (k == 1 || k == 3) emu_need_dev(d, n, "cudaMemcpy", "the destination"); else if (k == 2) emu_need_host(d, "cudaMemcpy (device to host) destination");
    if (k == 2 || k == 3) emu_need_dev(s, n, "cudaMemcpy", "the source"); else if (k == 1) emu_need_host(s, "cudaMemcpy (host to device) source");
    EmuDevScope g("cudaMemcpy");
    if (d != s) memmove(d, s, n);
    return cudaSuccess;
}
#else
inline cudaError_t cudaMalloc(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
template <class T> inline cudaError_t cudaMalloc(T **p, size_t n) { return cudaMalloc((void **)p, n); }
inline cudaError_t cudaMallocHost(void **p, size_t n) { return cudaMalloc(p, n); }
template <class T> inline cudaError_t cudaMallocHost(T **p, size_t n) { return cudaMalloc((void **)p, n); }
inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
inline cudaError_t cudaMemset(void *p, int v, size_t n) { memset(p, v, n); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int) { if (n && d != s) memmove(d, s, n); return cudaSuccess; }
struct EmuDevScope { explicit EmuDevScope(const char *) {} };
inline void emu_need_dev(const void *, size_t, const char *, const char *) {}
#endif
inline cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t = 0) { return cudaMemset(p, v, n); }
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, int k, cudaStream_t = 0) { return cudaMemcpy(d, s, n, k); }
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaMemGetInfo(size_t *fr, size_t *tot) { *fr = *tot = (size_t)1 << 34; return cudaSuccess; }
/* EMU_DEVICES=n pretends to have n devices (default 1), each with its own PCI bus id; they
 * share the emulated memory, which is per process anyway. EMU_DEVICES=0 is a machine with
 * the CUDA runtime but no GPU driver: cudaGetDeviceCount and cudaDeviceSynchronize fail
 * as they do there (cudaErrorInsufficientDriver). */
#define EMU_NO_DRIVER ((cudaError_t)35) /* cudaErrorInsufficientDriver */
inline int g_emu_dev;
inline int emu_devices() { const char *e = getenv("EMU_DEVICES"); int n = e && *e ? atoi(e) : 1; return n > 0 ? n : 0; }
inline cudaError_t cudaGetDeviceCount(int *n) { *n = emu_devices(); return *n ? cudaSuccess : EMU_NO_DRIVER; }
inline cudaError_t cudaDeviceSynchronize() { return emu_devices() ? cudaSuccess : EMU_NO_DRIVER; }
inline const char *cudaGetErrorString(cudaError_t e) {
    return e == EMU_NO_DRIVER ? "CUDA driver version is insufficient for CUDA runtime version" : e ? "emulated error" : "no error";
}
inline const char *cudaGetErrorName(cudaError_t e) {
    return e == EMU_NO_DRIVER ? "cudaErrorInsufficientDriver" : e ? "cudaErrorEmu" : "cudaSuccess";
}
inline cudaError_t cudaSetDevice(int d) { if (d < 0 || d >= emu_devices()) return 101; /* cudaErrorInvalidDevice */ g_emu_dev = d; return cudaSuccess; }
inline cudaError_t cudaGetDevice(int *d) { *d = g_emu_dev; return cudaSuccess; }
inline cudaError_t cudaDeviceGetPCIBusId(char *s, int len, int d) {
    if (d < 0 || d >= emu_devices()) return 101;
    snprintf(s, (size_t)len, "00000000:%02X:00.0", 0x10 + d);
    return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) {
    memset(p, 0, sizeof *p); strcpy(p->name, "emu"); p->major = 9; p->minor = 0; p->totalGlobalMem = (size_t)1 << 34;
    p->multiProcessorCount = 4; return cudaSuccess;
}
/* the dynamic shared memory a kernel opted into (emu_launch checks launches against it) */
inline std::map<void *, int> g_emu_shm_optin;
template <class K> inline cudaError_t cudaFuncSetAttribute(K k, int attr, int v) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize || v < 0 || v > 227 * 1024) return 1; /* cudaErrorInvalidValue */
    g_emu_shm_optin[(void *)k] = v;
    return cudaSuccess;
}

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
extern "C" void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                            const double *b, int ldb, double beta, double *c, int ldc); /* the host BLAS (OpenBLAS) */
typedef EmuCublas *cublasHandle_t;
inline int g_emu_gemm_calls; /* cuBLAS GEMM calls so far (the drivers report it) */
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
    emu_need_dev(A, sizeof(TA), "cuBLAS GEMM", "operand A");
    emu_need_dev(B, sizeof(TB), "cuBLAS GEMM", "operand B");
    emu_need_dev(C, sizeof(float), "cuBLAS GEMM", "output C");
    EmuDevScope guard("cuBLAS GEMM");
    /* operands read (and rounded) into op-applied double matrices, then a double GEMM
     * through the host BLAS: the same numbers as a plain double-accumulating loop, faster */
    std::vector<double> a((size_t)m * k), bm((size_t)k * n), c((size_t)m * n);
    for (int b = 0; b < batch; b++) {
        const TA *Ab = A + b * sA; const TB *Bb = B + b * sB; float *Cb = C + b * sC;
        for (int p = 0; p < k; p++)
            for (int i = 0; i < m; i++) {
                float x = rd(oa == CUBLAS_OP_N ? Ab[i + (size_t)p * lda] : Ab[p + (size_t)i * lda]);
                a[i + (size_t)p * m] = mbits < 23 ? emu_round_bits(x, mbits) : x;
            }
        for (int j = 0; j < n; j++)
            for (int p = 0; p < k; p++) {
                float x = rdb(ob == CUBLAS_OP_N ? Bb[p + (size_t)j * ldb] : Bb[j + (size_t)p * ldb]);
                bm[p + (size_t)j * k] = mbits < 23 ? emu_round_bits(x, mbits) : x;
            }
        if (k > 0) cblas_dgemm(102 /* col-major */, 111, 111, m, n, k, 1.0, a.data(), m > 1 ? m : 1, bm.data(), k, 0.0, c.data(), m > 1 ? m : 1);
        else std::fill(c.begin(), c.end(), 0.0);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                float &o = Cb[i + (size_t)j * ldc];
                o = (float)(alpha * c[i + (size_t)j * m] + (beta == 0 ? 0.0 : (double)beta * o));
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
