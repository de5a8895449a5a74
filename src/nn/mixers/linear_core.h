/* linear_core.h: the configuration of the normalised linear-mixing core (docs/model.md
 * §3.1) that gma, linear and performer share: the chunk length of its causal scan and the
 * denominator's epsilon. The keys keep their public names gma.chunk and gma.eps; their
 * value lives here, in the section "linear_core", which all three mixers read. */
#ifndef GMA_LINEAR_CORE_H
#define GMA_LINEAR_CORE_H
#include "core/config.h"

typedef struct LinearCoreCfg {
    double eps; /* gma.eps */
    int chunk;  /* gma.chunk */
} LinearCoreCfg;

extern const CfgSection linear_core_section;
/* The core's values in c. */
const LinearCoreCfg *linear_core_cfg(const Config *c);
#endif
