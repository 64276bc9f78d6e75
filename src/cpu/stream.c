/* stream.c: non-temporal ("streaming") stores for outputs too large to stay
 * in cache. An ordinary store first reads the line it writes into the cache
 * (read-for-ownership) and later writes it back: 16 bytes of memory traffic
 * for c = a + b per f32 element instead of 12. A streaming store writes the
 * whole line to memory without reading it (Intel SDM vol. 1, 10.4.6.2
 * "Caching of Temporal vs. Non-Temporal Data"). On this library's 2-core
 * test machine, 16M-element c = a + b went from 24 to 35-40 GB/s.
 *
 * The widest store the CPU has is used (AVX-512, AVX, else SSE2,
 * which every x86-64 has); other architectures copy normally. */
#include "cpu.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* Each copies n bytes, n a multiple of 64, from src to dst (64-byte
 * aligned). */
__attribute__((target("avx512f"))) static void copy_avx512(char *dst, const char *src,
                                                            size_t n) {
    for (size_t i = 0; i < n; i += 64)
        _mm512_stream_si512((void *)(dst + i), _mm512_loadu_si512(src + i));
}

__attribute__((target("avx"))) static void copy_avx(char *dst, const char *src, size_t n) {
    for (size_t i = 0; i < n; i += 32)
        _mm256_stream_si256((__m256i *)(dst + i),
                            _mm256_loadu_si256((const __m256i *)(src + i)));
}

static void copy_sse2(char *dst, const char *src, size_t n) {
    for (size_t i = 0; i < n; i += 16)
        _mm_stream_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
}

void gad__stream_store(void *dst, const void *src, size_t n) {
    char *d = dst;
    const char *s = src;
    size_t head = (size_t)(-(uintptr_t)d & 63); /* bytes to the next line */
    if (head > n) head = n;
    memcpy(d, s, head);
    d += head, s += head, n -= head;
    size_t body = n & ~(size_t)63;
    /* the widest store this CPU has (__builtin_cpu_supports reads what
     * libgcc found at start-up) */
    if (__builtin_cpu_supports("avx512f")) copy_avx512(d, s, body);
    else if (__builtin_cpu_supports("avx")) copy_avx(d, s, body);
    else copy_sse2(d, s, body);
    memcpy(d + body, s + body, n - body);
}

void gad__stream_fence(void) { _mm_sfence(); }

/* c = a op b over contiguous f32 with streaming stores straight from the
 * registers: ordinary (masked) stores up to y's first cache line and after
 * its last whole one. Each lane is the one IEEE operation the portable
 * kernel's a + b (- * /) compiles to, so the bits are the same. */
#define SB_BODY(OP)                                                            \
    int64_t head = (int64_t)((-(uintptr_t)y & 63) / sizeof(float)), i = 0;     \
    if (head > n) head = n;                                                    \
    if (head) {                                                                \
        __mmask16 m = (__mmask16)((1u << head) - 1);                           \
        _mm512_mask_storeu_ps(                                                 \
            y, m, OP(_mm512_maskz_loadu_ps(m, a), _mm512_maskz_loadu_ps(m, b))); \
    }                                                                          \
    for (i = head; i + 16 <= n; i += 16)                                       \
        _mm512_stream_ps(y + i, OP(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i))); \
    if (i < n) {                                                               \
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);                        \
        _mm512_mask_storeu_ps(y + i, m,                                        \
                              OP(_mm512_maskz_loadu_ps(m, a + i),              \
                                 _mm512_maskz_loadu_ps(m, b + i)));            \
    }
#define SB_FN(name, OP)                                                        \
    __attribute__((target("avx512f"))) static void name(int64_t n, const float *a, \
                                                        const float *b, float *y) { \
        SB_BODY(OP)                                                            \
    }
SB_FN(sb_add, _mm512_add_ps)
SB_FN(sb_sub, _mm512_sub_ps)
SB_FN(sb_mul, _mm512_mul_ps)
SB_FN(sb_div, _mm512_div_ps)
#undef SB_FN
#undef SB_BODY

gad_sbkernel gad__stream_binary_f32(gad_bkernel k) {
    if (!__builtin_cpu_supports("avx512f")) return NULL;
    switch (k) {
    case GAD_BK_ADD: return sb_add;
    case GAD_BK_SUB: return sb_sub;
    case GAD_BK_MUL: return sb_mul;
    case GAD_BK_DIV: return sb_div;
    default: return NULL;
    }
}

#else

void gad__stream_store(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void gad__stream_fence(void) {}
gad_sbkernel gad__stream_binary_f32(gad_bkernel k) {
    (void)k;
    return NULL;
}

#endif
