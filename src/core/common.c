/* common.c: error messages, checked allocation, clock and small file helpers. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Thread_local char g_err[1024];

/* src into g_err on one line: a newline or CR (from a value echoed) as \n or \r, other
 * control bytes but tab as \xNN */
static void set_one_line(const char *src) {
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p && o + 5 < sizeof g_err; p++) {
        if (*p == '\n' || *p == '\r') o += (size_t)snprintf(g_err + o, 3, "\\%c", *p == '\n' ? 'n' : 'r');
        else if (*p < 0x20 && *p != '\t') o += (size_t)snprintf(g_err + o, 5, "\\x%02X", *p);
        else g_err[o++] = (char)*p;
    }
    g_err[o] = 0;
}

int gma_errorf(const char *fmt, ...) {
    char msg[sizeof g_err];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    set_one_line(msg);
    return -1;
}

int gma_error_prefix(const char *fmt, ...) {
    char pre[512], old[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    snprintf(old, sizeof old, "%s", g_err);
    char msg[sizeof pre + sizeof old + 2];
    snprintf(msg, sizeof msg, "%s: %s", pre, old);
    set_one_line(msg);
    return -1;
}

/* the length of the valid UTF-8 sequence at p (n > 0 bytes), or 0 */
static size_t utf8_len(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    size_t len;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, v = c & 0x07, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        v = v << 6 | (p[i] & 0x3F);
    }
    return v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) ? 0 : len;
}

long gma_utf8_invalid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_len(p + i, n - i);
        if (!k) return (long)i;
        i += k;
    }
    return -1;
}

const char *gma_quote(const char *s) {
    static _Thread_local char bufs[4][1024];
    static _Thread_local int next;
    char *o = bufs[next++ & 3];
    size_t q = 0, n = strlen(s), i = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (i < n && q < 200) {
        size_t k = utf8_len(p + i, n - i);
        if (p[i] == '\n' || p[i] == '\t' || p[i] == '\r')
            q += (size_t)snprintf(o + q, 8, "\\%c", p[i] == '\n' ? 'n' : p[i] == '\t' ? 't' : 'r'), i++;
        else if (!k || p[i] < 0x20 || p[i] == 0x7f)
            q += (size_t)snprintf(o + q, 8, "\\x%02X", p[i]), i++;
        else
            memcpy(o + q, p + i, k), q += k, i += k;
    }
    if (i < n) memcpy(o + q, "...", 4);
    else o[q] = 0;
    return o;
}

const char *gma_error(void) { return g_err; }
void gma_error_clear(void) { g_err[0] = 0; }

static void oom(size_t n, const char *file, int line) {
    fprintf(stderr, "gma: out of memory allocating %zu bytes at %s:%d\n", n, file, line);
    abort();
}

void *gma_xmalloc_at(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) oom(n, file, line);
    return p;
}

void *gma_xcalloc_at(size_t n, size_t sz, const char *file, int line) {
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) oom(n * sz, file, line);
    return p;
}

void *gma_xrealloc_at(void *q, size_t n, const char *file, int line) {
    void *p = realloc(q, n ? n : 1);
    if (!p) oom(n, file, line);
    return p;
}

char *gma_xstrdup_at(const char *s, const char *file, int line) {
    size_t n = strlen(s) + 1;
    char *p = gma_xmalloc_at(n, file, line);
    memcpy(p, s, n);
    return p;
}

int gma_parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end || errno || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

int gma_parse_u64(const char *s, unsigned long long *out) {
    char *end;
    errno = 0;
    if (s[0] == '-') return -1;
    unsigned long long x = strtoull(s, &end, 10);
    if (end == s || *end || errno) return -1;
    *out = x;
    return 0;
}

int gma_parse_double(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(x) || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

/* Blocks of 64 bytes feed 8 independent lanes (the multiplies overlap instead of forming
 * one serial chain: several times the speed), folded into h in order; then the remaining
 * words and bytes. Each step is a bijection of a lane's state given the input, so a change
 * in any one word always changes the result. */
uint64_t gma_hash(const void *p, size_t n, uint64_t h) {
    const uint64_t K = 0x100000001b3ULL;
    const unsigned char *b = p;
    size_t i = 0;
    if (n >= 64) {
        /* 4 lanes of two words each, spelled out: written as an array loop, compilers
         * vectorise it with emulated 64-bit multiplies, slower than the scalar ones */
        uint64_t a = h ^ 0x9e3779b97f4a7c15ULL, c = h ^ 0x3c6ef372fe94f82aULL, e = h ^ 0xdaa66d2c7ddf743fULL,
                 g = h ^ 0x78dde6e5fd29f054ULL, a2 = ~a, c2 = ~c, e2 = ~e, g2 = ~g;
        for (; i + 64 <= n; i += 64) {
            uint64_t x[8];
            memcpy(x, b + i, 64);
#define GMA_LANE(v, w) (v = (v ^ (w)) * K, v ^= v >> 29)
            GMA_LANE(a, x[0]), GMA_LANE(c, x[1]), GMA_LANE(e, x[2]), GMA_LANE(g, x[3]);
            GMA_LANE(a2, x[4]), GMA_LANE(c2, x[5]), GMA_LANE(e2, x[6]), GMA_LANE(g2, x[7]);
        }
        GMA_LANE(h, a), GMA_LANE(h, c), GMA_LANE(h, e), GMA_LANE(h, g);
        GMA_LANE(h, a2), GMA_LANE(h, c2), GMA_LANE(h, e2), GMA_LANE(h, g2);
#undef GMA_LANE
    }
    for (; i + 8 <= n; i += 8) { /* a word at a time (FNV-style multiply, then a shift mix) */
        uint64_t x;
        memcpy(&x, b + i, 8);
        h = (h ^ x) * K;
        h ^= h >> 29;
    }
    for (; i < n; i++) h = (h ^ b[i]) * K;
    return h;
}

double gma_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

char *gma_read_file(const char *path, size_t *len_out) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        gma_errorf("%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len + 1 >= cap) buf = xrealloc(buf, cap *= 2);
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        gma_errorf("%s: read error", path);
        return NULL;
    }
    buf[len] = 0;
    if (len_out) *len_out = len;
    return buf;
}

