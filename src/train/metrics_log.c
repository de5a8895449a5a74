/* metrics_log.c: metrics.jsonl rows (see metrics_log.h). */
#include "train/metrics_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"

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
