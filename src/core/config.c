/* config.c: the generic configuration schema (one row per key), the registered mixer
 * sections, JSON loading with validation, `--set` overrides, the resolved JSON dump and
 * the Markdown reference. */
#include "core/config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

#define O(f) offsetof(Config, f)
#define S(f) sizeof(((Config *)0)->f)
#define BIG 1e18

/* the generic keys before the mixer sections (top level, model.*) */
static const CfgKey g_head[] = {
    {"name", CFGT_STR, O(name), S(name), "run", 0, 0, NULL, "Run name: outputs go to runs/<name>/ (or out_dir)."},
    {"seed", CFGT_INT, O(seed), 0, "1337", 0, 2147483647, NULL, "Seed for initialisation, data order and generated data."},
    {"device", CFGT_STR, O(device), S(device), "cpu", 0, 0, "cpu|cuda", "Backend that runs the ops."},
    {"precision", CFGT_STR, O(precision), S(precision), "fp32", 0, 0, "fp32|tf32|bf16",
     "Matrix products: fp32; tf32 (tensor cores, cuda); bf16 (bf16 operands, fp32 accumulation and master weights, cuda)."},
    {"threads", CFGT_INT, O(threads), 0, "0", 0, 1024, NULL, "OpenMP/BLAS threads (0 = all cores)."},
    {"out_dir", CFGT_STR, O(out_dir), S(out_dir), "", 0, 0, NULL, "Run directory (empty = runs/<name>)."},

    {"model.task", CFGT_STR, O(model.task), S(model.task), "lm", 0, 0, "lm|classify", "Decoder language model or encoder classifier."},
    {"model.vocab_size", CFGT_INT, O(model.vocab_size), 0, "0", 0, 16777216, NULL, "Vocabulary size V (0 = from the data)."},
    {"model.d_model", CFGT_INT, O(model.d_model), 0, "256", 1, 65536, NULL, "Model width D."},
    {"model.n_layers", CFGT_INT, O(model.n_layers), 0, "4", 1, CFG_MAX_LAYERS, NULL, "Number of blocks L."},
    {"model.n_heads", CFGT_INT, O(model.n_heads), 0, "4", 1, 1024, NULL, "Heads H (D must be divisible by H)."},
    {"model.d_ff", CFGT_INT, O(model.d_ff), 0, "0", 0, 1048576, NULL, "MLP hidden width (0 = 4 D)."},
    {"model.max_seq_len", CFGT_INT, O(model.max_seq_len), 0, "256", 1, 16777216, NULL, "Longest sequence N_max (size of pos_emb)."},
    {"model.mixer", CFGT_MIXERS, O(model.mixer), 0, "gma", 0, 0, NULL,
     "Sequence mixer: one name for every layer or a list with one per layer"},
    {"model.causal", CFGT_INT, O(model.causal), 0, "-1", -1, 1, NULL, "1 causal, 0 bidirectional, -1 by task (lm causal, classify not)."},
    {"model.pos", CFGT_STR, O(model.pos), S(model.pos), "learned", 0, 0, "learned|sinusoidal|none",
     "Position embedding: learned table, fixed sinusoidal table (not trained; docs/model.md §1), or none."},
    {"model.mlp", CFGT_BOOL, O(model.mlp), 0, "true", 0, 0, NULL, "Include the MLP in each block."},
    {"model.init_std", CFGT_REAL, O(model.init_std), 0, "0.02", 0, 10, NULL,
     "Std of normal initialisation of linear and embedding weights (output projections scaled by 1/sqrt(2L))."},
    {"model.auto_threshold", CFGT_INT, O(model.auto_threshold), 0, "1024", 1, 16777216, NULL,
     "mixer \"auto\": sequences shorter than this use sdpa, others gma."},
    {"model.pooling", CFGT_STR, O(model.pooling), S(model.pooling), "mean", 0, 0, "mean|cls|max",
     "Classifier pooling: the mean over the real positions, a learned CLS slot at position 0, or the largest value of each channel over the real positions."},
    {"model.stem", CFGT_STR, O(model.stem), S(model.stem), "none", 0, 0, "none|conv",
     "Classifier on images: a convolutional stem between the token embedding and the blocks (docs/model.md §2.1): "
     "3 x 3 convolutions over the image of each sequence's tokens, each with normalisation and ReLU."},
    {"model.stem_dilations", CFGT_STR, O(model.stem_dilations), S(model.stem_dilations), "1,1,2,2,4,4,8", 0, 0, NULL,
     "model.stem \"conv\": the dilation of each layer, comma-separated (the number of values is the number of layers)."},
    {"model.stem_norm", CFGT_STR, O(model.stem_norm), S(model.stem_norm), "batch", 0, 0, "batch|instance|none",
     "model.stem \"conv\": per-channel normalisation after each convolution: batch statistics (running ones in "
     "evaluation), each image's own, or none."},
    {"model.stem_width", CFGT_INT, O(model.stem_width), 0, "0", 0, 65536, NULL,
     "model.stem \"conv\": image width in tokens (0 = square images: the square root of the tokens per sequence)."},
    {"model.key_padding_mask", CFGT_BOOL, O(model.key_padding_mask), 0, "true", 0, 0, NULL,
     "Classifier: the mixers mask padded keys (false: padding tokens are keys like any other, as the LRA release's "
     "linear, performer and linformer attention; needs data.pad_full)."},
    {"model.head_chunk", CFGT_INT, O(model.head_chunk), 0, "0", 0, 16777216, NULL,
     "Language model: rows whose logits the head computes at a time (docs/model.md §1). Only one such chunk of "
     "[rows, V] logits exists; a training step over more rows runs the head's backward on each chunk in the forward "
     "(one extra [V, D] buffer). 0 = as many rows as 64 MiB of logits hold, a multiple of 64 (all rows when they fit)."},
    {"model.n_classes", CFGT_INT, O(model.n_classes), 0, "2", 2, 100000, NULL, "Classes of the classifier head."},
    {"model.n_seq", CFGT_INT, O(model.n_seq), 0, "0", 0, 2, NULL,
     "Classifier: sequences per example, 1 or 2 (two-sequence head, retrieval); 0 = from the data."},
    {"model.dropout", CFGT_REAL, O(model.dropout), 0, "0", 0, 0.95, NULL,
     "Dropout rate after the embedding sum and on each mixer's and MLP's output before the residual add (training only; 0 = off)."},
    {"model.attn_dropout", CFGT_REAL, O(model.attn_dropout), 0, "0", 0, 0.95, NULL,
     "Dropout rate on the attention probabilities of sdpa, sdpa_ref and linformer (training only; refused for the other mixers)."},
    {"model.mlp_hidden_dropout", CFGT_REAL, O(model.mlp_hidden_dropout), 0, "0", 0, 0.95, NULL,
     "Dropout rate on the MLP hidden activation after GELU, as the LRA release's MlpBlock (training only)."},
    {"model.head_dropout", CFGT_REAL, O(model.head_dropout), 0, "0", 0, 0.95, NULL,
     "Dropout rate on the classifier head's hidden activations (training only; the LRA release's head has none)."},
    {"model.attn_bias", CFGT_BOOL, O(model.attn_bias), 0, "true", 0, 0, NULL,
     "Biases on the attention projections q, k, v and o (false: none, as LRA)."},
    {"model.qkv_dim", CFGT_INT, O(model.qkv_dim), 0, "0", 0, 65536, NULL,
     "Width of the q/k/v projections, split over the heads (0 = d_model; must be divisible by model.n_heads)."},
    {"model.head_hidden", CFGT_INT, O(model.head_hidden), 0, "-1", -1, 1048576, NULL,
     "Classifier head: width of its first hidden layer (0 = none; -1 = none for one sequence, model.d_ff for two)."},
    {"model.head_hidden2", CFGT_INT, O(model.head_hidden2), 0, "0", 0, 1048576, NULL,
     "Classifier head: width of a second hidden layer (0 = none; needs model.head_hidden > 0)."},
    {"model.head_act", CFGT_STR, O(model.head_act), S(model.head_act), "gelu", 0, 0, "gelu|relu",
     "Classifier head: activation of its hidden layers."},
    {"model.embed_std", CFGT_REAL, O(model.embed_std), 0, "-1", -1, 100, NULL,
     "Std of the normal initialisation of tok_emb (-1 = model.init_std)."},
    {"model.embed_init", CFGT_STR, O(model.embed_init), S(model.embed_init), "normal", 0, 0, "normal|ramp",
     "Initialisation of tok_emb: normal(embed_std), or ramp: row t is max(t - 1, 0) / (V - 2) times one row drawn from "
     "normal(embed_std), for tokens that are the levels of one quantity, as the pixel tasks' grey level + 1 (docs/model.md §1)."},
    {"model.cls_std", CFGT_REAL, O(model.cls_std), 0, "-1", -1, 100, NULL,
     "Std of the normal initialisation of cls_token (-1 = model.init_std, 0 = zeros)."},
    {"model.mlp_bias_std", CFGT_REAL, O(model.mlp_bias_std), 0, "0", 0, 1, NULL,
     "Standard deviation of the normal the MLP biases (fc, proj) are drawn from; 0 = zeros (the LRA release: 1e-6)."},
    {"model.dense_init", CFGT_STR, O(model.dense_init), S(model.dense_init), "normal", 0, 0, "normal|xavier_uniform",
     "Initialisation of the blocks' dense weights (attention projections, MLP): normal(init_std) (output projections "
     "scaled by 1/sqrt(2L)), or xavier_uniform U(-a, a), a = sqrt(6 / (fan_in + fan_out)) (docs/model.md §1)."},
    {"model.head_init", CFGT_STR, O(model.head_init), S(model.head_init), "normal", 0, 0, "normal|xavier_uniform|lecun_normal",
     "Initialisation of the classifier head's weights: normal(init_std), xavier_uniform, or lecun_normal (JAX's: a normal truncated to +-2, scaled to variance 1/fan_in)."},
};

