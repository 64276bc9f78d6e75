/* elementwise.c: binary ops with broadcasting and unary activations (SPEC
 * §3.1, §3.2), with their VJPs (§3.3) and gradcheck samples. */
#include "ops_int.h"

#include <math.h>
#include <stdio.h>

/* The gradient of input i, summed back to that input's shape. */
#define UNB(g, i) gad__unbroadcast((g), n->parents[i]->shape, n->parents[i]->rank)

/* Set gin[i] when needed; a NULL result means an error was recorded. */
#define GIN(i, expr)                                                           \
    do {                                                                       \
        if (need[i] && !(gin[i] = (expr))) return -1;                          \
    } while (0)

/* ------------------------------------------------------------------ binary */

/* What a binary op's VJP needs saved: nothing (add, sub); for mul, each
 * input only when the other one needs a gradient; for div, b always and a
 * when b needs a gradient; both (maximum, minimum). */
enum { KEEP_NONE, KEEP_MUL, KEEP_DIV, KEEP_BOTH };

static gad_tensor *binary(const char *op, const gad_op_info *info, int id,
                          gad_bkernel k, gad_tensor *a, gad_tensor *b, int keep) {
    if (!a || !b) return gad__null_arg(op);
    if (gad__need_same_dtype(op, a, b) || gad__need_float(op, a)) return NULL;
    if (GAD_UNLIKELY(a->dev != b->dev)) return gad__err_device(op, a->dev, b->dev);
    gad_tensor *y;
    if (gad__same_shape(a->shape, a->rank, b->shape, b->rank)) {
        y = gad__tensor_like(op, a);
    } else {
        int64_t shape[GAD_MAX_RANK];
        int rank;
        if (gad__broadcast_shapes(op, a->shape, a->rank, b->shape, b->rank, shape,
                                  &rank))
            return NULL;
        y = gad__tensor_new(op, a->dev, a->dtype, shape, rank);
    }
    if (!y) return NULL;
    gad__k_binary(k, a, b, y);
    gad_tensor *in[2] = {a, b}, *save[2] = {NULL, NULL};
    bool ga = a->node != NULL, gb = b->node != NULL;
    if (keep == KEEP_BOTH || (keep == KEEP_MUL && gb) || (keep == KEEP_DIV && gb)) save[0] = a;
    if (keep == KEEP_BOTH || (keep == KEEP_MUL && ga) || keep == KEEP_DIV) save[1] = b;
    return gad__own(gad__track(y, info, id, in, 2, save, keep == KEEP_NONE ? 0 : 2));
}

gad_tensor *gad_add(gad_tensor *a, gad_tensor *b) {
    return binary("add", GAD_OP(ADD), GAD_BK_ADD, a, b, KEEP_NONE);
}
gad_tensor *gad_sub(gad_tensor *a, gad_tensor *b) {
    return binary("sub", GAD_OP(SUB), GAD_BK_SUB, a, b, KEEP_NONE);
}
gad_tensor *gad_mul(gad_tensor *a, gad_tensor *b) {
    return binary("mul", GAD_OP(MUL), GAD_BK_MUL, a, b, KEEP_MUL);
}
gad_tensor *gad_div(gad_tensor *a, gad_tensor *b) {
    return binary("div", GAD_OP(DIV), GAD_BK_DIV, a, b, KEEP_DIV);
}
gad_tensor *gad_maximum(gad_tensor *a, gad_tensor *b) {
    return binary("maximum", GAD_OP(MAXIMUM), GAD_BK_MAX, a, b, KEEP_BOTH);
}
gad_tensor *gad_minimum(gad_tensor *a, gad_tensor *b) {
    return binary("minimum", GAD_OP(MINIMUM), GAD_BK_MIN, a, b, KEEP_BOTH);
}

int gad__vjp_add(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    GIN(0, UNB(gy, 0));
    GIN(1, UNB(gy, 1));
    return 0;
}

int gad__vjp_sub(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    GIN(0, UNB(gy, 0));
    GIN(1, UNB(gad_neg(gy), 1));
    return 0;
}

/* A saved input for a VJP: the alias itself when the VJP runs off the tape,
 * re-attached to the tape (a new tensor) under create_graph. */
