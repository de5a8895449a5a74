/* mamba.c: the Mamba-1 selective state-space block (Gu & Dao 2023; `mixer: "mamba"`),
 * causal only: math and initialisation (the reference implementation's, which keeps
 * PyTorch's default linear init for in_proj and x_proj) in docs/model.md §3.5. Causal, so
 * right padding never reaches earlier rows: the keymask is not used.
 * Parameters (E = mamba.expand D, S = mamba.d_state, K = mamba.d_conv, Rk = mamba.dt_rank):
 * PREFIX.mamba.{in_proj.weight [2E,D], conv.weight [E,K], conv.bias [E], x_proj.weight
 * [Rk+2S,E], dt_proj.weight [E,Rk], dt_proj.bias [E], A_log [E,S], D [E], out_proj.weight
 * [D,E]}. Rows r = (b, t), R = B N.
 * act:     x, z, xc, u, dtr, dt, ys, g [R,E]; dtl [R,Rk]; Bm, Cm [R,S]; hck [B,ceil(N/chunk),E,S]
 * scratch: 8 [R,E] buffers; [R,Rk]; 2 [R,S] */
#include <stdlib.h>

#include "nn/linear.h"
#include "nn/mixers/conv_state.h"
#include "nn/mixers/mixer.h"

const MixerVT mixer_mamba;
enum { P_IN, P_CONVW, P_CONVB, P_XPROJ, P_DTW, P_DTB, P_ALOG, P_D, P_OUT };
typedef struct MbPriv {
    int E, S, K, Rk, chunk;
} MbPriv;

/* the keys mamba.* */
typedef struct MambaCfg {
    int d_state; /* S */
    int expand;  /* E: inner width E D */
    int d_conv;  /* causal conv kernel */
    int dt_rank; /* 0 = ceil(D / 16) */
    int chunk;   /* scan checkpoint interval */
} MambaCfg;
#define O(f) offsetof(MambaCfg, f)
static const CfgKey mb_keys[] = {
    {"d_state", CFGT_INT, O(d_state), 0, "16", 1, 1024, NULL, "Mamba: state size S per channel."},
    {"expand", CFGT_INT, O(expand), 0, "2", 1, 64, NULL, "Mamba: inner width = expand * d_model."},
    {"d_conv", CFGT_INT, O(d_conv), 0, "4", 1, 64, NULL, "Mamba: kernel of the causal depthwise convolution."},
    {"dt_rank", CFGT_INT, O(dt_rank), 0, "0", 0, 65536, NULL, "Mamba: rank of the dt projection (0 = ceil(d_model / 16))."},
    {"chunk", CFGT_INT, O(chunk), 0, "64", 1, 65536, NULL, "Mamba: steps between saved scan states (memory/recompute trade-off)."},
};
#undef O
static const CfgSection mb_section = {"mamba", sizeof(MambaCfg), mb_keys, (int)(sizeof mb_keys / sizeof mb_keys[0]), NULL, NULL};

static Mixer *mb_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    if (NEED_OP("mamba", silu_forward) || NEED_OP("mamba", silu_backward) || NEED_OP("mamba", softplus_forward) ||
        NEED_OP("mamba", softplus_backward) || NEED_OP("mamba", gate_silu_forward) ||
        NEED_OP("mamba", gate_silu_backward) || NEED_OP("mamba", conv1d_causal_forward) ||
        NEED_OP("mamba", conv1d_causal_backward) || NEED_OP("mamba", scan_forward) || NEED_OP("mamba", scan_backward))
        return NULL;
    if (!cfg_causal(c)) /* also for callers that build without cfg_validate */
        return gma_errorf("key model.mixer: mixer \"mamba\" (layer %d) cannot run bidirectionally", layer), NULL;
    Mixer *m = mixer_new(&mixer_mamba, c, pt);
    MbPriv *p = xcalloc(1, sizeof *p);
    int D = m->Dm;
    const MambaCfg *mc = cfg_section_of(c, &mb_section);
    p->E = mc->expand * D;
    p->S = mc->d_state;
    p->K = mc->d_conv;
    p->Rk = mc->dt_rank > 0 ? mc->dt_rank : (D + 15) / 16;
    p->chunk = mc->chunk;
    m->priv = p;
    /* the reference's PyTorch defaults: kaiming-uniform linears, std 1/sqrt(3 fan_in);
     * out_proj further scaled by 1/sqrt(n_layers) */
    double sin = 1 / sqrt(3.0 * D), sx = 1 / sqrt(3.0 * p->E), sout = sx / sqrt((double)c->model.n_layers);
    char name[128];
