/* index.c: gather, scatter_add, take, cat and stack (SPEC §3.2, D5, D8). */
#include "ops_int.h"
#include "iter.h"

#include <stdio.h>

/* Every value of index must lie in [-d, d) (negatives wrap once); the back
 * end checks, on the index's device: at once (an index error here), or
 * later, at the device's next synchronising call (backend.h). */
static int check_index_values(const char *op, const gad_tensor *index, int64_t d) {
    int64_t v;
    if (GAD_LACKS(op, index, index_check)) return -1;
    if (GAD_LIKELY(GAD_BE(index)->index_check(op, index, -d, d, &v) < 0)) return 0;
    gad__err(GAD_ERR_INDEX, op, "index %lld out of bounds for size %lld", (long long)v,
             (long long)d);
    return -1;
}

int gad__index_in_range(const char *op, const gad_tensor *index, int64_t lo, int64_t hi,
                        int64_t *pos, int64_t *bad) {
    if (GAD_LACKS(op, index, index_check)) { /* recorded: the caller's error is dropped */
        *pos = *bad = -1;
        return -1;
    }
    *pos = GAD_BE(index)->index_check(op, index, lo, hi, bad);
    return *pos < 0 ? 0 : -1;
}

/* The inputs of an op on one device, else a device error. */
static int same_dev(const char *op, const gad_tensor *a, const gad_tensor *b) {
    return GAD_LIKELY(a->dev == b->dev) ? 0 : (gad__err_device(op, a->dev, b->dev), -1);
}

static int same_rank(const char *op, const gad_tensor *x, const gad_tensor *index) {
    if (index->rank == x->rank) return 0;
    char a[GAD_SHAPE_BUF], b[GAD_SHAPE_BUF];
    gad__err(GAD_ERR_SHAPE, op, "index %s must have the rank of %s",
             gad__shape_str(a, index->shape, index->rank),
             gad__shape_str(b, x->shape, x->rank));
    return -1;
}

gad_tensor *gad_gather(gad_tensor *x, int axis, gad_tensor *index) {
    const char *op = "gather";
    if (gad__bad_tensor(x) || gad__bad_tensor(index)) return gad__bad_of(op, 2, (const gad_tensor *const[]){x, index});
    int a;
    /* x of any dtype: an i64 x is never on the tape (gad.h) */
    if (gad__need_i64(op, index) || gad__norm_axis(op, axis, x->rank, &a) ||
        same_rank(op, x, index) || same_dev(op, x, index))
        return NULL;
    for (int d = 0; d < x->rank; d++) {
        if (d == a) continue;
        int64_t xd = x->shape[d], id = index->shape[d];
        if (id > xd && xd != 1) {
            char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
            return gad__err(GAD_ERR_SHAPE, op,
                            "index %s does not fit %s off axis %d (dim %d)",
                            gad__shape_str(s1, index->shape, index->rank),
                            gad__shape_str(s2, x->shape, x->rank), axis, d);
        }
    }
    if (GAD_LACKS(op, x, gather) || check_index_values(op, index, x->shape[a])) return NULL;
    gad_tensor *y = gad__tensor_new(op, x->dev, x->dtype, index->shape, index->rank);
    if (!y) return NULL;
    GAD_BE(x)->gather(x, a, index, y);
    gad_tensor *in[2] = {x, index};
    y = gad__track(y, GAD_OP(GATHER), in, 2, &index, 1);
    if (y && y->node) GAD_NODE_P(y->node, axis)->axis = a;
    return gad__own(y);
}

