/* gma.c: Gaussian Mixture Attention (docs/model.md §3.2-§3.4, §4, §5; `mixer: "gma"`). Queries and
 * keys are routed to Kc components per head; the responsibilities are the feature maps of
 * the normalised linear mixing core (3.1), so a layer costs O(N Kc d):
 *   gamma_q = route(Q), gamma_k = route(K) (padded keys: zero rows),
 *   O = linmix(gamma_q, gamma_k, V)            (gma.memory "none")
 *   O_i = sum_k gamma_k(q_i) M_k               (gma.memory "ema": M a buffer, see below)
 *   y = O Wo^T + bo.
 *
 * Routing (`gma.routing`):
 *   gaussian (default): mu [Hp,Kc,d], var_raw [Hp,Kc,d], prior_logits [Hp,Kc] under
 *     PREFIX.gma.*; the fused op gma_route_* (docs/model.md §3.2).
 *   softmax: router.weight W [Hp,Kc,d], router.bias b [Hp,Kc] under PREFIX.gma.router.*;
 *     gamma(x) = softmax((W x + b) / tau), the same W for queries and keys, built from
 *     matmul_strided + bias + softmax_rows (and their backward).
 *   Hp = 1 with gma.shared_components, else H.
 *
 * EMA memory (`gma.memory: "ema"`, docs/model.md §3.4): PREFIX.gma.memory [H,Kc,d] is a
 * GROUP_BUFFER tensor (saved in checkpoints, never trained). After the backward of each
 * training micro-batch (update_buffers) M <- alpha M + (1 - alpha) mean_t gamma(k_t) v_t^T
 * over the non-padded (batch, position) rows; alpha = gma.ema_decay or 1 - 1/(B N).
 * Evaluation never updates M. The output does not depend on this sequence's values, so no
 * gradient reaches Wk, bk, Wv, bv through M (K still gets the diversity-loss gradient); M
 * is seeded by k-means on the first training batch's query rows.
 *
 * Diversity loss (docs/model.md §4): when gma.div_weight > 0, every training forward computes
 *   L_div(layer) = 1/(2H) sum_h [ L(gamma_q[h]) + L(gamma_k[h]) ]
 * (L the token or batch form of ops.h gma_div_forward over non-padded rows); backward adds
 * gma.div_weight * ctx->aux_scale * dL_div/dgamma before the routing backward (aux_loss
 * reports L_div and its weight to the model).
 *
 * Default initialisation (gaussian): var_raw so that sigma2 = 1, prior 0, mu ~ N(0, s^2)
 * with s = gma.init_mean_scale or, when 0, s = (2 d)^(-1/4): the spread of -|mu_k|^2/2
 * across components then has std 1/2 nat, so initial responsibilities are soft, not one-hot.
 * Softmax routing: W ~ N(0, s^2) with s = gma.init_mean_scale or 1/sqrt(d), b = 0;
 * gma.init "orthogonal" draws W with orthonormal rows (Kc <= d) or columns (Kc > d).
 * gma.init "kmeans": centroids c_k of the first batch's query rows set mu_k = c_k
 * (gaussian) or W_k = c_k, b_k = -|c_k|^2/2 (softmax: then argmax_k gamma_k(x) is the
 * nearest centroid, as in the k-means partition).
 *
 * act:     qh, kh, vh, oh [B,H,N,d]; gq, gk [B,H,N,Kc]; den [B,H,N]; chunk states
 * scratch: two [B*N*D] buffers, dq, dk, dv [B,H,N,d], dgq, dgk [B,H,N,Kc] */
#include <stdlib.h>
#include <string.h>

#include "nn/kmeans.h"
#include "nn/mixers/linear_core.h"
#include "nn/mixers/mixer.h"

const MixerVT mixer_gma;
enum { P_MU = AP_N, P_VAR, P_PRIOR, P_RW, P_RB, P_MEM };

#define KMEANS_SAMPLE 4096
#define KMEANS_ITERS 10

/* the keys gma.* */
/* the values of gma's choice keys, in the order of their rows' choices */
enum { ROUTING_GAUSSIAN, ROUTING_SOFTMAX };
enum { GINIT_DEFAULT, GINIT_KMEANS, GINIT_ORTHOGONAL };
enum { MEMORY_NONE, MEMORY_EMA };
enum { DIV_TOKEN, DIV_BATCH };
enum { COLLAPSE_WARN, COLLAPSE_REINIT, COLLAPSE_STOP };

typedef struct GmaCfg {
    int n_components;       /* Kc */
    int routing;            /* ROUTING_GAUSSIAN | ROUTING_SOFTMAX */
    double temperature;
    double var_floor;
    int shared_components;
    int init;               /* GINIT_DEFAULT | GINIT_KMEANS | GINIT_ORTHOGONAL */
    double init_mean_scale;
    int memory;             /* MEMORY_NONE | MEMORY_EMA */
    double ema_decay;       /* 0 = 1 - 1/(B N) */
    double div_weight;
    int div_mode;           /* DIV_TOKEN | DIV_BATCH */
    int monitor_every;
    int on_collapse;        /* COLLAPSE_WARN | COLLAPSE_REINIT | COLLAPSE_STOP */
    double entropy_min;
    double util_min_share;
    int patience;
    double norm_growth_max;
} GmaCfg;

