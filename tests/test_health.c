/* test_health.c: GMA routing health (float32 build, run from the repository root):
 * responsibilities summing to one (both routings), orthogonal router rows, the EMA update
 * against a hand-computed case, k-means steps reducing the within-cluster distance,
 * NMI on hand-computed contingency tables, token categories, a provoked collapse repaired
 * by re-seeding (unit and end to end), frozen routing tensors (train.freeze) left as they
 * are by re-seeding and k-means seeding, a re-seed from disagreeing gathered rows refused
 * with an error, on_collapse "stop", the refusals of bad gma.* input,
 * and gmaeval --analyze on a fixed tiny model. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/routing.h"
#include "model/model.h"
#include "nn/kmeans.h"
#include "testutil.h"
#include "train/health.h"

static Config small_cfg(const char *sets) {
    Config c = tu_tiny_config("gma");
    c.model.n_layers = 1;
    c.model.d_ff = 0; /* the default, 4 D */
    tu_apply_sets(&c, sets);
    return c;
}

typedef struct { Mixer *m; ParamTable pt; real *params, *act, *scratch, *h, *y; MixerCtx ctx; } One;

static void one_make(One *o, const Config *c, int B, int N, uint64_t seed) {
    memset(o, 0, sizeof *o);
    o->m = mixer_find("gma")->create(c, 0, &o->pt, "blocks.0.mixer");
    Rng r;
    rng_seed(&r, seed);
    o->params = xcalloc(o->pt.total, sizeof(real));
    pt_init(&o->pt, o->params, &r);
    if (o->m->vt->init) o->m->vt->init(o->m, o->params, &r);
    o->act = xcalloc(o->m->vt->act_size(o->m, B, N), sizeof(real));
    o->scratch = xcalloc(o->m->vt->scratch_size(o->m, B, N), sizeof(real));
    size_t n = (size_t)B * N * c->model.d_model;
    o->h = xcalloc(n, sizeof(real));
    o->y = xcalloc(n, sizeof(real));
    for (size_t i = 0; i < n; i++) o->h[i] = (real)rng_normal(&r);
    o->ctx = (MixerCtx){.B = B, .N = N, .causal = 1, .training = 1};
}
static void one_fwd(One *o) { o->m->vt->forward(o->m, &o->ctx, o->y, o->h, o->params, o->act, o->scratch); }
static void one_free(One *o) {
    o->m->vt->destroy(o->m);
    pt_free(&o->pt);
    free(o->params), free(o->act), free(o->scratch), free(o->h), free(o->y);
}

static void sums_to_one(const char *sets) {
    Config c = small_cfg(sets);
    One o;
    int B = 2, N = 7;
    one_make(&o, &c, B, N, 9);
    one_fwd(&o);
    MixerComponents mc;
    o.m->vt->health->components(o.m, o.act, B, N, &mc);
    const real *g = mc.gq;
    int Kc = (int)cfg_num(&c, "gma.n_components");
    /* gq; with the EMA memory the saved gk right after it (the linear core recomputes gk) */
    int passes = strstr(sets, "gma.memory=ema") ? 2 : 1;
    for (int pass = 0; pass < passes; pass++, g += (size_t)B * 2 * N * Kc)
        for (int r = 0; r < B * 2 * N; r++) {
            double s = 0;
            for (int k = 0; k < Kc; k++) {
                ck_assert(g[r * Kc + k] >= 0);
                s += g[r * Kc + k];
            }
            ck_assert_msg(fabs(s - 1) < 1e-5, "%s: row %d sums to %.8f", sets, r, s);
        }
    one_free(&o);
}

START_TEST(test_resp_sum_one) {
    sums_to_one("gma.routing=gaussian");
    sums_to_one("gma.routing=softmax");
    sums_to_one("gma.routing=softmax;gma.init=orthogonal;gma.temperature=0.5");
    sums_to_one("gma.routing=softmax;gma.shared_components=true;gma.memory=ema");
}
END_TEST

START_TEST(test_orthogonal_rows) {
    for (int Kc = 3; Kc <= 12; Kc += 9) { /* Kc <= d = 4: rows; Kc > d: columns */
        char s[128];
        snprintf(s, sizeof s, "gma.routing=softmax;gma.init=orthogonal;gma.n_components=%d", Kc);
        Config c = small_cfg(s);
        One o;
        one_make(&o, &c, 1, 2, 3);
        int d = 4, idx = pt_find(&o.pt, "blocks.0.mixer.gma.router.weight");
        ck_assert_int_ge(idx, 0);
        for (int h = 0; h < 2; h++) {
            const real *W = o.params + o.pt.t[idx].offset + (size_t)h * Kc * d;
            int nv = Kc <= d ? Kc : d, len = Kc <= d ? d : Kc;
            for (int i = 0; i < nv; i++)
                for (int j = 0; j < nv; j++) {
                    double dot = 0;
                    for (int e = 0; e < len; e++)
                        dot += Kc <= d ? W[i * d + e] * W[j * d + e] : W[e * d + i] * W[e * d + j];
                    ck_assert_msg(fabs(dot - (i == j)) < 1e-5, "Kc %d: <%d,%d> = %g", Kc, i, j, dot);
                }
        }
        one_free(&o);
    }
}
END_TEST

