/* test_pathfinder.c: the Pathfinder generator (release parameters, determinism, label
 * balance, markers connected exactly on positive images), its drawing steps against values
 * PIL 9.4 (Debian 12's python3-pil) gives for the same calls, the grayscale PNG codec (round
 * trip through every filter type, rejection of corrupt files), the directory layout and
 * metadata lines, the loader's split and errors, and `gmadata generate pathfinder`.
 */
#include "testutil.h"
#include "data/cls/clsdata.h"
#include "data/cls/pathfinder.h"
#include "data/cls/png.h"
#include "data/cls/raster.h"
#include "cli/args/lra_generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---------------------------------------------------------------- generator */

START_TEST(test_params) {
    static const int RES[4] = {32, 64, 128, 256};
    static const char *const DIFF[3] = {"easy", "intermediate", "hard"};
    static const int CL[3] = {6, 9, 14};
    for (int r = 0; r < 4; r++)
        for (int d = 0; d < 3; d++) {
            PathfinderParams p;
            ck_assert_int_eq(pathfinder_params(&p, RES[r], DIFF[d]), 0);
            ck_assert_int_eq(p.res, RES[r]);
            ck_assert_int_eq(p.contour_length, CL[d]);
            ck_assert_int_eq(p.distractor_length, CL[d] / 3);
            ck_assert_int_eq(p.antialias_scale, 2);
        }
    PathfinderParams p;
    ck_assert_int_eq(pathfinder_params(&p, 32, "easy"), 0);
    ck_assert_int_eq(p.paddle_length, 2);
    ck_assert_int_eq(p.seed_distance, 7);
    ck_assert_int_eq(p.num_distractor_snakes, 10);
    ck_assert(p.paddle_thickness == 0.5 && p.marker_radius == 1.5 && p.continuity == 1.0);
    ck_assert_int_eq(pathfinder_params(&p, 128, "hard"), 0);
    ck_assert_int_eq(p.n_margins, 2);
    ck_assert_int_eq(p.paddle_margin[0] + p.paddle_margin[1], 5);
    ck_assert_int_eq(p.paddle_length, 5);
    ck_assert_int_eq(pathfinder_params(&p, 48, "easy"), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "48"));
    ck_assert_int_eq(pathfinder_params(&p, 32, "medium"), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "medium"));
    ck_assert_str_eq(pathfinder_split_pattern("easy"), "curv_baseline");
    ck_assert_str_eq(pathfinder_split_pattern("intermediate"), "curv_contour_length_9");
    ck_assert_str_eq(pathfinder_split_pattern("hard"), "curv_contour_length_14");
    ck_assert_ptr_null(pathfinder_split_pattern("x"));
}
END_TEST

START_TEST(test_deterministic) {
    PathfinderParams p;
    ck_assert_int_eq(pathfinder_params(&p, 32, "intermediate"), 0);
    PathfinderImage a, b, c;
    ck_assert_int_eq(pathfinder_render(&p, 7, 3, &a), 0);
    ck_assert_int_eq(pathfinder_render(&p, 7, 3, &b), 0);
    ck_assert_int_eq(pathfinder_render(&p, 7, 4, &c), 0);
    ck_assert_int_eq(a.label, b.label);
    ck_assert_mem_eq(a.pix, b.pix, 32 * 32);
    ck_assert_mem_eq(a.contour, b.contour, 32 * 32);
    ck_assert_int_ne(memcmp(a.pix, c.pix, 32 * 32), 0);
    int lit = 0, max = 0;
    for (int i = 0; i < 32 * 32; i++) {
        lit += a.pix[i] > 0;
        max = GMA_MAX(max, a.pix[i]);
    }
    ck_assert_int_eq(max, 255);         /* byte-scaled to the full range */
    ck_assert_int_gt(lit, 60);          /* two contours of 9 paddles and distractors */
    ck_assert_int_lt(lit, 32 * 32 / 2);
    pathfinder_image_free(&a);
    pathfinder_image_free(&b);
    pathfinder_image_free(&c);
}
END_TEST

START_TEST(test_label_balance) {
    PathfinderParams p;
    ck_assert_int_eq(pathfinder_params(&p, 32, "easy"), 0);
    int pos = 0, n = 400;
    for (int i = 0; i < n; i++) {
        PathfinderImage im;
        ck_assert_int_eq(pathfinder_render(&p, 11, (uint64_t)i, &im), 0);
        ck_assert(im.label == 0 || im.label == 1);
        pos += im.label;
        pathfinder_image_free(&im);
    }
    /* binomial(400, 1/2): standard deviation 10 */
    ck_assert_int_gt(pos, 160);
    ck_assert_int_lt(pos, 240);
}
END_TEST

