/* shape.c: views: reshape, permute, slice, select, squeeze, unsqueeze,
 * broadcast_to (SPEC §1.4, §1.10, §1.11). A view shares its source's
 * storage and copies nothing. */
#include "ops_int.h"

#include <stdio.h>

gad_tensor *gad__view_new(const char *op, gad_tensor *src, const int64_t *shape,
                          const int64_t *strides, int rank, int64_t offset) {
    gad_tensor *v = gad__alias(op, src);
    if (v) gad__set_layout(v, shape, strides, rank, offset);
    return v;
}

/* ---------------------------------------------------------------- reshape */

int gad__resolve_reshape(const char *op, const gad_tensor *t,
                         const int64_t *shape, int rank, int64_t *out) {
    char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
    if (rank < 0 || rank > GAD_MAX_RANK || (rank > 0 && !shape)) {
        gad__err(GAD_ERR_SHAPE, op, "bad target rank %d", rank);
        return -1;
    }
    int infer = -1;
    int64_t known = 1;          /* product of the given dims */
    int64_t known_pos = 1;      /* product of the given positive dims */
    bool zero = false;
    for (int i = 0; i < rank; i++) {
        if (shape[i] == -1) {
            if (infer >= 0) {
                gad__err(GAD_ERR_SHAPE, op, "only one -1 is allowed in %s",
                         gad__shape_str(s1, shape, rank));
                return -1;
            }
            infer = i;
        } else if (shape[i] < 0) {
            gad__err(GAD_ERR_SHAPE, op, "negative dim %lld in %s",
                     (long long)shape[i], gad__shape_str(s1, shape, rank));
            return -1;
        } else if (shape[i] == 0) {
            zero = true;
        } else {
            if (known_pos > INT64_MAX / shape[i]) goto mismatch; /* overflow */
            known_pos *= shape[i];
        }
        out[i] = shape[i];
    }
    known = zero ? 0 : known_pos;
    if (infer >= 0) {
        if (t->numel == 0) {
            /* -1 next to a zero dim: take it from the old positive dims */
            int64_t old_pos = 1;
            for (int i = 0; i < t->rank; i++)
                if (t->shape[i] > 0) old_pos *= t->shape[i];
            if (!zero) { /* no zero given: the -1 is the only place for it */
                out[infer] = 0;
                return 0;
            }
            if (old_pos % known_pos) goto mismatch;
            out[infer] = old_pos / known_pos;
        } else {
            if (known == 0 || t->numel % known) goto mismatch;
            out[infer] = t->numel / known;
        }
        return 0;
    }
    if (known != t->numel) goto mismatch;
    return 0;
mismatch:
    gad__err(GAD_ERR_SHAPE, op, "cannot reshape %s (%lld elements) to %s",
             gad__shape_str(s1, t->shape, t->rank), (long long)t->numel,
             gad__shape_str(s2, shape, rank));
    return -1;
}

/* Every op that only changes the shape (reshape, view, flatten, squeeze,
 * unsqueeze) records a RESHAPE node: its VJP reshapes back. */
static gad_tensor *track_reshape(gad_tensor *y, gad_tensor *x) {
    return gad__own(gad__track(y, GAD_OP(RESHAPE), &x, 1, NULL, 0));
}

/* Strides that let t be seen with the new shape without copying, or false
 * when its layout does not allow it (the dims of the new shape must split
 * or merge only runs of t that are laid out contiguously). */
static bool view_strides(const gad_tensor *t, const int64_t *shape, int rank,
                         int64_t *strides) {
    if (t->contig || t->numel <= 1) {
        gad__row_major(shape, rank, strides);
        return true;
    }
    if (t->numel == 0) {
        gad__row_major(shape, rank, strides);
        return true;
    }
    int vd = rank - 1;
    int64_t base = t->strides[t->rank - 1], tn = 1, vn = 1;
    for (int td = t->rank - 1; td >= 0; td--) {
        tn *= t->shape[td];
        if (td == 0 || (t->shape[td - 1] != 1 &&
                        t->strides[td - 1] != tn * base)) {
            while (vd >= 0 && (vn < tn || shape[vd] == 1)) {
                strides[vd] = vn * base;
                vn *= shape[vd];
                vd--;
            }
            if (vn != tn) return false;
            if (td > 0) {
                base = t->strides[td - 1];
                tn = vn = 1;
            }
        }
    }
    return vd == -1;
}

