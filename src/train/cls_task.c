/* cls_task.c: classification batches and evaluation (see cls_task.h). */
#include "train/cls_task.h"

#include <stdlib.h>
#include <string.h>

#include "nn/cls_head.h"
#include "nn/pool.h"
#include "train/dist.h"
#include "train/run_dist.h"
#include "train/train_opts.h"

/* ---- configuration: the keys of loading a task (data.task, truncate, text_valid,
 * strip_headers), a stored section (prefix data) read only here ---- */
typedef struct ClsTaskCfg {
    int task;          /* ClsTaskId (data/cls/clsdata.h), the registry's index */
    int truncate;      /* 1 truncate longer sequences (counted), 0 refuse */
    int text_valid;    /* text task: TEXT_VALID_HELDOUT | TEXT_VALID_TEST (the LRA release's valid split) */
    int strip_headers; /* generic data: drop mail headers */
} ClsTaskCfg;
#define O(f) offsetof(ClsTaskCfg, f)
static const CfgKey g_task_keys[] = {
    {"task", CFGT_ENUM, O(task), 0, "listops", 0, 0, CLS_TASK_CHOICES,
     "Classification task (data.source \"cls\"); data.path as docs/lra.md gives for each."},
    {"truncate", CFGT_BOOL, O(truncate), 0, "true", 0, 0, NULL,
     "Classification: cut longer sequences to data.max_len with a warning (false = refuse the data)."},
    {"text_valid", CFGT_ENUM, O(text_valid), 0, "heldout", 0, 0, "heldout|test",
     "IMDB: heldout = valid is 2,400 reviews held out of train; test = the LRA release's split, valid is the test "
     "set."},
    {"strip_headers", CFGT_BOOL, O(strip_headers), 0, "false", 0, 0, NULL,
     "Generic classification data: drop everything up to the first empty line (mail headers)."},
};
#undef O

/* a classifier's sequences and the slots its pooling adds (pool_slots) within the window */
static int clstask_validate(const Config *c) {
    if (c->model.task != MODEL_CLASSIFY) return 0;
    int slot = pool_slots((PoolKind)c->model.pooling);
    if (c->data.max_len + slot > c->train.seq_len)
        return gma_errorf("key data.max_len: %d%s does not fit train.seq_len = %d", c->data.max_len,
                          slot ? " plus the CLS slot" : "", c->train.seq_len);
    if (slot && c->train.seq_len < 2) return gma_errorf("key train.seq_len: needs at least 2 with model.pooling \"cls\"");
    return 0;
}

const CfgSection clstask_cfg_section = {"cls_task", sizeof(ClsTaskCfg), g_task_keys, CFG_N(g_task_keys), clstask_validate,
                                        "data"};
static const ClsTaskCfg *task_cfg(const Config *c) { return cfg_section_of(c, &clstask_cfg_section); }

static const char *const g_split_name[3] = {"train", "valid", "test"};

int clstask_max_len(const Config *c) {
    if (c->data.max_len > 0) return c->data.max_len;
    return c->train.seq_len - pool_slots((PoolKind)c->model.pooling);
}

