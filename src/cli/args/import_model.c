/* import_model.c: `gmadata import gpt2` (docs/data.md, "Importing GPT-2"). */
#include "cli/args/import_model.h"

#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "model/import_gpt2.h"

static const char *USAGE_IMPORT =
    "usage: gmadata import gpt2 --from DIR|FILE --out RUN [--quiet]\n"
    "  DIR: a Hugging Face GPT-2 folder (config.json, model.safetensors; tokenizer files vocab.json +\n"
    "       merges.txt or encoder.json + vocab.bpe when present); FILE: llm.c's gpt2_*.bin (version 3 or 5).\n"
    "  RUN: a new (or empty) run folder: config.json, model.safetensors, and data.json + tokenizer/ when\n"
    "       the source has a tokenizer; gmaeval, gmasample and gmatrain read it as a checkpoint.\n";

static int usage_err(const char *msg, const char *arg) {
    fprintf(stderr, "gmadata: import: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
    return 2;
}

int import_model_main(int argc, char **argv) {
    const char *from = NULL, *out = NULL, *family = NULL;
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            fputs(USAGE_IMPORT, stdout);
            return 0;
        }
        if (!strcmp(s, "--from") || !strcmp(s, "--out")) {
            if (i + 1 >= argc) return usage_err("missing value after", s);
            *(s[2] == 'f' ? &from : &out) = argv[++i];
        } else if (!strcmp(s, "--quiet") || !strcmp(s, "-q")) quiet = 1;
        else if (s[0] == '-' && s[1]) return usage_err("unknown option", s);
        else if (family) return usage_err("one model family only, not also", s);
        else family = s;
    }
    if (!family || strcmp(family, "gpt2")) return usage_err("want the model family gpt2 (gmadata import gpt2 --from DIR|FILE --out RUN)", family);
    if (!from || !out) return usage_err(!from ? "--from DIR|FILE is required" : "--out RUN is required", NULL);
    Gpt2Info in;
    if (gpt2_import(from, out, &in) != 0) {
        fprintf(stderr, "gmadata: %s\n", gma_error());
        return 2;
    }
    if (!quiet)
        printf("gmadata: imported GPT-2 (%s: %d layers, n_embd %d, %d heads, vocabulary %d, %d positions; %ld parameters) "
               "into %s%s\n",
               in.format, in.L, in.D, in.H, in.V, in.T, in.params, out, in.tokenizer ? " with its tokenizer" : "");
    return 0;
}
