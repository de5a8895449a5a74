/* cls_build.h: the dataset builder the classification loaders (lra_*.c, cls_generic.c)
 * append their examples through, the split-name check and a stable hash for hold-outs.
 * Not meant for modules outside src/data/cls/; it depends on cls_types.h only (the
 * ClsDataset type), never on the loaders or the dispatcher.
 */
#ifndef GMA_CLS_BUILD_H
#define GMA_CLS_BUILD_H
#include <stddef.h>
#include <stdint.h>
#include "data/cls/cls_types.h"

typedef struct ClsBuilder {
    ClsDataset *d;
    size_t tok_len, tok_cap;
    size_t off_len, off_cap;   /* off entries written (starts at 1: off[0] = 0) */
    size_t lab_cap;
    int max_len;
    int truncate;
    int seq_in_example;        /* sequences added to the example being built */
} ClsBuilder;

/* Start an empty dataset. n_classes 0 skips the label range check (inferred later). */
void clsb_init(ClsBuilder *b, ClsDataset *d, int n_seq, int n_classes, uint32_t vocab,
               int max_len, int truncate);
/* Add a sequence of bytes as tokens byte+1. `where` names the example in errors
 * ("file:line" or "archive: entry E"). Returns 0 or -1 (over-long with truncate 0). */
int clsb_add_bytes(ClsBuilder *b, const uint8_t *s, size_t n, const char *where);
/* Add a sequence of token ids (each must be in [1, vocab)). */
int clsb_add_tokens(ClsBuilder *b, const uint32_t *t, size_t n, const char *where);
/* Finish the example with its label (checked against n_classes when that is > 0). */
int clsb_add_label(ClsBuilder *b, long label, const char *where);
/* Shrink the arrays to size. */
void clsb_finish(ClsBuilder *b);

/* Canonical split name check: returns 0 train, 1 valid, 2 test, -1 (error set). */
int cls_split_index(const char *split);
/* FNV-1a 64 of bytes (stable hash for deterministic hold-outs). */
uint64_t cls_hash(const void *p, size_t n);

#endif