/* Flood fill (4-connected) over the target contours' skeletons from marker 0; 1 when it
 * reaches marker 1. */
static int markers_connected(const PathfinderImage *im) {
    int R = im->res, n = R * R;
    uint8_t *seen = calloc((size_t)n, 1);
    int *stack = malloc(sizeof(int) * (size_t)n), top = 0;
    int start = im->marker[0][0] * R + im->marker[0][1], goal = im->marker[1][0] * R + im->marker[1][1];
    ck_assert(im->contour[start] == PF_TARGET_A || im->contour[start] == PF_TARGET_B);
    ck_assert(im->contour[goal] == PF_TARGET_A || im->contour[goal] == PF_TARGET_B);
    stack[top++] = start;
    seen[start] = 1;
    int found = 0;
    static const int D[4][2] = {{1, 0}, {-1, 0}, {0, 1}, {0, -1}};
    while (top > 0 && !found) {
        int k = stack[--top], y = k / R, x = k % R;
        if (k == goal) found = 1;
        for (int j = 0; j < 4; j++) {
            int yy = y + D[j][0], xx = x + D[j][1];
            if (yy < 0 || yy >= R || xx < 0 || xx >= R) continue;
            int q = yy * R + xx;
            if (seen[q] || (im->contour[q] != PF_TARGET_A && im->contour[q] != PF_TARGET_B)) continue;
            seen[q] = 1;
            stack[top++] = q;
        }
    }
    free(seen);
    free(stack);
    return found;
}

/* Every positive image connects its markers. Negative ones do not, except where the two
 * target contours come within a pixel of each other, which the release's overlap test
 * allows with 32 x 32 paddles (docs/lra.md): at most max_touch of the negatives. */
static void check_connectivity(int res, const char *difficulty, int n, double max_touch) {
    PathfinderParams p;
    ck_assert_int_eq(pathfinder_params(&p, res, difficulty), 0);
    int counts[2] = {0, 0}, touch = 0;
    for (int i = 0; i < n; i++) {
        PathfinderImage im;
        ck_assert_int_eq(pathfinder_render(&p, 5, (uint64_t)i, &im), 0);
        int c = markers_connected(&im);
        if (im.label == 1)
            ck_assert_msg(c, "%d x %d %s image %d: positive but the markers are not connected", res, res, difficulty, i);
        else touch += c;
        /* the markers are drawn: their pixels are lit */
        for (int k = 0; k < 2; k++) ck_assert_int_gt(im.pix[im.marker[k][0] * res + im.marker[k][1]], 0);
        counts[im.label]++;
        pathfinder_image_free(&im);
    }
    if (n >= 20) {
        ck_assert_int_gt(counts[0], 0);
        ck_assert_int_gt(counts[1], 0);
    }
    ck_assert_msg(touch <= max_touch * counts[0], "%d x %d %s: %d of %d negatives connected", res, res, difficulty,
                  touch, counts[0]);
}

START_TEST(test_connectivity_32) {
    check_connectivity(32, "easy", 300, 0.2);
    check_connectivity(32, "intermediate", 150, 0.3);
    check_connectivity(32, "hard", 150, 0.6);
}
END_TEST

/* the larger resolutions: label balance and the bound on touching negatives at 64 x 64 over
 * 30 "intermediate" images (~0.2 s each); "hard" at 64 x 64, whose images take ~4 s each on
 * a loaded 2-core machine (its 14-paddle contours are placed by rejection), over its first
 * three (two positive, one negative: none may touch); 128 and 256 */
START_TEST(test_connectivity_large) {
    check_connectivity(64, "intermediate", 30, 0.25);
    check_connectivity(64, "hard", 3, 0);
    check_connectivity(128, "easy", 8, 0);
    check_connectivity(256, "intermediate", 2, 0);
}
END_TEST

/* ---------------------------------------------------------------- drawing (raster.h) */

/* ImageDraw.Draw(Image.new('F', (17, 17))).line([(8, 8), (x1, y1)], fill='white', width=1)
 * lights these pixels, (x, y), in PIL 9.4. */
