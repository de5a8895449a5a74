/* test_sample.c: sampling (model/generate.h) and bin/gmasample. The sampler's
 * distribution against the exact probabilities (temperature, top-k, top-p), greedy and
 * seeded draws; then a byte-level model trained on a repeating digit corpus continues a
 * prompt the way the corpus goes, generation is the same as one model_forward per token,
 * and bad input gets one line. Run from the repository root (uses bin/). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint.h"
#include "model/generate.h"
#include "ops/ops.h"
#include "testutil.h"

/* frequencies of n draws from logits log(p) under o */
static void draw_freq(const double *p, int V, const SampleOpts *o, int n, double *freq) {
    real logits[8];
    int order[8];
    double prob[8];
    for (int i = 0; i < V; i++) logits[i] = (real)log(p[i]), freq[i] = 0;
    Rng rng;
    rng_seed(&rng, 7);
    for (int k = 0; k < n; k++) freq[sample_token(logits, V, o, &rng, order, prob)] += 1.0 / n;
}

START_TEST(test_sampler_distribution) {
    const double p[4] = {0.4, 0.3, 0.2, 0.1};
    double f[4], want[4];
    const int n = 200000; /* standard error of a frequency <= 0.0011 */
    struct {
        SampleOpts o;
        double w[4];
    } cases[] = {
        {{1, 0, 1, 0, 0, 0}, {0.4, 0.3, 0.2, 0.1}},
        {{0.5, 0, 1, 0, 0, 0}, {0.16 / 0.30, 0.09 / 0.30, 0.04 / 0.30, 0.01 / 0.30}}, /* p^2, renormalised */
        {{1, 2, 1, 0, 0, 0}, {0.4 / 0.7, 0.3 / 0.7, 0, 0}},
        {{1, 0, 0.65, 0, 0, 0}, {0.4 / 0.7, 0.3 / 0.7, 0, 0}},   /* 0.4 < 0.65 <= 0.7: two tokens */
        {{1, 0, 0.75, 0, 0, 0}, {0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9, 0}},
        {{1, 3, 0.5, 0, 0, 0}, {0.4 / 0.7, 0.3 / 0.7, 0, 0}},    /* top-k first, then top-p of what is left */
        {{1, 1, 1, 0, 0, 0}, {1, 0, 0, 0}},
        {{0, 0, 1, 0, 0, 0}, {1, 0, 0, 0}},                      /* greedy */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        draw_freq(p, 4, &cases[c].o, n, f);
        memcpy(want, cases[c].w, sizeof want);
        for (int i = 0; i < 4; i++)
            ck_assert_msg(fabs(f[i] - want[i]) < 0.006 && (want[i] > 0 || f[i] == 0),
                          "case %zu (T %g, k %d, p %g): token %d drawn %.4f, expected %.4f", c, cases[c].o.temperature,
                          cases[c].o.top_k, cases[c].o.top_p, i, f[i], want[i]);
    }
    /* a vocabulary limit: ids at or above it are never drawn, greedy or sampled */
    SampleOpts lim = {1, 0, 1, 0, 2, 0};
    draw_freq(p, 4, &lim, 20000, f);
    ck_assert_msg(f[2] == 0 && f[3] == 0 && fabs(f[0] - 0.4 / 0.7) < 0.02, "limited: %g %g %g %g", f[0], f[1], f[2], f[3]);
    const double q[4] = {0.1, 0.1, 0.1, 0.7};
    SampleOpts glim = {0, 0, 1, 0, 3, 0};
    draw_freq(q, 4, &glim, 10, f);
    ck_assert(f[0] > 0.99); /* greedy among ids 0..2: the first of the tie */
    /* ties: greedy takes the lowest id; the order of equal logits is by id */
    real tie[3] = {1, 2, 2};
    int order[3];
    double prob[3];
    Rng rng;
    rng_seed(&rng, 1);
    SampleOpts g = {0, 0, 1, 0, 0, 0}, k1 = {1, 1, 1, 0, 0, 0};
    ck_assert_int_eq(sample_token(tie, 3, &g, &rng, order, prob), 1);
    ck_assert_int_eq(sample_token(tie, 3, &k1, &rng, order, prob), 1);
}
END_TEST

/* a corpus of "0123456789" lines prepared with the bytes tokenizer, and a 1-layer GMA
 * model trained on it (once per process) */
