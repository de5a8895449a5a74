/* bench_calibrate.c: the calibration of `mixer: "auto"` (gmabench calibrate, docs/baselines.md):
 * the prefill benchmark (bench_prefill.c) of gma and sdpa at the bench shape, then the
 * crossover, the shortest N of --seq from which GMA's training forward over N tokens is
 * faster than sdpa's at that and every longer N measured (-1: at none), and the same for
 * decode tokens/s (for the record), written as the file model.auto_threshold "calibrated"
 * reads (nn/mixers/auto_calib.h). The file keeps the measurement itself; the reader clamps
 * it to the band. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "nn/mixers/auto_calib.h"

/* the shortest seq[s] from which a (what 0: training forward tokens/s, 1: decode
 * tokens/s) beats b at every measured N; -1 when at none, 0 when nothing compares */
static int cross(const double *a, const double *b, const int *seq, int ns) {
    int at = -1, any = 0;
    for (int s = ns - 1; s >= 0; s--) {
        if (!(a[s] > 0 && b[s] > 0)) continue;
        any = 1;
        if (!(a[s] > b[s])) break;
        at = seq[s];
    }
    return any ? at : 0;
}

/* the prefill rows of out into v[k][s] (k 0 gma, 1 sdpa; key: the row's figure) */
static void rows_of(const cJSON *out, const char *key, const int *seq, int ns, double *v) {
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(out, "prefill")) {
        const cJSON *mx = cJSON_GetObjectItemCaseSensitive(r, "mixer"), *n = cJSON_GetObjectItemCaseSensitive(r, "N"),
                    *x = cJSON_GetObjectItemCaseSensitive(r, key);
        if (!cJSON_IsString(mx) || !cJSON_IsNumber(n) || !cJSON_IsNumber(x)) continue;
        int k = !strcmp(mx->valuestring, "gma") ? 0 : !strcmp(mx->valuestring, "sdpa") ? 1 : -1;
        for (int s = 0; s < ns && k >= 0; s++)
            if (seq[s] == n->valueint) v[k * ns + s] = x->valuedouble;
    }
}

static cJSON *numbers(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

int bench_calibrate(const BenchOpts *o, BenchProf *p, cJSON *out, const char *path) {
    BenchOpts oo = *o;
    snprintf(oo.mixers, sizeof oo.mixers, "gma,sdpa");
    bench_prefill(&oo, p, out);
    int ns = o->n_seq;
    double *fw = xcalloc((size_t)4 * ns, sizeof(double)), *dec = fw + 2 * ns;
    rows_of(out, "train_forward_tokens_per_s", o->seq, ns, fw);
    rows_of(out, "decode_tokens_per_s", o->seq, ns, dec);
    int xf = cross(fw, fw + ns, o->seq, ns), xd = cross(dec, dec + ns, o->seq, ns);
    int rc = 0;
    if (xf == 0) rc = gma_errorf("calibrate: no length where both gma and sdpa were measured (see the table above)");
    else {
        int thr = xf < 0 ? AUTO_BAND_HI : GMA_MIN(GMA_MAX(xf, AUTO_BAND_LO), AUTO_BAND_HI);
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "format", AUTO_CALIB_FORMAT);
        cJSON_AddNumberToObject(c, "crossover", xf);
        cJSON_AddStringToObject(c, "measure", "train_forward");
        cJSON_AddNumberToObject(c, "decode_crossover", xd);
        cJSON_AddNumberToObject(c, "threshold", thr);
        cJSON *band = cJSON_AddArrayToObject(c, "band");
        cJSON_AddItemToArray(band, cJSON_CreateNumber(AUTO_BAND_LO));
        cJSON_AddItemToArray(band, cJSON_CreateNumber(AUTO_BAND_HI));
        cJSON_AddStringToObject(c, "backend", g_ops->name);
        cJSON_AddStringToObject(c, "device_name", ops_device_name());
        cJSON_AddNumberToObject(c, "threads", omp_get_max_threads());
        cJSON *sh = cJSON_AddObjectToObject(c, "shape");
        cJSON_AddNumberToObject(sh, "L", o->L), cJSON_AddNumberToObject(sh, "D", o->D), cJSON_AddNumberToObject(sh, "H", o->H);
        cJSON_AddNumberToObject(sh, "V", o->V), cJSON_AddNumberToObject(sh, "Kc", o->Kc);
        double sq[BENCH_MAX_SEQ];
        for (int s = 0; s < ns; s++) sq[s] = o->seq[s];
        cJSON_AddItemToObject(c, "seq", numbers(sq, ns));
        cJSON *tf = cJSON_AddObjectToObject(c, "train_forward_tokens_per_s"), *dt = cJSON_AddObjectToObject(c, "decode_tokens_per_s");
        cJSON_AddItemToObject(tf, "gma", numbers(fw, ns)), cJSON_AddItemToObject(tf, "sdpa", numbers(fw + ns, ns));
        cJSON_AddItemToObject(dt, "gma", numbers(dec, ns)), cJSON_AddItemToObject(dt, "sdpa", numbers(dec + ns, ns));
        char *s = cJSON_Print(c);
        rc = gma_write_file_atomic(path, s, strlen(s));
        free(s);
        cJSON_AddItemToObject(out, "calibration", c);
        printf("\n## calibration of auto: gma's training forward ahead of sdpa's from N = %d%s, decode from N = %d%s\n"
               "model.auto_threshold \"calibrated\" uses %d (the band %d-%d)%s: %s\n",
               xf, xf < 0 ? " (at none measured)" : "", xd, xd < 0 ? " (at none measured)" : xd == 0 ? " (not measured)" : "",
               thr, AUTO_BAND_LO, AUTO_BAND_HI, xf == thr ? "" : ", outside it: clamped", rc ? gma_error() : path);
    }
    free(fw);
    return rc ? -1 : 0;
}
