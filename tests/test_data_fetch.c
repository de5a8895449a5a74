/* test_data_fetch.c: downloads against file:// URLs and a tiny HTTP/1.0 server the test
 * forks on 127.0.0.1 (Range support; one path drops the connection mid-body, one answers
 * 503 once, one is 404; a range past the end is answered 416 with "bytes * /TOTAL"): full download, interrupted-and-resumed, resumed .part, digest
 * mismatch, 404, unreachable host, unknown dataset, the one-line CLI errors, and archive
 * data sets fetched from that server: a .tar.gz made here with tar(1) is served as the LRA
 * release (no published digest: downloaded, then extracted, and the extracted files are
 * compared with the originals) and as the IMDB archive (its published MD5 does not match:
 * refused, nothing extracted, nothing left). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "data/fetch/digest.h"
#include "data/fetch/fetch.h"
#include "testutil.h"

#define BODY_LEN 300000
static unsigned char body[BODY_LEN];
static char body_sha[65];
static pid_t server_pid;
static int server_port;
/* the archive served at ARCH_PATHS (make_archive), NULL until made */
static unsigned char *arch;
static size_t arch_len;
static const char *const ARCH_PATHS[] = {"/lra_release.gz", "/aclImdb_v1.tar.gz"};

static void make_body(void) {
    unsigned x = 99;
    for (int i = 0; i < BODY_LEN; i++) {
        x = x * 1103515245u + 12345u;
        body[i] = (unsigned char)(x >> 16);
    }
    Digest d;
    digest_init(&d, DIGEST_SHA256);
    digest_update(&d, body, BODY_LEN);
    digest_final_hex(&d, body_sha);
}

static void send_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k <= 0) return;
        c += k;
        n -= (size_t)k;
    }
}

static void serve(int ls, const char *logpath) {
    int dropped = 0, flaked = 0;
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0) continue;
        char req[4096];
        size_t n = 0;
        while (n < sizeof req - 1) {
            ssize_t k = recv(fd, req + n, sizeof req - 1 - n, 0);
            if (k <= 0) break;
            n += (size_t)k;
            req[n] = 0;
            if (strstr(req, "\r\n\r\n")) break;
        }
        req[n] = 0;
        char path[256] = "";
        sscanf(req, "GET %255s", path);
        long from = 0;
        char *r = strcasestr(req, "\nRange: bytes=");
        if (r) from = atol(r + 14);
        FILE *log = fopen(logpath, "a");
        fprintf(log, "%s from=%ld\n", path, from);
        fclose(log);
        char hdr[512];
        if (strcmp(path, "/missing") == 0 || (strcmp(path, "/flaky.bin") == 0 && !flaked++)) {
            int nf = strcmp(path, "/missing") == 0;
            snprintf(hdr, sizeof hdr, "HTTP/1.0 %s\r\nContent-Length: 9\r\nConnection: close\r\n\r\nno thanks",
                     nf ? "404 Not Found" : "503 Service Unavailable");
            send_all(fd, hdr, strlen(hdr));
        } else {
            const unsigned char *data = body;
            long len = BODY_LEN;
            for (int i = 0; i < 2; i++)
                if (arch && strcmp(path, ARCH_PATHS[i]) == 0) data = arch, len = (long)arch_len;
            int drop = strcmp(path, "/drop.bin") == 0 && !dropped;
            if (from > 0 && from >= len)
                snprintf(hdr, sizeof hdr,
                         "HTTP/1.0 416 Range Not Satisfiable\r\nContent-Range: bytes */%ld\r\nContent-Length: 0\r\n\r\n", len);
            else if (from > 0)
                snprintf(hdr, sizeof hdr,
                         "HTTP/1.0 206 Partial Content\r\nContent-Length: %ld\r\nContent-Range: bytes %ld-%ld/%ld\r\n\r\n",
                         len - from, from, len - 1, len);
            else snprintf(hdr, sizeof hdr, "HTTP/1.0 200 OK\r\nContent-Length: %ld\r\nAccept-Ranges: bytes\r\n\r\n", len);
            send_all(fd, hdr, strlen(hdr));
            if (from > 0 && from >= len) {
                /* headers only */
            } else if (drop) {
                dropped = 1;
                send_all(fd, data, (size_t)len / 2);
            } else {
                send_all(fd, data + from, (size_t)(len - from));
            }
        }
        shutdown(fd, SHUT_RDWR);
        close(fd);
    }
}

