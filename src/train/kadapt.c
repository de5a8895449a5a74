/* kadapt.c: structural adaptation of K per layer (see kadapt.h, docs/model.md §4.2).
 *
 * Each routing head's components are worked on as host rows of W reals: mu, var_raw and
 * their two AdamW moments, the prior logit and its moments, then the EMA memory rows of
 * the heads the routing head serves (none without the memory). Prunes remove rows, merges
 * replace two rows by one, splits insert a row; the rows then become the rebuilt model's
 * tensors. */
#include "train/kadapt.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "train/health.h"
#include "train/metrics_log.h"

/* a row's fields: mu [d], var_raw [d], their moments m, v [d] each, the logit and its
 * moments, the memory rows [nh, d] */
typedef struct Layout { int d, nh, W; } Layout;
enum { F_MU, F_VR, F_MMU, F_VMU, F_MVR, F_VVR };
#define AT(L, f) ((size_t)(f) * (L)->d)
#define LG(L) ((size_t)6 * (L)->d)
#define MEM(L) (LG(L) + 3)

/* one routing head's components */
typedef struct Head {
    real *rows;   /* [cap, W] */
    double *load; /* [cap] */
    int n, cap;
    int pruned, merged, split;
} Head;

/* one layer being adapted */
typedef struct Ad {
    int l, K, Knew, Hp;
    MixerComponents mc;
    double floor; /* the variance floor: sigma2 = softplus(var_raw) + floor */
    Layout lay;
    Head *hd;     /* [Hp] */
} Ad;

static double softplus(double x) { return x > 20 ? x : log1p(exp(x)); }
static double softplus_inv(double y) { return y > 20 ? y : log(expm1(y)); }
static int dropped(const Layout *L, const real *r) { return !(r[LG(L)] > MIXER_DROPPED_LOGIT / 2); }
static real *row(const Ad *a, const Head *h, int k) { return h->rows + (size_t)k * a->lay.W; }

static void head_remove(const Ad *a, Head *h, int k) {
    size_t W = a->lay.W;
    memmove(h->rows + k * W, h->rows + (k + 1) * W, sizeof(real) * W * (h->n - k - 1));
    memmove(h->load + k, h->load + k + 1, sizeof(double) * (h->n - k - 1));
    h->n--;
}

/* room for one more row after k; returns the new row (a copy of row k) */
static real *head_insert_after(const Ad *a, Head *h, int k) {
    size_t W = a->lay.W;
    if (h->n == h->cap) {
        h->cap *= 2;
        h->rows = xrealloc(h->rows, sizeof(real) * W * h->cap);
        h->load = xrealloc(h->load, sizeof(double) * h->cap);
    }
    memmove(h->rows + (k + 2) * W, h->rows + (k + 1) * W, sizeof(real) * W * (h->n - k - 1));
    memmove(h->load + k + 2, h->load + k + 1, sizeof(double) * (h->n - k - 1));
    memcpy(h->rows + (k + 1) * W, h->rows + k * W, sizeof(real) * W);
    h->load[k + 1] = h->load[k];
    h->n++;
    return h->rows + (k + 1) * W;
}

/* The largest per-dimension term of the Bhattacharyya distance between two diagonal
 * Gaussians (docs/model.md §4.2): a split moves its copies apart along one axis, so a
 * mean over the d axes would shrink their distance with d and merge a fresh split
 * straight back; the largest term is split_shift^2 / 2 for a fresh split at any d. */
static double distance(const Ad *a, const real *x, const real *y) {
    const Layout *L = &a->lay;
    double s = 0;
    for (int e = 0; e < L->d; e++) {
        double sx = softplus(x[AT(L, F_VR) + e]) + a->floor, sy = softplus(y[AT(L, F_VR) + e]) + a->floor;
        double sm = 0.5 * (sx + sy), dm = (double)x[e] - y[e];
        s = fmax(s, dm * dm / (8 * sm) + 0.5 * log(sm / sqrt(sx * sy)));
    }
    return s;
}

/* row x <- the merge of x and y: mixture weights added, mean and variance moment-matched,
 * the moments and the memory rows the weight-averaged ones */
