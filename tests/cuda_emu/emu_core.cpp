/* emu_core.cpp: the rest of the CUDA backend under the CPU emulation: every .cu file of
 * src/ops/cuda rewritten by launch2call.c, with cuda_core.cu's own start-up, memory,
 * cuBLAS GEMM wrappers, reductions and optimisers running on the runtime and cuBLAS shims
 * of emu_cuda.h. The CUDA op table comes from cuda_ops_init (as on a GPU) and every op not
 * checked by emu_baselines is compared with its twin in gma_ops_cpu (build/libgma.a), one
 * row of the op table op_rows.h at a time (t_<op> per row, op_driver.h):
 * memory ops, matmul (both transposes, alpha/beta, K = 0, tf32 and bf16 modes), strided
 * matmul, bias, add/axpy/scale, sum/sumsq/nonfinite, GELU, LayerNorm, embeddings, cross-
 * entropy, argmax, head split/merge, row softmax, attention mask, linmix (bidirectional and
 * causal; chunks that divide N, that do not, and one chunk; the decoding step linmix_step), GMA routing (per-head and
 * shared, Kc over 32), the diversity loss, pair features, AdamW and SGD, and the
 * convolutional stem's im2col (both tap orders) and per-channel normalisation, max pooling, and Gated DeltaNet's
 * row normalisation, delta rule (forward, backward, decoding step). Bound: relative L2
 * error 1e-4 per tensor in fp32 (tf32 2e-3, bf16 1e-2 against the fp32 CPU product);
 * integer outputs and the copy ops must match exactly. Run by scripts/cuda_emu_check.sh. */
#include "ops/cuda/cuda_common.cuh"
extern "C" {
#include "ops/cpu/cpu.h"
}
#include <random>

#include "op_driver.h"
#include "op_rows.h"

static const GmaOps *CU, *CP = &gma_ops_cpu;
static std::mt19937 rng(7);
typedef std::vector<float> V;
typedef std::vector<int32_t> VI;
static V rnd(size_t n, float a = 1, float off = 0) { std::uniform_real_distribution<float> u(-a, a); V v(n); for (auto &x : v) x = u(rng) + off; return v; }
static int nfail = 0, ncheck = 0;
static double worst = 0;
static void cmp(const char *name, const V &a, const V &b, double tol = 1e-4) {
    double num = 0, den = 0, mx = 0; bool same = a.size() == b.size();
    for (size_t i = 0; same && i < a.size(); i++) {
        if (std::isinf(a[i]) || std::isinf(b[i])) { if (a[i] != b[i]) same = false; continue; }
        double d = (double)a[i] - b[i]; num += d * d; den += (double)b[i] * b[i]; mx = fmax(mx, fabs(d)); }
    double rel = sqrt(num / (den > 0 ? den : 1));
    bool ok = same && rel < tol && std::isfinite(rel);
    ncheck++; if (!ok) nfail++;
    if (tol <= 1e-4 && rel > worst) worst = rel;
    printf("%-44s rel %.2e maxabs %.2e %s\n", name, rel, mx, ok ? "ok" : "FAIL");
}
static void cmpi(const char *name, const VI &a, const VI &b) {
    size_t bad = 0; for (size_t i = 0; i < a.size(); i++) bad += a[i] != b[i];
    ncheck++; if (bad) nfail++;
    printf("%-44s %zu of %zu differ %s\n", name, bad, a.size(), bad ? "FAIL" : "ok");
}
static void cmpd(const char *name, double a, double b, double tol = 1e-6) {
    double rel = fabs(a - b) / fmax(fabs(b), 1e-30); bool ok = rel < tol || a == b;
    ncheck++; if (!ok) nfail++;
    if (rel > worst && tol <= 1e-4) worst = rel;
    printf("%-44s %.10g vs %.10g rel %.1e %s\n", name, a, b, rel, ok ? "ok" : "FAIL");
}
#define F(v) (v).data()

