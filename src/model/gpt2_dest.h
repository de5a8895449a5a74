/* gpt2_dest.h: the model a GPT-2 reader fills (import_gpt2_hf.c: Hugging Face,
 * import_gpt2_llmc.c: llm.c), for import_gpt2.c (docs/data.md, "Importing GPT-2"). */
#ifndef GMA_GPT2_DEST_H
#define GMA_GPT2_DEST_H
#include <stddef.h>

#include "model/model.h"

/* the data.path of the config: GPT-2-tokenised WikiText-103 (gmadata prepare wikitext-103
 * --tokenizer gpt2), which gmaeval --data valid then reads; --data FILE takes any shard */
#define GPT2_DATA "data/wikitext-103-gpt2"

typedef struct Gpt2Info {
    int L, D, H, V, T; /* layers, width, heads, vocabulary, positions */
    long params;       /* parameters written */
    int tokenizer;     /* 1 when tokenizer/ was written */
    char format[32];   /* "hugging face" or "llm.c v3" / "llm.c v5" */
} Gpt2Info;

typedef struct Gpt2Dest {
    Model m;
    real *host; /* m.pt.total reals: the parameters being filled */
    int built;
    const char *src; /* the file being read, for messages */
} Gpt2Dest;

/* Build the model of shape s (mixer sdpa, learned positions, biases, tied head) and a
 * zeroed host buffer. 0, or -1 with gma_error. */
int gpt2_dest_build(Gpt2Dest *d, const Gpt2Info *s);
/* The host memory of tensor name (printf format with one int, the layer), which must hold
 * numel reals; NULL (with gma_error) when it does not. */
real *gpt2_dest_at(Gpt2Dest *d, size_t numel, const char *fmt, int layer);
void gpt2_dest_free(Gpt2Dest *d);

/* Readers: the shape (into info) and every parameter (into d, built by them). 0 or -1. */
int gpt2_read_hf(const char *st_path, const char *config_path, Gpt2Dest *d, Gpt2Info *info);
int gpt2_read_llmc(const char *path, Gpt2Dest *d, Gpt2Info *info);
#endif
