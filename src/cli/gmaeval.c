/* gmaeval.c: evaluate a checkpoint on a held-out split or a token shard file: loss,
 * token-level perplexity, accuracy (argmax; the recall task's figure of merit), word-level
 * perplexity when the data's meta.json gives the word count; printed and written as JSON.
 * --text FILE: a text file encoded with the run's own tokenizer and scored the same way
 * (word-level perplexity and bits per byte from the file's own counts).
 * A classifier checkpoint (model.task "classify", e.g. RUN/best) is evaluated on a split
 * of its classification data: loss and accuracy over the examples. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/json_nums.h"
#include "data/lm/lmdata.h"
#include "data/lm/dataid.h"
#include "data/lm/lmmeta.h"
#include "data/lm/prepare.h"
#include "data/lm/recall.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "cli/args/opts.h"
#include "cli/args/version.h"
#include "train/config_registry.h"
#include "ops/ops.h"
#include "train/cls_task.h"
#include "train/evaluate.h"
#include "nn/mixers/cross.h"
#include "data/lm/xmqar.h"
#include "analysis/route_eval.h"

/* the longest window (--seq-len, --ctx-len) a config holds: the range of train.seq_len and model.max_seq_len */
#define CTX_LEN_MAX (1 << 24)

static const char *const USAGE =
    "gmaeval --checkpoint PATH (--data SPLIT|FILE | --text FILE) [--data-path DIR] [--seq-len N] [--batch B] [--stride S]\n"
    "               [--bucket-size S] [--batches N] [--ctx-len M]"
" [--json OUT] [--device cpu|cuda] [--threads N] [--drop-last]\n"
    "               [--analyze] [--analyze-json FILE] [--dump-responsibilities FILE]\n";
static const char *const ABOUT =
    "PATH: a checkpoint directory, a run directory (its latest checkpoint) or a model.safetensors.\n"
    "SPLIT: train, valid or test of the data the checkpoint was trained on (that shard alone is read);\n"
    "  FILE: a token shard. The data directory is looked up at the absolute path the run recorded\n"
    "  (RUN/data.json), then at data.path from here, then from the run folder's parent and grandparent;\n"
    "  --data-path DIR gives it where it moved.\n"
    "--text FILE: a text file instead of --data, encoded with the run's own tokenizer (the run's copy, else\n"
    "  the one its data's meta.json names: as gmadata prepare encodes a split) and scored as a split; word ppl\n"
    "  (words counted as gmadata prepare counts them) and bits per byte (the scored tokens' NLL / ln 2 / the\n"
    "  file's bytes). A run without a tokenizer (a generated task) is refused.\n"
    "--analyze: routing analysis of the GMA layers (docs/routing.md): JSON to --analyze-json FILE (default\n"
    "  beside --json as X.analysis.json, else analysis.json), a readable report (stdout and FILE's .txt),\n"
    "  PNG plots in FILE's _plots/ directory through gnuplot when installed.\n"
    "--dump-responsibilities FILE: raw query responsibilities, binary layout in docs/analysis.md.\n"
    "--seq-len N: past the model's max_seq_len when its positions are \"sinusoidal\" (the table is extended) or\n"
    "  \"none\" and no mixer is sized by it (docs/longctx.md); --bucket-size S: loss and perplexity at window\n"
    "  positions [0, S), [S, 2S), ... as flash-linear-attention's evals/ppl.py (printed and in the JSON).\n"
    "--batches N: the first N batches of the split only (0, the default: all of it).\n"
    "--ctx-len M: a cross model (cross.mixer gma or sdpa) read with a context of M positions instead of its\n"
    "  cross.ctx_len, the queries after it as many as in training (the window M + those unless --seq-len); on\n"
    "  data.source xmqar the context holds the same pairs, zeros to M (docs/cross.md, \"Longer contexts\").\n"
    "--drop-last: classifiers: score whole batches of B (--batch, else the run's train.batch_size) only,\n"
    "  as the trainer with train.eval_drop_last (the LRA release's drop_remainder).\n";

/* the command line */
typedef struct Args {
    const char *ckpt, *data, *json, *device, *ajson, *dump, *data_path, *text;
    int analyze, drop_last, seq_len, seq_given, batch, stride, threads, bucket, batches, ctx_len;
} Args;

