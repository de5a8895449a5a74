/* bench_report.c: gmabench's tables and JSON rows (bench_report.h). */
#include "bench/bench_report.h"
#include "core/json_nums.h"

#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "ops/ops.h"

/* ---------------- mixer layer ---------------- */
void bench_report_mixer_head(const BenchOpts *o) {
    printf("\n## mixer layer, forward+backward (%s, D=%d, H=%d, Kc=%d, B=%d, %s, %d repeats, %s)\n",
           o->causal ? "causal" : "bidirectional", o->D, o->H, o->Kc, o->B, g_ops->name, o->repeat, REAL_NAME);
    printf("%-10s %7s %12s %20s %14s %12s %9s %9s %9s %9s %7s %8s %9s %9s\n", "mixer", "N", "time ms", "min-max ms",
           "peak MiB", "time/first", "cpu ms", "GEMM GF/s", "BLAS GF/s", "ratio", "GEMM %", "nom GF", "nom GF/s",
           "nom/BLAS");
}

static cJSON *mixer_row(cJSON *arr, const char *mixer, int N) {
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "mixer", mixer);
    cJSON_AddNumberToObject(row, "N", N);
    cJSON_AddItemToArray(arr, row);
    return row;
}

void bench_report_mixer_skip(cJSON *arr, const char *mixer, int N, const char *why, double planned) {
    printf("%-10s %7d %12s %20s %14.1f %12s  (planned %.1f MiB)\n", mixer, N, "-", why, 0.0, "-", planned / 1048576);
    cJSON *row = mixer_row(arr, mixer, N);
    cJSON_AddStringToObject(row, "skipped", why);
    cJSON_AddNumberToObject(row, "planned_bytes", planned);
}

/* GEMM: the products through the op table (their FLOPs over the layer time, the same FLOPs
 * over their replay on this BLAS, the share of the recording pass spent inside them, each
 * product synchronised); nom: those plus the products inside fused kernels (the mixer's
 * fused_flops), over the layer time */
void bench_report_mixer_row(cJSON *arr, const char *mixer, int N, const BenchMixResult *r, double planned,
                            double first) {
    char mm[64], ratio[32] = "-";
    snprintf(mm, sizeof mm, "%.2f-%.2f", r->lo * 1e3, r->hi * 1e3);
    if (first > 0) snprintf(ratio, sizeof ratio, "%.3f", r->med / first);
    double gf = r->gemm_flops / r->med / 1e9, bgf = r->blas_time > 0 ? r->gemm_flops / r->blas_time / 1e9 : 0;
    double nom = r->gemm_flops + r->fused_flops, ngf = nom / r->med / 1e9;
    printf("%-10s %7d %12.2f %20s %14.1f %12s %9.2f %9.1f %9.1f %9.3f %6.1f%% %8.3f %9.1f %9.3f\n", mixer, N,
           r->med * 1e3, mm, r->peak / 1048576, ratio, r->cpu_med * 1e3, gf, bgf, bgf > 0 ? gf / bgf : 0,
           100 * r->gemm_time / r->pass_time, nom / 1e9, ngf, bgf > 0 ? ngf / bgf : 0);
    cJSON *row = mixer_row(arr, mixer, N);
    cJSON_AddNumberToObject(row, "ms", r->med * 1e3);
    cJSON_AddNumberToObject(row, "ms_min", r->lo * 1e3);
    cJSON_AddNumberToObject(row, "ms_max", r->hi * 1e3);
    cJSON_AddNumberToObject(row, "peak_bytes", r->peak);
    cJSON_AddNumberToObject(row, "planned_bytes", planned);
    if (first > 0) cJSON_AddNumberToObject(row, "ratio_to_first", r->med / first);
    cJSON_AddNumberToObject(row, "cpu_ms", r->cpu_med * 1e3);
    cJSON_AddNumberToObject(row, "gemm_gflop", r->gemm_flops / 1e9);
    cJSON_AddNumberToObject(row, "gemm_gflops", gf);
    cJSON_AddNumberToObject(row, "blas_gflops_same_shapes", bgf);
    cJSON_AddNumberToObject(row, "share_in_gemm", r->gemm_time / r->pass_time);
    cJSON_AddNumberToObject(row, "nominal_gflop", nom / 1e9);
    cJSON_AddNumberToObject(row, "nominal_gflops", ngf);
}

