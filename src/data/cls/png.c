/* png.c: 8-bit grayscale PNG encode and strict decode (png.h). Chunks: IHDR first, then
 * any ancillary chunks (CRC-checked, skipped), one run of consecutive IDAT, IEND last with
 * nothing after it. Unknown critical chunks, PLTE, a second IHDR, IDAT after another chunk
 * followed IDAT, trailing bytes, short or long image data, bad filter types and bad CRCs
 * are all refused. zlib (already a dependency) does the compression.
 */
#include "data/cls/png.h"
#include "core/common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static const uint8_t SIG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Append one chunk (length, type, data, CRC over type and data) at out + *n. */
static void put_chunk(uint8_t *out, size_t *n, const char type[4], const uint8_t *data, uint32_t len) {
    uint8_t *p = out + *n;
    put32(p, len);
    memcpy(p + 4, type, 4);
    if (len) memcpy(p + 8, data, len);
    uLong crc = crc32(0L, p + 4, 4 + len);
    put32(p + 8 + len, (uint32_t)crc);
    *n += 12 + (size_t)len;
}

int png_encode_gray8(const uint8_t *pix, int w, int h, uint8_t **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    if (w < 1 || h < 1 || w > PNG_MAX_SIDE || h > PNG_MAX_SIDE)
        return gma_errorf("png: image size %d x %d outside 1..%d", w, h, PNG_MAX_SIDE);
    size_t raw_len = (size_t)h * ((size_t)w + 1);
    uint8_t *raw = xmalloc(raw_len);
    for (int y = 0; y < h; y++) {          /* filter type 0 (None) on every row */
        raw[(size_t)y * (w + 1)] = 0;
        memcpy(raw + (size_t)y * (w + 1) + 1, pix + (size_t)y * w, (size_t)w);
    }
    uLongf zlen = compressBound((uLong)raw_len);
    uint8_t *z = xmalloc(zlen);
    int zrc = compress2(z, &zlen, raw, (uLong)raw_len, 9);
    free(raw);
    if (zrc != Z_OK) {
        free(z);
        return gma_errorf("png: zlib compress failed (%d)", zrc);
    }
    uint8_t ihdr[13];
    put32(ihdr, (uint32_t)w);
    put32(ihdr + 4, (uint32_t)h);
    ihdr[8] = 8;   /* bit depth */
    ihdr[9] = 0;   /* colour type: grayscale */
    ihdr[10] = ihdr[11] = ihdr[12] = 0;   /* deflate, adaptive filtering, no interlace */
    uint8_t *o = xmalloc(8 + 25 + 12 + zlen + 12);
    size_t n = 8;
    memcpy(o, SIG, 8);
    put_chunk(o, &n, "IHDR", ihdr, 13);
    put_chunk(o, &n, "IDAT", z, (uint32_t)zlen);
    put_chunk(o, &n, "IEND", NULL, 0);
    free(z);
    *out = o;
    *out_len = n;
    return 0;
}

int png_write_gray8(const char *path, const uint8_t *pix, int w, int h) {
    uint8_t *buf;
    size_t len;
    if (png_encode_gray8(pix, w, h, &buf, &len) < 0) return gma_errorf("%s: %s", path, gma_error());
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(buf);
        return gma_errorf("%s: cannot create: %s", path, strerror(errno));
    }
    size_t wr = fwrite(buf, 1, len, f);
    free(buf);
    int bad = wr != len || fflush(f) != 0 || ferror(f);
    if (fclose(f) != 0) bad = 1;
    if (bad) return gma_errorf("%s: write failed: %s", path, strerror(errno));
    return 0;
}

static int paeth(int a, int b, int c) {
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    if (pa <= pb && pa <= pc) return a;
    return pb <= pc ? b : c;
}