static gad_tensor *reshape_impl(const char *op, gad_tensor *t,
                                const int64_t *shape, int rank, bool may_copy) {
    GAD_NEED(op, t);
    int64_t ns[GAD_MAX_RANK], st[GAD_MAX_RANK];
    if (gad__resolve_reshape(op, t, shape, rank, ns)) return NULL;
    if (view_strides(t, ns, rank, st))
        return track_reshape(gad__view_new(op, t, ns, st, rank, t->offset), t);
    if (!may_copy) {
        char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, op,
                        "cannot view %s with its strides as %s (use reshape)",
                        gad__shape_str(s1, t->shape, t->rank),
                        gad__shape_str(s2, ns, rank));
    }
    gad_tensor *c = gad__contig(op, t);
    if (!c) return NULL;
    gad__row_major(ns, rank, st);
    gad__set_layout(c, ns, st, rank, 0);
    return track_reshape(c, t);
}

gad_tensor *gad_reshape(gad_tensor *t, const int64_t *shape, int rank) {
    return reshape_impl("reshape", t, shape, rank, true);
}

gad_tensor *gad_view(gad_tensor *t, const int64_t *shape, int rank) {
    return reshape_impl("view", t, shape, rank, false);
}

gad_tensor *gad_flatten(gad_tensor *t) {
    const int64_t m1[1] = {-1};
    return reshape_impl("flatten", t, m1, 1, true);
}

/* ---------------------------------------------------------------- permute */

gad_tensor *gad_permute(gad_tensor *t, const int *axes, int n) {
    GAD_NEED("permute", t);
    if (n != t->rank || (n > 0 && !axes))
        return gad__err(GAD_ERR_SHAPE, "permute", "%d axes given for rank %d",
                        n, t->rank);
    unsigned seen = 0;
    int64_t sh[GAD_MAX_RANK], st[GAD_MAX_RANK];
    for (int i = 0; i < n; i++) {
        int a;
        if (gad__norm_axis("permute", axes[i], t->rank, &a)) return NULL;
        if (seen & (1u << a))
            return gad__err(GAD_ERR_SHAPE, "permute", "duplicate axis %d",
                            axes[i]);
        seen |= 1u << a;
        sh[i] = t->shape[a];
        st[i] = t->strides[a];
    }
    gad_tensor *y = gad__track(gad__view_new("permute", t, sh, st, n, t->offset),
                               GAD_OP(PERMUTE), &t, 1, NULL, 0);
    if (y && y->node)
        for (int i = 0; i < n; i++)
            GAD_NODE_P(y->node, permute)->axes[i] = axes[i] < 0 ? axes[i] + n : axes[i];
    return gad__own(y);
}

gad_tensor *gad_swapaxes(gad_tensor *t, int axis0, int axis1) {
    GAD_NEED("swapaxes", t);
    int a, b;
    if (gad__norm_axis("swapaxes", axis0, t->rank, &a) ||
        gad__norm_axis("swapaxes", axis1, t->rank, &b))
        return NULL;
    int perm[GAD_MAX_RANK];
    for (int i = 0; i < t->rank; i++) perm[i] = i;
    perm[a] = b;
    perm[b] = a;
    return gad_permute(t, perm, t->rank);
}

gad_tensor *gad_transpose(gad_tensor *t) {
    GAD_NEED("transpose", t);
    if (t->rank < 2)
        return gad__err(GAD_ERR_SHAPE, "transpose", "rank must be >= 2, got %d",
                        t->rank);
    return gad_swapaxes(t, -2, -1);
}

/* ------------------------------------------------------------------ slice */

/* off + start x stride. A tensor's elements lie in its storage, so this
 * fits in an int64 unless the tensor is empty: its strides then bound
 * nothing (a huge step's stride on an axis of one, say), its slice is
 * empty too, and the term that does not fit is left out. */
static int64_t offset_plus(int64_t off, int64_t start, int64_t stride) {
    int64_t term, sum;
    if (__builtin_mul_overflow(start, stride, &term) || __builtin_add_overflow(off, term, &sum))
        return off;
    return sum;
}

