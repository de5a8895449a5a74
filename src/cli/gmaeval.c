/* gmaeval.c: evaluate a checkpoint on a held-out split or a token shard file: loss,
 * token-level perplexity, accuracy (argmax; the recall task's figure of merit), word-level
 * perplexity when the data's meta.json gives the word count; printed and written as JSON.
 * A classifier checkpoint (model.task "classify", e.g. RUN/best) is evaluated on a split
 * of its classification data: loss and accuracy over the examples. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "data/lmdata.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "ops/ops.h"
#include "train/cls_task.h"
#include "train/evaluate.h"

static void usage(FILE *f) {
    fprintf(f, "usage: gmaeval --checkpoint PATH --data SPLIT|FILE [--seq-len N] [--batch B] [--stride S]\n"
               "               [--json OUT] [--device cpu|cuda] [--threads N]\n"
               "PATH: a checkpoint directory, a run directory (its latest checkpoint) or a model.safetensors.\n"
               "SPLIT: train, valid or test of the data the checkpoint was trained on; FILE: a token shard.\n");
}

static int fail(int code) {
    fprintf(stderr, "gmaeval: %s\n", gma_error());
    return code;
}

static long parse_int(const char *opt, const char *v, long lo) {
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo) {
        fprintf(stderr, "gmaeval: %s: \"%s\" is not an integer >= %ld\n", opt, v, lo);
        exit(2);
    }
    return x;
}

/* Classifier checkpoints: loss and accuracy on a split of the data the run trained on. */
static int eval_classifier(Config *cfg, const char *dir, const char *data, int B, const char *json) {
    int split = lmdata_split_index(data);
    if (split < 0) {
        fprintf(stderr, "gmaeval: --data %s: a classifier is evaluated on train, valid or test of its %s data (%s)\n", data,
                cfg->data.task, cfg->data.path);
        return 2;
    }
    ClsTask t;
    if (clstask_open(&t, cfg, 1u << split, B, stderr) != 0) return fail(2);
    Model m;
    if (model_build(&m, cfg) != 0) return fail(2);
    model_alloc(&m, B, t.max_len);
    if (ckpt_load(&m, NULL, dir) != 0) return fail(2);
    double t0 = gma_now();
    ClsEval r;
    if (clstask_evaluate(&t, &m, split, 0, &r) != 0) return fail(1);
    double dt = gma_now() - t0;
    printf("checkpoint %s\ndata %s (%s %s) | examples %ld | loss %.4f | acc %.4f | %.1f s\n", dir, data, cfg->data.task,
           cfg->data.path, r.examples, r.loss, r.acc, dt);
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
        char *s = cJSON_Print(o);
        cJSON_Delete(o);
        int rc = gma_write_file_atomic(json, s, strlen(s));
        free(s);
        if (rc) return fail(1);
    }
    model_free(&m);
    clstask_close(&t);
    return 0;
}

int main(int argc, char **argv) {
    gma_openmp_env(argv);
    const char *ckpt = NULL, *data = NULL, *json = NULL, *device = NULL;
    long seq_len = 0, batch = 0, stride = -1, threads = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int nx = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--checkpoint") && nx) ckpt = argv[++i];
        else if (!strcmp(a, "--data") && nx) data = argv[++i];
        else if (!strcmp(a, "--json") && nx) json = argv[++i];
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
        usage(stderr);
        return 2;
    }
    char dir[2048];
    Config cfg;
    if (ckpt_resolve(ckpt, dir, sizeof dir) != 0 || ckpt_read_config(dir, &cfg) != 0) return fail(2);
    if (device) snprintf(cfg.device, sizeof cfg.device, "%s", device);
    if (threads >= 0) cfg.threads = (int)threads;
    if (seq_len > cfg.model.max_seq_len) {
        fprintf(stderr, "gmaeval: --seq-len %ld is longer than the model's max_seq_len %d\n", seq_len, cfg.model.max_seq_len);
        return 2;
    }
    int N = seq_len ? (int)seq_len : cfg.train.seq_len, B = batch ? (int)batch : cfg.train.batch_size;
    if (stride >= 0) cfg.data.eval_stride = (int)stride;
    cfg.train.seq_len = N;
    if (ops_select(cfg.device) != 0) return fail(2);
    ops_set_threads(cfg.threads);
    if (!strcmp(cfg.model.task, "classify")) return eval_classifier(&cfg, dir, data, B, json);
    LmData d;
    int split = lmdata_split_index(data);
    if (split >= 0) {
        if (lmdata_open(&d, &cfg) != 0) return fail(2);
    } else {
        if (lmdata_open_file(&d, data) != 0) return fail(2);
        d.eval_stride = cfg.data.eval_stride;
        split = SPLIT_TEST;
    }
    if (d.vocab > (uint32_t)cfg.model.vocab_size) {
        fprintf(stderr, "gmaeval: %s: vocabulary %u is larger than the model's %d\n", data, d.vocab, cfg.model.vocab_size);
        return 2;
    }
    Model m;
    if (model_build(&m, &cfg) != 0) return fail(2);
    model_alloc(&m, B, N);
    if (ckpt_load(&m, NULL, dir) != 0) return fail(2);
    double t0 = gma_now();
    EvalResult r;
    if (evaluate(&m, &d, split, B, N, 0, &r) != 0) return fail(1);
    double dt = gma_now() - t0;
    printf("checkpoint %s\ndata %s | windows %ld | tokens %.0f | loss %.4f | ppl %.3f | acc %.4f", dir, data, r.windows,
           r.tokens, r.loss, r.ppl, r.acc);
    if (r.word_ppl > 0) printf(" | words %.0f | word ppl %.3f", r.words, r.word_ppl);
    printf(" | %.1f s\n", dt);
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "checkpoint", dir);
        cJSON_AddStringToObject(o, "data", data);
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
        char *s = cJSON_Print(o);
        cJSON_Delete(o);
        int rc = gma_write_file_atomic(json, s, strlen(s));
        free(s);
        if (rc) return fail(1);
    }
    model_free(&m);
    lmdata_close(&d);
    return 0;
}
