/* gma.c: Gaussian Mixture Attention (`mixer: "gma"`). The math, defaults and tensor names are
 * docs/model.md's: the linear mixing core §3.1, routing §3.2 (gaussian) and §3.3 (softmax),
 * the EMA memory §3.4 (a buffer, updated by update_buffers), the delta write §3.10 (the gdn
 * mixer's delta ops), the window §3.11 (gma_window.h), top-k §3.12, the diversity loss §4
 * (reported through aux_loss, its gradient added before the routing backward),
 * initialisation §5, the tensors §7. Contract:
 *   y = linmix(route(Q), route(K), V) Wo^T + bo (gma.memory "none"; padded keys: zero rows),
 *   or the EMA memory's read, or the delta-rule slot memory's read (gma.write "delta");
 *   with gma.window W > 0 the heads' outputs are mixed per head with a sliding-window
 *   softmax attention over the same q, k, v before Wo.
 * act / scratch: gma_act, gma_scratch; the add write's backward recomputes a group of
 * (batch, head) rows at a time (group_heads), so a layer keeps O(N d), never O(N Kc). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "nn/linear.h"
#include "nn/mixers/cross.h"
#include "nn/mixers/gma_core.h"
#include "nn/mixers/gma_window.h"
#include "nn/mixers/linear_core.h"
#include "nn/mixers/mixer.h"

const MixerVT mixer_gma;
enum { P_MU = AP_N, P_VAR, P_PRIOR, P_RW, P_RB, P_MEM, P_BW, P_BB, P_SD };

/* the keys gma.* */
/* the values of gma's choice keys, in the order of their rows' choices */
enum { ROUTING_GAUSSIAN, ROUTING_SOFTMAX };
enum { GINIT_DEFAULT, GINIT_KMEANS, GINIT_ORTHOGONAL };
enum { MEMORY_NONE, MEMORY_EMA };
enum { WRITE_ADD, WRITE_DELTA };
enum { DIV_TOKEN, DIV_BATCH };
enum { COLLAPSE_WARN, COLLAPSE_REINIT, COLLAPSE_STOP };
enum { RESEED_QUERIES, RESEED_KEYS };

typedef struct GmaCfg {
    CfgInts n_components;   /* Kc: one for every GMA layer, or one per GMA layer (gma_layer_kc) */
    int routing;            /* ROUTING_GAUSSIAN | ROUTING_SOFTMAX */
    double temperature;
    double var_floor;
    int shared_components;
    int init;               /* GINIT_DEFAULT | GINIT_KMEANS | GINIT_ORTHOGONAL */
    double init_mean_scale;
    int memory;             /* MEMORY_NONE | MEMORY_EMA */
    int write;              /* WRITE_ADD | WRITE_DELTA (docs/model.md §3.10) */
    int slot_decay;         /* a learned decay of each slot (gma.write "delta") */
    int topk;               /* sparse routing: keep the k largest responsibilities (0 = dense; docs/model.md §3.12) */
    double topk_noise;      /* the scale of its Gumbel noise in training (0 = none) */
    double ema_decay;       /* 0 = 1 - 1/(B N) */
    double div_weight;
    int div_mode;           /* DIV_TOKEN | DIV_BATCH */
    int monitor_every;
    int diag_every;         /* the recall diagnosis period (train/routing_diag.h), 0 = off */
    int on_collapse;        /* COLLAPSE_WARN | COLLAPSE_REINIT | COLLAPSE_STOP */
    int reseed_rows;        /* RESEED_QUERIES | RESEED_KEYS: the rows a re-seed draws from */
    double entropy_min;
    double util_min_share;
    int patience;
    double norm_growth_max;
    double dirichlet_alpha; /* concentration of the Dirichlet prior on pi (docs/model.md §4.1) */
    double dirichlet_weight;/* its weight in the objective (0 = off) */
    int dirichlet_every;    /* drop check period in steps */
    double dirichlet_drop;  /* drop a component whose pi is below this */
    int adapt_every;        /* structural adaptation of K (docs/model.md §4.2): period in steps, 0 = off */
    int k_min, k_max;
    double merge_dist, prune_below, split_above, split_shift;
} GmaCfg;

#define O(f) offsetof(GmaCfg, f)
static const CfgKey gma_keys[] = {
    {"n_components", CFGT_INTS, O(n_components), 0, "64", 1, 65536, NULL,
     "Components per head Kc: one number, or one per layer holding a GMA path (docs/model.md §3.6)."},
    {"routing", CFGT_ENUM, O(routing), 0, "gaussian", 0, 0, "gaussian|softmax", "Routing of queries and keys."},
    {"temperature", CFGT_REAL, O(temperature), 0, "1", 1e-6, 1e6, NULL, "Responsibility temperature tau (fixed)."},
    {"var_floor", CFGT_REAL, O(var_floor), 0, "0.0001", 0, 1e6, NULL, "Added to softplus(var_raw)."},
    {"shared_components", CFGT_BOOL, O(shared_components), 0, "false", 0, 0, NULL, "One set of components for all heads."},
    {"init", CFGT_ENUM, O(init), 0, "default", 0, 0, "default|kmeans|orthogonal", "Initialisation of the components."},
    {"init_mean_scale", CFGT_REAL, O(init_mean_scale), 0, "0", 0, 1e6, NULL,
     "Std of the initial means (0 = (2 d)^(-1/4): soft initial responsibilities, see README)."},
    {"memory", CFGT_ENUM, O(memory), 0, "none", 0, 0, "none|ema", "Value memory: from the sequence, or an EMA buffer."},
    {"write", CFGT_ENUM, O(write), 0, "add", 0, 0, "add|delta",
     "How keys write the slots: add = the normalised linear core; delta = a gated delta-rule write, causal only "
     "(docs/model.md §3.10)."},
    {"slot_decay", CFGT_BOOL, O(slot_decay), 0, "false", 0, 0, NULL,
     "With gma.write delta: a learned forgetting rate per slot and head (docs/model.md §3.10)."},
    {"topk", CFGT_INT, O(topk), 0, "0", 0, 65536, NULL,
     "Sparse routing: keep each row's k largest responsibilities, Gumbel noise in training (0 = dense; below Kc; "
     "docs/model.md §3.12)."},
    {"topk_noise", CFGT_REAL, O(topk_noise), 0, "1", 0, 100, NULL,
     "With gma.topk: scale of the Gumbel noise on the routing logits in training (0 = none; docs/model.md §3.12)."},
    {"ema_decay", CFGT_REAL, O(ema_decay), 0, "0", 0, 0.999999999, NULL, "EMA decay alpha in (0,1) (0 = 1 - 1/(B N))."},
    {"div_weight", CFGT_REAL, O(div_weight), 0, "0", 0, 1e6, NULL, "Weight of the diversity loss (0 = off)."},
    {"div_mode", CFGT_ENUM, O(div_mode), 0, "token", 0, 0, "token|batch", "Diversity loss form."},
    {"monitor_every", CFGT_INT, O(monitor_every), 0, "100", 0, 1000000000, NULL, "Routing health check period in steps (0 = off)."},
    {"diag_every", CFGT_INT, O(diag_every), 0, "0", 0, 1000000000, NULL,
     "Steps between recall diagnoses, \"routing_diag\" rows in metrics.jsonl (0 = off; docs/routing.md)."},
    {"on_collapse", CFGT_ENUM, O(on_collapse), 0, "warn", 0, 0, "warn|reinit|stop", "Action on a collapse alert."},
    {"reseed_rows", CFGT_ENUM, O(reseed_rows), 0, "queries", 0, 0, "queries|keys",
     "With gma.on_collapse reinit: re-seed dead components from the batch's query or key rows (docs/routing.md)."},
    {"entropy_min", CFGT_REAL, O(entropy_min), 0, "1.5", 0, 1e6, NULL, "Alert when mean responsibility entropy (nats) is below."},
    {"util_min_share", CFGT_REAL, O(util_min_share), 0, "0.02", 0, 1, NULL, "A component is dead below this share of 1/Kc."},
    {"patience", CFGT_INT, O(patience), 0, "3", 1, 1000000, NULL, "Checks a component must stay dead before an alert."},
    {"norm_growth_max", CFGT_REAL, O(norm_growth_max), 0, "10", 1, 1e9, NULL, "EMA memory norm alert factor over its start."},
    {"dirichlet_alpha", CFGT_REAL, O(dirichlet_alpha), 0, "0.5", 1e-6, 1, NULL,
     "Concentration alpha of the Dirichlet prior on the mixture weights (< 1: sparse; docs/model.md §4.1)."},
    {"dirichlet_weight", CFGT_REAL, O(dirichlet_weight), 0, "0", 0, 1e6, NULL,
     "Weight of the Dirichlet prior's term -(alpha - 1)/Hp sum log pi_k (0 = off; Gaussian routing)."},
    {"dirichlet_every", CFGT_INT, O(dirichlet_every), 0, "100", 1, 1000000000, NULL,
     "With the Dirichlet prior: steps between checks that drop components."},
    {"dirichlet_drop", CFGT_REAL, O(dirichlet_drop), 0, "0.001", 0, 1, NULL,
     "With the Dirichlet prior: drop a component whose mixture weight is below this."},
    {"adapt_every", CFGT_INT, O(adapt_every), 0, "0", 0, 1000000000, NULL,
     "Steps between structural adaptations of K: merge, prune, split (0 = off; Gaussian routing; docs/model.md "
     "§4.2)."},
    {"k_min", CFGT_INT, O(k_min), 0, "1", 1, 65536, NULL, "With gma.adapt_every: the fewest components per head a layer keeps."},
    {"k_max", CFGT_INT, O(k_max), 0, "65536", 1, 65536, NULL, "With gma.adapt_every: the most components per head a layer grows to."},
    {"merge_dist", CFGT_REAL, O(merge_dist), 0, "0.001", 0, 1e6, NULL,
     "With gma.adapt_every: merge two components closer than this (0 = never; docs/model.md §4.2)."},
    {"prune_below", CFGT_REAL, O(prune_below), 0, "0.02", 0, 1, NULL,
     "With gma.adapt_every: prune a component whose load is below this times 1/K (0 = never; docs/model.md §4.2)."},
    {"split_above", CFGT_REAL, O(split_above), 0, "0", 0, 1e6, NULL,
     "With gma.adapt_every: split a component whose load is above this times 1/K (0 = never)."},
    {"split_shift", CFGT_REAL, O(split_shift), 0, "0.5", 0, 100, NULL,
     "With gma.adapt_every: a split's copies sit this many standard deviations either side of the mean."},
};
#undef O
static int window_validate(const Config *c);
static const CfgSection gma_section = {"gma", sizeof(GmaCfg), gma_keys, (int)(sizeof gma_keys / sizeof gma_keys[0]),
                                       window_validate, NULL};
