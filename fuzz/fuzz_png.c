/* fuzz_png.c: the strict 8-bit grayscale PNG decoder (src/data/cls/png.c) the Pathfinder
 * loader reads its images with. Invariants: an accepted image has sides in
 * [1, PNG_MAX_SIDE], and encoding its pixels and decoding them again gives the same
 * image back. */
#include <stdlib.h>
#include <string.h>

#include "data/cls/png.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    uint8_t *pix = NULL, *enc = NULL, *back = NULL;
    int w = 0, h = 0;
    if (png_decode_gray8(data, n, "input", &pix, &w, &h) == 0) {
        if (w < 1 || h < 1 || w > PNG_MAX_SIDE || h > PNG_MAX_SIDE) fz_fail("accepted a %d x %d image", w, h);
        size_t el = 0;
        int w2 = 0, h2 = 0;
        if (png_encode_gray8(pix, w, h, &enc, &el) != 0) fz_fail("cannot encode the decoded %d x %d image", w, h);
        if (png_decode_gray8(enc, el, "re-encoded", &back, &w2, &h2) != 0) fz_fail("own encoding refused");
        if (w2 != w || h2 != h || memcmp(back, pix, (size_t)w * h)) fz_fail("round trip changed the image");
    } else if (pix) {
        fz_fail("refused input left pixels allocated");
    }
    free(pix), free(enc), free(back);
    gma_error_clear();
    return 0;
}
