/* cpu.h: the CPU implementations behind gma_ops_cpu (see ops/ops.h for the contracts). */
#ifndef GMA_OPS_CPU_H
#define GMA_OPS_CPU_H
#include "ops/ops.h"

/* Run a loop in parallel only when it has enough elements to repay the fork/join. */
#define PAR_WORTH(work) ((work) >= 32768)

/* A per-thread work buffer (slots 0..3), grown on demand and kept for later calls. */
real *cpu_workspace(int slot, size_t n);

void cpu_matmul(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real alpha, real beta);
void cpu_gelu_forward(real *out, const real *x, size_t n);
void cpu_gelu_backward(real *dx, const real *dout, const real *x, size_t n);
void cpu_layernorm_forward(real *out, real *mean, real *rstd, const real *x, const real *w, const real *b, int R, int C);
void cpu_layernorm_backward(real *dx, real *dw, real *db, const real *dout, const real *x, const real *w,
                            const real *mean, const real *rstd, int R, int C);
void cpu_embed_forward(real *out, const int32_t *tok, const real *wte, const real *wpe, int B, int T, int C);
void cpu_embed_backward(real *dwte, real *dwpe, const real *dout, const int32_t *tok, int B, int T, int C);
void cpu_xent_forward(real *loss, real *valid, const real *logits, const int32_t *target, int R, int V);
void cpu_xent_backward(real *dlogits, const int32_t *target, int R, int V, real scale);
void cpu_argmax_rows(int32_t *out, const real *x, int R, int V);
void cpu_split_heads(real *xh, const real *x, int B, int N, int H, int d);
void cpu_merge_heads(real *x, const real *xh, int B, int N, int H, int d);
void cpu_softmax_rows(real *x, int R, int C, real scale, const real *colbias);
void cpu_softmax_rows_backward(real *dy, const real *y, int R, int C);
void cpu_attn_mask(real *S, const uint8_t *keymask, int B, int H, int N, int causal);
void cpu_linmix_forward(real *out, real *den, real *state, const real *phq, const real *phk, const real *v, int BH,
                        int N, int F, int d, int causal, int chunk, real eps);
void cpu_linmix_backward(real *dphq, real *dphk, real *dv, const real *dout, const real *out, const real *den,
                         const real *state, const real *phq, const real *phk, const real *v, int BH, int N, int F,
                         int d, int causal, int chunk);
void cpu_gma_route_forward(real *gamma, const real *x, const real *mu, const real *var_raw, const real *prior, int B,
                           int H, int N, int d, int Kc, real tau, real var_floor, int shared);
void cpu_gma_route_backward(real *dx, real *dmu, real *dvar_raw, real *dprior, const real *dgamma, const real *gamma,
                            const real *x, const real *mu, const real *var_raw, const real *prior, int B, int H, int N,
                            int d, int Kc, real tau, real var_floor, int shared);
double cpu_gma_div_forward(const real *gamma, const uint8_t *rowmask, int B, int H, int N, int Kc, int mode);
void cpu_gma_div_backward(real *dgamma, const real *gamma, const uint8_t *rowmask, int B, int H, int N, int Kc, int mode,
                          real scale);
void cpu_pair_features_forward(real *out, const real *u, const real *v, int B, int D);
void cpu_pair_features_backward(real *du, real *dv, const real *dout, const real *u, const real *v, int B, int D);
/* baselines */
void cpu_elu1_forward(real *out, const real *x, size_t n);
void cpu_elu1_backward(real *dx, const real *dout, const real *x, size_t n);
void cpu_silu_forward(real *out, const real *x, size_t n);
void cpu_silu_backward(real *dx, const real *dout, const real *x, size_t n);
void cpu_softplus_forward(real *out, const real *x, size_t n);
void cpu_softplus_backward(real *dx, const real *dout, const real *x, size_t n);
void cpu_gate_silu_forward(real *out, const real *y, const real *z, size_t n);
void cpu_gate_silu_backward(real *dy, real *dz, const real *dout, const real *y, const real *z, size_t n);
double cpu_maxval(const real *x, size_t n);
void cpu_attn_forward(real *out, real *lse, const real *q, const real *k, const real *v, const real *kbias, int B,
                      int H, int N, int d, int causal, real scale);
void cpu_attn_backward(real *dq, real *dk, real *dv, const real *dout, const real *out, const real *lse, const real *q,
                       const real *k, const real *v, const real *kbias, int B, int H, int N, int d, int causal,
                       real scale);
void cpu_favor_logits_forward(real *e, const real *x, const real *omega, int B, int H, int N, int d, int m);
void cpu_favor_logits_backward(real *dx, const real *de, const real *x, const real *omega, int B, int H, int N, int d,
                               int m);
void cpu_favor_exp_forward(real *phi, real *rowmax, const real *e, int R, int m, real c, real scale);
void cpu_favor_exp_backward(real *de, const real *dphi, const real *phi, const real *rowmax, int R, int m);
void cpu_conv1d_causal_forward(real *out, const real *x, const real *w, const real *b, int B, int N, int C, int K);
void cpu_conv1d_causal_backward(real *dx, real *dw, real *db, const real *dout, const real *x, const real *w, int B,
                                int N, int C, int K);
void cpu_scan_forward(real *y, real *hck, const real *u, const real *dt, const real *Bm, const real *Cm,
                      const real *A_log, const real *Dskip, int B, int N, int E, int S, int chunk);
void cpu_scan_backward(real *du, real *ddt, real *dBm, real *dCm, real *dA_log, real *dDskip, const real *dy,
                       const real *hck, const real *u, const real *dt, const real *Bm, const real *Cm,
                       const real *A_log, const real *Dskip, int B, int N, int E, int S, int chunk);
#endif
