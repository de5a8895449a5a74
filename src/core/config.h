/* config.h: the run configuration, its schema, JSON loading and validation.
 *
 * Every key has one schema row (CfgKey): type, default, range or allowed values and
 * meaning. The generic keys (top level, model.*, train.*, data.*) are config.c's table;
 * the keys of a mixer (gma.*, performer.*, ...) are a CfgSection that the mixer declares
 * in its own file, with offsets into its own struct, stored inside Config (so Config stays
 * copyable by value) and read with cfg_section. The nn registry installs the sections, the
 * mixer names and the mixers' validation with cfg_register (mixer_register_all) before
 * the first cfg_defaults; core itself knows no mixer. The rows drive defaults, validation
 * of JSON files and of `--set a.b=value` overrides, the resolved config written beside
 * each run, and the configuration reference in the README (`gmatrain --config-reference`).
 */
#ifndef GMA_CONFIG_H
#define GMA_CONFIG_H
#include <stddef.h> /* offsetof for the schema rows */
#include <stdint.h>
#include <stdio.h>

#define CFG_MAX_LAYERS 64
#define CFG_MAX_STEM 16   /* layers of the convolutional stem (model.stem_dilations) */
#define CFG_STR 256
#define CFG_MAX_SECTIONS 8     /* mixer sections (gma, performer, ...) */
#define CFG_SECTION_BYTES 512  /* storage of one section's struct */

typedef enum { CFGT_INT, CFGT_REAL, CFGT_BOOL, CFGT_STR, CFGT_MIXERS } CfgType;

/* One key. In a section, `key` is the name after "SECTION." and `off` an offset into the
 * section's struct; in config.c's table, the dotted path and an offset into Config. */
typedef struct CfgKey {
    const char *key;
    CfgType type;       /* CFGT_INT: int, CFGT_REAL: double, CFGT_BOOL: int 0/1, CFGT_STR: char[size] */
    size_t off;
    size_t size;        /* for strings: the array size */
    const char *def;    /* default, as text */
    double lo, hi;      /* numeric range (inclusive) */
    const char *choices;/* "a|b|c" for strings, NULL = free text */
    const char *doc;
} CfgKey;

/* The keys NAME.* of one mixer, over a struct of `size` bytes (<= CFG_SECTION_BYTES). */
typedef struct CfgSection {
    const char *name;
    size_t size;
    const CfgKey *keys;
    int n_keys;
} CfgSection;

typedef struct ModelCfg {
    char task[16];          /* lm | classify */
    int vocab_size;         /* 0 = from the data */
    int d_model, n_layers, n_heads, d_ff, max_seq_len;
    char mixer[CFG_MAX_LAYERS][16];
    int n_mixer;            /* 1 = same for all layers, else n_layers */
    int causal;             /* -1 = by task (lm causal, classify bidirectional) */
    char pos[16];           /* learned | sinusoidal | none */
    int mlp;
    double init_std;
    int auto_threshold;
    char pooling[16];       /* mean | cls | max (classify) */
    int key_padding_mask;   /* classify: the mixers see the key-padding mask (0: padding is content) */
    int n_classes;
    int n_seq;              /* classify: sequences per example (1, 2); 0 = from the data */
    double dropout;         /* embedding sum, mixer and MLP outputs (docs/model.md §8) */
    double attn_dropout;    /* attention probabilities (sdpa, sdpa_ref, linformer) */
    double mlp_hidden_dropout; /* MLP hidden activation after GELU (the LRA release's MlpBlock) */
    double head_dropout;    /* classifier head's hidden activations (the LRA release: none) */
    int attn_bias;          /* biases on the attention projections (q, k, v, o) */
    int qkv_dim;            /* width of the q/k/v projections (0 = d_model) */
    int head_hidden, head_hidden2; /* classifier head hidden widths (-1 = by task, 0 = none) */
    char head_act[16];      /* gelu | relu: activation of the head's hidden layers */
    double embed_std;       /* tok_emb init std (< 0 = init_std) */
    double cls_std;         /* cls_token init std (< 0 = init_std, 0 = zeros) */
    double mlp_bias_std;    /* MLP biases' init std (0 = zeros) */
    char dense_init[16];    /* normal | xavier_uniform: blocks' dense weights */
    char embed_init[16];    /* normal | ramp: tok_emb */
    char head_init[16];     /* normal | xavier_uniform | lecun_normal: head weights */
    char stem[16];          /* none | conv: the image classifier's convolutional stem */
    char stem_dilations[128]; /* its layers' dilations, comma-separated */
    char stem_norm[16];     /* batch | instance | none */
    int stem_width;         /* image width in tokens (0 = square) */
    int head_chunk;         /* language model: rows of logits computed at a time (0 = automatic) */
} ModelCfg;

