/* manifest.c: meta.json's list of a data set's files, and the check at open (manifest.h). */
#include "data/lm/manifest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "data/fetch/digest.h"

static const char *const SHARDS[3] = {"train.bin", "valid.bin", "test.bin"};

int manifest_add(cJSON *meta, const char *dir, const char *file) {
    char path[2300], hex[65];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    struct stat st;
    if (stat(path, &st) != 0) return gma_errorf("%s: cannot stat: %s", path, strerror(errno));
    if (digest_file(path, DIGEST_SHA256, hex) != 0) return -1;
    cJSON *m = cJSON_GetObjectItemCaseSensitive(meta, "manifest");
    if (!m) m = cJSON_AddObjectToObject(meta, "manifest");
    cJSON_DeleteItemFromObjectCaseSensitive(m, file);
    cJSON *e = cJSON_AddObjectToObject(m, file);
    cJSON_AddNumberToObject(e, "bytes", (double)st.st_size);
    cJSON_AddStringToObject(e, "sha256", hex);
    return 0;
}

/* prepare.incomplete in dir: the error, naming it and what it says */
static int check_marker(const char *dir) {
    char path[2300];
    snprintf(path, sizeof path, "%s/%s", dir, MANIFEST_INCOMPLETE);
    if (!gma_path_exists(path)) return 0;
    char *text = gma_read_file(path, NULL);
    if (text) text[strcspn(text, "\n")] = 0;
    int rc = gma_errorf("%s: the data set is incomplete (%s); run gmadata prepare again", path,
                        text && text[0] ? text : "gmadata prepare did not finish");
    free(text);
    return rc;
}

/* one manifest entry against the file on disk */
static int check_entry(const char *dir, const cJSON *e) {
    char path[2300], hex[65];
    snprintf(path, sizeof path, "%s/%s", dir, e->string);
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(e, "bytes");
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(e, "sha256");
    if (!cJSON_IsNumber(bytes) || !cJSON_IsString(sha))
        return gma_errorf("%s/meta.json: key manifest.%s: want {\"bytes\": N, \"sha256\": HEX}", dir, e->string);
    struct stat st;
    if (stat(path, &st) != 0) return 0; /* not here: whoever needs it says so (a split copied alone) */
    if ((double)st.st_size != bytes->valuedouble)
        return gma_errorf("%s: %lld bytes, meta.json's manifest says %.0f: not the file this data set was prepared with "
                          "(an interrupted gmadata prepare?); run gmadata prepare again",
                          path, (long long)st.st_size, bytes->valuedouble);
    if (digest_file(path, DIGEST_SHA256, hex) != 0) return -1;
    if (strcmp(hex, sha->valuestring) != 0)
        return gma_errorf("%s: SHA-256 %s, meta.json's manifest says %s: not the file this data set was prepared with "
                          "(an interrupted gmadata prepare?); run gmadata prepare again",
                          path, hex, sha->valuestring);
    return 0;
}

static int shard_index(const char *name) {
    for (int s = 0; s < 3; s++)
        if (!strcmp(name, SHARDS[s])) return s;
    return -1;
}

int manifest_check(const char *dir, unsigned split_mask) {
    if (check_marker(dir) != 0) return -1;
    char path[2300];
    snprintf(path, sizeof path, "%s/meta.json", dir);
    if (!gma_path_exists(path)) return 0;
    char *text = gma_read_file(path, NULL);
    if (!text) return -1;
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j) return gma_errorf("%s: not valid JSON", path);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "manifest");
    int rc = 0;
    if (m && !cJSON_IsObject(m)) rc = gma_errorf("%s: key manifest: not an object", path);
    for (const cJSON *e = m ? m->child : NULL; e && !rc; e = e->next) {
        int s = shard_index(e->string);
        if (s >= 0 && !(split_mask & (1u << s))) continue;
        rc = check_entry(dir, e);
    }
    for (int s = 0; s < 3 && m && !rc; s++) {
        char shard[2300];
        snprintf(shard, sizeof shard, "%s/%s", dir, SHARDS[s]);
        if ((split_mask & (1u << s)) && gma_path_exists(shard) && !cJSON_GetObjectItemCaseSensitive(m, SHARDS[s]))
            rc = gma_errorf("%s: not in %s's manifest: not part of this data set; run gmadata prepare again", shard, path);
    }
    cJSON_Delete(j);
    return rc;
}
