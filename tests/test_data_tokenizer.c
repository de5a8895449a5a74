/* test_data_tokenizer.c: the GPT-2 pre-tokeniser on hand-written strings, byte-level BPE
 * with a small fixture (fixed expected ids), word and byte tokenizers, save/load and
 * round trips, BPE training, parallel == sequential, broken vocabulary files. */
#include <stdlib.h>
#include <string.h>

#include "data/text/bpe.h"
#include "data/fetch/digest.h"
#include "data/text/tokenizer.h"
#include "data/text/unicode.h"
#include "testutil.h"

/* Pieces of s joined with '|'. */
static const char *pieces(const char *s) {
    static char out[1024];
    size_t len = strlen(s), o = 0;
    for (size_t i = 0; i < len;) {
        size_t k = gpt2_piece_len((const unsigned char *)s, i, len);
        if (i) out[o++] = '|';
        memcpy(out + o, s + i, k);
        o += k;
        i += k;
    }
    out[o] = 0;
    return out;
}

START_TEST(test_pretokenizer_rules) {
    ck_assert_str_eq(pieces("Hello world! It's 2026; they'll"), "Hello| world|!| It|'s| 2026|;| they|'ll");
    ck_assert_str_eq(pieces("   leading"), "  | leading");
    ck_assert_str_eq(pieces("a\t\tb"), "a|\t|\t|b");
    ck_assert_str_eq(pieces("end   "), "end|   ");
    ck_assert_str_eq(pieces("x\n\n the"), "x|\n\n| the");
    ck_assert_str_eq(pieces("I'M we've ?!'s"), "I|'|M| we|'ve| ?!'|s");
    ck_assert_str_eq(pieces("don't 'd 're"), "don|'t| '|d| '|re");
    ck_assert_str_eq(pieces("abc123def"), "abc|123|def");
    ck_assert_str_eq(pieces("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae"), "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae"); /* 日本語の: letters */
    ck_assert_str_eq(pieces("\xd0\xa0\xd1\x83\xd1\x81 \xd1\x82\xd0\xb5"), "\xd0\xa0\xd1\x83\xd1\x81| \xd1\x82\xd0\xb5"); /* Cyrillic */
    ck_assert_str_eq(pieces("x\xc2\xb2\xc2\xb3"), "x|\xc2\xb2\xc2\xb3");                   /* superscripts are numbers */
    ck_assert_str_eq(pieces("a\xe3\x80\x80" "b"), "a|\xe3\x80\x80|b");                      /* ideographic space */
    ck_assert_str_eq(pieces("caf\xc3\xa9 na\xc3\xafve"), "caf\xc3\xa9| na\xc3\xafve");
    ck_assert_str_eq(pieces("\xff\xfe" "ab"), "\xff\xfe|ab");                                 /* invalid UTF-8: symbols */
    ck_assert_str_eq(pieces(" @-@ "), " @-@| ");
    ck_assert_str_eq(pieces("\r\n"), "\r\n");
}
END_TEST

/* Fixture: bytes (id = byte), merges he, " t", " t"+he, ll, he+ll, hell+o, then <|endoftext|>. */
static const char *fixture_dir(void) {
    static char dir[512];
    if (dir[0]) return dir;
    snprintf(dir, sizeof dir, "%s/bpefix", tu_tmpdir());
    uint32_t merges[6][2] = {{'h', 'e'}, {' ', 't'}, {257, 256}, {'l', 'l'}, {256, 259}, {260, 'o'}};
    const char *sp[1] = {"<|endoftext|>"};
    BpeModel *m = bpe_from_merges((const uint32_t(*)[2])merges, 6, sp, 1);
    ck_assert_int_eq(bpe_save(m, dir), 0);
    bpe_free(m);
    return dir;
}

static void expect_ids(Tokenizer *t, const char *s, size_t len, const uint32_t *want, size_t nwant) {
    uint32_t *ids;
    size_t n;
    ck_assert_int_eq(tokenizer_encode(t, s, len, &ids, &n), 0);
    ck_assert_msg(n == nwant, "'%s': %zu ids, want %zu", s, n, nwant);
    for (size_t i = 0; i < n; i++) ck_assert_msg(ids[i] == want[i], "'%s': id %zu is %u, want %u", s, i, ids[i], want[i]);
    char *back;
    size_t bl;
    ck_assert_int_eq(tokenizer_decode(t, ids, n, &back, &bl), 0);
    ck_assert_int_eq(bl, len);
    ck_assert(memcmp(back, s, len) == 0);
    free(back);
    free(ids);
}
/* t saved to the folder tu_path(name), then loaded by the spec "<kind>:<folder><file>":
 * the same vocabulary size */