static gad_tensor *saved_in(gad_node *n, int i) {
    return gad_grad_enabled() ? gad__saved(n, i) : n->saved[i];
}

int gad__vjp_mul(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    GIN(0, UNB(gad_mul(gy, saved_in(n, 1)), 0));
    GIN(1, UNB(gad_mul(gy, saved_in(n, 0)), 1));
    return 0;
}

/* d(a/b) = da/b - a db/b^2 */
int gad__vjp_div(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    gad_tensor *b = gad__saved(n, 1);
    GIN(0, UNB(gad_div(gy, b), 0));
    GIN(1, UNB(gad_neg(gad_div(gad_mul(gy, gad__saved(n, 0)), gad_square(b))), 1));
    return 0;
}

/* The winner takes the gradient; a tie splits it in halves. */
static int vjp_extremum(gad_node *n, gad_tensor *gy, const bool *need,
                        gad_tensor **gin, gad_bkernel share) {
    gad_tensor *w = gad__const_binary(share, n->saved[0], n->saved[1]);
    if (!w) return -1;
    gad_tensor *ga = gad_mul(gy, w);
    GIN(0, UNB(ga, 0));
    GIN(1, UNB(gad_sub(gy, ga), 1));
    return 0;
}

int gad__vjp_maximum(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    return vjp_extremum(n, gy, need, gin, GAD_BK_MAX_W);
}
int gad__vjp_minimum(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    return vjp_extremum(n, gy, need, gin, GAD_BK_MIN_W);
}

/* ------------------------------------------------------------------- unary */

/* Unary op: save kinds (what the VJP needs). */
enum { SAVE_NONE, SAVE_X, SAVE_Y };

static gad_tensor *unary(const char *op, const gad_op_info *info, int id,
                         gad_ukernel k, gad_tensor *x, double pa, double pb,
                         int save) {
    GAD_NEED(op, x);
    if (gad__need_float(op, x)) return NULL;
    gad_tensor *y = gad__tensor_like(op, x);
    if (!y) return NULL;
    gad_uparams p = {pa, pb};
    gad__k_unary(k, x, y, &p);
    gad_tensor *s = save == SAVE_X ? x : y;
    y = gad__track(y, info, id, &x, 1, &s, save != SAVE_NONE);
    if (y && y->node) { /* the parameters the op keeps (ops.def) */
        double pv[2] = {pa, pb};
        for (int i = 0; i < y->node->pwords; i++) GAD_NP(y->node)->d[i] = pv[i];
    }
    return gad__own(y);
}

