/* config.c: process-wide run-time settings: threads and BLAS. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include "gad_int.h"

#include <stdlib.h>

#ifdef __linux__
#include <sched.h>
#endif
#include <unistd.h>

static atomic_int g_threads;   /* 0: not chosen yet */

/* Who hears of a new thread count (gad__on_threads_set). */
#define THREAD_HOOKS 8
static void (*thread_hooks[THREAD_HOOKS])(int n);
static atomic_int nthread_hooks;

void gad__on_threads_set(void (*fn)(int n)) {
    /* called from constructors, before any thread of gad's runs */
    int n = atomic_load(&nthread_hooks);
    for (int i = 0; i < n; i++)
        if (thread_hooks[i] == fn) return;
    if (n < THREAD_HOOKS) {
        thread_hooks[n] = fn;
        atomic_store(&nthread_hooks, n + 1);
    }
}

static void threads_set(int n) {
    int k = atomic_load(&nthread_hooks);
    for (int i = 0; i < k; i++) thread_hooks[i](n);
}
#ifdef GAD_HAVE_CBLAS
static atomic_int g_blas = 1;  /* the CBLAS path is enabled */
#endif

/* OMP_NUM_THREADS when set (its first number, as OpenMP reads it), else
 * the CPUs this process may run on. */
static int default_threads(void) {
#ifdef GAD_HAVE_THREADS
    const char *e = getenv("OMP_NUM_THREADS");
    if (e && *e) {
        char *end;
        long n = strtol(e, &end, 10);
        if (end != e && (*end == '\0' || *end == ',') && n >= 1 && n <= 4096)
            return (int)n;
    }
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (n > 4096 ? 4096 : (int)n) : 1;
#else
    return 1;
#endif
}

int gad__nthreads(void) {
    int n = atomic_load_explicit(&g_threads, memory_order_relaxed);
    if (GAD_LIKELY(n > 0)) return n;
    n = default_threads();
    atomic_store(&g_threads, n);
    threads_set(n);
    return n;
}

void gad_set_num_threads(int n) {
    if (n < 1) n = default_threads();
#ifndef GAD_HAVE_THREADS
    n = 1;
#endif
    atomic_store(&g_threads, n);
    threads_set(n);
}

int gad_num_threads(void) { return gad__nthreads(); }

int gad_blas_available(void) {
#ifdef GAD_HAVE_CBLAS
    return 1;
#else
    return 0;
#endif
}

int gad_set_blas(int enabled) {
#ifdef GAD_HAVE_CBLAS
    return atomic_exchange(&g_blas, enabled ? 1 : 0);
#else
    (void)enabled;
    return 0;
#endif
}

static atomic_int g_mm_precision; /* gad_matmul_precision, HIGHEST = 0 */

gad_matmul_precision gad_set_matmul_precision(gad_matmul_precision p) {
    if ((int)p < GAD_MATMUL_HIGHEST || (int)p > GAD_MATMUL_MEDIUM)
        return (gad_matmul_precision)atomic_load(&g_mm_precision);
    return (gad_matmul_precision)atomic_exchange(&g_mm_precision, (int)p);
}

gad_matmul_precision gad_matmul_precision_get(void) {
    return (gad_matmul_precision)atomic_load_explicit(&g_mm_precision, memory_order_relaxed);
}

bool gad__blas_on(void) {
#ifdef GAD_HAVE_CBLAS
    return atomic_load_explicit(&g_blas, memory_order_relaxed) != 0;
#else
    return false;
#endif
}

struct pfor {
    void (*fn)(void *ctx, int64_t lo, int64_t hi);
    void *ctx;
    int64_t n, nch;
    atomic_llong next;
};

static void pfor_part(void *arg, int t, int nt) {
    struct pfor *p = arg;
    (void)t, (void)nt;
    for (;;) {
        int64_t k = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (k >= p->nch) break;
        p->fn(p->ctx, p->n * k / p->nch, p->n * (k + 1) / p->nch);
    }
}

/* Splits [0, n) into chunks, up to 16 per thread, that the threads claim
 * in turn: a thread slowed by another process (or a busier core) takes
 * fewer chunks instead of holding up the others at the join. With 4 per
 * thread, the last chunk of a slowed thread held the other one up to an
 * eighth of a 16M-element add; 16 gave that add and gelu 5-10% more on this
 * shared 2-core host, alternating the two builds. */
#define GAD_CHUNKS_PER_THREAD 16

/* Streaming work while gad's workers find their cores contended (they
 * sleep after each region, so a split pays a wake-up and then waits for a
 * core the other process holds): the elements a thread must have. Measured
 * on a 2-vCPU Xeon with a spinner holding the other CPU (grain-bench, 2
 * threads over 1): from 32K to 128K elements add, gelu and relu's gradient
 * took 1.01 to 2.17x the time, 1.25x and more in 9 of 12; from 256K to 1M,
 * 0.56 to 1.11x, as the scheduler shared the spinner's CPU (a coin flip:
 * kept split); an add or gelu of 16M gained 1.2x and 1.1x (bench/compare
 * --busy W3). Compare (gt), where and an f32 to f64 cast, split in 32K
 * grains, took 1.07 to 1.76x at 64K and 128K (two runs of 7 rounds; 0.94
 * to 1.08x with this rule) and gained 0.67 to 0.91x at 256K. */
#define GAD_CONTENDED_ELEMS 131072

static void pfor(int64_t n, int64_t grain, void (*fn)(void *ctx, int64_t lo, int64_t hi),
                 void *ctx, int ew) {
    if (n <= 0) return;
    int64_t nt = gad__nthreads();
    if (grain < 1) grain = 1;
    if (nt > n / grain) nt = n / grain;
    if (nt > 1 && !gad__pool_nested()) {
        int64_t nch = n / grain;
        if (nch > nt * GAD_CHUNKS_PER_THREAD) nch = nt * GAD_CHUNKS_PER_THREAD;
        struct pfor p = {fn, ctx, n, nch, 0};
        int64_t run = nt; /* the threads that run the nt threads' chunks */
        if (ew && n < nt * GAD_CONTENDED_ELEMS && gad__pool_contended())
            run = n / GAD_CONTENDED_ELEMS;
        if (run > 1)
            gad__pool_run((int)run, pfor_part, &p);
        else
            pfor_part(&p, 0, 1);
        return;
    }
    fn(ctx, 0, n);
}

void gad__parallel_for(int64_t n, int64_t grain,
                       void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx) {
    pfor(n, grain, fn, ctx, 0);
}

void gad__parallel_for_ew(int64_t n, int64_t grain,
                          void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx) {
    pfor(n, grain, fn, ctx, 1);
}

const char *gad_version(void) { return GAD_VERSION_STRING; }