gad_tensor *gad_slice(gad_tensor *t, const gad_range *ranges, int n) {
    GAD_NEED("slice", t);
    if (n < 0 || n > t->rank || (n > 0 && !ranges))
        return gad__err(GAD_ERR_SHAPE, "slice", "%d ranges for rank %d", n,
                        t->rank);
    int64_t sh[GAD_MAX_RANK], start[GAD_MAX_RANK], steps[GAD_MAX_RANK];
    int64_t off = t->offset;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = t->shape[i];
        gad_range r = i < n ? ranges[i] : GAD_ALL;
        int64_t step = r.step == GAD_NIL ? 1 : r.step;
        if (step == 0)
            return gad__err(GAD_ERR_INDEX, "slice", "step 0 on axis %d", i);
        int64_t s, e, len;
        if (step > 0) {
            s = r.start == GAD_NIL ? 0 : r.start;
            e = r.end == GAD_NIL ? d : r.end;
            if (s < 0) s += d;
            if (e < 0) e += d;
            s = s < 0 ? 0 : (s > d ? d : s);
            e = e < 0 ? 0 : (e > d ? d : e);
            if (e < s) e = s;
            len = e > s ? (e - s - 1) / step + 1 : 0; /* no overflow for huge steps */
        } else {
            s = r.start == GAD_NIL ? d - 1 : r.start;
            e = r.end == GAD_NIL ? -1 : r.end; /* default: through index 0 */
            if (r.start != GAD_NIL && s < 0) s += d;
            if (r.end != GAD_NIL && e < 0) e += d;
            s = s < -1 ? -1 : (s > d - 1 ? d - 1 : s);
            e = e < -1 ? -1 : (e > d - 1 ? d - 1 : e);
            len = s <= e ? 0 : (s - e - 1) / -step + 1;
        }
        if (d == 0) s = 0; /* an empty axis has no element to start at */
        off = offset_plus(off, s, t->strides[i]);
        sh[i] = len;
        start[i] = s;
        steps[i] = step;
    }
    if (off < 0)
        return gad__err(GAD_ERR_INDEX, "slice", "negative storage offset %lld",
                        (long long)off);
    return gad__slice_geom(t, start, steps, sh);
}

/* The stride of a sliced axis. With two elements or more, stride * step
 * stays inside the storage; an axis of one element never steps, so a huge
 * step that would overflow keeps the old stride. (Steps are never
 * INT64_MIN, which is GAD_NIL.) */
static int64_t step_stride(int64_t stride, int64_t step) {
    int64_t as = stride < 0 ? -stride : stride, ap = step < 0 ? -step : step;
    return ap && as > INT64_MAX / ap ? stride : stride * step;
}

gad_tensor *gad__slice_geom(gad_tensor *t, const int64_t *start,
                            const int64_t *step, const int64_t *shape) {
    GAD_NEED("slice", t);
    int64_t st[GAD_MAX_RANK], off = t->offset;
    for (int d = 0; d < t->rank; d++) {
        off = offset_plus(off, start[d], t->strides[d]);
        st[d] = step_stride(t->strides[d], step[d]);
    }
    gad_tensor *y = gad__track(gad__view_new("slice", t, shape, st, t->rank, off),
                               GAD_OP(SLICE), &t, 1, NULL, 0);
    if (y && y->node)
        for (int d = 0; d < t->rank; d++) {
            GAD_NODE_P(y->node, slice)->start[d] = start[d];
            GAD_NODE_P(y->node, slice)->step[d] = step[d];
        }
    return gad__own(y);
}