static const GmaCfg *gcfg(const Config *c) { return cfg_section_of(c, &gma_section); }

#define SLOT_DECAY_INIT 5.0 /* theta_c at the start (gma.slot_decay): a = sigmoid(5) = 0.9933, a half-life of ~100 steps */

typedef struct GmaPriv {
    int Kc, chunk, shared, Hp;
    int softmax, ema, kmeans;
    int delta;                /* gma.write "delta": the delta-rule write (docs/model.md §3.10) */
    int slot_decay;           /* gma.slot_decay: the slots' decay logits theta [H,Kc] */
    int topk;                 /* gma.topk: k (0 = dense) */
    double topk_noise;        /* gma.topk_noise: s */
    real tau, var_floor, eps;
    double mean_scale, ema_decay, var0;
    int div_on, div_mode;
    double div_weight, div_last;
    int orthogonal;
    double dir_alpha, dir_weight; /* the Dirichlet prior (dir_weight 0: off) */
    int gh;                   /* heads a backward group recomputes at once */
    const real *params_last;  /* of the last forward, for query_resp */
    real *gq_buf;             /* query_resp's recomputed responsibilities (backend memory) */
    size_t gq_cap;
    real *gk_buf;             /* key_resp's, the same way */
    size_t gk_cap;
    MixerMonitor mon;
    GmaWindow *win;           /* gma.window: the exact local window (gma_window.h); NULL without */
} GmaPriv;

static int gma_layers(const Config *c);
static int topk_validate(const Config *c, const GmaCfg *g);
/* gma.window (gma_window.h) is built on the add write's GMA path of mixer "gma" (inert, as
 * gma's other keys, in a model without a GMA layer); checked for every model, as a section's
 * check, so a model of gated or auto layers alone is refused too */
