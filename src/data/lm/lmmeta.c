/* lmmeta.c: tokenizer files in meta.json, a run's data.json and the lookup of a moved
 * data directory (see lmmeta.h). */
#include "data/lm/lmmeta.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/lm/dataid.h"

/* the folder part of path ("." when there is none) */
static void dir_of(const char *path, char *out, size_t cap) {
    snprintf(out, cap, "%s", path);
    char *s = strrchr(out, '/');
    if (s == out) s[1] = 0;
    else if (s) *s = 0;
    else snprintf(out, cap, ".");
}

static char *json_text(cJSON *o) {
    char *t = cJSON_Print(o);
    size_t n = strlen(t);
    t = xrealloc(t, n + 2);
    t[n] = '\n';
    t[n + 1] = 0;
    return t;
}

int lmmeta_save_tokenizer(cJSON *meta, const Tokenizer *tk, const char *base, const char *sub) {
    char dir[2200];
    int has_sub = sub && sub[0];
    if (has_sub) snprintf(dir, sizeof dir, "%s/%s", base, sub);
    else snprintf(dir, sizeof dir, "%s", base);
    TokenizerKind k = tokenizer_kind(tk);
    if (k != TOK_BYTES && (gma_mkdirs(dir) != 0 || tokenizer_save(tk, dir) != 0)) return -1;
    static const char *const bpe_files[] = {"encoder.json", "vocab.bpe"}, *const word_files[] = {"vocab.txt"};
    const char *const *files = k == TOK_WORD ? word_files : bpe_files;
    int n = k == TOK_BYTES ? 0 : k == TOK_WORD ? 1 : 2;
    if (!cJSON_GetObjectItemCaseSensitive(meta, "tokenizer")) cJSON_AddStringToObject(meta, "tokenizer", tokenizer_spec(tk));
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "tokenizer_files");
    cJSON *arr = cJSON_AddArrayToObject(meta, "tokenizer_files");
    for (int i = 0; i < n; i++) {
        char rel[300];
        snprintf(rel, sizeof rel, "%s%s%s", has_sub ? sub : "", has_sub ? "/" : "", files[i]);
        cJSON_AddItemToArray(arr, cJSON_CreateString(rel));
    }
    return 0;
}

/* The tokenizer of spec from the files listed (relative to base): they sit in one folder. */
static Tokenizer *from_files(const char *meta_path, const char *spec, const cJSON *files, const char *base) {
    int n = cJSON_GetArraySize(files);
    if (!strncmp(spec, "bytes", 5) || n == 0) return tokenizer_load(spec, base);
    char first[2400], fdir[2400], s[2500];
    for (int i = 0; i < n; i++) {
        const cJSON *f = cJSON_GetArrayItem(files, i);
        if (!cJSON_IsString(f)) {
            gma_errorf("%s: key tokenizer_files[%d] is not a string", meta_path, i);
            return NULL;
        }
        snprintf(first, sizeof first, "%s/%s", base, f->valuestring);
        if (!gma_path_exists(first)) {
            gma_errorf("%s: key tokenizer_files: %s is missing", meta_path, first);
            return NULL;
        }
    }
    snprintf(first, sizeof first, "%s/%s", base, cJSON_GetArrayItem(files, 0)->valuestring);
    dir_of(first, fdir, sizeof fdir);
    if (!strcmp(spec, "gpt2")) return tokenizer_load("gpt2", fdir);
    if (!strncmp(spec, "bpe:", 4)) {
        snprintf(s, sizeof s, "bpe:%s", fdir);
        return tokenizer_load(s, NULL);
    }
    if (!strncmp(spec, "word", 4)) {
        snprintf(s, sizeof s, "word:%s", first);
        return tokenizer_load(s, NULL);
    }
    gma_errorf("%s: key tokenizer: unknown tokenizer \"%s\"", meta_path, spec);
    return NULL;
}

Tokenizer *lmmeta_tokenizer(const char *meta_path) {
    char *text = gma_read_file(meta_path, NULL);
    if (!text) return NULL;
    cJSON *j = cJSON_Parse(text);
    free(text);
    const cJSON *t = j ? cJSON_GetObjectItemCaseSensitive(j, "tokenizer") : NULL;
    const cJSON *files = j ? cJSON_GetObjectItemCaseSensitive(j, "tokenizer_files") : NULL;
    Tokenizer *tk = NULL;
    char base[2200];
    dir_of(meta_path, base, sizeof base);
    if (!j) gma_errorf("%s: not valid JSON", meta_path);
    else if (!cJSON_IsString(t)) gma_errorf("%s: no \"tokenizer\" string", meta_path);
    else if (cJSON_IsArray(files)) tk = from_files(meta_path, t->valuestring, files, base);
    else { /* an older meta.json: the spec alone */
        const char *dirs[2] = {base, "data/gpt2"};
        for (int i = 0; i < 2 && !tk; i++) tk = tokenizer_load(t->valuestring, dirs[i]);
        if (!tk) gma_error_prefix("%s: tokenizer \"%s\"", meta_path, t->valuestring);
    }
    cJSON_Delete(j);
    return tk;
}

int lmmeta_run_dir(const char *ckpt_dir, char *out, size_t cap) {
    char p[2300], parent[2200];
    dir_of(ckpt_dir, parent, sizeof parent);
    const char *cand[2] = {parent, ckpt_dir};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/data.json", cand[i]);
        if (gma_path_exists(p)) {
            snprintf(out, cap, "%s", cand[i]);
            return 0;
        }
    }
    snprintf(out, cap, "%s", parent);
    return -1;
}

