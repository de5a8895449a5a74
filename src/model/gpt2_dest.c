/* gpt2_dest.c: the model a GPT-2 reader fills (see gpt2_dest.h). */
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
    snprintf(c.name, sizeof c.name, "gpt2-import");
    int rc = set(&c, "model.vocab_size", s->V) || set(&c, "model.d_model", s->D) || set(&c, "model.n_heads", s->H) ||
             set(&c, "model.n_layers", s->L) || set(&c, "model.max_seq_len", s->T) ||
             set(&c, "model.d_ff", 4L * s->D) || set(&c, "train.seq_len", s->T);
    /* GPT-2's function (docs/model.md §1, §3.5): softmax attention with biases, learned
     * positions, tanh GELU, pre-LayerNorm blocks, ln_f and the tied head */
    static const char *const fixed[] = {"model.mixer=sdpa", "model.pos=learned", "model.attn_bias=true",
                                        "model.mlp=true",   "model.task=lm",     "model.dropout=0",
                                        "model.qkv_dim=0",  "data.source=shards", "data.path=" GPT2_DATA};
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
