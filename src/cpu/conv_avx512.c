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

/* The weight gradient's tiles: mv vectors of rows (m; 1, 2 or 4) by kb
 * columns (k; up to 6 with 4 vectors, 12 with fewer), per position mv
 * loads of g and kb broadcasts of x. */
#define WK_Z _mm512_setzero_ps()
#define WK_DECL4(j) __m512 a##j##_0 = WK_Z, a##j##_1 = WK_Z, a##j##_2 = WK_Z, a##j##_3 = WK_Z;
#define WK_DECL2(j) __m512 a##j##_0 = WK_Z, a##j##_1 = WK_Z;
#define WK_DECL1(j) __m512 a##j##_0 = WK_Z;
#define WK_LOADG4                                                              \
    __m512 g0 = _mm512_loadu_ps(g), g1 = _mm512_loadu_ps(g + 16);              \
    __m512 g2 = _mm512_loadu_ps(g + 32), g3 = _mm512_loadu_ps(g + 48);
#define WK_LOADG2 __m512 g0 = _mm512_loadu_ps(g), g1 = _mm512_loadu_ps(g + 16);
#define WK_LOADG1 __m512 g0 = _mm512_loadu_ps(g);
#define WK_FMA(j, q) a##j##_##q = _mm512_fmadd_ps(g##q, xv_, a##j##_##q);
#define WK_STEP4(j)                                                            \
    {                                                                          \
        __m512 xv_ = _mm512_set1_ps(x[j]);                                     \
        WK_FMA(j, 0) WK_FMA(j, 1) WK_FMA(j, 2) WK_FMA(j, 3)                    \
    }
#define WK_STEP2(j)                                                            \
    {                                                                          \
        __m512 xv_ = _mm512_set1_ps(x[j]);                                     \
        WK_FMA(j, 0) WK_FMA(j, 1)                                              \
    }
#define WK_STEP1(j)                                                            \
    {                                                                          \
        __m512 xv_ = _mm512_set1_ps(x[j]);                                     \
        WK_FMA(j, 0)                                                           \
    }
