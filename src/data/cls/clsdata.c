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

typedef int (*ClsLoader)(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);

typedef struct TaskInfo {
    const char *name;
    uint32_t vocab;
    int max_len, generic;
    ClsLoader load;
} TaskInfo;

#define TASK_ROW(name, vocab, max_len, generic, load) {#name, vocab, max_len, generic, load},
static const TaskInfo TASKS[] = {CLS_TASKS(TASK_ROW, )};
#undef TASK_ROW

static int task_index(const char *task) {
    for (int i = 0; task && i < N_CLS_TASKS; i++)
        if (strcmp(TASKS[i].name, task) == 0) return i;
    return -1;
}

static const TaskInfo *task_find(const char *task) {
    int i = task_index(task);
    return i < 0 ? NULL : &TASKS[i];
}

uint32_t clsdata_task_vocab(const char *task) {
    const TaskInfo *t = task_find(task);
    return t ? t->vocab : 0;
}

int clsdata_task_max_len(const char *task) {
    const TaskInfo *t = task_find(task);
    return t ? t->max_len : 0;
}

int clsdata_task_generic(int task) { return task >= 0 && task < N_CLS_TASKS && TASKS[task].generic; }

ClsOptions clsdata_default_options(void) {
    ClsOptions o = {0, 1, 0, 0, 0};
    return o;
}

int clsdata_load(ClsDataset *d, const char *task, const char *path, const char *split,
                 const ClsOptions *opt) {
    int i = task_index(task);
    if (i < 0) {
        memset(d, 0, sizeof *d);
        return gma_errorf("unknown classification task '%s' (%s)", task ? task : "(null)", CLS_TASK_CHOICES);
    }
    return clsdata_load_task(d, i, path, split, opt);
}

int clsdata_load_task(ClsDataset *d, int task, const char *path, const char *split, const ClsOptions *opt) {
    memset(d, 0, sizeof *d);
    if (task < 0 || task >= N_CLS_TASKS) return gma_errorf("unknown classification task %d", task);
    const TaskInfo *t = &TASKS[task];
    if (cls_split_index(split) < 0) return -1;
    if (!path || !*path) return gma_errorf("%s: no data path given", t->name);
    ClsOptions o = opt ? *opt : clsdata_default_options();
    if (o.max_len <= 0) o.max_len = t->max_len;
    if (o.n_classes < 0) return gma_errorf("%s: n_classes %d is negative", t->name, o.n_classes);
    int rc = t->load(d, path, split, &o);
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

/* ---- configuration: the classification data read beyond its loading (data.max_len, pad_full; the
 * loading's own keys, data.task, truncate, text_valid and strip_headers, are train/cls_task.c's) ---- */

#define O(f) CFG_OFF(f)
static const CfgKey g_cls_keys[] = {
    {"data.max_len", CFGT_INT, O(data.max_len), 0, "0", 0, 16777216, NULL,
     "Classification: tokens per sequence (0 = train.seq_len, less 1 with model.pooling \"cls\")."},
    {"data.pad_full", CFGT_BOOL, O(data.pad_full), 0, "false", 0, 0, NULL,
     "Classification: pad every batch to data.max_len (the LRA release's padded_batch to max_length), not to its longest sequence."},
};
#undef O

const CfgSection clsdata_cfg_section = {NULL, 0, g_cls_keys, CFG_N(g_cls_keys), NULL, NULL};
