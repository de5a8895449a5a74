/* test_lra_data.c: the LRA classification data: ListOps tokenizer, evaluator, generator
 * and TSV files; IMDB text and CIFAR-10 image from small tar.gz archives built here; the
 * AAN retrieval TSV; generic JSONL/TSV; and every kind of bad input.
 */
#include "testutil.h"
#include "data/cls/clsdata.h"
#include "data/cls/lra_listops.h"
#include "cli/args/lra_generate.h"
#include "train/cls_task.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "archive_build.h"

/* ---------------------------------------------------------------- helpers */

static void write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

static void mkdirs(const char *path) { ck_assert_int_eq(gma_mkdirs(path), 0); }

/* tu_path(name), created: the folder of one test's files. */
static const char *fresh_dir(const char *name) {
    const char *dir = tu_path(name);
    mkdirs(dir);
    return dir;
}

/* dir/name in p (1200 bytes); returns p. */
static char *join(char *p, const char *dir, const char *name) {
    snprintf(p, 1200, "%s/%s", dir, name);
    return p;
}

/* Write text to root/rel, creating the folders on the way. */
static void write_tree(const char *root, const char *rel, const char *text) {
    char p[1200], dir[1200];
    join(p, root, rel);
    snprintf(dir, sizeof dir, "%s", p);
    *strrchr(dir, '/') = 0;
    mkdirs(dir);
    tu_write(p, text);
}

static void run_ok(const char *cmd) {
    char out[2048];
    int rc = tu_run(cmd, out, sizeof out);
    ck_assert_msg(rc == 0, "%s: %s", cmd, out);
}

/* The tar.gz archive arc of folder top inside root. */
static void tar_gz(const char *root, const char *top, const char *arc) {
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "cd '%s' && tar czf '%s' %s", root, arc, top);
    run_ok(cmd);
}

/* Tokenize and evaluate a Source string. */
static int eval_str(const char *s, int *depth) {
    uint32_t tok[256];
    long n = listops_tokenize(s, strlen(s), tok, 256);
    if (n < 0) return -2;
    return listops_eval(tok, (size_t)n, depth);
}

/* The bytes of example i, sequence s, as a string (tokens - 1). */
static const char *seq_str(const ClsDataset *d, int i, int s) {
    static char buf[4096];
    size_t n;
    const uint32_t *t = clsdata_seq(d, i, s, &n);
    ck_assert_uint_lt(n, sizeof buf);
    for (size_t k = 0; k < n; k++) buf[k] = (char)(t[k] - 1);
    buf[n] = 0;
    return buf;
}

static int find_seq(const ClsDataset *d, const char *text) {
    for (int i = 0; i < d->n; i++)
        if (strcmp(seq_str(d, i, 0), text) == 0) return i;
    return -1;
}

static void assert_error_has(const char *what) {
    ck_assert_msg(strstr(gma_error(), what) != NULL, "error '%s' does not name '%s'", gma_error(), what);
}

static void load_ok(ClsDataset *d, const char *task, const char *path, const char *split, const ClsOptions *o) {
    ck_assert_msg(clsdata_load(d, task, path, split, o) == 0, "%s %s: %s", task, split, gma_error());
}

/* Loading fails with an error that names err1 and, when not NULL, err2. */
static void load_fails(const char *task, const char *path, const char *split, const ClsOptions *o, const char *err1,
                       const char *err2) {
    ClsDataset d;
    ck_assert_int_eq(clsdata_load(&d, task, path, split, o), -1);
    assert_error_has(err1);
    if (err2) assert_error_has(err2);
}

/* The shape (n examples of n_seq sequences, n_classes, vocab) and every dataset
 * invariant: offsets, token range, labels. */
static void check_dataset(const ClsDataset *d, int n, int n_seq, int n_classes, uint32_t vocab) {
    ck_assert_int_eq(d->n, n);
    ck_assert_int_eq(d->n_seq, n_seq);
    ck_assert_int_eq(d->n_classes, n_classes);
    ck_assert_uint_eq(d->vocab, vocab);
    ck_assert_uint_eq(d->off[0], 0);
    for (int i = 0; i < d->n * d->n_seq; i++) ck_assert_uint_le(d->off[i], d->off[i + 1]);
    for (uint64_t k = 0; k < d->off[(size_t)d->n * d->n_seq]; k++) {
        ck_assert_uint_ge(d->tok[k], 1);
        ck_assert_uint_lt(d->tok[k], d->vocab);
    }
    for (int i = 0; i < d->n; i++) {
        ck_assert_int_ge(d->label[i], 0);
        ck_assert_int_lt(d->label[i], d->n_classes);
    }
}

/* ---------------------------------------------------------------- ListOps */

START_TEST(t_listops_tokenize) {
    uint32_t tok[16];
    const char *s = "( ( ( [MAX 2 ) 9 ) ] )";
    long n = listops_tokenize(s, strlen(s), tok, 16);
    ck_assert_int_eq(n, 4);
    ck_assert_uint_eq(tok[0], LISTOPS_MAX);
    ck_assert_uint_eq(tok[1], LISTOPS_DIGIT0 + 2);
    ck_assert_uint_eq(tok[2], LISTOPS_DIGIT0 + 9);
    ck_assert_uint_eq(tok[3], LISTOPS_END);
    s = "[MIN [MED [SM 0 ] ] ]";
    ck_assert_int_eq(listops_tokenize(s, strlen(s), tok, 16), 7);
    ck_assert_uint_eq(tok[0], LISTOPS_MIN);
    ck_assert_uint_eq(tok[1], LISTOPS_MED);
    ck_assert_uint_eq(tok[2], LISTOPS_SM);
    ck_assert_uint_eq(tok[3], LISTOPS_DIGIT0);
    s = "[MAX 12 ]";
    ck_assert_int_eq(listops_tokenize(s, strlen(s), tok, 16), -1);
    assert_error_has("'12' at byte 5");
    s = "[FIRST 1 ]";
    ck_assert_int_eq(listops_tokenize(s, strlen(s), tok, 16), -1);
    ck_assert_uint_eq(clsdata_task_vocab("listops"), LISTOPS_VOCAB);
}
END_TEST

