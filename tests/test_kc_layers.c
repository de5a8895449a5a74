/* test_kc_layers.c: gma.n_components as one number or one entry per GMA layer (the config
 * engine's CFGT_INTS key type, and its CFGT_CHOICES type whose choices the registry
 * supplies, the layers' tensors, training, checkpoints, resume,
 * sampling, the routing analysis, the refusal of a list of the wrong length), and the
 * Dirichlet prior's drops of components (gma.dirichlet_*: K per layer in metrics.jsonl,
 * kept across a resume). */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/config.h"
#include "core/safetensors.h"
#include "model/model.h"
#include "testutil.h"
#include "train/config_registry.h"

/* the first cap - 1 bytes of the configuration reference of the registry installed now */
static void reference_head(char *buf, size_t cap) {
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    cfg_print_reference(f);
    rewind(f);
    memset(buf, 0, cap);
    ck_assert(fread(buf, 1, cap - 1, f) > 0);
    fclose(f);
}

/* ---- the engine: a section of its own with one CFGT_INTS key ---- */
typedef struct IntsCfg { CfgInts k; } IntsCfg;
static const CfgKey ints_keys[] = {
    {"k", CFGT_INTS, offsetof(IntsCfg, k), 0, "3", 1, 100, NULL, "A number or a list."},
};
static const CfgSection ints_section = {"t", sizeof(IntsCfg), ints_keys, 1, NULL, NULL};
static const CfgSection *const ints_sections[] = {&ints_section};
static const CfgRegistry ints_reg = {.sections = ints_sections, .n_sections = 1};

START_TEST(test_ints_key_type) {
    cfg_register(&ints_reg);
    Config c;
    cfg_defaults(&c);
    const IntsCfg *v = cfg_section(&c, "t");
    ck_assert(v->k.n == 1 && v->k.v[0] == 3);
    ck_assert(cfg_num(&c, "t.k") == 3);
    ck_assert_int_eq(cfg_set(&c, "t.k=4,8,2"), 0);
    ck_assert(v->k.n == 3 && v->k.v[0] == 4 && v->k.v[1] == 8 && v->k.v[2] == 2);
    ck_assert(cfg_num(&c, "t.k") == 8); /* the largest entry */
    ck_assert_int_eq(cfg_set(&c, "t.k=[5, 6]"), 0);
    ck_assert(v->k.n == 2 && v->k.v[1] == 6);
    ck_assert_int_eq(cfg_load_text(&c, "{\"t\": {\"k\": [7, 9, 11]}}", "x.json"), 0);
    ck_assert(v->k.n == 3 && v->k.v[2] == 11);
    char *js = cfg_to_json(&c);
    ck_assert_msg(strstr(js, "[7, 9, 11]"), "%s", js);
    free(js);
    ck_assert_int_eq(cfg_load_text(&c, "{\"t\": {\"k\": 12}}", "x.json"), 0);
    ck_assert(v->k.n == 1 && v->k.v[0] == 12);
    js = cfg_to_json(&c);
    ck_assert_msg(strstr(js, "\"k\":\t12") || strstr(js, "\"k\": 12"), "%s", js);
    /* the resolved JSON loads back to the same value */
    Config d;
    cfg_defaults(&d);
    ck_assert_int_eq(cfg_load_text(&d, js, "r.json"), 0);
    ck_assert(((const IntsCfg *)cfg_section(&d, "t"))->k.n == 1 && ((const IntsCfg *)cfg_section(&d, "t"))->k.v[0] == 12);
    free(js);
    /* refused, naming the key (and the element), the value unchanged */
    const char *bad_set[] = {"t.k=0", "t.k=4,x", "t.k=4,,8", "t.k=[4, \"a\"]", "t.k=[4,", "t.k=2.5", "t.k=4,101", "t.k="};
    for (size_t i = 0; i < sizeof bad_set / sizeof *bad_set; i++) {
        ck_assert_msg(cfg_set(&c, bad_set[i]) != 0, "%s accepted", bad_set[i]);
        ck_assert_msg(strstr(gma_error(), "key t.k"), "%s: %s", bad_set[i], gma_error());
        ck_assert(v->k.n == 1 && v->k.v[0] == 12);
    }
    ck_assert_int_ne(cfg_set(&c, "t.k=4,101"), 0);
    ck_assert_msg(strstr(gma_error(), "element 1"), "%s", gma_error());
    const char *bad_json[] = {"{\"t\": {\"k\": \"4\"}}", "{\"t\": {\"k\": []}}", "{\"t\": {\"k\": [1, true]}}",
                              "{\"t\": {\"k\": [1, 200]}}"};
    for (size_t i = 0; i < sizeof bad_json / sizeof *bad_json; i++) {
        ck_assert_msg(cfg_load_text(&c, bad_json[i], "x.json") != 0, "%s accepted", bad_json[i]);
        ck_assert_msg(strstr(gma_error(), "x.json: key t.k"), "%s: %s", bad_json[i], gma_error());
    }
    /* the reference names the type */
    char buf[512];
    reference_head(buf, sizeof buf);
    ck_assert_msg(strstr(buf, "| `t.k` | int or list | `3` | [1, 100] |"), "%s", buf);
    config_register_all();
}
END_TEST