/* the generic keys after the mixer sections (train.*, data.*) */
static const CfgKey g_tail[] = {

    {"train.steps", CFGT_INT, O(train.steps), 0, "1000", 0, 1000000000, NULL, "Optimiser steps."},
    {"train.batch_size", CFGT_INT, O(train.batch_size), 0, "8", 1, 1000000, NULL, "Sequences per micro-batch B."},
    {"train.seq_len", CFGT_INT, O(train.seq_len), 0, "256", 1, 16777216, NULL, "Training window N (<= model.max_seq_len)."},
    {"train.grad_accum", CFGT_INT, O(train.grad_accum), 0, "1", 1, 1000000, NULL, "Micro-batches per optimiser step."},
    {"train.optimizer", CFGT_STR, O(train.optimizer), S(train.optimizer), "adamw", 0, 0, "adamw|sgd", "Optimiser."},
    {"train.lr", CFGT_REAL, O(train.lr), 0, "0.0003", 0, 1e3, NULL, "Peak learning rate."},
    {"train.min_lr_ratio", CFGT_REAL, O(train.min_lr_ratio), 0, "0.1", 0, 1, NULL, "Final learning rate as a share of lr (cosine, linear)."},
    {"train.warmup", CFGT_INT, O(train.warmup), 0, "100", 0, 1000000000, NULL, "Linear warmup steps."},
    {"train.lr_first_step", CFGT_INT, O(train.lr_first_step), 0, "1", 0, 1, NULL,
     "The step number the warmup and rsqrt schedules give the first update: 1 (lr/warmup), or 0 as the LRA release "
     "(learning rate 0 at the first update, the peak one step later)."},
    {"train.schedule", CFGT_STR, O(train.schedule), S(train.schedule), "cosine", 0, 0, "cosine|linear|constant|rsqrt",
     "Learning-rate schedule after warmup; rsqrt: lr * sqrt(warmup / step) (docs/model.md §1)."},
    {"train.decay_steps", CFGT_INT, O(train.decay_steps), 0, "0", 0, 1000000000, NULL,
     "cosine, linear: steps over which the rate decays after warmup, then stays at its floor (0 = train.steps - train.warmup)."},
    {"train.report", CFGT_STR, O(train.report), S(train.report), "best", 0, 0, "best|last",
     "Classifier: the test accuracy summary.json reports (reported_test_acc): of the best-validation checkpoint, or of the last."},
    {"train.beta1", CFGT_REAL, O(train.beta1), 0, "0.9", 0, 0.999999, NULL, "AdamW beta1."},
    {"train.beta2", CFGT_REAL, O(train.beta2), 0, "0.95", 0, 0.999999999, NULL, "AdamW beta2."},
    {"train.adam_eps", CFGT_REAL, O(train.adam_eps), 0, "1e-08", 0, 1, NULL, "AdamW epsilon."},
    {"train.weight_decay", CFGT_REAL, O(train.weight_decay), 0, "0.1", 0, 100, NULL, "Decoupled weight decay (AdamW) or L2 (SGD)."},
    {"train.momentum", CFGT_REAL, O(train.momentum), 0, "0", 0, 0.999999, NULL, "SGD momentum."},
    {"train.decay_embeddings", CFGT_BOOL, O(train.decay_embeddings), 0, "false", 0, 0, NULL, "Apply weight decay to embeddings."},
    {"train.decay_norms", CFGT_BOOL, O(train.decay_norms), 0, "false", 0, 0, NULL, "Apply weight decay to LayerNorm weights."},
    {"train.decay_biases", CFGT_BOOL, O(train.decay_biases), 0, "false", 0, 0, NULL, "Apply weight decay to biases."},
    {"train.decay_mixture", CFGT_BOOL, O(train.decay_mixture), 0, "false", 0, 0, NULL, "Apply weight decay to GMA mixture parameters."},
    {"train.grad_clip", CFGT_REAL, O(train.grad_clip), 0, "1", 0, 1e9, NULL, "Clip the global gradient norm to this (0 = off)."},
    {"train.eval_every", CFGT_INT, O(train.eval_every), 0, "100", 0, 1000000000, NULL, "Validation period in steps (0 = only at the end)."},
    {"train.eval_batches", CFGT_INT, O(train.eval_batches), 0, "20", 0, 1000000000, NULL, "Validation batches (0 = the whole split)."},
    {"train.eval_drop_last", CFGT_BOOL, O(train.eval_drop_last), 0, "false", 0, 0, NULL,
     "Classifier: the trainer's evaluations (validation, the final valid and test scores) read whole batches of "
     "train.batch_size only, leaving out the rest of each split (tf.data's drop_remainder, as the LRA image tasks)."},
    {"train.log_every", CFGT_INT, O(train.log_every), 0, "10", 1, 1000000000, NULL, "metrics.jsonl / progress period in steps."},
    {"train.checkpoint_every", CFGT_INT, O(train.checkpoint_every), 0, "500", 0, 1000000000, NULL, "Checkpoint period (0 = only at the end)."},
    {"train.keep_checkpoints", CFGT_INT, O(train.keep_checkpoints), 0, "2", 1, 1000000, NULL, "Periodic checkpoints kept."},
    {"train.max_bad_steps", CFGT_INT, O(train.max_bad_steps), 0, "5", 1, 1000000, NULL, "Stop after this many NaN/Inf losses in a row."},
    {"train.sample_every", CFGT_INT, O(train.sample_every), 0, "0", 0, 1000000000, NULL,
     "Language models: generate a sample every this many steps (0 = never), printed and logged to metrics.jsonl."},
    {"train.sample_tokens", CFGT_INT, O(train.sample_tokens), 0, "64", 1, 100000, NULL, "New tokens per training-time sample."},
    {"train.sample_prompt", CFGT_STR, O(train.sample_prompt), S(train.sample_prompt), "", 0, 0, NULL,
     "Prompt of the training-time samples: text for the data's tokenizer (empty = its <|endoftext|> or <eos>, else token 0)."},

    {"data.source", CFGT_STR, O(data.source), S(data.source), "recall", 0, 0, "recall|mqar|shards|cls",
     "recall: the embedded associative-recall generator; mqar: Zoology's multi-query associative recall (docs/mqar.md); shards: token shards in data.path; cls: a classification "
     "task (data.task) for model.task \"classify\"."},
    {"data.path", CFGT_STR, O(data.path), S(data.path), "", 0, 0, NULL, "Directory with train.bin/valid.bin/test.bin (+ meta.json)."},
    {"data.recall_vocab", CFGT_INT, O(data.recall_vocab), 0, "64", 8, 1000000, NULL, "Recall task: vocabulary (half keys, half values, minus 2 specials)."},
    {"data.recall_pairs", CFGT_INT, O(data.recall_pairs), 0, "8", 1, 4096, NULL, "Recall task: key-value pairs per sequence."},
    {"data.recall_queries", CFGT_INT, O(data.recall_queries), 0, "0", 0, 1000000, NULL, "Recall task: queried keys (0 = as many as fit)."},
    {"data.recall_valid", CFGT_INT, O(data.recall_valid), 0, "256", 1, 100000000, NULL, "Recall task: validation sequences."},
    {"data.recall_test", CFGT_INT, O(data.recall_test), 0, "256", 1, 100000000, NULL, "Recall task: test sequences."},
    {"data.mqar_vocab", CFGT_INT, O(data.mqar_vocab), 0, "8192", 8, 65536, NULL,
     "MQAR: vocabulary V, even: keys from [1, V/2), values from [V/2, V) (docs/mqar.md)."},
    {"data.mqar_lengths", CFGT_STR, O(data.mqar_lengths), S(data.mqar_lengths), "64", 0, 0, NULL,
     "MQAR: training lengths, comma-separated; each training batch holds one of them, cycling, padded to train.seq_len."},
    {"data.mqar_pairs", CFGT_STR, O(data.mqar_pairs), S(data.mqar_pairs), "4", 0, 0, NULL,
     "MQAR: key-value pairs of each training length (one value for all, or one per length; 4 x pairs <= length)."},
    {"data.mqar_test_lengths", CFGT_STR, O(data.mqar_test_lengths), S(data.mqar_test_lengths), "64", 0, 0, NULL,
     "MQAR: test lengths, comma-separated (gmaeval --data test --seq-len N scores the test length N alone)."},
    {"data.mqar_test_pairs", CFGT_STR, O(data.mqar_test_pairs), S(data.mqar_test_pairs), "4", 0, 0, NULL,
     "MQAR: key-value pairs of each test length (one for all, or one per length)."},
    {"data.mqar_power_a", CFGT_REAL, O(data.mqar_power_a), 0, "0.01", 0, 1, NULL,
     "MQAR: query gaps' power law p(g) proportional to a g^(a-1) (1 = uniform)."},
    {"data.mqar_filler", CFGT_STR, O(data.mqar_filler), S(data.mqar_filler), "random", 0, 0, "random|zero",
     "MQAR: the positions after the pairs that hold no query: uniform over [0, V) (Zoology's random_non_queries), or 0."},
    {"data.mqar_valid", CFGT_INT, O(data.mqar_valid), 0, "256", 1, 100000000, NULL, "MQAR: validation examples."},
    {"data.mqar_test", CFGT_INT, O(data.mqar_test), 0, "1000", 1, 100000000, NULL, "MQAR: test examples per evaluation."},
    {"data.eval_stride", CFGT_INT, O(data.eval_stride), 0, "0", 0, 16777216, NULL,
     "Evaluation on shards: 0 = windows without overlap; S = sliding windows advanced by S, scoring only the last S tokens."},
    {"data.task", CFGT_STR, O(data.task), S(data.task), "listops", 0, 0, "listops|text|retrieval|image|pathfinder|jsonl|tsv",
     "Classification task (data.source \"cls\"); data.path as docs/lra.md gives for each."},
    {"data.max_len", CFGT_INT, O(data.max_len), 0, "0", 0, 16777216, NULL,
     "Classification: tokens per sequence (0 = train.seq_len, less 1 with model.pooling \"cls\")."},
    {"data.truncate", CFGT_BOOL, O(data.truncate), 0, "true", 0, 0, NULL,
     "Classification: truncate longer sequences to data.max_len with a counted warning (false = refuse the data)."},
    {"data.pad_full", CFGT_BOOL, O(data.pad_full), 0, "false", 0, 0, NULL,
     "Classification: pad every batch to data.max_len (the LRA release's padded_batch to max_length), not to its longest sequence."},
    {"data.text_valid", CFGT_STR, O(data.text_valid), S(data.text_valid), "heldout", 0, 0, "heldout|test",
     "Text task (IMDB): heldout = valid is 2,400 reviews held out of train (train the other 22,600); test = the LRA "
     "release's split, valid is the test set and train all 25,000 (other tasks: unused)."},
    {"data.strip_headers", CFGT_BOOL, O(data.strip_headers), 0, "false", 0, 0, NULL,
     "Generic classification data: drop everything up to the first empty line (mail headers)."},
};
#define N_HEAD (sizeof g_head / sizeof g_head[0])
#define N_TAIL (sizeof g_tail / sizeof g_tail[0])

