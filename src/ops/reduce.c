/* reduce.c: sum, mean, variance, stddev, amax, argmax, logsumexp, softmax,
 * log_softmax (SPEC §3.2, §3.3, §3.4, §4.6). */
#include "ops_int.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

/* The reduced shape of x for the axes in mask. */
static int reduced_shape(const gad_tensor *x, unsigned mask, int keepdims,
                         int64_t *shape) {
    int r = 0;
    for (int d = 0; d < x->rank; d++) {
        if (mask & (1u << d)) {
            if (keepdims) shape[r++] = 1;
        } else {
            shape[r++] = x->shape[d];
        }
    }
    return r;
}

/* An axis that x broadcasts: stride 0 over more than one element. */
static bool bcast_axis(const gad_tensor *x, int d) {
    return x->strides[d] == 0 && x->shape[d] > 1;
}

/* y (fresh, contiguous, the reduced shape) = the sum of x over mask, times
 * 1/n for a mean. A non-empty x with broadcast axes is not packed (a
 * [2^40] view of one element would be 4 TiB): the kernel sums the view of
 * its distinct elements (x without those axes, packed) in its usual order,
 * and a reduced broadcast axis of size k counts through the kernel's scale,
 * k * (that sum) rounded once (a mean divides by the distinct count only);
 * a kept broadcast axis repeats the sums, which are then copied out along
 * it. Without broadcast axes the kernel sums the packed x as it always has.
 * 0, or -1 with the error recorded under op. */
static int sum_into(const char *op, gad_tensor *x, unsigned mask, int keepdims,
                    bool mean, int64_t n, gad_tensor *y) {
    bool bcast = false;
    for (int d = 0; d < x->rank; d++) bcast |= bcast_axis(x, d);
    if (!bcast || x->numel == 0) {
        gad_tensor *xc = gad__contig(op, x);
        if (!xc) return -1;
        GAD_BE(x)->sum(xc, mask, mean ? 1.0 / (double)n : 1.0, y);
        gad_release(xc);
        return 0;
    }
    /* v: x's axes that it does not broadcast; z: v's kept axes */
    int64_t vsh[GAD_MAX_RANK], vst[GAD_MAX_RANK], zsh[GAD_MAX_RANK];
    int vr = 0, zr = 0;
    unsigned vmask = 0;
    double reps = 1, distinct = 1;
    bool kept_bcast = false;
    for (int d = 0; d < x->rank; d++) {
        bool red = mask & (1u << d);
        if (bcast_axis(x, d)) {
            if (red) reps *= (double)x->shape[d];
            else kept_bcast = true;
            continue;
        }
        if (red) {
            vmask |= 1u << vr;
            distinct *= (double)x->shape[d];
        } else {
            zsh[zr++] = x->shape[d];
        }
        vsh[vr] = x->shape[d];
        vst[vr++] = x->strides[d];
    }
    double scale = mean ? 1.0 / distinct : reps;
    gad_tensor *v = gad__view_new(op, x, vsh, vst, vr, x->offset);
    gad_tensor *vc = v ? gad__contig(op, v) : NULL;
    gad_release(v);
    if (!vc) return -1;
    if (!kept_bcast) { /* y holds the sums in the order the kernel writes them */
        GAD_BE(x)->sum(vc, vmask, scale, y);
        gad_release(vc);
        return 0;
    }
    gad_tensor *z = gad__tensor_new(op, x->dev, x->dtype, zsh, zr);
    if (!z) {
        gad_release(vc);
        return -1;
    }
    GAD_BE(x)->sum(vc, vmask, scale, z);
    gad_release(vc);
    /* z seen in y's shape: stride 0 along the kept broadcast axes (and the
     * kept size-1 axes of keepdims), z's own strides along the others */
    int64_t zst[GAD_MAX_RANK], ysh[GAD_MAX_RANK], yst[GAD_MAX_RANK];
    gad__row_major(zsh, zr, zst);
    int yr = 0, k = 0;
    for (int d = 0; d < x->rank; d++) {
        if (mask & (1u << d)) {
            if (keepdims) ysh[yr] = 1, yst[yr++] = 0;
        } else if (bcast_axis(x, d)) {
            ysh[yr] = x->shape[d], yst[yr++] = 0;
        } else {
            ysh[yr] = x->shape[d], yst[yr++] = zst[k++];
        }
    }
    gad_tensor *zv = gad__view_new(op, z, ysh, yst, yr, 0);
    if (zv) gad__pack(zv, gad__ptr(y));
    gad_release(zv);
    gad_release(z);
    return zv ? 0 : -1;
}

