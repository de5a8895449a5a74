/* run_cfg.c: the rows and checks of the run's own keys (top level and train.*). */
#include "train/run_cfg.h"

#include <string.h>

#include "core/common.h"
#include "data/lm/lmdata.h"
#include "data/lm/xmqar.h"
#include "nn/mixers/cross.h"
#include "nn/model_cfg.h"
#include "ops/ops.h"

#define O(f) CFG_OFF(f)
#define S(f) CFG_SIZE(f)
static const CfgKey g_top[] = {
    {"name", CFGT_STR, O(name), S(name), "run", 0, 0, NULL, "Run name: outputs go to runs/<name>/ (or out_dir)."},
    {"seed", CFGT_INT, O(seed), 0, "1337", 0, 2147483647, NULL, "Seed for initialisation, data order and generated data."},
    {"device", CFGT_ENUM, O(device), 0, "cpu", 0, 0, OPS_DEVICES, "Backend that runs the ops."},
    {"precision", CFGT_ENUM, O(precision), 0, "fp32", 0, 0, OPS_PRECISIONS,
     "Matrix products: fp32; tf32 or bf16 (fp32 accumulation and master weights), cuda only (docs/cuda.md)."},
    {"threads", CFGT_INT, O(threads), 0, "0", 0, 1024, NULL, "OpenMP/BLAS threads (0 = all cores)."},
    {"out_dir", CFGT_STR, O(out_dir), S(out_dir), "", 0, 0, NULL, "Run directory (empty = runs/<name>)."},
};

static const CfgKey g_train[] = {
    {"train.steps", CFGT_INT, O(train.steps), 0, "1000", 0, 1000000000, NULL, "Optimiser steps."},
    {"train.batch_size", CFGT_INT, O(train.batch_size), 0, "8", 1, 1000000, NULL, "Sequences per micro-batch B."},
    {"train.seq_len", CFGT_INT, O(train.seq_len), 0, "256", 1, 16777216, NULL, "Training window N (<= model.max_seq_len)."},
    {"train.eval_drop_last", CFGT_BOOL, O(train.eval_drop_last), 0, "false", 0, 0, NULL,
     "Classifier: evaluations read whole batches only (tf.data's drop_remainder, as the LRA image tasks)."},
    {"train.sample_every", CFGT_INT, O(train.sample_every), 0, "0", 0, 1000000000, NULL,
     "Language models: generate a sample every this many steps (0 = never)."},
    {"train.sample_tokens", CFGT_INT, O(train.sample_tokens), 0, "64", 1, 100000, NULL, "New tokens per training-time sample."},
    {"train.sample_prompt", CFGT_STR, O(train.sample_prompt), S(train.sample_prompt), "", 0, 0, NULL,
     "Prompt of the training-time samples: text for the data's tokenizer (empty = its <|endoftext|> or <eos>, else token 0)."},
    {"train.distill.teacher", CFGT_STR, O(train.distill_teacher), S(train.distill_teacher), "", 0, 0, NULL,
     "Language models: distil from this run folder or checkpoint (\"\" = none; same vocabulary; docs/model.md §1, "
     "docs/migration.md)."},
    {"train.distill.weight", CFGT_REAL, O(train.distill_weight), 0, "1", 0, 1e3, NULL,
     "Weight w of the distillation term (0: its KL is logged only)."},
    {"train.distill.temperature", CFGT_REAL, O(train.distill_temperature), 0, "1", 0.01, 100, NULL,
     "Temperature T that softens both models' logits in the distillation term."},
};
#undef O
#undef S

/* The run name is one path component under runs/: not empty, no '/', not "." or "..". */
static int check_run_name(const char *name) {
    if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return gma_errorf("key name: \"%s\" is not a plain name (outputs go to runs/<name>/: no '/', not empty, \".\" or \"..\")",
                          gma_quote(name));
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20) return gma_errorf("key name: control character at position %d", (int)(p - name));
    return 0;
}

static int validate_top(const Config *c) {
    if (check_run_name(c->name) != 0) return -1;
    if (c->precision != OPS_FP32 && c->device != OPS_CUDA)
        return gma_errorf("key precision: %s needs device cuda (the %s backend runs fp32)", ops_precision_name(c->precision),
                          ops_device_key(c->device));
    return 0;
}

/* after the mixers' checks: the model's task and a cross model's context against the data's
 * source, then samples */
