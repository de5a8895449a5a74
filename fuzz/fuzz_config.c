/* fuzz_config.c: a configuration JSON text, then NUL-separated `--set a.b=value`
 * assignments, through loading, overrides and validation (src/core/config.c).
 * Invariant: the resolved JSON (cfg_to_json) of whatever loaded loads back to the same
 * resolved JSON. */
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "fuzz_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char *json = fz_cut(&data, &n);
    Config c;
    cfg_defaults(&c);
    if (cfg_load_text(&c, json, "fuzz.json") == 0) {
        while (n > 0) {
            char *a = fz_cut(&data, &n);
            int rc = cfg_set(&c, a);
            free(a);
            if (rc) break;
        }
        (void)cfg_validate(&c);
        char *js = cfg_to_json(&c);
        Config d;
        cfg_defaults(&d);
        if (cfg_load_text(&d, js, "resolved") != 0) fz_fail("the resolved config does not load: %s", gma_error());
        char *js2 = cfg_to_json(&d);
        if (strcmp(js, js2)) fz_fail("the resolved config changes when loaded back:\n%s\n%s", js, js2);
        free(js);
        free(js2);
    }
    free(json);
    return 0;
}