static void merge_into(const Ad *a, real *x, const real *y) {
    const Layout *L = &a->lay;
    double lx = x[LG(L)], ly = y[LG(L)], mx = fmax(lx, ly);
    double px = exp(lx - mx), py = exp(ly - mx), wx = px / (px + py), wy = 1 - wx;
    for (int e = 0; e < L->d; e++) {
        double sx = softplus(x[AT(L, F_VR) + e]) + a->floor, sy = softplus(y[AT(L, F_VR) + e]) + a->floor;
        double mu = wx * x[e] + wy * y[e];
        double s2 = wx * (sx + (double)x[e] * x[e]) + wy * (sy + (double)y[e] * y[e]) - mu * mu;
        x[e] = (real)mu;
        x[AT(L, F_VR) + e] = (real)softplus_inv(fmax(s2 - a->floor, 1e-6));
    }
    for (int f = F_MMU; f <= F_VVR; f++)
        for (int e = 0; e < L->d; e++) x[AT(L, f) + e] = (real)(wx * x[AT(L, f) + e] + wy * y[AT(L, f) + e]);
    x[LG(L)] = (real)(mx + log(px + py));
    for (int i = 1; i <= 2; i++) x[LG(L) + i] = (real)(wx * x[LG(L) + i] + wy * y[LG(L) + i]);
    for (size_t i = 0; i < (size_t)L->nh * L->d; i++) x[MEM(L) + i] = (real)(wx * x[MEM(L) + i] + wy * y[MEM(L) + i]);
}

/* the closest pair (i < j) of the head's live rows; its distance, or INFINITY */
static double closest(const Ad *a, const Head *h, int *bi, int *bj) {
    double best = INFINITY;
    for (int i = 0; i < h->n; i++)
        for (int j = i + 1; j < h->n; j++) {
            double D = distance(a, row(a, h, i), row(a, h, j));
            if (D < best) best = D, *bi = i, *bj = j;
        }
    return best;
}

/* the live row of least load (-1: none) */
static int least_loaded(const Head *h) {
    int k = -1;
    for (int i = 0; i < h->n; i++)
        if (k < 0 || h->load[i] < h->load[k]) k = i;
    return k;
}

/* row k into two: mu -/+ shift sigma along the widest axis, each with half the weight */
static void split_row(const Ad *a, Head *h, int k, double shift) {
    const Layout *L = &a->lay;
    real *x = row(a, h, k);
    int ew = 0;
    for (int e = 1; e < L->d; e++)
        if (x[AT(L, F_VR) + e] > x[AT(L, F_VR) + ew]) ew = e;
    double sd = sqrt(softplus(x[AT(L, F_VR) + ew]) + a->floor);
    x[LG(L)] = (real)(x[LG(L)] - log(2.0));
    h->load[k] *= 0.5;
    real *y = head_insert_after(a, h, k);
    x = row(a, h, k);
    x[ew] = (real)(x[ew] - shift * sd);
    y[ew] = (real)(y[ew] + shift * sd);
}

/* one routing head: drops out, prunes, merges, splits, then [k_min, k_max] (see kadapt.h) */
static void adapt_head(const Ad *a, Head *h) {
    const MixerMonitor *g = &a->mc.mon;
    const Layout *L = &a->lay;
    for (int k = h->n - 1; k >= 0; k--)
        if (dropped(L, row(a, h, k)) && h->n > 1) head_remove(a, h, k); /* already out: no change of the layer */
    double uni = 1.0 / a->K;
    for (int k; h->n > g->k_min && (k = least_loaded(h)) >= 0 && h->load[k] < g->prune_below * uni;)
        head_remove(a, h, k), h->pruned++;
    for (int i = 0, j = 0; g->merge_dist > 0 && h->n > g->k_min && closest(a, h, &i, &j) < g->merge_dist;) {
        merge_into(a, row(a, h, i), row(a, h, j));
        h->load[i] += h->load[j];
        head_remove(a, h, j);
        h->merged++;
    }
    if (g->split_above > 0) { /* each row splits at most once, the most loaded first */
        int n0 = h->n;
        char *done = xcalloc((size_t)2 * n0 + 1, 1);
        while (h->n < g->k_max) {
            int k = -1;
            for (int i = 0; i < h->n; i++)
                if (!done[i] && h->load[i] > g->split_above * uni && (k < 0 || h->load[i] > h->load[k])) k = i;
            if (k < 0) break;
            memmove(done + k + 2, done + k + 1, (size_t)(h->n - k - 1));
            done[k] = done[k + 1] = 1;
            split_row(a, h, k, g->split_shift);
            h->split++;
        }
        free(done);
    }
    while (h->n > g->k_max) head_remove(a, h, least_loaded(h)), h->pruned++;
}

/* ---- host copies of the layer's tensors ---- */

typedef struct Host { real *p, *m, *v; } Host; /* whole buffers: parameters, moments */

