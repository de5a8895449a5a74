/* fuzz_tokenizer.c: GPT-2 / trained-BPE tokenizer files (bpe_load, src/data/bpe.c) and
 * encoding with what they define. Input: encoder.json, NUL, vocab.bpe, NUL, text. A
 * tokenizer that loads must be lossless: decode(encode(text)) == text, and the parallel
 * encoder must give the serial encoder's ids. */
#include <stdlib.h>
#include <string.h>

#include "data/text/tokenizer.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init();
    return 0;
}

/* The invariants of one tokenizer on one text. */
static void check_round_trip(Tokenizer *tk, const char *text, size_t len) {
    uint32_t *ids = NULL, *pids = NULL;
    size_t n = 0, pn = 0;
    if (tokenizer_encode(tk, text, len, &ids, &n) != 0) fz_fail("encode failed: %s", gma_error());
    char *back = NULL;
    size_t blen = 0;
    if (tokenizer_decode(tk, ids, n, &back, &blen) != 0) fz_fail("decode of encoded ids failed: %s", gma_error());
    if (blen != len || memcmp(back, text, len)) fz_fail("decode(encode(x)) != x (%zu bytes in, %zu out)", len, blen);
    if (tokenizer_encode_parallel(tk, text, len, 2, &pids, &pn) != 0) fz_fail("parallel encode failed: %s", gma_error());
    if (pn != n || (n && memcmp(pids, ids, n * sizeof *ids))) fz_fail("parallel encode differs from serial");
    free(ids);
    free(pids);
    free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char *enc = fz_cut(&data, &n), *merges = fz_cut(&data, &n);
    char dir[1100];
    snprintf(dir, sizeof dir, "%s", fz_path("tok"));
    gma_mkdirs(dir);
    char p[1200];
    snprintf(p, sizeof p, "%s/encoder.json", dir);
    fz_write(p, enc, strlen(enc));
    snprintf(p, sizeof p, "%s/vocab.bpe", dir);
    fz_write(p, merges, strlen(merges));
    Tokenizer *tk = tokenizer_load("gpt2", dir);
    if (tk) {
        check_round_trip(tk, (const char *)data, n);
        tokenizer_free(tk);
    }
    free(enc);
    free(merges);
    gma_error_clear();
    return 0;
}