#define O(f) offsetof(GmaCfg, f)
#define S(f) sizeof(((GmaCfg *)0)->f)
static const CfgKey gma_keys[] = {
    {"n_components", CFGT_INT, O(n_components), 0, "64", 1, 65536, NULL, "Components per head Kc."},
    {"routing", CFGT_ENUM, O(routing), 0, "gaussian", 0, 0, "gaussian|softmax", "Routing of queries and keys."},
    {"temperature", CFGT_REAL, O(temperature), 0, "1", 1e-6, 1e6, NULL, "Responsibility temperature tau (fixed)."},
    {"var_floor", CFGT_REAL, O(var_floor), 0, "0.0001", 0, 1e6, NULL, "Added to softplus(var_raw)."},
    {"shared_components", CFGT_BOOL, O(shared_components), 0, "false", 0, 0, NULL, "One set of components for all heads."},
    {"init", CFGT_ENUM, O(init), 0, "default", 0, 0, "default|kmeans|orthogonal", "Initialisation of the components."},
    {"init_mean_scale", CFGT_REAL, O(init_mean_scale), 0, "0", 0, 1e6, NULL,
     "Std of the initial means (0 = (2 d)^(-1/4): soft initial responsibilities, see README)."},
    {"memory", CFGT_ENUM, O(memory), 0, "none", 0, 0, "none|ema", "Value memory: from the sequence, or an EMA buffer."},
    {"ema_decay", CFGT_REAL, O(ema_decay), 0, "0", 0, 0.999999999, NULL, "EMA decay alpha in (0,1) (0 = 1 - 1/(B N))."},
    {"div_weight", CFGT_REAL, O(div_weight), 0, "0", 0, 1e6, NULL, "Weight of the diversity loss (0 = off)."},
    {"div_mode", CFGT_ENUM, O(div_mode), 0, "token", 0, 0, "token|batch", "Diversity loss form."},
    {"monitor_every", CFGT_INT, O(monitor_every), 0, "100", 0, 1000000000, NULL, "Routing health check period in steps (0 = off)."},
    {"on_collapse", CFGT_ENUM, O(on_collapse), 0, "warn", 0, 0, "warn|reinit|stop", "Action on a collapse alert."},
    {"entropy_min", CFGT_REAL, O(entropy_min), 0, "1.5", 0, 1e6, NULL, "Alert when mean responsibility entropy (nats) is below."},
    {"util_min_share", CFGT_REAL, O(util_min_share), 0, "0.02", 0, 1, NULL, "A component is dead below this share of 1/Kc."},
    {"patience", CFGT_INT, O(patience), 0, "3", 1, 1000000, NULL, "Checks a component must stay dead before an alert."},
    {"norm_growth_max", CFGT_REAL, O(norm_growth_max), 0, "10", 1, 1e9, NULL, "EMA memory norm alert factor over its start."},
};
#undef O
#undef S
static const CfgSection gma_section = {"gma", sizeof(GmaCfg), gma_keys, (int)(sizeof gma_keys / sizeof gma_keys[0]), NULL, NULL};
static const GmaCfg *gcfg(const Config *c) { return cfg_section_of(c, &gma_section); }

typedef struct GmaPriv {
    int Kc, chunk, shared, Hp;
    int softmax, ema, kmeans;
    real tau, var_floor, eps;
    double mean_scale, ema_decay, var0;
    int div_on, div_mode;
    double div_weight, div_last;
    int orthogonal;
    MixerMonitor mon;
} GmaPriv;

static int gma_validate(const Config *c) {
    const GmaCfg *g = gcfg(c);
    if (g->init == GINIT_ORTHOGONAL && g->routing != ROUTING_SOFTMAX)
        return gma_errorf("key gma.init: \"orthogonal\" needs gma.routing \"softmax\" (it draws the router rows)");
    if (g->memory == MEMORY_EMA && g->ema_decay != 0 && !(g->ema_decay > 0 && g->ema_decay < 1))
        return gma_errorf("key gma.ema_decay: %g is outside (0, 1)", g->ema_decay);
    if (g->div_weight < 0) return gma_errorf("key gma.div_weight: %g is negative", g->div_weight);
    return 0;
}

