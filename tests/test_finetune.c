/* test_finetune.c: the fine-tuning controls of gmatrain on a tiny recall model.
 * train.freeze: the frozen tensors keep their bits through training and a resume, the
 * others change ("!PATTERN" excepts tensors from the patterns before it), the checkpoints hold no moments for them, a pattern that matches nothing
 * is refused. train.distill: the KL to the teacher drops while distilling, weight 0 trains
 * the bits of no distillation, the head in chunks gives the KL of the whole head, a
 * teacher of another vocabulary is refused, a resume mid-window logs the kl rows of an
 * uninterrupted run, and a resume refuses a teacher trained on since the run began.
 * train.state_from: a run started with --init-from from a checkpoint and continuing its
 * state trains the bits of the uninterrupted run; without it, others; refused without
 * --init-from and at a step that leaves nothing to train; not inherited by --init-from. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_edit.h"
#include "core/safetensors.h"

static const char *g_cfg;
static const char *tiny(void) {
    if (!g_cfg) {
        tu_write(tu_path("tiny.json"), CE_TINY);
        g_cfg = strdup(tu_path("tiny.json"));
    }
    return g_cfg;
}

/* 1 when tensor name has the same bits in RUN_A/latest and RUN_B/latest (model.safetensors) */
static int same_tensor(const char *a, const char *b, const char *name) {
    char pa[1200], pb[1200];
    snprintf(pa, sizeof pa, "%s/latest/model.safetensors", a);
    snprintf(pb, sizeof pb, "%s/latest/model.safetensors", b);
    StFile fa, fb;
    ck_assert_msg(st_open(&fa, pa) == 0 && st_open(&fb, pb) == 0, "%s", gma_error());
    const StEntry *x = st_find(&fa, name), *y = st_find(&fb, name);
    ck_assert_msg(x && y, "tensor %s missing", name);
    int same = x->numel == y->numel && !memcmp(x->data, y->data, x->numel * sizeof(float));
    st_close(&fa), st_close(&fb);
    return same;
}

static int has_tensor(const char *path, const char *name) {
    StFile f;
    ck_assert_msg(st_open(&f, path) == 0, "%s", gma_error());
    int has = st_find(&f, name) != NULL;
    st_close(&f);
    return has;
}

/* The "key" numbers of the training rows of RUN/metrics.jsonl, in order, into v (at most n). */
static int metric_rows(const char *run_dir, const char *key, double *v, int n) {
    char p[1200], pat[64];
    snprintf(p, sizeof p, "%s/metrics.jsonl", run_dir);
    snprintf(pat, sizeof pat, "\"%s\":", key);
    char *text = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(text);
    int k = 0;
    for (char *q = strstr(text, pat); q && k < n; q = strstr(q + 1, pat)) v[k++] = strtod(q + strlen(pat), NULL);
    free(text);
    return k;
}

static const char *const g_frozen[] = {"tok_emb.weight", "blocks.0.mixer.q.weight", "blocks.0.mixer.gma.mu", "blocks.0.ln1.bias"};
static const char *const g_trained[] = {"blocks.1.mixer.q.weight", "blocks.1.mlp.fc.weight", "ln_f.weight"};