START_TEST(t_listops_eval) {
    int depth = 0;
    ck_assert_int_eq(eval_str("7", &depth), 7);
    ck_assert_int_eq(depth, 1);
    ck_assert_int_eq(eval_str("( ( ( [MAX 2 ) 9 ) ] )", &depth), 9);
    ck_assert_int_eq(depth, 2);
    ck_assert_int_eq(eval_str("[MIN 3 [MAX 2 9 ] 1 ]", &depth), 1);
    ck_assert_int_eq(depth, 3);
    ck_assert_int_eq(eval_str("[MIN 3 [MAX 2 9 ] 4 ]", NULL), 3);
    ck_assert_int_eq(eval_str("[MED 3 8 1 ]", NULL), 3);
    ck_assert_int_eq(eval_str("[MED 1 2 ]", NULL), 1);       /* int(1.5) */
    ck_assert_int_eq(eval_str("[MED 1 4 ]", NULL), 2);       /* int(2.5) */
    ck_assert_int_eq(eval_str("[MED 9 2 6 4 ]", NULL), 5);   /* (4 + 6) / 2 */
    ck_assert_int_eq(eval_str("[MED 7 7 0 0 7 ]", NULL), 7);
    ck_assert_int_eq(eval_str("[SM 9 8 7 ]", NULL), 4);      /* 24 mod 10 */
    ck_assert_int_eq(eval_str("[SM [MAX 5 6 ] [MIN 7 2 ] 9 ]", NULL), 7);
    ck_assert_int_eq(eval_str("[MAX [SM 5 5 ] [MED 0 1 0 ] [MIN 8 [SM 3 4 ] ] ]", &depth), 7);
    ck_assert_int_eq(depth, 4);
    /* LRA's own example row: ( ( ( ( ( [MAX 2 ) 9 ) ( ( ( [MED 5 ) 7 ) ] ) ) ] ) */
    ck_assert_int_eq(eval_str("( ( ( ( [MAX 2 ) 9 ) ( ( ( [MED 5 ) 7 ) ] ) ) ] )", NULL), 9);
    ck_assert_int_eq(eval_str("[MAX ]", NULL), -1);
    assert_error_has("without arguments");
    ck_assert_int_eq(eval_str("[MAX 1 2", NULL), -1);
    assert_error_has("not closed");
    ck_assert_int_eq(eval_str("1 2", NULL), -1);
    ck_assert_int_eq(eval_str("]", NULL), -1);
    ck_assert_int_eq(eval_str("", NULL), -1);
}
END_TEST

START_TEST(t_listops_to_string) {
    uint32_t tok[64];
    char s[512];
    const char *src = "[MAX 2 9 ]";
    long n = listops_tokenize(src, strlen(src), tok, 64);
    ck_assert_int_eq(listops_to_string(tok, (size_t)n, s, sizeof s), (long)strlen("( ( ( [MAX 2 ) 9 ) ] )"));
    ck_assert_str_eq(s, "( ( ( [MAX 2 ) 9 ) ] )");
    src = "[MIN 3 [SM 1 2 ] ]";
    n = listops_tokenize(src, strlen(src), tok, 64);
    ck_assert_int_ge(listops_to_string(tok, (size_t)n, s, sizeof s), 0);
    ck_assert_str_eq(s, "( ( ( [MIN 3 ) ( ( ( [SM 1 ) 2 ) ] ) ) ] )");
    ck_assert_int_eq(listops_to_string(tok, (size_t)n, s, 10), -1); /* does not fit */
}
END_TEST

START_TEST(t_listops_generator) {
    ListopsGenOptions o;
    listops_gen_defaults(&o);
    ck_assert_int_eq(o.n_train, 96000);
    ck_assert_int_eq(o.n_valid, 2000);
    ck_assert_int_eq(o.n_test, 2000);
    o.seed = 7;
    ListopsGen a, b, c;
    listops_gen_init(&a, &o);
    listops_gen_init(&b, &o);
    o.seed = 8;
    listops_gen_init(&c, &o);
    static uint32_t ta[2000], tb[2000], tc[2000], back[2000];
    static char str[40000];
    int label_seen[10] = {0}, op_seen[5] = {0}, same_as_c = 0, max_depth = 0;
    long total = 0;
    const int N = 200;
    for (int i = 0; i < N; i++) {
        size_t na = listops_gen_next(&a, ta, 2000), nb = listops_gen_next(&b, tb, 2000);
        size_t nc = listops_gen_next(&c, tc, 2000);
        ck_assert_uint_eq(na, nb);
        ck_assert_int_eq(memcmp(ta, tb, na * sizeof *ta), 0);
        if (na == nc && memcmp(ta, tc, na * sizeof *ta) == 0) same_as_c++;
        ck_assert_uint_gt(na, 500);
        ck_assert_uint_lt(na, 2000);
        total += (long)na;
        int depth;
        int v = listops_eval(ta, na, &depth);
        ck_assert_int_ge(v, 0);
        ck_assert_int_le(v, 9);
        ck_assert_int_le(depth, 10);
        max_depth = GMA_MAX(max_depth, depth);
        label_seen[v]++;
        ck_assert_uint_ge(ta[0], LISTOPS_MIN); /* the root is an operator */
        ck_assert_uint_le(ta[0], LISTOPS_SM);
        op_seen[ta[0]]++;
        /* each operator has 2..10 arguments */
        int args[16] = {0}, sp = 0;
        for (size_t k = 0; k < na; k++) {
            uint32_t t = ta[k];
            if (t != LISTOPS_END && sp > 0) args[sp - 1]++;
            if (t >= LISTOPS_MIN && t <= LISTOPS_SM) args[sp++] = 0;
            if (t == LISTOPS_END) {
                sp--;
                ck_assert_int_ge(args[sp], 2);
                ck_assert_int_le(args[sp], 10);
            }
        }
        /* LRA string round trip */
        long sl = listops_to_string(ta, na, str, sizeof str);
        ck_assert_int_gt(sl, 0);
        ck_assert_int_eq(listops_tokenize(str, (size_t)sl, back, 2000), (long)na);
        ck_assert_int_eq(memcmp(ta, back, na * sizeof *ta), 0);
    }
    ck_assert_int_eq(same_as_c, 0);
    for (int k = 1; k <= 4; k++) ck_assert_int_gt(op_seen[k], 0);
    int distinct = 0;
    for (int v = 0; v < 10; v++) distinct += label_seen[v] > 0;
    ck_assert_int_ge(distinct, 8);
    ck_assert_int_ge(max_depth, 8); /* long trees reach deep */
    ck_assert_int_gt(total / N, 600);
    ck_assert_int_lt(total / N, 1900);
}
END_TEST

