/* test_kadapt.c: the structural adaptation of K (train/kadapt.h, docs/model.md §4.2): merging
 * two identical components, splitting one into two copies at zero offset and pruning an
 * unused one leave the model's losses as they were (EMA memory: exactly, to rounding; the
 * linear core: see docs/model.md §4.2, where merges and splits do change the kernel, which
 * is checked too); the optimiser moments follow their rows; K stays in [k_min, k_max];
 * gmatrain logs K per layer, checkpoints carry it and a resume across a K change ends where
 * the straight run does. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/safetensors.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "ops/ops.h"
#include "testutil.h"
#include "train/kadapt.h"

enum { B = 2, N = 8, K0 = 4 };
static int32_t g_tok[B * N], g_tgt[B * N];

static void build(Model *m, const char *sets) {
    Config c = tu_tiny_config("gma");
    char all[512];
    snprintf(all, sizeof all, "gma.n_components=%d;gma.adapt_every=1;gma.prune_below=0;gma.split_above=0;gma.merge_dist=0;%s", K0,
             sets);
    tu_apply_sets(&c, all);
    ck_assert_int_eq(model_build(m, &c), 0);
    model_alloc(m, B, N);
    model_init_params(m, 5);
    for (int i = 0; i < B * N; i++) g_tok[i] = (int32_t)((i * 7 + 3) % 11), g_tgt[i] = (int32_t)((i * 5 + 1) % 11);
}

/* the per-row losses of the fixed batch (evaluation forward) */
static void losses(Model *m, double *out) {
    LossStats st;
    ck_assert_int_eq(model_forward(m, g_tok, g_tgt, B, N, NULL, 0, &st, 0, 0), 0);
    for (int i = 0; i < B * N; i++) out[i] = m->loss_rows[i];
}
static double max_diff(const double *a, const double *b) {
    double w = 0;
    for (int i = 0; i < B * N; i++) w = fmax(w, fabs(a[i] - b[i]));
    return w;
}

static real *T(Model *m, real *base, int l, const char *what) {
    char n[96];
    snprintf(n, sizeof n, "blocks.%d.mixer.gma.%s", l, what);
    int i = pt_find(&m->pt, n);
    ck_assert_msg(i >= 0, "%s", n);
    return base + m->pt.t[i].offset;
}
static int Kc(Model *m, int l) {
    char n[96];
    snprintf(n, sizeof n, "blocks.%d.mixer.gma.prior_logits", l);
    return m->pt.t[pt_find(&m->pt, n)].shape[1];
}

/* uniform loads, or `hot` given load x and the rest sharing 1 - x */
static double g_load[2][64];
static double *const *loads(Model *m, int hot, double x, int cold, double y) {
    static double *p[2];
    int K = Kc(m, 0), H = m->H;
    for (int l = 0; l < 2; l++) {
        for (int h = 0; h < H; h++)
            for (int k = 0; k < K; k++) {
                double u = 1.0 / K;
                if (hot >= 0) u = k == hot ? x : k == cold ? y : (1 - x - y) / (K - 1 - (cold >= 0));
                g_load[l][h * K + k] = u;
            }
        p[l] = g_load[l];
    }
    return p;
}

/* component src's Gaussian and prior copied onto dst, in every head of both layers */
static void duplicate(Model *m, int dst, int src) {
    int d = m->D / m->H, K = Kc(m, 0);
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < m->H; h++) {
            memcpy(T(m, m->params, l, "mu") + (h * K + dst) * d, T(m, m->params, l, "mu") + (h * K + src) * d, sizeof(real) * d);
            memcpy(T(m, m->params, l, "var_raw") + (h * K + dst) * d, T(m, m->params, l, "var_raw") + (h * K + src) * d,
                   sizeof(real) * d);
            T(m, m->params, l, "prior_logits")[h * K + dst] = T(m, m->params, l, "prior_logits")[h * K + src];
        }
}

