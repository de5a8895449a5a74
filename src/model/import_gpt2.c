/* import_gpt2.c: GPT-2 into a run folder (see import_gpt2.h): the source's format, the
 * tokenizer files, and the folder written under a temporary name and renamed. */
#include "model/import_gpt2.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/common.h"
#include "core/config.h"
#include "core/stale_tmp.h"
#include "data/lm/dataid.h"
#include "data/lm/lmmeta.h"
#include "data/text/tokenizer.h"
#include "model/checkpoint.h"
#include "model/gpt2_dest.h"

/* ---- tokenizer files: encoder.json + vocab.bpe (gmadata fetch gpt2), Hugging Face's
 * vocab.json + merges.txt (the same two files under other names), or Hugging Face's
 * tokenizer.json alone (model.vocab and model.merges in one file) ---- */

/* 1 when dir has a tokenizer as two files (names set), 2 when it has only Hugging Face's
 * tokenizer.json (enc set to it), 0 when it has none, -1 when it has half of a pair */
static int find_tokenizer(const char *dir, char *enc, char *merges, size_t cap) {
    static const char *const pairs[2][2] = {{"encoder.json", "vocab.bpe"}, {"vocab.json", "merges.txt"}};
    for (int i = 0; i < 2; i++) {
        snprintf(enc, cap, "%s/%s", dir, pairs[i][0]);
        snprintf(merges, cap, "%s/%s", dir, pairs[i][1]);
        int a = gma_path_exists(enc), b = gma_path_exists(merges);
        if (a && b) return 1;
        if (a || b)
            return gma_errorf("%s: %s without %s: GPT-2's tokenizer needs both", dir, a ? pairs[i][0] : pairs[i][1],
                              a ? pairs[i][1] : pairs[i][0]);
    }
    snprintf(enc, cap, "%s/tokenizer.json", dir);
    return gma_path_exists(enc) ? 2 : 0;
}

/* Hugging Face's tokenizer.json (a byte-level BPE: model.vocab {token: id}, model.merges
 * ["a b", ...] or [["a", "b"], ...]) as encoder.json and vocab.bpe in tdir. 0 or -1. */
static int split_tokenizer_json(const char *path, const char *tdir) {
    char *text = gma_read_file(path, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!j) return gma_errorf("%s: not valid JSON", path);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type"), *voc = cJSON_GetObjectItemCaseSensitive(m, "vocab");
    const cJSON *mer = cJSON_GetObjectItemCaseSensitive(m, "merges");
    if (!cJSON_IsObject(m) || (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "BPE"))) || !cJSON_IsObject(voc) ||
        !cJSON_IsArray(mer)) {
        cJSON_Delete(j);
        return gma_errorf("%s: key model: want a BPE with model.vocab (an object) and model.merges (a list), as GPT-2's", path);
    }
    int rc = 0, i = 0;
    char *vs = cJSON_PrintUnformatted(voc);
    size_t cap = 1 << 16, n = 0;
    char *mb = xmalloc(cap);
    n = (size_t)snprintf(mb, cap, "#version: 0.2\n");
    const cJSON *e;
    cJSON_ArrayForEach(e, mer) {
        const cJSON *a = cJSON_IsArray(e) ? cJSON_GetArrayItem(e, 0) : NULL, *b = cJSON_IsArray(e) ? cJSON_GetArrayItem(e, 1) : NULL;
        const char *one = cJSON_IsString(e) ? e->valuestring : NULL;
        if (!one && !(cJSON_IsString(a) && cJSON_IsString(b) && cJSON_GetArraySize(e) == 2)) {
            rc = gma_errorf("%s: key model.merges[%d]: want \"LEFT RIGHT\" or [\"LEFT\", \"RIGHT\"]", path, i);
            break;
        }
        size_t l = one ? strlen(one) : strlen(a->valuestring) + 1 + strlen(b->valuestring);
        if (n + l + 2 > cap) mb = xrealloc(mb, cap = (cap + l) * 2);
        if (one) n += (size_t)snprintf(mb + n, cap - n, "%s\n", one);
        else n += (size_t)snprintf(mb + n, cap - n, "%s %s\n", a->valuestring, b->valuestring);
        i++;
    }
    char a[2400], b[2400];
    snprintf(a, sizeof a, "%s/encoder.json", tdir);
    snprintf(b, sizeof b, "%s/vocab.bpe", tdir);
    if (!rc && (gma_write_file_atomic(a, vs, strlen(vs)) != 0 || gma_write_file_atomic(b, mb, n) != 0)) rc = -1;
    cJSON_free(vs);
    free(mb);
    cJSON_Delete(j);
    return rc;
}

