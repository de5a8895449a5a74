/* fuzz_encode.c: encoding arbitrary bytes with fixed tokenizers: bytes, and a byte-level
 * BPE trained at start-up (the GPT-2 code path: pre-tokenisation, specials, rank-ordered
 * merges, the long-piece heap merge). Invariants: decode(encode(x)) == x; the parallel
 * encoder gives the serial encoder's ids. */
#include <stdlib.h>
#include <string.h>

#include "data/text/bpe.h"
#include "data/text/tokenizer.h"
#include "fuzz_util.h"

static Tokenizer *g_tok[2];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init();
    const char *train = fz_path("train.txt");
    static const char text[] =
        "The history of the city begins with a small settlement. It grew, and it's growing still: 1,024 people "
        "in 1901, 65,536 in 2001! <|endoftext|> Caf\xc3\xa9s \xe2\x80\x94 na\xc3\xafve r\xc3\xa9sum\xc3\xa9s \xf0\x9f\x98\x80\n"
        "  indented    spaces\ttabs\r\nlines 've 're 'll 'd 'm 's don't won't\n";
    char big[sizeof text * 20];
    size_t k = 0;
    for (int i = 0; i < 20; i++) memcpy(big + k, text, sizeof text - 1), k += sizeof text - 1;
    fz_write(train, big, k);
    g_tok[0] = tokenizer_bytes(1);
    g_tok[1] = tokenizer_bpe_train(train, 320, 0);
    if (!g_tok[1]) fz_fail("BPE training failed: %s", gma_error());
    bpe_long_piece = 16; /* the heap merge runs on short inputs too */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *text = (const char *)data;
    for (int t = 0; t < 2; t++) {
        uint32_t *ids = NULL, *pids = NULL;
        size_t m = 0, pm = 0;
        if (tokenizer_encode(g_tok[t], text, n, &ids, &m) != 0) fz_fail("encode failed: %s", gma_error());
        char *back = NULL;
        size_t blen = 0;
        if (tokenizer_decode(g_tok[t], ids, m, &back, &blen) != 0) fz_fail("decode failed: %s", gma_error());
        if (blen != n || memcmp(back, text, n)) fz_fail("tokenizer %d: decode(encode(x)) != x", t);
        if (tokenizer_encode_parallel(g_tok[t], text, n, 2, &pids, &pm) != 0) fz_fail("parallel encode failed");
        if (pm != m || (m && memcmp(pids, ids, m * sizeof *ids))) fz_fail("tokenizer %d: parallel encode differs", t);
        free(ids);
        free(pids);
        free(back);
    }
    return 0;
}
