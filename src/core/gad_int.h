/* gad_int.h: private structures and helpers shared by gad's source files.
 * Nothing here is part of the public API. */
#ifndef GAD_INT_H
#define GAD_INT_H

#include "gad.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define GAD_LIKELY(x) __builtin_expect(!!(x), 1)
#define GAD_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GAD_PRINTF(a, b) __attribute__((format(printf, a, b)))
/* A rare path kept out of line, so that the common one needs no frame. */
#define GAD_COLD __attribute__((noinline, cold))
/* The per-op path (tensor and node life, scopes, the elementwise ops and
 * the reverse pass): placed together in .text.hot, so that its speed does
 * not depend on where the linker happens to put each function. */
#define GAD_HOT __attribute__((hot))
/* A per-op driver that each public op must inline (its constant arguments
 * fold away), whatever the compiler's size heuristics say. */
#define GAD_ALWAYS_INLINE inline __attribute__((always_inline))
/* Ask for the cache lines [p, p + n) ahead of a write (a hint: any p,
 * NULL included, is safe). Graphs too large for the cache are walked by
 * pointers, one miss after another, unless the next objects are asked for
 * while the current one is worked on. */
#define GAD_PREFETCH_W(p, n)                                                   \
    do {                                                                       \
        const char *gad_pf_ = (const char *)(p);                               \
        for (size_t gad_pfi_ = 0; gad_pf_ && gad_pfi_ < (size_t)(n); gad_pfi_ += 64) \
            __builtin_prefetch(gad_pf_ + gad_pfi_, 1, 3);                      \
    } while (0)
#else
#define GAD_LIKELY(x) (x)
#define GAD_UNLIKELY(x) (x)
#define GAD_PRINTF(a, b)
#define GAD_COLD
#define GAD_HOT
#define GAD_ALWAYS_INLINE inline
#define GAD_PREFETCH_W(p, n) ((void)(p), (void)(n))
#endif

/* Alignment of every storage buffer, in bytes. */
#define GAD_ALIGN 64

/* ------------------------------------------------------- reference counts */

/* Drop one reference from *refs; true when it was the last. A count of 1
 * means the caller holds the only reference, so no other thread can be
 * touching the count (taking a reference needs one already): the locked
 * read-modify-write, a full barrier on x86, is replaced by a plain store of
 * 0. The acquire load pairs with the release part of other threads'
 * decrements, as the decrement itself would. */
static inline bool gad__unref(atomic_long *refs) {
    if (atomic_load_explicit(refs, memory_order_acquire) == 1) {
        atomic_store_explicit(refs, 0, memory_order_relaxed);
        return true;
    }
    return atomic_fetch_sub_explicit(refs, 1, memory_order_acq_rel) == 1;
}

/* ---------------------------------------------------------------- storage */

/* A storage belongs to one device and points to its elements. A host (CPU)
 * storage lies in one block from the allocator: this header, then the
 * elements, which start on a GAD_ALIGN boundary, the header just before
 * them (a small buffer then takes 32 bytes beside its elements, not a
 * block aligned to 64 with its header padded to 64), and `data` points just
 * past the header. Freed host storages go to a per-thread cache by size
 * class (src/core/memory.c), linked through `next`. A device storage is
 * this header alone, in host memory, with `data` pointing to the device's
 * memory; its back end allocates and frees it (gad_devmem below). */
typedef struct gad_storage {
    atomic_long refs;
    size_t cap;                /* usable bytes */
    union {
        void *data;               /* the elements, while the storage lives */
        struct gad_storage *next; /* cache free-list link, while cached */
    };
    int16_t sclass;            /* cache size class, -1 when uncached */
    uint8_t dev;               /* the device (0: the host) */
    uint8_t pad_;
    uint32_t shift;            /* host: bytes from the block's start to here */
} gad_storage;

#define GAD_STORAGE_HDR sizeof(gad_storage)

/* The elements (gad__ptr below finds them without reading s on the host). */
static inline void *gad__storage_data(const gad_storage *s) { return s->data; }

/* A host storage with room for at least nbytes, refs = 1; NULL when the
 * allocator fails (no error recorded). */