static int validate_train(const Config *c) {
    int classify = c->model.task == MODEL_CLASSIFY, cls_data = c->data.source == DATA_cls;
    if (classify && !cls_data) return gma_errorf("key data.source: model.task \"classify\" needs data.source \"cls\"");
    if (!classify && cls_data) return gma_errorf("key model.task: data.source \"cls\" needs model.task \"classify\"");
    const CrossCfg *x = cross_cfg(c);
    if (x->mixer != CROSS_NONE && c->data.source == DATA_xmqar && x->ctx_len != xmqar_cfg(c)->ctx)
        return gma_errorf("key cross.ctx_len: %d, but the xmqar context is data.xmqar_ctx = %d positions", x->ctx_len,
                          xmqar_cfg(c)->ctx);
    if (c->train.sample_every > 0 && (c->model.task != MODEL_LM || !cfg_causal(c)))
        return gma_errorf("key train.sample_every: only causal language models generate samples (model.task \"lm\", model.causal true)");
    if (c->train.distill_teacher[0] && classify)
        return gma_errorf("key train.distill.teacher: distillation is for language models (model.task \"lm\")");
    if (cfg_num(c, "train.stop_acc") > 0 && !classify && !lmdata_source(c->data.source)->scored)
        return gma_errorf("key train.stop_acc: data.source \"%s\" scores no accuracy to stop on", lmdata_source(c->data.source)->name);
    if (cfg_num(c, "train.stop_acc") > 0 && cfg_num(c, "train.eval_every") <= 0)
        return gma_errorf("key train.stop_acc: needs train.eval_every > 0 (the validations it is checked at)");
    if (cfg_num(c, "train.lm_weight") != 1 && classify)
        return gma_errorf("key train.lm_weight: weighs the language-model objective (model.task \"lm\")");
    return 0;
}

#define RO(f) offsetof(RunKeys, f)
static const CfgKey g_run[] = {
    {"grad_accum", CFGT_INT, RO(grad_accum), 0, "1", 1, 1000000, NULL, "Micro-batches per optimiser step."},
    {"report", CFGT_ENUM, RO(report), 0, "best", 0, 0, "best|last",
     "Classifier: summary.json's reported_test_acc, of the best-validation checkpoint or the last."},
    {"eval_every", CFGT_INT, RO(eval_every), 0, "100", 0, 1000000000, NULL, "Validation period in steps (0 = only at the end)."},
    {"eval_batches", CFGT_INT, RO(eval_batches), 0, "20", 0, 1000000000, NULL, "Validation batches (0 = the whole split)."},
    {"final_eval_batches", CFGT_INT, RO(final_eval_batches), 0, "0", 0, 1000000000, NULL,
     "Language models: batches of the final valid and test scores (0 = whole splits; fewer: no word perplexity)."},
    {"log_every", CFGT_INT, RO(log_every), 0, "10", 1, 1000000000, NULL, "metrics.jsonl / progress period in steps."},
    {"checkpoint_every", CFGT_INT, RO(checkpoint_every), 0, "500", 0, 1000000000, NULL, "Checkpoint period (0 = only at the end)."},
    {"keep_checkpoints", CFGT_INT, RO(keep_checkpoints), 0, "2", 1, 1000000, NULL, "Periodic checkpoints kept."},
    {"max_bad_steps", CFGT_INT, RO(max_bad_steps), 0, "5", 1, 1000000, NULL, "Stop after this many NaN/Inf losses in a row."},
    {"stop_acc", CFGT_REAL, RO(stop_acc), 0, "0", 0, 1, NULL,
     "Stop training after a validation (train.eval_every) whose accuracy is above this (0 = never): Zoology's early "
     "stop at 0.99 (docs/mqar.md). Needs data whose accuracy is scored and train.eval_every > 0; the run ends as "
     "at its last step (closing evaluations, checkpoint, summary.json with \"early_stop\")."},
    {"lm_weight", CFGT_REAL, RO(lm_weight), 0, "1", 0, 1, NULL,
     "Language models: weight of the language-model objective in the gradient (0: the auxiliary losses alone, "
     "attention transfer; docs/model.md §1)."},
    {"state_from", CFGT_STR, RO(state_from), sizeof(((RunKeys *)0)->state_from), "", 0, 0, NULL,
     "With --init-from: a checkpoint whose step, data RNG, tokens seen and matching optimiser moments the run "
     "continues (\"\" = fresh; docs/migration.md)."},
};
#undef RO

const CfgSection run_top_cfg_section = {NULL, 0, g_top, CFG_N(g_top), validate_top, NULL};
const CfgSection run_train_cfg_section = {NULL, 0, g_train, CFG_N(g_train), validate_train, NULL};
const CfgSection run_keys_cfg_section = {"run", sizeof(RunKeys), g_run, CFG_N(g_run), NULL, "train"};

const RunKeys *run_keys(const Config *c) { return cfg_section_of(c, &run_keys_cfg_section); }
