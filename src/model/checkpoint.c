/* checkpoint.c: save and load checkpoints (see checkpoint.h). */
#include "model/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/safetensors.h"

#define CKPT_FORMAT "gma-ckpt-1"

static int write_tensors(const char *path, const ParamTable *pt, const real *host, const char *prefix, int trained_only,
                         const char *const *mk, const char *const *mv, int nm) {
    StTensor *t = xcalloc(pt->n, sizeof(StTensor));
    char **names = xcalloc(pt->n, sizeof(char *));
    int n = 0;
    for (int i = 0; i < pt->n; i++) {
        const ParamInfo *p = &pt->t[i];
        if (trained_only && p->group == GROUP_BUFFER) continue;
        size_t len = strlen(prefix) + strlen(p->name) + 1;
        names[n] = xmalloc(len);
        snprintf(names[n], len, "%s%s", prefix, p->name);
        t[n].name = names[n];
        t[n].ndim = p->ndim;
        for (int d = 0; d < p->ndim; d++) t[n].shape[d] = p->shape[d];
        t[n].data = host + p->offset;
        n++;
    }
    int rc = st_write(path, t, n, mk, mv, nm);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    free(t);
    return rc;
}

/* Remove dir/NAME.tmp.PID files (writes a killed or failed process left behind); with
 * whole != 0 the files named in `files` too and then the directory itself. */
static const char *const g_ckpt_files[] = {"model.safetensors", "optim.safetensors"};
static void clear_dir(const char *dir, int whole) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[2400];
        while ((e = readdir(d)))
            if (strstr(e->d_name, ".tmp.")) {
                snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
                unlink(p);
            }
        closedir(d);
    }
    if (!whole) return;
    char p[2400];
    for (int f = 0; f < 2; f++) {
        snprintf(p, sizeof p, "%s/%s", dir, g_ckpt_files[f]);
        unlink(p);
    }
    rmdir(dir);
}

/* A checkpoint directory holds both files under their final names. */
static int ckpt_complete(const char *dir) {
    char p[2400];
    for (int f = 0; f < 2; f++) {
        snprintf(p, sizeof p, "%s/%s", dir, g_ckpt_files[f]);
        if (!gma_path_exists(p)) return 0;
    }
    return 1;
}

/* Keep the newest `keep` complete periodic checkpoints; remove older ones, incomplete
 * ckpt_N/ directories (a save that was killed or ran out of disk) other than the one
 * `latest` names, and leftover temporary files (NAME.tmp.PID) in the others and in run_dir. */
static int prune(const char *run_dir, int keep) {
    DIR *d = opendir(run_dir);
    if (!d) return 0;
    long steps[4096];
    int n = 0;
    char latest[2100] = "", p[2400];
    snprintf(p, sizeof p, "%s/latest", run_dir);
    ssize_t ll = readlink(p, latest, sizeof latest - 1);
    latest[ll > 0 ? ll : 0] = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 4096) {
        long s;
        char tail;
        if (strstr(e->d_name, ".tmp.")) { /* latest.tmp.PID, config.json.tmp.PID, ...: a write cut short */
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", run_dir, e->d_name);
            if (lstat(p, &st) == 0 && !S_ISDIR(st.st_mode)) unlink(p);
        }
        if (sscanf(e->d_name, "ckpt_%ld%c", &s, &tail) != 1) continue;
        snprintf(p, sizeof p, "%s/%s", run_dir, e->d_name);
        int is_latest = !strcmp(e->d_name, latest);
        clear_dir(p, 0);
        if (!is_latest && !ckpt_complete(p)) clear_dir(p, 1);
        else steps[n++] = s;
    }
    closedir(d);
    for (int i = 0; i < n; i++) /* sort descending */
        for (int j = i + 1; j < n; j++)
            if (steps[j] > steps[i]) {
                long t = steps[i];
                steps[i] = steps[j];
                steps[j] = t;
            }
    for (int i = keep; i < n; i++) {
        snprintf(p, sizeof p, "%s/ckpt_%08ld", run_dir, steps[i]);
        if (strcmp(p + strlen(run_dir) + 1, latest)) clear_dir(p, 1);
    }
    return 0;
}

void ckpt_clean_run(const char *run_dir) {
    char p[2100];
    snprintf(p, sizeof p, "%s/latest", run_dir);
    if (access(p, F_OK) == 0) prune(run_dir, 1 << 30);
}

