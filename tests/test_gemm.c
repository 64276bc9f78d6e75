/* test_gemm.c: the CPU GEMM (src/cpu/gemm.c) against a naive triple loop in
 * double precision: shapes with 0 and 1 dims, odd sizes, sizes on both sides
 * of every blocking boundary, all four transpose combinations, padded leading
 * dimensions, alpha/beta combinations (beta = 0 over NaN), every kernel set
 * the CPU can run, bit-identical results for 1 and 2 threads, and allocation
 * failure of the packing buffers. */
#include "gad.h"
#include "gad_int.h"
#include "cpu/gemm.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Test hooks in gemm.c (not in gemm.h): force a kernel set (0 = best,
 * 1 = portable, 2 = AVX2, 3 = AVX-512; -1 when the CPU or the build cannot
 * run it) with its small-problem paths on or off (then every product takes
 * the packed path), and send every product of gad__sgemm/gad__dgemm to
 * CBLAS. */
int gad__gemm_test_isa(int isa, int small_paths);
void gad__gemm_test_blas_always(int on);

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng_next(void) {
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [-1, 1), exactly representable in f32. */
static double rnd(void) {
    int32_t k = (int32_t)(rng_next() >> 40 & 0xFFFFFF);
    return (double)k / (double)(1 << 23) - 1.0;
}

static double *dalloc(size_t n) { return malloc((n ? n : 1) * sizeof(double)); }
static float *falloc(size_t n) { return malloc((n ? n : 1) * sizeof(float)); }

/* One problem, with operands stored with padded leading dimensions. Values
 * are exact in f32, so one reference serves both precisions. */
typedef struct prob {
    int ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
    double alpha, beta;
    double *A, *B, *C0; /* C0: C before the call (NaN when beta == 0) */
    double *ref, *mag;  /* expected C, and sum of |terms| for the tolerance */
} prob;

static size_t a_size(const prob *p) {
    return (size_t)((p->ta ? p->K : p->M) * p->lda);
}
static size_t b_size(const prob *p) {
    return (size_t)((p->tb ? p->N : p->K) * p->ldb);
}
static size_t c_size(const prob *p) { return (size_t)(p->M * p->ldc); }

/* with_ref = 0 skips the reference (for comparisons between runs). */
static void prob_init_(prob *p, int ta, int tb, int64_t M, int64_t N,
                       int64_t K, int pad, double alpha, double beta,
                       int with_ref) {
    p->ta = ta;
    p->tb = tb;
    p->M = M;
    p->N = N;
    p->K = K;
    p->lda = (ta ? M : K) + pad;
    p->ldb = (tb ? K : N) + pad;
    p->ldc = N + pad;
    if (p->lda < 1) p->lda = 1;
    if (p->ldb < 1) p->ldb = 1;
    if (p->ldc < 1) p->ldc = 1;
    p->alpha = alpha;
    p->beta = beta;
    size_t na = a_size(p), nb = b_size(p), nc = c_size(p);
    p->A = dalloc(na);
    p->B = dalloc(nb);
    p->C0 = dalloc(nc);
    p->ref = dalloc(nc);
    p->mag = dalloc(nc);
    /* Padding of A and B is NaN: reading it would show. */
    int64_t arow = ta ? M : K, brow = tb ? K : N;
    for (size_t i = 0; i < na; i++)
        p->A[i] = (int64_t)i % p->lda < arow ? rnd() : NAN;
    for (size_t i = 0; i < nb; i++)
        p->B[i] = (int64_t)i % p->ldb < brow ? rnd() : NAN;
    for (size_t i = 0; i < nc; i++) p->C0[i] = beta == 0 ? NAN : rnd();
    /* Reference: naive triple loop in double. The padding of C keeps C0. */
    memcpy(p->ref, p->C0, nc * sizeof(double));
    if (!with_ref) return;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, m = 0;
            for (int64_t k = 0; k < K; k++) {
                double a = ta ? p->A[k * p->lda + i] : p->A[i * p->lda + k];
                double b = tb ? p->B[j * p->ldb + k] : p->B[k * p->ldb + j];
                s += a * b;
                m += fabs(a * b);
            }
            double c = p->C0[i * p->ldc + j];
            double r = alpha * s, rm = fabs(alpha) * m;
            if (beta != 0) {
                r += beta * c;
                rm += fabs(beta * c);
            }
            p->ref[i * p->ldc + j] = r;
            p->mag[i * p->ldc + j] = rm;
        }
}

