/* config.h: the run configuration, its schema, JSON loading and validation.
 *
 * One table (config.c, g_schema) lists every key with its type, default, range or
 * allowed values and meaning. It drives defaults, validation of JSON files and of
 * `--set a.b=value` overrides, the resolved config written beside each run, and the
 * configuration reference in the README (`gmatrain --config-reference`).
 */
#ifndef GMA_CONFIG_H
#define GMA_CONFIG_H
#include <stdint.h>
#include <stdio.h>

#define CFG_MAX_LAYERS 64
#define CFG_STR 256

typedef struct GmaCfg {
    int n_components;       /* Kc */
    char routing[16];       /* gaussian | softmax */
    double temperature;
    double var_floor;
    double eps;
    int chunk;
    int shared_components;
    char init[16];          /* default | kmeans | orthogonal */
    double init_mean_scale;
    char memory[16];        /* none | ema */
    double ema_decay;       /* 0 = 1 - 1/(B N) */
    double div_weight;
    char div_mode[16];      /* token | batch */
    int monitor_every;
    char on_collapse[16];   /* warn | reinit | stop */
    double entropy_min;
    double util_min_share;
    int patience;
    double norm_growth_max;
} GmaCfg;

/* Baseline mixers (GMA_SPEC 3.5). */
typedef struct PerformerCfg {
    int features;           /* m random features (0 = 2 d) */
    int redraw;             /* redraw omega every this many training steps (0 = never) */
} PerformerCfg;

typedef struct LinformerCfg {
    int k;                  /* projected sequence length */
} LinformerCfg;

typedef struct MambaCfg {
    int d_state;            /* S */
    int expand;             /* E: inner width E D */
    int d_conv;             /* causal conv kernel */
    int dt_rank;            /* 0 = ceil(D / 16) */
    int chunk;              /* scan checkpoint interval */
} MambaCfg;

typedef struct ModelCfg {
    char task[16];          /* lm | classify */
    int vocab_size;         /* 0 = from the data */
    int d_model, n_layers, n_heads, d_ff, max_seq_len;
    char mixer[CFG_MAX_LAYERS][16];
    int n_mixer;            /* 1 = same for all layers, else n_layers */
    int causal;             /* -1 = by task (lm causal, classify bidirectional) */
    char pos[16];           /* learned | none */
    int mlp;
    double init_std;
    int auto_threshold;
    char pooling[16];       /* mean | cls (classify) */
    int n_classes;
    int n_seq;              /* classify: sequences per example (1, 2); 0 = from the data */
} ModelCfg;

typedef struct TrainCfg {
    int steps, batch_size, seq_len, grad_accum;
    char optimizer[16];     /* adamw | sgd */
    double lr, min_lr_ratio;
    int warmup;
    char schedule[16];      /* cosine | linear | constant */
    double beta1, beta2, adam_eps, weight_decay, momentum;
    int decay_embeddings, decay_norms, decay_biases, decay_mixture;
    double grad_clip;
    int eval_every, eval_batches, log_every, checkpoint_every, keep_checkpoints, max_bad_steps;
    int sample_every, sample_tokens; /* text samples during training (0 = none) */
    char sample_prompt[256];
} TrainCfg;

typedef struct DataCfg {
    char source[16];        /* recall | shards | cls */
    char path[CFG_STR];
    int recall_vocab, recall_pairs, recall_queries;
    int recall_valid, recall_test;
    int eval_stride;
    char task[16];          /* cls: listops | text | retrieval | image | jsonl | tsv */
    int max_len;            /* cls: tokens per sequence (0 = train.seq_len, less the CLS slot) */
    int truncate;           /* cls: 1 truncate longer sequences (counted), 0 refuse */
    int strip_headers;      /* cls generic data: drop mail headers */
} DataCfg;

typedef struct Config {
    char name[CFG_STR];
    int seed;
    char device[16];
    char precision[16];     /* fp32 | tf32 | bf16 (tf32, bf16: cuda only) */
    int threads;
    char out_dir[CFG_STR];
    ModelCfg model;
    GmaCfg gma;
    PerformerCfg performer;
    LinformerCfg linformer;
    MambaCfg mamba;
    TrainCfg train;
    DataCfg data;
} Config;

/* Fill every field with its default. */
void cfg_defaults(Config *c);
/* Apply a JSON file over the current values. Unknown keys, wrong types and values out of
 * range are refused with "FILE: key a.b: ..." ; malformed JSON with line and column. */
int cfg_load_file(Config *c, const char *path);
/* Apply a JSON text (source names it in messages). */
int cfg_load_text(Config *c, const char *text, const char *source);
/* Apply one "a.b=value" override. */
int cfg_set(Config *c, const char *assignment);
/* The same, naming src (e.g. "--device") instead of "--set" in messages. */
int cfg_set_from(Config *c, const char *assignment, const char *src);
/* After a cfg_validate failure: prefix the message with the "--set key=value" whose key it
 * names (the last such override), else with file (the config's source). */
void cfg_blame(const char *file, const char *const *sets, int n_sets);
/* Cross-field checks after loading (D % H, mixer names, lengths...). */
int cfg_validate(const Config *c);
/* The resolved configuration as a JSON string (caller frees). */
char *cfg_to_json(const Config *c);
/* Write the configuration reference as a Markdown table. */
void cfg_print_reference(FILE *f);
/* Mixer of layer l. */
const char *cfg_layer_mixer(const Config *c, int l);
/* Whether the mixers are causal (resolving -1 by task). */
int cfg_causal(const Config *c);
int cfg_d_ff(const Config *c);
#endif
