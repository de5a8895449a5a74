/* export_gpt2.c: a GPT-2-shaped run as GPT-2's files (see export_gpt2.h): the checks that
 * the run computes GPT-2's function, its parameters, its tokenizer, and the outputs
 * written under temporary names and renamed at the end. The writers of the two formats
 * are export_gpt2_hf.c and export_gpt2_llmc.c. */
#include "model/export_gpt2.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "core/config.h"
#include "data/lm/lmmeta.h"
#include "data/text/tokenizer.h"
#include "model/checkpoint.h"
#include "model/import_gpt2.h"
#include "nn/model_cfg.h"

/* ---- is the run GPT-2? one line naming the key or the layer when it is not ---- */

/* the keys whose value must be GPT-2's, looked up in the resolved config by name, so a key
 * this build does not have (an older or newer one) is skipped and the model table's check
 * below still holds the line */
static const struct {
    const char *key, *want, *why;
} GPT2_KEYS[] = {
    {"cross.mixer", "none", "GPT-2 has no cross-attention"},
    {"model.pos", "learned", "GPT-2 has learned positions"},
    {"model.mlp", "true", "GPT-2 has an MLP in every block"},
    {"model.attn_bias", "true", "GPT-2's attention projections have biases"},
    {"model.short_conv", "0", "GPT-2 has no short convolutions"},
    {"model.stem", "none", "GPT-2 has no stem"},
    {"model.norm", "layernorm", "GPT-2's norms are LayerNorm with a bias"},
    {"model.mlp_act", "gelu", "GPT-2's MLP is fc, the tanh GELU, proj, with biases"},
    {"model.tie_embeddings", "true", "GPT-2's head is tied to wte (neither format holds another)"},
    {"sdpa.window", "0", "GPT-2 attends to every earlier position"},
};

/* the value of key "a.b" in the config's JSON as text into out; 0 when there is no such key */
static int json_value(const cJSON *root, const char *key, char *out, size_t cap) {
    char part[64];
    const cJSON *v = root;
    for (const char *p = key; v && *p;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        snprintf(part, sizeof part, "%.*s", (int)n, p);
        v = cJSON_GetObjectItemCaseSensitive(v, part);
        p += n + (dot != NULL);
    }
    if (!v) return 0;
    if (cJSON_IsString(v)) snprintf(out, cap, "%s", v->valuestring);
    else if (cJSON_IsBool(v)) snprintf(out, cap, "%s", cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNumber(v)) snprintf(out, cap, "%g", v->valuedouble);
    else snprintf(out, cap, "?");
    return 1;
}

static int check_keys(const Config *c, const char *run) {
    char *text = cfg_to_json(c);
    cJSON *j = cJSON_Parse(text);
    free(text);
    char v[128];
    int rc = 0;
    for (size_t i = 0; !rc && i < sizeof GPT2_KEYS / sizeof *GPT2_KEYS; i++)
        if (json_value(j, GPT2_KEYS[i].key, v, sizeof v) && strcmp(v, GPT2_KEYS[i].want))
            rc = gma_errorf("%s: %s is %s: %s (%s %s)", run, GPT2_KEYS[i].key, v, GPT2_KEYS[i].why, GPT2_KEYS[i].key,
                            GPT2_KEYS[i].want);
    cJSON_Delete(j);
    return rc;
}

static int check_config(const Config *c, const char *run) {
    const ModelCfg *m = &c->model;
    if (m->task != MODEL_LM) return gma_errorf("%s: model.task is %s: GPT-2 is a language model", run, cfg_enum_name(c, "model.task"));
    for (int l = 0; l < m->n_layers; l++) {
        const char *mx = cfg_layer_mixer(c, l);
        if (strcmp(mx, "sdpa") && strcmp(mx, "sdpa_ref"))
            return gma_errorf("%s: layer %d is %s: GPT-2 has softmax attention in every layer (model.mixer sdpa)", run, l, mx);
    }
    if (!cfg_causal(c)) return gma_errorf("%s: model.causal is 0: GPT-2's attention is causal", run);
    if (check_keys(c, run) != 0) return -1;
    if (cfg_d_ff(c) != 4 * m->d_model)
        return gma_errorf("%s: model.d_ff is %d: GPT-2's MLP is 4 d_model = %d wide", run, cfg_d_ff(c), 4 * m->d_model);
    if (cfg_qkv_dim(c) != m->d_model)
        return gma_errorf("%s: model.qkv_dim is %d: GPT-2's q, k, v are d_model = %d wide", run, cfg_qkv_dim(c), m->d_model);
    if (m->vocab_size < 1) return gma_errorf("%s: model.vocab_size is %d: the config has no vocabulary", run, m->vocab_size);
    return 0;
}

