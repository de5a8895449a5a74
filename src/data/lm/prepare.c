/* prepare.c: `gmadata prepare`: find a corpus's train/valid/test text, build or load the
 * tokenizer (word vocabularies come from the training split only), stream each split
 * through the parallel encoder into a token shard (written to a temporary name and
 * renamed when complete), and write <out>/meta.json with the tokenizer, its files (copied
 * into <out>, named relative to it), vocabulary size and, per split, the token count, the source's word count and SHA-256.
 * The set is written as a whole (manifest.h): <out>/prepare.incomplete first, meta.json with
 * the manifest of every file last, then the marker is removed.
 */
#include "data/lm/prepare.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "core/stale_tmp.h"
#include "data/fetch/digest.h"
#include "data/lm/lmmeta.h"
#include "data/lm/manifest.h"
#include "data/lm/shard.h"
#include "data/text/tokenizer.h"

static const char *SPLITS[3] = {"train", "valid", "test"};

/* the counts of k more bytes of a text; *in_word and *line_open carry across calls */
static void count_bytes(TextCounts *c, const unsigned char *buf, size_t k, int *in_word, int *line_open) {
    uint64_t words = 0, lines = 0;
    int w = *in_word, open = *line_open;
    for (size_t i = 0; i < k; i++) {
        unsigned char ch = buf[i];
        int sp = ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f' || ch == '\n';
        if (!sp && !w) words++;
        w = !sp;
        if (ch == '\n') lines++, open = 0;
        else open = 1;
    }
    c->bytes += k, c->words += words, c->lines += lines;
    *in_word = w, *line_open = open;
}

/* the last line without its newline, and one word per line end */
static void count_end(TextCounts *c, int line_open) {
    if (line_open) c->lines++;
    c->words += c->lines;
}

int prepare_count_file(const char *path, TextCounts *c, char *hex) {
    FILE *f = fopen(path, "rb");
    if (!f) return gma_errorf("%s: cannot open: %s", path, strerror(errno));
    memset(c, 0, sizeof *c);
    Digest d;
    digest_init(&d, DIGEST_SHA256);
    static __thread unsigned char buf[1 << 16];
    size_t k;
    int in_word = 0, line_open = 0;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) {
        digest_update(&d, buf, k);
        count_bytes(c, buf, k, &in_word, &line_open);
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) return gma_errorf("%s: read failed", path);
    count_end(c, line_open);
    digest_final_hex(&d, hex);
    return 0;
}

void prepare_count_text(const char *text, size_t len, TextCounts *c) {
    memset(c, 0, sizeof *c);
    int in_word = 0, line_open = 0;
    count_bytes(c, (const unsigned char *)text, len, &in_word, &line_open);
    count_end(c, line_open);
}

int prepare_find_splits(const char *source, const char *data_dir, char paths[3][2048], char *name, size_t cap) {
    const char *base = strrchr(source, '/');
    char dir[2048];
    int wt = strncmp(source, "wikitext-", 9) == 0 && !strchr(source, '/');
    if (wt) snprintf(dir, sizeof dir, "%s/%s", data_dir, source);
    else snprintf(dir, sizeof dir, "%s", source);
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/') dir[--dl] = 0;
    base = strrchr(dir, '/');
    snprintf(name, cap, "%s", base ? base + 1 : dir);
    const char *pattern[3] = {"%s/%s.txt", "%s/wiki.%s.tokens", "%s/wiki.%s.raw"};
    for (int p = 0; p < 3; p++) {
        int ok = 1;
        for (int s = 0; s < 3; s++) {
            snprintf(paths[s], 2048, pattern[p], dir, SPLITS[s]);
            if (!gma_path_exists(paths[s])) ok = 0;
        }
        if (ok) return 0;
    }
    if (wt && !gma_path_exists(dir))
        return gma_errorf("%s: not found; run `gmadata fetch %s --dest %s` first", dir, source, data_dir);
    return gma_errorf("%s: no train/valid/test split here (want train.txt valid.txt test.txt, or wiki.{train,valid,test}.tokens|.raw)",
                      dir);
}

typedef struct SinkCtx {
    ShardWriter *w;
    uint64_t tokens, unk;
    long unk_id;
} SinkCtx;

