/* cls_loaders.h: one loader per classification task, called by the dispatcher
 * clsdata_load (clsdata.c) with opt->max_len already resolved. Each loader builds
 * through cls_build.h and reads through cls_lines.h; see docs/lra.md for each task.
 */
#ifndef GMA_CLS_LOADERS_H
#define GMA_CLS_LOADERS_H
#include "data/cls/cls_types.h"

int lra_listops_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);
int lra_text_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);
int lra_retrieval_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);
int lra_image_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);
int lra_pathfinder_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);
/* format: "jsonl" or "tsv" */
int cls_generic_load(ClsDataset *d, const char *format, const char *path, const char *split,
                     const ClsOptions *opt);

#endif