static const char *trained_run(void) {
    static char run_dir[1100];
    if (run_dir[0]) return run_dir;
    const char *corpus = tu_path("digits");
    char text[12000] = "", p[1100];
    for (int i = 0; i < 1000; i++) strcat(text, (i % 10) == 9 ? "0123456789\n" : "0123456789");
    ck_assert_int_eq(run("mkdir -p %s", corpus), 0);
    for (int s = 0; s < 3; s++) {
        snprintf(p, sizeof p, "%s/%s.txt", corpus, s == 0 ? "train" : s == 1 ? "valid" : "test");
        tu_write(p, text);
    }
    ck_assert_msg(run("bin/gmadata prepare %s --tokenizer bytes --out %s/shards --quiet", corpus, tu_tmpdir()) == 0, "%s", g_out);
    snprintf(run_dir, sizeof run_dir, "%s/run", tu_tmpdir());
    ck_assert_msg(run("bin/gmatrain --config configs/quickstart.json --out %s --quiet --threads 1 --set data.source=shards "
                      "--set data.path=%s/shards --set model.vocab_size=256 --set model.n_layers=1 --set model.max_seq_len=32 "
                      "--set train.seq_len=32 --set train.batch_size=8 --set train.steps=150 --set train.lr=0.01 "
                      "--set train.warmup=10 --set train.eval_every=0 --set train.checkpoint_every=150 "
                      "--set train.sample_every=75 --set train.sample_prompt=3456 --set train.sample_tokens=8",
                      run_dir, tu_tmpdir()) == 0,
                  "%s", g_out);
    return run_dir;
}

START_TEST(test_gmasample_continues_the_pattern) {
    const char *r = trained_run();
    /* greedy: the model has learned the digit cycle */
    ck_assert_msg(run("bin/gmasample --checkpoint %s --prompt 3456 --tokens 12 --temperature 0 2>/dev/null", r) == 0, "%s",
                  g_out);
    ck_assert_msg(strstr(g_out, "3456789012345"), "greedy continuation: %s", g_out);
    /* a sliding window: a prompt longer than max_seq_len (32) still continues */
    char longp[64] = "";
    for (int i = 0; i < 4; i++) strcat(longp, "0123456789");
    ck_assert_msg(run("bin/gmasample --checkpoint %s --prompt %s --tokens 5 --temperature 0 2>/dev/null", r, longp) == 0, "%s",
                  g_out);
    ck_assert_msg(strstr(g_out, "012345678901234"), "long prompt: %s", g_out);
    /* seeded: the same seed gives the same ids, JSON has them; another seed (hot) differs */
    char j1[1100], j2[1100], j3[1100];
    snprintf(j1, sizeof j1, "%s/s1.json", tu_tmpdir());
    snprintf(j2, sizeof j2, "%s/s2.json", tu_tmpdir());
    snprintf(j3, sizeof j3, "%s/s3.json", tu_tmpdir());
    const char *hot = "--prompt 0 --tokens 40 --temperature 3 --samples 2";
    ck_assert_int_eq(run("bin/gmasample --checkpoint %s %s --seed 5 --json %s", r, hot, j1), 0);
    ck_assert_int_eq(run("bin/gmasample --checkpoint %s %s --seed 5 --json %s", r, hot, j2), 0);
    ck_assert_int_eq(run("bin/gmasample --checkpoint %s %s --seed 6 --json %s", r, hot, j3), 0);
    char *a = gma_read_file(j1, NULL), *b = gma_read_file(j2, NULL), *c = gma_read_file(j3, NULL);
    ck_assert_ptr_nonnull(a);
    cJSON *ja = cJSON_Parse(a), *jb = cJSON_Parse(b), *jc = cJSON_Parse(c);
    ck_assert_ptr_nonnull(ja);
    cJSON *sa = cJSON_GetObjectItem(ja, "samples"), *sb = cJSON_GetObjectItem(jb, "samples"), *sc = cJSON_GetObjectItem(jc, "samples");
    ck_assert_int_eq(cJSON_GetArraySize(sa), 2);
    char *ia0 = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetArrayItem(sa, 0), "ids"));
    char *ia1 = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetArrayItem(sa, 1), "ids"));
    char *ib0 = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetArrayItem(sb, 0), "ids"));
    char *ic0 = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetArrayItem(sc, 0), "ids"));
    ck_assert_str_eq(ia0, ib0);
    ck_assert_str_ne(ia0, ia1); /* the second sample has its own stream */
    ck_assert_str_ne(ia0, ic0);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(sa, 0), "ids")), 40);
    ck_assert(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetArrayItem(sa, 0), "text")));
    free(ia0), free(ia1), free(ib0), free(ic0);
    cJSON_Delete(ja), cJSON_Delete(jb), cJSON_Delete(jc);
    free(a), free(b), free(c);
}
END_TEST