static int window_validate(const Config *c) {
    if (gma_window_of(c) == 0) return 0;
    int gma = 0;
    for (int l = 0; l < c->model.n_layers; l++) {
        const MixerVT *vt = mixer_of_layer(c, l);
        if (vt && vt->gma_layer && vt != &mixer_gma)
            return gma_errorf("key gma.window: the window is built for mixer \"gma\"; layer %d's mixer \"%s\" holds a "
                              "GMA path without it (set 0)", l, vt->name);
        gma += vt == &mixer_gma;
    }
    if (!gma) return 0;
    if (gcfg(c)->write == WRITE_DELTA)
        return gma_errorf("key gma.window: built for gma.write \"add\" (the delta write keeps its own state)");
    if (gcfg(c)->memory == MEMORY_EMA)
        return gma_errorf("key gma.window: built for gma.memory \"none\" (gma.memory \"ema\" reads a buffer, not the "
                          "sequence's values)");
    return 0;
}
static int gma_validate(const Config *c) {
    const GmaCfg *g = gcfg(c);
    if (g->init == GINIT_ORTHOGONAL && g->routing != ROUTING_SOFTMAX)
        return gma_errorf("key gma.init: \"orthogonal\" needs gma.routing \"softmax\" (it draws the router rows)");
    if (g->memory == MEMORY_EMA && g->ema_decay != 0 && !(g->ema_decay > 0 && g->ema_decay < 1))
        return gma_errorf("key gma.ema_decay: %g is outside (0, 1)", g->ema_decay);
    if (g->div_weight < 0) return gma_errorf("key gma.div_weight: %g is negative", g->div_weight);
    int n = gma_layers(c);
    if (g->n_components.n > 1 && g->n_components.n != n)
        return gma_errorf("key gma.n_components: a list of %d entries, but the model has %d GMA layer%s (layers whose "
                          "model.mixer is gma, auto or gated): give one number or one entry per GMA layer",
                          g->n_components.n, n, n == 1 ? "" : "s");
    if (g->dirichlet_weight > 0 && g->routing != ROUTING_GAUSSIAN)
        return gma_errorf("key gma.dirichlet_weight: the Dirichlet prior acts on the prior logits of gma.routing "
                          "\"gaussian\" (softmax routing has none)");
    if (g->adapt_every > 0 && g->routing != ROUTING_GAUSSIAN)
        return gma_errorf("key gma.adapt_every: the structural adaptation of K merges and splits Gaussian components "
                          "(gma.routing \"gaussian\")");
    if (g->adapt_every > 0 && g->on_collapse == COLLAPSE_REINIT)
        return gma_errorf("key gma.adapt_every: with gma.on_collapse \"reinit\" the monitor would re-seed the components "
                          "the adaptation prunes; use \"warn\" or \"stop\"");
    if (g->adapt_every > 0 && g->k_min > g->k_max)
        return gma_errorf("key gma.k_min: %d is above gma.k_max %d", g->k_min, g->k_max);
    if (g->adapt_every > 0 && g->split_above > 0 && g->merge_dist > 0 && g->merge_dist >= g->split_shift * g->split_shift / 2)
        return gma_errorf("key gma.merge_dist: %g would merge a fresh split straight back (its copies lie gma.split_shift^2 / 2 "
                          "= %g apart on the split axis; docs/model.md 4.2): below it, or 0", g->merge_dist,
                          g->split_shift * g->split_shift / 2);
    if (g->slot_decay && g->write != WRITE_DELTA)
        return gma_errorf("key gma.slot_decay: built for gma.write \"delta\" only (the add write's chunked core has no "
                          "per-slot decay)");
    if (g->write == WRITE_DELTA) {
        if (g->memory == MEMORY_EMA)
            return gma_errorf("key gma.write: \"delta\" writes the sequence's own values; gma.memory \"ema\" reads a "
                              "buffer instead (use gma.memory \"none\")");
        if (!cfg_causal(c))
            return gma_errorf("key gma.write: \"delta\" is a causal recurrence; the model is bidirectional (model.causal)");
        if (g->adapt_every > 0)
            return gma_errorf("key gma.adapt_every: the structural adaptation of K is not built for gma.write \"delta\"");
        for (int l = 0; l < c->model.n_layers; l++) {
            const MixerVT *vt = mixer_of_layer(c, l);
            if (vt && vt->gma_layer && vt != &mixer_gma)
                return gma_errorf("key gma.write: \"delta\" is built for mixer \"gma\"; layer %d's mixer \"%s\" "
                                  "embeds the add write", l, vt->name);
        }
        const CrossCfg *x = cross_cfg(c);
        if (x->mixer == CROSS_GMA || (x->mixer != CROSS_NONE && x->enc_mixer == CROSS_GMA))
            return gma_errorf("key gma.write: \"delta\" is built for mixer \"gma\"; the GMA cross-attention layers "
                              "(cross.mixer, cross.enc_mixer) keep the add write");
        int d = cfg_qkv_dim(c) / c->model.n_heads;
        for (int l = 0; l < c->model.n_layers && c->device == OPS_CUDA; l++) {
            int kc = gma_layer_kc(c, l);
            if (kc > 1024 || d > 1024)
                return gma_errorf("key gma.n_components: gma.write \"delta\" on device cuda holds a head's Kc %d "
                                  "responsibilities and d %d values in shared memory: at most 1024 each", kc, d);
        }
    }
    if (g->topk > 0 && topk_validate(c, g) != 0) return -1;
    if (g->dirichlet_weight > 0 && g->on_collapse == COLLAPSE_REINIT)
        return gma_errorf("key gma.dirichlet_weight: with gma.on_collapse \"reinit\" the monitor would re-seed the "
                          "components the prior drops; use \"warn\" or \"stop\"");
    return 0;
}

/* the layers whose mixer holds a GMA path */
static int gma_layers(const Config *c) {
    int n = 0;
    for (int l = 0; l < c->model.n_layers; l++) {
        const MixerVT *vt = mixer_of_layer(c, l);
        n += vt && vt->gma_layer;
    }
    return n;
}

int gma_layer_kc(const Config *c, int layer) {
    const CfgInts *k = &gcfg(c)->n_components;
    if (k->n == 1) return k->v[0];
    int i = 0;
    for (int l = 0; l < layer && l < c->model.n_layers; l++) {
        const MixerVT *vt = mixer_of_layer(c, l);
        i += vt && vt->gma_layer;
    }
    return k->v[GMA_MIN(i, k->n - 1)];
}

int gma_adapt_on(const Config *c) { return gcfg(c)->adapt_every > 0; }

int gma_set_kc_list(Config *c, const char *list) {
    char set[CFG_MAX_LAYERS * 8 + 32];
    snprintf(set, sizeof set, "gma.n_components=%s", list);
    return cfg_set(c, set);
}

static Mixer *gma_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    if (gcfg(c)->write == WRITE_DELTA &&
        (NEED_OP("gma", delta_forward) || NEED_OP("gma", delta_backward) || NEED_OP("gma", delta_step)))
        return NULL;
    if (gcfg(c)->write == WRITE_DELTA && !cfg_causal(c)) /* also for callers that build without cfg_validate */
        return gma_errorf("key gma.write: \"delta\" (layer %d) is a causal recurrence", layer), NULL;
    if (gma_window_need_ops(c) != 0) return NULL;
    Mixer *m = mixer_new(&mixer_gma, c, pt);
    GmaPriv *g = xcalloc(1, sizeof *g);
    const GmaCfg *gc = gcfg(c);
    g->Kc = gma_layer_kc(c, layer);
    g->chunk = linear_core_cfg(c)->chunk;
    g->shared = gc->shared_components;
    g->Hp = g->shared ? 1 : m->H;
    g->tau = (real)gc->temperature;
    g->var_floor = (real)gc->var_floor;
    g->eps = (real)linear_core_cfg(c)->eps;
    g->softmax = gc->routing == ROUTING_SOFTMAX;
    g->ema = gc->memory == MEMORY_EMA;
    g->delta = gc->write == WRITE_DELTA;
    g->slot_decay = g->delta && gc->slot_decay;
    g->topk = gc->topk;
    g->topk_noise = gc->topk_noise;
    g->kmeans = gc->init == GINIT_KMEANS;
    g->orthogonal = gc->init == GINIT_ORTHOGONAL;
    g->ema_decay = gc->ema_decay;
    g->div_weight = gc->div_weight;
    g->div_on = gc->div_weight > 0;
    g->dir_alpha = gc->dirichlet_alpha;
    g->dir_weight = gc->dirichlet_weight;
    g->mon = (MixerMonitor){.every = gc->monitor_every,
                            .reinit = gc->on_collapse == COLLAPSE_REINIT,
                            .stop = gc->on_collapse == COLLAPSE_STOP,
                            .reseed_keys = gc->reseed_rows == RESEED_KEYS,
                            .entropy_min = gc->entropy_min,
                            .util_min_share = gc->util_min_share,
                            .patience = gc->patience,
                            .norm_growth_max = gc->norm_growth_max,
                            .drop_every = gc->dirichlet_weight > 0 ? gc->dirichlet_every : 0,
                            .drop_below = gc->dirichlet_drop,
                            .adapt_every = gc->adapt_every,
                            .k_min = gc->k_min,
                            .k_max = gc->k_max,
                            .merge_dist = gc->merge_dist,
                            .prune_below = gc->prune_below,
                            .split_above = gc->split_above,
                            .split_shift = gc->split_shift,
                            .diag_every = gc->diag_every};
    g->div_mode = gc->div_mode == DIV_BATCH;
    if (g->softmax)
        g->mean_scale = gc->init_mean_scale > 0 ? gc->init_mean_scale : 1 / sqrt((double)m->d);
    else
        g->mean_scale = gc->init_mean_scale > 0 ? gc->init_mean_scale : pow(2.0 * m->d, -0.25);
    g->gh = GMA_MAX(1, GMA_MIN(m->H, m->D / (2 * g->Kc)));
    m->priv = g;
    for (int i = P_MU; i <= P_SD; i++) m->p[i] = -1;
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
    if (g->delta) { /* the write gate b = sigmoid(h Wb^T + bb), one a head */
        snprintf(name, sizeof name, "%s.gma.b_proj.weight", prefix);
        m->p[P_BW] = pt_add2(pt, name, m->H, m->Dm, INIT_NORMAL, c->model.init_std, GROUP_WEIGHT);
        snprintf(name, sizeof name, "%s.gma.b_proj.bias", prefix);
        m->p[P_BB] = pt_add1(pt, name, m->H, INIT_ZERO, 0, GROUP_BIAS);
    }
    if (g->slot_decay) { /* a_c = sigmoid(theta_c) */
        snprintf(name, sizeof name, "%s.gma.slot_decay", prefix);
        m->p[P_SD] = pt_add2(pt, name, m->H, g->Kc, INIT_CONST, SLOT_DECAY_INIT, GROUP_MIXTURE);
    }
    g->win = gma_window_create(m, c, pt, prefix);
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

