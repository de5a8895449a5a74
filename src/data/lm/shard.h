/* shard.h: token shards, the on-disk format every dataset is tokenized into: a 32-byte
 * little-endian header (magic "GMATOKS\0", version, token width 2 or 4, count, vocabulary)
 * then the tokens; the layout and its checks: docs/formats.md, "Token shards". A JSON
 * sidecar (NAME.json beside train/valid/test shards) names the tokenizer and source. Shards
 * are read with mmap; writers write NAME.tmp.PID, fsync and rename, so a shard under its
 * final name is always complete. */
#ifndef GMA_SHARD_H
#define GMA_SHARD_H
#include <stddef.h>
#include <stdint.h>

#define SHARD_MAGIC "GMATOKS"
#define SHARD_VERSION 1u
#define SHARD_HEADER_BYTES 32

typedef struct TokenShard {
    char path[1024];
    void *map;          /* whole file mapping */
    size_t map_len;
    const uint8_t *tok; /* start of tokens */
    int width;          /* 2 or 4 */
    uint64_t count;
    uint32_t vocab;
} TokenShard;

/* Open and validate (magic, version, width, size, optionally every id < vocab when
 * check_ids). Errors name the file and the offset. Returns 0 or -1. */
int shard_open(TokenShard *s, const char *path, int check_ids);
void shard_close(TokenShard *s);
static inline uint32_t shard_get(const TokenShard *s, uint64_t i) {
    if (s->width == 2) return ((const uint16_t *)s->tok)[i];
    return ((const uint32_t *)s->tok)[i];
}

/* Streaming writer: tokens appended to PATH.tmp.PID; commit fixes the header, fsyncs and
 * renames to PATH; abort removes the temporary file. width 0 = choose from vocab. */
typedef struct ShardWriter ShardWriter;
ShardWriter *shard_writer_open(const char *path, uint32_t vocab, int width);
int shard_writer_append(ShardWriter *w, const uint32_t *tok, size_t n);
int shard_writer_commit(ShardWriter *w); /* frees w */
void shard_writer_abort(ShardWriter *w); /* frees w */
/* One-shot: write n tokens to path. */
int shard_write(const char *path, const uint32_t *tok, uint64_t n, uint32_t vocab);
#endif
