/* tokenizer.c: the tokenizer interface (tokenizer.h) over four kinds: bytes, gpt2, bpe
 * (both byte-level BPE, bpe.c) and word (WikiText word level), plus the parallel and
 * streaming encoders. Parallel encoding cuts the text only where every kind of
 * tokenizer starts a fresh token regardless of context (after a newline, see
 * safe_cut()), so the ids equal those of a single sequential pass.
 */
#include "data/text/tokenizer.h"

#include <errno.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/text/bpe.h"

typedef struct WordVocab {
    uint32_t n, cap;
    char **word;
    uint32_t *table; /* id + 1 */
    size_t mask;
    uint32_t unk, eos;
} WordVocab;

struct Tokenizer {
    TokenizerKind kind;
    char spec[1100];
    uint32_t vocab;
    int n_special; /* bytes */
    BpeModel *bpe;
    WordVocab *wv;
};

TokenizerKind tokenizer_kind(const Tokenizer *t) { return t->kind; }
const char *tokenizer_spec(const Tokenizer *t) { return t->spec; }
uint32_t tokenizer_vocab_size(const Tokenizer *t) { return t->vocab; }

/* ---- word vocabulary ---- */
static uint32_t word_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h ^ (h >> 16);
}

static long wv_find(const WordVocab *v, const char *s, size_t n) {
    if (!v->table) return -1;
    size_t i = word_hash(s, n) & v->mask;
    while (v->table[i]) {
        uint32_t id = v->table[i] - 1;
        if (strncmp(v->word[id], s, n) == 0 && v->word[id][n] == 0) return id;
        i = (i + 1) & v->mask;
    }
    return -1;
}

static uint32_t wv_add(WordVocab *v, const char *s, size_t n) {
    long f = wv_find(v, s, n);
    if (f >= 0) return (uint32_t)f;
    if ((size_t)(v->n + 1) * 2 > v->mask + 1 || !v->table) {
        size_t cap = v->table ? (v->mask + 1) * 2 : 1024;
        free(v->table);
        v->table = xcalloc(cap, sizeof *v->table);
        v->mask = cap - 1;
        for (uint32_t id = 0; id < v->n; id++) {
            size_t i = word_hash(v->word[id], strlen(v->word[id])) & v->mask;
            while (v->table[i]) i = (i + 1) & v->mask;
            v->table[i] = id + 1;
        }
    }
    if (v->n == v->cap) v->word = xrealloc(v->word, (v->cap = v->cap ? v->cap * 2 : 1024) * sizeof *v->word);
    char *w = xmalloc(n + 1);
    memcpy(w, s, n);
    w[n] = 0;
    v->word[v->n] = w;
    size_t i = word_hash(s, n) & v->mask;
    while (v->table[i]) i = (i + 1) & v->mask;
    v->table[i] = v->n + 1;
    return v->n++;
}

static void wv_free(WordVocab *v) {
    if (!v) return;
    for (uint32_t i = 0; i < v->n; i++) free(v->word[i]);
    free(v->word);
    free(v->table);
    free(v);
}

static int is_word_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

static Tokenizer *word_tokenizer(WordVocab *v, const char *spec) {
    Tokenizer *t = xcalloc(1, sizeof *t);
    t->kind = TOK_WORD;
    v->unk = wv_add(v, "<unk>", 5);
    v->eos = wv_add(v, "<eos>", 5);
    t->wv = v;
    t->vocab = v->n;
    snprintf(t->spec, sizeof t->spec, "%s", spec);
    return t;
}

Tokenizer *tokenizer_word_build(const char *train_path) {
    FILE *f = fopen(train_path, "rb");
    if (!f) {
        gma_errorf("%s: cannot open: %s", train_path, strerror(errno));
        return NULL;
    }
    WordVocab *v = xcalloc(1, sizeof *v);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        size_t i = 0;
        while (i < (size_t)n) {
            while (i < (size_t)n && (is_word_space((unsigned char)line[i]) || line[i] == '\n')) i++;
            size_t s = i;
            while (i < (size_t)n && !is_word_space((unsigned char)line[i]) && line[i] != '\n') i++;
            if (i > s) wv_add(v, line + s, i - s);
        }
    }
    free(line);
    fclose(f);
    return word_tokenizer(v, "word");
}

static Tokenizer *word_load(const char *path) {
    size_t len;
    char *txt = gma_read_file(path, &len);
    if (!txt) return NULL;
    WordVocab *v = xcalloc(1, sizeof *v);
    char *p = txt;
    int line = 0;
    while (*p) {
        line++;
        char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        int bad = n == 0;
        for (size_t i = 0; i < n && !bad; i++) bad = is_word_space((unsigned char)p[i]);
        if (bad || wv_find(v, p, n) >= 0) {
            gma_errorf("%s:%d: broken vocabulary line (%s): \"%.*s\"", path, line,
                       bad ? "want one word, no spaces, not empty" : "word listed twice", (int)GMA_MIN(n, (size_t)60), p);
            wv_free(v);
            free(txt);
            return NULL;
        }
        wv_add(v, p, n);
        p = nl ? nl + 1 : p + n;
    }
    free(txt);
    char spec[1100];
    snprintf(spec, sizeof spec, "word:%s", path);
    return word_tokenizer(v, spec);
}