static void start_server(void) {
    make_body();
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(ls, 16), 0);
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    server_port = ntohs(a.sin_port);
    const char *logpath = tu_path("server.log");
    unlink(logpath);
    server_pid = fork();
    if (server_pid == 0) {
        serve(ls, logpath);
        _exit(0);
    }
    close(ls);
}

static void stop_server(void) {
    if (server_pid > 0) {
        kill(server_pid, SIGKILL);
        waitpid(server_pid, NULL, 0);
    }
    server_pid = 0;
}

static const char *server_log(void) {
    static char buf[8192];
    FILE *f = fopen(tu_path("server.log"), "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = 0;
    if (f) fclose(f);
    return buf;
}

static const char *url(const char *path) {
    static char u[256];
    snprintf(u, sizeof u, "http://127.0.0.1:%d%s", server_port, path);
    return u;
}

static FetchOptions quick(void) {
    FetchOptions o;
    fetch_options_default(&o);
    o.progress = 0;
    o.retries = 2;
    o.backoff_ms = 10;
    o.connect_timeout_s = 5;
    o.stall_timeout_s = 5;
    return o;
}

static int same_as_body(const char *path) {
    size_t len;
    char *d = gma_read_file(path, &len);
    int ok = d && len == BODY_LEN && memcmp(d, body, BODY_LEN) == 0;
    free(d);
    return ok;
}

static char part_of(const char *p, char *buf) { return (char)snprintf(buf, 600, "%s.part", p); }

START_TEST(test_http_full_download) {
    start_server();
    FetchOptions o = quick();
    const char *dst = tu_path("full.bin");
    ck_assert_msg(fetch_url(url("/data.bin"), dst, DIGEST_SHA256, body_sha, &o) == 0, "%s", gma_error());
    ck_assert(same_as_body(dst));
    char part[600];
    part_of(dst, part);
    ck_assert(!gma_path_exists(part));
    stop_server();
}
END_TEST

START_TEST(test_http_interrupted_resumes) {
    start_server();
    FetchOptions o = quick();
    const char *dst = tu_path("drop.bin");
    ck_assert_msg(fetch_url(url("/drop.bin"), dst, DIGEST_SHA256, body_sha, &o) == 0, "%s", gma_error());
    ck_assert(same_as_body(dst));
    char want[64];
    snprintf(want, sizeof want, "/drop.bin from=%d", BODY_LEN / 2);
    ck_assert_msg(strstr(server_log(), want) != NULL, "log: %s", server_log());
    /* a .part left by an earlier run is resumed from its length */
    const char *dst2 = tu_path("resume.bin");
    char part[600];
    part_of(dst2, part);
    FILE *f = fopen(part, "wb");
    fwrite(body, 1, 1000, f);
    fclose(f);
    ck_assert_int_eq(fetch_url(url("/data.bin"), dst2, DIGEST_SHA256, body_sha, &o), 0);
    ck_assert(same_as_body(dst2));
    ck_assert_ptr_nonnull(strstr(server_log(), "/data.bin from=1000"));
    /* a transient 503 is retried */
    ck_assert_int_eq(fetch_url(url("/flaky.bin"), tu_path("flaky.bin"), DIGEST_SHA256, body_sha, &o), 0);
    ck_assert(same_as_body(tu_path("flaky.bin")));
    stop_server();
}
END_TEST

START_TEST(test_http_digest_mismatch_and_404) {
    start_server();
    FetchOptions o = quick();
    const char *dst = tu_path("bad.bin");
    char part[600];
    part_of(dst, part);
    const char *wrong = "0000000000000000000000000000000000000000000000000000000000000000";
    ck_assert_int_eq(fetch_url(url("/data.bin"), dst, DIGEST_SHA256, wrong, &o), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "SHA-256 mismatch"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "bad.bin"));
    ck_assert(!gma_path_exists(dst));
    ck_assert(!gma_path_exists(part));
    ck_assert_int_eq(fetch_url(url("/missing"), tu_path("missing.bin"), DIGEST_SHA256, body_sha, &o), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "404"));
    ck_assert(!gma_path_exists(tu_path("missing.bin")));
    part_of(tu_path("missing.bin"), part);
    ck_assert_msg(!gma_path_exists(part), "an empty %s is left behind", part);
    /* 404 is final: one request only */
    const char *log = server_log();
    ck_assert_ptr_eq(strstr(strstr(log, "/missing") + 1, "/missing"), NULL);
    stop_server();
}
END_TEST

