/* mixer.h: the one interface every sequence mixer implements (GMA, softmax attention and
 * the baselines). A mixer maps h [B,N,D] to y [B,N,D]. It registers its parameters in the
 * model's table when created, says how many reals it keeps between forward and backward
 * (act) and how many it needs only during a call (scratch), and accumulates gradients into
 * the gradient buffer (same offsets as the parameters).
 *
 * Everything else the rest of the program needs to know about a mixer is declared by its
 * vtable: its configuration keys (a CfgSection with defaults, ranges and docs), their
 * validation, an auxiliary loss with its weight, which buffers the data-parallel ranks
 * average, routing-health hooks with the monitor's settings, an incremental decode
 * step with the prefill of its state from a forward, and the FLOPs of the products it runs inside fused ops (for gmabench). A new
 * mixer is one file with one `const MixerVT` and one line in mixer.c's registry
 * (docs/adding_a_mixer.md). */
#ifndef GMA_MIXER_H
#define GMA_MIXER_H
#include <stdint.h>

#include "core/config.h"
#include "core/rng.h"
#include "nn/model_cfg.h"
#include "nn/params.h"
#include "ops/ops.h"

/* The n rows of d reals (host memory) of every data-parallel rank, rank 0's first, in a
 * new buffer (caller frees); *n_all their number. Set by the training layer (the mixers
 * sit below it); NULL in a MixerCtx means this process's rows only. */
typedef real *(*MixerGatherFn)(const real *x, int n, int d, int *n_all, void *ctx);

typedef struct MixerCtx {
    int B, N;
    int causal;
    const uint8_t *keymask; /* [B,N] 1 = real token, 0 = padding; NULL = no padding (host memory) */
    int training;
    long step;
    /* backward only: the scale of the loss (loss_scale of model_backward); 0 = no auxiliary
     * loss. A mixer with an auxiliary loss (aux_loss) adds its weight x aux_scale x
     * d aux/d(its inputs) to its gradients (GMA: the diversity loss, docs/model.md §4). */
    double aux_scale;
    /* attention dropout of this layer (host memory; NULL = none: evaluation, decoding,
     * rate 0), set by the model for training forwards and their backward (docs/model.md §8) */
    const GmaDrop *attn_drop;
    /* the layer's stream of a mixer's own training noise (GMA's top-k routing noise, site
     * GMA_DROP_ROUTE; host memory), set by the model for training forwards and their
     * backward whatever the dropout rates; NULL = none (evaluation, decoding) */
    const GmaDrop *noise;
    /* rows of all ranks for k-means and re-seeding (NULL: this process's rows) */
    MixerGatherFn gather;
    void *gather_ctx;
} MixerCtx;

/* The routing monitor's settings of a mixer with health hooks (GMA: gma.monitor_every,
 * gma.on_collapse, gma.entropy_min, ...; docs/routing.md). */
typedef struct MixerMonitor {
    int every;             /* check period in steps (0 = off) */
    int reinit, stop;      /* on a collapse alert: re-seed dead components / stop the run */
    int reseed_keys;       /* re-seed from the key rows (gma.reseed_rows "keys"), else the query rows */
    double entropy_min;    /* alert below this mean responsibility entropy (nats) */
    double util_min_share; /* a component is dead below this share of 1/Kc */
    int patience;          /* checks a component must stay dead before an alert */
    double norm_growth_max;/* memory norm alert factor over its start */
    int drop_every;        /* Dirichlet prior: drop components every this many steps (0 = never) */
    double drop_below;     /* ... whose mixture weight pi_k = softmax(bias)_k is below this */
    /* structural adaptation of K (gma.adapt_*, docs/model.md §4.2; train/kadapt.h) */
    int adapt_every;       /* merge, prune, split every this many steps (0 = never) */
    int k_min, k_max;      /* the range K per layer stays in */
    double merge_dist;     /* merge two components closer than this (Bhattacharyya per dimension) */
    double prune_below;    /* prune a component whose load is below this share of 1/K */
    double split_above;    /* split a component whose load is above this share of 1/K (0 = never) */
    double split_shift;    /* the copies' offset, in standard deviations along the widest axis */
    int diag_every;        /* the recall diagnosis (gma.diag_every; train/routing_diag.h): every this many steps (0 = off) */
} MixerMonitor;

