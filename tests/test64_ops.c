/* test64_ops.c: the float64 finite-difference check (gradcheck.h) of the backward of every
 * row of the op table tests/cuda_emu/op_rows.h (OP_ROWS and BASE_ROWS) that has one (grad
 * 1), at the row's shapes,
 * on the CPU backend. A row's loss is <r, outputs> for fixed random r over the first GC_R
 * elements of each output; the first GC_N elements of every input are perturbed. The same rows run on the emulated CUDA backend
 * in tests/cuda_emu/emu_core.cpp and emu_baselines.cpp (test_cuda_emu). Every row with grad 1 must check at
 * least one gradient; the number of rows comes from the table. */
#include <string.h>

#include "cuda_emu/op_rows.h"
#include "gradcheck.h"
#include "ops/ops.h"
#include "testutil.h"

#define GC_N 256  /* elements of each input perturbed (the first ones) */
#define GC_R 256 /* outputs in the loss (the first ones: its rounding stays below GC_ABS_TOL) */
#define MAXT 8

/* one op case: inputs with their analytic gradients, outputs with their loss weights r;
 * fwd computes the outputs from the inputs (ints i[] and the pointers p[] as it needs) */
typedef struct Op Op;
struct Op {
    void (*fwd)(Op *o);
    real *x[MAXT], *g[MAXT], *y[MAXT], *r[MAXT];
    size_t nx[MAXT], ny[MAXT];
    const char *name[MAXT];
    int ni, no, i[9];
    const void *p[2];
    real s;
};
static Rng g_rng;
static int g_checks;

static real *in(Op *o, const char *name, size_t n, double scale, double off) {
    o->name[o->ni] = name, o->nx[o->ni] = n;
    o->x[o->ni] = gc_random(n, &g_rng, scale);
    for (size_t k = 0; k < n; k++) o->x[o->ni][k] += (real)off;
    o->g[o->ni] = xcalloc(n + 1, sizeof(real));
    return o->x[o->ni++];
}
static real *out(Op *o, size_t n) {
    o->ny[o->no] = n, o->r[o->no] = gc_random(n, &g_rng, 1);
    for (size_t k = GC_R; k < n; k++) o->r[o->no][k] = 0;
    return o->y[o->no++] = xcalloc(n + 1, sizeof(real));
}
static double op_loss(void *p) {
    Op *o = p;
    o->fwd(o);
    double s = 0;
    for (int j = 0; j < o->no; j++) s += gc_dot(o->y[j], o->r[j], o->ny[j]);
    return s;
}
/* gradcheck of every input against o->g (filled by the caller's backward), then free */
static void check(Op *o, const char *label) {
    for (int t = 0; t < o->ni; t++) {
        gc_assert_grad(label, o->name[t], op_loss, o, o->x[t], o->g[t], GMA_MIN(o->nx[t], (size_t)GC_N));
        g_checks++;
    }
    for (int t = 0; t < o->ni; t++) free(o->x[t]), free(o->g[t]);
    for (int j = 0; j < o->no; j++) free(o->y[j]), free(o->r[j]);
}

/* ---- nn: bias, GELU, ReLU, bias + GELU ---- */
static void f_bias(Op *o) { memcpy(o->y[0], o->x[0], sizeof(real) * o->nx[0]), g_ops->bias_forward(o->y[0], o->x[1], o->i[0], o->i[1]); }
static void f_gelu(Op *o) { g_ops->gelu_forward(o->y[0], o->x[0], o->nx[0]); }
static void f_relu(Op *o) { g_ops->relu_forward(o->y[0], o->x[0], o->nx[0]); }
static void f_bias_gelu(Op *o) {
    memcpy(o->y[1], o->x[0], sizeof(real) * o->nx[0]); /* pre: x, then x + b */
    g_ops->bias_gelu_forward(o->y[1], o->y[0], o->x[1], o->i[0], o->i[1]);
}
static void g_basic(int R, int C) {
    size_t n = (size_t)R * C;
    Op o = {.fwd = f_bias, .i = {R, C}};
    in(&o, "x", n, 1, 0), in(&o, "b", C, 1, 0), out(&o, n);
    memcpy(o.g[0], o.r[0], sizeof(real) * n), g_ops->bias_backward(o.g[1], o.r[0], R, C);
    check(&o, "bias");
    void (*f[2])(Op *) = {f_gelu, f_relu};
    for (int k = 0; k < 2; k++) {
        o = (Op){.fwd = f[k]};
        real *x = in(&o, "x", n, 2, 0.01);
        out(&o, n);
        (k ? g_ops->relu_backward : g_ops->gelu_backward)(o.g[0], o.r[0], x, n);
        check(&o, k ? "relu" : "gelu");
    }
    o = (Op){.fwd = f_bias_gelu, .i = {R, C}};
    in(&o, "x", n, 1, 0), in(&o, "b", C, 1, 0), out(&o, n), out(&o, n);
    memset(o.r[1], 0, sizeof(real) * n); /* pre (x + b): saved, not in the loss */
    o.fwd(&o);
    g_ops->bias_gelu_backward(o.g[0], o.g[1], o.r[0], o.y[1], R, C);
    check(&o, "bias_gelu");
}

