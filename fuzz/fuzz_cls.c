/* fuzz_cls.c: the classification loaders (src/data/clsdata.c and the LRA readers) and
 * the ListOps parser. The first input byte picks the reader, the rest is its file:
 *   0 ListOps TSV   1 retrieval TSV   2 JSONL   3 TSV   4 IMDB archive   5 CIFAR archive
 *   6+ listops_tokenize + listops_eval on the bytes.
 * Invariants: a loaded dataset's tokens are non-zero and below its vocabulary, labels are
 * in range, offsets ascend; the ListOps evaluator gives -1 or a digit. */
#include <stdlib.h>
#include <string.h>

#include "data/cls/clsdata.h"
#include "data/cls/lra_listops.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init();
    return 0;
}

static void check_dataset(const ClsDataset *d) {
    size_t rows = (size_t)d->n * d->n_seq;
    for (size_t i = 0; i < rows; i++)
        if (d->off[i + 1] < d->off[i]) fz_fail("offsets descend at %zu", i);
    for (uint64_t i = 0; i < d->off[rows]; i++)
        if (d->tok[i] == 0 || d->tok[i] >= d->vocab) fz_fail("token %u at %llu (vocabulary %u)", d->tok[i], (unsigned long long)i, d->vocab);
    for (int i = 0; i < d->n; i++)
        if (d->label[i] < 0 || d->label[i] >= d->n_classes) fz_fail("label %d of %d classes", d->label[i], d->n_classes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    if (n < 1) return 0;
    int mode = data[0];
    data++, n--;
    if (mode >= 6) {
        uint32_t tok[512];
        long k = listops_tokenize((const char *)data, n, tok, 512);
        if (k >= 0 && k <= 512) {
            int depth = 0, v = listops_eval(tok, (size_t)k, &depth);
            if (v < -1 || v > 9) fz_fail("listops value %d", v);
            if (v >= 0) {
                char s[8192];
                long sl = listops_to_string(tok, (size_t)k, s, sizeof s);
                uint32_t again[512];
                if (sl >= 0 && (listops_tokenize(s, (size_t)sl, again, 512) != k || memcmp(again, tok, (size_t)k * 4)))
                    fz_fail("listops_to_string does not tokenize back");
            }
        }
        gma_error_clear();
        return 0;
    }
    static const char *task[6] = {"listops", "retrieval", "jsonl", "tsv", "text", "image"};
    static const char *file[6] = {"basic_train.tsv", "new_aan_pairs.train.tsv", "x.jsonl", "x.tsv", "aclImdb_v1.tar.gz",
                                  "cifar-10-binary.tar.gz"};
    const char *dir = fz_path("cls");
    gma_mkdirs(dir);
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, file[mode]);
    fz_write(p, data, n);
    ClsOptions o = clsdata_default_options();
    o.max_len = 64;
    o.truncate = mode & 1;
    ClsDataset d;
    const char *path = mode >= 2 ? p : dir;
    if (clsdata_load(&d, task[mode], path, "train", &o) == 0) {
        check_dataset(&d);
        clsdata_free(&d);
    }
    fz_rmtree(dir);
    gma_error_clear();
    return 0;
}
