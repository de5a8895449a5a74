/* fuzz_seeds.c: writes the seed corpora of the fuzz targets under OUT/<target>/ (make
 * fuzz-seeds; OUT is build/fuzz/corpus). Every seed is made by the library itself (a
 * checkpoint, shards, a trained tokenizer's files, archives, LRA/JSONL/TSV files), so the
 * corpora follow the formats as they change; the config corpus also gets every shipped
 * config under configs/ (copied by the Makefile). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/config.h"
#include "nn/mixers/mixer.h"
#include "data/cls/lra_listops.h"
#include "data/cls/png.h"
#include "data/lm/shard.h"
#include "data/text/tokenizer.h"
#include "model/checkpoint.h"

#include "archive_build.h"
#include "train/config_registry.h"

static const char *g_out;

static void put_str(Buf *b, const char *s) { put(b, s, strlen(s) + 1); } /* with its NUL: a separator */
static void seed(const char *target, const char *name, const void *d, size_t n) {
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", g_out, target);
    if (gma_mkdirs(p) != 0) goto fail;
    snprintf(p, sizeof p, "%s/%s/%s", g_out, target, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f) != 0) goto fail;
    return;
fail:
    fprintf(stderr, "fuzz_seeds: cannot write %s\n", p);
    exit(1);
}
static char *slurp(const char *path, size_t *n) {
    char *s = gma_read_file(path, n);
    if (!s) {
        fprintf(stderr, "fuzz_seeds: %s\n", gma_error());
        exit(1);
    }
    return s;
}

/* ---- archives ---- */
/* A zip with one stored and one deflated entry. */
static void zip_seed(void) {
    static const char stored[] = "stored bytes\n", deflated[] = "deflated deflated deflated deflated bytes\n";
    const ZipEnt e[2] = {{"dir/stored.txt", stored, sizeof stored - 1, 0}, {"deflated.txt", deflated, sizeof deflated - 1, 1}};
    Buf b = {0};
    zip_build(&b, e, 2, 0);
    seed("archive", "entries.zip", b.p, b.n);
    free(b.p);
}
static void archive_seeds(void) {
    Buf t = {0};
    tar_add(&t, "data/", "", 0, '5');
    tar_add(&t, "data/a.txt", "hello archive\n", 14, '0');
    const char pax[] = "30 path=data/long/pax/name.txt\n";
    tar_add(&t, "PaxHeader", pax, sizeof pax - 1, 'x');
    tar_add(&t, "ignored", "pax named\n", 10, '0');
    const char longname[] = "data/gnu/long/name/that/is/long.txt";
    tar_add(&t, "././@LongLink", longname, sizeof longname, 'L');
    tar_add(&t, "ignored2", "gnu named\n", 10, '0');
    tar_add(&t, "data/link", "", 0, '2');
    tar_end(&t);
    seed("archive", "entries.tar", t.p, t.n);
    Buf g = gzip_buf(&t);
    seed("archive", "entries.tar.gz", g.p, g.n);
    free(g.p);
    Buf plain = {(unsigned char *)"just one gzipped text file\n", 27, 0};
    g = gzip_buf(&plain);
    seed("archive", "one.gz", g.p, g.n);
    free(g.p);
    Buf esc = {0};
    tar_add(&esc, "../escape.txt", "x", 1, '0');
    tar_add(&esc, "/abs.txt", "x", 1, '0');
    tar_end(&esc);
    seed("archive", "escape.tar", esc.p, esc.n);
    free(t.p), free(esc.p);
    zip_seed();
    /* an IMDB-shaped archive for the cls target (mode 4) */
    Buf im = {0};
    put(&im, "\4", 1);
    Buf it = {0};
    tar_add(&it, "aclImdb/train/pos/0_9.txt", "A fine film.", 12, '0');
    tar_add(&it, "aclImdb/train/neg/1_2.txt", "A dull film.", 12, '0');
    tar_add(&it, "aclImdb/test/pos/2_8.txt", "Good.", 5, '0');
    tar_end(&it);
    g = gzip_buf(&it);
    put(&im, g.p, g.n);
    seed("cls", "imdb.bin", im.p, im.n);
    free(g.p), free(it.p), free(im.p);
}

