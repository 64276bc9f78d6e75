/* reduce.cu: sum (and mean) over any set of axes, amax, argmax, amax's
 * mask and softmax along an axis. Deterministic: every sum is taken in an
 * order fixed by the shapes and the launch geometry (which depends on the
 * shapes only), with no floating-point atomics, so two runs give the same
 * bits. f32 accumulates in double, as the CPU does (src/cpu/reduce.c). */
#include "cuda/cuda_int.cuh"

#include "gad.h"

/* Offset of reduced position r (row-major over the reduced axes). */
__device__ __forceinline__ int64_t roff(const gcu_rspace &s, int64_t r) {
    int64_t o = 0;
    for (int d = s.nr - 1; d >= 0; d--) {
        int64_t q = r / s.rsize[d];
        o += (r - q * s.rsize[d]) * s.rstride[d];
        r = q;
    }
    return o;
}

__device__ __forceinline__ int64_t koff(const gcu_rspace &s, int64_t k) {
    int64_t o = 0;
    for (int d = s.nk - 1; d >= 0; d--) {
        int64_t q = k / s.ksize[d];
        o += (k - q * s.ksize[d]) * s.kstride[d];
        k = q;
    }
    return o;
}

/* One thread per output, the reduced positions in row-major order: for
 * many outputs whose innermost axis is kept (neighbouring threads read
 * neighbouring elements). */
template <class T>
__global__ void k_sum_thread(gcu_rspace s, const T *x, T *y, double scale) {
    GCU_FOR(k, s.ktotal) {
        const T *b = x + koff(s, k);
        double acc = 0;
        for (int64_t r = 0; r < s.rtotal; r++) acc += (double)b[roff(s, r)];
        y[k] = (T)(acc * scale);
    }
}

/* Block (k, c) sums chunk c of output k's reduced positions: each thread a
 * strided share in order, then a fixed tree (gcu_block_sum). */
template <class T>
__global__ void k_sum_chunks(gcu_rspace s, const T *x, double *part, int64_t chunk,
                             int64_t nchunks) {
    __shared__ double sh[GCU_THREADS];
    int64_t k = blockIdx.y, c = blockIdx.x;
    const T *b = x + koff(s, k);
    int64_t lo = c * chunk, hi = lo + chunk < s.rtotal ? lo + chunk : s.rtotal;
    double acc = 0;
    for (int64_t r = lo + threadIdx.x; r < hi; r += GCU_THREADS) acc += (double)b[roff(s, r)];
    acc = gcu_block_sum(acc, sh);
    if (threadIdx.x == 0) part[k * nchunks + c] = acc;
}

/* The innermost axis kept: a block takes 32 neighbouring outputs (tx) and
 * chunk blockIdx.y of their reduced positions, 8 lanes (ty) of rows each;
 * the 32 threads of a row read neighbouring elements. The 8 lanes are added
 * by a fixed tree, the chunks by k_sum_finish. */
template <class T>
__global__ void k_sum_cols(gcu_rspace s, const T *x, double *part, int64_t chunk,
                           int64_t nchunks) {
    __shared__ double sh[8][33];
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    int64_t k = (int64_t)blockIdx.x * 32 + tx, c = blockIdx.y;
    int64_t lo = c * chunk, hi = lo + chunk < s.rtotal ? lo + chunk : s.rtotal;
    double acc = 0;
    if (k < s.ktotal) {
        const T *b = x + koff(s, k);
        for (int64_t r = lo + ty; r < hi; r += 8) acc += (double)b[roff(s, r)];
    }
    sh[ty][tx] = acc;
    __syncthreads();
    for (int w = 4; w > 0; w /= 2) {
        if (ty < w) sh[ty][tx] += sh[ty + w][tx];
        __syncthreads();
    }
    if (ty == 0 && k < s.ktotal) part[k * nchunks + c] = sh[0][tx];
}

/* The chunks of each output added in order. */
template <class T>
__global__ void k_sum_finish(const double *part, int64_t nchunks, int64_t nout, T *y,
                             double scale) {
    GCU_FOR(k, nout) {
        double acc = 0;
        for (int64_t c = 0; c < nchunks; c++) acc += part[k * nchunks + c];
        y[k] = (T)(acc * scale);
    }
}

