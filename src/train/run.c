/* run.c: the stages of a training run (see run.h). A step: zero gradients; for each
 * micro-batch draw a batch, forward, backward with scale 1/grad_accum; global gradient norm;
 * a non-finite loss or norm refuses the update (step_refuse), else clip and update. What
 * a run folder, a resume, a signal and a refusal promise: docs/programs.md, "Run folders,
 * resuming, one writer", and docs/testing.md, "Reliability". Data parallel (every rank
 * trains its slice of one global micro-batch, sums over ranks, rank 0 alone writes):
 * docs/distributed.md; with R = 1 every extra step is skipped and the run is what it is
 * without MPI. Testing hooks: fault_nan, fault_final_eval. */
#include "train/run.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/lm/dataid.h"
#include "data/lm/lmmeta.h"
#include "model/init_from.h"
#include "nn/mixers/gma_core.h"
#include "optim/optim.h"
#include "train/dist.h"
#include "train/kadapt.h"
#include "train/routing_diag.h"
#include "train/run_dist.h"
#include "train/run_distill.h"
#include "train/run_cfg.h"
#include "train/run_lock.h"
#include "train/run_log.h"

static const char *const g_split[3] = {"train", "valid", "test"};

static volatile sig_atomic_t g_stop;
static int g_ack; /* rank 0 acknowledges a Ctrl-C on stderr (SIGTERM, as mpirun sends when a job ends, is not) */
static void on_signal(int sig) {
    static const char msg[] = "\ngmatrain: interrupt received, stopping after this step (checkpoint follows)\n";
    if (!g_stop && g_ack && sig == SIGINT) (void)!write(2, msg, sizeof msg - 1); /* async-signal-safe */
    g_stop = sig;
}

static int stopping(const Run *r) { return r->R > 1 ? r->stop_all : g_stop != 0; }

/* training tokens per second of this run so far, over all its sessions (a run resumed from
 * a checkpoint of an earlier version: since the resume) */
static double run_tps(const Run *r) {
    const TrainState *ts = &r->ts;
    return ts->train_seconds > 0 ? (ts->tokens_seen - ts->tokens_untimed) / ts->train_seconds : 0;
}

/* wall time since the run started, over all its sessions */
static double run_elapsed(const Run *r) { return r->elapsed0 + gma_now() - r->t_start; }

/* testing hook: GMA_FAULT_NAN_STEPS="3,4" forces a NaN loss at those (0-based) steps; the
 * environment is read once per run */
static const char *g_fault_nan;
static int fault_nan(long step) {
    const char *s = g_fault_nan;
    if (!s) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    char *sv = NULL;
    for (char *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
        if (atol(t) == step) return 1;
    return 0;
}

/* ---------------- open ---------------- */

/* Rank 0 takes the run directory's lock (run_lock.h) before it writes anything there;
 * once held it is kept to run_close. A second writer is bad input (exit 2); a directory
 * that cannot be made is an error (exit 1). */
static int take_lock(Run *r) {
    if (!r->lead || r->lock_fd >= 0) return 0;
    int fd = run_lock_take(r->o.run_dir);
    r->lock_fd = fd >= 0 ? fd : -1;
    return fd >= 0 ? 0 : fd == -2 ? TRAIN_BAD_INPUT : TRAIN_ERROR;
}

#define PLAN_SAY_BYTES (1024.0 * 1048576.0) /* plans from 1 GiB up are printed before they are allocated */

/* The data, then the model for it; every failure is agreed on by all ranks, so none is
 * left waiting in a collective and one rank reports it. */
static int open_data_and_model(Run *r) {
    r->task_opened = task_open(&r->task, &r->cfg, r->quiet) == 0;
    int rc = dist_agree(r->task_opened ? 0 : TRAIN_BAD_INPUT);
    if (rc) return rc;
    r->model_built = model_build(&r->m, &r->cfg) == 0;
    if ((rc = dist_agree(r->model_built ? 0 : TRAIN_BAD_INPUT)) != 0) return rc;
    r->m.lm_weight = run_keys(&r->cfg)->lm_weight;
    int B = r->cfg.train.batch_size, N = r->task.N;
    MemPlan plan; /* planned once: checked here, reported below */
    if ((rc = dist_agree(model_check_memory_plan(&r->m, B, N, &plan) != 0 ? TRAIN_BAD_INPUT : 0)) != 0) return rc;
    if (r->lead && r->cfg.model.task == MODEL_LM) cfg_pos_scale_warn(&r->cfg, stderr, "gmatrain"); /* once, as training starts */
    if (r->lead && !r->quiet && plan.total >= PLAN_SAY_BYTES) /* taking and touching that much takes a while */
        fprintf(stderr, "gmatrain: allocating %.1f GiB: parameters, gradients and optimiser moments %.1f, activations %.1f (%s); "
                "%.1f GiB of %s\n", plan.total / 1073741824.0, plan.params / 1073741824.0, plan.acts / 1073741824.0,
                plan.drivers, plan.avail / 1073741824.0, plan.avail_what);
    model_alloc(&r->m, B, N);
    r->m.gather = dist_gather_rows_cb; /* k-means and re-seeding fit the rows of every rank */
    model_init_params(&r->m, (uint64_t)r->cfg.seed);
    /* train.freeze: before a resume loads the moments (a frozen tensor has none) */
    int nt = 0;
    size_t np = 0;
    if ((rc = dist_agree(optim_freeze(&r->m, &r->cfg, &nt, &np) != 0 ? TRAIN_BAD_INPUT : 0)) != 0) return rc;
    if (nt && !r->quiet)
        fprintf(stderr, "gmatrain: train.freeze: %d tensors, %zu of %zu parameters frozen (no update, no moments)\n", nt, np,
                model_param_count(&r->m));
    return 0;
}

/* 1 when the summary.json at path was written at step (the run ended there): at
 * train.steps, or (early) where train.stop_acc ended it. */
static int summary_at(const char *path, long step, int early) {
    char *text = gma_path_exists(path) ? gma_read_file(path, NULL) : NULL;
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(j, "steps");
    int at = cJSON_IsNumber(n) && (long)n->valuedouble == step; /* a summary of an earlier end does not count */
    if (early) at = at && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "early_stop"));
    cJSON_Delete(j);
    free(text);
    return at;
}

/* What a resume from checkpoint dir at step S means, said before anything is written:
 * train.steps below S is refused; a finished run (S = train.steps and its summary.json
 * written at S) has nothing to do; a train.steps other than the checkpoint's changes the
 * learning-rate schedule from S on, which is printed here and logged (run_open). Every
 * rank reads the same checkpoint; rank 0's view of summary.json stands for all. */
