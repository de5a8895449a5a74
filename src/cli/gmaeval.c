/* gmaeval.c: evaluate a checkpoint on a held-out split or a token shard file: loss,
 * token-level perplexity, accuracy (argmax; the recall task's figure of merit), word-level
 * perplexity when the data's meta.json gives the word count; printed and written as JSON.
 * A classifier checkpoint (model.task "classify", e.g. RUN/best) is evaluated on a split
 * of its classification data: loss and accuracy over the examples. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "data/lm/lmdata.h"
#include "data/lm/dataid.h"
#include "data/lm/lmmeta.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "cli/args/version.h"
#include "ops/ops.h"
#include "train/cls_task.h"
#include "train/evaluate.h"
#include "analysis/routing.h"
#include "data/text/tokenizer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: gmaeval --checkpoint PATH --data SPLIT|FILE [--data-path DIR] [--seq-len N] [--batch B] [--stride S]\n"
               "               [--json OUT] [--device cpu|cuda] [--threads N] [--drop-last]\n"
               "               [--analyze] [--analyze-json FILE] [--dump-responsibilities FILE]\n"
               "       gmaeval --help | --version\n"
               "PATH: a checkpoint directory, a run directory (its latest checkpoint) or a model.safetensors.\n"
               "SPLIT: train, valid or test of the data the checkpoint was trained on (that shard alone is read);\n"
               "  FILE: a token shard. The data directory is looked up at the absolute path the run recorded\n"
               "  (RUN/data.json), then at data.path from here, then from the run folder's parent and grandparent;\n"
               "  --data-path DIR gives it where it moved.\n"
               "--analyze: routing analysis of the GMA layers (docs/routing.md): JSON to --analyze-json FILE (default\n"
               "  beside --json as X.analysis.json, else analysis.json), a readable report (stdout and FILE's .txt),\n"
               "  PNG plots in FILE's _plots/ directory through gnuplot when installed.\n"
               "--dump-responsibilities FILE: raw query responsibilities, binary layout in docs/analysis.md.\n"
               "--drop-last: classifiers: score whole batches of B (--batch, else the run's train.batch_size) only,\n"
               "  as the trainer with train.eval_drop_last (the LRA release's drop_remainder).\n");
}

/* print o to path (written atomically) and free it; 0, or -1 with gma_error set */
static int write_json(const char *path, cJSON *o) {
    char *s = cJSON_Print(o);
    cJSON_Delete(o);
    int rc = gma_write_file_atomic(path, s, strlen(s));
    free(s);
    return rc;
}

/* n with thousands separators: 24,378 */
static const char *fmt_count(char *out, size_t cap, double n) {
    char d[32];
    snprintf(d, sizeof d, "%.0f", n);
    size_t len = strlen(d), o = 0;
    for (size_t i = 0; i < len && o + 2 < cap; i++) {
        if (i > 0 && d[i - 1] != '-' && (len - i) % 3 == 0) out[o++] = ',';
        out[o++] = d[i];
    }
    out[o] = 0;
    return out;
}

static int fail(int code) {
    fprintf(stderr, "gmaeval: %s\n", gma_error());
    return code;
}

static long parse_int(const char *opt, const char *v, long lo) {
    long x;
    if (gma_parse_long(v, lo, INT_MAX, &x) != 0) {
        fprintf(stderr, "gmaeval: %s: \"%s\" is not an integer in [%ld, %d]\n", opt, v, lo, INT_MAX);
        exit(2);
    }
    return x;
}

/* The data scored must be of the tokenizer and vocabulary the run was trained on (the
 * identity RUN/data.json records, dataid.h): a data directory (file NULL) or one shard
 * file (with a meta.json beside it, its tokenizer too). A run that records none is not
 * checked. 0, or -1 with gma_error. */
