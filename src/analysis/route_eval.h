/* route_eval.h: gmaeval --analyze and --dump-responsibilities: the routing analysis of a
 * model's GMA layers over an evaluation split (routing.h; docs/routing.md), written as
 * JSON, a readable report and gnuplot plots, and the raw query responsibilities (binary
 * layout in docs/analysis.md). */
#ifndef GMA_ROUTE_EVAL_H
#define GMA_ROUTE_EVAL_H
#include <stdio.h>

#include "core/config.h"
#include "data/lm/lmdata.h"
#include "model/model.h"

typedef struct RouteEvalOpts {
    int analyze;       /* the analysis: JSON, report, plots */
    const char *ajson; /* its JSON file; NULL: beside json as X.analysis.json, else analysis.json */
    const char *json;  /* the evaluation's JSON file, or NULL */
    const char *dump;  /* the responsibilities' file, or NULL */
    const char *prog;  /* the program, for the one warning (no tokenizer) on stderr */
} RouteEvalOpts;

/* The windows of split of d (B windows of N tokens a batch) through m, which holds at
 * least one GMA layer; what it wrote is named on stdout. 0, or -1 with gma_error. */
int route_eval_run(Model *m, const Config *cfg, const LmData *d, int split, int B, int N, const RouteEvalOpts *o);
#endif
