/* test_ops_select.c: backend selection without a GPU. The CPU build must refuse device
 * "cuda" with a message that says how to get it (`make cuda`); an incomplete op table is
 * refused naming the missing op; precisions other than fp32 need device cuda; the CPU
 * attention mask op; and bin/gmacheck (backend vs CPU comparison) runs cpu against cpu and
 * refuses cuda cleanly when it cannot run it. */
#include <stddef.h>
#include <string.h>

#include "core/config.h"
#include "ops/ops.h"
#include "testutil.h"

START_TEST(test_cuda_refused_in_cpu_build) {
    gma_error_clear();
    ck_assert_int_eq(ops_select("cuda"), -1);
    ck_assert_msg(strstr(gma_error(), "make cuda") != NULL, "message: %s", gma_error());
    ck_assert_ptr_eq(g_ops, &gma_ops_cpu); /* the active backend is unchanged */
    ck_assert_int_eq(ops_select("tpu"), -1);
    ck_assert_msg(strstr(gma_error(), "tpu") != NULL, "message: %s", gma_error());
    ck_assert_int_eq(ops_select("cpu"), 0);
    ck_assert_str_eq(ops_device_name(), "cpu");
}
END_TEST

START_TEST(test_table_check_names_missing_op) {
    ck_assert_int_eq(ops_check_table(&gma_ops_cpu), 0);
    GmaOps t = gma_ops_cpu;
    t.name = "partial";
    t.gma_route_backward = NULL;
    ck_assert_int_eq(ops_check_table(&t), -1);
    ck_assert_msg(strstr(gma_error(), "gma_route_backward") && strstr(gma_error(), "partial"), "message: %s",
                  gma_error());
    GmaOps u = gma_ops_cpu;
    /* the op before the baselines, and every baseline op, are required and named */
    memset((char *)&u + offsetof(GmaOps, elu1_forward) - sizeof(void (*)(void)), 0, sizeof(void (*)(void)));
    ck_assert_int_eq(ops_check_table(&u), -1);
    static const struct {
        const char *name;
        size_t off;
    } base[] = {
#define B_(m) {#m, offsetof(GmaOps, m)}
        B_(elu1_forward), B_(elu1_backward), B_(silu_forward), B_(silu_backward), B_(softplus_forward),
        B_(softplus_backward), B_(gate_silu_forward), B_(gate_silu_backward), B_(maxval), B_(attn_forward),
        B_(attn_backward), B_(favor_logits_forward), B_(favor_logits_backward), B_(favor_exp_forward),
        B_(favor_exp_backward), B_(conv1d_causal_forward), B_(conv1d_causal_backward), B_(scan_forward),
        B_(scan_backward),
#undef B_
    };
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        GmaOps v = gma_ops_cpu;
        v.name = "partial";
        memset((char *)&v + base[i].off, 0, sizeof(void (*)(void)));
        ck_assert_int_eq(ops_check_table(&v), -1);
        ck_assert_msg(strstr(gma_error(), base[i].name) && strstr(gma_error(), "partial"), "%s: %s", base[i].name,
                      gma_error());
    }
    /* the last member of the table is the last op checked */
    ck_assert_uint_eq(offsetof(GmaOps, scan_backward) + sizeof(void (*)(void)), sizeof(GmaOps));
}
END_TEST

START_TEST(test_precision_needs_cuda) {
    ck_assert_int_eq(ops_select("cpu"), 0);
    ck_assert_int_eq(ops_set_precision("fp32"), 0);
    ck_assert_int_eq(ops_set_precision("bf16"), -1);
    ck_assert_msg(strstr(gma_error(), "needs device cuda") != NULL, "message: %s", gma_error());
    ck_assert_int_eq(ops_set_precision("fp8"), -1);
    Config c;
    cfg_defaults(&c);
    ck_assert_str_eq(c.precision, "fp32");
    ck_assert_int_eq(cfg_set(&c, "precision=tf32"), 0);
    ck_assert_int_eq(cfg_validate(&c), -1);
    ck_assert_msg(strstr(gma_error(), "precision") && strstr(gma_error(), "cuda"), "message: %s", gma_error());
    ck_assert_int_eq(cfg_set(&c, "device=cuda"), 0);
    ck_assert_int_eq(cfg_validate(&c), 0);
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
    ck_assert_msg(rc == 3 && strstr(out, "needs device cuda"), "rc %d: %s", rc, out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("ops_select");
    TCase *tc = tcase_create("select");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_cuda_refused_in_cpu_build);
    tcase_add_test(tc, test_table_check_names_missing_op);
    tcase_add_test(tc, test_precision_needs_cuda);
    tcase_add_test(tc, test_attn_mask_cpu);
    tcase_add_test(tc, test_gmacheck_cli);
    suite_add_tcase(s, tc);
    return s;
}
GMA_TEST_MAIN()
