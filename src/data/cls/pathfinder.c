/* pathfinder.c: the Pathfinder generator (pathfinder.h), a C reimplementation of the
 * "snakes2" procedure of the Pathfinder release that LRA's images were made with; every
 * step below names the function of that release it follows, and docs/lra.md (Pathfinder)
 * gives the parameters with their sources and the places where this code differs.
 *
 * Geometry (rows y, columns x, angles in radians, atan2(dy, dx)): a paddle is a segment of
 * paddle_length pixels from its start point along an orientation, paddle_thickness wide;
 * its occupancy mask is the same segment dilated by the image's paddle margin. Both are
 * drawn as the release draws them, at antialias_scale times the size and resized with a
 * Lanczos filter (raster.h: PIL's line, OpenCV's dilation, PIL's resize). Coordinates move
 * with translate(): ceil(y + d sin t), ceil(x + d cos t).
 */
#include "data/cls/pathfinder.h"
#include "data/cls/png.h"
#include "data/cls/raster.h"
#include "core/common.h"
#include "core/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846
#define PADDLE_MAX 33            /* paddle box side: 2 (length + ceil(thickness) + margin) + 1 */
#define MAX_PADDLES 64           /* paddles in one contour */
#define TWO_SNAKE_ATTEMPTS 200000 /* the release retries without bound; 64 x 64 hard takes about 1,000 */

/* ---------------------------------------------------------------- parameters */

typedef struct Difficulty {
    const char *name, *pattern;
    int contour_length;
} Difficulty;

static const Difficulty DIFFICULTIES[3] = {
    {"easy", "curv_baseline", 6},
    {"intermediate", "curv_contour_length_9", 9},
    {"hard", "curv_contour_length_14", 14},
};

static const Difficulty *difficulty_find(const char *name) {
    for (int i = 0; name && i < 3; i++)
        if (strcmp(DIFFICULTIES[i].name, name) == 0) return &DIFFICULTIES[i];
    return NULL;
}

const char *pathfinder_split_pattern(const char *difficulty) {
    const Difficulty *d = difficulty_find(difficulty);
    return d ? d->pattern : NULL;
}

int pathfinder_params(PathfinderParams *p, int res, const char *difficulty) {
    const Difficulty *d = difficulty_find(difficulty);
    if (!d)
        return gma_errorf("pathfinder: unknown difficulty '%s' (easy, intermediate, hard)",
                          difficulty ? difficulty : "(null)");
    /* The generator's defaults (snakes2_wrapper.py Args), then its settings block. */
    PathfinderParams q = {0};
    q.padding = 22;
    q.seed_distance = 27;
    q.paddle_length = 5;
    q.paddle_contrast = 1.0;
    q.max_target_contour_retrial = 4;
    q.max_distractor_contour_retrial = 4;
    q.max_paddle_retrial = 2;
    q.antialias_scale = 2;
    q.continuity = 1.8;
    int distractor_paddles;   /* the K of num_distractor_snakes = K / distractor_length */
    /* LRA's pathfinder.py docstrings: the settings of each resolution. */
    switch (res) {
    case 32:
        q.padding = 1; q.paddle_length = 2; q.marker_radius = 1.5; q.paddle_thickness = 0.5;
        q.seed_distance = 7; q.continuity = 1.0; q.snake_contrast = 2.0; q.paddle_contrast = 0.75;
        q.paddle_margin[0] = 1; q.n_margins = 1; distractor_paddles = 20;
        break;
    case 64:
        q.padding = 1; q.seed_distance = 12; q.marker_radius = 2.5; q.paddle_thickness = 1.0;
        q.snake_contrast = 0.8; q.paddle_margin[0] = 1; q.n_margins = 1; distractor_paddles = 22;
        break;
    case 128:
        q.padding = 1; q.seed_distance = 20; q.marker_radius = 3.0; q.paddle_thickness = 1.5;
        q.snake_contrast = 0.9; q.paddle_margin[0] = 2; q.paddle_margin[1] = 3; q.n_margins = 2;
        distractor_paddles = 35;
        break;
    case 256:
        q.marker_radius = 5.0; q.paddle_thickness = 2.0; q.snake_contrast = 1.0;
        q.paddle_margin[0] = 3; q.n_margins = 1; distractor_paddles = 30;
        break;
    default:
        return gma_errorf("pathfinder: resolution %d is not one of the release's (32, 64, 128, 256)", res);
    }
    q.res = res;
    q.contour_length = d->contour_length;
    q.distractor_length = d->contour_length / 3;
    /* Computed once in the wrapper from the baseline contour length 6 (distractor length 2),
     * before the loop over the longer contours: the same count for every difficulty. */
    q.num_distractor_snakes = distractor_paddles / 2;
    *p = q;
    return 0;
}

