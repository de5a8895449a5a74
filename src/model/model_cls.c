/* model_cls.c: the encoder classifier's parts around the model's blocks (model_cls.h):
 * the CLS slot, the stem, pooling, the head and its loss. */
#include "model/model_cls.h"

#include <stdlib.h>
#include <string.h>

#include "nn/model_cfg.h"
#include "nn/pool.h"

#define KP(i) PT_PTR(params, pt, (i))
#define KG(i) PT_PTR(grads, pt, (i))

int clsmodel_create(ClsModel **out, const Config *c, ParamTable *pt) {
    ClsModel *k = *out = xcalloc(1, sizeof *k);
    const ClsHeadCfg *hc = cls_head_cfg(c);
    k->pool_cls = c->model.pooling == POOL_CLS;
    k->pool_max = c->model.pooling == POOL_MAX;
    k->n_seq = hc->n_seq > 0 ? hc->n_seq : 1;
    k->C = hc->n_classes;
    k->key_mask = hc->key_padding_mask;
    k->head_dropout = hc->head_dropout;
    k->cls_tok = -1;
    return stem_build(&k->stem, c, pt);
}

int clsmodel_add_head(ClsModel *k, const Config *c, ParamTable *pt, int D, int F, double init_std) {
    const ClsHeadCfg *hc = cls_head_cfg(c);
    k->D = D;
    double cstd = hc->cls_std >= 0 ? hc->cls_std : init_std;
    if (k->pool_cls) k->cls_tok = pt_add1(pt, "cls_token", D, cstd > 0 ? INIT_NORMAL : INIT_ZERO, cstd, GROUP_EMBED);
    static const InitKind head_init[] = {[HEAD_INIT_NORMAL] = INIT_NORMAL, [HEAD_INIT_XAVIER_UNIFORM] = INIT_XAVIER_UNIFORM,
                                         [HEAD_INIT_LECUN_NORMAL] = INIT_LECUN_NORMAL};
    ClsHeadSpec hs = {.relu = hc->head_act == HEAD_ACT_RELU, .std = init_std, .init = head_init[hc->head_init]};
    int h1 = hc->head_hidden >= 0 ? hc->head_hidden : k->n_seq == 2 ? F : 0;
    if (h1 > 0) hs.Dh[hs.nh++] = h1;
    if (h1 > 0 && hc->head_hidden2 > 0) hs.Dh[hs.nh++] = hc->head_hidden2;
    cls_head_add(&k->head, pt, D, k->C, k->n_seq == 2, &hs);
    if (k->stem.n && (k->pool_cls || k->n_seq != 1))
        return gma_errorf("key model.stem: the convolutional stem needs a classifier of one sequence with mean or max pooling");
    return 0;
}

size_t clsmodel_act_size(const ClsModel *k, int Bmax, int Nt, int infer) {
    size_t S = (size_t)Bmax * k->n_seq, R = S * Nt, head_act = cls_head_act_size(&k->head, Bmax);
    /* pool_w, pooled, dpooled, head act + scratch */
    return stem_act_size(&k->stem, (int)S, Nt) + R + (size_t)(2 - (infer != 0)) * (S * k->D + head_act);
}

void clsmodel_carve(ClsModel *k, real **p, int Bmax, int Nt, int infer) {
    size_t S = (size_t)Bmax * k->n_seq, R = S * Nt, head_act = cls_head_act_size(&k->head, Bmax);
    stem_carve(&k->stem, p, (int)S, Nt);
#define TAKE(n) (*p += (n), *p - (n))
    k->pool_w = TAKE(R);
    k->pooled = TAKE(S * k->D);
    k->dpooled = infer ? NULL : TAKE(S * k->D);
    k->head_act = TAKE(head_act);
    k->head_scratch = infer ? NULL : TAKE(head_act);
#undef TAKE
    k->pred = g_ops->alloc(Bmax * sizeof(int32_t));
    k->pool_arg = g_ops->alloc(S * k->D * sizeof(int32_t));
    k->pool_w_host = xcalloc(R, sizeof(real));
    k->mask_host = xcalloc(R, 1);
    k->tok_host = xcalloc(R, sizeof(int32_t));
}

void clsmodel_free(ClsModel *k) {
    if (!k) return;
    if (k->pred) g_ops->free(k->pred);
    if (k->pool_arg) g_ops->free(k->pool_arg);
    stem_free(&k->stem);
    free(k->pool_w_host);
    free(k->mask_host);
    free(k->tok_host);
    free(k);
}

int clsmodel_prepare(ClsModel *k, const int32_t *tok, const uint8_t *keymask, const int32_t *labels, int B, int N, int V) {
    int Nt = N + k->pool_cls, S = B * k->n_seq;
    for (int b = 0; b < B; b++)
        if (labels[b] < 0 || labels[b] >= k->C)
            return gma_errorf("label %d of example %d is outside the classes [0, %d)", labels[b], b, k->C);
    /* tokens and key mask with the CLS slot (token 0, real) in front */
    for (int r = 0; r < S; r++) {
        int32_t *t_r = k->tok_host + (size_t)r * Nt;
        uint8_t *k_r = k->mask_host + (size_t)r * Nt;
        if (k->pool_cls) {
            t_r[0] = 0;
            k_r[0] = 1;
        }
        for (int n = 0; n < N; n++) {
            int32_t t = tok[(size_t)r * N + n];
            if (t < 0 || t >= V)
                return gma_errorf("token id %d at sequence %d position %d is outside the vocabulary [0, %d)", t, r, n, V);
            t_r[k->pool_cls + n] = t;
            k_r[k->pool_cls + n] = keymask ? keymask[(size_t)r * N + n] != 0 : t != 0;
        }
    }
    k->n_ex = B;
    return 0;
}

