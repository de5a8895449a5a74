/* cls_tasks.h: the registry of classification tasks, one X-macro line per task; clsdata.h
 * derives the enum and the config's choices from it, clsdata.c the task table,
 * cls_loaders.h the loaders' declarations. */
#ifndef GMA_CLS_TASKS_H
#define GMA_CLS_TASKS_H

/* The classification tasks (data.task), one line each: name, fixed vocabulary, default
 * max_len, whether the classes come from the data (generic formats), loader
 * (declared by cls_loaders.h from this line). A dataset is its loader's file, one line here
 * and its test; the config's choices, the enum and the messages all come from this list. */
#define CLS_TASKS(X, SEP)                                                                         \
    X(listops, 16, 2000, 0, lra_listops_load) /* pad, 4 operators, 10 digits, ']' */ SEP         \
    X(text, 257, 4096, 0, lra_text_load) /* byte + 1 */ SEP                                       \
    X(retrieval, 257, 4000, 0, lra_retrieval_load) SEP                                            \
    X(image, 257, 1024, 0, lra_image_load) /* grayscale intensity + 1, 32x32 */ SEP               \
    X(pathfinder, 257, 1024, 0, lra_pathfinder_load) /* pixel + 1 (Path-X: max_len 16384) */ SEP  \
    X(jsonl, 257, 4096, 1, cls_jsonl_load) SEP                                                    \
    X(tsv, 257, 4096, 1, cls_tsv_load)
#endif