/* ---------------------------------------------------------------- geometry */

static int ceil_i(double v) { return (int)ceil(v); }

static void translate(int y, int x, double t, double dist, int *oy, int *ox) {
    *oy = ceil_i(y + dist * sin(t));
    *ox = ceil_i(x + dist * cos(t));
}

/* Reverse an orientation by pi, keeping it in [-pi, pi) (snakes.py flip_by_pi). */
static double flip(double t) { return t < 0 ? t + PI : t - PI; }

typedef struct Paddle {
    int y0, x0, h, w;                   /* box in the image */
    float line[PADDLE_MAX * PADDLE_MAX];
    float mask[PADDLE_MAX * PADDLE_MAX];
    double ay, ax, by, bx;              /* the segment: start and end */
} Paddle;

/* What drawing a paddle needs besides its place: the image's margin, the taps of the
 * release's resize of the paddle box from antialias_scale times its size, scratch. */
typedef struct Brush {
    const PathfinderParams *p;
    int margin, C, s, S;        /* C = L + ceil(thickness) + margin; box s = 2C + 1; drawn at S = 2C aa + 1 */
    LanczosTaps taps;           /* S -> s */
    float *blown, *dilated, *tmp, *line, *mask;
} Brush;

static void brush_init(Brush *b, const PathfinderParams *p, int margin) {
    b->p = p;
    b->margin = margin;
    b->C = p->paddle_length + (int)ceil(p->paddle_thickness) + margin;
    b->s = 2 * b->C + 1;
    b->S = 2 * b->C * p->antialias_scale + 1;
    lanczos_taps(&b->taps, b->S, b->s);
    size_t S2 = (size_t)b->S * b->S, s2 = (size_t)b->s * b->s;
    b->blown = xmalloc(sizeof(float) * (2 * S2 + (size_t)b->S * b->s + 2 * s2));
    b->dilated = b->blown + S2;
    b->tmp = b->dilated + S2;
    b->line = b->tmp + (size_t)b->S * b->s;
    b->mask = b->line + s2;
}

static void brush_free(Brush *b) {
    lanczos_taps_free(&b->taps);
    free(b->blown);
}

/* Render the paddle from (sy, sx) along t into pd, clipped to an H x W canvas, as
 * snakes.py draw_line_n_mask does: a line round(thickness aa) wide from the centre of a
 * box of S x S pixels to translate(centre, t, L aa), filled with 255; the paddle is that
 * box resized to s x s (Lanczos, float), / 255; its mask the drawing dilated by the disk
 * of radius margin aa, resized as an 8-bit image, / 255. The s x s box is centred on
 * (sy, sx). */
static void paddle_make(Brush *b, int H, int W, int sy, int sx, double t, Paddle *pd) {
    const PathfinderParams *p = b->p;
    int L = p->paddle_length, aa = p->antialias_scale, C = b->C, S = b->S, s = b->s, c = C * aa;
    int y0 = GMA_MAX(sy - C, 0), y1 = GMA_MIN(sy + C, H - 1), x0 = GMA_MAX(sx - C, 0), x1 = GMA_MIN(sx + C, W - 1);
    pd->y0 = y0;
    pd->x0 = x0;
    pd->h = y1 >= y0 ? y1 - y0 + 1 : 0;
    pd->w = x1 >= x0 ? x1 - x0 + 1 : 0;
    pd->ay = sy;
    pd->ax = sx;
    pd->by = sy + L * sin(t);
    pd->bx = sx + L * cos(t);
    int hy, hx;
    translate(c, c, t, L * aa, &hy, &hx);
    memset(b->blown, 0, sizeof(float) * (size_t)S * S);
    raster_line(b->blown, S, S, c, c, hy, hx, (int)lround(p->paddle_thickness * aa), 255.0f);
    lanczos_resize(&b->taps, &b->taps, b->blown, b->tmp, b->line, 0);
    raster_dilate_disk(b->blown, b->dilated, S, S, b->margin * aa);
    lanczos_resize(&b->taps, &b->taps, b->dilated, b->tmp, b->mask, 1);
    for (int y = 0; y < pd->h; y++)
        for (int x = 0; x < pd->w; x++) {
            int k = (y0 + y - (sy - C)) * s + (x0 + x - (sx - C));
            pd->line[y * pd->w + x] = b->line[k] / 255.0f;
            pd->mask[y * pd->w + x] = b->mask[k] / 255.0f;
        }
}

