/* dataid.h: the identity of a data directory, so a run cannot be continued or scored on
 * data of another tokenizer or other shards (docs/data.md, "Data identity"): the tokenizer's
 * kind (meta.json "tokenizer" up to ':'), the vocabulary (the largest of the shards'
 * headers), the SHA-256 of the tokenizer's files (meta.json "tokenizer_files", in order; ""
 * when it lists none or one is not there, then not compared) and, for each of
 * train/valid/test.bin present, its token count, vocabulary, the SHA-256 of its 32-byte
 * header and of the whole file that meta.json's manifest records (manifest.h; "" without
 * one). gmatrain records it in RUN/data.json ("identity"); a resume compares all of it (a
 * content digest only where both sides know it), gmaeval the tokenizer and vocabulary. */
#ifndef GMA_DATAID_H
#define GMA_DATAID_H
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

typedef struct DataShardId {
    int present;
    uint64_t tokens;
    uint32_t vocab;
    char sha[65];     /* of the header */
    char content[65]; /* of the whole shard, from meta.json's manifest; "" when unknown */
} DataShardId;

typedef struct DataId {
    char tokenizer[64]; /* "gpt2", "bpe", "word", "bytes"; "" without meta.json */
    char tok_sha[65];   /* "" when no tokenizer files are listed */
    uint32_t vocab;
    DataShardId shard[3]; /* train, valid, test */
} DataId;

/* The identity of data directory dir. 0, or -1 with gma_error naming the file. */
int dataid_of_dir(const char *dir, DataId *id);
/* The identity of one shard file (gmaeval --data FILE): its vocabulary, and the tokenizer
 * of a meta.json beside it; no shards. 0, or -1. */
int dataid_of_file(const char *path, DataId *id);
cJSON *dataid_to_json(const DataId *id);
/* The identity RUN/data.json records: 1 (filled), 0 when it records none (a run made
 * before identities were kept, or no data.json), -1 with gma_error when it is malformed. */
int dataid_of_run(const char *run_dir, DataId *id);
/* the SHA-256 (hex, 65 bytes) of the n files dir/files[i] read one after the other: the
 * tokenizer digest of a DataId. 0, or -1 when a file cannot be read (hex untouched). */
int dataid_files_sha(const char *dir, const char *const *files, int n, char *hex);
/* 0 when `have` is the identity `want` (shards: compare the shards too, else the
 * tokenizer and vocabulary alone); 1 with the first difference in out ("vocabulary 50257
 * there, 4096 here"). */
int dataid_diff(const DataId *want, const DataId *have, int shards, char *out, size_t cap);
/* The data at data_dir (file NULL) or the one shard `file` against the identity the run
 * directory `run` records (gmatrain --resume with shards 1, gmaeval with 0; a bare shard
 * without a meta.json beside it is compared by its vocabulary alone): 1 when they match,
 * 0 when the run records none, 2 when they differ (the first difference in what), -1 with
 * gma_error (a malformed data.json, unreadable data). */
int dataid_check(const char *run, const char *data_dir, const char *file, int shards, char *what, size_t cap);
#endif
