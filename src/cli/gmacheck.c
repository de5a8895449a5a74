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
 * that cannot be used here). Without arguments it prints its usage and exits 2.
 * This file parses the arguments and prepares the config; the comparison is
 * src/bench/backend_check.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/backend_check.h"
#include "cli/args/version.h"
#include "core/config.h"
#include "data/lm/lmdata.h"
#include "nn/mixers/mixer.h"
#include "ops/ops.h"
#include "train/config_registry.h"

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

/* a small model that still exercises every path: ragged last chunk, several heads */
static void small_model(Config *c) {
    cfg_defaults(c);
    c->model.vocab_size = 512;
    c->model.d_model = 128;
    c->model.n_heads = 4;
    c->model.n_layers = 2;
    c->model.max_seq_len = 256;
    c->train.seq_len = 200;
    cfg_set(c, "gma.n_components=32");
    c->train.lr = 1e-3;
}

/* a flag with a value (argv[i + 1]): 1 when flag names one, *rc = 2 with one line for a bad value */
static int value_flag(Config *c, CheckOpts *o, const char **precision, const char *a, const char *v, int *rc) {
    if (!strcmp(a, "--config") || !strcmp(a, "--set")) {
        if ((!strcmp(a, "--config") ? cfg_load_file(c, v) : cfg_set(c, v)) != 0) {
            fprintf(stderr, "gmacheck: %s\n", gma_error());
            *rc = 2;
        }
    } else if (!strcmp(a, "--device")) o->device = v;
    else if (!strcmp(a, "--precision")) *precision = v;
    /* the ranges of train.steps (at least 1), train.batch_size and model.max_seq_len */
    else if (!strcmp(a, "--steps")) *rc = parse_count(a, v, 1000000000L, &o->steps) ? 2 : 0;
    else if (!strcmp(a, "--batch")) *rc = parse_count(a, v, 1000000L, &o->B) ? 2 : 0;
    else if (!strcmp(a, "--seq")) *rc = parse_count(a, v, 16777216L, &o->N) ? 2 : 0;
    else if (!strcmp(a, "--tol")) {
        if (gma_parse_double(v, 0, 1e6, &o->tol) != 0) {
            fprintf(stderr, "gmacheck: --tol \"%s\": expected a number in [0, 1e6]\n", v);
            *rc = 2;
        }
    } else return 0;
    return 1;
}

/* argv in order: 0, 2 with one line, or 3 for --list-mixers (printed: exit 0) */
static int parse_args(Config *c, CheckOpts *o, const char **precision, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = 0;
        if (!strcmp(a, "--list-mixers")) {
            printf("%s\n", mixer_names());
            return 3;
        } else if (!strcmp(a, "--quiet")) o->quiet = 1;
        else if (!strcmp(a, "--digest")) o->digest = 1;
        else if (i + 1 < argc && value_flag(c, o, precision, a, argv[i + 1], &rc)) i++;
        else {
            fprintf(stderr, "gmacheck: unknown or incomplete option \"%s\" (see --help)\n", a);
            return 2;
        }
        if (rc) return rc;
    }
    return 0;
}

/* the device, precision and shape into the config, a classifier's random batch, the
 * bound's default: 0, or 2 with one line */
static int prepare(Config *c, CheckOpts *o, const char *precision) {
    if (!o->device) o->device = strcmp(c->device, "cpu") ? c->device : "cuda";
    if (precision) snprintf(c->precision, sizeof c->precision, "%s", precision);
    snprintf(c->device, sizeof c->device, "%s", o->device);
    if (o->N <= 0) o->N = c->train.seq_len;
    if (o->N > c->model.max_seq_len) c->model.max_seq_len = o->N;
    c->train.seq_len = o->N;
    if (c->model.vocab_size <= 0) c->model.vocab_size = 512;
    /* a classifier reads no data: a random padded batch */
    if (c->model.task == MODEL_CLASSIFY && c->data.source == DATA_recall) {
        c->data.source = DATA_cls;
        if (!c->data.path[0]) snprintf(c->data.path, sizeof c->data.path, "(gmacheck: random batch)");
    }
    if (c->data.source == DATA_recall && o->N < 2 * c->data.recall_pairs + 2) c->data.recall_pairs = (o->N - 2) / 2;
    if (cfg_validate(c) != 0) {
        fprintf(stderr, "gmacheck: %s\n", gma_error());
        return 2;
    }
    if (o->tol < 0) o->tol = !strcmp(c->precision, "fp32") ? 1e-4 : !strcmp(c->precision, "tf32") ? 1e-2 : 5e-2;
    return 0;
}

int main(int argc, char **argv) {
    config_register_all();
    int rc = cli_start("gmacheck", argc, argv, usage);
    if (rc >= 0) return rc;
    Config c;
    small_model(&c);
    CheckOpts o = {.steps = 3, .B = 4, .N = 0, .tol = -1};
    const char *precision = NULL;
    if ((rc = parse_args(&c, &o, &precision, argc, argv)) != 0) return rc == 3 ? 0 : rc;
    if (o.steps < 1 || o.B < 1) {
        usage(stderr);
        return 2;
    }
    if ((rc = prepare(&c, &o, precision)) != 0) return rc;
    ops_set_threads(c.threads);
    rc = backend_check(&c, &o);
    if (rc < 0) fprintf(stderr, "gmacheck: %s\n", gma_error());
    return rc < 0 ? 2 : rc;
}