static int resume_check(Run *r, const char *dir) {
    long step = r->ts.step, steps = r->cfg.train.steps;
    if (step > steps)
        return gma_errorf("%s is at step %ld, beyond train.steps %ld: nothing to resume (pass --set train.steps=N "
                          "with N >= %ld, or --out DIR for a new run)", dir, step, steps, step),
               TRAIN_BAD_INPUT;
    char sum[2100];
    snprintf(sum, sizeof sum, "%s/summary.json", r->o.run_dir);
    int finished = r->lead && summary_at(sum, step, step != steps);
    dist_bcast(&finished, sizeof finished, 0);
    if (finished) {
        r->finished = 1;
        if (r->lead)
            fprintf(stderr, "gmatrain: %s finished at step %ld (train.steps %ld%s): nothing to do; its results are in %s "
                            "(--set train.steps=N to train on)\n", r->o.run_dir, step, steps,
                    step < steps ? ", stopped early at train.stop_acc" : "", sum);
        return 0;
    }
    Config old;
    cfg_defaults(&old);
    if (ckpt_read_config(dir, &old) != 0 || old.train.steps == steps) return 0; /* no config: nothing to compare */
    r->sched_from = old.train.steps;
    r->lr_from = optim_lr(optim_cfg(&old), old.train.steps, step);
    r->lr_to = optim_lr(optim_cfg(&r->cfg), steps, step);
    if (!r->quiet) /* and always in metrics.jsonl */
        fprintf(stderr, "gmatrain: warning: train.steps %ld -> %ld on resume at step %ld: %s (lr %.3g -> %.3g); logged in "
                        "metrics.jsonl\n", (long)old.train.steps, steps, step,
                r->lr_from == r->lr_to      ? "the learning-rate schedule gives the same rate here" :
                steps > old.train.steps     ? "the learning-rate schedule is stretched from here" :
                                              "the learning-rate schedule is compressed from here",
                r->lr_from, r->lr_to);
    return 0;
}

/* The data directory a language model on shards opens: data.path as given for a fresh
 * run; on resume (the run or the data may have moved) the first that exists of
 * RUN/data.json's absolute path, data.path from here, data.path from the run folder's
 * parent or grandparent (lmmeta_find_data), unless --set data.path changed it. */
static int find_data(Run *r) {
    const char *p = r->cfg.data.path;
    snprintf(r->data_dir, sizeof r->data_dir, "%s", p);
    if (r->cfg.data.source != DATA_shards || !p[0] || !r->o.resume_dir) return 0;
    char recorded[CFG_STR];
    lmmeta_run_field(r->o.run_dir, "path", recorded, sizeof recorded);
    const char *override = recorded[0] && strcmp(recorded, p) ? p : NULL;
    return lmmeta_find_data(p, r->o.run_dir, override, "--set data.path=DIR", r->data_dir, sizeof r->data_dir);
}

/* A resume continues on the data its run was made on: the identity RUN/data.json records
 * (dataid.h) against the data found; another is refused, pointing to --init-from. A run
 * made before identities were kept is resumed unchecked, with a warning; its data.json
 * is then left as it is. */
static int check_identity(Run *r) {
    if (r->cfg.data.source != DATA_shards || !r->cfg.data.path[0] || !r->o.resume_dir) return 0;
    char ck[2048], run[2048], what[512];
    if (ckpt_resolve(r->o.resume_dir, ck, sizeof ck) != 0) return 0; /* said when the checkpoint is loaded */
    lmmeta_run_dir(ck, run, sizeof run);
    int rc = dataid_check(run, r->data_dir, NULL, 1, what, sizeof what);
    if (rc < 0) return TRAIN_BAD_INPUT;
    if (rc == 0) {
        if (!r->quiet)
            fprintf(stderr, "gmatrain: warning: %s/data.json records no data identity (a run made before identities were "
                            "kept): the data at %s is not checked against the checkpoints\n", run, r->data_dir);
        return 0;
    }
    if (rc == 2)
        return gma_errorf("%s is not the data %s was trained on: %s (%s/data.json); a resume continues on the same data: "
                          "to train these weights on other data, start a new run with --init-from %s",
                          r->data_dir, run, what, run, run),
               TRAIN_BAD_INPUT;
    r->data_checked = 1;
    return 0;
}

/* RUN/data.json: written for a new run (or a run directory without one); after a resume
 * whose data identity was checked only its location is brought up to date (the data
 * moved); RUN/tokenizer/ is never replaced in a run that has one. */
static int write_data_json(const Run *r) {
    const char *dir = r->o.run_dir;
    char p[2100];
    snprintf(p, sizeof p, "%s/data.json", dir);
    if (!r->o.resume_dir || !gma_path_exists(p)) return lmmeta_write_run(dir, r->cfg.data.path, r->data_dir);
    return r->data_checked ? lmmeta_update_location(dir, r->cfg.data.path, r->data_dir) : 0;
}

/* --init-from: the fresh model takes every tensor of the checkpoint whose name and shape
 * match (init_from.h); another width, head count or vocabulary is refused. Every rank
 * reads the same checkpoint; rank 0 reports. */
static int init_weights(Run *r) {
    char dir[2048];
    Config src;
    if (ckpt_resolve(r->o.init_from, dir, sizeof dir) != 0 || ckpt_read_config(dir, &src) != 0) return TRAIN_BAD_INPUT;
    const ModelCfg *a = &src.model, *b = &r->cfg.model;
    const char *key = a->d_model != b->d_model ? "model.d_model" : a->n_heads != b->n_heads ? "model.n_heads" :
                      a->vocab_size != b->vocab_size ? "model.vocab_size" : NULL;
    if (key) {
        int x = a->d_model != b->d_model ? a->d_model : a->n_heads != b->n_heads ? a->n_heads : a->vocab_size;
        int y = a->d_model != b->d_model ? b->d_model : a->n_heads != b->n_heads ? b->n_heads : b->vocab_size;
        return gma_errorf("--init-from %s: %s is %d there, %d here: weights of another width, head count or vocabulary "
                          "cannot be copied", dir, key, x, y),
               TRAIN_BAD_INPUT;
    }
    InitReport rep;
    if (init_from_ckpt(&r->m, dir, &src, &rep) != 0) return TRAIN_BAD_INPUT;
    if (!r->quiet) init_report_print(&r->m, &rep, stderr);
    if (r->lead) r->init_json = init_report_json(&r->m, &rep);
    memcpy(r->kmeans_only, rep.seed, sizeof r->kmeans_only); /* seeded at the first step (step_micro_batches) */
    r->fresh = rep.n_seed > 0;
    init_report_free(&rep);
    return 0;
}

