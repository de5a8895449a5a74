/* route_eval.c: the routing analysis and the responsibility dump of gmaeval
 * (route_eval.h): one pass over the evaluation windows, the GMA layers' query
 * responsibilities (MixerHealth.components) into a RouteAnalysis and the dump file. */
#include "analysis/route_eval.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/route_plots.h"
#include "analysis/routing.h"
#include "data/lm/recall.h"
#include "data/text/tokenizer.h"
#include "ops/ops.h"

static const char *const RECALL_CATS[4] = {"pad", "separator", "key", "value"};
static const char *const TEXT_CATS[N_TEXT_CATS] = {"number", "punctuation", "function_word", "capitalised", "other"};

/* one pass: the layers analysed, the token categories, the buffers of a batch */
typedef struct Pass {
    int L, H, Kc, V, B, N, *li, *kl, *cat; /* Kc: the largest layer's; kl: each layer's */
    char **text;
    RouteAnalysis ra;
    FILE *df;
    long W, tokoff, goff;
    int32_t *tok, *tgt;
    uint8_t *score;
    float *g, *heat;
} Pass;

/* token texts from the tokenizer named by DATA/meta.json; NULL when there is none */
static char **token_texts(const Config *cfg, int V) {
    if (!cfg->data.path[0]) return NULL;
    Tokenizer *tk = lmdata_tokenizer(cfg->data.path);
    if (!tk) return NULL;
    char **text = xcalloc(V, sizeof(char *));
    uint32_t tv = tokenizer_vocab_size(tk);
    for (int i = 0; i < V && (uint32_t)i < tv; i++) {
        uint32_t id = (uint32_t)i;
        size_t len;
        if (tokenizer_decode(tk, &id, 1, &text[i], &len) != 0) text[i] = NULL;
    }
    tokenizer_free(tk);
    return text;
}

static void stem_of(char *out, size_t cap, const char *path) {
    snprintf(out, cap, "%s", path);
    size_t n = strlen(out);
    if (n > 5 && !strcmp(out + n - 5, ".json")) out[n - 5] = 0;
}

static int put_at(FILE *f, long off, const void *p, size_t n) {
    if (fseek(f, off, SEEK_SET) != 0 || fwrite(p, 1, n, f) != n) return -1;
    return 0;
}

/* the token categories: the recall task's four, else the texts' five */
static void categories(Pass *p, const Config *cfg, const LmData *d, const RouteEvalOpts *o) {
    int ncat;
    const char *const *names;
    p->cat = xcalloc(p->V, sizeof(int));
    const RecallTask *rt = lmdata_task(d, DATA_recall);
    if (rt) {
        int K = (rt->vocab - 2) / 2;
        for (int i = 0; i < p->V; i++) p->cat[i] = i == 0 ? 0 : i == 1 ? 1 : i < 2 + K ? 2 : 3;
        ncat = 4, names = RECALL_CATS;
    } else {
        p->text = token_texts(cfg, p->V);
        if (!p->text && o->analyze) /* the categories only matter to the analysis, not to a dump */
            fprintf(stderr, "%s: --analyze: no tokenizer named by %s/meta.json: every token counts as \"other\"\n", o->prog,
                    cfg->data.path);
        for (int i = 0; i < p->V; i++) p->cat[i] = p->text ? token_category(p->text[i]) : CAT_OTHER;
        ncat = N_TEXT_CATS, names = TEXT_CATS;
    }
    ra_init(&p->ra, p->L, p->H, p->Kc, p->V, ncat, names);
}