/* tensor i of GPT-2 (i < 4 + GPT2_BLOCK_TENSORS L) in this project's names: its name and elements */
static void gpt2_tensor(const Gpt2Info *s, int i, char *name, size_t cap, size_t *numel) {
    static const char *const top[4] = {"tok_emb.weight", "pos_emb.weight", "ln_f.weight", "ln_f.bias"};
    size_t D = (size_t)s->D;
    if (i < 4) {
        snprintf(name, cap, "%s", top[i]);
        *numel = i == 0 ? (size_t)s->V * D : i == 1 ? (size_t)s->T * D : D;
        return;
    }
    char fmt[96];
    gpt2_block_tensor((i - 4) % GPT2_BLOCK_TENSORS, D, fmt, sizeof fmt, numel);
    snprintf(name, cap, fmt, (i - 4) / GPT2_BLOCK_TENSORS);
}

/* the model's tensors are GPT-2's, no more and no fewer (whatever key made them) */
static int check_tensors(const ParamTable *pt, const Gpt2Info *s, const char *run) {
    int n = 4 + GPT2_BLOCK_TENSORS * s->L;
    char name[128];
    size_t numel;
    for (int i = 0; i < n; i++) {
        gpt2_tensor(s, i, name, sizeof name, &numel);
        int k = pt_find(pt, name);
        if (k < 0) return gma_errorf("%s: the model has no tensor %s: not GPT-2's block", run, name);
        if (pt->t[k].numel != numel)
            return gma_errorf("%s: tensor %s has %zu elements, GPT-2's has %zu", run, name, pt->t[k].numel, numel);
    }
    if (pt->n != n)
        for (int k = 0; k < pt->n; k++) {
            int found = 0;
            for (int i = 0; i < n && !found; i++) {
                gpt2_tensor(s, i, name, sizeof name, &numel);
                found = !strcmp(name, pt->t[k].name);
            }
            if (!found) return gma_errorf("%s: tensor %s is not part of GPT-2", run, pt->t[k].name);
        }
    return 0;
}

/* ---- the run ---- */

/* the checkpoint's config, checked, and its parameters into d */
static int read_run(const char *from, Gpt2Dest *d, Gpt2Info *s, char *ckdir, size_t cap) {
    Config c;
    if (ckpt_open_config(from, "cpu", 1, ckdir, cap, &c) != 0) return -1;
    if (check_config(&c, from) != 0) return -1;
    s->L = c.model.n_layers, s->D = c.model.d_model, s->H = c.model.n_heads, s->V = c.model.vocab_size;
    s->T = c.model.max_seq_len;
    if (model_build(&d->m, &c) != 0) return -1;
    d->built = 1;
    if (check_tensors(&d->m.pt, s, from) != 0) return -1;
    d->host = xcalloc(d->m.pt.total, sizeof(real));
    for (int k = 0; k < d->m.pt.n; k++) s->params += (long)d->m.pt.t[k].numel;
    return ckpt_read_params(&d->m.pt, d->host, ckdir);
}

/* the run's GPT-2 tokenizer (RUN/data.json "tokenizer": "gpt2", its tokenizer_files): the
 * folder holding encoder.json + vocab.bpe into dir, 1; 0 when the run has none or another
 * tokenizer; -1 when its files are missing or its vocabulary is not the model's */
static int run_tokenizer(const char *ckdir, int V, char *dir, size_t cap) {
    char run[2200], p[2300];
    if (lmmeta_run_dir(ckdir, run, sizeof run) != 0) return 0;
    snprintf(p, sizeof p, "%s/data.json", run);
    char *text = gma_read_file(p, NULL);
    if (!text) return -1;
    cJSON *j = cJSON_Parse(text);
    free(text);
    const cJSON *tk = cJSON_GetObjectItemCaseSensitive(j, "tokenizer"), *fs = cJSON_GetObjectItemCaseSensitive(j, "tokenizer_files");
    const cJSON *f0 = cJSON_GetArrayItem(fs, 0);
    int have = cJSON_IsString(tk) && !strcmp(tk->valuestring, "gpt2") && cJSON_IsString(f0);
    if (have) {
        snprintf(dir, cap, "%s/%s", run, f0->valuestring);
        char *slash = strrchr(dir, '/');
        *slash = 0;
    }
    cJSON_Delete(j);
    if (!have) return 0;
    Tokenizer *t = tokenizer_load("gpt2", dir);
    if (!t) return gma_error_prefix("%s: key tokenizer_files", p);
    uint32_t tv = tokenizer_vocab_size(t);
    tokenizer_free(t);
    if ((int)tv != V) return gma_errorf("%s: the run's tokenizer has %u tokens, the model's vocabulary %d", p, tv, V);
    return 1;
}

