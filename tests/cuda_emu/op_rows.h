/* op_rows.h: the one table of the backend ops' test cases: one ROW per op and shape.
 *
 *   ROW(part, op, grad, (args))
 *
 * part: the selector of scripts/cuda_emu_check.sh (mem, matmul, nn, linmix, route, div,
 *       stem, delta; "core" and "all" run every row);
 * op:   emu_core.cpp runs t_<op>(args) on the CPU backend and on the emulated CUDA
 *       backend and compares every output by normalised error (relative L2; integer and
 *       copy outputs exactly);
 * grad: 1 when the op has a backward: test64_ops.c then runs g_<op>(args), the float64
 *       finite-difference check (tests/gradcheck.h) of that backward on the CPU backend;
 * args: the case's shapes (and settings), as t_<op> and g_<op> take them.
 *
 * OP_ROWS run in emu_core.cpp (the CUDA op table of cuda_ops_init, cuBLAS through the
 * shims); BASE_ROWS, the baseline mixers' ops of cuda_{baselines,mamba,sdpa}.cu, in
 * emu_baselines.cpp (those three files alone, with a stand-in GEMM). Each row must run at
 * least one check in each driver, and test_cuda_emu counts the rows from this table, so a
 * new op is one row here plus its t_ (and g_) function (docs/cuda.md, "Adding an op: one
 * row"). Rows run in this order (a driver's random inputs come from one seeded stream). */
