/* test_opts.c: the option table the programs parse their command lines with
 * (src/cli/args/opts.h): every row type, the one wording of a bad value, a missing value,
 * positional arguments, "did you mean" for a near miss, and the generated --help. */
#include <stdlib.h>
#include <string.h>

#include "cli/args/opts.h"
#include "core/strdist.h"
#include "testutil.h"

typedef struct Vals {
    int flag, n, fnv, want_resume;
    long big;
    unsigned long long seed;
    double x;
    const char *s, *dev, *resume, *sets[2], *pos[2];
    int n_sets, n_pos;
} Vals;

static int upper(const char *v, void *d) {
    if (strcmp(v, "UP")) return gma_errorf("--fn: want UP, got \"%s\"", v);
    *(int *)d = 7;
    return 0;
}

/* argv (a NULL-terminated list after the program) through a table of every type */
static int parse(Vals *v, const char *const *args, int max_pos) {
    *v = (Vals){0};
    OptList sets = {v->sets, &v->n_sets, 2};
    Opt opts[] = {
        OPTF("--flag", &v->flag, "a flag"),
        OPTI("--batch", &v->n, 1, 65536, "an int"),
        OPTL("--big", &v->big, 0, 9.3e18, "a long"),
        OPTU("--seed", &v->seed, "a seed"),
        OPTD("--top-p", &v->x, 0, 1, "a number"),
        OPTS("--name", &v->s, "S", "a string"),
        OPTC("--device", &v->dev, "cpu|cuda", "a choice"),
        OPTR("--set", &sets, "k=v", "repeatable"),
        {.name = "--resume", .type = OPT_OPTVAL, .dest = &v->want_resume, .dest2 = &v->resume, .help = "optional value"},
        OPTFN("--fn", upper, &v->fnv, "UP", "a function"),
    };
    opts[4].open_lo = 1;
    char *argv[32] = {"prog"};
    int argc = 1;
    for (; args[argc - 1]; argc++) argv[argc] = (char *)args[argc - 1];
    OptProg p = {.name = "prog", .usage = "prog [options]\n", .exit_codes = "0 done, 2 bad input", .opts = opts,
                 .n_opts = OPT_COUNT(opts), .pos = v->pos, .n_pos = &v->n_pos, .max_pos = max_pos};
    return opts_parse(&p, argc, argv, 1);
}

START_TEST(test_every_type) {
    Vals v;
    const char *ok[] = {"--flag", "--batch", "65536", "--big", "9223372036854775807", "--seed", "18446744073709551615",
                        "--top-p", "1", "--name", "n", "--device", "cuda", "--set", "a=1", "--set", "b=2", "--resume",
                        "--fn", "UP", "pos", NULL};
    ck_assert_int_eq(parse(&v, ok, 1), 0);
    ck_assert_msg(v.flag && v.n == 65536 && v.fnv == 7 && v.big == 9223372036854775807L && v.seed == 18446744073709551615ULL && v.x == 1, "%d %d %ld %llu %g", v.flag, v.n, v.big, v.seed, v.x);
    ck_assert(!strcmp(v.s, "n") && !strcmp(v.dev, "cuda") && v.n_sets == 2 && !strcmp(v.sets[1], "b=2"));
    ck_assert(v.want_resume && !v.resume && v.n_pos == 1 && !strcmp(v.pos[0], "pos"));
    const char *rv[] = {"--resume", "DIR", NULL};
    ck_assert_int_eq(parse(&v, rv, 0), 0);
    ck_assert(v.want_resume && !strcmp(v.resume, "DIR"));
    const char *help[] = {"--batch", "x", "-h", NULL};
    ck_assert_int_eq(parse(&v, help, 0), OPTS_HELP);
}
END_TEST

START_TEST(test_errors) {
    static const struct {
        const char *a[4], *msg;
    } bad[] = {
        {{"--batch", "x"}, "--batch: \"x\" is not an integer in [1, 65536]"},
        {{"--batch", "0"}, "--batch: \"0\" is not an integer in [1, 65536]"},
        {{"--top-p", "0"}, "--top-p: \"0\" is not a number in (0, 1]"},
        {{"--seed", "-1"}, "--seed: \"-1\" is not an integer in [0, 18446744073709551615]"},
        {{"--device", "tpu"}, "--device: \"tpu\" is not one of cpu|cuda"},
        {{"--set", "a", "--set"}, "--set: missing value (see --help)"},
        {{"--set", "a", "--set", "b"}, NULL},
        {{"--fn", "down"}, "--fn: want UP, got \"down\""},
        {{"--bach", "2"}, "unknown option \"--bach\" (did you mean --batch?) (see --help)"},
        {{"--x"}, "unknown option \"--x\" (see --help)"},
        {{"stray"}, "unexpected argument \"stray\" (see --help)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        Vals v;
        ck_assert_int_eq(parse(&v, bad[i].a, 0), bad[i].msg ? 2 : 0);
        if (bad[i].msg) ck_assert_str_eq(gma_error(), bad[i].msg);
    }
    Vals v;
    const char *three[] = {"--set", "a", "--set", "b", "--set", "c", NULL};
    ck_assert_int_eq(parse(&v, three, 0), 2);
    ck_assert_str_eq(gma_error(), "--set: more than 2 of them");
    const char *many[] = {"a", "b", "c", NULL};
    ck_assert_int_eq(parse(&v, many, 2), 2);
    ck_assert_str_eq(gma_error(), "too many arguments: \"c\" (see --help)");
}
END_TEST

START_TEST(test_near_miss_and_help) {
    ck_assert_int_eq(gma_edit_distance("quite", "quiet", 2), 1);
    ck_assert_int_eq(gma_edit_distance("kitten", "sitting", 3), 3);
    ck_assert(gma_near_miss("form", "from"));
    ck_assert_int_eq(gma_edit_distance("abc", "abcdefg", 2), 3);
    ck_assert(gma_near_miss("quite", "quiet") && gma_near_miss("train.stpes", "train.steps"));
    ck_assert(!gma_near_miss("nope", "name") && !gma_near_miss("x", "D"));
    int n = 0;
    Opt opts[] = {OPTI("--batch", &n, 1, 8, "windows per batch")};
    OptProg p = {.name = "prog", .usage = "prog --batch N\n", .about = "About.\n", .exit_codes = "0 done, 2 bad input",
                 .opts = opts, .n_opts = 1};
    FILE *f = fopen(tu_path("help.txt"), "w");
    opts_usage(&p, f);
    fclose(f);
    char *h = gma_read_file(tu_path("help.txt"), NULL);
    ck_assert_msg(!strncmp(h, "usage: prog --batch N\n       prog --help | --version\nAbout.\noptions:\n", 64), "%s", h);
    ck_assert_msg(strstr(h, "--batch N") && strstr(h, "windows per batch; N in [1, 8]") &&
                      strstr(h, "Exit codes: 0 done, 2 bad input.\n"),
                  "%s", h);
    free(h);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("opts");
    TCase *tc = tcase_create("opts");
    tcase_add_test(tc, test_every_type);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_near_miss_and_help);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
