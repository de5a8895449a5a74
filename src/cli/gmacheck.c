/* gmacheck.c: compare a backend against the CPU backend on one model and batch. This file
 * parses the arguments (`gmacheck --help`) and prepares the config; what is compared and how
 * the error is measured: src/bench/backend_check.h; docs/cuda.md. --digest prints a hash of
 * the device's loss and gradient bits per step. Exit status, as the other programs: 0 within
 * the bound (default 1e-4 fp32, 1e-2 tf32, 5e-2 bf16; --tol sets it), 1 above it, 2 bad
 * input (a flag, a refused config, a backend that cannot be used here, no arguments). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/backend_check.h"
#include "cli/args/opts.h"
#include "cli/args/version.h"
#include "train/config_registry.h"
#include "core/config.h"
#include "data/lm/lmdata.h"
#include "nn/mixers/mixer.h"
#include "ops/ops.h"

static const char *const USAGE =
    "gmacheck --device cuda|cpu [--config FILE] [--set key=value]... [--precision fp32|tf32|bf16]\n"
    "                [--steps S] [--batch B] [--seq N] [--tol X] [--quiet] [--digest]\n"
    "       gmacheck --list-mixers\n";
static const char *const ABOUT =
    "Compares the gradients and optimiser updates of a backend (--device; default: the config's\n"
    "device, else cuda) against the CPU backend on the same model and batch, for S steps [3].\n";
static const char *const EXIT_CODES =
    "0 within the bound (--tol; default 1e-4 fp32, 1e-2 tf32, 5e-2 bf16), 1 above it,\n"
    "2 bad input (flag, config, or a backend that cannot be used here)";

/* a small model that still exercises every path: ragged last chunk, several heads */
static void small_model(Config *c) {
    cfg_defaults(c);
    c->model.vocab_size = 512;
    c->model.d_model = 128;
    c->model.n_heads = 4;
    c->model.n_layers = 2;
    c->model.max_seq_len = 256;
    c->train.seq_len = 200;
    gma_set_kc_list(c, "32");
    cfg_set(c, "train.lr=1e-3");
}

static int load_file(const char *v, void *c) { return cfg_load_file(c, v); }
static int set_key(const char *v, void *c) { return cfg_set(c, v); }

/* argv in order into c and o: OPTS_GO_ON, or the exit code (--help, --list-mixers: 0) */
static int parse_args(Config *c, CheckOpts *o, int *precision, int argc, char **argv) {
    int list = 0;
    const Opt opts[] = {
        OPTE("--device", &o->device, OPS_DEVICES, "the backend compared with the CPU's [the config's, else cuda]"),
        OPTFN("--config", load_file, c, "FILE", "the model's config [a small model]"),
        OPTFN("--set", set_key, c, "key=value", "one config key (repeatable, in order with --config)"),
        OPTE("--precision", precision, OPS_PRECISIONS, "the device's precision [the config's]"),
        /* the ranges of train.steps (at least 1), train.batch_size and model.max_seq_len */
        OPTI("--steps", &o->steps, 1, 1000000000L, "steps compared [3]"),
        OPTI("--batch", &o->B, 1, 1000000L, "batch [4]"),
        OPTI("--seq", &o->N, 1, 16777216L, "tokens per sequence [train.seq_len]"),
        OPTD("--tol", &o->tol, 0, 1e6, "the bound of the relative errors [by precision]"),
        OPTF("--quiet", &o->quiet, "no per-tensor lines of the first step"),
        OPTF("--digest", &o->digest, "a hash of the device's loss and gradient bits per step"),
        OPTF("--list-mixers", &list, "print the mixers this build has"),
    };
    OptProg p = {.name = "gmacheck", .usage = USAGE, .about = ABOUT, .exit_codes = EXIT_CODES, .opts = opts,
                 .n_opts = OPT_COUNT(opts), .need_args = 1};
    int rc = cli_parse(&p, argc, argv, 1);
    if (rc == OPTS_GO_ON && list) {
        printf("%s\n", mixer_names());
        return 0;
    }
    return rc;
}

/* the device, precision and shape into the config, a classifier's random batch, the
 * bound's default: 0, or 2 with one line */
static int prepare(Config *c, CheckOpts *o, int precision) {
    if (o->device < 0) o->device = c->device != OPS_CPU ? c->device : OPS_CUDA;
    if (precision >= 0) c->precision = precision;
    c->device = o->device;
    if (o->N <= 0) o->N = c->train.seq_len;
    if (o->N > c->model.max_seq_len) c->model.max_seq_len = o->N;
    c->train.seq_len = o->N;
    if (c->model.vocab_size <= 0) c->model.vocab_size = 512;
    /* a classifier reads no data: a random padded batch */
    if (c->model.task == MODEL_CLASSIFY && c->data.source == DATA_recall) {
        c->data.source = DATA_cls;
        if (!c->data.path[0]) snprintf(c->data.path, sizeof c->data.path, "(gmacheck: random batch)");
    }
    char pairs[64]; /* the recall task's pairs that fit in N */
    snprintf(pairs, sizeof pairs, "data.recall_pairs=%d", (o->N - 2) / 2);
    if (c->data.source == DATA_recall && o->N < 2 * cfg_num(c, "data.recall_pairs") + 2 && cfg_set(c, pairs) != 0) {
        fprintf(stderr, "gmacheck: --N %d: %s\n", o->N, gma_error());
        return 2;
    }
    if (cfg_validate(c) != 0) {
        fprintf(stderr, "gmacheck: %s\n", gma_error());
        return 2;
    }
    if (o->tol < 0) o->tol = c->precision == OPS_FP32 ? 1e-4 : c->precision == OPS_TF32 ? 1e-2 : 5e-2;
    return 0;
}

int main(int argc, char **argv) {
    config_register_all();
    if (cli_version("gmacheck", argc, argv)) return 0;
    Config c;
    small_model(&c);
    CheckOpts o = {.device = -1, .steps = 3, .B = 4, .N = 0, .tol = -1};
    int precision = -1;
    int rc = parse_args(&c, &o, &precision, argc, argv);
    if (rc != OPTS_GO_ON) return rc;
    if ((rc = prepare(&c, &o, precision)) != 0) return rc;
    ops_set_threads(c.threads);
    rc = backend_check(&c, &o);
    if (rc < 0) fprintf(stderr, "gmacheck: %s\n", gma_error());
    return rc < 0 ? 2 : rc;
}