static void prob_init(prob *p, int ta, int tb, int64_t M, int64_t N, int64_t K,
                      int pad, double alpha, double beta) {
    prob_init_(p, ta, tb, M, N, K, pad, alpha, beta, 1);
}

static void prob_free(prob *p) {
    free(p->A);
    free(p->B);
    free(p->C0);
    free(p->ref);
    free(p->mag);
}

typedef enum { S_BUILTIN, S_DISPATCH, D_BUILTIN, D_DISPATCH } which;
static const char *which_name[] = {"sgemm_builtin", "sgemm", "dgemm_builtin",
                                   "dgemm"};

/* Run one of the four entry points on p; compare C (padding included: it
 * must be untouched) with the reference. Returns 1 when it matched. */
static int run_check(const prob *p, which w, const char *file, int line) {
    size_t na = a_size(p), nb = b_size(p), nc = c_size(p);
    int f64 = w == D_BUILTIN || w == D_DISPATCH;
    double *got = dalloc(nc);
    /* The dispatching entry points run right after the built-in ones on the
     * same data: give them fresh scratch, so that a panel left unpacked
     * cannot pass for packed thanks to the previous run's leftovers. */
    if (w == S_DISPATCH || w == D_DISPATCH) gad__gemm_release_scratch();
    int rc;
    if (f64) {
        double *C = dalloc(nc);
        memcpy(C, p->C0, nc * sizeof(double));
        rc = (w == D_BUILTIN ? gad__dgemm_builtin : gad__dgemm)(
            p->ta, p->tb, p->M, p->N, p->K, p->alpha, p->A, p->lda, p->B,
            p->ldb, p->beta, C, p->ldc);
        memcpy(got, C, nc * sizeof(double));
        free(C);
    } else {
        float *A = falloc(na), *B = falloc(nb), *C = falloc(nc);
        for (size_t i = 0; i < na; i++) A[i] = (float)p->A[i];
        for (size_t i = 0; i < nb; i++) B[i] = (float)p->B[i];
        for (size_t i = 0; i < nc; i++) C[i] = (float)p->C0[i];
        rc = (w == S_BUILTIN ? gad__sgemm_builtin : gad__sgemm)(
            p->ta, p->tb, p->M, p->N, p->K, (float)p->alpha, A, p->lda, B,
            p->ldb, (float)p->beta, C, p->ldc);
        for (size_t i = 0; i < nc; i++) got[i] = C[i];
        free(A);
        free(B);
        free(C);
    }
    int ok = rc == 0;
    if (!ok)
        fprintf(stderr, "%s:%d: [%s] %s returned %d\n", file, line,
                test_current_, which_name[w], rc);
    double rel = (f64 ? 1e-12 : 1e-5) * sqrt((double)p->K + 1);
    for (int64_t i = 0; ok && i < p->M; i++)
        for (int64_t j = 0; j < p->ldc; j++) {
            size_t x = (size_t)(i * p->ldc + j);
            double e = p->ref[x], g = got[x];
            int good;
            if (j >= p->N) /* padding: untouched */
                good = memcmp(&e, &g, sizeof e) == 0 || (isnan(e) && isnan(g));
            else
                good = !isnan(g) && fabs(g - e) <= rel * p->mag[x] + 1e-30;
            if (!good) {
                fprintf(stderr,
                        "%s:%d: [%s] %s ta=%d tb=%d M=%lld N=%lld K=%lld "
                        "lda=%lld ldb=%lld ldc=%lld alpha=%g beta=%g: "
                        "C[%lld,%lld] = %.10g, expected %.10g\n",
                        file, line, test_current_, which_name[w], p->ta, p->tb,
                        (long long)p->M, (long long)p->N, (long long)p->K,
                        (long long)p->lda, (long long)p->ldb,
                        (long long)p->ldc, p->alpha, p->beta, (long long)i,
                        (long long)j, g, e);
                ok = 0;
                break;
            }
        }
    free(got);
    return ok;
}

