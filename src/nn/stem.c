/* stem.c: the convolutional stem (see stem.h; docs/model.md §2.1). */
#include "nn/stem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "nn/cls_head.h"
#include "nn/linear.h"
#include "nn/model_cfg.h"
#include "nn/pool.h"

#define STEM_MOMENTUM 0.1
#define STEM_EPS 1e-5 /* the ops' chnorm epsilon */
/* The convolutions run over runs of whole images whose im2col fits in STEM_COL_BYTES on the
 * CPU, so that the 9 x wider copy is written and read back in cache rather than memory;
 * other backends take the whole batch in one product. */
#define STEM_COL_BYTES (6u << 20)

/* the keys model.stem* (the stored section stem_cfg_section, below) */
typedef struct StemCfg {
    int stem;            /* STEM_NONE | STEM_CONV */
    char dilations[128]; /* model.stem_dilations: its layers' dilations, comma-separated */
    int norm;            /* StemNorm */
    int width;           /* image width in tokens (0 = square) */
} StemCfg;
static const StemCfg *stem_cfg(const Config *c) { return cfg_section_of(c, &stem_cfg_section); }
static int parse_dilations(const char *list, int *dil, int max);

int stem_build(Stem *st, const Config *c, ParamTable *pt) {
    const StemCfg *sc = stem_cfg(c);
    memset(st, 0, sizeof *st);
    if (sc->stem == STEM_NONE) return 0;
    st->n = parse_dilations(sc->dilations, st->dil, STEM_MAX_LAYERS);
    if (st->n < 0) return (st->n = 0, -1);
    st->D = c->model.d_model;
    st->W = sc->width;
    st->norm = (StemNorm)sc->norm;
    char name[96];
    int D = st->D;
    for (int l = 0; l < st->n; l++) {
#define NM(x) (snprintf(name, sizeof name, "stem.%d.%s", l, x), name)
        st->convw[l] = pt_add2(pt, NM("conv.weight"), D, 9 * D, INIT_LECUN_NORMAL, 0, GROUP_WEIGHT);
        st->convb[l] = pt_add1(pt, NM("conv.bias"), D, INIT_ZERO, 0, GROUP_BIAS);
        st->normw[l] = st->normb[l] = st->rmean[l] = st->rvar[l] = -1;
        if (st->norm != STEM_NORM_NONE) {
            st->normw[l] = pt_add1(pt, NM("norm.weight"), D, INIT_ONE, 0, GROUP_NORM);
            st->normb[l] = pt_add1(pt, NM("norm.bias"), D, INIT_ZERO, 0, GROUP_BIAS);
        }
        if (st->norm == STEM_NORM_BATCH) {
            st->rmean[l] = pt_add1(pt, NM("norm.running_mean"), D, INIT_ZERO, 0, GROUP_BUFFER);
            st->rvar[l] = pt_add1(pt, NM("norm.running_var"), D, INIT_ONE, 0, GROUP_BUFFER);
        }
#undef NM
    }
    st->stat_host = xcalloc(4 * (size_t)D, sizeof(real));
    return 0;
}

void stem_free(Stem *st) {
    free(st->stat_host);
    memset(st, 0, sizeof *st);
}

/* images of N pixels per run of the convolutions (at most S) */
static int run_images(const Stem *st, int S, int N) {
    if (g_ops->device != OPS_CPU) return S;
    size_t per = STEM_COL_BYTES / ((size_t)N * 9 * st->D * sizeof(real));
    return per < 1 ? 1 : per > (size_t)S ? S : (int)per;
}

/* statistics per layer: [S, D] (instance; batch norm takes D of them) */
size_t stem_act_size(const Stem *st, int S, int N) {
    if (!st->n) return 0;
    size_t R = (size_t)S * N, D = st->D;
    return R * D + st->n * (2 * R * D + 2 * (size_t)S * D) + (size_t)run_images(st, S, N) * N * 9 * D + 2 * R * D +
           9 * D * D;
}

void stem_carve(Stem *st, real **p, int S, int N) {
    if (!st->n) return;
    size_t R = (size_t)S * N, D = st->D;
#define TAKE(k) (*p += (k), *p - (k))
    st->x0 = TAKE(R * D);
    for (int l = 0; l < st->n; l++) {
        st->y[l] = TAKE(R * D);
        st->a[l] = TAKE(R * D);
        st->mean[l] = TAKE((size_t)S * D);
        st->rstd[l] = TAKE((size_t)S * D);
    }
    st->run = run_images(st, S, N);
    st->col = TAKE((size_t)st->run * N * 9 * D);
    st->dy = TAKE(R * D);
    st->da = TAKE(R * D);
    st->wt = TAKE((size_t)9 * D * D);
#undef TAKE
}

int stem_shape(const Stem *st, int N, int *H, int *W) {
    int w = st->W;
    if (!w) {
        w = (int)lround(sqrt((double)N));
        if ((long)w * w != N)
            return gma_errorf("model.stem: %d tokens per sequence are not a square image (set model.stem_width)", N);
    }
    if (N % w)
        return gma_errorf("model.stem: %d tokens per sequence are not whole rows of model.stem_width = %d", N, w);
    *W = w;
    *H = N / w;
    return 0;
}