static Tokenizer *save_and_load(const Tokenizer *t, const char *kind, const char *name, const char *file) {
    ck_assert_int_eq(tokenizer_save(t, tu_path(name)), 0);
    char spec[600];
    snprintf(spec, sizeof spec, "%s:%s%s", kind, tu_path(name), file);
    Tokenizer *t2 = tokenizer_load(spec, NULL);
    ck_assert_msg(t2 != NULL, "%s: %s", spec, gma_error());
    ck_assert_uint_eq(tokenizer_vocab_size(t2), tokenizer_vocab_size(t));
    return t2;
}

/* tokenizer_load(spec, dir) is refused with an error that names what */
static void load_fails(const char *spec, const char *dir, const char *what) {
    ck_assert_ptr_null(tokenizer_load(spec, dir));
    ck_assert_msg(strstr(gma_error(), what) != NULL, "error '%s' does not name '%s'", gma_error(), what);
}

#define EXPECT(t, s, ...)                                                        \
    do {                                                                         \
        const uint32_t w_[] = {__VA_ARGS__};                                     \
        expect_ids(t, s, sizeof(s) - 1, w_, sizeof w_ / sizeof w_[0]);           \
    } while (0)

START_TEST(test_gpt2_fixture_ids) {
    Tokenizer *t = tokenizer_load("gpt2", fixture_dir());
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(tokenizer_vocab_size(t), 263);
    EXPECT(t, "hello the", 261, 258);
    EXPECT(t, "Hello", 72, 101, 259, 111);
    EXPECT(t, "he's", 256, 39, 115);
    EXPECT(t, "  the", 32, 258);
    EXPECT(t, "x\n\n the<|endoftext|>he", 120, 10, 10, 258, 262, 256);
    EXPECT(t, "123 4567", 49, 50, 51, 32, 52, 53, 54, 55);
    EXPECT(t, "\xc3\xa9 the", 0xc3, 0xa9, 258);
    EXPECT(t, "\xff\xfehe", 255, 254, 256);
    EXPECT(t, "\n", 10);
    /* empty input */
    uint32_t *ids;
    size_t n;
    ck_assert_int_eq(tokenizer_encode(t, "", 0, &ids, &n), 0);
    ck_assert_uint_eq(n, 0);
    free(ids);
    /* a very long word: 2000 x "hello" with no spaces is 2000 x <hello> */
    size_t L = 5 * 2000;
    char *w = xmalloc(L + 1);
    for (size_t i = 0; i < L; i += 5) memcpy(w + i, "hello", 5);
    ck_assert_int_eq(tokenizer_encode(t, w, L, &ids, &n), 0);
    ck_assert_uint_eq(n, 2000);
    for (size_t i = 0; i < n; i++) ck_assert_uint_eq(ids[i], 261);
    free(ids);
    free(w);
    tokenizer_free(t);
}
END_TEST

static char *mixed_text(size_t n) {
    static const char *words[] = {"the", " the", "hello", " world", "\n", " \n", "\n\n", "  ", "It's", " 42",
                                  " caf\xc3\xa9", "\t", " @-@ ", " \xe6\x97\xa5\xe6\x9c\xac", "!!", " <|endoftext|>",
                                  "shell", "\xff", " = = Heading = =\n", " he'll"};
    char *s = xmalloc(n + 64);
    size_t o = 0;
    unsigned x = 7;
    while (o < n) {
        x = x * 1103515245u + 12345u;
        const char *wd = words[(x >> 16) % 20];
        size_t l = strlen(wd);
        memcpy(s + o, wd, l);
        o += l;
    }
    s[o] = 0;
    return s;
}

START_TEST(test_long_piece_path_matches_naive) {
    Tokenizer *t = tokenizer_load("gpt2", fixture_dir());
    char *s = mixed_text(20000);
    size_t len = strlen(s);
    uint32_t *a, *b;
    size_t na, nb;
    size_t keep = bpe_long_piece;
    bpe_long_piece = 1; /* every piece through the heap */
    tokenizer_encode(t, s, len, &a, &na);
    bpe_long_piece = (size_t)1 << 30; /* every piece through the quadratic scan */
    tokenizer_encode(t, s, len, &b, &nb);
    bpe_long_piece = keep;
    ck_assert_uint_eq(na, nb);
    ck_assert(memcmp(a, b, na * sizeof *a) == 0);
    free(a);
    free(b);
    free(s);
    tokenizer_free(t);
}
END_TEST

