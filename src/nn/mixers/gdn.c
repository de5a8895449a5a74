/* gdn.c: the Gated DeltaNet family (Yang, Kautz & Hatamizadeh 2024; `mixer: "gdn"`), causal
 * only, after flash-linear-attention's GatedDeltaNet layer: math, backward, initialisation
 * and decoding in docs/model.md §3.5, sources and differences in docs/baselines.md. The
 * backward runs through the ops' backward passes (the recurrence: delta_backward,
 * ops/cpu/cpu_delta.c). Causal, so right padding never reaches earlier rows: no keymask.
 * Parameters (d = D / H, dv = gdn.expand_v d, Dv = H dv, K = gdn.conv_size): PREFIX.gdn.
 * {q_proj, k_proj [D,Dm], v_proj, g_proj [Dv,Dm], q_conv, k_conv [D,K], v_conv [Dv,K], a_proj
 * [H,Dm] (decay), b_proj [H,Dm] (delta), o_proj [Dm,Dv]}.weight, A_log, dt_bias [H] (decay),
 * o_norm.weight [dv]. Rows r = (b, t), R = B N.
 * act:     xq, xk, cq, ck [R,D]; xv, cv [R,Dv]; qh, kh, qn, kn [B,H,N,d]; vh, oh [B,H,N,dv];
 *          om, gg, on [R,Dv]; rq, rk, ro, ga, gb [B H N]; Sck [B,H,ceil(N/chunk)+1,d,dv]
 * scratch: 5 [R,Dv], 4 [R,D], 3 [R,max(D,Dv)], 3 [R,H] */
#include <stdlib.h>

#include "nn/linear.h"
#include "nn/mixers/conv_state.h"
#include "nn/mixers/mixer.h"

const MixerVT mixer_gdn;
enum { P_Q, P_K, P_V, P_QC, P_KC, P_VC, P_A, P_ALOG, P_DTB, P_B, P_G, P_NORM, P_O };
typedef struct GdnPriv {
    int delta, decay, K, ev, chunk;
    int Dv, dv;
} GdnPriv;
#define L2_EPS 1e-6f   /* fla/modules/l2norm.py */
#define NORM_EPS 1e-5f /* FusedRMSNormGated's default */

/* the keys gdn.* */
typedef struct GdnCfg {
    int delta, decay;
    int conv_size;
    int expand_v;
    int chunk;
} GdnCfg;
#define O(f) offsetof(GdnCfg, f)
static const CfgKey gdn_keys[] = {
    {"delta", CFGT_BOOL, O(delta), 0, "true", 0, 0, NULL,
     "Gated DeltaNet: the delta rule; false: S_t = a_t S_{t-1} + k_t v_t^T (docs/model.md §3.5)."},
    {"decay", CFGT_BOOL, O(decay), 0, "true", 0, 0, NULL,
     "Gated DeltaNet: the per-head decay a_t; false: a_t = 1."},
    {"conv_size", CFGT_INT, O(conv_size), 0, "4", 1, 64, NULL, "Gated DeltaNet: kernel of the causal depthwise convolutions of q, k and v."},
    {"expand_v", CFGT_INT, O(expand_v), 0, "1", 1, 8, NULL, "Gated DeltaNet: value (and state) width per head = expand_v * the key width d."},
    {"chunk", CFGT_INT, O(chunk), 0, "64", 1, 65536, NULL, "Gated DeltaNet: steps between the states the backward recomputes from."},
};
#undef O
static const CfgSection gdn_section = {"gdn", sizeof(GdnCfg), gdn_keys, (int)(sizeof gdn_keys / sizeof gdn_keys[0]), NULL,
                                       NULL};

/* the CUDA kernels hold a head's key and value rows in shared memory: widths up to 1024 */
static int gdn_validate(const Config *c) {
    const GdnCfg *gc = cfg_section_of(c, &gdn_section);
    int d = cfg_qkv_dim(c) / c->model.n_heads;
    if (c->device == OPS_CUDA && (d > 1024 || gc->expand_v * d > 1024))
        return gma_errorf("key gdn.expand_v: head widths %d (keys) and %d (values) on device cuda; its delta rule "
                          "supports at most 1024 (model.qkv_dim / model.n_heads, times gdn.expand_v)",
                          d, gc->expand_v * d);
    return 0;
}