static Mixer *gma_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    Mixer *m = mixer_new(&mixer_gma, c, pt);
    GmaPriv *g = xcalloc(1, sizeof *g);
    const GmaCfg *gc = gcfg(c);
    g->Kc = gc->n_components;
    g->chunk = linear_core_cfg(c)->chunk;
    g->shared = gc->shared_components;
    g->Hp = g->shared ? 1 : m->H;
    g->tau = (real)gc->temperature;
    g->var_floor = (real)gc->var_floor;
    g->eps = (real)linear_core_cfg(c)->eps;
    g->softmax = gc->routing == ROUTING_SOFTMAX;
    g->ema = gc->memory == MEMORY_EMA;
    g->kmeans = gc->init == GINIT_KMEANS;
    g->orthogonal = gc->init == GINIT_ORTHOGONAL;
    g->ema_decay = gc->ema_decay;
    g->div_weight = gc->div_weight;
    g->div_on = gc->div_weight > 0;
    g->mon = (MixerMonitor){.every = gc->monitor_every,
                            .reinit = gc->on_collapse == COLLAPSE_REINIT,
                            .stop = gc->on_collapse == COLLAPSE_STOP,
                            .entropy_min = gc->entropy_min,
                            .util_min_share = gc->util_min_share,
                            .patience = gc->patience,
                            .norm_growth_max = gc->norm_growth_max};
    g->div_mode = gc->div_mode == DIV_BATCH;
    if (g->softmax)
        g->mean_scale = gc->init_mean_scale > 0 ? gc->init_mean_scale : 1 / sqrt((double)m->d);
    else
        g->mean_scale = gc->init_mean_scale > 0 ? gc->init_mean_scale : pow(2.0 * m->d, -0.25);
    m->priv = g;
    for (int i = P_MU; i <= P_MEM; i++) m->p[i] = -1;
    attn_proj_add(m, c, pt, prefix);
    int s3[3] = {g->Hp, g->Kc, m->d};
    char name[128];
    if (g->softmax) {
        snprintf(name, sizeof name, "%s.gma.router.weight", prefix);
        m->p[P_RW] = pt_add(pt, name, 3, s3, INIT_NORMAL, g->mean_scale, GROUP_MIXTURE);
        snprintf(name, sizeof name, "%s.gma.router.bias", prefix);
        m->p[P_RB] = pt_add2(pt, name, g->Hp, g->Kc, INIT_ZERO, 0, GROUP_MIXTURE);
    } else {
        /* softplus(v) + floor = 1  <=>  v = log(exp(1 - floor) - 1) */
        g->var0 = log(expm1(1.0 - gc->var_floor));
        snprintf(name, sizeof name, "%s.gma.mu", prefix);
        m->p[P_MU] = pt_add(pt, name, 3, s3, INIT_NORMAL, g->mean_scale, GROUP_MIXTURE);
        snprintf(name, sizeof name, "%s.gma.var_raw", prefix);
        m->p[P_VAR] = pt_add(pt, name, 3, s3, INIT_CONST, g->var0, GROUP_MIXTURE);
        snprintf(name, sizeof name, "%s.gma.prior_logits", prefix);
        m->p[P_PRIOR] = pt_add2(pt, name, g->Hp, g->Kc, INIT_ZERO, 0, GROUP_MIXTURE);
    }
    if (g->ema) {
        int sm[3] = {m->H, g->Kc, m->d};
        snprintf(name, sizeof name, "%s.gma.memory", prefix);
        m->p[P_MEM] = pt_add(pt, name, 3, sm, INIT_NORMAL, c->model.init_std, GROUP_BUFFER);
    }
    (void)layer;
    return m;
}

/* gma.init "orthogonal": rows (Kc <= d) or columns (Kc > d) of each head's W orthonormal,
 * by modified Gram-Schmidt on the normal draws already in place. */
static void gma_init(Mixer *m, real *params, Rng *rng) {
    GmaPriv *g = m->priv;
    (void)rng;
    if (!g->softmax || !g->orthogonal) return;
    int Kc = g->Kc, d = m->d;
    for (int h = 0; h < g->Hp; h++) {
        real *W = MP(m, params, P_RW) + (size_t)h * Kc * d;
        int rows = Kc <= d; /* orthonormalise rows (vectors of length d) or columns (length Kc) */
        int nv = rows ? Kc : d, len = rows ? d : Kc;
        size_t sv = rows ? (size_t)d : 1, se = rows ? 1 : (size_t)d; /* stride between vectors, elements */
        for (int i = 0; i < nv; i++) {
            real *vi = W + i * sv;
            for (int j = 0; j < i; j++) {
                real *vj = W + j * sv;
                double dot = 0;
                for (int e = 0; e < len; e++) dot += (double)vi[e * se] * vj[e * se];
                for (int e = 0; e < len; e++) vi[e * se] -= (real)(dot * vj[e * se]);
            }
            double nn = 0;
            for (int e = 0; e < len; e++) nn += (double)vi[e * se] * vi[e * se];
            nn = sqrt(nn);
            for (int e = 0; e < len; e++) vi[e * se] = nn > 0 ? (real)(vi[e * se] / nn) : 0;
        }
    }
}

static size_t n_state(const Mixer *m, int B, int N) {
    const GmaPriv *g = m->priv;
    size_t nc = (size_t)(N + g->chunk - 1) / g->chunk;
    nc = GMA_MAX(nc, 1);
    return (size_t)B * m->H * nc * ((size_t)g->Kc * m->d + g->Kc);
}

static size_t gma_act(const Mixer *m, int B, int N) {
    const GmaPriv *g = m->priv;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * m->H * N * g->Kc;
    return 4 * hs + 2 * gs + (size_t)B * m->H * N + (g->ema ? 0 : n_state(m, B, N));
}

