/* cls_head.c: the classifier heads, pooled or pair features through up to two hidden
 * layers to the logits (see cls_head.h). */
#include "nn/cls_head.h"

#include <string.h>

#include "core/common.h"
#include "nn/linear.h"
#include "nn/model_cfg.h"

void cls_head_add(ClsHead *h, ParamTable *pt, int D, int C, int pair, const ClsHeadSpec *spec) {
    static const char *nm[CLS_HEAD_MAX_HIDDEN][2] = {{"head.mlp.fc.weight", "head.mlp.fc.bias"},
                                                     {"head.mlp.fc2.weight", "head.mlp.fc2.bias"}};
    memset(h, 0, sizeof *h);
    h->pair = pair;
    h->D = D;
    h->Din = pair ? 4 * D : D;
    h->C = C;
    h->nh = spec->nh;
    h->relu = spec->relu;
    int in = h->Din;
    for (int k = 0; k < CLS_HEAD_MAX_HIDDEN; k++) h->fcw[k] = h->fcb[k] = -1;
    for (int k = 0; k < h->nh; k++) {
        h->Dh[k] = spec->Dh[k];
        h->fcw[k] = pt_add2(pt, nm[k][0], h->Dh[k], in, spec->init, spec->std, GROUP_WEIGHT);
        h->fcb[k] = pt_add1(pt, nm[k][1], h->Dh[k], INIT_ZERO, 0, GROUP_BIAS);
        h->o_fcw[k] = pt->t[h->fcw[k]].offset;
        h->o_fcb[k] = pt->t[h->fcb[k]].offset;
        in = h->Dh[k];
    }
    h->w = pt_add2(pt, "head.weight", C, in, spec->init, spec->std, GROUP_WEIGHT);
    h->b = pt_add1(pt, "head.bias", C, INIT_ZERO, 0, GROUP_BIAS);
    h->o_w = pt->t[h->w].offset;
    h->o_b = pt->t[h->b].offset;
}

/* act layout: f [B,Din] (pair only), then per hidden layer pre [B,Dh], hid [B,Dh] */
size_t cls_head_act_size(const ClsHead *h, int B) {
    size_t n = h->pair ? (size_t)B * h->Din : 0;
    for (int k = 0; k < h->nh; k++) n += 2 * (size_t)B * h->Dh[k];
    return n;
}

static real *pre_of(const ClsHead *h, real *act, int k, int B) {
    real *p = act + (h->pair ? (size_t)B * h->Din : 0);
    for (int j = 0; j < k; j++) p += 2 * (size_t)B * h->Dh[j];
    return p;
}

real *cls_head_hidden(const ClsHead *h, real *act, int k, int B) { return pre_of(h, act, k, B) + (size_t)B * h->Dh[k]; }

/* the mask of hidden layer k: drop's key with layer k in counter word 3 (bits 4..15) */
static void drop_hidden(real *x, const GmaDrop *drop, int k, int B, int W) {
    if (!drop) return;
    GmaDrop g = *drop;
    g.c3 = gma_drop_c3(g.c3 >> 16, k, (int)(g.c3 & 0xfu));
    g_ops->dropout(x, x, B, (size_t)W, &g);
}

void cls_head_forward(const ClsHead *h, real *logits, real *act, const real *pooled, const real *params, int B,
                      const GmaDrop *drop) {
    const real *x = pooled;
    if (h->pair) {
        g_ops->pair_features_forward(act, pooled, pooled + (size_t)B * h->D, B, h->D);
        x = act;
    }
    int in = h->Din;
    for (int k = 0; k < h->nh; k++) {
        real *pre = pre_of(h, act, k, B), *hid = pre + (size_t)B * h->Dh[k];
        size_t n = (size_t)B * h->Dh[k];
        linear_forward(pre, x, params + h->o_fcw[k], params + h->o_fcb[k], B, in, h->Dh[k]);
        if (h->relu) g_ops->relu_forward(hid, pre, n);
        else g_ops->gelu_forward(hid, pre, n);
        drop_hidden(hid, drop, k, B, h->Dh[k]); /* act keeps the dropped activation: the next layer's input */
        x = hid;
        in = h->Dh[k];
    }
    linear_forward(logits, x, params + h->o_w, params + h->o_b, B, in, h->C);
}

