/* sort.c: sort, argsort, topk, argmin, cumsum and cumprod along one axis
 * (SPEC §3.7), PyTorch's torch.sort, argsort, topk, argmin, cumsum and
 * cumprod, through the seam's sort and cumulative families, for PyTorch's
 * CPU dtypes: sort and argsort every dtype, topk and argmin (and argmax of
 * i64, for reduce.c) f32, f64 and i64, cumsum and cumprod every dtype with
 * an i64 result for i64 and bool. Integer results are never on the tape.
 * The float values of sort and topk are differentiable: their VJP puts
 * the gradient back at the positions the indices name (scatter_add into
 * zeros, itself on the tape). cumsum's VJP is a cumsum the other way;
 * cumprod's is the cumulative family's division-free kernel, or under
 * GAD_CREATE_GRAPH the same formula from tracked ops (a gated scan), so
 * that it is differentiable again and exact with zeros in x. */
#include "backend/cumulative.h"
#include "backend/sort.h"
#include "ops_int.h"

#include <stdio.h>

static gad_tensor *packed(const char *op, gad_tensor *t) {
    return gad__own(gad__contig(op, t));
}

/* A valid dim (normalised into *a); bool refused when no_bool is set (as
 * PyTorch's topk, argmin and argmax refuse it). */
static int dim_check(const char *op, gad_tensor *x, int dim, int *a, int no_bool) {
    if (no_bool && x->dtype == GAD_BOOL) {
        gad__err(GAD_ERR_DTYPE, op, "needs f32, f64 or i64 (as PyTorch's), got bool");
        return -1;
    }
    return gad__norm_axis(op, dim, x->rank, a);
}

/* Integers have no gradient: a result of them stays off the tape. */
static gad_tensor *track(gad_tensor *y, const gad_op_info *info, gad_tensor **in,
                         gad_tensor **saved, int nsaved) {
    if (!y || !gad__is_float(y->dtype)) return y;
    return gad__track(y, info, in, 1, saved, nsaved);
}

/* ------------------------------------------------------------- sort */

/* values (NULL: argsort, untracked) and indices of x sorted along a */
static gad_tensor *sort_impl(const char *op, gad_tensor *x, int dim, int descending,
                             gad_tensor **indices, int values) {
    if (indices) *indices = NULL;
    GAD_NEED(op, x);
    GAD_HALF_VIA_F32_OUT(op, &x, 1, indices, sort_impl(op, x, dim, descending, indices, values));
    int a;
    if (dim_check(op, x, dim, &a, 0) || GAD_LACKS_FAM(op, x, sort, sort)) return NULL;
    gad_tensor *v = values ? gad__tensor_like(op, x) : NULL;
    gad_tensor *ix = !values || v ? gad__tensor_new(op, x->dev, GAD_I64, x->shape, x->rank) : NULL;
    gad_tensor *xc = ix ? gad__contig(op, x) : NULL;
    if (!xc || GAD_BE(x)->sort->sort(op, xc, a, descending != 0, v, ix)) {
        gad_release(xc);
        gad_release(ix);
        gad_release(v);
        return NULL;
    }
    gad_release(xc);
    if (!values) return gad__own(ix);
    v = track(v, GAD_OP(SORT), &x, &ix, 1);
    if (v && v->node) GAD_NODE_P(v->node, axis)->axis = a;
    if (v && indices) *indices = gad__own(ix);
    else gad_release(ix);
    return gad__own(v);
}

gad_tensor *gad_sort(gad_tensor *x, int dim, int descending, gad_tensor **indices) {
    return sort_impl("sort", x, dim, descending, indices, 1);
}

gad_tensor *gad_argsort(gad_tensor *x, int dim, int descending) {
    return sort_impl("argsort", x, dim, descending, NULL, 0);
}

/* ------------------------------------------------------------- topk */

