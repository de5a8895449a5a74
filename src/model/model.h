/* model.h: the GPT-style decoder language model (docs/model.md §1) built from a config; with
 * model.task "classify" the same blocks form the encoder classifier (§2; its parts in
 * model/model_cls.h). Code: model.c (build, memory, forward, backward), model_cls.c,
 * model_cross.c (cross.mixer's encoder and cross sub-layers, §3.8), model_decode.c
 * (incremental decoding and prefill). Parameters, gradients and optimiser moments are four
 * contiguous buffers indexed by one ParamTable (parameters alone for a model allocated for
 * inference, Model.infer); activations are planned for (B_max, N_max) once, so a training
 * step does not allocate.
 * Shapes: B batch (a classifier's backbone: B examples x n_seq sequences), N positions (a
 * classifier's: the CLS slot included), D = d_model, F = d_ff, V vocabulary, C classes,
 * L layers, R = B*N rows. Activations are backend memory unless marked host. */
#ifndef GMA_MODEL_H
#define GMA_MODEL_H
#include <stdint.h>

#include "core/config.h"
#include "core/rng.h"
#include "nn/mixers/mixer.h"
#include "nn/params.h"

typedef struct Block {
    Mixer *mixer;
    int ln1w, ln1b, ln2w, ln2b, fcw, fcb, projw, projb; /* param indices (-1 without MLP; biases -1 with rmsnorm, swiglu) */
    int upw;        /* model.mlp_act "swiglu": mlp.up.weight (fcw is mlp.gate.weight, projw mlp.down.weight); else -1 */
    /* activations of the last forward */
    real *ln1;      /* (B, N, D) LayerNorm 1 of the residual stream: the mixer's input */
    real *ln1_mean; /* (B, N); unused with model.norm "rmsnorm" (no centring) */
    real *ln1_rstd; /* (B, N) */
    real *mix;      /* (B, N, D) the mixer's output */
    real *mid;      /* (B, N, D) residual + mix: the MLP's residual input */
    real *ln2;      /* (B, N, D) LayerNorm 2 of mid: the MLP's input */
    real *ln2_mean; /* (B, N) */
    real *ln2_rstd; /* (B, N) */
    real *fc;       /* (B, N, F) ln2 Wfc^T + bfc: GELU's input; swiglu: (B, N, 2F) gate then up */
    real *gelu;     /* (B, N, F) the hidden activation: GELU(fc), or silu(gate) * up */
    real *act;      /* the mixer's act_size(B, N) reals (layout: its file) */
} Block;