gad_storage *gad__storage_new(size_t nbytes);
/* The same on device dev (the host for 0), through its back end. */
gad_storage *gad__storage_new_dev(int dev, size_t nbytes);
static inline gad_storage *gad__storage_new_on(int dev, size_t nbytes) {
    return GAD_LIKELY(dev == 0) ? gad__storage_new(nbytes) /* 0: the host */
                                : gad__storage_new_dev(dev, nbytes);
}
void gad__storage_release(gad_storage *s);

/* ---------------------------------------------------------------- devices
 *
 * Device 0 is the host, whose memory is core's own (memory.c). Every other
 * device is registered by its back end (src/backend), which hands core the
 * memory half of its table: allocation, free and the copies that move
 * elements between the device and the host, or within the device. Core
 * reaches a device only through these hooks; the kernels live in the back
 * end's table (src/backend/backend.h). */

#define GAD_MAX_DEVICES 16
#define GAD_DEV_HOST 0

typedef struct gad_devmem {
    const char *name; /* "cpu", "cuda:0", "test:0", ... */
    int type;         /* gad_device_type: GAD_DEVICE_CUDA, ... */
    int index;        /* its number among the devices of its type */
    /* A storage (refs = 1, dev set) with room for nbytes; NULL when the
     * device is out of memory (no error recorded: the caller reports). */
    gad_storage *(*storage_new)(int dev, size_t nbytes);
    void (*storage_free)(gad_storage *s);
    /* n bytes from the device at src to the host at dst, and back, waiting
     * for the work queued before; 0 or -1. A device may record its own
     * error there (a fault of that work, an index error it deferred: see
     * backend.h); callers record theirs after it, which the first-error
     * rule then drops. */
    int (*to_host)(void *dst, const void *src, size_t n);
    int (*from_host)(void *dst, const void *src, size_t n);
    /* dst (packed, src's dtype and shape, on src's device) = src's elements
     * in row-major order, any strides (a broadcast included); or, with
     * dst_strides, laid out with those strides (in elements, positions not
     * overlapping). */
    void (*copy_strided)(const struct gad_tensor *src, void *dst,
                         const int64_t *dst_strides);
    /* n elements of dtype at p = value (converted as gad_full does). */
    void (*fill)(void *p, int dtype, int64_t n, double value);
    /* Wait for the device's work queued by this thread; 0, or -1 with the
     * device's error recorded under op (an index error it deferred under
     * the op that asked for the check). */
    int (*sync)(const char *op, int dev);
    /* The device's free and total bytes; 0 or -1 (no error recorded). May
     * be NULL: the sizes are then unknown (a device error). */
    int (*mem_info)(int dev, size_t *free_bytes, size_t *total_bytes);
    /* The bytes of the device's live storages (every thread's) and the
     * bytes its allocator keeps cached for reuse (in no storage), as the
     * back end counts them (gad_mem_stats, gad_device_mem_stats); 0 or -1
     * (no error recorded). May be NULL: the counts are unknown (left out
     * of gad_mem_stats' sums; a device error for gad_device_mem_stats). */
    int (*mem_stats)(int dev, int64_t *live_bytes, int64_t *cached_bytes);
} gad_devmem;

/* The memory hooks of device dev (NULL when no device has that number);
 * the host's are gad__host_mem. */
extern const gad_devmem *gad__devmem[GAD_MAX_DEVICES];
extern const gad_devmem gad__host_mem;

/* The host's counters (memory.c): bytes in live host storages, every
 * thread's, and bytes in the calling thread's caches (gad_mem_stats). */
void gad__host_mem_counts(int64_t *live_bytes, int64_t *cached_bytes);

/* The calling thread's default device for constructors (gad.h), 0 at
 * first; a registered device whenever it is not 0. */
extern _Thread_local int gad__default_dev;

/* t (refs = 1, not owned, on the host) moved to the default device when
 * that is not the host (t is released; the copy takes its place), then
 * handed to the current scope. NULL and a memory error on failure. */
gad_tensor *gad__own_on_default(const char *op, gad_tensor *t);

/* For code that makes host tensors with the public constructors (shapes,
 * masks, samples): the default device set to the host until the matching
 * gad__host_default_end(saved). */
