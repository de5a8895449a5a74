/* test_cli.c: the programs' command lines (run from the repository root): --help on stdout
 * with exit 0, --version as one line, the same exit codes everywhere, the scripts' usage,
 * `make help`. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *const PROGS[] = {"gmatrain", "gmaeval", "gmasample", "gmadata", "gmabench", "gmacheck"};

/* Run cmd with stdout and stderr kept apart: exit status, stdout into out, stderr into err. */
static int run_split(const char *cmd, char *out, size_t cap_out, char *err, size_t cap_err) {
    char full[2048];
    snprintf(full, sizeof full, "(%s 2>%s)", cmd, tu_path("stderr.txt"));
    int rc = tu_run(full, out, cap_out);
    char *e = gma_read_file(tu_path("stderr.txt"), NULL);
    snprintf(err, cap_err, "%s", e ? e : "");
    free(e);
    return rc;
}

static char g_so[65536], g_se[65536];

START_TEST(test_help_and_version) {
    char cmd[512];
    for (int i = 0; i < 6; i++) {
        snprintf(cmd, sizeof cmd, "./bin/%s --help", PROGS[i]);
        ck_assert_msg(run_split(cmd, g_so, sizeof g_so, g_se, sizeof g_se) == 0, "%s: %s", cmd, g_se);
        ck_assert_msg(strncmp(g_so, "usage:", 6) == 0 && g_se[0] == 0, "%s: stdout \"%.80s\" stderr \"%s\"", cmd, g_so, g_se);
        ck_assert_msg(strstr(g_so, "--version"), "%s does not list --version", cmd);
        ck_assert_msg(strstr(g_so, "Exit codes: 0 ") && (strstr(g_so, "2 bad input") || strstr(g_so, "2 usage error")), "%s does not list its exit codes", cmd);
        snprintf(cmd, sizeof cmd, "./bin/%s --version", PROGS[i]);
        ck_assert_msg(run_split(cmd, g_so, sizeof g_so, g_se, sizeof g_se) == 0, "%s: %s", cmd, g_se);
        char want[128];
        snprintf(want, sizeof want, "%s gma %s\n", PROGS[i], GMA_VERSION);
        ck_assert_msg(strcmp(g_so, want) == 0, "%s: \"%s\"", cmd, g_so);
    }
    /* the subcommands answer --help too */
    static const char *const sub[] = {"gmadata prepare", "gmadata fetch", "gmadata encode", "gmadata generate",
                                      "gmadata generate listops", "gmabench model", "gmabench mixer", "gmadata import",
                                      "gmadata export"};
    for (int i = 0; i < 9; i++) {
        snprintf(cmd, sizeof cmd, "./bin/%s --help", sub[i]);
        ck_assert_msg(run_split(cmd, g_so, sizeof g_so, g_se, sizeof g_se) == 0, "%s: %s", cmd, g_se);
        ck_assert_msg(strncmp(g_so, "usage:", 6) == 0, "%s: \"%.80s\"", cmd, g_so);
    }
    ck_assert_msg(run_split("./bin/gmadata prepare --help", g_so, sizeof g_so, g_se, sizeof g_se) == 0 &&
                      strstr(g_so, "--tokenizer") && !strstr(g_so, "train-tokenizer"),
                  "%s", g_so);
    /* gmabench lists every option it takes; gmatrain every exit code */
    run_split("./bin/gmabench --help", g_so, sizeof g_so, g_se, sizeof g_se);
    static const char *const bopt[] = {"--peak-tflops", "--max-seconds", "--max-mem-gib", "--repeat", "--steps", "--set",
                                       "--bidir", "--json", "--precision", "--threads"};
    for (int i = 0; i < 10; i++) ck_assert_msg(strstr(g_so, bopt[i]), "gmabench --help lacks %s", bopt[i]);
    run_split("./bin/gmatrain --help", g_so, sizeof g_so, g_se, sizeof g_se);
    ck_assert_msg(strstr(g_so, "4 stopped by a routing-collapse alert") && strstr(g_so, "130"), "%s", g_so);
}
END_TEST