static void word_encode(const WordVocab *v, const char *t, size_t len, IdVec *out) {
    size_t i = 0;
    while (i < len) {
        int any = 0;
        while (i < len && t[i] != '\n') {
            while (i < len && is_word_space((unsigned char)t[i])) i++;
            size_t s = i;
            while (i < len && !is_word_space((unsigned char)t[i]) && t[i] != '\n') i++;
            if (i > s) {
                long id = wv_find(v, t + s, i - s);
                idvec_push(out, id < 0 ? v->unk : (uint32_t)id);
            }
            any = 1;
        }
        if (i < len || any) idvec_push(out, v->eos); /* a line end (or the last, unterminated line) */
        i++;
    }
}

/* ---- construction ---- */
Tokenizer *tokenizer_bytes(int n_special) {
    Tokenizer *t = xcalloc(1, sizeof *t);
    t->kind = TOK_BYTES;
    t->n_special = n_special < 0 ? 0 : n_special;
    t->vocab = 256 + (uint32_t)t->n_special;
    if (t->n_special) snprintf(t->spec, sizeof t->spec, "bytes:%d", t->n_special);
    else snprintf(t->spec, sizeof t->spec, "bytes");
    return t;
}

static Tokenizer *bpe_tokenizer(BpeModel *m, TokenizerKind kind, const char *spec) {
    Tokenizer *t = xcalloc(1, sizeof *t);
    t->kind = kind;
    t->bpe = m;
    t->vocab = m->n_vocab;
    snprintf(t->spec, sizeof t->spec, "%s", spec);
    return t;
}

Tokenizer *tokenizer_load(const char *spec, const char *vocab_dir) {
    char a[1100], b[1100];
    if (strcmp(spec, "bytes") == 0) return tokenizer_bytes(0);
    if (strncmp(spec, "bytes:", 6) == 0) {
        char *end;
        long n = strtol(spec + 6, &end, 10);
        if (*end || n < 0 || n > 65536) {
            gma_errorf("tokenizer '%s': want bytes:N with 0 <= N <= 65536 special tokens", spec);
            return NULL;
        }
        return tokenizer_bytes((int)n);
    }
    if (strcmp(spec, "gpt2") == 0 || strncmp(spec, "bpe:", 4) == 0) {
        int gpt2 = spec[0] == 'g';
        const char *dir = gpt2 ? (vocab_dir ? vocab_dir : "data/gpt2") : spec + 4;
        snprintf(a, sizeof a, "%s/encoder.json", dir);
        snprintf(b, sizeof b, "%s/vocab.bpe", dir);
        BpeModel *m = bpe_load(a, b);
        if (!m) return NULL;
        char s[1100];
        if (gpt2) snprintf(s, sizeof s, "gpt2");
        else snprintf(s, sizeof s, "bpe:%s", dir);
        return bpe_tokenizer(m, gpt2 ? TOK_GPT2 : TOK_BPE, s);
    }
    if (strncmp(spec, "word:", 5) == 0) return word_load(spec + 5);
    if (strcmp(spec, "word") == 0) {
        snprintf(a, sizeof a, "%s/vocab.txt", vocab_dir ? vocab_dir : ".");
        return word_load(a);
    }
    gma_errorf("unknown tokenizer '%s' (gpt2, bpe:DIR, word:FILE, bytes, bytes:N)", spec);
    return NULL;
}

void tokenizer_free(Tokenizer *t) {
    if (!t) return;
    bpe_free(t->bpe);
    wv_free(t->wv);
    free(t);
}

long tokenizer_token_id(const Tokenizer *t, const char *s) {
    switch (t->kind) {
    case TOK_BYTES:
        if (strlen(s) == 1) return (unsigned char)s[0];
        if (strncmp(s, "<special", 8) == 0) {
            long k = strtol(s + 8, NULL, 10);
            if (k >= 0 && k < t->n_special) return 256 + k;
        }
        return -1;
    case TOK_WORD: return wv_find(t->wv, s, strlen(s));
    default: return bpe_lookup(t->bpe, s, strlen(s));
    }
}

long tokenizer_unk_id(const Tokenizer *t) { return t->kind == TOK_WORD ? (long)t->wv->unk : -1; }

long tokenizer_start_id(const Tokenizer *t) {
    if (!t) return -1;
    long id = tokenizer_token_id(t, "<|endoftext|>");
    return id >= 0 ? id : tokenizer_token_id(t, "<eos>");
}