/* ---------------- whole-model training step ---------------- */
void bench_report_model_head(const BenchOpts *o, int S, int time_all, const double load[3]) {
    printf("\n## whole-model training step (L=%d, D=%d, H=%d, V=%d, B=%d, T=%d, Kc=%d, %s, %d rounds, %s, load %.2f %.2f %.2f)\n",
           o->L, o->D, o->H, o->V, o->B, o->T, o->Kc, g_ops->name, S, REAL_NAME, load[0], load[1], load[2]);
    if (time_all) /* the CPU backend also reports the products inside its other ops */
        printf("all: with the products the CPU backend runs inside its other ops (GMA routing, mixing cores, tiled\n"
               "attention) replayed too, each at 1/threads of its time when it ran in a parallel region\n");
    printf("%-10s %10s %10s %15s %10s %9s %9s %9s %10s %10s %10s %7s %12s %6s %10s %7s %12s %6s%s\n", "mixer", "params",
           "step ms", "min-max", "tokens/s", "peak MiB", "plan MiB", "par MiB", "step GF/s", "GEMM GF/s", "BLAS GF/s", "ratio", "min-max", "best", "non-GEMM %",
           "all", "min-max", "best", o->peak_tflops > 0 ? "      MFU %" : "");
}

static void model_print(const BenchOpts *o, const BenchModelResult *r) {
    char label[40];
    snprintf(label, sizeof label, r->drop > 0 ? "%s+d0.1" : "%s", r->mixer);
    if (r->rounds == 0) { /* one step, over the time limit for rounds with replays */
        printf("%-10s %10zu %10.1f %15s %10.0f %9.1f %9.1f %9.1f  (one step: rounds with replays would take over --max-seconds)\n",
               label, r->params, r->med * 1e3, "-", o->B * o->T / r->med, r->peak / 1048576.0, r->plan / 1048576.0,
               r->pmem / 1048576.0);
        return;
    }
    double gf = r->flops_step / r->med / 1e9, blas_gf = r->flops_step / r->blas_time / 1e9;
    char mm[48], rr[32], ar[32] = "-", a1[16] = "-", a2[16] = "-";
    snprintf(mm, sizeof mm, "%.1f-%.1f", r->tmin * 1e3, r->tmax * 1e3);
    snprintf(rr, sizeof rr, "%.3f-%.3f", r->r_lo, r->r_hi);
    if (r->time_all) {
        snprintf(a1, sizeof a1, "%.3f", r->a_med), snprintf(ar, sizeof ar, "%.3f-%.3f", r->a_lo, r->a_hi);
        snprintf(a2, sizeof a2, "%.3f", r->all_best);
    }
    printf("%-10s %10zu %10.1f %15s %10.0f %9.1f %9.1f %9.1f %10.2f %10.2f %10.2f %7.3f %12s %6.3f %9.1f%% %7s %12s %6s", label,
           r->params, r->med * 1e3, mm, o->B * o->T / r->med, r->peak / 1048576.0, r->plan / 1048576.0, r->pmem / 1048576.0, gf, r->flops_step / r->mm_med / 1e9, blas_gf, r->r_med, rr,
           r->blas_time / r->tmin, 100 * r->med_out, a1, ar, a2);
    if (o->peak_tflops > 0) printf(" %11.2f%%", 100 * gf / (o->peak_tflops * 1e3));
    if (r->drop > 0 && r->base_ms > 0) printf("  (dropout 0.1 / 0: %.3f)", r->med * 1e3 / r->base_ms);
    printf("\n");
}

static void model_json_ratios(cJSON *row, const BenchOpts *o, const BenchModelResult *r) {
    const JsonNum ratios[] = {{"ratio", r->r_med}, {"ratio_min", r->r_lo}, {"ratio_max", r->r_hi},
                              {"ratio_best", r->blas_time / r->tmin}, {"share_outside_gemm", r->med_out}};
    const JsonNum all[] = {{"hidden_gflop_per_step", r->hid_step / 1e9}, {"ratio_all", r->a_med}, {"ratio_all_min", r->a_lo},
                           {"ratio_all_max", r->a_hi}, {"ratio_all_best", r->all_best}};
    json_add_nums(row, ratios, JSON_NUMS_N(ratios));
    if (r->time_all) json_add_nums(row, all, JSON_NUMS_N(all));
    if (o->peak_tflops > 0) {
        cJSON_AddNumberToObject(row, "peak_tflops", o->peak_tflops);
        cJSON_AddNumberToObject(row, "mfu", r->flops_step / r->med / 1e9 / (o->peak_tflops * 1e3));
    }
}

