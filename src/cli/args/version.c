/* version.c: the --version answer every program shares (version.h). */
#include "cli/args/version.h"

#include <stdio.h>
#include <string.h>

#include "core/common.h"

int cli_version(const char *prog, int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--version")) {
            printf("%s gma %s\n", prog, GMA_VERSION);
            return 1;
        }
    return 0;
}

int cli_start(const char *prog, int argc, char **argv, void (*usage)(FILE *)) {
    if (cli_version(prog, argc, argv)) return 0;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    return -1;
}
