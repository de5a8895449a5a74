/* test_configs.c: every JSON file shipped under configs/ loads with no unknown key and passes the
 * cross-field validation (run from the repository root). */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "model/model.h"
#include "nn/cls_head.h"
#include "testutil.h"

START_TEST(test_all_configs_validate) {
    glob_t g;
    ck_assert_int_eq(glob("configs/*.json", 0, NULL, &g), 0);
    ck_assert(g.gl_pathc >= 3);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        Config c;
        cfg_defaults(&c);
        ck_assert_msg(cfg_load_file(&c, g.gl_pathv[i]) == 0, "%s", gma_error());
        ck_assert_msg(cfg_validate(&c) == 0, "%s: %s", g.gl_pathv[i], gma_error());
    }
    printf("%zu configs validated\n", g.gl_pathc);
    globfree(&g);
}
END_TEST

/* docs/config.md's configuration reference is the schema's own (scripts/config_reference.sh) */
START_TEST(test_readme_reference_current) {
    char *readme = gma_read_file("docs/config.md", NULL);
    ck_assert_ptr_nonnull(readme);
    char buf[1 << 16];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    cfg_print_reference(f);
    fclose(f);
    ck_assert_msg(strstr(readme, buf) != NULL, "docs/config.md's configuration reference is out of date: run scripts/config_reference.sh");
    free(readme);
}
END_TEST

