/* mixer.c: the registry of sequence mixers (one line per mixer: g_mixers), what it
 * installs in the configuration (names, sections, validation), and the Q/K/V/O
 * projections that the attention-style mixers share. */
#include "nn/mixers/mixer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/linear.h"
#include "nn/mixers/conv_state.h"
#include "nn/mixers/linear_core.h"

/* The registry, in the order of the configuration reference: one line per mixer. */
#define MIXERS(X) X(gma) X(sdpa) X(sdpa_ref) X(linear) X(performer) X(linformer) X(mamba) X(baseconv) X(auto) X(gated) X(gdn)

#define DECLARE(n) extern const MixerVT mixer_##n;
MIXERS(DECLARE)
#undef DECLARE
#define ENTRY(n) &mixer_##n,
static const MixerVT *const g_mixers[] = {MIXERS(ENTRY)};
#undef ENTRY
#define N_MIXERS (int)(sizeof g_mixers / sizeof g_mixers[0])

const MixerVT *mixer_find(const char *name) {
    for (int i = 0; i < N_MIXERS; i++)
        if (!strcmp(g_mixers[i]->name, name)) return g_mixers[i];
    return NULL;
}

const MixerVT *mixer_of_layer(const Config *c, int l) {
    int id = c->model.mixer.id[c->model.mixer.n == 1 ? 0 : l]; /* mixer_names()'s order is g_mixers' */
    return id < N_MIXERS ? g_mixers[id] : NULL;
}

/* the names of the registry's mixers (all, or those with short_conv_ok) joined by sep into buf */
static const char *join_names(char *buf, const char *sep, int short_conv_only) {
    if (!buf[0])
        for (int i = 0; i < N_MIXERS; i++)
            if (!short_conv_only || g_mixers[i]->short_conv_ok) {
                if (buf[0]) strcat(buf, sep);
                strcat(buf, g_mixers[i]->name);
            }
    return buf;
}

const char *mixer_names(void) {
    static char buf[256];
    return join_names(buf, "|", 0);
}

CfgChoiceList mixer_choice_list(void) { return (CfgChoiceList){"model.mixer", "mixer", mixer_names()}; }

/* model.attn_bias, model.short_conv: the attention projections' own keys (attn_proj_add), a
 * stored section (prefix model) */
typedef struct AttnProjCfg {
    int bias;
    int short_conv; /* K of the short convolutions on q, k, v (0 = none) */
} AttnProjCfg;
static const CfgKey g_attn_keys[] = {
    {"attn_bias", CFGT_BOOL, offsetof(AttnProjCfg, bias), 0, "true", 0, 0, NULL,
     "Biases on the attention projections q, k, v and o (false: none, as LRA)."},
    {"short_conv", CFGT_INT, offsetof(AttnProjCfg, short_conv), 0, "0", 0, 64, NULL,
     "Kernel K of a causal depthwise convolution with SiLU on q, k, v (0 = none; gma, sdpa, sdpa_ref, linear, "
     "performer; docs/model.md §3.9)."},
};
static const CfgSection g_attn_section = {"attn_proj", sizeof(AttnProjCfg), g_attn_keys, CFG_N(g_attn_keys), NULL, "model"};
static const AttnProjCfg *attn_cfg(const Config *c) { return cfg_section_of(c, &g_attn_section); }

/* "gma, sdpa, ...": the mixers that take model.short_conv */
static const char *short_conv_mixers(void) {
    static char buf[256];
    return join_names(buf, ", ", 1);
}

