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
