/* bpe.c: byte-level BPE (GPT-2 convention) shared by the gpt2 and trained bpe tokenizers.
 *
 * Files: encoder.json maps each token, written in GPT-2's byte-to-printable-character
 * alphabet, to its id; vocab.bpe lists merges "LEFT RIGHT", one per line, in priority
 * order. Encoding follows the reference (tiktoken): split special tokens out, cut the
 * text into pre-tokeniser pieces (unicode.c), then within a piece repeatedly merge the
 * adjacent pair whose concatenated bytes has the lowest merge rank, leftmost first.
 * Short pieces are memoised in a direct-mapped per-thread cache.
 */
#include "data/text/bpe.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/text/unicode.h"

void idvec_push(IdVec *a, uint32_t x) {
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 1024;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = x;
}

void idvec_append(IdVec *a, const uint32_t *x, size_t n) {
    if (a->n + n > a->cap) {
        while (a->n + n > a->cap) a->cap = a->cap ? a->cap * 2 : 1024;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    memcpy(a->v + a->n, x, n * sizeof *x);
    a->n += n;
}

void bpe_byte_to_unicode(uint32_t table[256]) {
    int n = 0;
    for (int b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        table[b] = printable ? (uint32_t)b : (uint32_t)(256 + n++);
    }
}

static uint32_t hash_bytes(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h ^ (h >> 15);
}

long bpe_lookup(const BpeModel *m, const char *s, size_t len) {
    size_t i = hash_bytes(s, len) & m->mask;
    for (;;) {
        uint32_t v = m->table[i];
        if (!v) return -1;
        uint32_t id = v - 1;
        if (m->tok_len[id] == len && memcmp(m->arena + m->tok_off[id], s, len) == 0) return id;
        i = (i + 1) & m->mask;
    }
}

/* Append a token (bytes) with the next id; returns its id. */
static uint32_t bpe_model_add(BpeModel *m, const char *s, size_t len, uint32_t id) {
    if (m->arena_len + len > m->arena_cap) {
        while (m->arena_len + len > m->arena_cap) m->arena_cap = m->arena_cap ? m->arena_cap * 2 : 1 << 20;
        m->arena = xrealloc(m->arena, m->arena_cap);
    }
    memcpy(m->arena + m->arena_len, s, len);
    m->tok_off[id] = (uint32_t)m->arena_len;
    m->tok_len[id] = (uint32_t)len;
    m->arena_len += len;
    return id;
}

static void bpe_model_index(BpeModel *m) {
    size_t cap = 1;
    while (cap < (size_t)m->n_vocab * 2 + 16) cap <<= 1;
    m->mask = cap - 1;
    free(m->table);
    m->table = xcalloc(cap, sizeof *m->table);
    for (uint32_t id = 0; id < m->n_vocab; id++) {
        if (m->tok_len[id] == 0 && !m->is_special[id]) continue;
        size_t i = hash_bytes(m->arena + m->tok_off[id], m->tok_len[id]) & m->mask;
        while (m->table[i]) i = (i + 1) & m->mask;
        m->table[i] = id + 1;
    }
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        m->byte_id[b] = (uint32_t)bpe_lookup(m, &c, 1);
    }
}

static BpeModel *bpe_model_alloc(uint32_t n) {
    BpeModel *m = xcalloc(1, sizeof *m);
    m->n_vocab = n;
    m->tok_off = xcalloc(n, sizeof *m->tok_off);
    m->tok_len = xcalloc(n, sizeof *m->tok_len);
    m->rank = xmalloc(n * sizeof *m->rank);
    for (uint32_t i = 0; i < n; i++) m->rank[i] = -1;
    m->is_special = xcalloc(n, 1);
    return m;
}

void bpe_free(BpeModel *m) {
    if (!m) return;
    free(m->arena);
    free(m->tok_off);
    free(m->tok_len);
    free(m->rank);
    free(m->is_special);
    free(m->table);
    free(m->merges);
    free(m->special_ids);
    free(m);
}

/* Map a token written in the printable alphabet to bytes. Returns length or -1. */
static long decode_printable(const char *s, size_t n, const int *cp_to_byte, char *out) {
    size_t i = 0, k = 0;
    while (i < n) {
        int32_t cp;
        i += utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (cp < 0 || cp >= 512 || cp_to_byte[cp] < 0) return -1;
        out[k++] = (char)cp_to_byte[cp];
    }
    return (long)k;
}

