/* model_cross.h: the encoder-decoder of cross.mixer "gma" | "sdpa" (docs/model.md §3.8: the
 * window's context and query sequence, the encoder, the decoder blocks' cross sub-layers,
 * decoding), the parts model.c calls. Parameters: cross.enc.L.ln.{weight,bias},
 * cross.enc.L.attn.*, cross.enc.ln_f.*, blocks.L.ln3.*, blocks.L.cross.* (nn/mixers/cross.h).
 * The head scores the N = T - M query rows only. Decoding computes the context's memory once
 * (model_prefill: the encoder over the prompt's first M tokens, then cross_memory per layer)
 * and feeds the query tokens one at a time. */
#ifndef GMA_MODEL_CROSS_H
#define GMA_MODEL_CROSS_H
#include "nn/mixers/cross.h"

typedef struct XEnc {
    int lnw, lnb;
    Cross *att;
    real *ln, *mean, *rstd, *act;
} XEnc;
typedef struct XDec {
    int lnw, lnb;
    Cross *att;
    real *xmid, *ln, *mean, *rstd, *out, *act; /* u, LN3(u), its statistics, X(LN3(u), C), the layer's act */
} XDec;

typedef struct XModel {
    int kind, M, E, L, D;
    const ParamTable *pt;         /* the model's table */
    XEnc *enc;
    XDec *dec;
    int lnfw, lnfb;
    real **e;                     /* E + 1 of [B,M,D]: e[0] the context's embedded rows */
    real *ctx, *ctx_mean, *ctx_rstd; /* C [B,M,D] */
    real *dctx, *de, *dtmp;       /* [B,M,D] */
    real *tmp;                    /* [B,T,D] */
    real *scratch;
    real *mem;                    /* decoding: L x mem_B memories of cross_memory_size reals */
    int mem_B;
    int32_t *tq_host;             /* host [B,N] the query rows' targets */
    int B, T;                     /* the last forward */
    int own_pos;                  /* cross.query_pos own: the query rows' positions start at 0 */
} XModel;

/* The encoder and the cross sub-layers of L decoder blocks of width D for cross.mixer gma |
 * sdpa, their parameters registered in pt; NULL for cross.mixer none. */
XModel *xmodel_build(const Config *c, ParamTable *pt, int D, int L);
/* activations for Bmax windows of up to Nmax tokens */
void xmodel_alloc(XModel *x, int Bmax, int Nmax);
/* the reals (host targets included) xmodel_alloc takes for Bmax x Nmax: the memory plan's
 * share of the encoder and the cross sub-layers; 0 for NULL */
size_t xmodel_act_size(const XModel *x, int Bmax, int Nmax);
void xmodel_free(XModel *x);
/* the query rows' targets of tgt [B,T] (host) into x->tq_host; returns N = T - M, or -1
 * (gma_error) when T <= M */
int xmodel_targets(XModel *x, const int32_t *tgt, int B, int T);
/* after the embedding of B x T tokens into r0 [B,T,D]: C from the context rows, the query
 * rows moved to the front of r0 ([B,N,D]) */
void xmodel_encode(XModel *x, const real *params, real *r0, int B, int T);
/* decoder block l's cross sub-layer over R = B N rows: mix += X_l(LN3(resid + mix), C);
 * decoding (N = 1): from the memories of xmodel_memory */
void xmodel_block_forward(XModel *x, const real *params, int l, const real *resid, real *mix, int B, int N,
                          int decoding);
/* its backward: dres holds d u' on entry, d u on return; dC accumulates; dtmp [B,N,D] scratch */
void xmodel_block_backward(XModel *x, const real *params, real *grads, int l, real *dres, real *dtmp, int B, int N);
/* before the decoder's backward: dC = 0 */
void xmodel_backward_begin(XModel *x);
/* after it (dq [B,N,D]: d of the query rows' embeddings): the encoder's backward; returns
 * the gradient of the window's embedded rows [B,T,D] (context, then queries) for the
 * embedding's backward */
const real *xmodel_backward_end(XModel *x, const real *params, real *grads, const real *dq);
/* decoding: the memories of one context, embedded into x->e[0] [1,M,D] by the caller, for
 * B sequences */
void xmodel_memory(XModel *x, const real *params, int B);
#endif
