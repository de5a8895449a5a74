/* cls_internal.h: pieces shared by the classification loaders (clsdata.c, lra_*.c,
 * cls_generic.c) and not meant for other modules: the dataset builder, a line reader
 * over any byte source (plain or gzip file, archive entry), the TSV escape decoder and
 * one loader per task.
 */
#ifndef GMA_CLS_INTERNAL_H
#define GMA_CLS_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "data/cls/clsdata.h"

/* ---- builder: appends examples to a ClsDataset ---- */
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

/* ---- line reader ---- */
typedef long (*cls_read_fn)(void *src, void *buf, size_t n); /* bytes, 0 at end, -1 error */

typedef struct ClsLines {
    cls_read_fn read;
    void *src;
    char *chunk;
    size_t chunk_len, chunk_pos;
    char *line;
    size_t line_cap;
    long lineno;      /* 1-based number of the line last returned */
    int eof;
} ClsLines;

void cls_lines_init(ClsLines *l, cls_read_fn read, void *src);
/* Next line without its LF (and without a CR before the LF), NUL-terminated (the line
 * may contain NUL bytes: use *len). Returns 1, 0 at end, -1 on a read error. */
int cls_lines_next(ClsLines *l, char **line, size_t *len);
void cls_lines_free(ClsLines *l);

/* Called for each source of lines; name is the file (or "archive: entry") for errors.
 * Returns 0 or -1. */
typedef int (*cls_lines_fn)(void *ctx, ClsLines *lines, const char *name);
/* Feed the lines of one file to fn: path/file if path is a directory (gzip or plain,
 * path/file.gz also tried), or the archive entry named file (or ending in "/file") if
 * path is an archive (.tar, .tar.gz, .zip). */
int cls_for_lines(const char *path, const char *file, cls_lines_fn fn, void *ctx);
/* Feed the lines of the file at path (gzip or plain) to fn. */
int cls_file_lines(const char *path, cls_lines_fn fn, void *ctx);

/* Split a line at TABs in place: up to max fields, returns the count (a count above max
 * means more TABs than allowed). */
int cls_split_tabs(char *line, size_t len, char **field, size_t *flen, int max);
/* Decode the four TSV escapes (\\ \t \n \r) in place. Returns the new length, or -1
 * with *bad set to the offset of a bad escape. */
long cls_unescape(char *s, size_t n, size_t *bad);
/* Parse a whole-number label ("3", also "1.0" as the LRA files write it). 0 or -1. */
int cls_parse_label(const char *s, size_t n, long *out);
/* Canonical split name check: returns 0 train, 1 valid, 2 test, -1 (error set). */
int cls_split_index(const char *split);
/* FNV-1a 64 of bytes (stable hash for deterministic hold-outs). */
uint64_t cls_hash(const void *p, size_t n);

/* ---- per-task loaders (opt has max_len resolved) ---- */
int lra_listops_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);
int lra_text_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);
int lra_retrieval_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);
int lra_image_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt);
/* format: "jsonl" or "tsv" */
int cls_generic_load(ClsDataset *d, const char *format, const char *path, const char *split,
                     const ClsOptions *opt);

#endif
