/* import_gpt2_hf.c: a Hugging Face GPT-2 (config.json + model.safetensors) into the model
 * (docs/data.md, "Importing GPT-2"). Conv1D stores its weight [in, out] and computes
 * x W + b; this project's linear layers store [out, in], so every block weight is
 * transposed, and c_attn's columns split into q, k, v in that order. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/safetensors.h"
#include "model/gpt2_dest.h"

/* the integer key of config.json, or dflt (GPT2Config's default) when it is absent or null */
static int cfg_int(const cJSON *j, const char *key, int dflt, int lo, int hi, const char *path, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!v || cJSON_IsNull(v)) {
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return gma_errorf("%s: key %s: want an integer in [%d, %d]", path, key, lo, hi);
    *out = (int)v->valuedouble;
    return 0;
}

/* the settings of GPT2Config that change the function: only GPT-2's own are taken */
static int check_variant(const cJSON *j, const char *path, int D) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "activation_function");
    if (v && !(cJSON_IsString(v) && (!strcmp(v->valuestring, "gelu_new") || !strcmp(v->valuestring, "gelu_pytorch_tanh"))))
        return gma_errorf("%s: key activation_function: only gelu_new (the tanh GELU) is GPT-2's", path);
    v = cJSON_GetObjectItemCaseSensitive(j, "layer_norm_epsilon");
    if (v && !(cJSON_IsNumber(v) && fabs(v->valuedouble - 1e-5) <= 1e-12))
        return gma_errorf("%s: key layer_norm_epsilon: the model's LayerNorm has eps 1e-5", path);
    v = cJSON_GetObjectItemCaseSensitive(j, "n_inner");
    if (v && !cJSON_IsNull(v) && !(cJSON_IsNumber(v) && v->valuedouble == 4.0 * D))
        return gma_errorf("%s: key n_inner: only 4 n_embd (or null) is GPT-2's MLP", path);
    v = cJSON_GetObjectItemCaseSensitive(j, "scale_attn_weights");
    if (v && !cJSON_IsTrue(v)) return gma_errorf("%s: key scale_attn_weights: GPT-2 scales by 1/sqrt(d_head)", path);
    v = cJSON_GetObjectItemCaseSensitive(j, "scale_attn_by_inverse_layer_idx");
    if (v && cJSON_IsTrue(v)) return gma_errorf("%s: key scale_attn_by_inverse_layer_idx: not GPT-2's attention", path);
    v = cJSON_GetObjectItemCaseSensitive(j, "add_cross_attention");
    if (v && cJSON_IsTrue(v)) return gma_errorf("%s: key add_cross_attention: not a decoder-only GPT-2", path);
    return 0;
}

static int read_config(const char *path, Gpt2Info *s) {
    char *text = gma_read_file(path, NULL);
    if (!text) return gma_error_prefix("%s: a Hugging Face GPT-2 folder needs config.json", path);
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return gma_errorf("%s: not a JSON object", path);
    }
    int T2 = 0, rc = cfg_int(j, "n_embd", 768, 1, 65536, path, &s->D) || cfg_int(j, "n_head", 12, 1, 1024, path, &s->H) ||
                     cfg_int(j, "n_layer", 12, 1, 4096, path, &s->L) ||
                     cfg_int(j, "vocab_size", 50257, 1, 16777216, path, &s->V) ||
                     cfg_int(j, "n_positions", 1024, 1, 16777216, path, &s->T) ||
                     cfg_int(j, "n_ctx", s->T, 1, 16777216, path, &T2);
    if (!rc && T2 != s->T) rc = gma_errorf("%s: keys n_positions %d and n_ctx %d differ", path, s->T, T2);
    if (!rc && s->D % s->H) rc = gma_errorf("%s: key n_embd: %d is not divisible by n_head %d", path, s->D, s->H);
    if (!rc) rc = check_variant(j, path, s->D);
    cJSON_Delete(j);
    return rc ? -1 : 0;
}

typedef struct Hf {
    const StFile *f;
    const char *pre; /* "transformer." or "" */
    real *buf;       /* one tensor, converted */
} Hf;

/* tensor name (fmt with the layer) of shape [d0] or [d0, d1] (d1 0: one axis), read into
 * h->buf; refused naming the tensor when it is missing or has another shape */
static real *get(Hf *h, const char *fmt, int layer, int64_t d0, int64_t d1) {
    char base[128], name[160];
    snprintf(base, sizeof base, fmt, layer);
    snprintf(name, sizeof name, "%s%s", h->pre, base);
    const StEntry *e = st_find(h->f, name);
    if (!e) {
        gma_errorf("%s: tensor %s is missing", h->f->path, name);
        return NULL;
    }
    int nd = d1 ? 2 : 1;
    if (e->ndim != nd || e->shape[0] != d0 || (d1 && e->shape[1] != d1)) {
        char a[96] = "";
        for (int i = 0; i < e->ndim; i++) snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", i ? ", " : "", (long long)e->shape[i]);
        if (d1) gma_errorf("%s: tensor %s has shape [%s], GPT-2 of this config.json wants [%lld, %lld]", h->f->path, name, a, (long long)d0, (long long)d1);
        else gma_errorf("%s: tensor %s has shape [%s], GPT-2 of this config.json wants [%lld]", h->f->path, name, a, (long long)d0);
        return NULL;
    }
    st_read_tensor(e, h->buf);
    for (size_t i = 0; i < e->numel; i++)
        if (!isfinite(h->buf[i])) {
            gma_errorf("%s: tensor %s holds %s at index %zu: not a weight to import", h->f->path, name,
                       isnan(h->buf[i]) ? "NaN" : "an infinity", i);
            return NULL;
        }
    return h->buf;
}

