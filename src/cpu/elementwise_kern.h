/* elementwise_kern.h: the kernels of elementwise.def's rows, for
 * cpu/elementwise.c (the f32 kernels of every row but the math family's)
 * and cpu/elementwise_cold.c (the rest: the math family's rows, sin ... pow,
 * elu ... gelu_erf and their helper kernels, and every row's f64 kernels).
 * An includer defines EW_EMIT_<group>_<dtype>(...) for the groups CORE and
 * MATH and the dtypes f32 and f64, each to its arguments or to nothing, and
 * EW_TABLE_STORAGE and the names of its tables, EW_UNARY_TABLE,
 * EW_BINARY_TABLE and EW_GRAD_TABLE, which then hold its own kernels (NULL
 * for the others).
 *
 * Why two files: the math rows, compiled for three CPUs each, are twice
 * the code of all the others, and most programs run neither them nor f64.
 * In a file of their own, linked after the rest of the library
 * (CMakeLists.txt), they sit apart from the kernels every program runs
 * instead of between them, and the pages a program touches, which the
 * kernel maps a block at a time, no longer carry them along
 * (bench/RESULTS.md: W4's peak RSS). Each kernel's code is the same in
 * either file. */
#ifndef GAD_CPU_ELEMENTWISE_KERN_H
#define GAD_CPU_ELEMENTWISE_KERN_H

#include "cpu.h"
#include "cpu/vmath.h"
#include "cpu/vmath_ext.h"

#include <tgmath.h>

/* y = fwd(x) elementwise; out = expr(in0, in1) (binary and gradient). */
typedef void (*ukern)(int64_t n, const void *x, int64_t sx, void *y,
                      const gad_uparams *p);
typedef void (*bkern)(int64_t, const void *, int64_t, const void *, int64_t, void *,
                      const gad_uparams *);

/* elementwise_cold.c's tables: its kernels, NULL elsewhere. */
extern const ukern gad__ew_cold_unary[GAD_UK_COUNT_][2];
extern const bkern gad__ew_cold_binary[GAD_BK_COUNT_][2];
extern const bkern gad__ew_cold_grad[GAD_GK_COUNT_][2];

/* The arguments, if the includer compiles the current rows' kernels of
 * dtype dt (elementwise.def sets GAD_EW_GROUP to CORE or MATH before each
 * block of rows). */
#define EW_CAT3_(a, b, c) a##b##c
#define EW_CAT3(a, b, c) EW_CAT3_(a, b, c)
#define EW_HERE(dt, ...) EW_CAT3(EW_EMIT_, GAD_EW_GROUP, _##dt)(__VA_ARGS__)

/* Helpers of the rows' expressions (src/ops/elementwise.def), in the
 * element type E. exp, tanh and sigmoid: gad's vectorizable f32 versions,
 * libm's for f64. */
#define EXP_E(v) _Generic((v), float: gad__expf, default: exp)(v)
#define TANH_E(v) _Generic((v), float: gad__tanhf, default: tanh)(v)
#define SIGM_E(v) ((E)1 / ((E)1 + EXP_E(-(v))))

#define GELU_K ((E)0.7978845608028654) /* sqrt(2/pi) */
#define GELU_C ((E)0.044715)

/* gelu, tanh form: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
 * In f32 as x sigmoid(2u) = x / (1 + e^-2u), the same function: one exp and
 * one division instead of tanh's two paths, and no cancellation in
 * 1 + tanh(u) for negative x. f64 keeps the tanh form of the reference.
 * (x * (1 / d), not x / d: GCC turns the latter into two divisions, one per
 * side of exp's clamp, and the divider is what bounds this loop.) */
#define GELU_U(v) (GELU_K * (v + GELU_C * v * v * v))
#define GELU_E(v)                                                              \
    _Generic((v), float: v * (1.0f / (1.0f + gad__expf(-2.0f * GELU_U(v)))),   \
             default: (E)0.5 * v * ((E)1 + tanh(GELU_U(v))))

/* silu'(z) = s (1 + z (1 - s)), s = sigmoid(z) */
#define DEF_DSILU(T, sfx)                                                      \
    static inline T dsilu_##sfx(T z) {                                         \
        typedef T E;                                                           \
        E s = SIGM_E(z);                                                       \
        return s * ((E)1 + z * ((E)1 - s));                                    \
    }
