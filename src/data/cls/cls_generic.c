/* cls_generic.c: generic byte-level text classification data, one example a line:
 *   jsonl: {"text": "...", "label": N or "name"}
 *   tsv:   label<TAB>text or label<TAB>id<TAB>text, text with the escapes \\ \t \n \r
 *          (the format of shared/data/spam/{train,valid,test}.tsv.gz)
 * gzip or plain. `path` is a directory holding SPLIT.jsonl[.gz] / SPLIT.tsv[.gz] for
 * SPLIT in train, valid, test, or one file. Labels are class numbers, or names: names
 * become classes in byte order of all the names found in the directory's split files
 * (so train, valid and test agree). With n_classes 0 the number of classes is inferred
 * the same way (1 + the largest class number in any split file). Tokens are byte + 1.
 */
#include "data/cls/cls_loaders.h"
#include "data/cls/cls_build.h"
#include "data/cls/cls_lines.h"
#include "core/common.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------- one line */

typedef struct GenericLine {
    long num;          /* class number, or -1 when the label is a name */
    const char *name;  /* label name (points into the line or the JSON tree) */
    size_t name_len;
    char *text;
    size_t text_len;
} GenericLine;

/* Parse one line. For jsonl, *json receives the tree to free after use. */
static int parse_line(const char *format, char *line, size_t len, GenericLine *g, cJSON **json,
                      const char *where, int want_text) {
    memset(g, 0, sizeof *g);
    g->num = -1;
    *json = NULL;
    if (format[0] == 'j') {
        cJSON *root = cJSON_ParseWithLength(line, len);
        if (!root) {
            const char *e = cJSON_GetErrorPtr();
            long at = e && e >= line && e <= line + len ? (long)(e - line) : -1;
            return gma_errorf("%s: malformed JSON (near byte %ld)", where, at);
        }
        *json = root;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "text");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(root, "label");
        if (!cJSON_IsObject(root) || !cJSON_IsString(t))
            return gma_errorf("%s: expected an object with a string field \"text\"", where);
        if (cJSON_IsNumber(l)) {
            double v = l->valuedouble;
            if (v < 0 || v > 1e8 || v != floor(v))
                return gma_errorf("%s: label %g is not a class number (0, 1, ...)", where, v);
            g->num = (long)v;
        } else if (cJSON_IsString(l) && l->valuestring[0]) {
            g->name = l->valuestring;
            g->name_len = strlen(l->valuestring);
        } else {
            return gma_errorf("%s: expected a field \"label\" (a class number or a non-empty name)", where);
        }
        g->text = t->valuestring;
        g->text_len = strlen(t->valuestring);
        return 0;
    }
    char *f[4];
    size_t fl[4];
    int nf = cls_split_tabs(line, len, f, fl, 4);
    if (nf != 2 && nf != 3)
        return gma_errorf("%s: malformed line: %d TAB-separated fields, expected label<TAB>text or "
                          "label<TAB>id<TAB>text", where, nf);
    if (fl[0] == 0) return gma_errorf("%s: empty label", where);
    if (cls_parse_label(f[0], fl[0], &g->num) < 0) {
        g->num = -1;
        g->name = f[0];
        g->name_len = fl[0];
    }
    g->text = f[nf - 1];
    g->text_len = fl[nf - 1];
    if (want_text) {
        size_t bad;
        long n = cls_unescape(g->text, g->text_len, &bad);
        if (n < 0)
            return gma_errorf("%s: bad escape at byte %zu of the text (only \\\\ \\t \\n \\r)", where, bad);
        g->text_len = (size_t)n;
    }
    return 0;
}

/* ---------------------------------------------------------------- label names */

typedef struct NameSet {
    char **name;
    int n, cap;
} NameSet;

static int nameset_find(const NameSet *s, const char *name, size_t len) {
    for (int i = 0; i < s->n; i++)
        if (strlen(s->name[i]) == len && memcmp(s->name[i], name, len) == 0) return i;
    return -1;
}

static int nameset_add(NameSet *s, const char *name, size_t len) {
    int i = nameset_find(s, name, len);
    if (i >= 0) return i;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->name = xrealloc(s->name, (size_t)s->cap * sizeof *s->name);
    }
    s->name[s->n] = xmalloc(len + 1);
    memcpy(s->name[s->n], name, len);
    s->name[s->n][len] = 0;
    return s->n++;
}