/* the Hugging Face folder into tmp: config.json, model.safetensors, vocab.json + merges.txt */
static int write_hf_dir(Gpt2Dest *d, Gpt2Info *s, const char *tmp, const char *tok_dir) {
    if (gma_mkdirs(tmp) != 0 || gpt2_write_hf(d, s, tmp) != 0) return -1;
    if (!tok_dir[0]) return 0;
    char a[2300], b[2300];
    snprintf(a, sizeof a, "%s/encoder.json", tok_dir);
    snprintf(b, sizeof b, "%s/vocab.json", tmp);
    if (gma_copy_file(a, b) != 0) return -1;
    snprintf(a, sizeof a, "%s/vocab.bpe", tok_dir);
    snprintf(b, sizeof b, "%s/merges.txt", tmp);
    if (gma_copy_file(a, b) != 0) return -1;
    s->tokenizer = 1;
    return 0;
}

/* the targets: out must not exist or be empty, llmc must not exist */
static int check_targets(const char *out, const char *llmc) {
    if (!out && !llmc) return gma_errorf("nothing to write: give --out DIR, --llmc FILE.bin or both");
    if (out && gpt2_check_out(out) != 0) return -1;
    struct stat st;
    if (llmc && stat(llmc, &st) == 0) return gma_errorf("--llmc %s exists: refusing to write over it", llmc);
    if (llmc && errno != ENOENT) return gma_errorf("%s: %s", llmc, strerror(errno));
    return 0;
}

int gpt2_export(const char *from, const char *out_arg, const char *llmc, Gpt2Info *info) {
    Gpt2Info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    char out_buf[2048];
    const char *out = NULL;
    if (out_arg) { /* HF_DIR/ is HF_DIR: the temporary folder goes beside it, not into it */
        snprintf(out_buf, sizeof out_buf, "%s", out_arg);
        for (size_t n = strlen(out_buf); n > 1 && out_buf[n - 1] == '/'; n--) out_buf[n - 1] = 0;
        out = out_buf;
    }
    if (check_targets(out, llmc) != 0) return -1;
    Gpt2Dest d = {.src = from};
    char ckdir[2200], tok_dir[2200] = "", tmp[2200] = "", tmp_llmc[2200] = "";
    int rc = read_run(from, &d, info, ckdir, sizeof ckdir);
    if (!rc && out) {
        int have = run_tokenizer(ckdir, info->V, tok_dir, sizeof tok_dir);
        if (have <= 0) tok_dir[0] = 0;
        rc = have < 0;
    }
    snprintf(info->format, sizeof info->format, "%s%s%s", out ? "hugging face" : "", out && llmc ? ", " : "",
             llmc ? "llm.c v3" : "");
    if (!rc && out) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", out, (int)getpid());
        gpt2_remove_tmp(tmp);
        rc = write_hf_dir(&d, info, tmp, tok_dir);
    }
    if (!rc && llmc) {
        snprintf(tmp_llmc, sizeof tmp_llmc, "%s.tmp.%d", llmc, (int)getpid());
        rc = gpt2_write_llmc(&d, info, tmp_llmc);
    }
    if (!rc && out && gma_path_exists(out) && rmdir(out) != 0) rc = gma_errorf("%s: %s", out, strerror(errno));
    if (!rc && out && rename(tmp, out) != 0) rc = gma_errorf("%s: cannot rename %s to it: %s", out, tmp, strerror(errno));
    if (!rc && llmc && rename(tmp_llmc, llmc) != 0)
        rc = gma_errorf("%s: cannot rename %s to it: %s", llmc, tmp_llmc, strerror(errno));
    if (rc && tmp[0]) gpt2_remove_tmp(tmp);
    if (rc && tmp_llmc[0]) unlink(tmp_llmc);
    gpt2_dest_free(&d);
    return rc;
}
