/* routing.c: routing statistics of gmaeval --analyze (see routing.h). */
#include "analysis/routing.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/text/unicode.h"

static const char *g_text_cats[N_TEXT_CATS] = {"number", "punctuation", "function_word", "capitalised", "other"};
const char *token_category_name(int c) { return c >= 0 && c < N_TEXT_CATS ? g_text_cats[c] : "?"; }

static const char *const FUNCTION_WORDS[] = {
    "a", "an", "the", "this", "that", "these", "those", "some", "any", "no", "every", "each", "all", "both", "either",
    "neither", "i", "me", "my", "mine", "you", "your", "yours", "he", "him", "his", "she", "her", "hers", "it", "its",
    "we", "us", "our", "ours", "they", "them", "their", "theirs", "who", "whom", "whose", "which", "what", "of", "in",
    "on", "at", "by", "for", "with", "about", "against", "between", "into", "through", "during", "before", "after",
    "above", "below", "to", "from", "up", "down", "out", "off", "over", "under", "as", "than", "and", "or", "but",
    "nor", "so", "yet", "if", "because", "while", "although", "though", "since", "unless", "until", "when", "where",
    "whether", "is", "am", "are", "was", "were", "be", "been", "being", "have", "has", "had", "do", "does", "did",
    "will", "would", "shall", "should", "can", "could", "may", "might", "must", "not", "there", "here", "then",
};

int token_category(const char *text) {
    if (!text) return CAT_OTHER;
    /* strip leading spaces and the GPT-2 byte-level space marker (U+0120, bytes C4 A0) */
    for (;;) {
        if (*text == ' ' || *text == '\t' || *text == '\n') text++;
        else if ((unsigned char)text[0] == 0xC4 && (unsigned char)text[1] == 0xA0) text += 2;
        else break;
    }
    size_t n = strlen(text);
    while (n > 0 && isspace((unsigned char)text[n - 1])) n--;
    if (n == 0) return CAT_PUNCT; /* whitespace only */
    int digits = 0, letters = 0, others = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (isdigit(ch)) digits++;
        else if (isalpha(ch) || ch >= 0x80) letters++;
        else if (ch != ',' && ch != '.') others++;
    }
    if (digits > 0 && letters == 0 && others == 0) return CAT_NUMBER;
    if (digits == 0 && letters == 0) return CAT_PUNCT;
    if (letters > 0 && n < 16) {
        char low[16];
        for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)text[i]);
        low[n] = 0;
        for (size_t i = 0; i < sizeof FUNCTION_WORDS / sizeof FUNCTION_WORDS[0]; i++)
            if (!strcmp(low, FUNCTION_WORDS[i])) return CAT_FUNCTION;
    }
    if (isupper((unsigned char)text[0])) return CAT_CAPITAL;
    return CAT_OTHER;
}

static double entropy_of(const double *p, int n, double tot) {
    double h = 0;
    if (tot <= 0) return 0;
    for (int i = 0; i < n; i++)
        if (p[i] > 0) h -= p[i] / tot * log(p[i] / tot);
    return h;
}

double nmi_from_table(const double *tab, int nA, int nC) {
    double *ra = xcalloc(nA, sizeof(double)), *rc = xcalloc(nC, sizeof(double)), tot = 0;
    for (int a = 0; a < nA; a++)
        for (int c = 0; c < nC; c++) {
            double v = tab[(size_t)a * nC + c];
            ra[a] += v, rc[c] += v, tot += v;
        }
    double ha = entropy_of(ra, nA, tot), hc = entropy_of(rc, nC, tot), mi = 0;
    for (int a = 0; a < nA && tot > 0; a++)
        for (int c = 0; c < nC; c++) {
            double v = tab[(size_t)a * nC + c];
            if (v > 0) mi += v / tot * log(v * tot / (ra[a] * rc[c]));
        }
    free(ra);
    free(rc);
    if (ha + hc <= 0) return tot > 0 ? 1 : 0;
    double r = mi / ((ha + hc) / 2);
    return r < 0 ? 0 : r;
}

double usage_entropy_norm(const double *counts, int K) {
    if (K <= 1) return 0;
    double tot = 0;
    for (int k = 0; k < K; k++) tot += counts[k];
    return entropy_of(counts, K, tot) / log((double)K);
}

void ra_init(RouteAnalysis *ra, int L, int H, int Kc, int V, int ncat, const char *const *cat_names) {
    memset(ra, 0, sizeof *ra);
    ra->L = L, ra->H = H, ra->Kc = Kc, ra->V = V, ra->ncat = ncat, ra->cat_names = cat_names;
    ra->counts = xcalloc((size_t)L * H * Kc, sizeof(double));
    ra->table = xcalloc((size_t)L * H * Kc * ncat, sizeof(double));
    ra->kc = xcalloc(L > 0 ? L : 1, sizeof(int));
    for (int l = 0; l < L; l++) ra->kc[l] = Kc;
}

