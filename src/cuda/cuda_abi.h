/* cuda_abi.h: the C ABI between the CUDA back end's C side (backend.c, C11,
 * which sees gad's tensors) and its .cu files (C++, which see only what is
 * here: device pointers, dtypes, shapes and strides in plain structs). The
 * rest of gad never includes this header; it reaches the back end through
 * its table (src/backend/backend.h) and gad__cuda_init (cuda.h).
 *
 * Conventions of every gcu_ function:
 * - `ord` is the CUDA device ordinal (not gad's device number); the
 *   function makes that device current on the calling thread and queues
 *   its work on the thread's stream for it (one per thread and device).
 * - Pointers are device pointers to element 0 of a view; strides are in
 *   elements; dtypes are gad's (GAD_F32, GAD_F64, GAD_I64, GAD_BOOL).
 * - A void function cannot fail in its caller's eyes: a failed launch or
 *   scratch allocation is recorded as the thread's pending fault for that
 *   device (gcu_fault_take), which the next synchronising call reports.
 * - An int function returns 0, or -1 with the fault pending. */
#ifndef GAD_CUDA_ABI_H
#define GAD_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GCU_MAXR 8 /* GAD_MAX_RANK */
#define GCU_MAXOPS 2

/* A walk over a shape (axes already merged and size-1 axes dropped by the
 * C side's gad__iter_init) with the strides of up to two operands. n is the
 * number of positions (0: nothing to do). */
typedef struct gcu_iter {
    int nd;
    int64_t n;
    int64_t shape[GCU_MAXR];
    int64_t st[GCU_MAXOPS][GCU_MAXR];
} gcu_iter;

/* A view as the kernels of the indexing family see it. */
typedef struct gcu_view {
    void *p;
    int dtype, rank;
    int64_t numel;
    int64_t shape[GCU_MAXR], strides[GCU_MAXR];
} gcu_view;

/* ------------------------------------------------------------ runtime */

/* The number of CUDA devices (found once): 0 when there is no driver or
 * no GPU, and 0 with the reason kept (gcu_discovery_error) when the
 * driver cannot be used: one too old for the runtime gad was built with,
 * or another failure of cudaGetDeviceCount with a driver present. Reads
 * GAD_CUDA_TF32 from the environment once. */
int gcu_device_count(void);
/* Why discovery found no device when that is an error: 1 with the text in
 * msg, or 0 (devices found, or no driver or no GPU). */
int gcu_discovery_error(char *msg, size_t cap);
/* Discovery's decision from what cudaGetDeviceCount returned (err, a
 * cudaError_t, and count) and the versions cudaDriverGetVersion and
 * cudaRuntimeGetVersion gave (1000 major + 10 minor; a driver of 0: none
 * installed): the count, 0 for no driver or no GPU, or -1 with the reason
 * in msg. */
int gcu_discovery_verdict(int err, int count, int driver, int runtime, char *msg, size_t cap);
/* For tests: the next discovery takes these as the three calls' answers
 * instead of asking CUDA (before the first gcu_device_count only). */
void gcu_discovery_fake(int err, int count, int driver, int runtime);
/* Name ("NVIDIA H200"), total and free memory of device ord; 0 or -1. */
int gcu_device_info(int ord, char *name, size_t cap, size_t *total, size_t *free_);
/* Prepare device ord: its memory pool keeps freed memory for reuse (the
 * caching allocator). 0 or -1 (fault pending). */
int gcu_device_setup(int ord);

/* Device memory of at least n bytes from device ord's pool, ordered on the
 * thread's stream; when the pool cannot grow, the thread's stream is
 * waited for (its queued frees), the pool's cache given back and the
 * allocation tried once more; NULL then (no fault recorded: out of memory
 * is the caller's error to report; NULL with a fault pending for another
 * failure, a dead device among them). For scratch that the same thread
 * frees. */
void *gcu_alloc(int ord, size_t n);
/* Give p back to the pool, ordered after the work queued on the thread's
 * stream. */
void gcu_free(int ord, void *p);
/* The same for a storage, which any thread may free: *owner is set to the
 * making thread's stream (held), which gcu_storage_free (given the same
 * owner) orders the free after, as well as after the freeing thread's. */
