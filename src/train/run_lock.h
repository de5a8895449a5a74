/* run_lock.h: one writer per run directory.
 *
 * gmatrain holds an exclusive flock(2) on RUN/.lock from before it writes anything in RUN
 * to its exit; the kernel releases it when the process ends, however it ends (kill -9
 * included), so a stale lock file never blocks a later run. The file holds the holder's
 * pid, for the message a second writer gets. Readers (gmaeval, gmasample, scripts) take
 * no lock. With MPI only the rank that writes (rank 0) takes it. */
#ifndef GMA_RUN_LOCK_H
#define GMA_RUN_LOCK_H

/* Create run_dir if needed, take its lock and write this process's pid into it. Returns
 * the lock's file descriptor (keep it open while writing); -2 with gma_error naming the
 * holder's pid when another process holds the lock; -1 with gma_error when the directory
 * or the file cannot be made or locked. */
int run_lock_take(const char *run_dir);
/* For a resume of `path` that found no checkpoint: 1 with gma_error naming the holder's pid
 * when another process holds path's lock (a run before its first checkpoint), else 0 (no
 * lock file, or nobody holds it). Creates nothing; its probe is a shared lock dropped at
 * once. */
int run_lock_busy(const char *path);
/* Release a lock run_lock_take returned (fd < 0: nothing). */
void run_lock_release(int fd);
#endif
