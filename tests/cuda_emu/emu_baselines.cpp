/* emu_baselines.cpp: the baseline ops' CUDA kernels (src/ops/cuda/cuda_{baselines,mamba,
 * sdpa}.cu, rewritten by launch2call.c and run under the CPU emulation of
 * ops/cuda/cuda_common.cuh in this folder) against their CPU twins (build/libgma.a):
 * elementwise maps (the product too), maxval, FAVOR+ (and the ReLU kernel's features), causal conv1d, selective scan (register, S > 32 and
 * local-memory variants, ragged chunks), its decoding step, and tiled attention (causal and bidirectional,
 * padded keys with fully hidden rows, head widths 16 ... 256), one row of the op table
 * op_rows.h (BASE_ROWS) at a time (op_driver.h). Relative L2 error bound 1e-4 per
 * tensor. Run by scripts/cuda_emu_check.sh. */
#include "ops/cuda/cuda_common.cuh"
extern "C" {
#include "ops/cpu/cpu.h"
}
#include <random>

#include "op_driver.h"
#include "op_rows.h"
void cuda_fail(const char *file, int line, const char *call, const char *msg) { fprintf(stderr, "FAIL %s:%d %s %s\n", file, line, call, msg); exit(1); }
static void *g_ws[16]; static size_t g_cap[16];
void *cuda_ws(int slot, size_t bytes) { if (bytes > g_cap[slot]) { free(g_ws[slot]); g_ws[slot] = calloc(1, bytes + 64); g_cap[slot] = bytes; } return g_ws[slot]; }
void cuda_gemm(float *C, const float *A, const float *B, int M, int N, int K, int ta, int tb, float alpha, float beta) {
    for (int i = 0; i < M; i++) for (int j = 0; j < N; j++) { double s = 0;
        for (int k = 0; k < K; k++) s += (double)(ta ? A[k * M + i] : A[i * K + k]) * (tb ? B[j * K + k] : B[k * N + j]);
        C[i * N + j] = (float)(alpha * s + (beta == 0 ? 0 : beta * C[i * N + j])); }
}
void cuda_gemm_strided(float *C, const float *A, const float *B, int M, int N, int K, int ta, int tb, float alpha, float beta, int batch, long long sA, long long sB, long long sC) {
    for (int b = 0; b < batch; b++) cuda_gemm(C + b * sC, A + b * sA, B + b * sB, M, N, K, ta, tb, alpha, beta);
}
/* the cuda_<op> prototypes: ops/cuda/cuda.h (through cuda_common.cuh) */

static std::mt19937 rng(1);
typedef std::vector<float> V;
static V rnd(size_t n, float a = 1, float off = 0) { std::uniform_real_distribution<float> u(-a, a); V v(n); for (auto &x : v) x = u(rng) + off; return v; }
static int nfail = 0, ncheck = 0;
static void cmp(const char *name, const V &a, const V &b, double tol = 1e-4) {
    double num = 0, den = 0, mx = 0;
    for (size_t i = 0; i < a.size(); i++) {
        if (std::isinf(a[i]) && std::isinf(b[i]) && (a[i] > 0) == (b[i] > 0)) continue;
        double d = (double)a[i] - b[i]; num += d * d; den += (double)b[i] * b[i]; mx = fmax(mx, fabs(d)); }
    double rel = sqrt(num / (den > 0 ? den : 1));
    bool ok = rel < tol && std::isfinite(rel);
    ncheck++; if (!ok) nfail++;
    printf("%-40s rel %.2e maxabs %.2e %s\n", name, rel, mx, ok ? "ok" : "FAIL");
}
#define BOTH(name, call_cpu, call_cuda) do { call_cpu; call_cuda; } while (0)

