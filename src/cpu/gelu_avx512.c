/* gelu_avx512.c: f32 gelu for CPUs with AVX-512, written with intrinsics.
 *
 * The portable kernel (elementwise.c) computes x / (1 + e^-2u) in plain C,
 * which the compiler vectorizes; two things it cannot do bound it at about
 * 2 G elements/s per core, below what memory delivers: the division (the
 * divider takes as long as the whole exp) and streaming stores (stream.c).
 * Here 1 / d is the 14-bit hardware estimate refined by one Newton step,
 * r' = r (2 - d r), which doubles the correct bits (relative error about
 * 2^-23 after the step); exp is vmath.h's, lane for lane. */
#include "cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define TGT __attribute__((target("avx512f")))

/* e^x as gad__expf in vmath.h: the same clamps, reduction and polynomial;
 * n = round(x log2 e) by vroundscaleps and the result scaled by 2^n in one
 * vscalefps, exact as vmath.h's two halves. */
TGT static inline __m512 exp16(__m512 x) {
    /* max(c, x) and min(c, x) return x when x is NaN */
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);
    x = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
    __m512 nf = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(nf, _mm512_set1_ps(1.428606765330187045e-06f), r);
    __m512 p = _mm512_set1_ps(0.001381461275741458f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.008368710055947304f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.04166838899254799f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.1666652113199234f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.4999999403953552f));
    __m512 e = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_mul_ps(r, r), p, r));
    return _mm512_scalef_ps(e, nf);
}

/* x / (1 + e^-2u), u = sqrt(2/pi) (x + 0.044715 x^3), as
 * -2u = x (-2 sqrt(2/pi) - 2 sqrt(2/pi) 0.044715 x^2) */
TGT static inline __m512 gelu16(__m512 x) {
    __m512 x2 = _mm512_mul_ps(x, x);
    __m512 m2u = _mm512_mul_ps(x, _mm512_fmadd_ps(x2, _mm512_set1_ps(-0.0713548162726f),
                                                  _mm512_set1_ps(-1.5957691216057308f)));
    __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(m2u));
    __m512 r = _mm512_rcp14_ps(d);
    r = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
    /* Where e^-2u overflows, d is inf, 1 / d is 0 and the Newton step
     * would make it inf * 0 = NaN: there 1 / d is set to 0, as the
     * portable kernel computes it (NaN lanes, greater than nothing, keep
     * theirs). */
    __mmask16 fin = _mm512_cmp_ps_mask(m2u, _mm512_set1_ps(88.7f), _CMP_NGT_UQ);
    return _mm512_mul_ps(x, _mm512_maskz_mov_ps(fin, r));
}

TGT static void gelu_avx512(int64_t n, const float *x, float *y, bool stream) {
    int64_t i = 0;
    if (stream) {
        /* ordinary stores up to the first cache line of y, then whole
         * lines that bypass the cache */
        int64_t head = (int64_t)((-(uintptr_t)y & 63) / sizeof(float));
        if (head > n) head = n;
        if (head) {
            __mmask16 m = (__mmask16)((1u << head) - 1);
            _mm512_mask_storeu_ps(y, m, gelu16(_mm512_maskz_loadu_ps(m, x)));
        }
        for (i = head; i + 16 <= n; i += 16)
            _mm512_stream_ps(y + i, gelu16(_mm512_loadu_ps(x + i)));
    } else {
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, gelu16(_mm512_loadu_ps(x + i)));
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, gelu16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

gad_vkernel gad__vk_gelu_f32(void) {
    return __builtin_cpu_supports("avx512f") ? gelu_avx512 : NULL;
}

#else

gad_vkernel gad__vk_gelu_f32(void) { return NULL; }

#endif
