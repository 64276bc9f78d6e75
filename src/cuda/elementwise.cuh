/* elementwise.cuh: the unary, binary and gradient kernels, generated from
 * the rows of src/backend/elementwise.def with the same expressions the
 * CPU's kernels use (src/cpu/elementwise.c): a new row needs no edit here.
 * Each row becomes a functor whose operator() is the row's expression over
 * the element type E; one templated kernel per family walks any strides and
 * broadcasts (zero strides) over the C side's merged axes. Included by
 * elementwise_{unary,binary,grad}.cu, one family each (three files that
 * nvcc compiles side by side). */
#ifndef GAD_CUDA_ELEMENTWISE_CUH
#define GAD_CUDA_ELEMENTWISE_CUH

#include "cuda/cuda_int.cuh"

#include "gad.h"
#include "backend/kernels.h"

/* The helpers the rows' expressions name (cpu/elementwise.c defines the
 * CPU's): exp, tanh and sigmoid in E; gelu's tanh form, computed in f32 as
 * x sigmoid(2u) as the CPU does (the same function, fewer roundings). */
__device__ __forceinline__ float gcu_exp(float v) { return expf(v); }
__device__ __forceinline__ double gcu_exp(double v) { return exp(v); }
__device__ __forceinline__ float gcu_tanh(float v) { return tanhf(v); }
__device__ __forceinline__ double gcu_tanh(double v) { return tanh(v); }
#define EXP_E(v) gcu_exp(v)
#define TANH_E(v) gcu_tanh(v)
#define SIGM_E(v) ((E)1 / ((E)1 + EXP_E(-(v))))

template <class E>
__device__ __forceinline__ E gelu_u(E v) {
    return (E)0.7978845608028654 * (v + (E)0.044715 * v * v * v);
}
__device__ __forceinline__ float gcu_gelu(float v) {
    return v * (1.0f / (1.0f + expf(-2.0f * gelu_u(v))));
}
__device__ __forceinline__ double gcu_gelu(double v) { return 0.5 * v * (1.0 + tanh(gelu_u(v))); }
#define GELU_E(v) gcu_gelu(v)

/* silu'(z) = s (1 + z (1 - s)); gelu'(z) = 0.5 (1 + t) + 0.5 z (1 - t^2) k
 * (1 + 3 c z^2) */
template <class E>
__device__ __forceinline__ E gcu_dsilu(E z) {
    E s = SIGM_E(z);
    return s * ((E)1 + z * ((E)1 - s));
}
template <class E>
__device__ __forceinline__ E gcu_dgelu(E z) {
    const E k = (E)0.7978845608028654, c = (E)0.044715;
    E t = TANH_E(k * (z + c * z * z * z));
    return (E)0.5 * ((E)1 + t) + (E)0.5 * z * ((E)1 - t * t) * k * ((E)1 + (E)3 * c * z * z);
}
#define DSILU_E(z) gcu_dsilu(z)
#define DGELU_E(z) gcu_dgelu(z)

/* The math family's helpers (issue 27): CUDA's math library in E (its f32
 * functions are within 1-4 ulp: CUDA C Programming Guide, appendix
 * "Mathematical Functions"); elu, selu, mish and exact gelu built on them. */
#define GCU_MATH1(name, ff, fd)                                                \
    __device__ __forceinline__ float name(float v) { return ff(v); }          \
    __device__ __forceinline__ double name(double v) { return fd(v); }
