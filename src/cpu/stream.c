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

#else

void gad__stream_store(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }
void gad__stream_fence(void) {}

#endif
