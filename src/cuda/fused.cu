/* fused.cu: the fused HELIX kernels of SPEC section 4 on the device: the
 * gated scan (a thread per channel walks the time steps, as the recurrence
 * h_t = a_t h_{t-1} + b_t demands), the RMS norm (a block per row), the
 * masked cross-entropy's preparation, forward and backward, the embedding,
 * and the HELIX block, composed as the CPU composes it
 * (src/cpu/helix_tmpl.h): cuBLAS GEMMs (blas.cu) between row passes that
 * each fuse one step's elementwise work and norms. Every sum has a fixed
 * order (fixed trees, or one thread walking rows in order): no atomics. */
#include "cuda/cuda_int.cuh"

#include <cub/device/device_radix_sort.cuh>

#include "gad.h"

template <class T>
__device__ __forceinline__ T sigm(T v) {
    return (T)1 / ((T)1 + exp(-v));
}
template <class T>
__device__ __forceinline__ T dsilu(T z) {
    T s = sigm(z);
    return s * ((T)1 + z * ((T)1 - s));
}

/* ------------------------------------------------------------- scan */

template <class T>
__global__ void k_scan_fwd(const T *a, const T *b, T *h, int64_t B, int64_t Tn, int64_t D) {
    GCU_FOR(w, B * D) {
        int64_t bi = w / D, d = w - bi * D;
        size_t base = (size_t)(bi * Tn * D) + (size_t)d;
        T prev = 0;
        for (int64_t t = 0; t < Tn; t++) {
            size_t k = base + (size_t)(t * D);
            prev = a[k] * prev + b[k];
            h[k] = prev;
        }
    }
}

/* G_t = gh_t + a_{t+1} G_{t+1}; gb = G; ga_t = G_t h_{t-1}, ga_0 = 0 */
template <class T>
__global__ void k_scan_bwd(const T *a, const T *h, const T *gh, T *ga, T *gb, int64_t B,
                           int64_t Tn, int64_t D) {
    GCU_FOR(w, B * D) {
        int64_t bi = w / D, d = w - bi * D;
        size_t base = (size_t)(bi * Tn * D) + (size_t)d;
        T carry = 0;
        for (int64_t t = Tn - 1; t >= 0; t--) {
            size_t k = base + (size_t)(t * D);
            T G = gh[k] + carry;
            if (gb) gb[k] = G;
            if (ga) ga[k] = t > 0 ? G * h[k - (size_t)D] : (T)0;
            carry = a[k] * G;
        }
    }
}

extern "C" void gcu_scan_fwd(int ord, int dtype, const void *a, const void *b, void *h, int64_t B,
                             int64_t Tn, int64_t D) {
    if (B * Tn * D == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32)
        k_scan_fwd<float><<<gcu_blocks(B * D), GCU_THREADS, 0, s>>>((const float *)a, (const float *)b,
                                                                    (float *)h, B, Tn, D);
    else
        k_scan_fwd<double><<<gcu_blocks(B * D), GCU_THREADS, 0, s>>>(
            (const double *)a, (const double *)b, (double *)h, B, Tn, D);
    GCU_LAUNCHED(ord, "scan");
}

extern "C" void gcu_scan_bwd(int ord, int dtype, const void *a, const void *h, const void *gh,
                             void *ga, void *gb, int64_t B, int64_t Tn, int64_t D) {
    if (B * Tn * D == 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32)
        k_scan_bwd<float><<<gcu_blocks(B * D), GCU_THREADS, 0, s>>>(
            (const float *)a, (const float *)h, (const float *)gh, (float *)ga, (float *)gb, B, Tn, D);
    else
        k_scan_bwd<double><<<gcu_blocks(B * D), GCU_THREADS, 0, s>>>(
            (const double *)a, (const double *)h, (const double *)gh, (double *)ga, (double *)gb, B,
            Tn, D);
    GCU_LAUNCHED(ord, "scan backward");
}

/* ------------------------------------------------- row passes, norms */

/* The passes of the HELIX block (helix_tmpl.h's list) and the plain norm's
 * two (RMS_FWD, and RMS_BWD with gain and add NULL). */
enum {
    HX_XN, HX_GATE, HX_S2, HX_RES_NORM, HX_SILU2, HX_OUT, HX_DM, HX_DPRE, HX_RMS_BWD, HX_GHG,
    HX_DH, HX_GUA
};

template <class T>
struct pass_args {
    int pass;
    int64_t M, D;
    double eps;
    const T *x, *h, *g, *gain, *add, *bias;
    T *o, *rn;
};