gad_tensor *gad_topk(gad_tensor *x, int64_t k, int dim, int largest, int sorted,
                     gad_tensor **indices) {
    const char *op = "topk";
    (void)sorted; /* always sorted: an order PyTorch allows either way */
    if (indices) *indices = NULL;
    GAD_NEED(op, x);
    GAD_HALF_VIA_F32_OUT(op, &x, 1, indices, gad_topk(x, k, dim, largest, sorted, indices));
    int a;
    if (dim_check(op, x, dim, &a, 1)) return NULL;
    if (k < 0 || k > x->shape[a]) {
        char b[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_INDEX, op, "k %lld out of range for dim %d of %s", (long long)k,
                        dim, gad__shape_str(b, x->shape, x->rank));
    }
    if (GAD_LACKS_FAM(op, x, sort, topk)) return NULL;
    int64_t shape[GAD_MAX_RANK];
    memcpy(shape, x->shape, (size_t)x->rank * sizeof *shape);
    shape[a] = k;
    gad_tensor *v = gad__tensor_new(op, x->dev, x->dtype, shape, x->rank);
    gad_tensor *ix = v ? gad__tensor_new(op, x->dev, GAD_I64, shape, x->rank) : NULL;
    gad_tensor *xc = ix ? gad__contig(op, x) : NULL;
    if (!xc || (v->numel && GAD_BE(x)->sort->topk(op, xc, a, k, largest != 0, v, ix))) {
        gad_release(xc);
        gad_release(ix);
        gad_release(v);
        return NULL;
    }
    gad_release(xc);
    v = track(v, GAD_OP(TOPK), &x, &ix, 1);
    if (v && v->node) GAD_NODE_P(v->node, axis)->axis = a;
    if (v && indices) *indices = gad__own(ix);
    else gad_release(ix);
    return gad__own(v);
}

/* sort's and topk's VJP: gy put back where the indices came from */
static int scatter_back(gad_node *n, gad_tensor *gy, gad_tensor **gin) {
    gad_node *x = n->parents[0];
    gad_tensor *z = gad__full_on(gy->dev, x->shape, x->rank, gy->dtype, 0);
    return (gin[0] = gad_scatter_add(z, (int)GAD_NODE_P(n, axis)->axis, n->saved[0], gy)) ? 0
                                                                                           : -1;
}

int gad__vjp_sort(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    return scatter_back(n, gy, gin);
}

int gad__vjp_topk(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    return scatter_back(n, gy, gin);
}

/* ----------------------------------------------------------- argmin */

/* The index of the first minimum (largest: maximum) along axis; argmax
 * of i64 comes here from reduce.c (its own kernel takes floats). */
gad_tensor *gad__arg_extreme(const char *op, gad_tensor *x, int axis, int keepdims,
                             int largest) {
    GAD_NEED(op, x);
    GAD_HALF_VIA_F32(op, &x, 1, gad__arg_extreme(op, x, axis, keepdims, largest));
    int a;
    if (dim_check(op, x, axis, &a, 1)) return NULL;
    if (x->shape[a] == 0) {
        char b[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, op, "empty axis %d of %s has no %s", axis,
                        gad__shape_str(b, x->shape, x->rank), largest ? "maximum" : "minimum");
    }
    if (GAD_LACKS_FAM(op, x, sort, argmin)) return NULL;
    int64_t shape[GAD_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != a) shape[r++] = x->shape[d];
        else if (keepdims) shape[r++] = 1;
    gad_tensor *y = gad__tensor_new(op, x->dev, GAD_I64, shape, r);
    gad_tensor *xc = y ? gad__contig(op, x) : NULL;
    if (!xc) {
        gad_release(y);
        return NULL;
    }
    if (y->numel) GAD_BE(x)->sort->argmin(xc, a, largest, y);
    gad_release(xc);
    return gad__own(y); /* an index: no gradient */
}

gad_tensor *gad_argmin(gad_tensor *x, int axis, int keepdims) {
    return gad__arg_extreme("argmin", x, axis, keepdims, 0);
}

/* ------------------------------------------------------- cumsum, cumprod */

/* cumsum's and cumprod's result: x's dtype for floats, i64 for i64 and
 * bool (PyTorch's). */
static gad_tensor *cum_out(const char *op, gad_tensor *x) {
    return gad__tensor_new(op, x->dev, gad__is_float(x->dtype) ? x->dtype : GAD_I64, x->shape,
                           x->rank);
}

static gad_tensor *cumsum_dir(const char *op, gad_tensor *x, int dim, int reverse) {
    GAD_NEED(op, x);
    GAD_HALF_VIA_F32(op, &x, 1, cumsum_dir(op, x, dim, reverse));
    int a;
    if (dim_check(op, x, dim, &a, 0) || GAD_LACKS_FAM(op, x, cumulative, cumsum)) return NULL;
    gad_tensor *y = cum_out(op, x);
    gad_tensor *xc = y ? gad__contig(op, x) : NULL;
    if (!xc) {
        gad_release(y);
        return NULL;
    }
    GAD_BE(x)->cumulative->cumsum(xc, a, reverse, y);
    gad_release(xc);
    y = track(y, GAD_OP(CUMSUM), &x, NULL, 0);
    if (y && y->node) {
        GAD_NODE_P(y->node, cumsum)->axis = a;
        GAD_NODE_P(y->node, cumsum)->reverse = reverse;
    }
    return gad__own(y);
}

gad_tensor *gad_cumsum(gad_tensor *x, int dim) { return cumsum_dir("cumsum", x, dim, 0); }