/* gma.write "delta": the delta rule's checkpoints of S [Kc,d] a (batch, head), before every
 * chunk of the scan and after the last (delta_forward's Sck) */
static size_t n_ck(const Mixer *m, int N) {
    int C = ((const GmaPriv *)m->priv)->chunk;
    return (size_t)(N + C - 1) / C + 1;
}

/* the forward saves qh, kh, vh, oh [B,H,N,d] and den [B,H,N]; with the EMA memory also gq, gk
 * [B,H,N,Kc]; with the delta write gq, gk, the gate's input and the op's checkpoints of S
 * instead of den */
static size_t gma_act(const Mixer *m, int B, int N) {
    const GmaPriv *g = m->priv;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * m->H * N * g->Kc;
    if (g->delta) /* qh kh vh oh gq gk gb Sck */
        return 4 * hs + 2 * gs + (size_t)B * m->H * N + (size_t)B * m->H * n_ck(m, N) * g->Kc * m->d +
               attn_proj_act_size(m, B, N);
    return 4 * hs + (size_t)B * m->H * N + (g->ema ? 2 * gs : 0) + (g->win ? gma_window_act(m, B, N) : 0) +
           attn_proj_act_size(m, B, N);
}
/* gma.window's blocks: in act just before the projections' block, in scratch at its end */
static real *win_act(const Mixer *m, const real *act, int B, int N) {
    return attn_proj_act(m, act, B, N) - gma_window_act(m, B, N);
}

/* The add write's backward recomputes the responsibilities and chunk states a group of
 * (batch, head) rows at a time, as the tiled sdpa recomputes its probabilities, so a layer
 * keeps O(N d), never O(N Kc) (the delta write keeps O(N Kc)).
 * (batch, head) rows in one backward group: at least gh, and as
 * many as the scratch that the forward and decoding need anyway leaves beside the
 * backward's three [B*N*D] buffers (so the scratch does not grow); a group of H or more is
 * whole batches (its rows contiguous). Fewer, larger groups: fewer and larger op calls. */
/* the scratch of the forward (gq, gk, states) and of decoding, the larger */
static size_t fwd_dec_scratch(const Mixer *m, int B, int N) {
    const GmaPriv *g = m->priv;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * m->H * N * g->Kc;
    return GMA_MAX(2 * gs + n_state(m, B, N), hs + 2 * gs);
}
static int group_heads(const Mixer *m, int B, int N) {
    const GmaPriv *g = m->priv;
    int H = m->H;
    /* B x H pairs, at most INT_MAX rounded down to whole batches (a plan for more rows than
     * an int counts is refused later; its sizes must not overflow on the way) */
    size_t BH = (size_t)B * H, all = BH <= (size_t)INT_MAX ? BH : (size_t)INT_MAX / H * H;
    if (g->div_on) return (int)all;
    size_t hs = (size_t)B * N * m->D, big = fwd_dec_scratch(m, B, N);
    size_t room = big > 3 * hs ? big - 3 * hs : 0, per = (g->Kc <= m->d ? 3 : 4) * (size_t)N * g->Kc;
    size_t G = GMA_MAX((size_t)g->gh, per ? room / per : 0);
    if (G >= all) return (int)all;
    return G >= (size_t)H ? (int)(G / H * H) : (int)G;
}

int gma_backward_group(const Mixer *m, int B, int N) { return group_heads(m, B, N); }

static size_t gma_scratch(const Mixer *m, int B, int N) {
    const GmaPriv *g = m->priv;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * m->H * N * g->Kc;
    if (g->ema) return 5 * hs + 2 * gs;
    if (g->delta) return 5 * hs + 2 * gs + 2 * (size_t)B * m->H * N; /* the backward's; the forward's is smaller */
    size_t grp = (g->Kc <= m->d ? 3 : 4) * (size_t)group_heads(m, B, N) * N * g->Kc; /* dgq in dk's rows when it fits */
    return GMA_MAX(fwd_dec_scratch(m, B, N), 3 * hs + GMA_MAX(hs, grp)) + (g->win ? gma_window_scratch(m, B, N) : 0);
}
static real *win_scratch(const Mixer *m, real *scratch, int B, int N) {
    return scratch + gma_scratch(m, B, N) - gma_window_scratch(m, B, N);
}

/* the Gaussian routing of queries and keys (forward 2, backward 4 products of 2 N Kc d a
 * head, and with the linear core 2 more: the backward's forward again; none with softmax
 * routing: those go through the table) and the mixing core with its rescan of the states
 * (none with the EMA memory: its products go through the table) */
static double gma_fused_flops(const Mixer *m, int B, int N, int causal) {
    const GmaPriv *g = m->priv;
    double BH = (double)B * m->H;
    double route = g->softmax ? 0 : 2 * BH * (g->ema ? 6 : 8) * 2.0 * N * g->Kc * m->d;
    if (g->ema) return route;
    if (g->delta) /* the routing's 2 + 4 products (the responsibilities are saved) and cpu_delta.c's 22 d Kc a token */
        return (g->softmax ? 0 : 2 * BH * 6 * 2.0 * N * g->Kc * m->d) + BH * N * g->Kc * m->d * 22;
    return route + linmix_flops(BH, N, g->Kc, m->d, causal, g->chunk) +
           linmix_rescan_flops(BH, N, g->Kc, m->d, causal, g->chunk) + (g->win ? gma_window_flops(g->win, m, B, N, causal) : 0);
}

/* the saved activations; gq, gk only with the EMA memory (NULL: in scratch, recomputed) */
typedef struct Acts { real *qh, *kh, *vh, *oh, *den, *gq, *gk, *gb, *Sck; } Acts;
static Acts carve(const Mixer *m, int B, int N, const real *act_c) {
    const GmaPriv *g = m->priv;
    real *act = (real *)act_c;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * m->H * N * g->Kc;
    Acts a;
    a.qh = act;
    a.kh = a.qh + hs;
    a.vh = a.kh + hs;
    a.oh = a.vh + hs;
    a.gq = g->ema ? a.oh + hs : NULL; /* EMA memory: qh kh vh oh gq gk den */
    a.gk = g->ema ? a.gq + gs : NULL;
    a.den = g->ema ? a.gk + gs : a.oh + hs;
    a.gb = a.Sck = NULL;
    if (g->delta) { /* qh kh vh oh gq gk gb Sck; no denominator */
        a.gq = a.oh + hs;
        a.gk = a.gq + gs;
        a.gb = a.gk + gs;
        a.Sck = a.gb + (size_t)B * m->H * N;
        a.den = NULL;
    }
    return a;
}