/* ---------------------------------------------------------------- one image */

typedef struct Snake {
    int n;                              /* paddles placed */
    double seg[MAX_PADDLES][4];         /* each paddle's near end (y, x) and far end */
    Paddle last;                        /* the newest paddle: not yet in the occupancy mask */
    int pivot_y, pivot_x;
    double orient;
    int tail_y, tail_x, head_y, head_x; /* origin tip, terminal tip */
} Snake;

typedef struct Gen {
    const PathfinderParams *p;
    Rng rng;
    int R, margin;
    float *image, *mask, *eff, *dil, *lined;
    float *save_image, *save_mask;
    int *avail;
    int (*disk)[2];
    int n_disk;
    Brush brush;                /* paddles of this image's margin */
    LanczosTaps marker_taps;    /* R aa -> R, the markers' resize */
    float *marker_buf;          /* (R aa)^2 + R aa R + R^2 */
} Gen;

static double uniform_deg(Gen *g, int lo, int hi) {
    return (double)((long)rng_below(&g->rng, (uint64_t)(hi - lo)) + lo) * PI / 180.0;
}

static void paint(Gen *g, const Paddle *pd, double contrast) {
    for (int y = 0; y < pd->h; y++)
        for (int x = 0; x < pd->w; x++) {
            float *o = &g->image[(size_t)(pd->y0 + y) * g->R + pd->x0 + x];
            float v = (float)(pd->line[y * pd->w + x] * contrast);
            if (v > *o) *o = v;
        }
}

static void commit(float *mask, int R, const Paddle *pd) {
    for (int y = 0; y < pd->h; y++)
        for (int x = 0; x < pd->w; x++) {
            float *o = &mask[(size_t)(pd->y0 + y) * R + pd->x0 + x];
            if (pd->mask[y * pd->w + x] > *o) *o = pd->mask[y * pd->w + x];
        }
}

/* max(mask + paddle mask) < 1.8 over the paddle's box (snakes.py extend_snake). */
static int fits(const float *mask, int R, const Paddle *pd) {
    for (int y = 0; y < pd->h; y++)
        for (int x = 0; x < pd->w; x++)
            if (mask[(size_t)(pd->y0 + y) * R + pd->x0 + x] + pd->mask[y * pd->w + x] >= 1.8f) return 0;
    return 1;
}

/* dst = src dilated by the disk of radius margin (snakes.py generate_dilation_struct). */
static void dilate(Gen *g, const float *src, float *dst) {
    int R = g->R;
    for (int y = 0; y < R; y++)
        for (int x = 0; x < R; x++) {
            float m = 0;
            for (int k = 0; k < g->n_disk; k++) {
                int yy = y + g->disk[k][0], xx = x + g->disk[k][1];
                if (yy >= 0 && yy < R && xx >= 0 && xx < R && src[yy * R + xx] > m) m = src[yy * R + xx];
            }
            dst[y * R + x] = m;
        }
}

/* The tails where a paddle along t fits: the occupancy `lined` dilated by the paddle's own
 * mask (drawn head-centric in a (2(L+m)+1)^2 structuring element whose anchor is its centre
 * and whose paddle starts one pixel down and right of it, as in the release) is <= 0.3.
 * Returns their count; their indices are in g->avail (row-major order). */
static int available_tails(Gen *g, double t) {
    const PathfinderParams *p = g->p;
    int L = p->paddle_length, m = g->margin, S = 2 * (L + m) + 1, c = L + m;
    Paddle st;
    paddle_make(&g->brush, S, S, c + 1, c + 1, t, &st);
    int off[PADDLE_MAX * PADDLE_MAX][2], n_off = 0;
    for (int y = 0; y < st.h; y++)
        for (int x = 0; x < st.w; x++)
            if (st.mask[y * st.w + x] >= 1.0f) {   /* the release casts the mask to uint8 */
                off[n_off][0] = st.y0 + y - c;
                off[n_off][1] = st.x0 + x - c;
                n_off++;
            }
    int R = g->R, n = 0;
    for (int y = 0; y < R; y++)
        for (int x = 0; x < R; x++) {
            int ok = 1;
            for (int k = 0; k < n_off && ok; k++) {
                int yy = y + off[k][0], xx = x + off[k][1];
                if (yy >= 0 && yy < R && xx >= 0 && xx < R && g->lined[yy * R + xx] > 0.3f) ok = 0;
            }
            if (ok) g->avail[n++] = y * R + x;
        }
    return n;
}

