/* select.c: comparisons and selection (issue 27; gad.h "Comparisons and
 * selection"): the comparisons, logical ops, tests and any/all, which
 * return bool masks and have no gradient (ops.def's NOGRAD rows), and
 * where, masked_fill, tril, triu and clamp_tensor with their VJPs. The
 * kernels are the select family of the seam (backend/select.h). */
#include "ops_int.h"
#include "backend/select.h"
#include "half.h"

#include <math.h>

#define SEL(t) (GAD_BE(t)->select)

/* ------------------------------------------------------------ operands */

/* PyTorch's categories for result_type: bool < integer < float
 * (gad_int.h). */
static int category(int dt) { return gad__dtype_category(dt); }

/* The dtype of two 0-d operands: torch.promote_types (gad_int.h). */
static int higher(int a, int b) { return gad__promote_types(a, b); }

/* The dtype and device the n operands (NULL entries skipped) are brought
 * to: the dimensioned ones must agree (a dtype or device error naming the
 * first two that differ); a 0-d one of a higher category gives its dtype
 * (gad_add's rule), and a 0-d CPU one is read on the others' device. The
 * operands that differ are replaced by converted copies (gad_cast,
 * gad_to_device: differentiable). 0, or -1 with the error recorded. */
static int unify(const char *op, gad_tensor **t, int n) {
    const gad_tensor *dim = NULL, *any = NULL;
    int zd = -1, dev = -1;
    for (int i = 0; i < n; i++) {
        if (!t[i]) continue;
        if (!any) any = t[i];
        if (t[i]->rank > 0) {
            if (!dim) dim = t[i];
            else if (gad__need_same_dtype(op, dim, t[i])) return -1;
            else if (t[i]->dev != dim->dev) return (gad__err_device(op, dim->dev, t[i]->dev), -1);
        } else {
            zd = zd < 0 ? t[i]->dtype : higher(zd, t[i]->dtype);
        }
        if (t[i]->dev != GAD_DEV_HOST && (dev < 0 || t[i]->rank > 0)) dev = t[i]->dev;
    }
    if (!any) return 0;
    int dt = dim ? dim->dtype : zd;
    if (dim && zd >= 0 && category(zd) > category(dim->dtype)) dt = zd;
    if (dim) dev = dim->dev;
    else if (dev < 0) dev = GAD_DEV_HOST;
    for (int i = 0; i < n; i++) {
        if (!t[i] || (t[i]->dtype == dt && t[i]->dev == dev)) continue;
        if (t[i]->dev != dev && (t[i]->rank > 0 || t[i]->dev != GAD_DEV_HOST))
            return (gad__err_device(op, dev, t[i]->dev), -1);
        t[i] = gad_to_device(gad_cast(t[i], (gad_dtype_t)dt), dev);
        if (!t[i]) return -1;
    }
    return 0;
}

/* The broadcast shape of the n operands (NULL entries skipped). */
static int broadcast_all(const char *op, gad_tensor *const *t, int n, int64_t *shape,
                         int *rank) {
    *rank = 0;
    for (int i = 0; i < n; i++) {
        if (!t[i]) continue;
        int64_t tmp[GAD_MAX_RANK];
        int r;
        if (gad__broadcast_shapes(op, shape, *rank, t[i]->shape, t[i]->rank, tmp, &r))
            return -1;
        memcpy(shape, tmp, sizeof tmp);
        *rank = r;
    }
    return 0;
}

static int need_bool(const char *op, const char *what, const gad_tensor *t) {
    if (t->dtype == GAD_BOOL) return 0;
    gad__err(GAD_ERR_DTYPE, op, "%s must be bool, got %s", what,
             gad_dtype_name((gad_dtype_t)t->dtype));
    return -1;
}

/* x as a bool mask (x itself when it is one): nonzero is true. */
static gad_tensor *truth(const char *op, gad_tensor *x) {
    if (x->dtype == GAD_BOOL) return x;
    gad_tensor *y = gad__tensor_new(op, x->dev, GAD_BOOL, x->shape, x->rank);
    if (!y) return NULL;
    SEL(x)->test(GAD_TEST_NONZERO, x, y);
    return gad__own(y);
}

/* ---------------------------------------------------------- comparisons */

static gad_tensor *compare(const char *op, gad_cmp_op k, gad_tensor *a, gad_tensor *b) {
    GAD_COMPOSITE(op); /* the casts of a 0-d operand fail under op */
    if (gad__bad_tensor(a) || gad__bad_tensor(b))
        return gad__bad_of(op, 2, (const gad_tensor *const[]){a, b});
    if (GAD_LACKS_FAM(op, a, select, compare)) return NULL;
    gad_tensor *t[2] = {a, b};
    int64_t shape[GAD_MAX_RANK];
    int rank;
    if (unify(op, t, 2) || broadcast_all(op, t, 2, shape, &rank)) return NULL;
    gad_tensor *y = gad__tensor_new(op, t[0]->dev, GAD_BOOL, shape, rank);
    if (!y) return NULL;
    SEL(y)->compare(k, t[0], t[1], NULL, y);
    return gad__own(y);
}

