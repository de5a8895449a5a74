/* sample_run.c: the prompt and the batches of samples of gmasample (sample_run.h). */
#include "model/sample_run.h"

#include <stdlib.h>
#include <string.h>

#include "data/text/unicode.h"

typedef struct Out {
    Tokenizer *tk;
    int32_t *ids; /* prompt + new tokens */
    int n, shown; /* ids, ids already printed (without a tokenizer) */
    size_t printed; /* bytes of the decoded text already printed */
    int stream;   /* print each token as it comes (one sample at a time) */
    FILE *f;
    double *first_at; /* SampleRun.first_at */
} Out;

/* print what the tokens after the printed part add: the decoded text grows (byte-level
 * tokens may end inside a UTF-8 character; the terminal joins the bytes), or the ids */
static int show(Out *o) {
    if (!o->tk) {
        for (; o->shown < o->n; o->shown++) fprintf(o->f, o->shown ? " %d" : "%d", o->ids[o->shown]);
    } else {
        size_t len;
        char *text = tokenizer_decode_i32(o->tk, o->ids, (size_t)o->n, &len);
        if (!text) return -1;
        if (len > o->printed) fwrite(text + o->printed, 1, len - o->printed, o->f);
        o->printed = len > o->printed ? len : o->printed;
        free(text);
    }
    fflush(o->f);
    return 0;
}

/* the new token of sample b of the batch (model_generate_batch) */
static int emit(void *ctx, int b, int32_t token) {
    Out *o = (Out *)ctx + b;
    if (o->first_at && *o->first_at == 0) *o->first_at = gma_now();
    o->ids[o->n++] = token;
    return o->stream ? show(o) : 0;
}

/* the prompt as ids: text through the tokenizer, --prompt-ids, or the start token */
int32_t *sample_prompt_ids(Tokenizer *tk, const char *text, size_t text_len, const char *ids, int *np) {
    int32_t *p = NULL;
    *np = 0;
    if (ids) {
        const char *s = ids;
        size_t cap = strlen(ids) / 2 + 2;
        p = xmalloc(sizeof(int32_t) * cap);
        while (*s) {
            while (*s == ' ' || *s == ',' || *s == '\t') s++;
            if (!*s) break;
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s || v < 0 || v > INT32_MAX) {
                free(p);
                gma_errorf("--prompt-ids: \"%.20s\" at offset %ld is not a token id", s, (long)(s - ids));
                return NULL;
            }
            p[(*np)++] = (int32_t)v;
            s = end;
        }
    } else if (text && text_len > 0) {
        if (!tk) {
            gma_errorf("--prompt: this checkpoint's data has no tokenizer (meta.json); give --prompt-ids or --tokenizer");
            return NULL;
        }
        if (tokenizer_encode_i32(tk, text, text_len, &p, np) != 0) return NULL;
    } else {
        long start = tokenizer_start_id(tk);
        if (start < 0) {
            gma_errorf("a prompt is required (--prompt, --prompt-file or --prompt-ids): %s", tk ? "the tokenizer has no <|endoftext|> or <eos> to start from" : "there is no tokenizer");
            return NULL;
        }
        p = xmalloc(sizeof(int32_t));
        p[0] = (int32_t)start;
        *np = 1;
    }
    if (*np == 0) {
        free(p);
        gma_errorf("the prompt is empty");
        return NULL;
    }
    return p;
}


/* sample o's ids after the prompt, and their text, as one JSON object */
static cJSON *sample_json(const Out *o, int np) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToObject(e, "ids", cJSON_CreateIntArray(o->ids + np, o->n - np));
    if (o->tk) {
        size_t len;
        char *text = tokenizer_decode_i32(o->tk, o->ids + np, (size_t)(o->n - np), &len);
        if (text) {
            char *u = utf8_sanitize(text, len);
            cJSON_AddStringToObject(e, "text", u);
            free(u);
        }
        free(text);
    }
    return e;
}

/* a sample of a batch of several, printed whole: the prompt, then the rest */
static int show_whole(Out *o, int np, long index) {
    if (index > 0) fprintf(o->f, "\n----\n");
    int n = o->n;
    o->n = np;
    int rc = show(o);
    o->n = n;
    return rc ? rc : show(o);
}

/* samples s0 .. s0 + M - 1 as one batch: 0 or -1 */
static int sample_batch(Model *m, Tokenizer *tk, const int32_t *p, int np, const SampleRun *r, long s0, int M, cJSON *arr) {
    Out *outs = xcalloc((size_t)M, sizeof(Out));
    Rng *rngs = xcalloc((size_t)M, sizeof(Rng));
    for (int b = 0; b < M; b++) {
        outs[b] = (Out){.tk = tk, .ids = xmalloc(sizeof(int32_t) * (size_t)(np + r->tokens)), .n = np, .stream = M == 1,
                        .f = r->out, .first_at = r->first_at};
        memcpy(outs[b].ids, p, sizeof(int32_t) * (size_t)np);
        rng_seed2(&rngs[b], (uint64_t)r->seed, (uint64_t)(s0 + b));
    }
    int rc = 0;
    if (M == 1) { /* the prompt as the tokenizer gives it back, then the tokens as they come */
        if (s0 > 0) fprintf(r->out, "\n----\n");
        rc = show(&outs[0]);
    }
    if (rc == 0) rc = model_generate_batch(m, p, np, (int)r->tokens, M, &r->so, rngs, emit, outs);
    for (int b = 0; b < M; b++) {
        if (M > 1 && rc == 0 && show_whole(&outs[b], np, s0 + b) != 0) rc = -1;
        if (rc == 0) cJSON_AddItemToArray(arr, sample_json(&outs[b], np));
        free(outs[b].ids);
    }
    free(outs);
    free(rngs);
    return rc;
}

int sample_run(Model *m, Tokenizer *tk, const int32_t *p, int np, const SampleRun *r, cJSON *arr) {
    /* batches of up to max_seq_len sequences, one decode step per position for a whole
     * batch (the rows the model is allocated for); one sample streams */
    long chunk = r->samples < r->batch ? r->samples : r->batch;
    int rc = 0;
    for (long s0 = 0; s0 < r->samples && rc == 0; s0 += chunk)
        rc = sample_batch(m, tk, p, np, r, s0, (int)(r->samples - s0 < chunk ? r->samples - s0 : chunk), arr);
    return rc;
}