/* sum over the row of a[d] b[d] c[d] (b, c NULL: 1; b == a: squares) */
template <class T>
__device__ __forceinline__ double row_dot(const T *a, const T *b, const T *c, int64_t n,
                                          double *sh) {
    double acc = 0;
    for (int64_t d = threadIdx.x; d < n; d += GCU_THREADS) {
        double v = (double)a[d] * (double)(b ? b[d] : a[d]);
        acc += c ? v * (double)c[d] : v;
    }
    return gcu_block_sum(acc, sh);
}

/* A block per row m; its threads take the row's elements d, d + 256, ... */
template <class T>
__global__ void k_pass(pass_args<T> c) {
    __shared__ double sh[GCU_THREADS];
    const int64_t D = c.D, W = (c.pass == HX_SILU2 || c.pass == HX_DPRE) ? 2 * D : D;
    for (int64_t m = blockIdx.x; m < c.M; m += gridDim.x) {
        T *o = c.o + m * W;
        const T *x = c.x ? c.x + m * W : NULL;
        const int64_t t0 = threadIdx.x, ts = GCU_THREADS;
        switch (c.pass) {
        case HX_XN: { /* o = rms(x) * gain (gain NULL: 1); rn = rms(x) */
            T r = (T)(1.0 / sqrt(row_dot<T>(x, NULL, NULL, D, sh) / (double)D + c.eps));
            for (int64_t d = t0; d < D; d += ts) {
                o[d] = c.gain ? x[d] * r * c.gain[d] : x[d] * r;
                if (c.rn) c.rn[m * D + d] = x[d] * r;
            }
            break;
        }
        case HX_GATE:
            for (int64_t d = t0; d < D; d += ts) o[d] = sigm(o[d] + c.bias[d]);
            break;
        case HX_S2:
            for (int64_t d = t0; d < D; d += ts) {
                T v = x[d] * c.gain[d];
                o[d] = v * sigm(v);
            }
            break;
        case HX_RES_NORM: {
            T *t = (T *)c.h + m * D; /* the GEMM's output becomes out1 */
            for (int64_t d = t0; d < D; d += ts) t[d] += x[d];
            T r = (T)(1.0 / sqrt(row_dot<T>(t, NULL, NULL, D, sh) / (double)D + c.eps));
            for (int64_t d = t0; d < D; d += ts) o[d] = t[d] * r * c.gain[d];
            break;
        }
        case HX_SILU2:
            for (int64_t d = t0; d < W; d += ts) o[d] = x[d] * sigm(x[d]);
            break;
        case HX_OUT:
            for (int64_t d = t0; d < D; d += ts) o[d] = c.h[m * D + d] + x[d] * c.gain[d];
            break;
        case HX_DM:
            for (int64_t d = t0; d < D; d += ts) o[d] = x[d] * c.gain[d];
            break;
        case HX_DPRE:
            for (int64_t d = t0; d < W; d += ts) o[d] *= dsilu(x[d]);
            break;
        case HX_RMS_BWD: { /* o = rms_bwd(x, g * gain) + add */
            const T *g = c.g + m * D;
            double inv = 1.0 / sqrt(row_dot<T>(x, NULL, NULL, D, sh) / (double)D + c.eps);
            double dot = row_dot<T>(x, g, c.gain, D, sh);
            T a = (T)inv, b = (T)(inv * inv * inv * dot / (double)D);
            const T *add = c.add ? c.add + m * D : NULL;
            for (int64_t d = t0; d < D; d += ts) {
                T v = (c.gain ? g[d] * c.gain[d] : g[d]) * a - x[d] * b;
                o[d] = add ? v + add[d] : v;
            }
            break;
        }
        case HX_GHG:
            for (int64_t d = t0; d < D; d += ts) o[d] *= dsilu(x[d] * c.gain[d]);
            break;
        case HX_DH:
            for (int64_t d = t0; d < D; d += ts) o[d] *= c.gain[d];
            break;
        case HX_GUA:
            for (int64_t d = t0; d < D; d += ts) o[d] *= x[d] * ((T)1 - x[d]);
            break;
        }
    }
}

template <class T>
static void run_pass(int ord, cudaStream_t s, int pass, int64_t M, int64_t D, pass_args<T> c) {
    if (M == 0 || D == 0) return;
    c.pass = pass;
    c.M = M;
    c.D = D;
    unsigned g = M > 65536 ? 65536u : (unsigned)M;
    k_pass<T><<<g, GCU_THREADS, 0, s>>>(c);
    GCU_LAUNCHED(ord, "row pass");
}

