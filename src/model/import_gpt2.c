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

#include "core/common.h"
#include "core/config.h"
#include "data/text/tokenizer.h"
#include "model/checkpoint.h"
#include "model/gpt2_dest.h"

/* ---- tokenizer files: encoder.json + vocab.bpe (gmadata fetch gpt2), or Hugging Face's
 * vocab.json + merges.txt (the same two files under other names) ---- */

static int copy_file(const char *from, const char *to) {
    size_t n;
    char *b = gma_read_file(from, &n);
    if (!b) return -1;
    int rc = gma_write_file_atomic(to, b, n);
    free(b);
    return rc;
}

/* 1 when dir has a tokenizer (names set), 0 when it has none, -1 when it has half of one */
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
    return 0;
}

/* Copy the source folder's tokenizer into run/tokenizer/ and write run/data.json naming it
 * (as a trained run's, lmmeta.h). 0 (also when there is none), or -1. */
static int write_tokenizer(const char *src_dir, const char *run, int V, int *written) {
    char enc[2200], merges[2200], tdir[2200], a[2300], b[2300];
    int have = find_tokenizer(src_dir, enc, merges, sizeof enc);
    *written = 0;
    if (have <= 0) return have;
    snprintf(tdir, sizeof tdir, "%s/tokenizer", run);
    snprintf(a, sizeof a, "%s/encoder.json", tdir);
    snprintf(b, sizeof b, "%s/vocab.bpe", tdir);
    if (gma_mkdirs(tdir) != 0 || copy_file(enc, a) != 0 || copy_file(merges, b) != 0) return -1;
    Tokenizer *tk = tokenizer_load("gpt2", tdir);
    if (!tk) return gma_error_prefix("%s: tokenizer", src_dir);
    uint32_t tv = tokenizer_vocab_size(tk);
    tokenizer_free(tk);
    if ((int)tv != V)
        return gma_errorf("%s: the tokenizer has %u tokens, the model's vocabulary %d", enc, tv, V);
    const char *js = "{\n  \"path\": \"" GPT2_DATA "\",\n  \"path_abs\": \"\",\n  \"tokenizer\": \"gpt2\",\n"
                     "  \"tokenizer_files\": [\"tokenizer/encoder.json\", \"tokenizer/vocab.bpe\"]\n}\n";
    snprintf(a, sizeof a, "%s/data.json", run);
    if (gma_write_file_atomic(a, js, strlen(js)) != 0) return -1;
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

int gpt2_import(const char *from, const char *out, Gpt2Info *info) {
    Gpt2Info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    if (check_out(out) != 0) return -1;
    Gpt2Dest d = {0};
    char src_dir[2200], tmp[2200];
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