START_TEST(test_raster_thin_line) {
    static const int ends[6][2] = {{12, 10}, {11, 12}, {12, 12}, {8, 12}, {5, 11}, {4, 7}};
    static const int want[6][5][2] = {
        {{8, 8}, {9, 9}, {10, 9}, {11, 10}, {12, 10}}, {{8, 8}, {9, 9}, {10, 10}, {10, 11}, {11, 12}},
        {{8, 8}, {9, 9}, {10, 10}, {11, 11}, {12, 12}}, {{8, 8}, {8, 9}, {8, 10}, {8, 11}, {8, 12}},
        {{8, 8}, {7, 9}, {6, 10}, {5, 11}, {-1, -1}},   {{4, 7}, {5, 7}, {6, 7}, {7, 8}, {8, 8}}};
    for (int c = 0; c < 6; c++) {
        float img[17 * 17] = {0};
        raster_line(img, 17, 17, 8, 8, ends[c][1], ends[c][0], 1, 255.0f);
        int lit = 0, n = 0;
        for (int k = 0; k < 17 * 17; k++) lit += img[k] == 255.0f;
        for (int k = 0; k < 5 && want[c][k][0] >= 0; k++, n++)
            ck_assert_msg(img[want[c][k][1] * 17 + want[c][k][0]] == 255.0f, "line %d: (%d, %d) not set", c,
                          want[c][k][0], want[c][k][1]);
        ck_assert_int_eq(lit, n);
    }
    /* wider lines: PIL's quadrilateral, filled by its scan-line rule; each row of these
     * three is one run of pixels (row, first column, last column), as PIL 9.4 draws them
     * from (8, 8) in a 17 x 17 image */
    static const int wide_end[3][3] = {{14, 12, 3}, {3, 13, 2}, {13, 8, 4}};   /* x1, y1, width */
    static const int wide_rows[3][8][3] = {
        {{7, 9, 9}, {8, 8, 10}, {9, 7, 12}, {10, 9, 13}, {11, 10, 15}, {12, 12, 14}, {13, 13, 13}, {-1, 0, 0}},
        {{7, 8, 8}, {8, 7, 9}, {9, 6, 8}, {10, 5, 7}, {11, 4, 6}, {12, 3, 5}, {13, 4, 4}, {-1, 0, 0}},
        {{7, 8, 13}, {8, 8, 13}, {9, 8, 13}, {10, 8, 13}, {-1, 0, 0}}};
    for (int c = 0; c < 3; c++) {
        float wide[17 * 17] = {0}, want_img[17 * 17] = {0};
        raster_line(wide, 17, 17, 8, 8, wide_end[c][1], wide_end[c][0], wide_end[c][2], 1.0f);
        for (int r = 0; r < 8 && wide_rows[c][r][0] >= 0; r++)
            for (int x = wide_rows[c][r][1]; x <= wide_rows[c][r][2]; x++) want_img[wide_rows[c][r][0] * 17 + x] = 1.0f;
        for (int k = 0; k < 17 * 17; k++)
            ck_assert_msg(wide[k] == want_img[k], "width %d line: pixel (%d, %d) is %g", wide_end[c][2], k % 17, k / 17,
                          wide[k]);
    }
    /* a horizontal width-2 line covers two rows */
    float img[9 * 9] = {0};
    raster_line(img, 9, 9, 4, 2, 4, 6, 2, 1.0f);
    int lit = 0;
    for (int k = 0; k < 81; k++) lit += img[k] == 1.0f;
    ck_assert_int_eq(lit, 10);
    for (int x = 2; x <= 6; x++) ck_assert(img[4 * 9 + x] == 1.0f && img[5 * 9 + x] == 1.0f);
}
END_TEST

/* A paddle box as snakes.py draws it at 32 x 32: a width-1 line from (8, 8) to (11, 12) in
 * a 17 x 17 image (37 degrees, 4 sub-pixels), resized to 9 x 9: PIL's values (mode 'F'),
 * then the drawing dilated by the disk of radius 2 and resized as an 8-bit image; and
 * draw_circle's marker, resized from 64 x 64 as an 8-bit image. */
