/* prepare.h: turn a corpus (WikiText, or train/valid/test text files) into token shards
 * plus the meta.json sidecar the trainer reads. */
#ifndef GMA_PREPARE_H
#define GMA_PREPARE_H
#include <stddef.h>
#include <stdint.h>

typedef struct PrepareOptions {
    const char *source;    /* wikitext-103[-raw], wikitext-2[-raw], or a directory */
    const char *tokenizer; /* gpt2 | bpe:DIR | word | word:FILE | bytes[:N] */
    const char *vocab_dir; /* gpt2 files (default DATA/gpt2) */
    const char *data_dir;  /* where fetch put data sets (default "data") */
    const char *out_dir;   /* default DATA/NAME */
    int threads;
    int verbose;
} PrepareOptions;

/* Count words the WikiText way: whitespace-separated words plus one per line end (the
 * <eos> a word-level model predicts), so word-level perplexities compare. */
typedef struct TextCounts {
    uint64_t bytes, words, lines;
} TextCounts;
int prepare_count_file(const char *path, TextCounts *c, char *sha256_hex);
/* The same counts of len bytes of text in memory. */
void prepare_count_text(const char *text, size_t len, TextCounts *c);

/* Find the train/valid/test files of a source; paths[3] filled. Returns 0 or -1. */
int prepare_find_splits(const char *source, const char *data_dir, char paths[3][2048], char *name, size_t name_cap);
int prepare_run(const PrepareOptions *o);
#endif