static char *read_all(const char *path) {
    size_t n;
    char *s = gma_read_file(path, &n);
    ck_assert_msg(s != NULL, "%s", gma_error());
    return s;
}

START_TEST(t_listops_files) {
    const char *dir = tu_path("listops_gen");
    char *argv[] = {"generate", "listops", "--out", (char *)dir, "--train", "40", "--valid", "7",
                    "--test", "5", "--seed", "3", "--min-len", "60", "--max-len", "300", NULL};
    ck_assert_int_eq(lra_generate_main(16, argv), 0);
    char p[1200];
    char *first = read_all(join(p, dir, "basic_train.tsv"));
    ck_assert_int_eq(strncmp(first, "Source\tTarget\n( ", 16), 0);
    /* same seed, same bytes */
    const char *dir2 = tu_path("listops_gen2");
    argv[3] = (char *)dir2;
    ck_assert_int_eq(lra_generate_main(16, argv), 0);
    char *second = read_all(join(p, dir2, "basic_train.tsv"));
    ck_assert_str_eq(first, second);
    free(first);
    free(second);

    const char *splits[3] = {"train", "valid", "test"};
    int want[3] = {40, 7, 5};
    uint64_t hashes[52];
    int nh = 0;
    for (int s = 0; s < 3; s++) {
        ClsDataset d;
        load_ok(&d, "listops", dir, splits[s], NULL);
        check_dataset(&d, want[s], 1, 10, 16);
        ck_assert_int_eq(d.truncated, 0);
        for (int i = 0; i < d.n; i++) {
            size_t n;
            const uint32_t *t = clsdata_seq(&d, i, 0, &n);
            ck_assert_uint_gt(n, 60);
            ck_assert_uint_lt(n, 300);
            ck_assert_int_eq(listops_eval(t, n, NULL), d.label[i]);
            uint64_t h = 1469598103934665603ull;
            for (size_t k = 0; k < n; k++) h = (h ^ t[k]) * 1099511628211ull;
            for (int j = 0; j < nh; j++) ck_assert_msg(hashes[j] != h, "duplicate expression");
            hashes[nh++] = h;
        }
        clsdata_free(&d);
    }
    /* usage errors */
    char *bad1[] = {"generate", "listops", "--train", "5", NULL};
    ck_assert_int_eq(lra_generate_main(4, bad1), 2); /* no --out */
    char *bad2[] = {"generate", "listops", "--out", (char *)dir, "--train", "-5", NULL};
    ck_assert_int_eq(lra_generate_main(6, bad2), 2);
    char *bad3[] = {"generate", "pathfinder", "--out", (char *)dir, NULL};
    ck_assert_int_eq(lra_generate_main(4, bad3), 2);
    char *bad4[] = {"generate", "listops", "--out", (char *)dir, "--bogus", "1", NULL};
    ck_assert_int_eq(lra_generate_main(6, bad4), 2);
    /* only ten distinct one-digit expressions exist: refused, not an endless loop */
    char *tiny[] = {"generate", "listops", "--out", (char *)dir, "--train", "30", "--min-len", "0",
                    "--max-len", "2", NULL};
    ck_assert_int_eq(lra_generate_main(10, tiny), 1);
    assert_error_has("no new expression");
}
END_TEST

START_TEST(t_listops_official_format) {
    /* CRLF line ends as Python's csv module writes them, Target column first */
    const char *dir = fresh_dir("listops_crlf");
    char p[1200];
    tu_write(join(p, dir, "basic_test.tsv"), "Target\tSource\r\n"
                "9\t( ( ( ( [MAX 2 ) 9 ) ( ( ( [MED 5 ) 7 ) ] ) ) ] )\r\n"
                "\r\n"
                "4\t( ( ( ( [SM 9 ) 8 ) 7 ) ] )\r\n");
    ClsDataset d;
    load_ok(&d, "listops", dir, "test", NULL);
    ck_assert_int_eq(d.n, 2);
    ck_assert_int_eq(d.label[0], 9);
    ck_assert_int_eq(d.label[1], 4);
    size_t n;
    const uint32_t *t = clsdata_seq(&d, 0, 0, &n);
    ck_assert_uint_eq(n, 8);
    ck_assert_uint_eq(t[0], LISTOPS_MAX);
    ck_assert_uint_eq(t[7], LISTOPS_END);
    clsdata_free(&d);
    /* truncation: counted with truncate = 1, refused with truncate = 0 */
    ClsOptions o = clsdata_default_options();
    o.max_len = 6;
    load_ok(&d, "listops", dir, "test", &o);
    ck_assert_int_eq(d.truncated, 1);
    t = clsdata_seq(&d, 0, 0, &n);
    ck_assert_uint_eq(n, 6);
    clsdata_free(&d);
    o.truncate = 0;
    ck_assert_int_eq(clsdata_load(&d, "listops", dir, "test", &o), -1);
    assert_error_has("basic_test.tsv:2");
    assert_error_has("max_len 6");
    ck_assert_int_eq(d.n, 0);
    ck_assert_ptr_null(d.tok);
}
END_TEST