int ckpt_save(const Model *m, const TrainState *ts, const char *run_dir, int keep, const char *tag) {
    size_t P = m->pt.total;
    real *host = xmalloc(P * sizeof(real));
    g_ops->to_host(host, m->params, P * sizeof(real));
    for (int i = 0; i < m->pt.n; i++) {
        const ParamInfo *p = &m->pt.t[i];
        for (size_t j = 0; j < p->numel; j++)
            if (!isfinite(host[p->offset + j])) {
                free(host);
                return gma_errorf("refusing to checkpoint: tensor %s holds a non-finite value", p->name);
            }
    }
    char dir[2048], name[64], path[2100];
    if (tag) snprintf(name, sizeof name, "%s", tag);
    else snprintf(name, sizeof name, "ckpt_%08ld", ts->step);
    snprintf(dir, sizeof dir, "%s/%s", run_dir, name);
    int fresh = !gma_path_exists(dir); /* a failed save removes what it created, never a previous checkpoint */
    if (gma_mkdirs(dir) != 0) {
        free(host);
        return -1;
    }
    char *cfg = cfg_to_json(&m->cfg);
    char step[32], rng[65], tok[64], best[64], bacc[64], bstep[32], wl[32], wd[32], wk[32], wn[32], tsec[32], el[32], unt[32];
    snprintf(step, sizeof step, "%ld", ts->step);
    rng_to_hex(&ts->rng, rng);
    snprintf(tok, sizeof tok, "%.17g", ts->tokens_seen);
    snprintf(best, sizeof best, "%.17g", ts->best_valid);
    snprintf(bacc, sizeof bacc, "%.17g", ts->best_acc);
    snprintf(bstep, sizeof bstep, "%ld", ts->best_step);
    snprintf(wl, sizeof wl, "%.17g", ts->win_loss);
    snprintf(wd, sizeof wd, "%.17g", ts->win_div);
    snprintf(wk, sizeof wk, "%.17g", ts->win_kl);
    snprintf(wn, sizeof wn, "%ld", ts->win_n);
    snprintf(tsec, sizeof tsec, "%.17g", ts->train_seconds);
    snprintf(el, sizeof el, "%.17g", ts->elapsed_s);
    snprintf(unt, sizeof unt, "%.17g", ts->tokens_untimed);
    /* model.safetensors holds what the trajectory decides (the same bits for the same run);
     * the clocks go with the optimiser state */
    const char *mk[] = {"format",         "config",         "step",          "rng",
                        "tokens_seen",    "best_valid",     "precision",     "best_valid_acc",
                        "best_step",      "window_loss_sum", "window_div_sum", "window_steps",
                        "window_kl_sum"};
    const char *mv[] = {CKPT_FORMAT, cfg, step, rng, tok, best, REAL_NAME, bacc, bstep, wl, wd, wn, wk};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = write_tensors(path, &m->pt, host, "", 0, mk, mv, 13);
    free(cfg);
    if (!rc) {
        real *mom = xmalloc(2 * P * sizeof(real));
        g_ops->to_host(mom, m->m, P * sizeof(real));
        g_ops->to_host(mom + P, m->v, P * sizeof(real));
        const char *ok[] = {"format", "step", "train_seconds", "elapsed_s", "tokens_untimed"};
        const char *ov[] = {CKPT_FORMAT, step, tsec, el, unt};
        /* one file holding m.<name> then v.<name> */
        ParamTable two = {0};
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < m->pt.n; i++) {
                const ParamInfo *p = &m->pt.t[i];
                if (p->group == GROUP_BUFFER || p->frozen) continue; /* train.freeze: no moments */
                char nm[128];
                snprintf(nm, sizeof nm, "%s.%s", pass ? "v" : "m", p->name);
                int idx = pt_add(&two, nm, p->ndim, p->shape, INIT_ZERO, 0, p->group);
                two.t[idx].offset = p->offset + (pass ? P : 0);
            }
        snprintf(path, sizeof path, "%s/optim.safetensors", dir);
        rc = write_tensors(path, &two, mom, "", 0, ok, ov, 5);
        pt_free(&two);
        free(mom);
    }
    free(host);
    if (rc) {
        clear_dir(dir, fresh);
        return rc;
    }
    if (!tag) {
        char link[2100], tmp[2200];
        snprintf(link, sizeof link, "%s/latest", run_dir);
        snprintf(tmp, sizeof tmp, "%s/latest.tmp.%d", run_dir, (int)getpid());
        unlink(tmp);
        if (symlink(name, tmp) != 0 || rename(tmp, link) != 0)
            return gma_errorf("%s: cannot update the latest link: %s", link, strerror(errno));
        prune(run_dir, keep);
    }
    return 0;
}