static void t_mem() {
    size_t n = 1000; V h = rnd(n), back(n, 7.f);
    float *d = (float *)CU->alloc(n * sizeof(float)), *e = (float *)CU->alloc(n * sizeof(float));
    CU->to_host(F(back), d, n * sizeof(float));
    cmp("alloc zero-filled", back, V(n, 0.f), 1e-30);
    CU->to_device(d, F(h), n * sizeof(float)); CU->copy(e, d, n * sizeof(float)); CU->to_host(F(back), e, n * sizeof(float));
    cmp("to_device / copy / to_host", back, h, 1e-30);
    CU->zero(e + 10, 20 * sizeof(float)); CU->to_host(F(back), e, n * sizeof(float));
    for (int i = 10; i < 30; i++) h[i] = 0;
    cmp("zero (a slice)", back, h, 1e-30);
    size_t use = 0, peak = 0; CU->mem_stats(&use, &peak);
    CU->free(d); CU->free(e); CU->free(NULL);
    size_t use2 = 0; CU->mem_stats(&use2, &peak);
    printf("%-44s in use %zu -> %zu bytes %s\n", "mem stats track alloc/free", use, use2, use - use2 == 2 * n * sizeof(float) ? "ok" : "FAIL");
    ncheck++; if (use - use2 != 2 * n * sizeof(float)) nfail++;
}
static void t_matmul(int precision, double tol) {
    static const char *const names[] = {"fp32", "tf32", "bf16"}; /* OpsPrecision's order */
    const char *prec = names[precision];
    char nm[96];
    CU->set_precision(precision);
    int dims[][3] = {{17, 23, 31}, {1, 40, 7}, {33, 1, 65}, {5, 6, 0}};
    for (auto &D : dims) for (int ta = 0; ta < 2; ta++) for (int tb = 0; tb < 2; tb++) {
        int M = D[0], N = D[1], K = D[2];
        V A = rnd((size_t)M * K), B = rnd((size_t)K * N), C1 = rnd((size_t)M * N), C2 = C1;
        float al = 0.7f, be = (ta + tb) == 1 ? 0.f : -1.3f;
        CP->matmul(F(C1), F(A), F(B), M, N, K, ta, tb, al, be); CU->matmul(F(C2), F(A), F(B), M, N, K, ta, tb, al, be);
        snprintf(nm, sizeof nm, "matmul %s M%d N%d K%d ta%d tb%d beta%g", prec, M, N, K, ta, tb, be); cmp(nm, C2, C1, tol);
    }
    for (int ta = 0; ta < 2; ta++) for (int tb = 0; tb < 2; tb++) {
        int M = 9, N = 13, K = 11, bt = 3; size_t sA = M * K + 5, sB = K * N + 2, sC = M * N + 3;
        V A = rnd(bt * sA), B = rnd(bt * sB), C1 = rnd(bt * sC), C2 = C1;
        CP->matmul_strided(F(C1), F(A), F(B), M, N, K, ta, tb, 1.1f, 0.5f, bt, sA, sB, sC);
        CU->matmul_strided(F(C2), F(A), F(B), M, N, K, ta, tb, 1.1f, 0.5f, bt, sA, sB, sC);
        snprintf(nm, sizeof nm, "matmul_strided %s ta%d tb%d batch%d", prec, ta, tb, bt); cmp(nm, C2, C1, tol);
    }
    { /* shared B (stride 0) */
        int M = 6, N = 5, K = 4, bt = 4; V A = rnd(bt * M * K), B = rnd(K * N), C1(bt * M * N), C2(C1.size());
        CP->matmul_strided(F(C1), F(A), F(B), M, N, K, 0, 0, 1, 0, bt, M * K, 0, M * N);
        CU->matmul_strided(F(C2), F(A), F(B), M, N, K, 0, 0, 1, 0, bt, M * K, 0, M * N);
        snprintf(nm, sizeof nm, "matmul_strided %s sB=0", prec); cmp(nm, C2, C1, tol);
    }
    CU->set_precision(OPS_FP32);
}
static void t_basic(int R, int C) {
    size_t n = (size_t)R * C;
    V x = rnd(n, 3), y = rnd(n), b = rnd(C), o1 = rnd(n), o2 = o1;
    CP->bias_forward(F(o1), F(b), R, C); CU->bias_forward(F(o2), F(b), R, C); cmp("bias_forward", o2, o1);
    V db1 = rnd(C), db2 = db1; CP->bias_backward(F(db1), F(x), R, C); CU->bias_backward(F(db2), F(x), R, C); cmp("bias_backward", db2, db1);
    { int R2 = 600, C2 = 33; V X = rnd((size_t)R2 * C2), d1 = rnd(C2), d2 = d1;
      CP->bias_backward(F(d1), F(X), R2, C2); CU->bias_backward(F(d2), F(X), R2, C2); cmp("bias_backward R600 (3 row blocks)", d2, d1); }
    CP->add(F(o1), F(x), F(y), n); CU->add(F(o2), F(x), F(y), n); cmp("add", o2, o1);
    o2 = o1; CP->axpy(F(o1), -0.3f, F(x), n); CU->axpy(F(o2), -0.3f, F(x), n); cmp("axpy", o2, o1);
    o2 = o1; CP->scale(F(o1), 1.7f, n); CU->scale(F(o2), 1.7f, n); cmp("scale", o2, o1);
    V big = rnd(50000, 2, 0.1f);
    cmpd("sum", CU->sum(F(big), big.size()), CP->sum(F(big), big.size()), 1e-9);
    cmpd("sumsq", CU->sumsq(F(big), big.size()), CP->sumsq(F(big), big.size()), 1e-9);
    int nf1 = CP->nonfinite(F(big), big.size()), nf2 = CU->nonfinite(F(big), big.size());
    big[31234] = NAN; int nf3 = CP->nonfinite(F(big), big.size()), nf4 = CU->nonfinite(F(big), big.size());
    big[31234] = 1; big[49999] = -INFINITY; int nf5 = CU->nonfinite(F(big), big.size());
    cmpi("nonfinite (finite, nan, -inf)", VI{nf2, nf4, nf5}, VI{nf1, nf3, 1});
    V g = rnd(n); CP->gelu_forward(F(o1), F(x), n); CU->gelu_forward(F(o2), F(x), n); cmp("gelu fwd", o2, o1);
    o1 = rnd(n); o2 = o1; CP->gelu_backward(F(o1), F(g), F(x), n); CU->gelu_backward(F(o2), F(g), F(x), n); cmp("gelu bwd", o2, o1);
    { V p1 = x, p2 = x, y1(n), y2(n);
      CP->bias_gelu_forward(F(p1), F(y1), F(b), R, C); CU->bias_gelu_forward(F(p2), F(y2), F(b), R, C);
      cmp("bias_gelu fwd pre", p2, p1); cmp("bias_gelu fwd out", y2, y1);
      V d1(n), d2 = g, e1 = rnd(C), e2 = e1;
      CP->bias_gelu_backward(F(d1), F(e1), F(g), F(p1), R, C); CU->bias_gelu_backward(F(d2), F(e2), F(d2), F(p1), R, C);
      cmp("bias_gelu bwd (cuda in place)", d2, d1); cmp("bias_gelu bwd dbias", e2, e1);
      p2 = x; CU->bias_gelu_forward(F(p2), F(y2), nullptr, R, C); CP->gelu_forward(F(y1), F(x), n);
      cmp("bias_gelu fwd, no bias", y2, y1); }
    /* dropout: the same mask on both backends (a rank's slice of two segments, n = 2 * 3 * 37 rows) */
    if (n % 6 == 0) {
        GmaDrop dg = {{7u, 9u}, 11u, (3u << 16) | (2u << 4) | GMA_DROP_MIXER, gma_drop_threshold(0.2), 1.0 / 0.8, 3, 6, 3};
        CP->dropout(F(o1), F(x), 6, n / 6, &dg); CU->dropout(F(o2), F(x), 6, n / 6, &dg); cmp("dropout", o2, o1);
    }
    CP->relu_forward(F(o1), F(x), n); CU->relu_forward(F(o2), F(x), n); cmp("relu fwd", o2, o1);
    o1 = rnd(n); o2 = o1; CP->relu_backward(F(o1), F(g), F(x), n); CU->relu_backward(F(o2), F(g), F(x), n); cmp("relu bwd", o2, o1);
}
/* rms: RMSNorm (mean and b NULL, ops.h) */
static void t_ln(int R, int C, int rms) {
    char nm[64]; size_t n = (size_t)R * C;
    V x = rnd(n, 2, 0.5f), w = rnd(C, 1, 1), b = rnd(C), o1(n), o2(n), m1(R), m2(R), r1(R), r2(R);
#define MN(v) (rms ? NULL : F(v))
    CP->layernorm_forward(F(o1), MN(m1), F(r1), F(x), F(w), MN(b), R, C); CU->layernorm_forward(F(o2), MN(m2), F(r2), F(x), F(w), MN(b), R, C);
    snprintf(nm, sizeof nm, "%s fwd R%d C%d out", rms ? "rmsnorm" : "layernorm", R, C); cmp(nm, o2, o1);
    cmp("layernorm fwd mean", m2, m1); cmp("layernorm fwd rstd", r2, r1);
    V g = rnd(n), dx1 = rnd(n), dx2 = dx1, dw1 = rnd(C), dw2 = dw1, db1 = rnd(C), db2 = db1;
    CP->layernorm_backward(F(dx1), F(dw1), MN(db1), F(g), F(x), F(w), MN(m1), F(r1), R, C);
    CU->layernorm_backward(F(dx2), F(dw2), MN(db2), F(g), F(x), F(w), MN(m1), F(r1), R, C);
    cmp("layernorm bwd dx", dx2, dx1); cmp("layernorm bwd dw", dw2, dw1); cmp("layernorm bwd db", db2, db1);
    V a = rnd(n, 4, 0.5f), s1(n), s2 = a;
    CP->add_layernorm_forward(F(s1), F(o1), MN(m1), F(r1), F(a), F(x), F(w), MN(b), R, C);
    CU->add_layernorm_forward(F(s2), F(o2), MN(m2), F(r2), F(s2), F(x), F(w), MN(b), R, C); /* sum = a */
#undef MN
    cmp("add_layernorm sum", s2, s1); cmp("add_layernorm out", o2, o1);
    cmp("add_layernorm mean", m2, m1); cmp("add_layernorm rstd", r2, r1);
}
/* the convolutional stem: im2col at dilation dil and -dil (mirrored taps; exact copies)
 * and the per-channel normalisation, statistics computed and given */
