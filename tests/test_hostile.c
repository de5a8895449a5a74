/* test_hostile.c: hostile input that once crashed or was silently accepted:
 * a pax record shorter than its own prefix, 0- and 1-token shards, a directory and text for
 * gmaeval --data, malformed
 * checkpoint steps, orphaned checkpoint directories, gmacheck sizes, an empty BPE key,
 * run names that leave runs/, duplicate keys (config JSON, safetensors) and the source
 * named in --set / --device errors. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "archive_build.h"
#include "ckpt_edit.h"
#include "data/fetch/archive.h"
#include "data/lm/shard.h"
#include "data/text/tokenizer.h"

static void train_tiny(const char *out, int steps) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=%d", tu_path("tiny.json"), out, steps) == 0,
                  "%s", g_out);
}

/* 1: "3 path=..." claims 3 bytes, less than its own prefix: refused, not a negative memcpy */
START_TEST(test_pax_short_record) {
    static const char *recs[] = {"3 path=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", "6 path=xyz\n", "12 path=abc\n\n"};
    for (int k = 0; k < 3; k++) {
        unsigned char tar[512 * 6] = {0};
        size_t n = strlen(recs[k]);
        tar_header(tar, "PaxHeader", n, 'x');
        memcpy(tar + 512, recs[k], n);
        tar_header(tar + 1024, "file.txt", 2, '0');
        memcpy(tar + 1536, "hi", 2);
        FILE *f = fopen(tu_path("pax.tar"), "wb");
        fwrite(tar, 1, sizeof tar, f);
        fclose(f);
        int rc = archive_extract(tu_path("pax.tar"), tu_path("pax_out"));
        if (k < 2) {
            ck_assert_int_ne(rc, 0);
            ck_assert_msg(strstr(gma_error(), "pax") && strstr(gma_error(), "offset 0"), "%s", gma_error());
            ck_assert_int_eq(run("./bin/gmadata extract %s --out %s", tu_path("pax.tar"), tu_path("pax_cli")), 1);
            ck_assert_msg(ce_lines(g_out) == 1 && strstr(g_out, "pax.tar"), "%s", g_out);
        } else { /* a well-formed record still names the entry */
            ck_assert_msg(rc == 0, "%s", gma_error());
            ck_assert(gma_path_exists(tu_path("pax_out/abc")));
        }
    }
}
END_TEST

/* 2: gmaeval --data on a shard with fewer than 2 tokens */
START_TEST(test_eval_tiny_shards) {
    train_tiny(tu_path("run"), 1);
    uint32_t t[1] = {3};
    for (int n = 0; n < 2; n++) {
        ck_assert_int_eq(shard_write(tu_path("few.bin"), t, (uint64_t)n, 20), 0);
        ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data %s", tu_path("run"), tu_path("few.bin")), 2);
        char want[64];
        snprintf(want, sizeof want, "only %d tokens", n);
        ck_assert_msg(strstr(g_out, want) && strstr(g_out, "few.bin") && ce_lines(g_out) == 1, "%s", g_out);
    }
    /* a directory, and text, where a shard belongs: said so, with what to give instead */
    ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data %s", tu_path("run"), tu_tmpdir()), 2);
    ck_assert_msg(strstr(g_out, "a directory") && strstr(g_out, "--data-path") && ce_lines(g_out) == 1, "%s", g_out);
    static const char *const texts[2] = {"hi\n", "The cat sat on the mat, and then it sat on the hat.\n"};
    for (int k = 0; k < 2; k++) {
        tu_write(tu_path("notes.txt"), texts[k]);
        ck_assert_int_eq(run("./bin/gmaeval --checkpoint %s --data %s", tu_path("run"), tu_path("notes.txt")), 2);
        ck_assert_msg(strstr(g_out, "notes.txt: not a token shard but a text file") && strstr(g_out, "gmadata encode") && ce_lines(g_out) == 1,
                      "%s", g_out);
    }
}
END_TEST

