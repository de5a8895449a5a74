/* ops.h: the backend-neutral op layer. Layers and the model call only these; a backend
 * (cpu/ here, cuda/ with `make cuda`) fills one GmaOps table, whose members come from the
 * op list GMA_OPS below; ops.c holds the active table and the dispatch to the backends.
 * Pointers passed to ops live in the backend's memory (host for cpu, device for cuda);
 * only alloc/copy cross.
 *
 * Conventions (llm.c style): outputs first, then inputs, then weights, then sizes.
 * Backward ops ACCUMULATE into their gradient outputs (+=); the caller zeroes gradients
 * once per step. Matrices are row-major. Linear weights are [out, in] (y = x W^T + b).
 *
 * Shapes: R rows (B*N), C channels, V vocabulary, BH batch*heads, N sequence, F feature
 * width, d head width, Kc components.
 */
#ifndef GMA_OPS_H
#define GMA_OPS_H
#include <stddef.h>
#include <stdint.h>

#include "core/common.h"
#include "ops/dropout.h"
#include "ops/gma_topk.h"

/* The op list, written once: X(return type, op, (parameters)) for every op. It generates
 * the GmaOps members, the names ops_check_table verifies (ops.c), and each backend's
 * prototypes and table: cpu_<op> (cpu/cpu.h, cpu/cpu_core.c) and cuda_<op> (cuda/cuda.h,
 * cuda/cuda_core.cu). Adding an op is a line here plus its cpu_ and cuda_ functions. */
