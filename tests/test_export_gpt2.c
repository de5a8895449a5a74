/* test_export_gpt2.c: `gmadata export gpt2` (docs/data.md, "Exporting GPT-2"): the fixture
 * of tests/fixtures/gpt2 imported and exported gives back the fixture's llm.c file byte
 * for byte and its Hugging Face tensors bit for bit, and importing the export gives every
 * tensor of the first import; a random GPT-2-shaped run exported in both forms loads into
 * a float64 GPT-2 forward written here from the Hugging Face module and llm.c's layout
 * (the two forms give the same weights), whose loss on a sequence is gmaeval's within a
 * float32 bound; the run's GPT-2 tokenizer goes out as vocab.json + merges.txt; refusals
 * (a gma layer, other positions, no MLP, no attention biases, another d_ff, short
 * convolutions, RMSNorm, SwiGLU, an untied head, a sliding window (these four where the
 * build has their keys, else a "SKIP: " line), a missing tensor or run, an existing --out
 * or --llmc, a tokenizer of another vocabulary) exit 2 with one line naming what and
 * write nothing. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rng.h"
#include "core/safetensors.h"
#include "data/lm/shard.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "testutil.h"

#define FIX "tests/fixtures/gpt2"
#define U32 5.9604644775390625e-8 /* float32's unit roundoff 2^-24 */
/* a path under the test folder that outlives tu_path's eight rotating buffers */
#define PATH(var, name)  \
    char var[1100];      \
    snprintf(var, sizeof var, "%s", tu_path(name))

static char *slurp(const char *path, size_t *n) {
    char *b = gma_read_file(path, n);
    ck_assert_msg(b != NULL, "%s: cannot read", path);
    return b;
}