/* ---- nn: layernorm, residual add + layernorm ---- */
/* i[2] rms: RMSNorm, mean and b NULL (their buffers stay untouched) */
static void f_ln(Op *o) {
    int rms = o->i[2];
    g_ops->layernorm_forward(o->y[0], rms ? NULL : o->y[1], o->y[2], o->x[0], o->x[1], rms ? NULL : o->x[2], o->i[0],
                             o->i[1]);
}
static void f_add_ln(Op *o) {
    int rms = o->i[2];
    g_ops->add_layernorm_forward(o->y[3], o->y[0], rms ? NULL : o->y[1], o->y[2], o->x[3], o->x[0], o->x[1],
                                 rms ? NULL : o->x[2], o->i[0], o->i[1]);
}
static void g_ln(int R, int C, int rms) {
    /* the RMSNorm rows draw from a stream of their own, so every other row keeps the inputs
     * it had before they were added (some float64 checks sit near their bound) */
    Rng kept = g_rng;
    if (rms) rng_seed(&g_rng, 1000 + (uint64_t)R * C);
    for (int add = 0; add < 2; add++) {
        Op o = {.fwd = add ? f_add_ln : f_ln, .i = {R, C, rms}};
        size_t n = (size_t)R * C;
        in(&o, "x", n, 2, 0.5), in(&o, "w", C, 1, 1), in(&o, "b", C, 1, 0);
        if (add) in(&o, "a", n, 1, 0);
        out(&o, n), out(&o, R), out(&o, R);
        if (add) out(&o, n);
        memset(o.r[1], 0, sizeof(real) * R), memset(o.r[2], 0, sizeof(real) * R); /* statistics: not in the loss */
        if (add) memset(o.r[3], 0, sizeof(real) * n);
        o.fwd(&o);
        g_ops->layernorm_backward(o.g[0], o.g[1], rms ? NULL : o.g[2], o.r[0], add ? o.y[3] : o.x[0], o.x[1],
                                  rms ? NULL : o.y[1], o.y[2], R, C);
        if (add) memcpy(o.g[3], o.g[0], sizeof(real) * n); /* d sum / d a = d sum / d x = 1 */
        check(&o, add ? (rms ? "add_rmsnorm" : "add_layernorm") : rms ? "rmsnorm" : "layernorm");
    }
    if (rms) g_rng = kept;
}

/* ---- nn: embeddings ---- */
static void f_embed(Op *o) { g_ops->embed_forward(o->y[0], o->p[0], o->x[0], o->i[3] ? o->x[1] : NULL, o->i[0], o->i[1], o->i[2]); }
static void g_embed(int B, int T, int C, int V, int pos) {
    int32_t *tok = xmalloc(sizeof(int32_t) * B * T);
    for (int k = 0; k < B * T; k++) tok[k] = (int32_t)((k * 7 + 3) % V);
    if (B * T > 2) tok[0] = tok[1] = tok[B * T - 1]; /* repeats */
    Op o = {.fwd = f_embed, .i = {B, T, C, pos}, .p = {tok}};
    in(&o, "wte", (size_t)V * C, 1, 0);
    if (pos) in(&o, "wpe", (size_t)T * C, 1, 0);
    out(&o, (size_t)B * T * C);
    g_ops->embed_backward(o.g[0], pos ? o.g[1] : NULL, o.r[0], tok, B, T, C);
    check(&o, "embed");
    free(tok);
}

/* ---- nn: cross-entropy (loss: the sum over scored rows / R) ---- */
static void f_xent(Op *o) { g_ops->xent_forward(o->y[0], o->y[1], o->x[0], o->p[0], o->i[0], o->i[1]); }
static void g_xent(int R, int V) {
    int32_t *tg = xmalloc(sizeof(int32_t) * R);
    for (int r = 0; r < R; r++) tg[r] = r % 5 == 2 ? -1 : (int32_t)((r * 13 + 1) % V);
    Op o = {.fwd = f_xent, .i = {R, V}, .p = {tg}};
    real *l = in(&o, "logits", (size_t)R * V, 4, 0);
    out(&o, R), out(&o, R);
    for (int r = 0; r < R; r++) o.r[0][r] = (real)(1.0 / R), o.r[1][r] = 0;
    memcpy(o.g[0], l, sizeof(real) * R * V), g_ops->xent_backward(o.g[0], tg, R, V, (real)(1.0 / R));
    check(&o, "xent");
    free(tg);
}

