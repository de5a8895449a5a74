/* routing_diag.c: the recall diagnosis of GMA's routing (see routing_diag.h). */
#include "train/routing_diag.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_nums.h"
#include "model/model_cross.h"
#include "nn/mixers/linear_core.h"
#include "train/dist.h"
#include "train/metrics_log.h"

static int argmax_of(const real *r, int K) {
    int best = 0;
    for (int k = 1; k < K; k++)
        if (r[k] > r[best]) best = k;
    return best;
}

static double entropy_of(const real *r, int K) {
    double e = 0;
    for (int k = 0; k < K; k++)
        if (r[k] > 0) e -= r[k] * log((double)r[k]);
    return e;
}

void rdiag_recall_positions(const int32_t *tok, int tstride, const int32_t *tgt, const uint8_t *qvalid,
                            const uint8_t *kvalid, int B, int nq, int nk, int causal, int *jpos) {
    for (int b = 0; b < B; b++)
        for (int i = 0; i < nq; i++) {
            int32_t want = tgt[(size_t)b * nq + i];
            int *out = jpos + (size_t)b * nq + i, end = causal ? GMA_MIN(i, nk) : nk;
            *out = -1;
            if (want < 0 || (qvalid && !qvalid[(size_t)b * nq + i])) continue;
            for (int j = 0; j < end && *out < 0; j++)
                if (tok[(size_t)b * tstride + j] == want && (!kvalid || kvalid[(size_t)b * nk + j])) *out = j;
        }
}

static int valid(const uint8_t *mask, int n, int b, int i) { return !mask || mask[(size_t)b * n + i]; }

/* z += the key rows t0 <= t < t1 of one (batch, head); returns how many were valid */
static double add_keys(double *z, const real *K, int Kc, const uint8_t *kvalid, int nk, int b, int t0, int t1) {
    double n = 0;
    for (int t = t0; t < t1; t++)
        if (valid(kvalid, nk, b, t)) {
            for (int c = 0; c < Kc; c++) z[c] += K[(size_t)t * Kc + c];
            n++;
        }
    return n;
}

void rdiag_accumulate(const RdiagBatch *in, double *acc, double *cq, double *ck) {
    int B = in->B, H = in->H, Kc = in->Kc, nq = in->nq, nk = in->nk;
    double *z = xmalloc(sizeof(double) * Kc);
    int *slot = xmalloc(sizeof(int) * (nk > 0 ? nk : 1));
    uint8_t *markj = xmalloc((size_t)nk + 1), *markc = xmalloc((size_t)Kc + 1);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const real *Q = in->gq + ((size_t)b * H + h) * in->lq * Kc, *K = in->gk + ((size_t)b * H + h) * in->lk * Kc;
            for (int t = 0; t < nk; t++) { /* the key rows: entropy, argmax */
                if (!valid(in->kvalid, nk, b, t)) continue;
                const real *kt = K + (size_t)t * Kc;
                slot[t] = argmax_of(kt, Kc);
                acc[RD_KROWS] += 1;
                acc[RD_KENT] += entropy_of(kt, Kc);
                ck[(size_t)h * Kc + slot[t]] += 1;
            }
            memset(z, 0, sizeof(double) * Kc);
            double nkeys = in->causal ? 0 : add_keys(z, K, Kc, in->kvalid, nk, b, 0, nk);
            const int *jp = in->jpos ? in->jpos + (size_t)b * nq : NULL;
            for (int i = 0; i < nq; i++) {
                if (in->causal && i < nk) nkeys += add_keys(z, K, Kc, in->kvalid, nk, b, i, i + 1);
                if (!valid(in->qvalid, nq, b, i)) continue;
                const real *qi = Q + (size_t)i * Kc;
                int qa = argmax_of(qi, Kc);
                acc[RD_QROWS] += 1;
                acc[RD_QENT] += entropy_of(qi, Kc);
                cq[(size_t)h * Kc + qa] += 1;
                int j = jp ? jp[i] : -1;
                if (j < 0) continue;
                const real *kj = K + (size_t)j * Kc;
                int cs = slot[j];
                double dot = 0, den = 0;
                for (int c = 0; c < Kc; c++) dot += (double)qi[c] * kj[c], den += qi[c] * z[c];
                acc[RD_PAIRS] += 1;
                acc[RD_MATCH] += qi[cs];
                acc[RD_SAME] += qa == cs;
                acc[RD_LOOK] += dot / (den + in->eps);
                acc[RD_UNIF] += nkeys > 0 ? 1 / nkeys : 0;
                acc[RD_SHARE] += z[cs] > 0 ? kj[cs] / z[cs] : 0;
                for (int o = 0; o < RDIAG_NOFF; o++) { /* the rows around j that i reads */
                    int t = j + RDIAG_OFF0 + o;
                    if (t < 0 || t >= nk || (in->causal && t > i) || !valid(in->kvalid, nk, b, t)) continue;
                    const real *kt = K + (size_t)t * Kc;
                    double dt = 0;
                    for (int c = 0; c < Kc; c++) dt += (double)qi[c] * kt[c];
                    acc[RD_OFF_CNT + o] += 1;
                    acc[RD_OFF_MATCH + o] += qi[slot[t]];
                    acc[RD_OFF_LOOK + o] += dt / (den + in->eps);
                    acc[RD_OFF_SHARE + o] += z[slot[t]] > 0 ? kt[slot[t]] / z[slot[t]] : 0;
                }
            }
            if (!jp) continue;
            /* distinct slots among the rows j + o of the distinct recall positions j */
            for (int o = 0; o < RDIAG_NOFF; o++) {
                int n = 0, distinct = 0;
                memset(markj, 0, (size_t)nk);
                memset(markc, 0, (size_t)Kc);
                for (int i = 0; i < nq; i++) {
                    int j = jp[i], t = j + RDIAG_OFF0 + o;
                    if (j < 0 || markj[j] || t < 0 || t >= nk || !valid(in->kvalid, nk, b, t)) continue;
                    markj[j] = 1;
                    n++;
                    if (!markc[slot[t]]) markc[slot[t]] = 1, distinct++;
                }
                if (n >= 2) acc[RD_OFF_SEQS + o] += 1, acc[RD_OFF_DIST + o] += (double)distinct / n;
            }
        }
    free(z);
    free(slot);
    free(markj);
    free(markc);
}

