/* test_import_gpt2.c: `gmadata import gpt2` (docs/data.md, "Importing GPT-2") on the tiny
 * random GPT-2 of tests/fixtures/gpt2 (scripts/gpt2_reference.py: a Hugging Face folder,
 * the same weights as llm.c's .bin, and the float64 logits of a fixed sequence from a
 * forward written from the Hugging Face module). Both imports load as a run and give the
 * reference logits at float32 level and the same model.safetensors; gmaeval's loss on the
 * sequence is the reference's; gmasample runs on --prompt-ids; gmatrain --init-from
 * takes every tensor; a tokenizer beside the
 * weights is copied and used; llm.c's bfloat16 version 5 expands exactly; refusals (a
 * wrong shape, a missing, unknown or untied tensor, a bad magic or version, a truncated
 * file, trailing bytes, a non-empty --out) exit 2 with one line naming the tensor or
 * offset and leave nothing behind. With python3 + numpy the fixtures are regenerated
 * and imported again (else a "SKIP: " line). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safetensors.h"
#include "data/lm/shard.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "ops/ops.h"
#include "testutil.h"

#define FIX "tests/fixtures/gpt2"

typedef struct Ref {
    int n, V;
    int32_t tok[64];
    double *logits; /* [n, V] */
} Ref;

static void read_ref(const char *path, Ref *r) {
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s: cannot open", path);
    ck_assert_int_eq(fscanf(f, " tokens %d", &r->n), 1);
    ck_assert(r->n > 0 && r->n <= 64);
    for (int i = 0; i < r->n; i++) ck_assert_int_eq(fscanf(f, "%d", &r->tok[i]), 1);
    int n2;
    ck_assert_int_eq(fscanf(f, " logits %d %d", &n2, &r->V), 2);
    ck_assert_int_eq(n2, r->n);
    r->logits = malloc(sizeof(double) * r->n * r->V);
    for (int i = 0; i < r->n * r->V; i++) ck_assert_int_eq(fscanf(f, "%lf", &r->logits[i]), 1);
    fclose(f);
}

/* the logits of the imported run on the reference's tokens: max |a - ref| / max |ref| */
static double logits_error(const char *run_dir, const Ref *r) {
    char dir[2048];
    Config c;
    ck_assert_msg(ckpt_open_config(run_dir, "cpu", 1, dir, sizeof dir, &c) == 0, "%s", gma_error());
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    Model m;
    ck_assert_msg(model_build(&m, &c) == 0, "%s", gma_error());
    ck_assert_int_eq(m.V, r->V);
    model_alloc(&m, 1, r->n);
    ck_assert_msg(ckpt_load(&m, NULL, dir) == 0, "%s", gma_error());
    int32_t tgt[64];
    for (int i = 0; i < r->n; i++) tgt[i] = -1;
    tgt[0] = 0; /* one scored position: the forward needs one */
    LossStats st = {0};
    ck_assert_int_eq(model_forward(&m, r->tok, tgt, 1, r->n, NULL, 0, &st, 0, 0), 0);
    ck_assert_int_eq(m.logits_row0, 0);
    size_t n = (size_t)r->n * r->V;
    real *lg = malloc(n * sizeof(real));
    g_ops->to_host(lg, m.logits, n * sizeof(real));
    double scale = 0, err = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(r->logits[i]));
    for (size_t i = 0; i < n; i++) err = fmax(err, fabs((double)lg[i] - r->logits[i]));
    free(lg);
    model_free(&m);
    return err / scale;
}

static size_t file_bytes(const char *path, char **buf) {
    size_t n = 0;
    *buf = gma_read_file(path, &n);
    ck_assert_msg(*buf != NULL, "%s: cannot read", path);
    return n;
}

