/* test_faults.c: injected faults. kill -9 at random moments during training and
 * checkpoint writes (every survivor loadable and resumable, the end result bit-exact,
 * no orphan directories), a small disk (RLIMIT_FSIZE with SIGXFSZ ignored: one line, no
 * partial checkpoint, the previous one intact; a metrics log that cannot grow: one line,
 * whole rows only), and corrupt checkpoints and shards (one line, exit 2). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_edit.h"
#include "data/lm/shard.h"

/* No *.tmp.* file and no ckpt_N/ without both files anywhere in the run. */
static void assert_no_orphans(const char *run_dir) {
    ck_assert_int_eq(run("cd %s && find . -name '*.tmp.*'; for d in ckpt_*; do [ -f $d/model.safetensors ] && "
                         "[ -f $d/optim.safetensors ] || echo \"orphan $d\"; done",
                         run_dir),
                     0);
    ck_assert_msg(g_out[0] == 0, "left behind in %s:\n%s", run_dir, g_out);
}

START_TEST(test_kill9_loop) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    const char *sets = "--set train.steps=1500 --set train.keep_checkpoints=2";
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet %s", tu_path("tiny.json"), tu_path("ref"), sets) == 0, "%s",
                  g_out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* Each kill lands after a random wait of at most 1/16 of the uninterrupted run, so 25
     * waits add up to about 0.8 of it on any machine and the loop rarely finishes the run
     * (a fixed bound let a fast machine finish before 20 kills). */
    double ref_us = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    int max_wait_us = (int)(ref_us / 16) + 1;
    char rd[1100];
    snprintf(rd, sizeof rd, "%s", tu_path("killed"));
    char latest[1200];
    snprintf(latest, sizeof latest, "%s/latest", rd);
    srand((unsigned)time(NULL));
    int kills = 0, finished = 0;
    for (int it = 0; it < 25 && !finished; it++) {
        int resume = access(latest, F_OK) == 0;
        pid_t pid = fork();
        if (pid == 0) {
            int fd = open("/dev/null", 1);
            dup2(fd, 1), dup2(fd, 2);
            if (resume) execl("./bin/gmatrain", "gmatrain", "--resume", rd, "--quiet", "--set", "train.steps=1500", "--set",
                              "train.keep_checkpoints=2", (char *)NULL);
            else execl("./bin/gmatrain", "gmatrain", "--config", tu_path("tiny.json"), "--out", rd, "--quiet", "--set",
                       "train.steps=1500", "--set", "train.keep_checkpoints=2", (char *)NULL);
            _exit(127);
        }
        usleep((useconds_t)(rand() % max_wait_us));
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            finished = WIFEXITED(st) && WEXITSTATUS(st) == 0;
            ck_assert_msg(finished, "gmatrain failed before its kill (iteration %d, status %d)", it, st);
            break;
        }
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        kills++;
        if (access(latest, F_OK) == 0) /* the survivor loads */
            ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test", rd) == 0, "after kill %d: %s", kills, g_out);
    }
    if (!finished) {
        const char *how = access(latest, F_OK) == 0 ? "--resume" : "--config";
        ck_assert_msg(run("./bin/gmatrain %s %s --out %s --quiet %s", how, !strcmp(how, "--resume") ? rd : tu_path("tiny.json"), rd,
                          sets) == 0,
                      "%s", g_out);
    }
    tu_same_tensors(tu_path("ref"), rd, "latest/model.safetensors");
    tu_same_tensors(tu_path("ref"), rd, "latest/optim.safetensors");
    assert_no_orphans(rd);
    ck_assert_msg(kills >= 20, "only %d kills landed (waits up to %d us): the run is too short for the loop", kills, max_wait_us);
    fprintf(stderr, "kill -9 loop: %d kills (waits up to %d us), the resumed run equals the uninterrupted one\n", kills, max_wait_us);
}
END_TEST

/* A save that runs out of disk: model.safetensors (limit below its size) or
 * optim.safetensors (limit between the two) cannot be written. */