static const CfgRegistry *g_reg;

void cfg_register(const CfgRegistry *r) {
    if (r->n_sections > CFG_MAX_SECTIONS) {
        fprintf(stderr, "gma: %d configuration sections, more than CFG_MAX_SECTIONS = %d\n", r->n_sections, CFG_MAX_SECTIONS);
        abort();
    }
    for (int i = 0; i < r->n_sections; i++)
        if (r->sections[i]->size > CFG_SECTION_BYTES) {
            fprintf(stderr, "gma: configuration section %s needs %zu bytes, more than CFG_SECTION_BYTES = %d\n",
                    r->sections[i]->name, r->sections[i]->size, CFG_SECTION_BYTES);
            abort();
        }
    g_reg = r;
}

static const CfgRegistry *reg(void) {
    if (!g_reg) {
        fprintf(stderr, "gma: the configuration is used before the mixer registry is installed (mixer_register_all)\n");
        abort();
    }
    return g_reg;
}

static int section_index(const char *name) {
    const CfgRegistry *r = reg();
    for (int i = 0; i < r->n_sections; i++)
        if (!strcmp(r->sections[i]->name, name)) return i;
    return -1;
}

const void *cfg_section(const Config *c, const char *name) {
    int i = section_index(name);
    return i < 0 ? NULL : c->section[i];
}

