/* memory.c: the allocator hook, the per-thread buffer cache (size classes),
 * pooled tensor headers and their quarantine, and thread-exit cleanup
 * (DESIGN §4). Scopes are scope.c's; the thread's state, which both use,
 * is in memory_int.h. */
#include "memory_int.h"

#include <pthread.h>
#include <stdlib.h>

/* ------------------------------------------------------------- allocator */

static void *default_alloc(void *ctx, size_t size, size_t align) {
    (void)ctx;
    void *p = NULL;
    if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
                       size ? size : 1) != 0)
        return NULL;
    return p;
}

static void default_free(void *ctx, void *p, size_t size) {
    (void)ctx;
    (void)size;
    free(p);
}

static gad_allocator g_alloc = {default_alloc, default_free, NULL};

void *gad__alloc(size_t n) { return g_alloc.alloc(g_alloc.ctx, n, GAD_ALIGN); }

void *gad__alloc_obj(size_t n) { return g_alloc.alloc(g_alloc.ctx, n, 16); }

void gad__free(void *p, size_t n) {
    if (p) g_alloc.free(g_alloc.ctx, p, n);
}

/* The public allocations keep their size in a 16-byte header. */
#define MEM_HDR 16

void *gad_mem_alloc(size_t n) {
    if (n > SIZE_MAX - MEM_HDR) return NULL;
    char *p = g_alloc.alloc(g_alloc.ctx, n + MEM_HDR, MEM_HDR);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    return p + MEM_HDR;
}

void gad_mem_free(void *p) {
    if (!p) return;
    char *base = (char *)p - MEM_HDR;
    size_t n;
    memcpy(&n, base, sizeof n);
    g_alloc.free(g_alloc.ctx, base, n + MEM_HDR);
}

void *gad_mem_realloc(void *p, size_t n) {
    if (!p) return gad_mem_alloc(n);
    size_t old;
    memcpy(&old, (char *)p - MEM_HDR, sizeof old);
    void *q = gad_mem_alloc(n);
    if (!q) return NULL; /* p stays valid, as realloc */
    memcpy(q, p, old < n ? old : n);
    gad_mem_free(p);
    return q;
}

static inline void count(atomic_llong *c, long long d) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + d,
                          memory_order_relaxed);
}

/* ----------------------------------------------------- per-thread state */

/* The default limit holds the tensor headers, nodes and buffers of a graph
 * of about a million small ops (W1's longest chain needs 0.6 GB), so that
 * building it again allocates nothing. */
_Thread_local thread_state gad__tl = {.limit = (size_t)1 << 30};

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static thread_state *threads;  /* every thread that has counted */
static counters retired;       /* totals of exited threads */

/* Put this thread on the list that the memory statistics sum. */
static void join_counted(void) {
    pthread_mutex_lock(&threads_lock);
    gad__tl.next_thread = threads;
    threads = &gad__tl;
    gad__tl.counted = true;
    pthread_mutex_unlock(&threads_lock);
}

static void leave_counted(void) {
    if (!gad__tl.counted) return;
    pthread_mutex_lock(&threads_lock);
    for (thread_state **p = &threads; *p; p = &(*p)->next_thread)
        if (*p == &gad__tl) {
            *p = gad__tl.next_thread;
            break;
        }
    atomic_fetch_add(&retired.tensors, atomic_load(&gad__tl.live.tensors));
    atomic_fetch_add(&retired.storages, atomic_load(&gad__tl.live.storages));
    atomic_fetch_add(&retired.bytes, atomic_load(&gad__tl.live.bytes));
    atomic_store(&gad__tl.live.tensors, 0);
    atomic_store(&gad__tl.live.storages, 0);
    atomic_store(&gad__tl.live.bytes, 0);
    gad__tl.counted = false;
    pthread_mutex_unlock(&threads_lock);
}

