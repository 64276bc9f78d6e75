/* embedding.cu: the embedding on the device: the forward gathers rows, the
 * backward adds the rows of the gradient back in a fixed order (the
 * indices sorted by row, a thread per run): no atomics. */
#include "cuda/cuda_int.cuh"

#include <cub/device/device_radix_sort.cuh>

#include "gad.h"

/* ------------------------------------------------------------ embedding */

template <class T>
__global__ void k_emb_fwd(const T *table, const int64_t *idx, T *y, int64_t R, int64_t D,
                          int64_t V) {
    GCU_FOR(k, R * D) {
        int64_t r = k / D, j = k - r * D, v = idx[r];
        y[k] = v >= 0 && v < V ? table[v * D + j] : (T)0; /* bad: its check reports it */
    }
}

/* The backward scatters rows of gy into gt by index, deterministically and
 * in parallel: the (index, row) pairs are sorted by index with CUB's radix
 * sort, which is stable (rows that share an index stay in row order), then
 * a thread per (first row of an index's run, column) adds the run's rows in
 * row order and adds that sum to gt. gt was zeroed by the caller, so each
 * element gets 0 + the rows in order: the CPU's sum, bit for bit. Without
 * scratch for the sort, a thread per column walks every row instead (the
 * same order, D threads). A bad index (its deferred check reports it) adds
 * nothing: the sort's keys hold V in its place, which sorts after every
 * row's and is skipped, so that the sort (which reads only the keys' low
 * bits) never mixes it into a good index's run. */
template <class T>
__global__ void k_emb_bwd_cols(const int64_t *idx, const T *gy, T *gt, int64_t R, int64_t D,
                               int64_t V) {
    GCU_FOR(j, D) {
        for (int64_t r = 0; r < R; r++) {
            int64_t v = idx[r];
            if (v >= 0 && v < V) gt[v * D + j] += gy[r * D + j];
        }
    }
}

template <class T>
__global__ void k_emb_bwd_runs(const int64_t *key, const int64_t *row, const T *gy, T *gt,
                               int64_t R, int64_t D, int64_t V) {
    GCU_FOR(k, R * D) {
        int64_t p = k / D, j = k - p * D, v = key[p];
        if ((p > 0 && key[p - 1] == v) || v < 0 || v >= V) continue; /* not a run's first */
        T acc = 0;
        for (int64_t q = p; q < R && key[q] == v; q++) acc += gy[row[q] * D + j];
        gt[v * D + j] += acc;
    }
}

/* The sort's input: keys (idx, a bad index made V) and rows 0..R-1. */
__global__ void k_emb_keys(const int64_t *idx, int64_t *keys, int64_t *rows, int64_t R,
                           int64_t V) {
    GCU_FOR(i, R) {
        int64_t v = idx[i];
        keys[i] = v >= 0 && v < V ? v : V;
        rows[i] = i;
    }
}

/* Sort (keys of idx, 0..R-1) by key into key and row; false when there is
 * no scratch for it. */
static bool sort_rows(int ord, cudaStream_t s, const int64_t *idx, int64_t R, int64_t V,
                      int64_t **key, int64_t **row, void **buf) {
    int bits = 1; /* keys 0..V in the low bits */
    while (bits < 63 && ((int64_t)1 << bits) <= V) bits++;
    size_t temp = 0;
    if (R > INT32_MAX ||
        cub::DeviceRadixSort::SortPairs(NULL, temp, (const int64_t *)NULL, (int64_t *)NULL,
                                        (const int64_t *)NULL, (int64_t *)NULL, (int)R, 0, bits,
                                        s) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    size_t n8 = (size_t)R * sizeof(int64_t);
    char *b = (char *)gcu_alloc(ord, 4 * n8 + temp + 256);
    if (!b) return false;
    int64_t *keys = (int64_t *)b, *iota = (int64_t *)(b + n8);
    *key = (int64_t *)(b + 2 * n8);
    *row = (int64_t *)(b + 3 * n8);
    void *tmp = b + 4 * n8;
    k_emb_keys<<<gcu_blocks(R), GCU_THREADS, 0, s>>>(idx, keys, iota, R, V);
    cudaError_t e = cub::DeviceRadixSort::SortPairs(tmp, temp, keys, *key, iota, *row, (int)R, 0,
                                                    bits, s);
    if (gcu_check(ord, e, "embedding backward (sort)")) {
        gcu_free(ord, b);
        return false;
    }
    *buf = b;
    return true;
}

extern "C" void gcu_emb_fwd(int ord, int dtype, const void *table, const int64_t *idx, void *y,
                            int64_t R, int64_t D, int64_t V) {
    if (R * D == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32)
        k_emb_fwd<float><<<gcu_blocks(R * D), GCU_THREADS, 0, s>>>((const float *)table, idx,
                                                                   (float *)y, R, D, V);
    else
        k_emb_fwd<double><<<gcu_blocks(R * D), GCU_THREADS, 0, s>>>((const double *)table, idx,
                                                                    (double *)y, R, D, V);
    GCU_LAUNCHED(ord, "embedding");
}

extern "C" void gcu_emb_bwd(int ord, int dtype, const int64_t *idx, const void *gy, void *gt,
                            int64_t R, int64_t D, int64_t V) {
    if (R * D == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    int64_t *key = NULL, *row = NULL;
    void *buf = NULL;
    if (sort_rows(ord, s, idx, R, V, &key, &row, &buf)) {
        if (dtype == GAD_F32)
            k_emb_bwd_runs<float><<<gcu_blocks(R * D), GCU_THREADS, 0, s>>>(
                key, row, (const float *)gy, (float *)gt, R, D, V);
        else
            k_emb_bwd_runs<double><<<gcu_blocks(R * D), GCU_THREADS, 0, s>>>(
                key, row, (const double *)gy, (double *)gt, R, D, V);
        GCU_LAUNCHED(ord, "embedding backward");
        gcu_free(ord, buf);
        return;
    }
    if (dtype == GAD_F32)
        k_emb_bwd_cols<float><<<gcu_blocks(D), GCU_THREADS, 0, s>>>(idx, (const float *)gy,
                                                                   (float *)gt, R, D, V);
    else
        k_emb_bwd_cols<double><<<gcu_blocks(D), GCU_THREADS, 0, s>>>(idx, (const double *)gy,
                                                                    (double *)gt, R, D, V);
    GCU_LAUNCHED(ord, "embedding backward");
}