void *cfg_section_mut(Config *c, const char *name) {
    int i = section_index(name);
    return i < 0 ? NULL : c->section[i];
}

/* A key resolved to its row and where its struct starts in Config. */
typedef struct Key {
    const CfgKey *k;
    size_t base;    /* 0 for generic keys, the section's storage for section keys */
    char full[128]; /* dotted path */
} Key;

static void key_of_section(Key *out, int si, int j) {
    const CfgSection *s = reg()->sections[si];
    out->k = &s->keys[j];
    out->base = offsetof(Config, section) + (size_t)si * CFG_SECTION_BYTES;
    snprintf(out->full, sizeof out->full, "%s.%s", s->name, s->keys[j].key);
}

static void key_generic(Key *out, const CfgKey *k) {
    out->k = k;
    out->base = 0;
    snprintf(out->full, sizeof out->full, "%s", k->key);
}

/* Every key in reference order: the head, the sections, the tail. */
static size_t n_keys(void) {
    size_t n = N_HEAD + N_TAIL;
    for (int i = 0; i < reg()->n_sections; i++) n += (size_t)reg()->sections[i]->n_keys;
    return n;
}

static void key_at(size_t i, Key *out) {
    if (i < N_HEAD) return key_generic(out, &g_head[i]);
    i -= N_HEAD;
    for (int s = 0; s < reg()->n_sections; s++) {
        size_t n = (size_t)reg()->sections[s]->n_keys;
        if (i < n) return key_of_section(out, s, (int)i);
        i -= n;
    }
    key_generic(out, &g_tail[i]);
}

