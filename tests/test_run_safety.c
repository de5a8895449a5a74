/* test_run_safety.c: a run directory that nothing can damage. A second writer on a run
 * that is training is refused (the lock names the holder's pid) and changes nothing; the
 * lock goes with the holder, kill -9 included. A resume or an evaluation on data of
 * another identity (tokenizer, vocabulary, shards) is refused and rewrites nothing. */
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_edit.h"
#include "data/lm/manifest.h"
#include "data/lm/shard.h"

/* gmatrain with the arguments (NULL-terminated) in the background, output discarded. */
static pid_t spawn_train(const char *const *args) {
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1), dup2(fd, 2);
        execv("./bin/gmatrain", (char *const *)args);
        _exit(127);
    }
    return pid;
}

/* Wait (at most 60 s) until the file at path holds `what`; 1 when it does. */
static int wait_for(const char *path, const char *what) {
    for (int i = 0; i < 6000; i++) {
        char *t = gma_path_exists(path) ? gma_read_file(path, NULL) : NULL;
        int ok = t && strstr(t, what);
        free(t);
        if (ok) return 1;
        usleep(10000);
    }
    return 0;
}

static void stop(pid_t pid) {
    int st;
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
}

/* The lock of run rd is free: this process can take it. */
static int lock_free(const char *rd) {
    char p[1200];
    snprintf(p, sizeof p, "%s/.lock", rd);
    int fd = open(p, O_RDWR);
    int ok = fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

static char *read_rel(const char *rd, const char *name, size_t *len) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", rd, name);
    return gma_read_file(p, len);
}

/* A fresh run into the directory of a run that is training (no checkpoint yet), and a
 * --resume of a run that is training: one line naming the pid, exit 2, and the
 * holder's config.json and metrics.jsonl as they were. */
START_TEST(test_second_writer) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    char rd[1100], cfg[1100], pidtxt[32];
    snprintf(rd, sizeof rd, "%s", tu_path("held"));
    snprintf(cfg, sizeof cfg, "%s", tu_path("tiny.json"));
    const char *fresh[] = {"gmatrain", "--config", cfg, "--out", rd, "--quiet", "--set", "train.steps=100000000",
                           "--set", "train.checkpoint_every=0", NULL};
    pid_t pid = spawn_train(fresh);
    char metrics[1200];
    snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", rd);
    ck_assert_msg(wait_for(metrics, "\"step\":2,"), "the first trainer did not start logging");
    snprintf(pidtxt, sizeof pidtxt, "pid %d)", (int)pid);
    size_t len0;
    char *cfg0 = read_rel(rd, "config.json", &len0);
    ck_assert_int_eq(run("./bin/gmatrain --config %s --out %s --quiet --set model.d_model=32", cfg, rd), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, pidtxt) && strstr(g_out, "is in use"), "%s", g_out);
    size_t len1, mlen;
    char *cfg1 = read_rel(rd, "config.json", &len1);
    ck_assert_msg(len0 == len1 && !memcmp(cfg0, cfg1, len0), "config.json changed under the first trainer");
    free(cfg0), free(cfg1);
    /* --resume before its first checkpoint: the holder named, not "not a checkpoint" (config from the checkpoint, then
     * from --config) */
    ck_assert_int_eq(run("./bin/gmatrain --resume %s --quiet", rd), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, pidtxt) && strstr(g_out, "is in use"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config %s --resume %s --quiet", cfg, rd), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, pidtxt) && strstr(g_out, "is in use"), "%s", g_out);
    stop(pid);
    char *m = read_rel(rd, "metrics.jsonl", &mlen);
    ck_assert_msg(m && strlen(m) == mlen, "metrics.jsonl holds a NUL byte");
    free(m);
    ck_assert_msg(lock_free(rd), "the lock outlived its holder (kill -9)");
    /* --resume of a run that is training */
    char rd2[1100];
    snprintf(rd2, sizeof rd2, "%s", tu_path("held2"));
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=2", cfg, rd2) == 0, "%s", g_out);
    const char *resume[] = {"gmatrain", "--resume", rd2, "--quiet", "--set", "train.steps=100000000", "--set",
                            "train.checkpoint_every=0", NULL};
    pid = spawn_train(resume);
    snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", rd2);
    ck_assert_msg(wait_for(metrics, "\"step\":4,"), "the resumed trainer did not start logging");
    snprintf(pidtxt, sizeof pidtxt, "pid %d)", (int)pid);
    ck_assert_int_eq(run("./bin/gmatrain --resume %s --quiet --set train.steps=100000000", rd2), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, pidtxt), "%s", g_out);
    stop(pid);
    ck_assert_msg(lock_free(rd2), "the lock outlived its holder (kill -9)");
    /* readers take no lock: gmaeval works on a run whose lock is held */
    int fd = open(tu_path("held2/.lock"), O_RDWR);
    ck_assert(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test", rd2) == 0, "%s", g_out);
    close(fd);
}
END_TEST

