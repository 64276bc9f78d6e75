/* elementwise.c: binary ops with broadcasting and unary activations (SPEC
 * §3.1, §3.2), with their VJPs (§3.3) and gradcheck samples. The ops are
 * the rows of elementwise.def: their public functions, their VJPs (those
 * of the rows whose vjp is AUTO) and samples are generated at the end of
 * this file, from what is here: the forward drivers, the VJPs that rows
 * name HAND, and the helpers that rows name. */
#include "ops_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The gradient of input i, summed back to that input's shape. */
#define UNB(g, i) gad__unbroadcast((g), n->parents[i]->shape, n->parents[i]->rank)

/* Set gin[i] when needed; a NULL result means an error was recorded. */
#define GIN(i, expr)                                                           \
    do {                                                                       \
        if (need[i] && !(gin[i] = (expr))) return -1;                          \
    } while (0)

/* A saved input for a VJP: the alias itself when the VJP runs off the tape,
 * re-attached to the tape (a new tensor) under create_graph. */
static gad_tensor *saved_in(gad_node *n, int i) {
    return gad_grad_enabled() ? gad__saved(n, i) : n->saved[i];
}

/* ------------------------------------------------------------------ binary */

/* What a binary op's VJP needs saved (the rows' keep): nothing (add, sub);
 * for mul, each input only when the other one needs a gradient (CROSS); for
 * div, b always and a when b needs a gradient (QUOT); both (maximum,
 * minimum). */
enum { KEEP_NONE, KEEP_CROSS, KEEP_QUOT, KEEP_BOTH };

/* The dtype of a binary op on a and b whose dtypes or devices differ and
 * one of which is 0-d: PyTorch's result_type (gad.h, "Scalars and
 * dtypes"). Two 0-d tensors promote as two tensors do in PyTorch
 * (torch.promote_types: a float beats an integer, f64 beats f32, f32 beats
 * the halves, f16 with bf16 gives f32); a 0-d tensor with a dimensioned
 * one gives the dimensioned one's dtype, unless the 0-d one is of a higher
 * category (a float with an integer tensor), which gives the 0-d one's. */
static gad_dtype_t dtype_with_0d(const gad_tensor *a, const gad_tensor *b) {
    gad_dtype_t x = a->dtype, y = b->dtype;
    if (x == y) return x;
    if (a->rank == 0 && b->rank == 0) return (gad_dtype_t)gad__promote_types(x, y);
    if (a->rank == 0) return gad__dtype_category(x) > gad__dtype_category(y) ? x : y;
    return gad__dtype_category(y) > gad__dtype_category(x) ? y : x;
}

GAD_HOT static GAD_ALWAYS_INLINE gad_tensor *binary(const char *op, const gad_op_info *info, gad_bkernel k, gad_tensor *a, gad_tensor *b, int keep);

/* binary() of a and b where one is 0-d and they differ in dtype or
 * device: each is cast to the dtype of dtype_with_0d, and a 0-d CPU tensor
 * moves to the other's device (as PyTorch reads a 0-d CPU tensor with a
 * tensor on any device), by the differentiable gad_cast and gad_to_device,
 * in a scope of their own. Returns 1 and *y when it applies; 0 when it
 * does not (the usual checks then report the dtypes or devices). */
GAD_COLD static int binary_with_0d(const char *op, const gad_op_info *info, gad_bkernel k, gad_tensor *a,
                          gad_tensor *b, int keep, gad_tensor **y) {
    int dev = a->dev;
    if (a->dev != b->dev) {
        if (a->rank == 0 && a->dev == GAD_DEV_HOST) dev = b->dev;
        else if (b->rank != 0 || b->dev != GAD_DEV_HOST) return 0;
    }
    gad_dtype_t dt = dtype_with_0d(a, b);
    gad_scope_begin();
    gad_tensor *a2 = gad_to_device(gad_cast(a, dt), dev);
    gad_tensor *b2 = gad_to_device(gad_cast(b, dt), dev);
    gad_tensor *r = a2 && b2 ? binary(op, info, k, a2, b2, keep) : NULL;
    gad_keep(r);
    gad_scope_end();
    *y = r;
    return 1;
}

