/* import_model.h: `gmadata import`, the command line of the pretrained-model importers. */
#ifndef GMA_CLI_IMPORT_MODEL_H
#define GMA_CLI_IMPORT_MODEL_H

/* gmadata import gpt2 --from DIR|FILE --out RUN [--quiet]
 * argv as gmadata passes it: argv[0] is "import", argv[1] the model family. Prints one
 * line on error and returns 2 (a usage error or a source it refuses) or 0. */
int import_model_main(int argc, char **argv);

#endif
