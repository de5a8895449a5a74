/* strdist.c: the edit distance of two strings (strdist.h). */
#include "core/strdist.h"

#include <string.h>

#define STRDIST_MAX 128 /* longer strings are never "near" */

int gma_edit_distance(const char *a, const char *b, int max) {
    size_t na = strlen(a), nb = strlen(b);
    if (na > STRDIST_MAX || nb > STRDIST_MAX) return max + 1;
    if ((na > nb ? na - nb : nb - na) > (size_t)max) return max + 1;
    int row[STRDIST_MAX + 1];
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0], best;
        row[0] = best = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j], d = diag + (a[i - 1] != b[j - 1]);
            if (row[j - 1] + 1 < d) d = row[j - 1] + 1;
            if (up + 1 < d) d = up + 1;
            diag = up;
            row[j] = d;
            if (d < best) best = d;
        }
        if (best > max) return max + 1;
    }
    return row[nb] <= max ? row[nb] : max + 1;
}

int gma_near_miss(const char *typed, const char *name) {
    int max = (int)((strlen(typed) + 1) / 3);
    return gma_edit_distance(typed, name, max > 2 ? 2 : max) <= (max > 2 ? 2 : max);
}