static void thread_exit(void *arg);
static void make_exit_key(void) { pthread_key_create(&exit_key, thread_exit); }

GAD_COLD void gad__arm_thread_exit_slow(void) {
    gad__tl.registered = true;
    if (!gad__tl.counted) join_counted();
    pthread_once(&exit_once, make_exit_key);
    pthread_setspecific(exit_key, &gad__tl);
}



/* A run of objects of `size` bytes, each counted as `cost` bytes of the
 * cache (a buffer counts its elements only). */
static int alloc_run(void **run, size_t size, size_t cost) {
    int n = (int)(GAD_RUN_BYTES / size), k = 0;
    if (n > GAD_RUN_MAX) n = GAD_RUN_MAX;
    while (k < n && gad__cache_admit(cost)) {
        if (!(run[k] = gad__alloc_obj(size))) {
            gad__cache_withdraw(cost);
            break;
        }
        k++;
    }
    return k;
}

int gad__alloc_run(void **run, size_t size) { return alloc_run(run, size, size); }

GAD_HOT bool gad__cache_admit(size_t n) {
    thread_state *ts = gad__this_thread();
    if (ts->cached_bytes > ts->limit || n > ts->limit - ts->cached_bytes) return false;
    gad__arm_thread_exit(); /* the exit hook gives the caches back */
    ts->cached_bytes += n;
    return true;
}

GAD_HOT void gad__cache_withdraw(size_t n) { gad__this_thread()->cached_bytes -= n; }

static int size_class(size_t n) {
    if (n <= 64) return 0;
    size_t m = n - 1;
    int k = 63 - __builtin_clzll((unsigned long long)m);
    size_t base = (size_t)1 << k;
    int idx = (int)((m - base) >> (k - 2)); /* quarters of base (k >= 6) */
    int c = (k - 6) * 4 + idx + 1;
    return c < NCLASS ? c : -1;
}

static size_t class_cap(int c) {
    if (c == 0) return 64;
    int k = (c - 1) / 4 + 6, idx = (c - 1) % 4;
    size_t base = (size_t)1 << k;
    return base + (size_t)(idx + 1) * (base >> 2);
}

/* --------------------------------------------------------------- storage */

_Static_assert(sizeof(gad_storage) == 32 && GAD_ALIGN % 16 == 0, "storage layout");

#define STORAGE_DATA(s) ((char *)(s) + GAD_STORAGE_HDR)

/* The block of a storage with `cap` bytes of elements: the allocator's
 * 16-byte alignment, room to move the header up to the next boundary, and
 * a size that makes the allocator's chunk (the block and 8 bytes of header,
 * on glibc) whole cache lines: a run of small buffers then has its
 * elements at one constant stride, which the hardware prefetcher follows.
 * (W1's chain of 10^6 ops, backward: 121 ns/op with 192-byte chunks, 147
 * with 160 and 149 with 224, whose strides alternate.) */
#define BLOCK_PAD (GAD_ALIGN - 16)
#define BLOCK_EXTRA_MAX (BLOCK_PAD + GAD_STORAGE_HDR + 8 + 63) /* block_size - cap */
static size_t block_size(size_t cap) {
    return ((BLOCK_PAD + GAD_STORAGE_HDR + cap + 8 + 63) & ~(size_t)63) - 8;
}

/* The storage in block b: the elements at the first GAD_ALIGN boundary
 * past a header's room. */
static gad_storage *storage_place(void *b, size_t cap, int c) {
    uintptr_t data = ((uintptr_t)b + GAD_STORAGE_HDR + GAD_ALIGN - 1) & ~(uintptr_t)(GAD_ALIGN - 1);
    gad_storage *s = (gad_storage *)(data - GAD_STORAGE_HDR);
    s->cap = cap;
    s->sclass = (int16_t)c;
    s->dev = GAD_DEV_HOST;
    s->shift = (uint32_t)((uintptr_t)s - (uintptr_t)b);
    s->data = STORAGE_DATA(s);
    return s;
}