/* the LRA configs: every task and mixer, the release's settings (docs/lra.md's table) */
START_TEST(test_lra_configs) {
    static const char *tasks[] = {"listops", "text", "retrieval", "image"},
                      *mixers[] = {"gma", "sdpa", "linear", "performer", "linformer"};
    static const int eval_every[] = {50, 100, 100, 175}, len[] = {2000, 1000, 4000, 1024};
    for (int t = 0; t < 4; t++)
        for (int x = 0; x < 5; x++) {
            char path[256];
            snprintf(path, sizeof path, "configs/lra_%s_%s.json", tasks[t], mixers[x]);
            Config c;
            cfg_defaults(&c);
            ck_assert_msg(cfg_load_file(&c, path) == 0, "%s", gma_error());
            ck_assert_msg(cfg_validate(&c) == 0, "%s: %s", path, gma_error());
            ck_assert_str_eq(cfg_enum_name(&c, "model.task"), "classify");
            ck_assert_str_eq(cfg_enum_name(&c, "data.source"), "cls");
            ck_assert_str_eq(cfg_enum_name(&c, "data.task"), tasks[t]);
            ck_assert_str_eq(c.model.mixer.name[0], mixers[x]);
            ck_assert_int_eq(cfg_causal(&c), 0);
            /* every task: learned CLS token with its slot, MLP head with ReLU, projections
             * without bias, AdamW 0.9/0.98/1e-9 decaying every tensor, no clipping, the
             * release's evaluation period, the last checkpoint reported */
            ck_assert_str_eq(cfg_enum_name(&c, "model.pooling"), "cls");
            ck_assert_int_eq(c.data.max_len, len[t]);
            ck_assert_int_eq(c.train.seq_len, len[t] + 1);
            ck_assert_str_eq(cfg_enum_name(&c, "model.head_act"), "relu");
            ck_assert_int_eq(cls_head_cfg(&c)->head_hidden, c.model.d_ff);
            ck_assert_int_eq(cls_head_cfg(&c)->head_hidden2, t == 2 ? c.model.d_ff / 2 : 0);
            ck_assert(cfg_num(&c, "model.attn_bias") == 0);
            ck_assert_str_eq(cfg_enum_name(&c, "model.pos"), t == 3 ? "learned" : "sinusoidal");
            ck_assert_str_eq(cfg_enum_name(&c, "model.dense_init"), "xavier_uniform");
            ck_assert(cfg_num(&c, "model.mlp_bias_std") == 1e-6);
            ck_assert_int_eq(cfg_num(&c, "train.lr_first_step"), 0); /* the release's schedules see the 0-based step */
            /* the release's linear, performer and linformer attention take no padding mask, over
             * batches padded to the full length (the tasks with padding: ListOps, Text, Retrieval) */
            int unmasked = t < 3 && (!strcmp(mixers[x], "linear") || !strcmp(mixers[x], "performer") ||
                                     !strcmp(mixers[x], "linformer"));
            ck_assert_int_eq(cls_head_cfg(&c)->key_padding_mask, !unmasked);
            ck_assert_int_eq(c.data.pad_full, unmasked);
            /* Performer: no denominator stabiliser (0 for the ReLU kernel; the softmax kernel's 1e-6
             * only where the denominator is below it) */
            if (!strcmp(mixers[x], "performer")) ck_assert(cfg_num(&c, "gma.eps") == 0);
            ck_assert_str_eq(cfg_enum_name(&c, "data.text_valid"), t == 1 ? "test" : "heldout"); /* Text: the release validates on test */
            ck_assert(cfg_num(&c, "model.embed_std") == 1.0 && cls_head_cfg(&c)->cls_std == 0);
            ck_assert(cfg_num(&c, "train.beta1") == 0.9 && cfg_num(&c, "train.beta2") == 0.98 && cfg_num(&c, "train.adam_eps") == 1e-9);
            ck_assert(cfg_num(&c, "train.decay_embeddings") && cfg_num(&c, "train.decay_norms") && cfg_num(&c, "train.decay_biases") && cfg_num(&c, "train.decay_mixture"));
            ck_assert(cfg_num(&c, "train.grad_clip") == 0);
            ck_assert_int_eq(cfg_num(&c, "train.eval_every"), eval_every[t]);
            ck_assert_str_eq(cfg_enum_name(&c, "train.report"), "last");
            ck_assert_int_eq(c.train.eval_drop_last, t >= 2); /* tf.data drop_remainder: Retrieval and Image */
            ck_assert_str_eq(cfg_enum_name(&c, "train.schedule"), t == 3 ? "cosine" : "rsqrt");
            if (t < 3) ck_assert(fabs(cfg_num(&c, "train.lr") - 0.05 / sqrt(cfg_num(&c, "train.warmup"))) < 1e-9);
            /* the release's Linformer (k 16, one lr_kernel for keys and values) and Performer
             * (ReLU kernel with deterministic features; ListOps: softmax, 2 features, redrawn):
             * setting the expected values again must leave the config unchanged */
            Config e = c;
            if (!strcmp(mixers[x], "linformer")) tu_apply_sets(&e, "linformer.k=16;linformer.shared_kv=true");
            if (!strcmp(mixers[x], "performer"))
                tu_apply_sets(&e, t == 0 ? "performer.kernel=softmax;performer.features=2;performer.redraw=1"
                                         : "performer.kernel=relu;performer.features=0;performer.redraw=0");
            ck_assert_msg(memcmp(&e, &c, sizeof c) == 0, "%s: the %s settings differ from the release's", path, mixers[x]);
            if (t == 0) { /* ListOps: 4 layers, width 512, 8 heads, MLP 1024, length 2000, batch 32, 5000 steps */
                ck_assert_int_eq(c.model.n_layers, 4);
                ck_assert_int_eq(c.model.d_model, 512);
                ck_assert_int_eq(c.model.n_heads, 8);
                ck_assert_int_eq(c.model.d_ff, 1024);
                ck_assert_int_eq(c.train.batch_size, 32);
                ck_assert_int_eq(c.train.steps, 5000);
                ck_assert_int_eq(cls_head_cfg(&c)->n_classes, 10);
            }
            if (t == 3) { /* Image: 1 layer, width 128, 8 heads, q/k/v 64, MLP 128, cosine to zero */
                ck_assert_int_eq(c.model.n_layers, 1);
                ck_assert_int_eq(c.model.d_model, 128);
                ck_assert_int_eq(c.model.n_heads, 8);
                ck_assert_int_eq(cfg_qkv_dim(&c), 64);
                ck_assert_int_eq(c.model.d_ff, 128);
                ck_assert(cfg_num(&c, "train.min_lr_ratio") == 0 && cfg_num(&c, "train.decay_steps") == 35000 && cfg_num(&c, "train.warmup") == 175);
                ck_assert(cfg_num(&c, "train.weight_decay") == 0);
            }
            if (t == 1) { /* Text: 4 layers, width 256, 4 heads, MLP 1024 */
                ck_assert_int_eq(c.model.n_layers, 4);
                ck_assert_int_eq(c.model.d_model, 256);
                ck_assert_int_eq(c.model.n_heads, 4);
                ck_assert_int_eq(c.model.d_ff, 1024);
            }
        }
}
END_TEST