/* A dropped component's prior logit (gma.dirichlet_*, docs/model.md §4.1): its mixture
 * weight exp(-1e4) is 0 in float32 and float64, so it takes no responsibility and gets no
 * gradient; a logit at or below MIXER_DROPPED_LOGIT / 2 counts as dropped (checkpoints keep
 * it, so a resumed run has the same components). */
#define MIXER_DROPPED_LOGIT (-1e4)

typedef struct Mixer Mixer;

/* A mixer's routing components, as the routing-health module (train/health.h) reads them
 * to monitor, k-means-seed and re-seed them. Tensors are indices into m->pt (-1: none);
 * Hp = 1 with shared components, else H. */
typedef struct MixerComponents {
    int Kc;          /* components per head */
    int shared;      /* one set of components for all heads */
    int softmax;     /* centre, bias: a softmax router's W, b (else Gaussian mu, prior logits) */
    int centre;      /* [Hp,Kc,d] mu or W */
    int bias;        /* [Hp,Kc] prior logits or b */
    int var;         /* [Hp,Kc,d] var_raw (Gaussian; set to var0 when re-seeded), else -1 */
    double var0;     /* var_raw of sigma2 = 1 */
    int memory;      /* [H,Kc,d] EMA value memory (a buffer k-means seeds), else -1 */
    int kmeans;      /* 1: the first training batch's centroids seed the centres (gma.init "kmeans") */
    MixerMonitor mon;
    const real *qh;  /* [B,H,N,d] query rows of the last forward (backend memory, inside act);
                      * NULL when act is NULL or that forward kept none (auto's sdpa path) */
    const real *gq;  /* [B,H,N,Kc] query responsibilities of the last forward (backend memory,
                      * inside act); NULL as qh */
    const real *kh;  /* [B,H,N,d] key rows of the last forward, as qh */
    const real *gk;  /* [B,H,N,Kc] key responsibilities of the last forward, the same way (padded
                      * rows need not be zero: a reader skips them); NULL as qh */
} MixerComponents;

/* Optional routing-health hooks (docs/routing.md), implemented by the GMA mixer (and
 * forwarded by auto), NULL for every other mixer. Called between steps, never inside a
 * forward/backward pair; `act` is the mixer's activation block of the last forward (B x N),
 * `params` the parameter buffer (backend memory). Monitoring, k-means seeding and
 * re-seeding work on what these expose (train/health.c). */
typedef struct MixerHealth {
    /* the component tensors, seeding rules and monitor settings, the query rows and
     * responsibilities of the last forward; act may be NULL */
    void (*components)(const Mixer *m, const real *act, int B, int N, MixerComponents *out);
    /* after the backward of a training micro-batch: update buffers (EMA memory) */
    void (*update_buffers)(Mixer *m, const MixerCtx *c, real *params, const real *act);
} MixerHealth;

