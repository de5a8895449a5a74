/* config.c: the configuration's schema engine: the registered sections (every module's
 * rows, see config.h), key types (enums parsed to their index), JSON loading, `--set`
 * overrides, validation through the sections' hooks, the resolved JSON dump and the
 * Markdown reference. It holds no key of its own. */
#include "core/config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/strdist.h"

static const CfgRegistry *g_reg;
static int g_slot[CFG_MAX_SECTIONS * 4]; /* each section's storage slot (-1: rows over Config itself) */

void cfg_register(const CfgRegistry *r) {
    int stored = 0;
    if (r->n_sections > (int)(sizeof g_slot / sizeof g_slot[0])) {
        fprintf(stderr, "gma: %d configuration sections, too many for the registry\n", r->n_sections);
        abort();
    }
    for (int i = 0; i < r->n_sections; i++) {
        const CfgSection *s = r->sections[i];
        g_slot[i] = s->name ? stored++ : -1;
        if (s->name && s->size > CFG_SECTION_BYTES) {
            fprintf(stderr, "gma: configuration section %s needs %zu bytes, more than CFG_SECTION_BYTES = %d\n",
                    s->name, s->size, CFG_SECTION_BYTES);
            abort();
        }
    }
    if (stored > CFG_MAX_SECTIONS) {
        fprintf(stderr, "gma: %d configuration sections, more than CFG_MAX_SECTIONS = %d\n", stored, CFG_MAX_SECTIONS);
        abort();
    }
    g_reg = r;
}

static const CfgRegistry *reg(void) {
    if (!g_reg) {
        fprintf(stderr, "gma: the configuration is used before its sections are installed (config_register_all)\n");
        abort();
    }
    return g_reg;
}

static int section_index(const char *name) {
    const CfgRegistry *r = reg();
    for (int i = 0; i < r->n_sections; i++)
        if (r->sections[i]->name && !strcmp(r->sections[i]->name, name)) return g_slot[i];
    return -1;
}

const void *cfg_section(const Config *c, const char *name) {
    int i = section_index(name);
    return i < 0 ? NULL : c->section[i];
}

void *cfg_section_mut(Config *c, const char *name) {
    int i = section_index(name);
    return i < 0 ? NULL : c->section[i];
}

static int section_slot(const CfgSection *s) {
    const CfgRegistry *r = reg();
    for (int i = 0; i < r->n_sections; i++)
        if (r->sections[i] == s) return g_slot[i];
    return -1;
}

const void *cfg_section_of(const Config *c, const CfgSection *s) {
    int i = section_slot(s);
    return i < 0 ? NULL : c->section[i];
}

void *cfg_section_of_mut(Config *c, const CfgSection *s) {
    int i = section_slot(s);
    return i < 0 ? NULL : c->section[i];
}

/* A key resolved to its row and where its struct starts in Config. */
typedef struct Key {
    const CfgKey *k;
    size_t base;    /* 0 for rows over Config, the section's storage for stored sections */
    char full[128]; /* dotted path */
} Key;

static void key_of(Key *out, int si, int j) {
    const CfgSection *s = reg()->sections[si];
    out->k = &s->keys[j];
    if (!s->name) {
        out->base = 0;
        snprintf(out->full, sizeof out->full, "%s", s->keys[j].key);
        return;
    }
    out->base = offsetof(Config, section) + (size_t)g_slot[si] * CFG_SECTION_BYTES;
    snprintf(out->full, sizeof out->full, "%s.%s", s->prefix ? s->prefix : s->name, s->keys[j].key);
}

/* Every key in reference order: the sections' rows in registration order. */
static size_t n_keys(void) {
    size_t n = 0;
    for (int i = 0; i < reg()->n_sections; i++) n += (size_t)reg()->sections[i]->n_keys;
    return n;
}

static void key_at(size_t i, Key *out) {
    for (int s = 0; s < reg()->n_sections; s++) {
        size_t n = (size_t)reg()->sections[s]->n_keys;
        if (i < n) return key_of(out, s, (int)i);
        i -= n;
    }
    abort();
}

static int find_key(const char *key, Key *out) {
    for (size_t i = 0, n = n_keys(); i < n; i++) {
        key_at(i, out);
        if (!strcmp(out->full, key)) return 1;
    }
    return 0;
}