START_TEST(t_listops_bad) {
    const char *dir = fresh_dir("listops_bad");
    char p[1200];
    join(p, dir, "basic_train.tsv");
    struct { const char *text, *err1, *err2; } cases[] = {
        {"Source\tTarget\n[MAX 1 2 ]\t2\n[MAX 1 2 ]\t2\textra\n", "basic_train.tsv:3", "3 TAB-separated fields"},
        {"Source\tTarget\n[MAX 1 2 ]\t12\n", "basic_train.tsv:2", "not a value 0..9"},
        {"Source\tTarget\n[MAX 1 2 ]\tx\n", "basic_train.tsv:2", "Target"},
        {"Source\tTarget\n[MAX 1 [MIN 2 ]\t2\n", "basic_train.tsv:2", "not closed"},
        {"Source\tTarget\n[MAX 1 two ]\t2\n", "basic_train.tsv:2", "unknown ListOps token 'two'"},
        {"[MAX 1 2 ]\t2\n", "basic_train.tsv:1", "header"},
        {"", "basic_train.tsv", "empty file"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tu_write(p, cases[c].text);
        load_fails("listops", dir, "train", NULL, cases[c].err1, cases[c].err2);
    }
    load_fails("listops", dir, "valid", NULL, "basic_val.tsv", NULL);
    load_fails("listops", dir, "dev", NULL, "unknown split 'dev'", NULL);
    load_fails("pathx", dir, "train", NULL, "unknown classification task 'pathx'", NULL);
    load_fails("listops", tu_path("nowhere"), "train", NULL, "nowhere", NULL);
}
END_TEST

/* ---------------------------------------------------------------- IMDB text */

static const char *imdb_archive(void) {
    static char path[1200];
    if (path[0]) return path;
    const char *root = tu_path("imdb");
    write_tree(root, "aclImdb/README", "readme");
    write_tree(root, "aclImdb/imdb.vocab", "the\nand\n");
    write_tree(root, "aclImdb/train/labeledBow.feat", "0 0:1\n");
    write_tree(root, "aclImdb/train/urls_pos.txt", "http://x\n");
    write_tree(root, "aclImdb/train/pos/0_9.txt", "Great film.");
    write_tree(root, "aclImdb/train/pos/1_7.txt", "Loved it <br /> a lot");
    write_tree(root, "aclImdb/train/pos/950_8.txt", "valid pos");
    write_tree(root, "aclImdb/train/neg/3_2.txt", "Dull.\xff");
    write_tree(root, "aclImdb/train/neg/1905_1.txt", "valid neg");
    write_tree(root, "aclImdb/train/unsup/0_0.txt", "unlabelled");
    write_tree(root, "aclImdb/test/pos/0_10.txt", "test pos");
    write_tree(root, "aclImdb/test/neg/1_3.txt", "test neg, a longer review");
    join(path, tu_tmpdir(), "aclImdb_v1.tar.gz");
    tar_gz(root, "aclImdb", path);
    return path;
}

START_TEST(t_text_imdb) {
    const char *arc = imdb_archive();
    ClsDataset d;
    load_ok(&d, "text", arc, "train", NULL);
    check_dataset(&d, 3, 1, 2, 257);
    int i = find_seq(&d, "Great film.");
    ck_assert_int_ge(i, 0);
    ck_assert_int_eq(d.label[i], 1);
    i = find_seq(&d, "Loved it <br /> a lot");
    ck_assert_int_ge(i, 0);
    ck_assert_int_eq(d.label[i], 1);
    i = find_seq(&d, "Dull.\xff");
    ck_assert_int_ge(i, 0);
    ck_assert_int_eq(d.label[i], 0);
    size_t n;
    const uint32_t *t = clsdata_seq(&d, i, 0, &n);
    ck_assert_uint_eq(n, 6);
    ck_assert_uint_eq(t[0], (uint32_t)'D' + 1);
    ck_assert_uint_eq(t[5], 256); /* byte 0xff */
    clsdata_free(&d);

    load_ok(&d, "text", arc, "valid", NULL);
    ck_assert_int_eq(d.n, 2);
    ck_assert_int_eq(d.label[find_seq(&d, "valid pos")], 1);
    ck_assert_int_eq(d.label[find_seq(&d, "valid neg")], 0);
    clsdata_free(&d);

    /* the release's split: valid is test/, train all of train/ */
    ClsOptions rel = clsdata_default_options();
    rel.text_valid_test = 1;
    load_ok(&d, "text", arc, "train", &rel);
    ck_assert_int_eq(d.n, 5);
    ck_assert_int_ge(find_seq(&d, "valid pos"), 0);
    ck_assert_int_ge(find_seq(&d, "Great film."), 0);
    clsdata_free(&d);
    load_ok(&d, "text", arc, "valid", &rel);
    ck_assert_int_eq(d.n, 2);
    ck_assert_int_eq(d.label[find_seq(&d, "test pos")], 1);
    ck_assert_int_eq(d.label[find_seq(&d, "test neg, a longer review")], 0);
    clsdata_free(&d);

    ClsOptions o = clsdata_default_options();
    o.max_len = 10;
    load_ok(&d, "text", arc, "test", &o);
    ck_assert_int_eq(d.n, 2);
    ck_assert_int_eq(d.truncated, 1);
    ck_assert_int_eq(d.label[find_seq(&d, "test pos")], 1);
    ck_assert_int_eq(d.label[find_seq(&d, "test neg, ")], 0);
    clsdata_free(&d);
    o.truncate = 0;
    load_fails("text", arc, "test", &o, "aclImdb/test/neg/1_3.txt", "longer than max_len 10");

    /* the training task with the release's split reads test/ once: valid and test share it */
    Config c = tu_tiny_config("gma");
    char sets[1400];
    snprintf(sets, sizeof sets, "model.task=classify;data.source=cls;data.task=text;data.path=%s;data.text_valid=test;"
             "train.seq_len=64;model.max_seq_len=64", arc);
    tu_apply_sets(&c, sets);
    ClsTask task;
    ck_assert_msg(clstask_open(&task, &c, 7, 1, NULL) == 0, "%s", gma_error());
    ck_assert(task.test_shares_valid && task.split[2].tok == task.split[1].tok && task.split[2].n == 2);
    ck_assert_int_ge(find_seq(&task.split[2], "test pos"), 0);
    clstask_close(&task);
    /* held-out valid: three separate splits */
    tu_apply_sets(&c, "data.text_valid=heldout");
    ck_assert_msg(clstask_open(&task, &c, 7, 1, NULL) == 0, "%s", gma_error());
    ck_assert(!task.test_shares_valid && task.split[2].tok != task.split[1].tok);
    ck_assert_int_ge(find_seq(&task.split[1], "valid pos"), 0);
    ck_assert_int_ge(find_seq(&task.split[2], "test pos"), 0);
    clstask_close(&task);
}
END_TEST

START_TEST(t_text_bad_archive) {
    const char *root = tu_path("notimdb");
    write_tree(root, "reviews/train/pos/0_9.txt", "wrong layout");
    char arc[1200];
    tar_gz(root, "reviews", join(arc, tu_tmpdir(), "notimdb.tar.gz"));
    load_fails("text", arc, "train", NULL, "notimdb.tar.gz", "no entries aclImdb/train/neg/*.txt");
    /* only pos present */
    const char *root2 = tu_path("halfimdb");
    write_tree(root2, "aclImdb/test/pos/0_9.txt", "only pos");
    tar_gz(root2, "aclImdb", join(arc, tu_tmpdir(), "halfimdb.tar.gz"));
    load_fails("text", arc, "test", NULL, "aclImdb/test/neg", NULL);
    /* not an archive at all */
    const char *junk = tu_path("junk.tar.gz");
    tu_write(junk, "this is not an archive\n");
    load_fails("text", junk, "test", NULL, "junk.tar.gz", NULL);
}
END_TEST

/* ---------------------------------------------------------------- CIFAR-10 image */

#define REC 3073

/* Record: label, and every pixel of plane c (R, G, B) set to rgb[c] (pixel 0 of R to p0). */
static void cifar_record(uint8_t *rec, int label, const uint8_t rgb[3], uint8_t p0) {
    rec[0] = (uint8_t)label;
    for (int c = 0; c < 3; c++) memset(rec + 1 + 1024 * c, rgb[c], 1024);
    rec[1] = p0;
}

static void cifar_batch(const char *dir, const char *name, int nrec, int label0, int bad_label_at) {
    uint8_t *buf = malloc((size_t)nrec * REC);
    for (int r = 0; r < nrec; r++) {
        uint8_t rgb[3] = {(uint8_t)(10 * r), (uint8_t)(20 * r), (uint8_t)(30 * r)};
        cifar_record(buf + (size_t)r * REC, r == bad_label_at ? 10 : (label0 + r) % 10, rgb, 255);
    }
    char p[1200];
    write_bytes(join(p, dir, name), buf, (size_t)nrec * REC);
    free(buf);
}

static void cifar_archive(const char *name, int nbatches, int bad_label_batch, int short_batch, char *out) {
    char root[1200], dir[1300];
    snprintf(root, sizeof root, "%s/%s.d", tu_tmpdir(), name);
    snprintf(dir, sizeof dir, "%s/cifar-10-batches-bin", root);
    mkdirs(dir);
    for (int b = 1; b <= nbatches; b++) {
        char bn[64];
        snprintf(bn, sizeof bn, "data_batch_%d.bin", b);
        cifar_batch(dir, bn, b == 5 ? 4 : 2, b, b == bad_label_batch ? 1 : -1);
    }
    cifar_batch(dir, "test_batch.bin", 3, 0, -1);
    if (short_batch) {
        char p[1200];
        uint8_t junk[100] = {0};
        write_bytes(join(p, dir, "test_batch.bin"), junk, sizeof junk);
    }
    tu_write(tu_path("batches.meta.txt"), "airplane\n");
    tar_gz(root, "cifar-10-batches-bin", join(out, tu_tmpdir(), name));
}

START_TEST(t_image_cifar) {
    char arc[1200];
    cifar_archive("cifar-10-binary.tar.gz", 5, 0, 0, arc);
    ClsDataset d;
    load_ok(&d, "image", arc, "train", NULL);
    check_dataset(&d, 4 * 2 + 2, 1, 10, 257); /* batches 1-4 and the first half of batch 5 */
    for (int i = 0; i < d.n; i++) {
        size_t n;
        clsdata_seq(&d, i, 0, &n);
        ck_assert_uint_eq(n, 1024);
    }
    /* order: batch 1 record 0 (label 1), record 1 (label 2), batch 2 record 0 (label 2)... */
    ck_assert_int_eq(d.label[0], 1);
    ck_assert_int_eq(d.label[1], 2);
    ck_assert_int_eq(d.label[2], 2);
    ck_assert_int_eq(d.label[8], 5);
    ck_assert_int_eq(d.label[9], 6);
    size_t n;
    const uint32_t *t = clsdata_seq(&d, 1, 0, &n); /* record 1: R 10, G 20, B 30 */
    /* 0.299*10 + 0.587*20 + 0.114*30 = 18.15 -> 18; pixel 0: R 255 -> 76.245+11.74+3.42 = 91.4 -> 91 */
    ck_assert_uint_eq(t[1], 18 + 1);
    ck_assert_uint_eq(t[1023], 18 + 1);
    ck_assert_uint_eq(t[0], 91 + 1);
    t = clsdata_seq(&d, 0, 0, &n); /* record 0: black, pixel 0 pure red -> round(76.245) = 76 */
    ck_assert_uint_eq(t[1], 1);
    ck_assert_uint_eq(t[0], 76 + 1);
    clsdata_free(&d);

    load_ok(&d, "image", arc, "valid", NULL);
    ck_assert_int_eq(d.n, 2); /* second half of batch 5: records 2, 3 */
    ck_assert_int_eq(d.label[0], 7);
    ck_assert_int_eq(d.label[1], 8);
    t = clsdata_seq(&d, 1, 0, &n); /* R 30 G 60 B 90: 8.97 + 35.22 + 10.26 = 54.45 -> 54 */
    ck_assert_uint_eq(t[5], 54 + 1);
    clsdata_free(&d);

    load_ok(&d, "image", arc, "test", NULL);
    ck_assert_int_eq(d.n, 3);
    ck_assert_int_eq(d.label[2], 2);
    /* R 20 G 40 B 60: 5.98 + 23.48 + 6.84 = 36.3 -> 36 */
    t = clsdata_seq(&d, 2, 0, &n);
    ck_assert_uint_eq(t[100], 36 + 1);
    clsdata_free(&d);
}
END_TEST

/* the pages of address space this process maps now (/proc/self/statm), in bytes */
static size_t mapped_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* A 10 KiB tar whose test_batch.bin header states 2 GiB of records: the loader reads what
 * is there and says the entry is cut short, in a child limited to 512 MiB of address
 * space more than it has; never an abort for the memory the header alone asked for. */
START_TEST(t_image_memory_bounded) {
    Buf b = {0};
    unsigned char h[512];
    size_t stated = (size_t)REC * 698000; /* 2.14e9 bytes: under the loader's 2^31 limit */
    tar_header(h, "cifar-10-batches-bin/test_batch.bin", stated, '0');
    put(&b, h, 512);
    static unsigned char data[10240];
    put(&b, data, sizeof data);
    char arc[512];
    join(arc, tu_tmpdir(), "cifar_huge.tar");
    write_bytes(arc, b.p, b.n);
    free(b.p);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit lim = {mapped_bytes() + ((size_t)512 << 20), mapped_bytes() + ((size_t)512 << 20)};
        setrlimit(RLIMIT_AS, &lim);
        ClsDataset d;
        int rc = clsdata_load(&d, "image", arc, "test", NULL);
        _exit(rc == -1 && strstr(gma_error(), "cifar_huge.tar") && strstr(gma_error(), "truncated") ? 0 : 3);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st), "the loader died of signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    ck_assert_msg(WEXITSTATUS(st) == 0, "no one-line error naming the archive and the truncation");
}
END_TEST

