/* model_cross.c: the encoder-decoder of cross.mixer gma | sdpa (model_cross.h). */
#include "model/model_cross.h"

#include <stdlib.h>
#include <string.h>

#include "nn/params.h"

#define XP(i) PT_PTR(params, x->pt, (i))
#define XG(i) PT_PTR(grads, x->pt, (i))

/* a LayerNorm's weight (ones) and bias (zeros), named PREFIX.weight and PREFIX.bias */
static void ln_params(ParamTable *pt, const char *prefix, int D, int *w, int *b) {
    char name[160];
    snprintf(name, sizeof name, "%s.weight", prefix);
    *w = pt_add1(pt, name, D, INIT_ONE, 0, GROUP_NORM);
    snprintf(name, sizeof name, "%s.bias", prefix);
    *b = pt_add1(pt, name, D, INIT_ZERO, 0, GROUP_BIAS);
}

XModel *xmodel_build(const Config *c, ParamTable *pt, int D, int L) {
    const CrossCfg *cc = cross_cfg(c);
    if (cc->mixer == CROSS_NONE) return NULL;
    XModel *x = xcalloc(1, sizeof *x);
    x->kind = cc->mixer;
    x->M = cc->ctx_len;
    x->own_pos = cc->query_pos == CROSS_POS_OWN;
    x->E = cc->enc_layers;
    x->L = L;
    x->D = D;
    x->pt = pt;
    x->enc = xcalloc((size_t)GMA_MAX(x->E, 1), sizeof(XEnc));
    x->dec = xcalloc((size_t)x->L, sizeof(XDec));
    char name[128];
    for (int l = 0; l < x->E; l++) {
        XEnc *e = &x->enc[l];
        snprintf(name, sizeof name, "cross.enc.%d.ln", l);
        ln_params(pt, name, D, &e->lnw, &e->lnb);
        snprintf(name, sizeof name, "cross.enc.%d.attn", l);
        e->att = cross_create(c, cc->enc_mixer == CROSS_ENC_SAME ? x->kind : cc->enc_mixer, cc->n_components, pt, name);
        e->att->causal = cc->enc_causal;
    }
    ln_params(pt, "cross.enc.ln_f", D, &x->lnfw, &x->lnfb);
    for (int l = 0; l < x->L; l++) {
        XDec *d = &x->dec[l];
        snprintf(name, sizeof name, "blocks.%d.ln3", l);
        ln_params(pt, name, D, &d->lnw, &d->lnb);
        snprintf(name, sizeof name, "blocks.%d.cross", l);
        d->att = cross_create(c, x->kind, cc->n_components, pt, name);
    }
    return x;
}

/* The buffers of Bmax windows of up to Nmax tokens, one walk for the plan and the
 * allocation: with take 0 only their reals are counted (xmodel_act_size), with take 1 they
 * are allocated too. Returns the reals. */
static size_t xmodel_walk(XModel *x, int Bmax, int Nmax, int take) {
    size_t D = x->D, RM = (size_t)Bmax * x->M, RT = (size_t)Bmax * Nmax, scr = 0, total = 0;
    int Nq = GMA_MAX(Nmax - x->M, 1);
#define AL(n) (total += (n) + 1, take ? (real *)g_ops->alloc(sizeof(real) * ((n) + 1)) : NULL)
    if (take) x->e = xcalloc((size_t)x->E + 1, sizeof(real *));
    for (int l = 0; l <= x->E; l++) {
        real *p = AL(RM * D);
        if (take) x->e[l] = p;
    }
    for (int l = 0; l < x->E; l++) {
        XEnc *e = &x->enc[l], t;
        if (!take) e = &t;
        e->ln = AL(RM * D), e->mean = AL(RM), e->rstd = AL(RM);
        e->act = AL(cross_act_size(x->enc[l].att, Bmax, x->M, x->M));
        scr = GMA_MAX(scr, cross_scratch_size(x->enc[l].att, Bmax, x->M, x->M));
    }
    XModel t = *x;
    XModel *w = take ? x : &t;
    w->ctx = AL(RM * D), w->ctx_mean = AL(RM), w->ctx_rstd = AL(RM);
    w->dctx = AL(RM * D), w->de = AL(RM * D), w->dtmp = AL(RM * D);
    w->tmp = AL(RT * D);
    for (int l = 0; l < x->L; l++) {
        XDec *d = &x->dec[l], dt;
        if (!take) d = &dt;
        const Cross *att = x->dec[l].att;
        d->xmid = AL(RT * D), d->ln = AL(RT * D), d->mean = AL(RT), d->rstd = AL(RT), d->out = AL(RT * D);
        d->act = AL(cross_act_size(att, Bmax, Nq, x->M));
        scr = GMA_MAX(scr, cross_scratch_size(att, Bmax, Nq, x->M));
        /* decoding: the memory of one context, then steps of up to RT rows */
        scr = GMA_MAX(scr, cross_decode_scratch(att, 1, x->M));
        scr = GMA_MAX(scr, cross_decode_scratch(att, (int)RT, 1));
    }
    w->scratch = AL(scr);
#undef AL
    if (take) x->tq_host = xcalloc(RT + 1, sizeof(int32_t));
    return total + (RT + 1) * sizeof(int32_t) / sizeof(real);
}

