/* params.c: the parameter table (see params.h). */
#include "nn/params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int pt_add(ParamTable *pt, const char *name, int ndim, const int *shape, InitKind init, double a, ParamGroup g) {
    if (pt->n == pt->cap) {
        pt->cap = pt->cap ? 2 * pt->cap : 64;
        pt->t = xrealloc(pt->t, sizeof(ParamInfo) * pt->cap);
    }
    ParamInfo *p = &pt->t[pt->n];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = ndim;
    p->numel = 1;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        p->numel *= (size_t)shape[i];
    }
    p->offset = (pt->total + 15) & ~(size_t)15;
    pt->total = p->offset + p->numel;
    p->init = init;
    p->init_a = a;
    p->group = g;
    return pt->n++;
}

int pt_add2(ParamTable *pt, const char *name, int d0, int d1, InitKind init, double a, ParamGroup g) {
    int s[2] = {d0, d1};
    return pt_add(pt, name, 2, s, init, a, g);
}

int pt_add1(ParamTable *pt, const char *name, int d0, InitKind init, double a, ParamGroup g) {
    return pt_add(pt, name, 1, &d0, init, a, g);
}

int pt_find(const ParamTable *pt, const char *name) {
    for (int i = 0; i < pt->n; i++)
        if (!strcmp(pt->t[i].name, name)) return i;
    return -1;
}

void pt_free(ParamTable *pt) {
    free(pt->t);
    memset(pt, 0, sizeof *pt);
}

/* N(0, 1) truncated to (-2, 2) (redrawn outside), divided by that truncated normal's standard
 * deviation, so the draws have variance 1 */
static double trunc_normal2(Rng *rng) {
    double z;
    do z = rng_normal(rng);
    while (!(fabs(z) < 2));
    return z / 0.87962566103423978;
}

void pt_init(const ParamTable *pt, real *params, Rng *rng) {
    for (int i = 0; i < pt->n; i++) {
        const ParamInfo *p = &pt->t[i];
        real *x = params + p->offset;
        double fan_out = p->shape[0], fan_in = p->ndim > 1 ? (double)(p->numel / (size_t)p->shape[0]) : 1;
        double xa = sqrt(6.0 / (fan_in + fan_out)), ls = 1 / sqrt(fan_in);
        if (p->init == INIT_RAMP) {
            size_t V = (size_t)p->shape[0], D = p->numel / V;
            for (size_t c = 0; c < D; c++) x[(V - 1) * D + c] = (real)(p->init_a * rng_normal(rng));
            for (size_t t = 0; t + 1 < V; t++)
                for (size_t c = 0; c < D; c++)
                    x[t * D + c] = (real)(t ? (double)(t - 1) / (double)(V - 2) * x[(V - 1) * D + c] : 0);
            continue;
        }
        for (size_t j = 0; j < p->numel; j++) {
            switch (p->init) {
            case INIT_ZERO: x[j] = 0; break;
            case INIT_ONE: x[j] = 1; break;
            case INIT_CONST: x[j] = (real)p->init_a; break;
            case INIT_NORMAL: x[j] = (real)(p->init_a * rng_normal(rng)); break;
            case INIT_XAVIER_UNIFORM: x[j] = (real)(xa * (2 * rng_uniform(rng) - 1)); break;
            case INIT_LECUN_NORMAL: x[j] = (real)(ls * trunc_normal2(rng)); break;
            case INIT_UNIFORM: x[j] = (real)(p->init_a * (2 * rng_uniform(rng) - 1)); break;
            case INIT_RAMP: break; /* above */
            }
        }
    }
}

size_t pt_count_trained(const ParamTable *pt) {
    size_t n = 0;
    for (int i = 0; i < pt->n; i++)
        if (pt->t[i].group != GROUP_BUFFER) n += pt->t[i].numel;
    return n;
}