#define UNARY_OP(fn, name, ID, save)                                           \
    gad_tensor *fn(gad_tensor *x) {                                            \
        return unary(name, GAD_OP(ID), GAD_UK_##ID, x, 0, 0, save);           \
    }
UNARY_OP(gad_neg, "neg", NEG, SAVE_NONE)
UNARY_OP(gad_square, "square", SQUARE, SAVE_X)
UNARY_OP(gad_relu, "relu", RELU, SAVE_X)
UNARY_OP(gad_tanh, "tanh", TANH, SAVE_Y)
UNARY_OP(gad_exp, "exp", EXP, SAVE_Y)
UNARY_OP(gad_log, "log", LOG, SAVE_X)
UNARY_OP(gad_sqrt, "sqrt", SQRT, SAVE_Y)
UNARY_OP(gad_abs, "abs", ABS, SAVE_X)
UNARY_OP(gad_sign, "sign", SIGN, SAVE_NONE)
UNARY_OP(gad_sigmoid, "sigmoid", SIGMOID, SAVE_Y)
UNARY_OP(gad_silu, "silu", SILU, SAVE_X)
UNARY_OP(gad_gelu, "gelu", GELU, SAVE_X)
UNARY_OP(gad_softplus, "softplus", SOFTPLUS, SAVE_X)

gad_tensor *gad_mul_scalar(gad_tensor *x, double s) {
    return unary("mul_scalar", GAD_OP(MUL_SCALAR), GAD_UK_MUL_SCALAR, x, s, 0, SAVE_NONE);
}
gad_tensor *gad_add_scalar(gad_tensor *x, double s) {
    return unary("add_scalar", GAD_OP(ADD_SCALAR), GAD_UK_ADD_SCALAR, x, s, 0, SAVE_NONE);
}
gad_tensor *gad_pow_scalar(gad_tensor *x, double p) {
    return unary("pow_scalar", GAD_OP(POW_SCALAR), GAD_UK_POW_SCALAR, x, p, 0, SAVE_X);
}
gad_tensor *gad_leaky_relu(gad_tensor *x, double slope) {
    return unary("leaky_relu", GAD_OP(LEAKY_RELU), GAD_UK_LEAKY_RELU, x, slope, 0, SAVE_X);
}

gad_tensor *gad_clamp(gad_tensor *x, double lo, double hi) {
    GAD_NEED("clamp", x);
    if (isnan(lo) || isnan(hi) || lo > hi)
        return gad__err(GAD_ERR_DOMAIN, "clamp",
                        "bounds must be ordered and not NaN, got [%g, %g]", lo, hi);
    return unary("clamp", GAD_OP(CLAMP), GAD_UK_CLAMP, x, lo, hi, SAVE_X);
}

/* gy * f'(v) in one kernel pass, off the tape (first-order VJPs). */
static gad_tensor *grad_kernel(gad_gkernel k, gad_tensor *gy, gad_tensor *v, double a, double b) {
    gad_tensor *out = gad__tensor_like("vjp", v);
    if (!out) return NULL;
    gad_uparams p = {a, b};
    gad__k_grad(k, gy, v, out, &p);
    return gad__own(out);
}

/* The VJP of a unary op: gy * f'(v) with v the saved x or y. First order
 * (grad mode off, as the engine runs VJPs without create_graph): one fused
 * kernel (K). With create_graph: the derivative dexpr built from tracked
 * ops on the saved value re-attached to the tape, so that it is
 * differentiable again. */
#define UNARY_VJP(name, K, dexpr)                                              \
    int gad__vjp_##name(gad_node *n, gad_tensor *gy, const bool *need,         \
                        gad_tensor **gin) {                                    \
        (void)need;                                                            \
        double a = gad__node_d(n, 0), b = gad__node_d(n, 1);                   \
        if (!gad_grad_enabled())                                               \
            return (gin[0] = grad_kernel(GAD_GK_##K, gy, n->saved[0], a, b)) ? 0 : -1; \
        gad_tensor *v = gad__saved(n, 0); /* x or y, as the op saved */       \
        if (!v) return -1;                                                     \
        return (gin[0] = gad_mul(gy, (dexpr))) ? 0 : -1;                       \
    }

int gad__vjp_neg(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)n, (void)need;
    return (gin[0] = gad_neg(gy)) ? 0 : -1;
}
int gad__vjp_mul_scalar(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    return (gin[0] = gad_mul_scalar(gy, GAD_NP(n)->d[0])) ? 0 : -1;
}
int gad__vjp_add_scalar(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)n, (void)need;
    gin[0] = gy;
    return 0;
}
int gad__vjp_sign(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)n, (void)gy, (void)need, (void)gin; /* zero almost everywhere */
    return 0;
}
int gad__vjp_pow_scalar(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    double p = GAD_NP(n)->d[0];
    if (p == 0) return 0; /* x^0 is constant */
    gad_tensor *x = gad__saved(n, 0);
    return (gin[0] = gad_mul_scalar(gad_mul(gy, gad_pow_scalar(x, p - 1)), p)) ? 0 : -1;
}

UNARY_VJP(square, SQUARE, gad_mul_scalar(v, 2))
UNARY_VJP(relu, RELU, gad__const_unary(GAD_UK_RELU_MASK, v, 0, 0))
UNARY_VJP(leaky_relu, LEAKY_RELU, gad__const_unary(GAD_UK_LEAKY_MASK, v, a, 0))
UNARY_VJP(clamp, CLAMP, gad__const_unary(GAD_UK_CLAMP_MASK, v, a, b))
UNARY_VJP(abs, ABS, gad__const_unary(GAD_UK_SIGN, v, 0, 0))
UNARY_VJP(tanh, TANH, gad_add_scalar(gad_neg(gad_square(v)), 1))        /* 1 - y^2 */
UNARY_VJP(log, LOG, gad_pow_scalar(v, -1))                              /* 1/x */
UNARY_VJP(sqrt, SQRT, gad_mul_scalar(gad_pow_scalar(v, -1), 0.5))       /* 1/(2y) */
UNARY_VJP(sigmoid, SIGMOID, gad_mul(v, gad_add_scalar(gad_neg(v), 1)))  /* y(1-y) */
UNARY_VJP(softplus, SOFTPLUS, gad_sigmoid(v))                           /* s(x) */