GAD_HOT static GAD_ALWAYS_INLINE gad_tensor *binary(const char *op, const gad_op_info *info, gad_bkernel k, gad_tensor *a, gad_tensor *b, int keep) {
    if (gad__bad_tensor(a) || gad__bad_tensor(b)) return gad__bad_of(op, 2, (const gad_tensor *const[]){a, b});
    if (GAD_UNLIKELY((a->dtype != b->dtype || a->dev != b->dev) && (a->rank == 0 || b->rank == 0))) {
        gad_tensor *y;
        if (binary_with_0d(op, info, k, a, b, keep, &y)) return y;
    }
    if (gad__need_same_dtype(op, a, b) || gad__need_floating(op, a)) return NULL;
    if (GAD_UNLIKELY(a->dev != b->dev)) return gad__err_device(op, a->dev, b->dev);
    if (GAD_LACKS(op, a, binary)) return NULL;
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
    GAD_BE(a)->binary(k, a, b, y);
    gad_tensor *in[2] = {a, b}, *save[2] = {NULL, NULL};
    bool ga = a->node != NULL, gb = b->node != NULL;
    if (keep == KEEP_BOTH || (keep == KEEP_CROSS && gb) || (keep == KEEP_QUOT && gb)) save[0] = a;
    if (keep == KEEP_BOTH || (keep == KEEP_CROSS && ga) || keep == KEEP_QUOT) save[1] = b;
    return gad__own(gad__track(y, info, in, 2, save, keep == KEEP_NONE ? 0 : 2));
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

/* What a unary op's VJP needs saved (the rows' save). */
enum { SAVE_NONE, SAVE_X, SAVE_Y };

GAD_HOT static GAD_ALWAYS_INLINE gad_tensor *unary(const char *op, const gad_op_info *info, gad_ukernel k, gad_tensor *x, double pa, double pb,
                         int save) {
    GAD_NEED(op, x);
    if (gad__need_floating(op, x) || GAD_LACKS(op, x, unary)) return NULL;
    gad_tensor *y = gad__tensor_like(op, x);
    if (!y) return NULL;
    gad_uparams p = {pa, pb};
    GAD_BE(x)->unary(k, x, y, &p);
    gad_tensor *s = save == SAVE_X ? x : y;
    y = gad__track(y, info, &x, 1, &s, save != SAVE_NONE);
    if (y && y->node) { /* the parameters the op keeps (ops.def) */
        int w = y->node->pwords; /* 0 to 2 (a loop here compiles to rep movs) */
        if (w > 0) GAD_NODE_P(y->node, scalars)->a = pa;
        if (w > 1) GAD_NODE_P(y->node, scalars)->b = pb;
    }
    return gad__own(y);
}

/* gy * f'(v) in one kernel pass, off the tape (first-order VJPs). */
GAD_HOT static gad_tensor *grad_kernel(gad_gkernel k, gad_tensor *gy, gad_tensor *v, double a, double b) {
    if (GAD_LACKS("vjp", v, grad)) return NULL; /* named after the op by the engine */
    gad_tensor *out = gad__tensor_like("vjp", v);
    if (!out) return NULL;
    gad_uparams p = {a, b};
    GAD_BE(v)->grad(k, gy, v, out, &p);
    return gad__own(out);
}

int gad__vjp_neg(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)n, (void)need;
    return (gin[0] = gad_neg(gy)) ? 0 : -1;
}
int gad__vjp_mul_scalar(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    return (gin[0] = gad_mul_scalar(gy, GAD_NODE_P(n, scalars)->a)) ? 0 : -1;
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
    double p = GAD_NODE_P(n, scalars)->a;
    if (p == 0) return 0; /* x^0 is constant */
    gad_tensor *x = gad__saved(n, 0);
    return (gin[0] = gad_mul_scalar(gad_mul(gy, gad_pow_scalar(x, p - 1)), p)) ? 0 : -1;
}

/* silu'(x) = s (1 + x (1 - s)), s = sigmoid(x) */
static gad_tensor *silu_grad(gad_tensor *x) {
    gad_tensor *s = gad_sigmoid(x);
    return gad_mul(s, gad_add_scalar(gad_mul(x, gad_add_scalar(gad_neg(s), 1)), 1));
}

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

/* ------------------------------------------------------- the math family
 * The derivatives the math rows of elementwise.def name (their dexpr, built
 * from tracked ops so that they differentiate again), gad_gelu_ex, and the
 * binary VJPs of atan2 and pow. */

