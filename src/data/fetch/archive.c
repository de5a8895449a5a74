/* archive.c: streaming .tar, .tar.gz/.tgz, .gz and .zip readers and a safe extractor.
 *
 * A byte source (plain file, or gzip through zlib's inflate, multi-member aware) feeds
 * the tar reader 512-byte blocks at a time; zip archives are read from their central
 * directory, then each entry's local header is found and its data streamed (stored, or
 * raw deflate through zlib) with a CRC-32 check at the end. Memory use is bounded by
 * fixed buffers whatever the archive's size.
 */
#include "data/fetch/archive.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/common.h"
#include "core/stale_tmp.h"

enum { FMT_TAR, FMT_TGZ, FMT_GZ, FMT_ZIP };
#define IN_CHUNK 65536

/* ---- byte source: plain file or gzip stream ---- */
typedef struct Source {
    FILE *f;
    int gz;
    z_stream zs;
    unsigned char *in;
    int z_end;      /* stream ended and no further member */
    uint64_t pos;   /* bytes delivered (decompressed) */
} Source;

static int src_init(Source *s, FILE *f, int gz) {
    memset(s, 0, sizeof *s);
    s->f = f;
    s->gz = gz;
    if (gz) {
        s->in = xmalloc(IN_CHUNK);
        if (inflateInit2(&s->zs, 15 + 16) != Z_OK) return -1;
    }
    return 0;
}

static void src_free(Source *s) {
    if (s->gz) inflateEnd(&s->zs);
    free(s->in);
    s->in = NULL;
}

/* Read up to n bytes; fewer only at the end. -1 on a corrupt stream (errmsg set). */
static long src_read(Source *s, void *buf, size_t n, const char **errmsg) {
    if (!s->gz) {
        size_t k = fread(buf, 1, n, s->f);
        if (k < n && ferror(s->f)) {
            *errmsg = strerror(errno);
            return -1;
        }
        s->pos += k;
        return (long)k;
    }
    s->zs.next_out = buf;
    s->zs.avail_out = (uInt)n;
    while (s->zs.avail_out > 0 && !s->z_end) {
        if (s->zs.avail_in == 0) {
            size_t k = fread(s->in, 1, IN_CHUNK, s->f);
            if (k == 0) {
                *errmsg = ferror(s->f) ? strerror(errno) : "unexpected end of compressed data (truncated gzip)";
                return -1;
            }
            s->zs.next_in = s->in;
            s->zs.avail_in = (uInt)k;
        }
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            /* another gzip member may follow */
            int c = s->zs.avail_in ? *s->zs.next_in : fgetc(s->f);
            if (!s->zs.avail_in && c != EOF) ungetc(c, s->f);
            if (c != 0x1f) { /* the end, or bytes that start no member: ignored, as gzip(1) does */
                s->z_end = 1;
                break;
            }
            inflateReset(&s->zs);
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            *errmsg = s->zs.msg ? s->zs.msg : "corrupt deflate data";
            return -1;
        } else if (rc == Z_BUF_ERROR && s->zs.avail_in != 0) {
            *errmsg = "corrupt deflate data";
            return -1;
        }
    }
    size_t got = n - s->zs.avail_out;
    s->pos += got;
    return (long)got;
}

/* ---- the reader handed to visitors ---- */
struct ArchiveReader {
    const char *path;
    int fmt;
    Source src;
    char *name;
    uint64_t entry_offset;
    uint64_t remaining; /* uncompressed bytes left in the current entry */
    int failed;
    /* zip entry state */
    FILE *f;
    int method;
    uint64_t comp_left;
    z_stream zs;
    int zs_live;
    unsigned char *zin;
    uint32_t crc, crc_want;
};

static int entry_error(ArchiveReader *r, const char *what) {
    r->failed = 1;
    return gma_errorf("%s: corrupt archive: entry '%s' at offset %llu: %s", r->path, r->name ? r->name : "?",
                      (unsigned long long)r->entry_offset, what);
}

