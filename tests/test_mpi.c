/* test_mpi.c: data-parallel training through mpirun and bin/mpi/gmatrain (make mpi;
 * `make test` builds it when mpicc is on PATH). Run from the repository root.
 *
 * Two ranks with batch b must compute what one process with batch 2b computes (per-step
 * losses and gradient norms to 1e-5 relative, up to summation order), rank 0 alone writes
 * the run, a resumed two-rank run continues byte for byte, a signal to one rank stops both
 * with a checkpoint, re-seeding collapsed components (gma.on_collapse "reinit") sees the
 * global batch, and bad input gives one line and exit code 2 without a hang. Every
 * test is skipped, saying why on a "SKIP: " line (counted by scripts/run_tests.sh), when
 * mpirun or bin/mpi/gmatrain is missing.
 *
 * The environment can point it at another build (scripts/cuda_emu_check.sh mpi does, for
 * the emulated `make cuda-mpi` binaries): GMA_TEST_MPI_BIN, the ranks' gmatrain (default
 * bin/mpi/gmatrain); GMA_TEST_BIN, the one-process gmatrain (default bin/gmatrain);
 * GMA_TEST_ARGS, arguments added to every run (e.g. --device cuda); GMA_TEST_ALLREDUCE,
 * the transport summary.json must name (default "MPI"). */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* small and quick: the embedded recall task of configs/quickstart.json */
static const char *SMALL =
    "--threads 1 --quiet --set train.steps=10 --set train.log_every=1 --set train.eval_every=0 "
    "--set train.checkpoint_every=5 --set train.keep_checkpoints=5 --set data.recall_valid=48 --set data.recall_test=48";

static const char *env_or(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}
#define MPI_BIN env_or("GMA_TEST_MPI_BIN", "bin/mpi/gmatrain")
#define ONE_BIN env_or("GMA_TEST_BIN", "bin/gmatrain")
#define ARGS env_or("GMA_TEST_ARGS", "")

static const char *skip_reason(void) {
    static char why[300];
    snprintf(why, sizeof why, "%s is not built (make mpi needs mpicc)", MPI_BIN);
    if (access(MPI_BIN, X_OK) != 0) return why;
    if (tu_run("command -v mpirun", NULL, 0) != 0) return "mpirun is not on PATH";
    return NULL;
}

#define SKIP_WITHOUT_MPI()                                                    \
    do {                                                                      \
        const char *why_ = skip_reason();                                     \
        if (why_) {                                                           \
            printf("SKIP: test_mpi: %.*s: %s\n", (int)strlen(__func__) - 3, __func__, why_);            \
            fflush(stdout);                                                   \
            return;                                                           \
        }                                                                     \
    } while (0)

/* "mpirun -np R" with the flags a 2-core CI container needs (root, oversubscription);
 * `timed`: one thread per rank and a time limit, so a hang fails instead of blocking */
static const char *mpirun_cmd(int np, int timed) {
    static char buf[256];
    snprintf(buf, sizeof buf, "%smpirun --oversubscribe%s -np %d", timed ? "OMP_NUM_THREADS=1 timeout 120 " : "",
             geteuid() == 0 ? " --allow-run-as-root" : "", np);
    if (timed && getenv("CK_TIMEOUT_MULTIPLIER")) /* a slower build (the CUDA emulation) gets longer */
        snprintf(buf, sizeof buf, "OMP_NUM_THREADS=1 timeout %d mpirun --oversubscribe%s -np %d",
                 120 * atoi(getenv("CK_TIMEOUT_MULTIPLIER")), geteuid() == 0 ? " --allow-run-as-root" : "", np);
    return buf;
}
#define mpirun(np) mpirun_cmd(np, 1)

typedef struct Rows {
    int n;
    double loss[64], gnorm[64];
    double test_loss;
} Rows;

