/* pool.h: sequence pooling of the encoder classifier (docs/model.md §2). Both poolings are one
 * weighted sum over positions, out[r,:] = sum_n w[r,n] x[r,n,:], with the weights made on
 * the host from the key mask: `mean` puts 1/count on every real position (0 on padding;
 * an all-padding row pools to 0), `cls` puts 1 on position 0 (the prepended CLS slot).
 *
 * Shapes: R pooled rows (sequences), N positions, D width. */
#ifndef GMA_POOL_H
#define GMA_POOL_H
#include "core/config.h"
#include <stdint.h>

#include "ops/ops.h"

typedef enum { POOL_MEAN, POOL_CLS, POOL_MAX } PoolKind; /* model.pooling: mean|cls|max (max: ops pool_max) */

/* Host weights w [R,N] from keymask [R,N] (1 = real; NULL = all real). */
void pool_weights(real *w, const uint8_t *keymask, int R, int N, PoolKind kind);
/* out [R,D] = sum_n w[r,n] x[r,n,:]   (w in backend memory) */
void pool_forward(real *out, const real *x, const real *w, int R, int N, int D);
/* dx [R,N,D] += w[r,n] dout[r,:] */
void pool_backward(real *dx, const real *dout, const real *w, int R, int N, int D);
/* Positions a pooling adds in front of a sequence: the CLS slot (1), else 0; the caller
 * fits a sequence and its slots in its window (train/cls_task.c). */
static inline int pool_slots(PoolKind kind) { return kind == POOL_CLS; }
/* The row model.pooling. */
extern const CfgSection pool_cfg_section;

#endif