typedef struct MixerVT {
    const char *name;
    int causal_ok, bidir_ok;
    /* 1 when the layer holds a GMA path (gma, auto, gated): such layers, in order, take the
     * entries of a per-layer gma.n_components list */
    int gma_layer;
    /* 1 when the mixer applies model.attn_dropout (MixerCtx.attn_drop); else validation
     * refuses attn_dropout > 0 with attn_dropout_why (docs/model.md §8) */
    int attn_dropout_ok;
    const char *attn_dropout_why;
    /* 1 when the mixer runs model.short_conv's convolutions on q, k, v (the attn_proj_*_conv
     * helpers below, their act block and decode state); else validation refuses
     * model.short_conv > 0 for it */
    int short_conv_ok;
    /* 1 when the mixer turns its q and k by rotary positions under model.pos "rope" (sdpa,
     * sdpa_ref: attn_rope below); model_build then sets Mixer.rope. The other mixers take no
     * positions under "rope" */
    int rope_ok;
    /* 1 when the mixer has a short convolution of its own (mamba, baseconv, gdn): model.short_conv
     * leaves such a layer as it is, so a stack like ["baseconv", "gma"] takes it in its gma
     * layer; a model.short_conv > 0 that no layer takes is refused */
    int own_conv;
    /* optional: why the mixer cannot run a window longer than model.max_seq_len (its
     * parameters are shaped by it), naming the tensor; NULL = any length (gmaeval --seq-len
     * past the training length, model_extend_window) */
    const char *fixed_window;
    /* optional: the mixer's configuration keys NAME.* (read with cfg_section_of) */
    const CfgSection *config;
    /* optional: check the mixer's own config keys against each other and the model, run
     * by cfg_validate when some layer uses the mixer; the error names the key */
    int (*validate)(const Config *c);
    /* register parameters under prefix (e.g. "blocks.3.mixer") */
    Mixer *(*create)(const Config *c, int layer, ParamTable *pt, const char *prefix);
    /* optional: custom initialisation after the table's rules (host memory) */
    void (*init)(Mixer *m, real *params, Rng *rng);
    size_t (*act_size)(const Mixer *m, int B, int N);
    size_t (*scratch_size)(const Mixer *m, int B, int N);
    void (*forward)(Mixer *m, const MixerCtx *c, real *y, const real *h, const real *params, real *act, real *scratch);
    void (*backward)(Mixer *m, const MixerCtx *c, real *dh, const real *dy, const real *h, const real *params,
                     real *grads, real *act, real *scratch);
    void (*destroy)(Mixer *m);
    /* the FLOPs (2 M N K a product) of one forward + backward over B sequences of N tokens
     * (causal or not) that the mixer runs inside fused ops rather than through the op
     * table's matmul / matmul_strided: GMA's routing and mixing core, the tiled attention's
     * tiles (docs/benchmarks.md). Required; mixer_no_fused_flops for a mixer whose every
     * product goes through the table. gmabench adds it to the products it counts there. */
    double (*fused_flops)(const Mixer *m, int B, int N, int causal);
    /* optional: incremental causal decoding (model_decode_step), one token at a time for
     * each of B sequences that stand at the same position. decode_state: reals of state
     * one sequence keeps across tokens for positions 0..Nmax-1 (backend memory, zeroed
     * before position 0). decode: y [B,D] for the tokens at `pos` (< Nmax) from h [B,D],
     * updating the B states that lie one after the other in `state` (decode_state reals
     * each); act and scratch are the mixer's blocks for B sequences of N = 1. */
    size_t (*decode_state)(const Mixer *m, int Nmax);
    /* optional (with decode): 0 when the decode step cannot give the full forward's
     * outputs for a window of Nmax tokens (auto with its threshold inside the window);
     * NULL = it always can */
    int (*can_decode)(const Mixer *m, int Nmax);
    void (*decode)(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                   real *act, real *scratch);
    /* optional (with decode): prefill. After a forward (training 0, causal) over c->B
     * sequences of c->N <= Nmax tokens from position 0, the B decode states the N steps of
     * positions 0..N-1 would leave, taken from what that forward left: its input h [B,N,Dm]
     * and act (its activation block for B x N; scratch: its scratch block for B x N, free
     * to overwrite). `state` is zeroed before the call. Equal to the N steps up to float32
     * summation order (tests/test_prefill.c). NULL: model_prefill feeds the N rows of h
     * through decode one at a time, which gives the same states at a step's cost a row. */
    void (*prefill)(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                    int Nmax, real *scratch);
    /* optional: the auxiliary loss of the last training forward (unweighted; 0 when off)
     * and, in *weight, the weight it enters the objective with (0 = off). The backward adds
     * weight x ctx->aux_scale x its gradient (MixerCtx.aux_scale). */
    double (*aux_loss)(const Mixer *m, double *weight);
    /* optional: 1 when parameter `tensor` (index into the table) is a buffer that each
     * data-parallel rank updates from its own batch, so the ranks average it after every
     * step (GMA's EMA memory); other buffers must be the same on every rank already */
    int (*rank_averaged)(const Mixer *m, int tensor);
    /* optional: routing-health hooks (GMA; NULL elsewhere) */
    const MixerHealth *health;
} MixerVT;

#define MIXER_MAX_PARAMS 24
struct Mixer {
    const MixerVT *vt;
    const ParamTable *pt;
    int D, H, d;  /* D: width of the q/k/v projections (model.qkv_dim, = d_model by default), d = D / H */
    int Dm;       /* model width d_model: the input h and the output y are [B,N,Dm] */
    int conv_k;   /* kernel of the short convolutions on q, k, v (model.short_conv; 0 = none) */
    int conv_p[3];/* their weights [D, conv_k], indices into pt (attn_proj_add; -1: none) */
    int rope;     /* rotary positions on q and k (model.pos "rope" and MixerVT.rope_ok; head width d even) */
    int p[MIXER_MAX_PARAMS]; /* indices into pt */
    void *priv;
};