/* ---- a checkpoint of a tiny model ---- */
static void checkpoint_seed(void) {
    Config c;
    cfg_defaults(&c);
    const char *sets[] = {"name=seed", "model.vocab_size=11", "model.d_model=8", "model.n_heads=2", "model.n_layers=2",
                          "model.d_ff=12", "model.max_seq_len=8", "gma.n_components=3", "gma.chunk=3", "train.seq_len=8",
                          "data.recall_vocab=11", "data.recall_pairs=2", "model.mixer=sdpa,gma"};
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
        if (cfg_set(&c, sets[i]) != 0) goto fail;
    if (cfg_validate(&c) != 0) goto fail;
    Model m;
    if (model_build(&m, &c) != 0) goto fail;
    model_alloc(&m, 1, 8);
    model_init_params(&m, 1);
    TrainState ts = {.step = 7, .tokens_seen = 448, .best_valid = 2.5, .best_acc = -1, .best_step = -1};
    rng_seed2(&ts.rng, 1, 2);
    char run[2048];
    snprintf(run, sizeof run, "%s/.ckpt-run", g_out);
    if (ckpt_save(&m, &ts, run, 1, NULL) != 0) goto fail;
    char p[2200];
    size_t mn, on;
    snprintf(p, sizeof p, "%s/ckpt_%08d/model.safetensors", run, 7);
    char *model = slurp(p, &mn);
    snprintf(p, sizeof p, "%s/ckpt_%08d/optim.safetensors", run, 7);
    char *optim = slurp(p, &on);
    Buf b = {0};
    put32(&b, (unsigned long)mn), put(&b, model, mn), put(&b, optim, on);
    seed("checkpoint", "tiny_sdpa_gma.bin", b.p, b.n);
    seed("checkpoint", "model_only.bin", b.p, 4 + mn);
    free(model), free(optim), free(b.p);
    model_free(&m);
    return;
fail:
    fprintf(stderr, "fuzz_seeds: checkpoint: %s\n", gma_error());
    exit(1);
}

/* ---- shards, tokenizers, LRA / generic data, configs ---- */
static void shard_seed(const char *name, const uint32_t *tok, uint64_t n, uint32_t vocab) {
    char p[2048];
    snprintf(p, sizeof p, "%s/.shard.bin", g_out);
    if (shard_write(p, tok, n, vocab) != 0) {
        fprintf(stderr, "fuzz_seeds: %s\n", gma_error());
        exit(1);
    }
    size_t len;
    char *s = slurp(p, &len);
    seed("shard", name, s, len);
    free(s);
    remove(p);
}

static const char g_text[] = "The history of the city begins with a small settlement; it's grown since 1901.\n"
                             "<|endoftext|> Caf\xc3\xa9 \xf0\x9f\x98\x80   spaces\ttabs\r\n";

static void tokenizer_seeds(void) {
    char p[2048], d[2048];
    snprintf(p, sizeof p, "%s/.train.txt", g_out);
    FILE *f = fopen(p, "wb");
    for (int i = 0; i < 30 && f; i++) fputs(g_text, f);
    if (!f || fclose(f) != 0) exit(1);
    Tokenizer *tk = tokenizer_bpe_train(p, 300, 0);
    snprintf(d, sizeof d, "%s/.tok", g_out);
    if (!tk || gma_mkdirs(d) != 0 || tokenizer_save(tk, d) != 0) {
        fprintf(stderr, "fuzz_seeds: tokenizer: %s\n", gma_error());
        exit(1);
    }
    tokenizer_free(tk);
    size_t en, mn;
    snprintf(p, sizeof p, "%s/encoder.json", d);
    char *enc = slurp(p, &en);
    snprintf(p, sizeof p, "%s/vocab.bpe", d);
    char *mer = slurp(p, &mn);
    Buf b = {0};
    put_str(&b, enc), put_str(&b, mer), put(&b, g_text, sizeof g_text - 1);
    seed("tokenizer", "trained_bpe.bin", b.p, b.n);
    free(enc), free(mer), free(b.p);
    seed("encode", "text.txt", g_text, sizeof g_text - 1);
    seed("encode", "long_piece.txt", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 54);
}

