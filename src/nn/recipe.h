/* recipe.h: the block recipe of the backbone (docs/model.md §1): which normalisation the
 * blocks and ln_f use (model.norm), the MLP's activation (model.mlp_act) and whether the
 * language-model head shares tok_emb (model.tie_embeddings). The defaults are GPT-2's
 * (LayerNorm, GELU MLP, tied head); "rmsnorm", "swiglu" and an untied head are the recipe
 * of Llama and of flash-linear-attention's models. A stored section over keys model.*. */
#ifndef GMA_RECIPE_H
#define GMA_RECIPE_H
#include "core/config.h"

enum { NORM_LAYERNORM, NORM_RMSNORM }; /* model.norm: layernorm|rmsnorm */
enum { MLP_ACT_GELU, MLP_ACT_SWIGLU }; /* model.mlp_act: gelu|swiglu */

typedef struct ModelRecipe {
    int norm;           /* NORM_LAYERNORM | NORM_RMSNORM */
    int mlp_act;        /* MLP_ACT_GELU | MLP_ACT_SWIGLU */
    int tie_embeddings; /* 1: logits = lnf tok_emb^T; 0: a separate lm_head.weight [V, D] */
} ModelRecipe;

extern const CfgSection model_recipe_section;
const ModelRecipe *model_recipe(const Config *c);
/* The MLP's hidden width F: model.d_ff, or when it is 0, 4 D (gelu) or, for swiglu,
 * 256 ceil(8 D / 3 / 256) as flash-linear-attention's GatedMLP (docs/model.md §1). */
int recipe_d_ff(const Config *c);
/* 0 when configs a and b have the same recipe, else -1 with gma_error naming the first key
 * that differs and its two values, prefixed by `what` (e.g. "--init-from DIR"). */
int recipe_same(const Config *a, const Config *b, const char *what);
#endif
