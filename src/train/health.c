/* health.c: GMA routing health over the mixer interface (see health.h): k-means seeding,
 * routing statistics, re-seeding of dead components, and the monitor with its alerts. */
#include "train/health.h"

#include "nn/kmeans.h"
#include "train/dist.h"
#include "train/metrics_log.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KMEANS_SAMPLE 4096 /* rows a k-means fit uses at most */
#define KMEANS_ITERS 10

/* the layer's components (0: its mixer has no health hooks) */
static int components(const Mixer *mx, const real *act, int B, int N, MixerComponents *out) {
    if (!mx->vt->health) return 0;
    mx->vt->health->components(mx, act, B, N, out);
    return 1;
}

static int is_pad(const MixerCtx *c, int b, int i) { return c->keymask && !c->keymask[(size_t)b * c->N + i]; }

/* the rows of every rank (c->gather, rank 0's first), or a copy of this process's; NULL on
 * a failed gather */
static real *all_rows(const MixerCtx *c, const real *x, int n, int d, int *n_all) {
    if (c->gather) return c->gather(x, n, d, n_all, c->gather_ctx);
    real *y = xmalloc(sizeof(real) * (size_t)n * d + 1);
    memcpy(y, x, sizeof(real) * (size_t)n * d);
    *n_all = n;
    return y;
}

/* this rank's non-padded rows of head h from host rows q [B,H,N,w] into out [t,w]; returns t */
static int head_rows(const MixerCtx *c, int H, int h, const real *q, int w, real *out) {
    int t = 0;
    for (int b = 0; b < c->B; b++)
        for (int i = 0; i < c->N; i++)
            if (!is_pad(c, b, i)) memcpy(out + (size_t)t++ * w, q + (((size_t)b * H + h) * c->N + i) * w, sizeof(real) * w);
    return t;
}

static int argmax(const real *r, int K) {
    int best = 0;
    for (int k = 1; k < K; k++)
        if (r[k] > r[best]) best = k;
    return best;
}

static size_t tensor_offset(const Mixer *mx, int tensor) { return mx->pt->t[tensor].offset; }
/* write host reals into a slice of a backend tensor */
static void put(real *params, const Mixer *mx, int tensor, size_t at, const real *host, size_t n) {
    g_ops->to_device(params + tensor_offset(mx, tensor) + at, host, sizeof(real) * n);
}
static void get(real *host, const real *params, const Mixer *mx, int tensor, size_t at, size_t n) {
    g_ops->to_host(host, params + tensor_offset(mx, tensor) + at, sizeof(real) * n);
}

/* train.freeze: 1 when tensor (an index into the mixer's table, -1 none) is frozen; k-means
 * seeding and re-seeding leave such a tensor's bits as they are, with one line on stderr
 * (rank 0) the first time `what` skips it */
static int frozen(const Mixer *mx, int tensor, const char *what) {
    if (tensor < 0 || !mx->pt->t[tensor].frozen) return 0;
    static struct { const ParamTable *pt; int t; char what; } told[64];
    static int n_told;
    for (int i = 0; i < n_told; i++)
        if (told[i].pt == mx->pt && told[i].t == tensor && told[i].what == what[0]) return 1;
    if (n_told < 64) told[n_told++].pt = mx->pt, told[n_told - 1].t = tensor, told[n_told - 1].what = what[0];
    if (dist_rank() == 0)
        fprintf(stderr, "gmatrain: %s leaves %s as it is: frozen by train.freeze\n", what, mx->pt->t[tensor].name);
    return 1;
}

/* ================= k-means seeding ================= */

/* host copy of the non-padded query rows of head h (all heads when h < 0) of every rank,
 * head by head in rank order (the order of the global batch): X [n,d]; NULL on an error */
static real *gather_rows(const Mixer *mx, const MixerCtx *c, const real *qhost, int h, real *mine, int *n_out) {
    int d = mx->d, n = 0;
    real *X = NULL;
    for (int hh = 0; hh < mx->H; hh++) {
        if (h >= 0 && hh != h) continue;
        int got, k = head_rows(c, mx->H, hh, qhost, d, mine);
        real *all = all_rows(c, mine, k, d, &got);
        if (!all) return free(X), (void)gma_errorf("routing: gathering the query rows of head %d failed", hh), NULL;
        X = xrealloc(X, sizeof(real) * ((size_t)n + got) * d + 1);
        memcpy(X + (size_t)n * d, all, sizeof(real) * (size_t)got * d);
        n += got;
        free(all);
    }
    *n_out = n;
    return X;
}

