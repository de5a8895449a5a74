/* bench_prefill.c: time to first token against prompt length (model_prefill, model/model.h).
 * For each N of --seq and each mixer, side by side at that N: a model of the bench shape
 * with a window of N + NDEC positions, a random prompt of N tokens; each repeat times the
 * prefill (one forward over the prompt filling every layer's decode state, then the last
 * position's logits: the time to the first token), NDEC decode steps after it (tokens/s at
 * context N), and a training forward over the same N tokens (model_forward with targets:
 * the speed the prefill is held to). Once per point up to --feed-max tokens: the prompt
 * fed one decode step a token (the time to first token without prefill). Then the
 * crossover table against sdpa: the shortest N of --seq from which a mixer's prefill
 * (decode) is ahead of sdpa's at that and every longer N measured. */
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/bench_report.h"

enum { NDEC = 16 };

/* one repeat of a point: prefill, NDEC steps, the training forward; 0 or -1 */
static int one_repeat(Model *m, const int32_t *prompt, const int32_t *tgt, int N, double *pre, double *dec,
                      double *fwd) {
    DecodeState ds;
    if (model_decode_begin(m, &ds) != 0) return -1;
    double t0 = gma_now();
    int rc = model_prefill(m, &ds, prompt, N);
    ops_sync();
    double t1 = gma_now();
    for (int i = 0; i < NDEC && rc == 0; i++) rc = model_decode_step(m, &ds, prompt[i]);
    ops_sync();
    double t2 = gma_now();
    model_decode_end(m, &ds);
    if (rc != 0) return -1;
    LossStats st;
    double t3 = gma_now();
    if (model_forward(m, prompt, tgt, 1, N, NULL, 0, &st, 1, 0) != 0) return -1;
    ops_sync();
    *pre = t1 - t0, *dec = NDEC / (t2 - t1), *fwd = gma_now() - t3;
    return 0;
}

/* seconds to feed the N-token prompt a decode step a token (its logits at the end) */
static double time_feed(Model *m, const int32_t *prompt, int N) {
    DecodeState ds;
    if (model_decode_begin(m, &ds) != 0) return 0;
    double t0 = gma_now();
    int rc = 0;
    for (int i = 0; i < N && rc == 0; i++) rc = model_decode_step(m, &ds, prompt[i]);
    ops_sync();
    double dt = gma_now() - t0;
    model_decode_end(m, &ds);
    return rc == 0 ? dt : 0;
}

/* one point of mixer t, its rows labelled `label`; r->ok 0 with r->why when not measured */
static void prefill_point(const BenchOpts *o, const char *t, const char *label, int N, BenchPrefillResult *r) {
    memset(r, 0, sizeof *r);
    r->mixer = label, r->N = N;
    BenchOpts oo = *o;
    oo.T = N + NDEC;
    Model m;
    if (bench_causal_model(&oo, t, 1, &m, 0) != 0) {
        r->why = "not built";
        return;
    }
    if (!model_can_decode(&m)) {
        r->why = "no decode step";
        model_free(&m);
        return;
    }
    int32_t *prompt = xmalloc(sizeof(int32_t) * (size_t)N), *tgt = xmalloc(sizeof(int32_t) * (size_t)N);
    Rng rng;
    rng_seed(&rng, 7);
    for (int i = 0; i < N; i++) prompt[i] = (int32_t)rng_below(&rng, (uint64_t)o->V);
    for (int i = 0; i < N; i++) tgt[i] = i + 1 < N ? prompt[i + 1] : -1;
    double *pre = xmalloc(sizeof(double) * 3 * (size_t)o->repeat), *dec = pre + o->repeat, *fwd = dec + o->repeat;
    int n = 0;
    DecodeState ds; /* a short untimed prefill first: the first call's page faults and thread start-up */
    if (model_decode_begin(&m, &ds) == 0) {
        model_prefill(&m, &ds, prompt, GMA_MIN(N, 64));
        model_decode_end(&m, &ds);
    }
    for (int k = 0; k < o->repeat; k++) {
        if (one_repeat(&m, prompt, tgt, N, &pre[n], &dec[n], &fwd[n]) != 0) {
            fprintf(stderr, "gmabench: %s\n", gma_error());
            break;
        }
        n++;
        if (pre[n - 1] + fwd[n - 1] > o->max_seconds) break; /* one repeat past the time limit is enough */
    }
    if (n > 0) {
        bench_sort(pre, n), bench_sort(dec, n), bench_sort(fwd, n);
        r->ok = 1, r->repeats = n;
        r->med = pre[n / 2], r->lo = pre[0], r->hi = pre[n - 1];
        r->dec = dec[n / 2], r->dec_lo = dec[0], r->dec_hi = dec[n - 1];
        r->fwd = fwd[n / 2], r->fwd_lo = fwd[0], r->fwd_hi = fwd[n - 1];
        if (N <= o->feed_max) r->feed = time_feed(&m, prompt, N);
    } else
        r->why = "failed";
    free(pre);
    free(prompt);
    free(tgt);
    model_free(&m);
}

void bench_prefill(const BenchOpts *o, BenchProf *p, cJSON *out) {
    (void)p;
    char names[BENCH_MAX_MIXERS][32];
    int nm = bench_mixer_names(o, names, BENCH_MAX_MIXERS);
    char labels[BENCH_MAX_MIXERS][BENCH_LABEL];
    bench_mixer_labels(o, names, nm, labels);
    BenchPrefillResult *rs = xcalloc((size_t)nm * o->n_seq, sizeof *rs);
    int *late = xcalloc((size_t)nm, sizeof(int)); /* a mixer past the time limit skips longer N */
    bench_report_prefill_head(o, NDEC);
    cJSON *arr = cJSON_AddArrayToObject(out, "prefill");
    for (int s = 0; s < o->n_seq; s++)
        for (int k = 0; k < nm; k++) {
            BenchPrefillResult *r = &rs[(size_t)k * o->n_seq + s];
            if (late[k]) *r = (BenchPrefillResult){.mixer = labels[k], .N = o->seq[s], .why = "skipped: time"};
            else prefill_point(o, names[k], labels[k], o->seq[s], r);
            if (r->ok && r->med + r->fwd > o->max_seconds / 2) late[k] = 1; /* the next N takes at least twice as long */
            bench_report_prefill_row(arr, r);
        }
    bench_report_prefill_crossover(out, rs, labels, nm, o->seq, o->n_seq);
    free(late);
    free(rs);
}
