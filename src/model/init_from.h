/* init_from.h: a new model started from another run's weights (gmatrain --init-from).
 *
 * Every tensor of the model (buffers included) whose name and shape a checkpoint holds
 * is copied from it; the others keep their fresh initialisation; the checkpoint's
 * tensors the model lacks are dropped. The outcome of each tensor is reported, so a
 * caller can log it and later steps (another mixer's routing, say) can act on the
 * tensors that were not copied. No optimiser state or step is taken over. */
#ifndef GMA_INIT_FROM_H
#define GMA_INIT_FROM_H
#include <cjson/cJSON.h>

#include "model/model.h"

typedef enum { INIT_COPIED, INIT_NEW, INIT_SHAPE } InitOutcome; /* INIT_SHAPE: in both, other shape: kept fresh */

typedef struct InitReport {
    char dir[2048];       /* the checkpoint directory */
    long step;            /* its step (-1 when it records none) */
    int n;                /* the model's tensors, in table order */
    InitOutcome *outcome; /* per tensor of m->pt */
    int n_dropped;
    char **dropped;       /* the checkpoint's tensors the model has not */
    int counts[3];        /* tensors per outcome */
} InitReport;

/* Copy into m's parameters every tensor of checkpoint directory dir whose name and
 * shape match (m already holds its fresh initialisation). 0 with rep filled (free it
 * with init_report_free), or -1 with gma_error naming the file. */
int init_from_ckpt(Model *m, const char *dir, InitReport *rep);
void init_report_free(InitReport *rep);
/* {"from", "step", "copied": [...], "new": [...], "shape_differs": [...], "dropped": [...]} */
cJSON *init_report_json(const Model *m, const InitReport *rep);
/* One line for the terminal: counts, and the names of the tensors not copied. */
void init_report_print(const Model *m, const InitReport *rep, FILE *f);
#endif
