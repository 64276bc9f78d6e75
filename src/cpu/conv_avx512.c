/* conv_avx512.c: the AVX-512F micro-kernel of the f32 stride-1 convolution
 * (conv_kern.h, used by conv_tmpl.h's shifted path). Compiled with a target
 * attribute, like gemm_avx512.c, and called only after the CPU check. */
#include "cpu/conv_kern.h"
#include "cpu/gemm_int.h"

#ifdef GEMM_X86
/* 8 rows x 3 vectors: 24 accumulators; per step 3 loads of b and 8
 * broadcasts of a for 24 FMAs. Unlike a GEMM over one tap at a time, the
 * tile stays in registers over every tap and channel, so that C is
 * written once and B, read in place at each tap's shift, is never packed. */
#define CK_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define CK_DECL(i) __m512 c##i##_0 = _mm512_setzero_ps(), c##i##_1 = c##i##_0, c##i##_2 = c##i##_0;
#define CK_STEP(i)                                                             \
    {                                                                          \
        __m512 av_ = _mm512_set1_ps(a[i]);                                     \
        c##i##_0 = _mm512_fmadd_ps(av_, b0, c##i##_0);                         \
        c##i##_1 = _mm512_fmadd_ps(av_, b1, c##i##_1);                         \
        c##i##_2 = _mm512_fmadd_ps(av_, b2, c##i##_2);                         \
    }
#define CK_STORE(i)                                                            \
    _mm512_storeu_ps(c + (i)*ldc, c##i##_0);                                   \
    _mm512_storeu_ps(c + (i)*ldc + 16, c##i##_1);                              \
    _mm512_storeu_ps(c + (i)*ldc + 32, c##i##_2);

__attribute__((target("avx512f"))) void
gad__conv_s8x48_avx512(int64_t taps, const int64_t *shift, int64_t K, const float *a,
                       const float *b, int64_t ldb, float *c, int64_t ldc) {
    CK_ROWS(CK_DECL)
    for (int64_t t = 0; t < taps; t++) {
        const float *bt = b + shift[t];
        for (int64_t k = 0; k < K; k++) {
            __m512 b0 = _mm512_loadu_ps(bt), b1 = _mm512_loadu_ps(bt + 16);
            __m512 b2 = _mm512_loadu_ps(bt + 32);
            CK_ROWS(CK_STEP)
            a += 8;
            bt += ldb;
        }
    }
    CK_ROWS(CK_STORE)
}
#endif
