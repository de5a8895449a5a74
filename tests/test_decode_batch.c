/* test_decode_batch.c: incremental decoding of B sequences at once (model_decode_step_batch)
 * gives each sequence the logits of its own one-sequence decode, model_generate_batch draws
 * the tokens of M separate model_generate calls (inside the window and past it, with and
 * without a decode step), and gmasample --samples M, which decodes its samples as one
 * batch, prints the samples of a full forward per token (--no-cache). Run from the
 * repository root (uses bin/). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/generate.h"
#include "ops/ops.h"
#include "testutil.h"

static const char *g_cases[][2] = {
    {"gma", ""},
    {"gma", "gma.routing=softmax"},
    {"gma", "gma.memory=ema"},
    {"linear", ""},
    {"sdpa", ""},
    {"sdpa_ref", ""},
    {"gma", "model.mixer=sdpa,gma;model.pos=none"},
    {"auto", "model.auto_threshold=100"},
    {"performer", ""},
    {"performer", "performer.kernel=relu"},
    {"mamba", ""},
    {"gma", "model.short_conv=4"},
    {"gma", "model.short_conv=4;gma.memory=ema"},
    {"linear", "model.short_conv=4"},
    {"sdpa", "model.short_conv=4"},
    {"sdpa_ref", "model.short_conv=2"},
    {"performer", "model.short_conv=4"},
    {"performer", "model.short_conv=3;performer.kernel=relu"},
    {"gma", "model.mixer=baseconv,gma;model.pos=none"},
    {"baseconv", "baseconv.act=true;baseconv.kernel=4"},
    {"gdn", ""},
    {"gdn", "gdn.delta=false;gdn.expand_v=2"},
    {"gdn", "gdn.decay=false"},
    {"sdpa", "sdpa.window=3"}, /* a ring of 3 rows, 10 positions */
    {"sdpa", "sdpa.window=3;model.short_conv=4"}, /* the ring and the convolutions' rows in one state */
    {"gma", "model.mixer=sdpa,gma;model.norm=rmsnorm;model.mlp_act=swiglu;model.tie_embeddings=false"}, /* recipe */
    {"gma", "gma.write=delta"},
    {"gma", "gma.write=delta;model.short_conv=4;gma.n_components=5"},
    {"gma", "gma.write=delta;gma.slot_decay=true"},
    {"gma", "gma.topk=2"}, /* sparse routing */
    {"gma", "gma.topk=2;gma.write=delta;gma.n_components=5;model.short_conv=4"},
    {"sdpa", "model.pos=rope"}, /* rotary positions */
    {"sdpa_ref", "model.pos=rope;model.short_conv=2"},
    {"sdpa", "model.pos=rope;sdpa.window=3;model.short_conv=4"},
    {"gma", "model.mixer=sdpa,gma;model.pos=rope"},
    {"gma", "gma.window=3"}, /* GMA and a ring of 3 rows, 10 positions */
    {"gma", "gma.window=2;model.short_conv=4;gma.routing=softmax"},
};

static void tiny_model(Model *m, size_t c, int W, uint64_t seed) {
    Config cfg = tu_tiny_config(g_cases[c][0]);
    cfg.model.vocab_size = 23;
    cfg.model.max_seq_len = cfg.train.seq_len = W;
    if (g_cases[c][1][0]) tu_apply_sets(&cfg, g_cases[c][1]);
    else ck_assert_int_eq(cfg_validate(&cfg), 0);
    ck_assert_int_eq(model_build(m, &cfg), 0);
    model_alloc(m, 1, W);
    model_init_params(m, seed);
}

enum { T = 10, B = 3, V = 23 };

/* the worst relative difference between the logits of B sequences of tokens drawn from
 * seed, decoded in one state, and those of each decoded alone; ds is left open */