/* subsample to at most KMEANS_SAMPLE rows (partial Fisher-Yates, in place; tmp [d]) */
static int subsample(real *X, int n, int d, real *tmp, Rng *rng) {
    if (n <= KMEANS_SAMPLE) return n;
    for (int i = 0; i < KMEANS_SAMPLE; i++) {
        int j = i + (int)rng_below(rng, (uint64_t)(n - i));
        memcpy(tmp, X + (size_t)i * d, sizeof(real) * d);
        memcpy(X + (size_t)i * d, X + (size_t)j * d, sizeof(real) * d);
        memcpy(X + (size_t)j * d, tmp, sizeof(real) * d);
    }
    return KMEANS_SAMPLE;
}

/* centres C [Kc,d] into routing head hp: Gaussian mu = C; softmax W = C, b = -|c_k|^2/2
 * (argmax then picks the nearest centre); b [Kc] scratch */
static void set_centres(const Mixer *mx, const MixerComponents *mc, real *params, int hp, const real *C, real *b) {
    int Kc = mc->Kc, d = mx->d;
    put(params, mx, mc->centre, (size_t)hp * Kc * d, C, (size_t)Kc * d);
    if (!mc->softmax || frozen(mx, mc->bias, "k-means seeding")) return;
    for (int k = 0; k < Kc; k++) {
        double s = 0;
        for (int e = 0; e < d; e++) s += (double)C[(size_t)k * d + e] * C[(size_t)k * d + e];
        b[k] = (real)(-0.5 * s);
    }
    put(params, mx, mc->bias, (size_t)hp * Kc, b, Kc);
}

/* one fit for head h (h < 0: the rows of all heads, for shared components) */
static int kmeans_head(Mixer *mx, const MixerComponents *mc, const MixerCtx *c, real *params, const real *q,
                       int h, real *work, Rng *rng) {
    int d = mx->d, Kc = mc->Kc, n;
    real *C = work, *b = C + (size_t)Kc * d, *tmp = b + Kc, *mine = tmp + d;
    real *X = gather_rows(mx, c, q, h, mine, &n);
    if (!X) return -1;
    n = subsample(X, n, d, tmp, rng);
    if (n > 0) {
        kmeans_fit(X, n, d, Kc, KMEANS_ITERS, C, rng);
        if (mc->kmeans && (h < 0 || !mc->shared) && !frozen(mx, mc->centre, "k-means seeding"))
            set_centres(mx, mc, params, h < 0 ? 0 : h, C, b);
        if (mc->memory >= 0 && h >= 0 && !frozen(mx, mc->memory, "k-means seeding"))
            put(params, mx, mc->memory, (size_t)h * Kc * d, C, (size_t)Kc * d);
    }
    free(X);
    return 0;
}

/* force: set the centres from the centroids whatever gma.init says */
static int kmeans_layer(Mixer *mx, const MixerCtx *c, real *params, const real *act, Rng *rng, int force) {
    MixerComponents mc;
    if (!components(mx, act, c->B, c->N, &mc) || !mc.qh) return 0;
    if (force) mc.kmeans = 1;
    int d = mx->d, Kc = mc.Kc;
    size_t hs = (size_t)c->B * c->N * mx->D;
    /* one block: q [hs], then C [Kc,d], b [Kc], tmp [d], a head's rows [B*N,d] */
    real *q = xmalloc(sizeof(real) * (hs + (size_t)Kc * d + Kc + d + (size_t)c->B * c->N * d + 1));
    g_ops->to_host(q, mc.qh, sizeof(real) * hs);
    int rc = 0;
    for (int h = -1; h < mx->H && rc == 0; h++) {
        if (h < 0 && !(mc.shared && mc.kmeans)) continue; /* a pooled fit only for shared components */
        rc = kmeans_head(mx, &mc, c, params, q, h, q + hs, rng);
    }
    free(q);
    return rc;
}

int routing_kmeans(Mixer *mx, const MixerCtx *c, real *params, const real *act, Rng *rng) {
    return kmeans_layer(mx, c, params, act, rng, 0);
}

/* ================= routing statistics ================= */

