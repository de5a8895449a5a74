/* ops_check.c: a backend's op table must be complete. ops_check_table() checks every op of
 * the op list GMA_OPS (ops.h), so an op added there is checked without further edits, and
 * names the first missing (NULL) one: a backend that lags behind ops.h is refused at
 * selection instead of crashing mid-step.
 *
 * Every op is required, the baseline mixers' ops (elu1_forward on) included: both the cpu
 * and the cuda backend implement them all. The mixers still check the ops they need when
 * they are created (NEED_OP in nn/mixers/mixer.h) -- a guard for code that installs a table
 * in g_ops without ops_select -- and `sdpa` still falls back to sdpa_ref without
 * attn_forward/attn_backward. */
#include "ops/ops.h"

int ops_check_table(const GmaOps *ops) {
    const char *tname = ops->name ? ops->name : "(unnamed)";
#define GMA_OP_CHECK(ret, op, params) \
    if (!ops->op) return gma_errorf("backend %s does not implement op %s", tname, #op);
    GMA_OPS(GMA_OP_CHECK)
#undef GMA_OP_CHECK
    return 0;
}