static int is_prefix_of_some_key(const char *prefix) {
    size_t n = strlen(prefix);
    Key k;
    for (size_t i = 0, nk = n_keys(); i < nk; i++) {
        key_at(i, &k);
        if (strncmp(k.full, prefix, n) == 0 && k.full[n] == '.') return 1;
    }
    return 0;
}

/* "SRC: unknown key KEY", with the nearest key when one is a near miss (strdist.h) */
static int unknown_key(const char *src, const char *key) {
    char near[128] = "";
    int best = 3;
    Key k;
    for (size_t i = 0, nk = n_keys(); i < nk; i++) {
        key_at(i, &k);
        int d = gma_edit_distance(key, k.full, 2);
        if (d < best && gma_near_miss(key, k.full)) best = d, snprintf(near, sizeof near, "%s", k.full);
    }
    if (near[0]) return gma_errorf("%s: unknown key %s (did you mean %s?)", src, gma_quote(key), near);
    return gma_errorf("%s: unknown key %s", src, gma_quote(key));
}

#define AT(cfg, key) ((char *)(cfg) + (key)->base + (key)->k->off)
#define AT_C(cfg, key) ((const char *)(cfg) + (key)->base + (key)->k->off)

static int in_choices(const char *v, const char *choices) {
    size_t n = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

/* NUL_MARK: what cfg_load_text puts for a \u0000 escape (cJSON would end the string there):
 * the overlong two-byte form of NUL, which no valid UTF-8 holds */
#define NUL_MARK "\xC0\x80"

/* A string value is UTF-8 without NUL (it is copied into config.json, summary.json and the
 * checkpoints' metadata, which JSON readers must be able to read back in full). */
static int check_text(const char *v, const char *src, const char *key) {
    const char *nul = strstr(v, NUL_MARK);
    if (nul) return gma_errorf("%s: key %s: the value holds a NUL character (\\u0000) at byte %d", src, key, (int)(nul - v));
    long bad = gma_utf8_invalid(v, strlen(v));
    if (bad >= 0) return gma_errorf("%s: key %s: the value is not valid UTF-8 (byte %ld)", src, key, bad);
    return 0;
}

static int set_str(Config *c, const Key *k, const char *v, const char *src) {
    if (check_text(v, src, k->full) != 0) return -1;
    if (k->k->choices && !in_choices(v, k->k->choices))
        return gma_errorf("%s: key %s: \"%s\" is not one of %s", src, k->full, gma_quote(v), k->k->choices);
    if (strlen(v) >= k->k->size)
        return gma_errorf("%s: key %s: value longer than %zu characters", src, k->full, k->k->size - 1);
    snprintf(AT(c, k), k->k->size, "%s", v);
    return 0;
}

/* The index of v among choices "a|b|c", -1 if none. */
static int choice_index(const char *v, const char *choices) {
    size_t n = strlen(v);
    int i = 0;
    for (const char *p = choices;; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0) return i;
        if (!bar) return -1;
        p = bar + 1;
    }
}

static int set_enum(Config *c, const Key *k, const char *v, const char *src) {
    int i = choice_index(v, k->k->choices);
    if (i < 0) return gma_errorf("%s: key %s: \"%s\" is not one of %s", src, k->full, v, k->k->choices);
    *(int *)AT(c, k) = i;
    return 0;
}

/* Choice i of "a|b|c" into buf. */
static const char *choice_name(const char *choices, int i, char *buf, size_t n) {
    const char *p = choices;
    for (; i > 0 && p; i--) p = strchr(p, '|'), p = p ? p + 1 : NULL;
    if (!p) p = "";
    const char *bar = strchr(p, '|');
    snprintf(buf, n, "%.*s", bar ? (int)(bar - p) : (int)strlen(p), p);
    return buf;
}

static int set_num(Config *c, const Key *k, double v, const char *src) {
    if (k->k->type == CFGT_INT && v != floor(v)) return gma_errorf("%s: key %s: expected an integer, got %g", src, k->full, v);
    if (!(v >= k->k->lo && v <= k->k->hi)) /* NaN fails too */
        return gma_errorf("%s: key %s: %g is out of range [%g, %g]", src, k->full, v, k->k->lo, k->k->hi);
    if (k->k->type == CFGT_INT)
        *(int *)AT(c, k) = (int)v;
    else
        *(double *)AT(c, k) = v;
    return 0;
}

