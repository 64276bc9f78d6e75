/* elementwise.c: unary and binary elementwise kernels over any strides,
 * broadcasting by zero strides (SPEC §3.1, §3.2). */
#include "cpu.h"
#include "iter.h"

#include <tgmath.h>

/* ---------------------------------------------------------------- unary
 * Each body computes the result from v (of the element type E) and the
 * parameters a, b (already converted to E). */
#define U_NEG (-v)
#define U_SQUARE (v * v)
#define U_RELU (v > 0 ? v : (E)0)
#define U_TANH tanh(v)
#define U_EXP exp(v)
#define U_LOG log(v)
#define U_SQRT sqrt(v)
#define U_ABS fabs(v)
#define U_SIGN ((E)((v > 0) - (v < 0)))
#define U_SIGMOID ((E)1 / ((E)1 + exp(-v)))
#define U_SILU (v / ((E)1 + exp(-v)))
/* tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
#define U_GELU                                                                 \
    ((E)0.5 * v *                                                              \
     ((E)1 + tanh((E)0.7978845608028654 * (v + (E)0.044715 * v * v * v))))
#define U_SOFTPLUS (v > (E)20 ? v : log1p(exp(v)))
#define U_LEAKY_RELU (v >= 0 ? v : a * v)
#define U_CLAMP (v < a ? a : (v > b ? b : v))
#define U_MUL_SCALAR (v * a)
#define U_ADD_SCALAR (v + a)
#define U_POW_SCALAR (a == (E)2 ? v * v : a == (E)0.5 ? sqrt(v) : pow(v, a))
#define U_RELU_MASK ((E)(v > 0))
#define U_LEAKY_MASK (v >= 0 ? (E)1 : a)
#define U_CLAMP_MASK ((E)(v >= a && v <= b))

typedef void (*ukern)(int64_t n, const void *x, int64_t sx, void *y,
                      const gad_uparams *p);

#define DEF_UNARY(id, T, sfx)                                                  \
    static void uk_##id##_##sfx(int64_t n, const void *xp, int64_t sx,        \
                                void *yp, const gad_uparams *p) {             \
        typedef T E;                                                           \
        const E *restrict x = xp;                                              \
        E *restrict y = yp;                                                    \
        const E a = (E)p->a, b = (E)p->b;                                      \
        (void)a;                                                               \
        (void)b;                                                               \
        if (sx == 1)                                                           \
            for (int64_t i = 0; i < n; i++) {                                  \
                E v = x[i];                                                    \
                y[i] = U_##id;                                                 \
            }                                                                  \
        else                                                                   \
            for (int64_t i = 0; i < n; i++) {                                  \
                E v = x[i * sx];                                               \
                y[i] = U_##id;                                                 \
            }                                                                  \
    }
#define DEF_UNARY_BOTH(id) DEF_UNARY(id, float, f32) DEF_UNARY(id, double, f64)
GAD_UNARY_KERNELS(DEF_UNARY_BOTH)

static const ukern unary_table[GAD_UK_COUNT_][2] = {
#define UNARY_ENTRY(id) {uk_##id##_f32, uk_##id##_f64},
    GAD_UNARY_KERNELS(UNARY_ENTRY)
#undef UNARY_ENTRY
};

/* Element ranges of an output in row-major order, walked over an iterator
 * whose operands are the inputs. */
typedef struct ew_ctx {
    gad_iter it;
    const char *in[2];
    char *out;
    size_t es;
    ukern uk;
    void (*bk)(int64_t, const void *, int64_t, const void *, int64_t, void *);
    const gad_uparams *p;
} ew_ctx;

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
        char *y = c->out + (size_t)pos * c->es;
        if (c->uk) {
            c->uk(len, x0, s0, y, c->p);
        } else {
            const char *x1 = c->in[1] + (off[1] + j * s1) * (int64_t)c->es;
            c->bk(len, x0, s0, x1, s1, y);
        }
        pos += len;
        j = 0;
        gad__iter_next(it, idx, off);
    }
}

/* Below this many elements per thread, extra threads cost more than they
 * save. */
#define EW_GRAIN 16384