static void same_file(const char *a, const char *b) {
    char *x, *y;
    size_t nx = file_bytes(a, &x), ny = file_bytes(b, &y);
    ck_assert_msg(nx == ny && memcmp(x, y, nx) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert(f && fwrite(p, 1, n, f) == n);
    fclose(f);
}

/* import; the exit status, the output in g_out */
static int import(const char *from, const char *out) {
    return run("./bin/gmadata import gpt2 --from %s --out %s", from, out);
}

/* a refusal: exit 2, one line naming every string of want, nothing at out */
static void refused(const char *from, const char *out, const char *w1, const char *w2) {
    int rc = import(from, out);
    ck_assert_msg(rc == 2, "%s: exit %d, want 2: %s", from, rc, g_out);
    const char *nl = strchr(g_out, '\n');
    ck_assert_msg(nl && nl[1] == 0, "%s: want one line: %s", from, g_out);
    ck_assert_msg(strstr(g_out, w1) && (!w2 || strstr(g_out, w2)), "%s: the line names neither '%s' nor '%s': %s", from, w1,
                  w2 ? w2 : "", g_out);
    ck_assert_msg(!gma_path_exists(out), "%s exists after a refusal", out);
    ck_assert_int_eq(run("ls -a %s | grep -c tmp", tu_tmpdir()), 1); /* grep found none */
}

START_TEST(test_both_imports_give_gpt2_logits) {
    Ref r;
    read_ref(FIX "/reference.txt", &r);
    const char *hf = tu_path("hf_run"), *lc = tu_path("llmc_run");
    ck_assert_msg(import(FIX "/hf", hf) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "hugging face: 2 layers, n_embd 16, 2 heads, vocabulary 61, 16 positions"), "%s", g_out);
    ck_assert_msg(import(FIX "/gpt2_tiny.bin", lc) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "llm.c v3"), "%s", g_out);
    char a[2200], b[2200];
    snprintf(a, sizeof a, "%s/model.safetensors", hf);
    snprintf(b, sizeof b, "%s/model.safetensors", lc);
    same_file(a, b);
    /* --from the .safetensors file itself (config.json beside it) */
    const char *hf2 = tu_path("hf_file_run");
    ck_assert_msg(import(FIX "/hf/model.safetensors", hf2) == 0, "%s", g_out);
    snprintf(b, sizeof b, "%s/model.safetensors", hf2);
    same_file(a, b);
    snprintf(a, sizeof a, "%s/optim.safetensors", hf);
    ck_assert_msg(!gma_path_exists(a), "an import has no optimiser state");
    double e1 = logits_error(hf, &r), e2 = logits_error(lc, &r);
    printf("test_import_gpt2: max logits error %.3g (hf), %.3g (llm.c) of the logits' scale\n", e1, e2);
    ck_assert_msg(e1 < 1e-5 && e2 < 1e-5, "logits differ from the reference: %g %g", e1, e2);
    free(r.logits);
}
END_TEST

/* gmaeval's loss on the sequence (a shard of the 12 tokens and one more) is the mean NLL
 * of the reference logits; gmasample decodes from --prompt-ids */
