/* strdist.c: the edit distance of two strings (strdist.h). */
#include "core/strdist.h"

#include <string.h>

#define STRDIST_MAX 128 /* longer strings are never "near" */

int gma_edit_distance(const char *a, const char *b, int max) {
    size_t na = strlen(a), nb = strlen(b);
    if (na > STRDIST_MAX || nb > STRDIST_MAX) return max + 1;
    if ((na > nb ? na - nb : nb - na) > (size_t)max) return max + 1;
    int r0[STRDIST_MAX + 1], r1[STRDIST_MAX + 1], r2[STRDIST_MAX + 1]; /* rows i - 2, i - 1, i */
    int *pp = r0, *p = r1, *c = r2;
    for (size_t j = 0; j <= nb; j++) p[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        c[0] = (int)i;
        int best = c[0];
        for (size_t j = 1; j <= nb; j++) {
            int d = p[j - 1] + (a[i - 1] != b[j - 1]);
            if (p[j] + 1 < d) d = p[j] + 1;
            if (c[j - 1] + 1 < d) d = c[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < d) d = pp[j - 2] + 1;
            c[j] = d;
            if (d < best) best = d;
        }
        if (best > max) return max + 1;
        int *t = pp;
        pp = p, p = c, c = t;
    }
    return p[nb] <= max ? p[nb] : max + 1;
}

int gma_near_miss(const char *typed, const char *name) {
    int max = (int)((strlen(typed) + 1) / 3);
    return gma_edit_distance(typed, name, max > 2 ? 2 : max) <= (max > 2 ? 2 : max);
}