static int32_t g_got[64];
static int g_ngot;
static int collect(void *ctx, int32_t t) {
    (void)ctx;
    g_got[g_ngot++] = t;
    return 0;
}

/* model_generate greedy = argmax of model_forward's last logits, token by token, with the
 * window sliding once the sequence passes max_seq_len; the same tokens with the head in
 * chunks of 3 rows (model.head_chunk), whose forward keeps the last chunk's logits */
START_TEST(test_generate_is_forward_per_token) {
    const char *r = trained_run();
    char dir[2048];
    Config cfg;
    ck_assert_int_eq(ckpt_resolve(r, dir, sizeof dir), 0);
    ck_assert_int_eq(ckpt_read_config(dir, &cfg), 0);
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    int32_t first[40];
    for (int chunk = 0; chunk <= 3; chunk += 3) {
        cfg.model.head_chunk = chunk;
        Model m;
        ck_assert_int_eq(model_build(&m, &cfg), 0);
        int W = cfg.model.max_seq_len, V = cfg.model.vocab_size;
        model_alloc(&m, 1, W);
        ck_assert_int_eq(m.head_rows, chunk ? 3 : W);
        ck_assert_int_eq(ckpt_load(&m, NULL, dir), 0);
        int32_t seq[64] = {'7', '1', '7'}, tgt[64];
        for (int i = 0; i < 64; i++) tgt[i] = -1;
        SampleOpts g = {0, 0, 1, 1, 0, 0}; /* the full forward every token: what the loop below checks */
        Rng rng;
        rng_seed(&rng, 1);
        g_ngot = 0;
        ck_assert_int_eq(model_generate(&m, seq, 3, 40, &g, &rng, collect, NULL), 0);
        ck_assert_int_eq(g_ngot, 40);
        for (int t = 3; t < 43; t++) {
            int n = t < W ? t : W;
            LossStats st;
            ck_assert_int_eq(model_forward(&m, seq + t - n, tgt, 1, n, NULL, 0, &st, 0, 0), 0);
            const real *row = m.logits + (size_t)(n - 1 - m.logits_row0) * V;
            int best = 0;
            for (int i = 1; i < V; i++)
                if (row[i] > row[best]) best = i;
            ck_assert_msg(g_got[t - 3] == best, "token %d: generated %d, argmax %d", t, g_got[t - 3], best);
            seq[t] = best;
        }
        if (!chunk) memcpy(first, g_got, sizeof first);
        else ck_assert_msg(!memcmp(first, g_got, sizeof first), "the chunked head generated other tokens");
        model_free(&m);
    }
}
END_TEST

/* train.sample_every: rows in metrics.jsonl at steps 75 and 150, decoded by the data's
 * tokenizer; by step 150 the model continues the digits */
START_TEST(test_samples_while_training) {
    const char *r = trained_run();
    char p[1100], line[4096];
    snprintf(p, sizeof p, "%s/metrics.jsonl", r);
    FILE *f = fopen(p, "r");
    ck_assert_ptr_nonnull(f);
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, "\"event\":\"sample\"")) continue;
        cJSON *j = cJSON_Parse(line);
        ck_assert_int_eq((int)cJSON_GetObjectItem(j, "step")->valuedouble, 75 * (n + 1));
        ck_assert_str_eq(cJSON_GetObjectItem(j, "prompt")->valuestring, "3456");
        const char *t = cJSON_GetObjectItem(j, "text")->valuestring;
        ck_assert_int_eq((int)strlen(t), 8);
        if (n == 1) ck_assert_msg(!strcmp(t, "78901234"), "sample at step 150: %s", t);
        cJSON_Delete(j);
        n++;
    }
    fclose(f);
    ck_assert_int_eq(n, 2);
    /* refused: a text prompt without a tokenizer (the recall task), samples from a classifier
     * or a bidirectional model */
    const char *bad[3][2] = {{"--set train.sample_every=1 --set train.sample_prompt=hello", "train.sample_prompt"},
                             {"--set train.sample_every=1 --set model.causal=0", "train.sample_every"},
                             {"--set train.sample_every=-1", "train.sample_every"}};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(run("bin/gmatrain --config configs/quickstart.json --out %s/bad%d --quiet --set train.steps=2 %s",
                             tu_tmpdir(), i, bad[i][0]),
                         2);
        ck_assert_msg(strstr(g_out, bad[i][1]), "%s: %s", bad[i][0], g_out);
        snprintf(p, sizeof p, "%s/bad%d", tu_tmpdir(), i);
        ck_assert_msg(!gma_path_exists(p), "%s: the run directory was created", bad[i][0]);
    }
}
END_TEST

