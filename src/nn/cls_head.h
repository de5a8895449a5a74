/* cls_head.h: the classifier heads of the encoder (docs/model.md §2), parameters under head.*.
 *
 * Single sequence: logits = pooled head.weight^T + head.bias, head.weight [C,D].
 * Two sequences (retrieval): pooled holds u (rows 0..B-1) then v (rows B..2B-1);
 *   f = [u, v, u*v, u-v] [B,4D]; h = gelu(f head.mlp.fc.weight^T + head.mlp.fc.bias),
 *   head.mlp.fc.weight [Dh,4D]; logits = h head.weight^T + head.bias, head.weight [C,Dh].
 *   (LRA's dual-encoder head uses two ReLU layers of mlp_dim and mlp_dim/2; here one GELU
 *   layer of Dh = model.d_ff, the backbone's activation.)
 *
 * Shapes: B examples, D width, Dh hidden width, C classes. */
#ifndef GMA_CLS_HEAD_H
#define GMA_CLS_HEAD_H
#include "nn/params.h"
#include "ops/ops.h"

typedef struct ClsHead {
    int pair;      /* 1: two-sequence head */
    int D, Dh, C;
    int fcw, fcb;  /* head.mlp.fc.{weight,bias} table indices (pair only, else -1) */
    int w, b;      /* head.weight, head.bias table indices */
    size_t o_fcw, o_fcb, o_w, o_b; /* their offsets (fixed when registered) */
} ClsHead;

/* Register the head's tensors (normal(std) weights, zero biases). */
void cls_head_add(ClsHead *h, ParamTable *pt, int D, int Dh, int C, int pair, double std);
/* Reals of activations kept between forward and backward for B examples. */
size_t cls_head_act_size(const ClsHead *h, int B);
/* logits [B,C] from pooled [B,D] (or [2B,D] for pair); act as sized above. */
void cls_head_forward(const ClsHead *h, real *logits, real *act, const real *pooled, const real *params, int B);
/* dpooled (same shape as pooled) += ..., grads += ...; dlogits [B,C]; scratch of
 * cls_head_act_size reals (pair; may be NULL otherwise). act is clobbered. */
void cls_head_backward(const ClsHead *h, real *dpooled, real *grads, const real *dlogits, real *act,
                       const real *pooled, const real *params, real *scratch, int B);
#endif
