/* test64_cross.c: the cross-attention layers (nn/mixers/cross.h, docs/model.md §3.8) in
 * float64: central-difference gradient checks through the queries' input hq, the
 * context's input hc and every parameter, for gma and sdpa, with fewer queries than context
 * rows (the queries padded), more (the context padded) and as many; against a direct
 * evaluation of the formulas (GMA's memory read, softmax attention over the context); a
 * query's output does not depend on the other queries; and decoding (the context memory
 * once, then one query row at a time) gives the forward's rows. */
#include <string.h>

#include "gradcheck.h"
#include "model/generate.h"
#include "model/model_cross.h"
#include "nn/mixers/cross.h"
#include "testutil.h"

typedef struct XCase {
    Cross *x;
    ParamTable pt;
    real *params, *grads, *act, *scratch, *hq, *hc, *y, *r;
    int B, N, M;
    size_t nq, nc;
} XCase;

static Config xcfg(void) {
    Config c = tu_tiny_config("gma");
    c.model.init_std = 0.5;
    return c;
}

static void xc_setup(XCase *c, int kind, int B, int N, int M, uint64_t seed) {
    memset(c, 0, sizeof *c);
    Config cfg = xcfg();
    Rng rng;
    rng_seed(&rng, seed);
    c->x = cross_create(&cfg, kind, 3, &c->pt, "blocks.0.cross");
    c->params = xcalloc(c->pt.total, sizeof(real));
    c->grads = xcalloc(c->pt.total, sizeof(real));
    pt_init(&c->pt, c->params, &rng);
    if (kind == CROSS_GMA) /* spread the priors so that they carry gradient */
        gc_fill(c->params + c->pt.t[c->x->m.p[AP_N + 2]].offset, c->pt.t[c->x->m.p[AP_N + 2]].numel, &rng, 0.5);
    c->B = B, c->N = N, c->M = M;
    c->act = xcalloc(cross_act_size(c->x, B, N, M), sizeof(real));
    c->scratch = xcalloc(cross_scratch_size(c->x, B, N, M), sizeof(real));
    c->nq = (size_t)B * N * c->x->m.Dm;
    c->nc = (size_t)B * M * c->x->m.Dm;
    c->hq = gc_random(c->nq, &rng, 1);
    c->hc = gc_random(c->nc, &rng, 1);
    c->y = xcalloc(c->nq, sizeof(real));
    c->r = gc_random(c->nq, &rng, 1);
}

static void xc_free(XCase *c) {
    cross_destroy(c->x);
    pt_free(&c->pt);
    free(c->params), free(c->grads), free(c->act), free(c->scratch);
    free(c->hq), free(c->hc), free(c->y), free(c->r);
}

static double xc_loss(void *p) {
    XCase *c = p;
    cross_forward(c->x, c->y, c->hq, c->hc, c->params, c->act, c->scratch, c->B, c->N, c->M);
    return gc_dot(c->y, c->r, c->nq);
}

static void grad_case(int kind, int N, int M) {
    XCase c;
    xc_setup(&c, kind, 2, N, M, 7 + N + 3 * M + kind);
    char label[64];
    snprintf(label, sizeof label, "cross %s N %d M %d", kind == CROSS_GMA ? "gma" : "sdpa", N, M);
    xc_loss(&c);
    real *dq = xcalloc(c.nq, sizeof(real)), *dc = xcalloc(c.nc, sizeof(real));
    cross_backward(c.x, dq, dc, c.r, c.hq, c.hc, c.params, c.grads, c.act, c.scratch, c.B, N, M);
    gc_assert_grad(label, "dhq", xc_loss, &c, c.hq, dq, c.nq);
    gc_assert_grad(label, "dhc", xc_loss, &c, c.hc, dc, c.nc);
    for (int i = 0; i < c.pt.n; i++) {
        const ParamInfo *p = &c.pt.t[i];
        gc_assert_grad(label, p->name, xc_loss, &c, c.params + p->offset, c.grads + p->offset, p->numel);
    }
    /* the accumulate contract: a second backward doubles everything */
    real *g1 = xcalloc(c.pt.total, sizeof(real)), *dc1 = xcalloc(c.nc, sizeof(real));
    memcpy(g1, c.grads, c.pt.total * sizeof(real));
    memcpy(dc1, dc, c.nc * sizeof(real));
    xc_loss(&c);
    cross_backward(c.x, dq, dc, c.r, c.hq, c.hc, c.params, c.grads, c.act, c.scratch, c.B, N, M);
    for (size_t i = 0; i < c.pt.total; i++) ck_assert(fabs(c.grads[i] - 2 * g1[i]) <= 1e-12 * (1 + fabs(g1[i])));
    for (size_t i = 0; i < c.nc; i++) ck_assert(fabs(dc[i] - 2 * dc1[i]) <= 1e-12 * (1 + fabs(dc1[i])));
    free(g1), free(dc1), free(dq), free(dc);
    xc_free(&c);
}

