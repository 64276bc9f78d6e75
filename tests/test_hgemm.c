/* test_hgemm.c: the half-precision GEMM (src/cpu/gemm_half.c) and
 * gad_matmul on f16/bf16 tensors, against a double-precision reference:
 * every kernel path this CPU has (AMX, AVX-512 BF16, the f32 kernels on
 * converted panels, packed or, for small problems, unpacked, and gemm.c's
 * portable kernels forced), odd
 * sizes, all transposes, padded leading dimensions, K = 0, NaN and Inf,
 * subnormal inputs, the same bits for 1, 2 and 3 threads, the half result
 * being the f32 result rounded once; then matmul's batched and broadcast
 * shapes and its gradients against the f32 op.
 *
 * The bound. Inputs are halves, exact in f32 and f64, and the product of two
 * of them is exact in f32 (at most 11 + 11 mantissa bits). The only errors
 * are the f32 sums and the final rounding. Summing K exact terms in f32, in
 * any order or blocking, errs by at most (K - 1) u / (1 - (K - 1) u) times
 * S = sum |a_ik b_kj| (u = 2^-24, Higham, "Accuracy and Stability of
 * Numerical Algorithms", 2nd ed., section 4.2); (K + 1) u S covers it for
 * every K here. Rounding that to the half dtype adds at most u_h |c| <=
 * u_h (1 + K u) S (u_h = 2^-8 for bf16, 2^-11 for f16) for a normal
 * result, or half the spacing of the half's subnormals (2^-25 for f16)
 * below that. So
 *   |out - ref| <= (K + 1) u S + 1.01 u_h S + (f16: 2^-25). */
#include "gad.h"
#include "gad_int.h"
#include "cpu/gemm.h"
#include "half.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Test hooks (gemm.c, gemm_half.c; not in gemm.h). */
int gad__gemm_test_isa(int isa, int small_paths);
int gad__hgemm_test_path(int p);
int gad__hgemm_path(int dt);

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