/* A data directory at dir: a word tokenizer whose vocab.txt ends with `last`, shards of
 * vocabulary V, train.bin of n tokens. */
static void make_data(const char *dir, const char *last, uint32_t V, int n) {
    char p[1200], voc[400] = "";
    ck_assert_int_eq(gma_mkdirs(dir), 0);
    for (uint32_t i = 0; i + 1 < V; i++) snprintf(voc + strlen(voc), sizeof voc - strlen(voc), "w%u\n", i);
    snprintf(voc + strlen(voc), sizeof voc - strlen(voc), "%s\n", last);
    snprintf(p, sizeof p, "%s/vocab.txt", dir);
    tu_write(p, voc);
    snprintf(p, sizeof p, "%s/meta.json", dir);
    tu_write(p, "{\"tokenizer\": \"word\", \"tokenizer_files\": [\"vocab.txt\"]}\n");
    uint32_t t[200];
    for (int i = 0; i < 200; i++) t[i] = (uint32_t)(i * 7 % (int)V);
    const char *split[3] = {"train", "valid", "test"};
    for (int s = 0; s < 3; s++) {
        snprintf(p, sizeof p, "%s/%s.bin", dir, split[s]);
        ck_assert_int_eq(shard_write(p, t, s == 0 ? (uint64_t)n : 100, V), 0);
    }
}

static int same_file(const char *a, const char *b_text, size_t b_len) {
    size_t len;
    char *t = gma_read_file(a, &len);
    int same = t && len == b_len && !memcmp(t, b_text, len);
    free(t);
    return same;
}

START_TEST(test_resume_other_data) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    char A[1100], B[1100], C[1100], D[1100], rd[1100], cfg[1100];
    snprintf(A, sizeof A, "%s", tu_path("A"));
    snprintf(B, sizeof B, "%s", tu_path("B"));
    snprintf(C, sizeof C, "%s", tu_path("C"));
    snprintf(D, sizeof D, "%s", tu_path("D"));
    snprintf(rd, sizeof rd, "%s", tu_path("r"));
    snprintf(cfg, sizeof cfg, "%s", tu_path("tiny.json"));
    make_data(A, "last", 20, 160);
    make_data(B, "other", 20, 160); /* another tokenizer file, the same shards */
    make_data(C, "last", 20, 180);  /* the same tokenizer, another train.bin */
    make_data(D, "last", 24, 160);  /* another vocabulary */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set data.source=shards --set data.path=%s "
                      "--set train.steps=2", cfg, rd, A) == 0, "%s", g_out);
    char dj[1200], tv[1200], lm[1200];
    snprintf(dj, sizeof dj, "%s/data.json", rd);
    snprintf(tv, sizeof tv, "%s/tokenizer/vocab.txt", rd);
    snprintf(lm, sizeof lm, "%s/latest/model.safetensors", rd);
    size_t djn, tvn, lmn;
    char *dj0 = gma_read_file(dj, &djn), *tv0 = gma_read_file(tv, &tvn), *lm0 = gma_read_file(lm, &lmn);
    ck_assert_msg(dj0 && strstr(dj0, "\"identity\"") && strstr(dj0, "\"header_sha256\""), "%s", dj0 ? dj0 : "");
    const char *other[3] = {B, C, D}, *what[3] = {"tokenizer files sha256", "train.bin of 160 tokens there, 180 here",
                                                  "vocabulary 20 there, 24 here"};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(run("./bin/gmatrain --resume %s --quiet --set train.steps=3 --set data.path=%s", rd, other[k]), 2);
        ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, what[k]) && strstr(g_out, "--init-from"), "case %d: %s", k, g_out);
        ck_assert_msg(same_file(dj, dj0, djn) && same_file(tv, tv0, tvn) && same_file(lm, lm0, lmn),
                      "case %d: the run was changed", k);
    }
    /* gmaeval: the tokenizer and vocabulary must match; other shards of them may be scored */
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test --data-path %s", rd, B), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "tokenizer files sha256"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data %s/test.bin", rd, D), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "vocabulary 20 there, 24 here"), "%s", g_out);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --data-path %s", rd, C) == 0, "%s", g_out);
    /* the same data moved: resumed, and data.json records where it is now */
    ck_assert_int_eq(run("mv %s %s/moved", A, tu_tmpdir()), 0);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=3 --set data.path=%s/moved", rd, tu_tmpdir()) == 0,
                  "%s", g_out);
    char *dj1 = gma_read_file(dj, NULL);
    ck_assert_msg(strstr(dj1, "/moved\"") && same_file(tv, tv0, tvn), "%s", dj1);
    /* a run made before identities were kept: resumed with a warning, data.json left as it is */
    cJSON *j = cJSON_Parse(dj1);
    cJSON_DeleteItemFromObjectCaseSensitive(j, "identity");
    char *old = cJSON_Print(j);
    tu_write(dj, old);
    ck_assert_msg(run("./bin/gmatrain --resume %s --set train.steps=4 --set data.path=%s/moved", rd, tu_tmpdir()) == 0, "%s",
                  g_out);
    ck_assert_msg(strstr(g_out, "records no data identity"), "%s", g_out);
    ck_assert_msg(same_file(dj, old, strlen(old)), "data.json of a run without identity was rewritten");
    cJSON_Delete(j);
    free(old), free(dj0), free(dj1), free(tv0), free(lm0);
}
END_TEST

