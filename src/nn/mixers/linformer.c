/* linformer.c: Linformer (Wang et al. 2020; `mixer: "linformer"`), bidirectional only: keys
 * and values projected along the sequence axis by learned E, F [k, N_max] (one pair a layer,
 * shared by the heads; linformer.shared_kv: E alone); math, padding, init and tensors:
 * docs/model.md §3.5. Cost O(N k d) a head. Refused: a causal model (causal_ok = 0),
 * linformer.k above model.max_seq_len (lf_validate).
 * Parameters: PREFIX.{q,k,v,o}.{weight,bias}, PREFIX.linformer.E, PREFIX.linformer.F.
 * act:     qh, kh, vh, oh [B,H,N,d]; En, Fn [k,N]; Kp, Vp [B,H,k,d]; P [B,H,N,k]
 * scratch: two [B*N*D] buffers, dq, dk, dv [B,H,N,d]; dP [B,H,N,k]; dKp, dVp [B,H,k,d];
 *          dEn, dFn [k,N] */
#include <stdlib.h>

#include "nn/mixers/mixer.h"

const MixerVT mixer_linformer;
enum { P_E = AP_N, P_F };
typedef struct LfPriv { int k, Nmax, shared; } LfPriv;

/* the keys linformer.* */
typedef struct LinformerCfg {
    int k; /* projected sequence length */
    int shared_kv; /* one projection E for keys and values (no F) */
} LinformerCfg;
#define O(f) offsetof(LinformerCfg, f)
static const CfgKey lf_keys[] = {
    {"k", CFGT_INT, O(k), 0, "256", 1, 16777216, NULL, "Linformer: projected length k of keys and values (<= model.max_seq_len)."},
    {"shared_kv", CFGT_BOOL, O(shared_kv), 0, "false", 0, 0, NULL,
     "Linformer: one projection E for keys and values (the LRA release's lr_kernel)."},
};
#undef O
static const CfgSection lf_section = {"linformer", sizeof(LinformerCfg), lf_keys, (int)(sizeof lf_keys / sizeof lf_keys[0]), NULL, NULL};
static const LinformerCfg *lcfg(const Config *c) { return cfg_section_of(c, &lf_section); }

static int lf_validate(const Config *c) {
    if (lcfg(c)->k > c->model.max_seq_len)
        return gma_errorf("key linformer.k: %d is larger than model.max_seq_len = %d", lcfg(c)->k,
                          c->model.max_seq_len);
    return 0;
}

static Mixer *lf_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    if (lf_validate(c) != 0) return NULL;
    if (cfg_causal(c)) /* also for callers that build without cfg_validate */
        return gma_errorf("key model.mixer: mixer \"linformer\" (layer %d) cannot run causally", layer), NULL;
    Mixer *m = mixer_new(&mixer_linformer, c, pt);
    LfPriv *p = xcalloc(1, sizeof *p);
    p->k = lcfg(c)->k;
    p->Nmax = c->model.max_seq_len;
    p->shared = lcfg(c)->shared_kv;
    m->priv = p;
    attn_proj_add(m, c, pt, prefix);
    char name[128];
    double std = 1.0 / sqrt((double)p->Nmax);
    snprintf(name, sizeof name, "%s.linformer.E", prefix);
    m->p[P_E] = pt_add2(pt, name, p->k, p->Nmax, INIT_NORMAL, std, GROUP_WEIGHT);
    if (p->shared) {
        /* values through the same E, as the LRA release's single `lr_kernel` [max_len, k] (its
         * transpose; lra_benchmarks/models/linformer/linformer_attention.py:140-144); E's
         * gradient is the sum of the key and value paths' */
        m->p[P_F] = m->p[P_E];
        return m;
    }
    snprintf(name, sizeof name, "%s.linformer.F", prefix);
    m->p[P_F] = pt_add2(pt, name, p->k, p->Nmax, INIT_NORMAL, std, GROUP_WEIGHT);
    return m;
}

