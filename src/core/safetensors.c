/* safetensors.c: safetensors reader (mmap + validation) and streaming atomic writer. */
#include "core/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int st_write(const char *path, const StTensor *t, int n, const char *const *mk, const char *const *mv, int n_meta) {
    cJSON *h = cJSON_CreateObject();
    if (n_meta > 0) {
        cJSON *m = cJSON_AddObjectToObject(h, "__metadata__");
        for (int i = 0; i < n_meta; i++) cJSON_AddStringToObject(m, mk[i], mv[i]);
    }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_AddObjectToObject(h, t[i].name);
        cJSON_AddStringToObject(e, "dtype", "F32");
        cJSON *s = cJSON_AddArrayToObject(e, "shape");
        uint64_t numel = 1;
        for (int d = 0; d < t[i].ndim; d++) {
            cJSON_AddItemToArray(s, cJSON_CreateNumber((double)t[i].shape[d]));
            numel *= (uint64_t)t[i].shape[d];
        }
        cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        off += numel * 4;
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
    }
    char *js = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    size_t hl = strlen(js), padded = (hl + 7) & ~(size_t)7;
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(js);
        return gma_errorf("%s: cannot create: %s", tmp, strerror(errno));
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)padded >> (8 * i));
    int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(js, 1, hl, f) == hl;
    for (size_t i = hl; ok && i < padded; i++) ok = fputc(' ', f) != EOF;
    free(js);
    float buf[4096];
    for (int i = 0; ok && i < n; i++) {
        size_t numel = 1;
        for (int d = 0; d < t[i].ndim; d++) numel *= (size_t)t[i].shape[d];
        for (size_t j = 0; ok && j < numel; j += 4096) {
            size_t k = GMA_MIN((size_t)4096, numel - j);
            for (size_t q = 0; q < k; q++) buf[q] = (float)t[i].data[j + q];
            ok = fwrite(buf, 4, k, f) == k;
        }
    }
    if (ok) ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    int e = errno;
    if (fclose(f) != 0) ok = 0;
    if (!ok) {
        unlink(tmp);
        return gma_errorf("%s: write failed: %s", tmp, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        e = errno;
        unlink(tmp);
        return gma_errorf("%s: rename failed: %s", path, strerror(e));
    }
    return 0;
}

void st_close(StFile *f) {
    for (int i = 0; i < f->n; i++) free(f->e[i].name);
    for (int i = 0; i < f->n_meta; i++) free(f->mkeys[i]), free(f->mvals[i]);
    free(f->e);
    free(f->mkeys);
    free(f->mvals);
    if (f->map) munmap(f->map, f->len);
    memset(f, 0, sizeof *f);
}