void gad__k_unary(gad_ukernel k, const gad_tensor *x, gad_tensor *y,
                  const gad_uparams *p) {
    if (x->numel == 0) return;
    static const gad_uparams none = {0, 0};
    ew_ctx c;
    c.uk = unary_table[k][x->dtype == GAD_F64];
    c.bk = NULL;
    c.p = p ? p : &none;
    c.es = gad__dsize(x->dtype);
    c.in[0] = gad__ptr(x);
    c.out = gad__ptr(y);
    if (x->contig && x->numel < 2 * EW_GRAIN) {
        c.uk(x->numel, c.in[0], 1, c.out, c.p); /* the small fast path */
        return;
    }
    const int64_t *strides[1] = {x->strides};
    gad__iter_init(&c.it, x->shape, x->rank, 1, strides);
    gad__parallel_for(x->numel, EW_GRAIN, ew_range, &c);
}

/* --------------------------------------------------------------- binary */

#define B_ADD(x, y) ((x) + (y))
#define B_SUB(x, y) ((x) - (y))
#define B_MUL(x, y) ((x) * (y))
#define B_DIV(x, y) ((x) / (y))
/* x != x is true only for NaN, which then wins */
#define B_MAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define B_MIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))
#define B_MAX_W(x, y) (((x) > (y) || (x) != (x)) ? 1 : (x) == (y) ? 0.5f : 0)
#define B_MIN_W(x, y) (((x) < (y) || (x) != (x)) ? 1 : (x) == (y) ? 0.5f : 0)

#define DEF_BINARY(id, T, sfx)                                                 \
    static void bk_##id##_##sfx(int64_t n, const void *ap, int64_t sa,        \
                                const void *bp, int64_t sb, void *yp) {       \
        const T *restrict a = ap, *restrict b = bp;                            \
        T *restrict y = yp;                                                    \
        if (sa == 1 && sb == 1)                                                \
            for (int64_t i = 0; i < n; i++) y[i] = B_##id(a[i], b[i]);           \
        else if (sb == 0) {                                                    \
            const T bv = b[0];                                                 \
            if (sa == 1)                                                       \
                for (int64_t i = 0; i < n; i++) y[i] = B_##id(a[i], bv);         \
            else                                                               \
                for (int64_t i = 0; i < n; i++) y[i] = B_##id(a[i * sa], bv);    \
        } else if (sa == 0) {                                                  \
            const T av = a[0];                                                 \
            for (int64_t i = 0; i < n; i++) y[i] = B_##id(av, b[i * sb]);        \
        } else                                                                 \
            for (int64_t i = 0; i < n; i++) y[i] = B_##id(a[i * sa], b[i * sb]); \
    }
#define DEF_BINARY_BOTH(id) DEF_BINARY(id, float, f32) DEF_BINARY(id, double, f64)
GAD_BINARY_KERNELS(DEF_BINARY_BOTH)

typedef void (*bkern)(int64_t, const void *, int64_t, const void *, int64_t,
                      void *);
static const bkern binary_table[GAD_BK_COUNT_][2] = {
#define BINARY_ENTRY(id) {bk_##id##_f32, bk_##id##_f64},
    GAD_BINARY_KERNELS(BINARY_ENTRY)
#undef BINARY_ENTRY
};

void gad__k_binary(gad_bkernel k, const gad_tensor *a, const gad_tensor *b,
                   gad_tensor *y) {
    if (y->numel == 0) return;
    ew_ctx c;
    c.uk = NULL;
    c.bk = binary_table[k][y->dtype == GAD_F64];
    c.p = NULL;
    c.es = gad__dsize(y->dtype);
    c.in[0] = gad__ptr(a);
    c.in[1] = gad__ptr(b);
    c.out = gad__ptr(y);
    if (a->contig && b->contig && a->numel == y->numel &&
        b->numel == y->numel && y->numel < 2 * EW_GRAIN) {
        c.bk(y->numel, c.in[0], 1, c.in[1], 1, c.out);
        return;
    }
    int64_t sa[GAD_MAX_RANK], sb[GAD_MAX_RANK];
    gad__broadcast_strides(a, y->shape, y->rank, sa);
    gad__broadcast_strides(b, y->shape, y->rank, sb);
    const int64_t *strides[2] = {sa, sb};
    gad__iter_init(&c.it, y->shape, y->rank, 2, strides);
    gad__parallel_for(y->numel, EW_GRAIN, ew_range, &c);
}