/* Sum over mask, times 1/n for a mean (n = 0 makes the factor inf, hence
 * a NaN mean, as NumPy). */
static gad_tensor *sum_mask(const char *op, gad_tensor *x, unsigned mask,
                            int keepdims, bool mean) {
    int64_t shape[GAD_MAX_RANK], n = 1;
    int r = reduced_shape(x, mask, keepdims, shape);
    for (int d = 0; d < x->rank; d++)
        if (mask & (1u << d)) n *= x->shape[d];
    if (GAD_LACKS(op, x, sum)) return NULL;
    gad_tensor *y = gad__tensor_new(op, x->dev, x->dtype, shape, r);
    if (!y || sum_into(op, x, mask, keepdims, mean, n, y)) {
        gad_release(y);
        return NULL;
    }
    y = mean ? gad__track(y, GAD_OP(MEAN), &x, 1, NULL, 0)
             : gad__track(y, GAD_OP(SUM), &x, 1, NULL, 0);
    if (y && y->node) {
        gad_np_reduce *np = GAD_NODE_P(y->node, reduce);
        np->mask = mask;
        np->keepdims = keepdims;
        np->count = n;
    }
    return gad__own(y);
}

static gad_tensor *reduce_axes(const char *op, gad_tensor *x, const int *axes,
                               int n, int keepdims, bool mean) {
    GAD_NEED(op, x);
    if (gad__need_floating(op, x)) return NULL;
    unsigned mask;
    if (gad__axes_mask(op, axes, n, x->rank, &mask)) return NULL;
    return sum_mask(op, x, mask, keepdims, mean);
}

gad_tensor *gad_sum(gad_tensor *x, const int *axes, int n, int keepdims) {
    return reduce_axes("sum", x, axes, n, keepdims, false);
}
gad_tensor *gad_mean(gad_tensor *x, const int *axes, int n, int keepdims) {
    return reduce_axes("mean", x, axes, n, keepdims, true);
}

static gad_tensor *reduce_all(const char *op, gad_tensor *x, bool mean) {
    GAD_NEED(op, x);
    if (gad__need_floating(op, x)) return NULL;
    unsigned mask = x->rank ? (1u << x->rank) - 1 : 0;
    return sum_mask(op, x, mask, 0, mean);
}

gad_tensor *gad_sum_all(gad_tensor *x) { return reduce_all("sum_all", x, false); }
gad_tensor *gad_mean_all(gad_tensor *x) { return reduce_all("mean_all", x, true); }

/* variance = mean((x - mean(x, keep))^2), population form. */
gad_tensor *gad_variance(gad_tensor *x, const int *axes, int n, int keepdims) {
    GAD_NEED("variance", x);
    if (gad__need_floating("variance", x)) return NULL;
    unsigned mask;
    if (gad__axes_mask("variance", axes, n, x->rank, &mask)) return NULL;
    GAD_COMPOSITE("variance");
    gad_scope_begin();
    gad_tensor *m = gad_mean(x, axes, n, 1);
    gad_tensor *d = gad_sub(x, m);
    gad_tensor *v = gad_keep(gad_mean(gad_square(d), axes, n, keepdims));
    gad_scope_end();
    return v;
}

gad_tensor *gad_stddev(gad_tensor *x, const int *axes, int n, int keepdims) {
    GAD_NEED("stddev", x);
    unsigned mask;
    if (gad__need_floating("stddev", x) || gad__axes_mask("stddev", axes, n, x->rank, &mask))
        return NULL;
    GAD_COMPOSITE("stddev");
    gad_scope_begin();
    gad_tensor *s = gad_keep(gad_sqrt(gad_variance(x, axes, n, keepdims)));
    gad_scope_end();
    return s;
}

/* ------------------------------------------------------ one-axis reductions */

/* Checks shared by amax, argmax, softmax and log_softmax: a float tensor,
 * a valid axis, a non-empty axis. */
