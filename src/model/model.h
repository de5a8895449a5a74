/* model.h: the GPT-style decoder language model (GMA_SPEC 1) built from a config: token and
 * position embeddings, L blocks of (LN1, mixer, residual, LN2, MLP, residual), final LN and
 * the tied output projection with cross-entropy. Parameters, gradients and optimiser
 * moments are four contiguous buffers indexed by one ParamTable; activations are planned
 * for (B_max, N_max) once, so a training step does not allocate.
 *
 * Shapes: B batch, N sequence, D width, V vocabulary, R = B*N rows, F = d_ff. */
#ifndef GMA_MODEL_H
#define GMA_MODEL_H
#include <stdint.h>

#include "core/config.h"
#include "core/rng.h"
#include "nn/mixers/mixer.h"
#include "nn/params.h"

typedef struct Block {
    Mixer *mixer;
    int ln1w, ln1b, ln2w, ln2b, fcw, fcb, projw, projb; /* param indices (-1 without MLP) */
    /* activations */
    real *ln1, *ln1_mean, *ln1_rstd, *mix, *mid, *ln2, *ln2_mean, *ln2_rstd, *fc, *gelu, *act;
} Block;

typedef struct Model {
    Config cfg;
    int V, D, L, H, F, Nmax, causal, mlp;
    ParamTable pt;
    int wte, wpe, lnfw, lnfb; /* param indices (wpe -1 with pos "none") */
    Block *blocks;
    real *params, *grads, *m, *v; /* backend memory, pt.total reals each */
    /* activations, planned for Bmax x Nmax */
    int Bmax, Nmax_act;
    real *actmem, **resid, *lnf, *lnf_mean, *lnf_rstd, *logits, *loss_rows, *valid_rows;
    real *dresid, *dtmp, *dfc, *scratch;
    int32_t *tok, *tgt;      /* backend copies of the batch */
    int32_t *pred_host;      /* argmax per row (host) */
    size_t act_bytes;        /* planned activation + scratch memory */
    int B, N;                /* shape of the last forward */
    const uint8_t *keymask;  /* host, [B,N] or NULL */
} Model;

/* Build the parameter table and mixers from a validated config (vocab_size must be set). */
int model_build(Model *m, const Config *c);
/* Allocate parameters, gradients, moments and activations for batches up to Bmax x Nmax. */
void model_alloc(Model *m, int Bmax, int Nmax);
/* Initialise parameters from the seed (host draw in table order, then copied to the backend). */
void model_init_params(Model *m, uint64_t seed);
void model_free(Model *m);

typedef struct LossStats {
    double loss_sum; /* summed NLL over scored positions */
    double count;    /* scored positions */
    double correct;  /* argmax == target (when want_acc) */
} LossStats;

/* Forward: tokens and targets [B,N] host arrays (target -1 = not scored). Fills stats. */
int model_forward(Model *m, const int32_t *tok, const int32_t *tgt, int B, int N, const uint8_t *keymask,
                  int want_acc, LossStats *st, int training, long step);
/* Backward after model_forward: accumulates d(loss_scale * mean loss) into m->grads. */
void model_backward(Model *m, double loss_scale);
void model_zero_grad(Model *m);

/* ---- GMA routing health (GMA_SPEC 3.4, 4, 5); no-ops for models without GMA layers ---- */
/* Number of layers whose mixer has routing-health hooks (GMA). */
int model_gma_layers(const Model *m);
/* Sum over GMA layers of the diversity loss of the last training forward (unweighted). The
 * backward adds gma.div_weight * loss_scale * its gradient. */
double model_div_loss(const Model *m);
/* After model_backward of a training micro-batch: update buffers (EMA memory). */
void model_update_buffers(Model *m);
/* 1 when some layer wants k-means initialisation after the first training forward. */
int model_wants_kmeans(const Model *m);
/* k-means initialisation layer by layer on the batch tok [B,N]: forward, initialise layer l
 * from its query rows, forward again for layer l+1... Deterministic under rng. */
int model_kmeans_init(Model *m, const int32_t *tok, const int32_t *tgt, int B, int N, const uint8_t *keymask,
                      Rng *rng);
size_t model_param_count(const Model *m);
#endif
