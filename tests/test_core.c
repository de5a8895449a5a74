/* test_core.c: configuration (validation messages, overrides, resolved JSON), safetensors,
 * token shards, the recall generator, evaluation windows and learning-rate schedules. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/safetensors.h"
#include "data/lm/lmdata.h"
#include "data/lm/recall.h"
#include "data/lm/shard.h"
#include "nn/mixers/mixer.h"
#include "nn/params.h"
#include "optim/optim.h"
#include "testutil.h"

static int load_text(Config *c, const char *js) {
    cfg_defaults(c);
    return cfg_load_text(c, js, "test.json");
}

/* gma_hash: deterministic, and every byte counts (the 64-byte lane blocks, whole words and
 * the tail) */
START_TEST(test_hash_every_byte_counts) {
    unsigned char b[141];
    for (int i = 0; i < (int)sizeof b; i++) b[i] = (unsigned char)(7 * i + 1);
    uint64_t h = gma_hash(b, sizeof b, GMA_HASH_SEED);
    ck_assert(h == gma_hash(b, sizeof b, GMA_HASH_SEED));
    ck_assert(h != gma_hash(b, sizeof b - 1, GMA_HASH_SEED));
    for (int i = 0; i < (int)sizeof b; i++) {
        b[i] ^= 0x10;
        ck_assert_msg(gma_hash(b, sizeof b, GMA_HASH_SEED) != h, "byte %d does not change the hash", i);
        b[i] ^= 0x10;
    }
    /* words swapped between lanes or blocks change it too */
    uint64_t w[24];
    for (int i = 0; i < 24; i++) w[i] = 0x1234567ULL * (uint64_t)(i + 1);
    uint64_t hw = gma_hash(w, sizeof w, GMA_HASH_SEED);
    for (int i = 1; i < 24; i += 3) {
        uint64_t t = w[0];
        w[0] = w[i], w[i] = t;
        ck_assert_msg(gma_hash(w, sizeof w, GMA_HASH_SEED) != hw, "swapping words 0 and %d does not change the hash", i);
        w[i] = w[0], w[0] = t;
    }
}
END_TEST

/* command-line numbers: the whole string, in range; a seed is any non-negative 64-bit value */
/* gma_write_file_atomic: a plain path replaced whole; through a symbolic link the linked
 * file is replaced and the link kept; a path that is not a regular file (a pipe through
 * /proc/self/fd, as /dev/stdout is) written straight, the link left a link */