template <class T>
static void sum_t(int ord, cudaStream_t st, const gcu_rspace *s, const T *x, T *y, double scale) {
    /* many outputs, or short reductions: a thread each */
    bool inner_kept = s->nk > 0 && s->kstride[s->nk - 1] == 1;
    if (s->rtotal <= 64 || (s->ktotal >= 262144 && inner_kept)) {
        k_sum_thread<T><<<gcu_blocks(s->ktotal), GCU_THREADS, 0, st>>>(*s, x, y, scale);
        GCU_LAUNCHED(ord, "sum");
        return;
    }
    /* chunks of at least 16 elements per thread; at most 1024 per output */
    int64_t chunk = (int64_t)GCU_THREADS * 16, nchunks = (s->rtotal + chunk - 1) / chunk;
    if (nchunks > 1024) {
        nchunks = 1024;
        chunk = (s->rtotal + nchunks - 1) / nchunks;
        nchunks = (s->rtotal + chunk - 1) / chunk;
    }
    if (inner_kept) {
        /* 32 outputs a block, chunks of 1024 reduced positions (128 a lane),
         * at most 2^24 partial sums in all */
        int64_t ch = 1024, nch = (s->rtotal + ch - 1) / ch, most = ((int64_t)1 << 24) / s->ktotal;
        if (most < 1) most = 1;
        if (most > 65535) most = 65535;
        if (nch > most) {
            nch = most;
            ch = (s->rtotal + nch - 1) / nch;
            nch = (s->rtotal + ch - 1) / ch;
        }
        int64_t tiles = (s->ktotal + 31) / 32;
        double *part = (double *)gcu_scratch(ord, (size_t)(nch * s->ktotal) * sizeof(double));
        if (!part) return;
        dim3 grid((unsigned)tiles, (unsigned)nch);
        k_sum_cols<T><<<grid, GCU_THREADS, 0, st>>>(*s, x, part, ch, nch);
        GCU_LAUNCHED(ord, "sum");
        k_sum_finish<T><<<gcu_blocks(s->ktotal), GCU_THREADS, 0, st>>>(part, nch, s->ktotal, y,
                                                                      scale);
        GCU_LAUNCHED(ord, "sum");
        gcu_free(ord, part);
        return;
    }
    if (s->ktotal > 65535) { /* grid.y's limit: one thread per output */
        k_sum_thread<T><<<gcu_blocks(s->ktotal), GCU_THREADS, 0, st>>>(*s, x, y, scale);
        GCU_LAUNCHED(ord, "sum");
        return;
    }
    double *part = (double *)gcu_scratch(ord, (size_t)(nchunks * s->ktotal) * sizeof(double));
    if (!part) return;
    dim3 grid((unsigned)nchunks, (unsigned)s->ktotal);
    k_sum_chunks<T><<<grid, GCU_THREADS, 0, st>>>(*s, x, part, chunk, nchunks);
    GCU_LAUNCHED(ord, "sum");
    k_sum_finish<T><<<gcu_blocks(s->ktotal), GCU_THREADS, 0, st>>>(part, nchunks, s->ktotal, y, scale);
    GCU_LAUNCHED(ord, "sum");
    gcu_free(ord, part);
}

extern "C" void gcu_sum(int ord, int dtype, const gcu_rspace *s, const void *x, void *y,
                        double scale) {
    if (s->ktotal == 0) return;
    cudaStream_t st = gcu_stream(ord);
    if (!st) return;
    if (dtype == GAD_F32) sum_t<float>(ord, st, s, (const float *)x, (float *)y, scale);
    else sum_t<double>(ord, st, s, (const double *)x, (double *)y, scale);
}

/* ------------------------------------------------ along one axis */

/* One thread per slice (o, j) of [outer, n, inner]: the slice's elements
 * n apart by inner, read in order (the CPU's order: the same answers). */
template <class T>
__global__ void k_axis(int op, const T *x, void *yv, int64_t outer, int64_t n, int64_t inner) {
    GCU_FOR(p, outer * inner) {
        int64_t o = p / inner, j = p - o * inner;
        const T *s = x + o * n * inner + j;
        if (op == 0) { /* amax: NaN skipped, all-NaN gives -inf */
            T m = -INFINITY;
            for (int64_t i = 0; i < n; i++)
                if (s[i * inner] > m) m = s[i * inner];
            ((T *)yv)[p] = m;
        } else if (op == 1) { /* argmax: the first maximum, NaN never wins */
            T m = 0;
            int64_t best = -1;
            for (int64_t i = 0; i < n; i++) {
                T v = s[i * inner];
                if (v != v) continue;
                if (best < 0 || v > m) {
                    m = v;
                    best = i;
                }
            }
            ((int64_t *)yv)[p] = best < 0 ? 0 : best;
        } else if (op == 2) { /* 1 at the first maximum (NaN never is one) */
            T m = -INFINITY;
            int64_t best = -1;
            for (int64_t i = 0; i < n; i++) {
                T v = s[i * inner];
                if (v > m || (best < 0 && v == m)) {
                    m = v;
                    best = i;
                }
            }
            T *y = (T *)yv + o * n * inner + j;
            for (int64_t i = 0; i < n; i++) y[i * inner] = i == best ? (T)1 : (T)0;
        } else { /* softmax (3), log_softmax (4), the max subtracted */
            T *y = (T *)yv + o * n * inner + j;
            T m = -INFINITY;
            for (int64_t i = 0; i < n; i++)
                if (s[i * inner] > m) m = s[i * inner];
            if (m == -INFINITY) m = 0;
            double sum = 0;
            if (op == 4) {
                for (int64_t i = 0; i < n; i++) sum += (double)exp(s[i * inner] - m);
                T ls = (T)log(sum);
                for (int64_t i = 0; i < n; i++) y[i * inner] = s[i * inner] - m - ls;
            } else {
                for (int64_t i = 0; i < n; i++) {
                    T e = exp(s[i * inner] - m);
                    y[i * inner] = e;
                    sum += (double)e;
                }
                T inv = (T)(1.0 / sum);
                for (int64_t i = 0; i < n; i++) y[i * inner] *= inv;
            }
        }
    }
}

