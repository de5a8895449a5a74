/* cpu.h: the CPU implementations behind gma_ops_cpu (see ops/ops.h for the contracts). */
#ifndef GMA_OPS_CPU_H
#define GMA_OPS_CPU_H
#include "ops/ops.h"

/* Run a loop in parallel only when it has enough elements to repay the fork/join. */
#define PAR_WORTH(work) ((work) >= 32768)

/* A per-thread work buffer (slots 0..3), grown on demand and kept for later calls. */
real *cpu_workspace(int slot, size_t n);

/* cpu_<op> for every op of GMA_OPS (ops/ops.h), each in the file named for its kind:
 * cpu_core.c (memory, the backend hooks, matrix products, elementwise ops, reductions, the
 * optimisers), cpu_nn.c, cpu_linmix.c, cpu_gma_route.c, cpu_gma_topk.c, cpu_gma_div.c, cpu_cls.c, cpu_conv.c, and the
 * baselines' cpu_linear.c, cpu_performer.c, cpu_sdpa.c, cpu_mamba.c, cpu_delta.c. */
#define GMA_CPU_PROTO(ret, op, params) ret cpu_##op params;
GMA_OPS(GMA_CPU_PROTO)
#undef GMA_CPU_PROTO
#endif
