/* auto.c: `mixer: "auto"` (docs/model.md §3.6; docs/baselines.md, "auto"): a layer holding a
 * gma and a tiled sdpa child that picks per call by sequence length (sdpa when N <
 * model.auto_threshold, GMA otherwise) and, with auto.distill_weight > 0, distils the GMA
 * path from the sdpa path below the threshold (the output stays sdpa's). The paths share
 * the projections, so the tensors are a gma layer's: PREFIX.{q,k,v,o}.{weight,bias},
 * PREFIX.gma.{mu,var_raw,prior_logits}. Every optional hook (validation and the gma.* keys,
 * the auxiliary loss, the buffers the ranks average, routing health) is GMA's and acts on
 * the last forward only when that ran the GMA path. act / scratch: auto_act, auto_scratch. */
#include <math.h>
#include <stdlib.h>

#include "nn/mixers/auto_calib.h"
#include "nn/mixers/gma_core.h"
#include "nn/mixers/mixer.h"

extern const MixerVT mixer_gma, mixer_sdpa, mixer_sdpa_ref;
const MixerVT mixer_auto;

/* model.auto_threshold: a stored section of this mixer's under the prefix model (a number,
 * or the word "calibrated", stored as -1) */
typedef struct AutoThrCfg {
    int threshold;
} AutoThrCfg;
static const CfgKey auto_thr_keys[] = {
    {"auto_threshold", CFGT_INT, offsetof(AutoThrCfg, threshold), 0, "1024", 1, 16777216, "calibrated",
     "mixer auto: sdpa below this length, gma at or above; \"calibrated\": from gmabench calibrate's "
     "auto.calibration (docs/model.md §3.6)."},
};
const CfgSection auto_threshold_section = {"auto_threshold", sizeof(AutoThrCfg), auto_thr_keys, CFG_N(auto_thr_keys),
                                           NULL, "model"};
static int thr_cfg(const Config *c) { return ((const AutoThrCfg *)cfg_section_of(c, &auto_threshold_section))->threshold; }
/* the keys auto.* */
typedef struct AutoCfg {
    double distill_weight;
    char calibration[CFG_STR];
} AutoCfg;
#define O(f) offsetof(AutoCfg, f)
static const CfgKey auto_keys[] = {
    {"distill_weight", CFGT_REAL, O(distill_weight), 0, "0", 0, 1e6, NULL,
     "mixer auto: weight of distilling the GMA path from the sdpa path below the threshold (0 = off; docs/model.md "
     "§3.6)."},
    {"calibration", CFGT_STR, O(calibration), CFG_STR, "auto_calibration.json", 0, 0, NULL,
     "mixer \"auto\": the file of gmabench calibrate read when model.auto_threshold is \"calibrated\"."},
};
#undef O
static const CfgSection auto_section = {"auto", sizeof(AutoCfg), auto_keys, CFG_N(auto_keys),
                                        NULL, NULL};
static const AutoCfg *acfg(const Config *c) { return cfg_section_of(c, &auto_section); }

/* the threshold of c's auto layers: model.auto_threshold, or "calibrated" (< 0) read from
 * auto.calibration and kept within the band; warn: say so once when the measurement lies
 * outside it. 0 or -1 with the error */
static int threshold_of(const Config *c, int *thr, int warn) {
    if (thr_cfg(c) > 0) return *thr = thr_cfg(c), 0;
    int measured;
    const char *path = acfg(c)->calibration;
    if (auto_calibration_read(path, &measured, thr) != 0)
        return gma_errorf("key model.auto_threshold \"calibrated\": %s", gma_error());
    static int said;
    if (warn && measured != *thr && !said) {
        said = 1;
        if (measured < 0)
            fprintf(stderr, "gma: warning: %s: GMA was not ahead of sdpa at any length measured; model.auto_threshold %d "
                    "(the top of the band %d-%d)\n", path, *thr, AUTO_BAND_LO, AUTO_BAND_HI);
        else
            fprintf(stderr, "gma: warning: %s: measured crossover %d lies outside the band %d-%d; model.auto_threshold %d\n",
                    path, measured, AUTO_BAND_LO, AUTO_BAND_HI, *thr);
    }
    return 0;
}

