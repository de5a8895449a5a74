/* model.c: build, allocate, forward and backward of the decoder language model (model.h),
 * the blocks and embeddings the encoder classifier shares: its own parts are model_cls.c's,
 * the cross model's model_cross.c's, decoding model_decode.c's. */
#include "model/model.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "model/model_cls.h"
#include "model/model_cross.h"
#include "nn/linear.h"
#include "nn/recipe.h"

/* the model's own keys (the stored section model_keys_section, at the end) */
enum { POS_LEARNED, POS_SINUSOIDAL, POS_NONE, POS_ROPE }; /* model.pos: learned|sinusoidal|none|rope */
enum { EMBED_INIT_NORMAL, EMBED_INIT_RAMP };    /* model.embed_init: normal|ramp */
typedef struct ModelKeys {
    int pos;                   /* POS_LEARNED | POS_SINUSOIDAL | POS_NONE | POS_ROPE */
    int mlp;                   /* include the MLP in each block */
    double mlp_hidden_dropout; /* MLP hidden activation after GELU (the LRA release's MlpBlock) */
    double embed_std;          /* tok_emb init std (< 0 = model.init_std) */
    int embed_init;            /* EMBED_INIT_NORMAL | EMBED_INIT_RAMP: tok_emb */
    double mlp_bias_std;       /* MLP biases' init std (0 = zeros) */
} ModelKeys;
static const ModelKeys *model_keys(const Config *c) { return cfg_section_of(c, &model_keys_section); }

/* ---- dropout (docs/model.md §8) ---- */
void model_set_dropout_batch(Model *m, long micro, int64_t first, int64_t global) {
    m->drop_micro = micro;
    m->drop_first = first;
    m->drop_global = global;
}

/* the mask of `site` in `layer` for rate p, in *g; NULL (nothing drawn) outside a training
 * forward/backward or at p = 0 */
static const GmaDrop *site_drop(const Model *m, GmaDrop *g, int layer, int site, double p) {
    if (!m->drop_live || p <= 0) return NULL;
    uint64_t seed = (uint64_t)(uint32_t)m->cfg.seed;
    int seg = m->cls ? m->cls->n_ex : m->B; /* sequences per segment: the examples of one of the n_seq */
    *g = (GmaDrop){.key = {(uint32_t)seed, (uint32_t)(seed >> 32)},
                   .c2 = (uint32_t)m->drop_step,
                   .c3 = gma_drop_c3((uint32_t)m->drop_micro, layer, site),
                   .keep_below = gma_drop_threshold(p),
                   .scale = 1.0 / (1.0 - p),
                   .seg_local = seg,
                   .seg_global = m->drop_global > 0 ? m->drop_global : seg,
                   .first = m->drop_first};
    return g;
}
/* the stream of layer's mixer noise (MixerCtx.noise: GMA's top-k routing noise, ops/gma_topk.h)
 * in *g: the dropout stream's key and counters at site GMA_DROP_ROUTE, whatever the dropout
 * rates; NULL outside a training forward and its backward */
static const GmaDrop *site_noise(const Model *m, GmaDrop *g, int layer, int training) {
    if (!training) return NULL;
    uint64_t seed = (uint64_t)(uint32_t)m->cfg.seed;
    int seg = m->cls ? m->cls->n_ex : m->B;
    *g = (GmaDrop){.key = {(uint32_t)seed, (uint32_t)(seed >> 32)},
                   .c2 = (uint32_t)m->drop_step,
                   .c3 = gma_drop_c3((uint32_t)m->drop_micro, layer, GMA_DROP_ROUTE),
                   .scale = 1,
                   .seg_local = seg,
                   .seg_global = m->drop_global > 0 ? m->drop_global : seg,
                   .first = m->drop_first};
    return g;
}
void model_drop_start(Model *m, int training, long step) {
    const ModelCfg *mc = &m->cfg.model;
    m->drop_live = training && (mc->dropout > 0 || mc->attn_dropout > 0 || model_keys(&m->cfg)->mlp_hidden_dropout > 0 ||
                                (m->cls && m->cls->head_dropout > 0));
    m->drop_step = step;
}
/* x [B*N, W] in place (forward and backward are the same op) */
static void drop_site(const Model *m, real *x, int layer, int site, double p, int B, int N, int W) {
    GmaDrop g;
    if (site_drop(m, &g, layer, site, p)) g_ops->dropout(x, x, B, (size_t)N * W, &g);
}