/* ---- nn: distillation's KL (teacher fixed: no gradient; loss weight c, the same on every row) ---- */
static void f_distill(Op *o) {
    size_t n = (size_t)o->i[0] * o->i[1];
    real *t = xmalloc(sizeof(real) * n); /* the op overwrites the teacher's logits with the gradient */
    memcpy(t, o->p[1], sizeof(real) * n);
    g_ops->distill_grad(o->y[0], t, o->x[0], o->p[0], o->i[0], o->i[1], o->s, 1);
    free(t);
}
static void g_distill(int R, int V, double T) {
    Rng keep = g_rng; /* the later rows draw what they drew before these rows came */
    int32_t *tg = xmalloc(sizeof(int32_t) * R);
    for (int r = 0; r < R; r++) tg[r] = r % 5 == 2 ? -1 : (int32_t)((r * 13 + 1) % V);
    real *teach = gc_random((size_t)R * V, &g_rng, 1.5);
    Op o = {.fwd = f_distill, .i = {R, V}, .p = {tg, teach}, .s = (real)T};
    in(&o, "student logits", (size_t)R * V, 1.5, 0);
    out(&o, R);
    double c = 0.37;
    for (int r = 0; r < R; r++) o.r[0][r] = (real)c;
    /* d(c KL)/d s = (c / T) (q - p): the op's gradient at scale c / T */
    memcpy(o.g[0], teach, sizeof(real) * R * V);
    real *kl = xmalloc(sizeof(real) * R);
    g_ops->distill_grad(kl, o.g[0], o.x[0], tg, R, V, (real)T, (real)(c / T));
    for (int r = 0; r < R; r++) ck_assert_msg(tg[r] < 0 ? kl[r] == 0 : kl[r] >= 0, "row %d: KL %g", r, (double)kl[r]);
    check(&o, "distill");
    free(kl), free(teach), free(tg);
    g_rng = keep;
}

/* ---- nn: row softmax (scale 0.6; a column bias) ---- */
static void f_softmax(Op *o) {
    memcpy(o->y[0], o->x[0], sizeof(real) * o->nx[0]);
    g_ops->softmax_rows(o->y[0], o->i[0], o->i[1], o->s, o->p[0]);
}
static void g_softmax(int R, int C, int bias) {
    real *cb = gc_random(C, &g_rng, 1);
    if (bias) cb[0] = cb[C / 2] = -INFINITY;
    Op o = {.fwd = f_softmax, .i = {R, C}, .p = {bias ? cb : NULL}, .s = 0.6};
    in(&o, "x", (size_t)R * C, 3, 0), out(&o, (size_t)R * C);
    o.fwd(&o);
    memcpy(o.g[0], o.r[0], sizeof(real) * R * C), g_ops->softmax_rows_backward(o.g[0], o.y[0], R, C);
    g_ops->scale(o.g[0], o.s, (size_t)R * C);
    check(&o, "softmax_rows");
    free(cb);
}

/* ---- nn: the classifier's pair features ---- */
static void f_cls(Op *o) { g_ops->pair_features_forward(o->y[0], o->x[0], o->x[1], o->i[0], o->i[1]); }
static void g_cls(int B, int D) {
    Op o = {.fwd = f_cls, .i = {B, D}};
    in(&o, "u", (size_t)B * D, 1, 0), in(&o, "v", (size_t)B * D, 1, 0), out(&o, (size_t)B * 4 * D);
    g_ops->pair_features_backward(o.g[0], o.g[1], o.r[0], o.x[0], o.x[1], B, D);
    check(&o, "pair_features");
}

/* ---- the normalised linear mixing core ---- */
static void f_linmix(Op *o) {
    int *i = o->i;
    g_ops->linmix_forward(o->y[0], o->y[1], o->y[2], o->x[0], o->x[1], o->x[2], i[0], i[1], i[2], i[3], i[4], i[5], 1e-6);
}
static void g_linmix(int BH, int N, int F, int d, int causal, int chunk) {
    int nc = causal ? (N + chunk - 1) / chunk : 1;
    Op o = {.fwd = f_linmix, .i = {BH, N, F, d, causal, chunk}};
    in(&o, "phq", (size_t)BH * N * F, 0.5, 0.6), in(&o, "phk", (size_t)BH * N * F, 0.5, 0.6);
    in(&o, "v", (size_t)BH * N * d, 1, 0);
    out(&o, (size_t)BH * N * d), out(&o, (size_t)BH * N), out(&o, (size_t)BH * nc * ((size_t)F * d + F));
    memset(o.r[1], 0, sizeof(real) * o.ny[1]), memset(o.r[2], 0, sizeof(real) * o.ny[2]); /* den, state: saved */
    o.fwd(&o);
    g_ops->linmix_backward(o.g[0], o.g[1], o.g[2], o.r[0], o.y[0], o.y[1], o.y[2], o.x[0], o.x[1], o.x[2], BH, N, F, d,
                           causal, chunk);
    /* no saved state: the op rescans it, the same sums, so the same gradients */
    real *g2[3];
    for (int t = 0; t < 3; t++) g2[t] = xcalloc(o.nx[t], sizeof(real));
    g_ops->linmix_backward(g2[0], g2[1], g2[2], o.r[0], o.y[0], o.y[1], NULL, o.x[0], o.x[1], o.x[2], BH, N, F, d, causal,
                           chunk);
    for (int t = 0; t < 3; t++) {
        for (size_t j = 0; j < o.nx[t]; j++)
            ck_assert_msg(fabs(g2[t][j] - o.g[t][j]) <= 1e-12 * (1 + fabs(o.g[t][j])), "linmix rescan %s[%zu]: %g vs %g",
                          o.name[t], j, (double)g2[t][j], (double)o.g[t][j]);
        free(g2[t]);
    }
    check(&o, "linmix");
}