int gad__vjp_cumsum(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gad_np_cumsum *p = GAD_NODE_P(n, cumsum);
    return (gin[0] = cumsum_dir("cumsum", gy, (int)p->axis, !p->reverse)) ? 0 : -1;
}

gad_tensor *gad_cumprod(gad_tensor *x, int dim) {
    const char *op = "cumprod";
    GAD_NEED(op, x);
    GAD_HALF_VIA_F32(op, &x, 1, gad_cumprod(x, dim));
    int a;
    if (dim_check(op, x, dim, &a, 0) || GAD_LACKS_FAM(op, x, cumulative, cumprod)) return NULL;
    gad_tensor *y = cum_out(op, x);
    gad_tensor *xc = y ? gad__contig(op, x) : NULL;
    if (!xc) {
        gad_release(y);
        return NULL;
    }
    GAD_BE(x)->cumulative->cumprod(xc, a, y);
    gad_release(xc);
    y = track(y, GAD_OP(CUMPROD), &x, &x, 1);
    if (y && y->node) GAD_NODE_P(y->node, axis)->axis = a;
    return gad__own(y);
}

/* cumprod's gradient from tracked ops (x and gy seen as [o, n, i] around the
 * axis): gx_k = E_k S_k with E = cumprod of x shifted one step on (a 1
 * first) and S_k = gy_k + x_{k+1} S_{k+1}, a gated scan run backwards over
 * the axis. No division: exact with any zeros. */
static gad_tensor *cumprod_grad_tracked(gad_tensor *x, gad_tensor *gy, int axis) {
    int64_t o = 1, in = 1, n = x->shape[axis];
    for (int d = 0; d < axis; d++) o *= x->shape[d];
    for (int d = axis + 1; d < x->rank; d++) in *= x->shape[d];
    if (n <= 1) return gy; /* y = x (or empty): gx = gy */
    int64_t s3[3] = {o, n, in}, s1[3] = {o, 1, in};
    gad_tensor *x3 = gad_reshape(x, s3, 3), *g3 = gad_reshape(gy, s3, 3);
    gad_range head[2] = {GAD_ALL, GAD_RANGE(0, n - 1)}, tail[2] = {GAD_ALL, GAD_RANGE(1, n)};
    gad_tensor *e_in[2] = {gad__full_on(x->dev, s1, 3, x->dtype, 1), gad_slice(x3, head, 2)};
    gad_tensor *E = gad_cumprod(gad_cat(e_in, 2, 1), 1);
    gad_tensor *a_in[2] = {gad_slice(x3, tail, 2), gad__full_on(x->dev, s1, 3, x->dtype, 0)};
    int t = 1;
    gad_tensor *A = gad_flip(gad_cat(a_in, 2, 1), &t, 1);
    gad_tensor *S = gad_flip(gad_gated_scan(A, gad_flip(g3, &t, 1)), &t, 1);
    return gad_reshape(gad_mul(E, S), x->shape, x->rank);
}

int gad__vjp_cumprod(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    int axis = (int)GAD_NODE_P(n, axis)->axis;
    if (gad_grad_enabled()) /* GAD_CREATE_GRAPH: differentiable again */
        return (gin[0] = cumprod_grad_tracked(gad__saved(n, 0), gy, axis)) ? 0 : -1;
    if (GAD_LACKS_FAM("cumprod", gy, cumulative, cumprod_bwd)) return -1;
    gad_tensor *x = packed("cumprod", n->saved[0]), *g = packed("cumprod", gy);
    gad_tensor *gx = x && g ? gad__own(gad__tensor_like("cumprod", x)) : NULL;
    if (!gx) return -1;
    GAD_BE(x)->cumulative->cumprod_bwd(x, g, axis, gx);
    gin[0] = gx;
    return 0;
}

/* --------------------------------------------------------------- samples */

/* i[0]: the op; i[1]: dim; i[2]: descending / largest; i[3]: k */
static gad_tensor *apply_sort(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    int dim = (int)s->i[1];
    switch (s->i[0]) {
    case GAD_OP_SORT: return gad_sort(in[0], dim, (int)s->i[2], NULL);
    case GAD_OP_TOPK: return gad_topk(in[0], s->i[3], dim, (int)s->i[2], 1, NULL);
    case GAD_OP_CUMSUM: return gad_cumsum(in[0], dim);
    case GAD_OP_ARGMIN: return gad_argmin(in[0], dim, (int)s->i[2]);
    case GAD_OP_ARGSORT: return gad_argsort(in[0], dim, (int)s->i[2]);
    default: return gad_cumprod(in[0], dim);
    }
}

