/* import_gpt2_int.h: what the GPT-2 readers (import_gpt2_hf.c, import_gpt2_llmc.c) share
 * with import_gpt2.c: the model they fill. Not part of the library's interface. */
#ifndef GMA_IMPORT_GPT2_INT_H
#define GMA_IMPORT_GPT2_INT_H
#include <stddef.h>

#include "model/import_gpt2.h"
#include "model/model.h"

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

/* Readers: the shape (into info) and every parameter (into d, built by them). 0 or -1. */
int gpt2_read_hf(const char *st_path, const char *config_path, Gpt2Dest *d, Gpt2Info *info);
int gpt2_read_llmc(const char *path, Gpt2Dest *d, Gpt2Info *info);
#endif