GCU_MATH1(gcu_sin, sinf, sin)
GCU_MATH1(gcu_cos, cosf, cos)
GCU_MATH1(gcu_tan, tanf, tan)
GCU_MATH1(gcu_asin, asinf, asin)
GCU_MATH1(gcu_acos, acosf, acos)
GCU_MATH1(gcu_atan, atanf, atan)
GCU_MATH1(gcu_erf, erff, erf)
GCU_MATH1(gcu_erfc, erfcf, erfc)
GCU_MATH1(gcu_rsqrt, rsqrtf, rsqrt)
GCU_MATH1(gcu_log1p, log1pf, log1p)
GCU_MATH1(gcu_expm1, expm1f, expm1)
GCU_MATH1(gcu_log2, log2f, log2)
GCU_MATH1(gcu_exp2, exp2f, exp2)
__device__ __forceinline__ float gcu_atan2(float y, float x) { return atan2f(y, x); }
__device__ __forceinline__ double gcu_atan2(double y, double x) { return atan2(y, x); }
__device__ __forceinline__ float gcu_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double gcu_pow(double x, double y) { return pow(x, y); }
#define SIN_E(v) gcu_sin(v)
#define COS_E(v) gcu_cos(v)
#define TAN_E(v) gcu_tan(v)
#define ASIN_E(v) gcu_asin(v)
#define ACOS_E(v) gcu_acos(v)
#define ATAN_E(v) gcu_atan(v)
#define ERF_E(v) gcu_erf(v)
#define ERFC_E(v) gcu_erfc(v)
#define RSQRT_E(v) gcu_rsqrt(v)
#define LOG1P_E(v) gcu_log1p(v)
#define EXPM1_E(v) gcu_expm1(v)
#define LOG2_E(v) gcu_log2(v)
#define EXP2_E(v) gcu_exp2(v)
#define ATAN2_E(y, x) gcu_atan2(y, x)
#define POW_E(x, y) gcu_pow(x, y)
/* elu(-0) = selu(-0) = +0, mish(-inf) = gelu(-inf) = NaN: as the CPU's */
template <class E>
__device__ __forceinline__ E gcu_elu(E x, E alpha) {
    return x > 0 ? x : x == 0 ? (E)0 : alpha * gcu_expm1(x);
}
template <class E>
__device__ __forceinline__ E gcu_selu(E x) {
    return (E)GAD_SELU_SCALE * gcu_elu(x, (E)GAD_SELU_ALPHA);
}
template <class E>
__device__ __forceinline__ E gcu_mish(E x) {
    return x * gcu_tanh(x > (E)20 ? x : gcu_log1p(gcu_exp(x)));
}
template <class E>
__device__ __forceinline__ E gcu_dmish(E x) {
    E t = gcu_tanh(x > (E)20 ? x : gcu_log1p(gcu_exp(x)));
    return t + x * ((E)1 - t * t) / ((E)1 + gcu_exp(-x));
}
template <class E>
__device__ __forceinline__ E gcu_gelu_erf(E x) {
    return (E)0.5 * x * gcu_erfc(x * (E)-0.7071067811865476);
}
template <class E>
__device__ __forceinline__ E gcu_dgelu_erf(E x) {
    return (E)0.5 * gcu_erfc(x * (E)-0.7071067811865476) +
           x * gcu_exp((E)-0.5 * x * x) * (E)0.3989422804014327;
}
#define ELU_E(v, al) gcu_elu(v, al)
#define SELU_E(v) gcu_selu(v)
#define MISH_E(v) gcu_mish(v)
#define DMISH_E(v) gcu_dmish(v)
#define GELU_ERF_E(v) gcu_gelu_erf(v)
#define DGELU_ERF_E(v) gcu_dgelu_erf(v)

/* ------------------------------------------------------------- functors */

#define UNARY(ID, name, args, pwords, save, fwd, ...)                          \
    struct uf_##ID {                                                           \
        template <class E>                                                     \
        __device__ __forceinline__ E operator()(E x, E a, E b) const {         \
            (void)a;                                                           \
            (void)b;                                                           \
            return (fwd);                                                      \
        }                                                                      \
    };
#define UKERNEL(ID, fwd, cost) UNARY(ID, _, 0, 0, NONE, fwd)
#include "backend/elementwise.def"

#define BINARY(ID, name, fwd, ...)                                             \
    struct bf_##ID {                                                           \
        template <class E>                                                     \
        __device__ __forceinline__ E operator()(E a, E b) const {              \
            return (fwd);                                                      \
        }                                                                      \
    };
#define BKERNEL(ID, fwd) BINARY(ID, _, fwd)
#include "backend/elementwise.def"

/* a gradient row reads g and the saved value under its name, x or y */
#define DEF_GRAD(ID, grad)                                                     \
    struct gf_##ID {                                                           \
        template <class E>                                                     \
        __device__ __forceinline__ E operator()(E g, E v, E a, E b) const {    \
            const E x = v, y = v;                                              \
            (void)x;                                                           \
            (void)y;                                                           \
            (void)a;                                                           \
            (void)b;                                                           \
            return (grad);                                                     \
        }                                                                      \
    };
#define UNARY(ID, name, args, pwords, save, fwd, cost, vjp, grad, ...)         \
    GAD_EW_##vjp(DEF_GRAD(ID, grad))
#include "backend/elementwise.def"

/* -------------------------------------------------------------- kernels */

/* Contiguous operands on 16-byte boundaries are read and written 16 bytes
 * per thread and access (NVIDIA's CUDA C++ Best Practices Guide: 16-byte accesses,
 * coalesced across the warp), the last n mod W elements one by one. The
 * test is on pointers every thread shares: no divergence. */
template <class E>
struct alignas(16) gcu_vec {
    E v[16 / sizeof(E)];
};
#define GCU_ALIGNED(p) ((((uintptr_t)(p)) & 15) == 0)

