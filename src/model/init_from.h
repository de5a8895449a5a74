/* init_from.h: a new model started from another run's weights (gmatrain --init-from).
 *
 * Every tensor of the model (buffers included) whose name and shape a checkpoint holds
 * is copied from it; the others keep their fresh initialisation; the checkpoint's
 * tensors the model lacks are dropped. A layer whose mixer changed (model.mixer: sdpa in
 * the checkpoint, gma here, say) takes the q/k/v/o projections, and their biases when both
 * have them, of the attention it replaces ("mapped"); its routing is new and is seeded by
 * k-means on the first batch (seed[], run by the trainer, train/health.h). The outcome of
 * each tensor is reported, so a caller can log it. No optimiser state or step is taken
 * over. */
#ifndef GMA_INIT_FROM_H
#define GMA_INIT_FROM_H
#include <cjson/cJSON.h>
#include <stdint.h>

#include "model/model.h"

/* INIT_SHAPE: in both, other shape: kept fresh; INIT_MAPPED: a projection of a layer whose
 * mixer changed, copied from the attention it replaces; INIT_CROPPED: the learned position
 * table pos_emb.weight of a shorter model.max_seq_len, its first rows copied (positions
 * 0..max_seq_len-1, as nanoGPT's crop_block_size) */
typedef enum { INIT_COPIED, INIT_NEW, INIT_SHAPE, INIT_MAPPED, INIT_CROPPED, INIT_N } InitOutcome;

typedef struct InitReport {
    char dir[2048];       /* the checkpoint directory */
    long step;            /* its step (-1 when it records none) */
    int n;                /* the model's tensors, in table order */
    InitOutcome *outcome; /* per tensor of m->pt */
    char **from;          /* per tensor: the checkpoint's name it came from (NULL unless copied or mapped) */
    int n_dropped;
    char **dropped;       /* the checkpoint's tensors the model has not */
    int counts[INIT_N];   /* tensors per outcome */
    char old_mixer[CFG_MAX_LAYERS][16]; /* per layer: the checkpoint's mixer when it differs from the model's ("" = same or none) */
    uint8_t seed[CFG_MAX_LAYERS];       /* 1: the layer's routing was not copied: k-means seeds it */
    int n_seed;
} InitReport;

/* Copy into m's parameters every tensor of checkpoint directory dir whose name and
 * shape match (refused, naming the key, when src's block recipe, model.norm, mlp_act or
 * tie_embeddings, differs from m's: nn/recipe.h), and the attention projections of layers whose mixer changed against src
 * (the checkpoint's config; NULL: no layer counts as changed), m already holding its fresh
 * initialisation. 0 with rep filled (free it with init_report_free), or -1 with gma_error
 * naming the file. */
int init_from_ckpt(Model *m, const char *dir, const Config *src, InitReport *rep);
void init_report_free(InitReport *rep);
/* {"from", "step", "copied": [...], "mapped": ["new <- old", ...], "cropped": [...], "replaced": [{"layer",
 * "from", "to"}], "new": [...], "shape_differs": [...], "dropped": [...], "kmeans_seeded":
 * ["blocks.L.mixer", ...]} */
cJSON *init_report_json(const Model *m, const InitReport *rep);
/* One line for the terminal: counts, and the names of the tensors not copied. */
void init_report_print(const Model *m, const InitReport *rep, FILE *f);
#endif