START_TEST(test_grad_gma_short_queries) { grad_case(CROSS_GMA, 3, 5); }
END_TEST
START_TEST(test_grad_gma_long_queries) { grad_case(CROSS_GMA, 5, 2); }
END_TEST
START_TEST(test_grad_gma_equal) { grad_case(CROSS_GMA, 4, 4); }
END_TEST
START_TEST(test_grad_sdpa_short_queries) { grad_case(CROSS_SDPA, 3, 5); }
END_TEST
START_TEST(test_grad_sdpa_long_queries) { grad_case(CROSS_SDPA, 5, 2); }
END_TEST
START_TEST(test_grad_sdpa_equal) { grad_case(CROSS_SDPA, 4, 4); }
END_TEST

/* ---- the formulas, evaluated directly on the host ---- */
/* row of h W^T + b */
static void proj_row(double *out, const real *h, const real *W, const real *b, int I, int O) {
    for (int o = 0; o < O; o++) {
        double s = b ? b[o] : 0;
        for (int i = 0; i < I; i++) s += W[(size_t)o * I + i] * h[i];
        out[o] = s;
    }
}
static const real *T(const XCase *c, int p) { return c->x->m.p[p] >= 0 ? c->params + c->pt.t[c->x->m.p[p]].offset : NULL; }

/* gamma_k(x) = softmax_k(prior_k - 1/2 sum_j ((x_j - mu_kj)^2 / s2_kj + log s2_kj)) of head h */
static void gamma_row(double *g, const XCase *c, const double *x, int h) {
    int Kc = c->x->Kc, d = c->x->m.d;
    const real *mu = T(c, AP_N), *vr = T(c, AP_N + 1), *pr = T(c, AP_N + 2);
    double mx = -1e300;
    for (int k = 0; k < Kc; k++) {
        double l = pr[h * Kc + k];
        for (int j = 0; j < d; j++) {
            size_t i = ((size_t)h * Kc + k) * d + j;
            double s2 = log1p(exp(vr[i])) + 1e-4, e = x[j] - mu[i];
            l -= 0.5 * (e * e / s2 + log(s2));
        }
        g[k] = l;
        mx = fmax(mx, l);
    }
    double s = 0;
    for (int k = 0; k < Kc; k++) s += g[k] = exp(g[k] - mx);
    for (int k = 0; k < Kc; k++) g[k] /= s;
}

