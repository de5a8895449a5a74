/* head_gate.c: the per-head gate of two paths' outputs (head_gate.h), built from the
 * backend's ops (the outputs stay in backend memory; only the H gate values cross). */
#include "nn/mixers/head_gate.h"

#include <math.h>

#include "ops/ops.h"

const real *head_gate_values(real *host, const real *logits, int H) {
    g_ops->to_host(host, logits, sizeof(real) * H);
    for (int h = 0; h < H; h++) host[h] = (real)(1 / (1 + exp(-(double)host[h])));
    return host;
}

void head_gate_mix(real *out, const real *a, const real *b, const real *g, int B, int H, size_t L, int use_a,
                   int use_b) {
    for (int bb = 0; bb < B; bb++)
        for (int h = 0; h < H; h++) {
            size_t o = ((size_t)bb * H + h) * L;
            real wa = use_a ? g[h] : 0, wb = use_b ? 1 - g[h] : 0;
            if (!use_b) { /* out = wa a (in place allowed) */
                if (out != a) g_ops->copy(out + o, a + o, sizeof(real) * L);
                g_ops->scale(out + o, wa, L);
                continue;
            }
            if (out != b) g_ops->copy(out + o, b + o, sizeof(real) * L);
            g_ops->scale(out + o, wb, L);
            if (use_a) g_ops->axpy(out + o, wa, a + o, L);
        }
}

void head_gate_backward(real *dlogit, const real *g, const real *dout, const real *a, const real *b, real *dots,
                        real *work, int B, int H, size_t L) {
    /* <dout_h, a_h> and <dout_h, b_h> of every head, one strided product each per sequence */
    for (int bb = 0; bb < B; bb++) {
        const real *db = dout + (size_t)bb * H * L;
        g_ops->matmul_strided(dots, db, a + (size_t)bb * H * L, 1, 1, (int)L, 0, 0, 1, bb > 0, H, L, L, 1);
        g_ops->matmul_strided(dots + H, db, b + (size_t)bb * H * L, 1, 1, (int)L, 0, 0, 1, bb > 0, H, L, L, 1);
    }
    real *hd = work, *dg = hd + 2 * H;
    g_ops->to_host(hd, dots, sizeof(real) * 2 * H);
    g_ops->to_host(dg, dlogit, sizeof(real) * H);
    for (int i = 0; i < H; i++) dg[i] += g[i] * (1 - g[i]) * (hd[i] - hd[H + i]);
    g_ops->to_device(dlogit, dg, sizeof(real) * H);
}
