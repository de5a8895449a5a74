/* run_log.h: what a training run writes about itself: metrics.jsonl rows, evaluation
 * lines on stderr, the ETA of the progress line, JSON files in the run directory. */
#ifndef GMA_RUN_LOG_H
#define GMA_RUN_LOG_H
#include <cjson/cJSON.h>
#include <stdio.h>

#include "train/run_task.h"

/* Append row as one line to the metrics file f (unbuffered: see run_open) and free it; f
 * NULL (ranks other than 0 keep no metrics): only free it. A row that cannot be written
 * is cut off again (the file keeps whole rows) and no row follows: run_metrics_failure()
 * says why, and the run stops. */
void run_metrics_row(FILE *f, cJSON *row);
/* NULL while every row was written, else the reason of the first failure (strerror). */
const char *run_metrics_failure(void);
/* Forget a failure (a new run in this process). */
void run_metrics_reset(void);
/* A resumed run's metrics.jsonl at path keeps only its whole rows of steps up to `step`
 * (the checkpoint's): a row cut mid-way and the rows of steps that will be taken again
 * go, so none is logged twice. *dropped: rows removed. Rewritten atomically, and only
 * when a row goes. 0, or -1 with gma_error. */
int run_metrics_trim(const char *path, long step, int *dropped);
/* The metrics row of an evaluation of `split` at `step` (keys depend on the task). */
cJSON *run_eval_row(long step, const char *split, const EvalResult *r, const Task *t);
/* "<what> step S | <split> loss ..." on stderr; nl: start on a new line (after the
 * progress line of a terminal). */
void run_print_eval(const char *what, const char *split, long step, const EvalResult *r, const Task *t, int nl);
/* s seconds as "1h05m" or "3m07s". */
void run_fmt_eta(char *out, size_t cap, double s);
/* Write dir/name atomically. 0, or -1 with gma_error naming the file. */
int run_write_json(const char *dir, const char *name, const char *text);
#endif