void *gcu_storage_alloc(int ord, size_t n, void **owner);
void gcu_storage_free(int ord, void *p, void *owner);
/* Bytes device ord's pool holds (in use and cached), -1 when unknown. */
long long gcu_pool_bytes(int ord);
/* Device ord's pool: the bytes it has reserved from the driver and the
 * bytes of those handed out (to storages and scratch, until their frees
 * are reached in stream order); 0, or -1 when the pool cannot say. */
int gcu_pool_stats(int ord, long long *reserved, long long *used);
/* Give every cached byte of device ord's pool back to the driver. */
void gcu_trim(int ord);

/* The device that owns device pointer p, -1 when it is not one. */
int gcu_ptr_device(const void *p);
/* n bytes device -> host and host -> device on the thread's stream, waiting
 * for them (the host buffer may be reused at once); 0 or -1 (a fault, or
 * an index error the checks queued before found, pending). */
int gcu_to_host(int ord, void *dst, const void *src, size_t n);
int gcu_from_host(int ord, void *dst, const void *src, size_t n);
/* Wait for the thread's work on device ord. 0, or -1 when that work, or
 * anything queued before, failed (the fault pending) or found a bad index
 * (the index error pending). */
int gcu_sync(int ord);
/* The pending fault of device ord (its text in msg) without waiting: 1 and
 * cleared, or 0 when none. */
int gcu_fault_take(int ord, char *msg, size_t cap);

/* The first bad index that the thread's deferred checks on a device found
 * (gcu_index_check, gcu_mce_prep), as their kernels write it for the host:
 * the fields of backend.h's gad_late_index, then set. */
typedef struct gcu_index_fault {
    int64_t pos, value, lo, hi;
    int32_t target;
    int32_t set;
    char op[32];
} gcu_index_fault;
/* The index error that a wait on device ord (gcu_sync, gcu_to_host,
 * gcu_from_host) found, without waiting: 1 with it in *f and cleared, or
 * 0 when none. */
int gcu_index_take(int ord, gcu_index_fault *f);
/* Record a fault (for the C side's own failures, such as scratch it could
 * not get in a void entry). */
void gcu_fault_set(int ord, const char *what);
/* Whether a CUDA error (a cudaError_t) is a fault in a kernel that ends the
 * device's context for the rest of the process (an illegal address, a
 * trap, an assert...): CUDA returns it from every later call there. */
int gcu_error_is_sticky(int e);
/* Whether device ord is dead (such a fault was met there, by any thread):
 * 1 with the first fault's text in msg, or 0. Every entry on a dead device
 * fails at once, with a fault that names the first one. */
int gcu_device_dead(int ord, char *msg, size_t cap);
/* For tests: handle error e (a cudaError_t) as if a CUDA call named what
 * had returned it on device ord. -1 (the fault pending), or 0 for
 * cudaSuccess. */
int gcu_fault_inject(int ord, int e, const char *what);
/* The calling thread's stream for device ord (a cudaStream_t; made
 * current, and made on first use), for a library that queues its work
 * after gad's (NCCL); NULL with the fault pending when it cannot be made. */
void *gcu_stream_handle(int ord);
/* Whether the thread's work queued on device ord is done, without
 * waiting: 1 done, 0 still running, -1 failed (the fault pending). */
int gcu_stream_done(int ord);

/* TF32 for f32 GEMMs (off by default: strict f32). Returns the old value. */
int gcu_set_tf32(int on);

/* n bytes of page-locked host memory (cudaHostAlloc), NULL when it cannot
 * be had (no fault recorded); gcu_host_free gives it back. */
void *gcu_host_alloc(size_t n);
void gcu_host_free(void *p);

/* ------------------------------------------------------ copies, fills */

/* dst (same dtype, elements of es bytes) = src, walked by it: operand 0
 * src's strides, operand 1 dst's. */
void gcu_copy(int ord, size_t es, const gcu_iter *it, const void *src, void *dst);
/* n elements of dtype at p = value (gad_full's conversion). */
void gcu_fill(int ord, void *p, int dtype, int64_t n, double value);
/* y (packed, dtype to) = x (dtype from, walked by it, operand 0)
 * converted as gad_cast does (float -> i64 truncates, saturates, NaN ->
 * 0). */
