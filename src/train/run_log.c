/* run_log.c: evaluation rows and lines, the ETA, run files (see run_log.h). */
#include "train/run_log.h"

#include <stdlib.h>
#include <string.h>

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