START_TEST(test_raster_lanczos) {
    static const float line37[4][5] = {{0.9174f, -5.3755f, 95.4000f, 22.3301f, -16.3330f},
                                       {1.0435f, -3.9216f, 15.6698f, 132.9882f, 83.2033f},
                                       {-0.2266f, 1.4154f, -5.3250f, -5.1127f, 55.2097f},
                                       {0.0415f, -0.2665f, 0.9990f, 0.6402f, -11.1093f}};
    static const int mask37[9][9] = {
        {0, 0, 0, 0, 0, 0, 0, 0, 0},        {0, 0, 0, 1, 3, 1, 0, 0, 0},        {0, 0, 0, 0, 0, 0, 3, 0, 0},
        {0, 1, 0, 19, 143, 10, 0, 4, 0},    {0, 3, 0, 154, 255, 214, 96, 0, 2}, {0, 1, 2, 20, 189, 255, 255, 108, 1},
        {0, 0, 1, 0, 13, 178, 250, 145, 2}, {0, 0, 0, 1, 0, 0, 51, 0, 0},       {0, 0, 0, 0, 1, 1, 0, 1, 0}};
    LanczosTaps t;
    ck_assert_int_eq(lanczos_taps(&t, 17, 9), 0);
    for (int o = 0; o < 9; o++) {
        double sum = 0;
        for (int k = 0; k < t.count[o]; k++) sum += t.w[o * t.max_taps + k];
        ck_assert_double_eq_tol(sum, 1.0, 1e-12);
    }
    float big[17 * 17] = {0}, dil[17 * 17], tmp[17 * 9], out[81];
    raster_line(big, 17, 17, 8, 8, 11, 12, 1, 255.0f);
    lanczos_resize(&t, &t, big, tmp, out, 0);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 5; x++)
            ck_assert_msg(fabsf(out[(4 + y) * 9 + 2 + x] - line37[y][x]) < 1e-3f, "line (%d, %d): %g, PIL %g", 4 + y,
                          2 + x, out[(4 + y) * 9 + 2 + x], line37[y][x]);
    raster_dilate_disk(big, dil, 17, 17, 2);
    lanczos_resize(&t, &t, dil, tmp, out, 1);
    for (int k = 0; k < 81; k++) ck_assert_msg(out[k] == mask37[k / 9][k % 9], "mask %d: %g", k, out[k]);
    lanczos_taps_free(&t);
    /* same size: the identity */
    ck_assert_int_eq(lanczos_taps(&t, 5, 5), 0);
    float a[25], b[25], c[25];
    for (int k = 0; k < 25; k++) a[k] = (float)(k * 7 % 11);
    lanczos_resize(&t, &t, a, b, c, 0);
    for (int k = 0; k < 25; k++) ck_assert_float_eq_tol(c[k], a[k], 1e-5f);
    lanczos_taps_free(&t);
    static const int marker[5][5] = {
        {0, 28, 65, 3, 1}, {28, 228, 254, 133, 2}, {66, 255, 255, 190, 6}, {0, 132, 178, 55, 1}, {1, 0, 0, 0, 1}};
    float *disk = calloc(64 * 64, sizeof(float)), *mt = malloc(sizeof(float) * 64 * 32), *mo = malloc(sizeof(float) * 1024);
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 64; j++)
            if ((i - 20) * (i - 20) + (j - 26) * (j - 26) <= 9) disk[i * 64 + j] = 255.0f;
    ck_assert_int_eq(lanczos_taps(&t, 64, 32), 0);
    lanczos_resize(&t, &t, disk, mt, mo, 1);
    double total = 0;
    for (int k = 0; k < 1024; k++) total += mo[k];
    ck_assert_double_eq(total, 1906.0);
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 5; x++) ck_assert_float_eq(mo[(8 + y) * 32 + 11 + x], (float)marker[y][x]);
    lanczos_taps_free(&t);
    free(disk);
    free(mt);
    free(mo);
}
END_TEST

/* ---------------------------------------------------------------- PNG */

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

/* Recompute the CRC of the chunk starting at offset off. */
static void fix_crc(uint8_t *b, size_t off) {
    uint32_t len = (uint32_t)b[off] << 24 | (uint32_t)b[off + 1] << 16 | (uint32_t)b[off + 2] << 8 | b[off + 3];
    put32(b + off + 8 + len, (uint32_t)crc32(0L, b + off + 4, 4 + len));
}

static int decode_fails(const uint8_t *b, size_t n, const char *what) {
    uint8_t *pix = (uint8_t *)1;
    int w, h;
    int rc = png_decode_gray8(b, n, "t.png", &pix, &w, &h);
    ck_assert_ptr_null(pix);
    if (rc == 0) return 0;
    ck_assert_msg(strncmp(gma_error(), "t.png: offset ", 14) == 0, "%s: %s", what, gma_error());
    ck_assert_msg(!strchr(gma_error(), '\n'), "%s", gma_error());
    return 1;
}