static void t_conv(int S, int H, int W, int C, int dil) {
    char nm[64]; size_t n = (size_t)S * H * W * C;
    V x = rnd(n), c1(n * 9), c2(n * 9);
    for (int sgn = 1; sgn >= -1; sgn -= 2) {
        CP->im2col3x3(F(c1), F(x), S, H, W, C, sgn * dil); CU->im2col3x3(F(c2), F(x), S, H, W, C, sgn * dil);
        snprintf(nm, sizeof nm, "im2col3x3 S%d %dx%d C%d dil %d", S, H, W, C, sgn * dil); cmp(nm, c2, c1, 1e-7);
    }
}
static void t_maxpool(int S, int N, int D) {
    char nm[64]; size_t n = (size_t)S * N * D;
    V x = rnd(n), w(S * N), o1(S * D), o2(S * D), g = rnd(S * D), d1 = rnd(n), d2 = d1;
    VI a1(S * D), a2(S * D);
    for (int i = 0; i < S * N; i++) w[i] = (i % 7 == 3 || (i / N) == S - 1) ? 0.f : 0.5f; /* padding; the last row all padding */
    for (size_t i = 0; i + 5 < n; i += 11) x[i + 5] = x[i]; /* ties */
    CP->maxpool_forward(F(o1), F(a1), F(x), F(w), S, N, D); CU->maxpool_forward(F(o2), F(a2), F(x), F(w), S, N, D);
    snprintf(nm, sizeof nm, "maxpool fwd S%d N%d D%d", S, N, D); cmp(nm, o2, o1, 1e-7); cmpi("maxpool fwd arg", a2, a1);
    CP->maxpool_backward(F(d1), F(g), F(a1), S, N, D); CU->maxpool_backward(F(d2), F(g), F(a1), S, N, D);
    cmp("maxpool bwd dx", d2, d1, 1e-7);
}
static void t_chnorm(int S, int N, int C) {
    char nm[64]; size_t n = (size_t)S * N * C, ns = (size_t)S * C;
    V x = rnd(n, 2, 0.7f), w = rnd(C, 1, 1), b = rnd(C), o1(n), o2(n), m1(ns), m2(ns), r1(ns), r2(ns);
    CP->chnorm_forward(F(o1), F(m1), F(r1), F(x), F(w), F(b), S, N, C, 1);
    CU->chnorm_forward(F(o2), F(m2), F(r2), F(x), F(w), F(b), S, N, C, 1);
    snprintf(nm, sizeof nm, "chnorm fwd S%d N%d C%d out", S, N, C); cmp(nm, o2, o1);
    cmp("chnorm fwd mean", m2, m1); cmp("chnorm fwd rstd", r2, r1);
    V o3(n); CU->chnorm_forward(F(o3), F(m1), F(r1), F(x), F(w), F(b), S, N, C, 0); cmp("chnorm fwd given statistics", o3, o1);
    V g = rnd(n), dx1 = rnd(n), dx2 = dx1, dw1 = rnd(C), dw2 = dw1, db1 = rnd(C), db2 = db1;
    CP->chnorm_backward(F(dx1), F(dw1), F(db1), F(g), F(x), F(w), F(m1), F(r1), S, N, C);
    CU->chnorm_backward(F(dx2), F(dw2), F(db2), F(g), F(x), F(w), F(m1), F(r1), S, N, C);
    cmp("chnorm bwd dx", dx2, dx1); cmp("chnorm bwd dw", dw2, dw1); cmp("chnorm bwd db", db2, db1);
}
static void t_embed(int B, int T, int C, int Vv, int pos) {
    char nm[64]; VI tok(B * T); std::uniform_int_distribution<int> u(0, Vv - 1); for (auto &t : tok) t = u(rng);
    if (B * T > 2) tok[0] = tok[1] = tok[B * T - 1]; /* repeats */
    V wte = rnd((size_t)Vv * C), wpe = rnd((size_t)T * C), o1((size_t)B * T * C), o2(o1.size());
    CP->embed_forward(F(o1), F(tok), F(wte), pos ? F(wpe) : NULL, B, T, C);
    CU->embed_forward(F(o2), F(tok), F(wte), pos ? F(wpe) : NULL, B, T, C);
    snprintf(nm, sizeof nm, "embed fwd B%d T%d C%d V%d pos%d", B, T, C, Vv, pos); cmp(nm, o2, o1);
    V g = rnd(o1.size()), dte1 = rnd(wte.size()), dte2 = dte1, dpe1 = rnd(wpe.size()), dpe2 = dpe1;
    CP->embed_backward(F(dte1), pos ? F(dpe1) : NULL, F(g), F(tok), B, T, C);
    CU->embed_backward(F(dte2), pos ? F(dpe2) : NULL, F(g), F(tok), B, T, C);
    cmp("embed bwd dwte", dte2, dte1); if (pos) cmp("embed bwd dwpe", dpe2, dpe1);
}
static void t_xent(int R, int Vv) {
    char nm[64]; V l = rnd((size_t)R * Vv, 4); VI tg(R); std::uniform_int_distribution<int> u(0, Vv - 1);
    for (int r = 0; r < R; r++) tg[r] = r % 5 == 2 ? -1 : u(rng);
    V L1(R), L2(R), v1(R), v2(R);
    CP->xent_forward(F(L1), F(v1), F(l), F(tg), R, Vv); CU->xent_forward(F(L2), F(v2), F(l), F(tg), R, Vv);
    snprintf(nm, sizeof nm, "xent fwd R%d V%d loss", R, Vv); cmp(nm, L2, L1); cmp("xent fwd valid", v2, v1, 1e-30);
    V d1 = l, d2 = l; CP->xent_backward(F(d1), F(tg), R, Vv, 0.37f); CU->xent_backward(F(d2), F(tg), R, Vv, 0.37f);
    cmp("xent bwd", d2, d1);
    V g1 = l, g2 = l, G1(R), G2(R), w1(R), w2(R);
    CP->xent_grad(F(G1), F(w1), F(g1), F(tg), R, Vv); CU->xent_grad(F(G2), F(w2), F(g2), F(tg), R, Vv);
    cmp("xent grad loss", G2, G1); cmp("xent grad valid", w2, w1, 1e-30); cmp("xent grad", g2, g1);
    V a = l; for (int r = 0; r < R; r++) { if (r % 3 == 0) a[(size_t)r * Vv + Vv - 1] = a[(size_t)r * Vv + 1] = 9; /* tie: first wins */
        if (r == 4) for (int i = 0; i < Vv; i++) a[(size_t)r * Vv + i] = -INFINITY; }
    VI i1(R), i2(R); CP->argmax_rows(F(i1), F(a), R, Vv); CU->argmax_rows(F(i2), F(a), R, Vv);
    snprintf(nm, sizeof nm, "argmax_rows R%d V%d (ties, -inf row)", R, Vv); cmpi(nm, i2, i1);
}
static void t_distill(int R, int Vv, float T) {
    auto keep = rng; /* the later rows draw what they drew before these rows came */
    char nm[64]; V s = rnd((size_t)R * Vv, 4), t = rnd((size_t)R * Vv, 3); VI tg(R);
    std::uniform_int_distribution<int> u(0, Vv - 1);
    for (int r = 0; r < R; r++) tg[r] = r % 5 == 2 ? -1 : u(rng);
    V k1(R), k2(R), t1 = t, t2 = t;
    CP->distill_grad(F(k1), F(t1), F(s), F(tg), R, Vv, T, 0.8f); CU->distill_grad(F(k2), F(t2), F(s), F(tg), R, Vv, T, 0.8f);
    snprintf(nm, sizeof nm, "distill R%d V%d T%g kl", R, Vv, T); cmp(nm, k2, k1); cmp("distill grad", t2, t1);
    rng = keep;
}
static void t_heads(int B, int N, int H, int d) {
    size_t n = (size_t)B * N * H * d; V x = rnd(n), h1(n), h2(n), m1(n), m2(n);
    CP->split_heads(F(h1), F(x), B, N, H, d); CU->split_heads(F(h2), F(x), B, N, H, d); cmp("split_heads", h2, h1, 1e-30);
    CP->merge_heads(F(m1), F(h1), B, N, H, d); CU->merge_heads(F(m2), F(h1), B, N, H, d); cmp("merge_heads", m2, m1, 1e-30);
}
static void t_softmax(int R, int C, int bias) {
    char nm[64]; V x = rnd((size_t)R * C, 3), cb = rnd(C);
    if (bias) { cb[0] = -INFINITY; cb[C / 2] = -INFINITY; }
    V a = x, b = x;
    if (bias && C <= 8) cb.assign(C, -INFINITY); /* fully masked rows */
    CP->softmax_rows(F(a), R, C, 0.6f, bias ? F(cb) : NULL); CU->softmax_rows(F(b), R, C, 0.6f, bias ? F(cb) : NULL);
    snprintf(nm, sizeof nm, "softmax_rows R%d C%d colbias%d", R, C, bias); cmp(nm, b, a);
    V g = rnd(x.size()), g1 = g, g2 = g; CP->softmax_rows_backward(F(g1), F(a), R, C); CU->softmax_rows_backward(F(g2), F(a), R, C);
    cmp("softmax_rows bwd", g2, g1);
}
static void t_mask(int B, int H, int N) {
    char nm[64]; std::vector<uint8_t> km(B * N); for (int i = 0; i < B * N; i++) km[i] = (i * 7) % 5 != 0;
    for (int causal = 0; causal < 2; causal++) for (int usekm = 0; usekm < 2; usekm++) {
        V S = rnd((size_t)B * H * N * N), a = S, b = S;
        CP->attn_mask(F(a), usekm ? km.data() : NULL, B, H, N, causal); CU->attn_mask(F(b), usekm ? km.data() : NULL, B, H, N, causal);
        snprintf(nm, sizeof nm, "attn_mask B%d H%d N%d causal%d keymask%d", B, H, N, causal, usekm); cmp(nm, b, a, 1e-30);
    }
}
static void t_linmix(int BH, int N, int F_, int d, int causal, int chunk) {
    printf("linmix BH%d N%d F%d d%d causal%d chunk%d\n", BH, N, F_, d, causal, chunk);
    V q = rnd((size_t)BH * N * F_, 0.5f, 0.6f), k = rnd(q.size(), 0.5f, 0.6f), v = rnd((size_t)BH * N * d);
    for (int i = 0; i < F_; i++) k[(size_t)(N - 1) * F_ + i] = 0; /* a padded key */
    int nc = causal ? (N + chunk - 1) / chunk : 1; size_t st = (size_t)F_ * d + F_;
    V o1((size_t)BH * N * d), o2(o1.size()), dn1((size_t)BH * N), dn2(dn1.size()), s1((size_t)BH * nc * st), s2(s1.size());
    CP->linmix_forward(F(o1), F(dn1), F(s1), F(q), F(k), F(v), BH, N, F_, d, causal, chunk, 1e-6f);
    CU->linmix_forward(F(o2), F(dn2), F(s2), F(q), F(k), F(v), BH, N, F_, d, causal, chunk, 1e-6f);
    cmp("linmix out", o2, o1); cmp("linmix den", dn2, dn1); cmp("linmix state", s2, s1);
    V g = rnd(o1.size()), dq1 = rnd(q.size()), dq2 = dq1, dk1 = rnd(k.size()), dk2 = dk1, dv1 = rnd(v.size()), dv2 = dv1;
    CP->linmix_backward(F(dq1), F(dk1), F(dv1), F(g), F(o1), F(dn1), F(s1), F(q), F(k), F(v), BH, N, F_, d, causal, chunk);
    CU->linmix_backward(F(dq2), F(dk2), F(dv2), F(g), F(o1), F(dn1), F(s1), F(q), F(k), F(v), BH, N, F_, d, causal, chunk);
    cmp("linmix dphq", dq2, dq1); cmp("linmix dphk", dk2, dk1); cmp("linmix dv", dv2, dv1);
    /* no saved state: both backends rescan it (into accumulators that start non-zero, as above) */
    V eq1 = rnd(q.size()), ek1 = rnd(k.size()), ev1 = rnd(v.size()), eq2 = eq1, ek2 = ek1, ev2 = ev1, z1 = eq1, zk = ek1,
      zv = ev1;
    CP->linmix_backward(F(eq1), F(ek1), F(ev1), F(g), F(o1), F(dn1), NULL, F(q), F(k), F(v), BH, N, F_, d, causal, chunk);
    CU->linmix_backward(F(eq2), F(ek2), F(ev2), F(g), F(o1), F(dn1), NULL, F(q), F(k), F(v), BH, N, F_, d, causal, chunk);
    CP->linmix_backward(F(z1), F(zk), F(zv), F(g), F(o1), F(dn1), F(s1), F(q), F(k), F(v), BH, N, F_, d, causal, chunk);
    cmp("linmix rescan dphq (cpu)", eq1, z1); cmp("linmix rescan dphk (cpu)", ek1, zk); cmp("linmix rescan dv (cpu)", ev1, zv);
    cmp("linmix rescan dphq", eq2, z1); cmp("linmix rescan dphk", ek2, zk); cmp("linmix rescan dv", ev2, zv);
}
/* the bidirectional core as the cross layer runs it (nn/mixers/cross.c): per head, query
 * rows past nq and key and value rows past nk zero (the shorter sequence padded) */
