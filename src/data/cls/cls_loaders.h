/* cls_loaders.h: one loader per classification task, called by the dispatcher
 * clsdata_load (clsdata.c) with opt->max_len already resolved. Each loader builds
 * through cls_build.h and reads through cls_lines.h; see docs/lra.md for each task.
 */
#ifndef GMA_CLS_LOADERS_H
#define GMA_CLS_LOADERS_H
#include "data/cls/cls_tasks.h"
#include "data/cls/cls_types.h"

/* every loader of the registry (clsdata.h: CLS_TASKS), declared from its line */
#define CLS_LOADER_DECL_(name, vocab, max_len, generic, load) \
    int load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);
CLS_TASKS(CLS_LOADER_DECL_, )
#undef CLS_LOADER_DECL_
/* format: "jsonl" or "tsv" (cls_jsonl_load, cls_tsv_load) */
int cls_generic_load(ClsDataset *d, const char *format, const char *path, const char *split,
                     const ClsOptions *opt);

#endif
