/* lra_listops.c: ListOps from the Long Range Arena: tokenizer, evaluator, a seeded
 * generator that draws trees exactly as LRA's listops.py does (operator with
 * probability 0.25 below max_depth, 2..max_args arguments, uniform operator and digit,
 * kept when min_len < tokens < max_len, no duplicates), the LRA TSV writer and the
 * loader of basic_{train,val,test}.tsv (generated here or the official release).
 */
#include "data/cls/lra_listops.h"
#include "data/cls/cls_loaders.h"
#include "data/cls/cls_build.h"
#include "data/cls/cls_lines.h"
#include "core/common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const OP_NAMES[] = {"", "[MIN", "[MAX", "[MED", "[SM"};

/* ---------------------------------------------------------------- tokens and values */

long listops_tokenize(const char *src, size_t len, uint32_t *out, size_t cap) {
    size_t i = 0;
    long n = 0;
    while (i < len) {
        while (i < len && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r')) i++;
        if (i == len) break;
        size_t j = i;
        while (j < len && src[j] != ' ' && src[j] != '\t' && src[j] != '\n' && src[j] != '\r') j++;
        const char *w = src + i;
        size_t wl = j - i;
        uint32_t id = 0;
        if (wl == 1 && (w[0] == '(' || w[0] == ')')) {
            i = j;
            continue;
        } else if (wl == 1 && w[0] >= '0' && w[0] <= '9') {
            id = LISTOPS_DIGIT0 + (uint32_t)(w[0] - '0');
        } else if (wl == 1 && w[0] == ']') {
            id = LISTOPS_END;
        } else {
            for (uint32_t k = LISTOPS_MIN; k <= LISTOPS_SM; k++)
                if (wl == strlen(OP_NAMES[k]) && memcmp(w, OP_NAMES[k], wl) == 0) id = k;
        }
        if (!id)
            return gma_errorf("unknown ListOps token '%.*s' at byte %zu", (int)GMA_MIN(wl, (size_t)40), w, i);
        if ((size_t)n < cap) out[n] = id;
        n++;
        i = j;
    }
    return n;
}

typedef struct EvalFrame {
    uint32_t op;
    int nargs;
    int cnt[10];
} EvalFrame;

static int frame_value(const EvalFrame *f) {
    int lo = -1, hi = 0, sum = 0;
    for (int v = 0; v < 10; v++) {
        if (!f->cnt[v]) continue;
        if (lo < 0) lo = v;
        hi = v;
        sum += v * f->cnt[v];
    }
    switch (f->op) {
    case LISTOPS_MIN: return lo;
    case LISTOPS_MAX: return hi;
    case LISTOPS_SM: return sum % 10;
    default: { /* MED: mean of the two middle values for an even count, rounded down */
        int a = -1, b = -1, seen = 0;
        int ia = (f->nargs - 1) / 2, ib = f->nargs / 2;
        for (int v = 0; v < 10; v++) {
            if (a < 0 && seen + f->cnt[v] > ia) a = v;
            if (b < 0 && seen + f->cnt[v] > ib) b = v;
            seen += f->cnt[v];
        }
        return (a + b) / 2;
    }
    }
}

int listops_eval(const uint32_t *tok, size_t n, int *depth_out) {
    EvalFrame stack_small[16];
    EvalFrame *st = stack_small;
    size_t cap = 16, sp = 0;
    int root = -1, depth = 0, rc = -1;
    for (size_t i = 0; i < n; i++) {
        uint32_t t = tok[i];
        if (root >= 0) {
            gma_errorf("ListOps: token %zu after the end of the expression", i);
            goto out;
        }
        if (t >= LISTOPS_DIGIT0 && t < LISTOPS_DIGIT0 + 10) {
            depth = GMA_MAX(depth, (int)sp + 1);
            if (sp == 0) root = (int)(t - LISTOPS_DIGIT0);
            else st[sp - 1].cnt[t - LISTOPS_DIGIT0]++, st[sp - 1].nargs++;
        } else if (t >= LISTOPS_MIN && t <= LISTOPS_SM) {
            depth = GMA_MAX(depth, (int)sp + 1);
            if (sp == cap) {
                cap *= 2;
                if (st == stack_small) {
                    st = xmalloc(cap * sizeof *st);
                    memcpy(st, stack_small, sizeof stack_small);
                } else {
                    st = xrealloc(st, cap * sizeof *st);
                }
            }
            memset(&st[sp], 0, sizeof st[sp]);
            st[sp++].op = t;
        } else if (t == LISTOPS_END) {
            if (sp == 0) {
                gma_errorf("ListOps: ']' at token %zu closes no operator", i);
                goto out;
            }
            if (st[sp - 1].nargs == 0) {
                gma_errorf("ListOps: operator closed without arguments at token %zu", i);
                goto out;
            }
            int v = frame_value(&st[--sp]);
            if (sp == 0) root = v;
            else st[sp - 1].cnt[v]++, st[sp - 1].nargs++;
        } else {
            gma_errorf("ListOps: token id %u at %zu is not an operator, digit or ']'", t, i);
            goto out;
        }
    }
    if (sp > 0) gma_errorf("ListOps: %zu operator(s) not closed at the end (%zu tokens)", sp, n);
    else if (root < 0) gma_errorf("ListOps: empty expression");
    else rc = root;
out:
    if (st != stack_small) free(st);
    if (rc >= 0 && depth_out) *depth_out = depth;
    return rc;
}

/* ---------------------------------------------------------------- LRA string form */

/* One pass to count each operator's arguments, one to write LRA's to_string: an
 * operator with k arguments is "( " x (k+1), "[OP", then " ARG )" per argument and
 * " ] )"; e.g. [MAX 2 9 ] -> "( ( ( [MAX 2 ) 9 ) ] )". */
long listops_to_string(const uint32_t *tok, size_t n, char *out, size_t cap) {
    if (cap == 0) return -1;
    if (listops_eval(tok, n, NULL) < 0) return -1;
    uint32_t *nargs = xmalloc((n ? n : 1) * sizeof *nargs), *stack = xmalloc((n ? n : 1) * sizeof *stack);
    size_t sp = 0, len = 0;
    for (size_t i = 0; i < n; i++) {
        if (tok[i] == LISTOPS_END) {
            sp--;
            continue;
        }
        if (sp > 0) nargs[stack[sp - 1]]++;
        if (tok[i] <= LISTOPS_SM) {
            nargs[i] = 0;
            stack[sp++] = (uint32_t)i;
        }
    }
#define PUT(str, l)                                     \
    do {                                                \
        if (len + (l) + 1 > cap) goto overflow;         \
        memcpy(out + len, (str), (l));                  \
        len += (l);                                     \
    } while (0)
    sp = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t t = tok[i];
        if (t == LISTOPS_END) {
            PUT(" ] )", 4);
            if (--sp > 0) PUT(" )", 2);
        } else if (t <= LISTOPS_SM) {
            if (sp > 0) PUT(" ", 1);
            for (uint32_t a = 0; a <= nargs[i]; a++) PUT("( ", 2);
            PUT(OP_NAMES[t], strlen(OP_NAMES[t]));
            sp++;
        } else {
            char d[4] = {' ', (char)('0' + (t - LISTOPS_DIGIT0)), ' ', ')'};
            if (sp > 0) PUT(d, 4);
            else PUT(d + 1, 1);
        }
    }
#undef PUT
    out[len] = 0;
    free(nargs);
    free(stack);
    return (long)len;
overflow:
    out[0] = 0;
    free(nargs);
    free(stack);
    return -1;
}