gad_tensor *gad_eq(gad_tensor *a, gad_tensor *b) { return compare("eq", GAD_CMP_EQ, a, b); }
gad_tensor *gad_ne(gad_tensor *a, gad_tensor *b) { return compare("ne", GAD_CMP_NE, a, b); }
gad_tensor *gad_lt(gad_tensor *a, gad_tensor *b) { return compare("lt", GAD_CMP_LT, a, b); }
gad_tensor *gad_le(gad_tensor *a, gad_tensor *b) { return compare("le", GAD_CMP_LE, a, b); }
gad_tensor *gad_gt(gad_tensor *a, gad_tensor *b) { return compare("gt", GAD_CMP_GT, a, b); }
gad_tensor *gad_ge(gad_tensor *a, gad_tensor *b) { return compare("ge", GAD_CMP_GE, a, b); }

/* x op s, with s typed as PyTorch types a Python number (gad.h). */
static gad_tensor *compare_scalar(const char *op, gad_cmp_op k, gad_tensor *x, double s) {
    GAD_COMPOSITE(op);
    GAD_NEED(op, x);
    if (GAD_LACKS_FAM(op, x, select, compare)) return NULL;
    gad_sel_scalar v;
    int to = -1; /* the dtype x is converted to first, if any */
    if (gad__is_floating(x->dtype)) {
        v.f = s;
    } else if (s == floor(s) && s >= -9223372036854775808.0 && s < 9223372036854775808.0) {
        v.i = (int64_t)s; /* an integer: exact (a bool x against 2 or -1 as i64) */
        if (x->dtype == GAD_BOOL && v.i != 0 && v.i != 1) to = GAD_I64;
    } else { /* 2.5, inf, NaN with an integer tensor: in f32, as PyTorch */
        v.f = s;
        to = GAD_F32;
    }
    if (to >= 0) {
        if (GAD_LACKS(op, x, convert)) return NULL;
        gad_tensor *xc = gad__tensor_new(op, x->dev, to, x->shape, x->rank);
        if (!xc) return NULL;
        GAD_BE(x)->convert(x, xc);
        x = gad__own(xc);
    }
    gad_tensor *y = gad__tensor_new(op, x->dev, GAD_BOOL, x->shape, x->rank);
    if (!y) return NULL;
    SEL(x)->compare(k, x, NULL, &v, y);
    return gad__own(y);
}

gad_tensor *gad_eq_scalar(gad_tensor *x, double s) { return compare_scalar("eq_scalar", GAD_CMP_EQ, x, s); }
gad_tensor *gad_ne_scalar(gad_tensor *x, double s) { return compare_scalar("ne_scalar", GAD_CMP_NE, x, s); }
gad_tensor *gad_lt_scalar(gad_tensor *x, double s) { return compare_scalar("lt_scalar", GAD_CMP_LT, x, s); }
gad_tensor *gad_le_scalar(gad_tensor *x, double s) { return compare_scalar("le_scalar", GAD_CMP_LE, x, s); }
gad_tensor *gad_gt_scalar(gad_tensor *x, double s) { return compare_scalar("gt_scalar", GAD_CMP_GT, x, s); }
gad_tensor *gad_ge_scalar(gad_tensor *x, double s) { return compare_scalar("ge_scalar", GAD_CMP_GE, x, s); }

/* ---------------------------------------------------------- logical ops */

/* Each operand made a mask on its own (dtypes need not agree), then
 * combined as bools. */
static gad_tensor *logical(const char *op, gad_cmp_op k, gad_tensor *a, gad_tensor *b) {
    GAD_COMPOSITE(op);
    if (gad__bad_tensor(a) || gad__bad_tensor(b))
        return gad__bad_of(op, 2, (const gad_tensor *const[]){a, b});
    if (GAD_LACKS_FAM(op, a, select, compare) || GAD_LACKS_FAM(op, a, select, test))
        return NULL;
    gad_tensor *t[2] = {truth(op, a), NULL};
    int64_t shape[GAD_MAX_RANK];
    int rank;
    if (!t[0]) return NULL;
    if (b->dev != a->dev && !(b->rank == 0 && b->dev == GAD_DEV_HOST) &&
        !(a->rank == 0 && a->dev == GAD_DEV_HOST))
        return gad__err_device(op, a->dev, b->dev);
    if (GAD_LACKS_FAM(op, b, select, test) || !(t[1] = truth(op, b)) || unify(op, t, 2) ||
        broadcast_all(op, t, 2, shape, &rank))
        return NULL;
    gad_tensor *y = gad__tensor_new(op, t[0]->dev, GAD_BOOL, shape, rank);
    if (!y) return NULL;
    SEL(y)->compare(k, t[0], t[1], NULL, y);
    return gad__own(y);
}

gad_tensor *gad_logical_and(gad_tensor *a, gad_tensor *b) {
    return logical("logical_and", GAD_CMP_AND, a, b);
}
gad_tensor *gad_logical_or(gad_tensor *a, gad_tensor *b) {
    return logical("logical_or", GAD_CMP_OR, a, b);
}
gad_tensor *gad_logical_xor(gad_tensor *a, gad_tensor *b) {
    return logical("logical_xor", GAD_CMP_XOR, a, b);
}

static gad_tensor *test(const char *op, gad_test_op k, gad_tensor *x) {
    GAD_NEED(op, x);
    if (GAD_LACKS_FAM(op, x, select, test)) return NULL;
    gad_tensor *y = gad__tensor_new(op, x->dev, GAD_BOOL, x->shape, x->rank);
    if (!y) return NULL;
    SEL(x)->test(k, x, y);
    return gad__own(y);
}

