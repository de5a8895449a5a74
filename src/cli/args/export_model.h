/* export_model.h: `gmadata export`, the command line of the model exporters. */
#ifndef GMA_CLI_EXPORT_MODEL_H
#define GMA_CLI_EXPORT_MODEL_H

/* gmadata export gpt2 --from RUN [--out HF_DIR] [--llmc FILE.bin] [--quiet]
 * argv as gmadata passes it: argv[0] is "export", argv[1] the model family. Prints one
 * line on error and returns 2 (a usage error or a run it refuses) or 0. */
int export_model_main(int argc, char **argv);

#endif
