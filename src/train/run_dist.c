/* run_dist.c: a training run's data-parallel replicas (see run_dist.h). */
#include "train/run_dist.h"

#include <stdlib.h>
#include <string.h>

#include "train/dist.h"
#include "train/train_opts.h"

int run_fatal(int rc) {
    if (dist_size() == 1) return rc;
    fprintf(stderr, "gmatrain: rank %d: %s\n", dist_rank(), gma_error());
    dist_abort(rc);
}

/* 64-bit hash of the parameters (buffers included) of this rank. GMA_FAULT_DIVERGE_RANK=r
 * makes rank r's differ (the test of the replica check). */
static uint64_t params_hash(const Model *m) {
    size_t n = m->pt.total * sizeof(real);
    void *host = xmalloc(n + 1);
    g_ops->to_host(host, m->params, n);
    uint64_t h = gma_hash(host, n, GMA_HASH_SEED);
    free(host);
    const char *f = getenv("GMA_FAULT_DIVERGE_RANK");
    return h ^ (uint64_t)(f && *f && atoi(f) == dist_rank());
}

/* The replicas are meant to be identical, and a checkpoint would otherwise describe
 * rank 0 only. */
int run_save_ckpt(const Model *m, const TrainState *ts, const char *run_dir, int keep, const char *tag) {
    if (dist_size() > 1 && !dist_same_u64(params_hash(m))) {
        if (dist_rank() == 0)
            fprintf(stderr, "gmatrain: the ranks' parameters differ at step %ld (replicas diverged); stopping\n",
                    ts->step);
        dist_abort(TRAIN_ERROR);
    }
    if (dist_rank() != 0) return 0;
    if (ckpt_save(m, ts, run_dir, keep, tag) != 0) return run_fatal(TRAIN_ERROR);
    return 0;
}

/* Buffers that training updates on each rank from its own batch (those model_rank_averaged
 * names: GMA's EMA memory, the stem's batch-norm running statistics) are averaged over
 * ranks after every step, so the replicas stay identical. Other buffers (Performer
 * features) are the same everywhere already. */
void sync_buffers(Model *m) {
    int R = dist_size();
    if (R == 1) return;
    for (int i = 0; i < m->pt.n; i++) {
        const ParamInfo *p = &m->pt.t[i];
        if (p->group != GROUP_BUFFER || !model_rank_averaged(m, i)) continue;
        dist_sum_real_backend(m->params + p->offset, p->numel);
        g_ops->scale(m->params + p->offset, (real)(1.0 / R), p->numel);
    }
}

void run_bcast_model(Model *m, int moments) {
    if (dist_size() == 1) return;
    dist_bcast_real_backend(m->params, m->pt.total, 0);
    if (moments) {
        dist_bcast_real_backend(m->m, m->pt.total, 0);
        dist_bcast_real_backend(m->v, m->pt.total, 0);
    }
}