gad_tensor *gad_logical_not(gad_tensor *x) { return test("logical_not", GAD_TEST_ZERO, x); }
gad_tensor *gad_isnan(gad_tensor *x) { return test("isnan", GAD_TEST_ISNAN, x); }
gad_tensor *gad_isinf(gad_tensor *x) { return test("isinf", GAD_TEST_ISINF, x); }
gad_tensor *gad_isfinite(gad_tensor *x) { return test("isfinite", GAD_TEST_ISFINITE, x); }

/* -------------------------------------------------------------- any/all */

/* The reduced axes moved last (a packed copy only when they are not
 * already), so that the kernel reduces rows. */
static gad_tensor *any_all(const char *op, gad_tensor *x, const int *axes, int n, int keep,
                           int all) {
    GAD_COMPOSITE(op); /* the permute and copy fail under op */
    GAD_NEED(op, x);
    unsigned mask;
    if (gad__axes_mask(op, axes, n, x->rank, &mask) ||
        GAD_LACKS_FAM(op, x, select, any) || GAD_LACKS_FAM(op, x, select, test))
        return NULL;
    gad_tensor *b = truth(op, x);
    if (!b || mask == 0) return b == x ? gad__own(gad_retain(x)) : b;
    int perm[GAD_MAX_RANK], k = 0, moved = 0;
    int64_t out[GAD_MAX_RANK], kept[GAD_MAX_RANK];
    int nk = 0;
    for (int d = 0; d < x->rank; d++)
        if (!(mask >> d & 1)) {
            moved |= k != d;
            perm[k++] = d;
            kept[nk++] = x->shape[d];
        }
    for (int d = 0; d < x->rank; d++)
        if (mask >> d & 1) {
            moved |= k != d;
            perm[k++] = d;
        }
    for (int d = 0; d < x->rank; d++) out[d] = mask >> d & 1 ? 1 : x->shape[d];
    gad_tensor *p = moved ? gad_permute(b, perm, x->rank) : b;
    gad_tensor *c = p ? gad_contiguous(p) : NULL;
    if (!c) return NULL;
    gad_tensor *y = gad__tensor_new(op, x->dev, GAD_BOOL, keep ? out : kept, keep ? x->rank : nk);
    if (!y) return NULL;
    SEL(y)->any(c, all, y);
    return gad__own(y);
}

gad_tensor *gad_any(gad_tensor *x, const int *axes, int n, int keepdims) {
    return any_all("any", x, axes, n, keepdims, 0);
}
gad_tensor *gad_all(gad_tensor *x, const int *axes, int n, int keepdims) {
    return any_all("all", x, axes, n, keepdims, 1);
}

static gad_tensor *over_all(const char *op, gad_tensor *x, int all) {
    GAD_NEED(op, x);
    int axes[GAD_MAX_RANK];
    for (int d = 0; d < x->rank; d++) axes[d] = d;
    if (x->rank == 0) { /* nothing to reduce: the element's truth */
        if (GAD_LACKS_FAM(op, x, select, test)) return NULL;
        gad_tensor *b = truth(op, x);
        return b == x ? gad__own(gad_retain(x)) : b;
    }
    return any_all(op, x, axes, x->rank, 0, all);
}

gad_tensor *gad_any_all(gad_tensor *x) { return over_all("any_all", x, 0); }
gad_tensor *gad_all_all(gad_tensor *x) { return over_all("all_all", x, 1); }

/* ------------------------------------------------- where and masked_fill */

/* One element of dtype dt holding v (gad_full's conversion) in *buf. 0, or
 * -1 with a domain error for an i64 NaN or out-of-range value. */
static int scalar_bits(const char *op, int dt, double v, void *buf) {
    switch (dt) {
    case GAD_F32: *(float *)buf = (float)v; return 0;
    case GAD_F64: *(double *)buf = v; return 0;
    case GAD_F16: *(uint16_t *)buf = gad__f32_to_f16((float)v); return 0; /* as PyTorch: */
    case GAD_BF16: *(uint16_t *)buf = gad__f32_to_bf16((float)v); return 0; /* through f32 */
    case GAD_BOOL: *(uint8_t *)buf = v != 0; return 0;
    default:
        if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
            gad__err(GAD_ERR_DOMAIN, op, "value %g does not fit in i64", v);
            return -1;
        }
        *(int64_t *)buf = (int64_t)v;
        return 0;
    }
}

/* masked_fill's node: mask ? value : x, or with invert mask ? x : value
 * (where's VJP keeps gy where its condition holds). */