static int sink(void *ctx, const uint32_t *ids, size_t n) {
    SinkCtx *s = ctx;
    s->tokens += n;
    if (s->unk_id >= 0)
        for (size_t i = 0; i < n; i++) s->unk += ids[i] == (uint32_t)s->unk_id;
    return shard_writer_append(s->w, ids, n);
}

/* Test hook: GMA_FAULT_PREPARE_KILL=FILE kills the process (SIGKILL) once FILE of the
 * output is under its final name, as a kill between two files would. */
static void fault_kill_after(const char *file) {
    const char *f = getenv("GMA_FAULT_PREPARE_KILL");
    if (f && !strcmp(f, file)) raise(SIGKILL);
}

/* the temporaries a killed prepare left in out (NAME.tmp.PID of the files it writes) */
static int sweep_out(const char *out, int verbose) {
    static const char *const names[] = {"train.bin", "valid.bin", "test.bin", "meta.json", MANIFEST_INCOMPLETE,
                                        "vocab.txt", "encoder.json", "vocab.bpe"};
    int n = stale_tmp_sweep(out, names, (int)(sizeof names / sizeof names[0]));
    if (n > 0 && verbose)
        fprintf(stderr, "gmadata: removed %d stale temporary file%s (NAME.tmp.PID) of a prepare that was killed, in %s\n", n,
                n == 1 ? "" : "s", out);
    return n < 0 ? -1 : 0;
}

/* a split with no bytes: the error, naming it, before anything is written */
static int split_is_empty(const char *path, const char *split) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 0) return 0; /* others say so when reading */
    gma_errorf("%s: the %s split is empty (0 bytes); each of train, valid and test needs text", path, split);
    return 1;
}

/* <out>/prepare.incomplete, saying what was being prepared */
static int write_marker(const char *out, const PrepareOptions *o) {
    char path[2300], text[2400];
    snprintf(path, sizeof path, "%s/%s", out, MANIFEST_INCOMPLETE);
    snprintf(text, sizeof text, "gmadata prepare %s --tokenizer %s did not finish\n", o->source, o->tokenizer);
    return gma_write_file_atomic(path, text, strlen(text));
}

/* meta's manifest: the tokenizer files it lists and the three shards */
static int add_manifest(cJSON *root, const char *out) {
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "tokenizer_files");
    for (int i = 0; i < cJSON_GetArraySize(files); i++)
        if (manifest_add(root, out, cJSON_GetArrayItem(files, i)->valuestring) != 0) return -1;
    for (int s = 0; s < 3; s++) {
        char file[64];
        snprintf(file, sizeof file, "%s.bin", SPLITS[s]);
        if (manifest_add(root, out, file) != 0) return -1;
    }
    return 0;
}

/* meta.json (written last, atomically), then the marker removed */
static int write_meta(cJSON *root, const char *out, int verbose) {
    if (add_manifest(root, out) != 0) return -1;
    char *txt = cJSON_Print(root);
    char meta[2200], marker[2300];
    snprintf(meta, sizeof meta, "%s/meta.json", out);
    size_t tl = strlen(txt);
    txt = xrealloc(txt, tl + 2);
    txt[tl] = '\n';
    int rc = gma_write_file_atomic(meta, txt, tl + 1);
    free(txt);
    if (rc) return rc;
    fault_kill_after("meta.json");
    snprintf(marker, sizeof marker, "%s/%s", out, MANIFEST_INCOMPLETE);
    if (unlink(marker) != 0) return gma_errorf("%s: cannot remove: %s", marker, strerror(errno));
    if (verbose) fprintf(stderr, "gmadata: wrote %s\n", meta);
    return 0;
}