static long zip_read(ArchiveReader *r, unsigned char *buf, size_t n) {
    if (r->remaining == 0 && r->method == 0) goto done;
    if (r->method == 0) {
        size_t want = (size_t)GMA_MIN((uint64_t)n, r->remaining);
        size_t k = fread(buf, 1, want, r->f);
        if (k < want) return entry_error(r, "unexpected end of file inside the entry data (truncated)");
        r->remaining -= k;
        r->crc = (uint32_t)crc32(r->crc, buf, (uInt)k);
        if (r->remaining == 0 && r->crc != r->crc_want) return entry_error(r, "CRC-32 mismatch");
        return (long)k;
    }
    /* deflate */
    if (r->remaining == 0 && !r->zs_live) goto done;
    r->zs.next_out = buf;
    r->zs.avail_out = (uInt)GMA_MIN(n, (size_t)1 << 30);
    while (r->zs.avail_out == (uInt)GMA_MIN(n, (size_t)1 << 30) && r->zs_live) {
        if (r->zs.avail_in == 0) {
            if (r->comp_left == 0) return entry_error(r, "deflate stream ends early");
            size_t want = (size_t)GMA_MIN((uint64_t)IN_CHUNK, r->comp_left);
            size_t k = fread(r->zin, 1, want, r->f);
            if (k == 0) return entry_error(r, "unexpected end of file inside the entry data (truncated)");
            r->comp_left -= k;
            r->zs.next_in = r->zin;
            r->zs.avail_in = (uInt)k;
        }
        int rc = inflate(&r->zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            inflateEnd(&r->zs);
            r->zs_live = 0;
        } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            return entry_error(r, r->zs.msg ? r->zs.msg : "corrupt deflate data");
        }
    }
    size_t got = GMA_MIN(n, (size_t)1 << 30) - r->zs.avail_out;
    if (got > r->remaining) return entry_error(r, "more data than the recorded size");
    r->remaining -= got;
    r->crc = (uint32_t)crc32(r->crc, buf, (uInt)got);
    if (!r->zs_live) {
        if (r->remaining != 0) return entry_error(r, "less data than the recorded size");
        if (r->crc != r->crc_want) return entry_error(r, "CRC-32 mismatch");
    }
    if (got == 0) goto done;
    return (long)got;
done:
    return 0;
}

long archive_read(ArchiveReader *r, void *buf, size_t n) {
    if (r->failed) return -1;
    if (n == 0) return 0;
    if (r->fmt == FMT_ZIP) return zip_read(r, buf, n);
    if (r->fmt == FMT_GZ) {
        const char *msg = NULL;
        long k = src_read(&r->src, buf, n, &msg);
        if (k < 0) return entry_error(r, msg);
        return k;
    }
    if (r->remaining == 0) return 0;
    size_t want = (size_t)GMA_MIN((uint64_t)n, r->remaining);
    const char *msg = NULL;
    long k = src_read(&r->src, buf, want, &msg);
    if (k < 0) return entry_error(r, msg);
    if ((size_t)k < want) return entry_error(r, "unexpected end of archive inside the entry data (truncated)");
    r->remaining -= (uint64_t)k;
    return k;
}

/* ---- tar ---- */
static uint64_t tar_num(const unsigned char *p, size_t n, int *bad) {
    if (p[0] & 0x80) { /* base-256 */
        uint64_t v = p[0] & 0x7f;
        for (size_t i = 1; i < n; i++) v = v << 8 | p[i];
        return v;
    }
    uint64_t v = 0;
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == 0)) i++;
    for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) v = v * 8 + (uint64_t)(p[i] - '0');
    for (; i < n; i++)
        if (p[i] != ' ' && p[i] != 0) *bad = 1;
    return v;
}

