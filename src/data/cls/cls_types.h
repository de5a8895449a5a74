/* cls_types.h: the in-memory classification dataset (ClsDataset), the loading options
 * (ClsOptions) and the sequence accessor. The dispatcher (clsdata.h), the builder and
 * the loaders all include this header, so none of them needs another's (no circle).
 * The layout is described in clsdata.h.
 */
#ifndef GMA_CLS_TYPES_H
#define GMA_CLS_TYPES_H
#include <stddef.h>
#include <stdint.h>

typedef struct ClsDataset {
    int n;            /* examples */
    int n_seq;        /* 1, or 2 for two-sequence tasks (retrieval) */
    int n_classes;
    uint32_t vocab;   /* token ids are < vocab; id 0 is reserved for padding in every task */
    uint32_t *tok;    /* all sequences' tokens concatenated */
    uint64_t *off;    /* n*n_seq + 1 offsets into tok */
    int32_t *label;   /* n labels in [0, n_classes) */
    long truncated;   /* how many sequences were truncated to max_len */
} ClsDataset;

typedef struct ClsOptions {
    int max_len;       /* tokens per sequence; <= 0: the task's default (docs/lra.md) */
    int truncate;      /* 1: truncate to max_len and count; 0: refuse an over-long example */
    int n_classes;     /* generic data: number of classes, 0 = infer; ignored by LRA tasks */
    int strip_headers; /* generic data: drop everything before the first empty line (mail) */
    int text_valid_test; /* text: valid is test/ and train all of train/, as the LRA release */
} ClsOptions;

/* Sequence s of example i and its length. */
static inline const uint32_t *clsdata_seq(const ClsDataset *d, int i, int s, size_t *len) {
    uint64_t a = d->off[(size_t)i * d->n_seq + s], b = d->off[(size_t)i * d->n_seq + s + 1];
    *len = (size_t)(b - a);
    return d->tok + a;
}

#endif