static void cls_seeds(void) {
    ListopsGenOptions o;
    listops_gen_defaults(&o);
    o.min_len = 5, o.max_len = 40, o.max_depth = 4, o.max_args = 4;
    ListopsGen g;
    listops_gen_init(&g, &o);
    uint32_t tok[64];
    Buf b = {0};
    put(&b, "\0Source\tTarget\n", 15);
    for (int i = 0; i < 3; i++) {
        size_t n = listops_gen_next(&g, tok, 64);
        char s[1024], line[1100];
        listops_to_string(tok, n, s, sizeof s);
        int len = snprintf(line, sizeof line, "%s\t%d\n", s, listops_eval(tok, n, NULL));
        put(&b, line, (size_t)len);
        if (i == 0) {
            char e[1100];
            e[0] = 6;
            int el = snprintf(e + 1, sizeof e - 1, "%s", s);
            seed("cls", "listops_expr.bin", e, (size_t)el + 1);
        }
    }
    seed("cls", "listops.bin", b.p, b.n);
    free(b.p);
    static const char retrieval[] = "\1label\tid1\tid2\ttext1\ttext2\n1\ta\tb\tb'one \\x41\\n'\tb\"two \\'q\\'\"\n0\tc\td\tplain\ttext\n";
    seed("cls", "retrieval.bin", retrieval, sizeof retrieval - 1);
    static const char jsonl[] = "\2{\"text\": \"good mail\", \"label\": \"ham\"}\n{\"text\": \"buy now\", \"label\": \"spam\"}\n";
    seed("cls", "generic.jsonl", jsonl, sizeof jsonl - 1);
    static const char tsv[] = "\3" "1\tid7\ttab\\there\\nnewline\n0\tplain text\n";
    seed("cls", "generic.tsv", tsv, sizeof tsv - 1);
}

/* ---- grayscale PNGs as the Pathfinder generator writes them ---- */
static void png_seeds(void) {
    static const int sides[3][2] = {{1, 1}, {7, 3}, {32, 32}};
    for (int k = 0; k < 3; k++) {
        int w = sides[k][0], h = sides[k][1];
        uint8_t pix[32 * 32], *enc = NULL;
        size_t n = 0;
        for (int i = 0; i < w * h; i++) pix[i] = (uint8_t)(i * 37 + k);
        if (png_encode_gray8(pix, w, h, &enc, &n) != 0) {
            fprintf(stderr, "fuzz_seeds: %s\n", gma_error());
            exit(1);
        }
        char name[32];
        snprintf(name, sizeof name, "gray_%dx%d.png", w, h);
        seed("png", name, enc, n);
        free(enc);
    }
}

