/* fuzz_util.h: helpers shared by the libFuzzer targets (fuzz/fuzz_*.c).
 *
 * The readers under test take paths, so each input is written to a file in a per-process
 * scratch directory; a target that fails an invariant calls fz_fail, which aborts so that
 * libFuzzer records the input as a crash. */
#ifndef GMA_FUZZ_UTIL_H
#define GMA_FUZZ_UTIL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/common.h"

/* The scratch directory of this process (created on first use, removed at exit). */
const char *fz_dir(void);
/* fz_dir()/name, in one of a few rotating static buffers. */
const char *fz_path(const char *name);
/* Write n bytes to path (aborts when it cannot: that is not the input's fault). */
void fz_write(const char *path, const void *data, size_t n);
/* Remove path and everything under it (files, directories, links). */
void fz_rmtree(const char *path);
/* Call once from LLVMFuzzerInitialize: single-threaded OpenMP/BLAS, no stray output. */
void fz_init(void);
/* Report a broken invariant and abort. */
void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Split data at the first NUL: *a (n_a bytes, NUL-terminated copy) and the rest. */
char *fz_cut(const uint8_t **data, size_t *n);
#endif
