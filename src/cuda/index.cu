/* index.cu: the index check (deferred: queued on the device, its answer
 * noted in the thread's record for the next wait to report, runtime.cu),
 * gather and take (one kernel: pick), and a deterministic scatter_add. The
 * op runs before the check's answer is known, so every kernel here stays
 * in bounds for a bad index: pick gives 0, scatter_add skips the entry. */
#include "cuda/cuda_int.cuh"

#include "gad.h"

/* Every bad position lowers *key to itself (an integer atomicMin: the
 * smallest wins whatever the order, so the answer is deterministic). */
__global__ void k_index_check(gcu_iter it, const int64_t *index, int64_t lo, int64_t hi,
                              unsigned long long *key) {
    GCU_FOR(i, it.n) {
        int64_t off[2];
        gcu_offsets(it, i, 1, off);
        int64_t v = index[off[0]];
        if (v < lo || v >= hi) atomicMin(key, (unsigned long long)i);
    }
}

/* One thread, after k_index_check: the smallest bad position it found and
 * its value noted (unless an earlier check's was), and the key made none
 * again for the next check. */
__global__ void k_index_note(gcu_iter it, const int64_t *index, int64_t lo, int64_t hi,
                             gcu_chk *c, gcu_index_fault *rec, gcu_opname op) {
    unsigned long long f = c->key;
    c->key = ~0ull;
    if (f >= (unsigned long long)it.n) return; /* none (~0) */
    int64_t off[2];
    gcu_offsets(it, (int64_t)f, 1, off);
    gcu_note(c, rec, 0, (int64_t)f, index[off[0]], lo, hi, op);
}

extern "C" int gcu_index_check(int ord, const char *op, const gcu_iter *it, const int64_t *index,
                               int64_t lo, int64_t hi) {
    if (it->n == 0) return 0;
    cudaStream_t s = gcu_stream(ord);
    gcu_chk *c;
    gcu_index_fault *rec;
    if (!s || !gcu_checks(ord, &c, &rec)) return -1;
    k_index_check<<<gcu_blocks(it->n), GCU_THREADS, 0, s>>>(*it, index, lo, hi, &c->key);
    if (GCU_LAUNCHED(ord, "index check")) return -1;
    k_index_note<<<1, 1, 0, s>>>(*it, index, lo, hi, c, rec, gcu_opname_of(op));
    return GCU_LAUNCHED(ord, "index check") ? -1 : 0;
}

/* y[pos] = x[doff + wrap(index[ioff]) * sa]. A value out of range (its
 * check, queued before, reports it at the next wait) reads nothing and
 * gives 0. */
template <class T>
__global__ void k_pick(gcu_iter it, const int64_t *index, const T *x, int64_t d, int64_t sa,
                       T *y) {
    GCU_FOR(i, it.n) {
        int64_t off[2];
        gcu_offsets(it, i, 2, off);
        int64_t v = index[off[0]];
        if (v < 0) v += d;
        y[i] = v >= 0 && v < d ? x[off[1] + v * sa] : (T)0;
    }
}

extern "C" void gcu_pick(int ord, int dtype, const gcu_iter *it, const int64_t *index,
                         const void *x, int64_t d, int64_t sa, void *y) {
    if (it->n == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32)
        k_pick<float><<<gcu_blocks(it->n), GCU_THREADS, 0, s>>>(*it, index, (const float *)x, d,
                                                                sa, (float *)y);
    else
        k_pick<double><<<gcu_blocks(it->n), GCU_THREADS, 0, s>>>(*it, index, (const double *)x, d,
                                                                 sa, (double *)y);
    GCU_LAUNCHED(ord, "gather");
}

/* Positions of index off the axis map one to one to y's (and src's): a
 * thread owns one such "line" c and adds its entries along the axis in
 * index order, so no two threads write one element and each sum has the
 * CPU's order (its row-major walk visits a line's entries in that order). */
struct scat_args {
    int rank, axis;
    int64_t lines, len;              /* lines = index.numel / len */
    int64_t ishape[GCU_MAXR], istr[GCU_MAXR];
    int64_t ystr[GCU_MAXR], sstr[GCU_MAXR];
    int64_t d;                       /* y's size along the axis */
};

template <class T>
__global__ void k_scatter(scat_args a, const int64_t *index, const T *src, T *y) {
    GCU_FOR(c, a.lines) {
        int64_t io = 0, yo = 0, so = 0, r = c;
        for (int k = a.rank - 1; k >= 0; k--) {
            if (k == a.axis) continue;
            int64_t q = r / a.ishape[k], e = r - q * a.ishape[k];
            io += e * a.istr[k];
            yo += e * a.ystr[k];
            so += e * a.sstr[k];
            r = q;
        }
        for (int64_t j = 0; j < a.len; j++) {
            int64_t v = index[io + j * a.istr[a.axis]];
            if (v < 0) v += a.d;
            if (v < 0 || v >= a.d) continue; /* a bad index: its check reports it */
            y[yo + v * a.ystr[a.axis]] += src[so + j * a.sstr[a.axis]];
        }
    }
}

extern "C" void gcu_scatter_add(int ord, const gcu_view *y, int axis, const gcu_view *index,
                                const gcu_view *src) {
    if (index->numel == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    scat_args a;
    a.rank = index->rank;
    a.axis = axis;
    a.len = index->shape[axis];
    a.lines = index->numel / a.len;
    a.d = y->shape[axis];
    for (int k = 0; k < index->rank; k++) {
        a.ishape[k] = index->shape[k];
        a.istr[k] = index->strides[k];
        a.ystr[k] = y->strides[k];
        a.sstr[k] = src->strides[k];
    }
    if (y->dtype == GAD_F32)
        k_scatter<float><<<gcu_blocks(a.lines), GCU_THREADS, 0, s>>>(a, (const int64_t *)index->p,
                                                                     (const float *)src->p,
                                                                     (float *)y->p);
    else
        k_scatter<double><<<gcu_blocks(a.lines), GCU_THREADS, 0, s>>>(
            a, (const int64_t *)index->p, (const double *)src->p, (double *)y->p);
    GCU_LAUNCHED(ord, "scatter_add");
}
