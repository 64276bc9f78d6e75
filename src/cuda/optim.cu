/* optim.cu: the optimizers' updates, src/cpu/optim.h's formulas in the
 * same order with every operation rounded: CMakeLists.txt compiles this
 * file with --fmad=false (no a * b + c contracted into one FMA), and
 * CUDA's division and square root are IEEE-rounded by default
 * (-prec-div, -prec-sqrt), so the results are the CPU's bits. */
#include "cuda/cuda_int.cuh"

#include "gad.h"

/* The multi-tensor update: up to MT items per launch, passed by value in
 * the kernel's parameters (under 4 KiB); blockIdx.y is the item, and each
 * row of blocks walks its item's elements. p and old may be one array:
 * each element is read before the same thread writes it. */
#define MT 16

template <class T>
struct mt_item {
    T *p;
    const T *old;
    T *s1, *s2;
    const T *g;
    int64_t n;
    T c[9]; /* gcu_optim_item's, rounded to T */
    int first, nesterov;
};

template <class T>
struct mt_batch {
    mt_item<T> it[MT];
};

template <class T>
__global__ void k_adamw_mt(mt_batch<T> b) {
    const mt_item<T> &a = b.it[blockIdx.y];
    const T b1 = a.c[0], omb1 = a.c[1], b2 = a.c[2], omb2 = a.c[3], bc1 = a.c[4], bc2 = a.c[5];
    const T lr = a.c[6], eps = a.c[7], decay = a.c[8];
    T *m = a.s1, *v = a.s2;
    GCU_FOR(i, a.n) {
        T gi = a.g[i];
        T mi = b1 * m[i] + omb1 * gi;
        T vi = b2 * v[i] + omb2 * (gi * gi);
        m[i] = mi;
        v[i] = vi;
        T mh = mi / bc1, vh = vi / bc2;
        a.p[i] = a.old[i] * decay - lr * (mh / (sqrt(vh) + eps));
    }
}

template <class T>
__global__ void k_sgd_mt(mt_batch<T> b) {
    const mt_item<T> &a = b.it[blockIdx.y];
    const T lr = a.c[0], wd = a.c[1], mu = a.c[2];
    T *buf = a.s1;
    GCU_FOR(i, a.n) {
        T oi = a.old[i];
        if (!buf) {
            a.p[i] = wd != 0 ? oi - lr * (a.g[i] + wd * oi) : oi - lr * a.g[i];
            continue;
        }
        T gi = wd != 0 ? a.g[i] + wd * oi : a.g[i];
        T bi = a.first ? gi : mu * buf[i] + gi;
        buf[i] = bi;
        T d = a.nesterov ? gi + mu * bi : bi;
        a.p[i] = oi - lr * d;
    }
}

template <class T>
static void mt_launch(cudaStream_t s, const gcu_optim_item *items, int n, int adamw) {
    mt_batch<T> b = {};
    int64_t most = 0;
    for (int k = 0; k < n; k++) {
        const gcu_optim_item *x = &items[k];
        mt_item<T> &y = b.it[k];
        y.p = (T *)x->p;
        y.old = (const T *)x->old;
        y.s1 = (T *)x->s1;
        y.s2 = (T *)x->s2;
        y.g = (const T *)x->g;
        y.n = x->n;
        for (int j = 0; j < 9; j++) y.c[j] = (T)x->c[j];
        y.first = x->first;
        y.nesterov = x->nesterov;
        if (x->n > most) most = x->n;
    }
    dim3 grid(gcu_blocks(most), (unsigned)n);
    if (adamw) k_adamw_mt<T><<<grid, GCU_THREADS, 0, s>>>(b);
    else k_sgd_mt<T><<<grid, GCU_THREADS, 0, s>>>(b);
}

extern "C" void gcu_optim_update(int ord, const gcu_optim_item *items, int n, int adamw) {
    cudaStream_t s = gcu_stream(ord);
    if (!s) return;
    for (int k = 0; k < n;) { /* runs of one dtype, MT at a time */
        int e = k + 1;
        while (e < n && e - k < MT && items[e].dtype == items[k].dtype) e++;
        if (items[k].dtype == GAD_F32) mt_launch<float>(s, items + k, e - k, adamw);
        else mt_launch<double>(s, items + k, e - k, adamw);
        k = e;
    }
    GCU_LAUNCHED(ord, adamw ? "adamw_step" : "sgd_step");
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
