/* optim.c: schedules, clipping and the AdamW / SGD update (see optim.h). */
#include "optim/optim.h"

#include <fnmatch.h>
#include <string.h>

/* train.optimizer ... train.freeze (optim_cfg_section, below) */
struct OptimCfg {
    int optimizer;          /* OPTIM_ADAMW | OPTIM_SGD */
    double lr, min_lr_ratio;
    int warmup;
    int lr_first_step;      /* the step number of the first update in warmup and rsqrt: 1, or 0 (LRA) */
    int schedule;           /* SCHED_COSINE | _LINEAR | _CONSTANT | _RSQRT */
    int decay_steps;        /* cosine / linear: steps of the decay after warmup (0 = steps - warmup) */
    double beta1, beta2, adam_eps, weight_decay, momentum;
    int decay_embeddings, decay_norms, decay_biases, decay_mixture;
    double grad_clip;
    char freeze[512];       /* train.freeze: parameter-name patterns, comma-joined (CFGT_STRLIST) */
};

const OptimCfg *optim_cfg(const Config *c) { return cfg_section_of(c, &optim_cfg_section); }
const char *optim_freeze_list(const Config *c) { return optim_cfg(c)->freeze; }

double optim_lr(const OptimCfg *t, long steps, long step) {
    /* n: the step number the warmup and rsqrt see, step + train.lr_first_step (docs/model.md
     * §1): 1 by default (the first update at lr / W), 0 as the LRA release (lr 0 first) */
    long n = step + t->lr_first_step;
    if (t->warmup > 0 && n <= t->warmup) return t->lr * (double)n / t->warmup;
    if (t->schedule == SCHED_CONSTANT) return t->lr;
    /* rsqrt: lr sqrt(warmup / n) after warmup; with no warmup, lr / sqrt(n), n at least 1 */
    if (t->schedule == SCHED_RSQRT)
        return t->lr * sqrt((double)(t->warmup > 0 ? t->warmup : 1) / (double)(n > 1 ? n : 1));
    long span = t->decay_steps > 0 ? t->decay_steps : steps - t->warmup;
    double p = span > 0 ? (double)(step - t->warmup) / span : 1.0;
    if (p > 1) p = 1;
    double lo = t->lr * t->min_lr_ratio;
    if (t->schedule == SCHED_LINEAR) return t->lr + (lo - t->lr) * p;
    return lo + 0.5 * (t->lr - lo) * (1 + cos(M_PI * p));
}

