/* cls_head.c: the classifier heads, pooled or pair features through up to two hidden
 * layers to the logits (see cls_head.h). */
#include "nn/cls_head.h"

#include <string.h>

#include "nn/linear.h"

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
