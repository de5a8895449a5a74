/* gmasample.c: generate text from a language-model checkpoint (model/generate.h): a
 * prompt (text through the tokenizer the training data was prepared with, or token ids),
 * continued token by token with temperature, top-k and top-p sampling, printed as it comes
 * and optionally written as JSON. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "data/lm/lmdata.h"
#include "data/lm/lmmeta.h"
#include "data/text/tokenizer.h"
#include "data/text/unicode.h"
#include "model/checkpoint.h"
#include "model/generate.h"
#include "model/model.h"
#include "cli/args/version.h"
#include "ops/ops.h"
#include "train/config_registry.h"

static void usage(FILE *f) {
    fprintf(f, "usage: gmasample --checkpoint PATH [--prompt TEXT | --prompt-file FILE | --prompt-ids \"ID ...\"]\n"
               "                 [--tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--samples M]\n"
               "                 [--tokenizer SPEC [--vocab DIR]] [--json OUT] [--device cpu|cuda] [--threads N] [--no-cache]\n"
               "       gmasample --help | --version\n"
               "PATH: a checkpoint directory, a run directory (its latest checkpoint) or a model.safetensors.\n"
               "The text is encoded and decoded with the tokenizer the run copied (RUN/data.json, RUN/tokenizer/),\n"
               "else the one the training data's meta.json names (gmadata prepare), or --tokenizer (gpt2,\n"
               "bpe:DIR, word:FILE, bytes). Without a tokenizer (the\n"
               "recall task) prompts are --prompt-ids and the output is ids. Without a prompt, generation starts\n"
               "from <|endoftext|> or <eos> when the tokenizer has one.\n"
               "--tokens N new tokens per sample (default 128); --temperature T (default 1; 0 = greedy);\n"
               "--top-k K (default 0 = all); --top-p P in (0, 1] (default 1); --seed S (default 1337);\n"
               "--samples M (default 1), sample m drawn with the stream (S, m); up to max_seq_len samples decode\n"
               "as one batch (one step per position for all of them), printed when the batch is done.\n"
               "Decoding is incremental (one step per token on each mixer's state; not auto with its threshold\n"
               "inside the window) while the sequence fits model.max_seq_len; otherwise, and with --no-cache,\n"
               "one full forward per token.\n");
}

static int fail(int code) {
    fprintf(stderr, "gmasample: %s\n", gma_error());
    return code;
}

typedef struct Out {
    Tokenizer *tk;
    int32_t *ids; /* prompt + new tokens */
    int n, shown; /* ids, ids already printed (without a tokenizer) */
    size_t printed; /* bytes of the decoded text already printed */
    int stream;   /* print each token as it comes (one sample at a time) */
} Out;

/* print what the tokens after the printed part add: the decoded text grows (byte-level
 * tokens may end inside a UTF-8 character; the terminal joins the bytes), or the ids */
static int show(Out *o) {
    if (!o->tk) {
        for (; o->shown < o->n; o->shown++) printf(o->shown ? " %d" : "%d", o->ids[o->shown]);
    } else {
        size_t len;
        char *text = tokenizer_decode_i32(o->tk, o->ids, (size_t)o->n, &len);
        if (!text) return -1;
        if (len > o->printed) fwrite(text + o->printed, 1, len - o->printed, stdout);
        o->printed = len > o->printed ? len : o->printed;
        free(text);
    }
    fflush(stdout);
    return 0;
}

/* the new token of sample b of the batch (model_generate_batch) */
static int emit(void *ctx, int b, int32_t token) {
    Out *o = (Out *)ctx + b;
    o->ids[o->n++] = token;
    return o->stream ? show(o) : 0;
}