/* M <- alpha M + (1 - alpha) mean_t gamma(k_t) v_t^T, checked on a case worked by hand */
START_TEST(test_ema_update_by_hand) {
    Config c = small_cfg("gma.memory=ema;gma.n_components=2;model.d_model=2;model.n_heads=1");
    One o;
    int B = 1, N = 2, Kc = 2, d = 2;
    one_make(&o, &c, B, N, 1);
    size_t hs = (size_t)B * N * 2, gs = (size_t)B * N * Kc;
    real *vh = o.act + 2 * hs, *gk = o.act + 4 * hs + gs; /* act: qh kh vh oh gq gk ... */
    real gkv[4] = {0.25f, 0.75f, 1.0f, 0.0f}, vv[4] = {2, 4, -2, 6};
    memcpy(gk, gkv, sizeof gkv);
    memcpy(vh, vv, sizeof vv);
    real *M = o.params + o.pt.t[pt_find(&o.pt, "blocks.0.mixer.gma.memory")].offset;
    real M0[4] = {1, 2, 3, 4};
    memcpy(M, M0, sizeof M0);
    /* default alpha = 1 - 1/(B N) = 0.5; mean_t gamma_t v_t^T:
     * k=0: (0.25*[2,4] + 1*[-2,6]) / 2 = [-0.75, 3.5]; k=1: (0.75*[2,4] + 0) / 2 = [0.75, 1.5] */
    o.m->vt->health->update_buffers(o.m, &o.ctx, o.params, o.act);
    real want[4] = {0.5f * 1 + 0.5f * -0.75f, 0.5f * 2 + 0.5f * 3.5f, 0.5f * 3 + 0.5f * 0.75f, 0.5f * 4 + 0.5f * 1.5f};
    for (int i = 0; i < Kc * d; i++) ck_assert_msg(fabs(M[i] - want[i]) < 1e-6, "M[%d] = %g, want %g", i, M[i], want[i]);
    one_free(&o);
    /* an explicit decay of 0.9 */
    c = small_cfg("gma.memory=ema;gma.n_components=2;model.d_model=2;model.n_heads=1;gma.ema_decay=0.9");
    one_make(&o, &c, B, N, 1);
    vh = o.act + 2 * hs, gk = o.act + 4 * hs + gs;
    memcpy(gk, gkv, sizeof gkv);
    memcpy(vh, vv, sizeof vv);
    M = o.params + o.pt.t[pt_find(&o.pt, "blocks.0.mixer.gma.memory")].offset;
    memcpy(M, M0, sizeof M0);
    o.m->vt->health->update_buffers(o.m, &o.ctx, o.params, o.act);
    real want9[4] = {0.9f * 1 + 0.1f * -0.75f, 0.9f * 2 + 0.1f * 3.5f, 0.9f * 3 + 0.1f * 0.75f, 0.9f * 4 + 0.1f * 1.5f};
    for (int i = 0; i < Kc * d; i++) ck_assert(fabs(M[i] - want9[i]) < 1e-6);
    one_free(&o);
}
END_TEST

START_TEST(test_kmeans_reduces) {
    Rng r;
    rng_seed(&r, 77);
    int n = 300, d = 3, k = 4;
    real *X = xmalloc(sizeof(real) * n * d), *C = xmalloc(sizeof(real) * k * d), *C2 = xmalloc(sizeof(real) * k * d);
    for (int i = 0; i < n; i++)
        for (int e = 0; e < d; e++) X[i * d + e] = (real)(3.0 * ((i % 4) == e) + 0.5 * rng_normal(&r));
    Rng s1;
    rng_seed(&s1, 5);
    kmeans_pp_seed(X, n, d, k, C, &s1);
    double prev = kmeans_sse(X, n, d, k, C);
    for (int it = 0; it < 6; it++) {
        double before = kmeans_lloyd_step(X, n, d, k, C, NULL);
        ck_assert(fabs(before - prev) < 1e-6 * (1 + prev));
        double after = kmeans_sse(X, n, d, k, C);
        ck_assert_msg(after <= before + 1e-9, "iteration %d: %g -> %g", it, before, after);
        prev = after;
    }
    printf("k-means: within-cluster SSE after 6 Lloyd steps %.3f\n", prev);
    /* deterministic under the seed */
    Rng a, b;
    rng_seed(&a, 11);
    rng_seed(&b, 11);
    double f1 = kmeans_fit(X, n, d, k, 10, C, &a), f2 = kmeans_fit(X, n, d, k, 10, C2, &b);
    ck_assert(f1 == f2 && memcmp(C, C2, sizeof(real) * k * d) == 0);
    free(X), free(C), free(C2);
}
END_TEST

