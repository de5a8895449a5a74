/* cross.c: cross-attention layers, GMA and sdpa (cross.h; docs/model.md §3.8). Per head the
 * query rows and the context rows sit in L = max(N, M) rows, the shorter padded at each
 * head's tail: qh, kh, vh [B,H,L,d] (padded rows of q, k, v are zero).
 *   gma:  gq = route(qh), gk = route(kh), their padded rows zeroed; oh = linmix(gq, gk, vh),
 *         bidirectional: a zero key row writes nothing, a zero query row reads 0.
 *   sdpa: oh = attn(qh, kh, vh) with kbias -inf on the padded keys; a padded query row's
 *         output is dropped.
 * act:     qh, kh, vh, oh [B,H,L,d]; den (gma) or lse (sdpa) [B,H,L]; kbias [B,L] (sdpa)
 * scratch: forward  two [B*max(N,M)*D] buffers; gma: gq, gk [B,H,L,Kc], state [B,H,Kc d + Kc]
 *          backward two [B*max(N,M)*D] buffers, doh, dq, dk, dv [B,H,L,d]; gma: gq, gk, dgq,
 *          dgk [B,H,L,Kc] (the backward routes again, as gma.c's does) */
#include <stdlib.h>

#include "nn/linear.h"
#include "nn/mixers/cross.h"
#include "nn/mixers/linear_core.h"

enum { XP_MU = AP_N, XP_VAR, XP_PRIOR };

#define O(f) offsetof(CrossCfg, f)
static const CfgKey g_keys[] = {
    {"mixer", CFGT_ENUM, O(mixer), 0, "none", 0, 0, CROSS_KINDS,
     "Cross-attention: none, or gma/sdpa: the first cross.ctx_len positions are an encoded context that every "
     "decoder block reads (docs/model.md §3.8)."},
    {"n_components", CFGT_INT, O(n_components), 0, "16", 1, 65536, NULL,
     "Components per head Kc of the GMA cross layers and of the GMA encoder's layers (cross.mixer gma)."},
    {"enc_layers", CFGT_INT, O(enc_layers), 0, "1", 0, CFG_MAX_LAYERS, NULL,
     "Blocks of the context encoder (0 = its embeddings and a LayerNorm; docs/model.md §3.8)."},
    {"ctx_len", CFGT_INT, O(ctx_len), 0, "0", 0, 1 << 24, NULL,
     "Positions of the context at the start of the window (data.source xmqar: data.xmqar_ctx)."},
    {"enc_causal", CFGT_BOOL, O(enc_causal), 0, "false", 0, 0, NULL,
     "Context encoder causal instead of bidirectional (docs/model.md §3.8)."},
    {"enc_mixer", CFGT_ENUM, O(enc_mixer), 0, "same", 0, 0, CROSS_ENC_KINDS,
     "Kind of the context encoder's self-attention: same = cross.mixer's, or gma or sdpa."},
    {"query_pos", CFGT_ENUM, O(query_pos), 0, "window", 0, 0, CROSS_POS_KINDS,
     "Query positions: window (M..T-1) or own (0..T-M-1, unchanged by gmaeval --ctx-len; docs/model.md §3.8)."},
};
#undef O

static int cross_validate(const Config *c) {
    const CrossCfg *x = cross_cfg(c);
    if (x->mixer == CROSS_NONE) return 0;
    if (x->ctx_len < 1 || x->ctx_len >= c->train.seq_len)
        return gma_errorf("key cross.ctx_len: %d context positions must leave a query in the window of train.seq_len %d "
                          "(1 <= cross.ctx_len < train.seq_len)", x->ctx_len, c->train.seq_len);
    if (c->model.task != MODEL_LM)
        return gma_errorf("key cross.mixer: cross-attention is for language models (model.task \"lm\")");
    if (!cfg_causal(c))
        return gma_errorf("key cross.mixer: the decoder of a cross model is causal (model.causal)");
    return 0;
}

const CfgSection cross_cfg_section = {"cross", sizeof(CrossCfg), g_keys, CFG_N(g_keys), cross_validate, NULL};
const CrossCfg *cross_cfg(const Config *c) { return cfg_section_of(c, &cross_cfg_section); }

