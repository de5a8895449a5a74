/* metrics_log.h: a run's metrics.jsonl, one JSON object per line, written so that the
 * file only ever holds whole rows. */
#ifndef GMA_METRICS_LOG_H
#define GMA_METRICS_LOG_H
#include <cjson/cJSON.h>
#include <stdio.h>

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
#endif