/* entropy and argmax count of head h over the non-padded rows of gq [B,H,N,Kc] (host) */
static double head_stats(const MixerCtx *c, int H, int h, const real *gq, int Kc, double *ent, double *cnt) {
    double rows = 0, e = 0;
    memset(cnt, 0, sizeof(double) * Kc);
    for (int b = 0; b < c->B; b++)
        for (int i = 0; i < c->N; i++) {
            if (is_pad(c, b, i)) continue;
            const real *r = gq + (((size_t)b * H + h) * c->N + i) * Kc;
            for (int k = 0; k < Kc; k++)
                if (r[k] > 0) e -= r[k] * log((double)r[k]);
            cnt[argmax(r, Kc)] += 1;
            rows += 1;
        }
    *ent = rows > 0 ? e / rows : 0;
    return rows;
}

double routing_stats(const Mixer *mx, const MixerCtx *c, const real *params, const real *act, double *entropy,
                     double *counts, double *mem_norm) {
    MixerComponents mc;
    if (!components(mx, act, c->B, c->N, &mc)) return -1;
    const real *gq_dev = mc.gq;
    if (!gq_dev) return -1;
    int H = mx->H, d = mx->d, Kc = mc.Kc;
    size_t gs = (size_t)c->B * H * c->N * Kc;
    real *gq = xmalloc(sizeof(real) * gs);
    g_ops->to_host(gq, gq_dev, sizeof(real) * gs);
    double rows = 0;
    for (int h = 0; h < H; h++) rows = head_stats(c, H, h, gq, Kc, entropy + h, counts + (size_t)h * Kc);
    free(gq);
    if (mc.memory >= 0 && mem_norm)
        for (int h = 0; h < H; h++)
            mem_norm[h] = sqrt(g_ops->sumsq(params + tensor_offset(mx, mc.memory) + (size_t)h * Kc * d, (size_t)Kc * d));
    return rows;
}

/* ================= re-seeding dead components ================= */

/* what one re-seed of a head works on: host buffers carved from one block, and the
 * gathered rows of all ranks */
typedef struct Reseed {
    const Mixer *mx;
    const MixerComponents *mc;
    int hp;            /* routing head: 0 with shared components, else the head */
    real *q, *gq;      /* host copies of the last forward's qh [B,H,N,d] and gq [B,H,N,Kc] (the key
                        * rows kh and gk with gma.reseed_rows "keys") */
    real *rows, *args; /* this rank's rows of the head [t,d] and their argmax [t] */
    real *C;           /* [Kc+1,d] centroids of the live components, then the picks */
    real *w, *bias;    /* the head's centres [Kc,d] and biases [Kc] */
    real *var;         /* [d] all var0 */
    real *X, *A;       /* every rank's rows [n,d] and their argmax [n] (from all_rows) */
    int n;
    real *block;
} Reseed;

static void reseed_alloc(Reseed *r, const MixerCtx *c) {
    int Kc = r->mc->Kc, d = r->mx->d;
    size_t BN = (size_t)c->B * c->N, hs = BN * r->mx->D, gs = BN * r->mx->H * Kc;
    size_t n[] = {hs, gs, BN * d, BN, (size_t)(Kc + 1) * d, (size_t)Kc * d, Kc, d}, tot = 1;
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) tot += n[i];
    real **at[] = {&r->q, &r->gq, &r->rows, &r->args, &r->C, &r->w, &r->bias, &r->var};
    r->block = xcalloc(tot, sizeof(real));
    real *p = r->block;
    for (size_t i = 0; i < sizeof n / sizeof n[0]; i++) *at[i] = p, p += n[i];
}

static void reseed_free(Reseed *r) {
    free(r->block);
    free(r->X);
    free(r->A);
}

/* every rank's rows of the head and, in the same order, their argmax; -1 when the
 * gathers disagree (a rank's count alone would leave the other ranks' entries unset) */
static int reseed_rows(Reseed *r, const MixerCtx *c, int head) {
    int H = r->mx->H, d = r->mx->d, Kc = r->mc->Kc, n_arg = 0;
    int t = head_rows(c, H, head, r->q, d, r->rows);
    for (int b = 0, j = 0; b < c->B; b++)
        for (int i = 0; i < c->N; i++)
            if (!is_pad(c, b, i)) r->args[j++] = (real)argmax(r->gq + (((size_t)b * H + head) * c->N + i) * Kc, Kc);
    r->X = all_rows(c, r->rows, t, d, &r->n);
    r->A = r->X ? all_rows(c, r->args, t, 1, &n_arg) : NULL;
    if (!r->A) return gma_errorf("routing reinit: gathering the rows of head %d failed", head);
    if (n_arg != r->n)
        return gma_errorf("routing reinit: %d gathered argmax rows for %d query rows (head %d)", n_arg, r->n, head);
    return 0;
}

