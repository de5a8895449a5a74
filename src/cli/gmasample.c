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
#include "model/checkpoint.h"
#include "model/sample_run.h"
#include "model/model.h"
#include "cli/args/opts.h"
#include "cli/args/version.h"
#include "train/config_registry.h"
#include "ops/ops.h"

static const char *const USAGE =
    "gmasample --checkpoint PATH [--prompt TEXT | --prompt-file FILE | --prompt-ids \"ID ...\"]\n"
    "                 [--tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--samples M]\n"
    "                 [--tokenizer SPEC [--vocab DIR]] [--json OUT] [--device cpu|cuda] [--threads N] [--no-cache]\n"
    "                 [--no-prefill]\n";
static const char *const ABOUT =
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
    "one full forward per token. Incremental decoding prefills the prompt: one forward over it fills\n"
    "every layer's state (--no-prefill: one step per prompt token). The timing line gives the time\n"
    "to the first new token.\n";

/* the command line */
typedef struct Args {
    const char *ckpt, *prompt, *pfile, *pids, *json, *device, *tkspec, *vocab;
    long tokens, top_k, seed, samples;
    double temperature, top_p;
    int no_cache, no_prefill, threads;
} Args;

/* OPTS_GO_ON, or the exit code (--help 0, bad input 2) */
static int parse_args(Args *a, int argc, char **argv) {
    *a = (Args){.vocab = "data/gpt2", .tokens = 128, .seed = 1337, .samples = 1, .temperature = 1, .top_p = 1,
                .threads = -1};
    Opt opts[] = {
        OPTS("--checkpoint", &a->ckpt, "PATH", "the checkpoint, run or model.safetensors (required)"),
        OPTS("--prompt", &a->prompt, "TEXT", "the prompt as text"),
        OPTS("--prompt-file", &a->pfile, "FILE", "the prompt as the text of FILE"),
        OPTS("--prompt-ids", &a->pids, "\"ID ...\"", "the prompt as token ids"),
        OPTL("--tokens", &a->tokens, 1, 1 << 24, "new tokens per sample [128]"),
        OPTD("--temperature", &a->temperature, 0, 1e6, "0: greedy [1]"),
        OPTL("--top-k", &a->top_k, 0, INT_MAX, "sample from the K most likely, 0 all [0]"),
        OPTD("--top-p", &a->top_p, 0, 1, "nucleus: the most likely of total probability P [1]"),
        OPTL("--seed", &a->seed, 0, LONG_MAX, "the random streams' seed [1337]"),
        OPTL("--samples", &a->samples, 1, 100000, "samples drawn [1]"),
        OPTS("--tokenizer", &a->tkspec, "SPEC", "gpt2, bpe:DIR, word:FILE or bytes [the run's]"),
        OPTS("--vocab", &a->vocab, "DIR", "the gpt2 tokenizer's files [data/gpt2]"),
        OPTS("--json", &a->json, "OUT", "also write the samples as JSON"),
        OPTS("--device", &a->device, "cpu|cuda", "backend (the config key device) [the run's]"),
        OPT_THREADS(&a->threads, "CPU threads, 0 all [the run's]"),
        OPTF("--no-cache", &a->no_cache, "a full forward per token"),
        OPTF("--no-prefill", &a->no_prefill, "feed the prompt one decode step a token"),
    };
    opts[7].open_lo = 1;
    OptProg p = {.name = "gmasample", .usage = USAGE, .about = ABOUT, .opts = opts, .n_opts = OPT_COUNT(opts),
                 .exit_codes = "0 done, 1 error while generating, 2 bad input"};
    int rc = cli_parse(&p, argc, argv, 1);
    if (rc != OPTS_GO_ON) return rc;
    if (!a->ckpt) {
        fprintf(stderr, "gmasample: --checkpoint is required (see --help)\n");
        return 2;
    }
    if (!!a->prompt + !!a->pfile + !!a->pids > 1) {
        fprintf(stderr, "gmasample: give one of --prompt, --prompt-file and --prompt-ids\n");
        return 2;
    }
    return OPTS_GO_ON;
}