extern "C" void gcu_rms_fwd(int ord, int dtype, const void *x, void *y, int64_t rows, int64_t n,
                            double eps) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32) {
        pass_args<float> c = {};
        c.x = (const float *)x, c.o = (float *)y, c.eps = eps;
        run_pass<float>(ord, s, HX_XN, rows, n, c);
    } else {
        pass_args<double> c = {};
        c.x = (const double *)x, c.o = (double *)y, c.eps = eps;
        run_pass<double>(ord, s, HX_XN, rows, n, c);
    }
}

extern "C" void gcu_rms_bwd(int ord, int dtype, const void *x, const void *g, void *dx,
                            int64_t rows, int64_t n, double eps) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32) {
        pass_args<float> c = {};
        c.x = (const float *)x, c.g = (const float *)g, c.o = (float *)dx, c.eps = eps;
        run_pass<float>(ord, s, HX_RMS_BWD, rows, n, c);
    } else {
        pass_args<double> c = {};
        c.x = (const double *)x, c.g = (const double *)g, c.o = (double *)dx, c.eps = eps;
        run_pass<double>(ord, s, HX_RMS_BWD, rows, n, c);
    }
}

/* Column sums of a [M, n] product p * q (q NULL: p alone): a thread per
 * column walks the rows in order (neighbouring threads, neighbouring
 * columns). */
template <class T>
__global__ void k_colsum(const T *p, const T *q, T *out, int64_t M, int64_t n) {
    GCU_FOR(j, n) {
        double acc = 0;
        for (int64_t m = 0; m < M; m++)
            acc += q ? (double)p[m * n + j] * (double)q[m * n + j] : (double)p[m * n + j];
        out[j] = (T)acc;
    }
}

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
 * the row's loss -m log(clamp(p_t)) into rl. */
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
        sh[threadIdx.x] = (double)m;
        __syncthreads();
        for (int w = GCU_THREADS / 2; w > 0; w /= 2) {
            if ((int)threadIdx.x < w && sh[threadIdx.x + w] > sh[threadIdx.x])
                sh[threadIdx.x] = sh[threadIdx.x + w];
            __syncthreads();
        }
        m = (T)sh[0];
        __syncthreads();
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
            if (mi != 0) {
                double pt = (double)p[safe[i]];
                if (pt < 1e-30) pt = 1e-30;
                if (pt > 1) pt = 1;
                li = -mi * log(pt);
            }
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

/* ---------------------------------------------------------- HELIX block */

enum { X_, WA, WB, WO, WF1, WF2, G1, G2, G3, G4, A_, H_, OUT1, F1, F2, S2, XN2 };

template <class T>
struct helix {
    int ord, dtype;
    cudaStream_t s;
    int64_t B, Tn, D, M;
    double eps;
    /* row-major C = op(A) op(B) (alpha 1) + beta C */
    int gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,
             const T *b, int64_t ldb, double beta, T *c, int64_t ldc) {
        return gcu_gemm(ord, dtype, ta, tb, m, n, k, 1.0, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
    }
    void pass(int p, pass_args<T> c) {
        c.eps = eps;
        run_pass<T>(ord, s, p, M, D, c);
    }
    void colsum(const T *p, const T *q, T *out, int64_t n) {
        k_colsum<T><<<gcu_blocks(n), GCU_THREADS, 0, s>>>(p, q, out, M, n);
        GCU_LAUNCHED(ord, "column sums");
    }
};

template <class T>
static pass_args<T> P() {
    pass_args<T> c = {};
    return c;
}