/* the centroids of the rows whose argmax is a live component, into C; returns their number */
static int live_centroids(const Reseed *r, const int *dead) {
    int d = r->mx->d, nc = 0;
    for (int k = 0; k < r->mc->Kc; k++) {
        if (dead[k]) continue;
        double num = 0;
        real *ck = r->C + (size_t)nc * d;
        for (int t = 0; t < r->n; t++)
            if ((int)r->A[t] == k) {
                num++;
                for (int e = 0; e < d; e++) ck[e] += r->X[(size_t)t * d + e];
            }
        if (num > 0) {
            for (int e = 0; e < d; e++) ck[e] = (real)(ck[e] / num);
            nc++;
        } else
            memset(ck, 0, sizeof(real) * d);
    }
    return nc;
}

/* the live components' largest bias and mean centre norm (n: how many are live) */
typedef struct Live { double bias, norm, n; } Live;
static Live live_stats(const Reseed *r, const int *dead) {
    int d = r->mx->d;
    Live lv = {0, 0, 0};
    for (int k = 0; k < r->mc->Kc; k++)
        if (!dead[k]) {
            double s = 0;
            for (int e = 0; e < d; e++) s += (double)r->w[(size_t)k * d + e] * r->w[(size_t)k * d + e];
            lv.norm += sqrt(s);
            lv.bias = lv.n == 0 ? r->bias[k] : fmax(lv.bias, r->bias[k]);
            lv.n++;
        }
    if (lv.n > 0) lv.norm /= lv.n;
    return lv;
}

static void zero_slice(real *base, size_t off, size_t n) {
    if (base) g_ops->zero(base + off, sizeof(real) * n);
}

/* component k from row x: Gaussian mu_k = x, sigma2_k = 1; softmax W_k along x with the
 * live rows' mean norm; the bias the largest live one; its moments zeroed */
static void reseed_one(Reseed *r, int k, const real *x, Live lv, real *params, real *mom1, real *mom2) {
    const MixerComponents *mc = r->mc;
    int d = r->mx->d, Kc = mc->Kc;
    size_t at3 = (size_t)r->hp * Kc * d + (size_t)k * d, at1 = (size_t)r->hp * Kc + k;
    real *wk = r->w + (size_t)k * d;
    if (!mc->softmax) {
        memcpy(wk, x, sizeof(real) * d);
        if (!frozen(r->mx, mc->var, "re-seeding")) put(params, r->mx, mc->var, at3, r->var, d);
    } else {
        double s = 0;
        for (int e = 0; e < d; e++) s += (double)x[e] * x[e];
        double sc = s > 0 && lv.norm > 0 ? lv.norm / sqrt(s) : 1;
        for (int e = 0; e < d; e++) wk[e] = (real)(x[e] * sc);
    }
    r->bias[k] = lv.n > 0 ? (real)lv.bias : 0;
    size_t o3 = tensor_offset(r->mx, mc->centre) + at3, o1 = tensor_offset(r->mx, mc->bias) + at1;
    zero_slice(mom1, o3, d), zero_slice(mom2, o3, d), zero_slice(mom1, o1, 1), zero_slice(mom2, o1, 1);
    if (mc->var >= 0) {
        size_t ov = tensor_offset(r->mx, mc->var) + at3;
        zero_slice(mom1, ov, d), zero_slice(mom2, ov, d);
    }
}