static float rndf(void) {
    return (float)((double)(rng_next() >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static uint16_t to_half(int dt, float f) {
    return dt == GAD_BF16 ? gad__f32_to_bf16(f) : gad__f32_to_f16(f);
}
static double from_half(int dt, uint16_t h) {
    return dt == GAD_BF16 ? gad__bf16_to_f32(h) : gad__f16_to_f32(h);
}

static uint16_t *hrand(int dt, size_t n) {
    uint16_t *p = malloc((n ? n : 1) * 2);
    for (size_t i = 0; i < n; i++) p[i] = to_half(dt, rndf());
    return p;
}

/* One product with padded leading dimensions: op(A) is M x K, op(B) K x N. */
typedef struct hprob {
    int dt, ta, tb;
    int64_t M, N, K, lda, ldb;
    uint16_t *A, *B;
} hprob;

static void hprob_make(hprob *p, int dt, int ta, int tb, int64_t M, int64_t N, int64_t K) {
    p->dt = dt;
    p->ta = ta;
    p->tb = tb;
    p->M = M;
    p->N = N;
    p->K = K;
    /* odd padding, but even where K % 4 == 0: the AVX-512 BF16 packing of
     * a row-major A transposes pairs as 32-bit words when lda is even */
    p->lda = (ta ? M : K) + 3 + (K % 4 == 0);
    p->ldb = (tb ? K : N) + 5;
    p->A = hrand(dt, (size_t)((ta ? K : M) * p->lda));
    p->B = hrand(dt, (size_t)((tb ? N : K) * p->ldb));
}

static void hprob_free(hprob *p) {
    free(p->A);
    free(p->B);
}

static double opa(const hprob *p, int64_t i, int64_t k) {
    return from_half(p->dt, p->ta ? p->A[k * p->lda + i] : p->A[i * p->lda + k]);
}
static double opb(const hprob *p, int64_t k, int64_t j) {
    return from_half(p->dt, p->tb ? p->B[j * p->ldb + k] : p->B[k * p->ldb + j]);
}

/* Run p with result dtype cdt into C (ldc = N + 2, NaN-filled first). */
static void *run(const hprob *p, int cdt) {
    int64_t ldc = p->N + 2;
    size_t n = (size_t)(p->M * ldc) + 1, es = cdt == GAD_F32 ? 4 : 2;
    void *C = malloc(n * es);
    memset(C, 0xff, n * es); /* NaN in every dtype */
    CHECK(gad__hgemm(p->dt, p->ta, p->tb, p->M, p->N, p->K, p->A, p->lda, p->B, p->ldb, cdt, C,
                     ldc) == 0);
    return C;
}

static double c_at(const void *C, int cdt, int64_t i) {
    return cdt == GAD_F32 ? (double)((const float *)C)[i] : from_half(cdt, ((const uint16_t *)C)[i]);
}

/* Check the result (cdt = p->dt or f32) against the f64 reference within
 * the bound of the header; reference infinities and NaNs must match. */
static int check_result(const hprob *p, int cdt, const void *C, const char *what) {
    const double u = 0x1p-24, uh = cdt == GAD_F32 ? 0 : cdt == GAD_BF16 ? 0x1p-8 : 0x1p-11;
    const double absb = cdt == GAD_F16 ? 0x1p-25 : 0;
    int64_t ldc = p->N + 2;
    int bad = 0;
    for (int64_t i = 0; i < p->M && !bad; i++)
        for (int64_t j = 0; j < p->N && !bad; j++) {
            double ref = 0, mag = 0;
            for (int64_t k = 0; k < p->K; k++) {
                double t = opa(p, i, k) * opb(p, k, j);
                ref += t;
                mag += fabs(t);
            }
            double got = c_at(C, cdt, i * ldc + j);
            int ok;
            if (isnan(ref) || isinf(ref))
                ok = isnan(ref) ? isnan(got) : got == ref;
            else
                ok = fabs(got - ref) <= ((double)(p->K + 1) * u + 1.01 * uh) * mag + absb;
            if (!ok) {
                printf("  %s: dt %d cdt %d ta %d tb %d %lldx%lldx%lld at (%lld,%lld): got %.9g "
                       "want %.9g (sum|ab| %.3g), path %d\n",
                       what, p->dt, cdt, p->ta, p->tb, (long long)p->M, (long long)p->N,
                       (long long)p->K, (long long)i, (long long)j, got, ref, mag,
                       gad__hgemm_path(p->dt));
                bad = 1;
            }
        }
    /* the padding of C past N is not written */
    for (int64_t i = 0; i < p->M && !bad; i++) {
        double pad = c_at(C, cdt, i * ldc + p->N);
        if (!isnan(pad)) bad = 1;
    }
    CHECK(!bad);
    return !bad;
}

/* The half result must be the f32 result rounded once (the same sums). */
static void check_rounded(const hprob *p, const void *Cf, const void *Ch) {
    int64_t ldc = p->N + 2;
    int bad = 0;
    for (int64_t i = 0; i < p->M && !bad; i++)
        for (int64_t j = 0; j < p->N && !bad; j++) {
            float f = ((const float *)Cf)[i * ldc + j];
            uint16_t h = ((const uint16_t *)Ch)[i * ldc + j];
            if (h != to_half(p->dt, f)) {
                printf("  rounding at (%lld,%lld): %g gave 0x%04x, want 0x%04x\n", (long long)i,
                       (long long)j, (double)f, h, to_half(p->dt, f));
                bad = 1;
            }
        }
    CHECK(!bad);
}

/* op(A) stored the other way (ta flipped, the same values) must give the
 * same bits: a row-major A read in place and a packed one are summed in
 * one order. */
static void check_flipped_a(const hprob *p, const void *Cf) {
    hprob q = *p;
    q.ta = !p->ta;
    q.lda = (q.ta ? p->M : p->K) + 1;
    q.A = malloc((size_t)((q.ta ? p->K : p->M) * q.lda) * 2 + 2);
    for (int64_t i = 0; i < p->M; i++)
        for (int64_t k = 0; k < p->K; k++)
            q.A[q.ta ? k * q.lda + i : i * q.lda + k] =
                p->ta ? p->A[k * p->lda + i] : p->A[i * p->lda + k];
    void *Cq = run(&q, GAD_F32);
    int64_t ldc = p->N + 2;
    int bad = 0;
    for (int64_t i = 0; i < p->M && !bad; i++)
        bad = memcmp((const float *)Cf + i * ldc, (const float *)Cq + i * ldc,
                     (size_t)p->N * 4) != 0;
    if (bad)
        printf("  ta %d and %d differ: dt %d %lldx%lldx%lld, path %d\n", p->ta, q.ta, p->dt,
               (long long)p->M, (long long)p->N, (long long)p->K, gad__hgemm_path(p->dt));
    CHECK(!bad);
    free(Cq);
    free(q.A);
}

static void check_shape(int dt, int ta, int tb, int64_t M, int64_t N, int64_t K) {
    hprob p;
    hprob_make(&p, dt, ta, tb, M, N, K);
    void *Cf = run(&p, GAD_F32), *Ch = run(&p, dt);
    check_result(&p, GAD_F32, Cf, "f32 out");
    check_result(&p, dt, Ch, "half out");
    check_rounded(&p, Cf, Ch);
    if (!ta) check_flipped_a(&p, Cf);
    free(Cf);
    free(Ch);
    hprob_free(&p);
}

/* The odd sizes of the brief, sizes across the blocking of K (384, 768 and
 * 2048) and of the tiles (12 and 32 rows, 32 columns). */
static const int64_t shapes[][3] = {
    {1, 1, 1},     {7, 17, 33},   {17, 7, 1},    {33, 255, 17}, {255, 33, 7},
    {257, 1, 255}, {1, 257, 33},  {13, 35, 385}, {33, 65, 769}, {255, 257, 257},
    {64, 64, 2},   {12, 32, 768}, {31, 33, 3},   {40, 70, 64},
    /* K even: the AVX-512 BF16 path reads a row-major op(A) in place and
     * packs a last panel of 8 (and fewer), 11 and 6 rows; lda 1024 (2 KiB
     * rows) is packed whole; K past 2048 takes two blocks there (f32 sums
     * in the buffer, then rounded) */
    {20, 40, 130}, {23, 33, 770}, {6, 50, 36},   {29, 64, 1020},
    {13, 40, 2100}, {5, 33, 2049},
    /* many rows: op(B) converted into panels on Intel's cores (gemm.c's
     * gad__gemm_sup_panels) */
    {600, 70, 90},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))
/* every other shape under the sanitizers: small and large, K odd and even */
#define SHAPE_STEP (TEST_SANITIZED ? 2 : 1)

static void every_shape(int dt) {
    for (int s = 0; s < NSHAPES; s += SHAPE_STEP)
        for (int t = 0; t < 4; t++) check_shape(dt, t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2]);
}

/* Each path this CPU has, bf16 and f16, then the f32 path with gemm.c's
 * portable kernels (and plain-C conversions). */
TEST(hgemm_every_path) {
    for (int path = 1; path <= 3; path++) {
        if (gad__hgemm_test_path(path) != 0) {
            printf("  path %d (%s) skipped: this CPU or build cannot run it%s\n", path,
                   path == 2 ? "AVX-512 BF16" : path == 3 ? "AMX-BF16" : "f32",
                   path == 3 ? " (no AMX-BF16, or the kernel refused the tile state)" : "");
            continue;
        }
        CHECK(gad__hgemm_path(GAD_BF16) == path);
        every_shape(GAD_BF16);
        if (path == 1) every_shape(GAD_F16);
    }
    /* the packed path on the shapes the small-problem one takes */
    CHECK(gad__gemm_test_isa(0, 0) == 0 && gad__hgemm_test_path(1) == 0);
    every_shape(GAD_BF16);
    every_shape(GAD_F16);
    if (gad__gemm_test_isa(1, 1) == 0) {
        CHECK(gad__hgemm_test_path(1) == 0);
        every_shape(GAD_BF16);
        every_shape(GAD_F16);
    }
    CHECK(gad__gemm_test_isa(0, 1) == 0);
    CHECK(gad__hgemm_test_path(0) == 0);
}

/* K = 0 writes zeros; M or N = 0 writes nothing. */
TEST(hgemm_degenerate) {
    for (int dt = GAD_F16; dt <= GAD_BF16; dt++) {
        uint16_t a[4] = {0}, b[4] = {0};
        uint16_t c[6];
        float cf[6];
        memset(c, 0xff, sizeof c);
        memset(cf, 0xff, sizeof cf);
        CHECK(gad__hgemm(dt, 0, 0, 2, 3, 0, a, 1, b, 3, dt, c, 3) == 0);
        CHECK(gad__hgemm(dt, 1, 1, 2, 3, 0, a, 2, b, 1, GAD_F32, cf, 3) == 0);
        for (int i = 0; i < 6; i++) CHECK(c[i] == 0 && cf[i] == 0.0f);
        memset(c, 0xff, sizeof c);
        CHECK(gad__hgemm(dt, 0, 0, 0, 3, 4, a, 4, b, 3, dt, c, 3) == 0);
        CHECK(gad__hgemm(dt, 0, 0, 2, 0, 4, a, 4, b, 3, dt, c, 3) == 0);
        for (int i = 0; i < 6; i++) CHECK(c[i] == 0xffff);
    }
}

/* NaN and Inf in the inputs reach exactly the elements they should, on
 * every path: a NaN in row 3 of A makes row 3 of C NaN; +Inf in row 5
 * against positive B gives +Inf; Inf times a zero gives NaN. */
static void nan_inf_case(int dt) {
    const int64_t M = 40, N = 70, K = 50;
    hprob p;
    hprob_make(&p, dt, 0, 0, M, N, K);
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) p.B[k * p.ldb + j] = to_half(dt, 0.25f + (float)(k + j) / 512);
    p.A[3 * p.lda + 7] = to_half(dt, NAN);
    p.A[5 * p.lda + 11] = to_half(dt, INFINITY);
    p.A[9 * p.lda + 2] = to_half(dt, -INFINITY);
    p.B[2 * p.ldb + 13] = 0; /* -Inf * 0 = NaN at (9, 13) */
    void *Cf = run(&p, GAD_F32), *Ch = run(&p, dt);
    check_result(&p, GAD_F32, Cf, "nan/inf f32");
    check_result(&p, dt, Ch, "nan/inf half");
    check_rounded(&p, Cf, Ch);
    int64_t ldc = N + 2;
    CHECK(isnan(c_at(Ch, dt, 3 * ldc + 0)) && isinf(c_at(Ch, dt, 5 * ldc + 1)) &&
          isnan(c_at(Ch, dt, 9 * ldc + 13)) && c_at(Ch, dt, 9 * ldc + 12) < 0);
    /* a half NaN is half.h's NaN */
    uint16_t h = ((uint16_t *)Ch)[3 * ldc];
    CHECK(dt == GAD_BF16 ? h == 0xffff : (h & 0x7fff) == 0x7e00);
    free(Cf);
    free(Ch);
    hprob_free(&p);
}