int clstask_open(ClsTask *t, const Config *c, unsigned splits, int B, FILE *warn) {
    memset(t, 0, sizeof *t);
    t->max_len = clstask_max_len(c);
    if (t->max_len < 1) return gma_errorf("key data.max_len: no room for tokens (train.seq_len %d)", c->train.seq_len);
    if (!gma_path_exists(c->data.path)) /* the same pointer as a language model's missing shards (run_task.c) */
        return gma_errorf("key data.path: %s: no such file or directory (the command for each small config's data: "
                          "docs/data.md, \"The data of the small configs\"; the LRA tasks: docs/lra.md)", c->data.path);
    const ClsTaskCfg *tc = task_cfg(c);
    ClsOptions o = clsdata_default_options();
    o.max_len = t->max_len;
    o.truncate = tc->truncate;
    o.strip_headers = tc->strip_headers;
    o.text_valid_test = tc->text_valid == TEXT_VALID_TEST;
    o.n_classes = clsdata_task_generic(tc->task) ? cls_head_cfg(c)->n_classes : 0;
    for (int s = 0; s < 3; s++) {
        if (!(splits & (1u << s))) continue;
        /* text with the release's split: valid and test are both the whole of test/, read
         * and held once */
        if (s == 2 && t->have[1] && o.text_valid_test && tc->task == CLS_TASK_text) {
            t->split[2] = t->split[1];
            t->have[2] = t->test_shares_valid = 1;
            continue;
        }
        if (clsdata_load_task(&t->split[s], tc->task, c->data.path, g_split_name[s], &o) != 0) {
            clstask_close(t);
            return -1;
        }
        t->have[s] = 1;
        ClsDataset *d = &t->split[s];
        if (d->n == 0) {
            clstask_close(t);
            return gma_errorf("%s: the %s split holds no examples", c->data.path, g_split_name[s]);
        }
        if (t->n_seq && (d->n_seq != t->n_seq || d->vocab != t->vocab)) {
            clstask_close(t);
            return gma_errorf("%s: the %s split disagrees with the others in sequences per example or vocabulary",
                              c->data.path, g_split_name[s]);
        }
        t->n_seq = d->n_seq;
        t->vocab = d->vocab;
        t->n_classes = GMA_MAX(t->n_classes, d->n_classes);
        if (d->truncated && warn)
            fprintf(warn, "warning: %ld of %d %s sequences truncated to data.max_len = %d tokens\n", d->truncated,
                    d->n * d->n_seq, g_split_name[s], t->max_len);
    }
    t->seed = (uint64_t)c->seed;
    t->B = B;
    t->pad_full = c->data.pad_full;
    t->perm_epoch = -1;
    t->idx = xcalloc(B, sizeof(int));
    t->tok = xcalloc((size_t)B * (t->n_seq ? t->n_seq : 1) * t->max_len, sizeof(int32_t));
    t->lab = xcalloc(B, sizeof(int32_t));
    return 0;
}

void clstask_close(ClsTask *t) {
    for (int s = 0; s < 3; s++)
        if (t->have[s] && !(s == 2 && t->test_shares_valid)) clsdata_free(&t->split[s]);
    free(t->perm);
    free(t->idx);
    free(t->tok);
    free(t->lab);
    memset(t, 0, sizeof *t);
}

int clstask_fill(ClsTask *t, int s, const int *idx, int nb) {
    const ClsDataset *d = &t->split[s];
    int N = 1;
    for (int b = 0; b < nb; b++)
        for (int q = 0; q < d->n_seq; q++) {
            size_t len;
            clsdata_seq(d, idx[b], q, &len);
            if ((int)len > N) N = (int)len;
        }
    if (N > t->max_len || t->pad_full) N = t->max_len; /* loaders already cut to max_len */
    for (int q = 0; q < d->n_seq; q++)
        for (int b = 0; b < nb; b++) {
            size_t len;
            const uint32_t *src = clsdata_seq(d, idx[b], q, &len);
            int32_t *row = t->tok + ((size_t)q * nb + b) * N;
            for (int n = 0; n < N; n++) row[n] = (size_t)n < len ? (int32_t)src[n] : 0;
        }
    for (int b = 0; b < nb; b++) t->lab[b] = d->label[idx[b]];
    return N;
}

int clstask_train_batch(ClsTask *t, long k) { return clstask_train_batch_part(t, k, t->B, 0); }

int clstask_train_batch_part(ClsTask *t, long k, int B_global, int first) {
    const ClsDataset *d = &t->split[SPLIT_TRAIN];
    int n = d->n;
    if (!t->perm) t->perm = xcalloc(n, sizeof(int));
    for (int b = 0; b < t->B; b++) {
        long pos = k * (long)B_global + first + b, epoch = pos / n;
        if (epoch != t->perm_epoch) { /* Fisher-Yates from (seed, epoch) */
            Rng r;
            rng_seed2(&r, t->seed, 0x636c732d6f726465ULL ^ (uint64_t)epoch);
            for (int i = 0; i < n; i++) t->perm[i] = i;
            for (int i = n - 1; i > 0; i--) {
                int j = (int)rng_below(&r, (uint64_t)i + 1), tmp = t->perm[i];
                t->perm[i] = t->perm[j];
                t->perm[j] = tmp;
            }
            t->perm_epoch = epoch;
        }
        t->idx[b] = t->perm[pos % n];
    }
    return clstask_fill(t, SPLIT_TRAIN, t->idx, t->B);
}

