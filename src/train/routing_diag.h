/* routing_diag.h: the recall diagnosis of GMA's routing (gma.diag_every; docs/routing.md,
 * "Why GMA's routing stalls on recall"). Every gma.diag_every optimiser steps, from the
 * last training micro-batch and the step's summed gradients (before clipping and the
 * update), one row per GMA layer in metrics.jsonl:
 *
 *   {"step":100,"event":"routing_diag","part":"self","layer":1,"n_components":64,"rows":4096,
 *    "q_used":9,"k_used":11,"q_entropy":0.8,"k_entropy":0.7,
 *    "pairs":256,"match_mass":0.4,"same_slot":0.5,"lookup_weight":0.06,"lookup_uniform":0.03,
 *    "slot_share":0.1,"key_slots_distinct":0.6,"match_by_offset":[...5],"lookup_by_offset":[...5],
 *    "share_by_offset":[...5],"distinct_by_offset":[...5],
 *    "live":12,"grad_centre":0.01,"grad_var":0.002,"grad_bias":0.001,
 *    "grad_centre_live":0.003,"grad_centre_dead":1e-7}
 *
 * Definitions (over the non-padded rows of every rank; figures of a head averaged over
 * the heads; gamma(q_i), gamma(k_j) the query and key responsibilities of the layer,
 * recomputed from the saved rows under the parameters of that forward):
 *   q_used, k_used   components that are the argmax of at least one query / key row
 *   q_entropy, k_entropy  mean -sum_c gamma_c ln gamma_c (nats)
 *   a recall pair (i, j): a scored position i (target >= 0) and its recall position j,
 *     the first earlier position whose token is i's target (MQAR: the value token written
 *     right after the queried key, the only row that can hold both the key, through a token
 *     shift, and the value); pairs counts them (per head)
 *   match_mass       gamma_{c*}(q_i), c* = argmax_c gamma_c(k_j): the query's mass on the
 *                    component its recall key was written to
 *   same_slot        share of pairs with argmax gamma(q_i) = c*
 *   lookup_weight    the weight of v_j in the layer's output at i, the linear core's
 *                    gamma(q_i).gamma(k_j) / (gamma(q_i).z_i + eps), z_i = sum of gamma(k_t)
 *                    over the keys i reads (t <= i when causal); lookup_uniform: 1 / (keys
 *                    i reads), what uniform attention would give
 *   slot_share       gamma_{c*}(k_j) / z_{i,c*}: the recall key's share of what slot c*
 *                    holds when i reads it (1: the slot holds this key's value alone)
 *   key_slots_distinct  per (sequence, head) with two or more recall positions: distinct
 *                    argmax components among them / their number (1: no two recall keys
 *                    share a slot)
 *   match_by_offset, lookup_by_offset, share_by_offset, distinct_by_offset  [5]: match_mass,
 *                    lookup_weight, slot_share and key_slots_distinct with the key row
 *                    j + o in place of j, o = -1 (MQAR: the key token) .. 3, over the pairs
 *                    where query i reads row j + o (distinct: the sequences where two or more
 *                    such rows exist; null where there are none): where a token
 *                    shift (model.short_conv, baseconv) binds a key to its value, the rows
 *                    after j hold both too
 *   live             components (per routing head, mean) that are an argmax of some query
 *                    or key row of any head they serve; the others are dead
 *   grad_centre, grad_var, grad_bias  Frobenius norms of the gradients of the centres (mu,
 *                    or the softmax router's W), var_raw (gaussian; null otherwise) and
 *                    the biases (prior_logits, or the router's b)
 *   grad_centre_live, grad_centre_dead  the mean over live / dead components of the norm
 *                    of a component's centre gradient row [d] (null where there is none)
 * "part" says which layer: "self" (block `layer`'s mixer), "cross" (block `layer`'s cross
 * sub-layer, cross.mixer gma: queries the decoder rows, keys the context's encoded rows,
 * recall positions in the context) or "encoder" (encoder layer `layer`, no pairs). A cross
 * model's decoder self-mixers have no pairs (their keys are the query rows). "rows": the
 * query rows counted per head. */
