/* cpu_nn.c: CPU kernels of the dense layers: GELU, bias + GELU, ReLU, LayerNorm, residual add +
 * LayerNorm, embeddings, cross-entropy, head split/merge, row softmax and the attention score
 * mask. Loops are OpenMP over independent rows or columns (sums over rows in fixed blocks), so
 * results do not depend on the number of threads. */
#include <string.h>

#include "ops/cpu/cpu.h"
#include "ops/cpu/cpu_exp.h"

#define GELU_K ((real)0.7978845608028654) /* sqrt(2/pi) */

/* tanh through one exp: 1 - 2 / (1 + e^{2a}) (exact in real arithmetic, saturates
 * correctly at both ends; expf costs about half of tanhf here) */
static inline real fast_tanh(real a) { return 1 - 2 / (1 + vexp1(2 * a)); }
static inline real gelu1(real u) { return (real)0.5 * u * (1 + fast_tanh(GELU_K * (u + (real)0.044715 * u * u * u))); }
static inline real gelu_grad1(real u) {
    real t = fast_tanh(GELU_K * (u + (real)0.044715 * u * u * u));
    return (real)0.5 * (1 + t) + (real)0.5 * u * (1 - t * t) * GELU_K * (1 + 3 * (real)0.044715 * u * u);
}

/* float32: VL lanes at once (cpu_exp.h), the same formulas with the vector exp;
 * gelu_vec returns how many leading elements it did (a multiple of VL), the scalar loop does
 * the rest (float64: all of it) */
#ifndef GMA_DOUBLE
static inline vf tanh_v(vf a) { return 1.0f - 2.0f / (1.0f + vexpv(2.0f * a)); }
static inline vf gelu_v(vf u) { return 0.5f * u * (1.0f + tanh_v(GELU_K * (u + 0.044715f * u * u * u))); }
static inline vf gelu_grad_v(vf u) {
    vf t = tanh_v(GELU_K * (u + 0.044715f * u * u * u));
    return 0.5f * (1.0f + t) + 0.5f * u * (1.0f - t * t) * GELU_K * (1.0f + 3 * 0.044715f * u * u);
}
static size_t gelu_vec(real *out, const real *x, const real *dout, size_t n, int backward) {
    size_t nv = n / VL;
#pragma omp parallel for schedule(static) if (PAR_WORTH(n))
    for (size_t j = 0; j < nv; j++) {
        vf u, o;
        memcpy(&u, x + VL * j, sizeof u);
        if (!backward) {
            o = gelu_v(u);
        } else {
            vf d;
            memcpy(&d, dout + VL * j, sizeof d);
            memcpy(&o, out + VL * j, sizeof o);
            o += d * gelu_grad_v(u);
        }
        memcpy(out + VL * j, &o, sizeof o);
    }
    return nv * VL;
}
#else
static size_t gelu_vec(real *out, const real *x, const real *dout, size_t n, int backward) { return 0; }
#endif

void cpu_gelu_forward(real *out, const real *x, size_t n) {
    size_t i0 = gelu_vec(out, x, NULL, n, 0);
#pragma omp parallel for schedule(static) if (PAR_WORTH(n - i0))
    for (size_t i = i0; i < n; i++) out[i] = gelu1(x[i]);
}

void cpu_gelu_backward(real *dx, const real *dout, const real *x, size_t n) {
    size_t i0 = gelu_vec(dx, x, dout, n, 1);
#pragma omp parallel for schedule(static) if (PAR_WORTH(n - i0))
    for (size_t i = i0; i < n; i++) dx[i] += dout[i] * gelu_grad1(x[i]);
}

/* dst[c] += the sum over blocks b of part[b * stride + c], added in block order in double
 * (the closing step of the sums over fixed blocks of rows below) */
static void add_block_sums(real *dst, const real *part, int nb, size_t stride, int C) {
    for (int c = 0; c < C; c++) {
        double s = 0;
        for (int blk = 0; blk < nb; blk++) s += part[(size_t)blk * stride + c];
        dst[c] += (real)s;
    }
}

/* bias + GELU by rows (each row's result depends only on that row) */
void cpu_bias_gelu_forward(real *pre, real *out, const real *bias, int R, int C) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)C))
    for (int r = 0; r < R; r++) {
        real *p = pre + (size_t)r * C, *o = out + (size_t)r * C;
        int c = 0;
#ifndef GMA_DOUBLE
        for (; c + VL <= C; c += VL) {
            vf u, b = {0};
            memcpy(&u, p + c, sizeof u);
            if (bias) memcpy(&b, bias + c, sizeof b);
            u += b;
            memcpy(p + c, &u, sizeof u);
            u = gelu_v(u);
            memcpy(o + c, &u, sizeof u);
        }
#endif
        for (; c < C; c++) {
            if (bias) p[c] += bias[c];
            o[c] = gelu1(p[c]);
        }
    }
}

