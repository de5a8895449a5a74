/* cpu_core.c: the CPU backend's memory, matrix products (OpenBLAS), elementwise ops and
 * reductions, and the GmaOps table that gathers every CPU op. Reductions sum fixed blocks
 * in a fixed order so results do not depend on thread scheduling. */
#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cpu/cpu.h"

#ifdef GMA_DOUBLE
#define GEMM cblas_dgemm
#else
#define GEMM cblas_sgemm
#endif

static void *cpu_alloc(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
        fprintf(stderr, "gma: out of host memory allocating %zu bytes\n", bytes);
        abort();
    }
    memset(p, 0, bytes);
    return p;
}
static void cpu_free(void *p) { free(p); }
static void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
static void cpu_copy(void *dst, const void *src, size_t bytes) { memmove(dst, src, bytes); }

void cpu_matmul(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real alpha, real beta) {
    if (M == 0 || N == 0) return;
    if (K == 0) {
        for (size_t i = 0; i < (size_t)M * N; i++) C[i] *= beta;
        return;
    }
    GEMM(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, ta ? M : K, B,
         tb ? K : N, beta, C, N);
}

static void cpu_matmul_strided(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real alpha,
                               real beta, int batch, size_t sA, size_t sB, size_t sC) {
    if (batch >= 2 * omp_get_max_threads() || (size_t)M * N * K < 262144) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)batch * M * N * K / 8))
        for (int i = 0; i < batch; i++) cpu_matmul(C + i * sC, A + i * sA, B + i * sB, M, N, K, ta, tb, alpha, beta);
    } else {
        for (int i = 0; i < batch; i++) cpu_matmul(C + i * sC, A + i * sA, B + i * sB, M, N, K, ta, tb, alpha, beta);
    }
}

static void cpu_bias_forward(real *out, const real *bias, int R, int C) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)C))
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) out[(size_t)r * C + c] += bias[c];
}

/* Column sums of a row-major [R, C] matrix, streaming rows: fixed blocks of rows sum
 * into their own partial rows (in parallel), then the partials are added in block order,
 * so the result does not depend on the number of threads. */
#define CS_BLOCKS 32
static void cpu_bias_backward(real *dbias, const real *dout, int R, int C) {
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

static void cpu_add(real *out, const real *a, const real *b, size_t n) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
static void cpu_axpy(real *y, real alpha, const real *x, size_t n) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (size_t i = 0; i < n; i++) y[i] += alpha * x[i];
}
static void cpu_scale(real *x, real s, size_t n) {
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
static double cpu_sumsq(const real *x, size_t n) { return block_reduce(x, n, 1); }
static double cpu_sum(const real *x, size_t n) { return block_reduce(x, n, 0); }
static int cpu_nonfinite(const real *x, size_t n) {
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (PAR_WORTH(n))
    for (size_t i = 0; i < n; i++) bad |= !isfinite(x[i]);
    return bad;
}

static void cpu_adamw(real *p, const real *g, real *m, real *v, size_t n, real lr, real b1, real b2, real eps, real wd,
                      real bc1, real bc2) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (size_t i = 0; i < n; i++) {
        real mi = m[i] = b1 * m[i] + (1 - b1) * g[i];
        real vi = v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        real mh = mi / bc1, vh = vi / bc2;
        p[i] -= lr * (mh / (rsqrt_(vh) + eps) + wd * p[i]);
    }
}

static void cpu_sgd(real *p, const real *g, real *mom, size_t n, real lr, real momentum, real wd) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (size_t i = 0; i < n; i++) {
        real gi = g[i] + wd * p[i];
        if (momentum > 0) gi = mom[i] = momentum * mom[i] + gi;
        p[i] -= lr * gi;
    }
}