int prepare_run(const PrepareOptions *o) {
    char paths[3][2048], name[512], out[2048], vocab_dir[2048];
    const char *data_dir = o->data_dir ? o->data_dir : "data";
    if (prepare_find_splits(o->source, data_dir, paths, name, sizeof name) != 0) return -1;
    if (o->out_dir) snprintf(out, sizeof out, "%s", o->out_dir);
    else snprintf(out, sizeof out, "%s/%s-%s", data_dir, name, o->tokenizer);
    for (char *p = out + strlen(data_dir) + 1; !o->out_dir && *p; p++)
        if (*p == ':' || *p == '/') *p = '_';
    snprintf(vocab_dir, sizeof vocab_dir, "%s", o->vocab_dir ? o->vocab_dir : "");
    if (!o->vocab_dir) snprintf(vocab_dir, sizeof vocab_dir, "%s/gpt2", data_dir);
    for (int s = 0; s < 3; s++)
        if (split_is_empty(paths[s], SPLITS[s])) return -1;
    if (gma_mkdirs(out) != 0 || sweep_out(out, o->verbose) != 0) return -1;
    Tokenizer *tok;
    char spec[2200];
    if (strcmp(o->tokenizer, "word") == 0) {
        if (o->verbose) fprintf(stderr, "gmadata: building the word vocabulary from %s\n", paths[0]);
        if (!(tok = tokenizer_word_build(paths[0]))) return -1;
        snprintf(spec, sizeof spec, "word:%s/vocab.txt", out);
    } else {
        tok = tokenizer_load(o->tokenizer, vocab_dir);
        if (!tok) return -1;
        snprintf(spec, sizeof spec, "%s", tokenizer_spec(tok));
    }
    uint32_t vocab = tokenizer_vocab_size(tok);
    if (write_marker(out, o) != 0) { /* from here on the set in out is incomplete */
        tokenizer_free(tok);
        return -1;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "tokenizer", spec);
    if (lmmeta_save_tokenizer(root, tok, out, NULL) != 0) { /* its files travel with the data */
        cJSON_Delete(root);
        tokenizer_free(tok);
        return -1;
    }
    cJSON_AddNumberToObject(root, "vocab_size", vocab);
    cJSON_AddStringToObject(root, "source", name);
    cJSON *splits = cJSON_AddObjectToObject(root, "splits");
    int rc = 0;
    for (int s = 0; s < 3 && !rc; s++) {
        TextCounts tc;
        char hex[65], shard[2200], file[64];
        if (prepare_count_file(paths[s], &tc, hex) != 0) {
            rc = -1;
            break;
        }
        snprintf(file, sizeof file, "%s.bin", SPLITS[s]);
        snprintf(shard, sizeof shard, "%s/%s", out, file);
        SinkCtx sc = {shard_writer_open(shard, vocab, 0), 0, 0, tokenizer_unk_id(tok)};
        if (!sc.w) {
            rc = -1;
            break;
        }
        double t0 = gma_now();
        uint64_t nbytes = 0;
        if (tokenizer_encode_file(tok, paths[s], o->threads, sink, &sc, &nbytes) != 0) {
            gma_error_prefix("while preparing %s", shard);
            shard_writer_abort(sc.w);
            rc = -1;
            break;
        }
        if (shard_writer_commit(sc.w) != 0) {
            rc = -1;
            break;
        }
        fault_kill_after(file);
        if (sc.tokens < 2) { /* text of white space alone, for a tokenizer that drops it */
            rc = gma_errorf("%s: the %s split gives %llu token%s; it needs at least 2", paths[s], SPLITS[s],
                            (unsigned long long)sc.tokens, sc.tokens == 1 ? "" : "s");
            break;
        }
        double dt = gma_now() - t0;
        if (o->verbose)
            fprintf(stderr, "gmadata: %s: %llu tokens from %llu bytes (%llu words) in %.1f s, %.1f MB/s\n", shard,
                    (unsigned long long)sc.tokens, (unsigned long long)nbytes, (unsigned long long)tc.words, dt,
                    nbytes / 1e6 / GMA_MAX(dt, 1e-9));
        cJSON *js = cJSON_AddObjectToObject(splits, SPLITS[s]);
        cJSON_AddStringToObject(js, "file", file);
        cJSON_AddNumberToObject(js, "tokens", (double)sc.tokens);
        cJSON_AddNumberToObject(js, "words", (double)tc.words);
        cJSON_AddNumberToObject(js, "lines", (double)tc.lines);
        cJSON_AddNumberToObject(js, "bytes", (double)tc.bytes);
        cJSON_AddStringToObject(js, "sha256", hex);
        cJSON_AddStringToObject(js, "source", paths[s]);
        if (sc.unk_id >= 0) cJSON_AddNumberToObject(js, "unk", (double)sc.unk);
    }
    if (!rc) rc = write_meta(root, out, o->verbose);
    cJSON_Delete(root);
    tokenizer_free(tok);
    return rc;
}