/* elu'(x) = scale for x > 0, else scale alpha e^x (e^min(x, 0), so that a
 * large x does not make inf * 0); selu is elu's with its constants. */
static gad_tensor *elu_grad(gad_tensor *x, double alpha, double scale) {
    gad_tensor *neg = gad_mul(gad__const_unary(GAD_UK_ELU_NEG, x, alpha, 0),
                              gad_exp(gad_clamp(x, -INFINITY, 0)));
    return gad_mul_scalar(gad_add(gad__const_unary(GAD_UK_RELU_MASK, x, 0, 0), neg), scale);
}

/* mish'(x) = t + x (1 - t^2) sigmoid(x), t = tanh(softplus(x)) */
static gad_tensor *mish_grad(gad_tensor *x) {
    gad_tensor *t = gad_tanh(gad_softplus(x));
    gad_tensor *sech2 = gad_add_scalar(gad_neg(gad_square(t)), 1);
    return gad_add(t, gad_mul(gad_mul(x, sech2), gad_sigmoid(x)));
}

/* hardswish'(x) = 0 below -3, x/3 + 1/2 on [-3, 3], 1 above (PyTorch's) */
static gad_tensor *hardswish_grad(gad_tensor *x) {
    gad_tensor *mid = gad__const_unary(GAD_UK_HARDSWISH_MID, x, 0, 0);
    gad_tensor *lin = gad_add_scalar(gad_mul_scalar(x, 1.0 / 3), 0.5);
    return gad_add(gad_mul(mid, lin), gad__const_unary(GAD_UK_HARDSWISH_HI, x, 0, 0));
}

/* gelu'(x) = Phi(x) + x phi(x) (exact form) */
static gad_tensor *gelu_erf_grad(gad_tensor *x) {
    gad_tensor *cdf = gad_mul_scalar(gad_erfc(gad_mul_scalar(x, -0.7071067811865476)), 0.5);
    gad_tensor *pdf = gad_mul_scalar(gad_exp(gad_mul_scalar(gad_square(x), -0.5)),
                                     0.3989422804014327); /* 1/sqrt(2 pi) */
    return gad_add(cdf, gad_mul(x, pdf));
}

gad_tensor *gad_gelu_ex(gad_tensor *x, const char *approximate) {
    GAD_COMPOSITE("gelu_ex"); /* a missing kernel names gelu_ex */
    GAD_NEED("gelu_ex", x);
    if (gad__need_floating("gelu_ex", x)) return NULL;
    if (!approximate || !strcmp(approximate, "none")) return gad_gelu_erf(x);
    if (!strcmp(approximate, "tanh")) return gad_gelu(x);
    return gad__err(GAD_ERR_DOMAIN, "gelu_ex",
                    "approximate must be \"none\" or \"tanh\", got \"%.40s\"", approximate);
}

/* atan2(y, x): d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2) */
static gad_tensor *atan2_den(gad_node *n) {
    return gad_add(gad_square(saved_in(n, 0)), gad_square(saved_in(n, 1)));
}
static gad_tensor *atan2_ga(gad_node *n, gad_tensor *gy) {
    return gad_div(gad_mul(gy, saved_in(n, 1)), atan2_den(n));
}
static gad_tensor *atan2_gb(gad_node *n, gad_tensor *gy) {
    return gad_neg(gad_div(gad_mul(gy, saved_in(n, 0)), atan2_den(n)));
}

/* pow(x, e), PyTorch's gradients: d/dx = e x^(e-1), 0 where e = 0 (as
 * e x^(e-1+[e=0]), so that x = 0 gives 0, not 0 * inf); d/de = x^e log x,
 * 0 where x = 0 and e >= 0 (as log(x + [x=0, e>=0])), NaN for x < 0. The
 * masks are constants: both stay differentiable elsewhere. */
static gad_tensor *pow_ga(gad_node *n, gad_tensor *gy) {
    gad_tensor *x = saved_in(n, 0), *e = saved_in(n, 1);
    gad_tensor *e0 = gad__const_binary(GAD_BK_POW_E0, x, e);
    gad_tensor *p = gad_pow(x, gad_add(gad_add_scalar(e, -1), e0));
    return gad_mul(gad_mul(gy, e), p);
}
static gad_tensor *pow_gb(gad_node *n, gad_tensor *gy) {
    gad_tensor *x = saved_in(n, 0), *e = saved_in(n, 1);
    gad_tensor *m = gad__const_binary(GAD_BK_POW_LOG0, x, e);
    return gad_mul(gad_mul(gy, gad_pow(x, e)), gad_log(gad_add(x, m)));
}

