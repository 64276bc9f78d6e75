/* cuda_int.cuh: what the .cu files of the CUDA back end share: the
 * thread's stream and cuBLAS handle per device, the pending fault, launch
 * geometry and the device-side helpers. C++ (nvcc) only. */
#ifndef GAD_CUDA_INT_CUH
#define GAD_CUDA_INT_CUH

#include "cuda/cuda_abi.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#define GCU_MAXDEV 16

/* The cuBLAS functions gad calls, opened at run time (runtime.cu). */
struct gcu_cublas_fns {
    decltype(&::cublasCreate_v2) cublasCreate_v2;
    decltype(&::cublasDestroy_v2) cublasDestroy_v2;
    decltype(&::cublasSetStream_v2) cublasSetStream_v2;
    decltype(&::cublasSetMathMode) cublasSetMathMode;
    decltype(&::cublasGetStatusString) cublasGetStatusString;
    decltype(&::cublasSgemm_v2_64) cublasSgemm_v2_64;
    decltype(&::cublasDgemm_v2_64) cublasDgemm_v2_64;
    decltype(&::cublasSgemmStridedBatched_64) cublasSgemmStridedBatched_64;
    decltype(&::cublasDgemmStridedBatched_64) cublasDgemmStridedBatched_64;
};
extern gcu_cublas_fns gcu_cb;
/* Load cuBLAS (once); whether every function was found. */
bool gcu_cublas_open(void);

/* The calling thread's stream for device ord, made current first; NULL
 * (fault pending) when the device cannot be used. */
cudaStream_t gcu_stream(int ord);
/* The thread's cuBLAS handle for device ord, bound to its stream, with the
 * math mode of the TF32 setting. NULL (fault pending) on failure. */
cublasHandle_t gcu_blas(int ord);

/* Record e (when not cudaSuccess) as the pending fault of device ord,
 * naming what failed; returns whether e was a failure. The first fault
 * is kept until taken. */
bool gcu_check(int ord, cudaError_t e, const char *what);
bool gcu_check_blas(int ord, cublasStatus_t s, const char *what);
/* After a launch: its configuration error, if any, becomes the fault. */
#define GCU_LAUNCHED(ord, what) gcu_check((ord), cudaGetLastError(), (what))

/* Scratch on the thread's stream (freed after the work queued so far);
 * NULL (fault pending) when out of memory. */
void *gcu_scratch(int ord, size_t n);

/* The deferred index checks (runtime.cu's header). The state of the
 * thread's checks on a device, in its memory: key, the smallest bad
 * position the check in flight found (an integer atomicMin; ~0 none);
 * open, nonzero until a check has noted an error in the record. Both are
 * all ones after a reset. */
struct gcu_chk {
    unsigned long long key, open;
};
/* The thread's check state and record (device pointers) for device ord,
 * made on first use; false (fault pending) when they cannot be had. */
bool gcu_checks(int ord, gcu_chk **chk, gcu_index_fault **rec);

/* An op's name as a kernel argument (by value: the record gets a copy). */
struct gcu_opname {
    char s[32];
};
static inline gcu_opname gcu_opname_of(const char *op) {
    gcu_opname n;
    snprintf(n.s, sizeof n.s, "%s", op ? op : "?");
    return n;
}

/* In one thread: the first bad index since the last wait, noted in the
 * record for the host (the fields, then set, after a fence that makes
 * them visible first); later ones are not (c->open is 0 until the host
 * resets it). target as gad_late_index's. */
__device__ __forceinline__ void gcu_note(gcu_chk *c, gcu_index_fault *r, int target, int64_t pos,
                                         int64_t value, int64_t lo, int64_t hi,
                                         const gcu_opname &op) {
    if (!c->open) return;
    r->pos = pos;
    r->value = value;
    r->lo = lo;
    r->hi = hi;
    r->target = target;
    for (int i = 0; i < (int)sizeof r->op; i++) r->op[i] = op.s[i];
    __threadfence_system();
    r->set = 1;
    c->open = 0;
}

/* Threads per block, and a grid for n items, capped (the kernels loop). */
#define GCU_THREADS 256
static inline unsigned gcu_blocks(int64_t n) {
    int64_t b = (n + GCU_THREADS - 1) / GCU_THREADS;
    if (b < 1) b = 1;
    if (b > 65536) b = 65536;
    return (unsigned)b;
}

/* The grid-stride loop over [0, n). */
#define GCU_FOR(i, n)                                                          \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);  \
         i += (int64_t)blockDim.x * gridDim.x)

/* Offsets of position i of a walk for its operands. */
__device__ __forceinline__ void gcu_offsets(const gcu_iter &it, int64_t i, int nops,
                                            int64_t *off) {
    off[0] = 0;
    off[1] = 0;
    for (int d = it.nd - 1; d >= 0; d--) {
        int64_t s = it.shape[d], q = i / s, r = i - q * s;
        off[0] += r * it.st[0][d];
        if (nops > 1) off[1] += r * it.st[1][d];
        i = q;
    }
}

/* A fixed-order reduction of one double per thread over a block of
 * GCU_THREADS threads (a tree in shared memory: the same order every
 * run). The result is valid in every thread. */
__device__ __forceinline__ double gcu_block_sum(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = GCU_THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

/* The same tree for the largest value (a NaN in a later slot is not taken:
 * the comparison is false). The result is valid in every thread. */
__device__ __forceinline__ double gcu_block_max(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = GCU_THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w && sh[threadIdx.x + w] > sh[threadIdx.x])
            sh[threadIdx.x] = sh[threadIdx.x + w];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

#endif