static int check_identity(const char *ckdir, const char *data_dir, const char *file) {
    char run[2048], what[512];
    if (lmmeta_run_dir(ckdir, run, sizeof run) != 0) return 0;
    DataId want, have;
    int got = dataid_of_run(run, &want);
    if (got <= 0) return got;
    if ((file ? dataid_of_file(file, &have) : dataid_of_dir(data_dir, &have)) != 0) return -1;
    if (file && !have.tokenizer[0]) /* a bare shard: its vocabulary alone */
        snprintf(have.tokenizer, sizeof have.tokenizer, "%s", want.tokenizer);
    if (dataid_diff(&want, &have, 0, what, sizeof what))
        return gma_errorf("%s is not data of the tokenizer %s was trained on: %s (%s/data.json)", file ? file : data_dir, run,
                          what, run);
    return 0;
}

/* Classifier checkpoints: loss and accuracy on a split of the data the run trained on. */
static int eval_classifier(Config *cfg, const char *dir, const char *data, int B, int drop_last, const char *json) {
    int split = lmdata_split_index(data);
    if (split < 0) {
        fprintf(stderr, "gmaeval: --data %s: a classifier is evaluated on train, valid or test of its %s data (%s)\n", data,
                cfg->data.task, cfg->data.path);
        return 2;
    }
    ClsTask t;
    if (clstask_open(&t, cfg, 1u << split, B, stderr) != 0) return fail(2);
    t.drop_last = drop_last;
    if (drop_last && t.split[split].n < B) {
        fprintf(stderr, "gmaeval: --drop-last: the %s split of %s holds %d examples, fewer than one batch of %d\n", data,
                cfg->data.path, t.split[split].n, B);
        clstask_close(&t);
        return 2;
    }
    Model m;
    if (model_build(&m, cfg) != 0) return fail(2);
    if (model_check_memory(&m, B, t.max_len) != 0) return fail(2);
    model_alloc(&m, B, t.max_len);
    if (ckpt_load(&m, NULL, dir) != 0) return fail(2);
    double t0 = gma_now();
    ClsEval r;
    if (clstask_evaluate(&t, &m, split, 0, &r) != 0) return fail(1);
    if (!isfinite(r.loss)) {
        fprintf(stderr, "gmaeval: %s: the %s loss is not finite (%g): the weights give non-finite logits\n", dir, data, r.loss);
        return 1;
    }
    double dt = gma_now() - t0;
    char ex[32];
    printf("checkpoint %s | data %s %s\n%s loss %.4f | acc %.4f | %s examples | %.1f s\n", dir, cfg->data.task,
           cfg->data.path, data, r.loss, r.acc, fmt_count(ex, sizeof ex, (double)r.examples), dt);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "checkpoint", dir);
        cJSON_AddStringToObject(o, "data", data);
        cJSON_AddStringToObject(o, "task", cfg->data.task);
        cJSON_AddStringToObject(o, "path", cfg->data.path);
        cJSON_AddNumberToObject(o, "examples", (double)r.examples);
        cJSON_AddNumberToObject(o, "loss", r.loss);
        cJSON_AddNumberToObject(o, "acc", r.acc);
        cJSON_AddNumberToObject(o, "seconds", dt);
        if (write_json(json, o)) return fail(1);
    }
    model_free(&m);
    clstask_close(&t);
    return 0;
}

/* ---------------- routing analysis (docs/model.md §6) ---------------- */
static const char *const RECALL_CATS[4] = {"pad", "separator", "key", "value"};
static const char *const TEXT_CATS[N_TEXT_CATS] = {"number", "punctuation", "function_word", "capitalised", "other"};

/* token texts from the tokenizer named by DATA/meta.json; NULL when there is none */
static char **token_texts(const Config *cfg, int V) {
    if (!cfg->data.path[0]) return NULL;
    Tokenizer *tk = lmdata_tokenizer(cfg->data.path);
    if (!tk) return NULL;
    char **text = xcalloc(V, sizeof(char *));
    uint32_t tv = tokenizer_vocab_size(tk);
    for (int i = 0; i < V && (uint32_t)i < tv; i++) {
        uint32_t id = (uint32_t)i;
        size_t len;
        if (tokenizer_decode(tk, &id, 1, &text[i], &len) != 0) text[i] = NULL;
    }
    tokenizer_free(tk);
    return text;
}

static void stem_of(char *out, size_t cap, const char *path) {
    snprintf(out, cap, "%s", path);
    size_t n = strlen(out);
    if (n > 5 && !strcmp(out + n - 5, ".json")) out[n - 5] = 0;
}

