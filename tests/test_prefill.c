/* test_prefill.c: model_prefill, the prompt as one forward that fills every layer's decode
 * state (MixerVT.prefill), against feeding the prompt one decode step a token: the logits of
 * the prompt's last position and of every decoded position after it agree within 1e-5 of
 * the largest logit, and greedy decoding draws the same tokens, for every mixer with a
 * decode step, at prompts longer than one chunk of the linear core and of mamba's and gdn's
 * recurrences and shorter than the convolution windows of mamba, gdn and baseconv (and than
 * model.short_conv's, whose cases run every mixer that takes it); the step-a-row fallback of a mixer without the
 * hook; several sequences from one prefill; the refusals; gmasample prefilled, with
 * --no-prefill and with --no-cache drawing the same samples (run from the repository root). */
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
    {"gma", "gma.shared_components=true"},
    {"linear", ""},
    {"sdpa", ""},
    {"sdpa_ref", ""},
    {"gma", "model.mixer=sdpa,gma;model.pos=none"},
    {"gma", "model.mixer=mamba,gma"},
    {"auto", "model.auto_threshold=100"},
    {"auto", "model.auto_threshold=1"},
    {"performer", ""},
    {"performer", "performer.kernel=relu"},
    {"mamba", ""},
    {"mamba", "mamba.d_conv=1"},
    {"gma", "model.short_conv=4"},
    {"gma", "model.short_conv=4;gma.memory=ema"},
    {"gma", "model.short_conv=2;gma.routing=softmax"},
    {"linear", "model.short_conv=4"},
    {"sdpa", "model.short_conv=4"},
    {"sdpa_ref", "model.short_conv=3"},
    {"performer", "model.short_conv=4"},
    {"performer", "model.short_conv=4;performer.kernel=relu"},
    {"gma", "model.mixer=sdpa,gma;model.short_conv=4"},
    {"gma", "model.mixer=sdpa,linear;model.short_conv=1"},
    {"gma", "model.mixer=baseconv,gma;model.pos=none"},
    {"baseconv", "baseconv.act=true;model.pos=none"},
    {"baseconv", "baseconv.kernel=1"},
    {"gma", "model.mixer=baseconv,sdpa;baseconv.kernel=30"}, /* a window longer than every prompt */
    {"gdn", "gdn.chunk=4"},
    {"gdn", "gdn.delta=false;gdn.chunk=5"},
    {"gdn", "gdn.decay=false;gdn.expand_v=2"},
    {"gdn", "gdn.delta=false;gdn.decay=false"},
    {"gdn", "gdn.conv_size=1"},
    {"gdn", "model.mixer=gdn,sdpa"},
    {"sdpa", "sdpa.window=4"},                          /* a ring of 4 rows: prompts past it wrap */
    {"sdpa", "sdpa.window=3;model.short_conv=4"}, /* the ring and the convolutions' rows in one state */
    {"gma", "model.mixer=sdpa,gma;sdpa.window=1"},      /* a ring of one row */
    {"gma", "model.mixer=sdpa,gma;model.norm=rmsnorm;model.mlp_act=swiglu;model.tie_embeddings=false"}, /* recipe */
    {"gma", "gma.write=delta"},
    {"gma", "gma.write=delta;gma.routing=softmax;model.short_conv=4"},
    {"gma", "model.mixer=baseconv,gma;model.pos=none;gma.write=delta;gma.chunk=5"},
    {"gma", "gma.write=delta;gma.slot_decay=true;model.short_conv=3"},
    {"gma", "gma.topk=2"}, /* sparse routing: no noise outside training */
    {"gma", "gma.topk=1;gma.routing=softmax;model.short_conv=4"},
    {"gma", "gma.topk=2;gma.memory=ema"},
    {"gma", "gma.topk=2;gma.write=delta;gma.n_components=5;gma.chunk=5"},
    {"sdpa", "model.pos=rope"}, /* rotary positions: the cache holds turned keys */
    {"sdpa_ref", "model.pos=rope;model.short_conv=3"},
    {"sdpa", "model.pos=rope;sdpa.window=4"},
    {"sdpa", "model.pos=rope;sdpa.window=3;model.short_conv=4"},
    {"gma", "model.mixer=sdpa,gma;model.pos=rope;model.short_conv=4"}, /* gma takes no positions */
    {"gma", "gma.window=4"},                            /* GMA and a ring of 4 rows: prompts past it wrap */
    {"gma", "gma.window=3;model.short_conv=4;gma.routing=softmax"}, /* the core, the convolutions and the ring */
    {"gma", "model.mixer=sdpa,gma;gma.window=1"},       /* a ring of one row */
};
enum { W = 24, V = 23, NEW = 6 };

static void tiny_model(Model *m, size_t c, uint64_t seed) {
    Config cfg = tu_tiny_config(g_cases[c][0]);
    cfg.model.vocab_size = V;
    cfg.model.max_seq_len = cfg.train.seq_len = W;
    ck_assert(cfg_set(&cfg, "mamba.chunk=4") == 0); /* gma.chunk is 3 (tu_tiny_config) */
    if (g_cases[c][1][0]) tu_apply_sets(&cfg, g_cases[c][1]);
    else ck_assert_int_eq(cfg_validate(&cfg), 0);
    ck_assert_int_eq(model_build(m, &cfg), 0);
    model_alloc(m, 1, W);
    model_init_params(m, seed);
}