/* dpre by rows, and the bias gradient's partial column sums in fixed blocks of rows (in
 * parallel), added in block order in double: the result does not depend on the number of
 * threads */
#define BG_BLOCKS 32
void cpu_bias_gelu_backward(real *dpre, real *dbias, const real *dout, const real *pre, int R, int C) {
    int nb = R >= 4 * BG_BLOCKS ? BG_BLOCKS : 1, per = (R + nb - 1) / nb;
    real *part = dbias ? cpu_workspace(2, (size_t)nb * C) : NULL;
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)C))
    for (int blk = 0; blk < nb; blk++) {
        real *gb = part ? part + (size_t)blk * C : NULL;
        if (gb) memset(gb, 0, sizeof(real) * C);
        int r1 = GMA_MIN(R, (blk + 1) * per);
        for (int r = blk * per; r < r1; r++) {
            const real *u = pre + (size_t)r * C, *d = dout + (size_t)r * C;
            real *o = dpre + (size_t)r * C;
            int c = 0;
#ifndef GMA_DOUBLE
            for (; c + VL <= C; c += VL) {
                vf uv, dv;
                memcpy(&uv, u + c, sizeof uv), memcpy(&dv, d + c, sizeof dv);
                dv *= gelu_grad_v(uv);
                memcpy(o + c, &dv, sizeof dv);
                if (gb) {
                    vf g;
                    memcpy(&g, gb + c, sizeof g);
                    g += dv;
                    memcpy(gb + c, &g, sizeof g);
                }
            }
#endif
            for (; c < C; c++) {
                o[c] = d[c] * gelu_grad1(u[c]);
                if (gb) gb[c] += o[c];
            }
        }
    }
    if (dbias) add_block_sums(dbias, part, nb, (size_t)C, C);
}

void cpu_relu_forward(real *out, const real *x, size_t n) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (size_t i = 0; i < n; i++) out[i] = x[i] > 0 ? x[i] : 0;
}

void cpu_relu_backward(real *dx, const real *dout, const real *x, size_t n) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)n))
    for (size_t i = 0; i < n; i++)
        if (x[i] > 0) dx[i] += dout[i];
}

/* LayerNorm rows. float32: the row's sums in eight float lanes (each lane sums C / 8
 * elements) added in double, the normalisation on eight lanes; float64: the same formulas
 * one element at a time. Either way a row's result depends only on that row. */
#ifndef GMA_DOUBLE
static inline double hsum8(v8f a) {
    double s = 0;
    for (int j = 0; j < 8; j++) s += a[j];
    return s;
}
#endif

/* mean and 1/sqrt(var + 1e-5) of one row (two passes: the mean, then the centred squares);
 * rms (RMSNorm): mean 0 and 1/sqrt(mean(x^2) + 1e-6) */
static inline void ln_stats(const real *xr, int C, int rms, real *mean, real *rstd) {
    int c = 0;
    double m = 0, v = 0;
#ifndef GMA_DOUBLE
    int c8 = C / 8 * 8;
    v8f s8 = {0};
    for (; c < c8 && !rms; c += 8) {
        v8f x;
        memcpy(&x, xr + c, sizeof x);
        s8 += x;
    }
    m = hsum8(s8);
#endif
    for (; c < C && !rms; c++) m += xr[c];
    m /= C;
    c = 0;
#ifndef GMA_DOUBLE
    v8f q8 = {0};
    real mf = (real)m;
    for (; c < c8; c += 8) {
        v8f x;
        memcpy(&x, xr + c, sizeof x);
        x -= mf;
        q8 += x * x;
    }
    v = hsum8(q8);
#endif
    for (; c < C; c++) v += (xr[c] - m) * (xr[c] - m);
    v /= C;
    *mean = (real)m;
    *rstd = (real)(1.0 / sqrt(v + (rms ? 1e-6 : 1e-5)));
}

/* one row: its stats and the normalised, scaled and shifted row; mean NULL: RMSNorm (no
 * centring), b NULL: no shift */