static int find_key(const char *key, Key *out) {
    for (size_t i = 0, n = n_keys(); i < n; i++) {
        key_at(i, out);
        if (!strcmp(out->full, key)) return 1;
    }
    return 0;
}

static int is_prefix_of_some_key(const char *prefix) {
    size_t n = strlen(prefix);
    Key k;
    for (size_t i = 0, nk = n_keys(); i < nk; i++) {
        key_at(i, &k);
        if (strncmp(k.full, prefix, n) == 0 && k.full[n] == '.') return 1;
    }
    return 0;
}

#define AT(cfg, key) ((char *)(cfg) + (key)->base + (key)->k->off)
#define AT_C(cfg, key) ((const char *)(cfg) + (key)->base + (key)->k->off)

static int in_choices(const char *v, const char *choices) {
    size_t n = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

/* NUL_MARK: what cfg_load_text puts for a \u0000 escape (cJSON would end the string there):
 * the overlong two-byte form of NUL, which no valid UTF-8 holds */
#define NUL_MARK "\xC0\x80"

/* A string value is UTF-8 without NUL (it is copied into config.json, summary.json and the
 * checkpoints' metadata, which JSON readers must be able to read back in full). */
static int check_text(const char *v, const char *src, const char *key) {
    const char *nul = strstr(v, NUL_MARK);
    if (nul) return gma_errorf("%s: key %s: the value holds a NUL character (\\u0000) at byte %d", src, key, (int)(nul - v));
    long bad = gma_utf8_invalid(v, strlen(v));
    if (bad >= 0) return gma_errorf("%s: key %s: the value is not valid UTF-8 (byte %ld)", src, key, bad);
    return 0;
}

static int set_str(Config *c, const Key *k, const char *v, const char *src) {
    if (check_text(v, src, k->full) != 0) return -1;
    if (k->k->choices && !in_choices(v, k->k->choices))
        return gma_errorf("%s: key %s: \"%s\" is not one of %s", src, k->full, gma_quote(v), k->k->choices);
    if (strlen(v) >= k->k->size)
        return gma_errorf("%s: key %s: value longer than %zu characters", src, k->full, k->k->size - 1);
    snprintf(AT(c, k), k->k->size, "%s", v);
    return 0;
}

static int set_num(Config *c, const Key *k, double v, const char *src) {
    if (k->k->type == CFGT_INT && v != floor(v)) return gma_errorf("%s: key %s: expected an integer, got %g", src, k->full, v);
    if (!(v >= k->k->lo && v <= k->k->hi)) /* NaN fails too */
        return gma_errorf("%s: key %s: %g is out of range [%g, %g]", src, k->full, v, k->k->lo, k->k->hi);
    if (k->k->type == CFGT_INT)
        *(int *)AT(c, k) = (int)v;
    else
        *(double *)AT(c, k) = v;
    return 0;
}

static int set_mixers_list(Config *c, const char **names, int n, const char *src) {
    if (n < 1 || n > CFG_MAX_LAYERS) return gma_errorf("%s: key model.mixer: expected 1 to %d names", src, CFG_MAX_LAYERS);
    for (int i = 0; i < n; i++) {
        if (check_text(names[i], src, "model.mixer") != 0) return -1;
        if (!in_choices(names[i], reg()->mixers) || strlen(names[i]) >= sizeof c->model.mixer[i])
            return gma_errorf("%s: key model.mixer: unknown mixer \"%s\" (known: %s)", src, gma_quote(names[i]), reg()->mixers);
        snprintf(c->model.mixer[i], sizeof c->model.mixer[i], "%s", names[i]);
    }
    c->model.n_mixer = n;
    return 0;
}

/* Set key from a cJSON value. */
static int set_json(Config *c, const Key *k, const cJSON *v, const char *src) {
    switch (k->k->type) {
    case CFGT_INT:
    case CFGT_REAL:
        if (!cJSON_IsNumber(v)) return gma_errorf("%s: key %s: expected a number", src, k->full);
        return set_num(c, k, v->valuedouble, src);
    case CFGT_BOOL:
        if (!cJSON_IsBool(v)) return gma_errorf("%s: key %s: expected true or false", src, k->full);
        *(int *)AT(c, k) = cJSON_IsTrue(v) ? 1 : 0;
        return 0;
    case CFGT_STR:
        if (!cJSON_IsString(v)) return gma_errorf("%s: key %s: expected a string", src, k->full);
        return set_str(c, k, v->valuestring, src);
    case CFGT_MIXERS: {
        if (cJSON_IsString(v)) {
            const char *one = v->valuestring;
            return set_mixers_list(c, &one, 1, src);
        }
        if (!cJSON_IsArray(v)) return gma_errorf("%s: key model.mixer: expected a string or a list of strings", src);
        const char *names[CFG_MAX_LAYERS];
        int n = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, v) {
            if (!cJSON_IsString(e)) return gma_errorf("%s: key model.mixer: element %d is not a string", src, n);
            if (n >= CFG_MAX_LAYERS) return gma_errorf("%s: key model.mixer: more than %d layers", src, CFG_MAX_LAYERS);
            names[n++] = e->valuestring;
        }
        return set_mixers_list(c, names, n, src);
    }
    }
    return -1;
}