/* OPTS_GO_ON, or the exit code (--help 0, bad input 2) */
static int parse_args(Args *a, int argc, char **argv) {
    *a = (Args){.stride = -1, .threads = -1};
    const Opt opts[] = {
        OPTS("--checkpoint", &a->ckpt, "PATH", "the checkpoint, run or model.safetensors (required)"),
        OPTS("--data", &a->data, "SPLIT|FILE", "train, valid, test or a token shard (required)"),
        OPTS("--data-path", &a->data_path, "DIR", "where the run's data directory moved"),
        OPTS("--text", &a->text, "FILE", "a text file scored with the run's tokenizer (instead of --data)"),
        OPTI("--seq-len", &a->seq_len, 1, CTX_LEN_MAX, "window length [train.seq_len]"),
        OPTI("--batch", &a->batch, 1, INT_MAX, "windows per batch [train.batch_size]"),
        OPTI("--stride", &a->stride, 0, INT_MAX, "tokens scored per window [data.eval_stride]"),
        OPTI("--bucket-size", &a->bucket, 0, INT_MAX, "tokens per position bucket of the loss table (0 none)"),
        OPTI("--batches", &a->batches, 0, INT_MAX, "batches scored, 0 all [0]"),
        OPTI("--ctx-len", &a->ctx_len, 1, CTX_LEN_MAX, "a cross model's context length [cross.ctx_len]"),
        OPTS("--json", &a->json, "OUT", "also write the figures as JSON"),
        OPTS("--device", &a->device, "cpu|cuda", "backend (the config key device) [the run's]"),
        OPT_THREADS(&a->threads, "CPU threads, 0 all [the run's]"),
        OPTF("--drop-last", &a->drop_last, "classifiers: whole batches only"),
        OPTF("--analyze", &a->analyze, "routing analysis of the GMA layers"),
        OPTS("--analyze-json", &a->ajson, "FILE", "the analysis' JSON (implies --analyze)"),
        OPTS("--dump-responsibilities", &a->dump, "FILE", "raw query responsibilities"),
    };
    OptProg p = {.name = "gmaeval", .usage = USAGE, .about = ABOUT, .opts = opts, .n_opts = OPT_COUNT(opts),
                 .exit_codes = "0 done, 1 error while evaluating (non-finite loss, a write failed), 2 bad input"};
    int rc = cli_parse(&p, argc, argv, 1);
    if (rc != OPTS_GO_ON) return rc;
    if (a->ajson) a->analyze = 1;
    if (!a->ckpt || (!a->data && !a->text)) {
        fprintf(stderr, "gmaeval: %s is required (see --help)\n", !a->ckpt ? "--checkpoint" : "--data (or --text)");
        return 2;
    }
    if (a->data && a->text) {
        fprintf(stderr, "gmaeval: --data %s and --text %s: give one of them\n", a->data, a->text);
        return 2;
    }
    if (a->text) a->data = a->text; /* named so in the printout and the JSON */
    return OPTS_GO_ON;
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

/* The data scored must be of the tokenizer and vocabulary the run was trained on (the
 * identity RUN/data.json records, dataid.h): a data directory (file NULL) or one shard
 * file (with a meta.json beside it, its tokenizer too). A run that records none is not
 * checked. 0, or -1 with gma_error. */
static int check_identity(const char *ckdir, const char *data_dir, const char *file) {
    char run[2048], what[512];
    if (lmmeta_run_dir(ckdir, run, sizeof run) != 0) return 0;
    int rc = dataid_check(run, data_dir, file, 0, what, sizeof what);
    if (rc == 2)
        return gma_errorf("%s is not data of the tokenizer %s was trained on: %s (%s/data.json)", file ? file : data_dir, run,
                          what, run);
    return rc < 0 ? -1 : 0;
}

/* the classifier's figures as JSON: 0, or 1 with one line */
static int cls_json(const char *json, const Config *cfg, const char *dir, const char *data, const ClsEval *r, double dt) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "checkpoint", dir);
    cJSON_AddStringToObject(o, "data", data);
    cJSON_AddStringToObject(o, "task", cfg_enum_name(cfg, "data.task"));
    cJSON_AddStringToObject(o, "path", cfg->data.path);
    const JsonNum figures[] = {{"examples", (double)r->examples}, {"loss", r->loss}, {"acc", r->acc}, {"seconds", dt}};
    json_add_nums(o, figures, JSON_NUMS_N(figures));
    return write_json(json, o) ? fail(1) : 0;
}