gad_tensor *gad_scatter_add(gad_tensor *dst, int axis, gad_tensor *index,
                            gad_tensor *src) {
    const char *op = "scatter_add";
    if (gad__bad_tensor(dst) || gad__bad_tensor(index) || gad__bad_tensor(src)) return gad__bad_of(op, 3, (const gad_tensor *const[]){dst, index, src});
    int a;
    gad_tensor *hin[3] = {dst, index, src};
    GAD_HALF_VIA_F32(op, hin, 3, gad_scatter_add(hin[0], axis, hin[1], hin[2]));
    if (gad__need_float(op, dst) || gad__need_same_dtype(op, dst, src) ||
        gad__need_i64(op, index) || gad__norm_axis(op, axis, dst->rank, &a) ||
        same_rank(op, dst, index) || same_dev(op, dst, index) || same_dev(op, dst, src))
        return NULL;
    char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
    if (!gad__same_shape(index->shape, index->rank, src->shape, src->rank))
        return gad__err(GAD_ERR_SHAPE, op, "index %s and src %s differ",
                        gad__shape_str(s1, index->shape, index->rank),
                        gad__shape_str(s2, src->shape, src->rank));
    for (int d = 0; d < dst->rank; d++)
        if (d != a && index->shape[d] > dst->shape[d])
            return gad__err(GAD_ERR_SHAPE, op,
                            "index %s exceeds dst %s off axis %d (dim %d)",
                            gad__shape_str(s1, index->shape, index->rank),
                            gad__shape_str(s2, dst->shape, dst->rank), axis, d);
    if (GAD_LACKS(op, dst, scatter_add) || check_index_values(op, index, dst->shape[a]))
        return NULL;
    gad_tensor *y = gad__tensor_like(op, dst);
    gad_tensor *sc = NULL;
    if (y) {
        gad__pack(dst, gad__ptr(y));
        sc = gad__contig(op, src);
    }
    if (!sc) {
        gad_release(y);
        return NULL;
    }
    GAD_BE(dst)->scatter_add(y, a, index, sc);
    gad_release(sc);
    gad_tensor *in[3] = {dst, index, src};
    y = gad__track(y, GAD_OP(SCATTER_ADD), in, 3, &index, 1);
    if (y && y->node) GAD_NODE_P(y->node, axis)->axis = a;
    return gad__own(y);
}

gad_tensor *gad_take(gad_tensor *x, int axis, gad_tensor *index) {
    const char *op = "take";
    if (gad__bad_tensor(x) || gad__bad_tensor(index)) return gad__bad_of(op, 2, (const gad_tensor *const[]){x, index});
    int a;
    if (gad__need_i64(op, index) || gad__norm_axis(op, axis, x->rank, &a) ||
        same_dev(op, x, index))
        return NULL;
    int64_t want[GAD_MAX_RANK];
    for (int d = 0, o = 0; d < x->rank; d++)
        if (d != a) want[o++] = x->shape[d];
    if (!gad__same_shape(index->shape, index->rank, want, x->rank - 1)) {
        char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF], s3[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, op,
                        "index %s must be %s (the shape of %s without axis %d)",
                        gad__shape_str(s1, index->shape, index->rank),
                        gad__shape_str(s2, want, x->rank - 1),
                        gad__shape_str(s3, x->shape, x->rank), axis);
    }
    if (GAD_LACKS(op, x, take) || check_index_values(op, index, x->shape[a])) return NULL;
    gad_tensor *y = gad__tensor_new(op, x->dev, x->dtype, index->shape, index->rank);
    if (!y) return NULL;
    GAD_BE(x)->take(x, a, index, y);
    gad_tensor *in[2] = {x, index};
    y = gad__track(y, GAD_OP(TAKE), in, 2, &index, 1);
    if (y && y->node) GAD_NODE_P(y->node, axis)->axis = a;
    return gad__own(y);
}

/* gather with index's values spread over every position off the axis: a
 * reshape of index to 1-D, a broadcast view of it with x's shape except K
 * on the axis (no copy: stride 0 off the axis), gather, then the axis
 * unflattened into index's shape. The tape records the reshapes and the
 * gather, whose VJP (scatter_add over the same view) is this op's. */
gad_tensor *gad_index_select(gad_tensor *x, int axis, gad_tensor *index) {
    const char *op = "index_select";
    GAD_COMPOSITE(op); /* a missing kernel names index_select */
    if (!x || !index) return gad__null_arg(op);
    int a;
    if (gad__need_i64(op, index) || gad__norm_axis(op, axis, x->rank, &a) ||
        same_dev(op, x, index))
        return NULL;
    int rank = x->rank - 1 + index->rank;
    if (rank > GAD_MAX_RANK) {
        char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, op,
                        "index %s on axis %d of %s gives rank %d, above %d",
                        gad__shape_str(s1, index->shape, index->rank), axis,
                        gad__shape_str(s2, x->shape, x->rank), rank, GAD_MAX_RANK);
    }
    /* checked here too, so that an error names this op (gather checks the
     * view again) */
    if (check_index_values(op, index, x->shape[a])) return NULL;
    int64_t k = index->numel, col[GAD_MAX_RANK], full[GAD_MAX_RANK], out[GAD_MAX_RANK];
    for (int d = 0; d < x->rank; d++) {
        col[d] = d == a ? k : 1;
        full[d] = d == a ? k : x->shape[d];
    }
    int o = 0;
    for (int d = 0; d < a; d++) out[o++] = x->shape[d];
    for (int d = 0; d < index->rank; d++) out[o++] = index->shape[d];
    for (int d = a + 1; d < x->rank; d++) out[o++] = x->shape[d];
    gad_scope_begin();
    gad_tensor *view = gad_broadcast_to(gad_reshape(index, col, x->rank), full, x->rank);
    gad_tensor *y = gad_keep(gad_reshape(gad_gather(x, a, view), out, rank));
    gad_scope_end();
    return y;
}

