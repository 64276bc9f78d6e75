/* gemm_int.h: what the files of the CPU GEMM share (see gemm.c for the
 * algorithm and the map of the files): which kernel sets this compiler can
 * build, the micro-kernel types and their contract, the descriptor of a
 * kernel set (its tile and blocking), the micro-kernels each ISA file defines
 * (gemm_avx512.c, gemm_avx2.c, gemm_generic.c), and the few functions and
 * flags of gemm.c that the BLAS policy (gemm_blas.c) reads. */
#ifndef GAD_GEMM_INT_H
#define GAD_GEMM_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* GAD_GEMM_PLAIN forces the plain C kernels (to test them with gcc/clang). */
#if (defined(__GNUC__) || defined(__clang__)) && !defined(GAD_GEMM_PLAIN)
#define GEMM_GNU 1
#if defined(__x86_64__) || defined(__i386__)
#define GEMM_X86 1
#include <immintrin.h>
#endif
#endif

/* ======================================================================== */
/* Micro-kernels                                                             */
/* ======================================================================== */
/* A micro-kernel computes acc = sum_k a[k*MR + i] * b[k*NR + j] over kc steps
 * (a: a packed MR x kc micro-panel, b: a packed kc x NR one), then updates
 * the MR x NR tile at c (row stride ldc):
 *   c = alpha*acc             when beta == 0 (c is not read)
 *   c = alpha*acc + beta*c    otherwise: two products and a sum, which
 *                             the build's -ffp-contract=fast lets the
 *                             compiler fuse into one FMA in the vector
 *                             kernels, so that with beta != 0 a full tile
 *                             and an edge tile (gemm_driver_tmpl.h) may
 *                             round differently; which tiles are edge
 *                             tiles depends on the shape only, not on the
 *                             thread count
 * b is aligned to 64 bytes (the packed B block and NR*kc*size are). */

typedef void (*gemm_skern)(int64_t kc, const float *a, const float *b,
                           float *c, int64_t ldc, float alpha, float beta);
typedef void (*gemm_dkern)(int64_t kc, const double *a, const double *b,
                           double *c, int64_t ldc, double alpha, double beta);

/* Small-problem kernels (AVX-512 only, see gemm_avx512.c): a tile of m rows
 * and NR = 2 vectors of columns read straight from the operands, with
 * op(A)(i, k) = a[i*rsa + k*csa] and op(B)(k, j) = b[k*rsb + j]; m0 and m1
 * mask the columns of the two vectors. Same update rule as above. */
typedef void (*gemm_ssup)(int64_t K, const float *a, int64_t rsa, int64_t csa,
                          const float *b, int64_t rsb, float *c, int64_t ldc,
                          float alpha, float beta, unsigned m0, unsigned m1);
typedef void (*gemm_dsup)(int64_t K, const double *a, int64_t rsa,
                          int64_t csa, const double *b, int64_t rsb, double *c,
                          int64_t ldc, double alpha, double beta, unsigned m0,
                          unsigned m1);

/* Dot kernels (AVX-512 only): out[q] = sum over k < K of x[q][k] * y[q][k],
 * q = 0..3. */
typedef void (*gemm_sdot)(int64_t K, const float *const *x,
                          const float *const *y, float *out);
typedef void (*gemm_ddot)(int64_t K, const double *const *x,
                          const double *const *y, double *out);

/* Transposing pack (AVX-512 f32 only): dst[k*ds + i] = src[i*ld + k] for
 * i < rows, k < kc, and zeros in lanes [rows, lanes); lanes is the panel's
 * width, MR or NR (at most 32). */
typedef void (*gemm_stpack)(int64_t kc, const float *src, int64_t ld, int rows, int lanes,
                            float *dst, int64_t ds);
typedef void (*gemm_dtpack)(int64_t kc, const double *src, int64_t ld, int rows, int lanes,
                            double *dst, int64_t ds);