static void same_file(const char *a, const char *b) {
    size_t nx, ny;
    char *x = slurp(a, &nx), *y = slurp(b, &ny);
    ck_assert_msg(nx == ny && memcmp(x, y, nx) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

/* ---- runs of this project, written without training ---- */

/* a run folder (config.json + a step-0 model.safetensors, as an import writes) of a GPT-2
 * shape of vocabulary V with the extra config sets; every tensor random (weights N(0,
 * 0.3^2), biases N(0, 0.1^2), LayerNorm gains 1 + N(0, 0.1^2)) so each one moves the loss */
static void make_run(const char *dir, int V, const char *sets) {
    Config c;
    cfg_defaults(&c);
    char base[512];
    snprintf(base, sizeof base,
             "model.vocab_size=%d;model.d_model=16;model.n_heads=2;model.n_layers=2;model.max_seq_len=16;"
             "train.seq_len=16;model.mixer=sdpa;model.pos=learned;data.source=shards;data.path=none%s%s",
             V, sets ? ";" : "", sets ? sets : "");
    tu_apply_sets(&c, base);
    Model m;
    ck_assert_msg(model_build(&m, &c) == 0, "%s", gma_error());
    real *host = calloc(m.pt.total, sizeof(real));
    Rng r;
    rng_seed(&r, 20241205);
    for (int k = 0; k < m.pt.n; k++) {
        const ParamInfo *t = &m.pt.t[k];
        int gain = strstr(t->name, "ln") && strstr(t->name, ".weight");
        for (size_t i = 0; i < t->numel; i++)
            host[t->offset + i] = (real)(gain ? 1 + 0.1 * rng_normal(&r) : t->ndim == 1 ? 0.1 * rng_normal(&r) : 0.3 * rng_normal(&r));
    }
    ck_assert_int_eq(gma_mkdirs(dir), 0);
    char p[2300];
    char *js = cfg_to_json(&c);
    snprintf(p, sizeof p, "%s/config.json", dir);
    tu_write(p, js);
    free(js);
    ck_assert_msg(ckpt_write_model(&m, host, dir) == 0, "%s", gma_error());
    free(host);
    model_free(&m);
}

static int export(const char *from, const char *out, const char *llmc) {
    char o[2300] = "", l[2300] = "";
    if (out) snprintf(o, sizeof o, " --out %s", out);
    if (llmc) snprintf(l, sizeof l, " --llmc %s", llmc);
    return run("./bin/gmadata export gpt2 --from %s%s%s", from, o, l);
}

static int import(const char *from, const char *out) {
    return run("./bin/gmadata import gpt2 --from %s --out %s --quiet", from, out);
}

/* a refusal: exit 2, one line naming w1 and w2 (may be NULL), nothing at out or llmc, no
 * temporary file left */
static void refused(const char *from, const char *out, const char *llmc, const char *w1, const char *w2) {
    int rc = export(from, out, llmc);
    ck_assert_msg(rc == 2, "%s: exit %d, want 2: %s", from, rc, g_out);
    const char *nl = strchr(g_out, '\n');
    ck_assert_msg(nl && nl[1] == 0, "%s: want one line: %s", from, g_out);
    ck_assert_msg(strstr(g_out, w1) && (!w2 || strstr(g_out, w2)), "%s: the line names neither '%s' nor '%s': %s", from, w1,
                  w2 ? w2 : "", g_out);
    ck_assert_int_eq(run("ls -a %s | grep -c tmp", tu_tmpdir()), 1); /* grep found none */
}

/* ---- a float64 GPT-2 (GPT2LMHeadModel of transformers' modeling_gpt2.py, eval mode) ---- */

typedef struct RefBlock {
    double *ln1w, *ln1b, *qkvw, *qkvb, *ow, *ob, *ln2w, *ln2b, *fcw, *fcb, *pw, *pb; /* weights [out, in] */
} RefBlock;
typedef struct Ref {
    int L, D, H, V, T;
    double *wte, *wpe, *lnfw, *lnfb; /* wte [V, D], wpe [T, D] */
    RefBlock b[4];
    double *all[64];
    int n_all;
} Ref;

static double *ref_new(Ref *r, size_t n) { return r->all[r->n_all++] = calloc(n, sizeof(double)); }

static void ref_alloc(Ref *r) {
    size_t D = r->D;
    r->wte = ref_new(r, r->V * D), r->wpe = ref_new(r, r->T * D), r->lnfw = ref_new(r, D), r->lnfb = ref_new(r, D);
    for (int l = 0; l < r->L; l++) {
        RefBlock *b = &r->b[l];
        b->ln1w = ref_new(r, D), b->ln1b = ref_new(r, D), b->qkvw = ref_new(r, 3 * D * D), b->qkvb = ref_new(r, 3 * D);
        b->ow = ref_new(r, D * D), b->ob = ref_new(r, D), b->ln2w = ref_new(r, D), b->ln2b = ref_new(r, D);
        b->fcw = ref_new(r, 4 * D * D), b->fcb = ref_new(r, 4 * D), b->pw = ref_new(r, 4 * D * D), b->pb = ref_new(r, D);
    }
}

static void ref_free(Ref *r) {
    for (int i = 0; i < r->n_all; i++) free(r->all[i]);
}

static int cfg_key(const cJSON *j, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    ck_assert_msg(cJSON_IsNumber(v), "config.json: no %s", k);
    return v->valueint;
}

/* HF tensor name of shape [rows, cols] (cols 0: [rows]) into dst, Conv1D weights
 * (transpose set) from [in, out] to [out, in] */
static void hf_get(const StFile *f, const char *name, double *dst, int rows, int cols, int transpose) {
    const StEntry *e = st_find(f, name);
    ck_assert_msg(e != NULL, "export has no %s", name);
    ck_assert_int_eq(e->ndim, cols ? 2 : 1);
    ck_assert(e->shape[0] == rows && (!cols || e->shape[1] == cols));
    size_t n = (size_t)rows * (cols ? cols : 1);
    float *v = malloc(n * sizeof(float));
    memcpy(v, e->data, n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        if (transpose) dst[(i % cols) * rows + i / cols] = v[i];
        else dst[i] = v[i];
    free(v);
}

static void ref_from_hf(Ref *r, const char *dir) {
    char p[2300];
    snprintf(p, sizeof p, "%s/config.json", dir);
    char *t = slurp(p, NULL);
    cJSON *j = cJSON_Parse(t);
    free(t);
    r->D = cfg_key(j, "n_embd"), r->H = cfg_key(j, "n_head"), r->L = cfg_key(j, "n_layer"), r->V = cfg_key(j, "vocab_size");
    r->T = cfg_key(j, "n_positions");
    ck_assert_int_eq(cfg_key(j, "n_ctx"), r->T);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(j, "activation_function"), *mt = cJSON_GetObjectItemCaseSensitive(j, "model_type");
    ck_assert(cJSON_IsString(act) && !strcmp(act->valuestring, "gelu_new"));
    ck_assert(cJSON_IsString(mt) && !strcmp(mt->valuestring, "gpt2"));
    ck_assert(fabs(cJSON_GetObjectItemCaseSensitive(j, "layer_norm_epsilon")->valuedouble - 1e-5) < 1e-12);
    const cJSON *arch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "architectures"), 0);
    ck_assert(cJSON_IsString(arch) && !strcmp(arch->valuestring, "GPT2LMHeadModel"));
    cJSON_Delete(j);
    ck_assert(r->L <= 4);
    ref_alloc(r);
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    StFile f;
    ck_assert_msg(st_open(&f, p) == 0, "%s", gma_error());
    ck_assert_msg(st_meta(&f, "format") && !strcmp(st_meta(&f, "format"), "pt"), "__metadata__ format pt");
    ck_assert_int_eq(f.n, 4 + 12 * r->L);
    int D = r->D;
    hf_get(&f, "wte.weight", r->wte, r->V, D, 0);
    hf_get(&f, "wpe.weight", r->wpe, r->T, D, 0);
    hf_get(&f, "ln_f.weight", r->lnfw, D, 0, 0);
    hf_get(&f, "ln_f.bias", r->lnfb, D, 0, 0);
    for (int l = 0; l < r->L; l++) {
        RefBlock *b = &r->b[l];
        char n[96];
#define G(nm, dst, rows, cols, tr) (snprintf(n, sizeof n, "h.%d." nm, l), hf_get(&f, n, dst, rows, cols, tr))
        G("ln_1.weight", b->ln1w, D, 0, 0), G("ln_1.bias", b->ln1b, D, 0, 0);
        G("attn.c_attn.weight", b->qkvw, D, 3 * D, 1), G("attn.c_attn.bias", b->qkvb, 3 * D, 0, 0);
        G("attn.c_proj.weight", b->ow, D, D, 1), G("attn.c_proj.bias", b->ob, D, 0, 0);
        G("ln_2.weight", b->ln2w, D, 0, 0), G("ln_2.bias", b->ln2b, D, 0, 0);
        G("mlp.c_fc.weight", b->fcw, D, 4 * D, 1), G("mlp.c_fc.bias", b->fcb, 4 * D, 0, 0);
        G("mlp.c_proj.weight", b->pw, 4 * D, D, 1), G("mlp.c_proj.bias", b->pb, D, 0, 0);
#undef G
    }
    st_close(&f);
}

/* llm.c's file as gpt2_build_from_checkpoint reads it (train_gpt2.c:707): the header, then
 * the parameters in fill_in_parameter_sizes' order, each for every layer */
static void ref_from_llmc(Ref *r, const char *path) {
    size_t len;
    char *b = slurp(path, &len);
    int32_t h[256];
    ck_assert(len >= sizeof h);
    memcpy(h, b, sizeof h);
    ck_assert_int_eq(h[0], 20240326);
    ck_assert_int_eq(h[1], 3);
    for (int i = 8; i < 256; i++) ck_assert_int_eq(h[i], 0);
    r->T = h[2], r->V = h[3], r->L = h[4], r->H = h[5], r->D = h[6];
    int Vp = h[7];
    ck_assert(Vp % 128 == 0 && Vp >= r->V && Vp - r->V < 128 && r->L <= 4);
    ref_alloc(r);
    size_t D = r->D, off = sizeof h, L = r->L;
    ck_assert_int_eq(len, off + 4 * (Vp * D + r->T * D + L * (12 * D * D + 13 * D) + 2 * D));
    const float *v = (const float *)(b + off);
    size_t k = 0;
    for (size_t i = 0; i < (size_t)Vp * D; i++, k++)
        if (i < r->V * D) r->wte[i] = v[k];
        else ck_assert_msg(v[k] == 0.0f, "wte padding row %zu is not 0", i / D);
    for (size_t i = 0; i < r->T * D; i++) r->wpe[i] = v[k++];
#define EACH(field, n) for (size_t l = 0; l < L; l++) for (size_t i = 0; i < (n); i++) r->b[l].field[i] = v[k++]
    EACH(ln1w, D); EACH(ln1b, D); EACH(qkvw, 3 * D * D); EACH(qkvb, 3 * D); EACH(ow, D * D); EACH(ob, D);
    EACH(ln2w, D); EACH(ln2b, D); EACH(fcw, 4 * D * D); EACH(fcb, 4 * D); EACH(pw, 4 * D * D); EACH(pb, D);
#undef EACH
    for (size_t i = 0; i < D; i++) r->lnfw[i] = v[k++];
    for (size_t i = 0; i < D; i++) r->lnfb[i] = v[k++];
    free(b);
}

static void layer_norm(double *y, const double *x, const double *w, const double *b, int D) {
    double mu = 0, var = 0;
    for (int i = 0; i < D; i++) mu += x[i];
    mu /= D;
    for (int i = 0; i < D; i++) var += (x[i] - mu) * (x[i] - mu);
    var /= D;
    for (int i = 0; i < D; i++) y[i] = (x[i] - mu) / sqrt(var + 1e-5) * w[i] + b[i];
}

/* y [n_out] = W [n_out, n_in] x + b */
static void linear(double *y, const double *x, const double *W, const double *b, int n_in, int n_out) {
    for (int o = 0; o < n_out; o++) {
        double s = b ? b[o] : 0;
        for (int i = 0; i < n_in; i++) s += W[(size_t)o * n_in + i] * x[i];
        y[o] = s;
    }
}

/* the mean NLL of tok[1..n] after tok[0..n-1] and the largest |logit| */
static double ref_loss(const Ref *r, const int *tok, int n, double *max_logit) {
    int D = r->D, d = D / r->H, V = r->V;
    double *x = calloc((size_t)n * D, sizeof(double)), *a = calloc((size_t)n * D, sizeof(double));
    double *qkv = calloc((size_t)n * 3 * D, sizeof(double)), *o = calloc(D, sizeof(double)), *t = calloc(4 * D, sizeof(double));
    double *w = calloc(n, sizeof(double)), *lg = calloc(V, sizeof(double));
    for (int p = 0; p < n; p++)
        for (int i = 0; i < D; i++) x[p * D + i] = r->wte[(size_t)tok[p] * D + i] + r->wpe[p * D + i];
    for (int l = 0; l < r->L; l++) {
        const RefBlock *b = &r->b[l];
        for (int p = 0; p < n; p++) {
            layer_norm(a + p * D, x + p * D, b->ln1w, b->ln1b, D);
            linear(qkv + p * 3 * D, a + p * D, b->qkvw, b->qkvb, D, 3 * D); /* q | k | v */
        }
        for (int p = 0; p < n; p++) {
            for (int h = 0; h < r->H; h++) {
                double mx = -INFINITY, s = 0;
                for (int j = 0; j <= p; j++) { /* causal: keys j <= p */
                    double dot = 0;
                    for (int e = 0; e < d; e++) dot += qkv[p * 3 * D + h * d + e] * qkv[j * 3 * D + D + h * d + e];
                    w[j] = dot / sqrt((double)d);
                    mx = fmax(mx, w[j]);
                }
                for (int j = 0; j <= p; j++) s += (w[j] = exp(w[j] - mx));
                for (int e = 0; e < d; e++) {
                    double acc = 0;
                    for (int j = 0; j <= p; j++) acc += w[j] / s * qkv[j * 3 * D + 2 * D + h * d + e];
                    a[p * D + h * d + e] = acc; /* a: the heads' outputs, concatenated */
                }
            }
        }
        for (int p = 0; p < n; p++) {
            linear(o, a + p * D, b->ow, b->ob, D, D);
            for (int i = 0; i < D; i++) x[p * D + i] += o[i];
            layer_norm(o, x + p * D, b->ln2w, b->ln2b, D);
            linear(t, o, b->fcw, b->fcb, D, 4 * D);
            for (int i = 0; i < 4 * D; i++) /* gelu_new */
                t[i] = 0.5 * t[i] * (1 + tanh(sqrt(2 / M_PI) * (t[i] + 0.044715 * t[i] * t[i] * t[i])));
            linear(o, t, b->pw, b->pb, 4 * D, D);
            for (int i = 0; i < D; i++) x[p * D + i] += o[i];
        }
    }
    double nll = 0;
    *max_logit = 0;
    for (int p = 0; p < n; p++) {
        layer_norm(o, x + p * D, r->lnfw, r->lnfb, D);
        linear(lg, o, r->wte, NULL, D, V); /* the tied head */
        double mx = -INFINITY, s = 0;
        for (int v = 0; v < V; v++) mx = fmax(mx, lg[v]), *max_logit = fmax(*max_logit, fabs(lg[v]));
        for (int v = 0; v < V; v++) s += exp(lg[v] - mx);
        nll += mx + log(s) - lg[tok[p + 1]];
    }
    free(x), free(a), free(qkv), free(o), free(t), free(w), free(lg);
    return nll / n;
}

/* ---- the tests ---- */

/* import, export: the fixture's files again; import the export: the first import's tensors */
START_TEST(test_round_trip_is_bit_identical) {
    PATH(r1, "rt_run");
    PATH(hf, "rt_hf");
    PATH(bin, "rt.bin");
    ck_assert_msg(import(FIX "/hf", r1) == 0, "%s", g_out);
    ck_assert_msg(export(r1, hf, bin) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "exported GPT-2 (2 layers, n_embd 16, 2 heads, vocabulary 61, 16 positions; 7824 parameters)"),
                  "%s", g_out);
    /* llm.c: the fixture's file (scripts/gpt2_reference.py's writer) byte for byte */
    same_file(bin, FIX "/gpt2_tiny.bin");
    /* Hugging Face: every tensor of the fixture but the mask buffers, bit for bit */
    StFile a, b;
    char p[2300];
    snprintf(p, sizeof p, "%s/model.safetensors", hf);
    ck_assert_msg(st_open(&a, p) == 0, "%s", gma_error());
    ck_assert_msg(st_open(&b, FIX "/hf/model.safetensors") == 0, "%s", gma_error());
    int buffers = 0;
    for (int i = 0; i < b.n; i++) {
        const StEntry *f = &b.e[i], *e = st_find(&a, f->name);
        size_t nl = strlen(f->name);
        if (nl > 10 && !strcmp(f->name + nl - 10, ".attn.bias")) {
            buffers++;
            ck_assert_msg(e == NULL, "the mask buffer %s is not exported", f->name);
            continue;
        }
        ck_assert_msg(e != NULL, "export has no %s", f->name);
        ck_assert_int_eq(e->ndim, f->ndim);
        for (int k = 0; k < f->ndim; k++) ck_assert_int_eq(e->shape[k], f->shape[k]);
        ck_assert_msg(memcmp(e->data, f->data, 4 * f->numel) == 0, "tensor %s differs from the fixture's", f->name);
    }
    ck_assert_int_eq(buffers, 2);
    ck_assert_int_eq(a.n, b.n - buffers);
    st_close(&a);
    st_close(&b);
    /* import both exports: the first import's tensors */
    PATH(r2, "rt_run2");
    PATH(r3, "rt_run3");
    ck_assert_msg(import(hf, r2) == 0, "%s", g_out);
    ck_assert_msg(import(bin, r3) == 0, "%s", g_out);
    tu_same_tensors(r1, r2, "model.safetensors");
    tu_same_tensors(r1, r3, "model.safetensors");
    /* --from RUN/model.safetensors and --llmc alone */
    snprintf(p, sizeof p, "%s/model.safetensors", r1);
    PATH(bin2, "rt2.bin");
    ck_assert_msg(export(p, NULL, bin2) == 0, "%s", g_out);
    same_file(bin2, FIX "/gpt2_tiny.bin");
}
END_TEST