static void storage_free(gad_storage *s) {
    gad__free((char *)s - s->shift, block_size(s->cap));
}

static void cache_trim(void);

/* A storage of class c (-1: uncached, exactly nbytes) from the allocator. */
static GAD_COLD gad_storage *storage_alloc(int c, size_t nbytes) {
    size_t cap = c >= 0 ? class_cap(c) : nbytes;
    if (cap > SIZE_MAX - BLOCK_EXTRA_MAX) return NULL;
    void *b = gad__alloc_obj(block_size(cap));
    if (!b) {
        /* Give the cache back and try once more before failing. */
        if (gad__tl.cached_bytes == 0) return NULL;
        cache_trim();
        b = gad__alloc_obj(block_size(cap));
        if (!b) return NULL;
    }
    gad_storage *s = storage_place(b, cap, c);
    gad__arm_thread_exit(); /* for the counts (a cached one was armed) */
    /* a small one (a run holds at least eight): a run more (gad__alloc_run) */
    if (c >= 0 && cap <= GAD_RUN_BYTES / 8) {
        void *run[GAD_RUN_MAX];
        for (int i = alloc_run(run, block_size(cap), cap); i-- > 0;) {
            gad_storage *u = storage_place(run[i], cap, c);
            u->next = gad__tl.heads[c];
            gad__tl.heads[c] = u;
        }
    }
    return s;
}