START_TEST(test_nmi_tables) {
    double indep[4] = {10, 10, 10, 10};                  /* A and C independent */
    ck_assert(fabs(nmi_from_table(indep, 2, 2)) < 1e-12);
    double ident[9] = {5, 0, 0, 0, 7, 0, 0, 0, 3};       /* identical labellings */
    ck_assert(fabs(nmi_from_table(ident, 3, 3) - 1) < 1e-12);
    double perm[4] = {0, 4, 6, 0};                       /* identical up to renaming */
    ck_assert(fabs(nmi_from_table(perm, 2, 2) - 1) < 1e-12);
    /* [[2,1],[0,1]] by hand: p(a)=(3/4,1/4), p(c)=(1/2,1/2); I = 1/2 ln(4/3) + 1/4 ln(2/3) + 1/4 ln 2 */
    double t[4] = {2, 1, 0, 1};
    double I = 0.5 * log(4.0 / 3) + 0.25 * log(2.0 / 3) + 0.25 * log(2.0);
    double HA = -(0.75 * log(0.75) + 0.25 * log(0.25)), HC = log(2.0);
    ck_assert(fabs(nmi_from_table(t, 2, 2) - I / ((HA + HC) / 2)) < 1e-12);
    double u[4] = {1, 1, 1, 1};
    ck_assert(fabs(usage_entropy_norm(u, 4) - 1) < 1e-12);
    double one[4] = {0, 9, 0, 0};
    ck_assert(usage_entropy_norm(one, 4) == 0);
}
END_TEST

/* a byte-level token that is half a character ("\xC3") reaches the analysis JSON as U+FFFD:
 * the file stays valid UTF-8 (strict JSON readers refuse it otherwise) */
START_TEST(test_analysis_json_utf8) {
    static const char *cats[1] = {"other"};
    RouteAnalysis ra;
    ra_init(&ra, 1, 1, 2, 2, 1, cats);
    const float gamma[4] = {0.9f, 0.1f, 0.2f, 0.8f};
    const int32_t tok[2] = {0, 1};
    const uint8_t score[2] = {1, 1};
    const int cat[2] = {0, 0};
    ra_add(&ra, 0, gamma, tok, score, 1, 2, cat);
    ra_next_batch(&ra, tok, score, 1, 2);
    const char *text[2] = {"\xC3", "ok"};
    int layer = 0;
    char *js = ra_json(&ra, &layer, text, 4);
    ck_assert_msg(strstr(js, "\"text\":\t\"\xEF\xBF\xBD\"") || strstr(js, "\"text\": \"\xEF\xBF\xBD\"") ||
                      strstr(js, "\"text\":\"\xEF\xBF\xBD\""), "%s", js);
    ck_assert(!strstr(js, "\xC3\""));
    ck_assert(strstr(js, "\"ok\""));
    free(js);
    ra_free(&ra);
}
END_TEST

START_TEST(test_token_categories) {
    ck_assert_int_eq(token_category(" 1984"), CAT_NUMBER);
    ck_assert_int_eq(token_category("3,000.5"), CAT_NUMBER);
    ck_assert_int_eq(token_category(","), CAT_PUNCT);
    ck_assert_int_eq(token_category(" ."), CAT_PUNCT);
    ck_assert_int_eq(token_category(" the"), CAT_FUNCTION);
    ck_assert_int_eq(token_category("The"), CAT_FUNCTION);
    ck_assert_int_eq(token_category("\xC4\xA0of"), CAT_FUNCTION);
    ck_assert_int_eq(token_category(" Paris"), CAT_CAPITAL);
    ck_assert_int_eq(token_category(" tree"), CAT_OTHER);
    ck_assert_int_eq(token_category("A4"), CAT_CAPITAL);
}
END_TEST

/* all means equal: every token ties but for component 0's small prior, which takes them
 * all, the rest are dead; re-seeding brings the active count back and zeroes the re-seeded rows' moments */
