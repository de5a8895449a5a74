/* model_decode.c: incremental decoding and prefill of a causal language model (model.h,
 * "incremental decoding"): each mixer's state across tokens, one token a step for B
 * sequences at the same position, and the prefill of those states from one forward over a
 * prompt. The blocks are model.c's (model_blocks_forward with a DecodeState). */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "model/model_cross.h"

#define PP(i) PT_PTR(m->params, &m->pt, (i))

int model_can_decode(const Model *m) {
    if (m->cls || !m->causal) return 0;
    int W = m->Nmax < m->Nmax_act ? m->Nmax : m->Nmax_act; /* the window of model_decode_begin */
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        if (!mx->vt->decode || (mx->vt->can_decode && !mx->vt->can_decode(mx, W))) return 0;
    }
    return 1;
}

int model_decode_begin(Model *m, DecodeState *s) { return model_decode_begin_batch(m, s, 1); }

int model_decode_begin_batch(Model *m, DecodeState *s, int B) {
    memset(s, 0, sizeof *s);
    if (!model_can_decode(m)) return gma_errorf("this model's mixers cannot decode incrementally");
    if (B < 1 || (size_t)B > (size_t)m->Bmax * m->Nmax_act)
        return gma_errorf("incremental decoding of %d sequences: the model is allocated for %d rows", B,
                          m->Bmax * m->Nmax_act);
    int W = m->Nmax < m->Nmax_act ? m->Nmax : m->Nmax_act;
    double need = (double)B * m->V, have;
    const char *what;
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        need += (double)B * mx->vt->decode_state(mx, W) + (double)mx->vt->act_size(mx, B, 1) + mx->vt->scratch_size(mx, B, 1);
    }
    need *= sizeof(real);
    if (g_ops->device == OPS_CPU && (have = model_memory_available(&what)) > 0 && need > have) /* callers decode without */
        return gma_errorf("incremental decoding of %d sequences needs %.1f GiB, more than the %.1f GiB of %s", B,
                          need / 1073741824.0, have / 1073741824.0, what);
    if (B > m->head_rows) { /* more rows than a chunk of the head's logits: a buffer of their own */
        s->logits = g_ops->alloc(sizeof(real) * (size_t)B * m->V);
        s->head_logits = m->logits;
        m->logits = s->logits;
    }
    s->W = m->Nmax < m->Nmax_act ? m->Nmax : m->Nmax_act;
    s->B = B;
    s->layer = xcalloc((size_t)m->L, sizeof(real *));
    size_t total = 0, act = 0, scr = 0, *n = xcalloc((size_t)m->L, sizeof(size_t));
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        total += n[l] = (size_t)B * mx->vt->decode_state(mx, s->W);
        act = GMA_MAX(act, mx->vt->act_size(mx, B, 1));
        scr = GMA_MAX(scr, mx->vt->scratch_size(mx, B, 1));
    }
    s->buf = g_ops->alloc(sizeof(real) * (total + 1)); /* zero-filled */
    s->act = g_ops->alloc(sizeof(real) * (act + 1));
    s->scratch = g_ops->alloc(sizeof(real) * (scr + 1));
    size_t off = 0;
    for (int l = 0; l < m->L; off += n[l], l++) s->layer[l] = s->buf + off;
    free(n);
    return 0;
}

int model_decode_step(Model *m, DecodeState *s, int32_t token) {
    if (s->B != 1) return gma_errorf("incremental decoding: model_decode_step feeds one sequence, the state holds %d", s->B);
    return model_decode_step_batch(m, s, &token);
}

int model_decode_step_batch(Model *m, DecodeState *s, const int32_t *tokens) {
    if (s->pos >= s->W) return gma_errorf("incremental decoding: position %d is past the window of %d", s->pos, s->W);
    if (m->x && (s->pos < m->x->M || m->x->mem_B != s->B))
        return gma_errorf("incremental decoding of a cross model: model_prefill feeds the context first");
    int D = m->D, B = s->B;
    for (int b = 0; b < B; b++)
        if (tokens[b] < 0 || tokens[b] >= m->V)
            return gma_errorf("token id %d is outside the vocabulary [0, %d)", tokens[b], m->V);
    m->B = B;
    m->N = 1;
    m->keymask = NULL;
    m->drop_live = 0; /* decoding never drops */
    g_ops->to_device(m->tok, tokens, sizeof(int32_t) * (size_t)B);
    /* the position embedding of row pos: with N = 1 the op adds row 0 of the table it is
     * given to every sequence */
    g_ops->embed_forward(m->resid[0], m->tok, PP(m->wte), model_pos_table(m) ? model_pos_table(m) + (size_t)model_pos_row(m, s->pos) * D : NULL,
                         B, 1, D);
    MixerCtx ctx = {.B = B, .N = 1, .causal = 1, .keymask = NULL, .training = 0, .step = 0};
    model_blocks_forward(m, &ctx, s);
    g_ops->matmul(m->logits, m->lnf, PP(m->wout), B, m->V, D, 0, 1, 1, 0);
    m->logits_row0 = 0;
    s->pos++;
    return 0;
}

