/* gmadata.c: the data command line (fetch, extract, prepare, encode, decode, stats,
 * train-tokenizer, bench-tokenizer, generate): argument parsing and wiring only. */
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "data/archive.h"
#include "data/tokenizer.h"
#include <stdlib.h>

int lra_generate_main(int argc, char **argv) __attribute__((weak));

static int die(void) {
    fprintf(stderr, "gmadata: %s\n", gma_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: gmadata fetch|extract|prepare|encode|decode|stats|train-tokenizer|bench-tokenizer|generate ...\n");
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "generate") == 0) {
        if (!lra_generate_main) {
            fprintf(stderr, "gmadata generate: not built\n");
            return 2;
        }
        return lra_generate_main(argc - 1, argv + 1);
    }
    if (strcmp(cmd, "extract") == 0) {
        if (argc < 3) return fprintf(stderr, "usage: gmadata extract ARCHIVE [--dest DIR]\n"), 2;
        const char *dest = argc >= 5 && strcmp(argv[3], "--dest") == 0 ? argv[4] : ".";
        return archive_extract(argv[2], dest) ? die() : 0;
    }
    if (strcmp(cmd, "encode") == 0) {
        Tokenizer *t = tokenizer_load(argv[3], argc > 5 ? argv[5] : NULL);
        if (!t) return die();
        size_t len; char *txt = gma_read_file(argv[argc-1], &len);
        uint32_t *ids; size_t n;
        tokenizer_encode_parallel(t, txt, len, 0, &ids, &n);
        for (size_t i = 0; i < n; i++) printf(i ? " %u" : "%u", ids[i]);
        printf("\n");
        return 0;
    }
    fprintf(stderr, "gmadata: unknown command '%s'\n", cmd);
    return 2;
}