#define CHECK_GEMM(p, w)                                                       \
    do {                                                                       \
        test_checks_++;                                                        \
        if (!run_check((p), (w), __FILE__, __LINE__)) test_failures_++;        \
    } while (0)

static const double alphas[] = {1.0, -0.5, 2.0, 1.0, 0.0};
static const double betas[] = {0.0, 1.0, 0.0, -1.5, 0.5};
#define NAB 5

/* One shape through the four entry points. */
static void check_shape(int ta, int tb, int64_t M, int64_t N, int64_t K,
                        int pad, int ab) {
    prob p;
    prob_init(&p, ta, tb, M, N, K, pad, alphas[ab % NAB], betas[ab % NAB]);
    for (int w = 0; w < 4; w++) CHECK_GEMM(&p, (which)w);
    prob_free(&p);
}

/* ------------------------------------------------------------ tests */

TEST(gemm_degenerate) {
    /* M or N = 0: nothing happens (C must not even be read). */
    float c = 7;
    CHECK(gad__sgemm_builtin(0, 0, 0, 3, 4, 1, NULL, 4, NULL, 3, 0, NULL, 3) ==
          0);
    CHECK(gad__sgemm_builtin(0, 0, 3, 0, 4, 1, NULL, 4, NULL, 1, 0, &c, 1) ==
          0);
    CHECK(gad__dgemm(1, 1, 0, 0, 0, 1, NULL, 1, NULL, 1, 0, NULL, 1) == 0);
    CHECK(c == 7);
    /* K = 0: C = beta * C, zeros for beta = 0 (over NaN too). */
    for (int ab = 0; ab < NAB; ab++)
        for (int t = 0; t < 4; t++) {
            check_shape(t & 1, t >> 1, 5, 7, 0, 2, ab);
            check_shape(t & 1, t >> 1, 40, 300, 0, 0, ab);
        }
    /* 1-sized dims. */
    for (int t = 0; t < 4; t++) {
        check_shape(t & 1, t >> 1, 1, 1, 1, 0, t);
        check_shape(t & 1, t >> 1, 1, 1, 300, 1, t + 1);
        check_shape(t & 1, t >> 1, 1, 70, 1, 0, t + 2);
        check_shape(t & 1, t >> 1, 70, 1, 1, 3, t + 3);
        check_shape(t & 1, t >> 1, 1, 600, 77, 0, t);
        check_shape(t & 1, t >> 1, 600, 1, 77, 2, t + 1);
        check_shape(t & 1, t >> 1, 200, 200, 1, 0, t + 2);
    }
}

/* Products with few rows or columns (dot-product and small-tile paths):
 * every transpose, leading dimensions minimal (contiguous vectors) or not,
 * K around the vector lengths. */
TEST(gemm_thin) {
    static const int64_t ms[] = {1, 2, 3, 4, 5, 100};
    static const int64_t ks[] = {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100};
    int c = 0;
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
            if (a == 5 && b == 5) continue;
            for (int k = 0; k < 11; k++, c++)
                for (int t = 0; t < 4; t++)
                    check_shape(t & 1, t >> 1, ms[a], ms[b], ks[k],
                                (c + t) % 3 == 0, c + t);
        }
}

