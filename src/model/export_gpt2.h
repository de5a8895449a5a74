/* export_gpt2.h: a GPT-2-shaped run of this project as GPT-2's own files (docs/data.md,
 * "Exporting GPT-2"), the inverse of import_gpt2.h.
 *
 * Two targets: a Hugging Face GPT-2 folder (config.json with GPT2Config's keys,
 * model.safetensors with GPT2Model's tensor names and Conv1D layouts [in, out], c_attn
 * packing q | k | v; vocab.json + merges.txt when the run holds GPT-2's tokenizer) and
 * llm.c's model file (version 3: 256 int32 of header, float32 parameters in llm.c's order,
 * wte padded with zero rows to a multiple of 128). The run must compute GPT-2's function:
 * a causal language model with sdpa in every layer, learned positions, attention biases,
 * the MLP of 4 d_model, no short convolutions and no cross-attention; anything else is
 * refused in one line naming the key or the layer. */
#ifndef GMA_EXPORT_GPT2_H
#define GMA_EXPORT_GPT2_H
#include "model/gpt2_dest.h" /* Gpt2Info, Gpt2Dest */

/* Export the checkpoint `from` (a run folder, RUN/ckpt_N, or a model.safetensors: what
 * every program resolves) as a Hugging Face folder `out` (NULL: none; it must not exist
 * or be empty) and/or llm.c's file `llmc` (NULL: none; it must not exist). Each is written
 * under a temporary name beside it and renamed at the end, so a refusal or a failure
 * leaves nothing. 0, or -1 with one line in gma_error. info (may be NULL) gets the shape,
 * the parameters written and whether the tokenizer was. */
int gpt2_export(const char *from, const char *out, const char *llmc, Gpt2Info *info);

/* The writers: the parameters of d (a GPT-2-shaped model with every tensor in d->host)
 * as config.json + model.safetensors into the existing folder dir, or as llm.c's file at
 * path (created; truncated when it exists). 0, or -1 with gma_error. */
int gpt2_write_hf(Gpt2Dest *d, const Gpt2Info *s, const char *dir);
int gpt2_write_llmc(Gpt2Dest *d, const Gpt2Info *s, const char *path);
#endif