static Host host_of(const Model *m) {
    size_t P = m->pt.total;
    Host h = {xmalloc(sizeof(real) * P + 1), xmalloc(sizeof(real) * P + 1), xmalloc(sizeof(real) * P + 1)};
    g_ops->to_host(h.p, m->params, sizeof(real) * P);
    g_ops->to_host(h.m, m->m, sizeof(real) * P);
    g_ops->to_host(h.v, m->v, sizeof(real) * P);
    return h;
}
static void host_free(Host *h) { free(h->p), free(h->m), free(h->v); }

/* move values between the rows of head hp and the tensors of table pt in buffers x (K
 * components a head); to_rows 1 reads the tensors, 0 writes them */
static void rows_io(const Ad *a, const ParamTable *pt, int c, int vr, int b, int mem, Host *x, int hp, int K, Head *h,
                    int to_rows) {
    const Layout *L = &a->lay;
    int d = L->d;
    for (int k = 0; k < h->n; k++) {
        real *r = row(a, h, k);
        size_t o3 = (size_t)(hp * K + k) * d, o1 = (size_t)hp * K + k;
        real *src[9] = {x->p + pt->t[c].offset + o3, x->p + pt->t[vr].offset + o3, x->m + pt->t[c].offset + o3,
                        x->v + pt->t[c].offset + o3, x->m + pt->t[vr].offset + o3, x->v + pt->t[vr].offset + o3,
                        x->p + pt->t[b].offset + o1, x->m + pt->t[b].offset + o1, x->v + pt->t[b].offset + o1};
        for (int f = 0; f < 6; f++)
            if (to_rows) memcpy(r + AT(L, f), src[f], sizeof(real) * d);
            else memcpy(src[f], r + AT(L, f), sizeof(real) * d);
        for (int i = 0; i < 3; i++)
            if (to_rows) r[LG(L) + i] = *src[6 + i];
            else *src[6 + i] = r[LG(L) + i];
        for (int j = 0; j < L->nh && mem >= 0; j++) {
            int hh = a->mc.shared ? j : hp;
            real *mm = x->p + pt->t[mem].offset + (size_t)(hh * K + k) * d;
            if (to_rows) memcpy(r + MEM(L) + (size_t)j * d, mm, sizeof(real) * d);
            else memcpy(mm, r + MEM(L) + (size_t)j * d, sizeof(real) * d);
        }
    }
}

/* the layer's heads as rows, with their loads from load [H, K] */
static void ad_open(Ad *a, const Model *m, int l, const double *load, Host *x) {
    const Mixer *mx = m->blocks[l].mixer;
    mx->vt->health->components(mx, NULL, 0, 0, &a->mc);
    a->l = l;
    a->K = a->mc.Kc;
    a->Hp = a->mc.shared ? 1 : mx->H;
    a->floor = 1 - softplus(a->mc.var0); /* var0 = softplus^-1(1 - floor) (gma.c) */
    int nh = a->mc.memory >= 0 ? (a->mc.shared ? mx->H : 1) : 0;
    a->lay = (Layout){mx->d, nh, 6 * mx->d + 3 + nh * mx->d};
    a->hd = xcalloc(a->Hp, sizeof(Head));
    for (int hp = 0; hp < a->Hp; hp++) {
        Head *h = &a->hd[hp];
        h->n = a->K;
        h->cap = 2 * a->K + 2;
        h->rows = xcalloc((size_t)h->cap * a->lay.W, sizeof(real));
        h->load = xcalloc(h->cap, sizeof(double));
        rows_io(a, &m->pt, a->mc.centre, a->mc.var, a->mc.bias, a->mc.memory, x, hp, a->K, h, 1);
        int hs = a->mc.shared ? mx->H : 1; /* the heads this routing head serves */
        for (int k = 0; k < a->K; k++) {
            double s = 0;
            for (int j = 0; j < hs; j++) s += load[(size_t)(a->mc.shared ? j : hp) * a->K + k];
            h->load[k] = s / hs;
        }
    }
}

static void ad_close(Ad *a) {
    for (int hp = 0; a->hd && hp < a->Hp; hp++) free(a->hd[hp].rows), free(a->hd[hp].load);
    free(a->hd);
}

/* the layer's K after its heads adapted: the largest count, at least k_min; the heads
 * below it filled with dropped slots */
