/* kadapt.h: structural adaptation of the number of GMA components K per layer
 * (gma.adapt_every, gma.k_min, gma.k_max, gma.merge_dist, gma.prune_below, gma.split_above,
 * gma.split_shift): the load, the prune, merge and split rules, K per layer and the rebuild
 * are docs/model.md §4.2. K is the layer's tensor size, the same for every head; a head with
 * fewer live components fills the rest with dropped slots (logit MIXER_DROPPED_LOGIT). A
 * changed layer rebuilds the model from its config with the new gma.n_components list,
 * which the model's config and every later checkpoint carry, so a resume rebuilds the
 * shapes; the AdamW moments move with their rows (a copy keeps them, a merge takes their
 * mixture-weighted mean, a prune drops them). */
#ifndef GMA_KADAPT_H
#define GMA_KADAPT_H
#include <stdio.h>

#include "model/model.h"

/* What one adaptation did, summed over layers and heads. */
typedef struct KadaptTally {
    int layers_changed, pruned, merged, split;
} KadaptTally;

/* The adaptation with given loads: load[l] (l < m->L) holds layer l's [H, Kc] loads, each
 * component's mean responsibility (each head's row sums to 1), or is NULL for a layer
 * left as it is. One row per adapted layer to mf (NULL: none): {"step", "event": "adapt",
 * "layer", "n_components" (K after), "k_before", "k_live" (live components, the mean over
 * routing heads), "pruned", "merged", "split"}. Returns 1 when the model was rebuilt, 0
 * when nothing changed, -1 on an error (gma_error; the model is then as it was). */
int kadapt_apply(Model *m, double *const *load, long step, FILE *mf, KadaptTally *out);
/* The adaptation after training step `step` from the last forward's loads
 * (health_layer_load: summed over the ranks, so every rank does the same), when step is a multiple of
 * gma.adapt_every. Returns as kadapt_apply. */
int kadapt_step(Model *m, long step, FILE *mf, KadaptTally *out);
/* Set dst's gma.n_components to src's list (one entry per GMA layer): after a rebuild,
 * and on resume with --config, where the checkpoint's shapes stand. 0 or -1 (gma_error). */
int kadapt_sync_cfg(Config *dst, const Config *src);

#endif
