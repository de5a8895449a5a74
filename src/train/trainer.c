/* trainer.c: the training loop (see trainer.h).
 *
 * Each step: zero gradients; for each micro-batch draw a batch, forward, backward with
 * scale 1/grad_accum; global gradient norm; a non-finite loss or norm refuses the update
 * (logged; the run stops after train.max_bad_steps in a row, leaving the last good
 * checkpoint); otherwise clip and update. Periodically: metrics.jsonl rows, validation,
 * checkpoints. SIGINT/SIGTERM finish the current step, write a checkpoint and return
 * TRAIN_INTERRUPTED. Testing hook: GMA_FAULT_NAN_STEPS="3,4" forces a NaN loss at those
 * (0-based) steps.
 *
 * What differs between a language model and a classifier (data, batches, forward, eval)
 * sits behind the small Task interface below; the loop, the optimiser, logging and
 * checkpoints are shared. A classifier additionally keeps the best-validation-accuracy
 * checkpoint under RUN/best and reports the test split from it at the end (as LRA).
 *
 * Data parallel (dist.h, docs/distributed.md): with R ranks every rank draws the same
 * global micro-batch of R x batch_size and trains on its slice; after the micro-batches
 * the gradients (scaled by 1/R in the backward) and the loss statistics are summed over
 * ranks, so clipping and the update are the same on every rank. Rank 0 alone writes
 * logs, metrics, checkpoints and the summary; evaluation is shared out over ranks; a
 * signal on any rank stops all of them at the same step. With R = 1 every extra step
 * below is skipped and the run is what it was without MPI. */
#include "train/trainer.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/lmdata.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "optim/optim.h"
#include "train/cls_task.h"
#include "train/dist.h"
#include "train/evaluate.h"
#include "train/health.h"
#include "train/train_sample.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { g_stop = sig; }

