/* run_task.c: the language-model and classifier tasks of a run (see run_task.h). */
#include "train/run_task.h"

#include <stdlib.h>
#include <string.h>

#include "data/fetch/fetch.h"
#include "model/gpt2_dest.h"
#include "nn/cls_head.h"
#include "train/dist.h"
#include "train/health.h"

static int lm_train_forward(Task *t, Model *m, Rng *rng, long k, long step, LossStats *st, double *tokens) {
    lmdata_train_batch_part(&t->lm, rng, (uint64_t)k, t->B_global, t->first, t->B, t->N, t->tok, t->tgt);
    *tokens = (double)t->B * t->N;
    model_set_dropout_batch(m, k, t->first, t->B_global);
    return model_forward(m, t->tok, t->tgt, t->B, t->N, NULL, 0, st, 1, step);
}
static int lm_kmeans(Task *t, Model *m, Rng *krng) { return model_kmeans_init(m, t->tok, t->tgt, t->B, t->N, NULL, krng); }
static int lm_reforward(Task *t, Model *m, long step, LossStats *st) {
    return model_forward(m, t->tok, t->tgt, t->B, t->N, NULL, 0, st, 1, step);
}
static int lm_eval(Task *t, Model *m, int s, long max_batches, EvalResult *r) {
    return evaluate(m, &t->lm, s, t->B, t->N, max_batches, r);
}
static void lm_close(Task *t) {
    free(t->tok);
    free(t->tgt);
    lmdata_close(&t->lm);
}

static int cls_train_forward(Task *t, Model *m, Rng *rng, long k, long step, LossStats *st, double *tokens) {
    int N = t->cls_N = clstask_train_batch_part(&t->cls, k, t->B_global, t->first);
    *tokens = (double)t->B * t->cls.n_seq * N;
    model_set_dropout_batch(m, k, t->first, t->B_global);
    return model_forward(m, t->cls.tok, t->cls.lab, t->B, N, NULL, 0, st, 1, step);
}
static int cls_kmeans(Task *t, Model *m, Rng *krng) {
    return model_kmeans_init_cls(m, t->cls.tok, t->cls.lab, t->B, t->cls_N, krng);
}
static int cls_reforward(Task *t, Model *m, long step, LossStats *st) {
    return model_forward(m, t->cls.tok, t->cls.lab, t->B, t->cls_N, NULL, 0, st, 1, step);
}
void task_cls_result(const ClsEval *e, EvalResult *r) {
    memset(r, 0, sizeof *r);
    r->loss = e->loss;
    r->ppl = exp(e->loss);
    r->acc = e->acc;
    r->tokens = (double)e->examples; /* examples, for classifiers */
    r->windows = e->examples;
}
static int cls_eval(Task *t, Model *m, int s, long max_batches, EvalResult *r) {
    ClsEval e;
    memset(r, 0, sizeof *r);
    if (clstask_evaluate(&t->cls, m, s, max_batches, &e) != 0) return -1;
    task_cls_result(&e, r);
    return 0;
}
static void cls_close(Task *t) { clstask_close(&t->cls); }

static int cls_open(Task *t, Config *cfg, int quiet) {
    if (clstask_open(&t->cls, cfg, 7u, t->B, quiet ? NULL : stderr) != 0) return -1;
    ClsTask *c = &t->cls;
    c->drop_last = cfg->train.eval_drop_last; /* the trainer's evaluations (gmaeval: --drop-last) */
    t->classify = t->report_acc = 1;
    for (int s = 0; s < 3; s++) t->have[s] = c->have[s];
    t->train_forward = cls_train_forward;
    t->kmeans = cls_kmeans;
    t->reforward = cls_reforward;
    t->eval = cls_eval;
    t->close = cls_close;
    t->N = c->max_len;
    cfg->data.max_len = c->max_len; /* resolved, for gmaeval */
    if (cfg->model.vocab_size == 0) cfg->model.vocab_size = (int)c->vocab;
    if (cls_head_cfg_mut(cfg)->n_seq == 0) cls_head_cfg_mut(cfg)->n_seq = c->n_seq;
    int e = 0;
    if ((uint32_t)cfg->model.vocab_size < c->vocab)
        e = gma_errorf("key model.vocab_size: %d is smaller than the data's vocabulary %u", cfg->model.vocab_size, c->vocab);
    else if (cls_head_cfg_mut(cfg)->n_seq != c->n_seq)
        e = gma_errorf("key model.n_seq: %d, but the %s data has %d sequences per example", cls_head_cfg_mut(cfg)->n_seq,
                       cfg_enum_name(cfg, "data.task"), c->n_seq);
    else if (c->n_classes > cls_head_cfg(cfg)->n_classes)
        e = gma_errorf("key model.n_classes: %d, but the %s data has labels up to %d", cls_head_cfg(cfg)->n_classes,
                       cfg_enum_name(cfg, "data.task"), c->n_classes - 1);
    for (int s = SPLIT_VALID; s <= SPLIT_TEST && !e; s++)
        if (c->drop_last && c->have[s] && c->split[s].n < t->B)
            e = gma_errorf("key train.eval_drop_last: the %s split of %s holds %d examples, fewer than one batch of %d",
                           s == SPLIT_VALID ? "valid" : "test", cfg->data.path, c->split[s].n, t->B);
    if (e) clstask_close(c);
    return e;
}

