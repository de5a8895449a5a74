/* pathfinder_generate.c: `gmadata generate pathfinder ...`: argument parsing and wiring of
 * the Pathfinder generator (src/data/cls/pathfinder.c). Prints one line on error.
 */
#include "cli/args/pathfinder_generate.h"
#include "data/cls/pathfinder.h"
#include "core/common.h"

#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: gmadata generate pathfinder --out DIR --res 32|64|128|256 --difficulty easy|intermediate|hard\n"
    "                                   --n N [--seed S] [--per-batch K]\n"
    "  defaults: --seed 0 --per-batch 1000; writes DIR/<pattern>/imgs/<batch>/sample_<i>.png and\n"
    "  DIR/<pattern>/metadata/<batch>.npy, pattern curv_baseline (easy), curv_contour_length_9\n"
    "  (intermediate), curv_contour_length_14 (hard), as the LRA release lays them out\n";

int pathfinder_generate_main(int argc, char **argv) {
    const char *out = NULL, *difficulty = NULL;
    long res = 0, n = 0, per_batch = 1000;
    unsigned long long seed = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "gmadata generate pathfinder: %s needs a value (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        long *lp = NULL, lo = 1, hi = 100000000;
        if (strcmp(a, "--out") == 0) { out = v; continue; }
        if (strcmp(a, "--difficulty") == 0) { difficulty = v; continue; }
        if (strcmp(a, "--seed") == 0) {
            if (gma_parse_u64(v, &seed) < 0) {
                fprintf(stderr, "gmadata generate pathfinder: --seed needs a non-negative integer, got '%s'\n", v);
                return 2;
            }
            continue;
        }
        if (strcmp(a, "--res") == 0) lp = &res, lo = 32, hi = 256;
        else if (strcmp(a, "--n") == 0) lp = &n;
        else if (strcmp(a, "--per-batch") == 0) lp = &per_batch, hi = 10000000;
        else {
            fprintf(stderr, "gmadata generate pathfinder: unknown option '%s' (see --help)\n", a);
            return 2;
        }
        if (gma_parse_long(v, lo, hi, lp) < 0) {
            fprintf(stderr, "gmadata generate pathfinder: %s needs an integer in [%ld, %ld], got '%s'\n", a, lo, hi, v);
            return 2;
        }
    }
    if (!out || !difficulty || !res || !n) {
        fprintf(stderr, "gmadata generate pathfinder: --out, --res, --difficulty and --n are required (see --help)\n");
        return 2;
    }
    PathfinderParams p;
    if (pathfinder_params(&p, (int)res, difficulty) < 0) {
        fprintf(stderr, "gmadata generate pathfinder: %s\n", gma_error());
        return 2;
    }
    double t0 = gma_now();
    long pos = 0;
    if (pathfinder_generate(out, &p, difficulty, n, seed, (int)per_batch, &pos) < 0) {
        fprintf(stderr, "gmadata generate pathfinder: %s\n", gma_error());
        return 1;
    }
    printf("pathfinder: %ld images %ld x %ld, %s (%s), %ld positive, seed %llu, in %s/%s (%.1f s)\n", n, res, res,
           difficulty, pathfinder_split_pattern(difficulty), pos, seed, out, pathfinder_split_pattern(difficulty),
           gma_now() - t0);
    return 0;
}