/* Copy the source folder's tokenizer into run/tokenizer/ (written as the tokenizer writes
 * its files, as gmadata prepare does) and write run/data.json naming it, with the identity
 * a trained run records (the tokenizer's kind, vocabulary and files' digest; dataid.h), so
 * gmaeval refuses shards of another tokenizer. 0 (also when there is none), or -1. */
static int write_tokenizer(const char *src_dir, const char *run, int V, int *written) {
    char enc[2200], merges[2200], tdir[2200], a[2300], b[2300];
    int have = find_tokenizer(src_dir, enc, merges, sizeof enc);
    *written = 0;
    if (have <= 0) return have;
    snprintf(tdir, sizeof tdir, "%s/tokenizer", run);
    snprintf(a, sizeof a, "%s/encoder.json", tdir);
    snprintf(b, sizeof b, "%s/vocab.bpe", tdir);
    /* the loader reads encoder.json + vocab.bpe from a folder: other names are staged in
     * tdir first, then overwritten by the tokenizer's own files */
    int direct = have == 1 && !strcmp(strrchr(enc, '/'), "/encoder.json");
    if (gma_mkdirs(tdir) != 0) return -1;
    if (!direct &&
        (have == 2 ? split_tokenizer_json(enc, tdir) != 0 : gma_copy_file(enc, a) != 0 || gma_copy_file(merges, b) != 0))
        return -1;
    Tokenizer *tk = tokenizer_load("gpt2", direct ? src_dir : tdir);
    if (!tk) return gma_error_prefix("%s: tokenizer", src_dir);
    uint32_t tv = tokenizer_vocab_size(tk);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", GPT2_DATA);
    cJSON_AddStringToObject(o, "path_abs", "");
    cJSON_AddStringToObject(o, "tokenizer", "gpt2");
    int rc = (int)tv != V ? gma_errorf("%s: the tokenizer has %u tokens, the model's vocabulary %d", enc, tv, V)
                          : lmmeta_save_tokenizer(o, tk, run, "tokenizer"); /* written as gmadata prepare writes it */
    tokenizer_free(tk);
    DataId id = {.tokenizer = "gpt2", .vocab = (uint32_t)V};
    /* the digest a data set prepared with this tokenizer records for its files (dataid.h) */
    static const char *const tok_files[2] = {"encoder.json", "vocab.bpe"};
    if (!rc && dataid_files_sha(tdir, tok_files, 2, id.tok_sha) != 0) rc = gma_errorf("%s: cannot read the tokenizer files", tdir);
    if (rc) {
        cJSON_Delete(o);
        return -1;
    }
    cJSON_AddItemToObject(o, "identity", dataid_to_json(&id));
    char *js = cJSON_Print(o);
    cJSON_Delete(o);
    snprintf(a, sizeof a, "%s/data.json", run);
    rc = gma_write_file_atomic(a, js, strlen(js));
    cJSON_free(js);
    if (rc) return -1;
    *written = 1;
    return 0;
}

/* ---- the run folder ---- */