static void fsync_dir_of(const char *path) {
    char *tmp = xstrdup(path);
    int fd = open(dirname(tmp), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(tmp);
}

/* all of len bytes to fd; 0, or errno */
static int write_all(int fd, const char *p, size_t left) {
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        p += w;
        left -= (size_t)w;
    }
    return 0;
}

/* The descriptor path names: N for /proc/self/fd/N, /dev/fd/N, /dev/stdout (1), /dev/stderr
 * (2), as path or as a symbolic link on the way to its file; -1 otherwise */
static int descriptor_of(const char *path) {
    char cur[4096], link[4096];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hop = 0; hop < 16; hop++) {
        struct stat lst;
        int fd;
        char end;
        if (sscanf(cur, "/proc/self/fd/%d%c", &fd, &end) == 1 || sscanf(cur, "/dev/fd/%d%c", &fd, &end) == 1) return fd;
        if (!strcmp(cur, "/dev/stdout")) return 1;
        if (!strcmp(cur, "/dev/stderr")) return 2;
        if (lstat(cur, &lst) != 0 || !S_ISLNK(lst.st_mode)) return -1;
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0) return -1;
        link[n] = 0;
        if (link[0] == '/') {
            snprintf(cur, sizeof cur, "%s", link);
        } else { /* relative to the link's own directory */
            char *dir = xstrdup(cur);
            snprintf(cur, sizeof cur, "%s/%s", dirname(dir), link);
            free(dir);
        }
    }
    return -1;
}

/* Where an atomic write of path lands: a descriptor of this process (>= 0: /dev/stdout, also
 * when the shell sends it to a file, written through that descriptor at its offset); -2 for
 * a path that is there and not a regular file (a pipe, a terminal, /dev/null: opened and
 * written straight); else -1 with the file to replace in dest:
 * path, or the regular file a symbolic link at path names (replaced in its own directory, so
 * the link is kept). Nothing is ever renamed over a link, a device or a descriptor. */
static int write_target(const char *path, char *dest, size_t cap) {
    struct stat st, lst;
    snprintf(dest, cap, "%s", path);
    int fd = descriptor_of(path);
    if (fd != -1) return fd;
    if (stat(path, &st) != 0) return -1;
    if (!S_ISREG(st.st_mode)) return -2;
    char *real = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) ? realpath(path, NULL) : NULL;
    if (real) snprintf(dest, cap, "%s", real);
    free(real);
    return -1;
}

int gma_write_file_atomic(const char *path, const void *data, size_t len) {
    char tmp[4096 + 32], dest[4096];
    int target = write_target(path, dest, sizeof dest);
    if (target != -1) { /* written straight: a descriptor after what stdio holds for it */
        int fd = target >= 0 ? target : open(path, O_WRONLY | O_APPEND);
        if (fd < 0) return gma_errorf("%s: cannot open for writing: %s", path, strerror(errno));
        if (target >= 0) fflush(stdout), fflush(stderr);
        int e = write_all(fd, data, len);
        if (target < 0 && close(fd) != 0 && !e) e = errno;
        return e ? gma_errorf("%s: write failed: %s", path, strerror(e)) : 0;
    }
    path = dest;
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return gma_errorf("%s: cannot create: %s", tmp, strerror(errno));
    int we = write_all(fd, data, len);
    if (we) {
        close(fd);
        unlink(tmp);
        return gma_errorf("%s: write failed: %s", tmp, strerror(we));
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return gma_errorf("%s: fsync/close failed: %s", tmp, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return gma_errorf("%s: rename failed: %s", path, strerror(e));
    }
    fsync_dir_of(path);
    return 0;
}

int gma_mkdirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return gma_errorf("%s: cannot create directory: %s", buf, strerror(errno));
            *p = '/';
        }
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return gma_errorf("%s: cannot create directory: %s", buf, strerror(errno));
    return 0;
}

int gma_path_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* OpenMP threads that spin for long after a parallel region steal the core from the other
 * thread when the machine is shared (a 2-core laptop, CI running builds): steps then take
 * 10-50x longer. libgomp reads its settings when the program loads, so when the user has
 * set neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT we set a short spin and re-execute. */
void gma_openmp_env(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || getenv("GMA_NO_REEXEC")) return;
    setenv("GOMP_SPINCOUNT", "1000", 1);
    setenv("GMA_NO_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    /* exec failed: carry on with the defaults */
}

int gma_copy_file(const char *from, const char *to) {
    size_t n;
    char *b = gma_read_file(from, &n);
    if (!b) return -1;
    int rc = gma_write_file_atomic(to, b, n);
    free(b);
    return rc;
}
