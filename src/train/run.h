/* run.h: one training run as an object, taken through its stages by trainer_run():
 *
 *   run_open      data (on resume: of the run's identity, dataid.h), model (fresh,
 *                 resumed, or --init-from another run's weights), text sampler, run
 *                 directory (its lock, config.json, data.json, metrics.jsonl), signals
 *   run_step      one optimiser step: micro-batches, all-reduce, non-finite guard, update
 *   run_periodic  what falls due after a step: log row, routing monitor, validation,
 *                 text sample, checkpoint
 *   run_finish    interrupted: checkpoint; else final evaluation, checkpoint, summary.json
 *   run_close     the one cleanup path, from whatever stage the run reached
 *
 * Each stage returns 0 or an exit code of trainer.h with the message in gma_error();
 * after a code only run_close follows. Every stage is entered by all data-parallel ranks
 * together: a failure is agreed on (dist_agree) or ends the job (run_fatal). */
#ifndef GMA_RUN_H
#define GMA_RUN_H
#include <cjson/cJSON.h>
#include <stdio.h>

#include "model/checkpoint.h"
#include "train/health.h"
#include "train/run_distill.h"
#include "train/run_task.h"
#include "train/train_sample.h"
#include "train/train_opts.h"

/* The step being taken (run_step) and read by run_periodic. */
typedef struct RunStep {
    long step;     /* optimiser steps completed before it */
    double loss;   /* mean training loss (over micro-batches and ranks) */
    double div;    /* mean diversity loss (gma.div_weight > 0) */
    double kl;     /* distillation: mean KL(teacher || model) per scored token at train.distill.temperature */
    double tokens; /* tokens of the global batch */
    double gn, lr; /* gradient norm before clipping, learning rate */
    int bad;       /* update refused (non-finite loss or norm) */
} RunStep;

typedef struct Run {
    Config cfg;          /* resolved (the data fills vocabulary and lengths) */
    TrainerOptions o;
    int R, lead, quiet;  /* ranks; rank 0 leads (writes and prints), the others are quiet */
    Task task;
    Model m;
    TrainState ts;
    TrainSampler smp;
    HealthMon hm;
    FILE *mf;            /* metrics.jsonl (rank 0 only) */
    int lock_fd;         /* RUN/.lock held by rank 0 (run_lock.h), -1 when not held */
    char data_dir[CFG_STR]; /* the data directory opened (find_data: data.path, or where a resumed run's data moved) */
    int data_checked;    /* --resume: the data's identity matched RUN/data.json's */
    cJSON *init_json;    /* --init-from: what was copied (rank 0; RUN/init_from.json) */
    int task_opened, model_built, signals_set;
    MixerMonitor mon; /* the routing monitor's settings (model_monitor) */
    int gma_layers, div_on;
    int fresh;           /* no step taken yet in a fresh run: k-means pending */
    uint8_t kmeans_only[CFG_MAX_LAYERS]; /* --init-from: the layers whose routing k-means seeds (Model.kmeans_only) */
    int stop_all;        /* R > 1: a signal reached some rank (agreed at each step) */
    /* a metrics row that failed (metrics_check): the step the lead first saw it at (0: none),
     * and with R > 1 whether the lead had, from the next step's reduction of the scalars
     * (no collective of its own each step) */
    long metrics_fail_step;
    int metrics_failed_all;
    int bad_row;         /* refused updates in a row */
    RunStep cur;
    long step0;          /* step at open */
    double t_start, train_time, last_loss; /* train_time: of this session (the ETA); totals in ts */
    double elapsed0;     /* ts.elapsed_s at open */
    /* --resume: the run had finished already (summary.json, step = train.steps): nothing
     * is trained, evaluated or written; sched_from: train.steps of the checkpoint when the
     * command line changed it (0: unchanged), lr_from/lr_to the rate at the resumed step
     * under the old and the new schedule */
    int finished;
    /* train.stop_acc reached at a validation: the run ends at that step as at its last */
    int early;
    long sched_from;
    double lr_from, lr_to;
    /* the log window's sums of each auto layer's attention-transfer loss (mixer_auto_transfer,
     * this rank's micro-batches since the window opened) and their counts */
    double win_tr[CFG_MAX_LAYERS];
    long win_tr_n[CFG_MAX_LAYERS];
    Model teacher;       /* train.distill.teacher (distilling when teacher_built) */
    int teacher_built;
    DistillId teacher_id; /* the teacher's checkpoint, step and digest (RUN/distill.json) */
} Run;

int run_open(Run *r, const Config *cfg, const TrainerOptions *o);
/* 1 while steps remain and no signal asked the run to stop. */
int run_training(const Run *r);
int run_step(Run *r);
int run_periodic(Run *r);
int run_finish(Run *r);
void run_close(Run *r);
#endif
