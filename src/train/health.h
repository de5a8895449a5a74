/* health.h: GMA routing health (docs/routing.md, "Monitoring and repair"; docs/model.md §5:
 * the statistics, alerts and their thresholds), over the mixer interface (MixerHealth,
 * MixerComponents in nn/mixers/mixer.h): k-means seeding of the components, the routing
 * statistics, re-seeding of dead components, and the monitor, every gma.monitor_every steps
 * from the last training forward's query responsibilities. gma.on_collapse: warn (print and
 * log), reinit (routing_reinit; entropy and memory alerts are only warned about) or stop
 * (the caller checkpoints and exits). The settings come from each layer's mixer
 * (MixerComponents.mon, model_monitor), never from Config. */
#ifndef GMA_HEALTH_H
#define GMA_HEALTH_H
#include <stdio.h>

#include "model/model.h"

/* ---- one layer's mixer (a mixer without health hooks: nothing to do) ---- */
/* The statistics of the last forward's query responsibilities: entropy[H] (mean nats),
 * counts[H*Kc] (argmax counts), mem_norm[H] (|M_h|, only with a memory; may be NULL),
 * host arrays. Returns the rows counted per head, or -1 when that forward kept none. */
double routing_stats(const Mixer *mx, const MixerCtx *c, const real *params, const real *act, double *entropy,
                     double *counts, double *mem_norm);
/* k-means++ and Lloyd on the last forward's query rows (all ranks' through c->gather):
 * sets the centres (gma.init "kmeans") and/or the memory. Returns 0, -1 on an error. */
int routing_kmeans(Mixer *mx, const MixerCtx *c, real *params, const real *act, Rng *rng);
/* Re-seed the components k of head `head` with dead[k] != 0 from the last forward's query
 * rows (key rows with the mixer's reseed_keys, gma.reseed_rows "keys") (k-means++ style distance sampling away from the live components' centroids) and
 * zero their optimiser moments mom1/mom2 (same offsets as params; NULL: none). Returns the
 * number re-seeded, or -1 (gma_error) when the gathered rows and their argmax disagree. */
int routing_reinit(Mixer *mx, const MixerCtx *c, real *params, real *mom1, real *mom2, const real *act, int head,
                   const int *dead, Rng *rng);

/* ---- the model ---- */
/* Number of layers with health hooks; out gets the monitor's settings of the first such
 * layer (all zero when there is none: every = 0, monitoring off). */
int model_monitor(const Model *m, MixerMonitor *out);
/* 1 when some layer wants k-means initialisation after the first training forward (with
 * m->kmeans_only: some layer it names; those layers' centres are then set from the
 * centroids whatever gma.init says). */
int model_wants_kmeans(const Model *m);
/* k-means initialisation layer by layer on the batch tok [B,N]: forward, initialise layer l
 * from its query rows, forward again for layer l+1... Deterministic under rng. */
int model_kmeans_init(Model *m, const int32_t *tok, const int32_t *tgt, int B, int N, const uint8_t *keymask,
                      Rng *rng);
/* The same for a classifier batch (tok, labels as model_forward of a classifier; tok != 0 is real). */
int model_kmeans_init_cls(Model *m, const int32_t *tok, const int32_t *labels, int B, int N, Rng *rng);

/* ---- the monitor ---- */
typedef struct HealthMon {
    int L, H, Kc;        /* Kc: the largest over layers */
    int *dead_run;       /* [L,H,Kc] consecutive checks below the share */
    double *norm0;       /* [L,H] memory norm baseline, < 0 = not set */
    int have_norm0;
    long alerts;
} HealthMon;

void health_init(HealthMon *h, const Model *m);
void health_free(HealthMon *h);
/* Record the memory-norm baseline from the current parameters. */
void health_baseline(HealthMon *h, Model *m);
/* One check after step `step`; rows to mf; alerts to stderr (unless quiet). Returns 1 when
 * on_collapse is "stop" and an alert fired, -1 when a re-seed failed (gma_error), else 0. */
int health_check(HealthMon *h, Model *m, long step, FILE *mf, int quiet, uint64_t seed);
/* The Dirichlet prior's drops (gma.dirichlet_*, docs/model.md §4.1), after step `step`: in
 * each layer whose monitor settings have drop_every > 0 (Gaussian routing), when step is a
 * multiple of it, every live component of a routing head whose mixture weight
 * softmax(prior_logits)_k is below drop_below, except the head's largest, gets the logit
 * MIXER_DROPPED_LOGIT and zero optimiser moments. Then (and at the last step, `last`, with
 * no drop) one row per such layer to mf: {"event": "components", "layer", "n_components",
 * "k_active" (live components, the mean over routing heads), "k_active_heads"}. The same
 * on every rank (it reads only the parameters). Returns the rows written. */
int health_drop(Model *m, long step, FILE *mf, int last);
/* The load [H,Kc] of layer l's components in its last forward: each head's mean query
 * responsibility over the non-padded rows of every rank (a row of it sums to 1). 1, or 0
 * when the layer has no components or that forward kept none (auto on its sdpa path, a
 * model rebuilt since). */
int health_layer_load(Model *m, int l, double *load);
#endif