static double batch_vs_single(Model *m, DecodeState *ds, uint64_t seed) {
    int32_t tok[B][T];
    Rng rng;
    rng_seed(&rng, seed);
    for (int b = 0; b < B; b++)
        for (int i = 0; i < T; i++) tok[b][i] = (int32_t)rng_below(&rng, V);
    static real single[B][T][V];
    for (int b = 0; b < B; b++) {
        DecodeState d1;
        ck_assert_int_eq(model_decode_begin(m, &d1), 0);
        for (int i = 0; i < T; i++) {
            ck_assert_int_eq(model_decode_step(m, &d1, tok[b][i]), 0);
            g_ops->to_host(single[b][i], m->logits, sizeof(real) * V);
        }
        model_decode_end(m, &d1);
    }
    ck_assert_int_eq(model_decode_begin_batch(m, ds, B), 0);
    ck_assert_int_ne(model_decode_step(m, ds, 0), 0); /* one token for three sequences */
    double worst = 0;
    for (int i = 0; i < T; i++) {
        int32_t col[B];
        for (int b = 0; b < B; b++) col[b] = tok[b][i];
        ck_assert_int_eq(model_decode_step_batch(m, ds, col), 0);
        real got[B * V];
        g_ops->to_host(got, m->logits, sizeof got);
        for (int b = 0; b < B; b++) {
            double mx = 0, e = 0;
            for (int v = 0; v < V; v++)
                mx = fmax(mx, fabs(single[b][i][v])), e = fmax(e, fabs(got[b * V + v] - single[b][i][v]));
            worst = fmax(worst, e / fmax(mx, 1e-6));
        }
    }
    return worst;
}

/* 3 sequences of different tokens in one state against each decoded alone */
START_TEST(test_batch_step_matches_single) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    for (size_t c = 0; c < sizeof g_cases / sizeof g_cases[0]; c++) {
        Model m;
        tiny_model(&m, c, T, 200 + c);
        ck_assert_msg(model_can_decode(&m), "%s %s: cannot decode", g_cases[c][0], g_cases[c][1]);
        DecodeState ds;
        double worst = batch_vs_single(&m, &ds, 9 + c);
        int32_t bad[B] = {0, 23, 0};
        ds.pos = 0;
        ck_assert_int_ne(model_decode_step_batch(&m, &ds, bad), 0); /* an id outside the vocabulary */
        model_decode_end(&m, &ds);
        ck_assert_msg(worst < 1e-5, "%s %s: batched logits differ by %.2e", g_cases[c][0], g_cases[c][1], worst);
        printf("batch decode %-7s %-36s max rel err %.1e (3 sequences, %d positions)\n", g_cases[c][0], g_cases[c][1],
               worst, T);
        /* more sequences than the rows the model is allocated for (1 x T) */
        ck_assert_int_ne(model_decode_begin_batch(&m, &ds, T + 1), 0);
        ck_assert(strstr(gma_error(), "allocated for"));
        model_free(&m);
    }
}
END_TEST

/* performer (FAVOR+) with key weights x12: the sequences' running key maxima lie up to
 * about 36 apart (seen with a print), so the batched core step scales query features by
 * as little as exp(-20) and some steps take the fallback of a core step a sequence; each
 * sequence still gets its own logits (without the query scaling they differ by 0.7) */
START_TEST(test_performer_far_maxima) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    size_t c = 8;
    ck_assert_str_eq(g_cases[c][0], "performer");
    ck_assert_str_eq(g_cases[c][1], "");
    Model m;
    tiny_model(&m, c, T, 77);
    for (int l = 0; l < m.L; l++) {
        char name[64];
        snprintf(name, sizeof name, "blocks.%d.mixer.k.weight", l);
        int k = pt_find(&m.pt, name);
        ck_assert_int_ge(k, 0);
        real *w = PT_PTR(m.params, &m.pt, k);
        for (size_t i = 0; i < m.pt.t[k].numel; i++) w[i] *= 12;
    }
    DecodeState ds;
    double worst = batch_vs_single(&m, &ds, 5);
    model_decode_end(&m, &ds);
    ck_assert_msg(worst < 1e-5, "performer, keys x12: batched logits differ by %.2e", worst);
    printf("batch decode performer, key weights x12: max rel err %.1e\n", worst);
    model_free(&m);
}
END_TEST

