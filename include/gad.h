/* SPDX-License-Identifier: MIT */
/*
 * gad.h: the whole public API of gad, a C11 tensor library with eager
 * reverse-mode automatic differentiation. This header is the manual.
 *
 * ---------------------------------------------------------------------------
 * The model in five rules
 *
 * 1. A tensor (gad_tensor) is an immutable value: a dtype (f32, f64, i64,
 *    bool), a
 *    shape of rank 0..GAD_MAX_RANK, strides and an offset into a shared,
 *    reference-counted storage. Views (reshape, permute, slice, ...) share
 *    storage; nothing ever writes to a storage that another tensor can see
 *    (copy-on-write, see gad_data_mut).
 *
 * 2. Ownership. Every tensor a gad function returns belongs to the innermost
 *    open scope of the calling thread (gad_scope_begin / gad_scope_end). When
 *    the scope ends, its references are dropped, so nested expressions such as
 *    gad_sum_all(gad_mul(a, b)) leak nothing. gad_keep(t) moves a tensor to the
 *    enclosing scope. When no scope is open, the caller owns the returned
 *    reference and gives it back with gad_release. Long-lived tensors (model
 *    parameters) are created outside any scope, or kept with gad_keep.
 *
 * 3. Errors never abort. A failing function returns NULL (or a gad_status)
 *    and records the first error of the thread: its kind, the op's name and a
 *    message naming the offending shapes or values. Every op given a NULL
 *    tensor returns NULL and keeps the first error, so a whole expression can
 *    be checked once at the end. Read it with gad_last_error, reset it with
 *    gad_clear_error.
 *
 * 4. Every op is a plain function of tensors returning a new tensor. Binary
 *    elementwise ops broadcast NumPy-style (right-aligned; a dim of 1 stretches;
 *    0 against 1 gives 0). There is no implicit dtype promotion between
 *    dimensioned tensors: mixing their dtypes is a dtype error; gad_cast
 *    converts. A 0-d operand of a binary elementwise op follows PyTorch's
 *    rule instead (gad_add says how).
 *
 * 5. Threads. gad may be called from several threads at once. Each thread
 *    has its own scopes, no-grad mode, error record and caches: an error
 *    recorded in one thread is never seen by another, gad_keep hands to the
 *    thread's own enclosing scope, and a thread that exits frees what its
 *    open scopes own and gives its caches back. Results do not depend on
 *    what other threads do: a model trained in a thread gives the same bits
 *    as when trained alone. Reference counts are atomic, so tensors may be
 *    retained and released from any thread.
 *    May be shared between threads, used by all at the same time:
 *    - any tensor, for reading: as an input of ops (in grad mode or not),
 *      through views (reshape, slice, transpose, ...), gad_detach,
 *      gad_contiguous, gad_data, gad_read_*, gad_item; a constant (off the
 *      tape) may also be saved by graphs that each thread differentiates
 *      with respect to its own leaves;
 *    - parameters (leaves that require grad) for inference, when every
 *      thread that uses them is in no-grad mode (gad_no_grad_begin): nothing
 *      is recorded on them and their gradient slots are not touched.
 *    Must not be shared (one thread at a time, or behind your own lock):
 *    - a graph being differentiated: gad_grad, gad_grad_ex, gad_backward,
 *      gad_hvp and gad_jvp write to every node and leaf they reach, so no
 *      two threads may differentiate graphs that reach the same leaf, and no
 *      other thread may use such a leaf in grad mode meanwhile; likewise
 *      gad_leaf_grad and gad_zero_grad of those leaves;
 *    - a gad_optim (every call on it), and its parameters while it steps:
 *      gad_optim_step writes them in place;
 *    - a gad_rng;
 *    - in-place writes: gad_data_mut(t) (and gad_clip_grad_norm on t) may
 *      write t's storage in place, so no other thread may read t meanwhile,
 *      and the pointer it returns is the writing thread's until it publishes
 *      the result (a mutex, a join). To give changing values to other
 *      threads, hand them snapshots made by the writing thread with
 *      gad_detach (or gad_clone): the next gad_data_mut or optimizer step
 *      copies on write, and a snapshot keeps the values it was made with;
 *    - gad_set_allocator: call it while no other thread uses gad.
 *
 * Axes are ints and may be negative (counted from the end). Shapes and
 * indices are int64_t. "n" below is the element count of a tensor.
 *
 * C++: this header compiles as C++11 or later (its declarations are
 * extern "C"; GAD_ALL, GAD_RANGE and GAD_RANGE_STEP have C++ forms). C's
 * compound literals, (int64_t[]){4} or &(gad_adamw_opts){.lr = 1e-3}, are
 * not C++: name the array or the struct, or use gad.hpp, a header-only
 * C++ layer (scope guards, operators, shapes as braced lists, exceptions).
 * ---------------------------------------------------------------------------
 */
#ifndef GAD_H
#define GAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility: what this header declares
 * is its whole exported interface, and calls inside it bind directly. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(default)
#endif

#define GAD_VERSION_MAJOR 0
#define GAD_VERSION_MINOR 1
#define GAD_VERSION_PATCH 0
#define GAD_VERSION_STRING "0.1.0"

/* The largest rank a tensor can have. */
#define GAD_MAX_RANK 8

/* ======================================================================== */
/* Types                                                                     */
/* ======================================================================== */

/* An opaque, reference-counted tensor handle. */
typedef struct gad_tensor gad_tensor;

/* Element types. f32 is the compute type; f64 serves reference checks; i64
 * holds indices; bool (one byte, always 0 or 1) holds masks: comparisons
 * return it, gad_where and gad_masked_fill take it. f16 (IEEE 754 binary16)
 * and bf16 (bfloat16: f32's sign and exponent, 7 mantissa bits) halve a
 * tensor's memory; i32 and u8 hold integer data read from checkpoints and
 * data sets. Most ops take floats only (a bool input is a dtype error
 * there, as an i64 one is). The numbers are fixed: files and other
 * programs may store them.
 *
 * The new dtypes (issue 29): every dtype can be created (gad_from_raw,
 * gad_zeros/full/eye; gad_arange in any but bool; gad_linspace and the
 * gad_rng_* float tensors in f16/bf16, computed in f32 and rounded once),
 * cast to and from every other (gad_cast), read (gad_read_f32/f64/i64/
 * bool, gad_item), printed, viewed (reshape, transpose, slice, broadcast,
 * ...), copied and moved between devices. Conversions to f16/bf16 round
 * to nearest, ties to even, exactly as PyTorch's tensor conversions: past
 * the largest finite half to an infinity, small values to the half's
 * subnormals or a signed zero; f64 and the integers are rounded to f32
 * first (PyTorch's double rounding); NaN bits as PyTorch's on x86: f32 ->
 * f16 keeps the sign and the payload's top bits, made quiet; -> bf16 gives
 * 0xffff. Which ops compute on half inputs (in f32, rounded once on
 * output): see below, at each op family. */
typedef enum gad_dtype_t {
    GAD_DTYPE_INVALID = -1, /* what gad_dtype(NULL) returns */
    GAD_F32 = 0,
    GAD_F64 = 1,
    GAD_I64 = 2,
    GAD_BOOL = 3,
    GAD_F16 = 4,
    GAD_BF16 = 5,
    GAD_I32 = 6,
    GAD_U8 = 7
} gad_dtype_t;

/* The name of a dtype: "f32", "f64", "i64", "bool", "f16", "bf16", "i32"
 * or "u8" ("?" for an invalid value). */
const char *gad_dtype_name(gad_dtype_t dtype);

/* Size in bytes of one element of dtype (0 for an invalid value). */
size_t gad_dtype_size(gad_dtype_t dtype);

/* ======================================================================== */
/* Errors                                                                    */
/* ======================================================================== */

/* Status codes, which double as error kinds (X-macro: code, name). */
#define GAD_STATUS_LIST(X)                                                     \
    X(GAD_OK, "ok")                                                            \
    X(GAD_ERR_SHAPE, "shape")             /* bad shape, rank, axis, broadcast */\
    X(GAD_ERR_DTYPE, "dtype")             /* wrong or mixed dtypes */          \
    X(GAD_ERR_INDEX, "index")             /* an index out of its bound */      \
    X(GAD_ERR_DOMAIN, "domain")           /* a bad argument value or NULL */   \
    X(GAD_ERR_NOT_UNIQUE, "not-unique")   /* needs an unshared tensor */       \
    X(GAD_ERR_UNSUPPORTED, "unsupported") /* valid, but not supported here */  \
    X(GAD_ERR_MEMORY, "memory")           /* an allocation failed */           \
    X(GAD_ERR_IO, "io")                   /* a file operation failed */        \
    X(GAD_ERR_FORMAT, "format")           /* a malformed file */           \
    X(GAD_ERR_DEVICE, "device")           /* on two devices, or not on host */\
    X(GAD_ERR_COMM, "comm")               /* a collective failed or timed out */

typedef enum gad_status {
#define GAD_STATUS_ENUM_(code, name) code,
    GAD_STATUS_LIST(GAD_STATUS_ENUM_)
#undef GAD_STATUS_ENUM_
    GAD_STATUS_COUNT_
} gad_status;

/* The name of a status ("ok", "shape", ...; "unknown" if out of range). */
const char *gad_status_str(gad_status status);

/* The first error recorded on this thread since the last gad_clear_error. */
typedef struct gad_error {
    gad_status kind;   /* never GAD_OK in a returned record */
    char op[32];       /* the op that failed, e.g. "matmul" */
    char message[256]; /* what was wrong, naming shapes or values */
    char text[320];    /* "<kind> error in <op>: <message>", and with a call
                        * site " (at <file>:<line>)" (the message cut to fit) */
    const char *file;  /* the call site (see "Call sites"), or NULL */
    int line;          /* its line, 0 without one */
} gad_error;

/* The pending error of this thread, or NULL if there is none. The record
 * stays valid until gad_clear_error is called on the same thread. */
const gad_error *gad_last_error(void);

/* Forget the pending error of this thread. */
void gad_clear_error(void);

/* Record an error as gad's own ops do (for code built on gad, such as its
 * nn layer): unless an error is already pending on this thread, set kind,
 * op and the printf-style message. Always returns NULL, so that a function
 * returning a tensor can `return gad_error_set(...)`. */