/* the normalisation's groups: batch norm one of every pixel, instance norm one per image */
static void norm_groups(const Stem *st, int *G, int *rows) {
    int P = st->H * st->Wd;
    *G = st->norm == STEM_NORM_BATCH ? 1 : st->S;
    *rows = st->norm == STEM_NORM_BATCH ? st->S * P : P;
}

#define PP(i) PT_PTR(params, pt, (i))
#define GG(i) PT_PTR(grads, pt, (i))

/* batch norm in evaluation: mean[l] and rstd[l] from the running statistics */
static void running_stats(Stem *st, const ParamTable *pt, const real *params, int l) {
    int D = st->D;
    real *h = st->stat_host;
    g_ops->to_host(h, PP(st->rmean[l]), sizeof(real) * D);
    g_ops->to_host(h + D, PP(st->rvar[l]), sizeof(real) * D);
    for (int c = 0; c < D; c++) h[D + c] = (real)(1.0 / sqrt((double)h[D + c] + STEM_EPS));
    g_ops->to_device(st->mean[l], h, sizeof(real) * D);
    g_ops->to_device(st->rstd[l], h + D, sizeof(real) * D);
}

void stem_forward(Stem *st, real *out, const ParamTable *pt, const real *params, int S, int N, int training) {
    int D = st->D, G, rows;
    st->S = S;
    stem_shape(st, N, &st->H, &st->Wd); /* checked by the caller */
    st->batch_stats = st->norm == STEM_NORM_BATCH && training;
    norm_groups(st, &G, &rows);
    size_t R = (size_t)S * N;
    for (int l = 0; l < st->n; l++) {
        const real *in = l ? st->a[l - 1] : st->x0;
        for (int s0 = 0; s0 < S; s0 += st->run) {
            int s = GMA_MIN(st->run, S - s0);
            size_t off = (size_t)s0 * N * D;
            g_ops->im2col3x3(st->col, in + off, s, st->H, st->Wd, D, st->dil[l]);
            linear_forward(st->y[l] + off, st->col, PP(st->convw[l]), PP(st->convb[l]), s * N, 9 * D, D);
        }
        const real *z = st->y[l];
        if (st->norm != STEM_NORM_NONE) {
            int given = st->norm == STEM_NORM_BATCH && !training;
            if (given) running_stats(st, pt, params, l);
            g_ops->chnorm_forward(st->a[l], st->mean[l], st->rstd[l], st->y[l], PP(st->normw[l]), PP(st->normb[l]), G,
                                  rows, D, !given);
            z = st->a[l];
        }
        g_ops->relu_forward(st->a[l], z, R * D);
    }
    g_ops->copy(out, st->a[st->n - 1], sizeof(real) * R * D);
}

void stem_backward(Stem *st, real *dx0, const real *dout, const ParamTable *pt, const real *params, real *grads) {
    int D = st->D, S = st->S, P = st->H * st->Wd, G, rows;
    norm_groups(st, &G, &rows);
    size_t R = (size_t)S * P, bytes = sizeof(real) * R * D;
    real *da = st->da, *dy = st->dy; /* the gradient of a[l]; scratch */
    g_ops->copy(da, dout, bytes);
    for (int l = st->n - 1; l >= 0; l--) {
        g_ops->zero(dy, bytes);
        g_ops->relu_backward(dy, da, st->a[l], R * D); /* d of the norm's output (or of y) */
        real *dyc = dy;
        if (st->norm != STEM_NORM_NONE) {
            g_ops->zero(da, bytes);
            g_ops->chnorm_backward(da, GG(st->normw[l]), GG(st->normb[l]), dy, st->y[l], PP(st->normw[l]), st->mean[l],
                                   st->rstd[l], G, rows, D);
            dyc = da;
        }
        /* y = col W^T + b: dW += dy^T col and the bias gradient; dx is the transposed
         * convolution of dy, the taps mirrored (im2col at -dil) times the weight with its
         * axes regrouped, Wt [(k, co), ci] = W[co, (k, ci)]. A run of images at a time; dW
         * sums the runs in order, so it depends on the batch's shape, not on the threads. */
        const real *in = l ? st->a[l - 1] : st->x0;
        real *next = dyc == da ? dy : da; /* the buffer dyc is not */
        real *dx = l ? next : dx0;
        if (l) g_ops->zero(next, bytes);
        g_ops->bias_backward(GG(st->convb[l]), dyc, (int)R, D);
        g_ops->split_heads(st->wt, PP(st->convw[l]), 1, D, 9, D);
        for (int s0 = 0; s0 < S; s0 += st->run) {
            int s = GMA_MIN(st->run, S - s0), M = s * P;
            size_t off = (size_t)s0 * P * D;
            g_ops->im2col3x3(st->col, in + off, s, st->H, st->Wd, D, st->dil[l]);
            g_ops->matmul(GG(st->convw[l]), dyc + off, st->col, D, 9 * D, M, 1, 0, 1, 1);
            g_ops->im2col3x3(st->col, dyc + off, s, st->H, st->Wd, D, -st->dil[l]);
            g_ops->matmul(dx + off, st->col, st->wt, M, D, 9 * D, 0, 0, 1, 1);
        }
        da = next;
        dy = next == st->da ? st->dy : st->da;
    }
}

