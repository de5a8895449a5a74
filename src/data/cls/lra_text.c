/* lra_text.c: LRA Text, byte-level IMDB sentiment read straight from aclImdb_v1.tar.gz
 * (entries aclImdb/{train,test}/{pos,neg}/ID_RATING.txt; neg = 0, pos = 1; tokens are
 * byte + 1). LRA trains on train and uses test for both validation and test; here by
 * default the reviews of train whose ID mod 1000 is >= 900 (1,200 per class) are held out
 * as valid, so that model selection never sees the test set; ClsOptions.text_valid_test
 * gives the release's split. See docs/lra.md.
 */
#include "data/cls/cls_loaders.h"
#include "data/cls/cls_build.h"
#include "data/fetch/archive.h"
#include "core/common.h"

#include <stdlib.h>
#include <string.h>

typedef struct TextLoad {
    ClsBuilder b;
    const char *archive;
    const char *dir;     /* "train" or "test" */
    int want;            /* -1 every review of dir, 0 train part, 1 valid part */
    uint8_t *buf;
    size_t cap;
    long found[2];       /* reviews seen under neg/ and pos/ (before the hold-out) */
} TextLoad;

/* Label (0 neg, 1 pos) if name is aclImdb/DIR/{neg,pos}/FILE.txt, else -1; *base gets FILE.txt. */
static int review_label(const char *name, const char *dir, const char **base) {
    if (strncmp(name, "./", 2) == 0) name += 2;
    if (strncmp(name, "aclImdb/", 8) != 0) return -1;
    name += 8;
    size_t dl = strlen(dir);
    if (strncmp(name, dir, dl) != 0 || name[dl] != '/') return -1;
    name += dl + 1;
    int label;
    if (strncmp(name, "neg/", 4) == 0) label = 0;
    else if (strncmp(name, "pos/", 4) == 0) label = 1;
    else return -1;
    name += 4;
    size_t n = strlen(name);
    if (n < 5 || strchr(name, '/') || strcmp(name + n - 4, ".txt") != 0) return -1;
    *base = name;
    return label;
}

static int text_visit(void *ctx, const ArchiveEntry *e, ArchiveReader *r) {
    TextLoad *t = ctx;
    const char *base;
    if (e->is_dir) return 0;
    int label = review_label(e->name, t->dir, &base);
    if (label < 0) return 0;
    t->found[label]++;
    char where[1200];
    snprintf(where, sizeof where, "%s: entry %s (offset %llu)", t->archive, e->name,
             (unsigned long long)e->offset);
    if (t->want >= 0) {
        char *end;
        long id = strtol(base, &end, 10);
        if (end == base || *end != '_' || id < 0)
            return gma_errorf("%s: review file name is not ID_RATING.txt", where);
        if ((id % 1000 >= 900) != (t->want == 1)) return 0;
    }
    if (e->size > ((uint64_t)1 << 30)) return gma_errorf("%s: review of %llu bytes is too large", where,
                                                       (unsigned long long)e->size);
    size_t n = 0;
    for (;;) {
        if (n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 1 << 16;
            t->buf = xrealloc(t->buf, t->cap);
        }
        long got = archive_read(r, t->buf + n, t->cap - n);
        if (got < 0) return -1;
        if (got == 0) break;
        n += (size_t)got;
    }
    if (clsb_add_bytes(&t->b, t->buf, n, where) < 0) return -1;
    if (clsb_add_label(&t->b, label, where) < 0) return -1;
    return 0;
}

int lra_text_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt) {
    int s = cls_split_index(split);
    if (s < 0) return -1;
    TextLoad t;
    memset(&t, 0, sizeof t);
    t.archive = path;
    /* the release's split (opt->text_valid_test): train all of train/, valid = test = test/ */
    int whole = s == 2 || opt->text_valid_test;
    t.dir = s == 2 || (s == 1 && opt->text_valid_test) ? "test" : "train";
    t.want = whole ? -1 : s;
    clsb_init(&t.b, d, 1, 2, 257, opt->max_len, opt->truncate);
    int rc = archive_walk(path, text_visit, &t);
    free(t.buf);
    clsb_finish(&t.b);
    if (rc < 0) return -1;
    for (int l = 0; l < 2; l++)
        if (t.found[l] == 0)
            return gma_errorf("%s: no entries aclImdb/%s/%s/*.txt (expected the aclImdb_v1.tar.gz layout)",
                              path, t.dir, l ? "pos" : "neg");
    return 0;
}