START_TEST(test_gmaeval_and_gmasample_on_the_import) {
    Ref r;
    read_ref(FIX "/reference.txt", &r);
    const char *hf = tu_path("hf_eval");
    ck_assert_msg(import(FIX "/hf", hf) == 0, "%s", g_out);
    uint32_t ids[65];
    for (int i = 0; i < r.n; i++) ids[i] = (uint32_t)r.tok[i];
    ids[r.n] = 5;
    const char *sh = tu_path("seq.bin");
    ck_assert_int_eq(shard_write(sh, ids, (uint64_t)r.n + 1, (uint32_t)r.V), 0);
    /* the import has no data of its own: gmatrain --init-from without data.path and gmaeval --data valid say so, not
     * "give the moved data" or how to fetch WikiText-103 */
    ck_assert_int_eq(run("./bin/gmatrain --init-from %s --out %s --quiet --threads 1", hf, tu_path("ft_nodata")), 2);
    ck_assert_msg(strstr(g_out, "no data of its own") && strstr(g_out, "--set data.path=DIR") && !strstr(g_out, "fetch") &&
                  !strchr(strchr(g_out, '\n') + 1, '\n'), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data valid --threads 1", hf), 2);
    ck_assert_msg(strstr(g_out, "never trained here") && strstr(g_out, "--data FILE.bin or --data-path DIR") &&
                  !strstr(g_out, "moved data") && !strstr(g_out, "fetch") && !strchr(strchr(g_out, '\n') + 1, '\n'), "%s", g_out);
    const char *js = tu_path("eval.json");
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data %s --seq-len %d --batch 1 --threads 1 --json %s", hf, sh, r.n, js) == 0,
                  "%s", g_out);
    double nll = 0;
    for (int i = 0; i < r.n; i++) {
        const double *row = r.logits + (size_t)i * r.V;
        double mx = row[0], s = 0;
        for (int v = 1; v < r.V; v++) mx = fmax(mx, row[v]);
        for (int v = 0; v < r.V; v++) s += exp(row[v] - mx);
        nll += mx + log(s) - row[ids[i + 1]];
    }
    nll /= r.n;
    char *j;
    file_bytes(js, &j);
    const char *k = strstr(j, "\"loss\":");
    ck_assert_msg(k != NULL, "%s", j);
    double loss = strtod(k + 7, NULL);
    ck_assert_msg(fabs(loss - nll) <= 1e-5 * nll, "gmaeval loss %.9g, the reference's %.9g", loss, nll);
    free(j);
    ck_assert_msg(run("./bin/gmasample --checkpoint %s --prompt-ids \"3 17 60\" --tokens 5 --temperature 0 --threads 1", hf) == 0,
                  "%s", g_out);
    /* greedy: the reference's argmax after the prompt comes first */
    int best = 0;
    for (int v = 1; v < r.V; v++)
        if (r.logits[2 * r.V + v] > r.logits[2 * r.V + best]) best = v;
    char want[64];
    snprintf(want, sizeof want, "3 17 60 %d", best);
    ck_assert_msg(strstr(g_out, want), "gmasample greedy: want '%s...': %s", want, g_out);
    /* gmatrain --init-from starts a run from every tensor of the import */
    const char *dd = tu_path("shards");
    ck_assert_int_eq(gma_mkdirs(dd), 0);
    uint32_t many[400];
    for (int i = 0; i < 400; i++) many[i] = (uint32_t)((i * 7 + i / 13) % r.V);
    static const char *const splits[3] = {"train.bin", "valid.bin", "test.bin"};
    for (int i = 0; i < 3; i++) {
        char sp[2300];
        snprintf(sp, sizeof sp, "%s/%s", dd, splits[i]);
        ck_assert_int_eq(shard_write(sp, many, 400, (uint32_t)r.V), 0);
    }
    const char *ft = tu_path("finetune");
    ck_assert_msg(run("./bin/gmatrain --init-from %s --out %s --quiet --threads 1 --set data.path=%s --set train.steps=2 "
                      "--set train.batch_size=2 --set train.eval_every=0 --set train.sample_every=0",
                      hf, ft, dd) == 0,
                  "%s", g_out);
    char ij[2300];
    snprintf(ij, sizeof ij, "%s/init_from.json", ft);
    char *t;
    file_bytes(ij, &t);
    cJSON *o = cJSON_Parse(t);
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(o, "copied"), *nw = cJSON_GetObjectItemCaseSensitive(o, "new"),
                *dr = cJSON_GetObjectItemCaseSensitive(o, "dropped");
    ck_assert_msg(cJSON_IsArray(cp) && cJSON_GetArraySize(cp) == 36 && cJSON_GetArraySize(nw) == 0 && cJSON_GetArraySize(dr) == 0,
                  "every one of the 36 tensors is copied: %s", t);
    cJSON_Delete(o);
    free(t);
    /* a shorter model.max_seq_len: the first rows of the position table (nanoGPT's crop_block_size), not a fresh one */
    const char *f8 = tu_path("finetune8");
    ck_assert_msg(run("./bin/gmatrain --init-from %s --out %s --threads 1 --set data.path=%s --set train.steps=1 "
                      "--set train.lr=0 --set model.max_seq_len=8 --set train.seq_len=8 --set train.batch_size=2 "
                      "--set train.eval_every=0 --set train.sample_every=0",
                      hf, f8, dd) == 0,
                  "%s", g_out);
    ck_assert_msg(strstr(g_out, "1 cropped to the first model.max_seq_len 8 rows: pos_emb.weight"), "%s", g_out);
    snprintf(ij, sizeof ij, "%s/init_from.json", f8);
    file_bytes(ij, &t);
    ck_assert_msg(strstr(t, "\"cropped\":\t[\"pos_emb.weight\"]") && strstr(t, "\"shape_differs\":\t[]"), "%s", t);
    free(t);
    char pa[2300], pb[2300];
    snprintf(pa, sizeof pa, "%s/model.safetensors", hf);
    snprintf(pb, sizeof pb, "%s/latest/model.safetensors", f8);
    StFile fa, fb;
    ck_assert_msg(st_open(&fa, pa) == 0 && st_open(&fb, pb) == 0, "%s", gma_error());
    const StEntry *ea = st_find(&fa, "pos_emb.weight"), *eb = st_find(&fb, "pos_emb.weight");
    ck_assert(ea && eb && ea->shape[0] == 16 && eb->shape[0] == 8 && ea->shape[1] == eb->shape[1]);
    ck_assert_msg(!memcmp(ea->data, eb->data, eb->numel * sizeof(real)), "pos_emb.weight is not the first 8 rows");
    st_close(&fa), st_close(&fb);
    /* another block recipe has other tensors, rotary positions other semantics (the projections
     * were trained with learned positions): refused in one line naming the key, no run written */
    const char *bad = tu_path("recipe");
    const char *recipe[] = {"model.norm=rmsnorm", "model.mlp_act=swiglu", "model.tie_embeddings=false", "model.pos=rope"};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_ne(run("./bin/gmatrain --init-from %s --out %s --quiet --threads 1 --set data.path=%s --set %s "
                             "--set train.steps=2",
                             hf, bad, dd, recipe[i]),
                         0);
        char key[32];
        snprintf(key, sizeof key, "%.*s", (int)(strchr(recipe[i], '=') - recipe[i]), recipe[i]);
        ck_assert_msg(strstr(g_out, key) && strstr(g_out, "--init-from") && strchr(g_out, '\n') == strrchr(g_out, '\n'),
                      "%s", g_out);
        ck_assert_int_ne(access(bad, F_OK), 0);
    }
    free(r.logits);
}
END_TEST