/* a .part of n bytes (the body's first bytes, then filler) */
static void write_part(const char *dst, size_t n, int filler) {
    char part[600];
    part_of(dst, part);
    FILE *f = fopen(part, "wb");
    for (size_t i = 0; i < n; i++) fputc(filler < 0 && i < BODY_LEN ? body[i] : filler & 0xff, f);
    fclose(f);
}

/* A server answers 416 to a resume from the .part's end: complete only when its Content-Range
 * total is the .part's size; a longer (stale) .part is replaced by a fresh download. */
START_TEST(test_http_416_stale_part) {
    start_server();
    FetchOptions o = quick();
    o.retries = 0;
    const char *dst = tu_path("stale.bin");
    char part[600];
    part_of(dst, part);
    write_part(dst, BODY_LEN + 100, 'x'); /* no digest published: the size alone decides */
    ck_assert_msg(fetch_url(url("/stale.bin"), dst, DIGEST_SHA256, NULL, &o) == 0, "%s", gma_error());
    ck_assert_msg(same_as_body(dst), "the stale .part was taken for the file");
    char want[64];
    snprintf(want, sizeof want, "/stale.bin from=%d\n/stale.bin from=0", BODY_LEN + 100);
    ck_assert_msg(strstr(server_log(), want), "log: %s", server_log());
    ck_assert(!gma_path_exists(part));
    /* a .part of the file's size is complete: kept, one request */
    const char *dst2 = tu_path("whole.bin");
    write_part(dst2, BODY_LEN, -1);
    ck_assert_msg(fetch_url(url("/whole.bin"), dst2, DIGEST_SHA256, NULL, &o) == 0, "%s", gma_error());
    ck_assert(same_as_body(dst2));
    ck_assert_ptr_null(strstr(server_log(), "/whole.bin from=0"));
    /* of the file's size but other bytes, with a published digest: refused, removed */
    const char *dst3 = tu_path("wrong.bin");
    write_part(dst3, BODY_LEN, 'y');
    ck_assert_int_eq(fetch_url(url("/wrong.bin"), dst3, DIGEST_SHA256, body_sha, &o), -1);
    ck_assert_msg(strstr(gma_error(), "SHA-256 mismatch") && strstr(gma_error(), "wrong.bin"), "%s", gma_error());
    ck_assert(!gma_path_exists(dst3));
    part_of(dst3, part);
    ck_assert(!gma_path_exists(part));
    stop_server();
}
END_TEST

START_TEST(test_file_urls) {
    make_body();
    const char *src = tu_path("src.bin");
    FILE *f = fopen(src, "wb");
    fwrite(body, 1, BODY_LEN, f);
    fclose(f);
    char u[700];
    snprintf(u, sizeof u, "file://%s", src);
    FetchOptions o = quick();
    ck_assert_msg(fetch_url(u, tu_path("copy.bin"), DIGEST_SHA256, body_sha, &o) == 0, "%s", gma_error());
    ck_assert(same_as_body(tu_path("copy.bin")));
    /* resume from a .part */
    char part[600];
    part_of(tu_path("copy2.bin"), part);
    f = fopen(part, "wb");
    fwrite(body, 1, 12345, f);
    fclose(f);
    ck_assert_int_eq(fetch_url(u, tu_path("copy2.bin"), DIGEST_SHA256, body_sha, &o), 0);
    ck_assert(same_as_body(tu_path("copy2.bin")));
    /* MD5 mismatch */
    ck_assert_int_eq(fetch_url(u, tu_path("copy3.bin"), DIGEST_MD5, "00000000000000000000000000000000", &o), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "MD5 mismatch"));
    ck_assert(!gma_path_exists(tu_path("copy3.bin")));
    /* missing file */
    snprintf(u, sizeof u, "file://%s/none", tu_tmpdir());
    ck_assert_int_eq(fetch_url(u, tu_path("none.bin"), DIGEST_MD5, NULL, &o), -1);
    ck_assert(!gma_path_exists(tu_path("none.bin")));
    part_of(tu_path("none.bin"), part);
    ck_assert_msg(!gma_path_exists(part), "an empty %s is left behind", part);
}
END_TEST

