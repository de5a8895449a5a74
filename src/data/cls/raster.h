/* raster.h: the drawing and resampling steps the Pathfinder release takes from its imaging
 * libraries, written out so the generator (pathfinder.c) draws what the release draws:
 * a line of a given pixel width between integer end points (PIL ImageDraw.line: Bresenham
 * for width 1, a filled quadrilateral for wider lines), dilation by a disk (OpenCV dilate
 * with generate_dilation_struct's kernel) and a Lanczos-3 resize (PIL Image.resize with
 * LANCZOS: the horizontal pass, then the vertical; 8-bit images round and clamp each pass).
 * docs/lra.md (Pathfinder, Rendering) describes how the generator uses them.
 */
#ifndef GMA_RASTER_H
#define GMA_RASTER_H

/* The taps of one axis of a resize from `in` to `out` samples: output sample o reads
 * count[o] inputs from first[o] with weights w[o * max_taps + k] (they sum to 1). */
typedef struct LanczosTaps {
    int in, out, max_taps;
    int *first, *count;
    double *w;
} LanczosTaps;

/* Build the taps (PIL's precompute_coeffs with the Lanczos filter of support 3, widened
 * by in / out when shrinking). Returns 0, or -1 with the error set. */
int lanczos_taps(LanczosTaps *t, int in, int out);
void lanczos_taps_free(LanczosTaps *t);

/* out (ty->out rows x tx->out columns) = in (ty->in x tx->in) resized; tmp holds
 * ty->in x tx->out floats. quantise: round half up and clamp to [0, 255] after each pass,
 * as PIL does for 8-bit images ("L"); otherwise plain floats ("F"). */
void lanczos_resize(const LanczosTaps *tx, const LanczosTaps *ty, const float *in, float *tmp, float *out,
                    int quantise);

/* Draw ink on img (h x w, row-major) along the line from (y0, x0) to (y1, x1), width
 * pixels wide, as PIL does: width <= 1 sets the Bresenham pixels from the start to the
 * end, both included; wider lines fill the quadrilateral PIL builds around the
 * segment (half-widths rounded up on one side and down on the other). Clipped to img. */
void raster_line(float *img, int h, int w, int y0, int x0, int y1, int x1, int width, float ink);

/* dst = src dilated by the disk x^2 + y^2 <= radius^2 (pixels outside the image ignored). */
void raster_dilate_disk(const float *src, float *dst, int h, int w, int radius);

#endif
