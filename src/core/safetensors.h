/* safetensors.h: read and write the safetensors format (8-byte little-endian header length,
 * a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}}, then the
 * raw little-endian data). This project writes float32 tensors only and reads F32.
 * Writers stream to PATH.tmp.PID, fsync and rename: an interrupted write never damages
 * the previous file at PATH. Readers map the file and check every offset before use. */
#ifndef GMA_SAFETENSORS_H
#define GMA_SAFETENSORS_H
#include <stddef.h>
#include <stdint.h>

#include "core/common.h"

typedef struct StTensor {
    const char *name;
    int ndim;
    int64_t shape[4];
    const real *data; /* host memory, converted to float32 on write */
} StTensor;

/* meta: n_meta key/value pairs (may be 0). */
int st_write(const char *path, const StTensor *t, int n, const char *const *meta_keys, const char *const *meta_vals,
             int n_meta);

typedef struct StEntry {
    char *name;
    int ndim;
    int64_t shape[4];
    const float *data; /* points into the mapping (may be unaligned: use st_read_tensor) */
    size_t numel;
} StEntry;

typedef struct StFile {
    char path[1024];
    void *map;
    size_t len;
    StEntry *e;
    int n;
    char **mkeys, **mvals;
    int n_meta;
} StFile;

/* Open and validate. Errors name the file and the offset or tensor. */
int st_open(StFile *f, const char *path);
void st_close(StFile *f);
const StEntry *st_find(const StFile *f, const char *name);
const char *st_meta(const StFile *f, const char *key);
/* Copy an entry into real memory (converting). */
void st_read_tensor(const StEntry *e, real *out);
#endif
