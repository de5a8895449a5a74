/* gma_window.c: the exact local window of a GMA layer (gma.window, gma_window.h, docs/model.md
 * §3.11). The window path is the tiled sliding-window attention of sdpa.window
 * (g_ops->attn_forward / attn_backward with window W, O(N W)); decoding keeps its ring of
 * min(W, Nmax) key/value rows (attn_step), prefill fills the ring from the forward's last
 * rows (attn_ring_prefill); the mix is the per-head gate of mixer "gated" (head_gate.h). */
#include "nn/mixers/gma_window.h"

#include <math.h>
#include <stdlib.h>

#include "nn/mixers/gma_core.h"
#include "nn/mixers/head_gate.h"

typedef struct GmaWindowCfg {
    int window;   /* W (0 = none) */
    double share; /* the window path's initial share g_h of every head */
} GmaWindowCfg;
#define O(f) offsetof(GmaWindowCfg, f)
static const CfgKey g_keys[] = {
    {"window", CFGT_INT, O(window), 0, "0", 0, 16777216, NULL,
     "An exact local softmax window of W keys inside each gma layer, gated per head (0 = none; docs/model.md "
     "§3.11)."},
    {"window_share", CFGT_REAL, O(share), 0, "0.5", 1e-6, 0.999999, NULL,
     "With gma.window: the window path's initial share of each head's output (docs/model.md §3.11)."},
};
#undef O

/* its refusals (the mixers and writes it is built for) are gma.c's, which owns them */
const CfgSection gma_window_section = {"gma_window", sizeof(GmaWindowCfg), g_keys, CFG_N(g_keys), NULL, "gma"};
static const GmaWindowCfg *wcfg(const Config *c) { return cfg_section_of(c, &gma_window_section); }
int gma_window_of(const Config *c) { return wcfg(c)->window; }

struct GmaWindow {
    int W;        /* the window */
    int gate;     /* PREFIX.gma.window_gate [H], index into the table */
    real *g;      /* host: g_h of the last call, then the gate backward's work (HEAD_GATE_HOST) */
    double scale; /* 1 / sqrt(d) */
};

int gma_window_need_ops(const Config *c) {
    if (gma_window_of(c) == 0) return 0;
    return NEED_OP("gma", attn_forward) || NEED_OP("gma", attn_backward) || NEED_OP("gma", attn_step) ? -1 : 0;
}

GmaWindow *gma_window_create(Mixer *m, const Config *c, ParamTable *pt, const char *prefix) {
    int W = gma_window_of(c);
    if (W == 0) return NULL;
    GmaWindow *w = xcalloc(1, sizeof *w);
    double s = wcfg(c)->share;
    char name[128];
    snprintf(name, sizeof name, "%s.gma.window_gate", prefix);
    w->W = W;
    w->gate = pt_add1(pt, name, m->H, INIT_CONST, log(s / (1 - s)), GROUP_BIAS);
    w->g = xcalloc(HEAD_GATE_HOST(m->H), sizeof(real));
    w->scale = 1.0 / sqrt((double)m->d);
    return w;
}

void gma_window_destroy(GmaWindow *w) {
    if (!w) return;
    free(w->g);
    free(w);
}

/* act: ohw [B,H,N,d], lse [B,H,N], kbias [B,N], ohm [B,H,N,d]; scratch: doh_w [B,H,N,d], 2 H */
typedef struct WBlocks { real *ohw, *lse, *kb, *ohm; } WBlocks;
static WBlocks wcarve(const Mixer *m, int B, int N, const real *wact) {
    size_t hs = (size_t)B * N * m->D;
    WBlocks k;
    k.ohw = (real *)wact;
    k.lse = k.ohw + hs;
    k.kb = k.lse + (size_t)B * m->H * N;
    k.ohm = k.kb + (size_t)B * N;
    return k;
}
size_t gma_window_act(const Mixer *m, int B, int N) {
    return 2 * (size_t)B * N * m->D + (size_t)B * m->H * N + (size_t)B * N;
}
size_t gma_window_scratch(const Mixer *m, int B, int N) { return (size_t)B * N * m->D + 2 * (size_t)m->H; }
double gma_window_flops(const GmaWindow *w, const Mixer *m, int B, int N, int causal) {
    return attn_tile_flops((double)B * m->H, N, m->d, causal, w->W);
}
static int ring_rows(const GmaWindow *w, int Nmax) { return GMA_MIN(w->W, Nmax); }
size_t gma_window_state(const GmaWindow *w, const Mixer *m, int Nmax) {
    return attn_decode_state(m->H, ring_rows(w, Nmax), m->d);
}