START_TEST(test_collapse_reinit_unit) {
    Config c = small_cfg("gma.n_components=6");
    One o;
    int B = 4, N = 8, Kc = 6, H = 2, d = 4;
    one_make(&o, &c, B, N, 5);
    int imu = pt_find(&o.pt, "blocks.0.mixer.gma.mu");
    for (size_t i = 0; i < o.pt.t[imu].numel; i++) o.params[o.pt.t[imu].offset + i] = 0.1f;
    /* component 0's log prior 1e-3 above the rest: the argmax does not rest on float ties,
     * which the BLAS kernels of some CPUs break by rounding (the entropy moves by ~1e-7) */
    int ipr = pt_find(&o.pt, "blocks.0.mixer.gma.prior_logits");
    for (size_t i = 0; i < o.pt.t[ipr].numel; i += Kc) o.params[o.pt.t[ipr].offset + i] = 1e-3f;
    one_fwd(&o);
    double ent[2], cnt[12];
    routing_stats(o.m, &o.ctx, o.params, o.act, ent, cnt, NULL);
    int active0 = 0;
    for (int k = 0; k < Kc; k++) active0 += cnt[k] > 0;
    ck_assert_int_eq(active0, 1);
    ck_assert(fabs(ent[0] - log(6.0)) < 1e-4);
    real *m1 = xcalloc(o.pt.total, sizeof(real)), *m2 = xcalloc(o.pt.total, sizeof(real));
    for (size_t i = 0; i < o.pt.total; i++) m1[i] = m2[i] = 1;
    int dead[6];
    for (int k = 0; k < Kc; k++) dead[k] = cnt[k] == 0;
    Rng r;
    rng_seed(&r, 1);
    for (int h = 0; h < H; h++) ck_assert_int_eq(routing_reinit(o.m, &o.ctx, o.params, m1, m2, o.act, h, dead, &r), 5);
    for (int k = 1; k < Kc; k++)
        for (int e = 0; e < d; e++) ck_assert(m1[o.pt.t[imu].offset + k * d + e] == 0 && m2[o.pt.t[imu].offset + k * d + e] == 0);
    ck_assert(m1[o.pt.t[imu].offset] == 1); /* the live component keeps its moments */
    one_fwd(&o);
    routing_stats(o.m, &o.ctx, o.params, o.act, ent, cnt, NULL);
    for (int h = 0; h < H; h++) {
        int active = 0;
        for (int k = 0; k < Kc; k++) active += cnt[h * Kc + k] > 0;
        printf("collapse repair (unit): head %d active components %d -> %d of %d\n", h, active0, active, Kc);
        ck_assert_int_ge(active, 3);
    }
    free(m1), free(m2);
    one_free(&o);
}
END_TEST

/* gma.reseed_rows: a re-seeded centre is one of the batch's query rows of its head
 * ("queries", the default) or one of its key rows ("keys"), and not one of the other kind
 * (the provoked collapse of test_collapse_reinit_unit) */
static int row_of(const real *x, const real *rows, int B, int H, int N, int h, int d) {
    for (int b = 0; b < B; b++)
        for (int i = 0; i < N; i++) {
            const real *r = rows + (((size_t)b * H + h) * N + i) * d;
            if (!memcmp(r, x, sizeof(real) * d)) return 1;
        }
    return 0;
}
static void reseed_from(const char *rows) {
    char sets[128];
    snprintf(sets, sizeof sets, "gma.n_components=6;gma.reseed_rows=%s", rows);
    Config c = small_cfg(sets);
    One o;
    int B = 4, N = 8, Kc = 6, H = 2, d = 4, keys = !strcmp(rows, "keys");
    one_make(&o, &c, B, N, 5);
    int imu = pt_find(&o.pt, "blocks.0.mixer.gma.mu"), ipr = pt_find(&o.pt, "blocks.0.mixer.gma.prior_logits");
    for (size_t i = 0; i < o.pt.t[imu].numel; i++) o.params[o.pt.t[imu].offset + i] = 0.1f;
    for (size_t i = 0; i < o.pt.t[ipr].numel; i += Kc) o.params[o.pt.t[ipr].offset + i] = 1e-3f;
    one_fwd(&o);
    MixerComponents mc;
    o.m->vt->health->components(o.m, o.act, B, N, &mc);
    ck_assert(mc.qh != NULL && mc.kh != NULL && mc.kh != mc.qh);
    int dead[6] = {0, 1, 1, 1, 1, 1};
    Rng r;
    rng_seed(&r, 1);
    for (int h = 0; h < H; h++) ck_assert_int_eq(routing_reinit(o.m, &o.ctx, o.params, NULL, NULL, o.act, h, dead, &r), 5);
    for (int h = 0; h < H; h++)
        for (int k = 1; k < Kc; k++) {
            const real *mu = o.params + o.pt.t[imu].offset + ((size_t)h * Kc + k) * d;
            ck_assert_msg(row_of(mu, keys ? mc.kh : mc.qh, B, H, N, h, d), "%s: head %d component %d is no %s row", rows, h, k, rows);
            ck_assert_msg(!row_of(mu, keys ? mc.qh : mc.kh, B, H, N, h, d), "%s: head %d component %d from the other rows", rows, h, k);
        }
    one_free(&o);
}
START_TEST(test_reseed_rows) {
    reseed_from("queries");
    reseed_from("keys");
}
END_TEST