/* exp' = exp = y: a plain product */
int gad__vjp_exp(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gad_tensor *y = gad_grad_enabled() ? gad__saved(n, 0) : n->saved[0];
    return y && (gin[0] = gad_mul(gy, y)) ? 0 : -1;
}

/* silu'(x) = s (1 + x (1 - s)), s = sigmoid(x) */
static gad_tensor *silu_grad(gad_tensor *x) {
    gad_tensor *s = gad_sigmoid(x);
    return gad_mul(s, gad_add_scalar(gad_mul(x, gad_add_scalar(gad_neg(s), 1)), 1));
}
UNARY_VJP(silu, SILU, silu_grad(v))

/* gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2),
 * t = tanh(k (x + c x^3)), k = sqrt(2/pi), c = 0.044715 */
static gad_tensor *gelu_grad(gad_tensor *x) {
    const double k = 0.7978845608028654, c = 0.044715;
    gad_tensor *x2 = gad_square(x);
    gad_tensor *t = gad_tanh(gad_mul_scalar(gad_mul(x, gad_add_scalar(gad_mul_scalar(x2, c), 1)), k));
    gad_tensor *left = gad_mul_scalar(gad_add_scalar(t, 1), 0.5);
    gad_tensor *sech2 = gad_add_scalar(gad_neg(gad_square(t)), 1);
    gad_tensor *inner = gad_add_scalar(gad_mul_scalar(x2, 3 * c), 1);
    return gad_add(left, gad_mul_scalar(gad_mul(gad_mul(x, sech2), inner), 0.5 * k));
}
UNARY_VJP(gelu, GELU, gelu_grad(v))

/* ---------------------------------------------------------------- samples */

static gad_tensor *apply_binary(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    switch (s->i[0]) {
    case GAD_OP_ADD: return gad_add(in[0], in[1]);
    case GAD_OP_SUB: return gad_sub(in[0], in[1]);
    case GAD_OP_MUL: return gad_mul(in[0], in[1]);
    case GAD_OP_DIV: return gad_div(in[0], in[1]);
    case GAD_OP_MAXIMUM: return gad_maximum(in[0], in[1]);
    default: return gad_minimum(in[0], in[1]);
    }
}

/* Shape pairs every binary op is checked on: equal, broadcast both ways,
 * rank 0 on either side, a 0-sized dim against 1, size-1 dims. */
static const struct {
    int ra, rb;
    int64_t a[4], b[4];
} binary_shapes[] = {
    {2, 2, {3, 4}, {3, 4}}, {2, 1, {3, 1}, {4}},    {0, 2, {0}, {2, 3}},
    {2, 0, {2, 3}, {0}},    {2, 2, {0, 3}, {1, 3}}, {3, 2, {2, 1, 3}, {4, 1}},
};

#define NBINARY ((int)(sizeof binary_shapes / sizeof binary_shapes[0]))
#define NRANDOM 4 /* random shapes after the fixed ones */

/* A random shape: rank 0..4, dims 0..3 (a 0 only now and then). */
static int random_shape(gad_rng *r, int64_t *shape) {
    int rank = (int)gad_rng_int(r, 0, 5);
    for (int d = 0; d < rank; d++)
        shape[d] = gad_rng_int(r, 0, 12) == 0 ? 0 : gad_rng_int(r, 1, 4);
    return rank;
}

