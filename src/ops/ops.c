/* ops.c: the active op table and the calls that reach the backend through it. ops_select
 * installs a backend's table (cpu always; cuda in a `make cuda` build, where this file is
 * compiled with GMA_CUDA); the other ops_* calls dispatch through g_ops, so a table that
 * wraps the active one (gmabench's profiling table, a copy with some ops replaced) still
 * reaches the backend it wraps. */
#include "ops/ops.h"

const GmaOps *g_ops = &gma_ops_cpu;

/* A backend's table must be complete: every op of the op list GMA_OPS (ops.h) is checked,
 * so an op added there is checked without further edits, and the first missing (NULL) one
 * is named: a backend that lags behind ops.h is refused at selection instead of crashing
 * mid-step. Every op is required, the baseline mixers' included: both the cpu and the
 * cuda backend implement them all. The mixers still check the ops they need when they are
 * created (NEED_OP in nn/mixers/mixer.h), a guard for code that installs a table in g_ops
 * without ops_select, and `sdpa` still falls back to sdpa_ref without attn_forward. */
int ops_check_table(const GmaOps *ops) {
    const char *tname = ops->name ? ops->name : "(unnamed)";
#define GMA_OP_CHECK(ret, op, params) \
    if (!ops->op) return gma_errorf("backend %s does not implement op %s", tname, #op);
    GMA_OPS(GMA_OP_CHECK)
#undef GMA_OP_CHECK
    return 0;
}

static const char *const g_device_names[] = {"cpu", "cuda"};
static const char *const g_precision_names[] = {"fp32", "tf32", "bf16"};

const char *ops_device_key(int device) { return device >= 0 && device < 2 ? g_device_names[device] : "?"; }
const char *ops_precision_name(int precision) { return precision >= 0 && precision < 3 ? g_precision_names[precision] : "?"; }

int ops_select(int device) {
    if (device == OPS_CPU) {
        g_ops = &gma_ops_cpu;
        return 0;
    }
    if (device == OPS_CUDA) {
#ifdef GMA_CUDA
        const GmaOps *ops = NULL;
        if (cuda_ops_init(&ops) != 0) return -1;
        if (ops_check_table(ops) != 0) return gma_error_prefix("device \"cuda\"");
        g_ops = ops;
        return 0;
#else
        return gma_errorf("device \"cuda\": this binary was built without CUDA (build with `make cuda`, or `make cuda-mpi` for data-parallel runs)");
#endif
    }
    return gma_errorf("unknown device %d (cpu or cuda)", device);
}

int ops_set_precision(int precision) {
    if (precision < OPS_FP32 || precision > OPS_BF16) return gma_errorf("precision %d: expected fp32, tf32 or bf16", precision);
    return g_ops->set_precision(precision);
}

void ops_sync(void) { g_ops->sync(); }
const char *ops_device_name(void) { return g_ops->device_name(); }
void ops_mem_stats(size_t *in_use, size_t *peak) { g_ops->mem_stats(in_use, peak); }
void ops_mem_reset_peak(void) { g_ops->mem_reset_peak(); }