/* cfg_validate's checks of the layers' mixers: direction, then each mixer's own keys */
static int validate_layers(const Config *c) {
    int causal = cfg_causal(c), takes = 0, drops = 0;
    for (int l = 0; l < c->model.n_layers; l++) {
        const MixerVT *vt = mixer_of_layer(c, l);
        if (!vt) return gma_errorf("key model.mixer: unknown mixer \"%s\" (known: %s)", cfg_layer_mixer(c, l), mixer_names());
        if (causal && !vt->causal_ok)
            return gma_errorf("key model.mixer: mixer \"%s\" (layer %d) cannot run causally (the model is causal: model.causal or model.task \"lm\"); use a causal mixer", vt->name, l);
        if (!causal && !vt->bidir_ok)
            return gma_errorf("key model.mixer: mixer \"%s\" (layer %d) cannot run bidirectionally (model.causal or model.task \"classify\")", vt->name, l);
        drops += vt->attn_dropout_ok;
        if (attn_cfg(c)->short_conv > 0 && !vt->short_conv_ok && !vt->own_conv)
            return gma_errorf("key model.short_conv: %d, but mixer \"%s\" (layer %d) does not take the short convolutions; "
                              "set 0 (the mixers that take it: %s)", attn_cfg(c)->short_conv, vt->name, l, short_conv_mixers());
        takes += vt->short_conv_ok;
        if (vt->validate && vt->validate(c) != 0) return -1;
    }
    /* attention dropout acts in the layers with attention probabilities (a hybrid's sdpa
     * layer, as Zoology's MHA inside its Hybrid); a model with none is refused, naming the first */
    const MixerVT *v0 = mixer_of_layer(c, 0);
    if (c->model.attn_dropout > 0 && !drops)
        return gma_errorf("key model.attn_dropout: %g, but mixer \"%s\" (layer 0) %s; set it to 0 (model.dropout still applies)",
                          c->model.attn_dropout, v0->name, v0->attn_dropout_why ? v0->attn_dropout_why : "has no attention probabilities to drop");
    if (attn_cfg(c)->short_conv > 0 && !takes)
        return gma_errorf("key model.short_conv: %d, but no layer's mixer takes it (%s keeps its own convolution); set 0 "
                          "(the mixers that take it: %s)", attn_cfg(c)->short_conv, cfg_layer_mixer(c, 0), short_conv_mixers());
    return 0;
}

/* no keys of its own: the checks of each layer's mixer, after the mixers' sections */
static const CfgSection g_layers_section = {NULL, 0, NULL, 0, validate_layers, NULL};

int mixer_config_sections(const CfgSection **out, int max) {
    int n = 0;
    if (n < max) out[n++] = &g_attn_section;
    if (n < max) out[n++] = &linear_core_section; /* gma.eps, gma.chunk: read by gma, linear and performer */
    if (n < max) out[n++] = &auto_threshold_section; /* model.auto_threshold (auto.c) */
    if (n < max) out[n++] = &gma_window_section;     /* gma.window, gma.window_share (gma_window.c) */
    for (int i = 0; i < N_MIXERS; i++)
        if (g_mixers[i]->config && n < max) out[n++] = g_mixers[i]->config;
    if (n < max) out[n++] = &g_layers_section;
    return n;
}

Mixer *mixer_new(const MixerVT *vt, const Config *c, ParamTable *pt) {
    Mixer *m = xcalloc(1, sizeof *m);
    m->vt = vt;
    m->pt = pt;
    m->Dm = c->model.d_model;
    m->D = cfg_qkv_dim(c);
    m->H = c->model.n_heads;
    m->d = m->D / m->H;
    return m;
}

void attn_proj_add(Mixer *m, const Config *c, ParamTable *pt, const char *prefix) {
    static const char *nm[] = {"q", "k", "v", "o"};
    int E = m->D, Dm = m->Dm, xavier = c->model.dense_init == DENSE_INIT_XAVIER_UNIFORM;
    double std = c->model.init_std, ostd = std / sqrt(2.0 * c->model.n_layers);
    char name[128];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "%s.%s.weight", prefix, nm[i]);
        /* q, k, v: [E, Dm]; o: [Dm, E] */
        m->p[2 * i] = pt_add2(pt, name, i == 3 ? Dm : E, i == 3 ? E : Dm, xavier ? INIT_XAVIER_UNIFORM : INIT_NORMAL,
                              i == 3 ? ostd : std, GROUP_WEIGHT);
        snprintf(name, sizeof name, "%s.%s.bias", prefix, nm[i]);
        m->p[2 * i + 1] = attn_cfg(c)->bias ? pt_add1(pt, name, i == 3 ? Dm : E, INIT_ZERO, 0, GROUP_BIAS) : -1;
    }
    /* the short convolutions [E, K]: PyTorch's nn.Conv1d default for a depthwise kernel,
     * U(-1/sqrt(K), 1/sqrt(K)) (fan_in K; docs/model.md 3.9); no bias, as FLA's default */
    int K = m->vt && m->vt->short_conv_ok ? attn_cfg(c)->short_conv : 0; /* cross.c: no vt, none */
    m->conv_k = K;
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "%s.%s_conv.weight", prefix, nm[i]);
        m->conv_p[i] = K > 0 ? pt_add2(pt, name, E, K, INIT_UNIFORM, 1 / sqrt((double)K), GROUP_WEIGHT) : -1;
    }
}