START_TEST(test_exit_codes) {
    /* no arguments: the usage on stderr, exit 2, for every program (gmacheck included:
     * no CUDA message) */
    char cmd[512];
    for (int i = 0; i < 6; i++) {
        snprintf(cmd, sizeof cmd, "./bin/%s", PROGS[i]);
        ck_assert_msg(run_split(cmd, g_so, sizeof g_so, g_se, sizeof g_se) == 2, "%s", cmd);
        ck_assert_msg(g_so[0] == 0 && g_se[0], "%s: stdout \"%s\"", cmd, g_so);
        ck_assert_msg(!strstr(g_se, "CUDA") && !strstr(g_se, "cuda backend"), "%s: %s", cmd, g_se);
    }
    /* bad input is 2 everywhere: an unknown option, a config that does not parse */
    for (int i = 0; i < 6; i++) {
        snprintf(cmd, sizeof cmd, "./bin/%s %s--no-such-option", PROGS[i],
                 !strcmp(PROGS[i], "gmadata") ? "fetch " : !strcmp(PROGS[i], "gmabench") ? "model " : "");
        ck_assert_msg(run_split(cmd, g_so, sizeof g_so, g_se, sizeof g_se) == 2, "%s: %s", cmd, g_se);
    }
    /* a near miss of a real flag names it; an integer out of range gets the one wording */
    static const char *const near[][3] = {
        {"gmatrain --quite", "--quite", "--quiet"},          {"gmaeval --checkpoint x --data y --bach 2", "--bach", "--batch"},
        {"gmasample --checkpoint x --sed 1", "--sed", "--seed"}, {"gmadata encode --thread 2 f", "--thread", "--threads"},
        {"gmabench model --step 2", "--step", "--steps"},    {"gmacheck --device cpu --degist", "--degist", "--digest"},
    };
    for (int i = 0; i < 6; i++) {
        snprintf(cmd, sizeof cmd, "./bin/%s", near[i][0]);
        ck_assert_msg(run_split(cmd, g_so, sizeof g_so, g_se, sizeof g_se) == 2, "%s: %s", cmd, g_se);
        char want[128];
        snprintf(want, sizeof want, "unknown option \"%s\" (did you mean %s?)", near[i][1], near[i][2]);
        ck_assert_msg(strstr(g_se, want), "%s: %s", cmd, g_se);
    }
    /* an unknown flag that is a config key's last component: the --set that does it */
    static const char *const as_set[][2] = {
        {"gmatrain --config configs/quickstart.json --steps 10", "unknown option \"--steps\" (did you mean --set train.steps=10?)"},
        {"gmatrain --batch-size=3", "unknown option \"--batch-size=3\" (did you mean --set train.batch_size=3?)"},
        {"gmacheck --device cpu --lr", "unknown option \"--lr\" (did you mean --set train.lr=VALUE?)"},
    };
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "./bin/%s", as_set[i][0]);
        ck_assert_msg(run_split(cmd, g_so, sizeof g_so, g_se, sizeof g_se) == 2 && strstr(g_se, as_set[i][1]), "%s: %s", cmd,
                      g_se);
    }
    static const char *const range[][2] = {
        {"gmatrain --threads 2000", "gmatrain: --threads: \"2000\" is not an integer in [0, 1024]"},
        {"gmaeval --checkpoint x --data y --batch 0", "gmaeval: --batch: \"0\" is not an integer in [1, 2147483647]"},
        {"gmasample --checkpoint x --tokens x", "gmasample: --tokens: \"x\" is not an integer in [1, 16777216]"},
        {"gmadata encode --threads -1 f", "gmadata: --threads: \"-1\" is not an integer in [0, 1024]"},
        {"gmabench model --threads 2000", "gmabench: --threads: \"2000\" is not an integer in [0, 1024]"},
        {"gmacheck --device cpu --batch 0", "gmacheck: --batch: \"0\" is not an integer in [1, 1000000]"},
    };
    for (int i = 0; i < 6; i++) {
        snprintf(cmd, sizeof cmd, "./bin/%s", range[i][0]);
        ck_assert_msg(run_split(cmd, g_so, sizeof g_so, g_se, sizeof g_se) == 2 && strstr(g_se, range[i][1]), "%s: %s", cmd,
                      g_se);
    }
    /* a near miss of a config key names it */
    ck_assert_int_eq(run_split("./bin/gmatrain --config quickstart --set train.stpes=3", g_so, sizeof g_so, g_se, sizeof g_se),
                     2);
    ck_assert_msg(strstr(g_se, "unknown key train.stpes (did you mean train.steps?)"), "%s", g_se);
    tu_write(tu_path("bad.json"), "{\"model\": {\"d_model\": -3}}");
    ck_assert_int_eq(run("./bin/gmacheck --device cpu --config %s", tu_path("bad.json")), 2);
    ck_assert_int_eq(run("./bin/gmatrain --config %s", tu_path("bad.json")), 2);
}
END_TEST

