/* test.h: the tiny test harness every gad test program uses.
 *
 *   TEST(name) { CHECK(x == 1); CHECK_NEAR(a, b, 1e-6); }
 *   int main(void) { RUN(name); return test_summary(); }
 *
 * A failed check prints file:line and the expression and marks the test
 * failed; the program exits non-zero when any check failed. Below the
 * checks: helpers for comparing tensors with naive references (shapes,
 * CHECK_CLOSE, operand layouts), shared by the op tests. */
#ifndef GAD_TEST_H
#define GAD_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gad.h"

/* 1 in a build under AddressSanitizer, ThreadSanitizer or MemorySanitizer
 * (gcc or clang), else 0: slow tests thin themselves there (CI runs the
 * whole suite under ASan and twice under TSan), and limits on address space
 * or resident memory, which the sanitizers inflate, are checked only
 * without them. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
#ifndef TEST_SANITIZED
#define TEST_SANITIZED 0
#endif

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

/* ------------------------------------------------ shapes and references
 * Helpers of the op tests (test_elementwise.c, test_reduce.c) that compare
 * tensors with naive double-precision references: shapes as (s, r) pairs
 * of dims and rank, values in row-major double arrays. */

/* The number of elements of shape s. */
static inline int64_t test_numel(const int64_t *s, int r) {
    int64_t n = 1;
    for (int i = 0; i < r; i++) n *= s[i];
    return n;
}

/* Row-major multi-index idx of flat position f in shape s. */
static inline void test_unflat(int64_t f, const int64_t *s, int r,
                               int64_t *idx) {
    for (int i = r - 1; i >= 0; i--) {
        idx[i] = s[i] ? f % s[i] : 0;
        f = s[i] ? f / s[i] : 0;
    }
}

/* Row-major flat position of multi-index idx in shape s. */
static inline int64_t test_flat(const int64_t *idx, const int64_t *s, int r) {
    int64_t f = 0;
    for (int i = 0; i < r; i++) f = f * s[i] + idx[i];
    return f;
}

/* Every element of t read as f64, in a malloc'd array the caller frees
 * (one check: the read succeeds). */
static inline double *test_read_all(gad_tensor *t) {
    int64_t n = gad_numel(t);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    gad_status st = gad_read_f64(t, v, (size_t)n);
    CHECK(st == GAD_OK);
    return v;
}

/* Equal (tol == 0; NaN matches NaN, -0 matches 0) or within
 * tol * max(1, |ref|). */
static inline int test_close(double got, double ref, double tol) {
    if (tol == 0) return (isnan(got) && isnan(ref)) || got == ref;
    return test_near_(got, ref, tol * (fabs(ref) > 1 ? fabs(ref) : 1));
}

/* Compares every element of t with ref[0..n) (test_close); reports the
 * first mismatch and the number of mismatches. For CHECK_CLOSE. */
static inline int test_cmp_(gad_tensor *t, const double *ref, int64_t n,
                            double tol, const char *file, int line,
                            const char *ctx) {
    if (!t) {
        fprintf(stderr, "%s:%d: [%s] %s: tensor is NULL: %s\n", file, line,
                test_current_, ctx,
                gad_last_error() ? gad_last_error()->text : "no error");
        return 0;
    }
    if (gad_numel(t) != n) {
        fprintf(stderr, "%s:%d: [%s] %s: numel %lld, expected %lld\n", file,
                line, test_current_, ctx, (long long)gad_numel(t), (long long)n);
        return 0;
    }
    double *got = test_read_all(t);
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
        if (!test_close(got[i], ref[i], tol)) {
            if (first < 0) first = i;
            bad++;
        }
    if (bad)
        fprintf(stderr,
                "%s:%d: [%s] %s: %lld of %lld elements differ; first at %lld: "
                "%.17g, expected %.17g (tol %g)\n",
                file, line, test_current_, ctx, (long long)bad, (long long)n,
                (long long)first, got[first], ref[first], tol);
    free(got);
    return bad == 0;
}

/* One check: t has n elements, each test_close to ref[i] within tol; the
 * printf-style arguments after tol say what was compared. */