gad_tensor *gad_select(gad_tensor *t, int axis, int64_t i) {
    GAD_NEED("select", t);
    int a;
    if (gad__norm_axis("select", axis, t->rank, &a)) return NULL;
    int64_t d = t->shape[a], k = i < 0 ? i + d : i;
    if (k < 0 || k >= d)
        return gad__err(GAD_ERR_INDEX, "select", "index %lld out of %lld",
                        (long long)i, (long long)d);
    int64_t sh[GAD_MAX_RANK], st[GAD_MAX_RANK];
    for (int j = 0, o = 0; j < t->rank; j++) {
        if (j == a) continue;
        sh[o] = t->shape[j];
        st[o++] = t->strides[j];
    }
    gad_tensor *y = gad__track(gad__view_new("select", t, sh, st, t->rank - 1,
                                             t->offset + k * t->strides[a]),
                               GAD_OP(SELECT), &t, 1, NULL, 0);
    if (y && y->node) {
        GAD_NODE_P(y->node, select)->axis = a;
        GAD_NODE_P(y->node, select)->index = k;
    }
    return gad__own(y);
}

/* -------------------------------------------------------- squeeze and co */

gad_tensor *gad_squeeze(gad_tensor *t, int axis) {
    GAD_NEED("squeeze", t);
    int a;
    if (gad__norm_axis("squeeze", axis, t->rank, &a)) return NULL;
    if (t->shape[a] != 1) {
        char b[GAD_SHAPE_BUF];
        return gad__err(GAD_ERR_SHAPE, "squeeze", "axis %d of %s has size %lld, not 1",
                        axis, gad__shape_str(b, t->shape, t->rank),
                        (long long)t->shape[a]);
    }
    int64_t sh[GAD_MAX_RANK], st[GAD_MAX_RANK];
    for (int j = 0, o = 0; j < t->rank; j++) {
        if (j == a) continue;
        sh[o] = t->shape[j];
        st[o++] = t->strides[j];
    }
    return track_reshape(gad__view_new("squeeze", t, sh, st, t->rank - 1, t->offset), t);
}

gad_tensor *gad_squeeze_all(gad_tensor *t) {
    GAD_NEED("squeeze_all", t);
    int64_t sh[GAD_MAX_RANK], st[GAD_MAX_RANK];
    int o = 0;
    for (int j = 0; j < t->rank; j++) {
        if (t->shape[j] == 1) continue;
        sh[o] = t->shape[j];
        st[o++] = t->strides[j];
    }
    return track_reshape(gad__view_new("squeeze_all", t, sh, st, o, t->offset), t);
}

gad_tensor *gad_unsqueeze(gad_tensor *t, int axis) {
    GAD_NEED("unsqueeze", t);
    int r = t->rank;
    if (r >= GAD_MAX_RANK)
        return gad__err(GAD_ERR_SHAPE, "unsqueeze", "rank %d is already the most",
                        r);
    int a = axis < 0 ? axis + r + 1 : axis;
    if (a < 0 || a > r)
        return gad__err(GAD_ERR_SHAPE, "unsqueeze", "axis %d out of range [%d, %d]",
                        axis, -(r + 1), r);
    int64_t sh[GAD_MAX_RANK], st[GAD_MAX_RANK];
    for (int j = 0, o = 0; j <= r; j++) {
        if (j == a) {
            /* The stride a contiguous tensor would have here, so that
             * unsqueeze keeps contiguity (a size-1 axis is never stepped). */
            sh[o] = 1;
            st[o++] = a < r ? t->strides[a] * (t->shape[a] ? t->shape[a] : 1) : 1;
        }
        if (j < r) {
            sh[o] = t->shape[j];
            st[o++] = t->strides[j];
        }
    }
    return track_reshape(gad__view_new("unsqueeze", t, sh, st, r + 1, t->offset), t);
}

gad_tensor *gad_broadcast_to(gad_tensor *t, const int64_t *shape, int rank) {
    GAD_NEED("broadcast_to", t);
    char s1[GAD_SHAPE_BUF], s2[GAD_SHAPE_BUF];
    if (gad__check_shape("broadcast_to", shape, rank, NULL)) return NULL;
    if (rank < t->rank)
        return gad__err(GAD_ERR_SHAPE, "broadcast_to",
                        "cannot broadcast %s to smaller rank %s",
                        gad__shape_str(s1, t->shape, t->rank),
                        gad__shape_str(s2, shape, rank));
    for (int i = 0; i < t->rank; i++) {
        int64_t d = t->shape[i], g = shape[rank - t->rank + i];
        if (d != g && d != 1)
            return gad__err(GAD_ERR_SHAPE, "broadcast_to",
                            "cannot broadcast %s to %s",
                            gad__shape_str(s1, t->shape, t->rank),
                            gad__shape_str(s2, shape, rank));
    }
    int64_t st[GAD_MAX_RANK];
    gad__broadcast_strides(t, shape, rank, st);
    return gad__own(gad__track(gad__view_new("broadcast_to", t, shape, st, rank,
                                             t->offset),
                               GAD_OP(BROADCAST_TO), &t, 1, NULL, 0));
}