int tokenizer_encode_i32(Tokenizer *t, const char *text, size_t len, int32_t **ids, int *n) {
    uint32_t *u;
    size_t k;
    if (tokenizer_encode(t, text, len, &u, &k) != 0) return -1;
    *ids = xmalloc(sizeof(int32_t) * (k + 1));
    for (size_t i = 0; i < k; i++) (*ids)[i] = (int32_t)u[i];
    *n = (int)k;
    free(u);
    return 0;
}

char *tokenizer_decode_i32(Tokenizer *t, const int32_t *ids, size_t n, size_t *len) {
    uint32_t *u = xmalloc(sizeof(uint32_t) * (n + 1));
    for (size_t i = 0; i < n; i++) u[i] = (uint32_t)ids[i];
    char *text = NULL;
    if (tokenizer_decode(t, u, n, &text, len) != 0) text = NULL;
    free(u);
    return text;
}

int tokenizer_save(const Tokenizer *t, const char *dir) {
    if (t->kind == TOK_GPT2 || t->kind == TOK_BPE) return bpe_save(t->bpe, dir);
    if (t->kind == TOK_BYTES) return 0;
    size_t cap = 1 << 16, n = 0;
    char *buf = xmalloc(cap);
    for (uint32_t i = 0; i < t->wv->n; i++) {
        size_t l = strlen(t->wv->word[i]);
        if (n + l + 2 > cap) buf = xrealloc(buf, cap = (cap + l) * 2);
        memcpy(buf + n, t->wv->word[i], l);
        n += l;
        buf[n++] = '\n';
    }
    if (gma_mkdirs(dir) != 0) {
        free(buf);
        return -1;
    }
    char path[1100];
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    int rc = gma_write_file_atomic(path, buf, n);
    free(buf);
    return rc;
}

/* ---- encoding ---- */
static void encode_into(Tokenizer *t, void *cache, const char *text, size_t len, IdVec *out) {
    switch (t->kind) {
    case TOK_BYTES:
        for (size_t i = 0; i < len; i++) idvec_push(out, (unsigned char)text[i]);
        break;
    case TOK_WORD: word_encode(t->wv, text, len, out); break;
    default: bpe_encode(t->bpe, cache, text, len, out); break;
    }
}

int tokenizer_encode(Tokenizer *t, const char *text, size_t len, uint32_t **ids, size_t *n) {
    IdVec out = {0};
    BpeCache *c = t->bpe ? bpe_cache_new() : NULL;
    encode_into(t, c, text, len, &out);
    bpe_cache_free(c);
    *ids = out.v ? out.v : xmalloc(1);
    *n = out.n;
    return 0;
}

static int ascii_graph(unsigned char c) { return c > ' ' && c < 0x7f; }
static int ascii_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

/* 1 if encoding text[0,p) and text[p,len) separately gives the ids of the whole.
 * Word: after any newline. GPT-2 pre-tokeniser (no look-behind, one look-ahead for
 * whitespace): (a) after a lone "\n" that follows a visible character and precedes one:
 * "x\n|y" is "x","\n","y" either way; (b) before the last character of a whitespace run
 * of two or more that precedes a visible character: the run minus its last character is
 * one piece both when followed by more text (\s+(?!\S)) and at the end of the text. */
static int safe_cut(const Tokenizer *t, const char *s, size_t p, size_t len) {
    if (p == 0 || p >= len) return p == len;
    if (t->kind == TOK_BYTES) return 1;
    const unsigned char *u = (const unsigned char *)s;
    if (t->kind == TOK_WORD) return u[p - 1] == '\n';
    if (u[p - 1] == '\n' && p >= 2 && ascii_graph(u[p - 2]) && ascii_graph(u[p])) return 1;
    return ascii_space(u[p - 1]) && ascii_space(u[p]) && p + 1 < len && ascii_graph(u[p + 1]);
}

/* The last safe cut in (lo, hi], or 0 if none. */
static size_t find_cut(const Tokenizer *t, const char *s, size_t lo, size_t hi, size_t len) {
    for (size_t p = hi; p > lo; p--)
        if (safe_cut(t, s, p, len)) return p;
    return 0;
}