TEST(hgemm_nan_inf) {
    for (int path = 1; path <= 3; path++) {
        if (gad__hgemm_test_path(path) != 0) continue;
        nan_inf_case(GAD_BF16);
        if (path == 1) nan_inf_case(GAD_F16);
    }
    CHECK(gad__hgemm_test_path(0) == 0);
}

/* Subnormal inputs: bf16 ones count as zero on every path (gad.h says so);
 * f16 ones count in full. */
TEST(hgemm_subnormals) {
    const int64_t M = 20, N = 40, K = 30;
    for (int path = 1; path <= 3; path++) {
        if (gad__hgemm_test_path(path) != 0) continue;
        for (int dt = GAD_F16; dt <= GAD_BF16; dt++) {
            if (dt == GAD_F16 && path != 1) continue;
            uint16_t *A = calloc((size_t)(M * K), 2), *B = calloc((size_t)(K * N), 2);
            float *C = malloc((size_t)(M * N) * 4);
            /* A: the smallest subnormal; B: 2^12 (an f32 product of 2^-121
             * for bf16 and 2^-12 for f16: both normal in f32) */
            for (int64_t i = 0; i < M * K; i++) A[i] = 1;
            for (int64_t i = 0; i < K * N; i++) B[i] = to_half(dt, 4096.0f);
            CHECK(gad__hgemm(dt, 0, 0, M, N, K, A, K, B, N, GAD_F32, C, N) == 0);
            int ok = 1;
            float want = dt == GAD_BF16 ? 0.0f : (float)K * 0x1p-12f;
            for (int64_t i = 0; i < M * N; i++) ok &= C[i] == want;
            CHECK(ok);
            free(A);
            free(B);
            free(C);
        }
    }
    CHECK(gad__hgemm_test_path(0) == 0);
}