/* sliding-window attention (a ring of W key/value rows): sdpa.window, and the window inside a
 * gma layer (gma.window, beside its GMA path); each decoded token gets the logits of a full
 * forward over the tokens so far, at positions past W (the ring wraps several times), for
 * W = 1, 3 and one past the window of 12 (no wrap), and W = 3 with the block recipe
 * (RMSNorm, SwiGLU, untied head); the state holds min(W, 12) rows, not 12 */
static const struct {
    const char *mixer;
    int window;
    const char *more;
} g_windows[] = {
    {"sdpa", 1, ""},
    {"sdpa", 3, ""},
    {"sdpa", 13, ""},
    {"sdpa", 3, ";model.norm=rmsnorm;model.mlp_act=swiglu;model.tie_embeddings=false"},
    {"gma", 1, ""},
    {"gma", 3, ";model.short_conv=4"},
    {"gma", 13, ""},
    {"gma", 3, ";model.mixer=sdpa,gma;gma.routing=softmax;model.norm=rmsnorm;model.mlp_act=swiglu"},
};
enum { N_WINDOWS = sizeof g_windows / sizeof g_windows[0] };

/* model with the w-th window (window W, or 0: the same model without) */
static void window_model(Model *m, int w, int W, int N, uint64_t seed) {
    Config cfg = tu_tiny_config(g_windows[w].mixer);
    cfg.model.vocab_size = V;
    cfg.model.max_seq_len = cfg.train.seq_len = N;
    char set[200];
    snprintf(set, sizeof set, "%s.window=%d%s", g_windows[w].mixer, W, g_windows[w].more);
    tu_apply_sets(&cfg, set);
    ck_assert_int_eq(model_build(m, &cfg), 0);
    model_alloc(m, 1, N);
    model_init_params(m, seed);
}

START_TEST(test_window_decode_matches_forward) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    enum { N = 12 };
    int w = _i, W = g_windows[w].window;
    Model m;
    window_model(&m, w, W, N, 5 + w);
    int l = m.blocks[0].mixer->vt == mixer_find(g_windows[w].mixer) ? 0 : 1; /* the windowed layer */
    const Mixer *mx = m.blocks[l].mixer;
    size_t ring = attn_decode_state(mx->H, GMA_MIN(W, N), mx->d), rest = attn_proj_state_size(mx);
    if (!strcmp(g_windows[w].mixer, "gma")) rest += linmix_decode_state(mx->H, 3, mx->d); /* gma.n_components 3 */
    ck_assert_uint_eq(mx->vt->decode_state(mx, N), rest + ring);
    int32_t tok[N] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, tgt[N] = {0};
    real full[V], step[V];
    double worst = 0;
    DecodeState ds;
    ck_assert_int_eq(model_decode_begin(&m, &ds), 0);
    for (int n = 1; n <= N; n++) {
        LossStats st;
        ck_assert_int_eq(model_forward(&m, tok, tgt, 1, n, NULL, 0, &st, 0, 0), 0);
        g_ops->to_host(full, m.logits + (size_t)(n - 1) * V, sizeof full);
        ck_assert_int_eq(model_decode_step(&m, &ds, tok[n - 1]), 0);
        g_ops->to_host(step, m.logits, sizeof step);
        double mx = 0, e = 0;
        for (int v = 0; v < V; v++) mx = fmax(mx, fabs((double)full[v])), e = fmax(e, fabs((double)full[v] - step[v]));
        worst = fmax(worst, e / fmax(mx, 1e-6));
    }
    model_decode_end(&m, &ds);
    ck_assert_msg(worst < 1e-5, "%s.window=%d%s: decoded logits differ from the forward's by %.2e", g_windows[w].mixer,
                  W, g_windows[w].more, worst);
    printf("window decode %s.window=%d%-70s vs forward over %d positions: max rel err %.1e\n", g_windows[w].mixer, W,
           g_windows[w].more, N, worst);
    model_free(&m);
    /* the window changes the forward: W = 3 and none (sdpa: full attention; gma: no window
     * path) differ at the last position */
    if (W != 3) return;
    real lg[2][V];
    for (int k = 0; k < 2; k++) {
        window_model(&m, w, k ? W : 0, N, 5);
        LossStats st;
        ck_assert_int_eq(model_forward(&m, tok, tgt, 1, N, NULL, 0, &st, 0, 0), 0);
        g_ops->to_host(lg[k], m.logits + (size_t)(N - 1) * V, sizeof lg[k]);
        model_free(&m);
    }
    double d = 0;
    for (int v = 0; v < V; v++) d = fmax(d, fabs((double)lg[0][v] - lg[1][v]));
    ck_assert_msg(d > 1e-3, "%s.window=3 gave the logits without the window (%.1e)", g_windows[w].mixer, d);
}
END_TEST