/* ---- the GPT-2 import readers: the test fixture's two files (tests/fixtures/gpt2) ---- */
static void import_seeds(void) {
    size_t n;
    char *bin = slurp("tests/fixtures/gpt2/gpt2_tiny.bin", &n);
    Buf b = {0};
    put(&b, "\0", 1); /* even: llm.c */
    put(&b, bin, n);
    seed("import", "llmc_v3.bin", b.p, b.n);
    free(bin);
    b.n = 0;
    size_t cn, sn;
    char *cj = slurp("tests/fixtures/gpt2/hf/config.json", &cn), *st = slurp("tests/fixtures/gpt2/hf/model.safetensors", &sn);
    put(&b, "\1", 1); /* odd: Hugging Face */
    put(&b, cj, cn);
    put(&b, "\0", 1);
    put(&b, st, sn);
    seed("import", "hf.bin", b.p, b.n);
    /* what the readers must refuse before allocating: GPT-2 XL's config beside the tiny
     * weights, and GPT-2 XL's llm.c header alone (1 KiB) */
    b.n = 0;
    static const char xl[] = "{\"n_embd\": 1600, \"n_head\": 25, \"n_layer\": 48}";
    put(&b, "\1", 1);
    put(&b, xl, sizeof xl); /* with its NUL */
    put(&b, st, sn);
    seed("import", "hf_xl_config.bin", b.p, b.n);
    b.n = 0;
    int32_t h[256] = {20240326, 3, 1024, 50257, 48, 25, 1600, 50304};
    put(&b, "\0", 1);
    put(&b, h, sizeof h);
    seed("import", "llmc_xl_header.bin", b.p, b.n);
    free(cj), free(st), free(b.p);
}

/* ---- sizes: configs of small models, then B, N and the bucket size ---- */
static void size_seeds(void) {
    static const char *const cfgs[] = {
        "{\"model\": {\"vocab_size\": 64, \"d_model\": 16, \"n_heads\": 2, \"n_layers\": 2, \"mixer\": \"gma\"}}",
        "{\"model\": {\"vocab_size\": 32, \"d_model\": 16, \"n_heads\": 2, \"n_layers\": 1, \"mixer\": \"sdpa\", "
        "\"max_seq_len\": 32}, \"cross\": {\"mixer\": \"sdpa\", \"ctx_len\": 16}, \"train\": {\"seq_len\": 32}}",
        "{\"model\": {\"vocab_size\": 300, \"d_model\": 32, \"n_heads\": 4, \"n_layers\": 2, \"mixer\": [\"mamba\", \"linear\"]}}",
    };
    /* the last: B x H pairs past INT_MAX in GMA's backward grouping (a crash once) */
    static const int32_t shapes[4][3] = {{8, 256, 64}, {1000000, 16777216, 2147483647}, {3, 1000, 7}, {2147418115, 1000, 7}};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++) {
            Buf b = {0};
            put(&b, cfgs[i], strlen(cfgs[i]) + 1);
            for (int j = 0; j < 3; j++) {
                uint8_t le[4] = {(uint8_t)shapes[k][j], (uint8_t)(shapes[k][j] >> 8), (uint8_t)(shapes[k][j] >> 16),
                                 (uint8_t)((uint32_t)shapes[k][j] >> 24)};
                put(&b, le, 4);
            }
            char name[32];
            snprintf(name, sizeof name, "cfg%d_shape%d.bin", i, k);
            seed("sizes", name, b.p, b.n);
            free(b.p);
        }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds OUT_DIR\n");
        return 2;
    }
    g_out = argv[1];
    config_register_all();
    archive_seeds();
    checkpoint_seed();
    uint32_t t[40];
    for (int i = 0; i < 40; i++) t[i] = (uint32_t)(i * 7 % 50);
    shard_seed("u16.bin", t, 40, 50);
    t[3] = 69999;
    shard_seed("u32.bin", t, 40, 70000);
    shard_seed("one_token.bin", t, 1, 50);
    shard_seed("empty.bin", t, 0, 50);
    tokenizer_seeds();
    cls_seeds();
    png_seeds();
    import_seeds();
    size_seeds();
    static const char cfg[] = "{\"name\": \"fz\", \"model\": {\"d_model\": 16, \"mixer\": [\"gma\", \"sdpa\"], \"n_layers\": 2},"
                              " \"train\": {\"lr\": 1e-3}}\0model.d_model=3\0train.batch_size=0x10\0device=cuda";
    seed("config", "sets.bin", cfg, sizeof cfg - 1);
    printf("fuzz_seeds: corpora under %s\n", g_out);
    return 0;
}
