/* gma_core.h: GMA's mixing between the shared projections (gma.c), for a mixer built on a
 * GMA child that computes the projections itself (gated.c). The child is a `gma` Mixer
 * (mixer_gma.create) without the EMA memory; act and scratch are the child's blocks (its
 * act_size, scratch_size), act starting with qh, kh, vh, oh [B,H,N,d]. */
#ifndef GMA_GMA_CORE_H
#define GMA_GMA_CORE_H
#include "nn/mixers/mixer.h"

/* oh (act's fourth [B,H,N,d] block) from the qh, kh, vh the caller wrote into act's first
 * three; the diversity loss of a training forward as the full forward keeps it */
void gma_mix_forward(Mixer *m, const MixerCtx *c, const real *params, real *act, real *scratch);
/* Its backward: scratch's first B*N*D reals hold doh (overwritten). On return scratch holds
 * dq, dv, dk [B,H,N,d] at offsets 0, B*N*D and 2 B*N*D (written, not accumulated); the
 * routing parameters' gradients (with the diversity loss and the Dirichlet prior) are
 * added to grads. Returns the free scratch after dk (at least B*N*D reals). */
real *gma_mix_backward(Mixer *m, const MixerCtx *c, const real *params, real *grads, real *act, real *scratch);
/* One decoding step of the mixing for B sequences (qh, kh, vh, oh [B,H,1,d]): the
 * routing of the token, then linmix_step on the states at state + b stride, each
 * gma_mix_step_state reals; scratch gma_mix_step_scratch(m, B) reals. */
void gma_mix_step(Mixer *m, const real *params, real *oh, real *state, size_t stride, const real *qh, const real *kh,
                  const real *vh, int B, real *scratch);
size_t gma_mix_step_state(const Mixer *m);
size_t gma_mix_step_scratch(const Mixer *m, int B);
/* gma.diag_every of c: the recall diagnosis period (train/routing_diag.h; 0 = off) */
int gma_cfg_diag_every(const Config *c);
/* 1 when c asks for the EMA memory (gma.memory "ema") */
int gma_cfg_memory(const Config *c);
/* (batch, head) rows the backward of a B x N batch recomputes at once (gma.c: at least
 * D / (2 Kc) heads, more where the forward's scratch has room; whole batches from H on) */
int gma_backward_group(const Mixer *m, int B, int N);
#endif
