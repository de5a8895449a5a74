/* stale_tmp.h: temporaries that a killed writer left behind.
 *
 * Every writer here (gma_write_file_atomic, the shard writer, the archive extractor, the
 * GPT-2 import's run folder) writes NAME.tmp.PID and renames it to NAME when complete; a
 * process killed with -9 leaves that file. It is stale when process PID no longer exists
 * (kill(PID, 0) fails with ESRCH); the temporary of a live process, or of one this process
 * may not signal, is never stale. */
#ifndef GMA_STALE_TMP_H
#define GMA_STALE_TMP_H
#include <stddef.h>

/* 1 when file name is BASE.tmp.PID with process PID gone (*base_len: the length of BASE),
 * else 0. */
int stale_tmp_name(const char *name, size_t *base_len);
/* Remove dir/NAME.tmp.PID for each NAME of names[0..n) whose PID is gone (a file, or a
 * folder with what it holds: an import's RUN.tmp.PID). Returns how many were removed, or -1
 * with gma_error (a directory that cannot be read, a failed unlink). */
int stale_tmp_sweep(const char *dir, const char *const *names, int n);
#endif