/* training rows (step, loss, grad_norm) and the final test loss of RUN/metrics.jsonl */
static Rows read_metrics(const char *run) {
    Rows r = {.n = 0, .test_loss = NAN};
    char p[1100];
    snprintf(p, sizeof p, "%s/metrics.jsonl", run);
    FILE *f = fopen(p, "r");
    ck_assert_msg(f != NULL, "%s: missing", p);
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        cJSON *j = cJSON_Parse(line);
        ck_assert_msg(j != NULL, "%s: not JSON: %s", p, line);
        const cJSON *split = cJSON_GetObjectItem(j, "split"), *loss = cJSON_GetObjectItem(j, "loss");
        if (split && !strcmp(split->valuestring, "test")) r.test_loss = loss->valuedouble;
        else if (!split && !cJSON_GetObjectItem(j, "event") && loss && r.n < 64) {
            ck_assert_int_eq((int)cJSON_GetObjectItem(j, "step")->valuedouble, r.n + 1);
            r.loss[r.n] = loss->valuedouble;
            r.gnorm[r.n] = cJSON_GetObjectItem(j, "grad_norm")->valuedouble;
            r.n++;
        }
        cJSON_Delete(j);
    }
    fclose(f);
    return r;
}

/* the sorted entries of a directory, space-separated */
static void list_dir(const char *dir, char *out, size_t cap) {
    struct dirent **e;
    int n = scandir(dir, &e, NULL, alphasort);
    ck_assert_msg(n >= 0, "%s: cannot list", dir);
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (e[i]->d_name[0] != '.') snprintf(out + strlen(out), cap - strlen(out), "%s ", e[i]->d_name);
        free(e[i]);
    }
    free(e);
}

START_TEST(test_two_ranks_equal_one_with_twice_the_batch) {
    SKIP_WITHOUT_MPI();
    ck_assert_msg(run("%s %s --config configs/quickstart.json --out %s %s %s --set train.batch_size=4",
                      mpirun(2), MPI_BIN, tu_path("r2"), SMALL, ARGS) == 0,
                  "%s", g_out);
    ck_assert_msg(run("OMP_NUM_THREADS=1 %s --config configs/quickstart.json --out %s %s %s --set train.batch_size=8",
                      ONE_BIN, tu_path("r1"), SMALL, ARGS) == 0,
                  "%s", g_out);
    Rows a = read_metrics(tu_path("r1")), b = read_metrics(tu_path("r2"));
    ck_assert_int_eq(a.n, 10);
    ck_assert_int_eq(b.n, 10); /* one rank logged: not 20 rows */
    double worst = 0;
    for (int i = 0; i < 10; i++) {
        double el = fabs(a.loss[i] - b.loss[i]) / fabs(a.loss[i]), eg = fabs(a.gnorm[i] - b.gnorm[i]) / fabs(a.gnorm[i]);
        ck_assert_msg(el < 1e-5 && eg < 1e-5, "step %d: loss %.9g vs %.9g, grad_norm %.9g vs %.9g", i + 1, a.loss[i],
                      b.loss[i], a.gnorm[i], b.gnorm[i]);
        worst = fmax(worst, fmax(el, eg));
    }
    /* the final whole-split evaluation, shared out over the two ranks */
    ck_assert_msg(isfinite(b.test_loss) && fabs(a.test_loss - b.test_loss) < 1e-5 * a.test_loss, "test loss %.9g vs %.9g",
                  a.test_loss, b.test_loss);
    printf("test_mpi: 2 ranks x batch 4 vs 1 process x batch 8: worst relative difference %.2e over 10 steps\n", worst);
    /* one set of outputs, the same files as the single process wrote */
    char l1[1024], l2[1024];
    list_dir(tu_path("r1"), l1, sizeof l1);
    list_dir(tu_path("r2"), l2, sizeof l2);
    ck_assert_str_eq(l2, "ckpt_00000005 ckpt_00000010 config.json latest metrics.jsonl summary.json ");
    ck_assert_str_eq(l1, l2);
    char p[1100];
    snprintf(p, sizeof p, "%s/summary.json", tu_path("r2"));
    char *sum = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(sum);
    ck_assert_msg(strstr(sum, "\"ranks\":\t2") && strstr(sum, "\"global_batch_size\":\t8"), "%s", sum);
    char want[200];
    snprintf(want, sizeof want, "\"allreduce\":\t\"%s\"", env_or("GMA_TEST_ALLREDUCE", "MPI"));
    ck_assert_msg(strstr(sum, want), "%s: expected %s", sum, want);
    free(sum);

    /* resume: 5 steps, then on to 10, on two ranks, gives the straight run's bytes */
    ck_assert_msg(run("%s %s --config configs/quickstart.json --out %s %s %s --set train.batch_size=4 "
                      "--set train.steps=5",
                      mpirun(2), MPI_BIN, tu_path("h2"), SMALL, ARGS) == 0,
                  "%s", g_out);
    ck_assert_msg(run("%s %s --resume %s %s %s --set train.batch_size=4", mpirun(2), MPI_BIN, tu_path("h2"), SMALL, ARGS) == 0,
                  "%s", g_out);
    Rows h = read_metrics(tu_path("h2"));
    ck_assert_int_eq(h.n, 10);
    for (int i = 0; i < 10; i++) ck_assert_msg(h.loss[i] == b.loss[i], "resumed step %d: %.17g vs %.17g", i + 1, h.loss[i], b.loss[i]);
    ck_assert_int_eq(run("cmp %s/ckpt_00000010/model.safetensors %s/ckpt_00000010/model.safetensors", tu_path("h2"),
                         tu_path("r2")),
                     0);
}
END_TEST

