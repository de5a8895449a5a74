/* test_cls_train.c: the encoder classifier end to end through bin/gmatrain and bin/gmaeval
 * (run from the repository root): a tiny generated TSV task (label 1 when the text holds
 * the byte 'z') that must be learned well above chance, the best-validation checkpoint and
 * its test accuracy, gmaeval on it, exact resume of the shuffled order, and bad input (a
 * label outside the classes, an over-long sequence with truncation off, a malformed line). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/rng.h"
#include "core/safetensors.h"
#include "testutil.h"


/* n lines "label<TAB>text": texts of 6..20 letters a..h, half of them with one 'z' */
static void write_split(const char *path, int n, uint64_t seed) {
    Rng r;
    rng_seed(&r, seed);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < n; i++) {
        int len = 6 + (int)rng_below(&r, 15), lab = (int)rng_below(&r, 2), at = (int)rng_below(&r, len);
        char text[32];
        for (int k = 0; k < len; k++) text[k] = (char)('a' + rng_below(&r, 8));
        if (lab) text[at] = 'z';
        text[len] = 0;
        fprintf(f, "%d\t%s\n", lab, text);
    }
    fclose(f);
}

static const char *CFG =
    "{\"name\": \"zfind\", \"seed\": 3, \"threads\": 2,\n"
    " \"model\": {\"task\": \"classify\", \"pooling\": \"mean\", \"n_classes\": 2, \"d_model\": 32, \"n_layers\": 1,\n"
    "           \"n_heads\": 2, \"d_ff\": 64, \"max_seq_len\": 24, \"mixer\": \"gma\"},\n"
    " \"gma\": {\"n_components\": 4},\n"
    " \"train\": {\"steps\": 120, \"batch_size\": 16, \"seq_len\": 24, \"lr\": 0.003, \"warmup\": 10, \"schedule\": \"constant\",\n"
    "           \"weight_decay\": 0, \"eval_every\": 40, \"eval_batches\": 0, \"log_every\": 20, \"checkpoint_every\": 0},\n"
    " \"data\": {\"source\": \"cls\", \"task\": \"tsv\", \"path\": \"%s\"}}\n";

static void make_data(void) {
    char p[1024];
    snprintf(p, sizeof p, "%s", tu_path("zdata"));
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/train.tsv", tu_path("zdata"));
    write_split(p, 600, 1);
    snprintf(p, sizeof p, "%s/valid.tsv", tu_path("zdata"));
    write_split(p, 200, 2);
    snprintf(p, sizeof p, "%s/test.tsv", tu_path("zdata"));
    write_split(p, 200, 3);
    char cfg[4096];
    snprintf(cfg, sizeof cfg, CFG, tu_path("zdata"));
    tu_write(tu_path("z.json"), cfg);
}

static double json_number(const char *text, const char *key) {
    char k[128];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(text, k);
    ck_assert_msg(p != NULL, "no %s in %s", key, text);
    return strtod(p + strlen(k), NULL);
}

/* a JSON file with its whitespace taken out (cJSON_Print puts a tab after the colon), so
 * that "key":value can be searched for; the caller frees it */
static char *read_flat(const char *path) {
    char *t = gma_read_file(path, NULL);
    ck_assert_msg(t != NULL, "cannot read %s", path);
    for (char *q = t, *w = t;; q++) {
        if (*q != '\t' && *q != '\n' && *q != ' ') *w++ = *q;
        if (!*q) break;
    }
    return t;
}