/* Softmax rows (inner == 1) of many elements: a block per row, the max and
 * the sum by fixed trees. */
template <class T>
__global__ void k_softmax_rows(int log_, const T *x, T *y, int64_t rows, int64_t n) {
    __shared__ double sh[GCU_THREADS];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *s = x + r * n;
        T *o = y + r * n;
        T m = -INFINITY;
        for (int64_t i = threadIdx.x; i < n; i += GCU_THREADS)
            if (s[i] > m) m = s[i];
        m = (T)gcu_block_max((double)m, sh);
        if (m == -INFINITY) m = 0;
        double acc = 0;
        for (int64_t i = threadIdx.x; i < n; i += GCU_THREADS) acc += (double)exp(s[i] - m);
        double sum = gcu_block_sum(acc, sh);
        if (log_) {
            T ls = (T)log(sum);
            for (int64_t i = threadIdx.x; i < n; i += GCU_THREADS) o[i] = s[i] - m - ls;
        } else {
            T inv = (T)(1.0 / sum);
            for (int64_t i = threadIdx.x; i < n; i += GCU_THREADS) o[i] = (T)exp(s[i] - m) * inv;
        }
    }
}

/* amax (0), argmax (1) and amax's mask (2) of long rows (inner == 1): a
 * block per row. Each thread keeps the first maximum of its elements (i =
 * t, t + 256, ...; NaN skipped), and a fixed tree keeps the larger value,
 * or at a tie the smaller position: the row's first maximum, as the
 * CPU's walk finds it. */
template <class T>
__global__ void k_max_rows(int op, const T *x, void *yv, int64_t rows, int64_t n) {
    __shared__ T shv[GCU_THREADS];
    __shared__ int64_t shi[GCU_THREADS];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *s = x + r * n;
        T m = -INFINITY;
        int64_t best = -1;
        for (int64_t i = threadIdx.x; i < n; i += GCU_THREADS) {
            T v = s[i];
            if (v != v) continue;
            if (best < 0 || v > m) {
                m = v;
                best = i;
            }
        }
        shv[threadIdx.x] = m;
        shi[threadIdx.x] = best;
        __syncthreads();
        for (int w = GCU_THREADS / 2; w > 0; w /= 2) {
            int t = threadIdx.x;
            if (t < w) {
                T v = shv[t + w];
                int64_t b = shi[t + w];
                if (b >= 0 && (shi[t] < 0 || v > shv[t] || (v == shv[t] && b < shi[t]))) {
                    shv[t] = v;
                    shi[t] = b;
                }
            }
            __syncthreads();
        }
        m = shv[0];
        best = shi[0];
        __syncthreads();
        if (op == 0) {
            if (threadIdx.x == 0) ((T *)yv)[r] = best < 0 ? (T)-INFINITY : m;
        } else if (op == 1) {
            if (threadIdx.x == 0) ((int64_t *)yv)[r] = best < 0 ? 0 : best;
        } else {
            T *y = (T *)yv + r * n;
            for (int64_t i = threadIdx.x; i < n; i += GCU_THREADS) y[i] = i == best ? (T)1 : (T)0;
        }
    }
}

template <class T>
static void axis_t(int ord, cudaStream_t st, int op, const T *x, void *y, int64_t outer,
                   int64_t n, int64_t inner) {
    unsigned g = outer > 65536 ? 65536u : (unsigned)outer;
    if ((op == 3 || op == 4) && inner == 1 && n >= 1024) {
        k_softmax_rows<T><<<g, GCU_THREADS, 0, st>>>(op == 4, x, (T *)y, outer, n);
    } else if (op <= 2 && inner == 1 && n >= 1024) {
        k_max_rows<T><<<g, GCU_THREADS, 0, st>>>(op, x, y, outer, n);
    } else {
        k_axis<T><<<gcu_blocks(outer * inner), GCU_THREADS, 0, st>>>(op, x, y, outer, n, inner);
    }
    GCU_LAUNCHED(ord, op == 3 || op == 4 ? "softmax" : "amax/argmax");
}

extern "C" void gcu_axis(int ord, int op, int dtype, const void *x, void *y, int64_t outer,
                         int64_t n, int64_t inner) {
    if (outer * inner == 0 || n == 0) return;
    cudaStream_t st = gcu_stream(ord);
    if (!st) return;
    if (dtype == GAD_F32) axis_t<float>(ord, st, op, (const float *)x, y, outer, n, inner);
    else axis_t<double>(ord, st, op, (const double *)x, y, outer, n, inner);
}
