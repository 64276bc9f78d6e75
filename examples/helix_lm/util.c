/* util.c: the small utilities every part of helix_lm uses: messages
 * ("helix_lm: ..."), the clock, seed mixing, paths, directories and atomic
 * file writes. */
/* realpath and lstat: POSIX.1-2008 (the build is C11 without extensions) */
#define _XOPEN_SOURCE 700
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gad.h"

const char *prog = lm_name; /* model.h */

int fail(const char *fmt, ...) {
    /* one write for the whole line, so that the lines of several ranks
     * (mpirun, dist.c) do not interleave */
    char line[1024];
    int n = snprintf(line, sizeof line, "%s: ", prog);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
    return -1;
}

/* A failed gad call: report what we were doing and gad's error record. */
int fail_gad(const char *what) {
    const gad_error *e = gad_last_error();
    fail("%s: %s", what, e ? e->text : "unknown error");
    gad_clear_error();
    return -1;
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* splitmix64's finalizer: a good 64-bit mix for deriving seeds. */
uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* "dir/name" into buf. */
const char *join_path(char *buf, size_t cap, const char *dir, const char *name) {
    snprintf(buf, cap, "%s/%s", dir, name);
    return buf;
}

/* mkdir -p */
int make_dirs(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return fail("bad output directory '%s'", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return fail("cannot create directory '%s': %s", buf, strerror(errno));
        buf[i] = c;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return fail("'%s' is not a directory", path);
    return 0;
}

/* What a write to path replaces, in out: path itself when nothing or a
 * regular file is there, or the regular file a symbolic link there leads
 * to (written through, as gad_save writes through one); anything else (a
 * FIFO, a device, a directory, a socket, a dangling or looping link) is
 * an error, and nothing is replaced. */
static int write_target(const char *path, char *out, size_t cap) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT) return fail("cannot write '%s': %s", path, strerror(errno));
        snprintf(out, cap, "%s", path);
        return 0;
    }
    if (S_ISLNK(st.st_mode)) {
        char *real = realpath(path, NULL);
        if (!real)
            return fail("cannot write '%s': a symbolic link that leads nowhere (%s)", path,
                        strerror(errno));
        int ok = stat(real, &st) == 0 && S_ISREG(st.st_mode);
        if (ok) snprintf(out, cap, "%s", real);
        free(real);
        if (!ok) return fail("cannot write '%s': its link leads to something not a regular file", path);
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return fail("cannot write '%s': it is %s, not a regular file, and is left as it is", path,
                    S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ? "a FIFO"
                    : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                    : S_ISSOCK(st.st_mode) ? "a socket" : "a special file");
    snprintf(out, cap, "%s", path);
    return 0;
}

int write_atomic(const char *path_given, file_writer w, const void *ctx) {
    char path[4096];
    if (write_target(path_given, path, sizeof path)) return -1;
    char tmp[4200]; /* path.tmp.<pid>: remove_stale_tmp knows a dead writer's */
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return fail("cannot write '%s': %s", tmp, strerror(errno));
    int rc = w(f, ctx);
    if (ferror(f)) rc = -1;
    if (fclose(f) != 0) rc = -1;
    if (rc != 0) {
        remove(tmp);
        return fail("cannot write '%s'", path);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return fail("cannot rename '%s' to '%s': %s", tmp, path, strerror(e));
    }
    return 0;
}

int checked_mul(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0 || (a > 0 && b > INT64_MAX / a)) {
        *out = INT64_MAX;
        return -1;
    }
    *out = a * b;
    return 0;
}

void *alloc_array(int64_t n, size_t elem) {
    if (n < 0 || elem == 0 || (uint64_t)n > SIZE_MAX / elem) return NULL;
    return malloc(n > 0 ? (size_t)n * elem : 1);
}
