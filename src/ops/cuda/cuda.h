/* cuda.h: the CUDA backend (the .cu files of src/ops/cuda, `make cuda`). ops.c reaches it through
 * cuda_ops_init alone (declared in ops/ops.h); the backend's own files see cuda_<op> for every op of GMA_OPS
 * (ops/ops.h), the functions cuda_core.cu gathers into its GmaOps table. Each cuda_<op>
 * lives in the file named for its kind: cuda_core.cu (memory, the backend hooks, matrix
 * products, elementwise ops, reductions, the optimisers), cuda_nn.cu (GELU, LayerNorm,
 * embeddings, cross-entropy, heads, softmax, masks), cuda_linmix.cu, cuda_gma_route.cu, cuda_gma_topk.cu,
 * cuda_gma_div.cu, cuda_cls.cu, cuda_baselines.cu, cuda_sdpa.cu, cuda_mamba.cu, cuda_delta.cu. */
#ifndef GMA_OPS_CUDA_H
#define GMA_OPS_CUDA_H

#ifdef __cplusplus
extern "C" {
#endif
#include "ops/ops.h"

/* cuda_ops_init, the entry point ops.c calls, is declared in ops/ops.h. */
#ifdef __cplusplus
}

#define GMA_CUDA_PROTO(ret, op, params) ret cuda_##op params;
GMA_OPS(GMA_CUDA_PROTO)
#undef GMA_CUDA_PROTO
#endif
#endif