/* the prompt as ids: text through the tokenizer, --prompt-ids, or the start token */
static int32_t *prompt_ids(Tokenizer *tk, const char *text, size_t text_len, const char *ids, int *np) {
    int32_t *p = NULL;
    *np = 0;
    if (ids) {
        const char *s = ids;
        size_t cap = strlen(ids) / 2 + 2;
        p = xmalloc(sizeof(int32_t) * cap);
        while (*s) {
            while (*s == ' ' || *s == ',' || *s == '\t') s++;
            if (!*s) break;
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s || v < 0 || v > INT32_MAX) {
                free(p);
                gma_errorf("--prompt-ids: \"%.20s\" at offset %ld is not a token id", s, (long)(s - ids));
                return NULL;
            }
            p[(*np)++] = (int32_t)v;
            s = end;
        }
    } else if (text && text_len > 0) {
        if (!tk) {
            gma_errorf("--prompt: this checkpoint's data has no tokenizer (meta.json); give --prompt-ids or --tokenizer");
            return NULL;
        }
        if (tokenizer_encode_i32(tk, text, text_len, &p, np) != 0) return NULL;
    } else {
        long start = tokenizer_start_id(tk);
        if (start < 0) {
            gma_errorf("a prompt is required (--prompt, --prompt-file or --prompt-ids): %s", tk ? "the tokenizer has no <|endoftext|> or <eos> to start from" : "there is no tokenizer");
            return NULL;
        }
        p = xmalloc(sizeof(int32_t));
        p[0] = (int32_t)start;
        *np = 1;
    }
    if (*np == 0) {
        free(p);
        gma_errorf("the prompt is empty");
        return NULL;
    }
    return p;
}