START_TEST(test_learns_and_keeps_best) {
    make_data();
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("z.json"), tu_path("run")) == 0, "%s", g_out);
    char p[1024];
    snprintf(p, sizeof p, "%s/best/model.safetensors", tu_path("run"));
    ck_assert_msg(gma_path_exists(p), "no best checkpoint");
    snprintf(p, sizeof p, "%s/summary.json", tu_path("run"));
    char *sum = read_flat(p), *flat = sum;
    double best = json_number(flat, "best_valid_acc"), test = json_number(flat, "test_acc_at_best");
    printf("zfind: best valid acc %.3f, test acc at best %.3f\n", best, test);
    ck_assert_msg(best >= 0.8 && test >= 0.8, "did not learn: valid %.3f test %.3f (chance 0.5)", best, test);
    ck_assert_ptr_nonnull(strstr(flat, "\"report\":\"best\""));
    ck_assert(json_number(flat, "reported_test_acc") == test);
    free(sum);
    /* metrics rows: valid with acc, test from the best checkpoint */
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("run"));
    char *m = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(strstr(m, "\"split\":\"valid\",\"loss\""));
    ck_assert_ptr_nonnull(strstr(m, "\"acc\""));
    ck_assert_ptr_nonnull(strstr(m, "\"checkpoint\":\"best\""));
    free(m);
    /* gmaeval on the best checkpoint gives the same test accuracy */
    snprintf(p, sizeof p, "%s/best", tu_path("run"));
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --json %s", p, tu_path("e.json")) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "\ntest loss ") && strstr(g_out, "| acc ") && strstr(g_out, "| 200 examples |"), "%s", g_out);
    char *js = read_flat(tu_path("e.json"));
    ck_assert(fabs(json_number(js, "acc") - test) < 1e-9);
    json_number(js, "loss");
    free(js);
    /* a shard file is not classification data */
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data %s/test.tsv", p, tu_path("zdata")), 2);
}
END_TEST

/* the release's settings on the same task: learned CLS token, sinusoidal positions, no
 * projection biases, q/k/v width 16 != 32, ReLU MLP head, rsqrt schedule, weight decay
 * on every tensor, no clipping; train.report "last" reports the final model's test split */
START_TEST(test_release_settings_report_last) {
    make_data();
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set model.pooling=cls --set data.max_len=23 "
                      "--set model.pos=sinusoidal --set model.attn_bias=false --set model.qkv_dim=16 "
                      "--set model.head_hidden=64 --set model.head_act=relu --set model.dense_init=xavier_uniform "
                      "--set model.embed_std=1 --set model.cls_std=0 --set train.schedule=rsqrt --set train.weight_decay=0.01 "
                      "--set train.decay_embeddings=true --set train.decay_norms=true --set train.decay_biases=true "
                      "--set train.grad_clip=0 --set train.report=last --set model.mixer=sdpa --set train.eval_drop_last=true",
                      tu_path("z.json"), tu_path("lrun")) == 0,
                  "%s", g_out);
    char p[1024];
    snprintf(p, sizeof p, "%s/summary.json", tu_path("lrun"));
    char *sum = read_flat(p);
    const char *fin = strstr(sum, "\"test\":{");
    ck_assert_ptr_nonnull(fin);
    double last = json_number(fin, "acc"), reported = json_number(sum, "reported_test_acc");
    printf("zfind, release settings: test acc of the last model %.3f\n", last);
    ck_assert_ptr_nonnull(strstr(sum, "\"report\":\"last\""));
    ck_assert(reported == last);
    ck_assert_msg(last >= 0.8, "did not learn with the release settings: %.3f (chance 0.5)", last);
    ck_assert_int_eq((int)json_number(sum, "reported_step"), 120);
    /* train.eval_drop_last: 200 examples in batches of 16 score 12 whole batches, 192 */
    ck_assert_int_eq((int)json_number(fin, "examples"), 192);
    free(sum);
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("lrun"));
    char *m = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_msg(strstr(m, "\"split\":\"valid\"") && !strstr(m, "\"examples\":200"), "%s", m);
    ck_assert_ptr_nonnull(strstr(m, "\"examples\":192"));
    free(m);
    /* gmaeval --drop-last scores the trainer's 192 test examples of the final model */
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --drop-last", tu_path("lrun")) == 0, "%s", g_out);
    char want[64];
    snprintf(want, sizeof want, "| acc %.4f | 192 examples |", last);
    ck_assert_msg(strstr(g_out, want), "%s (want %s)", g_out, want);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --drop-last --batch 256", tu_path("lrun")), 2);
    ck_assert_msg(strstr(g_out, "gmaeval: --drop-last: the test split of ") && strstr(g_out, "fewer than one batch of 256"),
                  "%s", g_out);
    /* a split smaller than one batch has nothing to score: one line naming the key */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet --set train.eval_drop_last=true "
                         "--set train.batch_size=256 --set train.steps=2 --set train.eval_every=1",
                         tu_path("z.json"), tu_path("lrun2")), 2);
    ck_assert_msg(strstr(g_out, "key train.eval_drop_last: the valid split of ") &&
                      strstr(g_out, " holds 200 examples, fewer than one batch of 256"), "%s", g_out);
    snprintf(p, sizeof p, "%s/lrun2", tu_path(""));
    ck_assert_msg(!gma_path_exists(p), "a refused run left %s", p);
}
END_TEST

