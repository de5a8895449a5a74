/* strdist.h: how near two strings are, for the "did you mean" of a mistyped option or
 * config key. */
#ifndef GMA_CORE_STRDIST_H
#define GMA_CORE_STRDIST_H

/* The edit distance of a and b (insertions, deletions, substitutions, transpositions of
 * two neighbours: "form" is one edit from "from"), or max + 1 as soon as it is known to
 * exceed max. */
int gma_edit_distance(const char *a, const char *b, int max);
/* Whether typed is a near miss of name: at most 2 edits, and at most one per three
 * characters of typed (rounded: "nope" is no miss of "name", "quite" one of "quiet"). */
int gma_near_miss(const char *typed, const char *name);
#endif
