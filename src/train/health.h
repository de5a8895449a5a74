/* health.h: routing-health monitoring during training (docs/model.md §5). Every
 * gma.monitor_every steps, per GMA layer and head, from the last training forward's query
 * responsibilities: mean entropy (nats), utilisation u_k (share of rows whose argmax is k:
 * min, max, active = #{k : u_k > 0}) and, for the EMA variant, the memory norm |M_h|.
 * Alerts: entropy < gma.entropy_min; a component with u_k < gma.util_min_share / Kc for
 * gma.patience checks in a row; |M_h| > gma.norm_growth_max x its value at the start of
 * this process's training (after k-means, or at resume). gma.on_collapse: warn (print and
 * log), reinit (re-seed the dead components, see MixerHealth.reinit; entropy and memory
 * alerts are only warned about) or stop (the caller checkpoints and exits). The settings
 * come from each layer's mixer (MixerHealth.monitor, model_monitor), never from Config. */
#ifndef GMA_HEALTH_H
#define GMA_HEALTH_H
#include <stdio.h>

#include "model/model.h"

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
 * on_collapse is "stop" and an alert fired, else 0. */
int health_check(HealthMon *h, Model *m, long step, FILE *mf, int quiet, uint64_t seed);
#endif
