/* fma_peak.h: the f32 multiply-add peak of this machine, measured: 12
 * independent chains of vector FMAs held in registers (no memory traffic),
 * the widest vectors the CPU has; flops counted as 2 per lane. gad-bench's
 * W2 figures and gemm-paths' ceiling are fractions of it, measured in the
 * same run: a VM's sustained clock under AVX-512 load is not its nominal
 * one. */
#ifndef GAD_BENCH_FMA_PEAK_H
#define GAD_BENCH_FMA_PEAK_H

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define BENCH_FMA_PEAK 1
#include <immintrin.h>

/* distinct starting values, or the compiler merges the chains into one;
 * s: their sum, which the caller reduces to a float */
#define BENCH_FMA12(V, FMA, ADD)                                               \
    V c0 = x, c1 = FMA(x, m, a), c2 = FMA(c1, m, a), c3 = FMA(c2, m, a);        \
    V c4 = FMA(c3, m, a), c5 = FMA(c4, m, a), c6 = FMA(c5, m, a);              \
    V c7 = FMA(c6, m, a), c8 = FMA(c7, m, a), c9 = FMA(c8, m, a);              \
    V c10 = FMA(c9, m, a), c11 = FMA(c10, m, a);                               \
    for (int64_t i = 0; i < iters; i++) {                                      \
        c0 = FMA(c0, m, a), c1 = FMA(c1, m, a), c2 = FMA(c2, m, a);            \
        c3 = FMA(c3, m, a), c4 = FMA(c4, m, a), c5 = FMA(c5, m, a);            \
        c6 = FMA(c6, m, a), c7 = FMA(c7, m, a), c8 = FMA(c8, m, a);            \
        c9 = FMA(c9, m, a), c10 = FMA(c10, m, a), c11 = FMA(c11, m, a);        \
    }                                                                          \
    V s = ADD(ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7))), \
              ADD(ADD(c8, c9), ADD(c10, c11)));
__attribute__((target("avx512f"))) static inline float bench_peak16(int64_t iters) {
    __m512 x = _mm512_set1_ps(0.5f), m = _mm512_set1_ps(0.999f), a = _mm512_set1_ps(1e-4f);
    BENCH_FMA12(__m512, _mm512_fmadd_ps, _mm512_add_ps)
    return _mm512_reduce_add_ps(s);
}
__attribute__((target("avx2,fma"))) static inline float bench_peak8(int64_t iters) {
    __m256 x = _mm256_set1_ps(0.5f), m = _mm256_set1_ps(0.999f), a = _mm256_set1_ps(1e-4f);
    BENCH_FMA12(__m256, _mm256_fmadd_ps, _mm256_add_ps)
    float v[8];
    _mm256_storeu_ps(v, s);
    return v[0] + v[7];
}
#undef BENCH_FMA12

/* The lanes of the widest f32 FMA this CPU runs: 16, 8, or 0 (none). */
static inline int bench_fma_lanes(void) {
    return __builtin_cpu_supports("avx512f")                                 ? 16
           : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 8
                                                                             : 0;
}

/* iters rounds of the 12 chains on lanes (16 or 8) lanes: 24 * lanes *
 * iters flops. The result only keeps the loop alive. */
static inline float bench_fma_loop(int lanes, int64_t iters) {
    return lanes == 16 ? bench_peak16(iters) : bench_peak8(iters);
}
#endif

#endif