/* ---------------------------------------------------------------- samples */

static gad_tensor *apply_binary(void *self, gad_tensor *const *in, int n);
static gad_tensor *apply_unary(void *self, gad_tensor *const *in, int n);

/* A sample's fix (its row's sample field): moves sampled values off the
 * points where the op has no derivative. */
typedef void (*sample_fix)(gad_op_sample *s);

/* maximum/minimum: a in [-3.1, -1.1) u [1.1, 3.1), b in [-0.9, 0.9): at
 * least 0.2 apart, so finite differences do not straddle a switch */
static void apart(gad_op_sample *s) {
    gad__sample_move(s->in[0], 0, 0, 0, 1.1);
}

/* clamp: values within 0.1 of a bound move 0.25 away from 0 (past the
 * bound when it is +-1, as the sample's are) */
static void off_bounds(gad_op_sample *s) {
    gad__sample_move(s->in[0], s->d[0], s->d[1], 0.1, 0.25);
}

/* hardsigmoid, hardswish: values within 0.1 of -3 or 3 move 0.25 away
 * from 0 (off the kinks) */
static void off_three(gad_op_sample *s) {
    gad__sample_move(s->in[0], -3, 3, 0.1, 0.25);
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
                         double lo, double hi, double blo, double bhi, double away,
                         int smooth, sample_fix fix) {
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
    s->smooth = smooth;
    s->in[0] = gad__sample_leaf(r, a, ra, lo, hi, 0);
    s->in[1] = gad__sample_leaf(r, b, rb, blo, bhi, away);
    char sa[GAD_SHAPE_BUF], sb[GAD_SHAPE_BUF];
    snprintf(s->what, sizeof s->what, "%s %s", gad__shape_str(sa, a, ra),
             gad__shape_str(sb, b, rb));
    if (!s->in[0] || !s->in[1]) return 0;
    if (fix) fix(s);
    return 1;
}

/* Shapes every unary op is checked on (then NRANDOM random ones). */
static const struct {
    int rank;
    int64_t s[4];
} unary_shapes[] = {{2, {3, 4}}, {0, {0}}, {2, {0, 2}}, {3, {2, 1, 3}}, {1, {5}}};

#define NUNARY ((int)(sizeof unary_shapes / sizeof unary_shapes[0]))

static int unary_sample(gad_op_sample *s, gad_rng *r, int variant, int op,
                        double lo, double hi, double away, double a, double b,
                        int smooth, sample_fix fix) {
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
    if (!s->in[0]) return 0;
    if (fix) fix(s);
    return 1;
}

/* ------------------------------------------------------- generated: the ops
 * From each row of elementwise.def: gad_<name>, gad__vjp_<name> when the
 * row's vjp is AUTO, gad__sample_<name>; then the apply functions of the
 * samples. */

#define UNPACK(...) __VA_ARGS__
/* gad_<name>'s parameters after x (the row's args), and a, b as passed on */
#define ARGS_DECL_0
#define ARGS_DECL_1 , double a
#define ARGS_DECL_2 , double a, double b
#define ARGS_REST_0 const double a = 0, b = 0;
#define ARGS_REST_1 const double b = 0;
#define ARGS_REST_2
#define ARGS_CALL_0
#define ARGS_CALL_1 , a
#define ARGS_CALL_2 , a, b
/* a row's check, in gad_<name> */
#define NO_CHECK
#define CHECK(cond, ...)                                                       \
    GAD_NEED(op, x);                                                           \
    if (cond) return gad__err(GAD_ERR_DOMAIN, op, __VA_ARGS__);

/* The VJP of a unary op: gy * f'(v) with v the saved x or y. First order
 * (grad mode off, as the engine runs VJPs without create_graph): one fused
 * kernel (the row's grad). With create_graph: the row's dexpr built from
 * tracked ops on the saved value re-attached to the tape, so that it is
 * differentiable again. */