static inline int gad__host_default_begin(void) {
    int d = gad__default_dev;
    gad__default_dev = 0;
    return d;
}
static inline void gad__host_default_end(int saved) { gad__default_dev = saved; }

/* 1 if dev names a device (host included), else 0. */
static inline bool gad__dev_valid(int dev) {
    return dev >= 0 && dev < GAD_MAX_DEVICES && gad__devmem[dev] != NULL;
}

/* Register a device's memory hooks; returns its number (1..), or -1 when
 * every slot is taken. */
int gad__device_register(const gad_devmem *m);

/* The name of device dev ("cpu", ...; "?" when none). */
const char *gad__device_name(int dev);

/* A device error: the op's inputs are on two devices. Returns NULL. */
void *gad__err_device(const char *op, int dev_a, int dev_b);

/* ----------------------------------------------------------------- tensor */

struct gad_node; /* the autodiff tape (src/ad) */

struct gad_tensor {
    atomic_long refs;
    gad_storage *st;
    struct gad_node *node; /* NULL for a constant; else a leaf or an op node */
    int64_t offset;        /* in elements */
    int64_t numel;
    int64_t shape[GAD_MAX_RANK];
    int64_t strides[GAD_MAX_RANK]; /* in elements */
    uint8_t dtype;
    uint8_t rank;
    uint8_t contig; /* row-major, offset 0 (the strict test of SPEC 1.3) */
    uint8_t dev;    /* the device of st, copied here for the ops' checks */
};

/* The element size of a valid dtype (gad.h fixes the numbers: f32, f64,
 * i64, bool, f16, bf16, i32, u8), one nibble each. */
static inline size_t gad__dsize(int dtype) {
    return (size_t)((0x14221884u >> (4 * (dtype & 7))) & 0xf);
}

static inline bool gad__dtype_valid(int dtype) {
    return dtype >= GAD_F32 && dtype <= GAD_U8;
}

/* One element of dtype at p as a double (exact but for i64 beyond 2^53). */
double gad__elem_f64(int dtype, const void *p);

/* f16 or bf16: stored in two bytes, computed in f32 (src/core/half.h). */
static inline bool gad__is_half(int dtype) {
    return dtype == GAD_F16 || dtype == GAD_BF16;
}

static inline bool gad__is_float(int dtype) {
    return dtype == GAD_F32 || dtype == GAD_F64;
}

/* Pointer to element 0 of the view (offset applied). */
static inline void *gad__ptr(const gad_tensor *t) {
    /* On the host the elements lie just past the storage's header, an
     * address computed without reading the storage: its header is in the
     * cache line before the elements, which a kernel otherwise never
     * touches (reading it cost W1's backward, whose saved tensors' headers
     * have left the cache, 4% of its time). t->dev says where t lives. */
    char *base = GAD_LIKELY(t->dev == 0) ? (char *)t->st + sizeof(gad_storage) : t->st->data;
    return base + (size_t)t->offset * gad__dsize(t->dtype);
}

/* A new header (refs = 1, not owned by any scope), made by op (for
 * gad_debug_track). */
gad_tensor *gad__header_new(const char *op);
/* A header whose last reference is gone: poisoned (refs 0) and queued
 * behind the last GAD_QUARANTINE released headers before it can be reused
 * (memory.c), even with the cache disabled. */
void gad__header_free(gad_tensor *t);
#ifndef GAD_QUARANTINE
#define GAD_QUARANTINE 256
#endif

/* Whether t (not NULL) is a released header: refs 0 from its release until
 * the quarantine lets it be reused. Every public function that takes a
 * tensor checks it (GAD_NEED, gad__bad_tensor): using a released or
 * scope-ended tensor is an error, not a silent alias of a newer one. */
static inline bool gad__released(const gad_tensor *t) {
    return GAD_UNLIKELY(atomic_load_explicit(&((gad_tensor *)t)->refs,
                                             memory_order_relaxed) <= 0);
}
/* NULL or released: the argument check of the public functions. */
static inline bool gad__bad_tensor(const gad_tensor *t) {
    return GAD_UNLIKELY(!t) || gad__released(t);
}
/* The error for an argument gad__bad_tensor refused: a NULL argument
 * (gad__null_arg) or "use of a released tensor" (a domain error), under
 * op. Returns NULL. */
