/* config.h: the run configuration and its schema engine: key types, JSON files and
 * `--set a.b=value` overrides, cross-field validation, the resolved dump written beside
 * each run and the reference table of docs/config.md (`gmatrain --config-reference`).
 *
 * Every key is one schema row (CfgKey). Core holds no rows: each module declares its keys
 * as a CfgSection with their defaults, ranges, docs and checks (validate). A section lies
 * over Config (name NULL: dotted keys "model.d_model", offsets into Config; the structs
 * below) or is stored (name "gma": keys NAME.*, offsets into the module's own struct, kept
 * inside Config so that it stays copyable, read with cfg_section_of). config_register_all
 * (src/train) installs every section, in the reference's order, before the first
 * cfg_defaults. */
#ifndef GMA_CONFIG_H
#define GMA_CONFIG_H
#include <stddef.h> /* offsetof for the schema rows */
#include <stdint.h>
#include <stdio.h>

#define CFG_MAX_LAYERS 64
#define CFG_MAX_STEM 16   /* layers of the convolutional stem (model.stem_dilations) */
#define CFG_STR 256
#define CFG_MAX_SECTIONS 24    /* stored sections (gma, performer, stem, passkey, ...) */
#define CFG_SECTION_BYTES 1024 /* storage of one section's struct (optim's holds train.freeze's 512) */

typedef enum { CFGT_INT, CFGT_REAL, CFGT_BOOL, CFGT_STR, CFGT_CHOICES, CFGT_ENUM, CFGT_STRLIST, CFGT_INTS } CfgType;

/* The value of a CFGT_INTS key: one integer (n = 1, written as a number) or a list of
 * 1..CFG_MAX_LAYERS integers (written as a JSON list when n > 1), each in the row's range.
 * A module that takes one entry per layer of some kind checks n against their number. */
typedef struct CfgInts {
    int n;
    int v[CFG_MAX_LAYERS];
} CfgInts;

/* The value of a CFGT_CHOICES key: one name (n = 1, written as a string) or a list of
 * 1..CFG_MAX_LAYERS names (written as a JSON list when n > 1), each one of the choices the
 * registry supplies for the key (CfgRegistry.lists: a registry of modules, as the mixers'),
 * with its index among them in id. */
#define CFG_CHOICE_LEN 16
typedef struct CfgChoices {
    int n;
    unsigned char id[CFG_MAX_LAYERS];
    char name[CFG_MAX_LAYERS][CFG_CHOICE_LEN];
} CfgChoices;

/* One key. In a stored section `key` is the name after "SECTION." and `off` an offset into
 * the section's struct; in a section over Config, the dotted path and an offset into Config. */
typedef struct CfgKey {
    const char *key;
    CfgType type;       /* CFGT_INT: int (with `choices` "a|b" also one of those words, stored as -1 - its
                           index and written back as the word; lo must then be >= 0), CFGT_REAL: double, CFGT_BOOL: int 0/1, CFGT_STR: char[size],
                           CFGT_ENUM: int, the index of the value among `choices` (written as the name),
                           CFGT_STRLIST: char[size], a list of non-empty strings without commas kept
                           comma-joined (JSON: a list of strings; --set: "a,b"; read with cfg_list_next),
                           CFGT_INTS: CfgInts, a number or a list of numbers (JSON list, or "4,8" / "[4,8]"
                           on the command line), each integer in [lo, hi],
                           CFGT_CHOICES: CfgChoices, a name or a list of names (JSON list, or "a,b" /
                           '["a","b"]' on the command line) among the registry's choices for the key
                           (`choices` NULL) */
    size_t off;
    size_t size;        /* for strings: the array size */
    const char *def;    /* default, as text */
    double lo, hi;      /* numeric range (inclusive) */
    const char *choices;/* "a|b|c" for enums (and strings), NULL = free text */
    const char *doc;
} CfgKey;

typedef struct Config Config;

/* The keys of one module: stored (name "gma": keys NAME.* over a struct of `size` bytes,
 * <= CFG_SECTION_BYTES) or over Config (name NULL, size 0). validate: the module's
 * cross-field checks, run by cfg_validate in registration order (NULL = none). A stored
 * section may give its keys another section's prefix (the linear core's keys are gma.*). */
typedef struct CfgSection {
    const char *name;
    size_t size;
    const CfgKey *keys;
    int n_keys;
    int (*validate)(const Config *c);
    const char *prefix; /* a stored section's key prefix when it is not its name (NULL = name) */
} CfgSection;

/* The backbone's keys over Config, read by several modules; the classifier head's own
 * (model.n_classes, n_seq, head_*, cls_std, key_padding_mask), the stem's (model.stem*) and
 * the model's own are their modules' stored sections (nn/cls_head.c, nn/stem.c,
 * model/model.c). */