int lmmeta_write_run(const char *run_dir, const char *user_path, const char *data_dir) {
    cJSON *o = cJSON_CreateObject();
    char abs[PATH_MAX], meta[2300];
    cJSON_AddStringToObject(o, "path", user_path);
    cJSON_AddStringToObject(o, "path_abs", realpath(data_dir, abs) ? abs : data_dir);
    snprintf(meta, sizeof meta, "%s/meta.json", data_dir);
    DataId id;
    int rc = dataid_of_dir(data_dir, &id);
    if (!rc) cJSON_AddItemToObject(o, "identity", dataid_to_json(&id));
    if (!rc && gma_path_exists(meta)) {
        Tokenizer *tk = lmmeta_tokenizer(meta);
        if (tk) rc = lmmeta_save_tokenizer(o, tk, run_dir, "tokenizer");
        else gma_error_clear(); /* a data set without a tokenizer: samples are ids */
        tokenizer_free(tk);
    }
    if (!rc) {
        char *t = json_text(o), p[2300];
        snprintf(p, sizeof p, "%s/data.json", run_dir);
        rc = gma_write_file_atomic(p, t, strlen(t));
        free(t);
    }
    cJSON_Delete(o);
    return rc;
}

int lmmeta_update_location(const char *run_dir, const char *user_path, const char *data_dir) {
    char p[2300], abs[PATH_MAX];
    snprintf(p, sizeof p, "%s/data.json", run_dir);
    char *text = gma_read_file(p, NULL);
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return gma_errorf("%s: not valid JSON", p);
    }
    const char *now = realpath(data_dir, abs) ? abs : data_dir;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "path"), *b = cJSON_GetObjectItemCaseSensitive(o, "path_abs");
    if (cJSON_IsString(a) && cJSON_IsString(b) && !strcmp(a->valuestring, user_path) && !strcmp(b->valuestring, now)) {
        cJSON_Delete(o);
        return 0; /* not moved */
    }
    cJSON_DeleteItemFromObjectCaseSensitive(o, "path");
    cJSON_DeleteItemFromObjectCaseSensitive(o, "path_abs");
    cJSON_AddStringToObject(o, "path", user_path);
    cJSON_AddStringToObject(o, "path_abs", now);
    char *t = json_text(o);
    int rc = gma_write_file_atomic(p, t, strlen(t));
    free(t);
    cJSON_Delete(o);
    return rc;
}

/* a data directory: meta.json or a shard in it */
static int is_data_dir(const char *dir) {
    static const char *const f[4] = {"meta.json", "train.bin", "valid.bin", "test.bin"};
    char p[2300];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, f[i]);
        if (gma_path_exists(p)) return 1;
    }
    return 0;
}

void lmmeta_run_field(const char *run_dir, const char *key, char *out, size_t cap) {
    char p[2300];
    out[0] = 0;
    snprintf(p, sizeof p, "%s/data.json", run_dir);
    char *text = gma_path_exists(p) ? gma_read_file(p, NULL) : NULL;
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key);
    if (cJSON_IsString(a)) snprintf(out, cap, "%s", a->valuestring);
    cJSON_Delete(j);
    free(text);
}

int lmmeta_find_data(const char *user_path, const char *run_dir, const char *override, const char *hint, char *out,
                     size_t cap) {
    char cand[4][2300], tried[4096] = "";
    int n = 0;
    if (override && override[0]) snprintf(cand[n++], sizeof cand[0], "%s", override);
    else {
        int run = run_dir && run_dir[0];
        if (run) lmmeta_run_field(run_dir, "path_abs", cand[n], sizeof cand[0]), n += cand[n][0] != 0;
        snprintf(cand[n++], sizeof cand[0], "%s", user_path);
        if (run && user_path[0] != '/') {
            char parent[2200], grand[2200];
            dir_of(run_dir, parent, sizeof parent);
            dir_of(parent, grand, sizeof grand);
            snprintf(cand[n++], sizeof cand[0], "%s/%s", parent, user_path);
            snprintf(cand[n++], sizeof cand[0], "%s/%s", grand, user_path);
        }
    }
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        int dup = 0;
        for (int k = 0; k < i; k++) dup |= !strcmp(cand[k], cand[i]);
        if (dup) continue;
        if (is_data_dir(cand[i])) {
            if (strlen(cand[i]) >= cap) return gma_errorf("key data.path: %s is longer than %zu bytes", cand[i], cap - 1);
            snprintf(out, cap, "%s", cand[i]);
            return 0;
        }
        used += (size_t)snprintf(tried + used, sizeof tried - GMA_MIN(used, sizeof tried), "%s%s", used ? ", " : "", cand[i]);
        if (used >= sizeof tried) used = sizeof tried - 1;
    }
    return gma_errorf("key data.path: no data directory (meta.json or shards) at %s; give the moved data with %s", tried,
                      hint);
}

Tokenizer *lmmeta_ckpt_tokenizer(const char *ckpt_dir, const char *data_dir) {
    char run[2200], p[2300];
    if (lmmeta_run_dir(ckpt_dir, run, sizeof run) == 0) {
        snprintf(p, sizeof p, "%s/data.json", run);
        Tokenizer *tk = lmmeta_tokenizer(p);
        if (tk) return tk;
        char why[1024];
        snprintf(why, sizeof why, "%s", gma_error());
        if (!data_dir) return gma_errorf("%s", why), NULL;
    }
    if (!data_dir) {
        gma_errorf("no tokenizer: the checkpoint's run has no data.json (RUN/tokenizer/) and its data is not found; give "
                   "one with --tokenizer gpt2 --vocab DIR (DIR with encoder.json and vocab.bpe), bpe:DIR, word:FILE or bytes");
        return NULL;
    }
    snprintf(p, sizeof p, "%s/meta.json", data_dir);
    return lmmeta_tokenizer(p);
}
