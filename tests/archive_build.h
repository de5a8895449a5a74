/* archive_build.h: tar, gzip and zip archives built in memory, for the tests and the fuzz
 * seeds that feed the archive reader (header-only: each includer gets its own static copy).
 * Needs <stdio.h>, <string.h>, <zlib.h> and core/common.h (xmalloc, xrealloc). */
#ifndef GMA_TESTS_ARCHIVE_BUILD_H
#define GMA_TESTS_ARCHIVE_BUILD_H

#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "core/common.h"

typedef struct Buf {
    unsigned char *p;
    size_t n, cap;
} Buf;

static inline void put(Buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) b->p = xrealloc(b->p, b->cap = 2 * (b->n + n) + 1024);
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void put16(Buf *b, unsigned v) {
    unsigned char x[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    put(b, x, 2);
}
static inline void put32(Buf *b, unsigned long v) { put16(b, v & 0xffff), put16(b, (v >> 16) & 0xffff); }

/* One ustar header block of an entry of `size` bytes and type flag `type` ('0' file,
 * '5' directory, '2' symlink, 'x' pax, 'L' GNU long name), checksum filled in. */
static inline void tar_header(unsigned char *h, const char *name, size_t size, char type) {
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 124, 12, "%011zo", size);
    h[156] = (unsigned char)type;
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
}
/* The header, the data and the padding to the next 512-byte block. */
static inline void tar_add(Buf *b, const char *name, const char *data, size_t n, char type) {
    unsigned char h[512];
    tar_header(h, name, n, type);
    put(b, h, 512);
    put(b, data, n);
    static const char zero[512];
    put(b, zero, (512 - n % 512) % 512);
}
/* The two zero blocks that end a tar. */
static inline void tar_end(Buf *b) {
    static const char zero[1024];
    put(b, zero, 1024);
}

/* `in` as one gzip member (zlib level 6). */
static inline Buf gzip_buf(const Buf *in) {
    Buf out = {0};
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    out.cap = deflateBound(&z, in->n) + 64;
    out.p = xmalloc(out.cap);
    z.next_in = in->p, z.avail_in = (uInt)in->n, z.next_out = out.p, z.avail_out = (uInt)out.cap;
    deflate(&z, Z_FINISH);
    out.n = z.total_out;
    deflateEnd(&z);
    return out;
}

typedef struct ZipEnt {
    const char *name, *data;
    size_t n;
    int deflate;
} ZipEnt;

/* A zip of the ne (at most 16) entries appended to b: local headers and data (stored, or raw
 * deflate at level 9), central directory, end record; corrupt_crc flips the stored CRC of the
 * last entry. */
static inline void zip_build(Buf *b, const ZipEnt *e, int ne, int corrupt_crc) {
    unsigned long off[16], crc[16], csz[16];
    for (int i = 0; i < ne; i++) {
        off[i] = (unsigned long)b->n;
        crc[i] = crc32(0, (const Bytef *)e[i].data, (uInt)e[i].n);
        if (corrupt_crc && i == ne - 1) crc[i] ^= 1;
        unsigned char *comp = xmalloc(e[i].n * 2 + 64);
        size_t cn = e[i].n;
        if (e[i].deflate) {
            z_stream z;
            memset(&z, 0, sizeof z);
            deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
            z.next_in = (Bytef *)e[i].data, z.avail_in = (uInt)e[i].n;
            z.next_out = comp, z.avail_out = (uInt)(e[i].n * 2 + 64);
            deflate(&z, Z_FINISH);
            cn = z.total_out;
            deflateEnd(&z);
        } else {
            memcpy(comp, e[i].data, e[i].n);
        }
        csz[i] = (unsigned long)cn;
        put32(b, 0x04034b50);
        put16(b, 20), put16(b, 0), put16(b, e[i].deflate ? 8 : 0), put16(b, 0), put16(b, 0);
        put32(b, crc[i]), put32(b, cn), put32(b, e[i].n);
        put16(b, (unsigned)strlen(e[i].name)), put16(b, 0);
        put(b, e[i].name, strlen(e[i].name));
        put(b, comp, cn);
        free(comp);
    }
    size_t cd = b->n;
    for (int i = 0; i < ne; i++) {
        put32(b, 0x02014b50);
        put16(b, 20), put16(b, 20), put16(b, 0), put16(b, e[i].deflate ? 8 : 0), put16(b, 0), put16(b, 0);
        put32(b, crc[i]), put32(b, csz[i]), put32(b, e[i].n);
        put16(b, (unsigned)strlen(e[i].name)), put16(b, 0), put16(b, 0), put16(b, 0), put16(b, 0);
        put32(b, 0), put32(b, off[i]);
        put(b, e[i].name, strlen(e[i].name));
    }
    size_t cdn = b->n - cd;
    put32(b, 0x06054b50);
    put16(b, 0), put16(b, 0), put16(b, (unsigned)ne), put16(b, (unsigned)ne);
    put32(b, cdn), put32(b, cd), put16(b, 0);
}

#endif
