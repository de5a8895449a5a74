/* gpt2_llmc.h: llm.c's GPT-2 model file as the import and the export both read it
 * (karpathy/llm.c train_gpt2.c:556-575 fill_in_parameter_sizes, :707-750
 * gpt2_build_from_checkpoint): 256 little-endian int32 of header, then 16 tensors in a
 * fixed order, each for every layer in turn. */
#ifndef GMA_GPT2_LLMC_H
#define GMA_GPT2_LLMC_H

#define LLMC_MAGIC 20240326
#define LLMC_HEADER_BYTES 1024

/* llm.c's tensors in file order: its name, this project's (a format with the layer; the
 * fused qkv ones with %c for q, k, v), whether there is one per layer, its rows and
 * columns */
typedef struct LlmcTensor {
    const char *name, *dst;
    int per_layer, rows, cols; /* rows: 0 C, 1 Vp, 2 maxT, 3 3C, 4 4C; cols: 0 C, 4 4C, 1 one */
} LlmcTensor;
#define LLMC_N_TENSORS 16
extern const LlmcTensor llmc_tensors[LLMC_N_TENSORS];
#endif