typedef struct Model {
    Config cfg;
    int V, D, L, H, F, Nmax, causal, mlp;
    ParamTable pt;
    int wte, wpe, lnfw, lnfb; /* param indices (wpe -1 unless pos "learned"; lnfb -1 with rmsnorm) */
    int wout;                 /* the head's weight [V, D]: wte when tied, else lm_head.weight (model.tie_embeddings) */
    int rms, swiglu;          /* model.norm "rmsnorm", model.mlp_act "swiglu" */
    real *pos_fixed;          /* (Nmax, D) the fixed table of pos "sinusoidal", else NULL */
    Block *blocks;
    real *params, *grads, *m, *v; /* backend memory, pt.total reals each (grads, m, v NULL when infer) */
    /* allocation mode, set between model_build and model_check_memory / model_alloc: 1 = the
     * model only runs evaluation forwards and decoding (distillation teacher, gmasample,
     * gmaeval): no gradients, optimiser moments or backward buffers (dresid, dtmp, dfc,
     * head_gw, the classifier's dpooled and head_scratch), about 3 x the parameters less;
     * the logits are the same bits as a training-allocated model's. A training forward or a
     * backward is refused. */
    int infer;
    /* activations, planned for Bmax x Nmax in one block (actmem) */
    int Bmax, Nmax_act;
    real *actmem;
    real **resid;     /* L + 1 of (B, N, D): resid[0] the embeddings, resid[l + 1] after block l */
    real *lnf;        /* (B, N, D) the final LayerNorm */
    real *lnf_mean;   /* (B, N) */
    real *lnf_rstd;   /* (B, N) */
    real *logits;     /* (head_rows, V); classifier (B, C) */
    real *loss_rows;  /* (R) per-row NLL; classifier (B) */
    real *valid_rows; /* (R) 1 = scored; classifier (B) */
    real *dresid;     /* (B, N, D) gradient of the residual stream */
    real *dtmp;       /* (B, N, D) */
    real *dfc;        /* (B, N, F) */
    real *scratch;    /* the largest scratch_size(B, N) of the layers' mixers */
    int32_t *tok, *tgt;      /* (B, N) the batch; a classifier's tgt: (B examples) labels */
    int32_t *pred_host;      /* host (R) argmax per row */
    size_t act_bytes;        /* planned activation + scratch memory */
    int B, N;                /* shape of the last forward */
    int logits_grad;         /* the last forward (training, language model) left softmax - onehot in logits */
    /* the language model's head in chunks of rows (docs/model.md §1, model.head_chunk):
     * logits holds head_rows rows at most; a training forward over more rows than that runs
     * the head's backward products itself, unscaled (dtmp, and head_gw (V, D) for tok_emb),
     * and model_backward scales them (head_done) */
    int head_rows, logits_row0; /* rows per chunk; the first row whose logits are in logits */
    int head_done;
    real *head_gw;
    const uint8_t *keymask;  /* host (B, N) or NULL */
    /* model.task "classify": the classifier's parts (model/model_cls.h), NULL for a language
     * model; B and N above then count its sequences (examples x n_seq) and positions (the CLS
     * slot included) */
    struct ClsModel *cls;
    /* rows of every data-parallel rank for k-means and re-seeding (set by the training
     * layer; NULL = this process's rows), passed to the mixers in MixerCtx */
    MixerGatherFn gather;
    void *gather_ctx;
    /* k-means seeding of the routing (train/health.h) of these layers only, centres set
     * whatever gma.init says (NULL = the layers whose config asks for it; --init-from sets
     * it to the layers whose routing it did not copy) */
    const uint8_t *kmeans_only;
    /* dropout (docs/model.md §8): drop_live while a training forward with a rate > 0 and
     * its backward run; the mask's key comes from the seed, drop_step, the micro-batch
     * and this process's slice of the global batch (model_set_dropout_batch) */
    int drop_live;
    long drop_step, drop_micro;
    int64_t drop_first, drop_global; /* drop_global 0: the batch is the whole global batch */
    /* distillation (train.distill, model_set_teacher): a training forward also runs the
     * teacher (not owned) on the same tokens, and the head adds w T^2 KL(teacher || student)
     * at temperature T to each chunk's loss gradient; kl_rows (R) the per-row KL */
    struct Model *teacher;
    real distill_w, distill_T;
    /* the language-model objective's weight in model_backward's gradient (train.lm_weight;
     * 1 as built): 0 leaves the mixers' auxiliary losses alone (attention transfer) */
    double lm_weight;
    real *kl_rows;
    /* cross.mixer gma | sdpa: the context encoder and the decoder blocks' cross sub-layers
     * (model/model_cross.h); NULL for a plain decoder */
    struct XModel *x;
} Model;

/* Build the parameter table and mixers from a validated config (vocab_size must be set). */
int model_build(Model *m, const Config *c);
/* Let a model of config c run windows of N tokens, N beyond model.max_seq_len (gmaeval
 * --seq-len past the training length): model.max_seq_len becomes N when no part of the
 * model is sized by it (positions "sinusoidal", whose table is extended, "none" or "rope"; every
 * mixer but those with a fixed_window); else one line naming the option `given` (e.g.
 * "--ctx-len 200 (a window of 216)"; NULL: "--seq-len N"), the key and `src` (the
 * checkpoint's config). 0 or -1 with gma_error. */
int model_extend_window(Config *c, int N, const char *given, const char *src);
/* The memory model_alloc takes for batches of Bmax x Nmax, in bytes: params (parameters,
 * gradients, the two optimiser moments; parameters alone when m->infer), acts (activations and scratch), total (both and
 * what model_alloc and model_init_params hold for a while: a host copy of the parameters,
 * the sinusoidal position table); the keys that drive it (text for messages); what this
 * process can still take (avail, 0 when unknown: physical memory or the RLIMIT_AS left,
 * whichever is lower) and which that is; rows: the rows the backbone runs (sequences x
 * positions, a classifier's n_seq sequences and CLS slot counted), in double as it may
 * pass INT_MAX. */
typedef struct MemPlan {
    double params, acts, total, avail, rows;
    const char *avail_what;
    char drivers[200];
} MemPlan;
void model_memory_plan(const Model *m, int Bmax, int Nmax, MemPlan *p);
/* 0, or an error (gma_error) naming the sizes and keys when the plan for Bmax x Nmax does
 * not fit the memory available (CPU backend); call before model_alloc on user-given sizes. */
int model_check_memory(const Model *m, int Bmax, int Nmax);
/* the same, leaving the plan in *plan (filled whatever the backend) for the caller to report */
int model_check_memory_plan(const Model *m, int Bmax, int Nmax, MemPlan *plan);
/* rows of logits the language-model head computes at a time for batches of R rows
 * (model.head_chunk, or the automatic choice of docs/model.md §1) */
