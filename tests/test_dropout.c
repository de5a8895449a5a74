/* test_dropout.c: the dropout mask and where it acts (docs/model.md §8): the kept fraction
 * and the preserved expectation; the same bits at 1 and 2 threads; a rank's slice of the
 * global batch draws the mask of those sequences of one process; the tiled sdpa and
 * sdpa_ref drop the same attention probabilities; evaluation and incremental decoding
 * never drop, and at rate 0 nothing is drawn or allocated; attention dropout is refused
 * with one line for the mixers without attention probabilities. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "ops/cpu/drop_span.h"
#include "testutil.h"

static GmaDrop make_drop(double p, int seg_local, int64_t seg_global, int64_t first) {
    return (GmaDrop){.key = {1337u, 0u}, .c2 = 17, .c3 = (1u << 16) | (2u << 4) | GMA_DROP_MIXER,
                     .keep_below = gma_drop_threshold(p), .scale = 1 / (1 - p), .seg_local = seg_local,
                     .seg_global = seg_global, .first = first};
}

/* kept fraction within 5 standard deviations of 1 - p, and mean(y) of x = 1 within 5 sigma of 1 */
START_TEST(test_kept_fraction_and_expectation) {
    const double ps[] = {0.1, 0.3, 0.5};
    size_t n = 1 << 20;
    real *x = xcalloc(n, sizeof(real)), *y = xcalloc(n, sizeof(real));
    for (size_t i = 0; i < n; i++) x[i] = 1;
    for (int t = 0; t < 3; t++) {
        double p = ps[t];
        GmaDrop g = make_drop(p, 16, 16, 0);
        g_ops->dropout(y, x, 16, n / 16, &g);
        double kept = 0, sum = 0;
        for (size_t i = 0; i < n; i++) {
            kept += y[i] != 0;
            sum += y[i];
            ck_assert(y[i] == 0 || fabs(y[i] - 1 / (1 - p)) < 1e-6);
        }
        double frac = kept / n, sd = sqrt(p * (1 - p) / n), mean = sum / n, sdm = sqrt(p / (1 - p) / n);
        printf("dropout p %.1f: kept %.5f (expected %.5f, sd %.1e), mean %.5f (sd %.1e)\n", p, frac, 1 - p, sd, mean, sdm);
        ck_assert_msg(fabs(frac - (1 - p)) < 5 * sd, "p %g: kept fraction %.5f", p, frac);
        ck_assert_msg(fabs(mean - 1) < 5 * sdm, "p %g: mean %.5f", p, mean);
    }
    /* another step, layer or site draws another mask */
    GmaDrop a = make_drop(0.5, 16, 16, 0), b = a;
    b.c2++;
    real *z = xcalloc(n, sizeof(real));
    g_ops->dropout(y, x, 16, n / 16, &a);
    g_ops->dropout(z, x, 16, n / 16, &b);
    size_t same = 0;
    for (size_t i = 0; i < n; i++) same += (y[i] != 0) == (z[i] != 0);
    ck_assert_msg(fabs((double)same / n - 0.5) < 0.01, "masks of two steps agree on %.4f", (double)same / n);
    free(x), free(y), free(z);
}
END_TEST

START_TEST(test_threads_and_slices) {
    int S = 6, per = 999; /* not a multiple of 4: Philox groups straddle the sequences */
    size_t n = (size_t)S * per;
    real *x = xcalloc(n, sizeof(real)), *y1 = xcalloc(n, sizeof(real)), *y2 = xcalloc(n, sizeof(real));
    for (size_t i = 0; i < n; i++) x[i] = (real)(1 + i % 7);
    GmaDrop g = make_drop(0.3, S, S, 0);
    ops_set_threads(1);
    g_ops->dropout(y1, x, S, per, &g);
    ops_set_threads(2);
    g_ops->dropout(y2, x, S, per, &g);
    ck_assert(memcmp(y1, y2, n * sizeof(real)) == 0);
    /* and every element as the mask's definition gives it (the vectorised path included) */
    for (int sq = 0; sq < S; sq++)
        for (int i = 0; i < per; i++) {
            size_t j = (size_t)sq * per + i;
            ck_assert_msg(y1[j] == (real)(x[j] * (real)gma_drop_mult(&g, (uint64_t)sq * per + i)), "element %zu", j);
        }
    /* group indices whose low 32 bits wrap inside one vector of 8 groups: sequence `first`
     * of 999 elements starts just below group 2^32 */
    GmaDrop gw = g;
    gw.seg_local = 1;
    gw.first = (int64_t)((((uint64_t)1 << 32) - 5) * 4 / 999);
    g_ops->dropout(y1, x, 1, 999, &gw);
    for (int i = 0; i < 999; i++)
        ck_assert_msg(y1[i] == (real)(x[i] * (real)gma_drop_mult(&gw, (uint64_t)gw.first * 999 + i)), "wrap, element %d", i);
    /* two-sequence examples, 3 of them in one process: segments [0,3) and [3,6); rank 1 of 3
     * ranks of one example each holds global sequences 1 and 4 */
    GmaDrop whole = make_drop(0.3, 3, 3, 0);
    real *xw = xcalloc(n, sizeof(real)), *yw = xcalloc(n, sizeof(real));
    for (size_t i = 0; i < n; i++) xw[i] = 1;
    g_ops->dropout(yw, xw, S, per, &whole);
    GmaDrop r1 = whole;
    r1.seg_local = 1, r1.first = 1;
    real *yr = xcalloc(2 * (size_t)per, sizeof(real));
    g_ops->dropout(yr, xw, 2, per, &r1); /* local sequences 0, 1 = global 1 and 4 */
    ck_assert(memcmp(yr, yw + (size_t)1 * per, per * sizeof(real)) == 0);
    ck_assert(memcmp(yr + per, yw + (size_t)4 * per, per * sizeof(real)) == 0);
    ck_assert(memcmp(yr, yw, per * sizeof(real)) != 0); /* and not the local index's mask */
    free(x), free(y1), free(y2), free(xw), free(yw), free(yr);
}
END_TEST