static void nameset_free(NameSet *s) {
    for (int i = 0; i < s->n; i++) free(s->name[i]);
    free(s->name);
    memset(s, 0, sizeof *s);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---------------------------------------------------------------- passes over a file */

typedef struct GenericPass {
    const char *format;
    const ClsOptions *opt;
    ClsBuilder *b;      /* NULL: label scan only */
    NameSet names;      /* label names in order of appearance (load) or all names (scan) */
    long max_num;
    int has_num, has_name;
    char first_kind_where[1400];
} GenericPass;

static const uint8_t *strip_header(const uint8_t *s, size_t *n) {
    for (size_t i = 0; i < *n; i++) {
        if (s[i] != '\n') continue;
        size_t j = i + 1;
        if (j < *n && s[j] == '\r') j++;
        if (j < *n && s[j] == '\n') {
            *n -= j + 1;
            return s + j + 1;
        }
        if (j == *n) { /* headers only */
            *n = 0;
            return s + j;
        }
    }
    return s;
}

static int generic_lines(void *ctx, ClsLines *l, const char *name) {
    GenericPass *p = ctx;
    char *line, where[1400];
    size_t len;
    int r;
    while ((r = cls_lines_next(l, &line, &len)) > 0) {
        if (len == 0) continue;
        snprintf(where, sizeof where, "%s:%ld", name, l->lineno);
        GenericLine g;
        cJSON *json;
        int rc = parse_line(p->format, line, len, &g, &json, where, p->b != NULL);
        long label = -1;
        if (rc == 0) {
            int is_name = g.num < 0;
            if ((is_name && p->has_num) || (!is_name && p->has_name))
                rc = gma_errorf("%s: label is a %s but %s has a %s: use class numbers or names, not both",
                                where, is_name ? "name" : "number", p->first_kind_where,
                                is_name ? "number" : "name");
            else if (!p->has_num && !p->has_name)
                snprintf(p->first_kind_where, sizeof p->first_kind_where, "%s", where);
            if (is_name) {
                p->has_name = 1;
                label = nameset_add(&p->names, g.name, g.name_len);
            } else {
                p->has_num = 1;
                p->max_num = GMA_MAX(p->max_num, g.num);
                label = g.num;
                if (p->opt->n_classes > 0 && label >= p->opt->n_classes)
                    rc = gma_errorf("%s: label %ld outside the %d classes [0, %d)", where, label,
                                    p->opt->n_classes, p->opt->n_classes);
            }
        }
        if (rc == 0 && p->b) {
            const uint8_t *t = (const uint8_t *)g.text;
            size_t tn = g.text_len;
            if (p->opt->strip_headers) t = strip_header(t, &tn);
            rc = clsb_add_bytes(p->b, t, tn, where);
            if (rc == 0) rc = clsb_add_label(p->b, label, where);
        }
        cJSON_Delete(json);
        if (rc < 0) return -1;
    }
    if (r < 0) return gma_error_prefix("%s:%ld", name, l->lineno + 1);
    return 0;
}

/* The file of a split inside dir, or NULL (names written to buf). */
static const char *split_file(const char *dir, const char *format, const char *split, char *buf, size_t cap) {
    const char *ext = format[0] == 'j' ? "jsonl" : "tsv";
    snprintf(buf, cap, "%s/%s.%s", dir, split, ext);
    if (gma_path_exists(buf)) return buf;
    snprintf(buf, cap, "%s/%s.%s.gz", dir, split, ext);
    if (gma_path_exists(buf)) return buf;
    return NULL;
}

int cls_generic_load(ClsDataset *d, const char *format, const char *path, const char *split,
                     const ClsOptions *opt) {
    if (cls_split_index(split) < 0) return -1;
    struct stat st;
    if (!path || stat(path, &st) != 0) return gma_errorf("%s: no such file or directory", path ? path : "(null)");
    int is_dir = S_ISDIR(st.st_mode);
    char file[4200];
    if (is_dir && !split_file(path, format, split, file, sizeof file))
        return gma_errorf("%s: no %s.%s or %s.%s.gz in this directory", path, split,
                          format[0] == 'j' ? "jsonl" : "tsv", split, format[0] == 'j' ? "jsonl" : "tsv");
    if (!is_dir) snprintf(file, sizeof file, "%s", path);

    ClsBuilder b;
    clsb_init(&b, d, 1, 0, 257, opt->max_len, opt->truncate);
    GenericPass p;
    memset(&p, 0, sizeof p);
    p.format = format;
    p.opt = opt;
    p.b = &b;
    int rc = cls_file_lines(file, generic_lines, &p);
    clsb_finish(&b);

    /* the classes: from every split file, so that the splits agree */
    GenericPass all;
    memset(&all, 0, sizeof all);
    all.format = format;
    all.opt = opt;
    if (rc == 0 && (p.has_name || opt->n_classes == 0)) {
        if (is_dir) {
            const char *splits[3] = {"train", "valid", "test"};
            for (int s = 0; s < 3 && rc == 0; s++) {
                char other[4200];
                if (split_file(path, format, splits[s], other, sizeof other))
                    rc = cls_file_lines(other, generic_lines, &all);
            }
        } else {
            rc = cls_file_lines(file, generic_lines, &all);
        }
    }
    if (rc == 0) {
        if (p.has_name) {
            qsort(all.names.name, (size_t)all.names.n, sizeof *all.names.name, cmp_str);
            if (opt->n_classes > 0 && all.names.n > opt->n_classes)
                rc = gma_errorf("%s: %d label names but n_classes is %d", path, all.names.n, opt->n_classes);
            int *map = xmalloc((size_t)(p.names.n ? p.names.n : 1) * sizeof *map);
            for (int i = 0; i < p.names.n; i++)
                map[i] = nameset_find(&all.names, p.names.name[i], strlen(p.names.name[i]));
            for (int i = 0; i < d->n; i++) d->label[i] = map[d->label[i]];
            free(map);
            d->n_classes = opt->n_classes > 0 ? opt->n_classes : all.names.n;
        } else {
            d->n_classes = opt->n_classes > 0 ? opt->n_classes : (int)all.max_num + 1;
        }
        if (d->n_classes < 1) d->n_classes = 1;
    }
    nameset_free(&p.names);
    nameset_free(&all.names);
    return rc;
}

int cls_jsonl_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt) {
    return cls_generic_load(d, "jsonl", path, split, opt);
}

int cls_tsv_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt) {
    return cls_generic_load(d, "tsv", path, split, opt);
}