int routing_reinit(Mixer *mx, const MixerCtx *c, real *params, real *mom1, real *mom2, const real *act, int head,
                   const int *dead, Rng *rng) {
    MixerComponents mc;
    if (!components(mx, act, c->B, c->N, &mc) || !mc.qh) return 0;
    if (frozen(mx, mc.centre, "re-seeding")) return 0; /* a component cannot move: nothing re-seeded */
    int keys = mc.mon.reseed_keys; /* gma.reseed_rows "keys": the key rows and their responsibilities */
    const real *rows_dev = keys ? mc.kh : mc.qh, *resp_dev = keys ? mc.gk : mc.gq;
    if (!rows_dev || !resp_dev) return 0;
    int d = mx->d, Kc = mc.Kc;
    Reseed r = {.mx = mx, .mc = &mc, .hp = mc.shared ? 0 : head};
    reseed_alloc(&r, c);
    size_t BN = (size_t)c->B * c->N, P3 = (size_t)Kc * d;
    g_ops->to_host(r.q, rows_dev, sizeof(real) * BN * mx->D);
    g_ops->to_host(r.gq, resp_dev, sizeof(real) * BN * mx->H * Kc);
    if (reseed_rows(&r, c, head) != 0) return reseed_free(&r), -1;
    int nc = live_centroids(&r, dead);
    get(r.w, params, mx, mc.centre, (size_t)r.hp * P3, P3);
    get(r.bias, params, mx, mc.bias, (size_t)r.hp * Kc, Kc);
    for (int e = 0; e < d; e++) r.var[e] = (real)mc.var0;
    Live lv = live_stats(&r, dead);
    int done = 0;
    for (int k = 0; k < Kc && r.n > 0; k++) {
        if (!dead[k]) continue;
        const real *x = r.X + (size_t)kmeans_pp_pick(r.X, r.n, d, r.C, nc, rng) * d;
        memcpy(r.C + (size_t)nc * d, x, sizeof(real) * d); /* later picks keep away from it */
        if (nc < Kc) nc++;
        reseed_one(&r, k, x, lv, params, mom1, mom2);
        done++;
    }
    put(params, mx, mc.centre, (size_t)r.hp * P3, r.w, P3);
    if (!frozen(mx, mc.bias, "re-seeding")) put(params, mx, mc.bias, (size_t)r.hp * Kc, r.bias, Kc);
    reseed_free(&r);
    return done;
}

/* ================= the model ================= */

int model_monitor(const Model *m, MixerMonitor *out) {
    int n = 0;
    memset(out, 0, sizeof *out);
    for (int l = 0; l < m->L; l++) {
        MixerComponents mc;
        if (!components(m->blocks[l].mixer, NULL, 0, 0, &mc)) continue;
        if (n++ == 0) *out = mc.mon;
    }
    return n;
}

static int layer_wants_kmeans(const Model *m, int l) {
    MixerComponents mc;
    if (!components(m->blocks[l].mixer, NULL, 0, 0, &mc)) return 0;
    return m->kmeans_only ? m->kmeans_only[l] : mc.kmeans || mc.memory >= 0;
}

int model_wants_kmeans(const Model *m) {
    for (int l = 0; l < m->L; l++)
        if (layer_wants_kmeans(m, l)) return 1;
    return 0;
}

int model_kmeans_init(Model *m, const int32_t *tok, const int32_t *tgt, int B, int N, const uint8_t *keymask,
                      Rng *rng) {
    for (int l = 0; l < m->L; l++) {
        Mixer *mx = m->blocks[l].mixer;
        if (!layer_wants_kmeans(m, l)) continue;
        LossStats st;
        if (model_forward(m, tok, tgt, B, N, keymask, 0, &st, 0, 0) != 0) return -1;
        MixerCtx ctx = {.B = B, .N = N, .causal = m->causal, .keymask = keymask, .gather = m->gather,
                        .gather_ctx = m->gather_ctx};
        if (kmeans_layer(mx, &ctx, m->params, m->blocks[l].act, rng, m->kmeans_only != NULL) != 0) return -1;
    }
    return 0;
}

int model_kmeans_init_cls(Model *m, const int32_t *tok, const int32_t *labels, int B, int N, Rng *rng) {
    for (int l = 0; l < m->L; l++) {
        Mixer *mx = m->blocks[l].mixer;
        if (!layer_wants_kmeans(m, l)) continue;
        LossStats st;
        if (model_forward(m, tok, labels, B, N, NULL, 0, &st, 0, 0) != 0) return -1;
        /* the forward's rows: sequences x (pooling slots + tokens), its key mask */
        MixerCtx ctx = {.B = m->B, .N = m->N, .causal = m->causal, .keymask = m->keymask, .gather = m->gather,
                        .gather_ctx = m->gather_ctx};
        if (kmeans_layer(mx, &ctx, m->params, m->blocks[l].act, rng, m->kmeans_only != NULL) != 0) return -1;
    }
    return 0;
}

/* ================= the monitor ================= */