static inline void ln_row(real *o, real *mean, real *rstd, const real *xr, const real *w, const real *b, int C) {
    real m, s;
    ln_stats(xr, C, mean == NULL, &m, &s);
    int c = 0;
#ifndef GMA_DOUBLE
    for (; c + 8 <= C; c += 8) {
        v8f xv, wv, bv = {0};
        memcpy(&xv, xr + c, sizeof xv), memcpy(&wv, w + c, sizeof wv);
        if (b) memcpy(&bv, b + c, sizeof bv);
        xv = (xv - m) * s * wv + bv;
        memcpy(o + c, &xv, sizeof xv);
    }
#endif
    for (; c < C; c++) o[c] = (xr[c] - m) * s * w[c] + (b ? b[c] : 0);
    if (mean) *mean = m;
    *rstd = s;
}

void cpu_layernorm_forward(real *out, real *mean, real *rstd, const real *x, const real *w, const real *b, int R, int C) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)C))
    for (int r = 0; r < R; r++) ln_row(out + (size_t)r * C, mean ? mean + r : NULL, rstd + r, x + (size_t)r * C, w, b, C);
}

void cpu_add_layernorm_forward(real *sum, real *out, real *mean, real *rstd, const real *a, const real *b, const real *w,
                               const real *bias, int R, int C) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)C))
    for (int r = 0; r < R; r++) {
        real *sr = sum + (size_t)r * C;
        const real *ar = a + (size_t)r * C, *br = b + (size_t)r * C;
        for (int c = 0; c < C; c++) sr[c] = ar[c] + br[c];
        ln_row(out + (size_t)r * C, mean ? mean + r : NULL, rstd + r, sr, w, bias, C);
    }
}

/* One pass over the rows (mean NULL: RMSNorm, db NULL: no bias): each row's dx from its two means, and the weight and bias
 * gradients summed into the partial rows of fixed blocks of rows (in parallel; float32 on
 * eight lanes within a block), then the partials added in block order in double, so the
 * result does not depend on the number of threads. */
#define LN_BLOCKS 32
void cpu_layernorm_backward(real *dx, real *dw, real *db, const real *dout, const real *x, const real *w,
                            const real *mean, const real *rstd, int R, int C) {
    int nb = R >= 4 * LN_BLOCKS ? LN_BLOCKS : 1, per = (R + nb - 1) / nb;
    real *part = cpu_workspace(3, (size_t)2 * nb * C);
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)C))
    for (int blk = 0; blk < nb; blk++) {
        real *gw = part + (size_t)2 * blk * C, *gb = gw + C;
        for (int c = 0; c < C; c++) gw[c] = gb[c] = 0;
        int r1 = GMA_MIN(R, (blk + 1) * per);
        for (int r = blk * per; r < r1; r++) {
            const real *xr = x + (size_t)r * C, *dr = dout + (size_t)r * C;
            real *dxr = dx + (size_t)r * C;
            real m = mean ? mean[r] : 0, s = rstd[r]; /* mean NULL: RMSNorm */
            double a = 0, bsum = 0; /* sums of dnorm and dnorm * norm */
            int c = 0;
#ifndef GMA_DOUBLE
            v8f a8 = {0}, b8 = {0};
            for (; c + 8 <= C; c += 8) {
                v8f xv, dv, wv, gwv, gbv;
                memcpy(&xv, xr + c, sizeof xv), memcpy(&dv, dr + c, sizeof dv), memcpy(&wv, w + c, sizeof wv);
                memcpy(&gwv, gw + c, sizeof gwv), memcpy(&gbv, gb + c, sizeof gbv);
                v8f n = (xv - m) * s, dn = dv * wv;
                a8 += dn;
                b8 += dn * n;
                gwv += dv * n;
                gbv += dv;
                memcpy(gw + c, &gwv, sizeof gwv), memcpy(gb + c, &gbv, sizeof gbv);
            }
            a = hsum8(a8), bsum = hsum8(b8);
#endif
            for (; c < C; c++) {
                real n = (xr[c] - m) * s;
                real dn = dr[c] * w[c];
                a += dn;
                bsum += dn * n;
                gw[c] += dr[c] * n;
                gb[c] += dr[c];
            }
            real am = mean ? (real)(a / C) : 0, bm = (real)(bsum / C); /* RMSNorm: no centring term */
            c = 0;
#ifndef GMA_DOUBLE
            for (; c + 8 <= C; c += 8) {
                v8f xv, dv, wv, ov;
                memcpy(&xv, xr + c, sizeof xv), memcpy(&dv, dr + c, sizeof dv), memcpy(&wv, w + c, sizeof wv);
                memcpy(&ov, dxr + c, sizeof ov);
                v8f n = (xv - m) * s;
                ov += s * (dv * wv - am - n * bm);
                memcpy(dxr + c, &ov, sizeof ov);
            }
#endif
            for (; c < C; c++) {
                real n = (xr[c] - m) * s;
                real dn = dr[c] * w[c];
                dxr[c] += s * (dn - am - n * bm);
            }
        }
    }
    add_block_sums(dw, part, nb, (size_t)2 * C, C);
    if (db) add_block_sums(db, part + C, nb, (size_t)2 * C, C);
}

