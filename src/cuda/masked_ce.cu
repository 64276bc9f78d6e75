/* masked_ce.cu: the masked cross-entropy on the device: its preparation
 * (the targets checked, deferred as index.cu's checks are), forward and
 * backward. Every sum has a fixed order (fixed trees): no atomics. */
#include "cuda/cuda_int.cuh"

#include "gad.h"

/* ------------------------------------------------ masked cross-entropy */

/* One block: count = sum |m| by a fixed tree; the first weighted row with
 * a target outside [0, V) by a min tree, noted for the next wait (the
 * deferred check, runtime.cu), and every such target made 0; unweighted
 * rows' targets 0. */
template <class T>
__global__ void k_mce_prep(int64_t *safe, const T *mask, int64_t N, int64_t V, double *count,
                           T *nscale, gcu_chk *c, gcu_index_fault *rec, gcu_opname op) {
    __shared__ double sh[GCU_THREADS];
    __shared__ int64_t first[GCU_THREADS], fval[GCU_THREADS];
    double acc = 0;
    int64_t f = INT64_MAX, fv = 0;
    for (int64_t i = threadIdx.x; i < N; i += GCU_THREADS) {
        double m = (double)mask[i];
        acc += fabs(m);
        if (m == 0) {
            safe[i] = 0;
        } else if (safe[i] < 0 || safe[i] >= V) {
            if (i < f) { /* this thread's rows rise: its first bad one */
                f = i;
                fv = safe[i];
            }
            safe[i] = 0; /* the forward and backward then read inside the row */
        }
    }
    double cnt = gcu_block_sum(acc, sh);
    first[threadIdx.x] = f;
    fval[threadIdx.x] = fv;
    __syncthreads();
    for (int w = GCU_THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w && first[threadIdx.x + w] < first[threadIdx.x]) {
            first[threadIdx.x] = first[threadIdx.x + w];
            fval[threadIdx.x] = fval[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        *count = cnt;
        *nscale = (T)(cnt == 0 ? 0.0 : -1.0 / cnt);
        if (first[0] != INT64_MAX) gcu_note(c, rec, 1, first[0], fval[0], 0, V, op);
    }
}

extern "C" int gcu_mce_prep(int ord, int dtype, const char *op, int64_t *safe, const void *mask,
                            int64_t N, int64_t V, double *count, void *nscale) {
    cudaStream_t s = gcu_stream(ord);
    gcu_chk *c;
    gcu_index_fault *rec;
    if (!s || !gcu_checks(ord, &c, &rec)) return -1;
    gcu_opname name = gcu_opname_of(op);
    if (dtype == GAD_F32)
        k_mce_prep<float><<<1, GCU_THREADS, 0, s>>>(safe, (const float *)mask, N, V, count,
                                                    (float *)nscale, c, rec, name);
    else
        k_mce_prep<double><<<1, GCU_THREADS, 0, s>>>(safe, (const double *)mask, N, V, count,
                                                     (double *)nscale, c, rec, name);
    return GCU_LAUNCHED(ord, "masked cross-entropy") ? -1 : 0;
}

/* A block per row: probs = softmax (the max and the sum by fixed trees),
 * the row's loss -m log softmax(z)[t] into rl. */
template <class T>
__global__ void k_mce_rows(const T *logits, const int64_t *safe, const T *mask, T *probs,
                           double *rl, int64_t N, int64_t V) {
    __shared__ double sh[GCU_THREADS];
    for (int64_t i = blockIdx.x; i < N; i += gridDim.x) {
        const T *z = logits + i * V;
        T *p = probs + i * V;
        T m = -INFINITY;
        for (int64_t j = threadIdx.x; j < V; j += GCU_THREADS)
            if (z[j] > m) m = z[j];
        m = (T)gcu_block_max((double)m, sh);
        if (m == -INFINITY) m = 0;
        double acc = 0;
        for (int64_t j = threadIdx.x; j < V; j += GCU_THREADS) {
            T e = exp(z[j] - m);
            p[j] = e;
            acc += (double)e;
        }
        double sum = gcu_block_sum(acc, sh);
        T inv = (T)(1.0 / sum);
        for (int64_t j = threadIdx.x; j < V; j += GCU_THREADS) p[j] *= inv;
        __syncthreads(); /* p[t] below may be another thread's */
        if (threadIdx.x == 0) {
            double mi = (double)mask[i], li = 0;
            if (mi != 0) /* -log softmax(z)[t] = log sum + m - z[t] */
                li = mi * (log(sum) + (double)m - (double)z[safe[i]]);
            rl[i] = li;
        }
    }
}

/* loss = sum of the rows' losses (a fixed tree) / sum |m| */
template <class T>
__global__ void k_mce_total(const double *rl, const T *mask, int64_t N, T *loss) {
    __shared__ double sh[GCU_THREADS];
    double a = 0, c = 0;
    for (int64_t i = threadIdx.x; i < N; i += GCU_THREADS) {
        a += rl[i];
        c += fabs((double)mask[i]);
    }
    double sum = gcu_block_sum(a, sh), cnt = gcu_block_sum(c, sh);
    if (threadIdx.x == 0) *loss = (T)(cnt == 0 ? 0.0 : sum / cnt);
}

extern "C" int gcu_mce_fwd(int ord, int dtype, const void *logits, const int64_t *safe,
                           const void *mask, void *probs, void *loss, int64_t N, int64_t V) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return -1;
    double *rl = (double *)gcu_scratch(ord, (size_t)(N ? N : 1) * sizeof(double));
    if (!rl) return -1;
    unsigned g = N > 65536 ? 65536u : (unsigned)(N ? N : 1);
    if (dtype == GAD_F32) {
        if (N && V) k_mce_rows<float><<<g, GCU_THREADS, 0, s>>>(
            (const float *)logits, safe, (const float *)mask, (float *)probs, rl, N, V);
        k_mce_total<float><<<1, GCU_THREADS, 0, s>>>(rl, (const float *)mask, N, (float *)loss);
    } else {
        if (N && V) k_mce_rows<double><<<g, GCU_THREADS, 0, s>>>(
            (const double *)logits, safe, (const double *)mask, (double *)probs, rl, N, V);
        k_mce_total<double><<<1, GCU_THREADS, 0, s>>>(rl, (const double *)mask, N, (double *)loss);
    }
    bool bad = GCU_LAUNCHED(ord, "masked cross-entropy");
    gcu_free(ord, rl);
    return bad ? -1 : 0;
}

