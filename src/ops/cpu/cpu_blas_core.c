/* cpu_blas_core.c: which of its kernel sets OpenBLAS runs. A build for many CPUs
 * (DYNAMIC_ARCH, as Debian's packages are) picks one by CPU when it loads, unless the
 * environment names one in OPENBLAS_CORETYPE; the choice can halve or double every matrix
 * product (docs/benchmarks.md, "Reading the figures": Haswell's AVX2 kernels against Cooperlake's AVX-512 ones on
 * the same CPU), so gmabench prints it beside its figures. */
#include <stdio.h>
#include <stdlib.h>

#include "ops/ops.h"

char *openblas_get_corename(void);
char *openblas_get_config(void);

const char *ops_blas_core(void) {
    static char buf[96];
    const char *c = openblas_get_corename(), *env = getenv("OPENBLAS_CORETYPE");
    if (!c) c = "unknown";
    if (env && *env) snprintf(buf, sizeof buf, "%s (OPENBLAS_CORETYPE=%.40s)", c, env);
    else snprintf(buf, sizeof buf, "%s", c);
    return buf;
}

const char *ops_blas_config(void) {
    const char *c = openblas_get_config();
    return c ? c : "unknown";
}
