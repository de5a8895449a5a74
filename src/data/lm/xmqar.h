/* xmqar.h: cross-sequence multi-query associative recall (data.source "xmqar"): MQAR
 * (mqar.h) split in two sequences for models with cross-attention (cross.mixer,
 * docs/model.md §3.8). A window of T = train.seq_len tokens holds the context sequence in
 * its first M = data.xmqar_ctx positions and the query sequence in the other N = T - M. The
 * layout, targets and what a plain decoder sees: docs/cross.md, "The task". Query position
 * M + j holds the key of pair pi_j, pi a fresh random permutation of the P pairs every P
 * queries; no context position is scored. Example i of split s comes from (seed, s, i)
 * alone. */
#ifndef GMA_XMQAR_H
#define GMA_XMQAR_H
#include <stdint.h>

#include "core/config.h"

/* The keys data.xmqar_* (a stored section, its keys under data.). */
typedef struct XmqarCfg {
    int vocab, pairs, ctx, valid, test;
} XmqarCfg;
extern const CfgSection xmqar_cfg_section;
const XmqarCfg *xmqar_cfg(const Config *c);

typedef struct XmqarTask {
    int vocab, pairs, ctx, T;
    uint64_t seed;
} XmqarTask;

/* The task of the keys x and the run's seed for windows of T tokens: 0, or -1 with an
 * error naming the key. */
int xmqar_init(XmqarTask *t, const XmqarCfg *x, uint64_t seed, int T);
/* Example `index` of `split` into tok[T], tgt[T]. */
void xmqar_example(const XmqarTask *t, int split, uint64_t index, int32_t *tok, int32_t *tgt);
#endif