static gad_tensor *fill(const char *op, gad_tensor *x, gad_tensor *mask, double value,
                        int invert) {
    GAD_COMPOSITE(op);
    if (gad__bad_tensor(x) || gad__bad_tensor(mask))
        return gad__bad_of(op, 2, (const gad_tensor *const[]){x, mask});
    if (need_bool(op, "mask", mask) || GAD_LACKS_FAM(op, x, select, where)) return NULL;
    if (mask->dev != x->dev && !(mask->rank == 0 && mask->dev == GAD_DEV_HOST))
        return gad__err_device(op, x->dev, mask->dev);
    _Alignas(8) unsigned char bits[8];
    int64_t shape[GAD_MAX_RANK];
    int rank;
    gad_tensor *t[2] = {x, mask};
    if (scalar_bits(op, x->dtype, value, bits) || broadcast_all(op, t, 2, shape, &rank))
        return NULL;
    if (mask->dev != x->dev && !(mask = gad_to_device(mask, x->dev))) return NULL;
    gad_tensor *y = gad__tensor_new(op, x->dev, x->dtype, shape, rank);
    if (!y) return NULL;
    if (invert) SEL(x)->where(mask, x, NULL, bits, y);
    else SEL(x)->where(mask, NULL, x, bits, y);
    gad_tensor *in[2] = {x, mask};
    y = gad__track(y, GAD_OP(MASKED_FILL), in, 2, &mask, 1);
    if (y && y->node) {
        GAD_NODE_P(y->node, fill)->value = value;
        GAD_NODE_P(y->node, fill)->invert = invert;
    }
    return gad__own(y);
}

gad_tensor *gad_masked_fill(gad_tensor *x, gad_tensor *mask, double value) {
    return fill("masked_fill", x, mask, value, 0);
}

/* gy where c holds, 0 elsewhere (differentiable in gy). */
static gad_tensor *keep_where(gad_tensor *gy, gad_tensor *c) {
    return fill("vjp", gy, c, 0, 1);
}

/* x's gradient: gy with 0 where filled, summed back to x's shape. */
int gad__vjp_masked_fill(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gad_node *x = n->parents[0];
    gad_tensor *g = fill("vjp", gy, gad__saved(n, 0), 0, (int)GAD_NODE_P(n, fill)->invert);
    return (gin[0] = gad__unbroadcast(g, x->shape, x->rank)) ? 0 : -1;
}

gad_tensor *gad_where(gad_tensor *cond, gad_tensor *a, gad_tensor *b) {
    const char *op = "where";
    GAD_COMPOSITE(op);
    if (gad__bad_tensor(cond) || gad__bad_tensor(a) || gad__bad_tensor(b))
        return gad__bad_of(op, 3, (const gad_tensor *const[]){cond, a, b});
    if (need_bool(op, "cond", cond) || GAD_LACKS_FAM(op, a, select, where)) return NULL;
    gad_tensor *t[2] = {a, b};
    int64_t shape[GAD_MAX_RANK];
    int rank;
    if (unify(op, t, 2)) return NULL;
    a = t[0];
    b = t[1];
    if (cond->dev != a->dev) {
        if (cond->rank > 0 || cond->dev != GAD_DEV_HOST)
            return gad__err_device(op, a->dev, cond->dev);
        if (!(cond = gad_to_device(cond, a->dev))) return NULL;
    }
    gad_tensor *all[3] = {cond, a, b};
    if (broadcast_all(op, all, 3, shape, &rank)) return NULL;
    gad_tensor *y = gad__tensor_new(op, a->dev, a->dtype, shape, rank);
    if (!y) return NULL;
    SEL(y)->where(cond, a, b, NULL, y);
    y = gad__track(y, GAD_OP(WHERE), all, 3, &cond, 1);
    return gad__own(y);
}

/* a's gradient: gy where cond holds; b's: gy where it does not; each
 * summed back to its shape. */
int gad__vjp_where(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    gad_tensor *c = gad__saved(n, 0);
    for (int i = 1; i < 3; i++) {
        if (!need[i]) continue;
        gad_node *p = n->parents[i];
        gad_tensor *g = i == 1 ? keep_where(gy, c) : fill("vjp", gy, c, 0, 0);
        if (!(gin[i] = gad__unbroadcast(g, p->shape, p->rank))) return -1;
    }
    return 0;
}

/* ----------------------------------------------------------- tril, triu */

static gad_tensor *tri(const char *op, const gad_op_info *info, gad_tensor *x, int64_t d,
                       int upper) {
    GAD_NEED(op, x);
    if (x->rank < 2) {
        char b[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, op, "needs a tensor of rank 2 or more, got %s",
                        gad__shape_str(b, x->shape, x->rank));
    }
    if (GAD_LACKS_FAM(op, x, select, tri)) return NULL;
    gad_tensor *y = gad__tensor_new(op, x->dev, x->dtype, x->shape, x->rank);
    if (!y) return NULL;
    /* an offset past every column or row means the same as one just past
     * them, and keeps i + diag far from overflowing */
    int64_t rows = x->shape[x->rank - 2], cols = x->shape[x->rank - 1];
    int64_t k = d > cols + 1 ? cols + 1 : d < -rows - 1 ? -rows - 1 : d;
    SEL(x)->tri(x, k, upper, y);
    y = gad__track(y, info, &x, 1, NULL, 0);
    if (y && y->node) GAD_NODE_P(y->node, diag)->diag = d;
    return gad__own(y);
}

gad_tensor *gad_tril(gad_tensor *x, int64_t diagonal) {
    return tri("tril", GAD_OP(TRIL), x, diagonal, 0);
}
gad_tensor *gad_triu(gad_tensor *x, int64_t diagonal) {
    return tri("triu", GAD_OP(TRIU), x, diagonal, 1);
}

int gad__vjp_tril(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    return (gin[0] = gad_tril(gy, GAD_NODE_P(n, diag)->diag)) ? 0 : -1;
}
int gad__vjp_triu(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    return (gin[0] = gad_triu(gy, GAD_NODE_P(n, diag)->diag)) ? 0 : -1;
}

/* --------------------------------------------------------- clamp_tensor */

