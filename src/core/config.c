/* config.c: process-wide run-time settings: threads and BLAS. */
#include "gad_int.h"
#include "cpu/gemm.h"

#include <stdlib.h>
#include <string.h>

#ifdef GAD_HAVE_OPENMP
#include <omp.h>
#endif

static atomic_int g_threads;   /* 0: not chosen yet */
#ifdef GAD_HAVE_CBLAS
static atomic_int g_blas = 1;  /* the CBLAS path is enabled */
#endif

static int default_threads(void) {
#ifdef GAD_HAVE_OPENMP
    int n = omp_get_max_threads();
    return n > 0 ? n : 1;
#else
    return 1;
#endif
}

int gad__nthreads(void) {
    int n = atomic_load_explicit(&g_threads, memory_order_relaxed);
    if (GAD_LIKELY(n > 0)) return n;
    n = default_threads();
    atomic_store(&g_threads, n);
    gad__gemm_set_blas_threads(n);
    return n;
}

void gad_set_num_threads(int n) {
    if (n < 1) n = default_threads();
#ifndef GAD_HAVE_OPENMP
    n = 1;
#endif
    atomic_store(&g_threads, n);
    gad__gemm_set_blas_threads(n);
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

bool gad__blas_on(void) {
#ifdef GAD_HAVE_CBLAS
    return atomic_load_explicit(&g_blas, memory_order_relaxed) != 0;
#else
    return false;
#endif
}

static atomic_int g_par_scale; /* 0: not read yet */

int gad__par_scale(void) {
    int s = atomic_load_explicit(&g_par_scale, memory_order_relaxed);
    if (GAD_LIKELY(s > 0)) return s;
    const char *p = getenv("OMP_WAIT_POLICY");
    s = p && (strcmp(p, "passive") == 0 || strcmp(p, "PASSIVE") == 0 ||
              strcmp(p, "Passive") == 0) ? 8 : 1;
    atomic_store_explicit(&g_par_scale, s, memory_order_relaxed);
    return s;
}

/* Splits [0, n) into chunks, up to 16 per thread, that the threads claim
 * in turn: a thread slowed by another process (or a busier core) takes
 * fewer chunks instead of holding up the others at the join. With 4 per
 * thread, the last chunk of a slowed thread held the other one up to an
 * eighth of a 16M-element add; 16 gave that add and gelu 5-10% more on this
 * shared 2-core host, alternating the two builds. */
#define GAD_CHUNKS_PER_THREAD 16

void gad__parallel_for(int64_t n, int64_t grain,
                       void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx) {
    if (n <= 0) return;
#ifdef GAD_HAVE_OPENMP
    int64_t nt = gad__nthreads();
    if (grain < 1) grain = 1;
    if (nt > 1) grain *= gad__par_scale();
    if (nt > n / grain) nt = n / grain;
    if (nt > 1 && !omp_in_parallel()) {
        int64_t nch = n / grain;
        if (nch > nt * GAD_CHUNKS_PER_THREAD) nch = nt * GAD_CHUNKS_PER_THREAD;
        atomic_llong next = 0;
#pragma omp parallel num_threads((int)nt)
        for (;;) {
            int64_t k = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
            if (k >= nch) break;
            fn(ctx, n * k / nch, n * (k + 1) / nch);
        }
        return;
    }
#else
    (void)grain;
#endif
    fn(ctx, 0, n);
}

const char *gad_version(void) { return GAD_VERSION_STRING; }