/* incremental decoding (model_decode_step) gives the logits of one full causal forward,
 * position by position, for every mixer with a decode step (performer: with a running key
 * stabiliser; mamba: the convolution window and the scan state; baseconv: the convolution window;
 * model.short_conv: the convolutions' last inputs; gdn: the windows of its three convolutions and
 * the state S of each variant; gma.write "delta": its slot memory S); auto with its threshold
 * inside the window says it has none */
START_TEST(test_decode_matches_forward) {
    const char *cases[][2] = {
        {"gma", ""},
        {"gma", "gma.routing=softmax"},
        {"gma", "gma.memory=ema"},
        {"gma", "gma.shared_components=true;gma.n_components=5"},
        {"linear", ""},
        {"sdpa", ""},
        {"sdpa_ref", ""},
        {"gma", "model.mixer=sdpa,gma;model.pos=none"},
        {"gma", "model.mlp=false"},
        {"performer", ""},
        {"performer", "performer.features=24"},
        {"performer", "performer.kernel=relu"},
        {"mamba", ""},
        {"mamba", "mamba.d_conv=1;mamba.d_state=3"},
        {"gma", "model.short_conv=4"},
        {"gma", "model.short_conv=4;gma.memory=ema"},
        {"gma", "model.short_conv=1;gma.routing=softmax"},
        {"linear", "model.short_conv=4"},
        {"sdpa", "model.short_conv=4"},
        {"sdpa_ref", "model.short_conv=2"},
        {"performer", "model.short_conv=4"},
        {"performer", "model.short_conv=4;performer.kernel=relu"},
        {"gma", "model.mixer=sdpa,gma;model.short_conv=3"},
        {"gma", "model.mixer=baseconv,gma;model.pos=none"},
        {"baseconv", "baseconv.act=true;baseconv.kernel=5"},
        {"baseconv", "baseconv.kernel=1;model.mlp=false"},
        {"gdn", ""},
        {"gdn", "gdn.delta=false;gdn.expand_v=2"},
        {"gdn", "gdn.decay=false;gdn.conv_size=1"},
        {"gdn", "gdn.delta=false;gdn.decay=false;gdn.chunk=5"},
        {"gma", "gma.write=delta"},
        {"gma", "gma.write=delta;gma.routing=softmax;model.short_conv=4"},
        {"gma", "model.mixer=baseconv,gma;model.pos=none;gma.write=delta;gma.n_components=5"},
        {"gma", "gma.write=delta;gma.slot_decay=true;gma.routing=softmax"},
        {"gma", "gma.topk=2"}, /* sparse routing: evaluation has no noise */
        {"gma", "gma.topk=1;gma.routing=softmax;gma.memory=ema"},
        {"gma", "gma.topk=2;gma.write=delta;gma.n_components=5;model.short_conv=4"},
        {"sdpa", "model.pos=rope"}, /* rotary positions on q and k */
        {"sdpa_ref", "model.pos=rope;model.short_conv=2"},
        {"sdpa", "model.pos=rope;sdpa.window=3"},
        {"sdpa", "model.pos=rope;sdpa.window=2;model.short_conv=4"},
        {"gma", "model.mixer=sdpa,gma;model.pos=rope;model.short_conv=3"},
    };
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        Config cfg = tu_tiny_config(cases[c][0]);
        cfg.model.vocab_size = 23;
        cfg.model.max_seq_len = cfg.train.seq_len = 12;
        if (cases[c][1][0]) tu_apply_sets(&cfg, cases[c][1]);
        else ck_assert_int_eq(cfg_validate(&cfg), 0);
        Model m;
        ck_assert_int_eq(model_build(&m, &cfg), 0);
        int T = 12, V = 23;
        model_alloc(&m, 1, T);
        model_init_params(&m, 100 + c);
        ck_assert_msg(model_can_decode(&m), "%s %s: cannot decode", cases[c][0], cases[c][1]);
        int32_t tok[12], tgt[12];
        Rng rng;
        rng_seed(&rng, 7 + c);
        for (int i = 0; i < T; i++) tok[i] = (int32_t)rng_below(&rng, (uint64_t)V), tgt[i] = -1;
        LossStats st;
        ck_assert_int_eq(model_forward(&m, tok, tgt, 1, T, NULL, 0, &st, 0, 0), 0);
        real full[12 * 23], step[23];
        memcpy(full, m.logits, sizeof full);
        DecodeState ds;
        ck_assert_int_eq(model_decode_begin(&m, &ds), 0);
        double worst = 0;
        for (int i = 0; i < T; i++) {
            ck_assert_int_eq(model_decode_step(&m, &ds, tok[i]), 0);
            memcpy(step, m.logits, sizeof step);
            double mx = 0, e = 0;
            for (int v = 0; v < V; v++) mx = fmax(mx, fabs(full[i * V + v])), e = fmax(e, fabs(step[v] - full[i * V + v]));
            worst = fmax(worst, e / fmax(mx, 1e-6));
        }
        ck_assert_int_ne(model_decode_step(&m, &ds, tok[0]), 0); /* past the window */
        model_decode_end(&m, &ds);
        ck_assert_msg(worst < 1e-5, "%s %s: decode logits differ by %.2e", cases[c][0], cases[c][1], worst);
        printf("decode %-8s %-44s max rel err %.1e over %d positions\n", cases[c][0], cases[c][1], worst, T);
        model_free(&m);
    }
    /* auto with its threshold inside the window has no decode step */
    Config cfg = tu_tiny_config("auto");
    tu_apply_sets(&cfg, "model.auto_threshold=4");
    Model m;
    ck_assert_int_eq(model_build(&m, &cfg), 0);
    model_alloc(&m, 1, 8);
    ck_assert(!model_can_decode(&m));
    DecodeState ds;
    ck_assert_int_ne(model_decode_begin(&m, &ds), 0);
    model_free(&m);
}
END_TEST

