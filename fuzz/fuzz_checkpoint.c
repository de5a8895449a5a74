/* fuzz_checkpoint.c: safetensors files and checkpoint loading (src/core/safetensors.c,
 * src/model/checkpoint.c). Input: a 4-byte little-endian length L, then L bytes of
 * model.safetensors, then optim.safetensors. Every tensor the reader accepts is read in
 * full; a checkpoint whose stored config builds a small model is loaded into it (with
 * the training state), and what loads must be within the documented ranges. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "model/checkpoint.h"
#include "nn/cls_head.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init();
    return 0;
}

/* Small enough to build and load in a fraction of a millisecond. */
static int small_model(const Config *c) {
    const ModelCfg *m = &c->model;
    return m->d_model <= 128 && m->n_layers <= 4 && m->vocab_size <= 4096 && m->max_seq_len <= 512 && cfg_d_ff(c) <= 512 &&
           cfg_num(c, "gma.n_components") <= 128 && cfg_num(c, "performer.features") <= 128 &&
           cfg_num(c, "linformer.k") <= 512 && cfg_num(c, "mamba.d_state") <= 32 && cfg_num(c, "mamba.expand") <= 4 &&
           cls_head_cfg(c)->n_classes <= 100;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n < 4) return 0;
    size_t L = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
    data += 4, n -= 4;
    if (L > n) L = n;
    const char *dir = fz_path("ckpt");
    char model[1100], optim[1100];
    snprintf(model, sizeof model, "%s/model.safetensors", dir);
    snprintf(optim, sizeof optim, "%s/optim.safetensors", dir);
    gma_mkdirs(dir);
    fz_write(model, data, L);
    fz_write(optim, data + L, n - L);

    StFile f;
    if (st_open(&f, model) == 0) {
        for (int i = 0; i < f.n; i++) {
            const StEntry *e = &f.e[i];
            if (st_find(&f, e->name) != e) fz_fail("tensor %s accepted twice", e->name);
            real *buf = xmalloc((e->numel + 1) * sizeof(real));
            st_read_tensor(e, buf);
            free(buf);
        }
        st_close(&f);
    }
    Config c;
    if (ckpt_read_config(dir, &c) == 0) {
        c.device = OPS_CPU;
        c.precision = OPS_FP32;
        Model m;
        if (cfg_validate(&c) == 0 && small_model(&c) && model_build(&m, &c) == 0) {
            if (m.pt.total <= (1u << 20) && model_check_memory(&m, 1, 1) == 0) {
                model_alloc(&m, 1, 1);
                TrainState ts;
                memset(&ts, 0, sizeof ts);
                if (ckpt_load(&m, &ts, dir) == 0) {
                    if (ts.step < 0 || ts.step > 1000000000L || !isfinite(ts.tokens_seen) || ts.tokens_seen < 0 ||
                        !(ts.best_valid >= 0) || ts.best_step < -1 || !(ts.best_acc == -1 || (ts.best_acc >= 0 && ts.best_acc <= 1)))
                        fz_fail("checkpoint state out of range: step %ld tokens %g best %g acc %g best_step %ld", ts.step,
                                ts.tokens_seen, ts.best_valid, ts.best_acc, ts.best_step);
                }
                (void)ckpt_load(&m, NULL, dir);
            }
            model_free(&m);
        }
    }
    gma_error_clear();
    return 0;
}