typedef struct Seqs { int32_t ids[4][32]; int n[4]; } Seqs;
static int keep_b(void *ctx, int b, int32_t t) {
    Seqs *s = ctx;
    s->ids[b][s->n[b]++] = t;
    return 0;
}
static int keep_1(void *ctx, int32_t t) { return keep_b(ctx, 0, t); }

/* M = 4 sampled continuations at once are the 4 of separate calls, with the same streams */
START_TEST(test_generate_batch_is_separate_runs) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    /* auto with threshold 4 inside the window of 12: no decode step, a forward per token */
    const char *mixers[][2] = {{"gma", ""}, {"mamba", ""}, {"auto", "model.auto_threshold=4"}};
    int news[2] = {7, 14}; /* 3 + 7 fits the window of 12, 3 + 14 slides past it */
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 2; k++) {
            Config cfg = tu_tiny_config(mixers[c][0]);
            cfg.model.vocab_size = 23;
            cfg.model.max_seq_len = cfg.train.seq_len = 12;
            cfg.model.init_std = 1.0; /* spread logits: the draws differ between streams */
            if (mixers[c][1][0]) tu_apply_sets(&cfg, mixers[c][1]);
            else ck_assert_int_eq(cfg_validate(&cfg), 0);
            Model m;
            ck_assert_int_eq(model_build(&m, &cfg), 0);
            model_alloc(&m, 1, 12);
            model_init_params(&m, 31 + c);
            int32_t prompt[3] = {4, 17, 2};
            SampleOpts so = {.temperature = 1.0, .top_k = 0, .top_p = 0.95};
            Seqs one = {0}, all = {0};
            for (int b = 0; b < 4; b++) {
                Rng r;
                rng_seed2(&r, 77, (uint64_t)b);
                Seqs s = {0};
                ck_assert_int_eq(model_generate(&m, prompt, 3, news[k], &so, &r, keep_1, &s), 0);
                memcpy(one.ids[b], s.ids[0], sizeof s.ids[0]);
                one.n[b] = s.n[0];
            }
            Rng rs[4];
            for (int b = 0; b < 4; b++) rng_seed2(&rs[b], 77, (uint64_t)b);
            ck_assert_int_eq(model_generate_batch(&m, prompt, 3, news[k], 4, &so, rs, keep_b, &all), 0);
            int differ = 0;
            for (int b = 0; b < 4; b++) {
                ck_assert_int_eq(all.n[b], news[k]);
                ck_assert_msg(!memcmp(all.ids[b], one.ids[b], sizeof(int32_t) * (size_t)news[k]),
                              "%s, %d new: sequence %d differs from its separate run", mixers[c][0], news[k], b);
                differ += memcmp(all.ids[b], all.ids[0], sizeof(int32_t) * (size_t)news[k]) != 0;
            }
            ck_assert_msg(differ > 0, "%s: the 4 streams drew the same tokens", mixers[c][0]);
            model_free(&m);
        }
}
END_TEST

/* gmasample --samples 3 (one batch of incremental steps) prints the samples of a full
 * forward per token, sample by sample */
