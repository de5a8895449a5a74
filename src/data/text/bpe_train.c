/* bpe_train.c: train a byte-level BPE (`gmadata train-tokenizer`).
 *
 * The corpus is cut into GPT-2 pre-tokeniser pieces and the distinct pieces are counted;
 * then merges are learnt greedily: the most frequent adjacent pair (ties: smallest ids)
 * becomes a new token, and only the words that contain it are rewritten. Pair counts
 * live in a hash table with, per pair, the list of words it occurs in; a max-heap with
 * lazy deletion finds the next pair. Ids: bytes 0..255 (id = byte value), merges from
 * 256 in order, then <|endoftext|>; the result saves in GPT-2's two-file format.
 */
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/text/bpe.h"
#include "data/text/tokenizer.h"
#include "data/text/unicode.h"

typedef struct Word {
    uint32_t *sym;
    uint32_t n;
    uint64_t count;
    uint32_t stamp;
} Word;

typedef struct Pair {
    uint64_t key;
    int64_t count;
    uint32_t *where; /* word indices (may repeat) */
    uint32_t nwhere, capwhere;
} Pair;

typedef struct PairTable {
    Pair *p;
    uint32_t n, cap;
    uint32_t *slot; /* pair index + 1 */
    size_t mask;
} PairTable;

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static Pair *pair_get(PairTable *t, uint32_t a, uint32_t b) {
    uint64_t key = (uint64_t)a << 32 | b;
    if (!t->slot || (size_t)(t->n + 1) * 2 > t->mask + 1) {
        size_t cap = t->slot ? (t->mask + 1) * 2 : 1 << 16;
        free(t->slot);
        t->slot = xcalloc(cap, sizeof *t->slot);
        t->mask = cap - 1;
        for (uint32_t i = 0; i < t->n; i++) {
            size_t s = mix64(t->p[i].key) & t->mask;
            while (t->slot[s]) s = (s + 1) & t->mask;
            t->slot[s] = i + 1;
        }
    }
    size_t s = mix64(key) & t->mask;
    while (t->slot[s]) {
        Pair *p = &t->p[t->slot[s] - 1];
        if (p->key == key) return p;
        s = (s + 1) & t->mask;
    }
    if (t->n == t->cap) t->p = xrealloc(t->p, (t->cap = t->cap ? t->cap * 2 : 1 << 14) * sizeof *t->p);
    Pair *p = &t->p[t->n];
    memset(p, 0, sizeof *p);
    p->key = key;
    t->slot[s] = ++t->n;
    return p;
}

typedef struct HeapItem {
    int64_t count;
    uint64_t key;
} HeapItem;
typedef struct Heap {
    HeapItem *h;
    size_t n, cap;
} Heap;

static int heap_less(const HeapItem *x, const HeapItem *y) { /* x below y: lower priority */
    return x->count != y->count ? x->count < y->count : x->key > y->key;
}

static void heap_push(Heap *h, int64_t count, uint64_t key) {
    if (count <= 0) return;
    if (h->n == h->cap) h->h = xrealloc(h->h, (h->cap = h->cap ? h->cap * 2 : 1 << 14) * sizeof *h->h);
    size_t i = h->n++;
    h->h[i] = (HeapItem){count, key};
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&h->h[p], &h->h[i])) break;
        HeapItem t = h->h[p];
        h->h[p] = h->h[i];
        h->h[i] = t;
        i = p;
    }
}

static HeapItem heap_pop(Heap *h) {
    HeapItem top = h->h[0];
    h->h[0] = h->h[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && heap_less(&h->h[m], &h->h[l])) m = l;
        if (r < h->n && heap_less(&h->h[m], &h->h[r])) m = r;
        if (m == i) break;
        HeapItem t = h->h[m];
        h->h[m] = h->h[i];
        h->h[i] = t;
        i = m;
    }
    return top;
}

static void add_where(Pair *p, uint32_t w) {
    if (p->nwhere && p->where[p->nwhere - 1] == w) return;
    if (p->nwhere == p->capwhere) p->where = xrealloc(p->where, (p->capwhere = p->capwhere ? p->capwhere * 2 : 4) * sizeof *p->where);
    p->where[p->nwhere++] = w;
}

/* Distinct pre-tokeniser pieces with counts. */
typedef struct PieceMap {
    uint32_t *slot;
    size_t mask;
    Word *w;
    uint32_t n, cap;
} PieceMap;

static void piece_add(PieceMap *m, const unsigned char *p, size_t len) {
    if (!m->slot || (size_t)(m->n + 1) * 2 > m->mask + 1) {
        size_t cap = m->slot ? (m->mask + 1) * 2 : 1 << 16;
        free(m->slot);
        m->slot = xcalloc(cap, sizeof *m->slot);
        m->mask = cap - 1;
        for (uint32_t i = 0; i < m->n; i++) {
            uint64_t h = 1469598103934665603ULL;
            for (uint32_t k = 0; k < m->w[i].n; k++) h = (h ^ m->w[i].sym[k]) * 1099511628211ULL;
            size_t s = mix64(h) & m->mask;
            while (m->slot[s]) s = (s + 1) & m->mask;
            m->slot[s] = i + 1;
        }
    }
    uint64_t h = 1469598103934665603ULL;
    for (size_t k = 0; k < len; k++) h = (h ^ p[k]) * 1099511628211ULL;
    size_t s = mix64(h) & m->mask;
    while (m->slot[s]) {
        Word *w = &m->w[m->slot[s] - 1];
        if (w->n == len) {
            size_t k = 0;
            while (k < len && w->sym[k] == p[k]) k++;
            if (k == len) {
                w->count++;
                return;
            }
        }
        s = (s + 1) & m->mask;
    }
    if (m->n == m->cap) m->w = xrealloc(m->w, (m->cap = m->cap ? m->cap * 2 : 1 << 14) * sizeof *m->w);
    Word *w = &m->w[m->n];
    w->sym = xmalloc(len * sizeof *w->sym);
    for (size_t k = 0; k < len; k++) w->sym[k] = p[k];
    w->n = (uint32_t)len;
    w->count = 1;
    w->stamp = 0;
    m->slot[s] = ++m->n;
}