/* Every combination of the odd sizes, cycling through transposes, padding
 * and alpha/beta. */
TEST(gemm_odd_sizes) {
    static const int64_t sz[] = {1, 3, 17, 63, 65, 100, 257};
    int n = (int)(sizeof sz / sizeof sz[0]), c = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            for (int k = 0; k < n; k++, c++)
                check_shape(c & 1, (c >> 1) & 1, sz[i], sz[j], sz[k],
                            (c % 3) * 5, c);
}

/* Sizes on both sides of the micro-tile (MR 6/12, NR 8..32), block (KC
 * 256/384, NCB 240/480, MCB 3072) and small-path boundaries, all four
 * transposes; with the small-problem paths on, then off (every product
 * packed). */
TEST(gemm_blocking_boundaries) {
    static const int64_t shapes[][3] = {
        {11, 15, 7},     {12, 16, 8},     {13, 17, 9},     {23, 31, 5},
        {24, 32, 6},     {25, 33, 4},     {36, 48, 3},     {37, 49, 2},
        {5, 7, 255},     {6, 9, 256},     {7, 8, 257},     {13, 33, 383},
        {12, 32, 384},   {14, 34, 385},   {9, 40, 769},    {30, 239, 20},
        {30, 240, 21},   {31, 241, 22},   {29, 479, 10},   {28, 480, 11},
        {27, 481, 12},   {26, 977, 13},   {96, 96, 40},    {97, 96, 41},
        {96, 97, 42},    {24, 500, 30},   {25, 500, 31},   {500, 16, 30},
        {500, 17, 31},   {130, 150, 390}, {3073, 17, 5},   {3072, 33, 3},
        {3100, 1, 4},    {1, 3100, 4},    {200, 300, 520}, {40, 1024, 40},
        /* a small C over a long K (the weight gradients' shape) */
        {100, 70, 1100}, {37, 41, 1024},  {37, 41, 1023},  {13, 33, 2000},
    };
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int small = 1; small >= 0; small--) {
        CHECK(gad__gemm_test_isa(0, small) == 0);
        for (int s = 0; s < n; s++)
            for (int t = 0; t < 4; t++)
                check_shape(t & 1, t >> 1, shapes[s][0], shapes[s][1],
                            shapes[s][2], (s + t) % 4 == 0 ? 9 : 0, s + t);
    }
    CHECK(gad__gemm_test_isa(0, 1) == 0);
}

/* The unpacked path's band for few rows (gemm_use_sup: M <= 128, K <= 800,
 * op(B) up to twice L2, past a quarter of it at 560 KB), one row and one
 * step of K outside it, with the small-problem paths on and then off (the
 * same products packed). Under the sanitizers, the first shape untransposed. */
TEST(gemm_few_rows_wide_b) {
    static const int64_t shapes[][3] = {{100, 200, 700}, {129, 200, 700}, {100, 200, 801}};
#if TEST_SANITIZED
    const int n = 1, nt = 1;
#else
    const int n = 3, nt = 4;
#endif
    for (int small = 1; small >= 0; small--) {
        CHECK(gad__gemm_test_isa(0, small) == 0);
        for (int s = 0; s < n; s++)
            for (int t = 0; t < nt; t++)
                check_shape(t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2],
                            t == 1 ? 3 : 0, s + t);
    }
    CHECK(gad__gemm_test_isa(0, 1) == 0);
}

/* The same checks on every kernel set this CPU can run, with and without
 * the small-problem paths. */
