/* util.h: the small utilities every part of helix_lm uses: messages
 * ("helix_lm: ..."), the clock, seed mixing, paths, directories and atomic
 * file writes (util.c). */
#ifndef HELIX_UTIL_H
#define HELIX_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern const char *prog; /* "helix_lm", the prefix of every message */

/* The program, as its model's architecture names it (helix_model.c,
 * examples/gpt/gpt_model.c): "helix_lm" or "gpt", the run directory by
 * default, and --help's lines on the model. */
extern const char lm_name[];
extern const char lm_default_out[];
extern const char lm_model_help[];

/* Print "helix_lm: message" to stderr; returns -1 so that callers can
 * `return fail(...)`. */
int fail(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
int fail_gad(const char *what);
double now_seconds(void);
uint64_t mix64(uint64_t x);
const char *join_path(char *buf, size_t cap, const char *dir, const char *name);
int make_dirs(const char *path);

/* Sizes: a * b into *out and 0, or -1 when a or b is negative or the
 * product does not fit in an int64_t (*out is then INT64_MAX, so that a
 * count shown to the user saturates). */
int checked_mul(int64_t a, int64_t b, int64_t *out);
/* malloc of n elements of elem bytes, NULL when n is negative, when
 * n * elem does not fit in a size_t, or when memory runs out. */
void *alloc_array(int64_t n, size_t elem);

/* Write a whole file atomically: to path.tmp.<pid>, then renamed over
 * path. The writer returns 0 on success. */
typedef int (*file_writer)(FILE *f, const void *ctx);
int write_atomic(const char *path, file_writer w, const void *ctx);

#endif