static Mixer *gdn_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    if (NEED_OP("gdn", silu_forward) || NEED_OP("gdn", silu_backward) || NEED_OP("gdn", conv1d_causal_forward) ||
        NEED_OP("gdn", conv1d_causal_backward) || NEED_OP("gdn", rownorm_forward) || NEED_OP("gdn", rownorm_backward) ||
        NEED_OP("gdn", delta_forward) || NEED_OP("gdn", delta_backward) || NEED_OP("gdn", delta_step))
        return NULL;
    if (!cfg_causal(c)) /* also for callers that build without cfg_validate */
        return gma_errorf("key model.mixer: mixer \"gdn\" (layer %d) cannot run bidirectionally", layer), NULL;
    Mixer *m = mixer_new(&mixer_gdn, c, pt);
    GdnPriv *p = xcalloc(1, sizeof *p);
    const GdnCfg *gc = cfg_section_of(c, &gdn_section);
    int D = m->D, Dm = m->Dm, H = m->H;
    p->delta = gc->delta, p->decay = gc->decay, p->K = gc->conv_size, p->ev = gc->expand_v, p->chunk = gc->chunk;
    p->Dv = p->ev * D, p->dv = p->ev * m->d;
    m->priv = p;
    double std = c->model.init_std, ostd = std / sqrt(2.0 * c->model.n_layers);
    char name[128];
#define NM(s) (snprintf(name, sizeof name, "%s.gdn.%s", prefix, s), name)
    m->p[P_Q] = pt_add2(pt, NM("q_proj.weight"), D, Dm, INIT_NORMAL, std, GROUP_WEIGHT);
    m->p[P_K] = pt_add2(pt, NM("k_proj.weight"), D, Dm, INIT_NORMAL, std, GROUP_WEIGHT);
    m->p[P_V] = pt_add2(pt, NM("v_proj.weight"), p->Dv, Dm, INIT_NORMAL, std, GROUP_WEIGHT);
    m->p[P_QC] = pt_add2(pt, NM("q_conv.weight"), D, p->K, INIT_NORMAL, std, GROUP_WEIGHT);
    m->p[P_KC] = pt_add2(pt, NM("k_conv.weight"), D, p->K, INIT_NORMAL, std, GROUP_WEIGHT);
    m->p[P_VC] = pt_add2(pt, NM("v_conv.weight"), p->Dv, p->K, INIT_NORMAL, std, GROUP_WEIGHT);
    m->p[P_A] = m->p[P_ALOG] = m->p[P_DTB] = m->p[P_B] = -1;
    if (p->decay) {
        m->p[P_A] = pt_add2(pt, NM("a_proj.weight"), H, Dm, INIT_NORMAL, std, GROUP_WEIGHT);
        m->p[P_ALOG] = pt_add1(pt, NM("A_log"), H, INIT_ZERO, 0, GROUP_MIXTURE);
        m->p[P_DTB] = pt_add1(pt, NM("dt_bias"), H, INIT_ZERO, 0, GROUP_BIAS);
    }
    if (p->delta) m->p[P_B] = pt_add2(pt, NM("b_proj.weight"), H, Dm, INIT_NORMAL, std, GROUP_WEIGHT);
    m->p[P_G] = pt_add2(pt, NM("g_proj.weight"), p->Dv, Dm, INIT_NORMAL, std, GROUP_WEIGHT);
    m->p[P_NORM] = pt_add1(pt, NM("o_norm.weight"), p->dv, INIT_ONE, 0, GROUP_NORM);
    m->p[P_O] = pt_add2(pt, NM("o_proj.weight"), Dm, p->Dv, INIT_NORMAL, ostd, GROUP_WEIGHT);
#undef NM
    return m;
}

