/* checkpoint.h: checkpoints as safetensors (docs/model.md §7).
 *
 * A checkpoint is a directory RUN/ckpt_<step>/ with model.safetensors (every tensor of
 * the parameter table by name, buffers included; __metadata__: format, config (resolved
 * JSON), step, rng, tokens_seen) and optim.safetensors (AdamW/SGD moments m.<name>,
 * v.<name>; __metadata__: step). Files are written to temporary names, fsynced and
 * renamed; RUN/latest (a symbolic link) is switched only after both are complete, so an
 * interrupted save leaves the previous checkpoint intact. */
#ifndef GMA_CHECKPOINT_H
#define GMA_CHECKPOINT_H
#include "core/rng.h"
#include "model/model.h"

typedef struct TrainState {
    long step;          /* optimiser steps completed */
    Rng rng;            /* trainer RNG */
    double tokens_seen;
    double best_valid;  /* best validation loss so far (INFINITY = none) */
    double best_acc;    /* classifier: best validation accuracy so far (-1 = none) */
    long best_step;     /* classifier: step of the RUN/best checkpoint (-1 = none) */
    /* the open log window (sums over its good steps), so a resumed run logs the row an
     * uninterrupted one would; and the run's clocks over all its sessions */
    double win_loss, win_div;
    double win_kl; /* distillation: the window's summed KL (0 without a teacher) */
    long win_n;
    double train_seconds;  /* in training steps */
    double elapsed_s;      /* wall time since the run started */
    double tokens_untimed; /* tokens of sessions before the clocks were kept (not in train_seconds) */
} TrainState;

/* Save to run_dir/ckpt_<step>/ (or to run_dir/<tag> when tag is non-NULL, e.g. "best"),
 * point run_dir/latest at it (unless tag), keep the newest `keep` periodic checkpoints. */
int ckpt_save(const Model *m, const TrainState *ts, const char *run_dir, int keep, const char *tag);
/* Write dir/model.safetensors alone: the parameters host (pt.total reals, host memory) with
 * the metadata of a checkpoint at step 0 (the trainer's RNG seeded from seed), no
 * optim.safetensors and no latest link: a run folder that gmaeval and gmasample read as it
 * is (what `gmadata import` writes). dir must exist. */
int ckpt_write_model(const Model *m, const real *host, const char *dir);
/* Remove what interrupted or failed saves left in run_dir (incomplete ckpt_N/ directories,
 * *.tmp.PID files); checkpoints that are complete stay. ckpt_save does it after each save;
 * a resumed run calls it before its first step. */
void ckpt_clean_run(const char *run_dir);
/* Resolve PATH (a checkpoint dir, a run dir with `latest`, or a model.safetensors file) to
 * the checkpoint directory, a link (RUN/latest) to the ckpt_N it names now: a reader
 * takes the config and the tensors from that one folder even when a writer moves latest
 * between its reads. Returns 0 and fills out. */
int ckpt_resolve(const char *path, char *out, size_t cap);
/* After a checkpoint at path (a run directory or RUN/ckpt_N) failed to open: add to the
 * current error the newest intact ckpt_N/ of that run (both files open, the config
 * reads), other than the one that failed, for the user to resume from. Returns -1. */
int ckpt_hint_intact(const char *path);
/* Read the resolved config stored in a checkpoint directory. */
int ckpt_read_config(const char *dir, Config *c);
/* ckpt_resolve + ckpt_read_config, then the command line's --device (when non-NULL: set
 * as the key device, so a bad name is refused as gmatrain refuses it) and
 * --threads (when >= 0) over the stored config: what gmaeval and gmasample start with. */
int ckpt_open_config(const char *path, const char *device, long threads, char *dir, size_t cap, Config *c);
/* Load parameters (and, when ts is non-NULL, optimiser moments and train state). Shapes
 * are checked against the model's table; a mismatch names the tensor. */
int ckpt_load(Model *m, TrainState *ts, const char *dir);
/* The parameters of dir/model.safetensors into host (pt->total reals) with ckpt_load's
 * checks: every tensor of pt there with its shape and finite, and no other. 0 or -1. */
int ckpt_read_params(const ParamTable *pt, real *host, const char *dir);
/* train.state_from: the training state of the checkpoint in dir taken into a model whose
 * weights came from elsewhere (--init-from): its step, data RNG and tokens seen into ts, and
 * the AdamW/SGD moments of every trained, unfrozen tensor of m that its optim.safetensors
 * holds under the same name and shape (the others' moments 0); the best scores, the log
 * window and the clocks start afresh. n_taken: the tensors whose moments were taken. */
int ckpt_load_state(Model *m, TrainState *ts, const char *dir, int *n_taken);
#endif