/* the classifier's task on split, refused when --drop-last leaves no batch: 0 or 2 */
static int cls_open(ClsTask *t, Config *cfg, const char *data, int split, int B, int drop_last) {
    if (clstask_open(t, cfg, 1u << split, B, stderr) != 0) return fail(2);
    t->drop_last = drop_last;
    if (drop_last && t->split[split].n < B) {
        fprintf(stderr, "gmaeval: --drop-last: the %s split of %s holds %d examples, fewer than one batch of %d\n", data,
                cfg->data.path, t->split[split].n, B);
        clstask_close(t);
        return 2;
    }
    return 0;
}

/* Classifier checkpoints: loss and accuracy on a split of the data the run trained on. */
static int eval_classifier(Config *cfg, const char *dir, const char *data, int B, int drop_last, const char *json) {
    int split = lmdata_split_index(data), rc;
    if (split < 0) {
        fprintf(stderr, "gmaeval: --data %s: a classifier is evaluated on train, valid or test of its %s data (%s)\n", data,
                cfg_enum_name(cfg, "data.task"), cfg->data.path);
        return 2;
    }
    ClsTask t;
    if ((rc = cls_open(&t, cfg, data, split, B, drop_last)) != 0) return rc;
    Model m;
    if (model_build(&m, cfg) != 0) return fail(2);
    m.infer = 1; /* evaluation forwards only */
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
    printf("checkpoint %s | data %s %s\n%s loss %.4f | acc %.4f | %s examples | %.1f s\n", dir, cfg_enum_name(cfg, "data.task"),
           cfg->data.path, data, r.loss, r.acc, fmt_count(ex, sizeof ex, (double)r.examples), dt);
    if (json && (rc = cls_json(json, cfg, dir, data, &r, dt)) != 0) return rc;
    model_free(&m);
    clstask_close(&t);
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
    const JsonNum figures[] = {{"queries", r->queries}, {"most_frequent", r->base_freq},
                               {"most_frequent_unanswered", r->base_unans}, {"chance", 1.0 / (t->vocab - 2 - K)}};
    json_add_nums(o, figures, JSON_NUMS_N(figures));
    for (int i = 0; i < GMA_MIN(r->queries, RECALL_EVAL_Q); i++) {
        cJSON *e = cJSON_CreateObject();
        const JsonNum query[] = {{"acc", r->query_acc[i]}, {"most_frequent", r->query_freq[i]},
                                 {"most_frequent_unanswered", r->query_unans[i]}};
        json_add_nums(e, query, JSON_NUMS_N(query));
        cJSON_AddItemToArray(q, e);
    }
    return o;
}

/* passkey retrieval: exact and per-digit accuracy, overall and by the key's depth */
static void passkey_print(const EvalResult *r) {
    printf("passkey: exact %.4f | per digit %.4f | %.0f examples\nexact by depth:", r->pk_exact, r->pk_digit, r->pk_examples);
    for (int b = 0; b < PASSKEY_DEPTH_BUCKETS; b++)
        if (r->pk_depth_n[b] > 0) printf("%s %.1f-%.1f: %.3f", b ? " |" : "", (double)b / PASSKEY_DEPTH_BUCKETS,
                                         (double)(b + 1) / PASSKEY_DEPTH_BUCKETS, r->pk_depth_exact[b]);
    printf("\n");
}

static cJSON *passkey_json(const EvalResult *r) {
    cJSON *o = cJSON_CreateObject();
    const JsonNum figures[] = {{"examples", r->pk_examples}, {"exact", r->pk_exact}, {"digit", r->pk_digit}};
    json_add_nums(o, figures, JSON_NUMS_N(figures));
    cJSON *a = cJSON_AddArrayToObject(o, "by_depth");
    for (int b = 0; b < PASSKEY_DEPTH_BUCKETS; b++) {
        cJSON *e = cJSON_CreateObject();
        const JsonNum depth[] = {{"from", (double)b / PASSKEY_DEPTH_BUCKETS}, {"to", (double)(b + 1) / PASSKEY_DEPTH_BUCKETS},
                                 {"examples", r->pk_depth_n[b]}, {"exact", r->pk_depth_exact[b]},
                                 {"digit", r->pk_depth_digit[b]}};
        json_add_nums(e, depth, JSON_NUMS_N(depth));
        cJSON_AddItemToArray(a, e);
    }
    return o;
}