static int in_image(const Gen *g, int y, int x) { return y >= 0 && y < g->R && x >= 0 && x < g->R; }

static void snake_start(Snake *s, int ty, int tx, const Paddle *pd, int py, int px, double t) {
    s->n = 1;
    s->seg[0][0] = pd->ay; s->seg[0][1] = pd->ax; s->seg[0][2] = pd->by; s->seg[0][3] = pd->bx;
    s->last = *pd;
    s->pivot_y = py; s->pivot_x = px; s->orient = t;
    s->tail_y = ty; s->tail_x = tx; s->head_y = ty; s->head_x = tx;
}

/* Extend a contour by one paddle (snakes.py extend_snake and get_coords_cmf): candidate
 * heads on the circle of radius L + m around the next pivot, weighted by the free space of
 * the dilated occupancy and by cos^2 of the (continuity-scaled) turn; up to
 * max_paddle_retrial + 1 draws, kept when it does not overlap the occupancy `occ`. On
 * success paints the paddle, commits the contour's previous paddle to g->mask. */
static int extend(Gen *g, Snake *s, const float *occ, double contrast) {
    const PathfinderParams *p = g->p;
    int L = p->paddle_length, m = g->margin, R = g->R;
    if (s->n >= MAX_PADDLES) return 0;
    int py, px;
    translate(s->pivot_y, s->pivot_x, s->orient, L + 2 * m, &py, &px);
    dilate(g, occ, g->dil);
    double step = L + m, dpp = 360.0 / (2 * step * PI);
    int cy[4096], cx[4096], nc = 0;
    for (int k = 0;; k++) {
        double a = k * dpp;
        if (a >= 360.0 || nc >= 4096) break;
        double yy = py + step * sin(a * PI / 180), xx = px + step * cos(a * PI / 180);
        if (yy >= R || yy < 0 || xx >= R || xx < 0) continue;
        int iy = (int)yy, ix = (int)xx, dup = 0;
        for (int j = 0; j < nc && !dup; j++) dup = cy[j] == iy && cx[j] == ix;
        if (dup) continue;
        /* insert keeping (y, x) order, as np.unique */
        int at = nc;
        while (at > 0 && (cy[at - 1] > iy || (cy[at - 1] == iy && cx[at - 1] > ix))) {
            cy[at] = cy[at - 1];
            cx[at] = cx[at - 1];
            at--;
        }
        cy[at] = iy;
        cx[at] = ix;
        nc++;
    }
    if (nc == 0) return 0;
    double cmf[4096], orient[4096], total = 0;
    for (int j = 0; j < nc; j++) {
        orient[j] = atan2((double)(cy[j] - py), (double)(cx[j] - px));
        double d = fabs(orient[j] - s->orient);
        d = GMA_MIN(d, 2 * PI - d);
        d = GMA_MIN(d * p->continuity, 0.5 * PI);
        double c = GMA_MAX(cos(d), 0.0);
        total += (1.0 - g->dil[cy[j] * R + cx[j]]) * c * c;
        cmf[j] = total;
    }
    if (total < 1e-4) return 0;
    for (int j = 0; j < nc; j++) cmf[j] /= total;
    Paddle pd;
    for (int trial = 0; trial <= p->max_paddle_retrial; trial++) {
        double u = rng_uniform(&g->rng);
        int j = 0;                       /* np.argmax(cmf - u > 0): 0 when none is */
        for (int k = 0; k < nc; k++)
            if (cmf[k] > u) { j = k; break; }
        paddle_make(&g->brush, R, R, cy[j], cx[j], flip(orient[j]), &pd);
        if (!fits(occ, R, &pd)) continue;
        paint(g, &pd, contrast);
        commit(g->mask, R, &s->last);
        s->last = pd;
        s->seg[s->n][0] = pd.by; s->seg[s->n][1] = pd.bx; s->seg[s->n][2] = pd.ay; s->seg[s->n][3] = pd.ax;
        s->n++;
        s->pivot_y = py; s->pivot_x = px; s->orient = orient[j];
        s->head_y = cy[j]; s->head_x = cx[j];
        return 1;
    }
    return 0;
}

