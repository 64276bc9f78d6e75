/* rundir.c: the removal of stale temporary files from a run directory,
 * and the kill test's hook (rundir.h). */
#include "rundir.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "util.h"

/* The digits at s: 1 and the value in *v when s starts with 1..18 decimal
 * digits, then *end is past them. */
static int digits(const char *s, long long *v, const char **end) {
    int n = 0;
    long long x = 0;
    while (s[n] >= '0' && s[n] <= '9') {
        if (++n > 18) return 0;
        x = 10 * x + (s[n - 1] - '0');
    }
    *v = x;
    *end = s + n;
    return n > 0;
}

/* The pid of a temporary file of ours, name.tmp.<pid>[.<n>], or 0. */
static long long tmp_pid(const char *file) {
    static const char *const names[] = {"checkpoint.safetensors", "metrics.csv", "loss.svg"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(file, names[i], n) != 0 || strncmp(file + n, ".tmp.", 5) != 0) continue;
        const char *p = file + n + 5, *end;
        long long pid, k;
        if (!digits(p, &pid, &end) || pid <= 0) return 0;
        if (*end == '.' && digits(end + 1, &k, &end)) return *end ? 0 : pid;
        return *end ? 0 : pid;
    }
    return 0;
}

/* Whether process pid is alive (or may be: a process of another user). */
static int alive(long long pid) {
    if (pid > 2147483647LL) return 0;
    if ((pid_t)pid == getpid()) return 0; /* a file of ours now is a leftover */
    return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

int remove_stale_tmp(const char *dir, int quiet) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int removed = 0;
    struct dirent *e;
    char path[4200];
    while ((e = readdir(d)) != NULL) {
        long long pid = tmp_pid(e->d_name);
        if (pid == 0 || alive(pid)) continue;
        join_path(path, sizeof path, dir, e->d_name);
        if (remove(path) == 0) {
            removed++;
            if (!quiet)
                fprintf(stderr, "%s: note: removed %s, left by a run that was killed\n", prog,
                        path);
        }
    }
    closedir(d);
    return removed;
}

void test_kill_point(const char *point, int64_t step) {
    static int parsed = 0;
    static char want[32];
    static long long want_step = -1;
    if (!parsed) {
        parsed = 1;
        const char *s = getenv("HELIX_LM_TEST_KILL"), *at = s ? strchr(s, '@') : NULL;
        if (at && (size_t)(at - s) < sizeof want) {
            memcpy(want, s, (size_t)(at - s));
            want[at - s] = '\0';
            want_step = strtoll(at + 1, NULL, 10);
        }
    }
    if (want_step == (long long)step && !strcmp(want, point)) {
        fflush(NULL);
        raise(SIGKILL);
    }
}
