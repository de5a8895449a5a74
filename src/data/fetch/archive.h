/* archive.h: streaming readers for .tar, .tar.gz/.tgz, .gz and .zip archives.
 *
 * archive_walk() detects the format from the magic bytes, then calls a visitor for every
 * entry in archive order with an ArchiveReader positioned at the entry's bytes; nothing
 * is ever held whole in memory (a zip's central directory excepted). A plain .gz that
 * does not hold a tar is one entry named after the file without ".gz".
 * Errors name the archive, the entry and the offset of its header (for .tar.gz the
 * offset is in the decompressed tar stream). A tar (plain or gzipped) must end with its
 * end-of-archive zero blocks: one that stops between two entries without them was cut
 * short, and walking it is an error naming the offset where it ends.
 */
#ifndef GMA_ARCHIVE_H
#define GMA_ARCHIVE_H
#include <stddef.h>
#include <stdint.h>

typedef struct ArchiveEntry {
    const char *name;
    uint64_t size;
    int is_dir;
    uint64_t offset; /* offset of the entry header in the archive file */
} ArchiveEntry;

typedef struct ArchiveReader ArchiveReader; /* streaming access to the current entry's bytes */

/* Read up to n bytes of the current entry; returns bytes read, 0 at its end, -1 on error
 * (gma_error set, naming the archive, entry and offset). */
long archive_read(ArchiveReader *r, void *buf, size_t n);

/* Walk a .tar, .tar.gz/.tgz or .zip archive (detected by magic bytes), calling fn for
 * every entry in order; fn returns 0 to continue, 1 to stop early, -1 to abort with
 * error. Entries not read by fn are skipped. Returns 0, or -1 with gma_error set. */
typedef int (*archive_visit_fn)(void *ctx, const ArchiveEntry *e, ArchiveReader *r);
int archive_walk(const char *path, archive_visit_fn fn, void *ctx);

/* Extract everything under dest, refusing escaping paths (absolute, "..") and links.
 * Each file is written to a temporary name and renamed when complete, so a file under its
 * final name is always whole; on an error (a truncated archive included) the entries
 * before it are extracted, the rest are not, and -1 is returned. */
int archive_extract(const char *path, const char *dest);
/* The same, also removing the stale temporaries (core/stale_tmp.h) an earlier extraction
 * killed part-way left: ENTRY.tmp.PID beside an entry ENTRY of this archive, PID gone, is
 * removed before ENTRY is written; *swept (when not NULL): how many. */
int archive_extract_swept(const char *path, const char *dest, int *swept);

/* 1 if an entry name stays inside the destination (relative, no ".." component). */
int archive_path_is_safe(const char *name);
#endif
