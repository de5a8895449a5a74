/* model_cfg.c: the model backbone's configuration rows (model.*), their checks and the
 * values derived from them. */
#include "nn/model_cfg.h"

#include "core/common.h"

#define O(f) CFG_OFF(f)
static const CfgKey g_model[] = {
    {"model.task", CFGT_ENUM, O(model.task), 0, "lm", 0, 0, "lm|classify", "Decoder language model or encoder classifier."},
    {"model.vocab_size", CFGT_INT, O(model.vocab_size), 0, "0", 0, 16777216, NULL, "Vocabulary size V (0 = from the data)."},
    {"model.d_model", CFGT_INT, O(model.d_model), 0, "256", 1, 65536, NULL, "Model width D."},
    {"model.n_layers", CFGT_INT, O(model.n_layers), 0, "4", 1, CFG_MAX_LAYERS, NULL, "Number of blocks L."},
    {"model.n_heads", CFGT_INT, O(model.n_heads), 0, "4", 1, 1024, NULL, "Heads H (D must be divisible by H)."},
    {"model.d_ff", CFGT_INT, O(model.d_ff), 0, "0", 0, 1048576, NULL, "MLP hidden width (0 = 4 D)."},
    {"model.max_seq_len", CFGT_INT, O(model.max_seq_len), 0, "256", 1, 16777216, NULL, "Longest sequence N_max (size of pos_emb)."},
    {"model.mixer", CFGT_CHOICES, O(model.mixer), 0, "gma", 0, 0, NULL,
     "Sequence mixer: one name for every layer or a list with one per layer"},
    {"model.causal", CFGT_INT, O(model.causal), 0, "-1", -1, 1, NULL, "1 causal, 0 bidirectional, -1 by task (lm causal, classify not)."},
    {"model.init_std", CFGT_REAL, O(model.init_std), 0, "0.02", 0, 10, NULL,
     "Std of normal initialisation of linear and embedding weights (output projections scaled by 1/sqrt(2L))."},
    {"model.head_chunk", CFGT_INT, O(model.head_chunk), 0, "0", 0, 16777216, NULL,
     "Language model: rows whose logits the head computes at a time (0 = as many as 64 MiB of logits hold; "
     "docs/model.md §1)."},
    {"model.dropout", CFGT_REAL, O(model.dropout), 0, "0", 0, 0.95, NULL,
     "Dropout rate on the embeddings and each mixer's and MLP's output (training only; docs/model.md §8)."},
    {"model.attn_dropout", CFGT_REAL, O(model.attn_dropout), 0, "0", 0, 0.95, NULL,
     "Dropout rate on the attention probabilities of sdpa, sdpa_ref and linformer layers (training only; "
     "docs/model.md §8)."},
    {"model.qkv_dim", CFGT_INT, O(model.qkv_dim), 0, "0", 0, 65536, NULL,
     "Width of the q/k/v projections, split over the heads (0 = d_model; must be divisible by model.n_heads)."},
    {"model.dense_init", CFGT_ENUM, O(model.dense_init), 0, "normal", 0, 0, "normal|xavier_uniform",
     "Initialisation of attention projections and MLP weights: normal(init_std) or xavier_uniform (docs/model.md "
     "§1)."},
};
#undef O

static int validate_model(const Config *c) {
    const ModelCfg *m = &c->model;
    if (m->d_model % m->n_heads)
        return gma_errorf("key model.d_model: %d is not divisible by model.n_heads = %d", m->d_model, m->n_heads);
    if (cfg_qkv_dim(c) % m->n_heads)
        return gma_errorf("key model.qkv_dim: %d is not divisible by model.n_heads = %d", cfg_qkv_dim(c), m->n_heads);
    if (m->mixer.n != 1 && m->mixer.n != m->n_layers)
        return gma_errorf("key model.mixer: %d names for %d layers (give one name or one per layer)", m->mixer.n, m->n_layers);
    if (c->train.seq_len > m->max_seq_len)
        return gma_errorf("key train.seq_len: %d is longer than model.max_seq_len = %d", c->train.seq_len, m->max_seq_len);
    return 0;
}

const CfgSection model_cfg_section = {NULL, 0, g_model, CFG_N(g_model), validate_model, NULL};

const char *cfg_layer_mixer(const Config *c, int l) {
    return c->model.mixer.name[c->model.mixer.n == 1 ? 0 : l];
}

int cfg_causal(const Config *c) {
    if (c->model.causal >= 0) return c->model.causal;
    return c->model.task == MODEL_LM;
}

int cfg_d_ff(const Config *c) { return c->model.d_ff > 0 ? c->model.d_ff : 4 * c->model.d_model; }

int cfg_qkv_dim(const Config *c) { return c->model.qkv_dim > 0 ? c->model.qkv_dim : c->model.d_model; }

