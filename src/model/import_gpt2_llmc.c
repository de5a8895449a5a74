/* import_gpt2_llmc.c: llm.c's GPT-2 model file into the model (docs/data.md, "Importing
 * GPT-2"). 256 little-endian int32 of header: magic 20240326, version (3: float32, 5:
 * bfloat16, both with the padded vocabulary), maxT, V, L, H, C, Vp; then 16 tensors in
 * llm.c's fixed order, each for all L layers in turn, the weights [out, in] as this
 * project stores them. wte has Vp rows; the rows past V are padding and are dropped. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "model/gpt2_dest.h"
#include "model/gpt2_llmc.h"

/* the table of gpt2_llmc.h */
const LlmcTensor llmc_tensors[LLMC_N_TENSORS] = {
    {"wte", "tok_emb.weight", 0, 1, 0},
    {"wpe", "pos_emb.weight", 0, 2, 0},
    {"ln1w", "blocks.%d.ln1.weight", 1, 0, 1},
    {"ln1b", "blocks.%d.ln1.bias", 1, 0, 1},
    {"qkvw", "blocks.%d.mixer.%c.weight", 1, 3, 0},
    {"qkvb", "blocks.%d.mixer.%c.bias", 1, 3, 1},
    {"attprojw", "blocks.%d.mixer.o.weight", 1, 0, 0},
    {"attprojb", "blocks.%d.mixer.o.bias", 1, 0, 1},
    {"ln2w", "blocks.%d.ln2.weight", 1, 0, 1},
    {"ln2b", "blocks.%d.ln2.bias", 1, 0, 1},
    {"fcw", "blocks.%d.mlp.fc.weight", 1, 4, 0},
    {"fcb", "blocks.%d.mlp.fc.bias", 1, 4, 1},
    {"fcprojw", "blocks.%d.mlp.proj.weight", 1, 0, 4},
    {"fcprojb", "blocks.%d.mlp.proj.bias", 1, 0, 1},
    {"lnfw", "ln_f.weight", 0, 0, 1},
    {"lnfb", "ln_f.bias", 0, 0, 1},
};

typedef struct Llmc {
    const char *path;
    const uint8_t *map;
    size_t len, off;
    int bf16, Vp;
} Llmc;

static size_t dim_of(int code, const Gpt2Info *s, int Vp) {
    switch (code) {
    case 0: return (size_t)s->D;
    case 1: return (size_t)Vp;
    case 2: return (size_t)s->T;
    case 3: return (size_t)3 * s->D;
    default: return (size_t)4 * s->D;
    }
}

/* n values from the file at x->off into dst (float32 or bfloat16: the high half of a
 * float32); a NaN or infinity refused naming the tensor `what`, its index and offset */
static int take(Llmc *x, real *dst, size_t n, const char *what) {
    const uint8_t *p = x->map + x->off;
    size_t esz = x->bf16 ? 2 : 4;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = 0;
        if (x->bf16) u = (uint32_t)(p[2 * i] | p[2 * i + 1] << 8) << 16;
        else memcpy(&u, p + 4 * i, 4);
        float f;
        memcpy(&f, &u, 4);
        if (!isfinite(f))
            return gma_errorf("%s: tensor %s holds %s at index %zu (offset %zu): not a weight to import", x->path, what,
                              isnan(f) ? "NaN" : "an infinity", i, x->off + i * esz);
        dst[i] = (real)f;
    }
    return 0;
}

/* the tensor of one layer (or the whole one): refuse when the file ends inside it */
static int one(Llmc *x, Gpt2Dest *d, const Gpt2Info *s, const LlmcTensor *t, int l) {
    size_t rows = dim_of(t->rows, s, x->Vp), cols = t->cols == 1 ? 1 : t->cols == 4 ? (size_t)4 * s->D : (size_t)s->D;
    size_t n = rows * cols, esz = x->bf16 ? 2 : 4;
    if (x->off > x->len || n > (x->len - x->off) / esz) {
        char which[48] = "";
        if (t->per_layer) snprintf(which, sizeof which, " of layer %d", l);
        return gma_errorf("%s: truncated: tensor %s%s at offset %zu needs %zu bytes, the file has %zu after it", x->path,
                          t->name, which, x->off, n * esz, x->len - x->off);
    }
    if (t->rows == 3) { /* the fused rows: q, then k, then v */
        size_t part = n / 3;
        for (int p = 0; p < 3; p++) {
            char name[64];
            snprintf(name, sizeof name, t->dst, l, "qkv"[p]);
            real *dst = gpt2_dest_at(d, part, name, 0); /* name holds no % */
            if (!dst || take(x, dst, part, name) != 0) return -1;
            x->off += part * esz;
        }
        return 0;
    }
    size_t keep = t->rows == 1 ? (size_t)s->V * cols : n; /* wte: the padding rows are dropped */
    real *dst = gpt2_dest_at(d, keep, t->dst, l);
    char what[64];
    snprintf(what, sizeof what, t->per_layer ? "%s of layer %d" : "%s", t->name, l);
    if (!dst || take(x, dst, keep, what) != 0) return -1;
    x->off += n * esz;
    return 0;
}