#define WK_ADD1(j, v, off)                                                     \
    _mm512_storeu_ps(acc + (j)*lda + (off),                                    \
                     _mm512_add_ps(_mm512_loadu_ps(acc + (j)*lda + (off)), a##j##_##v));
#define WK_STORE4(j) WK_ADD1(j, 0, 0) WK_ADD1(j, 1, 16) WK_ADD1(j, 2, 32) WK_ADD1(j, 3, 48)
#define WK_STORE2(j) WK_ADD1(j, 0, 0) WK_ADD1(j, 1, 16)
#define WK_STORE1(j) WK_ADD1(j, 0, 0)
#define WK_FN(mv, kb)                                                          \
    __attribute__((target("avx512f"))) static void wk##mv##_##kb(             \
        int64_t np, const float *g, int64_t ldg, const float *x, int64_t ldx,  \
        float *acc, int64_t lda) {                                             \
        GEMM_ROWS##kb(WK_DECL##mv)                                             \
        for (int64_t p = 0; p < np; p++) {                                     \
            WK_LOADG##mv                                                       \
            GEMM_ROWS##kb(WK_STEP##mv)                                         \
            g += ldg;                                                          \
            x += ldx;                                                          \
        }                                                                      \
        GEMM_ROWS##kb(WK_STORE##mv)                                            \
    }
#define WK_FN6(mv) WK_FN(mv, 1) WK_FN(mv, 2) WK_FN(mv, 3) WK_FN(mv, 4) WK_FN(mv, 5) WK_FN(mv, 6)
#define WK_FN12(mv) WK_FN6(mv) WK_FN(mv, 7) WK_FN(mv, 8) WK_FN(mv, 9) WK_FN(mv, 10) \
    WK_FN(mv, 11) WK_FN(mv, 12)
WK_FN6(4)
WK_FN12(2)
WK_FN12(1)

typedef void (*wk_fn)(int64_t, const float *, int64_t, const float *, int64_t, float *,
                      int64_t);
#define WK_T6(mv) wk##mv##_1, wk##mv##_2, wk##mv##_3, wk##mv##_4, wk##mv##_5, wk##mv##_6
#define WK_T12(mv) WK_T6(mv), wk##mv##_7, wk##mv##_8, wk##mv##_9, wk##mv##_10, wk##mv##_11, \
    wk##mv##_12

__attribute__((target("avx512f"))) void
gad__conv_swgrad_avx512(int64_t np, int64_t M, int64_t K, const float *g, int64_t ldg,
                        const float *x, int64_t ldx, float *acc, int64_t lda) {
    static const wk_fn w4[6] = {WK_T6(4)}, w2[12] = {WK_T12(2)}, w1[12] = {WK_T12(1)};
    for (int64_t m0 = 0; m0 < M; ) {
        int64_t rest = M - m0, mv = rest >= 64 ? 4 : rest >= 32 ? 2 : 1;
        int64_t kbmax = mv == 4 ? 6 : 12;
        const wk_fn *w = mv == 4 ? w4 : mv == 2 ? w2 : w1;
        for (int64_t k0 = 0; k0 < K; k0 += kbmax) {
            int64_t kb = K - k0 < kbmax ? K - k0 : kbmax;
            w[kb - 1](np, g + m0, ldg, x + k0, ldx, acc + k0 * lda + m0, lda);
        }
        m0 += 16 * mv;
    }
}

/* One 16 x 16 block: rows interleaved in pairs, then fours (within each
 * 128-bit lane), then the lanes of fours and eights exchanged. */
__attribute__((target("avx512f"))) static void tr16(const float *src, int64_t ld, float *dst,
                                                    int64_t ldd) {
    __m512 r[16], t[16], u[16], v[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + i * ld);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    /* u[4q + j], lane L: column 4L + j of rows 4q .. 4q + 3 */
    for (int q = 0; q < 16; q += 4) {
        u[q] = _mm512_shuffle_ps(t[q], t[q + 2], 0x44);
        u[q + 1] = _mm512_shuffle_ps(t[q], t[q + 2], 0xEE);
        u[q + 2] = _mm512_shuffle_ps(t[q + 1], t[q + 3], 0x44);
        u[q + 3] = _mm512_shuffle_ps(t[q + 1], t[q + 3], 0xEE);
    }
    for (int j = 0; j < 4; j++) {
        v[j] = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88);
        v[4 + j] = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
        v[8 + j] = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
        v[12 + j] = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
    }
    for (int j = 0; j < 4; j++) {
        _mm512_storeu_ps(dst + j * ldd, _mm512_shuffle_f32x4(v[j], v[8 + j], 0x88));
        _mm512_storeu_ps(dst + (8 + j) * ldd, _mm512_shuffle_f32x4(v[j], v[8 + j], 0xDD));
        _mm512_storeu_ps(dst + (4 + j) * ldd, _mm512_shuffle_f32x4(v[4 + j], v[12 + j], 0x88));
        _mm512_storeu_ps(dst + (12 + j) * ldd,
                         _mm512_shuffle_f32x4(v[4 + j], v[12 + j], 0xDD));
    }
}

__attribute__((target("avx512f"))) void
gad__conv_transpose_avx512(const float *src, int64_t ch, int64_t n, int64_t ld, float *dst) {
    int64_t c1 = ch & ~(int64_t)15, p1 = n & ~(int64_t)15;
    for (int64_t c = 0; c < c1; c += 16) {
        for (int64_t p = 0; p < p1; p += 16) tr16(src + c * ld + p, ld, dst + p * ch + c, ch);
        for (int64_t p = p1; p < n; p++)
            for (int64_t cc = c; cc < c + 16; cc++) dst[p * ch + cc] = src[cc * ld + p];
    }
    for (int64_t cc = c1; cc < ch; cc++)
        for (int64_t p = 0; p < n; p++) dst[p * ch + cc] = src[cc * ld + p];
}
#endif