#ifndef GMA_OP_ROWS_H
#define GMA_OP_ROWS_H
#define OP_ROWS(ROW)                                                                                                   \
    ROW(mem, mem, 0, ())                                                                                               \
    ROW(matmul, matmul, 0, (OPS_FP32, 1e-4))                                                                             \
    ROW(matmul, matmul, 0, (OPS_TF32, 2e-3))                                                                             \
    ROW(matmul, matmul, 0, (OPS_BF16, 1e-2))                                                                             \
    ROW(nn, basic, 1, (70, 45))                                                                                        \
    ROW(nn, ln, 1, (37, 70, 0))                                                                                        \
    ROW(nn, ln, 1, (300, 33, 0))                                                                                       \
    ROW(nn, ln, 1, (37, 70, 1)) /* RMSNorm (mean and bias NULL) */                                                     \
    ROW(nn, ln, 1, (300, 33, 1))                                                                                       \
    ROW(nn, embed, 1, (2, 9, 150, 200, 1))                                                                             \
    ROW(nn, embed, 1, (3, 5, 20, 7, 0))                                                                                \
    ROW(nn, xent, 1, (12, 1000))                                                                                       \
    ROW(nn, xent, 1, (7, 30))                                                                                          \
    ROW(nn, distill, 1, (12, 1000, 0.7f))                                                                              \
    ROW(nn, distill, 1, (7, 30, 2.0f))                                                                                 \
    ROW(nn, heads, 0, (2, 7, 3, 5))                                                                                    \
    ROW(nn, softmax, 1, (9, 300, 1))                                                                                   \
    ROW(nn, softmax, 1, (6, 40, 0))                                                                                    \
    ROW(nn, softmax, 1, (5, 6, 1))                                                                                     \
    ROW(nn, mask, 0, (2, 2, 13))                                                                                       \
    ROW(nn, cls, 1, (5, 70))                                                                                           \
    ROW(nn, opt, 0, (3000))                                                                                            \
    ROW(nn, ln, 1, (5, 7, 0))                /* degenerate widths */                                                   \
    ROW(nn, ln, 1, (5, 7, 1))                                                                                          \
    ROW(nn, xent, 1, (3, 1))                                                                                           \
    ROW(nn, softmax, 1, (4, 1, 0))                                                                                     \
    ROW(nn, embed, 1, (1, 1, 1, 1, 1))                                                                                 \
    ROW(linmix, linmix, 1, (3, 20, 8, 6, 0, 0))                                                                        \
    ROW(linmix, linmix, 1, (3, 24, 8, 6, 1, 8))                                                                        \
    ROW(linmix, linmix, 1, (2, 23, 7, 5, 1, 8))                                                                        \
    ROW(linmix, linmix, 1, (2, 10, 4, 3, 1, 16))                                                                       \
    ROW(linmix, linmix, 1, (2, 37, 34, 33, 1, 5))                                                                      \
    ROW(linmix, linmix, 1, (1, 5, 3, 2, 1, 1))                                                                         \
    ROW(linmix, linmix, 1, (2, 1, 3, 2, 1, 4)) /* N = 1 */                                                             \
    ROW(linmix, linmix, 1, (2, 1, 3, 2, 0, 0))                                                                         \
    ROW(linmix, linmix_cross, 0, (3, 40, 8, 6, 25, 40)) /* the cross layer's layouts: zero query rows past 25 */  \
    ROW(linmix, linmix_cross, 0, (2, 70, 16, 8, 70, 30)) /* zero key and value rows past 30 */                      \
    ROW(linmix, linmix_step, 0, (3, 2, 5, 7))                                                                          \
    ROW(linmix, linmix_step, 0, (2, 4, 64, 200))                                                                       \
    ROW(linmix, linmix_step, 0, (1, 1, 1, 1))                                                                          \
    ROW(route, route, 1, (2, 3, 11, 8, 4, 0))                                                                          \
    ROW(route, route, 1, (2, 3, 11, 8, 4, 1))                                                                          \
    ROW(route, route, 1, (1, 2, 9, 40, 37, 0))                                                                         \
    ROW(route, route, 1, (2, 2, 5, 3, 70, 1))                                                                          \
    ROW(route, route, 1, (1, 1, 1, 1, 1, 0))                                                                           \
    ROW(route, route, 1, (3, 2, 1, 8, 5, 0)) /* one position of B sequences (decoding) */                              \
    ROW(route, route, 1, (4, 3, 1, 6, 70, 1))                                                                          \
    ROW(route, dirichlet, 1, (3, 7, 2))         /* Hp, Kc, dropped components */                                      \
    ROW(route, dirichlet, 1, (1, 70, 5))                                                                               \
    ROW(route, dirichlet, 1, (2, 1, 0))                                                                                \
    ROW(div, div, 1, (2, 3, 13, 5))                                                                                    \
    ROW(div, div, 1, (1, 2, 300, 3))                                                                                   \
    ROW(stem, conv, 0, (2, 5, 4, 3, 1))                                                                                \
    ROW(stem, conv, 0, (1, 7, 6, 33, 2))                                                                               \
    ROW(stem, conv, 0, (3, 4, 4, 2, 4))                                                                                \
    ROW(stem, conv, 0, (1, 1, 1, 1, 1))                                                                                \
    ROW(stem, chnorm, 1, (1, 600, 35))                                                                                 \
    ROW(stem, chnorm, 1, (3, 70, 4))                                                                                   \
    ROW(stem, chnorm, 1, (2, 300, 1))                                                                                  \
    ROW(stem, chnorm, 1, (1, 1, 3))                                                                                    \
    ROW(stem, maxpool, 1, (3, 40, 33))                                                                                 \
    ROW(stem, maxpool, 1, (2, 1, 5))                                                                                   \
    ROW(route, route, 0, (2, 2, 100, 8, 33, 0)) /* k_route_dc: more rows than warps */                                 \
    ROW(route, route, 0, (3, 2, 50, 4, 9, 1)) /* (float64 checks: the rows above) */                                \
    ROW(delta, rownorm, 1, (37, 16, 0, 0))        /* R, C, mean, gated: the L2 norm of q, k */                      \
    ROW(delta, rownorm, 1, (20, 40, 1, 1))        /* the gated RMSNorm */                                             \
    ROW(delta, rownorm, 1, (3, 1, 1, 1))                                                                               \
    ROW(delta, rownorm, 0, (600, 70, 1, 1))                                                                            \
    ROW(delta, delta, 1, (2, 3, 11, 4, 5, 3, 1, 1, 1)) /* B, H, N, dk, dv, chunk, delta, decay, rows' decays */       \
    ROW(delta, delta, 1, (1, 2, 9, 6, 6, 4, 0, 1, 0))                                                                  \
    ROW(delta, delta, 1, (2, 1, 7, 3, 4, 16, 1, 0, 1)) /* gma.write delta with gma.slot_decay */                      \
    ROW(delta, delta, 1, (2, 1, 7, 3, 4, 16, 1, 0, 0))                                                                 \
    ROW(delta, delta, 1, (1, 1, 5, 2, 3, 1, 0, 0, 0))                                                                  \
    ROW(delta, delta, 0, (2, 2, 70, 40, 70, 16, 1, 1, 0)) /* more columns than a warp, ragged chunks */                \
    ROW(delta, delta, 0, (2, 2, 40, 40, 70, 16, 1, 0, 1))                                                              \
    ROW(delta, delta, 0, (1, 2, 33, 64, 32, 64, 1, 1, 0)) /* one chunk */                                              \
    ROW(delta, delta_step, 0, (3, 2, 5, 7, 1, 1, 1))     /* B, H, dk, dv, delta, decay, rows' decays */               \
    ROW(delta, delta_step, 0, (2, 1, 33, 40, 0, 1, 0))                                                                 \
    ROW(delta, delta_step, 0, (2, 2, 40, 70, 1, 0, 1))                                                                 \
    ROW(route, topk, 1, (2, 3, 5, 7, 2, 0))  /* B, H, N, Kc, k, Gumbel noise: gma.topk */                              \
    ROW(route, topk, 1, (2, 3, 5, 7, 3, 1))                                                                            \
    ROW(route, topk, 1, (1, 2, 9, 40, 1, 1))                                                                           \
    ROW(route, topk, 0, (3, 2, 50, 70, 8, 1))                                                                          \
    ROW(route, topk, 0, (2, 1, 1, 5, 4, 0))  /* one position (decoding) */

