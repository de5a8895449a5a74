/* run_distill.c: the distillation teacher, built and attached (see run_distill.h). */
#include "train/run_distill.h"

#include "model/checkpoint.h"

int distill_open(Model *s, const Config *cfg, Model *t, int quiet) {
    const TrainCfg *tc = &cfg->train;
    char dir[2048];
    Config c;
    if (ckpt_resolve(tc->distill_teacher, dir, sizeof dir) != 0 || ckpt_read_config(dir, &c) != 0)
        return gma_error_prefix("key train.distill.teacher"), -1;
    if (c.model.vocab_size != s->V)
        return gma_errorf("key train.distill.teacher: %s has a vocabulary of %d tokens (model.vocab_size), this model %d: "
                          "the KL needs the same vocabulary", dir, c.model.vocab_size, s->V);
    if (c.model.max_seq_len < s->Nmax_act)
        return gma_errorf("key train.distill.teacher: %s takes sequences of %d tokens (model.max_seq_len), this run %d",
                          dir, c.model.max_seq_len, s->Nmax_act);
    c.model.head_chunk = s->head_rows; /* one chunk of teacher logits beside each of the student's */
    c.device = cfg->device;
    if (model_build(t, &c) != 0) return gma_error_prefix("key train.distill.teacher: %s", dir), -1;
    t->infer = 1; /* forwards only: no gradients, moments or backward buffers */
    if (model_check_memory(t, s->Bmax, s->Nmax_act) != 0) {
        gma_error_prefix("key train.distill.teacher: %s", dir);
        model_free(t);
        return -1;
    }
    model_alloc(t, s->Bmax, s->Nmax_act);
    if (ckpt_load(t, NULL, dir) != 0 || model_set_teacher(s, t, tc->distill_weight, tc->distill_temperature) != 0) {
        gma_error_prefix("key train.distill.teacher: %s", dir);
        model_free(t);
        return -1;
    }
    if (!quiet)
        fprintf(stderr, "gmatrain: distilling from %s (%zu parameters, mixers %s%s): loss = CE + %g * %g^2 KL(teacher || "
                        "model) at temperature %g\n", dir, model_param_count(t), c.model.mixer[0],
                c.model.n_mixer > 1 ? ",..." : "", tc->distill_weight, tc->distill_temperature, tc->distill_temperature);
    return 0;
}