/* A CFGT_INT key with words (its row's choices): word i of "a|b" stored as -1 - i. */
static int set_int_word(Config *c, const Key *k, const char *v, const char *src) {
    int i = choice_index(v, k->k->choices);
    if (i < 0)
        return gma_errorf("%s: key %s: \"%s\" is not a number in [%.0f, %.0f] or one of %s", src, k->full, gma_quote(v), k->k->lo,
                          k->k->hi, k->k->choices);
    *(int *)AT(c, k) = -1 - i;
    return 0;
}

/* The registry's choices of CFGT_CHOICES key k; aborts when it supplies none (a
 * programming error: the key's registry is not installed). */
static const CfgChoiceList *choice_list(const Key *k) {
    const CfgRegistry *r = reg();
    for (int i = 0; i < r->n_lists; i++)
        if (!strcmp(r->lists[i].key, k->full)) return &r->lists[i];
    fprintf(stderr, "gma: the registry supplies no choices for key %s\n", k->full);
    abort();
}

/* A CFGT_CHOICES value from n names: each valid text among the registry's choices */
static int set_choices(Config *c, const Key *k, const char **names, int n, const char *src) {
    const CfgChoiceList *cl = choice_list(k);
    if (n < 1 || n > CFG_MAX_LAYERS) return gma_errorf("%s: key %s: expected 1 to %d names", src, k->full, CFG_MAX_LAYERS);
    for (int i = 0; i < n; i++) {
        if (check_text(names[i], src, k->full) != 0) return -1;
        if (!in_choices(names[i], cl->choices) || strlen(names[i]) >= CFG_CHOICE_LEN)
            return gma_errorf("%s: key %s: unknown %s \"%s\" (known: %s)", src, k->full, cl->what, gma_quote(names[i]),
                              cl->choices);
    }
    CfgChoices *v = (CfgChoices *)AT(c, k);
    memset(v, 0, sizeof *v); /* one value, one bit pattern */
    for (int i = 0; i < n; i++) {
        snprintf(v->name[i], sizeof v->name[i], "%s", names[i]);
        v->id[i] = (unsigned char)choice_index(names[i], cl->choices);
    }
    v->n = n;
    return 0;
}

/* A CFGT_STRLIST value from n items: each non-empty, without commas, valid text; joined with
 * commas into the key's buffer */
static int set_list(Config *c, const Key *k, const char *const *items, int n, const char *src) {
    char *dst = AT(c, k);
    size_t len = 0, cap = k->k->size;
    char *tmp = xmalloc(cap);
    tmp[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t il = strlen(items[i]);
        int rc = check_text(items[i], src, k->full);
        if (!rc && (!il || strchr(items[i], ',')))
            rc = gma_errorf("%s: key %s: element %d %s", src, k->full, i, il ? "holds a comma" : "is empty");
        if (!rc && len + il + (i > 0) >= cap)
            rc = gma_errorf("%s: key %s: the list is longer than %zu characters", src, k->full, cap - 1);
        if (rc) {
            free(tmp);
            return -1;
        }
        len += (size_t)snprintf(tmp + len, cap - len, "%s%s", i ? "," : "", items[i]);
    }
    memcpy(dst, tmp, len + 1);
    free(tmp);
    return 0;
}

/* A CFGT_STRLIST value from a JSON list of strings. */
static int set_list_json(Config *c, const Key *k, const cJSON *v, const char *src) {
    if (!cJSON_IsArray(v)) return gma_errorf("%s: key %s: expected a list of strings", src, k->full);
    int n = cJSON_GetArraySize(v), i = 0;
    const char **items = xcalloc((size_t)n + 1, sizeof *items);
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsString(e)) {
            free(items);
            return gma_errorf("%s: key %s: element %d is not a string", src, k->full, i);
        }
        items[i++] = e->valuestring;
    }
    int rc = set_list(c, k, items, n, src);
    free(items);
    return rc;
}

/* A CFGT_STRLIST value from command-line text: a JSON list, or items separated by commas
 * ("" is the empty list). */
