/* test_baselines.c: float32 checks of the baseline mixers: the tiled sdpa agrees with the
 * plain sdpa_ref to float32 rounding (forward, input and parameter gradients; causal,
 * bidirectional, padded, several tiles, one- and two-pass backward), and every baseline
 * config in configs/ loads, validates and builds; the parameter counts are printed beside
 * the GMA reference setting (d_model 512, 8 layers, 8 heads, N 512, Kc 256, GPT-2
 * vocabulary), which is how docs/baselines.md's counts are produced:
 *     make build/tests/test_baselines && build/tests/test_baselines | grep params */
#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint.h"
#include "model/model.h"
#include "testutil.h"

typedef struct {
    Mixer *m;
    ParamTable pt;
    real *params, *grads, *act, *scratch, *h, *y, *dh;
} One;

static void one_run(One *o, const Config *cfg, const char *name, int B, int N, int causal, const uint8_t *mask,
                    const real *h, const real *r) {
    memset(o, 0, sizeof *o);
    o->m = mixer_find(name)->create(cfg, 0, &o->pt, "blocks.0.mixer");
    Rng rng;
    rng_seed(&rng, 5);
    o->params = xcalloc(o->pt.total, sizeof(real));
    o->grads = xcalloc(o->pt.total, sizeof(real));
    pt_init(&o->pt, o->params, &rng);
    o->act = xcalloc(o->m->vt->act_size(o->m, B, N), sizeof(real));
    o->scratch = xcalloc(o->m->vt->scratch_size(o->m, B, N), sizeof(real));
    size_t n = (size_t)B * N * cfg->model.d_model;
    o->y = xcalloc(n, sizeof(real));
    o->dh = xcalloc(n, sizeof(real));
    MixerCtx ctx = {.B = B, .N = N, .causal = causal, .keymask = mask, .training = 1};
    o->m->vt->forward(o->m, &ctx, o->y, h, o->params, o->act, o->scratch);
    o->m->vt->backward(o->m, &ctx, o->dh, r, h, o->params, o->grads, o->act, o->scratch);
}
static void one_free(One *o) {
    o->m->vt->destroy(o->m);
    pt_free(&o->pt);
    free(o->params), free(o->grads), free(o->act), free(o->scratch), free(o->y), free(o->dh);
}
/* max |a - b| / max(max |b|, floor) */
static double rel(const real *a, const real *b, size_t n, double floor) {
    double e = 0, mx = floor;
    for (size_t i = 0; i < n; i++) e = fmax(e, fabs((double)a[i] - b[i])), mx = fmax(mx, fabs((double)b[i]));
    return e / mx;
}

static void agree_case(int B, int H, int d, int N, int causal, int padded, int threads) {
    Config cfg;
    cfg_defaults(&cfg);
    cfg.model.n_heads = H;
    cfg.model.d_model = H * d;
    cfg.model.init_std = 0.2;
    size_t n = (size_t)B * N * H * d;
    real *h = xcalloc(n, sizeof(real)), *r = xcalloc(n, sizeof(real));
    Rng rng;
    rng_seed(&rng, 17);
    for (size_t i = 0; i < n; i++) h[i] = (real)rng_normal(&rng), r[i] = (real)rng_normal(&rng);
    uint8_t *mask = NULL;
    if (padded) {
        mask = xcalloc((size_t)B * N, 1);
        for (int i = 0; i < B * N; i++) mask[i] = (i % N) < N - 37 * (1 + i / N);
    }
    ops_set_threads(threads);
    One a, b;
    one_run(&a, &cfg, "sdpa", B, N, causal, mask, h, r);
    one_run(&b, &cfg, "sdpa_ref", B, N, causal, mask, h, r);
    double ey = rel(a.y, b.y, n, 1e-30), edh = rel(a.dh, b.dh, n, 1e-30), eg = 0, gmax = 0;
    for (size_t i = 0; i < a.pt.total; i++) gmax = fmax(gmax, fabs(b.grads[i]));
    /* each tensor against its own largest gradient; k.bias has a zero gradient in exact
     * arithmetic (softmax is shift invariant), so its rounding noise is judged against the
     * largest gradient of the layer */
    for (int i = 0; i < a.pt.n; i++) {
        const ParamInfo *p = &a.pt.t[i];
        double fl = strstr(p->name, "k.bias") ? gmax : 1e-30;
        double e = rel(a.grads + p->offset, b.grads + p->offset, p->numel, fl);
        if (getenv("VERBOSE")) printf("  %s %.2e\n", p->name, e);
        eg = fmax(eg, e);
    }
    printf("float32 tiled sdpa vs sdpa_ref B=%d H=%d d=%d N=%d %s%s threads=%d: rel err y %.2e, dh %.2e, grads %.2e\n",
           B, H, d, N, causal ? "causal" : "bidir", padded ? " padded" : "", threads, ey, edh, eg);
    ck_assert_msg(ey < 2e-6 && edh < 2e-5 && eg < 2e-5, "tiled sdpa disagrees with sdpa_ref beyond float32 rounding");
    one_free(&a);
    one_free(&b);
    free(h), free(r), free(mask);
    ops_set_threads(2);
}