/* a projection's bias, NULL without (model.attn_bias false) */
static real *proj_bias(const Mixer *m, const real *base, int i) { return m->p[i] >= 0 ? (real *)MP(m, base, i) : NULL; }

void attn_proj_qkv(const Mixer *m, const real *params, const real *h, real *qh, real *kh, real *vh, real *tmp, int B,
                   int N) {
    int R = B * N;
    real *outs[3] = {qh, kh, vh};
    for (int i = 0; i < 3; i++) {
        linear_forward(tmp, h, MP(m, params, 2 * i), proj_bias(m, params, 2 * i + 1), R, m->Dm, m->D);
        g_ops->split_heads(outs[i], tmp, B, N, m->H, m->d);
    }
}

void attn_proj_out(const Mixer *m, const real *params, real *y, const real *oh, real *tmp, int B, int N) {
    g_ops->merge_heads(tmp, oh, B, N, m->H, m->d);
    linear_forward(y, tmp, MP(m, params, AP_WO), proj_bias(m, params, AP_BO), B * N, m->D, m->Dm);
}

void attn_proj_out_backward(const Mixer *m, const real *params, real *grads, real *doh, const real *dy, const real *oh,
                            real *tmp, real *tmp2, int B, int N) {
    int R = B * N;
    g_ops->merge_heads(tmp, oh, B, N, m->H, m->d);
    linear_backward_set(tmp2, MP(m, grads, AP_WO), proj_bias(m, grads, AP_BO), dy, tmp, MP(m, params, AP_WO), R, m->D,
                        m->Dm);
    g_ops->split_heads(doh, tmp2, B, N, m->H, m->d); /* tmp is read: doh may be tmp */
}

void attn_proj_qkv_backward(const Mixer *m, const real *params, real *grads, real *dh, const real *h, const real *dqh,
                            const real *dkh, const real *dvh, real *tmp, int B, int N) {
    int R = B * N;
    const real *ds[3] = {dqh, dkh, dvh};
    for (int i = 0; i < 3; i++) {
        g_ops->merge_heads(tmp, ds[i], B, N, m->H, m->d);
        linear_backward(dh, MP(m, grads, 2 * i), proj_bias(m, grads, 2 * i + 1), tmp, h, MP(m, params, 2 * i), R, m->Dm,
                        m->D);
    }
}

/* ---- the short convolutions on q, k, v (mixer.h; docs/model.md 3.9) ----
 * The backward needs each projection's x and conv(x) (the SiLU's input). They are kept in
 * the act block pa rather than recomputed from h: a recomputation costs three more
 * [B N, Dm] x [Dm, D] products in every backward and two more [B*N*D] scratch buffers in
 * every mixer, while pa is one block each mixer adds to its act, 6 B N D reals, only when
 * model.short_conv is on. */
/* the weights [D, K] of convolution i (q, k, v) in the buffer base (parameters or gradients) */
static real *conv_w(const Mixer *m, const real *base, int i) { return (real *)base + m->pt->t[m->conv_p[i]].offset; }

size_t attn_proj_act_size(const Mixer *m, int B, int N) {
    if (!m->conv_k) return 0;
    return GMA_MAX(6 * (size_t)B * N * m->D, conv_state_scratch(B, m->conv_k, m->D));
}

real *attn_proj_act(const Mixer *m, const real *act, int B, int N) {
    return (real *)act + m->vt->act_size(m, B, N) - attn_proj_act_size(m, B, N);
}

size_t attn_proj_state_size(const Mixer *m) { return m->conv_k ? 3 * (size_t)(m->conv_k - 1) * m->D : 0; }