/* ---- the engine: a CFGT_CHOICES key whose choices the registry supplies ---- */
/* a row over Config (a CfgChoices is too large for a stored section) on model.mixer's field */
static const CfgKey pick_keys[] = {
    {"t.pick", CFGT_CHOICES, CFG_OFF(model.mixer), 0, "pear", 0, 0, NULL, "A name or a list."},
};
static const CfgSection pick_section = {NULL, 0, pick_keys, 1, NULL, NULL};
static const CfgSection *const pick_sections[] = {&pick_section};
static const CfgChoiceList pick_lists[] = {{"t.pick", "fruit", "apple|pear|plum"}};
static const CfgRegistry pick_reg = {.lists = pick_lists, .n_lists = 1, .sections = pick_sections, .n_sections = 1};

START_TEST(test_choices_key_type) {
    cfg_register(&pick_reg);
    Config c;
    cfg_defaults(&c);
    const CfgChoices *v = &c.model.mixer;
    ck_assert(v->n == 1 && !strcmp(v->name[0], "pear") && v->id[0] == 1);
    ck_assert_int_eq(cfg_set(&c, "t.pick=plum,apple,plum"), 0);
    ck_assert(v->n == 3 && v->id[0] == 2 && v->id[1] == 0 && !strcmp(v->name[2], "plum"));
    ck_assert_int_eq(cfg_set(&c, "t.pick=[\"apple\", \"pear\"]"), 0);
    ck_assert(v->n == 2 && v->id[1] == 1);
    ck_assert_int_eq(cfg_load_text(&c, "{\"t\": {\"pick\": [\"pear\", \"plum\", \"apple\"]}}", "x.json"), 0);
    char *js = cfg_to_json(&c);
    Config d;
    cfg_defaults(&d);
    ck_assert_int_eq(cfg_load_text(&d, js, "r.json"), 0); /* the resolved JSON loads back to the same value */
    free(js);
    ck_assert(memcmp(&d.model.mixer, v, sizeof *v) == 0);
    /* refused, naming the key and the registry's choices, the value unchanged */
    const char *bad[] = {"t.pick=kiwi", "t.pick=pear,kiwi", "t.pick=[\"pear\", 3]", "t.pick=[\"pear\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_msg(cfg_set(&c, bad[i]) != 0, "%s accepted", bad[i]);
        ck_assert_msg(strstr(gma_error(), "key t.pick"), "%s: %s", bad[i], gma_error());
        ck_assert(v->n == 3 && v->id[2] == 0);
    }
    ck_assert_int_ne(cfg_set(&c, "t.pick=kiwi"), 0);
    ck_assert_msg(strstr(gma_error(), "unknown fruit \"kiwi\" (known: apple|pear|plum)"), "%s", gma_error());
    /* the reference lists the registry's choices */
    char buf[512];
    reference_head(buf, sizeof buf);
    ck_assert_msg(strstr(buf, "| `t.pick` | string or list | `pear` | apple,pear,plum | A name or a list. (apple, pear, plum). |"),
                  "%s", buf);
    config_register_all();
}
END_TEST