static int fault_nan(long step) {
    const char *s = getenv("GMA_FAULT_NAN_STEPS");
    if (!s) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    char *sv = NULL;
    for (char *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
        if (atol(t) == step) return 1;
    return 0;
}

static void fmt_eta(char *out, size_t cap, double s) {
    if (s < 0 || !isfinite(s)) s = 0;
    long t = (long)s;
    if (t >= 3600) snprintf(out, cap, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else snprintf(out, cap, "%ldm%02lds", t / 60, t % 60);
}

static void metrics_row(FILE *f, cJSON *row) {
    if (!f) { /* ranks other than 0 keep no metrics */
        cJSON_Delete(row);
        return;
    }
    char *s = cJSON_PrintUnformatted(row);
    fprintf(f, "%s\n", s);
    fflush(f);
    free(s);
    cJSON_Delete(row);
}

/* ---------------- tasks: what differs between LM and classifier training ---------------- */
typedef struct Task Task;
struct Task {
    int have[3];
    int report_acc; /* accuracy is a figure of merit (recall, classifiers) */
    int classify;
    /* draw training micro-batch k and run the training forward; *tokens: tokens in it */
    int (*train_forward)(Task *t, Model *m, Rng *rng, long k, long step, LossStats *st, double *tokens);
    /* k-means initialisation (GMA_SPEC 5) on the batch of the last train_forward */
    int (*kmeans)(Task *t, Model *m, Rng *krng);
    /* the training forward of the last train_forward's batch again (st refilled) */
    int (*reforward)(Task *t, Model *m, long step, LossStats *st);
    /* evaluate split s (max_batches 0 = all) */
    int (*eval)(Task *t, Model *m, int s, long max_batches, EvalResult *r);
    void (*close)(Task *t);
    int B, N;
    int B_global, first; /* data parallel: this rank's rows [first, first+B) of B_global */
    int cls_N; /* padded length of the last classifier batch */
    int32_t *tok, *tgt;
    LmData lm;
    ClsTask cls;
};

static int lm_train_forward(Task *t, Model *m, Rng *rng, long k, long step, LossStats *st, double *tokens) {
    lmdata_train_batch_part(&t->lm, rng, (uint64_t)k, t->B_global, t->first, t->B, t->N, t->tok, t->tgt);
    *tokens = (double)t->B * t->N;
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
    return model_forward_cls(m, t->cls.tok, NULL, t->cls.lab, t->B, N, st, 1, step);
}
static int cls_kmeans(Task *t, Model *m, Rng *krng) {
    return model_kmeans_init_cls(m, t->cls.tok, t->cls.lab, t->B, t->cls_N, krng);
}
static int cls_reforward(Task *t, Model *m, long step, LossStats *st) {
    return model_forward_cls(m, t->cls.tok, NULL, t->cls.lab, t->B, t->cls_N, st, 1, step);
}
static int cls_eval(Task *t, Model *m, int s, long max_batches, EvalResult *r) {
    ClsEval e;
    memset(r, 0, sizeof *r);
    if (clstask_evaluate(&t->cls, m, s, max_batches, &e) != 0) return -1;
    r->loss = e.loss;
    r->ppl = exp(e.loss);
    r->acc = e.acc;
    r->tokens = (double)e.examples; /* examples, for classifiers */
    r->windows = e.examples;
    return 0;
}
static void cls_close(Task *t) { clstask_close(&t->cls); }

/* Open the data of cfg (and fill the model keys the data decides: vocabulary, n_seq). */
static int task_open(Task *t, Config *cfg, int quiet) {
    memset(t, 0, sizeof *t);
    t->B = cfg->train.batch_size;
    t->N = cfg->train.seq_len;
    t->B_global = t->B * dist_size();
    t->first = t->B * dist_rank();
    if (!strcmp(cfg->data.source, "cls")) {
        if (clstask_open(&t->cls, cfg, 7u, t->B, quiet ? NULL : stderr) != 0) return -1;
        ClsTask *c = &t->cls;
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
        if (cfg->model.n_seq == 0) cfg->model.n_seq = c->n_seq;
        int e = 0;
        if ((uint32_t)cfg->model.vocab_size < c->vocab)
            e = gma_errorf("key model.vocab_size: %d is smaller than the data's vocabulary %u", cfg->model.vocab_size, c->vocab);
        else if (cfg->model.n_seq != c->n_seq)
            e = gma_errorf("key model.n_seq: %d, but the %s data has %d sequences per example", cfg->model.n_seq,
                           cfg->data.task, c->n_seq);
        else if (c->n_classes > cfg->model.n_classes)
            e = gma_errorf("key model.n_classes: %d, but the %s data has labels up to %d", cfg->model.n_classes,
                           cfg->data.task, c->n_classes - 1);
        if (e) clstask_close(c);
        return e;
    }
    if (lmdata_open(&t->lm, cfg) != 0) return -1;
    t->report_acc = t->lm.is_recall;
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

static cJSON *eval_row(long step, const char *split, const EvalResult *r, const Task *t) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)step);
    cJSON_AddStringToObject(o, "split", split);
    cJSON_AddNumberToObject(o, "loss", r->loss);
    if (!t->classify) cJSON_AddNumberToObject(o, "ppl", r->ppl);
    if (t->report_acc) cJSON_AddNumberToObject(o, "acc", r->acc);
    if (r->word_ppl > 0) cJSON_AddNumberToObject(o, "word_ppl", r->word_ppl);
    cJSON_AddNumberToObject(o, t->classify ? "examples" : "tokens", r->tokens);
    return o;
}

static void print_eval(const char *what, const char *split, long step, const EvalResult *r, const Task *t, int nl) {
    if (t->classify)
        fprintf(stderr, "%s%s step %ld | %s loss %.4f | acc %.4f | %.0f examples\n", nl ? "\n" : "", what, step, split,
                r->loss, r->acc, r->tokens);
    else
        fprintf(stderr, "%s%s step %ld | %s loss %.4f | ppl %.3f%s%.4f\n", nl ? "\n" : "", what, step, split, r->loss,
                r->ppl, t->report_acc ? " | acc " : "", t->report_acc ? r->acc : 0.0);
}

static int write_json_file(const char *dir, const char *name, const char *text) {
    char path[2100];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return gma_write_file_atomic(path, text, strlen(text));
}
/* ---------------- data parallel (dist.h); each a no-op or the old behaviour with one rank ---------------- */

/* An error on one rank in the middle of training, while the others wait in a collective:
 * print it and end the whole job. With one rank the code is returned as before. */