int st_open(StFile *f, const char *path) {
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return gma_errorf("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return gma_errorf("%s: cannot stat: %s", path, strerror(errno));
    }
    if (st.st_size < 8) {
        close(fd);
        return gma_errorf("%s: truncated: %lld bytes, the header length at offset 0 needs 8", path, (long long)st.st_size);
    }
    f->len = (size_t)st.st_size;
    f->map = mmap(NULL, f->len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        return gma_errorf("%s: mmap failed: %s", path, strerror(errno));
    }
    const uint8_t *p = f->map;
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)p[i] << (8 * i);
    if (hl > (1u << 30) || hl > f->len - 8) {
        int rc = hl > (1u << 30)
                     ? gma_errorf("%s: header length %llu at offset 0 is over 1 GiB: not a safetensors file", path,
                                  (unsigned long long)hl)
                     : gma_errorf("%s: truncated: %zu bytes, the header needs %llu (8 + its length at offset 0)", path, f->len,
                                  (unsigned long long)hl + 8);
        st_close(f);
        return rc;
    }
    char *js = xmalloc(hl + 1);
    memcpy(js, p + 8, hl);
    js[hl] = 0;
    cJSON *h = cJSON_Parse(js);
    free(js);
    if (!h || !cJSON_IsObject(h)) {
        cJSON_Delete(h);
        st_close(f);
        return gma_errorf("%s: malformed JSON header (offset 8)", path);
    }
    size_t data0 = 8 + hl, dlen = f->len - data0;
    /* a file cut short (a download or copy stopped): the header promises data past its end */
    double need = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, h) {
        const cJSON *of = cJSON_GetObjectItemCaseSensitive(t, "data_offsets"), *oe = cJSON_GetArrayItem(of, 1);
        if (cJSON_IsArray(of) && cJSON_IsNumber(oe) && oe->valuedouble == floor(oe->valuedouble) && oe->valuedouble < 9e15)
            need = fmax(need, oe->valuedouble);
    }
    if (need > (double)dlen) {
        size_t have = f->len;
        cJSON_Delete(h);
        st_close(f);
        return gma_errorf("%s: truncated: %zu bytes, the header needs %.0f", path, have, (double)data0 + need);
    }
    int cap = cJSON_GetArraySize(h);
    f->e = xcalloc(cap + 1, sizeof(StEntry));
    int rc = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, h) {
        if (!strcmp(it->string, "__metadata__")) {
            if (!cJSON_IsObject(it) || f->mkeys) {
                rc = gma_errorf("%s: __metadata__ is %s (offset 8)", path, f->mkeys ? "given twice" : "not an object");
                break;
            }
            int nm = cJSON_GetArraySize(it);
            f->mkeys = xcalloc(nm + 1, sizeof(char *));
            f->mvals = xcalloc(nm + 1, sizeof(char *));
            const cJSON *m;
            cJSON_ArrayForEach(m, it) {
                if (!cJSON_IsString(m)) {
                    rc = gma_errorf("%s: metadata value %s is not a string", path, m->string);
                    break;
                }
                if (st_meta(f, m->string)) { /* JSON lets a key repeat: which one counts would be a guess */
                    rc = gma_errorf("%s: metadata key %s is given twice (offset 8)", path, m->string);
                    break;
                }
                f->mkeys[f->n_meta] = xstrdup(m->string);
                f->mvals[f->n_meta++] = xstrdup(m->valuestring);
            }
            if (rc) break;
            continue;
        }
        for (const char *c = it->string; *c; c++)
            if ((unsigned char)*c < 0x20) {
                rc = gma_errorf("%s: tensor %d of the header has a name with a control character", path, f->n + 1);
                break;
            }
        if (rc) break;
        if (st_find(f, it->string)) {
            rc = gma_errorf("%s: tensor %s is given twice in the header (offset 8)", path, it->string);
            break;
        }
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(it, "dtype");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(it, "shape");
        const cJSON *of = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
        if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2) {
            rc = gma_errorf("%s: tensor %s: missing dtype, shape or data_offsets", path, it->string);
            break;
        }
        if (strcmp(dt->valuestring, "F32")) {
            rc = gma_errorf("%s: tensor %s: dtype %s is not supported (F32 only)", path, it->string, dt->valuestring);
            break;
        }
        StEntry *e = &f->e[f->n];
        e->ndim = cJSON_GetArraySize(sh);
        if (e->ndim > 4) {
            rc = gma_errorf("%s: tensor %s: %d dimensions (at most 4)", path, it->string, e->ndim);
            break;
        }
        e->numel = 1;
        for (int d = 0; d < e->ndim; d++) {
            const cJSON *x = cJSON_GetArrayItem(sh, d);
            /* every dimension an integer and the element count within the data bytes (no overflow) */
            if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0 && x->valuedouble <= (double)dlen) ||
                x->valuedouble != floor(x->valuedouble) ||
                (x->valuedouble > 0 && (double)e->numel > (double)dlen / 4 / x->valuedouble)) {
                rc = gma_errorf("%s: tensor %s: bad shape (dimension %d is not an integer that fits the %zu data bytes)", path,
                                it->string, d, dlen);
                break;
            }
            e->shape[d] = (int64_t)x->valuedouble;
            e->numel *= (size_t)e->shape[d];
        }
        if (rc) break;
        const cJSON *ob = cJSON_GetArrayItem(of, 0), *oe = cJSON_GetArrayItem(of, 1);
        double b = cJSON_IsNumber(ob) ? ob->valuedouble : -1, en = cJSON_IsNumber(oe) ? oe->valuedouble : -1;
        if (!(b >= 0) || !(en >= b) || en > (double)dlen || b != floor(b) || en != floor(en) ||
            (size_t)(en - b) != e->numel * 4) {
            rc = gma_errorf("%s: tensor %s: data_offsets [%.0f, %.0f] do not fit its shape or the %zu data bytes", path,
                            it->string, b, en, dlen);
            break;
        }
        e->data = (const float *)(p + data0 + (size_t)b);
        e->name = xstrdup(it->string);
        f->n++;
    }
    cJSON_Delete(h);
    if (rc) st_close(f);
    return rc;
}

const StEntry *st_find(const StFile *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->e[i].name, name)) return &f->e[i];
    return NULL;
}

const char *st_meta(const StFile *f, const char *key) {
    for (int i = 0; i < f->n_meta; i++)
        if (!strcmp(f->mkeys[i], key)) return f->mvals[i];
    return NULL;
}

void st_read_tensor(const StEntry *e, real *out) {
    const uint8_t *src = (const uint8_t *)e->data;
    for (size_t i = 0; i < e->numel; i++) {
        float v;
        memcpy(&v, src + 4 * i, 4);
        out[i] = v;
    }
}