/* the "routing" rows of RUN/metrics.jsonl, as "step layer head active util_min util_max"
 * lines (exact) and their entropies */
static int read_routing(const char *run, char lines[][128], double *ent, int cap) {
    char p[1100], line[4096];
    snprintf(p, sizeof p, "%s/metrics.jsonl", run);
    FILE *f = fopen(p, "r");
    ck_assert_msg(f != NULL, "%s: missing", p);
    int n = 0;
    while (fgets(line, sizeof line, f) && n < cap) {
        cJSON *j = cJSON_Parse(line);
        const cJSON *ev = cJSON_GetObjectItem(j, "event");
        if (ev && !strcmp(ev->valuestring, "routing")) {
#define NUM(k) cJSON_GetObjectItem(j, k)->valuedouble
            snprintf(lines[n], 128, "%g %g %g %g %.17g %.17g", NUM("step"), NUM("layer"), NUM("head"), NUM("active"),
                     NUM("util_min"), NUM("util_max"));
            ent[n++] = NUM("entropy");
#undef NUM
        }
        cJSON_Delete(j);
    }
    fclose(f);
    return n;
}

/* k-means initialisation and the routing monitor see the whole global batch: 2 ranks fit
 * and report what one process with twice the batch does (Gaussian and softmax routing) */
/* dropout (docs/model.md §8): each rank draws the masks of its slice of the global batch,
 * so 2 ranks x 4 sequences train as 1 process x 8; a mask drawn from the local index
 * would make the ranks' second halves differ from the single process's */
START_TEST(test_two_ranks_equal_one_with_dropout) {
    SKIP_WITHOUT_MPI();
    const char *drop = "--set model.mixer=sdpa --set model.dropout=0.2 --set model.attn_dropout=0.2 "
                       "--set model.mlp_hidden_dropout=0.2";
    ck_assert_msg(run("%s %s --config configs/quickstart.json --out %s %s %s %s --set train.batch_size=4", mpirun(2),
                      MPI_BIN, tu_path("d2"), SMALL, ARGS, drop) == 0,
                  "%s", g_out);
    ck_assert_msg(run("OMP_NUM_THREADS=1 %s --config configs/quickstart.json --out %s %s %s %s --set train.batch_size=8",
                      ONE_BIN, tu_path("d1"), SMALL, ARGS, drop) == 0,
                  "%s", g_out);
    Rows a = read_metrics(tu_path("d1")), b = read_metrics(tu_path("d2"));
    ck_assert_int_eq(a.n, 10);
    ck_assert_int_eq(b.n, 10);
    double worst = 0;
    for (int i = 0; i < 10; i++) {
        double el = fabs(a.loss[i] - b.loss[i]) / fabs(a.loss[i]), eg = fabs(a.gnorm[i] - b.gnorm[i]) / fabs(a.gnorm[i]);
        ck_assert_msg(el < 1e-5 && eg < 1e-5, "dropout, step %d: loss %.9g vs %.9g, grad_norm %.9g vs %.9g", i + 1,
                      a.loss[i], b.loss[i], a.gnorm[i], b.gnorm[i]);
        worst = fmax(worst, fmax(el, eg));
    }
    printf("test_mpi: dropout 0.2, 2 ranks x 4 vs 1 x 8: worst relative difference %.2e over 10 steps\n", worst);
}
END_TEST