/* The same bits for 1, 2 and 3 threads, on every path, both results. */
TEST(hgemm_threads_bit_identical) {
    static const int64_t tshapes[][3] = {
        {300, 290, 800}, {64, 700, 100}, {700, 40, 90}, {257, 257, 257}, {5, 3000, 60},
        {200, 300, 64},  /* op(A) transposed, over 128 rows (packed on Intel) */
        {130, 520, 400}, /* op(B) transposed, small path split by columns */
        {520, 20, 30},   /* both transposed, few columns */
        {600, 70, 90},   /* many rows: op(B) in panels on Intel's cores */
    };
    /* the sanitizers take two: the small path's conversions on threads, by
     * rows, and by columns of a transposed op(B) with the result's too */
    static const int some[] = {1, 6};
    int ns = (int)(sizeof tshapes / sizeof tshapes[0]);
#if TEST_SANITIZED
    ns = 2;
#endif
    for (int path = 1; path <= 3; path++) {
        if (gad__hgemm_test_path(path) != 0) continue;
        for (int dt = GAD_F16; dt <= GAD_BF16; dt++) {
            if (dt == GAD_F16 && path != 1) continue;
            for (int k = 0; k < ns; k++) {
                int s = TEST_SANITIZED ? some[k] : k;
                hprob p;
                hprob_make(&p, dt, s & 1, (s >> 1) & 1, tshapes[s][0], tshapes[s][1],
                           tshapes[s][2]);
                void *ref[2] = {NULL, NULL};
                for (int nt = 1; nt <= 3; nt++) {
                    gad_set_num_threads(nt);
                    for (int o = 0; o < 2; o++) {
                        int cdt = o ? dt : GAD_F32;
                        void *C = run(&p, cdt);
                        size_t bytes = (size_t)(p.M * (p.N + 2)) * (o ? 2 : 4);
                        if (!ref[o])
                            ref[o] = C;
                        else {
                            CHECK(memcmp(ref[o], C, bytes) == 0);
                            free(C);
                        }
                    }
                }
                free(ref[0]);
                free(ref[1]);
                hprob_free(&p);
            }
        }
    }
    gad_set_num_threads(0);
    CHECK(gad__hgemm_test_path(0) == 0);
}


