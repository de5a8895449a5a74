/* gma.c: Gaussian Mixture Attention (GMA_SPEC 3.2, `mixer: "gma"`). Queries and keys are
 * routed through Kc Gaussian components per head; the responsibilities are the feature
 * maps of the normalised linear mixing core (3.1), so a layer costs O(N Kc d):
 *   gamma_q = route(Q), gamma_k = route(K) (padded keys: zero rows),
 *   O = linmix(gamma_q, gamma_k, V), y = O Wo^T + bo.
 * Parameters (per head unless gma.shared_components): mu [H,Kc,d], var_raw [H,Kc,d],
 * prior_logits [H,Kc] under PREFIX.gma.*.
 *
 * Default initialisation: var_raw so that sigma2 = 1, prior 0, mu ~ N(0, s^2) with
 * s = gma.init_mean_scale or, when 0, s = (2 d)^(-1/4): the spread of -|mu_k|^2/2 across
 * components then has std 1/2 nat, so initial responsibilities are soft, not one-hot.
 *
 * act:     qh, kh, vh, oh [B,H,N,d]; gq, gk [B,H,N,Kc]; den [B,H,N]; chunk states
 * scratch: two [B*N*D] buffers, dq, dk, dv [B,H,N,d], dgq, dgk [B,H,N,Kc] */
#include <stdlib.h>
#include <string.h>

#include "nn/mixers/mixer.h"

const MixerVT mixer_gma;
enum { P_MU = AP_N, P_VAR, P_PRIOR };

typedef struct GmaPriv {
    int Kc, chunk, shared;
    real tau, var_floor, eps;
    double mean_scale;
} GmaPriv;

static Mixer *gma_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    Mixer *m = mixer_new(&mixer_gma, c, pt);
    GmaPriv *g = xcalloc(1, sizeof *g);
    g->Kc = c->gma.n_components;
    g->chunk = c->gma.chunk;
    g->shared = c->gma.shared_components;
    g->tau = (real)c->gma.temperature;
    g->var_floor = (real)c->gma.var_floor;
    g->eps = (real)c->gma.eps;
    g->mean_scale = c->gma.init_mean_scale > 0 ? c->gma.init_mean_scale : pow(2.0 * m->d, -0.25);
    m->priv = g;
    attn_proj_add(m, c, pt, prefix);
    int Hp = g->shared ? 1 : m->H;
    int s3[3] = {Hp, g->Kc, m->d};
    char name[128];
    /* softplus(v) + floor = 1  <=>  v = log(exp(1 - floor) - 1) */
    double v0 = log(expm1(1.0 - c->gma.var_floor));
    snprintf(name, sizeof name, "%s.gma.mu", prefix);
    m->p[P_MU] = pt_add(pt, name, 3, s3, INIT_NORMAL, g->mean_scale, GROUP_MIXTURE);
    snprintf(name, sizeof name, "%s.gma.var_raw", prefix);
    m->p[P_VAR] = pt_add(pt, name, 3, s3, INIT_CONST, v0, GROUP_MIXTURE);
    snprintf(name, sizeof name, "%s.gma.prior_logits", prefix);
    m->p[P_PRIOR] = pt_add2(pt, name, Hp, g->Kc, INIT_ZERO, 0, GROUP_MIXTURE);
    return m;
}

static size_t n_state(const Mixer *m, int B, int N, int causal_chunks) {
    const GmaPriv *g = m->priv;
    size_t nc = (size_t)(N + g->chunk - 1) / g->chunk;
    if (!causal_chunks) nc = GMA_MAX(nc, 1);
    return (size_t)B * m->H * nc * ((size_t)g->Kc * m->d + g->Kc);
}

static size_t gma_act(const Mixer *m, int B, int N) {
    const GmaPriv *g = m->priv;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * m->H * N * g->Kc;
    return 4 * hs + 2 * gs + (size_t)B * m->H * N + n_state(m, B, N, 1);
}

static size_t gma_scratch(const Mixer *m, int B, int N) {
    const GmaPriv *g = m->priv;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * m->H * N * g->Kc;
    return 5 * hs + 2 * gs;
}