TEST(gemm_every_isa) {
    static const int64_t shapes[][3] = {
        {1, 1, 1},      {3, 17, 63},    {17, 65, 3},   {65, 100, 17},
        {100, 63, 257}, {13, 33, 385},  {257, 250, 30}, {7, 490, 20},
        {600, 20, 9},   {2, 300, 40},   {300, 3, 40},
    };
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int isa = 1; isa <= 3; isa++)
        for (int small = 0; small < 2; small++) {
            if (gad__gemm_test_isa(isa, small) != 0) continue;
            for (int s = 0; s < n; s++)
                for (int t = 0; t < 4; t++)
                    check_shape(t & 1, t >> 1, shapes[s][0], shapes[s][1],
                                shapes[s][2], t == 2 ? 4 : 0, s + t + isa);
        }
    CHECK(gad__gemm_test_isa(0, 1) == 0);
}

/* Run p on the built-in kernel, result discarded. */
static void junk_run(const prob *p, int f64) {
    size_t na = a_size(p), nb = b_size(p), nc = c_size(p);
    if (f64) {
        double *C = dalloc(nc);
        gad__dgemm_builtin(p->ta, p->tb, p->M, p->N, p->K, 1, p->A, p->lda,
                           p->B, p->ldb, 0, C, p->ldc);
        free(C);
        return;
    }
    float *A = falloc(na), *B = falloc(nb), *C = falloc(nc);
    for (size_t i = 0; i < na; i++) A[i] = (float)p->A[i];
    for (size_t i = 0; i < nb; i++) B[i] = (float)p->B[i];
    gad__sgemm_builtin(p->ta, p->tb, p->M, p->N, p->K, 1, A, p->lda, B, p->ldb,
                       0, C, p->ldc);
    free(A);
    free(B);
    free(C);
}

/* Each thread count must give bit-identical results. */
static void threads_case(int f64, int ta, int tb, int64_t M, int64_t N,
                         int64_t K) {
    prob p;
    prob_init_(&p, ta, tb, M, N, K, 1, 1.5, 0.25, 0);
    size_t nc = c_size(&p), na = a_size(&p), nb = b_size(&p);
    void *res[2];
    prob junk; /* same shape, other values: overwrites the packing buffers */
    prob_init_(&junk, ta, tb, M, N, K, 1, 1.0, 0.0, 0);
    for (int r = 0; r < 2; r++) {
        gad_set_num_threads(r + 1);
        if (r == 1) { /* the junk's result is not checked */
            gad_set_num_threads(1);
            junk_run(&junk, f64);
            gad_set_num_threads(2);
        }
        if (f64) {
            double *C = dalloc(nc);
            memcpy(C, p.C0, nc * sizeof(double));
            CHECK(gad__dgemm_builtin(ta, tb, M, N, K, p.alpha, p.A, p.lda, p.B,
                                     p.ldb, p.beta, C, p.ldc) == 0);
            res[r] = C;
        } else {
            float *A = falloc(na), *B = falloc(nb), *C = falloc(nc);
            for (size_t i = 0; i < na; i++) A[i] = (float)p.A[i];
            for (size_t i = 0; i < nb; i++) B[i] = (float)p.B[i];
            for (size_t i = 0; i < nc; i++) C[i] = (float)p.C0[i];
            CHECK(gad__sgemm_builtin(ta, tb, M, N, K, (float)p.alpha, A, p.lda,
                                     B, p.ldb, (float)p.beta, C, p.ldc) == 0);
            free(A);
            free(B);
            res[r] = C;
        }
    }
    CHECK_MSG(memcmp(res[0], res[1], nc * (f64 ? 8 : 4)) == 0,
              "f64=%d ta=%d tb=%d %lldx%lldx%lld differs between 1 and 2 "
              "threads",
              f64, ta, tb, (long long)M, (long long)N, (long long)K);
    free(res[0]);
    free(res[1]);
    prob_free(&p);
    prob_free(&junk);
    gad_set_num_threads(0);
}