static const char *KL =
    "{\"name\": \"kl\", \"seed\": 3,\n"
    " \"model\": {\"d_model\": 16, \"n_layers\": 3, \"n_heads\": 2, \"max_seq_len\": 24, \"mixer\": [\"gma\", \"sdpa\", \"gma\"]},\n"
    " \"gma\": {\"n_components\": [4, 8], \"chunk\": 5},\n"
    " \"train\": {\"steps\": 6, \"batch_size\": 4, \"seq_len\": 24, \"lr\": 0.01, \"warmup\": 0, \"schedule\": \"constant\",\n"
    "           \"eval_every\": 0, \"eval_batches\": 2, \"log_every\": 2, \"checkpoint_every\": 3},\n"
    " \"data\": {\"recall_vocab\": 20, \"recall_pairs\": 4, \"recall_valid\": 16, \"recall_test\": 16}}\n";

/* the shape of a tensor of a run's latest checkpoint, as "[a, b, ...]" */
static void shape_of(const char *run_dir, const char *name, char *out, size_t cap) {
    char p[1024];
    snprintf(p, sizeof p, "%s/latest/model.safetensors", run_dir);
    StFile st;
    ck_assert_msg(st_open(&st, p) == 0, "%s", gma_error());
    const StEntry *t = st_find(&st, name);
    ck_assert_msg(t != NULL, "%s: no %s", p, name);
    size_t n = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < t->ndim; i++) n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    snprintf(out + n, cap - n, "]");
    st_close(&st);
}

START_TEST(test_kc_per_layer_end_to_end) {
    tu_write(tu_path("kl.json"), KL);
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet", tu_path("kl.json"), tu_path("full")) == 0, "%s", g_out);
    char s[128];
    shape_of(tu_path("full"), "blocks.0.mixer.gma.mu", s, sizeof s);
    ck_assert_str_eq(s, "[2, 4, 8]");
    shape_of(tu_path("full"), "blocks.2.mixer.gma.mu", s, sizeof s);
    ck_assert_str_eq(s, "[2, 8, 8]");
    shape_of(tu_path("full"), "blocks.2.mixer.gma.prior_logits", s, sizeof s);
    ck_assert_str_eq(s, "[2, 8]");
    /* the run's config keeps the list */
    char p[1024];
    snprintf(p, sizeof p, "%s/config.json", tu_path("full"));
    char *cj = gma_read_file(p, NULL);
    cJSON *root = cJSON_Parse(cj);
    const cJSON *k = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "gma"), "n_components");
    ck_assert_msg(cJSON_IsArray(k) && cJSON_GetArraySize(k) == 2 && cJSON_GetArrayItem(k, 1)->valueint == 8, "%s", cj);
    cJSON_Delete(root);
    free(cj);
    /* resume from the step-3 checkpoint gives the same tensors as the straight run */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.steps=3", tu_path("kl.json"), tu_path("half")) == 0,
                  "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=6", tu_path("half")) == 0, "%s", g_out);
    tu_same_tensors(tu_path("full"), tu_path("half"), "latest/model.safetensors");
    /* sampling: incremental decoding through both GMA layers */
    ck_assert_msg(run("./bin/gmasample --checkpoint %s --prompt-ids \"2 3 4\" --tokens 5 --temperature 0", tu_path("full")) == 0,
                  "%s", g_out);
    /* the routing analysis: each layer with its own Kc */
    ck_assert_msg(run("./bin/gmaeval --checkpoint %s --data test --analyze-json %s", tu_path("full"), tu_path("a.json")) == 0,
                  "%s", g_out);
    ck_assert_msg(strstr(g_out, "Kc per layer (up to 8)"), "%s", g_out);
    char *aj = gma_read_file(tu_path("a.json"), NULL);
    root = cJSON_Parse(aj);
    const cJSON *layers = cJSON_GetObjectItem(root, "layers");
    ck_assert(cJSON_GetArraySize(layers) == 2);
    for (int l = 0; l < 2; l++) {
        const cJSON *lo = cJSON_GetArrayItem(layers, l);
        int want = l == 0 ? 4 : 8;
        ck_assert_int_eq(cJSON_GetObjectItem(lo, "n_components")->valueint, want);
        const cJSON *h0 = cJSON_GetArrayItem(cJSON_GetObjectItem(lo, "heads"), 0);
        ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(h0, "components")), want);
        ck_assert(cJSON_GetObjectItem(h0, "used_components")->valuedouble <= want);
    }
    cJSON_Delete(root);
    free(aj);
    /* k-means seeding and the monitor with re-seeding, each layer with its own Kc */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set gma.init=kmeans --set gma.on_collapse=reinit "
                      "--set gma.monitor_every=2 --set gma.patience=1 --set gma.util_min_share=0.9 --set train.steps=4",
                      tu_path("kl.json"), tu_path("km")) == 0, "%s", g_out);
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("km"));
    char *mj = gma_read_file(p, NULL);
    ck_assert_msg(strstr(mj, "\"event\":\"routing\",\"layer\":0") && strstr(mj, "\"event\":\"routing\",\"layer\":2"), "%s", mj);
    ck_assert_msg(strstr(mj, "\"reseeded\""), "%s", mj);
    free(mj);
    /* a single number still means every GMA layer */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set gma.n_components=5 --set train.steps=1",
                      tu_path("kl.json"), tu_path("one")) == 0, "%s", g_out);
    shape_of(tu_path("one"), "blocks.2.mixer.gma.mu", s, sizeof s);
    ck_assert_str_eq(s, "[2, 5, 8]");
}
END_TEST

