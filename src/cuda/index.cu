/* index.cu: the index check (on the device: only the first bad position and
 * its value come back), gather and take (one kernel: pick), and a
 * deterministic scatter_add. */
#include "cuda/cuda_int.cuh"

#include "gad.h"

/* Every bad position lowers *first to itself (an integer atomicMin: the
 * smallest wins whatever the order, so the answer is deterministic). */
__global__ void k_index_check(gcu_iter it, const int64_t *index, int64_t lo, int64_t hi,
                              unsigned long long *first) {
    GCU_FOR(i, it.n) {
        int64_t off[2];
        gcu_offsets(it, i, 1, off);
        int64_t v = index[off[0]];
        if (v < lo || v >= hi) atomicMin(first, (unsigned long long)i);
    }
}

/* out[0] = the first bad position (or -1), out[1] = its value */
__global__ void k_index_value(gcu_iter it, const int64_t *index, const unsigned long long *first,
                              int64_t *out) {
    unsigned long long f = *first;
    if (f == ~0ull) {
        out[0] = -1;
        out[1] = 0;
        return;
    }
    int64_t off[2];
    gcu_offsets(it, (int64_t)f, 1, off);
    out[0] = (int64_t)f;
    out[1] = index[off[0]];
}

extern "C" int64_t gcu_index_check(int ord, const gcu_iter *it, const int64_t *index, int64_t lo,
                                   int64_t hi, int64_t *bad) {
    if (it->n == 0) return -1;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return -2;
    char *buf = (char *)gcu_scratch(ord, 32);
    if (!buf) return -2;
    unsigned long long *first = (unsigned long long *)buf;
    int64_t *out = (int64_t *)(buf + 16), host[2] = {-1, 0};
    gcu_check(ord, cudaMemsetAsync(first, 0xff, sizeof *first, s), "index check");
    k_index_check<<<gcu_blocks(it->n), GCU_THREADS, 0, s>>>(*it, index, lo, hi, first);
    GCU_LAUNCHED(ord, "index check");
    k_index_value<<<1, 1, 0, s>>>(*it, index, first, out);
    GCU_LAUNCHED(ord, "index check");
    int rc = gcu_to_host(ord, host, out, sizeof host);
    gcu_free(ord, buf);
    if (rc) return -2;
    if (host[0] >= 0) *bad = host[1];
    return host[0];
}

/* y[pos] = x[doff + wrap(index[ioff]) * sa]. Values were checked by the
 * caller; one still out of range (a caller's bug) reads nothing and gives
 * 0 instead of faulting the device. */
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
            if (v < 0 || v >= a.d) continue; /* checked by the caller */
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