TEST(gemm_threads_bit_identical) {
    static const int64_t shapes[][3] = {
        {64, 64, 64},    {90, 70, 50},   {301, 203, 517}, {1000, 40, 300},
        {40, 1000, 300}, {20, 700, 90},  {700, 12, 90},   {257, 257, 257},
        {3100, 20, 10},  {130, 520, 400}, {3, 900, 200},  {900, 2, 200},
        {120, 90, 1500},
    };
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    for (int small = 1; small >= 0; small--) {
        CHECK(gad__gemm_test_isa(0, small) == 0);
        for (int s = 0; s < n; s++)
            for (int t = 0; t < 4; t++)
                threads_case((s + small) & 1, t & 1, t >> 1, shapes[s][0],
                             shapes[s][1], shapes[s][2]);
    }
    CHECK(gad__gemm_test_isa(0, 1) == 0);
}

/* Many rows over a small row-major op(B): the small-problem path packs op(B)
 * into panels first (gemm_sup_panels, on Intel's cores: M >= 512, N > 32),
 * where fewer rows read it in place; the result is checked against the
 * reference with padded leading dimensions and every alpha/beta, between
 * one and two threads, and its bits against op(B) read in place (the hook
 * gad__gemm_test_sup_panels). Under the sanitizers, the first shape. */
int gad__gemm_sup_panels(int tb, int64_t M, int64_t N, int64_t K);
void gad__gemm_test_sup_panels(int on);
TEST(gemm_sup_panels_many_rows) {
    static const int64_t shapes[][3] = {{512, 45, 100}, {700, 100, 257}, {520, 250, 300}};
#if TEST_SANITIZED
    const int n = 1;
#else
    const int n = 3;
#endif
    CHECK(gad__gemm_test_isa(0, 1) == 0);
    CHECK(gad__gemm_sup_panels(1, 100, 100, 100) == 1);
    CHECK(gad__gemm_sup_panels(0, 511, 100, 100) == 0);
    CHECK(gad__gemm_sup_panels(0, 600, 32, 100) == 0); /* one panel or less */
    gad__gemm_test_sup_panels(0);
    CHECK(gad__gemm_sup_panels(0, 600, 100, 100) == 0);
    gad__gemm_test_sup_panels(1);
    for (int s = 0; s < n; s++) {
        for (int t = 0; t < 4; t++)
            check_shape(t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2],
                        t == 0 ? 5 : 0, s + t);
        threads_case(0, 0, 0, shapes[s][0], shapes[s][1], shapes[s][2]);
        /* the same bits with op(B) in panels and in place */
        const int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        float *A = falloc((size_t)(M * K)), *B = falloc((size_t)(K * N));
        float *C0 = falloc((size_t)(M * N)), *C1 = falloc((size_t)(M * N));
        for (int64_t i = 0; i < M * K; i++) A[i] = (float)rnd();
        for (int64_t i = 0; i < K * N; i++) B[i] = (float)rnd();
        CHECK(gad__sgemm_builtin(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C0, N) == 0);
        gad__gemm_test_sup_panels(0);
        CHECK(gad__sgemm_builtin(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C1, N) == 0);
        gad__gemm_test_sup_panels(1);
        CHECK_MSG(memcmp(C0, C1, (size_t)(M * N) * sizeof(float)) == 0,
                  "%lldx%lldx%lld: op(B) in panels and in place differ", (long long)M,
                  (long long)N, (long long)K);
        free(A);
        free(B);
        free(C0);
        free(C1);
    }
}

/* ------------------------------------------- subnormals */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(GAD_GEMM_PLAIN)
#include <float.h>
#include <immintrin.h>
#define MXCSR_FTZ_DAZ 0x8040u

/* The built-in kernels count subnormal operands and results as zero (FTZ
 * and DAZ on every thread they use: subnormals cost a microcode assist per
 * multiply) and give the caller's MXCSR back, whatever it was. */