static void gdn_init(Mixer *m, real *params, Rng *rng) {
    const GdnPriv *p = m->priv;
    if (!p->decay) return;
    real *alog = MP(m, params, P_ALOG), *bdt = MP(m, params, P_DTB);
    for (int h = 0; h < m->H; h++) alog[h] = (real)log(16 * (1 - rng_uniform(rng))); /* A in (0, 16] */
    for (int h = 0; h < m->H; h++) {
        double dt = exp(log(1e-3) + rng_uniform(rng) * (log(1e-1) - log(1e-3)));
        dt = GMA_MAX(dt, 1e-4);
        bdt[h] = (real)(dt + log(-expm1(-dt))); /* softplus^-1 */
    }
}

/* a parameter, NULL when the layer has none (a_proj, A_log, dt_bias without decay; b_proj without delta) */
static real *opt_param(const Mixer *m, const real *base, int i) { return m->p[i] >= 0 ? (real *)MP(m, base, i) : NULL; }

static size_t n_ck(const Mixer *m, int N) {
    int C = ((const GdnPriv *)m->priv)->chunk;
    return (size_t)(N + C - 1) / C + 1;
}
static size_t gdn_act(const Mixer *m, int B, int N) {
    const GdnPriv *p = m->priv;
    size_t R = (size_t)B * N, BHN = R * m->H;
    return 8 * R * m->D + 7 * R * p->Dv + 5 * BHN + (size_t)B * m->H * n_ck(m, N) * m->d * p->dv;
}
static size_t gdn_scratch(const Mixer *m, int B, int N) {
    const GdnPriv *p = m->priv;
    size_t R = (size_t)B * N;
    return GMA_MAX(5 * R * p->Dv + 4 * R * m->D + 3 * R * GMA_MAX(m->D, p->Dv) + 3 * R * m->H,
                   conv_state_scratch(B, p->K, GMA_MAX(m->D, p->Dv))); /* a decoding step's windows */
}
/* the recurrence's products per token and head, in units of d dv, as cpu_delta.c runs them:
 * forward S^T k, the rank-one update, S^T q (6; without delta 4); backward the recomputed
 * steps (4; 2) and the adjoint step (12: q do^T, S_t do, dS^T k, dS r, S' du, k du^T; without
 * delta 8: q do^T, S_t do, dS^T k, dS v) */
static double gdn_fused_flops(const Mixer *m, int B, int N, int causal) {
    const GdnPriv *p = m->priv;
    (void)causal;
    return (double)B * m->H * N * m->d * p->dv * (p->delta ? 22 : 14);
}

typedef struct Acts {
    real *xq, *xk, *xv, *cq, *ck, *cv, *qh, *kh, *qn, *kn, *vh, *oh, *om, *gg, *on, *rq, *rk, *ro, *ga, *gb, *Sck;
} Acts;
static Acts carve(const Mixer *m, int B, int N, real *act) {
    const GdnPriv *p = m->priv;
    size_t RD = (size_t)B * N * m->D, RV = (size_t)B * N * p->Dv, BHN = (size_t)B * N * m->H;
    Acts a;
    a.xq = act, a.xk = a.xq + RD, a.cq = a.xk + RD, a.ck = a.cq + RD;
    a.qh = a.ck + RD, a.kh = a.qh + RD, a.qn = a.kh + RD, a.kn = a.qn + RD;
    a.xv = a.kn + RD, a.cv = a.xv + RV, a.vh = a.cv + RV, a.oh = a.vh + RV;
    a.om = a.oh + RV, a.gg = a.om + RV, a.on = a.gg + RV;
    a.rq = a.on + RV, a.rk = a.rq + BHN, a.ro = a.rk + BHN, a.ga = a.ro + BHN, a.gb = a.ga + BHN;
    a.Sck = a.gb + BHN;
    return a;
}