void *gad__bad_arg(const char *op, const gad_tensor *t);
void *gad__err_released(const char *op);
/* The same for the first of n arguments that gad__bad_tensor refuses. */
void *gad__bad_of(const char *op, int n, const gad_tensor *const *ts);
/* Whether one of ts[0..n) is a released tensor (NULL entries are skipped:
 * optional arguments, checked by the caller); if so it records "use of a
 * released tensor" under op. For the functions built on the ops (the nn
 * layer), which name themselves instead of the first op they call:
 * GAD_LIVE(op, x, w, b) lists the arguments. */
static inline bool gad__any_released(const char *op, int n, const gad_tensor *const *ts) {
    for (int i = 0; i < n; i++)
        if (ts[i] && gad__released(ts[i])) {
            gad__err_released(op);
            return true;
        }
    return false;
}
#define GAD_LIVE(op, ...)                                                                     \
    gad__any_released(op,                                                                     \
                      (int)(sizeof((const gad_tensor *const[]){__VA_ARGS__}) /                \
                            sizeof(const gad_tensor *)),                                      \
                      (const gad_tensor *const[]){__VA_ARGS__})

/* The live-tensor report (debug.c; gad_debug_live_report): while on, every
 * new header is recorded with the op that made it, and forgotten when it
 * is freed. Off by default. The switch is a bit of memory.c's, beside the
 * quarantine's, so that the header functions test one byte. */
bool gad__debug_live_get(void);
void gad__debug_live_set(bool on);
void gad__debug_made(const gad_tensor *t, const char *op);
void gad__debug_gone(const gad_tensor *t);

/* A new contiguous tensor on device dev with uninitialized elements,
 * refs = 1, not yet owned by a scope. Records a shape or memory error under
 * `op` and returns NULL on failure. */
gad_tensor *gad__tensor_new(const char *op, int dev, int dtype, const int64_t *shape,
                            int rank);

/* A new contiguous tensor of x's device, dtype and shape (uninitialized,
 * refs = 1, not owned): gad__tensor_new without re-checking a shape that a
 * tensor already has. NULL and a memory error on failure. */
gad_tensor *gad__tensor_like(const char *op, const gad_tensor *x);

/* Same as gad__tensor_new, zero-filled. */
gad_tensor *gad__tensor_zeros(const char *op, int dev, int dtype, const int64_t *shape,
                              int rank);

/* gad_full on device dev, owned by the current scope (for VJPs, whose
 * constants go where their gradients are). */
gad_tensor *gad__full_on(int dev, const int64_t *shape, int rank, int dtype, double value);

/* Every element of t (contiguous) = value, converted as gad_full does; on
 * t's device. gad__host_fill is the host's loop (n elements at p). */
void gad__fill(gad_tensor *t, double value);
void gad__host_fill(void *p, int dtype, int64_t n, double value);

/* A new header viewing src's storage with src's layout, refs = 1, no node
 * (a detached alias). NULL and a memory error on failure. */
gad_tensor *gad__alias(const char *op, gad_tensor *src);

/* Set the layout of t (shape, strides, offset) and recompute numel and the
 * contiguity flag. */
void gad__set_layout(gad_tensor *t, const int64_t *shape, const int64_t *strides,
                     int rank, int64_t offset);

/* Hand a fresh tensor (refs = 1) to the innermost scope, or to the caller
 * when no scope is open. Returns t, or NULL (t released, memory error) if
 * the scope could not grow. NULL passes through. */
gad_tensor *gad__own(gad_tensor *t);

/* The inverse of gad__own for the tensor it handed over last: when t is
 * the innermost open scope's newest tensor (and not kept), take it off the
 * scope and return true, the scope's reference now the caller's; false
 * otherwise, nothing changed. A reference moved instead of a retain and a
 * release: two locked instructions fewer (the reverse pass's gradients). */
bool gad__unown_last(gad_tensor *t);

