/* fuzz_sizes.c: the sizes made from command-line and config values (the memory plan,
 * src/model/model.c; the position buckets, src/train/evaluate.c). Input: a config JSON
 * text, a NUL, then three little-endian int32: the batch B, the window N and the bucket
 * size S, taken into the ranges gmaeval's options allow. A config that validates and
 * builds is planned for B x N (nothing is allocated); the build runs with UBSan, so a
 * signed product that overflows is a crash. Invariants: the plan is finite and at least
 * the parameters; the bucket count is ceil(N / S) and within its limit or refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "model/model.h"
#include "nn/model_cfg.h"
#include "train/config_registry.h"
#include "train/evaluate.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init();
    return 0;
}

static int32_t le32(const uint8_t *p) {
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

/* v into [lo, hi] */
static int in_range(int32_t v, int lo, int hi) {
    long r = (long)hi - lo + 1;
    return lo + (int)(((long)v % r + r) % r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char *json = fz_cut(&data, &n);
    if (n < 12) return free(json), 0;
    int B = in_range(le32(data), 1, 2147483647), N = in_range(le32(data + 4), 1, 1 << 24);
    int S = in_range(le32(data + 8), 1, 2147483647);
    long nbk = GMA_DIV_UP(N, S);
    if (nbk != (N + (long)S - 1) / S || nbk < 1) fz_fail("bucket count %ld of N %d, S %d", nbk, N, S);
    Config c;
    cfg_defaults(&c);
    /* a model whose parameter table alone stays small: the activations are what grows with B x N */
    if (cfg_load_text(&c, json, "fuzz.json") == 0 && cfg_validate(&c) == 0 && c.model.vocab_size > 0 &&
        c.model.vocab_size <= 65536 && c.model.d_model <= 1024 && c.model.n_layers <= 8 && c.model.max_seq_len <= 65536 &&
        cfg_d_ff(&c) <= 4096 && cfg_num(&c, "gma.n_components") <= 256) {
        Model m;
        if (model_build(&m, &c) == 0) {
            MemPlan p;
            m.infer = 1;
            (void)model_check_memory_plan(&m, B, N, &p);
            if (!(p.total >= p.params && isfinite(p.total))) fz_fail("plan %g below the parameters %g", p.total, p.params);
            model_free(&m);
        }
    }
    free(json);
    return 0;
}