#ifndef GMA_ROUTING_DIAG_H
#define GMA_ROUTING_DIAG_H
#include <stdint.h>
#include <stdio.h>

#include "model/model.h"

/* The accumulators of one layer (sums over rows, pairs and heads; rdiag_accumulate adds,
 * dist sums them, rdiag_finish divides). */
#define RDIAG_NOFF 5  /* the key rows j + o, o = RDIAG_OFF0 .. RDIAG_OFF0 + RDIAG_NOFF - 1, of the *_by_offset figures */
#define RDIAG_OFF0 (-1)
enum {
    RD_QROWS, RD_KROWS, RD_QENT, RD_KENT, RD_PAIRS, RD_MATCH, RD_SAME, RD_LOOK, RD_UNIF, RD_SHARE,
    RD_OFF_CNT, RD_OFF_MATCH = RD_OFF_CNT + RDIAG_NOFF, RD_OFF_LOOK = RD_OFF_MATCH + RDIAG_NOFF,
    RD_OFF_SHARE = RD_OFF_LOOK + RDIAG_NOFF, RD_OFF_SEQS = RD_OFF_SHARE + RDIAG_NOFF,
    RD_OFF_DIST = RD_OFF_SEQS + RDIAG_NOFF, RD_N = RD_OFF_DIST + RDIAG_NOFF
};

/* One batch of a layer: gq [B,H,lq,Kc], gk [B,H,lk,Kc] host, of which the first nq query
 * and nk key rows of each (batch, head) count; qvalid [B,nq], kvalid [B,nk] (0: padding,
 * skipped; NULL: every row); jpos [B,nq] the recall key row of each query row (-1: none;
 * NULL: no pairs); causal: query i reads the keys t <= i (nq = nk), else every key. */
typedef struct RdiagBatch {
    const real *gq, *gk;
    int B, H, Kc, nq, nk, lq, lk;
    const uint8_t *qvalid, *kvalid;
    const int *jpos;
    int causal;
    double eps;
} RdiagBatch;

/* jpos [B,nq]: for query row i of sequence b with target tgt[b nq + i] >= 0, the first key
 * row j (j < i when causal, else j < nk) with tok[b tstride + j] = that target and kvalid,
 * else -1; qvalid as RdiagBatch's */
void rdiag_recall_positions(const int32_t *tok, int tstride, const int32_t *tgt, const uint8_t *qvalid,
                            const uint8_t *kvalid, int B, int nq, int nk, int causal, int *jpos);
/* Add one batch: acc [RD_N]; cq, ck [H,Kc] the argmax counts of the query and key rows. */
void rdiag_accumulate(const RdiagBatch *in, double *acc, double *cq, double *ck);

/* The layer's figures from the accumulators (a figure without a count is NAN). */
typedef struct RdiagFigures {
    double rows, q_used, k_used, q_entropy, k_entropy, pairs, match_mass, same_slot, lookup_weight, lookup_uniform,
        slot_share, key_slots_distinct;
    double match_by_offset[RDIAG_NOFF], lookup_by_offset[RDIAG_NOFF], share_by_offset[RDIAG_NOFF],
        distinct_by_offset[RDIAG_NOFF];
} RdiagFigures;
RdiagFigures rdiag_finish(const double *acc, const double *cq, const double *ck, int H, int Kc);

/* The gradient figures: gc [Hp,Kc,d] the centres' gradient, live [Hp,Kc] (1 = live);
 * out: grad_centre_live, grad_centre_dead (NAN without such a component), live (mean over
 * the Hp routing heads). */
void rdiag_centre_grads(const real *gc, const uint8_t *live, int Hp, int Kc, int d, double *g_live, double *g_dead,
                        double *n_live);

/* One diagnosis of every GMA layer of m after a training step's backward (before the
 * update): rows to mf (NULL: none; every rank must call it when there are several).
 * Returns the rows. */
int routing_diag(Model *m, long step, FILE *mf);
#endif