START_TEST(test_kmeans_and_monitor_use_the_global_batch) {
    SKIP_WITHOUT_MPI();
    const char *variants[2] = {"--set gma.init=kmeans", "--set gma.init=kmeans --set gma.routing=softmax"};
    for (int v = 0; v < 2; v++) {
        char a[64], b[64];
        snprintf(a, sizeof a, "k1_%d", v);
        snprintf(b, sizeof b, "k2_%d", v);
        const char *S = "--set gma.monitor_every=2 --set train.steps=6";
        ck_assert_msg(run("%s %s --config configs/quickstart.json --out %s %s %s %s %s --set train.batch_size=4", mpirun(2),
                          MPI_BIN, tu_path(b), SMALL, S, variants[v], ARGS) == 0,
                      "%s", g_out);
        ck_assert_msg(run("OMP_NUM_THREADS=1 %s --config configs/quickstart.json --out %s %s %s %s %s --set train.batch_size=8",
                          ONE_BIN, tu_path(a), SMALL, S, variants[v], ARGS) == 0,
                      "%s", g_out);
        Rows r1 = read_metrics(tu_path(a)), r2 = read_metrics(tu_path(b));
        ck_assert_int_eq(r1.n, 6);
        ck_assert_int_eq(r2.n, 6);
        double worst = 0;
        for (int i = 0; i < 6; i++) worst = fmax(worst, fabs(r1.loss[i] - r2.loss[i]) / fabs(r1.loss[i]));
        ck_assert_msg(worst < 1e-6, "%s: loss differs by %.2e", variants[v], worst);
        static char l1[64][128], l2[64][128];
        double e1[64], e2[64];
        int n1 = read_routing(tu_path(a), l1, e1, 64), n2 = read_routing(tu_path(b), l2, e2, 64);
        ck_assert_int_eq(n1, 12); /* steps 2, 4, 6 x 2 layers x 2 heads */
        ck_assert_int_eq(n2, n1);
        double went = 0;
        for (int i = 0; i < n1; i++) {
            ck_assert_str_eq(l2[i], l1[i]);
            went = fmax(went, fabs(e1[i] - e2[i]) / e1[i]);
        }
        ck_assert_msg(went < 1e-6, "%s: entropy differs by %.2e", variants[v], went);
        printf("test_mpi: %s, 2 ranks vs 1 process: loss to %.1e, routing entropy to %.1e, usage identical\n", variants[v],
               worst, went);
    }
}
END_TEST

/* gma.on_collapse "reinit" with 2 ranks re-seeds from the gathered rows of both ranks with
 * the argmax of every gathered row (not only this rank's): the run matches one process with
 * twice the batch. MALLOC_PERTURB_ fills fresh allocations with garbage, so rows whose
 * argmax were left unset could not pass by reading zeros. */
static const char *COLLAPSE =
    "{\"name\": \"c\", \"seed\": 5,\n"
    " \"model\": {\"d_model\": 16, \"n_layers\": 1, \"n_heads\": 2, \"max_seq_len\": 16, \"mixer\": \"gma\"},\n"
    " \"gma\": {\"n_components\": 8, \"chunk\": 8, \"monitor_every\": 5, \"patience\": 2, \"init_mean_scale\": 1e-12,\n"
    "          \"on_collapse\": \"reinit\"},\n"
    " \"train\": {\"steps\": 20, \"seq_len\": 16, \"lr\": 0.003, \"warmup\": 0, \"eval_every\": 0,\n"
    "           \"log_every\": 1, \"checkpoint_every\": 0},\n"
    " \"data\": {\"recall_vocab\": 20, \"recall_pairs\": 3, \"recall_valid\": 16, \"recall_test\": 16}}\n";

