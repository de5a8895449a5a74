/* version.h: the --version answer every program shares. */
#ifndef GMA_CLI_VERSION_H
#define GMA_CLI_VERSION_H
#include <stdio.h>

/* When some argv[i] (i >= 1) is "--version": prints "PROG gma VERSION" on stdout and
 * returns 1; otherwise 0. */
int cli_version(const char *prog, int argc, char **argv);
/* The start of a program whose every run needs arguments: --version (0), --help or -h
 * anywhere (usage on stdout, 0), no argument (usage on stderr, 2). Returns the exit code
 * for those, or -1 to go on. */
int cli_start(const char *prog, int argc, char **argv, void (*usage)(FILE *));
#endif
