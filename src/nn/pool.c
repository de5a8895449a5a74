/* pool.c: mean and CLS pooling as one weighted sum over positions (see pool.h), written
 * with the batched matrix product: per row r, [1,N] w_r times [N,D] x_r. */
#include "nn/pool.h"

#include "core/common.h"
#include "nn/model_cfg.h"

void pool_weights(real *w, const uint8_t *keymask, int R, int N, PoolKind kind) {
    for (int r = 0; r < R; r++) {
        real *w_r = w + (size_t)r * N;
        const uint8_t *m_r = keymask ? keymask + (size_t)r * N : NULL;
        for (int n = 0; n < N; n++) w_r[n] = 0;
        if (kind == POOL_CLS) {
            w_r[0] = 1;
            continue;
        }
        int count = 0;
        for (int n = 0; n < N; n++) count += !m_r || m_r[n];
        if (!count) continue;
        for (int n = 0; n < N; n++)
            if (!m_r || m_r[n]) w_r[n] = (real)(1.0 / count);
    }
}

void pool_forward(real *out, const real *x, const real *w, int R, int N, int D) {
    g_ops->matmul_strided(out, w, x, 1, D, N, 0, 0, 1, 0, R, (size_t)N, (size_t)N * D, (size_t)D);
}

void pool_backward(real *dx, const real *dout, const real *w, int R, int N, int D) {
    /* [N,1] w_r^T times [1,D] dout_r, accumulated */
    g_ops->matmul_strided(dx, w, dout, N, D, 1, 1, 0, 1, 1, R, (size_t)N, (size_t)D, (size_t)N * D);
}

/* ---- configuration: model.pooling ---- */

#define O(f) CFG_OFF(f)
static const CfgKey g_pool_keys[] = {
    {"model.pooling", CFGT_ENUM, O(model.pooling), 0, "mean", 0, 0, "mean|cls|max",
     "Classifier pooling over real positions: mean, a learned CLS slot, or max per channel (docs/model.md §2)."},
};
#undef O

const CfgSection pool_cfg_section = {NULL, 0, g_pool_keys, CFG_N(g_pool_keys), NULL, NULL};
