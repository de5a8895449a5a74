/* lra_generate.h: `gmadata generate`, the command line of the LRA data generators. */
#ifndef GMA_CLI_LRA_GENERATE_H
#define GMA_CLI_LRA_GENERATE_H

/* gmadata generate listops --out DIR [--train N --valid N --test N --seed S
 *                                      --min-len 500 --max-len 2000 --max-depth 10 --max-args 10]
 * argv as gmadata passes it: argv[0] is "generate", argv[1] the task. Prints one line on
 * error and returns non-zero (2 for usage errors, 1 for failures), 0 on success. */
int lra_generate_main(int argc, char **argv);

#endif
