/* gmatrain.c: command line of the trainer: parse arguments, resolve the configuration,
 * choose the run directory and backend, then hand over to trainer_run(). In the MPI build
 * (make mpi; `mpirun -np R bin/mpi/gmatrain ...`) every rank runs this; the ranks agree on
 * any start-up error (dist_agree) and one of them prints it (docs/distributed.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args/opts.h"
#include "cli/args/version.h"
#include "core/config.h"
#include "model/checkpoint.h"
#include "nn/mixers/mixer.h"
#include "ops/ops.h"
#include "train/dist.h"
#include "train/run_lock.h"
#include "train/trainer.h"
#include "train/config_registry.h"

static const char *const USAGE =
    "gmatrain --config FILE [--set key=value ...] [--resume [DIR]] [--out DIR]\n"
    "                [--init-from RUN[/ckpt_N]] [--device cpu|cuda] [--threads N] [--quiet]\n"
    "       gmatrain --resume DIR [--set key=value ...]   (config taken from the checkpoint)\n"
    "       gmatrain --init-from RUN --out DIR [--set ...] (a new run from RUN's weights; config\n"
    "                from --config, else from the checkpoint)\n"
    "       gmatrain --config-reference                    (Markdown table of every config key)\n";
static const char *const ABOUT =
    "Trains the model a JSON config describes; writes RUN/config.json, metrics.jsonl,\n"
    "checkpoints (RUN/ckpt_<step>, RUN/latest) and summary.json. RUN = --out, else\n"
    "out_dir, else runs/<name>. A bare --config NAME not found is looked up in configs/\n"
    "(NAME or NAME.json), then in PREFIX/share/gma/configs (make install).\n"
    "A resume continues on the data the run was made on; other data\n"
    "(fine-tuning) is a new run: --init-from copies every tensor whose name and shape\n"
    "match (step 0, fresh optimiser; train.state_from continues another checkpoint's\n"
    "step, data order and moments), lists them in RUN/init_from.json.\n"
    "Data parallel (MPI build, make mpi): mpirun -np R bin/mpi/gmatrain ... trains with\n"
    "train.batch_size per rank (global batch R x batch_size); see docs/distributed.md.\n";
static const char *const EXIT_CODES =
    "0 done (also: --resume of a finished run, nothing to do), 1 error,\n"
    "2 bad input, 3 stopped on non-finite losses, 4 stopped by a routing-collapse alert\n"
    "(gma.on_collapse \"stop\"), 130 interrupted (checkpoint written)";

/* the command line */
typedef struct Args {
    const char *config, *out, *device, *resume, *init_from, *sets[256];
    int n_sets, want_resume, quiet, threads, reference;
} Args;

/* the options of a and the program around them */
static OptProg program(Opt *opts, int n) {
    return (OptProg){.name = "gmatrain", .usage = USAGE, .about = ABOUT, .exit_codes = EXIT_CODES, .opts = opts, .n_opts = n};
}

/* argv into a: 0, OPTS_HELP, or 2 with gma_error */
static int parse_args(Args *a, OptList *sets, int argc, char **argv, int lead) {
    Opt opts[] = {
        OPTS("--config", &a->config, "FILE", "the run's JSON config (a bare NAME: configs/NAME[.json])"),
        OPTR("--set", sets, "key=value", "one config key over the file's"),
        {.name = "--resume", .type = OPT_OPTVAL, .dest = &a->want_resume, .dest2 = &a->resume, .arg = "[DIR]",
         .help = "continue the run (DIR: a run or checkpoint, else the run directory)"},
        OPTS("--out", &a->out, "DIR", "the run directory [out_dir, else runs/<name>]"),
        OPTS("--init-from", &a->init_from, "RUN[/ckpt_N]", "a new run from RUN's weights"),
        OPTS("--device", &a->device, "cpu|cuda", "backend (the config key device) [the config's]"),
        OPT_THREADS(&a->threads, "CPU threads, 0 all [the config's threads]"),
        OPTF("--quiet", &a->quiet, "no progress lines"),
        OPTF("--config-reference", &a->reference, "print the Markdown table of every config key"),
    };
    OptProg p = program(opts, OPT_COUNT(opts));
    int rc = opts_parse(&p, argc, argv, 1);
    if (rc == OPTS_HELP && lead) opts_usage(&p, stdout);
    return rc;
}

static int run_main(int argc, char **argv, int *done);
static int train(Args *a, int *done);

/* --config NAME: the file NAME; a bare NAME (no '/') that is not there is looked up as NAME,
 * then NAME.json, in configs/ (the repository root's), then in the configs `make install`
 * puts beside the program: PREFIX/share/gma/configs for PREFIX/bin/gmatrain. Not found:
 * NULL, the error naming where it looked. */
static const char *find_config(const char *name, char *buf, size_t cap) {
    if (gma_path_exists(name) || strchr(name, '/')) return name;
    char share[1024] = "", exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *s = strrchr(exe, '/'); /* PREFIX/bin/gmatrain -> PREFIX/bin -> PREFIX */
        if (s) *s = 0, s = strrchr(exe, '/');
        if (s) *s = 0, snprintf(share, sizeof share, "%s/share/gma/configs", exe);
    }
    const char *dirs[2] = {"configs", share};
    for (int d = 0; d < 2 && dirs[d][0]; d++)
        for (int j = 0; j < 2; j++) {
            snprintf(buf, cap, "%s/%s%s", dirs[d], name, j ? ".json" : "");
            if (gma_path_exists(buf)) return buf;
        }
    gma_errorf("%s: cannot open: not here, in configs/%s%s (as %s or %s.json)", name, share[0] ? " or in " : "", share, name,
               name);
    return NULL;
}

