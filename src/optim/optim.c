/* optim.c: schedules, clipping and the AdamW / SGD update (see optim.h). */
#include "optim/optim.h"

#include <string.h>

double optim_lr(const TrainCfg *t, long step) {
    /* n: the step number the warmup and rsqrt see, step + train.lr_first_step (docs/model.md
     * §1): 1 by default (the first update at lr / W), 0 as the LRA release (lr 0 first) */
    long n = step + t->lr_first_step;
    if (t->warmup > 0 && n <= t->warmup) return t->lr * (double)n / t->warmup;
    if (!strcmp(t->schedule, "constant")) return t->lr;
    /* rsqrt: lr sqrt(warmup / n) after warmup; with no warmup, lr / sqrt(n), n at least 1 */
    if (!strcmp(t->schedule, "rsqrt"))
        return t->lr * sqrt((double)(t->warmup > 0 ? t->warmup : 1) / (double)(n > 1 ? n : 1));
    long span = t->decay_steps > 0 ? t->decay_steps : t->steps - t->warmup;
    double p = span > 0 ? (double)(step - t->warmup) / span : 1.0;
    if (p > 1) p = 1;
    double lo = t->lr * t->min_lr_ratio;
    if (!strcmp(t->schedule, "linear")) return t->lr + (lo - t->lr) * p;
    return lo + 0.5 * (t->lr - lo) * (1 + cos(M_PI * p));
}

double optim_decay_for(const TrainCfg *t, ParamGroup g) {
    switch (g) {
    case GROUP_WEIGHT: return t->weight_decay;
    case GROUP_BIAS: return t->decay_biases ? t->weight_decay : 0;
    case GROUP_NORM: return t->decay_norms ? t->weight_decay : 0;
    case GROUP_EMBED: return t->decay_embeddings ? t->weight_decay : 0;
    case GROUP_MIXTURE: return t->decay_mixture ? t->weight_decay : 0;
    case GROUP_BUFFER: return 0;
    }
    return 0;
}

/* The trained tensors in runs: consecutive tensors that touch in memory (no alignment gap)
 * and share the decay `wd` of optim_decay_for (with t NULL, any decay) are one run, so the
 * elementwise ops run once per run, not once per tensor. Returns the index after the run
 * that starts at tensor i (a buffer tensor is a run of its own) and its element count. */
static int run_end(const Model *m, const TrainCfg *t, int i, size_t *numel) {
    const ParamInfo *p = &m->pt.t[i];
    size_t n = p->numel;
    int j = i + 1;
    if (p->group != GROUP_BUFFER)
        for (; j < m->pt.n; j++) {
            const ParamInfo *q = &m->pt.t[j], *prev = &m->pt.t[j - 1];
            if (q->group == GROUP_BUFFER || q->offset != prev->offset + prev->numel) break;
            if (t && optim_decay_for(t, q->group) != optim_decay_for(t, p->group)) break;
            n += q->numel;
        }
    *numel = n;
    return j;
}

double optim_grad_norm(const Model *m) {
    double s = 0;
    size_t n;
    for (int i = 0, j; i < m->pt.n; i = j) {
        j = run_end(m, NULL, i, &n);
        const ParamInfo *p = &m->pt.t[i];
        if (p->group == GROUP_BUFFER) continue;
        s += g_ops->sumsq(m->grads + p->offset, n);
    }
    return sqrt(s);
}

double optim_step(Model *m, const TrainCfg *t, long step, double lr, double grad_norm) {
    double clip = 1;
    if (t->grad_clip > 0 && grad_norm > t->grad_clip) clip = t->grad_clip / (grad_norm + 1e-12);
    int adam = !strcmp(t->optimizer, "adamw");
    real bc1 = (real)(1 - pow(t->beta1, (double)step)), bc2 = (real)(1 - pow(t->beta2, (double)step));
    size_t n;
    for (int i = 0, j; i < m->pt.n; i = j) {
        j = run_end(m, t, i, &n);
        const ParamInfo *p = &m->pt.t[i];
        if (p->group == GROUP_BUFFER) continue;
        real *g = m->grads + p->offset;
        if (clip != 1) g_ops->scale(g, (real)clip, n);
        real wd = (real)optim_decay_for(t, p->group);
        if (adam)
            g_ops->adamw(m->params + p->offset, g, m->m + p->offset, m->v + p->offset, n, (real)lr, (real)t->beta1,
                         (real)t->beta2, (real)t->adam_eps, wd, bc1, bc2);
        else
            g_ops->sgd(m->params + p->offset, g, m->m + p->offset, n, (real)lr, (real)t->momentum, wd);
    }
    return clip;
}