START_TEST(test_resume_exact) {
    make_data();
    /* 600 examples / 16 = 37.5 batches an epoch: 50 steps cross an epoch boundary */
    const char *s = "--set train.steps=50 --set train.eval_every=0 --set model.pooling=cls --set train.seq_len=24 --set data.max_len=23";
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet %s", tu_path("z.json"), tu_path("full"), s) == 0, "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet %s --set train.steps=20", tu_path("z.json"), tu_path("half"), s) == 0,
                  "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=50", tu_path("half")) == 0, "%s", g_out);
    tu_same_tensors(tu_path("full"), tu_path("half"), "latest/model.safetensors");
}
END_TEST

START_TEST(test_bad_input) {
    make_data();
    char p[1024];
    /* a label outside the classes: file and line */
    snprintf(p, sizeof p, "%s/valid.tsv", tu_path("zdata"));
    FILE *f = fopen(p, "a");
    fprintf(f, "2\tabc\n");
    fclose(f);
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("z.json"), tu_path("bad1")), 2);
    ck_assert_msg(strstr(g_out, "valid.tsv:201"), "%s", g_out);
    /* a malformed line */
    write_split(p, 200, 2);
    f = fopen(p, "a");
    fprintf(f, "no tab on this line\n");
    fclose(f);
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("z.json"), tu_path("bad2")), 2);
    ck_assert_msg(strstr(g_out, "valid.tsv:201"), "%s", g_out);
    write_split(p, 200, 2);
    /* over-long sequences: refused with truncation off, counted with a warning otherwise */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet --set data.truncate=false --set data.max_len=10",
                         tu_path("z.json"), tu_path("bad3")),
                     2);
    ck_assert_msg(strstr(g_out, "train.tsv"), "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --set train.steps=2 --set data.max_len=10", tu_path("z.json"),
                      tu_path("trunc")) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "warning: ") && strstr(g_out, "train sequences truncated to data.max_len = 10"), "%s", g_out);
    /* a missing folder */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet --set data.path=%s/nothing", tu_path("z.json"),
                         tu_path("bad4"), tu_tmpdir()),
                     2);
    /* classify without classification data, and too few classes for the data */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet --set data.source=recall", tu_path("z.json"), tu_path("bad5")), 2);
    ck_assert_msg(strstr(g_out, "data.source"), "%s", g_out);
    /* padding as content needs fixed-length batches */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet --set model.key_padding_mask=false", tu_path("z.json"),
                         tu_path("bad6")), 2);
    ck_assert_msg(strstr(g_out, "key model.key_padding_mask: false makes padding content, so it needs data.pad_full true"),
                  "%s", g_out);
}
END_TEST

/* the release's linear attention without a padding mask, over batches padded to data.max_len
 * (lengths 6-20 here): it still learns the task, and gmaeval pads as the trainer did */
START_TEST(test_padding_as_content) {
    make_data();
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set model.mixer=linear --set model.key_padding_mask=false "
                      "--set data.pad_full=true --set model.pooling=cls --set data.max_len=23",
                      tu_path("z.json"), tu_path("prun")) == 0, "%s", g_out);
    char p[1024];
    snprintf(p, sizeof p, "%s/summary.json", tu_path("prun"));
    char *sum = read_flat(p);
    const char *fin = strstr(sum, "\"test\":{");
    ck_assert_ptr_nonnull(fin);
    double acc = json_number(fin, "acc");
    printf("zfind, linear attention with padding as content: test acc %.3f\n", acc);
    ck_assert_msg(acc >= 0.8, "did not learn: %.3f (chance 0.5)", acc);
    free(sum);
    snprintf(p, sizeof p, "%s/latest", tu_path("prun"));
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --batch 7", p) == 0, "%s", g_out);
    char want[64];
    snprintf(want, sizeof want, "| acc %.4f |", acc);
    ck_assert_msg(strstr(g_out, want), "gmaeval at another batch size: %s (want %s)", g_out, want);
}
END_TEST