gad_tensor *gad_cat(gad_tensor *const *ts, int n, int axis) {
    const char *op = "cat";
    if (!ts && n > 0) return gad__null_arg(op);
    if (n <= 0)
        return gad__err(GAD_ERR_SHAPE, op, "needs at least one tensor (n = %d)", n);
    for (int i = 0; i < n; i++)
        if (gad__bad_tensor(ts[i])) return gad__bad_arg(op, ts[i]);
    gad_tensor *t0 = ts[0];
    int a;
    if (gad__norm_axis(op, axis, t0->rank, &a)) return NULL;
    int64_t shape[GAD_MAX_RANK];
    memcpy(shape, t0->shape, sizeof shape);
    shape[a] = 0;
    for (int i = 0; i < n; i++) {
        const gad_tensor *t = ts[i];
        if (gad__need_same_dtype(op, t0, t) || same_dev(op, t0, t)) return NULL;
        bool ok = t->rank == t0->rank;
        for (int d = 0; ok && d < t->rank; d++)
            if (d != a && t->shape[d] != t0->shape[d]) ok = false;
        if (!ok) {
            char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
            return gad__err(GAD_ERR_SHAPE, op,
                            "tensor %d %s does not match %s off axis %d", i,
                            gad__shape_str(s1, t->shape, t->rank),
                            gad__shape_str(s2, t0->shape, t0->rank), axis);
        }
        if (t->shape[a] > INT64_MAX - shape[a])
            return gad__err(GAD_ERR_SHAPE, op,
                            "size along axis %d overflows (tensor %d adds %lld "
                            "to %lld)", axis, i, (long long)t->shape[a],
                            (long long)shape[a]);
        shape[a] += t->shape[a];
    }
    if (GAD_LACKS(op, t0, cat_into)) return NULL;
    gad_tensor *y = gad__tensor_new(op, t0->dev, t0->dtype, shape, t0->rank);
    if (!y) return NULL;
    int64_t start = 0;
    for (int i = 0; i < n; i++) {
        GAD_BE(t0)->cat_into(ts[i], a, start, y);
        start += ts[i]->shape[a];
    }
    if (gad__tracks(ts, n)) {
        if (n > GAD_NODE_MAX_PARENTS) {
            gad_release(y);
            return gad__err(GAD_ERR_UNSUPPORTED, op,
                            "at most %d tracked inputs, got %d", GAD_NODE_MAX_PARENTS, n);
        }
        /* the VJP needs every input's size along the axis, constants too:
         * a host tensor of them (shapes are host data, wherever y is) */
        int64_t ns = n, small[16], *sz = n <= 16 ? small : gad__alloc((size_t)n * sizeof *sz);
        gad_tensor *sizes = NULL;
        if (sz) {
            for (int i = 0; i < n; i++) sz[i] = ts[i]->shape[a];
            gad_scope_begin();
            int saved = gad__host_default_begin();
            sizes = gad_keep(gad_from_i64(sz, &ns, 1));
            gad__host_default_end(saved);
            gad_scope_end();
            if (sz != small) gad__free(sz, (size_t)n * sizeof *sz);
        }
        if (!sizes) {
            gad_release(y);
            return sz ? NULL : gad__err(GAD_ERR_MEMORY, op, "cannot allocate");
        }
        y = gad__track(y, GAD_OP(CAT), ts, n, &sizes, 1);
        if (gad_scope_depth() == 0) gad_release(sizes);
        if (y && y->node) GAD_NODE_P(y->node, axis)->axis = a;
    }
    return gad__own(y);
}

