/* init_from.c: a model started from a checkpoint's matching tensors (see init_from.h). */
#include "model/init_from.h"

#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "ops/ops.h"

static InitOutcome outcome_of(const ParamInfo *p, const StEntry *e) {
    if (!e) return INIT_NEW;
    if (e->ndim != p->ndim) return INIT_SHAPE;
    for (int d = 0; d < p->ndim; d++)
        if (e->shape[d] != p->shape[d]) return INIT_SHAPE;
    return INIT_COPIED;
}

int init_from_ckpt(Model *m, const char *dir, InitReport *rep) {
    memset(rep, 0, sizeof *rep);
    snprintf(rep->dir, sizeof rep->dir, "%s", dir);
    char path[2100];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    StFile f;
    if (st_open(&f, path) != 0) return -1;
    const char *s = st_meta(&f, "step");
    rep->step = s ? strtol(s, NULL, 10) : -1;
    size_t P = m->pt.total;
    real *host = xmalloc(P * sizeof(real));
    g_ops->to_host(host, m->params, P * sizeof(real));
    rep->n = m->pt.n;
    rep->outcome = xcalloc((size_t)m->pt.n, sizeof *rep->outcome);
    int rc = 0;
    for (int i = 0; i < m->pt.n && !rc; i++) {
        const ParamInfo *p = &m->pt.t[i];
        const StEntry *e = st_find(&f, p->name);
        rep->outcome[i] = outcome_of(p, e);
        rep->counts[rep->outcome[i]]++;
        if (rep->outcome[i] != INIT_COPIED) continue;
        real *dst = host + p->offset;
        st_read_tensor(e, dst);
        for (size_t j = 0; j < p->numel && !rc; j++)
            if (!isfinite(dst[j])) rc = gma_errorf("%s: tensor %s holds a non-finite value at element %zu", path, p->name, j);
    }
    rep->dropped = xcalloc((size_t)f.n + 1, sizeof *rep->dropped);
    for (int i = 0; i < f.n && !rc; i++)
        if (pt_find(&m->pt, f.e[i].name) < 0) rep->dropped[rep->n_dropped++] = xstrdup(f.e[i].name);
    if (!rc) g_ops->to_device(m->params, host, P * sizeof(real));
    free(host);
    st_close(&f);
    if (rc) init_report_free(rep);
    return rc;
}

void init_report_free(InitReport *rep) {
    for (int i = 0; i < rep->n_dropped; i++) free(rep->dropped[i]);
    free(rep->dropped);
    free(rep->outcome);
    memset(rep, 0, sizeof *rep);
}

static const char *const g_key[3] = {"copied", "new", "shape_differs"};

cJSON *init_report_json(const Model *m, const InitReport *rep) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "from", rep->dir);
    cJSON_AddNumberToObject(o, "step", (double)rep->step);
    for (int k = 0; k < 3; k++) {
        cJSON *a = cJSON_AddArrayToObject(o, g_key[k]);
        for (int i = 0; i < rep->n; i++)
            if ((int)rep->outcome[i] == k) cJSON_AddItemToArray(a, cJSON_CreateString(m->pt.t[i].name));
    }
    cJSON *d = cJSON_AddArrayToObject(o, "dropped");
    for (int i = 0; i < rep->n_dropped; i++) cJSON_AddItemToArray(d, cJSON_CreateString(rep->dropped[i]));
    return o;
}

/* ": name, name" of the tensors with outcome k (3: dropped), at most 8 named, then a count */
static void names(const Model *m, const InitReport *rep, int k, FILE *f) {
    int shown = 0, n = k < 3 ? rep->counts[k] : rep->n_dropped;
    for (int i = 0; i < (k < 3 ? rep->n : rep->n_dropped) && shown < 8; i++) {
        if (k < 3 && (int)rep->outcome[i] != k) continue;
        fprintf(f, "%s%s", shown++ ? ", " : ": ", k < 3 ? m->pt.t[i].name : rep->dropped[i]);
    }
    if (n > shown) fprintf(f, ", %d more", n - shown);
}

void init_report_print(const Model *m, const InitReport *rep, FILE *f) {
    fprintf(f, "gmatrain: initialised from %s (step %ld): %d tensors copied", rep->dir, rep->step, rep->counts[INIT_COPIED]);
    if (rep->counts[INIT_NEW]) fprintf(f, "; %d new, at their fresh initialisation", rep->counts[INIT_NEW]);
    names(m, rep, INIT_NEW, f);
    if (rep->counts[INIT_SHAPE]) fprintf(f, "; %d of another shape, at their fresh initialisation", rep->counts[INIT_SHAPE]);
    names(m, rep, INIT_SHAPE, f);
    if (rep->n_dropped) fprintf(f, "; %d dropped", rep->n_dropped);
    names(m, rep, 3, f);
    fprintf(f, " (all in init_from.json)\n");
}
