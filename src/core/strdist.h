/* strdist.h: how near two strings are, for the "did you mean" of a mistyped option or
 * config key. */
#ifndef GMA_CORE_STRDIST_H
#define GMA_CORE_STRDIST_H

/* The Levenshtein distance of a and b (insertions, deletions, substitutions), or max + 1
 * as soon as it is known to exceed max. */
int gma_edit_distance(const char *a, const char *b, int max);
#endif