/* the header: magic, version, the shape; one line naming the offset when it is not llm.c's */
static int header(Llmc *x, Gpt2Info *s) {
    if (x->len < LLMC_HEADER_BYTES)
        return gma_errorf("%s: truncated: the llm.c header needs %d bytes, the file has %zu", x->path, LLMC_HEADER_BYTES, x->len);
    int32_t h[8];
    memcpy(h, x->map, sizeof h);
    if (h[0] != LLMC_MAGIC)
        return gma_errorf("%s: bad magic %d at offset 0 (llm.c's model file has %d)", x->path, h[0], LLMC_MAGIC);
    if (h[1] != 3 && h[1] != 5)
        return gma_errorf("%s: version %d at offset 4 is not an llm.c model version this reads (3 float32, 5 bfloat16)", x->path, h[1]);
    static const char *const names[6] = {"maxT", "V", "L", "H", "C", "Vp"};
    static const int32_t hi[6] = {16777216, 16777216, 4096, 1024, 65536, 16777216};
    for (int i = 0; i < 6; i++)
        if (h[2 + i] < 1 || h[2 + i] > hi[i])
            return gma_errorf("%s: header %s = %d at offset %d is not in [1, %d]", x->path, names[i], h[2 + i], 8 + 4 * i, hi[i]);
    s->T = h[2], s->V = h[3], s->L = h[4], s->H = h[5], s->D = h[6];
    x->Vp = h[7];
    x->bf16 = h[1] == 5;
    if (x->Vp < s->V) return gma_errorf("%s: header Vp = %d at offset 28 is below V = %d", x->path, x->Vp, s->V);
    if (s->D % s->H) return gma_errorf("%s: header C = %d at offset 24 is not divisible by H = %d", x->path, s->D, s->H);
    snprintf(s->format, sizeof s->format, "llm.c v%d", h[1]);
    /* the file's size is what the header promises, checked before the model is allocated */
    double need = LLMC_HEADER_BYTES;
    for (int t = 0; t < 16; t++) {
        const LlmcTensor *tt = &llmc_tensors[t];
        double cols = tt->cols == 1 ? 1 : tt->cols == 4 ? 4.0 * s->D : s->D;
        need += (tt->per_layer ? s->L : 1) * (double)dim_of(tt->rows, s, x->Vp) * cols * (x->bf16 ? 2 : 4);
    }
    if ((double)x->len < need)
        return gma_errorf("%s: truncated: %zu bytes, the header needs %.0f", x->path, x->len, need);
    return 0;
}

static int read_all(Llmc *x, Gpt2Dest *d, Gpt2Info *s) {
    if (header(x, s) != 0 || gpt2_dest_build(d, s) != 0) return -1;
    x->off = LLMC_HEADER_BYTES;
    for (int t = 0; t < 16; t++)
        for (int l = 0; l < (llmc_tensors[t].per_layer ? s->L : 1); l++)
            if (one(x, d, s, &llmc_tensors[t], l) != 0) return -1;
    if (x->off != x->len)
        return gma_errorf("%s: %zu bytes after the last tensor (lnfb ends at offset %zu): not llm.c's layout for this header",
                          x->path, x->len - x->off, x->off);
    return 0;
}

int gpt2_read_llmc(const char *path, Gpt2Dest *d, Gpt2Info *info) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return gma_errorf("%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return gma_errorf("%s: %s", path, strerror(errno));
    }
    Llmc x = {.path = path, .len = (size_t)st.st_size};
    void *map = x.len ? mmap(NULL, x.len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (x.len && map == MAP_FAILED) return gma_errorf("%s: cannot map: %s", path, strerror(errno));
    static const uint8_t empty[1];
    x.map = map ? map : empty;
    int rc = read_all(&x, d, info);
    if (map) munmap(map, x.len);
    return rc;
}
