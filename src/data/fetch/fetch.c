/* fetch.c: downloads with libcurl and the registry of data sets gmadata knows.
 *
 * A download goes to FILE.part: an existing .part is resumed with an HTTP range (or a
 * file:// offset); a server that ignores the range restarts the file. A server that answers
 * 416 (range not satisfiable) has the .part complete only when its Content-Range total
 * ("bytes * /TOTAL") is the .part's size; otherwise the .part is stale (longer than the
 * file, or of another version) and the download starts again from byte 0. Transient errors
 * (connection refused or dropped, timeouts, 5xx, 429) are retried with exponential
 * back-off; 4xx answers are final. After the transfer the file's digest is checked
 * against the one published for it; only a matching file is renamed to its final name.
 * A failed download keeps a .part that holds bytes (for a later resume) and removes an
 * empty one.
 */
#include "data/fetch/fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/common.h"
#include "data/fetch/archive.h"

static const FetchDataset REGISTRY[] = {
    {"wikitext-103", "", 1, 1,
     {{"wikitext-103-v1.zip", "https://wikitext.smerity.com/wikitext-103-v1.zip",
       "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-v1.zip", DIGEST_MD5,
       "9ddaacaf6af0710eda8c456decff7832"}},
     "WikiText-103, word level (wiki.*.tokens)"},
    {"wikitext-103-raw", "", 1, 1,
     {{"wikitext-103-raw-v1.zip", "https://wikitext.smerity.com/wikitext-103-raw-v1.zip",
       "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-raw-v1.zip", DIGEST_MD5,
       "0ca3512bd7a238be4a63ce7b434f8935"}},
     "WikiText-103, raw characters (wiki.*.raw)"},
    {"wikitext-2", "", 1, 1,
     {{"wikitext-2-v1.zip", "https://wikitext.smerity.com/wikitext-2-v1.zip",
       "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip", DIGEST_MD5,
       "542ccefacc6c27f945fb54453812b3cd"}},
     "WikiText-2, word level (wiki.*.tokens)"},
    {"wikitext-2-raw", "", 1, 1,
     {{"wikitext-2-raw-v1.zip", "https://wikitext.smerity.com/wikitext-2-raw-v1.zip",
       "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip", DIGEST_MD5,
       "f407a2d53283fc4a49bcff21bc5f3770"}},
     "WikiText-2, raw characters (wiki.*.raw)"},
    {"gpt2", "gpt2", 0, 2,
     {{"encoder.json", "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json", NULL,
       DIGEST_SHA256, "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"},
      {"vocab.bpe", "https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe", NULL,
       DIGEST_SHA256, "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"}},
     "GPT-2 tokenizer files"},
    {"lra", "", 1, 1,
     {{"lra_release.gz", "https://storage.googleapis.com/long-range-arena/lra_release.gz", NULL, DIGEST_SHA256,
       NULL}},
     "Long Range Arena release (tar.gz, about 7.7 GB; no digest was ever published)"},
    {"imdb", "", 1, 1,
     {{"aclImdb_v1.tar.gz", "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz", NULL, DIGEST_MD5,
       "7c2ac02c03563afcf9b574c7e56c153a"}},
     "IMDB movie reviews (Maas et al. 2011)"},
};

const FetchDataset *fetch_registry(int *n) {
    *n = (int)(sizeof REGISTRY / sizeof REGISTRY[0]);
    return REGISTRY;
}

const FetchDataset *fetch_find(const char *name) {
    int n;
    const FetchDataset *r = fetch_registry(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(r[i].name, name) == 0) return &r[i];
    /* accepted aliases */
    if (strcmp(name, "wikitext103") == 0) return fetch_find("wikitext-103");
    if (strcmp(name, "wikitext2") == 0) return fetch_find("wikitext-2");
    return NULL;
}

void fetch_options_default(FetchOptions *o) {
    memset(o, 0, sizeof *o);
    o->progress = isatty(2);
    o->retries = 4;
    o->backoff_ms = 1000;
    o->connect_timeout_s = 30;
    o->stall_timeout_s = 60;
}

typedef struct Transfer {
    FILE *f;
    const char *part;
    CURL *curl;
    curl_off_t resume_from;
    int checked_code;
    int write_errno;
    int show;
    const char *label;
    double t0, last;
    long long range_total; /* TOTAL of a "Content-Range: bytes * /TOTAL" header, -1 when none */
} Transfer;

/* headers: the total of a Content-Range (a 416 answer's "bytes * /TOTAL", or a 206's "bytes A-B/TOTAL") */
static size_t on_header(char *data, size_t sz, size_t nm, void *ctx) {
    Transfer *t = ctx;
    size_t n = sz * nm;
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)GMA_MIN(n, sizeof line - 1), data);
    if (!strncasecmp(line, "HTTP/", 5)) t->range_total = -1; /* a new answer (after a redirect) */
    if (!strncasecmp(line, "Content-Range:", 14)) {
        const char *slash = strchr(line, '/');
        char *end;
        long long v = slash ? strtoll(slash + 1, &end, 10) : -1;
        if (slash && end != slash + 1 && v >= 0) t->range_total = v;
    }
    return n;
}