START_TEST(test_gmasample_batch) {
    char run_dir[1100], j1[1100], j2[1100];
    snprintf(run_dir, sizeof run_dir, "%s/run", tu_tmpdir());
    ck_assert_msg(run("bin/gmatrain --config configs/quickstart.json --out %s --quiet --threads 1 --set train.steps=2 "
                      "--set train.eval_every=0 --set data.recall_valid=4 --set data.recall_test=4",
                      run_dir) == 0,
                  "%s", g_out);
    snprintf(j1, sizeof j1, "%s/b.json", tu_tmpdir());
    snprintf(j2, sizeof j2, "%s/f.json", tu_tmpdir());
    const char *a = "--prompt-ids '3 1 4' --tokens 9 --temperature 2 --samples 3 --seed 4 --threads 1";
    ck_assert_msg(run("bin/gmasample --checkpoint %s %s --json %s", run_dir, a, j1) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "incremental decoding"), "%s", g_out);
    char batch_out[65536];
    snprintf(batch_out, sizeof batch_out, "%s", g_out);
    ck_assert_msg(run("bin/gmasample --checkpoint %s %s --no-cache --json %s", run_dir, a, j2) == 0, "%s", g_out);
    char *x = gma_read_file(j1, NULL), *y = gma_read_file(j2, NULL);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(y);
    cJSON *jx = cJSON_Parse(x), *jy = cJSON_Parse(y);
    char *sx = cJSON_PrintUnformatted(cJSON_GetObjectItem(jx, "samples"));
    char *sy = cJSON_PrintUnformatted(cJSON_GetObjectItem(jy, "samples"));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(jx, "samples")), 3);
    ck_assert_str_eq(sx, sy);
    /* the printed samples: prompt and continuation of each, separated, in order */
    char *ids0 = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(jx, "samples"), 0), "ids"));
    ck_assert_msg(strstr(batch_out, "3 1 4 ") == batch_out || strstr(batch_out, "\n3 1 4 "), "%s", batch_out);
    int seps = 0;
    for (const char *p = batch_out; (p = strstr(p, "\n----\n")); p++) seps++;
    ck_assert_int_eq(seps, 2);
    printf("gmasample --samples 3 batched = --no-cache: %s (sample 0 ids %s)\n", sx, ids0);
    free(ids0), free(sx), free(sy);
    cJSON_Delete(jx), cJSON_Delete(jy);
    free(x), free(y);
}
END_TEST

/* gmabench decode: a row per mixer and M with tokens/s, the limit measured on the step's
 * weight products and its decode-state read, and their ratio (values not asserted:
 * timings); the state bytes are: sdpa's key/value rows (and scores) at the mean context
 * n = 8 + 8/2, 2 H n d + H n reals a layer and sequence; the fraction of the step outside
 * those products at M = 1 only; bad --samples refused */
START_TEST(test_gmabench_decode_rows) {
    char js[1100];
    snprintf(js, sizeof js, "%s/bench.json", tu_tmpdir());
    ck_assert_msg(run("bin/gmabench decode --mixers gma,mamba,sdpa --L 1 --D 16 --H 2 --V 64 --T 16 --Kc 4 --samples 1,3 "
                      "--repeat 1 --threads 1 --json %s",
                      js) == 0,
                  "%s", g_out);
    ck_assert_msg(strstr(g_out, "limit tok/s") && strstr(g_out, "ratio") && strstr(g_out, "outside"), "%s", g_out);
    char *x = gma_read_file(js, NULL);
    ck_assert_ptr_nonnull(x);
    cJSON *j = cJSON_Parse(x), *rows = cJSON_GetObjectItem(j, "decode");
    ck_assert_int_eq(cJSON_GetArraySize(rows), 6);
    for (int i = 0; i < 6; i++) {
        cJSON *r = cJSON_GetArrayItem(rows, i);
        ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "samples")), i % 2 ? 3 : 1);
        const char *keys[] = {"tokens_per_s", "limit_tokens_per_s", "ratio_to_limit"};
        for (int k = 0; k < 3; k++)
            ck_assert_msg(cJSON_GetNumberValue(cJSON_GetObjectItem(r, keys[k])) > 0, "row %d lacks %s", i, keys[k]);
        double sb = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "state_bytes_per_step"));
        int M = i % 2 ? 3 : 1, n = 12;
        /* the share of the step outside its weight products: measured at M = 1 only */
        cJSON *out = cJSON_GetObjectItem(r, "step_outside_weight_products");
        if (M == 1) {
            ck_assert_msg(cJSON_IsNumber(out), "row %d lacks step_outside_weight_products", i);
            ck_assert_msg(out->valuedouble >= 0 && out->valuedouble <= 1, "row %d: outside %g", i, out->valuedouble);
        } else
            ck_assert_ptr_null(out);
        if (i >= 4) ck_assert_int_eq((long)sb, (long)M * (2 * 2 * n * 8 + 2 * n) * (long)sizeof(real));
        else ck_assert_msg(sb > 0, "row %d: state bytes %g", i, sb);
    }
    cJSON_Delete(j);
    free(x);
    ck_assert_int_eq(run("bin/gmabench decode --samples 0"), 2);
    ck_assert_msg(strstr(g_out, "--samples"), "%s", g_out);
}
END_TEST

