/* bench_model.c: `gmabench model` (docs/benchmarks.md, "What each subcommand measures"):
 * whole-model training steps (forward, backward, AdamW) through the profiling table,
 * measured in rounds of one training step and a replay of its matrix shapes alone; a row
 * per mixer with medians and ranges, and the peak memory beside the plan (model_memory_plan)
 * it should stay close to. How the rounds, "best" and the peak are taken: run_rounds,
 * summarise, model_row. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/bench_report.h"
#include "optim/optim.h"

#define MAX_ROUNDS 64
/* what each timed round measured */
typedef struct Rounds {
    double times[MAX_ROUNDS], ratios[MAX_ROUNDS], alls[MAX_ROUNDS], outs[MAX_ROUNDS];
    double flops_step, hid_step, mm_rec;
} Rounds;

/* one training step of m on tok/tgt (step number s) */
static double train_step(Model *m, const int32_t *tok, const int32_t *tgt, int B, int T, int s) {
    ops_sync();
    double t0 = gma_now();
    LossStats st;
    model_zero_grad(m);
    model_forward(m, tok, tgt, B, T, NULL, 0, &st, 1, s + 2);
    model_backward(m, 1.0);
    double gn = optim_grad_norm(m);
    optim_step(m, optim_cfg(&m->cfg), s + 3, 1e-4, gn);
    ops_sync();
    return gma_now() - t0;
}

/* Each round times one training step and then replays the step's matrix shapes alone
 * (bench_replay_shapes), so a round's ratio (replay time / step time) compares the two under
 * the same machine load. On a GPU the time inside products comes from one extra step with
 * the device synchronised around each; the timed steps run unhindered.
 * step -2 warms up, step -1 records the shapes and the time inside the products, rounds
 * 0 .. S-1 each time a step and a replay of the shapes; returns S, or 0 when the warm-up
 * step took over max_seconds / (4 S + 2) (the rounds with their replays would take over
 * max_seconds): that step's time alone is the row's (its peak memory is the same) */
static int run_rounds(BenchProf *p, Model *m, const int32_t *tok, const int32_t *tgt, int B, int T, int S,
                      int time_all, double max_seconds, Rounds *r) {
    bench_prof_reset(p);
    for (int s = -2; s < S; s++) {
        p->mm_time = p->mm_flops = p->hid_flops = 0;
        p->recording = s == -1;
        p->timing = p->recording || (s >= 0 && time_all);
        p->shape_time = s >= 0 && time_all;
        double dt = train_step(m, tok, tgt, B, T, s);
        if (s == -2 && dt * (4 * S + 2) > max_seconds) {
            r->times[0] = dt;
            return 0;
        }
        if (s == -1) r->mm_rec = p->mm_time;
        if (s < 0) continue;
        p->recording = p->timing = 0;
        r->times[s] = dt, r->flops_step = p->mm_flops, r->hid_step = p->hid_flops;
        r->outs[s] = 1 - (time_all ? p->mm_time : r->mm_rec) / dt;
        double hid = 0, tab = bench_replay_shapes(p, &hid);
        r->ratios[s] = tab / dt, r->alls[s] = (tab + hid) / dt;
    }
    p->recording = p->timing = p->shape_time = 0;
    return S;
}

/* the median and range of x[0..S-1] (x is left in order) */
static double med_range(double *x, int S, double *lo, double *hi) {
    bench_sort(x, S);
    if (lo) *lo = x[0];
    if (hi) *hi = x[S - 1];
    return x[S / 2];
}

/* the row: the medians over the rounds with their ranges; "BLAS GF/s" uses each shape's best
 * over all rounds, and "best" is that best replay over the fastest step (best against best:
 * on a shared machine other work only adds time to either) */
static void summarise(const BenchProf *p, Rounds *r, int S, BenchModelResult *res) {
    res->med_out = med_range(r->outs, S, NULL, NULL);
    res->r_med = med_range(r->ratios, S, &res->r_lo, &res->r_hi);
    res->a_med = med_range(r->alls, S, &res->a_lo, &res->a_hi);
    res->med = med_range(r->times, S, &res->tmin, &res->tmax);
    res->blas_time = bench_replay_best(p, 0);
    res->all_best = (res->blas_time + bench_replay_best(p, 1)) / res->tmin;
    res->flops_step = r->flops_step, res->hid_step = r->hid_step;
    res->mm_med = (1 - res->med_out) * res->med;
}

