/* run_log.h: what a training run writes about itself: evaluation rows (metrics_log.h writes them),
 * lines on stderr, the ETA of the progress line, JSON files in the run directory. */
#ifndef GMA_RUN_LOG_H
#define GMA_RUN_LOG_H
#include <cjson/cJSON.h>
#include <stdio.h>

#include "train/metrics_log.h"
#include "train/run_task.h"

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
