/* bench_summary.c: the one table `make bench` ends with (gmabench summary): the date, the
 * CPU model, the BLAS build and kernel set, then from the JSON files of the benchmarks
 * run before it (--in; each file's "mixer", "model", "decode" and "prefill" rows) and of
 * scripts/bench_torch.sh (--torch DIR: torch_M.json and gma_M.json per mixer M): training
 * tokens/s against PyTorch eager, the mixer layer's time and peak memory against sdpa per
 * N, decode tokens/s and their ratio to the measured limit per M, and the time to first
 * token per N. It measures nothing itself. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "ops/ops.h"

#define SUM_COLS 8

/* the CPU's model name (/proc/cpuinfo), or "unknown" */
static void cpu_model(char *out, size_t n) {
    snprintf(out, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            const char *v = strchr(line, ':') + 1;
            while (*v == ' ' || *v == '\t') v++;
            snprintf(out, n, "%s", v);
            out[strcspn(out, "\n")] = 0;
            break;
        }
    fclose(f);
}

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}
static const char *str(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* the rows of `what` from every file, copied into one array */
static cJSON *rows_of(cJSON *const *docs, int nd, const char *what) {
    cJSON *all = cJSON_CreateArray();
    for (int i = 0; i < nd; i++) {
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(docs[i], what), *r;
        cJSON_ArrayForEach(r, a) cJSON_AddItemToArray(all, cJSON_Duplicate(r, 1));
    }
    return all;
}

/* the distinct values of key k (ascending) over rows, at most SUM_COLS */
static int columns(const cJSON *rows, const char *k, int *col) {
    int n = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, rows) {
        int v = (int)num(r, k), i = 0;
        if (v < 0) continue;
        while (i < n && col[i] < v) i++;
        if ((i < n && col[i] == v) || n == SUM_COLS) continue;
        memmove(col + i + 1, col + i, sizeof(int) * (size_t)(n - i));
        col[i] = v, n++;
    }
    return n;
}
/* the distinct mixers of rows in their order, at most BENCH_MAX_MIXERS */
static int mixers(const cJSON *rows, const char **names) {
    int n = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, rows) {
        const char *m = str(r, "mixer");
        int i = 0;
        while (i < n && strcmp(names[i], m)) i++;
        if (i == n && n < BENCH_MAX_MIXERS && *m) names[n++] = m;
    }
    return n;
}
/* the row of `mixer` whose key k is v */
static const cJSON *find(const cJSON *rows, const char *mixer, const char *k, double v) {
    const cJSON *r;
    cJSON_ArrayForEach(r, rows)
    if (!strcmp(str(r, "mixer"), mixer) && num(r, k) == v) return r;
    return NULL;
}
static void col_label(char *out, size_t n, const char *pre, int v) {
    if (v >= 1024 && v % 1024 == 0) snprintf(out, n, "%s%dK", pre, v / 1024);
    else snprintf(out, n, "%s%d", pre, v);
}

/* a section's head: title, then its columns */
static void head(const char *title, const char *pre, const int *col, int nc) {
    printf("%-22s %-10s", title, "mixer");
    for (int c = 0; c < nc; c++) {
        char l[24];
        col_label(l, sizeof l, pre, col[c]);
        printf(" %16s", l);
    }
    printf("\n");
}

/* the layer: time over the reference's (sdpa, else the first) and peak MiB per N */
static void layer_rows(const cJSON *rows) {
    int col[SUM_COLS], nc = columns(rows, "N", col);
    const char *nm[BENCH_MAX_MIXERS];
    int n = mixers(rows, nm), ref = 0;
    if (!n) return;
    for (int k = 0; k < n; k++)
        if (!strcmp(nm[k], "sdpa")) ref = k;
    char t[64];
    snprintf(t, sizeof t, "layer time / %s", nm[ref]);
    head(t, "N=", col, nc);
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < n; k++) {
            printf("%-22s %-10s", w && k == 0 ? "layer peak MiB" : "", nm[k]);
            for (int c = 0; c < nc; c++) {
                const cJSON *a = find(rows, nm[k], "N", col[c]), *b = find(rows, nm[ref], "N", col[c]);
                char cell[32] = "-";
                if (a && num(a, "ms") > 0) {
                    if (w) snprintf(cell, sizeof cell, "%.1f", num(a, "peak_bytes") / 1048576);
                    else if (b && num(b, "ms") > 0) snprintf(cell, sizeof cell, "%.2f", num(a, "ms") / num(b, "ms"));
                } else if (a && *str(a, "skipped")) snprintf(cell, sizeof cell, "skipped");
                printf(" %16s", cell);
            }
            printf("\n");
        }
}

/* decode: tokens/s and their ratio to the measured limit per M */
static void decode_rows(const cJSON *rows) {
    int col[SUM_COLS], nc = columns(rows, "samples", col);
    const char *nm[BENCH_MAX_MIXERS];
    int n = mixers(rows, nm);
    if (!n) return;
    head("decode tok/s (/limit)", "M=", col, nc);
    for (int k = 0; k < n; k++) {
        printf("%-22s %-10s", "", nm[k]);
        for (int c = 0; c < nc; c++) {
            const cJSON *a = find(rows, nm[k], "samples", col[c]);
            char cell[40] = "-";
            if (a && num(a, "tokens_per_s") > 0) {
                if (num(a, "ratio_to_limit") > 0)
                    snprintf(cell, sizeof cell, "%.0f (%.2f)", num(a, "tokens_per_s"), num(a, "ratio_to_limit"));
                else snprintf(cell, sizeof cell, "%.0f", num(a, "tokens_per_s"));
            }
            printf(" %16s", cell);
        }
        printf("\n");
    }
}