/* ------------------------------------------------------------ gad_matmul */

static gad_rng *g_rng;

/* Values of dtype dt (uniform in [-1, 1) rounded to dt) of a shape. */
static gad_tensor *hrnd(int dt, const int64_t *shape, int rank) {
    return gad_cast(gad_rng_uniform_tensor(g_rng, shape, rank, GAD_F32, -1.0, 1.0), dt);
}

static float *readf(gad_tensor *t) {
    int64_t n = gad_numel(t);
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (n > 0) CHECK(gad_read_f32(t, p, (size_t)n) == GAD_OK);
    return p;
}

/* yh (dtype dt) against y32, the f32 op on the same values, and S, the f32
 * product of the absolute values: each is within the header's bound of the
 * exact result, so |yh - y32| <= 2 (K + 1) u S + 1.01 u_h S (+ 2^-25 for
 * f16). Shapes and dtype too. */
static void check_close_half(int dt, gad_tensor *yh, gad_tensor *y32, gad_tensor *S, int64_t K,
                             const char *what) {
    CHECK(yh && y32 && S);
    if (!yh || !y32 || !S) return;
    CHECK(gad_dtype(yh) == (gad_dtype_t)dt);
    CHECK(gad_rank(yh) == gad_rank(y32));
    for (int d = 0; d < gad_rank(y32) && d < gad_rank(yh); d++)
        CHECK(gad_shape(yh)[d] == gad_shape(y32)[d]);
    if (gad_numel(yh) != gad_numel(y32)) return;
    float *h = readf(yh), *f = readf(y32), *m = readf(S);
    const double u = 0x1p-24, uh = dt == GAD_BF16 ? 0x1p-8 : 0x1p-11;
    const double absb = dt == GAD_F16 ? 0x1p-25 : 0;
    int bad = 0;
    for (int64_t i = 0; i < gad_numel(y32) && !bad; i++) {
        double tol = (2.0 * (double)(K + 1) * u + 1.01 * uh) * m[i] + absb;
        if (!(fabs((double)h[i] - (double)f[i]) <= tol)) {
            printf("  %s (dt %d): element %lld: %.9g vs f32 %.9g (tol %.3g)\n", what, dt,
                   (long long)i, (double)h[i], (double)f[i], tol);
            bad = 1;
        }
    }
    CHECK(!bad);
    free(h);
    free(f);
    free(m);
}

/* matmul of a and b (half) against the f32 op on their values. */
static void mm_case(int dt, gad_tensor *a, gad_tensor *b, const char *what) {
    gad_tensor *a32 = gad_cast(a, GAD_F32), *b32 = gad_cast(b, GAD_F32);
    int64_t K = gad_shape(a)[gad_rank(a) - 1];
    check_close_half(dt, gad_matmul(a, b), gad_matmul(a32, b32),
                     gad_matmul(gad_abs(a32), gad_abs(b32)), K, what);
}

/* 1-D on either side, batched, broadcast batch dims, K = 0, sizes around
 * the tiles, and operands that are transposed or sliced views. */
static const struct {
    int ra, rb;
    int64_t a[4], b[4];
} mm_cases[] = {
    {2, 2, {3, 4}, {4, 5}},          {1, 1, {33}, {33}},          {2, 1, {13, 40}, {40}},
    {1, 2, {40}, {40, 33}},          {3, 2, {2, 13, 40}, {40, 33}}, {3, 3, {2, 3, 4}, {1, 4, 2}},
    {4, 3, {2, 1, 5, 7}, {3, 7, 6}}, {1, 3, {3}, {2, 3, 2}},       {2, 2, {2, 0}, {0, 3}},
    {2, 2, {70, 129}, {129, 65}},    {3, 3, {5, 33, 17}, {5, 17, 40}},
};