/* x = h W^T, u = silu(conv(x)) into the head layout uh [B,H,N,w]; c keeps conv(x); tmp [R,C] */
static void branch_forward(const Mixer *m, const real *params, int pw, int pc, const real *h, real *x, real *c,
                           real *uh, real *tmp, int B, int N, int C) {
    const GdnPriv *p = m->priv;
    linear_forward(x, h, MP(m, params, pw), NULL, B * N, m->Dm, C);
    g_ops->conv1d_causal_forward(c, x, MP(m, params, pc), NULL, B, N, C, p->K);
    g_ops->silu_forward(tmp, c, (size_t)B * N * C);
    g_ops->split_heads(uh, tmp, B, N, m->H, C / m->H);
}
/* the per-head gate inputs h W^T [R,H] into the layout [B,H,N] */
static void gate_forward(const Mixer *m, const real *params, int pw, const real *h, real *g, real *tmp, int B, int N) {
    linear_forward(tmp, h, MP(m, params, pw), NULL, B * N, m->Dm, m->H);
    g_ops->split_heads(g, tmp, B, N, m->H, 1);
}

static void gdn_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                        real *scratch) {
    const GdnPriv *p = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, R = B * N;
    size_t BHN = (size_t)R * H;
    Acts a = carve(m, B, N, act);
    real *tmp = scratch, *tg = tmp + (size_t)R * GMA_MAX(m->D, p->Dv);
    branch_forward(m, params, P_Q, P_QC, h, a.xq, a.cq, a.qh, tmp, B, N, m->D);
    branch_forward(m, params, P_K, P_KC, h, a.xk, a.ck, a.kh, tmp, B, N, m->D);
    branch_forward(m, params, P_V, P_VC, h, a.xv, a.cv, a.vh, tmp, B, N, p->Dv);
    g_ops->rownorm_forward(a.qn, a.rq, a.qh, NULL, NULL, (int)BHN, d, L2_EPS, 0);
    g_ops->rownorm_forward(a.kn, a.rk, a.kh, NULL, NULL, (int)BHN, d, L2_EPS, 0);
    if (p->decay) gate_forward(m, params, P_A, h, a.ga, tg, B, N);
    if (p->delta) gate_forward(m, params, P_B, h, a.gb, tg, B, N);
    g_ops->delta_forward(a.oh, a.Sck, a.qn, a.kn, a.vh, p->decay ? a.ga : NULL, p->delta ? a.gb : NULL,
                         opt_param(m, params, P_ALOG), opt_param(m, params, P_DTB), NULL, B, H, N, d, p->dv, p->chunk,
                         (real)(1 / sqrt((double)d)));
    g_ops->merge_heads(a.om, a.oh, B, N, H, p->dv);
    linear_forward(a.gg, h, MP(m, params, P_G), NULL, R, m->Dm, p->Dv);
    g_ops->rownorm_forward(a.on, a.ro, a.om, MP(m, params, P_NORM), a.gg, (int)BHN, p->dv, NORM_EPS, 1);
    linear_forward(y, a.on, MP(m, params, P_O), NULL, R, p->Dv, m->Dm);
}

/* backward of branch_forward from duh [B,H,N,w]: dh += ...; dmerge, dc, dx [R,C] scratch */
static void branch_backward(const Mixer *m, const real *params, real *grads, int pw, int pc, const real *h,
                            const real *x, const real *c, const real *duh, real *dh, real *du, real *dc, real *dx,
                            int B, int N, int C) {
    const GdnPriv *p = m->priv;
    size_t n = (size_t)B * N * C;
    g_ops->merge_heads(du, duh, B, N, m->H, C / m->H);
    g_ops->zero(dc, sizeof(real) * n);
    g_ops->silu_backward(dc, du, c, n);
    g_ops->zero(dx, sizeof(real) * n);
    g_ops->conv1d_causal_backward(dx, MP(m, grads, pc), NULL, dc, x, MP(m, params, pc), B, N, C, p->K);
    linear_backward(dh, MP(m, grads, pw), NULL, dx, h, MP(m, params, pw), B * N, m->Dm, C);
}