void cpu_embed_forward(real *out, const int32_t *tok, const real *wte, const real *wpe, int B, int T, int C) {
#pragma omp parallel for collapse(2) schedule(static) if (PAR_WORTH((size_t)B * T * C))
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            real *o = out + ((size_t)b * T + t) * C;
            const real *e = wte + (size_t)tok[b * T + t] * C;
            if (wpe) {
                const real *p = wpe + (size_t)t * C;
                for (int c = 0; c < C; c++) o[c] = e[c] + p[c];
            } else {
                memcpy(o, e, sizeof(real) * C);
            }
        }
}

void cpu_embed_backward(real *dwte, real *dwpe, const real *dout, const int32_t *tok, int B, int T, int C) {
    /* parallel over channels: every thread owns a slice of columns, so no two threads
     * write the same element and the order of additions is fixed */
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)B * (size_t)T * (size_t)C))
    for (int c = 0; c < C; c++) {
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                real g = dout[((size_t)b * T + t) * C + c];
                dwte[(size_t)tok[b * T + t] * C + c] += g;
                if (dwpe) dwpe[(size_t)t * C + c] += g;
            }
    }
}

/* the row max (NaN ignored, as `x > m ? x : m`) and the sum of exp(x - m) without storing
 * it (the lanes summed as vexp_sub sums them); float32 VL lanes at once */
static inline real row_max(const real *x, int n) {
    real mx = -INFINITY;
    int i = 0;
#ifndef GMA_DOUBLE
    vf mv = (vf){0} - INFINITY;
    for (; i + VL <= n; i += VL) {
        vf v;
        memcpy(&v, x + i, sizeof v);
        vi gt = v > mv;
        mv = (vf)(((vi)v & gt) | ((vi)mv & ~gt));
    }
    for (int j = 0; j < VL; j++) mx = mv[j] > mx ? mv[j] : mx;
#endif
    for (; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    return mx;
}
static inline double exp_sum(const real *x, real m, int n) {
#ifdef GMA_DOUBLE
    double s = 0;
    for (int i = 0; i < n; i++) s += exp(x[i] - m);
    return s;
#else
    vf acc = {0};
    int i = 0;
    for (; i + VL <= n; i += VL) {
        vf v;
        memcpy(&v, x + i, sizeof v);
        acc += vexpv(v - m);
    }
    double s = vhsum(acc);
    for (; i < n; i++) s += vexp1(x[i] - m);
    return s;
#endif
}

void cpu_xent_forward(real *loss, real *valid, const real *logits, const int32_t *target, int R, int V) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)V))
    for (int r = 0; r < R; r++) {
        if (target[r] < 0) {
            loss[r] = 0;
            valid[r] = 0;
            continue;
        }
        const real *l = logits + (size_t)r * V;
        real mx = row_max(l, V);
        double s = exp_sum(l, mx, V);
        loss[r] = (real)(log(s) + mx - l[target[r]]);
        valid[r] = 1;
    }
}

/* one row of logits l becomes scale (softmax(l) - onehot(t)); returns log sum exp(l) of the
 * row as it was (the loss is that minus the target's logit) */
static inline double softmax_minus_onehot(real *l, int V, int t, real scale) {
    real mx = row_max(l, V);
    double s = vexp_sub(l, l, mx, V);
    real inv = (real)(1.0 / s) * scale;
    for (int i = 0; i < V; i++) l[i] *= inv;
    l[t] -= scale;
    return log(s) + mx;
}

void cpu_xent_backward(real *dl, const int32_t *target, int R, int V, real scale) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)V))
    for (int r = 0; r < R; r++) {
        real *l = dl + (size_t)r * V;
        if (target[r] < 0) {
            memset(l, 0, sizeof(real) * V);
            continue;
        }
        softmax_minus_onehot(l, V, target[r], scale);
    }
}

/* loss as cpu_xent_forward and, in the same pass over the row, softmax - onehot in place */
void cpu_xent_grad(real *loss, real *valid, real *logits, const int32_t *target, int R, int V) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)V))
    for (int r = 0; r < R; r++) {
        real *l = logits + (size_t)r * V;
        if (target[r] < 0) {
            loss[r] = 0;
            valid[r] = 0;
            memset(l, 0, sizeof(real) * V);
            continue;
        }
        real lt = l[target[r]];
        loss[r] = (real)(softmax_minus_onehot(l, V, target[r], 1) - lt);
        valid[r] = 1;
    }
}