/* PyTorch's clamp takes no bool ("clamp_cpu" not implemented for 'Bool'). */
static int no_bool(const char *op, const gad_tensor *t) {
    if (t->dtype != GAD_BOOL) return 0;
    gad__err(GAD_ERR_DTYPE, op, "needs f32, f64 or i64 (as PyTorch's), got bool");
    return -1;
}

/* One pass of the select family's clamp (min(max(x, lo), hi), NaN from
 * any side, as PyTorch's clamp), for f32, f64 and i64. */
gad_tensor *gad_clamp_tensor(gad_tensor *x, gad_tensor *lo, gad_tensor *hi) {
    const char *op = "clamp_tensor";
    GAD_COMPOSITE(op);
    if (gad__bad_tensor(x) || (lo && gad__bad_tensor(lo)) || (hi && gad__bad_tensor(hi)))
        return gad__bad_of(op, 3, (const gad_tensor *const[]){x, lo, hi});
    if (!lo && !hi) return gad__err(GAD_ERR_DOMAIN, op, "min and max are both NULL");
    gad_tensor *t[3] = {x, lo, hi};
    int64_t shape[GAD_MAX_RANK];
    int rank;
    if (GAD_LACKS_FAM(op, x, select, clamp) || unify(op, t, 3)) return NULL;
    GAD_HALF_VIA_F32(op, t, 3, gad_clamp_tensor(t[0], t[1], t[2]));
    if (no_bool(op, t[0]) || broadcast_all(op, t, 3, shape, &rank))
        return NULL;
    gad_tensor *y = gad__tensor_new(op, t[0]->dev, t[0]->dtype, shape, rank);
    if (!y) return NULL;
    SEL(y)->clamp(t[0], t[1], t[2], y);
    if (gad__is_float(y->dtype)) /* i64: no gradient */
        y = gad__track(y, GAD_OP(CLAMP_TENSOR), t, 3, t, 3);
    return gad__own(y);
}

/* PyTorch's clamp_backward and clamp_backward_min_max. */
int gad__vjp_clamp_tensor(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    gad_tensor *x = gad__saved(n, 0);
    gad_tensor *lo = n->saved[1] ? gad__saved(n, 1) : NULL;
    gad_tensor *hi = n->saved[2] ? gad__saved(n, 2) : NULL;
    for (int i = 0; i < 3; i++) {
        if (!need[i]) continue;
        gad_tensor *pred;
        if (i == 0)
            pred = lo && hi ? gad_logical_and(gad_ge(x, lo), gad_le(x, hi))
                   : lo     ? gad_ge(x, lo)
                            : gad_le(x, hi);
        else if (i == 1)
            pred = hi ? gad_logical_and(gad_lt(x, lo), gad_lt(lo, hi)) : gad_lt(x, lo);
        else
            pred = lo ? gad_logical_or(gad_gt(x, hi), gad_lt(hi, lo)) : gad_gt(x, hi);
        gad_node *p = n->parents[i];
        if (!(gin[i] = gad__unbroadcast(keep_where(gy, pred), p->shape, p->rank))) return -1;
    }
    return 0;
}

/* -------------------------------------------------------------- samples */

/* A plain f64 tensor of small integers in [lo, hi] (ties for the
 * comparisons), with NaN at every seventh element when nan is set. */
static gad_tensor *small_ints(gad_rng *r, const int64_t *shape, int rank, int lo, int hi,
                              int nan) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    double v[64];
    if (n > 64) return NULL;
    for (int64_t i = 0; i < n; i++)
        v[i] = nan && i % 7 == 3 ? NAN : (double)gad_rng_int(r, lo, hi + 1);
    return gad_from_f64(v, shape, rank);
}

/* A bool mask of the shape, about half true. */
static gad_tensor *sample_mask(gad_rng *r, const int64_t *shape, int rank) {
    return gad_gt_scalar(gad__sample_values(r, shape, rank, -1, 1, 0, 0), 0);
}

#define SHP(...) ((const int64_t[]){__VA_ARGS__})
#define RANK(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define WITH(shape_args) SHP shape_args, RANK shape_args

/* Operands of the comparisons and logical ops, case v: in[0], in[1]. */
static int binary_operands(gad_op_sample *s, gad_rng *r, int v) {
    switch (v) {
    case 0: /* f64 with ties and NaN, broadcast */
        s->in[0] = small_ints(r, WITH((3, 4)), -1, 1, 1);
        s->in[1] = small_ints(r, WITH((4)), -1, 1, 0);
        break;
    case 1: /* i64 */
        s->in[0] = gad_cast(small_ints(r, WITH((2, 3)), -2, 2, 0), GAD_I64);
        s->in[1] = gad_cast(small_ints(r, WITH((2, 3)), -2, 2, 0), GAD_I64);
        break;
    case 2: /* bool, broadcast both ways */
        s->in[0] = sample_mask(r, WITH((3, 1)));
        s->in[1] = sample_mask(r, WITH((1, 4)));
        break;
    case 3: /* f32 with a 0-d f64 (result_type: f32) */
        s->in[0] = gad_cast(small_ints(r, WITH((2, 2, 3)), -1, 1, 1), GAD_F32);
        s->in[1] = gad_scalar_f64(0);
        break;
    case 4: /* empty */
        s->in[0] = gad_zeros(SHP(0, 3), 2, GAD_F64);
        s->in[1] = small_ints(r, WITH((3)), -1, 1, 0);
        break;
    default: return 0;
    }
    s->n = 2;
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] && s->in[1];
}