/* Blocking of one kernel: micro-tile MR x NR, KC (depth of a block), MCB
 * (rows of the packed A panel), NCB (columns of the packed B block). MCB is a
 * multiple of MR and NCB of NR. sup: the small-problem kernels indexed by
 * [variant][rows - 1] (NULL when the ISA has none; variants: one masked
 * vector, two masked vectors, two full vectors); their tile is MR x NR too,
 * NR being two vectors of NR/2 lanes. dot: the dot kernel (NULL
 * when none). tpack: the transposing pack (NULL when none). */
typedef struct gemm_sdesc {
    int mr, nr;
    int64_t kc, mcb, ncb;
    gemm_skern kern;
    const gemm_ssup (*sup)[12];
    gemm_sdot dot;
    const char *name;
    gemm_stpack tpack; /* NULL: the packing loops of gemm_driver_tmpl.h */
} gemm_sdesc;

typedef struct gemm_ddesc {
    int mr, nr;
    int64_t kc, mcb, ncb;
    gemm_dkern kern;
    const gemm_dsup (*sup)[12];
    gemm_ddot dot;
    const char *name;
    gemm_dtpack tpack;
} gemm_ddesc;

/* Upper bounds over all kernels (edge-tile buffers). */
#define GEMM_MAX_MR 16
#define GEMM_MAX_NR 32

/* Rows of a micro-tile, unrolled by the preprocessor. */
#define GEMM_ROWS1(X) X(0)
#define GEMM_ROWS2(X) GEMM_ROWS1(X) X(1)
#define GEMM_ROWS3(X) GEMM_ROWS2(X) X(2)
#define GEMM_ROWS4(X) GEMM_ROWS3(X) X(3)
#define GEMM_ROWS5(X) GEMM_ROWS4(X) X(4)
#define GEMM_ROWS6(X) GEMM_ROWS5(X) X(5)
#define GEMM_ROWS7(X) GEMM_ROWS6(X) X(6)
#define GEMM_ROWS8(X) GEMM_ROWS7(X) X(7)
#define GEMM_ROWS9(X) GEMM_ROWS8(X) X(8)
#define GEMM_ROWS10(X) GEMM_ROWS9(X) X(9)
#define GEMM_ROWS11(X) GEMM_ROWS10(X) X(10)
#define GEMM_ROWS12(X) GEMM_ROWS11(X) X(11)

/* The micro-kernels of each ISA file, which gemm.c's descriptors point at.
 * The x86 ones are compiled with target attributes and may only be called
 * once gemm.c has checked the CPU (gad__gemm_isa). */
#ifdef GEMM_X86
/* gemm_avx512.c: the packed kernels, the small-problem kernels by
 * [variant][rows - 1], and the dot kernels. */
void gad__gemm_skern_avx512(int64_t kc, const float *a, const float *b,
                            float *c, int64_t ldc, float alpha, float beta);
void gad__gemm_dkern_avx512(int64_t kc, const double *a, const double *b,
                            double *c, int64_t ldc, double alpha, double beta);
extern const gemm_ssup gad__gemm_ssup_avx512[3][12];
extern const gemm_dsup gad__gemm_dsup_avx512[3][12];
/* The transposing pack (see gemm_avx512.c). */
void gad__gemm_stpack_avx512(int64_t kc, const float *src, int64_t ld, int rows, int lanes,
                             float *dst, int64_t ds);
void gad__gemm_sdot_avx512(int64_t K, const float *const *x,
                           const float *const *y, float *out);
void gad__gemm_ddot_avx512(int64_t K, const double *const *x,
                           const double *const *y, double *out);
/* gemm_avx2.c */
void gad__gemm_skern_avx2(int64_t kc, const float *a, const float *b,
                          float *c, int64_t ldc, float alpha, float beta);
void gad__gemm_dkern_avx2(int64_t kc, const double *a, const double *b,
                          double *c, int64_t ldc, double alpha, double beta);