/* p = softmax(t / T), q = softmax(s / T) over one row: KL(p || q) returned, t becomes
 * scale (q - p); in double, the row's sums as the cross-entropy's */
static double distill_row(real *t, const real *s, int V, real T, real scale) {
    double it = 1.0 / T, mt = -INFINITY, ms = -INFINITY, zt = 0, zs = 0;
    for (int i = 0; i < V; i++) mt = fmax(mt, t[i] * it), ms = fmax(ms, s[i] * it);
    for (int i = 0; i < V; i++) zt += exp(t[i] * it - mt), zs += exp(s[i] * it - ms);
    double lzt = log(zt) + mt, lzs = log(zs) + ms, kl = 0;
    for (int i = 0; i < V; i++) {
        double lp = t[i] * it - lzt, lq = s[i] * it - lzs, p = exp(lp);
        kl += p * (lp - lq);
        t[i] = (real)(scale * (exp(lq) - p));
    }
    return kl;
}

void cpu_distill_grad(real *kl, real *t, const real *s, const int32_t *target, int R, int V, real T, real scale) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)V))
    for (int r = 0; r < R; r++) {
        real *tr = t + (size_t)r * V;
        if (target[r] < 0) {
            kl[r] = 0;
            memset(tr, 0, sizeof(real) * V);
            continue;
        }
        kl[r] = (real)distill_row(tr, s + (size_t)r * V, V, T, scale);
    }
}

void cpu_argmax_rows(int32_t *out, const real *x, int R, int V) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)V))
    for (int r = 0; r < R; r++) {
        const real *l = x + (size_t)r * V;
        int best = 0;
        for (int i = 1; i < V; i++)
            if (l[i] > l[best]) best = i;
        out[r] = best;
    }
}

void cpu_split_heads(real *xh, const real *x, int B, int N, int H, int d) {
#pragma omp parallel for collapse(2) schedule(static) if (PAR_WORTH((size_t)B * N * H * d))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++)
                memcpy(xh + (((size_t)b * H + h) * N + n) * d, x + ((size_t)b * N + n) * H * d + (size_t)h * d,
                       sizeof(real) * d);
}

void cpu_merge_heads(real *x, const real *xh, int B, int N, int H, int d) {
#pragma omp parallel for collapse(2) schedule(static) if (PAR_WORTH((size_t)B * N * H * d))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++)
                memcpy(x + ((size_t)b * N + n) * H * d + (size_t)h * d, xh + (((size_t)b * H + h) * N + n) * d,
                       sizeof(real) * d);
}

void cpu_softmax_rows(real *x, int R, int C, real scale, const real *colbias) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)C))
    for (int r = 0; r < R; r++) {
        real *row = x + (size_t)r * C;
        real mx = -INFINITY;
        for (int c = 0; c < C; c++) {
            row[c] = row[c] * scale + (colbias ? colbias[c] : 0);
            if (row[c] > mx) mx = row[c];
        }
        if (mx == -INFINITY) {
            memset(row, 0, sizeof(real) * C);
            continue;
        }
        double s = 0;
        for (int c = 0; c < C; c++) s += (row[c] = rexp(row[c] - mx));
        real inv = (real)(1.0 / s);
        for (int c = 0; c < C; c++) row[c] *= inv;
    }
}

void cpu_softmax_rows_backward(real *dy, const real *y, int R, int C) {
#pragma omp parallel for schedule(static) if (PAR_WORTH((size_t)R * (size_t)C))
    for (int r = 0; r < R; r++) {
        real *g = dy + (size_t)r * C;
        const real *p = y + (size_t)r * C;
        double dot = 0;
        for (int c = 0; c < C; c++) dot += g[c] * p[c];
        for (int c = 0; c < C; c++) g[c] = p[c] * (g[c] - (real)dot);
    }
}

void cpu_attn_mask(real *S, const uint8_t *keymask, int B, int H, int N, int causal) {
    if (!causal && !keymask) return;
#pragma omp parallel for collapse(2) schedule(static)
    for (int bh = 0; bh < B * H; bh++)
        for (int i = 0; i < N; i++) {
            int b = bh / H;
            real *row = S + ((size_t)bh * N + i) * N;
            for (int j = 0; j < N; j++)
                if ((causal && j > i) || (keymask && !keymask[b * N + j])) row[j] = -INFINITY;
        }
}