static void cp_table(int cp_to_byte[512]) {
    uint32_t b2u[256];
    bpe_byte_to_unicode(b2u);
    for (int i = 0; i < 512; i++) cp_to_byte[i] = -1;
    for (int b = 0; b < 256; b++) cp_to_byte[b2u[b]] = b;
}

BpeModel *bpe_load(const char *enc_path, const char *merges_path) {
    size_t len;
    char *js = gma_read_file(enc_path, &len);
    if (!js) return NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(js, len, &end, 0);
    if (!root || !cJSON_IsObject(root)) {
        size_t off = end && end >= js ? (size_t)(end - js) : 0;
        if (!root && cJSON_GetErrorPtr()) off = (size_t)(cJSON_GetErrorPtr() - js);
        gma_errorf("%s: not a JSON object of token ids (parse error at byte %zu)", enc_path, off);
        cJSON_Delete(root);
        free(js);
        return NULL;
    }
    int cp_to_byte[512];
    cp_table(cp_to_byte);
    uint32_t n = 0;
    cJSON *it;
    cJSON_ArrayForEach(it, root) {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble >= 1e7 ||
            it->valuedouble != (double)(uint32_t)it->valuedouble) {
            gma_errorf("%s: token \"%s\": id is not a non-negative integer", enc_path, it->string);
            cJSON_Delete(root);
            free(js);
            return NULL;
        }
        if ((uint32_t)it->valuedouble + 1 > n) n = (uint32_t)it->valuedouble + 1;
    }
    BpeModel *m = bpe_model_alloc(n);
    uint8_t *seen = xcalloc(n, 1);
    char buf[4096];
    int bad = 0;
    cJSON_ArrayForEach(it, root) {
        uint32_t id = (uint32_t)it->valuedouble;
        size_t sl = strlen(it->string);
        if (sl == 0) { /* no bytes: not a token (and nothing to copy) */
            bad = gma_errorf("%s: token with id %u: the key is empty", enc_path, id);
            break;
        }
        long bl = sl < sizeof buf ? decode_printable(it->string, sl, cp_to_byte, buf) : -1;
        if (seen[id]) {
            bad = gma_errorf("%s: token \"%s\": id %u used twice", enc_path, it->string, id);
            break;
        }
        seen[id] = 1;
        if (bl <= 0) { /* not in the byte alphabet: a special token, kept verbatim */
            bpe_model_add(m, it->string, sl, id);
            m->is_special[id] = 1;
        } else {
            bpe_model_add(m, buf, (size_t)bl, id);
        }
    }
    cJSON_Delete(root);
    free(js);
    for (uint32_t id = 0; id < n && !bad; id++)
        if (!seen[id]) bad = gma_errorf("%s: id %u is missing (ids must be 0..%u without gaps)", enc_path, id, n - 1);
    free(seen);
    if (bad) {
        bpe_free(m);
        return NULL;
    }
    bpe_model_index(m);
    for (int b = 0; b < 256; b++)
        if (m->byte_id[b] == UINT32_MAX) {
            gma_errorf("%s: byte 0x%02x has no token (a byte-level BPE needs all 256)", enc_path, b);
            bpe_free(m);
            return NULL;
        }
    /* merges */
    char *mt = gma_read_file(merges_path, &len);
    if (!mt) {
        bpe_free(m);
        return NULL;
    }
    size_t cap = 1024;
    m->merges = xmalloc(cap * sizeof *m->merges);
    char *p = mt;
    int line = 0;
    uint8_t *merged = xcalloc(n, 1);
    while (*p) {
        line++;
        char *nl = strchr(p, '\n');
        size_t ll = nl ? (size_t)(nl - p) : strlen(p);
        if (ll && p[ll - 1] == '\r') ll--;
        if (ll == 0 || (line == 1 && strncmp(p, "#version", 8) == 0)) {
            p = nl ? nl + 1 : p + strlen(p);
            continue;
        }
        char *sp = memchr(p, ' ', ll);
        long lb = -1, rb = -1;
        char lbuf[2048], rbuf[2048];
        if (sp && sp > p && (size_t)(sp - p) < ll - 1 && !memchr(sp + 1, ' ', ll - (size_t)(sp - p) - 1) &&
            ll < sizeof lbuf) {
            lb = decode_printable(p, (size_t)(sp - p), cp_to_byte, lbuf);
            rb = decode_printable(sp + 1, ll - (size_t)(sp - p) - 1, cp_to_byte, rbuf);
        }
        if (lb <= 0 || rb <= 0) {
            gma_errorf("%s:%d: broken merge line (want two tokens separated by one space): \"%.*s\"", merges_path,
                       line, (int)GMA_MIN(ll, (size_t)60), p);
            goto fail;
        }
        long li = bpe_lookup(m, lbuf, (size_t)lb), ri = bpe_lookup(m, rbuf, (size_t)rb);
        memcpy(lbuf + lb, rbuf, (size_t)rb);
        long mi = bpe_lookup(m, lbuf, (size_t)(lb + rb));
        if (li < 0 || ri < 0 || mi < 0) {
            gma_errorf("%s:%d: merge \"%.*s\": %s is not in %s", merges_path, line, (int)GMA_MIN(ll, (size_t)60), p,
                       li < 0 ? "the left token" : ri < 0 ? "the right token" : "the merged token", enc_path);
            goto fail;
        }
        if (m->rank[mi] < 0) m->rank[mi] = (int32_t)m->n_merges;
        merged[mi] = 1;
        if (m->n_merges == cap) m->merges = xrealloc(m->merges, (cap *= 2) * sizeof *m->merges);
        m->merges[m->n_merges][0] = (uint32_t)li;
        m->merges[m->n_merges][1] = (uint32_t)ri;
        m->n_merges++;
        p = nl ? nl + 1 : p + strlen(p);
    }
    /* specials: neither a byte nor the result of a merge */
    m->special_ids = xmalloc(n * sizeof *m->special_ids);
    for (uint32_t id = 0; id < n; id++) {
        if (m->tok_len[id] == 1 && !m->is_special[id]) continue;
        if (!merged[id]) {
            m->is_special[id] = 1;
            m->special_ids[m->n_special++] = id;
        }
    }
    free(merged);
    free(mt);
    return m;
