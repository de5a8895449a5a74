/* cls_build.c: the dataset builder every classification loader appends its examples
 * through (cls_build.h), the split-name check and the hash for deterministic hold-outs.
 */
#include "data/cls/cls_build.h"
#include "core/common.h"

#include <stdlib.h>
#include <string.h>

int cls_split_index(const char *split) {
    if (split && strcmp(split, "train") == 0) return 0;
    if (split && strcmp(split, "valid") == 0) return 1;
    if (split && strcmp(split, "test") == 0) return 2;
    return gma_errorf("unknown split '%s' (train, valid, test)", split ? split : "(null)");
}

uint64_t cls_hash(const void *p, size_t n) {
    const uint8_t *s = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}

/* ---------------------------------------------------------------- builder */

void clsb_init(ClsBuilder *b, ClsDataset *d, int n_seq, int n_classes, uint32_t vocab,
               int max_len, int truncate) {
    memset(b, 0, sizeof *b);
    memset(d, 0, sizeof *d);
    b->d = d;
    d->n_seq = n_seq;
    d->n_classes = n_classes;
    d->vocab = vocab;
    b->max_len = max_len;
    b->truncate = truncate;
    b->off_cap = 1024;
    d->off = xmalloc(b->off_cap * sizeof *d->off);
    d->off[0] = 0;
    b->off_len = 1;
    b->tok_cap = 1 << 16;
    d->tok = xmalloc(b->tok_cap * sizeof *d->tok);
    b->lab_cap = 256;
    d->label = xmalloc(b->lab_cap * sizeof *d->label);
}

/* Room for n more tokens; returns the (possibly truncated) count to copy, or -1. */
static long seq_begin(ClsBuilder *b, size_t n, const char *where) {
    if (b->seq_in_example >= b->d->n_seq)
        return gma_errorf("%s: internal: more than %d sequences in one example", where, b->d->n_seq);
    if (b->max_len > 0 && n > (size_t)b->max_len) {
        if (!b->truncate)
            return gma_errorf("%s: sequence of %zu tokens is longer than max_len %d "
                              "(enable truncation or raise max_len)", where, n, b->max_len);
        n = (size_t)b->max_len;
        b->d->truncated++;
    }
    if (b->tok_len + n > b->tok_cap) {
        while (b->tok_len + n > b->tok_cap) b->tok_cap *= 2;
        b->d->tok = xrealloc(b->d->tok, b->tok_cap * sizeof *b->d->tok);
    }
    return (long)n;
}

static void seq_end(ClsBuilder *b) {
    if (b->off_len == b->off_cap) {
        b->off_cap *= 2;
        b->d->off = xrealloc(b->d->off, b->off_cap * sizeof *b->d->off);
    }
    b->d->off[b->off_len++] = b->tok_len;
    b->seq_in_example++;
}

int clsb_add_bytes(ClsBuilder *b, const uint8_t *s, size_t n, const char *where) {
    long m = seq_begin(b, n, where);
    if (m < 0) return -1;
    uint32_t *t = b->d->tok + b->tok_len;
    for (long i = 0; i < m; i++) t[i] = (uint32_t)s[i] + 1;
    b->tok_len += (size_t)m;
    seq_end(b);
    return 0;
}

int clsb_add_tokens(ClsBuilder *b, const uint32_t *t, size_t n, const char *where) {
    for (size_t i = 0; i < n; i++)
        if (t[i] == 0 || t[i] >= b->d->vocab)
            return gma_errorf("%s: token %u at position %zu outside [1, %u)", where, t[i], i,
                              b->d->vocab);
    long m = seq_begin(b, n, where);
    if (m < 0) return -1;
    memcpy(b->d->tok + b->tok_len, t, (size_t)m * sizeof *t);
    b->tok_len += (size_t)m;
    seq_end(b);
    return 0;
}

int clsb_add_label(ClsBuilder *b, long label, const char *where) {
    ClsDataset *d = b->d;
    if (b->seq_in_example != d->n_seq)
        return gma_errorf("%s: internal: example has %d of %d sequences", where,
                          b->seq_in_example, d->n_seq);
    if (label < 0 || (d->n_classes > 0 && label >= d->n_classes))
        return gma_errorf("%s: label %ld outside the %d classes [0, %d)", where, label,
                          d->n_classes, d->n_classes);
    if (label > INT32_MAX) return gma_errorf("%s: label %ld too large", where, label);
    if ((size_t)d->n == b->lab_cap) {
        b->lab_cap *= 2;
        d->label = xrealloc(d->label, b->lab_cap * sizeof *d->label);
    }
    if (d->n == INT32_MAX) return gma_errorf("%s: more than %d examples", where, INT32_MAX);
    d->label[d->n++] = (int32_t)label;
    b->seq_in_example = 0;
    return 0;
}

void clsb_finish(ClsBuilder *b) {
    ClsDataset *d = b->d;
    d->tok = xrealloc(d->tok, (b->tok_len ? b->tok_len : 1) * sizeof *d->tok);
    d->off = xrealloc(d->off, b->off_len * sizeof *d->off);
    d->label = xrealloc(d->label, (d->n ? (size_t)d->n : 1) * sizeof *d->label);
    b->tok_cap = b->tok_len;
    b->off_cap = b->off_len;
    b->lab_cap = (size_t)d->n;
}
