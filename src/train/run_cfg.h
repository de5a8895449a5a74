/* run_cfg.h: the run's own configuration: the top-level keys (name, seed, device,
 * precision, threads, out_dir) and train.*'s run keys (steps, batches, evaluation,
 * checkpoints, samples); the optimiser's train.* keys are optim's. */
#ifndef GMA_RUN_CFG_H
#define GMA_RUN_CFG_H
#include "core/config.h"

enum { REPORT_BEST, REPORT_LAST }; /* train.report: best|last */

extern const CfgSection run_top_cfg_section;   /* name, seed, device, precision, threads, out_dir */
extern const CfgSection run_train_cfg_section; /* train.steps, batch_size, ..., sample_prompt */

/* The keys only the training loop reads (train.grad_accum, report, eval_*, log_every,
 * checkpoint_every, keep_checkpoints, max_bad_steps, lm_weight, state_from,
 * final_eval_batches): a stored section (prefix train). */
typedef struct RunKeys {
    int grad_accum;
    int report; /* REPORT_BEST | REPORT_LAST: whose test accuracy a classifier reports */
    int eval_every, eval_batches, final_eval_batches, log_every, checkpoint_every, keep_checkpoints, max_bad_steps;
    double lm_weight;         /* train.lm_weight: the language-model objective's share of the gradient */
    double stop_acc;          /* train.stop_acc: stop after a validation accuracy above it (0 = never) */
    char state_from[CFG_STR]; /* train.state_from: the checkpoint whose training state a run continues */
} RunKeys;
extern const CfgSection run_keys_cfg_section;
const RunKeys *run_keys(const Config *c);
#endif