static size_t gma_scratch(const Mixer *m, int B, int N) {
    const GmaPriv *g = m->priv;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * m->H * N * g->Kc;
    return 5 * hs + 2 * gs;
}

/* the Gaussian routing of queries and keys (forward 2, backward 4 products of 2 N Kc d a
 * head; none with softmax routing: those go through the table) and the mixing core
 * (none with the EMA memory: its products go through the table) */
static double gma_fused_flops(const Mixer *m, int B, int N, int causal) {
    const GmaPriv *g = m->priv;
    double BH = (double)B * m->H;
    double route = g->softmax ? 0 : 2 * BH * 6 * 2.0 * N * g->Kc * m->d;
    return route + (g->ema ? 0 : linmix_flops(BH, N, g->Kc, m->d, causal, g->chunk));
}

typedef struct Acts { real *qh, *kh, *vh, *oh, *gq, *gk, *den, *state; } Acts;
static Acts carve(const Mixer *m, int B, int N, const real *act_c) {
    const GmaPriv *g = m->priv;
    real *act = (real *)act_c;
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

/* ---- routing: gamma [B,H,N,Kc] from rows x [B,H,N,d] ---- */
static void route_forward(const Mixer *m, const real *params, real *gamma, const real *x, int B, int N) {
    const GmaPriv *g = m->priv;
    int H = m->H, d = m->d, Kc = g->Kc;
    if (!g->softmax) {
        g_ops->gma_route_forward(gamma, x, MP(m, params, P_MU), MP(m, params, P_VAR), MP(m, params, P_PRIOR), B, H, N,
                                 d, Kc, g->tau, g->var_floor, g->shared);
        return;
    }
    const real *W = MP(m, params, P_RW), *bias = MP(m, params, P_RB);
    size_t sW = g->shared ? 0 : (size_t)Kc * d;
    for (int b = 0; b < B; b++)
        g_ops->matmul_strided(gamma + (size_t)b * H * N * Kc, x + (size_t)b * H * N * d, W, N, Kc, d, 0, 1, 1, 0, H,
                              (size_t)N * d, sW, (size_t)N * Kc);
    for (int bh = 0; bh < B * H; bh++)
        g_ops->bias_forward(gamma + (size_t)bh * N * Kc, bias + (g->shared ? 0 : (size_t)(bh % H) * Kc), N, Kc);
    g_ops->softmax_rows(gamma, B * H * N, Kc, 1 / g->tau, NULL);
}

/* dx += ..., parameter gradients += ...; dgamma is overwritten (softmax routing) */
static void route_backward(const Mixer *m, const real *params, real *grads, real *dx, real *dgamma, const real *gamma,
                           const real *x, int B, int N) {
    const GmaPriv *g = m->priv;
    int H = m->H, d = m->d, Kc = g->Kc;
    if (!g->softmax) {
        g_ops->gma_route_backward(dx, MP(m, grads, P_MU), MP(m, grads, P_VAR), MP(m, grads, P_PRIOR), dgamma, gamma, x,
                                  MP(m, params, P_MU), MP(m, params, P_VAR), MP(m, params, P_PRIOR), B, H, N, d, Kc,
                                  g->tau, g->var_floor, g->shared);
        return;
    }
    const real *W = MP(m, params, P_RW);
    real *dW = MP(m, grads, P_RW), *db = MP(m, grads, P_RB);
    g_ops->softmax_rows_backward(dgamma, gamma, B * H * N, Kc);
    if (g->tau != 1) g_ops->scale(dgamma, 1 / g->tau, (size_t)B * H * N * Kc);
    size_t sW = g->shared ? 0 : (size_t)Kc * d;
    for (int b = 0; b < B; b++) {
        const real *dl = dgamma + (size_t)b * H * N * Kc, *xb = x + (size_t)b * H * N * d;
        g_ops->matmul_strided(dx + (size_t)b * H * N * d, dl, W, N, d, Kc, 0, 0, 1, 1, H, (size_t)N * Kc, sW,
                              (size_t)N * d);
        if (!g->shared)
            g_ops->matmul_strided(dW, dl, xb, Kc, d, N, 1, 0, 1, 1, H, (size_t)N * Kc, (size_t)N * d, (size_t)Kc * d);
        else
            for (int h = 0; h < H; h++)
                g_ops->matmul(dW, dl + (size_t)h * N * Kc, xb + (size_t)h * N * d, Kc, d, N, 1, 0, 1, 1);
    }
    for (int bh = 0; bh < B * H; bh++)
        g_ops->bias_backward(db + (g->shared ? 0 : (size_t)(bh % H) * Kc), dgamma + (size_t)bh * N * Kc, N, Kc);
}

static void gma_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                        real *scratch) {
    GmaPriv *g = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, Kc = g->Kc;
    Acts a = carve(m, B, N, act);
    attn_proj_qkv(m, params, h, a.qh, a.kh, a.vh, scratch, B, N);
    route_forward(m, params, a.gq, a.qh, B, N);
    route_forward(m, params, a.gk, a.kh, B, N);
    mask_rows(a.gk, c->keymask, B, H, N, Kc);
    if (g->ema) {
        const real *M = MP(m, params, P_MEM);
        for (int b = 0; b < B; b++)
            g_ops->matmul_strided(a.oh + (size_t)b * H * N * d, a.gq + (size_t)b * H * N * Kc, M, N, d, Kc, 0, 0, 1, 0,
                                  H, (size_t)N * Kc, (size_t)Kc * d, (size_t)N * d);
    } else {
        g_ops->linmix_forward(a.oh, a.den, a.state, a.gq, a.gk, a.vh, B * H, N, Kc, d, c->causal, g->chunk, g->eps);
    }
    g->div_last = 0;
    if (g->div_on && c->training)
        g->div_last = (g_ops->gma_div_forward(a.gq, c->keymask, B, H, N, Kc, g->div_mode) +
                       g_ops->gma_div_forward(a.gk, c->keymask, B, H, N, Kc, g->div_mode)) /
                      (2.0 * H);
    attn_proj_out(m, params, y, a.oh, scratch, B, N);
}