/* ---------------------------------------------------------------- generator */

static double rand_unit(ListopsGen *g) { return rng_uniform(&g->rng); }
static uint32_t rand_below(ListopsGen *g, uint32_t n) { return (uint32_t)rng_below(&g->rng, n); }

void listops_gen_defaults(ListopsGenOptions *o) {
    o->n_train = 96000;
    o->n_valid = 2000;
    o->n_test = 2000;
    o->seed = 0;
    o->min_len = 500;
    o->max_len = 2000;
    o->max_depth = 10;
    o->max_args = 10;
}

void listops_gen_init(ListopsGen *g, const ListopsGenOptions *o) {
    g->opt = *o;
    rng_seed(&g->rng, o->seed ^ 0x4c4953544f5053ull); /* "LISTOPS" */
}

/* LRA's generate_tree, writing tokens; abandons (returns -1) once the tree reaches
 * limit tokens, since such a tree would be rejected anyway. */
static int gen_tree(ListopsGen *g, int depth, uint32_t *buf, size_t *n, size_t limit) {
    int is_op = depth < g->opt.max_depth && rand_unit(g) <= 0.25;
    if (*n >= limit) return -1;
    if (!is_op) {
        buf[(*n)++] = LISTOPS_DIGIT0 + rand_below(g, 10);
        return 0;
    }
    int k = 2 + (int)rand_below(g, (uint32_t)(g->opt.max_args - 1));
    buf[(*n)++] = LISTOPS_MIN + rand_below(g, 4);
    for (int a = 0; a < k; a++)
        if (gen_tree(g, depth + 1, buf, n, limit) < 0) return -1;
    if (*n >= limit) return -1;
    buf[(*n)++] = LISTOPS_END;
    return 0;
}