START_TEST(test_unreachable_and_unknown) {
    FetchOptions o = quick();
    o.retries = 1;
    /* a port nobody listens on */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(s, (struct sockaddr *)&a, sizeof a);
    socklen_t al = sizeof a;
    getsockname(s, (struct sockaddr *)&a, &al);
    close(s);
    char u[128];
    snprintf(u, sizeof u, "http://127.0.0.1:%d/x.bin", ntohs(a.sin_port));
    ck_assert_int_eq(fetch_url(u, tu_path("x.bin"), DIGEST_MD5, NULL, &o), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), u));
    ck_assert(!gma_path_exists(tu_path("x.bin.part")));
    ck_assert_ptr_nonnull(strstr(gma_error(), "giving up after 2 attempts"));
    ck_assert_int_eq(fetch_dataset("wikitext-999", tu_tmpdir(), NULL, &o), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "unknown dataset 'wikitext-999'"));
    ck_assert_ptr_nonnull(fetch_find("wikitext-103"));
    ck_assert_ptr_nonnull(strstr(fetch_find("wikitext-103")->files[0].url, "wikitext.smerity.com"));
}
END_TEST

START_TEST(test_cli_fetch_errors) {
    char cmd[1024], out[2048];
    ck_assert_int_ne(tu_run("bin/gmadata fetch no-such-set --quiet", out, sizeof out), 0);
    ck_assert_msg(strncmp(out, "gmadata: unknown dataset", 24) == 0 && strchr(out, '\n') == out + strlen(out) - 1, "%s", out);
    /* gpt2 from a mirror directory whose files do not match the published digests */
    const char *mirror = tu_path("mirror");
    gma_mkdirs(mirror);
    char p[600];
    snprintf(p, sizeof p, "%s/encoder.json", mirror);
    tu_write(p, "{}");
    snprintf(cmd, sizeof cmd, "bin/gmadata fetch gpt2 --url file://%s/ --dest %s/dl --quiet --retries 0", mirror, tu_tmpdir());
    ck_assert_int_ne(tu_run(cmd, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "SHA-256 mismatch"));
    snprintf(p, sizeof p, "%s/dl/gpt2/encoder.json", tu_tmpdir());
    ck_assert(!gma_path_exists(p));
    /* no data set named: a usage error */
    ck_assert_int_ne(tu_run("bin/gmadata fetch", out, sizeof out), 0);
}
END_TEST

/* the files of the archive: name under the archive's top directory, contents */
static const char *const ARCH_FILES[][2] = {
    {"lra_release/listops/basic_test.tsv", "Source\tTarget\n( [MAX 2 9 ] )\t9\n( [MIN 4 1 ] )\t1\n"},
    {"lra_release/README.txt", "a small stand-in for the LRA release\n"},
};