/* The two target contours (snakes2.py two_snakes, initialize_two_seeds). */
static int two_snakes(Gen *g, Snake sn[2]) {
    const PathfinderParams *p = g->p;
    int R = g->R, L = p->paddle_length, m = g->margin, pad = p->padding, sd = p->seed_distance;
    for (int i = 0; i < R * R; i++) g->mask[i] = g->image[i] = 0;
    for (int y = 0; y < R; y++)
        for (int x = 0; x < R; x++)
            if (y < pad || y >= R - pad || x < pad || x >= R - pad) g->mask[y * R + x] = 1;
    double contrast = p->paddle_contrast * p->snake_contrast;
    /* first seed: a free tail at least 2 seed_distance from the border */
    int ty = 0, tx = 0, hy, hx, py, px, trial;
    double t1 = 0;
    for (trial = 0; trial <= p->max_paddle_retrial; trial++) {
        t1 = uniform_deg(g, -180, 180);
        for (int y = 0; y < R; y++)
            for (int x = 0; x < R; x++) {
                int band = y < 2 * sd || y >= R - 2 * sd || x < 2 * sd || x >= R - 2 * sd;
                g->lined[y * R + x] = band ? 1.0f : g->mask[y * R + x];
            }
        int n = available_tails(g, t1);
        if (n == 0) return 0;
        int k = g->avail[rng_below(&g->rng, (uint64_t)n)];
        ty = k / R;
        tx = k % R;
        translate(ty, tx, t1, L, &hy, &hx);
        translate(hy, hx, flip(t1), L + m, &py, &px);
        if (in_image(g, hy, hx) && in_image(g, py, px)) break;
    }
    if (trial > p->max_paddle_retrial) return 0;
    Paddle pd;
    paddle_make(&g->brush, R, R, ty, tx, t1, &pd);
    paint(g, &pd, contrast);
    snake_start(&sn[0], ty, tx, &pd, py, px, t1);
    /* second seed: a tail seed_distance away from the first, any direction */
    int ty2 = 0, tx2 = 0;
    double t2 = 0;
    for (trial = 0; trial <= p->max_paddle_retrial; trial++) {
        t2 = uniform_deg(g, -180, 180);
        double a = uniform_deg(g, 0, 360);
        ty2 = (int)nearbyint(ty + sd * sin(a));
        tx2 = (int)nearbyint(tx + sd * cos(a));
        translate(ty2, tx2, t2, L, &hy, &hx);
        translate(hy, hx, flip(t2), L + m, &py, &px);
        if (in_image(g, hy, hx) && in_image(g, py, px)) break;
    }
    if (trial > p->max_paddle_retrial) return 0;
    paddle_make(&g->brush, R, R, ty2, tx2, t2, &pd);
    paint(g, &pd, contrast);
    snake_start(&sn[1], ty2, tx2, &pd, py, px, t2);
    /* grow both, one paddle each in turn */
    for (int seg = 0; seg < p->contour_length - 1; seg++)
        for (int s = 0; s < 2; s++) {
            /* The occupancy a new paddle must avoid: the committed mask and the other
             * contour's newest paddle (the release checks the committed mask only, which
             * lets the two targets touch; docs/lra.md). */
            memcpy(g->eff, g->mask, sizeof(float) * (size_t)R * R);
            commit(g->eff, R, &sn[1 - s].last);
            if (!extend(g, &sn[s], g->eff, contrast)) return 0;
        }
    commit(g->mask, R, &sn[0].last);
    commit(g->mask, R, &sn[1].last);
    return 1;
}

/* One distractor contour (snakes.py make_snake, seed_snake with stop_with_availability
 * 0.01). Leaves image and mask unchanged on failure. */
