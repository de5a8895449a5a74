/* test_ops_select.c: backend selection without a GPU. The CPU build must refuse device
 * "cuda" with a message that says how to get it (`make cuda`); an incomplete op table is
 * refused naming the missing op, for every op of the op list; a table that wraps the cpu
 * one (gmabench's profiling table) reaches the cpu backend through ops_sync,
 * ops_device_name, ops_mem_stats and ops_set_precision; precisions other than fp32 need
 * device cuda; the CPU
 * attention mask op; and bin/gmacheck (backend vs CPU comparison) runs cpu against cpu and
 * refuses cuda cleanly when it cannot run it. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "ops/ops.h"
#include "testutil.h"

START_TEST(test_cuda_refused_in_cpu_build) {
    gma_error_clear();
    ck_assert_int_eq(ops_select(OPS_CUDA), -1);
    ck_assert_msg(strstr(gma_error(), "make cuda") != NULL, "message: %s", gma_error());
    ck_assert_ptr_eq(g_ops, &gma_ops_cpu); /* the active backend is unchanged */
    ck_assert_int_eq(ops_select(7), -1);
    ck_assert_msg(strstr(gma_error(), "unknown device 7") != NULL, "message: %s", gma_error());
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    ck_assert_str_eq(ops_device_name(), "cpu");
}
END_TEST