fail:
    free(merged);
    free(mt);
    bpe_free(m);
    return NULL;
}

BpeModel *bpe_from_merges(const uint32_t (*merges)[2], uint32_t n_merges, const char **specials, uint32_t n_special) {
    BpeModel *m = bpe_model_alloc(256 + n_merges + n_special);
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        bpe_model_add(m, &c, 1, (uint32_t)b);
    }
    m->merges = xmalloc((n_merges + 1) * sizeof *m->merges);
    for (uint32_t k = 0; k < n_merges; k++) {
        uint32_t a = merges[k][0], b = merges[k][1], id = 256 + k;
        size_t la = m->tok_len[a], lb = m->tok_len[b];
        char *tmp = xmalloc(la + lb);
        memcpy(tmp, m->arena + m->tok_off[a], la);
        memcpy(tmp + la, m->arena + m->tok_off[b], lb);
        bpe_model_add(m, tmp, la + lb, id);
        free(tmp);
        m->rank[id] = (int32_t)k;
        m->merges[k][0] = a;
        m->merges[k][1] = b;
    }
    m->n_merges = n_merges;
    m->special_ids = xmalloc((n_special + 1) * sizeof *m->special_ids);
    for (uint32_t s = 0; s < n_special; s++) {
        uint32_t id = 256 + n_merges + s;
        bpe_model_add(m, specials[s], strlen(specials[s]), id);
        m->is_special[id] = 1;
        m->special_ids[m->n_special++] = id;
    }
    bpe_model_index(m);
    return m;
}