/* Copy-on-write: give t a private, packed storage unless it already has one.
 * 0 on success, -1 (memory error recorded under op) on failure. */
int gad__make_unique(const char *op, gad_tensor *t);
/* The same for a caller that overwrites every element of t from its old
 * values (an optimizer's update): where t is packed and its storage shared
 * (a graph holds the old values), *fresh gets a new storage of t's size on
 * t's device instead of a copy being made, and t is left as it is; else
 * *fresh is NULL and t was made unique. 0, or -1 (memory error recorded
 * under op; *fresh NULL). gad__swap_storage then installs s (such a fresh
 * storage) as t's, row-major, and returns the old one, whose reference t
 * held: the caller reads the old values from it (gad__ptr(t) taken before
 * the swap) and then releases it. */
int gad__make_unique_whole(const char *op, gad_tensor *t, gad_storage **fresh);
gad_storage *gad__swap_storage(gad_tensor *t, gad_storage *s);

/* Copy the elements of src (any strides, a broadcast view included), in
 * row-major order of its shape, to dst (packed, same dtype, on src's
 * device); in parallel for large tensors. */
void gad__pack(const gad_tensor *src, void *dst);

/* t itself (a new reference) when contiguous, else a packed copy of it on
 * its device, off the tape (refs = 1). Either way the caller owns one
 * reference and releases it (or hands it to a scope with gad__own). NULL and
 * a memory error on failure. */
gad_tensor *gad__contig(const char *op, const gad_tensor *t);

/* A packed copy of t's elements on device dev (refs = 1, not owned, no
 * node), through the devices' copies. NULL and a memory error on failure. */
gad_tensor *gad__to_dev(const char *op, const gad_tensor *t, int dev);

/* A device error naming op and t's device, for functions that need the
 * elements in host memory (gad_data). Returns NULL. */
void *gad__need_host(const char *op, const gad_tensor *t);

/* Copy t's elements in row-major order into dst (host memory, n elements of
 * dtype to), converting (float -> i64 truncates, saturates, NaN -> 0); a
 * device tensor is copied to the host first. Records a shape error if
 * n < numel. */
gad_status gad__convert(const char *op, gad_tensor *t, void *dst, size_t n,
                        int to);
/* The host's loop of it: t's elements (host memory) converted into dst. */
void gad__host_convert(const gad_tensor *t, void *dst, int to);

/* Copy src's elements to dst laid out with dst_strides (src's shape; in
 * elements, same dtype, same device), in parallel for large tensors. The
 * destination positions must not overlap. gad__host_copy_strided is the
 * host's loop; a NULL dst_strides there means packed. */
void gad__copy_strided(const gad_tensor *src, void *dst,
                       const int64_t *dst_strides);
void gad__host_copy_strided(const gad_tensor *src, void *dst,
                            const int64_t *dst_strides);

/* Hooks for the layers above core. A tensor holds a reference to its tape
 * node (src/ad), so freeing a tensor drops it through gad__node_free_hook,
 * which the tape sets before it makes its first node. gad_cache_trim (and a
 * thread's exit) also empties what each function given to
 * gad__on_cache_trim keeps for the calling thread (the node pool, GEMM's
 * packing buffers); gad__on_threads_set hears every change of the thread
 * count (a BLAS that runs threads of its own). At most 8 of each. */
extern void (*gad__node_free_hook)(struct gad_node *n);
void gad__on_cache_trim(void (*fn)(void));
void gad__on_threads_set(void (*fn)(int n));

/* Run f before main (and when a shared library is loaded): how a layer
 * registers its hooks without core calling up to it. */
#if defined(__GNUC__) || defined(__clang__)
#define GAD_CONSTRUCTOR(f) static void f(void) __attribute__((constructor)); static void f(void)
#else
#error "gad needs GCC or clang (constructors, thread-local storage)"
#endif

/* The calling thread's caches (freed buffers, tensor headers, graph nodes)
 * hold at most the limit of gad_set_cache_limit in all. gad__cache_admit
 * counts n more bytes and says true if they fit (else counts nothing);
 * gad__cache_withdraw uncounts n bytes taken back out. */
bool gad__cache_admit(size_t n);
void gad__cache_withdraw(size_t n);