static int axis_op_check(const char *op, gad_tensor *x, int axis, int *a) {
    if (gad__need_floating(op, x) || gad__norm_axis(op, axis, x->rank, a)) return -1;
    if (x->shape[*a] == 0) {
        char b[GAD_SHAPE_BUF];
        gad__err(GAD_ERR_SHAPE, op, "empty axis %d of %s has no identity", axis,
                 gad__shape_str(b, x->shape, x->rank));
        return -1;
    }
    return 0;
}

static gad_tensor *amax_like(const char *op, gad_tensor *x, int axis,
                             int keepdims, bool arg) {
    GAD_NEED(op, x);
    int a;
    if (axis_op_check(op, x, axis, &a) || (arg ? GAD_LACKS(op, x, argmax) : GAD_LACKS(op, x, amax)))
        return NULL;
    int64_t shape[GAD_MAX_RANK];
    int r = reduced_shape(x, 1u << a, keepdims, shape);
    gad_tensor *y = gad__tensor_new(op, x->dev, arg ? GAD_I64 : x->dtype, shape, r);
    gad_tensor *xc = y ? gad__contig(op, x) : NULL;
    if (!xc) {
        gad_release(y);
        return NULL;
    }
    if (arg) GAD_BE(x)->argmax(xc, a, y);
    else GAD_BE(x)->amax(xc, a, y);
    gad_release(xc);
    if (!arg) { /* argmax has no gradient: its output is an index */
        y = gad__track(y, GAD_OP(AMAX), &x, 1, &x, 1);
        if (y && y->node) {
            GAD_NODE_P(y->node, axis_keep)->axis = a;
            GAD_NODE_P(y->node, axis_keep)->keepdims = keepdims;
        }
    }
    return gad__own(y);
}

gad_tensor *gad_amax(gad_tensor *x, int axis, int keepdims) {
    return amax_like("amax", x, axis, keepdims, false);
}
gad_tensor *gad_argmax(gad_tensor *x, int axis, int keepdims) {
    /* i64 through the sort family's kernel, which also words bool's error */
    if (x && !gad__bad_tensor(x) && (x->dtype == GAD_I64 || x->dtype == GAD_BOOL))
        return gad__arg_extreme("argmax", x, axis, keepdims, 1);
    return amax_like("argmax", x, axis, keepdims, true);
}

static gad_tensor *softmax_like(const char *op, gad_tensor *x, int axis, int log) {
    GAD_NEED(op, x);
    int a;
    if (axis_op_check(op, x, axis, &a) || GAD_LACKS(op, x, softmax)) return NULL;
    gad_tensor *y = gad__tensor_like(op, x);
    gad_tensor *xc = y ? gad__contig(op, x) : NULL;
    if (!xc) {
        gad_release(y);
        return NULL;
    }
    GAD_BE(x)->softmax(xc, a, log, y);
    gad_release(xc);
    y = log ? gad__track(y, GAD_OP(LOG_SOFTMAX), &x, 1, &y, 1)
            : gad__track(y, GAD_OP(SOFTMAX), &x, 1, &y, 1);
    if (y && y->node) GAD_NODE_P(y->node, axis)->axis = a;
    return gad__own(y);
}

gad_tensor *gad_softmax(gad_tensor *x, int axis) {
    return softmax_like("softmax", x, axis, 0);
}
gad_tensor *gad_log_softmax(gad_tensor *x, int axis) {
    return softmax_like("log_softmax", x, axis, 1);
}

/* logsumexp = log(sum(exp(x - m))) + m with m = amax(x) held constant.
 * Over an empty axis it is log(0) = -inf, as torch.logsumexp (the sum has
 * an identity, unlike the max), computed as log(sum(exp(x))) so that the
 * gradient (an empty tensor) flows as usual. */
