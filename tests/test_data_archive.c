/* test_data_archive.c: the streaming archive reader on archives the test builds itself:
 * tar, tar.gz (zlib gzip), plain .gz, zip with stored and deflated entries; path-escape
 * entries are refused, truncated and corrupt archives name the entry and offset; a tar cut
 * between two entries (no end-of-archive blocks, plain or gzipped) and a tar.gz cut anywhere
 * are errors that leave only whole files under their final names; extract --out. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "data/fetch/archive.h"
#include "archive_build.h"
#include "testutil.h"

static void write_buf(const char *path, const Buf *b, size_t n) {
    FILE *f = fopen(path, "wb");
    fwrite(b->p, 1, n, f);
    fclose(f);
}

static void write_gz(const char *path, const Buf *b) {
    gzFile g = gzopen(path, "wb9");
    gzwrite(g, b->p, (unsigned)b->n);
    gzclose(g);
}

static char *big_text(size_t n) {
    char *s = xmalloc(n + 1);
    unsigned x = 12345;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        s[i] = "abcdefgh \n"[(x >> 16) % 10];
    }
    s[n] = 0;
    return s;
}

/* Visitor that concatenates "name:size:content-crc;" for every entry. */
typedef struct Seen {
    char log[4096];
    int stop_after;
    int count;
} Seen;
static int visit(void *ctx, const ArchiveEntry *e, ArchiveReader *r) {
    Seen *s = ctx;
    unsigned long crc = crc32(0, NULL, 0);
    char buf[1000];
    long k;
    size_t total = 0;
    while ((k = archive_read(r, buf, sizeof buf)) > 0) crc = crc32(crc, (Bytef *)buf, (uInt)k), total += (size_t)k;
    if (k < 0) return -1;
    char line[300];
    snprintf(line, sizeof line, "%s:%zu:%s:%08lx;", e->name, total, e->is_dir ? "d" : "f", crc);
    strcat(s->log, line);
    s->count++;
    return s->stop_after && s->count >= s->stop_after ? 1 : 0;
}

