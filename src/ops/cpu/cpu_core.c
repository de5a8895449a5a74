/* cpu_core.c: the CPU backend's memory, its backend hooks (fp32 only, nothing to wait for,
 * host memory not counted), matrix products (OpenBLAS), elementwise ops and reductions, the
 * optimisers, and the GmaOps table that gathers every CPU op (generated from GMA_OPS).
 * Reductions sum fixed blocks in a fixed order so results do not depend on thread
 * scheduling. */
#include <cblas.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h"

#ifdef GMA_DOUBLE
#define GEMM cblas_dgemm
#define GEMV cblas_dgemv
#define GER cblas_dger
#else
#define GEMM cblas_sgemm
#define GEMV cblas_sgemv
#define GER cblas_sger
#endif

void *cpu_alloc(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
        fprintf(stderr, "gma: out of host memory allocating %zu bytes\n", bytes);
        abort();
    }
    memset(p, 0, bytes);
    return p;
}
void cpu_free(void *p) { free(p); }
void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
void cpu_copy(void *dst, const void *src, size_t bytes) { memmove(dst, src, bytes); }
void cpu_to_device(void *dst, const void *host_src, size_t bytes) { memmove(dst, host_src, bytes); }
void cpu_to_host(void *host_dst, const void *src, size_t bytes) { memmove(host_dst, src, bytes); }

int cpu_set_precision(int precision) {
    if (precision != OPS_FP32)
        return gma_errorf("precision %s needs device cuda (the cpu backend runs fp32)", ops_precision_name(precision));
    return 0;
}
void cpu_sync(void) {}
const char *cpu_device_name(void) { return "cpu"; }
void cpu_mem_stats(size_t *in_use, size_t *peak) { *in_use = *peak = 0; }
void cpu_mem_reset_peak(void) {}

static void (*g_product_hook)(int M, int N, int K, int ta, int tb, int nthreads);
void ops_set_cpu_product_hook(void (*hook)(int M, int N, int K, int ta, int tb, int nthreads)) { g_product_hook = hook; }

void cpu_matmul(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real alpha, real beta) {
    if (M == 0 || N == 0) return;
    if (g_product_hook) g_product_hook(M, N, K, ta, tb, omp_in_parallel() ? omp_get_num_threads() : 1);
    if (K == 0) {
        for (size_t i = 0; i < (size_t)M * N; i++) C[i] *= beta;
        return;
    }
    if (M == 1 && !ta) { /* one row (a decode step): the matrix-vector product, not GEMM's packing */
        if (beta == 0) memset(C, 0, sizeof(real) * (size_t)N);
        GEMV(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, tb ? N : K, tb ? K : N, alpha, B, tb ? K : N, A, 1, beta, C, 1);
        return;
    }
    if (K == 1 && beta == 1) { /* a rank-one update (a decode step's state) */
        GER(CblasRowMajor, M, N, alpha, A, 1, B, 1, C, N);
        return;
    }
    GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, ta ? M : K, B,
         tb ? K : N, beta, C, N);
}

void cpu_matmul_strided(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real alpha,
                        real beta, int batch, size_t sA, size_t sB, size_t sC) {
    if (batch >= 2 * omp_get_max_threads() || (size_t)M * N * K < 262144) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)batch * M * N * K / 8))
        for (int i = 0; i < batch; i++) cpu_matmul(C + i * sC, A + i * sA, B + i * sB, M, N, K, ta, tb, alpha, beta);
    } else {
        for (int i = 0; i < batch; i++) cpu_matmul(C + i * sC, A + i * sA, B + i * sB, M, N, K, ta, tb, alpha, beta);
    }
}

void cpu_bias_forward(real *out, const real *bias, int R, int C) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)C))
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) out[(size_t)r * C + c] += bias[c];
}

/* Column sums of a row-major [R, C] matrix, streaming rows: fixed blocks of rows sum
 * into their own partial rows (in parallel), then the partials are added in block order,
 * so the result does not depend on the number of threads. */
#define CS_BLOCKS 32
void cpu_bias_backward(real *dbias, const real *dout, int R, int C) {
    int nb = R >= 4 * CS_BLOCKS ? CS_BLOCKS : 1;
    double *part = (double *)cpu_workspace(2, sizeof(double) / sizeof(real) * (size_t)nb * C);
    int per = (R + nb - 1) / nb;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)C))
    for (int b = 0; b < nb; b++) {
        double *acc = part + (size_t)b * C;
        for (int c = 0; c < C; c++) acc[c] = 0;
        int r1 = GMA_MIN(R, (b + 1) * per);
        for (int r = b * per; r < r1; r++) {
            const real *row = dout + (size_t)r * C;
            for (int c = 0; c < C; c++) acc[c] += row[c];
        }
    }
    for (int c = 0; c < C; c++) {
        double s = 0;
        for (int b = 0; b < nb; b++) s += part[(size_t)b * C + c];
        dbias[c] += (real)s;
    }
}

