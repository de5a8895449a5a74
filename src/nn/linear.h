/* linear.h: y = x W^T + b with W [out, in] (PyTorch layout), forward and accumulating
 * (or dinp-writing) backward, on the op layer. */
#ifndef GMA_LINEAR_H
#define GMA_LINEAR_H
#include "ops/ops.h"

/* out [R, O] = inp [R, I] W^T [I, O] + b (b may be NULL) */
void linear_forward(real *out, const real *inp, const real *W, const real *b, int R, int I, int O);
/* dinp += dout W ; dW += dout^T inp ; db += colsum dout (any of dinp, db may be NULL) */
void linear_backward(real *dinp, real *dW, real *db, const real *dout, const real *inp, const real *W, int R, int I,
                     int O);
/* as linear_backward, but dinp = dout W is written, not added to (no zeroing beforehand) */
void linear_backward_set(real *dinp, real *dW, real *db, const real *dout, const real *inp, const real *W, int R, int I,
                         int O);
#endif
