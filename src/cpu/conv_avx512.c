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

/* The weight gradient's 64 x kb tiles, kb = 1..6 columns (k), 4 vectors of
 * rows (m) each: per position 4 loads of g and kb broadcasts of x. */
#define WK_DECL(j)                                                             \
    __m512 a##j##_0 = _mm512_setzero_ps(), a##j##_1 = a##j##_0, a##j##_2 = a##j##_0, \
           a##j##_3 = a##j##_0;
#define WK_STEP(j)                                                             \
    {                                                                          \
        __m512 xv_ = _mm512_set1_ps(x[j]);                                     \
        a##j##_0 = _mm512_fmadd_ps(g0, xv_, a##j##_0);                         \
        a##j##_1 = _mm512_fmadd_ps(g1, xv_, a##j##_1);                         \
        a##j##_2 = _mm512_fmadd_ps(g2, xv_, a##j##_2);                         \
        a##j##_3 = _mm512_fmadd_ps(g3, xv_, a##j##_3);                         \
    }
#define WK_ADD1(j, v, off)                                                     \
    _mm512_storeu_ps(acc + (j)*lda + (off),                                    \
                     _mm512_add_ps(_mm512_loadu_ps(acc + (j)*lda + (off)), a##j##_##v));
#define WK_STORE(j) WK_ADD1(j, 0, 0) WK_ADD1(j, 1, 16) WK_ADD1(j, 2, 32) WK_ADD1(j, 3, 48)
#define WK_FN(kb)                                                              \
    __attribute__((target("avx512f"))) static void wk_##kb(                   \
        int64_t np, const float *g, int64_t ldg, const float *x, int64_t ldx,  \
        float *acc, int64_t lda) {                                             \
        GEMM_ROWS##kb(WK_DECL)                                                 \
        for (int64_t p = 0; p < np; p++) {                                     \
            __m512 g0 = _mm512_loadu_ps(g), g1 = _mm512_loadu_ps(g + 16);      \
            __m512 g2 = _mm512_loadu_ps(g + 32), g3 = _mm512_loadu_ps(g + 48); \
            GEMM_ROWS##kb(WK_STEP)                                             \
            g += ldg;                                                          \
            x += ldx;                                                          \
        }                                                                      \
        GEMM_ROWS##kb(WK_STORE)                                                \
    }
WK_FN(1)
WK_FN(2)
WK_FN(3)
WK_FN(4)
WK_FN(5)
WK_FN(6)

__attribute__((target("avx512f"))) void
gad__conv_swgrad64_avx512(int64_t np, int64_t K, const float *g, int64_t ldg,
                          const float *x, int64_t ldx, float *acc, int64_t lda) {
    static void (*const wk[6])(int64_t, const float *, int64_t, const float *, int64_t,
                               float *, int64_t) = {wk_1, wk_2, wk_3, wk_4, wk_5, wk_6};
    for (int64_t k0 = 0; k0 < K; k0 += 6) {
        int64_t kb = K - k0 < 6 ? K - k0 : 6;
        wk[kb - 1](np, g, ldg, x + k0, ldx, acc + k0 * lda, lda);
    }
}
#endif