static int binary_sample(gad_op_sample *s, gad_rng *r, int variant, int op,
                         double lo, double hi, double blo, double bhi, double away) {
    if (variant >= NBINARY + NRANDOM) return 0;
    int64_t a[4], b[4];
    int ra, rb;
    if (variant < NBINARY) {
        ra = binary_shapes[variant].ra;
        rb = binary_shapes[variant].rb;
        memcpy(a, binary_shapes[variant].a, sizeof binary_shapes[variant].a);
        memcpy(b, binary_shapes[variant].b, sizeof binary_shapes[variant].b);
    } else {
        /* b: a's trailing dims, each kept or made 1 (broadcast) */
        ra = random_shape(r, a);
        rb = (int)gad_rng_int(r, 0, ra + 1);
        for (int d = 0; d < rb; d++)
            b[d] = gad_rng_int(r, 0, 3) == 0 ? 1 : a[ra - rb + d];
        if (gad_rng_int(r, 0, 2)) { /* either side may be the smaller */
            int64_t t[4];
            memcpy(t, a, sizeof t);
            memcpy(a, b, sizeof t);
            memcpy(b, t, sizeof t);
            int tr = ra;
            ra = rb;
            rb = tr;
        }
    }
    s->n = 2;
    s->i[0] = op;
    s->apply = apply_binary;
    s->smooth = op != GAD_OP_MAXIMUM && op != GAD_OP_MINIMUM;
    s->in[0] = gad__sample_leaf(r, a, ra, lo, hi, 0);
    s->in[1] = gad__sample_leaf(r, b, rb, blo, bhi, away);
    char sa[GAD_SHAPE_BUF], sb[GAD_SHAPE_BUF];
    snprintf(s->what, sizeof s->what, "%s %s", gad__shape_str(sa, a, ra),
             gad__shape_str(sb, b, rb));
    return s->in[0] && s->in[1];
}

int gad__sample_add(gad_op_sample *s, gad_rng *r, int v) {
    return binary_sample(s, r, v, GAD_OP_ADD, -2, 2, -2, 2, 0);
}
int gad__sample_sub(gad_op_sample *s, gad_rng *r, int v) {
    return binary_sample(s, r, v, GAD_OP_SUB, -2, 2, -2, 2, 0);
}
int gad__sample_mul(gad_op_sample *s, gad_rng *r, int v) {
    return binary_sample(s, r, v, GAD_OP_MUL, -2, 2, -2, 2, 0);
}
int gad__sample_div(gad_op_sample *s, gad_rng *r, int v) {
    return binary_sample(s, r, v, GAD_OP_DIV, -2, 2, -2, 2, 0.5);
}
/* maximum/minimum: a in [-2,-1) u ... b in [0.5, 2): never close, so finite
 * differences do not straddle a switch */
int gad__sample_maximum(gad_op_sample *s, gad_rng *r, int v) {
    int ok = binary_sample(s, r, v, GAD_OP_MAXIMUM, -2, 2, -0.9, 0.9, 0);
    if (ok) { /* push a away from b's range: |a| >= 1.1 */
        gad_tensor *a = s->in[0];
        double *p = gad__ptr(a);
        for (int64_t i = 0; i < a->numel; i++) p[i] = p[i] < 0 ? p[i] - 1.1 : p[i] + 1.1;
    }
    return ok;
}
int gad__sample_minimum(gad_op_sample *s, gad_rng *r, int v) {
    int ok = gad__sample_maximum(s, r, v);
    s->i[0] = GAD_OP_MINIMUM;
    return ok;
}

static gad_tensor *apply_unary(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    gad_tensor *x = in[0];
    double a = s->d[0], b = s->d[1];
    switch (s->i[0]) {
    case GAD_OP_NEG: return gad_neg(x);
    case GAD_OP_MUL_SCALAR: return gad_mul_scalar(x, a);
    case GAD_OP_ADD_SCALAR: return gad_add_scalar(x, a);
    case GAD_OP_POW_SCALAR: return gad_pow_scalar(x, a);
    case GAD_OP_SQUARE: return gad_square(x);
    case GAD_OP_RELU: return gad_relu(x);
    case GAD_OP_LEAKY_RELU: return gad_leaky_relu(x, a);
    case GAD_OP_TANH: return gad_tanh(x);
    case GAD_OP_EXP: return gad_exp(x);
    case GAD_OP_LOG: return gad_log(x);
    case GAD_OP_SQRT: return gad_sqrt(x);
    case GAD_OP_ABS: return gad_abs(x);
    case GAD_OP_SIGN: return gad_sign(x);
    case GAD_OP_SIGMOID: return gad_sigmoid(x);
    case GAD_OP_SILU: return gad_silu(x);
    case GAD_OP_GELU: return gad_gelu(x);
    case GAD_OP_SOFTPLUS: return gad_softplus(x);
    default: return gad_clamp(x, a, b);
    }
}