TEST(matmul_half) {
    for (int dt = GAD_F16; dt <= GAD_BF16; dt++) {
        for (size_t c = 0; c < sizeof mm_cases / sizeof mm_cases[0]; c++) {
            gad_scope_begin();
            char what[32];
            snprintf(what, sizeof what, "case %zu", c);
            mm_case(dt, hrnd(dt, mm_cases[c].a, mm_cases[c].ra),
                    hrnd(dt, mm_cases[c].b, mm_cases[c].rb), what);
            gad_scope_end();
        }
        gad_scope_begin();
        /* transposed views on both sides (read in place), a sliced one
         * (packed first), and a batch of a's against one b (one GEMM) */
        gad_tensor *at = gad_transpose(hrnd(dt, (const int64_t[]){50, 37}, 2));
        gad_tensor *bt = gad_transpose(hrnd(dt, (const int64_t[]){29, 50}, 2));
        mm_case(dt, at, bt, "transposed");
        gad_tensor *big = hrnd(dt, (const int64_t[]){37, 100}, 2);
        gad_tensor *sl = gad_slice(big, (const gad_range[]){{0, 37, 1}, {0, 100, 2}}, 2); /* [37, 50] */
        if (sl) mm_case(dt, sl, hrnd(dt, (const int64_t[]){50, 9}, 2), "sliced");
        mm_case(dt, hrnd(dt, (const int64_t[]){4, 30, 50}, 3), bt, "batch x shared");
        /* K = 0: zeros of the half dtype */
        gad_tensor *z = gad_matmul(hrnd(dt, (const int64_t[]){3, 0}, 2),
                                   hrnd(dt, (const int64_t[]){0, 4}, 2));
        CHECK(z && gad_dtype(z) == (gad_dtype_t)dt && gad_numel(z) == 12);
        if (z) {
            float *v = readf(z);
            for (int i = 0; i < 12; i++) CHECK(v[i] == 0.0f);
            free(v);
        }
        gad_scope_end();
    }
    /* mixed dtypes stay a dtype error */
    gad_scope_begin();
    gad_tensor *x = hrnd(GAD_BF16, (const int64_t[]){2, 3}, 2);
    gad_tensor *w = hrnd(GAD_F16, (const int64_t[]){3, 2}, 2);
    CHECK(gad_matmul(x, w) == NULL && gad_last_error()->kind == GAD_ERR_DTYPE);
    gad_clear_error();
    CHECK(gad_matmul(x, gad_cast(w, GAD_F32)) == NULL &&
          gad_last_error()->kind == GAD_ERR_DTYPE);
    gad_clear_error();
    gad_scope_end();
}

/* gad_linear on half x and w is the half matmul (with a bias, where half
 * additions exist in this build). */
TEST(linear_half) {
    for (int dt = GAD_F16; dt <= GAD_BF16; dt++) {
        gad_scope_begin();
        gad_tensor *x = hrnd(dt, (const int64_t[]){3, 5, 40}, 3);
        gad_tensor *w = hrnd(dt, (const int64_t[]){40, 24}, 2);
        gad_tensor *y = gad_linear(x, w, NULL), *ref = gad_matmul(x, w);
        CHECK(y && ref && gad_dtype(y) == (gad_dtype_t)dt && gad_numel(y) == 360);
        if (y && ref) {
            float *a = readf(y), *b = readf(ref);
            CHECK(memcmp(a, b, 360 * sizeof(float)) == 0);
            free(a);
            free(b);
        }
        gad_tensor *yb = gad_linear(x, w, hrnd(dt, (const int64_t[]){24}, 1));
        if (!yb) {
            printf("  linear with a %s bias skipped: %s\n", gad_dtype_name(dt),
                   gad_last_error()->text);
            gad_clear_error();
        } else {
            CHECK(gad_dtype(yb) == (gad_dtype_t)dt);
        }
        gad_scope_end();
    }
}

/* The products the matmul VJP makes (dA = G B^T and dB = A^T G, as
 * transposed views, and the stacked x @ W form) in half against the f32
 * ones; then, where half tensors can be on the tape, gad_grad itself (the
 * half VJP is the f32 VJP within the bound). */