static int set_list_text(Config *c, const Key *k, const char *v, const char *src) {
    if (v[0] == '[') {
        cJSON *j = cJSON_Parse(v);
        if (!j) return gma_errorf("%s: key %s: malformed list %s", src, k->full, gma_quote(v));
        int rc = set_list_json(c, k, j, src);
        cJSON_Delete(j);
        return rc;
    }
    char *buf = xstrdup(v);
    int n = 0, cap = 1;
    for (const char *q = v; *q; q++) cap += *q == ',';
    const char **items = xcalloc((size_t)cap, sizeof *items);
    for (char *q = buf, *comma; v[0]; q = comma + 1) {
        items[n++] = q;
        if (!(comma = strchr(q, ','))) break;
        *comma = 0;
    }
    int rc = set_list(c, k, items, n, src);
    free(items);
    free(buf);
    return rc;
}

int cfg_list_next(const char **p, char *buf, size_t n) {
    if (!*p || !**p) return 0;
    const char *comma = strchr(*p, ',');
    size_t len = comma ? (size_t)(comma - *p) : strlen(*p);
    snprintf(buf, n, "%.*s", (int)len, *p);
    *p = comma ? comma + 1 : *p + len;
    return 1;
}

int cfg_list_count(const char *list) {
    int n = 0;
    char item[CFG_STR];
    for (const char *p = list; cfg_list_next(&p, item, sizeof item);) n++;
    return n;
}

/* A CFGT_INTS value: n (1..CFG_MAX_LAYERS) integers, each in the row's range; element i
 * is named in the message when the value is a list. Nothing changes on an error. */
static int set_ints(Config *c, const Key *k, const double *v, int n, const char *src) {
    if (n < 1 || n > CFG_MAX_LAYERS) return gma_errorf("%s: key %s: expected 1 to %d numbers", src, k->full, CFG_MAX_LAYERS);
    for (int i = 0; i < n; i++) {
        char at[32] = "";
        if (n > 1) snprintf(at, sizeof at, " element %d:", i);
        if (v[i] != floor(v[i])) return gma_errorf("%s: key %s:%s expected an integer, got %g", src, k->full, at, v[i]);
        if (!(v[i] >= k->k->lo && v[i] <= k->k->hi))
            return gma_errorf("%s: key %s:%s %g is out of range [%g, %g]", src, k->full, at, v[i], k->k->lo, k->k->hi);
    }
    CfgInts *out = (CfgInts *)AT(c, k);
    out->n = n;
    for (int i = 0; i < n; i++) out->v[i] = (int)v[i];
    return 0;
}

/* Set key from a cJSON value. */
static int set_json(Config *c, const Key *k, const cJSON *v, const char *src) {
    switch (k->k->type) {
    case CFGT_INT:
    case CFGT_REAL:
        if (k->k->type == CFGT_INT && k->k->choices && cJSON_IsString(v)) return set_int_word(c, k, v->valuestring, src);
        if (!cJSON_IsNumber(v))
            return k->k->choices ? gma_errorf("%s: key %s: expected a number or one of %s", src, k->full, k->k->choices)
                                 : gma_errorf("%s: key %s: expected a number", src, k->full);
        return set_num(c, k, v->valuedouble, src);
    case CFGT_BOOL:
        if (!cJSON_IsBool(v)) return gma_errorf("%s: key %s: expected true or false", src, k->full);
        *(int *)AT(c, k) = cJSON_IsTrue(v) ? 1 : 0;
        return 0;
    case CFGT_STR:
        if (!cJSON_IsString(v)) return gma_errorf("%s: key %s: expected a string", src, k->full);
        return set_str(c, k, v->valuestring, src);
    case CFGT_ENUM:
        if (!cJSON_IsString(v)) return gma_errorf("%s: key %s: expected a string", src, k->full);
        return set_enum(c, k, v->valuestring, src);
    case CFGT_CHOICES: {
        if (cJSON_IsString(v)) {
            const char *one = v->valuestring;
            return set_choices(c, k, &one, 1, src);
        }
        if (!cJSON_IsArray(v)) return gma_errorf("%s: key %s: expected a string or a list of strings", src, k->full);
        const char *names[CFG_MAX_LAYERS];
        int n = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, v) {
            if (!cJSON_IsString(e)) return gma_errorf("%s: key %s: element %d is not a string", src, k->full, n);
            if (n >= CFG_MAX_LAYERS) return gma_errorf("%s: key %s: more than %d names", src, k->full, CFG_MAX_LAYERS);
            names[n++] = e->valuestring;
        }
        return set_choices(c, k, names, n, src);
    }
    case CFGT_STRLIST:
        return set_list_json(c, k, v, src);
    case CFGT_INTS: {
        if (cJSON_IsNumber(v)) return set_ints(c, k, &v->valuedouble, 1, src);
        if (!cJSON_IsArray(v)) return gma_errorf("%s: key %s: expected a number or a list of numbers", src, k->full);
        double vals[CFG_MAX_LAYERS];
        int n = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, v) {
            if (!cJSON_IsNumber(e)) return gma_errorf("%s: key %s: element %d is not a number", src, k->full, n);
            if (n >= CFG_MAX_LAYERS) return gma_errorf("%s: key %s: more than %d entries", src, k->full, CFG_MAX_LAYERS);
            vals[n++] = e->valuedouble;
        }
        return set_ints(c, k, vals, n, src);
    }
    }
    return -1;
}