static void t_elem(size_t n) {
    V x = rnd(n, 5), z = rnd(n, 5), g = rnd(n);
    V a(n), b(n);
    cpu_elu1_forward(a.data(), x.data(), n); cuda_elu1_forward(b.data(), x.data(), n); cmp("elu1 fwd", b, a);
    a = rnd(n); b = a; cpu_elu1_backward(a.data(), g.data(), x.data(), n); cuda_elu1_backward(b.data(), g.data(), x.data(), n); cmp("elu1 bwd", b, a);
    cpu_silu_forward(a.data(), x.data(), n); cuda_silu_forward(b.data(), x.data(), n); cmp("silu fwd", b, a);
    a = rnd(n); b = a; cpu_silu_backward(a.data(), g.data(), x.data(), n); cuda_silu_backward(b.data(), g.data(), x.data(), n); cmp("silu bwd", b, a);
    V xs = rnd(n, 30); cpu_softplus_forward(a.data(), xs.data(), n); cuda_softplus_forward(b.data(), xs.data(), n); cmp("softplus fwd", b, a);
    a = rnd(n); b = a; cpu_softplus_backward(a.data(), g.data(), xs.data(), n); cuda_softplus_backward(b.data(), g.data(), xs.data(), n); cmp("softplus bwd", b, a);
    cpu_gate_silu_forward(a.data(), x.data(), z.data(), n); cuda_gate_silu_forward(b.data(), x.data(), z.data(), n); cmp("gate fwd", b, a);
    V a2 = rnd(n), b2 = a2; a = rnd(n); b = a;
    cpu_gate_silu_backward(a.data(), a2.data(), g.data(), x.data(), z.data(), n); cuda_gate_silu_backward(b.data(), b2.data(), g.data(), x.data(), z.data(), n);
    cmp("gate bwd dy", b, a); cmp("gate bwd dz", b2, a2);
    cpu_mul_forward(a.data(), x.data(), z.data(), n); cuda_mul_forward(b.data(), x.data(), z.data(), n); cmp("mul fwd", b, a);
    a2 = rnd(n); b2 = a2; a = rnd(n); b = a;
    cpu_mul_backward(a.data(), a2.data(), g.data(), x.data(), z.data(), n); cuda_mul_backward(b.data(), b2.data(), g.data(), x.data(), z.data(), n);
    cmp("mul bwd da", b, a); cmp("mul bwd db", b2, a2);
    V big = rnd(100000, 3); big[77777] = 9.5f;
    double m1 = cpu_maxval(big.data(), big.size()), m2 = cuda_maxval(big.data(), big.size());
    printf("maxval %g %g %s\n", m1, m2, m1 == m2 ? "ok" : "FAIL"); ncheck++; if (m1 != m2) nfail++;
    /* the Performer ReLU kernel's features: exactly max(x, 0) + eps on both */
    cpu_favor_relu_forward(a.data(), x.data(), n, 1e-3f); cuda_favor_relu_forward(b.data(), x.data(), n, 1e-3f);
    cmp("favor_relu fwd", b, a, 1e-7);
}
static void t_favor(int B, int H, int N, int d, int m) {
    V x = rnd((size_t)B * H * N * d), om = rnd((size_t)H * m * d, 1.5f);
    V e1((size_t)B * H * N * m), e2 = e1;
    cpu_favor_logits_forward(e1.data(), x.data(), om.data(), B, H, N, d, m);
    cuda_favor_logits_forward(e2.data(), x.data(), om.data(), B, H, N, d, m); cmp("favor_logits fwd", e2, e1);
    V de = rnd(e1.size()), dx1 = rnd(x.size()), dx2 = dx1;
    cpu_favor_logits_backward(dx1.data(), de.data(), x.data(), om.data(), B, H, N, d, m);
    cuda_favor_logits_backward(dx2.data(), de.data(), x.data(), om.data(), B, H, N, d, m); cmp("favor_logits bwd", dx2, dx1);
    int R = B * H * N; e1[5] = e1[7] = 10; // a tie: first index wins
    for (int withmax = 0; withmax < 2; withmax++) {
        V p1(e1.size()), p2(e1.size()), rm1(R), rm2(R);
        cpu_favor_exp_forward(p1.data(), withmax ? rm1.data() : NULL, e1.data(), R, m, 0.3f, 0.7f);
        cuda_favor_exp_forward(p2.data(), withmax ? rm2.data() : NULL, e1.data(), R, m, 0.3f, 0.7f);
        cmp(withmax ? "favor_exp fwd rowmax" : "favor_exp fwd", p2, p1);
        if (withmax) cmp("favor_exp argmax", rm2, rm1, 1e-12);
        V dp = rnd(p1.size()), d1 = rnd(p1.size()), d2 = d1;
        cpu_favor_exp_backward(d1.data(), dp.data(), p1.data(), withmax ? rm1.data() : NULL, R, m);
        cuda_favor_exp_backward(d2.data(), dp.data(), p1.data(), withmax ? rm1.data() : NULL, R, m);
        cmp("favor_exp bwd", d2, d1);
    }
}
static void t_conv1d(int B, int N, int C, int K) {
    V x = rnd((size_t)B * N * C), w = rnd((size_t)C * K), b = rnd(C), o1(x.size()), o2(x.size());
    cpu_conv1d_causal_forward(o1.data(), x.data(), w.data(), b.data(), B, N, C, K);
    cuda_conv1d_causal_forward(o2.data(), x.data(), w.data(), b.data(), B, N, C, K); cmp("conv fwd", o2, o1);
    V g = rnd(x.size()), dx1 = rnd(x.size()), dx2 = dx1, dw1 = rnd(w.size()), dw2 = dw1, db1 = rnd(C), db2 = db1;
    cpu_conv1d_causal_backward(dx1.data(), dw1.data(), db1.data(), g.data(), x.data(), w.data(), B, N, C, K);
    cuda_conv1d_causal_backward(dx2.data(), dw2.data(), db2.data(), g.data(), x.data(), w.data(), B, N, C, K);
    cmp("conv dx", dx2, dx1); cmp("conv dw", dw2, dw1); cmp("conv db", db2, db1);
}
static void t_scan(int B, int N, int E, int S, int chunk) {
    printf("scan B%d N%d E%d S%d chunk%d\n", B, N, E, S, chunk);
    V u = rnd((size_t)B * N * E), dt = rnd(u.size(), 0.2f, 0.25f), Bm = rnd((size_t)B * N * S), Cm = rnd(Bm.size());
    V Al = rnd((size_t)E * S, 1, 0.5f), D = rnd(E);
    int nck = (N + chunk - 1) / chunk;
    V y1(u.size()), y2(u.size()), h1((size_t)B * nck * E * S), h2(h1.size());
    cpu_scan_forward(y1.data(), h1.data(), u.data(), dt.data(), Bm.data(), Cm.data(), Al.data(), D.data(), B, N, E, S, chunk);
    cuda_scan_forward(y2.data(), h2.data(), u.data(), dt.data(), Bm.data(), Cm.data(), Al.data(), D.data(), B, N, E, S, chunk);
    cmp("scan y", y2, y1); cmp("scan hck", h2, h1);
    V dy = rnd(u.size()), du1 = rnd(u.size()), du2 = du1, ddt1 = rnd(u.size()), ddt2 = ddt1, dB1 = rnd(Bm.size()), dB2 = dB1,
      dC1 = rnd(Bm.size()), dC2 = dC1, dA1 = rnd(Al.size()), dA2 = dA1, dD1 = rnd(E), dD2 = dD1;
    cpu_scan_backward(du1.data(), ddt1.data(), dB1.data(), dC1.data(), dA1.data(), dD1.data(), dy.data(), h1.data(), u.data(), dt.data(), Bm.data(), Cm.data(), Al.data(), D.data(), B, N, E, S, chunk);
    cuda_scan_backward(du2.data(), ddt2.data(), dB2.data(), dC2.data(), dA2.data(), dD2.data(), dy.data(), h1.data(), u.data(), dt.data(), Bm.data(), Cm.data(), Al.data(), D.data(), B, N, E, S, chunk);
    cmp("scan du", du2, du1); cmp("scan ddt", ddt2, ddt1); cmp("scan dBm", dB2, dB1); cmp("scan dCm", dC2, dC1); cmp("scan dA_log", dA2, dA1); cmp("scan dD", dD2, dD1);
}
/* the decoding step on states h_stride apart, three steps from a random state */
static void t_scan_step(int B, int E, int S) {
    printf("scan_step B%d E%d S%d\n", B, E, S);
    size_t hs = (size_t)E * S + 5;
    V Al = rnd((size_t)E * S, 1, 0.5f), D = rnd(E), h1 = rnd(B * hs), h2 = h1, y1((size_t)B * E), y2 = y1;
    for (int t = 0; t < 3; t++) {
        V u = rnd((size_t)B * E), dt = rnd(u.size(), 0.2f, 0.25f), Bm = rnd((size_t)B * S), Cm = rnd(Bm.size());
        cpu_scan_step(y1.data(), h1.data(), hs, u.data(), dt.data(), Bm.data(), Cm.data(), Al.data(), D.data(), B, E, S);
        cuda_scan_step(y2.data(), h2.data(), hs, u.data(), dt.data(), Bm.data(), Cm.data(), Al.data(), D.data(), B, E, S);
        cmp("scan_step y", y2, y1); cmp("scan_step h", h2, h1);
    }
}
/* the decoding step over a key/value cache of Nmax rows, sequences state_stride apart, N steps
 * from an empty cache (the cache and its score rows compared too) */
