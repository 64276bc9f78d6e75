/* gemm.h: general matrix multiply for the CPU (no gradients here).
 *
 * Row-major C = alpha * op(A) @ op(B) + beta * C, where
 *   op(A) is M x K: element (i, p) is A[i*lda + p], or A[p*lda + i] when ta;
 *   op(B) is K x N: element (p, j) is B[p*ldb + j], or B[j*ldb + p] when tb;
 *   C is M x N:     element (i, j) is C[i*ldc + j].
 * beta == 0 means C is only written (whatever C held, NaN included, is
 * ignored). M, N or K may be 0 (K = 0 gives C = beta * C). As in BLAS,
 * alpha == 0 gives C = beta * C without reading A or B.
 *
 * gad__sgemm/gad__dgemm send large problems to CBLAS when gad was built with
 * it and gad_set_blas has not turned it off, and everything else to the
 * built-in kernel. Both use up to gad__nthreads() threads, and one thread when
 * called from inside a parallel region of gad's pool (gad__pool_run).
 *
 * Return 0, or -1 when scratch memory could not be allocated (no error is
 * recorded; the caller reports it; C is then unspecified).
 *
 * The built-in kernels give the same bits for any thread count. gemm.c also
 * defines two hooks for tests, declared where used (tests/test_gemm.c):
 * gad__gemm_test_isa and gad__gemm_test_blas_always. */
#ifndef GAD_GEMM_H
#define GAD_GEMM_H

#include <stddef.h>
#include <stdint.h>

int gad__sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
               const float *A, int64_t lda, const float *B, int64_t ldb,
               float beta, float *C, int64_t ldc);
int gad__dgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, double alpha,
               const double *A, int64_t lda, const double *B, int64_t ldb,
               double beta, double *C, int64_t ldc);

/* The built-in kernels alone, whatever the BLAS setting (tests compare). */
int gad__sgemm_builtin(int ta, int tb, int64_t M, int64_t N, int64_t K,
                       float alpha, const float *A, int64_t lda, const float *B,
                       int64_t ldb, float beta, float *C, int64_t ldc);
int gad__dgemm_builtin(int ta, int tb, int64_t M, int64_t N, int64_t K,
                       double alpha, const double *A, int64_t lda,
                       const double *B, int64_t ldb, double beta, double *C,
                       int64_t ldc);

/* ---- half precision (gemm_half.c) ----
 * C = op(A) @ op(B) for A and B of dtype dt (GAD_BF16 or GAD_F16, given as
 * their bits), with the index rules above; the products are summed in f32
 * and C, of dtype cdt (dt or GAD_F32), is written, never read: each element
 * rounded once from its f32 sum for a half cdt (half.h's rounding and NaN
 * bits). K = 0 gives zeros. Subnormal bf16 inputs count as zero (the bf16
 * instructions and the f32 kernels' DAZ); f16 subnormals count in full.
 * Same threads, scratch and return value as gad__sgemm (never CBLAS); the
 * bits may differ between kernels (AMX, AVX-512 BF16, the f32 kernels on
 * converted panels) but not with the thread count. gemm_half.c also defines
 * the test hooks gad__hgemm_test_path and gad__hgemm_path. */
int gad__hgemm(int dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const uint16_t *A,
               int64_t lda, const uint16_t *B, int64_t ldb, int cdt, void *C, int64_t ldc);
/* GAD_MATMUL_MEDIUM (gad.h) in effect: set, and this CPU's bf16 products
 * faster than its f32 ones. gad__sgemm then calls gad__sgemm_bf16: its
 * arguments and result, with A and B rounded to bf16 (RNE) and the exact
 * products summed in f32 by gad__hgemm, for M, N, K > 0 and alpha != 0
 * (gad__sgemm sends the products of nothing to the f32 path); 0, or -1
 * when memory for the rounded copies could not be had. */
int gad__sgemm_medium(void);
int gad__sgemm_bf16(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                    const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                    float *C, int64_t ldc);
/* The bytes of scratch one call takes on one thread (gad__gemm_lend_scratch). */
size_t gad__hgemm_scratch_bytes(int dt, int cdt, int ta, int tb, int64_t M, int64_t N,
                                int64_t K);

/* Give this thread's packing buffers back to the allocator (called by
 * gad_cache_trim and at thread exit). */
void gad__gemm_release_scratch(void);

/* For products spread over gad's workers by a caller (src/cpu/matmul.c):
 * the bytes of packing buffer one call of the built-in kernel with these
 * arguments takes on one thread (0 for none), and a buffer the caller lends
 * to the calling thread's GEMMs until it lends NULL: they pack into it
 * instead of allocating (and fail, -1, if it is too small), so that every
 * allocation of a step is the caller's, made with its allocator. */
size_t gad__gemm_scratch_bytes(int f64, int ta, int tb, int64_t M, int64_t N, int64_t K,
                               int64_t lda, int64_t ldb);
void gad__gemm_lend_scratch(void *buf, size_t n);

/* Tell the BLAS library how many threads it may use (called when gad's thread
 * count changes, so that BLAS and gad's worker threads do not oversubscribe). */
void gad__gemm_set_blas_threads(int n);

#endif