#define NM(s) (snprintf(name, sizeof name, "%s.mamba.%s", prefix, s), name)
    m->p[P_IN] = pt_add2(pt, NM("in_proj.weight"), 2 * p->E, D, INIT_NORMAL, sin, GROUP_WEIGHT);
    m->p[P_CONVW] = pt_add2(pt, NM("conv.weight"), p->E, p->K, INIT_NORMAL, 1 / sqrt(3.0 * p->K), GROUP_WEIGHT);
    m->p[P_CONVB] = pt_add1(pt, NM("conv.bias"), p->E, INIT_ZERO, 0, GROUP_BIAS);
    m->p[P_XPROJ] = pt_add2(pt, NM("x_proj.weight"), p->Rk + 2 * p->S, p->E, INIT_NORMAL, sx, GROUP_WEIGHT);
    m->p[P_DTW] = pt_add2(pt, NM("dt_proj.weight"), p->E, p->Rk, INIT_NORMAL, 1 / sqrt(3.0 * p->Rk), GROUP_WEIGHT);
    m->p[P_DTB] = pt_add1(pt, NM("dt_proj.bias"), p->E, INIT_ZERO, 0, GROUP_BIAS);
    m->p[P_ALOG] = pt_add2(pt, NM("A_log"), p->E, p->S, INIT_ZERO, 0, GROUP_MIXTURE);
    m->p[P_D] = pt_add1(pt, NM("D"), p->E, INIT_ONE, 0, GROUP_MIXTURE);
    m->p[P_OUT] = pt_add2(pt, NM("out_proj.weight"), D, p->E, INIT_NORMAL, sout, GROUP_WEIGHT);
#undef NM
    return m;
}

static void mb_init(Mixer *m, real *params, Rng *rng) {
    const MbPriv *p = m->priv;
    real *alog = MP(m, params, P_ALOG), *bdt = MP(m, params, P_DTB);
    for (int c = 0; c < p->E; c++)
        for (int s = 0; s < p->S; s++) alog[(size_t)c * p->S + s] = (real)log(s + 1.0);
    for (int c = 0; c < p->E; c++) {
        double dt = exp(log(1e-3) + rng_uniform(rng) * (log(1e-1) - log(1e-3)));
        dt = GMA_MAX(dt, 1e-4);
        bdt[c] = (real)(dt + log(-expm1(-dt))); /* softplus^-1 */
    }
}

static size_t n_ck(const Mixer *m, int N) { return (size_t)(N + ((const MbPriv *)m->priv)->chunk - 1) / ((const MbPriv *)m->priv)->chunk; }
static size_t mb_act(const Mixer *m, int B, int N) {
    const MbPriv *p = m->priv;
    size_t R = (size_t)B * N;
    return 8 * R * p->E + R * p->Rk + 2 * R * p->S + (size_t)B * n_ck(m, N) * p->E * p->S;
}
static size_t mb_scratch(const Mixer *m, int B, int N) {
    const MbPriv *p = m->priv;
    size_t R = (size_t)B * N;
    return GMA_MAX(8 * R * p->E + R * p->Rk + 2 * R * p->S, conv_state_scratch(B, p->K, p->E)); /* with a decoding step's windows */
}

typedef struct Acts { real *x, *z, *xc, *u, *dtr, *dt, *ys, *g, *dtl, *Bm, *Cm, *hck; } Acts;
static Acts carve(const Mixer *m, int B, int N, real *act) {
    const MbPriv *p = m->priv;
    size_t R = (size_t)B * N, RE = R * p->E;
    Acts a;
    a.x = act;
    a.z = a.x + RE;
    a.xc = a.z + RE;
    a.u = a.xc + RE;
    a.dtr = a.u + RE;
    a.dt = a.dtr + RE;
    a.ys = a.dt + RE;
    a.g = a.ys + RE;
    a.dtl = a.g + RE;
    a.Bm = a.dtl + R * p->Rk;
    a.Cm = a.Bm + R * p->S;
    a.hck = a.Cm + R * p->S;
    return a;
}

/* the input-dependent step parameters of R rows of u (docs/model.md): dt (softplus of the
 * low-rank projection), Bm and Cm */