/* Small objects (headers, nodes, small buffers) come from the allocator a
 * run at a time when their free list is empty: a graph's objects of one
 * kind then lie side by side in the order they are made, and a walk over a
 * graph bigger than the cache reads memory the hardware prefetcher can
 * follow (W1's chain of 10^6 ops: 10% faster than with objects from
 * malloc one at a time). gad__alloc_run fills run[] with up to
 * GAD_RUN_BYTES / size objects of that size (at most GAD_RUN_MAX), already
 * counted in the cache, and returns how many; the caller pushes them on its
 * free list last first, so that they are handed out in address order. */
#define GAD_RUN_BYTES 8192
#define GAD_RUN_MAX 32
int gad__alloc_run(void **run, size_t size);

/* ----------------------------------------------------------------- memory */

/* A layer above core that keeps blocks from the allocator per thread (the
 * tape's node pool, GEMM's scratch) registers, once on each thread, the
 * address of that thread's cache and a function that gives back every
 * block of a cache at that address through gad__free, touching nothing
 * else of the thread (no gad__cache_withdraw: the caller zeroes the
 * thread's count). gad_set_allocator calls it for every thread, while they
 * do not use gad, so that no block outlives the allocator that made it. At
 * most GAD_THREAD_CACHES per thread. */
#define GAD_THREAD_CACHES 4
void gad__register_thread_cache(void *state, void (*flush)(void *state));

/* Through the allocator hook; aligned to GAD_ALIGN; NULL on failure. */
void *gad__alloc(size_t n);
void gad__free(void *p, size_t n);

/* The same for small objects that need no more than 16-byte alignment
 * (tensor headers, nodes): a 64-byte alignment costs glibc a third more
 * memory per object, and a large graph is bound by its bytes. Freed with
 * gad__free. */
void *gad__alloc_obj(size_t n);


/* ----------------------------------------------------------------- errors */

/* Record an error unless one is pending. Always returns NULL. */
void *gad__err(gad_status kind, const char *op, const char *fmt, ...)
    GAD_PRINTF(3, 4);

/* Record a domain error for a NULL argument unless an error is pending (an
 * earlier failure is then what made it NULL). Returns NULL. */
void *gad__null_arg(const char *op);

/* The public op this thread is running, for errors raised under it by what
 * it calls (an unsupported kernel, gad__err_unsupported): a composite op
 * (variance, a layer) names itself rather than the op inside it, and the
 * engine names the op whose VJP failed (gad__err_unsupported_rename).
 * gad__op_public_enter sets op when none is set (the outermost wins) and
 * returns what to give back to gad__op_public_leave. NULL: none. */
const char *gad__op_public(void);
const char *gad__op_public_enter(const char *op);
void gad__op_public_leave(const char *prev);
/* When the pending error is an unsupported one, record it again under op
 * (the engine, after a VJP failed). */
void gad__err_unsupported_rename(const char *op);
static inline void gad__op_public_cleanup(const char *const *prev) {
    gad__op_public_leave(*prev);
}
/* First line of a composite op (one made of other public ops): it is the
 * public op until the function returns (a cleanup variable, GCC and clang). */
#define GAD_COMPOSITE(op)                                                      \
    __attribute__((cleanup(gad__op_public_cleanup), unused))                   \
    const char *const gad_public_prev_ = gad__op_public_enter(op)

/* Format a shape as "[2,3]" into buf: gad_shape_format with a cap of
 * GAD_SHAPE_FORMAT_CAP, so buf needs room for that, or for the whole text
 * (3 + 21 * rank bytes). GAD_SHAPE_BUF is always enough. Returns buf. */
char *gad__shape_str(char *buf, const int64_t *shape, int rank);
#define GAD_SHAPE_BUF 200
_Static_assert(GAD_SHAPE_BUF >= GAD_SHAPE_FORMAT_CAP,
               "GAD_SHAPE_BUF holds every shape");

/* ----------------------------------------------------------------- shapes */

/* Validate a shape (rank 0..8, dims >= 0, element count fits in int64 and in
 * memory). Stores the count. 0 or -1 (shape error under op). */