START_TEST(t_image_bad) {
    char arc[1200];
    ClsDataset d;
    cifar_archive("cifar_missing.tar.gz", 3, 0, 0, arc);
    load_fails("image", arc, "train", NULL, "cifar_missing.tar.gz", "data_batch_4.bin cifar-10-batches-bin/data_batch_5.bin");
    load_ok(&d, "image", arc, "test", NULL); /* the test batch is there */
    clsdata_free(&d);
    cifar_archive("cifar_badlabel.tar.gz", 5, 2, 0, arc);
    load_fails("image", arc, "train", NULL, "data_batch_2.bin, record 1 (byte 3073)", "label 10 outside");
    cifar_archive("cifar_short.tar.gz", 5, 0, 1, arc);
    load_fails("image", arc, "test", NULL, "test_batch.bin", "not a whole number");
}
END_TEST

/* ---------------------------------------------------------------- AAN retrieval */

START_TEST(t_retrieval) {
    const char *dir = fresh_dir("aan");
    char p[1200];
    tu_write(join(p, dir, "new_aan_pairs.train.tsv"), "1\taan/P01\taan/P02\tfirst doc\tsecond\n"
                "0.0\taan/P03\taan/P04\tabc\t\n"
                "1.0\taan/P05\taan/P06\tlonger document text here\txy\n");
    tu_write(join(p, dir, "new_aan_pairs.eval.tsv"), "label\tid1\tid2\ttext1\ttext2\n0\ta\tb\tq\tr\n");
    ClsDataset d;
    load_ok(&d, "retrieval", dir, "train", NULL);
    check_dataset(&d, 3, 2, 2, 257);
    ck_assert_str_eq(seq_str(&d, 0, 0), "first doc");
    ck_assert_str_eq(seq_str(&d, 0, 1), "second");
    ck_assert_str_eq(seq_str(&d, 1, 1), "");
    ck_assert_str_eq(seq_str(&d, 2, 1), "xy");
    ck_assert_int_eq(d.label[0], 1);
    ck_assert_int_eq(d.label[1], 0);
    ck_assert_int_eq(d.label[2], 1);
    ck_assert_uint_eq(d.off[6], 9 + 6 + 3 + 0 + 25 + 2);
    clsdata_free(&d);
    ClsOptions o = clsdata_default_options();
    o.max_len = 5;
    load_ok(&d, "retrieval", dir, "train", &o);
    ck_assert_int_eq(d.truncated, 3); /* "first doc", "second", "longer..." */
    ck_assert_str_eq(seq_str(&d, 2, 0), "longe");
    clsdata_free(&d);
    load_ok(&d, "retrieval", dir, "valid", NULL); /* header skipped */
    ck_assert_int_eq(d.n, 1);
    clsdata_free(&d);
    load_fails("retrieval", dir, "test", NULL, "new_aan_pairs.test.tsv", NULL);
    /* bad lines */
    join(p, dir, "new_aan_pairs.train.tsv");
    tu_write(p, "1\ta\tb\tx\ty\n0\ta\tb\tonly four\n");
    load_fails("retrieval", dir, "train", NULL, "new_aan_pairs.train.tsv:2", "4 TAB-separated fields, expected 5");
    tu_write(p, "1\ta\tb\tx\ty\n\n2\ta\tb\tx\ty\n");
    load_fails("retrieval", dir, "train", NULL, "new_aan_pairs.train.tsv:3", "label 2 outside the 2 classes");
    tu_write(p, "yes\ta\tb\tx\ty\n");
    load_fails("retrieval", dir, "train", NULL, "new_aan_pairs.train.tsv:1", NULL);
    o.max_len = 1;
    o.truncate = 0;
    tu_write(p, "1\ta\tb\tx\ty\n1\ta\tb\tx\tyy\n");
    load_fails("retrieval", dir, "train", &o, "new_aan_pairs.train.tsv:2", "longer than max_len 1");
}
END_TEST