void stem_update_buffers(Stem *st, const ParamTable *pt, real *params) {
    if (!st->batch_stats) return;
    int D = st->D;
    double n = (double)st->S * st->H * st->Wd, unbias = n > 1 ? n / (n - 1) : 1;
    real *h = st->stat_host, *r = h + D, *rm = h + 2 * D, *rv = h + 3 * D; /* batch mean, rstd; running */
    for (int l = 0; l < st->n; l++) {
        g_ops->to_host(h, st->mean[l], sizeof(real) * D);
        g_ops->to_host(r, st->rstd[l], sizeof(real) * D);
        g_ops->to_host(rm, PP(st->rmean[l]), sizeof(real) * D);
        g_ops->to_host(rv, PP(st->rvar[l]), sizeof(real) * D);
        for (int c = 0; c < D; c++) {
            double var = 1.0 / ((double)r[c] * r[c]) - STEM_EPS;
            rm[c] = (real)((1 - STEM_MOMENTUM) * rm[c] + STEM_MOMENTUM * h[c]);
            rv[c] = (real)((1 - STEM_MOMENTUM) * rv[c] + STEM_MOMENTUM * var * unbias);
        }
        g_ops->to_device(PP(st->rmean[l]), rm, sizeof(real) * D);
        g_ops->to_device(PP(st->rvar[l]), rv, sizeof(real) * D);
    }
    st->batch_stats = 0;
}

int stem_rank_averaged(const Stem *st, int tensor) {
    for (int l = 0; l < st->n; l++)
        if (tensor >= 0 && (tensor == st->rmean[l] || tensor == st->rvar[l])) return 1;
    return 0;
}

/* ---- configuration: model.stem* ---- */

#define O(f) offsetof(StemCfg, f)
static const CfgKey g_stem_keys[] = {
    {"stem", CFGT_ENUM, O(stem), 0, "none", 0, 0, "none|conv",
     "Image classifier: conv = a stem of dilated 3 x 3 convolutions before the blocks (docs/model.md §2.1)."},
    {"stem_dilations", CFGT_STR, O(dilations), sizeof(((StemCfg *)0)->dilations), "1,1,2,2,4,4,8", 0, 0, NULL,
     "model.stem conv: one dilation per layer, comma-separated."},
    {"stem_norm", CFGT_ENUM, O(norm), 0, "batch", 0, 0, "batch|instance|none",
     "model.stem conv: normalisation after each convolution (docs/model.md §2.1)."},
    {"stem_width", CFGT_INT, O(width), 0, "0", 0, 65536, NULL,
     "model.stem conv: image width in tokens (0 = square images)."},
};
#undef O

/* model.stem_dilations parsed into dil[0..max): the number of layers, or -1 with a message
 * naming the key (not a list of integers 1..64, empty, or more than max) */
static int parse_dilations(const char *list, int *dil, int max) {
    int n = 0;
    for (const char *s = list; *s;) {
        char *end;
        long d = strtol(s, &end, 10);
        if (end == s || d < 1 || d > 64 || (*end && *end != ',') || (*end == ',' && !end[1]))
            return gma_errorf("key model.stem_dilations: \"%s\" is not a comma-separated list of dilations 1..64",
                              list);
        if (n == max) return gma_errorf("key model.stem_dilations: more than %d layers", max);
        dil[n++] = (int)d;
        s = *end ? end + 1 : end;
    }
    if (!n) return gma_errorf("key model.stem_dilations: empty (model.stem \"conv\" needs at least one layer)");
    return n;
}

static int validate_stem(const Config *c) {
    const ModelCfg *m = &c->model;
    const StemCfg *sc = stem_cfg(c);
    int classify = m->task == MODEL_CLASSIFY, dil[CFG_MAX_STEM];
    if (sc->stem == STEM_NONE) return 0;
    if (classify && (m->pooling == POOL_CLS || cls_head_cfg(c)->n_seq == 2))
        return gma_errorf("key model.stem: the convolutional stem takes one image per example and mean or max "
                          "pooling (not model.pooling \"cls\", whose slot is no pixel, or two sequences)");
    if (parse_dilations(sc->dilations, dil, CFG_MAX_STEM) < 0) return -1;
    if (!classify)
        return gma_errorf("key model.stem: only classifiers take a convolutional stem (its normalisation and 3 x 3 "
                          "taps see later tokens)");
    return 0;
}

const CfgSection stem_cfg_section = {"stem", sizeof(StemCfg), g_stem_keys, CFG_N(g_stem_keys), validate_stem, "model"};