static double ratio(double a, double n) { return n > 0 ? a / n : NAN; }

RdiagFigures rdiag_finish(const double *acc, const double *cq, const double *ck, int H, int Kc) {
    RdiagFigures f;
    double uq = 0, uk = 0, np = acc[RD_PAIRS];
    for (int i = 0; i < H * Kc; i++) uq += cq[i] > 0, uk += ck[i] > 0;
    f.rows = H > 0 ? acc[RD_QROWS] / H : 0;
    f.q_used = H > 0 ? uq / H : 0;
    f.k_used = H > 0 ? uk / H : 0;
    f.q_entropy = ratio(acc[RD_QENT], acc[RD_QROWS]);
    f.k_entropy = ratio(acc[RD_KENT], acc[RD_KROWS]);
    f.pairs = H > 0 ? np / H : 0;
    f.match_mass = ratio(acc[RD_MATCH], np);
    f.same_slot = ratio(acc[RD_SAME], np);
    f.lookup_weight = ratio(acc[RD_LOOK], np);
    f.lookup_uniform = ratio(acc[RD_UNIF], np);
    f.slot_share = ratio(acc[RD_SHARE], np);
    for (int o = 0; o < RDIAG_NOFF; o++) {
        f.match_by_offset[o] = ratio(acc[RD_OFF_MATCH + o], acc[RD_OFF_CNT + o]);
        f.lookup_by_offset[o] = ratio(acc[RD_OFF_LOOK + o], acc[RD_OFF_CNT + o]);
        f.share_by_offset[o] = ratio(acc[RD_OFF_SHARE + o], acc[RD_OFF_CNT + o]);
        f.distinct_by_offset[o] = ratio(acc[RD_OFF_DIST + o], acc[RD_OFF_SEQS + o]);
    }
    f.key_slots_distinct = f.distinct_by_offset[-RDIAG_OFF0];
    return f;
}

void rdiag_centre_grads(const real *gc, const uint8_t *live, int Hp, int Kc, int d, double *g_live, double *g_dead,
                        double *n_live) {
    double sl = 0, sd = 0, nl = 0, nd = 0;
    for (int k = 0; k < Hp * Kc; k++) {
        double s = 0;
        for (int e = 0; e < d; e++) s += (double)gc[(size_t)k * d + e] * gc[(size_t)k * d + e];
        if (live[k]) sl += sqrt(s), nl++;
        else sd += sqrt(s), nd++;
    }
    *g_live = ratio(sl, nl);
    *g_dead = ratio(sd, nd);
    *n_live = Hp > 0 ? nl / Hp : 0;
}

