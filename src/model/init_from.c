/* init_from.c: a model started from a checkpoint's matching tensors (see init_from.h). */
#include "model/init_from.h"

#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "nn/model_cfg.h"
#include "nn/recipe.h"
#include "ops/ops.h"

static InitOutcome outcome_of(const ParamInfo *p, const StEntry *e) {
    if (!e) return INIT_NEW;
    if (e->ndim != p->ndim) return INIT_SHAPE;
    for (int d = 0; d < p->ndim; d++)
        if (e->shape[d] != p->shape[d]) {
            /* a learned position table of more positions than this model's: its first rows */
            if (!strcmp(p->name, "pos_emb.weight") && p->ndim == 2 && d == 0 && e->shape[0] > p->shape[0] &&
                e->shape[1] == p->shape[1])
                return INIT_CROPPED;
            return INIT_SHAPE;
        }
    return INIT_COPIED;
}

/* The attention projections a mixer that replaces another takes from it. Every mixer with
 * q/k/v/o projections (sdpa, sdpa_ref, gma, auto, linear, performer, linformer) registers
 * them through attn_proj_add (nn/mixers/mixer.h) as blocks.L.mixer.{q,k,v,o}.{weight,bias},
 * [E, Dm] and [Dm, E]: the map from the new mixer's names to the old one's keeps the name. */
static const char *const g_proj[] = {"q.weight", "q.bias", "k.weight", "k.bias", "v.weight", "v.bias", "o.weight", "o.bias"};

/* The layer of a tensor under blocks.L.mixer. and the rest of its name, or -1. */
static int mixer_layer(const char *name, const char **rest) {
    int l = -1, at = 0;
    if (sscanf(name, "blocks.%d.mixer.%n", &l, &at) != 1 || !at) return -1;
    *rest = name + at;
    return l;
}

/* The checkpoint's name of tensor `name` of layer l when l's mixer replaces the checkpoint's
 * (old_mixer[l] set) and it is one of the projections: the new name <- the old one. */
static const char *mapped_name(const InitReport *rep, const char *name) {
    const char *rest;
    int l = mixer_layer(name, &rest);
    if (l < 0 || l >= CFG_MAX_LAYERS || !rep->old_mixer[l][0]) return NULL;
    for (size_t i = 0; i < sizeof g_proj / sizeof g_proj[0]; i++)
        if (!strcmp(rest, g_proj[i])) return name;
    return NULL;
}

/* the layers whose mixer has routing components and whose centres were not copied */
static void find_seeded(const Model *m, InitReport *rep) {
    for (int l = 0; l < m->L && l < CFG_MAX_LAYERS; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        if (!mx->vt->health) continue;
        MixerComponents mc;
        mx->vt->health->components(mx, NULL, 0, 0, &mc);
        if (mc.centre < 0) continue;
        InitOutcome o = rep->outcome[mc.centre];
        if (o == INIT_NEW || o == INIT_SHAPE) rep->seed[l] = 1, rep->n_seed++;
    }
}