static size_t on_write(char *data, size_t sz, size_t nm, void *ctx) {
    Transfer *t = ctx;
    size_t n = sz * nm;
    if (!t->checked_code) {
        t->checked_code = 1;
        long code = 0;
        curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
        if (t->resume_from > 0 && code == 200) { /* the server ignored the range: start over */
            if (ftruncate(fileno(t->f), 0) != 0 || fseeko(t->f, 0, SEEK_SET) != 0) {
                t->write_errno = errno;
                return 0;
            }
            t->resume_from = 0;
        }
    }
    if (fwrite(data, 1, n, t->f) != n) {
        t->write_errno = errno ? errno : EIO;
        return 0;
    }
    return n;
}

static void human(double b, char *out, size_t cap) {
    const char *u[] = {"B", "kB", "MB", "GB", "TB"};
    int i = 0;
    while (b >= 1000 && i < 4) b /= 1000, i++;
    snprintf(out, cap, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ut, curl_off_t un) {
    Transfer *t = ctx;
    if (!t->show) return 0;
    double now = gma_now();
    if (now - t->last < 0.25 && !(dltotal > 0 && dlnow == dltotal)) return 0;
    t->last = now;
    double have = (double)(t->resume_from + dlnow), total = dltotal > 0 ? (double)(t->resume_from + dltotal) : 0;
    double rate = dlnow / GMA_MAX(now - t->t0, 1e-3);
    char a[32], b[32], r[32], eta[32] = "--:--";
    human(have, a, sizeof a);
    human(total, b, sizeof b);
    human(rate, r, sizeof r);
    if (total > 0 && rate > 0) {
        long s = (long)((total - have) / rate);
        snprintf(eta, sizeof eta, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    }
    int bar = total > 0 ? (int)(30 * have / total) : 0;
    char bars[32];
    for (int i = 0; i < 30; i++) bars[i] = i < bar ? '#' : '.';
    bars[30] = 0;
    fprintf(stderr, "\r%-22.22s [%s] %s / %s  %s/s  ETA %s   ", t->label, bars, a, total > 0 ? b : "?", r, eta);
    return 0;
}

static uint64_t file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* A 416 answer to a resume from byte resume_from: the .part is complete when the server's
 * total is its size (the digest, where published, decides next); otherwise it is stale:
 * removed, and 2 (start again). */
static int range_not_satisfiable(const Transfer *t, const char *url, const FetchOptions *o) {
    long long have = (long long)t->resume_from;
    if (t->range_total == have) return 0;
    unlink(t->part);
    char total[64] = "no size";
    if (t->range_total >= 0) snprintf(total, sizeof total, "%lld bytes", t->range_total);
    gma_errorf("%s: %lld bytes, but %s answers 416 with %s for the file: a stale partial download", t->part, have, url,
               total);
    if (o->progress) fprintf(stderr, "gmadata: %s; starting again\n", gma_error());
    return 2;
}

/* One attempt. Returns 0 done, 1 transient failure (retry), 2 the .part was stale and is
 * removed (start again at once), -1 permanent failure. */
static int attempt(const char *url, const char *part, const FetchOptions *o, const char *label) {
    FILE *f = fopen(part, "ab");
    if (!f) return gma_errorf("%s: cannot create: %s", part, strerror(errno));
    Transfer t = {f, part, NULL, (curl_off_t)file_size(part), 0, 0, o->progress, label, gma_now(), 0, -1};
    CURL *c = curl_easy_init();
    t.curl = c;
    char err[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &t);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o->connect_timeout_s);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o->stall_timeout_s);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "gmadata/" GMA_VERSION);
    if (t.resume_from > 0) curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, t.resume_from);
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    int close_err = fclose(f) != 0 ? errno : 0;
    if (t.show) fprintf(stderr, "\n");
    if (rc == CURLE_OK && close_err)
        return gma_errorf("%s: write failed: %s", part, strerror(close_err));
    if (rc == CURLE_OK) return 0;
    if (rc == CURLE_WRITE_ERROR && t.write_errno)
        return gma_errorf("%s: write failed at byte %llu: %s", part, (unsigned long long)file_size(part),
                          strerror(t.write_errno));
    if (rc == CURLE_HTTP_RETURNED_ERROR) {
        if (code == 416 && t.resume_from > 0) return range_not_satisfiable(&t, url, o);
        gma_errorf("%s: HTTP %ld", url, code);
        return code >= 500 || code == 429 || code == 408 ? 1 : -1;
    }
    if (rc == CURLE_BAD_DOWNLOAD_RESUME || rc == CURLE_RANGE_ERROR) {
        /* cannot resume (e.g. .part longer than the file): start again */
        unlink(part);
        gma_errorf("%s: cannot resume (%s)", url, err[0] ? err : curl_easy_strerror(rc));
        return 1;
    }
    gma_errorf("%s: %s", url, err[0] ? err : curl_easy_strerror(rc));
    switch (rc) {
    case CURLE_COULDNT_CONNECT: case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_OPERATION_TIMEDOUT: case CURLE_PARTIAL_FILE: case CURLE_RECV_ERROR: case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING: case CURLE_SSL_CONNECT_ERROR: case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
        return 1;
    default: return -1;
    }
}

