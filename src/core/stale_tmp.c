/* stale_tmp.c: find and remove the temporaries of killed writers (stale_tmp.h). */
#include "core/stale_tmp.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"

int stale_tmp_name(const char *name, size_t *base_len) {
    const char *t = strstr(name, ".tmp."), *next;
    while (t && (next = strstr(t + 1, ".tmp."))) t = next; /* the last ".tmp." */
    if (!t || t == name) return 0;
    const char *d = t + 5;
    long pid = 0;
    for (; *d; d++) {
        if (*d < '0' || *d > '9' || pid > INT_MAX / 10) return 0;
        pid = pid * 10 + (*d - '0');
    }
    if (d == t + 5 || pid <= 0 || pid > INT_MAX) return 0;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) return 0; /* alive, or not ours to judge */
    *base_len = (size_t)(t - name);
    return 1;
}

/* remove path, and when it is a folder (an import's RUN.tmp.PID) what it holds, links not
 * followed; 0 or -1 with errno */
static int remove_tree(const char *path, int depth) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) return unlink(path) != 0 && errno != ENOENT ? -1 : 0;
    if (depth > 8) return errno = ELOOP, -1;
    DIR *d = opendir(path);
    if (!d) return -1;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        rc = remove_tree(p, depth + 1);
    }
    int e2 = errno;
    closedir(d);
    if (rc) return errno = e2, -1;
    return rmdir(path) != 0 && errno != ENOENT ? -1 : 0;
}

int stale_tmp_sweep(const char *dir, const char *const *names, int n) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : gma_errorf("%s: cannot read the directory: %s", dir, strerror(errno));
    int removed = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) && !rc) {
        size_t bl;
        if (!stale_tmp_name(e->d_name, &bl)) continue;
        for (int i = 0; i < n; i++) {
            if (strlen(names[i]) != bl || strncmp(names[i], e->d_name, bl)) continue;
            char path[4200];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (remove_tree(path, 0) != 0) rc = gma_errorf("%s: cannot remove: %s", path, strerror(errno));
            else removed++;
            break;
        }
    }
    closedir(d);
    return rc ? rc : removed;
}