void health_init(HealthMon *h, const Model *m) {
    memset(h, 0, sizeof *h);
    h->L = m->L;
    h->H = m->H;
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        MixerComponents mc;
        if (components(mx, NULL, 0, 0, &mc)) h->Kc = GMA_MAX(h->Kc, mc.Kc);
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
        MixerComponents mc;
        if (!components(mx, NULL, 0, 0, &mc) || mc.memory < 0) continue;
        MixerCtx c = stats_ctx(m);
        routing_stats(mx, &c, m->params, m->blocks[l].act, ent, cnt, h->norm0 + (size_t)l * h->H);
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

/* what one check found: the screen gets one line per check (the heads of each alert
 * counted); the rows of metrics.jsonl keep every head's figures */
typedef struct Tally { int heads, ent, dead, comp, seeded, mem, stop, failed; } Tally;

/* one layer's statistics of the last forward, over the global batch */
typedef struct Stats { double *ent, *cnt, *norm, rows; int *dead, *dropped; } Stats;

/* utilisation of head h's components; counts their dead runs and marks dead[k] */
typedef struct Usage { double umin, umax; int active, ndead; } Usage;
static Usage usage(const Stats *st, const MixerMonitor *g, int Kc, int h, int *run) {
    const double *ck = st->cnt + (size_t)h * Kc;
    const int *gone = st->dropped ? st->dropped + (size_t)h * Kc : NULL;
    Usage u = {1, 0, 0, 0};
    for (int k = 0; k < Kc; k++) {
        if (gone && gone[k]) { /* dropped by the Dirichlet prior: neither used nor dead */
            run[k] = 0, st->dead[k] = 0;
            continue;
        }
        double x = st->rows > 0 ? ck[k] / st->rows : 0;
        u.umin = fmin(u.umin, x);
        u.umax = fmax(u.umax, x);
        u.active += ck[k] > 0;
        if (x < g->util_min_share / Kc) run[k]++;
        else run[k] = 0;
        st->dead[k] = run[k] >= g->patience;
        u.ndead += st->dead[k];
    }
    return u;
}

static void routing_row(FILE *mf, long step, int l, int h, const Stats *st, Usage u, int mem) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)step);
    cJSON_AddStringToObject(o, "event", "routing");
    cJSON_AddNumberToObject(o, "layer", l);
    cJSON_AddNumberToObject(o, "head", h);
    cJSON_AddNumberToObject(o, "entropy", st->ent[h]);
    cJSON_AddNumberToObject(o, "util_min", u.umin);
    cJSON_AddNumberToObject(o, "util_max", u.umax);
    cJSON_AddNumberToObject(o, "active", u.active);
    if (mem) cJSON_AddNumberToObject(o, "mem_norm", st->norm[h]);
    else cJSON_AddNullToObject(o, "mem_norm");
    emit(mf, o);
}

/* the dead-components alert of head h, with the re-seed when on_collapse is "reinit" */
static void dead_alert(Model *m, int l, int h, const MixerComponents *mc, const Stats *st, Usage u, int *run, long step,
                       uint64_t seed, FILE *mf, Tally *t) {
    const MixerMonitor *g = &mc->mon;
    cJSON *a = alert_row(step, l, h, "dead_components", u.ndead, g->util_min_share / mc->Kc,
                         g->reinit ? "reinit" : g->stop ? "stop" : "warn");
    cJSON_AddNumberToObject(a, "active", u.active);
    int done = 0;
    if (g->reinit) {
        Rng rng;
        rng_seed2(&rng, seed, 0x7265696e6974ULL ^ ((uint64_t)step << 16) ^ ((uint64_t)l << 8) ^ (uint64_t)h);
        MixerCtx c = stats_ctx(m);
        done = routing_reinit(m->blocks[l].mixer, &c, m->params, m->m, m->v, m->blocks[l].act, h, st->dead, &rng);
        if (done < 0) t->failed = 1, done = 0;
        for (int k = 0; k < mc->Kc; k++)
            if (st->dead[k]) run[k] = 0;
        cJSON_AddNumberToObject(a, "reseeded", done);
    }
    emit(mf, a);
    t->dead++, t->comp += u.ndead, t->seeded += done;
}