int main(int argc, char **argv) {
    gma_openmp_env(argv);
    if (dist_init(&argc, &argv) != 0) {
        fprintf(stderr, "gmatrain: %s\n", gma_error());
        return 1;
    }
    int done = 0, rc = run_main(argc, argv, &done);
    /* start-up errors may differ between ranks (a file one node cannot read): agree on
     * them so no rank goes on alone; training errors are agreed inside trainer_run or end
     * the job there (dist_abort) */
    if (!done) rc = dist_agree(rc);
    if (rc != 0 && rc != 130 && dist_reports()) fprintf(stderr, "gmatrain: %s\n", gma_error());
    dist_finalize();
    return rc;
}

/* Parse, resolve and train. *done = 1 when nothing was left to agree on (--help, or
 * trainer_run returned, which agrees by itself). An error returns its exit code with the
 * message in gma_error(); main prints it on one rank. */
static int run_main(int argc, char **argv, int *done) {
    int lead = dist_rank() == 0;
    config_register_all();
    if (cli_version("gmatrain", argc, argv)) {
        *done = 1;
        return 0;
    }
    Args a = {.threads = -1};
    OptList sets = {a.sets, &a.n_sets, 256};
    int rc = parse_args(&a, &sets, argc, argv, lead);
    if (rc == OPTS_HELP || (rc == 0 && a.reference)) {
        if (rc == 0 && lead) cfg_print_reference(stdout);
        *done = 1;
        return 0;
    }
    if (rc) return rc;
    return train(&a, done);
}

/* The config: --config's file, else the checkpoint's, then --set, --device, --threads;
 * validated. 0, or 2 with gma_error. */
static int load_config(Args *a, Config *cfg) {
    char ckdir[2048] = "", cfgbuf[2048];
    cfg_defaults(cfg);
    if (a->config && !(a->config = find_config(a->config, cfgbuf, sizeof cfgbuf))) return 2;
    if (a->config) {
        if (cfg_load_file(cfg, a->config) != 0) return 2;
    } else { /* the config of the checkpoint resumed or started from */
        const char *from = a->resume ? a->resume : a->init_from;
        int found = ckpt_resolve(from, ckdir, sizeof ckdir) == 0;
        if (!found || ckpt_read_config(ckdir, cfg) != 0) { /* none yet: a writer before its first checkpoint? */
            if (a->resume && (found || !run_lock_busy(a->resume))) ckpt_hint_intact(a->resume);
            return 2;
        }
        /* where that run's own state came from is its history, not the new run's start */
        if (!a->resume && cfg_set(cfg, "train.state_from=") != 0) return 2;
    }
    for (int i = 0; i < a->n_sets; i++)
        if (cfg_set(cfg, a->sets[i]) != 0) return 2;
    if (a->device) {
        char s[64];
        snprintf(s, sizeof s, "device=%s", a->device);
        if (cfg_set_from(cfg, s, "--device") != 0) return 2;
    }
    if (a->threads >= 0) cfg->threads = a->threads;
    if (cfg_validate(cfg) != 0) return cfg_blame(a->config ? a->config : ckdir, a->sets, a->n_sets), 2;
    return 0;
}

/* RUN: --out, else out_dir, else the run a resumed checkpoint belongs to, else
 * runs/<name>; refused when it holds checkpoints and this is no resume. 0 or 2. */
static int run_dir_of(Args *a, const Config *cfg, char *run_dir, size_t cap) {
    if (a->out) snprintf(run_dir, cap, "%s", a->out);
    else if (cfg->out_dir[0]) snprintf(run_dir, cap, "%s", cfg->out_dir);
    else if (a->resume) {
        char dir[2048];
        if (ckpt_resolve(a->resume, dir, sizeof dir) != 0) { /* a writer before its first checkpoint, or latest gone */
            if (!run_lock_busy(a->resume)) ckpt_hint_intact(a->resume);
            return 2;
        }
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
        snprintf(run_dir, cap, "%s", dir);
    } else snprintf(run_dir, cap, "runs/%s", cfg->name);
    char probe[2100];
    snprintf(probe, sizeof probe, "%s/latest", run_dir);
    if (!a->want_resume && (gma_path_exists(probe) || access(probe, F_OK) == 0))
        return gma_errorf("%s already holds checkpoints; pass --resume to continue it, or --out / name for a new run",
                          run_dir),
               2;
    if (a->want_resume && !a->resume) a->resume = run_dir;
    return 0;
}

/* Resolve the configuration and the run directory, then train. */
static int train(Args *a, int *done) {
    if (a->init_from && a->want_resume)
        return gma_errorf("--init-from and --resume cannot go together: --resume continues a run on its own data, "
                          "--init-from starts a new run from another run's weights"),
               2;
    if (a->init_from && !a->out)
        return gma_errorf("--init-from needs --out DIR: the new run's own folder (%s keeps its own)", a->init_from), 2;
    if (!a->config && !a->resume && !a->init_from)
        return gma_errorf("--config FILE, --resume DIR or --init-from RUN is required (see --help)"), 2;
    Config cfg;
    char run_dir[2048];
    int rc;
    if ((rc = load_config(a, &cfg)) != 0 || (rc = run_dir_of(a, &cfg, run_dir, sizeof run_dir)) != 0) return rc;
    if (ops_select(cfg.device) != 0 || ops_set_precision(cfg.precision) != 0) return 2;
    ops_set_threads(cfg.threads);
    /* every rank got here: go on only if all did */
    rc = dist_agree(0);
    *done = 1;
    if (rc) return rc;
    TrainerOptions o = {.run_dir = run_dir, .resume_dir = a->resume, .init_from = a->init_from,
                        .progress_tty = isatty(2), .quiet = a->quiet};
    return trainer_run(&cfg, &o);
}
