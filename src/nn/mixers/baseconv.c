/* baseconv.c: Zoology's BaseConv (Arora et al. 2023; `mixer: "baseconv"`), the gated short
 * convolution that Zoology puts in the first layer of its sub-quadratic MQAR models; causal
 * only. Math and initialisation: docs/model.md §3.5; sources: docs/baselines.md. Every step
 * is an op of the table (conv1d_causal, the linear, mul or the SiLU gate, axpy): no kernel
 * of its own. Causal, so right padding never reaches earlier rows: the keymask is not used.
 * Parameters (K = baseconv.kernel): PREFIX.baseconv.{projection.weight [D,D],
 * projection.bias [D], conv.weight [D,K], conv.bias [D]}. Rows r = (b, t), R = B N.
 * act:     c, p [R,D]; with act also silu(c) [R,D]
 * scratch: the backward's dc, dp (and d silu(c)) [R,D]; a decoding step's windows and their
 *          convolution [B,K,D] each */
#include <stdlib.h>

#include "nn/linear.h"
#include "nn/mixers/conv_state.h"
#include "nn/mixers/mixer.h"

const MixerVT mixer_baseconv;
enum { P_W, P_B, P_CONVW, P_CONVB };
typedef struct BcPriv {
    int K, act;
} BcPriv;

/* the keys baseconv.* */
typedef struct BaseConvCfg {
    int kernel; /* K */
    int act;    /* SiLU on both branches (Zoology's use_act) */
} BaseConvCfg;
#define O(f) offsetof(BaseConvCfg, f)
static const CfgKey bc_keys[] = {
    {"kernel", CFGT_INT, O(kernel), 0, "3", 1, 1024, NULL,
     "BaseConv: kernel of the causal depthwise convolution (Zoology's MQAR models: 3)."},
    {"act", CFGT_BOOL, O(act), 0, "false", 0, 0, NULL,
     "BaseConv: SiLU on the convolution and the projection before their product (Zoology's use_act)."},
};
#undef O
static const CfgSection bc_section = {"baseconv", sizeof(BaseConvCfg), bc_keys, CFG_N(bc_keys), NULL, NULL};

static Mixer *bc_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    if (NEED_OP("baseconv", conv1d_causal_forward) || NEED_OP("baseconv", conv1d_causal_backward) ||
        NEED_OP("baseconv", mul_forward) || NEED_OP("baseconv", mul_backward) || NEED_OP("baseconv", silu_forward) ||
        NEED_OP("baseconv", silu_backward) || NEED_OP("baseconv", gate_silu_forward) ||
        NEED_OP("baseconv", gate_silu_backward))
        return NULL;
    if (!cfg_causal(c)) /* also for callers that build without cfg_validate */
        return gma_errorf("key model.mixer: mixer \"baseconv\" (layer %d) cannot run bidirectionally", layer), NULL;
    Mixer *m = mixer_new(&mixer_baseconv, c, pt);
    BcPriv *p = xcalloc(1, sizeof *p);
    const BaseConvCfg *bc = cfg_section_of(c, &bc_section);
    p->K = bc->kernel;
    p->act = bc->act;
    m->priv = p;
    int D = m->Dm, xavier = c->model.dense_init == DENSE_INIT_XAVIER_UNIFORM;
    char name[128];
#define NM(s) (snprintf(name, sizeof name, "%s.baseconv.%s", prefix, s), name)
    m->p[P_W] = pt_add2(pt, NM("projection.weight"), D, D, xavier ? INIT_XAVIER_UNIFORM : INIT_NORMAL, c->model.init_std,
                        GROUP_WEIGHT);
    m->p[P_B] = pt_add1(pt, NM("projection.bias"), D, INIT_ZERO, 0, GROUP_BIAS);
    /* drawn by bc_init */
    m->p[P_CONVW] = pt_add2(pt, NM("conv.weight"), D, p->K, INIT_ZERO, 0, GROUP_WEIGHT);
    m->p[P_CONVB] = pt_add1(pt, NM("conv.bias"), D, INIT_ZERO, 0, GROUP_BIAS);
#undef NM
    return m;
}

/* PyTorch's Conv1d default (kaiming_uniform with a = sqrt(5), fan_in K): weight and bias
 * uniform in [-1/sqrt(K), 1/sqrt(K)] */
static void bc_init(Mixer *m, real *params, Rng *rng) {
    const BcPriv *p = m->priv;
    double bound = 1 / sqrt((double)p->K);
    real *w = MP(m, params, P_CONVW), *b = MP(m, params, P_CONVB);
    for (size_t i = 0; i < (size_t)m->Dm * p->K; i++) w[i] = (real)(bound * (2 * rng_uniform(rng) - 1));
    for (int i = 0; i < m->Dm; i++) b[i] = (real)(bound * (2 * rng_uniform(rng) - 1));
}