int model_build(Model *m, const Config *c) {
    memset(m, 0, sizeof *m);
    m->cfg = *c;
    m->lm_weight = 1;
    const ModelCfg *mc = &c->model;
    if (mc->vocab_size <= 0) return gma_errorf("key model.vocab_size: not set and not given by the data");
    m->V = mc->vocab_size;
    m->D = mc->d_model;
    m->L = mc->n_layers;
    m->H = mc->n_heads;
    m->F = recipe_d_ff(c);
    m->Nmax = mc->max_seq_len;
    m->causal = cfg_causal(c);
    const ModelKeys *mk = model_keys(c);
    const ModelRecipe *rc = model_recipe(c);
    m->mlp = mk->mlp;
    m->rms = rc->norm == NORM_RMSNORM;       /* norms without bias (docs/model.md §1) */
    m->swiglu = m->mlp && rc->mlp_act == MLP_ACT_SWIGLU; /* gate, up, down without biases */
    double std = mc->init_std, ostd = std / sqrt(2.0 * m->L);
    ParamTable *pt = &m->pt;
    /* initialisation options (docs/model.md §1): tok_emb std, the blocks' dense weights and MLP biases */
    double estd = mk->embed_std >= 0 ? mk->embed_std : std;
    InitKind dense = mc->dense_init == DENSE_INIT_XAVIER_UNIFORM ? INIT_XAVIER_UNIFORM : INIT_NORMAL;
    InitKind bias_init = mk->mlp_bias_std > 0 ? INIT_NORMAL : INIT_ZERO; /* zeros draw nothing */
    int ramp = mk->embed_init == EMBED_INIT_RAMP;
    if (ramp && m->V < 3) return gma_errorf("key model.embed_init: \"ramp\" needs at least 3 tokens (vocabulary %d)", m->V);
    m->wte = pt_add2(pt, "tok_emb.weight", m->V, m->D, ramp ? INIT_RAMP : INIT_NORMAL, estd, GROUP_EMBED);
    m->wpe = mk->pos == POS_LEARNED ? pt_add2(pt, "pos_emb.weight", m->Nmax, m->D, INIT_NORMAL, std, GROUP_EMBED) : -1;
    if (mc->task == MODEL_CLASSIFY && clsmodel_create(&m->cls, c, pt) != 0) return -1; /* the stem's tensors */
    m->blocks = xcalloc(m->L, sizeof(Block));
    char name[128], pre[64];
    for (int l = 0; l < m->L; l++) {
        Block *b = &m->blocks[l];
        snprintf(pre, sizeof pre, "blocks.%d", l);
#define NM(s) (snprintf(name, sizeof name, "%s.%s", pre, s), name)
        b->ln1w = pt_add1(pt, NM("ln1.weight"), m->D, INIT_ONE, 0, GROUP_NORM);
        b->ln1b = m->rms ? -1 : pt_add1(pt, NM("ln1.bias"), m->D, INIT_ZERO, 0, GROUP_BIAS);
        const MixerVT *vt = mixer_of_layer(c, l);
        if (!vt) return gma_errorf("key model.mixer: unknown mixer \"%s\"", cfg_layer_mixer(c, l));
        snprintf(name, sizeof name, "%s.mixer", pre);
        b->mixer = vt->create(c, l, pt, name);
        if (!b->mixer) return -1;
        if (mk->pos == POS_ROPE && vt->rope_ok) { /* rotary positions on q, k (docs/model.md §1) */
            if (b->mixer->d % 2)
                return gma_errorf("key model.pos: \"rope\" turns pairs of a head's channels, and layer %d's head width "
                                  "%d (model.qkv_dim / model.n_heads) is odd", l, b->mixer->d);
            b->mixer->rope = 1;
        }
        b->ln2w = b->ln2b = b->fcw = b->fcb = b->projw = b->projb = b->upw = -1;
        if (m->mlp && m->swiglu) { /* FLA's GatedMLP: gate, up [F, D], down [D, F], no biases */
            b->ln2w = pt_add1(pt, NM("ln2.weight"), m->D, INIT_ONE, 0, GROUP_NORM);
            b->ln2b = m->rms ? -1 : pt_add1(pt, NM("ln2.bias"), m->D, INIT_ZERO, 0, GROUP_BIAS);
            b->fcw = pt_add2(pt, NM("mlp.gate.weight"), m->F, m->D, dense, std, GROUP_WEIGHT);
            b->upw = pt_add2(pt, NM("mlp.up.weight"), m->F, m->D, dense, std, GROUP_WEIGHT);
            b->projw = pt_add2(pt, NM("mlp.down.weight"), m->D, m->F, dense, ostd, GROUP_WEIGHT);
        } else if (m->mlp) {
            b->ln2w = pt_add1(pt, NM("ln2.weight"), m->D, INIT_ONE, 0, GROUP_NORM);
            b->ln2b = m->rms ? -1 : pt_add1(pt, NM("ln2.bias"), m->D, INIT_ZERO, 0, GROUP_BIAS);
            b->fcw = pt_add2(pt, NM("mlp.fc.weight"), m->F, m->D, dense, std, GROUP_WEIGHT);
            b->fcb = pt_add1(pt, NM("mlp.fc.bias"), m->F, bias_init, mk->mlp_bias_std, GROUP_BIAS);
            b->projw = pt_add2(pt, NM("mlp.proj.weight"), m->D, m->F, dense, ostd, GROUP_WEIGHT);
            b->projb = pt_add1(pt, NM("mlp.proj.bias"), m->D, bias_init, mk->mlp_bias_std, GROUP_BIAS);
        }
#undef NM
    }
    m->lnfw = pt_add1(pt, "ln_f.weight", m->D, INIT_ONE, 0, GROUP_NORM);
    m->lnfb = m->rms ? -1 : pt_add1(pt, "ln_f.bias", m->D, INIT_ZERO, 0, GROUP_BIAS);
    /* the language model's head: tok_emb (tied) or its own [V, D] (model.tie_embeddings false) */
    m->wout = rc->tie_embeddings ? m->wte : pt_add2(pt, "lm_head.weight", m->V, m->D, INIT_NORMAL, std, GROUP_WEIGHT);
    if (m->cls && clsmodel_add_head(m->cls, c, pt, m->D, m->F, std) != 0) return -1;
    m->x = xmodel_build(c, pt, m->D, m->L);
    return 0;
}

int model_extend_window(Config *c, int N, const char *given, const char *src) {
    char opt[96];
    if (given) snprintf(opt, sizeof opt, "%s", given);
    else snprintf(opt, sizeof opt, "--seq-len %d", N);
    ModelCfg *mc = &c->model;
    if (N <= mc->max_seq_len) return 0;
    if (model_keys(c)->pos == POS_LEARNED)
        return gma_errorf("%s is longer than model.max_seq_len %d: model.pos \"learned\" of checkpoint %s has one row of "
                          "pos_emb.weight per position, none past %d (positions \"sinusoidal\", \"none\" or \"rope\" extend)",
                          opt, mc->max_seq_len, src, mc->max_seq_len);
    if (mc->task == MODEL_CLASSIFY)
        return gma_errorf("%s is longer than model.max_seq_len %d of checkpoint %s: a classifier is evaluated within it", opt,
                          mc->max_seq_len, src);
    for (int l = 0; l < mc->n_layers; l++) {
        const MixerVT *vt = mixer_of_layer(c, l);
        if (vt && vt->fixed_window)
            return gma_errorf("%s is longer than model.max_seq_len %d: layer %d's mixer %s of checkpoint %s: %s",
                              opt, mc->max_seq_len, l, vt->name, src, vt->fixed_window);
    }
    mc->max_seq_len = N;
    return 0;
}

/* The language model's head in chunks of rows (docs/model.md §1): model.head_chunk rows, or
 * with 0 as many rows as HEAD_AUTO_BYTES of logits hold (a multiple of 64 from 64 rows up). */
#define HEAD_AUTO_BYTES ((size_t)64 << 20)
int model_head_rows(const Model *m, size_t R) {
    size_t rows = m->cfg.model.head_chunk > 0 ? (size_t)m->cfg.model.head_chunk
                                               : HEAD_AUTO_BYTES / ((size_t)GMA_MAX(m->V, 1) * sizeof(real));
    if (!m->cfg.model.head_chunk && rows >= 64) rows -= rows % 64;
    rows = GMA_MAX(rows, 1);
    return (int)GMA_MIN(rows, GMA_MAX(R, 1));
}

/* The backbone runs S sequences of Nt positions for batches of B x N: a classifier's B
 * examples of n_seq sequences each, with its CLS slot in front (model_cls.h) */
static int seqs_per_row(const Model *m) { return m->cls ? m->cls->n_seq : 1; }
static int slots(const Model *m) { return m->cls ? m->cls->pool_cls : 0; }

/* Activation plan in reals (model_alloc carves one allocation in this order). */
static size_t plan_total(const Model *m, int Bmax, int Nmax) {
    /* a classifier's logits are per example */
    int S = Bmax * seqs_per_row(m), Nt = Nmax + slots(m);
    size_t R = (size_t)S * Nt, D = m->D, F = m->F;
    size_t LR = m->cls ? (size_t)Bmax : R, LV = m->cls ? (size_t)m->cls->C : (size_t)m->V;
    size_t LH = m->cls ? LR : (size_t)model_head_rows(m, R); /* rows of logits kept (at most R) */
    size_t total = (m->L + 1) * R * D + 2 * R + R * D + LH * LV + 2 * LR; /* resid, lnf stats, lnf, logits, loss, valid */
    if (LH < LR && !m->infer) total += LV * D; /* head_gw */
    size_t scratch = 0;
    for (int l = 0; l < m->L; l++) {
        Mixer *mx = m->blocks[l].mixer;
        total += 4 * R * D + 4 * R + (2 + m->swiglu) * R * F + mx->vt->act_size(mx, S, Nt); /* swiglu: gate, up, h */
        scratch = GMA_MAX(scratch, mx->vt->scratch_size(mx, S, Nt));
    }
    int bwd = !m->infer; /* the backward's buffers */
    total += bwd * (2 * R * D + (1 + m->swiglu) * R * F) + scratch; /* dresid, dtmp, dfc (swiglu: dh, dgate), scratch */
    return total + (m->cls ? clsmodel_act_size(m->cls, Bmax, Nt, m->infer) : 0);
}

