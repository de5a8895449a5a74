/* fuzz_archive.c: tar, tar.gz, gz and zip extraction (src/data/archive.c); the format
 * is detected from the input's magic bytes. Invariants: nothing is written outside the
 * destination (the scratch directory holds only the input and the destination
 * afterwards), no link is created, no temporary file is left; a successful extraction
 * leaves only regular files and directories. An entry the archive itself names like a
 * temporary file is not a leftover: the walk that looks for such names visits what the
 * extractor visits (it reads no directory's data, so a directory entry with corrupt data
 * stops neither). */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/fetch/archive.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init();
    return 0;
}

static const char *g_dest, *g_input;
static int g_named_tmp; /* an entry of the archive itself is named like a temporary file */

static int check_one(const char *p, const struct stat *st, int flag, struct FTW *f) {
    (void)f;
    size_t dl = strlen(g_dest);
    int inside = !strncmp(p, g_dest, dl) && (p[dl] == 0 || p[dl] == '/');
    if (!inside && strcmp(p, fz_dir()) && strcmp(p, g_input)) fz_fail("extraction wrote %s, outside %s", p, g_dest);
    if (flag == FTW_SL || S_ISLNK(st->st_mode)) fz_fail("extraction created a link %s", p);
    if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) fz_fail("extraction created %s, neither file nor directory", p);
    char suffix[32];
    size_t sl = (size_t)snprintf(suffix, sizeof suffix, ".tmp.%d", (int)getpid()), pl = strlen(p);
    if (!g_named_tmp && pl > sl && !strcmp(p + pl - sl, suffix)) fz_fail("extraction left a temporary file %s", p);
    return 0;
}

static int read_all(void *ctx, const ArchiveEntry *e, ArchiveReader *r) {
    (void)ctx;
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".tmp.%d", (int)getpid());
    if (strstr(e->name, suffix)) g_named_tmp = 1;
    if (e->is_dir) return 0; /* as the extractor: a directory's data is never read, so the walk goes on */
    char buf[4096];
    long k;
    while ((k = archive_read(r, buf, sizeof buf)) > 0) {
    }
    return k < 0 ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    static char input[1100], dest[1100];
    snprintf(input, sizeof input, "%s", fz_path("input.arc"));
    snprintf(dest, sizeof dest, "%s", fz_path("out"));
    g_input = input, g_dest = dest;
    fz_write(input, data, n);
    g_named_tmp = 0;
    (void)archive_walk(input, read_all, NULL);
    (void)archive_extract(input, dest);
    nftw(fz_dir(), check_one, 16, FTW_PHYS);
    fz_rmtree(dest);
    gma_error_clear();
    return 0;
}