void ra_set_kc(RouteAnalysis *ra, int l, int kc) { ra->kc[l] = GMA_MIN(kc, ra->Kc); }

/* 1 when every layer has the same Kc */
static int uniform_kc(const RouteAnalysis *ra) {
    for (int l = 0; l < ra->L; l++)
        if (ra->kc[l] != ra->Kc) return 0;
    return 1;
}

void ra_free(RouteAnalysis *ra) {
    free(ra->counts);
    free(ra->table);
    free(ra->kc);
    free(ra->assign);
    free(ra->tok);
    memset(ra, 0, sizeof *ra);
}

static void grow(RouteAnalysis *ra, long need) {
    if (need <= ra->cap) return;
    long nc = ra->cap ? ra->cap : 4096;
    while (nc < need) nc *= 2;
    uint16_t *na = xcalloc((size_t)ra->L * ra->H * nc, sizeof(uint16_t));
    if (ra->assign)
        for (long s = 0; s < (long)ra->L * ra->H; s++) memcpy(na + s * nc, ra->assign + s * ra->cap, sizeof(uint16_t) * ra->n);
    free(ra->assign);
    ra->assign = na;
    ra->tok = xrealloc(ra->tok, sizeof(int32_t) * nc);
    ra->cap = nc;
}

void ra_add(RouteAnalysis *ra, int l, const float *gamma, const int32_t *tok, const uint8_t *score, int B, int N,
            const int *cat) {
    long add = 0;
    for (long i = 0; i < (long)B * N; i++) add += score[i] != 0;
    grow(ra, ra->n + add);
    int H = ra->H, Kc = ra->Kc, Kl = ra->kc[l];
    for (int h = 0; h < H; h++) {
        long t = ra->n;
        uint16_t *as = ra->assign + ((size_t)l * H + h) * ra->cap;
        double *cnt = ra->counts + ((size_t)l * H + h) * Kc;
        double *tab = ra->table + ((size_t)l * H + h) * Kc * ra->ncat;
        for (int b = 0; b < B; b++)
            for (int n = 0; n < N; n++) {
                if (!score[(size_t)b * N + n]) continue;
                const float *g = gamma + (((size_t)b * H + h) * N + n) * Kc;
                int best = 0;
                for (int k = 1; k < Kl; k++)
                    if (g[k] > g[best]) best = k;
                as[t++] = (uint16_t)best;
                cnt[best] += 1;
                tab[(size_t)best * ra->ncat + cat[tok[(size_t)b * N + n]]] += 1;
            }
    }
}

void ra_next_batch(RouteAnalysis *ra, const int32_t *tok, const uint8_t *score, int B, int N) {
    long add = 0;
    for (long i = 0; i < (long)B * N; i++) add += score[i] != 0;
    grow(ra, ra->n + add);
    for (long i = 0; i < (long)B * N; i++)
        if (score[i]) ra->tok[ra->n++] = tok[i];
}

static void head_figures(const RouteAnalysis *ra, int l, int h, double *used, double *ent, double *nmi) {
    const double *cnt = ra->counts + ((size_t)l * ra->H + h) * ra->Kc;
    int u = 0, Kl = ra->kc[l];
    for (int k = 0; k < Kl; k++) u += cnt[k] > 0;
    *used = u;
    *ent = usage_entropy_norm(cnt, Kl);
    *nmi = nmi_from_table(ra->table + ((size_t)l * ra->H + h) * ra->Kc * ra->ncat, Kl, ra->ncat);
}

void ra_pooled(const RouteAnalysis *ra, double *used, double *entropy, double *nmi) {
    double u = 0, e = 0, m = 0;
    for (int l = 0; l < ra->L; l++)
        for (int h = 0; h < ra->H; h++) {
            double a, b, c;
            head_figures(ra, l, h, &a, &b, &c);
            u += a, e += b, m += c;
        }
    double n = (double)ra->L * ra->H;
    *used = n > 0 ? u / n : 0, *entropy = n > 0 ? e / n : 0, *nmi = n > 0 ? m / n : 0;
}

typedef struct Pair { int32_t tok; long count; } Pair;
static int by_count(const void *a, const void *b) {
    const Pair *x = a, *y = b;
    if (x->count != y->count) return x->count < y->count ? 1 : -1;
    return x->tok < y->tok ? -1 : x->tok > y->tok;
}