START_TEST(test_tiled_agrees_float32) {
    agree_case(2, 4, 16, 300, 1, 0, 1);
    agree_case(2, 4, 16, 300, 0, 1, 2);
    agree_case(1, 2, 32, 257, 1, 1, 4);
    agree_case(1, 1, 64, 200, 0, 0, 2);
}
END_TEST

static size_t count_params(const Config *c0, int *ok) {
    Config c = *c0;
    if (c.model.vocab_size == 0) c.model.vocab_size = 50257; /* the GPT-2 vocabulary of the shards */
    Model m;
    *ok = model_build(&m, &c) == 0;
    size_t n = *ok ? model_param_count(&m) : 0;
    if (*ok) model_free(&m);
    return n;
}

START_TEST(test_configs_build) {
    Config g;
    cfg_defaults(&g);
    ck_assert_int_eq(cfg_load_text(&g,
                                   "{\"model\": {\"vocab_size\": 50257, \"d_model\": 512, \"n_layers\": 8, \"n_heads\": 8,"
                                   " \"max_seq_len\": 512, \"mixer\": \"gma\"}, \"gma\": {\"n_components\": 256},"
                                   " \"train\": {\"seq_len\": 512}}",
                                   "gma reference"),
                     0);
    int ok;
    size_t ngma = count_params(&g, &ok);
    size_t emb = (size_t)50257 * 512 + 512 * 512;
    printf("params %-32s %11zu  (non-embedding %zu)\n", "gma reference (k256)", ngma, ngma - emb);
    glob_t gl;
    ck_assert_int_eq(glob("configs/*_*.json", 0, NULL, &gl), 0);
    int seen = 0;
    for (size_t i = 0; i < gl.gl_pathc; i++) {
        const char *path = gl.gl_pathv[i];
        if (!strstr(path, "wikitext103_") && !strstr(path, "small_")) continue;
        if (strstr(path, "_gma")) continue; /* the GMA configs are checked elsewhere */
        Config c;
        cfg_defaults(&c);
        ck_assert_msg(cfg_load_file(&c, path) == 0, "%s", gma_error());
        ck_assert_msg(cfg_validate(&c) == 0, "%s: %s", path, gma_error());
        size_t n = count_params(&c, &ok);
        ck_assert_msg(ok, "%s: %s", path, gma_error());
        size_t pos = strcmp(cfg_pos_name(&c), "learned") ? 0 : (size_t)c.model.max_seq_len * c.model.d_model;
        size_t e = (size_t)50257 * c.model.d_model + pos; /* tok_emb and a learned position table */
        printf("params %-32s %11zu  (non-embedding %zu)%s\n", path + 8, n, n - e,
               c.model.vocab_size == 0 ? "  [vocab from data; counted with 50257]" : "");
        if (strstr(path, "wikitext103_"))
            ck_assert_msg(fabs((double)n / ngma - 1) < 0.1, "%s: %zu parameters, gma %zu", path, n, ngma);
        seen++;
    }
    globfree(&gl);
    ck_assert_int_ge(seen, 8);
}
END_TEST

/* Checkpoints hold every baseline tensor by its documented name, the Performer's current
 * draw included: after a redraw, save, load into a fresh model: the same bits. */
