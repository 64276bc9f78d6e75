/* replay.c: run a fuzzer's LLVMFuzzerTestOneInput on files, without
 * libFuzzer, so that the seed corpora and every crash reproducer run as
 * ordinary ctest tests under any compiler (and under ASan/UBSan).
 *
 *     replay_ops DIR_OR_FILE...
 *
 * Every regular file of each directory (not recursing, in name order) and
 * every file named directly is run once. A violated invariant aborts, as it
 * does under libFuzzer; otherwise the program prints how many inputs ran
 * and exits 0. It fails (exit 1) when an argument cannot be read or when no
 * input was found, so that a mistyped corpus path does not pass silently. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) abort();
    for (;;) {
        if (len == cap) {
            cap *= 2;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) abort();
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        return -1;
    }
    /* a copy of exactly len bytes, so that ASan sees any read past the end */
    unsigned char *exact = malloc(len ? len : 1);
    if (!exact) abort();
    memcpy(exact, buf, len);
    free(buf);
    if (getenv("REPLAY_VERBOSE")) fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run every regular file of dir in name order; returns the count or -1. */
static long run_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue; /* ., .., hidden files */
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) abort();
            names = nn;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) abort();
        snprintf(names[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    long count = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(names[i]) != 0) count = -1;
            else if (count >= 0) count++;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    long total = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: cannot stat %s\n", argv[i]);
            failed = 1;
            continue;
        }
        long c = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : (run_file(argv[i]) ? -1 : 1);
        if (c < 0) failed = 1;
        else total += c;
    }
    printf("replay: %ld inputs ran without a violated invariant\n", total);
    if (total == 0) fprintf(stderr, "replay: no input found\n");
    return failed || total == 0 ? 1 : 0;
}
