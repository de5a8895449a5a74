/* test_recipe.c: the block recipe (nn/recipe.h, docs/model.md §1) in float32 on the CPU
 * backend: the tensors each option registers (no norm or MLP biases, gate/up/down, the
 * untied lm_head) and the SwiGLU width rule; the refusals naming their key; the LayerNorm
 * ops' RMSNorm mode against x / sqrt(mean(x^2) + 1e-6) w in double; and a forward whose
 * ln1, MLP hidden rows, MLP output and logits are those of the definitions recomputed in
 * double from the model's own tensors (RMSNorm, down(silu(gate x) * up x), lnf lm_head^T).
 * The float64 gradient checks are in test64_model.c; decoding and prefill in
 * test_decode_batch.c and test_prefill.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "nn/recipe.h"
#include "ops/ops.h"
#include "testutil.h"

static Config recipe_config(const char *sets) {
    Config c = tu_tiny_config("sdpa");
    tu_apply_sets(&c, sets);
    return c;
}

static int has(const Model *m, const char *name) { return pt_find(&m->pt, name) >= 0; }

/* the tensors of each option, and the defaults' unchanged */
START_TEST(test_recipe_tensors) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    Model m;
    Config c = recipe_config("model.norm=layernorm");
    ck_assert_int_eq(model_build(&m, &c), 0);
    ck_assert(has(&m, "blocks.0.ln1.bias") && has(&m, "ln_f.bias") && has(&m, "blocks.1.mlp.fc.bias"));
    ck_assert(!has(&m, "lm_head.weight") && m.wout == m.wte);
    int n_default = m.pt.n;
    model_free(&m);

    c = recipe_config("model.norm=rmsnorm");
    ck_assert_int_eq(model_build(&m, &c), 0);
    ck_assert(has(&m, "blocks.0.ln1.weight") && has(&m, "blocks.1.ln2.weight") && has(&m, "ln_f.weight"));
    ck_assert(!has(&m, "blocks.0.ln1.bias") && !has(&m, "blocks.1.ln2.bias") && !has(&m, "ln_f.bias"));
    ck_assert_int_eq(m.pt.n, n_default - 5); /* ln1, ln2 of 2 blocks and ln_f */
    model_free(&m);

    c = recipe_config("model.mlp_act=swiglu");
    ck_assert_int_eq(model_build(&m, &c), 0);
    ck_assert_int_eq(m.F, 12); /* model.d_ff 12 (tu_tiny_config) is kept */
    int g = pt_find(&m.pt, "blocks.0.mlp.gate.weight"), u = pt_find(&m.pt, "blocks.0.mlp.up.weight"),
        d = pt_find(&m.pt, "blocks.0.mlp.down.weight");
    ck_assert(g >= 0 && u >= 0 && d >= 0);
    ck_assert(m.pt.t[g].shape[0] == 12 && m.pt.t[g].shape[1] == 8 && m.pt.t[u].shape[0] == 12);
    ck_assert(m.pt.t[d].shape[0] == 8 && m.pt.t[d].shape[1] == 12);
    ck_assert(!has(&m, "blocks.0.mlp.fc.weight") && !has(&m, "blocks.0.mlp.fc.bias") && !has(&m, "blocks.0.mlp.down.bias"));
    model_free(&m);

    c = recipe_config("model.tie_embeddings=false");
    ck_assert_int_eq(model_build(&m, &c), 0);
    int h = pt_find(&m.pt, "lm_head.weight");
    ck_assert(h >= 0 && h == m.wout && m.wout != m.wte);
    ck_assert(m.pt.t[h].shape[0] == 11 && m.pt.t[h].shape[1] == 8);
    model_free(&m);
}
END_TEST

/* SwiGLU's hidden width with model.d_ff 0: 256 ceil(int(8 D / 3) / 256), as FLA's GatedMLP
 * (hidden_ratio 4, intermediate_size = int(D 4 2 / 3) rounded up to a multiple of 256) */
START_TEST(test_swiglu_width) {
    const int D[] = {8, 96, 256, 768, 1024}, want[] = {256, 256, 768, 2048, 2816};
    for (int i = 0; i < 5; i++) {
        Config c;
        cfg_defaults(&c);
        c.model.d_model = D[i];
        c.model.d_ff = 0;
        ck_assert_int_eq(recipe_d_ff(&c), 4 * D[i]); /* gelu: 4 D */
        ck_assert_int_eq(cfg_set(&c, "model.mlp_act=swiglu"), 0);
        ck_assert_msg(recipe_d_ff(&c) == want[i], "D %d: F %d, want %d", D[i], recipe_d_ff(&c), want[i]);
        c.model.d_ff = 100;
        ck_assert_int_eq(recipe_d_ff(&c), 100);
    }
}
END_TEST