int gad__check_shape(const char *op, const int64_t *shape, int rank,
                     int64_t *numel);

/* Normalize an axis against rank (negative counts from the end). 0, or -1
 * with a shape error "axis A out of rank R". */
int gad__norm_axis(const char *op, int axis, int rank, int *out);

/* Normalize a list of distinct axes into a mask (bit i set = axis i).
 * 0, or -1 with a shape error (out of range, duplicate). */
int gad__axes_mask(const char *op, const int *axes, int n, int rank,
                   unsigned *mask);

/* NumPy broadcast of two shapes into out (rank max(ra, rb)). 0 or -1 with a
 * shape error "incompatible A vs B". */
int gad__broadcast_shapes(const char *op, const int64_t *a, int ra,
                          const int64_t *b, int rb, int64_t *out, int *rout);

/* Strides of t's elements when t is broadcast to shape (rank >= t's rank):
 * padded leading axes and stretched size-1 axes get stride 0. */
void gad__broadcast_strides(const gad_tensor *t, const int64_t *shape, int rank,
                            int64_t *strides);

void gad__row_major(const int64_t *shape, int rank, int64_t *strides);

static inline bool gad__same_shape(const int64_t *a, int ra, const int64_t *b,
                                   int rb) {
    if (ra != rb) return false;
    for (int i = 0; i < ra; i++) /* ranks are small: no call to memcmp */
        if (a[i] != b[i]) return false;
    return true;
}

/* ------------------------------------------------------------- checks */

/* Shared argument checks; each records the error and returns -1 (the
 * tests inline, the messages out of line). */
int gad__need_float_fail(const char *op, const gad_tensor *t);
int gad__need_same_dtype_fail(const char *op, const gad_tensor *a,
                              const gad_tensor *b);
static inline int gad__need_float(const char *op, const gad_tensor *t) {
    return GAD_LIKELY(gad__is_float(t->dtype)) ? 0 : gad__need_float_fail(op, t);
}
static inline int gad__need_same_dtype(const char *op, const gad_tensor *a,
                                       const gad_tensor *b) {
    return GAD_LIKELY(a->dtype == b->dtype) ? 0 : gad__need_same_dtype_fail(op, a, b);
}
int gad__need_i64(const char *op, const gad_tensor *index);

/* ---- half precision (issue 29): ops on f16/bf16 inputs
 * f16 and bf16 are floats for the user: an op that takes them computes in
 * f32 and rounds once on output. gad__is_float stays the dtypes kernels
 * compute in (f32, f64); gad__is_floating adds the two half dtypes.
 * gad__need_floating accepts all four on the host; a half tensor on
 * another device is GAD_ERR_UNSUPPORTED (no device has half kernels). */
static inline bool gad__is_floating(int dtype) {
    return gad__is_float(dtype) || gad__is_half(dtype);
}
/* PyTorch's categories for result_type: bool 0 < integers 1 < floats 2. */
static inline int gad__dtype_category(int dt) {
    return dt == GAD_BOOL ? 0 : (dt == GAD_I64 || dt == GAD_I32 || dt == GAD_U8) ? 1 : 2;
}
/* torch.promote_types on gad's dtypes: the higher category's dtype; within
 * the floats the wider (f64 over all, f32 over the halves, f16 with bf16
 * gives f32), within the integers the wider (u8 < i32 < i64). */
static inline int gad__promote_types(int a, int b) {
    if (a == b) return a;
    int ca = gad__dtype_category(a), cb = gad__dtype_category(b);
    if (ca != cb) return ca > cb ? a : b;
    if (ca == 2) {
        if (a == GAD_F64 || b == GAD_F64) return GAD_F64;
        return GAD_F32; /* f32 with a half, or f16 with bf16 */
    }
    return a == GAD_I64 || b == GAD_I64 ? GAD_I64 : GAD_I32; /* u8 with i32 */
}
int gad__need_floating_fail(const char *op, const gad_tensor *t);
static inline int gad__need_floating(const char *op, const gad_tensor *t) {
    return GAD_LIKELY(gad__is_float(t->dtype)) ? 0 : gad__need_floating_fail(op, t);
}

