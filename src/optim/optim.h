/* optim.h: learning-rate schedules, global-norm clipping and the optimiser step (AdamW
 * with decoupled weight decay, or SGD with momentum), one loop over the parameter table. */
#ifndef GMA_OPTIM_H
#define GMA_OPTIM_H
#include "core/config.h"
#include "model/model.h"

/* The optimiser's and the schedule's keys train.optimizer ... train.freeze: a stored
 * section whose struct only optim.c knows (read elsewhere with cfg_num, set with cfg_set). */
typedef struct OptimCfg OptimCfg;
enum { OPTIM_ADAMW, OPTIM_SGD };                                /* train.optimizer: adamw|sgd */
enum { SCHED_COSINE, SCHED_LINEAR, SCHED_CONSTANT, SCHED_RSQRT }; /* train.schedule */
/* c's optimiser keys (the section inside c, valid as long as c). */
const OptimCfg *optim_cfg(const Config *c);
/* train.freeze of c: parameter-name patterns, comma-joined (CFGT_STRLIST). */
const char *optim_freeze_list(const Config *c);

/* Learning rate for optimiser step `step` (0-based) of a run of `steps` (train.steps):
 * linear warmup from lr/warmup to lr over `warmup` steps, then cosine / linear decay to
 * lr * min_lr_ratio over decay_steps (0 = until `steps`; the floor afterwards), constant,
 * or rsqrt: lr sqrt(warmup / (step + 1)) (docs/model.md §1). */
double optim_lr(const OptimCfg *o, long steps, long step);
/* Weight decay applied to a tensor of this group under this config. */
double optim_decay_for(const OptimCfg *o, ParamGroup g);
/* Global L2 norm of the trained gradients. */
double optim_grad_norm(const Model *m);
/* Clip (when grad_clip > 0 and norm > clip), then update. `step` is 1-based for bias
 * correction. Returns the clip factor applied (1 = none). */
double optim_step(Model *m, const OptimCfg *o, long step, double lr, double grad_norm);
/* Mark the trained tensors whose names match a pattern of c's train.freeze (fnmatch globs:
 * *, ?, [...]) frozen: optim_step and optim_grad_norm pass them by, the checkpoints keep no
 * moments for them. 0 with the counts of frozen tensors and their elements, or -1 (gma_error
 * naming the first pattern that matches no trained tensor; nothing left frozen). */
int optim_freeze(Model *m, const Config *c, int *n_tensors, size_t *n_params);
/* The optimiser's and the schedule's rows (train.optimizer, lr, ..., grad_clip, freeze). */
extern const CfgSection optim_cfg_section;

#endif