static void t_attn_step(int B, int H, int d, int N, int Nmax) {
    printf("attn_step B%d H%d d%d N%d Nmax%d\n", B, H, d, N, Nmax);
    size_t ss = 2 * (size_t)H * Nmax * d + (size_t)H * Nmax + 3, hd = (size_t)H * d;
    V st1((size_t)B * ss, 0.f), st2 = st1, o1((size_t)B * hd), o2 = o1;
    float sc = 1 / sqrtf((float)d);
    for (int i = 0; i < N; i++) {
        V q = rnd((size_t)B * hd, 2), k = rnd(q.size(), 2), v = rnd(q.size());
        cpu_attn_step(o1.data(), st1.data(), ss, q.data(), k.data(), v.data(), B, H, d, Nmax, i, sc);
        cuda_attn_step(o2.data(), st2.data(), ss, q.data(), k.data(), v.data(), B, H, d, Nmax, i, sc);
        if (i % 37 == 0 || i == N - 1) cmp("attn_step out", o2, o1);
    }
    cmp("attn_step cache", st2, st1);
}
/* rotary positions: forward out of place and in place, backward (the inverse rotation) */
static void t_rope(int B, int H, int N, int d, int pos0) {
    size_t n = (size_t)B * H * N * d;
    V x = rnd(n, 2), a(n), b(n);
    cpu_rope_forward(a.data(), x.data(), B, H, N, d, pos0, 10000.f);
    cuda_rope_forward(b.data(), x.data(), B, H, N, d, pos0, 10000.f); cmp("rope fwd", b, a);
    b = x; cuda_rope_forward(b.data(), b.data(), B, H, N, d, pos0, 10000.f); cmp("rope fwd in place", b, a);
    cpu_rope_backward(a.data(), x.data(), B, H, N, d, pos0, 10000.f);
    cuda_rope_backward(b.data(), x.data(), B, H, N, d, pos0, 10000.f); cmp("rope bwd", b, a);
}
static void t_attn(int B, int H, int N, int d, int causal, int pad, double p, int window) {
    printf("attn B%d H%d N%d d%d causal%d pad%d dropout%g window%d\n", B, H, N, d, causal, pad, p, window);
    /* attention dropout: both backends draw the mask of ops/dropout.h; a slice of a larger batch */
    GmaDrop dg = {{1337u, 0u}, 5u, (2u << 16) | (1u << 4) | GMA_DROP_ATTN, gma_drop_threshold(p), 1.0 / (1.0 - p), B, 3 * (int64_t)B, 1};
    const GmaDrop *drop = p > 0 ? &dg : NULL;
    size_t n = (size_t)B * H * N * d; V q = rnd(n, 2), k = rnd(n, 2), v = rnd(n);
    V kb((size_t)B * N, 0.f);
    if (pad == 1) for (int b = 0; b < B; b++) for (int j = 0; j < N; j++) if (j % 5 == 3 || (b == 1 && j < 40)) kb[b * N + j] = -INFINITY;
    if (pad == 2) for (int b = 0; b < B; b++) for (int j = 3 * N / 5; j < N; j++) kb[b * N + j] = -INFINITY; /* cross layer */
    float sc = 1 / sqrtf((float)d);
    V o1(n), o2(n), l1((size_t)B * H * N), l2(l1.size());
    cpu_attn_forward(o1.data(), l1.data(), q.data(), k.data(), v.data(), pad ? kb.data() : NULL, B, H, N, d, causal, window, sc, drop);
    cuda_attn_forward(o2.data(), l2.data(), q.data(), k.data(), v.data(), pad ? kb.data() : NULL, B, H, N, d, causal, window, sc, drop);
    cmp("attn out", o2, o1); cmp("attn lse", l2, l1);
    V g = rnd(n), dq1 = rnd(n), dq2 = dq1, dk1 = rnd(n), dk2 = dk1, dv1 = rnd(n), dv2 = dv1;
    cpu_attn_backward(dq1.data(), dk1.data(), dv1.data(), g.data(), o1.data(), l1.data(), q.data(), k.data(), v.data(), pad ? kb.data() : NULL, B, H, N, d, causal, window, sc, drop);
    cuda_attn_backward(dq2.data(), dk2.data(), dv2.data(), g.data(), o1.data(), l1.data(), q.data(), k.data(), v.data(), pad ? kb.data() : NULL, B, H, N, d, causal, window, sc, drop);
    cmp("attn dq", dq2, dq1); cmp("attn dk", dk2, dk1); cmp("attn dv", dv2, dv1);
}
/* the table (op_rows.h, BASE_ROWS) */
static const Row ROWS[] = {BASE_ROWS(ROW_ENTRY)};

int main(int argc, char **argv) {
    const char *w = argc > 1 ? argv[1] : "all";
    RowsRun r = run_rows(ROWS, w, "all", ncheck);
    int rc = print_summary("emu_baselines", r, (int)(sizeof ROWS / sizeof ROWS[0]), ncheck, nfail);
    printf("\n");
    return rc;
}
