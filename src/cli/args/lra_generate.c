/* lra_generate.c: `gmadata generate listops ...`: argument parsing and wiring of the ListOps
 * generator (lra_listops.c). Prints one line on error and returns non-zero.
 */
#include "cli/args/lra_generate.h"
#include "cli/args/opts.h"
#include "cli/args/pathfinder_generate.h"
#include "data/cls/lra_listops.h"
#include "core/common.h"

#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: gmadata generate listops --out DIR [--train N] [--valid N] [--test N] [--seed S]\n"
    "                                [--min-len N] [--max-len N] [--max-depth N] [--max-args N]\n"
    "  defaults: --train 96000 --valid 2000 --test 2000 --seed 0 --min-len 500 --max-len 2000\n"
    "            --max-depth 10 --max-args 10; writes DIR/basic_{train,val,test}.tsv\n"
    "       gmadata generate pathfinder --out DIR --res 32|64|128|256 --difficulty easy|intermediate|hard\n"
    "                                   --n N [--seed S] [--per-batch K]   (see generate pathfinder --help)\n";
#define EXIT_CODES "0 done, 1 a file it cannot write, 2 usage error"

/* the listops options into o and *out: OPTS_GO_ON, or the exit code */
static int parse_listops(ListopsGenOptions *o, const char **out, int argc, char **argv) {
    unsigned long long seed = o->seed;
    const Opt opts[] = {
        OPTS("--out", out, "DIR", "where the three files go (required)"),
        OPTI("--train", &o->n_train, 0, 100000000, "training examples [96000]"),
        OPTI("--valid", &o->n_valid, 0, 100000000, "validation examples [2000]"),
        OPTI("--test", &o->n_test, 0, 100000000, "test examples [2000]"),
        OPTU("--seed", &seed, "the generator's seed [0]"),
        OPTI("--min-len", &o->min_len, 0, 1000000, "examples kept above this many tokens [500]"),
        OPTI("--max-len", &o->max_len, 2, 1000000, "and below this many [2000]"),
        OPTI("--max-depth", &o->max_depth, 2, 64, "the deepest nesting [10]"),
        OPTI("--max-args", &o->max_args, 2, 1000, "arguments of an operator at most [10]"),
    };
    OptProg p = {.name = "gmadata generate", .usage = USAGE + 7, .opts = opts, .n_opts = OPT_COUNT(opts),
                 .exit_codes = EXIT_CODES};
    int rc = cli_parse(&p, argc, argv, 2);
    o->seed = seed;
    if (rc == OPTS_GO_ON && !*out) {
        fprintf(stderr, "gmadata generate: --out DIR is required (see --help)\n");
        return 2;
    }
    return rc;
}

int lra_generate_main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(USAGE, argc < 2 ? stderr : stdout);
        fprintf(argc < 2 ? stderr : stdout, "Exit codes: %s.\n", EXIT_CODES);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "pathfinder") == 0) return pathfinder_generate_main(argc, argv);
    if (strcmp(argv[1], "listops") != 0) {
        fprintf(stderr, "gmadata generate: unknown generator '%s' (available: listops, pathfinder)\n", argv[1]);
        return 2;
    }
    ListopsGenOptions o;
    listops_gen_defaults(&o);
    const char *out = NULL;
    int rc = parse_listops(&o, &out, argc, argv);
    if (rc != OPTS_GO_ON) return rc;
    double t0 = gma_now();
    if (listops_generate(out, &o) < 0) {
        fprintf(stderr, "gmadata generate: %s\n", gma_error());
        return 1;
    }
    printf("listops: %d train, %d valid, %d test examples (seed %llu) in %s/basic_{train,val,test}.tsv "
           "(%.1f s)\n", o.n_train, o.n_valid, o.n_test, (unsigned long long)o.seed, out, gma_now() - t0);
    return 0;
}
