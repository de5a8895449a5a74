/* auto.c: `mixer: "auto"` (docs/model.md §3.6): a layer that holds both SDPA and GMA and picks
 * per call by sequence length: tiled softmax attention (sdpa) when N < model.auto_threshold,
 * GMA otherwise.
 *
 * Parameter sharing (a choice of the code, docs/model.md §3.6): SDPA's parameters are exactly the
 * Q/K/V/O projections, so the two paths share them and the layer's tensors are those of a
 * gma layer: PREFIX.{q,k,v,o}.{weight,bias} and PREFIX.gma.{mu,var_raw,prior_logits}.
 * Training at any length therefore trains the projections both paths use (separate
 * copies would leave one path at its initial values whenever training runs at a single
 * length), and an auto checkpoint loads into a gma model and back.
 *
 * act / scratch: the larger of the two paths' needs (only one runs per call).
 *
 * Every optional hook forwards to the children: validation and the gma.* keys are GMA's;
 * the auxiliary loss, the buffers the ranks average and the routing-health hooks are
 * GMA's and act on the last forward only when it took the GMA path (the sdpa path keeps
 * no responsibilities: the monitor then reports nothing, the EMA memory is neither
 * seeded nor updated from it, and the diversity loss is 0). Incremental decoding is the
 * decode step of the one child that a full forward over any prefix of the window takes:
 * sdpa when the whole window is shorter than model.auto_threshold, GMA when the threshold
 * is 1. A threshold inside the window cannot be decoded incrementally (a full forward past
 * it recomputes every earlier position, in every layer, through GMA), so can_decode says
 * no and generation falls back to full forwards. */
#include <stdlib.h>

#include "nn/mixers/mixer.h"

extern const MixerVT mixer_gma, mixer_sdpa, mixer_sdpa_ref;
const MixerVT mixer_auto;

/* model.auto_threshold: a stored section of this mixer's (prefix model) */
typedef struct AutoCfg {
    int threshold;
} AutoCfg;
static const CfgKey auto_keys[] = {
    {"auto_threshold", CFGT_INT, offsetof(AutoCfg, threshold), 0, "1024", 1, 16777216, NULL,
     "mixer \"auto\": sequences shorter than this use sdpa, others gma."},
};
static const CfgSection auto_section = {"auto", sizeof(AutoCfg), auto_keys, CFG_N(auto_keys), NULL, "model"};

typedef struct AutoPriv {
    Mixer *gma, *sdpa;
    Mixer *last; /* the path of the last forward (NULL before the first) */
    int threshold;
} AutoPriv;

static Mixer *auto_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    Mixer *m = mixer_new(&mixer_auto, c, pt);
    AutoPriv *p = xcalloc(1, sizeof *p);
    p->gma = mixer_gma.create(c, layer, pt, prefix);
    if (!p->gma) {
        free(p);
        free(m);
        return NULL;
    }
    /* the tiled path, or the plain one on a backend without the tiled ops (as `sdpa` does) */
    p->sdpa = mixer_new(g_ops->attn_forward && g_ops->attn_backward ? &mixer_sdpa : &mixer_sdpa_ref, c, pt);
    for (int i = 0; i < AP_N; i++) p->sdpa->p[i] = m->p[i] = p->gma->p[i];
    p->threshold = ((const AutoCfg *)cfg_section_of(c, &auto_section))->threshold;
    m->priv = p;
    return m;
}

static Mixer *pick(const Mixer *m, int N) {
    const AutoPriv *p = m->priv;
    return N < p->threshold ? p->sdpa : p->gma;
}