gad_tensor *gad_logsumexp(gad_tensor *x, int axis, int keepdims) {
    GAD_NEED("logsumexp", x);
    int a;
    if (gad__need_floating("logsumexp", x) || gad__norm_axis("logsumexp", axis, x->rank, &a))
        return NULL;
    GAD_COMPOSITE("logsumexp");
    if (x->shape[a] == 0) {
        gad_scope_begin();
        gad_tensor *e = gad_keep(gad_log(gad_sum(gad_exp(x), &a, 1, keepdims)));
        gad_scope_end();
        return e;
    }
    gad_scope_begin();
    gad_no_grad_begin(); /* m is a constant shift: off the tape */
    gad_tensor *m = gad_amax(x, a, 1);
    gad_no_grad_end();
    /* An all-(-inf) or all-NaN slice must not shift by an infinity (which
     * would give NaN): m clamped to the finite range shifts it by the
     * largest finite value instead, which leaves -inf, +inf and NaN as they
     * are and every finite m unchanged. */
    if (m) {
        /* the largest finite value of m's dtype */
        double big = m->dtype == GAD_F64    ? DBL_MAX
                     : m->dtype == GAD_F16  ? 65504.0
                     : m->dtype == GAD_BF16 ? 0x1.fep127
                                            : FLT_MAX;
        m = gad__const_unary(GAD_UK_CLAMP, m, -big, big);
    }
    gad_tensor *s = gad_sum(gad_exp(gad_sub(x, m)), &a, 1, 1);
    gad_tensor *out = gad_add(gad_log(s), m);
    if (!keepdims) out = gad_squeeze(out, a);
    gad_keep(out);
    gad_scope_end();
    return out;
}

/* ------------------------------------------------------------------- VJPs */

/* g (the reduced shape) unsqueezed at the reduced axes when they were
 * dropped, then broadcast back to the input's shape. */
static gad_tensor *expand_reduced(gad_node *n, gad_tensor *g, unsigned mask,
                                  int keepdims) {
    gad_node *x = n->parents[0];
    for (int d = 0; !keepdims && g && d < x->rank; d++)
        if (mask & (1u << d)) g = gad_unsqueeze(g, d);
    return gad_broadcast_to(g, x->shape, x->rank);
}

int gad__vjp_sum(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    const gad_np_reduce *np = GAD_NODE_P(n, reduce);
    gin[0] = expand_reduced(n, gy, (unsigned)np->mask, (int)np->keepdims);
    return gin[0] ? 0 : -1;
}

int gad__vjp_mean(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    const gad_np_reduce *np = GAD_NODE_P(n, reduce);
    if (np->count == 0) return 0; /* an empty mean: no gradient */
    gad_tensor *g = gad_mul_scalar(gy, 1.0 / (double)np->count);
    gin[0] = expand_reduced(n, g, (unsigned)np->mask, (int)np->keepdims);
    return gin[0] ? 0 : -1;
}

/* The first maximum of each slice takes the gradient; NaN never does. */
int gad__vjp_amax(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    int axis = (int)GAD_NODE_P(n, axis_keep)->axis;
    gad_tensor *x = n->saved[0];
    if (GAD_LACKS("amax", x, amax_mask)) return -1;
    gad_tensor *mask = gad__tensor_like("amax", x);
    gad_tensor *xc = mask ? gad__contig("amax", x) : NULL;
    if (!xc) {
        gad_release(mask);
        return -1;
    }
    GAD_BE(x)->amax_mask(xc, axis, mask);
    gad_release(xc);
    gad__own(mask);
    gad_tensor *g = GAD_NODE_P(n, axis_keep)->keepdims ? gy : gad_unsqueeze(gy, axis);
    return (gin[0] = gad_mul(mask, g)) ? 0 : -1;
}

/* softmax: gx = y * (gy - sum(gy * y)) over the softmax axis */
int gad__vjp_softmax(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    int axis = (int)GAD_NODE_P(n, axis)->axis;
    gad_tensor *y = gad__saved(n, 0);
    gad_tensor *dot = gad_sum(gad_mul(gy, y), &axis, 1, 1);
    return (gin[0] = gad_mul(y, gad_sub(gy, dot))) ? 0 : -1;
}

/* log_softmax: gx = gy - softmax * sum(gy) over the axis */
int gad__vjp_log_softmax(gad_node *n, gad_tensor *gy, const bool *need,
                         gad_tensor **gin) {
    (void)need;
    int axis = (int)GAD_NODE_P(n, axis)->axis;
    gad_tensor *y = gad__saved(n, 0);
    gad_tensor *s = gad_sum(gy, &axis, 1, 1);
    return (gin[0] = gad_sub(gy, gad_mul(gad_exp(y), s))) ? 0 : -1;
}

/* ---------------------------------------------------------------- samples */