void gcu_convert(int ord, const gcu_iter *it, const void *x, int from, void *y, int to);
/* Whether every element (walked by it) is finite: 1, 0, or -1 (fault
 * pending). Waits. */
int gcu_all_finite(int ord, const gcu_iter *it, const void *x, int dtype);

/* -------------------------------------------------------- elementwise */

/* y (packed) = kernel k of elementwise.def over the walk (operand 0 x; for
 * binary and grad operand 1 the second input), parameters a, b. */
void gcu_unary(int ord, int k, int dtype, const gcu_iter *it, const void *x, void *y,
               double a, double b);
void gcu_binary(int ord, int k, int dtype, const gcu_iter *it, const void *x0,
                const void *x1, void *y);
void gcu_grad(int ord, int k, int dtype, const gcu_iter *it, const void *gy, const void *v,
              void *y, double a, double b);

/* --------------------------------------------------------- reductions */

/* A packed tensor's axes split into the kept ones (the outputs, row-major)
 * and the reduced ones, each grouped, with element strides. */
typedef struct gcu_rspace {
    int nk, nr;
    int64_t ksize[GCU_MAXR], kstride[GCU_MAXR];
    int64_t rsize[GCU_MAXR], rstride[GCU_MAXR];
    int64_t ktotal, rtotal;
} gcu_rspace;

/* y[k] = scale * sum over the reduced space, in double, in a fixed order. */
void gcu_sum(int ord, int dtype, const gcu_rspace *s, const void *x, void *y, double scale);
/* Along an axis of a packed [outer, n, inner] view: op 0 amax, 1 argmax
 * (i64 y), 2 amax_mask (y of x's shape), 3 softmax, 4 log_softmax. */
void gcu_axis(int ord, int op, int dtype, const void *x, void *y, int64_t outer, int64_t n,
              int64_t inner);

/* ----------------------------------------------------------- indexing */

/* Queue a check of index's values (walked by it) against [lo, hi): the
 * first bad position (row-major over it), its value and the bounds are
 * noted under op, unless an earlier check since the last wait noted one,
 * and reported by the next wait (gcu_index_take). Does not wait. 0, or -1
 * (fault pending) when the check could not be queued. */
int gcu_index_check(int ord, const char *op, const gcu_iter *it, const int64_t *index,
                    int64_t lo, int64_t hi);
/* y[pos] = x[off_x(pos) + wrap(index[off_i(pos)]) * sa] over index's
 * positions (row-major over idx: operand 0 index's strides, operand 1 x's
 * strides for those positions); d the axis's size. A value outside
 * [-d, d) (a deferred check reports it) gives 0. */
void gcu_pick(int ord, int dtype, const gcu_iter *it, const int64_t *index, const void *x,
              int64_t d, int64_t sa, void *y);
/* y (packed) += src (packed, index's shape) at index along axis, in index
 * order, duplicates adding: y, index and src as views (index any strides).
 * An entry whose index is out of range is skipped. */
void gcu_scatter_add(int ord, const gcu_view *y, int axis, const gcu_view *index,
                     const gcu_view *src);

/* ------------------------------------------------------------ GEMM */

/* Row-major C [M, N] (ldc) = alpha op(A) op(B) + beta C for `batch`
 * products whose operands lie sa, sb, sc elements apart; ta: element (i, k)
 * of A at A[k * lda + i] instead of A[i * lda + k]; tb likewise. Through
 * cuBLAS (a column-major library) by the transpose identity C^T = B^T A^T.
 * 0 or -1 (fault pending). */
int gcu_gemm(int ord, int dtype, int ta, int tb, int64_t M, int64_t N, int64_t K,
             double alpha, const void *A, int64_t lda, int64_t sa, const void *B, int64_t ldb,
             int64_t sb, double beta, void *C, int64_t ldc, int64_t sc, int64_t batch);

/* ------------------------------------------------- the fused kernels */

void gcu_scan_fwd(int ord, int dtype, const void *a, const void *b, void *h, int64_t B,
                  int64_t T, int64_t D);