cJSON *bench_report_model_row(cJSON *arr, const BenchOpts *o, const BenchModelResult *r) {
    model_print(o, r);
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "mixer", r->mixer);
    cJSON_AddNumberToObject(row, "dropout", r->drop);
    cJSON_AddNumberToObject(row, "attn_dropout", r->attn_drop);
    if (r->drop > 0 && r->base_ms > 0) cJSON_AddNumberToObject(row, "step_ms_vs_no_dropout", r->med * 1e3 / r->base_ms);
    cJSON_AddNumberToObject(row, "params", (double)r->params);
    cJSON_AddNumberToObject(row, "rounds", r->rounds);
    cJSON_AddNumberToObject(row, "step_ms", r->med * 1e3);
    cJSON_AddNumberToObject(row, "step_ms_min", r->tmin * 1e3);
    cJSON_AddNumberToObject(row, "step_ms_max", r->tmax * 1e3);
    cJSON_AddNumberToObject(row, "tokens_per_s", o->B * o->T / r->med);
    cJSON_AddNumberToObject(row, "T", o->T);
    cJSON_AddNumberToObject(row, "B", o->B);
    cJSON_AddNumberToObject(row, "peak_mib", r->peak / 1048576.0);
    if (r->peak_whole) cJSON_AddTrueToObject(row, "peak_includes_model_init");
    cJSON_AddNumberToObject(row, "planned_mib", r->plan / 1048576.0);
    cJSON_AddNumberToObject(row, "params_grads_moments_mib", r->pmem / 1048576.0);
    if (r->rounds == 0) { /* one step: no rounds, no replays */
        cJSON_AddItemToArray(arr, row);
        return row;
    }
    cJSON_AddNumberToObject(row, "gemm_gflop_per_step", r->flops_step / 1e9);
    cJSON_AddNumberToObject(row, "achieved_gflops", r->flops_step / r->med / 1e9);
    cJSON_AddNumberToObject(row, "gemm_gflops_in_step", r->flops_step / r->mm_med / 1e9);
    cJSON_AddNumberToObject(row, "blas_gflops_same_shapes", r->flops_step / r->blas_time / 1e9);
    model_json_ratios(row, o, r);
    cJSON_AddItemToArray(arr, row);
    return row;
}

void bench_report_shapes(cJSON *row, const BenchProf *p, int S) {
    cJSON *arr = cJSON_AddArrayToObject(row, "shapes");
    printf("  %5s %5s %5s %2s %5s %5s %12s %12s %12s\n", "M", "N", "K", "t", "batch", "count", "in step ms",
           "replay ms", "replay/step");
    for (int i = 0; i < p->nshapes; i++) {
        const BenchShape *sh = &p->shapes[i];
        if (sh->hidden) continue;
        double step = sh->in_step / S, rep = sh->best * (double)sh->count;
        printf("  %5d %5d %5d %d%d %5d %5ld %12.3f %12.3f %12.3f\n", sh->M, sh->N, sh->K, sh->ta, sh->tb, sh->batch,
               sh->count, step * 1e3, rep * 1e3, step > 0 ? rep / step : 0);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "M", sh->M);
        cJSON_AddNumberToObject(e, "N", sh->N);
        cJSON_AddNumberToObject(e, "K", sh->K);
        cJSON_AddNumberToObject(e, "ta", sh->ta);
        cJSON_AddNumberToObject(e, "tb", sh->tb);
        cJSON_AddNumberToObject(e, "batch", sh->batch);
        cJSON_AddNumberToObject(e, "count", (double)sh->count);
        cJSON_AddNumberToObject(e, "step_ms", step * 1e3);
        cJSON_AddNumberToObject(e, "replay_ms", rep * 1e3);
        cJSON_AddItemToArray(arr, e);
    }
}

/* ---------------- generation ---------------- */
void bench_report_decode_head(const BenchOpts *o, int np, int nn, int cpu) {
    printf("\n## generation (L=%d, D=%d, H=%d, V=%d, Kc=%d, prompt %d + %d new tokens, %s, %d thread(s), median of %d)\n",
           o->L, o->D, o->H, o->V, o->Kc, np, nn, g_ops->name, omp_get_max_threads(), o->repeat);
    if (cpu)
        printf("limit: the step's weight products replayed alone (sgemv at M = 1, its GEMM at M > 1) plus one read of\n"
               "the decode state it reads (state MB: sdpa's key/value rows at the mean context, the linear cores' S, z),\n"
               "a pass right after each step of the generation, its time taken out of the generation's\n");
    if (cpu) printf("outside: at M = 1, the fraction of the steps' time outside those weight products, timed in the step\n");
    printf("%-10s %5s %12s %20s %10s %14s %8s %8s%s\n", "mixer", "M", "tokens/s", "min-max", "state MB", "limit tok/s",
           "ratio", "outside", o->full ? "  full fwd tok/s" : "");
}

