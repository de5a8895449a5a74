/* test_run_safety.c: a run directory that nothing can damage. A second writer on a run
 * that is training is refused (the lock names the holder's pid) and changes nothing; the
 * lock goes with the holder, kill -9 included. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_edit.h"

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

Suite *make_suite(void) {
    Suite *s = suite_create("run_safety");
    TCase *tc = tcase_create("run_safety");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_second_writer);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
