/* routing.h: routing analysis of a trained GMA model (gmaeval --analyze): over the scored
 * positions of an evaluation set, per GMA layer and head, the hard assignments, used
 * components, usage entropy, NMI against the token categories (the recall task's from
 * recall.h) and each component's most frequent tokens; a layer's figures the means over its
 * heads, "pooled" over every (layer, head). Definitions and categories: docs/model.md §6;
 * output: docs/analysis.md. */
#ifndef GMA_ROUTING_ANALYSIS_H
#define GMA_ROUTING_ANALYSIS_H
#include <stdint.h>
#include <stdio.h>

enum { CAT_NUMBER, CAT_PUNCT, CAT_FUNCTION, CAT_CAPITAL, CAT_OTHER, N_TEXT_CATS };

/* Category of a token's text (one of CAT_*). */
int token_category(const char *text);
const char *token_category_name(int c);
/* NMI of the joint count table tab [nA, nC] (natural logs); 1 when both labellings are
 * constant (identical partitions), 0 when exactly one is. */
double nmi_from_table(const double *tab, int nA, int nC);
/* H(counts) / ln K (0 for K <= 1 or an empty count). */
double usage_entropy_norm(const double *counts, int K);

typedef struct RouteAnalysis {
    int L, H, Kc, ncat, V;         /* Kc: the largest layer's (the arrays' stride) */
    int *kc;                       /* [L] each layer's own Kc (ra_set_kc; = Kc until set) */
    const char *const *cat_names;  /* ncat names */
    double *counts;                /* [L,H,Kc] */
    double *table;                 /* [L,H,Kc,ncat] */
    uint16_t *assign;              /* [L,H,cap] assignments in order of tokens */
    int32_t *tok;                  /* [cap] */
    long n, cap;
} RouteAnalysis;

void ra_init(RouteAnalysis *ra, int L, int H, int Kc, int V, int ncat, const char *const *cat_names);
void ra_free(RouteAnalysis *ra);
/* Layer slot l has kc <= ra->Kc components (gma.n_components per layer): its figures use kc. */
void ra_set_kc(RouteAnalysis *ra, int l, int kc);
/* Add the rows of layer slot l: gamma host [B,H,N,Kc] (the stride ra->Kc; entries past the
 * layer's kc are ignored), positions with score[b*N+n] != 0;
 * tok [B,N]; cat[token id] the category. Call for every l of a batch, then ra_next_batch. */
void ra_add(RouteAnalysis *ra, int l, const float *gamma, const int32_t *tok, const uint8_t *score, int B, int N,
            const int *cat);
/* Count the batch's positions (call once per batch after ra_add for every layer). */
void ra_next_batch(RouteAnalysis *ra, const int32_t *tok, const uint8_t *score, int B, int N);

/* Results: JSON text (caller frees) and a readable report to f. layer_index[l] is the model
 * block of GMA layer slot l; tok_text[id] the token's display text (may be NULL). */
char *ra_json(const RouteAnalysis *ra, const int *layer_index, const char *const *tok_text, int top);
void ra_report(const RouteAnalysis *ra, const int *layer_index, const char *const *tok_text, FILE *f);
/* Pooled figures (means over every layer and head). */
void ra_pooled(const RouteAnalysis *ra, double *used, double *entropy, double *nmi);
#endif
