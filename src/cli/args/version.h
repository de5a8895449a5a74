/* version.h: the --version answer every program shares. */
#ifndef GMA_CLI_VERSION_H
#define GMA_CLI_VERSION_H
#include <stdio.h>

/* When some argv[i] (i >= 1) is "--version": prints "PROG gma VERSION" on stdout and
 * returns 1; otherwise 0. */
int cli_version(const char *prog, int argc, char **argv);
#endif