/* y [B,N,Dm] of the layer evaluated from its definition */
static void direct(const XCase *c, int kind, double *y) {
    const Mixer *m = &c->x->m;
    int Dm = m->Dm, D = m->D, H = m->H, d = m->d, Kc = c->x->Kc, N = c->N, M = c->M;
    double *q = xcalloc(D, sizeof(double)), *k = xcalloc((size_t)M * D, sizeof(double));
    double *v = xcalloc((size_t)M * D, sizeof(double)), *o = xcalloc(D, sizeof(double));
    double *g = xcalloc(Kc, sizeof(double)), *gk = xcalloc((size_t)M * Kc, sizeof(double));
    double *w = xcalloc(M, sizeof(double));
    for (int b = 0; b < c->B; b++) {
        for (int j = 0; j < M; j++) {
            const real *hc = c->hc + ((size_t)b * M + j) * Dm;
            proj_row(k + (size_t)j * D, hc, T(c, AP_WK), T(c, AP_BK), Dm, D);
            proj_row(v + (size_t)j * D, hc, T(c, AP_WV), T(c, AP_BV), Dm, D);
        }
        for (int i = 0; i < N; i++) {
            proj_row(q, c->hq + ((size_t)b * N + i) * Dm, T(c, AP_WQ), T(c, AP_BQ), Dm, D);
            for (int h = 0; h < H; h++) {
                if (kind == CROSS_GMA) { /* o = gamma(q) S / (gamma(q) z + eps), S = sum_j gamma(k_j) v_j^T */
                    gamma_row(g, c, q + h * d, h);
                    double den = c->x->eps;
                    for (int j = 0; j < M; j++) {
                        gamma_row(gk + (size_t)j * Kc, c, k + (size_t)j * D + h * d, h);
                        w[j] = 0;
                        for (int kk = 0; kk < Kc; kk++) w[j] += g[kk] * gk[(size_t)j * Kc + kk];
                        den += w[j];
                    }
                    for (int j = 0; j < M; j++) w[j] /= den;
                } else { /* softmax over the M keys */
                    double mx = -1e300, s = 0;
                    for (int j = 0; j < M; j++) {
                        w[j] = 0;
                        for (int e = 0; e < d; e++) w[j] += q[h * d + e] * k[(size_t)j * D + h * d + e];
                        w[j] /= sqrt((double)d);
                        mx = fmax(mx, w[j]);
                    }
                    for (int j = 0; j < M; j++) s += w[j] = exp(w[j] - mx);
                    for (int j = 0; j < M; j++) w[j] /= s;
                }
                for (int e = 0; e < d; e++) {
                    o[h * d + e] = 0;
                    for (int j = 0; j < M; j++) o[h * d + e] += w[j] * v[(size_t)j * D + h * d + e];
                }
            }
            for (int p = 0; p < Dm; p++) {
                double s = T(c, AP_BO) ? T(c, AP_BO)[p] : 0;
                for (int e = 0; e < D; e++) s += T(c, AP_WO)[(size_t)p * D + e] * o[e];
                y[((size_t)b * N + i) * Dm + p] = s;
            }
        }
    }
    free(q), free(k), free(v), free(o), free(g), free(gk), free(w);
}

static void direct_case(int kind, int N, int M) {
    XCase c;
    xc_setup(&c, kind, 2, N, M, 99 + N + M);
    xc_loss(&c);
    double *y = xcalloc(c.nq, sizeof(double));
    direct(&c, kind, y);
    for (size_t i = 0; i < c.nq; i++)
        ck_assert_msg(fabs(c.y[i] - y[i]) < 1e-10 * (1 + fabs(y[i])), "row element %zu: %.12g vs direct %.12g", i,
                      (double)c.y[i], y[i]);
    /* a change of query row 0 leaves the other queries' outputs as they were */
    real *y0 = xcalloc(c.nq, sizeof(real));
    memcpy(y0, c.y, c.nq * sizeof(real));
    for (int j = 0; j < c.x->m.Dm; j++) c.hq[j] += 0.7;
    xc_loss(&c);
    int changed = 0;
    for (size_t i = 0; i < c.nq; i++) {
        size_t row = i / c.x->m.Dm;
        if (row == 0) changed |= c.y[i] != y0[i];
        else ck_assert(c.y[i] == y0[i]);
    }
    ck_assert(changed);
    free(y), free(y0);
    xc_free(&c);
}

START_TEST(test_direct_gma) {
    direct_case(CROSS_GMA, 3, 6);
    direct_case(CROSS_GMA, 6, 3);
}
END_TEST
START_TEST(test_direct_sdpa) {
    direct_case(CROSS_SDPA, 3, 6);
    direct_case(CROSS_SDPA, 6, 3);
}
END_TEST