static const char *kind_name(DigestKind k) { return k == DIGEST_SHA256 ? "SHA-256" : "MD5"; }

int fetch_url(const char *url, const char *path, DigestKind kind, const char *digest, const FetchOptions *opt) {
    FetchOptions def;
    if (!opt) fetch_options_default(&def), opt = &def;
    static int curl_ready = 0;
    if (!curl_ready) curl_global_init(CURL_GLOBAL_DEFAULT), curl_ready = 1;
    char part[2048];
    snprintf(part, sizeof part, "%s.part", path);
    const char *label = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    long wait = opt->backoff_ms;
    int rc = 1;
    for (int a = 0; a <= opt->retries && rc == 1; a++) {
        if (a > 0) {
            if (opt->progress) fprintf(stderr, "gmadata: %s; retrying in %.1f s\n", gma_error(), wait / 1000.0);
            struct timespec ts = {wait / 1000, (wait % 1000) * 1000000L};
            nanosleep(&ts, NULL);
            wait *= 2;
        }
        rc = attempt(url, part, opt, label);
        if (rc == 2) rc = attempt(url, part, opt, label); /* the stale .part removed: from byte 0 */
    }
    if (rc != 0) {
        if (rc == 1) gma_error_prefix("giving up after %d attempts", opt->retries + 1);
        /* a .part with bytes stays for a later resume; an empty one is removed */
        struct stat st;
        if (stat(part, &st) == 0 && st.st_size == 0) unlink(part);
        return -1;
    }
    if (digest) {
        char hex[65];
        if (digest_file(part, kind, hex) != 0) return -1;
        if (strcmp(hex, digest) != 0) {
            unlink(part);
            return gma_errorf("%s: %s mismatch: got %s, published %s (file removed; from %s)", path, kind_name(kind),
                              hex, digest, url);
        }
    } else {
        fprintf(stderr, "gmadata: warning: no digest was ever published for %s; not verified\n", label);
    }
    if (rename(part, path) != 0) return gma_errorf("%s: rename failed: %s", path, strerror(errno));
    return 0;
}

int fetch_dataset(const char *name, const char *dest, const char *url_override, const FetchOptions *o) {
    const FetchDataset *d = fetch_find(name);
    if (!d) {
        int n;
        const FetchDataset *r = fetch_registry(&n);
        char list[512] = "";
        for (int i = 0; i < n; i++) {
            strcat(list, i ? ", " : "");
            strcat(list, r[i].name);
        }
        return gma_errorf("unknown dataset '%s' (known: %s)", name, list);
    }
    char dir[2048];
    snprintf(dir, sizeof dir, "%s%s%s", dest, d->subdir[0] ? "/" : "", d->subdir);
    if (gma_mkdirs(dir) != 0) return -1;
    for (int i = 0; i < d->n_files; i++) {
        const FetchFile *f = &d->files[i];
        char path[2200], url[2200];
        snprintf(path, sizeof path, "%s/%s", dir, f->file);
        if (url_override) {
            char base[2100];
            int bare = url_override[0] == '/' || strncmp(url_override, "./", 2) == 0; /* a local path */
            snprintf(base, sizeof base, "%s%s", bare ? "file://" : "", url_override);
            size_t ul = strlen(base);
            if (ul && base[ul - 1] == '/') snprintf(url, sizeof url, "%s%s", base, f->file);
            else if (d->n_files > 1) snprintf(url, sizeof url, "%s/%s", base, f->file);
            else snprintf(url, sizeof url, "%s", base);
        } else {
            snprintf(url, sizeof url, "%s", f->url);
        }
        int have = 0;
        if (gma_path_exists(path)) {
            char hex[65];
            if (!f->digest) have = 1;
            else if (digest_file(path, f->kind, hex) == 0 && strcmp(hex, f->digest) == 0) have = 1;
            if (have && o->progress) fprintf(stderr, "gmadata: %s already present and verified\n", path);
        }
        if (!have && fetch_url(url, path, f->kind, f->digest, o) != 0) return -1;
        if (d->extract) {
            /* a marker records a complete extraction of this verified archive */
            char mark[2300];
            snprintf(mark, sizeof mark, "%s/.%s.extracted", dir, f->file);
            if (have && gma_path_exists(mark)) continue;
            if (o->progress) fprintf(stderr, "gmadata: extracting %s into %s\n", path, dir);
            int swept = 0;
            if (archive_extract_swept(path, dir, &swept) != 0) return -1;
            if (swept && o->progress)
                fprintf(stderr, "gmadata: removed %d stale temporary file%s (NAME.tmp.PID) of an extraction that was killed\n",
                        swept, swept == 1 ? "" : "s");
            if (gma_write_file_atomic(mark, "ok\n", 3) != 0) return -1;
        }
    }
    return 0;
}
