/* testutil.c: temporary directories, small files, command runs and data batches for the suites. */
#include "testutil.h"

#include "core/config.h"
#include "core/safetensors.h"
#include "data/lm/lmdata.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static char g_dir[512];

static void cleanup(void) {
    if (g_dir[0] && getpid() > 0) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd)) {}
    }
}

const char *tu_tmpdir(void) {
    if (!g_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/gmatest.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(g_dir)) { perror("mkdtemp"); abort(); }
        atexit(cleanup);
    }
    return g_dir;
}

const char *tu_path(const char *name) {
    static char bufs[8][1024];
    static int k;
    char *b = bufs[k++ & 7];
    snprintf(b, 1024, "%s/%s", tu_tmpdir(), name);
    return b;
}

void tu_write(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); abort(); }
    fputs(text, f);
    fclose(f);
}

int tu_run(const char *cmd, char *out, size_t cap) {
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = 0;
    char tmp[4096];
    size_t got;
    while ((got = fread(tmp, 1, sizeof tmp, p)) > 0) {
        if (out && n + 1 < cap) {
            size_t c = GMA_MIN(got, cap - 1 - n);
            memcpy(out + n, tmp, c);
            n += c;
        }
    }
    if (out) out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

double tu_max_rel_err(const double *a, const double *b, size_t n, double floor_abs) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double den = fmax(floor_abs, fmax(fabs(a[i]), fabs(b[i])));
        double e = fabs(a[i] - b[i]) / den;
        if (e > worst) worst = e;
    }
    return worst;
}

double tu_row_rel_err(const real *a, const real *b, int n) {
    double mx = 0, e = 0;
    for (int i = 0; i < n; i++) mx = fmax(mx, fabs((double)b[i])), e = fmax(e, fabs((double)a[i] - b[i]));
    return e / fmax(mx, 1e-30);
}

void tu_write_gpt2_byte_vocab(const char *path) {
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "%s", path);
    fputc('{', f);
    int extra = 0;
    for (int bt = 0; bt < 256; bt++) {
        int printable = (bt >= '!' && bt <= '~') || (bt >= 0xA1 && bt <= 0xAC) || (bt >= 0xAE);
        unsigned cp = printable ? (unsigned)bt : 256u + (unsigned)extra++;
        if (cp == '"' || cp == '\\') fprintf(f, "\"\\%c\": %d, ", (char)cp, bt);
        else if (cp < 0x80) fprintf(f, "\"%c\": %d, ", (char)cp, bt);
        else fprintf(f, "\"\\u%04x\": %d, ", cp, bt);
    }
    fprintf(f, "\"<|endoftext|>\": 256}\n");
    fclose(f);
}

char g_out[65536];

int run(const char *fmt, ...) {
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return tu_run(cmd, g_out, sizeof g_out);
}

void tu_same_tensors(const char *run_a, const char *run_b, const char *rel) {
    char a[1200], b[1200];
    snprintf(a, sizeof a, "%s/%s", run_a, rel);
    snprintf(b, sizeof b, "%s/%s", run_b, rel);
    StFile fa, fb;
    ck_assert_msg(st_open(&fa, a) == 0, "%s", gma_error());
    ck_assert_msg(st_open(&fb, b) == 0, "%s", gma_error());
    ck_assert_int_eq(fa.n, fb.n);
    for (int i = 0; i < fa.n; i++) {
        const StEntry *e = st_find(&fb, fa.e[i].name);
        ck_assert_ptr_nonnull(e);
        ck_assert_int_eq(e->numel, fa.e[i].numel);
        ck_assert_msg(memcmp(e->data, fa.e[i].data, 4 * e->numel) == 0, "tensor %s differs", e->name);
    }
    st_close(&fa);
    st_close(&fb);
}

Config tu_tiny_config(const char *mixer) {
    Config c;
    cfg_defaults(&c);
    c.model.vocab_size = 11;
    c.model.d_model = 8;
    c.model.n_heads = 2;
    c.model.n_layers = 2;
    c.model.d_ff = 12;
    c.model.max_seq_len = 8;
    c.train.seq_len = 8;
    ck_assert(cfg_set(&c, "data.recall_pairs=2") == 0);
    c.model.init_std = 0.3; /* large enough that every path carries gradient */
    ck_assert(cfg_set(&c, "gma.n_components=3") == 0);
    ck_assert(cfg_set(&c, "gma.chunk=3") == 0);
    char mx[64];
    snprintf(mx, sizeof mx, "model.mixer=%s", mixer);
    ck_assert_msg(cfg_set(&c, mx) == 0, "%s", gma_error());
    return c;
}

void tu_apply_sets(Config *c, const char *sets) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", sets);
    char *sv = NULL;
    for (char *t = strtok_r(buf, ";", &sv); t; t = strtok_r(NULL, ";", &sv)) ck_assert_msg(cfg_set(c, t) == 0, "%s", gma_error());
    ck_assert_msg(cfg_validate(c) == 0, "%s", gma_error());
}

int tu_dead_pid(void) {
    pid_t p = fork();
    if (p == 0) _exit(0);
    waitpid(p, NULL, 0);
    return (int)p;
}

void tu_train_batch_rows(struct LmData *d, int n_batches, int B, int N, int *scored, int *last) {
    int32_t *tok = xmalloc(sizeof(int32_t) * (size_t)B * N), *tgt = xmalloc(sizeof(int32_t) * (size_t)B * N);
    Rng r;
    rng_seed(&r, 1);
    for (int k = 0; k < n_batches; k++) {
        lmdata_train_batch(d, &r, (uint64_t)k, B, N, tok, tgt);
        for (int b = 0; b < B; b++) {
            int *s = &scored[k * B + b], *l = &last[k * B + b];
            *s = 0, *l = -1;
            for (int i = 0; i < N; i++)
                if (tgt[(size_t)b * N + i] >= 0) ++*s, *l = i;
        }
    }
    free(tok), free(tgt);
}