/* incremental decoding: the routing of one token, then the linear core's state step, or a
 * read of the EMA memory (which keeps no state across tokens) */
static size_t gma_dstate(const Mixer *m, int Nmax) {
    const GmaPriv *g = m->priv;
    return g->ema ? 0 : linmix_decode_state(m->H, g->Kc, m->d);
}
static void gma_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                       real *act, real *scratch) {
    const GmaPriv *g = m->priv;
    int H = m->H, d = m->d, Kc = g->Kc;
    size_t hs = (size_t)m->D, gs = (size_t)H * Kc, ss = gma_dstate(m, Nmax);
    Acts a = carve(m, B, 1, act);
    attn_proj_qkv(m, params, h, a.qh, a.kh, a.vh, scratch, B, 1);
    route_forward(m, params, a.gq, a.qh, B, 1);
    if (g->ema) {
        for (int b = 0; b < B; b++)
            g_ops->matmul_strided(a.oh + b * hs, a.gq + b * gs, MP(m, params, P_MEM), 1, d, Kc, 0, 0, 1, 0, H, (size_t)Kc,
                                  (size_t)Kc * d, (size_t)d);
    } else {
        route_forward(m, params, a.gk, a.kh, B, 1);
        g_ops->linmix_step(a.oh, state, ss, a.gq, a.gk, a.vh, B, H, Kc, d, g->eps);
    }
    attn_proj_out(m, params, y, a.oh, scratch, B, 1);
}

static void gma_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                         real *grads, real *act, real *scratch) {
    const GmaPriv *g = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, Kc = g->Kc;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * H * N * Kc;
    Acts a = carve(m, B, N, act);
    real *t1 = scratch, *t2 = t1 + hs, *dq = t2 + hs, *dk = dq + hs, *dv = dk + hs, *dgq = dv + hs, *dgk = dgq + gs;
    real *doh = t1;
    attn_proj_out_backward(m, params, grads, doh, dy, a.oh, t1, t2, B, N);
    g_ops->zero(dgq, sizeof(real) * 2 * gs);
    g_ops->zero(dv, sizeof(real) * hs);
    if (g->ema) { /* dgamma_q = dO M^T ; nothing reaches K, V or M */
        const real *M = MP(m, params, P_MEM);
        for (int b = 0; b < B; b++)
            g_ops->matmul_strided(dgq + (size_t)b * H * N * Kc, doh + (size_t)b * H * N * d, M, N, Kc, d, 0, 1, 1, 1, H,
                                  (size_t)N * d, (size_t)Kc * d, (size_t)N * Kc);
    } else {
        g_ops->linmix_backward(dgq, dgk, dv, doh, a.oh, a.den, a.state, a.gq, a.gk, a.vh, B * H, N, Kc, d, c->causal,
                               g->chunk);
        mask_rows(dgk, c->keymask, B, H, N, Kc);
    }
    if (g->div_on && c->aux_scale != 0) {
        real s = (real)(g->div_weight * c->aux_scale / (2.0 * H));
        g_ops->gma_div_backward(dgq, a.gq, c->keymask, B, H, N, Kc, g->div_mode, s);
        g_ops->gma_div_backward(dgk, a.gk, c->keymask, B, H, N, Kc, g->div_mode, s);
    }
    g_ops->zero(dq, sizeof(real) * 2 * hs);
    route_backward(m, params, grads, dq, dgq, a.gq, a.qh, B, N);
    route_backward(m, params, grads, dk, dgk, a.gk, a.kh, B, N);
    attn_proj_qkv_backward(m, params, grads, dh, h, dq, dk, dv, t2, B, N);
}

static void gma_destroy(Mixer *m) {
    free(m->priv);
    free(m);
}

/* the diversity loss (docs/model.md §4) of the last training forward and gma.div_weight */
static double gma_aux_loss(const Mixer *m, double *weight) {
    const GmaPriv *g = m->priv;
    *weight = g->div_weight;
    return g->div_last;
}

/* the EMA memory: each rank updates it from its own batch, the ranks average it */
static int gma_rank_averaged(const Mixer *m, int tensor) {
    return ((const GmaPriv *)m->priv)->ema && tensor == m->p[P_MEM];
}

