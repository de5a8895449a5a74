/* backend_check.c: gmacheck's comparison of a backend against the CPU (backend_check.h). */
#include "bench/backend_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_cls.h"
#include "ops/ops.h"
#include "optim/optim.h"

static double norm2(const real *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return sqrt(s);
}
static double diff2(const real *a, const real *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        s += d * d;
    }
    return sqrt(s);
}

/* one batch: random tokens, targets = the next token; a classifier gets rows of random
 * lengths (at least one real token, the rest padding) and random labels */
typedef struct Batch {
    int32_t *seq, *tok, *tgt, *labels; /* labels NULL: a language model */
    uint8_t *mask;
} Batch;

static void batch_new(Batch *b, const Config *c, int B, int N, int n_seq, int classify) {
    Rng rng;
    rng_seed2(&rng, (uint64_t)c->seed, 77);
    int R = classify ? B * n_seq : B;
    b->seq = xcalloc((size_t)R * (N + 1), sizeof(int32_t));
    b->tok = xcalloc((size_t)R * N, sizeof(int32_t)), b->tgt = xcalloc((size_t)R * N, sizeof(int32_t));
    b->mask = xcalloc((size_t)R * N, 1);
    b->labels = classify ? xcalloc((size_t)B, sizeof(int32_t)) : NULL;
    for (size_t i = 0; i < (size_t)R * (N + 1); i++)
        b->seq[i] = 1 + (int32_t)rng_below(&rng, (uint64_t)c->model.vocab_size - 1);
    for (int r = 0; r < R; r++) {
        int len = classify ? 1 + (int)rng_below(&rng, (uint64_t)N) : N;
        if (classify && r == 0) len = N; /* one row without padding */
        for (int t = 0; t < N; t++) {
            b->tok[r * N + t] = t < len ? b->seq[r * (N + 1) + t] : 0;
            b->tgt[r * N + t] = b->seq[r * (N + 1) + t + 1];
            b->mask[r * N + t] = t < len;
        }
    }
    for (int i = 0; classify && i < B; i++) b->labels[i] = (int32_t)rng_below(&rng, (uint64_t)cls_head_cfg(c)->n_classes);
}
static void batch_free(Batch *b) {
    free(b->seq);
    free(b->tok);
    free(b->tgt);
    free(b->mask);
    free(b->labels);
}

/* forward + backward of one model on the active backend: the mean loss in *loss, or -1
 * with the error. A classifier (labels) reads tok/mask as [n_seq*B, N] and labels [B]. */
static int loss_and_grads(Model *m, const Batch *b, int B, int N, long step, double *loss) {
    LossStats st;
    model_zero_grad(m);
    int rc = model_forward(m, b->tok, b->labels ? b->labels : b->tgt, B, N, b->labels ? b->mask : NULL, 0, &st, 1, step);
    if (rc != 0) {
        char why[512];
        snprintf(why, sizeof why, "%s", gma_error());
        return gma_errorf("forward: %s", why);
    }
    model_backward(m, 1.0);
    *loss = st.count > 0 ? st.loss_sum / st.count : 0;
    return 0;
}

/* the trainer's step at the peak learning rate; returns the number of buffer tensors the
 * step changed (it must change none: EMA memory, Performer features) */
static int train_step(Model *m, const Config *c, int t, real *before) {
    g_ops->to_host(before, m->params, m->pt.total * sizeof(real));
    optim_step(m, optim_cfg(c), t, cfg_num(c, "train.lr"), optim_grad_norm(m));
    real *after = xmalloc(m->pt.total * sizeof(real) + 1);
    g_ops->to_host(after, m->params, m->pt.total * sizeof(real));
    int changed = 0;
    for (int i = 0; i < m->pt.n; i++) {
        const ParamInfo *pi = &m->pt.t[i];
        if (pi->group == GROUP_BUFFER && memcmp(before + pi->offset, after + pi->offset, pi->numel * sizeof(real)))
            changed++;
    }
    free(after);
    return changed;
}