/* 1 when checkpoint directory dir opens: both files are safetensors, the config reads */
static int ckpt_intact(const char *dir) {
    char p[2400];
    for (int f = 0; f < 2; f++) {
        snprintf(p, sizeof p, "%s/%s", dir, g_ckpt_files[f]);
        StFile st;
        if (st_open(&st, p) != 0) return 0;
        st_close(&st);
    }
    Config c;
    return ckpt_read_config(dir, &c) == 0;
}

/* The step of the newest ckpt_N/ in run_dir that is intact, other than `except`; -1. */
static long newest_intact(const char *run_dir, const char *except) {
    DIR *d = opendir(run_dir);
    if (!d) return -1;
    long best = -1;
    char p[2400], a[PATH_MAX], b[PATH_MAX];
    int have_except = except && realpath(except, b);
    struct dirent *e;
    while ((e = readdir(d))) {
        long s;
        char tail;
        if (sscanf(e->d_name, "ckpt_%ld%c", &s, &tail) != 1 || s <= best) continue;
        snprintf(p, sizeof p, "%s/%s", run_dir, e->d_name);
        if (have_except && realpath(p, a) && !strcmp(a, b)) continue;
        if (ckpt_intact(p)) best = s;
    }
    closedir(d);
    return best;
}

int ckpt_hint_intact(const char *path) {
    char run[2100], latest[2200], broken[2200];
    snprintf(latest, sizeof latest, "%s/latest", path);
    snprintf(broken, sizeof broken, "%s/model.safetensors", path);
    struct stat st;
    if (access(latest, F_OK) == 0) snprintf(run, sizeof run, "%s", path), snprintf(broken, sizeof broken, "%s", latest);
    else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(broken, F_OK) != 0) /* RUN whose latest is gone */
        snprintf(run, sizeof run, "%s", path), broken[0] = 0;
    else { /* RUN/ckpt_N (or RUN/latest) itself */
        snprintf(broken, sizeof broken, "%s", path);
        snprintf(run, sizeof run, "%s", path);
        size_t n = strlen(run);
        while (n > 1 && run[n - 1] == '/') run[--n] = 0;
        char *slash = strrchr(run, '/');
        if (slash) *slash = 0;
        else snprintf(run, sizeof run, ".");
    }
    char why[1024];
    snprintf(why, sizeof why, "%s", gma_error());
    long s = newest_intact(run, broken[0] ? broken : NULL);
    if (s < 0) return gma_errorf("%s", why);
    return gma_errorf("%s; the newest intact checkpoint is %s/ckpt_%08ld (--resume %s/ckpt_%08ld)", why, run, s, run, s);
}

/* dir (cap bytes) pinned: when it is a link (RUN/latest -> ckpt_N) the folder it names
 * now, so a reader takes the config and every tensor from one checkpoint even when a
 * writer moves latest between its reads; a link that names no checkpoint is kept */
static void pin_link(char *dir, size_t cap) {
    struct stat st;
    char t[1024], buf[4200];
    ssize_t n;
    if (lstat(dir, &st) != 0 || !S_ISLNK(st.st_mode) || (n = readlink(dir, t, sizeof t - 1)) <= 0) return;
    t[n] = 0;
    if (t[0] == '/') snprintf(buf, sizeof buf, "%s", t);
    else {
        const char *slash = strrchr(dir, '/');
        snprintf(buf, sizeof buf, "%.*s%s", slash ? (int)(slash - dir + 1) : 0, dir, t);
    }
    char probe[4300];
    snprintf(probe, sizeof probe, "%s/model.safetensors", buf);
    if (strlen(buf) < cap && gma_path_exists(probe)) snprintf(dir, cap, "%s", buf);
}

