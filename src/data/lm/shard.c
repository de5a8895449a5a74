/* shard.c: read token shards with mmap and write them atomically (format in shard.h). */
#include "data/lm/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void wr64(uint8_t *p, uint64_t v) { wr32(p, (uint32_t)v); wr32(p + 4, (uint32_t)(v >> 32)); }

/* the first bytes of a file that is text (no NUL, no control bytes but white space):
 * text given where a shard belongs */
static int looks_like_text(const uint8_t *p, size_t n) {
    if (n == 0 || !memcmp(p, SHARD_MAGIC, GMA_MIN(n, 7))) return 0; /* a cut shard */
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x20 && p[i] != '\n' && p[i] != '\r' && p[i] != '\t') return 0;
    return 1;
}

static int not_a_shard_text(const char *path) {
    return gma_errorf("%s: not a token shard but a text file (bad magic at offset 0); make one with: gmadata encode "
                      "--tokenizer T --out FILE.bin %s", path, path);
}

int shard_open(TokenShard *s, const char *path, int check_ids) {
    memset(s, 0, sizeof *s);
    snprintf(s->path, sizeof s->path, "%s", path);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return gma_errorf("%s: cannot open token shard: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return gma_errorf("%s: cannot stat: %s", path, strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return gma_errorf("%s: a directory, not a token shard (a .bin file such as DIR/train.bin)", path);
    }
    size_t len = (size_t)st.st_size;
    if (len < SHARD_HEADER_BYTES) {
        uint8_t head[SHARD_HEADER_BYTES];
        ssize_t k = read(fd, head, sizeof head);
        close(fd);
        if (k > 0 && looks_like_text(head, (size_t)k)) return not_a_shard_text(path);
        return gma_errorf("%s: not a token shard: %zu bytes, the header alone is %d (offset 0)", path, len, SHARD_HEADER_BYTES);
    }
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return gma_errorf("%s: mmap failed: %s", path, strerror(errno));
    const uint8_t *h = map;
    int rc = 0;
    if (memcmp(h, SHARD_MAGIC, 8) != 0) {
        rc = looks_like_text(h, SHARD_HEADER_BYTES)
                 ? not_a_shard_text(path)
                 : gma_errorf("%s: not a token shard: bad magic at offset 0 (expected \"GMATOKS\")", path);
    } else if (rd32(h + 8) != SHARD_VERSION) {
        rc = gma_errorf("%s: unsupported shard version %u at offset 8 (this build reads %u)", path, rd32(h + 8), SHARD_VERSION);
    } else if (rd32(h + 12) != 2 && rd32(h + 12) != 4) {
        rc = gma_errorf("%s: bad token width %u at offset 12 (2 or 4)", path, rd32(h + 12));
    } else {
        s->width = (int)rd32(h + 12);
        s->count = rd64(h + 16);
        s->vocab = rd32(h + 24);
        uint64_t want = SHARD_HEADER_BYTES + s->count * (uint64_t)s->width;
        if (s->count > (len - SHARD_HEADER_BYTES) / (uint64_t)s->width || want != len) /* no wrap-around */
            rc = gma_errorf("%s: truncated or padded shard: header (offset 16) says %llu tokens = %llu bytes, file has %zu",
                            path, (unsigned long long)s->count, (unsigned long long)want, len);
        else if (s->vocab == 0)
            rc = gma_errorf("%s: vocabulary size 0 at offset 24", path);
    }
    if (rc) {
        munmap(map, len);
        return rc;
    }
    s->map = map;
    s->map_len = len;
    s->tok = h + SHARD_HEADER_BYTES;
    if (check_ids) {
        for (uint64_t i = 0; i < s->count; i++) {
            uint32_t t = shard_get(s, i);
            if (t >= s->vocab) {
                rc = gma_errorf("%s: token %u at offset %llu is not below the vocabulary size %u", path, t,
                                (unsigned long long)(SHARD_HEADER_BYTES + i * (uint64_t)s->width), s->vocab);
                shard_close(s);
                return rc;
            }
        }
    }
    return 0;
}