/* v is a number as JSON writes one: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? (no hex,
 * inf, nan, leading '+' or spaces, which strtod would take). */
static int is_json_number(const char *v) {
    const char *p = v;
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else return 0;
    if (*p == '.') {
        if (!(*++p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    return *p == 0;
}

/* Set key from command-line text. */
static int set_text(Config *c, const Key *k, const char *v, const char *src) {
    char *end;
    switch (k->k->type) {
    case CFGT_INT:
    case CFGT_REAL: {
        if (k->k->type == CFGT_INT && k->k->choices && !is_json_number(v)) return set_int_word(c, k, v, src);
        errno = 0;
        double d = strtod(v, &end);
        if (!is_json_number(v) || end == v || *end || errno)
            return gma_errorf("%s: key %s: \"%s\" is not a number", src, k->full, gma_quote(v));
        return set_num(c, k, d, src);
    }
    case CFGT_BOOL:
        if (!strcmp(v, "true") || !strcmp(v, "1")) *(int *)AT(c, k) = 1;
        else if (!strcmp(v, "false") || !strcmp(v, "0")) *(int *)AT(c, k) = 0;
        else return gma_errorf("%s: key %s: expected true or false, got \"%s\"", src, k->full, gma_quote(v));
        return 0;
    case CFGT_STR:
        return set_str(c, k, v, src);
    case CFGT_ENUM:
        return set_enum(c, k, v, src);
    case CFGT_CHOICES: {
        if (v[0] == '[') {
            cJSON *j = cJSON_Parse(v);
            if (!j) return gma_errorf("%s: key %s: malformed list %s", src, k->full, gma_quote(v));
            int rc = set_json(c, k, j, src);
            cJSON_Delete(j);
            return rc;
        }
        char buf[CFG_MAX_LAYERS * 17];
        snprintf(buf, sizeof buf, "%s", v);
        const char *names[CFG_MAX_LAYERS];
        int n = 0;
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",", &save); tok && n < CFG_MAX_LAYERS; tok = strtok_r(NULL, ",", &save)) names[n++] = tok;
        return set_choices(c, k, names, n, src);
    }
    case CFGT_STRLIST:
        return set_list_text(c, k, v, src);
    case CFGT_INTS: {
        if (v[0] == '[') {
            cJSON *j = cJSON_Parse(v);
            if (!j || !cJSON_IsArray(j)) {
                cJSON_Delete(j);
                return gma_errorf("%s: key %s: malformed list %s", src, k->full, gma_quote(v));
            }
            int rc = set_json(c, k, j, src);
            cJSON_Delete(j);
            return rc;
        }
        double vals[CFG_MAX_LAYERS];
        int n = 0;
        for (const char *p = v;; n++) { /* "8" or "4,8": JSON numbers between commas */
            const char *comma = strchr(p, ',');
            char one[64];
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            if (n >= CFG_MAX_LAYERS) return gma_errorf("%s: key %s: more than %d entries", src, k->full, CFG_MAX_LAYERS);
            if (len >= sizeof one) return gma_errorf("%s: key %s: \"%s\" is not a number", src, k->full, gma_quote(v));
            memcpy(one, p, len);
            one[len] = 0;
            errno = 0;
            vals[n] = strtod(one, &end);
            if (!is_json_number(one) || end == one || *end || errno)
                return gma_errorf("%s: key %s: \"%s\" is not a number or a list of numbers", src, k->full, gma_quote(v));
            if (!comma) break;
            p = comma + 1;
        }
        return set_ints(c, k, vals, n + 1, src);
    }
    }
    return -1;
}

void cfg_defaults(Config *c) {
    memset(c, 0, sizeof *c);
    Key k;
    for (size_t i = 0, n = n_keys(); i < n; i++) {
        key_at(i, &k);
        if (set_text(c, &k, k.k->def, "defaults") != 0) {
            fprintf(stderr, "gma: bad schema default for %s: %s\n", k.full, gma_error());
            abort();
        }
    }
}

double cfg_num(const Config *c, const char *key) {
    Key k;
    if (!find_key(key, &k) || k.k->type == CFGT_STR || k.k->type == CFGT_CHOICES || k.k->type == CFGT_ENUM ||
        k.k->type == CFGT_STRLIST) {
        fprintf(stderr, "gma: cfg_num: %s is not a numeric configuration key\n", key);
        abort();
    }
    if (k.k->type == CFGT_INTS) {
        const CfgInts *v = (const CfgInts *)AT_C(c, &k);
        int top = v->v[0];
        for (int i = 1; i < v->n; i++) top = GMA_MAX(top, v->v[i]);
        return top;
    }
    return k.k->type == CFGT_REAL ? *(const double *)AT_C(c, &k) : *(const int *)AT_C(c, &k);
}

/* 1 if an earlier member of the same object has its name (JSON allows repeats; a config
 * that gives a key twice is refused rather than one of the values silently winning). */
static int repeated_member(const cJSON *obj, const cJSON *it) {
    for (const cJSON *e = obj->child; e && e != it; e = e->next)
        if (!strcmp(e->string, it->string)) return 1;
    return 0;
}

static const char *json_kind(const cJSON *v) {
    return cJSON_IsNumber(v) ? "a number" : cJSON_IsString(v) ? "a string" : cJSON_IsBool(v) ? "true or false"
           : cJSON_IsArray(v) ? "a list" : cJSON_IsNull(v) ? "null" : "a value";
}

static int apply_object(Config *c, const cJSON *obj, const char *prefix, const char *src) {
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        char key[256];
        if (prefix[0]) snprintf(key, sizeof key, "%s.%s", prefix, it->string);
        else snprintf(key, sizeof key, "%s", it->string);
        if (repeated_member(obj, it)) return gma_errorf("%s: key %s is given twice", src, key);
        Key k;
        if (find_key(key, &k)) {
            if (set_json(c, &k, it, src) != 0) return -1;
        } else if (is_prefix_of_some_key(key)) { /* a section: its keys in an object */
            if (!cJSON_IsObject(it))
                return gma_errorf("%s: key %s: expected an object (the section's keys), got %s", src, key, json_kind(it));
            if (apply_object(c, it, key, src) != 0) return -1;
        } else {
            return unknown_key(src, key);
        }
    }
    return 0;
}