/* train.state_from (with --init-from): the step, data RNG, tokens seen and the moments of the
 * tensors of the same name and shape of that checkpoint (ckpt_load_state); the step must
 * leave steps to train. Every rank reads the same checkpoint; rank 0 reports. */
static int take_state(Run *r) {
    const char *from = run_keys(&r->cfg)->state_from;
    if (!from[0]) return 0;
    char dir[2048];
    int n = 0;
    if (ckpt_resolve(from, dir, sizeof dir) != 0 || ckpt_load_state(&r->m, &r->ts, dir, &n) != 0)
        return gma_error_prefix("key train.state_from"), TRAIN_BAD_INPUT;
    if (r->ts.step >= r->cfg.train.steps)
        return gma_errorf("key train.state_from: %s is at step %ld, train.steps %d leaves nothing to train", dir,
                          r->ts.step, r->cfg.train.steps),
               TRAIN_BAD_INPUT;
    if (!r->quiet)
        fprintf(stderr, "gmatrain: training state from %s: step %ld (the schedule and data order continue there), "
                        "optimiser moments of %d tensors (the others from 0)\n", dir, r->ts.step, n);
    return 0;
}

/* The training state, fresh from the seed or from the checkpoint to resume; then every
 * replica starts from rank 0's parameters, moments and state (the same already: this
 * makes sure). */
static int open_state(Run *r) {
    TrainState *ts = &r->ts;
    *ts = (TrainState){.step = 0, .tokens_seen = 0, .best_valid = INFINITY, .best_acc = -1, .best_step = -1};
    rng_seed2(&ts->rng, (uint64_t)r->cfg.seed, 0x747261696eULL);
    if (r->o.resume_dir) {
        char dir[2048];
        int found = ckpt_resolve(r->o.resume_dir, dir, sizeof dir) == 0, ok = found && ckpt_load(&r->m, ts, dir) == 0;
        if (!ok && (found || !run_lock_busy(r->o.resume_dir))) ckpt_hint_intact(r->o.resume_dir);
        int rc = dist_agree(ok ? 0 : TRAIN_BAD_INPUT);
        if (rc) return rc;
        if (!r->quiet) fprintf(stderr, "resumed from %s at step %ld\n", dir, ts->step);
        if ((rc = resume_check(r, dir)) != 0) return rc;
        if (!r->finished && (rc = dist_agree(take_lock(r))) != 0) return rc;
        if (r->lead && !r->finished) ckpt_clean_run(r->o.run_dir); /* what a killed or failed save left behind */
    } else if (r->o.init_from) {
        int rc = dist_agree(init_weights(r));
        if (rc) return rc;
        if ((rc = dist_agree(take_state(r))) != 0) return rc;
    } else if (run_keys(&r->cfg)->state_from[0]) {
        return dist_agree((gma_errorf("key train.state_from: continues another run's training state in a run started "
                                      "with --init-from (the weights), not from scratch"), TRAIN_BAD_INPUT));
    }
    if (r->cfg.train.distill_teacher[0] && !r->finished) { /* a resume: the teacher it started with (run_distill.h) */
        r->teacher_built = distill_open(&r->m, &r->cfg, &r->teacher, &r->teacher_id, r->quiet) == 0;
        int ok = r->teacher_built && (!r->o.resume_dir || distill_check(r->o.run_dir, &r->teacher_id, r->quiet) == 0);
        int rc = dist_agree(ok ? 0 : TRAIN_BAD_INPUT);
        if (rc) return rc;
    }
    run_bcast_model(&r->m, 1);
    dist_bcast(ts, sizeof *ts, 0);
    return 0;
}

/* Text samples while training (language models): the prompt must encode before the run
 * directory is touched. */
static int open_sampler(Run *r) {
    if (r->cfg.train.sample_every <= 0) return 0;
    int ok = train_sampler_init(&r->smp, &r->cfg, r->quiet ? NULL : stderr) == 0;
    return dist_agree(ok ? 0 : TRAIN_BAD_INPUT);
}

/* Rank 0 creates the run directory and writes config.json, then opens metrics.jsonl
 * (appending on resume). A config.json that cannot be written stops the run before
 * metrics.jsonl is touched. */
static int open_outputs(Run *r) {
    if (!r->lead) return dist_agree(0);
    const char *dir = r->o.run_dir;
    int rc = take_lock(r);
    char probe[2100];
    snprintf(probe, sizeof probe, "%s/latest", dir);
    if (!rc && !r->o.resume_dir && access(probe, F_OK) == 0) /* checkpoints came while this run opened */
        rc = (gma_errorf("%s already holds checkpoints; pass --resume to continue it, or --out / name for a new run", dir),
              TRAIN_BAD_INPUT);
    if (!rc && gma_mkdirs(dir) != 0) rc = TRAIN_ERROR;
    if (!rc) {
        char *js = cfg_to_json(&r->cfg);
        if (run_write_json(dir, "config.json", js) != 0) rc = TRAIN_ERROR;
        free(js);
        /* what sampling and evaluation need from any folder: RUN/data.json, RUN/tokenizer/ */
        if (!rc && r->cfg.data.source == DATA_shards && r->cfg.data.path[0] && write_data_json(r) != 0)
            rc = TRAIN_ERROR;
        if (!rc && r->teacher_built && distill_record(dir, &r->teacher_id) != 0) rc = TRAIN_ERROR; /* RUN/distill.json */
        char *ij = !rc && r->init_json ? cJSON_Print(r->init_json) : NULL;
        if (ij && run_write_json(dir, "init_from.json", ij) != 0) rc = TRAIN_ERROR;
        free(ij);
    }
    char mpath[2100];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", dir);
    int dropped = 0;
    if (rc == 0 && r->o.resume_dir && run_metrics_trim(mpath, r->ts.step, &dropped) != 0) rc = TRAIN_ERROR;
    if (dropped && !r->quiet)
        fprintf(stderr, "gmatrain: %s: %d row%s after step %ld (or cut mid-way) removed: the steps are taken again\n", mpath,
                dropped, dropped == 1 ? "" : "s", r->ts.step);
    if (rc == 0 && !(r->mf = fopen(mpath, r->o.resume_dir ? "a" : "w"))) {
        gma_errorf("%s: cannot open for writing", mpath);
        rc = TRAIN_ERROR;
    }
    if (r->mf) setvbuf(r->mf, NULL, _IONBF, 0); /* a row that fails leaves nothing buffered to cut it later */
    return dist_agree(rc);
}