/* ---- routing: gamma [B,H,N,Kc] from rows x [B,H,N,d], for H heads from head h0 on (rows
 * contiguous: B = 1 or all heads) ---- */
static void route_forward_heads(const Mixer *m, const real *params, real *gamma, const real *x, int B, int H, int h0,
                                int N) {
    const GmaPriv *g = m->priv;
    int d = m->d, Kc = g->Kc;
    size_t po = g->shared ? 0 : (size_t)h0 * Kc * d, bo = g->shared ? 0 : (size_t)h0 * Kc;
    if (!g->softmax) {
        g_ops->gma_route_forward(gamma, x, MP(m, params, P_MU) + po, MP(m, params, P_VAR) + po,
                                 MP(m, params, P_PRIOR) + bo, B, H, N, d, Kc, g->tau, g->var_floor, g->shared);
        return;
    }
    const real *W = MP(m, params, P_RW) + po, *bias = MP(m, params, P_RB) + bo;
    size_t sW = g->shared ? 0 : (size_t)Kc * d;
    for (int b = 0; b < B; b++)
        g_ops->matmul_strided(gamma + (size_t)b * H * N * Kc, x + (size_t)b * H * N * d, W, N, Kc, d, 0, 1, 1, 0, H,
                              (size_t)N * d, sW, (size_t)N * Kc);
    for (int bh = 0; bh < B * H; bh++)
        g_ops->bias_forward(gamma + (size_t)bh * N * Kc, bias + (g->shared ? 0 : (size_t)(bh % H) * Kc), N, Kc);
    g_ops->softmax_rows(gamma, B * H * N, Kc, 1 / g->tau, NULL);
}
static void route_forward(const Mixer *m, const real *params, real *gamma, const real *x, int B, int N) {
    route_forward_heads(m, params, gamma, x, B, m->H, 0, N);
}

/* ---- gma.topk (docs/model.md §3.12): the responsibilities gamma [B,H,N,Kc] of sequences b0..,
 * heads h0.. cut in place to each row's k largest and renormalised (gma_topk_forward), with
 * the Gumbel noise of c->noise in a training forward and its backward (c NULL: none, as in
 * decoding, prefill and the monitor's recomputation). which: 0 queries, 1 keys. The backward
 * needs no op of its own: the cut after the routing's softmax is a softmax over the kept
 * entries, whose gradient is the routing backward's at the cut responsibilities. */
static void topk_cut(const Mixer *m, const MixerCtx *c, real *gamma, int B, int H, int b0, int h0, int N, int which) {
    const GmaPriv *g = m->priv;
    if (g->topk <= 0) return;
    GmaTopkNoise z;
    int noisy = c && c->training && c->noise && g->topk_noise > 0;
    if (noisy) z = (GmaTopkNoise){.drop = *c->noise, .scale = g->topk_noise, .which = which, .b0 = b0, .h0 = h0, .H = m->H};
    g_ops->gma_topk_forward(gamma, gamma, B, H, N, g->Kc, g->topk, noisy ? &z : NULL);
}

/* gma.topk's refusals: k below every GMA layer's Kc; the mixer gma only (auto, gated and GMA
 * cross-attention route through other code); no structural adaptation of K */
static int topk_validate(const Config *c, const GmaCfg *g) {
    for (int l = 0; l < c->model.n_layers; l++) {
        const MixerVT *vt = mixer_of_layer(c, l);
        if (!vt || !vt->gma_layer) continue;
        if (vt != &mixer_gma)
            return gma_errorf("key gma.topk: built for mixer \"gma\"; layer %d's mixer \"%s\" keeps dense routing", l,
                              vt->name);
        if (g->topk >= gma_layer_kc(c, l))
            return gma_errorf("key gma.topk: %d keeps all %d components of layer %d (gma.n_components): below Kc, "
                              "or 0 for dense routing", g->topk, gma_layer_kc(c, l), l);
    }
    const CrossCfg *x = cross_cfg(c);
    if (x->mixer == CROSS_GMA || (x->mixer != CROSS_NONE && x->enc_mixer == CROSS_GMA))
        return gma_errorf("key gma.topk: built for mixer \"gma\"; the GMA cross-attention layers (cross.mixer, "
                          "cross.enc_mixer) keep dense routing");
    if (g->adapt_every > 0)
        return gma_errorf("key gma.topk: the structural adaptation of K (gma.adapt_every) would move Kc under k");
    return 0;
}

/* dx += ..., parameter gradients += ...; dgamma is overwritten (softmax routing); heads as
 * route_forward_heads */