typedef struct sort_case {
    int rank;
    int64_t shape[3];
    int dim, flag;
    int64_t k;
} sort_case;

static int sort_sample(gad_op_sample *s, gad_rng *r, int op, const sort_case *c, double lo,
                       double hi, double away) {
    *s = (gad_op_sample){.n = 1, .apply = apply_sort, .smooth = 1};
    s->i[0] = op;
    s->i[1] = c->dim;
    s->i[2] = c->flag;
    s->i[3] = c->k;
    s->in[0] = gad__sample_leaf(r, c->shape, c->rank, lo, hi, away);
    snprintf(s->what, sizeof s->what, "%s dim %d flag %d k %lld", gad__ops[op].info.name, c->dim,
             c->flag, (long long)c->k);
    return s->in[0] != NULL;
}

int gad__sample_sort(gad_op_sample *s, gad_rng *r, int v) {
    static const sort_case c[] = {
        {2, {3, 5}, 1, 0, 0}, {2, {4, 3}, 0, 1, 0}, {3, {2, 3, 4}, -2, 1, 0}, {1, {70}, 0, 0, 0}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    return sort_sample(s, r, GAD_OP_SORT, &c[v], -2, 2, 0);
}

int gad__sample_topk(gad_op_sample *s, gad_rng *r, int v) {
    static const sort_case c[] = {{2, {3, 6}, 1, 1, 2},
                                  {2, {5, 3}, 0, 0, 3},
                                  {3, {2, 4, 3}, 1, 1, 4},
                                  {1, {40}, 0, 1, 2}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    return sort_sample(s, r, GAD_OP_TOPK, &c[v], -2, 2, 0);
}

int gad__sample_cumsum(gad_op_sample *s, gad_rng *r, int v) {
    static const sort_case c[] = {
        {2, {3, 4}, 1, 0, 0}, {2, {3, 4}, 0, 0, 0}, {3, {2, 3, 70}, -2, 0, 0}, {1, {5}, -1, 0, 0}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    return sort_sample(s, r, GAD_OP_CUMSUM, &c[v], -2, 2, 0);
}

/* Values in +-[0.5, 1.5] keep the products' finite differences well
 * scaled; cases 4 and 5 hold exact zeros (one in a row, two in a row, the
 * first and the last element), where the gradient must not divide by x. */
int gad__sample_cumprod(gad_op_sample *s, gad_rng *r, int v) {
    static const sort_case c[] = {{2, {3, 4}, 1, 0, 0}, {2, {4, 3}, 0, 0, 0},
                                  {3, {2, 3, 67}, 1, 0, 0}, {1, {6}, 0, 0, 0},
                                  {2, {2, 5}, 1, 0, 0}, {1, {6}, -1, 0, 0}};
    static const int zeros[2][3] = {{2, 6, 8}, {0, 5, -1}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    if (!sort_sample(s, r, GAD_OP_CUMPROD, &c[v], -1.5, 1.5, 0.5)) return 0;
    if (v < 4) return 1;
    gad_tensor *t = gad__sample_values(r, c[v].shape, c[v].rank, -1.5, 1.5, 0.5, 0);
    double *p = t ? gad_data_mut(t) : NULL;
    if (!p) return 0;
    for (int j = 0; j < 3 && zeros[v - 4][j] >= 0; j++) p[zeros[v - 4][j]] = 0;
    s->in[0] = gad_requires_grad(t);
    snprintf(s->what, sizeof s->what, "cumprod dim %d with zeros", c[v].dim);
    return s->in[0] != NULL;
}

/* argmin (flag: keepdim) and argsort (flag: descending): no gradient, so
 * plain tensors; rows of 70 take the radix sort */
static int index_sample(gad_op_sample *s, gad_rng *r, int op, const sort_case *c) {
    if (!sort_sample(s, r, op, c, -2, 2, 0)) return 0;
    s->smooth = 0;
    s->in[0] = gad_detach(s->in[0]);
    return s->in[0] != NULL;
}

int gad__sample_argmin(gad_op_sample *s, gad_rng *r, int v) {
    static const sort_case c[] = {{2, {3, 5}, 1, 0, 0}, {3, {2, 3, 4}, -2, 1, 0}, {1, {70}, 0, 0, 0}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    return index_sample(s, r, GAD_OP_ARGMIN, &c[v]);
}

int gad__sample_argsort(gad_op_sample *s, gad_rng *r, int v) {
    static const sort_case c[] = {{2, {3, 5}, 1, 0, 0}, {2, {4, 3}, 0, 1, 0}, {1, {70}, 0, 1, 0}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    return index_sample(s, r, GAD_OP_ARGSORT, &c[v]);
}