static void gdn_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                         real *grads, real *act, real *scratch) {
    const GdnPriv *p = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, R = B * N;
    size_t RD = (size_t)R * m->D, RV = (size_t)R * p->Dv, RE = (size_t)R * GMA_MAX(m->D, p->Dv), BHN = (size_t)R * H;
    Acts a = carve(m, B, N, act);
    real *don = scratch, *dom = don + RV, *dgg = dom + RV, *doh = dgg + RV, *dvh = doh + RV, *dqn = dvh + RV;
    real *dkn = dqn + RD, *dqh = dkn + RD, *dkh = dqh + RD, *t1 = dkh + RD, *t2 = t1 + RE, *t3 = t2 + RE;
    real *dga = t3 + RE, *dgb = dga + BHN, *tg = dgb + BHN;
    /* the accumulators; t1..t3 are branch_backward's (it zeroes what it accumulates into), tg
     * is written whole by merge_heads */
    g_ops->zero(scratch, sizeof(real) * (size_t)(t1 - scratch));
    g_ops->zero(dga, sizeof(real) * 2 * BHN);
    linear_backward_set(don, MP(m, grads, P_O), NULL, dy, a.on, MP(m, params, P_O), R, p->Dv, m->Dm);
    g_ops->rownorm_backward(dom, MP(m, grads, P_NORM), dgg, don, a.om, MP(m, params, P_NORM), a.gg, a.ro, (int)BHN,
                            p->dv, 1);
    linear_backward(dh, MP(m, grads, P_G), NULL, dgg, h, MP(m, params, P_G), R, m->Dm, p->Dv);
    g_ops->split_heads(doh, dom, B, N, H, p->dv);
    g_ops->delta_backward(dqn, dkn, dvh, dga, dgb, opt_param(m, grads, P_ALOG), opt_param(m, grads, P_DTB), NULL, doh, a.Sck,
                          a.qn, a.kn, a.vh, p->decay ? a.ga : NULL, p->delta ? a.gb : NULL,
                          opt_param(m, params, P_ALOG), opt_param(m, params, P_DTB), NULL, B, H, N, d, p->dv, p->chunk,
                          (real)(1 / sqrt((double)d)));
    const real *dg[2] = {dga, dgb};
    int pg[2] = {P_A, P_B}, on[2] = {p->decay, p->delta};
    for (int i = 0; i < 2; i++)
        if (on[i]) {
            g_ops->merge_heads(tg, dg[i], B, N, H, 1);
            linear_backward(dh, MP(m, grads, pg[i]), NULL, tg, h, MP(m, params, pg[i]), R, m->Dm, H);
        }
    g_ops->rownorm_backward(dqh, NULL, NULL, dqn, a.qh, NULL, NULL, a.rq, (int)BHN, d, 0);
    g_ops->rownorm_backward(dkh, NULL, NULL, dkn, a.kh, NULL, NULL, a.rk, (int)BHN, d, 0);
    branch_backward(m, params, grads, P_Q, P_QC, h, a.xq, a.cq, dqh, dh, t1, t2, t3, B, N, m->D);
    branch_backward(m, params, grads, P_K, P_KC, h, a.xk, a.ck, dkh, dh, t1, t2, t3, B, N, m->D);
    branch_backward(m, params, grads, P_V, P_VC, h, a.xv, a.cv, dvh, dh, t1, t2, t3, B, N, p->Dv);
}

static void gdn_destroy(Mixer *m) {
    free(m->priv);
    free(m);
}

/* incremental decoding: a sequence's state is S [H,d,dv], then for each of q, k, v (C = D,
 * D, Dv channels) the last K-1 inputs of its convolution [K-1,C] (conv_state.h; the
 * windows of a step in scratch) */