/* Undo the per-row filters of raw (h rows of 1 + w bytes) into pix. */
static int unfilter(const uint8_t *raw, uint8_t *pix, int w, int h, const char *name, size_t idat_off) {
    for (int y = 0; y < h; y++) {
        const uint8_t *r = raw + (size_t)y * (w + 1);
        uint8_t *cur = pix + (size_t)y * w;
        const uint8_t *up = y ? cur - w : NULL;
        int ft = r[0];
        if (ft > 4)
            return gma_errorf("%s: offset %zu: row %d has filter type %d (0-4 allowed)", name, idat_off, y, ft);
        for (int x = 0; x < w; x++) {
            int a = x ? cur[x - 1] : 0, b = up ? up[x] : 0, c = (x && up) ? up[x - 1] : 0, v = r[1 + x];
            switch (ft) {
            case 1: v += a; break;
            case 2: v += b; break;
            case 3: v += (a + b) / 2; break;
            case 4: v += paeth(a, b, c); break;
            default: break;
            }
            cur[x] = (uint8_t)v;
        }
    }
    return 0;
}

#define PNG_MAX_INFLATE 1040 /* deflate's largest ratio is 1032:1 */

int png_decode_gray8(const uint8_t *buf, size_t len, const char *name, uint8_t **pix, int *w, int *h) {
    *pix = NULL;
    *w = *h = 0;
    if (!name) name = "png";
    if (!buf || len < 8 || memcmp(buf, SIG, 8) != 0)
        return gma_errorf("%s: offset 0: not a PNG file (bad signature)", name);
    size_t pos = 8;
    int seen_ihdr = 0, idat_state = 0;   /* 0 none yet, 1 in the IDAT run, 2 after it */
    uint32_t W = 0, H = 0;
    size_t idat_off = 0;
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    int z_open = 0, z_done = 0, rc = -1;
    uint8_t *raw = NULL;
    size_t raw_len = 0;
    for (;;) {
        if (len - pos < 12) {
            gma_errorf("%s: offset %zu: truncated chunk header (%zu bytes left, 12 needed)", name, pos, len - pos);
            goto out;
        }
        uint32_t clen = get32(buf + pos);
        const uint8_t *type = buf + pos + 4;
        if (clen > 0x7fffffffu || (size_t)clen > len - pos - 12) {
            gma_errorf("%s: offset %zu: chunk length %u runs past the end of the file (%zu bytes)", name, pos,
                       clen, len);
            goto out;
        }
        for (int i = 0; i < 4; i++)
            if (!((type[i] >= 'A' && type[i] <= 'Z') || (type[i] >= 'a' && type[i] <= 'z'))) {
                gma_errorf("%s: offset %zu: chunk type is not four letters", name, pos + 4);
                goto out;
            }
        const uint8_t *data = buf + pos + 8;
        uint32_t crc = get32(data + clen);
        if ((uint32_t)crc32(0L, type, 4 + clen) != crc) {
            gma_errorf("%s: offset %zu: CRC mismatch in chunk %.4s", name, pos + 8 + clen, (const char *)type);
            goto out;
        }
        int is_idat = memcmp(type, "IDAT", 4) == 0;
        if (!seen_ihdr && memcmp(type, "IHDR", 4) != 0) {
            gma_errorf("%s: offset %zu: first chunk is %.4s, IHDR expected", name, pos, (const char *)type);
            goto out;
        }
        if (idat_state == 1 && !is_idat) idat_state = 2;
        if (memcmp(type, "IHDR", 4) == 0) {
            if (seen_ihdr) {
                gma_errorf("%s: offset %zu: second IHDR chunk", name, pos);
                goto out;
            }
            if (clen != 13) {
                gma_errorf("%s: offset %zu: IHDR length %u, 13 expected", name, pos, clen);
                goto out;
            }
            W = get32(data);
            H = get32(data + 4);
            if (W < 1 || H < 1 || W > PNG_MAX_SIDE || H > PNG_MAX_SIDE) {
                gma_errorf("%s: offset %zu: image size %u x %u outside 1..%d", name, pos + 8, W, H, PNG_MAX_SIDE);
                goto out;
            }
            if (data[8] != 8 || data[9] != 0) {
                gma_errorf("%s: offset %zu: bit depth %d, colour type %d: only 8-bit grayscale (8, 0) is read",
                           name, pos + 16, data[8], data[9]);
                goto out;
            }
            if (data[10] != 0 || data[11] != 0 || data[12] != 0) {
                gma_errorf("%s: offset %zu: compression %d, filter %d, interlace %d: only 0, 0, 0 are read", name,
                           pos + 18, data[10], data[11], data[12]);
                goto out;
            }
            seen_ihdr = 1;
            raw_len = (size_t)H * ((size_t)W + 1);
            if (raw_len / PNG_MAX_INFLATE > len) { /* deflate expands at most about 1032 times */
                gma_errorf("%s: offset %zu: image size %u x %u cannot come from a file of %zu bytes", name, pos + 8, W, H,
                           len);
                goto out;
            }
            raw = xmalloc(raw_len + 1);   /* + 1 spare byte to catch surplus data */
            if (inflateInit(&zs) != Z_OK) {
                gma_errorf("%s: offset %zu: zlib init failed", name, pos);
                goto out;
            }
            z_open = 1;
            zs.next_out = raw;
            zs.avail_out = (uInt)raw_len + 1;
        } else if (is_idat) {
            if (idat_state == 2) {
                gma_errorf("%s: offset %zu: IDAT chunks are not consecutive", name, pos);
                goto out;
            }
            if (idat_state == 0) idat_off = pos;
            idat_state = 1;
            if (clen && z_done) {
                gma_errorf("%s: offset %zu: data after the end of the compressed stream", name, pos + 8);
                goto out;
            }
            zs.next_in = (Bytef *)data;
            zs.avail_in = clen;
            while (zs.avail_in > 0 && !z_done) {
                int zr = inflate(&zs, Z_NO_FLUSH);
                if (zr == Z_STREAM_END) z_done = 1;
                else if (zr != Z_OK && zr != Z_BUF_ERROR) {
                    gma_errorf("%s: offset %zu: corrupt compressed data (%s)", name,
                               pos + 8 + (size_t)(clen - zs.avail_in), zs.msg ? zs.msg : "zlib error");
                    goto out;
                }
                if (zs.avail_out == 0) {   /* the spare byte was written: too much data */
                    gma_errorf("%s: offset %zu: more image data than %u x %u allows", name, pos + 8, W, H);
                    goto out;
                }
                if (zr == Z_BUF_ERROR) break;
            }
            if (zs.avail_in > 0) {
                gma_errorf("%s: offset %zu: data after the end of the compressed stream", name,
                           pos + 8 + (size_t)(clen - zs.avail_in));
                goto out;
            }
        } else if (memcmp(type, "IEND", 4) == 0) {
            if (clen != 0) {
                gma_errorf("%s: offset %zu: IEND length %u, 0 expected", name, pos, clen);
                goto out;
            }
            if (pos + 12 != len) {
                gma_errorf("%s: offset %zu: %zu bytes after IEND", name, pos + 12, len - pos - 12);
                goto out;
            }
            if (idat_state == 0) {
                gma_errorf("%s: offset %zu: no IDAT chunk", name, pos);
                goto out;
            }
            if (!z_done || zs.avail_out != 1) {
                gma_errorf("%s: offset %zu: image data ends early (%zu of %zu bytes)", name, idat_off,
                           raw_len + 1 - zs.avail_out, raw_len);
                goto out;
            }
            break;
        } else if (!(type[0] & 0x20)) {   /* uppercase first letter: critical */
            gma_errorf("%s: offset %zu: critical chunk %.4s is not supported", name, pos, (const char *)type);
            goto out;
        }
        pos += 12 + (size_t)clen;
    }
    uint8_t *p = xmalloc((size_t)W * H);
    if (unfilter(raw, p, (int)W, (int)H, name, idat_off) < 0) {
        free(p);
        goto out;
    }
    *pix = p;
    *w = (int)W;
    *h = (int)H;
    rc = 0;
out:
    if (z_open) inflateEnd(&zs);
    free(raw);
    return rc;
}

int png_read_gray8(const char *path, uint8_t **pix, int *w, int *h) {
    size_t len;
    char *buf = gma_read_file(path, &len);
    *pix = NULL;
    if (!buf) return -1;
    int rc = png_decode_gray8((const uint8_t *)buf, len, path, pix, w, h);
    free(buf);
    return rc;
}
