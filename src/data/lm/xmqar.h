/* xmqar.h: cross-sequence multi-query associative recall (data.source "xmqar";
 * docs/cross.md): MQAR (mqar.h) split in two sequences, for models with cross-attention
 * (cross.mixer, docs/model.md §3.8). A window of T = train.seq_len tokens holds the
 * context sequence in its first M = data.xmqar_ctx positions and the query sequence in
 * the other N = T - M.
 *
 * Vocabulary V (even): P = data.xmqar_pairs distinct keys from [1, V/2) and P distinct
 * values from [V/2, V), written as "k v" pairs in context positions 0..2P-1; context
 * positions 2P..M-1 hold 0. Query position M + j holds the key of pair pi_j, where pi runs
 * through a fresh random permutation of the P pairs every P queries; its target is that
 * pair's value. Every query position is scored, no context position is (target -1). So a
 * query can be answered only from the other sequence: a decoder reads the context through
 * cross-attention (cross.ctx_len = M), and a plain decoder over the whole window (cross.mixer
 * "none") through its causal self-mixer. Example i of split s comes from (seed, s, i) alone. */
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