static size_t bc_act(const Mixer *m, int B, int N) {
    return (size_t)(((const BcPriv *)m->priv)->act ? 3 : 2) * B * N * m->Dm;
}
static size_t bc_scratch(const Mixer *m, int B, int N) {
    const BcPriv *p = m->priv;
    return GMA_MAX(bc_act(m, B, N), conv_state_scratch(B, p->K, m->Dm));
}

/* y = c * p + h over R rows (act: silu(c) into sc, then sc * silu(p)) */
static void combine(const Mixer *m, real *y, const real *h, const real *c, const real *pj, real *sc, size_t n) {
    if (((const BcPriv *)m->priv)->act) {
        g_ops->silu_forward(sc, c, n);
        g_ops->gate_silu_forward(y, sc, pj, n);
    } else
        g_ops->mul_forward(y, c, pj, n);
    g_ops->axpy(y, 1, h, n);
}

static void bc_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                       real *scratch) {
    const BcPriv *p = m->priv;
    int B = c->B, N = c->N, D = m->Dm, R = B * N;
    size_t RD = (size_t)R * D;
    real *cv = act, *pj = cv + RD, *sc = pj + RD;
    (void)scratch;
    g_ops->conv1d_causal_forward(cv, h, MP(m, params, P_CONVW), MP(m, params, P_CONVB), B, N, D, p->K);
    linear_forward(pj, h, MP(m, params, P_W), MP(m, params, P_B), R, D, D);
    combine(m, y, h, cv, pj, sc, RD);
}

static void bc_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                        real *grads, real *act, real *scratch) {
    const BcPriv *p = m->priv;
    int B = c->B, N = c->N, D = m->Dm, R = B * N;
    size_t RD = (size_t)R * D;
    const real *cv = act, *pj = cv + RD, *sc = pj + RD;
    real *dc = scratch, *dp = dc + RD, *dsc = dp + RD;
    g_ops->zero(scratch, sizeof(real) * bc_act(m, B, N));
    g_ops->axpy(dh, 1, dy, RD); /* the mixer's own "+ h" */
    if (p->act) {
        g_ops->gate_silu_backward(dsc, dp, dy, sc, pj, RD);
        g_ops->silu_backward(dc, dsc, cv, RD);
    } else
        g_ops->mul_backward(dc, dp, dy, cv, pj, RD);
    linear_backward(dh, MP(m, grads, P_W), MP(m, grads, P_B), dp, h, MP(m, params, P_W), R, D, D);
    g_ops->conv1d_causal_backward(dh, MP(m, grads, P_CONVW), MP(m, grads, P_CONVB), dc, h, MP(m, params, P_CONVW), B,
                                  N, D, p->K);
}

static void bc_destroy(Mixer *m) {
    free(m->priv);
    free(m);
}

/* incremental decoding: a sequence's state is the convolution's last K-1 inputs [K-1,D]
 * (conv_state.h; its windows in scratch) */
static size_t bc_dstate(const Mixer *m, int Nmax) {
    (void)Nmax;
    return (size_t)(((const BcPriv *)m->priv)->K - 1) * m->Dm;
}
static void bc_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                      real *act, real *scratch) {
    const BcPriv *p = m->priv;
    int D = m->Dm, K = p->K;
    size_t BD = (size_t)B * D;
    real *cv = act, *pj = cv + BD, *sc = pj + BD;
    (void)pos;
    conv_state_step(cv, h, state, bc_dstate(m, Nmax), MP(m, params, P_CONVW), MP(m, params, P_CONVB), B, K, D, scratch);
    linear_forward(pj, h, MP(m, params, P_W), MP(m, params, P_B), B, D, D);
    combine(m, y, h, cv, pj, sc, BD);
}

/* prefill: the state is the last K-1 rows of the forward's input (zeros before position 0) */
static void bc_prefill(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                       int Nmax, real *scratch) {
    (void)params, (void)act, (void)scratch;
    conv_state_prefill(state, bc_dstate(m, Nmax), h, c->B, c->N, ((const BcPriv *)m->priv)->K, m->Dm);
}

const MixerVT mixer_baseconv = {
    .name = "baseconv",
    .own_conv = 1,
    .config = &bc_section,
    .causal_ok = 1,
    .bidir_ok = 0,
    .attn_dropout_why = "is a gated convolution: it has no attention probabilities to drop",
    .create = bc_create,
    .init = bc_init,
    .act_size = bc_act,
    .scratch_size = bc_scratch,
    .forward = bc_forward,
    .backward = bc_backward,
    .destroy = bc_destroy,
    .decode_state = bc_dstate,
    .decode = bc_decode,
    .prefill = bc_prefill,
    .fused_flops = mixer_no_fused_flops,
};
