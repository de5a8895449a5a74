/* import_model.c: `gmadata import gpt2` (docs/data.md, "Importing GPT-2"). */
#include "cli/args/import_model.h"

#include <stdio.h>
#include <string.h>

#include "cli/args/opts.h"
#include "core/common.h"
#include "model/import_gpt2.h"
#include "train/config_registry.h"

static const char *USAGE_IMPORT = "gmadata import gpt2 --from DIR|FILE --out RUN [--quiet]\n";
static const char *ABOUT_IMPORT =
    "  DIR: a Hugging Face GPT-2 folder (config.json, model.safetensors; tokenizer files vocab.json +\n"
    "       merges.txt, encoder.json + vocab.bpe, or tokenizer.json, when present); FILE: llm.c's gpt2_*.bin\n"
    "       (version 3 or 5).\n"
    "  RUN: a new (or empty) run folder: config.json, model.safetensors, and data.json + tokenizer/ when\n"
    "       the source has a tokenizer; gmaeval, gmasample and gmatrain read it as a checkpoint.\n";

static int usage_err(const char *msg, const char *arg) {
    fprintf(stderr, "gmadata: import: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
    return 2;
}

/* argv into from, out, quiet, the family: OPTS_GO_ON, or the exit code */
static int parse_args(int argc, char **argv, const char **from, const char **out, int *quiet) {
    const char *family = NULL;
    int n_family = 0;
    const Opt opts[] = {
        OPTS("--from", from, "DIR|FILE", "the model: a Hugging Face folder or llm.c's file (required)"),
        OPTS("--out", out, "RUN", "the new run folder (required)"),
        {.name = "--quiet", .type = OPT_FLAG, .dest = quiet, .alias = "-q", .help = "no summary line"},
    };
    OptProg p = {.name = "gmadata import", .usage = USAGE_IMPORT, .about = ABOUT_IMPORT, .opts = opts,
                 .n_opts = OPT_COUNT(opts), .exit_codes = "0 done, 2 bad input or a model it refuses", .pos = &family,
                 .n_pos = &n_family, .max_pos = 1};
    int rc = cli_parse(&p, argc, argv, 1);
    if (rc != OPTS_GO_ON) return rc;
    if (!family || strcmp(family, "gpt2"))
        return usage_err("want the model family gpt2 (gmadata import gpt2 --from DIR|FILE --out RUN)", family);
    if (!*from || !*out) return usage_err(!*from ? "--from DIR|FILE is required" : "--out RUN is required", NULL);
    return OPTS_GO_ON;
}

int import_model_main(int argc, char **argv) {
    const char *from = NULL, *out = NULL;
    int quiet = 0, rc = parse_args(argc, argv, &from, &out, &quiet);
    if (rc != OPTS_GO_ON) return rc;
    Gpt2Info in;
    config_register_all(); /* the sections of every module, for the imported model's config */
    if (gpt2_import(from, out, &in) != 0) {
        fprintf(stderr, "gmadata: %s\n", gma_error());
        return 2;
    }
    if (!quiet && in.swept)
        fprintf(stderr, "gmadata: removed %d stale temporary folder%s (%s.tmp.PID) of an import that was killed\n", in.swept,
                in.swept == 1 ? "" : "s", out);
    if (!quiet)
        printf("gmadata: imported GPT-2 (%s: %d layers, n_embd %d, %d heads, vocabulary %d, %d positions; %ld parameters) "
               "into %s%s\n",
               in.format, in.L, in.D, in.H, in.V, in.T, in.params, out, in.tokenizer ? " with its tokenizer" : "");
    if (!quiet && !in.tokenizer) /* said even when the summary is the only line: gmasample needs one */
        printf("gmadata: no tokenizer beside the weights (looked for %s): gmasample --prompt needs --tokenizer gpt2 "
               "--vocab DIR (DIR with encoder.json and vocab.bpe: gmadata fetch gpt2)\n",
               GPT2_TOKENIZER_FILES);
    return 0;
}