/* The \u0000 escapes inside strings of JSON text, each replaced by NUL_MARK (a malloc'd copy),
 * or NULL when there is none. */
static char *mark_nul_escapes(const char *text) {
    char *out = NULL;
    size_t o = 0;
    int in_str = 0;
    for (const char *p = text; *p; p++) {
        int nul = in_str && !strncmp(p, "\\u0000", 6);
        if (nul && !out) {
            out = xmalloc(strlen(text) + 1);
            o = (size_t)(p - text);
            memcpy(out, text, o);
        }
        if (nul) {
            memcpy(out + o, NUL_MARK, 2), o += 2, p += 5;
            continue;
        }
        if (in_str && *p == '\\' && p[1]) { /* an escape: its next character is no quote */
            if (out) out[o++] = *p;
            p++;
        } else if (*p == '"') in_str = !in_str;
        if (out) out[o++] = *p;
    }
    if (out) out[o] = 0;
    return out;
}

/* cJSON's depth limit reached before `at` (objects and lists open outside strings) */
static int too_deep(const char *text, const char *at) {
    int depth = 0, in_str = 0;
    for (const char *p = text; p < at && *p; p++) {
        if (in_str && *p == '\\' && p[1]) p++;
        else if (*p == '"') in_str = !in_str;
        else if (!in_str && (*p == '{' || *p == '[')) {
            if (++depth > CJSON_NESTING_LIMIT) return 1;
        } else if (!in_str && (*p == '}' || *p == ']')) depth--;
    }
    return 0;
}