/* A resume of a run whose K was adapted (gma.adapt_every) builds the checkpoint's K per
 * layer, whatever a --config file says. */
static int resume_k(Run *r) {
    char dir[2048];
    Config old;
    cfg_defaults(&old);
    if (!r->o.resume_dir || ckpt_resolve(r->o.resume_dir, dir, sizeof dir) != 0 || ckpt_read_config(dir, &old) != 0)
        return 0; /* said when the checkpoint is loaded */
    if (!gma_adapt_on(&old)) return 0;
    return kadapt_sync_cfg(&r->cfg, &old) != 0 ? TRAIN_BAD_INPUT : 0;
}

static void print_banner(const Run *r) {
    const Config *c = &r->cfg;
    int B = c->train.batch_size, R = r->R;
    char ranks[160] = "";
    if (R > 1) snprintf(ranks, sizeof ranks, " | %d ranks, global batch %d, all-reduce by %s", R, B * R, dist_transport());
    char head[64] = ""; /* the language model's head in chunks of rows (model.head_chunk) */
    if (r->m.head_gw) snprintf(head, sizeof head, " (logits in chunks of %d rows)", r->m.head_rows);
    fprintf(stderr, "gmatrain: %s | %zu parameters | mixers %s%s | B=%d N=%d accum=%d%s | %s | activations %.1f MiB%s\n",
            c->name, model_param_count(&r->m), c->model.mixer.name[0], c->model.mixer.n > 1 ? ",..." : "", B, r->task.N,
            run_keys(c)->grad_accum, ranks, g_ops->name, r->m.act_bytes / 1048576.0, head);
}

int run_open(Run *r, const Config *cfg, const TrainerOptions *o) {
    memset(r, 0, sizeof *r);
    r->cfg = *cfg;
    r->o = *o;
    r->R = dist_size();
    g_fault_nan = getenv("GMA_FAULT_NAN_STEPS");
    r->lead = dist_rank() == 0;
    r->quiet = o->quiet || !r->lead;
    r->lock_fd = -1;
    run_metrics_reset();
    /* an existing run directory is locked at once; a new one when it is created */
    int rc = dist_agree(gma_path_exists(o->run_dir) ? take_lock(r) : 0); /* collective on every rank */
    if (rc) return rc;
    rc = dist_agree(find_data(r) != 0 ? TRAIN_BAD_INPUT : check_identity(r));
    if (rc) return rc;
    if ((rc = dist_agree(resume_k(r))) != 0) return rc;
    /* the data and the sampler's tokenizer from where the data is; config.json, the
     * checkpoints and data.json keep data.path as given */
    char user[CFG_STR];
    snprintf(user, sizeof user, "%s", r->cfg.data.path);
    snprintf(r->cfg.data.path, sizeof r->cfg.data.path, "%s", r->data_dir);
    if (!(rc = open_data_and_model(r)) && !(rc = open_state(r))) rc = open_sampler(r);
    snprintf(r->cfg.data.path, sizeof r->cfg.data.path, "%s", user);
    if (r->model_built) /* the model's copy goes into every checkpoint */
        snprintf(r->m.cfg.data.path, sizeof r->m.cfg.data.path, "%s", user);
    if (rc || (rc = r->finished ? 0 : open_outputs(r))) return rc;
    if (!r->quiet && !r->finished) print_banner(r);
    if (r->sched_from) {
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "step", (double)r->ts.step);
        cJSON_AddStringToObject(row, "event", "schedule_change");
        cJSON_AddNumberToObject(row, "steps_before", (double)r->sched_from);
        cJSON_AddNumberToObject(row, "steps_after", r->cfg.train.steps);
        cJSON_AddNumberToObject(row, "lr_before", r->lr_from);
        cJSON_AddNumberToObject(row, "lr_after", r->lr_to);
        run_metrics_row(r->mf, row);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    r->signals_set = 1;
    g_stop = 0;
    g_ack = r->lead;
    health_init(&r->hm, &r->m);
    r->gma_layers = model_monitor(&r->m, &r->mon);
    r->div_on = model_aux_on(&r->m);
    /* copied routing is not re-fitted: after --init-from only the layers whose routing is new */
    if (o->init_from) r->m.kmeans_only = r->fresh ? r->kmeans_only : NULL;
    else r->fresh = r->ts.step == 0 && !o->resume_dir;
    r->t_start = gma_now();
    r->elapsed0 = r->ts.elapsed_s;
    r->step0 = r->ts.step;
    r->last_loss = NAN;
    return TRAIN_OK;
}

int run_training(const Run *r) { return r->ts.step < r->cfg.train.steps && !stopping(r) && !r->early; }

/* ---------------- step ---------------- */

/* k-means on the first batch's query rows (docs/model.md §5), then the forward again;
 * with several ranks every rank fits the rows of all (gathered in the order of the
 * global batch) with the same seed, and rank 0's result is copied anyway. */
static int kmeans_init(Run *r, LossStats *st) {
    Rng krng;
    rng_seed2(&krng, (uint64_t)r->cfg.seed, 0x6b6d65616e73ULL);
    if (r->task.kmeans(&r->task, &r->m, &krng) != 0) return run_fatal(TRAIN_ERROR);
    run_bcast_model(&r->m, 0);
    if (r->task.reforward(&r->task, &r->m, r->cur.step, st) != 0) return run_fatal(TRAIN_ERROR);
    if (!r->quiet) fprintf(stderr, "gmatrain: k-means initialisation of the GMA routing/memory done\n");
    return 0;
}

/* The micro-batches of this rank: forward, backward, buffer updates; a non-finite loss
 * marks the step bad and skips the rest. */