static void auto_init(Mixer *m, real *params, Rng *rng) {
    AutoPriv *p = m->priv;
    if (p->gma->vt->init) p->gma->vt->init(p->gma, params, rng);
}
static size_t auto_act(const Mixer *m, int B, int N) {
    const AutoPriv *p = m->priv;
    return GMA_MAX(p->gma->vt->act_size(p->gma, B, N), p->sdpa->vt->act_size(p->sdpa, B, N));
}
static size_t auto_scratch(const Mixer *m, int B, int N) {
    const AutoPriv *p = m->priv;
    return GMA_MAX(p->gma->vt->scratch_size(p->gma, B, N), p->sdpa->vt->scratch_size(p->sdpa, B, N));
}
/* the path a call of N tokens takes */
static double auto_fused_flops(const Mixer *m, int B, int N, int causal) {
    const Mixer *s = pick(m, N);
    return s->vt->fused_flops(s, B, N, causal);
}
static void auto_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                         real *scratch) {
    Mixer *s = pick(m, c->N);
    ((AutoPriv *)m->priv)->last = s;
    s->vt->forward(s, c, y, h, params, act, scratch);
}
static void auto_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                          real *grads, real *act, real *scratch) {
    Mixer *s = pick(m, c->N);
    s->vt->backward(s, c, dh, dy, h, params, grads, act, scratch);
}
static void auto_destroy(Mixer *m) {
    AutoPriv *p = m->priv;
    p->gma->vt->destroy(p->gma);
    p->sdpa->vt->destroy(p->sdpa);
    free(p);
    free(m);
}

/* The name the layer uses for a sequence of N tokens (for logs and tests). */
const char *mixer_auto_choice(const Mixer *m, int N) { return pick(m, N)->vt->name; }

/* ---- hooks forwarded to the children ---- */
static int auto_validate(const Config *c) {
    if (mixer_gma.validate && mixer_gma.validate(c) != 0) return -1;
    return mixer_sdpa.validate ? mixer_sdpa.validate(c) : 0;
}

/* the GMA child when the last forward ran it, else NULL */
static Mixer *gma_ran(const Mixer *m) {
    const AutoPriv *p = m->priv;
    return p->last == p->gma ? p->gma : NULL;
}

static double auto_aux_loss(const Mixer *m, double *weight) {
    const AutoPriv *p = m->priv;
    double v = p->gma->vt->aux_loss(p->gma, weight);
    return gma_ran(m) ? v : 0;
}
static int auto_rank_averaged(const Mixer *m, int tensor) {
    const AutoPriv *p = m->priv;
    return p->gma->vt->rank_averaged(p->gma, tensor);
}

#define GH(m) (((const AutoPriv *)(m)->priv)->gma->vt->health)
/* the GMA child's components; its query rows and responsibilities only when the last
 * forward took its path */
static void ah_components(const Mixer *m, const real *act, int B, int N, MixerComponents *out) {
    GH(m)->components(((const AutoPriv *)m->priv)->gma, gma_ran(m) ? act : NULL, B, N, out);
}
static void ah_update_buffers(Mixer *m, const MixerCtx *c, real *params, const real *act) {
    Mixer *g = gma_ran(m);
    if (g) GH(m)->update_buffers(g, c, params, act);
}
#undef GH

static const MixerHealth auto_health = {
    .components = ah_components,
    .update_buffers = ah_update_buffers,
};

/* decoding a window of Nmax tokens: the path every prefix takes, when it is one path */
static int auto_can_decode(const Mixer *m, int Nmax) {
    const AutoPriv *p = m->priv;
    return p->threshold <= 1 || Nmax < p->threshold;
}
static size_t auto_dstate(const Mixer *m, int Nmax) {
    Mixer *s = pick(m, Nmax);
    return s->vt->decode_state(s, Nmax);
}
static void auto_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                        real *act, real *scratch) {
    Mixer *s = pick(m, Nmax);
    s->vt->decode(s, y, h, params, state, B, pos, Nmax, act, scratch);
}
/* the prefill of the path the window decodes with (the forward's path: can_decode) */
static void auto_prefill(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                         int Nmax, real *scratch) {
    Mixer *s = pick(m, Nmax);
    s->vt->prefill(s, c, h, params, act, state, Nmax, scratch);
}

const MixerVT mixer_auto = {
    .name = "auto",
    .gma_layer = 1,
    .causal_ok = 1,
    .bidir_ok = 1,
    .attn_dropout_why = "switches to its gma path, which has no attention probabilities to drop",
    .config = &auto_section,
    .validate = auto_validate,
    .create = auto_create,
    .init = auto_init,
    .act_size = auto_act,
    .scratch_size = auto_scratch,
    .forward = auto_forward,
    .backward = auto_backward,
    .destroy = auto_destroy,
    .can_decode = auto_can_decode,
    .decode_state = auto_dstate,
    .decode = auto_decode,
    .prefill = auto_prefill,
    .aux_loss = auto_aux_loss,
    .rank_averaged = auto_rank_averaged,
    .health = &auto_health,
    .fused_flops = auto_fused_flops,
};
