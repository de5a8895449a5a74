/* launch2call.c: rewrite a .cu file for the CPU emulation in this folder.
 *
 *   launch2call IN.cu OUT.cpp
 *
 * `kern<<<grid, block[, shm]>>>(args)` (kern an identifier, optionally with one template
 * argument, `k<S>`) becomes `emu_launch(kern, "kern", dim3(grid), dim3(block),
 * (size_t)(shm), args)`; every dynamic shared-memory declaration `extern __shared__ T name[];`
 * points at the block's buffer (`T *name = (T *)g_blk->dyn;`); every static one
 * (`__shared__ T a[D]...;`) becomes a reference into the block's own poisoned shared memory
 * (emu_shared in cuda_common.cuh); `NULL` becomes `nullptr` (a
 * NULL kernel argument must convert to the parameter's pointer type). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ident(int c) { return isalnum(c) || c == '_'; }

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0, got;
    char *s = malloc(cap + 1);
    while ((got = fread(s + len, 1, cap - len, f)) > 0)
        if ((len += got) == cap) s = realloc(s, (cap *= 2) + 1);
    fclose(f);
    s[len] = 0;
    *n = len;
    return s;
}

/* the launch configuration "a, b[, c]" split at commas outside brackets, written as
 * dim3(a), dim3(b), (size_t)(c) */
static void put_config(FILE *o, const char *s, size_t n) {
    const char *part[3] = {"0", "0", "0"};
    size_t plen[3] = {1, 1, 1};
    int k = 0, depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n && k < 3; i++) {
        char c = i < n ? s[i] : ',';
        if (c == '(' || c == '[' || c == '<') depth++;
        if (c == ')' || c == ']' || c == '>') depth--;
        if (c == ',' && depth == 0) {
            while (start < i && isspace((unsigned char)s[start])) start++;
            part[k] = s + start, plen[k] = i - start, k++, start = i + 1;
        }
    }
    fprintf(o, "dim3(%.*s), dim3(%.*s), (size_t)(%.*s), ", (int)plen[0], part[0], (int)plen[1], part[1], (int)plen[2],
            part[2]);
}

/* `__shared__ T a[D1][D2], b[D];` (at s + *i) becomes, per name, `static char a_key; T (&a)[D1][D2]
 * = *(T (*)[D1][D2])emu_shared(&a_key, sizeof(T[D1][D2]));`: the block's own memory, poisoned
 * at the start of every block (a read of what this block did not write shows). Returns 0
 * when the text is not of that form. */
static int static_shared(FILE *o, const char *s, size_t n, size_t *i, size_t *out) {
    size_t p = *i + 11, t0 = p;
    while (p < n && ident((unsigned char)s[p])) p++;
    size_t tlen = p - t0;
    if (!tlen) return 0;
    fwrite(s + *out, 1, *i - *out, o);
    for (;;) {
        while (p < n && s[p] == ' ') p++;
        size_t n0 = p;
        while (p < n && ident((unsigned char)s[p])) p++;
        size_t nlen = p - n0, d0 = p;
        if (!nlen) return 0;
        while (p < n && s[p] == '[') {
            while (p < n && s[p] != ']') p++;
            p++;
        }
        size_t dlen = p - d0;
        if (!dlen) return 0;
        fprintf(o, "static char %.*s_key; %.*s (&%.*s)%.*s = *(%.*s (*)%.*s)emu_shared(&%.*s_key, sizeof(%.*s%.*s));",
                (int)nlen, s + n0, (int)tlen, s + t0, (int)nlen, s + n0, (int)dlen, s + d0, (int)tlen, s + t0, (int)dlen,
                s + d0, (int)nlen, s + n0, (int)tlen, s + t0, (int)dlen, s + d0);
        while (p < n && s[p] == ' ') p++;
        if (p < n && s[p] == ';') break;
        if (p >= n || s[p] != ',') return 0;
        p++;
        fputc(' ', o);
    }
    *i = *out = p + 1;
    (*i)--;
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: launch2call IN.cu OUT.cpp\n");
        return 2;
    }
    size_t n;
    char *s = slurp(argv[1], &n);
    if (!s) {
        fprintf(stderr, "launch2call: %s: cannot read\n", argv[1]);
        return 1;
    }
    FILE *o = fopen(argv[2], "w");
    if (!o) {
        fprintf(stderr, "launch2call: %s: cannot write\n", argv[2]);
        return 1;
    }
    size_t out = 0; /* s[out..] not yet written */
    const char *ext = "extern __shared__ ";
    for (size_t i = 0; i < n; i++) {
        if (!strncmp(s + i, "/*", 2)) { /* comments and strings are copied as they are */
            char *e = strstr(s + i + 2, "*/");
            i = e ? (size_t)(e - s) + 1 : n;
        } else if (!strncmp(s + i, "//", 2)) {
            while (i < n && s[i] != '\n') i++;
        } else if (s[i] == '"' && (i == 0 || s[i - 1] != '\'')) {
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\') i++;
        } else if (!strncmp(s + i, "<<<", 3)) { /* a launch: find the kernel name before it */
            size_t b = i;
            if (b > 0 && s[b - 1] == '>') {
                b--;
                while (b > 0 && s[b - 1] != '<') b--;
                b--;
            }
            while (b > 0 && ident((unsigned char)s[b - 1])) b--;
            char *close = strstr(s + i + 3, ">>>(");
            if (!close || b == i) {
                fprintf(stderr, "launch2call: %s: cannot parse the launch at byte %zu\n", argv[1], i);
                return 1;
            }
            fwrite(s + out, 1, b - out, o);
            fprintf(o, "emu_launch(%.*s, \"%.*s\", ", (int)(i - b), s + b, (int)(i - b), s + b);
            put_config(o, s + i + 3, (size_t)(close - (s + i + 3)));
            i = out = (size_t)(close - s) + 4;
            i--;
        } else if (!strncmp(s + i, "__shared__ ", 11) && (i == 0 || !ident((unsigned char)s[i - 1])) &&
                   !static_shared(o, s, n, &i, &out)) {
            fprintf(stderr, "launch2call: %s: cannot parse the __shared__ declaration at byte %zu\n", argv[1], i);
            return 1;
        } else if (!strncmp(s + i, ext, strlen(ext))) { /* extern __shared__ T name[]; */
            char type[64], name[64];
            int used = 0;
            if (sscanf(s + i + strlen(ext), "%63[A-Za-z0-9_] %63[A-Za-z0-9_][];%n", type, name, &used) == 2 && used > 0) {
                fwrite(s + out, 1, i - out, o);
                fprintf(o, "%s *%s = (%s *)g_blk->dyn;", type, name, type);
                i = out = i + strlen(ext) + used;
                i--;
            }
        } else if (!strncmp(s + i, "NULL", 4) && (i == 0 || !ident((unsigned char)s[i - 1])) &&
                   !ident((unsigned char)s[i + 4])) {
            fwrite(s + out, 1, i - out, o);
            fputs("nullptr", o);
            i = out = i + 4;
            i--;
        }
    }
    fwrite(s + out, 1, n - out, o);
    free(s);
    return fclose(o) == 0 ? 0 : 1;
}
