/* bpe.h: the byte-level BPE model behind the gpt2 and bpe tokenizers (internal). */
#ifndef GMA_BPE_H
#define GMA_BPE_H
#include <stddef.h>
#include <stdint.h>

typedef struct IdVec {
    uint32_t *v;
    size_t n, cap;
} IdVec;
void idvec_push(IdVec *a, uint32_t x);
void idvec_append(IdVec *a, const uint32_t *x, size_t n);

typedef struct BpeModel {
    uint32_t n_vocab;
    char *arena; /* every token's bytes */
    size_t arena_len, arena_cap;
    uint32_t *tok_off, *tok_len; /* [n_vocab] */
    int32_t *rank;               /* [n_vocab] merge rank (line of vocab.bpe), -1 for bytes and specials */
    uint8_t *is_special;         /* [n_vocab] */
    uint32_t *table;             /* open addressing: id + 1, 0 empty */
    size_t mask;
    uint32_t byte_id[256];
    uint32_t n_merges;
    uint32_t (*merges)[2]; /* [n_merges] left, right ids */
    uint32_t *special_ids;
    uint32_t n_special;
} BpeModel;

typedef struct BpeCache BpeCache;
BpeCache *bpe_cache_new(void);
void bpe_cache_free(BpeCache *c);

/* Load encoder.json + vocab.bpe; errors name the file and line or byte offset. */
BpeModel *bpe_load(const char *encoder_path, const char *merges_path);
/* Build from merges (left/right ids into a table that starts with the 256 bytes, id = byte),
 * appending the merged tokens and then the special tokens. */
BpeModel *bpe_from_merges(const uint32_t (*merges)[2], uint32_t n_merges, const char **specials, uint32_t n_special);
int bpe_save(const BpeModel *m, const char *dir);
void bpe_free(BpeModel *m);
/* Token id of these bytes, or -1. */
long bpe_lookup(const BpeModel *m, const char *s, size_t len);
/* Append the ids of text (specials matched, GPT-2 pre-tokenisation, rank-ordered merges). */
void bpe_encode(const BpeModel *m, BpeCache *c, const char *text, size_t len, IdVec *out);
/* Apply merges to one piece (no pre-tokenisation). */
void bpe_encode_piece(const BpeModel *m, BpeCache *c, const unsigned char *p, size_t len, IdVec *out);
/* Pieces longer than this use the O(n log n) heap merge (tests lower or raise it). */
extern size_t bpe_long_piece;
/* The GPT-2 byte <-> printable code point mapping. */
void bpe_byte_to_unicode(uint32_t table[256]);
#endif
