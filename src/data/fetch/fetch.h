/* fetch.h: download public data sets with libcurl (progress, resume, retries, timeouts,
 * digest check) and the registry of canonical locations and published digests. */
#ifndef GMA_FETCH_H
#define GMA_FETCH_H
#include "data/fetch/digest.h"

typedef struct FetchFile {
    const char *file;       /* name under the destination */
    const char *url;        /* current canonical location */
    const char *moved_from; /* original location, gone or superseded (NULL if none) */
    DigestKind kind;
    const char *digest; /* published digest, NULL when none was ever published */
} FetchFile;

typedef struct FetchDataset {
    const char *name;
    const char *subdir; /* files go to DEST/subdir ("" = DEST) */
    int extract;        /* extract the archive into DEST after the check */
    int n_files;
    FetchFile files[2];
    const char *about;
} FetchDataset;

typedef struct FetchOptions {
    int progress;          /* progress bar on stderr */
    int retries;           /* attempts after the first (default 4) */
    long backoff_ms;       /* first back-off, doubled each retry (default 1000) */
    long connect_timeout_s;/* default 30 */
    long stall_timeout_s;  /* abort when under 1 byte/s for this long (default 60) */
} FetchOptions;

void fetch_options_default(FetchOptions *o);
const FetchDataset *fetch_find(const char *name);
const FetchDataset *fetch_registry(int *n);
/* Download url to path (via path.part, resumed if present); verify the digest if given
 * (a mismatching file is removed, never left under path). Returns 0 or -1. */
int fetch_url(const char *url, const char *path, DigestKind kind, const char *digest, const FetchOptions *o);
/* Fetch a registered data set into dest (url_override: a mirror file URL, or a base URL
 * ending in '/'), extracting archives. Returns 0 or -1. */
int fetch_dataset(const char *name, const char *dest, const char *url_override, const FetchOptions *o);
#endif
