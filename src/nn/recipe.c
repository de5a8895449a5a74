/* recipe.c: the block recipe's keys model.norm, model.mlp_act, model.tie_embeddings (see
 * recipe.h), their checks and the MLP width they imply. */
#include "nn/recipe.h"

#include <string.h>

#include "core/common.h"
#include "nn/model_cfg.h"

#define O(f) offsetof(ModelRecipe, f)
static const CfgKey g_recipe_keys[] = {
    {"norm", CFGT_ENUM, O(norm), 0, "layernorm", 0, 0, "layernorm|rmsnorm",
     "Block normalisation: layernorm or rmsnorm (docs/model.md §1)."},
    {"mlp_act", CFGT_ENUM, O(mlp_act), 0, "gelu", 0, 0, "gelu|swiglu",
     "MLP: gelu (fc, GELU, proj) or swiglu (no biases; docs/model.md §1)."},
    {"tie_embeddings", CFGT_BOOL, O(tie_embeddings), 0, "true", 0, 0, NULL,
     "Language model head: true = logits from tok_emb (tied), false = a separate lm_head.weight [V, D]."},
};
#undef O

static int validate_recipe(const Config *c) {
    if (!model_recipe(c)->tie_embeddings && c->model.task != MODEL_LM)
        return gma_errorf("key model.tie_embeddings: false needs a language model (model.task \"lm\"); a classifier has "
                          "its own head");
    return 0;
}

const CfgSection model_recipe_section = {"model_recipe", sizeof(ModelRecipe), g_recipe_keys, CFG_N(g_recipe_keys),
                                         validate_recipe, "model"};

const ModelRecipe *model_recipe(const Config *c) { return cfg_section_of(c, &model_recipe_section); }

int recipe_d_ff(const Config *c) {
    if (c->model.d_ff > 0 || model_recipe(c)->mlp_act != MLP_ACT_SWIGLU) return cfg_d_ff(c);
    int h = (int)(8.0 * c->model.d_model / 3); /* int(4 D * 2 / 3), then up to a multiple of 256 */
    return 256 * ((h + 255) / 256);
}

int recipe_same(const Config *a, const Config *b, const char *what) {
    const ModelRecipe *x = model_recipe(a), *y = model_recipe(b);
    if (x->norm != y->norm)
        return gma_errorf("%s: model.norm \"%s\" there, \"%s\" here: the norms' tensors differ", what,
                          cfg_enum_name(a, "model.norm"), cfg_enum_name(b, "model.norm"));
    if (x->mlp_act != y->mlp_act)
        return gma_errorf("%s: model.mlp_act \"%s\" there, \"%s\" here: the MLPs' tensors differ", what,
                          cfg_enum_name(a, "model.mlp_act"), cfg_enum_name(b, "model.mlp_act"));
    if (x->tie_embeddings != y->tie_embeddings)
        return gma_errorf("%s: model.tie_embeddings %s there, %s here: the head's tensors differ", what,
                          x->tie_embeddings ? "true" : "false", y->tie_embeddings ? "true" : "false");
    return 0;
}