START_TEST(test_write_atomic_targets) {
    size_t n;
    char *b, link[4096], target[4096];
    snprintf(target, sizeof target, "%s", tu_path("target.json"));
    snprintf(link, sizeof link, "%s", tu_path("link.json"));
    ck_assert_int_eq(gma_write_file_atomic(target, "old", 3), 0);
    ck_assert_int_eq(symlink(target, link), 0);
    ck_assert_int_eq(gma_write_file_atomic(link, "new!", 4), 0);
    struct stat st;
    ck_assert(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    b = gma_read_file(target, &n);
    ck_assert(b && n == 4 && !memcmp(b, "new!", 4));
    free(b);
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    char fdpath[64], pipelink[4096], got[16] = {0};
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fds[1]);
    snprintf(pipelink, sizeof pipelink, "%s", tu_path("stdout"));
    ck_assert_int_eq(symlink(fdpath, pipelink), 0);
    ck_assert_msg(gma_write_file_atomic(pipelink, "piped", 5) == 0, "%s", gma_error());
    ck_assert_int_eq(read(fds[0], got, sizeof got - 1), 5);
    ck_assert_str_eq(got, "piped");
    ck_assert(lstat(pipelink, &st) == 0 && S_ISLNK(st.st_mode));
    close(fds[0]), close(fds[1]);
    /* a shell's redirection to a file (/dev/stdout > FILE): appended to what is there, the
     * file not replaced */
    int fd = open(tu_path("redirected"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert(fd >= 0 && write(fd, "head\n", 5) == 5);
    char fdlink[4096];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
    snprintf(fdlink, sizeof fdlink, "%s", tu_path("fdlink"));
    ck_assert_int_eq(symlink(fdpath, fdlink), 0);
    ck_assert_msg(gma_write_file_atomic(fdlink, "json\n", 5) == 0, "%s", gma_error());
    close(fd);
    b = gma_read_file(tu_path("redirected"), &n);
    ck_assert_msg(b && n == 10 && !memcmp(b, "head\njson\n", 10), "%s", b ? b : "(none)");
    free(b);
    ck_assert(lstat(fdlink, &st) == 0 && S_ISLNK(st.st_mode));
}
END_TEST

START_TEST(test_parse_numbers) {
    long x;
    ck_assert_int_eq(gma_parse_long("42", 0, 100, &x), 0);
    ck_assert_int_eq(x, 42);
    ck_assert_int_eq(gma_parse_long("101", 0, 100, &x), -1);
    ck_assert_int_eq(gma_parse_long("4x", 0, 100, &x), -1);
    ck_assert_int_eq(gma_parse_long("", 0, 100, &x), -1);
    unsigned long long u = 0;
    ck_assert_int_eq(gma_parse_u64("18446744073709551615", &u), 0);
    ck_assert(u == 18446744073709551615ULL);
    ck_assert_int_eq(gma_parse_u64("0", &u), 0);
    ck_assert(u == 0);
    const char *bad[] = {"-1", "-0", "18446744073709551616", "", "7 ", "0x10", "1e3"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        u = 99;
        ck_assert_msg(gma_parse_u64(bad[i], &u) == -1, "'%s' accepted", bad[i]);
        ck_assert(u == 99);
    }
}
END_TEST

START_TEST(test_config_errors) {
    Config c;
    ck_assert_int_eq(load_text(&c, "{\"model\": {\"d_model\": 64, \"n_heads\": 4}}"), 0);
    ck_assert_int_eq(c.model.d_model, 64);
    ck_assert_int_ne(load_text(&c, "{\"model\": {\"d_modle\": 64}}"), 0);
    ck_assert_str_eq(gma_error(), "test.json: unknown key model.d_modle (did you mean model.d_model?)");
    /* keys of the modules' stored sections, under another section's prefix: found, ranged, suggested */
    ck_assert_int_eq(load_text(&c, "{\"model\": {\"pos\": \"none\", \"attn_bias\": false, \"auto_threshold\": 9}, "
                                   "\"train\": {\"eval_every\": 7}, \"data\": {\"recall_pairs\": 3, \"task\": \"text\"}}"), 0);
    ck_assert_str_eq(cfg_enum_name(&c, "model.pos"), "none");
    ck_assert(cfg_num(&c, "model.attn_bias") == 0 && cfg_num(&c, "model.auto_threshold") == 9);
    ck_assert(cfg_num(&c, "train.eval_every") == 7 && cfg_num(&c, "data.recall_pairs") == 3);
    ck_assert_str_eq(cfg_enum_name(&c, "data.task"), "text");
    ck_assert_int_ne(load_text(&c, "{\"train\": {\"eval_evry\": 7}}"), 0);
    ck_assert_str_eq(gma_error(), "test.json: unknown key train.eval_evry (did you mean train.eval_every?)");
    ck_assert_int_ne(cfg_set(&c, "data.recall_pairs=0"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key data.recall_pairs: 0 is out of range"));
    ck_assert_int_ne(cfg_set(&c, "model.pos=rotary"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key model.pos: \"rotary\" is not one of learned|sinusoidal|none"));
    ck_assert_int_ne(load_text(&c, "{\"train\": {\"lr\": \"fast\"}}"), 0);
    ck_assert_str_eq(gma_error(), "test.json: key train.lr: expected a number");
    ck_assert_int_ne(load_text(&c, "{\"train\": {\"steps\": -3}}"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key train.steps: -3 is out of range"));
    ck_assert_int_ne(load_text(&c, "{\"train\": {\"steps\": 2.5}}"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "expected an integer"));
    ck_assert_int_ne(load_text(&c, "{\n  \"seed\": 1,\n  \"model\": {\"mixer\": gma}\n}"), 0);
    ck_assert_str_eq(gma_error(), "test.json: malformed JSON at line 3, column 22");
    ck_assert_int_ne(load_text(&c, "{\"model\": {\"mixer\": \"flash\"}}"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key model.mixer: unknown mixer \"flash\""));
    ck_assert_int_ne(load_text(&c, "{\"train\": {\"schedule\": \"step\"}}"), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key train.schedule: \"step\" is not one of cosine|linear|constant"));
    ck_assert_int_ne(load_text(&c, "[1, 2]"), 0);
    /* cross-field checks */
    ck_assert_int_eq(load_text(&c, "{\"model\": {\"d_model\": 65, \"n_heads\": 4}}"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key model.d_model: 65 is not divisible"));
    ck_assert_int_eq(load_text(&c, "{\"model\": {\"max_seq_len\": 64}, \"train\": {\"seq_len\": 128}}"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key train.seq_len: 128 is longer than model.max_seq_len = 64"));
    ck_assert_int_eq(load_text(&c, "{\"model\": {\"n_layers\": 3, \"mixer\": [\"gma\", \"sdpa\"]}}"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key model.mixer: 2 names for 3 layers"));
    /* the convolutional stem: classifiers of one image with mean or max pooling, dilations 1..64 */
    ck_assert_int_eq(load_text(&c, "{\"model\": {\"stem\": \"conv\"}}"), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key model.stem: only classifiers"));
    const char *cls = "\"task\": \"classify\", \"stem\": \"conv\"}, \"data\": {\"source\": \"cls\", \"path\": \"x\"}";
    char text[512];
    snprintf(text, sizeof text, "{\"model\": {\"pooling\": \"cls\", %s}", cls);
    ck_assert_int_eq(load_text(&c, text), 0);
    ck_assert_int_ne(cfg_validate(&c), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "key model.stem: the convolutional stem takes one image"));
    const char *bad[] = {"1,x", "0", "1,,2", "1,", "65", "", "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(text, sizeof text, "{\"model\": {\"stem_dilations\": \"%s\", %s}", bad[i], cls);
        ck_assert_int_eq(load_text(&c, text), 0);
        ck_assert_msg(cfg_validate(&c) != 0, "dilations \"%s\" accepted", bad[i]);
        ck_assert_ptr_nonnull(strstr(gma_error(), "key model.stem_dilations"));
    }
    snprintf(text, sizeof text, "{\"model\": {\"stem_dilations\": \"1,3,64\", %s}", cls);
    ck_assert_int_eq(load_text(&c, text), 0);
    ck_assert_msg(cfg_validate(&c) == 0, "%s", gma_error());
}
END_TEST

/* String values are UTF-8 without NUL (config.json, summary.json and the checkpoint
 * metadata must read back in JSON); a section given as a non-object says so; values echoed
 * in messages stay on one line; cJSON's nesting limit is named */
START_TEST(test_config_text_values) {
    Config c;
    static const struct { const char *text, *want; } bad[] = {
        {"{\"name\": \"run\\u0000x\"}", "test.json: key name: the value holds a NUL character (\\u0000) at byte 3"},
        {"{\"train\": {\"sample_prompt\": \"\\u0000\"}}", "key train.sample_prompt: the value holds a NUL character"},
        {"{\"name\": \"r\xff\"}", "test.json: key name: the value is not valid UTF-8 (byte 1)"},
        {"{\"data\": {\"path\": \"d\xc3\x28\"}}", "key data.path: the value is not valid UTF-8 (byte 1)"},
        {"{\"data\": {\"path\": \"\xed\xa0\x80\"}}", "key data.path: the value is not valid UTF-8 (byte 0)"}, /* a surrogate */
        {"{\"model\": {\"mixer\": [\"gma\", \"s\xc0\x80\"]}}", "key model.mixer: the value holds a NUL character"},
        {"{\"model\": 5}", "test.json: key model: expected an object (the section's keys), got a number"},
        {"{\"train\": [1]}", "key train: expected an object (the section's keys), got a list"},
        {"{\"device\": \"cp\\nu\"}", "key device: \"cp\\nu\" is not one of cpu|cuda"},
        {"{\"na\\u0000me\": \"x\"}", "test.json: unknown key na\\xC0\\x80me"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_msg(load_text(&c, bad[i].text) != 0, "case %zu accepted", i);
        ck_assert_msg(strstr(gma_error(), bad[i].want) && !strchr(gma_error(), '\n'), "case %zu: %s", i, gma_error());
    }
    /* a \\u0000 that is an escaped backslash and text is no NUL; valid UTF-8 passes */
    const char *good = "{\"name\": \"caf\xc3\xa9\\\\u0000\", \"train\": {\"sample_prompt\": \"\xf0\x9f\x99\x82\\n\"}}";
    ck_assert_msg(load_text(&c, good) == 0, "%s", gma_error());
    ck_assert_str_eq(c.name, "caf\xc3\xa9\\u0000");
    ck_assert_str_eq(c.train.sample_prompt, "\xf0\x9f\x99\x82\n");
    ck_assert_int_ne(cfg_set(&c, "name=a\xc3"), 0);
    ck_assert_str_eq(gma_error(), "--set: key name: the value is not valid UTF-8 (byte 1)");
    ck_assert_int_ne(cfg_set(&c, "train.schedule=a\nb"), 0);
    ck_assert_msg(strstr(gma_error(), "\"a\\nb\" is not one of") && !strchr(gma_error(), '\n'), "%s", gma_error());
    /* nesting: 1001 levels (cJSON stops at 1000) against a plain syntax error */
    char *deep = malloc(5 * 1001 + 1001 + 2), *q = deep;
    for (int i = 0; i < 1001; i++) memcpy(q, "{\"a\":", 5), q += 5;
    *q++ = '1';
    for (int i = 0; i < 1001; i++) *q++ = '}';
    *q = 0;
    ck_assert_int_ne(load_text(&c, deep), 0);
    ck_assert_str_eq(gma_error(), "test.json: JSON nested deeper than 1000 levels at line 1, column 5001");
    free(deep);
    ck_assert_int_ne(load_text(&c, "{\"a\": [[[1]]}"), 0);
    ck_assert_msg(strstr(gma_error(), "malformed JSON at line 1"), "%s", gma_error());
}
END_TEST

START_TEST(test_config_set_and_roundtrip) {
    Config c, d;
    cfg_defaults(&c);
    ck_assert_int_eq(cfg_set(&c, "train.lr=0.01"), 0);
    ck_assert(cfg_num(&c, "train.lr") == 0.01);
    ck_assert_int_eq(cfg_set(&c, "model.mixer=sdpa,gma,gma,gma"), 0);
    ck_assert_int_eq(c.model.mixer.n, 4);
    ck_assert_str_eq(cfg_layer_mixer(&c, 0), "sdpa");
    /* the mixers are resolved when read: each layer's vtable without a name compared */
    ck_assert_ptr_eq(mixer_of_layer(&c, 0), mixer_find("sdpa"));
    ck_assert_ptr_eq(mixer_of_layer(&c, 3), mixer_find("gma"));
    ck_assert_int_eq(cfg_set(&c, "model.mixer=mamba"), 0);
    ck_assert_ptr_eq(mixer_of_layer(&c, 2), mixer_find("mamba"));
    ck_assert_int_eq(cfg_set(&c, "model.mlp=false"), 0);
    ck_assert(cfg_num(&c, "model.mlp") == 0);
    ck_assert_int_ne(cfg_set(&c, "model.mlp=maybe"), 0);
    ck_assert_int_ne(cfg_set(&c, "nope=1"), 0);
    ck_assert_str_eq(gma_error(), "--set: unknown key nope");
    ck_assert_int_ne(cfg_set(&c, "train.lr"), 0);
    ck_assert_int_ne(cfg_set(&c, "train.lr=nan"), 0); /* NaN passed the range check; now not a JSON number */
    ck_assert_ptr_nonnull(strstr(gma_error(), "is not a number"));
    ck_assert(cfg_num(&c, "train.lr") == 0.01);
    char *js = cfg_to_json(&c);
    ck_assert_int_eq(load_text(&d, js), 0);
    free(js);
    ck_assert_int_eq(memcmp(&c, &d, sizeof c), 0);
}
END_TEST

/* a list-of-strings key (CFGT_STRLIST, train.freeze): a JSON list or a comma-separated
 * --set; each element a non-empty string without commas; written back as a list */
START_TEST(test_config_string_list) {
    Config c, d;
    cfg_defaults(&c);
    ck_assert_str_eq(optim_freeze_list(&c), "");
    ck_assert_int_eq(cfg_list_count(optim_freeze_list(&c)), 0);
    ck_assert_int_eq(load_text(&c, "{\"train\": {\"freeze\": [\"blocks.0.*\", \"tok_emb.weight\"]}}"), 0);
    ck_assert_str_eq(optim_freeze_list(&c), "blocks.0.*,tok_emb.weight");
    ck_assert_int_eq(cfg_list_count(optim_freeze_list(&c)), 2);
    const char *p = optim_freeze_list(&c);
    char item[64];
    ck_assert(cfg_list_next(&p, item, sizeof item) && !strcmp(item, "blocks.0.*"));
    ck_assert(cfg_list_next(&p, item, sizeof item) && !strcmp(item, "tok_emb.weight"));
    ck_assert(!cfg_list_next(&p, item, sizeof item));
    char *js = cfg_to_json(&c);
    ck_assert_msg(strstr(js, "\"freeze\":\t[\"blocks.0.*\", \"tok_emb.weight\"]"), "%s", js);
    cfg_defaults(&d);
    ck_assert_int_eq(load_text(&d, js), 0);
    free(js);
    ck_assert_str_eq(optim_freeze_list(&d), optim_freeze_list(&c));
    ck_assert_int_eq(cfg_set(&c, "train.freeze=ln_f.*,blocks.?.mlp.*"), 0);
    ck_assert_str_eq(optim_freeze_list(&c), "ln_f.*,blocks.?.mlp.*");
    ck_assert_int_eq(cfg_set(&c, "train.freeze=[\"a\"]"), 0);
    ck_assert_str_eq(optim_freeze_list(&c), "a");
    ck_assert_int_eq(cfg_set(&c, "train.freeze="), 0);
    ck_assert_str_eq(optim_freeze_list(&c), "");
    /* refused, the value left as it was */
    ck_assert_int_eq(cfg_set(&c, "train.freeze=keep"), 0);
    ck_assert_int_ne(cfg_set(&c, "train.freeze=a,,b"), 0);
    ck_assert_msg(strstr(gma_error(), "key train.freeze: element 1 is empty"), "%s", gma_error());
    ck_assert_str_eq(optim_freeze_list(&c), "keep");
    ck_assert_int_ne(load_text(&c, "{\"train\": {\"freeze\": \"a\"}}"), 0);
    ck_assert_msg(strstr(gma_error(), "key train.freeze: expected a list of strings"), "%s", gma_error());
    ck_assert_int_ne(load_text(&c, "{\"train\": {\"freeze\": [\"a\", 3]}}"), 0);
    ck_assert_msg(strstr(gma_error(), "element 1 is not a string"), "%s", gma_error());
    ck_assert_int_ne(load_text(&c, "{\"train\": {\"freeze\": [\"a,b\"]}}"), 0);
    ck_assert_msg(strstr(gma_error(), "element 0 holds a comma"), "%s", gma_error());
    char big[700];
    memset(big, 'x', sizeof big - 1), big[sizeof big - 1] = 0;
    char set[720];
    snprintf(set, sizeof set, "train.freeze=%s", big);
    ck_assert_int_eq(cfg_set(&c, "train.freeze=keep"), 0);
    ck_assert_int_ne(cfg_set(&c, set), 0);
    ck_assert_msg(strstr(gma_error(), "longer than 511 characters"), "%s", gma_error());
    ck_assert_str_eq(optim_freeze_list(&c), "keep");
}
END_TEST

START_TEST(test_safetensors_roundtrip) {
    real a[6] = {1, -2, 3.5f, 4, 5, 6}, b[3] = {7, 8, 9};
    StTensor t[2] = {{"x.weight", 2, {2, 3}, a}, {"x.bias", 1, {3}, b}};
    const char *mk[] = {"step"}, *mv[] = {"12"};
    const char *path = tu_path("t.safetensors");
    ck_assert_int_eq(st_write(path, t, 2, mk, mv, 1), 0);
    StFile f;
    ck_assert_msg(st_open(&f, path) == 0, "%s", gma_error());
    ck_assert_int_eq(f.n, 2);
    ck_assert_str_eq(st_meta(&f, "step"), "12");
    const StEntry *e = st_find(&f, "x.weight");
    ck_assert_ptr_nonnull(e);
    ck_assert_int_eq(e->shape[0], 2);
    ck_assert_int_eq(e->shape[1], 3);
    real back[6];
    st_read_tensor(e, back);
    ck_assert_int_eq(memcmp(back, a, sizeof a), 0);
    st_close(&f);
    /* truncated: the data ends before the offsets do */
    size_t len;
    char *bytes = gma_read_file(path, &len);
    const char *cut = tu_path("cut.safetensors");
    FILE *o = fopen(cut, "wb");
    fwrite(bytes, 1, len - 5, o);
    fclose(o);
    ck_assert_int_ne(st_open(&f, cut), 0);
    { /* cut in the data: the file's size and the size its header promises */
        char want_cut[128];
        snprintf(want_cut, sizeof want_cut, "cut.safetensors: truncated: %zu bytes, the header needs %zu", len - 5, len);
        ck_assert_msg(strstr(gma_error(), want_cut), "%s", gma_error());
    }
    /* garbage header length */
    o = fopen(cut, "wb");
    fwrite("\xff\xff\xff\xff\xff\xff\x00\x00{}", 1, 10, o);
    fclose(o);
    ck_assert_int_ne(st_open(&f, cut), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "header length"));
    /* cut inside the header: its length at offset 0 says how much is missing */
    o = fopen(cut, "wb");
    fwrite(bytes, 1, 40, o);
    fclose(o);
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)(unsigned char)bytes[i] << (8 * i);
    char want[128];
    snprintf(want, sizeof want, "cut.safetensors: truncated: 40 bytes, the header needs %llu", (unsigned long long)hl + 8);
    ck_assert_int_ne(st_open(&f, cut), 0);
    ck_assert_msg(strstr(gma_error(), want), "%s", gma_error());
    o = fopen(cut, "wb");
    fwrite(bytes, 1, 5, o);
    fclose(o);
    ck_assert_int_ne(st_open(&f, cut), 0);
    ck_assert_msg(strstr(gma_error(), "truncated: 5 bytes, the header length at offset 0 needs 8"), "%s", gma_error());
    free(bytes);
}
END_TEST

/* a safetensors file with the given JSON header and n zero data bytes */
static const char *raw_st(const char *header, size_t n) {
    const char *path = tu_path("raw.safetensors");
    FILE *o = fopen(path, "wb");
    uint64_t hl = strlen(header);
    for (int i = 0; i < 8; i++) fputc((int)(hl >> (8 * i)) & 0xff, o);
    fwrite(header, 1, hl, o);
    for (size_t i = 0; i < n; i++) fputc(0, o);
    fclose(o);
    return path;
}

/* hostile headers are refused with one line, no overflow, no crash (found under ASan/UBSan) */
START_TEST(test_safetensors_hostile) {
    static const struct { const char *header, *msg; } cases[] = {
        {"{\"__metadata__\": [\"a\"], \"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", "not an object"},
        {"{\"__metadata__\": {\"a\": \"b\"}, \"__metadata__\": {\"c\": \"d\", \"e\": \"f\"}}", "given twice"},
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904], \"data_offsets\": [0, 0]}}", "bad shape"},
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 0]}}", "bad shape"},
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [1e300], \"data_offsets\": [0, 8]}}", "bad shape"},
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [0.5], \"data_offsets\": [0, 8]}}", "bad shape"},
        {"{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [\"0\", \"8\"]}}", "data_offsets"},
        {"{\"x\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, 8]}}", "dtype F16"},
        {"{\"x\\ny\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", "control character"},
    };
    StFile f;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(st_open(&f, raw_st(cases[i].header, 8)) != 0, "case %zu accepted", i);
        ck_assert_msg(strstr(gma_error(), cases[i].msg) && !strchr(gma_error(), '\n'), "case %zu: %s", i, gma_error());
    }
    ck_assert_msg(st_open(&f, raw_st("{\"x\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 8)) == 0, "%s",
                  gma_error());
    st_close(&f);
}
END_TEST

START_TEST(test_shard) {
    uint32_t tok[5] = {1, 2, 3, 4, 0};
    const char *p = tu_path("s.bin");
    ck_assert_int_eq(shard_write(p, tok, 5, 10), 0);
    TokenShard s;
    ck_assert_int_eq(shard_open(&s, p, 1), 0);
    ck_assert_int_eq(s.width, 2);
    ck_assert_int_eq(s.count, 5);
    ck_assert_int_eq(shard_get(&s, 3), 4);
    shard_close(&s);
    /* token outside the vocabulary is refused by the writer */
    uint32_t bad[2] = {1, 11};
    ck_assert_int_ne(shard_write(tu_path("bad.bin"), bad, 2, 10), 0);
    ck_assert(!gma_path_exists(tu_path("bad.bin")));
    /* truncated */
    size_t len;
    char *bytes = gma_read_file(p, &len);
    FILE *o = fopen(tu_path("trunc.bin"), "wb");
    fwrite(bytes, 1, len - 1, o);
    fclose(o);
    ck_assert_int_ne(shard_open(&s, tu_path("trunc.bin"), 1), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "truncated"));
    /* foreign file */
    tu_write(tu_path("foreign.bin"), "this is not a shard at all, it is text....");
    ck_assert_int_ne(shard_open(&s, tu_path("foreign.bin"), 1), 0);
    ck_assert_ptr_nonnull(strstr(gma_error(), "bad magic at offset 0"));
    /* a token count whose byte size wraps around 2^64 to the header alone */
    for (int width = 2; width <= 4; width += 2) {
        uint8_t h[32] = "GMATOKS";
        h[8] = 1, h[12] = (uint8_t)width, h[24] = 10;
        h[23] = width == 2 ? 0x80 : 0x40; /* 2^63 x 2 or 2^62 x 4 bytes = 0 mod 2^64 */
        o = fopen(tu_path("wrap.bin"), "wb");
        fwrite(h, 1, 32, o);
        fclose(o);
        ck_assert_int_ne(shard_open(&s, tu_path("wrap.bin"), 1), 0);
        ck_assert_msg(strstr(gma_error(), "offset 16"), "%s", gma_error());
    }
    free(bytes);
}
END_TEST

START_TEST(test_recall) {
    RecallTask t;
    ck_assert_int_eq(recall_init(&t, 40, 5, 0, 24, 7), 0);
    ck_assert_int_eq(t.queries, 5);
    int32_t tok[24], tgt[24], tok2[24], tgt2[24];
    recall_example(&t, 1, 3, tok, tgt);
    recall_example(&t, 1, 3, tok2, tgt2);
    ck_assert_int_eq(memcmp(tok, tok2, sizeof tok), 0);
    recall_example(&t, 2, 3, tok2, tgt2);
    ck_assert_int_ne(memcmp(tok, tok2, sizeof tok), 0); /* another split, another example */
    int K = 19, scored = 0;
    ck_assert_int_eq(tok[10], 1); /* separator after 5 pairs */
    for (int i = 0; i < 24; i++) {
        if (tgt[i] < 0) continue;
        scored++;
        ck_assert(tok[i] >= 2 && tok[i] < 2 + K);       /* a key */
        ck_assert_int_eq(tgt[i], tok[i + 1]);           /* its value follows */
        int found = 0;
        for (int p = 0; p < 10; p += 2) found |= tok[p] == tok[i] && tok[p + 1] == tgt[i];
        ck_assert_msg(found, "query %d does not match a stored pair", i);
    }
    ck_assert_int_eq(scored, 5);
    ck_assert_int_ne(recall_init(&t, 10, 9, 0, 64, 1), 0); /* more pairs than keys */
}
END_TEST

/* the two rules that use no key-value matching, on a window written by hand: values 12, 12
 * of 4 pairs; queries answer 12, 12, 11, 13 */
START_TEST(test_recall_baselines) {
    RecallTask t;
    ck_assert_int_eq(recall_init(&t, 20, 4, 4, 18, 1), 0);
    int32_t tok[18] = {2, 11, 3, 12, 4, 12, 5, 13, 1, 3, 12, 4, 12, 2, 11, 5, 13, 0}, freq[4], unans[4];
    ck_assert_int_eq(recall_query_pos(&t, 0), 9);
    recall_baselines(&t, tok, freq, unans);
    int32_t want_unans[4] = {12, 11, 11, 13}; /* q1: 11 and 12 tie at one left, the earlier pair wins */
    for (int q = 0; q < 4; q++) {
        ck_assert_int_eq(freq[q], 12);
        ck_assert_int_eq(unans[q], want_unans[q]);
    }
}
END_TEST

START_TEST(test_eval_windows) {
    /* every target of a split is scored exactly once, with and without a stride */
    uint32_t tok[103];
    for (int i = 0; i < 103; i++) tok[i] = (uint32_t)(i % 50);
    const char *dir = tu_tmpdir();
    char p[1024];
    snprintf(p, sizeof p, "%s/train.bin", dir);
    ck_assert_int_eq(shard_write(p, tok, 103, 50), 0);
    snprintf(p, sizeof p, "%s/valid.bin", dir);
    ck_assert_int_eq(shard_write(p, tok, 103, 50), 0);
    Config c;
    cfg_defaults(&c);
    ck_assert_int_eq(cfg_set(&c, "data.source=shards"), 0);
    snprintf(c.data.path, sizeof c.data.path, "%s", dir);
    for (int stride = 0; stride <= 7; stride += 7) {
        c.data.eval_stride = stride;
        LmData d;
        LmSpec s = lmdata_spec(&c, 16);
        ck_assert_msg(lmdata_open(&d, &s) == 0, "%s", gma_error());
        int N = 16, B = 3, hits[103] = {0};
        int32_t tk[48], tg[48];
        for (long b = 0; lmdata_eval_batch(&d, SPLIT_VALID, b, B, N, tk, tg) > 0; b++)
            for (int r = 0; r < B * N; r++)
                if (tg[r] >= 0) {
                    /* the scored target is the token after the input token */
                    ck_assert_int_eq(tg[r], (tk[r] + 1) % 50 == 0 && tk[r] == 49 ? 0 : tk[r] + 1);
                    hits[0]++;
                }
        ck_assert_int_eq(hits[0], 102);
        lmdata_close(&d);
    }
}
END_TEST

/* the parameter table's initialisers: their ranges and standard deviations on 512 x 256 */
START_TEST(test_init_distributions) {
    ParamTable pt = {0};
    int xa = pt_add2(&pt, "x", 512, 256, INIT_XAVIER_UNIFORM, 0, GROUP_WEIGHT);
    int le = pt_add2(&pt, "l", 512, 256, INIT_LECUN_NORMAL, 0, GROUP_WEIGHT);
    int no = pt_add2(&pt, "n", 512, 256, INIT_NORMAL, 0.02, GROUP_WEIGHT);
    real *p = xcalloc(pt.total, sizeof(real));
    Rng r;
    rng_seed(&r, 5);
    pt_init(&pt, p, &r);
    const double bound[] = {sqrt(6.0 / (512 + 256)), 2 / sqrt(256.0) / 0.87962566103423978, 1e9},
                 sd[] = {sqrt(6.0 / (512 + 256)) / sqrt(3.0), 1 / sqrt(256.0), 0.02};
    const int idx[] = {xa, le, no};
    for (int k = 0; k < 3; k++) {
        const real *x = PT_PTR(p, &pt, idx[k]);
        double s2 = 0, mx = 0;
        for (int i = 0; i < 512 * 256; i++) s2 += (double)x[i] * x[i], mx = fmax(mx, fabs(x[i]));
        double got = sqrt(s2 / (512 * 256));
        ck_assert_msg(mx <= bound[k] * (1 + 1e-6), "init %d: max |x| %g beyond %g", k, mx, bound[k]);
        ck_assert_msg(fabs(got / sd[k] - 1) < 0.01, "init %d: std %g, want %g", k, got, sd[k]);
    }
    /* the truncated normal reaches close to its bound; an untruncated one would pass it */
    const real *l = PT_PTR(p, &pt, le);
    double mx = 0;
    for (int i = 0; i < 512 * 256; i++) mx = fmax(mx, fabs(l[i]));
    ck_assert(mx > 0.95 * bound[1]);
    free(p);
    pt_free(&pt);
    /* the ramp: row t of a [V, D] table is max(t - 1, 0) / (V - 2) times one N(0, a^2) row */
    ParamTable rt = {0};
    int ra = pt_add2(&rt, "ramp", 257, 512, INIT_RAMP, 1.5, GROUP_EMBED);
    p = xcalloc(rt.total, sizeof(real));
    pt_init(&rt, p, &r);
    const real *e = PT_PTR(p, &rt, ra), *u = e + 256 * 512;
    double s2 = 0;
    for (int c = 0; c < 512; c++) s2 += (double)u[c] * u[c];
    ck_assert_msg(fabs(sqrt(s2 / 512) / 1.5 - 1) < 0.1, "ramp: the last row's std %g, want 1.5", sqrt(s2 / 512));
    for (int t = 0; t < 257; t++)
        for (int c = 0; c < 512; c++) {
            double want = t ? (t - 1) / 255.0 * u[c] : 0;
            ck_assert_msg(fabs(e[t * 512 + c] - want) <= 1e-6 * (1 + fabs(want)), "ramp row %d col %d: %g, want %g", t, c,
                          e[t * 512 + c], want);
        }
    ck_assert(e[512 + 7] == 0 && e[2 * 512 + 7] != 0);
    free(p);
    pt_free(&rt);
}
END_TEST

START_TEST(test_schedule) {
    Config c;
    cfg_defaults(&c);
    const OptimCfg *t = optim_cfg(&c); /* follows the cfg_set below */
#define SET(kv) ck_assert_int_eq(cfg_set(&c, "train." kv), 0)
    long steps = 110;
    SET("lr=1");
    SET("warmup=10");
    SET("min_lr_ratio=0.1");
    ck_assert(fabs(optim_lr(t, steps, 0) - 0.1) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 9) - 1.0) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 10) - 1.0) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 60) - 0.55) < 1e-12); /* cosine midpoint */
    ck_assert(fabs(optim_lr(t, steps, 110) - 0.1) < 1e-12);
    SET("schedule=linear");
    ck_assert(fabs(optim_lr(t, steps, 60) - 0.55) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 35) - 0.775) < 1e-12);
    SET("schedule=constant");
    ck_assert(fabs(optim_lr(t, steps, 100) - 1.0) < 1e-12);
    /* rsqrt after warmup: lr sqrt(warmup / (step + 1)); LRA's constant * linear_warmup *
     * rsqrt_decay with the same peak */
    SET("schedule=rsqrt");
    ck_assert(fabs(optim_lr(t, steps, 4) - 0.5) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 9) - 1.0) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 39) - 0.5) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 1000) - sqrt(10.0 / 1001)) < 1e-12);
    /* train.lr_first_step 0, the release's constant * linear_warmup * rsqrt_decay evaluated at
     * the 0-based step: lr 0 at the first update, the peak at step W, lr sqrt(W / step) after */
    SET("lr_first_step=0");
    ck_assert(optim_lr(t, steps, 0) == 0);
    ck_assert(fabs(optim_lr(t, steps, 5) - 0.5) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 10) - 1.0) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 40) - 0.5) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 1000) - sqrt(10.0 / 1000)) < 1e-12);
    SET("warmup=0"); /* no warmup: lr / sqrt(max(step, 1)) */
    ck_assert(fabs(optim_lr(t, steps, 0) - 1.0) < 1e-12 && fabs(optim_lr(t, steps, 4) - 0.5) < 1e-12);
    SET("warmup=10");
    SET("lr_first_step=1");
    /* cosine to zero over decay_steps (LRA's steps_per_cycle), then the floor */
    SET("schedule=cosine");
    SET("min_lr_ratio=0");
    SET("decay_steps=200");
    ck_assert(fabs(optim_lr(t, steps, 110) - 0.5) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 210) - 0.0) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 500) - 0.0) < 1e-12);
    /* ... and from step 0 (the release's linear_warmup * cosine_decay): the warmup ends a step
     * later, the cosine is the same */
    SET("lr_first_step=0");
    ck_assert(optim_lr(t, steps, 0) == 0 && fabs(optim_lr(t, steps, 9) - 0.9) < 1e-12 && fabs(optim_lr(t, steps, 10) - 1.0) < 1e-12);
    ck_assert(fabs(optim_lr(t, steps, 110) - 0.5) < 1e-12);
    SET("lr_first_step=1");
    SET("decay_steps=0");
    ck_assert(fabs(optim_lr(t, steps, 60) - 0.5) < 1e-12);
    /* decay groups */
    SET("weight_decay=0.1");
    ck_assert(optim_decay_for(t, GROUP_WEIGHT) == 0.1);
    ck_assert(optim_decay_for(t, GROUP_BIAS) == 0);
    ck_assert(optim_decay_for(t, GROUP_NORM) == 0);
    ck_assert(optim_decay_for(t, GROUP_EMBED) == 0);
    ck_assert(optim_decay_for(t, GROUP_MIXTURE) == 0);
    SET("decay_mixture=true");
    ck_assert(optim_decay_for(t, GROUP_MIXTURE) == 0.1);
}
#undef SET
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_hash_every_byte_counts);
    tcase_add_test(tc, test_write_atomic_targets);
    tcase_add_test(tc, test_parse_numbers);
    tcase_add_test(tc, test_config_errors);
    tcase_add_test(tc, test_config_text_values);
    tcase_add_test(tc, test_config_set_and_roundtrip);
    tcase_add_test(tc, test_config_string_list);
    tcase_add_test(tc, test_safetensors_roundtrip);
    tcase_add_test(tc, test_safetensors_hostile);
    tcase_add_test(tc, test_shard);
    tcase_add_test(tc, test_recall);
    tcase_add_test(tc, test_recall_baselines);
    tcase_add_test(tc, test_eval_windows);
    tcase_add_test(tc, test_init_distributions);
    tcase_add_test(tc, test_schedule);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
