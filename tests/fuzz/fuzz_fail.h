/* fuzz_fail.h: how both fuzzers report a violated invariant: a line on
 * stderr, then abort(), which libFuzzer (and replay) report as a crash;
 * and the invariants of every pending error. Define FUZZ_NAME (a string
 * literal) before including. */
#ifndef FUZZ_FAIL_H
#define FUZZ_FAIL_H

#include "gad.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fail(const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;
static void fail(const char *fmt, ...) {
    /* threaded mode runs one program on several threads, which may all
     * fail: only the first reports and aborts, the others wait for the
     * process to end, so that libFuzzer's crash handler is not killed by
     * a second abort before it has written the input */
    static atomic_flag failing = ATOMIC_FLAG_INIT;
    if (atomic_flag_test_and_set(&failing))
        for (;;) pause();
    va_list ap;
    fputs(FUZZ_NAME ": invariant violated: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

/* The pending error after a failure of `what`: it must exist and be well
 * formed (a known kind, NUL-terminated non-empty op and message). */
static const gad_error *check_error_recorded(const char *what) {
    const gad_error *e = gad_last_error();
    if (!e) fail("%s failed without recording an error", what);
    if (e->kind < GAD_ERR_SHAPE || e->kind > GAD_ERR_FORMAT)
        fail("%s: error kind %d out of range", what, (int)e->kind);
    if (!memchr(e->op, 0, sizeof e->op) || !memchr(e->message, 0, sizeof e->message) ||
        !memchr(e->text, 0, sizeof e->text))
        fail("%s: error strings are not NUL-terminated", what);
    if (!e->op[0] || !e->message[0] || !e->text[0])
        fail("%s: error with an empty op or message (kind %s, op '%s', message '%s')",
             what, gad_status_str(e->kind), e->op, e->message);
    return e;
}

#endif /* FUZZ_FAIL_H */
