/* test_configs.c: every shipped configs/*.json loads with no unknown key and passes the
 * cross-field validation (run from the repository root). */
#include <glob.h>
#include <string.h>

#include "core/config.h"
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

Suite *make_suite(void) {
    Suite *s = suite_create("configs");
    TCase *tc = tcase_create("configs");
    tcase_add_test(tc, test_all_configs_validate);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
