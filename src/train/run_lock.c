/* run_lock.c: the writer's lock on a run directory (see run_lock.h). */
#include "train/run_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/common.h"

/* the pid the holder wrote into the lock file, or 0 when it cannot be read */
static long holder_pid(int fd) {
    char buf[32] = "";
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = 0;
    return strtol(buf, NULL, 10);
}

int run_lock_take(const char *run_dir) {
    char path[2100];
    snprintf(path, sizeof path, "%s/.lock", run_dir);
    if (gma_mkdirs(run_dir) != 0) return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return gma_errorf("%s: cannot open the run's lock: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        long pid = e == EWOULDBLOCK ? holder_pid(fd) : 0;
        close(fd);
        if (e != EWOULDBLOCK) return gma_errorf("%s: cannot lock: %s", path, strerror(e));
        if (pid > 0)
            gma_errorf("%s is in use: another gmatrain (pid %ld) is writing this run (lock %s); wait for it to end, or pass "
                       "--out DIR for a new run", run_dir, pid, path);
        else
            gma_errorf("%s is in use: another gmatrain is writing this run (lock %s); wait for it to end, or pass --out DIR "
                       "for a new run", run_dir, path);
        return -2;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        int e = errno;
        close(fd);
        return gma_errorf("%s: cannot write the pid: %s", path, strerror(e));
    }
    return fd;
}

void run_lock_release(int fd) {
    if (fd >= 0) close(fd); /* closing the last descriptor releases the flock */
}

int run_lock_busy(const char *path) {
    char lock[2100];
    snprintf(lock, sizeof lock, "%s/.lock", path);
    int fd = open(lock, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    /* a shared probe, dropped at once: it never makes or writes the file */
    if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
        flock(fd, LOCK_UN);
        close(fd);
        return 0;
    }
    int e = errno;
    long pid = e == EWOULDBLOCK ? holder_pid(fd) : 0;
    close(fd);
    if (e != EWOULDBLOCK) return 0;
    char who[64] = "another gmatrain";
    if (pid > 0) snprintf(who, sizeof who, "another gmatrain (pid %ld)", pid);
    gma_errorf("%s is in use: %s is writing this run and has no checkpoint yet (lock %s); wait for it to end, or pass "
               "--out DIR for a new run", path, who, lock);
    return 1;
}
