/* ops.c: the active op table and the calls that reach the backend through it. ops_select
 * installs a backend's table (cpu always; cuda in a `make cuda` build, where this file is
 * compiled with GMA_CUDA); the other ops_* calls dispatch through g_ops, so a table that
 * wraps the active one (gmabench's profiling table, a copy with some ops replaced) still
 * reaches the backend it wraps. */
#include <string.h>

#include "ops/ops.h"

const GmaOps *g_ops = &gma_ops_cpu;

int ops_select(const char *device) {
    if (!strcmp(device, "cpu")) {
        g_ops = &gma_ops_cpu;
        return 0;
    }
    if (!strcmp(device, "cuda")) {
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
    return gma_errorf("unknown device \"%s\" (cpu or cuda)", device);
}

int ops_set_precision(const char *precision) {
    if (strcmp(precision, "fp32") && strcmp(precision, "tf32") && strcmp(precision, "bf16"))
        return gma_errorf("precision \"%s\": expected fp32, tf32 or bf16", precision);
    return g_ops->set_precision(precision);
}

void ops_sync(void) { g_ops->sync(); }
const char *ops_device_name(void) { return g_ops->device_name(); }
void ops_mem_stats(size_t *in_use, size_t *peak) { g_ops->mem_stats(in_use, peak); }
void ops_mem_reset_peak(void) { g_ops->mem_reset_peak(); }