gad_tensor *gad_stack(gad_tensor *const *ts, int n, int axis) {
    const char *op = "stack";
    GAD_COMPOSITE(op);
    if (!ts && n > 0) return gad__null_arg(op);
    if (n <= 0)
        return gad__err(GAD_ERR_SHAPE, op, "needs at least one tensor (n = %d)", n);
    for (int i = 0; i < n; i++)
        if (gad__bad_tensor(ts[i])) return gad__bad_arg(op, ts[i]);
    int r = ts[0]->rank;
    if (r >= GAD_MAX_RANK) {
        char b[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, op, "tensors of shape %s have no room for a new axis",
                        gad__shape_str(b, ts[0]->shape, r));
    }
    if (axis < -(r + 1) || axis > r)
        return gad__err(GAD_ERR_SHAPE, op, "axis %d out of range [%d, %d]", axis,
                        -(r + 1), r);
    if (n > GAD_NODE_MAX_PARENTS && gad__tracks(ts, n))
        return gad__err(GAD_ERR_UNSUPPORTED, op, "at most %d tracked inputs, got %d",
                        GAD_NODE_MAX_PARENTS, n);
    for (int i = 1; i < n; i++)
        if (gad__need_same_dtype(op, ts[0], ts[i])) return NULL;
    for (int i = 1; i < n; i++)
        if (!gad__same_shape(ts[i]->shape, ts[i]->rank, ts[0]->shape, ts[0]->rank)) {
            char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
            return gad__err(GAD_ERR_SHAPE, op, "tensor %d %s differs from %s", i,
                            gad__shape_str(s1, ts[i]->shape, ts[i]->rank),
                            gad__shape_str(s2, ts[0]->shape, ts[0]->rank));
        }
    gad_tensor *small[16], **u = small;
    if (n > 16) {
        u = gad__alloc((size_t)n * sizeof *u);
        if (!u) return gad__err(GAD_ERR_MEMORY, op, "cannot allocate %d views", n);
    }
    gad_scope_begin();
    gad_tensor *y = NULL;
    bool ok = true;
    for (int i = 0; i < n && ok; i++) ok = (u[i] = gad_unsqueeze(ts[i], axis)) != NULL;
    if (ok) y = gad_keep(gad_cat(u, n, axis));
    gad_scope_end();
    if (u != small) gad__free(u, (size_t)n * sizeof *u);
    return y;
}

/* ------------------------------------------------------------------- VJPs */

/* Scatter gy back into zeros of x's shape; x dims of size 1 that the index
 * broadcast are scattered at full size, then summed. */
int gad__vjp_gather(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gad_node *x = n->parents[0];
    gad_tensor *idx = n->saved[0];
    int axis = (int)GAD_NODE_P(n, axis)->axis, nb = 0, bax[GAD_MAX_RANK];
    int64_t e[GAD_MAX_RANK] = {0};
    for (int d = 0; d < x->rank; d++) {
        e[d] = x->shape[d];
        if (d != axis && x->shape[d] == 1 && idx->shape[d] > 1) {
            e[d] = idx->shape[d];
            bax[nb++] = d;
        }
    }
    gad_tensor *g = gad_scatter_add(gad__full_on(gy->dev, e, x->rank, gy->dtype, 0),
                                    axis, idx, gy);
    if (nb) g = gad_sum(g, bax, nb, 1);
    return (gin[0] = g) ? 0 : -1;
}

int gad__vjp_scatter_add(gad_node *n, gad_tensor *gy, const bool *need,
                         gad_tensor **gin) {
    if (need[0]) gin[0] = gy;
    if (need[2] && !(gin[2] = gad_gather(gy, (int)GAD_NODE_P(n, axis)->axis, n->saved[0]))) return -1;
    return 0;
}

int gad__vjp_take(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gad_node *x = n->parents[0];
    int axis = (int)GAD_NODE_P(n, axis)->axis;
    gad_tensor *z = gad__full_on(gy->dev, x->shape, x->rank, gy->dtype, 0);
    gin[0] = gad_scatter_add(z, axis, gad_unsqueeze(n->saved[0], axis),
                             gad_unsqueeze(gy, axis));
    return gin[0] ? 0 : -1;
}

