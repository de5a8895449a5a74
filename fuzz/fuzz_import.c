/* fuzz_import.c: the GPT-2 import readers (src/model/import_gpt2_llmc.c, import_gpt2_hf.c).
 * Input: one byte (even: llm.c, odd: Hugging Face), then for llm.c the model file, for
 * Hugging Face config.json's text, a NUL, and model.safetensors. Invariants: the model is
 * allocated only when the file holds at least its weights (a small file never makes the
 * reader take the memory its header or config.json promise), and every weight of a model
 * that was read is finite. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt2_dest.h"
#include "train/config_registry.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n < 1) return 0;
    int hf = data[0] & 1;
    data++, n--;
    const char *st = fz_path("model.safetensors"), *cj = fz_path("config.json"), *bin = fz_path("gpt2.bin");
    size_t file_len = n;
    if (hf) {
        char *text = fz_cut(&data, &n);
        fz_write(cj, text, strlen(text));
        free(text);
        fz_write(st, data, n);
        file_len = n;
    } else
        fz_write(bin, data, n);
    Gpt2Dest d = {0};
    Gpt2Info info = {0};
    d.src = hf ? st : bin;
    int rc = hf ? gpt2_read_hf(st, cj, &d, &info) : gpt2_read_llmc(bin, &d, &info);
    if (d.built && (double)d.m.pt.total * sizeof(real) > (double)file_len)
        fz_fail("a model of %zu weights allocated for a file of %zu bytes", d.m.pt.total, file_len);
    if (rc == 0)
        for (size_t i = 0; i < d.m.pt.total; i++)
            if (!isfinite(d.host[i])) fz_fail("weight %zu of an accepted file is not finite", i);
    gpt2_dest_free(&d);
    return 0;
}