TEST(gemm_subnormals_flushed_mxcsr_restored) {
    const int64_t M = 300, N = 200, K = 150; /* big enough for two threads */
    float *A = falloc((size_t)(M * K)), *B = falloc((size_t)(K * N)), *C = falloc((size_t)(M * N));
    /* even rows all subnormal (their products must give exactly 0, not a
     * subnormal sum); odd rows ones but every third entry */
    for (int64_t i = 0; i < M * K; i++)
        A[i] = ((i / K) % 2 == 0 || i % 3 == 0) ? FLT_MIN / 4 : 1.0f;
    for (int64_t i = 0; i < K * N; i++) B[i] = (i % 5 == 0) ? 1.0f : 0.0f;
    unsigned caller = _mm_getcsr();
    for (int mode = 0; mode < 2; mode++) {
        unsigned want = mode ? (caller | MXCSR_FTZ_DAZ) : (caller & ~MXCSR_FTZ_DAZ);
        _mm_setcsr(want);
        for (int small = 1; small >= 0; small--) {
            CHECK(gad__gemm_test_isa(0, small) == 0);
            CHECK(gad__sgemm_builtin(0, 0, M, N, K, 1, A, K, B, N, 0, C, N) == 0);
            /* the control bits (the low six are sticky status flags) */
            CHECK((_mm_getcsr() & ~0x3Fu) == (want & ~0x3Fu));
            /* C(i, j) counts the ones of row i of A that meet a one of column
             * j of B; the subnormals add exactly nothing (even rows: 0) */
            int ok = 1;
            for (int64_t i = 0; i < M && ok; i++)
                for (int64_t j = 0; j < N && ok; j++) {
                    double ref = 0;
                    for (int64_t k = 0; k < K; k++)
                        if (A[i * K + k] == 1.0f && B[k * N + j] != 0) ref += 1;
                    ok = C[i * N + j] == (float)ref;
                }
            CHECK(ok);
        }
    }
    _mm_setcsr(caller);
    CHECK(gad__gemm_test_isa(0, 1) == 0);
    free(A), free(B), free(C);
}
#endif

/* ------------------------------------------- allocation failure */

static void *failing_alloc(void *ctx, size_t size, size_t align) {
    (void)ctx;
    (void)size;
    (void)align;
    return NULL;
}

static void plain_free(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    (void)size;
    free(ptr);
}

/* Big enough (op(B) over 512 KiB, more than 128 rows) that every path
 * packs its operands. */
TEST(gemm_alloc_failure) {
    enum { M = 200, N = 400, K = 400 };
    float *A = falloc(M * K), *B = falloc(K * N), *C = falloc(M * N);
    double *dA = dalloc(M * K), *dB = dalloc(K * N), *dC = dalloc(M * N);
    for (int i = 0; i < M * K; i++) dA[i] = A[i] = (float)rnd();
    for (int i = 0; i < K * N; i++) dB[i] = B[i] = (float)rnd();
    int blas = gad_set_blas(0);
    gad__gemm_release_scratch();
    gad_allocator fail = {failing_alloc, plain_free, NULL};
    gad_set_allocator(&fail);
    for (int t = 0; t < 4; t++) {
        CHECK(gad__sgemm_builtin(t & 1, t >> 1, M, N, K, 1, A, t & 1 ? M : K,
                                 B, t >> 1 ? K : N, 0, C, N) == -1);
        CHECK(gad__dgemm_builtin(t & 1, t >> 1, M, N, K, 1, dA, t & 1 ? M : K,
                                 dB, t >> 1 ? K : N, 0, dC, N) == -1);
        CHECK(gad__sgemm(t & 1, t >> 1, M, N, K, 1, A, t & 1 ? M : K, B,
                         t >> 1 ? K : N, 0, C, N) == -1);
    }
    /* A small product with a transposed B packs it too. */
    CHECK(gad__sgemm_builtin(0, 1, 20, 20, 20, 1, A, 20, B, 20, 0, C, 20) ==
          -1);
    /* Nothing to pack: never fails. */
    CHECK(gad__sgemm_builtin(0, 0, 5, 0, 5, 1, A, 5, B, 1, 0, C, 1) == 0);
    CHECK(gad__sgemm_builtin(0, 0, 5, 5, 0, 1, A, 1, B, 5, 0, C, 5) == 0);
    gad_set_allocator(NULL);
    gad_set_blas(blas);
    /* Works again, and right. */
    check_shape(0, 0, M, N, K, 0, 0);
    check_shape(1, 1, 20, 20, 20, 1, 1);
    gad__gemm_release_scratch();
    free(A);
    free(B);
    free(C);
    free(dA);
    free(dB);
    free(dC);
}