/* ---- GMA routing (tau 0.8, variance floor 0.05) ---- */
static void f_route(Op *o) {
    int *i = o->i;
    g_ops->gma_route_forward(o->y[0], o->x[0], o->x[1], o->x[2], o->x[3], i[0], i[1], i[2], i[3], i[4], 0.8, 0.05, i[5]);
}
static void g_route(int B, int H, int N, int d, int Kc, int shared) {
    int Hp = shared ? 1 : H;
    Op o = {.fwd = f_route, .i = {B, H, N, d, Kc, shared}};
    in(&o, "x", (size_t)B * H * N * d, 1, 0), in(&o, "mu", (size_t)Hp * Kc * d, 1, 0);
    in(&o, "var_raw", (size_t)Hp * Kc * d, 1.5, 0), in(&o, "prior", (size_t)Hp * Kc, 1, 0);
    out(&o, (size_t)B * H * N * Kc);
    o.fwd(&o);
    g_ops->gma_route_backward(o.g[0], o.g[1], o.g[2], o.g[3], o.r[0], o.y[0], o.x[0], o.x[1], o.x[2], o.x[3], B, H, N, d,
                              Kc, 0.8, 0.05, shared);
    check(&o, "gma_route");
}

/* ---- the Dirichlet prior (alpha 0.3, weight 1.7): the output is L = -(alpha - 1)/Hp sum_h
 * sum_{k live} log softmax(l_h)_k, computed here in double; the first `dropped` components
 * (one per head in turn, from component 1) are at the dropped logit -1e4 ---- */
static void f_dirichlet(Op *o) {
    int Hp = o->i[0], Kc = o->i[1];
    double total = 0;
    for (int h = 0; h < Hp; h++) {
        const real *lh = o->x[0] + (size_t)h * Kc;
        double mx = lh[0], s = 0;
        for (int k = 1; k < Kc; k++) mx = fmax(mx, lh[k]);
        for (int k = 0; k < Kc; k++) s += exp(lh[k] - mx);
        for (int k = 0; k < Kc; k++)
            if (lh[k] > -5e3) total += lh[k] - mx - log(s);
    }
    o->y[0][0] = (real)(-(0.3 - 1) / Hp * total * 1.7);
}
static void g_dirichlet(int Hp, int Kc, int dropped) {
    Rng keep = g_rng; /* the later rows draw what they drew before these rows came */
    Op o = {.fwd = f_dirichlet, .i = {Hp, Kc}};
    real *l = in(&o, "prior logits", (size_t)Hp * Kc, 0.7, 0);
    for (int i = 0; i < dropped; i++) l[(size_t)(i % Hp) * Kc + 1 + i / Hp] = -1e4;
    out(&o, 1);
    o.r[0][0] = 1;
    g_ops->gma_dirichlet_backward(o.g[0], l, Hp, Kc, 1.7 * (1 - 0.3) / Hp, -5e3);
    for (int i = 0; i < dropped; i++) ck_assert(o.g[0][(size_t)(i % Hp) * Kc + 1 + i / Hp] == 0);
    check(&o, "gma_dirichlet");
    g_rng = keep;
}

/* ---- the diversity loss (token and batch form, with and without a row mask) ---- */
static void f_div(Op *o) {
    int *i = o->i;
    o->y[0][0] = (real)g_ops->gma_div_forward(o->x[0], o->p[0], i[0], i[1], i[2], i[3], i[4]);
}
static void g_div(int B, int H, int N, int Kc) {
    uint8_t *m = xmalloc((size_t)B * N);
    for (int k = 0; k < B * N; k++) m[k] = k % 4 != 1;
    for (int mode = 0; mode < 2; mode++)
        for (int um = 0; um < 2; um++) {
            Op o = {.fwd = f_div, .i = {B, H, N, Kc, mode}, .p = {um ? m : NULL}};
            in(&o, "gamma", (size_t)B * H * N * Kc, 0.45, 0.5), out(&o, 1);
            g_ops->gma_div_backward(o.g[0], o.x[0], o.p[0], B, H, N, Kc, mode, o.r[0][0]);
            check(&o, mode ? (um ? "gma_div batch masked" : "gma_div batch") : (um ? "gma_div token masked" : "gma_div token"));
        }
    free(m);
}