/* Registry (mixer.c: one line per mixer) */
const MixerVT *mixer_find(const char *name);
/* The mixer of layer l, resolved when model.mixer was read (no name compared). */
const MixerVT *mixer_of_layer(const Config *c, int l);
/* "gma|sdpa|..." */
const char *mixer_names(void);
/* the choices of model.mixer (a CFGT_CHOICES key): the registry's names (config_register_all
 * installs them) */
CfgChoiceList mixer_choice_list(void);
/* The mixers' configuration sections in registry order, then a keyless section that checks
 * each layer's mixer against the model, into out[0..max): their number
 * (config_register_all installs them with the other modules'). */
int mixer_config_sections(const CfgSection **out, int max);
/* Every backend selected by ops_select has the baseline ops (ops_check_table, ops.c); a mixer still
 * checks the ones it needs when created, for a table installed in g_ops directly. NEED_OP(mixer, op) is 0 when the active backend has g_ops->op, else -1 with
 * "key model.mixer: mixer MIXER needs op OP, which backend B does not implement". */
int mixer_need(const char *mixer, int present, const char *op);
#define NEED_OP(mixer, op) mixer_need(mixer, g_ops->op != NULL, #op)
/* mixer "auto": the name of the path ("sdpa" or "gma") it takes for N tokens */
const char *mixer_auto_choice(const Mixer *m, int N);
/* model.auto_threshold's section (prefix model), owned by auto.c */
extern const CfgSection auto_threshold_section;
/* gma.window, gma.window_share: a stored section of gma_window.c (prefix gma) */
extern const CfgSection gma_window_section;
/* mixer "auto": its threshold (model.auto_threshold, or the calibrated one) */
int mixer_auto_threshold(const Mixer *m);
/* mixer "auto", for gradient checks of its distillation: on 1, the next forward's
 * oh_sdpa becomes the distillation's target of every later forward (the stop-gradient as a
 * constant, which central differences can check); 0: the live oh_sdpa again */
void mixer_auto_hold_target(Mixer *m, int on);
/* mixer "auto", for the analysis: on 1, every forward runs both paths and sums the gap
 * between their heads' outputs, mean (oh_gma - oh_sdpa)^2, from zero; -1 when the layer
 * cannot run both (no tiled attention ops, or gma.memory "ema") */
int mixer_auto_probe(Mixer *m, int on);
/* the probe's sums since it was switched on: *mse the mean squared gap, *rel sum of the
 * squared gaps over sum oh_sdpa^2; -1 when no forward ran with it */
int mixer_auto_gap(const Mixer *m, double *mse, double *rel);
/* any mixer: 1 when it is "auto" and its last forward was a distilled training call
 * (auto.distill_weight > 0, the sdpa path), with *dist that call's unweighted
 * sum (oh_gma - oh_sdpa)^2 / sum oh_sdpa^2 (the attention-transfer loss of the layer); else 0 */
int mixer_auto_transfer(const Mixer *m, double *dist);
/* gma.n_components of model layer `layer` (gma.c): the one number, or the entry of that
 * layer among the layers whose mixer holds a GMA path (MixerVT.gma_layer) */
int gma_layer_kc(const Config *c, int layer);
/* 1 when c adapts K (gma.adapt_every > 0, docs/model.md §4.2) */
int gma_adapt_on(const Config *c);
/* set gma.n_components to list ("a,b,..": one per GMA layer, or one number); 0, or -1 as
 * cfg_set */
int gma_set_kc_list(Config *c, const char *list);
/* Create with the common fields set (D, H, d, pt). */
Mixer *mixer_new(const MixerVT *vt, const Config *c, ParamTable *pt);
#define MP(m, base, i) ((base) + (m)->pt->t[(m)->p[i]].offset)

/* ---- shared Q, K, V, O projections of the attention-style mixers (mixer.c) ---- */
enum { AP_WQ, AP_BQ, AP_WK, AP_BK, AP_WV, AP_BV, AP_WO, AP_BO, AP_N };
/* Registers prefix.{q,k,v,o}.{weight,bias} into m->p[0..7]: q, k, v weights [D, Dm], o
 * [Dm, D]; the biases only with model.attn_bias (else their index is -1). With
 * model.short_conv K > 0 and a mixer that takes it (MixerVT.short_conv_ok) also
 * prefix.{q,k,v}_conv.weight [D, K] into m->conv_p[0..2] and m->conv_k = K (else -1, 0). */