#define CHECK_CLOSE(t, ref, n, tol, ...)                                       \
    do {                                                                       \
        char ctx_[1024];                                                       \
        snprintf(ctx_, sizeof ctx_, __VA_ARGS__);                              \
        test_checks_++;                                                        \
        if (!test_cmp_((t), (ref), (n), (tol), __FILE__, __LINE__, ctx_))      \
            test_failures_++;                                                  \
    } while (0)

/* t is not NULL and has shape s. */
static inline int test_same_shape(gad_tensor *t, const int64_t *s, int r) {
    if (!t || gad_rank(t) != r) return 0;
    for (int i = 0; i < r; i++)
        if (gad_shape(t)[i] != s[i]) return 0;
    return 1;
}

/* "[2,3,4]" into buf (truncated to cap bytes). */
static inline void test_shape_str(char *buf, size_t cap, const int64_t *s,
                                  int r) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < r && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i ? ",%lld" : "%lld",
                              (long long)s[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* Bitwise equality of two contiguous tensors' elements (same dtype and
 * count; 0 if either is NULL). */
static inline int test_same_bits(gad_tensor *a, gad_tensor *b) {
    if (!a || !b || gad_numel(a) != gad_numel(b) || gad_dtype(a) != gad_dtype(b))
        return 0;
    const void *pa = gad_data(a), *pb = gad_data(b);
    if (!pa || !pb) return 0;
    return memcmp(pa, pb, (size_t)gad_numel(a) * gad_dtype_size(gad_dtype(a))) == 0;
}

/* ------------------------------------------------------- operand layouts
 * test_make_view builds a tensor of logical shape s in one of these layouts
 * from a fresh random base, and computes the values it must hold by mapping
 * each of its multi-indices to the base itself. */
enum {
    TEST_L_CONTIG,
    TEST_L_PERM,
    TEST_L_SLICE,
    TEST_L_NEGSLICE,
    TEST_L_BCAST,
    TEST_L_UNSQ,
    TEST_L_OFFSET,
    TEST_L_COUNT
};

/* The name of layout kind, for messages. */
static inline const char *test_layout_name(int kind) {
    static const char *const names[TEST_L_COUNT] = {
        "contiguous", "permuted", "sliced(step 2)", "sliced(step -2)",
        "broadcast_to", "unsqueeze+broadcast", "row-major at an offset"};
    return kind >= 0 && kind < TEST_L_COUNT ? names[kind] : "?";
}

/* A base tensor of shape b (rank rb) and dtype dt for test_make_view. */
typedef gad_tensor *(*test_base_fn)(gad_rng *rng, gad_dtype_t dt,
                                    const int64_t *b, int rb);

/* A view of shape s (rank r) and dtype dt in layout kind over a base
 * drawn uniform in [lo, hi) from rng, or made by base_fn when it is not
 * NULL (lo and hi are then unused). The tensors belong to the open scope;
 * *vals_out gets the values the view must hold (row-major, malloc'd: the
 * caller frees it). It checks that the base was made and reads back, and
 * the view's shape, its dtype and that it reads back as *vals_out says. */
