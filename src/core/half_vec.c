/* half_vec.c: half.h's conversions over arrays (half_vec.h), dispatched
 * once at run time on what the CPU has:
 *   f32 -> f16:  AVX-512F vcvtps2ph (zmm), else F16C (ymm), imm = round to
 *                nearest even (its NaNs are half.h's: PyTorch's on x86)
 *   f16 -> f32:  vcvtph2ps (exact; a signalling NaN comes back quiet)
 *   f32 -> bf16: AVX-512 BF16 vcvtneps2bf16; it flushes subnormal inputs to
 *                zero and keeps NaN payloads, so those lanes (rare: a mask
 *                test per 16) are redone with the integer rounding
 *   bf16 -> f32: a 16-bit shift (AVX-512F, else AVX2)
 * and the AVX-512F integer path (the same arithmetic as half.h, 16 lanes)
 * where F16C/BF16 are missing or GAD_HALF_VEC_PORTABLE is forced. The
 * tails (fewer than 16 elements) take half.h's loop. Instruction
 * references: Intel SDM vol. 2 (VCVTPS2PH, VCVTPH2PS, VCVTNEPS2BF16). */
#include "half_vec.h"
#include "half.h"

#include <pthread.h>

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define HV_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

typedef void (*to_half_fn)(const float *, uint16_t *, int64_t);
typedef void (*from_half_fn)(const uint16_t *, float *, int64_t);

/* ------------------------------------------------------------- scalar */

static void f32_to_f16_scalar(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = gad__f32_to_f16(x[i]);
}
static void f16_to_f32_scalar(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = gad__f16_to_f32(x[i]);
}
static void f32_to_bf16_scalar(const float *x, uint16_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = gad__f32_to_bf16(x[i]);
}
static void bf16_to_f32_scalar(const uint16_t *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = gad__bf16_to_f32(x[i]);
}

#ifdef HV_X86
#define A512 __attribute__((target("avx512f")))

/* ------------------------------------------- AVX-512F integer (portable) */

/* half.h's f32 -> bf16 on 16 lanes, as 32-bit lanes holding the result */
A512 static inline __m512i bf16_round16(__m512i u) {
    __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7f800000));
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd), 16);
    return _mm512_mask_mov_epi32(r, nan, _mm512_set1_epi32(0xffff));
}

A512 static void f32_to_bf16_avx512f(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i r = bf16_round16(_mm512_loadu_si512(x + i));
        _mm256_storeu_si256((__m256i *)(y + i), _mm512_cvtepi32_epi16(r));
    }
    f32_to_bf16_scalar(x + i, y + i, n - i);
}

A512 static void bf16_to_f32_avx512f(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(x + i)));
        _mm512_storeu_si512(y + i, _mm512_slli_epi32(h, 16));
    }
    bf16_to_f32_scalar(x + i, y + i, n - i);
}

/* half.h's f32 -> f16 on 16 lanes */
A512 static inline __m256i f16_round16(__m512i u) {
    const __m512i absm = _mm512_set1_epi32(0x7fffffff);
    __m512i a = _mm512_and_si512(u, absm);
    __m512i sign = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000));
    /* normal: rebias, round the 13 dropped bits to even */
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(a, 13), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(a, _mm512_set1_epi32(0xfff - 0x38000000));
    r = _mm512_srli_epi32(_mm512_add_epi32(r, odd), 13);
    /* below 2^-14: the f32 adder rounds at 2^-24 (round to nearest even,
     * whatever MXCSR says) */
    __mmask16 tiny = _mm512_cmplt_epu32_mask(a, _mm512_set1_epi32(0x38800000));
    __m512 v = _mm512_add_round_ps(_mm512_castsi512_ps(a), _mm512_set1_ps(0.5f),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_mask_sub_epi32(r, tiny, _mm512_castps_si512(v), _mm512_set1_epi32(0x3f000000));
    __mmask16 big = _mm512_cmpge_epu32_mask(a, _mm512_set1_epi32(0x477ff000));
    r = _mm512_mask_mov_epi32(r, big, _mm512_set1_epi32(0x7c00));
    __mmask16 nan = _mm512_cmpgt_epu32_mask(a, _mm512_set1_epi32(0x7f800000));
    __m512i q = _mm512_and_si512(_mm512_srli_epi32(a, 13), _mm512_set1_epi32(0x1ff));
    r = _mm512_mask_or_epi32(r, nan, q, _mm512_set1_epi32(0x7e00));
    return _mm512_cvtepi32_epi16(_mm512_or_si512(r, sign));
}