/* recognisable moments: element e of component k of head h, tensor t: 1000 t + 100 h + 10 k + e */
static void mark_moments(Model *m) {
    int d = m->D / m->H, K = Kc(m, 0);
    const char *ts[] = {"mu", "var_raw", "prior_logits"};
    for (int l = 0; l < 2; l++)
        for (int t = 0; t < 3; t++)
            for (int h = 0; h < m->H; h++)
                for (int k = 0; k < K; k++)
                    for (int e = 0; e < (t == 2 ? 1 : d); e++) {
                        size_t o = t == 2 ? (size_t)h * K + k : ((size_t)h * K + k) * d + e;
                        T(m, m->m, l, ts[t])[o] = (real)(1000 * t + 100 * h + 10 * k + e);
                        T(m, m->v, l, ts[t])[o] = (real)(2 * (1000 * t + 100 * h + 10 * k + e));
                    }
}
static double mom(Model *m, real *base, int l, const char *t, int h, int k, int e) {
    int d = m->D / m->H, K = Kc(m, l);
    return strcmp(t, "prior_logits") ? T(m, base, l, t)[((size_t)h * K + k) * d + e] : T(m, base, l, t)[(size_t)h * K + k];
}

START_TEST(test_merge_identical) {
    double before[B * N], after[B * N];
    Model m;
    build(&m, "gma.memory=ema;gma.merge_dist=1e-9");
    duplicate(&m, 1, 0);
    mark_moments(&m);
    losses(&m, before);
    KadaptTally t;
    ck_assert_int_eq(kadapt_apply(&m, loads(&m, -1, 0, -1, 0), 3, NULL, &t), 1);
    ck_assert_int_eq(t.merged, 4); /* components 0 and 1 of 2 heads x 2 layers; no other pair is that close */
    ck_assert_int_eq(Kc(&m, 0), K0 - 1);
    ck_assert_int_eq(Kc(&m, 1), K0 - 1);
    losses(&m, after);
    double w = max_diff(before, after);
    printf("merge of two identical components (EMA memory): losses change by %.2e\n", w);
    ck_assert_msg(w < 1e-5, "%g", w);
    /* the moments: the merged row the mean of rows 0 and 1 (equal weights), row 2 moved to 1 */
    for (int h = 0; h < m.H; h++) {
        ck_assert_double_eq_tol(mom(&m, m.m, 0, "mu", h, 0, 2), 100 * h + 5 + 2, 1e-3);
        ck_assert_double_eq_tol(mom(&m, m.v, 1, "var_raw", h, 0, 1), 2 * (1000 + 100 * h + 5 + 1), 1e-2);
        ck_assert_double_eq_tol(mom(&m, m.m, 1, "mu", h, 1, 3), 100 * h + 20 + 3, 1e-3);
        ck_assert_double_eq_tol(mom(&m, m.v, 0, "prior_logits", h, 2, 0), 2 * (2000 + 100 * h + 30), 1e-2);
    }
    model_free(&m);
    /* the linear core: the pair's term of the kernel sum_k gq_k gk_k doubles (docs/model.md §4.2) */
    build(&m, "gma.merge_dist=1e-9");
    duplicate(&m, 1, 0);
    losses(&m, before);
    ck_assert_int_eq(kadapt_apply(&m, loads(&m, -1, 0, -1, 0), 3, NULL, &t), 1);
    losses(&m, after);
    w = max_diff(before, after);
    printf("merge of two identical components (linear core): losses change by %.2e\n", w);
    ck_assert_msg(w > 1e-5, "the linear core's kernel changes with a merge: %g", w);
    model_free(&m);
}
END_TEST