/* empty dir of files (this import's temporary folder: nothing else writes there) and remove it */
static void clear_files(const char *dir) {
    DIR *dr = opendir(dir);
    if (!dr) return;
    struct dirent *e;
    char p[2400];
    while ((e = readdir(dr)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(dr);
    rmdir(dir);
}

/* remove the temporary folder: tokenizer/, then the files (finished or cut short) */
static void remove_tmp(const char *dir) {
    char p[2300];
    snprintf(p, sizeof p, "%s/tokenizer", dir);
    clear_files(p);
    clear_files(dir);
}

/* 0 when out does not exist or is an empty folder */
static int check_out(const char *out) {
    struct stat st;
    if (stat(out, &st) != 0) return errno == ENOENT ? 0 : gma_errorf("%s: %s", out, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return gma_errorf("--out %s exists and is not a folder", out);
    DIR *dr = opendir(out);
    if (!dr) return gma_errorf("%s: %s", out, strerror(errno));
    struct dirent *e;
    int n = 0;
    while ((e = readdir(dr)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(dr);
    return n ? gma_errorf("--out %s exists and is not empty: refusing to write over it", out) : 0;
}

/* the source: a folder with model.safetensors, a .safetensors file (config.json beside
 * it) or an llm.c file; fills the model and the folder the tokenizer is looked up in */
static int read_source(const char *from, Gpt2Dest *d, Gpt2Info *info, char *src_dir, size_t cap) {
    struct stat st;
    char st_path[2200], cfg_path[2200];
    if (stat(from, &st) != 0) return gma_errorf("%s: %s", from, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        snprintf(src_dir, cap, "%s", from);
        snprintf(st_path, sizeof st_path, "%s/model.safetensors", from);
        if (!gma_path_exists(st_path))
            return gma_errorf("%s: no model.safetensors in this folder (a Hugging Face GPT-2 folder, or give the llm.c .bin)",
                              from);
    } else {
        snprintf(src_dir, cap, "%s", from);
        char *slash = strrchr(src_dir, '/');
        if (slash) *slash = 0;
        else snprintf(src_dir, cap, ".");
        size_t n = strlen(from);
        if (!(n > 12 && !strcmp(from + n - 12, ".safetensors"))) {
            d->src = from;
            return gpt2_read_llmc(from, d, info);
        }
        snprintf(st_path, sizeof st_path, "%s", from);
    }
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", src_dir);
    d->src = st_path;
    return gpt2_read_hf(st_path, cfg_path, d, info);
}

/* write config.json, model.safetensors and the tokenizer into tmp */
static int write_run(Gpt2Dest *d, const char *tmp, const char *src_dir, Gpt2Info *info) {
    char p[2300];
    char *js = cfg_to_json(&d->m.cfg);
    snprintf(p, sizeof p, "%s/config.json", tmp);
    int rc = gma_write_file_atomic(p, js, strlen(js));
    free(js);
    if (!rc) rc = ckpt_write_model(&d->m, d->host, tmp);
    if (!rc) rc = write_tokenizer(src_dir, tmp, info->V, &info->tokenizer);
    return rc;
}

int gpt2_import(const char *from, const char *out_arg, Gpt2Info *info) {
    Gpt2Info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    char out[2048], parent[2048], tmp[2200], src_dir[2200];
    snprintf(out, sizeof out, "%s", out_arg);
    for (size_t n = strlen(out); n > 1 && out[n - 1] == '/'; n--) out[n - 1] = 0; /* RUN/ is RUN */
    if (check_out(out) != 0) return -1;
    /* the temporary folders of imports into out that were killed (out.tmp.PID, PID gone) */
    snprintf(parent, sizeof parent, "%s", out);
    char *slash = strrchr(parent, '/');
    const char *base = slash ? slash + 1 : out;
    if (slash == parent) snprintf(parent, sizeof parent, "/");
    else if (slash) *slash = 0;
    else snprintf(parent, sizeof parent, ".");
    int swept = stale_tmp_sweep(parent, &base, 1);
    if (swept < 0) return -1;
    info->swept = swept;
    Gpt2Dest d = {0};
    int rc = read_source(from, &d, info, src_dir, sizeof src_dir);
    if (!rc) {
        info->params = (long)d.m.pt.total;
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", out, (int)getpid());
        remove_tmp(tmp);
        rc = gma_mkdirs(tmp);
        if (!rc) rc = write_run(&d, tmp, src_dir, info);
        if (!rc && gma_path_exists(out) && rmdir(out) != 0) rc = gma_errorf("%s: %s", out, strerror(errno));
        if (!rc && rename(tmp, out) != 0) rc = gma_errorf("%s: cannot rename %s to it: %s", out, tmp, strerror(errno));
        if (rc) remove_tmp(tmp);
    }
    gpt2_dest_free(&d);
    return rc;
}

/* ---- the folder rules, for the export too (export_gpt2.c) ---- */

int gpt2_check_out(const char *out) { return check_out(out); }

void gpt2_remove_tmp(const char *dir) { remove_tmp(dir); }