/* bad values are refused naming the key; an untied head needs a language model; a recipe
 * that differs from a checkpoint's names the key (recipe_same, --init-from) */
START_TEST(test_recipe_refusals) {
    Config c;
    cfg_defaults(&c);
    ck_assert_int_ne(cfg_set(&c, "model.norm=batchnorm"), 0);
    ck_assert_msg(strstr(gma_error(), "model.norm"), "%s", gma_error());
    ck_assert_int_ne(cfg_set(&c, "model.mlp_act=relu"), 0);
    ck_assert_msg(strstr(gma_error(), "model.mlp_act"), "%s", gma_error());
    ck_assert_int_eq(cfg_set(&c, "model.task=classify"), 0);
    ck_assert_int_eq(cfg_set(&c, "model.tie_embeddings=false"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_msg(strstr(gma_error(), "model.tie_embeddings") && !strchr(gma_error(), '\n'), "%s", gma_error());
    Config a, b;
    cfg_defaults(&a);
    cfg_defaults(&b);
    ck_assert_int_eq(recipe_same(&a, &b, "x"), 0);
    const char *sets[] = {"model.norm=rmsnorm", "model.mlp_act=swiglu", "model.tie_embeddings=false"};
    const char *keys[] = {"model.norm", "model.mlp_act", "model.tie_embeddings"};
    for (int i = 0; i < 3; i++) {
        cfg_defaults(&b);
        ck_assert_int_eq(cfg_set(&b, sets[i]), 0);
        ck_assert_int_ne(recipe_same(&a, &b, "--init-from runs/x"), 0);
        ck_assert_msg(strstr(gma_error(), keys[i]) && strstr(gma_error(), "--init-from runs/x"), "%s", gma_error());
    }
}
END_TEST

/* the LayerNorm ops without mean and bias are RMSNorm: out = x / sqrt(mean(x^2) + 1e-6) w,
 * also fused with the residual add; rows of large and of tiny scale */
START_TEST(test_rmsnorm_op) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    enum { R = 9, C = 37 };
    real x[R * C], a[R * C], w[C], o[R * C], o2[R * C], s[R * C], rs[R], rs2[R];
    Rng r;
    rng_seed(&r, 4);
    for (int i = 0; i < R * C; i++) {
        double sc = i / C == 3 ? 1e-4 : i / C == 5 ? 50 : 1;
        x[i] = (real)(sc * (2 * rng_uniform(&r) - 1) + 0.3 * sc), a[i] = (real)(rng_uniform(&r) - 0.5);
    }
    for (int c = 0; c < C; c++) w[c] = (real)(0.5 + rng_uniform(&r));
    g_ops->layernorm_forward(o, NULL, rs, x, w, NULL, R, C);
    for (int i = 0; i < R * C; i++) s[i] = a[i];
    g_ops->add_layernorm_forward(s, o2, NULL, rs2, s, x, w, NULL, R, C); /* sum = a + x in place */
    double worst = 0, worst2 = 0;
    for (int i = 0; i < R; i++) {
        double q = 0, q2 = 0;
        for (int c = 0; c < C; c++) {
            double v = x[i * C + c], v2 = (double)a[i * C + c] + x[i * C + c];
            q += v * v, q2 += v2 * v2;
        }
        double inv = 1 / sqrt(q / C + 1e-6), inv2 = 1 / sqrt(q2 / C + 1e-6);
        ck_assert(fabs(rs[i] - inv) <= 1e-6 * inv && fabs(rs2[i] - inv2) <= 1e-6 * inv2);
        for (int c = 0; c < C; c++) {
            double want = x[i * C + c] * inv * w[c], want2 = ((double)a[i * C + c] + x[i * C + c]) * inv2 * w[c];
            worst = fmax(worst, fabs(o[i * C + c] - want) / 2); /* |out| <= sqrt(C) max w: relative to 1 */
            worst2 = fmax(worst2, fabs(o2[i * C + c] - want2) / 2);
            ck_assert(s[i * C + c] == (real)((double)a[i * C + c] + x[i * C + c]));
        }
    }
    printf("rmsnorm op vs double: max err %.1e, fused with the add %.1e\n", worst, worst2);
    ck_assert(worst < 1e-5 && worst2 < 1e-5);
}
END_TEST

static void host_of(real *dst, const Model *m, const char *name) {
    int i = pt_find(&m->pt, name);
    ck_assert_msg(i >= 0, "no tensor %s", name);
    memcpy(dst, PT_PTR(m->params, &m->pt, i), sizeof(real) * m->pt.t[i].numel);
}

/* one forward of a 2-layer model with the whole recipe: block 0's ln1 is the RMSNorm of the
 * embeddings, its MLP hidden rows silu(ln2 Wg^T) * (ln2 Wu^T), its output h Wd^T, and the
 * logits lnf lm_head^T, each recomputed in double from the model's tensors */
START_TEST(test_recipe_forward_definitions) {
    ck_assert_int_eq(ops_select(OPS_CPU), 0);
    Config c = recipe_config("model.norm=rmsnorm;model.mlp_act=swiglu;model.tie_embeddings=false");
    Model m;
    ck_assert_int_eq(model_build(&m, &c), 0);
    model_alloc(&m, 2, 8);
    model_init_params(&m, 3);
    enum { B = 2, N = 8, R = B * N, D = 8, F = 12, V = 11 };
    int32_t tok[R], tgt[R];
    for (int i = 0; i < R; i++) tok[i] = (int32_t)((i * 5 + 2) % V), tgt[i] = (int32_t)((i * 3 + 1) % V);
    LossStats st;
    ck_assert_int_eq(model_forward(&m, tok, tgt, B, N, NULL, 0, &st, 0, 0), 0);
    static real w1[D], wg[F * D], wu[F * D], wd[D * F], lm[V * D];
    host_of(w1, &m, "blocks.0.ln1.weight");
    host_of(wg, &m, "blocks.0.mlp.gate.weight");
    host_of(wu, &m, "blocks.0.mlp.up.weight");
    host_of(wd, &m, "blocks.0.mlp.down.weight");
    host_of(lm, &m, "lm_head.weight");
    const Block *b = &m.blocks[0];
    double e_ln = 0, e_h = 0, e_out = 0, e_lg = 0;
    for (int r = 0; r < R; r++) {
        const real *x = m.resid[0] + r * D, *ln2 = b->ln2 + r * D;
        double q = 0;
        for (int k = 0; k < D; k++) q += (double)x[k] * x[k];
        for (int k = 0; k < D; k++) e_ln = fmax(e_ln, fabs(b->ln1[r * D + k] - x[k] / sqrt(q / D + 1e-6) * w1[k]));
        double h[F];
        for (int f = 0; f < F; f++) {
            double gs = 0, us = 0;
            for (int k = 0; k < D; k++) gs += (double)ln2[k] * wg[f * D + k], us += (double)ln2[k] * wu[f * D + k];
            h[f] = gs / (1 + exp(-gs)) * us;
            e_h = fmax(e_h, fabs(b->gelu[r * F + f] - h[f]));
        }
        for (int k = 0; k < D; k++) { /* resid[1] = mid + down(h) */
            double y = 0;
            for (int f = 0; f < F; f++) y += h[f] * wd[k * F + f];
            e_out = fmax(e_out, fabs((double)m.resid[1][r * D + k] - b->mid[r * D + k] - y));
        }
        for (int v = 0; v < V; v++) {
            double z = 0;
            for (int k = 0; k < D; k++) z += (double)m.lnf[r * D + k] * lm[v * D + k];
            e_lg = fmax(e_lg, fabs(m.logits[r * V + v] - z));
        }
    }
    printf("recipe forward vs definitions: ln1 %.1e, MLP hidden %.1e, MLP out %.1e, logits %.1e\n", e_ln, e_h, e_out,
           e_lg);
    /* values of order 1 (init_std 0.3), sums of at most 12 float32 products */
    ck_assert(e_ln < 1e-5 && e_h < 1e-5 && e_out < 1e-5 && e_lg < 1e-5);
    model_free(&m);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("recipe");
    TCase *tc = tcase_create("recipe");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_recipe_tensors);
    tcase_add_test(tc, test_swiglu_width);
    tcase_add_test(tc, test_recipe_refusals);
    tcase_add_test(tc, test_rmsnorm_op);
    tcase_add_test(tc, test_recipe_forward_definitions);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
