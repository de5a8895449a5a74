/* pathfinder_generate.h: `gmadata generate pathfinder ...`, the command line of the
 * Pathfinder generator (src/data/cls/pathfinder.h). */
#ifndef GMA_CLI_PATHFINDER_GENERATE_H
#define GMA_CLI_PATHFINDER_GENERATE_H

/* gmadata generate pathfinder --out DIR --res 32|64|128|256 --difficulty easy|intermediate|hard
 *                             --n N [--seed S] [--per-batch K]
 * argv[0] is "generate", argv[1] "pathfinder". Prints one line on error; returns 2 for
 * usage errors, 1 for failures, 0 on success. */
int pathfinder_generate_main(int argc, char **argv);

#endif
