/* train_opts.h: what gmatrain hands the training run (TrainerOptions) and the exit codes a
 * run ends with. The run's stages (run.h) and the tasks share them with trainer.h, which
 * includes this header, so none of them needs the trainer's entry point. */
#ifndef GMA_TRAIN_OPTS_H
#define GMA_TRAIN_OPTS_H

typedef struct TrainerOptions {
    const char *run_dir;     /* where config.json, metrics.jsonl, checkpoints go */
    const char *resume_dir;  /* checkpoint (or run dir) to resume from, NULL = fresh */
    const char *init_from;   /* a fresh run starts from this checkpoint's weights (init_from.h), NULL = none */
    int progress_tty;        /* 1: one updating progress line; 0: plain periodic lines */
    int quiet;
} TrainerOptions;

/* Exit codes of trainer_run (and gmatrain). */
enum { TRAIN_OK = 0, TRAIN_ERROR = 1, TRAIN_BAD_INPUT = 2, TRAIN_NONFINITE = 3, TRAIN_COLLAPSE = 4, TRAIN_INTERRUPTED = 130 };
#endif