/* the dump's header: magic, version, L, W, H, N, Kc, the layer indices */
static int open_dump(Pass *p, const char *dump) {
    long hdr = 8 + 6 * 4 + 4L * p->L;
    p->tokoff = hdr, p->goff = hdr + 4L * p->W * p->N;
    if (!(p->df = fopen(dump, "wb"))) return gma_errorf("%s: cannot open for writing", dump);
    uint32_t h6[6] = {1, (uint32_t)p->L, (uint32_t)p->W, (uint32_t)p->H, (uint32_t)p->N, (uint32_t)p->Kc};
    int32_t *lidx = xmalloc(sizeof(int32_t) * p->L);
    for (int i = 0; i < p->L; i++) lidx[i] = p->li[i];
    put_at(p->df, 0, "GMARESP1", 8);
    put_at(p->df, 8, h6, sizeof h6);
    put_at(p->df, 32, lidx, sizeof(int32_t) * p->L);
    free(lidx);
    return 0;
}

static int pass_init(Pass *p, Model *m, const Config *cfg, const LmData *d, int split, const RouteEvalOpts *o) {
    p->L = model_gma_layers(m), p->H = m->H, p->V = m->V, p->li = xcalloc(p->L, sizeof(int));
    p->kl = xcalloc(p->L > 0 ? p->L : 1, sizeof(int));
    for (int l = 0, nl = 0; l < m->L; l++) {
        Mixer *mx = m->blocks[l].mixer;
        if (!mx->vt->health) continue;
        MixerComponents mc;
        mx->vt->health->components(mx, NULL, 0, 0, &mc);
        p->kl[nl] = mc.Kc;
        p->li[nl++] = l;
        p->Kc = GMA_MAX(p->Kc, mc.Kc);
    }
    categories(p, cfg, d, o);
    for (int s = 0; s < p->L; s++) ra_set_kc(&p->ra, s, p->kl[s]);
    p->W = lmdata_eval_windows(d, split, p->N);
    size_t BN = (size_t)p->B * p->N;
    p->tok = xmalloc(sizeof(int32_t) * BN), p->tgt = xmalloc(sizeof(int32_t) * BN), p->score = xmalloc(BN);
    p->g = xmalloc(sizeof(float) * BN * p->H * p->Kc), p->heat = xcalloc((size_t)p->N * p->Kc, sizeof(float));
    return o->dump ? open_dump(p, o->dump) : 0;
}

static void pass_free(Pass *p) {
    if (p->text)
        for (int i = 0; i < p->V; i++) free(p->text[i]);
    free(p->text);
    free(p->cat);
    free(p->li);
    free(p->kl);
    free(p->tok);
    free(p->tgt);
    free(p->score);
    free(p->g);
    free(p->heat);
    ra_free(&p->ra);
}

/* layer s of batch b (filled windows from w0): into the analysis and the dump */
static void take_layer(Pass *p, Model *m, int s, long b, int filled, long w0) {
    Mixer *mx = m->blocks[p->li[s]].mixer;
    MixerComponents mc;
    mx->vt->health->components(mx, m->blocks[p->li[s]].act, p->B, p->N, &mc);
    if (!mc.gq) return; /* auto on its sdpa path: no responsibilities */
    size_t per = (size_t)p->H * p->N * p->Kc, rows = (size_t)p->B * p->H * p->N;
    int Kl = mc.Kc;
    g_ops->to_host(p->g, mc.gq, sizeof(float) * rows * Kl);
    if (Kl < p->Kc) /* a layer with fewer components: its rows at the stride Kc, zeros after its own (from the last row back) */
        for (size_t r = rows; r-- > 0;) {
            memmove(p->g + r * p->Kc, p->g + r * Kl, sizeof(float) * Kl);
            memset(p->g + r * p->Kc + Kl, 0, sizeof(float) * (p->Kc - Kl));
        }
    ra_add(&p->ra, s, p->g, p->tok, p->score, p->B, p->N, p->cat);
    if (b == 0 && s == 0) memcpy(p->heat, p->g, sizeof(float) * p->N * p->Kc); /* window 0, head 0 */
    if (p->df)
        for (int i = 0; i < filled && w0 + i < p->W; i++)
            put_at(p->df, p->goff + 4L * (((long)s * p->W + w0 + i) * (long)per), p->g + (size_t)i * per, sizeof(float) * per);
}