static int write_plots(const char *dir, const RouteAnalysis *ra, const int *layer_index, const float *heat, int N) {
    if (gma_mkdirs(dir) != 0) return -1;
    char p[2300];
    snprintf(p, sizeof p, "%s/utilisation.dat", dir);
    FILE *f = fopen(p, "w");
    if (!f) return gma_errorf("%s: cannot open for writing", p);
    fprintf(f, "# rank, then per GMA layer the head-averaged share of its rank-th busiest component\n");
    double *sh = xcalloc((size_t)ra->L * ra->Kc, sizeof(double));
    for (int l = 0; l < ra->L; l++) {
        for (int h = 0; h < ra->H; h++) {
            double *c = ra->counts + ((size_t)l * ra->H + h) * ra->Kc, *tmp = xmalloc(sizeof(double) * ra->Kc);
            memcpy(tmp, c, sizeof(double) * ra->Kc);
            for (int i = 0; i < ra->Kc; i++) /* sort descending */
                for (int j = i + 1; j < ra->Kc; j++)
                    if (tmp[j] > tmp[i]) { double t = tmp[i]; tmp[i] = tmp[j]; tmp[j] = t; }
            for (int k = 0; k < ra->Kc; k++) sh[(size_t)l * ra->Kc + k] += ra->n ? tmp[k] / ra->n / ra->H : 0;
            free(tmp);
        }
    }
    for (int k = 0; k < ra->Kc; k++) {
        fprintf(f, "%d", k);
        for (int l = 0; l < ra->L; l++) fprintf(f, " %.6g", sh[(size_t)l * ra->Kc + k]);
        fprintf(f, "\n");
    }
    fclose(f);
    free(sh);
    snprintf(p, sizeof p, "%s/heatmap.dat", dir);
    f = fopen(p, "w");
    if (!f) return gma_errorf("%s: cannot open for writing", p);
    for (int n = 0; n < N; n++) {
        for (int k = 0; k < ra->Kc; k++) fprintf(f, "%s%.5g", k ? " " : "", heat[(size_t)n * ra->Kc + k]);
        fprintf(f, "\n");
    }
    fclose(f);
    snprintf(p, sizeof p, "%s/plots.gp", dir);
    f = fopen(p, "w");
    if (!f) return gma_errorf("%s: cannot open for writing", p);
    /* pngcairo where this gnuplot has it (else libgd's png); a defined palette (viridis)
     * on cbrange [0:1] for the heatmap; one line with points per layer, log y, so that no
     * layer's series hides another's */
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { png = 'pngcairo' } else { png = 'png' }\n"
               "set terminal @png size 900,500\nset output 'utilisation.png'\n"
               "set title 'Component utilisation (components sorted by share, head average; zero shares not drawn)'\n"
               "set xlabel 'component rank'\nset ylabel 'share of tokens (argmax)'\nset logscale y\nset format y '%%g'\n"
               "set grid\nset key top right\nset xrange [-0.5:%d]\n"
               "plot ", ra->Kc);
    for (int l = 0; l < ra->L; l++)
        fprintf(f, "%s'utilisation.dat' using 1:($%d > 0 ? $%d : NaN) with linespoints lw 2 pt %d ps 0.8 title 'layer %d'",
                l ? ", " : "", l + 2, l + 2, 4 + 2 * (l % 6), layer_index[l]);
    fprintf(f, "\nreset\nset terminal @png size 900,700\nset output 'heatmap.png'\n"
               "set title 'Query responsibilities, layer %d head 0, first evaluation window'\n"
               "set xlabel 'component k'\nset ylabel 'position'\nunset key\n"
               "set palette defined (0 '#440154', 0.25 '#3b528b', 0.5 '#21918c', 0.75 '#5ec962', 1 '#fde725')\n"
               "set cbrange [0:1]\nset cblabel 'responsibility'\n"
               "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\n"
               "plot 'heatmap.dat' matrix with image\n", layer_index[0], ra->Kc - 1, N - 1);
    fclose(f);
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("gnuplot not found: plots skipped (apt-get install gnuplot-nox); data and script in %s\n", dir);
        return 0;
    }
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot plots.gp", dir);
    if (system(cmd) != 0) return gma_errorf("%s: gnuplot failed", p);
    printf("plots: %s/utilisation.png %s/heatmap.png\n", dir, dir);
    return 0;
}