const uint8_t *clsmodel_keymask(const ClsModel *k) { return k->key_mask ? k->mask_host : NULL; }

int clsmodel_embed(ClsModel *k, real *r0, const int32_t *tok, const real *wte, const real *pos, const ParamTable *pt,
                   const real *params, int S, int Nt, int training) {
    int D = k->D;
    if (k->stem.n) { /* tokens -> stem -> + positions (docs/model.md §2.1) */
        int H, W;
        if (stem_shape(&k->stem, Nt, &H, &W) != 0) return -1;
        g_ops->embed_forward(k->stem.x0, tok, wte, NULL, S, Nt, D);
        stem_forward(&k->stem, r0, pt, params, S, Nt, training);
        if (pos)
            for (int r = 0; r < S; r++) g_ops->axpy(r0 + (size_t)r * Nt * D, 1, pos, (size_t)Nt * D);
    } else
        g_ops->embed_forward(r0, tok, wte, pos, S, Nt, D);
    if (k->pool_cls) /* position 0: cls_token + pos_emb[0] */
        for (int r = 0; r < S; r++) {
            real *row = r0 + (size_t)r * Nt * D;
            g_ops->copy(row, KP(k->cls_tok), sizeof(real) * D);
            if (pos) g_ops->axpy(row, 1, pos, D);
        }
    return 0;
}

void clsmodel_embed_backward(ClsModel *k, real *dwte, real *dpos, real *dr0, real *dtmp, const int32_t *tok,
                             const ParamTable *pt, const real *params, real *grads, int S, int Nt) {
    int D = k->D;
    if (k->pool_cls)
        for (int r = 0; r < S; r++) {
            real *row = dr0 + (size_t)r * Nt * D;
            g_ops->axpy(KG(k->cls_tok), 1, row, D);
            if (dpos) g_ops->axpy(dpos, 1, row, D);
            g_ops->zero(row, sizeof(real) * D); /* keep the slot's token 0 out of tok_emb */
        }
    if (k->stem.n) {
        if (dpos)
            for (int r = 0; r < S; r++) g_ops->axpy(dpos, 1, dr0 + (size_t)r * Nt * D, (size_t)Nt * D);
        g_ops->zero(dtmp, sizeof(real) * (size_t)S * Nt * D);
        stem_backward(&k->stem, dtmp, dr0, pt, params, grads);
        g_ops->embed_backward(dwte, NULL, dtmp, tok, S, Nt, D);
    } else
        g_ops->embed_backward(dwte, dpos, dr0, tok, S, Nt, D);
}

void clsmodel_head_forward(ClsModel *k, real *logits, real *loss_rows, real *valid_rows, const real *lnf,
                           const int32_t *tgt, const real *params, const int32_t *labels, int32_t *pred_host, int B,
                           int Nt, const GmaDrop *drop, double *loss_sum, double *correct) {
    int S = B * k->n_seq, D = k->D;
    pool_weights(k->pool_w_host, k->mask_host, S, Nt, k->pool_cls ? POOL_CLS : POOL_MEAN);
    g_ops->to_device(k->pool_w, k->pool_w_host, sizeof(real) * (size_t)S * Nt);
    if (k->pool_max) g_ops->maxpool_forward(k->pooled, k->pool_arg, lnf, k->pool_w, S, Nt, D);
    else pool_forward(k->pooled, lnf, k->pool_w, S, Nt, D);
    cls_head_forward(&k->head, logits, k->head_act, k->pooled, params, B, drop);
    g_ops->xent_forward(loss_rows, valid_rows, logits, tgt, B, k->C);
    *loss_sum = g_ops->sum(loss_rows, B);
    g_ops->argmax_rows(k->pred, logits, B, k->C);
    g_ops->to_host(pred_host, k->pred, sizeof(int32_t) * B);
    *correct = 0;
    for (int b = 0; b < B; b++) *correct += pred_host[b] == labels[b];
}

void clsmodel_head_backward(ClsModel *k, real *dlnf, real *logits, const int32_t *tgt, const real *params, real *grads,
                            int B, int Nt, double scale, const GmaDrop *drop) {
    int S = B * k->n_seq, D = k->D;
    g_ops->xent_backward(logits, tgt, B, k->C, (real)scale);
    g_ops->zero(k->dpooled, sizeof(real) * (size_t)S * D);
    cls_head_backward(&k->head, k->dpooled, grads, logits, k->head_act, k->pooled, params, k->head_scratch, B, drop);
    g_ops->zero(dlnf, sizeof(real) * (size_t)S * Nt * D);
    if (k->pool_max) g_ops->maxpool_backward(dlnf, k->dpooled, k->pool_arg, S, Nt, D);
    else pool_backward(dlnf, k->dpooled, k->pool_w, S, Nt, D);
}
