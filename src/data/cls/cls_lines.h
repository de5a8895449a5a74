/* cls_lines.h: the line reader the classification loaders share: lines of any byte
 * source (plain or gzip file, archive entry), TAB splitting, the TSV escape decoder and
 * label parsing. Not meant for modules outside src/data/cls/.
 */
#ifndef GMA_CLS_LINES_H
#define GMA_CLS_LINES_H
#include <stddef.h>
#include <stdint.h>

typedef long (*cls_read_fn)(void *src, void *buf, size_t n); /* bytes, 0 at end, -1 error */

typedef struct ClsLines {
    cls_read_fn read;
    void *src;
    char *chunk;
    size_t chunk_len, chunk_pos;
    char *line;
    size_t line_cap;
    long lineno;      /* 1-based number of the line last returned */
    int eof;
} ClsLines;

void cls_lines_init(ClsLines *l, cls_read_fn read, void *src);
/* Next line without its LF (and without a CR before the LF), NUL-terminated (the line
 * may contain NUL bytes: use *len). Returns 1, 0 at end, -1 on a read error. */
int cls_lines_next(ClsLines *l, char **line, size_t *len);
void cls_lines_free(ClsLines *l);

/* Called for each source of lines; name is the file (or "archive: entry") for errors.
 * Returns 0 or -1. */
typedef int (*cls_lines_fn)(void *ctx, ClsLines *lines, const char *name);
/* Feed the lines of one file to fn: path/file if path is a directory (gzip or plain,
 * path/file.gz also tried), or the archive entry named file (or ending in "/file") if
 * path is an archive (.tar, .tar.gz, .zip). */
int cls_for_lines(const char *path, const char *file, cls_lines_fn fn, void *ctx);
/* Feed the lines of the file at path (gzip or plain) to fn. */
int cls_file_lines(const char *path, cls_lines_fn fn, void *ctx);

/* Split a line at TABs in place: up to max fields, returns the count (a count above max
 * means more TABs than allowed). */
int cls_split_tabs(char *line, size_t len, char **field, size_t *flen, int max);
/* Decode the four TSV escapes (\\ \t \n \r) in place. Returns the new length, or -1
 * with *bad set to the offset of a bad escape. */
long cls_unescape(char *s, size_t n, size_t *bad);
/* Parse a whole-number label ("3", also "1.0" as the LRA files write it). 0 or -1. */
int cls_parse_label(const char *s, size_t n, long *out);

#endif