static int distractor(Gen *g, Snake *s) {
    const PathfinderParams *p = g->p;
    int R = g->R, L = p->paddle_length, m = g->margin, ty = 0, tx = 0, hy, hx, py, px, trial;
    double t = 0;
    size_t bytes = sizeof(float) * (size_t)R * R;
    memcpy(g->save_image, g->image, bytes);
    memcpy(g->save_mask, g->mask, bytes);
    for (trial = 0; trial <= p->max_paddle_retrial; trial++) {
        t = uniform_deg(g, -180, 180);
        int raw = 0;
        for (int y = 0; y < R; y++)
            for (int x = 0; x < R; x++) {
                float v = g->mask[y * R + x];
                raw += v <= 0.3f;
                g->lined[y * R + x] = (y == 0 || y == R - 1 || x == 0 || x == R - 1) ? 1.0f : v;
            }
        if ((double)raw / ((double)R * R) < 0.01) return 0;
        int n = available_tails(g, t);
        if (n == 0) return 0;
        int k = g->avail[rng_below(&g->rng, (uint64_t)n)];
        ty = k / R;
        tx = k % R;
        translate(ty, tx, t, L, &hy, &hx);
        translate(hy, hx, flip(t), L + m, &py, &px);
        if (in_image(g, hy, hx) && in_image(g, py, px)) break;
    }
    if (trial > p->max_paddle_retrial) return 0;
    Paddle pd;
    paddle_make(&g->brush, R, R, ty, tx, t, &pd);
    paint(g, &pd, p->snake_contrast);
    snake_start(s, ty, tx, &pd, py, px, t);
    for (int seg = 0; seg < p->distractor_length - 1; seg++)
        if (!extend(g, s, g->mask, p->snake_contrast)) {
            memcpy(g->image, g->save_image, bytes);
            memcpy(g->mask, g->save_mask, bytes);
            return 0;
        }
    commit(g->mask, R, &s->last);
    return 1;
}

/* Draw a contour's skeleton (its paddles and the gaps between them) into the map; a
 * distractor's only where no target contour is. */
static void skeleton(uint8_t *map, int R, const Snake *s, uint8_t id) {
    double prev_y = s->seg[0][0], prev_x = s->seg[0][1];
    for (int k = 0; k < s->n; k++)
        for (int part = 0; part < 2; part++) {
            double ay = part ? s->seg[k][0] : prev_y, ax = part ? s->seg[k][1] : prev_x;
            double by = part ? s->seg[k][2] : s->seg[k][0], bx = part ? s->seg[k][3] : s->seg[k][1];
            double len = hypot(by - ay, bx - ax);
            int steps = (int)ceil(len * 8) + 1, ly = 0, lx = 0;
            for (int i = 0; i <= steps; i++) {
                double u = (double)i / steps;
                int y = (int)floor(ay + u * (by - ay) + 0.5), x = (int)floor(ax + u * (bx - ax) + 0.5);
                /* 4-connected: a diagonal step also marks the pixel beside it */
                if (i && y != ly && x != lx && ly >= 0 && ly < R && x >= 0 && x < R && (id != PF_DISTRACTOR || !map[ly * R + x]))
                    map[ly * R + x] = id;
                if (y >= 0 && y < R && x >= 0 && x < R && (id != PF_DISTRACTOR || !map[y * R + x])) map[y * R + x] = id;
                ly = y;
                lx = x;
            }
            prev_y = s->seg[k][2];
            prev_x = s->seg[k][3];
        }
}

/* Marker disk at (cy, cx), as snakes2.py draw_circle: the disk (i - cy a)^2 + (j - cx a)^2
 * <= (r a)^2 of an image antialias_scale times the size, byte-scaled to 0 / 255 and resized
 * to R x R as an 8-bit image (scipy.misc.imresize, Lanczos), / 255; dst takes the maximum. */
static void marker(Gen *g, float *dst, int cy, int cx) {
    int a = g->p->antialias_scale, R = g->R, B = R * a;
    double r2 = g->p->marker_radius * a * g->p->marker_radius * a;
    float *big = g->marker_buf, *tmp = big + (size_t)B * B, *out = tmp + (size_t)B * R;
    memset(big, 0, sizeof(float) * (size_t)B * B);
    int reach = (int)ceil(g->p->marker_radius * a) + 1;
    for (int i = GMA_MAX(cy * a - reach, 0); i <= GMA_MIN(cy * a + reach, B - 1); i++)
        for (int j = GMA_MAX(cx * a - reach, 0); j <= GMA_MIN(cx * a + reach, B - 1); j++) {
            double dy = i - (double)cy * a, dx = j - (double)cx * a;
            if (dy * dy + dx * dx <= r2) big[(size_t)i * B + j] = 255.0f;
        }
    lanczos_resize(&g->marker_taps, &g->marker_taps, big, tmp, out, 1);
    for (size_t k = 0; k < (size_t)R * R; k++) {
        float v = out[k] / 255.0f;
        if (v > dst[k]) dst[k] = v;
    }
}