void shard_close(TokenShard *s) {
    if (s->map) munmap(s->map, s->map_len);
    s->map = NULL;
}

struct ShardWriter {
    char path[1024], tmp[1100];
    FILE *f;
    uint32_t vocab;
    int width;
    uint64_t count;
};

ShardWriter *shard_writer_open(const char *path, uint32_t vocab, int width) {
    if (width == 0) width = vocab <= 65536 ? 2 : 4;
    if (width != 2 && width != 4) {
        gma_errorf("%s: token width must be 2 or 4", path);
        return NULL;
    }
    if (width == 2 && vocab > 65536) {
        gma_errorf("%s: vocabulary %u does not fit 2-byte tokens", path, vocab);
        return NULL;
    }
    ShardWriter *w = xcalloc(1, sizeof *w);
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%d", path, (int)getpid());
    w->f = fopen(w->tmp, "wb");
    if (!w->f) {
        gma_errorf("%s: cannot create: %s", w->tmp, strerror(errno));
        free(w);
        return NULL;
    }
    w->vocab = vocab;
    w->width = width;
    uint8_t h[SHARD_HEADER_BYTES] = {0};
    if (fwrite(h, 1, sizeof h, w->f) != sizeof h) {
        gma_errorf("%s: write failed: %s", w->tmp, strerror(errno));
        shard_writer_abort(w);
        return NULL;
    }
    return w;
}

int shard_writer_append(ShardWriter *w, const uint32_t *tok, size_t n) {
    uint8_t buf[8192];
    size_t i = 0;
    while (i < n) {
        size_t k = 0;
        for (; i < n && k + 4 <= sizeof buf; i++) {
            if (tok[i] >= w->vocab)
                return gma_errorf("%s: token id %u at index %llu is not below the vocabulary size %u", w->path, tok[i],
                                  (unsigned long long)(w->count + i), w->vocab);
            if (w->width == 2) {
                buf[k++] = (uint8_t)tok[i];
                buf[k++] = (uint8_t)(tok[i] >> 8);
            } else {
                wr32(buf + k, tok[i]);
                k += 4;
            }
        }
        if (fwrite(buf, 1, k, w->f) != k) return gma_errorf("%s: write failed: %s", w->tmp, strerror(errno));
    }
    w->count += n;
    return 0;
}

int shard_writer_commit(ShardWriter *w) {
    uint8_t h[SHARD_HEADER_BYTES] = {0};
    memcpy(h, SHARD_MAGIC, 8);
    wr32(h + 8, SHARD_VERSION);
    wr32(h + 12, (uint32_t)w->width);
    wr64(h + 16, w->count);
    wr32(h + 24, w->vocab);
    int rc = 0;
    if (fseek(w->f, 0, SEEK_SET) != 0 || fwrite(h, 1, sizeof h, w->f) != sizeof h || fflush(w->f) != 0 ||
        fsync(fileno(w->f)) != 0)
        rc = gma_errorf("%s: write failed: %s", w->tmp, strerror(errno));
    if (fclose(w->f) != 0 && !rc) rc = gma_errorf("%s: close failed: %s", w->tmp, strerror(errno));
    w->f = NULL;
    if (!rc && rename(w->tmp, w->path) != 0) rc = gma_errorf("%s: rename failed: %s", w->path, strerror(errno));
    if (rc) unlink(w->tmp);
    free(w);
    return rc;
}

void shard_writer_abort(ShardWriter *w) {
    if (!w) return;
    if (w->f) fclose(w->f);
    unlink(w->tmp);
    free(w);
}

int shard_write(const char *path, const uint32_t *tok, uint64_t n, uint32_t vocab) {
    ShardWriter *w = shard_writer_open(path, vocab, 0);
    if (!w) return -1;
    if (shard_writer_append(w, tok, n) != 0) {
        shard_writer_abort(w);
        return -1;
    }
    return shard_writer_commit(w);
}