START_TEST(test_png_round_trip) {
    int w = 37, h = 23;
    uint8_t *pix = malloc((size_t)w * h);
    for (int i = 0; i < w * h; i++) pix[i] = (uint8_t)(i * 31 + (i / w) * 7);
    uint8_t *buf, *out;
    size_t len;
    ck_assert_int_eq(png_encode_gray8(pix, w, h, &buf, &len), 0);
    int ow, oh;
    ck_assert_int_eq(png_decode_gray8(buf, len, "rt.png", &out, &ow, &oh), 0);
    ck_assert_int_eq(ow, w);
    ck_assert_int_eq(oh, h);
    ck_assert_mem_eq(out, pix, (size_t)w * h);
    free(out);
    /* written and read back through a file */
    const char *path = tu_path("rt.png");
    ck_assert_int_eq(png_write_gray8(path, pix, w, h), 0);
    ck_assert_int_eq(png_read_gray8(path, &out, &ow, &oh), 0);
    ck_assert_mem_eq(out, pix, (size_t)w * h);
    free(out);
    ck_assert_int_eq(png_encode_gray8(pix, 0, h, &out, &len), -1);
    free(buf);
    free(pix);
}
END_TEST

static int paeth(int a, int b, int c) {
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    if (pa <= pb && pa <= pc) return a;
    return pb <= pc ? b : c;
}

/* A PNG whose row y uses filter type y % 5, the stream split over three IDAT chunks with a
 * tEXt chunk before them: what other encoders (PIL) write. */
START_TEST(test_png_filters) {
    enum { W = 9, H = 11 };
    uint8_t pix[W * H], raw[H * (W + 1)];
    for (int i = 0; i < W * H; i++) pix[i] = (uint8_t)((i * 97) ^ (i >> 3));
    for (int y = 0; y < H; y++) {
        int ft = y % 5;
        raw[y * (W + 1)] = (uint8_t)ft;
        for (int x = 0; x < W; x++) {
            int a = x ? pix[y * W + x - 1] : 0, b = y ? pix[(y - 1) * W + x] : 0, c = (x && y) ? pix[(y - 1) * W + x - 1] : 0;
            int pred = ft == 1 ? a : ft == 2 ? b : ft == 3 ? (a + b) / 2 : ft == 4 ? paeth(a, b, c) : 0;
            raw[y * (W + 1) + 1 + x] = (uint8_t)(pix[y * W + x] - pred);
        }
    }
    uLongf zl = compressBound(sizeof raw);
    uint8_t z[1024];
    ck_assert_int_eq(compress2(z, &zl, raw, sizeof raw, 6), Z_OK);
    uint8_t f[2048];
    size_t n = 0;
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    memcpy(f, sig, 8);
    n = 8;
#define CHUNK(type, data, len)                     \
    do {                                           \
        size_t at = n;                             \
        put32(f + n, (uint32_t)(len));             \
        memcpy(f + n + 4, type, 4);                \
        if (len) memcpy(f + n + 8, data, len);     \
        n += 12 + (len);                           \
        fix_crc(f, at);                            \
    } while (0)
    uint8_t ihdr[13] = {0, 0, 0, W, 0, 0, 0, H, 8, 0, 0, 0, 0};
    CHUNK("IHDR", ihdr, 13);
    CHUNK("tEXt", "k\0v", 3);
    size_t third = zl / 3;
    CHUNK("IDAT", z, third);
    CHUNK("IDAT", z + third, third);
    CHUNK("IDAT", z + 2 * third, zl - 2 * third);
    CHUNK("IEND", "", 0);
    uint8_t *out;
    int w, h;
    ck_assert_msg(png_decode_gray8(f, n, "f.png", &out, &w, &h) == 0, "%s", gma_error());
    ck_assert_mem_eq(out, pix, sizeof pix);
    free(out);
    /* a filter type of 5 is refused */
    raw[3 * (W + 1)] = 5;
    zl = compressBound(sizeof raw);
    ck_assert_int_eq(compress2(z, &zl, raw, sizeof raw, 6), Z_OK);
    n = 8;
    CHUNK("IHDR", ihdr, 13);
    CHUNK("IDAT", z, zl);
    CHUNK("IEND", "", 0);
    ck_assert(decode_fails(f, n, "filter 5"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "filter type 5"));
    /* a critical chunk it does not know is refused */
    n = 8;
    CHUNK("IHDR", ihdr, 13);
    CHUNK("PLTE", "abc", 3);
    ck_assert(decode_fails(f, n, "PLTE"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "PLTE"));
    /* a header stating 16384 x 16384 (256 MiB of rows) in a file of a few hundred bytes is
     * refused before anything is allocated for it */
    uint8_t big[13] = {0, 0, 0x40, 0, 0, 0, 0x40, 0, 8, 0, 0, 0, 0};
    n = 8;
    CHUNK("IHDR", big, 13);
    CHUNK("IDAT", z, zl);
    CHUNK("IEND", "", 0);
    ck_assert(decode_fails(f, n, "16384 x 16384"));
    ck_assert_msg(strstr(gma_error(), "16384 x 16384") && strstr(gma_error(), "cannot come from a file"), "%s", gma_error());
#undef CHUNK
}
END_TEST

