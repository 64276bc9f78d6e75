/* gemm_generic.c: the portable micro-kernels of the CPU GEMM (see gemm.c),
 * for CPUs without AVX2 and for other architectures: with GCC or clang,
 * kernels written with their vector extensions (f32 6 x 8, f64 6 x 4, from
 * gemm_kernel_tmpl.h), which the compiler maps to SSE2, NEON or scalar code;
 * with other compilers (or GAD_GEMM_PLAIN), a plain C 4 x 4 kernel. */
#include "cpu/gemm_int.h"

#include <string.h>

#ifdef GEMM_GNU
/* ---- Portable: GCC/clang vector extensions, 16-byte vectors (SSE2, NEON,
 * or scalar code where the target has none). f32 6 x 8, f64 6 x 4. */
typedef float gemm_v4f __attribute__((vector_size(16)));
typedef double gemm_v2d __attribute__((vector_size(16)));

static inline gemm_v4f gemm_ld4f(const float *p) {
    gemm_v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void gemm_st4f(float *p, gemm_v4f v) { memcpy(p, &v, sizeof v); }
static inline gemm_v2d gemm_ld2d(const double *p) {
    gemm_v2d v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void gemm_st2d(double *p, gemm_v2d v) { memcpy(p, &v, sizeof v); }

#define GK_VT gemm_v4f
#define GK_ET float
#define GK_LANES 4
#define GK_ZERO() ((gemm_v4f){0, 0, 0, 0})
#define GK_SET1(x) ((gemm_v4f){(x), (x), (x), (x)})
#define GK_LOAD(p) gemm_ld4f(p)
#define GK_LOADU(p) gemm_ld4f(p)
#define GK_STOREU(p, v) gemm_st4f(p, v)
#define GK_FMA(a, b, c) ((c) + (a) * (b))
#define GK_MUL(a, b) ((a) * (b))
#define GK_ADD(a, b) ((a) + (b))
#define GK_NAME gad__gemm_skern_vec
#define GK_ATTR
#define GK_ROWS GEMM_ROWS6
#define GK_MR 6
#include "cpu/gemm_kernel_tmpl.h"

#define GK_VT gemm_v2d
#define GK_ET double
#define GK_LANES 2
#define GK_ZERO() ((gemm_v2d){0, 0})
#define GK_SET1(x) ((gemm_v2d){(x), (x)})
#define GK_LOAD(p) gemm_ld2d(p)
#define GK_LOADU(p) gemm_ld2d(p)
#define GK_STOREU(p, v) gemm_st2d(p, v)
#define GK_FMA(a, b, c) ((c) + (a) * (b))
#define GK_MUL(a, b) ((a) * (b))
#define GK_ADD(a, b) ((a) + (b))
#define GK_NAME gad__gemm_dkern_vec
#define GK_ATTR
#define GK_ROWS GEMM_ROWS6
#define GK_MR 6
#include "cpu/gemm_kernel_tmpl.h"

#else /* !GEMM_GNU */
/* ---- Plain C, 4 x 4, for compilers without vector extensions. */
#define GEMM_PLAIN_KERNEL(NAME, T)                                             \
    void NAME(int64_t kc, const T *a, const T *b, T *c, int64_t ldc, T alpha,  \
              T beta) {                                                        \
        T acc[4][4] = {{0}};                                                   \
        for (int64_t k = 0; k < kc; k++, a += 4, b += 4)                       \
            for (int i = 0; i < 4; i++)                                        \
                for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];          \
        for (int i = 0; i < 4; i++)                                            \
            for (int j = 0; j < 4; j++) {                                      \
                T t = alpha * acc[i][j];                                       \
                if (beta != 0) {                                               \
                    T u = beta * c[i * ldc + j];                               \
                    t = t + u;                                                 \
                }                                                              \
                c[i * ldc + j] = t;                                            \
            }                                                                  \
    }
GEMM_PLAIN_KERNEL(gad__gemm_skern_plain, float)
GEMM_PLAIN_KERNEL(gad__gemm_dkern_plain, double)
#endif /* GEMM_GNU */