int pathfinder_render(const PathfinderParams *p, uint64_t seed, uint64_t index, PathfinderImage *img) {
    memset(img, 0, sizeof *img);
    int L = p->paddle_length;
    if (p->res < 8 || p->res > 1024 || p->n_margins < 1 || p->n_margins > 4 || p->contour_length < 1 ||
        p->contour_length > MAX_PADDLES || p->distractor_length < 1 || p->distractor_length > MAX_PADDLES ||
        p->antialias_scale < 1 || p->antialias_scale > 16)
        return gma_errorf("pathfinder: parameters out of range (res %d, contour length %d)", p->res, p->contour_length);
    for (int k = 0; k < p->n_margins; k++)
        if (L + (int)ceil(p->paddle_thickness) + p->paddle_margin[k] > (PADDLE_MAX - 1) / 2 || p->paddle_margin[k] < 0)
            return gma_errorf("pathfinder: paddle of length %d, thickness %g, margin %d is larger than %d pixels", L,
                              p->paddle_thickness, p->paddle_margin[k], (PADDLE_MAX - 1) / 2);
    Gen g;
    memset(&g, 0, sizeof g);
    g.p = p;
    g.R = p->res;
    rng_seed2(&g.rng, seed, index);
    size_t n = (size_t)g.R * g.R;
    float *buf = xcalloc(7 * n, sizeof(float));
    g.image = buf; g.mask = buf + n; g.eff = buf + 2 * n; g.dil = buf + 3 * n; g.lined = buf + 4 * n;
    g.save_image = buf + 5 * n; g.save_mask = buf + 6 * n;
    g.avail = xmalloc(n * sizeof(int));

    int label = (int)rng_below(&g.rng, 2);
    g.margin = p->paddle_margin[rng_below(&g.rng, (uint64_t)p->n_margins)];
    int m = g.margin;
    g.disk = xmalloc(sizeof(int[2]) * (size_t)(2 * m + 1) * (2 * m + 1));
    for (int y = -m; y <= m; y++)
        for (int x = -m; x <= m; x++)
            if (x * x + y * y <= m * m) { g.disk[g.n_disk][0] = y; g.disk[g.n_disk][1] = x; g.n_disk++; }
    brush_init(&g.brush, p, m);
    int B = g.R * p->antialias_scale;
    lanczos_taps(&g.marker_taps, B, g.R);
    g.marker_buf = xmalloc(sizeof(float) * ((size_t)B * B + (size_t)B * g.R + n));

    Snake *sn = xmalloc(sizeof(Snake) * 3);
    int ok = 0;
    for (int attempt = 0; attempt < TWO_SNAKE_ATTEMPTS && !ok; attempt++) ok = two_snakes(&g, sn);
    int rc = 0;
    if (!ok) {
        rc = gma_errorf("pathfinder: image %llu: no room for two target contours of %d paddles in %d x %d after %d "
                        "attempts", (unsigned long long)index, p->contour_length, g.R, g.R, TWO_SNAKE_ATTEMPTS);
        goto out;
    }
    img->res = g.R;
    img->contour = xcalloc(n, 1);
    img->pix = xmalloc(n);
    img->margin = m;
    img->label = label;
    skeleton(img->contour, g.R, &sn[0], PF_TARGET_A);
    skeleton(img->contour, g.R, &sn[1], PF_TARGET_B);
    for (int k = 0; k < p->num_distractor_snakes; k++)
        for (int retry = 0; retry <= p->max_distractor_contour_retrial; retry++)
            if (distractor(&g, &sn[2])) {
                skeleton(img->contour, g.R, &sn[2], PF_DISTRACTOR);
                img->distractors++;
                break;
            }
    /* markers (snakes2.py from_wrapper): the origin tip of one target; the terminal tip of
     * the same target (label 1) or of the other (label 0) */
    int o = (int)rng_below(&g.rng, 2), t = label ? o : 1 - o;
    img->marker[0][0] = sn[o].tail_y; img->marker[0][1] = sn[o].tail_x;
    img->marker[1][0] = sn[t].head_y; img->marker[1][1] = sn[t].head_x;
    float *mk = g.eff;
    memset(mk, 0, n * sizeof(float));
    marker(&g, mk, sn[o].tail_y, sn[o].tail_x);
    marker(&g, mk, sn[t].head_y, sn[t].head_x);
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (mk[i] > g.image[i]) g.image[i] = mk[i];
        lo = GMA_MIN(lo, g.image[i]);
        hi = GMA_MAX(hi, g.image[i]);
    }
    /* saved as scipy.misc.imsave does: byte-scaled from [min, max] to [0, 255] */
    double scale = hi > lo ? 255.0 / (hi - lo) : 1.0;
    for (size_t i = 0; i < n; i++) {
        double v = (g.image[i] - lo) * scale;
        v = v < 0 ? 0 : (v > 255 ? 255 : v);
        img->pix[i] = (uint8_t)(v + 0.5);
    }
