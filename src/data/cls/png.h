/* png.h: 8-bit grayscale PNG: an encoder and a strict decoder of exactly that format
 * (colour type 0, bit depth 8, no interlace), the images the Pathfinder generator writes
 * and its loader reads (docs/lra.md, Pathfinder). The decoder checks every length, CRC,
 * field and filter byte and rejects anything else with one line naming the input and the
 * byte offset; png_decode_gray8 takes (bytes, length) so it can be fuzzed directly.
 */
#ifndef GMA_PNG_H
#define GMA_PNG_H
#include <stddef.h>
#include <stdint.h>

/* Largest width or height the decoder accepts (the biggest Pathfinder image is 256). */
#define PNG_MAX_SIDE 16384

/* Encode w x h row-major gray bytes. *out is malloc'ed (free it). Returns 0, or -1 with
 * the error set. */
int png_encode_gray8(const uint8_t *pix, int w, int h, uint8_t **out, size_t *out_len);
/* Encode and write to path (plain write, no fsync). */
int png_write_gray8(const char *path, const uint8_t *pix, int w, int h);

/* Decode buf[0..len) into *pix (malloc'ed, w*h bytes), *w, *h. name is used in the error
 * line ("NAME: offset N: ..."). Returns 0, or -1 with the error set and *pix NULL. */
int png_decode_gray8(const uint8_t *buf, size_t len, const char *name, uint8_t **pix, int *w, int *h);
/* Read path and decode it. */
int png_read_gray8(const char *path, uint8_t **pix, int *w, int *h);

#endif
