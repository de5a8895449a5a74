/* testutil.h: helpers shared by the Check suites.
 *
 * Each tests/test_X.c (float32 library) or tests/test64_X.c (float64 library) defines
 * `Suite *make_suite(void)` and ends with GMA_TEST_MAIN(). Fixtures are built by the
 * tests in a fresh temporary directory (tu_tmpdir), never read from outside the checkout.
 */
#ifndef GMA_TESTUTIL_H
#define GMA_TESTUTIL_H
#include <check.h>
#include <stdlib.h>
#include "core/common.h"
#include "core/config.h"
#include "nn/mixers/mixer.h"
#include "train/config_registry.h"

/* A fresh directory under $TMPDIR (or /tmp), removed at exit. Returns its path. */
const char *tu_tmpdir(void);
/* Join tu_tmpdir() and name into a static rotating buffer. */
const char *tu_path(const char *name);
/* Write a text file (creating it). */
void tu_write(const char *path, const char *text);
/* Run a shell command, return its exit status (0..255) and capture up to cap-1 bytes of
 * stdout+stderr into out (may be NULL). */
int tu_run(const char *cmd, char *out, size_t cap);
/* tu_run of a printf-formatted command; output (up to 64 KiB) lands in g_out. */
extern char g_out[65536];
int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The id of a process that has exited and been reaped (a pid no process holds now). */
int tu_dead_pid(void);
/* Byte-compare every tensor of the safetensors file rel (e.g. "latest/model.safetensors")
 * in the run folders run_a and run_b: the same names, sizes and bits. */
void tu_same_tensors(const char *run_a, const char *run_b, const char *rel);
/* A tiny model config (V 11, D 8, H 2, L 2, d_ff 12, N 8, Kc 3, chunk 3) for gradient checks. */
Config tu_tiny_config(const char *mixer);
/* Apply "a.b=v;c.d=w" config assignments to c, then validate it (asserting both). */
void tu_apply_sets(Config *c, const char *sets);
/* The rows of training batches k = 0 .. n_batches-1 of d (lmdata_train_batch, B x N, the
 * RNG seeded 1): for row b of batch k, scored[k * B + b] positions with a target and the
 * last of them in last[k * B + b] (-1: none). */
struct LmData;
void tu_train_batch_rows(struct LmData *d, int n_batches, int B, int N, int *scored, int *last);
/* Max relative error between two arrays: max |a-b| / max(1e-12, max(|a|,|b|)) per element. */
double tu_max_rel_err(const double *a, const double *b, size_t n, double floor_abs);
/* Decoding against the full forward: the two compute the same logits in other summation
 * orders (one row against N rows: BLAS picks other kernels for each, and other kernels again
 * under another OPENBLAS_CORETYPE). A float32 sum of n terms in any order is within
 * gamma_n = n u / (1 - n u) of the sum of its terms' magnitudes (u = 2^-24; Higham, Accuracy
 * and Stability of Numerical Algorithms, 2nd ed., eq. 3.4). The tiny models of these tests
 * (tu_tiny_config) sum at most 16 terms at a time (width 8, d_ff 12, 8 positions), so a sum
 * is within 16 u of its terms; a logit ends a chain of about 8 such sums a block (the
 * projections, the mixer's core, the norm, the MLP's two layers, the head), and the terms'
 * magnitudes are of the order of the row's largest logit. So 2 blocks x 8 sums x 16 u =
 * 256 u ~ 1.5e-5 of the row's largest logit bounds the gap for any kernel set; a wrong
 * state or cache is off by 1e-3 or more. */
#define TU_F32_DECODE_BOUND (256.0 * 5.9604644775390625e-8)
/* max |a - b| over the row / max |b| over the row (b the reference) */
double tu_row_rel_err(const real *a, const real *b, int n);
/* path: GPT-2's byte alphabet as an encoder.json / vocab.json (bytes outside ! .. ~, 0xA1 ..
 * 0xAC, 0xAE .. 0xFF map to U+0100 and up, in order) and <|endoftext|> = 256, no merges */
void tu_write_gpt2_byte_vocab(const char *path);

/* GMA_TEST_TIMEOUT_SCALE=N, when CK_TIMEOUT_MULTIPLIER (Check's own) is not set, becomes
 * it before the suite is made: every case's timeout x N (scripts/run_tests.sh sets it too) */
#define GMA_TEST_MAIN()                                              \
    int main(int argc, char **argv) {                                \
        (void)argc;                                                  \
        gma_openmp_env(argv);                                        \
        config_register_all();                                        \
        if (!getenv("CK_TIMEOUT_MULTIPLIER") && getenv("GMA_TEST_TIMEOUT_SCALE")) \
            setenv("CK_TIMEOUT_MULTIPLIER", getenv("GMA_TEST_TIMEOUT_SCALE"), 1); \
        SRunner *sr = srunner_create(make_suite());                  \
        srunner_run_all(sr, CK_NORMAL);                              \
        int nf = srunner_ntests_failed(sr);                          \
        srunner_free(sr);                                            \
        return nf == 0 ? 0 : 1;                                      \
    }
#endif