typedef struct ModelCfg {
    int task;               /* MODEL_LM | MODEL_CLASSIFY (nn/model_cfg.h) */
    int vocab_size;         /* 0 = from the data */
    int d_model, n_layers, n_heads, d_ff, max_seq_len;
    CfgChoices mixer;       /* model.mixer: n 1 = same for all layers, else n_layers (set it through cfg_set) */
    int causal;             /* -1 = by task (lm causal, classify bidirectional) */
    double init_std;
    int pooling;            /* PoolKind (nn/pool.h): mean | cls | max (classify) */
    double dropout;         /* embedding sum, mixer and MLP outputs (docs/model.md §8) */
    double attn_dropout;    /* attention probabilities (sdpa, sdpa_ref, linformer) */
    int qkv_dim;            /* width of the q/k/v projections (0 = d_model) */
    int dense_init;         /* DENSE_INIT_NORMAL | DENSE_INIT_XAVIER_UNIFORM: blocks' dense weights */
    int head_chunk;         /* language model: rows of logits computed at a time (0 = automatic) */
} ModelCfg;

/* The run's train.* keys over Config; the optimiser's and the schedule's (train.optimizer,
 * lr, ..., grad_clip, freeze) are optim's stored section (optim/optim.c), and those only
 * the training loop reads one of train/run_cfg.c. */
typedef struct TrainCfg {
    int steps, batch_size, seq_len;
    int eval_drop_last;     /* classifier: evaluate whole batches of batch_size only */
    int sample_every, sample_tokens; /* text samples during training (0 = none) */
    char sample_prompt[256];
    char distill_teacher[CFG_STR]; /* knowledge distillation: the teacher run or checkpoint ("" = none) */
    double distill_weight, distill_temperature; /* loss = CE + weight T^2 KL(teacher || student) at T */
} TrainCfg;

/* The data keys over Config; the recall task's and MQAR's are stored sections of
 * data/lm/lmdata.c, passkey's and xmqar's of data/lm/passkey.c and xmqar.c, the keys of loading a classification task one of train/cls_task.c. */
typedef struct DataCfg {
    int source;             /* DataSource (data/lm/lmdata.h, DATA_SOURCES): recall | mqar | passkey | xmqar | shards | cls */
    char path[CFG_STR];
    int eval_stride;
    int max_len;            /* cls: tokens per sequence (0 = train.seq_len, less the CLS slot) */
    int pad_full;           /* cls: pad every batch to max_len (else to its longest sequence) */
} DataCfg;

struct Config {
    char name[CFG_STR];
    int seed;
    int device;             /* OpsDevice (ops/ops.h): cpu | cuda */
    int precision;          /* OpsPrecision (ops/ops.h): fp32 | tf32 | bf16 (tf32, bf16: cuda only) */
    int threads;
    char out_dir[CFG_STR];
    ModelCfg model;
    TrainCfg train;
    DataCfg data;
    /* the registered sections' structs, in registration order (cfg_section) */
    _Alignas(16) unsigned char section[CFG_MAX_SECTIONS][CFG_SECTION_BYTES];
};

/* For the rows of a section over Config: a field's offset and size. */
#define CFG_OFF(f) offsetof(Config, f)
#define CFG_SIZE(f) sizeof(((Config *)0)->f)
#define CFG_N(rows) (int)(sizeof(rows) / sizeof((rows)[0]))

/* The choices of a CFGT_CHOICES key, supplied by the registry that knows them (the mixers'
 * for model.mixer): "a|b|..."; `what` names one of them in messages ("mixer"). */
typedef struct CfgChoiceList {
    const char *key, *what, *choices;
} CfgChoiceList;

/* What the modules tell the configuration (cfg_register). */
typedef struct CfgRegistry {
    const CfgChoiceList *lists;        /* the choices of every CFGT_CHOICES key */
    int n_lists;
    const CfgSection *const *sections; /* every module's section, in the reference's order */
    int n_sections;
} CfgRegistry;

/* Install the registry (the last call wins; the pointers must outlive every Config). */
void cfg_register(const CfgRegistry *r);
/* The struct of section `name` ("gma") inside c, NULL when no such section is registered. */
const void *cfg_section(const Config *c, const char *name);
void *cfg_section_mut(Config *c, const char *name);
/* The same for the section s itself (a pointer compare: the owner's accessor). */
const void *cfg_section_of(const Config *c, const CfgSection *s);
void *cfg_section_of_mut(Config *c, const CfgSection *s);
/* The value of a numeric or boolean key ("gma.chunk") as a double (a CFGT_INTS key: its
 * largest entry); aborts on an unknown or non-numeric key (a programming error). */
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
/* Cross-field checks after loading: every section's validate, in registration order. */
int cfg_validate(const Config *c);
/* The name of the value of choice key `key` ("model.task" -> "lm"), for messages (a ring
 * of 8 buffers per thread); aborts on a key that is no choice key. */
const char *cfg_enum_name(const Config *c, const char *key);
/* The resolved configuration as a JSON string (caller frees). */
char *cfg_to_json(const Config *c);
/* The items of a CFGT_STRLIST value, one per call: *p starts at the value and moves on;
 * copies the next item into buf and returns 1, or 0 at the end. */
int cfg_list_next(const char **p, char *buf, size_t n);
/* The number of items of a CFGT_STRLIST value. */
int cfg_list_count(const char *list);
/* Write the configuration reference as a Markdown table. */
void cfg_print_reference(FILE *f);
/* The keys whose last dotted component (or whole name) is `last` ("steps" -> train.steps):
 * their count, the first one's full name in out. For suggestions on a mistyped flag. */
int cfg_keys_ending(const char *last, char *out, size_t cap);
#endif