/* ----------------------------------------------------------------- random */

/* Values for the op registry's gradcheck samples: an f64 host tensor of the
 * given shape, uniform in [lo, hi), then moved `away` from 0 when within it
 * (x -> x +- away), then pushed further from 0 by `push` (x -> x +- push),
 * each when > 0. Owned by the current scope; NULL on failure. */
gad_tensor *gad__sample_values(gad_rng *r, const int64_t *shape, int rank, double lo,
                               double hi, double away, double push);

/* Move a sample's values (t: an f64 host tensor from gad__sample_values)
 * off the points where an op has no derivative: each value within `within`
 * of c0 or of c1 (every value when within is 0) moves `push` further from
 * 0. */
void gad__sample_move(gad_tensor *t, double c0, double c1, double within, double push);

/* ---------------------------------------------------------------- threads */

int gad__nthreads(void);

/* Runs fn(ctx, t, nt) once for each t = 0..nt-1 on up to nt threads
 * (pool.c): t = 0 on the caller, the others on whichever thread claims
 * them first, gad's workers or the caller once its own is done (so a
 * worker the OS has not scheduled delays nothing). t names a slot (a
 * scratch buffer), not a thread: one thread may run several, one after
 * another. Returns nt, which is smaller than asked for (1: fn(ctx, 0, 1) on
 * the caller alone) inside another region, while another thread runs one,
 * or when workers could not be started; fn must do the whole job for any
 * nt. */
int gad__pool_run(int nt, void (*fn)(void *ctx, int t, int nt), void *ctx);
/* Tests: while on, workers that wake for a region wait before claiming an
 * index (as if the OS had not scheduled them), so a test can check that
 * regions complete on the caller alone. */
void gad__pool_test_hold(int on);
/* Tests: 1 or 0 makes every worker take its core as contended (sleep at
 * once after a region) or not, instead of asking the scheduler; -1 asks
 * again. */
void gad__pool_test_contended(int v);
/* Tests: the calling thread's verdict after it spins for ms milliseconds
 * (1 contended, 0 not), or -1 where the scheduler's account (Linux's
 * /proc/thread-self/schedstat) is not there. */
int gad__pool_test_probe(int ms);
/* Tests: workers asleep now (*workers: started); the spin after a region,
 * in microseconds (-1: GAD_SPIN_US again). */
int gad__pool_test_sleepers(int *workers);
void gad__pool_test_spin_us(long us);
/* Whether a worker read its core as contended within the last 100 ms (it
 * then sleeps after each region, so that a region pays for waking it:
 * several microseconds in a VM). Kernels whose split pays only when
 * workers are awake ask for more work per thread while it says so; the
 * forced verdict of gad__pool_test_contended when one is set. */
int gad__pool_contended(void);
/* Whether the calling thread is inside a region (a worker, or a caller
 * whose region runs): a region started there would run on one thread. */
int gad__pool_nested(void);
/* Whether the calling thread is one of gad's workers. A worker lives until
 * the process ends and is never trimmed by a caller: whatever it keeps per
 * thread between calls (GEMM's packing buffer) it gives back itself. */
int gad__pool_worker(void);
/* Spinning workers go to sleep now (before a BLAS call that runs threads
 * of its own). */
void gad__pool_park(void);

/* Run fn(ctx, lo, hi) over [0, n) split into contiguous chunks of at least
 * grain (a few per thread, claimed in turn), using at most that many
 * threads (one inside a region). Chunks depend only on n, grain and the
 * thread count; fn must give the same result for any split. */
void gad__parallel_for(int64_t n, int64_t grain,
                       void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx);
/* The same for loops over n elements of streaming work (well under a
 * nanosecond each: the elementwise family, compare, where, casts), whose
 * grain pays for a thread only while gad's workers are awake: while they
 * find their cores contended (gad__pool_contended), each thread must have
 * GAD_CONTENDED_ELEMS (config.c: 128K) elements, and smaller work runs the
 * same chunks on the caller alone (the same results). */
void gad__parallel_for_ew(int64_t n, int64_t grain,
                          void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx);
bool gad__blas_on(void);

#endif /* GAD_INT_H */
