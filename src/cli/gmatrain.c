/* gmatrain.c: command line of the trainer: parse arguments, resolve the configuration,
 * choose the run directory and backend, then hand over to trainer_run(). In the MPI build
 * (make mpi; `mpirun -np R bin/mpi/gmatrain ...`) every rank runs this; the ranks agree on
 * any start-up error (dist_agree) and one of them prints it (docs/distributed.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/args/version.h"
#include "core/config.h"
#include "model/checkpoint.h"
#include "nn/mixers/mixer.h"
#include "ops/ops.h"
#include "train/dist.h"
#include "train/trainer.h"
#include "train/config_registry.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: gmatrain --config FILE [--set key=value ...] [--resume [DIR]] [--out DIR]\n"
            "                [--init-from RUN[/ckpt_N]] [--device cpu|cuda] [--threads N] [--quiet]\n"
            "       gmatrain --resume DIR [--set key=value ...]   (config taken from the checkpoint)\n"
            "       gmatrain --init-from RUN --out DIR [--set ...] (a new run from RUN's weights; config\n"
            "                from --config, else from the checkpoint)\n"
            "       gmatrain --config-reference                    (Markdown table of every config key)\n"
            "       gmatrain --help | --version\n"
            "Trains the model a JSON config describes; writes RUN/config.json, metrics.jsonl,\n"
            "checkpoints (RUN/ckpt_<step>, RUN/latest) and summary.json. RUN = --out, else\n"
            "out_dir, else runs/<name>. A bare --config NAME not found is looked up in configs/\n"
            "(NAME or NAME.json), then in PREFIX/share/gma/configs (make install).\n"
            "A resume continues on the data the run was made on; other data\n"
            "(fine-tuning) is a new run: --init-from copies every tensor whose name and shape\n"
            "match (step 0, fresh optimiser), lists them in RUN/init_from.json.\n"
            "Exit codes: 0 done (also: --resume of a finished run, nothing to do), 1 error,\n"
            "2 bad input, 3 stopped on non-finite losses, 4 stopped by a routing-collapse alert\n"
            "(gma.on_collapse \"stop\"), 130 interrupted (checkpoint written).\n"
            "Data parallel (MPI build, make mpi): mpirun -np R bin/mpi/gmatrain ... trains with\n"
            "train.batch_size per rank (global batch R x batch_size); see docs/distributed.md.\n");
}

static int run_main(int argc, char **argv, int *done);

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
    const char *config = NULL, *out = NULL, *device = NULL, *resume = NULL, *init_from = NULL;
    const char *sets[256];
    int n_sets = 0, want_resume = 0, quiet = 0, threads = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_next = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (lead) usage(stdout);
            *done = 1;
            return 0;
        } else if (!strcmp(a, "--config-reference")) {
            if (lead) cfg_print_reference(stdout);
            *done = 1;
            return 0;
        } else if (!strcmp(a, "--config") && has_next) config = argv[++i];
        else if (!strcmp(a, "--set") && has_next) {
            if (n_sets == 256) return gma_errorf("too many --set options"), 2;
            sets[n_sets++] = argv[++i];
        } else if (!strcmp(a, "--out") && has_next) out = argv[++i];
        else if (!strcmp(a, "--init-from") && has_next) init_from = argv[++i];
        else if (!strcmp(a, "--device") && has_next) device = argv[++i];
        else if (!strcmp(a, "--threads") && has_next) {
            const char *v = argv[++i];
            long t;
            if (gma_parse_long(v, 0, 1024, &t) != 0) /* the range of the threads key */
                return gma_errorf("--threads: \"%s\" is not an integer in [0, 1024]", v), 2;
            threads = (int)t;
        } else if (!strcmp(a, "--quiet")) quiet = 1;
        else if (!strcmp(a, "--resume")) {
            want_resume = 1;
            if (has_next && strncmp(argv[i + 1], "--", 2)) resume = argv[++i];
        } else
            return gma_errorf("unknown or incomplete option \"%s\" (see --help)", a), 2;
    }
    if (init_from && want_resume)
        return gma_errorf("--init-from and --resume cannot go together: --resume continues a run on its own data, "
                          "--init-from starts a new run from another run's weights"),
               2;
    if (!config && !resume && !init_from)
        return gma_errorf("--config FILE, --resume DIR or --init-from RUN is required (see --help)"), 2;
    Config cfg;
    cfg_defaults(&cfg);
    char ckdir[2048] = "", cfgbuf[2048];
    if (config && !(config = find_config(config, cfgbuf, sizeof cfgbuf))) return 2;
    if (config) {
        if (cfg_load_file(&cfg, config) != 0) return 2;
    } else { /* the config of the checkpoint resumed or started from */
        const char *from = resume ? resume : init_from;
        if (ckpt_resolve(from, ckdir, sizeof ckdir) != 0 || ckpt_read_config(ckdir, &cfg) != 0) {
            if (resume) ckpt_hint_intact(resume);
            return 2;
        }
    }
    for (int i = 0; i < n_sets; i++)
        if (cfg_set(&cfg, sets[i]) != 0) return 2;
    if (device) {
        char s[64];
        snprintf(s, sizeof s, "device=%s", device);
        if (cfg_set_from(&cfg, s, "--device") != 0) return 2;
    }
    if (threads >= 0) cfg.threads = threads;
    if (cfg_validate(&cfg) != 0) return cfg_blame(config ? config : ckdir, sets, n_sets), 2;
    char run_dir[2048];
    if (out) snprintf(run_dir, sizeof run_dir, "%s", out);
    else if (cfg.out_dir[0]) snprintf(run_dir, sizeof run_dir, "%s", cfg.out_dir);
    else if (resume) { /* continue in the run the checkpoint belongs to */
        char dir[2048];
        if (ckpt_resolve(resume, dir, sizeof dir) != 0) return 2;
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
        snprintf(run_dir, sizeof run_dir, "%s", dir);
    }
    else snprintf(run_dir, sizeof run_dir, "runs/%s", cfg.name);
    char probe[2100];
    snprintf(probe, sizeof probe, "%s/latest", run_dir);
    if (!want_resume && (gma_path_exists(probe) || access(probe, F_OK) == 0))
        return gma_errorf("%s already holds checkpoints; pass --resume to continue it, or --out / name for a new run",
                          run_dir),
               2;
    if (want_resume && !resume) resume = run_dir;
    if (ops_select(cfg.device) != 0 || ops_set_precision(cfg.precision) != 0) return 2;
    ops_set_threads(cfg.threads);
    /* every rank got here: go on only if all did */
    int rc = dist_agree(0);
    *done = 1;
    if (rc) return rc;
    TrainerOptions o = {.run_dir = run_dir, .resume_dir = resume, .init_from = init_from, .progress_tty = isatty(2),
                        .quiet = quiet};
    return trainer_run(&cfg, &o);
}