int cfg_load_text(Config *c, const char *text, const char *source) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        int line = 1, col = 1;
        const char *at = end ? end : text;
        for (const char *p = text; p < at && *p; p++) {
            if (*p == '\n') line++, col = 1;
            else col++;
        }
        if (too_deep(text, at + 1))
            return gma_errorf("%s: JSON nested deeper than %d levels at line %d, column %d", source, CJSON_NESTING_LIMIT, line,
                              col);
        return gma_errorf("%s: malformed JSON at line %d, column %d", source, line, col);
    }
    char *marked = mark_nul_escapes(text); /* parsed again so that a \u0000 does not cut its string short */
    if (marked) {
        cJSON_Delete(root);
        root = cJSON_ParseWithOpts(marked, &end, 1);
        free(marked);
        if (!root) return gma_errorf("%s: malformed JSON", source);
    }
    int rc = 0;
    if (!cJSON_IsObject(root)) rc = gma_errorf("%s: the configuration must be a JSON object", source);
    else rc = apply_object(c, root, "", source);
    cJSON_Delete(root);
    return rc;
}

int cfg_load_file(Config *c, const char *path) {
    char *text = gma_read_file(path, NULL);
    if (!text) return -1;
    int rc = cfg_load_text(c, text, path);
    free(text);
    return rc;
}

int cfg_set(Config *c, const char *a) { return cfg_set_from(c, a, "--set"); }

int cfg_set_from(Config *c, const char *a, const char *src) {
    const char *eq = strchr(a, '=');
    if (!eq) return gma_errorf("%s %s: expected key=value", src, a);
    char key[256];
    snprintf(key, sizeof key, "%.*s", (int)(eq - a), a);
    Key k;
    if (!find_key(key, &k)) return unknown_key(src, key);
    return set_text(c, &k, eq + 1, src);
}

void cfg_blame(const char *file, const char *const *sets, int n_sets) {
    const char *msg = gma_error();
    for (int i = n_sets - 1; i >= 0; i--) {
        const char *eq = strchr(sets[i], '=');
        size_t kl = eq ? (size_t)(eq - sets[i]) : strlen(sets[i]);
        for (const char *p = strstr(msg, " "); kl && p; p = strstr(p + 1, " ")) {
            /* the key as a whole word of the message: " model.d_model:" but not " model.d_model_x" */
            char after = p[1 + kl];
            if (!strncmp(p + 1, sets[i], kl) && !(after == '.' || after == '_' || (after >= 'a' && after <= 'z'))) {
                gma_error_prefix("--set %s", sets[i]);
                return;
            }
        }
    }
    gma_error_prefix("%s", file);
}

const char *cfg_enum_name(const Config *c, const char *key) {
    static _Thread_local char ring[8][64];
    static _Thread_local int next;
    Key k;
    if (!find_key(key, &k) || k.k->type != CFGT_ENUM) {
        fprintf(stderr, "gma: cfg_enum_name: %s is not a choice key\n", key);
        abort();
    }
    char *buf = ring[next++ % 8];
    return choice_name(k.k->choices, *(const int *)AT_C(c, &k), buf, sizeof ring[0]);
}

int cfg_validate(const Config *c) {
    const CfgRegistry *r = reg();
    for (int i = 0; i < r->n_sections; i++)
        if (r->sections[i]->validate && r->sections[i]->validate(c) != 0) return -1;
    return 0;
}