#define UNARY_VJP(ID, name, v, dexpr)                                          \
    GAD_HOT int gad__vjp_##name(gad_node *n, gad_tensor *gy, const bool *need,         \
                        gad_tensor **gin) {                                    \
        (void)need;                                                            \
        double a = gad__node_d(n, 0), b = gad__node_d(n, 1);                   \
        if (!gad_grad_enabled())                                               \
            return (gin[0] = grad_kernel(GAD_GK_##ID, gy, n->saved[0], a, b)) ? 0 : -1; \
        gad_tensor *v = gad__saved(n, 0); /* x or y, as the op saved */       \
        if (!v) return -1;                                                     \
        return (gin[0] = gad_mul(gy, (dexpr))) ? 0 : -1;                       \
    }
#define SAVED_X x
#define SAVED_Y y

#define UNARY(ID, name, args, pwords, save, fwd, cost, vjp, grad, gcost, dexpr, sample, check) \
    GAD_HOT gad_tensor *gad_##name(gad_tensor *x ARGS_DECL_##args) {                   \
        const char *op = #name;                                                \
        ARGS_REST_##args check                                                 \
        return unary(op, GAD_OP(ID), GAD_UK_##ID, x, a, b, SAVE_##save);       \
    }                                                                          \
    GAD_EW_##vjp(UNARY_VJP(ID, name, SAVED_##save, dexpr))                     \
    int gad__sample_##name(gad_op_sample *s, gad_rng *r, int v) {              \
        return unary_sample(s, r, v, GAD_OP_##ID, UNPACK sample);              \
    }

#define BINARY_VJP(name, ga, gb)                                               \
    GAD_HOT int gad__vjp_##name(gad_node *n, gad_tensor *gy, const bool *need,         \
                        gad_tensor **gin) {                                    \
        GIN(0, UNB(ga, 0));                                                    \
        GIN(1, UNB(gb, 1));                                                    \
        return 0;                                                              \
    }

#define BINARY(ID, name, fwd, keep, vjp, ga, gb, sample)                       \
    GAD_HOT gad_tensor *gad_##name(gad_tensor *a, gad_tensor *b) {                     \
        return binary(#name, GAD_OP(ID), GAD_BK_##ID, a, b, KEEP_##keep);      \
    }                                                                          \
    GAD_EW_##vjp(BINARY_VJP(name, ga, gb))                                     \
    int gad__sample_##name(gad_op_sample *s, gad_rng *r, int v) {              \
        return binary_sample(s, r, v, GAD_OP_##ID, UNPACK sample);             \
    }
#include "backend/elementwise.def"

static gad_tensor *apply_binary(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    switch (s->i[0]) {
#define BINARY(ID, name, ...)                                                  \
    case GAD_OP_##ID: return gad_##name(in[0], in[1]);
#include "backend/elementwise.def"
    default: return NULL;
    }
}

static gad_tensor *apply_unary(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    gad_tensor *x = in[0];
    double a = s->d[0], b = s->d[1];
    (void)a, (void)b;
    switch (s->i[0]) {
#define UNARY(ID, name, args, ...)                                             \
    case GAD_OP_##ID: return gad_##name(x ARGS_CALL_##args);
#include "backend/elementwise.def"
    default: return NULL;
    }
}

/* ---- composite (ops.def's COMPOSITE row): gelu_ex, either approximation */
static gad_tensor *apply_gelu_ex(void *self, gad_tensor *const *in, int n) {
    static const char *const approx[] = {"none", "tanh", NULL};
    (void)n;
    return gad_gelu_ex(in[0], approx[((gad_op_sample *)self)->i[0]]);
}

int gad__sample_gelu_ex(gad_op_sample *s, gad_rng *r, int v) {
    static const int64_t shapes[][3] = {{3, 4}, {2, 3, 2}, {0}, {5}};
    static const int ranks[] = {2, 3, 0, 1};
    if (v >= 6) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_gelu_ex, .smooth = 1};
    s->i[0] = v % 3;
    s->in[0] = gad__sample_leaf(r, shapes[v % 4], ranks[v % 4], -3, 3, 0);
    int k = gad__shape_str(s->what, shapes[v % 4], ranks[v % 4]) ? (int)strlen(s->what) : 0;
    snprintf(s->what + k, sizeof s->what - (size_t)k, " approximate %s",
             v % 3 == 0 ? "none" : v % 3 == 1 ? "tanh" : "NULL");
    return s->in[0] != NULL;
}