double model_memory_available(const char **what) {
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    double have = pages > 0 && psz > 0 ? (double)pages * (double)psz : 0;
    *what = "memory of this machine";
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        long vm = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (f) {
            if (fscanf(f, "%ld", &vm) != 1) vm = 0;
            fclose(f);
        }
        double left = (double)rl.rlim_cur - (double)vm * (psz > 0 ? psz : 4096);
        if (have <= 0 || left < have) have = left > 0 ? left : 1, *what = "address-space limit (ulimit -v) left";
    }
    return have;
}

/* the largest gma.n_components of the layers with a GMA path */
static int gma_kc_max(const Config *c) {
    int k = 0;
    for (int l = 0; l < c->model.n_layers; l++) {
        const MixerVT *vt = mixer_of_layer(c, l);
        if (vt && vt->gma_layer) k = GMA_MAX(k, gma_layer_kc(c, l));
    }
    return k;
}

void model_memory_plan(const Model *m, int Bmax, int Nmax, MemPlan *p) {
    memset(p, 0, sizeof *p);
    /* rough sizes in double first: the size_t plan could wrap for absurd shapes */
    double R = p->rows = (double)Bmax * seqs_per_row(m) * (Nmax + slots(m));
    double rough = R * ((double)m->L * (6.0 * m->D + 2.0 * m->F)) + fmin(R, (double)model_head_rows(m, SIZE_MAX)) * (double)m->V;
    p->params = (m->infer ? 1.0 : 4.0) * (double)m->pt.total * sizeof(real); /* parameters, gradients, two moments */
    /* the exact plan only where its sizes hold: the mixers' sizes take B x N rows as an int */
    int exact = rough * sizeof(real) <= 1e18 && R <= INT_MAX;
    p->acts = !exact ? rough * sizeof(real) : (double)plan_total(m, Bmax, Nmax) * sizeof(real);
    /* the encoder and the cross sub-layers of a cross model: buffers of their own (model_cross.c) */
    double cross = !exact ? 0 : (double)xmodel_act_size(m->x, Bmax, Nmax) * sizeof(real);
    p->acts += cross;
    /* and for a while: model_init_params' host copy of the parameters, the sinusoidal table (host and device) */
    double table = model_keys(&m->cfg)->pos == POS_SINUSOIDAL ? 2.0 * m->Nmax * m->D * sizeof(real) : 0;
    p->total = p->params + p->acts + (double)m->pt.total * sizeof(real) + table;
    /* the mixer whose activations (and scratch, the one buffer of its kind: GMA's grows with
     * its components) weigh most, when they are most of the plan */
    int S = Bmax * seqs_per_row(m), Nt = Nmax + slots(m);
    double top = 0;
    const char *name = NULL;
    int routed = 0; /* the heaviest mixer has routing components (gma, auto): gma.n_components drives it */
    for (int l = 0; l < m->L && exact; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        double a = 0;
        for (int j = 0; j < m->L; j++)
            if (m->blocks[j].mixer->vt == mx->vt) a += (double)mx->vt->act_size(mx, S, Nt) * sizeof(real);
        a += (double)mx->vt->scratch_size(mx, S, Nt) * sizeof(real);
        if (a > top) top = a, name = mx->vt->name, routed = mx->vt->health != NULL;
    }
    const Config *c = &m->cfg;
    double pos = (double)m->Nmax * m->D * sizeof(real) * (table > 0 ? 2 : m->wpe >= 0 ? 5 : 0);
    if (pos > 0.5 * p->total)
        snprintf(p->drivers, sizeof p->drivers, "mostly the position table: model.max_seq_len %d x model.d_model %d", m->Nmax,
                 m->D);
    else if (cross > 0.5 * p->acts)
        snprintf(p->drivers, sizeof p->drivers, "mostly the cross layers: cross.ctx_len %d, cross.enc_layers %d and "
                 "model.n_layers %d (cross.mixer %s)", m->x->M, m->x->E, m->x->L, cfg_enum_name(c, "cross.mixer"));
    else if (p->params > p->acts)
        snprintf(p->drivers, sizeof p->drivers, "mostly parameters: model.vocab_size %d x model.d_model %d, model.n_layers %d x "
                 "model.d_ff %d", m->V, m->D, m->L, m->F);
    else if (name && top > 0.5 * p->acts && routed)
        snprintf(p->drivers, sizeof p->drivers, "mostly the gma layers: gma.n_components %d x model.n_heads %d per token",
                 gma_kc_max(c), m->H);
    else if (name && top > 0.5 * p->acts)
        snprintf(p->drivers, sizeof p->drivers, "mostly the %s layers (model.mixer) x model.n_heads %d", name, m->H);
    else
        snprintf(p->drivers, sizeof p->drivers, "model.n_layers %d x model.d_model %d, model.vocab_size %d", m->L, m->D, m->V);
    p->avail = model_memory_available(&p->avail_what);
}

int model_check_memory(const Model *m, int Bmax, int Nmax) {
    MemPlan p;
    return model_check_memory_plan(m, Bmax, Nmax, &p);
}

int model_check_memory_plan(const Model *m, int Bmax, int Nmax, MemPlan *plan) {
    model_memory_plan(m, Bmax, Nmax, plan);
    const MemPlan p = *plan;
    if (g_ops->device == OPS_CPU && p.avail > 0 && p.total > p.avail) /* device memory: the backend reports its own failure */
        return gma_errorf("batch %d x %d (train.batch_size x train.seq_len) plans %.1f GiB: parameters%s %.1f, activations %.1f "
                          "(%s) -> more than the %.1f GiB of %s",
                          Bmax, Nmax, p.total / 1073741824.0, m->infer ? "" : ", gradients and optimiser moments",
                          p.params / 1073741824.0, p.acts / 1073741824.0, p.drivers,
                          p.avail / 1073741824.0, p.avail_what);
    if (p.rows > INT_MAX) /* the layers index the B x N rows with an int */
        return gma_errorf("batch %d x %d (train.batch_size x train.seq_len) is %.0f rows, more than the %d a model runs", Bmax,
                          Nmax, p.rows, INT_MAX);
    return 0;
}

