/* trainer.c: the training loop (see trainer.h).
 *
 * Each step: zero gradients; for each micro-batch draw a batch, forward, backward with
 * scale 1/grad_accum; global gradient norm; a non-finite loss or norm refuses the update
 * (logged; the run stops after train.max_bad_steps in a row, leaving the last good
 * checkpoint); otherwise clip and update. Periodically: metrics.jsonl rows, validation,
 * checkpoints. SIGINT/SIGTERM finish the current step, write a checkpoint and return
 * TRAIN_INTERRUPTED. Testing hook: GMA_FAULT_NAN_STEPS="3,4" forces a NaN loss at those
 * (0-based) steps. */
#include "train/trainer.h"

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/lmdata.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "optim/optim.h"
#include "train/evaluate.h"
#include "train/health.h"

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { g_stop = sig; }

static int fault_nan(long step) {
    const char *s = getenv("GMA_FAULT_NAN_STEPS");
    if (!s) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    char *sv = NULL;
    for (char *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv))
        if (atol(t) == step) return 1;
    return 0;
}

static void fmt_eta(char *out, size_t cap, double s) {
    if (s < 0 || !isfinite(s)) s = 0;
    long t = (long)s;
    if (t >= 3600) snprintf(out, cap, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else snprintf(out, cap, "%ldm%02lds", t / 60, t % 60);
}

static void metrics_row(FILE *f, cJSON *row) {
    char *s = cJSON_PrintUnformatted(row);
    fprintf(f, "%s\n", s);
    fflush(f);
    free(s);
    cJSON_Delete(row);
}

static cJSON *eval_row(long step, const char *split, const EvalResult *r, int recall) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step", (double)step);
    cJSON_AddStringToObject(o, "split", split);
    cJSON_AddNumberToObject(o, "loss", r->loss);
    cJSON_AddNumberToObject(o, "ppl", r->ppl);
    if (recall) cJSON_AddNumberToObject(o, "acc", r->acc);
    if (r->word_ppl > 0) cJSON_AddNumberToObject(o, "word_ppl", r->word_ppl);
    cJSON_AddNumberToObject(o, "tokens", r->tokens);
    return o;
}

static int write_json_file(const char *dir, const char *name, const char *text) {
    char path[2100];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return gma_write_file_atomic(path, text, strlen(text));
}