Tokenizer *tokenizer_bpe_train(const char *path, uint32_t vocab_size, int verbose);

/* Defined in tokenizer.c: wrap a model as a tokenizer. */
Tokenizer *tokenizer_from_bpe(BpeModel *m, const char *spec);

Tokenizer *tokenizer_bpe_train(const char *path, uint32_t vocab_size, int verbose) {
    if (vocab_size < 257) {
        gma_errorf("train-tokenizer: vocabulary size %u is below 257 (256 bytes + <|endoftext|>)", vocab_size);
        return NULL;
    }
    size_t len;
    char *text = gma_read_file(path, &len);
    if (!text) return NULL;
    PieceMap pm = {0};
    for (size_t i = 0; i < len;) {
        size_t k = gpt2_piece_len((const unsigned char *)text, i, len);
        piece_add(&pm, (const unsigned char *)text + i, k);
        i += k;
    }
    free(text);
    free(pm.slot);
    Word *w = pm.w;
    uint32_t nw = pm.n;
    PairTable pt = {0};
    for (uint32_t i = 0; i < nw; i++)
        for (uint32_t k = 0; k + 1 < w[i].n; k++) {
            Pair *p = pair_get(&pt, w[i].sym[k], w[i].sym[k + 1]);
            p->count += (int64_t)w[i].count;
            add_where(p, i);
        }
    Heap heap = {0};
    for (uint32_t i = 0; i < pt.n; i++) heap_push(&heap, pt.p[i].count, pt.p[i].key);
    uint32_t want = vocab_size - 257, nm = 0;
    uint32_t (*merges)[2] = xmalloc((want + 1) * sizeof *merges);
    uint32_t *buf = NULL;
    size_t bufcap = 0;
    while (nm < want && heap.n > 0) {
        HeapItem top = heap_pop(&heap);
        uint32_t a = (uint32_t)(top.key >> 32), b = (uint32_t)top.key;
        Pair *pp = pair_get(&pt, a, b);
        if (pp->count != top.count) continue; /* stale */
        uint32_t nid = 256 + nm;
        merges[nm][0] = a;
        merges[nm][1] = b;
        nm++;
        /* copy the word list: pair_get may move the table */
        uint32_t nwhere = pp->nwhere, *where = pp->where;
        pp->where = NULL;
        pp->nwhere = pp->capwhere = 0;
        for (uint32_t j = 0; j < nwhere; j++) {
            Word *wd = &w[where[j]];
            if (wd->stamp == nid) continue;
            wd->stamp = nid;
            int has = 0;
            for (uint32_t k = 0; k + 1 < wd->n && !has; k++) has = wd->sym[k] == a && wd->sym[k + 1] == b;
            if (!has) continue;
            int64_t c = (int64_t)wd->count;
            for (uint32_t k = 0; k + 1 < wd->n; k++) {
                Pair *q = pair_get(&pt, wd->sym[k], wd->sym[k + 1]);
                q->count -= c;
            }
            if (bufcap < wd->n) buf = xrealloc(buf, (bufcap = wd->n * 2) * sizeof *buf);
            uint32_t n2 = 0;
            for (uint32_t k = 0; k < wd->n;) {
                if (k + 1 < wd->n && wd->sym[k] == a && wd->sym[k + 1] == b) buf[n2++] = nid, k += 2;
                else buf[n2++] = wd->sym[k++];
            }
            /* new pairs get this word; every pair touched is re-pushed with its final count */
            for (uint32_t k = 0; k + 1 < n2; k++) {
                Pair *q = pair_get(&pt, buf[k], buf[k + 1]);
                q->count += c;
                add_where(q, (uint32_t)(wd - w));
            }
            for (uint32_t k = 0; k + 1 < wd->n; k++) {
                Pair *q = pair_get(&pt, wd->sym[k], wd->sym[k + 1]);
                heap_push(&heap, q->count, q->key);
            }
            for (uint32_t k = 0; k + 1 < n2; k++) {
                Pair *q = pair_get(&pt, buf[k], buf[k + 1]);
                heap_push(&heap, q->count, q->key);
            }
            memcpy(wd->sym, buf, n2 * sizeof *buf);
            wd->n = n2;
        }
        free(where);
        if (verbose && nm % 1000 == 0) fprintf(stderr, "gmadata: %u merges\n", nm);
    }
    free(buf);
    free(heap.h);
    for (uint32_t i = 0; i < pt.n; i++) free(pt.p[i].where);
    free(pt.p);
    free(pt.slot);
    for (uint32_t i = 0; i < nw; i++) free(w[i].sym);
    free(w);
    const char *specials[1] = {"<|endoftext|>"};
    BpeModel *m = bpe_from_merges((const uint32_t(*)[2])merges, nm, specials, 1);
    free(merges);
    if (verbose && nm < want)
        fprintf(stderr, "gmadata: warning: the corpus supports only %u merges; vocabulary is %u\n", nm, m->n_vocab);
    return tokenizer_from_bpe(m, "bpe");
}