TEST(matmul_half_vjp_products) {
    for (int dt = GAD_F16; dt <= GAD_BF16; dt++) {
        gad_scope_begin();
        gad_tensor *A = hrnd(dt, (const int64_t[]){33, 70}, 2);
        gad_tensor *B = hrnd(dt, (const int64_t[]){70, 45}, 2);
        gad_tensor *G = hrnd(dt, (const int64_t[]){33, 45}, 2);
        mm_case(dt, G, gad_transpose(B), "dA = G B^T");
        mm_case(dt, gad_transpose(A), G, "dB = A^T G");
        gad_tensor *X = hrnd(dt, (const int64_t[]){4, 9, 70}, 3);
        gad_tensor *G3 = hrnd(dt, (const int64_t[]){4, 9, 45}, 3);
        mm_case(dt, gad_transpose(gad_reshape(X, (const int64_t[]){36, 70}, 2)),
                gad_reshape(G3, (const int64_t[]){36, 45}, 2), "dW stacked");

        gad_tensor *Al = gad_requires_grad(gad_detach(A));
        if (!Al) {
            gad_clear_error();
            printf("  gad_grad on %s skipped: half tensors cannot be on the tape in this build\n",
                   gad_dtype_name(dt));
            gad_scope_end();
            continue;
        }
        gad_tensor *Bl = gad_requires_grad(gad_detach(B));
        gad_tensor *y = gad_matmul(Al, Bl), *g[2] = {NULL, NULL};
        CHECK(y && gad_grad_ex(y, G, (gad_tensor *const[]){Al, Bl}, 2, g, 0) == GAD_OK);
        if (g[0] && g[1]) {
            CHECK(gad_dtype(g[0]) == (gad_dtype_t)dt && gad_dtype(g[1]) == (gad_dtype_t)dt);
            gad_tensor *G32 = gad_cast(G, GAD_F32), *A32 = gad_cast(A, GAD_F32),
                       *B32 = gad_cast(B, GAD_F32);
            check_close_half(dt, g[0], gad_matmul(G32, gad_transpose(B32)),
                             gad_matmul(gad_abs(G32), gad_transpose(gad_abs(B32))), 45,
                             "grad A");
            check_close_half(dt, g[1], gad_matmul(gad_transpose(A32), G32),
                             gad_matmul(gad_transpose(gad_abs(A32)), gad_abs(G32)), 33,
                             "grad B");
        }
        gad_scope_end();
    }
}

/* ---------------------------------------------------- GAD_MATMUL_MEDIUM */

/* One f32 product through gad__sgemm under the given precision: op(A) M x
 * K, op(B) K x N, padded leading dimensions, C (ldc = N + 1) starting as c0. */
static float *sgemm_with(gad_matmul_precision prec, int ta, int tb, int64_t M, int64_t N,
                         int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                         int64_t ldb, float beta, const float *c0) {
    int64_t ldc = N + 1;
    float *C = malloc((size_t)(M * ldc) * sizeof *C);
    memcpy(C, c0, (size_t)(M * ldc) * sizeof *C);
    gad_matmul_precision old = gad_set_matmul_precision(prec);
    CHECK(gad__sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == 0);
    gad_set_matmul_precision(old);
    return C;
}

/* f32 products under GAD_MATMUL_MEDIUM, on every bf16 path this CPU has:
 * where bf16 products are native (gad_matmul_medium_native), the result is
 * that of the operands rounded to bf16 (RNE) with the exact products summed
 * in f32: within (K + 1) u S of the f64 product of the rounded operands,
 * for alpha and beta too, differing from f32's, and the same bits for 1 and
 * 2 threads; elsewhere (the f32 path) MEDIUM is HIGHEST, bit for bit. The
 * setting itself: default HIGHEST, values out of range ignored. */