/* Every op of this file by its id: i[0] the op, i[1] an axis count or
 * keepdims, i[2..] axes, d[0] a scalar. */
static gad_tensor *apply_select(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    int axes[GAD_MAX_RANK];
    for (int k = 0; k < s->i[1]; k++) axes[k] = (int)s->i[3 + k];
    switch (s->i[0]) {
    case GAD_OP_EQ: return gad_eq(in[0], in[1]);
    case GAD_OP_NE: return gad_ne(in[0], in[1]);
    case GAD_OP_LT: return gad_lt(in[0], in[1]);
    case GAD_OP_LE: return gad_le(in[0], in[1]);
    case GAD_OP_GT: return gad_gt(in[0], in[1]);
    case GAD_OP_GE: return gad_ge(in[0], in[1]);
    case GAD_OP_EQ_SCALAR: return gad_eq_scalar(in[0], s->d[0]);
    case GAD_OP_NE_SCALAR: return gad_ne_scalar(in[0], s->d[0]);
    case GAD_OP_LT_SCALAR: return gad_lt_scalar(in[0], s->d[0]);
    case GAD_OP_LE_SCALAR: return gad_le_scalar(in[0], s->d[0]);
    case GAD_OP_GT_SCALAR: return gad_gt_scalar(in[0], s->d[0]);
    case GAD_OP_GE_SCALAR: return gad_ge_scalar(in[0], s->d[0]);
    case GAD_OP_LOGICAL_AND: return gad_logical_and(in[0], in[1]);
    case GAD_OP_LOGICAL_OR: return gad_logical_or(in[0], in[1]);
    case GAD_OP_LOGICAL_XOR: return gad_logical_xor(in[0], in[1]);
    case GAD_OP_LOGICAL_NOT: return gad_logical_not(in[0]);
    case GAD_OP_ISNAN: return gad_isnan(in[0]);
    case GAD_OP_ISINF: return gad_isinf(in[0]);
    case GAD_OP_ISFINITE: return gad_isfinite(in[0]);
    case GAD_OP_ANY: return gad_any(in[0], axes, (int)s->i[1], (int)s->i[2]);
    case GAD_OP_ALL: return gad_all(in[0], axes, (int)s->i[1], (int)s->i[2]);
    case GAD_OP_WHERE: return gad_where(in[0], in[1], in[2]);
    case GAD_OP_MASKED_FILL: return gad_masked_fill(in[0], in[1], s->d[0]);
    case GAD_OP_TRIL: return gad_tril(in[0], s->i[2]);
    case GAD_OP_TRIU: return gad_triu(in[0], s->i[2]);
    default: return gad_clamp_tensor(in[0], in[1], in[2]);
    }
}

static int sample_binary(gad_op_sample *s, gad_rng *r, int v, int op) {
    s->i[0] = op;
    s->apply = apply_select;
    return binary_operands(s, r, v);
}

int gad__sample_eq(gad_op_sample *s, gad_rng *r, int v) { return sample_binary(s, r, v, GAD_OP_EQ); }
int gad__sample_ne(gad_op_sample *s, gad_rng *r, int v) { return sample_binary(s, r, v, GAD_OP_NE); }
int gad__sample_lt(gad_op_sample *s, gad_rng *r, int v) { return sample_binary(s, r, v, GAD_OP_LT); }
int gad__sample_le(gad_op_sample *s, gad_rng *r, int v) { return sample_binary(s, r, v, GAD_OP_LE); }
int gad__sample_gt(gad_op_sample *s, gad_rng *r, int v) { return sample_binary(s, r, v, GAD_OP_GT); }
int gad__sample_ge(gad_op_sample *s, gad_rng *r, int v) { return sample_binary(s, r, v, GAD_OP_GE); }
int gad__sample_logical_and(gad_op_sample *s, gad_rng *r, int v) {
    return sample_binary(s, r, v, GAD_OP_LOGICAL_AND);
}
int gad__sample_logical_or(gad_op_sample *s, gad_rng *r, int v) {
    return sample_binary(s, r, v, GAD_OP_LOGICAL_OR);
}
int gad__sample_logical_xor(gad_op_sample *s, gad_rng *r, int v) {
    return sample_binary(s, r, v, GAD_OP_LOGICAL_XOR);
}

/* One operand, case v: f64 with NaN and infinities, i64, bool, f32, empty. */
static int unary_operand(gad_op_sample *s, gad_rng *r, int v) {
    static const double special[6] = {1.5, NAN, -INFINITY, 0.0, INFINITY, -0.0};
    switch (v) {
    case 0: s->in[0] = gad_from_f64(special, SHP(2, 3), 2); break;
    case 1: s->in[0] = gad_cast(small_ints(r, WITH((3, 2)), -1, 1, 0), GAD_I64); break;
    case 2: s->in[0] = sample_mask(r, WITH((5))); break;
    case 3: s->in[0] = gad_transpose(gad_cast(small_ints(r, WITH((3, 4)), -1, 1, 1), GAD_F32)); break;
    case 4: s->in[0] = gad_zeros(SHP(2, 0), 2, GAD_F32); break;
    default: return 0;
    }
    s->n = 1;
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] != NULL;
}