void attn_proj_add(Mixer *m, const Config *c, ParamTable *pt, const char *prefix);
/* q, k, v [B,H,N,d] from h [B,N,D]; tmp [B*N*D] scratch. Without the short convolutions
 * (m->conv_k 0: the mixers that do not take them) */
void attn_proj_qkv(const Mixer *m, const real *params, const real *h, real *qh, real *kh, real *vh, real *tmp, int B,
                   int N);
/* ---- the short convolutions on q, k, v (model.short_conv, docs/model.md §3.9) ----
 * With m->conv_k = K > 0 each projection x = h W^T + b [B,N,D] becomes silu(conv(x)), conv
 * causal and depthwise over the sequence with PREFIX.{q,k,v}_conv.weight [D,K] (padded rows
 * of x zeroed first). A mixer that takes them keeps the projections' block `pa` at the end
 * of its act (attn_proj_act_size reals more; attn_proj_act finds it) and the three
 * convolutions' last K-1 inputs at the end of each sequence's decode state
 * (attn_proj_state_size reals more). With K = 0 all of these are the plain projections and
 * sizes 0. */
/* reals of the block pa for B x N: x and conv(x) of q, k, v [B*N*D] each, kept for the
 * backward; at least 2 B K D, the decode step's windows */
size_t attn_proj_act_size(const Mixer *m, int B, int N);
/* the block pa inside act, a mixer's act block for B x N (its last attn_proj_act_size reals) */
real *attn_proj_act(const Mixer *m, const real *act, int B, int N);
/* reals of one sequence's convolution state: the last K-1 inputs x of q, k, v, 3 (K-1) D */
size_t attn_proj_state_size(const Mixer *m);
/* attn_proj_qkv over the c->B x c->N rows of h, padded rows (c->keymask) masked before
 * the convolutions; pa the mixer's block */
void attn_proj_qkv_conv(const Mixer *m, const MixerCtx *c, const real *params, const real *h, real *qh, real *kh,
                        real *vh, real *pa, real *tmp);
/* backward of attn_proj_qkv_conv: dh += ..., grads of Wq..bv and the convolutions; with
 * conv_k > 0 dqh, dkh, dvh are overwritten (scratch) */
void attn_proj_qkv_conv_backward(const Mixer *m, const MixerCtx *c, const real *params, real *grads, real *dh,
                                 const real *h, real *dqh, real *dkh, real *dvh, const real *pa, real *tmp);
/* the decode step's projections of B rows h [B,Dm] (one token of each sequence) into qh,
 * kh, vh [B,H,1,d], moving the convolution states on: sequence b's at cstate + b stride
 * (attn_proj_state_size reals); pa the mixer's block for B x 1, tmp [B*D] */
void attn_proj_qkv_step(const Mixer *m, const real *params, const real *h, real *qh, real *kh, real *vh, real *cstate,
                        size_t stride, real *pa, real *tmp, int B);
/* prefill: the convolution states after the c->N tokens of a forward (c->B sequences from
 * position 0) from its block pa, into zeroed states at cstate + b stride */
void attn_proj_conv_prefill(const Mixer *m, const MixerCtx *c, const real *pa, real *cstate, size_t stride);
/* ---- rotary positions (model.pos "rope", docs/model.md §1) ----
 * With m->rope, q and k [B,H,N,d] turn in place by the angles of positions pos0..pos0+N-1
 * (ops.h rope_forward, base ROPE_THETA), after the projections (and the short convolutions)
 * and before the attention op; the backward turns their gradients back. No-ops without. */
#define ROPE_THETA 10000.0
void attn_rope(const Mixer *m, real *qh, real *kh, int B, int N, int pos0);
void attn_rope_backward(const Mixer *m, real *dqh, real *dkh, int B, int N);
/* y = merge(oh) Wo^T + bo; tmp [B*N*D] scratch */
void attn_proj_out(const Mixer *m, const real *params, real *y, const real *oh, real *tmp, int B, int N);
/* backward of attn_proj_out: doh (overwritten) from dy; grads of Wo, bo. tmp, tmp2 [B*N*D]; doh may be tmp */
void attn_proj_out_backward(const Mixer *m, const real *params, real *grads, real *doh, const real *dy, const real *oh,
                            real *tmp, real *tmp2, int B, int N);