/* a .tar.gz of ARCH_FILES made by tar(1) under tmp/arch_src, loaded into arch; its SHA-256 */
static void make_archive(char sha[65]) {
    char p[700], cmd[2000];
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/arch_src/%s", tu_tmpdir(), ARCH_FILES[i][0]);
        *strrchr(p, '/') = 0;
        ck_assert_int_eq(gma_mkdirs(p), 0);
        snprintf(p, sizeof p, "%s/arch_src/%s", tu_tmpdir(), ARCH_FILES[i][0]);
        tu_write(p, ARCH_FILES[i][1]);
    }
    snprintf(cmd, sizeof cmd, "tar -czf %s/made.tar.gz -C %s/arch_src lra_release", tu_tmpdir(), tu_tmpdir());
    char out[1024];
    ck_assert_msg(tu_run(cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
    snprintf(p, sizeof p, "%s/made.tar.gz", tu_tmpdir());
    arch = (unsigned char *)gma_read_file(p, &arch_len);
    ck_assert_ptr_nonnull(arch);
    ck_assert_int_gt(arch_len, 100);
    ck_assert_int_eq(arch[0], 0x1f); /* gzip magic */
    ck_assert_int_eq(digest_file(p, DIGEST_SHA256, sha), 0);
}

static int file_is(const char *path, const char *text) {
    size_t len;
    char *d = gma_read_file(path, &len);
    int ok = d && len == strlen(text) && memcmp(d, text, len) == 0;
    free(d);
    return ok;
}

static int count_in(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

START_TEST(test_http_archive_fetched_and_extracted) {
    char sha[65], got[65], p[800], out[4096], cmd[2000];
    make_archive(sha);
    start_server();
    FetchOptions o = quick();
    /* LRA (no published digest): downloaded, kept with a warning, extracted into DEST */
    const char *dest = tu_path("lra_dl");
    ck_assert_msg(fetch_dataset("lra", dest, url("/lra_release.gz"), &o) == 0, "%s", gma_error());
    snprintf(p, sizeof p, "%s/lra_release.gz", dest);
    ck_assert_int_eq(digest_file(p, DIGEST_SHA256, got), 0);
    ck_assert_str_eq(got, sha); /* the archive arrived whole */
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", dest, ARCH_FILES[i][0]);
        ck_assert_msg(file_is(p, ARCH_FILES[i][1]), "%s: not extracted or not the archived bytes", p);
    }
    snprintf(p, sizeof p, "%s/.lra_release.gz.extracted", dest);
    ck_assert(gma_path_exists(p));
    /* a second fetch finds the archive and the extraction complete: no request */
    ck_assert_int_eq(fetch_dataset("lra", dest, url("/lra_release.gz"), &o), 0);
    ck_assert_int_eq(count_in(server_log(), "/lra_release.gz from="), 1);
    /* the same through the CLI, into another directory */
    snprintf(cmd, sizeof cmd, "bin/gmadata fetch lra --url %s --dest %s/lra_cli --quiet --retries 0", url("/lra_release.gz"),
             tu_tmpdir());
    ck_assert_msg(tu_run(cmd, out, sizeof out) == 0, "%s: %s", cmd, out);
    ck_assert_ptr_nonnull(strstr(out, "no digest was ever published for lra_release.gz"));
    snprintf(p, sizeof p, "%s/lra_cli/%s", tu_tmpdir(), ARCH_FILES[0][0]);
    ck_assert_msg(file_is(p, ARCH_FILES[0][1]), "%s", p);
    /* IMDB: the archive does not match the published MD5: refused, nothing extracted */
    snprintf(cmd, sizeof cmd, "bin/gmadata fetch imdb --url %s --dest %s/imdb_dl --quiet --retries 0",
             url("/aclImdb_v1.tar.gz"), tu_tmpdir());
    ck_assert_int_ne(tu_run(cmd, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "MD5 mismatch") && strstr(out, "aclImdb_v1.tar.gz"), "%s", out);
    ck_assert_int_eq(count_in(out, "\n"), 1);
    snprintf(p, sizeof p, "%s/imdb_dl/aclImdb_v1.tar.gz", tu_tmpdir());
    ck_assert(!gma_path_exists(p));
    snprintf(p, sizeof p, "%s/imdb_dl/lra_release", tu_tmpdir());
    ck_assert(!gma_path_exists(p));
    ck_assert_int_eq(count_in(server_log(), "/aclImdb_v1.tar.gz from=0"), 1);
    stop_server();
    free(arch);
    arch = NULL;
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("data_fetch");
    TCase *tc = tcase_create("fetch");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_http_full_download);
    tcase_add_test(tc, test_http_interrupted_resumes);
    tcase_add_test(tc, test_http_digest_mismatch_and_404);
    tcase_add_test(tc, test_file_urls);
    tcase_add_test(tc, test_http_416_stale_part);
    tcase_add_test(tc, test_unreachable_and_unknown);
    tcase_add_test(tc, test_cli_fetch_errors);
    tcase_add_test(tc, test_http_archive_fetched_and_extracted);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