int gad__vjp_cat(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    int axis = (int)GAD_NODE_P(n, axis)->axis;
    gad_tensor *st = n->saved[0]; /* on the host, made by gad_cat */
    int64_t small[16], *sizes = st->numel <= 16 ? small
                                               : gad__alloc((size_t)st->numel * sizeof *sizes);
    if (!sizes || gad_read_i64(st, sizes, (size_t)st->numel) != GAD_OK) {
        if (sizes && sizes != small) gad__free(sizes, (size_t)st->numel * sizeof *sizes);
        return sizes ? -1 : (gad__err(GAD_ERR_MEMORY, "cat", "cannot allocate"), -1);
    }
    int rc = 0;
    gad_range rg[GAD_MAX_RANK];
    for (int d = 0; d < gy->rank; d++) rg[d] = GAD_ALL;
    int64_t start = 0;
    for (int i = 0; i < n->nparents; i++) {
        rg[axis] = GAD_RANGE(start, start + sizes[i]);
        start += sizes[i];
        if (need[i] && !(gin[i] = gad_slice(gy, rg, gy->rank))) {
            rc = -1;
            break;
        }
    }
    if (sizes != small) gad__free(sizes, (size_t)st->numel * sizeof *sizes);
    return rc;
}

/* ---------------------------------------------------------------- samples */

static gad_tensor *index_tensor(gad_rng *r, const int64_t *shape, int rank,
                                int64_t lo, int64_t hi) {
    return gad_rng_int_tensor(r, shape, rank, lo, hi);
}

static gad_tensor *apply_index(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    int axis = (int)s->i[1];
    switch (s->i[0]) {
    case GAD_OP_GATHER: return gad_gather(in[0], axis, in[1]);
    case GAD_OP_SCATTER_ADD: return gad_scatter_add(in[0], axis, in[1], in[2]);
    case GAD_OP_TAKE: return gad_take(in[0], axis, in[1]);
    default: return gad_cat(in, n, axis);
    }
}

int gad__sample_gather(gad_op_sample *s, gad_rng *r, int v) {
    static const struct {
        int rank;
        int64_t x[3], idx[3];
        int axis;
    } c[] = {
        {2, {3, 4}, {3, 2}, 1}, {2, {3, 4}, {2, 4}, 0}, {2, {1, 4}, {3, 4}, 1},
        {2, {4, 3}, {2, 2}, 0}, {3, {2, 3, 2}, {2, 2, 2}, -2},
    };
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    int ax = c[v].axis < 0 ? c[v].axis + c[v].rank : c[v].axis;
    int64_t d = c[v].x[ax];
    *s = (gad_op_sample){.n = 2, .apply = apply_index, .smooth = 1};
    s->i[0] = GAD_OP_GATHER;
    s->i[1] = c[v].axis;
    s->in[0] = gad__sample_leaf(r, c[v].x, c[v].rank, -2, 2, 0);
    s->in[1] = index_tensor(r, c[v].idx, c[v].rank, -d, d);
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] && s->in[1];
}

int gad__sample_scatter_add(gad_op_sample *s, gad_rng *r, int v) {
    static const struct {
        int rank;
        int64_t dst[3], idx[3];
        int axis;
    } c[] = {{2, {3, 4}, {3, 5}, 1}, {2, {3, 4}, {2, 3}, 0}, {3, {2, 3, 2}, {2, 4, 1}, 1}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    int64_t d = c[v].dst[c[v].axis];
    *s = (gad_op_sample){.n = 3, .apply = apply_index, .smooth = 1};
    s->i[0] = GAD_OP_SCATTER_ADD;
    s->i[1] = c[v].axis;
    s->in[0] = gad__sample_leaf(r, c[v].dst, c[v].rank, -2, 2, 0);
    s->in[1] = index_tensor(r, c[v].idx, c[v].rank, -d, d); /* duplicates too */
    s->in[2] = gad__sample_leaf(r, c[v].idx, c[v].rank, -2, 2, 0);
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] && s->in[1] && s->in[2];
}