START_TEST(test_gmasample_bad_input) {
    const char *r = trained_run();
    struct {
        const char *args, *msg;
    } bad[] = {
        {"--prompt 1 --top-p 1.5", "--top-p"},
        {"--prompt 1 --temperature -1", "--temperature"},
        {"--prompt 1 --tokens 0", "--tokens"},
        {"--prompt 1 --prompt-ids 1", "one of --prompt"},
        {"--prompt-ids '1 x'", "offset 2"},
        {"--prompt-ids 300", "outside the model's vocabulary"},
        {"--prompt ''", "a prompt is required"},
        {"--prompt 1 --tokenizer bpe:/nonexistent", "nonexistent"},
        {"--prompt 1 --bogus", "--bogus"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = run("bin/gmasample --checkpoint %s %s", r, bad[i].args);
        ck_assert_msg(rc == 2 && strstr(g_out, bad[i].msg), "%s: rc %d: %s", bad[i].args, rc, g_out);
        const char *first = strstr(g_out, "gmasample: ");
        ck_assert_msg(first && !strstr(first + 1, "gmasample: "), "%s: not one line: %s", bad[i].args, g_out);
    }
    ck_assert_int_eq(run("bin/gmasample --checkpoint %s/nowhere --prompt 1", tu_tmpdir()), 2);
    /* bidirectional models and classifiers do not generate */
    char cfgp[1100];
    snprintf(cfgp, sizeof cfgp, "%s/bidi", tu_tmpdir());
    ck_assert_int_eq(run("bin/gmatrain --config configs/quickstart.json --out %s --quiet --set model.causal=0 "
                         "--set train.steps=1 --set train.eval_every=0 --set data.recall_valid=4 --set data.recall_test=4",
                         cfgp),
                     0);
    ck_assert_int_eq(run("bin/gmasample --checkpoint %s --prompt-ids 1", cfgp), 2);
    ck_assert_msg(strstr(g_out, "bidirectional"), "%s", g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("sample");
    TCase *tc = tcase_create("sample");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_sampler_distribution);
    tcase_add_test(tc, test_gmasample_continues_the_pattern);
    tcase_add_test(tc, test_generate_is_forward_per_token);
    tcase_add_test(tc, test_samples_while_training);
    tcase_add_test(tc, test_decode_matches_forward);
    tcase_add_test(tc, test_gmasample_bad_input);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
