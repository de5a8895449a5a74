/* stem.h: the convolutional stem of an image classifier (model.stem "conv"; math, the three
 * normalisations, initialisation: docs/model.md §2.1): after the token embedding, n layers
 * of 3 x 3 convolution, per-channel normalisation and ReLU over each image of pixels in
 * raster order, its output plus the position table the blocks' input. The convolution is
 * im2col (op im2col3x3) and a matrix product over runs of whole images (on the CPU as many
 * as keep the im2col within a cache-sized budget).
 * Tensors (docs/model.md §7): stem.{l}.conv.weight [D, 9D], stem.{l}.conv.bias [D],
 * stem.{l}.norm.weight [D], stem.{l}.norm.bias [D], and with batch norm the buffers
 * stem.{l}.norm.running_mean [D], stem.{l}.norm.running_var [D]. */
#ifndef GMA_STEM_H
#define GMA_STEM_H
#include "core/config.h"
#include "nn/params.h"
#include "ops/ops.h"

#define STEM_MAX_LAYERS CFG_MAX_STEM

typedef enum { STEM_NORM_BATCH, STEM_NORM_INSTANCE, STEM_NORM_NONE } StemNorm; /* model.stem_norm: batch|instance|none */
enum { STEM_NONE, STEM_CONV }; /* model.stem: none|conv */

typedef struct Stem {
    int n, D, W;                 /* layers (0: no stem), width, image width (0: square images) */
    int dil[STEM_MAX_LAYERS];
    StemNorm norm;
    int convw[STEM_MAX_LAYERS], convb[STEM_MAX_LAYERS], normw[STEM_MAX_LAYERS], normb[STEM_MAX_LAYERS];
    int rmean[STEM_MAX_LAYERS], rvar[STEM_MAX_LAYERS]; /* batch norm's buffers (-1 otherwise) */
    /* activations for S images of P pixels (stem_carve): input, pre-norm and output of each layer */
    real *x0, *y[STEM_MAX_LAYERS], *a[STEM_MAX_LAYERS], *mean[STEM_MAX_LAYERS], *rstd[STEM_MAX_LAYERS];
    int run;                     /* images per run of the convolutions (the im2col's rows / P) */
    real *col, *dy, *da;         /* [run P, 9D] im2col, [S P, D] backward scratch */
    real *wt;                    /* [9D, D]: the weight regrouped for the input gradient */
    real *stat_host;             /* host [2 D]: batch statistics for the running update */
    int S, H, Wd, batch_stats;   /* the last forward's shape; 1 when it used batch statistics */
} Stem;

/* Parse model.stem* and add the stem's tensors to pt (nothing with model.stem "none"); -1
 * with a message naming the key on a bad value. */
int stem_build(Stem *st, const Config *c, ParamTable *pt);
/* reals stem_carve takes for S images of N pixels (0 without a stem) */
size_t stem_act_size(const Stem *st, int S, int N);
void stem_carve(Stem *st, real **p, int S, int N);
/* The image shape of N tokens: 0 with *H, *W set, or -1 with a message. */
int stem_shape(const Stem *st, int N, int *H, int *W);
/* out [S, N, D] from the embedded tokens in st->x0 [S, N, D]; training: batch norm uses the
 * batch's statistics (else the running ones). */
void stem_forward(Stem *st, real *out, const ParamTable *pt, const real *params, int S, int N, int training);
/* dx0 [S, N, D] (accumulated) from dout [S, N, D]; parameter gradients accumulated */
void stem_backward(Stem *st, real *dx0, const real *dout, const ParamTable *pt, const real *params, real *grads);
/* batch norm after a training micro-batch: running = 0.9 running + 0.1 batch (the variance
 * unbiased); nothing otherwise */
void stem_update_buffers(Stem *st, const ParamTable *pt, real *params);
/* 1 when tensor is one of the stem's running statistics (averaged across data-parallel ranks) */
int stem_rank_averaged(const Stem *st, int tensor);
void stem_free(Stem *st);
/* The keys model.stem* (a stored section: only this module reads them) and their checks. */
extern const CfgSection stem_cfg_section;

#endif