void xmodel_alloc(XModel *x, int Bmax, int Nmax) {
    if (x) xmodel_walk(x, Bmax, Nmax, 1);
}

size_t xmodel_act_size(const XModel *x, int Bmax, int Nmax) {
    return x ? xmodel_walk((XModel *)x, Bmax, Nmax, 0) : 0;
}

void xmodel_free(XModel *x) {
    if (!x) return;
    if (x->e) {
        for (int l = 0; l <= x->E; l++) g_ops->free(x->e[l]);
        for (int l = 0; l < x->E; l++) {
            XEnc *e = &x->enc[l];
            g_ops->free(e->ln), g_ops->free(e->mean), g_ops->free(e->rstd), g_ops->free(e->act);
        }
        for (int l = 0; l < x->L; l++) {
            XDec *d = &x->dec[l];
            g_ops->free(d->xmid), g_ops->free(d->ln), g_ops->free(d->mean), g_ops->free(d->rstd);
            g_ops->free(d->out), g_ops->free(d->act);
        }
        g_ops->free(x->ctx), g_ops->free(x->ctx_mean), g_ops->free(x->ctx_rstd);
        g_ops->free(x->dctx), g_ops->free(x->de), g_ops->free(x->dtmp), g_ops->free(x->tmp);
        g_ops->free(x->scratch);
    }
    if (x->mem) g_ops->free(x->mem);
    for (int l = 0; l < x->E; l++) cross_destroy(x->enc[l].att);
    for (int l = 0; l < x->L; l++) cross_destroy(x->dec[l].att);
    free(x->e), free(x->enc), free(x->dec), free(x->tq_host);
    free(x);
}

int xmodel_targets(XModel *x, const int32_t *tgt, int B, int T) {
    int N = T - x->M;
    if (N < 1)
        return gma_errorf("a window of %d tokens holds no query after the context of cross.ctx_len %d", T, x->M);
    for (int b = 0; b < B; b++) memcpy(x->tq_host + (size_t)b * N, tgt + (size_t)b * T + x->M, sizeof(int32_t) * N);
    return N;
}

/* x->e[0] (embedded context rows, B sequences) -> C */
static void encoder_forward(XModel *x, const real *params, int B) {
    int R = B * x->M, D = x->D;
    for (int l = 0; l < x->E; l++) {
        XEnc *e = &x->enc[l];
        g_ops->layernorm_forward(e->ln, e->mean, e->rstd, x->e[l], XP(e->lnw), XP(e->lnb), R, D);
        cross_forward(e->att, x->e[l + 1], e->ln, e->ln, params, e->act, x->scratch, B, x->M, x->M);
        g_ops->axpy(x->e[l + 1], 1, x->e[l], (size_t)R * D);
    }
    g_ops->layernorm_forward(x->ctx, x->ctx_mean, x->ctx_rstd, x->e[x->E], XP(x->lnfw), XP(x->lnfb), R, D);
}