START_TEST(test_table_check_names_missing_op) {
    ck_assert_int_eq(ops_check_table(&gma_ops_cpu), 0);
    /* every op of the op list is required and named when missing (the baselines included) */
    int n = 0;
    char want[64];
    size_t wl, el;
#define CLEAR_ONE(ret, op, params)                                                                      \
    {                                                                                                   \
        GmaOps v = gma_ops_cpu;                                                                         \
        v.name = "partial";                                                                             \
        v.op = NULL;                                                                                    \
        ck_assert_int_eq(ops_check_table(&v), -1);                                                      \
        snprintf(want, sizeof want, "backend partial does not implement op %s", #op);                    \
        wl = strlen(want), el = strlen(gma_error());                                                    \
        ck_assert_msg(el >= wl && !strcmp(gma_error() + el - wl, want), "%s: %s", #op, gma_error());    \
        n++;                                                                                            \
    }
    GMA_OPS(CLEAR_ONE)
#undef CLEAR_ONE
    ck_assert_int_ge(n, 64);
    /* and the list is the whole table: the name, then one pointer per op */
    ck_assert_uint_eq(offsetof(GmaOps, alloc) + (size_t)n * sizeof(void (*)(void)), sizeof(GmaOps));
}
END_TEST

/* gmabench's profiling table: a copy of the active table with matmul wrapped */
static int g_wrapped_calls;
static void counting_matmul(real *C, const real *A, const real *B, int M, int N, int K, int ta, int tb, real al,
                            real be) {
    g_wrapped_calls++;
    gma_ops_cpu.matmul(C, A, B, M, N, K, ta, tb, al, be);
}
static const char *other_name(void) { return "other"; }

START_TEST(test_wrapped_table_reaches_its_backend) {
    /* A table installed in g_ops that wraps the cpu one is still the cpu backend to the ops_*
     * calls (a `make cuda` build mistook it for the GPU and synchronised a device it did not
     * have): they go through the active table's hooks, which the copy carries. */
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    const GmaOps *saved = g_ops;
    GmaOps prof = *g_ops;
    prof.name = "cpu (profiled)";
    prof.matmul = counting_matmul;
    g_ops = &prof;
    ck_assert_int_eq(ops_check_table(g_ops), 0);
    ops_sync();
    ck_assert_str_eq(ops_device_name(), "cpu");
    size_t use = 1, peak = 1;
    ops_mem_reset_peak();
    ops_mem_stats(&use, &peak);
    ck_assert(use == 0 && peak == 0);
    ck_assert_int_eq(ops_set_precision(OPS_FP32), 0);
    ck_assert_int_eq(ops_set_precision(OPS_TF32), -1);
    ck_assert_msg(strstr(gma_error(), "needs device cuda") != NULL, "message: %s", gma_error());
    real a[4] = {1, 2, 3, 4}, c[4] = {0};
    g_ops->matmul(c, a, a, 2, 2, 2, 0, 0, 1, 0);
    ck_assert_int_eq(g_wrapped_calls, 1);
    ck_assert(c[0] == 7 && c[3] == 22);
    /* the hooks asked are the active table's own */
    prof.device_name = other_name;
    ck_assert_str_eq(ops_device_name(), "other");
    g_ops = saved;
    ck_assert_str_eq(ops_device_name(), "cpu");
}
END_TEST

START_TEST(test_precision_needs_cuda) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    ck_assert_int_eq(ops_set_precision(OPS_FP32), 0);
    ck_assert_int_eq(ops_set_precision(OPS_BF16), -1);
    ck_assert_msg(strstr(gma_error(), "needs device cuda") != NULL, "message: %s", gma_error());
    ck_assert_int_eq(ops_set_precision(3), -1);
    Config c;
    cfg_defaults(&c);
    /* device and precision are choice keys: parsed to their index once, written by name */
    ck_assert_int_eq(c.precision, OPS_FP32);
    ck_assert_int_eq(c.device, OPS_CPU);
    ck_assert_str_eq(cfg_enum_name(&c, "precision"), "fp32");
    ck_assert_int_ne(cfg_set(&c, "device=tpu"), 0);
    ck_assert_msg(strstr(gma_error(), "key device") && strstr(gma_error(), "tpu"), "message: %s", gma_error());
    ck_assert_int_eq(cfg_set(&c, "precision=tf32"), 0);
    ck_assert_int_eq(cfg_validate(&c), -1);
    ck_assert_msg(strstr(gma_error(), "precision") && strstr(gma_error(), "cuda"), "message: %s", gma_error());
    ck_assert_int_eq(cfg_set(&c, "device=cuda"), 0);
    ck_assert_int_eq(cfg_validate(&c), 0);
    ck_assert(c.device == OPS_CUDA && c.precision == OPS_TF32);
    char *js = cfg_to_json(&c);
    ck_assert_msg(strstr(js, "\"device\":\t\"cuda\"") && strstr(js, "\"precision\":\t\"tf32\""), "%s", js);
    free(js);
    ck_assert_int_ne(cfg_set(&c, "precision=fp16"), 0);
}
END_TEST

START_TEST(test_attn_mask_cpu) {
    int B = 2, H = 2, N = 3;
    real S[2 * 2 * 3 * 3];
    for (int i = 0; i < B * H * N * N; i++) S[i] = 1;
    uint8_t km[6] = {1, 1, 1, 1, 0, 1};
    gma_ops_cpu.attn_mask(S, km, B, H, N, 1);
    for (int bh = 0; bh < B * H; bh++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                int hidden = j > i || !km[(bh / H) * N + j];
                real v = S[(bh * N + i) * N + j];
                ck_assert_msg(hidden ? isinf(v) && v < 0 : v == 1, "bh %d i %d j %d", bh, i, j);
            }
}
END_TEST

START_TEST(test_gmacheck_cli) {
    static char out[16384];
    int rc = tu_run("bin/gmacheck --device cpu --steps 2 --batch 2 --seq 70 --quiet", out, sizeof out);
    ck_assert_msg(rc == 0 && strstr(out, "PASS"), "rc %d: %s", rc, out);
    rc = tu_run("bin/gmacheck --device cpu --steps 1 --batch 2 --seq 40 --quiet --set model.mixer=sdpa "
                "--set model.causal=0",
                out, sizeof out);
    ck_assert_msg(rc == 0 && strstr(out, "PASS"), "rc %d: %s", rc, out);
    /* a two-sequence classifier with padded rows */
    rc = tu_run("bin/gmacheck --device cpu --steps 1 --batch 2 --seq 30 --quiet --set model.task=classify "
                "--set model.n_seq=2 --set model.n_classes=3 --set model.pooling=cls",
                out, sizeof out);
    ck_assert_msg(rc == 0 && strstr(out, "PASS") && strstr(out, "classifier (padded rows)"), "rc %d: %s", rc, out);
    /* no usable cuda here (CPU build, or a CUDA build on a machine without a GPU) */
    rc = tu_run("bin/gmacheck --device cuda --steps 1 --batch 1 --seq 16 --quiet", out, sizeof out);
    if (rc != 0) {
        ck_assert_msg(rc == 2 && strstr(out, "cuda"), "rc %d: %s", rc, out);
    }
    rc = tu_run("bin/gmacheck --device cpu --precision bf16 --quiet", out, sizeof out);
    ck_assert_msg(rc == 2 && strstr(out, "needs device cuda"), "rc %d: %s", rc, out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("ops_select");
    TCase *tc = tcase_create("select");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cuda_refused_in_cpu_build);
    tcase_add_test(tc, test_table_check_names_missing_op);
    tcase_add_test(tc, test_wrapped_table_reaches_its_backend);
    tcase_add_test(tc, test_precision_needs_cuda);
    tcase_add_test(tc, test_attn_mask_cpu);
    tcase_add_test(tc, test_gmacheck_cli);
    suite_add_tcase(s, tc);
    return s;
}
GMA_TEST_MAIN()