/* head h of layer l: its routing row and its alerts */
static void check_head(HealthMon *hm, Model *m, int l, int h, const MixerComponents *mc, const Stats *st, long step,
                       uint64_t seed, FILE *mf, Tally *t) {
    const MixerMonitor *g = &mc->mon; /* the settings, as the mixer declares them */
    int H = m->H, mem = mc->memory >= 0, *run = hm->dead_run + ((size_t)l * H + h) * GMA_MAX(hm->Kc, 1);
    const char *warn_action = g->stop ? "stop" : "warn";
    Usage u = usage(st, g, mc->Kc, h, run);
    routing_row(mf, step, l, h, st, u, mem);
    t->heads++;
    if (st->ent[h] < g->entropy_min) {
        emit(mf, alert_row(step, l, h, "entropy", st->ent[h], g->entropy_min, warn_action));
        t->ent++, hm->alerts++, t->stop |= g->stop;
    }
    if (u.ndead > 0) {
        dead_alert(m, l, h, mc, st, u, run, step, seed, mf, t);
        hm->alerts++, t->stop |= g->stop;
    }
    double n0 = hm->norm0[(size_t)l * H + h];
    if (mem && n0 > 0 && st->norm[h] > g->norm_growth_max * n0) {
        emit(mf, alert_row(step, l, h, "memory_norm", st->norm[h], g->norm_growth_max * n0, warn_action));
        t->mem++, hm->alerts++, t->stop |= g->stop;
    }
}

/* [H,Kc]: 1 for the components the Dirichlet prior dropped (health_drop), per head */
static int *dropped_of(const Model *m, const Mixer *mx, const MixerComponents *mc) {
    int Kc = mc->Kc, Hp = mc->shared ? 1 : mx->H;
    real *l = xmalloc(sizeof(real) * Hp * Kc);
    int *out = xcalloc((size_t)mx->H * Kc, sizeof(int));
    get(l, m->params, mx, mc->bias, 0, (size_t)Hp * Kc);
    for (int h = 0; h < mx->H; h++)
        for (int k = 0; k < Kc; k++) out[(size_t)h * Kc + k] = !(l[(size_t)(mc->shared ? 0 : h) * Kc + k] > MIXER_DROPPED_LOGIT / 2);
    free(l);
    return out;
}

/* the statistics of layer l summed over the ranks; 0 when its last forward kept none */
static int layer_stats(Model *m, int l, const MixerComponents *mc, Stats *st) {
    MixerCtx c = stats_ctx(m);
    int H = m->H;
    st->rows = routing_stats(m->blocks[l].mixer, &c, m->params, m->blocks[l].act, st->ent, st->cnt, st->norm);
    if (st->rows < 0) return 0; /* auto on its sdpa path */
    if (dist_size() > 1) { /* over the global batch: entropy sums, counts and rows of all ranks */
        for (int h = 0; h < H; h++) st->ent[h] *= st->rows;
        dist_sum_double(st->ent, H);
        dist_sum_double(st->cnt, (size_t)H * mc->Kc);
        dist_sum_double(&st->rows, 1);
        for (int h = 0; h < H; h++) st->ent[h] = st->rows > 0 ? st->ent[h] / st->rows : 0;
    }
    return 1;
}

int health_layer_load(Model *m, int l, double *load) {
    MixerComponents mc;
    const Mixer *mx = m->blocks[l].mixer;
    if (!components(mx, m->blocks[l].act, m->B, m->N, &mc) || !mc.gq) return 0;
    MixerCtx c = stats_ctx(m);
    int H = mx->H, Kc = mc.Kc;
    size_t gs = (size_t)c.B * H * c.N * Kc;
    real *gq = xmalloc(sizeof(real) * gs + 1);
    g_ops->to_host(gq, mc.gq, sizeof(real) * gs);
    double rows = 0;
    memset(load, 0, sizeof(double) * H * Kc);
    for (int b = 0; b < c.B; b++)
        for (int i = 0; i < c.N; i++) {
            if (is_pad(&c, b, i)) continue;
            rows++;
            for (int h = 0; h < H; h++) {
                const real *r = gq + (((size_t)b * H + h) * c.N + i) * Kc;
                for (int k = 0; k < Kc; k++) load[(size_t)h * Kc + k] += r[k];
            }
        }
    free(gq);
    if (dist_size() > 1) dist_sum_double(load, (size_t)H * Kc), dist_sum_double(&rows, 1);
    for (size_t i = 0; i < (size_t)H * Kc; i++) load[i] = rows > 0 ? load[i] / rows : 0;
    return rows > 0;
}

static void print_tally(const Tally *t, long step) {
    char what[512] = "";
    int n = 0;
    if (t->ent) n += snprintf(what + n, sizeof what - n, "low entropy in %d", t->ent);
    if (t->dead) {
        n += snprintf(what + n, sizeof what - n, "%s%d unused components in %d", n ? "; " : "", t->comp, t->dead);
        if (t->seeded) n += snprintf(what + n, sizeof what - n, " (%d re-seeded)", t->seeded);
    }
    if (t->mem) snprintf(what + n, sizeof what - n, "%sgrown memory norm in %d", n ? "; " : "", t->mem);
    fprintf(stderr, "%srouting alert step %ld: %s of %d heads (per head: metrics.jsonl, docs/routing.md)\n",
            isatty(2) ? "\n" : "", step, what, t->heads);
}

