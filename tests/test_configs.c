/* test_configs.c: every JSON file shipped under configs/ loads with no unknown key and passes the
 * cross-field validation (run from the repository root). */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
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

/* the README's configuration reference is the schema's own (scripts/config_reference.sh) */
START_TEST(test_readme_reference_current) {
    char *readme = gma_read_file("README.md", NULL);
    ck_assert_ptr_nonnull(readme);
    char buf[1 << 16];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    cfg_print_reference(f);
    fclose(f);
    ck_assert_msg(strstr(readme, buf) != NULL, "README.md's configuration reference is out of date: run scripts/config_reference.sh");
    free(readme);
}
END_TEST

Suite *make_suite(void) {
    Suite *s = suite_create("configs");
    TCase *tc = tcase_create("configs");
    tcase_add_test(tc, test_all_configs_validate);
    tcase_add_test(tc, test_readme_reference_current);
    suite_add_tcase(s, tc);
    return s;
}

GMA_TEST_MAIN()
