/* gemm_blas.c: the CPU GEMM's BLAS policy: when gad__sgemm and gad__dgemm
 * (gemm.c) hand a product to CBLAS rather than to the built-in kernel, with
 * the measurements behind the thresholds and the check for an OpenBLAS
 * running a generic core, and how many threads the BLAS library may use
 * (gad__gemm_set_blas_threads). Without CBLAS only the latter is here, and
 * does nothing. */
#include "cpu/gemm.h"
#include "cpu/gemm_int.h"
#include "gad_int.h"

#include <limits.h>
#include <string.h>

#ifdef GAD_HAVE_CBLAS
#if defined(__GNUC__) || defined(__clang__)
/* OpenBLAS extensions, looked up weakly: absent from other CBLAS. */
extern void openblas_set_num_threads(int) __attribute__((weak));
extern char *openblas_get_corename(void) __attribute__((weak));
#endif

/* 1 when the CBLAS is an OpenBLAS running one of its pre-AVX generic cores
 * while our kernels have AVX2 or AVX-512. OpenBLAS falls back to "Prescott"
 * on CPUs newer than its release (0.3.21 on Emerald Rapids, for one), where
 * it is several times slower than the built-in kernel. */
static int gemm_blas_weak(void) {
    static atomic_int cached; /* 0 unknown, 1 weak, 2 fine */
    int v = atomic_load_explicit(&cached, memory_order_relaxed);
    if (GAD_LIKELY(v)) return v == 1;
    v = 2;
#if defined(__GNUC__) || defined(__clang__)
    static const char *const generic[] = {
        "Prescott", "Core2",   "Penryn",       "Dunnington", "Nehalem",
        "Atom",     "Katmai",  "Coppermine",   "Northwood",  "Banias",
        "Opteron",  "Athlon",  "Opteron_SSE3", "Barcelona",  "Bobcat"};
    const char *core = openblas_get_corename ? openblas_get_corename() : NULL;
    if (core && gad__gemm_isa() >= 2)
        for (size_t i = 0; i < sizeof generic / sizeof generic[0]; i++)
            if (strcmp(core, generic[i]) == 0) v = 1;
#endif
    atomic_store_explicit(&cached, v, memory_order_relaxed);
    return v == 1;
}

/* True when CBLAS should take an M x N x K product of elements of esize
 * bytes: it is enabled, the sizes fit its int arguments, we are not inside a
 * region of gad's pool (BLAS would start its own threads there), and the
 * product is big enough that BLAS wins. Measured on a 2-core AVX-512 Xeon
 * (Emerald Rapids) with OpenBLAS 0.3.21 (its Cooperlake kernels, 2 threads,
 * f32; five bench/compare runs, W2 timed in rotation): the AVX-512 built-in
 * kernel on gad's worker threads ran 0.93-1.26x OpenBLAS at 64^3, 1.9-2.1x
 * at 128^3, 1.2-1.3x at 256^3, 0.97-1.02x at 512^3, 1.01-1.18x at 1024^3,
 * 0.92-1.05x at 2048^3, so f32 products stay on it at every size (which
 * also keeps OpenBLAS's threads, spinning after each call, from taking the
 * cores gad's next kernels need: W6 lost 13-23% when its products went to
 * OpenBLAS). Against the AVX2 kernel BLAS is ~10%
 * faster from 512^3 up and slower at 256^3 and below; f64 keeps the same
 * thresholds. */
int gad__gemm_use_blas(int64_t M, int64_t N, int64_t K, int64_t lda,
                       int64_t ldb, int64_t ldc, size_t esize) {
    if (!gad__blas_on()) return 0;
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX ||
        ldb > INT_MAX || ldc > INT_MAX)
        return 0;
    if (gad__pool_nested()) return 0;
    if (atomic_load_explicit(&gad__gemm_blas_always, memory_order_relaxed))
        return 1;
    if (M < 128 || N < 128 || K < 64) return 0;
    int avx512 = gad__gemm_isa() >= 3;
    if (avx512 && esize == sizeof(float)) return 0;
    double work = (double)M * (double)N * (double)K;
    double need = avx512 ? 1024.0 * 1024.0 * 1024.0 : 384.0 * 384.0 * 384.0;
    if (work < need) return 0;
    return !gemm_blas_weak();
}
#endif

void gad__gemm_set_blas_threads(int n) {
#if defined(GAD_HAVE_CBLAS) && (defined(__GNUC__) || defined(__clang__))
    if (openblas_set_num_threads) openblas_set_num_threads(n < 1 ? 1 : n);
#else
    (void)n;
#endif
}