static int fail(int code) {
    fprintf(stderr, "gmasample: %s\n", gma_error());
    return code;
}

/* a checkpoint that generates: a causal language model; 0 or 2 */
static int check_model(const Config *cfg, const char *dir) {
    if (cfg->model.task == MODEL_CLASSIFY) {
        fprintf(stderr, "gmasample: %s: a classifier checkpoint does not generate text\n", dir);
        return 2;
    }
    if (!cfg->model.causal) {
        fprintf(stderr, "gmasample: %s: the model is bidirectional (model.causal false) and cannot generate text\n", dir);
        return 2;
    }
    return 0;
}

/* --tokenizer, else the run's copy (RUN/data.json), else the data directory's; NULL
 * without one (*rc = 2 where the prompt needed it) */
static Tokenizer *load_tokenizer(const Args *a, const Config *cfg, const char *dir, int *rc) {
    Tokenizer *tk = NULL;
    *rc = 0;
    if (a->tkspec) {
        if (!(tk = tokenizer_load(a->tkspec, a->vocab))) *rc = fail(2);
    } else if (cfg->data.path[0] && cfg->data.source == DATA_shards) {
        char run[2048], found[CFG_STR];
        lmmeta_run_dir(dir, run, sizeof run);
        int have_data = lmmeta_find_data(cfg->data.path, run, NULL, "--tokenizer", found, sizeof found) == 0;
        if (!(tk = lmmeta_ckpt_tokenizer(dir, have_data ? found : NULL)) && (a->prompt || a->pfile)) *rc = fail(2);
    }
    if (tk && tokenizer_vocab_size(tk) > (uint32_t)cfg->model.vocab_size) {
        fprintf(stderr, "gmasample: the tokenizer's vocabulary (%u) is larger than the model's (%d)\n",
                tokenizer_vocab_size(tk), cfg->model.vocab_size);
        *rc = 2;
    }
    return tk;
}

/* the prompt's ids, each inside the model's vocabulary; NULL with *rc = 2 */
static int32_t *load_prompt(const Args *a, Tokenizer *tk, int V, int *np, int *rc) {
    size_t text_len = a->prompt ? strlen(a->prompt) : 0;
    char *ftext = NULL;
    *rc = 2;
    if (a->pfile && !(ftext = gma_read_file(a->pfile, &text_len))) return fail(2), NULL;
    int32_t *p = sample_prompt_ids(tk, a->pfile ? ftext : a->prompt, text_len, a->pids, np);
    free(ftext);
    if (!p) return fail(2), NULL;
    for (int i = 0; i < *np; i++)
        if (p[i] >= V) {
            fprintf(stderr, "gmasample: prompt token %d (position %d) is outside the model's vocabulary [0, %d)\n", p[i], i, V);
            free(p);
            return NULL;
        }
    *rc = 0;
    return p;
}

/* the model of the checkpoint for one sequence of its window W: 0 or 2 */
static int load_model(Model *m, const Config *cfg, const char *dir, int W) {
    if (ops_select(cfg->device) != 0) return fail(2);
    ops_set_threads(cfg->threads);
    if (model_build(m, cfg) != 0) return fail(2);
    m->infer = 1; /* forwards and decoding only */
    if (model_check_memory(m, 1, W) != 0) return fail(2);
    model_alloc(m, 1, W);
    return ckpt_load(m, NULL, dir) != 0 ? fail(2) : 0;
}

