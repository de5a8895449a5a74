/* linear.c: the fully connected layer on the op layer (see linear.h). */
#include "nn/linear.h"

void linear_forward(real *out, const real *inp, const real *W, const real *b, int R, int I, int O) {
    g_ops->matmul(out, inp, W, R, O, I, 0, 1, 1, 0);
    if (b) g_ops->bias_forward(out, b, R, O);
}

static void backward(real *dinp, real dinp_beta, real *dW, real *db, const real *dout, const real *inp, const real *W,
                     int R, int I, int O) {
    if (dinp) g_ops->matmul(dinp, dout, W, R, I, O, 0, 0, 1, dinp_beta);
    g_ops->matmul(dW, dout, inp, O, I, R, 1, 0, 1, 1);
    if (db) g_ops->bias_backward(db, dout, R, O);
}

void linear_backward(real *dinp, real *dW, real *db, const real *dout, const real *inp, const real *W, int R, int I,
                     int O) {
    backward(dinp, 1, dW, db, dout, inp, W, R, I, O);
}

void linear_backward_set(real *dinp, real *dW, real *db, const real *dout, const real *inp, const real *W, int R, int I,
                         int O) {
    backward(dinp, 0, dW, db, dout, inp, W, R, I, O);
}