static void t_linmix_cross(int BH, int N, int F_, int d, int nq, int nk) {
    printf("linmix cross BH%d N%d F%d d%d queries %d keys %d\n", BH, N, F_, d, nq, nk);
    V q = rnd((size_t)BH * N * F_, 0.5f, 0.6f), k = rnd(q.size(), 0.5f, 0.6f), v = rnd((size_t)BH * N * d);
    for (int h = 0; h < BH; h++)
        for (int n = 0; n < N; n++) {
            for (int i = 0; i < F_; i++) {
                if (n >= nq) q[((size_t)h * N + n) * F_ + i] = 0;
                if (n >= nk) k[((size_t)h * N + n) * F_ + i] = 0;
            }
            for (int i = 0; i < d && n >= nk; i++) v[((size_t)h * N + n) * d + i] = 0;
        }
    size_t st = (size_t)F_ * d + F_;
    V o1((size_t)BH * N * d), o2(o1.size()), dn1((size_t)BH * N), dn2(dn1.size()), s1((size_t)BH * st), s2(s1.size());
    CP->linmix_forward(F(o1), F(dn1), F(s1), F(q), F(k), F(v), BH, N, F_, d, 0, 1, 1e-6f);
    CU->linmix_forward(F(o2), F(dn2), F(s2), F(q), F(k), F(v), BH, N, F_, d, 0, 1, 1e-6f);
    cmp("linmix cross out", o2, o1); cmp("linmix cross den", dn2, dn1);
    V g = rnd(o1.size()), dq1 = rnd(q.size()), dq2 = dq1, dk1 = rnd(k.size()), dk2 = dk1, dv1 = rnd(v.size()), dv2 = dv1;
    CP->linmix_backward(F(dq1), F(dk1), F(dv1), F(g), F(o1), F(dn1), NULL, F(q), F(k), F(v), BH, N, F_, d, 0, 1);
    CU->linmix_backward(F(dq2), F(dk2), F(dv2), F(g), F(o1), F(dn1), NULL, F(q), F(k), F(v), BH, N, F_, d, 0, 1);
    cmp("linmix cross dphq", dq2, dq1); cmp("linmix cross dphk", dk2, dk1); cmp("linmix cross dv", dv2, dv1);
}
static void t_linmix_step(int B, int H, int F_, int d) {
    printf("linmix_step B%d H%d F%d d%d\n", B, H, F_, d);
    size_t ss = (size_t)H * F_ * d + (size_t)H * F_ + 3; /* a stride past the state, as a caller's extra slots */
    V s1((size_t)B * ss), s2(s1.size()), o1((size_t)B * H * d), o2(o1.size());
    for (int t = 0; t < 3; t++) { /* three tokens: the state carried from call to call */
        V q = rnd((size_t)B * H * F_, 0.5f, 0.6f), k = rnd(q.size(), 0.5f, 0.6f), v = rnd((size_t)B * H * d);
        CP->linmix_step(F(o1), F(s1), ss, F(q), F(k), F(v), B, H, F_, d, 1e-6f);
        CU->linmix_step(F(o2), F(s2), ss, F(q), F(k), F(v), B, H, F_, d, 1e-6f);
    }
    cmp("linmix_step out", o2, o1); cmp("linmix_step state", s2, s1);
}
static void t_route(int B, int H, int N, int d, int Kc, int shared) {
    printf("gma_route B%d H%d N%d d%d Kc%d shared%d\n", B, H, N, d, Kc, shared);
    int Hp = shared ? 1 : H; float tau = 0.8f, vf = 0.05f;
    V x = rnd((size_t)B * H * N * d), mu = rnd((size_t)Hp * Kc * d), vr = rnd(mu.size(), 1.5f), pr = rnd((size_t)Hp * Kc);
    if (Kc > 3) vr[3] = 25.f; /* softplus linear branch */
    V g1((size_t)B * H * N * Kc), g2(g1.size());
    CP->gma_route_forward(F(g1), F(x), F(mu), F(vr), F(pr), B, H, N, d, Kc, tau, vf, shared);
    CU->gma_route_forward(F(g2), F(x), F(mu), F(vr), F(pr), B, H, N, d, Kc, tau, vf, shared);
    cmp("gma_route gamma", g2, g1);
    V dg = rnd(g1.size()), dx1 = rnd(x.size()), dx2 = dx1, dm1 = rnd(mu.size()), dm2 = dm1, dv1 = rnd(mu.size()), dv2 = dv1, dp1 = rnd(pr.size()), dp2 = dp1;
    CP->gma_route_backward(F(dx1), F(dm1), F(dv1), F(dp1), F(dg), F(g1), F(x), F(mu), F(vr), F(pr), B, H, N, d, Kc, tau, vf, shared);
    CU->gma_route_backward(F(dx2), F(dm2), F(dv2), F(dp2), F(dg), F(g1), F(x), F(mu), F(vr), F(pr), B, H, N, d, Kc, tau, vf, shared);
    cmp("gma_route dx", dx2, dx1); cmp("gma_route dmu", dm2, dm1); cmp("gma_route dvar_raw", dv2, dv1); cmp("gma_route dprior", dp2, dp1);
}
static void t_dirichlet(int Hp, int Kc, int dropped) {
    auto keep = rng; /* the later rows draw what they drew before these rows came */
    printf("gma_dirichlet Hp%d Kc%d dropped%d\n", Hp, Kc, dropped);
    V l = rnd((size_t)Hp * Kc, 2), g1 = rnd(l.size()), g2 = g1;
    for (int i = 0; i < dropped; i++) l[(size_t)(i % Hp) * Kc + 1 + i / Hp] = -1e4f;
    CP->gma_dirichlet_backward(F(g1), F(l), Hp, Kc, 0.37, -5e3f);
    CU->gma_dirichlet_backward(F(g2), F(l), Hp, Kc, 0.37, -5e3f);
    cmp("gma_dirichlet dl", g2, g1);
    rng = keep;
}
static void t_div(int B, int H, int N, int Kc) {
    char nm[80]; V g = rnd((size_t)B * H * N * Kc, 0.45f, 0.5f); std::vector<uint8_t> m(B * N);
    for (int i = 0; i < B * N; i++) m[i] = i % 4 != 1;
    for (int mode = 0; mode < 2; mode++) for (int um = 0; um < 2; um++) {
        const uint8_t *mk = um ? m.data() : NULL;
        snprintf(nm, sizeof nm, "gma_div fwd mode%d mask%d", mode, um);
        cmpd(nm, CU->gma_div_forward(F(g), mk, B, H, N, Kc, mode), CP->gma_div_forward(F(g), mk, B, H, N, Kc, mode), 1e-6);
        V d1 = rnd(g.size()), d2 = d1; CP->gma_div_backward(F(d1), F(g), mk, B, H, N, Kc, mode, 0.3f); CU->gma_div_backward(F(d2), F(g), mk, B, H, N, Kc, mode, 0.3f);
        snprintf(nm, sizeof nm, "gma_div bwd mode%d mask%d", mode, um); cmp(nm, d2, d1);
    }
}
static void t_cls(int B, int D) {
    V u = rnd((size_t)B * D), v = rnd(u.size()), o1((size_t)B * 4 * D), o2(o1.size());
    CP->pair_features_forward(F(o1), F(u), F(v), B, D); CU->pair_features_forward(F(o2), F(u), F(v), B, D); cmp("pair_features fwd", o2, o1);
    V g = rnd(o1.size()), du1 = rnd(u.size()), du2 = du1, dv1 = rnd(u.size()), dv2 = dv1;
    CP->pair_features_backward(F(du1), F(dv1), F(g), F(u), F(v), B, D); CU->pair_features_backward(F(du2), F(dv2), F(g), F(u), F(v), B, D);
    cmp("pair_features bwd du", du2, du1); cmp("pair_features bwd dv", dv2, dv1);
}
static void t_opt(size_t n) {
    V p = rnd(n), g = rnd(n), m = rnd(n, 0.1f), v = rnd(n, 0.01f, 0.011f);
    V p1 = p, p2 = p, m1 = m, m2 = m, v1 = v, v2 = v;
    for (int s = 1; s <= 3; s++) {
        float bc1 = 1 - powf(0.9f, s), bc2 = 1 - powf(0.999f, s);
        CP->adamw(F(p1), F(g), F(m1), F(v1), n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, bc1, bc2);
        CU->adamw(F(p2), F(g), F(m2), F(v2), n, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, bc1, bc2);
    }
    cmp("adamw p (3 steps)", p2, p1); cmp("adamw m", m2, m1); cmp("adamw v", v2, v1);
    for (int mom = 0; mom < 2; mom++) {
        V q1 = p, q2 = p, b1 = m, b2 = m;
        for (int s = 0; s < 3; s++) { CP->sgd(F(q1), F(g), F(b1), n, 0.05f, mom ? 0.9f : 0.f, 0.01f); CU->sgd(F(q2), F(g), F(b2), n, 0.05f, mom ? 0.9f : 0.f, 0.01f); }
        cmp(mom ? "sgd p (momentum 0.9)" : "sgd p (no momentum)", q2, q1); if (mom) cmp("sgd momentum buffer", b2, b1);
    }
}
/* Gated DeltaNet: row normalisation (the L2 norm; the gated RMSNorm with weight and gate) */
static void t_rownorm(int R, int C, int mean, int gated) {
    printf("rownorm R%d C%d mean%d gated%d\n", R, C, mean, gated);
    size_t n = (size_t)R * C; float eps = mean ? 1e-5f : 1e-6f;
    V x = rnd(n, 2), w = rnd(C, 0.5f, 1), g = rnd(n, 3), o1(n), o2(n), r1(R), r2(R);
    const float *pw = gated ? F(w) : NULL, *pg = gated ? F(g) : NULL;
    CP->rownorm_forward(F(o1), F(r1), F(x), pw, pg, R, C, eps, mean);
    CU->rownorm_forward(F(o2), F(r2), F(x), pw, pg, R, C, eps, mean);
    cmp("rownorm out", o2, o1); cmp("rownorm rstd", r2, r1);
    V dy = rnd(n), dx1 = rnd(n), dx2 = dx1, dw1 = rnd(C), dw2 = dw1, dg1 = rnd(n), dg2 = dg1;
    CP->rownorm_backward(F(dx1), gated ? F(dw1) : NULL, gated ? F(dg1) : NULL, F(dy), F(x), pw, pg, F(r1), R, C, mean);
    CU->rownorm_backward(F(dx2), gated ? F(dw2) : NULL, gated ? F(dg2) : NULL, F(dy), F(x), pw, pg, F(r1), R, C, mean);
    cmp("rownorm dx", dx2, dx1);
    if (gated) cmp("rownorm dw", dw2, dw1), cmp("rownorm dg", dg2, dg1);
}
/* the delta rule: outputs, the saved states, every gradient (the CPU's states given to both backward passes) */
static void t_delta(int B, int H, int N, int dk, int dv, int chunk, int delta, int decay, int rows) {
    printf("delta B%d H%d N%d dk%d dv%d chunk%d delta%d decay%d rows%d\n", B, H, N, dk, dv, chunk, delta, decay, rows);
    size_t R = (size_t)B * H * N, nst = (size_t)B * H * ((N + chunk - 1) / chunk + 1) * dk * dv;
    V q = rnd(R * dk, 0.5f), k = rnd(R * dk, 0.5f), v = rnd(R * dv), ga = rnd(R), gb = rnd(R, 1.5f), Al = rnd(H, 0.5f), dtb = rnd(H, 0.5f);
    V sd = rnd((size_t)H * dk, 2);
    const float *pa = decay ? F(ga) : NULL, *pb = delta ? F(gb) : NULL, *pA = decay ? F(Al) : NULL, *pd = decay ? F(dtb) : NULL;
    const float *ps = rows ? F(sd) : NULL;
    V o1(R * dv), o2(o1.size()), s1(nst), s2(nst);
    CP->delta_forward(F(o1), F(s1), F(q), F(k), F(v), pa, pb, pA, pd, ps, B, H, N, dk, dv, chunk, 0.6f);
    CU->delta_forward(F(o2), F(s2), F(q), F(k), F(v), pa, pb, pA, pd, ps, B, H, N, dk, dv, chunk, 0.6f);
    cmp("delta out", o2, o1); cmp("delta states", s2, s1);
    V dout = rnd(o1.size()), dq1 = rnd(q.size()), dq2 = dq1, dk1 = rnd(k.size()), dk2 = dk1, dv1 = rnd(v.size()), dv2 = dv1,
      da1 = rnd(R), da2 = da1, db1 = rnd(R), db2 = db1, dA1 = rnd(H), dA2 = dA1, dt1 = rnd(H), dt2 = dt1,
      ds1 = rnd(sd.size()), ds2 = ds1;
    CP->delta_backward(F(dq1), F(dk1), F(dv1), F(da1), F(db1), F(dA1), F(dt1), F(ds1), F(dout), F(s1), F(q), F(k), F(v), pa, pb, pA, pd, ps, B, H, N, dk, dv, chunk, 0.6f);
    CU->delta_backward(F(dq2), F(dk2), F(dv2), F(da2), F(db2), F(dA2), F(dt2), F(ds2), F(dout), F(s1), F(q), F(k), F(v), pa, pb, pA, pd, ps, B, H, N, dk, dv, chunk, 0.6f);
    cmp("delta dq", dq2, dq1); cmp("delta dk", dk2, dk1); cmp("delta dv", dv2, dv1);
    if (decay) cmp("delta dga", da2, da1), cmp("delta dA_log", dA2, dA1), cmp("delta ddt_bias", dt2, dt1);
    if (delta) cmp("delta dgb", db2, db1);
    if (rows) cmp("delta dsd", ds2, ds1);
}
/* the decoding step on states a stride apart, three steps from a random state */
static void t_delta_step(int B, int H, int dk, int dv, int delta, int decay, int rows) {
    printf("delta_step B%d H%d dk%d dv%d delta%d decay%d rows%d\n", B, H, dk, dv, delta, decay, rows);
    size_t ss = (size_t)H * dk * dv + 5, hd = (size_t)B * H;
    V st1 = rnd(B * ss, 0.3f), st2 = st1, Al = rnd(H, 0.5f), dtb = rnd(H, 0.5f), o1(hd * dv), o2(o1.size());
    V sd = rnd((size_t)H * dk, 2);
    const float *ps = rows ? F(sd) : NULL;
    for (int t = 0; t < 3; t++) {
        V q = rnd(hd * dk, 0.5f), k = rnd(hd * dk, 0.5f), v = rnd(hd * dv), ga = rnd(hd), gb = rnd(hd, 1.5f);
        CP->delta_step(F(o1), F(st1), ss, F(q), F(k), F(v), decay ? F(ga) : NULL, delta ? F(gb) : NULL, F(Al), F(dtb), ps, B, H, dk, dv, 0.6f);
        CU->delta_step(F(o2), F(st2), ss, F(q), F(k), F(v), decay ? F(ga) : NULL, delta ? F(gb) : NULL, F(Al), F(dtb), ps, B, H, dk, dv, 0.6f);
        cmp("delta_step out", o2, o1); cmp("delta_step state", st2, st1);
    }
}
/* gma.topk's cut (ops/gma_topk.h) of softmax rows, with ties in the first row of each head
 * (the lower index wins), with and without the Gumbel noise of a stream */