/* ================= routing-health hooks ================= */
static int h_ncomp(const Mixer *m) { return ((const GmaPriv *)m->priv)->Kc; }
static int h_has_memory(const Mixer *m) { return ((const GmaPriv *)m->priv)->ema; }
static int h_wants_kmeans(const Mixer *m) {
    const GmaPriv *g = m->priv;
    return g->kmeans || g->ema;
}
static void h_monitor(const Mixer *m, MixerMonitor *out) { *out = ((const GmaPriv *)m->priv)->mon; }
static const real *h_query_resp(const Mixer *m, const real *act, int B, int N) { return carve(m, B, N, act).gq; }

static long valid_rows(const MixerCtx *c) {
    if (!c->keymask) return (long)c->B * c->N;
    long t = 0;
    for (long i = 0; i < (long)c->B * c->N; i++) t += c->keymask[i] != 0;
    return t;
}

static void h_update_buffers(Mixer *m, const MixerCtx *c, real *params, const real *act) {
    const GmaPriv *g = m->priv;
    if (!g->ema) return;
    int B = c->B, N = c->N, H = m->H, d = m->d, Kc = g->Kc;
    long T = valid_rows(c);
    if (T == 0) return;
    double alpha = g->ema_decay > 0 ? g->ema_decay : 1.0 - 1.0 / ((double)B * N);
    Acts a = carve(m, B, N, act);
    real *M = MP(m, params, P_MEM);
    g_ops->scale(M, (real)alpha, (size_t)H * Kc * d);
    /* padded key rows of gk are zero, so they add nothing */
    for (int b = 0; b < B; b++)
        g_ops->matmul_strided(M, a.gk + (size_t)b * H * N * Kc, a.vh + (size_t)b * H * N * d, Kc, d, N, 1, 0,
                              (real)((1 - alpha) / T), 1, H, (size_t)N * Kc, (size_t)N * d, (size_t)Kc * d);
}

/* the rows of every rank (ctx->gather), or a copy of this process's */
static real *all_rows(const MixerCtx *c, const real *x, int n, int d, int *n_all) {
    if (c->gather) return c->gather(x, n, d, n_all, c->gather_ctx);
    real *y = xmalloc(sizeof(real) * (size_t)n * d + 1);
    memcpy(y, x, sizeof(real) * (size_t)n * d);
    *n_all = n;
    return y;
}

/* host copy of the non-padded query rows of head h (all heads when h < 0): X [n,d] */
static real *gather_rows(const Mixer *m, const MixerCtx *c, const real *qhost, int h, int *n_out) {
    int B = c->B, N = c->N, H = m->H, d = m->d;
    real *X = NULL, *mine = xmalloc(sizeof(real) * (size_t)B * N * d + 1);
    int n = 0;
    for (int hh = 0; hh < H; hh++) {
        if (h >= 0 && hh != h) continue;
        int k = 0, got;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < N; i++) {
                if (c->keymask && !c->keymask[(size_t)b * N + i]) continue;
                memcpy(mine + (size_t)k * d, qhost + (((size_t)b * H + hh) * N + i) * d, sizeof(real) * d);
                k++;
            }
        /* data-parallel: every rank's rows of this head, in rank order (the order of the
         * global batch), so all ranks fit what one process with the whole batch fits */
        real *all = all_rows(c, mine, k, d, &got);
        X = xrealloc(X, sizeof(real) * ((size_t)n + got) * d + 1);
        memcpy(X + (size_t)n * d, all, sizeof(real) * (size_t)got * d);
        n += got;
        free(all);
    }
    free(mine);
    *n_out = n;
    return X;
}

/* subsample to at most KMEANS_SAMPLE rows (partial Fisher-Yates, in place) */
static int subsample(real *X, int n, int d, Rng *rng) {
    if (n <= KMEANS_SAMPLE) return n;
    real *tmp = xmalloc(sizeof(real) * d);
    for (int i = 0; i < KMEANS_SAMPLE; i++) {
        int j = i + (int)rng_below(rng, (uint64_t)(n - i));
        memcpy(tmp, X + (size_t)i * d, sizeof(real) * d);
        memcpy(X + (size_t)i * d, X + (size_t)j * d, sizeof(real) * d);
        memcpy(X + (size_t)j * d, tmp, sizeof(real) * d);
    }
    free(tmp);
    return KMEANS_SAMPLE;
}

/* write host rows into a slice of a backend tensor */
static void put(real *dst_backend, const real *host, size_t n) { g_ops->to_device(dst_backend, host, sizeof(real) * n); }

static void set_routing_from_centres(const Mixer *m, real *params, int hp, const real *C) {
    const GmaPriv *g = m->priv;
    int Kc = g->Kc, d = m->d;
    if (!g->softmax) {
        put(MP(m, params, P_MU) + (size_t)hp * Kc * d, C, (size_t)Kc * d);
        return;
    }
    real *b = xmalloc(sizeof(real) * Kc);
    for (int k = 0; k < Kc; k++) {
        double s = 0;
        for (int e = 0; e < d; e++) s += (double)C[(size_t)k * d + e] * C[(size_t)k * d + e];
        b[k] = (real)(-0.5 * s);
    }
    put(MP(m, params, P_RW) + (size_t)hp * Kc * d, C, (size_t)Kc * d);
    put(MP(m, params, P_RB) + (size_t)hp * Kc, b, Kc);
    free(b);
}