START_TEST(test_split_zero_offset) {
    double before[B * N], after[B * N];
    Model m;
    build(&m, "gma.memory=ema;gma.split_above=2;gma.split_shift=0");
    mark_moments(&m);
    losses(&m, before);
    real l0 = T(&m, m.params, 0, "prior_logits")[0];
    KadaptTally t;
    ck_assert_int_eq(kadapt_apply(&m, loads(&m, 0, 0.7, -1, 0), 3, NULL, &t), 1);
    ck_assert_int_eq(t.split, 4);
    ck_assert_int_eq(Kc(&m, 0), K0 + 1);
    losses(&m, after);
    double w = max_diff(before, after);
    printf("split at zero offset (EMA memory): losses change by %.2e\n", w);
    ck_assert_msg(w < 1e-5, "%g", w);
    ck_assert_double_eq_tol(T(&m, m.params, 0, "prior_logits")[1], l0 - log(2.0), 1e-6);
    for (int h = 0; h < m.H; h++) { /* both copies keep row 0's moments; row 1 is now row 2 */
        ck_assert_double_eq(mom(&m, m.m, 0, "mu", h, 0, 1), 100 * h + 1);
        ck_assert_double_eq(mom(&m, m.m, 0, "mu", h, 1, 1), 100 * h + 1);
        ck_assert_double_eq(mom(&m, m.v, 1, "var_raw", h, 2, 2), 2 * (1000 + 100 * h + 10 + 2));
    }
    model_free(&m);
    /* moved apart (split_shift 0.5) the copies route differently: the losses change */
    build(&m, "gma.memory=ema;gma.split_above=2;gma.split_shift=0.5");
    losses(&m, before);
    ck_assert_int_eq(kadapt_apply(&m, loads(&m, 0, 0.7, -1, 0), 3, NULL, &t), 1);
    losses(&m, after);
    ck_assert_msg(max_diff(before, after) > 1e-5, "%g", max_diff(before, after));
    model_free(&m);
}
END_TEST

/* the largest softplus(var_raw) (sigma2 less the floor) over the layers' components */
static double max_var(Model *m) {
    double w = 0;
    int d = m->D / m->H, K = Kc(m, 0);
    for (int l = 0; l < 2; l++)
        for (size_t i = 0; i < (size_t)m->H * K * d; i++) {
            double v = T(m, m->params, l, "var_raw")[i];
            w = fmax(w, v > 20 ? v : log1p(exp(v)));
        }
    return w;
}

/* Many adaptations of a layer whose component 0 always carries most of the load: it splits
 * each time; at a merge_dist between a fresh split's per-dimension mean distance
 * (split_shift^2 / (2d) = 0.031 at d 4) and its largest per-dimension term (0.125), the
 * split is not merged straight back (the mean distance merged it, and each merge grew the
 * variance on the split axis by 1 + split_shift^2: after 300 cycles far past float), K
 * grows to k_max and stays in [k_min, k_max], and the variances stay where they were. */
START_TEST(test_split_merge_cycles) {
    Model m;
    build(&m, "gma.split_above=2;gma.split_shift=0.5;gma.merge_dist=0.05;gma.k_max=8");
    double v0 = max_var(&m);
    int merged = 0;
    for (int c = 0; c < 300; c++) {
        KadaptTally t;
        ck_assert_int_ge(kadapt_apply(&m, loads(&m, 0, 0.7, -1, 0), c, NULL, &t), 0);
        if (c >= 200) merged += t.merged; /* before: pairs of the initial components may be close and merge */
        ck_assert(Kc(&m, 0) >= 1 && Kc(&m, 0) <= 8 && Kc(&m, 1) <= 8);
        double v = max_var(&m);
        ck_assert_msg(isfinite(v) && v <= 2 * v0, "adaptation %d: the largest variance %g, %g at the start", c, v, v0);
    }
    ck_assert_int_eq(Kc(&m, 0), 8);
    ck_assert_int_eq(Kc(&m, 1), 8);
    ck_assert_msg(merged == 0, "%d merges in the last 100 adaptations: a split and a merge cycle", merged);
    model_free(&m);
    /* a merge_dist that would merge a fresh split straight back is refused */
    Config c = tu_tiny_config("gma");
    tu_apply_sets(&c, "gma.adapt_every=1;gma.split_above=2;gma.split_shift=0.5");
    ck_assert_int_eq(cfg_set(&c, "gma.merge_dist=0.125"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "key gma.merge_dist") && strstr(gma_error(), "straight back"), "%s", gma_error());
}
END_TEST