/* decoding: the context memory once, then each query row alone, equals the forward */
static void decode_case(int kind, int N, int M) {
    XCase c;
    int B = c.B = 2;
    xc_setup(&c, kind, B, N, M, 5 + N + M + kind);
    xc_loss(&c);
    int Dm = c.x->m.Dm;
    real *mem = xcalloc(cross_memory_size(c.x, M) * B, sizeof(real));
    real *sc = xcalloc(cross_decode_scratch(c.x, B, M), sizeof(real));
    real *hq = xcalloc((size_t)B * Dm, sizeof(real)), *y = xcalloc((size_t)B * Dm, sizeof(real));
    cross_memory(c.x, mem, c.hc, c.params, B, M, sc);
    for (int i = 0; i < N; i++) {
        for (int b = 0; b < B; b++) memcpy(hq + (size_t)b * Dm, c.hq + ((size_t)b * N + i) * Dm, Dm * sizeof(real));
        cross_step(c.x, y, hq, c.params, mem, B, M, sc);
        for (int b = 0; b < B; b++)
            for (int p = 0; p < Dm; p++) {
                double want = c.y[((size_t)b * N + i) * Dm + p], got = y[(size_t)b * Dm + p];
                ck_assert_msg(fabs(got - want) < 1e-10 * (1 + fabs(want)), "query %d of sequence %d: %.12g vs %.12g", i,
                              b, got, want);
            }
    }
    free(mem), free(sc), free(hq), free(y);
    xc_free(&c);
}
START_TEST(test_decode_gma) {
    decode_case(CROSS_GMA, 4, 6);
    decode_case(CROSS_GMA, 6, 3);
}
END_TEST
START_TEST(test_decode_sdpa) {
    decode_case(CROSS_SDPA, 4, 6);
    decode_case(CROSS_SDPA, 6, 3);
}
END_TEST

/* ---- the encoder-decoder (model/model_cross.h) ---- */
static Config model_cfg_sets(const char *self, const char *kind, const char *extra) {
    Config c = tu_tiny_config(self);
    char buf[256];
    snprintf(buf, sizeof buf,
             "cross.mixer=%s;cross.ctx_len=3;cross.enc_layers=2;cross.n_components=3;train.seq_len=7%s%s", kind,
             extra ? ";" : "", extra ? extra : "");
    tu_apply_sets(&c, buf);
    return c;
}
static Config model_cfg(const char *self, const char *kind) { return model_cfg_sets(self, kind, NULL); }

/* every parameter of the model (embeddings, encoder, decoder blocks with their cross
 * sub-layers, the head) against central differences of the mean loss over the 2 x 4
 * query rows of a 2 x 7 window (gradcheck.h GcModel) */