/* ---------------- the model ---------------- */

static void add_list(cJSON *o, const char *k, const double *v, int n) {
    cJSON *a = cJSON_AddArrayToObject(o, k);
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, isfinite(v[i]) ? cJSON_CreateNumber(v[i]) : cJSON_CreateNull());
}

/* the Frobenius norm of tensor's gradient (tensor < 0: NAN) */
static double grad_norm_of(const Model *m, int tensor) {
    if (tensor < 0) return NAN;
    const ParamInfo *p = &m->pt.t[tensor];
    return sqrt(g_ops->sumsq(m->grads + p->offset, p->numel));
}

static void *host_copy(const void *dev, size_t bytes) {
    void *h = xmalloc(bytes + 1);
    g_ops->to_host(h, dev, bytes);
    return h;
}

/* what one layer's row is made of: the batch (host rows), its routing tensors */
typedef struct DiagLayer {
    const char *part;
    int layer, Hp, d;
    int centre, var, bias; /* indices into m->pt (-1: none) */
} DiagLayer;

/* the row of one layer to mf */
static void diag_row(Model *m, const DiagLayer *dl, const RdiagBatch *in, long step, FILE *mf) {
    int H = in->H, Kc = in->Kc, Hp = dl->Hp;
    double acc[RD_N] = {0}, *cq = xcalloc((size_t)H * Kc, sizeof(double)), *ck = xcalloc((size_t)H * Kc, sizeof(double));
    rdiag_accumulate(in, acc, cq, ck);
    if (dist_size() > 1) {
        dist_sum_double(acc, RD_N);
        dist_sum_double(cq, (size_t)H * Kc);
        dist_sum_double(ck, (size_t)H * Kc);
    }
    RdiagFigures f = rdiag_finish(acc, cq, ck, H, Kc);
    /* live: an argmax of some query or key row of a head the component serves */
    uint8_t *live = xcalloc((size_t)Hp * Kc, 1);
    for (int h = 0; h < H; h++)
        for (int k = 0; k < Kc; k++)
            live[(size_t)(Hp == 1 ? 0 : h) * Kc + k] |= cq[(size_t)h * Kc + k] > 0 || ck[(size_t)h * Kc + k] > 0;
    real *gc = host_copy(m->grads + m->pt.t[dl->centre].offset, sizeof(real) * (size_t)Hp * Kc * dl->d);
    double g_live, g_dead, n_live;
    rdiag_centre_grads(gc, live, Hp, Kc, dl->d, &g_live, &g_dead, &n_live);
    free(gc);
    free(live);
    free(cq);
    free(ck);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)step);
    cJSON_AddStringToObject(o, "event", "routing_diag");
    cJSON_AddStringToObject(o, "part", dl->part);
    const JsonNum head[] = {{"layer", dl->layer},          {"n_components", Kc},
                            {"rows", f.rows},              {"q_used", f.q_used},
                            {"k_used", f.k_used},          {"q_entropy", f.q_entropy},
                            {"k_entropy", f.k_entropy},    {"pairs", f.pairs},
                            {"match_mass", f.match_mass},  {"same_slot", f.same_slot},
                            {"lookup_weight", f.lookup_weight}, {"lookup_uniform", f.lookup_uniform},
                            {"slot_share", f.slot_share},  {"key_slots_distinct", f.key_slots_distinct}};
    json_add_nums(o, head, JSON_NUMS_N(head));
    add_list(o, "match_by_offset", f.match_by_offset, RDIAG_NOFF);
    add_list(o, "lookup_by_offset", f.lookup_by_offset, RDIAG_NOFF);
    add_list(o, "share_by_offset", f.share_by_offset, RDIAG_NOFF);
    add_list(o, "distinct_by_offset", f.distinct_by_offset, RDIAG_NOFF);
    const JsonNum grads[] = {{"live", n_live},
                             {"grad_centre", grad_norm_of(m, dl->centre)},
                             {"grad_var", grad_norm_of(m, dl->var)},
                             {"grad_bias", grad_norm_of(m, dl->bias)},
                             {"grad_centre_live", g_live},
                             {"grad_centre_dead", g_dead}};
    json_add_nums(o, grads, JSON_NUMS_N(grads));
    run_metrics_row(mf, o);
}

