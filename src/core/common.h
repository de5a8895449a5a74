/* common.h: the real type, error reporting and small helpers shared by every module.
 *
 * The library is compiled twice: with `real` = float (the product) and, with
 * -DGMA_DOUBLE, with `real` = double (for gradient checks against central finite
 * differences). Code that must hold either precision uses `real`; file formats are
 * always float32.
 *
 * Errors: library functions never exit the process on bad input. They record one
 * line with gma_errorf() and return a negative value (or NULL); the command line
 * prints gma_error() and exits non-zero.
 */
#ifndef GMA_COMMON_H
#define GMA_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>

#ifdef GMA_DOUBLE
typedef double real;
#define REAL_NAME "float64"
#define rexp exp
#define rlog log
#define rtanh tanh
#define rsqrt_ sqrt
#define rlog1p log1p
#else
typedef float real;
#define REAL_NAME "float32"
/* float versions of the transcendental functions (the double ones cost 2-3x more) */
#define rexp expf
#define rlog logf
#define rtanh tanhf
#define rsqrt_ sqrtf
#define rlog1p log1pf
#endif

#define GMA_VERSION "0.4.0"

/* Record the current error (printf-style, one line, no trailing newline). Returns -1. */
int gma_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prefix the current error with more context ("while X: <old message>"). Returns -1. */
int gma_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The last recorded error message ("" if none). Thread-local. */
const char *gma_error(void);
void gma_error_clear(void);

/* The byte offset of the first byte of s[0..n) that does not start valid UTF-8 (an overlong
 * form, a surrogate, past U+10FFFF, a truncated sequence), or -1 when all of it is valid. */
long gma_utf8_invalid(const char *s, size_t n);
/* s as one line for a message: newline, tab and CR as \n \t \r, other control bytes and
 * bytes that are not UTF-8 as \xNN, cut at about 200 bytes; in one of 4 rotating buffers. */
const char *gma_quote(const char *s);

/* Allocation that reports file:line on failure and aborts: out of memory is not user input. */
void *gma_xmalloc_at(size_t n, const char *file, int line);
void *gma_xcalloc_at(size_t n, size_t sz, const char *file, int line);
void *gma_xrealloc_at(void *p, size_t n, const char *file, int line);
char *gma_xstrdup_at(const char *s, const char *file, int line);
#define xmalloc(n) gma_xmalloc_at((n), __FILE__, __LINE__)
#define xcalloc(n, s) gma_xcalloc_at((n), (s), __FILE__, __LINE__)
#define xrealloc(p, n) gma_xrealloc_at((p), (n), __FILE__, __LINE__)
#define xstrdup(s) gma_xstrdup_at((s), __FILE__, __LINE__)

/* Wall clock in seconds (monotonic). */
double gma_now(void);

/* Command-line numbers: the whole of s as a number in [lo, hi] (finite); 0, or -1. */
int gma_parse_long(const char *s, long lo, long hi, long *out);
/* a whole non-negative decimal integer (a seed): 0, or -1 on anything else, '-' included */
int gma_parse_u64(const char *s, unsigned long long *out);
int gma_parse_double(const char *s, double lo, double hi, double *out);

/* A 64-bit hash of n bytes, continuing from h (start with GMA_HASH_SEED): equal bytes give
 * equal hashes (replica checks, bit-for-bit comparisons); not for anything persistent. */
#define GMA_HASH_SEED 0xcbf29ce484222325ULL
uint64_t gma_hash(const void *p, size_t n, uint64_t h);

/* Read a whole file into a NUL-terminated buffer. Returns NULL and sets the error. */
char *gma_read_file(const char *path, size_t *len_out);
/* Write bytes to path atomically: path.tmp, fsync, rename, fsync the directory.
 * On failure the previous file at path is untouched. A symbolic link at path keeps pointing
 * where it did (the file it names is the one replaced); /dev/stdout, /dev/stderr and
 * /proc/self/fd/N are written through that descriptor (also when the shell sends it to a
 * file), and another path that is there and not a regular file (a pipe, a terminal) is
 * written straight: nothing is renamed over a link, a device or a descriptor. */
int gma_write_file_atomic(const char *path, const void *data, size_t len);
/* from's bytes into to, written as gma_write_file_atomic does; 0 or -1 with gma_error */
int gma_copy_file(const char *from, const char *to);
/* mkdir -p. */
int gma_mkdirs(const char *path);
int gma_path_exists(const char *path);

/* Call first in main(): sets a short OpenMP spin (unless the user chose one) and
 * re-executes the program so libgomp sees it. See common.c. */
void gma_openmp_env(char **argv);

#define GMA_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GMA_MAX(a, b) ((a) > (b) ? (a) : (b))
/* ceil(a / b) for a >= 0, b > 0 without the overflow of (a + b - 1) / b near the type's end */
#define GMA_DIV_UP(a, b) ((a) / (b) + ((a) % (b) != 0))

#endif