static int h_kmeans_init(Mixer *m, const MixerCtx *c, real *params, const real *act, Rng *rng) {
    const GmaPriv *g = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, Kc = g->Kc;
    Acts a = carve(m, B, N, act);
    size_t hs = (size_t)B * N * m->D;
    real *q = xmalloc(sizeof(real) * hs);
    g_ops->to_host(q, a.qh, sizeof(real) * hs);
    real *C = xmalloc(sizeof(real) * (size_t)Kc * d);
    for (int h = -1; h < H; h++) {
        if (h < 0 && !(g->shared && g->kmeans)) continue; /* pooled run only for shared components */
        int n;
        real *X = gather_rows(m, c, q, h, &n);
        n = subsample(X, n, d, rng);
        if (n > 0) {
            kmeans_fit(X, n, d, Kc, KMEANS_ITERS, C, rng);
            if (g->kmeans && h >= 0 && !g->shared) set_routing_from_centres(m, params, h, C);
            if (g->kmeans && h < 0) set_routing_from_centres(m, params, 0, C);
            if (g->ema && h >= 0) put(MP(m, params, P_MEM) + (size_t)h * Kc * d, C, (size_t)Kc * d);
        }
        free(X);
    }
    free(C);
    free(q);
    return 0;
}

static double h_route_stats(const Mixer *m, const MixerCtx *c, const real *params, const real *act, double *entropy,
                            double *counts, double *mem_norm) {
    const GmaPriv *g = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, Kc = g->Kc;
    Acts a = carve(m, B, N, act);
    size_t gs = (size_t)B * H * N * Kc;
    real *gq = xmalloc(sizeof(real) * gs);
    g_ops->to_host(gq, a.gq, sizeof(real) * gs);
    double rows = 0;
    for (int h = 0; h < H; h++) {
        double ent = 0;
        double *cnt = counts + (size_t)h * Kc;
        memset(cnt, 0, sizeof(double) * Kc);
        rows = 0;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < N; i++) {
                if (c->keymask && !c->keymask[(size_t)b * N + i]) continue;
                const real *r = gq + (((size_t)b * H + h) * N + i) * Kc;
                int best = 0;
                for (int k = 0; k < Kc; k++) {
                    if (r[k] > 0) ent -= r[k] * log((double)r[k]);
                    if (r[k] > r[best]) best = k;
                }
                cnt[best] += 1;
                rows += 1;
            }
        entropy[h] = rows > 0 ? ent / rows : 0;
    }
    free(gq);
    if (g->ema && mem_norm)
        for (int h = 0; h < H; h++)
            mem_norm[h] = sqrt(g_ops->sumsq(MP(m, params, P_MEM) + (size_t)h * Kc * d, (size_t)Kc * d));
    return rows;
}

static void zero_slice(real *base_backend, size_t off, size_t n) {
    if (base_backend) g_ops->zero(base_backend + off, sizeof(real) * n);
}