START_TEST(test_prune_unused) {
    double before[B * N], after[B * N];
    Model m;
    build(&m, "gma.prune_below=0.02");
    int K = K0;
    for (int l = 0; l < 2; l++) /* component 3 out of use: a mixture weight of about e^-40 */
        for (int h = 0; h < m.H; h++) T(&m, m.params, l, "prior_logits")[h * K + 3] = -40;
    mark_moments(&m);
    losses(&m, before);
    KadaptTally t;
    ck_assert_int_eq(kadapt_apply(&m, loads(&m, 0, 0.4, 3, 0), 3, NULL, &t), 1);
    ck_assert_int_eq(t.pruned, 4);
    ck_assert_int_eq(Kc(&m, 1), K0 - 1);
    losses(&m, after);
    double w = max_diff(before, after);
    printf("prune of an unused component (linear core): losses change by %.2e\n", w);
    ck_assert_msg(w < 1e-5, "%g", w);
    for (int h = 0; h < m.H; h++) ck_assert_double_eq(mom(&m, m.m, 1, "mu", h, 2, 3), 100 * h + 20 + 3);
    model_free(&m);
    /* a component in use, pruned, changes them */
    build(&m, "gma.prune_below=0.02");
    losses(&m, before);
    ck_assert_int_eq(kadapt_apply(&m, loads(&m, 0, 0.4, 3, 0), 3, NULL, &t), 1);
    losses(&m, after);
    ck_assert_msg(max_diff(before, after) > 1e-4, "%g", max_diff(before, after));
    model_free(&m);
}
END_TEST

/* random loads, adaptation after adaptation: K never leaves [k_min, k_max]; a K that starts
 * above k_max comes down at once */
START_TEST(test_k_range) {
    Model m;
    build(&m, "gma.n_components=8;gma.k_min=2;gma.k_max=6;gma.prune_below=0.5;gma.split_above=1.3;gma.merge_dist=0.01");
    Rng rng;
    rng_seed(&rng, 9);
    int grew = 0, shrank = 0;
    for (int round = 0; round < 30; round++) {
        int K = Kc(&m, 0), H = m.H;
        static double ld[2][128];
        double *p[2] = {ld[0], ld[1]};
        for (int l = 0; l < 2; l++)
            for (int h = 0; h < H; h++) {
                double s = 0;
                for (int k = 0; k < K; k++) s += ld[l][h * K + k] = pow(rng_uniform(&rng), 3);
                for (int k = 0; k < K; k++) ld[l][h * K + k] /= s;
            }
        int K0s[2] = {Kc(&m, 0), Kc(&m, 1)};
        ck_assert_int_ge(kadapt_apply(&m, p, round, NULL, NULL), 0);
        for (int l = 0; l < 2; l++) {
            int k = Kc(&m, l);
            ck_assert_msg(k >= 2 && k <= 6, "round %d layer %d: K %d", round, l, k);
            grew |= k > K0s[l] && round > 0, shrank |= k < K0s[l] && round > 0;
        }
    }
    ck_assert_msg(grew && shrank, "K moved both ways (grew %d, shrank %d)", grew, shrank);
    model_free(&m);
}
END_TEST