TEST(matmul_precision_medium) {
    CHECK(gad_matmul_precision_get() == GAD_MATMUL_HIGHEST);
    CHECK(gad_set_matmul_precision((gad_matmul_precision)7) == GAD_MATMUL_HIGHEST);
    CHECK(gad_matmul_precision_get() == GAD_MATMUL_HIGHEST);
    CHECK(gad_set_matmul_precision(GAD_MATMUL_HIGH) == GAD_MATMUL_HIGHEST);
    CHECK(gad_set_matmul_precision(GAD_MATMUL_HIGHEST) == GAD_MATMUL_HIGH);
    static const int64_t mshapes[][3] = {{37, 45, 70}, {130, 70, 300}, {5, 3, 1}, {4, 6, 0}};
    static const float ab[][2] = {{1, 0}, {2, 0.5f}};
    const int nth = gad_num_threads();
    for (int path = 1; path <= 3; path++) {
        if (gad__hgemm_test_path(path) != 0) continue;
        int native = gad_matmul_medium_native();
        CHECK(native == (path != 1));
        int differed = 0;
        for (int sh = 0; sh < 4; sh++)
            for (int t = 0; t < 4; t++)
                for (int v = 0; v < 2; v++) {
                    int ta = t & 1, tb = t >> 1;
                    int64_t M = mshapes[sh][0], N = mshapes[sh][1], K = mshapes[sh][2];
                    int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 1;
                    size_t na = (size_t)((ta ? K : M) * lda), nb = (size_t)((tb ? N : K) * ldb);
                    float *A = malloc(na * 4), *B = malloc(nb * 4);
                    float *c0 = malloc((size_t)(M * ldc) * 4);
                    for (size_t i = 0; i < na; i++) A[i] = rndf();
                    for (size_t i = 0; i < nb; i++) B[i] = rndf();
                    for (int64_t i = 0; i < M * ldc; i++) c0[i] = rndf();
                    float al = ab[v][0], be = ab[v][1];
                    gad_set_num_threads(1);
                    float *cm = sgemm_with(GAD_MATMUL_MEDIUM, ta, tb, M, N, K, al, A, lda, B,
                                           ldb, be, c0);
                    gad_set_num_threads(2);
                    float *cm2 = sgemm_with(GAD_MATMUL_MEDIUM, ta, tb, M, N, K, al, A, lda, B,
                                            ldb, be, c0);
                    float *ch = sgemm_with(GAD_MATMUL_HIGHEST, ta, tb, M, N, K, al, A, lda, B,
                                           ldb, be, c0);
                    gad_set_num_threads(nth);
                    double worst = 0;
                    for (int64_t i = 0; i < M; i++)
                        for (int64_t j = 0; j < N; j++) {
                            float m = cm[i * ldc + j], h = ch[i * ldc + j];
                            CHECK(memcmp(&m, &cm2[i * ldc + j], 4) == 0);
                            if (!native) {
                                CHECK(memcmp(&m, &h, 4) == 0);
                                continue;
                            }
                            double ref = 0, S = 0;
                            for (int64_t k = 0; k < K; k++) {
                                float a = ta ? A[k * lda + i] : A[i * lda + k];
                                float b = tb ? B[j * ldb + k] : B[k * ldb + j];
                                double p = (double)gad__bf16_to_f32(gad__f32_to_bf16(a)) *
                                           (double)gad__bf16_to_f32(gad__f32_to_bf16(b));
                                ref += p;
                                S += fabs(p);
                            }
                            double c = c0[i * ldc + j];
                            ref = al * ref + be * c;
                            double bound = (double)(K + 1) * 0x1p-24 * S * al +
                                           4 * 0x1p-24 * (fabs(ref) + fabs(be * c));
                            double e = fabs((double)m - ref);
                            if (e / (bound + 1e-300) > worst) worst = e / (bound + 1e-300);
                            differed |= m != h;
                        }
                    CHECK_MSG(worst <= 1, "path %d %lldx%lldx%lld ta %d tb %d alpha %g: %g of "
                              "the bound", path, (long long)M, (long long)N, (long long)K, ta,
                              tb, al, worst);
                    free(A);
                    free(B);
                    free(c0);
                    free(cm);
                    free(cm2);
                    free(ch);
                }
        CHECK(!native || differed);
    }
    CHECK(gad__hgemm_test_path(0) == 0);
    /* gad_matmul on f32 tensors takes the same product */
    gad_scope_begin();
    gad_rng *r = gad_rng_new(5);
    gad_tensor *a = gad_rng_normal_tensor(r, (int64_t[]){33, 50}, 2, GAD_F32, 0, 1);
    gad_tensor *b = gad_rng_normal_tensor(r, (int64_t[]){50, 20}, 2, GAD_F32, 0, 1);
    gad_rng_free(r);
    gad_set_matmul_precision(GAD_MATMUL_MEDIUM);
    gad_tensor *y = gad_contiguous(gad_matmul(a, b));
    float *direct = calloc(33 * 21, 4);
    CHECK(gad__sgemm(0, 0, 33, 20, 50, 1, gad_data(a), 50, gad_data(b), 20, 0, direct, 21) == 0);
    gad_set_matmul_precision(GAD_MATMUL_HIGHEST);
    const float *yv = gad_data(y);
    for (int i = 0; i < 33; i++) CHECK(memcmp(yv + i * 20, direct + i * 21, 20 * 4) == 0);
    free(direct);
    gad_scope_end();
}

int main(void) {
    RUN(hgemm_degenerate);
    RUN(hgemm_every_path);
    RUN(hgemm_nan_inf);
    RUN(hgemm_subnormals);
    RUN(hgemm_threads_bit_identical);
    RUN(matmul_precision_medium);
    g_rng = gad_rng_new(29);
    RUN(matmul_half);
    RUN(matmul_half_vjp_products);
    RUN(linear_half);
    gad_rng_free(g_rng);
    return test_summary();
}
