/* gpt2_dest.c: the model a GPT-2 reader fills, and the table of a block's Hugging Face
 * tensors with the walk over it that the import and the export share (see gpt2_dest.h). */
#include "model/gpt2_dest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/config.h"

static int set(Config *c, const char *key, long v) {
    char a[128];
    snprintf(a, sizeof a, "%s=%ld", key, v);
    return cfg_set(c, a);
}

int gpt2_dest_build(Gpt2Dest *d, const Gpt2Info *s) {
    Config c;
    cfg_defaults(&c);
    snprintf(c.name, sizeof c.name, "%s", GPT2_IMPORT_NAME);
    int rc = set(&c, "model.vocab_size", s->V) || set(&c, "model.d_model", s->D) || set(&c, "model.n_heads", s->H) ||
             set(&c, "model.n_layers", s->L) || set(&c, "model.max_seq_len", s->T) ||
             set(&c, "model.d_ff", 4L * s->D) || set(&c, "train.seq_len", s->T);
    /* GPT-2's function (docs/model.md §1, §3.5): softmax attention with biases, learned
     * positions, tanh GELU, pre-LayerNorm blocks, ln_f and the tied head (its block recipe) */
    static const char *const fixed[] = {"model.mixer=sdpa", "model.pos=learned", "model.attn_bias=true",
                                        "model.norm=layernorm", "model.mlp_act=gelu", "model.tie_embeddings=true",
                                        "model.mlp=true",   "model.task=lm",     "model.dropout=0",
                                        "model.qkv_dim=0",  "data.source=shards", ("data.path=" GPT2_DATA)};
    for (size_t i = 0; !rc && i < sizeof fixed / sizeof *fixed; i++) rc = cfg_set(&c, fixed[i]);
    if (rc || cfg_validate(&c) != 0) return gma_error_prefix("%s: a GPT-2 of this shape is not a model here", d->src);
    if (model_build(&d->m, &c) != 0) return -1;
    d->built = 1;
    d->host = xcalloc(d->m.pt.total, sizeof(real));
    return 0;
}

real *gpt2_dest_at(Gpt2Dest *d, size_t numel, const char *fmt, int layer) {
    char name[128];
    snprintf(name, sizeof name, fmt, layer);
    int i = pt_find(&d->m.pt, name);
    if (i < 0 || d->m.pt.t[i].numel != numel) {
        gma_errorf("internal: tensor %s %s", name, i < 0 ? "is not in the model" : "has another size");
        return NULL;
    }
    return d->host + d->m.pt.t[i].offset;
}

void gpt2_dest_free(Gpt2Dest *d) {
    if (d->built) model_free(&d->m);
    free(d->host);
}

const Gpt2HfTensor gpt2_hf_block[GPT2_HF_BLOCK] = {
    {"ln_1.weight", "ln1.weight", GPT2_VEC, 1, 0},
    {"ln_1.bias", "ln1.bias", GPT2_VEC, 1, 0},
    {"attn.c_attn.weight", "mixer.%c.weight", GPT2_QKV_W, 1, 3},
    {"attn.c_attn.bias", "mixer.%c.bias", GPT2_QKV_B, 3, 0},
    {"attn.c_proj.weight", "mixer.o.weight", GPT2_CONV, 1, 1},
    {"attn.c_proj.bias", "mixer.o.bias", GPT2_VEC, 1, 0},
    {"ln_2.weight", "ln2.weight", GPT2_VEC, 1, 0},
    {"ln_2.bias", "ln2.bias", GPT2_VEC, 1, 0},
    {"mlp.c_fc.weight", "mlp.fc.weight", GPT2_CONV, 1, 4},
    {"mlp.c_fc.bias", "mlp.fc.bias", GPT2_VEC, 4, 0},
    {"mlp.c_proj.weight", "mlp.proj.weight", GPT2_CONV, 4, 1},
    {"mlp.c_proj.bias", "mlp.proj.bias", GPT2_VEC, 1, 0},
};

void gpt2_hf_formats(const Gpt2HfTensor *t, int p, char *fmt, char *hf_fmt, size_t cap) {
    char dst[64];
    snprintf(dst, sizeof dst, t->dst, "qkv"[p]); /* a dst without %c ignores the argument */
    snprintf(fmt, cap, "blocks.%%d.%s", dst);
    if (hf_fmt) snprintf(hf_fmt, cap, "h.%%d.%s", t->hf);
}

void gpt2_block_tensor(int k, size_t D, char *fmt, size_t cap, size_t *numel) {
    for (int i = 0; i < GPT2_HF_BLOCK; i++) {
        const Gpt2HfTensor *t = &gpt2_hf_block[i];
        int parts = t->kind == GPT2_QKV_W || t->kind == GPT2_QKV_B ? 3 : 1;
        if (k >= parts) {
            k -= parts;
            continue;
        }
        gpt2_hf_formats(t, k, fmt, NULL, cap);
        *numel = t->kind == GPT2_VEC ? t->in * D : t->kind == GPT2_CONV ? t->in * t->out * D * D : t->kind == GPT2_QKV_W ? D * D : D;
        return;
    }
}

/* columns col0 .. col0 + n_out - 1 of the Conv1D layout c [n_in, cols] and the model's
 * weight w [n_out, n_in]: copied into w (to_hf 0) or into c (to_hf 1) */
static void conv_cols(real *w, real *c, int n_in, int cols, int col0, int n_out, int to_hf) {
    if (to_hf)
        for (int i = 0; i < n_in; i++)
            for (int k = 0; k < n_out; k++) c[(size_t)i * cols + col0 + k] = w[(size_t)k * n_in + i];
    else
        for (int o = 0; o < n_out; o++)
            for (int i = 0; i < n_in; i++) w[(size_t)o * n_in + i] = c[(size_t)i * cols + col0 + o];
}

int gpt2_hf_block_walk(Gpt2Dest *d, int l, int D, int to_hf, Gpt2HfSide side, void *ctx) {
    for (int i = 0; i < GPT2_HF_BLOCK; i++) {
        const Gpt2HfTensor *t = &gpt2_hf_block[i];
        /* c_attn's three parts of D columns (weight) or D elements (bias); a Conv1D weight
         * [in D, out D]; a vector [in D] */
        int qkv = t->kind == GPT2_QKV_W || t->kind == GPT2_QKV_B, w = t->kind == GPT2_CONV || t->kind == GPT2_QKV_W;
        int n_in = t->in * D, n_out = t->out * D, part = qkv ? D : w ? n_out : n_in;
        char fmt[96], hf[96];
        gpt2_hf_formats(t, 0, fmt, hf, sizeof fmt);
        real *h = side(ctx, hf, l, n_in, w ? n_out : 0);
        if (!h) return -1;
        for (int p = 0; p < (qkv ? 3 : 1); p++) {
            gpt2_hf_formats(t, p, fmt, NULL, sizeof fmt);
            size_t numel = w ? (size_t)n_in * part : (size_t)part;
            real *m = gpt2_dest_at(d, numel, fmt, l);
            if (!m) return -1;
            if (w) conv_cols(m, h, n_in, n_out, p * part, part, to_hf);
            else if (to_hf) memcpy(h + (size_t)p * part, m, numel * sizeof(real));
            else memcpy(m, h + (size_t)p * part, numel * sizeof(real));
        }
    }
    return 0;
}