double optim_decay_for(const OptimCfg *t, ParamGroup g) {
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
static int run_end(const Model *m, const OptimCfg *t, int i, size_t *numel) {
    const ParamInfo *p = &m->pt.t[i];
    size_t n = p->numel;
    int j = i + 1;
    if (p->group != GROUP_BUFFER)
        for (; j < m->pt.n; j++) {
            const ParamInfo *q = &m->pt.t[j], *prev = &m->pt.t[j - 1];
            if (q->group == GROUP_BUFFER || q->frozen != p->frozen || q->offset != prev->offset + prev->numel) break;
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
        if (p->group == GROUP_BUFFER || p->frozen) continue;
        s += g_ops->sumsq(m->grads + p->offset, n);
    }
    return sqrt(s);
}

double optim_step(Model *m, const OptimCfg *t, long step, double lr, double grad_norm) {
    double clip = 1;
    if (t->grad_clip > 0 && grad_norm > t->grad_clip) clip = t->grad_clip / (grad_norm + 1e-12);
    int adam = t->optimizer == OPTIM_ADAMW;
    real bc1 = (real)(1 - pow(t->beta1, (double)step)), bc2 = (real)(1 - pow(t->beta2, (double)step));
    size_t n;
    for (int i = 0, j; i < m->pt.n; i = j) {
        j = run_end(m, t, i, &n);
        const ParamInfo *p = &m->pt.t[i];
        if (p->group == GROUP_BUFFER || p->frozen) continue;
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

int optim_freeze(Model *m, const Config *c, int *n_tensors, size_t *n_params) {
    char pat[CFG_STR];
    *n_tensors = 0;
    *n_params = 0;
    for (int i = 0; i < m->pt.n; i++) m->pt.t[i].frozen = 0;
    for (const char *q = optim_freeze_list(c); cfg_list_next(&q, pat, sizeof pat);) {
        int hit = 0, keep = pat[0] == '!'; /* "!PATTERN": the tensors it matches train after all */
        for (int i = 0; i < m->pt.n; i++) {
            ParamInfo *p = &m->pt.t[i];
            if (p->group == GROUP_BUFFER || fnmatch(pat + keep, p->name, 0) != 0) continue;
            hit = 1;
            if (p->frozen == !keep) continue;
            p->frozen = !keep;
            (*n_tensors) += keep ? -1 : 1;
            *n_params = keep ? *n_params - p->numel : *n_params + p->numel;
        }
        if (!hit) {
            for (int i = 0; i < m->pt.n; i++) m->pt.t[i].frozen = 0;
            return gma_errorf("key train.freeze: pattern \"%s\" matches no trained tensor of this model (names as in "
                              "model.safetensors, e.g. %s)", gma_quote(pat), m->pt.n ? m->pt.t[0].name : "tok_emb.weight");
        }
    }
    return 0;
}

/* ---- configuration: the optimiser and the schedule (train.*, a stored section) ---- */

#define O(f) offsetof(OptimCfg, f)
static const CfgKey g_optim_keys[] = {
    {"optimizer", CFGT_ENUM, O(optimizer), 0, "adamw", 0, 0, "adamw|sgd", "Optimiser."},
    {"lr", CFGT_REAL, O(lr), 0, "0.0003", 0, 1e3, NULL, "Peak learning rate."},
    {"min_lr_ratio", CFGT_REAL, O(min_lr_ratio), 0, "0.1", 0, 1, NULL, "Final learning rate as a share of lr (cosine, linear)."},
    {"warmup", CFGT_INT, O(warmup), 0, "100", 0, 1000000000, NULL, "Linear warmup steps."},
    {"lr_first_step", CFGT_INT, O(lr_first_step), 0, "1", 0, 1, NULL,
     "Step number of the first update in warmup and rsqrt: 1, or 0 as the LRA release (docs/model.md §1)."},
    {"schedule", CFGT_ENUM, O(schedule), 0, "cosine", 0, 0, "cosine|linear|constant|rsqrt",
     "Learning-rate schedule after warmup; rsqrt: lr * sqrt(warmup / step) (docs/model.md §1)."},
    {"decay_steps", CFGT_INT, O(decay_steps), 0, "0", 0, 1000000000, NULL,
     "cosine, linear: steps of the decay after warmup (0 = train.steps - train.warmup; docs/model.md §1)."},
    {"beta1", CFGT_REAL, O(beta1), 0, "0.9", 0, 0.999999, NULL, "AdamW beta1."},
    {"beta2", CFGT_REAL, O(beta2), 0, "0.95", 0, 0.999999999, NULL, "AdamW beta2."},
    {"adam_eps", CFGT_REAL, O(adam_eps), 0, "1e-08", 0, 1, NULL, "AdamW epsilon."},
    {"weight_decay", CFGT_REAL, O(weight_decay), 0, "0.1", 0, 100, NULL, "Decoupled weight decay (AdamW) or L2 (SGD)."},
    {"momentum", CFGT_REAL, O(momentum), 0, "0", 0, 0.999999, NULL, "SGD momentum."},
    {"decay_embeddings", CFGT_BOOL, O(decay_embeddings), 0, "false", 0, 0, NULL, "Apply weight decay to embeddings."},
    {"decay_norms", CFGT_BOOL, O(decay_norms), 0, "false", 0, 0, NULL, "Apply weight decay to LayerNorm weights."},
    {"decay_biases", CFGT_BOOL, O(decay_biases), 0, "false", 0, 0, NULL, "Apply weight decay to biases."},
    {"decay_mixture", CFGT_BOOL, O(decay_mixture), 0, "false", 0, 0, NULL, "Apply weight decay to GMA mixture parameters."},
    {"grad_clip", CFGT_REAL, O(grad_clip), 0, "1", 0, 1e9, NULL, "Clip the global gradient norm to this (0 = off)."},
    {"freeze", CFGT_STRLIST, O(freeze), sizeof(((OptimCfg *)0)->freeze), "", 0, 0, NULL,
     "Parameter-name globs (* ? [...]; \"!PATTERN\" re-includes, in order) of tensors left untrained: no update, "
     "decay or moments (docs/migration.md). JSON: a list; --set: comma-separated."},
};
#undef O

const CfgSection optim_cfg_section = {"optim", sizeof(OptimCfg), g_optim_keys, CFG_N(g_optim_keys), NULL, "train"};