int gad__sample_take(gad_op_sample *s, gad_rng *r, int v) {
    static const struct {
        int rank;
        int64_t x[3];
        int axis;
    } c[] = {{2, {3, 4}, 1}, {3, {2, 3, 4}, 1}, {1, {5}, 0}, {2, {3, 4}, 0}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    int64_t ishape[3];
    for (int dd = 0, o = 0; dd < c[v].rank; dd++)
        if (dd != c[v].axis) ishape[o++] = c[v].x[dd];
    int64_t d = c[v].x[c[v].axis];
    *s = (gad_op_sample){.n = 2, .apply = apply_index, .smooth = 1};
    s->i[0] = GAD_OP_TAKE;
    s->i[1] = c[v].axis;
    s->in[0] = gad__sample_leaf(r, c[v].x, c[v].rank, -2, 2, 0);
    s->in[1] = index_tensor(r, ishape, c[v].rank - 1, -d, d);
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return s->in[0] && s->in[1];
}

/* Pieces along an axis, a 0-sized one and a constant one among them. */
int gad__sample_cat(gad_op_sample *s, gad_rng *r, int v) {
    static const struct {
        int n, rank, axis;
        int64_t sizes[3];
        int64_t other[2];
        int constant; /* index of an input held constant, -1 none */
    } c[] = {
        {2, 2, 0, {2, 3}, {4, 0}, -1}, {3, 2, 1, {1, 0, 2}, {3, 0}, -1},
        {3, 3, -1, {2, 1, 2}, {2, 3}, 1}, {1, 1, 0, {4}, {0, 0}, -1},
    };
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    *s = (gad_op_sample){.n = c[v].n, .apply = apply_index, .smooth = 1};
    s->i[0] = GAD_OP_CAT;
    s->i[1] = c[v].axis;
    int ax = c[v].axis < 0 ? c[v].axis + c[v].rank : c[v].axis;
    for (int i = 0; i < c[v].n; i++) {
        int64_t shape[3];
        for (int d = 0, o = 0; d < c[v].rank; d++)
            shape[d] = d == ax ? c[v].sizes[i] : c[v].other[o++];
        s->in[i] = gad__sample_leaf(r, shape, c[v].rank, -2, 2, 0);
        if (i == c[v].constant && s->in[i]) s->in[i] = gad_detach(s->in[i]);
        if (!s->in[i]) return 0;
    }
    snprintf(s->what, sizeof s->what, "case #%d", v);
    return 1;
}

/* ---- composite (ops.def's COMPOSITE row): stack of n tensors on i[0] */
static gad_tensor *apply_stack(void *self, gad_tensor *const *in, int n) {
    return gad_stack(in, n, (int)((gad_op_sample *)self)->i[0]);
}

int gad__sample_stack(gad_op_sample *s, gad_rng *r, int v) {
    static const struct {
        int n, rank, axis;
        int64_t shape[3];
    } c[] = {{2, 2, 0, {3, 4}}, {3, 2, -1, {2, 3}}, {2, 3, 1, {2, 0, 3}}, {1, 0, 0, {0}},
             {2, 1, 1, {4}}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    *s = (gad_op_sample){.n = c[v].n, .apply = apply_stack, .smooth = 1};
    s->i[0] = c[v].axis;
    for (int i = 0; i < c[v].n; i++)
        if (!(s->in[i] = gad__sample_leaf(r, c[v].shape, c[v].rank, -2, 2, 0))) return 0;
    snprintf(s->what, sizeof s->what, "%d tensors, axis %d", c[v].n, c[v].axis);
    return 1;
}

/* ---- composite (ops.def's COMPOSITE row): index_select on axis i[0] of an
 * i64 index (any rank, repeats) */
static gad_tensor *apply_index_select(void *self, gad_tensor *const *in, int n) {
    (void)n;
    return gad_index_select(in[0], (int)((gad_op_sample *)self)->i[0], in[1]);
}

int gad__sample_index_select(gad_op_sample *s, gad_rng *r, int v) {
    static const struct {
        int rank, axis, irank;
        int64_t shape[3], ishape[2], idx[4];
    } c[] = {{2, 0, 1, {4, 3}, {3}, {2, 0, 2}},
             {3, -1, 2, {2, 3, 4}, {2, 2}, {3, 0, 1, 3}},
             {2, 1, 1, {3, 2}, {0}, {0}},
             {1, 0, 0, {5}, {0}, {4}}};
    if (v >= (int)(sizeof c / sizeof c[0])) return 0;
    *s = (gad_op_sample){.n = 2, .apply = apply_index_select, .smooth = 1};
    s->i[0] = c[v].axis;
    s->in[0] = gad__sample_leaf(r, c[v].shape, c[v].rank, -2, 2, 0);
    s->in[1] = gad_from_i64(c[v].idx, c[v].ishape, c[v].irank);
    snprintf(s->what, sizeof s->what, "case #%d axis %d", v, c[v].axis);
    return s->in[0] && s->in[1];
}
