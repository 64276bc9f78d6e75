/* test.h: the tiny test harness every gad test program uses.
 *
 *   TEST(name) { CHECK(x == 1); CHECK_NEAR(a, b, 1e-6); }
 *   int main(void) { RUN(name); return test_summary(); }
 *
 * A failed check prints file:line and the expression and marks the test
 * failed; the program exits non-zero when any check failed. */
#ifndef GAD_TEST_H
#define GAD_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gad.h"

static int test_failures_ = 0;
static int test_checks_ = 0;
static const char *test_current_ = "";

#define TEST(name) static void name(void)

#define RUN(name)                                                              \
    do {                                                                       \
        int before_ = test_failures_;                                          \
        test_current_ = #name;                                                 \
        gad_clear_error();                                                     \
        name();                                                                \
        printf("%s %s\n", test_failures_ == before_ ? "ok  " : "FAIL", #name); \
        fflush(stdout);                                                        \
    } while (0)

#define CHECK(cond)                                                            \
    do {                                                                       \
        test_checks_++;                                                        \
        if (!(cond)) {                                                         \
            test_failures_++;                                                  \
            fprintf(stderr, "%s:%d: [%s] check failed: %s\n", __FILE__,        \
                    __LINE__, test_current_, #cond);                           \
        }                                                                      \
    } while (0)

#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        test_checks_++;                                                        \
        if (!(cond)) {                                                         \
            test_failures_++;                                                  \
            fprintf(stderr, "%s:%d: [%s] check failed: %s: ", __FILE__,        \
                    __LINE__, test_current_, #cond);                           \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

/* |a - b| <= tol, with NaN == NaN and inf == inf. */
static inline int test_near_(double a, double b, double tol) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (isinf(a) || isinf(b)) return a == b;
    return fabs(a - b) <= tol;
}

#define CHECK_NEAR(a, b, tol)                                                  \
    do {                                                                       \
        double a_ = (double)(a), b_ = (double)(b);                             \
        CHECK_MSG(test_near_(a_, b_, (tol)), "%.10g vs %.10g (tol %g)", a_,    \
                  b_, (double)(tol));                                          \
    } while (0)

/* |a - b| <= tol * max(1, |b|) */
#define CHECK_REL(a, b, tol)                                                   \
    do {                                                                       \
        double a_ = (double)(a), b_ = (double)(b);                             \
        double s_ = fabs(b_) > 1 ? fabs(b_) : 1;                               \
        CHECK_MSG(test_near_(a_, b_, (tol) * s_), "%.10g vs %.10g (rel %g)",   \
                  a_, b_, (double)(tol));                                      \
    } while (0)

/* The pending error has this kind and its op is `opname`; clears it. */
#define CHECK_ERR(kind_, opname)                                               \
    do {                                                                       \
        const gad_error *e_ = gad_last_error();                                \
        CHECK_MSG(e_ && e_->kind == (kind_) && strcmp(e_->op, (opname)) == 0,  \
                  "expected %s error in %s, got %s", gad_status_str(kind_),    \
                  (opname), e_ ? e_->text : "no error");                       \
        gad_clear_error();                                                     \
    } while (0)

/* No error is pending. */
#define CHECK_OK()                                                             \
    do {                                                                       \
        const gad_error *e_ = gad_last_error();                                \
        CHECK_MSG(e_ == NULL, "unexpected error: %s", e_ ? e_->text : "");     \
        gad_clear_error();                                                     \
    } while (0)

/* Every element of t (read as f64) equals vals[i] within tol. */
static inline int test_values_(gad_tensor *t, const double *vals, size_t n,
                               double tol, const char *file, int line) {
    if (!t) {
        fprintf(stderr, "%s:%d: [%s] tensor is NULL: %s\n", file, line,
                test_current_,
                gad_last_error() ? gad_last_error()->text : "");
        return 0;
    }
    if ((size_t)gad_numel(t) != n) {
        fprintf(stderr, "%s:%d: [%s] numel %lld, expected %zu\n", file, line,
                test_current_, (long long)gad_numel(t), n);
        return 0;
    }
    double *got = malloc((n ? n : 1) * sizeof *got);
    gad_read_f64(t, got, n);
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        if (!test_near_(got[i], vals[i], tol)) {
            fprintf(stderr, "%s:%d: [%s] element %zu: %.10g, expected %.10g\n",
                    file, line, test_current_, i, got[i], vals[i]);
            ok = 0;
            break;
        }
    }
    free(got);
    return ok;
}

#define CHECK_VALUES(t, tol, ...)                                              \
    do {                                                                       \
        const double v_[] = {__VA_ARGS__};                                     \
        test_checks_++;                                                        \
        if (!test_values_((t), v_, sizeof v_ / sizeof v_[0], (tol), __FILE__,  \
                          __LINE__))                                           \
            test_failures_++;                                                  \
    } while (0)

#define CHECK_SHAPE(t, ...)                                                    \
    do {                                                                       \
        const int64_t s_[] = {__VA_ARGS__};                                    \
        int r_ = (int)(sizeof s_ / sizeof s_[0]);                              \
        CHECK_MSG((t) && gad_rank(t) == r_ &&                                  \
                      memcmp(gad_shape(t), s_, sizeof s_) == 0,                \
                  "shape mismatch");                                           \
    } while (0)

static inline int test_summary(void) {
    printf("%d checks, %d failed\n", test_checks_, test_failures_);
    return test_failures_ ? 1 : 0;
}

#endif