/* train.freeze: re-seeding and k-means seeding leave frozen routing tensors' bits as they
 * are (unfrozen, the same calls change them: the checks can fail) */
START_TEST(test_frozen_routing_kept) {
    Config c = small_cfg("gma.n_components=6");
    One o;
    int B = 4, N = 8, Kc = 6;
    one_make(&o, &c, B, N, 5);
    int imu = pt_find(&o.pt, "blocks.0.mixer.gma.mu"), ipr = pt_find(&o.pt, "blocks.0.mixer.gma.prior_logits");
    for (size_t i = 0; i < o.pt.t[imu].numel; i++) o.params[o.pt.t[imu].offset + i] = 0.1f;
    for (size_t i = 0; i < o.pt.t[ipr].numel; i += Kc) o.params[o.pt.t[ipr].offset + i] = 1e-3f;
    one_fwd(&o);
    int dead[6] = {0, 1, 1, 1, 1, 1};
    real *before = xmalloc(sizeof(real) * o.pt.total);
    memcpy(before, o.params, sizeof(real) * o.pt.total);
    for (int fz = 1; fz >= 0; fz--) {
        o.pt.t[imu].frozen = fz;
        Rng r;
        rng_seed(&r, 1);
        int done = routing_reinit(o.m, &o.ctx, o.params, NULL, NULL, o.act, 0, dead, &r);
        int same = !memcmp(before, o.params, sizeof(real) * o.pt.total);
        ck_assert_msg(fz ? done == 0 && same : done == 5 && !same, "frozen %d: re-seeded %d, params %s", fz, done,
                      same ? "kept" : "changed");
    }
    free(before);
    one_free(&o);
    /* k-means seeding (gma.init "kmeans") of a model whose mu is frozen */
    for (int fz = 1; fz >= 0; fz--) {
        Config mc = small_cfg("gma.init=kmeans;gma.n_components=3");
        Model m;
        ck_assert_int_eq(model_build(&m, &mc), 0);
        model_alloc(&m, 2, 8);
        model_init_params(&m, 3);
        int t = pt_find(&m.pt, "blocks.0.mixer.gma.mu");
        m.pt.t[t].frozen = fz;
        size_t n = m.pt.t[t].numel;
        real *mu0 = xmalloc(sizeof(real) * n), *mu1 = xmalloc(sizeof(real) * n);
        g_ops->to_host(mu0, m.params + m.pt.t[t].offset, sizeof(real) * n);
        int32_t tok[16], tgt[16];
        for (int i = 0; i < 16; i++) tok[i] = (int32_t)((i * 3 + 1) % 11), tgt[i] = -1;
        Rng r;
        rng_seed(&r, 2);
        ck_assert_msg(model_kmeans_init(&m, tok, tgt, 2, 8, NULL, &r) == 0, "%s", gma_error());
        g_ops->to_host(mu1, m.params + m.pt.t[t].offset, sizeof(real) * n);
        ck_assert_msg(fz == !memcmp(mu0, mu1, sizeof(real) * n), "frozen %d: mu %s", fz, fz ? "changed" : "kept");
        free(mu0), free(mu1);
        model_free(&m);
    }
}
END_TEST

/* a gather that loses a row of the argmax column (width 1), or fails (returns NULL) */
static real *gather_short(const real *x, int n, int d, int *n_all, void *ctx) {
    if (*(int *)ctx) return NULL;
    int keep = d == 1 && n > 0 ? n - 1 : n;
    real *y = xmalloc(sizeof(real) * ((size_t)keep * d + 1));
    memcpy(y, x, sizeof(real) * (size_t)keep * d);
    *n_all = keep;
    return y;
}

/* re-seeding from gathered rows that disagree with their argmax, or from a failed gather,
 * returns an error and leaves the parameters as they were */
START_TEST(test_reinit_gather_error) {
    Config c = small_cfg("gma.n_components=6");
    One o;
    one_make(&o, &c, 2, 8, 5);
    one_fwd(&o);
    real *p0 = xmalloc(sizeof(real) * o.pt.total);
    memcpy(p0, o.params, sizeof(real) * o.pt.total);
    int dead[6] = {0, 1, 1, 0, 0, 1}, fail = 0;
    o.ctx.gather = gather_short;
    o.ctx.gather_ctx = &fail;
    Rng r;
    rng_seed(&r, 1);
    for (fail = 0; fail < 2; fail++) {
        ck_assert_int_eq(routing_reinit(o.m, &o.ctx, o.params, NULL, NULL, o.act, 0, dead, &r), -1);
        ck_assert_msg(strstr(gma_error(), "routing reinit: "), "%s", gma_error());
        ck_assert(memcmp(p0, o.params, sizeof(real) * o.pt.total) == 0);
    }
    free(p0);
    one_free(&o);
}
END_TEST