typedef struct Acts { real *qh, *kh, *vh, *oh, *gq, *gk, *den, *state; } Acts;
static Acts carve(const Mixer *m, int B, int N, real *act) {
    const GmaPriv *g = m->priv;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * m->H * N * g->Kc;
    Acts a;
    a.qh = act;
    a.kh = a.qh + hs;
    a.vh = a.kh + hs;
    a.oh = a.vh + hs;
    a.gq = a.oh + hs;
    a.gk = a.gq + gs;
    a.den = a.gk + gs;
    a.state = a.den + (size_t)B * m->H * N;
    return a;
}

static void gma_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                        real *scratch) {
    const GmaPriv *g = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d;
    Acts a = carve(m, B, N, act);
    attn_proj_qkv(m, params, h, a.qh, a.kh, a.vh, scratch, B, N);
    const real *mu = MP(m, params, P_MU), *vr = MP(m, params, P_VAR), *pr = MP(m, params, P_PRIOR);
    g_ops->gma_route_forward(a.gq, a.qh, mu, vr, pr, B, H, N, d, g->Kc, g->tau, g->var_floor, g->shared);
    g_ops->gma_route_forward(a.gk, a.kh, mu, vr, pr, B, H, N, d, g->Kc, g->tau, g->var_floor, g->shared);
    mask_rows(a.gk, c->keymask, B, H, N, g->Kc);
    g_ops->linmix_forward(a.oh, a.den, a.state, a.gq, a.gk, a.vh, B * H, N, g->Kc, d, c->causal, g->chunk, g->eps);
    attn_proj_out(m, params, y, a.oh, scratch, B, N);
}

static void gma_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                         real *grads, real *act, real *scratch) {
    const GmaPriv *g = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * H * N * g->Kc;
    Acts a = carve(m, B, N, act);
    real *t1 = scratch, *t2 = t1 + hs, *dq = t2 + hs, *dk = dq + hs, *dv = dk + hs, *dgq = dv + hs, *dgk = dgq + gs;
    real *doh = t1;
    attn_proj_out_backward(m, params, grads, dq, dy, a.oh, t1, t2, B, N);
    g_ops->copy(doh, dq, sizeof(real) * hs);
    g_ops->zero(dgq, sizeof(real) * 2 * gs);
    g_ops->zero(dv, sizeof(real) * hs);
    g_ops->linmix_backward(dgq, dgk, dv, doh, a.oh, a.den, a.state, a.gq, a.gk, a.vh, B * H, N, g->Kc, d, c->causal,
                           g->chunk);
    mask_rows(dgk, c->keymask, B, H, N, g->Kc);
    g_ops->zero(dq, sizeof(real) * 2 * hs);
    const real *mu = MP(m, params, P_MU), *vr = MP(m, params, P_VAR), *pr = MP(m, params, P_PRIOR);
    real *dmu = MP(m, grads, P_MU), *dvr = MP(m, grads, P_VAR), *dpr = MP(m, grads, P_PRIOR);
    g_ops->gma_route_backward(dq, dmu, dvr, dpr, dgq, a.gq, a.qh, mu, vr, pr, B, H, N, d, g->Kc, g->tau, g->var_floor,
                              g->shared);
    g_ops->gma_route_backward(dk, dmu, dvr, dpr, dgk, a.gk, a.kh, mu, vr, pr, B, H, N, d, g->Kc, g->tau,
                              g->var_floor, g->shared);
    attn_proj_qkv_backward(m, params, grads, dh, h, dq, dk, dv, t2, B, N);
}

static void gma_destroy(Mixer *m) {
    free(m->priv);
    free(m);
}

const MixerVT mixer_gma = {
    .name = "gma",
    .causal_ok = 1,
    .bidir_ok = 1,
    .create = gma_create,
    .act_size = gma_act,
    .scratch_size = gma_scratch,
    .forward = gma_forward,
    .backward = gma_backward,
    .destroy = gma_destroy,
};