Cross *cross_create(const Config *c, int kind, int Kc, ParamTable *pt, const char *prefix) {
    Cross *x = xcalloc(1, sizeof *x);
    Mixer *m = &x->m;
    m->pt = pt;
    m->Dm = c->model.d_model;
    m->D = cfg_qkv_dim(c);
    m->H = c->model.n_heads;
    m->d = m->D / m->H;
    x->kind = kind;
    x->Kc = Kc;
    x->tau = 1;
    x->var_floor = (real)1e-4;
    x->eps = (real)linear_core_cfg(c)->eps;
    x->chunk = linear_core_cfg(c)->chunk;
    attn_proj_add(m, c, pt, prefix);
    for (int i = XP_MU; i <= XP_PRIOR; i++) m->p[i] = -1;
    if (kind == CROSS_GMA) {
        int s3[3] = {m->H, Kc, m->d};
        char name[128];
        snprintf(name, sizeof name, "%s.gma.mu", prefix);
        m->p[XP_MU] = pt_add(pt, name, 3, s3, INIT_NORMAL, pow(2.0 * m->d, -0.25), GROUP_MIXTURE);
        snprintf(name, sizeof name, "%s.gma.var_raw", prefix);
        m->p[XP_VAR] = pt_add(pt, name, 3, s3, INIT_CONST, log(expm1(1.0 - 1e-4)), GROUP_MIXTURE);
        snprintf(name, sizeof name, "%s.gma.prior_logits", prefix);
        m->p[XP_PRIOR] = pt_add2(pt, name, m->H, Kc, INIT_ZERO, 0, GROUP_MIXTURE);
    }
    return x;
}

void cross_destroy(Cross *x) {
    if (x && x->kb_row) g_ops->free(x->kb_row);
    free(x);
}

static size_t rows_l(int N, int M) { return (size_t)GMA_MAX(N, M); }

size_t cross_act_size(const Cross *x, int B, int N, int M) {
    size_t L = rows_l(N, M), hs = (size_t)B * L * x->m.D;
    return 4 * hs + (size_t)B * x->m.H * L + (x->kind == CROSS_SDPA ? (size_t)B * L : 0);
}

size_t cross_scratch_size(const Cross *x, int B, int N, int M) {
    size_t L = rows_l(N, M), hs = (size_t)B * L * x->m.D, BH = (size_t)B * x->m.H;
    size_t nch = x->causal ? (L + x->chunk - 1) / x->chunk : 1;
    size_t gs = BH * L * x->Kc, st = BH * nch * ((size_t)x->Kc * x->m.d + x->Kc);
    if (x->kind == CROSS_SDPA) return 6 * hs;
    return GMA_MAX(2 * hs + 2 * gs + st, 6 * hs + 4 * gs);
}

double cross_fused_flops(const Cross *x, int B, int N, int M) {
    double BH = (double)B * x->m.H, L = (double)rows_l(N, M), d = x->m.d;
    if (x->kind == CROSS_SDPA) return BH * 7 * 2.0 * d * L * L;
    /* routing: forward 2, backward 2 (again) + 4 products of 2 L Kc d; linmix and its rescan */
    return 2 * BH * 8 * 2.0 * L * x->Kc * d + linmix_flops(BH, (int)L, x->Kc, x->m.d, 0, 1) +
           linmix_rescan_flops(BH, (int)L, x->Kc, x->m.d, 0, 1);
}

/* ---- rows of heads: [BH, n, W] <-> [BH, L, W] (tails zero) ---- */
static void heads_pad(real *dst, const real *src, int BH, int n, int L, int W) {
    if (n == L) {
        g_ops->copy(dst, src, sizeof(real) * BH * (size_t)L * W);
        return;
    }
    g_ops->zero(dst, sizeof(real) * BH * (size_t)L * W);
    for (int i = 0; i < BH; i++) g_ops->copy(dst + (size_t)i * L * W, src + (size_t)i * n * W, sizeof(real) * n * W);
}
static void heads_unpad(real *dst, const real *src, int BH, int n, int L, int W) {
    if (n == L) {
        g_ops->copy(dst, src, sizeof(real) * BH * (size_t)L * W);
        return;
    }
    for (int i = 0; i < BH; i++) g_ops->copy(dst + (size_t)i * n * W, src + (size_t)i * L * W, sizeof(real) * n * W);
}
static void heads_zero_tail(real *x, int BH, int n, int L, int W) {
    if (n == L) return;
    for (int i = 0; i < BH; i++) g_ops->zero(x + ((size_t)i * L + n) * W, sizeof(real) * (size_t)(L - n) * W);
}

static real *pbias(const Mixer *m, const real *base, int i) { return m->p[i] >= 0 ? (real *)MP(m, base, i) : NULL; }

