/* gemm_int.h: what the files of the CPU GEMM share (see gemm.c): the few
 * functions and flags of gemm.c that the BLAS policy (gemm_blas.c) reads,
 * and the policy's answer. */
#ifndef GAD_GEMM_INT_H
#define GAD_GEMM_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ======================================================================== */
/* Shared with the BLAS policy                                               */
/* ======================================================================== */

/* gemm.c: the kernel set in use, chosen once with __builtin_cpu_supports or
 * forced by gad__gemm_test_isa: 1 portable, 2 AVX2+FMA, 3 AVX-512F. */
int gad__gemm_isa(void);

/* gemm.c: set by the test hook gad__gemm_test_blas_always (see there). */
extern atomic_int gad__gemm_blas_always;

#ifdef GAD_HAVE_CBLAS
/* gemm_blas.c: true when CBLAS should take an M x N x K product of elements
 * of esize bytes (see there for the measurements behind it). */
int gad__gemm_use_blas(int64_t M, int64_t N, int64_t K, int64_t lda,
                       int64_t ldb, int64_t ldc, size_t esize);
#endif

#endif