void model_alloc(Model *m, int Bmax, int Nmax) {
    size_t P = m->pt.total;
    m->params = g_ops->alloc(P * sizeof(real));
    if (!m->infer) {
        m->grads = g_ops->alloc(P * sizeof(real));
        m->m = g_ops->alloc(P * sizeof(real));
        m->v = g_ops->alloc(P * sizeof(real));
    }
    m->Bmax = Bmax;
    m->Nmax_act = Nmax;
    int S = Bmax * seqs_per_row(m), Nt = Nmax + slots(m);
    size_t R = (size_t)S * Nt, D = m->D, F = m->F;
    size_t LR = m->cls ? (size_t)Bmax : R, LV = m->cls ? (size_t)m->cls->C : (size_t)m->V;
    /* plan: sizes first (plan_total), then one allocation carved in the same order */
    size_t total = plan_total(m, Bmax, Nmax);
    size_t scratch = 0;
    for (int l = 0; l < m->L; l++) scratch = GMA_MAX(scratch, m->blocks[l].mixer->vt->scratch_size(m->blocks[l].mixer, S, Nt));
    m->act_bytes = total * sizeof(real);
    real *p = m->actmem = g_ops->alloc(total * sizeof(real));
#define TAKE(n) (p += (n), p - (n))
    m->resid = xcalloc(m->L + 1, sizeof(real *));
    for (int l = 0; l <= m->L; l++) m->resid[l] = TAKE(R * D);
    m->lnf = TAKE(R * D);
    m->lnf_mean = TAKE(R);
    m->lnf_rstd = TAKE(R);
    size_t LH = m->cls ? LR : (size_t)(m->head_rows = model_head_rows(m, R));
    m->logits = TAKE(LH * LV);
    m->head_gw = LH < LR && !m->infer ? TAKE(LV * D) : NULL;
    m->loss_rows = TAKE(LR);
    m->valid_rows = TAKE(LR);
    for (int l = 0; l < m->L; l++) {
        Block *b = &m->blocks[l];
        b->ln1 = TAKE(R * D);
        b->ln1_mean = TAKE(R);
        b->ln1_rstd = TAKE(R);
        b->mix = TAKE(R * D);
        b->mid = TAKE(R * D);
        b->ln2 = TAKE(R * D);
        b->ln2_mean = TAKE(R);
        b->ln2_rstd = TAKE(R);
        b->fc = TAKE((1 + m->swiglu) * R * F);
        b->gelu = TAKE(R * F);
        b->act = TAKE(b->mixer->vt->act_size(b->mixer, S, Nt));
    }
    if (!m->infer) {
        m->dresid = TAKE(R * D);
        m->dtmp = TAKE(R * D);
        m->dfc = TAKE((1 + m->swiglu) * R * F);
    }
    m->scratch = TAKE(scratch);
    if (m->cls) clsmodel_carve(m->cls, &p, Bmax, Nt, m->infer);
#undef TAKE
    m->tok = g_ops->alloc(R * sizeof(int32_t));
    m->tgt = g_ops->alloc(R * sizeof(int32_t));
    m->pred_host = xcalloc(R, sizeof(int32_t));
    if (model_keys(&m->cfg)->pos == POS_SINUSOIDAL) {
        real *host = xcalloc((size_t)m->Nmax * D, sizeof(real));
        pos_sinusoidal(host, m->Nmax, m->D);
        m->pos_fixed = g_ops->alloc((size_t)m->Nmax * D * sizeof(real));
        g_ops->to_device(m->pos_fixed, host, (size_t)m->Nmax * D * sizeof(real));
        free(host);
    }
    xmodel_alloc(m->x, Bmax, Nmax);
}

void pos_sinusoidal(real *pe, int N, int D) {
    /* docs/model.md §1: column 2i holds sin(n w_i), column 2i+1 cos(n w_i), w_i = 10000^(-2i/D) */
    for (int n = 0; n < N; n++)
        for (int j = 0; j < D; j++) {
            double w = exp(-(double)(j / 2 * 2) * log(10000.0) / D), a = (double)n * w;
            pe[(size_t)n * D + j] = (real)(j % 2 ? cos(a) : sin(a));
        }
}

void model_init_params(Model *m, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    real *host = xcalloc(m->pt.total, sizeof(real));
    pt_init(&m->pt, host, &rng);
    for (int l = 0; l < m->L; l++) {
        Mixer *mx = m->blocks[l].mixer;
        if (mx->vt->init) mx->vt->init(mx, host, &rng);
    }
    g_ops->to_device(m->params, host, m->pt.total * sizeof(real));
    free(host);
}

void model_free(Model *m) {
    xmodel_free(m->x);
    for (int l = 0; l < m->L; l++) m->blocks[l].mixer->vt->destroy(m->blocks[l].mixer);
    free(m->blocks);
    if (m->params) {
        g_ops->free(m->params);
        if (m->grads) g_ops->free(m->grads);
        if (m->m) g_ops->free(m->m);
        if (m->v) g_ops->free(m->v);
        g_ops->free(m->actmem);
        g_ops->free(m->tok);
        g_ops->free(m->tgt);
    }
    if (m->pos_fixed) g_ops->free(m->pos_fixed);
    clsmodel_free(m->cls);
    free(m->resid);
    free(m->pred_host);
    if (m->kl_rows) g_ops->free(m->kl_rows);
    pt_free(&m->pt);
    memset(m, 0, sizeof *m);
}

size_t model_param_count(const Model *m) { return pt_count_trained(&m->pt); }

/* a model allocated for inference has nothing a backward or the optimiser could use:
 * calling them is a program error */
static void need_training_state(const Model *m, const char *what) {
    if (!m->infer) return;
    fprintf(stderr, "%s: the model is allocated for inference only (no gradients or backward buffers)\n", what);
    abort();
}

void model_zero_grad(Model *m) {
    need_training_state(m, "model_zero_grad");
    g_ops->zero(m->grads, m->pt.total * sizeof(real));
}

#define PP(i) PT_PTR(m->params, &m->pt, (i))
#define GG(i) PT_PTR(m->grads, &m->pt, (i))
/* a tensor the recipe may leave out (the norms' and the MLP's biases): NULL for index -1 */
#define PPB(i) ((i) >= 0 ? PP(i) : NULL)
#define GGB(i) ((i) >= 0 ? GG(i) : NULL)
/* model.norm "rmsnorm": the LayerNorm ops without mean (and bias) are RMSNorm (ops.h) */
static real *norm_mean(const Model *m, real *mean) { return m->rms ? NULL : mean; }

real *model_pos_table(const Model *m) { return m->wpe >= 0 ? PP(m->wpe) : m->pos_fixed; }
/* where the position table's gradient goes (NULL unless learned) */
static real *pos_grad(const Model *m) { return m->wpe >= 0 ? GG(m->wpe) : NULL; }

int model_pos_row(const Model *m, int t) { return m->x && m->x->own_pos && t >= m->x->M ? t - m->x->M : t; }

