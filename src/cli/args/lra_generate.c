/* lra_generate.c: `gmadata generate listops ...`: argument parsing and wiring of the ListOps
 * generator (lra_listops.c). Prints one line on error and returns non-zero.
 */
#include "cli/args/lra_generate.h"
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

int lra_generate_main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        fputs(USAGE, argc < 2 ? stderr : stdout);
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
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "gmadata generate: %s needs a value (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        long x;
        int *ip = NULL;
        long lo = 0, hi = 100000000;
        if (strcmp(a, "--out") == 0) { out = v; continue; }
        else if (strcmp(a, "--seed") == 0) {
            unsigned long long s;
            if (gma_parse_u64(v, &s) < 0) {
                fprintf(stderr, "gmadata generate: --seed needs a non-negative integer, got '%s'\n", v);
                return 2;
            }
            o.seed = s;
            continue;
        }
        else if (strcmp(a, "--train") == 0) ip = &o.n_train;
        else if (strcmp(a, "--valid") == 0) ip = &o.n_valid;
        else if (strcmp(a, "--test") == 0) ip = &o.n_test;
        else if (strcmp(a, "--min-len") == 0) ip = &o.min_len, hi = 1000000;
        else if (strcmp(a, "--max-len") == 0) ip = &o.max_len, lo = 2, hi = 1000000;
        else if (strcmp(a, "--max-depth") == 0) ip = &o.max_depth, lo = 2, hi = 64;
        else if (strcmp(a, "--max-args") == 0) ip = &o.max_args, lo = 2, hi = 1000;
        else {
            fprintf(stderr, "gmadata generate: unknown option '%s' (see --help)\n", a);
            return 2;
        }
        if (gma_parse_long(v, lo, hi, &x) < 0) {
            fprintf(stderr, "gmadata generate: %s needs an integer in [%ld, %ld], got '%s'\n", a, lo, hi, v);
            return 2;
        }
        *ip = (int)x;
    }
    if (!out) {
        fprintf(stderr, "gmadata generate: --out DIR is required (see --help)\n");
        return 2;
    }
    double t0 = gma_now();
    if (listops_generate(out, &o) < 0) {
        fprintf(stderr, "gmadata generate: %s\n", gma_error());
        return 1;
    }
    printf("listops: %d train, %d valid, %d test examples (seed %llu) in %s/basic_{train,val,test}.tsv "
           "(%.1f s)\n", o.n_train, o.n_valid, o.n_test, (unsigned long long)o.seed, out, gma_now() - t0);
    return 0;
}