static void put_printable(cJSON *unused, const char *s, size_t n, char *out, const uint32_t b2u[256]) {
    (void)unused;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = b2u[(uint8_t)s[i]];
        if (cp < 0x80) out[k++] = (char)cp;
        else {
            out[k++] = (char)(0xC0 | (cp >> 6));
            out[k++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    out[k] = 0;
}

int bpe_save(const BpeModel *m, const char *dir) {
    if (gma_mkdirs(dir) != 0) return -1;
    uint32_t b2u[256];
    bpe_byte_to_unicode(b2u);
    cJSON *root = cJSON_CreateObject();
    char *buf = xmalloc(8192);
    for (uint32_t id = 0; id < m->n_vocab; id++) {
        const char *s = m->arena + m->tok_off[id];
        if (m->is_special[id]) {
            snprintf(buf, 8192, "%.*s", (int)m->tok_len[id], s);
        } else {
            if (m->tok_len[id] > 4000) continue;
            put_printable(NULL, s, m->tok_len[id], buf, b2u);
        }
        cJSON_AddItemToObject(root, buf, cJSON_CreateNumber(id));
    }
    char *js = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    char path[2048];
    snprintf(path, sizeof path, "%s/encoder.json", dir);
    int rc = gma_write_file_atomic(path, js, strlen(js));
    free(js);
    /* merges */
    size_t cap = 64 + (size_t)m->n_merges * 16, n = 0;
    char *mt = xmalloc(cap);
    n += (size_t)snprintf(mt, cap, "#version: 0.2\n");
    char *lb = xmalloc(8192), *rb = xmalloc(8192);
    for (uint32_t k = 0; k < m->n_merges && !rc; k++) {
        uint32_t a = m->merges[k][0], b = m->merges[k][1];
        put_printable(NULL, m->arena + m->tok_off[a], GMA_MIN(m->tok_len[a], 4000u), lb, b2u);
        put_printable(NULL, m->arena + m->tok_off[b], GMA_MIN(m->tok_len[b], 4000u), rb, b2u);
        size_t need = strlen(lb) + strlen(rb) + 3;
        if (n + need > cap) mt = xrealloc(mt, cap = (cap + need) * 2);
        n += (size_t)snprintf(mt + n, cap - n, "%s %s\n", lb, rb);
    }
    snprintf(path, sizeof path, "%s/vocab.bpe", dir);
    if (!rc) rc = gma_write_file_atomic(path, mt, n);
    free(lb);
    free(rb);
    free(mt);
    free(buf);
    return rc;
}

/* ---- encoding ---- */
#define CACHE_SLOTS 32768
#define CACHE_KEY 23
#define CACHE_IDS 12
typedef struct CacheSlot {
    uint8_t klen, nids;
    char key[CACHE_KEY];
    uint32_t ids[CACHE_IDS];
} CacheSlot;
struct BpeCache {
    CacheSlot slot[CACHE_SLOTS];
};

BpeCache *bpe_cache_new(void) { return xcalloc(1, sizeof(BpeCache)); }
void bpe_cache_free(BpeCache *c) { free(c); }

static inline long merge_rank(const BpeModel *m, const unsigned char *p, size_t len) {
    long id = bpe_lookup(m, (const char *)p, len);
    if (id < 0 || m->rank[id] < 0) return -1;
    return m->rank[id];
}

/* Long pieces: the same rule (lowest rank, then leftmost) with a heap of candidate pairs
 * and parts linked by their start offsets, O(n log n) instead of O(n^2). */
size_t bpe_long_piece = 128;

typedef struct Cand {
    long rank;
    size_t ls, le, re; /* left part [ls, le), right part [le, re) */
} Cand;

static int cand_before(const Cand *a, const Cand *b) { return a->rank != b->rank ? a->rank < b->rank : a->ls < b->ls; }

static void cand_push(Cand *h, size_t *n, Cand c) {
    size_t i = (*n)++;
    h[i] = c;
    while (i > 0 && cand_before(&h[i], &h[(i - 1) / 2])) {
        Cand t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static Cand cand_pop(Cand *h, size_t *n) {
    Cand top = h[0];
    h[0] = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && cand_before(&h[l], &h[m])) m = l;
        if (r < *n && cand_before(&h[r], &h[m])) m = r;
        if (m == i) break;
        Cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
    return top;
}

static long merge_rank(const BpeModel *m, const unsigned char *p, size_t len);

static void encode_long(const BpeModel *m, const unsigned char *p, size_t len, IdVec *out) {
    size_t *end = xmalloc((len + 1) * sizeof *end), *prev = xmalloc((len + 1) * sizeof *prev);
    Cand *h = xmalloc((3 * len + 4) * sizeof *h);
    size_t nh = 0;
    for (size_t i = 0; i < len; i++) end[i] = i + 1, prev[i] = i ? i - 1 : SIZE_MAX;
    for (size_t i = 0; i + 1 < len; i++) {
        long r = merge_rank(m, p + i, 2);
        if (r >= 0) cand_push(h, &nh, (Cand){r, i, i + 1, i + 2});
    }
    while (nh > 0) {
        Cand c = cand_pop(h, &nh);
        if (end[c.ls] != c.le || c.le >= len || end[c.le] != c.re) continue; /* stale */
        end[c.ls] = c.re;
        end[c.le] = 0; /* dead */
        if (c.re < len) prev[c.re] = c.ls;
        if (prev[c.ls] != SIZE_MAX) {
            size_t l = prev[c.ls];
            long r = merge_rank(m, p + l, c.re - l);
            if (r >= 0) cand_push(h, &nh, (Cand){r, l, c.ls, c.re});
        }
        if (c.re < len) {
            long r = merge_rank(m, p + c.ls, end[c.re] - c.ls);
            if (r >= 0) cand_push(h, &nh, (Cand){r, c.ls, c.re, end[c.re]});
        }
    }
    for (size_t i = 0; i < len; i = end[i]) idvec_push(out, (uint32_t)bpe_lookup(m, (const char *)p + i, end[i] - i));
    free(end);
    free(prev);
    free(h);
}

void bpe_encode_piece(const BpeModel *m, BpeCache *c, const unsigned char *p, size_t len, IdVec *out) {
    if (len > bpe_long_piece) {
        encode_long(m, p, len, out);
        return;
    }
    if (len == 1) {
        idvec_push(out, m->byte_id[p[0]]);
        return;
    }
    CacheSlot *slot = NULL;
    if (c && len <= CACHE_KEY) {
        slot = &c->slot[hash_bytes((const char *)p, len) & (CACHE_SLOTS - 1)];
        if (slot->klen == len && memcmp(slot->key, p, len) == 0) {
            idvec_append(out, slot->ids, slot->nids);
            return;
        }
    }
    /* whole piece a token with a rank? then merges reach it only if every step allows;
     * run the full algorithm (exactness first). */
    size_t stack_n[64];
    long stack_r[64];
    size_t *start = len < 63 ? stack_n : xmalloc((len + 1) * sizeof *start);
    long *rank = len < 63 ? stack_r : xmalloc((len + 1) * sizeof *rank);
    size_t np = len; /* parts: [start[k], start[k+1]) */
    for (size_t k = 0; k <= len; k++) start[k] = k;
    for (size_t k = 0; k + 1 < np; k++) rank[k] = merge_rank(m, p + start[k], start[k + 2] - start[k]);
    while (np > 1) {
        long best = -1;
        size_t bk = 0;
        for (size_t k = 0; k + 1 < np; k++)
            if (rank[k] >= 0 && (best < 0 || rank[k] < best)) best = rank[k], bk = k;
        if (best < 0) break;
        /* merge parts bk and bk+1: drop boundary start[bk+1] */
        memmove(start + bk + 1, start + bk + 2, (np - bk - 1) * sizeof *start);
        memmove(rank + bk + 1, rank + bk + 2, (np > bk + 2 ? np - bk - 2 : 0) * sizeof *rank);
        np--;
        if (bk + 1 < np) rank[bk] = merge_rank(m, p + start[bk], start[bk + 2] - start[bk]);
        else rank[bk] = -1;
        if (bk > 0) rank[bk - 1] = merge_rank(m, p + start[bk - 1], start[bk + 1] - start[bk - 1]);
    }
    size_t first = out->n;
    for (size_t k = 0; k < np; k++) {
        long id = bpe_lookup(m, (const char *)p + start[k], start[k + 1] - start[k]);
        idvec_push(out, (uint32_t)id);
    }
    if (slot && np <= CACHE_IDS) {
        slot->klen = (uint8_t)len;
        memcpy(slot->key, p, len);
        slot->nids = (uint8_t)np;
        memcpy(slot->ids, out->v + first, np * sizeof(uint32_t));
    }
    if (start != stack_n) free(start);
    if (rank != stack_r) free(rank);
}

static void encode_ordinary(const BpeModel *m, BpeCache *c, const unsigned char *t, size_t len, IdVec *out) {
    size_t i = 0;
    while (i < len) {
        size_t k = gpt2_piece_len(t, i, len);
        bpe_encode_piece(m, c, t + i, k, out);
        i += k;
    }
}

void bpe_encode(const BpeModel *m, BpeCache *c, const char *text, size_t len, IdVec *out) {
    const unsigned char *t = (const unsigned char *)text;
    if (m->n_special == 0) {
        encode_ordinary(m, c, t, len, out);
        return;
    }
    size_t seg = 0, i = 0;
    while (i < len) {
        const char *lt = memchr(text + i, text[0] == '<' ? '<' : '<', len - i);
        /* specials are matched anywhere they occur; all GPT-2 style ones start with '<' */
        int found = 0;
        if (lt) {
            size_t at = (size_t)(lt - text);
            for (uint32_t s = 0; s < m->n_special; s++) {
                uint32_t id = m->special_ids[s];
                size_t sl = m->tok_len[id];
                if (sl && at + sl <= len && memcmp(text + at, m->arena + m->tok_off[id], sl) == 0) {
                    encode_ordinary(m, c, t + seg, at - seg, out);
                    idvec_push(out, id);
                    seg = i = at + sl;
                    found = 1;
                    break;
                }
            }
            if (!found) i = at + 1;
        } else {
            break;
        }
    }
    encode_ordinary(m, c, t + seg, len - seg, out);
}