/* The bytes of tensor name in the safetensors file at path (malloc'd; NULL when absent). */
static char *tensor_bytes(const char *path, const char *name, size_t *len) {
    StFile f;
    ck_assert_msg(st_open(&f, path) == 0, "%s", gma_error());
    const StEntry *e = st_find(&f, name);
    char *b = NULL;
    if (e) {
        *len = e->numel * sizeof(float);
        b = malloc(*len);
        memcpy(b, e->data, *len);
    }
    st_close(&f);
    return b;
}

static int same_tensor(const char *run_a, const char *run_b, const char *name) {
    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/latest/model.safetensors", run_a);
    snprintf(b, sizeof b, "%s/latest/model.safetensors", run_b);
    size_t la = 0, lb = 0;
    char *x = tensor_bytes(a, name, &la), *y = tensor_bytes(b, name, &lb);
    int same = x && y && la == lb && !memcmp(x, y, la);
    free(x), free(y);
    return same;
}

/* dir's meta.json with the manifest gmadata prepare writes (size and SHA-256 of each file) */
static void add_manifest(const char *dir) {
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "tokenizer", "word");
    cJSON *files = cJSON_AddArrayToObject(meta, "tokenizer_files");
    cJSON_AddItemToArray(files, cJSON_CreateString("vocab.txt"));
    static const char *const f[4] = {"train.bin", "valid.bin", "test.bin", "vocab.txt"};
    for (int i = 0; i < 4; i++) ck_assert_msg(manifest_add(meta, dir, f[i]) == 0, "%s", gma_error());
    char *js = cJSON_Print(meta), p[1200];
    snprintf(p, sizeof p, "%s/meta.json", dir);
    tu_write(p, js);
    free(js);
    cJSON_Delete(meta);
}

/* Two data sets of one tokenizer whose shards have the same token counts (the same 32-byte
 * headers) but other tokens: a resume on the other is refused by the content digests of
 * meta.json's manifest, which the run records; a run recorded without them (before they
 * were kept) resumes on the headers alone. */