/* every batch of windows through the model: 0, or -1 */
static int pass_run(Pass *p, Model *m, const LmData *d, int split) {
    long nb = (p->W + p->B - 1) / p->B, w0 = 0, BN = (long)p->B * p->N;
    for (long b = 0; b < nb; b++) {
        int filled = lmdata_eval_batch(d, split, b, p->B, p->N, p->tok, p->tgt);
        if (!filled) break;
        LossStats st;
        if (model_forward(m, p->tok, p->tgt, p->B, p->N, NULL, 0, &st, 0, 0) != 0) return -1;
        /* shards: the scored positions; recall (only query keys are scored): every non-pad input */
        for (long i = 0; i < BN; i++)
            p->score[i] = i < (long)filled * p->N && (d->source == DATA_recall ? p->tok[i] != 0 : p->tgt[i] >= 0);
        for (int s = 0; s < p->L; s++) take_layer(p, m, s, b, filled, w0);
        if (p->df)
            for (int i = 0; i < filled && w0 + i < p->W; i++)
                put_at(p->df, p->tokoff + 4L * (w0 + i) * p->N, p->tok + (size_t)i * p->N, 4L * p->N);
        ra_next_batch(&p->ra, p->tok, p->score, p->B, p->N);
        w0 += filled;
    }
    return 0;
}

/* The gates of the gated layers (mixer "gated", docs/model.md §3.7), or with `window` those of
 * the gma layers' windows (gma.window, §3.11): g_h = sigmoid(a_h), the softmax (window)
 * path's share of head h, one line per layer to f and an entry of *arr (NULL: no such layer) */
static void gate_report(const Model *m, FILE *f, cJSON **arr, int window) {
    real *a = xmalloc(sizeof(real) * m->H);
    for (int l = 0; l < m->L; l++) {
        char name[64];
        snprintf(name, sizeof name, window ? "blocks.%d.mixer.gma.window_gate" : "blocks.%d.mixer.gate", l);
        int t = pt_find(&m->pt, name);
        if (t < 0) continue;
        g_ops->to_host(a, m->params + m->pt.t[t].offset, sizeof(real) * m->H);
        if (arr && !*arr) *arr = cJSON_CreateArray();
        cJSON *o = cJSON_CreateObject(), *g = cJSON_AddArrayToObject(o, "gate");
        cJSON_AddNumberToObject(o, "layer", l);
        if (f) fprintf(f, window ? "window gate of layer %d (the window path's share g per head):" :
                                   "gate of layer %d (softmax path's share g per head):", l);
        for (int h = 0; h < m->H; h++) {
            double v = 1 / (1 + exp(-(double)a[h]));
            cJSON_AddItemToArray(g, cJSON_CreateNumber(v));
            if (f) fprintf(f, " %.3f", v);
        }
        if (f) fprintf(f, "\n");
        if (arr) cJSON_AddItemToArray(*arr, o);
        else cJSON_Delete(o);
    }
    free(a);
}

/* the auto layers (mixer "auto", docs/model.md §3.6): the path a window of N tokens takes
 * and the gap between the two paths' head outputs over the pass (mixer_auto_probe), one
 * line per layer to f and an entry of *arr (NULL: no such layer) */