static size_t lf_act(const Mixer *m, int B, int N) {
    const LfPriv *p = m->priv;
    size_t hs = (size_t)B * N * m->D, kp = (size_t)B * m->H * p->k * m->d;
    return 4 * hs + 2 * (size_t)p->k * N + 2 * kp + (size_t)B * m->H * N * p->k;
}
static size_t lf_scratch(const Mixer *m, int B, int N) {
    const LfPriv *p = m->priv;
    size_t hs = (size_t)B * N * m->D, kp = (size_t)B * m->H * p->k * m->d;
    return 5 * hs + (size_t)B * m->H * N * p->k + 2 * kp + 2 * (size_t)p->k * N;
}

typedef struct Acts { real *qh, *kh, *vh, *oh, *En, *Fn, *Kp, *Vp, *P; } Acts;
static Acts carve(const Mixer *m, int B, int N, real *act) {
    const LfPriv *p = m->priv;
    size_t hs = (size_t)B * N * m->D, kp = (size_t)B * m->H * p->k * m->d, kn = (size_t)p->k * N;
    Acts a;
    a.qh = act;
    a.kh = a.qh + hs;
    a.vh = a.kh + hs;
    a.oh = a.vh + hs;
    a.En = a.oh + hs;
    a.Fn = a.En + kn;
    a.Kp = a.Fn + kn;
    a.Vp = a.Kp + kp;
    a.P = a.Vp + kp;
    return a;
}

static void lf_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                       real *scratch) {
    const LfPriv *p = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, k = p->k, BH = B * H;
    Acts a = carve(m, B, N, act);
    attn_proj_qkv(m, params, h, a.qh, a.kh, a.vh, scratch, B, N);
    mask_rows(a.kh, c->keymask, B, H, N, d);
    mask_rows(a.vh, c->keymask, B, H, N, d);
    const real *E = MP(m, params, P_E), *F = MP(m, params, P_F);
    for (int r = 0; r < k; r++) {
        g_ops->copy(a.En + (size_t)r * N, E + (size_t)r * p->Nmax, sizeof(real) * N);
        g_ops->copy(a.Fn + (size_t)r * N, F + (size_t)r * p->Nmax, sizeof(real) * N);
    }
    size_t Nd = (size_t)N * d, kd = (size_t)k * d, Nk = (size_t)N * k;
    g_ops->matmul_strided(a.Kp, a.En, a.kh, k, d, N, 0, 0, 1, 0, BH, 0, Nd, kd);
    g_ops->matmul_strided(a.Vp, a.Fn, a.vh, k, d, N, 0, 0, 1, 0, BH, 0, Nd, kd);
    g_ops->matmul_strided(a.P, a.qh, a.Kp, N, k, d, 0, 1, 1, 0, BH, Nd, kd, Nk);
    g_ops->softmax_rows(a.P, BH * N, k, (real)(1.0 / sqrt((double)d)), NULL);
    const real *Pv = a.P;
    if (c->attn_drop) { /* attention dropout on the N x k probabilities (docs/model.md §8) */
        real *Pd = scratch + 5 * (size_t)B * N * m->D;
        g_ops->dropout(Pd, a.P, B, (size_t)H * N * k, c->attn_drop);
        Pv = Pd;
    }
    g_ops->matmul_strided(a.oh, Pv, a.Vp, N, d, k, 0, 0, 1, 0, BH, Nk, kd, Nd);
    attn_proj_out(m, params, y, a.oh, scratch, B, N);
}