typedef struct AutoPriv {
    Mixer *gma, *sdpa;
    Mixer *last;   /* the path of the last forward (NULL before the first) */
    int threshold;
    double distill_weight;
    int both;      /* act/scratch hold both paths (distillation or probe possible) */
    int probe;     /* mixer_auto_probe: every forward runs both paths and sums their gap */
    int ran_both;  /* the last forward ran both paths (distillation or probe) */
    int distilled; /* ... and was a training call on the sdpa path with w > 0 */
    double dist;   /* its sum (oh_gma - oh_sdpa)^2 / den (relative: free of the outputs' scale) */
    double den;    /* sum oh_sdpa^2 of that forward (1 when 0) */
    double gap_sq, ref_sq, gap_n; /* probe sums: (oh_gma - oh_sdpa)^2, oh_sdpa^2, their count */
    double scale;  /* 1 / sqrt(d) */
    int hold;      /* mixer_auto_hold_target: 1 take the next target, 2 keep it */
    real *target;  /* the held oh_sdpa (backend memory), hs reals */
    size_t target_n;
} AutoPriv;

static void free_parts(Mixer *m, AutoPriv *p) {
    p->gma->vt->destroy(p->gma);
    p->sdpa->vt->destroy(p->sdpa);
    free(p);
    free(m);
}