/* The embedded window [B,N,D] of m->tok into r0: tokens plus positions (pos_row) */
static void embed_window(Model *m, real *r0, int B, int N) {
    const real *pos = model_pos_table(m);
    int M = m->x ? m->x->M : 0;
    if (!pos || model_pos_row(m, M) == M || N <= M) {
        g_ops->embed_forward(r0, m->tok, PP(m->wte), pos, B, N, m->D);
        return;
    }
    size_t D = m->D;
    g_ops->embed_forward(r0, m->tok, PP(m->wte), NULL, B, N, m->D);
    for (int b = 0; b < B; b++) {
        g_ops->axpy(r0 + (size_t)b * N * D, 1, pos, (size_t)M * D);
        g_ops->axpy(r0 + ((size_t)b * N + M) * D, 1, pos, (size_t)(N - M) * D);
    }
}

/* embed_window's backward from d [B,N,D]: the token embeddings' and (learned) positions' gradients */
static void embed_window_backward(Model *m, const real *d, int B, int N) {
    real *pg = pos_grad(m);
    int M = m->x ? m->x->M : 0;
    if (!pg || model_pos_row(m, M) == M || N <= M) {
        g_ops->embed_backward(GG(m->wte), pg, d, m->tok, B, N, m->D);
        return;
    }
    size_t D = m->D;
    g_ops->embed_backward(GG(m->wte), NULL, d, m->tok, B, N, m->D);
    for (int b = 0; b < B; b++) {
        g_ops->axpy(pg, 1, d + (size_t)b * N * D, (size_t)M * D);
        g_ops->axpy(pg, 1, d + ((size_t)b * N + M) * D, (size_t)(N - M) * D);
    }
}

/* The LayerNorm that reads the residual stream after block l: the next block's ln1, or
 * ln_f after the last (l = -1: before the first block) */
typedef struct {
    real *out, *mean, *rstd;
    const real *w, *b;
} LnSite;
static LnSite ln_after(Model *m, int l) {
    if (l + 1 < m->L) {
        Block *n = &m->blocks[l + 1];
        return (LnSite){n->ln1, norm_mean(m, n->ln1_mean), n->ln1_rstd, PP(n->ln1w), PPB(n->ln1b)};
    }
    return (LnSite){m->lnf, norm_mean(m, m->lnf_mean), m->lnf_rstd, PP(m->lnfw), PPB(m->lnfb)};
}
/* resid[l + 1] = sum = a + b and the LayerNorm after block l over it, in one op */
static void add_next_ln(Model *m, int l, real *sum, const real *a, const real *b, int R) {
    LnSite n = ln_after(m, l);
    g_ops->add_layernorm_forward(sum, n.out, n.mean, n.rstd, a, b, n.w, n.b, R, m->D);
}

/* the SwiGLU MLP's hidden rows (model.mlp_act "swiglu", docs/model.md §1): gate and up
 * rows [R, F] each into b->fc, h = silu(gate) * up into b->gelu */
static void swiglu_forward(Model *m, Block *b, int R) {
    size_t RF = (size_t)R * m->F;
    real *gate = b->fc, *up = gate + RF;
    linear_forward(gate, b->ln2, PP(b->fcw), NULL, R, m->D, m->F);
    linear_forward(up, b->ln2, PP(b->upw), NULL, R, m->D, m->F);
    g_ops->gate_silu_forward(b->gelu, up, gate, RF);
}
/* its backward from dh [R, F] (in m->dfc): dtmp = d ln2 (written), the gate's and up's
 * weight gradients; b->gelu (h, read already by down's backward) takes d up */
static void swiglu_backward(Model *m, Block *b, const real *dh, int R) {
    size_t RF = (size_t)R * m->F;
    real *gate = b->fc, *up = gate + RF, *dgate = m->dfc + RF, *dup = b->gelu;
    g_ops->zero(dgate, sizeof(real) * RF);
    g_ops->zero(dup, sizeof(real) * RF);
    g_ops->gate_silu_backward(dup, dgate, dh, up, gate, RF);
    linear_backward_set(m->dtmp, GG(b->fcw), NULL, dgate, b->ln2, PP(b->fcw), R, m->D, m->F);
    linear_backward(m->dtmp, GG(b->upw), NULL, dup, b->ln2, PP(b->upw), R, m->D, m->F);
}

/* Each residual add is fused with the LayerNorm that reads its sum (ln2 of its block, the
 * next ln1, ln_f). */
void model_blocks_forward(Model *m, const MixerCtx *ctx, const DecodeState *dec) {
    const ModelCfg *mc = &m->cfg.model;
    if (!dec) drop_site(m, m->resid[0], 0, GMA_DROP_EMBED, mc->dropout, ctx->B, ctx->N, m->D);
    int R = ctx->B * ctx->N, D = m->D, F = m->F;
    LnSite first = ln_after(m, -1);
    g_ops->layernorm_forward(first.out, first.mean, first.rstd, m->resid[0], first.w, first.b, R, D);
    for (int l = 0; l < m->L; l++) {
        Block *b = &m->blocks[l];
        if (dec) /* a cross model's decoder positions count from the first query */
            b->mixer->vt->decode(b->mixer, b->mix, b->ln1, m->params, dec->layer[l], dec->B,
                                 dec->pos - (m->x ? m->x->M : 0), dec->W, dec->act, dec->scratch);
        else {
            GmaDrop ga, gn;
            MixerCtx lc = *ctx;
            lc.attn_drop = site_drop(m, &ga, l, GMA_DROP_ATTN, mc->attn_dropout);
            lc.noise = site_noise(m, &gn, l, ctx->training);
            b->mixer->vt->forward(b->mixer, &lc, b->mix, b->ln1, m->params, b->act, m->scratch);
            drop_site(m, b->mix, l, GMA_DROP_MIXER, mc->dropout, ctx->B, ctx->N, m->D);
        }
        if (m->x) xmodel_block_forward(m->x, m->params, l, m->resid[l], b->mix, ctx->B, ctx->N, dec != NULL);
        if (!m->mlp) {
            add_next_ln(m, l, m->resid[l + 1], m->resid[l], b->mix, R);
            continue;
        }
        g_ops->add_layernorm_forward(b->mid, b->ln2, norm_mean(m, b->ln2_mean), b->ln2_rstd, m->resid[l], b->mix,
                                     PP(b->ln2w), PPB(b->ln2b), R, D);
        if (m->swiglu) swiglu_forward(m, b, R);
        else {
            linear_forward(b->fc, b->ln2, PP(b->fcw), NULL, R, D, F);
            g_ops->bias_gelu_forward(b->fc, b->gelu, PP(b->fcb), R, F);
        }
        drop_site(m, b->gelu, l, GMA_DROP_MLP_HIDDEN, model_keys(&m->cfg)->mlp_hidden_dropout, ctx->B, ctx->N, F);
        linear_forward(m->resid[l + 1], b->gelu, PP(b->projw), PPB(b->projb), R, F, D);
        drop_site(m, m->resid[l + 1], l, GMA_DROP_MLP, mc->dropout, ctx->B, ctx->N, D);
        add_next_ln(m, l, m->resid[l + 1], m->resid[l + 1], b->mid, R);
    }
}