/* ---------------------------------------------------------- slice_scatter */

gad_tensor *gad__slice_scatter(gad_tensor *src, const int64_t *shape, int rank,
                               const int64_t *start, const int64_t *step) {
    GAD_NEED("slice_scatter", src);
    gad_tensor *y = gad__tensor_zeros("slice_scatter", src->dev, src->dtype, shape, rank);
    if (!y) return NULL;
    int64_t off = 0, st[GAD_MAX_RANK];
    for (int d = 0; d < rank; d++) {
        off += start[d] * y->strides[d];
        st[d] = step_stride(y->strides[d], step[d]);
    }
    gad__copy_strided(src, (char *)gad__ptr(y) + off * (int64_t)gad__dsize(y->dtype), st);
    y = gad__track(y, GAD_OP(SLICE_SCATTER), &src, 1, NULL, 0);
    if (y && y->node)
        for (int d = 0; d < rank; d++) {
            GAD_NODE_P(y->node, slice)->start[d] = start[d];
            GAD_NODE_P(y->node, slice)->step[d] = step[d];
        }
    return gad__own(y);
}

/* ------------------------------------------------------------------- VJPs */

#define PARENT_SHAPE(n) (n)->parents[0]->shape, (n)->parents[0]->rank

int gad__vjp_reshape(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    return (gin[0] = gad_reshape(gy, PARENT_SHAPE(n))) ? 0 : -1;
}

int gad__vjp_permute(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    int inv[GAD_MAX_RANK];
    for (int i = 0; i < n->rank; i++) inv[GAD_NODE_P(n, permute)->axes[i]] = i;
    return (gin[0] = gad_permute(gy, inv, n->rank)) ? 0 : -1;
}

int gad__vjp_slice(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    gin[0] = gad__slice_scatter(gy, PARENT_SHAPE(n), GAD_NODE_P(n, slice)->start,
                                 GAD_NODE_P(n, slice)->step);
    return gin[0] ? 0 : -1;
}

int gad__vjp_select(gad_node *n, gad_tensor *gy, const bool *need, gad_tensor **gin) {
    (void)need;
    int axis = (int)GAD_NODE_P(n, select)->axis;
    int64_t start[GAD_MAX_RANK] = {0}, step[GAD_MAX_RANK];
    for (int d = 0; d < GAD_MAX_RANK; d++) step[d] = 1;
    start[axis] = GAD_NODE_P(n, select)->index;
    gin[0] = gad__slice_scatter(gad_unsqueeze(gy, axis), PARENT_SHAPE(n), start, step);
    return gin[0] ? 0 : -1;
}

int gad__vjp_broadcast_to(gad_node *n, gad_tensor *gy, const bool *need,
                          gad_tensor **gin) {
    (void)need;
    return (gin[0] = gad__unbroadcast(gy, PARENT_SHAPE(n))) ? 0 : -1;
}

int gad__vjp_slice_scatter(gad_node *n, gad_tensor *gy, const bool *need,
                           gad_tensor **gin) {
    (void)need;
    gin[0] = gad__slice_geom(gy, GAD_NODE_P(n, slice)->start, GAD_NODE_P(n, slice)->step,
                             n->parents[0]->shape);
    return gin[0] ? 0 : -1;
}

/* ---------------------------------------------------------------- samples */