static void route_backward_heads(const Mixer *m, const real *params, real *grads, real *dx, real *dgamma,
                                 const real *gamma, const real *x, int B, int H, int h0, int N) {
    const GmaPriv *g = m->priv;
    int d = m->d, Kc = g->Kc;
    size_t po = g->shared ? 0 : (size_t)h0 * Kc * d, bo = g->shared ? 0 : (size_t)h0 * Kc;
    if (!g->softmax) {
        g_ops->gma_route_backward(dx, MP(m, grads, P_MU) + po, MP(m, grads, P_VAR) + po, MP(m, grads, P_PRIOR) + bo,
                                  dgamma, gamma, x, MP(m, params, P_MU) + po, MP(m, params, P_VAR) + po,
                                  MP(m, params, P_PRIOR) + bo, B, H, N, d, Kc, g->tau, g->var_floor, g->shared);
        return;
    }
    const real *W = MP(m, params, P_RW) + po;
    real *dW = MP(m, grads, P_RW) + po, *db = MP(m, grads, P_RB) + bo;
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

/* the mixing between the projections (gma_core.h): oh (and den; with the EMA memory gq, gk)
 * from the qh, kh, vh in act */
void gma_mix_forward(Mixer *m, const MixerCtx *c, const real *params, real *act, real *scratch) {
    GmaPriv *g = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, Kc = g->Kc;
    size_t gs = (size_t)B * H * N * Kc;
    Acts a = carve(m, B, N, act);
    g->params_last = params;
    if (!g->ema) { /* responsibilities and chunk states in scratch: the backward recomputes them */
        a.gq = scratch;
        a.gk = a.gq + gs;
    }
    route_forward(m, params, a.gq, a.qh, B, N);
    route_forward(m, params, a.gk, a.kh, B, N);
    topk_cut(m, c, a.gq, B, H, 0, 0, N, 0);
    topk_cut(m, c, a.gk, B, H, 0, 0, N, 1);
    mask_rows(a.gk, c->keymask, B, H, N, Kc);
    if (g->ema) {
        const real *M = MP(m, params, P_MEM);
        for (int b = 0; b < B; b++)
            g_ops->matmul_strided(a.oh + (size_t)b * H * N * d, a.gq + (size_t)b * H * N * Kc, M, N, d, Kc, 0, 0, 1, 0,
                                  H, (size_t)N * Kc, (size_t)Kc * d, (size_t)N * d);
    } else {
        g_ops->linmix_forward(a.oh, a.den, a.gk + gs, a.gq, a.gk, a.vh, B * H, N, Kc, d, c->causal, g->chunk, g->eps);
    }
    g->div_last = 0;
    if (g->div_on && c->training)
        g->div_last = (g_ops->gma_div_forward(a.gq, c->keymask, B, H, N, Kc, g->div_mode) +
                       g_ops->gma_div_forward(a.gk, c->keymask, B, H, N, Kc, g->div_mode)) /
                      (2.0 * H);
}

/* ---- gma.write "delta" (docs/model.md §3.10): the responsibilities as the keys and queries
 * of the gdn mixer's delta-rule op, without decay (ga NULL: a_t = 1) and at scale 1; the
 * gate b_t = sigmoid(h Wb^T + bb) per head. The forward saves gq, gk, the gate's input gb
 * and the op's checkpoints of S; the backward runs the op's adjoint, then the routing's. */
/* the slots' decay logits theta [H,Kc] in a parameter or gradient buffer (NULL without gma.slot_decay) */
static real *slot_theta(const Mixer *m, const real *base) { return m->p[P_SD] >= 0 ? (real *)MP(m, base, P_SD) : NULL; }

static void delta_mix_forward(Mixer *m, const MixerCtx *c, const real *params, const real *h, real *act,
                              real *scratch) {
    GmaPriv *g = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, Kc = g->Kc;
    Acts a = carve(m, B, N, act);
    g->params_last = params;
    route_forward(m, params, a.gq, a.qh, B, N);
    route_forward(m, params, a.gk, a.kh, B, N);
    topk_cut(m, c, a.gq, B, H, 0, 0, N, 0);
    topk_cut(m, c, a.gk, B, H, 0, 0, N, 1);
    mask_rows(a.gk, c->keymask, B, H, N, Kc); /* a zero key writes nothing */
    linear_forward(scratch, h, MP(m, params, P_BW), MP(m, params, P_BB), B * N, m->Dm, H);
    g_ops->split_heads(a.gb, scratch, B, N, H, 1);
    g_ops->delta_forward(a.oh, a.Sck, a.gq, a.gk, a.vh, NULL, a.gb, NULL, NULL, slot_theta(m, params), B, H, N, Kc, d,
                         g->chunk, 1);
    g->div_last = 0;
    if (g->div_on && c->training)
        g->div_last = (g_ops->gma_div_forward(a.gq, c->keymask, B, H, N, Kc, g->div_mode) +
                       g_ops->gma_div_forward(a.gk, c->keymask, B, H, N, Kc, g->div_mode)) /
                      (2.0 * H);
}

static void dirichlet_backward(const Mixer *m, const real *params, real *grads, double scale);
/* scratch: doh, dv, dk, dq, tmp [B,N,D]; dgq, dgk [B,H,N,Kc]; dgb, tg [B,H,N] */
static void delta_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                           real *grads, real *act, real *scratch) {
    const GmaPriv *g = m->priv;
    int B = c->B, N = c->N, H = m->H, d = m->d, Kc = g->Kc;
    size_t hs = (size_t)B * N * m->D, gs = (size_t)B * H * N * Kc, bhn = (size_t)B * H * N;
    Acts a = carve(m, B, N, act);
    real *doh = scratch, *dv = doh + hs, *dk = dv + hs, *dq = dk + hs, *tmp = dq + hs, *dgq = tmp + hs, *dgk = dgq + gs;
    real *dgb = dgk + gs, *tg = dgb + bhn;
    if (g->dir_weight > 0 && c->aux_scale != 0) dirichlet_backward(m, params, grads, g->dir_weight * c->aux_scale);
    attn_proj_out_backward(m, params, grads, doh, dy, a.oh, doh, dv, B, N);
    g_ops->zero(dv, sizeof(real) * hs);
    g_ops->zero(dgq, sizeof(real) * (2 * gs + bhn));
    g_ops->delta_backward(dgq, dgk, dv, NULL, dgb, NULL, NULL, slot_theta(m, grads), doh, a.Sck, a.gq, a.gk, a.vh, NULL,
                          a.gb, NULL, NULL, slot_theta(m, params), B, H, N, Kc, d, g->chunk, 1);
    mask_rows(dgk, c->keymask, B, H, N, Kc);
    if (g->div_on && c->aux_scale != 0) {
        real s = (real)(g->div_weight * c->aux_scale / (2.0 * H));
        g_ops->gma_div_backward(dgq, a.gq, c->keymask, B, H, N, Kc, g->div_mode, s);
        g_ops->gma_div_backward(dgk, a.gk, c->keymask, B, H, N, Kc, g->div_mode, s);
    }
    g_ops->zero(dk, sizeof(real) * 2 * hs); /* dk, dq */
    route_backward_heads(m, params, grads, dq, dgq, a.gq, a.qh, B, H, 0, N);
    route_backward_heads(m, params, grads, dk, dgk, a.gk, a.kh, B, H, 0, N);
    g_ops->merge_heads(tg, dgb, B, N, H, 1);
    linear_backward(dh, MP(m, grads, P_BW), MP(m, grads, P_BB), tg, h, MP(m, params, P_BW), B * N, m->Dm, H);
    attn_proj_qkv_conv_backward(m, c, params, grads, dh, h, dq, dk, dv, attn_proj_act(m, act, B, N), tmp);
}

static void gma_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                        real *scratch) {
    const GmaPriv *g = m->priv;
    Acts a = carve(m, c->B, c->N, act);
    attn_proj_qkv_conv(m, c, params, h, a.qh, a.kh, a.vh, attn_proj_act(m, act, c->B, c->N), scratch);
    if (g->delta)
        delta_mix_forward(m, c, params, h, act, scratch);
    else
        gma_mix_forward(m, c, params, act, scratch);
    const real *o = g->win ? gma_window_forward(g->win, m, c, params, a.qh, a.kh, a.vh, a.oh, win_act(m, act, c->B, c->N))
                           : a.oh;
    attn_proj_out(m, params, y, o, scratch, c->B, c->N);
}

/* incremental decoding: the routing of one token, then the linear core's state step, or a
 * read of the EMA memory (which keeps no state across tokens); the state: the core's S and
 * z (none with the EMA memory), then the short convolutions' */
static size_t gma_core_state(const Mixer *m) {
    const GmaPriv *g = m->priv;
    if (g->delta) return (size_t)m->H * g->Kc * m->d; /* S [H,Kc,d] */
    return g->ema ? 0 : linmix_decode_state(m->H, g->Kc, m->d);
}
/* then gma.window's ring */
static size_t gma_dstate(const Mixer *m, int Nmax) {
    const GmaPriv *g = m->priv;
    return gma_core_state(m) + attn_proj_state_size(m) + (g->win ? gma_window_state(g->win, m, Nmax) : 0);
}
static void gma_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                       real *act, real *scratch) {
    const GmaPriv *g = m->priv;
    int H = m->H, d = m->d, Kc = g->Kc;
    size_t hs = (size_t)m->D, gs = (size_t)H * Kc, ss = gma_dstate(m, Nmax);
    Acts a = carve(m, B, 1, act);
    attn_proj_qkv_step(m, params, h, a.qh, a.kh, a.vh, state + gma_core_state(m), ss, attn_proj_act(m, act, B, 1),
                       scratch, B);
    if (g->delta) { /* gq, gk, gb in act */
        route_forward(m, params, a.gq, a.qh, B, 1);
        route_forward(m, params, a.gk, a.kh, B, 1);
        topk_cut(m, NULL, a.gq, B, m->H, 0, 0, 1, 0);
        topk_cut(m, NULL, a.gk, B, m->H, 0, 0, 1, 1);
        linear_forward(a.gb, h, MP(m, params, P_BW), MP(m, params, P_BB), B, m->Dm, H); /* [B,H] */
        g_ops->delta_step(a.oh, state, ss, a.gq, a.gk, a.vh, NULL, a.gb, NULL, NULL, slot_theta(m, params), B, H, Kc, d, 1);
        attn_proj_out(m, params, y, a.oh, scratch, B, 1);
        return;
    }
    if (!g->ema) { /* after attn_proj_qkv_step's [B*D] buffer, read before attn_proj_out's */
        a.gq = scratch + (size_t)B * hs;
        a.gk = a.gq + (size_t)B * gs;
    }
    route_forward(m, params, a.gq, a.qh, B, 1);
    topk_cut(m, NULL, a.gq, B, H, 0, 0, 1, 0);
    if (g->ema) {
        for (int b = 0; b < B; b++)
            g_ops->matmul_strided(a.oh + b * hs, a.gq + b * gs, MP(m, params, P_MEM), 1, d, Kc, 0, 0, 1, 0, H, (size_t)Kc,
                                  (size_t)Kc * d, (size_t)d);
    } else {
        route_forward(m, params, a.gk, a.kh, B, 1);
        topk_cut(m, NULL, a.gk, B, H, 0, 0, 1, 1);
        g_ops->linmix_step(a.oh, state, ss, a.gq, a.gk, a.vh, B, H, Kc, d, g->eps);
    }
    const real *o = a.oh;
    if (g->win)
        o = gma_window_step(g->win, m, params, state + gma_core_state(m) + attn_proj_state_size(m), ss, a.qh, a.kh, a.vh,
                            a.oh, B, pos, Nmax, win_act(m, act, B, 1));
    attn_proj_out(m, params, y, o, scratch, B, 1);
}