START_TEST(test_resume_same_counts_other_content) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    char E[1100], F[1100], rd[1100], cfg[1100], p[1200];
    snprintf(E, sizeof E, "%s", tu_path("E"));
    snprintf(F, sizeof F, "%s", tu_path("F"));
    snprintf(rd, sizeof rd, "%s", tu_path("rc"));
    snprintf(cfg, sizeof cfg, "%s", tu_path("tiny.json"));
    make_data(E, "last", 20, 160);
    make_data(F, "last", 20, 160);
    uint32_t t[160];
    for (int i = 0; i < 160; i++) t[i] = (uint32_t)(i * 3 % 19); /* other tokens, the same count and vocabulary */
    snprintf(p, sizeof p, "%s/train.bin", F);
    ck_assert_int_eq(shard_write(p, t, 160, 20), 0);
    add_manifest(E), add_manifest(F);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set data.source=shards --set data.path=%s "
                      "--set train.steps=2", cfg, rd, E) == 0, "%s", g_out);
    char dj[1200];
    snprintf(dj, sizeof dj, "%s/data.json", rd);
    char *dj0 = gma_read_file(dj, NULL);
    ck_assert_msg(dj0 && strstr(dj0, "\"sha256\""), "%s", dj0 ? dj0 : "");
    ck_assert_int_eq(run("./bin/gmatrain --resume %s --quiet --set train.steps=3 --set data.path=%s", rd, F), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "train.bin of 160 tokens in both, other tokens") &&
                  strstr(g_out, "--init-from"), "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=3 --set data.path=%s", rd, E) == 0, "%s", g_out);
    /* a run recorded before content digests were kept: the headers alone, so F resumes */
    cJSON *j = cJSON_Parse(dj0);
    cJSON *sh = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "identity"), "shards"), *e;
    cJSON_ArrayForEach(e, sh) cJSON_DeleteItemFromObjectCaseSensitive(e, "sha256");
    char *old = cJSON_Print(j);
    tu_write(dj, old);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=4 --set data.path=%s", rd, F) == 0, "%s", g_out);
    cJSON_Delete(j);
    free(old), free(dj0);
}
END_TEST

/* --init-from: a new run (step 0) takes every tensor whose name and shape match (with lr 0
 * they are still the source's after a step, GMA routing included: no k-means re-fit),
 * keeps new ones fresh, drops the rest, and says so in init_from.json (the position table
 * too, between model.pos "learned" and "none"); another width is refused, and so is
 * --init-from with --resume. */
START_TEST(test_init_from) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    char S[1100], T[1100], U[1100], cfg[1100];
    snprintf(S, sizeof S, "%s", tu_path("S"));
    snprintf(T, sizeof T, "%s", tu_path("T"));
    snprintf(U, sizeof U, "%s", tu_path("U"));
    snprintf(cfg, sizeof cfg, "%s", tu_path("tiny.json"));
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=3", cfg, S) == 0, "%s", g_out);
    const char *lr0 = "--set train.steps=1 --set train.lr=0";
    ck_assert_msg(run("./bin/gmatrain --config %s --init-from %s/ckpt_00000003 --out %s %s --set model.n_layers=3 "
                      "--set model.mixer=gma,sdpa,sdpa --set gma.init=kmeans", cfg, S, T, lr0) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "(step 3): 39 tensors copied; 16 new, at their fresh initialisation: blocks.2.ln1.weight"),
                  "%s", g_out);
    const char *copied[] = {"tok_emb.weight", "blocks.0.mixer.gma.mu", "blocks.1.mlp.fc.weight", "ln_f.bias"};
    for (int i = 0; i < 4; i++) ck_assert_msg(same_tensor(S, T, copied[i]), "%s was not copied", copied[i]);
    char p[1200];
    snprintf(p, sizeof p, "%s/init_from.json", T);
    char *j = gma_read_file(p, NULL);
    ck_assert_msg(j && strstr(j, "\"new\":\t[\"blocks.2.ln1.weight\"") && strstr(j, "\"dropped\":\t[]") &&
                      strstr(j, "\"step\":\t3"), "%s", j ? j : "");
    free(j);
    snprintf(p, sizeof p, "%s/metrics.jsonl", T);
    j = gma_read_file(p, NULL);
    ck_assert_msg(j && strstr(j, "{\"step\":1,"), "a fresh run counts from step 0: %s", j ? j : "");
    free(j);
    /* fewer layers: the rest dropped */
    ck_assert_msg(run("./bin/gmatrain --config %s --init-from %s --out %s %s --set model.n_layers=1 --set model.mixer=gma", cfg,
                      S, U, lr0) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "23 tensors copied; 16 dropped: blocks.1.ln1.weight"), "%s", g_out);
    ck_assert(same_tensor(S, U, "blocks.0.mixer.gma.var_raw"));
    /* positions learned -> none: the table is dropped, named; none -> learned: a fresh table, named */
    char P[1100];
    snprintf(P, sizeof P, "%s", tu_path("P"));
    ck_assert_msg(run("./bin/gmatrain --config %s --init-from %s --out %s %s --set model.pos=none", cfg, S, P, lr0) == 0, "%s",
                  g_out);
    ck_assert_msg(strstr(g_out, "; 1 dropped: pos_emb.weight (all in init_from.json)") && !strstr(g_out, " new, "), "%s", g_out);
    ck_assert(same_tensor(S, P, "tok_emb.weight"));
    ck_assert_msg(run("./bin/gmatrain --config %s --init-from %s --out %s/l %s --set model.pos=learned", cfg, P, tu_tmpdir(), lr0) == 0,
                  "%s", g_out);
    ck_assert_msg(strstr(g_out, "; 1 new, at their fresh initialisation: pos_emb.weight (all in init_from.json)") &&
                      !strstr(g_out, "dropped"), "%s", g_out);
    /* refused: another width, head count; with --resume */
    ck_assert_int_eq(run("./bin/gmatrain --config %s --init-from %s --out %s/w --set model.d_model=32", cfg, S, tu_tmpdir()), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "model.d_model is 16 there, 32 here"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config %s --init-from %s --out %s/h --set model.n_heads=4", cfg, S, tu_tmpdir()), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "model.n_heads is 2 there, 4 here"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --init-from %s --quiet", S), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "--init-from needs --out DIR"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --init-from %s --resume %s", S, S), 2);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "cannot go together"), "%s", g_out);
    /* the config from the checkpoint when no --config is given */
    ck_assert_msg(run("./bin/gmatrain --init-from %s --out %s/k --quiet --set train.steps=1", S, tu_tmpdir()) == 0, "%s", g_out);
}
END_TEST