static const real *gates(GmaWindow *w, const Mixer *m, const real *params) {
    return head_gate_values(w->g, params + m->pt->t[w->gate].offset, m->H);
}

const real *gma_window_forward(GmaWindow *w, const Mixer *m, const MixerCtx *c, const real *params, const real *qh,
                               const real *kh, const real *vh, const real *ohg, real *wact) {
    int B = c->B, N = c->N;
    WBlocks k = wcarve(m, B, N, wact);
    if (c->keymask) key_bias(k.kb, c->keymask, B, N);
    g_ops->attn_forward(k.ohw, k.lse, qh, kh, vh, c->keymask ? k.kb : NULL, B, m->H, N, m->d, c->causal, w->W,
                        (real)w->scale, NULL);
    head_gate_mix(k.ohm, k.ohw, ohg, gates(w, m, params), B, m->H, (size_t)N * m->d, 1, 1);
    return k.ohm;
}

const real *gma_window_mix(const Mixer *m, int B, int N, const real *wact) { return wcarve(m, B, N, wact).ohm; }

void gma_window_backward_split(GmaWindow *w, const Mixer *m, const MixerCtx *c, const real *params, real *grads,
                               real *doh, const real *ohg, const real *wact, real *wscr) {
    int B = c->B, N = c->N, H = m->H;
    size_t L = (size_t)N * m->d, hs = (size_t)B * N * m->D;
    WBlocks k = wcarve(m, B, N, wact);
    const real *g = gates(w, m, params);
    /* dL/da_h = g (1 - g) <doh_h, ohw_h - ohg_h> */
    head_gate_backward(grads + m->pt->t[w->gate].offset, g, doh, k.ohw, ohg, wscr + hs, w->g + H, B, H, L);
    head_gate_mix(wscr, doh, NULL, g, B, H, L, 1, 0); /* the window path's g doh */
    head_gate_mix(doh, NULL, doh, g, B, H, L, 0, 1);  /* the GMA path's (1 - g) doh, in place */
}

void gma_window_backward_attn(GmaWindow *w, const Mixer *m, const MixerCtx *c, real *dq, real *dk, real *dv,
                              const real *qh, const real *kh, const real *vh, const real *wact, const real *wscr) {
    WBlocks k = wcarve(m, c->B, c->N, wact);
    g_ops->attn_backward(dq, dk, dv, wscr, k.ohw, k.lse, qh, kh, vh, c->keymask ? k.kb : NULL, c->B, m->H, c->N, m->d,
                         c->causal, w->W, (real)w->scale, NULL);
}

const real *gma_window_step(GmaWindow *w, const Mixer *m, const real *params, real *state, size_t ss, const real *qh,
                            const real *kh, const real *vh, const real *ohg, int B, int pos, int Nmax, real *wact) {
    WBlocks k = wcarve(m, B, 1, wact);
    g_ops->attn_step(k.ohw, state, ss, qh, kh, vh, B, m->H, m->d, ring_rows(w, Nmax), pos, (real)w->scale);
    head_gate_mix(k.ohm, k.ohw, ohg, gates(w, m, params), B, m->H, (size_t)m->d, 1, 1);
    return k.ohm;
}

void gma_window_prefill(const GmaWindow *w, const Mixer *m, const MixerCtx *c, const real *kh, const real *vh,
                        real *state, size_t ss, int Nmax) {
    attn_ring_prefill(state, ss, kh, vh, c->B, m->H, c->N, m->d, ring_rows(w, Nmax));
}
