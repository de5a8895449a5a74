/* cuda_core.cu: the CUDA backend's start-up (device checks, cuBLAS), memory, matrix
 * products (fp32, tf32 or bf16 through cuBLAS, row-major by swapping operands),
 * elementwise ops, deterministic reductions, the optimisers, the backend hooks (precision,
 * sync, device name, memory statistics), and the GmaOps table that gathers every CUDA op,
 * generated from GMA_OPS (ops/ops.h has the contracts, ops/cuda/cuda.h the prototypes,
 * ops/cpu/ the reference twins).
 *
 * Everything runs on the default stream, so ops are ordered without extra synchronisation;
 * reductions that return a value to the host wait for the stream. Memory comes from
 * cudaMalloc once (the model plans its buffers); op work buffers grow on demand during the
 * first steps and are then reused. */
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unordered_map>

#include "ops/cuda/cuda_common.cuh"
extern "C" int dist_local_rank(void); /* train/dist.h (a C11 header) */

/* ---------------------------------------------------------------- errors */
int g_cuda_sync_launches = 0;

void cuda_fail(const char *file, int line, const char *call, const char *msg) {
    fprintf(stderr, "gma: CUDA error at %s:%d: %s: %s\n", file, line, call, msg);
    fflush(stderr);
    exit(1);
}

const char *cublas_status_name(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
    }
}

/* ---------------------------------------------------------------- memory */
cublasHandle_t g_cublas = NULL;
int g_cuda_prec = PREC_FP32;
static std::unordered_map<void *, size_t> *g_sizes;
static size_t g_in_use, g_peak;
static char g_dev_name[256] = "cuda";

static void track(void *p, size_t bytes) {
    if (!g_sizes) g_sizes = new std::unordered_map<void *, size_t>();
    (*g_sizes)[p] = bytes;
    g_in_use += bytes;
    if (g_in_use > g_peak) g_peak = g_in_use;
}
static void untrack(void *p) {
    if (!g_sizes) return;
    auto it = g_sizes->find(p);
    if (it == g_sizes->end()) return;
    g_in_use -= it->second;
    g_sizes->erase(it);
}

void *cuda_alloc(size_t bytes) {
    void *p = NULL;
    size_t n = bytes ? bytes : 256;
    cudaError_t e = cudaMalloc(&p, n);
    if (e != cudaSuccess) {
        size_t fr = 0, tot = 0;
        cudaGetLastError();
        cudaMemGetInfo(&fr, &tot);
        fprintf(stderr, "gma: CUDA error at %s:%d: cudaMalloc(%zu bytes): %s (%zu of %zu MiB free)\n", __FILE__,
                __LINE__, n, cudaGetErrorString(e), fr >> 20, tot >> 20);
        exit(1);
    }
    CUDA_CHECK(cudaMemset(p, 0, n));
    track(p, n);
    return p;
}
void cuda_free(void *p) {
    if (!p) return;
    untrack(p);
    CUDA_CHECK(cudaFree(p));
}
void cuda_zero(void *p, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, 0));
}
void cuda_to_device(void *dst, const void *src, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}
void cuda_to_host(void *dst, const void *src, size_t bytes) {
    if (bytes) CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}
void cuda_copy(void *dst, const void *src, size_t bytes) {
    if (bytes && dst != src) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, 0));
}

static void *g_ws[CUDA_WS_SLOTS];
static size_t g_ws_cap[CUDA_WS_SLOTS];
void *cuda_ws(int slot, size_t bytes) {
    if (bytes > g_ws_cap[slot]) {
        if (g_ws[slot]) cuda_free(g_ws[slot]); /* cudaFree waits for pending work */
        size_t cap = bytes + bytes / 4 + 256;
        g_ws[slot] = cuda_alloc(cap);
        g_ws_cap[slot] = cap;
    }
    return g_ws[slot];
}

/* ---------------------------------------------------------------- matrix products */
static void scale_or_zero(float *C, size_t n, float beta);

/* fp32 (or tf32 when the handle's math mode says so). Row-major C = op(A) op(B) is
 * column-major C^T = op(B)^T op(A)^T: pass B first. */
void cuda_gemm(float *C, const float *A, const float *B, int M, int N, int K, int ta, int tb, float alpha, float beta) {
    if (M == 0 || N == 0) return;
    if (K == 0) return scale_or_zero(C, (size_t)M * N, beta);
    CUBLAS_CHECK(cublasSgemm(g_cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                             B, tb ? K : N, A, ta ? M : K, &beta, C, N));
}