static double rel_err(const real *a, const real *b, int n) {
    double mx = 0, e = 0;
    for (int i = 0; i < n; i++) mx = fmax(mx, fabs(b[i])), e = fmax(e, fabs(a[i] - b[i]));
    return e / fmax(mx, 1e-6);
}
static int argmax(const real *x, int n) {
    int k = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[k]) k = i;
    return k;
}

/* the logits [NEW + 1][B][V] of the prompt's last position and of NEW greedy tokens after
 * it (sequence b takes its argmax + b, so the B sequences part), the prompt prefilled or
 * fed a step a token; toks gets the tokens drawn */
static void feed(Model *m, const int32_t *p, int np, int B, int prefill, real *logits, int32_t *toks) {
    DecodeState ds;
    ck_assert_int_eq(model_decode_begin_batch(m, &ds, B), 0);
    if (prefill) ck_assert_msg(model_prefill(m, &ds, p, np) == 0, "%s", gma_error());
    else
        for (int i = 0; i < np; i++) {
            int32_t col[4];
            for (int b = 0; b < B; b++) col[b] = p[i];
            ck_assert_int_eq(model_decode_step_batch(m, &ds, col), 0);
        }
    ck_assert_int_eq(ds.pos, np);
    for (int t = 0; t <= NEW; t++) {
        real *row = logits + (size_t)t * B * V;
        g_ops->to_host(row, m->logits, sizeof(real) * (size_t)B * V);
        if (t == NEW) break;
        int32_t col[4];
        for (int b = 0; b < B; b++) col[b] = toks[t * B + b] = (int32_t)((argmax(row + b * V, V) + b) % V);
        ck_assert_int_eq(model_decode_step_batch(m, &ds, col), 0);
    }
    model_decode_end(m, &ds);
}

/* every mixer: prefill against steps, at prompts of 2 (inside mamba's window of 3 earlier
 * inputs), 13 (several chunks, not a multiple) and 17 tokens, one and three sequences */
START_TEST(test_prefill_matches_steps) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    const int lens[] = {2, 13, 17}, Bs[] = {1, 3};
    for (size_t c = 0; c < sizeof g_cases / sizeof g_cases[0]; c++) {
        Model m;
        tiny_model(&m, c, 300 + c);
        ck_assert_msg(model_can_decode(&m), "%s %s: cannot decode", g_cases[c][0], g_cases[c][1]);
        Rng rng;
        rng_seed(&rng, 17 + c);
        int32_t p[W];
        for (int i = 0; i < W; i++) p[i] = (int32_t)rng_below(&rng, V);
        double worst = 0;
        for (int li = 0; li < 3; li++)
            for (int bi = 0; bi < 2; bi++) {
                int np = lens[li], B = Bs[bi];
                static real a[(NEW + 1) * 3 * V], b[(NEW + 1) * 3 * V];
                int32_t ta[NEW * 3], tb[NEW * 3];
                feed(&m, p, np, B, 0, a, ta);
                feed(&m, p, np, B, 1, b, tb);
                for (int t = 0; t <= NEW; t++)
                    for (int q = 0; q < B; q++) {
                        double e = rel_err(b + ((size_t)t * B + q) * V, a + ((size_t)t * B + q) * V, V);
                        ck_assert_msg(e < 1e-5, "%s %s: prompt %d, sequence %d of %d, position %d: prefill's logits differ "
                                      "by %.2e of the largest", g_cases[c][0], g_cases[c][1], np, q, B, np - 1 + t, e);
                        worst = fmax(worst, e);
                    }
                ck_assert_msg(memcmp(ta, tb, sizeof(int32_t) * NEW * B) == 0, "%s %s: prompt %d: other tokens",
                              g_cases[c][0], g_cases[c][1], np);
            }
        printf("prefill %-9s %-36s max rel err %.1e (prompts 2, 13, 17; %d new)\n", g_cases[c][0], g_cases[c][1], worst,
               NEW);
        model_free(&m);
    }
}
END_TEST

/* a mixer without the hook: model_prefill steps its decode over the layer's input rows */
START_TEST(test_prefill_fallback) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    for (size_t c = 0; c < sizeof g_cases / sizeof g_cases[0]; c++) {
        if (strcmp(g_cases[c][0], "linear") && strcmp(g_cases[c][0], "mamba") && strcmp(g_cases[c][0], "gdn")) continue;
        Model m;
        tiny_model(&m, c, 40 + c);
        MixerVT *vt = xmalloc(sizeof *vt);
        const MixerVT *was = m.blocks[0].mixer->vt;
        *vt = *was;
        vt->prefill = NULL;
        m.blocks[0].mixer->vt = vt;
        int32_t p[W];
        for (int i = 0; i < W; i++) p[i] = (int32_t)((i * 7 + 3) % V);
        static real a[(NEW + 1) * V], b[(NEW + 1) * V];
        int32_t ta[NEW], tb[NEW];
        feed(&m, p, 11, 1, 0, a, ta);
        feed(&m, p, 11, 1, 1, b, tb);
        double e = rel_err(b, a, (NEW + 1) * V);
        ck_assert_msg(e < 1e-5, "%s without its hook: %.2e", g_cases[c][0], e);
        m.blocks[0].mixer->vt = was;
        free(vt);
        model_free(&m);
    }
}
END_TEST