/* a random GPT-2-shaped run: both exports are the same weights, and their loss under the
 * float64 forward is gmaeval's on the run.
 * Bound: gmaeval computes in float32, summing at most 4 D = 64 terms at a time, each sum
 * within 64 u of its terms' magnitudes in any order (Higham, 2nd ed., eq. 3.4); a logit
 * ends a chain of about 8 such sums a block (q/k/v, scores, P V, the output projection,
 * the norm, the MLP's two layers) and the head's, terms of the order of the largest
 * |logit|; the loss (a log-sum-exp less one logit) moves by at most twice the logits' error:
 * |loss - ref| <= 2 (8 L + 1) 64 u max|logit|, ~ 1.3e-4 max|logit|. A transposed or
 * misplaced tensor moves it by far more. */
START_TEST(test_exported_loss_is_gmaeval_loss) {
    PATH(run_dir, "rand_run");
    PATH(hf, "rand_hf");
    PATH(bin, "rand.bin");
    make_run(run_dir, 61, NULL);
    ck_assert_msg(export(run_dir, hf, bin) == 0, "%s", g_out);
    Ref rh = {0}, rl = {0};
    ref_from_hf(&rh, hf);
    ref_from_llmc(&rl, bin);
    ck_assert(rh.L == rl.L && rh.D == rl.D && rh.H == rl.H && rh.V == rl.V && rh.T == rl.T);
    ck_assert(rh.L == 2 && rh.D == 16 && rh.H == 2 && rh.V == 61 && rh.T == 16);
    ck_assert_int_eq(rh.n_all, rl.n_all);
    size_t D = rh.D, sizes[4] = {rh.V * D, rh.T * D, D, D};
    for (int i = 0; i < 4; i++) ck_assert_msg(!memcmp(rh.all[i], rl.all[i], sizes[i] * sizeof(double)), "top tensor %d differs", i);
    size_t bs[12] = {D, D, 3 * D * D, 3 * D, D * D, D, D, D, 4 * D * D, 4 * D, 4 * D * D, D};
    for (int l = 0; l < rh.L; l++)
        for (int i = 0; i < 12; i++)
            ck_assert_msg(!memcmp(rh.all[4 + 12 * l + i], rl.all[4 + 12 * l + i], bs[i] * sizeof(double)),
                          "layer %d tensor %d: the Hugging Face and llm.c exports differ", l, i);
    int tok[16] = {3, 17, 60, 0, 42, 42, 7, 25, 58, 11, 1, 33, 5, 9, 2, 40};
    int n = 15;
    double maxl, ref = ref_loss(&rh, tok, n, &maxl);
    uint32_t ids[16];
    for (int i = 0; i <= n; i++) ids[i] = (uint32_t)tok[i];
    PATH(sh, "rand_seq.bin");
    PATH(js, "rand_eval.json");
    ck_assert_int_eq(shard_write(sh, ids, (uint64_t)n + 1, 61), 0);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data %s --seq-len %d --batch 1 --threads 1 --json %s", run_dir, sh, n, js) == 0,
                  "%s", g_out);
    char *j = slurp(js, NULL);
    const char *k = strstr(j, "\"loss\":");
    ck_assert_msg(k != NULL, "%s", j);
    double loss = strtod(k + 7, NULL), bound = 2 * (8 * rh.L + 1) * 64 * U32 * maxl;
    printf("test_export_gpt2: gmaeval loss %.9g, float64 reference on the export %.9g (|diff| %.3g, bound %.3g, max|logit| %.3g)\n",
           loss, ref, fabs(loss - ref), bound, maxl);
    ck_assert_msg(fabs(loss - ref) <= bound, "gmaeval loss %.9g, the reference's on the export %.9g", loss, ref);
    ck_assert_msg(maxl > 1, "the random run's logits are large enough to tell tensors apart: %g", maxl);
    free(j);
    ref_free(&rh);
    ref_free(&rl);
}
END_TEST

