/* export_gpt2_llmc.c: the model as llm.c's model file, version 3 (docs/data.md, "Exporting
 * GPT-2"), the inverse of import_gpt2_llmc.c: 256 little-endian int32 of header (magic,
 * version, maxT, V, L, H, C, Vp; the rest 0, as llm.c's write_model leaves it), then the
 * tensors of llmc_tensors (gpt2_llmc.h) in order, each for every layer in turn, float32, the
 * weights [out, in] as this project stores them; q, k, v stacked into qkvw/qkvb; wte
 * followed by Vp - V zero rows (Vp: V rounded up to a multiple of 128, as llm.c's
 * pad_vocab). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "model/export_gpt2.h"
#include "model/gpt2_llmc.h"

#define LLMC_HEADER_INTS (LLMC_HEADER_BYTES / 4)
#define LLMC_PAD 128 /* train_gpt2.py:429 pad_vocab: wte's rows padded to a multiple of 128 */

static void dims(const LlmcTensor *t, const Gpt2Info *s, int Vp, size_t *rows, size_t *cols) {
    static const int mult[5] = {1, 0, 0, 3, 4}; /* rows in units of C */
    *rows = t->rows == 1 ? (size_t)Vp : t->rows == 2 ? (size_t)s->T : (size_t)mult[t->rows] * s->D;
    *cols = t->cols == 1 ? 1 : t->cols == 4 ? (size_t)4 * s->D : (size_t)s->D;
}

typedef struct LlmcOut {
    FILE *f;
    const char *path;
    int err;
} LlmcOut;

/* n reals as float32 (little-endian, as the host: llm.c reads the file with fread too) */
static void put(LlmcOut *o, const real *v, size_t n) {
    float buf[1024];
    for (size_t i = 0; i < n && !o->err; i += 1024) {
        size_t k = n - i < 1024 ? n - i : 1024;
        for (size_t j = 0; j < k; j++) buf[j] = v ? (float)v[i + j] : 0.0f;
        if (fwrite(buf, sizeof(float), k, o->f) != k) o->err = errno ? errno : EIO;
    }
}

/* one tensor of t for layer l */
static int one(LlmcOut *o, Gpt2Dest *d, const Gpt2Info *s, const LlmcTensor *t, int l, int Vp) {
    size_t rows, cols;
    dims(t, s, Vp, &rows, &cols);
    if (t->rows == 3) { /* the fused rows: q, then k, then v */
        for (int p = 0; p < 3; p++) {
            char name[64];
            snprintf(name, sizeof name, t->dst, l, "qkv"[p]);
            const real *v = gpt2_dest_at(d, rows * cols / 3, name, 0); /* name holds no % */
            if (!v) return -1;
            put(o, v, rows * cols / 3);
        }
        return 0;
    }
    size_t keep = t->rows == 1 ? (size_t)s->V * cols : rows * cols; /* wte: then the padding rows */
    const real *v = gpt2_dest_at(d, keep, t->dst, l);
    if (!v) return -1;
    put(o, v, keep);
    put(o, NULL, rows * cols - keep);
    return 0;
}

int gpt2_write_llmc(Gpt2Dest *d, const Gpt2Info *s, const char *path) {
    int Vp = (s->V + LLMC_PAD - 1) / LLMC_PAD * LLMC_PAD;
    int32_t h[LLMC_HEADER_INTS] = {LLMC_MAGIC, 3, s->T, s->V, s->L, s->H, s->D, Vp};
    LlmcOut o = {.f = fopen(path, "wb"), .path = path};
    if (!o.f) return gma_errorf("%s: cannot create: %s", path, strerror(errno));
    errno = 0;
    if (fwrite(h, sizeof h, 1, o.f) != 1) o.err = errno ? errno : EIO;
    int rc = 0;
    for (int t = 0; !rc && !o.err && t < 16; t++)
        for (int l = 0; !rc && l < (llmc_tensors[t].per_layer ? s->L : 1); l++)
            rc = one(&o, d, s, &llmc_tensors[t], l, Vp);
    if (!rc && !o.err && (fflush(o.f) != 0 || fsync(fileno(o.f)) != 0)) o.err = errno;
    if (fclose(o.f) != 0 && !o.err) o.err = errno;
    if (!rc && o.err) rc = gma_errorf("%s: write failed: %s", path, strerror(o.err));
    return rc;
}
