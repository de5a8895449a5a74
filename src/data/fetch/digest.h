/* digest.h: SHA-256 and MD5 (streaming), for download and shard checks. */
#ifndef GMA_DIGEST_H
#define GMA_DIGEST_H
#include <stddef.h>
#include <stdint.h>

typedef enum { DIGEST_SHA256, DIGEST_MD5 } DigestKind;
typedef struct Digest {
    DigestKind kind;
    uint32_t h[8];
    uint64_t total;
    uint8_t buf[64];
    size_t nbuf;
} Digest;

void digest_init(Digest *d, DigestKind kind);
void digest_update(Digest *d, const void *data, size_t n);
/* Lower-case hex into hex (65 bytes for SHA-256, 33 for MD5). */
void digest_final_hex(Digest *d, char *hex);
/* Digest of a whole file (streamed); hex as above. Returns 0 or -1 (error names the file). */
int digest_file(const char *path, DigestKind kind, char *hex);
#endif