/* the CPU's vector words (ops/cpu/drop_span.h: AVX2 where the build has it) equal the
 * scalar definition word for word: every length 0..300 (the 64-element blocks, their
 * partial last block and the scalar head and tail) at offsets of each phase in a group,
 * offsets whose group index crosses 2^32 inside a block (the carry into counter word 1)
 * and element offsets crossing 2^32 */
START_TEST(test_vector_words_equal_scalar) {
    const uint64_t offs[] = {0, 1, 2, 3, 61, ((uint64_t)1 << 32) - 37, ((uint64_t)1 << 34) - 4 * 5 - 2,
                             ((uint64_t)1 << 34) - 4 * 13, ((uint64_t)1 << 34) + 3, ~(uint64_t)0 - 4 * 300};
    GmaDrop g = make_drop(0.1, 1, 1, 0);
    g.key[1] = 0x9e3779b9u;
    uint32_t v[300], w[300];
    for (size_t o = 0; o < sizeof offs / sizeof *offs; o++)
        for (size_t n = 0; n <= 300; n++) {
            memset(v, 0xa5, sizeof v);
            drop_span(v, &g, offs[o], n);
            drop_span_scalar(w, &g, offs[o], n);
            for (size_t i = 0; i < n; i++)
                ck_assert_msg(v[i] == w[i], "offset %llu, length %zu: word %zu is %08x, the definition %08x",
                              (unsigned long long)offs[o], n, i, v[i], w[i]);
            ck_assert_msg(n == 300 || v[n] == 0xa5a5a5a5u, "offset %llu, length %zu: wrote past the end",
                          (unsigned long long)offs[o], n);
        }
}
END_TEST

/* sequences longer than the op's chunks, at 1 and 2 threads, against the definition,
 * x = -1 included: y is x times gma_drop_mult, bit for bit */
START_TEST(test_long_sequences_every_element) {
    int S = 3, per = 2 * 1024 + 333;
    size_t n = (size_t)S * per;
    real *x = xcalloc(n, sizeof(real)), *y = xcalloc(n, sizeof(real));
    for (size_t i = 0; i < n; i++) x[i] = (real)((int)(i % 5) - 1);
    GmaDrop g = make_drop(0.4, S, 7, 3);
    for (int th = 1; th <= 2; th++) {
        ops_set_threads(th);
        g_ops->dropout(y, x, S, per, &g);
        for (int sq = 0; sq < S; sq++)
            for (int i = 0; i < per; i++) {
                size_t j = (size_t)sq * per + i;
                real want = x[j] * (real)gma_drop_mult(&g, (uint64_t)gma_drop_seq(&g, sq) * per + i);
                ck_assert_msg(memcmp(&y[j], &want, sizeof(real)) == 0, "%d threads, element %zu", th, j);
            }
    }
    free(x), free(y);
}
END_TEST