/* gelu'(z) = 0.5 (1 + t) + 0.5 z (1 - t^2) k (1 + 3 c z^2) */
#define DEF_DGELU(T, sfx)                                                      \
    static inline T dgelu_##sfx(T z) {                                         \
        typedef T E;                                                           \
        E t = TANH_E(GELU_K * (z + GELU_C * z * z * z));                       \
        return (E)0.5 * ((E)1 + t) +                                           \
               (E)0.5 * z * ((E)1 - t * t) * GELU_K * ((E)1 + (E)3 * GELU_C * z * z); \
    }
/* ------------------------------------------------------- the math family
 * Helpers of the math rows (sin ... pow, elu, mish, gelu_erf): f32 from
 * vmath_ext.h (vectorizable, within 2 ulp), f64 from libm. */
#define F32_OR(f32, f64, v) _Generic((v), float: f32, default: f64)(v)
#define SIN_E(v) F32_OR(gad__sinf, sin, v)
#define COS_E(v) F32_OR(gad__cosf, cos, v)
#define TAN_E(v) F32_OR(gad__tanf, tan, v)
#define ASIN_E(v) F32_OR(gad__asinf, asin, v)
#define ACOS_E(v) F32_OR(gad__acosf, acos, v)
#define ATAN_E(v) F32_OR(gad__atanf, atan, v)
#define ERF_E(v) F32_OR(gad__erff, erf, v)
#define ERFC_E(v) F32_OR(gad__erfcf, erfc, v)
#define RSQRT_E(v) F32_OR(gad__rsqrtf, rsqrt_f64, v)
#define LOG1P_E(v) F32_OR(gad__log1pf, log1p, v)
#define EXPM1_E(v) F32_OR(gad__expm1f, expm1, v)
#define LOG2_E(v) F32_OR(gad__log2f, log2, v)
#define EXP2_E(v) F32_OR(gad__exp2f, exp2, v)
#define MISH_E(v) F32_OR(gad__mishf, mish_f64, v)
#define DMISH_E(v) F32_OR(gad__dmishf, dmish_f64, v)
#define SELU_E(v) F32_OR(gad__seluf, selu_f64, v)
#define GELU_ERF_E(v) F32_OR(gad__gelu_erff, gelu_erf_f64, v)
#define DGELU_ERF_E(v) F32_OR(gad__dgelu_erff, dgelu_erf_f64, v)
#define ELU_E(v, al) _Generic((v), float: gad__eluf, default: elu_f64)(v, al)
#define ATAN2_E(y, x) _Generic((y), float: gad__atan2f, default: atan2)(y, x)
#define POW_E(x, y) _Generic((x), float: gad__powf, default: pow)(x, y)

static inline double rsqrt_f64(double x) { return 1.0 / sqrt(x); }
static inline double mish_f64(double x) { return x * tanh(x > 20 ? x : log1p(exp(x))); }
static inline double dmish_f64(double x) {
    double t = tanh(x > 20 ? x : log1p(exp(x)));
    return t + x * (1 - t * t) / (1 + exp(-x));
}
static inline double elu_f64(double x, double alpha) { return x > 0 ? x : alpha * expm1(x); }
static inline double selu_f64(double x) {
    return GAD_SELU_SCALE * (x > 0 ? x : GAD_SELU_ALPHA * expm1(x));
}
/* x Phi(x) and Phi(x) + x phi(x) */
static inline double gelu_erf_f64(double x) { return 0.5 * x * erfc(-x * 0.7071067811865476); }
static inline double dgelu_erf_f64(double x) {
    return 0.5 * erfc(-x * 0.7071067811865476) + x * exp(-0.5 * x * x) * 0.3989422804014327;
}

/* Lanes that vmath_ext.h's sin, cos and tan leave to libm (|x| > 2^22,
 * inf, NaN): a kernel first checks, in a loop that vectorizes, whether a
 * block holds one, and only then recomputes those lanes. The row's kernel
 * id is a constant in each kernel, so this folds away in the others. */
static inline bool trig_big(float x) { return !(fabsf(x) <= GAD_VM_TRIG_MAX); }

static inline bool any_trig_big(int64_t n, const float *x, int64_t sx) {
    bool any = false;
    for (int64_t i = 0; i < n; i++) any |= trig_big(x[i * sx]);
    return any;
}

