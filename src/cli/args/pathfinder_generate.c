/* pathfinder_generate.c: `gmadata generate pathfinder ...`: argument parsing and wiring of
 * the Pathfinder generator (src/data/cls/pathfinder.c). Prints one line on error.
 */
#include "cli/args/pathfinder_generate.h"
#include "cli/args/opts.h"
#include "data/cls/pathfinder.h"
#include "core/common.h"

#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "gmadata generate pathfinder --out DIR --res 32|64|128|256 --difficulty easy|intermediate|hard\n"
    "                                   --n N [--seed S] [--per-batch K]\n";
static const char ABOUT[] =
    "  defaults: --seed 0 --per-batch 1000; writes DIR/<pattern>/imgs/<batch>/sample_<i>.png and\n"
    "  DIR/<pattern>/metadata/<batch>.npy, pattern curv_baseline (easy), curv_contour_length_9\n"
    "  (intermediate), curv_contour_length_14 (hard), as the LRA release lays them out\n";

typedef struct Args {
    const char *out, *difficulty;
    long res, n, per_batch;
    unsigned long long seed;
} Args;

/* OPTS_GO_ON, or the exit code */
static int parse_args(Args *a, int argc, char **argv) {
    *a = (Args){.per_batch = 1000};
    const Opt opts[] = {
        OPTS("--out", &a->out, "DIR", "where the images go (required)"),
        OPTL("--res", &a->res, 32, 256, "image side: 32, 64, 128 or 256 (required)"),
        OPTS("--difficulty", &a->difficulty, "easy|intermediate|hard", "the contour length (required)"),
        OPTL("--n", &a->n, 1, 100000000, "images (required)"),
        OPTU("--seed", &a->seed, "the generator's seed [0]"),
        OPTL("--per-batch", &a->per_batch, 1, 10000000, "images per batch directory [1000]"),
    };
    OptProg p = {.name = "gmadata generate pathfinder", .usage = USAGE, .about = ABOUT, .opts = opts,
                 .n_opts = OPT_COUNT(opts), .exit_codes = "0 done, 1 a file it cannot write, 2 usage error"};
    int rc = cli_parse(&p, argc, argv, 2);
    if (rc == OPTS_GO_ON && (!a->out || !a->difficulty || !a->res || !a->n)) {
        fprintf(stderr, "gmadata generate pathfinder: --out, --res, --difficulty and --n are required (see --help)\n");
        return 2;
    }
    return rc;
}

int pathfinder_generate_main(int argc, char **argv) {
    Args a;
    int rc = parse_args(&a, argc, argv);
    if (rc != OPTS_GO_ON) return rc;
    PathfinderParams p;
    if (pathfinder_params(&p, (int)a.res, a.difficulty) < 0) {
        fprintf(stderr, "gmadata generate pathfinder: %s\n", gma_error());
        return 2;
    }
    double t0 = gma_now();
    long pos = 0;
    if (pathfinder_generate(a.out, &p, a.difficulty, a.n, a.seed, (int)a.per_batch, &pos) < 0) {
        fprintf(stderr, "gmadata generate pathfinder: %s\n", gma_error());
        return 1;
    }
    const char *pattern = pathfinder_split_pattern(a.difficulty);
    printf("pathfinder: %ld images %ld x %ld, %s (%s), %ld positive, seed %llu, in %s/%s (%.1f s)\n", a.n, a.res, a.res,
           a.difficulty, pattern, pos, a.seed, a.out, pattern, gma_now() - t0);
    return 0;
}
