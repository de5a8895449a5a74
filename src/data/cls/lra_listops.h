/* lra_listops.h: ListOps (LRA): token ids, the expression evaluator, the seeded
 * generator with the LRA distribution, and the LRA TSV format.
 *
 * An expression is a nested list: an operator token, 2..max_args arguments (digits or
 * expressions) and ']'. LRA writes it with parentheses around every partial application,
 * e.g. "( ( ( [MAX 2 ) 9 ) ] )"; the parentheses carry no information and are dropped
 * by the tokenizer, as LRA's own tokenizer drops them. Token ids:
 *
 *   0 pad   1 [MIN   2 [MAX   3 [MED   4 [SM   5..14 digits 0..9   15 ]
 *
 * Values: MIN, MAX; MED = median, the lower-middle mean rounded down for an even count
 * (LRA's int(np.median)); SM = sum modulo 10.
 */
#ifndef GMA_LRA_LISTOPS_H
#define GMA_LRA_LISTOPS_H
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"

enum {
    LISTOPS_PAD = 0,
    LISTOPS_MIN = 1,
    LISTOPS_MAX = 2,
    LISTOPS_MED = 3,
    LISTOPS_SM = 4,
    LISTOPS_DIGIT0 = 5, /* digit v is LISTOPS_DIGIT0 + v */
    LISTOPS_END = 15,
    LISTOPS_VOCAB = 16,
};

typedef struct ListopsGenOptions {
    int n_train, n_valid, n_test; /* 96000, 2000, 2000 */
    uint64_t seed;                /* 0 */
    int min_len, max_len;         /* 500, 2000: kept when min_len < tokens < max_len (LRA) */
    int max_depth;                /* 10: the root has depth 1, depth max_depth is a digit */
    int max_args;                 /* 10: every operator gets 2..max_args arguments */
} ListopsGenOptions;

void listops_gen_defaults(ListopsGenOptions *o);

/* Tokenize an LRA Source string: whitespace-separated "(" ")" (dropped), "[MIN" "[MAX"
 * "[MED" "[SM", "0".."9", "]". Writes up to cap ids; returns the number of tokens (which
 * may exceed cap: then only cap were written), or -1 with an error naming the bad token
 * and its byte offset. */
long listops_tokenize(const char *src, size_t len, uint32_t *out, size_t cap);

/* Value (0..9) of one complete expression, or -1 with an error naming the token
 * position. depth_out (may be NULL) gets the tree depth (a lone digit has depth 1). */
int listops_eval(const uint32_t *tok, size_t n, int *depth_out);

/* Write the LRA Source string (with the LRA parentheses) of a valid expression; returns
 * the string length, or -1 if it does not fit cap (including the NUL). */
long listops_to_string(const uint32_t *tok, size_t n, char *out, size_t cap);

/* The seeded generator. One example at a time: */
typedef struct ListopsGen {
    Rng rng;        /* the project's xoshiro256** generator */
    ListopsGenOptions opt;
} ListopsGen;

void listops_gen_init(ListopsGen *g, const ListopsGenOptions *o);
/* Draw trees until one has min_len < tokens < max_len; writes it to buf (cap >= max_len)
 * and returns its length, or 0 when LISTOPS_MAX_DRAWS draws in a row failed. */
#define LISTOPS_MAX_DRAWS 10000000L
size_t listops_gen_next(ListopsGen *g, uint32_t *buf, size_t cap);

/* Generate the three splits into out_dir/basic_{train,val,test}.tsv (header
 * "Source\tTarget", one "SOURCE\tVALUE" line per example, no duplicate expressions
 * across splits). Returns 0 or -1. */
int listops_generate(const char *out_dir, const ListopsGenOptions *o);

#endif