static int ad_pad(Ad *a) {
    int K = a->mc.mon.k_min, changed = 0;
    for (int hp = 0; hp < a->Hp; hp++) K = GMA_MAX(K, a->hd[hp].n);
    for (int hp = 0; hp < a->Hp; hp++) {
        Head *h = &a->hd[hp];
        changed |= h->pruned || h->merged || h->split;
        while (h->n < K) {
            real *r = head_insert_after(a, h, h->n - 1);
            memset(r, 0, sizeof(real) * a->lay.W);
            for (int e = 0; e < a->lay.d; e++) r[AT(&a->lay, F_VR) + e] = (real)a->mc.var0;
            r[LG(&a->lay)] = (real)MIXER_DROPPED_LOGIT;
            h->load[h->n - 1] = 0;
        }
    }
    a->Knew = K;
    return changed || K != a->K;
}

/* ---- the rebuild ---- */

/* "a,b,..": Kc of every GMA layer of c, with layer l's from knew[l] when > 0 */
static void k_list(const Config *c, const int *knew, char *out, size_t cap) {
    size_t n = 0;
    out[0] = 0;
    for (int l = 0; l < c->model.n_layers; l++) {
        const MixerVT *vt = mixer_find(cfg_layer_mixer(c, l));
        if (!vt || !vt->gma_layer) continue;
        int k = knew && knew[l] > 0 ? knew[l] : gma_layer_kc(c, l);
        n += (size_t)snprintf(out + n, cap > n ? cap - n : 0, "%s%d", n ? "," : "", k);
    }
}

int kadapt_sync_cfg(Config *dst, const Config *src) {
    char list[CFG_MAX_LAYERS * 8];
    k_list(src, NULL, list, sizeof list);
    return list[0] ? gma_set_kc_list(dst, list) : 0;
}

/* the new model nm (built and allocated) takes m's tensors by name; the adapted layers'
 * component tensors from their rows */
static int copy_into(Model *nm, const Model *m, Ad *ads, int nad) {
    Host x = host_of(m), y = host_of(nm);
    int rc = 0;
    for (int i = 0; i < nm->pt.n && rc == 0; i++) {
        const ParamInfo *p = &nm->pt.t[i];
        int j = pt_find(&m->pt, p->name);
        if (j < 0 || (m->pt.t[j].numel != p->numel && !strstr(p->name, ".gma.")))
            rc = gma_errorf("adapting K: tensor %s of the rebuilt model has no counterpart", p->name);
        else if (m->pt.t[j].numel == p->numel) {
            memcpy(y.p + p->offset, x.p + m->pt.t[j].offset, sizeof(real) * p->numel);
            memcpy(y.m + p->offset, x.m + m->pt.t[j].offset, sizeof(real) * p->numel);
            memcpy(y.v + p->offset, x.v + m->pt.t[j].offset, sizeof(real) * p->numel);
        }
        if (j >= 0) nm->pt.t[i].frozen = m->pt.t[j].frozen;
    }
    for (int a = 0; a < nad && rc == 0; a++) {
        Ad *ad = &ads[a];
        const ParamTable *o = &m->pt;
        int c = pt_find(&nm->pt, o->t[ad->mc.centre].name), vr = pt_find(&nm->pt, o->t[ad->mc.var].name);
        int b = pt_find(&nm->pt, o->t[ad->mc.bias].name);
        int mem = ad->mc.memory >= 0 ? pt_find(&nm->pt, o->t[ad->mc.memory].name) : -1;
        if (c < 0 || vr < 0 || b < 0 || (ad->mc.memory >= 0 && mem < 0)) {
            rc = gma_errorf("adapting K: layer %d's components are missing from the rebuilt model", ad->l);
            break;
        }
        if (mem >= 0) /* a buffer: no moments */
            memset(y.m + nm->pt.t[mem].offset, 0, sizeof(real) * nm->pt.t[mem].numel),
                memset(y.v + nm->pt.t[mem].offset, 0, sizeof(real) * nm->pt.t[mem].numel);
        for (int hp = 0; hp < ad->Hp; hp++) rows_io(ad, &nm->pt, c, vr, b, mem, &y, hp, ad->Knew, &ad->hd[hp], 0);
    }
    if (rc == 0) {
        size_t P = nm->pt.total * sizeof(real);
        g_ops->to_device(nm->params, y.p, P);
        g_ops->to_device(nm->m, y.m, P);
        g_ops->to_device(nm->v, y.v, P);
    }
    host_free(&x);
    host_free(&y);
    return rc;
}

/* m rebuilt in place (its mixers keep the address of its parameter table), from a copy of
 * the old struct; on a failure m is the old model again */