static inline void fix_unary(gad_ukernel k, int64_t n, const void *xp, int64_t sx, void *yp) {
    double (*f)(double) = k == GAD_UK_SIN ? sin : k == GAD_UK_COS ? cos : k == GAD_UK_TAN ? tan : NULL;
    if (!f) return;
    const float *x = xp;
    float *y = yp;
    if (!any_trig_big(n, x, sx)) return;
    for (int64_t i = 0; i < n; i++)
        if (trig_big(x[i * sx])) y[i] = (float)f(x[i * sx]);
}

/* the gradients g cos x (sin) and -g sin x (cos) */
static inline void fix_grad(gad_gkernel k, int64_t n, const void *gp, int64_t sg,
                            const void *xp, int64_t sx, void *yp) {
    if (k != GAD_GK_SIN && k != GAD_GK_COS) return;
    const float *g = gp, *x = xp;
    float *y = yp;
    if (!any_trig_big(n, x, sx)) return;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i * sx];
        if (trig_big(v))
            y[i] = k == GAD_GK_SIN ? (float)(g[i * sg] * cos(v)) : (float)(-g[i * sg] * sin(v));
    }
}

DEF_DSILU(float, f32)
DEF_DSILU(double, f64)
DEF_DGELU(float, f32)
DEF_DGELU(double, f64)
#define DSILU_E(z) _Generic((z), float: dsilu_f32, default: dsilu_f64)(z)
#define DGELU_E(z) _Generic((z), float: dgelu_f32, default: dgelu_f64)(z)

/* What the rows' save and cost fields stand for here: the name of the saved
 * value in a gradient expression; whether a kernel streams its stores. */
#define SAVED_X x
#define SAVED_Y y
#define IS_LIGHT_LIGHT true
#define IS_LIGHT_HEAVY false

/* ---------------------------------------------------------------- unary
 * y = fwd(x) elementwise, x of stride sx; the parameters a, b converted to
 * the element type E first. */

#define DEF_UNARY(fn, T, fwd, K)                                               \
    GAD_CLONES static void fn(int64_t n, const void *xp, int64_t sx, void *yp, \
                              const gad_uparams *p) {                          \
        typedef T E;                                                           \
        const E *restrict in = xp;                                             \
        E *restrict out = yp;                                                  \
        const E a = (E)p->a, b = (E)p->b;                                      \
        (void)a;                                                               \
        (void)b;                                                               \
        if (sx == 1)                                                           \
            for (int64_t i = 0; i < n; i++) {                                  \
                E x = in[i];                                                   \
                out[i] = (fwd);                                                \
            }                                                                  \
        else                                                                   \
            for (int64_t i = 0; i < n; i++) {                                  \
                E x = in[i * sx];                                              \
                out[i] = (fwd);                                                \
            }                                                                  \
        if (sizeof(E) == sizeof(float)) fix_unary(K, n, xp, sx, yp);           \
    }
