/* import_gpt2.h: a pretrained GPT-2 as a run folder of this project, from a Hugging Face
 * GPT-2 folder or llm.c's model file (gpt2_124M.bin): the model it becomes, both formats,
 * what the run folder holds and what is refused: docs/data.md, "Importing GPT-2". With
 * GPT-2's tokenizer files in the source folder (GPT2_TOKENIZER_FILES), data.json records the
 * tokenizer's identity (dataid.h) as a trained run's does. Temporary folders of killed
 * imports (RUN.tmp.PID, PID gone) are removed (stale_tmp.h). */
#ifndef GMA_IMPORT_GPT2_H
#define GMA_IMPORT_GPT2_H
#include "model/gpt2_dest.h" /* Gpt2Info */

/* the tokenizer files an import looks for beside the weights, for messages */
#define GPT2_TOKENIZER_FILES "encoder.json + vocab.bpe, vocab.json + merges.txt, or tokenizer.json"

/* Import from (a folder with model.safetensors, a .safetensors file with config.json
 * beside it, or an llm.c .bin) into the run folder out (trailing slashes ignored), which
 * must not exist or be empty.
 * The folder is built beside out under a temporary name and renamed at the end, so a
 * refusal or a failure leaves nothing at out. 0, or -1 with one line in gma_error naming
 * the file and the tensor or offset. info (may be NULL) gets what was imported. */
int gpt2_import(const char *from, const char *out, Gpt2Info *info);

/* The folder rules of import and export (gpt2_export, export_gpt2.h): 0 when out does not
 * exist or is an empty folder, else -1 with one line; and removing a temporary folder of
 * files (and its tokenizer/ of files) that a refusal or a failure left. */
int gpt2_check_out(const char *out);
void gpt2_remove_tmp(const char *dir);
#endif
