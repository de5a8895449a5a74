/* raster.c: line drawing, disk dilation and the Lanczos resize of raster.h. */
#include "data/cls/raster.h"
#include "core/common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RASTER_PI 3.14159265358979323846

static double sinc(double x) {
    if (x == 0.0) return 1.0;
    x *= RASTER_PI;
    return sin(x) / x;
}

/* The Lanczos window of support 3: sinc(x) sinc(x / 3) on [-3, 3). */
static double lanczos3(double x) { return (x >= -3.0 && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0; }

int lanczos_taps(LanczosTaps *t, int in, int out) {
    memset(t, 0, sizeof *t);
    if (in < 1 || out < 1) return gma_errorf("lanczos_taps: sizes %d -> %d", in, out);
    double scale = (double)in / out, fscale = scale < 1.0 ? 1.0 : scale, support = 3.0 * fscale;
    t->in = in;
    t->out = out;
    t->max_taps = (int)ceil(support) * 2 + 1;
    t->first = xmalloc(sizeof(int) * (size_t)out);
    t->count = xmalloc(sizeof(int) * (size_t)out);
    t->w = xcalloc((size_t)out * (size_t)t->max_taps, sizeof(double));
    for (int o = 0; o < out; o++) {
        double center = (o + 0.5) * scale, sum = 0.0;
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in) hi = in;
        int n = hi - lo;
        if (n > t->max_taps) n = t->max_taps;
        double *w = t->w + (size_t)o * t->max_taps;
        for (int k = 0; k < n; k++) {
            w[k] = lanczos3((k + lo - center + 0.5) / fscale);
            sum += w[k];
        }
        if (sum != 0.0)
            for (int k = 0; k < n; k++) w[k] /= sum;
        t->first[o] = lo;
        t->count[o] = n;
    }
    return 0;
}

void lanczos_taps_free(LanczosTaps *t) {
    if (!t) return;
    free(t->first);
    free(t->count);
    free(t->w);
    memset(t, 0, sizeof *t);
}

static float settle(double v, int quantise) {
    if (!quantise) return (float)v;
    v = floor(v + 0.5);
    return (float)(v < 0 ? 0 : (v > 255 ? 255 : v));
}

void lanczos_resize(const LanczosTaps *tx, const LanczosTaps *ty, const float *in, float *tmp, float *out,
                    int quantise) {
    int iw = tx->in, ow = tx->out, ih = ty->in, oh = ty->out;
    for (int y = 0; y < ih; y++) {
        const float *row = in + (size_t)y * iw;
        for (int o = 0; o < ow; o++) {
            const double *w = tx->w + (size_t)o * tx->max_taps;
            const float *src = row + tx->first[o];
            double acc = 0.0;
            for (int k = 0; k < tx->count[o]; k++) acc += w[k] * src[k];
            tmp[(size_t)y * ow + o] = settle(acc, quantise);
        }
    }
    for (int o = 0; o < oh; o++) {
        const double *w = ty->w + (size_t)o * ty->max_taps;
        for (int x = 0; x < ow; x++) {
            double acc = 0.0;
            for (int k = 0; k < ty->count[o]; k++) acc += w[k] * tmp[(size_t)(ty->first[o] + k) * ow + x];
            out[(size_t)o * ow + x] = settle(acc, quantise);
        }
    }
}

static void put(float *img, int h, int w, int y, int x, float ink) {
    if (y >= 0 && y < h && x >= 0 && x < w) img[(size_t)y * w + x] = ink;
}

/* Bresenham from (y0, x0) to (y1, x1), both ends set: max(|dx|, |dy|) + 1 pixels, stepping
 * along the longer axis (x when |dx| >= |dy|) and the shorter one when the error says so. */
static void thin_line(float *img, int h, int w, int y0, int x0, int y1, int x1, float ink) {
    int dx = abs(x1 - x0), dy = abs(y1 - y0), xs = x1 < x0 ? -1 : 1, ys = y1 < y0 ? -1 : 1;
    int xmajor = dx >= dy, n = xmajor ? dx : dy, m = xmajor ? dy : dx, e = 2 * m - n;
    for (int i = 0; i <= n; i++) {
        put(img, h, w, y0, x0, ink);
        if (e >= 0 && m) {
            if (xmajor) y0 += ys;
            else x0 += xs;
            e -= 2 * n;
        }
        e += 2 * m;
        if (xmajor) x0 += xs;
        else y0 += ys;
    }
}