static void decode_print(const BenchOpts *o, const BenchDecodeResult *r) {
    if (r->why) {
        printf("%-10s %5d %12s\n", r->mixer, r->M, r->why);
        fflush(stdout);
        return;
    }
    char tps[32] = "no decode step", mm[48] = "-", lstr[32] = "-", ratio[32] = "-", fs[40] = "", out[16] = "-";
    if (r->outside >= 0) snprintf(out, sizeof out, "%.3f", r->outside);
    if (r->can) {
        snprintf(tps, sizeof tps, "%.1f", r->med);
        snprintf(mm, sizeof mm, "%.1f-%.1f", r->lo, r->hi);
        if (r->lim > 0) {
            snprintf(lstr, sizeof lstr, "%.1f", r->lim);
            snprintf(ratio, sizeof ratio, "%.3f", r->med / r->lim);
        }
    }
    if (o->full && r->M == 1) snprintf(fs, sizeof fs, "  %15.1f", r->full);
    else if (o->full) snprintf(fs, sizeof fs, "  %15s", "-");
    printf("%-10s %5d %12s %20s %10.2f %14s %8s %8s%s\n", r->mixer, r->M, tps, mm, (double)r->state_bytes / 1e6, lstr,
           ratio, out, fs);
    fflush(stdout);
}

void bench_report_decode_row(cJSON *arr, const BenchOpts *o, const BenchDecodeResult *r) {
    decode_print(o, r);
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "mixer", r->mixer);
    cJSON_AddNumberToObject(row, "samples", r->M);
    cJSON_AddNumberToObject(row, "prompt", r->prompt);
    cJSON_AddNumberToObject(row, "new_tokens", r->new_tokens);
    cJSON_AddNumberToObject(row, "threads", omp_get_max_threads());
    if (r->why) cJSON_AddStringToObject(row, "skipped", r->why);
    if (r->can && !r->why) {
        cJSON_AddNumberToObject(row, "tokens_per_s", r->med);
        cJSON_AddNumberToObject(row, "tokens_per_s_min", r->lo);
        cJSON_AddNumberToObject(row, "tokens_per_s_max", r->hi);
        cJSON_AddNumberToObject(row, "state_bytes_per_step", (double)r->state_bytes);
    }
    if (r->lim > 0) {
        cJSON_AddNumberToObject(row, "limit_tokens_per_s", r->lim);
        cJSON_AddNumberToObject(row, "limit_tokens_per_s_min", r->lim_lo);
        cJSON_AddNumberToObject(row, "limit_tokens_per_s_max", r->lim_hi);
        cJSON_AddNumberToObject(row, "ratio_to_limit", r->med / r->lim);
    }
    if (r->full > 0) cJSON_AddNumberToObject(row, "full_forward_tokens_per_s", r->full);
    if (r->outside >= 0) cJSON_AddNumberToObject(row, "step_outside_weight_products", r->outside);
    cJSON_AddItemToArray(arr, row);
}

/* ---------------- prefill ---------------- */
void bench_report_prefill_head(const BenchOpts *o, int ndec) {
    printf("\n## prefill: time to first token (L=%d, D=%d, H=%d, V=%d, Kc=%d, batch 1, %s, %d thread(s), median of %d)\n",
           o->L, o->D, o->H, o->V, o->Kc, g_ops->name, omp_get_max_threads(), o->repeat);
    printf("ttft: model_prefill of the N-token prompt; fwd: a training forward over the same N tokens; ratio: prefill\n"
           "tok/s over fwd tok/s; fed: the prompt fed a decode step a token (N <= %d); decode: %d steps after the prefill\n",
           o->feed_max, ndec);
    printf("%-10s %7s %11s %19s %12s %12s %19s %7s %11s %8s %11s %17s\n", "mixer", "N", "ttft ms", "min-max",
           "prefill tok/s", "fwd tok/s", "fwd min-max ms", "ratio", "fed ms", "fed/ttft", "decode t/s", "min-max");
}