START_TEST(test_freeze) {
    char I[1100], F[1100];
    snprintf(I, sizeof I, "%s", tu_path("I"));
    snprintf(F, sizeof F, "%s", tu_path("F"));
    /* the initial weights: one step at learning rate 0 changes nothing */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --threads 1 --set train.steps=1 --set train.lr=0", tiny(),
                      I) == 0, "%s", g_out);
    const char *freeze = "--set 'train.freeze=tok_emb.weight,blocks.0.*'";
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --threads 1 %s", tiny(), F, freeze) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "train.freeze: 20 tensors, "), "%s", g_out);
    for (int i = 0; i < 4; i++) ck_assert_msg(same_tensor(I, F, g_frozen[i]), "frozen %s changed", g_frozen[i]);
    for (int i = 0; i < 3; i++) ck_assert_msg(!same_tensor(I, F, g_trained[i]), "%s did not train", g_trained[i]);
    char o[1200];
    snprintf(o, sizeof o, "%s/latest/optim.safetensors", F);
    ck_assert(!has_tensor(o, "m.tok_emb.weight") && !has_tensor(o, "v.blocks.0.mixer.q.weight"));
    ck_assert(has_tensor(o, "m.blocks.1.mixer.q.weight") && has_tensor(o, "v.ln_f.weight"));
    /* the run's own config.json keeps the list; a resume trains on with it */
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --threads 1 --set train.steps=6", F) == 0, "%s", g_out);
    for (int i = 0; i < 4; i++) ck_assert_msg(same_tensor(I, F, g_frozen[i]), "frozen %s changed on resume", g_frozen[i]);
    /* "!PATTERN" trains what it matches after all: "*" then "!blocks.1.mixer.q.*" trains those alone */
    char G[1100];
    snprintf(G, sizeof G, "%s", tu_path("G"));
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --threads 1 --set 'train.freeze=*,!blocks.1.mixer.q.*'", tiny(),
                      G) == 0, "%s", g_out);
    ck_assert_msg(!same_tensor(I, G, "blocks.1.mixer.q.weight"), "blocks.1.mixer.q.weight did not train");
    for (int i = 1; i < 3; i++) ck_assert_msg(same_tensor(I, G, g_trained[i]), "%s trained", g_trained[i]);
    for (int i = 0; i < 4; i++) ck_assert_msg(same_tensor(I, G, g_frozen[i]), "%s trained", g_frozen[i]);
    /* a pattern that matches no trained tensor: one line naming it, nothing written */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s/bad --quiet --set 'train.freeze=blocks.1.*,blocks.9.*'", tiny(),
                         tu_tmpdir()), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "train.freeze: pattern \"blocks.9.*\" matches no trained tensor"),
                  "%s", g_out);
    snprintf(o, sizeof o, "%s/bad", tu_tmpdir());
    ck_assert(!gma_path_exists(o));
}
END_TEST

START_TEST(test_distill) {
    char T0[1100], D[1100], N0[1100], W0[1100], C[1100];
    snprintf(T0, sizeof T0, "%s", tu_path("T0"));
    snprintf(D, sizeof D, "%s", tu_path("D"));
    snprintf(N0, sizeof N0, "%s", tu_path("N0"));
    snprintf(W0, sizeof W0, "%s", tu_path("W0"));
    snprintf(C, sizeof C, "%s", tu_path("C"));
    const char *q = "--quiet --threads 1";
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s --set train.steps=20", tiny(), T0, q) == 0, "%s", g_out);
    /* a student of another seed distils the teacher: its KL at T = 2 falls */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --threads 1 --set seed=9 --set train.steps=12 --set train.distill.teacher=%s "
                      "--set train.distill.temperature=2", tiny(), D, T0) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "distilling from ") && strstr(g_out, "at temperature 2"), "%s", g_out);
    double kl[16], ce[16];
    int n = metric_rows(D, "kl", kl, 16);
    ck_assert_int_eq(n, 12);
    ck_assert_int_eq(metric_rows(D, "ce", ce, 16), 12);
    ck_assert_msg(kl[0] > 0 && kl[11] < 0.5 * kl[0], "KL %g -> %g", kl[0], kl[11]);
    /* the head in chunks of 7 rows: the KL of the whole head */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s --set seed=9 --set train.steps=2 --set train.distill.teacher=%s "
                      "--set train.distill.temperature=2 --set model.head_chunk=7", tiny(), C, q, T0) == 0, "%s", g_out);
    double kc[4];
    ck_assert_int_eq(metric_rows(C, "kl", kc, 4), 2);
    ck_assert_msg(fabs(kc[0] - kl[0]) <= 1e-5 * kl[0] && fabs(kc[1] - kl[1]) <= 1e-4 * kl[1], "chunked KL %g %g, whole %g %g",
                  kc[0], kc[1], kl[0], kl[1]);
    /* weight 0: the teacher runs, its KL is logged, the weights are those of no distillation */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s --set train.steps=4", tiny(), N0, q) == 0, "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s --set train.steps=4 --set train.distill.teacher=%s "
                      "--set train.distill.weight=0", tiny(), W0, q, T0) == 0, "%s", g_out);
    ck_assert_int_eq(metric_rows(W0, "kl", kc, 4), 4);
    ck_assert(kc[0] > 0);
    tu_same_tensors(N0, W0, "latest/model.safetensors");
    /* a teacher of another vocabulary: one line naming both sizes */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s/v %s --set data.recall_vocab=30 --set train.distill.teacher=%s",
                         tiny(), tu_tmpdir(), q, T0), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "a vocabulary of 20 tokens (model.vocab_size), this model 30"), "%s",
                  g_out);
}
END_TEST