void cpu_add(real *out, const real *a, const real *b, size_t n) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
void cpu_axpy(real *y, real alpha, const real *x, size_t n) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (size_t i = 0; i < n; i++) y[i] += alpha * x[i];
}
void cpu_scale(real *x, real s, size_t n) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

#define RBLOCKS 64
static double block_reduce(const real *x, size_t n, int sq) {
    double part[RBLOCKS];
    size_t per = (n + RBLOCKS - 1) / RBLOCKS;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (int b = 0; b < RBLOCKS; b++) {
        size_t lo = b * per, hi = GMA_MIN(n, lo + per);
        double s = 0;
        for (size_t i = lo; i < hi; i++) s += sq ? (double)x[i] * x[i] : (double)x[i];
        part[b] = s;
    }
    double s = 0;
    for (int b = 0; b < RBLOCKS; b++) s += part[b];
    return s;
}
double cpu_sumsq(const real *x, size_t n) { return block_reduce(x, n, 1); }
double cpu_sum(const real *x, size_t n) { return block_reduce(x, n, 0); }
int cpu_nonfinite(const real *x, size_t n) {
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (PAR_WORTH(n))
    for (size_t i = 0; i < n; i++) bad |= !isfinite(x[i]);
    return bad;
}

/* AdamW, one pass over the tensor; float32 runs eight lanes at once (the same expression,
 * IEEE division and square root, so each element is what the scalar loop gives up to
 * contraction into fused multiply-adds) */
static inline real adamw1(real *p, const real *g, real *m, real *v, size_t i, real lr, real b1, real b2, real eps,
                          real wd, real bc1, real bc2) {
    real mi = m[i] = b1 * m[i] + (1 - b1) * g[i];
    real vi = v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    real mh = mi / bc1, vh = vi / bc2;
    return p[i] - lr * (mh / (rsqrt_(vh) + eps) + wd * p[i]);
}
void cpu_adamw(real *p, const real *g, real *m, real *v, size_t n, real lr, real b1, real b2, real eps, real wd,
               real bc1, real bc2) {
    size_t i0 = 0;
#if !defined(GMA_DOUBLE) && defined(__AVX__)
    size_t n8 = n / 8;
#pragma omp parallel for schedule(static) if (PAR_WORTH(n))
    for (size_t j = 0; j < n8; j++) {
        size_t i = 8 * j;
        __m256 gi = _mm256_loadu_ps(g + i), pi = _mm256_loadu_ps(p + i);
        __m256 mi = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(b1), _mm256_loadu_ps(m + i)),
                                  _mm256_mul_ps(_mm256_set1_ps(1 - b1), gi));
        __m256 vi = _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(b2), _mm256_loadu_ps(v + i)),
                                  _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(1 - b2), gi), gi));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        __m256 mh = _mm256_div_ps(mi, _mm256_set1_ps(bc1)), vh = _mm256_div_ps(vi, _mm256_set1_ps(bc2));
        __m256 up = _mm256_add_ps(_mm256_div_ps(mh, _mm256_add_ps(_mm256_sqrt_ps(vh), _mm256_set1_ps(eps))),
                                  _mm256_mul_ps(_mm256_set1_ps(wd), pi));
        _mm256_storeu_ps(p + i, _mm256_sub_ps(pi, _mm256_mul_ps(_mm256_set1_ps(lr), up)));
    }
    i0 = n8 * 8;
#endif
#pragma omp parallel for schedule(static) if (PAR_WORTH(n - i0))
    for (size_t i = i0; i < n; i++) p[i] = adamw1(p, g, m, v, i, lr, b1, b2, eps, wd, bc1, bc2);
}

void cpu_sgd(real *p, const real *g, real *mom, size_t n, real lr, real momentum, real wd) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (size_t i = 0; i < n; i++) {
        real gi = g[i] + wd * p[i];
        if (momentum > 0) gi = mom[i] = momentum * mom[i] + gi;
        p[i] -= lr * gi;
    }
}

const GmaOps gma_ops_cpu = {
    .name = "cpu",
    .device = OPS_CPU,
#define GMA_CPU_OP(ret, op, params) .op = cpu_##op,
    GMA_OPS(GMA_CPU_OP)
#undef GMA_CPU_OP
};

void openblas_set_num_threads(int);
void ops_set_threads(int n) {
    if (n > 0) {
        omp_set_num_threads(n);
        openblas_set_num_threads(n);
    }
}

real *cpu_workspace(int slot, size_t n) {
    static _Thread_local real *buf[4];
    static _Thread_local size_t cap[4];
    if (n > cap[slot]) {
        free(buf[slot]);
        buf[slot] = xmalloc(n * sizeof(real));
        cap[slot] = n;
    }
    return buf[slot];
}