/* the tiled sdpa and sdpa_ref drop the same probabilities: same outputs and gradients */
START_TEST(test_tiled_equals_reference) {
    Config cfg = tu_tiny_config("sdpa");
    cfg.model.max_seq_len = 300;
    int B = 2, N = 300; /* more than one 128-wide tile */
    ParamTable p1 = {0}, p2 = {0};
    Mixer *a = mixer_find("sdpa")->create(&cfg, 0, &p1, "m"), *b = mixer_find("sdpa_ref")->create(&cfg, 0, &p2, "m");
    real *params = xcalloc(p1.total, sizeof(real)), *g1 = xcalloc(p1.total, sizeof(real)), *g2 = xcalloc(p1.total, sizeof(real));
    Rng rng;
    rng_seed(&rng, 4);
    pt_init(&p1, params, &rng);
    size_t n = (size_t)B * N * a->D;
    real *h = xcalloc(n, sizeof(real)), *y1 = xcalloc(n, sizeof(real)), *y2 = xcalloc(n, sizeof(real));
    real *dy = xcalloc(n, sizeof(real)), *dh1 = xcalloc(n, sizeof(real)), *dh2 = xcalloc(n, sizeof(real));
    for (size_t i = 0; i < n; i++) h[i] = (real)rng_normal(&rng), dy[i] = (real)rng_normal(&rng);
    real *act1 = xcalloc(a->vt->act_size(a, B, N), sizeof(real)), *sc1 = xcalloc(a->vt->scratch_size(a, B, N), sizeof(real));
    real *act2 = xcalloc(b->vt->act_size(b, B, N), sizeof(real)), *sc2 = xcalloc(b->vt->scratch_size(b, B, N), sizeof(real));
    GmaDrop g = make_drop(0.25, B, 5, 2);
    g.c3 = GMA_DROP_ATTN;
    for (int causal = 0; causal < 2; causal++) {
        MixerCtx c = {.B = B, .N = N, .causal = causal, .training = 1, .attn_drop = &g};
        a->vt->forward(a, &c, y1, h, params, act1, sc1);
        b->vt->forward(b, &c, y2, h, params, act2, sc2);
        double e = 0, ey = 0;
        for (size_t i = 0; i < n; i++) e = fmax(e, fabs(y1[i] - y2[i])), ey = fmax(ey, fabs(y1[i]));
        ck_assert_msg(e < 1e-4 * ey, "causal %d: tiled vs reference output %.3e", causal, e);
        memset(dh1, 0, n * sizeof(real)), memset(dh2, 0, n * sizeof(real));
        a->vt->backward(a, &c, dh1, dy, h, params, g1, act1, sc1);
        b->vt->backward(b, &c, dh2, dy, h, params, g2, act2, sc2);
        double ed = 0, m = 0;
        for (size_t i = 0; i < n; i++) ed = fmax(ed, fabs(dh1[i] - dh2[i])), m = fmax(m, fabs(dh1[i]));
        ck_assert_msg(ed < 1e-4 * m, "causal %d: tiled vs reference dh %.3e", causal, ed);
        /* and the mask acted */
        MixerCtx c0 = c;
        c0.attn_drop = NULL;
        b->vt->forward(b, &c0, y2, h, params, act2, sc2);
        double e0 = 0;
        for (size_t i = 0; i < n; i++) e0 = fmax(e0, fabs(y1[i] - y2[i]));
        ck_assert(e0 > 1e-3 * ey);
    }
    a->vt->destroy(a), b->vt->destroy(b);
    pt_free(&p1), pt_free(&p2);
    free(params), free(g1), free(g2), free(h), free(y1), free(y2), free(dy), free(dh1), free(dh2);
    free(act1), free(sc1), free(act2), free(sc2);
}
END_TEST

/* counts the dropout calls of the op table it wraps */
static long g_drops;
static const GmaOps *g_inner;
static void counting_dropout(real *y, const real *x, int S, size_t per_seq, const GmaDrop *d) {
    g_drops++;
    g_inner->dropout(y, x, S, per_seq, d);
}
static void counting_attn_forward(real *out, real *lse, const real *q, const real *k, const real *v, const real *kb, int B,
                                  int H, int N, int d, int causal, int window, real scale, const GmaDrop *drop) {
    g_drops += drop != NULL;
    g_inner->attn_forward(out, lse, q, k, v, kb, B, H, N, d, causal, window, scale, drop);
}

static void forward_pair(const char *sets, int training, real *loss_rows_out, long *drops) {
    Config cfg = tu_tiny_config("sdpa");
    tu_apply_sets(&cfg, sets);
    Model m;
    ck_assert_int_eq(model_build(&m, &cfg), 0);
    model_alloc(&m, 2, 8);
    model_init_params(&m, 7);
    int32_t tok[16], tgt[16];
    for (int i = 0; i < 16; i++) tok[i] = (i * 7 + 3) % 11, tgt[i] = (i * 5 + 1) % 11;
    LossStats st;
    g_drops = 0;
    ck_assert_int_eq(model_forward(&m, tok, tgt, 2, 8, NULL, 0, &st, training, 3), 0);
    if (training) model_backward(&m, 1);
    *drops = g_drops;
    memcpy(loss_rows_out, m.loss_rows, 16 * sizeof(real));
    model_free(&m);
}

