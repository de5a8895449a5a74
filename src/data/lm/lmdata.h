/* lmdata.h: the language-model data a run trains and evaluates on (data.source): the
 * sources of the registry lm_sources.h, each its own file (lm_source.h says what one is):
 * the embedded recall task (recall.h), Zoology's MQAR (mqar.h), passkey retrieval
 * (passkey.h), cross-sequence MQAR for the encoder-decoder (xmqar.h), and token shards
 * DIR/{train,valid,test}.bin (+ DIR/meta.json), read here; "cls", the classification data,
 * is loaded by train/cls_task.c, not here.
 *
 * Training batches: the generated tasks' examples by index (step-determined), or random windows of
 * N+1 tokens drawn from the train shard with the given RNG. Evaluation walks a split in
 * order: windows of N inputs without overlap (stride 0; the last window is partial and
 * padded), or sliding windows advanced by S tokens that score only their last S targets
 * (every token is scored once, with up to N-S tokens of context). */
#ifndef GMA_LMDATA_H
#define GMA_LMDATA_H
#include <stdint.h>

#include "core/config.h"
#include "core/rng.h"
#include "data/lm/lm_source.h"
#include "data/lm/lm_sources.h"
#include "data/text/tokenizer.h"

/* The data sources (data.source) from the registry: the enum, the config's choices. */
#define DATA_SOURCE_ENUM_(name, ...) DATA_##name,
typedef enum { DATA_SOURCES(DATA_SOURCE_ENUM_, ) N_DATA_SOURCES } DataSource;
#define DATA_SOURCE_NAME_(name, ...) #name
#define DATA_SOURCE_CHOICES DATA_SOURCES(DATA_SOURCE_NAME_, "|") /* "recall|mqar|passkey|xmqar|shards|cls" */

/* The reader of source s (DataSource). */
const LmSource *lmdata_source(int s);
/* The spec of config c's source (data.source, seed, its section, data.path,
 * data.eval_stride) for windows of `window` tokens. */
LmSpec lmdata_spec(const Config *c, int window);
/* Open the data of a spec (train split required; valid/test optional for shards). */
int lmdata_open(LmData *d, const LmSpec *s);
/* For training: the train split holds one window (s->window + 1 tokens); 0, or -1
 * with both counts in gma_error. */
int lmdata_check_train_window(const LmData *d, const LmSpec *s);
/* The same with only the splits in mask (bit s: split s) opened, split `required` of them
 * required (gmaeval --data valid opens valid.bin alone). */
int lmdata_open_splits(LmData *d, const LmSpec *s, unsigned mask, int required);
/* Open a single shard file as the evaluation split (for gmaeval --data FILE). */
int lmdata_open_file(LmData *d, const char *path);
/* Tokens in memory (n ids < vocab, kept by the caller until lmdata_close) as the evaluation
 * split SPLIT_TEST, `words` the source's word count (0 unknown), `name` in messages
 * (gmaeval --text FILE). 0, or -1 with gma_error when there are fewer than 2. */
int lmdata_open_tokens(LmData *d, const char *name, const uint32_t *ids, uint64_t n, uint32_t vocab, double words);
void lmdata_close(LmData *d);
/* The source's own state when d is of source s (e.g. the RecallTask of DATA_recall), else NULL. */
const void *lmdata_task(const LmData *d, int s);
int lmdata_split_index(const char *name); /* "train" | "valid" | "test" -> index or -1 */
const char *lmdata_split_name(int s);      /* index -> "train" | "valid" | "test" */
/* Fill tok/tgt [B,N] for training micro-batch `batch_index` (recall) or from rng (shards). */
void lmdata_train_batch(const LmData *d, Rng *rng, uint64_t batch_index, int B, int N, int32_t *tok, int32_t *tgt);
/* Rows [first, first+B) of the training micro-batch of B_global rows that
 * lmdata_train_batch(d, rng, batch_index, B_global, ...) would draw (data-parallel ranks
 * each take their slice of one global batch); the rng advances as for the whole batch. */
void lmdata_train_batch_part(const LmData *d, Rng *rng, uint64_t batch_index, int B_global, int first, int B, int N,
                             int32_t *tok, int32_t *tgt);
/* Fill the `b`-th evaluation batch of split s; returns the number of sequences filled
 * (0 at the end; unfilled rows are padding with targets -1). */
int lmdata_eval_batch(const LmData *d, int s, long b, int B, int N, int32_t *tok, int32_t *tgt);
/* Number of evaluation windows of split s at length N. */
long lmdata_eval_windows(const LmData *d, int s, int N);
/* The tokenizer DIR/meta.json names (gmadata prepare writes it; lmmeta_tokenizer); NULL
 * with gma_error when there is none. */
Tokenizer *lmdata_tokenizer(const char *dir);
/* The LM data sources' sections, in the reference's order: data.source and data.path with
 * the checks, each source's own section in the registry's order, data.eval_stride. Puts
 * them in out (room for max) and returns their number. */
int lmdata_config_sections(const CfgSection **out, int max);

#endif
