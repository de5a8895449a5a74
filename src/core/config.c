/* config.c: the configuration schema (one row per key), JSON loading with validation,
 * `--set` overrides, the resolved JSON dump and the Markdown reference. */
#include "core/config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "nn/mixers/mixer.h"

typedef enum { T_INT, T_REAL, T_BOOL, T_STR, T_MIXERS } CfgType;

typedef struct CfgKey {
    const char *key;    /* dotted path */
    CfgType type;
    size_t off;         /* offset in Config */
    size_t size;        /* for strings */
    const char *def;    /* default, as text */
    double lo, hi;      /* numeric range (inclusive) */
    const char *choices;/* "a|b|c" for strings, NULL = free text */
    const char *doc;
} CfgKey;

#define O(f) offsetof(Config, f)
#define S(f) sizeof(((Config *)0)->f)
#define BIG 1e18

static const CfgKey g_schema[] = {
    {"name", T_STR, O(name), S(name), "run", 0, 0, NULL, "Run name: outputs go to runs/<name>/ (or out_dir)."},
    {"seed", T_INT, O(seed), 0, "1337", 0, 2147483647, NULL, "Seed for initialisation, data order and generated data."},
    {"device", T_STR, O(device), S(device), "cpu", 0, 0, "cpu|cuda", "Backend that runs the ops."},
    {"precision", T_STR, O(precision), S(precision), "fp32", 0, 0, "fp32|tf32|bf16",
     "Matrix products: fp32; tf32 (tensor cores, cuda); bf16 (bf16 operands, fp32 accumulation and master weights, cuda)."},
    {"threads", T_INT, O(threads), 0, "0", 0, 1024, NULL, "OpenMP/BLAS threads (0 = all cores)."},
    {"out_dir", T_STR, O(out_dir), S(out_dir), "", 0, 0, NULL, "Run directory (empty = runs/<name>)."},

    {"model.task", T_STR, O(model.task), S(model.task), "lm", 0, 0, "lm|classify", "Decoder language model or encoder classifier."},
    {"model.vocab_size", T_INT, O(model.vocab_size), 0, "0", 0, 16777216, NULL, "Vocabulary size V (0 = from the data)."},
    {"model.d_model", T_INT, O(model.d_model), 0, "256", 1, 65536, NULL, "Model width D."},
    {"model.n_layers", T_INT, O(model.n_layers), 0, "4", 1, CFG_MAX_LAYERS, NULL, "Number of blocks L."},
    {"model.n_heads", T_INT, O(model.n_heads), 0, "4", 1, 1024, NULL, "Heads H (D must be divisible by H)."},
    {"model.d_ff", T_INT, O(model.d_ff), 0, "0", 0, 1048576, NULL, "MLP hidden width (0 = 4 D)."},
    {"model.max_seq_len", T_INT, O(model.max_seq_len), 0, "256", 1, 16777216, NULL, "Longest sequence N_max (size of pos_emb)."},
    {"model.mixer", T_MIXERS, O(model.mixer), 0, "gma", 0, 0, NULL,
     "Sequence mixer: one name for every layer or a list with one per layer (gma, sdpa, sdpa_ref, linear, performer, linformer, mamba, auto)."},
    {"model.causal", T_INT, O(model.causal), 0, "-1", -1, 1, NULL, "1 causal, 0 bidirectional, -1 by task (lm causal, classify not)."},
    {"model.pos", T_STR, O(model.pos), S(model.pos), "learned", 0, 0, "learned|none", "Position embedding."},
    {"model.mlp", T_BOOL, O(model.mlp), 0, "true", 0, 0, NULL, "Include the MLP in each block."},
    {"model.init_std", T_REAL, O(model.init_std), 0, "0.02", 0, 10, NULL,
     "Std of normal initialisation of linear and embedding weights (output projections scaled by 1/sqrt(2L))."},
    {"model.auto_threshold", T_INT, O(model.auto_threshold), 0, "1024", 1, 16777216, NULL,
     "mixer \"auto\": sequences shorter than this use sdpa, others gma."},
    {"model.pooling", T_STR, O(model.pooling), S(model.pooling), "mean", 0, 0, "mean|cls", "Classifier pooling."},
    {"model.n_classes", T_INT, O(model.n_classes), 0, "2", 2, 100000, NULL, "Classes of the classifier head."},
    {"model.n_seq", T_INT, O(model.n_seq), 0, "0", 0, 2, NULL,
     "Classifier: sequences per example, 1 or 2 (two-sequence head, retrieval); 0 = from the data."},

    {"gma.n_components", T_INT, O(gma.n_components), 0, "64", 1, 65536, NULL, "Components per head Kc."},
    {"gma.routing", T_STR, O(gma.routing), S(gma.routing), "gaussian", 0, 0, "gaussian|softmax", "Routing of queries and keys."},
    {"gma.temperature", T_REAL, O(gma.temperature), 0, "1", 1e-6, 1e6, NULL, "Responsibility temperature tau (fixed)."},
    {"gma.var_floor", T_REAL, O(gma.var_floor), 0, "0.0001", 0, 1e6, NULL, "Added to softplus(var_raw)."},
    {"gma.eps", T_REAL, O(gma.eps), 0, "1e-06", 0, 1, NULL, "Denominator epsilon of the normalised mixing core."},
    {"gma.chunk", T_INT, O(gma.chunk), 0, "64", 1, 65536, NULL, "Chunk length C of the causal scan."},
    {"gma.shared_components", T_BOOL, O(gma.shared_components), 0, "false", 0, 0, NULL, "One set of components for all heads."},
    {"gma.init", T_STR, O(gma.init), S(gma.init), "default", 0, 0, "default|kmeans|orthogonal", "Initialisation of the components."},
    {"gma.init_mean_scale", T_REAL, O(gma.init_mean_scale), 0, "0", 0, 1e6, NULL,
     "Std of the initial means (0 = (2 d)^(-1/4): soft initial responsibilities, see README)."},
    {"gma.memory", T_STR, O(gma.memory), S(gma.memory), "none", 0, 0, "none|ema", "Value memory: from the sequence, or an EMA buffer."},
    {"gma.ema_decay", T_REAL, O(gma.ema_decay), 0, "0", 0, 0.999999999, NULL, "EMA decay alpha in (0,1) (0 = 1 - 1/(B N))."},
    {"gma.div_weight", T_REAL, O(gma.div_weight), 0, "0", 0, 1e6, NULL, "Weight of the diversity loss (0 = off)."},
    {"gma.div_mode", T_STR, O(gma.div_mode), S(gma.div_mode), "token", 0, 0, "token|batch", "Diversity loss form."},
    {"gma.monitor_every", T_INT, O(gma.monitor_every), 0, "100", 0, 1000000000, NULL, "Routing health check period in steps (0 = off)."},
    {"gma.on_collapse", T_STR, O(gma.on_collapse), S(gma.on_collapse), "warn", 0, 0, "warn|reinit|stop", "Action on a collapse alert."},
    {"gma.entropy_min", T_REAL, O(gma.entropy_min), 0, "1.5", 0, 1e6, NULL, "Alert when mean responsibility entropy (nats) is below."},
    {"gma.util_min_share", T_REAL, O(gma.util_min_share), 0, "0.02", 0, 1, NULL, "A component is dead below this share of 1/Kc."},
    {"gma.patience", T_INT, O(gma.patience), 0, "3", 1, 1000000, NULL, "Checks a component must stay dead before an alert."},
    {"gma.norm_growth_max", T_REAL, O(gma.norm_growth_max), 0, "10", 1, 1e9, NULL, "EMA memory norm alert factor over its start."},

    {"performer.features", T_INT, O(performer.features), 0, "0", 0, 65536, NULL, "Performer: random features m per head (0 = 2 d)."},
    {"performer.redraw", T_INT, O(performer.redraw), 0, "0", 0, 1000000000, NULL,
     "Performer: redraw the random features every this many training steps (0 = never); the draw is saved in checkpoints."},
    {"linformer.k", T_INT, O(linformer.k), 0, "256", 1, 16777216, NULL, "Linformer: projected length k of keys and values (<= model.max_seq_len)."},
    {"mamba.d_state", T_INT, O(mamba.d_state), 0, "16", 1, 1024, NULL, "Mamba: state size S per channel."},
    {"mamba.expand", T_INT, O(mamba.expand), 0, "2", 1, 64, NULL, "Mamba: inner width = expand * d_model."},
    {"mamba.d_conv", T_INT, O(mamba.d_conv), 0, "4", 1, 64, NULL, "Mamba: kernel of the causal depthwise convolution."},
    {"mamba.dt_rank", T_INT, O(mamba.dt_rank), 0, "0", 0, 65536, NULL, "Mamba: rank of the dt projection (0 = ceil(d_model / 16))."},
    {"mamba.chunk", T_INT, O(mamba.chunk), 0, "64", 1, 65536, NULL, "Mamba: steps between saved scan states (memory/recompute trade-off)."},

    {"train.steps", T_INT, O(train.steps), 0, "1000", 0, 1000000000, NULL, "Optimiser steps."},
    {"train.batch_size", T_INT, O(train.batch_size), 0, "8", 1, 1000000, NULL, "Sequences per micro-batch B."},
    {"train.seq_len", T_INT, O(train.seq_len), 0, "256", 1, 16777216, NULL, "Training window N (<= model.max_seq_len)."},
    {"train.grad_accum", T_INT, O(train.grad_accum), 0, "1", 1, 1000000, NULL, "Micro-batches per optimiser step."},
    {"train.optimizer", T_STR, O(train.optimizer), S(train.optimizer), "adamw", 0, 0, "adamw|sgd", "Optimiser."},
    {"train.lr", T_REAL, O(train.lr), 0, "0.0003", 0, 1e3, NULL, "Peak learning rate."},
    {"train.min_lr_ratio", T_REAL, O(train.min_lr_ratio), 0, "0.1", 0, 1, NULL, "Final learning rate as a share of lr (cosine, linear)."},
    {"train.warmup", T_INT, O(train.warmup), 0, "100", 0, 1000000000, NULL, "Linear warmup steps."},
    {"train.schedule", T_STR, O(train.schedule), S(train.schedule), "cosine", 0, 0, "cosine|linear|constant", "Learning-rate schedule after warmup."},
    {"train.beta1", T_REAL, O(train.beta1), 0, "0.9", 0, 0.999999, NULL, "AdamW beta1."},
    {"train.beta2", T_REAL, O(train.beta2), 0, "0.95", 0, 0.999999999, NULL, "AdamW beta2."},
    {"train.adam_eps", T_REAL, O(train.adam_eps), 0, "1e-08", 0, 1, NULL, "AdamW epsilon."},
    {"train.weight_decay", T_REAL, O(train.weight_decay), 0, "0.1", 0, 100, NULL, "Decoupled weight decay (AdamW) or L2 (SGD)."},
    {"train.momentum", T_REAL, O(train.momentum), 0, "0", 0, 0.999999, NULL, "SGD momentum."},
    {"train.decay_embeddings", T_BOOL, O(train.decay_embeddings), 0, "false", 0, 0, NULL, "Apply weight decay to embeddings."},
    {"train.decay_norms", T_BOOL, O(train.decay_norms), 0, "false", 0, 0, NULL, "Apply weight decay to LayerNorm weights."},
    {"train.decay_biases", T_BOOL, O(train.decay_biases), 0, "false", 0, 0, NULL, "Apply weight decay to biases."},
    {"train.decay_mixture", T_BOOL, O(train.decay_mixture), 0, "false", 0, 0, NULL, "Apply weight decay to GMA mixture parameters."},
    {"train.grad_clip", T_REAL, O(train.grad_clip), 0, "1", 0, 1e9, NULL, "Clip the global gradient norm to this (0 = off)."},
    {"train.eval_every", T_INT, O(train.eval_every), 0, "100", 0, 1000000000, NULL, "Validation period in steps (0 = only at the end)."},
    {"train.eval_batches", T_INT, O(train.eval_batches), 0, "20", 0, 1000000000, NULL, "Validation batches (0 = the whole split)."},
    {"train.log_every", T_INT, O(train.log_every), 0, "10", 1, 1000000000, NULL, "metrics.jsonl / progress period in steps."},
    {"train.checkpoint_every", T_INT, O(train.checkpoint_every), 0, "500", 0, 1000000000, NULL, "Checkpoint period (0 = only at the end)."},
    {"train.keep_checkpoints", T_INT, O(train.keep_checkpoints), 0, "2", 1, 1000000, NULL, "Periodic checkpoints kept."},
    {"train.max_bad_steps", T_INT, O(train.max_bad_steps), 0, "5", 1, 1000000, NULL, "Stop after this many NaN/Inf losses in a row."},
    {"train.sample_every", T_INT, O(train.sample_every), 0, "0", 0, 1000000000, NULL,
     "Language models: generate a sample every this many steps (0 = never), printed and logged to metrics.jsonl."},
    {"train.sample_tokens", T_INT, O(train.sample_tokens), 0, "64", 1, 100000, NULL, "New tokens per training-time sample."},
    {"train.sample_prompt", T_STR, O(train.sample_prompt), S(train.sample_prompt), "", 0, 0, NULL,
     "Prompt of the training-time samples: text for the data's tokenizer (empty = its <|endoftext|> or <eos>, else token 0)."},

    {"data.source", T_STR, O(data.source), S(data.source), "recall", 0, 0, "recall|shards|cls",
     "recall: the embedded associative-recall generator; shards: token shards in data.path; cls: a classification "
     "task (data.task) for model.task \"classify\"."},
    {"data.path", T_STR, O(data.path), S(data.path), "", 0, 0, NULL, "Directory with train.bin/valid.bin/test.bin (+ meta.json)."},
    {"data.recall_vocab", T_INT, O(data.recall_vocab), 0, "64", 8, 1000000, NULL, "Recall task: vocabulary (half keys, half values, minus 2 specials)."},
    {"data.recall_pairs", T_INT, O(data.recall_pairs), 0, "8", 1, 4096, NULL, "Recall task: key-value pairs per sequence."},
    {"data.recall_queries", T_INT, O(data.recall_queries), 0, "0", 0, 1000000, NULL, "Recall task: queried keys (0 = as many as fit)."},
    {"data.recall_valid", T_INT, O(data.recall_valid), 0, "256", 1, 100000000, NULL, "Recall task: validation sequences."},
    {"data.recall_test", T_INT, O(data.recall_test), 0, "256", 1, 100000000, NULL, "Recall task: test sequences."},
    {"data.eval_stride", T_INT, O(data.eval_stride), 0, "0", 0, 16777216, NULL,
     "Evaluation on shards: 0 = windows without overlap; S = sliding windows advanced by S, scoring only the last S tokens."},
    {"data.task", T_STR, O(data.task), S(data.task), "listops", 0, 0, "listops|text|retrieval|image|pathfinder|jsonl|tsv",
     "Classification task (data.source \"cls\"); data.path as docs/lra.md gives for each."},
    {"data.max_len", T_INT, O(data.max_len), 0, "0", 0, 16777216, NULL,
     "Classification: tokens per sequence (0 = train.seq_len, less 1 with model.pooling \"cls\")."},
    {"data.truncate", T_BOOL, O(data.truncate), 0, "true", 0, 0, NULL,
     "Classification: truncate longer sequences to data.max_len with a counted warning (false = refuse the data)."},
    {"data.strip_headers", T_BOOL, O(data.strip_headers), 0, "false", 0, 0, NULL,
     "Generic classification data: drop everything up to the first empty line (mail headers)."},
};
#define N_SCHEMA (sizeof g_schema / sizeof g_schema[0])