int init_from_ckpt(Model *m, const char *dir, const Config *src, InitReport *rep) {
    memset(rep, 0, sizeof *rep);
    snprintf(rep->dir, sizeof rep->dir, "%s", dir);
    char what[2100];
    snprintf(what, sizeof what, "--init-from %s", dir);
    /* another block recipe has other tensors (norm biases, MLP, head): none would carry over */
    if (src && recipe_same(src, &m->cfg, what) != 0) return -1;
    /* rotary positions change what the attention projections compute from the same weights */
    if (src && strcmp(cfg_pos_name(src), cfg_pos_name(&m->cfg)) &&
        (!strcmp(cfg_pos_name(src), "rope") || !strcmp(cfg_pos_name(&m->cfg), "rope")))
        return gma_errorf("%s: key model.pos: \"%s\" here, \"%s\" in the checkpoint: the attention projections of "
                          "one were trained with rotary positions on q and k, which the other lacks",
                          what, cfg_pos_name(&m->cfg), cfg_pos_name(src));
    for (int l = 0; src && l < m->L && l < src->model.n_layers && l < CFG_MAX_LAYERS; l++) {
        if (mixer_of_layer(src, l) != mixer_of_layer(&m->cfg, l))
            snprintf(rep->old_mixer[l], sizeof rep->old_mixer[l], "%s", cfg_layer_mixer(src, l));
    }
    char path[2100];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    StFile f;
    if (st_open(&f, path) != 0) return -1;
    const char *s = st_meta(&f, "step");
    rep->step = s ? strtol(s, NULL, 10) : -1;
    size_t P = m->pt.total;
    real *host = xmalloc(P * sizeof(real));
    g_ops->to_host(host, m->params, P * sizeof(real));
    rep->n = m->pt.n;
    rep->outcome = xcalloc((size_t)m->pt.n, sizeof *rep->outcome);
    rep->from = xcalloc((size_t)m->pt.n, sizeof *rep->from);
    int rc = 0;
    for (int i = 0; i < m->pt.n && !rc; i++) {
        const ParamInfo *p = &m->pt.t[i];
        const char *old = mapped_name(rep, p->name);
        const StEntry *e = st_find(&f, old ? old : p->name);
        rep->outcome[i] = outcome_of(p, e);
        if (old && rep->outcome[i] == INIT_COPIED) rep->outcome[i] = INIT_MAPPED;
        rep->counts[rep->outcome[i]]++;
        if (rep->outcome[i] != INIT_COPIED && rep->outcome[i] != INIT_MAPPED && rep->outcome[i] != INIT_CROPPED) continue;
        rep->from[i] = xstrdup(e->name);
        real *dst = host + p->offset;
        if (rep->outcome[i] == INIT_CROPPED) { /* rows are contiguous: the first p->numel values are the first rows */
            real *all = xmalloc(e->numel * sizeof(real));
            st_read_tensor(e, all);
            memcpy(dst, all, p->numel * sizeof(real));
            free(all);
        } else
            st_read_tensor(e, dst);
        for (size_t j = 0; j < p->numel && !rc; j++)
            if (!isfinite(dst[j])) rc = gma_errorf("%s: tensor %s holds a non-finite value at element %zu", path, p->name, j);
    }
    rep->dropped = xcalloc((size_t)f.n + 1, sizeof *rep->dropped);
    for (int i = 0; i < f.n && !rc; i++)
        if (pt_find(&m->pt, f.e[i].name) < 0) rep->dropped[rep->n_dropped++] = xstrdup(f.e[i].name);
    if (!rc) g_ops->to_device(m->params, host, P * sizeof(real));
    if (!rc) find_seeded(m, rep);
    free(host);
    st_close(&f);
    if (rc) init_report_free(rep);
    return rc;
}

void init_report_free(InitReport *rep) {
    for (int i = 0; i < rep->n_dropped; i++) free(rep->dropped[i]);
    for (int i = 0; rep->from && i < rep->n; i++) free(rep->from[i]);
    free(rep->from);
    free(rep->dropped);
    free(rep->outcome);
    memset(rep, 0, sizeof *rep);
}

static const char *const g_key[INIT_N] = {"copied", "new", "shape_differs", "mapped", "cropped"};