static int step_micro_batches(Run *r) {
    const int accum = run_keys(&r->cfg)->grad_accum;
    RunStep *s = &r->cur;
    for (int a = 0; a < accum; a++) {
        LossStats st;
        double ntok = 0;
        if (r->task.train_forward(&r->task, &r->m, &r->ts.rng, s->step * accum + a, s->step, &st, &ntok) != 0)
            return run_fatal(TRAIN_BAD_INPUT);
        if (r->fresh && a == 0 && model_wants_kmeans(&r->m)) {
            int rc = kmeans_init(r, &st);
            r->m.kmeans_only = NULL;
            if (rc) return rc;
        }
        r->fresh = 0;
        if (r->gma_layers && !r->hm.have_norm0) health_baseline(&r->hm, &r->m);
        double l = st.count > 0 ? st.loss_sum / st.count : 0;
        if (fault_nan(s->step)) l = NAN;
        if (!isfinite(l)) {
            s->bad = 1;
            s->loss = l;
            break;
        }
        s->loss += l / accum;
        if (r->div_on) s->div += model_aux_loss(&r->m, NULL) / accum;
        if (r->teacher_built) s->kl += (st.count > 0 ? st.kl_sum / st.count : 0) / accum;
        for (int l = 0; l < r->m.L && l < CFG_MAX_LAYERS; l++) {
            double d;
            if (mixer_auto_transfer(r->m.blocks[l].mixer, &d)) r->win_tr[l] += d, r->win_tr_n[l]++;
        }
        s->tokens += ntok;
        /* with R ranks each backward carries 1/R, so the sum over ranks is the mean */
        model_backward(&r->m, 1.0 / ((double)accum * r->R));
        model_update_buffers(&r->m);
    }
    return 0;
}

/* R > 1: the step's scalars in one reduction (the loss becomes the mean over ranks,
 * tokens the global count); the gradients only when every rank is finite. */
static void step_all_reduce(Run *r) {
    RunStep *s = &r->cur;
    int R = r->R;
    if (R == 1) return;
    double sc[7] = {s->bad, s->loss, s->div, s->tokens, g_stop != 0, s->kl, r->lead && run_metrics_failure()};
    dist_sum_double(sc, 7);
    s->kl = sc[5] / R;
    r->metrics_failed_all = sc[6] > 0;
    s->bad = sc[0] > 0;
    s->loss = sc[1] / R;
    s->div = sc[2] / R;
    s->tokens = sc[3];
    r->stop_all = sc[4] > 0;
    if (!s->bad) dist_sum_real_backend(r->m.grads, r->m.pt.total);
    /* a rank whose loss was not finite skipped its remaining micro-batches and their
     * draws: give every rank rank 0's data RNG so the global batches stay the same */
    else dist_bcast(&r->ts.rng, sizeof r->ts.rng, 0);
    sync_buffers(&r->m);
}

/* A refused update: logged; train.max_bad_steps in a row stop the run, leaving the last good
 * checkpoint. */
static int step_refuse(Run *r) {
    const RunStep *s = &r->cur;
    r->bad_row++;
    const char *what = isfinite(s->loss) ? "grad_norm" : "loss";
    cJSON *row = cJSON_CreateObject();
    cJSON_AddNumberToObject(row, "step", (double)s->step);
    cJSON_AddStringToObject(row, "event", "nonfinite");
    cJSON_AddStringToObject(row, "what", what);
    cJSON_AddNumberToObject(row, "in_a_row", r->bad_row);
    run_metrics_row(r->mf, row);
    if (r->lead)
        fprintf(stderr, "%sstep %ld: non-finite %s, update refused (%d in a row)\n", r->o.progress_tty ? "\n" : "", s->step,
                isfinite(s->loss) ? "gradient norm" : "loss", r->bad_row);
    if (r->bad_row >= run_keys(&r->cfg)->max_bad_steps) {
        gma_errorf("stopping: %d non-finite steps in a row (train.max_bad_steps); the last checkpoint is kept", r->bad_row);
        return TRAIN_NONFINITE;
    }
    return 0;
}

static int due(long step, int every) { return every > 0 && step % every == 0; }

int run_step(Run *r) {
    const TrainCfg *tc = &r->cfg.train;
    RunStep *s = &r->cur;
    *s = (RunStep){.step = r->ts.step};
    double t0 = gma_now();
    model_zero_grad(&r->m);
    int rc = step_micro_batches(r);
    if (rc) return rc;
    step_all_reduce(r);
    s->gn = s->bad ? NAN : optim_grad_norm(&r->m);
    /* rank 0's norm everywhere: the clip factor must not depend on a rank's thread count */
    if (r->R > 1) dist_bcast(&s->gn, sizeof s->gn, 0);
    if (!isfinite(s->gn)) s->bad = 1;
    /* the recall diagnosis reads this step's gradients before the update (routing_diag.h) */
    if (!s->bad && due(s->step + 1, gma_cfg_diag_every(&r->cfg)))
        routing_diag(&r->m, s->step + 1, r->lead ? r->mf : NULL);
    s->lr = optim_lr(optim_cfg(&r->cfg), tc->steps, s->step);
    if (s->bad) {
        if ((rc = step_refuse(r)) != 0) return rc;
    } else {
        r->bad_row = 0;
        optim_step(&r->m, optim_cfg(&r->cfg), s->step + 1, s->lr, s->gn);
        r->last_loss = s->loss;
        r->ts.win_loss += s->loss;
        r->ts.win_div += s->div;
        r->ts.win_kl += s->kl;
        r->ts.win_n++;
    }
    r->ts.step = s->step + 1;
    r->ts.tokens_seen += s->tokens;
    double dt = gma_now() - t0;
    r->train_time += dt;
    r->ts.train_seconds += dt;
    r->ts.elapsed_s = run_elapsed(r);
    return 0;
}

/* ---------------- periodic ---------------- */

/* The progress line (step, loss, lr, gradient norm, tokens/s, ETA); after the first step
 * of the session also a warning when the ETA passes 24 hours. */
static void progress_line(const Run *r, double loss) {
    if (r->quiet) return;
    const TrainCfg *tc = &r->cfg.train;
    const TrainState *ts = &r->ts;
    double tps = run_tps(r);
    char eta[32];
    double per = r->train_time / (double)(ts->step - r->step0), left = per * (double)(tc->steps - ts->step);
    run_fmt_eta(eta, sizeof eta, left);
    fprintf(stderr, "%sstep %6ld/%d | loss %.4f | lr %.2e | gnorm %.3f | %.0f tok/s | ETA %s%s",
            r->o.progress_tty ? "\r" : "", ts->step, tc->steps, loss, r->cur.lr, r->cur.gn, tps, eta,
            r->o.progress_tty ? "   " : "\n");
    if (ts->step == r->step0 + 1 && left > 86400)
        fprintf(stderr, "%sgmatrain: warning: ETA %s, more than 24 hours for %ld steps at %.0f tok/s on %s\n",
                r->o.progress_tty ? "\n" : "", eta, tc->steps - ts->step, tps, g_ops->name);
}

