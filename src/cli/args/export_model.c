/* export_model.c: `gmadata export gpt2` (docs/data.md, "Exporting GPT-2"). */
#include "cli/args/export_model.h"

#include <stdio.h>
#include <string.h>

#include "cli/args/opts.h"
#include "core/common.h"
#include "model/export_gpt2.h"
#include "train/config_registry.h"

static const char *USAGE_EXPORT = "gmadata export gpt2 --from RUN [--out HF_DIR] [--llmc FILE.bin] [--quiet]\n";
static const char *ABOUT_EXPORT =
    "  RUN: a run folder (its latest checkpoint), RUN/ckpt_N or a model.safetensors of a GPT-2-shaped model:\n"
    "       mixer sdpa in every layer, learned positions, attention biases, the MLP of 4 d_model.\n"
    "  HF_DIR: a new (or empty) Hugging Face GPT-2 folder: config.json, model.safetensors, and vocab.json +\n"
    "       merges.txt when the run holds GPT-2's tokenizer. FILE.bin: a new llm.c model file (version 3,\n"
    "       float32, the vocabulary padded to a multiple of 128). At least one of the two.\n";

static int usage_err(const char *msg, const char *arg) {
    fprintf(stderr, "gmadata: export: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
    return 2;
}

/* argv into from, out, llmc, quiet, the family: OPTS_GO_ON, or the exit code */
static int parse_args(int argc, char **argv, const char **from, const char **out, const char **llmc, int *quiet) {
    const char *family = NULL;
    int n_family = 0;
    const Opt opts[] = {
        OPTS("--from", from, "RUN", "the run or checkpoint to export (required)"),
        OPTS("--out", out, "HF_DIR", "the new Hugging Face folder"),
        OPTS("--llmc", llmc, "FILE.bin", "the new llm.c model file"),
        {.name = "--quiet", .type = OPT_FLAG, .dest = quiet, .alias = "-q", .help = "no summary line"},
    };
    OptProg p = {.name = "gmadata export", .usage = USAGE_EXPORT, .about = ABOUT_EXPORT, .opts = opts,
                 .n_opts = OPT_COUNT(opts), .exit_codes = "0 done, 2 bad input or a run it refuses", .pos = &family,
                 .n_pos = &n_family, .max_pos = 1};
    int rc = cli_parse(&p, argc, argv, 1);
    if (rc != OPTS_GO_ON) return rc;
    if (!family || strcmp(family, "gpt2"))
        return usage_err("want the model family gpt2 (gmadata export gpt2 --from RUN --out HF_DIR)", family);
    if (!*from) return usage_err("--from RUN is required", NULL);
    if (!*out && !*llmc) return usage_err("want --out HF_DIR, --llmc FILE.bin or both", NULL);
    return OPTS_GO_ON;
}

int export_model_main(int argc, char **argv) {
    const char *from = NULL, *out = NULL, *llmc = NULL;
    int quiet = 0, rc = parse_args(argc, argv, &from, &out, &llmc, &quiet);
    if (rc != OPTS_GO_ON) return rc;
    Gpt2Info s;
    config_register_all(); /* the sections of every module, for the run's config */
    if (gpt2_export(from, out, llmc, &s) != 0) {
        fprintf(stderr, "gmadata: %s\n", gma_error());
        return 2;
    }
    if (!quiet)
        printf("gmadata: exported GPT-2 (%d layers, n_embd %d, %d heads, vocabulary %d, %d positions; %ld parameters) from "
               "%s to %s%s%s%s%s\n",
               s.L, s.D, s.H, s.V, s.T, s.params, from, out ? out : "", out ? " (hugging face)" : "",
               out && llmc ? " and " : "", llmc ? llmc : "", llmc ? " (llm.c v3)" : "");
    if (!quiet && out)
        printf("gmadata: %s\n", s.tokenizer ? "with the run's GPT-2 tokenizer (vocab.json, merges.txt)"
                                            : "no tokenizer: the run holds no GPT-2 tokenizer (RUN/data.json)");
    return 0;
}