int clstask_evaluate(ClsTask *t, Model *m, int s, long max_batches, ClsEval *r) {
    memset(r, 0, sizeof *r);
    if (!t->have[s]) return gma_errorf("no %s split in this data", g_split_name[s]);
    const ClsDataset *d = &t->split[s];
    double nll = 0, correct = 0;
    long nb = t->drop_last ? d->n / t->B : (d->n + t->B - 1) / t->B;
    if (nb == 0)
        return gma_errorf("train.eval_drop_last: the %s split holds %d examples, fewer than one batch of %d",
                          g_split_name[s], d->n, t->B);
    if (max_batches > 0 && max_batches < nb) nb = max_batches;
    /* per-batch sums (loss, correct, examples), added up in batch order; with R
     * data-parallel ranks rank r evaluates batches r, r+R, ... and the tables are summed */
    double *per = xcalloc((size_t)nb * 3 + 1, sizeof(double));
    int rc = 0;
    for (long k = 0; k < nb; k++) {
        if (!dist_owns(k)) continue;
        int first = (int)(k * t->B), cnt = GMA_MIN(t->B, d->n - first);
        for (int b = 0; b < cnt; b++) t->idx[b] = first + b;
        int N = clstask_fill(t, s, t->idx, cnt);
        LossStats st;
        if (model_forward(m, t->tok, t->lab, cnt, N, NULL, 0, &st, 0, 0) != 0) {
            rc = -1;
            break;
        }
        double *e = per + (size_t)k * 3;
        e[0] = st.loss_sum, e[1] = st.correct, e[2] = cnt;
    }
    if (dist_sum_table(per, (size_t)nb * 3, rc != 0) && rc == 0) rc = gma_errorf("evaluation failed on another rank");
    for (long k = 0; k < nb; k++) {
        nll += per[(size_t)k * 3];
        correct += per[(size_t)k * 3 + 1];
        r->examples += (long)per[(size_t)k * 3 + 2];
    }
    free(per);
    if (rc) return -1;
    r->loss = r->examples ? nll / r->examples : 0;
    r->acc = r->examples ? correct / r->examples : 0;
    return 0;
}

int clstask_keep_best(const Model *m, TrainState *ts, const char *run_dir, double acc, int quiet) {
    if (!(acc > ts->best_acc)) return 0;
    ts->best_acc = acc;
    ts->best_step = ts->step;
    if (run_save_ckpt(m, ts, run_dir, 1, "best") != 0) return TRAIN_ERROR;
    if (!quiet) fprintf(stderr, "best valid acc %.4f at step %ld: saved %s/best\n", acc, ts->step, run_dir);
    return 0;
}

int clstask_test_at_best(ClsTask *t, Model *m, const TrainState *ts, const char *run_dir, int *have_best, ClsEval *r) {
    char best[2100];
    snprintf(best, sizeof best, "%s/best", run_dir);
    int lead = dist_rank() == 0;
    *have_best = lead && ts->best_step >= 0 && gma_path_exists(best);
    dist_bcast(have_best, sizeof *have_best, 0);
    if (!*have_best || !t->have[SPLIT_TEST]) return 0;
    int loaded = lead ? ckpt_load(m, NULL, best) == 0 : 1;
    dist_bcast(&loaded, sizeof loaded, 0);
    if (!loaded) return lead ? -1 : gma_errorf("%s: rank 0 cannot load it", best); /* ckpt_load named the file */
    run_bcast_model(m, 0);
    if (clstask_evaluate(t, m, SPLIT_TEST, 0, r) != 0)
        return gma_error_prefix("test evaluation of the best checkpoint %s", best);
    return 1;
}