template <class T>
static int helix_fwd_t(helix<T> &hx, T *const *t, T *y, int *oom) {
    const int64_t M = hx.M, D = hx.D, D2 = 2 * D, MD = M * D;
    const int ord = hx.ord;
    T *xn = (T *)gcu_alloc(ord, (size_t)MD * sizeof(T));
    T *ub = (T *)gcu_alloc(ord, (size_t)MD * sizeof(T));
    T *sf1 = (T *)gcu_alloc(ord, (size_t)(M * D2) * sizeof(T));
    int rc = -1;
    pass_args<T> c;
    if (!xn || !ub || !sf1) {
        *oom = 1;
        goto out;
    }
    /* 1-4: xn = rms(x) g1; a = sigmoid(xn @ wa[:D] + wa[D]) */
    c = P<T>(), c.x = t[X_], c.gain = t[G1], c.o = xn;
    hx.pass(HX_XN, c);
    if (hx.gemm(0, 0, M, D, D, xn, D, t[WA], D, 0, t[A_], D)) goto out;
    c = P<T>(), c.bias = t[WA] + D * D, c.o = t[A_];
    hx.pass(HX_GATE, c);
    /* 5-6: h = scan(a, xn @ wb) */
    if (hx.gemm(0, 0, M, D, D, xn, D, t[WB], D, 0, ub, D)) goto out;
    gcu_scan_fwd(ord, hx.dtype, t[A_], ub, t[H_], hx.B, hx.Tn, D);
    /* 7-9: s2 = silu(h g2); out1 = x + s2 @ wo; xn2 = rms(out1) g3 */
    c = P<T>(), c.x = t[H_], c.gain = t[G2], c.o = t[S2];
    hx.pass(HX_S2, c);
    if (hx.gemm(0, 0, M, D, D, t[S2], D, t[WO], D, 0, t[OUT1], D)) goto out;
    c = P<T>(), c.x = t[X_], c.h = t[OUT1], c.gain = t[G3], c.o = t[XN2];
    hx.pass(HX_RES_NORM, c);
    /* 10-11: f2 = silu(xn2 @ wf1) @ wf2; y = out1 + f2 g4 */
    if (hx.gemm(0, 0, M, D2, D, t[XN2], D, t[WF1], D2, 0, t[F1], D2)) goto out;
    c = P<T>(), c.x = t[F1], c.o = sf1;
    hx.pass(HX_SILU2, c);
    if (hx.gemm(0, 0, M, D, D2, sf1, D2, t[WF2], D, 0, t[F2], D)) goto out;
    c = P<T>(), c.x = t[F2], c.h = t[OUT1], c.gain = t[G4], c.o = y;
    hx.pass(HX_OUT, c);
    rc = 0;
out:
    gcu_free(ord, xn);
    gcu_free(ord, ub);
    gcu_free(ord, sf1);
    return rc;
}

