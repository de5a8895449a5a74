/* health.c: routing-health monitoring, alerts and collapse repair (see health.h). */
#include "train/health.h"

#include "train/dist.h"
#include "train/run_log.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void health_init(HealthMon *h, const Model *m) {
    memset(h, 0, sizeof *h);
    h->L = m->L;
    h->H = m->H;
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        if (mx->vt->health) h->Kc = GMA_MAX(h->Kc, mx->vt->health->n_components(mx));
    }
    h->dead_run = xcalloc((size_t)h->L * h->H * GMA_MAX(h->Kc, 1), sizeof(int));
    h->norm0 = xcalloc((size_t)h->L * h->H, sizeof(double));
    for (int i = 0; i < h->L * h->H; i++) h->norm0[i] = -1;
}

void health_free(HealthMon *h) {
    free(h->dead_run);
    free(h->norm0);
    memset(h, 0, sizeof *h);
}

/* the context the routing statistics of the last forward are read in */
static MixerCtx stats_ctx(const Model *m) {
    return (MixerCtx){.B = m->B, .N = m->N, .causal = m->causal, .keymask = m->keymask, .gather = m->gather,
                      .gather_ctx = m->gather_ctx};
}

void health_baseline(HealthMon *h, Model *m) {
    h->have_norm0 = 1;
    int Kc = GMA_MAX(h->Kc, 1);
    double *ent = xcalloc(h->H, sizeof(double)), *cnt = xcalloc((size_t)h->H * Kc, sizeof(double));
    for (int l = 0; l < m->L; l++) {
        Mixer *mx = m->blocks[l].mixer;
        if (!mx->vt->health || !mx->vt->health->has_memory(mx)) continue;
        MixerCtx c = stats_ctx(m);
        mx->vt->health->route_stats(mx, &c, m->params, m->blocks[l].act, ent, cnt, h->norm0 + (size_t)l * h->H);
    }
    free(ent);
    free(cnt);
}

static void emit(FILE *mf, cJSON *row) { run_metrics_row(mf, row); }

static cJSON *alert_row(long step, int l, int h, const char *kind, double value, double threshold, const char *action) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)step);
    cJSON_AddStringToObject(o, "event", "collapse_alert");
    cJSON_AddNumberToObject(o, "layer", l);
    cJSON_AddNumberToObject(o, "head", h);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddNumberToObject(o, "value", value);
    cJSON_AddNumberToObject(o, "threshold", threshold);
    cJSON_AddStringToObject(o, "action", action);
    return o;
}

