/* linear_core.c: the rows of the shared linear-mixing core's keys (gma.eps, gma.chunk). */
#include "nn/mixers/linear_core.h"

#define O(f) offsetof(LinearCoreCfg, f)
static const CfgKey g_keys[] = {
    {"eps", CFGT_REAL, O(eps), 0, "1e-06", 0, 1, NULL, "Denominator epsilon of the normalised mixing core."},
    {"chunk", CFGT_INT, O(chunk), 0, "64", 1, 65536, NULL, "Chunk length C of the causal scan."},
};
#undef O

const CfgSection linear_core_section = {"linear_core", sizeof(LinearCoreCfg), g_keys, CFG_N(g_keys), NULL, "gma"};

const LinearCoreCfg *linear_core_cfg(const Config *c) { return cfg_section_of(c, &linear_core_section); }