static int sample_unary(gad_op_sample *s, gad_rng *r, int v, int op) {
    s->i[0] = op;
    s->apply = apply_select;
    return unary_operand(s, r, v);
}

int gad__sample_logical_not(gad_op_sample *s, gad_rng *r, int v) {
    return sample_unary(s, r, v, GAD_OP_LOGICAL_NOT);
}
int gad__sample_isnan(gad_op_sample *s, gad_rng *r, int v) { return sample_unary(s, r, v, GAD_OP_ISNAN); }
int gad__sample_isinf(gad_op_sample *s, gad_rng *r, int v) { return sample_unary(s, r, v, GAD_OP_ISINF); }
int gad__sample_isfinite(gad_op_sample *s, gad_rng *r, int v) {
    return sample_unary(s, r, v, GAD_OP_ISFINITE);
}

/* The scalar comparisons: the unary cases with an integral scalar, then an
 * i64 one with a fractional scalar (compared in f32) and f64 against
 * NaN. */
static int sample_scalar(gad_op_sample *s, gad_rng *r, int v, int op) {
    s->i[0] = op;
    s->apply = apply_select;
    s->d[0] = v == 2 ? 1 : 0;
    if (v < 5) return unary_operand(s, r, v);
    s->n = 1;
    snprintf(s->what, sizeof s->what, "case #%d", v);
    if (v == 5) {
        s->in[0] = gad_cast(small_ints(r, WITH((2, 3)), -2, 2, 0), GAD_I64);
        s->d[0] = 0.5;
    } else if (v == 6) {
        s->in[0] = small_ints(r, WITH((4)), -1, 1, 1);
        s->d[0] = NAN;
    } else {
        return 0;
    }
    return s->in[0] != NULL;
}

int gad__sample_eq_scalar(gad_op_sample *s, gad_rng *r, int v) {
    return sample_scalar(s, r, v, GAD_OP_EQ_SCALAR);
}
int gad__sample_ne_scalar(gad_op_sample *s, gad_rng *r, int v) {
    return sample_scalar(s, r, v, GAD_OP_NE_SCALAR);
}
int gad__sample_lt_scalar(gad_op_sample *s, gad_rng *r, int v) {
    return sample_scalar(s, r, v, GAD_OP_LT_SCALAR);
}
int gad__sample_le_scalar(gad_op_sample *s, gad_rng *r, int v) {
    return sample_scalar(s, r, v, GAD_OP_LE_SCALAR);
}
int gad__sample_gt_scalar(gad_op_sample *s, gad_rng *r, int v) {
    return sample_scalar(s, r, v, GAD_OP_GT_SCALAR);
}
int gad__sample_ge_scalar(gad_op_sample *s, gad_rng *r, int v) {
    return sample_scalar(s, r, v, GAD_OP_GE_SCALAR);
}

/* any/all: (shape, axes, keepdims) cases on masks and floats. */
static int sample_reduce(gad_op_sample *s, gad_rng *r, int v, int op) {
    static const struct {
        int rank;
        int64_t shape[3];
        int naxes, axes[3], keep, mask;
    } cases[] = {
        {2, {3, 4}, 1, {1}, 0, 1},      {3, {2, 3, 4}, 2, {0, 2}, 1, 1},
        {2, {3, 4}, 2, {-1, 0}, 0, 0},  {2, {0, 3}, 1, {0}, 0, 1},
        {2, {2, 3}, 0, {0}, 1, 1},      {3, {2, 1, 3}, 1, {1}, 0, 0},
        {1, {200}, 1, {0}, 1, 1},
    };
    if (v >= (int)(sizeof cases / sizeof cases[0])) return 0;
    s->i[0] = op;
    s->apply = apply_select;
    s->n = 1;
    s->i[1] = cases[v].naxes;
    s->i[2] = cases[v].keep;
    for (int k = 0; k < cases[v].naxes; k++) s->i[3 + k] = cases[v].axes[k];
    /* mostly true for all, mostly false for any: both answers occur */
    double lo = op == GAD_OP_ALL ? -0.3 : -1.7;
    gad_tensor *x = gad__sample_values(r, cases[v].shape, cases[v].rank, lo, 1, 0, 0);
    /* a mask, or floats that are 0 where the mask would be false */
    s->in[0] = cases[v].mask ? gad_gt_scalar(x, 0) : gad_masked_fill(x, gad_le_scalar(x, 0), 0);
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] != NULL;
}

int gad__sample_any(gad_op_sample *s, gad_rng *r, int v) { return sample_reduce(s, r, v, GAD_OP_ANY); }
int gad__sample_all(gad_op_sample *s, gad_rng *r, int v) { return sample_reduce(s, r, v, GAD_OP_ALL); }