/* Shards that are not there: the error names the commands that make them. A data.path
 * whose last part is SOURCE-TOKENIZER (data/wikitext-103-gpt2) with SOURCE a data set
 * gmadata fetches gives the fetch and prepare lines for it; any other path the prepare
 * line and the page that lists the small configs' data commands. Returns -1. */
static int missing_data_hint(const Config *cfg) {
    char train[2100];
    snprintf(train, sizeof train, "%s/train.bin", cfg->data.path);
    if (cfg->data.source != DATA_shards || gma_path_exists(train)) return -1; /* generated data, or another error: as it is */
    char msg[1024], base[256], src[256] = "";
    snprintf(msg, sizeof msg, "%s", gma_error());
    const char *b = strrchr(cfg->data.path, '/');
    snprintf(base, sizeof base, "%s", b ? b + 1 : cfg->data.path);
    char *dash = strrchr(base, '-');
    const char *tok = dash ? dash + 1 : "gpt2";
    if (dash) snprintf(src, sizeof src, "%.*s", (int)(dash - base), base);
    if (!strcmp(cfg->name, GPT2_IMPORT_NAME) && !strcmp(cfg->data.path, GPT2_DATA)) /* an import's placeholder */
        return gma_errorf("%s; an imported GPT-2 has no data of its own (data.path %s is a placeholder): give shards of its "
                          "tokenizer with --set data.path=DIR (gmadata prepare TEXT_DIR --tokenizer gpt2 --vocab "
                          "RUN/tokenizer --out DIR)", msg, cfg->data.path);
    if (src[0] && fetch_find(src))
        return gma_errorf("%s; make it with: bin/gmadata fetch %s%s && bin/gmadata prepare %s --tokenizer %s --out %s", msg, src,
                          !strcmp(tok, "gpt2") ? " && bin/gmadata fetch gpt2" : "", src, tok, cfg->data.path);
    return gma_errorf("%s; make it with: bin/gmadata prepare TEXT_DIR --tokenizer gpt2|bpe:DIR|bytes --out %s "
                      "(see bin/gmadata prepare --help; the command for each small config's data: docs/data.md, "
                      "\"The data of the small configs\")", msg, cfg->data.path);
}

static int lm_open(Task *t, Config *cfg) {
    LmSpec spec = lmdata_spec(cfg, t->N);
    if (lmdata_open(&t->lm, &spec) != 0) return missing_data_hint(cfg);
    if (lmdata_check_train_window(&t->lm, &spec) != 0) {
        lmdata_close(&t->lm);
        return -1;
    }
    t->report_acc = t->lm.src->scored;
    for (int s = 0; s < 3; s++) t->have[s] = t->lm.have[s];
    t->train_forward = lm_train_forward;
    t->kmeans = lm_kmeans;
    t->reforward = lm_reforward;
    t->eval = lm_eval;
    t->close = lm_close;
    if (cfg->model.vocab_size == 0) cfg->model.vocab_size = (int)t->lm.vocab;
    if ((uint32_t)cfg->model.vocab_size < t->lm.vocab) {
        int e = gma_errorf("key model.vocab_size: %d is smaller than the data's vocabulary %u", cfg->model.vocab_size,
                           t->lm.vocab); /* before lmdata_close clears t->lm */
        lmdata_close(&t->lm);
        return e;
    }
    t->tok = xmalloc(sizeof(int32_t) * t->B * t->N);
    t->tgt = xmalloc(sizeof(int32_t) * t->B * t->N);
    return 0;
}

int task_open(Task *t, Config *cfg, int quiet) {
    memset(t, 0, sizeof *t);
    t->B = cfg->train.batch_size;
    t->N = cfg->train.seq_len;
    t->B_global = t->B * dist_size();
    t->first = t->B * dist_rank();
    if (cfg->data.source == DATA_cls) return cls_open(t, cfg, quiet);
    return lm_open(t, cfg);
}