int main(int argc, char **argv) {
    gma_openmp_env(argv);
    config_register_all(); /* every module's config section, before the checkpoint's config */
    if (cli_version("gmasample", argc, argv)) return 0;
    const char *ckpt = NULL, *prompt = NULL, *pfile = NULL, *pids = NULL, *json = NULL, *device = NULL, *tkspec = NULL,
               *vocab = "data/gpt2";
    long tokens = 128, top_k = 0, seed = 1337, samples = 1, threads = -1;
    double temperature = 1, top_p = 1;
    int no_cache = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--no-cache")) {
            no_cache = 1;
            continue;
        }
        if (!v) bad = 1;
        else if (!strcmp(a, "--checkpoint")) ckpt = v;
        else if (!strcmp(a, "--prompt")) prompt = v;
        else if (!strcmp(a, "--prompt-file")) pfile = v;
        else if (!strcmp(a, "--prompt-ids")) pids = v;
        else if (!strcmp(a, "--json")) json = v;
        else if (!strcmp(a, "--device")) device = v;
        else if (!strcmp(a, "--tokenizer")) tkspec = v;
        else if (!strcmp(a, "--vocab")) vocab = v;
        else if (!strcmp(a, "--tokens")) bad = gma_parse_long(v, 1, 1 << 24, &tokens) ? 2 : 0;
        else if (!strcmp(a, "--top-k")) bad = gma_parse_long(v, 0, INT_MAX, &top_k) ? 2 : 0;
        else if (!strcmp(a, "--seed")) bad = gma_parse_long(v, 0, LONG_MAX, &seed) ? 2 : 0;
        else if (!strcmp(a, "--samples")) bad = gma_parse_long(v, 1, 100000, &samples) ? 2 : 0;
        else if (!strcmp(a, "--threads")) bad = gma_parse_long(v, 0, 1024, &threads) ? 2 : 0;
        else if (!strcmp(a, "--temperature")) bad = gma_parse_double(v, 0, 1e6, &temperature) ? 2 : 0;
        else if (!strcmp(a, "--top-p")) bad = gma_parse_double(v, 1e-9, 1, &top_p) ? 2 : 0;
        else bad = 1;
        if (bad == 1) {
            fprintf(stderr, "gmasample: unknown or incomplete option \"%s\" (see --help)\n", a);
            return 2;
        }
        if (bad == 2) {
            fprintf(stderr, "gmasample: %s: \"%s\" is out of range or not a number (see --help)\n", a, v);
            return 2;
        }
        i++;
    }
    if (!ckpt) {
        fprintf(stderr, "gmasample: --checkpoint is required (see --help)\n");
        return 2;
    }
    if (!!prompt + !!pfile + !!pids > 1) {
        fprintf(stderr, "gmasample: give one of --prompt, --prompt-file and --prompt-ids\n");
        return 2;
    }
    char dir[2048];
    Config cfg;
    if (ckpt_open_config(ckpt, device, threads, dir, sizeof dir, &cfg) != 0) return fail(2);
    if (cfg.model.task == MODEL_CLASSIFY) {
        fprintf(stderr, "gmasample: %s: a classifier checkpoint does not generate text\n", dir);
        return 2;
    }
    if (!cfg.model.causal) {
        fprintf(stderr, "gmasample: %s: the model is bidirectional (model.causal false) and cannot generate text\n", dir);
        return 2;
    }
    Tokenizer *tk = NULL;
    if (tkspec) {
        if (!(tk = tokenizer_load(tkspec, vocab))) return fail(2);
    } else if (cfg.data.path[0] && cfg.data.source == DATA_shards) {
        /* the run's copy of the tokenizer (RUN/data.json), else the data directory's */
        char run[2048], found[CFG_STR];
        lmmeta_run_dir(dir, run, sizeof run);
        int have_data = lmmeta_find_data(cfg.data.path, run, NULL, "--tokenizer", found, sizeof found) == 0;
        if (!(tk = lmmeta_ckpt_tokenizer(dir, have_data ? found : NULL)) && (prompt || pfile)) return fail(2);
    }
    if (tk && tokenizer_vocab_size(tk) > (uint32_t)cfg.model.vocab_size) {
        fprintf(stderr, "gmasample: the tokenizer's vocabulary (%u) is larger than the model's (%d)\n",
                tokenizer_vocab_size(tk), cfg.model.vocab_size);
        return 2;
    }
    size_t text_len = prompt ? strlen(prompt) : 0;
    char *ftext = NULL;
    if (pfile && !(ftext = gma_read_file(pfile, &text_len))) return fail(2);
    int np;
    int32_t *p = prompt_ids(tk, pfile ? ftext : prompt, text_len, pids, &np);
    if (!p) return fail(2);
    for (int i = 0; i < np; i++)
        if (p[i] >= cfg.model.vocab_size) {
            fprintf(stderr, "gmasample: prompt token %d (position %d) is outside the model's vocabulary [0, %d)\n", p[i], i,
                    cfg.model.vocab_size);
            return 2;
        }
    if (ops_select(cfg.device) != 0) return fail(2);
    ops_set_threads(cfg.threads);
    Model m;
    int W = cfg.model.max_seq_len;
    if (model_build(&m, &cfg) != 0) return fail(2);
    if (model_check_memory(&m, 1, W) != 0) return fail(2);
    model_alloc(&m, 1, W);
    if (ckpt_load(&m, NULL, dir) != 0) return fail(2);
    if (np > W) /* model_generate_batch: the context is the last W tokens */
        fprintf(stderr, "gmasample: the prompt's %d tokens are more than model.max_seq_len %d: the model sees only its last %d\n",
                np, W, W);
    SampleOpts so = {.temperature = temperature, .top_k = (int)top_k, .top_p = top_p, .no_cache = no_cache,
                     .vocab_limit = tk ? (int)tokenizer_vocab_size(tk) : 0};
    fprintf(stderr, "gmasample: %s | %s | prompt %d tokens | %ld new | temperature %g top-k %ld top-p %g seed %ld | %s\n",
            dir, tk ? tokenizer_spec(tk) : "token ids", np, tokens, temperature, top_k, top_p, seed,
            !no_cache && model_can_decode(&m) ? "incremental decoding" : "a full forward per token");
    cJSON *root = cJSON_CreateObject(), *arr = NULL;
    cJSON_AddStringToObject(root, "checkpoint", dir);
    cJSON_AddNumberToObject(root, "temperature", temperature);
    cJSON_AddNumberToObject(root, "top_k", (double)top_k);
    cJSON_AddNumberToObject(root, "top_p", top_p);
    cJSON_AddNumberToObject(root, "seed", (double)seed);
    cJSON_AddItemToObject(root, "prompt_ids", cJSON_CreateIntArray(p, np));
    arr = cJSON_AddArrayToObject(root, "samples");
    int rc = 0;
    double t0 = gma_now();
    /* the samples in batches of up to max_seq_len sequences, one decode step per position
     * for a whole batch (the rows the model is allocated for); one sample streams */
    long chunk = samples < W ? samples : W;
    for (long s0 = 0; s0 < samples && rc == 0; s0 += chunk) {
        int M = (int)(samples - s0 < chunk ? samples - s0 : chunk);
        Out *outs = xcalloc((size_t)M, sizeof(Out));
        Rng *rngs = xcalloc((size_t)M, sizeof(Rng));
        for (int b = 0; b < M; b++) {
            outs[b] = (Out){.tk = tk, .ids = xmalloc(sizeof(int32_t) * (size_t)(np + tokens)), .n = np, .stream = M == 1};
            memcpy(outs[b].ids, p, sizeof(int32_t) * (size_t)np);
            rng_seed2(&rngs[b], (uint64_t)seed, (uint64_t)(s0 + b));
        }
        if (M == 1) { /* the prompt as the tokenizer gives it back, then the tokens as they come */
            if (s0 > 0) printf("\n----\n");
            rc = show(&outs[0]);
        }
        if (rc == 0) rc = model_generate_batch(&m, p, np, (int)tokens, M, &so, rngs, emit, outs);
        for (int b = 0; b < M; b++) {
            Out *o = &outs[b];
            if (M > 1 && rc == 0) { /* the whole sample at once */
                if (s0 + b > 0) printf("\n----\n");
                int n = o->n;
                o->n = np;
                if (show(o) != 0) rc = -1; /* the prompt, then the rest */
                o->n = n;
                if (rc == 0 && show(o) != 0) rc = -1;
            }
            cJSON *e = cJSON_CreateObject();
            cJSON_AddItemToObject(e, "ids", cJSON_CreateIntArray(o->ids + np, o->n - np));
            if (tk && rc == 0) {
                size_t len;
                char *text = tokenizer_decode_i32(tk, o->ids + np, (size_t)(o->n - np), &len);
                if (text) {
                    char *u = utf8_sanitize(text, len);
                    cJSON_AddStringToObject(e, "text", u);
                    free(u);
                }
                free(text);
            }
            cJSON_AddItemToArray(arr, e);
            free(o->ids);
        }
        free(outs);
        free(rngs);
    }
    printf("\n");
    fflush(stdout); /* the text before the timing line on stderr, also when both go to one file */
    double dt = gma_now() - t0;
    if (rc != 0) {
        cJSON_Delete(root);
        gma_error_prefix("%s", dir);
        return fail(1);
    }
    fprintf(stderr, "gmasample: %ld x %ld tokens in %.2f s (%.1f tokens/s)\n", samples, tokens, dt,
            dt > 0 ? (double)(samples * tokens) / dt : 0);
    cJSON_AddNumberToObject(root, "tokens_per_s", dt > 0 ? (double)(samples * tokens) / dt : 0);
    if (json) {
        char *js = cJSON_Print(root);
        int w = gma_write_file_atomic(json, js, strlen(js));
        free(js);
        if (w != 0) {
            cJSON_Delete(root);
            return fail(1);
        }
    }
    cJSON_Delete(root);
    free(p);
    free(ftext);
    tokenizer_free(tk);
    model_free(&m);
    return 0;
}