#define GMA_OPS(X)                                                                                                     \
    /* memory */                                                                                                       \
    X(void *, alloc, (size_t bytes)) /* zero-filled */                                                                 \
    X(void, free, (void *p))                                                                                           \
    X(void, zero, (void *p, size_t bytes))                                                                             \
    X(void, to_device, (void *dst, const void *host_src, size_t bytes))                                                \
    X(void, to_host, (void *host_dst, const void *src, size_t bytes))                                                  \
    X(void, copy, (void *dst, const void *src, size_t bytes))                                                          \
    /* the backend itself, behind ops_set_precision, ops_sync, ops_device_name, ops_mem_stats                          \
     * and ops_mem_reset_peak below (a table that wraps another copies these from it) */                               \
    X(int, set_precision, (int precision)) /* OpsPrecision, checked by ops_set_precision */                          \
    X(void, sync, (void))                                                                                              \
    X(const char *, device_name, (void))                                                                               \
    X(void, mem_stats, (size_t *in_use, size_t *peak))                                                                 \
    X(void, mem_reset_peak, (void))                                                                                    \
    /* C[M,N] = alpha op(A) op(B) + beta C; op(A) is [M,K], op(B) is [K,N]; ta/tb transpose */                         \
    X(void, matmul, (real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real alpha,           \
        real beta))                                                                                                    \
    /* the same for `batch` independent products at the given element strides */                                       \
    X(void, matmul_strided, (real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb,               \
        real alpha, real beta, int batch, size_t sA, size_t sB, size_t sC))                                            \
    /* out[r,:] += bias ; dbias += sum_r dout[r,:] */                                                                  \
    X(void, bias_forward, (real *out, const real *bias, int R, int C))                                                 \
    X(void, bias_backward, (real *dbias, const real *dout, int R, int C))                                              \
    /* elementwise: out = a + b ; y += alpha x ; x *= s */                                                             \
    X(void, add, (real *out, const real *a, const real *b, size_t n))                                                  \
    X(void, axpy, (real *y, real alpha, const real *x, size_t n))                                                      \
    X(void, scale, (real *x, real s, size_t n))                                                                        \
    /* sum of squares and sum, returned to the host in double */                                                       \
    X(double, sumsq, (const real *x, size_t n))                                                                        \
    X(double, sum, (const real *x, size_t n))                                                                          \
    /* 1 if any element is NaN or Inf */                                                                               \
    X(int, nonfinite, (const real *x, size_t n))                                                                       \
    /* Inverted dropout (docs/model.md §8) of S sequences of per_seq elements: y = x * m / (1 - p)                     \
     * with the mask m of ops/dropout.h for `drop` (host memory); y may be x. The backward                             \
     * of a dropout site is the same op on the gradient. */                                                            \
    X(void, dropout, (real *y, const real *x, int S, size_t per_seq, const GmaDrop *drop))                             \
    /* GELU (tanh form): out = gelu(x) ; dx += dout * gelu'(x) */                                                      \
    X(void, gelu_forward, (real *out, const real *x, size_t n))                                                        \
    X(void, gelu_backward, (real *dx, const real *dout, const real *x, size_t n))                                      \
    /* The MLP's bias and GELU in one pass over R rows of C: pre[r,:] += bias (none when NULL),                      \
     * out = gelu(pre). Backward: dpre = dout * gelu'(pre), written (dpre may be dout), and                            \
     * dbias += the column sums of dpre (when not NULL), in fixed blocks of rows. */                                   \
    X(void, bias_gelu_forward, (real *pre, real *out, const real *bias, int R, int C))                                 \
    X(void, bias_gelu_backward, (real *dpre, real *dbias, const real *dout, const real *pre, int R, int C))            \
    /* ReLU: out = max(x, 0) ; dx += dout * [x > 0] (the classifier head, docs/model.md §2) */                         \
    X(void, relu_forward, (real *out, const real *x, size_t n))                                                        \
    X(void, relu_backward, (real *dx, const real *dout, const real *x, size_t n))                                      \
    /* LayerNorm over the last dim C; mean, rstd [R] saved. mean NULL: RMSNorm instead                                \
     * (docs/model.md §1, model.norm "rmsnorm"): out = x / sqrt(mean(x^2) + 1e-6) w (+ b), rstd                        \
     * saved; b and db may be NULL (no shift). */                                                                      \
    X(void, layernorm_forward, (real *out, real *mean, real *rstd, const real *x, const real *w, const real *b,        \
        int R, int C))                                                                                                 \
    X(void, layernorm_backward, (real *dx, real *dw, real *db, const real *dout, const real *x, const real *w,         \
        const real *mean, const real *rstd, int R, int C))                                                             \
    /* The residual add and the LayerNorm that reads it, in one pass: sum = a + b (sum may be a),                     \
     * then out, mean, rstd = layernorm_forward of sum (mean NULL: RMSNorm); its backward is                           \
     * layernorm_backward on sum. */                                                                                   \
    X(void, add_layernorm_forward, (real *sum, real *out, real *mean, real *rstd, const real *a, const real *b,         \
        const real *w, const real *bias, int R, int C))                                                                \
    /* out[b,t,:] = wte[tok[b,t],:] + (wpe ? wpe[t,:] : 0) ; backward scatters into dwte, dwpe */                      \
    X(void, embed_forward, (real *out, const int32_t *tok, const real *wte, const real *wpe, int B, int T, int C))     \
    X(void, embed_backward, (real *dwte, real *dwpe, const real *dout, const int32_t *tok, int B, int T, int C))       \
    /* Cross-entropy over rows of logits: loss[r] = -log softmax(logits[r])[target[r]], 0 where                        \
     * target < 0; also writes 1/0 into valid[r]. Backward overwrites logits with                                      \
     * scale * (softmax - onehot) (0 rows where target < 0). */                                                        \
    X(void, xent_forward, (real *loss, real *valid, const real *logits, const int32_t *target, int R, int V))          \
    X(void, xent_backward, (real *dlogits_inplace, const int32_t *target, int R, int V, real scale))                   \
    /* Training: loss and valid as xent_forward, and logits overwritten with softmax - onehot                          \
     * (the gradient of the summed loss, 0 rows where target < 0) for the backward to scale */                         \
    X(void, xent_grad, (real *loss, real *valid, real *logits_inplace, const int32_t *target, int R, int V))           \
    /* Distillation (docs/model.md §1): for rows with target >= 0, p = softmax(teacher / T),                           \
     * q = softmax(student / T): kl[r] = sum_v p log(p / q), and teacher overwritten with                              \
     * scale * (q - p) (with scale = w T, the gradient of w T^2 KL in the student's logits);                           \
     * 0 in both where target < 0 */                                                                                   \
    X(void, distill_grad, (real *kl, real *teacher_inplace, const real *student, const int32_t *target, int R, int V,  \
        real T, real scale))                                                                                           \
    /* argmax per row (for accuracy), into host-visible int32 out */                                                   \
    X(void, argmax_rows, (int32_t *out, const real *x, int R, int V))                                                  \
    /* heads: x [B,N,H*d] <-> xh [B,H,N,d] ; merge accumulates nothing (plain copy) */                                 \
    X(void, split_heads, (real *xh, const real *x, int B, int N, int H, int d))                                        \
    X(void, merge_heads, (real *x, const real *xh, int B, int N, int H, int d))                                        \
    /* Row softmax in place with scale and optional additive per-column bias [C]; rows that are                        \
     * entirely -inf become 0. backward: dx = y * (dy - <dy,y>) (overwrites dy with dx) */                             \
    X(void, softmax_rows, (real *x, int R, int C, real scale, const real *colbias))                                    \
    X(void, softmax_rows_backward, (real *dy_inplace, const real *y, int R, int C))                                    \
    /* Attention score mask in place: S [B,H,N,N] gets -inf where (causal and j > i) or key j of                       \
     * batch b is padding. keymask [B,N] is HOST memory (1 = token, 0 = padding) or NULL. */                           \
    X(void, attn_mask, (real *S, const uint8_t *keymask, int B, int H, int N, int causal))                             \
    /* Normalised linear mixing core (docs/model.md §3.1) for BH independent heads.                                    \
     * phq, phk [BH,N,F] (padded keys already zero), v [BH,N,d] -> out [BH,N,d], den [BH,N].                           \
     * causal: chunked scan with chunk C; state [BH, ceil(N/C), F*d + F] saved for backward.                         \
     * backward: state NULL = none saved, the op recomputes it from phk and v (the same sums). */                    \
    X(void, linmix_forward, (real *out, real *den, real *state, const real *phq, const real *phk, const real *v,       \
        int BH, int N, int F, int d, int causal, int chunk, real eps))                                                 \
    X(void, linmix_backward, (real *dphq, real *dphk, real *dv, const real *dout, const real *out,                     \
        const real *den, const real *state, const real *phq, const real *phk, const real *v, int BH, int N, int F,     \
        int d, int causal, int chunk))                                                                                 \
    /* One token of linmix_forward's causal core for incremental decoding, for B sequences of H                        \
     * heads: sequence b's S [H,F,d] and z [H,F] at state + b state_stride (linmix_decode_state),                      \
     * carried from call to call (zero before the first token); phq, phk [B,H,F], v, out [B,H,d]:                      \
     * S_h += phk_h^T v_h ;  z_h += phk_h ;  out_h = phq_h S_h / (phq_h . z_h + eps),                                  \
     * in one pass over S. */                                                                                          \
    X(void, linmix_step, (real *out, real *state, size_t state_stride, const real *phq, const real *phk,               \
        const real *v, int B, int H, int F, int d, real eps))                                                          \
    /* GMA Gaussian routing (docs/model.md §3.2), fused log-density + softmax, for BH heads of R rows:                 \
     * x [B,H,N,d] rows, per-head params mu, var_raw [H,Kc,d], prior [H,Kc]; gamma [B,H,N,Kc].                         \
     * shared: one parameter set (index 0) for every head. */                                                          \
    X(void, gma_route_forward, (real *gamma, const real *x, const real *mu, const real *var_raw,                       \
        const real *prior, int B, int H, int N, int d, int Kc, real tau, real var_floor, int shared))                  \
    X(void, gma_route_backward, (real *dx, real *dmu, real *dvar_raw, real *dprior, const real *dgamma,                \
        const real *gamma, const real *x, const real *mu, const real *var_raw, const real *prior, int B, int H,        \
        int N, int d, int Kc, real tau, real var_floor, int shared))                                                   \
    /* GMA's Dirichlet prior on the mixture weights (docs/model.md §4.1): Hp rows of Kc prior                          \
     * logits l, pi_h = softmax(l_h) (in double); dl[h,j] += c ([j live] - n_live(h) pi_hj),                           \
     * component j live when l_hj > live_above (a dropped one is out of the sum, pi ~ 0) */                            \
    X(void, gma_dirichlet_backward, (real *dl, const real *l, int Hp, int Kc, double c, real live_above))              \
    /* GMA's sparse routing (gma.topk, docs/model.md §3.12): each row of gamma [B,H,N,Kc] cut                          \
     * to its k largest entries (after the Gumbel noise of `noise`, host memory, NULL = none)                          \
     * and renormalised, as ops/gma_topk.h's gma_topk_row; out may be gamma. Its backward is                           \
     * the routing's at the cut responsibilities (gma_route_backward, softmax_rows_backward). */                       \
    X(void, gma_topk_forward, (real *out, const real *gamma, int B, int H, int N, int Kc, int k,                       \
        const GmaTopkNoise *noise))                                                                                    \
    /* convolutional stem (docs/model.md §2.1). S images of H x W pixels with C channels, x                          \
     * [S, H*W, C] (channels last: the token layout) -> col [S*H*W, 9*C], the 3 x 3 taps at                          \
     * dilation dil: col[(s,i,j), (3 ky + kx) C + c] = x[s, i + (ky-1) dil, j + (kx-1) dil, c],                      \
     * 0 outside the image. A negative dil mirrors the taps (the transposed convolution's). */                       \
    X(void, im2col3x3, (real *col, const real *x, int S, int H, int W, int C, int dil))                              \
    /* Per-channel normalisation over S groups of N rows, x [S, N, C]: out = (x - mean) rstd w + b                     \
     * with mean, rstd [S, C] of each group and channel (variance over N, eps 1e-5) written                            \
     * (stats 1) or given (stats 0: running statistics). Batch norm is S = 1, instance norm                            \
     * one group per image. Backward accumulates dx (the statistics' own dependence                                    \
     * included), dw and db. */                                                                                        \
    X(void, chnorm_forward, (real *out, real *mean, real *rstd, const real *x, const real *w, const real *b,           \
        int S, int N, int C, int stats))                                                                               \
    X(void, chnorm_backward, (real *dx, real *dw, real *db, const real *dout, const real *x, const real *w,            \
        const real *mean, const real *rstd, int S, int N, int C))                                                      \
    /* optimiser: one tensor at a time */                                                                              \
    X(void, adamw, (real *p, const real *g, real *m, real *v, size_t n, real lr, real b1, real b2, real eps,           \
        real wd, real bc1, real bc2))                                                                                  \
    X(void, sgd, (real *p, const real *g, real *mom, size_t n, real lr, real momentum, real wd))                       \
    /* gma health */                                                                                                   \
    /* Diversity loss (docs/model.md §4) of responsibilities gamma [B,H,N,Kc], summed over heads:                      \
     *   mode 0 (token): sum_h -sum_k mean_t log(gamma_htk + 1e-9)                                                     \
     *   mode 1 (batch): sum_h -sum_k log(mean_t gamma_htk + 1e-9)                                                     \
     * t runs over the (batch, position) rows with rowmask[b,n] != 0 (rowmask: host [B,N],                             \
     * NULL = all rows). Backward: dgamma += scale * dL/dgamma (masked rows untouched). */                             \
    X(double, gma_div_forward, (const real *gamma, const uint8_t *rowmask, int B, int H, int N, int Kc, int mode))     \
    X(void, gma_div_backward, (real *dgamma, const real *gamma, const uint8_t *rowmask, int B, int H, int N,           \
        int Kc, int mode, real scale))                                                                                 \
    /* classifier */                                                                                                   \
    /* Two-sequence interaction features (docs/model.md §2): u, v [B,D] -> out [B,4D] rows                             \
     * [u, v, u*v, u-v]; backward accumulates du, dv from dout [B,4D]. */                                              \
    X(void, pair_features_forward, (real *out, const real *u, const real *v, int B, int D))                            \
    /* Max pooling over positions (docs/model.md §2, model.pooling "max"): x [S,N,D], w [S,N]                          \
     * the pooling weights (positions with w > 0 are real); out [S,D] the largest x over the                           \
     * real positions of each sequence and channel, arg [S,D] its position (the first of                               \
     * equals; -1 and out 0 for a sequence without real positions). Backward: dx[s, arg, d]                            \
     * += dout[s, d]. */                                                                                               \
    X(void, maxpool_forward, (real *out, int32_t *arg, const real *x, const real *w, int S, int N, int D))             \
    X(void, maxpool_backward, (real *dx, const real *dout, const int32_t *arg, int S, int N, int D))                   \
    X(void, pair_features_backward, (real *du, real *dv, const real *dout, const real *u, const real *v, int B,        \
        int D))                                                                                                        \
    /* baselines (required like every op: ops_check_table names a missing one). The mixers                             \
     * that need them still refuse to be created without them, naming the op, and `sdpa`                               \
     * falls back to the plain sdpa_ref path without attn_forward/attn_backward, for a                                 \
     * table installed in g_ops without ops_check_table. */                                                            \
    /* Elementwise maps: out = f(x) ; dx += dout * f'(x). elu1(x) = elu(x) + 1 (Linear                                 \
     * Transformer feature map); silu(x) = x sigmoid(x); softplus(x) = log(1 + e^x). */                                \
    X(void, elu1_forward, (real *out, const real *x, size_t n))                                                        \
    X(void, elu1_backward, (real *dx, const real *dout, const real *x, size_t n))                                      \
    X(void, silu_forward, (real *out, const real *x, size_t n))                                                        \
    X(void, silu_backward, (real *dx, const real *dout, const real *x, size_t n))                                      \
    X(void, softplus_forward, (real *out, const real *x, size_t n))                                                    \
    X(void, softplus_backward, (real *dx, const real *dout, const real *x, size_t n))                                  \
    /* Gate: out = y * silu(z) ; dy += dout * silu(z), dz += dout * y * silu'(z) */                                    \
    X(void, gate_silu_forward, (real *out, const real *y, const real *z, size_t n))                                    \
    X(void, gate_silu_backward, (real *dy, real *dz, const real *dout, const real *y, const real *z, size_t n))        \
    /* Product (BaseConv's gate, docs/model.md §3.5 `baseconv`): out = a * b ;                                        \
     * da += dout * b, db += dout * a (da and db distinct) */                                                          \
    X(void, mul_forward, (real *out, const real *a, const real *b, size_t n))                                          \
    X(void, mul_backward, (real *da, real *db, const real *dout, const real *a, const real *b, size_t n))              \
    /* Largest element, returned to the host in double (-inf for n = 0). */                                            \
    X(double, maxval, (const real *x, size_t n))                                                                       \
    /* Tiled softmax attention (online softmax, docs/model.md §3.5 `sdpa`), no N x N buffer.                           \
     * q, k, v, out [B,H,N,d]; lse [B,H,N] log-sum-exp of each row's scaled scores (saved                              \
     * for backward; -inf for a row with no visible key, whose output is 0); kbias [B,N]                               \
     * additive key bias (0 visible, -inf padding) or NULL. Scores = scale q k^T, causal                               \
     * hides j > i; window W > 0 (sliding-window attention, docs/model.md §3.5) also hides                             \
     * j <= i - W, and without causal j >= i + W (a symmetric band of 2W - 1 keys); the                               \
     * tiles wholly outside the band are skipped, so the cost is O(N W). Backward                                      \
     * recomputes the score tiles and accumulates dq, dk, dv.                                                          \
     * drop (host memory, NULL = none): attention dropout on the probabilities [B,H,N,N]                               \
     * (docs/model.md §8): out = (P * mask / (1 - p)) V, lse of the undropped P; the                                   \
     * backward regenerates the same mask tile by tile (nothing N x N is stored). */                                   \
    X(void, attn_forward, (real *out, real *lse, const real *q, const real *k, const real *v, const real *kbias,       \
        int B, int H, int N, int d, int causal, int window, real scale, const GmaDrop *drop))                          \
    X(void, attn_backward, (real *dq, real *dk, real *dv, const real *dout, const real *out, const real *lse,          \
        const real *q, const real *k, const real *v, const real *kbias, int B, int H, int N, int d, int causal,        \
        int window, real scale, const GmaDrop *drop))                                                                  \
    /* One token of causal attn_forward for incremental decoding, for B sequences of H heads:                         \
     * sequence b's key/value cache at state + b state_stride (attn_decode_state): K, V [H,Nmax,d]                     \
     * (a head's rows 0..pos contiguous), then a row of Nmax scores per head; q, k, v, out                             \
     * [B,H,d]. Writes k, v into row pos of the cache, then out_h = softmax(scale q_h K_h^T) V_h                       \
     * over rows 0..pos. The cache is a ring: past its end (pos >= Nmax) row pos mod Nmax is                           \
     * written and all Nmax rows are read, the last Nmax tokens (sliding-window decoding). */                          \
    X(void, attn_step, (real *out, real *state, size_t state_stride, const real *q, const real *k, const real *v,     \
        int B, int H, int d, int Nmax, int pos, real scale))                                                           \
    /* Rotary position embedding (docs/model.md §1, model.pos "rope") of x [B,H,N,d], d even: row n of      \
     * every (sequence, head) at position p = pos0 + n turns channels i and i + d/2 (i < d/2, the                   \
     * rotate_half pairing) by the angle p theta^(-2i/d):                                                              \
     *   y_i = x_i cos - x_{i+d/2} sin ,  y_{i+d/2} = x_{i+d/2} cos + x_i sin   (angles in double).                   \
     * y may be x. Backward: dx = the inverse rotation of dy, written (not accumulated; dx may be dy). */             \
    X(void, rope_forward, (real *y, const real *x, int B, int H, int N, int d, int pos0, real theta))                  \
    X(void, rope_backward, (real *dx, const real *dy, int B, int H, int N, int d, int pos0, real theta))               \
    /* Performer FAVOR+ (docs/model.md §3.5 `performer`). Exponents for m random features:                             \
     * e [B,H,N,m] = (x omega_h^T) / d^(1/4) - |x|^2 / (2 sqrt d), x [B,H,N,d], omega [H,m,d]                          \
     * (a buffer: no gradient). Backward: dx += de omega / d^(1/4) - rowsum(de) x / sqrt(d). */                        \
    X(void, favor_logits_forward, (real *e, const real *x, const real *omega, int B, int H, int N, int d, int m))      \
    X(void, favor_logits_backward, (real *dx, const real *de, const real *x, const real *omega, int B, int H,          \
        int N, int d, int m))                                                                                          \
    /* Features from exponents, R rows of m: phi = scale * exp(e - c) with c the row max                               \
     * (rowmax != NULL: the argmax column of each row is written there as a real) or the                               \
     * given constant c (rowmax == NULL). Backward: de += dphi * phi, and with rowmax, the                             \
     * dependence of c on e: de[r, argmax] -= sum_f dphi phi. */                                                       \
    X(void, favor_exp_forward, (real *phi, real *rowmax, const real *e, int R, int m, real c, real scale))             \
    X(void, favor_exp_backward, (real *de, const real *dphi, const real *phi, const real *rowmax, int R, int m))       \
    /* Performer generalized ReLU kernel with deterministic features (docs/model.md §3.5                               \
     * `performer.kernel: "relu"`): phi = max(x, 0) + eps, elementwise over x [B,H,N,d] (F = d,                        \
     * no projection). Its backward is relu_backward: dphi/dx = [x > 0], independent of eps. */                        \
    X(void, favor_relu_forward, (real *phi, const real *x, size_t n, real eps))                                        \
    /* Mamba (docs/model.md §3.5 `mamba`). Causal depthwise convolution over time, x, out [B,N,C],                     \
     * w [C,K], b [C]: out[t,c] = b[c] + sum_k w[c,k] x[t-K+1+k, c] (x before 0 is 0).                                 \
     * Backward accumulates dx, dw, db. */                                                                             \
    X(void, conv1d_causal_forward, (real *out, const real *x, const real *w, const real *b, int B, int N, int C,       \
        int K))                                                                                                        \
    X(void, conv1d_causal_backward, (real *dx, real *dw, real *db, const real *dout, const real *x, const real *w,     \
        int B, int N, int C, int K))                                                                                   \
    /* Selective scan over E channels with S states, u, dt, y [B,N,E], Bm, Cm [B,N,S],                                 \
     * A_log [E,S] (A = -exp(A_log)), Dskip [E]:                                                                       \
     *   h_t = exp(dt_t A) h_{t-1} + dt_t Bm_t u_t ;  y_t = Cm_t . h_t + Dskip u_t  (h_{-1} = 0)                       \
     * hck [B, ceil(N/chunk), E, S]: the state at the start of each chunk, saved for the                               \
     * backward pass, which walks the chunks in reverse recomputing the states within a chunk                          \
     * (memory O(N E / chunk * S), time linear in N). Backward accumulates du, ddt, dBm, dCm,                          \
     * dA_log, dDskip. */                                                                                              \
    X(void, scan_forward, (real *y, real *hck, const real *u, const real *dt, const real *Bm, const real *Cm,          \
        const real *A_log, const real *Dskip, int B, int N, int E, int S, int chunk))                                  \
    X(void, scan_backward, (real *du, real *ddt, real *dBm, real *dCm, real *dA_log, real *dDskip, const real *dy,     \
        const real *hck, const real *u, const real *dt, const real *Bm, const real *Cm, const real *A_log,             \
        const real *Dskip, int B, int N, int E, int S, int chunk))                                                     \
    /* One time step of scan_forward for incremental decoding: sequence b's state h [E,S] at                           \
     * h + b h_stride, carried from call to call (zero before the first step); u, dt, y [B,E],                         \
     * Bm, Cm [B,S]:  h = exp(dt A) h + dt Bm u ;  y = Cm . h + Dskip u. */                                            \
    X(void, scan_step, (real *y, real *h, size_t h_stride, const real *u, const real *dt, const real *Bm,              \
        const real *Cm, const real *A_log, const real *Dskip, int B, int E, int S))                                   \
    /* Gated DeltaNet (docs/model.md §3.5 `gdn`). Row normalisation of R rows of C:                                   \
     * out = x rstd (w ? w : 1) (g ? silu(g) : 1), rstd = 1 / sqrt(sum_c x^2 / (mean ? C : 1) + eps)                   \
     * written [R] (mean 0: the L2 norm of q and k; mean 1 with w and g: the gated RMSNorm).                          \
     * Backward accumulates dx, dw (when w), dg (when g). */                                                          \
    X(void, rownorm_forward, (real *out, real *rstd, const real *x, const real *w, const real *g, int R, int C,        \
        real eps, int mean))                                                                                          \
    X(void, rownorm_backward, (real *dx, real *dw, real *dg, const real *dout, const real *x, const real *w,          \
        const real *g, const real *rstd, int R, int C, int mean))                                                     \
    /* The (gated) delta rule for B H heads, q, k [B,H,N,dk], v, o [B,H,N,dv], per head S [dk,dv] (S_{-1} = 0):       \
     *   a_t = exp(-exp(A_log_h) softplus(ga_t + dt_bias_h))  (ga [B,H,N]; NULL: a_t = 1)                             \
     *   b_t = sigmoid(gb_t)  (gb [B,H,N]; NULL: no delta, S_t = a_t S_{t-1} + k_t v_t^T)                            \
     *   D_h = diag(sigmoid(sd_h))  (sd [H,dk]: a fixed decay of each row of S; NULL: D = I)                          \
     *   S_t = a_t D S_{t-1} + k_t (b_t (v_t - (a_t D S_{t-1})^T k_t))^T ;  o_t = scale S_t^T q_t.                   \
     * Sck [B,H,ceil(N/chunk)+1,dk,dv]: the state before each chunk of `chunk` steps, then the                        \
     * final state. The backward pass walks the chunks in reverse, recomputing the chunk's                           \
     * states from its checkpoint, and accumulates dq, dk, dv, dga, dgb, dA_log, ddt_bias [H]                       \
     * and dsd [H,dk] (dga, dA_log, ddt_bias unused when ga is NULL; dgb when gb is NULL; dsd                        \
     * when sd is NULL). */                                                                                           \
    X(void, delta_forward, (real *o, real *Sck, const real *q, const real *k, const real *v, const real *ga,          \
        const real *gb, const real *A_log, const real *dt_bias, const real *sd, int B, int H, int N, int dk, int dv,  \
        int chunk, real scale))                                                                                       \
    X(void, delta_backward, (real *dq, real *dk_, real *dv_, real *dga, real *dgb, real *dA_log, real *ddt_bias,       \
        real *dsd, const real *dout, const real *Sck, const real *q, const real *k, const real *v, const real *ga,    \
        const real *gb, const real *A_log, const real *dt_bias, const real *sd, int B, int H, int N, int dk, int dv,  \
        int chunk, real scale))                                                                                       \
    /* One step of delta_forward for incremental decoding: sequence b's S [H,dk,dv] at                                \
     * state + b state_stride, carried from call to call (zero before the first token);                               \
     * q, k [B,H,dk], v, o [B,H,dv], ga, gb [B,H], sd [H,dk] (or NULL as in delta_forward). */                        \
    X(void, delta_step, (real *o, real *state, size_t state_stride, const real *q, const real *k, const real *v,      \
        const real *ga, const real *gb, const real *A_log, const real *dt_bias, const real *sd, int B, int H, int dk, \
        int dv, real scale))