static int rebuild(Model *m, Ad *ads, int nad) {
    int *knew = xcalloc(m->L, sizeof(int));
    for (int a = 0; a < nad; a++) knew[ads[a].l] = ads[a].Knew;
    char list[CFG_MAX_LAYERS * 8];
    k_list(&m->cfg, knew, list, sizeof list);
    free(knew);
    Config c = m->cfg;
    if (gma_set_kc_list(&c, list) != 0) return -1;
    Model old = *m;
    memset(m, 0, sizeof *m);
    if (model_build(m, &c) != 0) return *m = old, -1;
    model_alloc(m, old.Bmax, old.Nmax_act);
    int rc = copy_into(m, &old, ads, nad);
    if (rc == 0 && old.teacher) rc = model_set_teacher(m, old.teacher, old.distill_w, old.distill_T);
    if (rc != 0) return model_free(m), *m = old, -1;
    m->gather = old.gather;
    m->gather_ctx = old.gather_ctx;
    m->lm_weight = old.lm_weight;
    m->drop_live = old.drop_live, m->drop_step = old.drop_step, m->drop_micro = old.drop_micro;
    m->drop_first = old.drop_first, m->drop_global = old.drop_global;
    old.teacher = NULL; /* not owned */
    model_free(&old);
    return 0;
}

static void adapt_row(FILE *mf, long step, const Ad *a) {
    if (!mf) return;
    int pr = 0, me = 0, sp = 0;
    double live = 0;
    for (int hp = 0; hp < a->Hp; hp++) {
        const Head *h = &a->hd[hp];
        pr += h->pruned, me += h->merged, sp += h->split;
        for (int k = 0; k < h->n; k++) live += !dropped(&a->lay, row(a, h, k));
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)step);
    cJSON_AddStringToObject(o, "event", "adapt");
    cJSON_AddNumberToObject(o, "layer", a->l);
    cJSON_AddNumberToObject(o, "n_components", a->Knew);
    cJSON_AddNumberToObject(o, "k_before", a->K);
    cJSON_AddNumberToObject(o, "k_live", live / a->Hp);
    cJSON_AddNumberToObject(o, "pruned", pr);
    cJSON_AddNumberToObject(o, "merged", me);
    cJSON_AddNumberToObject(o, "split", sp);
    run_metrics_row(mf, o);
}

int kadapt_apply(Model *m, double *const *load, long step, FILE *mf, KadaptTally *out) {
    KadaptTally t = {0};
    Ad *ads = xcalloc(m->L + 1, sizeof(Ad));
    int nad = 0, changed = 0;
    Host x = host_of(m);
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        MixerComponents mc;
        if (!load[l] || !mx->vt->health) continue;
        mx->vt->health->components(mx, NULL, 0, 0, &mc);
        if (mc.softmax || mc.var < 0) continue; /* Gaussian components only */
        Ad *a = &ads[nad++];
        ad_open(a, m, l, load[l], &x);
        for (int hp = 0; hp < a->Hp; hp++) adapt_head(a, &a->hd[hp]);
        int ch = ad_pad(a);
        changed |= ch;
        t.layers_changed += ch;
        for (int hp = 0; hp < a->Hp; hp++) t.pruned += a->hd[hp].pruned, t.merged += a->hd[hp].merged, t.split += a->hd[hp].split;
    }
    host_free(&x);
    int rc = changed ? rebuild(m, ads, nad) : 0;
    if (rc == 0)
        for (int a = 0; a < nad; a++) adapt_row(mf, step, &ads[a]);
    for (int a = 0; a < nad; a++) ad_close(&ads[a]);
    free(ads);
    if (out) *out = t;
    return rc < 0 ? -1 : changed;
}

int kadapt_step(Model *m, long step, FILE *mf, KadaptTally *out) {
    MixerMonitor g;
    if (out) memset(out, 0, sizeof *out);
    if (model_monitor(m, &g) == 0 || g.adapt_every <= 0 || step <= 0 || step % g.adapt_every) return 0;
    double **load = xcalloc(m->L, sizeof(double *));
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        MixerComponents mc;
        if (!mx->vt->health) continue;
        mx->vt->health->components(mx, NULL, 0, 0, &mc);
        if (mc.softmax) continue;
        double *ld = xcalloc((size_t)m->H * mc.Kc, sizeof(double));
        if (!health_layer_load(m, l, ld)) {
            free(ld);
            continue;
        }
        load[l] = ld;
    }
    int rc = kadapt_apply(m, load, step, mf, out);
    for (int l = 0; l < m->L; l++) free(load[l]);
    free(load);
    return rc;
}