int ckpt_resolve(const char *path, char *out, size_t cap) {
    struct stat st;
    if (stat(path, &st) != 0) return gma_errorf("%s: no such checkpoint: %s", path, strerror(errno));
    char buf[2048];
    if (S_ISREG(st.st_mode)) { /* model.safetensors */
        snprintf(buf, sizeof buf, "%s", path);
        char *slash = strrchr(buf, '/');
        if (slash) *slash = 0;
        else snprintf(buf, sizeof buf, ".");
        snprintf(out, cap, "%s", buf);
        return pin_link(out, cap), 0;
    }
    snprintf(buf, sizeof buf, "%s/model.safetensors", path);
    if (gma_path_exists(buf)) {
        snprintf(out, cap, "%s", path);
        size_t n = strlen(out);
        while (n > 1 && out[n - 1] == '/') out[--n] = 0; /* RUN/latest/ is the link RUN/latest */
        return pin_link(out, cap), 0;
    }
    snprintf(buf, sizeof buf, "%s/latest/model.safetensors", path);
    if (gma_path_exists(buf)) {
        snprintf(out, cap, "%s/latest", path);
        return pin_link(out, cap), 0;
    }
    return gma_errorf("%s: not a checkpoint (no model.safetensors here or under latest/)", path);
}

int ckpt_open_config(const char *path, const char *device, long threads, char *dir, size_t cap, Config *c) {
    if (ckpt_resolve(path, dir, cap) != 0 || ckpt_read_config(dir, c) != 0) return -1;
    if (device) { /* as gmatrain's --device: through the config key, so a bad name is refused alike */
        char set[64];
        snprintf(set, sizeof set, "device=%.50s", device);
        if (cfg_set_from(c, set, "--device") != 0) return -1;
    }
    if (threads >= 0) c->threads = (int)threads;
    return 0;
}

int ckpt_read_config(const char *dir, Config *c) {
    char path[2100];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    StFile f;
    if (st_open(&f, path) != 0) return -1;
    const char *js = st_meta(&f, "config"), *fmt = st_meta(&f, "format");
    int rc = 0;
    if (!fmt || strcmp(fmt, CKPT_FORMAT)) rc = gma_errorf("%s: not a gma checkpoint (metadata format is missing or unknown)", path);
    else if (!js) rc = gma_errorf("%s: metadata has no config", path);
    else {
        cfg_defaults(c);
        rc = cfg_load_text(c, js, path);
    }
    st_close(&f);
    return rc;
}

static int load_into(const ParamTable *pt, real *host, const StFile *f, const char *prefix, int trained_only,
                     size_t base) {
    int expected = 0;
    for (int i = 0; i < pt->n; i++) {
        const ParamInfo *p = &pt->t[i];
        if (trained_only && (p->group == GROUP_BUFFER || p->frozen)) continue; /* a frozen tensor's moments stay 0 */
        expected++;
        char nm[128];
        snprintf(nm, sizeof nm, "%s%s", prefix, p->name);
        const StEntry *e = st_find(f, nm);
        if (!e) return gma_errorf("%s: tensor %s is missing (checkpoint from another config?)", f->path, nm);
        int same = e->ndim == p->ndim;
        for (int d = 0; same && d < p->ndim; d++) same = e->shape[d] == p->shape[d];
        if (!same) {
            char a[64] = "", b[64] = "";
            for (int d = 0; d < e->ndim; d++) snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", d ? "," : "", (long long)e->shape[d]);
            for (int d = 0; d < p->ndim; d++) snprintf(b + strlen(b), sizeof b - strlen(b), "%s%d", d ? "," : "", p->shape[d]);
            return gma_errorf("%s: tensor %s has shape [%s], this model expects [%s]", f->path, nm, a, b);
        }
        real *dst = host + base + p->offset;
        st_read_tensor(e, dst);
        for (size_t j = 0; j < p->numel; j++)
            if (!isfinite(dst[j]))
                return gma_errorf("%s: tensor %s holds a non-finite value at element %zu", f->path, nm, j);
    }
    return 0;
}

/* The training state of the metadata, each value checked in full (docs/model.md §7): the
 * step an integer in [0, 1e9] (the range of train.steps), tokens_seen finite and >= 0,
 * best_valid a loss (>= 0, or inf for none), best_valid_acc -1 or in [0, 1], best_step
 * -1 or a step. Absent optional values take their defaults. */