/* ---- Hugging Face variants, written from the fixture ---- */

typedef struct Tens {
    char name[128];
    int ndim;
    int64_t shape[4];
    real *data;
} Tens;

static int load_fixture(Tens *t, int cap) {
    StFile f;
    ck_assert_msg(st_open(&f, FIX "/hf/model.safetensors") == 0, "%s", gma_error());
    ck_assert(f.n <= cap);
    for (int i = 0; i < f.n; i++) {
        snprintf(t[i].name, sizeof t[i].name, "%s", f.e[i].name);
        t[i].ndim = f.e[i].ndim;
        memcpy(t[i].shape, f.e[i].shape, sizeof t[i].shape);
        t[i].data = malloc(f.e[i].numel * sizeof(real));
        st_read_tensor(&f.e[i], t[i].data);
    }
    int n = f.n;
    st_close(&f);
    return n;
}

/* dir/model.safetensors from t[0..n) (name prefix pre; skip the tensor named skip) and
 * the fixture's config.json */
static void write_variant(const char *dir, const Tens *t, int n, const char *pre, const char *skip) {
    ck_assert_int_eq(gma_mkdirs(dir), 0);
    StTensor *s = calloc(n, sizeof *s);
    char (*names)[160] = calloc(n, sizeof *names);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (skip && !strcmp(t[i].name, skip)) continue;
        snprintf(names[k], sizeof names[k], "%s%s", strcmp(t[i].name, "lm_head.weight") ? pre : "", t[i].name);
        s[k].name = names[k];
        s[k].ndim = t[i].ndim;
        memcpy(s[k].shape, t[i].shape, sizeof s[k].shape);
        s[k].data = t[i].data;
        k++;
    }
    char p[2200];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    ck_assert_int_eq(st_write(p, s, k, NULL, NULL, 0), 0);
    snprintf(p, sizeof p, "cp " FIX "/hf/config.json %s/", dir);
    ck_assert_int_eq(run("%s", p), 0);
    free(s);
    free(names);
}

static Tens *find(Tens *t, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return &t[i];
    ck_abort_msg("no tensor %s", name);
    return NULL;
}