static const CfgKey *find_key(const char *key) {
    for (size_t i = 0; i < N_SCHEMA; i++)
        if (strcmp(g_schema[i].key, key) == 0) return &g_schema[i];
    return NULL;
}

static int is_prefix_of_some_key(const char *prefix) {
    size_t n = strlen(prefix);
    for (size_t i = 0; i < N_SCHEMA; i++)
        if (strncmp(g_schema[i].key, prefix, n) == 0 && g_schema[i].key[n] == '.') return 1;
    return 0;
}

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

static int set_str(Config *c, const CfgKey *k, const char *v, const char *src) {
    if (k->choices && !in_choices(v, k->choices))
        return gma_errorf("%s: key %s: \"%s\" is not one of %s", src, k->key, v, k->choices);
    if (strlen(v) >= k->size) return gma_errorf("%s: key %s: value longer than %zu characters", src, k->key, k->size - 1);
    snprintf((char *)c + k->off, k->size, "%s", v);
    return 0;
}

static int set_num(Config *c, const CfgKey *k, double v, const char *src) {
    if (k->type == T_INT && v != floor(v)) return gma_errorf("%s: key %s: expected an integer, got %g", src, k->key, v);
    if (!(v >= k->lo && v <= k->hi)) /* NaN fails too */
        return gma_errorf("%s: key %s: %g is out of range [%g, %g]", src, k->key, v, k->lo, k->hi);
    if (k->type == T_INT)
        *(int *)((char *)c + k->off) = (int)v;
    else
        *(double *)((char *)c + k->off) = v;
    return 0;
}