/* the loss by window position, one bucket a line */
static void buckets_print(const EvalResult *r, int N) {
    char nt[32];
    printf("by position (buckets of %d tokens):\n%-16s %12s %8s %10s\n", r->bucket, "positions", "tokens", "loss", "ppl");
    for (int i = 0; i < r->n_buckets; i++) {
        char pos[40];
        snprintf(pos, sizeof pos, "%ld-%ld", (long)i * r->bucket, GMA_MIN((long)(i + 1) * r->bucket, (long)N) - 1);
        if (r->bucket_tokens[i] > 0)
            printf("%-16s %12s %8.4f %10.3f\n", pos, fmt_count(nt, sizeof nt, r->bucket_tokens[i]), r->bucket_loss[i],
                   exp(r->bucket_loss[i]));
        else
            printf("%-16s %12s %8s %10s\n", pos, "0", "-", "-");
    }
}

static cJSON *buckets_json(const EvalResult *r, int N) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "bucket_size", r->bucket);
    cJSON *a = cJSON_AddArrayToObject(o, "buckets");
    for (int i = 0; i < r->n_buckets; i++) {
        cJSON *e = cJSON_CreateObject();
        const JsonNum bucket[] = {{"from", (double)i * r->bucket}, {"to", GMA_MIN((double)(i + 1) * r->bucket, (double)N)},
                                  {"tokens", r->bucket_tokens[i]}, {"loss", r->bucket_loss[i]},
                                  {"ppl", r->bucket_tokens[i] > 0 ? exp(r->bucket_loss[i]) : 0}};
        json_add_nums(e, bucket, JSON_NUMS_N(bucket));
        cJSON_AddItemToArray(a, e);
    }
    return o;
}

/* the evaluation's figures as JSON: 0, or 1 with one line */
static int lm_json(const Args *a, const char *dir, const Config *cfg, const LmData *d, const EvalResult *r, int N, double dt,
                   double bytes) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "checkpoint", dir);
    cJSON_AddStringToObject(o, "data", a->data);
    if (r->queries) cJSON_AddItemToObject(o, "recall", recall_json(r, lmdata_task(d, DATA_recall)));
    if (lmdata_task(d, DATA_passkey)) cJSON_AddItemToObject(o, "passkey", passkey_json(r));
    if (r->n_buckets) cJSON_AddItemToObject(o, "position_buckets", buckets_json(r, N));
    cJSON_AddNumberToObject(o, "seq_len", N);
    if (cross_cfg(cfg)->mixer != CROSS_NONE) cJSON_AddNumberToObject(o, "ctx_len", cross_cfg(cfg)->ctx_len);
    const JsonNum figures[] = {{"stride", cfg->data.eval_stride}, {"windows", (double)r->windows}, {"tokens", r->tokens},
                               {"loss", r->loss}, {"ppl", r->ppl}, {"acc", r->acc}};
    json_add_nums(o, figures, JSON_NUMS_N(figures));
    if (r->word_ppl > 0) {
        cJSON_AddNumberToObject(o, "words", r->words);
        cJSON_AddNumberToObject(o, "word_ppl", r->word_ppl);
    }
    if (bytes > 0) {
        cJSON_AddNumberToObject(o, "bytes", bytes);
        cJSON_AddNumberToObject(o, "bits_per_byte", r->loss * r->tokens / (bytes * M_LN2));
    }
    cJSON_AddNumberToObject(o, "seconds", dt);
    return write_json(a->json, o) ? fail(1) : 0;
}

/* labelled values: ppl; word ppl when the data counts words; acc where it is the measure
 * (the generated tasks: LmSource.scored); the JSON has them all */