static int fatal(int rc) {
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

/* Checkpoint (rank 0 writes). With several ranks, first check that every rank holds the
 * same parameters bit for bit: the replicas are meant to be identical, and a checkpoint
 * would otherwise describe rank 0 only. */
static int save_ckpt(const Model *m, const TrainState *ts, const char *run_dir, int keep, const char *tag) {
    if (dist_size() > 1 && !dist_same_u64(params_hash(m))) {
        if (dist_rank() == 0)
            fprintf(stderr, "gmatrain: the ranks' parameters differ at step %ld (replicas diverged); stopping\n",
                    ts->step);
        dist_abort(TRAIN_ERROR);
    }
    if (dist_rank() != 0) return 0;
    if (ckpt_save(m, ts, run_dir, keep, tag) != 0) return fatal(TRAIN_ERROR);
    return 0;
}

/* Buffers that training updates on each rank from its own batch (GMA EMA memory,
 * `<layer>.mixer.gma.memory`) are averaged over ranks after every step, so the replicas
 * stay identical. Other buffers (Performer features) are the same everywhere already. */
static void sync_buffers(Model *m) {
    int R = dist_size();
    if (R == 1) return;
    for (int i = 0; i < m->pt.n; i++) {
        const ParamInfo *p = &m->pt.t[i];
        size_t len = strlen(p->name), sl = strlen(".gma.memory");
        if (p->group != GROUP_BUFFER || len < sl || strcmp(p->name + len - sl, ".gma.memory")) continue;
        dist_sum_real_backend(m->params + p->offset, p->numel);
        g_ops->scale(m->params + p->offset, (real)(1.0 / R), p->numel);
    }
}

/* Every rank takes rank 0's parameters (buffers included) and, when `moments`, its
 * optimiser moments. */
static void bcast_model(Model *m, int moments) {
    if (dist_size() == 1) return;
    dist_bcast_real_backend(m->params, m->pt.total, 0);
    if (moments) {
        dist_bcast_real_backend(m->m, m->pt.total, 0);
        dist_bcast_real_backend(m->v, m->pt.total, 0);
    }
}

/* Classifier: after a validation accuracy `acc` at the current state, keep RUN/best when
 * it improves on the best so far. */
static int keep_best(const Model *m, TrainState *ts, const char *run_dir, double acc, int quiet) {
    if (!(acc > ts->best_acc)) return 0;
    ts->best_acc = acc;
    ts->best_step = ts->step;
    if (save_ckpt(m, ts, run_dir, 1, "best") != 0) return -1;
    if (!quiet) fprintf(stderr, "best valid acc %.4f at step %ld: saved %s/best\n", acc, ts->step, run_dir);
    return 0;
}

int trainer_run(const Config *cfg_in, const TrainerOptions *o) {
    Config cfg = *cfg_in;
    const TrainCfg *tc = &cfg.train;
    /* R ranks; rank 0 leads (writes and prints), the others are quiet */
    int R = dist_size(), lead = dist_rank() == 0, quiet = o->quiet || !lead;
    /* start-up: every failure is agreed on by all ranks (dist_agree), so none is left
     * waiting in a collective and one rank reports it */
    Task task;
    int ok = task_open(&task, &cfg, quiet) == 0;
    int rc = dist_agree(ok ? 0 : TRAIN_BAD_INPUT);
    if (rc) {
        if (ok) task.close(&task);
        return rc;
    }
    Model m;
    ok = model_build(&m, &cfg) == 0;
    if ((rc = dist_agree(ok ? 0 : TRAIN_BAD_INPUT)) != 0) {
        if (ok) model_free(&m);
        task.close(&task);
        return rc;
    }
    int B = tc->batch_size, N = task.N;
    if ((rc = dist_agree(model_check_memory(&m, B, N) != 0 ? TRAIN_BAD_INPUT : 0)) != 0) {
        model_free(&m);
        task.close(&task);
        return rc;
    }
    model_alloc(&m, B, N);
    model_init_params(&m, (uint64_t)cfg.seed);
    TrainState ts = {.step = 0, .tokens_seen = 0, .best_valid = INFINITY, .best_acc = -1, .best_step = -1};
    rng_seed2(&ts.rng, (uint64_t)cfg.seed, 0x747261696eULL);
    if (o->resume_dir) {
        char dir[2048];
        ok = ckpt_resolve(o->resume_dir, dir, sizeof dir) == 0 && ckpt_load(&m, &ts, dir) == 0;
        if ((rc = dist_agree(ok ? 0 : TRAIN_BAD_INPUT)) != 0) {
            model_free(&m);
            task.close(&task);
            return rc;
        }
        if (!quiet) fprintf(stderr, "resumed from %s at step %ld\n", dir, ts.step);
        if (lead) ckpt_clean_run(o->run_dir); /* what a killed or failed save left behind */
    }
    /* the replicas start from rank 0's parameters, moments and state (the same already,
     * from the seed or the checkpoint: this makes sure) */
    bcast_model(&m, 1);
    dist_bcast(&ts, sizeof ts, 0);
    /* text samples while training (language models): the prompt must encode before the
     * run directory is touched */
    TrainSampler smp;
    memset(&smp, 0, sizeof smp);
    if (tc->sample_every > 0 && (rc = dist_agree(train_sampler_init(&smp, &cfg, quiet ? NULL : stderr) != 0 ? TRAIN_BAD_INPUT : 0)) != 0) {
        train_sampler_free(&smp);
        model_free(&m);
        task.close(&task);
        return rc;
    }
    FILE *mf = NULL;
    char mpath[2100];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", o->run_dir);
    rc = 0;
    if (lead) {
        if (gma_mkdirs(o->run_dir) != 0) rc = TRAIN_ERROR;
        else {
            char *js = cfg_to_json(&cfg);
            write_json_file(o->run_dir, "config.json", js);
            free(js);
            mf = fopen(mpath, o->resume_dir ? "a" : "w");
            if (!mf) {
                gma_errorf("%s: cannot open for writing", mpath);
                rc = TRAIN_ERROR;
            }
        }
    }
    if ((rc = dist_agree(rc)) != 0) {
        if (mf) fclose(mf);
        model_free(&m);
        task.close(&task);
        return rc;
    }
    if (!quiet) {
        char ranks[160] = "";
        if (R > 1) snprintf(ranks, sizeof ranks, " | %d ranks, global batch %d, all-reduce by %s", R, B * R, dist_transport());
        fprintf(stderr, "gmatrain: %s | %zu parameters | mixers %s%s | B=%d N=%d accum=%d%s | %s | activations %.1f MiB\n",
                cfg.name, model_param_count(&m), cfg.model.mixer[0], cfg.model.n_mixer > 1 ? ",..." : "", B, N,
                tc->grad_accum, ranks, g_ops->name, m.act_bytes / 1048576.0);
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    g_stop = 0;
    int stop_all = 0; /* R > 1: a signal reached some rank (agreed at each step) */
#define STOPPING (R > 1 ? stop_all : g_stop)

    HealthMon hm;
    health_init(&hm, &m);
    int gma_layers = model_gma_layers(&m), div_on = cfg.gma.div_weight > 0;
    int fresh = ts.step == 0 && !o->resume_dir;
    double win_div = 0;
    double t_start = gma_now(), train_time = 0, win_loss = 0, tokens0 = ts.tokens_seen;
    int win_n = 0, bad_row = 0;
    rc = TRAIN_OK;
    long step0 = ts.step;
    double last_loss = NAN;
    while (ts.step < tc->steps && !STOPPING) {
        long step = ts.step;
        double t0 = gma_now();
        model_zero_grad(&m);
        double loss = 0, count_tok = 0, div = 0;
        int bad = 0;
        for (int a = 0; a < tc->grad_accum; a++) {
            LossStats st;
            double ntok = 0;
            if (task.train_forward(&task, &m, &ts.rng, step * tc->grad_accum + a, step, &st, &ntok) != 0) {
                rc = fatal(TRAIN_BAD_INPUT);
                goto done;
            }
            if (fresh && a == 0 && model_wants_kmeans(&m)) {
                /* k-means on this first batch's query rows (GMA_SPEC 5), then redo the forward;
                 * with several ranks every rank fits the rows of all (gathered in the order of
                 * the global batch) with the same seed, and rank 0's result is copied anyway */
                Rng krng;
                rng_seed2(&krng, (uint64_t)cfg.seed, 0x6b6d65616e73ULL);
                if (task.kmeans(&task, &m, &krng) != 0) {
                    rc = fatal(TRAIN_ERROR);
                    goto done;
                }
                bcast_model(&m, 0);
                if (task.reforward(&task, &m, step, &st) != 0) {
                    rc = fatal(TRAIN_ERROR);
                    goto done;
                }
                if (!quiet) fprintf(stderr, "gmatrain: k-means initialisation of the GMA routing/memory done\n");
            }
            fresh = 0;
            if (gma_layers && !hm.have_norm0) health_baseline(&hm, &m);
            double l = st.count > 0 ? st.loss_sum / st.count : 0;
            if (fault_nan(step)) l = NAN;
            if (!isfinite(l)) {
                bad = 1;
                loss = l;
                break;
            }
            loss += l / tc->grad_accum;
            if (div_on) div += model_div_loss(&m) / tc->grad_accum;
            count_tok += ntok;
            /* with R ranks each backward carries 1/R, so the sum over ranks is the mean */
            model_backward(&m, 1.0 / ((double)tc->grad_accum * R));
            model_update_buffers(&m);
        }
        if (R > 1) {
            /* the step's scalars in one reduction (the loss becomes the mean over ranks,
             * tokens the global count); the gradients only when every rank is finite */
            double sc[5] = {bad, loss, div, count_tok, g_stop != 0};
            dist_sum_double(sc, 5);
            bad = sc[0] > 0;
            loss = sc[1] / R;
            div = sc[2] / R;
            count_tok = sc[3];
            stop_all = sc[4] > 0;
            if (!bad) dist_sum_real_backend(m.grads, m.pt.total);
            /* a rank whose loss was not finite skipped its remaining micro-batches and their
             * draws: give every rank rank 0's data RNG so the global batches stay the same */
            else dist_bcast(&ts.rng, sizeof ts.rng, 0);
            sync_buffers(&m);
        }
        double gn = bad ? NAN : optim_grad_norm(&m);
        /* rank 0's norm everywhere: the clip factor must not depend on a rank's thread count */
        if (R > 1) dist_bcast(&gn, sizeof gn, 0);
        if (!isfinite(gn)) bad = 1;
        double lr = optim_lr(tc, step);
        if (bad) {
            bad_row++;
            cJSON *row = cJSON_CreateObject();
            cJSON_AddNumberToObject(row, "step", (double)step);
            cJSON_AddStringToObject(row, "event", "nonfinite");
            cJSON_AddStringToObject(row, "what", isfinite(loss) ? "grad_norm" : "loss");
            cJSON_AddNumberToObject(row, "in_a_row", bad_row);
            metrics_row(mf, row);
            if (lead)
                fprintf(stderr, "%sstep %ld: non-finite %s, update refused (%d in a row)\n", o->progress_tty ? "\n" : "",
                        step, isfinite(loss) ? "gradient norm" : "loss", bad_row);
            if (bad_row >= tc->max_bad_steps) {
                gma_errorf("stopping: %d non-finite steps in a row (train.max_bad_steps); the last checkpoint is kept",
                           bad_row);
                rc = TRAIN_NONFINITE;
                goto done;
            }
        } else {
            bad_row = 0;
            optim_step(&m, tc, step + 1, lr, gn);
            last_loss = loss;
            win_loss += loss;
            win_div += div;
            win_n++;
        }
        ts.step = step + 1;
        ts.tokens_seen += count_tok;
        double dt = gma_now() - t0;
        train_time += dt;
        if (ts.step % tc->log_every == 0 || ts.step == tc->steps) {
            double tps = train_time > 0 ? (ts.tokens_seen - tokens0) / train_time : 0;
            cJSON *row = cJSON_CreateObject();
            cJSON_AddNumberToObject(row, "step", (double)ts.step);
            cJSON_AddNumberToObject(row, "loss", win_n ? win_loss / win_n : NAN);
            if (div_on) cJSON_AddNumberToObject(row, "div_loss", win_n ? win_div / win_n : NAN);
            cJSON_AddNumberToObject(row, "lr", lr);
            cJSON_AddNumberToObject(row, "grad_norm", gn);
            cJSON_AddNumberToObject(row, "tokens_per_s", tps);
            cJSON_AddNumberToObject(row, "elapsed_s", gma_now() - t_start);
            metrics_row(mf, row);
            if (!quiet) {
                char eta[32];
                double per = train_time / (double)(ts.step - step0);
                fmt_eta(eta, sizeof eta, per * (double)(tc->steps - ts.step));
                fprintf(stderr, "%sstep %6ld/%d | loss %.4f | lr %.2e | gnorm %.3f | %.0f tok/s | ETA %s%s",
                        o->progress_tty ? "\r" : "", ts.step, tc->steps, win_n ? win_loss / win_n : NAN, lr, gn, tps, eta,
                        o->progress_tty ? "   " : "\n");
            }
            win_loss = 0;
            win_div = 0;
            win_n = 0;
        }
        if (gma_layers && !bad && cfg.gma.monitor_every > 0 && ts.step % cfg.gma.monitor_every == 0) {
            /* every rank checks the routing statistics summed over ranks (the same numbers);
             * rank 0 logs and prints, and its decision and parameters stand for all */
            long alerts0 = hm.alerts;
            int collapse = health_check(&hm, &m, ts.step, lead ? mf : NULL, quiet, (uint64_t)cfg.seed);
            if (R > 1) {
                dist_bcast(&collapse, sizeof collapse, 0);
                /* after a re-seed (an alert with on_collapse "reinit"), rank 0's parameters and
                 * moments; the alert count is the same on every rank */
                if (hm.alerts != alerts0 && !strcmp(cfg.gma.on_collapse, "reinit")) bcast_model(&m, 1);
            }
            if (collapse) {
                if (save_ckpt(&m, &ts, o->run_dir, tc->keep_checkpoints, NULL) != 0) {
                    rc = TRAIN_ERROR;
                    goto done;
                }
                gma_errorf("stopping at step %ld: routing collapse alert (gma.on_collapse \"stop\"); checkpoint written to %s/latest",
                           ts.step, o->run_dir);
                rc = TRAIN_COLLAPSE;
                goto done;
            }
        }
        if (tc->eval_every > 0 && ts.step % tc->eval_every == 0 && ts.step < tc->steps && task.have[SPLIT_VALID]) {
            EvalResult r;
            if (task.eval(&task, &m, SPLIT_VALID, tc->eval_batches, &r) == 0) {
                metrics_row(mf, eval_row(ts.step, "valid", &r, &task));
                if (!quiet) print_eval("eval", "valid", ts.step, &r, &task, o->progress_tty);
                if (r.loss < ts.best_valid) ts.best_valid = r.loss;
                if (task.classify && keep_best(&m, &ts, o->run_dir, r.acc, quiet) != 0) {
                    rc = TRAIN_ERROR;
                    goto done;
                }
            }
        }
        if (tc->sample_every > 0 && ts.step % tc->sample_every == 0 && lead) {
            if (o->progress_tty && !quiet) fprintf(stderr, "\n");
            if (train_sampler_run(&smp, &m, ts.step, mf, quiet ? NULL : stderr) != 0) {
                rc = fatal(TRAIN_ERROR);
                goto done;
            }
        }
        if (tc->checkpoint_every > 0 && ts.step % tc->checkpoint_every == 0 && ts.step < tc->steps) {
            if (save_ckpt(&m, &ts, o->run_dir, tc->keep_checkpoints, NULL) != 0) {
                rc = TRAIN_ERROR;
                goto done;
            }
        }
    }
    if (o->progress_tty && !quiet) fprintf(stderr, "\n");
    if (STOPPING) {
        if (save_ckpt(&m, &ts, o->run_dir, tc->keep_checkpoints, NULL) != 0) {
            rc = TRAIN_ERROR;
            goto done;
        }
        if (lead) {
            if (g_stop)
                fprintf(stderr,
                        "gmatrain: interrupted by signal %d at step %ld; checkpoint written to %s/latest (resume with --resume)\n",
                        (int)g_stop, ts.step, o->run_dir);
            else
                fprintf(stderr,
                        "gmatrain: interrupted by a signal to another rank at step %ld; checkpoint written to %s/latest (resume with --resume)\n",
                        ts.step, o->run_dir);
        }
        rc = TRAIN_INTERRUPTED;
        goto done;
    }
#undef STOPPING
    {
        static const char *nm[3] = {"train", "valid", "test"};
        cJSON *sum = cJSON_CreateObject();
        EvalResult fin[3];
        int have_fin[3] = {0, 0, 0};
        /* the final model on valid and test (whole splits) */
        for (int s = SPLIT_VALID; s <= SPLIT_TEST; s++) {
            if (!task.have[s]) continue;
            if (task.eval(&task, &m, s, 0, &fin[s]) != 0) continue;
            have_fin[s] = 1;
        }
        /* a classifier keeps the best validation accuracy, the final model included */
        if (task.classify && have_fin[SPLIT_VALID] && keep_best(&m, &ts, o->run_dir, fin[SPLIT_VALID].acc, quiet) != 0) {
            rc = TRAIN_ERROR;
            cJSON_Delete(sum);
            goto done;
        }
        if (save_ckpt(&m, &ts, o->run_dir, tc->keep_checkpoints, NULL) != 0) {
            rc = TRAIN_ERROR;
            cJSON_Delete(sum);
            goto done;
        }
        cJSON_AddStringToObject(sum, "name", cfg.name);
        cJSON_AddNumberToObject(sum, "steps", (double)ts.step);
        cJSON_AddNumberToObject(sum, "parameters", (double)model_param_count(&m));
        cJSON_AddNumberToObject(sum, "final_train_loss", last_loss);
        cJSON_AddNumberToObject(sum, "tokens_seen", ts.tokens_seen);
        cJSON_AddNumberToObject(sum, "train_seconds", train_time);
        cJSON_AddNumberToObject(sum, "tokens_per_s", train_time > 0 ? (ts.tokens_seen - tokens0) / train_time : 0);
        cJSON_AddStringToObject(sum, "device", g_ops->name);
        if (R > 1) {
            cJSON_AddNumberToObject(sum, "ranks", R);
            cJSON_AddNumberToObject(sum, "global_batch_size", (double)B * R);
            cJSON_AddStringToObject(sum, "allreduce", dist_transport());
        }
        for (int s = SPLIT_VALID; s <= SPLIT_TEST; s++) {
            if (!have_fin[s]) continue;
            metrics_row(mf, eval_row(ts.step, nm[s], &fin[s], &task));
            cJSON_AddItemToObject(sum, nm[s], eval_row(ts.step, nm[s], &fin[s], &task));
            if (!quiet) print_eval("final", nm[s], ts.step, &fin[s], &task, 0);
        }
        if (task.classify) {
            /* LRA's number: test accuracy of the best-validation checkpoint (rank 0 reads it
             * and hands its parameters to the others) */
            char best[2100];
            snprintf(best, sizeof best, "%s/best", o->run_dir);
            EvalResult r;
            int have_best = lead && ts.best_step >= 0 && gma_path_exists(best);
            dist_bcast(&have_best, sizeof have_best, 0);
            if (have_best && task.have[SPLIT_TEST]) {
                int loaded = lead ? ckpt_load(&m, NULL, best) == 0 : 1;
                dist_bcast(&loaded, sizeof loaded, 0);
                if (loaded) bcast_model(&m, 0);
                if (loaded && task.eval(&task, &m, SPLIT_TEST, 0, &r) == 0) {
                    cJSON *row = eval_row(ts.best_step, "test", &r, &task);
                    cJSON_AddStringToObject(row, "checkpoint", "best");
                    metrics_row(mf, row);
                    cJSON_AddNumberToObject(sum, "test_acc_at_best", r.acc);
                    cJSON_AddNumberToObject(sum, "test_loss_at_best", r.loss);
                    if (!quiet)
                        fprintf(stderr, "best (step %ld, valid acc %.4f) | test loss %.4f | test acc %.4f\n", ts.best_step,
                                ts.best_acc, r.loss, r.acc);
                }
            }
            if (have_best) {
                cJSON_AddNumberToObject(sum, "best_valid_acc", ts.best_acc);
                cJSON_AddNumberToObject(sum, "best_step", (double)ts.best_step);
            }
        }
        char *st = cJSON_Print(sum);
        cJSON_Delete(sum);
        if (lead) write_json_file(o->run_dir, "summary.json", st);
        free(st);
    }
done:
    /* every way here is taken by all ranks together (a rank-local error ends the job in
     * fatal()); wait for rank 0's last writes before any rank leaves */
    dist_barrier();
    health_free(&hm);
    train_sampler_free(&smp);
    if (mf) fclose(mf);
    model_free(&m);
    task.close(&task);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    return rc;
}