void cls_head_backward(const ClsHead *h, real *dpooled, real *grads, const real *dlogits, real *act,
                       const real *pooled, const real *params, real *scratch, int B, const GmaDrop *drop) {
    size_t total = cls_head_act_size(h, B);
    if (!total) { /* one sequence, no hidden layer: the linear head on pooled */
        linear_backward(dpooled, grads + h->o_w, grads + h->o_b, dlogits, pooled, params + h->o_w, B, h->D, h->C);
        return;
    }
    /* scratch mirrors act: df, then per layer dpre, dhid */
    g_ops->zero(scratch, sizeof(real) * total);
    const real *f = h->pair ? act : pooled;
    real *df = h->pair ? scratch : dpooled;
    int last = h->nh - 1;
    const real *xin = last >= 0 ? cls_head_hidden(h, act, last, B) : f;
    real *dxin = last >= 0 ? scratch + (cls_head_hidden(h, act, last, B) - act) : df;
    int in = last >= 0 ? h->Dh[last] : h->Din;
    linear_backward(dxin, grads + h->o_w, grads + h->o_b, dlogits, xin, params + h->o_w, B, in, h->C);
    for (int k = last; k >= 0; k--) {
        real *pre = pre_of(h, act, k, B);
        real *dpre = scratch + (pre - act), *dhid = dpre + (size_t)B * h->Dh[k];
        size_t n = (size_t)B * h->Dh[k];
        drop_hidden(dhid, drop, k, B, h->Dh[k]); /* through the mask first, then the activation */
        if (h->relu) g_ops->relu_backward(dpre, dhid, pre, n);
        else g_ops->gelu_backward(dpre, dhid, pre, n);
        const real *x = k > 0 ? cls_head_hidden(h, act, k - 1, B) : f;
        real *dx = k > 0 ? scratch + (cls_head_hidden(h, act, k - 1, B) - act) : df;
        int kin = k > 0 ? h->Dh[k - 1] : h->Din;
        linear_backward(dx, grads + h->o_fcw[k], grads + h->o_fcb[k], dpre, x, params + h->o_fcw[k], B, kin, h->Dh[k]);
    }
    if (h->pair)
        g_ops->pair_features_backward(dpooled, dpooled + (size_t)B * h->D, df, pooled, pooled + (size_t)B * h->D, B, h->D);
}

/* ---- configuration: the classifier head's keys ---- */

#define O(f) offsetof(ClsHeadCfg, f)
static const CfgKey g_head_keys[] = {
    {"key_padding_mask", CFGT_BOOL, O(key_padding_mask), 0, "true", 0, 0, NULL,
     "Classifier: mask padded keys (false: padding tokens are keys, as the LRA release's linear attentions; needs "
     "data.pad_full)."},
    {"n_classes", CFGT_INT, O(n_classes), 0, "2", 2, 100000, NULL, "Classes of the classifier head."},
    {"n_seq", CFGT_INT, O(n_seq), 0, "0", 0, 2, NULL,
     "Classifier: sequences per example, 1 or 2 (two-sequence head, retrieval); 0 = from the data."},
    {"head_dropout", CFGT_REAL, O(head_dropout), 0, "0", 0, 0.95, NULL,
     "Dropout rate on the classifier head's hidden activations (training only; the LRA release's head has none)."},
    {"head_hidden", CFGT_INT, O(head_hidden), 0, "-1", -1, 1048576, NULL,
     "Classifier head: width of its first hidden layer (0 = none; -1 = none for one sequence, model.d_ff for two)."},
    {"head_hidden2", CFGT_INT, O(head_hidden2), 0, "0", 0, 1048576, NULL,
     "Classifier head: width of a second hidden layer (0 = none; needs model.head_hidden > 0)."},
    {"head_act", CFGT_ENUM, O(head_act), 0, "gelu", 0, 0, "gelu|relu",
     "Classifier head: activation of its hidden layers."},
    {"cls_std", CFGT_REAL, O(cls_std), 0, "-1", -1, 100, NULL,
     "Std of the normal initialisation of cls_token (-1 = model.init_std, 0 = zeros)."},
    {"head_init", CFGT_ENUM, O(head_init), 0, "normal", 0, 0, "normal|xavier_uniform|lecun_normal",
     "Initialisation of the classifier head's weights (docs/model.md §1)."},
};
#undef O


static int validate_head(const Config *c) {
    const ClsHeadCfg *m = cls_head_cfg(c);
    if (m->head_hidden2 > 0 && m->head_hidden <= 0)
        return gma_errorf("key model.head_hidden2: a second hidden layer needs model.head_hidden > 0");
    if (c->model.task == MODEL_CLASSIFY && !m->key_padding_mask && !c->data.pad_full)
        return gma_errorf("key model.key_padding_mask: false makes padding content, so it needs data.pad_full true "
                          "(else an example's padding would depend on its batch)");
    return 0;
}

const CfgSection cls_head_cfg_section = {"cls_head", sizeof(ClsHeadCfg), g_head_keys, CFG_N(g_head_keys), validate_head, "model"};

const ClsHeadCfg *cls_head_cfg(const Config *c) { return cfg_section_of(c, &cls_head_cfg_section); }

ClsHeadCfg *cls_head_cfg_mut(Config *c) { return cfg_section_of_mut(c, &cls_head_cfg_section); }