out:
    free(sn);
    brush_free(&g.brush);
    lanczos_taps_free(&g.marker_taps);
    free(g.marker_buf);
    free(g.disk);
    free(g.avail);
    free(buf);
    if (rc < 0) pathfinder_image_free(img);
    return rc;
}

void pathfinder_image_free(PathfinderImage *img) {
    if (!img) return;
    free(img->pix);
    free(img->contour);
    memset(img, 0, sizeof *img);
}

/* ---------------------------------------------------------------- files */

/* Python's str() of a float that is a whole number keeps ".0". */
static void py_float(char *out, size_t cap, double v) {
    if (v == floor(v)) snprintf(out, cap, "%.1f", v);
    else snprintf(out, cap, "%g", v);
}

int pathfinder_meta_line(char *out, size_t cap, const PathfinderParams *p, int batch, int i, int label,
                         int margin) {
    char cont[32], thick[32];
    py_float(cont, sizeof cont, p->continuity);
    py_float(thick, sizeof thick, p->paddle_thickness);
    return snprintf(out, cap, "imgs/%d sample_%d.png %d %d %s %d %d %d %s %d 1", batch, i, i, label, cont,
                    p->contour_length, p->distractor_length, p->paddle_length, thick, margin);
}

int pathfinder_generate(const char *out_dir, const PathfinderParams *p, const char *difficulty, long n,
                        uint64_t seed, int per_batch, long *positives) {
    const char *pattern = pathfinder_split_pattern(difficulty);
    if (!pattern) return gma_errorf("pathfinder: unknown difficulty '%s' (easy, intermediate, hard)", difficulty);
    if (n < 1 || per_batch < 1) return gma_errorf("pathfinder: need at least one image and one per batch");
    if (positives) *positives = 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s/metadata", out_dir, pattern);
    if (gma_mkdirs(dir) < 0) return -1;
    long n_batches = (n + per_batch - 1) / per_batch;
    for (long b = 0; b < n_batches; b++) {
        int count = (int)GMA_MIN((long)per_batch, n - b * per_batch);
        snprintf(dir, sizeof dir, "%s/%s/imgs/%ld", out_dir, pattern, b);
        if (gma_mkdirs(dir) < 0) return -1;
        int *labels = xmalloc(sizeof(int) * (size_t)count), *margins = xmalloc(sizeof(int) * (size_t)count);
        int failed = 0;
        char err[1024] = "";
#pragma omp parallel for schedule(dynamic, 4)
        for (int i = 0; i < count; i++) {
            if (failed) continue;
            PathfinderImage img;
            char path[4200];
            int rc = pathfinder_render(p, seed, (uint64_t)(b * per_batch + i), &img);
            if (rc == 0) {
                snprintf(path, sizeof path, "%s/sample_%d.png", dir, i);
                rc = png_write_gray8(path, img.pix, img.res, img.res);
                labels[i] = img.label;
                margins[i] = img.margin;
            }
            pathfinder_image_free(&img);
            if (rc < 0) {
#pragma omp critical(pathfinder_err)
                {
                    if (!failed) snprintf(err, sizeof err, "%s", gma_error());
                    failed = 1;
                }
            }
        }
        if (failed) {
            free(labels);
            free(margins);
            return gma_errorf("%s", err);
        }
        size_t cap = (size_t)count * 128 + 1, len = 0;
        char *text = xmalloc(cap);
        for (int i = 0; i < count; i++) {
            len += (size_t)pathfinder_meta_line(text + len, cap - len - 1, p, (int)b, i, labels[i], margins[i]);
            text[len++] = '\n';
            if (positives) *positives += labels[i];
        }
        free(labels);
        free(margins);
        char meta[4200];
        snprintf(meta, sizeof meta, "%s/%s/metadata/%ld.npy", out_dir, pattern, b);
        int rc = gma_write_file_atomic(meta, text, len);
        free(text);
        if (rc < 0) return -1;
    }
    return 0;
}
