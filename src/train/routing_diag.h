/* routing_diag.h: the recall diagnosis of GMA's routing (gma.diag_every). Every
 * gma.diag_every optimiser steps, from the last training micro-batch and the step's summed
 * gradients (before clipping and the update), one "routing_diag" row per GMA layer in
 * metrics.jsonl. The row's fields and their definitions: docs/routing.md, "Recall
 * diagnosis"; what they show: docs/routing.md, "Why GMA's routing stalls on recall". */
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