START_TEST(test_hf_variants_and_refusals) {
    Tens t[64];
    int n = load_fixture(t, 63);
    const char *ref = tu_path("ref_run");
    ck_assert_msg(import(FIX "/hf", ref) == 0, "%s", g_out);
    char want[2200], got[2200];
    snprintf(want, sizeof want, "%s/model.safetensors", ref);
    /* the "transformer." prefix and a tied lm_head.weight: the same model */
    Tens *wte = find(t, n, "wte.weight");
    t[n] = *wte;
    snprintf(t[n].name, sizeof t[n].name, "lm_head.weight");
    write_variant(tu_path("v_prefix"), t, n + 1, "transformer.", NULL);
    ck_assert_msg(import(tu_path("v_prefix"), tu_path("r_prefix")) == 0, "%s", g_out);
    snprintf(got, sizeof got, "%s/model.safetensors", tu_path("r_prefix"));
    same_file(want, got);
    /* an untied head */
    real *head = malloc(61 * 16 * sizeof(real));
    memcpy(head, wte->data, 61 * 16 * sizeof(real));
    head[5] += 1;
    t[n].data = head;
    write_variant(tu_path("v_untied"), t, n + 1, "", NULL);
    refused(tu_path("v_untied"), tu_path("r_untied"), "lm_head.weight", "tied");
    /* a missing tensor */
    write_variant(tu_path("v_missing"), t, n, "", "h.0.ln_2.bias");
    refused(tu_path("v_missing"), tu_path("r_missing"), "h.0.ln_2.bias", "missing");
    /* a wrong shape: c_fc stored [4D, D] (nn.Linear's layout) instead of Conv1D's [D, 4D] */
    Tens *fc = find(t, n, "h.1.mlp.c_fc.weight");
    fc->shape[0] = 64, fc->shape[1] = 16;
    write_variant(tu_path("v_shape"), t, n, "", NULL);
    refused(tu_path("v_shape"), tu_path("r_shape"), "h.1.mlp.c_fc.weight", "[64, 16]");
    fc->shape[0] = 16, fc->shape[1] = 64;
    /* a tensor GPT-2 does not have (a third layer of a 2-layer config) */
    Tens *ln = find(t, n, "h.1.ln_1.bias");
    t[n] = *ln;
    snprintf(t[n].name, sizeof t[n].name, "h.2.ln_1.bias");
    write_variant(tu_path("v_extra"), t, n + 1, "", NULL);
    refused(tu_path("v_extra"), tu_path("r_extra"), "h.2.ln_1.bias", "not part of GPT-2");
    /* a config.json GPT-2 does not have */
    write_variant(tu_path("v_act"), t, n, "", NULL);
    tu_write(tu_path("v_act/config.json"), "{\"n_embd\": 16, \"n_head\": 2, \"n_layer\": 2, \"vocab_size\": 61, "
                                           "\"n_positions\": 16, \"activation_function\": \"relu\"}\n");
    refused(tu_path("v_act"), tu_path("r_act"), "activation_function", "config.json");
    /* a truncated model.safetensors */
    write_variant(tu_path("v_trunc"), t, n, "", NULL);
    ck_assert_int_eq(run("truncate -s -100 %s/model.safetensors", tu_path("v_trunc")), 0);
    refused(tu_path("v_trunc"), tu_path("r_trunc"), "model.safetensors: truncated: ", "the header needs"); /* sizes, not a tensor */
    /* a small model.safetensors beside a config.json of GPT-2 XL: refused from the sizes before the 6 GB model is
     * allocated (under a 2 GB address-space limit the allocation would abort) */
    ck_assert_int_eq(gma_mkdirs(tu_path("v_small")), 0);
    real one[2] = {1, 2};
    StTensor st1 = {"wte.weight", 1, {2}, one};
    ck_assert_int_eq(st_write(tu_path("v_small/model.safetensors"), &st1, 1, NULL, NULL, 0), 0);
    tu_write(tu_path("v_small/config.json"), "{\"n_embd\": 1600, \"n_head\": 25, \"n_layer\": 48}\n");
    ck_assert_int_eq(run("ulimit -v 2000000; ./bin/gmadata import gpt2 --from %s --out %s", tu_path("v_small"), tu_path("r_small")),
                     2);
    ck_assert_msg(strstr(g_out, "v_small/model.safetensors: truncated: ") && strstr(g_out, "bytes, the header needs 6") &&
                  !strchr(strchr(g_out, '\n') + 1, '\n') && !gma_path_exists(tu_path("r_small")), "%s", g_out);
    /* a NaN weight: refused naming the tensor and the index */
    Tens *pb = find(t, n, "h.1.attn.c_proj.bias");
    real keep = pb->data[3];
    pb->data[3] = NAN;
    write_variant(tu_path("v_nan"), t, n, "", NULL);
    pb->data[3] = keep;
    refused(tu_path("v_nan"), tu_path("r_nan"), "tensor h.1.attn.c_proj.bias holds NaN at index 3", "model.safetensors");
    /* --out RUN/ (a trailing slash): the run at RUN, nothing left beside it; a refusal with one leaves no RUN/ */
    char slash[2200];
    snprintf(slash, sizeof slash, "%s/", tu_path("r_slash"));
    ck_assert_msg(import(FIX "/hf", slash) == 0, "%s", g_out);
    ck_assert_int_eq(run("test -f %s/model.safetensors && ! ls -a %s | grep -q tmp", tu_path("r_slash"), tu_path("r_slash")), 0);
    snprintf(slash, sizeof slash, "%s/", tu_path("r_slash2"));
    ck_assert_int_eq(import(tu_path("v_nan"), slash), 2);
    ck_assert_msg(!gma_path_exists(tu_path("r_slash2")), "a refused import left %s", slash);
    /* the temporary folder of a killed import (RUN.tmp.PID, PID gone) is removed by the next import into RUN */
    char stale[2200];
    snprintf(stale, sizeof stale, "%s.tmp.%d", tu_path("r_stale"), tu_dead_pid());
    ck_assert_int_eq(run("mkdir -p %s/tokenizer && touch %s/model.safetensors %s/tokenizer/encoder.json", stale, stale, stale), 0);
    ck_assert_msg(import(FIX "/hf", tu_path("r_stale")) == 0, "%s", g_out);
    ck_assert_msg(!gma_path_exists(stale) && strstr(g_out, "removed 1 stale temporary folder"), "%s", g_out);
    /* a folder without weights, and a non-empty --out (left as it was) */
    ck_assert_int_eq(gma_mkdirs(tu_path("empty_src")), 0);
    refused(tu_path("empty_src"), tu_path("r_empty"), "model.safetensors", NULL);
    ck_assert_int_eq(import(tu_path("v_prefix"), ref), 2);
    ck_assert_msg(strstr(g_out, "is not empty: refusing to write over it"), "%s", g_out);
    same_file(want, got); /* ref's model.safetensors is as it was */
    for (int i = 0; i < n; i++) free(t[i].data);
    free(head);
}
END_TEST