static inline gad_tensor *test_make_view(gad_rng *rng, int kind,
                                         gad_dtype_t dt, const int64_t *s,
                                         int r, double lo, double hi,
                                         test_base_fn base_fn,
                                         double **vals_out) {
    int64_t b[GAD_MAX_RANK] = {0};
    int rb = r, q[GAD_MAX_RANK] = {0}, k = r / 2;
    gad_range rg[GAD_MAX_RANK];
    if (r == 0) kind = TEST_L_CONTIG;
    switch (kind) {
    case TEST_L_PERM: /* view axis i is base axis q[i] */
        for (int i = 0; i < r; i++) {
            q[i] = (i + 1) % r;
            b[q[i]] = s[i];
        }
        break;
    case TEST_L_SLICE:
        for (int d = 0; d < r; d++) {
            b[d] = 2 * s[d] + 1;
            rg[d] = GAD_RANGE_STEP(1, GAD_NIL, 2);
        }
        break;
    case TEST_L_NEGSLICE:
        for (int d = 0; d < r; d++) {
            b[d] = 2 * s[d];
            rg[d] = s[d] ? GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -2) : GAD_ALL;
        }
        break;
    case TEST_L_BCAST:
        rb = r >= 2 ? r - 1 : r;
        for (int j = 0; j < rb; j++) b[j] = s[j + r - rb];
        if (r == 1 || r >= 3) b[rb - 1] = 1;
        break;
    case TEST_L_UNSQ:
        rb = r - 1;
        for (int j = 0; j < rb; j++) b[j] = s[j < k ? j : j + 1];
        break;
    case TEST_L_OFFSET: /* rows 1 .. s[0] of s[0] + 2: packed strides, offset */
        for (int d = 0; d < r; d++) b[d] = s[d];
        b[0] = s[0] + 2;
        rg[0] = GAD_RANGE(1, 1 + s[0]);
        break;
    default:
        for (int d = 0; d < r; d++) b[d] = s[d];
    }
    gad_tensor *base = base_fn ? base_fn(rng, dt, b, rb)
                               : gad_rng_uniform_tensor(rng, b, rb, dt, lo, hi);
    CHECK(base != NULL);
    int64_t bn = test_numel(b, rb);
    double *bv = test_read_all(base);
    gad_tensor *v = base;
    switch (kind) {
    case TEST_L_PERM: v = gad_permute(base, q, r); break;
    case TEST_L_SLICE:
    case TEST_L_NEGSLICE: v = gad_slice(base, rg, r); break;
    case TEST_L_OFFSET: v = gad_slice(base, rg, 1); break;
    case TEST_L_BCAST: v = gad_broadcast_to(base, s, r); break;
    case TEST_L_UNSQ:
        v = gad_unsqueeze(base, k);
        if (s[k] != 1) v = gad_broadcast_to(v, s, r);
        break;
    default: break;
    }
    int64_t n = test_numel(s, r);
    double *vals = malloc((size_t)(n ? n : 1) * sizeof *vals);
    int64_t idx[GAD_MAX_RANK] = {0}, bi[GAD_MAX_RANK] = {0};
    for (int64_t f = 0; f < n; f++) {
        test_unflat(f, s, r, idx);
        switch (kind) {
        case TEST_L_PERM:
            for (int i = 0; i < r; i++) bi[q[i]] = idx[i];
            break;
        case TEST_L_SLICE:
            for (int d = 0; d < r; d++) bi[d] = 1 + 2 * idx[d];
            break;
        case TEST_L_NEGSLICE:
            for (int d = 0; d < r; d++) bi[d] = 2 * s[d] - 1 - 2 * idx[d];
            break;
        case TEST_L_BCAST:
            for (int j = 0; j < rb; j++) bi[j] = b[j] == 1 ? 0 : idx[j + r - rb];
            break;
        case TEST_L_UNSQ:
            for (int j = 0; j < rb; j++) bi[j] = idx[j < k ? j : j + 1];
            break;
        case TEST_L_OFFSET:
            for (int d = 0; d < r; d++) bi[d] = idx[d] + (d == 0);
            break;
        default:
            for (int d = 0; d < r; d++) bi[d] = idx[d];
        }
        int64_t bf = test_flat(bi, b, rb);
        vals[f] = bf < bn ? bv[bf] : NAN;
    }
    free(bv);
    char ss[128];
    test_shape_str(ss, sizeof ss, s, r);
    const char *ln = test_layout_name(kind);
    CHECK_MSG(test_same_shape(v, s, r), "%s view of %s", ln, ss);
    CHECK_MSG(v && gad_dtype(v) == dt, "%s view dtype", ln);
    /* the view reads back (through gad_read_f64) as our index mapping says */
    CHECK_CLOSE(v, vals, n, 0, "%s view of %s reads back", ln, ss);
    *vals_out = vals;
    return v;
}

static inline int test_summary(void) {
    printf("%d checks, %d failed\n", test_checks_, test_failures_);
    return test_failures_ ? 1 : 0;
}

#endif