/* GPT-2's byte-level vocabulary of the 256 byte tokens and <|endoftext|> (no merges) as
 * encoder.json + vocab.bpe in dir */
static void write_byte_tokenizer(const char *dir) {
    ck_assert_int_eq(gma_mkdirs(dir), 0);
    char p[2300];
    snprintf(p, sizeof p, "%s/encoder.json", dir);
    tu_write_gpt2_byte_vocab(p);
    snprintf(p, sizeof p, "%s/vocab.bpe", dir);
    tu_write(p, "#version: 0.2\n");
}

static void write_data_json(const char *run_dir) {
    char p[2300];
    snprintf(p, sizeof p, "%s/data.json", run_dir);
    tu_write(p, "{\"path\": \"none\", \"path_abs\": \"\", \"tokenizer\": \"gpt2\", "
                "\"tokenizer_files\": [\"tokenizer/encoder.json\", \"tokenizer/vocab.bpe\"]}\n");
}

/* the run's GPT-2 tokenizer goes out as vocab.json + merges.txt, and back in on import */
START_TEST(test_tokenizer_goes_out) {
    PATH(run_dir, "tok_run");
    PATH(hf, "tok_hf");
    PATH(back, "tok_back");
    char a[2300], b[2300];
    make_run(run_dir, 257, NULL);
    snprintf(a, sizeof a, "%s/tokenizer", run_dir);
    write_byte_tokenizer(a);
    write_data_json(run_dir);
    ck_assert_msg(export(run_dir, hf, NULL) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "with the run's GPT-2 tokenizer"), "%s", g_out);
    snprintf(a, sizeof a, "%s/tokenizer/encoder.json", run_dir);
    snprintf(b, sizeof b, "%s/vocab.json", hf);
    same_file(a, b);
    snprintf(a, sizeof a, "%s/tokenizer/vocab.bpe", run_dir);
    snprintf(b, sizeof b, "%s/merges.txt", hf);
    same_file(a, b);
    ck_assert_msg(run("./bin/gmadata import gpt2 --from %s --out %s", hf, back) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "with its tokenizer"), "%s", g_out);
    tu_same_tensors(run_dir, back, "model.safetensors");
    /* a run without data.json: no tokenizer, said */
    PATH(bare, "bare_run");
    PATH(hf2, "bare_hf");
    make_run(bare, 61, NULL);
    ck_assert_msg(export(bare, hf2, NULL) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "no tokenizer"), "%s", g_out);
    snprintf(b, sizeof b, "%s/vocab.json", hf2);
    ck_assert(!gma_path_exists(b));
    /* a GPT-2 tokenizer of another vocabulary than the model's: refused */
    PATH(odd, "odd_run");
    make_run(odd, 61, NULL);
    snprintf(a, sizeof a, "%s/tokenizer", odd);
    write_byte_tokenizer(a);
    write_data_json(odd);
    refused(odd, tu_path("odd_hf"), NULL, "257 tokens", "vocabulary 61");
    ck_assert(!gma_path_exists(tu_path("odd_hf")));
}
END_TEST