static int set_mixers_list(Config *c, const char **names, int n, const char *src) {
    if (n < 1 || n > CFG_MAX_LAYERS) return gma_errorf("%s: key model.mixer: expected 1 to %d names", src, CFG_MAX_LAYERS);
    for (int i = 0; i < n; i++) {
        if (!mixer_find(names[i]))
            return gma_errorf("%s: key model.mixer: unknown mixer \"%s\" (known: %s)", src, names[i], mixer_names());
        snprintf(c->model.mixer[i], sizeof c->model.mixer[i], "%s", names[i]);
    }
    c->model.n_mixer = n;
    return 0;
}

/* Set key from a cJSON value. */
static int set_json(Config *c, const CfgKey *k, const cJSON *v, const char *src) {
    switch (k->type) {
    case T_INT:
    case T_REAL:
        if (!cJSON_IsNumber(v)) return gma_errorf("%s: key %s: expected a number", src, k->key);
        return set_num(c, k, v->valuedouble, src);
    case T_BOOL:
        if (!cJSON_IsBool(v)) return gma_errorf("%s: key %s: expected true or false", src, k->key);
        *(int *)((char *)c + k->off) = cJSON_IsTrue(v) ? 1 : 0;
        return 0;
    case T_STR:
        if (!cJSON_IsString(v)) return gma_errorf("%s: key %s: expected a string", src, k->key);
        return set_str(c, k, v->valuestring, src);
    case T_MIXERS: {
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

/* Set key from command-line text. */
static int set_text(Config *c, const CfgKey *k, const char *v, const char *src) {
    char *end;
    switch (k->type) {
    case T_INT:
    case T_REAL: {
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || errno) return gma_errorf("%s: key %s: \"%s\" is not a number", src, k->key, v);
        return set_num(c, k, d, src);
    }
    case T_BOOL:
        if (!strcmp(v, "true") || !strcmp(v, "1")) *(int *)((char *)c + k->off) = 1;
        else if (!strcmp(v, "false") || !strcmp(v, "0")) *(int *)((char *)c + k->off) = 0;
        else return gma_errorf("%s: key %s: expected true or false, got \"%s\"", src, k->key, v);
        return 0;
    case T_STR:
        return set_str(c, k, v, src);
    case T_MIXERS: {
        if (v[0] == '[') {
            cJSON *j = cJSON_Parse(v);
            if (!j) return gma_errorf("%s: key model.mixer: malformed list %s", src, v);
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
    for (size_t i = 0; i < N_SCHEMA; i++)
        if (set_text(c, &g_schema[i], g_schema[i].def, "defaults") != 0) {
            fprintf(stderr, "gma: bad schema default for %s: %s\n", g_schema[i].key, gma_error());
            abort();
        }
}

static int apply_object(Config *c, const cJSON *obj, const char *prefix, const char *src) {
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        char key[256];
        if (prefix[0]) snprintf(key, sizeof key, "%s.%s", prefix, it->string);
        else snprintf(key, sizeof key, "%s", it->string);
        const CfgKey *k = find_key(key);
        if (k) {
            if (set_json(c, k, it, src) != 0) return -1;
        } else if (cJSON_IsObject(it) && is_prefix_of_some_key(key)) {
            if (apply_object(c, it, key, src) != 0) return -1;
        } else {
            return gma_errorf("%s: unknown key %s", src, key);
        }
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
        return gma_errorf("%s: malformed JSON at line %d, column %d", source, line, col);
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

int cfg_set(Config *c, const char *a) {
    const char *eq = strchr(a, '=');
    if (!eq) return gma_errorf("--set %s: expected key=value", a);
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - a), a);
    const CfgKey *k = find_key(key);
    if (!k) return gma_errorf("--set: unknown key %s", key);
    return set_text(c, k, eq + 1, "--set");
}

const char *cfg_layer_mixer(const Config *c, int l) {
    return c->model.n_mixer == 1 ? c->model.mixer[0] : c->model.mixer[l];
}

int cfg_causal(const Config *c) {
    if (c->model.causal >= 0) return c->model.causal;
    return strcmp(c->model.task, "lm") == 0;
}

int cfg_d_ff(const Config *c) { return c->model.d_ff > 0 ? c->model.d_ff : 4 * c->model.d_model; }

int cfg_validate(const Config *c) {
    const ModelCfg *m = &c->model;
    if (m->d_model % m->n_heads)
        return gma_errorf("key model.d_model: %d is not divisible by model.n_heads = %d", m->d_model, m->n_heads);
    if (m->n_mixer != 1 && m->n_mixer != m->n_layers)
        return gma_errorf("key model.mixer: %d names for %d layers (give one name or one per layer)", m->n_mixer, m->n_layers);
    if (c->train.seq_len > m->max_seq_len)
        return gma_errorf("key train.seq_len: %d is longer than model.max_seq_len = %d", c->train.seq_len, m->max_seq_len);
    int causal = cfg_causal(c);
    for (int l = 0; l < m->n_layers; l++) {
        const MixerVT *vt = mixer_find(cfg_layer_mixer(c, l));
        if (causal && !vt->causal_ok)
            return gma_errorf("key model.mixer: mixer \"%s\" (layer %d) cannot run causally (the model is causal: model.causal or model.task \"lm\"); use a causal mixer", vt->name, l);
        if (!causal && !vt->bidir_ok)
            return gma_errorf("key model.mixer: mixer \"%s\" (layer %d) cannot run bidirectionally (model.causal or model.task \"classify\")", vt->name, l);
        if (vt->validate && vt->validate(c) != 0) return -1;
    }
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
    }
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
    if (!strcmp(c->gma.memory, "ema") && c->gma.ema_decay != 0 && !(c->gma.ema_decay > 0 && c->gma.ema_decay < 1))
        return gma_errorf("key gma.ema_decay: must be in (0, 1)");
    return 0;
}

char *cfg_to_json(const Config *c) {
    cJSON *root = cJSON_CreateObject();
    for (size_t i = 0; i < N_SCHEMA; i++) {
        const CfgKey *k = &g_schema[i];
        /* walk/create the parent objects */
        cJSON *parent = root;
        char path[256];
        snprintf(path, sizeof path, "%s", k->key);
        char *leaf = path, *dot;
        while ((dot = strchr(leaf, '.'))) {
            *dot = 0;
            cJSON *child = cJSON_GetObjectItemCaseSensitive(parent, leaf);
            if (!child) child = cJSON_AddObjectToObject(parent, leaf);
            parent = child;
            leaf = dot + 1;
        }
        const char *p = (const char *)c + k->off;
        switch (k->type) {
        case T_INT: cJSON_AddNumberToObject(parent, leaf, *(const int *)p); break;
        case T_REAL: cJSON_AddNumberToObject(parent, leaf, *(const double *)p); break;
        case T_BOOL: cJSON_AddBoolToObject(parent, leaf, *(const int *)p); break;
        case T_STR: cJSON_AddStringToObject(parent, leaf, p); break;
        case T_MIXERS:
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
    for (size_t i = 0; i < N_SCHEMA; i++) {
        const CfgKey *k = &g_schema[i];
        char allowed[128] = "";
        if (k->choices) snprintf(allowed, sizeof allowed, "%s", k->choices);
        else if (k->type == T_INT || k->type == T_REAL) snprintf(allowed, sizeof allowed, "[%g, %g]", k->lo, k->hi);
        else if (k->type == T_MIXERS) snprintf(allowed, sizeof allowed, "%s", mixer_names());
        for (char *q = allowed; *q; q++)
            if (*q == '|') *q = ',';
        fprintf(f, "| `%s` | %s | `%s` | %s | %s |\n", k->key, tn[k->type], k->def, allowed, k->doc);
    }
}