static int read_train_state(TrainState *ts, const char *path, const char *s, const char *t, const char *b,
                            const char *ba, const char *bs) {
    double x;
    if (gma_parse_long(s, 0, 1000000000L, &ts->step) != 0)
        return gma_errorf("%s: metadata step \"%s\" is not an integer in [0, 1e9]", path, s);
    ts->tokens_seen = 0;
    if (t && gma_parse_double(t, 0, 1e300, &ts->tokens_seen) != 0)
        return gma_errorf("%s: metadata tokens_seen \"%s\" is not a finite number >= 0", path, t);
    ts->best_valid = INFINITY;
    if (b && strcmp(b, "inf")) {
        if (gma_parse_double(b, 0, 1e300, &x) != 0)
            return gma_errorf("%s: metadata best_valid \"%s\" is not a loss (a number >= 0 or inf)", path, b);
        ts->best_valid = x;
    }
    ts->best_acc = -1;
    if (ba && strcmp(ba, "-1")) {
        if (gma_parse_double(ba, 0, 1, &x) != 0)
            return gma_errorf("%s: metadata best_valid_acc \"%s\" is not -1 or an accuracy in [0, 1]", path, ba);
        ts->best_acc = x;
    }
    ts->best_step = -1;
    if (bs && gma_parse_long(bs, -1, 1000000000L, &ts->best_step) != 0)
        return gma_errorf("%s: metadata best_step \"%s\" is not -1 or a step", path, bs);
    return 0;
}

/* Metadata keys[0..n) as numbers into v (absent: v keeps its default), each finite and,
 * from index `nonneg` on, >= 0. */
static int read_numbers(const StFile *f, const char *path, const char *const *keys, int n, int nonneg, double *v) {
    for (int k = 0; k < n; k++) {
        const char *s = st_meta(f, keys[k]);
        if (s && gma_parse_double(s, k < nonneg ? -1e300 : 0, 1e300, &v[k]) != 0)
            return gma_errorf("%s: metadata %s \"%s\" is not a finite number%s", path, keys[k], s, k < nonneg ? "" : " >= 0");
    }
    return 0;
}

/* The open log window of model.safetensors (absent in checkpoints of earlier versions:
 * an empty window; window_kl_sum, distillation's, absent before it was kept: 0). */
static int read_window(TrainState *ts, const StFile *f, const char *path) {
    static const char *const key[4] = {"window_loss_sum", "window_div_sum", "window_kl_sum", "window_steps"};
    double v[4] = {0, 0, 0, 0};
    if (read_numbers(f, path, key, 4, 3, v) != 0) return -1;
    if (v[3] != floor(v[3]) || v[3] > 1e9)
        return gma_errorf("%s: metadata window_steps \"%s\" is not a step count", path, st_meta(f, key[3]));
    ts->win_loss = v[0], ts->win_div = v[1], ts->win_kl = v[2], ts->win_n = (long)v[3];
    return 0;
}

/* The clocks of optim.safetensors (absent in earlier versions: from zero, the tokens so
 * far untimed). */
static int read_clocks(TrainState *ts, const StFile *f, const char *path) {
    static const char *const key[3] = {"train_seconds", "elapsed_s", "tokens_untimed"};
    double v[3] = {0, 0, ts->tokens_seen};
    if (read_numbers(f, path, key, 3, 0, v) != 0) return -1;
    ts->train_seconds = v[0], ts->elapsed_s = v[1], ts->tokens_untimed = v[2];
    return 0;
}

/* every tensor of pt from f (load_into), and no tensor the model does not have */
static int read_params(const ParamTable *pt, real *host, const StFile *f) {
    int rc = load_into(pt, host, f, "", 0, 0);
    for (int i = 0; !rc && f->n != pt->n && i < f->n; i++)
        if (pt_find(pt, f->e[i].name) < 0) rc = gma_errorf("%s: tensor %s is not part of this model", f->path, f->e[i].name);
    return rc;
}

int ckpt_read_params(const ParamTable *pt, real *host, const char *dir) {
    char path[2100];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    StFile f;
    if (st_open(&f, path) != 0) return -1;
    int rc = read_params(pt, host, &f);
    st_close(&f);
    return rc;
}

