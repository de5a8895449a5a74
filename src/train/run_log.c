/* run_log.c: metrics rows, evaluation lines and run files (see run_log.h). */
#include "train/run_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_metrics_err[256]; /* why the first row that failed did */

void run_metrics_row(FILE *f, cJSON *row) {
    if (!f || g_metrics_err[0]) { /* after a failure no row follows */
        cJSON_Delete(row);
        return;
    }
    char *s = cJSON_PrintUnformatted(row);
    long at = ftell(f);
    if (fprintf(f, "%s\n", s) < 0 || fflush(f) != 0) {
        snprintf(g_metrics_err, sizeof g_metrics_err, "%s", strerror(errno));
        if (at >= 0) (void)!ftruncate(fileno(f), at); /* the part of the row that was written goes */
    }
    free(s);
    cJSON_Delete(row);
}

const char *run_metrics_failure(void) { return g_metrics_err[0] ? g_metrics_err : NULL; }

void run_metrics_reset(void) { g_metrics_err[0] = 0; }

/* 1 when line (NUL-terminated, without its '\n') is a whole row to keep: a JSON object
 * whose step, when it has one, is at most `step` */
static int keep_row(const char *line, long step) {
    cJSON *j = cJSON_Parse(line);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "step");
    int keep = cJSON_IsObject(j) && (!cJSON_IsNumber(s) || s->valuedouble <= (double)step);
    cJSON_Delete(j);
    return keep;
}

int run_metrics_trim(const char *path, long step, int *dropped) {
    *dropped = 0;
    if (!gma_path_exists(path)) return 0;
    size_t len;
    char *text = gma_read_file(path, &len);
    if (!text) return -1;
    char *out = xmalloc(len + 1);
    size_t n = 0;
    for (char *line = text, *nl; line < text + len; line = nl + 1) {
        nl = memchr(line, '\n', (size_t)(text + len - line));
        if (!nl) { /* a row cut mid-way */
            ++*dropped;
            break;
        }
        *nl = 0;
        if (keep_row(line, step)) {
            memcpy(out + n, line, (size_t)(nl - line));
            n += (size_t)(nl - line);
            out[n++] = '\n';
        } else
            ++*dropped;
    }
    int rc = *dropped ? gma_write_file_atomic(path, out, n) : 0;
    free(out);
    free(text);
    return rc;
}

cJSON *run_eval_row(long step, const char *split, const EvalResult *r, const Task *t) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)step);
    cJSON_AddStringToObject(o, "split", split);
    cJSON_AddNumberToObject(o, "loss", r->loss);
    if (!t->classify) cJSON_AddNumberToObject(o, "ppl", r->ppl);
    if (t->report_acc) cJSON_AddNumberToObject(o, "acc", r->acc);
    if (r->word_ppl > 0) cJSON_AddNumberToObject(o, "word_ppl", r->word_ppl);
    cJSON_AddNumberToObject(o, t->classify ? "examples" : "tokens", r->tokens);
    return o;
}

void run_print_eval(const char *what, const char *split, long step, const EvalResult *r, const Task *t, int nl) {
    if (t->classify) {
        fprintf(stderr, "%s%s step %ld | %s loss %.4f | acc %.4f | %.0f examples\n", nl ? "\n" : "", what, step, split,
                r->loss, r->acc, r->tokens);
        return;
    }
    /* ppl always; word ppl when the data counts words; acc only when it is measured */
    char extra[96] = "";
    int n = 0;
    if (r->word_ppl > 0) n += snprintf(extra + n, sizeof extra - n, " | word ppl %.3f", r->word_ppl);
    if (t->report_acc) snprintf(extra + n, sizeof extra - n, " | acc %.4f", r->acc);
    fprintf(stderr, "%s%s step %ld | %s loss %.4f | ppl %.3f%s\n", nl ? "\n" : "", what, step, split, r->loss, r->ppl, extra);
}

void run_fmt_eta(char *out, size_t cap, double s) {
    if (s < 0 || !isfinite(s)) s = 0;
    long t = (long)s;
    if (t >= 3600) snprintf(out, cap, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else snprintf(out, cap, "%ldm%02lds", t / 60, t % 60);
}

int run_write_json(const char *dir, const char *name, const char *text) {
    char path[2100];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return gma_write_file_atomic(path, text, strlen(text));
}
