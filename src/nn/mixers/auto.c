/* auto.c: `mixer: "auto"` (GMA_SPEC 3.6): a layer that holds both SDPA and GMA and picks
 * per call by sequence length: tiled softmax attention (sdpa) when N < model.auto_threshold,
 * GMA otherwise.
 *
 * Parameter sharing (a choice the spec leaves open): SDPA's parameters are exactly the
 * Q/K/V/O projections, so the two paths share them and the layer's tensors are those of a
 * gma layer: PREFIX.{q,k,v,o}.{weight,bias} and PREFIX.gma.{mu,var_raw,prior_logits}.
 * Training at any length therefore trains the projections both paths use (separate
 * copies would leave one path at its initial values whenever training runs at a single
 * length), and an auto checkpoint loads into a gma model and back.
 *
 * act / scratch: the larger of the two paths' needs (only one runs per call). */
#include <stdlib.h>

#include "nn/mixers/mixer.h"

extern const MixerVT mixer_gma, mixer_sdpa, mixer_sdpa_ref;
const MixerVT mixer_auto;

typedef struct AutoPriv {
    Mixer *gma, *sdpa;
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
    p->threshold = c->model.auto_threshold;
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
static void auto_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                         real *scratch) {
    Mixer *s = pick(m, c->N);
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

const MixerVT mixer_auto = {
    .name = "auto",
    .causal_ok = 1,
    .bidir_ok = 1,
    .create = auto_create,
    .init = auto_init,
    .act_size = auto_act,
    .scratch_size = auto_scratch,
    .forward = auto_forward,
    .backward = auto_backward,
    .destroy = auto_destroy,
};