START_TEST(test_eval_and_decode_never_drop) {
    GmaOps t = *g_ops;
    g_inner = g_ops;
    t.dropout = counting_dropout;
    t.attn_forward = counting_attn_forward;
    g_ops = &t;
    const char *on = "model.dropout=0.5;model.attn_dropout=0.5;model.mlp_hidden_dropout=0.5";
    real l0[16], l1[16];
    long d0, d1;
    /* evaluation forwards: the same bits as the model without dropout, nothing drawn */
    forward_pair("model.dropout=0", 0, l0, &d0);
    forward_pair(on, 0, l1, &d1);
    ck_assert(memcmp(l0, l1, sizeof l0) == 0);
    ck_assert_int_eq(d1, 0);
    /* rate 0 training: nothing drawn */
    forward_pair("model.dropout=0", 1, l0, &d0);
    ck_assert_int_eq(d0, 0);
    /* a training forward does drop: embedding + 2 x (attention, mixer, hidden, MLP) forward, again backward */
    forward_pair(on, 1, l1, &d1);
    ck_assert_int_eq(d1, 1 + 2 * 4 + 1 + 2 * 3);
    ck_assert(memcmp(l0, l1, sizeof l0) != 0);
    /* rate 0 allocates nothing more */
    Config c0 = tu_tiny_config("sdpa"), c1 = c0;
    tu_apply_sets(&c1, on);
    Model m0, m1;
    ck_assert_int_eq(model_build(&m0, &c0), 0);
    ck_assert_int_eq(model_build(&m1, &c1), 0);
    model_alloc(&m0, 2, 8), model_alloc(&m1, 2, 8);
    ck_assert(m0.act_bytes == m1.act_bytes);
    /* incremental decoding: the logits of the model without dropout, nothing drawn */
    model_init_params(&m0, 7), model_init_params(&m1, 7);
    DecodeState s0, s1;
    ck_assert_int_eq(model_decode_begin(&m0, &s0), 0);
    ck_assert_int_eq(model_decode_begin(&m1, &s1), 0);
    g_drops = 0;
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(model_decode_step(&m0, &s0, i + 1), 0);
        ck_assert_int_eq(model_decode_step(&m1, &s1, i + 1), 0);
        ck_assert(memcmp(m0.logits, m1.logits, sizeof(real) * m0.V) == 0);
    }
    ck_assert_int_eq(g_drops, 0);
    model_decode_end(&m0, &s0), model_decode_end(&m1, &s1);
    model_free(&m0), model_free(&m1);
    g_ops = g_inner;
}
END_TEST

/* attention dropout is refused for a model none of whose layers has attention probabilities,
 * in one line naming the mixer; a stack with an attention layer takes it there */
START_TEST(test_attn_dropout_refused_without_probabilities) {
    const char *mixers[] = {"gma", "linear", "performer", "mamba", "baseconv", "auto"};
    for (int i = 0; i < 6; i++) {
        Config c = tu_tiny_config(mixers[i]);
        ck_assert_int_eq(cfg_set(&c, "model.attn_dropout=0.1"), 0);
        ck_assert_int_ne(cfg_validate(&c), 0);
        ck_assert_msg(strstr(gma_error(), "key model.attn_dropout") && strstr(gma_error(), mixers[i]) &&
                          !strchr(gma_error(), '\n'),
                      "%s", gma_error());
        ck_assert_int_eq(cfg_set(&c, "model.attn_dropout=0"), 0);
        ck_assert_int_eq(cfg_set(&c, "model.dropout=0.1"), 0);
        ck_assert_msg(cfg_validate(&c) == 0, "%s: %s", mixers[i], gma_error());
    }
    /* a stack with an attention layer takes it there (a baseconv or gma layer has nothing to drop) */
    const char *stacks[] = {"model.mixer=baseconv,sdpa", "model.mixer=sdpa,gma"};
    for (int i = 0; i < 2; i++) {
        Config h = tu_tiny_config("sdpa");
        tu_apply_sets(&h, stacks[i]);
        ck_assert_int_eq(cfg_set(&h, "model.attn_dropout=0.1"), 0);
        ck_assert_msg(cfg_validate(&h) == 0, "%s: %s", stacks[i], gma_error());
    }
    Config c = tu_tiny_config("sdpa");
    ck_assert_int_ne(cfg_set(&c, "model.dropout=1"), 0); /* out of range */
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("dropout");
    TCase *tc = tcase_create("dropout");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_kept_fraction_and_expectation);
    tcase_add_test(tc, test_threads_and_slices);
    tcase_add_test(tc, test_vector_words_equal_scalar);
    tcase_add_test(tc, test_long_sequences_every_element);
    tcase_add_test(tc, test_tiled_equals_reference);
    tcase_add_test(tc, test_eval_and_decode_never_drop);
    tcase_add_test(tc, test_attn_dropout_refused_without_probabilities);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
