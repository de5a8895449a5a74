/* model_cls.h: the encoder classifier's parts (model.task "classify", docs/model.md §2),
 * the head the model calls around its blocks, as it calls model_cross.h's. The backbone runs
 * S = B x n_seq sequences of Nt = N + pool_cls positions: example b's sequence s is row
 * s*B + b. Around it the classifier adds
 *   - before the blocks: its tokens with the CLS slot (token 0, real) in front when pooling
 *     is "cls", their key mask, and their embedding: the convolutional stem when there is
 *     one (nn/stem.h) or the token embedding, plus the positions; the slot's row is
 *     cls_token + the position row 0;
 *   - after ln_f: pooling (mean over real positions, the CLS slot, or max), the head
 *     (nn/cls_head.h) and the cross-entropy over the B examples' labels.
 * Parameters: the stem's (before the blocks), cls_token and head.* (after ln_f).
 * Shapes: B examples, S sequences, Nt positions, D = d_model, C classes. */
#ifndef GMA_MODEL_CLS_H
#define GMA_MODEL_CLS_H
#include <stdint.h>

#include "core/config.h"
#include "nn/cls_head.h"
#include "nn/params.h"
#include "nn/stem.h"
#include "ops/ops.h"

typedef struct ClsModel {
    int pool_cls, pool_max;  /* model.pooling "cls": the CLS slot at position 0; "max": max pooling (else mean) */
    int n_seq, C;            /* sequences per example (1, 2); classes */
    int key_mask;            /* model.key_padding_mask: the mixers see the padding mask */
    double head_dropout;     /* model.head_dropout */
    int D;
    int cls_tok;             /* param index of cls_token [D] (-1 without cls pooling) */
    Stem stem;               /* image classifiers' convolutional stem (stem.n 0: none) */
    ClsHead head;
    int n_ex;                /* examples in the last forward */
    /* activations (clsmodel_carve), backend memory unless marked host */
    real *pool_w;            /* (S, Nt) pooling weights */
    real *pooled, *dpooled;  /* (S, D) the pooled sequences and their gradient (dpooled NULL: inference) */
    real *head_act, *head_scratch; /* cls_head_act_size reals each (head_scratch NULL: inference) */
    int32_t *pred;           /* (B) argmax */
    int32_t *pool_arg;       /* (S, D) max pooling's positions */
    real *pool_w_host;       /* host (S, Nt) */
    uint8_t *mask_host;      /* host (S, Nt) key mask, the CLS slot included */
    int32_t *tok_host;       /* host (S, Nt) tokens, the CLS slot included */
} ClsModel;

/* A classifier of config c (model.task "classify"): *out, with the stem's tensors added to
 * pt (the model calls it before its blocks' tensors). 0, or -1 (gma_error). */
int clsmodel_create(ClsModel **out, const Config *c, ParamTable *pt);
/* cls_token and the head's tensors (after ln_f's) for a backbone of width D and MLP width F;
 * init_std: model.init_std. 0, or -1 when the stem does not fit the classifier. */
int clsmodel_add_head(ClsModel *k, const Config *c, ParamTable *pt, int D, int F, double init_std);
/* the reals clsmodel_carve takes from the model's activation block for Bmax examples of Nt
 * positions (infer: no backward buffers) */
size_t clsmodel_act_size(const ClsModel *k, int Bmax, int Nt, int infer);
/* carve them from *p (moved past them) and allocate the rest (argmax, pooling positions,
 * host rows) */
void clsmodel_carve(ClsModel *k, real **p, int Bmax, int Nt, int infer);
void clsmodel_free(ClsModel *k);
/* The host rows of a batch: tok [S, N] (padded with 0), keymask [S, N] (1 = real; NULL:
 * tok != 0 is real), labels [B] in [0, C), V the vocabulary; into tok_host and mask_host
 * with the CLS slot. 0, or -1 naming the bad label or token. */
int clsmodel_prepare(ClsModel *k, const int32_t *tok, const uint8_t *keymask, const int32_t *labels, int B, int N, int V);
/* the key mask the mixers see: the padding mask with its CLS slot, or NULL with
 * model.key_padding_mask false (padding tokens are then keys like the others) */
const uint8_t *clsmodel_keymask(const ClsModel *k);
/* The embedded rows r0 [S, Nt, D] of tok [S, Nt] (backend; tok_host's copy): the stem's or
 * the token embedding wte's, plus the position table pos (NULL: none), the CLS slot's rows.
 * 0, or -1 when the stem cannot take Nt positions. */
int clsmodel_embed(ClsModel *k, real *r0, const int32_t *tok, const real *wte, const real *pos, const ParamTable *pt,
                   const real *params, int S, int Nt, int training);
/* its backward from dr0 [S, Nt, D] (overwritten; dtmp [S, Nt, D] scratch): dwte, dpos (NULL:
 * no learned positions) and the stem's and cls_token's gradients accumulated */
void clsmodel_embed_backward(ClsModel *k, real *dwte, real *dpos, real *dr0, real *dtmp, const int32_t *tok,
                             const ParamTable *pt, const real *params, real *grads, int S, int Nt);
/* After the blocks: pooling of lnf [S, Nt, D], the head's logits [B, C], the cross-entropy
 * per example against tgt [B] (backend) into loss_rows, valid_rows [B]; *loss_sum the
 * summed loss, *correct the examples whose argmax (into pred_host [B]) is labels[b]
 * (host). drop: the head's dropout mask (NULL: none). */
void clsmodel_head_forward(ClsModel *k, real *logits, real *loss_rows, real *valid_rows, const real *lnf,
                           const int32_t *tgt, const real *params, const int32_t *labels, int32_t *pred_host, int B,
                           int Nt, const GmaDrop *drop, double *loss_sum, double *correct);
/* its backward for d(scale * summed loss): dlnf [S, Nt, D] (written), the head's gradients
 * accumulated; logits become their gradient */
void clsmodel_head_backward(ClsModel *k, real *dlnf, real *logits, const int32_t *tgt, const real *params, real *grads,
                            int B, int Nt, double scale, const GmaDrop *drop);
#endif
