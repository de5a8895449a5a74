/* run_cfg.h: the run's own configuration: the top-level keys (name, seed, device,
 * precision, threads, out_dir) and train.*'s run keys (steps, batches, evaluation,
 * checkpoints, samples); the optimiser's train.* keys are optim's. */
#ifndef GMA_RUN_CFG_H
#define GMA_RUN_CFG_H
#include "core/config.h"

enum { REPORT_BEST, REPORT_LAST }; /* train.report: best|last */

extern const CfgSection run_top_cfg_section;   /* name, seed, device, precision, threads, out_dir */
extern const CfgSection run_train_cfg_section; /* train.steps, batch_size, ..., sample_prompt */
#endif