/* ---- the convolutional stem's per-channel normalisation, max pooling ---- */
static void f_chnorm(Op *o) {
    g_ops->chnorm_forward(o->y[0], o->y[1], o->y[2], o->x[0], o->x[1], o->x[2], o->i[0], o->i[1], o->i[2], 1);
}
static void g_chnorm(int S, int N, int C) {
    Op o = {.fwd = f_chnorm, .i = {S, N, C}};
    in(&o, "x", (size_t)S * N * C, 2, 0.7), in(&o, "w", C, 1, 1), in(&o, "b", C, 1, 0);
    out(&o, (size_t)S * N * C), out(&o, (size_t)S * C), out(&o, (size_t)S * C);
    memset(o.r[1], 0, sizeof(real) * o.ny[1]), memset(o.r[2], 0, sizeof(real) * o.ny[2]);
    o.fwd(&o);
    g_ops->chnorm_backward(o.g[0], o.g[1], o.g[2], o.r[0], o.x[0], o.x[1], o.y[1], o.y[2], S, N, C);
    check(&o, "chnorm");
}
static void f_maxpool(Op *o) { g_ops->maxpool_forward(o->y[0], (int32_t *)o->p[0], o->x[0], o->p[1], o->i[0], o->i[1], o->i[2]); }
static void g_maxpool(int S, int N, int D) {
    int32_t *arg = xmalloc(sizeof(int32_t) * S * D);
    real *w = xmalloc(sizeof(real) * S * N);
    for (int k = 0; k < S * N; k++) w[k] = (k % 7 == 3 || k / N == S - 1) ? 0 : 0.5; /* padding; the last row all padding */
    Op o = {.fwd = f_maxpool, .i = {S, N, D}, .p = {arg, w}};
    in(&o, "x", (size_t)S * N * D, 1, 0), out(&o, (size_t)S * D);
    o.fwd(&o);
    g_ops->maxpool_backward(o.g[0], o.r[0], arg, S, N, D);
    check(&o, "maxpool");
    free(arg), free(w);
}

/* ---- the baseline mixers' ops (BASE_ROWS): elementwise maps ---- */
static void f_map(Op *o) {
    void (*f[3])(real *, const real *, size_t) = {g_ops->elu1_forward, g_ops->silu_forward, g_ops->softplus_forward};
    f[o->i[0]](o->y[0], o->x[0], o->nx[0]);
}
static void f_gate(Op *o) { g_ops->gate_silu_forward(o->y[0], o->x[0], o->x[1], o->nx[0]); }
static void f_mul(Op *o) { g_ops->mul_forward(o->y[0], o->x[0], o->x[1], o->nx[0]); }
static void g_elem(size_t n) {
    static const char *names[3] = {"elu1", "silu", "softplus"};
    void (*b[3])(real *, const real *, const real *, size_t) = {g_ops->elu1_backward, g_ops->silu_backward,
                                                                 g_ops->softplus_backward};
    for (int k = 0; k < 3; k++) {
        Op o = {.fwd = f_map, .i = {k}};
        real *x = in(&o, "x", n, 5, 0.01);
        out(&o, n);
        b[k](o.g[0], o.r[0], x, n);
        check(&o, names[k]);
    }
    Op o = {.fwd = f_gate};
    in(&o, "y", n, 5, 0), in(&o, "z", n, 5, 0), out(&o, n);
    g_ops->gate_silu_backward(o.g[0], o.g[1], o.r[0], o.x[0], o.x[1], n);
    check(&o, "gate_silu");
    Op p = {.fwd = f_mul};
    in(&p, "a", n, 5, 0), in(&p, "b", n, 5, 0), out(&p, n);
    g_ops->mul_backward(p.g[0], p.g[1], p.r[0], p.x[0], p.x[1], n);
    check(&p, "mul");
}

/* ---- Performer FAVOR+: exponents, and features with the row max or a given constant ---- */
static void f_favor_logits(Op *o) {
    int *i = o->i;
    g_ops->favor_logits_forward(o->y[0], o->x[0], o->p[0], i[0], i[1], i[2], i[3], i[4]);
}
static void f_favor_exp(Op *o) {
    g_ops->favor_exp_forward(o->y[0], o->i[2] ? o->y[1] : NULL, o->x[0], o->i[0], o->i[1], 0.3, 0.7);
}
static void g_favor(int B, int H, int N, int d, int m) {
    real *om = gc_random((size_t)H * m * d, &g_rng, 1.5);
    Op o = {.fwd = f_favor_logits, .i = {B, H, N, d, m}, .p = {om}};
    in(&o, "x", (size_t)B * H * N * d, 1, 0), out(&o, (size_t)B * H * N * m);
    g_ops->favor_logits_backward(o.g[0], o.r[0], o.x[0], om, B, H, N, d, m);
    check(&o, "favor_logits");
    int R = B * H * N;
    for (int withmax = 0; withmax < 2; withmax++) {
        o = (Op){.fwd = f_favor_exp, .i = {R, m, withmax}};
        in(&o, "e", (size_t)R * m, 1, 0), out(&o, (size_t)R * m), out(&o, R);
        memset(o.r[1], 0, sizeof(real) * R); /* the argmax column: not in the loss */
        o.fwd(&o);
        g_ops->favor_exp_backward(o.g[0], o.r[0], o.y[0], withmax ? o.y[1] : NULL, R, m);
        check(&o, withmax ? "favor_exp rowmax" : "favor_exp");
    }
    free(om);
}