char *cfg_to_json(const Config *c) {
    cJSON *root = cJSON_CreateObject();
    Key key;
    for (size_t i = 0, nk = n_keys(); i < nk; i++) {
        key_at(i, &key);
        const CfgKey *k = key.k;
        /* walk/create the parent objects */
        cJSON *parent = root;
        char path[256];
        snprintf(path, sizeof path, "%s", key.full);
        char *leaf = path, *dot;
        while ((dot = strchr(leaf, '.'))) {
            *dot = 0;
            cJSON *child = cJSON_GetObjectItemCaseSensitive(parent, leaf);
            if (!child) child = cJSON_AddObjectToObject(parent, leaf);
            parent = child;
            leaf = dot + 1;
        }
        const char *p = AT_C(c, &key);
        switch (k->type) {
        case CFGT_INT:
            if (k->choices && *(const int *)p < 0) { /* a word (set_int_word) */
                char name[64];
                cJSON_AddStringToObject(parent, leaf, choice_name(k->choices, -1 - *(const int *)p, name, sizeof name));
            } else
                cJSON_AddNumberToObject(parent, leaf, *(const int *)p);
            break;
        case CFGT_REAL: cJSON_AddNumberToObject(parent, leaf, *(const double *)p); break;
        case CFGT_BOOL: cJSON_AddBoolToObject(parent, leaf, *(const int *)p); break;
        case CFGT_STR: cJSON_AddStringToObject(parent, leaf, p); break;
        case CFGT_ENUM: {
            char name[64];
            cJSON_AddStringToObject(parent, leaf, choice_name(k->choices, *(const int *)p, name, sizeof name));
            break;
        }
        case CFGT_CHOICES: {
            const CfgChoices *v = (const CfgChoices *)p;
            if (v->n == 1) cJSON_AddStringToObject(parent, leaf, v->name[0]);
            else {
                cJSON *arr = cJSON_AddArrayToObject(parent, leaf);
                for (int l = 0; l < v->n; l++) cJSON_AddItemToArray(arr, cJSON_CreateString(v->name[l]));
            }
            break;
        }
        case CFGT_STRLIST: {
            cJSON *arr = cJSON_AddArrayToObject(parent, leaf);
            char item[CFG_STR];
            for (const char *q = p; cfg_list_next(&q, item, sizeof item);) cJSON_AddItemToArray(arr, cJSON_CreateString(item));
            break;
        }
        case CFGT_INTS: {
            const CfgInts *v = (const CfgInts *)p;
            if (v->n == 1) cJSON_AddNumberToObject(parent, leaf, v->v[0]);
            else {
                cJSON *arr = cJSON_AddArrayToObject(parent, leaf);
                for (int i = 0; i < v->n; i++) cJSON_AddItemToArray(arr, cJSON_CreateNumber(v->v[i]));
            }
            break;
        }
        }
    }
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    return s;
}

void cfg_print_reference(FILE *f) {
    fprintf(f, "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n");
    static const char *tn[] = {"int", "number", "bool", "string", "string or list", "string", "list of strings", "int or list"};
    Key key;
    for (size_t i = 0, nk = n_keys(); i < nk; i++) {
        key_at(i, &key);
        const CfgKey *k = key.k;
        char allowed[256] = "", doc[512];
        snprintf(doc, sizeof doc, "%s", k->doc);
        if (k->choices && k->type == CFGT_INT) snprintf(allowed, sizeof allowed, "[%.0f, %.0f] or %s", k->lo, k->hi, k->choices);
        else if (k->choices) snprintf(allowed, sizeof allowed, "%s", k->choices);
        else if (k->type == CFGT_INT || k->type == CFGT_INTS) snprintf(allowed, sizeof allowed, "[%.0f, %.0f]", k->lo, k->hi);
        else if (k->type == CFGT_REAL) snprintf(allowed, sizeof allowed, "[%g, %g]", k->lo, k->hi);
        else if (k->type == CFGT_CHOICES) { /* the registry's names, also listed in the meaning */
            const char *names = choice_list(&key)->choices;
            snprintf(allowed, sizeof allowed, "%s", names);
            size_t n = strlen(doc);
            n += (size_t)snprintf(doc + n, sizeof doc - n, " (");
            for (const char *q = names; *q && n + 3 < sizeof doc; q++)
                n += (size_t)snprintf(doc + n, sizeof doc - n, *q == '|' ? ", " : "%c", *q);
            snprintf(doc + n, sizeof doc - n, ").");
        }
        for (char *q = allowed; *q; q++)
            if (*q == '|') *q = ',';
        fprintf(f, "| `%s` | %s | `%s` | %s | %s |\n", key.full, tn[k->type], k->def, allowed, doc);
    }
}

int cfg_keys_ending(const char *last, char *out, size_t cap) {
    int n = 0;
    size_t len = strlen(last);
    Key key;
    if (cap) out[0] = 0;
    for (size_t i = 0, nk = n_keys(); i < nk && len; i++) {
        key_at(i, &key);
        size_t fl = strlen(key.full);
        if (fl < len || strcmp(key.full + fl - len, last) || (fl > len && key.full[fl - len - 1] != '.')) continue;
        if (n++ == 0) snprintf(out, cap, "%s", key.full);
    }
    return n;
}