/* d lnf in m->dtmp -> d resid[0] in m->dresid (overwritten), parameter gradients accumulated */
static void blocks_backward(Model *m, const MixerCtx *ctx) {
    int R = ctx->B * ctx->N, D = m->D, F = m->F;
    const ModelCfg *mc = &m->cfg.model;
    GmaDrop gd;
    g_ops->zero(m->dresid, sizeof(real) * (size_t)R * D);
    g_ops->layernorm_backward(m->dresid, GG(m->lnfw), GGB(m->lnfb), m->dtmp, m->resid[m->L], PP(m->lnfw),
                              norm_mean(m, m->lnf_mean), m->lnf_rstd, R, D);
    for (int l = m->L - 1; l >= 0; l--) {
        Block *b = &m->blocks[l];
        if (m->mlp) {
            /* resid[l+1] = mid + proj(gelu(fc(ln2(mid)))) (swiglu: down(silu(gate) * up)) */
            real *dgelu = m->dfc, *dout = m->dresid;
            if (site_drop(m, &gd, l, GMA_DROP_MLP, mc->dropout)) { /* the MLP output's mask, in dtmp */
                g_ops->dropout(m->dtmp, m->dresid, ctx->B, (size_t)ctx->N * D, &gd);
                dout = m->dtmp;
            }
            linear_backward_set(dgelu, GG(b->projw), GGB(b->projb), dout, b->gelu, PP(b->projw), R, F, D);
            drop_site(m, dgelu, l, GMA_DROP_MLP_HIDDEN, model_keys(&m->cfg)->mlp_hidden_dropout, ctx->B, ctx->N, F);
            if (m->swiglu) swiglu_backward(m, b, dgelu, R);
            else {
                g_ops->bias_gelu_backward(dgelu, GG(b->fcb), dgelu, b->fc, R, F); /* in place: d pre-activation */
                linear_backward_set(m->dtmp, GG(b->fcw), NULL, dgelu, b->ln2, PP(b->fcw), R, D, F);
            }
            g_ops->layernorm_backward(m->dresid, GG(b->ln2w), GGB(b->ln2b), m->dtmp, b->mid, PP(b->ln2w),
                                      norm_mean(m, b->ln2_mean), b->ln2_rstd, R, D);
        }
        /* a cross model: mid = u + X(LN3(u), C), u = resid[l] + mixer(...): dresid becomes d u */
        if (m->x) xmodel_block_backward(m->x, m->params, m->grads, l, m->dresid, m->dtmp, ctx->B, ctx->N);
        /* mid = resid[l] + mixer(ln1(resid[l])) */
        g_ops->zero(m->dtmp, sizeof(real) * (size_t)R * D);
        const real *dmix = m->dresid;
        if (site_drop(m, &gd, l, GMA_DROP_MIXER, mc->dropout)) { /* b->mix is free in the backward */
            g_ops->dropout(b->mix, m->dresid, ctx->B, (size_t)ctx->N * D, &gd);
            dmix = b->mix;
        }
        GmaDrop ga, gn;
        MixerCtx lc = *ctx;
        lc.attn_drop = site_drop(m, &ga, l, GMA_DROP_ATTN, mc->attn_dropout);
        lc.noise = site_noise(m, &gn, l, ctx->training);
        b->mixer->vt->backward(b->mixer, &lc, m->dtmp, dmix, b->ln1, m->params, m->grads, b->act, m->scratch);
        g_ops->layernorm_backward(m->dresid, GG(b->ln1w), GGB(b->ln1b), m->dtmp, m->resid[l], PP(b->ln1w),
                                  norm_mean(m, b->ln1_mean), b->ln1_rstd, R, D);
    }
    drop_site(m, m->dresid, 0, GMA_DROP_EMBED, mc->dropout, ctx->B, ctx->N, D);
}

/* The teacher's forward for distillation: tokens -> its lnf, as an evaluation forward
 * (no dropout; nothing kept for a backward); its head runs chunk by chunk in the model's */
static void teacher_features(Model *t, const int32_t *tok, int B, int N) {
    t->B = B;
    t->N = N;
    t->keymask = NULL;
    model_drop_start(t, 0, 0);
    g_ops->to_device(t->tok, tok, sizeof(int32_t) * (size_t)B * N);
    real *wpe = t->wpe >= 0 ? PT_PTR(t->params, &t->pt, t->wpe) : t->pos_fixed;
    g_ops->embed_forward(t->resid[0], t->tok, PT_PTR(t->params, &t->pt, t->wte), wpe, B, N, t->D);
    MixerCtx ctx = {.B = B, .N = N, .causal = t->causal};
    model_blocks_forward(t, &ctx, NULL);
}

int model_set_teacher(Model *m, Model *t, double weight, double T) {
    if (t && m->x) return gma_errorf("key train.distill.teacher: distillation into a cross model (cross.mixer) is not supported");
    if (m->kl_rows) g_ops->free(m->kl_rows);
    m->kl_rows = NULL;
    m->teacher = NULL;
    if (!t) return 0;
    if (m->cls || t->cls) return gma_errorf("distillation: teacher and student must both be language models");
    if (t->V != m->V) return gma_errorf("distillation: the teacher's vocabulary is %d tokens, the model's %d", t->V, m->V);
    if (!t->params || t->Bmax < m->Bmax || t->Nmax_act < m->Nmax_act || t->head_rows < m->head_rows)
        return gma_errorf("distillation: the teacher is planned for %dx%d rows (head chunks of %d), the model for %dx%d (%d)",
                          t->Bmax, t->Nmax_act, t->head_rows, m->Bmax, m->Nmax_act, m->head_rows);
    if (t->causal != m->causal)
        return gma_errorf("distillation: the teacher's attention is %s, the model's %s", t->causal ? "causal" : "bidirectional",
                          m->causal ? "causal" : "bidirectional");
    m->teacher = t;
    m->distill_w = (real)weight;
    m->distill_T = (real)T;
    m->kl_rows = g_ops->alloc(sizeof(real) * (size_t)m->Bmax * m->Nmax_act);
    return 0;
}

/* The language model's head, logits = lnf tok_emb^T, and its cross-entropy over chunks of
 * head_rows rows (docs/model.md §1); with want_acc the argmax of each row goes to m->tok
 * (the caller restores the tokens). A training forward leaves the loss gradient (softmax -
 * onehot) in logits in the same pass as the loss, so the backward does not take the softmax
 * again; evaluation and generation keep the logits. When the rows do not fit one chunk,
 * a training forward also runs the head's backward products on each chunk while its
 * logits are there (dtmp = G tok_emb, head_gw = G^T lnf, unscaled: model_backward scales
 * them), so no more than one chunk of logits ever exists. */