cJSON *init_report_json(const Model *m, const InitReport *rep) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "from", rep->dir);
    cJSON_AddNumberToObject(o, "step", (double)rep->step);
    for (int k = 0; k < INIT_N; k++) {
        cJSON *a = cJSON_AddArrayToObject(o, g_key[k]);
        for (int i = 0; i < rep->n; i++) {
            if ((int)rep->outcome[i] != k) continue;
            char s[256];
            if (k == INIT_MAPPED) snprintf(s, sizeof s, "%s <- %s", m->pt.t[i].name, rep->from[i]);
            else snprintf(s, sizeof s, "%s", m->pt.t[i].name);
            cJSON_AddItemToArray(a, cJSON_CreateString(s));
        }
    }
    cJSON *rp = cJSON_AddArrayToObject(o, "replaced");
    for (int l = 0; l < m->L && l < CFG_MAX_LAYERS; l++) {
        if (!rep->old_mixer[l][0]) continue;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "layer", l);
        cJSON_AddStringToObject(x, "from", rep->old_mixer[l]);
        cJSON_AddStringToObject(x, "to", cfg_layer_mixer(&m->cfg, l));
        cJSON_AddItemToArray(rp, x);
    }
    cJSON *d = cJSON_AddArrayToObject(o, "dropped");
    for (int i = 0; i < rep->n_dropped; i++) cJSON_AddItemToArray(d, cJSON_CreateString(rep->dropped[i]));
    cJSON *ks = cJSON_AddArrayToObject(o, "kmeans_seeded");
    for (int l = 0; l < m->L && l < CFG_MAX_LAYERS; l++) {
        char s[64];
        snprintf(s, sizeof s, "blocks.%d.mixer", l);
        if (rep->seed[l]) cJSON_AddItemToArray(ks, cJSON_CreateString(s));
    }
    return o;
}

/* ": name, name" of the tensors with outcome k (INIT_N: dropped), at most 8 named, then a count */
static void names(const Model *m, const InitReport *rep, int k, FILE *f) {
    int shown = 0, n = k < INIT_N ? rep->counts[k] : rep->n_dropped;
    for (int i = 0; i < (k < INIT_N ? rep->n : rep->n_dropped) && shown < 8; i++) {
        if (k < INIT_N && (int)rep->outcome[i] != k) continue;
        fprintf(f, "%s%s", shown++ ? ", " : ": ", k < INIT_N ? m->pt.t[i].name : rep->dropped[i]);
    }
    if (n > shown) fprintf(f, ", %d more", n - shown);
}

void init_report_print(const Model *m, const InitReport *rep, FILE *f) {
    fprintf(f, "gmatrain: initialised from %s (step %ld): %d tensors copied", rep->dir, rep->step, rep->counts[INIT_COPIED]);
    if (rep->counts[INIT_MAPPED]) {
        fprintf(f, "; %d mapped from the attention they replace (", rep->counts[INIT_MAPPED]);
        for (int l = 0, k = 0; l < m->L && l < CFG_MAX_LAYERS; l++)
            if (rep->old_mixer[l][0]) fprintf(f, "%slayer %d %s -> %s", k++ ? ", " : "", l, rep->old_mixer[l], cfg_layer_mixer(&m->cfg, l));
        fprintf(f, ")");
        names(m, rep, INIT_MAPPED, f);
    }
    if (rep->counts[INIT_CROPPED])
        fprintf(f, "; %d cropped to the first model.max_seq_len %d rows", rep->counts[INIT_CROPPED], m->cfg.model.max_seq_len);
    names(m, rep, INIT_CROPPED, f);
    if (rep->counts[INIT_NEW]) fprintf(f, "; %d new, at their fresh initialisation", rep->counts[INIT_NEW]);
    names(m, rep, INIT_NEW, f);
    if (rep->counts[INIT_SHAPE]) fprintf(f, "; %d of another shape, at their fresh initialisation", rep->counts[INIT_SHAPE]);
    names(m, rep, INIT_SHAPE, f);
    if (rep->n_dropped) fprintf(f, "; %d dropped", rep->n_dropped);
    names(m, rep, INIT_N, f);
    if (rep->n_seed) {
        fprintf(f, "; the routing of layer%s", rep->n_seed > 1 ? "s" : "");
        for (int l = 0, k = 0; l < m->L && l < CFG_MAX_LAYERS; l++)
            if (rep->seed[l]) fprintf(f, "%s%d", k++ ? ", " : " ", l);
        fprintf(f, " is seeded by k-means of its queries on the first batch");
    }
    fprintf(f, " (all in init_from.json)\n");
}
