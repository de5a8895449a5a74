/* json_nums.c: named numbers into a JSON object (json_nums.h). */
#include "core/json_nums.h"

#include <math.h>

void json_add_nums(cJSON *o, const JsonNum *nums, int n) {
    for (int i = 0; i < n; i++)
        if (isfinite(nums[i].value)) cJSON_AddNumberToObject(o, nums[i].name, nums[i].value);
        else cJSON_AddNullToObject(o, nums[i].name);
}