static int put_at(FILE *f, long off, const void *p, size_t n) {
    if (fseek(f, off, SEEK_SET) != 0 || fwrite(p, 1, n, f) != n) return -1;
    return 0;
}

/* The recall task: the two rules that use no key-value matching beside the model, over all
 * queries and at each of the first 8 (all of the first RECALL_EVAL_Q in the JSON). */
static void recall_print(const EvalResult *r, const RecallTask *t) {
    int K = (t->vocab - 2) / 2, Qp = GMA_MIN(r->queries, 8);
    printf("baselines (no key-value matching): most frequent value %.4f | most frequent not yet answered %.4f | "
           "chance %.4f\n", r->base_freq, r->base_unans, 1.0 / (t->vocab - 2 - K));
    printf("acc by query (model / most frequent / not yet answered):");
    for (int q = 0; q < Qp; q++)
        printf("%s %d: %.3f/%.3f/%.3f", q ? " |" : "", q + 1, r->query_acc[q], r->query_freq[q], r->query_unans[q]);
    printf("%s\n", r->queries > Qp ? " | ..." : "");
}

static cJSON *recall_json(const EvalResult *r, const RecallTask *t) {
    int K = (t->vocab - 2) / 2;
    cJSON *o = cJSON_CreateObject(), *q = cJSON_AddArrayToObject(o, "by_query");
    cJSON_AddNumberToObject(o, "queries", r->queries);
    cJSON_AddNumberToObject(o, "most_frequent", r->base_freq);
    cJSON_AddNumberToObject(o, "most_frequent_unanswered", r->base_unans);
    cJSON_AddNumberToObject(o, "chance", 1.0 / (t->vocab - 2 - K));
    for (int i = 0; i < GMA_MIN(r->queries, RECALL_EVAL_Q); i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "acc", r->query_acc[i]);
        cJSON_AddNumberToObject(e, "most_frequent", r->query_freq[i]);
        cJSON_AddNumberToObject(e, "most_frequent_unanswered", r->query_unans[i]);
        cJSON_AddItemToArray(q, e);
    }
    return o;
}