template <class T>
static int helix_bwd_t(helix<T> &hx, T *const *t, const T *gy, T *const *g, int *oom) {
    const int64_t M = hx.M, D = hx.D, D2 = 2 * D, MD = M * D;
    const int ord = hx.ord;
    enum { NT = 7 };
    const int64_t sizes[NT] = {MD, M * D2, M * D2, MD, MD, MD, MD};
    T *tmp[NT] = {};
    int rc = -1;
    for (int i = 0; i < NT; i++)
        if (!(tmp[i] = (T *)gcu_alloc(ord, (size_t)sizes[i] * sizeof(T)))) {
            *oom = 1;
            for (int j = 0; j < i; j++) gcu_free(ord, tmp[j]);
            return -1;
        }
    T *dm = tmp[0], *sf1 = tmp[1], *dpre = tmp[2], *dxn2 = tmp[3], *dout1 = tmp[4], *gh = tmp[5];
    T *gb = tmp[6];
    T *rn = sf1, *xn = dpre, *gua = dxn2, *xn2 = dm, *dxn1 = gh; /* reused once free */
    pass_args<T> c;
    /* FFN: gg4; dm = gy g4; gwf2 = silu(f1)^T dm; d_pre = (dm @ wf2^T) silu'(f1) */
    if (g[G4]) hx.colsum(gy, t[F2], g[G4], D);
    c = P<T>(), c.x = gy, c.gain = t[G4], c.o = dm;
    hx.pass(HX_DM, c);
    c = P<T>(), c.x = t[F1], c.o = sf1;
    hx.pass(HX_SILU2, c);
    if (g[WF2] && hx.gemm(1, 0, D2, D, M, sf1, D2, dm, D, 0, g[WF2], D)) goto out;
    if (hx.gemm(0, 1, M, D2, D, dm, D, t[WF2], D, 0, dpre, D2)) goto out;
    c = P<T>(), c.x = t[F1], c.o = dpre;
    hx.pass(HX_DPRE, c);
    /* xn2 = rms(out1) g3 recomputed (rn = rms(out1) when gg3 is needed) */
    c = P<T>(), c.x = t[OUT1], c.gain = t[G3], c.o = xn2, c.rn = g[G3] ? rn : NULL;
    hx.pass(HX_XN, c);
    if (g[WF1] && hx.gemm(1, 0, D, D2, M, xn2, D, dpre, D2, 0, g[WF1], D2)) goto out;
    if (hx.gemm(0, 1, M, D, D2, dpre, D2, t[WF1], D2, 0, dxn2, D)) goto out;
    /* second norm: gg3; dout1 = rms_bwd(out1, dxn2 g3) + gy */
    if (g[G3]) hx.colsum(dxn2, rn, g[G3], D);
    c = P<T>(), c.x = t[OUT1], c.g = dxn2, c.gain = t[G3], c.add = gy, c.o = dout1;
    hx.pass(HX_RMS_BWD, c);
    /* scan output: gwo = s2^T dout1 (s2 recomputed into dm); ghg; gg2; dh */
    if (g[WO]) {
        c = P<T>(), c.x = t[H_], c.gain = t[G2], c.o = dm;
        hx.pass(HX_S2, c);
        if (hx.gemm(1, 0, D, D, M, dm, D, dout1, D, 0, g[WO], D)) goto out;
    }
    if (hx.gemm(0, 1, M, D, D, dout1, D, t[WO], D, 0, gh, D)) goto out;
    c = P<T>(), c.x = t[H_], c.gain = t[G2], c.o = gh;
    hx.pass(HX_GHG, c);
    if (g[G2]) hx.colsum(gh, t[H_], g[G2], D);
    c = P<T>(), c.gain = t[G2], c.o = gh;
    hx.pass(HX_DH, c);
    /* the scan: (ga, gb); gua = ga a (1 - a) */
    gcu_scan_bwd(ord, hx.dtype, t[A_], t[H_], gh, gua, gb, hx.B, hx.Tn, D);
    c = P<T>(), c.x = t[A_], c.o = gua;
    hx.pass(HX_GUA, c);
    /* xn = rms(x) g1 recomputed (rn = rms(x)); gwa = [xn, 1]^T gua; gwb */
    c = P<T>(), c.x = t[X_], c.gain = t[G1], c.o = xn, c.rn = rn;
    hx.pass(HX_XN, c);
    if (g[WA]) {
        if (hx.gemm(1, 0, D, D, M, xn, D, gua, D, 0, g[WA], D)) goto out;
        hx.colsum(gua, NULL, g[WA] + D * D, D); /* the bias row */
    }
    if (g[WB] && hx.gemm(1, 0, D, D, M, xn, D, gb, D, 0, g[WB], D)) goto out;
    /* dxn1 = gua @ wa[:D]^T + gb @ wb^T (into gh); gg1; dx */
    if (hx.gemm(0, 1, M, D, D, gua, D, t[WA], D, 0, dxn1, D)) goto out;
    if (hx.gemm(0, 1, M, D, D, gb, D, t[WB], D, 1, dxn1, D)) goto out;
    if (g[G1]) hx.colsum(dxn1, rn, g[G1], D);
    if (g[X_]) {
        c = P<T>(), c.x = t[X_], c.g = dxn1, c.gain = t[G1], c.add = dout1, c.o = g[X_];
        hx.pass(HX_RMS_BWD, c);
    }
    rc = 0;
out:
    for (int i = 0; i < NT; i++) gcu_free(ord, tmp[i]);
    return rc;
}

template <class T>
static helix<T> helix_of(int ord, int dtype, cudaStream_t s, int64_t B, int64_t Tn, int64_t D,
                         double eps) {
    helix<T> h;
    h.ord = ord, h.dtype = dtype, h.s = s, h.B = B, h.Tn = Tn, h.D = D, h.M = B * Tn, h.eps = eps;
    return h;
}

extern "C" int gcu_helix_fwd(int ord, int dtype, void *const *t, void *y, int64_t B, int64_t Tn,
                             int64_t D, double eps, int *oom) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return -1;
    if (dtype == GAD_F32) {
        helix<float> h = helix_of<float>(ord, dtype, s, B, Tn, D, eps);
        return helix_fwd_t<float>(h, (float *const *)t, (float *)y, oom);
    }
    helix<double> h = helix_of<double>(ord, dtype, s, B, Tn, D, eps);
    return helix_fwd_t<double>(h, (double *const *)t, (double *)y, oom);
}

extern "C" int gcu_helix_bwd(int ord, int dtype, void *const *t, const void *gy, void *const *grads,
                             int64_t B, int64_t Tn, int64_t D, double eps, int *oom) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return -1;
    if (dtype == GAD_F32) {
        helix<float> h = helix_of<float>(ord, dtype, s, B, Tn, D, eps);
        return helix_bwd_t<float>(h, (float *const *)t, (const float *)gy, (float *const *)grads, oom);
    }
    helix<double> h = helix_of<double>(ord, dtype, s, B, Tn, D, eps);
    return helix_bwd_t<double>(h, (double *const *)t, (const double *)gy, (double *const *)grads,
                               oom);
}