/* the Pathfinder configs (docs/lra.md, Pathfinder): every mixer, Path-32 and Path-X */
START_TEST(test_pathfinder_configs) {
    static const char *mixers[] = {"gma", "sdpa", "linear", "performer", "linformer"};
    for (int x = 0; x < 5; x++)
        for (int big = 0; big < 2; big++) {
            char path[256];
            snprintf(path, sizeof path, "configs/lra_%s_%s.json", big ? "pathx" : "pathfinder32", mixers[x]);
            Config c;
            cfg_defaults(&c);
            ck_assert_msg(cfg_load_file(&c, path) == 0, "%s", gma_error());
            ck_assert_msg(cfg_validate(&c) == 0, "%s: %s", path, gma_error());
            ck_assert_str_eq(cfg_enum_name(&c, "data.task"), "pathfinder");
            ck_assert_str_eq(c.model.mixer.name[0], mixers[x]);
            ck_assert_int_eq(cfg_causal(&c), 0);
            /* 160,000 training images: batch 512 (Path-X 64), 200 epochs, an evaluation and
             * one warmup epoch, cosine to zero, mean pooling, whole evaluation batches only */
            int B = big ? 64 : 512, epoch = 160000 / B;
            ck_assert_int_eq(c.train.batch_size, B);
            ck_assert_int_eq(c.train.steps, epoch * 200);
            ck_assert_int_eq(cfg_num(&c, "train.eval_every"), epoch);
            ck_assert_int_eq(cfg_num(&c, "train.warmup"), epoch);
            ck_assert_str_eq(cfg_enum_name(&c, "train.schedule"), "cosine");
            ck_assert(cfg_num(&c, "train.min_lr_ratio") == 0 && cfg_num(&c, "train.decay_steps") == c.train.steps);
            ck_assert_int_eq(c.train.eval_drop_last, 1);
            ck_assert_str_eq(cfg_enum_name(&c, "train.report"), "last");
            ck_assert_str_eq(cfg_enum_name(&c, "model.pooling"), "mean");
            ck_assert_int_eq(c.data.max_len, big ? 16384 : 1024);
            ck_assert_str_eq(cfg_enum_name(&c, "model.pos"), big ? "learned" : "sinusoidal");
            ck_assert(c.model.dropout == (big ? 0.1 : 0.2) && cfg_num(&c, "model.mlp_hidden_dropout") == c.model.dropout);
            ck_assert(cfg_num(&c, "train.grad_clip") == (big ? 1.0 : 0));
            ck_assert(cfg_num(&c, "model.mlp_bias_std") == 1e-6 && !strcmp(cfg_enum_name(&c, "model.head_init"), "lecun_normal"));
            ck_assert_int_eq(cfg_num(&c, "train.lr_first_step"), 0);
            /* the MLP biases are drawn, the block's other biases are zeros */
            c.model.vocab_size = 257;
            Model m;
            ck_assert_msg(model_build(&m, &c) == 0, "%s: %s", path, gma_error());
            const ParamInfo *fb = &m.pt.t[pt_find(&m.pt, "blocks.0.mlp.fc.bias")];
            const ParamInfo *pb = &m.pt.t[pt_find(&m.pt, "blocks.0.mlp.proj.bias")];
            ck_assert(fb->init == INIT_NORMAL && fb->init_a == 1e-6 && pb->init == INIT_NORMAL && pb->init_a == 1e-6);
            ck_assert(m.pt.t[pt_find(&m.pt, "blocks.0.ln1.bias")].init == INIT_ZERO);
            model_free(&m);
        }
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("configs");
    TCase *tc = tcase_create("configs");
    tcase_add_test(tc, test_all_configs_validate);
    tcase_add_test(tc, test_readme_reference_current);
    tcase_add_test(tc, test_lra_configs);
    tcase_add_test(tc, test_pathfinder_configs);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
