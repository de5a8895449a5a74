/* test64_dirichlet.c: finite-difference gradient check (float64 build) of the Dirichlet
 * prior on GMA's mixture weights (gma.dirichlet_*, docs/model.md §4.1): one gma layer whose
 * objective is <y, r> + w L_dir with L_dir = -(alpha - 1)/Hp sum_h sum_{k live} log pi_hk,
 * pi_h = softmax(prior_logits_h), computed here from the parameters (not by the mixer), so
 * the mixer's backward must add exactly w dL_dir/dl to the prior logits' gradient. With
 * per-head and shared components, and with dropped components (logit -1e4), which are out
 * of the sum and get no gradient. */
#include <string.h>

#include "gradcheck.h"
#include "testutil.h"

typedef struct DirCase {
    GcMix c;
    int prior;  /* the prior logits' tensor */
    int Hp, Kc;
    double alpha, w;
} DirCase;

/* L_dir from the prior logits, in double */
static double dirichlet_value(const DirCase *d) {
    const real *l = d->c.params + d->c.pt.t[d->prior].offset;
    double total = 0;
    for (int h = 0; h < d->Hp; h++) {
        const real *lh = l + (size_t)h * d->Kc;
        double mx = lh[0], s = 0;
        for (int k = 1; k < d->Kc; k++) mx = fmax(mx, lh[k]);
        for (int k = 0; k < d->Kc; k++) s += exp(lh[k] - mx);
        for (int k = 0; k < d->Kc; k++)
            if (lh[k] > MIXER_DROPPED_LOGIT / 2) total += lh[k] - mx - log(s);
    }
    return -(d->alpha - 1) / d->Hp * total;
}

static double dir_loss(void *p) {
    DirCase *d = p;
    return gc_mix_loss(&d->c) + d->w * dirichlet_value(d);
}

static void dir_case(const char *label, const char *sets, int causal, int n_dropped) {
    Config cfg = tu_tiny_config("gma");
    tu_apply_sets(&cfg, sets);
    DirCase d;
    memset(&d, 0, sizeof d);
    Rng rng;
    rng_seed(&rng, 7 + causal);
    gc_mix_create(&d.c, &cfg, "gma", &rng);
    d.prior = -1;
    for (int i = 0; i < d.c.pt.n; i++)
        if (strstr(d.c.pt.t[i].name, "prior_logits")) d.prior = i;
    ck_assert(d.prior >= 0);
    d.Hp = (int)d.c.pt.t[d.prior].shape[0], d.Kc = (int)d.c.pt.t[d.prior].shape[1];
    real *l = d.c.params + d.c.pt.t[d.prior].offset;
    gc_fill(l, d.c.pt.t[d.prior].numel, &rng, 0.7); /* away from the uniform point, where the gradient is 0 */
    for (int i = 0; i < n_dropped; i++) l[(size_t)(i % d.Hp) * d.Kc + 1 + i / d.Hp] = (real)MIXER_DROPPED_LOGIT;
    gc_mix_batch(&d.c, 2, 7, causal, NULL, &rng);
    d.alpha = cfg_num(&cfg, "gma.dirichlet_alpha"), d.w = cfg_num(&cfg, "gma.dirichlet_weight");
    d.c.w = cfg_num(&cfg, "gma.div_weight"); /* the diversity loss too, when on */
    d.c.ctx.aux_scale = 1;
    dir_loss(&d);
    real *dh = xcalloc(d.c.n, sizeof(real));
    d.c.m->vt->backward(d.c.m, &d.c.ctx, dh, d.c.r, d.c.h, d.c.params, d.c.grads, d.c.act, d.c.scratch);
    const real *g = d.c.grads + d.c.pt.t[d.prior].offset;
    for (int i = 0; i < n_dropped; i++) ck_assert(g[(size_t)(i % d.Hp) * d.Kc + 1 + i / d.Hp] == 0);
    ck_assert(d.w * fabs(dirichlet_value(&d)) > 0.1); /* the term is there to be checked */
    gc_assert_grad(label, "dh", dir_loss, &d, d.c.h, dh, d.c.n);
    double e = gc_check_table(&d.c.pt, d.c.params, d.c.grads, dir_loss, &d, label);
    GC_ASSERT(label, e);
    /* without the term the prior logits' gradient differs: the check above can fail */
    real *g1 = xmalloc(sizeof(real) * d.c.pt.total);
    memcpy(g1, d.c.grads, sizeof(real) * d.c.pt.total);
    memset(d.c.grads, 0, sizeof(real) * d.c.pt.total);
    d.c.ctx.aux_scale = 0;
    d.c.m->vt->backward(d.c.m, &d.c.ctx, dh, d.c.r, d.c.h, d.c.params, d.c.grads, d.c.act, d.c.scratch);
    double diff = 0;
    for (size_t i = 0; i < d.c.pt.t[d.prior].numel; i++) diff = fmax(diff, fabs(g1[d.c.pt.t[d.prior].offset + i] - g[i]));
    ck_assert_msg(diff > 1e-3, "%s: the prior adds nothing (%g)", label, diff);
    free(g1);
    free(dh);
    gc_mix_free(&d.c);
}

START_TEST(test_dirichlet_heads) { dir_case("dirichlet causal", "gma.dirichlet_weight=0.7;gma.dirichlet_alpha=0.3", 1, 0); }
END_TEST
START_TEST(test_dirichlet_shared_dropped) {
    dir_case("dirichlet shared bidir dropped", "gma.dirichlet_weight=1.3;gma.dirichlet_alpha=0.05;gma.shared_components=true", 0, 1);
}
END_TEST
START_TEST(test_dirichlet_heads_dropped) {
    dir_case("dirichlet causal dropped div", "gma.dirichlet_weight=0.4;gma.dirichlet_alpha=0.5;gma.div_weight=0.2", 1, 3);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("Dirichlet prior on GMA's mixture weights (float64 gradient checks)");
    TCase *tc = tcase_create("dirichlet");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_dirichlet_heads);
    tcase_add_test(tc, test_dirichlet_shared_dropped);
    tcase_add_test(tc, test_dirichlet_heads_dropped);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
