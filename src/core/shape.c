/* shape.c: shapes, strides, axes and broadcasting (SPEC §1.3, §1.10). */
#include "gad_int.h"

/* The most elements a tensor may hold: numel * 8 bytes must fit in int64. */
#define GAD_MAX_NUMEL (INT64_MAX / 8)

int gad__check_shape(const char *op, const int64_t *shape, int rank,
                     int64_t *numel) {
    if (rank < 0 || rank > GAD_MAX_RANK) {
        gad__err(GAD_ERR_SHAPE, op, "rank %d outside 0..%d", rank,
                 GAD_MAX_RANK);
        return -1;
    }
    if (rank > 0 && !shape) {
        gad__err(GAD_ERR_SHAPE, op, "shape is NULL for rank %d", rank);
        return -1;
    }
    /* The product of the nonzero dims must fit even when a zero makes the
     * tensor empty: strides are products of dims too (NumPy's rule). */
    int64_t n = 1;
    bool overflow = false, zero = false;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0) {
            char b[GAD_SHAPE_BUF];
            gad__err(GAD_ERR_SHAPE, op, "negative dim %lld in shape %s",
                     (long long)shape[i], gad__shape_str(b, shape, rank));
            return -1;
        }
        int64_t m;
        if (shape[i] == 0) zero = true;
        else if (__builtin_mul_overflow(n, shape[i], &m) || m > GAD_MAX_NUMEL) overflow = true;
        else n = m;
    }
    if (zero) n = 0;
    if (overflow) {
        char b[GAD_SHAPE_BUF];
        gad__err(GAD_ERR_SHAPE, op, "element count of shape %s overflows",
                 gad__shape_str(b, shape, rank));
        return -1;
    }
    if (numel) *numel = n;
    return 0;
}

int gad__norm_axis(const char *op, int axis, int rank, int *out) {
    int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
        gad__err(GAD_ERR_SHAPE, op, "axis %d out of rank %d", axis, rank);
        return -1;
    }
    *out = a;
    return 0;
}

int gad__axes_mask(const char *op, const int *axes, int n, int rank,
                   unsigned *mask) {
    unsigned m = 0;
    if (n < 0 || (n > 0 && !axes)) {
        gad__err(GAD_ERR_SHAPE, op, "bad axis list (n = %d)", n);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int a;
        if (gad__norm_axis(op, axes[i], rank, &a)) return -1;
        if (m & (1u << a)) {
            gad__err(GAD_ERR_SHAPE, op, "duplicate axis %d", axes[i]);
            return -1;
        }
        m |= 1u << a;
    }
    *mask = m;
    return 0;
}

int gad__broadcast_shapes(const char *op, const int64_t *a, int ra,
                          const int64_t *b, int rb, int64_t *out, int *rout) {
    int r = ra > rb ? ra : rb;
    int64_t tmp[GAD_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1) tmp[i] = da;
        else if (da == 1) tmp[i] = db;
        else {
            char sa[GAD_SHAPE_BUF], sb[GAD_SHAPE_BUF];
            gad__err(GAD_ERR_SHAPE, op, "incompatible %s vs %s",
                     gad__shape_str(sa, a, ra), gad__shape_str(sb, b, rb));
            return -1;
        }
    }
    memcpy(out, tmp, (size_t)r * sizeof *out);
    *rout = r;
    return 0;
}

void gad__broadcast_strides(const gad_tensor *t, const int64_t *shape, int rank,
                            int64_t *strides) {
    int lead = rank - t->rank;
    for (int i = 0; i < rank; i++) {
        int j = i - lead;
        strides[i] = (j < 0 || (t->shape[j] == 1 && shape[i] != 1))
                         ? 0
                         : t->strides[j];
    }
}

void gad__row_major(const int64_t *shape, int rank, int64_t *strides) {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

void gad__set_layout(gad_tensor *t, const int64_t *shape, const int64_t *strides,
                     int rank, int64_t offset) {
    t->rank = (uint8_t)rank;
    t->offset = offset;
    int64_t n = 1;
    bool contig = offset == 0;
    int64_t expect = 1;
    for (int i = rank - 1; i >= 0; i--) {
        t->shape[i] = shape[i];
        t->strides[i] = strides[i];
        n *= shape[i];
        if (strides[i] != expect) contig = false;
        expect *= shape[i] > 0 ? shape[i] : 1;
    }
    t->numel = n;
    t->contig = contig;
}