static const char *read_back(const char *path) {
    static char buf[1 << 20];
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

START_TEST(test_tar_and_tgz_roundtrip) {
    char *big = big_text(300000);
    Buf b = {0};
    tar_add(&b, "corpus/", "", 0, '5');
    tar_add(&b, "corpus/a.txt", "hello\n", 6, '0');
    tar_add(&b, "corpus/big.txt", big, 300000, '0');
    tar_end(&b);
    write_buf(tu_path("t.tar"), &b, b.n);
    write_gz(tu_path("t.tar.gz"), &b);
    const char *names[2] = {"t.tar", "t.tar.gz"};
    for (int i = 0; i < 2; i++) {
        Seen s = {0};
        ck_assert_int_eq(archive_walk(tu_path(names[i]), visit, &s), 0);
        ck_assert_int_eq(s.count, 3);
        ck_assert_ptr_nonnull(strstr(s.log, "corpus/a.txt:6:f:"));
        ck_assert_ptr_nonnull(strstr(s.log, "corpus/big.txt:300000:f:"));
        char dest[256];
        snprintf(dest, sizeof dest, "%s/x%d", tu_tmpdir(), i);
        ck_assert_int_eq(archive_extract(tu_path(names[i]), dest), 0);
        char p[300];
        snprintf(p, sizeof p, "%s/corpus/big.txt", dest);
        ck_assert_str_eq(read_back(p), big);
        snprintf(p, sizeof p, "%s/corpus/a.txt", dest);
        ck_assert_str_eq(read_back(p), "hello\n");
    }
    /* early stop: only the first entry is visited */
    Seen s = {.stop_after = 1};
    ck_assert_int_eq(archive_walk(tu_path("t.tar.gz"), visit, &s), 0);
    ck_assert_int_eq(s.count, 1);
    free(big);
    free(b.p);
}
END_TEST

START_TEST(test_zip_stored_and_deflated) {
    char *big = big_text(200000);
    ZipEnt e[3] = {{"d/", "", 0, 0}, {"d/stored.txt", "stored bytes", 12, 0}, {"d/deflated.txt", big, 200000, 1}};
    Buf b = {0};
    zip_build(&b, e, 3, 0);
    write_buf(tu_path("t.zip"), &b, b.n);
    Seen s = {0};
    ck_assert_int_eq(archive_walk(tu_path("t.zip"), visit, &s), 0);
    ck_assert_int_eq(s.count, 3);
    ck_assert_ptr_nonnull(strstr(s.log, "d/:0:d:"));
    ck_assert_ptr_nonnull(strstr(s.log, "d/stored.txt:12:f:"));
    ck_assert_ptr_nonnull(strstr(s.log, "d/deflated.txt:200000:f:"));
    char dest[256], p[300];
    snprintf(dest, sizeof dest, "%s/zx", tu_tmpdir());
    ck_assert_int_eq(archive_extract(tu_path("t.zip"), dest), 0);
    snprintf(p, sizeof p, "%s/d/deflated.txt", dest);
    ck_assert_str_eq(read_back(p), big);
    snprintf(p, sizeof p, "%s/d/stored.txt", dest);
    ck_assert_str_eq(read_back(p), "stored bytes");
    free(big);
    free(b.p);
}
END_TEST

START_TEST(test_plain_gz_is_one_entry) {
    Buf b = {0};
    put(&b, "just some text\n", 15);
    write_gz(tu_path("notes.txt.gz"), &b);
    Seen s = {0};
    ck_assert_int_eq(archive_walk(tu_path("notes.txt.gz"), visit, &s), 0);
    ck_assert_int_eq(s.count, 1);
    ck_assert_ptr_nonnull(strstr(s.log, "notes.txt:15:f:"));
    free(b.p);
}
END_TEST

START_TEST(test_path_escape_refused) {
    ck_assert(!archive_path_is_safe("../evil"));
    ck_assert(!archive_path_is_safe("a/../../evil"));
    ck_assert(!archive_path_is_safe("/etc/passwd"));
    ck_assert(!archive_path_is_safe(""));
    ck_assert(archive_path_is_safe("a/b..c/d"));
    ck_assert(archive_path_is_safe("./a"));
    Buf b = {0};
    tar_add(&b, "ok.txt", "fine", 4, '0');
    tar_add(&b, "../escape.txt", "bad", 3, '0');
    tar_end(&b);
    write_buf(tu_path("evil.tar"), &b, b.n);
    char dest[256], p[300];
    snprintf(dest, sizeof dest, "%s/ev/inner", tu_tmpdir());
    ck_assert_int_eq(archive_extract(tu_path("evil.tar"), dest), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "../escape.txt"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "escapes"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "offset 1024"));
    snprintf(p, sizeof p, "%s/ev/escape.txt", tu_tmpdir());
    ck_assert(!gma_path_exists(p));
    free(b.p);
    ZipEnt e[1] = {{"/abs/evil.txt", "x", 1, 0}};
    Buf z = {0};
    zip_build(&z, e, 1, 0);
    write_buf(tu_path("evil.zip"), &z, z.n);
    ck_assert_int_eq(archive_extract(tu_path("evil.zip"), dest), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "/abs/evil.txt"));
    free(z.p);
}
END_TEST

START_TEST(test_truncated_and_corrupt) {
    char *big = big_text(100000);
    Buf b = {0};
    tar_add(&b, "first.txt", "one", 3, '0');
    tar_add(&b, "second.txt", big, 100000, '0');
    tar_end(&b);
    /* tar cut inside the second entry's data */
    write_buf(tu_path("cut.tar"), &b, 1024 + 512 + 5000);
    Seen s = {0};
    ck_assert_int_eq(archive_walk(tu_path("cut.tar"), visit, &s), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "cut.tar"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "second.txt"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "offset 1024"));
    /* tar.gz cut in the middle of the compressed stream */
    write_gz(tu_path("full.tgz"), &b);
    size_t len;
    char *gz = gma_read_file(tu_path("full.tgz"), &len);
    Buf g = {(unsigned char *)gz, len, len};
    write_buf(tu_path("cut.tgz"), &g, len / 2);
    char dest[256];
    snprintf(dest, sizeof dest, "%s/cutx", tu_tmpdir());
    ck_assert_int_eq(archive_extract(tu_path("cut.tgz"), dest), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "second.txt"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "truncated"));
    /* nothing half-written under the final name */
    char p[300];
    snprintf(p, sizeof p, "%s/second.txt", dest);
    ck_assert(!gma_path_exists(p));
    free(gz);
    /* zip: truncated (no central directory) and a CRC mismatch */
    ZipEnt e[2] = {{"a.txt", "alpha", 5, 0}, {"b.txt", big, 100000, 1}};
    Buf z = {0};
    zip_build(&z, e, 2, 0);
    write_buf(tu_path("cut.zip"), &z, z.n - 30);
    ck_assert_int_eq(archive_walk(tu_path("cut.zip"), visit, &s), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "cut.zip"));
    Buf z2 = {0};
    zip_build(&z2, e, 2, 1);
    write_buf(tu_path("crc.zip"), &z2, z2.n);
    memset(&s, 0, sizeof s);
    ck_assert_int_eq(archive_walk(tu_path("crc.zip"), visit, &s), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "b.txt"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "CRC"));
    /* garbage */
    tu_write(tu_path("junk.bin"), "this is not an archive at all, not even close................");
    ck_assert_int_eq(archive_walk(tu_path("junk.bin"), visit, &s), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "not a recognised archive"));
    free(big);
    free(b.p);
    free(z.p);
    free(z2.p);
}
END_TEST