START_TEST(test_reinit_uses_the_global_batch) {
    SKIP_WITHOUT_MPI();
    tu_write(tu_path("collapse.json"), COLLAPSE);
    ck_assert_msg(run("MALLOC_PERTURB_=165 %s %s --config %s --out %s --threads 1 --quiet %s --set train.batch_size=4",
                      mpirun(2), MPI_BIN, tu_path("collapse.json"), tu_path("re2"), ARGS) == 0,
                  "%s", g_out);
    ck_assert_msg(run("OMP_NUM_THREADS=1 %s --config %s --out %s --threads 1 --quiet %s --set train.batch_size=8", ONE_BIN,
                      tu_path("collapse.json"), tu_path("re1"), ARGS) == 0,
                  "%s", g_out);
    char p[1100];
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("re2"));
    char *m = gma_read_file(p, NULL);
    ck_assert_msg(m && strstr(m, "\"reseeded\":"), "no re-seed in %s", p);
    free(m);
    Rows r1 = read_metrics(tu_path("re1")), r2 = read_metrics(tu_path("re2"));
    ck_assert_int_eq(r1.n, 20);
    ck_assert_int_eq(r2.n, 20);
    double worst = 0;
    for (int i = 0; i < 20; i++) {
        double e = fabs(r1.loss[i] - r2.loss[i]) / fabs(r1.loss[i]);
        ck_assert_msg(e < 1e-5, "step %d: loss %.9g vs %.9g", i + 1, r1.loss[i], r2.loss[i]);
        worst = fmax(worst, e);
    }
    static char l1[64][128], l2[64][128];
    double e1[64], e2[64];
    int n1 = read_routing(tu_path("re1"), l1, e1, 64), n2 = read_routing(tu_path("re2"), l2, e2, 64);
    ck_assert_int_eq(n1, 8); /* steps 5, 10, 15, 20 x 2 heads */
    ck_assert_int_eq(n2, n1);
    for (int i = 0; i < n1; i++) ck_assert_str_eq(l2[i], l1[i]);
    printf("test_mpi: on_collapse reinit, 2 ranks vs 1 process: loss to %.1e over 20 steps, usage identical\n", worst);
}
END_TEST

START_TEST(test_bad_input_one_line) {
    SKIP_WITHOUT_MPI();
    /* every rank refuses the config: exit 2, one line from gmatrain, nothing written */
    ck_assert_int_eq(run("%s %s --config configs/quickstart.json --out %s %s --set train.batch_size=0",
                         mpirun(2), MPI_BIN, tu_path("bad"), ARGS),
                     2);
    const char *first = strstr(g_out, "gmatrain: ");
    ck_assert_msg(first && strstr(first, "train.batch_size") && !strstr(first + 1, "gmatrain: "), "%s", g_out);
    ck_assert(!gma_path_exists(tu_path("bad")));
    /* replicas that differ at a checkpoint: all ranks stop, exit 1, one line, no checkpoint */
    ck_assert_int_eq(run("GMA_FAULT_DIVERGE_RANK=1 %s %s --config configs/quickstart.json --out %s %s %s", mpirun(2),
                         MPI_BIN, tu_path("div"), SMALL, ARGS),
                     1);
    first = strstr(g_out, "gmatrain: ");
    ck_assert_msg(first && strstr(first, "replicas diverged") && !strstr(first + 1, "gmatrain: "), "%s", g_out);
    char latest[1100];
    snprintf(latest, sizeof latest, "%s/latest", tu_path("div"));
    ck_assert_msg(!gma_path_exists(latest), "a checkpoint was written from diverged replicas");
    /* an error on rank 0 only (it alone creates the run directory): all ranks stop, exit 1 */
    tu_write(tu_path("file"), "a file, not a directory\n");
    char out[1100];
    snprintf(out, sizeof out, "%s/run", tu_path("file"));
    ck_assert_int_eq(run("%s %s --config configs/quickstart.json --out %s %s %s", mpirun(2), MPI_BIN, out, SMALL, ARGS),
                     1);
    first = strstr(g_out, "gmatrain: ");
    ck_assert_msg(first && !strstr(first + 1, "gmatrain: "), "%s", g_out);
}
END_TEST