void bench_report_prefill_row(cJSON *arr, const BenchPrefillResult *r) {
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "mixer", r->mixer);
    cJSON_AddNumberToObject(row, "N", r->N);
    cJSON_AddNumberToObject(row, "threads", omp_get_max_threads());
    cJSON_AddItemToArray(arr, row);
    if (!r->ok) {
        printf("%-10s %7d %11s  %s\n", r->mixer, r->N, "-", r->why ? r->why : "-");
        cJSON_AddStringToObject(row, "skipped", r->why ? r->why : "-");
        fflush(stdout);
        return;
    }
    char mm[48], fm[48], dm[48], fed[24] = "-", sp[24] = "-";
    snprintf(mm, sizeof mm, "%.1f-%.1f", r->lo * 1e3, r->hi * 1e3);
    snprintf(fm, sizeof fm, "%.1f-%.1f", r->fwd_lo * 1e3, r->fwd_hi * 1e3);
    snprintf(dm, sizeof dm, "%.1f-%.1f", r->dec_lo, r->dec_hi);
    if (r->feed > 0) snprintf(fed, sizeof fed, "%.1f", r->feed * 1e3), snprintf(sp, sizeof sp, "%.1f", r->feed / r->med);
    printf("%-10s %7d %11.1f %19s %12.0f %12.0f %19s %7.3f %11s %8s %11.1f %17s\n", r->mixer, r->N, r->med * 1e3, mm,
           r->N / r->med, r->N / r->fwd, fm, r->fwd / r->med, fed, sp, r->dec, dm);
    fflush(stdout);
    cJSON_AddNumberToObject(row, "repeats", r->repeats);
    cJSON_AddNumberToObject(row, "ttft_s", r->med);
    cJSON_AddNumberToObject(row, "ttft_s_min", r->lo);
    cJSON_AddNumberToObject(row, "ttft_s_max", r->hi);
    cJSON_AddNumberToObject(row, "prefill_tokens_per_s", r->N / r->med);
    cJSON_AddNumberToObject(row, "train_forward_tokens_per_s", r->N / r->fwd);
    cJSON_AddNumberToObject(row, "train_forward_s_min", r->fwd_lo);
    cJSON_AddNumberToObject(row, "train_forward_s_max", r->fwd_hi);
    cJSON_AddNumberToObject(row, "prefill_over_forward", r->fwd / r->med);
    if (r->feed > 0) cJSON_AddNumberToObject(row, "fed_s", r->feed);
    cJSON_AddNumberToObject(row, "decode_tokens_per_s", r->dec);
    cJSON_AddNumberToObject(row, "decode_tokens_per_s_min", r->dec_lo);
    cJSON_AddNumberToObject(row, "decode_tokens_per_s_max", r->dec_hi);
}

/* the shortest seq[s] from which mixer k is ahead of the reference at every measured N
 * (what 0: prefill time, 1: decode tokens/s); -1 when it never is, 0 when nothing compares */
static int cross_at(const BenchPrefillResult *rs, int k, int ref, const int *seq, int ns, int what) {
    int at = -1, any = 0;
    for (int s = ns - 1; s >= 0; s--) {
        const BenchPrefillResult *a = &rs[(size_t)k * ns + s], *b = &rs[(size_t)ref * ns + s];
        if (!a->ok || !b->ok) continue;
        any = 1;
        if (!(what ? a->dec > b->dec : a->med < b->med)) break;
        at = seq[s];
    }
    return any ? at : 0;
}

void bench_report_prefill_crossover(cJSON *out, const BenchPrefillResult *rs, char names[][BENCH_LABEL], int nm, const int *seq,
                                    int ns) {
    int ref = -1;
    for (int k = 0; k < nm; k++)
        if (!strcmp(names[k], "sdpa")) ref = k;
    if (ref < 0 || nm < 2) return;
    printf("\n## crossover against sdpa: the shortest N measured from which the mixer is ahead at every longer N measured\n");
    printf("%-10s %16s %16s\n", "mixer", "prefill (ttft)", "decode tok/s");
    cJSON *arr = cJSON_AddArrayToObject(out, "prefill_crossover");
    for (int k = 0; k < nm; k++) {
        if (k == ref) continue;
        char c[2][32];
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "mixer", names[k]);
        for (int w = 0; w < 2; w++) {
            int at = cross_at(rs, k, ref, seq, ns, w);
            if (at > 0) snprintf(c[w], sizeof c[w], "%d", at);
            else snprintf(c[w], sizeof c[w], "%s", at < 0 ? "not ahead" : "-");
            cJSON_AddNumberToObject(row, w ? "decode_ahead_from_N" : "prefill_ahead_from_N", at);
        }
        printf("%-10s %16s %16s\n", names[k], c[0], c[1]);
        cJSON_AddItemToArray(arr, row);
    }
    fflush(stdout);
}
