/* fuzz_util.c: see fuzz_util.h. */
#define _XOPEN_SOURCE 700
#include "nn/mixers/mixer.h"
#include "fuzz_util.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "train/config_registry.h"

static char g_dir[512];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)st, (void)flag, (void)f;
    return remove(p), 0;
}

void fz_rmtree(const char *path) { nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

static void cleanup(void) {
    if (g_dir[0]) fz_rmtree(g_dir);
}

const char *fz_dir(void) {
    if (!g_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/gma-fuzz-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(g_dir)) {
            perror("fuzz: mkdtemp");
            abort();
        }
        atexit(cleanup);
    }
    return g_dir;
}

const char *fz_path(const char *name) {
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", fz_dir(), name);
    return buf[k];
}

void fz_write(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

void fz_init(void) {
    setenv("OMP_NUM_THREADS", "1", 1);
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    config_register_all(); /* every module's config section */
    fz_dir();
}

void fz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz invariant broken: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

char *fz_cut(const uint8_t **data, size_t *n) {
    const uint8_t *z = memchr(*data, 0, *n);
    size_t k = z ? (size_t)(z - *data) : *n;
    char *s = xmalloc(k + 1);
    memcpy(s, *data, k);
    s[k] = 0;
    *data += z ? k + 1 : k;
    *n -= z ? k + 1 : k;
    return s;
}
