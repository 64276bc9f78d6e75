/* test_tmpdir.h: a private scratch directory for tests that write files.
 *
 *   char dir[256];
 *   if (test_make_tmpdir(dir, sizeof dir, "gad_ckpt", 0)) return 1;
 *   ... files in dir ...
 *   test_remove_tree(dir, 0);
 *
 * POSIX (mkdtemp, opendir); the tests are built with _POSIX_C_SOURCE. */
#ifndef GAD_TEST_TMPDIR_H
#define GAD_TEST_TMPDIR_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Make a new directory named tag plus six random characters (mkdtemp) in
 * the first writable of: /dev/shm when prefer_shm (tests that write and
 * fsync many checkpoints need no disk), $TMPDIR, /tmp. Its path goes to
 * out (cap bytes). Returns 0, or -1 after printing why. */
static inline int test_make_tmpdir(char *out, size_t cap, const char *tag, int prefer_shm) {
    const char *cands[3] = {prefer_shm ? "/dev/shm" : NULL, getenv("TMPDIR"), "/tmp"};
    for (int i = 0; i < 3; i++) {
        struct stat st;
        if (!cands[i] || !*cands[i] || stat(cands[i], &st) != 0 || !S_ISDIR(st.st_mode) ||
            access(cands[i], W_OK) != 0)
            continue;
        int n = snprintf(out, cap, "%s/%s_XXXXXX", cands[i], tag);
        if (n > 0 && (size_t)n < cap && mkdtemp(out)) return 0;
    }
    fprintf(stderr, "cannot make a scratch directory %s_* in /dev/shm, $TMPDIR or /tmp\n", tag);
    return -1;
}

/* Remove dir and everything in it, descending depth levels of
 * subdirectories (made writable first: some tests make read-only ones). */
static inline void test_remove_tree(const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (depth > 0 && lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            chmod(p, 0700);
            test_remove_tree(p, depth - 1);
        } else {
            unlink(p);
        }
    }
    closedir(d);
    rmdir(dir);
}

#endif /* GAD_TEST_TMPDIR_H */