START_TEST(t_retrieval_bytes_literal) {
    /* the LRA release writes texts as Python bytes literals (repr of bytes) */
    const char *dir = fresh_dir("aan_lit");
    char p[1200];
    tu_write(join(p, dir, "new_aan_pairs.test.tsv"), "1\ta\tb\tb'it\\'s \"q\"\\tx\\n\\x00\\xff\\\\ end'\tb\"only ' single\"\n"
                "0\ta\tb\tb'\\101\\7z \\q'\tplain 'text'\n");
    ClsDataset d;
    load_ok(&d, "retrieval", dir, "test", NULL);
    ck_assert_int_eq(d.n, 2);
    size_t n;
    const uint32_t *t = clsdata_seq(&d, 0, 0, &n);
    const char want[] = "it's \"q\"\tx\n\0\xff\\ end";
    ck_assert_uint_eq(n, sizeof want - 1);
    for (size_t k = 0; k < n; k++) ck_assert_uint_eq(t[k], (uint32_t)(uint8_t)want[k] + 1);
    ck_assert_str_eq(seq_str(&d, 0, 1), "only ' single");
    ck_assert_str_eq(seq_str(&d, 1, 0), "A\az \\q");
    ck_assert_str_eq(seq_str(&d, 1, 1), "plain 'text'");
    clsdata_free(&d);
    tu_write(p, "1\ta\tb\tb'bad \\x4'\tb''\n");
    load_fails("retrieval", dir, "test", NULL, "new_aan_pairs.test.tsv:1: text1: malformed \\x escape", NULL);
}
END_TEST

