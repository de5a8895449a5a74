/* lra_pathfinder.c: LRA Pathfinder from the release's directory layout (what `gmadata
 * generate pathfinder` writes, and the layout LRA's pathfinder.py reads):
 * PATH/metadata/<batch>.npy text lines "SUBDIR FILE INDEX LABEL ..." naming
 * PATH/SUBDIR/FILE, an 8-bit grayscale PNG. PATH is the difficulty's directory
 * (curv_baseline, curv_contour_length_9, curv_contour_length_14), or a folder holding
 * exactly one of them. Examples are taken batch by batch (batch numbers ascending), lines in
 * file order; empty image files are skipped (the release filters them out); the split is
 * the release's [:80%] / [80%:90%] / [90%:]. Token = pixel + 1, row-major; every image must
 * have the first one's size.
 */
#include "data/cls/cls_loaders.h"
#include "data/cls/cls_build.h"
#include "data/cls/cls_lines.h"
#include "data/cls/png.h"
#include "core/common.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const PATTERNS[3] = {"curv_baseline", "curv_contour_length_9", "curv_contour_length_14"};

typedef struct Example {
    char *file;
    int label;
} Example;

typedef struct MetaFile {
    long batch;   /* numeric name, or -1 */
    char name[256];
} MetaFile;

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int meta_cmp(const void *a, const void *b) {
    const MetaFile *x = a, *y = b;
    if (x->batch != y->batch) return x->batch < 0 ? 1 : (y->batch < 0 ? -1 : (x->batch < y->batch ? -1 : 1));
    return strcmp(x->name, y->name);
}

/* Find the difficulty directory: path itself when it has metadata/, else its one
 * curv_* child. */
static int find_root(const char *path, char *root, size_t cap) {
    char p[4200];
    snprintf(p, sizeof p, "%s/metadata", path);
    if (is_dir(p)) {
        snprintf(root, cap, "%s", path);
        return 0;
    }
    int found = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s/metadata", path, PATTERNS[i]);
        if (!is_dir(p)) continue;
        if (found++)
            return gma_errorf("%s: holds more than one difficulty (%s and %s); give the difficulty's directory",
                              path, root + strlen(path) + 1, PATTERNS[i]);
        snprintf(root, cap, "%s/%s", path, PATTERNS[i]);
    }
    if (!found)
        return gma_errorf("%s: no metadata/ folder, nor curv_baseline/, curv_contour_length_9/ or "
                          "curv_contour_length_14/ with one (expected the Pathfinder layout)", path);
    return 0;
}

/* Read one metadata file's lines into ex (growing it). */
static int read_meta(const char *root, const char *meta, Example **ex, size_t *n, size_t *cap) {
    size_t len;
    char *text = gma_read_file(meta, &len);
    if (!text) return -1;
    int rc = 0;
    long line = 0;
    char *s = text;
    while (*s && rc == 0) {
        line++;
        char *e = strchr(s, '\n');
        if (e) *e = 0;
        size_t l = strlen(s);
        if (l && s[l - 1] == '\r') s[--l] = 0;
        if (l) {
            char *f[4] = {0};
            int nf = 0;
            char *save = NULL;
            for (char *t = strtok_r(s, " ", &save); t && nf < 4; t = strtok_r(NULL, " ", &save)) f[nf++] = t;
            long label;
            if (nf < 4) rc = gma_errorf("%s:%ld: %d fields, at least 4 expected (SUBDIR FILE INDEX LABEL ...)", meta, line, nf);
            else if (gma_parse_long(f[3], 0, 1, &label) < 0)
                rc = gma_errorf("%s:%ld: label '%s' is not 0 or 1", meta, line, f[3]);
            else if (f[0][0] == '/' || strstr(f[0], "..") || strchr(f[1], '/') || strstr(f[1], ".."))
                rc = gma_errorf("%s:%ld: image path '%s/%s' leaves the data directory", meta, line, f[0], f[1]);
            else {
                if (*n == *cap) {
                    *cap = *cap ? 2 * *cap : 1024;
                    *ex = xrealloc(*ex, *cap * sizeof **ex);
                }
                size_t need = strlen(root) + strlen(f[0]) + strlen(f[1]) + 3;
                char *file = xmalloc(need);
                snprintf(file, need, "%s/%s/%s", root, f[0], f[1]);
                (*ex)[*n].file = file;
                (*ex)[*n].label = (int)label;
                (*n)++;
            }
        }
        if (!e) break;
        s = e + 1;
    }
    free(text);
    return rc;
}