/* v is a number as JSON writes one: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? (no hex,
 * inf, nan, leading '+' or spaces, which strtod would take). */
static int is_json_number(const char *v) {
    const char *p = v;
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else return 0;
    if (*p == '.') {
        if (!(*++p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    return *p == 0;
}

/* Set key from command-line text. */
static int set_text(Config *c, const Key *k, const char *v, const char *src) {
    char *end;
    switch (k->k->type) {
    case CFGT_INT:
    case CFGT_REAL: {
        errno = 0;
        double d = strtod(v, &end);
        if (!is_json_number(v) || end == v || *end || errno)
            return gma_errorf("%s: key %s: \"%s\" is not a number", src, k->full, gma_quote(v));
        return set_num(c, k, d, src);
    }
    case CFGT_BOOL:
        if (!strcmp(v, "true") || !strcmp(v, "1")) *(int *)AT(c, k) = 1;
        else if (!strcmp(v, "false") || !strcmp(v, "0")) *(int *)AT(c, k) = 0;
        else return gma_errorf("%s: key %s: expected true or false, got \"%s\"", src, k->full, gma_quote(v));
        return 0;
    case CFGT_STR:
        return set_str(c, k, v, src);
    case CFGT_MIXERS: {
        if (v[0] == '[') {
            cJSON *j = cJSON_Parse(v);
            if (!j) return gma_errorf("%s: key model.mixer: malformed list %s", src, gma_quote(v));
            int rc = set_json(c, k, j, src);
            cJSON_Delete(j);
            return rc;
        }
        char buf[CFG_MAX_LAYERS * 17];
        snprintf(buf, sizeof buf, "%s", v);
        const char *names[CFG_MAX_LAYERS];
        int n = 0;
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",", &save); tok && n < CFG_MAX_LAYERS; tok = strtok_r(NULL, ",", &save)) names[n++] = tok;
        return set_mixers_list(c, names, n, src);
    }
    }
    return -1;
}

void cfg_defaults(Config *c) {
    memset(c, 0, sizeof *c);
    Key k;
    for (size_t i = 0, n = n_keys(); i < n; i++) {
        key_at(i, &k);
        if (set_text(c, &k, k.k->def, "defaults") != 0) {
            fprintf(stderr, "gma: bad schema default for %s: %s\n", k.full, gma_error());
            abort();
        }
    }
}

double cfg_num(const Config *c, const char *key) {
    Key k;
    if (!find_key(key, &k) || k.k->type == CFGT_STR || k.k->type == CFGT_MIXERS) {
        fprintf(stderr, "gma: cfg_num: %s is not a numeric configuration key\n", key);
        abort();
    }
    return k.k->type == CFGT_REAL ? *(const double *)AT_C(c, &k) : *(const int *)AT_C(c, &k);
}

/* 1 if an earlier member of the same object has its name (JSON allows repeats; a config
 * that gives a key twice is refused rather than one of the values silently winning). */
static int repeated_member(const cJSON *obj, const cJSON *it) {
    for (const cJSON *e = obj->child; e && e != it; e = e->next)
        if (!strcmp(e->string, it->string)) return 1;
    return 0;
}

static const char *json_kind(const cJSON *v) {
    return cJSON_IsNumber(v) ? "a number" : cJSON_IsString(v) ? "a string" : cJSON_IsBool(v) ? "true or false"
           : cJSON_IsArray(v) ? "a list" : cJSON_IsNull(v) ? "null" : "a value";
}

static int apply_object(Config *c, const cJSON *obj, const char *prefix, const char *src) {
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        char key[256];
        if (prefix[0]) snprintf(key, sizeof key, "%s.%s", prefix, it->string);
        else snprintf(key, sizeof key, "%s", it->string);
        if (repeated_member(obj, it)) return gma_errorf("%s: key %s is given twice", src, key);
        Key k;
        if (find_key(key, &k)) {
            if (set_json(c, &k, it, src) != 0) return -1;
        } else if (is_prefix_of_some_key(key)) { /* a section: its keys in an object */
            if (!cJSON_IsObject(it))
                return gma_errorf("%s: key %s: expected an object (the section's keys), got %s", src, key, json_kind(it));
            if (apply_object(c, it, key, src) != 0) return -1;
        } else {
            return gma_errorf("%s: unknown key %s", src, gma_quote(key));
        }
    }
    return 0;
}

/* The \u0000 escapes inside strings of JSON text, each replaced by NUL_MARK (a malloc'd copy),
 * or NULL when there is none. */
static char *mark_nul_escapes(const char *text) {
    char *out = NULL;
    size_t o = 0;
    int in_str = 0;
    for (const char *p = text; *p; p++) {
        int nul = in_str && !strncmp(p, "\\u0000", 6);
        if (nul && !out) {
            out = xmalloc(strlen(text) + 1);
            o = (size_t)(p - text);
            memcpy(out, text, o);
        }
        if (nul) {
            memcpy(out + o, NUL_MARK, 2), o += 2, p += 5;
            continue;
        }
        if (in_str && *p == '\\' && p[1]) { /* an escape: its next character is no quote */
            if (out) out[o++] = *p;
            p++;
        } else if (*p == '"') in_str = !in_str;
        if (out) out[o++] = *p;
    }
    if (out) out[o] = 0;
    return out;
}

/* cJSON's depth limit reached before `at` (objects and lists open outside strings) */
static int too_deep(const char *text, const char *at) {
    int depth = 0, in_str = 0;
    for (const char *p = text; p < at && *p; p++) {
        if (in_str && *p == '\\' && p[1]) p++;
        else if (*p == '"') in_str = !in_str;
        else if (!in_str && (*p == '{' || *p == '[')) {
            if (++depth > CJSON_NESTING_LIMIT) return 1;
        } else if (!in_str && (*p == '}' || *p == ']')) depth--;
    }
    return 0;
}