/* a distilling run resumed mid-window (checkpoint at step 6, rows every 4 steps) logs the
 * kl rows of an uninterrupted run, bit for bit: the window's KL sum is in the checkpoint */
START_TEST(test_distill_resume) {
    char T0[1100], U[1100], R[1100];
    snprintf(T0, sizeof T0, "%s", tu_path("RT0"));
    snprintf(U, sizeof U, "%s", tu_path("RU"));
    snprintf(R, sizeof R, "%s", tu_path("RR"));
    const char *q = "--quiet --threads 1";
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s --set train.steps=10", tiny(), T0, q) == 0, "%s", g_out);
    char sets[1400];
    snprintf(sets, sizeof sets, "%s --set seed=9 --set train.steps=8 --set train.log_every=4 --set train.checkpoint_every=3 "
             "--set train.keep_checkpoints=5 --set train.distill.teacher=%s", q, T0);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s", tiny(), U, sets) == 0, "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s", tiny(), R, sets) == 0, "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --resume %s/ckpt_00000006 %s --set train.steps=8", R, q) == 0, "%s", g_out);
    double ku[4], kr[4], cu[4], cr[4];
    ck_assert_int_eq(metric_rows(U, "kl", ku, 4), 2);
    ck_assert_int_eq(metric_rows(R, "kl", kr, 4), 2);
    ck_assert_int_eq(metric_rows(U, "ce", cu, 4), 2);
    ck_assert_int_eq(metric_rows(R, "ce", cr, 4), 2);
    ck_assert_msg(ku[1] > 0 && kr[0] == ku[0] && kr[1] == ku[1], "kl rows: uninterrupted %.17g %.17g, resumed %.17g %.17g",
                  ku[0], ku[1], kr[0], kr[1]);
    ck_assert(cr[1] == cu[1]);
}
END_TEST

/* A teacher trained on after a student started distilling from it: the student's
 * RUN/distill.json records the teacher's checkpoint, step and digest; its resume refuses the
 * moved teacher in one line naming both checkpoints, and resumes when train.distill.teacher
 * names the checkpoint it started with. */
START_TEST(test_distill_teacher_moved) {
    char T[1100], S[1100], p[1300];
    snprintf(T, sizeof T, "%s", tu_path("MT"));
    snprintf(S, sizeof S, "%s", tu_path("MS"));
    const char *q = "--quiet --threads 1";
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s --set train.steps=4 --set train.keep_checkpoints=5", tiny(), T, q) == 0,
                  "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s --set seed=9 --set train.steps=6 --set train.checkpoint_every=3 "
                      "--set train.keep_checkpoints=5 --set train.distill.teacher=%s", tiny(), S, q, T) == 0, "%s", g_out);
    snprintf(p, sizeof p, "%s/distill.json", S);
    char *rec = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(rec);
    ck_assert_msg(strstr(rec, "\"step\":\t4") && strstr(rec, "ckpt_00000004\"") && strstr(rec, "\"sha256\":\t\""), "%s", rec);
    free(rec);
    ck_assert_msg(run("./bin/gmatrain --resume %s %s --set train.steps=8", T, q) == 0, "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --resume %s/ckpt_00000003 %s", S, q), 2);
    ck_assert_msg(strstr(g_out, "ckpt_00000008 (step 8, sha256 ") && strstr(g_out, "ckpt_00000004 (step 4, sha256 ") &&
                      strstr(g_out, "distill.json") && !strchr(strchr(g_out, '\n') + 1, '\n'),
                  "want one line naming both teachers: %s", g_out);
    ck_assert_msg(run("./bin/gmatrain --resume %s/ckpt_00000003 %s --set train.distill.teacher=%s/ckpt_00000004", S, q, T) == 0,
                  "%s", g_out);
}
END_TEST

