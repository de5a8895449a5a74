/* cls_head.h: the classifier heads of the encoder (docs/model.md §2), parameters under head.*.
 *
 * The input f is the pooled vector [B,D] (one sequence), or for two sequences (retrieval)
 * f = [u, v, u*v, u-v] [B,4D] where pooled holds u (rows 0..B-1) then v (rows B..2B-1).
 * Then up to two hidden layers, h_k = act(h_{k-1} W_k^T + b_k) with h_0 = f:
 *   hidden 1: head.mlp.fc.weight [Dh1, Din], head.mlp.fc.bias [Dh1]
 *   hidden 2: head.mlp.fc2.weight [Dh2, Dh1], head.mlp.fc2.bias [Dh2]
 * act is GELU or ReLU (model.head_act); logits = h_n head.weight^T + head.bias, head.weight
 * [C, last width]. With no hidden layer: logits = f head.weight^T + head.bias.
 * (LRA: one sequence Dense(mlp_dim), ReLU, Dense(classes); two sequences Dense(mlp_dim),
 * ReLU, Dense(mlp_dim/2), ReLU, Dense(classes).)
 *
 * Shapes: B examples, D width, Din = D or 4D, Dh hidden widths, C classes. */
#ifndef GMA_CLS_HEAD_H
#define GMA_CLS_HEAD_H
#include "core/config.h"
#include "nn/params.h"
#include "ops/ops.h"

#define CLS_HEAD_MAX_HIDDEN 2

typedef struct ClsHead {
    int pair;      /* 1: two-sequence head */
    int D, Din, C;
    int nh;        /* hidden layers, 0..CLS_HEAD_MAX_HIDDEN */
    int Dh[CLS_HEAD_MAX_HIDDEN];
    int relu;      /* hidden activation: 1 ReLU, 0 GELU */
    int fcw[CLS_HEAD_MAX_HIDDEN], fcb[CLS_HEAD_MAX_HIDDEN]; /* table indices of the hidden layers */
    size_t o_fcw[CLS_HEAD_MAX_HIDDEN], o_fcb[CLS_HEAD_MAX_HIDDEN];
    int w, b;      /* head.weight, head.bias table indices */
    size_t o_w, o_b; /* their offsets (fixed when registered) */
} ClsHead;

/* What cls_head_add registers: nh hidden widths Dh (each > 0), activation, initialisation
 * of the weights (INIT_NORMAL with std, INIT_XAVIER_UNIFORM or INIT_LECUN_NORMAL); biases
 * start at zero. */
typedef struct ClsHeadSpec {
    int nh, Dh[CLS_HEAD_MAX_HIDDEN], relu;
    InitKind init;
    double std;
} ClsHeadSpec;

void cls_head_add(ClsHead *h, ParamTable *pt, int D, int C, int pair, const ClsHeadSpec *spec);
/* Reals of activations kept between forward and backward for B examples (and as many
 * again for the backward's scratch). */
size_t cls_head_act_size(const ClsHead *h, int B);
/* The activation of hidden layer k [B, Dh[k]] inside act (after cls_head_forward); its
 * pre-activation is the [B, Dh[k]] block just before it. */
real *cls_head_hidden(const ClsHead *h, real *act, int k, int B);
/* logits [B,C] from pooled [B,D] (or [2B,D] for pair); act as sized above. drop (NULL =
 * none): dropout on every hidden activation after its activation function (model.head_dropout,
 * docs/model.md §8), hidden layer k drawing the mask of layer k of drop's site; the backward
 * takes the same drop and applies the same masks to the gradients. */
void cls_head_forward(const ClsHead *h, real *logits, real *act, const real *pooled, const real *params, int B,
                      const GmaDrop *drop);
/* dpooled (same shape as pooled) += ..., grads += ...; dlogits [B,C]; scratch of
 * cls_head_act_size reals (may be NULL when that is 0). */
void cls_head_backward(const ClsHead *h, real *dpooled, real *grads, const real *dlogits, real *act,
                       const real *pooled, const real *params, real *scratch, int B, const GmaDrop *drop);
enum { HEAD_ACT_GELU, HEAD_ACT_RELU };                                    /* model.head_act: gelu|relu */
enum { HEAD_INIT_NORMAL, HEAD_INIT_XAVIER_UNIFORM, HEAD_INIT_LECUN_NORMAL }; /* model.head_init */
/* The classifier head's configuration: its keys model.* (a stored section "cls_head"). */
typedef struct ClsHeadCfg {
    int key_padding_mask; /* the mixers see the key-padding mask (0: padding is content) */
    int n_classes;
    int n_seq;            /* sequences per example (1, 2); 0 = from the data */
    double head_dropout;  /* the head's hidden activations (the LRA release: none) */
    int head_hidden, head_hidden2; /* hidden widths (-1 = by task, 0 = none) */
    int head_act;         /* HEAD_ACT_GELU | HEAD_ACT_RELU */
    double cls_std;       /* cls_token init std (< 0 = init_std, 0 = zeros) */
    int head_init;        /* HEAD_INIT_NORMAL | _XAVIER_UNIFORM | _LECUN_NORMAL */
} ClsHeadCfg;

/* The classifier head's rows (model.n_classes, n_seq, head_*, cls_std, key_padding_mask) and checks. */
extern const CfgSection cls_head_cfg_section;
const ClsHeadCfg *cls_head_cfg(const Config *c);
ClsHeadCfg *cls_head_cfg_mut(Config *c);

#endif