int cfg_load_text(Config *c, const char *text, const char *source) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        int line = 1, col = 1;
        const char *at = end ? end : text;
        for (const char *p = text; p < at && *p; p++) {
            if (*p == '\n') line++, col = 1;
            else col++;
        }
        if (too_deep(text, at + 1))
            return gma_errorf("%s: JSON nested deeper than %d levels at line %d, column %d", source, CJSON_NESTING_LIMIT, line,
                              col);
        return gma_errorf("%s: malformed JSON at line %d, column %d", source, line, col);
    }
    char *marked = mark_nul_escapes(text); /* parsed again so that a \u0000 does not cut its string short */
    if (marked) {
        cJSON_Delete(root);
        root = cJSON_ParseWithOpts(marked, &end, 1);
        free(marked);
        if (!root) return gma_errorf("%s: malformed JSON", source);
    }
    int rc = 0;
    if (!cJSON_IsObject(root)) rc = gma_errorf("%s: the configuration must be a JSON object", source);
    else rc = apply_object(c, root, "", source);
    cJSON_Delete(root);
    return rc;
}

int cfg_load_file(Config *c, const char *path) {
    char *text = gma_read_file(path, NULL);
    if (!text) return -1;
    int rc = cfg_load_text(c, text, path);
    free(text);
    return rc;
}

int cfg_set(Config *c, const char *a) { return cfg_set_from(c, a, "--set"); }

int cfg_set_from(Config *c, const char *a, const char *src) {
    const char *eq = strchr(a, '=');
    if (!eq) return gma_errorf("%s %s: expected key=value", src, a);
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - a), a);
    Key k;
    if (!find_key(key, &k)) return gma_errorf("%s: unknown key %s", src, gma_quote(key));
    return set_text(c, &k, eq + 1, src);
}

void cfg_blame(const char *file, const char *const *sets, int n_sets) {
    const char *msg = gma_error();
    for (int i = n_sets - 1; i >= 0; i--) {
        const char *eq = strchr(sets[i], '=');
        size_t kl = eq ? (size_t)(eq - sets[i]) : strlen(sets[i]);
        for (const char *p = strstr(msg, " "); kl && p; p = strstr(p + 1, " ")) {
            /* the key as a whole word of the message: " model.d_model:" but not " model.d_model_x" */
            char after = p[1 + kl];
            if (!strncmp(p + 1, sets[i], kl) && !(after == '.' || after == '_' || (after >= 'a' && after <= 'z'))) {
                gma_error_prefix("--set %s", sets[i]);
                return;
            }
        }
    }
    gma_error_prefix("%s", file);
}

/* The run name is one path component under runs/: not empty, no '/', not "." or "..". */
static int check_run_name(const char *name) {
    if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return gma_errorf("key name: \"%s\" is not a plain name (outputs go to runs/<name>/: no '/', not empty, \".\" or \"..\")",
                          gma_quote(name));
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20) return gma_errorf("key name: control character at position %d", (int)(p - name));
    return 0;
}

const char *cfg_layer_mixer(const Config *c, int l) {
    return c->model.n_mixer == 1 ? c->model.mixer[0] : c->model.mixer[l];
}

int cfg_causal(const Config *c) {
    if (c->model.causal >= 0) return c->model.causal;
    return strcmp(c->model.task, "lm") == 0;
}

int cfg_d_ff(const Config *c) { return c->model.d_ff > 0 ? c->model.d_ff : 4 * c->model.d_model; }

int cfg_qkv_dim(const Config *c) { return c->model.qkv_dim > 0 ? c->model.qkv_dim : c->model.d_model; }

int cfg_stem_dilations(const ModelCfg *m, int *dil, int max) {
    int n = 0;
    for (const char *s = m->stem_dilations; *s;) {
        char *end;
        long d = strtol(s, &end, 10);
        if (end == s || d < 1 || d > 64 || (*end && *end != ',') || (*end == ',' && !end[1]))
            return gma_errorf("key model.stem_dilations: \"%s\" is not a comma-separated list of dilations 1..64",
                              m->stem_dilations);
        if (n == max) return gma_errorf("key model.stem_dilations: more than %d layers", max);
        dil[n++] = (int)d;
        s = *end ? end + 1 : end;
    }
    if (!n) return gma_errorf("key model.stem_dilations: empty (model.stem \"conv\" needs at least one layer)");
    return n;
}