void xmodel_encode(XModel *x, const real *params, real *r0, int B, int T) {
    int M = x->M, N = T - M;
    size_t D = x->D;
    for (int b = 0; b < B; b++) {
        g_ops->copy(x->e[0] + (size_t)b * M * D, r0 + (size_t)b * T * D, sizeof(real) * M * D);
        g_ops->copy(x->tmp + (size_t)b * N * D, r0 + ((size_t)b * T + M) * D, sizeof(real) * N * D);
    }
    g_ops->copy(r0, x->tmp, sizeof(real) * B * N * D);
    x->B = B, x->T = T;
    encoder_forward(x, params, B);
}

void xmodel_block_forward(XModel *x, const real *params, int l, const real *resid, real *mix, int B, int N,
                          int decoding) {
    XDec *d = &x->dec[l];
    int R = B * N, D = x->D;
    g_ops->add_layernorm_forward(d->xmid, d->ln, d->mean, d->rstd, resid, mix, XP(d->lnw), XP(d->lnb), R, D);
    if (decoding)
        cross_step(d->att, d->out, d->ln, params, x->mem + (size_t)l * x->mem_B * cross_memory_size(d->att, x->M), B,
                   x->M, x->scratch);
    else
        cross_forward(d->att, d->out, d->ln, x->ctx, params, d->act, x->scratch, B, N, x->M);
    g_ops->axpy(mix, 1, d->out, (size_t)R * D);
}

void xmodel_block_backward(XModel *x, const real *params, real *grads, int l, real *dres, real *dtmp, int B, int N) {
    XDec *d = &x->dec[l];
    int R = B * N, D = x->D;
    g_ops->zero(dtmp, sizeof(real) * (size_t)R * D);
    cross_backward(d->att, dtmp, x->dctx, dres, d->ln, x->ctx, params, grads, d->act, x->scratch, B, N, x->M);
    g_ops->layernorm_backward(dres, XG(d->lnw), XG(d->lnb), dtmp, d->xmid, XP(d->lnw), d->mean, d->rstd, R, D);
}

void xmodel_backward_begin(XModel *x) {
    g_ops->zero(x->dctx, sizeof(real) * (size_t)x->B * x->M * x->D);
}

const real *xmodel_backward_end(XModel *x, const real *params, real *grads, const real *dq) {
    int B = x->B, T = x->T, M = x->M, N = T - M, R = B * M;
    size_t D = x->D;
    g_ops->zero(x->de, sizeof(real) * R * D);
    g_ops->layernorm_backward(x->de, XG(x->lnfw), XG(x->lnfb), x->dctx, x->e[x->E], XP(x->lnfw), x->ctx_mean,
                              x->ctx_rstd, R, (int)D);
    for (int l = x->E - 1; l >= 0; l--) { /* e_{l+1} = e_l + A(LN(e_l)): de passes, and the attention's path */
        XEnc *e = &x->enc[l];
        g_ops->zero(x->dtmp, sizeof(real) * R * D);
        cross_backward(e->att, x->dtmp, x->dtmp, x->de, e->ln, e->ln, params, grads, e->act, x->scratch, B, M, M);
        g_ops->layernorm_backward(x->de, XG(e->lnw), XG(e->lnb), x->dtmp, x->e[l], XP(e->lnw), e->mean, e->rstd, R,
                                  (int)D);
    }
    for (int b = 0; b < B; b++) { /* the window's rows again: context, then queries */
        g_ops->copy(x->tmp + (size_t)b * T * D, x->de + (size_t)b * M * D, sizeof(real) * M * D);
        g_ops->copy(x->tmp + ((size_t)b * T + M) * D, dq + (size_t)b * N * D, sizeof(real) * N * D);
    }
    return x->tmp;
}

void xmodel_memory(XModel *x, const real *params, int B) {
    int M = x->M;
    encoder_forward(x, params, 1);
    size_t ms = x->L ? cross_memory_size(x->dec[0].att, M) : 0;
    if (x->mem) g_ops->free(x->mem);
    x->mem = g_ops->alloc(sizeof(real) * ((size_t)x->L * B * ms + 1));
    x->mem_B = B;
    for (int l = 0; l < x->L; l++) {
        real *mem = x->mem + (size_t)l * B * ms;
        cross_memory(x->dec[l].att, mem, x->ctx, params, 1, M, x->scratch);
        for (int q = 1; q < B; q++) g_ops->copy(mem + q * ms, mem, sizeof(real) * ms);
    }
}
