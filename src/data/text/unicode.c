/* unicode.c: UTF-8 decoding, Unicode letter/number/space classes (tables generated into
 * unicode_tables.c) and the GPT-2 pre-tokeniser written by hand from its regular
 * expression, so it needs no regex engine and runs in one pass. */
#include "data/text/unicode.h"

#include <string.h>

#include "core/common.h"

extern const uint32_t unicode_letter_ranges[][2];
extern const size_t unicode_letter_ranges_len;
extern const uint32_t unicode_number_ranges[][2];
extern const size_t unicode_number_ranges_len;

size_t utf8_decode(const unsigned char *p, size_t n, int32_t *cp) {
    unsigned c = p[0];
    if (c < 0x80) {
        *cp = (int32_t)c;
        return 1;
    }
    size_t len;
    int32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) len = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, v = c & 0x07, min = 0x10000;
    else goto bad;
    if (n < len) goto bad;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) goto bad;
        v = v << 6 | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) goto bad;
    *cp = v;
    return len;
bad:
    *cp = -1;
    return 1;
}

char *utf8_sanitize(const char *t, size_t n) {
    char *o = xmalloc(3 * n + 1), *q = o;
    for (size_t i = 0; i < n;) {
        int32_t cp;
        size_t k = utf8_decode((const unsigned char *)t + i, n - i, &cp);
        if (cp <= 0) memcpy(q, "\xEF\xBF\xBD", 3), q += 3;
        else memcpy(q, t + i, k), q += k;
        i += k;
    }
    *q = 0;
    return o;
}

static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid][0]) hi = mid;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

int unicode_is_space(int32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

int unicode_class(int32_t cp) {
    if (cp < 0) return UCLASS_OTHER;
    if (cp < 0x80) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return UCLASS_LETTER;
        if (cp >= '0' && cp <= '9') return UCLASS_NUMBER;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return UCLASS_SPACE;
        return UCLASS_OTHER;
    }
    if (unicode_is_space(cp)) return UCLASS_SPACE;
    if (in_ranges(unicode_letter_ranges, unicode_letter_ranges_len, (uint32_t)cp)) return UCLASS_LETTER;
    if (in_ranges(unicode_number_ranges, unicode_number_ranges_len, (uint32_t)cp)) return UCLASS_NUMBER;
    return UCLASS_OTHER;
}

static inline int class_at(const unsigned char *t, size_t i, size_t len, size_t *clen) {
    unsigned c = t[i];
    if (c < 0x80) {
        *clen = 1;
        return unicode_class((int32_t)c);
    }
    int32_t cp;
    *clen = utf8_decode(t + i, len - i, &cp);
    return unicode_class(cp);
}

size_t gpt2_piece_len(const unsigned char *t, size_t i, size_t len) {
    size_t start = i, cl;
    if (t[i] == '\'' && i + 1 < len) {
        unsigned a = t[i + 1];
        if (a == 's' || a == 'd' || a == 'm' || a == 't') return 2;
        if (i + 2 < len) {
            unsigned b = t[i + 2];
            if ((a == 'l' && b == 'l') || (a == 'v' && b == 'e') || (a == 'r' && b == 'e')) return 3;
        }
    }
    int cls = class_at(t, i, len, &cl);
    if (t[i] == ' ' && i + 1 < len) {
        size_t cl2;
        int c2 = class_at(t, i + 1, len, &cl2);
        if (c2 != UCLASS_SPACE) {
            cls = c2;
            i += 1;
            cl = cl2;
        }
    }
    if (cls != UCLASS_SPACE) {
        i += cl;
        while (i < len && class_at(t, i, len, &cl) == cls) i += cl;
        return i - start;
    }
    /* whitespace run */
    size_t last = i;
    i += cl;
    while (i < len && class_at(t, i, len, &cl) == UCLASS_SPACE) {
        last = i;
        i += cl;
    }
    if (i == len) return i - start;
    if (last > start) return last - start; /* \s+(?!\S): leave the last space to the next piece */
    return i - start;
}