static int run_analysis(Model *m, const Config *cfg, const LmData *d, int split, int B, int N, int analyze,
                        const char *ajson, const char *json, const char *dump) {
    int L = model_gma_layers(m), H = m->H, Kc = 0, *li = xcalloc(L, sizeof(int)), nl = 0;
    for (int l = 0; l < m->L; l++) {
        Mixer *mx = m->blocks[l].mixer;
        if (!mx->vt->health) continue;
        li[nl++] = l;
        Kc = mx->vt->health->n_components(mx);
    }
    int V = m->V, *cat = xcalloc(V, sizeof(int)), ncat;
    char **text = NULL;
    const char *const *names;
    if (d->is_recall) {
        int K = (cfg->data.recall_vocab - 2) / 2;
        for (int i = 0; i < V; i++) cat[i] = i == 0 ? 0 : i == 1 ? 1 : i < 2 + K ? 2 : 3;
        ncat = 4, names = RECALL_CATS;
    } else {
        text = token_texts(cfg, V);
        if (!text && analyze) /* the categories only matter to the analysis, not to a dump */
            fprintf(stderr, "gmaeval: --analyze: no tokenizer named by %s/meta.json: every token counts as \"other\"\n",
                    cfg->data.path);
        for (int i = 0; i < V; i++) cat[i] = text ? token_category(text[i]) : CAT_OTHER;
        ncat = N_TEXT_CATS, names = TEXT_CATS;
    }
    RouteAnalysis ra;
    ra_init(&ra, L, H, Kc, V, ncat, names);
    long W = lmdata_eval_windows(d, split, N);
    FILE *df = NULL;
    long hdr = 8 + 6 * 4 + 4L * L, tokoff = hdr, goff = hdr + 4L * W * N;
    if (dump) {
        df = fopen(dump, "wb");
        if (!df) return (fprintf(stderr, "gmaeval: %s: cannot open for writing\n", dump), 1);
        uint32_t h6[6] = {1, (uint32_t)L, (uint32_t)W, (uint32_t)H, (uint32_t)N, (uint32_t)Kc};
        int32_t *lidx = xmalloc(sizeof(int32_t) * L);
        for (int i = 0; i < L; i++) lidx[i] = li[i];
        put_at(df, 0, "GMARESP1", 8);
        put_at(df, 8, h6, sizeof h6);
        put_at(df, 32, lidx, sizeof(int32_t) * L);
        free(lidx);
    }
    int32_t *tok = xmalloc(sizeof(int32_t) * B * N), *tgt = xmalloc(sizeof(int32_t) * B * N);
    uint8_t *score = xmalloc((size_t)B * N);
    size_t gs = (size_t)B * H * N * Kc;
    float *g = xmalloc(sizeof(float) * gs), *heat = xcalloc((size_t)N * Kc, sizeof(float));
    long nb = (W + B - 1) / B, w0 = 0;
    int rc = 0;
    for (long b = 0; b < nb; b++) {
        int filled = lmdata_eval_batch(d, split, b, B, N, tok, tgt);
        if (!filled) break;
        LossStats st;
        if (model_forward(m, tok, tgt, B, N, NULL, 0, &st, 0, 0) != 0) {
            rc = fail(1);
            break;
        }
        /* shards: the scored positions; recall (only query keys are scored): every non-pad input */
        for (long i = 0; i < (long)B * N; i++)
            score[i] = i < (long)filled * N && (d->is_recall ? tok[i] != 0 : tgt[i] >= 0);
        for (int s = 0; s < L; s++) {
            Mixer *mx = m->blocks[li[s]].mixer;
            const real *gq = mx->vt->health->query_resp(mx, m->blocks[li[s]].act, B, N);
            if (!gq) continue; /* auto on its sdpa path: no responsibilities */
            g_ops->to_host(g, gq, sizeof(float) * gs);
            ra_add(&ra, s, g, tok, score, B, N, cat);
            if (b == 0 && s == 0) memcpy(heat, g, sizeof(float) * N * Kc); /* window 0, head 0 */
            if (df)
                for (int i = 0; i < filled && w0 + i < W; i++)
                    put_at(df, goff + 4L * (((long)s * W + w0 + i) * H * N * Kc), g + (size_t)i * H * N * Kc,
                           sizeof(float) * H * N * Kc);
        }
        if (df)
            for (int i = 0; i < filled && w0 + i < W; i++) put_at(df, tokoff + 4L * (w0 + i) * N, tok + (size_t)i * N, 4L * N);
        ra_next_batch(&ra, tok, score, B, N);
        w0 += filled;
    }
    if (df) {
        if (fclose(df) != 0) rc = (fprintf(stderr, "gmaeval: %s: write failed\n", dump), 1);
        else printf("responsibilities: %s (%d layers x %ld windows x %d heads x %d x %d float32)\n", dump, L, W, H, N, Kc);
    }
    if (!rc && analyze) {
        char stem[2048], p[2200];
        if (ajson) stem_of(stem, sizeof stem, ajson);
        else if (json) {
            stem_of(stem, sizeof stem, json);
            strncat(stem, ".analysis", sizeof stem - strlen(stem) - 1);
        } else snprintf(stem, sizeof stem, "analysis");
        char *js = ra_json(&ra, li, (const char *const *)text, 10);
        snprintf(p, sizeof p, "%s.json", stem);
        if (ajson) snprintf(p, sizeof p, "%s", ajson);
        if (gma_write_file_atomic(p, js, strlen(js)) != 0) rc = fail(1);
        free(js);
        ra_report(&ra, li, (const char *const *)text, stdout);
        printf("analysis: %s\n", p);
        snprintf(p, sizeof p, "%s.txt", stem);
        FILE *f = fopen(p, "w");
        if (f) {
            ra_report(&ra, li, (const char *const *)text, f);
            fclose(f);
        }
        snprintf(p, sizeof p, "%s_plots", stem);
        if (!rc && write_plots(p, &ra, li, heat, N) != 0) rc = fail(1);
    }
    if (text)
        for (int i = 0; i < V; i++) free(text[i]);
    free(text);
    free(cat);
    free(li);
    free(tok);
    free(tgt);
    free(score);
    free(g);
    free(heat);
    ra_free(&ra);
    return rc;
}