static void lm_print(const Args *a, const char *dir, const Config *cfg, const LmData *d, int split, int split_file,
                     const EvalResult *r, double dt, double bytes) {
    char nt[32], nw[32], nwin[32];
    printf("checkpoint %s | data %s\n", dir, split_file ? a->data : d->src->label ? d->src->label : cfg->data.path);
    printf("%s loss %.4f | ppl %.3f", a->text ? "text" : split_file ? "file" : lmdata_split_name(split), r->loss, r->ppl);
    if (r->word_ppl > 0) printf(" | word ppl %.3f (%s words)", r->word_ppl, fmt_count(nw, sizeof nw, r->words));
    if (bytes > 0) printf(" | bits/byte %.4f", r->loss * r->tokens / (bytes * M_LN2));
    if (d->src->scored) printf(" | acc %.4f", r->acc);
    printf(" | %s tokens in %s windows | %.1f s\n", fmt_count(nt, sizeof nt, r->tokens),
           fmt_count(nwin, sizeof nwin, (double)r->windows), dt);
    if (r->queries) recall_print(r, lmdata_task(d, DATA_recall));
    if (lmdata_task(d, DATA_passkey)) passkey_print(r);
    if (r->n_buckets) buckets_print(r, r->window);
}

/* the data at windows of N tokens: a split of the run's (its directory found wherever the
 * run and the data went, lmmeta_find_data; only that split opened) or a shard file; *split
 * set. 0 or 2. */
static int open_data(LmData *d, Config *cfg, const Args *a, const char *dir, int N, int *split) {
    if ((*split = lmdata_split_index(a->data)) < 0) {
        if (lmdata_open_file(d, a->data) != 0) return fail(2);
        if (check_identity(dir, NULL, a->data) != 0) return lmdata_close(d), fail(2);
        d->eval_stride = cfg->data.eval_stride;
        *split = SPLIT_TEST;
    } else {
        if (cfg->data.source == DATA_shards) {
            char run[2048], found[CFG_STR];
            lmmeta_run_dir(dir, run, sizeof run); /* without data.json: the folder above the checkpoint */
            if (lmmeta_find_data(cfg->data.path, run, a->data_path, "--data-path DIR", found, sizeof found) != 0) {
                char opt[2100];
                snprintf(opt, sizeof opt, "%s/optim.safetensors", dir);
                if (!a->data_path && !gma_path_exists(opt)) /* no training state: an import, never trained on data */
                    gma_errorf("%s: no %s data: the checkpoint was never trained here (an import: its data.path %s names "
                               "no data of its own); give shards with --data FILE.bin or --data-path DIR (gmadata prepare "
                               "TEXT_DIR --tokenizer gpt2 --out DIR)", dir, a->data, cfg->data.path);
                return fail(2);
            }
            snprintf(cfg->data.path, sizeof cfg->data.path, "%s", found);
            if (check_identity(dir, found, NULL) != 0) return fail(2);
        }
        LmSpec spec = lmdata_spec(cfg, N);
        if (lmdata_open_splits(d, &spec, 1u << *split, *split) != 0) return fail(2);
    }
    if (d->vocab > (uint32_t)cfg->model.vocab_size) {
        fprintf(stderr, "gmaeval: %s: vocabulary %u is larger than the model's %d\n", a->data, d->vocab, cfg->model.vocab_size);
        return 2;
    }
    return 0;
}

/* --text FILE: its tokens through the run's tokenizer (the run's copy, else its data's, as
 * gmasample finds it), in memory as the test split, with the file's words; *ids (freed by the
 * caller) and *bytes set. 0 or 2 (one line: no tokenizer, an unreadable file, too few tokens). */
