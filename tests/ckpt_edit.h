/* ckpt_edit.h: test helpers that build damaged checkpoints and shards (test_hostile.c,
 * test_faults.c): a tiny training config, a safetensors file rewritten with one metadata
 * value replaced or every weight set to one value, and a count of output lines. */
#ifndef GMA_TEST_CKPT_EDIT_H
#define GMA_TEST_CKPT_EDIT_H
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "testutil.h"

/* A tiny recall model that trains in milliseconds a step; checkpoints every step. */
static const char *CE_TINY =
    "{\"name\": \"tiny\", \"seed\": 5,\n"
    " \"model\": {\"d_model\": 16, \"n_layers\": 2, \"n_heads\": 2, \"max_seq_len\": 24, \"mixer\": [\"gma\", \"sdpa\"]},\n"
    " \"gma\": {\"n_components\": 4, \"chunk\": 5},\n"
    " \"train\": {\"steps\": 4, \"batch_size\": 2, \"seq_len\": 24, \"lr\": 0.01, \"warmup\": 0, \"schedule\": \"constant\",\n"
    "           \"eval_every\": 0, \"eval_batches\": 1, \"log_every\": 1, \"checkpoint_every\": 1, \"keep_checkpoints\": 2},\n"
    " \"data\": {\"recall_vocab\": 20, \"recall_pairs\": 4, \"recall_valid\": 4, \"recall_test\": 4}}\n";

/* Rewrite the safetensors file at path with metadata key set to value (added if absent;
 * value NULL removes it; key NULL changes none); with fill, every tensor element becomes
 * *fill, else the tensors are unchanged. */
__attribute__((unused)) static void ce_rewrite(const char *path, const char *key, const char *value, const real *fill) {
    StFile f;
    ck_assert_msg(st_open(&f, path) == 0, "%s", gma_error());
    StTensor *t = calloc((size_t)f.n, sizeof *t);
    real **bufs = calloc((size_t)f.n, sizeof *bufs);
    for (int i = 0; i < f.n; i++) {
        bufs[i] = malloc((f.e[i].numel + 1) * sizeof(real));
        st_read_tensor(&f.e[i], bufs[i]);
        for (size_t j = 0; fill && j < f.e[i].numel; j++) bufs[i][j] = *fill;
        t[i].name = f.e[i].name;
        t[i].ndim = f.e[i].ndim;
        memcpy(t[i].shape, f.e[i].shape, sizeof t[i].shape);
        t[i].data = bufs[i];
    }
    const char *mk[64], *mv[64];
    int nm = 0, found = 0;
    for (int i = 0; i < f.n_meta && nm < 63; i++) {
        if (key && !strcmp(f.mkeys[i], key)) {
            found = 1;
            if (!value) continue;
            mk[nm] = key, mv[nm++] = value;
        } else
            mk[nm] = f.mkeys[i], mv[nm++] = f.mvals[i];
    }
    if (key && !found && value) mk[nm] = key, mv[nm++] = value;
    ck_assert_msg(st_write(path, t, f.n, mk, mv, nm) == 0, "%s", gma_error());
    for (int i = 0; i < f.n; i++) free(bufs[i]);
    free(bufs);
    free(t);
    st_close(&f);
}

static inline void ce_set_meta(const char *path, const char *key, const char *value) { ce_rewrite(path, key, value, NULL); }
/* Every weight of the safetensors file at path set to v (e.g. finite but huge) */
static inline void ce_fill_tensors(const char *path, real v) { ce_rewrite(path, NULL, NULL, &v); }

/* Lines of text (a last line without '\n' counts). */
static int ce_lines(const char *s) {
    int n = 0;
    for (const char *p = s; *p; p++) n += *p == '\n';
    return n + (s[0] && s[strlen(s) - 1] != '\n');
}
#endif
