/* elementwise.c: unary, binary and gradient elementwise kernels over any
 * strides, broadcasting by zero strides (SPEC §3.1, §3.2). The loops are
 * written for the compiler to vectorize; each kernel is compiled for
 * AVX-512 and AVX2 as well as the baseline and picked at load time
 * (GAD_CLONES). f32 exp and tanh come from vmath.h, f64 from libm. */
#include "cpu.h"
#include "cpu/vmath.h"
#include "cpu/vmath_ext.h"
#include "iter.h"

#include <tgmath.h>

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
typedef void (*ukern)(int64_t n, const void *x, int64_t sx, void *y,
                      const gad_uparams *p);

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
    DEF_UNARY(uk_##ID##_f32, float, fwd, GAD_UK_##ID)                          \
    DEF_UNARY(uk_##ID##_f64, double, fwd, GAD_UK_##ID)
#define UNARY(ID, name, args, pwords, save, fwd, ...) DEF_UNARY_BOTH(ID, fwd)
#define UKERNEL(ID, fwd, cost) DEF_UNARY_BOTH(ID, fwd)
#include "backend/elementwise.def"

static const ukern unary_table[GAD_UK_COUNT_][2] = {
#define UNARY(ID, ...) [GAD_UK_##ID] = {uk_##ID##_f32, uk_##ID##_f64},
#define UKERNEL(ID, ...) [GAD_UK_##ID] = {uk_##ID##_f32, uk_##ID##_f64},
#include "backend/elementwise.def"
};

static const bool unary_light[GAD_UK_COUNT_] = {
#define UNARY(ID, name, args, pwords, save, fwd, cost, ...) [GAD_UK_##ID] = IS_LIGHT_##cost,
#define UKERNEL(ID, fwd, cost) [GAD_UK_##ID] = IS_LIGHT_##cost,
#include "backend/elementwise.def"
};

/* ---------------------------------------------------- binary and gradient
 * out = expr of two elements: a binary kernel's a and b (from its two
 * inputs), a gradient kernel's g (the upstream gradient, from the first)
 * and x or y (the op's saved input or output, from the second) with the
 * op's parameters a, b. A stride 0 is a broadcast input. */
typedef void (*bkern)(int64_t, const void *, int64_t, const void *, int64_t, void *,
                      const gad_uparams *);

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
    DEF_LOOP2(bk_##ID##_f32, float, a, b, NO_PARAMS, fwd, (void)0)             \
    DEF_LOOP2(bk_##ID##_f64, double, a, b, NO_PARAMS, fwd, (void)0)
#define DEF_GRAD_BOTH(ID, v, grad)                                             \
    DEF_LOOP2(gk_##ID##_f32, float, g, v, GRAD_PARAMS, grad,                   \
              fix_grad(GAD_GK_##ID, n, p0, s0, p1, s1, yp))                    \
    DEF_LOOP2(gk_##ID##_f64, double, g, v, GRAD_PARAMS, grad, (void)0)
#define BINARY(ID, name, fwd, ...) DEF_BINARY_BOTH(ID, fwd)
#define BKERNEL(ID, fwd) DEF_BINARY_BOTH(ID, fwd)
#define UNARY(ID, name, args, pwords, save, fwd, cost, vjp, grad, ...)         \
    GAD_EW_##vjp(DEF_GRAD_BOTH(ID, SAVED_##save, grad))
#include "backend/elementwise.def"

static const bkern binary_table[GAD_BK_COUNT_][2] = {
#define BINARY(ID, ...) [GAD_BK_##ID] = {bk_##ID##_f32, bk_##ID##_f64},
#define BKERNEL(ID, ...) [GAD_BK_##ID] = {bk_##ID##_f32, bk_##ID##_f64},
#include "backend/elementwise.def"
};

static const bkern grad_table[GAD_GK_COUNT_][2] = {
#define UNARY(ID, name, args, pwords, save, fwd, cost, vjp, ...)               \
    GAD_EW_##vjp([GAD_GK_##ID] = {gk_##ID##_f32, gk_##ID##_f64},)
#include "backend/elementwise.def"
};

static const bool grad_light[GAD_GK_COUNT_] = {
#define UNARY(ID, name, args, pwords, save, fwd, cost, vjp, grad, gcost, ...)  \
    GAD_EW_##vjp([GAD_GK_##ID] = IS_LIGHT_##gcost,)
#include "backend/elementwise.def"
};

/* ---------------------------------------------------------------- drivers */

/* Element ranges of an output in row-major order, walked over an iterator
 * whose operands are the inputs. */
typedef struct ew_ctx {
    gad_iter it;
    const char *in[2];
    char *out;
    size_t es;
    ukern uk;
    bkern bk;
    gad_vkernel vk; /* replaces uk where the input is contiguous */
    const gad_uparams *p;
    bool stream; /* write the output with streaming stores */
} ew_ctx;

/* Outputs of at least this many bytes are written with streaming stores
 * (stream.c): far larger than the L2 of the cores that write them, they
 * would be evicted before anyone reads them back, and skipping the
 * read-for-ownership saves a quarter of c = a + b's memory traffic. */
#define EW_STREAM_BYTES ((int64_t)16 << 20)
/* Streamed outputs are computed a tile at a time into L1, then stored. A
 * kernel bound by arithmetic (exp, tanh, pow) then stalls on each tile's
 * burst of stores, where storing as it goes would hide them: those, the
 * HEAVY ones of elementwise.def's cost and gcost fields, keep ordinary
 * stores unless written by hand (gad_vkernel). Binary kernels, div's
 * included, all stream. */
#define EW_TILE 1024

/* The hand-written kernel of (k, dtype), if this CPU runs one. */
static gad_vkernel ew_vkernel(gad_ukernel k, int dtype) {
    return k == GAD_UK_GELU && dtype == GAD_F32 ? gad__vk_gelu_f32() : NULL;
}

static void ew_call(const ew_ctx *c, int64_t len, const char *x0, int64_t s0,
                    const char *x1, int64_t s1, char *y) {
    if (c->uk) c->uk(len, x0, s0, y, c->p);
    else c->bk(len, x0, s0, x1, s1, y, c->p);
}

static void ew_call_stream(const ew_ctx *c, int64_t len, const char *x0, int64_t s0,
                           const char *x1, int64_t s1, char *y) {
    _Alignas(64) char tile[EW_TILE];
    const int64_t es = (int64_t)c->es, per = EW_TILE / es;
    /* The first tile ends where a cache line of y does, so that every
     * later tile starts on one and streams whole lines. */
    int64_t k = (int64_t)((-(uintptr_t)y & 63) / (uintptr_t)es);
    if (k == 0) k = per;
    for (int64_t i = 0; i < len; i += k, k = per) {
        if (k > len - i) k = len - i;
        ew_call(c, k, x0 + i * s0 * es, s0, x1 ? x1 + i * s1 * es : NULL, s1, tile);
        gad__stream_store(y + i * es, tile, (size_t)(k * es));
    }
}

/* A hand-written kernel reads contiguous input: strided input is gathered
 * a tile at a time first, so that a result never depends on the layout. */
static void ew_call_vk(const ew_ctx *c, int64_t len, const float *x, int64_t sx, float *y) {
    if (sx == 1) {
        c->vk(len, x, y, c->stream);
        return;
    }
    _Alignas(64) float tile[EW_TILE / sizeof(float)];
    const int64_t per = EW_TILE / (int64_t)sizeof(float);
    for (int64_t i = 0; i < len; i += per) {
        int64_t k = len - i < per ? len - i : per;
        for (int64_t j = 0; j < k; j++) tile[j] = x[(i + j) * sx];
        c->vk(k, tile, y + i, c->stream);
    }
}

static void ew_range(void *vctx, int64_t lo, int64_t hi) {
    ew_ctx *c = vctx;
    const gad_iter *it = &c->it;
    int64_t inner = it->inner, nd = it->nd;
    int64_t idx[GAD_MAX_RANK], off[GAD_ITER_MAXOPS];
    int64_t o = lo / inner, j = lo % inner, pos = lo;
    gad__iter_seek(it, o, idx, off);
    int64_t s0 = it->strides[0][nd - 1], s1 = it->nops > 1 ? it->strides[1][nd - 1] : 0;
    while (pos < hi) {
        int64_t len = inner - j < hi - pos ? inner - j : hi - pos;
        const char *x0 = c->in[0] + (off[0] + j * s0) * (int64_t)c->es; /* may step back */
        const char *x1 = c->bk ? c->in[1] + (off[1] + j * s1) * (int64_t)c->es : NULL;
        char *y = c->out + (size_t)pos * c->es;
        if (c->vk)
            ew_call_vk(c, len, (const float *)x0, s0, (float *)y);
        else
            (c->stream ? ew_call_stream : ew_call)(c, len, x0, s0, x1, s1, y);
        pos += len;
        j = 0;
        gad__iter_next(it, idx, off);
    }
    if (c->stream) gad__stream_fence(); /* before the threads join */
}

/* Below this many elements per thread, extra threads cost more than they
 * save. */
#define EW_GRAIN 16384

static const gad_uparams no_params = {0, 0};

GAD_HOT void gad__k_unary(gad_ukernel k, const gad_tensor *x, gad_tensor *y,
                  const gad_uparams *p) {
    if (x->numel == 0) return;
    ew_ctx c;
    c.uk = unary_table[k][x->dtype == GAD_F64];
    c.bk = NULL;
    c.p = p ? p : &no_params;
    c.es = gad__dsize(x->dtype);
    c.in[0] = gad__ptr(x);
    c.out = gad__ptr(y);
    c.vk = ew_vkernel(k, x->dtype);
    c.stream = x->numel * (int64_t)c.es >= EW_STREAM_BYTES && (unary_light[k] || c.vk);
    if (x->contig && x->numel < 2 * EW_GRAIN) { /* the small fast path */
        if (c.vk) ew_call_vk(&c, x->numel, (const float *)c.in[0], 1, (float *)c.out);
        else c.uk(x->numel, c.in[0], 1, c.out, c.p);
        return;
    }
    const int64_t *strides[1] = {x->strides};
    gad__iter_init(&c.it, x->shape, x->rank, 1, strides);
    gad__parallel_for(x->numel, EW_GRAIN, ew_range, &c);
}

GAD_HOT static void run_binary(bkern bk, bool light, const gad_tensor *a, const gad_tensor *b,
                       gad_tensor *y, const gad_uparams *p) {
    if (y->numel == 0) return;
    if (a->contig && b->contig && a->numel == y->numel && b->numel == y->numel &&
        y->numel < 2 * EW_GRAIN) { /* the small fast path */
        bk(y->numel, gad__ptr(a), 1, gad__ptr(b), 1, gad__ptr(y), p ? p : &no_params);
        return;
    }
    ew_ctx c;
    c.uk = NULL;
    c.bk = bk;
    c.p = p ? p : &no_params;
    c.es = gad__dsize(y->dtype);
    c.in[0] = gad__ptr(a);
    c.in[1] = gad__ptr(b);
    c.out = gad__ptr(y);
    c.vk = NULL;
    c.stream = y->numel * (int64_t)c.es >= EW_STREAM_BYTES && light;
    int64_t sa[GAD_MAX_RANK], sb[GAD_MAX_RANK];
    gad__broadcast_strides(a, y->shape, y->rank, sa);
    gad__broadcast_strides(b, y->shape, y->rank, sb);
    const int64_t *strides[2] = {sa, sb};
    gad__iter_init(&c.it, y->shape, y->rank, 2, strides);
    gad__parallel_for(y->numel, EW_GRAIN, ew_range, &c);
}

GAD_HOT void gad__k_binary(gad_bkernel k, const gad_tensor *a, const gad_tensor *b,
                   gad_tensor *y) {
    run_binary(binary_table[k][y->dtype == GAD_F64], true, a, b, y, NULL);
}

GAD_HOT void gad__k_grad(gad_gkernel k, const gad_tensor *gy, const gad_tensor *v, gad_tensor *out,
                 const gad_uparams *p) {
    run_binary(grad_table[k][out->dtype == GAD_F64], grad_light[k], gy, v, out, p);
}