void attn_proj_qkv_conv(const Mixer *m, const MixerCtx *c, const real *params, const real *h, real *qh, real *kh,
                        real *vh, real *pa, real *tmp) {
    int B = c->B, N = c->N, K = m->conv_k;
    if (!K) {
        attn_proj_qkv(m, params, h, qh, kh, vh, tmp, B, N);
        return;
    }
    size_t R = (size_t)B * N, RD = R * m->D;
    real *outs[3] = {qh, kh, vh};
    for (int i = 0; i < 3; i++) {
        real *x = pa + i * RD, *cx = pa + (3 + i) * RD; /* x [B,N,D], conv(x) [B,N,D] */
        linear_forward(x, h, MP(m, params, 2 * i), proj_bias(m, params, 2 * i + 1), (int)R, m->Dm, m->D);
        mask_rows(x, c->keymask, B, 1, N, m->D); /* padded rows enter as zeros */
        g_ops->conv1d_causal_forward(cx, x, conv_w(m, params, i), NULL, B, N, m->D, K);
        g_ops->silu_forward(tmp, cx, RD);
        g_ops->split_heads(outs[i], tmp, B, N, m->H, m->d);
    }
}

void attn_proj_qkv_conv_backward(const Mixer *m, const MixerCtx *c, const real *params, real *grads, real *dh,
                                 const real *h, real *dqh, real *dkh, real *dvh, const real *pa, real *tmp) {
    int B = c->B, N = c->N, K = m->conv_k;
    if (!K) {
        attn_proj_qkv_backward(m, params, grads, dh, h, dqh, dkh, dvh, tmp, B, N);
        return;
    }
    size_t R = (size_t)B * N, RD = R * m->D;
    real *ds[3] = {dqh, dkh, dvh};
    for (int i = 0; i < 3; i++) {
        const real *x = pa + i * RD, *cx = pa + (3 + i) * RD;
        real *dcx = ds[i]; /* read into tmp first: free for d conv(x) */
        g_ops->merge_heads(tmp, ds[i], B, N, m->H, m->d);
        g_ops->zero(dcx, sizeof(real) * RD);
        g_ops->silu_backward(dcx, tmp, cx, RD);
        g_ops->zero(tmp, sizeof(real) * RD);
        g_ops->conv1d_causal_backward(tmp, conv_w(m, grads, i), NULL, dcx, x, conv_w(m, params, i), B, N, m->D, K);
        mask_rows(tmp, c->keymask, B, 1, N, m->D);
        linear_backward(dh, MP(m, grads, 2 * i), proj_bias(m, grads, 2 * i + 1), tmp, h, MP(m, params, 2 * i), (int)R,
                        m->Dm, m->D);
    }
}

/* each projection's convolution step (conv_state.h) with its windows in pa */
void attn_proj_qkv_step(const Mixer *m, const real *params, const real *h, real *qh, real *kh, real *vh, real *cstate,
                        size_t stride, real *pa, real *tmp, int B) {
    int K = m->conv_k, D = m->D;
    if (!K) {
        attn_proj_qkv(m, params, h, qh, kh, vh, tmp, B, 1);
        return;
    }
    size_t hist = (size_t)(K - 1) * D;
    real *outs[3] = {qh, kh, vh};
    for (int i = 0; i < 3; i++) {
        linear_forward(tmp, h, MP(m, params, 2 * i), proj_bias(m, params, 2 * i + 1), B, m->Dm, D);
        conv_state_step(tmp, tmp, cstate + i * hist, stride, conv_w(m, params, i), NULL, B, K, D, pa);
        g_ops->silu_forward(pa, tmp, (size_t)B * D);
        g_ops->split_heads(outs[i], pa, B, 1, m->H, m->d);
    }
}

void attn_proj_conv_prefill(const Mixer *m, const MixerCtx *c, const real *pa, real *cstate, size_t stride) {
    int K = m->conv_k, D = m->D, B = c->B, N = c->N;
    if (K < 2) return;
    size_t RD = (size_t)B * N * D, hist = (size_t)(K - 1) * D;
    for (int i = 0; i < 3; i++) conv_state_prefill(cstate + i * hist, stride, pa + i * RD, B, N, K, D);
}