START_TEST(t_release_archive) {
    /* listops and retrieval files read straight from an archive in the release layout */
    const char *root = tu_path("release");
    char arc[1200];
    write_tree(root, "lra_release/lra_release/listops-1000/basic_test.tsv",
               "Source\tTarget\n( ( ( [SM 4 ) 8 ) ] )\t2\n( ( ( [MIN 4 ) 8 ) ] )\t4\n");
    write_tree(root, "lra_release/lra_release/tsv_data/new_aan_pairs.eval.tsv", "1\ta\tb\tb'x'\tb'yz'\n");
    tar_gz(root, "lra_release", join(arc, tu_tmpdir(), "lra_release.gz"));
    ClsDataset d;
    load_ok(&d, "listops", arc, "test", NULL);
    ck_assert_int_eq(d.n, 2);
    ck_assert_int_eq(d.label[0], 2);
    ck_assert_int_eq(d.label[1], 4);
    clsdata_free(&d);
    load_ok(&d, "retrieval", arc, "valid", NULL);
    ck_assert_int_eq(d.n, 1);
    ck_assert_str_eq(seq_str(&d, 0, 1), "yz");
    clsdata_free(&d);
    load_fails("listops", arc, "train", NULL, "lra_release.gz: archive has no entry named basic_train.tsv", NULL);
    /* an error inside an archive entry names the entry and the line */
    write_tree(root, "lra_release/lra_release/listops-1000/basic_test.tsv",
               "Source\tTarget\n( ( ( [SM 4 ) 8 ) ] )\t2\n( ( ( [MIN 4 ) 8 ) ] )\n");
    tar_gz(root, "lra_release", join(arc, tu_tmpdir(), "lra_release2.tar.gz"));
    load_fails("listops", arc, "test", NULL, "entry lra_release/lra_release/listops-1000/basic_test.tsv:3: malformed line",
               NULL);
}
END_TEST


/* ---------------------------------------------------------------- generic */

static void gz_write(const char *path, const char *text) {
    gzFile f = gzopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(gzwrite(f, text, (unsigned)strlen(text)), (int)strlen(text));
    gzclose(f);
}

START_TEST(t_generic_tsv) {
    const char *dir = fresh_dir("gen_tsv");
    char p[1200];
    gz_write(join(p, dir, "train.tsv.gz"), "1\tspam-2/0001\tFrom: x\\nSubject: hi\\n\\nbody\\twith\\\\tab\\r\n"
                "0\teasy-ham-1/0002\tno header here\n"
                "0\ttwo fields\n");
    tu_write(join(p, dir, "valid.tsv"), "1\tv/1\tSubject: a\\r\\n\\r\\nbody2\n");
    tu_write(join(p, dir, "test.tsv"), "0\tt/1\tx\n");
    ClsDataset d;
    load_ok(&d, "tsv", dir, "train", NULL);
    check_dataset(&d, 3, 1, 2, 257);
    ck_assert_str_eq(seq_str(&d, 0, 0), "From: x\nSubject: hi\n\nbody\twith\\tab\r");
    ck_assert_str_eq(seq_str(&d, 2, 0), "two fields");
    ck_assert_int_eq(d.label[0], 1);
    clsdata_free(&d);
    ClsOptions o = clsdata_default_options();
    o.strip_headers = 1;
    load_ok(&d, "tsv", dir, "train", &o);
    ck_assert_str_eq(seq_str(&d, 0, 0), "body\twith\\tab\r");
    ck_assert_str_eq(seq_str(&d, 1, 0), "no header here"); /* no empty line: kept */
    clsdata_free(&d);
    load_ok(&d, "tsv", dir, "valid", &o);
    ck_assert_str_eq(seq_str(&d, 0, 0), "body2");
    ck_assert_int_eq(d.n_classes, 2); /* inferred from all splits */
    clsdata_free(&d);
    /* one file directly */
    load_ok(&d, "tsv", p, "test", NULL);
    ck_assert_int_eq(d.n, 1);
    ck_assert_int_eq(d.n_classes, 1); /* inferred from this one file (class 0 only): pass n_classes */
    clsdata_free(&d);
    /* bad input */
    o = clsdata_default_options();
    o.n_classes = 2;
    struct { const char *text, *err1, *err2; } cases[] = {
        {"0\tx\n1\ty\n2\tz\n", "test.tsv:3", "label 2 outside the 2 classes"},
        {"0\tx\nno tab on this line\n", "test.tsv:2: malformed line", NULL},
        {"0\tx\n1\tid\ttext\textra\n", "test.tsv:2: malformed line: 4", NULL},
        {"0\tbad \\q escape\n", "test.tsv:1: bad escape at byte 4", NULL},
        {"0\ttrailing \\\n", "bad escape", NULL},
        {"0\tx\nham\ty\n", "test.tsv:2: label is a name but", NULL},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tu_write(p, cases[c].text);
        load_fails("tsv", dir, "test", &o, cases[c].err1, cases[c].err2);
    }
    o.max_len = 3;
    o.truncate = 0;
    tu_write(p, "0\txyz\n1\twxyz\n");
    load_fails("tsv", dir, "test", &o, "test.tsv:2: sequence of 4 tokens is longer than max_len 3", NULL);
    load_fails("tsv", tu_path("gen_none"), "test", &o, "gen_none", NULL);
}
END_TEST