/* dst [B,H,L,d] (padded) = the heads of h [B,n,Dm] W^T + b (projection i); t1, t2 [B*n*D] */
static void proj_heads(const Mixer *m, real *dst, const real *h, const real *params, int i, int B, int n, int L,
                       real *t1, real *t2) {
    linear_forward(t1, h, MP(m, params, 2 * i), pbias(m, params, 2 * i + 1), B * n, m->Dm, m->D);
    if (n == L) {
        g_ops->split_heads(dst, t1, B, n, m->H, m->d);
        return;
    }
    g_ops->split_heads(t2, t1, B, n, m->H, m->d);
    heads_pad(dst, t2, B * m->H, n, L, m->d);
}
/* the backward of proj_heads: dh += ..., grads of projection i, from dx [B,H,L,d] (padded) */
static void proj_heads_backward(const Mixer *m, real *dh, real *grads, const real *dx, const real *h,
                                const real *params, int i, int B, int n, int L, real *t1, real *t2) {
    const real *dxn = dx;
    if (n < L) {
        heads_unpad(t2, dx, B * m->H, n, L, m->d);
        dxn = t2;
    }
    g_ops->merge_heads(t1, dxn, B, n, m->H, m->d);
    linear_backward(dh, MP(m, grads, 2 * i), pbias(m, grads, 2 * i + 1), t1, h, MP(m, params, 2 * i), B * n, m->Dm,
                    m->D);
}

typedef struct XActs { real *qh, *kh, *vh, *oh, *den, *kb; } XActs;
static XActs carve(const Cross *x, real *act, int B, int L) {
    size_t hs = (size_t)B * L * x->m.D;
    XActs a = {act, act + hs, act + 2 * hs, act + 3 * hs, act + 4 * hs, NULL};
    a.kb = a.den + (size_t)B * x->m.H * L;
    return a;
}

/* gamma [B,H,L,Kc] of the rows xh [B,H,L,d], zero past row n of each head */
static void route(const Cross *x, real *gamma, const real *xh, const real *params, int B, int n, int L) {
    const Mixer *m = &x->m;
    g_ops->gma_route_forward(gamma, xh, MP(m, params, XP_MU), MP(m, params, XP_VAR), MP(m, params, XP_PRIOR), B, m->H,
                             L, m->d, x->Kc, x->tau, x->var_floor, 0);
    heads_zero_tail(gamma, B * m->H, n, L, x->Kc);
}

int cross_resp(const Cross *x, const real *params, const real *act, int B, int N, int M, real *gq, real *gk) {
    if (x->kind != CROSS_GMA) return 0;
    int L = (int)rows_l(N, M);
    XActs a = carve(x, (real *)act, B, L);
    route(x, gq, a.qh, params, B, N, L);
    route(x, gk, a.kh, params, B, M, L);
    return L;
}

void cross_routing_tensors(const Cross *x, int *mu, int *var, int *prior) {
    *mu = x->m.p[XP_MU], *var = x->m.p[XP_VAR], *prior = x->m.p[XP_PRIOR];
}

static real attn_scale(const Cross *x) { return (real)(1.0 / sqrt((double)x->m.d)); }

/* kbias [B,L]: 0 for the M context rows, -inf past them; the row is built once for each
 * (M, L) a layer meets and copied to every sequence on the backend */
static void ctx_bias(Cross *x, real *kb, int B, int M, int L) {
    if (!x->kb_row || x->kb_M != M || x->kb_L != L) {
        uint8_t *mask = xmalloc((size_t)L);
        for (int j = 0; j < L; j++) mask[j] = j < M;
        if (x->kb_row) g_ops->free(x->kb_row);
        x->kb_row = g_ops->alloc(sizeof(real) * (size_t)L);
        key_bias(x->kb_row, mask, 1, L);
        free(mask);
        x->kb_M = M, x->kb_L = L;
    }
    for (int b = 0; b < B; b++) g_ops->copy(kb + (size_t)b * L, x->kb_row, sizeof(real) * (size_t)L);
}