int model_head_rows(const Model *m, size_t R);
/* Allocate parameters, gradients, moments and activations for batches up to Bmax x Nmax
 * (with m->infer: parameters and the forward's activations only).
 * Classifier: Bmax examples (of n_seq sequences each) of up to Nmax tokens, not counting
 * the CLS slot (Nmax + 1 must then fit model.max_seq_len). */
void model_alloc(Model *m, int Bmax, int Nmax);
/* Initialise parameters from the seed (host draw in table order, then copied to the backend). */
void model_init_params(Model *m, uint64_t seed);
void model_free(Model *m);
/* The fixed sinusoidal position table pe [N, D] (docs/model.md §1), host memory. */
void pos_sinusoidal(real *pe, int N, int D);

typedef struct LossStats {
    double loss_sum; /* summed NLL over scored positions */
    double count;    /* scored positions */
    double correct;  /* argmax == target (when want_acc) */
    double kl_sum;   /* distillation: summed KL(teacher || student) at T over scored positions (else 0) */
} LossStats;

/* Forward of a language model: tokens and targets [B,N] host arrays (target -1 = not
 * scored), keymask [B,N] (1 = real) or NULL. Fills stats. m->logits then holds the logits of
 * rows logits_row0 .. B*N-1 (all rows unless the head ran in chunks: then the last chunk's).
 * Of a classifier (model.task "classify"): tok [B*n_seq, N], sequence s of example b at row
 * s*B + b (all first sequences, then all second ones), padded with 0; keymask [B*n_seq, N]
 * (1 = real) or NULL to take tok != 0 as real; tgt the labels [B] in [0, n_classes); want_acc
 * is implied. st gets the summed loss over the B examples, count B and correct (argmax ==
 * label); the logits stay in m->logits [B, n_classes]. */
int model_forward(Model *m, const int32_t *tok, const int32_t *tgt, int B, int N, const uint8_t *keymask,
                  int want_acc, LossStats *st, int training, long step);
/* Distillation: every later training forward of m (a language model) also runs teacher t
 * (allocated for batches as large as m's, its head's chunks at least as many rows as m's,
 * the same vocabulary) forward on the same tokens, no gradient, and the loss model_backward
 * differentiates becomes the mean over scored rows of CE + weight T^2 KL(softmax(t / T) ||
 * softmax(s / T)) (docs/model.md §1), computed chunk by chunk of the head as the CE is; the
 * forward's LossStats.kl_sum gets the summed KL. t NULL detaches. 0, or -1 (gma_error)
 * when t does not fit m. */
int model_set_teacher(Model *m, struct Model *t, double weight, double T);
/* Backward after a training model_forward: accumulates d(loss_scale * mean loss)
 * into m->grads. */
void model_backward(Model *m, double loss_scale);
/* Where the next training forwards sit for the dropout masks (docs/model.md §8): micro-
 * batch `micro` of the step (0-based), this process's sequences starting at global
 * sequence `first` of a global batch of `global` sequences (examples for a classifier;
 * 0 = this process's batch is the whole batch). Evaluation forwards never drop. */
void model_set_dropout_batch(Model *m, long micro, int64_t first, int64_t global);
void model_zero_grad(Model *m);

/* ---- what the mixers declare: auxiliary losses, buffers (routing health: train/health.h) ---- */
/* Number of layers whose mixer has routing-health hooks (GMA, auto). */
int model_gma_layers(const Model *m);
/* 1 when some layer's mixer has an auxiliary loss with a weight > 0 (GMA: gma.div_weight). */
int model_aux_on(const Model *m);
/* Sum over layers of the auxiliary losses of the last training forward, unweighted (the
 * metrics' div_loss); *weighted (may be NULL) gets the sum of weight x loss, the term the
 * backward differentiates (model_backward passes loss_scale to the mixers as aux_scale). */
double model_aux_loss(const Model *m, double *weighted);
/* 1 when tensor (index into m->pt) is a buffer the data-parallel ranks average after every
 * step (each rank updates it from its own batch: GMA's EMA memory, the stem's running
 * statistics). */
int model_rank_averaged(const Model *m, int tensor);
/* After model_backward of a training micro-batch: update buffers (EMA memory, the stem's
 * batch-norm running statistics from the forward's batch statistics). */
void model_update_buffers(Model *m);
size_t model_param_count(const Model *m);