#endif
/* gemm_generic.c: vector extensions (GCC/clang), else plain C. */
#ifdef GEMM_GNU
void gad__gemm_skern_vec(int64_t kc, const float *a, const float *b, float *c,
                         int64_t ldc, float alpha, float beta);
void gad__gemm_dkern_vec(int64_t kc, const double *a, const double *b,
                         double *c, int64_t ldc, double alpha, double beta);
#else
void gad__gemm_skern_plain(int64_t kc, const float *a, const float *b,
                           float *c, int64_t ldc, float alpha, float beta);
void gad__gemm_dkern_plain(int64_t kc, const double *a, const double *b,
                           double *c, int64_t ldc, double alpha, double beta);
#endif

/* ======================================================================== */
/* Shared with the BLAS policy                                               */
/* ======================================================================== */

/* gemm.c: the kernel set in use, chosen once with __builtin_cpu_supports or
 * forced by gad__gemm_test_isa: 1 portable, 2 AVX2+FMA, 3 AVX-512F. */
int gad__gemm_isa(void);

/* gemm.c: set by the test hook gad__gemm_test_blas_always (see there). */
extern atomic_int gad__gemm_blas_always;

/* gemm.c, for the half-precision GEMM (gemm_half.c): the f32 kernel set in
 * use (its micro-kernel runs the converted panels), this thread's scratch
 * block (as the f32 kernels take theirs: lent or cached), how many threads a
 * product is worth, the tm x tn split of C, and the block depth for K. */
const gemm_sdesc *gad__gemm_sdesc(void);
void *gad__gemm_scratch(size_t n);
int gad__gemm_threads(int64_t M, int64_t N, int64_t K);
void gad__gemm_plan(int nt, int64_t M, int64_t N, int64_t K, int mr, int nr, int *tm,
                    int *tn);
int64_t gad__gemm_kc(int64_t K, int64_t kcmax);
/* This core's L2 in bytes (2 MiB where the C library does not say). */
int64_t gad__gemm_l2_bytes(void);
/* The largest gad__gemm_kc(K', kcmax) of any K' <= K (for sizing scratch). */
int64_t gad__gemm_kc_bound(int64_t K, int64_t kcmax);
/* 1 when gemm.c would send an f32 product of this shape to its small-problem
 * kernels (and they are not switched off by gad__gemm_test_isa). */
int gad__gemm_use_sup(int ta, int64_t M, int64_t N, int64_t K, int64_t ldb, int tb);
/* 1 when gemm.c's small-problem path packs an f32 op(B) of this shape into
 * NR-column panels (always when transposed; see gemm.c). */
int gad__gemm_sup_panels(int tb, int64_t M, int64_t N, int64_t K);
/* 1 on an AMD CPU (read once): where a measured choice of path differs
 * between AMD's cores and Intel's (gemm.c's small problems, gemm_half.c's
 * bf16 kernel), by vendor rather than timed, so that every process on a
 * machine computes the same bits. */
int gad__gemm_cpu_amd(void);
/* The small-problem paths' split of C between parts (gemm_driver_tmpl.h,
 * gemm_half.c): columns [*j0, *j1) of N, whole tiles of nr, for part t of
 * nt; what a part packs of op(B)'s panels is what it then reads. */
static inline void gad__gemm_part_cols(int64_t N, int nr, int64_t t, int64_t nt, int64_t *j0,
                                       int64_t *j1) {
    int64_t ntl = (N + nr - 1) / nr, a = ntl * t / nt * nr, b = ntl * (t + 1) / nt * nr;
    *j0 = a < N ? a : N;
    *j1 = b < N ? b : N;
}

#ifdef GAD_HAVE_CBLAS
/* gemm_blas.c: true when CBLAS should take an M x N x K product of elements
 * of esize bytes (see there for the measurements behind it). */
int gad__gemm_use_blas(int64_t M, int64_t N, int64_t K, int64_t lda,
                       int64_t ldb, int64_t ldc, size_t esize);
#endif

#endif
