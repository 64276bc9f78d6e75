/* index.c: the range check of index values, gather, scatter_add, take and
 * the copy behind cat. The ops check the values first (gad__k_index_check,
 * through the back-end table); negative ones are wrapped here. */
#include "cpu.h"
#include "iter.h"

int64_t gad__k_index_check(const char *op, const gad_tensor *index, int64_t lo, int64_t hi,
                           int64_t *bad) {
    (void)op; /* the answer comes back at once: the caller names the op */
    if (index->numel == 0) return -1;
    gad_iter it;
    const int64_t *st[1] = {index->strides};
    gad__iter_init(&it, index->shape, index->rank, 1, st);
    const int64_t *base = gad__ptr(index);
    int64_t idx[GAD_MAX_RANK], off[1], sx = it.strides[0][it.nd - 1], pos = 0;
    gad__iter_seek(&it, 0, idx, off);
    for (int64_t o = 0; o < it.outer; o++) {
        for (int64_t j = 0; j < it.inner; j++, pos++) {
            int64_t v = base[off[0] + j * sx];
            if (v < lo || v >= hi) {
                *bad = v;
                return pos;
            }
        }
        gad__iter_next(&it, idx, off);
    }
    return -1;
}

static inline int64_t wrap(int64_t i, int64_t d) { return i < 0 ? i + d : i; }

/* Walk every position of `shape` with operand offsets (index, data). */
#define WALK(shape, rank, s0, s1, BODY)                                        \
    do {                                                                       \
        gad_iter it_;                                                          \
        const int64_t *ss_[2] = {(s0), (s1)};                                  \
        gad__iter_init(&it_, (shape), (rank), 2, ss_);                         \
        int64_t idx_[GAD_MAX_RANK], off_[2], pos = 0;                          \
        int64_t in0_ = it_.strides[0][it_.nd - 1], in1_ = it_.strides[1][it_.nd - 1]; \
        gad__iter_seek(&it_, 0, idx_, off_);                                   \
        for (int64_t o_ = 0; o_ < it_.outer; o_++) {                           \
            for (int64_t j_ = 0; j_ < it_.inner; j_++, pos++) {                \
                int64_t ioff = off_[0] + j_ * in0_, doff = off_[1] + j_ * in1_; \
                BODY;                                                          \
            }                                                                  \
            gad__iter_next(&it_, idx_, off_);                                  \
        }                                                                      \
    } while (0)

/* Strides of x for positions of an index-shaped walk: off-axis dims of x
 * with size 1 broadcast (stride 0); the axis itself gets stride 0 (its
 * offset comes from the index value). */
static void data_strides(const gad_tensor *x, int axis, int64_t *st) {
    for (int d = 0; d < x->rank; d++)
        st[d] = (d == axis || x->shape[d] == 1) ? 0 : x->strides[d];
}

/* y[p] = x[xoff(p) + index[p] * (x's stride on axis)] for every position p
 * of index, where xs gives x's offsets per index axis: the common walk of
 * gather and take. */
static void pick(const gad_tensor *x, int axis, const gad_tensor *index,
                 const int64_t *xs, gad_tensor *y) {
    if (y->numel == 0) return;
    const int64_t *ip = gad__ptr(index);
    int64_t d = x->shape[axis], sa = x->strides[axis];
    if (x->dtype == GAD_F32) {
        const float *xp = gad__ptr(x);
        float *yp = gad__ptr(y);
        WALK(index->shape, index->rank, index->strides, xs,
             yp[pos] = xp[doff + wrap(ip[ioff], d) * sa]);
    } else if (x->dtype == GAD_F64) {
        const double *xp = gad__ptr(x);
        double *yp = gad__ptr(y);
        WALK(index->shape, index->rank, index->strides, xs,
             yp[pos] = xp[doff + wrap(ip[ioff], d) * sa]);
    } else if (gad__dsize(x->dtype) == 2) { /* f16, bf16: moved, not computed */
        const uint16_t *xp = gad__ptr(x);
        uint16_t *yp = gad__ptr(y);
        WALK(index->shape, index->rank, index->strides, xs,
             yp[pos] = xp[doff + wrap(ip[ioff], d) * sa]);
    } else if (x->dtype == GAD_BOOL) { /* masks: forward only */
        const uint8_t *xp = gad__ptr(x);
        uint8_t *yp = gad__ptr(y);
        WALK(index->shape, index->rank, index->strides, xs,
             yp[pos] = xp[doff + wrap(ip[ioff], d) * sa]);
    } else { /* i64 data (labels, tokens): forward only */
        const int64_t *xp = gad__ptr(x);
        int64_t *yp = gad__ptr(y);
        WALK(index->shape, index->rank, index->strides, xs,
             yp[pos] = xp[doff + wrap(ip[ioff], d) * sa]);
    }
}

void gad__k_gather(const gad_tensor *x, int axis, const gad_tensor *index,
                   gad_tensor *y) {
    int64_t xs[GAD_MAX_RANK];
    data_strides(x, axis, xs);
    pick(x, axis, index, xs, y);
}

void gad__k_scatter_add(gad_tensor *y, int axis, const gad_tensor *index,
                        const gad_tensor *src) {
    if (index->numel == 0) return;
    /* y and src are contiguous; positions off the axis map one to one. */
    int64_t ys[GAD_MAX_RANK];
    for (int d = 0; d < y->rank; d++) ys[d] = d == axis ? 0 : y->strides[d];
    const int64_t *ip = gad__ptr(index);
    int64_t d = y->shape[axis], sa = y->strides[axis];
    if (y->dtype == GAD_F32) {
        float *yp = gad__ptr(y);
        const float *sp = gad__ptr(src);
        WALK(index->shape, index->rank, index->strides, ys,
             yp[doff + wrap(ip[ioff], d) * sa] += sp[pos]);
    } else {
        double *yp = gad__ptr(y);
        const double *sp = gad__ptr(src);
        WALK(index->shape, index->rank, index->strides, ys,
             yp[doff + wrap(ip[ioff], d) * sa] += sp[pos]);
    }
}

void gad__k_take(const gad_tensor *x, int axis, const gad_tensor *index,
                 gad_tensor *y) {
    /* x's strides without the axis line up with index's dims */
    int64_t xs[GAD_MAX_RANK];
    for (int d = 0, o = 0; d < x->rank; d++)
        if (d != axis) xs[o++] = x->strides[d];
    pick(x, axis, index, xs, y);
}

void gad__k_cat_into(const gad_tensor *x, int axis, int64_t start, gad_tensor *y) {
    char *base = (char *)gad__ptr(y) + (size_t)(start * y->strides[axis]) * gad__dsize(y->dtype);
    gad__copy_strided(x, base, y->strides);
}