/* mixer "auto" forwards GMA's hooks: monitored, k-means wanted, the EMA memory updated and
 * averaged over ranks, gma.* validated, when its layer runs the GMA path; nothing from the
 * sdpa path */
START_TEST(test_auto_forwards_hooks) {
    Config c = small_cfg("model.mixer=auto;model.auto_threshold=1;gma.memory=ema");
    Model m;
    ck_assert_int_eq(model_build(&m, &c), 0);
    model_alloc(&m, 2, 8);
    model_init_params(&m, 3);
    ck_assert_int_eq(model_gma_layers(&m), 1);
    MixerMonitor mon;
    ck_assert_int_eq(model_monitor(&m, &mon), 1);
    ck_assert_int_eq(mon.every, 100);
    ck_assert_int_eq(model_wants_kmeans(&m), 1);
    int im = pt_find(&m.pt, "blocks.0.mixer.gma.memory");
    ck_assert_int_ge(im, 0);
    ck_assert_int_eq(model_rank_averaged(&m, im), 1);
    ck_assert_int_eq(model_rank_averaged(&m, pt_find(&m.pt, "blocks.0.mixer.gma.mu")), 0);
    int32_t tok[16], tgt[16];
    for (int i = 0; i < 16; i++) tok[i] = (int32_t)(i % 11), tgt[i] = (int32_t)((i + 1) % 11);
    size_t n = m.pt.t[im].numel;
    real *mem0 = xmalloc(n * sizeof(real));
    memcpy(mem0, m.params + m.pt.t[im].offset, n * sizeof(real));
    LossStats st;
    ck_assert_int_eq(model_forward(&m, tok, tgt, 2, 8, NULL, 0, &st, 1, 0), 0);
    model_backward(&m, 1.0);
    model_update_buffers(&m);
    ck_assert_msg(memcmp(mem0, m.params + m.pt.t[im].offset, n * sizeof(real)) != 0, "the EMA memory was not updated");
    HealthMon hm;
    health_init(&hm, &m);
    char buf[8192] = "";
    FILE *f = fmemopen(buf, sizeof buf, "w");
    health_check(&hm, &m, 1, f, 1, 1);
    fclose(f);
    ck_assert_msg(strstr(buf, "\"event\":\"routing\"") && strstr(buf, "\"mem_norm\":") && !strstr(buf, "\"mem_norm\":null"), "%s", buf);
    health_free(&hm);
    model_free(&m);
    free(mem0);
    /* the sdpa path (N < threshold) keeps no responsibilities: nothing updated or reported */
    c = small_cfg("model.mixer=auto;model.auto_threshold=100;gma.memory=ema");
    ck_assert_int_eq(model_build(&m, &c), 0);
    model_alloc(&m, 2, 8);
    model_init_params(&m, 3);
    im = pt_find(&m.pt, "blocks.0.mixer.gma.memory");
    mem0 = xmalloc(n * sizeof(real));
    memcpy(mem0, m.params + m.pt.t[im].offset, n * sizeof(real));
    ck_assert_int_eq(model_forward(&m, tok, tgt, 2, 8, NULL, 0, &st, 1, 0), 0);
    model_backward(&m, 1.0);
    model_update_buffers(&m);
    ck_assert(memcmp(mem0, m.params + m.pt.t[im].offset, n * sizeof(real)) == 0);
    health_init(&hm, &m);
    buf[0] = 0;
    f = fmemopen(buf, sizeof buf, "w");
    health_check(&hm, &m, 1, f, 1, 1);
    fclose(f);
    ck_assert_msg(!strstr(buf, "\"event\":\"routing\""), "%s", buf);
    health_free(&hm);
    model_free(&m);
    free(mem0);
    /* gma.* is validated for auto layers too */
    c = small_cfg("model.mixer=auto");
    ck_assert(cfg_set(&c, "gma.init=orthogonal") == 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key gma.init"));
}
END_TEST

/* ---------------- end to end through bin/ ---------------- */

static const char *COLLAPSE =
    "{\"name\": \"c\", \"seed\": 5,\n"
    " \"model\": {\"d_model\": 16, \"n_layers\": 1, \"n_heads\": 2, \"max_seq_len\": 16, \"mixer\": \"gma\"},\n"
    " \"gma\": {\"n_components\": 8, \"chunk\": 8, \"monitor_every\": 5, \"patience\": 2, \"init_mean_scale\": 1e-12},\n"
    " \"train\": {\"steps\": 20, \"batch_size\": 8, \"seq_len\": 16, \"lr\": 0.003, \"warmup\": 0, \"eval_every\": 0,\n"
    "           \"log_every\": 10, \"checkpoint_every\": 0},\n"
    " \"data\": {\"recall_vocab\": 20, \"recall_pairs\": 3, \"recall_valid\": 16, \"recall_test\": 16}}\n";

/* largest "active" of the routing rows at or after step `from` */
static int max_active_from(const char *metrics, long from) {
    int best = -1;
    for (const char *p = strstr(metrics, "\"event\":\"routing\""); p; p = strstr(p + 1, "\"event\":\"routing\"")) {
        const char *ls = p;
        while (ls > metrics && ls[-1] != '\n') ls--;
        long step = atol(strstr(ls, "\"step\":") + 7);
        int act = atoi(strstr(p, "\"active\":") + 9);
        if (step >= from && act > best) best = act;
    }
    return best;
}

START_TEST(test_collapse_end_to_end) {
    tu_write(tu_path("c.json"), COLLAPSE);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set gma.on_collapse=reinit", tu_path("c.json"), tu_path("re")) == 0,
                  "%s", g_out);
    char p[1024];
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("re"));
    char *m = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(strstr(m, "\"kind\":\"dead_components\""));
    ck_assert_ptr_nonnull(strstr(m, "\"action\":\"reinit\""));
    int before = max_active_from(m, 0), after = max_active_from(m, 15);
    ck_assert_ptr_nonnull(strstr(m, "\"step\":5,\"event\":\"routing\",\"layer\":0,\"head\":0,\"entropy\":2.079"));
    ck_assert_ptr_nonnull(strstr(m, "\"active\":1,"));
    printf("collapse repair (gmatrain): active components 1 at step 5, up to %d after the re-seed at step 10 (Kc 8)\n", after);
    ck_assert_int_ge(after, 3);
    (void)before;
    free(m);
    /* warn: alerts logged, nothing re-seeded, still collapsed */
    ck_assert(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("c.json"), tu_path("warn")) == 0);
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("warn"));
    m = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(strstr(m, "\"action\":\"warn\""));
    ck_assert_int_eq(max_active_from(m, 0), 1);
    free(m);
    /* stop: exit 4 after writing a checkpoint */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet --set gma.on_collapse=stop", tu_path("c.json"), tu_path("st")), 4);
    ck_assert_ptr_nonnull(strstr(g_out, "routing collapse alert"));
    snprintf(p, sizeof p, "%s/latest/model.safetensors", tu_path("st"));
    ck_assert(gma_path_exists(p));
    /* train.freeze of the centres: k-means seeding and the re-seed skip them, one line each */
    ck_assert(run("./bin/gmatrain --config %s --out %s --quiet --set gma.on_collapse=reinit --set gma.init=kmeans "
                  "--set train.freeze=blocks.0.mixer.gma.mu", tu_path("c.json"), tu_path("fz")) == 0);
    const char *k = strstr(g_out, "k-means seeding leaves blocks.0.mixer.gma.mu as it is: frozen by train.freeze\n"),
               *rs = strstr(g_out, "re-seeding leaves blocks.0.mixer.gma.mu as it is: frozen by train.freeze\n");
    ck_assert_msg(k && !strstr(k + 1, "k-means seeding leaves") && rs && !strstr(rs + 1, "re-seeding leaves"), "%s", g_out);
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("fz"));
    m = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(strstr(m, "\"reseeded\":0"));
    ck_assert_ptr_null(strstr(m, "\"reseeded\":1"));
    free(m);
}
END_TEST