/* 3: the checkpoint step is parsed in full and range-checked */
START_TEST(test_checkpoint_step_values) {
    train_tiny(tu_path("run"), 2);
    static const char *bad[] = {"-1", "-12", "abc", "1e5", "99999999999", "", "3 "};
    char model[1100];
    snprintf(model, sizeof model, "%s/ckpt_00000002/model.safetensors", tu_path("run"));
    size_t len;
    char *orig = gma_read_file(model, &len);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ce_set_meta(model, "step", bad[i]);
        ck_assert_int_eq(run("./bin/gmatrain --resume %s --quiet --set train.steps=6", tu_path("run")), 2);
        ck_assert_msg(strstr(g_out, "metadata step") && strstr(g_out, "model.safetensors") && ce_lines(g_out) == 1, "%s: %s",
                      bad[i], g_out);
    }
    static const char *keys[] = {"tokens_seen", "best_valid", "best_step", "best_valid_acc"};
    static const char *vals[] = {"nan", "-3", "1.5", "2"};
    for (int i = 0; i < 4; i++) {
        FILE *f = fopen(model, "wb");
        fwrite(orig, 1, len, f);
        fclose(f);
        ce_set_meta(model, keys[i], vals[i]);
        ck_assert_int_eq(run("./bin/gmatrain --resume %s --quiet --set train.steps=6", tu_path("run")), 2);
        ck_assert_msg(strstr(g_out, keys[i]) && ce_lines(g_out) == 1, "%s: %s", keys[i], g_out);
    }
    FILE *f = fopen(model, "wb"); /* the untouched checkpoint resumes */
    fwrite(orig, 1, len, f);
    fclose(f);
    free(orig);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=3", tu_path("run")) == 0, "%s", g_out);
}
END_TEST

/* 4: what killed or failed saves leave behind goes on the next start and at each save */
START_TEST(test_orphan_checkpoints_removed) {
    train_tiny(tu_path("run"), 2);
    char p[1200], q[1200];
    const char *run_dir = tu_path("run");
    snprintf(p, sizeof p, "%s/ckpt_00000009", run_dir); /* only model.safetensors: disk full */
    gma_mkdirs(p);
    snprintf(p, sizeof p, "%s/ckpt_00000002/model.safetensors", run_dir);
    snprintf(q, sizeof q, "cp %s %s/ckpt_00000009/", p, run_dir);
    ck_assert_int_eq(system(q), 0);
    snprintf(p, sizeof p, "%s/ckpt_00000008", run_dir); /* a write killed half way */
    gma_mkdirs(p);
    snprintf(p, sizeof p, "%s/ckpt_00000008/model.safetensors.tmp.12345", run_dir);
    tu_write(p, "partial");
    snprintf(p, sizeof p, "%s/ckpt_00000002/optim.safetensors.tmp.777", run_dir); /* beside a good one */
    tu_write(p, "partial");
    snprintf(p, sizeof p, "%s/latest.tmp.4242", run_dir);
    ck_assert_int_eq(symlink("ckpt_00000002", p), 0);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=4", run_dir) == 0, "%s", g_out);
    ck_assert_int_eq(run("ls -a %s %s/ckpt_*", run_dir, run_dir), 0);
    ck_assert_msg(!strstr(g_out, ".tmp.") && !strstr(g_out, "ckpt_00000009") && !strstr(g_out, "ckpt_00000008"), "%s", g_out);
    ck_assert_msg(strstr(g_out, "ckpt_00000004") && strstr(g_out, "ckpt_00000003") && !strstr(g_out, "ckpt_00000002"), "%s",
                  g_out);
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test", run_dir) == 0, "%s", g_out);
}
END_TEST