void cross_forward(Cross *x, real *y, const real *hq, const real *hc, const real *params, real *act, real *scratch,
                   int B, int N, int M) {
    Mixer *m = &x->m;
    int L = (int)rows_l(N, M), H = m->H, d = m->d;
    size_t hs = (size_t)B * L * m->D;
    XActs a = carve(x, act, B, L);
    real *t1 = scratch, *t2 = t1 + hs;
    proj_heads(m, a.qh, hq, params, 0, B, N, L, t1, t2);
    proj_heads(m, a.kh, hc, params, 1, B, M, L, t1, t2);
    proj_heads(m, a.vh, hc, params, 2, B, M, L, t1, t2);
    if (x->kind == CROSS_GMA) {
        size_t gs = (size_t)B * H * L * x->Kc;
        real *gq = t2 + hs, *gk = gq + gs, *state = gk + gs;
        route(x, gq, a.qh, params, B, N, L);
        route(x, gk, a.kh, params, B, M, L);
        g_ops->linmix_forward(a.oh, a.den, state, gq, gk, a.vh, B * H, L, x->Kc, d, x->causal, x->causal ? x->chunk : 1,
                              x->eps);
    } else {
        if (M < L) ctx_bias(x, a.kb, B, M, L);
        g_ops->attn_forward(a.oh, a.den, a.qh, a.kh, a.vh, M < L ? a.kb : NULL, B, H, L, d, x->causal, 0,
                            attn_scale(x), NULL);
    }
    const real *oh = a.oh;
    if (N < L) {
        heads_unpad(t2, a.oh, B * H, N, L, d);
        oh = t2;
    }
    attn_proj_out(m, params, y, oh, t1, B, N);
}

void cross_backward(Cross *x, real *dhq, real *dhc, const real *dy, const real *hq, const real *hc, const real *params,
                    real *grads, real *act, real *scratch, int B, int N, int M) {
    Mixer *m = &x->m;
    int L = (int)rows_l(N, M), H = m->H, d = m->d, BH = B * H;
    size_t hs = (size_t)B * L * m->D;
    XActs a = carve(x, act, B, L);
    real *t1 = scratch, *t2 = t1 + hs, *doh = t2 + hs, *dq = doh + hs, *dk = dq + hs, *dv = dk + hs;
    /* doh [B,H,L,d] (padded query rows 0) from dy through the output projection */
    if (N < L) heads_unpad(t2, a.oh, BH, N, L, d);
    g_ops->merge_heads(t1, N < L ? t2 : a.oh, B, N, H, d);
    linear_backward_set(t2, MP(m, grads, AP_WO), pbias(m, grads, AP_BO), dy, t1, MP(m, params, AP_WO), B * N, m->D,
                        m->Dm);
    if (N < L) {
        g_ops->split_heads(t1, t2, B, N, H, d);
        heads_pad(doh, t1, BH, N, L, d);
    } else
        g_ops->split_heads(doh, t2, B, N, H, d);
    g_ops->zero(dq, sizeof(real) * 3 * hs);
    if (x->kind == CROSS_GMA) {
        size_t gs = (size_t)BH * L * x->Kc;
        real *gq = dv + hs, *gk = gq + gs, *dgq = gk + gs, *dgk = dgq + gs;
        route(x, gq, a.qh, params, B, N, L);
        route(x, gk, a.kh, params, B, M, L);
        g_ops->zero(dgq, sizeof(real) * 2 * gs);
        g_ops->linmix_backward(dgq, dgk, dv, doh, a.oh, a.den, NULL, gq, gk, a.vh, BH, L, x->Kc, d, x->causal,
                               x->causal ? x->chunk : 1);
        /* padded rows: no responsibility, so no gradient (their dgamma set to 0) */
        heads_zero_tail(dgq, BH, N, L, x->Kc);
        heads_zero_tail(dgk, BH, M, L, x->Kc);
        const real *rp[3] = {MP(m, params, XP_MU), MP(m, params, XP_VAR), MP(m, params, XP_PRIOR)};
        real *rg[3] = {MP(m, grads, XP_MU), MP(m, grads, XP_VAR), MP(m, grads, XP_PRIOR)};
        g_ops->gma_route_backward(dq, rg[0], rg[1], rg[2], dgq, gq, a.qh, rp[0], rp[1], rp[2], B, H, L, d, x->Kc,
                                  x->tau, x->var_floor, 0);
        g_ops->gma_route_backward(dk, rg[0], rg[1], rg[2], dgk, gk, a.kh, rp[0], rp[1], rp[2], B, H, L, d, x->Kc,
                                  x->tau, x->var_floor, 0);
    } else
        g_ops->attn_backward(dq, dk, dv, doh, a.oh, a.den, a.qh, a.kh, a.vh, M < L ? a.kb : NULL, B, H, L, d,
                             x->causal, 0, attn_scale(x), NULL);
    proj_heads_backward(m, dhq, grads, dq, hq, params, 0, B, N, L, t1, t2);
    proj_heads_backward(m, dhc, grads, dk, hc, params, 1, B, M, L, t1, t2);
    proj_heads_backward(m, dhc, grads, dv, hc, params, 2, B, M, L, t1, t2);
}