template <class E, class F>
__global__ void k_unary(F f, gcu_iter it, const E *x, E *y, E a, E b) {
    if (it.nd == 1 && it.st[0][0] == 1) {
        constexpr int W = 16 / sizeof(E);
        int64_t nv = GCU_ALIGNED(x) && GCU_ALIGNED(y) ? it.n / W : 0;
        const gcu_vec<E> *xv = (const gcu_vec<E> *)x;
        gcu_vec<E> *yv = (gcu_vec<E> *)y;
        GCU_FOR(i, nv) {
            gcu_vec<E> t = xv[i];
#pragma unroll
            for (int k = 0; k < W; k++) t.v[k] = f(t.v[k], a, b);
            yv[i] = t;
        }
        GCU_FOR(i, it.n - nv * W) {
            int64_t j = nv * W + i;
            y[j] = f(x[j], a, b);
        }
        return;
    }
    GCU_FOR(i, it.n) {
        int64_t off[2];
        gcu_offsets(it, i, 1, off);
        y[i] = f(x[off[0]], a, b);
    }
}

template <class E, class F>
__global__ void k_binary(F f, gcu_iter it, const E *x0, const E *x1, E *y) {
    if (it.nd == 1 && it.st[0][0] == 1 && it.st[1][0] == 1) {
        constexpr int W = 16 / sizeof(E);
        int64_t nv = GCU_ALIGNED(x0) && GCU_ALIGNED(x1) && GCU_ALIGNED(y) ? it.n / W : 0;
        const gcu_vec<E> *av = (const gcu_vec<E> *)x0, *bv = (const gcu_vec<E> *)x1;
        gcu_vec<E> *yv = (gcu_vec<E> *)y;
        GCU_FOR(i, nv) {
            gcu_vec<E> p = av[i], q = bv[i];
#pragma unroll
            for (int k = 0; k < W; k++) p.v[k] = f(p.v[k], q.v[k]);
            yv[i] = p;
        }
        GCU_FOR(i, it.n - nv * W) {
            int64_t j = nv * W + i;
            y[j] = f(x0[j], x1[j]);
        }
        return;
    }
    GCU_FOR(i, it.n) {
        int64_t off[2];
        gcu_offsets(it, i, 2, off);
        y[i] = f(x0[off[0]], x1[off[1]]);
    }
}

template <class E, class F>
__global__ void k_grad(F f, gcu_iter it, const E *g, const E *v, E *y, E a, E b) {
    if (it.nd == 1 && it.st[0][0] == 1 && it.st[1][0] == 1) {
        constexpr int W = 16 / sizeof(E);
        int64_t nv = GCU_ALIGNED(g) && GCU_ALIGNED(v) && GCU_ALIGNED(y) ? it.n / W : 0;
        const gcu_vec<E> *gv = (const gcu_vec<E> *)g, *vv = (const gcu_vec<E> *)v;
        gcu_vec<E> *yv = (gcu_vec<E> *)y;
        GCU_FOR(i, nv) {
            gcu_vec<E> p = gv[i], q = vv[i];
#pragma unroll
            for (int k = 0; k < W; k++) p.v[k] = f(p.v[k], q.v[k], a, b);
            yv[i] = p;
        }
        GCU_FOR(i, it.n - nv * W) {
            int64_t j = nv * W + i;
            y[j] = f(g[j], v[j], a, b);
        }
        return;
    }
    GCU_FOR(i, it.n) {
        int64_t off[2];
        gcu_offsets(it, i, 2, off);
        y[i] = f(g[off[0]], v[off[1]], a, b);
    }
}

template <class F>
static void launch_unary(cudaStream_t s, int dtype, const gcu_iter *it, const void *x, void *y,
                         double a, double b) {
    unsigned g = gcu_blocks(it->n);
    if (dtype == GAD_F32)
        k_unary<float, F><<<g, GCU_THREADS, 0, s>>>(F(), *it, (const float *)x, (float *)y,
                                                    (float)a, (float)b);
    else
        k_unary<double, F><<<g, GCU_THREADS, 0, s>>>(F(), *it, (const double *)x, (double *)y, a, b);
}

template <class F>
static void launch_binary(cudaStream_t s, int dtype, const gcu_iter *it, const void *x0,
                          const void *x1, void *y) {
    unsigned g = gcu_blocks(it->n);
    if (dtype == GAD_F32)
        k_binary<float, F><<<g, GCU_THREADS, 0, s>>>(F(), *it, (const float *)x0,
                                                     (const float *)x1, (float *)y);
    else
        k_binary<double, F><<<g, GCU_THREADS, 0, s>>>(F(), *it, (const double *)x0,
                                                      (const double *)x1, (double *)y);
}

template <class F>
static void launch_grad(cudaStream_t s, int dtype, const gcu_iter *it, const void *gy,
                        const void *v, void *y, double a, double b) {
    unsigned g = gcu_blocks(it->n);
    if (dtype == GAD_F32)
        k_grad<float, F><<<g, GCU_THREADS, 0, s>>>(F(), *it, (const float *)gy, (const float *)v,
                                                   (float *)y, (float)a, (float)b);
    else
        k_grad<double, F><<<g, GCU_THREADS, 0, s>>>(F(), *it, (const double *)gy,
                                                    (const double *)v, (double *)y, a, b);
}

#endif
