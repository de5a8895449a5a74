/* model_cfg.h: the model backbone's configuration (model.*: task, widths, mixers, position
 * embedding, dropout, initialisation) and what the mixers and the model derive from it.
 * The classifier's own keys are the stem's (nn/stem.h), the pooling's (nn/pool.h) and the
 * head's (nn/cls_head.h). */
#ifndef GMA_MODEL_CFG_H
#define GMA_MODEL_CFG_H
#include "core/config.h"

/* The values of the choice keys, in the order of their rows' choices. */
enum { MODEL_LM, MODEL_CLASSIFY };                     /* model.task: lm|classify */
enum { DENSE_INIT_NORMAL, DENSE_INIT_XAVIER_UNIFORM }; /* model.dense_init: normal|xavier_uniform */

/* The rows model.* of the backbone and their checks (D % H, the mixer list, lengths). */
extern const CfgSection model_cfg_section;

/* Mixer of layer l. */
const char *cfg_layer_mixer(const Config *c, int l);
/* Whether the mixers are causal (resolving -1 by task). */
int cfg_causal(const Config *c);
/* MLP hidden width (model.d_ff, 0 = 4 D). */
int cfg_d_ff(const Config *c);
/* Width of the q/k/v projections (model.qkv_dim, 0 = d_model). */
int cfg_qkv_dim(const Config *c);
#endif