/* --init-from across a mixer change: an all-sdpa run, then a model whose last layer is gma.
 * That layer takes the q/k/v/o projections (and biases) of the attention it replaces, bit
 * for bit (lr 0); its routing means are new and seeded by k-means on the first batch, so
 * they are not the fresh initialisation a run from scratch of the same config has; the
 * printed line and init_from.json say which tensors were mapped, new, and which layer
 * was seeded. */
START_TEST(test_init_from_mixer_change) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    char S[1100], T[1100], F[1100], cfg[1100];
    snprintf(S, sizeof S, "%s", tu_path("S2"));
    snprintf(T, sizeof T, "%s", tu_path("T2"));
    snprintf(F, sizeof F, "%s", tu_path("F2"));
    snprintf(cfg, sizeof cfg, "%s", tu_path("tiny.json"));
    const char *q = "--quiet --threads 1";
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s --set model.mixer=sdpa --set train.steps=3", cfg, S, q) == 0, "%s",
                  g_out);
    const char *lr0 = "--set train.steps=1 --set train.lr=0 --set model.mixer=sdpa,gma";
    ck_assert_msg(run("./bin/gmatrain --config %s --init-from %s --out %s --threads 1 %s", cfg, S, T, lr0) == 0, "%s", g_out);
    ck_assert_msg(strstr(g_out, "28 tensors copied; 8 mapped from the attention they replace (layer 1 sdpa -> gma): "
                                "blocks.1.mixer.q.weight") &&
                      strstr(g_out, "3 new, at their fresh initialisation: blocks.1.mixer.gma.mu") &&
                      strstr(g_out, "the routing of layer 1 is seeded by k-means") && strstr(g_out, "k-means initialisation"),
                  "%s", g_out);
    const char *proj[] = {"blocks.1.mixer.q.weight", "blocks.1.mixer.k.bias", "blocks.1.mixer.v.weight", "blocks.1.mixer.o.weight",
                          "blocks.0.mixer.q.weight"};
    for (int i = 0; i < 5; i++) ck_assert_msg(same_tensor(S, T, proj[i]), "%s is not the source's", proj[i]);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s %s %s", cfg, F, q, lr0) == 0, "%s", g_out);
    ck_assert_msg(!same_tensor(F, T, "blocks.1.mixer.gma.mu"), "the routing means are the fresh initialisation");
    ck_assert(same_tensor(F, T, "blocks.1.mixer.gma.var_raw")); /* not seeded: sigma2 = 1 */
    char p[1200];
    snprintf(p, sizeof p, "%s/init_from.json", T);
    char *j = gma_read_file(p, NULL);
    ck_assert_msg(j && strstr(j, "\"mapped\":\t[\"blocks.1.mixer.q.weight <- blocks.1.mixer.q.weight\"") &&
                      strstr(j, "\"kmeans_seeded\":\t[\"blocks.1.mixer\"]") && strstr(j, "\"from\":\t\"sdpa\"") &&
                      strstr(j, "\"new\":\t[\"blocks.1.mixer.gma.mu\""),
                  "%s", j ? j : "");
    free(j);
}
END_TEST

/* metrics.jsonl of run rd with each row's clock fields (tokens_per_s, elapsed_s, the last
 * of a training row) cut off: what a bit-exact trajectory logs the same. */