/* model_prefill of a cross model: the memories of the context prompt[0..M) for the s->B
 * sequences (the encoder once), then prompt[M..np) a decode step a token */
static int prefill_cross(Model *m, DecodeState *s, const int32_t *prompt, int np) {
    XModel *x = m->x;
    int M = x->M, B = s->B;
    if (np <= M)
        return gma_errorf("prefill of %d tokens: a cross model's prompt is its context (cross.ctx_len %d tokens) and at "
                          "least one query token", np, M);
    for (int i = 0; i < np; i++)
        if (prompt[i] < 0 || prompt[i] >= m->V)
            return gma_errorf("token id %d at position %d is outside the vocabulary [0, %d)", prompt[i], i, m->V);
    g_ops->to_device(m->tok, prompt, sizeof(int32_t) * (size_t)M);
    g_ops->embed_forward(x->e[0], m->tok, PP(m->wte), model_pos_table(m), 1, M, m->D);
    xmodel_memory(x, m->params, B);
    s->pos = M;
    int32_t *tk = xmalloc(sizeof(int32_t) * (size_t)B);
    int rc = 0;
    for (int i = M; i < np && rc == 0; i++) {
        for (int b = 0; b < B; b++) tk[b] = prompt[i];
        rc = model_decode_step_batch(m, s, tk);
    }
    free(tk);
    return rc;
}

int model_prefill(Model *m, DecodeState *s, const int32_t *prompt, int np) {
    if (s->pos != 0) return gma_errorf("prefill: the decode state is at position %d, not 0", s->pos);
    if (np < 1 || np > s->W)
        return gma_errorf("prefill of %d tokens: the window is %d positions", np, s->W);
    if (m->x) return prefill_cross(m, s, prompt, np);
    for (int i = 0; i < np; i++)
        if (prompt[i] < 0 || prompt[i] >= m->V)
            return gma_errorf("token id %d at position %d is outside the vocabulary [0, %d)", prompt[i], i, m->V);
    int D = m->D, V = m->V;
    m->B = 1;
    m->N = np;
    m->keymask = NULL;
    model_drop_start(m, 0, 0);
    g_ops->to_device(m->tok, prompt, sizeof(int32_t) * (size_t)np);
    g_ops->embed_forward(m->resid[0], m->tok, PP(m->wte), model_pos_table(m), 1, np, D);
    MixerCtx ctx = {.B = 1, .N = np, .causal = 1, .training = 0};
    model_blocks_forward(m, &ctx, NULL);
    for (int l = 0; l < m->L; l++) {
        Block *b = &m->blocks[l];
        Mixer *mx = b->mixer;
        size_t ss = mx->vt->decode_state(mx, s->W);
        if (ss == 0) continue;
        g_ops->zero(s->layer[l], sizeof(real) * ss * s->B);
        if (mx->vt->prefill) mx->vt->prefill(mx, &ctx, b->ln1, m->params, b->act, s->layer[l], s->W, m->scratch);
        else /* a decode step a row; the forward's mixer output (b->mix) is free now */
            for (int t = 0; t < np; t++)
                mx->vt->decode(mx, b->mix + (size_t)t * D, b->ln1 + (size_t)t * D, m->params, s->layer[l], 1, t, s->W,
                               s->act, s->scratch);
        for (int q = 1; q < s->B; q++) g_ops->copy(s->layer[l] + q * ss, s->layer[l], sizeof(real) * ss);
    }
    /* the last position's logits only, for every sequence */
    g_ops->matmul(m->logits, m->lnf + (size_t)(np - 1) * D, PP(m->wout), 1, V, D, 0, 1, 1, 0);
    for (int q = 1; q < s->B; q++) g_ops->copy(m->logits + (size_t)q * V, m->logits, sizeof(real) * V);
    m->logits_row0 = 0;
    s->pos = np;
    return 0;
}

void model_decode_end(Model *m, DecodeState *s) {
    if (s->logits) {
        m->logits = s->head_logits;
        g_ops->free(s->logits);
    }
    if (s->buf) g_ops->free(s->buf);
    if (s->act) g_ops->free(s->act);
    if (s->scratch) g_ops->free(s->scratch);
    free(s->layer);
    memset(s, 0, sizeof *s);
}
