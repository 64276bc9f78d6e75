/* gemm_avx2.c: the AVX2+FMA micro-kernels of the CPU GEMM (see gemm.c):
 * the packed kernels, f32 6 x 16 and f64 6 x 8, from gemm_kernel_tmpl.h.
 * They are compiled with target attributes, without -m flags, so that
 * gemm.c can choose them at run time on CPUs that have AVX2 and FMA; on
 * other targets and compilers this file defines nothing. */
#include "cpu/gemm_int.h"

#ifdef GEMM_X86
/* ---- AVX2 + FMA: f32 6 x 16, f64 6 x 8 (12 accumulators of 16 ymm). */
#define GK_VT __m256
#define GK_ET float
#define GK_LANES 8
#define GK_ZERO() _mm256_setzero_ps()
#define GK_SET1(x) _mm256_set1_ps(x)
#define GK_LOAD(p) _mm256_load_ps(p)
#define GK_LOADU(p) _mm256_loadu_ps(p)
#define GK_STOREU(p, v) _mm256_storeu_ps(p, v)
#define GK_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define GK_MUL(a, b) _mm256_mul_ps(a, b)
#define GK_ADD(a, b) _mm256_add_ps(a, b)
#define GK_NAME gad__gemm_skern_avx2
#define GK_ATTR __attribute__((target("avx2,fma")))
#define GK_ROWS GEMM_ROWS6
#define GK_MR 6
#include "cpu/gemm_kernel_tmpl.h"

#define GK_VT __m256d
#define GK_ET double
#define GK_LANES 4
#define GK_ZERO() _mm256_setzero_pd()
#define GK_SET1(x) _mm256_set1_pd(x)
#define GK_LOAD(p) _mm256_load_pd(p)
#define GK_LOADU(p) _mm256_loadu_pd(p)
#define GK_STOREU(p, v) _mm256_storeu_pd(p, v)
#define GK_FMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#define GK_MUL(a, b) _mm256_mul_pd(a, b)
#define GK_ADD(a, b) _mm256_add_pd(a, b)
#define GK_NAME gad__gemm_dkern_avx2
#define GK_ATTR __attribute__((target("avx2,fma")))
#define GK_ROWS GEMM_ROWS6
#define GK_MR 6
#include "cpu/gemm_kernel_tmpl.h"
#endif /* GEMM_X86 */
