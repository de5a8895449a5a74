/* manifest.h: a prepared data set is one whole (docs/data.md, "A data set is written as a
 * whole").
 *
 * gmadata prepare writes DIR/prepare.incomplete before it changes any file of DIR and
 * removes it after meta.json, written last, is in place; meta.json's "manifest" names
 * every file the set is made of (shards and tokenizer files) with its size and SHA-256.
 * The loader refuses a directory that holds prepare.incomplete, and a file whose size or
 * digest is not the manifest's, so a prepare that was killed part-way (shards of one
 * tokenizer beside files of another) is never trained on. A meta.json without
 * "manifest" (data sets prepared before it existed) loads unchecked. */
#ifndef GMA_MANIFEST_H
#define GMA_MANIFEST_H
#include <cjson/cJSON.h>

#define MANIFEST_INCOMPLETE "prepare.incomplete"

/* Record DIR/file's size and SHA-256 under meta's "manifest" (created when missing).
 * 0, or -1 with gma_error naming the file. */
int manifest_add(cJSON *meta, const char *dir, const char *file);
/* Check the data set in dir before use: no prepare.incomplete; when meta.json has a
 * manifest, every listed file that is present has its size and digest (the shards of
 * splits not in split_mask, bit s: train.bin, valid.bin, test.bin, are not read), and
 * every shard of a split in the mask that is present is listed. A listed file that is
 * absent is left to whoever needs it (a split copied alone with meta.json evaluates).
 * 0, or -1 with one line naming the file. */
int manifest_check(const char *dir, unsigned split_mask);
#endif