START_TEST(test_png_corrupt) {
    int w = 16, h = 12;
    uint8_t pix[16 * 12];
    for (int i = 0; i < w * h; i++) pix[i] = (uint8_t)(i * 13);
    uint8_t *good;
    size_t len;
    ck_assert_int_eq(png_encode_gray8(pix, w, h, &good, &len), 0);
    uint8_t *b = malloc(len + 16);
    /* every truncation fails */
    for (size_t k = 0; k < len; k++) ck_assert_msg(decode_fails(good, k, "truncated"), "prefix %zu decoded", k);
    /* trailing bytes */
    memcpy(b, good, len);
    b[len] = 0;
    ck_assert(decode_fails(b, len + 1, "trailing"));
    /* bad signature */
    memcpy(b, good, len);
    b[1] = 'Q';
    ck_assert(decode_fails(b, len, "signature"));
    /* a flipped bit anywhere after the signature fails (CRC, or a length check) */
    for (size_t k = 8; k < len; k++) {
        memcpy(b, good, len);
        b[k] ^= 0x10;
        ck_assert_msg(decode_fails(b, len, "bit flip"), "flip at %zu decoded", k);
    }
    memcpy(b, good, len);
    b[8 + 25 + 8 + 3] ^= 0xff;   /* inside the IDAT data */
    ck_assert(decode_fails(b, len, "crc"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "CRC mismatch"));
    /* wrong sizes with valid CRCs: zero width, too tall, too short, too wide */
    uint32_t bad_w[] = {0, 16, 16, 17, 100000};
    uint32_t bad_h[] = {12, 13, 11, 12, 12};
    for (int i = 0; i < 5; i++) {
        memcpy(b, good, len);
        put32(b + 16, bad_w[i]);
        put32(b + 20, bad_h[i]);
        fix_crc(b, 8);
        ck_assert_msg(decode_fails(b, len, "size"), "%u x %u decoded", bad_w[i], bad_h[i]);
    }
    /* bit depth 16, colour type 2 */
    memcpy(b, good, len);
    b[24] = 16;
    fix_crc(b, 8);
    ck_assert(decode_fails(b, len, "depth"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "8-bit grayscale"));
    memcpy(b, good, len);
    b[25] = 2;
    fix_crc(b, 8);
    ck_assert(decode_fails(b, len, "colour"));
    /* interlaced */
    memcpy(b, good, len);
    b[28] = 1;
    fix_crc(b, 8);
    ck_assert(decode_fails(b, len, "interlace"));
    /* chunk length past the end */
    memcpy(b, good, len);
    put32(b + 33, 0x7ffffff0u);
    ck_assert(decode_fails(b, len, "length"));
    ck_assert_ptr_nonnull(strstr(gma_error(), "runs past the end"));
    free(b);
    free(good);
}
END_TEST

/* ---------------------------------------------------------------- layout and loader */

static char *slurp(const char *path) {
    size_t n;
    char *s = gma_read_file(path, &n);
    ck_assert_msg(s != NULL, "%s", gma_error());
    return s;
}