/* 5: gmacheck sizes are parsed and checked before anything is allocated */
START_TEST(test_gmacheck_sizes) {
    ck_assert_int_eq(run("./bin/gmacheck --device cpu --steps 1 --seq 2000000000 --batch 1"), 2);
    ck_assert_msg(strstr(g_out, "--seq") && ce_lines(g_out) == 1, "%s", g_out);
    ck_assert_int_eq(run("./bin/gmacheck --device cpu --steps 1 --seq 16777216 --batch 1000"), 2);
    ck_assert_msg(strstr(g_out, "GiB") && ce_lines(g_out) == 1, "%s", g_out);
    static const char *bad[] = {"--batch 0x10", "--batch 0", "--steps 1e3", "--seq -5", "--tol abc", "--batch 99999999999"};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(run("./bin/gmacheck --device cpu %s", bad[i]), 2);
        ck_assert_msg(ce_lines(g_out) == 1, "%s: %s", bad[i], g_out);
    }
}
END_TEST

/* 6: an empty encoder.json key is refused (it is no token, and memcpy got NULL) */
START_TEST(test_bpe_empty_key) {
    const char *text = "the cat sat on the mat; the cat ate the rat\n";
    FILE *f = fopen(tu_path("t.txt"), "w");
    for (int i = 0; i < 20; i++) fputs(text, f);
    fclose(f);
    Tokenizer *tk = tokenizer_bpe_train(tu_path("t.txt"), 270, 0);
    ck_assert_ptr_nonnull(tk);
    ck_assert_int_eq(gma_mkdirs(tu_path("tok")), 0);
    ck_assert_int_eq(tokenizer_save(tk, tu_path("tok")), 0);
    uint32_t V = tokenizer_vocab_size(tk);
    tokenizer_free(tk);
    char p[1200];
    snprintf(p, sizeof p, "%s/encoder.json", tu_path("tok"));
    char *enc = gma_read_file(p, NULL);
    ck_assert(enc[0] == '{');
    char *edited = malloc(strlen(enc) + 64);
    snprintf(edited, strlen(enc) + 64, "{\"\": %u, %s", V, enc + 1);
    tu_write(p, edited);
    free(edited);
    free(enc);
    char spec[1200];
    snprintf(spec, sizeof spec, "bpe:%s", tu_path("tok"));
    ck_assert_ptr_null(tokenizer_load(spec, NULL));
    ck_assert_msg(strstr(gma_error(), "encoder.json") && strstr(gma_error(), "empty"), "%s", gma_error());
}
END_TEST