static void t_topk(int B, int H, int N, int Kc, int k, int noisy) {
    auto keep = rng; /* the rows before these draw what they drew before these were added */
    printf("gma_topk B%d H%d N%d Kc%d k%d noise%d\n", B, H, N, Kc, k, noisy);
    size_t rows = (size_t)B * H * N;
    V x = rnd(rows * Kc, 3);
    for (size_t r = 0; r < rows; r += N)
        for (int c = 0; c < Kc; c++) x[r * Kc + c] = 0.5f; /* a row of ties */
    CP->softmax_rows(F(x), (int)rows, Kc, 1.f, NULL);
    GmaTopkNoise z = {};
    z.drop.key[0] = 11, z.drop.c2 = 5, z.drop.c3 = gma_drop_c3(0, 1, GMA_DROP_ROUTE);
    z.drop.seg_local = B, z.drop.seg_global = 2 * B, z.drop.first = 1;
    z.scale = 1, z.which = 1, z.b0 = 1, z.h0 = 1, z.H = H + 2;
    V a(x.size()), b(x.size()), c = x;
    CP->gma_topk_forward(F(a), F(x), B, H, N, Kc, k, noisy ? &z : NULL);
    CU->gma_topk_forward(F(b), F(x), B, H, N, Kc, k, noisy ? &z : NULL);
    cmp("gma_topk out", b, a);
    CU->gma_topk_forward(F(c), F(c), B, H, N, Kc, k, noisy ? &z : NULL); /* in place */
    cmp("gma_topk in place", c, a);
    rng = keep;
}
/* the table (op_rows.h, OP_ROWS) */
static const Row ROWS[] = {OP_ROWS(ROW_ENTRY)};

int main(int argc, char **argv) {
    const char *w = argc > 1 ? argv[1] : "all";
    if (cuda_ops_init(&CU) != 0 || ops_check_table(CU) != 0) { fprintf(stderr, "cuda_ops_init/ops_check_table: %s\n", gma_error()); return 2; }
    printf("device %s, table %s\n", "emu", CU->name);
    RowsRun r = run_rows(ROWS, w, "core", ncheck);
    int rc = print_summary("emu_core", r, (int)(sizeof ROWS / sizeof ROWS[0]), ncheck, nfail);
    printf(", worst fp32 relative error %.2e (bound 1e-4), %d cuBLAS GEMM calls\n", worst, g_emu_gemm_calls);
    return rc;
}