void gcu_scan_bwd(int ord, int dtype, const void *a, const void *h, const void *gh, void *ga,
                  void *gb, int64_t B, int64_t T, int64_t D);
void gcu_rms_fwd(int ord, int dtype, const void *x, void *y, int64_t rows, int64_t n,
                 double eps);
void gcu_rms_bwd(int ord, int dtype, const void *x, const void *g, void *dx, int64_t rows,
                 int64_t n, double eps);
/* safe (packed i64 [N]) holds the targets; unweighted rows' become 0;
 * count (f64) = sum |mask|, nscale (dtype) = -1/count (0 when count is 0).
 * The first weighted row whose target is outside [0, V) is noted under op
 * as gcu_index_check notes a bad index (target 1: row and value), and
 * every such target becomes 0, so that the forward and backward read
 * inside the row. Does not wait. 0, or -1 (fault pending). */
int gcu_mce_prep(int ord, int dtype, const char *op, int64_t *safe, const void *mask, int64_t N,
                 int64_t V, double *count, void *nscale);
/* probs = softmax rows; loss (dtype, rank 0) as SPEC 4.3. 0 or -1. */
int gcu_mce_fwd(int ord, int dtype, const void *logits, const int64_t *safe, const void *mask,
                void *probs, void *loss, int64_t N, int64_t V);
void gcu_mce_bwd(int ord, int dtype, const void *probs, const int64_t *safe, const void *mask,
                 const double *count, const void *gy, void *dlogits, int64_t N, int64_t V);
/* y [R, D] = rows idx of table [V, D], and gt [V, D] += gy's rows at idx;
 * an index outside [0, V) gives a row of 0 and adds nothing. */
void gcu_emb_fwd(int ord, int dtype, const void *table, const int64_t *idx, void *y,
                 int64_t R, int64_t D, int64_t V);
void gcu_emb_bwd(int ord, int dtype, const int64_t *idx, const void *gy, void *gt, int64_t R,
                 int64_t D, int64_t V);
/* The HELIX block (SPEC 4.5), the CPU's algorithm (src/cpu/helix_tmpl.h)
 * on the device: t[] the GAD_HX_* pointers (backend/helix.h's order; s2 and xn2
 * NULL in the backward), grads[] the ten gradients (NULL skipped). 0, or
 * -1: scratch memory (*oom set) or a fault (pending). */
int gcu_helix_fwd(int ord, int dtype, void *const *t, void *y, int64_t B, int64_t T,
                  int64_t D, double eps, int *oom);
int gcu_helix_bwd(int ord, int dtype, void *const *t, const void *gy, void *const *grads,
                  int64_t B, int64_t T, int64_t D, double eps, int *oom);

/* --------------------------------------------------------- optimizers */

/* One parameter of a multi-tensor update (backend.h's gad_optim_item, with
 * device pointers): p (n elements of dtype) written from old (p itself
 * for an update in place); s1, s2 AdamW's m and v, or SGD's momentum
 * buffer (NULL: plain SGD) and NULL. c: AdamW's beta1, 1-beta1, beta2,
 * 1-beta2, bc1, bc2, lr, eps, decay, or SGD's lr, weight decay, momentum. */
typedef struct gcu_optim_item {
    void *p;
    const void *old;
    void *s1, *s2;
    const void *g;
    int64_t n;
    double c[9];
    int dtype, first, nesterov;
} gcu_optim_item;

/* src/cpu/optim.h's formulas, in the same order, each operation rounded
 * (optim.cu is compiled without contraction into FMAs), for items[0..n)
 * (n >= 1, numel >= 1 each) in a few launches: AdamW (adamw) or SGD. */
void gcu_optim_update(int ord, const gcu_optim_item *items, int n, int adamw);
/* optim.h's order exactly (blocks of 4096, four lanes each, the blocks in
 * order): the CPU's bits. NaN on a fault (pending). Waits. */
double gcu_sumsq(int ord, int dtype, const void *g, int64_t n);
void gcu_scale(int ord, int dtype, void *x, int64_t n, double s);

#ifdef __cplusplus
}
#endif

#endif