static const char *KA =
    "{\"name\": \"ka\", \"seed\": 3,\n"
    " \"model\": {\"d_model\": 16, \"n_layers\": 3, \"n_heads\": 2, \"max_seq_len\": 24, \"mixer\": [\"gma\", \"sdpa\", \"gma\"]},\n"
    " \"gma\": {\"n_components\": [6, 8], \"chunk\": 5, \"adapt_every\": 2, \"prune_below\": 0.2, \"split_above\": 1.8, \"k_max\": 10},\n"
    " \"train\": {\"steps\": 12, \"batch_size\": 4, \"seq_len\": 24, \"lr\": 0.01, \"warmup\": 0, \"schedule\": \"constant\",\n"
    "           \"eval_every\": 0, \"eval_batches\": 2, \"log_every\": 2, \"checkpoint_every\": 6},\n"
    " \"data\": {\"recall_vocab\": 20, \"recall_pairs\": 4, \"recall_valid\": 16, \"recall_test\": 16}}\n";

static int ckpt_kc(const char *run_dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/latest/model.safetensors", run_dir);
    StFile st;
    ck_assert_msg(st_open(&st, p) == 0, "%s", gma_error());
    const StEntry *t = st_find(&st, name);
    ck_assert_msg(t != NULL, "%s", name);
    int k = (int)t->shape[1];
    st_close(&st);
    return k;
}

START_TEST(test_train_resume) {
    tu_write(tu_path("ka.json"), KA);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("ka.json"), tu_path("full")) == 0, "%s", g_out);
    char p[1024];
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("full"));
    char *mj = gma_read_file(p, NULL);
    int rows = 0, k_last[3] = {0, 0, 0}, moved = 0;
    for (char *line = strtok(mj, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *ev = cJSON_GetObjectItem(o, "event");
        if (cJSON_IsString(ev) && !strcmp(ev->valuestring, "adapt")) {
            int l = cJSON_GetObjectItem(o, "layer")->valueint, k = cJSON_GetObjectItem(o, "n_components")->valueint;
            ck_assert(l == 0 || l == 2);
            ck_assert(k >= 1 && k <= 10);
            moved |= k != cJSON_GetObjectItem(o, "k_before")->valueint;
            k_last[l] = k;
            rows++;
        }
        cJSON_Delete(o);
    }
    free(mj);
    ck_assert_int_eq(rows, 12); /* steps 2, 4, ..., 12, two layers */
    ck_assert_msg(moved, "K never changed");
    ck_assert_int_eq(ckpt_kc(tu_path("full"), "blocks.0.mixer.gma.mu"), k_last[0]);
    ck_assert_int_eq(ckpt_kc(tu_path("full"), "blocks.2.mixer.gma.var_raw"), k_last[2]);
    /* the plot's data: K per layer at every adaptation (no gnuplot needed) */
    ck_assert_msg(run("GNUPLOT=/nonexistent scripts/plot_k.sh --out %s %s", tu_path("plots"), tu_path("full")) == 0, "%s", g_out);
    char *dat = gma_read_file(tu_path("plots/full.k.dat"), NULL);
    ck_assert_ptr_nonnull(dat);
    int nd = 0;
    for (char *line = strtok(dat, "\n"); line; line = strtok(NULL, "\n")) {
        long s;
        int l, k;
        double live;
        ck_assert_msg(sscanf(line, "%ld %d %d %lf", &s, &l, &k, &live) == 4, "%s", line);
        ck_assert(s % 2 == 0 && (l == 0 || l == 2) && live <= k);
        nd++;
    }
    ck_assert_int_eq(nd, 14); /* steps 0 (the K before), 2, ..., 12; two layers */
    free(dat);
    /* half, then a resume (from the checkpoint's config, and with --config: its K list stands) */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=6", tu_path("ka.json"), tu_path("half")) == 0,
                  "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=12", tu_path("half")) == 0, "%s", g_out);
    tu_same_tensors(tu_path("full"), tu_path("half"), "latest/model.safetensors");
    tu_same_tensors(tu_path("full"), tu_path("half"), "latest/optim.safetensors");
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=6", tu_path("ka.json"), tu_path("half2")) == 0,
                  "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --config %s --resume %s --quiet", tu_path("ka.json"), tu_path("half2")) == 0, "%s", g_out);
    tu_same_tensors(tu_path("full"), tu_path("half2"), "latest/model.safetensors");
    /* evaluation and sampling read the adapted shapes from the checkpoint */
    ck_assert_msg(run("./bin/gmasample --checkpoint %s --prompt-ids \"2 3 4\" --tokens 4 --temperature 0", tu_path("full")) == 0,
                  "%s", g_out);
    /* refused: softmax routing, k_min above k_max, re-seeding */
    const char *bad[] = {"gma.routing=softmax", "gma.k_min=12", "gma.on_collapse=reinit"};
    const char *key[] = {"key gma.adapt_every", "key gma.k_min", "key gma.adapt_every"};
    for (int i = 0; i < 3; i++) {
        int rc = run("./bin/gmatrain --config %s --out %s --quiet --set %s", tu_path("ka.json"), tu_path("bad"), bad[i]);
        ck_assert_msg(rc == 2 && strstr(g_out, key[i]), "%s: exit %d: %s", bad[i], rc, g_out);
        ck_assert(!gma_path_exists(tu_path("bad/config.json")));
    }
}
END_TEST