static void lf_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                        real *grads, real *act, real *scratch) {
    const LfPriv *p = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, k = p->k, BH = B * H;
    size_t hs = (size_t)B * N * m->D, Nd = (size_t)N * d, kd = (size_t)k * d, Nk = (size_t)N * k;
    size_t kp = (size_t)BH * kd, kn = (size_t)k * N;
    Acts a = carve(m, B, N, act);
    real *t1 = scratch, *t2 = t1 + hs, *dq = t2 + hs, *dk = dq + hs, *dv = dk + hs, *dP = dv + hs;
    real *dKp = dP + (size_t)BH * Nk, *dVp = dKp + kp, *dEn = dVp + kp, *dFn = dEn + kn;
    real *doh = t1;
    real sc = (real)(1.0 / sqrt((double)d));
    attn_proj_out_backward(m, params, grads, doh, dy, a.oh, t1, t2, B, N);
    /* O = P V' */
    if (c->attn_drop) { /* O = drop(P) V': dV' = drop(P)^T dO, dP = drop(dO V'^T) */
        g_ops->dropout(dP, a.P, B, (size_t)H * N * k, c->attn_drop);
        g_ops->matmul_strided(dVp, dP, doh, k, d, N, 1, 0, 1, 0, BH, Nk, Nd, kd);
        g_ops->matmul_strided(dP, doh, a.Vp, N, k, d, 0, 1, 1, 0, BH, Nd, kd, Nk);
        g_ops->dropout(dP, dP, B, (size_t)H * N * k, c->attn_drop);
    } else {
        g_ops->matmul_strided(dP, doh, a.Vp, N, k, d, 0, 1, 1, 0, BH, Nd, kd, Nk);
        g_ops->matmul_strided(dVp, a.P, doh, k, d, N, 1, 0, 1, 0, BH, Nk, Nd, kd);
    }
    g_ops->softmax_rows_backward(dP, a.P, BH * N, k);
    /* S = sc Q K'^T */
    g_ops->matmul_strided(dq, dP, a.Kp, N, d, k, 0, 0, sc, 0, BH, Nk, kd, Nd);
    g_ops->matmul_strided(dKp, dP, a.qh, k, d, N, 1, 0, sc, 0, BH, Nk, Nd, kd);
    /* K' = En K, V' = Fn V */
    g_ops->matmul_strided(dk, a.En, dKp, N, d, k, 1, 0, 1, 0, BH, 0, kd, Nd);
    g_ops->matmul_strided(dv, a.Fn, dVp, N, d, k, 1, 0, 1, 0, BH, 0, kd, Nd);
    mask_rows(dk, c->keymask, B, H, N, d);
    mask_rows(dv, c->keymask, B, H, N, d);
    g_ops->zero(dEn, sizeof(real) * 2 * kn);
    for (int bh = 0; bh < BH; bh++) {
        g_ops->matmul(dEn, dKp + bh * kd, a.kh + bh * Nd, k, N, d, 0, 1, 1, 1);
        g_ops->matmul(dFn, dVp + bh * kd, a.vh + bh * Nd, k, N, d, 0, 1, 1, 1);
    }
    real *gE = MP(m, grads, P_E), *gF = MP(m, grads, P_F);
    for (int r = 0; r < k; r++) {
        g_ops->axpy(gE + (size_t)r * p->Nmax, 1, dEn + (size_t)r * N, N);
        g_ops->axpy(gF + (size_t)r * p->Nmax, 1, dFn + (size_t)r * N, N);
    }
    attn_proj_qkv_backward(m, params, grads, dh, h, dq, dk, dv, t2, B, N);
}

static void lf_destroy(Mixer *m) {
    free(m->priv);
    free(m);
}

const MixerVT mixer_linformer = {
    .name = "linformer",
    .fixed_window = "its projections E and F (linformer.k x model.max_seq_len) fix the length",
    .config = &lf_section,
    .causal_ok = 0,
    .bidir_ok = 1,
    .attn_dropout_ok = 1,
    .validate = lf_validate,
    .create = lf_create,
    .act_size = lf_act,
    .scratch_size = lf_scratch,
    .forward = lf_forward,
    .backward = lf_backward,
    .destroy = lf_destroy,
    .fused_flops = mixer_no_fused_flops,
};