/* an auto model on its GMA path: routing rows with the memory norm, k-means seeding */
START_TEST(test_auto_end_to_end) {
    tu_write(tu_path("c.json"), COLLAPSE);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --set model.mixer=auto --set model.auto_threshold=1 "
                      "--set gma.memory=ema",
                      tu_path("c.json"), tu_path("auto")) == 0,
                  "%s", g_out);
    ck_assert_msg(strstr(g_out, "k-means initialisation"), "%s", g_out);
    char p[1024];
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("auto"));
    char *m = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(strstr(m, "\"step\":5,\"event\":\"routing\",\"layer\":0"));
    ck_assert_ptr_null(strstr(m, "\"mem_norm\":null"));
    free(m);
}
END_TEST

START_TEST(test_bad_input) {
    tu_write(tu_path("c.json"), COLLAPSE);
    const char *cases[][2] = {
        {"gma.routing=dotproduct", "key gma.routing: \"dotproduct\" is not one of gaussian|softmax"},
        {"gma.memory=lstm", "key gma.memory: \"lstm\" is not one of none|ema"},
        {"gma.init=xavier", "key gma.init: \"xavier\" is not one of default|kmeans|orthogonal"},
        {"gma.on_collapse=panic", "key gma.on_collapse: \"panic\" is not one of warn|reinit|stop"},
        {"gma.div_weight=-0.5", "key gma.div_weight: -0.5 is out of range"},
        {"gma.ema_decay=1.5", "key gma.ema_decay: 1.5 is out of range"},
        {"gma.ema_decay=-0.1", "key gma.ema_decay: -0.1 is out of range"},
        {"gma.init=orthogonal", "key gma.init: \"orthogonal\" needs gma.routing \"softmax\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --set %s", tu_path("c.json"), tu_path("bad"), cases[i][0]), 2);
        ck_assert_msg(strstr(g_out, cases[i][1]), "%s: %s", cases[i][0], g_out);
        ck_assert_msg(strchr(g_out, '\n') == g_out + strlen(g_out) - 1, "not one line: %s", g_out);
    }
    ck_assert(!gma_path_exists(tu_path("bad")));
}
END_TEST