/* top tokens of component k of (l, h): fills out (up to top), returns how many */
static int top_tokens(const RouteAnalysis *ra, int l, int h, int k, int top, Pair *out, long *work, int32_t *touched) {
    const uint16_t *as = ra->assign + ((size_t)l * ra->H + h) * ra->cap;
    int nt = 0;
    for (long t = 0; t < ra->n; t++)
        if (as[t] == k) {
            int32_t id = ra->tok[t];
            if (work[id]++ == 0) touched[nt++] = id;
        }
    Pair *p = xmalloc(sizeof(Pair) * (nt ? nt : 1));
    for (int i = 0; i < nt; i++) p[i] = (Pair){touched[i], work[touched[i]]}, work[touched[i]] = 0;
    qsort(p, nt, sizeof(Pair), by_count);
    int n = nt < top ? nt : top;
    memcpy(out, p, sizeof(Pair) * n);
    free(p);
    return n;
}

char *ra_json(const RouteAnalysis *ra, const int *layer_index, const char *const *tok_text, int top) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "tokens", (double)ra->n);
    cJSON_AddNumberToObject(root, "n_components", ra->Kc);
    cJSON_AddNumberToObject(root, "n_heads", ra->H);
    cJSON *cats = cJSON_AddArrayToObject(root, "categories");
    for (int c = 0; c < ra->ncat; c++) cJSON_AddItemToArray(cats, cJSON_CreateString(ra->cat_names[c]));
    double pu, pe, pn;
    ra_pooled(ra, &pu, &pe, &pn);
    cJSON *pooled = cJSON_AddObjectToObject(root, "pooled");
    cJSON_AddNumberToObject(pooled, "used_components", pu);
    cJSON_AddNumberToObject(pooled, "usage_entropy", pe);
    cJSON_AddNumberToObject(pooled, "nmi", pn);
    cJSON *ref = cJSON_AddObjectToObject(root, "paper_reference_kc128");
    cJSON_AddNumberToObject(ref, "used_components", 104);
    cJSON_AddNumberToObject(ref, "usage_entropy", 0.933);
    cJSON_AddNumberToObject(ref, "nmi", 0.244);
    cJSON *layers = cJSON_AddArrayToObject(root, "layers");
    long *work = xcalloc(ra->V > 0 ? ra->V : 1, sizeof(long));
    int32_t *touched = xmalloc(sizeof(int32_t) * (ra->V > 0 ? ra->V : 1));
    Pair *tp = xmalloc(sizeof(Pair) * (top > 0 ? top : 1));
    for (int l = 0; l < ra->L; l++) {
        cJSON *lo = cJSON_CreateObject();
        cJSON_AddNumberToObject(lo, "layer", layer_index[l]);
        cJSON_AddNumberToObject(lo, "n_components", ra->kc[l]);
        double su = 0, se = 0, sn = 0;
        cJSON *heads = cJSON_CreateArray();
        for (int h = 0; h < ra->H; h++) {
            double u, e, n;
            head_figures(ra, l, h, &u, &e, &n);
            su += u, se += e, sn += n;
            cJSON *ho = cJSON_CreateObject();
            cJSON_AddNumberToObject(ho, "head", h);
            cJSON_AddNumberToObject(ho, "used_components", u);
            cJSON_AddNumberToObject(ho, "usage_entropy", e);
            cJSON_AddNumberToObject(ho, "nmi", n);
            const double *cnt = ra->counts + ((size_t)l * ra->H + h) * ra->Kc;
            cJSON *comps = cJSON_AddArrayToObject(ho, "components");
            for (int k = 0; k < ra->kc[l]; k++) {
                cJSON *co = cJSON_CreateObject();
                cJSON_AddNumberToObject(co, "k", k);
                cJSON_AddNumberToObject(co, "count", cnt[k]);
                cJSON_AddNumberToObject(co, "share", ra->n > 0 ? cnt[k] / ra->n : 0);
                const double *tab = ra->table + (((size_t)l * ra->H + h) * ra->Kc + k) * ra->ncat;
                cJSON *cc = cJSON_AddObjectToObject(co, "categories");
                for (int c = 0; c < ra->ncat; c++) cJSON_AddNumberToObject(cc, ra->cat_names[c], tab[c]);
                cJSON *tt = cJSON_AddArrayToObject(co, "top_tokens");
                int nt = cnt[k] > 0 ? top_tokens(ra, l, h, k, top, tp, work, touched) : 0;
                for (int i = 0; i < nt; i++) {
                    cJSON *t = cJSON_CreateObject();
                    cJSON_AddNumberToObject(t, "id", tp[i].tok);
                    if (tok_text && tok_text[tp[i].tok]) { /* a byte-level token may be part of a character: JSON needs UTF-8 */
                        char *u = utf8_sanitize(tok_text[tp[i].tok], strlen(tok_text[tp[i].tok]));
                        cJSON_AddStringToObject(t, "text", u);
                        free(u);
                    }
                    cJSON_AddNumberToObject(t, "count", (double)tp[i].count);
                    cJSON_AddItemToArray(tt, t);
                }
                cJSON_AddItemToArray(comps, co);
            }
            cJSON_AddItemToArray(heads, ho);
        }
        cJSON_AddNumberToObject(lo, "used_components", su / ra->H);
        cJSON_AddNumberToObject(lo, "usage_entropy", se / ra->H);
        cJSON_AddNumberToObject(lo, "nmi", sn / ra->H);
        cJSON_AddItemToObject(lo, "heads", heads);
        cJSON_AddItemToArray(layers, lo);
    }
    free(work);
    free(touched);
    free(tp);
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    return s;
}

