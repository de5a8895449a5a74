/* tokenizer.h: one interface over every tokenizer gmadata knows.
 *
 *   gpt2      byte-level BPE from encoder.json + vocab.bpe (GPT-2 pre-tokenisation)
 *   bpe:DIR   a byte-level BPE trained by `gmadata train-tokenizer`, same two files
 *   word:FILE WikiText word level: split on spaces, <eos> at each line end, <unk>
 *   bytes     256 byte values (+ optional special tokens numbered from 256)
 *
 * Encoding allocates *ids (free() it); decoding allocates *text (NUL-terminated).
 * Every function returns 0 / a valid pointer, or -1 / NULL with gma_error set.
 */
#ifndef GMA_TOKENIZER_H
#define GMA_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>

typedef enum { TOK_BYTES, TOK_GPT2, TOK_BPE, TOK_WORD } TokenizerKind;
typedef struct Tokenizer Tokenizer;

/* spec: "gpt2" (files in vocab_dir, default data/gpt2), "bpe:DIR", "word:FILE",
 * "word" (vocab.txt in vocab_dir), "bytes" or "bytes:N" (N special tokens). */
Tokenizer *tokenizer_load(const char *spec, const char *vocab_dir);
Tokenizer *tokenizer_bytes(int n_special);
void tokenizer_free(Tokenizer *tok);

TokenizerKind tokenizer_kind(const Tokenizer *tok);
/* A spec string that tokenizer_load() accepts to get this tokenizer back. */
const char *tokenizer_spec(const Tokenizer *tok);
uint32_t tokenizer_vocab_size(const Tokenizer *tok);

/* Encode len bytes of text (single-threaded). */
int tokenizer_encode(Tokenizer *tok, const char *text, size_t len, uint32_t **ids, size_t *n);
/* The same ids, with the text cut at safe boundaries and encoded by n_threads threads
 * (0 = OpenMP default). */
int tokenizer_encode_parallel(Tokenizer *tok, const char *text, size_t len, int n_threads, uint32_t **ids,
                              size_t *n);
/* Decode ids to bytes; ids out of range are an error naming the position. */
int tokenizer_decode(Tokenizer *tok, const uint32_t *ids, size_t n, char **text, size_t *len);
/* Write the tokenizer's files under dir (gpt2/bpe: encoder.json + vocab.bpe; word:
 * vocab.txt; bytes: nothing). */
int tokenizer_save(const Tokenizer *tok, const char *dir);
/* Id of a token string (special or vocabulary entry), or -1. */
long tokenizer_token_id(const Tokenizer *tok, const char *s);
/* Id of <unk> for word tokenizers, -1 otherwise. */
long tokenizer_unk_id(const Tokenizer *tok);
/* The token generation starts from without a prompt: <|endoftext|>, else <eos>, else -1
 * (also for tok NULL). */
long tokenizer_start_id(const Tokenizer *tok);
/* The same as encode/decode with int32 ids, the model's type: *ids allocated (free() it),
 * *n its length; decode returns the NUL-terminated text (free() it) or NULL with gma_error
 * for an id outside the vocabulary. */
int tokenizer_encode_i32(Tokenizer *tok, const char *text, size_t len, int32_t **ids, int *n);
char *tokenizer_decode_i32(Tokenizer *tok, const int32_t *ids, size_t n, size_t *len);

/* Streaming encode of a whole file: calls sink with each block of ids in order.
 * Blocks are cut at safe boundaries so the result equals encoding the whole file. */
typedef int (*tokenizer_sink_fn)(void *ctx, const uint32_t *ids, size_t n);
int tokenizer_encode_file(Tokenizer *tok, const char *path, int n_threads, tokenizer_sink_fn sink, void *ctx,
                          uint64_t *bytes_read);

/* ---- building tokenizers ---- */
/* Word level: vocabulary from a training text in order of first appearance, <unk> and
 * <eos> always present. */
Tokenizer *tokenizer_word_build(const char *train_path);
/* Byte-level BPE: train vocab_size-token BPE (>= 257: bytes + merges + <|endoftext|>)
 * on the text in path, GPT-2 pre-tokenisation. */
Tokenizer *tokenizer_bpe_train(const char *path, uint32_t vocab_size, int verbose);
#endif