static int h_reinit(Mixer *m, const MixerCtx *c, real *params, real *mom1, real *mom2, const real *act, int head,
                    const int *dead, Rng *rng) {
    const GmaPriv *g = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, Kc = g->Kc, hp = g->shared ? 0 : head;
    Acts a = carve(m, B, N, act);
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * H * N * Kc;
    real *q = xmalloc(sizeof(real) * hs), *gq = xmalloc(sizeof(real) * gs);
    g_ops->to_host(q, a.qh, sizeof(real) * hs);
    g_ops->to_host(gq, a.gq, sizeof(real) * gs);
    /* rows of this head, their argmax, and the centroids of the live components' rows */
    int n = 0, n_arg = 0;
    real *X = gather_rows(m, c, q, head, &n);
    int *arg = xmalloc(sizeof(int) * (n ? n : 1));
    {
        /* this rank's argmax per row, then every rank's in the order of X's rows (a rank's
         * own count alone would leave the other ranks' entries unset) */
        real *mine = xmalloc(sizeof(real) * (size_t)B * N + 1);
        int t = 0;
        for (int b = 0; b < B; b++)
            for (int i = 0; i < N; i++) {
                if (c->keymask && !c->keymask[(size_t)b * N + i]) continue;
                const real *r = gq + (((size_t)b * H + head) * N + i) * Kc;
                int best = 0;
                for (int k = 1; k < Kc; k++)
                    if (r[k] > r[best]) best = k;
                mine[t++] = (real)best;
            }
        real *all = all_rows(c, mine, t, 1, &n_arg);
        if (n_arg != n) {
            fprintf(stderr, "gma: reinit: %d gathered argmax rows for %d query rows\n", n_arg, n);
            abort();
        }
        for (int r = 0; r < n; r++) arg[r] = (int)all[r];
        free(all);
        free(mine);
    }
    real *C = xcalloc((size_t)(Kc + 1) * d, sizeof(real));
    double *cnt = xcalloc(Kc, sizeof(double));
    int nc = 0;
    for (int k = 0; k < Kc; k++) {
        if (dead[k]) continue;
        double num = 0;
        real *ck = C + (size_t)nc * d;
        for (int t = 0; t < n; t++)
            if (arg[t] == k) {
                num++;
                for (int e = 0; e < d; e++) ck[e] += X[(size_t)t * d + e];
            }
        if (num > 0) {
            for (int e = 0; e < d; e++) ck[e] = (real)(ck[e] / num);
            nc++;
        } else
            memset(ck, 0, sizeof(real) * d);
    }
    /* current routing parameters of this head (host) for the live statistics */
    size_t P3 = (size_t)Kc * d;
    real *w = xmalloc(sizeof(real) * P3), *bias = xmalloc(sizeof(real) * Kc);
    int p3 = g->softmax ? P_RW : P_MU, p1 = g->softmax ? P_RB : P_PRIOR;
    g_ops->to_host(w, MP(m, params, p3) + (size_t)hp * P3, sizeof(real) * P3);
    g_ops->to_host(bias, MP(m, params, p1) + (size_t)hp * Kc, sizeof(real) * Kc);
    double live_b = 0, live_norm = 0, nlive = 0;
    for (int k = 0; k < Kc; k++)
        if (!dead[k]) {
            double s = 0;
            for (int e = 0; e < d; e++) s += (double)w[(size_t)k * d + e] * w[(size_t)k * d + e];
            live_norm += sqrt(s);
            live_b = nlive == 0 ? bias[k] : fmax(live_b, bias[k]);
            nlive++;
        }
    if (nlive > 0) live_norm /= nlive;
    int done = 0;
    for (int k = 0; k < Kc && n > 0; k++) {
        if (!dead[k]) continue;
        int t = kmeans_pp_pick(X, n, d, C, nc, rng);
        const real *x = X + (size_t)t * d;
        memcpy(C + (size_t)nc * d, x, sizeof(real) * d); /* later picks keep away from it */
        if (nc < Kc) nc++;
        real *wk = w + (size_t)k * d;
        if (!g->softmax) { /* mu_k = x, sigma2_k = 1, prior_k = the largest live prior logit */
            memcpy(wk, x, sizeof(real) * d);
            real v0 = (real)g->var0;
            real *vr = xmalloc(sizeof(real) * d);
            for (int e = 0; e < d; e++) vr[e] = v0;
            put(MP(m, params, P_VAR) + (size_t)hp * P3 + (size_t)k * d, vr, d);
            free(vr);
        } else { /* W_k along x with the live rows' mean norm, b_k = the largest live bias */
            double s = 0;
            for (int e = 0; e < d; e++) s += (double)x[e] * x[e];
            double sc = s > 0 && live_norm > 0 ? live_norm / sqrt(s) : 1;
            for (int e = 0; e < d; e++) wk[e] = (real)(x[e] * sc);
        }
        bias[k] = nlive > 0 ? (real)live_b : 0;
        size_t o3 = m->pt->t[m->p[p3]].offset + (size_t)hp * P3 + (size_t)k * d;
        size_t o1 = m->pt->t[m->p[p1]].offset + (size_t)hp * Kc + k;
        zero_slice(mom1, o3, d), zero_slice(mom2, o3, d), zero_slice(mom1, o1, 1), zero_slice(mom2, o1, 1);
        if (!g->softmax) {
            size_t ov = m->pt->t[m->p[P_VAR]].offset + (size_t)hp * P3 + (size_t)k * d;
            zero_slice(mom1, ov, d), zero_slice(mom2, ov, d);
        }
        done++;
    }
    put(MP(m, params, p3) + (size_t)hp * P3, w, P3);
    put(MP(m, params, p1) + (size_t)hp * Kc, bias, Kc);
    free(w);
    free(bias);
    free(C);
    free(cnt);
    free(arg);
    free(X);
    free(q);
    free(gq);
    return done;
}

static const MixerHealth gma_health = {
    .n_components = h_ncomp,
    .has_memory = h_has_memory,
    .wants_kmeans = h_wants_kmeans,
    .monitor = h_monitor,
    .query_resp = h_query_resp,
    .update_buffers = h_update_buffers,
    .kmeans_init = h_kmeans_init,
    .route_stats = h_route_stats,
    .reinit = h_reinit,
};

const MixerVT mixer_gma = {
    .name = "gma",
    .causal_ok = 1,
    .bidir_ok = 1,
    .attn_dropout_why = "mixes through Gaussian routing and a normalised linear core: it has no attention probabilities to drop",
    .config = &gma_section,
    .validate = gma_validate,
    .create = gma_create,
    .init = gma_init,
    .act_size = gma_act,
    .scratch_size = gma_scratch,
    .forward = gma_forward,
    .backward = gma_backward,
    .decode_state = gma_dstate,
    .decode = gma_decode,
    .destroy = gma_destroy,
    .aux_loss = gma_aux_loss,
    .rank_averaged = gma_rank_averaged,
    .health = &gma_health,
    .fused_flops = gma_fused_flops,
};