static int tar_checksum_ok(const unsigned char *h) {
    int bad = 0;
    uint64_t want = tar_num(h + 148, 8, &bad);
    uint64_t sum = 0;
    for (int i = 0; i < 512; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
    return !bad && sum == want;
}

static int tar_skip(ArchiveReader *r, uint64_t n) {
    unsigned char buf[8192];
    while (n > 0) {
        size_t k = (size_t)GMA_MIN(n, (uint64_t)sizeof buf);
        const char *msg = NULL;
        long got = src_read(&r->src, buf, k, &msg);
        if (got < 0) return entry_error(r, msg);
        if ((size_t)got < k) return entry_error(r, "unexpected end of archive inside the entry data (truncated)");
        n -= k;
    }
    return 0;
}

/* Read n bytes of a metadata entry (long name, pax header) into a fresh string. */
static char *tar_read_meta(ArchiveReader *r, uint64_t n) {
    if (n > (1u << 20)) {
        entry_error(r, "metadata entry larger than 1 MiB");
        return NULL;
    }
    char *s = xmalloc((size_t)n + 1);
    const char *msg = NULL;
    long got = src_read(&r->src, s, (size_t)n, &msg);
    if (got < 0 || (uint64_t)got < n) {
        entry_error(r, got < 0 ? msg : "unexpected end of archive (truncated)");
        free(s);
        return NULL;
    }
    s[n] = 0;
    if (tar_skip(r, (512 - n % 512) % 512) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* After the end blocks of a gzipped tar: the rest of the stream (padding to the record
 * size) read through to the gzip trailer, so a stream cut short is an error. */
static int gz_drain(ArchiveReader *r) {
    if (!r->src.gz) return 0;
    unsigned char buf[8192];
    long k;
    const char *msg = NULL;
    while ((k = src_read(&r->src, buf, sizeof buf, &msg)) == (long)sizeof buf) {}
    if (k < 0)
        return gma_errorf("%s: truncated archive: the gzip stream is cut short after the end-of-archive blocks, at offset "
                          "%llu of the tar: %s", r->path, (unsigned long long)r->src.pos, msg);
    return 0;
}

static int walk_tar(ArchiveReader *r, archive_visit_fn fn, void *ctx) {
    unsigned char h[512];
    char *long_name = NULL;
    int rc = 0;
    for (;;) {
        uint64_t off = r->src.pos;
        const char *msg = NULL;
        long k = src_read(&r->src, h, 512, &msg);
        r->entry_offset = off;
        free(r->name);
        r->name = NULL;
        if (k < 0) {
            rc = gma_errorf("%s: corrupt archive at offset %llu (where the next tar header or the end-of-archive blocks "
                            "belong): %s", r->path, (unsigned long long)off, msg);
            break;
        }
        if (k == 0) { /* the end-of-archive blocks are missing: the archive was cut between two entries */
            rc = gma_errorf("%s: truncated archive: it ends at offset %llu without the end-of-archive blocks (entries "
                            "after that are missing)", r->path, (unsigned long long)off);
            break;
        }
        if (k < 512) {
            rc = gma_errorf("%s: truncated archive: it ends at offset %llu inside a header", r->path,
                            (unsigned long long)(off + (uint64_t)k));
            break;
        }
        int zero = 1;
        for (int i = 0; i < 512 && zero; i++) zero = h[i] == 0;
        if (zero) {
            rc = gz_drain(r);
            break;
        }
        if (!tar_checksum_ok(h)) {
            rc = gma_errorf("%s: corrupt archive: bad tar header checksum at offset %llu", r->path,
                            (unsigned long long)off);
            break;
        }
        int bad = 0;
        uint64_t size = tar_num(h + 124, 12, &bad);
        char type = (char)h[156];
        if (long_name) {
            r->name = long_name;
            long_name = NULL;
        } else {
            char nm[260] = {0};
            if (memcmp(h + 257, "ustar", 5) == 0 && h[345]) {
                memcpy(nm, h + 345, strnlen((char *)h + 345, 155));
                strcat(nm, "/");
            }
            strncat(nm, (char *)h, strnlen((char *)h, 100));
            r->name = xstrdup(nm);
        }
        if (bad) {
            rc = entry_error(r, "bad size field");
            break;
        }
        if (type == 'L' || type == 'x') {
            char *meta = tar_read_meta(r, size);
            if (!meta) {
                rc = -1;
                break;
            }
            if (type == 'L') {
                long_name = meta;
            } else { /* pax: records "LEN key=value\n" */
                char *p = meta, *meta_end = meta + strlen(meta);
                while (*p) {
                    char *sp = strchr(p, ' ');
                    long len = strtol(p, NULL, 10);
                    if (!sp || len <= 0 || len > (long)(meta_end - p)) break;
                    /* "LEN key=value\n": the stated length must cover the prefix, '=' and '\n' */
                    if (sp + 1 >= p + len || p[len - 1] != '\n') {
                        rc = entry_error(r, "malformed pax header record (its length does not cover its key)");
                        break;
                    }
                    if (strncmp(sp + 1, "path=", 5) == 0) {
                        free(long_name);
                        long_name = xmalloc((size_t)len);
                        size_t vl = (size_t)(p + len - 1 - (sp + 6));
                        memcpy(long_name, sp + 6, vl);
                        long_name[vl] = 0;
                    }
                    p += len;
                }
                free(meta);
                if (rc) break;
            }
            continue;
        }
        if (type == 'g' || type == 'K') {
            if (tar_skip(r, (size + 511) / 512 * 512) != 0) {
                rc = -1;
                break;
            }
            continue;
        }
        int is_dir = type == '5';
        int is_file = type == '0' || type == 0 || type == '7';
        if (!is_dir && !is_file) size = type == '1' || type == '2' ? 0 : size; /* links carry no data */
        ArchiveEntry e = {r->name, is_file ? size : 0, is_dir, off};
        r->remaining = size;
        int v = 0;
        if (is_file || is_dir) v = fn(ctx, &e, r);
        if (v < 0) {
            rc = -1;
            break;
        }
        if (r->failed) {
            rc = -1;
            break;
        }
        if (v == 1) break;
        if (tar_skip(r, r->remaining + (512 - size % 512) % 512) != 0) {
            rc = -1;
            break;
        }
        r->remaining = 0;
    }
    free(long_name);
    return rc;
}

/* ---- zip ---- */
static uint32_t le16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const unsigned char *p) { return le16(p) | le16(p + 2) << 16; }
static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static int walk_zip(ArchiveReader *r, archive_visit_fn fn, void *ctx) {
    FILE *f = r->f;
    if (fseeko(f, 0, SEEK_END) != 0) return gma_errorf("%s: cannot seek: %s", r->path, strerror(errno));
    uint64_t fsize = (uint64_t)ftello(f);
    size_t tail = (size_t)GMA_MIN(fsize, (uint64_t)(65535 + 22));
    unsigned char *t = xmalloc(tail + 1);
    fseeko(f, (off_t)(fsize - tail), SEEK_SET);
    if (fread(t, 1, tail, f) != tail) {
        free(t);
        return gma_errorf("%s: read failed", r->path);
    }
    long eocd = -1;
    for (long i = (long)tail - 22; i >= 0; i--)
        if (le32(t + i) == 0x06054b50) {
            eocd = i;
            break;
        }
    if (eocd < 0) {
        free(t);
        return gma_errorf("%s: corrupt archive: zip end-of-central-directory record not found (truncated?) near offset %llu",
                          r->path, (unsigned long long)fsize);
    }
    uint64_t n_entries = le16(t + eocd + 10);
    uint64_t cd_size = le32(t + eocd + 12), cd_off = le32(t + eocd + 16);
    uint64_t eocd_off = fsize - tail + (uint64_t)eocd;
    /* zip64 locator just before the EOCD */
    if (eocd >= 20 && le32(t + eocd - 20) == 0x07064b50) {
        uint64_t z64 = le64(t + eocd - 20 + 8);
        unsigned char b[56];
        if (fseeko(f, (off_t)z64, SEEK_SET) == 0 && fread(b, 1, 56, f) == 56 && le32(b) == 0x06064b50) {
            n_entries = le64(b + 32);
            cd_size = le64(b + 40);
            cd_off = le64(b + 48);
        }
    }
    free(t);
    if (cd_off + cd_size > eocd_off || cd_size > (1u << 30)) {
        return gma_errorf("%s: corrupt archive: central directory at offset %llu (%llu bytes) lies outside the file",
                          r->path, (unsigned long long)cd_off, (unsigned long long)cd_size);
    }
    unsigned char *cd = xmalloc((size_t)cd_size + 1);
    fseeko(f, (off_t)cd_off, SEEK_SET);
    if (fread(cd, 1, (size_t)cd_size, f) != cd_size) {
        free(cd);
        return gma_errorf("%s: corrupt archive: cannot read the central directory at offset %llu", r->path,
                          (unsigned long long)cd_off);
    }
    int rc = 0;
    size_t p = 0;
    r->zin = xmalloc(IN_CHUNK);
    for (uint64_t i = 0; i < n_entries; i++) {
        free(r->name);
        r->name = NULL;
        r->failed = 0;
        if (p + 46 > cd_size || le32(cd + p) != 0x02014b50) {
            rc = gma_errorf("%s: corrupt archive: bad central directory record %llu at offset %llu", r->path,
                            (unsigned long long)i, (unsigned long long)(cd_off + p));
            break;
        }
        const unsigned char *c = cd + p;
        uint32_t flags = le16(c + 8), method = le16(c + 10), crc = le32(c + 16);
        uint64_t csize = le32(c + 20), usize = le32(c + 24);
        uint32_t nlen = le16(c + 28), xlen = le16(c + 30), clen = le16(c + 32);
        uint64_t loff = le32(c + 42);
        if (p + 46 + nlen + xlen + clen > cd_size) {
            rc = gma_errorf("%s: corrupt archive: central directory record %llu at offset %llu overruns the directory",
                            r->path, (unsigned long long)i, (unsigned long long)(cd_off + p));
            break;
        }
        r->name = xmalloc(nlen + 1);
        memcpy(r->name, c + 46, nlen);
        r->name[nlen] = 0;
        /* zip64 extra field */
        for (const unsigned char *x = c + 46 + nlen; x + 4 <= c + 46 + nlen + xlen;) {
            uint32_t id = le16(x), sz = le16(x + 2);
            if (id == 1) {
                const unsigned char *q = x + 4;
                if (usize == 0xffffffffu) usize = le64(q), q += 8;
                if (csize == 0xffffffffu) csize = le64(q), q += 8;
                if (loff == 0xffffffffu) loff = le64(q);
            }
            x += 4 + sz;
        }
        p += 46 + nlen + xlen + clen;
        r->entry_offset = loff;
        if (flags & 1) {
            rc = entry_error(r, "encrypted entries are not supported");
            break;
        }
        if (method != 0 && method != 8) {
            char m[64];
            snprintf(m, sizeof m, "unsupported compression method %u", method);
            rc = entry_error(r, m);
            break;
        }
        unsigned char lh[30];
        if (fseeko(f, (off_t)loff, SEEK_SET) != 0 || fread(lh, 1, 30, f) != 30 || le32(lh) != 0x04034b50) {
            rc = entry_error(r, "local header missing or unreadable");
            break;
        }
        uint64_t data_off = loff + 30 + le16(lh + 26) + le16(lh + 28);
        if (data_off + csize > cd_off) {
            rc = entry_error(r, "entry data runs past the central directory");
            break;
        }
        fseeko(f, (off_t)data_off, SEEK_SET);
        size_t nl = strlen(r->name);
        int is_dir = nl > 0 && r->name[nl - 1] == '/';
        r->method = (int)method;
        r->remaining = usize;
        r->comp_left = csize;
        r->crc = 0;
        r->crc_want = crc;
        if (method == 8) {
            memset(&r->zs, 0, sizeof r->zs);
            inflateInit2(&r->zs, -15);
            r->zs_live = 1;
        } else if (csize != usize) {
            rc = entry_error(r, "stored entry with different compressed and uncompressed sizes");
            break;
        }
        ArchiveEntry e = {r->name, usize, is_dir, loff};
        int v = fn(ctx, &e, r);
        if (r->zs_live) inflateEnd(&r->zs);
        r->zs_live = 0;
        if (v < 0 || r->failed) {
            rc = -1;
            break;
        }
        if (v == 1) break;
    }
    free(cd);
    free(r->zin);
    r->zin = NULL;
    return rc;
}

int archive_walk(const char *path, archive_visit_fn fn, void *ctx) {
    FILE *f = fopen(path, "rb");
    if (!f) return gma_errorf("%s: cannot open archive: %s", path, strerror(errno));
    unsigned char magic[4] = {0};
    size_t k = fread(magic, 1, 4, f);
    rewind(f);
    ArchiveReader r;
    memset(&r, 0, sizeof r);
    r.path = path;
    r.f = f;
    int rc;
    if (k >= 4 && magic[0] == 'P' && magic[1] == 'K' && (magic[2] == 3 || magic[2] == 5)) {
        r.fmt = FMT_ZIP;
        rc = walk_zip(&r, fn, ctx);
    } else if (k >= 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        src_init(&r.src, f, 1);
        /* peek the first block: a tar header, or a single compressed file */
        unsigned char h[512];
        const char *msg = NULL;
        long got = src_read(&r.src, h, 512, &msg);
        if (got < 0) {
            r.name = xstrdup("(gzip stream)");
            rc = entry_error(&r, msg);
            src_free(&r.src);
        } else {
            int is_tar = got == 512 && tar_checksum_ok(h);
            src_free(&r.src);
            rewind(f);
            src_init(&r.src, f, 1);
            if (is_tar) {
                r.fmt = FMT_TGZ;
                rc = walk_tar(&r, fn, ctx);
            } else {
                r.fmt = FMT_GZ;
                const char *base = strrchr(path, '/');
                base = base ? base + 1 : path;
                r.name = xstrdup(base);
                size_t nl = strlen(r.name);
                if (nl > 3 && strcmp(r.name + nl - 3, ".gz") == 0) r.name[nl - 3] = 0;
                ArchiveEntry e = {r.name, 0, 0, 0}; /* size unknown until read */
                int v = fn(ctx, &e, &r);
                rc = v < 0 || r.failed ? -1 : 0;
            }
            src_free(&r.src);
        }
    } else {
        r.fmt = FMT_TAR;
        src_init(&r.src, f, 0);
        /* a tar must start with a valid header */
        unsigned char h[512];
        size_t got = fread(h, 1, 512, f);
        rewind(f);
        if (got < 512 || !tar_checksum_ok(h))
            rc = gma_errorf("%s: not a recognised archive (zip, tar, tar.gz or gz) at offset 0", path);
        else
            rc = walk_tar(&r, fn, ctx);
    }
    free(r.name);
    fclose(f);
    return rc;
}

/* ---- extraction ---- */
int archive_path_is_safe(const char *name) {
    if (!name || !*name || name[0] == '/' || name[0] == '\\') return 0;
    if (strchr(name, '\\') || (strlen(name) >= 2 && name[1] == ':')) return 0;
    const char *p = name;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.') return 0;
        if (!slash) break;
        p = slash + 1;
    }
    return 1;
}

/* A stale temporary found in a directory the extraction writes into: removed once an
 * entry of the archive turns out to be its NAME (so only this tool's own are removed). */
typedef struct StaleTmp {
    char *path;
    size_t base_len; /* path[0..base_len) is the file it was to become */
} StaleTmp;

typedef struct ExtractCtx {
    const char *archive, *dest;
    char *buf;
    char **dirs; /* directories scanned for stale temporaries */
    int ndirs, cap_dirs;
    StaleTmp *stale;
    int nstale, cap_stale, swept;
} ExtractCtx;

/* The stale temporaries of dir, once per directory (the last one first: entries cluster). */
static void scan_dir(ExtractCtx *x, const char *dir) {
    for (int i = x->ndirs - 1; i >= 0; i--)
        if (!strcmp(x->dirs[i], dir)) return;
    if (x->ndirs == x->cap_dirs)
        x->dirs = xrealloc(x->dirs, (size_t)(x->cap_dirs = 2 * x->cap_dirs + 8) * sizeof *x->dirs);
    x->dirs[x->ndirs++] = xstrdup(dir);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t bl;
        if (!stale_tmp_name(e->d_name, &bl)) continue;
        if (x->nstale == x->cap_stale)
            x->stale = xrealloc(x->stale, (size_t)(x->cap_stale = 2 * x->cap_stale + 8) * sizeof *x->stale);
        size_t n = strlen(dir) + strlen(e->d_name) + 2;
        StaleTmp *t = &x->stale[x->nstale++];
        t->path = xmalloc(n);
        snprintf(t->path, n, "%s/%s", dir, e->d_name);
        t->base_len = strlen(dir) + 1 + bl;
    }
    if (d) closedir(d);
}

