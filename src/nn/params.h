/* params.h: the parameter table. Every tensor of a model has a row here: a stable dotted
 * name (docs/model.md §7), a shape, an initialisation rule, an optimiser group and an offset into
 * the one contiguous buffer of parameters (the same offsets index the gradient and the
 * optimiser moments). Initialisation, weight-decay masks, checkpoints and gradient checks
 * are all driven by this table. */
#ifndef GMA_PARAMS_H
#define GMA_PARAMS_H
#include <stddef.h>

#include "core/common.h"
#include "core/rng.h"

/* XAVIER_UNIFORM: U(-a, a), a = sqrt(6 / (fan_in + fan_out)); LECUN_NORMAL: JAX's and flax's
 * lecun_normal, a normal truncated to +-2 and scaled to standard deviation 1 / sqrt(fan_in)
 * (docs/model.md §1); for a 2-d [out, in] tensor; init_a is unused by both. RAMP, for a
 * [V, D] table of V >= 3 rows: one row u ~ N(0, init_a^2) is drawn and row t is
 * max(t - 1, 0) / (V - 2) u, so rows 1 .. V-1 run from 0 to u in order and row 0 is 0.
 * UNIFORM: U(-init_a, init_a). */
typedef enum { INIT_ZERO, INIT_ONE, INIT_NORMAL, INIT_CONST, INIT_XAVIER_UNIFORM, INIT_LECUN_NORMAL, INIT_RAMP, INIT_UNIFORM } InitKind;
/* Groups decide weight decay (config train.decay_*); BUFFER tensors are state, not trained. */
typedef enum { GROUP_WEIGHT, GROUP_BIAS, GROUP_NORM, GROUP_EMBED, GROUP_MIXTURE, GROUP_BUFFER } ParamGroup;

typedef struct ParamInfo {
    char name[96];
    int ndim;
    int shape[4];
    size_t numel, offset;
    InitKind init;
    double init_a; /* std for NORMAL, value for CONST, bound for UNIFORM */
    ParamGroup group;
    int frozen; /* 1: not trained (train.freeze): no update, no moments, out of the gradient norm */
} ParamInfo;

typedef struct ParamTable {
    ParamInfo *t;
    int n, cap;
    size_t total; /* reals */
} ParamTable;

/* Add a tensor; returns its index. Offsets are aligned to 16 reals. */
int pt_add(ParamTable *pt, const char *name, int ndim, const int *shape, InitKind init, double a, ParamGroup g);
int pt_add2(ParamTable *pt, const char *name, int d0, int d1, InitKind init, double a, ParamGroup g);
int pt_add1(ParamTable *pt, const char *name, int d0, InitKind init, double a, ParamGroup g);
int pt_find(const ParamTable *pt, const char *name);
void pt_free(ParamTable *pt);
/* Initialise host memory `params` from the table with draws from rng in table order. */
void pt_init(const ParamTable *pt, real *params, Rng *rng);
/* Trained (non-buffer) element count. */
size_t pt_count_trained(const ParamTable *pt);
#define PT_PTR(base, pt, idx) ((base) + (pt)->t[(idx)].offset)
#endif