START_TEST(test_state_from) {
    char A[1100], B[1100], C[1100];
    snprintf(A, sizeof A, "%s", tu_path("SA"));
    snprintf(B, sizeof B, "%s", tu_path("SB"));
    snprintf(C, sizeof C, "%s", tu_path("SC"));
    /* one schedule over 8 steps (warmup 2, cosine decay over 6), checkpoints at 4 and 8 */
    const char *sch = "--set train.steps=8 --set train.warmup=2 --set train.schedule=cosine --set train.decay_steps=6 "
                      "--set train.checkpoint_every=4";
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --threads 1 %s", tiny(), A, sch) == 0, "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --init-from %s/ckpt_00000004 --out %s --threads 1 %s --set train.state_from=%s/ckpt_00000004",
                      A, B, sch, A) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "training state from ") && strstr(g_out, ": step 4 "), "%s", g_out);
    static const char *const names[] = {"tok_emb.weight", "blocks.0.mixer.gma.mu", "blocks.0.mixer.q.weight",
                                        "blocks.1.mixer.o.weight", "ln_f.weight"};
    for (int i = 0; i < 5; i++) ck_assert_msg(same_tensor(A, B, names[i]), "%s: not the uninterrupted run's bits", names[i]);
    /* without it: step 0, a fresh optimiser, other bits */
    ck_assert_msg(run("./bin/gmatrain --init-from %s/ckpt_00000004 --out %s --quiet --threads 1 %s --set train.steps=4", A, C,
                      sch) == 0, "%s", g_out);
    ck_assert(!same_tensor(A, C, "blocks.1.mixer.o.weight"));
    /* a run started from B does not inherit B's state_from */
    char p[1200];
    snprintf(p, sizeof p, "%s/config.json", B);
    char *js = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(js);
    ck_assert_msg(strstr(js, "ckpt_00000004"), "B's config.json records its state_from");
    free(js);
    ck_assert_msg(run("./bin/gmatrain --init-from %s --out %s/D --quiet --threads 1 --set train.steps=1", B, tu_tmpdir()) == 0,
                  "%s", g_out);
    snprintf(p, sizeof p, "%s/D/config.json", tu_tmpdir());
    js = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(js);
    ck_assert_msg(strstr(js, "\"state_from\":\t\"\""), "%s", js);
    free(js);
    /* refused: without --init-from; at a step that leaves nothing to train */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s/bad --quiet --set train.state_from=%s", tiny(), tu_tmpdir(), A), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "key train.state_from: ") && strstr(g_out, "--init-from"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --init-from %s --out %s/bad --quiet %s --set train.state_from=%s", A, tu_tmpdir(), sch,
                         A), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "is at step 8, train.steps 8 leaves nothing to train"), "%s", g_out);
    snprintf(p, sizeof p, "%s/bad", tu_tmpdir());
    ck_assert(!gma_path_exists(p));
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("finetune");
    TCase *tc = tcase_create("finetune");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_freeze);
    tcase_add_test(tc, test_distill);
    tcase_add_test(tc, test_distill_resume);
    tcase_add_test(tc, test_distill_teacher_moved);
    tcase_add_test(tc, test_state_from);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