int ckpt_load(Model *m, TrainState *ts, const char *dir) {
    size_t P = m->pt.total;
    char path[2100];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    StFile f;
    if (st_open(&f, path) != 0) return -1;
    real *host = xcalloc(2 * P, sizeof(real));
    int rc = read_params(&m->pt, host, &f);
    if (!rc && ts) {
        const char *s = st_meta(&f, "step"), *r = st_meta(&f, "rng"), *t = st_meta(&f, "tokens_seen"),
                   *b = st_meta(&f, "best_valid");
        const char *ba = st_meta(&f, "best_valid_acc"), *bs = st_meta(&f, "best_step");
        if (!s || !r || rng_from_hex(&ts->rng, r) != 0) rc = gma_errorf("%s: metadata step or rng is missing or malformed", path);
        else rc = read_train_state(ts, path, s, t, b, ba, bs);
        if (!rc) rc = read_window(ts, &f, path);
    }
    if (!rc) g_ops->to_device(m->params, host, P * sizeof(real));
    st_close(&f);
    if (!rc && ts) {
        snprintf(path, sizeof path, "%s/optim.safetensors", dir);
        StFile o;
        if (st_open(&o, path) != 0) rc = -1;
        else {
            memset(host, 0, 2 * P * sizeof(real));
            rc = read_clocks(ts, &o, path);
            if (!rc) rc = load_into(&m->pt, host, &o, "m.", 1, 0);
            if (!rc) rc = load_into(&m->pt, host, &o, "v.", 1, P);
            st_close(&o);
            if (!rc) {
                g_ops->to_device(m->m, host, P * sizeof(real));
                g_ops->to_device(m->v, host + P, P * sizeof(real));
            }
        }
    }
    free(host);
    return rc;
}

/* the moments prefix (m. or v.) of every trained, unfrozen tensor of m that f holds in the
 * same shape, into host + base; the others stay 0. Returns how many tensors were taken. */
static int take_moments(const ParamTable *pt, real *host, const StFile *f, const char *prefix, size_t base) {
    int n = 0;
    for (int i = 0; i < pt->n; i++) {
        const ParamInfo *p = &pt->t[i];
        if (p->group == GROUP_BUFFER || p->frozen) continue;
        char nm[128];
        snprintf(nm, sizeof nm, "%s%s", prefix, p->name);
        const StEntry *e = st_find(f, nm);
        int same = e && e->ndim == p->ndim;
        for (int d = 0; same && d < p->ndim; d++) same = e->shape[d] == p->shape[d];
        if (!same) continue;
        real *dst = host + base + p->offset;
        st_read_tensor(e, dst);
        for (size_t j = 0; j < p->numel; j++)
            if (!isfinite(dst[j])) return gma_errorf("%s: tensor %s holds a non-finite value at element %zu", f->path, nm, j);
        n++;
    }
    return n;
}

int ckpt_load_state(Model *m, TrainState *ts, const char *dir, int *n_taken) {
    size_t P = m->pt.total;
    char path[2100];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    StFile f;
    if (st_open(&f, path) != 0) return -1;
    const char *s = st_meta(&f, "step"), *r = st_meta(&f, "rng"), *t = st_meta(&f, "tokens_seen");
    TrainState got = *ts;
    int rc = 0;
    if (!s || !r || rng_from_hex(&got.rng, r) != 0) rc = gma_errorf("%s: metadata step or rng is missing or malformed", path);
    else rc = read_train_state(&got, path, s, t, NULL, NULL, NULL);
    st_close(&f);
    if (rc) return rc;
    snprintf(path, sizeof path, "%s/optim.safetensors", dir);
    StFile o;
    if (st_open(&o, path) != 0) return -1;
    real *host = xcalloc(2 * P, sizeof(real));
    int a = take_moments(&m->pt, host, &o, "m.", 0), b = a < 0 ? -1 : take_moments(&m->pt, host, &o, "v.", P);
    st_close(&o);
    if (a >= 0 && b >= 0) {
        g_ops->to_device(m->m, host, P * sizeof(real));
        g_ops->to_device(m->v, host + P, P * sizeof(real));
        ts->step = got.step, ts->rng = got.rng, ts->tokens_seen = got.tokens_seen;
        *n_taken = a;
    }
    free(host);
    return a < 0 || b < 0 ? -1 : 0;
}

int ckpt_write_model(const Model *m, const real *host, const char *dir) {
    Rng rng;
    rng_seed(&rng, (uint64_t)m->cfg.seed);
    char *cfg = cfg_to_json(&m->cfg), hex[65], path[2100];
    rng_to_hex(&rng, hex);
    /* the metadata of a checkpoint at step 0 that has not been evaluated (docs/model.md §7) */
    const char *mk[] = {"format", "config", "step", "rng", "tokens_seen", "best_valid", "precision", "best_valid_acc", "best_step"};
    const char *mv[] = {CKPT_FORMAT, cfg, "0", hex, "0", "inf", REAL_NAME, "-1", "-1"};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = write_tensors(path, &m->pt, host, "", 0, mk, mv, 9);
    free(cfg);
    return rc;
}