static void step_params(const Mixer *m, const real *params, Acts *a, int R) {
    const MbPriv *p = m->priv;
    int E = p->E, S = p->S, Rk = p->Rk;
    const real *Wx = MP(m, params, P_XPROJ);
    linear_forward(a->dtl, a->u, Wx, NULL, R, E, Rk);
    linear_forward(a->Bm, a->u, Wx + (size_t)Rk * E, NULL, R, E, S);
    linear_forward(a->Cm, a->u, Wx + (size_t)(Rk + S) * E, NULL, R, E, S);
    linear_forward(a->dtr, a->dtl, MP(m, params, P_DTW), MP(m, params, P_DTB), R, Rk, E);
    g_ops->softplus_forward(a->dt, a->dtr, (size_t)R * E);
}

static void mb_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                       real *scratch) {
    const MbPriv *p = m->priv;
    int B = c->B, N = c->N, D = m->Dm, E = p->E, S = p->S, R = B * N;
    size_t RE = (size_t)R * E;
    Acts a = carve(m, B, N, act);
    const real *Win = MP(m, params, P_IN);
    linear_forward(a.x, h, Win, NULL, R, D, E);
    linear_forward(a.z, h, Win + (size_t)E * D, NULL, R, D, E);
    g_ops->conv1d_causal_forward(a.xc, a.x, MP(m, params, P_CONVW), MP(m, params, P_CONVB), B, N, E, p->K);
    g_ops->silu_forward(a.u, a.xc, RE);
    step_params(m, params, &a, R);
    g_ops->scan_forward(a.ys, a.hck, a.u, a.dt, a.Bm, a.Cm, MP(m, params, P_ALOG), MP(m, params, P_D), B, N, E, S,
                        p->chunk);
    g_ops->gate_silu_forward(a.g, a.ys, a.z, RE);
    linear_forward(y, a.g, MP(m, params, P_OUT), NULL, R, E, D);
}

/* hand-written: the reverse (adjoint) scan in g_ops->scan_backward with states recomputed
 * from checkpoints every mamba.chunk steps, then the gate, the softplus, the projections,
 * the SiLU and the causal convolution */
static void mb_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                        real *grads, real *act, real *scratch) {
    const MbPriv *p = m->priv;
    int B = c->B, N = c->N, D = m->Dm, E = p->E, S = p->S, Rk = p->Rk, R = B * N;
    size_t RE = (size_t)R * E;
    Acts a = carve(m, B, N, act);
    real *dg = scratch, *dys = dg + RE, *dz = dys + RE, *du = dz + RE, *ddt = du + RE, *ddtr = ddt + RE,
         *dxc = ddtr + RE, *dx = dxc + RE, *ddtl = dx + RE, *dBm = ddtl + (size_t)R * Rk, *dCm = dBm + (size_t)R * S;
    g_ops->zero(scratch, sizeof(real) * mb_scratch(m, B, N));
    const real *Win = MP(m, params, P_IN), *Wx = MP(m, params, P_XPROJ);
    real *gWin = MP(m, grads, P_IN), *gWx = MP(m, grads, P_XPROJ);
    linear_backward(dg, MP(m, grads, P_OUT), NULL, dy, a.g, MP(m, params, P_OUT), R, E, D);
    g_ops->gate_silu_backward(dys, dz, dg, a.ys, a.z, RE);
    g_ops->scan_backward(du, ddt, dBm, dCm, MP(m, grads, P_ALOG), MP(m, grads, P_D), dys, a.hck, a.u, a.dt, a.Bm,
                         a.Cm, MP(m, params, P_ALOG), MP(m, params, P_D), B, N, E, S, p->chunk);
    g_ops->softplus_backward(ddtr, ddt, a.dtr, RE);
    linear_backward(ddtl, MP(m, grads, P_DTW), MP(m, grads, P_DTB), ddtr, a.dtl, MP(m, params, P_DTW), R, Rk, E);
    linear_backward(du, gWx, NULL, ddtl, a.u, Wx, R, E, Rk);
    linear_backward(du, gWx + (size_t)Rk * E, NULL, dBm, a.u, Wx + (size_t)Rk * E, R, E, S);
    linear_backward(du, gWx + (size_t)(Rk + S) * E, NULL, dCm, a.u, Wx + (size_t)(Rk + S) * E, R, E, S);
    g_ops->silu_backward(dxc, du, a.xc, RE);
    g_ops->conv1d_causal_backward(dx, MP(m, grads, P_CONVW), MP(m, grads, P_CONVB), dxc, a.x, MP(m, params, P_CONVW),
                                  B, N, E, p->K);
    linear_backward(dh, gWin, NULL, dx, h, Win, R, D, E);
    linear_backward(dh, gWin + (size_t)E * D, NULL, dz, h, Win + (size_t)E * D, R, D, E);
}