static int open_text(LmData *d, const Config *cfg, const Args *a, const char *dir, uint32_t **ids, double *bytes) {
    char run[2048], found[CFG_STR];
    int have_data = 0;
    if (cfg->data.path[0] && cfg->data.source == DATA_shards) {
        lmmeta_run_dir(dir, run, sizeof run);
        have_data = lmmeta_find_data(cfg->data.path, run, a->data_path, "--data-path DIR", found, sizeof found) == 0;
    }
    Tokenizer *tk = lmmeta_ckpt_tokenizer(dir, have_data ? found : NULL);
    if (!tk) {
        fprintf(stderr, "gmaeval: --text %s: %s has no tokenizer to encode it with (%s)\n", a->text, dir, gma_error());
        return 2;
    }
    if (tokenizer_vocab_size(tk) > (uint32_t)cfg->model.vocab_size) {
        fprintf(stderr, "gmaeval: --text %s: the tokenizer's vocabulary (%u) is larger than the model's (%d) of %s\n", a->text,
                tokenizer_vocab_size(tk), cfg->model.vocab_size, dir);
        tokenizer_free(tk);
        return 2;
    }
    /* the file read once: its words counted and its text encoded from the same bytes */
    TextCounts tc;
    size_t len = 0, n = 0;
    uint32_t *t = NULL;
    char *text = gma_read_file(a->text, &len);
    int rc = !text;
    if (text) {
        prepare_count_text(text, len, &tc);
        rc = tokenizer_encode(tk, text, len, &t, &n) != 0;
        free(text);
    }
    rc = rc || lmdata_open_tokens(d, a->text, t, n, tokenizer_vocab_size(tk), (double)tc.words) != 0;
    tokenizer_free(tk);
    if (rc) return free(t), fail(2);
    d->eval_stride = cfg->data.eval_stride;
    *ids = t;
    *bytes = (double)tc.bytes;
    return 0;
}

/* the model of the checkpoint for batches of B x N: 0 or 2 */
static int load_model(Model *m, const Args *a, const Config *cfg, const char *dir, int B, int N) {
    if (model_build(m, cfg) != 0) return fail(2);
    m->infer = 1; /* evaluation forwards only */
    if (model_check_memory(m, B, N) != 0) return gma_error_prefix("%s", dir), fail(2);
    model_alloc(m, B, N);
    if (ckpt_load(m, NULL, dir) != 0) return fail(2);
    if ((a->analyze || a->dump) && model_gma_layers(m) == 0) {
        fprintf(stderr, "gmaeval: %s: the model has no gma layer\n", a->analyze ? "--analyze" : "--dump-responsibilities");
        return 2;
    }
    return 0;
}

/* a language model on its data: the figures printed, in JSON, the analysis */
static int eval_lm(const Args *a, Config *cfg, const char *dir, int B, int N) {
    LmData d;
    Model m;
    int split = SPLIT_TEST, split_file = a->text || lmdata_split_index(a->data) < 0, rc;
    uint32_t *ids = NULL; /* --text: its tokens */
    double bytes = 0;
    if (a->bucket > 0 && GMA_DIV_UP(N, a->bucket) > EVAL_MAX_BUCKETS) {
        fprintf(stderr, "gmaeval: --bucket-size %d makes more than %d buckets of a window of %d\n", a->bucket, EVAL_MAX_BUCKETS, N);
        return 2;
    }
    if ((rc = a->text ? open_text(&d, cfg, a, dir, &ids, &bytes) : open_data(&d, cfg, a, dir, N, &split)) != 0 ||
        (rc = load_model(&m, a, cfg, dir, B, N)) != 0)
        return free(ids), rc;
    double t0 = gma_now();
    EvalResult r;
    if (evaluate_buckets(&m, &d, split, B, N, a->batches, a->bucket, &r) != 0) return fail(1);
    if (r.tokens == 0) { /* a loss of 0 over no token is no figure: e.g. MQAR examples longer than the window */
        fprintf(stderr, "gmaeval: %s: no token of %s%s%s was scored in %ld windows of %d tokens%s\n", dir,
                split_file ? "" : "the ", split_file ? a->data : lmdata_split_name(split), split_file ? "" : " split", r.windows, N,
                d.src->scored
                    ? ": every example's targets lie past the window (give a --seq-len that holds the data's examples)"
                    : "");
        return 2;
    }
    if (!isfinite(r.loss)) { /* huge or broken weights: no figure to print or write */
        fprintf(stderr, "gmaeval: %s: the %s loss is not finite (%g) from window %ld on (%d tokens each): the weights give "
                "non-finite logits\n", dir, split_file ? a->data : lmdata_split_name(split), r.loss, r.bad_window, N);
        return 1;
    }
    double dt = gma_now() - t0;
    lm_print(a, dir, cfg, &d, split, split_file, &r, dt, bytes);
    if (a->json && (rc = lm_json(a, dir, cfg, &d, &r, N, dt, bytes)) != 0) return rc;
    RouteEvalOpts ro = {a->analyze, a->ajson, a->json, a->dump, "gmaeval"};
    if ((a->analyze || a->dump) && route_eval_run(&m, cfg, &d, split, B, N, &ro) != 0) return fail(1);
    model_free(&m);
    lmdata_close(&d);
    free(ids);
    return 0;
}