/* copy tensor fmt (shape [n]) into the model's tensor dfmt */
static int vec(Hf *h, Gpt2Dest *d, const char *fmt, const char *dfmt, int l, int n) {
    const real *s = get(h, fmt, l, n, 0);
    real *t = s ? gpt2_dest_at(d, (size_t)n, dfmt, l) : NULL;
    if (!t) return -1;
    memcpy(t, s, (size_t)n * sizeof(real));
    return 0;
}

/* the walk's Hugging Face side (gpt2_hf_block_walk): the tensor, read and checked */
static real *hf_side(void *ctx, const char *fmt, int l, int64_t d0, int64_t d1) { return get(ctx, fmt, l, d0, d1); }

/* 1 when name (after the prefix) is one GPT-2 tensor this reader takes, or a mask buffer */
static int known(const char *name, int L, int *is_buffer) {
    static const char *const top[] = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"};
    *is_buffer = 0;
    for (size_t i = 0; i < 4; i++)
        if (!strcmp(name, top[i])) return 1;
    int l, k = 0;
    if (sscanf(name, "h.%d.%n", &l, &k) != 1 || k == 0 || l < 0 || l >= L) return 0;
    char canon[32];
    snprintf(canon, sizeof canon, "h.%d.", l);
    if (strncmp(name, canon, strlen(canon))) return 0; /* h.01. and the like */
    const char *rest = name + k;
    if (!strcmp(rest, "attn.bias") || !strcmp(rest, "attn.masked_bias")) return *is_buffer = 1;
    for (int i = 0; i < GPT2_HF_BLOCK; i++)
        if (!strcmp(rest, gpt2_hf_block[i].hf)) return 1;
    return 0;
}

/* every tensor of the file is GPT-2's, a mask buffer, or lm_head.weight equal to wte */
static int check_names(const Hf *h, const Gpt2Info *s, const real *wte) {
    size_t pl = strlen(h->pre);
    for (int i = 0; i < h->f->n; i++) {
        const StEntry *e = &h->f->e[i];
        int buf;
        if (!strcmp(e->name, "lm_head.weight")) {
            if (e->ndim != 2 || e->shape[0] != s->V || e->shape[1] != s->D)
                return gma_errorf("%s: tensor lm_head.weight is not [%d, %d] (the tied head is wte)", h->f->path, s->V, s->D);
            real *t = xmalloc(e->numel * sizeof(real));
            st_read_tensor(e, t);
            int same = memcmp(t, wte, e->numel * sizeof(real)) == 0;
            free(t);
            if (!same) return gma_errorf("%s: tensor lm_head.weight differs from wte.weight: the model's head is tied", h->f->path);
            continue;
        }
        if (strncmp(e->name, h->pre, pl) || !known(e->name + pl, s->L, &buf))
            return gma_errorf("%s: tensor %s is not part of GPT-2 (want %snames as in GPT2Model)", h->f->path, e->name, h->pre);
    }
    return 0;
}

static int read_weights(Hf *h, Gpt2Dest *d, const Gpt2Info *s) {
    int D = s->D;
    const real *w = get(h, "wte.weight", 0, s->V, D);
    real *t = w ? gpt2_dest_at(d, (size_t)s->V * D, "tok_emb.weight", 0) : NULL;
    if (!t) return -1;
    memcpy(t, w, (size_t)s->V * D * sizeof(real));
    if (check_names(h, s, t) != 0) return -1;
    if (!(w = get(h, "wpe.weight", 0, s->T, D)) || !(t = gpt2_dest_at(d, (size_t)s->T * D, "pos_emb.weight", 0))) return -1;
    memcpy(t, w, (size_t)s->T * D * sizeof(real));
    for (int l = 0; l < s->L; l++)
        if (gpt2_hf_block_walk(d, l, D, 0, hf_side, h)) return -1;
    return vec(h, d, "ln_f.weight", "ln_f.weight", 0, D) || vec(h, d, "ln_f.bias", "ln_f.bias", 0, D) ? -1 : 0;
}

int gpt2_read_hf(const char *st_path, const char *config_path, Gpt2Dest *d, Gpt2Info *info) {
    if (read_config(config_path, info) != 0) return -1;
    snprintf(info->format, sizeof info->format, "hugging face");
    StFile f;
    if (st_open(&f, st_path) != 0) return -1;
    /* the weights config.json promises (float32), against the file's size, before the model is allocated */
    double D = info->D, need = 4 * ((double)info->V * D + (double)info->T * D + info->L * (12 * D * D + 13 * D) + 2 * D);
    if ((double)f.len < need) {
        size_t have = f.len;
        st_close(&f);
        return gma_errorf("%s: truncated: %zu bytes, the header needs %.0f (the weights of the GPT-2 of %s)", st_path, have,
                          need, config_path);
    }
    Hf h = {.f = &f, .pre = st_find(&f, "transformer.wte.weight") ? "transformer." : ""};
    size_t big = (size_t)info->V * info->D;
    if ((size_t)info->T * info->D > big) big = (size_t)info->T * info->D;
    if ((size_t)4 * info->D * info->D > big) big = (size_t)4 * info->D * info->D;
    int rc = gpt2_dest_build(d, info);
    if (!rc) {
        h.buf = xmalloc(big * sizeof(real));
        rc = read_weights(&h, d, info);
        free(h.buf);
    }
    st_close(&f);
    return rc;
}