/* ---- llm.c variants ---- */

START_TEST(test_llmc_versions_and_refusals) {
    char *b;
    size_t len = file_bytes(FIX "/gpt2_tiny.bin", &b);
    int32_t h[8];
    memcpy(h, b, sizeof h);
    ck_assert_int_eq(h[0], 20240326);
    ck_assert_int_eq(h[7], 128); /* llm.c pads V = 61 to a multiple of 128 */
    char p[2200]; /* tu_path's buffers rotate: kept */
    snprintf(p, sizeof p, "%s", tu_path("x.bin"));
    /* bad magic, bad version */
    char *c = malloc(len);
    memcpy(c, b, len);
    c[0] ^= 1;
    write_bytes(p, c, len);
    refused(p, tu_path("r_magic"), "bad magic", "offset 0");
    memcpy(c, b, len);
    ((int32_t *)c)[1] = 4;
    write_bytes(p, c, len);
    refused(p, tu_path("r_version"), "version 4", "offset 4");
    /* a padded vocabulary below V */
    memcpy(c, b, len);
    ((int32_t *)c)[7] = 60;
    write_bytes(p, c, len);
    refused(p, tu_path("r_vp"), "Vp = 60 at offset 28", "V = 61");
    /* truncated: in the header, in a tensor (the last bias), extra bytes at the end */
    write_bytes(p, b, 1000);
    refused(p, tu_path("r_trunc_h"), "truncated", "header");
    write_bytes(p, b, len - 8);
    char need[96];
    snprintf(need, sizeof need, "truncated: %zu bytes, the header needs %zu", len - 8, len);
    refused(p, tu_path("r_trunc_t"), need, NULL);
    /* the 1 KiB header of GPT-2 XL alone: refused from the sizes before the model is allocated (a 2 GB limit) */
    memcpy(c, b, 1024);
    ((int32_t *)c)[2] = 1024, ((int32_t *)c)[3] = 50257, ((int32_t *)c)[4] = 48, ((int32_t *)c)[5] = 25;
    ((int32_t *)c)[6] = 1600, ((int32_t *)c)[7] = 50304;
    write_bytes(p, c, 1024);
    ck_assert_int_eq(run("ulimit -v 2000000; ./bin/gmadata import gpt2 --from %s --out %s", p, tu_path("r_xl")), 2);
    ck_assert_msg(strstr(g_out, "x.bin: truncated: 1024 bytes, the header needs ") && !strchr(strchr(g_out, '\n') + 1, '\n') &&
                  !gma_path_exists(tu_path("r_xl")), "%s", g_out);
    /* a NaN weight (lnfb's last, version 3 float32): the tensor, index and offset named */
    if (((int32_t *)b)[1] == 3) {
        memcpy(c, b, len);
        uint32_t qnan = 0x7fc00000u;
        memcpy(c + len - 4, &qnan, 4);
        write_bytes(p, c, len);
        char nan_at[96];
        snprintf(nan_at, sizeof nan_at, "tensor lnfb holds NaN at index 15 (offset %zu)", len - 4);
        refused(p, tu_path("r_nan"), nan_at, NULL);
    }
    memcpy(c, b, len);
    write_bytes(p, c, len);
    FILE *f = fopen(p, "ab");
    fputs("junk", f);
    fclose(f);
    refused(p, tu_path("r_trail"), "4 bytes after the last tensor", "offset");
    /* version 5: bfloat16 (the high half of each float32) expands exactly */
    size_t nf = (len - 1024) / 4;
    char *v5 = malloc(1024 + 2 * nf);
    memcpy(v5, b, 1024);
    ((int32_t *)v5)[1] = 5;
    for (size_t i = 0; i < nf; i++) memcpy(v5 + 1024 + 2 * i, b + 1024 + 4 * i + 2, 2); /* little-endian high half */
    write_bytes(p, v5, 1024 + 2 * nf);
    const char *r5 = tu_path("r_v5");
    ck_assert_msg(import(p, r5) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "llm.c v5"), "%s", g_out);
    /* against the float32 import with the low 16 bits of every value cleared */
    const char *r3 = tu_path("r_v3");
    ck_assert_msg(import(FIX "/gpt2_tiny.bin", r3) == 0, "%s", g_out);
    StFile s5, s3;
    char sp[2200];
    snprintf(sp, sizeof sp, "%s/model.safetensors", r5);
    ck_assert_int_eq(st_open(&s5, sp), 0);
    snprintf(sp, sizeof sp, "%s/model.safetensors", r3);
    ck_assert_int_eq(st_open(&s3, sp), 0);
    ck_assert_int_eq(s5.n, s3.n);
    real *x5 = malloc(128 * 16 * sizeof(real)), *x3 = malloc(128 * 16 * sizeof(real));
    for (int k = 0; k < s3.n; k++) {
        const StEntry *e3 = &s3.e[k], *e5 = st_find(&s5, e3->name);
        ck_assert(e5 && e5->numel == e3->numel && e3->numel <= 128 * 16);
        st_read_tensor(e3, x3);
        st_read_tensor(e5, x5);
        for (size_t i = 0; i < e3->numel; i++) {
            float f = (float)x3[i];
            uint32_t u;
            memcpy(&u, &f, 4);
            u &= 0xFFFF0000u;
            memcpy(&f, &u, 4);
            ck_assert_msg((float)x5[i] == f, "%s[%zu] = %g, want %g", e3->name, i, (double)x5[i], (double)f);
        }
    }
    free(x5);
    free(x3);
    st_close(&s3);
    st_close(&s5);
    free(v5);
    free(c);
    free(b);
}
END_TEST