/* ================= the Dirichlet prior's drops (docs/model.md §4.1) ================= */

/* live[h] for each routing head of layer mx; drops first when `drop` (see health.h) */
static void drop_layer(Model *m, const Mixer *mx, const MixerComponents *mc, int drop, int *live) {
    int Kc = mc->Kc, Hp = mc->shared ? 1 : mx->H;
    size_t n = (size_t)Hp * Kc;
    real *l = xmalloc(n * sizeof(real));
    get(l, m->params, mx, mc->bias, 0, n);
    int changed = 0;
    for (int h = 0; h < Hp; h++) {
        real *lh = l + (size_t)h * Kc;
        int top = argmax(lh, Kc);
        double mx_l = lh[top], sum = 0;
        for (int k = 0; k < Kc; k++) sum += exp(lh[k] - mx_l);
        live[h] = 0;
        for (int k = 0; k < Kc; k++) {
            if (!(lh[k] > MIXER_DROPPED_LOGIT / 2)) continue;
            if (drop && k != top && exp(lh[k] - mx_l) / sum < mc->mon.drop_below) {
                lh[k] = (real)MIXER_DROPPED_LOGIT; /* and its moments: the optimiser must not move it back */
                size_t o = tensor_offset(mx, mc->bias) + (size_t)h * Kc + k;
                zero_slice(m->m, o, 1), zero_slice(m->v, o, 1);
                changed = 1;
                continue;
            }
            live[h]++;
        }
    }
    if (changed) put(m->params, mx, mc->bias, 0, l, n);
    free(l);
}

int health_drop(Model *m, long step, FILE *mf, int last) {
    int rows = 0;
    int *live = xcalloc(m->H, sizeof(int));
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        MixerComponents mc;
        if (!components(mx, NULL, 0, 0, &mc) || mc.mon.drop_every <= 0 || mc.softmax) continue;
        int due = step > 0 && step % mc.mon.drop_every == 0;
        if (!due && !last) continue;
        drop_layer(m, mx, &mc, due, live);
        int Hp = mc.shared ? 1 : mx->H;
        double mean = 0;
        cJSON *o = cJSON_CreateObject(), *heads = cJSON_CreateArray();
        for (int h = 0; h < Hp; h++) mean += live[h], cJSON_AddItemToArray(heads, cJSON_CreateNumber(live[h]));
        cJSON_AddNumberToObject(o, "step", (double)step);
        cJSON_AddStringToObject(o, "event", "components");
        cJSON_AddNumberToObject(o, "layer", l);
        cJSON_AddNumberToObject(o, "n_components", mc.Kc);
        cJSON_AddNumberToObject(o, "k_active", mean / Hp);
        cJSON_AddItemToObject(o, "k_active_heads", heads);
        emit(mf, o);
        rows++;
    }
    free(live);
    return rows;
}

int health_check(HealthMon *hm, Model *m, long step, FILE *mf, int quiet, uint64_t seed) {
    Tally t = {0};
    int H = m->H, Kmax = GMA_MAX(hm->Kc, 1);
    Stats st = {.ent = xcalloc(H, sizeof(double)), .cnt = xcalloc((size_t)H * Kmax, sizeof(double)),
                .norm = xcalloc(H, sizeof(double)), .dead = xcalloc(Kmax, sizeof(int))};
    for (int l = 0; l < m->L; l++) {
        MixerComponents mc;
        if (!components(m->blocks[l].mixer, NULL, 0, 0, &mc) || !layer_stats(m, l, &mc, &st)) continue;
        st.dropped = mc.mon.drop_every > 0 || mc.mon.adapt_every > 0 ? dropped_of(m, m->blocks[l].mixer, &mc) : NULL;
        for (int h = 0; h < H; h++) check_head(hm, m, l, h, &mc, &st, step, seed, mf, &t);
        free(st.dropped);
        st.dropped = NULL;
    }
    free(st.ent);
    free(st.cnt);
    free(st.norm);
    free(st.dead);
    if (!quiet && (t.ent || t.dead || t.mem)) print_tally(&t, step);
    return t.failed ? -1 : t.stop;
}
