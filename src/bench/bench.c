/* bench.c: gmabench's options and configs, shared by the benchmarks (bench.h). */
#include "bench/bench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nn/mixers/mixer.h"
#include "ops/ops.h"

void bench_opts_defaults(BenchOpts *o) {
    *o = (BenchOpts){.D = 256, .H = 4, .Kc = 64, .B = 0, .causal = 1, .repeat = 3, .L = 4, .V = 8192, .T = 256,
                     .steps = 9, .max_seconds = 60, .max_mem_gib = 12, .feed_max = 4096};
    snprintf(o->mixers, sizeof o->mixers, "gma,sdpa");
    static const int seq[] = {512, 1024, 2048, 4096, 8192, 16384};
    o->n_seq = (int)(sizeof seq / sizeof seq[0]);
    memcpy(o->seq, seq, sizeof seq);
    o->samples[0] = 1, o->n_samples = 1;
}

int bench_mixer_names(const BenchOpts *o, char names[][32], int cap) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", o->mixers);
    int n = 0;
    char *sv = NULL;
    for (char *t = strtok_r(buf, ",", &sv); t && n < cap; t = strtok_r(NULL, ",", &sv))
        snprintf(names[n++], 32, "%s", t);
    return n;
}

Config bench_config(const BenchOpts *o, const char *mixer, int N) {
    Config c;
    cfg_defaults(&c);
    c.model.d_model = o->D;
    c.model.n_heads = o->H;
    c.model.n_layers = o->L;
    c.model.max_seq_len = N;
    c.train.seq_len = N;
    c.model.vocab_size = o->V;
    char kc[16];
    snprintf(kc, sizeof kc, "%d", o->Kc);
    if (gma_set_kc_list(&c, kc) != 0) fprintf(stderr, "gmabench: --Kc: %s\n", gma_error());
    c.model.causal = o->causal;
    char mx[64];
    snprintf(mx, sizeof mx, "model.mixer=%s", mixer);
    if (cfg_set(&c, mx) != 0) fprintf(stderr, "gmabench: %s\n", gma_error());
    for (int i = 0; i < o->n_sets; i++)
        if (cfg_set(&c, o->sets[i]) != 0) fprintf(stderr, "gmabench: %s\n", gma_error());
    return c;
}

void bench_mixer_labels(const BenchOpts *o, char names[][32], int n, char labels[][BENCH_LABEL]) {
    for (int k = 0; k < n; k++) {
        Config c = bench_config(o, names[k], o->T);
        size_t at = 0;
        labels[k][0] = 0;
        for (int l = 0; l < c.model.mixer.n && at + 1 < BENCH_LABEL; l++)
            at += (size_t)snprintf(labels[k] + at, BENCH_LABEL - at, "%s%s", l ? "," : "", c.model.mixer.name[l]);
    }
}

/* the first N (of --seq, then T) at which mixer t's config is valid without the --set
 * values and invalid with them: -1 with the error, else 0 */
static int check_sets_of(const BenchOpts *o, const char *t) {
    BenchOpts bare = *o;
    bare.n_sets = 0;
    for (int s = 0; s <= o->n_seq; s++) {
        int N = s < o->n_seq ? o->seq[s] : o->T;
        Config with = bench_config(o, t, N), without = bench_config(&bare, t, N);
        if (cfg_validate(&with) != 0 && cfg_validate(&without) == 0) {
            cfg_validate(&with);
            char why[512];
            snprintf(why, sizeof why, "%s", gma_error());
            return gma_errorf("--set: mixer %s, N = %d: %s", t, N, why);
        }
    }
    return 0;
}

int bench_check_sets(const BenchOpts *o) {
    for (int i = 0; i < o->n_sets; i++) { /* a bad --set before any benchmark runs */
        Config c;
        cfg_defaults(&c);
        if (cfg_set(&c, o->sets[i]) != 0) return -1;
    }
    if (o->n_sets == 0) return 0;
    char names[BENCH_MAX_MIXERS][32];
    int n = bench_mixer_names(o, names, BENCH_MAX_MIXERS);
    for (int k = 0; k < n; k++)
        if (check_sets_of(o, names[k]) != 0) return -1;
    return 0;
}

int bench_on_device(void) { return g_ops->device != OPS_CPU; }

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
void bench_sort(double *x, int n) { qsort(x, (size_t)n, sizeof(double), cmp_d); }

int bench_causal_model(const BenchOpts *o, const char *t, int B, Model *m, double drop) {
    BenchOpts oo = *o;
    oo.causal = 1;
    Config c = bench_config(&oo, t, o->T);
    if (drop > 0) {
        c.model.dropout = drop;
        if (mixer_find(t) && mixer_find(t)->attn_dropout_ok) c.model.attn_dropout = drop;
    }
    if (model_build(m, &c) != 0) {
        printf("%-10s %s\n", t, gma_error());
        return -1;
    }
    if (model_check_memory(m, B, o->T) != 0) {
        printf("%-10s skipped: %s\n", t, gma_error());
        model_free(m);
        return -1;
    }
    model_alloc(m, B, o->T);
    model_init_params(m, 1);
    return 0;
}

/* a "VmHWM:" / "VmRSS:" line of /proc/self/status, in bytes */
static double proc_status_bytes(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) kb = atof(line + n);
    fclose(f);
    return kb * 1024;
}

double bench_cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int bench_in_child(void (*fn)(void *ctx, void *res), void *ctx, void *res, size_t size) {
    if (bench_on_device()) return fn(ctx, res), 0;
    memset(res, 0, size);
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return close(fd[0]), close(fd[1]), -1;
    if (pid == 0) {
        close(fd[0]);
        fn(ctx, res);
        _exit(write(fd[1], res, size) != (ssize_t)size);
    }
    close(fd[1]);
    int ok = read(fd[0], res, size) == (ssize_t)size;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (!ok) memset(res, 0, size);
    return ok ? 0 : -1;
}

double bench_mem_now(void) {
    size_t now, peak;
    ops_mem_stats(&now, &peak);
    return bench_on_device() ? (double)now : proc_status_bytes("VmRSS:");
}
int bench_mem_reset_peak(void) {
    ops_mem_reset_peak();
    if (bench_on_device()) return 0;
    FILE *f = fopen("/proc/self/clear_refs", "w"); /* "5": the high-water mark back to the resident set (Linux) */
    int ok = f && fputs("5", f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    return ok ? 0 : -1;
}
double bench_mem_peak(void) {
    size_t now, peak;
    ops_mem_stats(&now, &peak);
    return bench_on_device() ? (double)peak : proc_status_bytes("VmHWM:");
}