void cuda_gemm_strided(float *C, const float *A, const float *B, int M, int N, int K, int ta, int tb, float alpha,
                       float beta, int batch, long long sA, long long sB, long long sC) {
    if (M == 0 || N == 0 || batch == 0) return;
    if (K == 0) {
        for (int i = 0; i < batch; i++) scale_or_zero(C + i * sC, (size_t)M * N, beta);
        return;
    }
    CUBLAS_CHECK(cublasSgemmStridedBatched(g_cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M,
                                           K, &alpha, B, tb ? K : N, sB, A, ta ? M : K, sA, &beta, C, N, sC, batch));
}

__global__ void k_to_bf16(__nv_bfloat16 *out, const float *x, size_t n) {
    GRID_STRIDE(i, n) out[i] = __float2bfloat16_rn(x[i]);
}
static const __nv_bfloat16 *as_bf16(int slot, const float *x, size_t n) {
    __nv_bfloat16 *b = (__nv_bfloat16 *)cuda_ws(slot, n * sizeof(__nv_bfloat16));
    k_to_bf16<<<grid_for(n), TPB>>>(b, x, n);
    KERNEL_CHECK("k_to_bf16");
    return b;
}
/* elements spanned by `batch` matrices of `n` elements at stride s */
static size_t span(int batch, long long s, size_t n) { return batch > 1 && s > 0 ? (size_t)(batch - 1) * s + n : n; }