/* prefill: time to first token (ms) and prefill tok/s over the training forward's per N */
static void prefill_rows(const cJSON *rows) {
    int col[SUM_COLS], nc = columns(rows, "N", col);
    const char *nm[BENCH_MAX_MIXERS];
    int n = mixers(rows, nm);
    if (!n) return;
    head("ttft ms (/train fwd)", "N=", col, nc);
    for (int k = 0; k < n; k++) {
        printf("%-22s %-10s", "", nm[k]);
        for (int c = 0; c < nc; c++) {
            const cJSON *a = find(rows, nm[k], "N", col[c]);
            char cell[40] = "-";
            if (a && num(a, "ttft_s") > 0)
                snprintf(cell, sizeof cell, "%.1f (%.2f)", num(a, "ttft_s") * 1e3, num(a, "prefill_over_forward"));
            printf(" %16s", cell);
        }
        printf("\n");
    }
}

/* training: gma's tokens/s (dropout 0) and, with --torch, PyTorch eager's on the same shapes */
static void train_rows(const cJSON *rows, const char *torch_dir) {
    const char *nm[BENCH_MAX_MIXERS];
    int n = mixers(rows, nm);
    if (!n) return;
    printf("%-22s %-10s %16s %16s %16s\n", "training tok/s", "mixer", "gma", "torch eager", "gma/torch");
    for (int k = 0; k < n; k++) {
        const cJSON *g = find(rows, nm[k], "dropout", 0);
        char t[32] = "-", ratio[32] = "-", peer[32] = "not run";
        if (torch_dir) { /* bench_torch.sh's pair of files on the torch shapes */
            char p[1024];
            snprintf(p, sizeof p, "%s/torch_%s.json", torch_dir, nm[k]);
            char *tx = gma_read_file(p, NULL);
            snprintf(p, sizeof p, "%s/gma_%s.json", torch_dir, nm[k]);
            char *gx = tx ? gma_read_file(p, NULL) : NULL;
            cJSON *tj = tx ? cJSON_Parse(tx) : NULL, *gj = gx ? cJSON_Parse(gx) : NULL;
            const cJSON *gr = gj ? find(cJSON_GetObjectItemCaseSensitive(gj, "model"), nm[k], "dropout", 0) : NULL;
            if (tj && gr && num(tj, "tokens_per_s") > 0) {
                snprintf(peer, sizeof peer, "%.0f", num(tj, "tokens_per_s"));
                snprintf(ratio, sizeof ratio, "%.2f", num(gr, "tokens_per_s") / num(tj, "tokens_per_s"));
                g = NULL;
                snprintf(t, sizeof t, "%.0f", num(gr, "tokens_per_s"));
            } else
                snprintf(peer, sizeof peer, "no peer files");
            cJSON_Delete(tj), cJSON_Delete(gj);
            free(tx), free(gx);
        }
        if (g) snprintf(t, sizeof t, "%.0f", num(g, "tokens_per_s"));
        printf("%-22s %-10s %16s %16s %16s\n", "", nm[k], t, peer, ratio);
    }
}

int bench_summary(const char *inputs, const char *torch_dir) {
    cJSON *docs[16];
    int nd = 0, rc = 0;
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", inputs ? inputs : "");
    char *sv = NULL;
    for (char *f = strtok_r(buf, ",", &sv); f && nd < 16; f = strtok_r(NULL, ",", &sv)) {
        char *text = gma_read_file(f, NULL);
        if (!text) {
            fprintf(stderr, "gmabench summary: %s\n", gma_error());
            rc = -1;
            continue;
        }
        if (!(docs[nd] = cJSON_Parse(text))) {
            fprintf(stderr, "gmabench summary: %s: not JSON (near offset %ld)\n", f,
                    cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - text) : 0L);
            rc = -1;
        } else
            nd++;
        free(text);
    }
    char cpu[256], date[64];
    cpu_model(cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    printf("\n## summary | %s | %s | %ld cores | %s | kernels %s\n", date, cpu, sysconf(_SC_NPROCESSORS_ONLN),
           ops_blas_config(), ops_blas_core());
    cJSON *t = rows_of(docs, nd, "model"), *l = rows_of(docs, nd, "mixer"), *d = rows_of(docs, nd, "decode"),
          *p = rows_of(docs, nd, "prefill");
    train_rows(t, torch_dir);
    layer_rows(l);
    decode_rows(d);
    prefill_rows(p);
    cJSON_Delete(t), cJSON_Delete(l), cJSON_Delete(d), cJSON_Delete(p);
    for (int i = 0; i < nd; i++) cJSON_Delete(docs[i]);
    fflush(stdout);
    return rc;
}