START_TEST(t_generic_jsonl) {
    const char *dir = fresh_dir("gen_jsonl");
    char p[1200];
    tu_write(join(p, dir, "train.jsonl"), "{\"text\": \"good \\u00e9\\n\", \"label\": \"pos\"}\n"
                "{\"label\": \"neg\", \"text\": \"bad\"}\n"
                "\n"
                "{\"text\": \"meh\", \"label\": \"neutral\", \"extra\": 1}\n");
    gz_write(join(p, dir, "valid.jsonl.gz"), "{\"text\": \"v\", \"label\": \"pos\"}\n");
    ClsDataset d;
    load_ok(&d, "jsonl", dir, "train", NULL);
    check_dataset(&d, 3, 1, 3, 257);
    /* names in byte order: neg 0, neutral 1, pos 2 */
    ck_assert_int_eq(d.label[0], 2);
    ck_assert_int_eq(d.label[1], 0);
    ck_assert_int_eq(d.label[2], 1);
    ck_assert_str_eq(seq_str(&d, 0, 0), "good \xc3\xa9\n");
    clsdata_free(&d);
    load_ok(&d, "jsonl", dir, "valid", NULL);
    ck_assert_int_eq(d.n, 1);
    ck_assert_int_eq(d.n_classes, 3);
    ck_assert_int_eq(d.label[0], 2); /* same class as in train */
    clsdata_free(&d);
    /* numbers */
    tu_write(join(p, dir, "test.jsonl"), "{\"text\": \"a\", \"label\": 0}\n{\"text\": \"b\", \"label\": 4}\n");
    load_ok(&d, "jsonl", p, "test", NULL);
    ck_assert_int_eq(d.n_classes, 5);
    ck_assert_int_eq(d.label[1], 4);
    clsdata_free(&d);
    ClsOptions o = clsdata_default_options();
    o.n_classes = 3;
    load_fails("jsonl", p, "test", &o, "test.jsonl:2: label 4 outside the 3 classes", NULL);
    struct { const char *text, *err; } cases[] = {
        {"{\"text\": \"a\", \"label\": 0}\n{\"text\": \"a\", \"label\": 0\n", "test.jsonl:2: malformed JSON"},
        {"{\"text\": 5, \"label\": 0}\n", "test.jsonl:1: expected an object"},
        {"{\"text\": \"a\"}\n", "test.jsonl:1: expected a field \"label\""},
        {"{\"text\": \"a\", \"label\": 1.5}\n", "test.jsonl:1: label 1.5"},
        {"{\"text\": \"a\", \"label\": -1}\n", "test.jsonl:1: label -1"},
        {"[1, 2]\n", "test.jsonl:1: expected an object"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tu_write(p, cases[c].text);
        load_fails("jsonl", p, "test", NULL, cases[c].err, NULL);
    }
}
END_TEST

START_TEST(t_corrupt_gzip) {
    const char *dir = fresh_dir("gen_corrupt");
    char p[1200];
    join(p, dir, "train.tsv.gz");
    /* a gzip stream cut short */
    static char text[200000];
    for (size_t i = 0; i + 1 < sizeof text; i++) text[i] = (i % 97 == 96) ? '\n' : (char)('a' + (i * 7919) % 26);
    for (size_t i = 0; i + 1 < sizeof text; i += 97) text[i] = '1', text[i + 1] = '\t';
    gz_write(p, text);
    size_t n;
    char *all = gma_read_file(p, &n);
    write_bytes(p, all, n / 2);
    free(all);
    load_fails("tsv", dir, "train", NULL, "train.tsv.gz", NULL);
}
END_TEST

START_TEST(t_task_table) {
    ck_assert_uint_eq(clsdata_task_vocab("text"), 257);
    ck_assert_uint_eq(clsdata_task_vocab("retrieval"), 257);
    ck_assert_uint_eq(clsdata_task_vocab("image"), 257);
    ck_assert_uint_eq(clsdata_task_vocab("jsonl"), 257);
    ck_assert_uint_eq(clsdata_task_vocab("tsv"), 257);
    ck_assert_uint_eq(clsdata_task_vocab("nope"), 0);
    ck_assert_int_eq(clsdata_task_max_len("listops"), 2000);
    ck_assert_int_eq(clsdata_task_max_len("text"), 4096);
    ck_assert_int_eq(clsdata_task_max_len("retrieval"), 4000);
    ck_assert_int_eq(clsdata_task_max_len("image"), 1024);
    ClsDataset d = {0};
    clsdata_free(&d); /* freeing an empty dataset is fine */
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("lra_data");
    TCase *c = tcase_create("listops");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, t_listops_tokenize);
    tcase_add_test(c, t_listops_eval);
    tcase_add_test(c, t_listops_to_string);
    tcase_add_test(c, t_listops_generator);
    tcase_add_test(c, t_listops_files);
    tcase_add_test(c, t_listops_official_format);
    tcase_add_test(c, t_listops_bad);
    suite_add_tcase(s, c);
    c = tcase_create("archives");
    tcase_set_timeout(c, 60);
    tcase_add_test(c, t_text_imdb);
    tcase_add_test(c, t_text_bad_archive);
    tcase_add_test(c, t_image_cifar);
    tcase_add_test(c, t_image_bad);
    tcase_add_test(c, t_image_memory_bounded);
    suite_add_tcase(s, c);
    c = tcase_create("tsv_jsonl");
    tcase_add_test(c, t_retrieval);
    tcase_add_test(c, t_retrieval_bytes_literal);
    tcase_add_test(c, t_release_archive);
    tcase_add_test(c, t_corrupt_gzip);
    tcase_add_test(c, t_generic_tsv);
    tcase_add_test(c, t_generic_jsonl);
    tcase_add_test(c, t_task_table);
    suite_add_tcase(s, c);
    return s;
}

GMA_TEST_MAIN()