/* gmatrain --config NAME finds configs/NAME (and NAME.json); missing shards name the
 * commands that make them */
START_TEST(test_config_lookup_and_missing_data) {
    ck_assert_int_eq(run("./bin/gmatrain --config quickstart --set model.mixer=lstm --out %s", tu_path("q")), 2);
    ck_assert_msg(strstr(g_out, "unknown mixer \"lstm\"") && !strstr(g_out, "cannot open"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config quickstart.json --set model.mixer=lstm --out %s", tu_path("q")), 2);
    ck_assert_msg(strstr(g_out, "unknown mixer \"lstm\""), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config no_such_config.json --out %s", tu_path("q")), 2);
    ck_assert_msg(strstr(g_out, "no_such_config.json") && strstr(g_out, "cannot open"), "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config wikitext_k256.json --set data.path=%s/wikitext-103-gpt2 --out %s",
                         tu_tmpdir(), tu_path("w")), 2);
    ck_assert_msg(strstr(g_out, "bin/gmadata fetch wikitext-103 && bin/gmadata fetch gpt2 && "
                                "bin/gmadata prepare wikitext-103 --tokenizer gpt2 --out "),
                  "%s", g_out);
    ck_assert_int_eq(run("./bin/gmatrain --config quickstart --set data.source=shards --set data.path=%s/mine --out %s",
                         tu_tmpdir(), tu_path("w")), 2);
    ck_assert_msg(strstr(g_out, "bin/gmadata prepare TEXT_DIR --tokenizer"), "%s", g_out);
    /* a small config without its data: the page that gives the one command making it */
    ck_assert_int_eq(run("./bin/gmatrain --config small_gma --set data.path=%s/sotu-bpe4k --out %s", tu_tmpdir(), tu_path("w")),
                     2);
    ck_assert_msg(strstr(g_out, "docs/data.md, \"The data of the small configs\"") && !strchr(strchr(g_out, '\n') + 1, '\n'),
                  "%s", g_out);
    /* a classification config without its data: the key, the path and the same page */
    ck_assert_int_eq(run("./bin/gmatrain --config small_lra_listops_gma --set data.path=%s/listops --out %s", tu_tmpdir(),
                         tu_path("w")), 2);
    ck_assert_msg(strstr(g_out, "key data.path: ") && strstr(g_out, "/listops: no such file or directory") &&
                      strstr(g_out, "docs/data.md, \"The data of the small configs\"") && !strchr(strchr(g_out, '\n') + 1, '\n'),
                  "%s", g_out);
    ck_assert(!gma_path_exists(tu_path("w")) && !gma_path_exists(tu_path("q")));
}
END_TEST

START_TEST(test_scripts_and_make_help) {
    /* the reproduce scripts print their whole usage, the environment they read included */
    static const char *const scr[][2] = {{"reproduce_small.sh", "SOTU="}, {"reproduce_lra.sh", "SPAM_DIR="},
                                         {"reproduce_wikitext.sh", "--mixers"}};
    char cmd[512];
    for (int i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "scripts/%s --help", scr[i][0]);
        ck_assert_msg(run_split(cmd, g_so, sizeof g_so, g_se, sizeof g_se) == 0, "%s: %s", cmd, g_se);
        ck_assert_msg(strstr(g_so, scr[i][1]) && strstr(g_so, "--steps") && strstr(g_so, "Environment:"), "%s: %s", cmd, g_so);
    }
    /* a bad option value is refused before anything runs */
    ck_assert_int_eq(run_split("scripts/reproduce_lra.sh --profile small --cnn-seconds x", g_so, sizeof g_so, g_se,
                               sizeof g_se), 2);
    ck_assert_msg(strstr(g_se, "--cnn-seconds needs a whole number of seconds, got 'x'"), "%s", g_se);
    ck_assert_msg(run_split("make -s --no-print-directory help", g_so, sizeof g_so, g_se, sizeof g_se) == 0, "%s", g_se);
    static const char *const tg[] = {"make test", "make quickstart", "make cuda", "make mpi", "make install", "make help"};
    for (int i = 0; i < 6; i++) ck_assert_msg(strstr(g_so, tg[i]), "make help lacks %s:\n%s", tg[i], g_so);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_help_and_version);
    tcase_add_test(tc, test_exit_codes);
    tcase_add_test(tc, test_config_lookup_and_missing_data);
    tcase_add_test(tc, test_scripts_and_make_help);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
