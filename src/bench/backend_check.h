/* backend_check.h: gmacheck's comparison of a backend against the CPU backend on one model
 * and batch (docs/cuda.md). The model of the config is built twice, on the CPU backend and
 * on the device, from the same initial parameters (drawn once on the host and copied); both
 * get the same random batch (a classifier config, model.task "classify", gets random rows
 * of random lengths with padding and random labels), and for each step the loss and every
 * parameter's gradient are compared, then the trainer's optimiser step (optim_step:
 * train.optimizer with its weight-decay groups and clipping; buffers untouched) is taken on
 * both and the updates compared. Every step starts both backends from the CPU's parameters
 * and AdamW moments, so the errors measure one step's arithmetic, not two trajectories
 * drifting apart. Relative error of a tensor: |g_dev - g_cpu|_2 / max(|g_cpu|_2, 1e-3
 * |g_cpu(all tensors)|_2) (the floor keeps tensors whose exact gradient is zero, e.g. key
 * biases of softmax attention, from dividing noise by noise). */
#ifndef GMA_BACKEND_CHECK_H
#define GMA_BACKEND_CHECK_H
#include "core/config.h"

typedef struct CheckOpts {
    int device; /* the backend under test: OpsDevice (ops_select) */
    int steps, B, N;
    int quiet;  /* no per-tensor lines of the first step */
    int digest; /* a hash of the device's loss and gradient bits per step */
    double tol; /* the bound on the loss's and every gradient's relative error */
} CheckOpts;

/* Runs the comparison of config c (validated; c->precision the device's), printing a line
 * per step and the verdict. Returns 0 within the bound, 1 above it (or a buffer changed
 * by the optimiser), -1 with the error when the model or the backend cannot be used. */
int backend_check(const Config *c, const CheckOpts *o);
#endif