static const char *const CUT_DATA[3] = {"one\n", "two two\n", "three three three\n"};

/* first.txt, second.txt, third.txt and the end blocks; *boundary: where third.txt's header starts */
static Buf three_entries(size_t *boundary) {
    Buf b = {0};
    tar_add(&b, "first.txt", CUT_DATA[0], strlen(CUT_DATA[0]), '0');
    tar_add(&b, "second.txt", CUT_DATA[1], strlen(CUT_DATA[1]), '0');
    *boundary = b.n;
    tar_add(&b, "third.txt", CUT_DATA[2], strlen(CUT_DATA[2]), '0');
    tar_end(&b);
    return b;
}

/* every file of the three under dest is whole; how many there are */
static int whole_files(const char *dest) {
    static const char *const names[3] = {"first.txt", "second.txt", "third.txt"};
    int n = 0;
    for (int i = 0; i < 3; i++) {
        char p[400];
        snprintf(p, sizeof p, "%s/%s", dest, names[i]);
        const char *got = read_back(p);
        if (!got) continue;
        ck_assert_msg(!strcmp(got, CUT_DATA[i]), "%s is not whole: \"%s\"", p, got);
        n++;
    }
    ck_assert_int_eq(run("find %s -name '*.tmp.*'", dest), 0);
    ck_assert_msg(g_out[0] == 0, "temporary files left: %s", g_out);
    return n;
}

START_TEST(test_cut_between_entries) {
    size_t at;
    Buf b = three_entries(&at);
    char want[64], dest[300];
    snprintf(want, sizeof want, "offset %zu", at);
    /* plain tar and a whole gzip stream of the cut tar: an error naming the archive and the offset */
    write_buf(tu_path("cut2.tar"), &b, at);
    Buf cut = {b.p, at, at};
    Buf gz = gzip_buf(&cut);
    write_buf(tu_path("cut2.tgz"), &gz, gz.n);
    const char *names[2] = {"cut2.tar", "cut2.tgz"};
    for (int i = 0; i < 2; i++) {
        Seen s = {0};
        ck_assert_int_eq(archive_walk(tu_path(names[i]), visit, &s), -1);
        ck_assert_msg(strstr(gma_error(), names[i]) && strstr(gma_error(), want) && strstr(gma_error(), "end-of-archive"),
                      "%s", gma_error());
        snprintf(dest, sizeof dest, "%s/cut2x%d", tu_tmpdir(), i);
        ck_assert_int_eq(archive_extract(tu_path(names[i]), dest), -1);
        ck_assert_int_eq(whole_files(dest), 2);
        /* the command: one line, exit 1 */
        ck_assert_int_eq(run("bin/gmadata extract %s --dest %s", tu_path(names[i]), dest), 1);
        ck_assert_msg(strstr(g_out, want) && strchr(g_out, '\n') == g_out + strlen(g_out) - 1, "%s", g_out);
    }
    /* the whole tar still extracts (a lone zero block is an end too) */
    write_buf(tu_path("whole3.tar"), &b, b.n - 512);
    snprintf(dest, sizeof dest, "%s/whole3", tu_tmpdir());
    ck_assert_msg(archive_extract(tu_path("whole3.tar"), dest) == 0, "%s", gma_error());
    ck_assert_int_eq(whole_files(dest), 3);
    /* a tar.gz cut anywhere in its compressed bytes: an error, and only whole files */
    Buf full = gzip_buf(&b);
    for (size_t n = 1; n < full.n; n += 7) {
        write_buf(tu_path("cutn.tgz"), &full, n);
        snprintf(dest, sizeof dest, "%s/cutn%zu", tu_tmpdir(), n);
        ck_assert_msg(archive_extract(tu_path("cutn.tgz"), dest) == -1, "cut at %zu of %zu accepted", n, full.n);
        whole_files(dest);
    }
    free(b.p);
    free(gz.p);
    free(full.p);
}
END_TEST