static void auto_report(const Model *m, int N, FILE *f, cJSON **arr) {
    const MixerVT *vt = mixer_find("auto");
    for (int l = 0; l < m->L; l++) {
        const Mixer *mx = m->blocks[l].mixer;
        double mse, rel;
        if (mx->vt != vt || mixer_auto_gap(mx, &mse, &rel) != 0) continue;
        const char *path = mixer_auto_choice(mx, N);
        int thr = mixer_auto_threshold(mx);
        if (f)
            fprintf(f, "auto layer %d: threshold %d, windows of %d take %s; paths' head outputs: mean (gma - sdpa)^2 %.4g, "
                    "relative to sdpa's %.4f\n", l, thr, N, path, mse, rel);
        if (!arr) continue;
        if (!*arr) *arr = cJSON_CreateArray();
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "layer", l);
        cJSON_AddNumberToObject(o, "threshold", thr);
        cJSON_AddNumberToObject(o, "seq_len", N);
        cJSON_AddStringToObject(o, "path", path);
        cJSON_AddNumberToObject(o, "gap_mse", mse);
        cJSON_AddNumberToObject(o, "gap_rel", rel);
        cJSON_AddItemToArray(*arr, o);
    }
}

/* the analysis' JSON, report (stdout and .txt) and plots */
static int write_analysis(const Pass *p, const Model *m, const RouteEvalOpts *o) {
    char stem[2048], path[2200];
    if (o->ajson) stem_of(stem, sizeof stem, o->ajson);
    else if (o->json) {
        stem_of(stem, sizeof stem, o->json);
        strncat(stem, ".analysis", sizeof stem - strlen(stem) - 1);
    } else snprintf(stem, sizeof stem, "analysis");
    const char *const *text = (const char *const *)p->text;
    char *js = ra_json(&p->ra, p->li, text, 10);
    cJSON *gates = NULL, *wgates = NULL, *autos = NULL;
    gate_report(m, NULL, &gates, 0);
    gate_report(m, NULL, &wgates, 1);
    auto_report(m, p->N, NULL, &autos);
    if (gates || wgates || autos) { /* the gates, the windows' gates and the auto layers' paths beside the routing figures */
        cJSON *root = cJSON_Parse(js);
        if (gates) cJSON_AddItemToObject(root, "gates", gates);
        if (wgates) cJSON_AddItemToObject(root, "window_gates", wgates);
        if (autos) cJSON_AddItemToObject(root, "auto", autos);
        free(js);
        js = cJSON_Print(root);
        cJSON_Delete(root);
    }
    snprintf(path, sizeof path, "%s.json", stem);
    if (o->ajson) snprintf(path, sizeof path, "%s", o->ajson);
    int rc = gma_write_file_atomic(path, js, strlen(js));
    free(js);
    ra_report(&p->ra, p->li, text, stdout);
    gate_report(m, stdout, NULL, 0);
    gate_report(m, stdout, NULL, 1);
    auto_report(m, p->N, stdout, NULL);
    printf("analysis: %s\n", path);
    snprintf(path, sizeof path, "%s.txt", stem);
    FILE *f = fopen(path, "w");
    if (f) {
        ra_report(&p->ra, p->li, text, f);
        gate_report(m, f, NULL, 0);
        gate_report(m, f, NULL, 1);
        auto_report(m, p->N, f, NULL);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s_plots", stem);
    return rc ? rc : route_write_plots(path, &p->ra, p->li, p->heat, p->N);
}

int route_eval_run(Model *m, const Config *cfg, const LmData *d, int split, int B, int N, const RouteEvalOpts *o) {
    Pass p = {.B = B, .N = N};
    int rc = pass_init(&p, m, cfg, d, split, o);
    const MixerVT *avt = mixer_find("auto");
    for (int l = 0; l < m->L && o->analyze; l++) /* auto: both paths on every window, their gap summed */
        if (m->blocks[l].mixer->vt == avt) mixer_auto_probe(m->blocks[l].mixer, 1);
    if (!rc) rc = pass_run(&p, m, d, split);
    if (p.df) {
        if (fclose(p.df) != 0 && !rc) rc = gma_errorf("%s: write failed", o->dump);
        else if (!rc)
            printf("responsibilities: %s (%d layers x %ld windows x %d heads x %d x %d float32)\n", o->dump, p.L, p.W, p.H,
                   N, p.Kc);
    }
    if (!rc && o->analyze) rc = write_analysis(&p, m, o);
    pass_free(&p);
    return rc;
}