/* ---- Mamba: causal depthwise convolution, selective scan ---- */
static void f_conv1d(Op *o) {
    g_ops->conv1d_causal_forward(o->y[0], o->x[0], o->x[1], o->x[2], o->i[0], o->i[1], o->i[2], o->i[3]);
}
static void g_conv1d(int B, int N, int C, int K) {
    Op o = {.fwd = f_conv1d, .i = {B, N, C, K}};
    in(&o, "x", (size_t)B * N * C, 1, 0), in(&o, "w", (size_t)C * K, 1, 0), in(&o, "b", C, 1, 0);
    out(&o, (size_t)B * N * C);
    g_ops->conv1d_causal_backward(o.g[0], o.g[1], o.g[2], o.r[0], o.x[0], o.x[1], B, N, C, K);
    check(&o, "conv1d_causal");
}
static void f_scan(Op *o) {
    int *i = o->i;
    real **x = o->x;
    g_ops->scan_forward(o->y[0], o->y[1], x[0], x[1], x[2], x[3], x[4], x[5], i[0], i[1], i[2], i[3], i[4]);
}
static void g_scan(int B, int N, int E, int S, int chunk) {
    int nck = (N + chunk - 1) / chunk;
    Op o = {.fwd = f_scan, .i = {B, N, E, S, chunk}};
    in(&o, "u", (size_t)B * N * E, 1, 0), in(&o, "dt", (size_t)B * N * E, 0.1, 0.25);
    in(&o, "Bm", (size_t)B * N * S, 1, 0), in(&o, "Cm", (size_t)B * N * S, 1, 0);
    in(&o, "A_log", (size_t)E * S, 0.5, 0.5), in(&o, "Dskip", E, 1, 0);
    out(&o, (size_t)B * N * E), out(&o, (size_t)B * nck * E * S);
    memset(o.r[1], 0, sizeof(real) * o.ny[1]); /* the chunk states: saved */
    o.fwd(&o);
    real **x = o.x, **g = o.g;
    g_ops->scan_backward(g[0], g[1], g[2], g[3], g[4], g[5], o.r[0], o.y[1], x[0], x[1], x[2], x[3], x[4], x[5], B, N, E, S,
                         chunk);
    check(&o, "scan");
}

/* ---- tiled softmax attention: causal or not, padded keys (pad 1: scattered; 2: the tail past 3N/5, as the
 * cross layer pads a shorter context, nn/mixers/cross.c), attention dropout p ---- */
static void f_attn(Op *o) {
    int *i = o->i;
    g_ops->attn_forward(o->y[0], o->y[1], o->x[0], o->x[1], o->x[2], o->p[0], i[0], i[1], i[2], i[3], i[4], i[5], o->s,
                        o->p[1]);
}
static void g_attn(int B, int H, int N, int d, int causal, int pad, double p, int window) {
    GmaDrop dg = {{1337u, 0u}, 5u, (2u << 16) | (1u << 4) | GMA_DROP_ATTN, gma_drop_threshold(p), 1.0 / (1.0 - p), B,
                  3 * (int64_t)B, 1};
    real *kb = xcalloc((size_t)B * N, sizeof(real));
    for (int b = 0; b < B; b++)
        for (int j = 0; j < N; j++)
            if (pad == 1 && (j % 5 == 3 || (b == 1 && j < 40))) kb[b * N + j] = -INFINITY;
            else if (pad == 2 && j >= 3 * N / 5) kb[b * N + j] = -INFINITY; /* cross layer: padded context tail */
    Op o = {.fwd = f_attn, .i = {B, H, N, d, causal, window}, .p = {pad ? kb : NULL, p > 0 ? &dg : NULL}, .s = 1 / sqrt((double)d)};
    size_t n = (size_t)B * H * N * d;
    in(&o, "q", n, 1, 0), in(&o, "k", n, 1, 0), in(&o, "v", n, 1, 0), out(&o, n), out(&o, (size_t)B * H * N);
    memset(o.r[1], 0, sizeof(real) * o.ny[1]); /* lse: saved */
    o.fwd(&o);
    g_ops->attn_backward(o.g[0], o.g[1], o.g[2], o.r[0], o.y[0], o.y[1], o.x[0], o.x[1], o.x[2], o.p[0], B, H, N, d, causal,
                         window, o.s, o.p[1]);
    check(&o, window ? "attn window" : p > 0 ? "attn dropout" : "attn");
    free(kb);
}

/* ---- Gated DeltaNet: row normalisation (L2: mean 0, no weight or gate; the gated RMSNorm: mean 1
 * with w and g), the delta rule (inputs q, k, v, then with decay ga, A_log, dt_bias, then with the
 * delta rule gb) ---- */