size_t listops_gen_next(ListopsGen *g, uint32_t *buf, size_t cap) {
    size_t limit = GMA_MIN((size_t)g->opt.max_len - 1, cap);
    for (long draw = 0; draw < LISTOPS_MAX_DRAWS; draw++) {
        size_t n = 0;
        if (gen_tree(g, 1, buf, &n, limit) == 0 && n > (size_t)g->opt.min_len) return n;
    }
    return 0;
}

/* ---------------------------------------------------------------- files */

static const char *const SPLIT_FILES[3] = {"basic_train.tsv", "basic_val.tsv", "basic_test.tsv"};

typedef struct HashSet {
    uint64_t *slot; /* 0 = empty */
    size_t cap, len;
} HashSet;

/* 1 if inserted, 0 if already present. */
static int hashset_add(HashSet *h, uint64_t key) {
    if (key == 0) key = 1;
    if (2 * (h->len + 1) > h->cap) {
        size_t oc = h->cap;
        uint64_t *old = h->slot;
        h->cap = oc ? 2 * oc : 1024;
        h->slot = xcalloc(h->cap, sizeof *h->slot);
        h->len = 0;
        for (size_t i = 0; i < oc; i++)
            if (old[i]) hashset_add(h, old[i]);
        free(old);
    }
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (h->cap - 1);
    while (h->slot[i]) {
        if (h->slot[i] == key) return 0;
        i = (i + 1) & (h->cap - 1);
    }
    h->slot[i] = key;
    h->len++;
    return 1;
}

int listops_generate(const char *out_dir, const ListopsGenOptions *o) {
    if (o->n_train < 0 || o->n_valid < 0 || o->n_test < 0)
        return gma_errorf("listops generate: example counts must be >= 0");
    if (o->min_len < 0 || o->max_len < o->min_len + 2 || o->max_len > 1000000)
        return gma_errorf("listops generate: need 0 <= min_len and min_len + 2 <= max_len <= 1000000 "
                          "(got %d, %d)", o->min_len, o->max_len);
    if (o->max_depth < 2 || o->max_depth > 64 || o->max_args < 2 || o->max_args > 1000)
        return gma_errorf("listops generate: need 2 <= max_depth <= 64 and 2 <= max_args <= 1000");
    if (gma_mkdirs(out_dir) < 0) return -1;
    ListopsGen g;
    listops_gen_init(&g, o);
    size_t cap = (size_t)o->max_len;
    uint32_t *tok = xmalloc(cap * sizeof *tok);
    size_t scap = 16 * cap + 64;
    char *str = xmalloc(scap);
    HashSet seen = {0};
    int counts[3] = {o->n_train, o->n_valid, o->n_test}, rc = 0;
    for (int s = 0; s < 3 && rc == 0; s++) {
        char path[4096], tmp[4200];
        snprintf(path, sizeof path, "%s/%s", out_dir, SPLIT_FILES[s]);
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        if (!f) {
            rc = gma_errorf("%s: cannot create: %s", tmp, strerror(errno));
            break;
        }
        setvbuf(f, NULL, _IOFBF, 1 << 20);
        fputs("Source\tTarget\n", f);
        for (int i = 0; i < counts[s]; i++) {
            size_t n = 0;
            for (long dup = 0; dup < 1000; dup++) {
                n = listops_gen_next(&g, tok, cap);
                if (n == 0 || hashset_add(&seen, cls_hash(tok, n * sizeof *tok))) break;
                n = 0;
            }
            if (n == 0) {
                rc = gma_errorf("listops generate: no new expression with %d < tokens < %d found after "
                                "many draws (%d examples written to %s so far): widen the length range",
                                o->min_len, o->max_len, i, SPLIT_FILES[s]);
                break;
            }
            int v = listops_eval(tok, n, NULL);
            long sl = listops_to_string(tok, n, str, scap);
            if (v < 0 || sl < 0) {
                rc = gma_error_prefix("listops generate: internal");
                break;
            }
            fwrite(str, 1, (size_t)sl, f);
            fprintf(f, "\t%d\n", v);
        }
        if (fflush(f) != 0 || ferror(f)) rc = rc ? rc : gma_errorf("%s: write failed: %s", tmp, strerror(errno));
        if (fclose(f) != 0 && rc == 0) rc = gma_errorf("%s: close failed: %s", tmp, strerror(errno));
        if (rc == 0 && rename(tmp, path) != 0) rc = gma_errorf("%s: cannot rename to %s: %s", tmp, path, strerror(errno));
        if (rc != 0) remove(tmp);
    }
    free(seen.slot);
    free(str);
    free(tok);
    return rc;
}

