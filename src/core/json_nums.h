/* json_nums.h: named numbers added to a JSON object from one table, so that a report's
 * figures are listed once (name, value) instead of one cJSON call each (gmaeval's and
 * gmabench's JSON). */
#ifndef GMA_JSON_NUMS_H
#define GMA_JSON_NUMS_H
#include <cjson/cJSON.h>

typedef struct JsonNum {
    const char *name;
    double value;
} JsonNum;

/* Add the n numbers of nums to object o, in order (a value that is not finite as null). */
void json_add_nums(cJSON *o, const JsonNum *nums, int n);
#define JSON_NUMS_N(a) ((int)(sizeof(a) / sizeof((a)[0])))

#endif