/* a metrics row that cannot be written (RLIMIT_FSIZE of 8 KiB in each rank, rank 0 alone
 * writes the log): every rank stops with exit 1 and the line naming metrics.jsonl, learnt
 * from the next step's reduction (no broadcast per step), not a rank left waiting */
START_TEST(test_metrics_full_stops_all) {
    SKIP_WITHOUT_MPI();
    ck_assert_int_eq(run("%s sh -c \"trap '' XFSZ; ulimit -f 16; exec %s --config configs/quickstart.json --out %s %s "
                         "--set train.steps=400 --set train.checkpoint_every=0 %s\"",
                         mpirun(2), MPI_BIN, tu_path("mfull"), SMALL, ARGS),
                     1);
    const char *first = strstr(g_out, "gmatrain: ");
    ck_assert_msg(first && strstr(first, "metrics.jsonl: cannot write a row at step") && strstr(first, "File too large") &&
                      !strstr(first + 1, "gmatrain: "),
                  "%s", g_out);
}
END_TEST

START_TEST(test_signal_to_one_rank_stops_all) {
    SKIP_WITHOUT_MPI();
    char log[1100], cmd[4096];
    snprintf(log, sizeof log, "%s/sig.log", tu_tmpdir());
    snprintf(cmd, sizeof cmd,
             "exec %s %s --config configs/quickstart.json --out %s --threads 1 --quiet %s "
             "--set train.steps=100000 --set train.log_every=1 --set train.eval_every=0 > %s 2>&1",
             mpirun_cmd(2, 0), MPI_BIN, tu_path("sig"), ARGS, log);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        setenv("OMP_NUM_THREADS", "1", 1);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    /* wait until it trains, then SIGTERM the last child of mpirun (one rank) */
    char metrics[1100], children[1100];
    snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", tu_path("sig"));
    snprintf(children, sizeof children, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    int rank_pid = 0;
    for (int t = 0; t < 600 && !rank_pid; t++) {
        usleep(50000);
        FILE *m = fopen(metrics, "r");
        if (!m) continue;
        int lines = 0, c;
        while ((c = fgetc(m)) != EOF) lines += c == '\n';
        fclose(m);
        if (lines < 3) continue;
        FILE *f = fopen(children, "r");
        if (!f) continue;
        int a = 0, b = 0;
        if (fscanf(f, "%d %d", &a, &b) == 2) rank_pid = b;
        fclose(f);
    }
    ck_assert_msg(rank_pid > 0, "no rank process found under mpirun %d", (int)pid);
    kill(rank_pid, SIGTERM);
    int st = 0;
    alarm(60);
    ck_assert(waitpid(pid, &st, 0) == pid);
    alarm(0);
    char *text = gma_read_file(log, NULL);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 130, "status %d: %s", st, text ? text : "");
    ck_assert_msg(text && strstr(text, "interrupted by a signal to another rank"), "%s", text ? text : "");
    free(text);
    char latest[1100];
    snprintf(latest, sizeof latest, "%s/latest/optim.safetensors", tu_path("sig"));
    ck_assert_msg(gma_path_exists(latest), "no checkpoint after the signal");
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("mpi");
    TCase *tc = tcase_create("mpi");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_two_ranks_equal_one_with_twice_the_batch);
    tcase_add_test(tc, test_two_ranks_equal_one_with_dropout);
    tcase_add_test(tc, test_kmeans_and_monitor_use_the_global_batch);
    tcase_add_test(tc, test_reinit_uses_the_global_batch);
    tcase_add_test(tc, test_bad_input_one_line);
    tcase_add_test(tc, test_metrics_full_stops_all);
    tcase_add_test(tc, test_signal_to_one_rank_stops_all);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