/* ---------------------------------------------------------------- loader */

typedef struct ListopsLoad {
    ClsBuilder b;
    uint32_t *tok;
    size_t cap;
} ListopsLoad;

static int listops_lines(void *ctx, ClsLines *l, const char *name) {
    ListopsLoad *ld = ctx;
    char *line, *f[3], where[1400];
    size_t len, fl[3];
    int r, src_col = -1, tgt_col = -1;
    while ((r = cls_lines_next(l, &line, &len)) > 0) {
        if (len == 0) continue;
        int nf = cls_split_tabs(line, len, f, fl, 3);
        if (src_col < 0) { /* header */
            for (int k = 0; k < nf && k < 2; k++) {
                if (strcmp(f[k], "Source") == 0) src_col = k;
                if (strcmp(f[k], "Target") == 0) tgt_col = k;
            }
            if (nf != 2 || src_col < 0 || tgt_col < 0)
                return gma_errorf("%s:%ld: expected the header line \"Source<TAB>Target\"", name, l->lineno);
            continue;
        }
        snprintf(where, sizeof where, "%s:%ld", name, l->lineno);
        if (nf != 2)
            return gma_errorf("%s: malformed line: %d TAB-separated fields, expected 2 (Source, Target)",
                              where, nf);
        long target;
        if (cls_parse_label(f[tgt_col], fl[tgt_col], &target) < 0 || target > 9)
            return gma_errorf("%s: Target '%.20s' is not a value 0..9", where, f[tgt_col]);
        long n = listops_tokenize(f[src_col], fl[src_col], ld->tok, ld->cap);
        if (n >= 0 && (size_t)n > ld->cap) {
            ld->cap = (size_t)n;
            ld->tok = xrealloc(ld->tok, ld->cap * sizeof *ld->tok);
            n = listops_tokenize(f[src_col], fl[src_col], ld->tok, ld->cap);
        }
        if (n < 0 || listops_eval(ld->tok, (size_t)n, NULL) < 0)
            return gma_error_prefix("%s: malformed Source", where);
        if (clsb_add_tokens(&ld->b, ld->tok, (size_t)n, where) < 0) return -1;
        if (clsb_add_label(&ld->b, target, where) < 0) return -1;
    }
    if (r < 0) return gma_error_prefix("%s:%ld", name, l->lineno + 1);
    if (src_col < 0) return gma_errorf("%s: empty file (expected the header \"Source<TAB>Target\")", name);
    return 0;
}

int lra_listops_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt) {
    int s = cls_split_index(split);
    if (s < 0) return -1;
    ListopsLoad ld;
    clsb_init(&ld.b, d, 1, 10, LISTOPS_VOCAB, opt->max_len, opt->truncate);
    ld.cap = 4096;
    ld.tok = xmalloc(ld.cap * sizeof *ld.tok);
    int rc = cls_for_lines(path, SPLIT_FILES[s], listops_lines, &ld);
    free(ld.tok);
    clsb_finish(&ld.b);
    return rc;
}