static Mixer *auto_create(const Config *c, int layer, ParamTable *pt, const char *prefix) {
    int thr;
    if (threshold_of(c, &thr, 0) != 0) return NULL;
    Mixer *m = mixer_new(&mixer_auto, c, pt);
    AutoPriv *p = xcalloc(1, sizeof *p);
    p->gma = mixer_gma.create(c, layer, pt, prefix);
    if (!p->gma) {
        free(p);
        free(m);
        return NULL;
    }
    /* the tiled path, or the plain one on a backend without the tiled ops (as `sdpa` does) */
    int tiled = g_ops->attn_forward && g_ops->attn_backward;
    p->sdpa = mixer_new(tiled ? &mixer_sdpa : &mixer_sdpa_ref, c, pt);
    /* one set of projections for both paths: training at any length trains what both use
     * (separate copies would leave one path at its initial values whenever training runs at
     * a single length), and auto and gma checkpoints load into each other */
    for (int i = 0; i < AP_N; i++) p->sdpa->p[i] = m->p[i] = p->gma->p[i];
    p->threshold = thr;
    p->distill_weight = acfg(c)->distill_weight;
    p->both = tiled && !gma_cfg_memory(c); /* both paths: the tiled ops and GMA's mixing of this sequence */
    if (p->distill_weight > 0 && !p->both) {
        free_parts(m, p);
        return gma_errorf("key auto.distill_weight: needs the tiled attention ops (attn_forward, attn_backward) and "
                          "gma.memory \"none\""), NULL;
    }
    p->scale = 1.0 / sqrt((double)m->d);
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

/* the blocks of both paths (distillation, and the analysis' probe mixer_auto_probe; act):
 * the GMA child's (qh, kh, vh, oh_gma, ...), then oh_sdpa [B,H,N,d], lse [B,H,N], kbias [B,N] */
typedef struct Both { real *qh, *kh, *vh, *ohg, *ohs, *lse, *kb; } Both;
static Both carve(const Mixer *m, int B, int N, real *act) {
    const AutoPriv *p = m->priv;
    size_t hs = (size_t)B * N * m->D;
    Both b;
    b.qh = act, b.kh = act + hs, b.vh = act + 2 * hs, b.ohg = act + 3 * hs;
    b.ohs = act + p->gma->vt->act_size(p->gma, B, N);
    b.lse = b.ohs + hs;
    b.kb = b.lse + (size_t)B * m->H * N;
    return b;
}

/* with the tiled attention ops and gma.memory "none" room for both paths side by side
 * (carve; scratch: the child's, then doh, tmp, dq, dk, dv [B*N*D]), else the larger of the
 * two single paths' needs */
static size_t auto_act(const Mixer *m, int B, int N) {
    const AutoPriv *p = m->priv;
    size_t g = p->gma->vt->act_size(p->gma, B, N), s = p->sdpa->vt->act_size(p->sdpa, B, N);
    size_t hs = (size_t)B * N * m->D;
    return p->both ? GMA_MAX(s, g + hs + (size_t)B * m->H * N + (size_t)B * N) : GMA_MAX(g, s);
}
static size_t auto_scratch(const Mixer *m, int B, int N) {
    const AutoPriv *p = m->priv;
    size_t g = p->gma->vt->scratch_size(p->gma, B, N), s = p->sdpa->vt->scratch_size(p->sdpa, B, N);
    return p->both ? GMA_MAX(s, g + 5 * (size_t)B * N * m->D) : GMA_MAX(g, s);
}
/* the path a call of N tokens takes */
static double auto_fused_flops(const Mixer *m, int B, int N, int causal) {
    const Mixer *s = pick(m, N);
    return s->vt->fused_flops(s, B, N, causal);
}

/* sum (a - b)^2 and sum b^2 over n reals of backend memory, reduced on the backend
 * (tmp: n reals of scratch), so a distilled step copies nothing to the host */
static void gap_sums(const real *a, const real *b, real *tmp, size_t n, double *dd, double *bb) {
    g_ops->copy(tmp, a, sizeof(real) * n);
    g_ops->axpy(tmp, -1, b, n);
    *dd = g_ops->sumsq(tmp, n);
    *bb = g_ops->sumsq(b, n);
}

/* both paths on the shared projections; y from the path N takes */
static void forward_both(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                         real *scratch) {
    AutoPriv *p = m->priv;
    int B = c->B, N = c->N;
    Both k = carve(m, B, N, act);
    attn_proj_qkv(m, params, h, k.qh, k.kh, k.vh, scratch, B, N);
    gma_mix_forward(p->gma, c, params, act, scratch);
    if (c->keymask) key_bias(k.kb, c->keymask, B, N);
    g_ops->attn_forward(k.ohs, k.lse, k.qh, k.kh, k.vh, c->keymask ? k.kb : NULL, B, m->H, N, m->d, c->causal, 0,
                        (real)p->scale, NULL);
    attn_proj_out(m, params, y, N < p->threshold ? k.ohs : k.ohg, scratch, B, N);
    size_t n = (size_t)B * N * m->D;
    const real *tgt = k.ohs;
    if (p->hold) { /* the target held as a constant (gradient checks of the stop-gradient) */
        if (p->hold == 1 || p->target_n != n) {
            g_ops->free(p->target);
            p->target = g_ops->alloc(sizeof(real) * n);
            g_ops->copy(p->target, k.ohs, sizeof(real) * n);
            p->target_n = n, p->hold = 2;
        }
        tgt = p->target;
    }
    double dd, bb;
    gap_sums(k.ohg, tgt, scratch, n, &dd, &bb); /* scratch is free after the output projection */
    p->den = bb > 0 ? bb : 1;
    p->dist = dd / p->den;
    if (p->probe) p->gap_sq += dd, p->ref_sq += bb, p->gap_n += (double)n;
}

static void auto_forward(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act,
                         real *scratch) {
    AutoPriv *p = m->priv;
    Mixer *s = pick(m, c->N);
    p->last = s;
    p->distilled = s == p->sdpa && c->training && p->distill_weight > 0;
    p->ran_both = p->both && (p->distilled || p->probe);
    if (p->ran_both) forward_both(m, c, y, h, params, act, scratch);
    else s->vt->forward(s, c, y, h, params, act, scratch);
}

/* the backward of a distilled call: the sdpa path with dy, the GMA path with the
 * distillation's d/d oh_gma = 2 w aux_scale (oh_gma - oh_sdpa) / sum oh_sdpa^2 */
static void backward_distilled(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                               real *grads, real *act, real *scratch) {
    AutoPriv *p = m->priv;
    int B = c->B, N = c->N;
    size_t hs = (size_t)B * N * m->D;
    Both k = carve(m, B, N, act);
    real *sg = scratch, *doh = sg + p->gma->vt->scratch_size(p->gma, B, N), *tmp = doh + hs, *dq = tmp + hs, *dk = dq + hs,
         *dv = dk + hs;
    attn_proj_out_backward(m, params, grads, doh, dy, k.ohs, doh, tmp, B, N);
    g_ops->zero(dq, sizeof(real) * 3 * hs);
    g_ops->attn_backward(dq, dk, dv, doh, k.ohs, k.lse, k.qh, k.kh, k.vh, c->keymask ? k.kb : NULL, B, m->H, N, m->d,
                         c->causal, 0, (real)p->scale, NULL);
    real sc = (real)(2 * p->distill_weight * c->aux_scale / p->den);
    g_ops->copy(sg, k.ohg, sizeof(real) * hs);
    g_ops->axpy(sg, -1, k.ohs, hs);
    g_ops->scale(sg, sc, hs);
    gma_mix_backward(p->gma, c, params, grads, act, sg);
    g_ops->axpy(dq, 1, sg, hs);          /* the GMA path's dq */
    g_ops->axpy(dv, 1, sg + hs, hs);     /* dv */
    g_ops->axpy(dk, 1, sg + 2 * hs, hs); /* dk */
    attn_proj_qkv_backward(m, params, grads, dh, h, dq, dk, dv, tmp, B, N);
}

static void auto_backward(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                          real *grads, real *act, real *scratch) {
    AutoPriv *p = m->priv;
    if (p->distilled && p->ran_both) {
        backward_distilled(m, c, dh, dy, h, params, grads, act, scratch);
        return;
    }
    Mixer *s = pick(m, c->N);
    s->vt->backward(s, c, dh, dy, h, params, grads, act, scratch);
}
static void auto_destroy(Mixer *m) {
    AutoPriv *p = m->priv;
    if (p->target) g_ops->free(p->target);
    free_parts(m, p);
}

void mixer_auto_hold_target(Mixer *m, int on) {
    AutoPriv *p = m->priv;
    p->hold = on ? 1 : 0;
}

/* The name the layer uses for a sequence of N tokens (for logs and tests). */
const char *mixer_auto_choice(const Mixer *m, int N) { return pick(m, N)->vt->name; }
int mixer_auto_threshold(const Mixer *m) { return ((const AutoPriv *)m->priv)->threshold; }

int mixer_auto_probe(Mixer *m, int on) {
    AutoPriv *p = m->priv;
    if (!p->both) return -1;
    p->probe = on;
    p->gap_sq = p->ref_sq = p->gap_n = 0;
    return 0;
}
int mixer_auto_transfer(const Mixer *m, double *dist) {
    if (m->vt != &mixer_auto) return 0;
    const AutoPriv *p = m->priv;
    if (!p->distilled || !p->ran_both) return 0;
    *dist = p->dist;
    return 1;
}
int mixer_auto_gap(const Mixer *m, double *mse, double *rel) {
    const AutoPriv *p = m->priv;
    if (!p->gap_n) return -1;
    *mse = p->gap_sq / p->gap_n;
    *rel = p->ref_sq > 0 ? p->gap_sq / p->ref_sq : NAN;
    return 0;
}

/* ---- hooks forwarded to the children ---- */
static int auto_validate(const Config *c) {
    int thr;
    if (threshold_of(c, &thr, 1) != 0) return -1;
    if (acfg(c)->distill_weight > 0 && gma_cfg_memory(c))
        return gma_errorf("key auto.distill_weight: the distillation compares GMA's mixing of the sequence itself with "
                          "sdpa's: use gma.memory \"none\"");
    if (mixer_gma.validate && mixer_gma.validate(c) != 0) return -1;
    return mixer_sdpa.validate ? mixer_sdpa.validate(c) : 0;
}

/* the GMA child when the last forward ran it (its path, or both: its blocks start the
 * layer's act), else NULL: a call on the sdpa path alone keeps no responsibilities, so the
 * monitor then reports nothing, the EMA memory is neither seeded nor updated from it, and
 * the diversity loss is 0 */
static Mixer *gma_ran(const Mixer *m) {
    const AutoPriv *p = m->priv;
    return p->last == p->gma || p->ran_both ? p->gma : NULL;
}

static double auto_aux_loss(const Mixer *m, double *weight) {
    const AutoPriv *p = m->priv;
    double w = 0, v = p->gma->vt->aux_loss(p->gma, &w);
    int ran = gma_ran(m) != NULL;
    if (p->distill_weight > 0) { /* weight 1: w dist + the GMA path's weighted diversity loss */
        *weight = 1;
        return (p->distilled && p->ran_both ? p->distill_weight * p->dist : 0) + (ran ? w * v : 0);
    }
    *weight = w;
    return ran ? v : 0;
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

/* decoding a window of Nmax tokens: the decode step of the one child that a full forward
 * over any prefix takes (sdpa when the whole window is shorter than the threshold, GMA when
 * the threshold is 1). A threshold inside the window cannot be decoded incrementally (a
 * full forward past it recomputes every earlier position, in every layer, through GMA), so
 * generation falls back to full forwards. */
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
    .config = &auto_section,
    .gma_layer = 1,
    .causal_ok = 1,
    .bidir_ok = 1,
    .attn_dropout_why = "switches to its gma path, which has no attention probabilities to drop",
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