/* prefill: the linear core's state from the forward's keys, routed again (the forward keeps
 * their responsibilities in scratch only; the EMA memory keeps none), the convolutions' */
static void gma_prefill(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                        int Nmax, real *scratch) {
    const GmaPriv *g = m->priv;
    (void)h;
    attn_proj_conv_prefill(m, c, attn_proj_act(m, act, c->B, c->N), state + gma_core_state(m), gma_dstate(m, Nmax));
    if (g->ema) return;
    Acts a = carve(m, c->B, c->N, act);
    if (g->delta) { /* S: the forward's final state, the last of its checkpoints */
        size_t SS = (size_t)g->Kc * m->d, nck = n_ck(m, c->N), ss = gma_dstate(m, Nmax);
        for (int b = 0; b < c->B; b++)
            for (int hh = 0; hh < m->H; hh++)
                g_ops->copy(state + b * ss + hh * SS, a.Sck + (((size_t)b * m->H + hh) * nck + nck - 1) * SS,
                            sizeof(real) * SS);
        return;
    }
    route_forward(m, params, scratch, a.kh, c->B, c->N);
    topk_cut(m, NULL, scratch, c->B, m->H, 0, 0, c->N, 1);
    mask_rows(scratch, c->keymask, c->B, m->H, c->N, g->Kc);
    linmix_prefill(state, gma_dstate(m, Nmax), scratch, a.vh, c->B, m->H, c->N, g->Kc, m->d);
    if (g->win)
        gma_window_prefill(g->win, m, c, a.kh, a.vh, state + gma_core_state(m) + attn_proj_state_size(m),
                           gma_dstate(m, Nmax), Nmax);
}

/* The Dirichlet prior's gradient (docs/model.md §4.1), scale x dL/dl into the prior logits'
 * gradient: L = -(alpha - 1)/Hp sum_h sum_{k live} log pi_hk, pi_h = softmax(l_h), so
 * dL/dl_hj = (1 - alpha)/Hp ([j live] - n_live pi_hj); dropped components (logit <=
 * MIXER_DROPPED_LOGIT / 2) are not in the sum and have pi = 0. One op on the backend's
 * memory (gma_dirichlet_backward): the logits never cross to the host. */
static void dirichlet_backward(const Mixer *m, const real *params, real *grads, double scale) {
    GmaPriv *g = m->priv;
    g_ops->gma_dirichlet_backward(MP(m, grads, P_PRIOR), MP(m, params, P_PRIOR), g->Hp, g->Kc,
                                  scale * (1 - g->dir_alpha) / g->Hp, (real)(MIXER_DROPPED_LOGIT / 2));
}

static void gma_backward_ema(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
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
    { /* dgamma_q = dO M^T ; nothing reaches K, V or M */
        const real *M = MP(m, params, P_MEM);
        for (int b = 0; b < B; b++)
            g_ops->matmul_strided(dgq + (size_t)b * H * N * Kc, doh + (size_t)b * H * N * d, M, N, Kc, d, 0, 1, 1, 1, H,
                                  (size_t)N * d, (size_t)Kc * d, (size_t)N * Kc);
    }
    if (g->div_on && c->aux_scale != 0) {
        real s = (real)(g->div_weight * c->aux_scale / (2.0 * H));
        g_ops->gma_div_backward(dgq, a.gq, c->keymask, B, H, N, Kc, g->div_mode, s);
        g_ops->gma_div_backward(dgk, a.gk, c->keymask, B, H, N, Kc, g->div_mode, s);
    }
    g_ops->zero(dq, sizeof(real) * 2 * hs);
    route_backward_heads(m, params, grads, dq, dgq, a.gq, a.qh, B, H, 0, N);
    route_backward_heads(m, params, grads, dk, dgk, a.gk, a.kh, B, H, 0, N);
    attn_proj_qkv_conv_backward(m, c, params, grads, dh, h, dq, dk, dv, attn_proj_act(m, act, B, N), t2);
}

/* the linear core's backward (scratch: gma_scratch): per group of heads (group_heads), the
 * routing again, linmix_backward with its states rescanned, the routing backward into dq
 * (over the group's dead rows of doh) and dk; with Kc <= d the group's dgq lives in its own
 * rows of dk */
real *gma_mix_backward(Mixer *m, const MixerCtx *c, const real *params, real *grads, real *act, real *scratch) {
    const GmaPriv *g = m->priv;
    if (g->dir_weight > 0 && c->aux_scale != 0) dirichlet_backward(m, params, grads, g->dir_weight * c->aux_scale);
    int B = c->B, N = c->N, H = m->H, d = m->d, Kc = g->Kc;
    size_t hs = (size_t)B * N * m->D;
    Acts a = carve(m, B, N, act);
    real *doh = scratch, *dv = doh + hs, *dk = dv + hs, *grp = dk + hs, *dq = doh;
    g_ops->zero(dv, sizeof(real) * 2 * hs);
    int G = group_heads(m, B, N), gh = GMA_MIN(G, H), gb = G >= H ? G / H : 1; /* gb batches of gh heads */
    for (int b = 0; b < B; b += gb)
        for (int h0 = 0; h0 < H; h0 += gh) {
            int nb = GMA_MIN(gb, B - b), hn = GMA_MIN(gh, H - h0), rows = nb * hn;
            size_t ox = ((size_t)b * H + h0) * N * d, on = ((size_t)b * H + h0) * N, gg = (size_t)rows * N * Kc;
            const uint8_t *km = c->keymask ? c->keymask + (size_t)b * N : NULL;
            int in_dk = Kc <= d; /* dgq in the group's rows of dk (see gma_mix_backward) */
            real *gq = grp, *gk = gq + gg, *dgk = gk + gg, *dgq = in_dk ? dk + ox : dgk + gg;
            route_forward_heads(m, params, gq, a.qh + ox, nb, hn, h0, N);
            route_forward_heads(m, params, gk, a.kh + ox, nb, hn, h0, N);
            topk_cut(m, c, gq, nb, hn, b, h0, N, 0);
            topk_cut(m, c, gk, nb, hn, b, h0, N, 1);
            mask_rows(gk, km, nb, hn, N, Kc);
            g_ops->zero(dgq, sizeof(real) * gg);
            g_ops->zero(dgk, sizeof(real) * gg);
            g_ops->linmix_backward(dgq, dgk, dv + ox, doh + ox, a.oh + ox, a.den + on, NULL, gq, gk, a.vh + ox, rows, N,
                                   Kc, d, c->causal, g->chunk);
            mask_rows(dgk, km, nb, hn, N, Kc);
            if (g->div_on && c->aux_scale != 0) { /* one group of all B x H heads */
                real s = (real)(g->div_weight * c->aux_scale / (2.0 * H));
                g_ops->gma_div_backward(dgq, gq, c->keymask, B, H, N, Kc, g->div_mode, s);
                g_ops->gma_div_backward(dgk, gk, c->keymask, B, H, N, Kc, g->div_mode, s);
            }
            g_ops->zero(dq + ox, sizeof(real) * rows * N * d); /* the group's doh rows are read */
            route_backward_heads(m, params, grads, dq + ox, dgq, gq, a.qh + ox, nb, hn, h0, N);
            if (in_dk) g_ops->zero(dk + ox, sizeof(real) * rows * N * d); /* dgq read: the rows are dk's again */
            route_backward_heads(m, params, grads, dk + ox, dgk, gk, a.kh + ox, nb, hn, h0, N);
        }
    return grp;
}