START_TEST(test_layout) {
    const char *dir = tu_path("pf_layout");
    PathfinderParams p;
    ck_assert_int_eq(pathfinder_params(&p, 32, "hard"), 0);
    long pos = -1;
    ck_assert_int_eq(pathfinder_generate(dir, &p, "hard", 7, 3, 3, &pos), 0);
    ck_assert(pos >= 0 && pos <= 7);
    char path[1200];
    long seen_pos = 0;
    for (int b = 0; b < 3; b++) {
        snprintf(path, sizeof path, "%s/curv_contour_length_14/metadata/%d.npy", dir, b);
        char *text = slurp(path);
        int lines = 0;
        for (char *s = text; *s; s++) lines += *s == '\n';
        ck_assert_int_eq(lines, b < 2 ? 3 : 1);
        /* the first line of each batch, as the release writes it */
        PathfinderImage im;
        ck_assert_int_eq(pathfinder_render(&p, 3, (uint64_t)(3 * b), &im), 0);
        char want[256];
        snprintf(want, sizeof want, "imgs/%d sample_0.png 0 %d 1.0 14 4 2 0.5 1 1\n", b, im.label);
        ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "got '%s' want '%s'", text, want);
        for (char *s = text; *s; s = strchr(s, '\n') + 1) {
            char f[4][64];
            ck_assert_int_eq(sscanf(s, "%63s %63s %63s %63s", f[0], f[1], f[2], f[3]), 4);
            seen_pos += atoi(f[3]);
        }
        snprintf(path, sizeof path, "%s/curv_contour_length_14/imgs/%d/sample_0.png", dir, b);
        uint8_t *pix;
        int w, h;
        ck_assert_int_eq(png_read_gray8(path, &pix, &w, &h), 0);
        ck_assert_int_eq(w, 32);
        ck_assert_int_eq(h, 32);
        ck_assert_mem_eq(pix, im.pix, 32 * 32);
        free(pix);
        pathfinder_image_free(&im);
        free(text);
    }
    ck_assert_int_eq(seen_pos, pos);
}
END_TEST

/* The loader on a generated fixture: 50 images in 13 batches of 4 (so batch 10 must come
 * after batch 9), split 40 / 5 / 5 in generation order. */
START_TEST(test_loader) {
    const char *dir = tu_path("pf_load");
    PathfinderParams p;
    ck_assert_int_eq(pathfinder_params(&p, 32, "easy"), 0);
    ck_assert_int_eq(pathfinder_generate(dir, &p, "easy", 50, 9, 4, NULL), 0);
    char root[1200];
    snprintf(root, sizeof root, "%s/curv_baseline", dir);
    static const char *const SPLIT[3] = {"train", "valid", "test"};
    static const int N[3] = {40, 5, 5}, FIRST[3] = {0, 40, 45};
    for (int s = 0; s < 3; s++) {
        ClsDataset d;
        ck_assert_msg(clsdata_load(&d, "pathfinder", s == 1 ? dir : root, SPLIT[s], NULL) == 0, "%s", gma_error());
        ck_assert_int_eq(d.n, N[s]);
        ck_assert_int_eq(d.n_classes, 2);
        ck_assert_uint_eq(d.vocab, 257);
        for (int i = 0; i < d.n; i += 2) {
            PathfinderImage im;
            ck_assert_int_eq(pathfinder_render(&p, 9, (uint64_t)(FIRST[s] + i), &im), 0);
            size_t len;
            const uint32_t *t = clsdata_seq(&d, i, 0, &len);
            ck_assert_uint_eq(len, 1024);
            for (int k = 0; k < 1024; k++) ck_assert_uint_eq(t[k], im.pix[k] + 1u);
            ck_assert_int_eq(d.label[i], im.label);
            pathfinder_image_free(&im);
        }
        clsdata_free(&d);
    }
    ck_assert_int_eq(clsdata_task_vocab("pathfinder"), 257);
    ck_assert_int_eq(clsdata_task_max_len("pathfinder"), 1024);
    /* an empty image file is skipped, as the release filters it out */
    char path[1400];
    snprintf(path, sizeof path, "%s/imgs/0/sample_1.png", root);
    tu_write(path, "");
    ClsDataset d;
    ck_assert_int_eq(clsdata_load(&d, "pathfinder", root, "test", NULL), 0);
    ck_assert_int_eq(d.n, 5);   /* 49 examples: 39 / 5 / 5 */
    clsdata_free(&d);
    ck_assert_int_eq(clsdata_load(&d, "pathfinder", root, "train", NULL), 0);
    ck_assert_int_eq(d.n, 39);
    clsdata_free(&d);
    /* an image of another size */
    uint8_t small[16 * 16] = {0};
    snprintf(path, sizeof path, "%s/imgs/2/sample_3.png", root);
    ck_assert_int_eq(png_write_gray8(path, small, 16, 16), 0);
    ck_assert_int_eq(clsdata_load(&d, "pathfinder", root, "train", NULL), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "sample_3.png: image is 16 x 16"));
    /* a corrupt image names the file and offset */
    snprintf(path, sizeof path, "%s/imgs/2/sample_3.png", root);
    tu_write(path, "\x89PNG\r\n\x1a\nxx");
    ck_assert_int_eq(clsdata_load(&d, "pathfinder", root, "train", NULL), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "sample_3.png: offset 8"));
    /* a bad metadata line names the file and line */
    snprintf(path, sizeof path, "%s/metadata/5.npy", root);
    tu_write(path, "imgs/5 sample_0.png 0 1 1.0 6 2 2 0.5 1 1\nimgs/5 sample_1.png 1 2 1.0 6 2 2 0.5 1 1\n");
    ck_assert_int_eq(clsdata_load(&d, "pathfinder", root, "valid", NULL), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "5.npy:2: label '2'"));
    tu_write(path, "imgs/5 sample_0.png\n");
    ck_assert_int_eq(clsdata_load(&d, "pathfinder", root, "valid", NULL), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "5.npy:1: 2 fields"));
    tu_write(path, "../x sample_0.png 0 1\n");
    ck_assert_int_eq(clsdata_load(&d, "pathfinder", root, "valid", NULL), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "leaves the data directory"));
    tu_write(path, "imgs/5 sample_99.png 0 1\n");
    ck_assert_int_eq(clsdata_load(&d, "pathfinder", root, "valid", NULL), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "sample_99.png: cannot open"));
    /* no layout at all */
    ck_assert_int_eq(clsdata_load(&d, "pathfinder", tu_path("nothing_here"), "train", NULL), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "expected the Pathfinder layout"));
}
END_TEST