/* two-sequence task through the retrieval loader: label 1 when the two texts are equal */
static void write_pairs(const char *path, int n, uint64_t seed) {
    Rng r;
    rng_seed(&r, seed);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "label\tid1\tid2\ttext1\ttext2\n");
    for (int i = 0; i < n; i++) {
        char a[16], b[16];
        int la = 4 + (int)rng_below(&r, 8), lb = 4 + (int)rng_below(&r, 8), lab = (int)rng_below(&r, 2);
        for (int k = 0; k < la; k++) a[k] = (char)('a' + rng_below(&r, 6));
        a[la] = 0;
        for (int k = 0; k < lb; k++) b[k] = (char)('a' + rng_below(&r, 6));
        b[lb] = 0;
        fprintf(f, "%d\tp%d\tq%d\tb'%s'\tb'%s'\n", lab, i, i, a, lab ? a : b);
    }
    fclose(f);
}

START_TEST(test_two_sequences) {
    char p[1024];
    mkdir(tu_path("pairs"), 0755);
    static const char *files[3] = {"train", "eval", "test"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/new_aan_pairs.%s.tsv", tu_path("pairs"), files[i]);
        write_pairs(p, i ? 200 : 800, 10 + i);
    }
    char cfg[4096];
    snprintf(cfg, sizeof cfg, CFG, tu_path("pairs"));
    tu_write(tu_path("pairs.json"), cfg);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set data.task=retrieval --set train.steps=200 "
                      "--set train.eval_every=50 --set model.pooling=cls --set data.max_len=16 --set train.seq_len=17",
                      tu_path("pairs.json"), tu_path("prun")) == 0,
                  "%s", g_out);
    snprintf(p, sizeof p, "%s/summary.json", tu_path("prun"));
    char *sum = read_flat(p);
    double test = json_number(sum, "test_acc_at_best");
    printf("pairs: test acc at best %.3f\n", test);
    ck_assert_msg(test >= 0.75, "two-sequence task not learned: %.3f (chance 0.5)", test);
    free(sum);
    snprintf(p, sizeof p, "%s/best/model.safetensors", tu_path("prun"));
    StFile f;
    ck_assert_msg(st_open(&f, p) == 0, "%s", gma_error());
    ck_assert_ptr_nonnull(st_find(&f, "head.mlp.fc.weight"));
    ck_assert_ptr_nonnull(st_find(&f, "cls_token"));
    st_close(&f);
}
END_TEST

/* a classifier's sequences and the CLS slot within the window: checked by the task
 * (train/cls_task.c) with the slots pooling adds (pool_slots), naming the keys */
START_TEST(test_window_holds_sequence_and_slot) {
    Config c;
    cfg_defaults(&c);
    tu_apply_sets(&c, "model.task=classify;data.source=cls;data.path=x;train.seq_len=32;model.max_seq_len=32");
    ck_assert_int_eq(cfg_set(&c, "data.max_len=32"), 0);
    ck_assert_msg(cfg_validate(&c) == 0, "%s", gma_error()); /* mean pooling: no slot */
    ck_assert_int_eq(cfg_set(&c, "model.pooling=cls"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "key data.max_len: 32 plus the CLS slot does not fit train.seq_len = 32"), "%s",
                  gma_error());
    ck_assert_int_eq(cfg_set(&c, "data.max_len=31"), 0);
    ck_assert_msg(cfg_validate(&c) == 0, "%s", gma_error());
    ck_assert_int_eq(cfg_set(&c, "data.max_len=0"), 0);
    ck_assert_int_eq(cfg_set(&c, "train.seq_len=1"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "key train.seq_len: needs at least 2 with model.pooling \"cls\""), "%s", gma_error());
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("classifier training end to end");
    TCase *tc = tcase_create("cls_train");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_learns_and_keeps_best);
    tcase_add_test(tc, test_release_settings_report_last);
    tcase_add_test(tc, test_resume_exact);
    tcase_add_test(tc, test_bad_input);
    tcase_add_test(tc, test_padding_as_content);
    tcase_add_test(tc, test_two_sequences);
    tcase_add_test(tc, test_window_holds_sequence_and_slot);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