/* the two models, their backends and the worst errors so far */
typedef struct Check {
    const Config *c;
    const CheckOpts *o;
    const GmaOps *cpu, *dev;
    Model ma, mb; /* ma on the CPU, mb on the device */
    Batch batch;
    real *gb, *p0, *st; /* host: the device's gradients, the step's start, the device's parameters */
    double worst_loss, worst_grad, worst_upd;
    const char *worst_name;
    int buf_changed, n_buf;
} Check;

/* the worst relative gradient error of this step over the tensors (NaN: INFINITY, *nan 1);
 * with print, a line per tensor */
static double grad_errors(const Check *k, int print, const char **name, int *nan) {
    const Model *ma = &k->ma;
    double floor_ = 1e-3 * norm2(ma->grads, ma->pt.total), worst = 0;
    *name = "", *nan = 0;
    for (int i = 0; i < ma->pt.n; i++) {
        const ParamInfo *pi = &ma->pt.t[i];
        const real *ga = ma->grads + pi->offset, *gd = k->gb + pi->offset;
        double na = norm2(ga, pi->numel), e = diff2(ga, gd, pi->numel) / GMA_MAX(na, GMA_MAX(floor_, 1e-30));
        if (e != e) *nan = 1, e = INFINITY;
        if (print) printf("  grad %-40s |g_cpu| %.3e  rel err %.2e\n", pi->name, na, e);
        if (e > worst) worst = e, *name = pi->name;
    }
    return worst;
}

/* the optimiser step on both; returns the relative error of the device's update over all
 * parameters (reported, not bounded: an element whose gradient is near zero may take the
 * opposite sign step) */
static double update_error(Check *k, int s) {
    size_t P = k->ma.pt.total;
    g_ops = k->cpu;
    k->buf_changed += train_step(&k->ma, k->c, s + 1, k->st);
    g_ops = k->dev;
    k->buf_changed += train_step(&k->mb, k->c, s + 1, k->st);
    k->dev->to_host(k->st, k->mb.params, P * sizeof(real));
    double un = 0, ud = 0;
    for (size_t i = 0; i < P; i++) {
        double ua = (double)k->ma.params[i] - k->p0[i], ub = (double)k->st[i] - k->p0[i];
        un += ua * ua, ud += (ub - ua) * (ub - ua);
    }
    return sqrt(ud) / GMA_MAX(sqrt(un), 1e-30);
}

/* step s: both backends start from the CPU's parameters and moments; 0 or -1 */
static int check_step(Check *k, int s) {
    size_t P = k->ma.pt.total;
    const CheckOpts *o = k->o;
    k->dev->to_device(k->mb.params, k->ma.params, P * sizeof(real));
    k->dev->to_device(k->mb.m, k->ma.m, P * sizeof(real));
    k->dev->to_device(k->mb.v, k->ma.v, P * sizeof(real));
    memcpy(k->p0, k->ma.params, P * sizeof(real));
    double la = 0, lb = 0;
    g_ops = k->cpu;
    if (loss_and_grads(&k->ma, &k->batch, o->B, o->N, s, &la) != 0) return -1;
    g_ops = k->dev;
    if (loss_and_grads(&k->mb, &k->batch, o->B, o->N, s, &lb) != 0) return -1;
    k->dev->to_host(k->gb, k->mb.grads, P * sizeof(real));
    double lrel = fabs(lb - la) / GMA_MAX(fabs(la), 1e-12);
    const char *name;
    int nan;
    double worst = grad_errors(k, !o->quiet && s == 0, &name, &nan);
    if (o->digest) { /* a hash of the device's loss and gradient bits: equal digests, equal bits */
        uint64_t h = gma_hash(&lb, sizeof lb, gma_hash(k->gb, P * sizeof(real), GMA_HASH_SEED));
        printf("step %d: %s digest %016llx\n", s, ops_device_key(o->device), (unsigned long long)h);
    }
    if (lrel > k->worst_loss || lrel != lrel) k->worst_loss = lrel != lrel ? INFINITY : lrel;
    if (worst > k->worst_grad) k->worst_grad = worst, k->worst_name = name;
    double urel = update_error(k, s);
    if (urel > k->worst_upd || urel != urel) k->worst_upd = urel != urel ? INFINITY : urel;
    printf("step %d: loss cpu %.7f %s %.7f rel err %.2e; worst grad rel err %.2e (%s); update rel err %.2e%s\n", s, la,
           ops_device_key(o->device), lb, lrel, worst, name, urel, nan ? " NaN" : "");
    return 0;
}