START_TEST(test_parallel_equals_sequential) {
    const char *specs[3] = {"gpt2", "bytes", "word"};
    char *s = mixed_text(600000);
    size_t len = strlen(s);
    tu_write(tu_path("mixed.txt"), s);
    for (int k = 0; k < 3; k++) {
        Tokenizer *t = k == 2 ? tokenizer_word_build(tu_path("mixed.txt")) : tokenizer_load(specs[k], fixture_dir());
        ck_assert_ptr_nonnull(t);
        uint32_t *a, *b;
        size_t na, nb;
        tokenizer_encode(t, s, len, &a, &na);
        tokenizer_encode_parallel(t, s, len, 2, &b, &nb);
        ck_assert_uint_eq(na, nb);
        ck_assert(memcmp(a, b, na * sizeof *a) == 0);
        free(a);
        free(b);
        tokenizer_free(t);
    }
    free(s);
}
END_TEST

START_TEST(test_bytes_tokenizer) {
    Tokenizer *t = tokenizer_bytes(2);
    ck_assert_uint_eq(tokenizer_vocab_size(t), 258);
    ck_assert_str_eq(tokenizer_spec(t), "bytes:2");
    EXPECT(t, "A\x00\xff", 65, 0, 255);
    ck_assert_int_eq(tokenizer_token_id(t, "<special1>"), 257);
    uint32_t bad[2] = {65, 300};
    char *txt;
    size_t l;
    ck_assert_int_eq(tokenizer_decode(t, bad, 2, &txt, &l), -1);
    ck_assert_ptr_nonnull(strstr(gma_error(), "position 1"));
    tokenizer_free(t);
    t = tokenizer_load("bytes", NULL);
    ck_assert_uint_eq(tokenizer_vocab_size(t), 256);
    tokenizer_free(t);
}
END_TEST

START_TEST(test_word_tokenizer) {
    tu_write(tu_path("wtrain.txt"), " = Title = \n \n the cat sat on the mat \n a 1 @,@ 000 <unk> cat \n");
    Tokenizer *t = tokenizer_word_build(tu_path("wtrain.txt"));
    ck_assert_ptr_nonnull(t);
    /* order of first appearance: = Title the cat sat on mat a 1 @,@ 000 <unk>, then <eos> */
    ck_assert_int_eq(tokenizer_token_id(t, "="), 0);
    ck_assert_int_eq(tokenizer_token_id(t, "Title"), 1);
    ck_assert_int_eq(tokenizer_token_id(t, "the"), 2);
    ck_assert_int_eq(tokenizer_unk_id(t), 11);
    ck_assert_int_eq(tokenizer_token_id(t, "<eos>"), 12);
    ck_assert_uint_eq(tokenizer_vocab_size(t), 13);
    const char *s = " the dog sat \n\n";
    uint32_t *ids;
    size_t n;
    tokenizer_encode(t, s, strlen(s), &ids, &n);
    uint32_t want[] = {2, 11, 4, 12, 12};
    ck_assert_uint_eq(n, 5);
    ck_assert(memcmp(ids, want, sizeof want) == 0);
    char *back;
    size_t bl;
    tokenizer_decode(t, ids, n, &back, &bl);
    ck_assert_str_eq(back, "the <unk> sat\n\n");
    free(back);
    free(ids);
    /* last line without newline still ends with <eos> */
    tokenizer_encode(t, "cat", 3, &ids, &n);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(ids[1], 12);
    free(ids);
    /* save / load */
    Tokenizer *t2 = save_and_load(t, "word", "wv", "/vocab.txt");
    ck_assert_int_eq(tokenizer_token_id(t2, "mat"), 6);
    tokenizer_free(t2);
    tokenizer_free(t);
    /* a broken vocabulary line names the file and line */
    tu_write(tu_path("badvocab.txt"), "a\nb c\n");
    char spec[600];
    snprintf(spec, sizeof spec, "word:%s", tu_path("badvocab.txt"));
    load_fails(spec, NULL, "badvocab.txt:2:");
}
END_TEST

START_TEST(test_broken_bpe_files) {
    const char *dir = tu_path("brokenbpe");
    gma_mkdirs(dir);
    char p[600], q[600];
    snprintf(p, sizeof p, "%s/encoder.json", dir);
    snprintf(q, sizeof q, "%s/vocab.bpe", dir);
    /* copy the fixture encoder, then a merges file with a broken third line */
    size_t len;
    char src[600];
    snprintf(src, sizeof src, "%s/encoder.json", fixture_dir());
    char *enc = gma_read_file(src, &len);
    gma_write_file_atomic(p, enc, len);
    tu_write(q, "#version: 0.2\nh e\nbroken\n");
    load_fails("gpt2", dir, "vocab.bpe:3:");
    tu_write(q, "#version: 0.2\nh e\nq z\n");
    load_fails("gpt2", dir, "vocab.bpe:3:");
    tu_write(p, "{\"a\": 0, \"b\": ");
    load_fails("gpt2", dir, "encoder.json");
    ck_assert_ptr_nonnull(strstr(gma_error(), "byte"));
    free(enc);
    load_fails("nonsense", NULL, "unknown tokenizer");
}
END_TEST

