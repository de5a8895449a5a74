/* raster_dump.c: prints what src/data/cls/raster.c draws for the Pathfinder release's calls,
 * for scripts/check_raster_pil.py to compare with PIL. One line per case:
 *   L deg  <17x17 drawn> <9x9 resized, float> <9x9 mask, 8-bit>   (a Pathfinder-32 paddle)
 *   W width deg y1 x1 <41x41 drawn>                                (wide lines)
 *   M <32x32 marker>                                               (draw_circle, r 1.5)
 */
#include "data/cls/raster.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    const double pi = 3.14159265358979323846;
    LanczosTaps t, tm;
    if (lanczos_taps(&t, 17, 9) || lanczos_taps(&tm, 64, 32)) return 1;
    static float b[17 * 17], d[17 * 17], tmp[17 * 9], o[81], o2[81], wide[41 * 41];
    for (int deg = -180; deg < 180; deg++) {
        double a = deg * pi / 180;
        int hy = (int)ceil(8 + 4 * sin(a)), hx = (int)ceil(8 + 4 * cos(a));
        memset(b, 0, sizeof b);
        raster_line(b, 17, 17, 8, 8, hy, hx, 1, 255.0f);
        lanczos_resize(&t, &t, b, tmp, o, 0);
        raster_dilate_disk(b, d, 17, 17, 2);
        lanczos_resize(&t, &t, d, tmp, o2, 1);
        printf("L %d", deg);
        for (int k = 0; k < 289; k++) printf(" %g", b[k]);
        for (int k = 0; k < 81; k++) printf(" %.6f", o[k]);
        for (int k = 0; k < 81; k++) printf(" %g", o2[k]);
        printf("\n");
    }
    for (int w = 2; w <= 4; w++)
        for (int deg = -180; deg < 180; deg++) {
            double a = deg * pi / 180;
            int hy = (int)ceil(20 + 10 * sin(a)), hx = (int)ceil(20 + 10 * cos(a));
            memset(wide, 0, sizeof wide);
            raster_line(wide, 41, 41, 20, 20, hy, hx, w, 1.0f);
            printf("W %d %d %d %d", w, deg, hy, hx);
            for (int k = 0; k < 41 * 41; k++) printf(" %d", wide[k] > 0);
            printf("\n");
        }
    static float big[64 * 64], mt[64 * 32], mo[32 * 32];
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < 64; j++) big[i * 64 + j] = (i - 20) * (i - 20) + (j - 26) * (j - 26) <= 9 ? 255.0f : 0.0f;
    lanczos_resize(&tm, &tm, big, mt, mo, 1);
    printf("M");
    for (int k = 0; k < 1024; k++) printf(" %g", mo[k]);
    printf("\n");
    lanczos_taps_free(&t);
    lanczos_taps_free(&tm);
    return 0;
}
