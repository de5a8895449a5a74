/* ops_check.c: a backend's op table must be complete. ops_check_table() walks every
 * function-pointer slot of a GmaOps table and names the first missing (NULL) op, so a
 * backend that lags behind ops.h is refused at selection instead of crashing mid-step.
 * Slots are walked by position, so an op added to ops.h and not to OPS_NAMES below is
 * still checked (reported by its slot number).
 *
 * Every op is required, the baseline mixers' ops (elu1_forward on) included: both the cpu
 * and the cuda backend implement them all. The mixers still check the ops they need when
 * they are created (NEED_OP in nn/mixers/mixer.h) -- a guard for code that installs a table
 * in g_ops without ops_select -- and `sdpa` still falls back to sdpa_ref without
 * attn_forward/attn_backward. */
#include <stddef.h>
#include <string.h>

#include "ops/ops.h"

typedef struct OpName {
    const char *name;
    size_t off;
} OpName;

#define OP(m) {#m, offsetof(GmaOps, m)}
static const OpName OPS_NAMES[] = {
    OP(alloc), OP(free), OP(zero), OP(to_device), OP(to_host), OP(copy), OP(matmul), OP(matmul_strided),
    OP(bias_forward), OP(bias_backward), OP(add), OP(axpy), OP(scale), OP(sumsq), OP(sum), OP(nonfinite),
    OP(gelu_forward), OP(gelu_backward), OP(layernorm_forward), OP(layernorm_backward), OP(embed_forward),
    OP(embed_backward), OP(xent_forward), OP(xent_backward), OP(argmax_rows), OP(split_heads), OP(merge_heads),
    OP(softmax_rows), OP(softmax_rows_backward), OP(attn_mask), OP(linmix_forward), OP(linmix_backward),
    OP(gma_route_forward), OP(gma_route_backward), OP(adamw), OP(sgd), OP(gma_div_forward), OP(gma_div_backward),
    OP(pair_features_forward), OP(pair_features_backward), OP(elu1_forward), OP(elu1_backward), OP(silu_forward),
    OP(silu_backward), OP(softplus_forward), OP(softplus_backward), OP(gate_silu_forward), OP(gate_silu_backward),
    OP(maxval), OP(attn_forward), OP(attn_backward), OP(favor_logits_forward), OP(favor_logits_backward),
    OP(favor_exp_forward), OP(favor_exp_backward), OP(conv1d_causal_forward), OP(conv1d_causal_backward),
    OP(scan_forward), OP(scan_backward),
};
#define END_OF_TABLE sizeof(GmaOps)
#undef OP
#define N_NAMES (sizeof OPS_NAMES / sizeof OPS_NAMES[0])

int ops_check_table(const GmaOps *ops) {
    const char *tname = ops->name ? ops->name : "(unnamed)";
    /* every member after `name` is a function pointer */
    size_t first = offsetof(GmaOps, alloc), slot = sizeof(void (*)(void));
    for (size_t off = first; off + slot <= END_OF_TABLE; off += slot) {
        void (*fn)(void);
        memcpy(&fn, (const char *)ops + off, slot);
        if (fn) continue;
        for (size_t i = 0; i < N_NAMES; i++)
            if (OPS_NAMES[i].off == off)
                return gma_errorf("backend %s does not implement op %s", tname, OPS_NAMES[i].name);
        return gma_errorf("backend %s does not implement op #%zu of GmaOps", tname, (off - first) / slot);
    }
    return 0;
}