/* the settings line on stderr and the JSON's head */
static cJSON *header(const Args *a, const char *dir, Tokenizer *tk, const int32_t *p, int np, int incremental) {
    fprintf(stderr, "gmasample: %s | %s | prompt %d tokens | %ld new | temperature %g top-k %ld top-p %g seed %ld | %s\n",
            dir, tk ? tokenizer_spec(tk) : "token ids", np, a->tokens, a->temperature, a->top_k, a->top_p, a->seed,
            incremental ? "incremental decoding" : "a full forward per token");
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "checkpoint", dir);
    cJSON_AddNumberToObject(root, "temperature", a->temperature);
    cJSON_AddNumberToObject(root, "top_k", (double)a->top_k);
    cJSON_AddNumberToObject(root, "top_p", a->top_p);
    cJSON_AddNumberToObject(root, "seed", (double)a->seed);
    cJSON_AddItemToObject(root, "prompt_ids", cJSON_CreateIntArray(p, np));
    return root;
}

/* the timing line and --json: 0, or 1 */
static int finish(const Args *a, cJSON *root, double dt, double ttft) {
    double rate = dt > 0 ? (double)(a->samples * a->tokens) / dt : 0;
    fprintf(stderr, "gmasample: %ld x %ld tokens in %.2f s (%.1f tokens/s), the first after %.3f s\n", a->samples,
            a->tokens, dt, rate, ttft);
    cJSON_AddNumberToObject(root, "tokens_per_s", rate);
    cJSON_AddNumberToObject(root, "first_token_s", ttft);
    int rc = 0;
    if (a->json) {
        char *js = cJSON_Print(root);
        if (gma_write_file_atomic(a->json, js, strlen(js)) != 0) rc = fail(1);
        free(js);
    }
    cJSON_Delete(root);
    return rc;
}

/* the samples through the model, printed, timed and written */
static int generate(const Args *a, Model *m, Tokenizer *tk, const int32_t *p, int np, const char *dir, int W) {
    if (np > W) /* model_generate_batch: the context is the last W tokens */
        fprintf(stderr, "gmasample: the prompt's %d tokens are more than model.max_seq_len %d: the model sees only its last %d\n",
                np, W, W);
    double first = 0;
    SampleRun r = {.tokens = a->tokens, .samples = a->samples, .seed = a->seed, .batch = W, .out = stdout,
                   .first_at = &first,
                   .so = {.temperature = a->temperature, .top_k = (int)a->top_k, .top_p = a->top_p, .no_cache = a->no_cache,
                          .no_prefill = a->no_prefill, .vocab_limit = tk ? (int)tokenizer_vocab_size(tk) : 0}};
    cJSON *root = header(a, dir, tk, p, np, !a->no_cache && model_can_decode(m));
    double t0 = gma_now();
    int rc = sample_run(m, tk, p, np, &r, cJSON_AddArrayToObject(root, "samples"));
    printf("\n");
    fflush(stdout); /* the text before the timing line on stderr, also when both go to one file */
    if (rc != 0) {
        cJSON_Delete(root);
        gma_error_prefix("%s", dir);
        return fail(1);
    }
    return finish(a, root, gma_now() - t0, first > 0 ? first - t0 : 0);
}

int main(int argc, char **argv) {
    gma_openmp_env(argv);
    config_register_all(); /* every module's config section, before the checkpoint's config */
    if (cli_version("gmasample", argc, argv)) return 0;
    Args a;
    int rc = parse_args(&a, argc, argv), np;
    if (rc != OPTS_GO_ON) return rc;
    char dir[2048];
    Config cfg;
    if (ckpt_open_config(a.ckpt, a.device, a.threads, dir, sizeof dir, &cfg) != 0) return fail(2);
    if ((rc = check_model(&cfg, dir)) != 0) return rc;
    Tokenizer *tk = load_tokenizer(&a, &cfg, dir, &rc);
    if (rc) return rc;
    int32_t *p = load_prompt(&a, tk, cfg.model.vocab_size, &np, &rc);
    if (!p) return rc;
    Model m;
    int W = cfg.model.max_seq_len;
    if ((rc = load_model(&m, &cfg, dir, W)) != 0) return rc;
    rc = generate(&a, &m, tk, p, np, dir, W);
    free(p);
    tokenizer_free(tk);
    model_free(&m);
    return rc;
}