/* a list whose length is not the number of GMA layers: one line naming the key, exit 2 */
START_TEST(test_kc_list_length_refused) {
    tu_write(tu_path("kl.json"), KL);
    const char *bad[] = {"4,8,16", "4"};
    int rc = run("./bin/gmatrain --config %s --out %s --quiet --set gma.n_components=%s", tu_path("kl.json"), tu_path("bad"), bad[0]);
    ck_assert_msg(rc == 2, "exit %d: %s", rc, g_out);
    ck_assert_msg(strstr(g_out, "--set gma.n_components=4,8,16: key gma.n_components: a list of 3 entries, but the model has 2 GMA layers"),
                  "%s", g_out);
    ck_assert_msg(strchr(g_out, '\n') == g_out + strlen(g_out) - 1, "not one line: %s", g_out);
    ck_assert(!gma_path_exists(tu_path("bad/config.json")));
    /* auto layers hold a GMA path and count */
    rc = run("./bin/gmatrain --config %s --out %s --quiet --set model.mixer=gma,auto,sdpa --set train.steps=1", tu_path("kl.json"),
             tu_path("auto"));
    ck_assert_msg(rc == 0, "exit %d: %s", rc, g_out);
    rc = run("./bin/gmatrain --config %s --out %s --quiet --set model.mixer=gma,sdpa,sdpa", tu_path("kl.json"), tu_path("bad2"));
    ck_assert_msg(rc == 2 && strstr(g_out, "key gma.n_components: a list of 2 entries, but the model has 1 GMA layer "), "exit %d: %s",
                  rc, g_out);
    (void)bad;
}
END_TEST

/* the Dirichlet prior drops components at its interval, logs K per layer, and a resumed
 * run keeps the dropped ones */