/* Before out is written: the stale temporaries of out removed; one named out itself (an
 * entry named like a temporary) is forgotten, never removed after it is extracted. */
static int sweep_for(ExtractCtx *x, const char *out) {
    size_t ol = strlen(out);
    for (int i = 0; i < x->nstale; i++) {
        StaleTmp *t = &x->stale[i];
        int mine = t->base_len == ol && !strncmp(t->path, out, ol);
        if (!mine && strcmp(t->path, out)) continue;
        if (mine && unlink(t->path) != 0 && errno != ENOENT)
            return gma_errorf("%s: cannot remove a stale temporary file: %s", t->path, strerror(errno));
        x->swept += mine;
        free(t->path);
        x->stale[i--] = x->stale[--x->nstale];
    }
    return 0;
}

static int extract_visit(void *vctx, const ArchiveEntry *e, ArchiveReader *r) {
    ExtractCtx *x = vctx;
    if (!archive_path_is_safe(e->name))
        return gma_errorf("%s: refusing entry '%s' at offset %llu: its path escapes the destination", x->archive,
                          e->name, (unsigned long long)e->offset);
    size_t plen = strlen(x->dest) + strlen(e->name) + 32;
    char *out = xmalloc(plen), *tmp = xmalloc(plen + 32);
    snprintf(out, plen, "%s/%s", x->dest, e->name);
    int rc = 0;
    if (e->is_dir) {
        rc = gma_mkdirs(out);
        goto done;
    }
    char *slash = strrchr(out, '/');
    *slash = 0;
    rc = gma_mkdirs(out);
    if (!rc) scan_dir(x, out);
    *slash = '/';
    if (!rc) rc = sweep_for(x, out);
    if (rc) goto done;
    snprintf(tmp, plen + 32, "%s.tmp.%d", out, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        rc = gma_errorf("%s: cannot create: %s", tmp, strerror(errno));
        goto done;
    }
    long k;
    while ((k = archive_read(r, x->buf, 1 << 16)) > 0) {
        if (fwrite(x->buf, 1, (size_t)k, f) != (size_t)k) {
            rc = gma_errorf("%s: write failed: %s", tmp, strerror(errno));
            break;
        }
    }
    if (k < 0) rc = -1;
    if (fflush(f) != 0 && !rc) rc = gma_errorf("%s: write failed: %s", tmp, strerror(errno));
    if (fclose(f) != 0 && !rc) rc = gma_errorf("%s: write failed: %s", tmp, strerror(errno));
    if (!rc && rename(tmp, out) != 0) rc = gma_errorf("%s: rename failed: %s", out, strerror(errno));
    if (rc) unlink(tmp);
done:
    free(out);
    free(tmp);
    return rc;
}

int archive_extract_swept(const char *path, const char *dest, int *swept) {
    if (gma_mkdirs(dest) != 0) return -1;
    ExtractCtx x = {path, dest, xmalloc(1 << 16), NULL, 0, 0, NULL, 0, 0, 0};
    int rc = archive_walk(path, extract_visit, &x);
    free(x.buf);
    for (int i = 0; i < x.ndirs; i++) free(x.dirs[i]);
    for (int i = 0; i < x.nstale; i++) free(x.stale[i].path);
    free(x.dirs);
    free(x.stale);
    if (swept) *swept = x.swept;
    return rc;
}

int archive_extract(const char *path, const char *dest) { return archive_extract_swept(path, dest, NULL); }