/* Round half away from zero / half toward zero, as PIL's ROUND_UP / ROUND_DOWN. */
static int round_up(double f) { return (int)(f >= 0 ? floor(f + 0.5) : -floor(fabs(f) + 0.5)); }
static int round_down(double f) { return (int)(f >= 0 ? ceil(f - 0.5) : -ceil(fabs(f) - 0.5)); }

void raster_line(float *img, int h, int w, int y0, int x0, int y1, int x1, int width, float ink) {
    if (width <= 1) {
        thin_line(img, h, w, y0, x0, y1, x1, ink);
        return;
    }
    int dx = x1 - x0, dy = y1 - y0;
    if (dx == 0 && dy == 0) {
        put(img, h, w, y0, x0, ink);
        return;
    }
    double len = hypot(dx, dy), half = (width - 1) / 2.0;
    double rmax = round_up(half) / len, rmin = round_down(half) / len;
    int dxmin = round_down(rmin * dy), dxmax = round_down(rmax * dy);
    int dymin = round_down(rmin * dx), dymax = round_down(rmax * dx);
    /* PIL's corners, (x, y), filled by its scan-line rule: on each row the crossings of the
     * sloped edges (an edge's last row counted twice below the polygon's last row), sorted,
     * filled pairwise from the crossing rounded half up to the next rounded half down;
     * horizontal edges filled whole. */
    int v[4][2] = {{x0 - dxmin, y0 + dymax}, {x1 - dxmin, y1 + dymax}, {x1 + dxmax, y1 - dymin}, {x0 + dxmax, y0 - dymin}};
    int ylo = v[0][1], yhi = v[0][1];
    for (int i = 1; i < 4; i++) {
        ylo = GMA_MIN(ylo, v[i][1]);
        yhi = GMA_MAX(yhi, v[i][1]);
    }
    for (int y = GMA_MAX(ylo, 0); y <= GMA_MIN(yhi, h - 1); y++) {
        float xs[8];
        int n = 0;
        for (int i = 0; i < 4; i++) {
            const int *a = v[i], *b = v[(i + 1) % 4];
            int ey0 = GMA_MIN(a[1], b[1]), ey1 = GMA_MAX(a[1], b[1]);
            if (ey0 == ey1) {
                if (y == ey0)
                    for (int x = GMA_MIN(a[0], b[0]); x <= GMA_MAX(a[0], b[0]); x++) put(img, h, w, y, x, ink);
                continue;
            }
            if (y < ey0 || y > ey1) continue;
            float slope = (float)(b[0] - a[0]) / (float)(b[1] - a[1]);
            xs[n++] = (float)(y - a[1]) * slope + (float)a[0];
            if (y == ey1 && y < yhi) {
                xs[n] = xs[n - 1];
                n++;
            }
        }
        for (int i = 1; i < n; i++)      /* insertion sort: at most 8 */
            for (int k = i; k > 0 && xs[k - 1] > xs[k]; k--) {
                float t = xs[k];
                xs[k] = xs[k - 1];
                xs[k - 1] = t;
            }
        for (int i = 1; i < n; i += 2)
            for (int x = round_up(xs[i - 1]); x <= round_down(xs[i]); x++) put(img, h, w, y, x, ink);
    }
}

void raster_dilate_disk(const float *src, float *dst, int h, int w, int radius) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float m = -INFINITY;
            for (int dy = -radius; dy <= radius; dy++) {
                int yy = y + dy;
                if (yy < 0 || yy >= h) continue;
                for (int dx = -radius; dx <= radius; dx++) {
                    int xx = x + dx;
                    if (xx < 0 || xx >= w || dx * dx + dy * dy > radius * radius) continue;
                    if (src[(size_t)yy * w + xx] > m) m = src[(size_t)yy * w + xx];
                }
            }
            dst[(size_t)y * w + x] = m;
        }
}