START_TEST(test_cli_extract_out) {
    size_t at;
    Buf b = three_entries(&at);
    write_buf(tu_path("three.tar"), &b, b.n);
    char dest[300];
    snprintf(dest, sizeof dest, "%s/by_out", tu_tmpdir());
    ck_assert_msg(run("cd %s && %s/bin/gmadata extract three.tar --out %s", tu_tmpdir(), getenv("PWD"), dest) == 0, "%s", g_out);
    ck_assert_int_eq(whole_files(dest), 3);
    ck_assert_int_eq(whole_files(tu_tmpdir()), 0); /* nothing in the current folder */
    ck_assert_int_eq(run("bin/gmadata extract %s --out %s --dest %s/other", tu_path("three.tar"), dest, tu_tmpdir()), 2);
    ck_assert_msg(strstr(g_out, "--dest and --out"), "%s", g_out);
    free(b.p);
}
END_TEST

/* a re-run removes ENTRY.tmp.PID of an entry ENTRY (PID gone) before writing ENTRY; a live
 * process's temporary, one of a name the archive does not hold, and an entry that is
 * itself named like a temporary stay */
START_TEST(test_extract_sweeps_stale_tmp) {
    int dead = tu_dead_pid(), dead2 = tu_dead_pid(), live = (int)getpid();
    char dest[300], lookalike[64], p[5][400];
    snprintf(dest, sizeof dest, "%s/swept", tu_tmpdir());
    snprintf(lookalike, sizeof lookalike, "sub/x.txt.tmp.%d", dead);
    Buf b = {0};
    tar_add(&b, "first.txt", "one\n", 4, '0');
    tar_add(&b, lookalike, "an entry\n", 9, '0');
    tar_add(&b, "sub/x.txt", "x\n", 2, '0');
    tar_add(&b, "second.txt", "two\n", 4, '0');
    tar_end(&b);
    write_buf(tu_path("sweep.tar"), &b, b.n);
    ck_assert_int_eq(run("mkdir -p %s/sub", dest), 0);
    snprintf(p[0], sizeof p[0], "%s/first.txt.tmp.%d", dest, dead);
    snprintf(p[1], sizeof p[1], "%s/sub/x.txt.tmp.%d", dest, dead2);
    snprintf(p[2], sizeof p[2], "%s/second.txt.tmp.%d", dest, live);
    snprintf(p[3], sizeof p[3], "%s/other.txt.tmp.%d", dest, dead);
    for (int i = 0; i < 4; i++) tu_write(p[i], "left behind");
    ck_assert_msg(run("bin/gmadata extract %s --dest %s", tu_path("sweep.tar"), dest) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "removed 2 stale temporary files"), "%s", g_out);
    ck_assert(!gma_path_exists(p[0]) && !gma_path_exists(p[1]));
    ck_assert_msg(gma_path_exists(p[2]), "a live process's temporary was removed");
    ck_assert_msg(gma_path_exists(p[3]), "a file of a name the archive does not hold was removed");
    /* again: the entry named like a temporary is extracted, not swept */
    ck_assert_msg(run("bin/gmadata extract %s --dest %s", tu_path("sweep.tar"), dest) == 0, "%s", g_out);
    ck_assert_msg(!strstr(g_out, "removed"), "%s", g_out);
    snprintf(p[4], sizeof p[4], "%s/%s", dest, lookalike);
    ck_assert_str_eq(read_back(p[4]), "an entry\n");
    free(b.p);
}
END_TEST

START_TEST(test_cli_extract_errors) {
    char out[2048], cmd[1024];
    snprintf(cmd, sizeof cmd, "bin/gmadata extract %s --dest %s/clix", tu_path("cut.tar"), tu_tmpdir());
    Buf b = {0};
    tar_add(&b, "x.txt", "0123456789", 10, '0');
    write_buf(tu_path("cut.tar"), &b, 512 + 4);
    int rc = tu_run(cmd, out, sizeof out);
    ck_assert_int_ne(rc, 0);
    ck_assert_msg(strncmp(out, "gmadata: ", 9) == 0 && strchr(out, '\n') == out + strlen(out) - 1, "one line: %s", out);
    ck_assert_ptr_nonnull(strstr(out, "x.txt"));
    free(b.p);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("data_archive");
    TCase *tc = tcase_create("archive");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_tar_and_tgz_roundtrip);
    tcase_add_test(tc, test_zip_stored_and_deflated);
    tcase_add_test(tc, test_plain_gz_is_one_entry);
    tcase_add_test(tc, test_path_escape_refused);
    tcase_add_test(tc, test_truncated_and_corrupt);
    tcase_add_test(tc, test_cli_extract_errors);
    tcase_add_test(tc, test_cut_between_entries);
    tcase_add_test(tc, test_cli_extract_out);
    tcase_add_test(tc, test_extract_sweeps_stale_tmp);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
