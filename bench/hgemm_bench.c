/* hgemm_bench.c: gad's side of bench/hgemm_compare.py (issue 29): square
 * gad_matmul in bf16, f16 or f32, and the core's peak rates measured with
 * register-only loops.
 *
 *   hgemm-bench N THREADS DTYPE REPS   DTYPE: bf16, f16, f32 or f32m (f32
 *                                      under GAD_MATMUL_MEDIUM); prints
 *                                      "<median ms> <GFLOP/s> <path>"
 *   hgemm-bench peak                   one thread: "<f32 FMA GFLOP/s>
 *                                      <bf16 VDPBF16PS GFLOP/s>" (0 when
 *                                      the CPU lacks the instruction)
 *
 * One product is 2 N^3 FLOP; each rep is one gad_matmul (allocation of the
 * result included, as torch.matmul's), after a warm-up of at least two calls
 * and 0.3 s from the start. The peak
 * loops run 12 independent accumulator chains (more than latency x ports on
 * current x86 cores), so they measure the issue rate: 32 FLOP per FMA on a
 * 512-bit register, 64 per VDPBF16PS (16 lanes x 2 pairs x multiply-add). */
#include "gad.h"
#include "bench_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define HB_X86 1
#endif

int gad__hgemm_path(int dt); /* gemm_half.c: 1 f32 kernels, 2 AVX-512 BF16, 3 AMX */

/* Wall time, or with HB_CPUTIME the calling thread's CPU time (the peak
 * loops, and one-thread products, whose work is all on this thread). Not
 * the process's: the threads OpenBLAS starts when it is loaded spin for a
 * while first, and counted in, they halved the measured peaks. */
static double hb_now_s(void) {
    return bench_clock_s(getenv("HB_CPUTIME") ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC);
}

#ifdef HB_X86
#define HB_ITERS 20000000L
/* Twelve named accumulators (an array would live on the stack). */
#define HB_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define HB_DECL(i) __m512 c##i = _mm512_set1_ps((float)(i));
#define HB_SUM(i) s += _mm512_reduce_add_ps(c##i);
#define HB_FMA(i) c##i = _mm512_fmadd_ps(a, b, c##i);
#define HB_DP(i) c##i = _mm512_dpbf16_ps(c##i, ah, bh);

__attribute__((target("avx512f"))) static double peak_f32(void) {
    __m512 a = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(1e-9f);
    HB_CHAINS(HB_DECL)
    double t0 = hb_now_s();
    for (long it = 0; it < HB_ITERS; it++) {
        HB_CHAINS(HB_FMA)
    }
    double t = hb_now_s() - t0;
    float s = 0;
    HB_CHAINS(HB_SUM)
    if (s == 12345.0f) puts("");
    return 12.0 * 32.0 * (double)HB_ITERS / t * 1e-9;
}

__attribute__((target("avx512f,avx512bf16"))) static double peak_bf16(void) {
    __m512bh ah = (__m512bh)_mm512_set1_epi32(0x3f803f80);
    __m512bh bh = (__m512bh)_mm512_set1_epi32(0x30003000);
    HB_CHAINS(HB_DECL)
    double t0 = hb_now_s();
    for (long it = 0; it < HB_ITERS; it++) {
        HB_CHAINS(HB_DP)
    }
    double t = hb_now_s() - t0;
    float s = 0;
    HB_CHAINS(HB_SUM)
    if (s == 12345.0f) puts("");
    return 12.0 * 64.0 * (double)HB_ITERS / t * 1e-9;
}

static int has_bf16(void) {
    unsigned a, b, c, d;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) return 0;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (a >> 5) & 1;
}
#endif

/* One product, allocation of the result included: its seconds (hb_now_s),
 * or -1 with the error printed. */
static double hb_product(gad_tensor *a, gad_tensor *b) {
    double t0 = hb_now_s();
    gad_tensor *y = gad_matmul(a, b);
    double t = hb_now_s() - t0;
    if (!y) {
        fprintf(stderr, "%s\n", gad_last_error()->text);
        return -1;
    }
    gad_release(y);
    return t;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "peak")) {
#ifdef HB_X86
        __builtin_cpu_init();
        double f = __builtin_cpu_supports("avx512f") ? peak_f32() : 0;
        double h = has_bf16() ? peak_bf16() : 0;
        printf("%.1f %.1f\n", f, h);
#else
        puts("0 0");
#endif
        return 0;
    }
    if (argc != 5) {
        fprintf(stderr, "usage: hgemm-bench N THREADS bf16|f16|f32|f32m REPS | hgemm-bench peak\n");
        return 2;
    }
    double start = now_s();
    int64_t n = atoll(argv[1]);
    int threads = atoi(argv[2]), reps = atoi(argv[4]);
    gad_dtype_t dt = !strcmp(argv[3], "bf16") ? GAD_BF16 : !strcmp(argv[3], "f16") ? GAD_F16 : GAD_F32;
    if (n < 1 || reps < 1 || reps > 1000) return 2;
    int medium = !strcmp(argv[3], "f32m");
    if (medium) gad_set_matmul_precision(GAD_MATMUL_MEDIUM);
    gad_set_num_threads(threads);
    int64_t shape[2] = {n, n};
    gad_rng *rng = gad_rng_new(1);
    gad_tensor *a32 = gad_rng_uniform_tensor(rng, shape, 2, GAD_F32, -1, 1);
    gad_tensor *b32 = gad_rng_uniform_tensor(rng, shape, 2, GAD_F32, -1, 1);
    gad_tensor *a = dt == GAD_F32 ? a32 : gad_cast(a32, dt);
    gad_tensor *b = dt == GAD_F32 ? b32 : gad_cast(b32, dt);
    if (!a || !b) {
        fprintf(stderr, "%s\n", gad_last_error()->text);
        return 1;
    }
    double *ts = malloc((size_t)reps * sizeof *ts);
    /* warm-up: two products, and on until 0.3 s after the start. A BLAS
     * linked in may start threads that spin for a while first (OpenBLAS's
     * spin about 0.1 s after it is loaded, whether it is called or not);
     * on two cores such a thread took the core of gad's worker for the
     * whole of a short run, in one run of five. */
    for (int w = 0; w < 2 || now_s() - start < 0.3; w++)
        if (hb_product(a, b) < 0) return 1;
    for (int i = 0; i < reps; i++)
        if ((ts[i] = hb_product(a, b)) < 0) return 1;
    qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
    double med = ts[reps / 2];
    const char *path = medium && gad_matmul_medium_native()
                           ? (gad__hgemm_path(GAD_BF16) == 3 ? "f32-medium-amx" : "f32-medium-avx512bf16")
                       : dt == GAD_F32                  ? "f32"
                       : gad__hgemm_path((int)dt) == 3 ? "amx"
                       : gad__hgemm_path((int)dt) == 2 ? "avx512bf16"
                                                       : "f32-kernel";
    printf("%.4f %.1f %s\n", med * 1e3, 2.0 * (double)n * (double)n * (double)n / med * 1e-9, path);
    free(ts);
    gad_rng_free(rng);
    return 0;
}
