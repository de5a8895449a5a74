/* lra_retrieval.c: LRA Retrieval (ACL Anthology Network citation pairs) from the LRA
 * release's TSV files new_aan_pairs.{train,eval,test}.tsv: one pair a line, fields
 * label, id1, id2, text1, text2 (label 0/1, also written "0.0"/"1.0"). The release
 * writes each text as a Python bytes literal (b'...' with backslash escapes); such a
 * field is decoded to its bytes, any other field is taken as is. Both documents are
 * byte-level (byte + 1), each truncated to max_len (default 4000), n_seq = 2.
 */
#include "data/cls/cls_loaders.h"
#include "data/cls/cls_build.h"
#include "data/cls/cls_lines.h"
#include "core/common.h"

#include <string.h>

static const char *const RETRIEVAL_FILES[3] = {
    "new_aan_pairs.train.tsv", "new_aan_pairs.eval.tsv", "new_aan_pairs.test.tsv"};

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode a Python bytes literal b'...' or b"..." in place (Python's rules: \\ \' \"
 * \a \b \f \n \r \t \v, \ooo octal, \xhh, backslash-newline dropped, any other
 * backslash kept). Returns the new length, the length unchanged when the field is not a
 * bytes literal, or -1 with *bad set to the offset of a malformed \x escape. */
static long py_bytes_decode(char *s, size_t n, size_t *bad) {
    if (n < 3 || s[0] != 'b' || (s[1] != '\'' && s[1] != '"') || s[n - 1] != s[1]) return (long)n;
    size_t o = 0, end = n - 1;
    for (size_t i = 2; i < end; i++) {
        char c = s[i];
        if (c != '\\' || i + 1 == end) {
            s[o++] = c;
            continue;
        }
        char e = s[++i];
        switch (e) {
        case '\n': break;
        case '\\': case '\'': case '"': s[o++] = e; break;
        case 'a': s[o++] = '\a'; break;
        case 'b': s[o++] = '\b'; break;
        case 'f': s[o++] = '\f'; break;
        case 'n': s[o++] = '\n'; break;
        case 'r': s[o++] = '\r'; break;
        case 't': s[o++] = '\t'; break;
        case 'v': s[o++] = '\v'; break;
        case 'x': {
            int h = i + 2 < end ? hexval(s[i + 1]) : -1, l = i + 2 < end ? hexval(s[i + 2]) : -1;
            if (h < 0 || l < 0) {
                *bad = i - 1;
                return -1;
            }
            s[o++] = (char)(h * 16 + l);
            i += 2;
            break;
        }
        default:
            if (e >= '0' && e <= '7') {
                int v = e - '0';
                for (int k = 0; k < 2 && i + 1 < end && s[i + 1] >= '0' && s[i + 1] <= '7'; k++)
                    v = v * 8 + (s[++i] - '0');
                s[o++] = (char)(v & 0xff);
            } else {
                s[o++] = '\\';
                s[o++] = e;
            }
        }
    }
    return (long)o;
}

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
        for (int k = 3; k < 5; k++) {
            size_t bad = 0;
            long m = py_bytes_decode(f[k], fl[k], &bad);
            if (m < 0)
                return gma_errorf("%s: text%d: malformed \\x escape at byte %zu of the bytes literal", where,
                                  k - 2, bad);
            if (clsb_add_bytes(b, (const uint8_t *)f[k], (size_t)m, where) < 0) return -1;
        }
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