int lra_pathfinder_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt) {
    int s = cls_split_index(split);
    if (s < 0) return -1;
    char root[4096], mdir[4200];
    if (find_root(path, root, sizeof root) < 0) return -1;
    snprintf(mdir, sizeof mdir, "%s/metadata", root);
    DIR *dir = opendir(mdir);
    if (!dir) return gma_errorf("%s: cannot open: %s", mdir, strerror(errno));
    MetaFile *mf = NULL;
    size_t nm = 0, cm = 0;
    for (struct dirent *de; (de = readdir(dir));) {
        size_t l = strlen(de->d_name);
        if (l < 5 || l >= sizeof mf->name || strcmp(de->d_name + l - 4, ".npy") != 0) continue;
        if (nm == cm) {
            cm = cm ? 2 * cm : 64;
            mf = xrealloc(mf, cm * sizeof *mf);
        }
        snprintf(mf[nm].name, sizeof mf[nm].name, "%s", de->d_name);
        char num[256];
        snprintf(num, sizeof num, "%.*s", (int)(l - 4), de->d_name);
        long b;
        mf[nm].batch = gma_parse_long(num, 0, 1L << 40, &b) == 0 ? b : -1;
        nm++;
    }
    closedir(dir);
    if (nm == 0) {
        free(mf);
        return gma_errorf("%s: no metadata .npy files", mdir);
    }
    qsort(mf, nm, sizeof *mf, meta_cmp);
    Example *ex = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < nm && rc == 0; i++) {
        char meta[4600];
        snprintf(meta, sizeof meta, "%s/%s", mdir, mf[i].name);
        rc = read_meta(root, meta, &ex, &n, &cap);
    }
    free(mf);
    /* the release drops examples whose image file is empty */
    size_t kept = 0;
    int filtered = rc == 0; /* after a failed read_meta the n entries read stay, to be freed below */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        struct stat st;
        if (stat(ex[i].file, &st) != 0) {
            rc = gma_errorf("%s: cannot open: %s (named in %s)", ex[i].file, strerror(errno), mdir);
            for (size_t j = i; j < n; j++) free(ex[j].file);
            break;
        }
        if (st.st_size == 0) {
            free(ex[i].file);
            continue;
        }
        ex[kept++] = ex[i];
    }
    if (filtered) n = kept;
    size_t b1 = (n * 80 + 50) / 100, b2 = (n * 90 + 50) / 100;
    size_t lo = s == 0 ? 0 : (s == 1 ? b1 : b2), hi = s == 0 ? b1 : (s == 1 ? b2 : n);
    ClsBuilder b;
    clsb_init(&b, d, 1, 2, 257, opt->max_len, opt->truncate);
    int W = 0, H = 0;
    for (size_t i = lo; rc == 0 && i < hi; i++) {
        uint8_t *pix;
        int w, h;
        if (png_read_gray8(ex[i].file, &pix, &w, &h) < 0) {
            rc = -1;
            break;
        }
        if (!W) { W = w; H = h; }
        if (w != W || h != H) rc = gma_errorf("%s: image is %d x %d, the split's first is %d x %d", ex[i].file, w, h, W, H);
        if (rc == 0) rc = clsb_add_bytes(&b, pix, (size_t)w * h, ex[i].file);
        if (rc == 0) rc = clsb_add_label(&b, ex[i].label, ex[i].file);
        free(pix);
    }
    for (size_t i = 0; i < n; i++) free(ex[i].file);
    free(ex);
    clsb_finish(&b);
    return rc;
}