const GmaOps gma_ops_cpu = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .zero = cpu_zero,
    .to_device = cpu_copy,
    .to_host = cpu_copy,
    .copy = cpu_copy,
    .matmul = cpu_matmul,
    .matmul_strided = cpu_matmul_strided,
    .bias_forward = cpu_bias_forward,
    .bias_backward = cpu_bias_backward,
    .add = cpu_add,
    .axpy = cpu_axpy,
    .scale = cpu_scale,
    .sumsq = cpu_sumsq,
    .sum = cpu_sum,
    .nonfinite = cpu_nonfinite,
    .gelu_forward = cpu_gelu_forward,
    .gelu_backward = cpu_gelu_backward,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .embed_forward = cpu_embed_forward,
    .embed_backward = cpu_embed_backward,
    .xent_forward = cpu_xent_forward,
    .xent_backward = cpu_xent_backward,
    .argmax_rows = cpu_argmax_rows,
    .split_heads = cpu_split_heads,
    .merge_heads = cpu_merge_heads,
    .softmax_rows = cpu_softmax_rows,
    .softmax_rows_backward = cpu_softmax_rows_backward,
    .attn_mask = cpu_attn_mask,
    .linmix_forward = cpu_linmix_forward,
    .linmix_backward = cpu_linmix_backward,
    .gma_route_forward = cpu_gma_route_forward,
    .gma_route_backward = cpu_gma_route_backward,
    .adamw = cpu_adamw,
    .sgd = cpu_sgd,
    /* gma health */
    .gma_div_forward = cpu_gma_div_forward,
    .gma_div_backward = cpu_gma_div_backward,
    .pair_features_forward = cpu_pair_features_forward,
    .pair_features_backward = cpu_pair_features_backward,
    /* baselines */
    .elu1_forward = cpu_elu1_forward,
    .elu1_backward = cpu_elu1_backward,
    .silu_forward = cpu_silu_forward,
    .silu_backward = cpu_silu_backward,
    .softplus_forward = cpu_softplus_forward,
    .softplus_backward = cpu_softplus_backward,
    .gate_silu_forward = cpu_gate_silu_forward,
    .gate_silu_backward = cpu_gate_silu_backward,
    .maxval = cpu_maxval,
    .attn_forward = cpu_attn_forward,
    .attn_backward = cpu_attn_backward,
    .favor_logits_forward = cpu_favor_logits_forward,
    .favor_logits_backward = cpu_favor_logits_backward,
    .favor_exp_forward = cpu_favor_exp_forward,
    .favor_exp_backward = cpu_favor_exp_backward,
    .conv1d_causal_forward = cpu_conv1d_causal_forward,
    .conv1d_causal_backward = cpu_conv1d_causal_backward,
    .scan_forward = cpu_scan_forward,
    .scan_backward = cpu_scan_backward,
};

const GmaOps *g_ops = &gma_ops_cpu;

#ifdef GMA_CUDA
/* src/ops/cuda (cuda_core.cu) */
int cuda_ops_init(const GmaOps **out); /* 0, or -1 with gma_error set */
int cuda_set_precision(const char *precision);
void cuda_sync(void);
const char *cuda_device_name(void);
void cuda_mem_stats(size_t *in_use, size_t *peak);
void cuda_mem_reset_peak(void);
#define ON_CUDA() (g_ops != &gma_ops_cpu)
#endif

int ops_select(const char *device) {
    if (!strcmp(device, "cpu")) {
        g_ops = &gma_ops_cpu;
        return 0;
    }
    if (!strcmp(device, "cuda")) {
#ifdef GMA_CUDA
        const GmaOps *ops = NULL;
        if (cuda_ops_init(&ops) != 0) return -1;
        if (ops_check_table(ops) != 0) return gma_error_prefix("device \"cuda\"");
        g_ops = ops;
        return 0;
#else
        return gma_errorf("device \"cuda\": this binary was built without CUDA (build with `make cuda`, or `make cuda-mpi` for data-parallel runs)");
#endif
    }
    return gma_errorf("unknown device \"%s\" (cpu or cuda)", device);
}

int ops_set_precision(const char *precision) {
    if (strcmp(precision, "fp32") && strcmp(precision, "tf32") && strcmp(precision, "bf16"))
        return gma_errorf("precision \"%s\": expected fp32, tf32 or bf16", precision);
#ifdef GMA_CUDA
    if (ON_CUDA()) return cuda_set_precision(precision);
#endif
    if (strcmp(precision, "fp32")) return gma_errorf("precision %s needs device cuda (the cpu backend runs fp32)", precision);
    return 0;
}

void ops_sync(void) {
#ifdef GMA_CUDA
    if (ON_CUDA()) cuda_sync();
#endif
}

const char *ops_device_name(void) {
#ifdef GMA_CUDA
    if (ON_CUDA()) return cuda_device_name();
#endif
    return "cpu";
}

void ops_mem_stats(size_t *in_use, size_t *peak) {
    *in_use = *peak = 0;
#ifdef GMA_CUDA
    if (ON_CUDA()) cuda_mem_stats(in_use, peak);
#endif
}

void ops_mem_reset_peak(void) {
#ifdef GMA_CUDA
    if (ON_CUDA()) cuda_mem_reset_peak();
#endif
}

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