/* 7: run names, duplicate keys, strict --set numbers, the source each message names */
START_TEST(test_names_duplicates_sources) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    static const char *names[] = {"../../../tmp/x", "a/b", "..", "."};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(run("cd %s && %s/bin/gmatrain --config tiny.json --quiet --set 'name=%s'", tu_tmpdir(),
                             getenv("PWD") ? getenv("PWD") : ".", names[i]),
                         2);
        ck_assert_msg(strstr(g_out, "key name") && ce_lines(g_out) == 1, "%s: %s", names[i], g_out);
    }
    ck_assert(!gma_path_exists(tu_path("runs")));
    tu_write(tu_path("dup.json"), "{\"seed\": 1, \"train\": {\"lr\": 0.1, \"steps\": 3, \"lr\": 0.2}}");
    ck_assert_int_eq(run("./bin/gmatrain --config %s --quiet", tu_path("dup.json")), 2);
    ck_assert_msg(strstr(g_out, "dup.json: key train.lr is given twice") && ce_lines(g_out) == 1, "%s", g_out);
    tu_write(tu_path("dup2.json"), "{\"seed\": 1, \"train\": {\"steps\": 3}, \"train\": {\"lr\": 0.2}}");
    ck_assert_int_eq(run("./bin/gmatrain --config %s --quiet", tu_path("dup2.json")), 2);
    ck_assert_msg(strstr(g_out, "key train is given twice"), "%s", g_out);

    ck_assert_int_eq(run("./bin/gmatrain --config %s --quiet --set model.d_model=3 --out %s", tu_path("tiny.json"), tu_path("o")), 2);
    ck_assert_msg(strstr(g_out, "--set model.d_model=3: key model.d_model") && !strstr(g_out, "tiny.json"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config %s --quiet --set model.n_heads=3 --out %s", tu_path("tiny.json"), tu_path("o")), 2);
    ck_assert_msg(strstr(g_out, "--set model.n_heads=3:"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config %s --quiet --set model.max_seq_len=8 --out %s", tu_path("tiny.json"), tu_path("o")), 2);
    ck_assert_msg(strstr(g_out, "--set model.max_seq_len=8:"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config %s --quiet --set train.lr=0.5 --set train.seq_len=99 --out %s",
                         tu_path("tiny.json"), tu_path("o")), 2);
    ck_assert_msg(strstr(g_out, "--set train.seq_len=99: key train.seq_len"), "%s", g_out);
    tu_write(tu_path("bad_file.json"), "{\"model\": {\"d_model\": 15, \"n_heads\": 2}}");
    ck_assert_int_eq(run("./bin/gmatrain --config %s --quiet --set train.lr=0.5", tu_path("bad_file.json")), 2);
    ck_assert_msg(strstr(g_out, "bad_file.json: key model.d_model"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config %s --quiet --device tpu", tu_path("tiny.json")), 2);
    ck_assert_msg(strstr(g_out, "--device: key device: \"tpu\"") && ce_lines(g_out) == 1, "%s", g_out);
    static const char *nums[] = {"0x10", "inf", "nan", " 8", "+8", "8.", ".5", "1e", "0x1p3"};
    for (int i = 0; i < 9; i++) {
        ck_assert_int_eq(run("./bin/gmatrain --config %s --quiet --set 'train.batch_size=%s'", tu_path("tiny.json"), nums[i]), 2);
        ck_assert_msg(strstr(g_out, "is not a number") && ce_lines(g_out) == 1, "%s: %s", nums[i], g_out);
    }
    Config c;
    cfg_defaults(&c);
    ck_assert_int_eq(cfg_set(&c, "train.lr=-0"), 0);
    ck_assert_int_eq(cfg_set(&c, "train.batch_size=1e1"), 0);
    ck_assert_int_eq(c.train.batch_size, 10);
    ck_assert_int_eq(cfg_set(&c, "train.lr=2.5E-4"), 0);
}
END_TEST

/* 7: a safetensors header that names a tensor (or a metadata key) twice */
START_TEST(test_safetensors_duplicates) {
    static const char *hdr[] = {
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
        "{\"__metadata__\":{\"step\":\"1\",\"step\":\"2\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}"};
    static const char *want[] = {"tensor a is given twice", "metadata key step is given twice"};
    for (int k = 0; k < 2; k++) {
        size_t hl = strlen(hdr[k]);
        unsigned char buf[512] = {0};
        for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
        memcpy(buf + 8, hdr[k], hl);
        FILE *f = fopen(tu_path("dup.safetensors"), "wb");
        fwrite(buf, 1, 8 + hl + 8, f);
        fclose(f);
        StFile s;
        ck_assert_int_ne(st_open(&s, tu_path("dup.safetensors")), 0);
        ck_assert_msg(strstr(gma_error(), want[k]) && strstr(gma_error(), "dup.safetensors"), "%s", gma_error());
    }
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("hostile");
    TCase *tc = tcase_create("hostile");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_pax_short_record);
    tcase_add_test(tc, test_eval_tiny_shards);
    tcase_add_test(tc, test_checkpoint_step_values);
    tcase_add_test(tc, test_orphan_checkpoints_removed);
    tcase_add_test(tc, test_gmacheck_sizes);
    tcase_add_test(tc, test_bpe_empty_key);
    tcase_add_test(tc, test_names_duplicates_sources);
    tcase_add_test(tc, test_safetensors_duplicates);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