/* The metrics row of the log window and the progress line. */
static void log_window(Run *r) {
    const TrainState *ts = &r->ts;
    double tps = run_tps(r);
    double loss = r->ts.win_n ? r->ts.win_loss / r->ts.win_n : NAN;
    cJSON *row = cJSON_CreateObject();
    cJSON_AddNumberToObject(row, "step", (double)ts->step);
    cJSON_AddNumberToObject(row, "loss", loss);
    if (r->div_on) cJSON_AddNumberToObject(row, "div_loss", r->ts.win_n ? r->ts.win_div / r->ts.win_n : NAN);
    if (r->teacher_built) { /* the parts of the distilled loss: loss (the CE) + weight T^2 kl */
        double kl = r->ts.win_n ? r->ts.win_kl / r->ts.win_n : NAN, T = r->cfg.train.distill_temperature;
        cJSON_AddNumberToObject(row, "ce", loss);
        cJSON_AddNumberToObject(row, "kl", kl);
        cJSON_AddNumberToObject(row, "distill_loss", loss + r->cfg.train.distill_weight * T * T * kl);
    }
    cJSON *tr = NULL; /* "transfer": {"L": the mean attention-transfer loss of auto layer L} */
    for (int l = 0; l < r->m.L && l < CFG_MAX_LAYERS; l++) {
        if (!r->win_tr_n[l]) continue;
        if (!tr) tr = cJSON_AddObjectToObject(row, "transfer");
        char key[16];
        snprintf(key, sizeof key, "%d", l);
        cJSON_AddNumberToObject(tr, key, r->win_tr[l] / r->win_tr_n[l]);
        r->win_tr[l] = 0, r->win_tr_n[l] = 0;
    }
    cJSON_AddNumberToObject(row, "lr", r->cur.lr);
    cJSON_AddNumberToObject(row, "grad_norm", r->cur.gn);
    cJSON_AddNumberToObject(row, "tokens_per_s", tps);
    cJSON_AddNumberToObject(row, "elapsed_s", run_elapsed(r));
    run_metrics_row(r->mf, row);
    progress_line(r, loss);
    r->ts.win_loss = 0;
    r->ts.win_div = 0;
    r->ts.win_kl = 0;
    r->ts.win_n = 0;
}

/* The routing-health check (health.h). Every rank checks the routing statistics summed
 * over ranks (the same numbers); rank 0 logs and prints, and its decision and
 * parameters stand for all. */
static int run_monitor(Run *r) {
    long alerts0 = r->hm.alerts;
    int collapse = health_check(&r->hm, &r->m, r->ts.step, r->lead ? r->mf : NULL, r->quiet, (uint64_t)r->cfg.seed);
    if (r->R > 1) {
        dist_bcast(&collapse, sizeof collapse, 0);
        /* after a re-seed (an alert with on_collapse "reinit"), rank 0's parameters and
         * moments; the alert count is the same on every rank */
        if (r->hm.alerts != alerts0 && r->mon.reinit) run_bcast_model(&r->m, 1);
    }
    if (collapse < 0) return TRAIN_ERROR; /* a re-seed failed: said in gma_error, parameters unchanged */
    if (collapse) {
        if (run_save_ckpt(&r->m, &r->ts, r->o.run_dir, run_keys(&r->cfg)->keep_checkpoints, NULL) != 0) return TRAIN_ERROR;
        gma_errorf("stopping at step %ld: routing collapse alert (gma.on_collapse \"stop\"); checkpoint written to %s/latest",
                   r->ts.step, r->o.run_dir);
        return TRAIN_COLLAPSE;
    }
    return 0;
}

/* The structural adaptation of K (kadapt.h): the same on every rank (the loads summed over
 * ranks); after a rebuild the monitor starts afresh on the new shapes and the replicas
 * take rank 0's model, as after a re-seed. */
static int run_adapt(Run *r) {
    KadaptTally t;
    int rc = kadapt_step(&r->m, r->ts.step, r->lead ? r->mf : NULL, &t);
    if (rc < 0) return TRAIN_ERROR;
    if (rc == 0) return 0;
    health_free(&r->hm);
    health_init(&r->hm, &r->m);
    r->m.kmeans_only = NULL;
    if (kadapt_sync_cfg(&r->cfg, &r->m.cfg) != 0) return TRAIN_ERROR;
    if (r->R > 1) run_bcast_model(&r->m, 1);
    if (!r->quiet)
        fprintf(stderr, "%sgmatrain: step %ld: K adapted in %d layer%s (%d pruned, %d merged, %d split; metrics.jsonl)\n",
                r->o.progress_tty ? "\n" : "", r->ts.step, t.layers_changed, t.layers_changed == 1 ? "" : "s", t.pruned,
                t.merged, t.split);
    return 0;
}

/* Validation on train.eval_batches batches (a classifier keeps RUN/best). An evaluation
 * that fails here is skipped; the final one (run_finish) is not. */
static int validate(Run *r) {
    EvalResult e;
    if (r->task.eval(&r->task, &r->m, SPLIT_VALID, run_keys(&r->cfg)->eval_batches, &e) != 0) return 0;
    run_metrics_row(r->mf, run_eval_row(r->ts.step, "valid", &e, &r->task));
    if (!r->quiet) run_print_eval("eval", "valid", r->ts.step, &e, &r->task, r->o.progress_tty);
    if (e.loss < r->ts.best_valid) r->ts.best_valid = e.loss;
    double stop = run_keys(&r->cfg)->stop_acc;
    if (stop > 0 && e.acc > stop) { /* Zoology's early stop (docs/mqar.md) */
        r->early = 1;
        cJSON *row = cJSON_CreateObject();
        cJSON_AddNumberToObject(row, "step", (double)r->ts.step);
        cJSON_AddStringToObject(row, "event", "early_stop");
        cJSON_AddNumberToObject(row, "valid_acc", e.acc);
        cJSON_AddNumberToObject(row, "stop_acc", stop);
        run_metrics_row(r->mf, row);
        if (!r->quiet)
            fprintf(stderr, "gmatrain: step %ld: valid accuracy %.4f above train.stop_acc %g: training ends here\n",
                    r->ts.step, e.acc, stop);
    }
    if (r->task.classify) return clstask_keep_best(&r->m, &r->ts, r->o.run_dir, e.acc, r->quiet);
    return 0;
}

static int sample(Run *r) {
    if (r->o.progress_tty && !r->quiet) fprintf(stderr, "\n");
    if (train_sampler_run(&r->smp, &r->m, r->ts.step, r->mf, r->quiet ? NULL : stderr) != 0) return run_fatal(TRAIN_ERROR);
    return 0;
}