GAD_HOT gad_storage *gad__storage_new(size_t nbytes) {
    thread_state *ts = gad__this_thread();
    int c = size_class(nbytes);
    gad_storage *s;
    if (c >= 0 && (s = ts->heads[c]) != NULL) {
        ts->heads[c] = s->next;
        /* the next two's header and data: the next one's link was asked
         * for by the previous call, so reading it rarely waits */
        GAD_PREFETCH_W(s->next, GAD_STORAGE_HDR + 64);
        if (s->next) GAD_PREFETCH_W(s->next->next, GAD_STORAGE_HDR + 64);
        ts->cached_bytes -= s->cap;
    } else if (!(s = storage_alloc(c, nbytes))) {
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->data = STORAGE_DATA(s);
    count(&ts->live.storages, 1);
    count(&ts->live.bytes, (long long)s->cap);
    return s;
}

gad_storage *gad__storage_new_dev(int dev, size_t nbytes) {
    gad_storage *s = gad__devmem[dev]->storage_new(dev, nbytes);
    if (!s) return NULL;
    gad__arm_thread_exit(); /* for the counts */
    count(&gad__tl.live.storages, 1); /* its bytes are the back end's to count */
    return s;
}

/* gad__storage_release past the last reference, when s is not a cacheable
 * host buffer that fits the cache with the exit hook armed. */
static GAD_COLD void storage_release_slow(gad_storage *s) {
    thread_state *ts = gad__this_thread();
    count(&ts->live.storages, -1);
    if (s->dev != GAD_DEV_HOST) {
        gad__arm_thread_exit();
        gad__devmem[s->dev]->storage_free(s);
        return;
    }
    count(&ts->live.bytes, -(long long)s->cap);
    if (s->sclass >= 0 && gad__cache_admit(s->cap)) { /* which arms the exit hook */
        s->next = ts->heads[s->sclass];
        ts->heads[s->sclass] = s;
        return;
    }
    gad__arm_thread_exit(); /* the counts above are summed while this thread lives */
    storage_free(s);
}

GAD_HOT void gad__storage_release(gad_storage *s) {
    if (!s || !gad__unref(&s->refs)) return;
    thread_state *ts = gad__this_thread();
    size_t cap = s->cap, cached = ts->cached_bytes;
    /* the common case, a cached host buffer, with no call (no frame); the
     * rest, and gad__cache_admit's refusal, out of line */
    if (GAD_UNLIKELY(s->dev != GAD_DEV_HOST || s->sclass < 0 || cached > ts->limit ||
                     cap > ts->limit - cached || !ts->registered)) {
        storage_release_slow(s);
        return;
    }
    count(&ts->live.storages, -1);
    count(&ts->live.bytes, -(long long)cap);
    ts->cached_bytes = cached + cap;
    s->next = ts->heads[s->sclass];
    ts->heads[s->sclass] = s;
}

/* --------------------------------------------------------------- headers */

static GAD_COLD gad_tensor *header_alloc(void) {
    gad_tensor *t = gad__alloc_obj(sizeof(gad_tensor));
    if (!t) return NULL;
    gad__arm_thread_exit(); /* for the counts (a cached one was armed) */
    /* and a run of more, cached in address order (gad__alloc_run) */
    void *run[GAD_RUN_MAX];
    for (int i = gad__alloc_run(run, sizeof(gad_tensor)); i-- > 0;) {
        gad_tensor *u = run[i];
        u->st = (gad_storage *)gad__tl.free_headers;
        gad__tl.free_headers = u;
    }
    return t;
}

/* What the header functions must do besides their common path: record
 * headers for gad_debug_track (HDR_TRACK), reuse released headers at once
 * (HDR_NO_QUARANTINE). One byte, so that the common path tests once. */
#define HDR_TRACK 1
#define HDR_NO_QUARANTINE 2
static atomic_uchar g_hdr_flags;

static void hdr_flag(unsigned char f, int on) {
    if (on) atomic_fetch_or(&g_hdr_flags, f);
    else atomic_fetch_and(&g_hdr_flags, (unsigned char)~f);
}

/* gad_debug_track's switch (debug.c owns the records). */
bool gad__debug_live_get(void) { return atomic_load(&g_hdr_flags) & HDR_TRACK; }
void gad__debug_live_set(bool on) { hdr_flag(HDR_TRACK, on); }

/* The quarantine is on unless turned off (gad_debug_quarantine(0), or
 * GAD_QUARANTINE=0 in the environment). */
GAD_CONSTRUCTOR(quarantine_from_env) {
    const char *e = getenv("GAD_QUARANTINE");
    if (e && !strcmp(e, "0")) hdr_flag(HDR_NO_QUARANTINE, 1);
}

int gad_debug_quarantine(int on) {
    unsigned char f = on ? atomic_fetch_and(&g_hdr_flags, (unsigned char)~HDR_NO_QUARANTINE)
                         : atomic_fetch_or(&g_hdr_flags, HDR_NO_QUARANTINE);
    return !(f & HDR_NO_QUARANTINE);
}

static GAD_COLD gad_tensor *header_tracked(gad_tensor *t, const char *op) {
    gad__debug_made(t, op);
    return t;
}

/* A header taken for a new tensor: refs 1, no storage, no node. */
static inline gad_tensor *header_init(thread_state *ts, gad_tensor *t, const char *op) {
    atomic_init(&t->refs, 1);
    t->st = NULL;
    t->node = NULL;
    count(&ts->live.tensors, 1);
    if (GAD_UNLIKELY(atomic_load_explicit(&g_hdr_flags, memory_order_relaxed) & HDR_TRACK))
        return header_tracked(t, op);
    return t;
}

static GAD_COLD gad_tensor *header_new_slow(const char *op) {
    gad_tensor *t = header_alloc();
    return t ? header_init(gad__this_thread(), t, op) : NULL;
}

GAD_HOT gad_tensor *gad__header_new(const char *op) {
    thread_state *ts = gad__this_thread();
    gad_tensor *t = ts->free_headers;
    if (GAD_UNLIKELY(!t)) return header_new_slow(op);
    ts->free_headers = (gad_tensor *)t->st;
    /* the next two: the next one's link was asked for by the previous
     * call, so reading it rarely waits */
    GAD_PREFETCH_W(ts->free_headers, sizeof *t);
    if (ts->free_headers) GAD_PREFETCH_W(ts->free_headers->st, sizeof *t);
    ts->cached_bytes -= sizeof *t;
    return header_init(ts, t, op);
}

#define HDR_BATCH 64 /* places admitted to the cache limit at once */

/* t ready for reuse, with no admitted place left: admit a batch and take
 * one place of it, or, with the cache full, give t back to the allocator.
 * (NULL: the quarantine was not yet full.) */
static GAD_COLD void header_ready_slow(thread_state *ts, gad_tensor *t) {
    if (!t) {
        gad__arm_thread_exit(); /* the quarantine is given back at thread exit */
        return;
    }
    if (!gad__cache_admit(HDR_BATCH * sizeof *t)) { /* which arms the exit hook */
        gad__free(t, sizeof *t);
        return;
    }
    ts->hcredit = HDR_BATCH - 1;
    t->st = (gad_storage *)ts->free_headers;
    ts->free_headers = t;
}

/* t (not NULL) ready for reuse: onto the list, in an admitted place. */
static inline void header_ready(thread_state *ts, gad_tensor *t) {
    if (GAD_UNLIKELY(!ts->hcredit)) {
        header_ready_slow(ts, t);
        return;
    }
    ts->hcredit--;
    t->st = (gad_storage *)ts->free_headers;
    ts->free_headers = t;
}

/* Into the quarantine: t takes the oldest's slot, and the oldest (none
 * while the quarantine fills) is ready for reuse. */
static inline void quarantine_put(thread_state *ts, gad_tensor *t) {
    unsigned i = ts->qpos, next = (i + 1) & (GAD_QUARANTINE - 1);
    gad_tensor *old = ts->quar[i];
    ts->quar[i] = t;
    ts->qpos = next;
    /* the next release links the next oldest, which has been out of the
     * first-level cache for a while: ask for its line now */
    __builtin_prefetch(ts->quar[next], 1, 3);
    if (GAD_UNLIKELY(!old)) {
        header_ready_slow(ts, NULL);
        return;
    }
    header_ready(ts, old);
}

static GAD_COLD void header_free_slow(gad_tensor *t) {
    unsigned char f = atomic_load_explicit(&g_hdr_flags, memory_order_relaxed);
    thread_state *ts = gad__this_thread();
    if (f & HDR_TRACK) gad__debug_gone(t);
    if (f & HDR_NO_QUARANTINE) header_ready(ts, t); /* reused at once */
    else quarantine_put(ts, t);
}

GAD_HOT void gad__header_free(gad_tensor *t) {
    thread_state *ts = gad__this_thread();
    count(&ts->live.tensors, -1);
    /* poisoned (refs 0: gad_release left it so, a header that never held a
     * tensor is marked here) and queued behind the others */
    atomic_store_explicit(&t->refs, 0, memory_order_relaxed);
    if (GAD_UNLIKELY(atomic_load_explicit(&g_hdr_flags, memory_order_relaxed))) {
        header_free_slow(t);
        return;
    }
    quarantine_put(ts, t);
}

_Static_assert((GAD_QUARANTINE & (GAD_QUARANTINE - 1)) == 0, "a power of two");

/* Give every header in ts's quarantine back to the allocator. */
static void quarantine_empty_of(thread_state *ts) {
    for (unsigned i = 0; i < GAD_QUARANTINE; i++) {
        gad__free(ts->quar[i], sizeof(gad_tensor));
        ts->quar[i] = NULL;
    }
    ts->qpos = 0;
}

static void quarantine_empty(void) { quarantine_empty_of(&gad__tl); }

/* --------------------------------------------------------------- tensors */

GAD_HOT gad_tensor *gad_retain(gad_tensor *t) {
    if (!t) return t;
    if (GAD_UNLIKELY(gad__released(t))) return gad__err_released("retain");
    atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

GAD_HOT void gad_release(gad_tensor *t) {
    if (!t) return;
    /* a released header waits in the quarantine (or the cache) with refs 0 */
    if (GAD_UNLIKELY(gad__released(t))) {
        gad__err_released("release");
        return;
    }
    if (!gad__unref(&t->refs)) return;
    gad__storage_release(t->st);
    if (t->node) gad__node_free_hook(t->node);
    gad__header_free(t);
}

void *gad__err_released(const char *op) {
    return gad__err(GAD_ERR_DOMAIN, op,
                    "use of a released tensor (released with gad_release or by "
                    "the end of the scope that owned it)");
}

void *gad__bad_arg(const char *op, const gad_tensor *t) {
    return t ? gad__err_released(op) : gad__null_arg(op);
}

void *gad__bad_of(const char *op, int n, const gad_tensor *const *ts) {
    for (int i = 0; i < n; i++)
        if (gad__bad_tensor(ts[i])) return gad__bad_arg(op, ts[i]);
    return NULL;
}

/* ------------------------------------------------------------ the caches */

void (*gad__node_free_hook)(struct gad_node *n);

/* What the layers above keep in caches of their own (the tape's node pool,
 * GEMM's packing buffers), trimmed with core's: registered once each. */
#define TRIM_HOOKS 8
static void (*trim_hooks[TRIM_HOOKS])(void);
static atomic_int ntrim_hooks;
static pthread_mutex_t hooks_lock = PTHREAD_MUTEX_INITIALIZER;

void gad__on_cache_trim(void (*fn)(void)) {
    pthread_mutex_lock(&hooks_lock);
    int n = atomic_load(&ntrim_hooks);
    bool known = false;
    for (int i = 0; i < n; i++) known |= trim_hooks[i] == fn;
    if (!known && n < TRIM_HOOKS) {
        trim_hooks[n] = fn;
        atomic_store(&ntrim_hooks, n + 1);
    }
    pthread_mutex_unlock(&hooks_lock);
}

/* Give this thread's cached buffers, headers and nodes back (not the
 * quarantine). */
static void cache_trim(void) {
    for (int c = 0; c < NCLASS; c++) {
        gad_storage *s = gad__tl.heads[c];
        while (s) {
            gad_storage *next = s->next;
            gad__cache_withdraw(s->cap);
            storage_free(s);
            s = next;
        }
        gad__tl.heads[c] = NULL;
    }
    while (gad__tl.free_headers) {
        gad_tensor *t = gad__tl.free_headers;
        gad__tl.free_headers = (gad_tensor *)t->st;
        gad__cache_withdraw(sizeof *t);
        gad__free(t, sizeof *t);
    }
    gad__cache_withdraw(gad__tl.hcredit * sizeof(gad_tensor));
    gad__tl.hcredit = 0;
    int nh = atomic_load(&ntrim_hooks);
    for (int i = 0; i < nh; i++) trim_hooks[i]();
}

void gad_cache_trim(void) { cache_trim(); }

size_t gad_set_cache_limit(size_t bytes) {
    size_t old = gad__tl.limit;
    gad__tl.limit = bytes;
    if (gad__tl.cached_bytes > bytes) cache_trim();
    return old;
}

void gad__register_thread_cache(void *state, void (*flush)(void *state)) {
    gad__arm_thread_exit(); /* on the list gad_set_allocator walks */
    if (gad__tl.next < GAD_THREAD_CACHES)
        gad__tl.ext[gad__tl.next++] = (__typeof__(gad__tl.ext[0])){state, flush};
}

/* Give back everything thread ts caches (ts: this thread, or one that does
 * not use gad meanwhile, as gad_set_allocator requires): buffers, headers,
 * the quarantine, the layers' caches, and the scope stacks' arrays when no
 * scope is open. Through the allocator installed now. */
static void thread_give_back(thread_state *ts) {
    for (int c = 0; c < NCLASS; c++) {
        gad_storage *s = ts->heads[c];
        while (s) {
            gad_storage *next = s->next;
            storage_free(s);
            s = next;
        }
        ts->heads[c] = NULL;
    }
    while (ts->free_headers) {
        gad_tensor *t = ts->free_headers;
        ts->free_headers = (gad_tensor *)t->st;
        gad__free(t, sizeof *t);
    }
    ts->hcredit = 0;
    quarantine_empty_of(ts);
    for (int i = 0; i < ts->next; i++) ts->ext[i].flush(ts->ext[i].state);
    ts->cached_bytes = 0; /* every cache of ts is empty */
    gad__scope_arrays_free(&ts->scopes);
}

static void thread_exit(void *arg) {
    (void)arg;
    gad__scopes_close(); /* left open by a finished thread */
    cache_trim();
    quarantine_empty();
    gad__scope_arrays_free(&gad__tl.scopes);
    gad__tl.registered = false;
    leave_counted();
}

void gad_set_allocator(const gad_allocator *allocator) {
    /* Every thread's caches go back to the allocator they came from, the
     * one installed now: an idle thread would otherwise later hand its
     * blocks to the new allocator's free. (The calling thread's own too,
     * and its layers' caches through the trim hooks, in case it never
     * counted.) No other thread uses gad meanwhile (gad.h). */
    cache_trim();
    quarantine_empty();
    pthread_mutex_lock(&threads_lock);
    for (thread_state *ts = threads; ts; ts = ts->next_thread) thread_give_back(ts);
    pthread_mutex_unlock(&threads_lock);
    if (!gad__tl.counted) thread_give_back(&gad__tl);
    if (allocator && allocator->alloc && allocator->free)
        g_alloc = *allocator;
    else
        g_alloc = (gad_allocator){default_alloc, default_free, NULL};
}

/* Every thread's live host bytes, those of exited threads included. */
static int64_t host_live_bytes(void) {
    pthread_mutex_lock(&threads_lock);
    int64_t n = atomic_load(&retired.bytes);
    for (thread_state *t = threads; t; t = t->next_thread)
        n += atomic_load_explicit(&t->live.bytes, memory_order_relaxed);
    pthread_mutex_unlock(&threads_lock);
    return n;
}

void gad__host_mem_counts(int64_t *live_bytes, int64_t *cached_bytes) {
    if (live_bytes) *live_bytes = host_live_bytes();
    if (cached_bytes) *cached_bytes = (int64_t)gad__tl.cached_bytes;
}

void gad_mem_stats_get(gad_mem_stats *out) {
    if (!out) return;
    pthread_mutex_lock(&threads_lock);
    out->live_tensors = atomic_load(&retired.tensors);
    out->live_storages = atomic_load(&retired.storages);
    out->live_bytes = atomic_load(&retired.bytes);
    for (thread_state *t = threads; t; t = t->next_thread) {
        out->live_tensors += atomic_load_explicit(&t->live.tensors, memory_order_relaxed);
        out->live_storages += atomic_load_explicit(&t->live.storages, memory_order_relaxed);
        out->live_bytes += atomic_load_explicit(&t->live.bytes, memory_order_relaxed);
    }
    pthread_mutex_unlock(&threads_lock);
    out->cached_bytes = (int64_t)gad__tl.cached_bytes;
    /* the other devices count their own memory (gad_devmem's mem_stats) */
    out->device_live_bytes = 0;
    out->device_cached_bytes = 0;
    for (int d = 1; d < GAD_MAX_DEVICES; d++) {
        const gad_devmem *m = gad__devmem[d];
        int64_t live = 0, cached = 0;
        if (!m || !m->mem_stats || m->mem_stats(d, &live, &cached)) continue;
        out->device_live_bytes += live;
        out->device_cached_bytes += cached;
    }
}