/* backward of attn_proj_qkv: dh += ...; grads of Wq..bv. dqh/dkh/dvh [B,H,N,d]; tmp [B*N*D] */
void attn_proj_qkv_backward(const Mixer *m, const real *params, real *grads, real *dh, const real *h, const real *dqh,
                            const real *dkh, const real *dvh, real *tmp, int B, int N);
/* ---- FLOP counts (MixerVT.fused_flops; mixer.c) ---- */
/* the fused_flops of a mixer with no products outside the op table: 0 */
double mixer_no_fused_flops(const Mixer *m, int B, int N, int causal);
/* the tile products of the tiled softmax attention (ops.h attn_forward + attn_backward) over
 * BH heads of N tokens, causal or not, with a sliding window W (0 = none): S and P V
 * forward; S again, dP, dV, dK, dQ backward; 2 d each per visible (query, key) pair */
double attn_tile_flops(double BH, int N, int d, int causal, int W);
/* the products of the normalised linear mixing core (docs/model.md §3.1) over BH heads,
 * forward and backward, as the CPU backend runs them (cpu_linmix.c): bidirectional, or
 * causal in chunks of C; F features, d value channels */
double linmix_flops(double BH, int N, int F, int d, int causal, int C);
/* the products linmix_backward adds when it rescans the states (no saved state; causal:
 * in segments of ~sqrt(nc) chunks, cpu_linmix.c) */
double linmix_rescan_flops(double BH, int N, int F, int d, int causal, int C);
/* ---- incremental decoding (decode.c), one sequence, heads in the [1,H,1,x] layout ---- */
/* the state of the normalised linear core (docs/model.md §3.1) per sequence: S [H,F,d], z
 * [H,F]; ops.h linmix_step moves it one token on */
size_t linmix_decode_state(int H, int F, int d);
/* the key/value cache of causal softmax attention per sequence: K, V [H,Nmax,d], then
 * [H,Nmax] scores; ops.h attn_step moves it one token on (a ring past Nmax tokens: sdpa.window
 * passes its W rows as Nmax) */
size_t attn_decode_state(int H, int Nmax, int d);
/* the decode hooks of sdpa and sdpa_ref (projections of the B rows + one attn_step for
 * every sequence and head; act: qh, kh, vh, oh [B,H,1,d]) */
size_t attn_mixer_decode_state(const Mixer *m, int Nmax);
void attn_mixer_decode(Mixer *m, real *y, const real *h, const real *params, real *state, int B, int pos, int Nmax,
                       real *act, real *scratch);
/* ---- prefill (MixerVT.prefill; decode.c) ---- */
/* the linear core's states of B sequences after N tokens, S_h = phk_h^T v_h and z_h = the
 * column sums of phk_h (phk [B,H,N,F], v [B,H,N,d]), into the zeroed states at state + b ss */
void linmix_prefill(real *state, size_t ss, const real *phk, const real *v, int B, int H, int N, int F, int d);
/* the prefill of sdpa and sdpa_ref: the forward's k, v rows [B,H,N,d] (act: qh, kh, vh first)
 * into rows 0..N-1 of each head's cache of Nmax rows; with N > Nmax (sdpa.window's ring of
 * Nmax rows), the last Nmax tokens, token p in row p mod Nmax as attn_step leaves them */
/* the ring copy of attn_mixer_prefill for any state layout: the forward's k, v rows [B,H,N,d]
 * into the caches of Nmax rows (attn_decode_state) at cache + b ss, the last min(N, Nmax)
 * tokens, token p in row p mod Nmax */
void attn_ring_prefill(real *cache, size_t ss, const real *kh, const real *vh, int B, int H, int N, int d, int Nmax);
void attn_mixer_prefill(Mixer *m, const MixerCtx *c, const real *h, const real *params, const real *act, real *state,
                        int Nmax, real *scratch);

/* kbias [B,N] in backend memory: 0 for a real key, -inf for padding (all 0 when keymask NULL) */
void key_bias(real *kbias, const uint8_t *keymask, int B, int N);
/* zero rows [B,H,N,W] whose key is padding (keymask 0); no-op when keymask is NULL */
void mask_rows(real *x, const uint8_t *keymask, int B, int H, int N, int W);
#endif