static void model_grad_sets(const char *self, const char *kind, const char *extra) {
    Config cfg = model_cfg_sets(self, kind, extra);
    GcModel c;
    gc_model_setup(&c, &cfg);
    ck_assert(c.m.x != NULL);
    char name[96];
    snprintf(name, sizeof name, "cross model %s + %s%s%s", self, kind, extra ? ", " : "", extra ? extra : "");
    gc_model_check(&c, name, name);
}
static void model_grad_case(const char *self, const char *kind) { model_grad_sets(self, kind, NULL); }
START_TEST(test_model_gma) { model_grad_case("gma", "gma"); }
END_TEST
START_TEST(test_model_sdpa) { model_grad_case("sdpa", "sdpa"); }
END_TEST
/* a causal encoder (cross.enc_causal); GMA's scan in chunks of 2 over the 3 context rows */
START_TEST(test_model_gma_enc_causal) { model_grad_sets("gma", "gma", "cross.enc_causal=true;gma.chunk=2"); }
END_TEST
START_TEST(test_model_sdpa_enc_causal) { model_grad_sets("sdpa", "sdpa", "cross.enc_causal=true"); }
END_TEST
/* cross.enc_mixer: an encoder of the other kind than the cross layers */
START_TEST(test_model_gma_cross_sdpa_encoder) { model_grad_sets("gma", "gma", "cross.enc_mixer=sdpa;cross.enc_causal=true"); }
END_TEST
START_TEST(test_model_sdpa_cross_gma_encoder) { model_grad_sets("sdpa", "sdpa", "cross.enc_mixer=gma"); }
END_TEST
/* cross.query_pos own: the query rows' positions from 0 (the learned table's gradient from both sequences) */
START_TEST(test_model_query_pos_own) {
    model_grad_sets("sdpa", "gma", "cross.query_pos=own;cross.enc_causal=true");
    model_grad_sets("gma", "sdpa", "cross.query_pos=own;model.pos=sinusoidal");
    /* the embedded rows: context row j = tok_emb + pos_emb[j], query row i = tok_emb + pos_emb[i] */
    for (int own = 0; own <= 1; own++) {
        Config cfg = model_cfg_sets("sdpa", "sdpa", own ? "cross.query_pos=own" : NULL);
        GcModel c;
        gc_model_setup(&c, &cfg);
        Model *m = &c.m;
        LossStats st;
        ck_assert_int_eq(model_forward(m, c.tok, c.tgt, 2, 7, NULL, 0, &st, 0, 0), 0);
        const real *wte = PT_PTR(m->params, &m->pt, m->wte), *wpe = PT_PTR(m->params, &m->pt, m->wpe);
        int D = m->D;
        for (int b = 0; b < 2; b++)
            for (int t = 0; t < 7; t++) {
                const real *row = t < 3 ? m->x->e[0] + ((size_t)b * 3 + t) * D : m->resid[0] + ((size_t)b * 4 + t - 3) * D;
                int p = own && t >= 3 ? t - 3 : t;
                for (int k = 0; k < D; k++)
                    ck_assert_msg(fabs(row[k] - (wte[(size_t)c.tok[b * 7 + t] * D + k] + wpe[(size_t)p * D + k])) < 1e-12,
                                  "own %d seq %d row %d dim %d", own, b, t, k);
            }
        model_free(m);
    }
}
END_TEST
/* the encoder's layers take enc_mixer's kind, the decoder's cross layers cross.mixer's */
START_TEST(test_enc_mixer_kinds) {
    Config cfg = model_cfg_sets("sdpa", "gma", "cross.enc_mixer=sdpa");
    Model m;
    ck_assert_int_eq(model_build(&m, &cfg), 0);
    ck_assert_int_eq(m.x->enc[0].att->kind, CROSS_SDPA);
    ck_assert_int_eq(m.x->enc[1].att->kind, CROSS_SDPA);
    ck_assert_int_eq(m.x->dec[0].att->kind, CROSS_GMA);
    ck_assert_int_eq(pt_find(m.x->pt, "cross.enc.0.attn.gma.mu"), -1);
    ck_assert(pt_find(m.x->pt, "blocks.0.cross.gma.mu") >= 0);
    model_free(&m);
    cfg = model_cfg_sets("sdpa", "gma", NULL);
    ck_assert_int_eq(model_build(&m, &cfg), 0);
    ck_assert_int_eq(m.x->enc[0].att->kind, CROSS_GMA);
    model_free(&m);
}
END_TEST

/* cross.enc_causal: the encoded context row j depends on context tokens 0..j only (and on
 * all of them without it): the last context token changed, rows 0..M-2 stay bit for bit */
static void enc_causal_case(const char *kind, int causal) {
    Config cfg = model_cfg_sets("sdpa", kind, causal ? "cross.enc_causal=true" : NULL);
    GcModel c;
    gc_model_setup(&c, &cfg);
    XModel *x = c.m.x;
    int M = x->M, D = x->D;
    LossStats st;
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.tgt, 2, 7, NULL, 0, &st, 1, 0), 0);
    real *before = malloc(sizeof(real) * (size_t)M * D);
    memcpy(before, x->ctx, sizeof(real) * (size_t)M * D);
    c.tok[M - 1] = (c.tok[M - 1] + 1) % 11;
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.tgt, 2, 7, NULL, 0, &st, 1, 0), 0);
    double moved_early = 0, moved_last = 0;
    for (int i = 0; i < M; i++)
        for (int k = 0; k < D; k++) {
            double dlt = fabs((double)x->ctx[(size_t)i * D + k] - before[(size_t)i * D + k]);
            if (i < M - 1) moved_early = fmax(moved_early, dlt);
            else moved_last = fmax(moved_last, dlt);
        }
    ck_assert_msg(moved_last > 1e-6, "%s: the changed row did not move (%g)", kind, moved_last);
    if (causal) ck_assert_msg(moved_early == 0, "%s causal encoder: earlier rows moved by %g", kind, moved_early);
    else ck_assert_msg(moved_early > 1e-9, "%s bidirectional encoder: earlier rows did not move", kind);
    free(before);
    model_free(&c.m);
}
START_TEST(test_enc_causal_rows) {
    enc_causal_case("gma", 1);
    enc_causal_case("sdpa", 1);
    enc_causal_case("gma", 0);
    enc_causal_case("sdpa", 0);
}
END_TEST