START_TEST(test_refusals) {
    static const struct {
        const char *sets, *w1, *w2;
    } cases[] = {
        {"model.mixer=sdpa,gma", "layer 1 is gma", "softmax attention in every layer"},
        {"model.pos=sinusoidal", "model.pos is sinusoidal", "learned positions"},
        {"model.pos=rope", "model.pos is rope", "learned positions"},
        {"model.mlp=false", "model.mlp is false", "MLP"},
        {"model.attn_bias=false", "model.attn_bias is false", "biases"},
        {"model.d_ff=32", "model.d_ff is 32", "4 d_model = 64"},
        {"model.short_conv=4", "model.short_conv is 4", "short convolutions"},
        /* the block recipe and the attention window, where this build has those keys */
        {"model.norm=rmsnorm", "model.norm is rmsnorm", "LayerNorm"},
        {"model.mlp_act=swiglu", "model.mlp_act is swiglu", "GELU"},
        {"model.tie_embeddings=false", "model.tie_embeddings is false", "tied"},
        {"sdpa.window=4", "sdpa.window is 4", "every earlier position"},
    };
    char name[64];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Config probe;
        cfg_defaults(&probe);
        if (cfg_set(&probe, cases[i].sets) != 0) {
            printf("SKIP: test_export_gpt2: %s: the key is not in this build\n", cases[i].sets);
            continue;
        }
        snprintf(name, sizeof name, "bad_run%zu", i);
        PATH(r, name);
        make_run(r, 61, cases[i].sets);
        snprintf(name, sizeof name, "bad_hf%zu", i);
        PATH(out, name);
        snprintf(name, sizeof name, "bad%zu.bin", i);
        PATH(bin, name);
        refused(r, out, bin, cases[i].w1, cases[i].w2);
        ck_assert_msg(!gma_path_exists(out) && !gma_path_exists(bin), "%s: something was written", cases[i].sets);
    }
    /* a missing run */
    refused(tu_path("no_such_run"), tu_path("none_hf"), NULL, "no_such_run", NULL);
    ck_assert(!gma_path_exists(tu_path("none_hf")));
    /* a checkpoint without one of its tensors */
    PATH(good, "good_run");
    PATH(cut, "cut_run");
    make_run(good, 61, NULL);
    ck_assert_int_eq(run("cp -r %s %s", good, cut), 0);
    char p[2300];
    snprintf(p, sizeof p, "%s/model.safetensors", good);
    StFile f;
    ck_assert_int_eq(st_open(&f, p), 0);
    StTensor *t = calloc(f.n, sizeof *t);
    real *data = malloc(f.n * 4096 * sizeof(real));
    int k = 0;
    for (int i = 0; i < f.n; i++) {
        if (!strcmp(f.e[i].name, "blocks.1.mixer.v.bias")) continue;
        ck_assert(f.e[i].numel <= 4096);
        t[k] = (StTensor){.name = f.e[i].name, .ndim = f.e[i].ndim, .data = data + (size_t)k * 4096};
        memcpy(t[k].shape, f.e[i].shape, sizeof t[k].shape);
        st_read_tensor(&f.e[i], data + (size_t)k * 4096);
        k++;
    }
    snprintf(p, sizeof p, "%s/model.safetensors", cut);
    ck_assert_int_eq(st_write(p, t, k, (const char *const *)f.mkeys, (const char *const *)f.mvals, f.n_meta), 0);
    st_close(&f);
    free(t);
    free(data);
    refused(cut, tu_path("cut_hf"), tu_path("cut.bin"), "blocks.1.mixer.v.bias", "missing");
    ck_assert(!gma_path_exists(tu_path("cut_hf")) && !gma_path_exists(tu_path("cut.bin")));
    /* an existing --out (not empty) and an existing --llmc: left as they were */
    PATH(hf, "taken_hf");
    PATH(bin, "taken.bin");
    ck_assert_int_eq(gma_mkdirs(hf), 0);
    snprintf(p, sizeof p, "%s/keep.txt", hf);
    tu_write(p, "mine\n");
    refused(good, hf, NULL, "taken_hf", "not empty");
    tu_write(bin, "mine\n");
    refused(good, tu_path("free_hf"), bin, "taken.bin", "exists");
    ck_assert(!gma_path_exists(tu_path("free_hf")));
    size_t n;
    char *s = slurp(p, &n);
    ck_assert(n == 5 && !memcmp(s, "mine\n", 5));
    free(s);
    s = slurp(bin, &n);
    ck_assert(n == 5 && !memcmp(s, "mine\n", 5));
    free(s);
    ck_assert_int_eq(run("ls %s | wc -l", hf), 0);
    ck_assert_msg(atoi(g_out) == 1, "--out gained files: %s", g_out);
    /* an empty --out is taken, as import takes one */
    PATH(empty, "empty_hf");
    ck_assert_int_eq(gma_mkdirs(empty), 0);
    ck_assert_msg(export(good, empty, NULL) == 0, "%s", g_out);
    /* HF_DIR/ is HF_DIR */
    PATH(slashed, "slashed_hf/");
    ck_assert_msg(export(good, slashed, NULL) == 0, "%s", g_out);
    snprintf(p, sizeof p, "%sconfig.json", slashed);
    ck_assert_msg(gma_path_exists(p), "%s", g_out);
    ck_assert_int_eq(run("ls -a %s | grep -c tmp", tu_tmpdir()), 1); /* grep found none */
    /* neither target: a usage error */
    ck_assert_int_eq(run("./bin/gmadata export gpt2 --from %s", good), 2);
    ck_assert_msg(strstr(g_out, "--llmc"), "%s", g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("export_gpt2");
    TCase *tc = tcase_create("export_gpt2");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_round_trip_is_bit_identical);
    tcase_add_test(tc, test_exported_loss_is_gmaeval_loss);
    tcase_add_test(tc, test_tokenizer_goes_out);
    tcase_add_test(tc, test_refusals);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
