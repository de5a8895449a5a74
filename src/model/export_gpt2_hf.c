/* export_gpt2_hf.c: the model as a Hugging Face GPT-2 folder (docs/data.md, "Exporting
 * GPT-2"), the inverse of import_gpt2_hf.c: config.json with GPT2Config's keys, and
 * model.safetensors with GPT2Model's names (no "transformer." prefix, as the published
 * files; no lm_head.weight, the head being tied to wte) where every block weight is
 * transposed back to Conv1D's [in, out] and q, k, v fill c_attn's columns in that order. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/safetensors.h"
#include "model/export_gpt2.h"

typedef struct HfOut {
    StTensor t[8 + 12 * CFG_MAX_LAYERS];
    char names[8 + 12 * CFG_MAX_LAYERS][64];
    real *owned[8 + 12 * CFG_MAX_LAYERS]; /* the transposed copies, freed after the write */
    int n, n_owned;
} HfOut;

/* add tensor name (fmt with the layer) of shape [d0] or [d0, d1] (d1 0: one axis) */
static void add(HfOut *o, const char *fmt, int layer, const real *data, int64_t d0, int64_t d1) {
    StTensor *t = &o->t[o->n];
    snprintf(o->names[o->n], sizeof o->names[o->n], fmt, layer);
    t->name = o->names[o->n];
    t->ndim = d1 ? 2 : 1;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->data = data;
    o->n++;
}

static real *owned(HfOut *o, size_t n) { return o->owned[o->n_owned++] = xmalloc(n * sizeof(real)); }

/* a vector tensor as it is */
static int vec(HfOut *o, Gpt2Dest *d, const char *fmt, const char *src, int l, int n) {
    const real *v = gpt2_dest_at(d, (size_t)n, src, l);
    if (!v) return -1;
    add(o, fmt, l, v, n, 0);
    return 0;
}

/* the walk's Hugging Face side (gpt2_hf_block_walk): a new tensor of the file, filled by the walk */
static real *hf_side(void *ctx, const char *fmt, int l, int64_t d0, int64_t d1) {
    HfOut *o = ctx;
    real *t = owned(o, (size_t)d0 * (size_t)(d1 ? d1 : 1));
    add(o, fmt, l, t, d0, d1);
    return t;
}

/* config.json: the keys GPT2Config reads, GPT-2's values for the ones that fix the function */
static int write_config(const Gpt2Info *s, const char *dir) {
    cJSON *j = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(j, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString("GPT2LMHeadModel"));
    cJSON_AddStringToObject(j, "model_type", "gpt2");
    cJSON_AddNumberToObject(j, "vocab_size", s->V);
    cJSON_AddNumberToObject(j, "n_positions", s->T);
    cJSON_AddNumberToObject(j, "n_ctx", s->T);
    cJSON_AddNumberToObject(j, "n_embd", s->D);
    cJSON_AddNumberToObject(j, "n_layer", s->L);
    cJSON_AddNumberToObject(j, "n_head", s->H);
    cJSON_AddNullToObject(j, "n_inner");
    cJSON_AddStringToObject(j, "activation_function", "gelu_new");
    cJSON_AddNumberToObject(j, "layer_norm_epsilon", 1e-5);
    cJSON_AddBoolToObject(j, "scale_attn_weights", 1);
    cJSON_AddBoolToObject(j, "scale_attn_by_inverse_layer_idx", 0);
    cJSON_AddBoolToObject(j, "reorder_and_upcast_attn", 0);
    cJSON_AddBoolToObject(j, "add_cross_attention", 0);
    cJSON_AddBoolToObject(j, "tie_word_embeddings", 1);
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    size_t n = strlen(text);
    text = xrealloc(text, n + 2);
    text[n] = '\n', text[n + 1] = 0;
    char p[2300];
    snprintf(p, sizeof p, "%s/config.json", dir);
    int rc = gma_write_file_atomic(p, text, n + 1);
    free(text);
    return rc;
}

int gpt2_write_hf(Gpt2Dest *d, const Gpt2Info *s, const char *dir) {
    if (s->L > CFG_MAX_LAYERS) return gma_errorf("internal: %d layers", s->L);
    HfOut *o = xcalloc(1, sizeof *o);
    int D = s->D, rc = 0;
    const real *wte = gpt2_dest_at(d, (size_t)s->V * D, "tok_emb.weight", 0);
    const real *wpe = gpt2_dest_at(d, (size_t)s->T * D, "pos_emb.weight", 0);
    if (!wte || !wpe) rc = -1;
    else {
        add(o, "wte.weight", 0, wte, s->V, D);
        add(o, "wpe.weight", 0, wpe, s->T, D);
    }
    for (int l = 0; !rc && l < s->L; l++) rc = gpt2_hf_block_walk(d, l, D, 1, hf_side, o);
    if (!rc) rc = vec(o, d, "ln_f.weight", "ln_f.weight", 0, D) || vec(o, d, "ln_f.bias", "ln_f.bias", 0, D);
    char p[2300];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    /* "format": "pt": transformers' safetensors loader refuses a file without it */
    static const char *const keys[1] = {"format"}, *const vals[1] = {"pt"};
    if (!rc) rc = st_write(p, o->t, o->n, keys, vals, 1);
    if (!rc) rc = write_config(s, dir);
    for (int i = 0; i < o->n_owned; i++) free(o->owned[i]);
    free(o);
    return rc ? -1 : 0;
}
