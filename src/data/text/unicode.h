/* unicode.h: UTF-8 decoding and the character classes of the GPT-2 pre-tokeniser. */
#ifndef GMA_UNICODE_H
#define GMA_UNICODE_H
#include <stddef.h>
#include <stdint.h>

enum { UCLASS_LETTER = 1, UCLASS_NUMBER = 2, UCLASS_SPACE = 3, UCLASS_OTHER = 4 };

/* Decode one code point at p (n > 0 bytes available). Returns its byte length; an invalid
 * or truncated sequence counts as one byte with *cp = -1 (class OTHER). */
size_t utf8_decode(const unsigned char *p, size_t n, int32_t *cp);
/* A NUL-terminated copy of n bytes with every invalid UTF-8 byte and NUL replaced by
 * U+FFFD (text from a byte-level model, for JSON); free() it. */
char *utf8_sanitize(const char *t, size_t n);
int unicode_class(int32_t cp);
int unicode_is_space(int32_t cp); /* Unicode White_Space */
/* Length of the GPT-2 pre-tokeniser piece that starts at text[i] (i < len):
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+  */
size_t gpt2_piece_len(const unsigned char *text, size_t i, size_t len);
#endif