#define BASE_ROWS(ROW)                                                                                                 \
    ROW(elem, elem, 1, (1000))                                                                                         \
    ROW(favor, favor, 1, (2, 3, 37, 16, 20))                                                                           \
    ROW(favor, favor, 1, (1, 2, 10, 8, 45))                                                                            \
    ROW(conv, conv1d, 1, (2, 300, 40, 4))                                                                              \
    ROW(conv, conv1d, 1, (1, 5, 3, 7))                                                                                 \
    ROW(scan, scan, 1, (2, 70, 40, 16, 16))                                                                            \
    ROW(scan, scan, 1, (2, 30, 20, 5, 7))                                                                              \
    ROW(scan, scan, 1, (1, 20, 10, 48, 64))                                                                            \
    ROW(scan, scan, 1, (1, 9, 9, 200, 4))                                                                              \
    ROW(scan, scan_step, 0, (3, 40, 16))                                                                               \
    ROW(scan, scan_step, 0, (2, 300, 7))                                                                               \
    ROW(attn, attn, 1, (2, 2, 70, 16, 1, 0, 0, 0))                                                                     \
    ROW(attn, attn, 1, (2, 2, 70, 16, 0, 0, 0, 0))                                                                     \
    ROW(attn, attn, 1, (2, 1, 100, 40, 1, 1, 0, 0))                                                                    \
    ROW(attn, attn, 1, (2, 1, 100, 40, 0, 1, 0, 0))                                                                    \
    ROW(attn, attn, 1, (1, 1, 33, 64, 1, 0, 0, 0))                                                                     \
    ROW(attn, attn, 1, (1, 1, 40, 130, 0, 0, 0, 0))                                                                    \
    ROW(attn, attn, 1, (1, 1, 20, 256, 1, 0, 0, 0))                                                                    \
    ROW(attn, attn, 1, (2, 2, 70, 16, 1, 0, 0.1, 0)) /* attention dropout */                                           \
    ROW(attn, attn, 1, (2, 1, 100, 40, 0, 1, 0.3, 0))                                                                  \
    ROW(attn, attn, 1, (1, 1, 40, 130, 1, 0, 0.5, 0))                                                                  \
    ROW(attn, attn, 1, (2, 2, 70, 16, 0, 2, 0, 0)) /* the cross layer's layout: a padded context tail */               \
    ROW(attn, attn, 1, (1, 1, 90, 8, 0, 2, 0, 0))                                                                      \
    ROW(attn, attn, 1, (2, 2, 70, 16, 1, 0, 0, 9)) /* sliding window: causal band of 9 keys */                         \
    ROW(attn, attn, 1, (2, 1, 100, 40, 0, 1, 0, 20)) /* a symmetric band of 39, padding */                             \
    ROW(attn, attn, 1, (1, 1, 150, 8, 1, 0, 0.3, 40)) /* band over several tiles, dropout */                           \
    ROW(attn, attn, 1, (2, 1, 130, 16, 0, 0, 0, 1)) /* W = 1: each query its own key */                                \
    ROW(attn, attn, 1, (1, 1, 40, 16, 1, 0, 0, 64)) /* W > N: full causal attention */                                 \
    ROW(attn, attn_step, 0, (3, 2, 16, 150, 160)) /* the decoding step: 150 tokens into a 160-row cache */             \
    ROW(attn, attn_step, 0, (2, 2, 16, 150, 40)) /* a 40-row ring cache (sliding window), 150 tokens */                \
    ROW(attn, attn_step, 0, (1, 1, 130, 9, 9))                                                                         \
    ROW(attn, rope, 1, (2, 3, 37, 16, 0)) /* rotary positions (model.pos "rope") */                                    \
    ROW(attn, rope, 1, (1, 2, 9, 6, 5000)) /* from position 5000 (decoding far into a sequence) */                      \
    ROW(attn, rope, 1, (1, 1, 3, 2, 0))
#endif
