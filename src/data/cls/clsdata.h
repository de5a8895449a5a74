/* clsdata.h: the in-memory classification dataset every LRA task and the generic
 * JSONL/TSV classification data load into.
 *
 * A dataset is n examples of n_seq token sequences each (1, or 2 for retrieval) and one
 * label. All tokens sit in one array; off[] holds n*n_seq+1 offsets into it, so example
 * i, sequence s is tok[off[i*n_seq+s] .. off[i*n_seq+s+1]). Token id 0 is padding in
 * every task and never occurs in a loaded sequence. See docs/lra.md for each task's
 * file layout, vocabulary and split rule.
 */
#ifndef GMA_CLSDATA_H
#define GMA_CLSDATA_H
#include "core/config.h"
#include "data/cls/cls_tasks.h"
#include "data/cls/cls_types.h"

/* The task list CLS_TASKS (cls_tasks.h) gives the enum and the config's choices. */
#define CLS_TASK_ENUM_(name, ...) CLS_TASK_##name,
typedef enum { CLS_TASKS(CLS_TASK_ENUM_, ) N_CLS_TASKS } ClsTaskId;
#define CLS_TASK_NAME_(name, ...) #name
#define CLS_TASK_CHOICES CLS_TASKS(CLS_TASK_NAME_, "|") /* "listops|text|...|tsv" */

enum { TEXT_VALID_HELDOUT, TEXT_VALID_TEST }; /* data.text_valid: heldout|test */

/* The options used when clsdata_load gets NULL: task default max_len, truncate, infer
 * classes, keep headers. */
ClsOptions clsdata_default_options(void);

/* Load one split of a task into d (which is overwritten; free it with clsdata_free).
 *   task:  "listops" | "text" | "retrieval" | "image" | "pathfinder" | "jsonl" | "tsv"
 *   path:  a directory, archive or file as docs/lra.md documents for each task
 *   split: "train" | "valid" | "test"
 * Returns 0, or -1 with one error line (naming file and line, or archive entry and
 * offset) in gma_error(); on error d is left empty. */
int clsdata_load(ClsDataset *d, const char *task, const char *path, const char *split,
                 const ClsOptions *opt);
/* The same for a task of the registry (ClsTaskId). */
int clsdata_load_task(ClsDataset *d, int task, const char *path, const char *split, const ClsOptions *opt);
/* 1 when task's classes come from its data (jsonl, tsv: model.n_classes bounds them). */
int clsdata_task_generic(int task);
void clsdata_free(ClsDataset *d);

/* The fixed vocabulary size of a task (0 for an unknown task). */
uint32_t clsdata_task_vocab(const char *task);
/* The default max_len of a task (0 for an unknown task). */
int clsdata_task_max_len(const char *task);

/* The classification data's rows (data.task, max_len, truncate, pad_full, ...). */
extern const CfgSection clsdata_cfg_section;

#endif
