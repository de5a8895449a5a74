/* lra_image.c: LRA Image, CIFAR-10 as sequences of 1,024 grayscale pixels, read straight
 * from cifar-10-binary.tar.gz (cifar-10-batches-bin/data_batch_1..5.bin, test_batch.bin;
 * each record is 1 label byte and 3,072 bytes of R, G and B planes of 32x32, row-major).
 * Gray = round(0.299 R + 0.587 G + 0.114 B) = (299 R + 587 G + 114 B + 500) / 1000 in
 * integers; token = gray + 1. Split: train = data_batch_1..4 and the first half of
 * data_batch_5 (45,000), valid = the second half of data_batch_5 (5,000), test =
 * test_batch (10,000); records keep their file order.
 */
#include "data/cls/cls_loaders.h"
#include "data/cls/cls_build.h"
#include "data/fetch/archive.h"
#include "core/common.h"

#include <stdlib.h>
#include <string.h>

#define CIFAR_PIXELS 1024
#define CIFAR_RECORD (1 + 3 * CIFAR_PIXELS)

static const char *const BATCH_NAMES[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                           "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

typedef struct ImageLoad {
    const char *archive;
    int need[6];
    uint8_t *data[6];
    size_t len[6];
    char entry[6][512];
    uint64_t offset[6];
} ImageLoad;

static int image_visit(void *ctx, const ArchiveEntry *e, ArchiveReader *r) {
    ImageLoad *im = ctx;
    if (e->is_dir) return 0;
    const char *name = e->name;
    if (strncmp(name, "./", 2) == 0) name += 2;
    if (strncmp(name, "cifar-10-batches-bin/", 21) != 0) return 0;
    int k = -1;
    for (int i = 0; i < 6; i++)
        if (strcmp(name + 21, BATCH_NAMES[i]) == 0) k = i;
    if (k < 0 || !im->need[k]) return 0;
    if (e->size % CIFAR_RECORD != 0 || e->size == 0 || e->size > ((uint64_t)1 << 31))
        return gma_errorf("%s: entry %s (offset %llu): %llu bytes is not a whole number of %d-byte "
                          "CIFAR-10 records", im->archive, e->name, (unsigned long long)e->offset,
                          (unsigned long long)e->size, CIFAR_RECORD);
    free(im->data[k]);
    /* grown as the bytes arrive (at most twice what was read): the header's size alone,
     * from a file of any length, allocates no more than 1 MiB */
    size_t cap = (size_t)GMA_MIN(e->size, (uint64_t)1 << 20), n = 0;
    im->data[k] = xmalloc(cap);
    while (n < e->size) {
        if (n == cap) im->data[k] = xrealloc(im->data[k], cap = (size_t)GMA_MIN((uint64_t)cap * 2, e->size));
        long got = archive_read(r, im->data[k] + n, cap - n);
        if (got < 0) return -1;
        if (got == 0) break;
        n += (size_t)got;
    }
    if (n != e->size)
        return gma_errorf("%s: entry %s (offset %llu): truncated, %zu of %llu bytes", im->archive, e->name,
                          (unsigned long long)e->offset, n, (unsigned long long)e->size);
    im->len[k] = n;
    snprintf(im->entry[k], sizeof im->entry[k], "%s", e->name);
    im->offset[k] = e->offset;
    return 0;
}

/* Append records [r0, r1) of batch k. */
static int add_records(ClsBuilder *b, const ImageLoad *im, int k, size_t r0, size_t r1) {
    uint8_t gray[CIFAR_PIXELS];
    char where[1400];
    for (size_t rec = r0; rec < r1; rec++) {
        const uint8_t *p = im->data[k] + rec * CIFAR_RECORD;
        snprintf(where, sizeof where, "%s: entry %s, record %zu (byte %zu)", im->archive, im->entry[k], rec,
                 rec * CIFAR_RECORD);
        const uint8_t *R = p + 1, *G = R + CIFAR_PIXELS, *B = G + CIFAR_PIXELS;
        for (int i = 0; i < CIFAR_PIXELS; i++)
            gray[i] = (uint8_t)((299u * R[i] + 587u * G[i] + 114u * B[i] + 500u) / 1000u);
        if (clsb_add_bytes(b, gray, CIFAR_PIXELS, where) < 0) return -1;
        if (clsb_add_label(b, p[0], where) < 0) return -1;
    }
    return 0;
}

int lra_image_load(ClsDataset *d, const char *path, const char *split, const ClsOptions *opt) {
    int s = cls_split_index(split);
    if (s < 0) return -1;
    ImageLoad im;
    memset(&im, 0, sizeof im);
    im.archive = path;
    if (s == 0) for (int k = 0; k < 5; k++) im.need[k] = 1;
    if (s == 1) im.need[4] = 1;
    if (s == 2) im.need[5] = 1;
    ClsBuilder b;
    clsb_init(&b, d, 1, 10, 257, opt->max_len, opt->truncate);
    int rc = archive_walk(path, image_visit, &im);
    char missing[256] = "";
    for (int k = 0; rc == 0 && k < 6; k++)
        if (im.need[k] && !im.data[k])
            snprintf(missing + strlen(missing), sizeof missing - strlen(missing), " cifar-10-batches-bin/%s",
                     BATCH_NAMES[k]);
    if (rc == 0 && missing[0])
        rc = gma_errorf("%s: archive lacks%s (expected the cifar-10-binary.tar.gz layout)", path, missing);
    for (int k = 0; rc == 0 && k < 6; k++) {
        if (!im.need[k]) continue;
        size_t nrec = im.len[k] / CIFAR_RECORD, r0 = 0, r1 = nrec;
        if (k == 4 && s == 0) r1 = nrec / 2;
        if (k == 4 && s == 1) r0 = nrec / 2;
        rc = add_records(&b, &im, k, r0, r1);
    }
    for (int k = 0; k < 6; k++) free(im.data[k]);
    clsb_finish(&b);
    return rc;
}