static gad_tensor *apply_view(void *self, gad_tensor *const *in, int n) {
    gad_op_sample *s = self;
    (void)n;
    gad_tensor *x = in[0];
    switch (s->i[0]) {
    case GAD_OP_RESHAPE: {
        int64_t shape[2] = {s->i[1], s->i[2]};
        return s->i[3] ? gad_unsqueeze(gad_reshape(x, shape, 2), -1)
                       : gad_reshape(x, shape, (int)s->i[4]);
    }
    case GAD_OP_PERMUTE: {
        int axes[3] = {(int)s->i[1], (int)s->i[2], (int)s->i[3]};
        return gad_permute(x, axes, 3);
    }
    case GAD_OP_SLICE: {
        gad_range r[2] = {GAD_RANGE_STEP(s->i[1], s->i[2], s->i[3]),
                          GAD_RANGE_STEP(s->i[4], s->i[5], s->i[6])};
        return gad_slice(x, r, 2);
    }
    case GAD_OP_SELECT: return gad_select(x, (int)s->i[1], s->i[2]);
    case GAD_OP_BROADCAST_TO: {
        int64_t shape[3] = {2, 3, 4};
        return gad_broadcast_to(x, shape, 3);
    }
    default: {
        int64_t shape[2] = {4, 3}, start[2] = {1, 0}, step[2] = {2, 2};
        return gad__slice_scatter(x, shape, 2, start, step);
    }
    }
}

static int view_sample(gad_op_sample *s, gad_rng *r, int op, const int64_t *shape,
                       int rank, const int64_t *params, int np) {
    *s = (gad_op_sample){.n = 1, .apply = apply_view, .smooth = 1};
    s->i[0] = op;
    for (int k = 0; k < np; k++) s->i[1 + k] = params[k];
    s->in[0] = gad__sample_leaf(r, shape, rank, -2, 2, 0);
    snprintf(s->what, sizeof s->what, "%s", gad__ops[op].info.name);
    return s->in[0] != NULL;
}

int gad__sample_reshape(gad_op_sample *s, gad_rng *r, int v) {
    const int64_t shape[2] = {3, 4};
    const int64_t p[3][4] = {{2, 6, 0, 2}, {-1, 2, 1, 2}, {12, 0, 0, 1}};
    if (v >= 3) return 0;
    return view_sample(s, r, GAD_OP_RESHAPE, shape, 2, p[v], 4);
}
int gad__sample_permute(gad_op_sample *s, gad_rng *r, int v) {
    const int64_t shape[3] = {2, 3, 4};
    const int64_t p[2][3] = {{2, 0, 1}, {-1, -3, 1}};
    if (v >= 2) return 0;
    return view_sample(s, r, GAD_OP_PERMUTE, shape, 3, p[v], 3);
}
int gad__sample_slice(gad_op_sample *s, gad_rng *r, int v) {
    const int64_t shape[2] = {5, 4};
    const int64_t p[3][6] = {{1, 5, 2, GAD_NIL, GAD_NIL, -1},
                             {-2, GAD_NIL, GAD_NIL, 3, 0, -2},
                             {2, 2, 1, GAD_NIL, GAD_NIL, GAD_NIL}};
    if (v >= 3) return 0;
    return view_sample(s, r, GAD_OP_SLICE, shape, 2, p[v], 6);
}
int gad__sample_select(gad_op_sample *s, gad_rng *r, int v) {
    const int64_t shape[2] = {3, 4};
    const int64_t p[2][2] = {{1, -1}, {0, 2}};
    if (v >= 2) return 0;
    return view_sample(s, r, GAD_OP_SELECT, shape, 2, p[v], 2);
}
int gad__sample_broadcast_to(gad_op_sample *s, gad_rng *r, int v) {
    const int64_t shapes[3][3] = {{3, 1}, {4}, {1, 3, 4}};
    const int ranks[3] = {2, 1, 3};
    if (v >= 3) return 0;
    return view_sample(s, r, GAD_OP_BROADCAST_TO, shapes[v], ranks[v], NULL, 0);
}
int gad__sample_slice_scatter(gad_op_sample *s, gad_rng *r, int v) {
    const int64_t shape[2] = {2, 2};
    if (v >= 1) return 0;
    return view_sample(s, r, GAD_OP_SLICE_SCATTER, shape, 2, NULL, 0);
}

/* ---- composites (ops.def's COMPOSITE rows): the view helpers over
 * reshape and permute. i[0]: the row, i[1..2]: axes */