/* a GPT-2 tokenizer beside the weights (encoder.json + vocab.bpe, or Hugging Face's
 * vocab.json + merges.txt) goes into RUN/tokenizer/, and gmasample decodes text with it */
START_TEST(test_tokenizer_is_copied) {
    Tens t[64];
    int n = load_fixture(t, 63);
    /* a vocabulary of the 256 byte tokens and <|endoftext|>: wte and the config grow to 257 */
    Tens *wte = find(t, n, "wte.weight");
    real *w = malloc(257 * 16 * sizeof(real));
    for (int i = 0; i < 257 * 16; i++) w[i] = wte->data[i % (61 * 16)];
    free(wte->data);
    wte->data = w;
    wte->shape[0] = 257;
    char src[2200], r[2200]; /* tu_path's buffers rotate: kept */
    snprintf(src, sizeof src, "%s", tu_path("v_tok"));
    snprintf(r, sizeof r, "%s", tu_path("r_tok"));
    write_variant(src, t, n, "", NULL);
    tu_write(tu_path("v_tok/config.json"), "{\"n_embd\": 16, \"n_head\": 2, \"n_layer\": 2, \"vocab_size\": 257, "
                                           "\"n_positions\": 16, \"n_ctx\": 16}\n");
    /* encoder.json: GPT-2's byte alphabet (bytes outside ! .. ~, 0xA1 .. 0xAC, 0xAE .. 0xFF
     * map to U+0100 and up, in order), no merges */
    tu_write_gpt2_byte_vocab(tu_path("v_tok/vocab.json"));
    tu_write(tu_path("v_tok/merges.txt"), "#version: 0.2\n");
    ck_assert_msg(import(src, r) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "with its tokenizer"), "%s", g_out);
    ck_assert_int_eq(run("test -f %s/tokenizer/encoder.json && test -f %s/tokenizer/vocab.bpe && test -f %s/data.json", r, r, r), 0);
    ck_assert_msg(run("./bin/gmasample --checkpoint %s --prompt 'ab' --tokens 3 --temperature 0 --threads 1", r) == 0,
                  "%s", g_out);
    const char *text = strchr(g_out, '\n'); /* after the banner line, the text: the prompt first */
    ck_assert_msg(text && !strncmp(text + 1, "ab", 2), "the sample starts with the prompt: %s", g_out);
    /* the imported run records its tokenizer's identity: gmaeval refuses shards of another tokenizer (as for a
     * trained run) and takes shards prepared with the imported tokenizer */
    const char *corpus = tu_path("tok_corpus");
    ck_assert_int_eq(gma_mkdirs(corpus), 0);
    static const char *const split_txt[3] = {"train.txt", "valid.txt", "test.txt"};
    for (int i = 0; i < 3; i++) {
        char sp[2300];
        snprintf(sp, sizeof sp, "%s/%s", corpus, split_txt[i]);
        tu_write(sp, "the cat sat on the mat and the dog sat on the log, over and over again.\n");
    }
    ck_assert_msg(run("./bin/gmadata prepare %s --tokenizer bytes --out %s/d_bytes --quiet && ./bin/gmadata prepare %s "
                      "--tokenizer gpt2 --vocab %s/tokenizer --out %s/d_gpt2 --quiet", corpus, tu_tmpdir(), corpus, r,
                      tu_tmpdir()) == 0, "%s", g_out);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data valid --data-path %s/d_bytes --seq-len 8 --threads 1", r,
                         tu_tmpdir()), 2);
    ck_assert_msg(strstr(g_out, "tokenizer gpt2 there, bytes here") && !strchr(strchr(g_out, '\n') + 1, '\n'), "%s", g_out);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data valid --data-path %s/d_gpt2 --seq-len 8 --threads 1", r,
                      tu_tmpdir()) == 0, "%s", g_out);
    /* tokenizer.json alone (what current Hugging Face GPT-2 folders ship): model.vocab and model.merges read, the
     * same tokenizer files as from vocab.json + merges.txt */
    char *vj;
    file_bytes(tu_path("v_tok/vocab.json"), &vj);
    FILE *tj = fopen(tu_path("v_tok/tokenizer.json"), "w");
    fprintf(tj, "{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\", \"vocab\": %s, \"merges\": []}}\n", vj);
    fclose(tj);
    free(vj);
    unlink(tu_path("v_tok/vocab.json"));
    unlink(tu_path("v_tok/merges.txt"));
    char rj[2200];
    snprintf(rj, sizeof rj, "%s", tu_path("r_tokjson"));
    ck_assert_msg(import(src, rj) == 0 && strstr(g_out, "with its tokenizer"), "%s", g_out);
    ck_assert_int_eq(run("cmp %s/tokenizer/encoder.json %s/tokenizer/encoder.json && cmp %s/tokenizer/vocab.bpe "
                         "%s/tokenizer/vocab.bpe && cmp %s/data.json %s/data.json", r, rj, r, rj, r, rj), 0);
    /* no tokenizer at all: imported, saying what was looked for and what gmasample then needs */
    unlink(tu_path("v_tok/tokenizer.json"));
    ck_assert_msg(import(src, tu_path("r_notok")) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "no tokenizer beside the weights (looked for encoder.json + vocab.bpe, vocab.json + "
                                "merges.txt, or tokenizer.json)") && strstr(g_out, "--tokenizer gpt2 --vocab DIR"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmasample --checkpoint %s --prompt 'ab' --tokens 2 --threads 1", tu_path("r_notok")), 2);
    ck_assert_msg(strstr(g_out, "--tokenizer gpt2 --vocab DIR") && !strstr(g_out, "wikitext") && !strstr(g_out, "--data-path"),
                  "%s", g_out);
    /* only half of a tokenizer: refused, naming the file that is there */
    tu_write(tu_path("v_tok/vocab.json"), "{}");
    refused(src, tu_path("r_tok2"), "vocab.json", "merges.txt");
    for (int i = 0; i < n; i++) free(t[i].data);
}
END_TEST