/* the context's targets are not scored; the query rows' are */
START_TEST(test_model_scores_queries) {
    Config cfg = model_cfg("gma", "gma");
    GcModel c;
    gc_model_setup(&c, &cfg);
    LossStats st;
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.tgt, 2, 7, NULL, 0, &st, 0, 0), 0);
    int want = 0;
    for (int b = 0; b < 2; b++)
        for (int i = 3; i < 7; i++) want += c.tgt[b * 7 + i] >= 0;
    ck_assert_int_eq((int)st.count, want);
    double l0 = st.loss_sum;
    c.tgt[0] = (c.tgt[0] + 1) % 11; /* a context target: no effect */
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.tgt, 2, 7, NULL, 0, &st, 0, 0), 0);
    ck_assert(st.loss_sum == l0);
    c.tok[1] = (c.tok[1] + 1) % 11; /* a context token: the queries see it through the cross layers */
    ck_assert_int_eq(model_forward(&c.m, c.tok, c.tgt, 2, 7, NULL, 0, &st, 0, 0), 0);
    ck_assert(st.loss_sum != l0);
    ck_assert_int_ne(model_forward(&c.m, c.tok, c.tgt, 2, 3, NULL, 0, &st, 0, 0), 0); /* no query row */
    model_free(&c.m);
}
END_TEST

/* decoding: prefill (the context's memory once, then the first query token), then one query
 * token at a time for 2 sequences, gives the forward's logits of every query row */
static void model_decode_sets(const char *self, const char *kind, const char *extra) {
    Config cfg = model_cfg_sets(self, kind, extra);
    GcModel c;
    gc_model_setup(&c, &cfg);
    Model *m = &c.m;
    for (int i = 0; i < 7; i++) c.tok[7 + i] = c.tok[i]; /* both sequences the same window */
    LossStats st;
    ck_assert_int_eq(model_forward(m, c.tok, c.tgt, 2, 7, NULL, 0, &st, 0, 0), 0);
    int V = m->V, N = 4;
    real *want = xcalloc((size_t)2 * N * V, sizeof(real));
    memcpy(want, m->logits, sizeof(real) * 2 * N * V);
    DecodeState s;
    ck_assert_msg(model_decode_begin_batch(m, &s, 2) == 0, "%s", gma_error());
    ck_assert_int_ne(model_prefill(m, &s, c.tok, 3), 0); /* the context alone: no query yet */
    ck_assert_msg(model_prefill(m, &s, c.tok, 4) == 0, "%s", gma_error());
    for (int i = 0; i < N; i++) {
        if (i > 0) {
            int32_t tk[2] = {c.tok[3 + i], c.tok[3 + i]};
            ck_assert_msg(model_decode_step_batch(m, &s, tk) == 0, "%s", gma_error());
        }
        for (int b = 0; b < 2; b++)
            for (int v = 0; v < V; v++) {
                double w = want[(size_t)i * V + v], g = m->logits[(size_t)b * V + v];
                ck_assert_msg(fabs(w - g) < 1e-10 * (1 + fabs(w)), "%s query %d seq %d logit %d: %.12g vs %.12g", kind,
                              i, b, v, g, w);
            }
    }
    model_decode_end(m, &s);
    free(want);
    model_free(m);
}
static void model_decode_case(const char *self, const char *kind) { model_decode_sets(self, kind, NULL); }
START_TEST(test_model_decode_gma) { model_decode_case("gma", "gma"); }
END_TEST
START_TEST(test_model_decode_sdpa) { model_decode_case("sdpa", "sdpa"); }
END_TEST
/* with a causal encoder, and with the queries' own positions */
START_TEST(test_model_decode_enc_causal_own_pos) {
    model_decode_sets("gma", "gma", "cross.enc_causal=true;gma.chunk=2");
    model_decode_sets("sdpa", "sdpa", "cross.enc_causal=true;cross.query_pos=own");
    model_decode_sets("sdpa", "gma", "cross.query_pos=own");
}
END_TEST

/* generation (model/generate.h): incremental decoding and a full forward per token draw the
 * same tokens from a cross model (the full forward's logits are those of its last query row) */