/* ---- decoding ---- */
size_t cross_memory_size(const Cross *x, int M) {
    const Mixer *m = &x->m;
    if (x->kind == CROSS_GMA) return linmix_decode_state(m->H, x->Kc, m->d);
    return attn_decode_state(m->H, M, m->d) + 2 * (size_t)m->H * m->d; /* the cache, then its last k, v rows */
}

size_t cross_decode_scratch(const Cross *x, int B, int M) {
    size_t hs = (size_t)B * M * x->m.D;
    return 4 * hs + (size_t)B * x->m.H * M * x->Kc + 8 * (size_t)B * x->m.D + 2 * (size_t)B * x->m.H * x->Kc;
}

void cross_memory(Cross *x, real *mem, const real *hc, const real *params, int B, int M, real *scratch) {
    Mixer *m = &x->m;
    int H = m->H, d = m->d;
    size_t hs = (size_t)B * M * m->D, ms = cross_memory_size(x, M);
    real *t1 = scratch, *t2 = t1 + hs, *kh = t2 + hs, *vh = kh + hs, *gk = vh + hs;
    proj_heads(m, kh, hc, params, 1, B, M, M, t1, t2);
    proj_heads(m, vh, hc, params, 2, B, M, M, t1, t2);
    if (x->kind == CROSS_GMA) {
        route(x, gk, kh, params, B, M, M);
        g_ops->zero(mem, sizeof(real) * ms * B);
        linmix_prefill(mem, ms, gk, vh, B, H, M, x->Kc, d);
        return;
    }
    size_t cache = attn_decode_state(H, M, d);
    for (int b = 0; b < B; b++) {
        real *K = mem + b * ms, *V = K + hs / B, *last = mem + b * ms + cache;
        g_ops->zero(mem + b * ms, sizeof(real) * ms);
        g_ops->copy(K, kh + (size_t)b * H * M * d, sizeof(real) * H * M * d);
        g_ops->copy(V, vh + (size_t)b * H * M * d, sizeof(real) * H * M * d);
        for (int h = 0; h < H; h++) {
            size_t row = (((size_t)b * H + h) * M + M - 1) * d;
            g_ops->copy(last + (size_t)h * d, kh + row, sizeof(real) * d);
            g_ops->copy(last + (size_t)(H + h) * d, vh + row, sizeof(real) * d);
        }
    }
}

void cross_step(Cross *x, real *y, const real *hq, const real *params, real *mem, int B, int M, real *scratch) {
    Mixer *m = &x->m;
    int H = m->H, d = m->d;
    size_t hs = (size_t)B * m->D, ms = cross_memory_size(x, M);
    real *t1 = scratch, *t2 = t1 + hs, *qh = t2 + hs, *oh = qh + hs, *k0 = oh + hs, *v0 = k0 + hs;
    proj_heads(m, qh, hq, params, 0, B, 1, 1, t1, t2);
    if (x->kind == CROSS_GMA) {
        real *gq = v0 + hs, *zk = gq + (size_t)B * H * x->Kc;
        route(x, gq, qh, params, B, 1, 1);
        g_ops->zero(zk, sizeof(real) * B * H * x->Kc);
        g_ops->zero(v0, sizeof(real) * hs);
        /* zero key and value: S and z stay as cross_memory left them */
        g_ops->linmix_step(oh, mem, ms, gq, zk, v0, B, H, x->Kc, d, x->eps);
    } else {
        size_t cache = attn_decode_state(H, M, d);
        for (int b = 0; b < B; b++) {
            g_ops->copy(k0 + (size_t)b * H * d, mem + b * ms + cache, sizeof(real) * H * d);
            g_ops->copy(v0 + (size_t)b * H * d, mem + b * ms + cache + (size_t)H * d, sizeof(real) * H * d);
        }
        /* rewrites the last context row with itself, then attends over rows 0..M-1 */
        g_ops->attn_step(oh, mem, ms, qh, k0, v0, B, H, d, M, M - 1, attn_scale(x));
    }
    attn_proj_out(m, params, y, oh, t1, B, 1);
}
