/* gpt2_dest.h: the model a GPT-2 reader fills (import_gpt2_hf.c: Hugging Face,
 * import_gpt2_llmc.c: llm.c), for import_gpt2.c (docs/data.md, "Importing GPT-2"), which
 * the writers (export_gpt2.h) read back; a block's Hugging Face tensors and the walk over
 * them in either direction. */
#ifndef GMA_GPT2_DEST_H
#define GMA_GPT2_DEST_H
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* the data.path of the config: GPT-2-tokenised WikiText-103 (gmadata prepare wikitext-103
 * --tokenizer gpt2), which gmaeval --data valid then reads; --data FILE takes any shard */
#define GPT2_DATA "data/wikitext-103-gpt2"
/* the config's name of an import (and of a run started from one with its config) */
#define GPT2_IMPORT_NAME "gpt2-import"

typedef struct Gpt2Info {
    int L, D, H, V, T; /* layers, width, heads, vocabulary, positions */
    long params;       /* parameters written */
    int tokenizer;     /* 1 when tokenizer/ was written */
    int swept;         /* stale temporary folders (RUN.tmp.PID of killed imports) removed */
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

/* A block's tensors as Hugging Face's GPT2Model names them ("h.%d." + hf) and where they go
 * in this project ("blocks.%d." + dst; the fused c_attn ones with %c for q, k, v, its
 * columns q | k | v in that order): transformers models/gpt2/modeling_gpt2.py GPT2Block
 * and GPT2Attention.c_attn. Sizes in units of the width D: a vector [in D]; a Conv1D
 * weight [in D, out D] (this project stores it transposed, [out D, in D]). */
enum { GPT2_VEC, GPT2_CONV, GPT2_QKV_W, GPT2_QKV_B };
typedef struct Gpt2HfTensor {
    const char *hf, *dst;
    int kind, in, out;
} Gpt2HfTensor;
#define GPT2_HF_BLOCK 12  /* rows of gpt2_hf_block */
#define GPT2_BLOCK_TENSORS 16 /* this project's tensors of a block (c_attn's two as six) */
extern const Gpt2HfTensor gpt2_hf_block[GPT2_HF_BLOCK];
/* The k-th (k < GPT2_BLOCK_TENSORS) of a block's tensors in this project: its name as a
 * format with the layer ("blocks.%d.mixer.q.weight") into fmt, its elements at width D. */
void gpt2_block_tensor(int k, size_t D, char *fmt, size_t cap, size_t *numel);
/* The project-side format of row t ("blocks.%d." + dst, part p = 0, 1, 2 of a c_attn row
 * as q, k, v) into fmt; "h.%d." + hf into hf_fmt when it is non-NULL. */
void gpt2_hf_formats(const Gpt2HfTensor *t, int p, char *fmt, char *hf_fmt, size_t cap);
/* The Hugging Face side of gpt2_hf_block_walk: the memory of tensor hf_fmt (a format with the
 * layer) of shape [d0] or [d0, d1] (d1 0: one axis), as GPT2Model holds it: on import the
 * tensor read (and checked), on export a buffer the walk fills for the caller to write. NULL
 * (with gma_error) stops the walk. */
typedef real *(*Gpt2HfSide)(void *ctx, const char *hf_fmt, int layer, int64_t d0, int64_t d1);
/* Layer l's tensors in the order of gpt2_hf_block, between the Hugging Face side and d's
 * host parameters: into d (to_hf 0, import) or out of it (to_hf 1, export); Conv1D weights
 * transposed, c_attn's columns q | k | v split or packed. 0, or -1 with gma_error. */
int gpt2_hf_block_walk(Gpt2Dest *d, int l, int D, int to_hf, Gpt2HfSide side, void *ctx);

/* Readers: the shape (into info) and every parameter (into d, built by them). 0 or -1. */
int gpt2_read_hf(const char *st_path, const char *config_path, Gpt2Dest *d, Gpt2Info *info);
int gpt2_read_llmc(const char *path, Gpt2Dest *d, Gpt2Info *info);
#endif
