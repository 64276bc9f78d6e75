/* rows.cuh: the row passes that the RMS norm (rms_norm.cu) and the HELIX
 * block (helix.cu) share: a block per row, every sum by a fixed tree, and
 * the column sums of the block's gains. Templates only: each .cu file that
 * includes it instantiates what it uses. */
#ifndef GAD_CUDA_ROWS_CUH
#define GAD_CUDA_ROWS_CUH

#include "cuda/cuda_int.cuh"

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

#endif
