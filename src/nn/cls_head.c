/* cls_head.c: linear and two-sequence classifier heads (see cls_head.h). */
#include "nn/cls_head.h"

#include "nn/linear.h"

void cls_head_add(ClsHead *h, ParamTable *pt, int D, int Dh, int C, int pair, double std) {
    h->pair = pair;
    h->D = D;
    h->Dh = pair ? Dh : D;
    h->C = C;
    h->fcw = h->fcb = -1;
    h->o_fcw = h->o_fcb = 0;
    if (pair) {
        h->fcw = pt_add2(pt, "head.mlp.fc.weight", Dh, 4 * D, INIT_NORMAL, std, GROUP_WEIGHT);
        h->fcb = pt_add1(pt, "head.mlp.fc.bias", Dh, INIT_ZERO, 0, GROUP_BIAS);
        h->o_fcw = pt->t[h->fcw].offset;
        h->o_fcb = pt->t[h->fcb].offset;
    }
    h->w = pt_add2(pt, "head.weight", C, h->Dh, INIT_NORMAL, std, GROUP_WEIGHT);
    h->b = pt_add1(pt, "head.bias", C, INIT_ZERO, 0, GROUP_BIAS);
    h->o_w = pt->t[h->w].offset;
    h->o_b = pt->t[h->b].offset;
}

size_t cls_head_act_size(const ClsHead *h, int B) { return h->pair ? (size_t)B * (4 * h->D + 2 * h->Dh) : 0; }

/* act layout (pair): f [B,4D], pre [B,Dh], hid [B,Dh] */
void cls_head_forward(const ClsHead *h, real *logits, real *act, const real *pooled, const real *params, int B) {
    if (!h->pair) {
        linear_forward(logits, pooled, params + h->o_w, params + h->o_b, B, h->D, h->C);
        return;
    }
    int D = h->D, Dh = h->Dh;
    real *f = act, *pre = f + (size_t)B * 4 * D, *hid = pre + (size_t)B * Dh;
    g_ops->pair_features_forward(f, pooled, pooled + (size_t)B * D, B, D);
    linear_forward(pre, f, params + h->o_fcw, params + h->o_fcb, B, 4 * D, Dh);
    g_ops->gelu_forward(hid, pre, (size_t)B * Dh);
    linear_forward(logits, hid, params + h->o_w, params + h->o_b, B, Dh, h->C);
}

void cls_head_backward(const ClsHead *h, real *dpooled, real *grads, const real *dlogits, real *act,
                       const real *pooled, const real *params, real *scratch, int B) {
    if (!h->pair) {
        linear_backward(dpooled, grads + h->o_w, grads + h->o_b, dlogits, pooled, params + h->o_w, B, h->D, h->C);
        return;
    }
    int D = h->D, Dh = h->Dh;
    real *f = act, *pre = f + (size_t)B * 4 * D, *hid = pre + (size_t)B * Dh;
    real *df = scratch, *dpre = df + (size_t)B * 4 * D, *dhid = dpre + (size_t)B * Dh;
    g_ops->zero(scratch, sizeof(real) * cls_head_act_size(h, B));
    linear_backward(dhid, grads + h->o_w, grads + h->o_b, dlogits, hid, params + h->o_w, B, Dh, h->C);
    g_ops->gelu_backward(dpre, dhid, pre, (size_t)B * Dh);
    linear_backward(df, grads + h->o_fcw, grads + h->o_fcb, dpre, f, params + h->o_fcw, B, 4 * D, Dh);
    g_ops->pair_features_backward(dpooled, dpooled + (size_t)B * D, df, pooled, pooled + (size_t)B * D, B, D);
}