/* bf16 operands (rounded copies of the fp32 tensors), fp32 accumulation and fp32 output */
static void gemm_bf16(float *C, const float *A, const float *B, int M, int N, int K, int ta, int tb, float alpha,
                      float beta, int batch, long long sA, long long sB, long long sC) {
    const __nv_bfloat16 *Ab = as_bf16(CUDA_WS_SLOTS - 2, A, span(batch, sA, (size_t)M * K));
    const __nv_bfloat16 *Bb = as_bf16(CUDA_WS_SLOTS - 1, B, span(batch, sB, (size_t)K * N));
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(g_cublas, ob, oa, N, M, K, &alpha, Bb, CUDA_R_16BF, tb ? K : N, sB, Ab,
                                            CUDA_R_16BF, ta ? M : K, sA, &beta, C, CUDA_R_32F, N, sC, batch,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void cuda_matmul(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real alpha,
                 real beta) {
    if (g_cuda_prec == PREC_BF16 && M > 0 && N > 0 && K > 0)
        return gemm_bf16(C, A, B, M, N, K, ta, tb, alpha, beta, 1, 0, 0, 0);
    cuda_gemm(C, A, B, M, N, K, ta, tb, alpha, beta);
}

void cuda_matmul_strided(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real alpha,
                         real beta, int batch, size_t sA, size_t sB, size_t sC) {
    if (g_cuda_prec == PREC_BF16 && M > 0 && N > 0 && K > 0 && batch > 0)
        return gemm_bf16(C, A, B, M, N, K, ta, tb, alpha, beta, batch, (long long)sA, (long long)sB, (long long)sC);
    cuda_gemm_strided(C, A, B, M, N, K, ta, tb, alpha, beta, batch, (long long)sA, (long long)sB, (long long)sC);
}

/* ---------------------------------------------------------------- elementwise */
__global__ void k_scale(float *x, float s, size_t n) { GRID_STRIDE(i, n) x[i] *= s; }
__global__ void k_add(float *out, const float *a, const float *b, size_t n) { GRID_STRIDE(i, n) out[i] = a[i] + b[i]; }
__global__ void k_axpy(float *y, float alpha, const float *x, size_t n) { GRID_STRIDE(i, n) y[i] += alpha * x[i]; }
__global__ void k_bias_fwd(float *out, const float *bias, size_t R, int C) {
    GRID_STRIDE(i, R * C) out[i] += bias[i % C];
}

static void scale_or_zero(float *C, size_t n, float beta) {
    if (beta == 0) return cuda_zero(C, n * sizeof(float));
    if (beta == 1) return;
    k_scale<<<grid_for(n), TPB>>>(C, beta, n);
    KERNEL_CHECK("k_scale");
}
void cuda_add(real *out, const real *a, const real *b, size_t n) {
    if (!n) return;
    k_add<<<grid_for(n), TPB>>>(out, a, b, n);
    KERNEL_CHECK("k_add");
}
void cuda_axpy(real *y, real alpha, const real *x, size_t n) {
    if (!n) return;
    k_axpy<<<grid_for(n), TPB>>>(y, alpha, x, n);
    KERNEL_CHECK("k_axpy");
}
void cuda_scale(real *x, real s, size_t n) {
    if (!n) return;
    k_scale<<<grid_for(n), TPB>>>(x, s, n);
    KERNEL_CHECK("k_scale");
}
void cuda_bias_forward(real *out, const real *bias, int R, int C) {
    size_t n = (size_t)R * C;
    if (!n) return;
    k_bias_fwd<<<grid_for(n), TPB>>>(out, bias, (size_t)R, C);
    KERNEL_CHECK("k_bias_fwd");
}

/* ---------------------------------------------------------------- column reductions */
/* out[c] += sum_r X[r,c] (and out2[c] += sum_r Y[r,c]): pass 1 sums fixed blocks of rows
 * per column into double partials, pass 2 adds the partials in block order. Deterministic
 * and independent of the device. */
#define CR_ROWS 256 /* rows per partial */
__global__ void k_colsum_part(double *part, const float *X, int R, int C) {
    __shared__ double sh[8][33];
    int c = blockIdx.x * 32 + threadIdx.x, rb = blockIdx.y;
    int r0 = rb * CR_ROWS, r1 = min(R, r0 + CR_ROWS);
    double s = 0;
    if (c < C)
        for (int r = r0 + threadIdx.y; r < r1; r += 8) s += X[(size_t)r * C + c];
    sh[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        double t = 0;
        for (int i = 0; i < 8; i++) t += sh[i][threadIdx.x];
        part[(size_t)rb * C + c] = t;
    }
}
__global__ void k_colsum_final(float *out, const double *part, int nrb, int C) {
    GRID_STRIDE(c, (size_t)C) {
        double t = 0;
        for (int b = 0; b < nrb; b++) t += part[(size_t)b * C + c];
        out[c] += (float)t;
    }
}
void cuda_colsum_acc(float *out, const float *X, int R, int C) {
    if (R <= 0 || C <= 0) return;
    int nrb = (R + CR_ROWS - 1) / CR_ROWS;
    double *part = (double *)cuda_ws(WS_COLSUM, (size_t)nrb * C * sizeof(double));
    k_colsum_part<<<dim3((C + 31) / 32, nrb), dim3(32, 8)>>>(part, X, R, C);
    KERNEL_CHECK("k_colsum_part");
    k_colsum_final<<<grid_for(C), TPB>>>(out, part, nrb, C);
    KERNEL_CHECK("k_colsum_final");
}
void cuda_bias_backward(real *dbias, const real *dout, int R, int C) { cuda_colsum_acc(dbias, dout, R, C); }

/* ---------------------------------------------------------------- reductions to the host */
#define RED_BLOCKS 512
static double *g_red_dev, *g_red_host;
static int *g_flag_dev;

__global__ void k_reduce(double *part, const float *x, size_t n, int sq) {
    __shared__ double sh[32];
    double s = 0;
    GRID_STRIDE(i, n) {
        double v = x[i];
        s += sq ? v * v : v;
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}
static double reduce(const float *x, size_t n, int sq) {
    if (!n) return 0;
    k_reduce<<<RED_BLOCKS, TPB>>>(g_red_dev, x, n, sq);
    KERNEL_CHECK("k_reduce");
    CUDA_CHECK(cudaMemcpy(g_red_host, g_red_dev, RED_BLOCKS * sizeof(double), cudaMemcpyDeviceToHost));
    double s = 0;
    for (int b = 0; b < RED_BLOCKS; b++) s += g_red_host[b];
    return s;
}
double cuda_sumsq(const real *x, size_t n) { return reduce(x, n, 1); }
double cuda_sum(const real *x, size_t n) { return reduce(x, n, 0); }

__global__ void k_nonfinite(int *flag, const float *x, size_t n) {
    GRID_STRIDE(i, n) if (!isfinite(x[i])) *flag = 1; /* every writer stores 1: no race on the value */
}
int cuda_nonfinite(const real *x, size_t n) {
    if (!n) return 0;
    int h = 0;
    CUDA_CHECK(cudaMemsetAsync(g_flag_dev, 0, sizeof(int), 0));
    k_nonfinite<<<grid_for(n), TPB>>>(g_flag_dev, x, n);
    KERNEL_CHECK("k_nonfinite");
    CUDA_CHECK(cudaMemcpy(&h, g_flag_dev, sizeof(int), cudaMemcpyDeviceToHost));
    return h;
}

/* ---------------------------------------------------------------- optimisers */
__global__ void k_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1, float b2, float eps,
                        float wd, float bc1, float bc2) {
    GRID_STRIDE(i, n) {
        float gi = g[i];
        float mi = m[i] = b1 * m[i] + (1 - b1) * gi;
        float vi = v[i] = b2 * v[i] + (1 - b2) * gi * gi;
        float mh = mi / bc1, vh = vi / bc2;
        p[i] -= lr * (mh / (sqrtf(vh) + eps) + wd * p[i]);
    }
}
void cuda_adamw(real *p, const real *g, real *m, real *v, size_t n, real lr, real b1, real b2, real eps, real wd,
                real bc1, real bc2) {
    if (!n) return;
    k_adamw<<<grid_for(n), TPB>>>(p, g, m, v, n, lr, b1, b2, eps, wd, bc1, bc2);
    KERNEL_CHECK("k_adamw");
}
__global__ void k_sgd(float *p, const float *g, float *mom, size_t n, float lr, float momentum, float wd) {
    GRID_STRIDE(i, n) {
        float gi = g[i] + wd * p[i];
        if (momentum > 0) gi = mom[i] = momentum * mom[i] + gi;
        p[i] -= lr * gi;
    }
}
void cuda_sgd(real *p, const real *g, real *mom, size_t n, real lr, real momentum, real wd) {
    if (!n) return;
    k_sgd<<<grid_for(n), TPB>>>(p, g, mom, n, lr, momentum, wd);
    KERNEL_CHECK("k_sgd");
}

/* ---------------------------------------------------------------- the table */
static GmaOps make_table(void) {
    GmaOps t;
    memset(&t, 0, sizeof t);
    t.name = "cuda";
    t.device = OPS_CUDA;
#define GMA_CUDA_OP(ret, op, params) t.op = cuda_##op;
    GMA_OPS(GMA_CUDA_OP)
#undef GMA_CUDA_OP
    return t;
}
static GmaOps g_table;

/* ---------------------------------------------------------------- start-up */
__global__ void k_probe(int *x) {
    if (x) *x = 1;
}

/* ops/cuda/cuda.h */
extern "C" int cuda_ops_init(const GmaOps **out) {
    static int inited = 0;
    if (!inited) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess) {
            cudaGetLastError();
            return gma_errorf("device \"cuda\": no usable GPU (%s: %s)", cudaGetErrorName(e), cudaGetErrorString(e));
        }
        if (n <= 0) return gma_errorf("device \"cuda\": no CUDA GPU on this machine");
        /* one GPU per rank of this machine (data-parallel runs), unless told */
        int dev = dist_local_rank() % n;
        const char *env = getenv("GMA_CUDA_DEVICE");
        if (env && *env) dev = atoi(env);
        if (dev < 0 || dev >= n) return gma_errorf("GMA_CUDA_DEVICE=%s: this machine has %d CUDA GPU(s)", env, n);
        cudaDeviceProp p;
        if ((e = cudaGetDeviceProperties(&p, dev)) != cudaSuccess || (e = cudaSetDevice(dev)) != cudaSuccess) {
            cudaGetLastError();
            return gma_errorf("device \"cuda\": GPU %d is not usable (%s)", dev, cudaGetErrorString(e));
        }
        snprintf(g_dev_name, sizeof g_dev_name, "%s", p.name);
        /* a kernel launch tells whether this build carries code for the GPU (sm_90 + PTX) */
        k_probe<<<1, 1>>>(NULL);
        e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            cudaGetLastError();
            return gma_errorf("device \"cuda\": cannot run kernels on %s (compute capability %d.%d): %s; rebuild with "
                              "`make cuda CUDA_ARCH=\"-gencode arch=compute_%d%d,code=sm_%d%d\"`",
                              p.name, p.major, p.minor, cudaGetErrorString(e), p.major, p.minor, p.major, p.minor);
        }
        cublasStatus_t s = cublasCreate(&g_cublas);
        if (s != CUBLAS_STATUS_SUCCESS) return gma_errorf("device \"cuda\": cublasCreate: %s", cublas_status_name(s));
        CUBLAS_CHECK(cublasSetMathMode(g_cublas, CUBLAS_DEFAULT_MATH));
        const char *sy = getenv("GMA_CUDA_SYNC");
        g_cuda_sync_launches = sy && *sy && strcmp(sy, "0");
        g_red_dev = (double *)cuda_alloc(RED_BLOCKS * sizeof(double));
        g_flag_dev = (int *)cuda_alloc(sizeof(int));
        CUDA_CHECK(cudaMallocHost(&g_red_host, RED_BLOCKS * sizeof(double)));
        g_table = make_table();
        inited = 1;
    }
    *out = &g_table;
    return 0;
}

int cuda_set_precision(int precision) {
    if (precision == OPS_FP32) g_cuda_prec = PREC_FP32;
    else if (precision == OPS_TF32) g_cuda_prec = PREC_TF32;
    else if (precision == OPS_BF16) g_cuda_prec = PREC_BF16;
    else return gma_errorf("precision %d: expected fp32, tf32 or bf16", precision);
    CUBLAS_CHECK(cublasSetMathMode(g_cublas, g_cuda_prec == PREC_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    return 0;
}

void cuda_sync(void) { CUDA_CHECK(cudaDeviceSynchronize()); }
const char *cuda_device_name(void) { return g_dev_name; }
void cuda_mem_stats(size_t *in_use, size_t *peak) {
    *in_use = g_in_use;
    *peak = g_peak;
}
void cuda_mem_reset_peak(void) { g_peak = g_in_use; }