static void f_rownorm(Op *o) {
    int gated = o->i[3];
    g_ops->rownorm_forward(o->y[0], o->y[1], o->x[0], gated ? o->x[1] : NULL, gated ? o->x[2] : NULL, o->i[0], o->i[1],
                           o->s, o->i[2]);
}
static void g_rownorm(int R, int C, int mean, int gated) {
    Rng keep = g_rng; /* the later rows (BASE_ROWS) draw what they drew before these rows came */
    Op o = {.fwd = f_rownorm, .i = {R, C, mean, gated}, .s = mean ? 1e-5 : 1e-6};
    in(&o, "x", (size_t)R * C, 1, 0);
    if (gated) in(&o, "w", C, 0.5, 1), in(&o, "g", (size_t)R * C, 2, 0);
    out(&o, (size_t)R * C), out(&o, R);
    memset(o.r[1], 0, sizeof(real) * R); /* rstd: saved */
    o.fwd(&o);
    g_ops->rownorm_backward(o.g[0], gated ? o.g[1] : NULL, gated ? o.g[2] : NULL, o.r[0], o.x[0], gated ? o.x[1] : NULL,
                            gated ? o.x[2] : NULL, o.y[1], R, C, mean);
    check(&o, gated ? "rownorm gated" : "rownorm l2");
    g_rng = keep;
}
/* the inputs in order: q, k, v, (ga, A_log, dt_bias with decay), (gb with delta), (sd with the
 * rows' decays) */
static void f_delta(Op *o) {
    int *i = o->i, dl = i[6], dc = i[7], rw = i[8], isd = 3 + 3 * dc + dl;
    real **x = o->x;
    g_ops->delta_forward(o->y[0], o->y[1], x[0], x[1], x[2], dc ? x[3] : NULL, dl ? x[dc ? 6 : 3] : NULL,
                         dc ? x[4] : NULL, dc ? x[5] : NULL, rw ? x[isd] : NULL, i[0], i[1], i[2], i[3], i[4], i[5],
                         o->s);
}
static void g_delta(int B, int H, int N, int dk, int dv, int chunk, int delta, int decay, int rows) {
    int nck = (N + chunk - 1) / chunk, isd = 3 + 3 * decay + delta;
    size_t R = (size_t)B * H * N;
    Rng keep = g_rng;
    Op o = {.fwd = f_delta, .i = {B, H, N, dk, dv, chunk, delta, decay, rows}, .s = 0.6};
    in(&o, "q", R * dk, 0.5, 0), in(&o, "k", R * dk, 0.5, 0), in(&o, "v", R * dv, 1, 0);
    if (decay) in(&o, "ga", R, 1, 0), in(&o, "A_log", H, 0.5, 0), in(&o, "dt_bias", H, 0.5, 0);
    if (delta) in(&o, "gb", R, 1.5, 0);
    if (rows) in(&o, "sd", (size_t)H * dk, 2, 0);
    out(&o, R * dv), out(&o, (size_t)B * H * (nck + 1) * dk * dv);
    memset(o.r[1], 0, sizeof(real) * o.ny[1]); /* the states: saved */
    o.fwd(&o);
    real **x = o.x, **g = o.g;
    g_ops->delta_backward(g[0], g[1], g[2], decay ? g[3] : NULL, delta ? g[decay ? 6 : 3] : NULL, decay ? g[4] : NULL,
                          decay ? g[5] : NULL, rows ? g[isd] : NULL, o.r[0], o.y[1], x[0], x[1], x[2],
                          decay ? x[3] : NULL, delta ? x[decay ? 6 : 3] : NULL, decay ? x[4] : NULL,
                          decay ? x[5] : NULL, rows ? x[isd] : NULL, B, H, N, dk, dv, chunk, o.s);
    char label[64];
    snprintf(label, sizeof label, "%s%s", delta ? (decay ? "delta rule, decay" : "delta rule") : (decay ? "decay only" : "linear"),
             rows ? ", rows' decays" : "");
    check(&o, label);
    g_rng = keep;
}

/* ---- rotary positions (model.pos "rope"): the backward is the inverse rotation ---- */
static void f_rope(Op *o) { g_ops->rope_forward(o->y[0], o->x[0], o->i[0], o->i[1], o->i[2], o->i[3], o->i[4], 10000); }
static void g_rope(int B, int H, int N, int d, int pos0) {
    Rng keep = g_rng;
    size_t n = (size_t)B * H * N * d;
    Op o = {.fwd = f_rope, .i = {B, H, N, d, pos0}};
    in(&o, "x", n, 1, 0);
    out(&o, n);
    g_ops->rope_backward(o.g[0], o.r[0], B, H, N, d, pos0, 10000);
    check(&o, "rope");
    g_rng = keep;
}

/* ---- gma.topk (docs/model.md §3.12): the cut after a softmax is a softmax over the kept
 * entries, so the routing's backward at the cut responsibilities is the composite's
 * gradient (what gma.c relies on): y = topk(softmax(x)), dx = softmax_rows_backward(r, y),
 * with and without a fixed Gumbel noise ---- */