/* The CBLAS call (when built with one): every product forced through it,
 * all transposes, padded leading dimensions, beta = 0 over NaN; then off
 * again (everything on the built-in kernel). */
TEST(gemm_blas_path) {
    static const int64_t shapes[][3] = {
        {1, 1, 1}, {3, 17, 63}, {65, 100, 17}, {130, 70, 90}, {64, 64, 0},
    };
    int n = (int)(sizeof shapes / sizeof shapes[0]);
    int old = gad_set_blas(1);
    for (int forced = 1; forced >= 0; forced--) {
        gad__gemm_test_blas_always(forced);
        for (int s = 0; s < n; s++)
            for (int t = 0; t < 4; t++)
                check_shape(t & 1, t >> 1, shapes[s][0], shapes[s][1],
                            shapes[s][2], (s + t) % 2 ? 5 : 0, s + t);
    }
    gad_set_blas(0);
    check_shape(1, 0, 300, 280, 260, 0, 0);
    gad_set_blas(old);
}

/* The scratch a product of up to M x N x K takes bounds that of every
 * smaller one: callers (convolution's blocks of patch rows, whose last is
 * shorter) size one buffer by the largest. The block depth is not monotonic
 * in K (K = 256 is one f64 block of 256, K = 260 two of 132), nor is the
 * choice of the small-problem path; on this AMD Zen 4 core (1 MiB L2) a
 * tail of 248 rows asked for more than the block of 448 had been given. */
TEST(gemm_scratch_bounds_smaller_products) {
    static const int64_t mn[][2] = {{20, 216}, {300, 40}, {64, 512}, {5, 1000}, {600, 100}};
    for (int f64 = 0; f64 < 2; f64++)
        for (int t = 0; t < 4; t++)
            for (int s = 0; s < 5; s++) {
                int ta = t & 1, tb = t >> 1;
                int64_t M = mn[s][0], N = mn[s][1];
                size_t most = 0;
                int bad = 0;
                for (int64_t K = 1; K <= 1200; K++) {
                    size_t b = gad__gemm_scratch_bytes(f64, ta, tb, M, N, K, ta ? M : K,
                                                       tb ? K : N);
                    if (b > most) most = b;
                    /* the bound at K covers every K' <= K */
                    if (gad__gemm_scratch_bytes(f64, ta, tb, M, N, K, ta ? M : K, tb ? K : N) <
                        most)
                        bad++;
                }
                CHECK_MSG(bad == 0, "f64 %d ta %d tb %d M %lld N %lld: %d depths below a "
                          "smaller one's scratch", f64, ta, tb, (long long)M, (long long)N, bad);
            }
}

int main(void) {
    RUN(gemm_degenerate);
    RUN(gemm_scratch_bounds_smaller_products);
    RUN(gemm_thin);
    RUN(gemm_odd_sizes);
    RUN(gemm_blocking_boundaries);
    RUN(gemm_few_rows_wide_b);
    RUN(gemm_sup_panels_many_rows);
    RUN(gemm_every_isa);
    RUN(gemm_threads_bit_identical);
    RUN(gemm_alloc_failure);
    RUN(gemm_blas_path);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(GAD_GEMM_PLAIN)
    RUN(gemm_subnormals_flushed_mxcsr_restored);
#endif
    return test_summary();
}