START_TEST(test_cli) {
    const char *dir = tu_path("pf_cli");
    char *ok[] = {"generate", "pathfinder", "--out", (char *)dir, "--res", "32", "--difficulty", "intermediate",
                  "--n", "5", "--seed", "4", "--per-batch", "2"};
    ck_assert_int_eq(lra_generate_main(14, ok), 0);
    char path[1200];
    snprintf(path, sizeof path, "%s/curv_contour_length_9/imgs/2/sample_0.png", dir);
    ck_assert(gma_path_exists(path));
    snprintf(path, sizeof path, "%s/curv_contour_length_9/metadata/2.npy", dir);
    ck_assert(gma_path_exists(path));
    char *bad_res[] = {"generate", "pathfinder", "--out", (char *)dir, "--res", "48", "--difficulty", "easy", "--n", "5"};
    ck_assert_int_eq(lra_generate_main(10, bad_res), 2);
    char *bad_diff[] = {"generate", "pathfinder", "--out", (char *)dir, "--res", "32", "--difficulty", "x", "--n", "5"};
    ck_assert_int_eq(lra_generate_main(10, bad_diff), 2);
    char *no_n[] = {"generate", "pathfinder", "--out", (char *)dir, "--res", "32", "--difficulty", "easy"};
    ck_assert_int_eq(lra_generate_main(8, no_n), 2);
    char *bad_opt[] = {"generate", "pathfinder", "--colour", "red"};
    ck_assert_int_eq(lra_generate_main(4, bad_opt), 2);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("pathfinder");
    TCase *g = tcase_create("generator");
    tcase_set_timeout(g, 300);
    tcase_add_test(g, test_params);
    tcase_add_test(g, test_deterministic);
    tcase_add_test(g, test_label_balance);
    tcase_add_test(g, test_connectivity_32);
    tcase_add_test(g, test_connectivity_large);
    tcase_add_test(g, test_raster_thin_line);
    tcase_add_test(g, test_raster_lanczos);
    suite_add_tcase(s, g);
    TCase *png = tcase_create("png");
    tcase_add_test(png, test_png_round_trip);
    tcase_add_test(png, test_png_filters);
    tcase_add_test(png, test_png_corrupt);
    suite_add_tcase(s, png);
    TCase *io = tcase_create("files");
    tcase_set_timeout(io, 120);
    tcase_add_test(io, test_layout);
    tcase_add_test(io, test_loader);
    tcase_add_test(io, test_cli);
    suite_add_tcase(s, io);
    return s;
}

GMA_TEST_MAIN()