/* i[0] op, i[1] rank, i[2..] shape..., then i[10] naxes, i[11..] axes,
 * i[15] keepdims (sum/mean) or axis (one-axis ops) */
static gad_tensor *apply_reduce(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    int axes[4];
    for (int k = 0; k < s->i[10]; k++) axes[k] = (int)s->i[11 + k];
    switch (s->i[0]) {
    case GAD_OP_SUM: return gad_sum(in[0], axes, (int)s->i[10], (int)s->i[15]);
    case GAD_OP_MEAN: return gad_mean(in[0], axes, (int)s->i[10], (int)s->i[15]);
    case GAD_OP_AMAX: return gad_amax(in[0], axes[0], (int)s->i[15]);
    case GAD_OP_ARGMAX: return gad_argmax(in[0], axes[0], (int)s->i[15]);
    case GAD_OP_SOFTMAX: return gad_softmax(in[0], axes[0]);
    default: return gad_log_softmax(in[0], axes[0]);
    }
}

static const struct {
    int rank;
    int64_t shape[3];
    int naxes;
    int axes[3];
    int keep;
} reduce_cases[] = {
    {2, {3, 4}, 1, {1}, 0},       {3, {2, 3, 4}, 2, {0, 2}, 1},
    {2, {3, 4}, 2, {-1, 0}, 0},   {2, {0, 3}, 1, {0}, 0},
    {0, {0}, 0, {0}, 0},          {2, {2, 3}, 0, {0}, 1},
    {3, {2, 1, 3}, 1, {1}, 0},
};
static const struct {
    int rank;
    int64_t shape[3];
    int axis;
    int keep;
} axis_cases[] = {
    {2, {3, 4}, 1, 0}, {3, {2, 3, 4}, 0, 1}, {3, {2, 3, 4}, -2, 0}, {1, {5}, 0, 0},
    {2, {1, 5}, -1, 1},
};

static int reduce_sample(gad_op_sample *s, gad_rng *r, int v, int op) {
    bool axis_op = op != GAD_OP_SUM && op != GAD_OP_MEAN;
    int count = axis_op ? (int)(sizeof axis_cases / sizeof axis_cases[0])
                        : (int)(sizeof reduce_cases / sizeof reduce_cases[0]);
    if (v >= count) return 0;
    s->n = 1;
    s->i[0] = op;
    s->apply = apply_reduce;
    s->smooth = op != GAD_OP_AMAX && op != GAD_OP_ARGMAX;
    if (axis_op) {
        s->i[10] = 1;
        s->i[11] = axis_cases[v].axis;
        s->i[15] = axis_cases[v].keep;
        s->in[0] = gad__sample_leaf(r, axis_cases[v].shape, axis_cases[v].rank, -2, 2, 0);
        if (op == GAD_OP_ARGMAX && s->in[0]) s->in[0] = gad_detach(s->in[0]); /* no gradient */
    } else {
        s->i[10] = reduce_cases[v].naxes;
        for (int k = 0; k < reduce_cases[v].naxes; k++) s->i[11 + k] = reduce_cases[v].axes[k];
        s->i[15] = reduce_cases[v].keep;
        s->in[0] = gad__sample_leaf(r, reduce_cases[v].shape, reduce_cases[v].rank, -2, 2, 0);
    }
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] != NULL;
}

int gad__sample_sum(gad_op_sample *s, gad_rng *r, int v) { return reduce_sample(s, r, v, GAD_OP_SUM); }
int gad__sample_mean(gad_op_sample *s, gad_rng *r, int v) { return reduce_sample(s, r, v, GAD_OP_MEAN); }
int gad__sample_amax(gad_op_sample *s, gad_rng *r, int v) { return reduce_sample(s, r, v, GAD_OP_AMAX); }
int gad__sample_softmax(gad_op_sample *s, gad_rng *r, int v) { return reduce_sample(s, r, v, GAD_OP_SOFTMAX); }
int gad__sample_log_softmax(gad_op_sample *s, gad_rng *r, int v) {
    return reduce_sample(s, r, v, GAD_OP_LOG_SOFTMAX);
}
int gad__sample_argmax(gad_op_sample *s, gad_rng *r, int v) {
    return reduce_sample(s, r, v, GAD_OP_ARGMAX);
}