A512 static void f32_to_f16_avx512f(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i), f16_round16(_mm512_loadu_si512(x + i)));
    f32_to_f16_scalar(x + i, y + i, n - i);
}

A512 static void f16_to_f32_avx512f(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    const __m512i man_m = _mm512_set1_epi32(0x3ff);
    for (; i + 16 <= n; i += 16) {
        __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(x + i)));
        __m512i sign = _mm512_slli_epi32(_mm512_and_si512(h, _mm512_set1_epi32(0x8000)), 16);
        __m512i e = _mm512_and_si512(h, _mm512_set1_epi32(0x7c00));
        __m512i man = _mm512_and_si512(h, man_m);
        /* normal: exponent + 112 */
        __m512i r = _mm512_add_epi32(_mm512_slli_epi32(_mm512_and_si512(h, _mm512_set1_epi32(0x7fff)), 13),
                                     _mm512_set1_epi32(112 << 23));
        __mmask16 inf = _mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(0x7c00));
        /* Inf/NaN: all-ones exponent, the mantissa kept (half.h's) */
        r = _mm512_mask_or_epi32(r, inf, _mm512_set1_epi32(0x7f800000),
                                 _mm512_slli_epi32(man, 13));
        __mmask16 nan = _mm512_mask_cmpneq_epi32_mask(inf, man, _mm512_setzero_si512());
        r = _mm512_mask_or_epi32(r, nan, r, _mm512_set1_epi32(0x400000)); /* quiet */
        __mmask16 sub = _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512());
        __m512 s = _mm512_mul_ps(_mm512_cvtepi32_ps(man), _mm512_set1_ps(0x1p-24f));
        r = _mm512_mask_mov_epi32(r, sub, _mm512_castps_si512(s));
        _mm512_storeu_si512(y + i, _mm512_or_si512(r, sign));
    }
    f16_to_f32_scalar(x + i, y + i, n - i);
}

/* ------------------------------------------- F16C / AVX-512 instructions */

A512 static void f32_to_f16_cvt512(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_si256((__m256i *)(y + i), h);
    }
    f32_to_f16_scalar(x + i, y + i, n - i);
}

A512 static void f16_to_f32_cvt512(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(x + i))));
    f16_to_f32_scalar(x + i, y + i, n - i);
}

#define AF16C __attribute__((target("avx2,f16c")))

AF16C static void f32_to_f16_f16c(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(y + i), h);
    }
    f32_to_f16_scalar(x + i, y + i, n - i);
}

AF16C static void f16_to_f32_f16c(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))));
    f16_to_f32_scalar(x + i, y + i, n - i);
}

AF16C static void bf16_to_f32_avx2(const uint16_t *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + i)));
        _mm256_storeu_si256((__m256i *)(y + i), _mm256_slli_epi32(h, 16));
    }
    bf16_to_f32_scalar(x + i, y + i, n - i);
}

#if defined(__clang__) ? __clang_major__ >= 9 : __GNUC__ >= 10
#define HV_BF16 1
__attribute__((target("avx512f,avx512bf16,avx512vl"))) static void
f32_to_bf16_cvt(const float *x, uint16_t *y, int64_t n) {
    int64_t i = 0;
    const __m512i absm = _mm512_set1_epi32(0x7fffffff);
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
        /* NaN (a - 1 >= 0x7f800000) or a nonzero subnormal (a - 1 <
         * 0x7fffff): the instruction differs from half.h there */
        __m512i a1 = _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(v), absm),
                                      _mm512_set1_epi32(1));
        __mmask16 odd = _mm512_cmpge_epu32_mask(a1, _mm512_set1_epi32(0x7f800000)) |
                        _mm512_cmplt_epu32_mask(a1, _mm512_set1_epi32(0x7fffff));
        if (__builtin_expect(odd != 0, 0)) {
            __m512i r = bf16_round16(_mm512_castps_si512(v));
            __m512i w = _mm512_mask_mov_epi32(_mm512_cvtepu16_epi32(h), odd, r);
            h = _mm512_cvtepi32_epi16(w);
        }
        _mm256_storeu_si256((__m256i *)(y + i), h);
    }
    f32_to_bf16_scalar(x + i, y + i, n - i);
}
#endif
#endif /* HV_X86 */

