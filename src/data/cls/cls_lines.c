/* cls_lines.c: the line reader the classification loaders share (cls_lines.h): lines
 * of a gzip or plain file or of an archive entry, TAB splitting, the TSV escape decoder
 * and label parsing.
 */
#include "data/cls/cls_lines.h"
#include "data/fetch/archive.h"
#include "core/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

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
