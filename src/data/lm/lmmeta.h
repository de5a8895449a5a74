/* lmmeta.h: what makes token shards and runs self-contained (docs/data.md).
 *
 * A data directory's meta.json names its tokenizer ("tokenizer": the spec it was
 * prepared with) and, since gmadata prepare copies them there, the tokenizer's files
 * ("tokenizer_files", relative to the data directory), so a moved data directory still
 * tokenizes. A run directory holds RUN/data.json (the data.path the run was given, its
 * absolute form, the tokenizer and its files, copied into RUN/tokenizer/), so sampling
 * and evaluation work from any folder and sampling after the data directory is gone. */
#ifndef GMA_LMMETA_H
#define GMA_LMMETA_H
#include <cjson/cJSON.h>
#include <stddef.h>

#include "data/text/tokenizer.h"

/* Write tk's files into base/sub (sub "" or NULL: base itself) and record them in meta:
 * "tokenizer_files" (paths relative to base) and, unless meta has one, "tokenizer" (the
 * spec). 0, or -1. */
int lmmeta_save_tokenizer(cJSON *meta, const Tokenizer *tk, const char *base, const char *sub);
/* The tokenizer the meta file at meta_path names: its "tokenizer_files" (relative to the
 * meta file's folder) when present; otherwise (older meta.json) the spec with its files
 * looked up in that folder, then in data/gpt2. NULL with gma_error when there is none. */
Tokenizer *lmmeta_tokenizer(const char *meta_path);
/* The run folder of checkpoint directory ckpt_dir (RUN/ckpt_N, RUN/latest: RUN; a bare
 * checkpoint folder: itself) that holds data.json; 0, or -1 when neither has one (out is
 * then the parent, where an older run's files are). */
int lmmeta_run_dir(const char *ckpt_dir, char *out, size_t cap);
/* Write RUN/data.json (and RUN/tokenizer/) for a run whose configured data.path is
 * user_path, opened at data_dir, with the data's identity (dataid.h). 0, or -1 with
 * gma_error. */
int lmmeta_write_run(const char *run_dir, const char *user_path, const char *data_dir);
/* The data of a run moved (its identity checked, dataid.h): RUN/data.json's path and
 * path_abs become user_path and data_dir's absolute path; nothing else changes, and
 * RUN/tokenizer/ is not touched. 0, or -1 with gma_error. */
int lmmeta_update_location(const char *run_dir, const char *user_path, const char *data_dir);
/* The string `key` of RUN/data.json ("path", "path_abs"), or "" when there is none. */
void lmmeta_run_field(const char *run_dir, const char *key, char *out, size_t cap);
/* Find the data directory of a run: override (when given) alone; otherwise the absolute
 * path of RUN/data.json, user_path relative to the current folder, then relative to the
 * run folder's parent and grandparent. Without a run folder (run_dir NULL or ""), only
 * user_path. The first that holds meta.json or a shard goes to out; none: -1 with one
 * line naming every path tried and `hint` (the override flag). */
int lmmeta_find_data(const char *user_path, const char *run_dir, const char *override, const char *hint, char *out,
                     size_t cap);
/* The tokenizer for a checkpoint: the run's copy (RUN/data.json), else the data
 * directory's meta.json (data_dir may be NULL). NULL with gma_error when there is none. */
Tokenizer *lmmeta_ckpt_tokenizer(const char *ckpt_dir, const char *data_dir);
#endif
