/* lra_retrieval.c: LRA Retrieval (ACL Anthology Network citation pairs) from the LRA
 * release's TSV files new_aan_pairs.{train,eval,test}.tsv: one pair a line, fields
 * label, id1, id2, text1, text2 (label 0/1, also written "0.0"/"1.0"); both documents
 * byte-level (byte + 1), each truncated to max_len (default 4000), n_seq = 2.
 */
#include "data/cls_internal.h"
#include "core/common.h"

#include <string.h>

static const char *const RETRIEVAL_FILES[3] = {
    "new_aan_pairs.train.tsv", "new_aan_pairs.eval.tsv", "new_aan_pairs.test.tsv"};

static int retrieval_lines(void *ctx, ClsLines *l, const char *name) {
    ClsBuilder *b = ctx;
    char *line, *f[6], where[1400];
    size_t len, fl[6];
    int r;
    while ((r = cls_lines_next(l, &line, &len)) > 0) {
        if (len == 0) continue;
        snprintf(where, sizeof where, "%s:%ld", name, l->lineno);
        int nf = cls_split_tabs(line, len, f, fl, 6);
        if (l->lineno == 1 && nf >= 1 && strcmp(f[0], "label") == 0) continue; /* header */
        if (nf != 5)
            return gma_errorf("%s: malformed line: %d TAB-separated fields, expected 5 "
                              "(label, id1, id2, text1, text2)", where, nf);
        long label;
        if (cls_parse_label(f[0], fl[0], &label) < 0)
            return gma_errorf("%s: label '%.20s' is not a class number", where, f[0]);
        if (clsb_add_bytes(b, (const uint8_t *)f[3], fl[3], where) < 0) return -1;
        if (clsb_add_bytes(b, (const uint8_t *)f[4], fl[4], where) < 0) return -1;
        if (clsb_add_label(b, label, where) < 0) return -1;
    }
    if (r < 0) return gma_error_prefix("%s:%ld", name, l->lineno + 1);
    return 0;
}

int lra_retrieval_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt) {
    int s = cls_split_index(split);
    if (s < 0) return -1;
    ClsBuilder b;
    clsb_init(&b, d, 2, 2, 257, opt->max_len, opt->truncate);
    int rc = cls_for_lines(path, RETRIEVAL_FILES[s], retrieval_lines, &b);
    clsb_finish(&b);
    return rc;
}