/* where: (cond, a, b) of several broadcasts, a 0-d b. */
int gad__sample_where(gad_op_sample *s, gad_rng *r, int v) {
    s->i[0] = GAD_OP_WHERE;
    s->apply = apply_select;
    s->n = 3;
    s->smooth = 1;
    switch (v) {
    case 0:
        s->in[0] = sample_mask(r, WITH((3, 4)));
        s->in[1] = gad__sample_leaf(r, WITH((3, 4)), -2, 2, 0);
        s->in[2] = gad__sample_leaf(r, WITH((3, 4)), -2, 2, 0);
        break;
    case 1:
        s->in[0] = sample_mask(r, WITH((3, 1)));
        s->in[1] = gad__sample_leaf(r, WITH((4)), -2, 2, 0);
        s->in[2] = gad__sample_leaf(r, WITH((2, 3, 4)), -2, 2, 0);
        break;
    case 2:
        s->in[0] = sample_mask(r, WITH((2, 3)));
        s->in[1] = gad__sample_leaf(r, WITH((2, 3)), -2, 2, 0);
        s->in[2] = gad__sample_leaf(r, NULL, 0, -2, 2, 0);
        break;
    default: return 0;
    }
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] && s->in[1] && s->in[2];
}

int gad__sample_masked_fill(gad_op_sample *s, gad_rng *r, int v) {
    static const struct {
        int rx;
        int64_t x[3];
        int rm;
        int64_t m[3];
        double value;
    } cases[] = {
        {2, {3, 4}, 2, {3, 4}, -1.5},
        {1, {4}, 2, {3, 4}, 2.0},
        {3, {2, 3, 4}, 1, {4}, 0.0},
    };
    if (v >= (int)(sizeof cases / sizeof cases[0])) return 0;
    s->i[0] = GAD_OP_MASKED_FILL;
    s->apply = apply_select;
    s->n = 2;
    s->smooth = 1;
    s->d[0] = cases[v].value;
    s->in[0] = gad__sample_leaf(r, cases[v].x, cases[v].rx, -2, 2, 0);
    s->in[1] = sample_mask(r, cases[v].m, cases[v].rm);
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] && s->in[1];
}

static int sample_tri(gad_op_sample *s, gad_rng *r, int v, int op) {
    static const struct {
        int rank;
        int64_t shape[3];
        int64_t diag;
    } cases[] = {
        {2, {4, 5}, 0}, {3, {2, 3, 4}, 1}, {2, {5, 3}, -1}, {2, {3, 3}, 10}, {2, {3, 4}, -7},
    };
    if (v >= (int)(sizeof cases / sizeof cases[0])) return 0;
    s->i[0] = op;
    s->i[2] = cases[v].diag;
    s->apply = apply_select;
    s->n = 1;
    s->smooth = 1;
    s->in[0] = gad__sample_leaf(r, cases[v].shape, cases[v].rank, -2, 2, 0);
    snprintf(s->what, sizeof s->what, "case #%d (diagonal %lld)", v, (long long)cases[v].diag);
    return s->in[0] != NULL;
}

int gad__sample_tril(gad_op_sample *s, gad_rng *r, int v) { return sample_tri(s, r, v, GAD_OP_TRIL); }
int gad__sample_triu(gad_op_sample *s, gad_rng *r, int v) { return sample_tri(s, r, v, GAD_OP_TRIU); }

/* clamp_tensor: both bounds (broadcast, min < max), one of them, and
 * bounds that cross (min > max somewhere). Values keep away from the
 * kinks by the draw: x in [-2, 2), bounds in [-1, 0) and [0, 1). */
int gad__sample_clamp_tensor(gad_op_sample *s, gad_rng *r, int v) {
    if (v > 3) return 0;
    s->i[0] = GAD_OP_CLAMP_TENSOR;
    s->apply = apply_select;
    s->n = 3;
    s->in[0] = gad__sample_leaf(r, WITH((3, 4)), -2, 2, 0);
    if (v != 2) s->in[1] = gad__sample_leaf(r, WITH((3, 4)), -1, 0, 0);
    if (v != 1) s->in[2] = gad__sample_leaf(r, WITH((4)), v == 3 ? -1.5 : 0.05, v == 3 ? -0.2 : 1, 0);
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] && (v == 2 || s->in[1]) && (v == 1 || s->in[2]);
}

/* ---- composites (ops.def's COMPOSITE rows): any_all, all_all, no gradient */
static gad_tensor *apply_any_all(void *self, gad_tensor *const *in, int n) {
    (void)n;
    return ((gad_op_sample *)self)->i[0] == GAD_OP_ALL_ALL ? gad_all_all(in[0])
                                                            : gad_any_all(in[0]);
}

static int sample_any_all(gad_op_sample *s, gad_rng *r, int v, int op) {
    static const struct {
        int rank;
        int64_t shape[3];
        int mask;
    } c[] = {{2, {3, 4}, 1}, {3, {2, 3, 2}, 0}, {1, {0}, 1}, {0, {0}, 0}, {1, {300}, 1}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_any_all};
    s->i[0] = op;
    /* mostly true for all, mostly false for any: both answers occur */
    double lo = op == GAD_OP_ALL_ALL ? -0.1 : -9;
    gad_tensor *x = gad__sample_values(r, c[v].shape, c[v].rank, lo, 1, 0, 0);
    s->in[0] = c[v].mask ? gad_gt_scalar(x, 0) : gad_masked_fill(x, gad_le_scalar(x, 0), 0);
    snprintf(s->what, sizeof s->what, "%s case #%d", gad__ops[op].info.name, v);
    return s->in[0] != NULL;
}

int gad__sample_any_all(gad_op_sample *s, gad_rng *r, int v) {
    return sample_any_all(s, r, v, GAD_OP_ANY_ALL);
}
int gad__sample_all_all(gad_op_sample *s, gad_rng *r, int v) {
    return sample_any_all(s, r, v, GAD_OP_ALL_ALL);
}