static void head_forward(Model *m, int R, int want_acc, int training) {
    int D = m->D, V = m->V, Rc = GMA_MIN(m->head_rows, R);
    Model *t = training ? m->teacher : NULL; /* distillation: the teacher's chunk of logits beside this one's */
    m->logits_grad = training && Rc == R;
    m->head_done = training && Rc < R;
    for (int r0 = 0; r0 < R; r0 += Rc) {
        int L = GMA_MIN(Rc, R - r0);
        const real *x = m->lnf + (size_t)r0 * D;
        g_ops->matmul(m->logits, x, PP(m->wout), L, V, D, 0, 1, 1, 0);
        if (want_acc) g_ops->argmax_rows(m->tok + r0, m->logits, L, V); /* reuse the token buffer */
        if (t) { /* teacher logits of the chunk -> w T (q - p), the KL term's gradient */
            g_ops->matmul(t->logits, t->lnf + (size_t)r0 * t->D, PT_PTR(t->params, &t->pt, t->wout), L, V, t->D, 0, 1, 1, 0);
            g_ops->distill_grad(m->kl_rows + r0, t->logits, m->logits, m->tgt + r0, L, V, m->distill_T,
                                m->distill_w * m->distill_T);
        }
        if (training) g_ops->xent_grad(m->loss_rows + r0, m->valid_rows + r0, m->logits, m->tgt + r0, L, V);
        else g_ops->xent_forward(m->loss_rows + r0, m->valid_rows + r0, m->logits, m->tgt + r0, L, V);
        if (t && m->distill_w > 0) g_ops->axpy(m->logits, 1, t->logits, (size_t)L * V);
        if (m->head_done) {
            g_ops->matmul(m->dtmp + (size_t)r0 * D, m->logits, PP(m->wout), L, D, V, 0, 0, 1, 0);
            g_ops->matmul(m->head_gw, m->logits, x, V, D, L, 1, 0, 1, r0 > 0);
        }
        m->logits_row0 = r0;
    }
}

/* d(scale * summed loss) of the head: dlnf into dtmp, tok_emb's part added to its gradient.
 * After a chunked training forward the products are there and are scaled; after one chunk
 * they are taken here from the logits; after a chunked evaluation forward each chunk's
 * logits are computed again. */
static void head_backward(Model *m, int R, real scale) {
    int D = m->D, V = m->V, Rc = GMA_MIN(m->head_rows, R);
    if (m->head_done) {
        g_ops->scale(m->dtmp, scale, (size_t)R * D);
        g_ops->axpy(GG(m->wout), scale, m->head_gw, (size_t)V * D);
        m->head_done = 0; /* the blocks' backward overwrites dtmp: a second backward takes the logits again */
        return;
    }
    for (int r0 = 0; r0 < R; r0 += Rc) {
        int L = GMA_MIN(Rc, R - r0);
        const real *x = m->lnf + (size_t)r0 * D;
        real alpha = scale; /* after a training forward logits hold softmax - onehot */
        if (!m->logits_grad) {
            if (Rc < R) g_ops->matmul(m->logits, x, PP(m->wout), L, V, D, 0, 1, 1, 0);
            g_ops->xent_backward(m->logits, m->tgt + r0, L, V, scale);
            alpha = 1;
        }
        g_ops->matmul(m->dtmp + (size_t)r0 * D, m->logits, PP(m->wout), L, D, V, 0, 0, alpha, 0);
        g_ops->matmul(GG(m->wout), m->logits, x, V, D, L, 1, 0, alpha, 1);
    }
}

/* model_forward of a classifier (model_cls.h): tok [B*n_seq, N], labels [B] */
static int forward_cls(Model *m, const int32_t *tok, const int32_t *labels, int B, int N, const uint8_t *keymask,
                       LossStats *st, int training, long step) {
    ClsModel *k = m->cls;
    if (B > m->Bmax || N > m->Nmax_act)
        return gma_errorf("batch of %d examples x %d tokens exceeds the planned %dx%d", B, N, m->Bmax, m->Nmax_act);
    int Nt = N + k->pool_cls, S = B * k->n_seq;
    if (Nt > m->Nmax)
        return gma_errorf("sequence length %d%s is longer than model.max_seq_len = %d", N,
                          k->pool_cls ? " plus the CLS slot" : "", m->Nmax);
    if (clsmodel_prepare(k, tok, keymask, labels, B, N, m->V) != 0) return -1;
    m->B = S;
    m->N = Nt;
    m->keymask = clsmodel_keymask(k); /* what the mixers see (buffers and routing statistics too) */
    model_drop_start(m, training, step);
    g_ops->to_device(m->tok, k->tok_host, sizeof(int32_t) * (size_t)S * Nt);
    g_ops->to_device(m->tgt, labels, sizeof(int32_t) * B);
    if (clsmodel_embed(k, m->resid[0], m->tok, PP(m->wte), model_pos_table(m), &m->pt, m->params, S, Nt, training) != 0)
        return -1;
    MixerCtx ctx = {.B = S, .N = Nt, .causal = m->causal, .keymask = m->keymask, .training = training, .step = step};
    model_blocks_forward(m, &ctx, NULL);
    GmaDrop gh;
    clsmodel_head_forward(k, m->logits, m->loss_rows, m->valid_rows, m->lnf, m->tgt, m->params, labels, m->pred_host, B, Nt,
                          site_drop(m, &gh, 0, GMA_DROP_HEAD, k->head_dropout), &st->loss_sum, &st->correct);
    st->count = B;
    st->kl_sum = 0;
    return 0;
}

int model_forward(Model *m, const int32_t *tok, const int32_t *tgt, int B, int N, const uint8_t *keymask,
                  int want_acc, LossStats *st, int training, long step) {
    if (training && m->infer) return gma_errorf("model_forward: a training forward on a model allocated for inference only");
    if (m->cls) return forward_cls(m, tok, tgt, B, N, keymask, st, training, step);
    if (B > m->Bmax || N > m->Nmax_act) return gma_errorf("batch %dx%d exceeds the planned %dx%d", B, N, m->Bmax, m->Nmax_act);
    if (N > m->Nmax) return gma_errorf("sequence length %d is longer than model.max_seq_len = %d", N, m->Nmax);
    for (size_t i = 0; i < (size_t)B * N; i++)
        if (tok[i] < 0 || tok[i] >= m->V)
            return gma_errorf("token id %d at position %zu is outside the vocabulary [0, %d)", tok[i], i, m->V);
    /* a cross model: the decoder and the head run over the N - cross.ctx_len query rows */
    int Nd = N;
    if (m->x && keymask) return gma_errorf("a cross model (cross.mixer) takes windows without padding masks");
    if (m->x && (Nd = xmodel_targets(m->x, tgt, B, N)) < 0) return -1;
    const int32_t *tgt_d = m->x ? m->x->tq_host : tgt;
    m->B = B;
    m->N = Nd;
    m->keymask = keymask;
    model_drop_start(m, training, step);
    int R = B * Nd;
    g_ops->to_device(m->tok, tok, sizeof(int32_t) * B * N);
    g_ops->to_device(m->tgt, tgt_d, sizeof(int32_t) * R);
    embed_window(m, m->resid[0], B, N);
    if (m->x) xmodel_encode(m->x, m->params, m->resid[0], B, N);
    MixerCtx ctx = {.B = B, .N = Nd, .causal = m->causal, .keymask = keymask, .training = training, .step = step};
    model_blocks_forward(m, &ctx, NULL);
    if (training && m->teacher) teacher_features(m->teacher, tok, B, N);
    head_forward(m, R, want_acc, training);
    st->correct = 0;
    if (want_acc) {
        g_ops->to_host(m->pred_host, m->tok, sizeof(int32_t) * R);
        g_ops->to_device(m->tok, tok, sizeof(int32_t) * B * N);
        for (int i = 0; i < R; i++) st->correct += tgt_d[i] >= 0 && m->pred_host[i] == tgt_d[i];
    }
    st->loss_sum = g_ops->sum(m->loss_rows, R);
    st->count = g_ops->sum(m->valid_rows, R);
    st->kl_sum = training && m->teacher ? g_ops->sum(m->kl_rows, R) : 0;
    return 0;
}

