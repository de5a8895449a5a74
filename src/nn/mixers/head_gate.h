/* head_gate.h: a learned gate per head that mixes two paths' head outputs,
 *   out_h = g_h a_h + (1 - g_h) b_h,   g_h = sigmoid(logit_h),
 * with its backward: the layers that hold a second path beside another (mixer "gated":
 * full softmax attention and GMA, docs/model.md §3.7; gma.window: sliding-window softmax
 * attention and GMA, §3.11). Heads are [B,H,L] blocks of L reals (L = N d). */
#ifndef GMA_HEAD_GATE_H
#define GMA_HEAD_GATE_H
#include <stddef.h>

#include "core/common.h"

/* The host reals a layer holds for its gate, allocated once: g_h of the last call [H], then
 * the backward's work [3 H] (head_gate_backward's `work`, at host + H) */
#define HEAD_GATE_HOST(H) (4 * (size_t)(H))
/* g_h = sigmoid(logit_h) of the H logits (backend memory) into host[0..H); returns host */
const real *head_gate_values(real *host, const real *logits, int H);
/* out = wa a + wb b per head, wa = g_h when use_a (else 0), wb = 1 - g_h when use_b (else 0).
 * out may be a only when use_b is 0 (a scaled in place), b only when use_a is 0; a, b are
 * not read without use_a, use_b */
void head_gate_mix(real *out, const real *a, const real *b, const real *g, int B, int H, size_t L, int use_a,
                   int use_b);
/* dlogit_h += g_h (1 - g_h) <dout_h, a_h - b_h> summed over the B sequences (dlogit backend
 * memory); dots: 2 H reals of backend scratch; work: 3 H host reals */
void head_gate_backward(real *dlogit, const real *g, const real *dout, const real *a, const real *b, real *dots,
                        real *work, int B, int H, size_t L);
#endif
