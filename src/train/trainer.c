/* trainer.c: a training run from start to end (see trainer.h), stage by stage (run.h). */
#include "train/trainer.h"

#include "train/run.h"

int trainer_run(const Config *cfg, const TrainerOptions *o) {
    Run r;
    int rc = run_open(&r, cfg, o);
    while (rc == TRAIN_OK && run_training(&r)) {
        rc = run_step(&r);
        if (rc == TRAIN_OK) rc = run_periodic(&r);
    }
    if (rc == TRAIN_OK) rc = run_finish(&r);
    run_close(&r);
    return rc;
}
