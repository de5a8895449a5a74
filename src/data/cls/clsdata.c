/* clsdata.c: the classification dataset: the task table, dispatch of clsdata_load to the
 * task loaders (cls_loaders.h: lra_listops.c, lra_text.c, lra_retrieval.c, lra_image.c,
 * lra_pathfinder.c, cls_generic.c) and clsdata_free. The loaders build through cls_build.h and read
 * through cls_lines.h; none of them calls back into this file.
 */
#include "data/cls/clsdata.h"
#include "data/cls/cls_build.h"
#include "data/cls/cls_loaders.h"
#include "core/common.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- tasks */

typedef struct TaskInfo {
    const char *name;
    uint32_t vocab;
    int max_len;
} TaskInfo;

static const TaskInfo TASKS[] = {
    {"listops", 16, 2000},   /* pad, 4 operators, 10 digits, ']' (lra_listops.h) */
    {"text", 257, 4096},     /* byte + 1 */
    {"retrieval", 257, 4000},
    {"image", 257, 1024},    /* grayscale intensity + 1, 32x32 */
    {"pathfinder", 257, 1024}, /* pixel + 1, 32x32 (Path-X: data.max_len 16384) */
    {"jsonl", 257, 4096},
    {"tsv", 257, 4096},
};

static const TaskInfo *task_find(const char *task) {
    for (size_t i = 0; task && i < sizeof TASKS / sizeof TASKS[0]; i++)
        if (strcmp(TASKS[i].name, task) == 0) return &TASKS[i];
    return NULL;
}

uint32_t clsdata_task_vocab(const char *task) {
    const TaskInfo *t = task_find(task);
    return t ? t->vocab : 0;
}

int clsdata_task_max_len(const char *task) {
    const TaskInfo *t = task_find(task);
    return t ? t->max_len : 0;
}

ClsOptions clsdata_default_options(void) {
    ClsOptions o = {0, 1, 0, 0, 0};
    return o;
}

int clsdata_load(ClsDataset *d, const char *task, const char *path, const char *split,
                 const ClsOptions *opt) {
    memset(d, 0, sizeof *d);
    const TaskInfo *t = task_find(task);
    if (!t)
        return gma_errorf("unknown classification task '%s' (listops, text, retrieval, image, "
                          "pathfinder, jsonl, tsv)", task ? task : "(null)");
    if (cls_split_index(split) < 0) return -1;
    if (!path || !*path) return gma_errorf("%s: no data path given", task);
    ClsOptions o = opt ? *opt : clsdata_default_options();
    if (o.max_len <= 0) o.max_len = t->max_len;
    if (o.n_classes < 0) return gma_errorf("%s: n_classes %d is negative", task, o.n_classes);
    int rc;
    if (strcmp(task, "listops") == 0) rc = lra_listops_load(d, path, split, &o);
    else if (strcmp(task, "text") == 0) rc = lra_text_load(d, path, split, &o);
    else if (strcmp(task, "retrieval") == 0) rc = lra_retrieval_load(d, path, split, &o);
    else if (strcmp(task, "image") == 0) rc = lra_image_load(d, path, split, &o);
    else if (strcmp(task, "pathfinder") == 0) rc = lra_pathfinder_load(d, path, split, &o);
    else rc = cls_generic_load(d, task, path, split, &o);
    if (rc < 0) clsdata_free(d);
    return rc;
}

void clsdata_free(ClsDataset *d) {
    if (!d) return;
    free(d->tok);
    free(d->off);
    free(d->label);
    memset(d, 0, sizeof *d);
}

/* ---- configuration: the classification data (data.task, max_len, ...) ---- */

#define O(f) CFG_OFF(f)
#define S(f) CFG_SIZE(f)
static const CfgKey g_cls_keys[] = {
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
#undef O
#undef S

const CfgSection clsdata_cfg_section = {NULL, 0, g_cls_keys, CFG_N(g_cls_keys), NULL};