START_TEST(test_dirichlet_drops_components) {
    tu_write(tu_path("kl.json"), KL);
    const char *sets = "--set gma.dirichlet_weight=5 --set gma.dirichlet_alpha=0.1 --set gma.dirichlet_every=2 "
                       "--set gma.dirichlet_drop=0.08 --set train.lr=0.05 --set train.checkpoint_every=0 --set train.steps=12";
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet %s", tu_path("kl.json"), tu_path("dir"), sets) == 0, "%s", g_out);
    char p[1024];
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("dir"));
    char *m = gma_read_file(p, NULL);
    ck_assert_ptr_nonnull(m);
    /* rows at steps 2, 4, ..., 12 for layers 0 and 2; K falls in layer 2 (8 components) */
    int rows = 0;
    double k_first = -1, k_last = -1;
    for (char *line = strtok(m, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *o = cJSON_Parse(line);
        const cJSON *ev = cJSON_GetObjectItem(o, "event");
        if (cJSON_IsString(ev) && !strcmp(ev->valuestring, "components")) {
            rows++;
            int layer = cJSON_GetObjectItem(o, "layer")->valueint;
            double ka = cJSON_GetObjectItem(o, "k_active")->valuedouble;
            ck_assert(ka >= 1 && ka <= (layer == 0 ? 4 : 8));
            if (layer == 2 && k_first < 0) k_first = ka;
            if (layer == 2) k_last = ka;
        }
        cJSON_Delete(o);
    }
    free(m);
    ck_assert_int_eq(rows, 12);
    ck_assert_msg(k_last < 8 && k_last <= k_first, "layer 2 K %g -> %g", k_first, k_last);
    /* the checkpoint holds the dropped logits */
    snprintf(p, sizeof p, "%s/latest/model.safetensors", tu_path("dir"));
    StFile st;
    ck_assert_msg(st_open(&st, p) == 0, "%s", gma_error());
    const StEntry *t = st_find(&st, "blocks.2.mixer.gma.prior_logits");
    ck_assert_ptr_nonnull(t);
    real l[16];
    ck_assert(t->numel == 16);
    st_read_tensor(t, l);
    int dropped = 0;
    for (int i = 0; i < 16; i++) dropped += l[i] <= MIXER_DROPPED_LOGIT / 2;
    ck_assert_int_eq(16 - dropped, (int)(2 * k_last + 0.5));
    st_close(&st);
    /* a resumed run (the drops at steps 2, 4, 6 in its checkpoint) ends where the straight one does */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet %s --set train.steps=6 --set train.checkpoint_every=6",
                      tu_path("kl.json"), tu_path("dhalf"), sets) == 0, "%s", g_out);
    ck_assert_msg(run("./bin/gmatrain --resume %s --quiet --set train.steps=12", tu_path("dhalf")) == 0, "%s", g_out);
    tu_same_tensors(tu_path("dir"), tu_path("dhalf"), "latest/model.safetensors");
    /* off (weight 0): no rows, no drops */
    ck_assert_msg(run("./bin/gmatrain --config %s --out %s --quiet --set train.checkpoint_every=0", tu_path("kl.json"),
                      tu_path("nodir")) == 0, "%s", g_out);
    snprintf(p, sizeof p, "%s/metrics.jsonl", tu_path("nodir"));
    m = gma_read_file(p, NULL);
    ck_assert(!strstr(m, "\"components\""));
    free(m);
    /* refused with softmax routing and with re-seeding */
    int rc = run("./bin/gmatrain --config %s --out %s --quiet --set gma.dirichlet_weight=1 --set gma.routing=softmax",
                 tu_path("kl.json"), tu_path("bad"));
    ck_assert_msg(rc == 2 && strstr(g_out, "key gma.dirichlet_weight"), "exit %d: %s", rc, g_out);
    rc = run("./bin/gmatrain --config %s --out %s --quiet --set gma.dirichlet_weight=1 --set gma.on_collapse=reinit",
             tu_path("kl.json"), tu_path("bad"));
    ck_assert_msg(rc == 2 && strstr(g_out, "key gma.dirichlet_weight"), "exit %d: %s", rc, g_out);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("kc_layers");
    TCase *tc = tcase_create("kc_layers");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_ints_key_type);
    tcase_add_test(tc, test_choices_key_type);
    tcase_add_test(tc, test_kc_per_layer_end_to_end);
    tcase_add_test(tc, test_kc_list_length_refused);
    tcase_add_test(tc, test_dirichlet_drops_components);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
