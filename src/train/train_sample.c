/* train_sample.c: text samples during training (see train_sample.h). */
#include "train/train_sample.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "data/lm/lmdata.h"
#include "data/text/unicode.h"
#include "model/generate.h"
#include "train/run_log.h"

int train_sampler_init(TrainSampler *s, const Config *c, FILE *log) {
    memset(s, 0, sizeof *s);
    s->n_new = c->train.sample_tokens;
    s->seed = (uint64_t)c->seed;
    if (c->data.source == DATA_shards && c->data.path[0]) {
        s->tk = lmdata_tokenizer(c->data.path);
        if (!s->tk && log) fprintf(log, "gmatrain: train.sample_every: %s; samples are token ids\n", gma_error());
    }
    const char *p = c->train.sample_prompt;
    if (p[0]) {
        if (!s->tk) return gma_errorf("key train.sample_prompt: text needs the data's tokenizer (data.path/meta.json)");
        if (tokenizer_encode_i32(s->tk, p, strlen(p), &s->prompt, &s->np) != 0) return -1;
    }
    if (s->np == 0) { /* the tokenizer's start token, else token 0 */
        long start = tokenizer_start_id(s->tk);
        free(s->prompt);
        s->prompt = xmalloc(sizeof(int32_t));
        s->prompt[0] = (int32_t)(start < 0 ? 0 : start);
        s->np = 1;
    }
    if (s->tk && tokenizer_vocab_size(s->tk) > (uint32_t)c->model.vocab_size)
        return gma_errorf("key train.sample_every: the data's tokenizer has %u tokens, the model %d",
                          tokenizer_vocab_size(s->tk), c->model.vocab_size);
    return 0;
}

typedef struct Ids {
    int32_t *v;
    int n;
} Ids;
static int collect(void *ctx, int32_t t) {
    Ids *ids = ctx;
    ids->v[ids->n++] = t;
    return 0;
}

int train_sampler_run(TrainSampler *s, Model *m, long step, FILE *mf, FILE *out) {
    Ids ids = {xmalloc(sizeof(int32_t) * ((size_t)s->n_new + 1)), 0};
    SampleOpts so = {.temperature = 1, .top_k = 0, .top_p = 1, .vocab_limit = s->tk ? (int)tokenizer_vocab_size(s->tk) : 0};
    Rng rng;
    rng_seed2(&rng, s->seed, 0x73616d706c65ULL ^ ((uint64_t)step << 20));
    if (model_generate(m, s->prompt, s->np, s->n_new, &so, &rng, collect, &ids) != 0) {
        free(ids.v);
        return -1;
    }
    cJSON *row = cJSON_CreateObject();
    cJSON_AddNumberToObject(row, "step", (double)step);
    cJSON_AddStringToObject(row, "event", "sample");
    char *ptext = NULL, *text = NULL;
    size_t plen = 0, len = 0;
    if (s->tk) {
        ptext = tokenizer_decode_i32(s->tk, s->prompt, (size_t)s->np, &plen);
        text = ptext ? tokenizer_decode_i32(s->tk, ids.v, (size_t)ids.n, &len) : NULL;
        if (!text) {
            free(ptext);
            free(ids.v);
            cJSON_Delete(row);
            return -1;
        }
        char *pj = utf8_sanitize(ptext, plen), *tj = utf8_sanitize(text, len);
        cJSON_AddStringToObject(row, "prompt", pj);
        cJSON_AddStringToObject(row, "text", tj);
        if (out) fprintf(out, "sample at step %ld: %s%s\n", step, pj, tj);
        free(pj);
        free(tj);
    } else {
        cJSON_AddItemToObject(row, "prompt", cJSON_CreateIntArray(s->prompt, s->np));
        cJSON_AddItemToObject(row, "ids", cJSON_CreateIntArray(ids.v, ids.n));
        if (out) {
            fprintf(out, "sample at step %ld:", step);
            for (int i = 0; i < s->np + ids.n; i++) fprintf(out, " %d", i < s->np ? s->prompt[i] : ids.v[i - s->np]);
            fprintf(out, "\n");
        }
    }
    free(ptext);
    free(text);
    free(ids.v);
    run_metrics_row(mf, row);
    return 0;
}

void train_sampler_free(TrainSampler *s) {
    tokenizer_free(s->tk);
    free(s->prompt);
    memset(s, 0, sizeof *s);
}
