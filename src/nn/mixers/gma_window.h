/* gma_window.h: an exact local window inside a GMA layer (gma.window W > 0; the mix, its
 * gradient, initialisation, cost and refusals: docs/model.md §3.11): softmax attention over
 * the last W tokens on the same q, k, v (the tiled sliding-window op of sdpa.window), mixed
 * with the GMA path by a gate per head (head_gate.h, PREFIX.gma.window_gate [H]). gma.c calls
 * these hooks where its add write (gma.write "add", gma.memory "none") has the GMA path's
 * heads, then projects the mix.
 * Its blocks: act (gma_window_act reals; gma.c places them after its own, before the
 * projections' block): ohw [B,H,N,d] the window path's heads, lse [B,H,N], kbias [B,N],
 * ohm [B,H,N,d] the mix; scratch (gma_window_scratch, after gma's): the window path's doh
 * [B,H,N,d], 2 H dot products; decode state (gma_window_state, after gma's): a ring of
 * min(W, Nmax) key/value rows per head (attn_decode_state). */
#ifndef GMA_GMA_WINDOW_H
#define GMA_GMA_WINDOW_H
#include "nn/mixers/mixer.h"

typedef struct GmaWindow GmaWindow;

/* gma.window of c (0 = off) */
int gma_window_of(const Config *c);
/* 0, or -1 (with gma_error) when gma.window > 0 and the backend lacks the tiled attention
 * ops (attn_forward, attn_backward, attn_step) */
int gma_window_need_ops(const Config *c);
/* With gma.window > 0: registers PREFIX.gma.window_gate [H] and returns the window's state;
 * NULL with 0 */
GmaWindow *gma_window_create(Mixer *m, const Config *c, ParamTable *pt, const char *prefix);
void gma_window_destroy(GmaWindow *w);
size_t gma_window_act(const Mixer *m, int B, int N);
size_t gma_window_scratch(const Mixer *m, int B, int N);
/* the tiles of the window attention, forward and backward (MixerVT.fused_flops) */
double gma_window_flops(const GmaWindow *w, const Mixer *m, int B, int N, int causal);
/* reals of one sequence's ring for a window of Nmax positions */
size_t gma_window_state(const GmaWindow *w, const Mixer *m, int Nmax);

/* forward: the window path from qh, kh, vh [B,H,N,d], mixed with the GMA path's ohg; returns
 * the mix (inside wact) that the output projection takes */
const real *gma_window_forward(GmaWindow *w, const Mixer *m, const MixerCtx *c, const real *params, const real *qh,
                               const real *kh, const real *vh, const real *ohg, real *wact);
/* the mix of the last forward (inside wact) */
const real *gma_window_mix(const Mixer *m, int B, int N, const real *wact);
/* backward, first half: from doh (the mix's gradient) the gate logits' gradient, the
 * window path's share g doh into wscr, and doh scaled in place to the GMA path's (1 - g) doh */
void gma_window_backward_split(GmaWindow *w, const Mixer *m, const MixerCtx *c, const real *params, real *grads,
                               real *doh, const real *ohg, const real *wact, real *wscr);
/* second half: the window attention's backward added into dq, dk, dv [B,H,N,d] */
void gma_window_backward_attn(GmaWindow *w, const Mixer *m, const MixerCtx *c, real *dq, real *dk, real *dv,
                              const real *qh, const real *kh, const real *vh, const real *wact, const real *wscr);
/* one decoding step of B sequences at `pos`: the ring at state + b ss one token on, the
 * mix with the GMA path's ohg [B,H,1,d]; returns the mix (inside wact, the block for B x 1) */
const real *gma_window_step(GmaWindow *w, const Mixer *m, const real *params, real *state, size_t ss, const real *qh,
                            const real *kh, const real *vh, const real *ohg, int B, int pos, int Nmax, real *wact);
/* prefill: the ring of each sequence after the c->N tokens of a forward (its kh, vh) */
void gma_window_prefill(const GmaWindow *w, const Mixer *m, const MixerCtx *c, const real *kh, const real *vh,
                        real *state, size_t ss, int Nmax);
#endif
