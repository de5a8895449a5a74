/* run_distill.c: the distillation teacher, built, attached and recorded (see run_distill.h). */
#include "train/run_distill.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "data/fetch/digest.h"
#include "model/checkpoint.h"
#include "train/run_log.h"

/* the identity of the teacher's checkpoint folder dir: its real path, step, digest */
static int teacher_id(const char *dir, DistillId *id) {
    char path[2100], real[PATH_MAX];
    snprintf(id->ckpt, sizeof id->ckpt, "%s", realpath(dir, real) ? real : dir);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    StFile f;
    if (st_open(&f, path) != 0) return -1;
    const char *s = st_meta(&f, "step");
    char *end;
    id->step = s ? strtol(s, &end, 10) : -1;
    if (s && (*end || end == s)) id->step = -1;
    st_close(&f);
    return digest_file(path, DIGEST_SHA256, id->sha);
}

int distill_open(Model *s, const Config *cfg, Model *t, DistillId *id, int quiet) {
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
    if (teacher_id(dir, id) != 0) return gma_error_prefix("key train.distill.teacher: %s", dir), -1;
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
        fprintf(stderr, "gmatrain: distilling from %s (step %ld, %zu parameters, mixers %s%s): loss = CE + %g * %g^2 "
                        "KL(teacher || model) at temperature %g\n", dir, id->step, model_param_count(t), c.model.mixer.name[0],
                c.model.mixer.n > 1 ? ",..." : "", tc->distill_weight, tc->distill_temperature, tc->distill_temperature);
    return 0;
}

int distill_check(const char *run_dir, const DistillId *id, int quiet) {
    char p[2100];
    snprintf(p, sizeof p, "%s/distill.json", run_dir);
    if (!gma_path_exists(p)) {
        if (!quiet)
            fprintf(stderr, "gmatrain: warning: %s: not there (a run made before the teacher was recorded): the teacher "
                            "%s (step %ld) is not checked against the one the run started with\n", p, id->ckpt, id->step);
        return 0;
    }
    char *text = gma_read_file(p, NULL);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "teacher");
    const cJSON *ck = cJSON_GetObjectItemCaseSensitive(t, "checkpoint"), *st = cJSON_GetObjectItemCaseSensitive(t, "step");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "sha256");
    if (!cJSON_IsString(ck) || !cJSON_IsNumber(st) || !cJSON_IsString(sh)) {
        cJSON_Delete(j);
        return gma_errorf("%s: key teacher is missing or malformed (want {\"checkpoint\": DIR, \"step\": N, \"sha256\": HEX})", p);
    }
    int rc = 0;
    if ((long)st->valuedouble != id->step || strcmp(sh->valuestring, id->sha))
        rc = gma_errorf("key train.distill.teacher: %s (step %ld, sha256 %.12s) is not the teacher %s started with, %s "
                        "(step %ld, sha256 %.12s; %s): a resume distils from the same teacher: --set train.distill.teacher=%s "
                        "(while that checkpoint is there), or start a new run",
                        id->ckpt, id->step, id->sha, run_dir, ck->valuestring, (long)st->valuedouble, sh->valuestring, p,
                        ck->valuestring);
    cJSON_Delete(j);
    return rc;
}

int distill_record(const char *run_dir, const DistillId *id) {
    cJSON *j = cJSON_CreateObject(), *t = cJSON_AddObjectToObject(j, "teacher");
    cJSON_AddStringToObject(t, "checkpoint", id->ckpt);
    cJSON_AddNumberToObject(t, "step", (double)id->step);
    cJSON_AddStringToObject(t, "sha256", id->sha);
    char *text = cJSON_Print(j);
    int rc = run_write_json(run_dir, "distill.json", text);
    free(text);
    cJSON_Delete(j);
    return rc;
}