/* dlogits = (p - onehot(t)) m gy / count per weighted row, 0 elsewhere */
template <class T>
__global__ void k_mce_bwd(const T *probs, const int64_t *safe, const T *mask, const double *count,
                          const T *gy, T *d, int64_t N, int64_t V) {
    double cnt = *count, scale = cnt == 0 ? 0 : (double)*gy / cnt;
    GCU_FOR(k, N * V) {
        int64_t i = k / V, j = k - i * V;
        double mi = (double)mask[i];
        if (mi == 0) {
            d[k] = 0;
            continue;
        }
        T s = (T)(mi * scale), v = probs[k] * s;
        d[k] = j == safe[i] ? v - s : v;
    }
}

extern "C" void gcu_mce_bwd(int ord, int dtype, const void *probs, const int64_t *safe,
                            const void *mask, const double *count, const void *gy, void *dl,
                            int64_t N, int64_t V) {
    if (N * V == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32)
        k_mce_bwd<float><<<gcu_blocks(N * V), GCU_THREADS, 0, s>>>(
            (const float *)probs, safe, (const float *)mask, count, (const float *)gy, (float *)dl, N, V);
    else
        k_mce_bwd<double><<<gcu_blocks(N * V), GCU_THREADS, 0, s>>>(
            (const double *)probs, safe, (const double *)mask, count, (const double *)gy,
            (double *)dl, N, V);
    GCU_LAUNCHED(ord, "masked cross-entropy backward");
}
