/* auto_calib.c: the reader of auto's calibration file (auto_calib.h). */
#include "nn/mixers/auto_calib.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

int auto_calibration_read(const char *path, int *measured, int *threshold) {
    char *text = gma_read_file(path, NULL);
    if (!text)
        return gma_errorf("%s: cannot read the calibration file (write it with gmabench calibrate --out %s)", path, path);
    cJSON *j = cJSON_Parse(text);
    free(text);
    int rc = 0;
    const cJSON *f = j ? cJSON_GetObjectItemCaseSensitive(j, "format") : NULL;
    const cJSON *x = j ? cJSON_GetObjectItemCaseSensitive(j, "crossover") : NULL;
    if (!j || !cJSON_IsObject(j)) rc = gma_errorf("%s: not a JSON object (a calibration of gmabench calibrate)", path);
    else if (!cJSON_IsString(f) || strcmp(f->valuestring, AUTO_CALIB_FORMAT))
        rc = gma_errorf("%s: key format: expected \"%s\"", path, AUTO_CALIB_FORMAT);
    else if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble) ||
             !(x->valuedouble == -1 || (x->valuedouble >= 1 && x->valuedouble <= 16777216)))
        rc = gma_errorf("%s: key crossover: expected a length in [1, 16777216], or -1 (not ahead at any length measured)",
                        path);
    else {
        int n = (int)x->valuedouble;
        *measured = n;
        *threshold = n < 0 ? AUTO_BAND_HI : GMA_MIN(GMA_MAX(n, AUTO_BAND_LO), AUTO_BAND_HI);
    }
    cJSON_Delete(j);
    return rc ? -1 : 0;
}