static gad_tensor *apply_helper(void *self, gad_tensor *const *in, int n) {
    const gad_op_sample *s = self;
    (void)n;
    switch (s->i[0]) {
    case GAD_OP_FLATTEN: return gad_flatten(in[0]);
    case GAD_OP_TRANSPOSE: return gad_transpose(in[0]);
    case GAD_OP_SWAPAXES: return gad_swapaxes(in[0], (int)s->i[1], (int)s->i[2]);
    case GAD_OP_SQUEEZE: return gad_squeeze(in[0], (int)s->i[1]);
    case GAD_OP_SQUEEZE_ALL: return gad_squeeze_all(in[0]);
    default: return gad_unsqueeze(in[0], (int)s->i[1]);
    }
}

static int helper_sample(gad_op_sample *s, gad_rng *r, int v, int op) {
    static const struct {
        int op, rank;
        int64_t shape[4];
        int a0, a1;
    } c[] = {
        {GAD_OP_FLATTEN, 3, {2, 3, 4}, 0, 0},   {GAD_OP_FLATTEN, 0, {0}, 0, 0},
        {GAD_OP_FLATTEN, 2, {0, 3}, 0, 0},      {GAD_OP_TRANSPOSE, 2, {3, 4}, 0, 0},
        {GAD_OP_TRANSPOSE, 3, {2, 3, 4}, 0, 0}, {GAD_OP_TRANSPOSE, 4, {2, 1, 3, 2}, 0, 0},
        {GAD_OP_SWAPAXES, 3, {2, 3, 4}, 0, 2},  {GAD_OP_SWAPAXES, 3, {2, 3, 4}, -1, 1},
        {GAD_OP_SWAPAXES, 2, {3, 2}, 1, 1},     {GAD_OP_SQUEEZE, 3, {3, 1, 2}, 1, 0},
        {GAD_OP_SQUEEZE, 1, {1}, 0, 0},         {GAD_OP_SQUEEZE, 3, {3, 2, 1}, -1, 0},
        {GAD_OP_SQUEEZE_ALL, 4, {1, 3, 1, 2}, 0, 0}, {GAD_OP_SQUEEZE_ALL, 2, {1, 1}, 0, 0},
        {GAD_OP_UNSQUEEZE, 2, {3, 2}, 0, 0},    {GAD_OP_UNSQUEEZE, 2, {3, 2}, -1, 0},
        {GAD_OP_UNSQUEEZE, 0, {0}, 0, 0},
    };
    int k = -1;
    for (int i = 0, seen = 0; i < (int)(sizeof c / sizeof c[0]) && k < 0; i++)
        if (c[i].op == op && seen++ == v) k = i;
    if (k < 0) return 0;
    *s = (gad_op_sample){.n = 1, .apply = apply_helper, .smooth = 1};
    s->i[0] = op;
    s->i[1] = c[k].a0;
    s->i[2] = c[k].a1;
    s->in[0] = gad__sample_leaf(r, c[k].shape, c[k].rank, -2, 2, 0);
    int len = gad__shape_str(s->what, c[k].shape, c[k].rank) ? (int)strlen(s->what) : 0;
    snprintf(s->what + len, sizeof s->what - (size_t)len, " axes %d %d", c[k].a0, c[k].a1);
    return s->in[0] != NULL;
}

int gad__sample_flatten(gad_op_sample *s, gad_rng *r, int v) {
    return helper_sample(s, r, v, GAD_OP_FLATTEN);
}
int gad__sample_transpose(gad_op_sample *s, gad_rng *r, int v) {
    return helper_sample(s, r, v, GAD_OP_TRANSPOSE);
}
int gad__sample_swapaxes(gad_op_sample *s, gad_rng *r, int v) {
    return helper_sample(s, r, v, GAD_OP_SWAPAXES);
}
int gad__sample_squeeze(gad_op_sample *s, gad_rng *r, int v) {
    return helper_sample(s, r, v, GAD_OP_SQUEEZE);
}
int gad__sample_squeeze_all(gad_op_sample *s, gad_rng *r, int v) {
    return helper_sample(s, r, v, GAD_OP_SQUEEZE_ALL);
}
int gad__sample_unsqueeze(gad_op_sample *s, gad_rng *r, int v) {
    return helper_sample(s, r, v, GAD_OP_UNSQUEEZE);
}