/* ---- incremental decoding (causal language models; model/generate.h) ----
 * Each mixer keeps a state across tokens (GMA, linear and performer: the linear core's S
 * and z; sdpa: a key/value cache; mamba: the convolution window and the scan state), so a
 * token costs one step instead of a forward over the whole context. Position pos uses position embedding pos, as model_forward does for a
 * sequence that starts at 0. A state holds B sequences that stand at the same position:
 * one step feeds one token of each, so the weights are read once for B tokens. */
typedef struct DecodeState {
    real *buf;          /* every layer's state (backend memory) */
    real **layer;       /* per layer, into buf: B states of the mixer's decode_state reals */
    real *act, *scratch; /* the mixers' blocks for B sequences of one token (backend) */
    real *logits, *head_logits; /* B > the head's chunk rows: (B, V) logits in m->logits while decoding (the
                                   model's own buffer kept in head_logits, put back by model_decode_end) */
    int pos, W, B;      /* next position; positions 0..W-1 fit (model.max_seq_len, the planned N); sequences */
} DecodeState;
/* 1 when the model is a causal LM whose every mixer has a decode step for the window
 * (gma, linear, sdpa, sdpa_ref, performer, mamba; auto when its threshold is not inside
 * the window; not linformer, which is bidirectional) */
int model_can_decode(const Model *m);
/* one sequence (model_decode_begin_batch with B = 1) */
int model_decode_begin(Model *m, DecodeState *s);
/* B sequences, 1 <= B <= the rows the model was allocated for (Bmax x Nmax); with more than
 * one chunk of the head's rows (model_head_rows) the [B,V] logits get a buffer of their own
 * until model_decode_end */
int model_decode_begin_batch(Model *m, DecodeState *s, int B);
/* feed the token at position s->pos (one sequence): its logits [V] are left in m->logits (backend) */
int model_decode_step(Model *m, DecodeState *s, int32_t token);
/* feed tokens[b] to sequence b at position s->pos (host ids): logits [B,V] in m->logits */
int model_decode_step_batch(Model *m, DecodeState *s, const int32_t *tokens);
/* prefill: feed the np-token prompt to every sequence of a fresh state (s->pos 0) as one
 * forward over the prompt (batch 1; np <= the window and the planned N), each layer's
 * state taken from that forward (MixerVT.prefill, or the layer's decode step over its
 * input rows where a mixer has none), copied to all s->B sequences: s->pos becomes np
 * and the logits [B,V] of position np - 1 are in m->logits, as np model_decode_step_batch
 * calls of the prompt's tokens leave them (up to float32 summation order). 0 or -1. */
int model_prefill(Model *m, DecodeState *s, const int32_t *prompt, int np);
void model_decode_end(Model *m, DecodeState *s);

/* ---- the backbone's steps that model.c shares with model_decode.c (not for callers
 * outside src/model) ---- */
/* resid[0] (embedded, R = B*N rows) -> lnf through the blocks and ln_f; with `dec`
 * (incremental decoding, B sequences of N = 1) each mixer takes one step on its states
 * instead of a forward over the sequence */
void model_blocks_forward(Model *m, const MixerCtx *ctx, const DecodeState *dec);
/* the position table the embedding adds (learned pos_emb, the fixed sinusoidal table, or
 * none: NULL) */
real *model_pos_table(const Model *m);
/* the first row of the position table of window row t: a cross model's query rows with
 * cross.query_pos "own" start again at row 0 (docs/model.md §3.8) */
int model_pos_row(const Model *m, int t);
/* a forward begins: dropout live for a training forward with some rate > 0 (docs/model.md §8) */
void model_drop_start(Model *m, int training, long step);
/* the memory this process can still take: physical memory, or the address-space limit
 * (RLIMIT_AS) less what is mapped already when that is lower; 0 when unknown */
double model_memory_available(const char **what);

/* The model's own keys (model.pos, mlp, mlp_hidden_dropout, embed_std, embed_init,
 * mlp_bias_std): a stored section with the prefix model, read only in model.c. */
extern const CfgSection model_keys_section;
/* model.pos as its name: "learned", "sinusoidal", "none" or "rope" */
const char *cfg_pos_name(const Config *c);
/* model.pos "sinusoidal": the table's RMS, sqrt(1/2), over the token embedding's init std
 * (model.embed_std, else model.init_std); 0 for other positions. Above POS_SCALE_WARN the
 * position table dwarfs the tokens and a language model barely trains (docs/longctx.md). */
#define POS_SCALE_WARN 10.0
double cfg_pos_scale_ratio(const Config *c);
/* One line on f, once per process, when cfg_pos_scale_ratio(c) > POS_SCALE_WARN; 1 when it
 * was written now. */
int cfg_pos_scale_warn(const Config *c, FILE *f, const char *prog);
#endif