/* the reference on the CPU, then the device's model with the same parameters: 0 or -1 */
static int build_models(Check *k) {
    const Config *c = k->c;
    k->cpu = &gma_ops_cpu;
    g_ops = k->cpu;
    if (model_build(&k->ma, c) != 0) return -1;
    /* memory checked on the CPU reference: it holds the same model */
    if (model_check_memory(&k->ma, k->o->B, k->o->N) != 0) goto fail;
    model_alloc(&k->ma, k->o->B, k->o->N);
    model_init_params(&k->ma, (uint64_t)c->seed);
    if (ops_select(k->o->device) != 0 || ops_set_precision(c->precision) != 0) goto fail;
    k->dev = g_ops;
    if (model_build(&k->mb, c) != 0) goto fail;
    model_alloc(&k->mb, k->o->B, k->o->N);
    k->dev->to_device(k->mb.params, k->ma.params, k->ma.pt.total * sizeof(real));
    return 0;
fail:
    g_ops = k->cpu;
    model_free(&k->ma);
    return -1;
}

static void print_head(const Check *k) {
    const Config *c = k->c;
    printf("gmacheck: mixer %s, %s%s, cpu vs %s (%s), precision %s, B=%d N=%d D=%d L=%d H=%d, %zu parameters, bound %.1e\n",
           c->model.mixer.name[0], cfg_causal(c) ? "causal" : "bidirectional", k->batch.labels ? " classifier (padded rows)" : "",
           ops_device_key(k->o->device), ops_device_name(), ops_precision_name(c->precision), k->o->B, k->o->N, c->model.d_model, c->model.n_layers,
           c->model.n_heads, model_param_count(&k->ma), k->o->tol);
}

static int verdict(const Check *k) {
    const Config *c = k->c;
    printf("gmacheck: %d buffer tensors, %s by the optimiser steps\n", k->n_buf,
           k->buf_changed ? "CHANGED" : "unchanged");
    int ok = k->worst_loss <= k->o->tol && k->worst_grad <= k->o->tol && k->buf_changed == 0;
    printf("gmacheck: %s: mixer %s %s precision %s: max loss rel err %.2e, max grad rel err %.2e (%s), bound %.1e; "
           "max update rel err %.2e\n",
           ok ? "PASS" : "FAIL", c->model.mixer.name[0], cfg_causal(c) ? "causal" : "bidirectional", ops_precision_name(c->precision),
           k->worst_loss, k->worst_grad, k->worst_name, k->o->tol, k->worst_upd);
    return ok ? 0 : 1;
}

int backend_check(const Config *c, const CheckOpts *o) {
    Check *k = xcalloc(1, sizeof *k);
    k->c = c, k->o = o, k->worst_name = "";
    if (build_models(k) != 0) {
        free(k);
        return -1;
    }
    size_t P = k->ma.pt.total;
    batch_new(&k->batch, c, o->B, o->N, k->mb.cls ? k->mb.cls->n_seq : 1, k->mb.cls != NULL);
    k->gb = xcalloc(P, sizeof(real)), k->p0 = xcalloc(P, sizeof(real)), k->st = xcalloc(P, sizeof(real));
    print_head(k);
    for (int i = 0; i < k->ma.pt.n; i++) k->n_buf += k->ma.pt.t[i].group == GROUP_BUFFER;
    int rc = 0;
    for (int s = 0; s < o->steps && rc == 0; s++) rc = check_step(k, s);
    if (rc == 0) rc = verdict(k);
    g_ops = k->dev;
    model_free(&k->mb);
    g_ops = k->cpu;
    model_free(&k->ma);
    batch_free(&k->batch);
    free(k->gb), free(k->p0), free(k->st);
    free(k);
    return rc;
}
