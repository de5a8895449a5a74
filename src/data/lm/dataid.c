/* dataid.c: the identity of a data directory (see dataid.h). */
#include "data/lm/dataid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/fetch/digest.h"
#include "data/lm/shard.h"

static const char *const g_shard[3] = {"train.bin", "valid.bin", "test.bin"};

/* the shard header at path: count, vocabulary, digest; not there: present 0 */
static int shard_id(const char *path, DataShardId *s) {
    memset(s, 0, sizeof *s);
    if (!gma_path_exists(path)) return 0;
    FILE *f = fopen(path, "rb");
    uint8_t h[SHARD_HEADER_BYTES];
    size_t n = f ? fread(h, 1, sizeof h, f) : 0;
    if (f) fclose(f);
    if (n != sizeof h) return gma_errorf("%s: cannot read its %d-byte header", path, SHARD_HEADER_BYTES);
    s->present = 1;
    for (int i = 7; i >= 0; i--) s->tokens = s->tokens << 8 | h[16 + i];
    s->vocab = (uint32_t)h[24] | (uint32_t)h[25] << 8 | (uint32_t)h[26] << 16 | (uint32_t)h[27] << 24;
    Digest d;
    digest_init(&d, DIGEST_SHA256);
    digest_update(&d, h, sizeof h);
    digest_final_hex(&d, s->sha);
    return 0;
}

/* dir/name (its path in p) parsed into *j: 1; 0 when there is no such file; -1 with the
 * error set when it is not valid JSON */
static int read_json(char *p, size_t cap, const char *dir, const char *name, cJSON **j) {
    snprintf(p, cap, "%s/%s", dir, name);
    *j = NULL;
    if (!gma_path_exists(p)) return 0;
    char *text = gma_read_file(p, NULL);
    *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return *j ? 1 : gma_errorf("%s: not valid JSON", p);
}

/* the SHA-256 meta.json's manifest records for each shard (manifest.h), "" when none */
static void content_ids(const cJSON *meta, DataId *id) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(meta, "manifest");
    for (int s = 0; s < 3; s++) {
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, g_shard[s]), "sha256");
        if (cJSON_IsString(sha) && strlen(sha->valuestring) == 64)
            snprintf(id->shard[s].content, sizeof id->shard[s].content, "%s", sha->valuestring);
    }
}

int dataid_files_sha(const char *dir, const char *const *files, int n, char *hex) {
    Digest d;
    digest_init(&d, DIGEST_SHA256);
    for (int i = 0; i < n; i++) {
        char fp[2400];
        snprintf(fp, sizeof fp, "%s/%s", dir, files[i]);
        size_t len;
        char *b = gma_path_exists(fp) ? gma_read_file(fp, &len) : NULL;
        if (!b) return -1;
        digest_update(&d, b, len);
        free(b);
    }
    digest_final_hex(&d, hex);
    return 0;
}

/* the tokenizer of the meta.json in dir: kind and the digest of its listed files; the
 * shards' content digests of its manifest */
static int tokenizer_id(const char *dir, DataId *id) {
    char p[2300];
    cJSON *j;
    int have = read_json(p, sizeof p, dir, "meta.json", &j);
    if (have <= 0) return have;
    content_ids(j, id);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "tokenizer");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(j, "tokenizer_files");
    if (cJSON_IsString(t)) /* the kind: "bpe:DIR" names a folder that may move */
        snprintf(id->tokenizer, sizeof id->tokenizer, "%.*s", (int)strcspn(t->valuestring, ":"), t->valuestring);
    int n = cJSON_IsArray(files) ? cJSON_GetArraySize(files) : 0, ok = n > 0 && n <= 64;
    const char *names[64];
    for (int i = 0; ok && i < n; i++) {
        const cJSON *f = cJSON_GetArrayItem(files, i);
        ok = cJSON_IsString(f);
        names[i] = ok ? f->valuestring : NULL;
    }
    /* a file not there (a split copied alone): the digest is unknown */
    if (ok) (void)dataid_files_sha(dir, names, n, id->tok_sha);
    cJSON_Delete(j);
    return 0;
}

int dataid_of_dir(const char *dir, DataId *id) {
    memset(id, 0, sizeof *id);
    if (tokenizer_id(dir, id) != 0) return -1;
    for (int s = 0; s < 3; s++) {
        char p[2300], content[65];
        snprintf(p, sizeof p, "%s/%s", dir, g_shard[s]);
        snprintf(content, sizeof content, "%s", id->shard[s].content);
        if (shard_id(p, &id->shard[s]) != 0) return -1;
        if (id->shard[s].present) snprintf(id->shard[s].content, sizeof id->shard[s].content, "%s", content);
        if (id->shard[s].vocab > id->vocab) id->vocab = id->shard[s].vocab;
    }
    return 0;
}

int dataid_of_file(const char *path, DataId *id) {
    memset(id, 0, sizeof *id);
    char dir[2300];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    DataShardId s;
    if (tokenizer_id(dir, id) != 0 || shard_id(path, &s) != 0) return -1;
    id->vocab = s.vocab;
    return 0;
}