int trainer_run(const Config *cfg_in, const TrainerOptions *o) {
    Config cfg = *cfg_in;
    const TrainCfg *tc = &cfg.train;
    LmData data;
    if (lmdata_open(&data, &cfg) != 0) return TRAIN_BAD_INPUT;
    if (cfg.model.vocab_size == 0) cfg.model.vocab_size = (int)data.vocab;
    if ((uint32_t)cfg.model.vocab_size < data.vocab) {
        lmdata_close(&data);
        gma_errorf("key model.vocab_size: %d is smaller than the data's vocabulary %u", cfg.model.vocab_size, data.vocab);
        return TRAIN_BAD_INPUT;
    }
    Model m;
    if (model_build(&m, &cfg) != 0) {
        lmdata_close(&data);
        return TRAIN_BAD_INPUT;
    }
    int B = tc->batch_size, N = tc->seq_len;
    model_alloc(&m, B, N);
    model_init_params(&m, (uint64_t)cfg.seed);
    TrainState ts = {.step = 0, .tokens_seen = 0, .best_valid = INFINITY};
    rng_seed2(&ts.rng, (uint64_t)cfg.seed, 0x747261696eULL);
    if (o->resume_dir) {
        char dir[2048];
        if (ckpt_resolve(o->resume_dir, dir, sizeof dir) != 0 || ckpt_load(&m, &ts, dir) != 0) {
            model_free(&m);
            lmdata_close(&data);
            return TRAIN_BAD_INPUT;
        }
        if (!o->quiet) fprintf(stderr, "resumed from %s at step %ld\n", dir, ts.step);
    }
    if (gma_mkdirs(o->run_dir) != 0) {
        model_free(&m);
        lmdata_close(&data);
        return TRAIN_ERROR;
    }
    char *js = cfg_to_json(&cfg);
    write_json_file(o->run_dir, "config.json", js);
    free(js);
    char mpath[2100];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", o->run_dir);
    FILE *mf = fopen(mpath, o->resume_dir ? "a" : "w");
    if (!mf) {
        model_free(&m);
        lmdata_close(&data);
        gma_errorf("%s: cannot open for writing", mpath);
        return TRAIN_ERROR;
    }
    if (!o->quiet)
        fprintf(stderr, "gmatrain: %s | %zu parameters | mixers %s%s | B=%d N=%d accum=%d | %s | activations %.1f MiB\n",
                cfg.name, model_param_count(&m), cfg.model.mixer[0], cfg.model.n_mixer > 1 ? ",..." : "", B, N,
                tc->grad_accum, g_ops->name, m.act_bytes / 1048576.0);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    g_stop = 0;

    int32_t *tok = xmalloc(sizeof(int32_t) * B * N), *tgt = xmalloc(sizeof(int32_t) * B * N);
    HealthMon hm;
    health_init(&hm, &m);
    int gma_layers = model_gma_layers(&m), div_on = cfg.gma.div_weight > 0;
    int fresh = ts.step == 0 && !o->resume_dir;
    double win_div = 0;
    double t_start = gma_now(), train_time = 0, win_loss = 0, win_tokens = 0;
    int win_n = 0, bad_row = 0, rc = TRAIN_OK;
    long step0 = ts.step;
    double last_loss = NAN;
    while (ts.step < tc->steps && !g_stop) {
        long step = ts.step;
        double t0 = gma_now();
        model_zero_grad(&m);
        double loss = 0, count_tok = 0, div = 0;
        int bad = 0;
        for (int a = 0; a < tc->grad_accum; a++) {
            lmdata_train_batch(&data, &ts.rng, (uint64_t)step * tc->grad_accum + a, B, N, tok, tgt);
            LossStats st;
            if (model_forward(&m, tok, tgt, B, N, NULL, 0, &st, 1, step) != 0) {
                rc = TRAIN_BAD_INPUT;
                goto done;
            }
            if (fresh && a == 0 && model_wants_kmeans(&m)) {
                /* k-means on this first batch's query rows (GMA_SPEC 5), then redo the forward */
                Rng krng;
                rng_seed2(&krng, (uint64_t)cfg.seed, 0x6b6d65616e73ULL);
                if (model_kmeans_init(&m, tok, tgt, B, N, NULL, &krng) != 0 ||
                    model_forward(&m, tok, tgt, B, N, NULL, 0, &st, 1, step) != 0) {
                    rc = TRAIN_ERROR;
                    goto done;
                }
                if (!o->quiet) fprintf(stderr, "gmatrain: k-means initialisation of the GMA routing/memory done\n");
            }
            fresh = 0;
            if (gma_layers && !hm.have_norm0) health_baseline(&hm, &m);
            double l = st.count > 0 ? st.loss_sum / st.count : 0;
            if (fault_nan(step)) l = NAN;
            if (!isfinite(l)) {
                bad = 1;
                loss = l;
                break;
            }
            loss += l / tc->grad_accum;
            if (div_on) div += model_div_loss(&m) / tc->grad_accum;
            count_tok += (double)B * N;
            model_backward(&m, 1.0 / tc->grad_accum);
            model_update_buffers(&m);
        }
        double gn = bad ? NAN : optim_grad_norm(&m);
        if (!isfinite(gn)) bad = 1;
        double lr = optim_lr(tc, step);
        if (bad) {
            bad_row++;
            cJSON *row = cJSON_CreateObject();
            cJSON_AddNumberToObject(row, "step", (double)step);
            cJSON_AddStringToObject(row, "event", "nonfinite");
            cJSON_AddStringToObject(row, "what", isfinite(loss) ? "grad_norm" : "loss");
            cJSON_AddNumberToObject(row, "in_a_row", bad_row);
            metrics_row(mf, row);
            fprintf(stderr, "%sstep %ld: non-finite %s, update refused (%d in a row)\n", o->progress_tty ? "\n" : "", step,
                    isfinite(loss) ? "gradient norm" : "loss", bad_row);
            if (bad_row >= tc->max_bad_steps) {
                gma_errorf("stopping: %d non-finite steps in a row (train.max_bad_steps); the last checkpoint is kept",
                           bad_row);
                rc = TRAIN_NONFINITE;
                goto done;
            }
        } else {
            bad_row = 0;
            optim_step(&m, tc, step + 1, lr, gn);
            last_loss = loss;
            win_loss += loss;
            win_div += div;
            win_n++;
        }
        ts.step = step + 1;
        ts.tokens_seen += count_tok;
        double dt = gma_now() - t0;
        train_time += dt;
        win_tokens += count_tok;
        if (ts.step % tc->log_every == 0 || ts.step == tc->steps) {
            double tps = train_time > 0 ? ts.tokens_seen / train_time : 0;
            if (step0 > 0) tps = train_time > 0 ? (ts.tokens_seen - (double)step0 * B * N * tc->grad_accum) / train_time : 0;
            cJSON *row = cJSON_CreateObject();
            cJSON_AddNumberToObject(row, "step", (double)ts.step);
            cJSON_AddNumberToObject(row, "loss", win_n ? win_loss / win_n : NAN);
            if (div_on) cJSON_AddNumberToObject(row, "div_loss", win_n ? win_div / win_n : NAN);
            cJSON_AddNumberToObject(row, "lr", lr);
            cJSON_AddNumberToObject(row, "grad_norm", gn);
            cJSON_AddNumberToObject(row, "tokens_per_s", tps);
            cJSON_AddNumberToObject(row, "elapsed_s", gma_now() - t_start);
            metrics_row(mf, row);
            if (!o->quiet) {
                char eta[32];
                double per = train_time / (double)(ts.step - step0);
                fmt_eta(eta, sizeof eta, per * (double)(tc->steps - ts.step));
                fprintf(stderr, "%sstep %6ld/%d | loss %.4f | lr %.2e | gnorm %.3f | %.0f tok/s | ETA %s%s",
                        o->progress_tty ? "\r" : "", ts.step, tc->steps, win_n ? win_loss / win_n : NAN, lr, gn, tps, eta,
                        o->progress_tty ? "   " : "\n");
            }
            win_loss = 0;
            win_div = 0;
            win_n = 0;
            win_tokens = 0;
        }
        if (gma_layers && !bad && cfg.gma.monitor_every > 0 && ts.step % cfg.gma.monitor_every == 0 &&
            health_check(&hm, &m, ts.step, mf, o->quiet, (uint64_t)cfg.seed)) {
            if (ckpt_save(&m, &ts, o->run_dir, tc->keep_checkpoints, NULL) != 0) {
                rc = TRAIN_ERROR;
                goto done;
            }
            gma_errorf("stopping at step %ld: routing collapse alert (gma.on_collapse \"stop\"); checkpoint written to %s/latest",
                       ts.step, o->run_dir);
            rc = TRAIN_COLLAPSE;
            goto done;
        }
        if (tc->eval_every > 0 && ts.step % tc->eval_every == 0 && ts.step < tc->steps && data.have[SPLIT_VALID]) {
            EvalResult r;
            if (evaluate(&m, &data, SPLIT_VALID, B, N, tc->eval_batches, &r) == 0) {
                metrics_row(mf, eval_row(ts.step, "valid", &r, data.is_recall));
                if (!o->quiet)
                    fprintf(stderr, "%seval step %ld | valid loss %.4f | ppl %.3f%s%.4f\n", o->progress_tty ? "\n" : "",
                            ts.step, r.loss, r.ppl, data.is_recall ? " | acc " : "", data.is_recall ? r.acc : 0.0);
                if (r.loss < ts.best_valid) ts.best_valid = r.loss;
            }
        }
        if (tc->checkpoint_every > 0 && ts.step % tc->checkpoint_every == 0 && ts.step < tc->steps) {
            if (ckpt_save(&m, &ts, o->run_dir, tc->keep_checkpoints, NULL) != 0) {
                rc = TRAIN_ERROR;
                goto done;
            }
        }
    }
    if (o->progress_tty && !o->quiet) fprintf(stderr, "\n");
    if (g_stop) {
        if (ckpt_save(&m, &ts, o->run_dir, tc->keep_checkpoints, NULL) != 0) {
            rc = TRAIN_ERROR;
            goto done;
        }
        fprintf(stderr, "gmatrain: interrupted by signal %d at step %ld; checkpoint written to %s/latest (resume with --resume)\n",
                (int)g_stop, ts.step, o->run_dir);
        rc = TRAIN_INTERRUPTED;
        goto done;
    }
    {
        if (ckpt_save(&m, &ts, o->run_dir, tc->keep_checkpoints, NULL) != 0) {
            rc = TRAIN_ERROR;
            goto done;
        }
        cJSON *sum = cJSON_CreateObject();
        cJSON_AddStringToObject(sum, "name", cfg.name);
        cJSON_AddNumberToObject(sum, "steps", (double)ts.step);
        cJSON_AddNumberToObject(sum, "parameters", (double)model_param_count(&m));
        cJSON_AddNumberToObject(sum, "final_train_loss", last_loss);
        cJSON_AddNumberToObject(sum, "tokens_seen", ts.tokens_seen);
        cJSON_AddNumberToObject(sum, "train_seconds", train_time);
        cJSON_AddNumberToObject(sum, "tokens_per_s",
                                train_time > 0 ? (ts.tokens_seen - (double)step0 * B * N * tc->grad_accum) / train_time : 0);
        cJSON_AddStringToObject(sum, "device", g_ops->name);
        static const char *nm[3] = {"train", "valid", "test"};
        for (int s = SPLIT_VALID; s <= SPLIT_TEST; s++) {
            if (!data.have[s]) continue;
            EvalResult r;
            if (evaluate(&m, &data, s, B, N, 0, &r) != 0) continue;
            metrics_row(mf, eval_row(ts.step, nm[s], &r, data.is_recall));
            cJSON_AddItemToObject(sum, nm[s], eval_row(ts.step, nm[s], &r, data.is_recall));
            if (!o->quiet)
                fprintf(stderr, "final %s | loss %.4f | ppl %.3f%s%.4f | %.0f tokens%s\n", nm[s], r.loss, r.ppl,
                        data.is_recall ? " | acc " : "", data.is_recall ? r.acc : 0.0, r.tokens, "");
        }
        char *st = cJSON_Print(sum);
        cJSON_Delete(sum);
        write_json_file(o->run_dir, "summary.json", st);
        free(st);
    }
done:
    health_free(&hm);
    fclose(mf);
    free(tok);
    free(tgt);
    model_free(&m);
    lmdata_close(&data);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    return rc;
}