START_TEST(test_bpe_train_roundtrip) {
    char *s = mixed_text(50000);
    tu_write(tu_path("corpus.txt"), s);
    Tokenizer *t = tokenizer_bpe_train(tu_path("corpus.txt"), 400, 0);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(tokenizer_vocab_size(t), 400);
    ck_assert_int_ge(tokenizer_token_id(t, " the"), 256);
    ck_assert_int_eq(tokenizer_token_id(t, "<|endoftext|>"), 399);
    Tokenizer *t2 = save_and_load(t, "bpe", "trained", "");
    uint32_t *a, *b;
    size_t na, nb;
    size_t len = strlen(s);
    tokenizer_encode(t, s, len, &a, &na);
    tokenizer_encode(t2, s, len, &b, &nb);
    ck_assert_uint_eq(na, nb);
    ck_assert(memcmp(a, b, na * sizeof *a) == 0);
    ck_assert_uint_lt(na, len / 2); /* it compresses */
    char *back;
    size_t bl;
    tokenizer_decode(t2, b, nb, &back, &bl);
    ck_assert_uint_eq(bl, len);
    ck_assert(memcmp(back, s, len) == 0);
    free(back);
    free(a);
    free(b);
    free(s);
    tokenizer_free(t);
    tokenizer_free(t2);
}
END_TEST

START_TEST(test_digests) {
    Digest d;
    char hex[65];
    digest_init(&d, DIGEST_SHA256);
    digest_update(&d, "abc", 3);
    digest_final_hex(&d, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    digest_init(&d, DIGEST_MD5);
    digest_update(&d, "abc", 3);
    digest_final_hex(&d, hex);
    ck_assert_str_eq(hex, "900150983cd24fb0d6963f7d28e17f72");
    /* 1,000,000 x 'a' fed in odd pieces */
    digest_init(&d, DIGEST_SHA256);
    char a[997];
    memset(a, 'a', sizeof a);
    size_t left = 1000000;
    while (left) {
        size_t k = left < sizeof a ? left : sizeof a;
        digest_update(&d, a, k);
        left -= k;
    }
    digest_final_hex(&d, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

START_TEST(test_cli_encode_decode) {
    char cmd[1024], out[4096];
    tu_write(tu_path("hello.txt"), "hello the");
    snprintf(cmd, sizeof cmd, "bin/gmadata encode --tokenizer gpt2 --vocab %s %s", fixture_dir(), tu_path("hello.txt"));
    ck_assert_int_eq(tu_run(cmd, out, sizeof out), 0);
    ck_assert_str_eq(out, "261 258\n");
    tu_write(tu_path("ids.txt"), "261 258 262");
    snprintf(cmd, sizeof cmd, "bin/gmadata decode --tokenizer gpt2 --vocab %s %s", fixture_dir(), tu_path("ids.txt"));
    ck_assert_int_eq(tu_run(cmd, out, sizeof out), 0);
    ck_assert_str_eq(out, "hello the<|endoftext|>");
    tu_write(tu_path("ids.txt"), "261 x258");
    ck_assert_int_ne(tu_run(cmd, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "ids.txt: byte 4"));
    snprintf(cmd, sizeof cmd, "bin/gmadata encode --tokenizer bytes --out %s %s && bin/gmadata stats --tokenizer bytes %s",
             tu_path("h.bin"), tu_path("hello.txt"), tu_path("h.bin"));
    ck_assert_int_eq(tu_run(cmd, out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "tokens:          9"));
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("data_tokenizer");
    TCase *tc = tcase_create("tokenizer");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_pretokenizer_rules);
    tcase_add_test(tc, test_gpt2_fixture_ids);
    tcase_add_test(tc, test_long_piece_path_matches_naive);
    tcase_add_test(tc, test_parallel_equals_sequential);
    tcase_add_test(tc, test_bytes_tokenizer);
    tcase_add_test(tc, test_word_tokenizer);
    tcase_add_test(tc, test_broken_bpe_files);
    tcase_add_test(tc, test_bpe_train_roundtrip);
    tcase_add_test(tc, test_digests);
    tcase_add_test(tc, test_cli_encode_decode);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