typedef struct Seqs { int32_t ids[3][NEW]; int n[3]; } Seqs;
static int keep_b(void *ctx, int b, int32_t t) {
    Seqs *s = ctx;
    s->ids[b][s->n[b]++] = t;
    return 0;
}

/* model_generate_batch prefills: the same samples as with the prompt fed a step a token */
START_TEST(test_generate_prefilled) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    Model m;
    tiny_model(&m, 0, 77);
    int32_t p[15];
    for (int i = 0; i < 15; i++) p[i] = (int32_t)((i * 5 + 1) % V);
    Seqs s[2];
    for (int k = 0; k < 2; k++) {
        memset(&s[k], 0, sizeof s[k]);
        SampleOpts o = {.temperature = 0.8, .top_p = 1, .no_prefill = k};
        Rng rng[3];
        for (int b = 0; b < 3; b++) rng_seed2(&rng[b], 5, (uint64_t)b);
        ck_assert_int_eq(model_generate_batch(&m, p, 15, NEW, 3, &o, rng, keep_b, &s[k]), 0);
    }
    ck_assert(memcmp(s[0].ids, s[1].ids, sizeof s[0].ids) == 0);
    model_free(&m);
}
END_TEST

/* a state past position 0, an empty prompt, one longer than the window, an id outside the
 * vocabulary: refused with a message */
START_TEST(test_prefill_refusals) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    Model m;
    tiny_model(&m, 0, 9);
    int32_t p[W + 1] = {0};
    DecodeState ds;
    ck_assert_int_eq(model_decode_begin(&m, &ds), 0);
    ck_assert_int_ne(model_prefill(&m, &ds, p, 0), 0);
    ck_assert_int_ne(model_prefill(&m, &ds, p, W + 1), 0);
    ck_assert(strstr(gma_error(), "window"));
    p[3] = V;
    ck_assert_int_ne(model_prefill(&m, &ds, p, 5), 0);
    ck_assert(strstr(gma_error(), "position 3"));
    p[3] = 0;
    ck_assert_int_eq(model_decode_step(&m, &ds, 1), 0);
    ck_assert_int_ne(model_prefill(&m, &ds, p, 5), 0);
    ck_assert(strstr(gma_error(), "position 1"));
    model_decode_end(&m, &ds);
    model_free(&m);
}
END_TEST

/* gmasample: a 40-token prompt (more than two chunks of the quickstart's gma.chunk 16)
 * prefilled, fed a step a token (--no-prefill) and a full forward per token (--no-cache)
 * draw the same samples; the timing line and the JSON give the time to the first token */
START_TEST(test_gmasample_prefill) {
    char dir[1100], js[3][1200];
    snprintf(dir, sizeof dir, "%s/run", tu_tmpdir());
    ck_assert_msg(run("bin/gmatrain --config configs/quickstart.json --out %s --quiet --threads 1 --set train.steps=2 "
                      "--set train.eval_every=0 --set data.recall_valid=4 --set data.recall_test=4", dir) == 0, "%s", g_out);
    char ids[400] = "";
    for (int i = 0; i < 40; i++) snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%d ", 1 + (i * 5) % 9);
    const char *flags[] = {"", "--no-prefill", "--no-cache"};
    char *samples[3];
    for (int k = 0; k < 3; k++) {
        snprintf(js[k], sizeof js[k], "%s/s%d.json", tu_tmpdir(), k);
        ck_assert_msg(run("bin/gmasample --checkpoint %s --prompt-ids '%s' --tokens 12 --temperature 1.5 --samples 2 "
                          "--seed 3 --threads 1 %s --json %s", dir, ids, flags[k], js[k]) == 0, "%s", g_out);
        ck_assert_msg(strstr(g_out, "the first after "), "%s", g_out);
        char *x = gma_read_file(js[k], NULL);
        ck_assert_ptr_nonnull(x);
        cJSON *j = cJSON_Parse(x);
        ck_assert(cJSON_GetNumberValue(cJSON_GetObjectItem(j, "first_token_s")) > 0);
        samples[k] = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "samples"));
        cJSON_Delete(j);
        free(x);
    }
    ck_assert_str_eq(samples[0], samples[1]);
    ck_assert_str_eq(samples[0], samples[2]);
    for (int k = 0; k < 3; k++) free(samples[k]);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("prefill");
    TCase *tc = tcase_create("prefill");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_prefill_matches_steps);
    tcase_add_test(tc, test_prefill_fallback);
    tcase_add_test(tc, test_generate_prefilled);
    tcase_add_test(tc, test_prefill_refusals);
    tcase_add_test(tc, test_gmasample_prefill);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