void attn_rope(const Mixer *m, real *qh, real *kh, int B, int N, int pos0) {
    if (!m->rope) return;
    g_ops->rope_forward(qh, qh, B, m->H, N, m->d, pos0, (real)ROPE_THETA);
    g_ops->rope_forward(kh, kh, B, m->H, N, m->d, pos0, (real)ROPE_THETA);
}

void attn_rope_backward(const Mixer *m, real *dqh, real *dkh, int B, int N) {
    if (!m->rope) return;
    g_ops->rope_backward(dqh, dqh, B, m->H, N, m->d, 0, (real)ROPE_THETA);
    g_ops->rope_backward(dkh, dkh, B, m->H, N, m->d, 0, (real)ROPE_THETA);
}

void mask_rows(real *x, const uint8_t *keymask, int B, int H, int N, int W) {
    if (!keymask) return;
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++)
            if (!keymask[b * N + n])
                for (int h = 0; h < H; h++) g_ops->zero(x + (((size_t)b * H + h) * N + n) * W, sizeof(real) * W);
}

void key_bias(real *kbias, const uint8_t *keymask, int B, int N) {
    size_t n = (size_t)B * N;
    real *host = xmalloc(n * sizeof(real));
    for (size_t i = 0; i < n; i++) host[i] = (keymask && !keymask[i]) ? -INFINITY : 0;
    g_ops->to_device(kbias, host, n * sizeof(real));
    free(host);
}

int mixer_need(const char *mixer, int present, const char *op) {
    if (present) return 0;
    return gma_errorf("key model.mixer: mixer \"%s\" needs op %s, which backend %s does not implement", mixer, op,
                      g_ops->name);
}

double mixer_no_fused_flops(const Mixer *m, int B, int N, int causal) { return 0; }

/* the visible (query, key) pairs of N tokens: causal N (N + 1) / 2, bidirectional N^2; with
 * a window W, each query's band: min(i + 1, W) causal, min(i + W, N) - max(0, i - W + 1) */
static double visible_pairs(int N, int causal, int W) {
    double n = N;
    if (W <= 0 || W >= N) return causal ? n * (n + 1) / 2 : n * n;
    double w = W, inner = w * (w + 1) / 2 + (n - w) * w; /* causal: the ramp, then W a row */
    return causal ? inner : 2 * inner - n;                  /* the band is both sides less the diagonal */
}

/* S and P V forward; S again, dP, dV, dK, dQ backward: 2 d each per visible pair */
double attn_tile_flops(double BH, int N, int d, int causal, int W) { return BH * 7 * 2.0 * d * visible_pairs(N, causal, W); }

double linmix_flops(double BH, int N, int F, int d, int causal, int C) {
    if (!causal) return BH * 6 * 2.0 * N * F * d; /* S, out; dS, dphk, dV, dphq */
    double f = 0;
    for (int c0 = 0; c0 < N; c0 += C) {
        double L = GMA_MIN(C, N - c0), last = c0 + C >= N;
        f += (c0 > 0) * 2.0 * F * d * C;                         /* running state */
        f += 2 * L * L * F + 2 * L * d * F + 2 * L * L * d;       /* A, phq S, A V */
        f += (1 - last) * 2 * (2 * L * F * d);                    /* dphk, dV through later chunks */
        f += 2 * L * F * d + 2 * L * L * F + 2 * L * L * d;       /* dphq via S, A again, dA */
        f += 2 * (2 * L * L * F) + 2 * L * L * d + 2 * F * d * L; /* dphq, dphk via dA, dV via A, dS */
    }
    return BH * f;
}

double linmix_rescan_flops(double BH, int N, int F, int d, int causal, int C) {
    if (!causal) return BH * 2.0 * N * F * d; /* S */
    long nc = (N + C - 1) / C, G = 1;
    while (G * G < nc) G++;
    long ns = (nc + G - 1) / G;
    /* the running state: the coarse pass (nc - 1 chunks), the segments again (nc - ns) */
    return BH * 2.0 * F * d * C * (double)((nc - 1) + (nc - ns));
}