static size_t conv_block(const Mixer *m, int C) { return (size_t)(((const GdnPriv *)m->priv)->K - 1) * C; }
static size_t gdn_dstate(const Mixer *m, int Nmax) {
    const GdnPriv *p = m->priv;
    (void)Nmax;
    return (size_t)m->H * m->d * p->dv + 2 * conv_block(m, m->D) + conv_block(m, p->Dv);
}
static void gdn_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                       real *act, real *scratch) {
    const GdnPriv *p = m->priv;
    int D = m->D, Dv = p->Dv, H = m->H, d = m->d;
    size_t ss = gdn_dstate(m, Nmax), SH = (size_t)H * d * p->dv;
    (void)pos;
    Acts a = carve(m, B, 1, act);
    real *cs = state + SH; /* q's convolution state; k's, v's after it */
    const int pw[3] = {P_Q, P_K, P_V}, pc[3] = {P_QC, P_KC, P_VC}, C[3] = {D, D, Dv};
    real *x[3] = {a.xq, a.xk, a.xv}, *cc[3] = {a.cq, a.ck, a.cv}, *u[3] = {a.qh, a.kh, a.vh};
    for (int i = 0; i < 3; i++) {
        linear_forward(x[i], h, MP(m, params, pw[i]), NULL, B, m->Dm, C[i]);
        conv_state_step(cc[i], x[i], cs, ss, MP(m, params, pc[i]), NULL, B, p->K, C[i], scratch);
        g_ops->silu_forward(u[i], cc[i], (size_t)B * C[i]); /* [B,C] = [B,H,1,w] */
        cs += conv_block(m, C[i]);
    }
    g_ops->rownorm_forward(a.qn, a.rq, a.qh, NULL, NULL, B * H, d, L2_EPS, 0);
    g_ops->rownorm_forward(a.kn, a.rk, a.kh, NULL, NULL, B * H, d, L2_EPS, 0);
    if (p->decay) linear_forward(a.ga, h, MP(m, params, P_A), NULL, B, m->Dm, H); /* [B,H] */
    if (p->delta) linear_forward(a.gb, h, MP(m, params, P_B), NULL, B, m->Dm, H);
    g_ops->delta_step(a.oh, state, ss, a.qn, a.kn, a.vh, p->decay ? a.ga : NULL, p->delta ? a.gb : NULL,
                      opt_param(m, params, P_ALOG), opt_param(m, params, P_DTB), NULL, B, H, d, p->dv,
                      (real)(1 / sqrt((double)d)));
    linear_forward(a.gg, h, MP(m, params, P_G), NULL, B, m->Dm, Dv);
    g_ops->rownorm_forward(a.on, a.ro, a.oh, MP(m, params, P_NORM), a.gg, B * H, p->dv, NORM_EPS, 1);
    linear_forward(y, a.on, MP(m, params, P_O), NULL, B, Dv, m->Dm);
}

/* prefill: S is the forward's final state (the last entry of Sck); each convolution's last
 * K-1 inputs are the forward's last rows of x (zeros before position 0) */
static void gdn_prefill(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                        int Nmax, real *scratch) {
    const GdnPriv *p = m->priv;
    int B = c->B, N = c->N, H = m->H, K = p->K;
    size_t ss = gdn_dstate(m, Nmax), SS = (size_t)m->d * p->dv, nck = n_ck(m, N);
    (void)h, (void)params, (void)scratch;
    Acts a = carve(m, B, N, (real *)act);
    const real *x[3] = {a.xq, a.xk, a.xv};
    const int C[3] = {m->D, m->D, p->Dv};
    for (int b = 0; b < B; b++)
        for (int hh = 0; hh < H; hh++)
            g_ops->copy(state + b * ss + hh * SS, a.Sck + (((size_t)b * H + hh) * nck + nck - 1) * SS, sizeof(real) * SS);
    real *cs = state + (size_t)H * SS; /* q's convolution state; k's, v's after it */
    for (int i = 0; i < 3; i++) {
        conv_state_prefill(cs, ss, x[i], B, N, K, C[i]);
        cs += conv_block(m, C[i]);
    }
}

const MixerVT mixer_gdn = {
    .name = "gdn",
    .own_conv = 1,
    .config = &gdn_section,
    .validate = gdn_validate,
    .causal_ok = 1,
    .bidir_ok = 0,
    .attn_dropout_why = "is a linear recurrence: it has no attention probabilities to drop",
    .create = gdn_create,
    .init = gdn_init,
    .act_size = gdn_act,
    .scratch_size = gdn_scratch,
    .forward = gdn_forward,
    .backward = gdn_backward,
    .destroy = gdn_destroy,
    .decode_state = gdn_dstate,
    .decode = gdn_decode,
    .prefill = gdn_prefill,
    .fused_flops = gdn_fused_flops,
};