static void f_topk(Op *o) {
    int *i = o->i;
    memcpy(o->y[0], o->x[0], sizeof(real) * o->nx[0]);
    g_ops->softmax_rows(o->y[0], i[0] * i[1] * i[2], i[3], 1, NULL);
    g_ops->gma_topk_forward(o->y[0], o->y[0], i[0], i[1], i[2], i[3], i[4], o->p[0]);
}
static void g_topk(int B, int H, int N, int Kc, int k, int noisy) {
    Rng keep = g_rng;
    GmaTopkNoise z = {.drop = {.key = {11, 0}, .c2 = 5, .c3 = gma_drop_c3(0, 1, GMA_DROP_ROUTE), .seg_local = B,
                               .seg_global = B},
                      .scale = 1, .which = 0, .H = H};
    size_t n = (size_t)B * H * N * Kc;
    Op o = {.fwd = f_topk, .i = {B, H, N, Kc, k}, .p = {noisy ? &z : NULL}};
    in(&o, "logits", n, 3, 0), out(&o, n);
    o.fwd(&o);
    size_t kept = 0;
    for (size_t j = 0; j < n; j++) kept += o.y[0][j] != 0;
    ck_assert_int_eq(kept, (size_t)B * H * N * k); /* k entries a row */
    memcpy(o.g[0], o.r[0], sizeof(real) * n);
    g_ops->softmax_rows_backward(o.g[0], o.y[0], B * H * N, Kc);
    check(&o, noisy ? "gma_topk noisy" : "gma_topk");
    g_rng = keep;
}

/* every row with a backward, in the table's order; each must check a gradient */
#define GRAD_0(op, args) 0
#define GRAD_1(op, args) (g_##op args, 1)
#define ROW(part, op, grad, args)                                                                                      \
    {                                                                                                                  \
        int before = g_checks, want = GRAD_##grad(op, args);                                                           \
        rows += want;                                                                                                  \
        ck_assert_msg(!want || g_checks > before, "row %s %s: no gradient checked", #op, #args);                       \
    }
START_TEST(test_op_rows_gradcheck) {
    rng_seed(&g_rng, 7);
    int rows = 0;
    OP_ROWS(ROW)
    BASE_ROWS(ROW)
    printf("op table: %d rows with a backward, %d gradients checked\n", rows, g_checks);
    ck_assert_int_gt(rows, 0);
}
END_TEST
#undef ROW

/* rotary positions make softmax attention relative (docs/model.md §1): q and k turned from
 * position 0 or from position 5 give the same attn_forward output, causal and
 * bidirectional, with and without a window, up to float64 rounding; turning only q (a
 * real change of relative position) moves it, so the check can fail */
START_TEST(test_rope_relative) {
    enum { B = 2, H = 2, N = 11, d = 8 };
    size_t n = (size_t)B * H * N * d;
    Rng rng;
    rng_seed(&rng, 3);
    real *q = gc_random(n, &rng, 1), *k = gc_random(n, &rng, 1), *v = gc_random(n, &rng, 1);
    real *qr = xcalloc(n, sizeof(real)), *kr = xcalloc(n, sizeof(real)), *o[3], *lse = xcalloc((size_t)B * H * N, sizeof(real));
    for (int i = 0; i < 3; i++) o[i] = xcalloc(n, sizeof(real));
    for (int causal = 0; causal < 2; causal++)
        for (int window = 0; window <= 4; window += 4) {
            int shifts[3][2] = {{0, 0}, {5, 5}, {5, 0}}; /* (q's pos0, k's pos0) */
            for (int s = 0; s < 3; s++) {
                g_ops->rope_forward(qr, q, B, H, N, d, shifts[s][0], 10000);
                g_ops->rope_forward(kr, k, B, H, N, d, shifts[s][1], 10000);
                g_ops->attn_forward(o[s], lse, qr, kr, v, NULL, B, H, N, d, causal, window, 1 / sqrt((double)d), NULL);
            }
            double same = 0, moved = 0, big = 0;
            for (size_t i = 0; i < n; i++) {
                same = fmax(same, fabs(o[1][i] - o[0][i]));
                moved = fmax(moved, fabs(o[2][i] - o[0][i]));
                big = fmax(big, fabs(o[0][i]));
            }
            printf("rope shift 5 (causal %d, window %d): output moves by %.1e of the largest, q alone by %.1e\n", causal,
                   window, same / big, moved / big);
            ck_assert_msg(same <= 1e-12 * big, "shifting q and k by 5 moved sdpa's output by %g", same / big);
            ck_assert_msg(moved > 1e-3 * big, "shifting q alone left sdpa's output (%g)", moved / big);
        }
    free(q), free(k), free(v), free(qr), free(kr), free(lse);
    for (int i = 0; i < 3; i++) free(o[i]);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("op table gradients (float64)");
    TCase *tc = tcase_create("rows");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_op_rows_gradcheck);
    tcase_add_test(tc, test_rope_relative);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