int health_check(HealthMon *hm, Model *m, long step, FILE *mf, int quiet, uint64_t seed) {
    int stop = 0;
    /* the screen gets one line per check (the heads of each alert counted); the rows of
     * metrics.jsonl keep every head's figures */
    int heads = 0, n_ent = 0, n_dead = 0, n_comp = 0, n_seeded = 0, n_mem = 0;
    int H = m->H, Kmax = GMA_MAX(hm->Kc, 1);
    double *ent = xcalloc(H, sizeof(double)), *cnt = xcalloc((size_t)H * Kmax, sizeof(double));
    double *norm = xcalloc(H, sizeof(double));
    int *dead = xcalloc(Kmax, sizeof(int));
    MixerCtx c = stats_ctx(m);
    for (int l = 0; l < m->L; l++) {
        Mixer *mx = m->blocks[l].mixer;
        const MixerHealth *hh = mx->vt->health;
        if (!hh) continue;
        MixerMonitor mon, *g = &mon; /* the settings, as the mixer declares them */
        hh->monitor(mx, &mon);
        int reinit = mon.reinit, want_stop = mon.stop;
        int Kc = hh->n_components(mx), mem = hh->has_memory(mx);
        double rows = hh->route_stats(mx, &c, m->params, m->blocks[l].act, ent, cnt, norm);
        if (rows < 0) continue; /* no responsibilities in the last forward (auto on its sdpa path) */
        if (dist_size() > 1) { /* over the global batch: entropy sums, counts and rows of all ranks */
            for (int h = 0; h < H; h++) ent[h] *= rows;
            dist_sum_double(ent, H);
            dist_sum_double(cnt, (size_t)H * Kc);
            dist_sum_double(&rows, 1);
            for (int h = 0; h < H; h++) ent[h] = rows > 0 ? ent[h] / rows : 0;
        }
        for (int h = 0; h < H; h++) {
            const double *ck = cnt + (size_t)h * Kc;
            double umin = 1, umax = 0;
            int active = 0;
            int *run = hm->dead_run + ((size_t)l * H + h) * Kmax;
            int ndead = 0;
            for (int k = 0; k < Kc; k++) {
                double u = rows > 0 ? ck[k] / rows : 0;
                umin = fmin(umin, u);
                umax = fmax(umax, u);
                active += ck[k] > 0;
                if (u < g->util_min_share / Kc) run[k]++;
                else run[k] = 0;
                dead[k] = run[k] >= g->patience;
                ndead += dead[k];
            }
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "step", (double)step);
            cJSON_AddStringToObject(o, "event", "routing");
            cJSON_AddNumberToObject(o, "layer", l);
            cJSON_AddNumberToObject(o, "head", h);
            cJSON_AddNumberToObject(o, "entropy", ent[h]);
            cJSON_AddNumberToObject(o, "util_min", umin);
            cJSON_AddNumberToObject(o, "util_max", umax);
            cJSON_AddNumberToObject(o, "active", active);
            if (mem) cJSON_AddNumberToObject(o, "mem_norm", norm[h]);
            else cJSON_AddNullToObject(o, "mem_norm");
            emit(mf, o);
            heads++;
            const char *warn_action = want_stop ? "stop" : "warn";
            if (ent[h] < g->entropy_min) {
                emit(mf, alert_row(step, l, h, "entropy", ent[h], g->entropy_min, warn_action));
                n_ent++;
                hm->alerts++;
                stop |= want_stop;
            }
            if (ndead > 0) {
                const char *action = reinit ? "reinit" : warn_action;
                cJSON *a = alert_row(step, l, h, "dead_components", ndead, g->util_min_share / Kc, action);
                cJSON_AddNumberToObject(a, "active", active);
                int done = 0;
                if (reinit) {
                    Rng rng;
                    rng_seed2(&rng, seed, 0x7265696e6974ULL ^ ((uint64_t)step << 16) ^ ((uint64_t)l << 8) ^ (uint64_t)h);
                    done = hh->reinit(mx, &c, m->params, m->m, m->v, m->blocks[l].act, h, dead, &rng);
                    for (int k = 0; k < Kc; k++)
                        if (dead[k]) run[k] = 0;
                    cJSON_AddNumberToObject(a, "reseeded", done);
                }
                emit(mf, a);
                n_dead++;
                n_comp += ndead;
                n_seeded += done;
                hm->alerts++;
                stop |= want_stop;
            }
            double n0 = hm->norm0[(size_t)l * H + h];
            if (mem && n0 > 0 && norm[h] > g->norm_growth_max * n0) {
                emit(mf, alert_row(step, l, h, "memory_norm", norm[h], g->norm_growth_max * n0, warn_action));
                n_mem++;
                hm->alerts++;
                stop |= want_stop;
            }
        }
    }
    free(ent);
    free(cnt);
    free(norm);
    free(dead);
    if (!quiet && (n_ent || n_dead || n_mem)) {
        char what[512] = "";
        int n = 0;
        if (n_ent) n += snprintf(what + n, sizeof what - n, "low entropy in %d", n_ent);
        if (n_dead) {
            n += snprintf(what + n, sizeof what - n, "%s%d unused components in %d", n ? "; " : "", n_comp, n_dead);
            if (n_seeded) n += snprintf(what + n, sizeof what - n, " (%d re-seeded)", n_seeded);
        }
        if (n_mem) snprintf(what + n, sizeof what - n, "%sgrown memory norm in %d", n ? "; " : "", n_mem);
        fprintf(stderr, "%srouting alert step %ld: %s of %d heads (per head: metrics.jsonl, docs/routing.md)\n", isatty(2) ? "\n" : "",
                step, what, heads);
    }
    return stop;
}
