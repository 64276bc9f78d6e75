/* optim.cu: the optimizers' updates, src/cpu/optim.h's formulas in the
 * same order with every operation rounded: CMakeLists.txt compiles this
 * file with --fmad=false (no a * b + c contracted into one FMA), and
 * CUDA's division and square root are IEEE-rounded by default
 * (-prec-div, -prec-sqrt), so the results are the CPU's bits. */
#include "cuda/cuda_int.cuh"

#include "gad.h"

template <class T>
__global__ void k_adamw(T *p, T *m, T *v, const T *g, int64_t n, T b1, T omb1, T b2, T omb2,
                        T bc1, T bc2, T lr, T eps, T decay) {
    GCU_FOR(i, n) {
        T gi = g[i];
        T mi = b1 * m[i] + omb1 * gi;
        T vi = b2 * v[i] + omb2 * (gi * gi);
        m[i] = mi;
        v[i] = vi;
        T mh = mi / bc1, vh = vi / bc2;
        p[i] = p[i] * decay - lr * (mh / (sqrt(vh) + eps));
    }
}

extern "C" void gcu_adamw(int ord, int dtype, void *p, void *m, void *v, const void *g, int64_t n,
                          const double *c) {
    if (n <= 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    unsigned gr = gcu_blocks(n);
    if (dtype == GAD_F32)
        k_adamw<float><<<gr, GCU_THREADS, 0, s>>>(
            (float *)p, (float *)m, (float *)v, (const float *)g, n, (float)c[0], (float)c[1],
            (float)c[2], (float)c[3], (float)c[4], (float)c[5], (float)c[6], (float)c[7],
            (float)c[8]);
    else
        k_adamw<double><<<gr, GCU_THREADS, 0, s>>>((double *)p, (double *)m, (double *)v,
                                                   (const double *)g, n, c[0], c[1], c[2], c[3],
                                                   c[4], c[5], c[6], c[7], c[8]);
    GCU_LAUNCHED(ord, "adamw_step");
}

template <class T>
__global__ void k_sgd(T *p, const T *g, int64_t n, T lr, T wd) {
    GCU_FOR(i, n) p[i] = wd != 0 ? p[i] - lr * (g[i] + wd * p[i]) : p[i] - lr * g[i];
}

template <class T>
__global__ void k_sgd_mom(T *p, T *b, const T *g, int64_t n, T lr, T wd, T mu, int first,
                          int nesterov) {
    GCU_FOR(i, n) {
        T gi = wd != 0 ? g[i] + wd * p[i] : g[i];
        T bi = first ? gi : mu * b[i] + gi;
        b[i] = bi;
        T d = nesterov ? gi + mu * bi : bi;
        p[i] = p[i] - lr * d;
    }
}

extern "C" void gcu_sgd(int ord, int dtype, void *p, void *b, const void *g, int64_t n, double lr,
                        double wd, double mu, int first, int nesterov) {
    if (n <= 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    unsigned gr = gcu_blocks(n);
    if (dtype == GAD_F32) {
        if (b)
            k_sgd_mom<float><<<gr, GCU_THREADS, 0, s>>>((float *)p, (float *)b, (const float *)g, n,
                                                        (float)lr, (float)wd, (float)mu, first,
                                                        nesterov);
        else
            k_sgd<float><<<gr, GCU_THREADS, 0, s>>>((float *)p, (const float *)g, n, (float)lr,
                                                    (float)wd);
    } else {
        if (b)
            k_sgd_mom<double><<<gr, GCU_THREADS, 0, s>>>((double *)p, (double *)b,
                                                         (const double *)g, n, lr, wd, mu, first,
                                                         nesterov);
        else
            k_sgd<double><<<gr, GCU_THREADS, 0, s>>>((double *)p, (const double *)g, n, lr, wd);
    }
    GCU_LAUNCHED(ord, "sgd_step");
}

/* optim.h's sum of squares: blocks of 4096 elements (GAD_OPTIM_SUMSQ_BLK),
 * each in four lanes (i mod 4) combined as (s0 + s1) + (s2 + s3): one
 * thread per block; then the block sums added in order by one thread. */
#define SUMSQ_BLK 4096

template <class T>
__global__ void k_sumsq_blocks(const T *g, int64_t n, int64_t nb, double *part) {
    GCU_FOR(b, nb) {
        int64_t lo = b * SUMSQ_BLK, hi = lo + SUMSQ_BLK < n ? lo + SUMSQ_BLK : n;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t i = lo;
        for (; i + 4 <= hi; i += 4) {
            double a0 = g[i], a1 = g[i + 1], a2 = g[i + 2], a3 = g[i + 3];
            s0 += a0 * a0;
            s1 += a1 * a1;
            s2 += a2 * a2;
            s3 += a3 * a3;
        }
        for (; i < hi; i++) s0 += (double)g[i] * (double)g[i];
        part[b] = (s0 + s1) + (s2 + s3);
    }
}

__global__ void k_sumsq_total(const double *part, int64_t nb, double *out) {
    double t = 0;
    for (int64_t b = 0; b < nb; b++) t += part[b];
    *out = t;
}

extern "C" double gcu_sumsq(int ord, int dtype, const void *g, int64_t n) {
    if (n <= 0) return 0;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return NAN;
    int64_t nb = (n + SUMSQ_BLK - 1) / SUMSQ_BLK;
    double *part = (double *)gcu_scratch(ord, (size_t)(nb + 1) * sizeof(double));
    if (!part) return NAN;
    if (dtype == GAD_F32)
        k_sumsq_blocks<float><<<gcu_blocks(nb), GCU_THREADS, 0, s>>>((const float *)g, n, nb, part);
    else
        k_sumsq_blocks<double><<<gcu_blocks(nb), GCU_THREADS, 0, s>>>((const double *)g, n, nb, part);
    GCU_LAUNCHED(ord, "sumsq");
    k_sumsq_total<<<1, 1, 0, s>>>(part, nb, part + nb);
    GCU_LAUNCHED(ord, "sumsq");
    double total = NAN;
    int rc = gcu_to_host(ord, &total, part + nb, sizeof total);
    gcu_free(ord, part);
    return rc ? NAN : total;
}

template <class T>
__global__ void k_scale(T *x, int64_t n, T c) {
    GCU_FOR(i, n) x[i] = x[i] * c;
}

extern "C" void gcu_scale(int ord, int dtype, void *x, int64_t n, double c) {
    if (n <= 0) return;
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    if (dtype == GAD_F32) k_scale<float><<<gcu_blocks(n), GCU_THREADS, 0, s>>>((float *)x, n, (float)c);
    else k_scale<double><<<gcu_blocks(n), GCU_THREADS, 0, s>>>((double *)x, n, c);
    GCU_LAUNCHED(ord, "scale");
}