/* The backends and the precisions of their matrix products, as the config keys device and
 * precision hold them (CFGT_ENUM: the index of the name among OPS_DEVICES, OPS_PRECISIONS). */
typedef enum { OPS_CPU, OPS_CUDA } OpsDevice;
#define OPS_DEVICES "cpu|cuda"
typedef enum { OPS_FP32, OPS_TF32, OPS_BF16 } OpsPrecision;
#define OPS_PRECISIONS "fp32|tf32|bf16"

typedef struct GmaOps {
    const char *name;
    int device; /* OpsDevice: where the table's pointers live (a wrapping table copies it) */
#define GMA_OP_MEMBER(ret, op, params) ret(*op) params;
    GMA_OPS(GMA_OP_MEMBER)
#undef GMA_OP_MEMBER
} GmaOps;

/* The active backend (ops.c); selected once at start-up, the cpu table until then. A
 * program may install a table of its own that wraps the active one (gmabench's profiling
 * table): the ops_* calls below go through g_ops, so they reach the wrapped backend. */
extern const GmaOps *g_ops;
extern const GmaOps gma_ops_cpu; /* cpu/cpu_core.c */
/* The CUDA backend's entry point (cuda/cuda_core.cu, linked in GMA_CUDA builds only): find
 * and set up the GPU; 0 with *out set to the CUDA op table, or -1 with a one-line error (no
 * GPU, a driver problem, or a GPU this build has no code for). Idempotent. */