/* A metrics row that could not be written (a full disk) stops the run: TRAIN_ERROR. Only
 * the lead writes rows; with R > 1 the ranks learn of a failure from the next step's
 * reduction of the scalars (step_all_reduce: one step later, no broadcast per step), and
 * after the last step (final) from one broadcast. */
static int metrics_check(Run *r, int final) {
    const char *why = r->lead ? run_metrics_failure() : NULL;
    if (why && !r->metrics_fail_step) r->metrics_fail_step = r->ts.step;
    int failed = why != NULL;
    if (r->R > 1 && final) dist_bcast(&failed, sizeof failed, 0);
    else if (r->R > 1) failed = r->metrics_failed_all;
    if (!failed) return 0;
    if (why)
        gma_errorf("%s/metrics.jsonl: cannot write a row at step %ld: %s; the run stops (the last checkpoint is %s/latest)",
                   r->o.run_dir, r->metrics_fail_step, why, r->o.run_dir);
    return TRAIN_ERROR;
}

/* What falls due after a step (run.h). */
static int periodic(Run *r) {
    const TrainCfg *tc = &r->cfg.train;
    const RunKeys *rk = run_keys(&r->cfg);
    long step = r->ts.step;
    int rc = 0, last = step == tc->steps;
    if (due(step, rk->log_every) || last) log_window(r);
    else if (step == r->step0 + 1 && !r->cur.bad) progress_line(r, r->cur.loss); /* the first: speed and ETA at once */
    if (r->gma_layers && !r->cur.bad && due(step, r->mon.every) && (rc = run_monitor(r)) != 0) return rc;
    if (r->gma_layers && !r->cur.bad) health_drop(&r->m, step, r->lead ? r->mf : NULL, last);
    if (r->gma_layers && !r->cur.bad && due(step, r->mon.adapt_every) && (rc = run_adapt(r)) != 0) return rc;
    if (due(step, rk->eval_every) && !last && r->task.have[SPLIT_VALID] && (rc = validate(r)) != 0) return rc;
    if (due(step, tc->sample_every) && r->lead && (rc = sample(r)) != 0) return rc;
    if (due(step, rk->checkpoint_every) && !last)
        return run_save_ckpt(&r->m, &r->ts, r->o.run_dir, rk->keep_checkpoints, NULL);
    return 0;
}

int run_periodic(Run *r) {
    int rc = periodic(r);
    return rc ? rc : metrics_check(r, 0);
}

/* ---------------- finish ---------------- */

static int finish_interrupted(Run *r) {
    if (run_save_ckpt(&r->m, &r->ts, r->o.run_dir, run_keys(&r->cfg)->keep_checkpoints, NULL) != 0) return TRAIN_ERROR;
    if (r->lead) {
        if (g_stop)
            fprintf(stderr, "gmatrain: interrupted by signal %d at step %ld; checkpoint written to %s/latest (resume with --resume)\n",
                    (int)g_stop, r->ts.step, r->o.run_dir);
        else
            fprintf(stderr,
                    "gmatrain: interrupted by a signal to another rank at step %ld; checkpoint written to %s/latest (resume with --resume)\n",
                    r->ts.step, r->o.run_dir);
    }
    return TRAIN_INTERRUPTED;
}

/* testing hook: GMA_FAULT_FINAL_EVAL=valid|test makes the final evaluation of that split fail */
static int fault_final_eval(int s) {
    const char *f = getenv("GMA_FAULT_FINAL_EVAL");
    if (!f || strcmp(f, g_split[s])) return 0;
    return gma_errorf("fault injected by GMA_FAULT_FINAL_EVAL");
}

/* The final model on the valid and test splits (whole, or a language model's first
 * train.final_eval_batches batches); have[s] for each that was
 * evaluated. Returns the first split whose evaluation failed (gma_error), or -1. */
static int final_eval(Run *r, EvalResult fin[3], int have[3]) {
    for (int s = SPLIT_VALID; s <= SPLIT_TEST; s++) {
        if (!r->task.have[s]) continue;
        long nb = r->task.classify ? 0 : run_keys(&r->cfg)->final_eval_batches;
        if (r->task.eval(&r->task, &r->m, s, nb, &fin[s]) != 0 || fault_final_eval(s)) return s;
        have[s] = 1;
    }
    return -1;
}

static cJSON *summary_head(const Run *r) {
    const TrainState *ts = &r->ts;
    cJSON *sum = cJSON_CreateObject();
    cJSON_AddStringToObject(sum, "name", r->cfg.name);
    cJSON_AddNumberToObject(sum, "steps", (double)ts->step);
    if (r->early) cJSON_AddTrueToObject(sum, "early_stop"); /* train.stop_acc ended it */
    cJSON_AddNumberToObject(sum, "parameters", (double)model_param_count(&r->m));
    cJSON_AddNumberToObject(sum, "final_train_loss", r->last_loss);
    cJSON_AddNumberToObject(sum, "tokens_seen", ts->tokens_seen);
    cJSON_AddNumberToObject(sum, "train_seconds", ts->train_seconds);
    if (isfinite(ts->best_valid)) cJSON_AddNumberToObject(sum, "best_valid", ts->best_valid);
    cJSON_AddNumberToObject(sum, "tokens_per_s", run_tps(r));
    cJSON_AddStringToObject(sum, "device", g_ops->name);
    if (r->R > 1) {
        cJSON_AddNumberToObject(sum, "ranks", r->R);
        cJSON_AddNumberToObject(sum, "global_batch_size", (double)r->cfg.train.batch_size * r->R);
        cJSON_AddStringToObject(sum, "allreduce", dist_transport());
    }
    return sum;
}

/* A classifier's test split from its best-validation checkpoint (cls_task.h), into the
 * metrics and the summary. */
static int finish_best(Run *r, cJSON *sum) {
    const TrainState *ts = &r->ts;
    int have_best;
    ClsEval ce;
    int got = clstask_test_at_best(&r->task.cls, &r->m, ts, r->o.run_dir, &have_best, &ce);
    if (got < 0) return TRAIN_ERROR;
    if (got) {
        EvalResult e;
        task_cls_result(&ce, &e);
        cJSON *row = run_eval_row(ts->best_step, "test", &e, &r->task);
        cJSON_AddStringToObject(row, "checkpoint", "best");
        run_metrics_row(r->mf, row);
        cJSON_AddNumberToObject(sum, "test_acc_at_best", e.acc);
        cJSON_AddNumberToObject(sum, "test_loss_at_best", e.loss);
        if (!r->quiet)
            fprintf(stderr, "best (step %ld, valid acc %.4f) | test loss %.4f | test acc %.4f\n", ts->best_step, ts->best_acc,
                    e.loss, e.acc);
    }
    if (have_best) {
        cJSON_AddNumberToObject(sum, "best_valid_acc", ts->best_acc);
        cJSON_AddNumberToObject(sum, "best_step", (double)ts->best_step);
    }
    return 0;
}