#define DEF_UNARY_BOTH(ID, fwd)                                                \
    EW_HERE(f32, DEF_UNARY(uk_##ID##_f32, float, fwd, GAD_UK_##ID))            \
    EW_HERE(f64, DEF_UNARY(uk_##ID##_f64, double, fwd, GAD_UK_##ID))
#define UNARY(ID, name, args, pwords, save, fwd, ...) DEF_UNARY_BOTH(ID, fwd)
#define UKERNEL(ID, fwd, cost) DEF_UNARY_BOTH(ID, fwd)
#include "backend/elementwise.def"

EW_TABLE_STORAGE const ukern EW_UNARY_TABLE[GAD_UK_COUNT_][2] = {
#define EW_UNARY_ENTRY(ID)                                                     \
    EW_HERE(f32, [GAD_UK_##ID][0] = uk_##ID##_f32, )                           \
    EW_HERE(f64, [GAD_UK_##ID][1] = uk_##ID##_f64, )
#define UNARY(ID, ...) EW_UNARY_ENTRY(ID)
#define UKERNEL(ID, ...) EW_UNARY_ENTRY(ID)
#include "backend/elementwise.def"
};

/* ---------------------------------------------------- binary and gradient
 * out = expr of two elements: a binary kernel's a and b (from its two
 * inputs), a gradient kernel's g (the upstream gradient, from the first)
 * and x or y (the op's saved input or output, from the second) with the
 * op's parameters a, b. A stride 0 is a broadcast input. */

#define DEF_LOOP2(fn, T, e0, e1, params, expr, fix)                            \
    GAD_CLONES static void fn(int64_t n, const void *p0, int64_t s0,           \
                              const void *p1, int64_t s1, void *yp,            \
                              const gad_uparams *p) {                          \
        typedef T E;                                                           \
        const E *restrict in0 = p0, *restrict in1 = p1;                        \
        E *restrict out = yp;                                                  \
        params                                                                 \
        if (s0 == 1 && s1 == 1)                                                \
            for (int64_t i = 0; i < n; i++) {                                  \
                E e0 = in0[i], e1 = in1[i];                                    \
                out[i] = (expr);                                               \
            }                                                                  \
        else if (s1 == 0) {                                                    \
            const E e1 = in1[0];                                               \
            for (int64_t i = 0; i < n; i++) {                                  \
                E e0 = in0[i * s0];                                            \
                out[i] = (expr);                                               \
            }                                                                  \
        } else if (s0 == 0) {                                                  \
            const E e0 = in0[0];                                               \
            for (int64_t i = 0; i < n; i++) {                                  \
                E e1 = in1[i * s1];                                            \
                out[i] = (expr);                                               \
            }                                                                  \
        } else                                                                 \
            for (int64_t i = 0; i < n; i++) {                                  \
                E e0 = in0[i * s0], e1 = in1[i * s1];                          \
                out[i] = (expr);                                               \
            }                                                                  \
        if (sizeof(E) == sizeof(float)) fix;                                   \
    }
#define NO_PARAMS (void)p;
#define GRAD_PARAMS                                                            \
    const E a = (E)p->a, b = (E)p->b;                                          \
    (void)a;                                                                   \
    (void)b;

#define DEF_BINARY_BOTH(ID, fwd)                                               \
    EW_HERE(f32, DEF_LOOP2(bk_##ID##_f32, float, a, b, NO_PARAMS, fwd, (void)0)) \
    EW_HERE(f64, DEF_LOOP2(bk_##ID##_f64, double, a, b, NO_PARAMS, fwd, (void)0))
#define DEF_GRAD_BOTH(ID, v, grad)                                             \
    EW_HERE(f32, DEF_LOOP2(gk_##ID##_f32, float, g, v, GRAD_PARAMS, grad,      \
                           fix_grad(GAD_GK_##ID, n, p0, s0, p1, s1, yp)))      \
    EW_HERE(f64, DEF_LOOP2(gk_##ID##_f64, double, g, v, GRAD_PARAMS, grad, (void)0))
#define BINARY(ID, name, fwd, ...) DEF_BINARY_BOTH(ID, fwd)
#define BKERNEL(ID, fwd) DEF_BINARY_BOTH(ID, fwd)
#define UNARY(ID, name, args, pwords, save, fwd, cost, vjp, grad, ...)         \
    GAD_EW_##vjp(DEF_GRAD_BOTH(ID, SAVED_##save, grad))
#include "backend/elementwise.def"

EW_TABLE_STORAGE const bkern EW_BINARY_TABLE[GAD_BK_COUNT_][2] = {
#define EW_BINARY_ENTRY(ID)                                                    \
    EW_HERE(f32, [GAD_BK_##ID][0] = bk_##ID##_f32, )                           \
    EW_HERE(f64, [GAD_BK_##ID][1] = bk_##ID##_f64, )
#define BINARY(ID, ...) EW_BINARY_ENTRY(ID)
#define BKERNEL(ID, ...) EW_BINARY_ENTRY(ID)
#include "backend/elementwise.def"
};

EW_TABLE_STORAGE const bkern EW_GRAD_TABLE[GAD_GK_COUNT_][2] = {
#define UNARY(ID, name, args, pwords, save, fwd, cost, vjp, ...)               \
    GAD_EW_##vjp(EW_HERE(f32, [GAD_GK_##ID][0] = gk_##ID##_f32, )              \
                 EW_HERE(f64, [GAD_GK_##ID][1] = gk_##ID##_f64, ))
#include "backend/elementwise.def"
};

#endif
