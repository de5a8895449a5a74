/* clsdata.c: the classification dataset (dispatch by task, builder, free) and the small
 * helpers every loader shares: a line reader over gzip/plain files and archive entries,
 * TAB splitting, the TSV escape decoder and label parsing. The task loaders themselves
 * live in lra_listops.c, lra_text.c, lra_retrieval.c, lra_image.c and cls_generic.c.
 */
#include "data/cls/clsdata.h"
#include "data/cls/cls_internal.h"
#include "data/fetch/archive.h"
#include "core/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

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
    ClsOptions o = {0, 1, 0, 0};
    return o;
}

int clsdata_load(ClsDataset *d, const char *task, const char *path, const char *split,
                 const ClsOptions *opt) {
    memset(d, 0, sizeof *d);
    const TaskInfo *t = task_find(task);
    if (!t)
        return gma_errorf("unknown classification task '%s' (listops, text, retrieval, image, "
                          "jsonl, tsv)", task ? task : "(null)");
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

/* ---------------------------------------------------------------- lines */

#define CHUNK_BYTES (1 << 16)

void cls_lines_init(ClsLines *l, cls_read_fn read, void *src) {
    memset(l, 0, sizeof *l);
    l->read = read;
    l->src = src;
    l->chunk = xmalloc(CHUNK_BYTES);
    l->line_cap = 4096;
    l->line = xmalloc(l->line_cap);
}

void cls_lines_free(ClsLines *l) {
    free(l->chunk);
    free(l->line);
    memset(l, 0, sizeof *l);
}

int cls_lines_next(ClsLines *l, char **line, size_t *len) {
    size_t n = 0;
    for (;;) {
        if (l->chunk_pos == l->chunk_len) {
            if (l->eof) break;
            long r = l->read(l->src, l->chunk, CHUNK_BYTES);
            if (r < 0) return -1;
            if (r == 0) { l->eof = 1; break; }
            l->chunk_len = (size_t)r;
            l->chunk_pos = 0;
        }
        char *start = l->chunk + l->chunk_pos;
        size_t avail = l->chunk_len - l->chunk_pos;
        char *nl = memchr(start, '\n', avail);
        size_t take = nl ? (size_t)(nl - start) : avail;
        if (n + take + 1 > l->line_cap) {
            while (n + take + 1 > l->line_cap) l->line_cap *= 2;
            l->line = xrealloc(l->line, l->line_cap);
        }
        memcpy(l->line + n, start, take);
        n += take;
        l->chunk_pos += take + (nl ? 1 : 0);
        if (nl) goto done;
    }
    if (n == 0) return 0; /* end of input (a last line without LF still counts) */
done:
    if (n > 0 && l->line[n - 1] == '\r') n--;
    l->line[n] = 0;
    l->lineno++;
    *line = l->line;
    *len = n;
    return 1;
}

static long gz_read_fn(void *src, void *buf, size_t n) {
    gzFile f = src;
    int r = gzread(f, buf, (unsigned)GMA_MIN(n, (size_t)1 << 30));
    int errnum = Z_OK;
    const char *msg = r <= 0 ? gzerror(f, &errnum) : NULL;
    if (r < 0 || (r == 0 && errnum != Z_OK)) /* Z_BUF_ERROR at the end: stream cut short */
        return gma_errorf("read error: %s", errnum == Z_BUF_ERROR ? "gzip stream cut short"
                                                                  : msg && *msg ? msg : "unknown");
    return r;
}

int cls_file_lines(const char *path, cls_lines_fn fn, void *ctx) {
    gzFile f = gzopen(path, "rb");
    if (!f) return gma_errorf("%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
    gzbuffer(f, 1 << 17);
    ClsLines l;
    cls_lines_init(&l, gz_read_fn, f);
    int rc = fn(ctx, &l, path);
    if (rc < 0 && strncmp(gma_error(), "read error", 10) == 0) gma_error_prefix("%s", path);
    cls_lines_free(&l);
    gzclose(f);
    return rc;
}

typedef struct EntryLines {
    const char *archive;
    const char *file;
    cls_lines_fn fn;
    void *ctx;
    int found;
    int rc;
} EntryLines;

static long archive_read_fn(void *src, void *buf, size_t n) {
    return archive_read(src, buf, n);
}

static int name_matches(const char *name, const char *file) {
    size_t nl = strlen(name), fl = strlen(file);
    if (nl < fl || strcmp(name + nl - fl, file) != 0) return 0;
    return nl == fl || name[nl - fl - 1] == '/';
}

static int entry_lines_visit(void *ctx, const ArchiveEntry *e, ArchiveReader *r) {
    EntryLines *el = ctx;
    if (e->is_dir || !name_matches(e->name, el->file)) return 0;
    el->found = 1;
    char name[1200];
    snprintf(name, sizeof name, "%s: entry %s", el->archive, e->name);
    ClsLines l;
    cls_lines_init(&l, archive_read_fn, r);
    el->rc = el->fn(el->ctx, &l, name);
    cls_lines_free(&l);
    return el->rc < 0 ? -1 : 1;
}

int cls_for_lines(const char *path, const char *file, cls_lines_fn fn, void *ctx) {
    struct stat st;
    if (stat(path, &st) != 0) return gma_errorf("%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, file);
        if (!gma_path_exists(full)) {
            char gz[4200];
            snprintf(gz, sizeof gz, "%s.gz", full);
            if (gma_path_exists(gz)) return cls_file_lines(gz, fn, ctx);
            return gma_errorf("%s: no such file (expected %s in the directory %s)", full, file, path);
        }
        return cls_file_lines(full, fn, ctx);
    }
    EntryLines el = {path, file, fn, ctx, 0, 0};
    if (archive_walk(path, entry_lines_visit, &el) < 0) return -1;
    if (!el.found) return gma_errorf("%s: archive has no entry named %s or */%s", path, file, file);
    return el.rc;
}

/* ---------------------------------------------------------------- fields */

int cls_split_tabs(char *line, size_t len, char **field, size_t *flen, int max) {
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || line[i] == '\t') {
            if (k < max) {
                field[k] = line + start;
                flen[k] = i - start;
                if (i < len) line[i] = 0;
            }
            k++;
            start = i + 1;
        }
    }
    return k;
}

long cls_unescape(char *s, size_t n, size_t *bad) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\') {
            if (i + 1 == n) { *bad = i; return -1; }
            char e = s[++i];
            if (e == '\\') c = '\\';
            else if (e == 't') c = '\t';
            else if (e == 'n') c = '\n';
            else if (e == 'r') c = '\r';
            else { *bad = i - 1; return -1; }
        }
        s[o++] = c;
    }
    return (long)o;
}

int cls_parse_label(const char *s, size_t n, long *out) {
    size_t i = 0;
    long v = 0;
    if (n == 0) return -1;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        if (v > 100000000) return -1;
        v = v * 10 + (s[i] - '0');
        i++;
    }
    if (i == 0) return -1;
    if (i < n) { /* allow "1.0", "1.00" */
        if (s[i] != '.' || i + 1 == n) return -1;
        for (i++; i < n; i++)
            if (s[i] != '0') return -1;
    }
    *out = v;
    return 0;
}