/* A token's text for the report: control bytes, and bytes of a token that is not valid
 * UTF-8 on its own (a piece of a multi-byte character), as \xNN. */
static void print_token(FILE *f, const char *t) {
    int valid = 1;
    for (const unsigned char *c = (const unsigned char *)t; *c && valid;) {
        int n = *c < 0x80 ? 0 : (*c & 0xe0) == 0xc0 ? 1 : (*c & 0xf0) == 0xe0 ? 2 : (*c & 0xf8) == 0xf0 ? 3 : -1;
        if (n < 0) valid = 0;
        c++;
        for (int k = 0; k < n && valid; k++, c++) valid = (*c & 0xc0) == 0x80;
    }
    for (const unsigned char *c = (const unsigned char *)t; *c; c++)
        if (*c < 0x20 || (*c >= 0x80 && !valid)) fprintf(f, "\\x%02x", *c);
        else fputc(*c, f);
}

void ra_report(const RouteAnalysis *ra, const int *layer_index, const char *const *tok_text, FILE *f) {
    double pu, pe, pn;
    ra_pooled(ra, &pu, &pe, &pn);
    if (uniform_kc(ra))
        fprintf(f, "routing analysis: %ld tokens, %d GMA layer(s) x %d heads, Kc = %d\n", ra->n, ra->L, ra->H, ra->Kc);
    else
        fprintf(f, "routing analysis: %ld tokens, %d GMA layer(s) x %d heads, Kc per layer (up to %d)\n", ra->n, ra->L,
                ra->H, ra->Kc);
    fprintf(f, "%-8s %18s %15s %8s\n", "layer", "used components", "usage entropy", "NMI");
    for (int l = 0; l < ra->L; l++) {
        double su = 0, se = 0, sn = 0;
        for (int h = 0; h < ra->H; h++) {
            double u, e, n;
            head_figures(ra, l, h, &u, &e, &n);
            su += u, se += e, sn += n;
        }
        fprintf(f, "%-8d %11.1f of %-3d %15.3f %8.3f\n", layer_index[l], su / ra->H, ra->kc[l], se / ra->H, sn / ra->H);
    }
    fprintf(f, "%-8s %11.1f of %-3d %15.3f %8.3f\n", "pooled", pu, ra->Kc, pe, pn);
    fprintf(f, "%-8s %11d of %-3d %15.3f %8.3f\n", "paper", 104, 128, 0.933, 0.244);
    /* the five busiest components of the first GMA layer's head 0 */
    if (ra->L > 0 && ra->n > 0) {
        const double *cnt = ra->counts;
        int order[5], no = 0;
        for (int r = 0; r < 5 && r < ra->Kc; r++) {
            int best = -1;
            for (int k = 0; k < ra->Kc; k++) {
                int taken = 0;
                for (int j = 0; j < no; j++) taken |= order[j] == k;
                if (!taken && (best < 0 || cnt[k] > cnt[best])) best = k;
            }
            if (best >= 0 && cnt[best] > 0) order[no++] = best;
        }
        long *work = xcalloc(ra->V > 0 ? ra->V : 1, sizeof(long));
        int32_t *touched = xmalloc(sizeof(int32_t) * (ra->V > 0 ? ra->V : 1));
        Pair tp[8];
        fprintf(f, "busiest components of layer %d head 0 (share: most frequent tokens)\n", layer_index[0]);
        for (int j = 0; j < no; j++) {
            int k = order[j];
            fprintf(f, "  k=%-4d %5.1f%%:", k, 100 * cnt[k] / ra->n);
            int nt = top_tokens(ra, 0, 0, k, 8, tp, work, touched);
            for (int i = 0; i < nt; i++) {
                if (tok_text && tok_text[tp[i].tok]) {
                    fprintf(f, " \"");
                    print_token(f, tok_text[tp[i].tok]);
                    fprintf(f, "\"(%ld)", tp[i].count);
                }
                else fprintf(f, " #%d(%ld)", tp[i].tok, tp[i].count);
            }
            fprintf(f, "\n");
        }
        free(work);
        free(touched);
    }
}