typedef struct Drawn { int32_t t[8]; int n; } Drawn;
static int keep_token(void *ctx, int32_t tok) {
    Drawn *d = ctx;
    d->t[d->n++] = tok;
    return 0;
}
static void generate_case(const char *self, const char *kind) {
    Config cfg = model_cfg(self, kind);
    GcModel c;
    gc_model_setup(&c, &cfg);
    Drawn a = {{0}, 0}, b = {{0}, 0};
    SampleOpts o = {.temperature = 1, .top_p = 1};
    Rng r1, r2;
    rng_seed(&r1, 9), rng_seed(&r2, 9);
    ck_assert_msg(model_generate(&c.m, c.tok, 4, 3, &o, &r1, keep_token, &a) == 0, "%s", gma_error());
    o.no_cache = 1;
    ck_assert_msg(model_generate(&c.m, c.tok, 4, 3, &o, &r2, keep_token, &b) == 0, "%s", gma_error());
    ck_assert_int_eq(a.n, 3);
    ck_assert_int_eq(b.n, 3);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(a.t[i], b.t[i]);
    model_free(&c.m);
}
START_TEST(test_model_generate) {
    generate_case("gma", "gma");
    generate_case("sdpa", "sdpa");
}
END_TEST

/* the config checks name their keys */
START_TEST(test_cross_refusals) {
    Config c = tu_tiny_config("gma");
    ck_assert(cfg_set(&c, "cross.mixer=gma") == 0);
    ck_assert(cfg_validate(&c) != 0 && strstr(gma_error(), "key cross.ctx_len"));
    ck_assert(cfg_set(&c, "cross.ctx_len=8") == 0); /* train.seq_len 8: no query left */
    ck_assert(cfg_validate(&c) != 0 && strstr(gma_error(), "key cross.ctx_len"));
    ck_assert(cfg_set(&c, "cross.ctx_len=4") == 0);
    ck_assert_msg(cfg_validate(&c) == 0, "%s", gma_error());
    ck_assert(cfg_set(&c, "data.source=xmqar") == 0); /* data.xmqar_ctx 16 */
    ck_assert(cfg_set(&c, "train.seq_len=24") == 0);
    ck_assert(cfg_set(&c, "model.max_seq_len=24") == 0);
    ck_assert(cfg_validate(&c) != 0 && strstr(gma_error(), "data.xmqar_ctx"));
    ck_assert(cfg_set(&c, "cross.mixer=banana") != 0 && strstr(gma_error(), "cross.mixer"));
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("cross-attention layers (float64)");
    TCase *tc = tcase_create("cross");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_grad_gma_short_queries);
    tcase_add_test(tc, test_grad_gma_long_queries);
    tcase_add_test(tc, test_grad_gma_equal);
    tcase_add_test(tc, test_grad_sdpa_short_queries);
    tcase_add_test(tc, test_grad_sdpa_long_queries);
    tcase_add_test(tc, test_grad_sdpa_equal);
    tcase_add_test(tc, test_direct_gma);
    tcase_add_test(tc, test_direct_sdpa);
    tcase_add_test(tc, test_decode_gma);
    tcase_add_test(tc, test_decode_sdpa);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("model");
    tcase_set_timeout(tm, 300);
    tcase_add_test(tm, test_model_gma);
    tcase_add_test(tm, test_model_sdpa);
    tcase_add_test(tm, test_model_gma_enc_causal);
    tcase_add_test(tm, test_model_sdpa_enc_causal);
    tcase_add_test(tm, test_enc_causal_rows);
    tcase_add_test(tm, test_model_gma_cross_sdpa_encoder);
    tcase_add_test(tm, test_model_sdpa_cross_gma_encoder);
    tcase_add_test(tm, test_enc_mixer_kinds);
    tcase_add_test(tm, test_model_scores_queries);
    tcase_add_test(tm, test_model_decode_gma);
    tcase_add_test(tm, test_model_decode_sdpa);
    tcase_add_test(tm, test_model_decode_enc_causal_own_pos);
    tcase_add_test(tm, test_model_query_pos_own);
    tcase_add_test(tm, test_model_generate);
    tcase_add_test(tm, test_cross_refusals);
    suite_add_tcase(s, tm);
    return s;
}

GMA_TEST_MAIN()