cJSON *dataid_to_json(const DataId *id) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "tokenizer", id->tokenizer);
    cJSON_AddNumberToObject(o, "vocab_size", id->vocab);
    cJSON_AddStringToObject(o, "tokenizer_sha256", id->tok_sha);
    cJSON *sh = cJSON_AddObjectToObject(o, "shards");
    for (int s = 0; s < 3; s++) {
        if (!id->shard[s].present) continue;
        cJSON *e = cJSON_AddObjectToObject(sh, g_shard[s]);
        cJSON_AddNumberToObject(e, "tokens", (double)id->shard[s].tokens);
        cJSON_AddNumberToObject(e, "vocab_size", id->shard[s].vocab);
        cJSON_AddStringToObject(e, "header_sha256", id->shard[s].sha);
        if (id->shard[s].content[0]) cJSON_AddStringToObject(e, "sha256", id->shard[s].content);
    }
    return o;
}

static int str_field(const cJSON *o, const char *k, char *out, size_t cap) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v)) return -1;
    snprintf(out, cap, "%s", v->valuestring);
    return 0;
}

/* a whole number in [0, max] */
static int num_field(const cJSON *o, const char *k, double max, double *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= max) || v->valuedouble != floor(v->valuedouble))
        return -1;
    *out = v->valuedouble;
    return 0;
}

static int from_json(const cJSON *o, DataId *id) {
    double v;
    if (str_field(o, "tokenizer", id->tokenizer, sizeof id->tokenizer) || num_field(o, "vocab_size", 4294967295.0, &v) ||
        str_field(o, "tokenizer_sha256", id->tok_sha, sizeof id->tok_sha))
        return -1;
    id->vocab = (uint32_t)v;
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(o, "shards");
    if (!cJSON_IsObject(sh)) return -1;
    for (int s = 0; s < 3; s++) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(sh, g_shard[s]);
        if (!e) continue;
        DataShardId *d = &id->shard[s];
        double t;
        if (num_field(e, "tokens", 1.8e19, &t) || num_field(e, "vocab_size", 4294967295.0, &v) ||
            str_field(e, "header_sha256", d->sha, sizeof d->sha))
            return -1;
        d->present = 1, d->tokens = (uint64_t)t, d->vocab = (uint32_t)v;
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "sha256"); /* absent in runs recorded before it was kept */
        if (c && (!cJSON_IsString(c) || strlen(c->valuestring) != 64)) return -1;
        if (c) snprintf(d->content, sizeof d->content, "%s", c->valuestring);
    }
    return 0;
}

int dataid_of_run(const char *run_dir, DataId *id) {
    memset(id, 0, sizeof *id);
    char p[2300];
    cJSON *j;
    int have = read_json(p, sizeof p, run_dir, "data.json", &j);
    if (have <= 0) return have;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, "identity");
    int rc = !o ? 0 : from_json(o, id) == 0 ? 1 : gma_errorf("%s: key identity is malformed", p);
    cJSON_Delete(j);
    return rc;
}

static const char *or_none(const char *s) { return s[0] ? s : "none"; }

int dataid_diff(const DataId *want, const DataId *have, int shards, char *out, size_t cap) {
    if (strcmp(want->tokenizer, have->tokenizer))
        return snprintf(out, cap, "tokenizer %s there, %s here", or_none(want->tokenizer), or_none(have->tokenizer)), 1;
    if (want->vocab != have->vocab) return snprintf(out, cap, "vocabulary %u there, %u here", want->vocab, have->vocab), 1;
    if (want->tok_sha[0] && have->tok_sha[0] && strcmp(want->tok_sha, have->tok_sha))
        return snprintf(out, cap, "tokenizer files sha256 %.12s there, %.12s here", or_none(want->tok_sha),
                        or_none(have->tok_sha)),
               1;
    for (int s = 0; shards && s < 3; s++) {
        const DataShardId *a = &want->shard[s], *b = &have->shard[s];
        if (a->present != b->present)
            return snprintf(out, cap, "%s %s there, %s here", g_shard[s], a->present ? "present" : "absent",
                            b->present ? "present" : "absent"),
                   1;
        if (a->present && strcmp(a->sha, b->sha))
            return snprintf(out, cap, "%s of %llu tokens there, %llu here (header sha256 %.12s, %.12s)", g_shard[s],
                            (unsigned long long)a->tokens, (unsigned long long)b->tokens, a->sha, b->sha),
                   1;
        if (a->present && a->content[0] && b->content[0] && strcmp(a->content, b->content))
            return snprintf(out, cap, "%s of %llu tokens in both, other tokens (sha256 %.12s there, %.12s here, "
                            "meta.json's manifest)", g_shard[s], (unsigned long long)a->tokens, a->content, b->content),
                   1;
    }
    return 0;
}

int dataid_check(const char *run, const char *data_dir, const char *file, int shards, char *what, size_t cap) {
    DataId want, have;
    int got = dataid_of_run(run, &want);
    if (got <= 0) return got;
    if ((file ? dataid_of_file(file, &have) : dataid_of_dir(data_dir, &have)) != 0) return -1;
    if (file && !have.tokenizer[0]) /* a bare shard: its vocabulary alone */
        snprintf(have.tokenizer, sizeof have.tokenizer, "%s", want.tokenizer);
    return dataid_diff(&want, &have, shards, what, cap) ? 2 : 1;
}