/* ---- composites (ops.def's COMPOSITE rows): variance, stddev, logsumexp */

/* i[0]: the row, i[1]: keepdims, i[2]: the number of axes, i[3..]: them */
static gad_tensor *apply_composite(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    int axes[GAD_MAX_RANK], k = (int)s->i[2];
    for (int a = 0; a < k; a++) axes[a] = (int)s->i[3 + a];
    switch (s->i[0]) {
    case GAD_OP_VARIANCE: return gad_variance(in[0], axes, k, (int)s->i[1]);
    case GAD_OP_STDDEV: return gad_stddev(in[0], axes, k, (int)s->i[1]);
    default: return gad_logsumexp(in[0], axes[0], (int)s->i[1]);
    }
}

static int composite_sample(gad_op_sample *s, gad_rng *r, int v, int op) {
    static const struct {
        int rank;
        int64_t shape[3];
        int naxes, axes[3], keep;
    } cases[] = {
        {2, {3, 4}, 1, {1}, 0}, {3, {2, 3, 4}, 2, {0, 2}, 1}, {3, {2, 3, 4}, 1, {-2}, 1},
        {1, {5}, 1, {0}, 0},   {2, {0, 3}, 1, {1}, 0},
    };
    int nc = (int)(sizeof cases / sizeof cases[0]);
    /* logsumexp takes one axis: case v is the v-th of those */
    for (int c = 0, seen = 0; op == GAD_OP_LOGSUMEXP && c < nc; c++)
        if (cases[c].naxes == 1 && seen++ == v) {
            v = c;
            break;
        } else if (c == nc - 1) {
            return 0;
        }
    if (v >= nc) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_composite, .smooth = 1};
    s->i[0] = op;
    s->i[1] = cases[v].keep;
    s->i[2] = cases[v].naxes;
    for (int a = 0; a < cases[v].naxes; a++) s->i[3 + a] = cases[v].axes[a];
    s->in[0] = gad__sample_leaf(r, cases[v].shape, cases[v].rank, -2, 2, 0);
    int k = gad__shape_str(s->what, cases[v].shape, cases[v].rank) ? (int)strlen(s->what) : 0;
    snprintf(s->what + k, sizeof s->what - (size_t)k, " axis %d%s", cases[v].axes[0],
             cases[v].keep ? " keepdims" : "");
    return s->in[0] != NULL;
}

int gad__sample_variance(gad_op_sample *s, gad_rng *r, int v) {
    return composite_sample(s, r, v, GAD_OP_VARIANCE);
}
int gad__sample_stddev(gad_op_sample *s, gad_rng *r, int v) {
    return composite_sample(s, r, v, GAD_OP_STDDEV);
}
int gad__sample_logsumexp(gad_op_sample *s, gad_rng *r, int v) {
    return composite_sample(s, r, v, GAD_OP_LOGSUMEXP);
}

/* ---- composites (ops.def's COMPOSITE rows): sum_all and mean_all, the sum
 * and mean rows over every axis */
static gad_tensor *apply_all(void *self, gad_tensor *const *in, int n) {
    (void)n;
    return ((gad_op_sample *)self)->i[0] == GAD_OP_SUM_ALL ? gad_sum_all(in[0])
                                                            : gad_mean_all(in[0]);
}

static int all_sample(gad_op_sample *s, gad_rng *r, int v, int op) {
    static const int64_t shapes[][3] = {{3, 4}, {2, 3, 2}, {0}, {0, 2}};
    static const int ranks[] = {2, 3, 0, 2};
    if (v >= 4 || (op == GAD_OP_MEAN_ALL && v == 3)) return 0; /* (mean of none: NaN) */
    *s = (gad_op_sample){.n = 1, .apply = apply_all, .smooth = 1};
    s->i[0] = op;
    s->in[0] = gad__sample_leaf(r, shapes[v], ranks[v], -2, 2, 0);
    gad__shape_str(s->what, shapes[v], ranks[v]);
    return s->in[0] != NULL;
}

int gad__sample_sum_all(gad_op_sample *s, gad_rng *r, int v) {
    return all_sample(s, r, v, GAD_OP_SUM_ALL);
}
int gad__sample_mean_all(gad_op_sample *s, gad_rng *r, int v) {
    return all_sample(s, r, v, GAD_OP_MEAN_ALL);
}