static void gma_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                         real *grads, real *act, real *scratch) {
    const GmaPriv *g = m->priv;
    int B = c->B, N = c->N;
    if (g->delta) {
        delta_backward(m, c, dh, dy, h, params, grads, act, scratch);
        return;
    }
    if (g->ema) {
        if (g->dir_weight > 0 && c->aux_scale != 0) dirichlet_backward(m, params, grads, g->dir_weight * c->aux_scale);
        gma_backward_ema(m, c, dh, dy, h, params, grads, act, scratch);
        return;
    }
    size_t hs = (size_t)B * N * m->D;
    real *doh = scratch, *dv = doh + hs, *dk = dv + hs;
    Acts a = carve(m, B, N, act);
    real *wa = g->win ? win_act(m, act, B, N) : NULL, *ws = g->win ? win_scratch(m, scratch, B, N) : NULL;
    attn_proj_out_backward(m, params, grads, doh, dy, g->win ? gma_window_mix(m, B, N, wa) : a.oh, doh, dv, B, N);
    if (g->win) gma_window_backward_split(g->win, m, c, params, grads, doh, a.oh, wa, ws);
    real *tmp = gma_mix_backward(m, c, params, grads, act, scratch);
    if (g->win) gma_window_backward_attn(g->win, m, c, doh, dk, dv, a.qh, a.kh, a.vh, wa, ws);
    attn_proj_qkv_conv_backward(m, c, params, grads, dh, h, doh, dk, dv, attn_proj_act(m, act, B, N), tmp);
}

void gma_mix_step(Mixer *m, const real *params, real *oh, real *state, size_t stride, const real *qh, const real *kh,
                  const real *vh, int B, real *scratch) {
    const GmaPriv *g = m->priv;
    real *gq = scratch, *gk = gq + (size_t)B * m->H * g->Kc;
    route_forward(m, params, gq, qh, B, 1);
    route_forward(m, params, gk, kh, B, 1);
    topk_cut(m, NULL, gq, B, m->H, 0, 0, 1, 0);
    topk_cut(m, NULL, gk, B, m->H, 0, 0, 1, 1);
    g_ops->linmix_step(oh, state, stride, gq, gk, vh, B, m->H, g->Kc, m->d, g->eps);
}

int gma_cfg_memory(const Config *c) { return gcfg(c)->memory == MEMORY_EMA; }
int gma_cfg_diag_every(const Config *c) { return gcfg(c)->diag_every; }
size_t gma_mix_step_state(const Mixer *m) { return linmix_decode_state(m->H, ((const GmaPriv *)m->priv)->Kc, m->d); }
size_t gma_mix_step_scratch(const Mixer *m, int B) { return 2 * (size_t)B * m->H * ((const GmaPriv *)m->priv)->Kc; }

static void gma_destroy(Mixer *m) {
    GmaPriv *g = m->priv;
    if (g->gq_buf) g_ops->free(g->gq_buf);
    gma_window_destroy(g->win);
    if (g->gk_buf) g_ops->free(g->gk_buf);
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

/* ================= routing-health hooks (docs/routing.md; used by train/health.c) ================= */
/* the query (key = 0) or key (key = 1) responsibilities of the last forward: saved with the
 * EMA memory and the delta write, else recomputed from the saved qh or kh into a buffer of
 * the mixer (the parameter buffer that forward read, with its current values); recomputed
 * key rows of padding are not zeroed; with gma.topk always recomputed, dense: the monitor
 * describes the routing before the cut (docs/model.md §3.12) */
static const real *resp_of(const Mixer *m, const real *act, int B, int N, int key) {
    GmaPriv *g = m->priv;
    Acts a = carve(m, B, N, act);
    if ((g->ema || g->delta) && g->topk <= 0) return key ? a.gk : a.gq;
    if (!g->params_last) return NULL;
    size_t n = (size_t)B * m->H * N * g->Kc;
    real **buf = key ? &g->gk_buf : &g->gq_buf;
    size_t *cap = key ? &g->gk_cap : &g->gq_cap;
    if (n > *cap) {
        if (*buf) g_ops->free(*buf);
        *buf = g_ops->alloc(n * sizeof(real));
        *cap = n;
    }
    route_forward(m, g->params_last, *buf, key ? a.kh : a.qh, B, N);
    return *buf;
}
/* the query responsibilities recomputed from the saved qh with the parameters as they are now */
static const real *query_resp(const Mixer *m, const real *act, int B, int N) { return resp_of(m, act, B, N, 0); }

static void h_components(const Mixer *m, const real *act, int B, int N, MixerComponents *out) {
    const GmaPriv *g = m->priv;
    *out = (MixerComponents){.Kc = g->Kc,
                             .shared = g->shared,
                             .softmax = g->softmax,
                             .centre = m->p[g->softmax ? P_RW : P_MU],
                             .bias = m->p[g->softmax ? P_RB : P_PRIOR],
                             .var = m->p[P_VAR],
                             .var0 = g->var0,
                             .memory = g->ema ? m->p[P_MEM] : -1,
                             .kmeans = g->kmeans,
                             .mon = g->mon,
                             .qh = act ? carve(m, B, N, act).qh : NULL,
                             .kh = act ? carve(m, B, N, act).kh : NULL,
                             .gq = act ? query_resp(m, act, B, N) : NULL,
                             /* only for the recall diagnosis and key re-seeding: the monitor reads queries alone */
                             .gk = act && (g->mon.diag_every > 0 || g->mon.reseed_keys) ? resp_of(m, act, B, N, 1) : NULL};
}

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

static const MixerHealth gma_health = {
    .components = h_components,
    .update_buffers = h_update_buffers,
};

const MixerVT mixer_gma = {
    .name = "gma",
    .gma_layer = 1,
    .causal_ok = 1,
    .bidir_ok = 1,
    .attn_dropout_why = "mixes through Gaussian routing and a normalised linear core: it has no attention probabilities to drop",
    .short_conv_ok = 1,
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
    .prefill = gma_prefill,
    .destroy = gma_destroy,
    .aux_loss = gma_aux_loss,
    .rank_averaged = gma_rank_averaged,
    .health = &gma_health,
    .fused_flops = gma_fused_flops,
};
