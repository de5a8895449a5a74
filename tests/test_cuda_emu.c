/* test_cuda_emu.c: the CUDA backend's kernels under the CPU emulation of CUDA
 * (scripts/cuda_emu_check.sh all, docs/cuda.md): the emulation's self-test (planted
 * divergent barriers, bad launches, host access to device memory, overruns, a race), then
 * every CUDA op against its CPU twin, with blocks and threads in order and in reverse
 * order: emu_baselines and emu_core over the rows of the op table
 * (tests/cuda_emu/op_rows.h; the expected rows are counted from the table, each must run a
 * check). This is how the suite keeps the kernels' logic checked on machines without a GPU;
 * it needs g++ (C++20), which the build packages bring. Then data-parallel training on the
 * emulated `make cuda-mpi` build (scripts/cuda_emu_check.sh mpi): gradients all-reduced by
 * NCCL between two emulated GPUs, and through host memory when two ranks share one, each
 * matching one process with twice the batch; and generation with incremental decoding on
 * the emulated GPU, the 40-token prompt prefilled, drawing the tokens a full forward per
 * token draws on the CPU (gma, sdpa, linear); and that build as on a machine without a
 * GPU driver (EMU_DEVICES=0), where `gmabench model --device cpu` must run and `--device cuda` be refused. Skipped without
 * mpicc and mpirun, on a "SKIP: " line (scripts/run_tests.sh). */
#include <stdlib.h>
#include <string.h>

#include "cuda_emu/op_rows.h"
#include "testutil.h"

/* the rows of the op table: emu_core's and emu_baselines' */
#define COUNT_ROW(part, op, grad, args) +1
static const int N_CORE = 0 OP_ROWS(COUNT_ROW), N_BASE = 0 BASE_ROWS(COUNT_ROW);
#undef COUNT_ROW

/* a driver's run in one order (the section after "== DRIVER (reverse order R)"): each of
 * its n_rows rows ran and checked something, the rows' checks add up to the total, and
 * none failed */
static void rows_ok(const char *out, const char *driver, int reverse, int n_rows) {
    char header[96], summary[64], format[160];
    snprintf(header, sizeof header, "== %s (reverse order %d)", driver, reverse);
    snprintf(summary, sizeof summary, "\n%s: ", driver);
    snprintf(format, sizeof format, "%s: %%d of %%d rows ran, %%d checks, %%d failures, %%d rows without a check", driver);
    const char *p = strstr(out, header), *end;
    ck_assert_msg(p, "no \"%s\" in the output", header);
    end = strstr(p + 1, "\n== ");
    if (!end) end = p + strlen(p);
    int rows = 0, sum = 0;
    for (const char *r = strstr(p, "\nrow "); r && r < end; r = strstr(r + 1, "\nrow ")) {
        const char *c = strstr(r, "): ");
        ck_assert_msg(c && c < end, "a row line without its count: %.80s", r + 1);
        int k = atoi(c + 3);
        ck_assert_msg(k > 0, "a row ran no check: %.80s", r + 1);
        rows++, sum += k;
    }
    int ran = -1, of = -1, checks = -1, fails = -1, empty = -1;
    const char *t = strstr(p, summary);
    ck_assert_msg(t && t < end, "%s: no summary", header);
    ck_assert(sscanf(t + 1, format, &ran, &of, &checks, &fails, &empty) == 5);
    printf("%s: %d rows of %d, %d checks, %d failures\n", header, rows, n_rows, sum, fails);
    ck_assert_int_eq(of, n_rows);
    ck_assert_int_eq(ran, n_rows);
    ck_assert_int_eq(rows, n_rows);
    ck_assert_int_eq(checks, sum);
    ck_assert_int_eq(fails, 0);
    ck_assert_int_eq(empty, 0);
}

START_TEST(test_emulated_kernels_match_cpu) {
    static char out[1 << 20];
    int rc = tu_run("bash scripts/cuda_emu_check.sh all", out, sizeof out);
    ck_assert_msg(rc == 0, "cuda_emu_check.sh all: rc %d\n%s", rc, out + (strlen(out) > 4000 ? strlen(out) - 4000 : 0));
    ck_assert_msg(strstr(out, "0 of 15 selftest cases wrong"), "self-test: %s", out);
    /* both drivers, both orders: every row of the op table (tests/cuda_emu/op_rows.h) */
    for (int r = 0; r < 2; r++) {
        rows_ok(out, "emu_baselines", r, N_BASE);
        rows_ok(out, "emu_core", r, N_CORE);
    }
}
END_TEST

START_TEST(test_emulated_cuda_programs) {
    if (tu_run("command -v mpicc && command -v mpirun", NULL, 0) != 0) {
        printf("SKIP: test_cuda_emu: emulated_cuda_programs: mpicc or mpirun is not on PATH\n");
        fflush(stdout);
        return;
    }
    static char out[1 << 18];
    int rc = tu_run("bash scripts/cuda_emu_check.sh mpi", out, sizeof out);
    ck_assert_msg(rc == 0, "cuda_emu_check.sh mpi: rc %d\n%s", rc, out + (strlen(out) > 4000 ? strlen(out) - 4000 : 0));
    ck_assert_msg(strstr(out, "EMU_DEVICES=2: all-reduce by NCCL") && strstr(out, "EMU_DEVICES=1: all-reduce by MPI through host memory"),
                  "%s", out);
    const char *p = out;
    int ok = 0;
    while ((p = strstr(p, "over 3 steps: ok"))) ok++, p++;
    ck_assert_int_eq(ok, 2);
    for (int i = 0; i < 3; i++) {
        char want[128];
        snprintf(want, sizeof want, "decode %s: prefill + incremental on the emulated GPU = full forward on the CPU",
                 (const char *[]){"gma", "sdpa", "linear"}[i]);
        ck_assert_msg(strstr(out, want), "%s", out);
    }
    /* the CUDA build on a machine without a GPU driver: --device cpu through gmabench's
     * profiling table stays on the cpu backend, --device cuda is refused with the driver's
     * error */
    ck_assert_msg(strstr(out, "no GPU: gmabench model --device cpu runs on the profiling table (backend cpu)"), "%s", out);
    ck_assert_msg(strstr(out, "no GPU: gmabench model --device cuda refused: "), "%s", out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("cuda_emu");
    TCase *tc = tcase_create("emulation");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_emulated_kernels_match_cpu);
    tcase_add_test(tc, test_emulated_cuda_programs);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
