/* fuzz_fail.h: how both fuzzers report a violated invariant: a line on
 * stderr, then abort(), which libFuzzer (and replay) report as a crash.
 * Define FUZZ_NAME (a string literal) before including. */
#ifndef FUZZ_FAIL_H
#define FUZZ_FAIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void fail(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;
static void fail(const char *fmt, ...) {
    va_list ap;
    fputs(FUZZ_NAME ": invariant violated: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

#endif /* FUZZ_FAIL_H */
