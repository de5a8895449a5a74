/* gmacheck.c: compare a backend against the CPU backend on one model and batch.
 *
 *   gmacheck [--config FILE] [--set key=value]... [--device cuda] [--precision fp32|tf32|bf16]
 *            [--steps S] [--batch B] [--seq N] [--tol X] [--quiet] [--digest]
 *   gmacheck --list-mixers
 *
 * Builds the model of the config twice, on the CPU backend and on --device, from the same
 * initial parameters (drawn once on the host and copied), feeds both the same random
 * batch (a classifier config, model.task "classify", gets random rows of random lengths
 * with padding and random labels), and for S steps compares the loss and every
 * parameter's gradient, then takes the trainer's optimiser step (optim_step: train.optimizer
 * with its weight-decay groups and clipping; buffers untouched) on both and reports how far
 * the updates differ. Every step starts both backends from the CPU's parameters and AdamW
 * moments, so the errors measure one step's arithmetic, not two trajectories drifting apart
 * (an element with a near-zero gradient can step the other way under AdamW, and the runs
 * would then diverge for reasons unrelated to the backend). Relative error of a tensor: |g_dev - g_cpu|_2 /
 * max(|g_cpu|_2, 1e-3 |g_cpu(all tensors)|_2) (the floor keeps tensors whose exact
 * gradient is zero, e.g. key biases of softmax attention, from dividing noise by noise).
 * --digest prints a hash of the device's loss and gradient bits per step (two runs that
 * print the same digests computed the same bits).
 * Exit status, as the other programs: 0 within the bound (default 1e-4 for fp32, 1e-2 tf32,
 * 5e-2 bf16; --tol sets it), 1 above it, 2 bad input (a flag, a refused config, a backend
 * that cannot be used here). Without arguments it prints its usage and exits 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args/version.h"
#include "core/config.h"
#include "model/model.h"
#include "nn/mixers/mixer.h"
#include "ops/ops.h"
#include "optim/optim.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: gmacheck --device cuda|cpu [--config FILE] [--set key=value]... [--precision fp32|tf32|bf16]\n"
            "                [--steps S] [--batch B] [--seq N] [--tol X] [--quiet] [--digest]\n"
            "       gmacheck --list-mixers\n"
            "       gmacheck --help | --version\n"
            "Compares the gradients and optimiser updates of a backend (--device; default: the config's\n"
            "device, else cuda) against the CPU backend on the same model and batch, for S steps [3].\n"
            "Exit codes: 0 within the bound (--tol; default 1e-4 fp32, 1e-2 tf32, 5e-2 bf16), 1 above it,\n"
            "2 bad input (flag, config, or a backend that cannot be used here).\n");
}

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

/* forward + backward of one model on the active backend; returns the mean loss. A
 * classifier (labels != NULL) reads tok/mask as [n_seq*B, N] and labels [B]. */
static double loss_and_grads(Model *m, const int32_t *tok, const int32_t *tgt, const uint8_t *mask, const int32_t *labels,
                             int B, int N, long step) {
    LossStats st;
    model_zero_grad(m);
    int rc = labels ? model_forward_cls(m, tok, mask, labels, B, N, &st, 1, step)
                    : model_forward(m, tok, tgt, B, N, NULL, 0, &st, 1, step);
    if (rc != 0) {
        fprintf(stderr, "gmacheck: forward: %s\n", gma_error());
        exit(2);
    }
    model_backward(m, 1.0);
    return st.count > 0 ? st.loss_sum / st.count : 0;
}

/* the trainer's step at the peak learning rate; returns the number of buffer tensors the
 * step changed (it must change none: EMA memory, Performer features) */
