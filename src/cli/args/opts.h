/* opts.h: the option table every program parses its command line with. An option is one
 * row {name, type, destination, range or choices, help text}; the table gives the parser,
 * the generated --help (options, ranges, exit codes) and one wording for every error:
 *
 *   PROG: --batch: "x" is not an integer in [1, 2147483647]
 *   PROG: --devcie: unknown option (did you mean --device?) (see --help)
 *
 * Parsing sets gma_error() and returns 2 on bad input, so a program that must agree on
 * errors first (gmatrain under MPI) decides where it prints them; cli_parse prints. */
#ifndef GMA_CLI_OPTS_H
#define GMA_CLI_OPTS_H
#include <stdio.h>

typedef enum OptType {
    OPT_FLAG,   /* no value: *(int *)dest = 1 */
    OPT_INT,    /* *(int *)dest, an integer in [lo, hi] */
    OPT_LONG,   /* *(long *)dest, an integer in [lo, hi] */
    OPT_U64,    /* *(unsigned long long *)dest, any non-negative 64-bit integer (a seed) */
    OPT_DOUBLE, /* *(double *)dest, a number in [lo, hi] ((lo, hi] with open_lo) */
    OPT_STR,    /* *(const char **)dest = the value */
    OPT_CHOICE, /* *(const char **)dest, one of choices ("cpu|cuda") */
    OPT_INDEX,  /* *(int *)dest, the index of the value among choices ("cpu|cuda": cuda 1) */
    OPT_LIST,   /* repeatable: appended to the OptList dest */
    OPT_OPTVAL, /* a flag whose value may follow (--resume [DIR]): *(int *)dest = 1 and
                 * *(const char **)dest2 = the next argument unless it starts with "--" */
    OPT_FUNC,   /* the value through fn(value, dest), in the order given: 0, or -1 with
                 * gma_error set (the whole message) */
} OptType;

typedef struct OptList {
    const char **v;
    int *n, cap;
} OptList;

typedef struct Opt {
    const char *name; /* "--batch" */
    OptType type;
    void *dest;
    const char *arg;  /* the value's name in --help ("N", "FILE"); NULL: from the type */
    const char *help; /* one line; NULL: the option is not listed */
    double lo, hi;    /* OPT_INT, OPT_LONG, OPT_DOUBLE */
    const char *choices; /* OPT_CHOICE, OPT_INDEX */
    int open_lo;      /* OPT_DOUBLE: lo itself is out of range */
    void *dest2;      /* OPT_OPTVAL */
    int (*fn)(const char *value, void *dest); /* OPT_FUNC */
    const char *alias; /* another spelling ("-q") */
} Opt;

/* The rows, by type: name, destination, (range | choices | the value's name), help */
#define OPTF(n, d, h) {.name = (n), .type = OPT_FLAG, .dest = (d), .help = (h)}
#define OPTS(n, d, a, h) {.name = (n), .type = OPT_STR, .dest = (d), .arg = (a), .help = (h)}
#define OPTI(n, d, l, u, h) {.name = (n), .type = OPT_INT, .dest = (d), .lo = (l), .hi = (u), .help = (h)}
#define OPTL(n, d, l, u, h) {.name = (n), .type = OPT_LONG, .dest = (d), .lo = (l), .hi = (u), .help = (h)}
#define OPTU(n, d, h) {.name = (n), .type = OPT_U64, .dest = (d), .help = (h)}
#define OPTD(n, d, l, u, h) {.name = (n), .type = OPT_DOUBLE, .dest = (d), .lo = (l), .hi = (u), .help = (h)}
#define OPTC(n, d, c, h) {.name = (n), .type = OPT_CHOICE, .dest = (d), .choices = (c), .help = (h)}
#define OPTE(n, d, c, h) {.name = (n), .type = OPT_INDEX, .dest = (d), .choices = (c), .help = (h)}
#define OPTR(n, l, a, h) {.name = (n), .type = OPT_LIST, .dest = (l), .arg = (a), .help = (h)}
#define OPTFN(n, f, d, a, h) {.name = (n), .type = OPT_FUNC, .fn = (f), .dest = (d), .arg = (a), .help = (h)}
/* the number of rows of a table */
#define OPT_COUNT(t) ((int)(sizeof(t) / sizeof((t)[0])))
/* the --threads of every program: CPU threads, 0 all, -1 (unset) the default */
#define OPT_THREADS(d, h) OPTI("--threads", (d), 0, 1024, (h))

/* A program: its usage lines (the first follows "usage: "), a paragraph, its options and
 * exit codes. Positional arguments (up to max_pos into pos) only where max_pos > 0. */
typedef struct OptProg {
    const char *name;
    const char *usage;
    const char *about;
    const char *exit_codes; /* "0 done, 1 error, 2 bad input" */
    const Opt *opts;
    int n_opts;
    const char **pos;
    int *n_pos, max_pos;
    int need_args; /* cli_parse: no argument at all is bad input (usage on stderr, 2) */
} OptProg;

#define OPTS_HELP (-2) /* opts_parse: --help or -h was given */
#define OPTS_GO_ON (-1) /* cli_parse: nothing to exit with */

/* argv[first..argc-1] by the table: 0; OPTS_HELP; or 2 with gma_error set */
int opts_parse(const OptProg *p, int argc, char **argv, int first);
/* The generated help: usage lines, the paragraph, the options, the exit codes. */
void opts_usage(const OptProg *p, FILE *f);
/* opts_parse for a program that prints its own answers: --help (usage on stdout, 0), bad
 * input (one line "PROG: ..." on stderr, 2; no argument with need_args: the usage), else
 * OPTS_GO_ON. */
int cli_parse(const OptProg *p, int argc, char **argv, int first);
/* The option of the table nearest to arg, a near miss of it (gma_near_miss), or NULL. */
const char *opts_near(const OptProg *p, const char *arg);
#endif