static char *rows_without_clocks(const char *rd) {
    size_t len;
    char *m = read_rel(rd, "metrics.jsonl", &len);
    ck_assert_ptr_nonnull(m);
    char *out = calloc(len + 1, 1);
    for (char *line = m, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        char *cut = strstr(line, ",\"tokens_per_s\"");
        if (cut) *cut = 0;
        strcat(out, line);
        strcat(out, cut ? "}\n" : "\n");
    }
    free(m);
    return out;
}

static double json_number(const char *text, const char *key) {
    cJSON *j = cJSON_Parse(text);
    const cJSON *v = j;
    char k[256];
    snprintf(k, sizeof k, "%s", key);
    for (char *sv = NULL, *t = strtok_r(k, ".", &sv); t && v; t = strtok_r(NULL, ".", &sv))
        v = cJSON_GetObjectItemCaseSensitive(v, t);
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    cJSON_Delete(j);
    return x;
}

/* a number of the metadata of RUN/ckpt/optim.safetensors (the clocks), NAN when absent */
static double ckpt_meta_number(const char *rd, const char *ckpt, const char *key) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s/optim.safetensors", rd, ckpt);
    StFile f;
    ck_assert_int_eq(st_open(&f, p), 0);
    const char *v = st_meta(&f, key);
    double x = v ? atof(v) : NAN;
    st_close(&f);
    return x;
}

/* A resume from a checkpoint inside a log window (step 6, log_every 4) after the run went
 * on to step 8 and a row was cut: metrics.jsonl ends as the uninterrupted run's (the row
 * at step 8 averages steps 5-8, bit for bit; nothing twice; the cut row gone); the clocks
 * add up over the sessions; a finished run resumed keeps its final evaluation in
 * best_valid. */
START_TEST(test_resume_accounting) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    char cfg[1100], ref[1100], rd[1100];
    snprintf(cfg, sizeof cfg, "%s", tu_path("tiny.json"));
    snprintf(ref, sizeof ref, "%s", tu_path("ref"));
    snprintf(rd, sizeof rd, "%s", tu_path("res"));
    const char *sets = "--set train.steps=8 --set train.log_every=4 --set train.checkpoint_every=3 "
                       "--set train.keep_checkpoints=5";
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet %s", cfg, ref, sets) == 0, "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet %s", cfg, rd, sets) == 0, "%s", g_out);
    char p[1200];
    snprintf(p, sizeof p, "%s/metrics.jsonl", rd);
    FILE *f = fopen(p, "a");
    fputs("{\"step\":9,\"lo", f); /* a row cut mid-way */
    fclose(f);
    double t6 = ckpt_meta_number(rd, "ckpt_00000006", "train_seconds");
    ck_assert_msg(t6 > 0, "no train_seconds in the checkpoint");
    ck_assert_msg(run("./bin/gmatrain --resume %s/ckpt_00000006 --quiet --set train.steps=8", rd) == 0, "%s", g_out);
    char *a = rows_without_clocks(ref), *b = rows_without_clocks(rd);
    ck_assert_msg(!strcmp(a, b), "uninterrupted:\n%s\nresumed:\n%s", a, b);
    free(a), free(b);
    /* model.safetensors holds no clock: the same bytes as the uninterrupted run's */
    ck_assert_int_eq(run("cmp %s/latest/model.safetensors %s/latest/model.safetensors", ref, rd), 0);
    char *sum = read_rel(rd, "summary.json", NULL);
    ck_assert_msg(json_number(sum, "train_seconds") > t6, "train_seconds did not add up: %s", sum);
    /* a finished run resumed for more steps: its final valid loss stays in best_valid */
    double final8 = json_number(sum, "valid.loss");
    ck_assert_msg(json_number(sum, "best_valid") == final8, "%s", sum);
    free(sum);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=9", rd) == 0, "%s", g_out);
    sum = read_rel(rd, "summary.json", NULL);
    double final9 = json_number(sum, "valid.loss");
    ck_assert_msg(json_number(sum, "best_valid") == (final8 < final9 ? final8 : final9), "%s", sum);
    free(sum);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("run_safety");
    TCase *tc = tcase_create("run_safety");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_second_writer);
    tcase_add_test(tc, test_resume_other_data);
    tcase_add_test(tc, test_resume_same_counts_other_content);
    tcase_add_test(tc, test_init_from);
    tcase_add_test(tc, test_init_from_mixer_change);
    tcase_add_test(tc, test_resume_accounting);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