int main(int argc, char **argv) {
    gma_openmp_env(argv);
    if (cli_version("gmaeval", argc, argv)) return 0;
    const char *ckpt = NULL, *data = NULL, *json = NULL, *device = NULL, *ajson = NULL, *dump = NULL, *data_path = NULL;
    int analyze = 0, drop_last = 0;
    long seq_len = 0, batch = 0, stride = -1, threads = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int nx = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--checkpoint") && nx) ckpt = argv[++i];
        else if (!strcmp(a, "--data") && nx) data = argv[++i];
        else if (!strcmp(a, "--data-path") && nx) data_path = argv[++i];
        else if (!strcmp(a, "--json") && nx) json = argv[++i];
        else if (!strcmp(a, "--analyze")) analyze = 1;
        else if (!strcmp(a, "--drop-last")) drop_last = 1;
        else if (!strcmp(a, "--analyze-json") && nx) ajson = argv[++i], analyze = 1;
        else if (!strcmp(a, "--dump-responsibilities") && nx) dump = argv[++i];
        else if (!strcmp(a, "--device") && nx) device = argv[++i];
        else if (!strcmp(a, "--seq-len") && nx) seq_len = parse_int(a, argv[++i], 1);
        else if (!strcmp(a, "--batch") && nx) batch = parse_int(a, argv[++i], 1);
        else if (!strcmp(a, "--stride") && nx) stride = parse_int(a, argv[++i], 0);
        else if (!strcmp(a, "--threads") && nx) threads = parse_int(a, argv[++i], 0);
        else {
            fprintf(stderr, "gmaeval: unknown or incomplete option \"%s\" (see --help)\n", a);
            return 2;
        }
    }
    if (!ckpt || !data) {
        fprintf(stderr, "gmaeval: %s is required (see --help)\n", !ckpt ? "--checkpoint" : "--data");
        return 2;
    }
    char dir[2048];
    Config cfg;
    if (ckpt_open_config(ckpt, device, threads, dir, sizeof dir, &cfg) != 0) return fail(2);
    if (seq_len > cfg.model.max_seq_len) {
        fprintf(stderr, "gmaeval: --seq-len %ld is longer than the model's max_seq_len %d\n", seq_len, cfg.model.max_seq_len);
        return 2;
    }
    int N = seq_len ? (int)seq_len : cfg.train.seq_len, B = batch ? (int)batch : cfg.train.batch_size;
    if (stride > N) { /* a window of N tokens cannot score the last S > N of them */
        fprintf(stderr, "gmaeval: --stride %ld is larger than the window length %d (--seq-len)\n", stride, N);
        return 2;
    }
    if (stride >= 0) cfg.data.eval_stride = (int)stride;
    cfg.train.seq_len = N;
    if (ops_select(cfg.device) != 0) return fail(2);
    ops_set_threads(cfg.threads);
    if (!strcmp(cfg.model.task, "classify")) return eval_classifier(&cfg, dir, data, B, drop_last, json);
    if (drop_last) {
        fprintf(stderr, "gmaeval: --drop-last is for classifiers; %s is a language model\n", dir);
        return 2;
    }
    LmData d;
    int split = lmdata_split_index(data), split_file = split < 0;
    if (split >= 0) {
        /* the data directory, wherever the run and the data went (lmmeta_find_data); only
         * the split evaluated is opened */
        if (!strcmp(cfg.data.source, "shards")) {
            char run[2048], found[CFG_STR];
            lmmeta_run_dir(dir, run, sizeof run); /* without data.json: the folder above the checkpoint */
            if (lmmeta_find_data(cfg.data.path, run, data_path, "--data-path DIR", found, sizeof found) != 0)
                return fail(2);
            snprintf(cfg.data.path, sizeof cfg.data.path, "%s", found);
            if (check_identity(dir, found, NULL) != 0) return fail(2);
        }
        if (lmdata_open_splits(&d, &cfg, 1u << split, split) != 0) return fail(2);
    } else {
        if (lmdata_open_file(&d, data) != 0) return fail(2);
        if (check_identity(dir, NULL, data) != 0) return lmdata_close(&d), fail(2);
        d.eval_stride = cfg.data.eval_stride;
        split = SPLIT_TEST;
    }
    if (d.vocab > (uint32_t)cfg.model.vocab_size) {
        fprintf(stderr, "gmaeval: %s: vocabulary %u is larger than the model's %d\n", data, d.vocab, cfg.model.vocab_size);
        return 2;
    }
    Model m;
    if (model_build(&m, &cfg) != 0) return fail(2);
    if (model_check_memory(&m, B, N) != 0) {
        gma_error_prefix("%s", dir);
        return fail(2);
    }
    model_alloc(&m, B, N);
    if (ckpt_load(&m, NULL, dir) != 0) return fail(2);
    if ((analyze || dump) && model_gma_layers(&m) == 0) {
        fprintf(stderr, "gmaeval: %s: the model has no gma layer\n", analyze ? "--analyze" : "--dump-responsibilities");
        return 2;
    }
    double t0 = gma_now();
    EvalResult r;
    if (evaluate(&m, &d, split, B, N, 0, &r) != 0) return fail(1);
    if (!isfinite(r.loss)) { /* huge or broken weights: no figure to print or write */
        fprintf(stderr, "gmaeval: %s: the %s loss is not finite (%g) from window %ld on (%d tokens each): the weights give "
                "non-finite logits\n", dir, split_file ? data : lmdata_split_name(split), r.loss, r.bad_window, N);
        return 1;
    }
    double dt = gma_now() - t0;
    /* labelled values: ppl; word ppl when the data counts words; acc where it is the
     * measure (the recall task); the JSON has them all */
    char nt[32], nw[32], nwin[32];
    printf("checkpoint %s | data %s\n", dir, split_file ? data : d.is_recall ? "recall" : d.is_mqar ? "mqar" : cfg.data.path);
    printf("%s loss %.4f | ppl %.3f", split_file ? "file" : lmdata_split_name(split), r.loss, r.ppl);
    if (r.word_ppl > 0) printf(" | word ppl %.3f (%s words)", r.word_ppl, fmt_count(nw, sizeof nw, r.words));
    if (d.is_recall || d.is_mqar) printf(" | acc %.4f", r.acc);
    printf(" | %s tokens in %s windows | %.1f s\n", fmt_count(nt, sizeof nt, r.tokens),
           fmt_count(nwin, sizeof nwin, (double)r.windows), dt);
    if (r.queries) recall_print(&r, &d.recall);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "checkpoint", dir);
        cJSON_AddStringToObject(o, "data", data);
        if (r.queries) cJSON_AddItemToObject(o, "recall", recall_json(&r, &d.recall));
        cJSON_AddNumberToObject(o, "seq_len", N);
        cJSON_AddNumberToObject(o, "stride", cfg.data.eval_stride);
        cJSON_AddNumberToObject(o, "windows", (double)r.windows);
        cJSON_AddNumberToObject(o, "tokens", r.tokens);
        cJSON_AddNumberToObject(o, "loss", r.loss);
        cJSON_AddNumberToObject(o, "ppl", r.ppl);
        cJSON_AddNumberToObject(o, "acc", r.acc);
        if (r.word_ppl > 0) {
            cJSON_AddNumberToObject(o, "words", r.words);
            cJSON_AddNumberToObject(o, "word_ppl", r.word_ppl);
        }
        cJSON_AddNumberToObject(o, "seconds", dt);
        if (write_json(json, o)) return fail(1);
    }
    if (analyze || dump) {
        int rc = run_analysis(&m, &cfg, &d, split, B, N, analyze, ajson, json, dump);
        if (rc) return rc;
    }
    model_free(&m);
    lmdata_close(&d);
    return 0;
}