/* one row: mixer t at dropout drop; returns its median step ms (0 when it did not run) */
static double model_row_here(const BenchOpts *o, BenchProf *p, cJSON *arr, const char *t, const char *label, double drop,
                             double base_ms) {
    int S = GMA_MIN(GMA_MAX(o->steps, 1), MAX_ROUNDS), time_all = !bench_on_device();
    Model m;
    ops_sync();
    ops_mem_reset_peak();
    double base = bench_mem_now();
    if (bench_causal_model(o, t, o->B, &m, drop) != 0) return 0;
    MemPlan plan;
    model_memory_plan(&m, o->B, o->T, &plan);
    if (plan.params + plan.acts > o->max_mem_gib * 1073741824.0) { /* as gmabench cross: the plan alone */
        printf("%-10s skipped: memory (planned %.1f MiB, parameters, gradients and moments %.1f MiB; --max-mem-gib %g)\n",
               label, (plan.params + plan.acts) / 1048576.0, plan.params / 1048576.0, o->max_mem_gib);
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "mixer", label);
        cJSON_AddNumberToObject(row, "dropout", drop);
        cJSON_AddNumberToObject(row, "T", o->T);
        cJSON_AddNumberToObject(row, "B", o->B);
        cJSON_AddNumberToObject(row, "planned_mib", (plan.params + plan.acts) / 1048576.0);
        cJSON_AddNumberToObject(row, "params_grads_moments_mib", plan.params / 1048576.0);
        cJSON_AddStringToObject(row, "skipped", "skipped: memory");
        cJSON_AddItemToArray(arr, row);
        model_free(&m);
        return 0;
    }
    int whole = bench_mem_reset_peak() != 0; /* from here: the steps' high-water mark */
    int n = o->B * o->T;
    int32_t *tok = xmalloc(sizeof(int32_t) * n), *tgt = xmalloc(sizeof(int32_t) * n);
    Rng rng;
    rng_seed(&rng, 2);
    for (int i = 0; i < n; i++) tok[i] = (int32_t)rng_below(&rng, o->V), tgt[i] = (int32_t)rng_below(&rng, o->V);
    Rounds r = {0};
    S = run_rounds(p, &m, tok, tgt, o->B, o->T, S, time_all, o->max_seconds, &r);
    BenchModelResult res = {.mixer = label, .drop = drop, .attn_drop = m.cfg.model.attn_dropout, .base_ms = base_ms,
                            .params = model_param_count(&m), .rounds = S, .time_all = time_all};
    if (S > 0) summarise(p, &r, S, &res);
    else res.med = res.tmin = res.tmax = r.times[0];
    res.peak = bench_mem_peak() - base;
    res.plan = plan.params + plan.acts, res.pmem = plan.params, res.peak_whole = whole;
    cJSON *row = bench_report_model_row(arr, o, &res);
    if (o->shapes && time_all) bench_report_shapes(row, p, S);
    fflush(stdout);
    free(tok);
    free(tgt);
    model_free(&m);
    return res.med * 1e3;
}

/* model_row_here, on the CPU in a forked child so that its high-water mark is the row's own:
 * the child prints the row and hands back its median step ms and its JSON row. The peak is
 * the resident high-water mark during the training steps above the resident set before the
 * model was made (parameters, gradients, moments, the activation plan, which the backend's
 * allocation zeroes, and whatever the ops take beside it: per-thread buffers, caches,
 * OpenBLAS's), the mark being reset after the model is made so that model_init_params' host
 * copy of the parameters does not hide the steps' own buffers (where the system refuses the
 * reset the mark is the whole child's: JSON peak_includes_model_init). On a GPU: the
 * backend's device high-water mark. */
static double model_row(const BenchOpts *o, BenchProf *p, cJSON *arr, const char *t, const char *label, double drop,
                        double base_ms) {
    int fd[2];
    if (bench_on_device() || o->shapes || pipe(fd) != 0) return model_row_here(o, p, arr, t, label, drop, base_ms);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        cJSON *mine = cJSON_CreateArray();
        double ms = model_row_here(o, p, mine, t, label, drop, base_ms);
        fflush(stdout);
        char *js = cJSON_PrintUnformatted(cJSON_GetArrayItem(mine, 0) ? cJSON_GetArrayItem(mine, 0) : mine);
        size_t n = strlen(js);
        int bad = write(fd[1], &ms, sizeof ms) != sizeof ms || write(fd[1], js, n) != (ssize_t)n;
        _exit(bad);
    }
    close(fd[1]);
    double ms = 0;
    if (pid < 0 || read(fd[0], &ms, sizeof ms) != sizeof ms) ms = 0;
    size_t cap = 1 << 16, len = 0;
    char *buf = xmalloc(cap);
    ssize_t got;
    while (pid > 0 && (got = read(fd[0], buf + len, cap - len - 1)) > 0)
        if ((len += (size_t)got) + 1 == cap) buf = xrealloc(buf, cap *= 2);
    buf[len] = 0;
    close(fd[0]);
    int st = 0;
    if (pid > 0) waitpid(pid, &st, 0);
    cJSON *row = len > 0 ? cJSON_Parse(buf) : NULL; /* a row skipped for memory: ms 0 */
    if (row && cJSON_IsObject(row)) cJSON_AddItemToArray(arr, row);
    else cJSON_Delete(row);
    free(buf);
    return row ? ms : 0;
}

void bench_model(const BenchOpts *o, BenchProf *p, cJSON *out) {
    double load[3] = {0};
    if (getloadavg(load, 3) < 0) load[0] = load[1] = load[2] = -1;
    int time_all = !bench_on_device();
    bench_report_model_head(o, GMA_MIN(GMA_MAX(o->steps, 1), MAX_ROUNDS), time_all, load);
    cJSON *arr = cJSON_AddArrayToObject(out, "model");
    cJSON_AddNumberToObject(out, "model_load_average", load[0]);
    const GmaOps *keep = g_ops;
    g_ops = &p->table;
    if (time_all) bench_prof_hidden(p, 1);
    char names[BENCH_MAX_MIXERS][32];
    int nm = bench_mixer_names(o, names, BENCH_MAX_MIXERS);
    char labels[BENCH_MAX_MIXERS][BENCH_LABEL];
    bench_mixer_labels(o, names, nm, labels);
    for (int k = 0; k < nm; k++) {
        /* each mixer without dropout, then with dropout 0.1 in the same run */
        double base_ms = model_row(o, p, arr, names[k], labels[k], 0, 0);
        /* the dropout row only where the row without it took less than --max-seconds */
        if (base_ms > 0 && base_ms * 1e-3 * (4 * GMA_MIN(GMA_MAX(o->steps, 1), MAX_ROUNDS) + 2) < o->max_seconds)
            model_row(o, p, arr, names[k], labels[k], 0.1, base_ms);
        else if (base_ms > 0)
            printf("%s+d0.1: skipped: time (the step without dropout took %.1f s; --max-seconds %g)\n", labels[k],
                   base_ms * 1e-3, o->max_seconds);
    }
    bench_prof_hidden(p, 0);
    g_ops = keep;
}