/* the fixtures again from the script, imported: the script and the reader agree however
 * numpy draws */
START_TEST(test_regenerated_fixtures) {
    const char *env = getenv("PYTHON"), *py = NULL;
    const char *cand[3] = {env && env[0] ? env : "python3", "python3", "/usr/bin/python3"};
    for (int i = 0; i < 3 && !py; i++)
        if (run("%s -c 'import numpy' >/dev/null 2>&1", cand[i]) == 0) py = cand[i];
    if (!py) {
        printf("SKIP: test_import_gpt2: no python3 with numpy to regenerate the fixtures (set PYTHON=...)\n");
        return;
    }
    const char *d = tu_path("regen");
    ck_assert_msg(run("%s scripts/gpt2_reference.py --out %s", py, d) == 0, "%s", g_out);
    char a[2200], b[2200];
    Ref r;
    snprintf(a, sizeof a, "%s/reference.txt", d);
    read_ref(a, &r);
    snprintf(a, sizeof a, "%s/hf", d);
    ck_assert_msg(import(a, tu_path("regen_hf")) == 0, "%s", g_out);
    snprintf(a, sizeof a, "%s/gpt2_tiny.bin", d);
    ck_assert_msg(import(a, tu_path("regen_llmc")) == 0, "%s", g_out);
    ck_assert(logits_error(tu_path("regen_hf"), &r) < 1e-5);
    ck_assert(logits_error(tu_path("regen_llmc"), &r) < 1e-5);
    snprintf(a, sizeof a, "%s/model.safetensors", tu_path("regen_hf"));
    snprintf(b, sizeof b, "%s/model.safetensors", tu_path("regen_llmc"));
    same_file(a, b);
    free(r.logits);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("import_gpt2");
    TCase *tc = tcase_create("import_gpt2");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_both_imports_give_gpt2_logits);
    tcase_add_test(tc, test_gmaeval_and_gmasample_on_the_import);
    tcase_add_test(tc, test_hf_variants_and_refusals);
    tcase_add_test(tc, test_llmc_versions_and_refusals);
    tcase_add_test(tc, test_tokenizer_is_copied);
    tcase_add_test(tc, test_regenerated_fixtures);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