int cuda_ops_init(const GmaOps **out);
/* The name of an OpsDevice / OpsPrecision ("cpu", "bf16"); "?" out of range. */
const char *ops_device_key(int device);
const char *ops_precision_name(int precision);
/* Select OPS_CPU or OPS_CUDA; refuses cuda in a build without it or without a usable GPU,
 * and refuses a backend whose table has a missing (NULL) op, naming it. */
int ops_select(int device);
/* 0 when every op of GMA_OPS is set in the table, else -1 with an error naming the first
 * missing one (ops.c). */
int ops_check_table(const GmaOps *ops);
/* Precision of the active backend's matrix products: OPS_FP32 (every backend), OPS_TF32 or
 * OPS_BF16 (cuda only; bf16 keeps fp32 master weights and fp32 accumulation). Call after
 * ops_select. Returns -1 with a message for a precision the backend cannot run. */
int ops_set_precision(int precision);
/* Wait until every queued op of the active backend has finished (for timing). These four
 * call the active table's sync, device_name, mem_stats and mem_reset_peak. */
void ops_sync(void);
/* The device name ("cpu", or the GPU's name) of the active backend. */
const char *ops_device_name(void);
/* Backend memory held through alloc (and backend work buffers): now and the peak since the
 * last ops_mem_reset_peak. Host memory of the cpu backend is not counted (0). */
void ops_mem_stats(size_t *in_use, size_t *peak);
void ops_mem_reset_peak(void);
/* The kernel set OpenBLAS runs ("Haswell", "Cooperlake", ...), with " (OPENBLAS_CORETYPE=X)"
 * when the environment chose it (cpu/cpu_blas_core.c). */
const char *ops_blas_core(void);
/* OpenBLAS's build line (openblas_get_config: version, DYNAMIC_ARCH, threading, the CPU it was built for) */
const char *ops_blas_config(void);
/* Threads for OpenMP and BLAS (0 = all cores; cpu/cpu_core.c). */
void ops_set_threads(int n);
/* A profiler's view of every matrix product the CPU backend runs (cpu/cpu_core.c
 * cpu_matmul), the ones inside its other ops too (the GMA routing, the mixing cores, the
 * tiled attention): when set, hook gets each product's shape and the number of threads of
 * the parallel region it runs in (1 outside one), possibly from several threads at once,
 * before the product runs. NULL (the default) turns it off. gmabench model uses it. */
void ops_set_cpu_product_hook(void (*hook)(int M, int N, int K, int ta, int tb, int nthreads));
#endif