typedef struct TrainCfg {
    int steps, batch_size, seq_len, grad_accum;
    char optimizer[16];     /* adamw | sgd */
    double lr, min_lr_ratio;
    int warmup;
    int lr_first_step;      /* the step number of the first update in warmup and rsqrt: 1, or 0 (LRA) */
    char schedule[16];      /* cosine | linear | constant | rsqrt */
    int decay_steps;        /* cosine / linear: steps of the decay after warmup (0 = steps - warmup) */
    char report[8];         /* best | last: the checkpoint whose test accuracy a classifier reports */
    double beta1, beta2, adam_eps, weight_decay, momentum;
    int decay_embeddings, decay_norms, decay_biases, decay_mixture;
    double grad_clip;
    int eval_every, eval_batches, log_every, checkpoint_every, keep_checkpoints, max_bad_steps;
    int eval_drop_last;     /* classifier: evaluate whole batches of batch_size only */
    int sample_every, sample_tokens; /* text samples during training (0 = none) */
    char sample_prompt[256];
} TrainCfg;

typedef struct DataCfg {
    char source[16];        /* recall | mqar | shards | cls */
    char path[CFG_STR];
    int recall_vocab, recall_pairs, recall_queries;
    int recall_valid, recall_test;
    int mqar_vocab, mqar_valid, mqar_test; /* mqar: Zoology's multi-query recall (data/lm/mqar.h) */
    double mqar_power_a;
    char mqar_lengths[128], mqar_pairs[128], mqar_test_lengths[128], mqar_test_pairs[128], mqar_filler[8];
    int eval_stride;
    char task[16];          /* cls: listops | text | retrieval | image | jsonl | tsv */
    int max_len;            /* cls: tokens per sequence (0 = train.seq_len, less the CLS slot) */
    int truncate;           /* cls: 1 truncate longer sequences (counted), 0 refuse */
    int pad_full;           /* cls: pad every batch to max_len (else to its longest sequence) */
    char text_valid[16];    /* text task: heldout | test (the LRA release's valid split) */
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
    TrainCfg train;
    DataCfg data;
    /* the registered sections' structs, in registration order (cfg_section) */
    _Alignas(16) unsigned char section[CFG_MAX_SECTIONS][CFG_SECTION_BYTES];
} Config;

/* What the mixer registry tells the configuration (cfg_register). */
typedef struct CfgRegistry {
    const char *mixers;                /* "gma|sdpa|...": the names model.mixer accepts */
    const CfgSection *const *sections; /* the mixers' sections, in the reference's order */
    int n_sections;
    int (*validate)(const Config *c);  /* the layers' mixers against the model and their own keys */
} CfgRegistry;

/* Install the registry (the last call wins; the pointers must outlive every Config). */
void cfg_register(const CfgRegistry *r);
/* The struct of section `name` ("gma") inside c, NULL when no such section is registered. */
const void *cfg_section(const Config *c, const char *name);
void *cfg_section_mut(Config *c, const char *name);
/* The value of a numeric or boolean key ("gma.chunk") as a double; aborts on an unknown
 * or non-numeric key (a programming error). */
double cfg_num(const Config *c, const char *key);

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
/* Cross-field checks after loading (D % H, lengths...), then the registry's validate
 * (each layer's mixer and its section). */
/* model.stem_dilations parsed into dil[0..max): the number of layers, or -1 with a message
 * naming the key (not a list of integers 1..64, empty, or more than max) */
int cfg_stem_dilations(const ModelCfg *m, int *dil, int max);
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
/* Width of the q/k/v projections (model.qkv_dim, 0 = d_model). */
int cfg_qkv_dim(const Config *c);
#endif