/* The GMA routing op caches its per-parameter-set preparation (decoding routes one token at
 * a time): an in-place change of any single routing parameter must change the routing of the
 * next call, restoring it must give back the first routing bit for bit, and a second
 * parameter set routed in between must not disturb either. */
static void route(real *g, const real *x, const real *mu, const real *var, const real *pr, int H, int d, int Kc) {
    g_ops->gma_route_forward(g, x, mu, var, pr, 1, H, 3, d, Kc, 0.8f, 1e-4f, 0);
}
START_TEST(test_route_cache_sees_in_place_changes) {
    enum { H = 2, d = 8, Kc = 5, N = 3 };
    size_t nk = (size_t)H * Kc * d, ng = (size_t)H * N * Kc;
    real x[H * N * d], mu[H * Kc * d], var[H * Kc * d], pr[H * Kc], mu2[H * Kc * d], g0[H * N * Kc], g1[H * N * Kc],
        g2[H * N * Kc];
    Rng rng;
    rng_seed(&rng, 11);
    for (size_t i = 0; i < (size_t)H * N * d; i++) x[i] = (real)rng_normal(&rng);
    for (size_t i = 0; i < nk; i++) mu[i] = (real)rng_normal(&rng), var[i] = (real)(0.3 * rng_normal(&rng));
    for (size_t i = 0; i < nk; i++) mu2[i] = mu[i] + 0.5f;
    for (int i = 0; i < H * Kc; i++) pr[i] = (real)(0.2 * rng_normal(&rng));
    route(g0, x, mu, var, pr, H, d, Kc);
    real *ps[3] = {mu, var, pr};
    size_t lens[3] = {nk, nk, (size_t)H * Kc};
    const char *names[3] = {"mu", "var_raw", "prior"};
    for (int p = 0; p < 3; p++)
        for (size_t i = 0; i < lens[p]; i += lens[p] / 4 + 1) {
            real keep = ps[p][i];
            ps[p][i] = keep + 0.25f;
            route(g1, x, mu, var, pr, H, d, Kc);
            ck_assert_msg(memcmp(g1, g0, sizeof g0) != 0, "an in-place change of %s[%zu] left the routing unchanged",
                          names[p], i);
            route(g2, x, mu2, var, pr, H, d, Kc); /* another parameter set in between */
            ps[p][i] = keep;
            route(g1, x, mu, var, pr, H, d, Kc);
            ck_assert_msg(memcmp(g1, g0, sizeof g0) == 0, "restoring %s[%zu] did not restore the routing", names[p], i);
        }
    /* equal contents at another address route alike */
    real *mu3 = xmalloc(sizeof mu);
    memcpy(mu3, mu, sizeof mu);
    route(g1, x, mu3, var, pr, H, d, Kc);
    ck_assert(memcmp(g1, g0, sizeof(real) * ng) == 0);
    free(mu3);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("decode_batch");
    TCase *tc = tcase_create("decode_batch");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_batch_step_matches_single);
    tcase_add_test(tc, test_performer_far_maxima);
    tcase_add_loop_test(tc, test_window_decode_matches_forward, 0, N_WINDOWS);
    tcase_add_test(tc, test_route_cache_sees_in_place_changes);
    tcase_add_test(tc, test_generate_batch_is_separate_runs);
    tcase_add_test(tc, test_gmasample_batch);
    tcase_add_test(tc, test_gmabench_decode_rows);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