/* The test accuracy a classifier reports (train.report): of RUN/best or of the final model
 * (LRA reports the last one), as summary.json's report, reported_test_acc, reported_step. */
static void report_test(const Run *r, cJSON *sum, const EvalResult *fin_test) {
    int last = run_keys(&r->cfg)->report == REPORT_LAST;
    const cJSON *at_best = cJSON_GetObjectItemCaseSensitive(sum, "test_acc_at_best");
    double acc = last ? fin_test->acc : at_best ? at_best->valuedouble : NAN;
    if (isnan(acc)) return; /* no best checkpoint was scored */
    cJSON_AddStringToObject(sum, "report", last ? "last" : "best");
    cJSON_AddNumberToObject(sum, "reported_test_acc", acc);
    cJSON_AddNumberToObject(sum, "reported_step", (double)(last ? r->ts.step : r->ts.best_step));
    if (!r->quiet) fprintf(stderr, "reported (%s checkpoint, step %ld) | test acc %.4f\n", last ? "last" : "best",
                           last ? r->ts.step : r->ts.best_step, acc);
}

/* The end of a run on the screen: steps, time, speed, the best and final results, where
 * the checkpoint and the logs are. */
static void print_summary(const Run *r, const EvalResult fin[3], const int have[3]) {
    const TrainState *ts = &r->ts;
    double tps = run_tps(r);
    char took[32], res[512] = "";
    run_fmt_eta(took, sizeof took, run_elapsed(r));
    int n = 0;
    if (r->task.classify && ts->best_step >= 0)
        n += snprintf(res + n, sizeof res - n, " | best valid acc %.4f (step %ld)", ts->best_acc, ts->best_step);
    else if (isfinite(ts->best_valid) || have[SPLIT_VALID]) { /* the final evaluation counts too */
        double best = have[SPLIT_VALID] && !(fin[SPLIT_VALID].loss >= ts->best_valid) ? fin[SPLIT_VALID].loss : ts->best_valid;
        n += snprintf(res + n, sizeof res - n, " | best valid loss %.4f", best);
    }
    for (int s = SPLIT_VALID; s <= SPLIT_TEST; s++)
        if (have[s]) {
            n += snprintf(res + n, sizeof res - n, " | final %s loss %.4f", g_split[s], fin[s].loss);
            if (r->task.classify || r->task.report_acc) n += snprintf(res + n, sizeof res - n, " acc %.4f", fin[s].acc);
            else n += snprintf(res + n, sizeof res - n, " ppl %.3f", fin[s].ppl);
        }
    fprintf(stderr, "gmatrain: done: %ld steps in %s, %.0f tok/s%s\n", ts->step, took, tps, res);
    fprintf(stderr, "gmatrain: checkpoint %s/latest | logs %s/metrics.jsonl, %s/summary.json\n", r->o.run_dir,
            r->o.run_dir, r->o.run_dir);
}

int run_finish(Run *r) {
    if (r->finished) return 0; /* said in resume_check */
    if (r->o.progress_tty && !r->quiet) fprintf(stderr, "\n");
    if (stopping(r)) return finish_interrupted(r);
    EvalResult fin[3];
    int have[3] = {0, 0, 0};
    int failed = final_eval(r, fin, have);
    char why[1024] = "";
    if (failed >= 0) snprintf(why, sizeof why, "%s", gma_error());
    /* a classifier keeps the best validation accuracy, the final model included */
    if (r->task.classify && have[SPLIT_VALID] && clstask_keep_best(&r->m, &r->ts, r->o.run_dir, fin[SPLIT_VALID].acc, r->quiet))
        return TRAIN_ERROR;
    /* the final evaluation counts for best_valid, in the checkpoint too (a resume goes on from it) */
    if (have[SPLIT_VALID] && fin[SPLIT_VALID].loss < r->ts.best_valid) r->ts.best_valid = fin[SPLIT_VALID].loss;
    /* the trained model is kept even when its evaluation failed */
    if (run_save_ckpt(&r->m, &r->ts, r->o.run_dir, run_keys(&r->cfg)->keep_checkpoints, NULL) != 0) return TRAIN_ERROR;
    if (failed >= 0) {
        gma_errorf("final evaluation of the %s split failed: %s; checkpoint written to %s/latest, no summary.json",
                   g_split[failed], why, r->o.run_dir);
        return TRAIN_ERROR;
    }
    cJSON *sum = summary_head(r);
    for (int s = SPLIT_VALID; s <= SPLIT_TEST; s++) {
        if (!have[s]) continue;
        cJSON *row = run_eval_row(r->ts.step, g_split[s], &fin[s], &r->task);
        cJSON_AddItemToObject(sum, g_split[s], cJSON_Duplicate(row, 1));
        run_metrics_row(r->mf, row);
        if (!r->quiet) run_print_eval("final", g_split[s], r->ts.step, &fin[s], &r->task, 0);
    }
    int rc = r->task.classify ? finish_best(r, sum) : 0;
    if (!rc && r->task.classify && have[SPLIT_TEST]) report_test(r, sum, &fin[SPLIT_TEST]);
    if (!rc) rc = metrics_check(r, 1);
    char *text = rc ? NULL : cJSON_Print(sum);
    cJSON_Delete(sum);
    if (text && r->lead && run_write_json(r->o.run_dir, "summary.json", text) != 0) rc = TRAIN_ERROR;
    free(text);
    if (!rc && !r->quiet) print_summary(r, fin, have);
    return rc;
}

/* ---------------- close ---------------- */

void run_close(Run *r) {
    /* every way here is taken by all ranks together (a rank-local error ends the job in
     * run_fatal); wait for rank 0's last writes before any rank leaves */
    dist_barrier();
    health_free(&r->hm);
    train_sampler_free(&r->smp);
    if (r->mf) fclose(r->mf);
    if (r->model_built) model_free(&r->m);
    if (r->teacher_built) model_free(&r->teacher);
    if (r->task_opened) r->task.close(&r->task);
    run_lock_release(r->lock_fd);
    cJSON_Delete(r->init_json);
    if (r->signals_set) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
    }
}