static int train_step(Model *m, const Config *c, int t, real *before) {
    g_ops->to_host(before, m->params, m->pt.total * sizeof(real));
    optim_step(m, &c->train, t, c->train.lr, optim_grad_norm(m));
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

/* A count flag's value: the whole text an integer in [1, hi]; else one line, -1. */
static int parse_count(const char *flag, const char *text, long hi, int *out) {
    long v;
    if (gma_parse_long(text, 1, hi, &v) != 0) {
        fprintf(stderr, "gmacheck: %s \"%s\": expected an integer in [1, %ld]\n", flag, text, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv) {
    Config c;
    mixer_register_all();
    int rc = cli_start("gmacheck", argc, argv, usage);
    if (rc >= 0) return rc;
    cfg_defaults(&c);
    /* a small model that still exercises every path: ragged last chunk, several heads */
    c.model.vocab_size = 512;
    c.model.d_model = 128;
    c.model.n_heads = 4;
    c.model.n_layers = 2;
    c.model.max_seq_len = 256;
    c.train.seq_len = 200;
    cfg_set(&c, "gma.n_components=32");
    c.train.lr = 1e-3;
    const char *device = NULL, *precision = NULL;
    int steps = 3, B = 4, N = 0, quiet = 0, digest = 0;
    double tol = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--list-mixers")) {
            printf("%s\n", mixer_names());
            return 0;
        } else if (!strcmp(a, "--config") && more) {
            if (cfg_load_file(&c, argv[++i]) != 0) {
                fprintf(stderr, "gmacheck: %s\n", gma_error());
                return 2;
            }
        } else if (!strcmp(a, "--set") && more) {
            if (cfg_set(&c, argv[++i]) != 0) {
                fprintf(stderr, "gmacheck: %s\n", gma_error());
                return 2;
            }
        } else if (!strcmp(a, "--device") && more) device = argv[++i];
        else if (!strcmp(a, "--precision") && more) precision = argv[++i];
        /* the ranges of train.steps (at least 1), train.batch_size and model.max_seq_len */
        else if (!strcmp(a, "--steps") && more) {
            if (parse_count(a, argv[++i], 1000000000L, &steps) != 0) return 2;
        } else if (!strcmp(a, "--batch") && more) {
            if (parse_count(a, argv[++i], 1000000L, &B) != 0) return 2;
        } else if (!strcmp(a, "--seq") && more) {
            if (parse_count(a, argv[++i], 16777216L, &N) != 0) return 2;
        } else if (!strcmp(a, "--tol") && more) {
            if (gma_parse_double(argv[++i], 0, 1e6, &tol) != 0) {
                fprintf(stderr, "gmacheck: --tol \"%s\": expected a number in [0, 1e6]\n", argv[i]);
                return 2;
            }
        }
        else if (!strcmp(a, "--quiet")) quiet = 1;
        else if (!strcmp(a, "--digest")) digest = 1;
        else {
            fprintf(stderr, "gmacheck: unknown or incomplete option \"%s\" (see --help)\n", a);
            return 2;
        }
    }
    if (!device) device = strcmp(c.device, "cpu") ? c.device : "cuda";
    if (precision) snprintf(c.precision, sizeof c.precision, "%s", precision);
    snprintf(c.device, sizeof c.device, "%s", device);
    if (N <= 0) N = c.train.seq_len;
    if (N > c.model.max_seq_len) c.model.max_seq_len = N;
    c.train.seq_len = N;
    if (steps < 1 || B < 1) {
        usage(stderr);
        return 2;
    }
    if (c.model.vocab_size <= 0) c.model.vocab_size = 512;
    int classify = !strcmp(c.model.task, "classify");
    if (classify && !strcmp(c.data.source, "recall")) { /* no data is read: a random padded batch */
        snprintf(c.data.source, sizeof c.data.source, "cls");
        if (!c.data.path[0]) snprintf(c.data.path, sizeof c.data.path, "(gmacheck: random batch)");
    }
    if (!strcmp(c.data.source, "recall") && N < 2 * c.data.recall_pairs + 2) c.data.recall_pairs = (N - 2) / 2;
    if (cfg_validate(&c) != 0) {
        fprintf(stderr, "gmacheck: %s\n", gma_error());
        return 2;
    }
    if (tol < 0) tol = !strcmp(c.precision, "fp32") ? 1e-4 : !strcmp(c.precision, "tf32") ? 1e-2 : 5e-2;
    ops_set_threads(c.threads);

    /* the reference on the CPU backend */
    const GmaOps *cpu = &gma_ops_cpu;
    g_ops = cpu;
    Model ma, mb;
    if (model_build(&ma, &c) != 0) {
        fprintf(stderr, "gmacheck: %s\n", gma_error());
        return 2;
    }
    if (model_check_memory(&ma, B, N) != 0) { /* on the CPU reference: it holds the same model */
        fprintf(stderr, "gmacheck: %s\n", gma_error());
        return 2;
    }
    model_alloc(&ma, B, N);
    model_init_params(&ma, (uint64_t)c.seed);

    /* the device under test */
    if (ops_select(device) != 0 || ops_set_precision(c.precision) != 0) {
        fprintf(stderr, "gmacheck: %s\n", gma_error());
        return 2;
    }
    const GmaOps *dev = g_ops;
    if (model_build(&mb, &c) != 0) {
        fprintf(stderr, "gmacheck: %s\n", gma_error());
        return 2;
    }
    model_alloc(&mb, B, N);
    size_t P = ma.pt.total;
    dev->to_device(mb.params, ma.params, P * sizeof(real));

    /* one batch: random tokens, targets = the next token; a classifier gets rows of random
     * lengths (at least one real token, the rest padding) and random labels */
    Rng rng;
    rng_seed2(&rng, (uint64_t)c.seed, 77);
    int R = classify ? B * mb.n_seq : B;
    int32_t *seq = xcalloc((size_t)R * (N + 1), sizeof(int32_t));
    int32_t *tok = xcalloc((size_t)R * N, sizeof(int32_t)), *tgt = xcalloc((size_t)R * N, sizeof(int32_t));
    uint8_t *mask = xcalloc((size_t)R * N, 1);
    int32_t *labels = classify ? xcalloc((size_t)B, sizeof(int32_t)) : NULL;
    for (size_t i = 0; i < (size_t)R * (N + 1); i++) seq[i] = 1 + (int32_t)rng_below(&rng, (uint64_t)c.model.vocab_size - 1);
    for (int b = 0; b < R; b++) {
        int len = classify ? 1 + (int)rng_below(&rng, (uint64_t)N) : N;
        if (classify && b == 0) len = N; /* one row without padding */
        for (int t = 0; t < N; t++) {
            tok[b * N + t] = t < len ? seq[b * (N + 1) + t] : 0;
            tgt[b * N + t] = seq[b * (N + 1) + t + 1];
            mask[b * N + t] = t < len;
        }
    }
    for (int b = 0; classify && b < B; b++) labels[b] = (int32_t)rng_below(&rng, (uint64_t)c.model.n_classes);

    real *gb = xcalloc(P, sizeof(real));
    printf("gmacheck: mixer %s, %s%s, cpu vs %s (%s), precision %s, B=%d N=%d D=%d L=%d H=%d, %zu parameters, bound %.1e\n",
           c.model.mixer[0], cfg_causal(&c) ? "causal" : "bidirectional", classify ? " classifier (padded rows)" : "", device, ops_device_name(), c.precision, B, N,
           c.model.d_model, c.model.n_layers, c.model.n_heads, model_param_count(&ma), tol);
    double worst_loss = 0, worst_grad = 0;
    const char *worst_name = "";
    real *p0 = xcalloc(P, sizeof(real)), *st = xcalloc(P, sizeof(real));
    double worst_upd = 0;
    int buf_changed = 0, n_buf = 0;
    for (int i = 0; i < ma.pt.n; i++) n_buf += ma.pt.t[i].group == GROUP_BUFFER;
    for (int s = 0; s < steps; s++) {
        /* both backends start the step from the CPU's parameters and moments */
        dev->to_device(mb.params, ma.params, P * sizeof(real));
        dev->to_device(mb.m, ma.m, P * sizeof(real));
        dev->to_device(mb.v, ma.v, P * sizeof(real));
        memcpy(p0, ma.params, P * sizeof(real));
        g_ops = cpu;
        double la = loss_and_grads(&ma, tok, tgt, mask, labels, B, N, s);
        g_ops = dev;
        double lb = loss_and_grads(&mb, tok, tgt, mask, labels, B, N, s);
        dev->to_host(gb, mb.grads, P * sizeof(real));
        double lrel = fabs(lb - la) / GMA_MAX(fabs(la), 1e-12);
        double gnorm = norm2(ma.grads, P), floor_ = 1e-3 * gnorm, step_worst = 0;
        const char *step_name = "";
        int bad_nan = 0;
        for (int i = 0; i < ma.pt.n; i++) {
            const ParamInfo *pi = &ma.pt.t[i];
            const real *ga = ma.grads + pi->offset, *gd = gb + pi->offset;
            double na = norm2(ga, pi->numel), e = diff2(ga, gd, pi->numel) / GMA_MAX(na, GMA_MAX(floor_, 1e-30));
            if (e != e) bad_nan = 1, e = INFINITY;
            if (!quiet && s == 0) printf("  grad %-40s |g_cpu| %.3e  rel err %.2e\n", pi->name, na, e);
            if (e > step_worst) step_worst = e, step_name = pi->name;
        }
        if (digest) { /* a hash of the device's loss and gradient bits: equal digests, equal bits */
            uint64_t h = gma_hash(&lb, sizeof lb, gma_hash(gb, P * sizeof(real), GMA_HASH_SEED));
            printf("step %d: %s digest %016llx\n", s, device, (unsigned long long)h);
        }
        if (lrel > worst_loss || lrel != lrel) worst_loss = lrel != lrel ? INFINITY : lrel;
        if (step_worst > worst_grad) worst_grad = step_worst, worst_name = step_name;
        g_ops = cpu;
        buf_changed += train_step(&ma, &c, s + 1, st);
        g_ops = dev;
        buf_changed += train_step(&mb, &c, s + 1, st);
        /* the AdamW updates compared over all parameters (reported, not bounded: an element
         * whose gradient is near zero may take the opposite sign step) */
        dev->to_host(st, mb.params, P * sizeof(real));
        double un = 0, ud = 0;
        for (size_t i = 0; i < P; i++) {
            double ua = (double)ma.params[i] - p0[i], ub = (double)st[i] - p0[i];
            un += ua * ua, ud += (ub - ua) * (ub - ua);
        }
        double urel = sqrt(ud) / GMA_MAX(sqrt(un), 1e-30);
        if (urel > worst_upd || urel != urel) worst_upd = urel != urel ? INFINITY : urel;
        printf("step %d: loss cpu %.7f %s %.7f rel err %.2e; worst grad rel err %.2e (%s); update rel err %.2e%s\n", s,
               la, device, lb, lrel, step_worst, step_name, urel, bad_nan ? " NaN" : "");
    }
    free(p0);
    free(st);
    printf("gmacheck: %d buffer tensors, %s by the optimiser steps\n", n_buf, buf_changed ? "CHANGED" : "unchanged");
    int ok = worst_loss <= tol && worst_grad <= tol && buf_changed == 0;
    printf("gmacheck: %s: mixer %s %s precision %s: max loss rel err %.2e, max grad rel err %.2e (%s), bound %.1e; "
           "max update rel err %.2e\n",
           ok ? "PASS" : "FAIL", c.model.mixer[0], cfg_causal(&c) ? "causal" : "bidirectional", c.precision,
           worst_loss, worst_grad, worst_name, tol, worst_upd);
    g_ops = dev;
    model_free(&mb);
    g_ops = cpu;
    model_free(&ma);
    free(gb);
    free(seq);
    free(tok);
    free(tgt);
    free(mask);
    free(labels);
    return ok ? 0 : 1;
}