/* block l's mixer (a self-mixer with health hooks): 1 when it wrote a row */
static int diag_self(Model *m, int l, long step, FILE *mf, const int32_t *tok, const int32_t *tgt, double eps) {
    Mixer *mx = m->blocks[l].mixer;
    MixerComponents mc;
    if (!mx->vt->health) return 0;
    mx->vt->health->components(mx, m->blocks[l].act, m->B, m->N, &mc);
    if (!mc.gq || !mc.gk) return 0; /* auto on its sdpa path */
    int B = m->B, N = m->N, H = mx->H, Kc = mc.Kc;
    size_t gs = sizeof(real) * (size_t)B * H * N * Kc;
    real *gq = host_copy(mc.gq, gs), *gk = host_copy(mc.gk, gs);
    int *jpos = NULL;
    if (tok) {
        jpos = xmalloc(sizeof(int) * (size_t)B * N);
        rdiag_recall_positions(tok, N, tgt, m->keymask, m->keymask, B, N, N, m->causal, jpos);
    }
    RdiagBatch in = {.gq = gq, .gk = gk, .B = B, .H = H, .Kc = Kc, .nq = N, .nk = N, .lq = N, .lk = N,
                     .qvalid = m->keymask, .kvalid = m->keymask, .jpos = jpos, .causal = m->causal, .eps = eps};
    DiagLayer dl = {"self", l, mc.shared ? 1 : H, mx->d, mc.centre, mc.var, mc.bias};
    diag_row(m, &dl, &in, step, mf);
    free(gq), free(gk), free(jpos);
    return 1;
}

/* a GMA cross layer x reading M context rows with N query rows (tok NULL: no pairs) */
static int diag_cross(Model *m, Cross *x, const real *act, const char *part, int l, int N, int M, const int32_t *tok,
                      int tstride, const int32_t *tgt, long step, FILE *mf) {
    if (x->kind != CROSS_GMA) return 0;
    int B = m->x->B, H = x->m.H, Kc = x->Kc, L = GMA_MAX(N, M);
    size_t n = (size_t)B * H * L * Kc;
    real *dq = g_ops->alloc(sizeof(real) * n), *dk = g_ops->alloc(sizeof(real) * n);
    cross_resp(x, m->params, act, B, N, M, dq, dk);
    real *gq = host_copy(dq, sizeof(real) * n), *gk = host_copy(dk, sizeof(real) * n);
    g_ops->free(dq), g_ops->free(dk);
    int *jpos = NULL;
    if (tok) {
        jpos = xmalloc(sizeof(int) * (size_t)B * N);
        rdiag_recall_positions(tok, tstride, tgt, NULL, NULL, B, N, M, x->causal, jpos);
    }
    RdiagBatch in = {.gq = gq, .gk = gk, .B = B, .H = H, .Kc = Kc, .nq = N, .nk = M, .lq = L, .lk = L,
                     .jpos = jpos, .causal = x->causal, .eps = x->eps};
    DiagLayer dl = {part, l, H, x->m.d, -1, -1, -1};
    cross_routing_tensors(x, &dl.centre, &dl.var, &dl.bias);
    diag_row(m, &dl, &in, step, mf);
    free(gq), free(gk), free(jpos);
    return 1;
}

int routing_diag(Model *m, long step, FILE *mf) {
    XModel *x = m->x;
    /* a cross model's device tokens are the whole window [B,T]; its decoder rows' targets x->tq_host */
    size_t nt = x ? (size_t)x->B * x->T : (size_t)m->B * m->N;
    int32_t *tok = host_copy(m->tok, sizeof(int32_t) * nt);
    int32_t *tgt = x ? NULL : host_copy(m->tgt, sizeof(int32_t) * nt);
    double eps = linear_core_cfg(&m->cfg)->eps;
    int rows = 0;
    for (int l = 0; x && l < x->E; l++)
        rows += diag_cross(m, x->enc[l].att, x->enc[l].act, "encoder", l, x->M, x->M, NULL, 0, NULL, step, mf);
    for (int l = 0; l < m->L; l++) {
        rows += diag_self(m, l, step, mf, x ? NULL : tok, tgt, eps);
        if (x) rows += diag_cross(m, x->dec[l].att, x->dec[l].act, "cross", l, m->N, x->M, tok, x->T, x->tq_host, step, mf);
    }
    free(tok);
    free(tgt);
    return rows;
}
