/* blas.cu: row-major GEMM through cuBLAS, a column-major library, by the
 * transpose identity: C = op(A) op(B) row-major is C^T = op(B)^T op(A)^T,
 * and a row-major matrix read as column-major is its transpose; so the
 * call passes B before A and swaps M and N, and no operand is copied
 * (transposed views are read through the op flags). cuBLAS documentation,
 * "cublas<t>gemmStridedBatched"; the 64-bit-integer API (the _64 calls)
 * takes any size. Strict f32 unless TF32 is asked for (runtime.cu). */
#include "cuda/cuda_int.cuh"

#include "gad.h"

extern "C" int gcu_gemm(int ord, int dtype, int ta, int tb, int64_t M, int64_t N, int64_t K,
                        double alpha, const void *A, int64_t lda, int64_t sa, const void *B,
                        int64_t ldb, int64_t sb, double beta, void *C, int64_t ldc, int64_t sc,
                        int64_t batch) {
    if (M == 0 || N == 0 || batch == 0) return 0;
    cublasHandle_t h = gcu_blas(ord);
    if (!h) return -1;
    /* B^T (N x K col-major, ld ldb) is row-major B read as is: op N when b
     * is not transposed */
    cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    /* leading dimensions of 1-row or 1-column operands only need to be
     * at least the rows of the column-major view */
    int64_t ldb_ = ldb < (tb ? K : N) ? (tb ? K : N) : ldb;
    int64_t lda_ = lda < (ta ? M : K) ? (ta ? M : K) : lda;
    if (ldb_ < 1) ldb_ = 1;
    if (lda_ < 1) lda_ = 1;
    cublasStatus_t st;
    if (dtype == GAD_F32) {
        float al = (float)alpha, be = (float)beta;
        if (batch == 1)
            st = gcu_cb.cublasSgemm_v2_64(h, opb, opa, N, M, K, &al, (const float *)B, ldb_,
                                (const float *)A, lda_, &be, (float *)C, ldc);
        else
            st = gcu_cb.cublasSgemmStridedBatched_64(h, opb, opa, N, M, K, &al, (const float *)B, ldb_, sb,
                                              (const float *)A, lda_, sa, &be, (float *)C, ldc, sc,
                                              batch);
    } else {
        if (batch == 1)
            st = gcu_cb.cublasDgemm_v2_64(h, opb, opa, N, M, K, &alpha, (const double *)B, ldb_,
                                (const double *)A, lda_, &beta, (double *)C, ldc);
        else
            st = gcu_cb.cublasDgemmStridedBatched_64(h, opb, opa, N, M, K, &alpha, (const double *)B, ldb_,
                                              sb, (const double *)A, lda_, sa, &beta, (double *)C,
                                              ldc, sc, batch);
    }
    return gcu_check_blas(ord, st, dtype == GAD_F32 ? "cublasSgemm" : "cublasDgemm") ? -1 : 0;
}