int cfg_validate(const Config *c) {
    const ModelCfg *m = &c->model;
    if (check_run_name(c->name) != 0) return -1;
    if (m->d_model % m->n_heads)
        return gma_errorf("key model.d_model: %d is not divisible by model.n_heads = %d", m->d_model, m->n_heads);
    if (cfg_qkv_dim(c) % m->n_heads)
        return gma_errorf("key model.qkv_dim: %d is not divisible by model.n_heads = %d", cfg_qkv_dim(c), m->n_heads);
    if (m->head_hidden2 > 0 && m->head_hidden <= 0)
        return gma_errorf("key model.head_hidden2: a second hidden layer needs model.head_hidden > 0");
    if (m->n_mixer != 1 && m->n_mixer != m->n_layers)
        return gma_errorf("key model.mixer: %d names for %d layers (give one name or one per layer)", m->n_mixer, m->n_layers);
    if (c->train.seq_len > m->max_seq_len)
        return gma_errorf("key train.seq_len: %d is longer than model.max_seq_len = %d", c->train.seq_len, m->max_seq_len);
    int causal = cfg_causal(c);
    if (reg()->validate && reg()->validate(c) != 0) return -1;
    int classify = !strcmp(m->task, "classify"), cls_data = !strcmp(c->data.source, "cls");
    if (classify && !cls_data) return gma_errorf("key data.source: model.task \"classify\" needs data.source \"cls\"");
    if (!classify && cls_data) return gma_errorf("key model.task: data.source \"cls\" needs model.task \"classify\"");
    if (cls_data && !c->data.path[0]) return gma_errorf("key data.path: required when data.source is \"cls\"");
    if (classify) {
        int slot = !strcmp(m->pooling, "cls");
        if (c->data.max_len + slot > c->train.seq_len)
            return gma_errorf("key data.max_len: %d%s does not fit train.seq_len = %d", c->data.max_len,
                              slot ? " plus the CLS slot" : "", c->train.seq_len);
        if (slot && c->train.seq_len < 2) return gma_errorf("key train.seq_len: needs at least 2 with model.pooling \"cls\"");
        if (strcmp(m->stem, "none") && (slot || m->n_seq == 2))
            return gma_errorf("key model.stem: the convolutional stem takes one image per example and mean or max "
                              "pooling (not model.pooling \"cls\", whose slot is no pixel, or two sequences)");
        if (!m->key_padding_mask && !c->data.pad_full)
            return gma_errorf("key model.key_padding_mask: false makes padding content, so it needs data.pad_full true "
                              "(else an example's padding would depend on its batch)");
    }
    int dil[CFG_MAX_STEM];
    if (strcmp(m->stem, "none") && cfg_stem_dilations(m, dil, CFG_MAX_STEM) < 0) return -1;
    if (!classify && strcmp(m->stem, "none"))
        return gma_errorf("key model.stem: only classifiers take a convolutional stem (its normalisation and 3 x 3 "
                          "taps see later tokens)");
    if (c->train.sample_every > 0 && (classify || !causal))
        return gma_errorf("key train.sample_every: only causal language models generate samples (model.task \"lm\", model.causal true)");
    if (strcmp(c->precision, "fp32") && strcmp(c->device, "cuda"))
        return gma_errorf("key precision: %s needs device cuda (the %s backend runs fp32)", c->precision, c->device);
    if (c->data.eval_stride > c->train.seq_len)
        return gma_errorf("key data.eval_stride: %d is larger than train.seq_len = %d", c->data.eval_stride, c->train.seq_len);
    if (!strcmp(c->data.source, "shards") && !c->data.path[0])
        return gma_errorf("key data.path: required when data.source is \"shards\"");
    if (!strcmp(c->data.source, "recall")) {
        int need = 2 * c->data.recall_pairs + 2;
        if (c->train.seq_len < need)
            return gma_errorf("key train.seq_len: %d is too short for %d recall pairs (need at least %d)", c->train.seq_len,
                              c->data.recall_pairs, need);
        if (c->data.recall_vocab < 2 * c->data.recall_pairs + 2)
            return gma_errorf("key data.recall_vocab: %d is too small for %d distinct keys", c->data.recall_vocab, c->data.recall_pairs);
    }
    return 0;
}

char *cfg_to_json(const Config *c) {
    cJSON *root = cJSON_CreateObject();
    Key key;
    for (size_t i = 0, nk = n_keys(); i < nk; i++) {
        key_at(i, &key);
        const CfgKey *k = key.k;
        /* walk/create the parent objects */
        cJSON *parent = root;
        char path[256];
        snprintf(path, sizeof path, "%s", key.full);
        char *leaf = path, *dot;
        while ((dot = strchr(leaf, '.'))) {
            *dot = 0;
            cJSON *child = cJSON_GetObjectItemCaseSensitive(parent, leaf);
            if (!child) child = cJSON_AddObjectToObject(parent, leaf);
            parent = child;
            leaf = dot + 1;
        }
        const char *p = AT_C(c, &key);
        switch (k->type) {
        case CFGT_INT: cJSON_AddNumberToObject(parent, leaf, *(const int *)p); break;
        case CFGT_REAL: cJSON_AddNumberToObject(parent, leaf, *(const double *)p); break;
        case CFGT_BOOL: cJSON_AddBoolToObject(parent, leaf, *(const int *)p); break;
        case CFGT_STR: cJSON_AddStringToObject(parent, leaf, p); break;
        case CFGT_MIXERS:
            if (c->model.n_mixer == 1) cJSON_AddStringToObject(parent, leaf, c->model.mixer[0]);
            else {
                cJSON *arr = cJSON_AddArrayToObject(parent, leaf);
                for (int l = 0; l < c->model.n_mixer; l++) cJSON_AddItemToArray(arr, cJSON_CreateString(c->model.mixer[l]));
            }
            break;
        }
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    return s;
}

void cfg_print_reference(FILE *f) {
    fprintf(f, "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n");
    static const char *tn[] = {"int", "number", "bool", "string", "string or list"};
    Key key;
    for (size_t i = 0, nk = n_keys(); i < nk; i++) {
        key_at(i, &key);
        const CfgKey *k = key.k;
        char allowed[256] = "", doc[512];
        snprintf(doc, sizeof doc, "%s", k->doc);
        if (k->choices) snprintf(allowed, sizeof allowed, "%s", k->choices);
        else if (k->type == CFGT_INT) snprintf(allowed, sizeof allowed, "[%.0f, %.0f]", k->lo, k->hi);
        else if (k->type == CFGT_REAL) snprintf(allowed, sizeof allowed, "[%g, %g]", k->lo, k->hi);
        else if (k->type == CFGT_MIXERS) { /* the registered names, also listed in the meaning */
            snprintf(allowed, sizeof allowed, "%s", reg()->mixers);
            size_t n = strlen(doc);
            n += (size_t)snprintf(doc + n, sizeof doc - n, " (");
            for (const char *q = reg()->mixers; *q && n + 3 < sizeof doc; q++)
                n += (size_t)snprintf(doc + n, sizeof doc - n, *q == '|' ? ", " : "%c", *q);
            snprintf(doc + n, sizeof doc - n, ").");
        }
        for (char *q = allowed; *q; q++)
            if (*q == '|') *q = ',';
        fprintf(f, "| `%s` | %s | `%s` | %s | %s |\n", key.full, tn[k->type], k->def, allowed, doc);
    }
}