/* --ctx-len M: a cross model's context of M positions, the query rows as many as in training
 * (a->seq_len M + those unless given); on xmqar data its context too. 0, or -1 with gma_error. */
static int set_ctx_len(Config *cfg, Args *a, const char *dir) {
    const CrossCfg *cc = cross_cfg(cfg);
    if (cc->mixer == CROSS_NONE)
        return gma_errorf("--ctx-len %d: %s is not a cross model (cross.mixer is none)", a->ctx_len, dir);
    int queries = cfg->train.seq_len - cc->ctx_len;
    if (!a->seq_len) { /* the window the training's query rows need after the new context */
        long n = (long)a->ctx_len + queries;
        if (queries <= 0 || n > CTX_LEN_MAX)
            return gma_errorf("--ctx-len %d: with the %d query positions of %s the window is %ld positions, more than %d",
                              a->ctx_len, queries, dir, n, CTX_LEN_MAX);
        a->seq_len = (int)n;
    } else if (a->seq_len <= a->ctx_len)
        return gma_errorf("--seq-len %d leaves no query after the context of --ctx-len %d", a->seq_len, a->ctx_len);
    char set[64];
    snprintf(set, sizeof set, "cross.ctx_len=%d", a->ctx_len);
    if (cfg_set(cfg, set) != 0) return -1;
    if (cfg->data.source == DATA_xmqar) {
        snprintf(set, sizeof set, "data.xmqar_ctx=%d", a->ctx_len);
        if (cfg_set(cfg, set) != 0) return -1;
        int pairs = xmqar_cfg(cfg)->pairs;
        if (2 * pairs > a->ctx_len)
            return gma_errorf("--ctx-len %d: the %d pairs of %s's data.xmqar_pairs take %d positions", a->ctx_len, pairs,
                              dir, 2 * pairs);
    }
    return 0;
}

int main(int argc, char **argv) {
    gma_openmp_env(argv);
    config_register_all(); /* every module's config section, before the checkpoint's config */
    if (cli_version("gmaeval", argc, argv)) return 0;
    Args a;
    int rc = parse_args(&a, argc, argv);
    if (rc != OPTS_GO_ON) return rc;
    char dir[2048];
    Config cfg;
    if (ckpt_open_config(a.ckpt, a.device, a.threads, dir, sizeof dir, &cfg) != 0) return fail(2);
    a.seq_given = a.seq_len > 0;
    if (a.ctx_len && set_ctx_len(&cfg, &a, dir) != 0) return fail(2);
    char given[96] = "";
    if (a.ctx_len && !a.seq_given) snprintf(given, sizeof given, "--ctx-len %d (a window of %d)", a.ctx_len, a.seq_len);
    if (model_extend_window(&cfg, a.seq_len, *given ? given : NULL, dir) != 0)
        return fail(2); /* past the training length: docs/longctx.md */
    int N = a.seq_len ? a.seq_len : cfg.train.seq_len, B = a.batch ? a.batch : cfg.train.batch_size;
    if (a.stride > N) { /* a window of N tokens cannot score the last S > N of them */
        fprintf(stderr, "gmaeval: --stride %d is larger than the window length %d (--seq-len)\n", a.stride, N);
        return 2;
    }
    if (a.stride >= 0) cfg.data.eval_stride = a.stride;
    if (ops_select(cfg.device) != 0) return fail(2);
    ops_set_threads(cfg.threads);
    if (cfg.model.task == MODEL_CLASSIFY && a.text) {
        fprintf(stderr, "gmaeval: --text %s: %s is a classifier; --text scores a language model\n", a.text, dir);
        return 2;
    }
    if (cfg.model.task == MODEL_CLASSIFY) return eval_classifier(&cfg, dir, a.data, B, a.drop_last, a.json);
    if (a.drop_last) {
        fprintf(stderr, "gmaeval: --drop-last is for classifiers; %s is a language model\n", dir);
        return 2;
    }
    return eval_lm(&a, &cfg, dir, B, N);
}