/* A reader of a run whose K is adapting: latest moves to a checkpoint of another K between
 * reading the config and reading the tensors. The checkpoint is resolved once, to the
 * ckpt_N latest names then, and both reads come from it (by construction: two runs of K 6
 * and 8, the second's checkpoint moved into the first run and latest pointed at it after
 * the config was read). */
START_TEST(test_latest_moves_between_reads) {
    char a[1100], b[1100], p[2300];
    snprintf(a, sizeof a, "%s", tu_path("la"));
    snprintf(b, sizeof b, "%s", tu_path("lb"));
    tu_write(tu_path("ka.json"), KA);
    const char *sets = "--set train.steps=2 --set gma.adapt_every=0 --set train.checkpoint_every=0 --quiet --threads 1";
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --set gma.n_components=6 %s", tu_path("ka.json"), a, sets) == 0, "%s",
                  g_out);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --set gma.n_components=8 %s", tu_path("ka.json"), b, sets) == 0, "%s",
                  g_out);
    ck_assert_int_eq(run("cp -r %s/ckpt_00000002 %s/ckpt_00000009", b, a), 0);
    char dir[2048];
    Config c;
    ck_assert_msg(ckpt_open_config(a, "cpu", 1, dir, sizeof dir, &c) == 0, "%s", gma_error());
    ck_assert_msg(!strstr(dir, "latest") && strstr(dir, "ckpt_00000002"), "resolved to %s", dir);
    snprintf(p, sizeof p, "%s/latest", a); /* the writer moves latest, as ckpt_save does */
    ck_assert_int_eq(unlink(p), 0);
    ck_assert_int_eq(symlink("ckpt_00000009", p), 0);
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    Model m;
    ck_assert_msg(model_build(&m, &c) == 0, "%s", gma_error());
    model_alloc(&m, 1, 8);
    ck_assert_msg(ckpt_load(&m, NULL, dir) == 0, "the tensors of another checkpoint than the config's: %s", gma_error());
    model_free(&m);
    /* gmaeval reads RUN/latest as it is now: K 8 */
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --threads 1 --batches 1", a) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "ckpt_00000009"), "%s", g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("kadapt");
    TCase *tc = tcase_create("kadapt");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_merge_identical);
    tcase_add_test(tc, test_split_zero_offset);
    tcase_add_test(tc, test_prune_unused);
    tcase_add_test(tc, test_split_merge_cycles);
    tcase_add_test(tc, test_latest_moves_between_reads);
    tcase_add_test(tc, test_k_range);
    tcase_add_test(tc, test_train_resume);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
