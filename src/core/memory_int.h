/* memory_int.h: the per-thread state that memory.c (buffers, headers, the
 * caches) and scope.c (scopes) share. Private to those two files. */
#ifndef GAD_MEMORY_INT_H
#define GAD_MEMORY_INT_H

#include "gad_int.h"

/* Counters of live objects. Each thread counts its own allocations and
 * frees (plain loads and stores: no locked instruction on the hot path);
 * gad_mem_stats_get sums every thread's counters with those of threads that
 * have exited. A thread's count can go negative (it freed what another
 * made); the sum is exact whenever no thread is allocating meanwhile. */
typedef struct counters {
    atomic_llong tensors, storages, bytes;
} counters;

/* Four size classes per power of two from 64 bytes: capacities 64, 80, 96,
 * 112, 128, 160, ... so a cached buffer wastes at most a quarter. */
#define NCLASS 180

/* The first scope levels keep their marks inline, so that opening them
 * never allocates (a failure there, with no enclosing scope, would leave
 * what the scope makes to nobody). */
#define SCOPE_INLINE 16

typedef struct scope_state {
    gad_tensor **items; /* owned references; low bit set = kept for parent */
    size_t len, cap;
    size_t marks_small[SCOPE_INLINE];
    size_t *marks; /* start of each open scope in items */
    int depth, mark_cap;
    int lost; /* scopes opened after one failed to open: they own nothing */
} scope_state;

typedef struct thread_state {
    counters live;
    struct thread_state *next_thread; /* the list gad_mem_stats_get sums */
    bool counted;                     /* on that list */
    gad_storage *heads[NCLASS];
    size_t cached_bytes;
    size_t limit;
    /* Headers ready for reuse (never used, or out of the quarantine),
     * linked through st: the cache of headers, reused last in first out.
     * Places in it are admitted to the cache limit in batches: hcredit
     * more may join before the next batch is admitted. */
    gad_tensor *free_headers;
    size_t hcredit;
    scope_state scopes;
    bool registered; /* thread-exit destructor armed */
    /* the per-thread caches of the layers above (the tape's node pool,
     * GEMM's scratch), which gad_set_allocator empties for every thread */
    struct {
        void *state;
        void (*flush)(void *state);
    } ext[GAD_THREAD_CACHES];
    int next;
    /* The quarantine: the last GAD_QUARANTINE released headers (refs 0),
     * quar[qpos] the oldest (NULL until the first GAD_QUARANTINE releases).
     * A release puts its header in the oldest's slot and moves that one to
     * free_headers, so a header is reused only after GAD_QUARANTINE others
     * have been released, and a released tensor passed to gad is still
     * seen as released instead of aliasing a new tensor. Kept with the
     * cache disabled too (the quarantine is not cache). */
    unsigned qpos;
    gad_tensor *quar[GAD_QUARANTINE];
} thread_state;

/* The calling thread's state (memory.c). */
extern _Thread_local thread_state gad__tl;

/* This thread's state, its address computed once: in position-independent
 * code (the library's objects serve the shared library too) the compiler
 * otherwise recomputes &gad__tl for every field it touches, three
 * instructions each (the hot paths read or write five to eight fields). */
static inline thread_state *gad__this_thread(void) {
    thread_state *ts = &gad__tl;
#if defined(__GNUC__)
    __asm__("" : "+r"(ts));
#endif
    return ts;
}

/* Arm this thread's exit hook, which gives its caches and scopes back. */
void gad__arm_thread_exit_slow(void);
static inline void gad__arm_thread_exit(void) {
    if (GAD_UNLIKELY(!gad__tl.registered)) gad__arm_thread_exit_slow();
}

/* scope.c's part of a thread's end and of gad_set_allocator: release what
 * the open scopes own (this thread's), and give a scope stack's arrays
 * back when no scope is open on it. */
void gad__scopes_close(void);
void gad__scope_arrays_free(scope_state *s);

#endif /* GAD_MEMORY_INT_H */