void *gad_error_set(gad_status kind, const char *op, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---------------------------------------------------------- call sites
 *
 * Which call failed: define GAD_CALL_SITES before including gad.h (or
 * compile with -DGAD_CALL_SITES), in C or C++, and every function this
 * header declares is called through a macro of its own name that records
 * the caller's __FILE__ and __LINE__ for this thread while the call runs.
 * An error recorded meanwhile, by the function or by anything it calls
 * inside gad, carries that site: gad_last_error()->file and ->line, and
 * its text ends with " (at prog.c:42)":
 *
 *     #define GAD_CALL_SITES
 *     #include "gad.h"
 *     ...
 *     gad_tensor *y = gad_matmul(a, b);           // prog.c:42
 *     if (!y) puts(gad_last_error()->text);
 *     // shape error in matmul: inner dims differ: [2,3] @ [4,5] (3 vs 4) (at prog.c:42)
 *
 * Nested calls report their own lines (the arguments run first); a
 * callback that gad calls (a gad_fn of gad_gradcheck) reports the lines of
 * its own calls, and the enclosing site comes back when it returns. The
 * cost is two calls into the library per gad call, and only where the
 * macro is defined: the library and programs built without it are
 * unchanged (no error records a site then). The macros are generated from
 * this header into gad_call_sites.h (tools/gen_call_sites.py; a test checks
 * that no function lacks one). A function-like macro does not affect
 * taking a function's address (gad_fn f = gad_tanh) or (gad_tanh)(x),
 * which calls the function directly. With gad.hpp the sites are gad.hpp's
 * own lines where its C++ functions call gad's. Calls from files compiled
 * without the macro record nothing, and leave the site of an enclosing
 * recorded call in place. */

/* A call site: file (a string that outlives the call, e.g. __FILE__) and
 * line. */
typedef struct gad_call_site {
    const char *file;
    int line;
} gad_call_site;

/* Make (file, line) this thread's call site, returning the previous one;
 * gad_call_site_leave(prev) restores it. What the macros call around each
 * call; a program may also call them itself (a file NULL means none). No
 * error is recorded. */
gad_call_site gad_call_site_enter(const char *file, int line);
void gad_call_site_leave(gad_call_site prev);

/* gad_error_set with the call site given: what gad_error_set's macro
 * calls under GAD_CALL_SITES. */
void *gad_error_set_at(const char *file, int line, gad_status kind, const char *op,
                       const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* ======================================================================== */
/* Memory: reference counts, scopes, allocator                               */
/* ======================================================================== */

/* Add a reference to t and return t (NULL passes through). Use it for a
 * tensor stored in a long-lived structure; give it back with gad_release.
 * A released t: NULL and a domain error. */
gad_tensor *gad_retain(gad_tensor *t);

/* Drop one reference; the tensor is freed when none remain. NULL is a no-op.
 * Release only references you own: ones returned with no scope open, ones
 * you took with gad_retain, and ones gad_keep handed to you.
 *
 * Using a tensor after its last reference is gone (released here or by the
 * end of the scope that owned it), in this call or any other function of
 * this header, is a domain error under that function's name, "use of a
 * released tensor", as long as its header has not been reused for a new
 * tensor: a released header is poisoned (never read as a tensor again)
 * and waits in the releasing thread's quarantine until 256 more tensors
 * have been released there; it is never given back to the allocator before
 * that unless the thread exits or gad_set_allocator runs. So every misuse
 * within that window is caught (a double release too), and nothing is
 * freed twice or read from freed memory; a use after more releases than
 * that may alias a newer tensor. The quarantine is on by default and
 * costs the per-op path nothing measurable; gad_debug_quarantine(0) or
 * GAD_QUARANTINE=0 in the environment turns it off, and a header is then
 * reused by the very next tensor the thread makes. (The nn layers report
 * the error under the name of the first op they call.) */
void gad_release(gad_tensor *t);

/* Open a scope on this thread. Until the matching gad_scope_end, every tensor
 * a gad function returns belongs to this scope. Scopes nest. */
void gad_scope_begin(void);

/* Close the innermost scope, dropping its reference to every tensor it
 * owns. Calling it with no scope open does nothing. */
void gad_scope_end(void);

/* The number of scopes open on this thread. */
int gad_scope_depth(void);

/* Hand t to the enclosing scope (the one that was open before the innermost
 * one), or to the caller when only one scope is open, so that it survives
 * gad_scope_end. Returns t. With no scope open it does nothing. */
gad_tensor *gad_keep(gad_tensor *t);

/* An allocator for every byte gad takes from the system. alloc must return
 * memory aligned to `align` (a power of two, at most 4096) or NULL; free
 * gets back the same pointer and size. */
typedef struct gad_allocator {
    void *(*alloc)(void *ctx, size_t size, size_t align);
    void (*free)(void *ctx, void *ptr, size_t size);
    void *ctx;
} gad_allocator;

/* Install an allocator (NULL restores the default, aligned malloc). It empties
 * this thread's caches first. Call it while no tensor is alive, as tests do
 * to fail the k-th allocation. It gives back the caches of every thread
 * that has used gad (buffers, headers, nodes, GEMM's scratch) to the
 * allocator they came from, the old one, so that no thread later hands one
 * of its blocks to the new allocator's free: this is why no other thread
 * may use gad (nor exit, if it used gad) during the call. */
void gad_set_allocator(const gad_allocator *allocator);

/* Memory from the installed allocator, for code built on gad that wants its
 * allocations to go through the same hook (gad's nn layer does, so that an
 * allocation-failure test reaches it): aligned to 16 bytes, NULL on failure
 * (no error is recorded). gad_mem_realloc keeps the contents up to the
 * smaller size; gad_mem_free accepts NULL. */
void *gad_mem_alloc(size_t n);
void *gad_mem_realloc(void *p, size_t n);
void gad_mem_free(void *p);

/* Return every cached buffer, tensor header and graph node of this thread
 * to the allocator. gad keeps freed buffers by size class, and headers and
 * nodes in pools, so that a training loop does not call malloc per op; this
 * gives the memory back. The quarantine (gad_release) stays: the headers
 * of the last 256 tensors this thread released (176 bytes each; outside
 * the cache limit, and kept with the cache disabled too) are reused only
 * after 256 more, so that a released tensor passed to gad is an error
 * ("use of a released tensor") instead of an alias of a newer one; they go
 * back to the allocator when the thread exits or with gad_set_allocator. */
void gad_cache_trim(void);

/* Memory counters of the calling thread's caches and of the whole process.
 * The device_ fields count the memory of the devices other than the CPU
 * (gad.h, "Devices"), summed over them, as each device's back end counts
 * it; gad_device_mem_stats gives one device's share. */
typedef struct gad_mem_stats {
    int64_t live_tensors;   /* tensor headers alive, all threads */
    int64_t live_storages;  /* storages alive, all threads, on every device */
    int64_t live_bytes;     /* bytes in live storages in host (CPU) memory,
                             * all threads; device memory is not in it */
    int64_t cached_bytes;   /* bytes held in this thread's caches */
    int64_t device_live_bytes;   /* bytes in live storages on the other
                                  * devices, all threads */
    int64_t device_cached_bytes; /* bytes the other devices' allocators keep
                                  * for reuse, in no storage (CUDA's caching
                                  * allocator: gad_device_mem_stats) */
} gad_mem_stats;

void gad_mem_stats_get(gad_mem_stats *out);

/* Leak hunting. While tracking is on, gad records every tensor made, with
 * the op that made it ("add", "from_f32", ...), the thread (numbered 1, 2,
 * ... in the order they first made one) and a serial number, and forgets it
 * when it is freed; gad_debug_live_report prints those still alive to f
 * (stderr when NULL), oldest first, one line each ("#12 add f32 [2,3]
 * thread 1"), at most 100 lines and then a count, and returns how many are
 * alive. gad_debug_track(1) turns tracking on (only tensors made from then
 * on are recorded), 0 off (the records stay until their tensors are
 * freed); it returns the previous setting; call it while no other thread
 * uses gad. The environment variable GAD_DEBUG_LEAKS=1 turns it on from
 * the start and prints the report to stderr at exit. Off, it costs one
 * predictable branch per tensor. */
int gad_debug_track(int on);
int64_t gad_debug_live_report(FILE *f);

/* The quarantine of released tensor headers (gad_release says what it
 * catches): 1 on (the default), 0 off (GAD_QUARANTINE=0 in the
 * environment at start turns it off from the start). Headers already in a
 * thread's quarantine stay there until released by later ones. Returns
 * the previous setting. */
int gad_debug_quarantine(int on);

/* Set the most bytes this thread's caches (buffers, headers and nodes) may
 * hold (default 1 GiB: enough to rebuild a graph of a million small ops
 * without allocating). Returns the previous limit. */
size_t gad_set_cache_limit(size_t bytes);

/* ======================================================================== */
/* Runtime configuration                                                     */
/* ======================================================================== */

/* The number of threads gad's kernels use. Default: OMP_NUM_THREADS when
 * set, else the CPUs the process may run on; always 1 when built with
 * GAD_THREADS=OFF. n < 1 resets to the default. Process-wide. The threads
 * are gad's own (one per extra thread, started when first needed); after a
 * parallel loop they spin for GAD_SPIN_US microseconds (environment,
 * default 100, 0 to sleep at once) before they sleep, except while another
 * thread or process competes for their core (on Linux, where the scheduler
 * reports how long a thread waited to run): then they sleep at once, so
 * that a spinning worker never takes the time the other one needs. A loop
 * started while another thread's loop runs, or inside one, runs on its
 * caller alone. */
void gad_set_num_threads(int n);
int gad_num_threads(void);

/* 1 if gad was built with a CBLAS for GEMM. */
int gad_blas_available(void);

/* Enable (1) or disable (0) the CBLAS path at run time; returns the previous
 * setting. With it off, every GEMM runs on gad's built-in kernel. A no-op
 * returning 0 when gad was built without BLAS. */
int gad_set_blas(int enabled);

/* How f32 matrix products may compute, as PyTorch's
 * torch.set_float32_matmul_precision. GAD_MATMUL_HIGHEST (the default) and
 * GAD_MATMUL_HIGH: in f32 (the CPU has no TF32; HIGH is kept for code
 * written against PyTorch). GAD_MATMUL_MEDIUM: where the CPU's bf16 units
 * are faster than its f32 ones (AVX-512 BF16 on AMD's cores, at twice the
 * f32 FMA rate on Zen 4, or AMX; Intel's cores without AMX issue it at
 * half that rate), f32 products on the
 * CPU round their operands to bf16 (to nearest even; subnormals count as
 * zero) and sum the exact products in f32: a relative error of about 2^-8
 * per operand instead of 2^-24, at up to twice the speed. Elsewhere MEDIUM
 * computes as HIGHEST. It covers the products of gad_matmul on f32 tensors
 * and everything built on them (gad_linear, gad_nn_linear, the projections
 * of multi-head attention) and the products inside the fused HELIX block
 * (f32, or f16/bf16 computed in f32). Convolution, the inner products of
 * gad_scaled_dot_product_attention, f64 products and the CUDA back end keep
 * full precision. The bits of a
 * product do not depend on the thread count in either mode. Process-wide;
 * set it between steps, not while other threads run products. Returns the
 * previous setting; a value out of range is ignored (and returned as the
 * current one). */
typedef enum {
    GAD_MATMUL_HIGHEST = 0,
    GAD_MATMUL_HIGH = 1,
    GAD_MATMUL_MEDIUM = 2
} gad_matmul_precision;
gad_matmul_precision gad_set_matmul_precision(gad_matmul_precision p);
gad_matmul_precision gad_matmul_precision_get(void);
/* 1 when GAD_MATMUL_MEDIUM takes effect on this CPU (bf16 products faster
 * than f32 ones), else 0. */
int gad_matmul_medium_native(void);

/* "0.1.0" */
const char *gad_version(void);

/* ======================================================================== */
/* Constructors                                                              */
/* ======================================================================== */
/* Each returns a new contiguous tensor (owned as rule 2 says), or NULL on a
 * shape error (a negative dim, rank outside 0..8, an element count that
 * overflows), a dtype error, or a memory error. `shape` may be NULL when
 * rank is 0. */

/* Copy numel(shape) elements from data (row-major). data may be NULL only if
 * the shape has no elements. */
gad_tensor *gad_from_f32(const float *data, const int64_t *shape, int rank);
gad_tensor *gad_from_f64(const double *data, const int64_t *shape, int rank);
gad_tensor *gad_from_i64(const int64_t *data, const int64_t *shape, int rank);
/* A bool tensor from bytes: 0 is false, any other byte true (stored as 1). */
gad_tensor *gad_from_bool(const uint8_t *data, const int64_t *shape, int rank);

/* ---- dtypes (issue 29): creation from raw bytes, any dtype ---- */
/* Copy numel(shape) elements of dtype, given as their bytes in the host's
 * order (f16/bf16: the 16-bit patterns, uint16_t; i32: int32_t; u8 and
 * bool: one byte each), as torch.frombuffer(data, dtype=...) then .clone()
 * would. Every pattern is accepted for the float and integer dtypes (NaN
 * payloads are kept as given); a bool byte other than 0 or 1 is a domain
 * error naming its index (gad_from_bool is the constructor that maps any
 * nonzero byte to true). An invalid dtype is a dtype error. */
gad_tensor *gad_from_raw(gad_dtype_t dtype, const void *data, const int64_t *shape,
                         int rank);

/* Tensors filled with 0, 1 or `value` (converted to dtype; for i64 the
 * value is truncated toward zero, and one outside the i64 range, NaN
 * included, is a domain error; for bool any nonzero value, NaN included,
 * is true). */
gad_tensor *gad_zeros(const int64_t *shape, int rank, gad_dtype_t dtype);
gad_tensor *gad_ones(const int64_t *shape, int rank, gad_dtype_t dtype);
gad_tensor *gad_full(const int64_t *shape, int rank, gad_dtype_t dtype,
                     double value);

/* Rank-0 tensors. */
gad_tensor *gad_scalar(double value, gad_dtype_t dtype);
gad_tensor *gad_scalar_f32(float value);
gad_tensor *gad_scalar_f64(double value);

/* A tensor of the same shape and dtype as t, filled with 0 or with value. */
gad_tensor *gad_zeros_like(gad_tensor *t);
gad_tensor *gad_full_like(gad_tensor *t, double value);

/* [start, end) by step as a 1-D tensor. Values are made by repeated addition
 * in the target dtype (x += step), so f32 gives exactly g's values:
 * arange(0, 1, 0.1) = [0, 0.1, ..., 0.70000005, 0.8000001, 0.9000001]. For
 * step > 0 it emits while x < end, for step < 0 while x > end. A zero or
 * non-finite step, or non-finite bounds, are a shape error; for i64 the
 * arguments are truncated to integers first. f16/bf16 are made in f32 and
 * rounded once; i32/u8 in i64 and converted (u8 wraps); bool is a dtype
 * error. */
gad_tensor *gad_arange(double start, double end, double step,
                       gad_dtype_t dtype);

/* num points from start to end inclusive (float dtypes): element i is
 * start + (end - start) * i / (num - 1), computed in the dtype (in f32 for
 * f16/bf16, rounded once). num = 0 gives
 * shape [0], num = 1 gives [start]; num < 0 is a shape error. */
gad_tensor *gad_linspace(double start, double end, int64_t num,
                         gad_dtype_t dtype);

/* The n x n identity matrix, any dtype. */
gad_tensor *gad_eye(int64_t n, gad_dtype_t dtype);

/* Standard normal f32 values, bit-exact with g's randn: xorshift64* seeded
 * with (seed | 1), pairs through Box-Muller in double. A shorter request is
 * a prefix of a longer one with the same seed. */
gad_tensor *gad_randn(const int64_t *shape, int rank, uint64_t seed);

/* ======================================================================== */
/* Random number generator objects                                           */
/* ======================================================================== */
/* A seedable generator (xoshiro256**, seeded by splitmix64) for data,
 * initializers and environments. Not shared between threads without a
 * lock. The same seed gives the same stream on every platform. */

typedef struct gad_rng gad_rng;

/* A new generator, or NULL on a memory error. Free it with gad_rng_free. */
gad_rng *gad_rng_new(uint64_t seed);
void gad_rng_free(gad_rng *rng); /* accepts NULL */

/* Reset the stream to the one `seed` starts. */
void gad_rng_seed(gad_rng *rng, uint64_t seed);

/* The raw next 64 bits. */
uint64_t gad_rng_next(gad_rng *rng);

/* A uniform double in [0, 1) with 53 random bits. */
double gad_rng_uniform(gad_rng *rng);

/* A standard normal double (Box-Muller; the spare value is kept). */
double gad_rng_normal(gad_rng *rng);

/* A uniform integer in [lo, hi), without modulo bias. Returns lo if hi <= lo. */
int64_t gad_rng_int(gad_rng *rng, int64_t lo, int64_t hi);

/* Tensors of draws: uniform in [lo, hi), normal(mean, std) (float dtypes;
 * f16/bf16 draw the f32 values and round them, a uniform one kept below
 * hi), and integers in [lo, hi) (i64; hi <= lo is a domain error). */
gad_tensor *gad_rng_uniform_tensor(gad_rng *rng, const int64_t *shape,
                                   int rank, gad_dtype_t dtype, double lo,
                                   double hi);
gad_tensor *gad_rng_normal_tensor(gad_rng *rng, const int64_t *shape, int rank,
                                  gad_dtype_t dtype, double mean, double std);
gad_tensor *gad_rng_int_tensor(gad_rng *rng, const int64_t *shape, int rank,
                               int64_t lo, int64_t hi);

/* ======================================================================== */
/* Accessors                                                                 */
/* ======================================================================== */
/* On a NULL tensor: gad_rank returns -1, gad_dtype GAD_DTYPE_INVALID,
 * gad_numel returns 0,
 * gad_shape and gad_strides return NULL (and no error is recorded). */

int gad_rank(const gad_tensor *t);
const int64_t *gad_shape(const gad_tensor *t);   /* rank entries */
const int64_t *gad_strides(const gad_tensor *t); /* in elements; may be 0 or < 0 */
int64_t gad_numel(const gad_tensor *t);
gad_dtype_t gad_dtype(const gad_tensor *t);

/* The size of one axis (negative counts from the end); -1 and a shape error
 * when the axis is out of range. */
int64_t gad_dim(const gad_tensor *t, int axis);

/* 1 if t is row-major contiguous at offset 0, else 0. The test is strict:
 * a size-1 axis must still have its row-major stride, so a broadcast_to
 * that adds a leading axis (stride 0) is not contiguous; unsqueeze keeps a
 * contiguous tensor contiguous. */
int gad_is_contiguous(const gad_tensor *t);

/* The value of a one-element tensor (any rank) as a double. NaN and a shape
 * error if numel != 1. */
double gad_item(gad_tensor *t);

/* Copy the elements out in row-major order, converting to the destination
 * type (f64 -> f32 rounds; float -> i64 truncates toward zero, saturates and
 * maps NaN to 0). n is the capacity of dst: a shape error if n < numel.
 * Returns GAD_OK or the error's kind. */
gad_status gad_read_f32(gad_tensor *t, float *dst, size_t n);
gad_status gad_read_f64(gad_tensor *t, double *dst, size_t n);
gad_status gad_read_i64(gad_tensor *t, int64_t *dst, size_t n);
/* As the reads above, into bytes 0 or 1 (nonzero -> 1, NaN -> 1, as
 * gad_cast to bool). */
gad_status gad_read_bool(gad_tensor *t, uint8_t *dst, size_t n);

/* Copy n host values into t's elements, in place and on t's device (the
 * inverse of gad_read_*, and the way to refill a device tensor, such as a
 * batch, without making a new one; torch's copy_ from a host tensor). t
 * keeps its identity, device and dtype; copy-on-write as gad_data_mut (a
 * shared or non-contiguous t gets a private packed storage first, so
 * graphs and views that saw the old values keep them). src holds numel
 * values of t's dtype in row-major order. A dtype error for a t of another
 * dtype (no conversion), a shape error when n != numel, a domain error for
 * a NULL src (n > 0), a not-unique error for the output of a tracked op, a
 * memory error when the copy-on-write fails, a device error when the copy
 * to the device fails. From gad_host_alloc's memory, the copy to a GPU is
 * a direct transfer. */
gad_status gad_write_f32(gad_tensor *t, const float *src, size_t n);
gad_status gad_write_f64(gad_tensor *t, const double *src, size_t n);
gad_status gad_write_i64(gad_tensor *t, const int64_t *src, size_t n);

/* Read-only pointer to the elements of a contiguous tensor (a shape error and
 * NULL otherwise; call gad_contiguous first). Valid while t is alive. The
 * elements of a tensor that lives on a device other than the CPU are not in
 * host memory: gad_data and gad_data_mut give NULL and a device error for
 * it (gad_read_* and gad_item copy them to the host). */
const void *gad_data(gad_tensor *t);

/* Make t's storage private to t (copy-on-write: copy it if it is shared or
 * t is not contiguous) and return a writable pointer to its elements in
 * row-major order. t keeps its identity: a parameter stays the same leaf with
 * the same gradient slot, and any graph or view that saw the old values keeps
 * them. NULL and a memory error if the copy fails; NULL and a not-unique
 * error if t is the output of a tracked op (its graph would no longer match
 * its values: detach it first). Writes must stay within numel elements and
 * end before t is next read by another thread. */
void *gad_data_mut(gad_tensor *t);

/* 1 if t's storage is referenced by no other tensor, else 0. */
int gad_is_unique(const gad_tensor *t);

/* Print t like NumPy's repr (a NULL file is an io error), one row per line:
 *     tensor([[1., 2.],
 *             [3., 4.]], dtype=f32)
 * each value the shortest decimal that reads back the same, summarizing with
 * "..." when t has more than 1000 elements (the first and last 3 along each
 * axis). gad_print writes to stdout, with a newline. */
void gad_fprint(FILE *f, gad_tensor *t);
void gad_print(gad_tensor *t);

/* Write the repr into buf (always NUL-terminated when cap > 0). Returns the
 * length the full repr has, like snprintf. A NULL buf writes nothing, with
 * any cap (as cap 0). */
size_t gad_snprint(char *buf, size_t cap, gad_tensor *t);

/* Write a shape as gad's error messages show it: "[2,3]", the dims in
 * decimal separated by commas ("[]" for rank 0). A rank outside
 * 0..GAD_MAX_RANK, or a NULL shape with a rank above 0, is written
 * "[rank 9]" (the dims are not read). The text is cut to cap - 1 bytes when
 * it is longer, and buf is always NUL-terminated; nothing is written past
 * cap, and a NULL buf or a cap of 0 writes nothing. GAD_SHAPE_FORMAT_CAP
 * bytes always hold the whole text. Returns buf. No error is recorded. */
#define GAD_SHAPE_FORMAT_CAP (3 + 21 * GAD_MAX_RANK)
const char *gad_shape_format(char *buf, size_t cap, const int64_t *shape,
                             int rank);

/* ======================================================================== */
/* Devices                                                                   */
/* ======================================================================== */

/* A device is a small number: GAD_CPU (0) is the host's processor; the
 * others are found by gad_cuda (and, in gad's own tests, a test device).
 * Every tensor lives on one device, and ops run on the device of their
 * inputs: inputs on two devices are a device error naming the op and both
 * devices, and nothing is ever copied implicitly (as no dtype is promoted
 * implicitly). gad_to_device is the one way across. gad_read_*, gad_item,
 * gad_print, gad_snprint and gad_save work on any device (they copy to the
 * host); gad_data and gad_data_mut need host memory (a device error
 * otherwise). Work on a device may be queued: it is finished, and an
 * error it met is reported, at the next call that copies to the host
 * (gad_read_*, gad_item, printing, saving) or at gad_device_sync (on a
 * CUDA device also at a copy from the host: gad_from_*, gad_write_*,
 * gad_to_device onto it). Index values are checked on the device too, and
 * on a CUDA device the check is queued with the op (as PyTorch's
 * device-side asserts, but recoverable): gather, take, scatter_add,
 * index_select, the embeddings, masked_ce and the losses and layers that
 * take class or token indices return a result when an index is out of
 * range (0 where it was read, nothing added where it was scattered), and
 * the next of those synchronising calls fails with the index error
 * instead, naming the op that was given the index, its value and the
 * bound; only the first bad index since the last such call is reported,
 * and the device works normally after it. On the CPU the op itself fails
 * with the index error.
 * A fault inside a kernel (an illegal address, a trap, a device-side
 * assert) is different: CUDA ends the device's context for the rest of the
 * process. The call that finds it fails with a device error naming it, and
 * from then on every call on that device, from any thread, fails at once
 * with a device error naming that first fault (an allocation too, never a
 * memory error); the device cannot be used again until the process
 * restarts (the CPU and other GPUs work on). Tensors stored there are lost.
 * A tensor may be freed by another thread than the one that made it: its
 * memory is reused only after the work both threads queued before the free
 * is done (work a third thread queued on it must be waited for, with
 * gad_device_sync in that thread, before the last reference goes).
 * Devices are probed on the first call to a function of this section. */
typedef int gad_device;
#define GAD_CPU 0

typedef enum gad_device_type {
    GAD_DEVICE_CPU = 0,
    GAD_DEVICE_CUDA = 1,
    GAD_DEVICE_OTHER = 2 /* a device registered by gad's tests */
} gad_device_type;

/* How many devices of a type this process can use: 1 for the CPU; the CUDA
 * GPUs found (0 in a build without CUDA, or with no GPU or driver, or with
 * a driver that cannot be used, one too old for the CUDA version gad was
 * built with: gad_cuda then says why); 0 for a value that is not a device
 * type. */
int gad_device_count(gad_device_type type);

/* CUDA device `index` (0-based, as CUDA numbers them). -1 and a device
 * error when there is no such GPU (or the build has no CUDA); the error
 * names the driver's and the runtime's CUDA versions when the driver is
 * too old (CUDA 13 needs driver R580 or newer). */
gad_device gad_cuda(int index);

/* The device's type, or -1 (no error recorded) for a number that names no
 * device. */
int gad_device_type_of(gad_device dev);

/* "cpu", "cuda:0", ...; "?" for a number that names no device. The text
 * is static. */
const char *gad_device_name(gad_device dev);

/* The device's free and total memory in bytes (either pointer may be
 * NULL); for the CPU, the host's available and physical memory. A device
 * error for a number that names no device. */
gad_status gad_device_memory(gad_device dev, size_t *free_bytes, size_t *total_bytes);

/* Device dev's memory as gad counts it (gad_mem_stats is the sum over the
 * devices other than the CPU): the bytes in its live storages, every
 * thread's, and the bytes its allocator keeps for reuse in no storage.
 * For the CPU these are gad_mem_stats' live_bytes and cached_bytes (the
 * calling thread's caches); for a CUDA device, the storages' requested
 * sizes, and the memory its pool has reserved from the driver and not
 * handed out to storages or kernels' scratch (freed blocks, and the rest
 * of the pool's chunks; gad keeps them until an allocation finds the
 * device out of memory). A storage's bytes leave live_bytes when it is
 * freed; on a GPU the pool has them back once the work queued before the
 * free is done. Either pointer may be NULL. A device error for a number
 * that names no device, or a device that does not count its memory. */
gad_status gad_device_mem_stats(gad_device dev, int64_t *live_bytes, int64_t *cached_bytes);

/* Wait until the work this thread queued on dev is done; the error it met,
 * if any (GAD_OK on the CPU, which queues nothing). */
gad_status gad_device_sync(gad_device dev);

/* The device t lives on; -1 and a null-argument error for NULL. */
gad_device gad_device_of(const gad_tensor *t);

/* t on device dev: t itself (one more reference) when it is already there,
 * else a packed copy there. Differentiable: the gradient goes back to t's
 * device. A device error for a number that names no device. */
gad_tensor *gad_to_device(gad_tensor *t, gad_device dev);

/* The calling thread's default device: where gad_zeros, gad_ones, gad_full,
 * gad_scalar*, gad_arange, gad_linspace, gad_eye, gad_randn and the
 * gad_rng_*_tensor constructors create their tensors, and where gad_from_*
 * copy the host data they are given (the *_like constructors follow their
 * argument instead; gad_load creates on the CPU). Random tensors drawn for
 * a device hold exactly the CPU's values for the same generator state.
 * gad_set_default_device returns the previous default, or -1 and a device
 * error (the default unchanged) for a number that names no device. Each
 * thread starts on GAD_CPU. */
gad_device gad_set_default_device(gad_device dev);
gad_device gad_default_device(void);

/* TF32 tensor-core arithmetic for f32 matrix products on CUDA devices
 * (10-bit mantissas in the products, f32 sums: about 3 decimal digits;
 * faster on the GPU). Off by default: f32 products are strict f32, as on
 * the CPU; the environment variable GAD_CUDA_TF32=1 turns it on at start.
 * Returns the previous setting; without CUDA it changes nothing (0). */
int gad_set_tf32(int on);

/* Host memory for data bound for a device (batches refilled every step,
 * with gad_write_* or gad_from_*): page-locked ("pinned") when this gad has
 * a CUDA device and the driver grants it, so that copies from it to a GPU
 * run at the bus's speed without a staging copy; ordinary memory (16-byte
 * aligned, from the installed allocator) otherwise. NULL and a memory error
 * on failure. gad_host_is_pinned says which (0 for NULL). Free it with
 * gad_host_free (NULL is a no-op), never with free. gad keeps a registry
 * of the live blocks: gad_host_free of a pointer that is not one (never
 * from gad_host_alloc, or freed already) is a domain error and frees
 * nothing, and gad_host_is_pinned of one is 0. */
void *gad_host_alloc(size_t n);
int gad_host_is_pinned(const void *p);
void gad_host_free(void *p);

/* The address of t's element 0 in its device's memory (a host pointer for
 * the CPU), for handing to other libraries (a CUDA kernel, cuBLAS): valid
 * while t lives; the elements are laid out with t's strides. Reading it is
 * safe only after gad_device_sync. NULL and a null-argument error for
 * NULL. */
void *gad_device_ptr(gad_tensor *t);

/* ======================================================================== */
/* Copies and conversion                                                     */
/* ======================================================================== */

/* t itself (one more reference) if it is contiguous, else a packed row-major
 * copy. */
gad_tensor *gad_contiguous(gad_tensor *t);

/* A new tensor with its own packed copy of t's elements. */
gad_tensor *gad_clone(gad_tensor *t);

/* Convert to dtype: f32 <-> f64 and i64 -> float are numeric conversions;
 * float -> i64 truncates toward zero, saturates at the i64 limits and maps
 * NaN to 0; any dtype -> bool is "nonzero" (NaN is true, as PyTorch);
 * bool -> any dtype gives 0 or 1. Only a float -> float cast is on the
 * tape. The same dtype gives t itself (one more reference). A back end
 * without the conversion answers an unsupported error.
 * The new dtypes: -> f16/bf16 rounds to nearest even (from f32; f64, i64
 * and i32 are rounded to f32 first, as PyTorch); f16/bf16 -> anything is
 * exact through f32; float -> i32 and -> u8 truncate toward zero,
 * saturate at the type's limits (u8: negatives give 0) and map NaN to 0,
 * as -> i64 does (PyTorch leaves out-of-range float -> int undefined; gad
 * defines it); an integer -> a narrower integer keeps the low bits
 * (i64 300 -> u8 44, PyTorch's wrap). Casts to and from halves run on the
 * CPU's F16C / AVX-512 BF16 instructions where present. */
gad_tensor *gad_cast(gad_tensor *t, gad_dtype_t dtype);

/* ======================================================================== */
/* Views                                                                     */
/* ======================================================================== */
/* A view shares t's storage; no element is copied unless said. */

/* The new shape must have t's element count; one entry may be -1 (inferred).
 * Inferring -1 next to a zero dim works as NumPy does for [0,3] -> [0,-1].
 * gad_view never copies: it works when t's strides allow the new shape
 * (always for a contiguous t; for other layouts when the new dims only split
 * or merge runs laid out contiguously, PyTorch's rule), and is a shape error
 * otherwise; gad_reshape copies in that case. */
gad_tensor *gad_reshape(gad_tensor *t, const int64_t *shape, int rank);
gad_tensor *gad_view(gad_tensor *t, const int64_t *shape, int rank);

/* Reshape to 1-D. */
gad_tensor *gad_flatten(gad_tensor *t);

/* Reorder the axes: result axis i is t's axis axes[i]. n must equal the rank
 * and axes must be a permutation (negative allowed); a shape error
 * otherwise. */
gad_tensor *gad_permute(gad_tensor *t, const int *axes, int n);

/* Swap the last two axes (a shape error for rank < 2). */
gad_tensor *gad_transpose(gad_tensor *t);

/* Swap two axes. */
gad_tensor *gad_swapaxes(gad_tensor *t, int axis0, int axis1);

/* A per-axis slice range with Python semantics. GAD_NIL for a field means
 * "not given" (Python's None). */
#define GAD_NIL INT64_MIN
typedef struct gad_range {
    int64_t start, end, step;
} gad_range;
#ifndef __cplusplus
#define GAD_ALL ((gad_range){GAD_NIL, GAD_NIL, GAD_NIL})
#define GAD_RANGE(s, e) ((gad_range){(s), (e), GAD_NIL})
#define GAD_RANGE_STEP(s, e, st) ((gad_range){(s), (e), (st)})
#else
/* C++ has no compound literals: the same values as a braced temporary, each
 * bound converted to int64_t as the C initializer converts it. */
#define GAD_ALL (gad_range{GAD_NIL, GAD_NIL, GAD_NIL})
#define GAD_RANGE(s, e)                                                        \
    (gad_range{static_cast<int64_t>(s), static_cast<int64_t>(e), GAD_NIL})
#define GAD_RANGE_STEP(s, e, st)                                               \
    (gad_range{static_cast<int64_t>(s), static_cast<int64_t>(e),              \
               static_cast<int64_t>(st)})
#endif

/* Slice the first n axes by ranges (the rest are whole), exactly as Python
 * slices a list per axis: step 0 is an index error; negative start/end count
 * from the end; positions are clamped; a negative step walks backwards (its
 * default end means "through index 0"). n > rank is a shape error. Any
 * slice of an empty axis is empty (x[::-1] of a [0] tensor too, as in
 * Python). A reverse slice of a non-empty axis that is empty but would
 * start before the storage (start -100, step -1) is an index error, as in
 * g. */
gad_tensor *gad_slice(gad_tensor *t, const gad_range *ranges, int n);

/* Index i along axis, dropping the axis (i may be negative; an index error
 * outside [-dim, dim)). */
gad_tensor *gad_select(gad_tensor *t, int axis, int64_t i);

/* Drop axis, which must have size 1 (a shape error otherwise). */
gad_tensor *gad_squeeze(gad_tensor *t, int axis);

/* Drop every size-1 axis. */
gad_tensor *gad_squeeze_all(gad_tensor *t);

/* Insert a size-1 axis at position axis, in [-(rank+1), rank]. */
gad_tensor *gad_unsqueeze(gad_tensor *t, int axis);

/* Broadcast to shape (stride 0 on stretched axes). A target of smaller rank
 * or an incompatible dim is a shape error. */
gad_tensor *gad_broadcast_to(gad_tensor *t, const int64_t *shape, int rank);

/* A copy of x (any dtype) reversed along the axes dims[0..ndims) (negative
 * allowed; none: a plain copy), as torch.flip. An axis out of range or
 * given twice is a shape error. */
gad_tensor *gad_flip(gad_tensor *x, const int *dims, int ndims);

/* A copy of x (any dtype) with its elements rolled by shifts[i] along axis
 * dims[i], for i < n, as torch.roll: y[j] = x[j - shift] modulo the axis'
 * size, for shifts of any sign and size; an axis given twice rolls by the
 * sum. dims NULL rolls the flattened tensor by shifts[0] (n must be 1)
 * and restores the shape. n < 1, shifts NULL, or an axis out of range is
 * a shape error. */
gad_tensor *gad_roll(gad_tensor *x, const int64_t *shifts, const int *dims, int n);

/* ======================================================================== */
/* Elementwise ops                                                           */
/* ======================================================================== */
/* Float tensors only (i64 is a dtype error); the result is a new contiguous
 * tensor. IEEE semantics: log(-1) is NaN, 1/0 is inf; none are errors. */

/* ---- Half precision (issue 29): ops on f16 and bf16 tensors.
 * Every float op takes f16 and bf16 tensors on the CPU, computes in f32
 * and rounds once on output (to nearest even, as gad_cast): the result has
 * the input's dtype and the bits of the f32 op on the widened inputs,
 * rounded. The gradients of half tensors are half (gad_grad, gad_backward
 * accumulate in the gradient's dtype); gradcheck stays f64.
 *   - natively (a tile of input widened into f32 at a time: no f32 copy
 *     of the tensors, so the memory traffic is that of 2-byte data): the
 *     elementwise ops below and their gradients, sum/mean (f32 results'
 *     order, accumulated in double), amax, argmax, softmax and
 *     log_softmax, the comparisons, isnan/isinf/isfinite, where,
 *     masked_fill, tril/triu, the data movements (views, copies, gather,
 *     take, cat, stack, pad, flip, roll), gad_embedding_fused and
 *     gad_rms_norm (blocks of rows widened);
 *   - through f32 copies of the inputs (a generic fallback: correct, the
 *     same bits, a pass over memory slower): masked_ce,
 *     gated_scan, helix_block, scatter_add, sort, argsort, topk, argmin,
 *     cumsum, cumprod, clamp_tensor, pooling, interpolate, fold/unfold,
 *     conv, scaled_dot_product_attention, rope, the losses, multinomial,
 *     logits_filter and sample_logits;
 *   - composites (variance, stddev, logsumexp, ...) round after each op
 *     they are made of, as PyTorch's do.
 * Two dimensioned operands must still have one dtype (bf16 with f32 is a
 * dtype error; a 0-d one promotes, below). A half tensor on another
 * device is GAD_ERR_UNSUPPORTED. matmul (and linear) and the norm family
 * are documented with them. */

/* Binary ops broadcast; both operands must have the same float dtype and
 * device, except that a 0-d operand follows PyTorch's rule (its
 * torch.result_type, tests/reference/promotion.txt):
 *   - a 0-d tensor with a dimensioned one takes the dimensioned one's
 *     dtype (f32 [3] * a 0-d f64 is f32; bf16 [3] * a 0-d f32 is bf16),
 *     unless the dimensioned one is an integer (i64, i32, u8) and the 0-d
 *     one a float, which gives the 0-d one's dtype;
 *   - two 0-d tensors promote as torch.promote_types (f32 with f64 is
 *     f64; f32 with f16 or bf16 is f32; f16 with bf16 is f32; an integer
 *     with a float is the float);
 *   - a 0-d CPU tensor combines with a tensor on any device, the result on
 *     that device.
 * The conversions are gad_cast and gad_to_device (differentiable: each
 * input's gradient comes back in its own dtype and on its own device).
 * Two dimensioned tensors of different dtypes stay a dtype error (gad's
 * rule, stricter than PyTorch's, which would promote them), as do
 * dimensioned tensors on two devices, and an i64 result. This holds for
 * the six ops below; other ops take one dtype and one device. */
gad_tensor *gad_add(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_sub(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_mul(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_div(gad_tensor *a, gad_tensor *b);

/* Elementwise max(a, b) and min(a, b), exact (a NaN on either side gives
 * NaN). The gradient goes to the side that wins, half to each at a tie (as
 * the form (a + b +- |a - b|) / 2 would give). */
gad_tensor *gad_maximum(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_minimum(gad_tensor *a, gad_tensor *b);

/* x * s and x + s, with s converted to x's dtype first. */
gad_tensor *gad_mul_scalar(gad_tensor *x, double s);
gad_tensor *gad_add_scalar(gad_tensor *x, double s);

/* x^p (pow); p = 2 computes x*x and p = 0.5 computes sqrt(x). */
gad_tensor *gad_pow_scalar(gad_tensor *x, double p);

gad_tensor *gad_neg(gad_tensor *x);    /* -x */
gad_tensor *gad_square(gad_tensor *x); /* x*x */
gad_tensor *gad_relu(gad_tensor *x);   /* max(x, 0); NaN gives 0, as g */
gad_tensor *gad_tanh(gad_tensor *x);
gad_tensor *gad_exp(gad_tensor *x);
gad_tensor *gad_log(gad_tensor *x);
gad_tensor *gad_sqrt(gad_tensor *x);
gad_tensor *gad_abs(gad_tensor *x);
/* +1 if x > 0, -1 if x < 0, else 0 (NaN and -0 give 0). */
gad_tensor *gad_sign(gad_tensor *x);
gad_tensor *gad_sigmoid(gad_tensor *x); /* 1 / (1 + exp(-x)) */
gad_tensor *gad_silu(gad_tensor *x);    /* x * sigmoid(x) */
/* The tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), which is
 * PyTorch's gelu(x, approximate="tanh"); PyTorch's default, the exact erf
 * form, is gad_gelu_erf (or gad_gelu_ex(x, "none")). */
gad_tensor *gad_gelu(gad_tensor *x);
/* x if x > 20, else log(1 + exp(x)). */
gad_tensor *gad_softplus(gad_tensor *x);
/* x if x >= 0, else slope * x. */
gad_tensor *gad_leaky_relu(gad_tensor *x, double slope);
/* min(max(x, lo), hi); lo > hi or a NaN bound is a domain error. */
gad_tensor *gad_clamp(gad_tensor *x, double lo, double hi);

/* ---- Math (issue 27): trigonometric, error and exponential functions,
 * activations. Float only; PyTorch's names, results and special values
 * (IEEE 754's: sin(inf) is NaN, log1p(-1) is -inf, atan2(+-0, -0) is +-pi,
 * ...). Their f32 kernels are vectorized and within 2 ulp of the correctly
 * rounded result (measured over a sweep of the float range: docs/vmath.md);
 * f64 is libm's. Gradients as PyTorch's, twice differentiable where the
 * function is smooth. */
gad_tensor *gad_sin(gad_tensor *x);
gad_tensor *gad_cos(gad_tensor *x);
gad_tensor *gad_tan(gad_tensor *x);
gad_tensor *gad_asin(gad_tensor *x); /* NaN outside [-1, 1] */
gad_tensor *gad_acos(gad_tensor *x); /* NaN outside [-1, 1] */
gad_tensor *gad_atan(gad_tensor *x);
gad_tensor *gad_erf(gad_tensor *x);
gad_tensor *gad_erfc(gad_tensor *x);        /* 1 - erf(x), accurate for large x */
gad_tensor *gad_rsqrt(gad_tensor *x);       /* 1 / sqrt(x) */
gad_tensor *gad_reciprocal(gad_tensor *x);  /* 1 / x */
gad_tensor *gad_log1p(gad_tensor *x);       /* log(1 + x), accurate near 0 */
gad_tensor *gad_expm1(gad_tensor *x);       /* exp(x) - 1, accurate near 0 */
gad_tensor *gad_log2(gad_tensor *x);
gad_tensor *gad_exp2(gad_tensor *x);
/* x if x > 0, else alpha (exp(x) - 1) (PyTorch's default alpha is 1); the
 * gradient at 0 is alpha, as PyTorch's. */
gad_tensor *gad_elu(gad_tensor *x, double alpha);
/* scale elu(x, alpha) with PyTorch's constants, alpha = 1.6732632423543772,
 * scale = 1.0507009873554805. */
gad_tensor *gad_selu(gad_tensor *x);
gad_tensor *gad_mish(gad_tensor *x); /* x tanh(softplus(x)) */
/* min(max(x, min_val), max_val) (PyTorch's defaults are -1 and 1), with
 * gradient 1 strictly inside (min_val, max_val), 0 on the bounds, as
 * PyTorch's; min_val > max_val or a NaN bound is a domain error. */
gad_tensor *gad_hardtanh(gad_tensor *x, double min_val, double max_val);
/* relu6(x + 3) / 6; gradient 1/6 strictly inside (-3, 3). */
gad_tensor *gad_hardsigmoid(gad_tensor *x);
/* x relu6(x + 3) / 6; gradient 0 below -3, x/3 + 1/2 on [-3, 3], 1 above. */
gad_tensor *gad_hardswish(gad_tensor *x);
/* gelu, exact: x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), PyTorch's default. */
gad_tensor *gad_gelu_erf(gad_tensor *x);
/* PyTorch's gelu(x, approximate): "none" (or NULL), the exact form
 * (gad_gelu_erf), or "tanh" (gad_gelu); another string is a domain error. */
gad_tensor *gad_gelu_ex(gad_tensor *x, const char *approximate);
/* atan2(y, x), the angle of the point (x, y) in [-pi, pi], with
 * broadcasting as gad_add; the gradient at (0, 0) is NaN, as PyTorch's. */
gad_tensor *gad_atan2(gad_tensor *y, gad_tensor *x);
/* x^e elementwise, with broadcasting as gad_add (x^0 = 1, even for NaN;
 * a negative x to a non-integer power is NaN). Gradients as PyTorch's:
 * d/dx = e x^(e-1), 0 where e = 0; d/de = x^e log(x), 0 where x = 0 and
 * e >= 0, NaN where x < 0. */
gad_tensor *gad_pow(gad_tensor *x, gad_tensor *e);

/* ======================================================================== */
/* Comparisons and selection                                                 */
/* ======================================================================== */
/* PyTorch's ops of the same names (issue 27). Comparisons, logical ops,
 * tests and any/all return GAD_BOOL masks and are never on the tape (their
 * inputs may require grad); where, masked_fill, tril, triu and
 * clamp_tensor are differentiable in their float operands. Operands
 * broadcast as binary elementwise ops do (gad_add); their dtypes must agree
 * except that a 0-d operand follows PyTorch's result_type (as gad_add says:
 * a 0-d tensor of a higher category, bool < integer < float, gives its
 * dtype; two 0-d ones promote as torch.promote_types),
 * and a 0-d CPU operand is read on the other operands' device. A back end
 * without the kernels answers the unsupported error. */

/* a == b, a != b, a < b, a <= b, a > b, a >= b elementwise: a bool tensor
 * of the broadcast shape. Any dtype (f32, f64, i64, bool; bool compares as
 * 0 < 1). NaN is unequal to everything, itself included (ne gives true,
 * the others false). */
gad_tensor *gad_eq(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_ne(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_lt(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_le(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_gt(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_ge(gad_tensor *a, gad_tensor *b);

/* x compared with the scalar s (torch.eq(x, s) and friends), a bool tensor
 * of x's shape. As PyTorch types a Python number: for a float x, s is
 * rounded to x's dtype first (an f32 x == 0.1 compares with 0.1f); for an
 * i64 or bool x, an integral s within the i64 range compares exactly, and
 * any other s (2.5, inf, NaN) compares with x converted to f32. */
gad_tensor *gad_eq_scalar(gad_tensor *x, double s);
gad_tensor *gad_ne_scalar(gad_tensor *x, double s);
gad_tensor *gad_lt_scalar(gad_tensor *x, double s);
gad_tensor *gad_le_scalar(gad_tensor *x, double s);
gad_tensor *gad_gt_scalar(gad_tensor *x, double s);
gad_tensor *gad_ge_scalar(gad_tensor *x, double s);

/* Logical and, or, xor (broadcast) and not, bool results. Any dtypes, each
 * operand's own (they need not agree): nonzero is true, NaN included. */
gad_tensor *gad_logical_and(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_logical_or(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_logical_xor(gad_tensor *a, gad_tensor *b);
gad_tensor *gad_logical_not(gad_tensor *x);

/* Whether any (all) element is true (nonzero, NaN included; any dtype),
 * over the n given axes with gad_sum's conventions (negative axes;
 * n = 0 reduces nothing; keepdims keeps the reduced axes as 1): a bool
 * tensor. An empty reduction gives false (any) and true (all). */
gad_tensor *gad_any(gad_tensor *x, const int *axes, int n, int keepdims);
gad_tensor *gad_all(gad_tensor *x, const int *axes, int n, int keepdims);
/* The same over every element: a 0-d bool tensor (torch.any(x)). */
gad_tensor *gad_any_all(gad_tensor *x);
gad_tensor *gad_all_all(gad_tensor *x);

/* Elementwise tests of floats, bool tensors of x's shape (an i64 or bool x
 * is never NaN or infinite: false, false, true). */
gad_tensor *gad_isnan(gad_tensor *x);
gad_tensor *gad_isinf(gad_tensor *x);
gad_tensor *gad_isfinite(gad_tensor *x);

/* cond ? a : b elementwise (torch.where(cond, a, b)), the three broadcast
 * together. cond must be bool (a dtype error otherwise); a and b any one
 * dtype. Elements are moved, not computed: NaN and -0 pass unchanged.
 * Differentiable in a and b: a's gradient is gy where cond holds and 0
 * elsewhere (summed back to a's shape), b's the other way round. */
gad_tensor *gad_where(gad_tensor *cond, gad_tensor *a, gad_tensor *b);

/* x with value where mask is true (torch.masked_fill): x and mask
 * broadcast together and the result has their broadcast shape; mask must
 * be bool. value is converted to x's dtype as gad_full converts it (for an
 * i64 x a NaN or out-of-range value is a domain error). Differentiable in
 * x: its gradient is gy where the mask is false, 0 where filled. */
gad_tensor *gad_masked_fill(gad_tensor *x, gad_tensor *mask, double value);

/* The lower (tril) or upper (triu) triangle of the matrices of x's last
 * two dims (rank >= 2, a shape error otherwise), as torch.tril/triu:
 * element [..., i, j] is kept where j - i <= diagonal (tril) or j - i >=
 * diagonal (triu), 0 elsewhere; diagonal 0 is the main diagonal, > 0 above
 * it. Any dtype; differentiable (the gradient is the same triangle of
 * gy). */
gad_tensor *gad_tril(gad_tensor *x, int64_t diagonal);
gad_tensor *gad_triu(gad_tensor *x, int64_t diagonal);

/* min(max(x, min), max) elementwise with tensor bounds (torch.clamp with
 * tensors): x, min and max broadcast together and the result has their
 * broadcast shape. min or max may be NULL (not both: a domain error). One
 * dtype: f32, f64 or i64 (bool is a dtype error, as PyTorch's clamp; a
 * 0-d bound of a higher kind promotes, as gad_where's operands). NaN in x
 * or in a bound gives NaN; where min > max the result is max. Floats are
 * differentiable in all three (i64: no gradient), with PyTorch's gradients: x
 * gets gy where min <= x <= max; min where x < min (and min < max, when max
 * is given); max where x > max (or max < min, when min is given); each
 * summed back to its operand's shape. */
gad_tensor *gad_clamp_tensor(gad_tensor *x, gad_tensor *min, gad_tensor *max);

/* ======================================================================== */
/* Reductions                                                                */
/* ======================================================================== */
/* Axes may be negative; a duplicate or out-of-range axis is a shape error;
 * rank 0 accepts no axis. keepdims keeps reduced axes with size 1. */

/* Sum and mean over the n given axes (n = 0 reduces nothing: the identity).
 * An empty reduction sums to 0; its mean is NaN. Float only. A broadcast
 * view is not copied out: the distinct elements are summed (in the order a
 * packed tensor of them would be), and an axis the view broadcasts (stride
 * 0) of size k that is reduced multiplies that sum by k, rounded once (a
 * mean divides by the distinct count), so a [2^40] view of one element
 * costs one element; the last bit may differ from the sum of a packed copy.
 * Tensors that broadcast no axis are summed as they always were. */
gad_tensor *gad_sum(gad_tensor *x, const int *axes, int n, int keepdims);
gad_tensor *gad_mean(gad_tensor *x, const int *axes, int n, int keepdims);

/* Sum and mean of all elements, as a rank-0 tensor. */
gad_tensor *gad_sum_all(gad_tensor *x);
gad_tensor *gad_mean_all(gad_tensor *x);

/* Population variance (mean squared deviation) and its square root. */
gad_tensor *gad_variance(gad_tensor *x, const int *axes, int n, int keepdims);
gad_tensor *gad_stddev(gad_tensor *x, const int *axes, int n, int keepdims);

/* Maximum along one axis. NaN is skipped (an all-NaN slice gives -inf); an
 * empty axis is a shape error. Float only. */
gad_tensor *gad_amax(gad_tensor *x, int axis, int keepdims);

/* Index (i64) of the maximum along one axis: the first on ties; NaN never
 * wins, so an all-NaN slice gives 0. An empty axis is a shape error.
 * f32, f64 and i64 (exactly; bool is a dtype error, as torch.argmax). */
gad_tensor *gad_argmax(gad_tensor *x, int axis, int keepdims);

/* log(sum(exp(x))) along axis, computed stably (the max is subtracted).
 * Over an empty axis it is -inf (log 0, as torch.logsumexp). */
gad_tensor *gad_logsumexp(gad_tensor *x, int axis, int keepdims);

/* softmax and log_softmax along any axis (an empty axis is a shape error). */
gad_tensor *gad_softmax(gad_tensor *x, int axis);
gad_tensor *gad_log_softmax(gad_tensor *x, int axis);

/* ---- Sorting, top-k, argmin, cumulative sums and products (issue 27) ----
 * Along one axis dim (negative counts from the end), with PyTorch's
 * conventions and its CPU dtypes: sort, argsort, cumsum and cumprod take
 * f32, f64, i64 and bool; topk and argmin f32, f64 and i64 (bool is a
 * dtype error, as in PyTorch); rank 0 or a dim out of range is a shape
 * error. The order is PyTorch's: NaN above +inf (ascending: last;
 * descending: first), -0 equal to +0; integers in their exact order
 * (false < true). Results of i64 and bool are not differentiable. */

/* x sorted along dim, ascending or (descending != 0) descending, and in
 * *indices (when not NULL; i64, x's shape, owned by the scope) the position
 * each value came from. The sort is stable (equal values keep their order,
 * in both directions): torch.sort(stable=True). The values have x's dtype
 * (any); float values are differentiable (the gradient goes back to where
 * each value came from). */
gad_tensor *gad_sort(gad_tensor *x, int dim, int descending, gad_tensor **indices);
/* sort's indices alone (i64, no gradient); stable, as torch.argsort(stable=True).
 * Any dtype. */
gad_tensor *gad_argsort(gad_tensor *x, int dim, int descending);

/* The k largest (largest != 0) or smallest values along dim, and in
 * *indices (when not NULL, i64) their positions; shape x's with k on dim.
 * NaN counts as the largest value (torch.topk). The result is always sorted
 * (best first), whatever `sorted` says (PyTorch leaves the order open when
 * it is 0), and among equal values the lower position comes first (PyTorch
 * leaves that open). k outside [0, size of dim] is an index error. f32,
 * f64 and i64 (bool: a dtype error, as torch.topk on the CPU); float values
 * are differentiable. */
gad_tensor *gad_topk(gad_tensor *x, int64_t k, int dim, int largest, int sorted,
                     gad_tensor **indices);

/* Index (i64) of the minimum along axis, the first on ties; a NaN wins (the
 * first NaN's index), as torch.argmin (gad_argmax, which follows g, skips
 * NaN instead). An empty axis is a shape error. f32, f64 and i64 (bool: a
 * dtype error, as torch.argmin). */
gad_tensor *gad_argmin(gad_tensor *x, int axis, int keepdims);

/* Running sum and product along dim (torch.cumsum, torch.cumprod), x's shape;
 * f32 accumulates in double. i64 and bool x give an i64 result (PyTorch's:
 * mask.cumsum(-1) counts), which wraps around on overflow as int64 does,
 * with no gradient. Floats are differentiable; cumprod's gradient never
 * divides by x, so it is exact where x holds one or several zeros, and it is
 * differentiable again under GAD_CREATE_GRAPH (as cumsum's). */
gad_tensor *gad_cumsum(gad_tensor *x, int dim);
gad_tensor *gad_cumprod(gad_tensor *x, int dim);

/* ---- Sampling (issue 27) ---- */

/* n draws of a category (i64) from each row of w, 1-D [K] (out [n]) or 2-D
 * [R, K] (out [R, n]), with probability proportional to the weights (they
 * need not sum to 1), as torch.multinomial: with replacement, or without
 * (each category at most once per row, drawn in order). The draws come from
 * rng (one 64-bit number taken per call): a seed gives the same draws on any
 * thread count. Without replacement, once a row's positive weights are all
 * drawn its zero-weight categories follow, lowest first (PyTorch draws them
 * too, in an order it leaves open). Errors: w not f32/f64 (dtype); rank not
 * 1 or 2, K = 0, n < 1, or n > K without replacement (shape); rng NULL, a
 * negative, NaN or infinite weight, or a row summing to 0 (domain, naming
 * the row and the value). No gradient. */
gad_tensor *gad_multinomial(gad_tensor *w, int64_t n, int replacement, gad_rng *rng);

/* How gad_sample_logits picks a token:
 * - temperature: the logits are divided by it; 0 is greedy (the argmax of the
 *   logits, rng unused); negative, NaN or infinite is a domain error.
 * - top_k: keep the k largest logits of a row (every value equal to the k-th
 *   too); 0 keeps all; negative is a domain error.
 * - top_p: nucleus sampling (Holtzman et al. 2020, "The curious case of
 *   neural text degeneration"): after top_k, keep the smallest set of the
 *   largest logits whose softmax probability reaches top_p (every value equal
 *   to the last one kept too); 0 or 1 keeps all; outside [0, 1] is a domain
 *   error.
 * A zeroed struct is greedy; {1, 0, 0} samples from the full softmax. */
typedef struct gad_sample_opts {
    double temperature;
    int64_t top_k;
    double top_p;
} gad_sample_opts;

/* One token per row of logits, 1-D [V] (a 0-d i64 result) or 2-D [R, V]
 * (i64 [R]): drawn from softmax(gad_logits_filter(logits, opts)) with rng,
 * or the argmax when opts->temperature is 0 (opts NULL: temperature 1, no
 * filter). Reproducible per seed. Errors as gad_multinomial's and the
 * options' above; a row that is all -inf (or NaN) after the filter is a
 * domain error. No gradient. */
gad_tensor *gad_sample_logits(gad_tensor *logits, const gad_sample_opts *opts, gad_rng *rng);

/* logits / temperature (1 when 0) with -inf at every value the top_k and
 * top_p of opts drop (the masks gad_sample_logits samples under), x's shape
 * and dtype, 1-D or 2-D; no gradient. */
gad_tensor *gad_logits_filter(gad_tensor *logits, const gad_sample_opts *opts);

/* ======================================================================== */
/* Linear algebra                                                            */
/* ======================================================================== */

/* Matrix product with NumPy's rules: [.., m, k] @ [.., k, n] -> [.., m, n],
 * batch dims broadcast. A 1-D left operand is a row ([k] @ [k, n] -> [n]),
 * a 1-D right operand a column ([m, k] @ [k] -> [m]; [k] @ [k] -> []).
 * Rank 0 is a shape error, so is an inner-dim mismatch (the message names
 * both shapes); mixed dtypes or i64 are a dtype error. Float only. Large
 * products go to CBLAS when gad was built with it, the rest to gad's blocked
 * kernels. On x86 those count subnormal values (below FLT_MIN or DBL_MIN)
 * as zero, in operands and result, as PyTorch's set_flush_denormal(True)
 * does: subnormals would cost a microcode assist per multiply. The caller's
 * floating-point mode is left as it was.
 *
 * Half precision (issue 29; CPU only): two GAD_F16 or two GAD_BF16 operands
 * give that dtype. The products are exact in f32 and summed in f32 (never
 * CBLAS); each element is rounded once to the half dtype (nearest even, the
 * NaNs of gad_cast). The kernel is chosen at run time: AMX-BF16 tiles (on
 * Linux after arch_prctl(ARCH_REQ_XCOMP_PERM), asked once per process),
 * AVX-512 BF16 (VDPBF16PS, where it out-runs f32 FMAs on the core), else
 * gad's f32 kernels on panels converted while packing (all f16 products:
 * AVX512-FP16 sums in f16). Subnormals: VDPBF16PS and TDPBF16PS treat bf16
 * subnormal inputs as zero and flush subnormal results to zero (Intel SDM,
 * "DAZ, FTZ, RNE" for these instructions), and the f32 kernels do the same
 * with FTZ/DAZ, so a subnormal bf16 operand counts as 0 on every path; f16
 * subnormals are normal numbers in f32 and count in full. The bits may
 * differ between kernels (the order of the sums), never with the thread
 * count. Gradients of half operands are half (the same products). */
gad_tensor *gad_matmul(gad_tensor *a, gad_tensor *b);

/* Offload (g's rule, off at first): with it on, a large f32 product of CPU
 * tensors, gad_matmul's and so the two of its backward, is computed by the
 * GPUs and its result comes back to the CPU; the tensors stay where they
 * are. Large means all three of M*N*K >= 2^20, M*N*K*batch >= 2^28 and
 * max(M, N, K) >= 512. A rank-2 x rank-2, rank-3 x rank-2 or rank-3 x
 * rank-3 product (b's batch a's or 1) is split: the CPU computes the first
 * floor(units * share) rows (rank 2) or batch entries, the GPUs the rest,
 * at once; when the GPUs' part is itself below the rule, or the split does
 * not apply, the GPUs compute all of it, split over them in device order.
 * Any GPU error makes the CPU compute the product, and leaves no error.
 * Products on a GPU tensor are not affected (they run there anyway).
 * gad_set_offload returns the previous setting. gad_set_offload_cpu_share
 * sets share in [0, 1] (0: the GPUs alone) and returns the previous one; a
 * negative value (or NaN, or above 1) restores g's 1/(gpus + 1).
 * gad_set_offload_devices chooses the GPUs (devs[0..n), devices other than
 * the CPU; n = 0: none; n < 0: every CUDA device, the default); a device
 * error and nothing changed for a device that is not one, a domain error
 * for devs NULL with n > 0, more than GAD_MAX_DEVICES, or a device listed
 * twice. */
int gad_set_offload(int on);
double gad_set_offload_cpu_share(double share);
gad_status gad_set_offload_devices(const gad_device *devs, int n);

/* ======================================================================== */
/* Indexing and joining                                                      */
/* ======================================================================== */
/* Index tensors are i64 (a dtype error otherwise). A negative index wraps
 * once (+dim); anything still outside [0, dim) is an index error naming the
 * index and the bound (for an index on a CUDA device, reported at the next
 * synchronising call: see "Devices"). */

/* gather, take and index_select take f32, f64 or i64 data x; an i64
 * result is off the tape (integers have no gradient), so that labels or
 * tokens are picked as integers, without a round trip through f32. */

/* out[..i..] = x[..index[..i..]..] along axis. index has x's rank; off the
 * axis each index dim is at most x's (as PyTorch), or x's is 1 and
 * broadcasts. The output has index's shape. */
gad_tensor *gad_gather(gad_tensor *x, int axis, gad_tensor *index);

/* A copy of dst with src added at the index positions along axis
 * (duplicates add). index and src have the same shape and dst's rank; off
 * the axis index dims must not exceed dst's. */
gad_tensor *gad_scatter_add(gad_tensor *dst, int axis, gad_tensor *index,
                            gad_tensor *src);

/* NumPy's take_along_axis with the axis dropped: index has x's shape without
 * `axis` and picks one element per position; the output has index's shape. */
gad_tensor *gad_take(gad_tensor *x, int axis, gad_tensor *index);

/* Whole slices of x along axis picked by index (any shape, as NumPy's
 * take with an axis; torch.index_select for a 1-D index): the output is
 * x.shape[:axis] + index.shape + x.shape[axis+1:], e.g. the rows idx [B]
 * of x [N, D] give [B, D] (axis 0), and of labels [N] give [B]. A result
 * of rank above GAD_MAX_RANK is a shape error. Made of a reshape, a
 * broadcast view of index and gad_gather, so its gradient (float x) is
 * gather's: rows picked twice add. */
gad_tensor *gad_index_select(gad_tensor *x, int axis, gad_tensor *index);

/* Join n tensors along an existing axis (cat) or a new one (stack). Same
 * dtype (f32, f64 or i64) and rank; other dims equal. n = 0 is a shape
 * error. */
gad_tensor *gad_cat(gad_tensor *const *ts, int n, int axis);
gad_tensor *gad_stack(gad_tensor *const *ts, int n, int axis);


/* ======================================================================== */
/* Automatic differentiation                                                 */
/* ======================================================================== */
/* gad records a tape as ops run. A leaf is a float tensor marked with
 * gad_requires_grad: it owns a gradient slot. Every op with an input on the
 * tape (a leaf, or a result of such an op) records a node, views included,
 * unless no-grad mode is on. Tensors off the tape are constants.
 *
 * gad_grad is functional (like JAX's grad, or torch.autograd.grad): it
 * returns this call's gradients only. gad_backward accumulates into the leaf
 * slots (like PyTorch's .backward()) until gad_zero_grad. Gradients follow
 * these conventions at kinks: relu'(0) = 0, abs'(0) = 0, leaky_relu'(0) = 1,
 * clamp is differentiable (1) at its bounds, amax sends the gradient to the
 * first maximum (never to NaN), maximum/minimum split it half and half at a
 * tie. The graph lives as long as a tensor that reaches it. */

/* Mark t as a leaf that requires grad, with an empty gradient slot (a no-op
 * when t already is a leaf or on the tape). Returns t itself (no new
 * reference). A dtype error and NULL for an i64 tensor. */
gad_tensor *gad_requires_grad(gad_tensor *t);

/* 1 if t is on the tape (a leaf or a result of a tracked op), else 0. */
int gad_is_tracked(const gad_tensor *t);

/* 1 if t is a leaf (owns a gradient slot), else 0. */
int gad_is_leaf(const gad_tensor *t);

/* A tensor with t's values (sharing storage) that is off the tape. */
gad_tensor *gad_detach(gad_tensor *t);

/* t's values, on the tape with a zero gradient: the path through it
 * contributes nothing (unlike detach, the result still requires grad when t
 * does). */
gad_tensor *gad_stop_gradient(gad_tensor *t);

/* No-grad mode for this thread: between begin and end, ops record nothing.
 * Calls nest. gad_grad_enabled returns 0 inside. */
void gad_no_grad_begin(void);
void gad_no_grad_end(void);
int gad_grad_enabled(void);

/* Flags for gad_grad_ex. GAD_CREATE_GRAPH records the backward pass itself,
 * so that the returned gradients are differentiable again (grad of grad,
 * Hessian-vector products). */
#define GAD_CREATE_GRAPH 1u

/* Gradients of the scalar `out` (one element, float) with respect to
 * inputs[0..n), written to grads[0..n) (packed tensors of the inputs'
 * shapes, owned as rule 2 says). An input is any tensor on the tape, as in
 * torch.autograd.grad: a leaf, or the result of an op (an activation), for
 * which grads[i] is d out / d inputs[i] with everything else that out
 * depends on held as it is (the total gradient reaching that tensor; when
 * it is also an ancestor of another input, that input's gradient still
 * includes the path through it). Before the reverse pass, the slot of every
 * leaf reachable from out and of every leaf input is cleared; afterwards
 * the slots hold this call's gradients (the pass runs to the leaves also
 * when every input is an activation). An input that out does not reach, a
 * leaf or not, gets zeros. Errors: a shape error when out has more than one
 * element, a dtype error for a non-float out, a domain error when an input
 * is not on the tape (a constant); grads[i] are then NULL. Each shared
 * subexpression's VJP runs once per call; the walk is iterative, so a graph
 * of millions of nodes needs no stack. After a failed pass (a memory error
 * midway) the reached leaves' slots are unspecified (cleared or partial). */
gad_status gad_grad(gad_tensor *out, gad_tensor *const *inputs, int n,
                    gad_tensor **grads);

/* gad_grad with a seed (the gradient of out; out's shape and dtype; NULL
 * means ones, and then out must have one element) and flags. With a seed, out
 * may have any shape: this is the vector-Jacobian product seed^T J. Inputs
 * may be leaves or results of ops, as for gad_grad; with GAD_CREATE_GRAPH
 * the gradient with respect to an activation is differentiable too. */
gad_status gad_grad_ex(gad_tensor *out, gad_tensor *seed,
                       gad_tensor *const *inputs, int n, gad_tensor **grads,
                       unsigned flags);

/* Accumulate the gradient of the scalar out into the slot of every leaf it
 * reaches (slot = slot + g). Errors as gad_grad. */
gad_status gad_backward(gad_tensor *out);

/* The gradient slot of a leaf: a new reference (owned as rule 2 says), or
 * NULL when the slot is empty. A domain error (and NULL) when t is not a
 * leaf. */
gad_tensor *gad_leaf_grad(gad_tensor *t);

/* 1 if t is a leaf whose gradient slot holds a gradient, else 0 (never an
 * error; allocates nothing). */
int gad_leaf_has_grad(const gad_tensor *t);

/* Empty the slots of the given leaves (non-leaves and NULL are skipped). */
void gad_zero_grad(gad_tensor *const *params, int n);

/* Hessian-vector product: hv[i] = sum_j (d^2 loss / dx_i dx_j) v[j], for the
 * scalar loss built from the leaves inputs[0..n); v[i] has inputs[i]'s shape.
 * Two reverse passes (the first with GAD_CREATE_GRAPH). Inputs must be
 * leaves (a domain error otherwise; gad_grad_ex takes activations). */
gad_status gad_hvp(gad_tensor *loss, gad_tensor *const *inputs,
                   gad_tensor *const *v, int n, gad_tensor **hv);

/* Forward-mode product: *jv = sum_i J_i v[i], the directional derivative of
 * out (any shape) along v, where J_i = d out / d inputs[i]. Computed by the
 * double-VJP trick: u -> J^T u is linear in u, and its VJP with v is J v. */
gad_status gad_jvp(gad_tensor *out, gad_tensor *const *inputs,
                   gad_tensor *const *v, int n, gad_tensor **jv);

/* Anomaly mode (process-wide, off by default): the reverse pass stops at the
 * first VJP that produces a NaN or Inf, with a domain error naming that op
 * and the op that created the offending input. Returns the previous
 * setting. */
int gad_set_anomaly(int on);

/* Write the graph that reaches out as Graphviz DOT: one box per leaf (with
 * its shape), one ellipse per op (its name and output shape), edges from
 * inputs to outputs. Returns GAD_OK or an io error. */
gad_status gad_graph_dot(gad_tensor *out, FILE *f);

/* ------------------------------------------------------ gradient checking */

/* A function of tensors for gad_gradcheck: returns a tensor (any shape,
 * float) computed from in[0..n) with gad ops. */
typedef gad_tensor *(*gad_fn)(void *ctx, gad_tensor *const *in, int n);

typedef struct gad_gradcheck_opts {
    double eps;  /* central-difference step (0: 1e-6 for f64, 1e-3 for f32) */
    double atol; /* pass if |analytic - numeric| <= atol + rtol * |numeric| */
    double rtol; /* (0 and 0: 1e-6 and 1e-4 for f64, 1e-3 and 1e-2 for f32) */
    uint64_t seed; /* for the random projection of a non-scalar output */
} gad_gradcheck_opts;

typedef struct gad_gradcheck_result {
    int passed;     /* 1 when every element is within tolerance */
    int input;      /* the input holding the worst element */
    int64_t index;  /* its row-major position */
    double analytic, numeric; /* the two derivatives there */
    double abs_err, rel_err;  /* |a - n| and |a - n| / max(|a|, |n|, 1e-3) */
    int64_t checked;          /* elements compared */
} gad_gradcheck_result;

/* Check the VJP of f against central finite differences: L = sum(w * f(x))
 * with fixed random weights w (just f(x) when it has one element), its
 * gradient by gad_grad versus (L(x + eps e_k) - L(x - eps e_k)) / 2 eps for
 * every element k of every input that requires grad (float inputs that are
 * not leaves are held constant). Inputs are not modified. Use f64 inputs for
 * a tight check. Returns GAD_OK when the check ran (see res->passed), else
 * the error's kind; inputs none of which is a leaf are a domain error (there
 * would be nothing to check). opts may be NULL for defaults. */
gad_status gad_gradcheck(gad_fn f, void *ctx, gad_tensor *const *inputs, int n,
                         const gad_gradcheck_opts *opts,
                         gad_gradcheck_result *res);

/* The same check one order up: the gradient of x -> sum_i <u_i, dL/dx_i>
 * (first derivatives taken with GAD_CREATE_GRAPH, u fixed random) against
 * finite differences of the first derivatives. */
gad_status gad_gradgradcheck(gad_fn f, void *ctx, gad_tensor *const *inputs,
                             int n, const gad_gradcheck_opts *opts,
                             gad_gradcheck_result *res);

/* The op registry: the number of ops that record tape nodes and their
 * names (NULL out of range), for tools and tests. */
int gad_op_count(void);
const char *gad_op_name(int op);

/* ======================================================================== */
/* Neural-network layers and losses (src/nn)                                 */
/* ======================================================================== */
/* Written with the ops above, so every one is on the tape. */

/* How a loss reduces its per-element values. */
typedef enum gad_reduction {
    GAD_REDUCE_MEAN = 0, /* divide the sum by the number of elements */
    GAD_REDUCE_SUM = 1,
    GAD_REDUCE_NONE = 2  /* keep one value per element (or per row) */
} gad_reduction;

/* x @ w (+ b): w is [in, out] (not PyTorch's [out, in]), x is [..., in]
 * (rank >= 1; a 1-D x gives [out]), b (NULL for none) is [out]. A shape
 * error names x's and w's shapes when x's last dim is not w's first or w is
 * not rank 2. x, w (and b) may be f16 or bf16 (one dtype): the product is
 * gad_matmul's half-precision one. */
gad_tensor *gad_linear(gad_tensor *x, gad_tensor *w, gad_tensor *b);

/* The activations gad_linear_act applies (the ops of the same names). */
typedef enum gad_act {
    GAD_ACT_NONE = 0,     /* none: gad_linear */
    GAD_ACT_RELU = 1,     /* gad_relu */
    GAD_ACT_GELU = 2,     /* gad_gelu, the tanh form */
    GAD_ACT_GELU_ERF = 3, /* gad_gelu_erf, PyTorch's default gelu */
    GAD_ACT_SILU = 4      /* gad_silu */
} gad_act;

/* act(x @ w + b) as one tape node, the bias and activation of a layer fused
 * with its product: gad_linear's arguments and errors (under the name
 * "linear_act"), and act one of gad_act (a domain error otherwise). The
 * values are those of gad_relu(gad_linear(x, w, b)) and its kind, bit for
 * bit (x's rows through the same GEMM, the same activation kernels); b's
 * gradient sums the rows in blocks, so it may differ from gad_sum's in the
 * last bits. Instead of three passes over the product and three tensors,
 * forward makes one pass (bias and activation over blocks of rows while
 * they are in cache) and the backward one (the activation's derivative and
 * b's gradient together) before its two products; the node keeps one
 * [..., out] tensor besides x, w and b (the output for NONE and RELU, the
 * pre-activation for the others). gad_linear is this with GAD_ACT_NONE.
 * A 1-D x and f16/bf16 tensors take the composition (same values); under
 * GAD_CREATE_GRAPH the backward goes through the composition too, so its
 * gradients are differentiable. A device without the fused kernels (CUDA
 * for now) runs gad_linear as gad_matmul and gad_add, and refuses
 * gad_linear_act with an unsupported error. */
gad_tensor *gad_linear_act(gad_tensor *x, gad_tensor *w, gad_tensor *b, gad_act act);

/* (pred - target)^2, reduced. target is held constant (detached); the two
 * must have the same shape (a shape error otherwise, unlike g, which
 * broadcast them silently). */
gad_tensor *gad_mse_loss(gad_tensor *pred, gad_tensor *target, gad_reduction red);

/* -log_probs[i, targets[i]]: log_probs [B,C] float, targets [B] i64 (a
 * dtype error otherwise); a class outside [0, C) is an index error naming
 * it. MEAN divides by B; NONE gives [B]. */
gad_tensor *gad_nll_loss(gad_tensor *log_probs, gad_tensor *targets,
                         gad_reduction red);

/* nll_loss(log_softmax(logits, -1), targets): logits [B,C]; C = 0 (no
 * classes) is a shape error. MEAN and SUM are one fused node
 * (gad_masked_ce with every weight 1; SUM multiplies its mean by B), whose
 * forward and backward are one pass over the logits each; NONE is the
 * composition. */
gad_tensor *gad_cross_entropy(gad_tensor *logits, gad_tensor *targets,
                              gad_reduction red);

/* ---- losses with PyTorch's options (issue 27: cross_entropy_ex, bce) ---- */

/* F.cross_entropy(logits, target, weight, ignore_index=, reduction=,
 * label_smoothing=) as PyTorch: logits [C] or [N, C, d...] (the classes on
 * dim 1), f32 or f64. target is either i64 class indices of logits' shape
 * without dim 1 (a class outside [0, C) that is not ignore_index is an
 * index error; PyTorch's default ignore_index is -100), or probabilities of
 * logits' shape and dtype (ignore_index then unused). weight (NULL: none)
 * is [C], held constant. label_smoothing e in [0, 1] mixes the target with
 * the uniform distribution: (1 - e) of the loss is the target's, e / C each
 * class's. NONE gives logits' shape without dim 1; SUM the total; MEAN, for
 * class indices, divides by the sum of weight[t] over the targets not
 * ignored (their count without weights; NaN when every one is ignored),
 * and for probabilities by the number of rows (N * d...). Gradients reach
 * logits and a probability target. The common case of a language model
 * (f32, MEAN, indices, no weight or smoothing) is one fused node. */
gad_tensor *gad_cross_entropy_ex(gad_tensor *logits, gad_tensor *target, gad_tensor *weight,
                                 int64_t ignore_index, gad_reduction red,
                                 double label_smoothing);

/* F.binary_cross_entropy_with_logits(x, target, weight, pos_weight=,
 * reduction=): -weight [pos_weight y log s(x) + (1 - y) log(1 - s(x))] with
 * s the sigmoid, computed as (1 - y) x + (1 + (pos_weight - 1) y)
 * softplus(-x), finite for any finite x. target has x's shape and dtype;
 * weight and pos_weight (NULL: none; pos_weight usually [C], the last dim)
 * broadcast to x's shape. Gradients reach x, target, weight and
 * pos_weight. Its errors name the op "bce_with_logits". */
gad_tensor *gad_binary_cross_entropy_with_logits(gad_tensor *x, gad_tensor *target,
                                                 gad_tensor *weight, gad_tensor *pos_weight,
                                                 gad_reduction red);

/* (x - mean) / sqrt(var + eps) over the last axis (population variance),
 * then * gain + bias when given ([D] each; NULL for none). The gradient
 * includes the variance path (SPEC D3). Rank 0 is a shape error; eps must be
 * finite and >= 0 (a domain error otherwise). */
gad_tensor *gad_layer_norm(gad_tensor *x, gad_tensor *gain, gad_tensor *bias,
                           double eps);

/* Rows of weight [V, D] picked by indices (i64, any shape): the result is
 * indices.shape + [D]. An index outside [0, V) is an index error (negative
 * ones too). The gradient scatters into weight's rows. */
gad_tensor *gad_embedding(gad_tensor *weight, gad_tensor *indices);

/* indices (i64, any shape) as f32 one-hot vectors: indices.shape + [depth].
 * An index outside [0, depth) is an index error; a negative depth a domain
 * error. Off the tape. */
gad_tensor *gad_one_hot(gad_tensor *indices, int64_t depth);

/* log pi(actions[i] | logits[i]) for a categorical policy: logits [B,C],
 * actions [B] i64; the result [B] is on the tape (SPEC D4). */
gad_tensor *gad_categorical_log_prob(gad_tensor *logits, gad_tensor *actions);

/* -sum softmax * log_softmax over the last axis: logits.shape[:-1]. C = 0
 * (no classes) is a shape error. */
gad_tensor *gad_categorical_entropy(gad_tensor *logits);

/* (x - mean) / (std + 1e-8) over all elements, population std. */
gad_tensor *gad_whiten(gad_tensor *x);

/* Inverted dropout: with training on, each element is zeroed with
 * probability p (drawn from rng) and the rest scaled by 1 / (1 - p); with
 * training off (evaluation) it returns x itself. p outside [0, 1) is a
 * domain error; rng may be NULL when training is 0 or p is 0. */
gad_tensor *gad_dropout(gad_tensor *x, double p, gad_rng *rng, int training);

/* ---- pooling (issue 28; SPEC §3.8) --------------------------------------
 * As torch.nn.functional's: x is [N, C, H, W] or [C, H, W] (2-d), [N, C, L]
 * or [C, L] (1-d), f32 or f64; the batch may be empty, no other dim. Output
 * sizes are PyTorch's: floor((n + 2 pad - dilation (k - 1) - 1) / stride) + 1,
 * rounded up in ceil_mode, where the last window must then start inside
 * the input or its left padding. */

/* The options of max and avg pooling. [0] is H and [1] is W for 2-d; the
 * 1-d ops read [0] only. Zero-filled fields are PyTorch's defaults: stride
 * 0 is the kernel's, dilation 0 is 1, padding 0, ceil_mode off,
 * count_include_pad on (exclude_pad = 1 is count_include_pad=False),
 * divisor_override 0 none. */
typedef struct gad_pool_opts {
    int64_t kernel[2];
    int64_t stride[2];
    int64_t padding[2];       /* each side; at most kernel / 2 */
    int64_t dilation[2];      /* max pooling only */
    int ceil_mode;
    int exclude_pad;          /* avg pooling: count_include_pad=False */
    int64_t divisor_override; /* avg pooling: every window's divisor */
} gad_pool_opts;

/* The max of each window (padding is -inf). When indices is not NULL it
 * gets the argmax positions (i64, the output's shape): h * W + w in the
 * input's plane (l for 1-d), as PyTorch's return_indices; NULL on error.
 * Ties go to the first position in the window, a NaN wins over numbers (the
 * last NaN), as PyTorch's CPU kernels; the gradient goes to the argmax
 * (summed where windows overlap); twice differentiable. Errors as
 * PyTorch's: kernel, stride or dilation <= 0, padding < 0 or > kernel / 2,
 * an empty non-batch dim, an output of size 0 (also for 1-d, where
 * PyTorch 1.13 returns an empty tensor). */
gad_tensor *gad_max_pool2d(gad_tensor *x, const gad_pool_opts *o, gad_tensor **indices);
gad_tensor *gad_max_pool1d(gad_tensor *x, const gad_pool_opts *o, gad_tensor **indices);

/* The mean of each window: the sum over the window inside the input,
 * divided by divisor_override when > 0, else by the window's size cut at
 * the padded input's end (with padding) or by the taps inside the input
 * (exclude_pad). A window wholly in the padding gives 0. Linear, so the
 * gradient (and its gradient) are tracked ops. dilation > 1 is a domain
 * error (PyTorch's avg pooling has none); other errors as max pooling's,
 * and a negative divisor_override. */
gad_tensor *gad_avg_pool2d(gad_tensor *x, const gad_pool_opts *o);
gad_tensor *gad_avg_pool1d(gad_tensor *x, const gad_pool_opts *o);

/* Adaptive pooling to an output of oh x ow: output (i, j) pools rows
 * [floor(i H / oh), ceil((i + 1) H / oh)) and the columns alike (PyTorch's
 * windows). An output size of 0 gives an empty tensor; a negative one is a
 * domain error. Global average pooling is gad_adaptive_avg_pool2d(x, 1, 1)
 * (a [N, C, 1, 1] result; reshape to [N, C]); its kernel sums each plane
 * as a whole. adaptive_max_pool2d's indices as max_pool2d's. */
gad_tensor *gad_adaptive_avg_pool2d(gad_tensor *x, int64_t oh, int64_t ow);
gad_tensor *gad_adaptive_max_pool2d(gad_tensor *x, int64_t oh, int64_t ow,
                                    gad_tensor **indices);

/* ---- shape ops for images (issue 28; SPEC §3.9) --------------------------- */

typedef enum gad_pad_mode {
    GAD_PAD_CONSTANT = 0,
    GAD_PAD_REFLECT = 1, /* the edge not repeated: [1 2 3] by 2 -> 3 2 [1 2 3] 2 1 */
    GAD_PAD_REPLICATE = 2,
    GAD_PAD_CIRCULAR = 3
} gad_pad_mode;

/* torch.nn.functional.pad: pads[0..npads) in PyTorch's order, (left,
 * right) pairs from the last dim backwards. Constant mode (value) pads any
 * number of dims of any dtype, and a negative pad crops; reflect, replicate
 * and circular pad the last 1-3 dims (npads 2, 4 or 6) of an input of
 * rank npads / 2 + 1 or + 2, pads >= 0, value ignored: f32, f64 or i64, and
 * bool in circular mode only (PyTorch's CPU dtypes). Errors as PyTorch's:
 * an odd npads or more pairs than dims, a reflect pad >= its dim, a circular
 * pad > its dim, a negative size after cropping, a bool reflect/replicate
 * pad; plus a non-constant pad of an empty dim. Floats are twice
 * differentiable (the gradient folds the edges back). */
gad_tensor *gad_pad(gad_tensor *x, const int64_t *pads, int npads, gad_pad_mode mode,
                    double value);

typedef enum gad_interp_mode {
    GAD_INTERP_NEAREST = 0, /* PyTorch's "nearest": src = floor(dst * scale) */
    GAD_INTERP_LINEAR = 1,  /* [N, C, L] */
    GAD_INTERP_BILINEAR = 2 /* [N, C, H, W] */
} gad_interp_mode;

/* torch.nn.functional.interpolate over the n spatial dims of x ([N, C, L]
 * or [N, C, H, W]; n = rank - 2): to size[0..n), or by scale_factor[0..n)
 * (the output floor(in * s); the sources use 1 / s, as PyTorch's default
 * recompute_scale_factor=None); exactly one of the two non-NULL. Nearest:
 * src = min(floor(dst * scale), in - 1), scale = in / out. Linear and
 * bilinear: PyTorch's source index (align_corners: dst (in - 1) / (out - 1);
 * else (dst + 0.5) scale - 0.5 clamped at 0) and weights, in x's precision.
 * align_corners with nearest is a domain error, as PyTorch's. An op of
 * its own on the pool family's kernel; its VJP (the weighted scatter) is
 * another, so twice differentiable. */
gad_tensor *gad_interpolate(gad_tensor *x, const int64_t *size, const double *scale_factor,
                            int n, gad_interp_mode mode, int align_corners);

/* torch.nn.functional.pixel_shuffle: [*, C r^2, H, W] -> [*, C, H r, W r]
 * (rank 3 to 6); pixel_unshuffle the inverse. A factor <= 0 is a domain
 * error; channels (or H and W) not divisible a shape error. Views and one
 * copy: differentiable. */
gad_tensor *gad_pixel_shuffle(gad_tensor *x, int64_t upscale_factor);
gad_tensor *gad_pixel_unshuffle(gad_tensor *x, int64_t downscale_factor);

/* The sliding blocks of unfold and fold ([0] H, [1] W): kernel > 0;
 * dilation and stride 0 mean 1; padding >= 0 (zeros, both sides). */
typedef struct gad_fold_opts {
    int64_t kernel[2];
    int64_t dilation[2];
    int64_t padding[2];
    int64_t stride[2];
} gad_fold_opts;

/* torch.nn.functional.unfold (im2col): x [N, C, H, W] (or [C, H, W]) ->
 * [N, C kh kw, L], L the number of blocks (an input with none is a shape
 * error); row c kh kw + i kw + j holds tap (i, j) of channel c. fold
 * (col2im) is its transpose: cols [N, C kh kw, L] (or 2-D) summed into
 * [N, C, H, W] of output_size (H, W), overlaps added. Each is the other's
 * VJP (ops of their own on the pool family's im2col and col2im, twice
 * differentiable). */
gad_tensor *gad_unfold(gad_tensor *x, const gad_fold_opts *o);
gad_tensor *gad_fold(gad_tensor *cols, const int64_t *output_size, const gad_fold_opts *o);

/* Initializers: new f32 tensors of weights for a layer [fan_in, fan_out]
 * drawn from rng (not leaves: call gad_requires_grad). Xavier (Glorot &
 * Bengio 2010) uses a = gain * sqrt(6 / (fan_in + fan_out)) for uniform
 * [-a, a] and std = gain * sqrt(2 / (fan_in + fan_out)) for normal; Kaiming
 * (He et al. 2015) uses std = gain / sqrt(fan_in) (gain sqrt(2) for ReLU)
 * and a = sqrt(3) * std for uniform. fan_in and fan_out must be > 0 and
 * gain finite and >= 0 (a domain error otherwise). */
gad_tensor *gad_init_xavier_uniform(gad_rng *rng, int64_t fan_in,
                                    int64_t fan_out, double gain);
gad_tensor *gad_init_xavier_normal(gad_rng *rng, int64_t fan_in,
                                   int64_t fan_out, double gain);
gad_tensor *gad_init_kaiming_uniform(gad_rng *rng, int64_t fan_in,
                                     int64_t fan_out, double gain);
gad_tensor *gad_init_kaiming_normal(gad_rng *rng, int64_t fan_in,
                                    int64_t fan_out, double gain);

/* ======================================================================== */
/* Convolution (issue 28; SPEC §3.10)                                        */
/* ======================================================================== */
/* PyTorch's functional conventions: x [N, Cin, *spatial] (NCL, NCHW,
 * NCDHW) or unbatched [Cin, *spatial]; float, one dtype and device for
 * every tensor; bias [Cout] or NULL. Differentiable in x, weight and bias,
 * any number of times (the gradients are convolutions again). CPU only for
 * now: elsewhere "conv2d: not supported on cuda:0". */

/* How padding is chosen: the per-dim amounts of gad_conv_opts.padding
 * (EXPLICIT, the default), none (VALID), or the output as large as the
 * input (SAME: stride 1 only; a total of dilation * (kernel - 1) with the
 * odd one on the right, as PyTorch pads an even kernel). */
typedef enum gad_conv_padding {
    GAD_CONV_PAD_EXPLICIT = 0,
    GAD_CONV_PAD_VALID = 1,
    GAD_CONV_PAD_SAME = 2
} gad_conv_padding;

/* A convolution's options, per spatial dim in order (conv1d reads [0],
 * conv2d [0..1] as (H, W), conv3d [0..2]). Zero-initialised (or a NULL
 * pointer) means PyTorch's defaults: a 0 stride, dilation or groups is 1,
 * padding and output_padding 0. Negative values are domain errors. */
typedef struct gad_conv_opts {
    int64_t stride[3];
    int64_t padding[3];        /* zeros added at both ends (EXPLICIT) */
    int64_t dilation[3];
    int64_t output_padding[3]; /* conv_transpose only: added at the end */
    int64_t groups;            /* Cin and Cout split into this many groups */
    gad_conv_padding padding_mode;
} gad_conv_opts;

/* y [N, Cout, *out] = sum over the group's input channels and the kernel
 * taps of weight [Cout, Cin/groups, *k] * x, plus bias; out = floor((in +
 * 2 padding - dilation (k - 1) - 1) / stride) + 1 per dim. Errors (as
 * PyTorch): shape when Cout is not divisible by groups, Cin is not
 * weight's dim 1 * groups, the (dilated) kernel is larger than the padded
 * input, a rank is wrong or bias is not [Cout]; domain for "same" with a
 * stride > 1 and for negative options. */
gad_tensor *gad_conv1d(gad_tensor *x, gad_tensor *weight, gad_tensor *bias,
                       const gad_conv_opts *opts);
gad_tensor *gad_conv2d(gad_tensor *x, gad_tensor *weight, gad_tensor *bias,
                       const gad_conv_opts *opts);
gad_tensor *gad_conv3d(gad_tensor *x, gad_tensor *weight, gad_tensor *bias,
                       const gad_conv_opts *opts);

/* The transposed convolution (the gradient of a convolution with respect to
 * its input): x [N, Cin, *in], weight [Cin, Cout/groups, *k], y [N, Cout,
 * *out] with out = (in - 1) stride - 2 padding + dilation (k - 1) +
 * output_padding + 1. output_padding must be smaller than the stride or the
 * dilation of its dim (a domain error otherwise); padding_mode must be
 * EXPLICIT; an output size below 1 is a shape error. */
gad_tensor *gad_conv_transpose1d(gad_tensor *x, gad_tensor *weight, gad_tensor *bias,
                                 const gad_conv_opts *opts);
gad_tensor *gad_conv_transpose2d(gad_tensor *x, gad_tensor *weight, gad_tensor *bias,
                                 const gad_conv_opts *opts);
gad_tensor *gad_conv_transpose3d(gad_tensor *x, gad_tensor *weight, gad_tensor *bias,
                                 const gad_conv_opts *opts);
/* Normalization over channels (issue 28; torch.nn.functional's)            */
/* ======================================================================== */
/* x is [N, C, ...] (rank >= 2, f32 or f64); weight, bias and the running
 * statistics are [C] of x's dtype and device, each NULL for none. eps must
 * be finite and >= 0. A shape, dtype or device mismatch is an error naming
 * the argument; a back end without the kernels (CUDA) answers "not
 * supported on cuda:0". A half x (f16/bf16) is computed in f32 and the
 * result rounded once; its running statistics may be f32 (as PyTorch's
 * autocast keeps them) or x's dtype (updated in f32, then rounded). */

/* (x - mean) / sqrt(var + eps) * weight + bias per channel (axis 1), the
 * statistics over N and the dims after C. training: the batch's mean and
 * biased variance, and running_mean, running_var (both or neither; not on
 * the tape) updated in place: r = (1 - momentum) r + momentum s, with the
 * unbiased variance for running_var; one value per channel (N * prod(dims
 * after C) = 1) is a shape error, an empty batch gives NaN statistics and
 * leaves them as they were. Evaluation (training 0): the running
 * statistics, which are then required. One tape node with a fused backward
 * (two passes over x); differentiable again under GAD_CREATE_GRAPH. */
gad_tensor *gad_batch_norm(gad_tensor *x, gad_tensor *running_mean, gad_tensor *running_var,
                           gad_tensor *weight, gad_tensor *bias, int training, double momentum,
                           double eps);

/* Normalised over each of `groups` groups of channels of each sample
 * (mean and biased variance over C / groups channels and the dims after
 * C), then * weight + bias per channel. C not divisible by groups (or
 * groups <= 0) is a shape error. One tape node, fused: each group's
 * statistics and y (and backward, its dx, dw, db) in one task while the
 * group is in cache; the same bits on any thread count; differentiable
 * again under GAD_CREATE_GRAPH. */
gad_tensor *gad_group_norm(gad_tensor *x, int64_t groups, gad_tensor *weight, gad_tensor *bias,
                           double eps);

/* Normalised over the dims after C of each (sample, channel), then *
 * weight + bias. use_input_stats: those statistics, and the running ones
 * (optional, both or neither) updated in place with the mean over the batch
 * of each sample's update (PyTorch's); one spatial element is a shape
 * error. Otherwise the running statistics (required), as batch norm's
 * evaluation. The first is group norm's node with groups = C, the second
 * batch norm's. */
gad_tensor *gad_instance_norm(gad_tensor *x, gad_tensor *running_mean, gad_tensor *running_var,
                              gad_tensor *weight, gad_tensor *bias, int use_input_stats,
                              double momentum, double eps);

/* ======================================================================== */
/* Fused kernels (one tape node each; docs/helix.md)                         */
/* ======================================================================== */
/* f32, multithreaded, each with a hand-written backward that saves only
 * what it needs. Each has an unfused composition of ordinary ops with the
 * same value (tests compare them). With GAD_CREATE_GRAPH their gradients
 * are differentiable where noted; otherwise a second derivative through
 * them is an unsupported error, never a silently wrong value. */

/* h_t = a_t * h_{t-1} + b_t over time, h_{-1} = 0: a and b [B,T,D], h
 * [B,T,D]. */
gad_tensor *gad_gated_scan(gad_tensor *a, gad_tensor *b);

/* x / sqrt(mean(x^2) + eps) over the last axis (no gain; eps inside the
 * square root). Rank 0 is a shape error. */
gad_tensor *gad_rms_norm(gad_tensor *x, double eps);

/* Weighted cross-entropy as one node (docs/helix.md): logits [N,V], targets
 * (i64, N entries), mask (f32, N signed row weights). loss = -(1/sum|m|)
 * sum_i m_i log softmax(logits_i)[t_i]; rows with m_i = 0 contribute
 * exactly 0 and their targets are not read; a target of a weighted row
 * outside [0, V) is an index error. Returns a rank-0 tensor; the gradient
 * goes to the logits only. */
gad_tensor *gad_masked_ce(gad_tensor *logits, gad_tensor *targets,
                          gad_tensor *mask);

/* Rows of table [V,D] (f32) picked by idx (i64, any shape), as one node:
 * idx.shape + [D]. An index outside [0, V) is an index error. */
gad_tensor *gad_embedding_fused(gad_tensor *table, gad_tensor *idx);

/* The weights of a HELIX block of width D (docs/helix.md). */
typedef struct gad_helix_weights {
    gad_tensor *wa;  /* [D+1, D]: gate weights; the last row is the gate bias */
    gad_tensor *wb;  /* [D, D]: scan input */
    gad_tensor *wo;  /* [D, D]: scan output */
    gad_tensor *wf1; /* [D, 2D]: FFN in */
    gad_tensor *wf2; /* [2D, D]: FFN out */
    gad_tensor *g1, *g2, *g3, *g4; /* [D] gains */
} gad_helix_weights;

/* One HELIX layer over x [B,T,D] (docs/helix.md): a gated linear recurrence with
 * an RMSNorm before it and a SiLU FFN after it, both residual. One node
 * with ten gradients. Shapes are checked up front (a shape error names the
 * weight). */
gad_tensor *gad_helix_block(gad_tensor *x, const gad_helix_weights *w,
                            double eps);

/* ======================================================================== */
/* Attention and positions (issue 27)                                        */
/* ======================================================================== */

/* softmax(q k^T * scale + mask) v as one node, PyTorch's
 * scaled_dot_product_attention. q [.., Hq, Tq, d], k [.., Hk, Tk, d], v
 * [.., Hk, Tk, dv] (float, one dtype, the same leading dims; rank 2 means
 * one head): the result is [.., Hq, Tq, dv]. Hk must divide Hq: query
 * head h reads k/v head h / (Hq / Hk) (grouped-query attention).
 * mask (or NULL) broadcasts to [.., Hq, Tq, Tk]: a bool mask means
 * True = attend, a float one (q's dtype) is added to the scores. A mask
 * on the tape gets its gradient through the composed form (which holds
 * the [Tq, Tk] scores); otherwise the mask is a constant. is_causal: key j
 * is seen by query i only when j <= i, aligned top-left when Tq != Tk (as
 * PyTorch); a mask with is_causal is a domain error (as PyTorch). scale
 * <= 0 means 1/sqrt(d). A row whose keys are all masked gives zeros and
 * zero gradients (PyTorch 2.15's CPU kernels give zeros too; its composed
 * formula gives NaN). dropout_p in [0, 1) drops probabilities after the
 * softmax and scales the rest by 1/(1 - dropout_p), the mask drawn by
 * Philox4x32-10 keyed with one gad_rng_next(rng) (rng may be NULL when
 * dropout_p is 0); the backward draws it again. The forward walks the
 * keys in blocks with an online softmax and keeps only each row's
 * log-sum-exp; the backward recomputes the probabilities from it
 * (FlashAttention-2, Dao 2023): no [Tq, Tk] matrix is kept per head.
 * Twice differentiable (GAD_CREATE_GRAPH: through the composed form). */
gad_tensor *gad_scaled_dot_product_attention(gad_tensor *q, gad_tensor *k, gad_tensor *v,
                                             gad_tensor *mask, int is_causal, double dropout_p,
                                             double scale, gad_rng *rng);

/* Rotary position embedding (Su et al., RoFormer, 2021) of x [.., T, d]
 * (float, d even), one node: pair i of a row at position p is rotated by
 * the angle p * base^(-2i/d), the pairs being (x[2i], x[2i+1]) when
 * interleaved (GPT-J, the RoFormer paper) or (x[i], x[i + d/2])
 * otherwise (GPT-NeoX, Llama's Hugging Face form): y1 = x1 cos - x2 sin,
 * y2 = x1 sin + x2 cos. positions: i64, broadcast to x's shape without its
 * last dim (e.g. [T] or [B, T], or [T, 1] for x [B, T, H, d]); NULL means
 * 0..T-1 along axis -2. base > 0 (commonly 10000). */
gad_tensor *gad_rope(gad_tensor *x, gad_tensor *positions, double base, int interleaved);

/* The sinusoidal position table of "Attention Is All You Need" (Vaswani et
 * al., 2017): [T, d] (d even) with row t's entries 2i and 2i+1 equal to
 * sin and cos of t / base^(2i/d) (base 10000 in the paper). f32 or f64;
 * a constant (no gradient). */
gad_tensor *gad_sinusoidal_positions(int64_t T, int64_t d, double base, gad_dtype_t dtype);

/* ======================================================================== */
/* Optimizers (src/optim)                                                    */
/* ======================================================================== */
/* An optimizer updates its parameters (leaves) in place (SPEC D7): each
 * keeps its identity and gradient slot; copy-on-write keeps any graph that
 * still holds the old values intact. A step is one pass over all its
 * parameters together (a multi-tensor update, split between gad's threads
 * as one range); a parameter whose storage a graph or view shares gets its
 * new values in a storage of its own in that same pass (the old values are
 * read, not copied first). */

typedef struct gad_optim gad_optim;

typedef struct gad_sgd_opts {
    double lr;           /* learning rate (0 means 0.01) */
    double momentum;     /* 0: plain SGD */
    int nesterov;        /* Nesterov momentum (needs momentum > 0) */
    double weight_decay; /* L2 penalty added to the gradient */
} gad_sgd_opts;

typedef struct gad_adamw_opts {
    /* defaults (a 0 field takes it, so a beta of exactly 0 cannot be
     * requested): */
    double lr;           /* 1e-3 */
    double beta1, beta2; /* 0.9, 0.999 */
    double eps;          /* 1e-8, added outside the square root (g's form) */
    double weight_decay; /* 0.01, decoupled: theta *= 1 - lr * wd */
    int no_weight_decay; /* set to use weight_decay = 0 */
} gad_adamw_opts;

/* An optimizer over params[0..n) (float leaves; retained until
 * gad_optim_free), all in one group with opts' lr and weight decay. opts
 * NULL takes the defaults. NULL and an error on bad parameters (a domain
 * error names the value) or a memory error. */
gad_optim *gad_sgd_new(gad_tensor *const *params, int n, const gad_sgd_opts *opts);
gad_optim *gad_adamw_new(gad_tensor *const *params, int n,
                         const gad_adamw_opts *opts);
/* Accepts NULL. Freeing twice, or any call on a freed optimizer, is a domain
 * error ("use of a freed optimizer"), not a use after free: the freed
 * struct is poisoned and kept until 256 more optimizers have been freed. */
void gad_optim_free(gad_optim *opt);

/* Parameter groups (PyTorch's param_groups): parameters that share an lr
 * and a weight decay, such as gains and biases without decay. Every other
 * setting (momentum, betas, eps) is the optimizer's. A 0 field takes the
 * optimizer's value (opts' lr and weight_decay, after their defaults);
 * no_weight_decay set gives 0. An update with groups is, bit for bit, the
 * one separate optimizers of those settings would make. */
typedef struct gad_param_group {
    gad_tensor *const *params; /* gad_*_new_groups: the group's tensors */
    int n;
    const char *match;   /* gad_*_new_params: a name pattern ('*' any run) */
    double lr;           /* 0: the optimizer's */
    double weight_decay; /* 0: the optimizer's */
    int no_weight_decay; /* set: no weight decay in this group */
} gad_param_group;

/* An optimizer over the tensors of groups[0..ngroups) (ngroups >= 1; each
 * params/n, match NULL), in that order: params[i] below, the state's
 * "m.<i>" names and gad_optim_step's grads[i] count across the groups in
 * order. Errors as gad_sgd_new (a tensor in two groups is a domain
 * error), and a domain error for a group's bad lr or weight decay. */
gad_optim *gad_sgd_new_groups(const gad_param_group *groups, int ngroups,
                              const gad_sgd_opts *opts);
gad_optim *gad_adamw_new_groups(const gad_param_group *groups, int ngroups,
                                const gad_adamw_opts *opts);

/* A named parameter set (see "Parameter sets" below). */
typedef struct gad_params gad_params;

/* An optimizer over every parameter of the set ps (frozen ones included:
 * they are skipped while frozen), in the set's order. Each parameter goes
 * to the first of groups[0..ngroups) whose .match pattern matches its
 * name (params NULL and n 0 in these groups); parameters no pattern
 * matches form a last group, number ngroups, with opts' settings. ngroups
 * may be 0 (one group). A group that gets no parameter is an index error
 * naming its pattern (a misspelt pattern must not silently decay gains);
 * other errors as gad_sgd_new_groups. Parameters added to the set later
 * are not in the optimizer. */
gad_optim *gad_sgd_new_params(gad_params *ps, const gad_param_group *groups,
                              int ngroups, const gad_sgd_opts *opts);
gad_optim *gad_adamw_new_params(gad_params *ps, const gad_param_group *groups,
                                int ngroups, const gad_adamw_opts *opts);

/* One update. grads[i] is the gradient of params[i] (its shape and dtype);
 * grads NULL uses the leaves' slots (as gad_backward filled them), and a
 * parameter with an empty slot is skipped. A parameter that is not a leaf
 * any more (frozen by gad_params_freeze) is skipped, and its grads[i] is
 * not read (it may be NULL, as gad_params_grad gives). The step counter
 * goes up once per successful call, even if every parameter was skipped.
 * A failed step (a NULL, wrong-shape or wrong-dtype gradient) changes
 * nothing. */
gad_status gad_optim_step(gad_optim *opt, gad_tensor *const *grads);

/* Empty the gradient slots of the optimizer's parameters. */
void gad_optim_zero_grad(gad_optim *opt);

/* The lr of group 0; gad_optim_set_lr sets every group's lr to lr (a
 * domain error, and nothing changed, for a negative or non-finite lr). */
double gad_optim_lr(const gad_optim *opt);
void gad_optim_set_lr(gad_optim *opt, double lr);
int64_t gad_optim_steps(const gad_optim *opt); /* updates made so far */

/* The number of groups (1 for gad_sgd_new and gad_adamw_new; -1 and a
 * domain error for NULL), and a group's lr and weight decay (NaN and an
 * index error for a group outside [0, count)). gad_optim_set_group_lr sets
 * one group's lr, for schedules per group: GAD_OK, an index error for a
 * bad group, a domain error for a negative or non-finite lr. */
int gad_optim_group_count(const gad_optim *opt);
double gad_optim_group_lr(const gad_optim *opt, int group);
double gad_optim_group_weight_decay(const gad_optim *opt, int group);
gad_status gad_optim_set_group_lr(gad_optim *opt, int group, double lr);

/* The optimizer's state as named tensors (for checkpoints): fills up to cap
 * names and tensors (new references owned as rule 2 says) and returns how
 * many there are (call with cap 0 to count), or -1 on an error. Names are
 * stable: "step", "m.<i>", "v.<i>" (AdamW), "momentum.<i>" (SGD). The
 * tensors are snapshots (later steps never change them); the names belong
 * to the optimizer and stay valid until gad_optim_free. */
int gad_optim_state(gad_optim *opt, const char **names, gad_tensor **tensors,
                    int cap);

/* Restore state saved by gad_optim_state. A format error for an unknown,
 * repeated or missing name or a negative step, a shape or dtype error for a
 * tensor that does not match its parameter; the optimizer is then
 * unchanged. SGD momentum entries are optional. */
gad_status gad_optim_load_state(gad_optim *opt, const char *const *names,
                                gad_tensor *const *tensors, int n);

/* ---- Mixed precision (issue 29) ----
 * Training with a half-precision model and f32 master weights (Micikevicius
 * et al., "Mixed Precision Training", 2018; PyTorch autocast + GradScaler;
 * llm.c): the optimizer holds the f32 parameters (the masters) and their
 * state; the model computes with f16 or bf16 copies, whose gradients come
 * back in half; each step widens them, updates the masters in f32 and
 * rounds the masters into the copies. With bf16 (f32's range) nothing else
 * is needed; with f16 (largest 65504, smallest normal 6.1e-5) small
 * gradients underflow unless the loss is scaled, so a gad_grad_scaler
 * multiplies the loss, unscales the gradients in f32, skips a step whose
 * gradients overflowed and adapts the scale:
 *
 *     gad_params *ps = ...;                    f32 parameters (masters)
 *     gad_optim *opt = gad_adamw_new_params(ps, NULL, 0, NULL);
 *     gad_tensor *half[N];                      one copy per parameter
 *     for (int i = 0; i < N; i++)
 *         half[i] = gad_requires_grad(gad_cast(gad_detach(gad_params_at(ps, i)),
 *                                              GAD_BF16));   (a leaf of its own)
 *     gad_optim_set_copies(opt, half);         copies = round(masters)
 *     loop: loss = model(half, batch);          computes in bf16
 *           gad_backward(loss);                 gradients land in half[i]
 *           gad_optim_step(opt, NULL);          masters updated, copies rounded
 *           gad_optim_zero_grad(opt);           the copies' slots too
 *     f16: gad_backward(gad_grad_scaler_scale(sc, loss));
 *          gad_grad_scaler_step(sc, opt, NULL, &stepped);
 *
 * A checkpoint saves the masters (gad_params_save) and the optimizer's
 * state; the copies are recomputed from them by gad_optim_set_copies. */

/* Give params[i] of opt a working copy copies[i] (NULL: none), for i in
 * [0, n) of the optimizer's parameters: a leaf of params[i]'s shape and
 * device, of dtype f16, bf16, f32 or f64, not a parameter of opt. The
 * copies get the masters' values rounded (to nearest even) at once and
 * after every step that updates their master; they are written in place
 * (copy-on-write keeps the values any graph or view still holds). With
 * copies, gad_optim_step with grads NULL reads each copy's gradient slot
 * (not the master's), and takes a gradient of the copy's dtype, widened to
 * the master's; gad_optim_zero_grad empties the copies' slots too. The
 * optimizer retains the copies until the next call or gad_optim_free;
 * copies NULL removes them. Errors (nothing changed): a shape, dtype,
 * device or domain error naming the index (a copy that is no leaf, is
 * params[i] itself, or is given twice). */
gad_status gad_optim_set_copies(gad_optim *opt, gad_tensor *const *copies);

/* Dynamic loss scaling for f16 (PyTorch's GradScaler: the same defaults
 * and rules). A field of 0 takes its default. */
typedef struct gad_grad_scaler_opts {
    double init_scale;       /* 65536 */
    double growth_factor;    /* 2: the scale after growth_interval good steps */
    double backoff_factor;   /* 0.5: the scale after an overflow */
    int64_t growth_interval; /* 2000 */
} gad_grad_scaler_opts;

typedef struct gad_grad_scaler gad_grad_scaler;

/* A scaler (opts NULL: the defaults); a domain error for a scale that is
 * not finite and > 0, a growth factor <= 1, a backoff outside (0, 1) or a
 * negative interval. gad_grad_scaler_free accepts NULL. */
gad_grad_scaler *gad_grad_scaler_new(const gad_grad_scaler_opts *opts);
void gad_grad_scaler_free(gad_grad_scaler *s);

/* The current scale (NaN and a domain error for NULL). */
double gad_grad_scaler_scale_value(const gad_grad_scaler *s);

/* loss * scale, tracked, in f32 when loss is f16 or bf16 (in the loss's
 * float dtype otherwise), to be differentiated instead of the loss. */
gad_tensor *gad_grad_scaler_scale(gad_grad_scaler *s, gad_tensor *loss);

/* out[i] = grads[i] widened to f32 (f64 stays f64) and divided by the
 * scale, new tensors owned as rule 2 says (grads[i] NULL: out[i] NULL);
 * grads are not changed. Returns 1 when every value is finite, 0 when one
 * is not (the step must then be skipped), -1 on an error (a dtype error
 * for a gradient that is not float; out all NULL). For clipping between
 * the unscale and the step: gad_clip_grad_norm(out), gad_optim_step(opt,
 * out), then gad_grad_scaler_update. */
int gad_grad_scaler_unscale(gad_grad_scaler *s, gad_tensor *const *grads, gad_tensor **out,
                            int n);

/* After a step: found_finite 0 multiplies the scale by backoff_factor and
 * restarts the count of good steps; 1 counts one, and growth_interval of
 * them in a row multiply the scale by growth_factor (kept when that would
 * overflow). */
gad_status gad_grad_scaler_update(gad_grad_scaler *s, int found_finite);

/* Unscale, step and update in one call: the gradients of opt's parameters
 * (grads[i], or with grads NULL the slots gad_optim_step reads, a NULL
 * entry or empty slot skipping its parameter) are unscaled; if all are
 * finite, opt takes the step with them (*stepped = 1), else the step is
 * skipped (*stepped = 0, the optimizer untouched); then the scale is
 * updated. stepped may be NULL. Errors as gad_optim_step's. */
gad_status gad_grad_scaler_step(gad_grad_scaler *s, gad_optim *opt, gad_tensor *const *grads,
                                int *stepped);

/* The scaler's state for checkpoints: the scale and the count of good
 * steps since its last change; load_state sets them (a domain error for a
 * scale that is not finite and > 0 or a negative count). */
gad_status gad_grad_scaler_state(const gad_grad_scaler *s, double *scale, int64_t *good);
gad_status gad_grad_scaler_load_state(gad_grad_scaler *s, double scale, int64_t good);

/* Scale the gradients in place so that their global L2 norm is at most
 * max_norm (by max_norm / (norm + 1e-6), PyTorch's rule); returns the norm
 * before clipping (NaN and an error if a gradient is NULL or not float). A
 * NaN or infinite norm is returned and leaves the gradients unchanged. A
 * gradient listed twice is scaled once. Gradients that are outputs of
 * tracked ops are a not-unique error. f16 and bf16 gradients (mixed
 * precision's working copies; on the CPU, an unsupported error on another
 * device) count with their values widened to f32, summed in double as f32
 * gradients are, and are scaled in f32 and rounded once to their dtype;
 * PyTorch rounds each tensor's norm and the coefficient to the gradient's
 * dtype first, so its norm may differ in the third digit for bf16. */
double gad_clip_grad_norm(gad_tensor *const *grads, int n, double max_norm);

/* Learning rate at step (0-based): linear warm-up base_lr * (step + 1) /
 * warmup over warmup steps, then cosine decay to min_lr at total steps (and
 * min_lr after). With total <= warmup the decay phase is empty (min_lr from
 * step warmup on); a negative step or warmup counts as 0. */
double gad_lr_warmup_cosine(int64_t step, int64_t warmup, int64_t total,
                            double base_lr, double min_lr);

/* ======================================================================== */
/* Checkpoints (safetensors)                                                 */
/* ======================================================================== */
/* The safetensors format: an 8-byte little-endian header length, a JSON
 * header {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]},
 * ...} (plus an optional "__metadata__" object of strings), then the raw
 * little-endian bytes. gad writes each of its dtypes as the file dtype of
 * the same name (F32, F64, I64, BOOL, F16, BF16, I32, U8) and reads those
 * as they are (a BOOL byte other than 0 or 1 is a format error when the
 * tensor is read). It reads other dtypes converted, exactly:
 *     I8, I16, U16      -> i32
 *     U32, U64          -> i64 (a U64 value above INT64_MAX is an
 *                          unsupported error naming the tensor when it is read)
 *     F8_E4M3, F8_E5M2  -> f32 (the OCP OFP8 rev 1.0 formats; E4M3's NaN is
 *                          S.1111.111 and it has no Inf, E5M2 is IEEE-like;
 *                          NaNs keep their sign)
 * gad_checkpoint_get's tensor then has the converted dtype. The rest
 * (F8_E8M0, C64, F4, F6_E2M3, F6_E3M2) are well-formed but unsupported:
 * gad_load of a file holding one refuses the whole file, naming the tensor
 * and its dtype; gad_load_names reads the file's other tensors. */

/* Write n named tensors to path atomically: to a temporary file in the same
 * directory, flushed and fsync'd, then renamed over path (and the directory
 * fsync'd), so that a crash mid-save leaves the previous file intact. Names
 * must be unique, valid UTF-8 and not "__metadata__" (a domain error); any
 * name gad_load accepts can be saved back (the empty name, and control
 * characters, which the header escapes as \u00XX). Tensors are stored in the given
 * order. A symbolic link is written through: the file it leads to
 * (a relative target read from the link's folder; a dangling link's target
 * is created) is replaced in its own directory, and the link stays. A
 * FIFO, socket, device or directory at path (or behind its links) is an
 * io error naming path and what it is, and is left untouched; so is a loop
 * of links. An io error names the path and the system's reason (an
 * unwritable directory, a full disk); nothing is replaced on any error. A
 * process killed mid-save leaves its temporary file "<path>.tmp.<pid>.<n>"
 * beside the file replaced: harmless, and safe to delete. */
gad_status gad_save(const char *path, const char *const *names,
                    gad_tensor *const *tensors, int n);

/* gad_save with a "__metadata__" object: n_meta (key, value) pairs in meta
 * as 2 * n_meta strings, key0, value0, key1, value1, ... (written first
 * in the header, in that order, escaped as JSON strings). Keys and values
 * are any valid UTF-8 (the empty string too); a NULL string, invalid
 * UTF-8, a key given twice, n_meta < 0 or meta NULL for n_meta > 0 is a
 * domain error, and nothing is written. n_meta = 0 writes no metadata, as
 * gad_save. PyTorch's writer puts {"format": "pt"}: to gad that is one
 * pair like any other. */
gad_status gad_save_meta(const char *path, const char *const *names,
                         gad_tensor *const *tensors, int n,
                         const char *const *meta, int n_meta);

typedef struct gad_checkpoint gad_checkpoint;

/* Open path and validate its header against the file: header length, JSON
 * syntax, dtypes, shapes, data offsets inside the file's real size, in
 * order, without overlap or gaps, and the total size. A malformed or
 * truncated file is a format error naming what is wrong; a missing file an
 * io error, and so is a path that is not a regular file (a FIFO, socket,
 * directory or device: refused without being opened, so that a load never
 * blocks on one); a well-formed file holding a dtype gad neither has nor
 * converts (the list above) or a tensor of rank above GAD_MAX_RANK is an
 * unsupported error naming the tensor and its dtype. The header may list tensors in any
 * order; their data must tile the buffer exactly. The tensors' bytes are
 * not read here: the checkpoint keeps the file open (one descriptor, until
 * gad_checkpoint_free) and gad_checkpoint_get reads each tensor from it, so
 * that loading holds only the header and the tensors asked for. A file
 * replaced after the load (gad_save renames a new file over the path) does
 * not change the checkpoint; one rewritten in place does. Free with
 * gad_checkpoint_free. */
gad_checkpoint *gad_load(const char *path);
void gad_checkpoint_free(gad_checkpoint *cp); /* accepts NULL */

/* gad_load, selecting n tensors by name: the whole header is validated as
 * gad_load does (syntax, offsets, sizes, metadata), but only the named
 * tensors must be representable, so that the rest of a file holding a
 * tensor gad cannot read is usable. The checkpoint holds just those (in
 * header order; gad_checkpoint_count is n) and the file's metadata; only
 * their bytes are ever read. A name not in the file is an index error
 * naming it; a NULL or repeated name, n < 0, or names NULL for n > 0 a
 * domain error. n = 0 gives a checkpoint of the metadata alone. */
gad_checkpoint *gad_load_names(const char *path, const char *const *names, int n);

/* The file's "__metadata__": the number of pairs (0 for a NULL
 * checkpoint), the i-th key in header order (NULL and an index error
 * outside [0, count), a domain error for a NULL checkpoint), and the value
 * of key (NULL, with no error, when the file has no such key; NULL and a
 * domain error for a NULL argument). The strings are the checkpoint's,
 * valid until gad_checkpoint_free. */
int gad_checkpoint_meta_count(const gad_checkpoint *cp);
const char *gad_checkpoint_meta_key(const gad_checkpoint *cp, int i);
const char *gad_checkpoint_meta(const gad_checkpoint *cp, const char *key); /* NULL if absent */

/* The number of tensors, the name of the i-th (in header order; NULL and
 * an index error when i is out of range, a domain error for a NULL
 * checkpoint), and a tensor by name (a new tensor owned as rule 2 says,
 * read from the file; NULL and an index error when the name is absent, a
 * memory error when it cannot be allocated, an io error when the file
 * cannot be read or was cut short since gad_load). Several threads may get
 * tensors from one checkpoint at once. */
int gad_checkpoint_count(const gad_checkpoint *cp);
const char *gad_checkpoint_name(const gad_checkpoint *cp, int i);
gad_tensor *gad_checkpoint_get(const gad_checkpoint *cp, const char *name);

/* gad_checkpoint_get, then the tensor moved to device dev (a device error
 * for a number that names no device): a checkpoint written from any device
 * loads onto any other. */
gad_tensor *gad_checkpoint_get_on(const gad_checkpoint *cp, const char *name, gad_device dev);

/* ======================================================================== */
/* Parameter sets (src/nn)                                                   */
/* ======================================================================== */
/* A model's parameters under names, in the order they were added (as
 * PyTorch's named_parameters and state_dict): look them up, freeze some,
 * save and load them as safetensors, and hand them to an optimizer
 * (gad_adamw_new_params). Names are any valid UTF-8 but "__metadata__";
 * a dot-separated path ("enc.0.w") is the custom. A set, like a gad_optim,
 * is used by one thread at a time.
 *
 *     gad_params *ps = gad_params_new();
 *     gad_scope_begin();                       // the set keeps what it holds
 *     gad_tensor *w = gad_params_add(ps, "fc.w", gad_init_xavier_uniform(rng, 3, 4, 1));
 *     gad_tensor *b = gad_params_add(ps, "fc.b", gad_zeros((int64_t[]){4}, 1, GAD_F32));
 *     gad_scope_end();
 *     gad_param_group nodecay = {.match = "*.b", .no_weight_decay = 1};
 *     gad_optim *opt = gad_adamw_new_params(ps, &nodecay, 1, NULL);
 *     ... gad_backward(loss); gad_optim_step(opt, NULL); gad_optim_zero_grad(opt);
 *     gad_params_save(ps, "model.safetensors");
 *     gad_optim_free(opt), gad_params_free(ps);
 */

/* A new empty set (NULL and a memory error), and its release: the set's
 * references to its tensors are dropped (accepts NULL). */
gad_params *gad_params_new(void);
void gad_params_free(gad_params *ps);

/* Add t under name: the set takes a reference of its own and t becomes a
 * leaf (gad_requires_grad; trainable). Returns t, without a new reference
 * (valid while the set holds it), or NULL on an error: a domain error for
 * a NULL argument, a name already in the set, a tensor already in the set
 * under another name (an optimizer would update it twice), a name that is
 * not valid UTF-8 or is "__metadata__", or t the result of an op (detach
 * or clone it); a dtype error for a t that is not f32, f64, f16 or bf16
 * (integer and bool tensors are buffers: gad_params_add_buffer); a memory
 * error. A set holds half parameters (saved and loaded as F16/BF16), but
 * the optimizers refuse them (an unsupported error naming the parameter:
 * a half parameter is trained through an f32 master: gad_optim_set_copies). The set is
 * unchanged on an error. A t that shares its storage (a view such as a
 * reshape or slice, a detached tensor) is added as it is, but the first
 * optimizer step that writes it gives it a storage of its own
 * (copy-on-write): from then on it is a tensor of its own, and the tensor
 * it viewed keeps its values. To train a slice of a larger tensor, add the larger tensor. */
gad_tensor *gad_params_add(gad_params *ps, const char *name, gad_tensor *t);

/* The number of parameters (-1 and a domain error for NULL), the i-th
 * name and tensor in insertion order (NULL and an index error outside
 * [0, count)), and the tensor named name, a parameter or a buffer (NULL and
 * an index error naming it when there is none). Tensors come without a new reference: they are
 * the set's, valid while it lives; names too. */
int gad_params_count(const gad_params *ps);
const char *gad_params_name(const gad_params *ps, int i);
gad_tensor *gad_params_at(const gad_params *ps, int i);
gad_tensor *gad_params_get(const gad_params *ps, const char *name);

/* ---- buffers (issue 28): named tensors of any dtype (f32, f64, i64, and
 * f16, bf16, i32, u8, bool: masks, counters) that
 * belong to the model but are not optimized, as PyTorch's register_buffer
 * (batch norm's running statistics, gad_batch_norm_params). They share the
 * parameters' names (one name space), are saved by gad_params_save after
 * the parameters and loaded by gad_params_load with the same checks (name,
 * dtype, shape; strict counts them), and found by gad_params_get; they are
 * never leaves and get no gradient, gad_params_count, gad_params_tensors,
 * gad_params_numel, the optimizers and gad_params_grad leave them out.
 * Under data-parallel training (gad_dist_*) each rank keeps its own
 * buffers: gad_dist_average_grads averages gradients only, so batch norm's
 * running statistics are those of each rank's own batches, as with
 * PyTorch's DDP and no SyncBatchNorm. (DDP's broadcast_buffers, on by
 * default, also copies rank 0's buffers to the others before each forward;
 * gad does not: call gad_dist_broadcast on the buffers, from root 0, where
 * every rank must hold the same values, such as before evaluating or
 * saving.) */

/* Add t as a buffer under name: the set takes a reference of its own; t
 * stays off the tape. Returns t (no new reference), or NULL with a domain
 * error for a NULL argument, a name already in the set (parameter or
 * buffer), a tensor already a buffer, an invalid name (as gad_params_add),
 * or a t on the tape (a leaf or an op's result: gad_detach it); a memory
 * error. The set is unchanged on an error. */
gad_tensor *gad_params_add_buffer(gad_params *ps, const char *name, gad_tensor *t);

/* The number of buffers (-1 and a domain error for NULL), the i-th
 * buffer's name and tensor in insertion order (NULL and an index error
 * outside [0, count)); the set's, valid while it lives. */
int gad_params_buffer_count(const gad_params *ps);
const char *gad_params_buffer_name(const gad_params *ps, int i);
gad_tensor *gad_params_buffer_at(const gad_params *ps, int i);

/* The set's tensors as an array of count entries, in insertion order (for
 * gad_grad, gad_clip_grad_norm, gad_sgd_new): the set's own array, valid
 * until the next gad_params_add or gad_params_free. NULL for an empty set;
 * NULL and a domain error for a NULL set. */
gad_tensor *const *gad_params_tensors(const gad_params *ps);

/* The total number of elements of the set's tensors (-1 and a domain
 * error for NULL). */
int64_t gad_params_numel(const gad_params *ps);

/* Freeze (frozen != 0) or unfreeze the parameters whose names match
 * pattern, in which '*' matches any run of characters and every other
 * character itself: "enc.*" is a prefix, "*.b" a suffix, a plain name one
 * parameter. A frozen parameter is taken off the tape (it keeps its
 * identity and values, and is no leaf: gad_is_leaf tells): graphs built
 * afterwards hold it constant, so it gets no gradient (no VJP runs for it,
 * gad_backward fills no slot), gad_grad refuses it as an input, and
 * optimizers skip it. Unfreezing makes it a leaf again, with an empty
 * slot. Returns the number of names matched; -1 and an index error when
 * none does, a domain error for a NULL argument, a memory error (nothing
 * changed). Not while another thread uses the parameters. */
int gad_params_freeze(gad_params *ps, const char *pattern, int frozen);

/* The gradient of the scalar out with respect to every parameter of the
 * set: grads[i] (count entries) for the i-th, NULL for a frozen one, ready
 * for gad_optim_step of an optimizer made by gad_*_new_params. gad_grad's
 * semantics and errors (all grads NULL on an error); a domain error for a
 * NULL set or grads. */
gad_status gad_params_grad(gad_params *ps, gad_tensor *out, gad_tensor **grads);

/* Save every parameter, frozen ones too, under its name, in insertion
 * order, as gad_save does (atomically; its errors; a domain error for a
 * NULL set). */
gad_status gad_params_save(const gad_params *ps, const char *path);

/* gad_params_save with a "__metadata__" object of n_meta (key, value)
 * string pairs (as gad_save_meta: its checks and errors): a model's
 * configuration beside its weights. Read it back with gad_load and
 * gad_checkpoint_meta. */
gad_status gad_params_save_meta(const gad_params *ps, const char *path,
                                const char *const *meta, int n_meta);

/* What a load found (counts, whatever the outcome). */
typedef struct gad_params_load_info {
    int loaded;     /* parameters whose values were read from the file */
    int missing;    /* parameters of the set that the file lacks */
    int unexpected; /* tensors of the file that the set lacks */
    int mismatched; /* names in both with another shape or dtype */
} gad_params_load_info;

/* Read the values of the set's parameters from a safetensors file (path)
 * or an open checkpoint (cp), as torch's load_state_dict: every name,
 * shape and dtype is checked against the set before anything is written;
 * then the values are copied into the parameters in place, on their
 * devices (each keeps its identity, leaf, slot and frozen state; graphs
 * that saw the old values keep them). strict: a missing or unexpected
 * name is an error; not strict: both are allowed and counted (the
 * parameters the file lacks keep their values). A shape or dtype mismatch
 * is always an error. On an error nothing is written, and the message
 * lists the problems by name
 * (missing "fc2.b"; unexpected "fc3.w"; "fc1.w" is f32 [3,4] in the
 * file, f32 [4,3] in the set, cut with "... (N more)"); its kind is a
 * shape or dtype error for the first mismatch, else an index error (names
 * only). gad_load's errors for the file (io, format, unsupported), and a
 * domain error for a NULL set or checkpoint. info (may be NULL) gets the
 * counts. */
gad_status gad_params_load(gad_params *ps, const char *path, int strict,
                           gad_params_load_info *info);
gad_status gad_params_load_checkpoint(gad_params *ps, const gad_checkpoint *cp,
                                      int strict, gad_params_load_info *info);

/* ---- normalization layers (issue 28) */
/* A batch norm layer in a parameter set (torch.nn.BatchNorm1d/2d/3d's
 * state under PyTorch's names): gad_batch_norm_params adds, for affine,
 * the parameters "<prefix>.weight" (ones) and "<prefix>.bias" (zeros), and
 * for track_running_stats the buffers "<prefix>.running_mean" (zeros),
 * "<prefix>.running_var" (ones) and "<prefix>.num_batches_tracked" (an i64
 * scalar, 0), all [channels] of dtype (f32 or f64). GAD_OK, or a domain
 * error (a NULL argument, a name already in the set: nothing added), a
 * dtype or shape error. */
gad_status gad_batch_norm_params(gad_params *ps, const char *prefix, int64_t channels,
                                 gad_dtype_t dtype, int affine, int track_running_stats);

/* gad_batch_norm of x with the layer's tensors, as the PyTorch module's
 * forward: in training with running statistics, num_batches_tracked is
 * incremented and the statistics updated with momentum, or with momentum
 * NaN (PyTorch's None) as a cumulative average (1 / num_batches_tracked);
 * in evaluation the running statistics are used, or the batch's when the
 * layer tracks none. An index error when the set has no layer named
 * prefix; gad_batch_norm's errors otherwise. */
gad_tensor *gad_batch_norm_layer(gad_params *ps, const char *prefix, gad_tensor *x, int training,
                                 double momentum, double eps);
/* ======================================================================== */
/* Layers with PyTorch's names (issue 29; src/nn/modules.c)                  */
/* ======================================================================== */
/* Layer objects (gad_module) that create their parameters and buffers in a
 * gad_params set under torch.nn's state_dict names and layouts, so that a
 * PyTorch state_dict saved as safetensors loads with gad_params_load(ps,
 * path, 1, NULL), strictly, with no renaming or transposing, and a set
 * saved by gad_params_save loads in PyTorch with
 * load_state_dict(strict=True). Each constructor takes a prefix: the
 * module's path in the model ("encoder.layers.0.self_attn"; "" for a top
 * level module), joined to its names with a dot. Containers name their
 * children "0", "1", ... as nn.Sequential and nn.ModuleList do.
 *
 *     gad_params *ps = gad_params_new();
 *     gad_rng *rng = gad_rng_new(0);
 *     gad_nn_ctx c = {.ps = ps, .rng = rng, .dtype = GAD_F32};
 *     gad_module *net = gad_nn_sequential(&c, "");          // nn.Sequential(
 *     gad_nn_seq_add(net, gad_nn_linear(&c, gad_nn_seq_next(net), 4, 8, 1)); //  Linear(4, 8),
 *     gad_nn_seq_add(net, gad_nn_relu());                     //  ReLU(),
 *     gad_nn_seq_add(net, gad_nn_linear(&c, gad_nn_seq_next(net), 8, 2, 1)); //  Linear(8, 2))
 *     gad_params_load(ps, "model.safetensors", 1, NULL);     // "0.weight" [8, 4], ...
 *     gad_module_train(net, 0);                              // net.eval()
 *     gad_tensor *y = gad_module_forward(net, x);
 *     gad_module_free(net), gad_params_free(ps), gad_rng_free(rng);
 *
 * A module holds references to its tensors (they stay valid, and
 * gad_params_load writes them in place); it does not hold the set, which
 * is freed on its own (before or after the modules). Constructors return
 * NULL with an error naming the layer type, its prefix and the values for
 * invalid hyper-parameters (a domain error), a NULL context or set, a name
 * already in the set (nothing is added on an error), or a dtype other than
 * f32/f64. Forwards check the input and name the layer in their errors.
 * Initial values follow PyTorch's reset_parameters with gad's rng (the same
 * distributions, not the same numbers). A module, like its set, is used by
 * one thread at a time. */

/* What the constructors share: the set they add to, the generator that
 * initialises the parameters and draws dropout masks (used while the
 * module lives; NULL only for modules that draw nothing: then the
 * parameters start at zero, and a dropout in training with p > 0 is an
 * error), and the parameters' dtype (GAD_F32, the zero value, or GAD_F64). */
typedef struct gad_nn_ctx {
    gad_params *ps;
    gad_rng *rng;
    gad_dtype_t dtype;
} gad_nn_ctx;

typedef struct gad_module gad_module;

/* The module's output for one input: every module but the attention ones
 * takes x (indices for an embedding); MultiheadAttention computes
 * self-attention (q = k = v = x, no mask), a TransformerEncoderLayer its
 * forward without a mask, a Sequential its children in order. */
gad_tensor *gad_module_forward(gad_module *m, gad_tensor *x);

/* Training (on != 0, the initial mode) or evaluation mode for m and every
 * module below it, as PyTorch's module.train(on) / eval(): dropout drops
 * only in training, batch norm uses and updates the batch's statistics in
 * training and its running ones in evaluation. Returns m. */
gad_module *gad_module_train(gad_module *m, int on);
int gad_module_training(const gad_module *m); /* 1 or 0; -1 for NULL */

/* The module's type ("Linear", "Conv2d", ...; "?" for NULL), its prefix,
 * and its own tensor named field ("weight", "in_proj_bias",
 * "running_mean", ...; NULL and an index error naming the field when it
 * has none: a bias-less layer's "bias"). The tensor is the set's (no new
 * reference). */
const char *gad_module_type(const gad_module *m);
const char *gad_module_prefix(const gad_module *m);
gad_tensor *gad_module_tensor(const gad_module *m, const char *field);

/* The number of children and the i-th child (NULL and an index error out
 * of range): a Sequential's in order; a TransformerEncoderLayer's
 * self_attn, linear1, linear2, norm1, norm2. */
int gad_module_child_count(const gad_module *m);
gad_module *gad_module_child(const gad_module *m, int i);

/* Free m and the modules below it (accepts NULL). The set keeps the
 * parameters. */
void gad_module_free(gad_module *m);

/* ---- containers ---- */

/* nn.Sequential / nn.ModuleList: a list of modules run in order.
 * gad_nn_seq_next gives the prefix of the next child ("<prefix>.<n>", or
 * "<n>" at the top level; valid until the next call on seq), and
 * gad_nn_seq_add appends child (seq owns it from then on) and returns it;
 * a NULL child (a failed constructor) returns NULL and keeps the error, and
 * marks seq failed: its forward is then an error. Children without
 * parameters (gad_nn_relu, ...) take an index too, as in PyTorch.
 * gad_nn_prefix joins m's prefix and name ("encoder" + "layers" ->
 * "encoder.layers") for a module's own sub-modules; valid until the next
 * call on m. */
gad_module *gad_nn_sequential(const gad_nn_ctx *c, const char *prefix);
const char *gad_nn_seq_next(gad_module *seq);
gad_module *gad_nn_seq_add(gad_module *seq, gad_module *child);
const char *gad_nn_prefix(gad_module *m, const char *name);

/* ---- layers with parameters ---- */

/* nn.Linear(in, out, bias): weight [out, in] and bias [out], both
 * U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform with a = sqrt(5), as PyTorch).
 * forward: x [..., in] -> x @ weight^T + bias, through a transposed view of
 * weight (the GEMM reads it in place; nothing is copied). */
gad_module *gad_nn_linear(const gad_nn_ctx *c, const char *prefix, int64_t in, int64_t out,
                          int bias);

/* nn.Linear whose weight is weight ([out, in]), a parameter already in
 * c->ps (an embedding's, for a language model's tied head), added under
 * "<prefix>.weight" as a tied name (gad_params_add_tied); the bias is new. */
gad_module *gad_nn_linear_tied(const gad_nn_ctx *c, const char *prefix, gad_tensor *weight,
                               int bias);

/* ---- tied weights (src/nn/params.c) ----
 * Add name to the set as another name of t, a parameter already in it
 * (PyTorch's tied weights: head.weight = embed.weight). A tied name is
 * found by gad_params_get, saved by gad_params_save as a copy of its own
 * (after the parameters and buffers: safetensors refuses shared tensors,
 * so a file holds one entry per name, as PyTorch's save_file of a
 * state_dict after untying), and loaded by gad_params_load into the same
 * tensor (strict: the file must hold it, as load_state_dict(strict=True)
 * asks); gad_params_count, the optimizers and gad_params_grad see t
 * once. Returns t (no new reference), or NULL and a domain error for a
 * NULL argument, a name already in the set or invalid (as gad_params_add),
 * or a t that is not a parameter of the set; a memory error. */
gad_tensor *gad_params_add_tied(gad_params *ps, const char *name, gad_tensor *t);

/* No padding index for gad_nn_embedding. */
#define GAD_NN_NO_PADDING INT64_MIN

/* nn.Embedding(num, dim, padding_idx): weight [num, dim], N(0, 1) with
 * the padding row zeroed. padding_idx in [-num, num) (a negative one counts
 * from the end, as PyTorch) or GAD_NN_NO_PADDING; the padding row gets no
 * gradient. forward: i64 indices of any shape -> indices.shape + [dim]. */
gad_module *gad_nn_embedding(const gad_nn_ctx *c, const char *prefix, int64_t num, int64_t dim,
                             int64_t padding_idx);

/* nn.LayerNorm(shape[0..n), eps, elementwise_affine, bias): weight (ones)
 * and bias (zeros) of that shape (bias only with bias != 0, both only with
 * elementwise_affine). Normalises over the last n dims of x. */
gad_module *gad_nn_layer_norm(const gad_nn_ctx *c, const char *prefix, const int64_t *shape,
                              int n, double eps, int elementwise_affine, int bias);

/* nn.RMSNorm(shape[0..n), eps, elementwise_affine): x / sqrt(mean(x^2) + eps)
 * over the last n dims, * weight (ones). eps NaN is PyTorch's None: the
 * machine epsilon of x's dtype (2^-23 for f32, 2^-52 for f64). */
gad_module *gad_nn_rms_norm(const gad_nn_ctx *c, const char *prefix, const int64_t *shape, int n,
                            double eps, int elementwise_affine);

/* nn.MultiheadAttention(embed_dim, num_heads, dropout, bias,
 * batch_first=True): in_proj_weight [3E, E] (Xavier uniform), in_proj_bias
 * [3E] (zeros), out_proj.weight [E, E] (as Linear), out_proj.bias [E]
 * (zeros). num_heads must divide embed_dim. */
gad_module *gad_nn_multihead_attention(const gad_nn_ctx *c, const char *prefix,
                                       int64_t embed_dim, int64_t num_heads, double dropout,
                                       int bias);

/* Its forward, as PyTorch's with batch_first=True and need_weights=False:
 * q [B, T, E], k and v [B, S, E] (or [T, E] and [S, E] unbatched) -> [B, T,
 * E], through gad_scaled_dot_product_attention. key_padding_mask [B, S]
 * and attn_mask [T, S] or [B * num_heads, T, S], each NULL for none, bool
 * (true: NOT attended, PyTorch's sense, the opposite of
 * gad_scaled_dot_product_attention's) or float (added to the scores).
 * is_causal with no attn_mask masks the future (PyTorch asks for the mask
 * too); with one, the mask is used (PyTorch's hint). Dropout on the
 * attention probabilities in training only. A query whose keys are all
 * masked gives zeros (PyTorch: NaN). The weights are not returned. */
gad_tensor *gad_nn_mha_forward(gad_module *m, gad_tensor *q, gad_tensor *k, gad_tensor *v,
                               gad_tensor *key_padding_mask, gad_tensor *attn_mask,
                               int is_causal);

typedef enum gad_nn_activation {
    GAD_NN_RELU = 0,
    GAD_NN_GELU = 1 /* exact (erf) */
} gad_nn_activation;

/* nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
 * activation, layer_norm_eps, batch_first=True, norm_first, bias): the
 * children self_attn, linear1 [dim_feedforward, d_model], linear2,
 * norm1, norm2 under those names. forward (x [B, T, d_model]):
 * norm_first: x + sa(norm1(x)), then + ff(norm2(.)); otherwise
 * norm1(x + sa(x)), then norm2(. + ff(.)); ff = linear2(dropout(act(linear1))),
 * each branch dropped out before the sum in training. */
gad_module *gad_nn_transformer_encoder_layer(const gad_nn_ctx *c, const char *prefix,
                                             int64_t d_model, int64_t nhead,
                                             int64_t dim_feedforward, double dropout,
                                             gad_nn_activation activation, double layer_norm_eps,
                                             int norm_first, int bias);
gad_tensor *gad_nn_encoder_layer_forward(gad_module *m, gad_tensor *x, gad_tensor *src_mask,
                                         gad_tensor *src_key_padding_mask, int is_causal);

/* nn.Conv2d(in, out, (kh, kw), stride, padding, dilation, groups, bias)
 * with the options of gad_conv2d (opts NULL: PyTorch's defaults; its
 * output_padding unused): weight [out, in / groups, kh, kw] and bias
 * [out], both U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in / groups *
 * kh * kw. groups must divide in and out; kernel sizes > 0. */
gad_module *gad_nn_conv2d(const gad_nn_ctx *c, const char *prefix, int64_t in, int64_t out,
                          int64_t kh, int64_t kw, const gad_conv_opts *opts, int bias);

/* nn.BatchNorm1d / nn.BatchNorm2d(C, eps, momentum, affine,
 * track_running_stats): weight (ones) and bias (zeros) [C] when affine;
 * buffers running_mean (zeros), running_var (ones) [C] and
 * num_batches_tracked (i64, 0-d) when tracking. In training the batch's
 * statistics are used and the running ones updated, num_batches_tracked
 * counted up; momentum NaN is PyTorch's None (a cumulative average). In
 * evaluation the running statistics are used (the batch's when none are
 * tracked). 2d takes [N, C, H, W]; 1d [N, C] or [N, C, L]. */
gad_module *gad_nn_batch_norm2d(const gad_nn_ctx *c, const char *prefix, int64_t channels,
                                double eps, double momentum, int affine, int track_running_stats);
gad_module *gad_nn_batch_norm1d(const gad_nn_ctx *c, const char *prefix, int64_t channels,
                                double eps, double momentum, int affine, int track_running_stats);

/* ---- layers without parameters (for gad_nn_seq_add) ---- */
gad_module *gad_nn_relu(void);
gad_module *gad_nn_gelu(int tanh_approximation); /* nn.GELU('none' or 'tanh') */
/* nn.Dropout(p): draws from c->rng in training; p in [0, 1]. */
gad_module *gad_nn_dropout(const gad_nn_ctx *c, double p);
/* nn.Flatten(start_dim, end_dim): dims start..end merged (PyTorch's 1, -1). */
gad_module *gad_nn_flatten(int start_dim, int end_dim);
/* nn.MaxPool2d with gad_pool_opts (copied) and nn.AdaptiveAvgPool2d((oh, ow)). */
gad_module *gad_nn_max_pool2d(const gad_pool_opts *opts);
gad_module *gad_nn_adaptive_avg_pool2d(int64_t oh, int64_t ow);

/* ======================================================================== */
/* Data: files, CSV, batches (src/io/data.c)                                 */
/* ======================================================================== */
/* Files are hostile input: only a regular file is opened (a FIFO, socket,
 * directory or device is an io error, refused without being opened, as in
 * gad_load), memory grows only up to a limit the caller sets, counts never
 * overflow, and a malformed file is a format error that says where. */

/* 1 if gad was built with zlib (gzip files can be read), else 0. */
int gad_zlib_available(void);

/* The largest file (after decompression) gad_read_bytes and gad_read_csv
 * read when their limit is 0: 1 GiB. */
#define GAD_READ_MAX_DEFAULT ((size_t)1 << 30)

/* Read the whole file at path into a new buffer: *data (n bytes, plus a
 * NUL after them that n does not count) and *n. A file that starts with
 * gzip's magic bytes (1f 8b, RFC 1952) is decompressed, whatever its name:
 * every member of a multi-member file, each one's CRC-32 and length
 * checked; a truncated or corrupt stream, or bytes after the last member
 * that are not another member, are a format error naming the file and the
 * compressed offset; a gzip file in a build without zlib is an unsupported
 * error. max_bytes (0: GAD_READ_MAX_DEFAULT) bounds the bytes made: a
 * plain file larger than it, or a gzip file that inflates past it (a gzip
 * bomb), is a format error naming the limit, with at most about 1.5 times
 * max_bytes allocated (the buffer grows as the stream inflates). The
 * buffer comes from gad's allocator: free it with gad_mem_free. Returns
 * GAD_OK, or the error's kind with *data NULL and *n 0 (io errors name the
 * path and the system's reason). */
gad_status gad_read_bytes(const char *path, size_t max_bytes, unsigned char **data,
                         size_t *n);

/* Options of gad_read_csv; a zeroed struct (or NULL) takes the defaults. */
typedef struct gad_csv_opts {
    gad_dtype_t dtype; /* GAD_F32 (0, the default) or GAD_F64 */
    int header;        /* 1: the first line is a header, skipped unread */
    char delimiter;    /* between fields; 0 means ',' */
    size_t max_bytes;  /* as gad_read_bytes's (0: GAD_READ_MAX_DEFAULT) */
} gad_csv_opts;

/* A CSV file of numbers (plain or gzip, read by gad_read_bytes) as a new
 * [rows, columns] tensor of opts->dtype. Each field is a decimal or
 * scientific number as strtod reads it in the "C" locale (also "inf",
 * "nan"), with spaces or tabs around it allowed; lines end in \n or \r\n,
 * the last one's is optional, and empty lines are skipped. Quotes are not
 * parsed (a header may hold any text but its own newline). Format errors
 * name the file, the line and the column (from 1; the header is line 1): a
 * field that is not a number (quoted in the message, its unprintable
 * bytes as \xNN), empty, longer than 256 characters or out of the dtype's
 * range (underflow to 0 is fine); a row with another number of fields than
 * the first; a file with no rows of numbers. A domain error for a dtype
 * other than f32/f64 or a delimiter that is a digit, sign, '.', 'e', 'E',
 * space, CR or LF (a tab is fine: TSV). The whole file is held in memory
 * while it is parsed (max_bytes bounds it; the tensor takes at most 4 or 8
 * bytes per two bytes of file). */
gad_tensor *gad_read_csv(const char *path, const gad_csv_opts *opts);

/* A sampler of minibatches: each epoch a permutation of the n example
 * numbers 0..n-1, cut into batches of `batch` (the last one smaller unless
 * drop_last). Epoch e's permutation is a function of (seed, e) alone, so a
 * run resumes at any epoch and batch (gad_sampler_seek) with the same
 * batches, on every platform: a Fisher-Yates shuffle (Durstenfeld's loop,
 * i from n-1 down to 1 swapping i with gad_rng_int(rng, 0, i + 1)) of
 * 0..n-1 by a gad_rng (xoshiro256**) seeded with gad_sampler_epoch_seed(
 * seed, e). Holds n int64 values. One thread at a time. */
typedef struct gad_sampler gad_sampler;

typedef struct gad_sampler_opts {
    int drop_last;  /* 1: drop a last batch smaller than `batch` */
    int sequential; /* 1: no shuffle, every epoch in the order 0..n-1 */
} gad_sampler_opts;

/* A sampler starting at epoch 0, batch 0 (opts NULL: shuffled, keeping
 * the last batch). n >= 0 and batch >= 1, else a domain error and NULL;
 * a memory error and NULL when its permutation cannot be allocated. Free
 * it with gad_sampler_free. */
gad_sampler *gad_sampler_new(int64_t n, int64_t batch, uint64_t seed,
                             const gad_sampler_opts *opts);
void gad_sampler_free(gad_sampler *s); /* accepts NULL */

/* The next batch of the current epoch: returns 1 and *batch, a new 1-D
 * i64 tensor of example numbers (owned as rule 2 says); or 0 and *batch
 * NULL when the epoch has no batch left, and then the sampler moves to the
 * next epoch, so that `while (gad_sampler_next(s, &idx) == 1) {...}` is one
 * epoch; or -1, *batch NULL and an error (a memory error, or a domain error
 * for a NULL sampler). */
int gad_sampler_next(gad_sampler *s, gad_tensor **batch);

/* The batches per epoch: n / batch rounded up, or down with drop_last. */
int64_t gad_sampler_num_batches(const gad_sampler *s);

/* The epoch the next call of gad_sampler_next serves (from 0), and the
 * number of its batches already given. */
int64_t gad_sampler_epoch(const gad_sampler *s);
int64_t gad_sampler_batch_index(const gad_sampler *s);

/* Move to batch `b` of epoch `epoch`, as if every earlier batch had been
 * taken: a resumed run continues where a saved one stopped. A domain error
 * for a negative epoch or b outside [0, num_batches]. */
gad_status gad_sampler_seek(gad_sampler *s, int64_t epoch, int64_t b);

/* The generator seed of an epoch's permutation: splitmix64's finalizer of
 * seed + (epoch + 1) * 0x9E3779B97F4A7C15 (Steele, Lea and Flood, "Fast
 * splittable pseudorandom number generators", OOPSLA 2014), so that
 * nearby seeds and epochs give unrelated streams. */
uint64_t gad_sampler_epoch_seed(uint64_t seed, int64_t epoch);
/* ======================================================================== */
/* Distributed data parallelism (src/dist)                                   */
/* ======================================================================== */
/* Several processes (ranks) train one model: each computes gradients on its
 * own share of the batch, gad_dist_average_grads averages them over all
 * ranks, and every rank takes the same optimizer step, so the parameters
 * stay equal everywhere. The transport is MPI (any MPI the launcher runs:
 * mpirun, srun). Tensors may live on any device: those on a device other
 * than the CPU are copied into gad's host buckets by their back end (one
 * copy per tensor, or per bucket-sized piece of a large one), reduced over
 * MPI, and copied back into the same tensors in place, so that a tensor
 * keeps its identity, device and dtype; one call may mix devices. When gad
 * is built with NCCL (GAD_NCCL, with CUDA and MPI) and every tensor with
 * elements of a call lives on one CUDA device, the call goes over NCCL
 * instead, GPU memory to GPU memory, queued after the work gad queued on
 * that device and waited for before it returns (MPI carries NCCL's unique
 * id at gad_dist_init; the communicator is made on that device at the
 * first such call, and binds the rank to it: later calls with tensors on
 * another device go through the host). The choice is part of the
 * signature below: every rank's tensors must be on one CUDA device, or no
 * rank's. GAD_DIST_NCCL=0 in the environment at gad_dist_init sends CUDA
 * tensors through the host instead (on every rank, if one rank says so);
 * libnccl is opened at run time, and where it is missing CUDA tensors go
 * through the host as well. NCCL needs one GPU per rank (it refuses two
 * ranks on one GPU: a comm error at the first call). A gad built without MPI (GAD_MPI=OFF, or
 * no MPI found), or a program not started by an MPI launcher, is a world of
 * one: the same functions, rank 0 of size 1, every collective a no-op that
 * leaves its data as it is (a mean over one rank is the value itself), so
 * programs need no #ifdef.
 *
 * Rules of the game (as for MPI collectives): every rank calls the same
 * collectives in the same order, with the same tensor count, shapes and
 * dtypes, from the thread that called gad_dist_init. Each collective first
 * compares a signature of its arguments across ranks (the op, the call's
 * sequence number, the tensor count, the total element count, a hash of the
 * dtypes and shapes): a mismatch is a shape error on every rank, naming
 * what each rank passed, before any data moves.
 *
 * No hang: every collective is a nonblocking MPI call (or a nonblocking
 * NCCL communicator's group, whose errors and CUDA stream are polled)
 * against a deadline, gad_dist_timeout() seconds (default 60; environment variable
 * GAD_DIST_TIMEOUT, or gad_dist_set_timeout). When it passes, the call
 * spends at most min(2 s, timeout / 2) more asking the other ranks which of
 * them are still there, then fails with a comm error naming the op and the
 * ranks that did not answer (dead, stuck elsewhere, or in another
 * collective); over NCCL, ncclCommAbort ends the communicator and the
 * comm error names the op and the NCCL call. An MPI or NCCL error
 * (MPI_ERRORS_RETURN is set on gad's communicators) is a comm error too,
 * with the library's text. gad never calls MPI_Abort. After a comm error the world is broken on every
 * rank for the rest of the process (MPI cannot be initialized again): every
 * later collective fails at once with a comm error, on the rank whose own
 * error (a bad argument, a failed allocation) made the others fail too;
 * end the program with a non-zero status (the launcher then stops the
 * remaining ranks). A mismatch of the signature alone (a shape error) does
 * not break it.
 *
 * Note that mpirun itself ends the whole job within about a second when a
 * rank dies or exits non-zero; the deadline matters where the launcher
 * does not (OpenMPI's --enable-recovery, other launchers) and when a rank
 * hangs or runs into a different collective. */

/* Join the world the launcher started: MPI_Init_thread(FUNNELED) when the
 * environment says an MPI launcher started this process (OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE, PMIX_RANK, ...; GAD_DIST=mpi forces it, GAD_DIST=none makes a
 * world of one), unless the program initialized MPI itself (then gad uses
 * it and leaves its finalization to the program); with NCCL, the ranks then
 * agree whether to use it and rank 0's ncclUniqueId is broadcast over MPI
 * (GAD_DIST_NCCL=0 leaves it out). argc and argv may be NULL.
 * In a build without MPI, or when not launched by one, a world of one.
 * Calling it again returns GAD_OK and does nothing. After MPI was
 * finalized (gad_dist_finalize, or the program's MPI_Finalize) it is an
 * unsupported error: MPI cannot be initialized twice in one process, so a
 * world is joined once per process. A comm error with MPI's
 * text when MPI fails to initialize; a domain error naming the variable
 * for a GAD_DIST_TIMEOUT that is not a decimal number of seconds > 0
 * ("30", "2.5", "1e2"; not "0x10", "inf" or " 5") or a GAD_DIST_BUCKET_BYTES
 * that is not a decimal integer in [4096, 2^40]. Call the gad_dist_* functions from the thread that called
 * it. */
gad_status gad_dist_init(int *argc, char ***argv);

/* This process's rank in [0, size) and the world's size (0 and 1 before
 * gad_dist_init and in a world of one). */
int gad_dist_rank(void);
int gad_dist_size(void);

/* The transport: "mpi", "mpi+nccl" (MPI, and NCCL for CUDA tensors), or
 * "none" for a world of one. */
const char *gad_dist_backend(void);

/* The deadline of every collective, in seconds (default 60, or
 * GAD_DIST_TIMEOUT at gad_dist_init). gad_dist_set_timeout returns the
 * previous value; a value that is not > 0 leaves it unchanged. */
double gad_dist_timeout(void);
double gad_dist_set_timeout(double seconds);

typedef enum gad_dist_op {
    GAD_DIST_SUM = 0,
    GAD_DIST_MEAN = 1, /* the sum divided by the world's size */
    GAD_DIST_MIN = 2,
    GAD_DIST_MAX = 3
} gad_dist_op;

/* Reduce tensors[0..n) (f32 or f64, on any devices) element by element
 * over all ranks, in place: afterwards every rank holds the same values.
 * Writes as gad_data_mut does, on the tensor's own device (copy-on-write:
 * each tensor keeps its identity, device and dtype, and other tensors that
 * shared its storage keep the old values). The data of all tensors of one
 * dtype travel packed in host buckets (gad_dist_bucket_bytes), one MPI
 * all-reduce per bucket, a device's tensors copied in and out by their back
 * end; over NCCL (above), one group of in-place NCCL all-reduces, and a
 * mean the sum divided on the device as the host divides it. Sums of
 * integer-valued floats are exact; other sums depend on MPI's (or NCCL's)
 * reduction order, which is fixed for a given world size and message size
 * (the same run gives the same bits). A call that fails leaves its
 * tensors as they were on the host path: the data are reduced in a host
 * scratch as large as the call's data (kept until gad_dist_finalize) and
 * copied back only when every MPI call succeeded. NCCL reduces in place
 * and cannot undo: after a comm error over NCCL each element of the
 * call's tensors holds its old value, the reduced one or a partial sum;
 * treat them as lost. MIN and MAX propagate NaN: a NaN
 * in an element on any rank gives NaN there on every rank, so that a
 * rank's non-finite value is never lost (unlike gad_amax, which skips NaN
 * within a tensor; MPI's built-in MIN and MAX keep or drop a NaN
 * depending on the order of the ranks, so gad reduces with its own). Over
 * NCCL they are NCCL's, which does not promise to keep a NaN. A domain
 * error for NULL or i64
 * tensors or a bad op, a not-unique error for an output of a tracked op,
 * a device error for a device's failed work or copy (the work queued
 * before the call is waited for first, so that its fault is reported
 * before any data move), a shape error for a mismatch across ranks, a
 * comm error as above. */
gad_status gad_dist_allreduce(gad_tensor *const *tensors, int n, gad_dist_op op);

/* The same for n doubles in host memory (losses, counts, flags). */
gad_status gad_dist_allreduce_f64(double *values, int n, gad_dist_op op);

/* Copy root's tensors[0..n) (any dtype, on any devices) into the tensors
 * of every other rank, in place (as gad_data_mut writes, on each tensor's
 * device, as above): initial parameters from rank 0. Errors as
 * gad_dist_allreduce; a domain error when root is not a rank. */
gad_status gad_dist_broadcast(gad_tensor *const *tensors, int n, int root);

/* Average the gradients of params[0..n) over all ranks, in place: the mean
 * (the sum divided by the size) of every gradient, packed into buckets of
 * gad_dist_bucket_bytes(), one all-reduce per bucket and dtype (f32, f64),
 * not one per tensor. grads[i] is params[i]'s gradient (as gad_grad returns
 * them); grads NULL takes the leaves' slots (as gad_backward fills them and
 * gad_optim_step reads them), where an empty slot is skipped, and must be
 * empty on every rank. Call it between the backward pass and
 * gad_clip_grad_norm / gad_optim_step: every rank then clips by the norm of
 * the averaged gradients, which is the global norm, and steps the same way.
 * The gradients may live on any devices (the transport as in
 * gad_dist_allreduce). Errors as gad_dist_allreduce; a shape error names
 * a gradient whose shape is not its parameter's. */
gad_status gad_dist_average_grads(gad_tensor *const *params, gad_tensor *const *grads,
                                  int n);

/* The size of one bucket: 25 MiB (GAD_DIST_BUCKET_BYTES in the environment
 * at gad_dist_init changes it; at least 4 KiB). It sets where the data are
 * cut into MPI calls, so every rank must have the same: it is part of the
 * signature (a shape error naming each rank's size). */
size_t gad_dist_bucket_bytes(void);

/* Block until every rank has called it (polled against the deadline). */
gad_status gad_dist_barrier(void);

/* What the collectives of this process cost since gad_dist_init (or the
 * last reset): calls, bytes reduced or broadcast (this rank's buffers, not
 * the wire's), and seconds spent inside them, waiting for slower ranks
 * included. */
typedef struct gad_dist_stats {
    int64_t calls;
    int64_t bytes;
    double seconds;
} gad_dist_stats;

void gad_dist_stats_get(gad_dist_stats *out);
void gad_dist_stats_reset(void);

/* Leave the world: a barrier (against the deadline), then MPI_Finalize when
 * gad initialized MPI. After a comm error, or when the barrier times out,
 * it does not call MPI_Finalize (it could wait forever for a lost rank) and
 * returns a comm error: exit non-zero. A program that fails may exit
 * without calling it; the launcher then ends the job. A world of one
 * returns GAD_OK. An NCCL communicator is finalized first (against the
 * deadline; aborted after a comm error or when a rank does not join). */
gad_status gad_dist_finalize(void);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#ifdef GAD_CALL_SITES
#include "gad_call_sites.h"
#endif
#endif /* GAD_H */