START_TEST(test_small_disk) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    char rd[1100];
    snprintf(rd, sizeof rd, "%s", tu_path("disk"));
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=2", tu_path("tiny.json"), rd) == 0, "%s", g_out);
    char p[1200];
    snprintf(p, sizeof p, "%s/ckpt_00000002/model.safetensors", rd);
    size_t model_len, optim_len;
    char *model = gma_read_file(p, &model_len);
    snprintf(p, sizeof p, "%s/ckpt_00000002/optim.safetensors", rd);
    free(gma_read_file(p, &optim_len));
    ck_assert(optim_len > model_len + 4096);
    long limits_kb[2] = {(long)(model_len / 2048), (long)((model_len + optim_len) / 2048)};
    for (int k = 0; k < 2; k++) {
        /* SIGXFSZ ignored by the shell stays ignored in gmatrain: writes fail with EFBIG */
        ck_assert_int_eq(run("trap '' XFSZ; ulimit -f %ld; ./bin/gmatrain --resume %s --quiet --set train.steps=3", limits_kb[k], rd),
                         1);
        ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "File too large") && strstr(g_out, "safetensors"), "%s", g_out);
        snprintf(p, sizeof p, "%s/ckpt_00000003", rd);
        ck_assert_msg(!gma_path_exists(p), "limit %ld KiB: a partial checkpoint %s is left", limits_kb[k], p);
        assert_no_orphans(rd);
        snprintf(p, sizeof p, "%s/latest/model.safetensors", rd);
        size_t len;
        char *now = gma_read_file(p, &len);
        ck_assert(len == model_len && memcmp(now, model, len) == 0);
        free(now);
        ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test", rd) == 0, "%s", g_out);
    }
    free(model);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=3", rd) == 0, "%s", g_out); /* room again */
}
END_TEST

/* metrics.jsonl on a full disk (RLIMIT_FSIZE of 8 KiB, ulimit -f 16 in 512-byte blocks: config.json, about 4 KiB, fits;
 * the log grows past it): one line naming metrics.jsonl, exit 1, and the file keeps whole rows only. */
START_TEST(test_metrics_full) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    char rd[1100];
    snprintf(rd, sizeof rd, "%s", tu_path("mfull"));
    ck_assert_int_eq(run("trap '' XFSZ; ulimit -f 16; ./bin/gmatrain --config %s --out %s --quiet --set train.steps=400 "
                         "--set train.checkpoint_every=0", tu_path("tiny.json"), rd),
                     1);
    ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "metrics.jsonl: cannot write a row at step") &&
                      strstr(g_out, "File too large"),
                  "%s", g_out);
    char p[1200];
    snprintf(p, sizeof p, "%s/metrics.jsonl", rd);
    size_t len;
    char *m = gma_read_file(p, &len);
    ck_assert_msg(m && len > 1000 && len <= 8192 && m[len - 1] == '\n', "metrics.jsonl ends in a cut row (%zu bytes)", len);
    for (char *line = m, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = 0;
        ck_assert_msg(line[0] == '{' && nl[-1] == '}', "not a whole row: %s", line);
    }
    free(m);
}
END_TEST

/* A broken latest checkpoint: --resume RUN refuses with one line naming the newest intact
 * ckpt_N, which resumes. */
START_TEST(test_broken_latest) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    char rd[1100], p[1200];
    snprintf(rd, sizeof rd, "%s", tu_path("bl"));
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=3 --set train.keep_checkpoints=3",
                      tu_path("tiny.json"), rd) == 0, "%s", g_out);
    snprintf(p, sizeof p, "%s/ckpt_00000003/model.safetensors", rd);
    ck_assert_int_eq(truncate(p, 100), 0);
    for (int k = 0; k < 2; k++) { /* the config from the checkpoint, then from --config */
        if (k == 0) ck_assert_int_eq(run("./bin/gmatrain --resume %s --quiet --set train.steps=4", rd), 2);
        else
            ck_assert_int_eq(run("./bin/gmatrain --config %s --resume %s --quiet --set train.steps=4", tu_path("tiny.json"), rd),
                             2);
        ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "the newest intact checkpoint is") &&
                          strstr(g_out, "/bl/ckpt_00000002 (--resume "),
                      "case %d: %s", k, g_out);
    }
    ck_assert_msg(run("./bin/gmatrain --resume %s/ckpt_00000002 --quiet --set train.steps=4", rd) == 0, "%s", g_out);
    /* RUN/latest gone: the newest intact ckpt_N of RUN named (config from the checkpoint, then from --config) */
    snprintf(p, sizeof p, "%s/latest", rd);
    ck_assert_int_eq(unlink(p), 0);
    for (int k = 0; k < 2; k++) {
        if (k == 0) ck_assert_int_eq(run("./bin/gmatrain --resume %s --quiet --set train.steps=5", rd), 2);
        else
            ck_assert_int_eq(run("./bin/gmatrain --config %s --resume %s --quiet --set train.steps=5", tu_path("tiny.json"), rd),
                             2);
        ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "the newest intact checkpoint is") &&
                          strstr(g_out, "/bl/ckpt_00000004 (--resume "),
                      "latest gone, case %d: %s", k, g_out);
    }
}
END_TEST