static void ckpt_case(const char *mixers, const char *extra, const char *const *names, int nn) {
    Config c;
    cfg_defaults(&c);
    c.model.vocab_size = 13;
    c.model.d_model = 16;
    c.model.n_heads = 2;
    c.model.n_layers = 2;
    c.model.max_seq_len = 16;
    c.train.seq_len = 16;
    ck_assert(cfg_set(&c, "data.recall_pairs=2") == 0);
    ck_assert(cfg_set(&c, "linformer.k=8") == 0);
    ck_assert(cfg_set(&c, "performer.redraw=3") == 0);
    ck_assert_int_eq(cfg_set(&c, mixers), 0);
    if (extra) ck_assert_int_eq(cfg_set(&c, extra), 0);
    ck_assert_msg(cfg_validate(&c) == 0, "%s", gma_error());
    Model a, b;
    ck_assert_int_eq(model_build(&a, &c), 0);
    model_alloc(&a, 2, 16);
    model_init_params(&a, 1);
    int32_t tok[32], tgt[32];
    for (int i = 0; i < 32; i++) tok[i] = i % 13, tgt[i] = (i * 7) % 13;
    LossStats st;
    real *before = xcalloc(a.pt.total, sizeof(real));
    memcpy(before, a.params, a.pt.total * sizeof(real));
    ck_assert_int_eq(model_forward(&a, tok, tgt, 2, 16, NULL, 0, &st, 1, 7), 0); /* step 7: draw index 2 */
    int changed = memcmp(before, a.params, a.pt.total * sizeof(real)) != 0;
    ck_assert_int_eq(changed, strstr(mixers, "performer") != NULL);
    const char *dir = tu_path(mixers + 12);
    TrainState ts = {.step = 7, .best_valid = INFINITY};
    rng_seed(&ts.rng, 1);
    ck_assert_msg(ckpt_save(&a, &ts, dir, 2, NULL) == 0, "%s", gma_error());
    ck_assert_int_eq(model_build(&b, &c), 0);
    model_alloc(&b, 2, 16);
    model_init_params(&b, 99);
    char res[512];
    ck_assert_msg(ckpt_resolve(dir, res, sizeof res) == 0, "%s", gma_error());
    ck_assert_msg(ckpt_load(&b, NULL, res) == 0, "%s", gma_error());
    ck_assert(memcmp(a.params, b.params, a.pt.total * sizeof(real)) == 0);
    for (int i = 0; i < nn; i++) ck_assert_msg(pt_find(&b.pt, names[i]) >= 0, "no tensor %s", names[i]);
    printf("checkpoint round trip %s: %d tensors\n", mixers + 12, b.pt.n);
    free(before);
    model_free(&a);
    model_free(&b);
}
START_TEST(test_checkpoint_roundtrip) {
    const char *perf[] = {"blocks.0.mixer.performer.omega", "blocks.1.mixer.performer.omega"};
    ckpt_case("model.mixer=performer", NULL, perf, 2);
    const char *mb[] = {"blocks.0.mixer.mamba.in_proj.weight", "blocks.0.mixer.mamba.conv.weight",
                        "blocks.0.mixer.mamba.conv.bias",      "blocks.0.mixer.mamba.x_proj.weight",
                        "blocks.0.mixer.mamba.dt_proj.weight", "blocks.0.mixer.mamba.dt_proj.bias",
                        "blocks.0.mixer.mamba.A_log",          "blocks.0.mixer.mamba.D",
                        "blocks.0.mixer.mamba.out_proj.weight", "blocks.1.mixer.q.weight"};
    ckpt_case("model.mixer=mamba,sdpa", "model.mlp=false", mb, 10);
    const char *lf[] = {"blocks.0.mixer.linformer.E", "blocks.0.mixer.linformer.F", "blocks.1.mixer.gma.mu"};
    ckpt_case("model.mixer=linformer,auto", "model.causal=0", lf, 3);
    const char *sc[] = {"blocks.0.mixer.q_conv.weight", "blocks.0.mixer.k_conv.weight", "blocks.1.mixer.v_conv.weight"};
    ckpt_case("model.mixer=gma,performer", "model.short_conv=4", sc, 3);
    const char *bc[] = {"blocks.0.mixer.baseconv.projection.weight", "blocks.0.mixer.baseconv.projection.bias",
                        "blocks.0.mixer.baseconv.conv.weight", "blocks.0.mixer.baseconv.conv.bias", "blocks.1.mixer.gma.mu"};
    ckpt_case("model.mixer=baseconv,gma", "model.pos=none", bc, 5);
}
END_TEST

/* The baseline ops are required: a table without them fails ops_check_table naming the op.
 * Installed in g_ops directly anyway, the mixers that need them refuse naming the op, and
 * sdpa falls back to the plain sdpa_ref. */
START_TEST(test_backend_without_baseline_ops) {
    GmaOps partial = gma_ops_cpu;
    partial.name = "partial";
    partial.elu1_forward = NULL;
    partial.attn_forward = NULL;
    partial.scan_backward = NULL;
    partial.mul_backward = NULL;
    ck_assert_int_ne(ops_check_table(&partial), 0);
    ck_assert_msg(strstr(gma_error(), "elu1_forward") && strstr(gma_error(), "partial"), "%s", gma_error());
    const GmaOps *saved = g_ops;
    g_ops = &partial;
    Config c;
    cfg_defaults(&c);
    ParamTable pt = {0};
    ck_assert_ptr_null(mixer_find("linear")->create(&c, 0, &pt, "x"));
    ck_assert_msg(strstr(gma_error(), "elu1_forward") && strstr(gma_error(), "model.mixer"), "%s", gma_error());
    ck_assert_ptr_null(mixer_find("mamba")->create(&c, 0, &pt, "y"));
    ck_assert_msg(strstr(gma_error(), "scan_backward"), "%s", gma_error());
    ck_assert_ptr_null(mixer_find("baseconv")->create(&c, 0, &pt, "v"));
    ck_assert_msg(strstr(gma_error(), "mul_backward") && strstr(gma_error(), "baseconv"), "%s", gma_error());
    Mixer *m = mixer_find("sdpa")->create(&c, 0, &pt, "z");
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m->vt->name, "sdpa_ref");
    m->vt->destroy(m);
    m = mixer_find("performer")->create(&c, 0, &pt, "w");
    ck_assert_ptr_nonnull(m);
    m->vt->destroy(m);
    pt_free(&pt);
    g_ops = saved;
    GmaOps broken = gma_ops_cpu;
    broken.linmix_forward = NULL; /* a required op is still required */
    ck_assert_int_ne(ops_check_table(&broken), 0);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("baseline mixers (float32)");
    TCase *tc = tcase_create("baselines");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_tiled_agrees_float32);
    tcase_add_test(tc, test_configs_build);
    tcase_add_test(tc, test_checkpoint_roundtrip);
    tcase_add_test(tc, test_backend_without_baseline_ops);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
