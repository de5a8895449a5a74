/* test_limits.c: the programs at the edges of numbers and sizes: a checkpoint with finite
 * but huge weights (gmaeval and gmasample refuse its non-finite loss and logits), a
 * prompt longer than the model's window (gmasample says what it keeps), and runs whose
 * planned memory exceeds the machine (refused before anything is allocated, naming the
 * keys) and decoding states past an address-space limit (generation goes without them). */
#include <stdlib.h>
#include <string.h>

#include "ckpt_edit.h"

static void train_tiny(const char *out, int steps) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=%d", tu_path("tiny.json"), out, steps) == 0,
                  "%s", g_out);
}

/* 1: every weight 3e38 (finite, so the checkpoint loads): the loss and the logits are not
 * finite; both programs fail naming the checkpoint, the split or position */
START_TEST(test_huge_weights) {
    train_tiny(tu_path("run"), 1);
    char model[1100];
    snprintf(model, sizeof model, "%s/latest/model.safetensors", tu_path("run"));
    ce_fill_tensors(model, 3e38f);
    int rc = run("./bin/gmaeval --checkpoint %s --data valid", tu_path("run"));
    ck_assert_msg(rc == 1, "rc %d: %s", rc, g_out);
    ck_assert_msg(strstr(g_out, "valid loss is not finite") && strstr(g_out, "window 0") && strstr(g_out, "run/") &&
                      ce_lines(g_out) == 1,
                  "%s", g_out);
    rc = run("./bin/gmasample --checkpoint %s --prompt-ids 2,3 --tokens 3", tu_path("run"));
    ck_assert_msg(rc == 1, "rc %d: %s", rc, g_out);
    ck_assert_msg(strstr(g_out, "logits at position 2 (sample 0) are not finite") && strstr(g_out, "gmasample: ") &&
                      strstr(g_out, "run/"),
                  "%s", g_out);
    for (int t = 0; t < 2; t++) { /* greedy and sampled decoding alike */
        rc = run("./bin/gmasample --checkpoint %s --prompt-ids 2 --tokens 2 --temperature %d --no-cache", tu_path("run"), t);
        ck_assert_msg(rc == 1 && strstr(g_out, "are not finite"), "rc %d: %s", rc, g_out);
    }
}
END_TEST

/* 2: a prompt longer than model.max_seq_len (24): said once, on stderr; a short one says nothing */
START_TEST(test_long_prompt_note) {
    train_tiny(tu_path("run2"), 1);
    char ids[200] = "2";
    for (int i = 1; i < 30; i++) strcat(ids, ",3");
    ck_assert_msg(run("./bin/gmasample --checkpoint %s --prompt-ids %s --tokens 2", tu_path("run2"), ids) == 0,
                  "%s", g_out);
    const char *note = strstr(g_out, "the prompt's 30 tokens are more than model.max_seq_len 24: "
                                     "the model sees only its last 24");
    ck_assert_msg(note && !strstr(note + 1, "the prompt's"), "%s", g_out);
    ck_assert_msg(run("./bin/gmasample --checkpoint %s --prompt-ids 2,3,3 --tokens 2", tu_path("run2")) == 0,
                  "%s", g_out);
    ck_assert_msg(!strstr(g_out, "max_seq_len"), "%s", g_out);
}
END_TEST

/* 3: plans past the machine are refused before anything is allocated, one line naming the
 * sizes and keys, exit 2, no run directory: a batch past any machine's memory, and one past
 * an address-space limit (ulimit -v), where allocating once aborted with SIGABRT */
START_TEST(test_memory_plan_refused) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    int rc = run("./bin/gmatrain --config %s --out %s --set train.batch_size=1000000 --set gma.n_components=65536",
                 tu_path("tiny.json"), tu_path("huge"));
    ck_assert_msg(rc == 2, "rc %d: %s", rc, g_out);
    ck_assert_msg(strstr(g_out, "batch 1000000 x 24 (train.batch_size x train.seq_len) plans ") &&
                      strstr(g_out, "gma.n_components 65536 x model.n_heads 2") &&
                      strstr(g_out, "GiB of memory of this machine") && ce_lines(g_out) == 1,
                  "%s", g_out);
    ck_assert(!gma_path_exists(tu_path("huge")));
    rc = run("./bin/gmatrain --config %s --out %s --set model.pos=sinusoidal --set model.max_seq_len=16777216 --set "
             "model.d_model=65536", tu_path("tiny.json"), tu_path("huge"));
    ck_assert_msg(rc == 2 && strstr(g_out, "the position table: model.max_seq_len 16777216 x model.d_model 65536") &&
                      ce_lines(g_out) == 1,
                  "rc %d: %s", rc, g_out);
    rc = run("ulimit -v 4000000 && ./bin/gmatrain --config %s --out %s --set train.batch_size=128 --set gma.n_components=65536",
             tu_path("tiny.json"), tu_path("as"));
    ck_assert_msg(rc == 2, "rc %d: %s", rc, g_out);
    ck_assert_msg(strstr(g_out, "batch 128 x 24") && strstr(g_out, "gma.n_components 65536") &&
                      strstr(g_out, "GiB of address-space limit (ulimit -v) left") && ce_lines(g_out) == 1,
                  "%s", g_out);
    ck_assert(!gma_path_exists(tu_path("as")));
    /* gmaeval's --batch goes through the same plan */
    train_tiny(tu_path("run3"), 1);
    rc = run("./bin/gmaeval --checkpoint %s --data valid --batch 2000000000", tu_path("run3"));
    ck_assert_msg(rc == 2 && strstr(g_out, "batch 2000000000 x 24") && strstr(g_out, "run3") && ce_lines(g_out) == 1, "rc %d: %s",
                  rc, g_out);
}
END_TEST

/* 4: the decoding states of 8192 samples of an sdpa model with a window of 8192 (key/value
 * caches of about 18 GiB) under ulimit -v 4 GB: generation runs without them, where their
 * allocation once aborted */
START_TEST(test_decode_state_past_limit) {
    tu_write(tu_path("tiny.json"), CE_TINY);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=1 --set model.max_seq_len=8192 "
                      "--set model.mixer=sdpa", tu_path("tiny.json"), tu_path("long")) == 0,
                  "%s", g_out);
    int rc = run("(ulimit -v 4000000 && ./bin/gmasample --checkpoint %s --prompt-ids 2 --tokens 1 --samples 8192 "
                 "2>&1 >/dev/null)",
                 tu_path("long"));
    ck_assert_msg(rc == 0 && strstr(g_out, "8192 x 1 tokens in"), "rc %d: %s", rc, g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("limits");
    TCase *tc = tcase_create("limits");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_huge_weights);
    tcase_add_test(tc, test_long_prompt_note);
    tcase_add_test(tc, test_memory_plan_refused);
    tcase_add_test(tc, test_decode_state_past_limit);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