/* Corrupt checkpoints: gmaeval and gmatrain --resume refuse each with one line, exit 2. */
START_TEST(test_corrupt_checkpoints) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    char rd[1100];
    snprintf(rd, sizeof rd, "%s", tu_path("c"));
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=1", tu_path("tiny.json"), rd) == 0, "%s", g_out);
    char model[1200], optim[1200];
    snprintf(model, sizeof model, "%s/ckpt_00000001/model.safetensors", rd);
    snprintf(optim, sizeof optim, "%s/ckpt_00000001/optim.safetensors", rd);
    size_t ml, ol;
    char *m0 = gma_read_file(model, &ml), *o0 = gma_read_file(optim, &ol);
    enum { TRUNC_HALF, TRUNC_HEADER, HUGE_HEADER, GARBAGE, NAN_VALUE, NO_OPTIM, BAD_OPTIM, BAD_STEP, NO_FORMAT, N_CASES };
    for (int k = 0; k < N_CASES; k++) {
        FILE *f = fopen(model, "wb");
        fwrite(m0, 1, k == TRUNC_HALF ? ml / 2 : k == TRUNC_HEADER ? 5 : ml, f);
        fclose(f);
        f = fopen(optim, "wb");
        fwrite(o0, 1, k == BAD_OPTIM ? ol - 7 : ol, f);
        fclose(f);
        if (k == HUGE_HEADER || k == GARBAGE || k == NAN_VALUE) {
            f = fopen(model, "r+b");
            if (k == HUGE_HEADER) fwrite("\xff\xff\xff\xff\xff\xff\x00\x00", 1, 8, f);
            else if (k == GARBAGE) fwrite("{{{{{{{{{{{{{{{{{{{{", 1, 20, f);
            else fseek(f, -4, SEEK_END), fwrite("\x00\x00\xc0\x7f", 1, 4, f);
            fclose(f);
        }
        if (k == NO_OPTIM) remove(optim);
        if (k == BAD_STEP) ce_set_meta(model, "step", "-1");
        if (k == NO_FORMAT) ce_set_meta(model, "format", NULL);
        int eval_reads = k != NO_OPTIM && k != BAD_OPTIM && k != BAD_STEP; /* gmaeval reads no optimiser state */
        if (eval_reads) {
            ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data test", rd), 2);
            ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "safetensors"), "case %d: %s", k, g_out);
        }
        ck_assert_int_eq(run("./bin/gmatrain --resume %s --quiet --set train.steps=2", rd), 2);
        ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "safetensors"), "case %d: %s", k, g_out);
    }
    free(m0);
    free(o0);
}
END_TEST

/* Corrupt shards, for gmaeval --data FILE and as a run's train.bin: one line, exit 2. */
START_TEST(test_corrupt_shards) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=1", tu_path("tiny.json"), tu_path("c")) == 0, "%s",
                  g_out);
    uint32_t t[64];
    for (int i = 0; i < 64; i++) t[i] = (uint32_t)(i % 19 + 1);
    ck_assert_int_eq(gma_mkdirs(tu_path("d")), 0);
    char shard[1100];
    snprintf(shard, sizeof shard, "%s", tu_path("d/train.bin")); /* tu_path's buffers rotate */
    ck_assert_int_eq(shard_write(shard, t, 64, 20), 0);
    size_t len;
    char *good = gma_read_file(shard, &len);
    enum { BAD_MAGIC, BAD_VERSION, BAD_WIDTH, TRUNCATED, LONGER, ID_TOO_BIG, ZERO, ONE, HUGE_VOCAB, N_CASES };
    for (int k = 0; k < N_CASES; k++) {
        if (k == ZERO || k == ONE) ck_assert_int_eq(shard_write(shard, t, (uint64_t)(k == ONE), 20), 0);
        else if (k == HUGE_VOCAB) { /* ids past 2^31 would reach the model as negative int32 */
            uint32_t big[4] = {1, 4278190080u, 2, 3};
            ck_assert_int_eq(shard_write(shard, big, 4, 4278194544u), 0);
        }
        else {
            char *b = malloc(len + 8);
            memcpy(b, good, len);
            size_t n = len;
            if (k == BAD_MAGIC) b[0] = 'X';
            if (k == BAD_VERSION) b[8] = 9;
            if (k == BAD_WIDTH) b[12] = 3;
            if (k == TRUNCATED) n = len - 3;
            if (k == LONGER) memcpy(b + len, "abcdefgh", 8), n = len + 8;
            if (k == ID_TOO_BIG) b[32 + 2 * 10] = 25;
            FILE *f = fopen(shard, "wb");
            fwrite(b, 1, n, f);
            fclose(f);
            free(b);
        }
        ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data %s", tu_path("c"), shard), 2);
        ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "train.bin"), "case %d: %s", k, g_out);
        ck_assert_int_eq(run("./bin/gmatrain --config %s --quiet --out %s --set data.source=shards --set data.path=%s",
                             tu_path("tiny.json"), tu_path("s"), tu_path("d")),
                         2);
        ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "train.bin"), "train, case %d: %s", k, g_out);
    }
    free(good);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_kill9_loop);
    tcase_add_test(tc, test_small_disk);
    tcase_add_test(tc, test_corrupt_checkpoints);
    tcase_add_test(tc, test_corrupt_shards);
    tcase_add_test(tc, test_metrics_full);
    tcase_add_test(tc, test_broken_latest);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
