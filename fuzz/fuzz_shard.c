/* fuzz_shard.c: token shards (src/data/shard.c) and the evaluation data over one shard
 * (lmdata_open_file, src/data/lmdata.c). Invariants: every token of an accepted shard is
 * below its vocabulary; evaluation windows hold only such tokens and targets (or -1). */
#include <stdlib.h>
#include <string.h>

#include "data/lm/lmdata.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fz_path("x.bin");
    fz_write(path, data, n);
    TokenShard s;
    if (shard_open(&s, path, 1) == 0) {
        for (uint64_t i = 0; i < s.count; i++)
            if (shard_get(&s, i) >= s.vocab) fz_fail("token %llu is %u, vocabulary %u", (unsigned long long)i, shard_get(&s, i), s.vocab);
        shard_close(&s);
    }
    LmData d;
    if (lmdata_open_file(&d, path) == 0) {
        static const int lens[3] = {1, 3, 8}, strides[3] = {0, 1, 2};
        for (int k = 0; k < 3; k++) {
            int N = lens[k], B = 2;
            d.eval_stride = strides[k];
            long w = lmdata_eval_windows(&d, SPLIT_TEST, N);
            int32_t tok[16], tgt[16];
            for (long b = 0; b * B < w && b < 64; b++) {
                int got = lmdata_eval_batch(&d, SPLIT_TEST, b, B, N, tok, tgt);
                if (got < 1 || got > B) fz_fail("batch %ld of %ld windows filled %d rows", b, w, got);
                for (int i = 0; i < B * N; i++)
                    if (tok[i] < 0 || (uint32_t)tok[i] >= d.vocab || tgt[i] < -1 || (tgt[i] >= 0 && (uint32_t)tgt[i] >= d.vocab))
                        fz_fail("window token %d / target %d outside the vocabulary %u", tok[i], tgt[i], d.vocab);
            }
        }
        lmdata_close(&d);
    }
    gma_error_clear();
    return 0;
}