void model_backward(Model *m, double loss_scale) {
    need_training_state(m, "model_backward");
    int B = m->B, N = m->N, R = B * N, D = m->D; /* a classifier's B: its sequences, N its positions */
    if (m->cls) { /* the loss is the mean over the examples */
        GmaDrop gh;
        int ex = m->cls->n_ex;
        clsmodel_head_backward(m->cls, m->dtmp, m->logits, m->tgt, m->params, m->grads, ex, N, loss_scale / ex,
                               site_drop(m, &gh, 0, GMA_DROP_HEAD, m->cls->head_dropout));
    } else { /* the mean over the scored rows */
        double count = g_ops->sum(m->valid_rows, R);
        if (count <= 0) return;
        head_backward(m, R, (real)(m->lm_weight * loss_scale / count));
    }
    MixerCtx ctx = {.B = B, .N = N, .causal = m->causal, .keymask = m->keymask, .training = 1,
                    .aux_scale = loss_scale};
    if (m->x) xmodel_backward_begin(m->x);
    blocks_backward(m, &ctx);
    if (m->cls)
        clsmodel_embed_backward(m->cls, GG(m->wte), pos_grad(m), m->dresid, m->dtmp, m->tok, &m->pt, m->params, m->grads, B,
                                N);
    else if (m->x) /* the whole window's rows: context and queries */
        embed_window_backward(m, xmodel_backward_end(m->x, m->params, m->grads, m->dresid), B, m->x->T);
    else g_ops->embed_backward(GG(m->wte), pos_grad(m), m->dresid, m->tok, B, N, D);
}

/* ---------------- what the mixers declare: auxiliary losses, buffers ---------------- */
int model_gma_layers(const Model *m) {
    int n = 0;
    for (int l = 0; l < m->L; l++) n += m->blocks[l].mixer->vt->health != NULL;
    return n;
}

int model_aux_on(const Model *m) {
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        double w = 0;
        if (mx->vt->aux_loss) mx->vt->aux_loss(mx, &w);
        if (w > 0) return 1;
    }
    return 0;
}

double model_aux_loss(const Model *m, double *weighted) {
    double s = 0, sw = 0;
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        if (!mx->vt->aux_loss) continue;
        double w = 0, v = mx->vt->aux_loss(mx, &w);
        if (w > 0) s += v, sw += w * v;
    }
    if (weighted) *weighted = sw;
    return s;
}

int model_rank_averaged(const Model *m, int tensor) {
    if (m->cls && stem_rank_averaged(&m->cls->stem, tensor)) return 1;
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        if (mx->vt->rank_averaged && mx->vt->rank_averaged(mx, tensor)) return 1;
    }
    return 0;
}

void model_update_buffers(Model *m) {
    if (m->cls) stem_update_buffers(&m->cls->stem, &m->pt, m->params);
    MixerCtx ctx = {.B = m->B, .N = m->N, .causal = m->causal, .keymask = m->keymask, .training = 1};
    for (int l = 0; l < m->L; l++) {
        Mixer *mx = m->blocks[l].mixer;
        if (mx->vt->health) mx->vt->health->update_buffers(mx, &ctx, m->params, m->blocks[l].act);
    }
}

/* ---- the model's own keys (model.pos, mlp, embed_*, mlp_*): a stored section ---- */
#define O(f) offsetof(ModelKeys, f)
static const CfgKey g_model_keys[] = {
    {"pos", CFGT_ENUM, O(pos), 0, "learned", 0, 0, "learned|sinusoidal|none|rope",
     "Position embedding: learned table, fixed sinusoidal, none, or rope on sdpa/sdpa_ref q and k (docs/model.md "
     "§1)."},
    {"mlp", CFGT_BOOL, O(mlp), 0, "true", 0, 0, NULL, "Include the MLP in each block."},
    {"mlp_hidden_dropout", CFGT_REAL, O(mlp_hidden_dropout), 0, "0", 0, 0.95, NULL,
     "Dropout rate on the MLP hidden activation after GELU, as the LRA release's MlpBlock (training only)."},
    {"embed_std", CFGT_REAL, O(embed_std), 0, "-1", -1, 100, NULL,
     "Std of the normal initialisation of tok_emb (-1 = model.init_std)."},
    {"embed_init", CFGT_ENUM, O(embed_init), 0, "normal", 0, 0, "normal|ramp",
     "Initialisation of tok_emb: normal(embed_std), or ramp for tokens that are ordered levels (docs/model.md §1)."},
    {"mlp_bias_std", CFGT_REAL, O(mlp_bias_std), 0, "0", 0, 1, NULL,
     "Std of the MLP biases' normal initialisation (0 = zeros; the LRA release: 1e-6)."},
};
#undef O
const CfgSection model_keys_section = {"model_keys", sizeof(ModelKeys), g_model_keys, CFG_N(g_model_keys), NULL, "model"};

const char *cfg_pos_name(const Config *c) {
    static const char *const names[] = {"learned", "sinusoidal", "none", "rope"};
    return names[model_keys(c)->pos];
}

double cfg_pos_scale_ratio(const Config *c) {
    const ModelKeys *k = model_keys(c);
    if (k->pos != POS_SINUSOIDAL) return 0;
    double std = k->embed_std >= 0 ? k->embed_std : c->model.init_std;
    return std > 0 ? sqrt(0.5) / std : INFINITY;
}

int cfg_pos_scale_warn(const Config *c, FILE *f, const char *prog) {
    static int said;
    double r = cfg_pos_scale_ratio(c);
    if (said || !(r > POS_SCALE_WARN)) return 0;
    said = 1;
    const ModelKeys *k = model_keys(c);
    double std = k->embed_std >= 0 ? k->embed_std : c->model.init_std;
    fprintf(f, "%s: warning: model.pos \"sinusoidal\": the table's RMS 0.707 is %.0fx the token embeddings' init std %g "
            "(model.embed_std, else model.init_std; warned above %gx): the positions drown the tokens and a language model "
            "barely trains; raise model.embed_std (e.g. 0.5) or use model.pos \"learned\" or \"none\"\n", prog, r, std,
            POS_SCALE_WARN);
    return 1;
}