START_TEST(test_analyze_tiny_model) {
    tu_write(tu_path("c.json"), COLLAPSE);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=10 --set gma.init_mean_scale=0 "
                      "--set gma.routing=softmax --set gma.init=kmeans --set gma.div_weight=0.01",
                      tu_path("c.json"), tu_path("an")) == 0,
                  "%s", g_out);
    ck_assert_msg(run("cd %s && %s/bin/gmaeval --checkpoint an --data test --analyze-json an.json --dump-responsibilities an.bin",
                      tu_tmpdir(), getenv("PWD")) == 0,
                  "%s", g_out);
    ck_assert_ptr_nonnull(strstr(g_out, "pooled"));
    ck_assert_ptr_nonnull(strstr(g_out, "paper            104 of 128"));
    ck_assert(strstr(g_out, "plots: ") || strstr(g_out, "gnuplot not found: plots skipped"));
    char *js = gma_read_file(tu_path("an.json"), NULL);
    ck_assert_ptr_nonnull(js);
    ck_assert_ptr_nonnull(strstr(js, "\"categories\":\t[\"pad\", \"separator\", \"key\", \"value\"]"));
    double used = atof(strstr(strstr(js, "\"pooled\""), "\"used_components\":") + 18);
    double nmi = atof(strstr(strstr(js, "\"pooled\""), "\"nmi\":") + 6);
    double ent = atof(strstr(strstr(js, "\"pooled\""), "\"usage_entropy\":") + 16);
    printf("analysis of the tiny model: used %.1f of 8, usage entropy %.3f, NMI %.3f\n", used, ent, nmi);
    ck_assert(used >= 1 && used <= 8 && ent >= 0 && ent <= 1 && nmi >= 0 && nmi <= 1);
    long tokens = atol(strstr(js, "\"tokens\":") + 9);
    ck_assert_int_gt(tokens, 0);
    free(js);
    /* the dump: header, layer list, tokens, then float32 [L,W,H,N,Kc] summing to one per row */
    size_t len;
    char *b = gma_read_file(tu_path("an.bin"), &len);
    ck_assert(b && memcmp(b, "GMARESP1", 8) == 0);
    uint32_t h6[6];
    memcpy(h6, b + 8, sizeof h6);
    ck_assert(h6[0] == 1 && h6[1] == 1 && h6[3] == 2 && h6[4] == 16 && h6[5] == 8);
    size_t off = 32 + 4 * h6[1] + 4ul * h6[2] * h6[4];
    ck_assert_int_eq(len, off + 4ul * h6[1] * h6[2] * h6[3] * h6[4] * h6[5]);
    float row[8];
    memcpy(row, b + off, sizeof row);
    double s = 0;
    for (int k = 0; k < 8; k++) s += row[k];
    ck_assert(fabs(s - 1) < 1e-5);
    free(b);
    /* a model without a GMA layer */
    ck_assert(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=2 --set model.mixer=sdpa", tu_path("c.json"),
                  tu_path("sd")) == 0);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --analyze", tu_path("sd")), 2);
    ck_assert_msg(strstr(g_out, "gmaeval: --analyze: the model has no gma layer"), "%s", g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("GMA routing health");
    TCase *tc = tcase_create("units");
    tcase_add_test(tc, test_resp_sum_one);
    tcase_add_test(tc, test_analysis_json_utf8);
    tcase_add_test(tc, test_orthogonal_rows);
    tcase_add_test(tc, test_ema_update_by_hand);
    tcase_add_test(tc, test_kmeans_reduces);
    tcase_add_test(tc, test_nmi_tables);
    tcase_add_test(tc, test_token_categories);
    tcase_add_test(tc, test_collapse_reinit_unit);
    tcase_add_test(tc, test_reseed_rows);
    tcase_add_test(tc, test_frozen_routing_kept);
    tcase_add_test(tc, test_reinit_gather_error);
    tcase_add_test(tc, test_auto_forwards_hooks);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("end to end");
    tcase_set_timeout(te, 120);
    tcase_add_test(te, test_collapse_end_to_end);
    tcase_add_test(te, test_auto_end_to_end);
    tcase_add_test(te, test_bad_input);
    tcase_add_test(te, test_analyze_tiny_model);
    suite_add_tcase(s, te);
    return s;
}

GMA_TEST_MAIN()