/* ------------------------------------------------------------ dispatch */

static int force_level;
static struct {
    to_half_fn to_f16, to_bf16;
    from_half_fn from_f16, from_bf16;
    const char *name_f16, *name_bf16;
} paths[3]; /* by force level */
static pthread_once_t paths_once = PTHREAD_ONCE_INIT;

#ifdef HV_X86
/* CPUID.1:ECX bit 29 (clang 14's __builtin_cpu_supports has no "f16c");
 * the AVX state it needs is checked by the caller's avx2 test */
static int has_f16c(void) {
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1);
}
#endif

static void pick(void) {
    for (int l = 0; l < 3; l++) {
        paths[l].to_f16 = f32_to_f16_scalar, paths[l].from_f16 = f16_to_f32_scalar;
        paths[l].to_bf16 = f32_to_bf16_scalar, paths[l].from_bf16 = bf16_to_f32_scalar;
        paths[l].name_f16 = paths[l].name_bf16 = "scalar";
    }
#ifdef HV_X86
    __builtin_cpu_init();
    int f512 = __builtin_cpu_supports("avx512f");
    for (int l = 0; l < 2; l++) { /* auto and portable */
        if (!f512) break;
        paths[l].to_f16 = f32_to_f16_avx512f, paths[l].from_f16 = f16_to_f32_avx512f;
        paths[l].to_bf16 = f32_to_bf16_avx512f, paths[l].from_bf16 = bf16_to_f32_avx512f;
        paths[l].name_f16 = paths[l].name_bf16 = "avx512f";
    }
    if (f512) { /* the zmm forms of vcvtps2ph/vcvtph2ps are AVX-512F */
        paths[0].to_f16 = f32_to_f16_cvt512, paths[0].from_f16 = f16_to_f32_cvt512;
        paths[0].name_f16 = "avx512f-cvtps2ph";
    } else if (has_f16c() && __builtin_cpu_supports("avx2")) {
        paths[0].to_f16 = f32_to_f16_f16c, paths[0].from_f16 = f16_to_f32_f16c;
        paths[0].from_bf16 = bf16_to_f32_avx2;
        paths[0].name_f16 = "f16c";
    }
#ifdef HV_BF16
    if (f512 && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512vl")) {
        paths[0].to_bf16 = f32_to_bf16_cvt;
        paths[0].name_bf16 = "avx512bf16";
    }
#endif
#endif
}

static inline int level(void) {
    pthread_once(&paths_once, pick);
    return __atomic_load_n(&force_level, __ATOMIC_RELAXED);
}

int gad__half_vec_force(int lv) {
    level();
    int old = force_level;
    __atomic_store_n(&force_level, lv < 0 || lv > 2 ? 0 : lv, __ATOMIC_RELAXED);
    return old;
}

const char *gad__half_vec_path(int to_bf16) {
    int l = level();
    return to_bf16 ? paths[l].name_bf16 : paths[l].name_f16;
}

void gad__f32_to_f16_n(const float *x, uint16_t *y, int64_t n) {
    paths[level()].to_f16(x, y, n);
}
void gad__f16_to_f32_n(const uint16_t *x, float *y, int64_t n) {
    paths[level()].from_f16(x, y, n);
}
void gad__f32_to_bf16_n(const float *x, uint16_t *y, int64_t n) {
    paths[level()].to_bf16(x, y, n);
}
void gad__bf16_to_f32_n(const uint16_t *x, float *y, int64_t n) {
    paths[level()].from_bf16(x, y, n);
}