/* Shapes every unary op is checked on (then NRANDOM random ones). */
static const struct {
    int rank;
    int64_t s[4];
} unary_shapes[] = {{2, {3, 4}}, {0, {0}}, {2, {0, 2}}, {3, {2, 1, 3}}, {1, {5}}};

#define NUNARY ((int)(sizeof unary_shapes / sizeof unary_shapes[0]))

static int unary_sample(gad_op_sample *s, gad_rng *r, int variant, int op,
                        double lo, double hi, double away, double a, double b,
                        int smooth) {
    if (variant >= NUNARY + NRANDOM) return 0;
    int64_t shape[4];
    int rank;
    if (variant < NUNARY) {
        rank = unary_shapes[variant].rank;
        memcpy(shape, unary_shapes[variant].s, sizeof unary_shapes[variant].s);
    } else {
        rank = random_shape(r, shape);
    }
    s->n = 1;
    s->i[0] = op;
    s->d[0] = a;
    s->d[1] = b;
    s->apply = apply_unary;
    s->smooth = smooth;
    s->in[0] = gad__sample_leaf(r, shape, rank, lo, hi, away);
    gad__shape_str(s->what, shape, rank);
    return s->in[0] != NULL;
}

#define UNARY_SAMPLE(name, ID, lo, hi, away, a, b, smooth)                     \
    int gad__sample_##name(gad_op_sample *s, gad_rng *r, int v) {              \
        return unary_sample(s, r, v, GAD_OP_##ID, lo, hi, away, a, b, smooth); \
    }
UNARY_SAMPLE(neg, NEG, -2, 2, 0, 0, 0, 1)
UNARY_SAMPLE(mul_scalar, MUL_SCALAR, -2, 2, 0, -1.5, 0, 1)
UNARY_SAMPLE(add_scalar, ADD_SCALAR, -2, 2, 0, 0.75, 0, 1)
UNARY_SAMPLE(pow_scalar, POW_SCALAR, 0.5, 2, 0, 2.5, 0, 1)
UNARY_SAMPLE(square, SQUARE, -2, 2, 0, 0, 0, 1)
UNARY_SAMPLE(relu, RELU, -2, 2, 0.1, 0, 0, 0)
UNARY_SAMPLE(leaky_relu, LEAKY_RELU, -2, 2, 0.1, 0.1, 0, 0)
UNARY_SAMPLE(tanh, TANH, -2, 2, 0, 0, 0, 1)
UNARY_SAMPLE(exp, EXP, -2, 2, 0, 0, 0, 1)
UNARY_SAMPLE(log, LOG, 0.3, 3, 0, 0, 0, 1)
UNARY_SAMPLE(sqrt, SQRT, 0.3, 3, 0, 0, 0, 1)
UNARY_SAMPLE(abs, ABS, -2, 2, 0.1, 0, 0, 0)
UNARY_SAMPLE(sign, SIGN, -2, 2, 0.1, 0, 0, 0)
UNARY_SAMPLE(sigmoid, SIGMOID, -3, 3, 0, 0, 0, 1)
UNARY_SAMPLE(silu, SILU, -3, 3, 0, 0, 0, 1)
UNARY_SAMPLE(gelu, GELU, -3, 3, 0, 0, 0, 1)
UNARY_SAMPLE(softplus, SOFTPLUS, -3, 3, 0, 0, 0, 1)
/* clamp bounds +-1; values kept 0.1 away from them */
int gad__sample_clamp(gad_op_sample *s, gad_rng *r, int v) {
    int ok = unary_sample(s, r, v, GAD_OP_CLAMP, -2, 2, 0, -1, 1, 0);
    if (ok) {
        double *p = gad__ptr(s->in[0]);
        for (int64_t i = 0; i < s->in[0]->numel; i++)
            if (fabs(fabs(p[i]) - 1) < 0.1) p[i] += p[i] > 0 ? 0.25 : -0.25;
    }
    return ok;
}