int tokenizer_encode_parallel(Tokenizer *t, const char *text, size_t len, int n_threads, uint32_t **ids, size_t *n) {
    int nt = n_threads > 0 ? n_threads : omp_get_max_threads();
    size_t target = len / ((size_t)nt * 8) + 1;
    if (nt == 1 || len < (1u << 16)) return tokenizer_encode(t, text, len, ids, n);
    if (target < (1u << 15)) target = 1u << 15;
    size_t cap = len / target + 2, nc = 0;
    size_t *cut = xmalloc((cap + 1) * sizeof *cut);
    cut[nc++] = 0;
    size_t pos = 0;
    while (pos < len) {
        size_t want = GMA_MIN(len, pos + target);
        size_t c = want == len ? len : find_cut(t, text, pos, want, len);
        if (c == 0) { /* no safe point in this window: search forward */
            c = want;
            while (c < len && !safe_cut(t, text, c, len)) c++;
        }
        if (nc == cap + 1) cut = xrealloc(cut, (cap = cap * 2 + 1) * sizeof *cut + sizeof *cut);
        cut[nc++] = c;
        pos = c;
    }
    size_t chunks = nc - 1;
    IdVec *parts = xcalloc(chunks, sizeof *parts);
#pragma omp parallel num_threads(nt)
    {
        BpeCache *c = t->bpe ? bpe_cache_new() : NULL;
#pragma omp for schedule(dynamic, 1)
        for (long k = 0; k < (long)chunks; k++) encode_into(t, c, text + cut[k], cut[k + 1] - cut[k], &parts[k]);
        bpe_cache_free(c);
    }
    size_t total = 0;
    for (size_t k = 0; k < chunks; k++) total += parts[k].n;
    uint32_t *res = xmalloc((total + 1) * sizeof *res);
    size_t o = 0;
    for (size_t k = 0; k < chunks; k++) {
        if (parts[k].n) memcpy(res + o, parts[k].v, parts[k].n * sizeof *res);
        o += parts[k].n;
        free(parts[k].v);
    }
    free(parts);
    free(cut);
    *ids = res;
    *n = total;
    return 0;
}

int tokenizer_encode_file(Tokenizer *t, const char *path, int n_threads, tokenizer_sink_fn sink, void *ctx,
                          uint64_t *bytes_read) {
    FILE *f = fopen(path, "rb");
    if (!f) return gma_errorf("%s: cannot open: %s", path, strerror(errno));
    const size_t block = (size_t)32 << 20;
    size_t cap = block * 2, have = 0;
    char *buf = xmalloc(cap + 1);
    uint64_t total = 0;
    int rc = 0, eof = 0;
    while (!rc && !(eof && have == 0)) {
        if (!eof) {
            if (have + block > cap) buf = xrealloc(buf, (cap = have + block) + 1);
            size_t k = fread(buf + have, 1, block, f);
            if (k < block) {
                if (ferror(f)) {
                    rc = gma_errorf("%s: read failed at offset %llu: %s", path, (unsigned long long)(total + have),
                                    strerror(errno));
                    break;
                }
                eof = 1;
            }
            have += k;
        }
        /* a block ends at its last safe cut; the rest waits for more text */
        size_t use = eof ? have : have < 2 ? 0 : find_cut(t, buf, have > block ? have - block : 0, have - 1, have);
        if (use == 0 && !eof) continue; /* no safe cut yet: read more */
        uint32_t *ids;
        size_t n;
        tokenizer_encode_parallel(t, buf, use, n_threads, &ids, &n);
        if (n && sink(ctx, ids, n) != 0) rc = -1;
        free(ids);
        memmove(buf, buf + use, have - use);
        total += use;
        have -= use;
    }
    free(buf);
    fclose(f);
    if (bytes_read) *bytes_read = total;
    return rc;
}

/* ---- decoding ---- */
int tokenizer_decode(Tokenizer *t, const uint32_t *ids, size_t n, char **text, size_t *len) {
    size_t cap = n * 4 + 16, o = 0;
    char *s = xmalloc(cap);
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= t->vocab) {
            free(s);
            return gma_errorf("token id %u at position %zu is not below the vocabulary size %u", ids[i], i, t->vocab);
        }
        const char *p = NULL;
        size_t l = 0;
        char one;
        switch (t->kind) {
        case TOK_BYTES:
            if (ids[i] < 256) one = (char)ids[i], p = &one, l = 1;
            break;
        case TOK_WORD:
            if (ids[i] == t->wv->eos) p = "\n", l = 1;
            else {
                p = t->wv->word[ids[i]];
                l = strlen(p);
                if (o > 0 && s[o - 1] != '\n') {
                    if (o + 1 >= cap) s = xrealloc(s, cap *= 2);
                    s[o++] = ' ';
                }
            }
            break;
        default:
            p = t->bpe->arena + t->bpe->tok_off[ids[i]];
            l = t->bpe->tok_len[ids[i]];
        }
        if (o + l + 1 >= cap) s = xrealloc(s, cap = (cap + l) * 2);
        if (l) memcpy(s + o, p, l);
        o += l;
    }
    s[o] = 0;
    *text = s;
    *len = o;
    return 0;
}

Tokenizer *tokenizer_from_bpe(BpeModel *m, const char *spec) { return bpe_tokenizer(m, TOK_BPE, spec); }