static void mb_destroy(Mixer *m) {
    free(m->priv);
    free(m);
}

/* incremental decoding: a sequence's state is the last K-1 inputs of the causal
 * convolution [K-1,E] (conv_state.h; the windows of a step in scratch), then the scan
 * state h [E,S]. The scan's step (op scan_step) updates h in place on the backend. */
static size_t mb_dstate(const Mixer *m, int Nmax) {
    const MbPriv *p = m->priv;
    (void)Nmax;
    return (size_t)(p->K - 1) * p->E + (size_t)p->E * p->S;
}
static void mb_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                      real *act, real *scratch) {
    const MbPriv *p = m->priv;
    int D = m->Dm, E = p->E, S = p->S, K = p->K;
    (void)pos;
    size_t RE = (size_t)B * E, ss = mb_dstate(m, Nmax);
    Acts a = carve(m, B, 1, act);
    const real *Win = MP(m, params, P_IN);
    linear_forward(a.x, h, Win, NULL, B, D, E);
    linear_forward(a.z, h, Win + (size_t)E * D, NULL, B, D, E);
    conv_state_step(a.xc, a.x, state, ss, MP(m, params, P_CONVW), MP(m, params, P_CONVB), B, K, E, scratch);
    g_ops->silu_forward(a.u, a.xc, RE);
    step_params(m, params, &a, B);
    /* h = exp(dt A) h + dt Bm u, ys = Cm . h + D u, per channel */
    g_ops->scan_step(a.ys, state + (size_t)(K - 1) * E, ss, a.u, a.dt, a.Bm, a.Cm, MP(m, params, P_ALOG),
                     MP(m, params, P_D), B, E, S);
    g_ops->gate_silu_forward(a.g, a.ys, a.z, RE);
    linear_forward(y, a.g, MP(m, params, P_OUT), NULL, B, E, D);
}

/* prefill: the convolution's last K-1 inputs are the forward's last rows of x (zeros
 * before position 0); the scan state is the forward's checkpoint at the start of the last
 * chunk, stepped over that chunk's rows (the outputs go to scratch) */
static void mb_prefill(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                       int Nmax, real *scratch) {
    const MbPriv *p = m->priv;
    int B = c->B, N = c->N, E = p->E, S = p->S, K = p->K, t0 = (N - 1) / p->chunk * p->chunk;
    size_t ss = mb_dstate(m, Nmax), nck = n_ck(m, N), ES = (size_t)E * S;
    (void)h;
    Acts a = carve(m, B, N, (real *)act);
    conv_state_prefill(state, ss, a.x, B, N, K, E);
    for (int b = 0; b < B; b++) {
        real *hs = state + b * ss + (size_t)(K - 1) * E;
        g_ops->copy(hs, a.hck + ((size_t)b * nck + nck - 1) * ES, sizeof(real) * ES);
        for (int t = t0; t < N; t++) {
            size_t r = (size_t)b * N + t;
            g_ops->scan_step(scratch, hs, ss, a.u + r * E, a.dt + r * E, a.Bm + r * S, a.Cm + r * S,
                             MP(m, params, P_ALOG), MP(m, params, P_D), 1, E, S);
        }
    }
}

const MixerVT mixer_mamba = {
    .name = "mamba",
    .own_conv = 1,
    .config = &mb_section,
    .causal_ok = 1,
    .bidir_ok = 0,
    .attn_dropout_why = "is a state-space model: it has no attention probabilities to drop",
    .create = mb_create,
    .init = mb_init,
    .act_size = mb_act,
    .scratch_size = mb_scratch,
    .forward = mb_forward,
    .backward = mb_backward,
    .destroy = mb_destroy,
    .decode_state = mb_dstate,
    .decode = mb_decode,
    .prefill = mb_prefill,
    .fused_flops = mixer_no_fused_flops,
};
