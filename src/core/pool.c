/* pool.c: gad's worker threads.
 *
 * A parallel region runs fn(ctx, t, nt) for t = 0..nt-1, t = 0 on the
 * calling thread and the others on workers that live for the rest of the
 * process. After a region a worker spins for a short while (GAD_SPIN_US,
 * 100 microseconds by default), so that the next region of a training step
 * finds it awake, and then sleeps on a condition variable until the next
 * one. OpenMP cannot do this for us: its wait policy is one process-wide
 * setting read from the environment, and under OMP_WAIT_POLICY=passive (the
 * benchmark protocol's setting, bench/README.md) every region pays a
 * futex wake-up per thread, tens of microseconds in a VM, which is more
 * than a 128^3 product or an add of 64K elements costs on one thread.
 *
 * A worker does not spin while its core is contended. When another thread
 * (another process, the user's own, more of gad's threads than cores)
 * wants the core, a spinning worker takes the time the other one needs and
 * is then preempted in the middle of the next region, which the caller
 * waits for. On Linux a worker reads how long it waited to run (its run
 * delay, /proc/thread-self/schedstat) every few milliseconds; once that is
 * over a tenth of the time it wanted to run, it sleeps at once after each
 * region, until four reads in a row are under the bar. Measured on a 2-vCPU
 * AMD Zen 4, a worker waited 1% of its runnable time on the quiet machine
 * and 47% with a spinner holding the other CPU (bench/compare --busy); with
 * the rule, W4 and W5 at 2 threads took 0.74 and 0.96 of the time and W6
 * made 1.09x the tokens per second there, and the quiet figures stayed
 * within the noise (1.02, 1.00, 0.98; five alternating runs each).
 * A worker's verdict is also the pool's (gad__pool_contended) for a short
 * while, so that kernels do not split work too small to pay for waking a
 * sleeping worker (cpu/gemm.c's thread count, config.c's
 * gad__parallel_for_ew).
 *
 * One region runs at a time; a region asked for while another runs (from
 * another user thread, or nested inside a region) runs on the caller
 * alone. Before gad calls a BLAS that runs its own threads it parks the
 * spinning workers (gad__pool_park), so they do not take cores from it.
 *
 * The state word packs the region's sequence number and its thread count,
 * so that a worker reads both in one load: a worker with index w < nt
 * wakes for the region. The indices t of fn are claimed, not assigned: the
 * claim word packs the region's sequence number and the next unclaimed
 * index, and whoever comes first (the caller, after its own t = 0, or a
 * worker) takes the next one by compare-and-swap, until all nt are taken.
 * So a worker that the OS has not scheduled yet (a busy machine, a CPU
 * quota, more threads than cores) holds nobody up: the caller runs its
 * index itself, and waits only for indices that running workers took. A
 * worker that arrives after the last index went finds nothing to claim
 * (the word's count is nt, or its sequence has moved on) and touches
 * nothing of the region. fn and ctx are written before the claim word is
 * published (release) and read only after a successful claim (acquire),
 * which the caller waits for before it returns or starts another region.
 * Which thread runs an index never changes a result: fn's indices pick
 * scratch slots, and the work is split by n and nt alone. */
#include "gad_int.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif
#include <pthread.h>
#include <sched.h>
#ifdef __linux__
#include <fcntl.h>
#include <unistd.h>
#endif
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define POOL_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define POOL_PAUSE() __asm__ __volatile__("yield")
#else
#define POOL_PAUSE() ((void)0)
#endif

#define POOL_MAX 256 /* workers; more threads than this are not started */

typedef void (*pool_fn)(void *ctx, int t, int nt);

static struct {
    atomic_flag busy;               /* a region is running */
    _Atomic uint64_t state;         /* seq << 16 | nt of the latest region */
    _Atomic uint64_t claim;         /* seq << 16 | the next unclaimed index */
    atomic_int done;                /* indices finished by workers */
    atomic_int hold;                /* tests: workers wait before claiming */
    atomic_int sleepers;            /* workers waiting on wake */
    atomic_int park;                /* spinning workers should sleep now */
    atomic_int nworkers;            /* workers started */
    pool_fn fn;
    void *ctx;
    pthread_mutex_t mu;             /* guards sleeping and starting workers */
    pthread_cond_t wake;
    atomic_llong spin_ns;           /* < 0: not read yet */
    atomic_llong contended_until;   /* a worker found its core contended: until then */
} pool = {
    .busy = ATOMIC_FLAG_INIT,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .spin_ns = -1,
};

/* Set on workers for good and on a caller while its region runs. */
static _Thread_local int pool_inside;
/* Set on workers only. */
static _Thread_local int pool_worker;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t spin_ns(void) {
    int64_t s = atomic_load_explicit(&pool.spin_ns, memory_order_relaxed);
    if (GAD_LIKELY(s >= 0)) return s;
    s = 100 * 1000;
    const char *e = getenv("GAD_SPIN_US");
    if (e && *e) {
        char *end;
        long long us = strtoll(e, &end, 10);
        if (*end == '\0' && us >= 0 && us <= 1000000) s = us * 1000;
    }
    atomic_store_explicit(&pool.spin_ns, s, memory_order_relaxed);
    return s;
}

/* Whether a worker's core is contended, from the scheduler's account of
 * the thread: the time it ran and the time it waited, runnable, for a CPU
 * (run delay). Read at most every CONTEND_PERIOD_NS, opening the file each
 * time (a few microseconds; a descriptor kept open for the life of the
 * process would be one the program does not know about); the verdict holds
 * until a later read has at least a millisecond of runnable time to judge.
 * Without the file (not Linux, or a kernel without schedstats) a worker is
 * never contended and spins as before. */
#define CONTEND_PERIOD_NS 4000000
#define CONTEND_CALM 4
/* How long gad__pool_contended reports a worker's read over the bar: a
 * verdict that no fresh read confirms (a worker that no region wakes reads
 * nothing) must not hold for good, nor keep the work that would refresh it
 * off the workers. */
#define CONTEND_HOLD_NS 100000000
typedef struct {
    int ok;           /* the file could be read */
    int contended;
    int publish;      /* a worker's: a read over the bar sets pool.contended_until */
    int calm;         /* reads below the bar since the last one over it */
    int64_t when;     /* of the last read */
    uint64_t run, delay;
} sched_probe;

static int probe_read(uint64_t *run, uint64_t *delay) {
#ifdef __linux__
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[96];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *end;
    *run = strtoull(buf, &end, 10);
    if (end == buf) return 0;
    char *p = end;
    *delay = strtoull(p, &end, 10);
    return end != p;
#else
    (void)run, (void)delay;
    return 0;
#endif
}

static void probe_init(sched_probe *p) {
    p->ok = probe_read(&p->run, &p->delay);
    p->contended = p->calm = p->publish = 0;
    p->when = now_ns();
}

static atomic_int contend_force = -1; /* tests: 0 or 1 overrides the probe */

static int probe_contended(sched_probe *p) {
    int f = atomic_load_explicit(&contend_force, memory_order_relaxed);
    if (GAD_UNLIKELY(f >= 0)) return f;
    if (!p->ok) return 0;
    int64_t t = now_ns();
    if (t - p->when < CONTEND_PERIOD_NS) return p->contended;
    uint64_t run, delay;
    if (probe_read(&run, &delay) && run >= p->run && delay >= p->delay) {
        uint64_t dr = run - p->run, dd = delay - p->delay;
        if (dr + dd >= 1000000) {
            if (dd * 10 > dr + dd) {
                p->contended = 1, p->calm = 0;
                if (p->publish)
                    atomic_store_explicit(&pool.contended_until, t + CONTEND_HOLD_NS,
                                          memory_order_relaxed);
            }
            else if (p->contended && ++p->calm >= CONTEND_CALM)
                p->contended = 0;
            p->run = run, p->delay = delay;
        }
    }
    p->when = t;
    return p->contended;
}

/* Waits until the state's sequence moves past seq; returns the new state.
 * Spins first unless the worker's core is contended. */
static uint64_t worker_wait(uint64_t seq, sched_probe *probe) {
    int64_t limit = probe_contended(probe) ? 0 : spin_ns(), t0 = 0;
    for (unsigned i = 0;; i++) {
        uint64_t s = atomic_load_explicit(&pool.state, memory_order_acquire);
        if (s >> 16 != seq) return s;
        if ((i & 63) == 0) {
            if (atomic_load_explicit(&pool.park, memory_order_relaxed)) break;
            int64_t t = now_ns();
            if (i == 0) t0 = t;
            if (t - t0 >= limit) break;
        }
        POOL_PAUSE();
    }
    pthread_mutex_lock(&pool.mu);
    atomic_fetch_add(&pool.sleepers, 1);
    uint64_t s;
    while ((s = atomic_load(&pool.state)) >> 16 == seq)
        pthread_cond_wait(&pool.wake, &pool.mu);
    atomic_fetch_sub(&pool.sleepers, 1);
    pthread_mutex_unlock(&pool.mu);
    return s;
}

/* A new worker's index and the sequence number of the last region that
 * started before it: it takes part in the next one. */
typedef struct {
    int w;
    uint64_t seq;
} worker_arg;

/* The next unclaimed index of region seq (of nt), or -1 when all are
 * taken or the region is over. */
static int claim_index(uint64_t seq, int nt) {
    uint64_t c = atomic_load_explicit(&pool.claim, memory_order_acquire);
    for (;;) {
        if (c >> 16 != seq || (int)(c & 0xffff) >= nt) return -1;
        if (atomic_compare_exchange_weak_explicit(&pool.claim, &c, c + 1,
                                                  memory_order_acq_rel,
                                                  memory_order_acquire))
            return (int)(c & 0xffff);
    }
}

/* gad__pool_test_hold's wait: until the hold is lifted. */
static void hold_wait(void) {
    while (atomic_load_explicit(&pool.hold, memory_order_acquire)) {
        struct timespec ts = {0, 200 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void *worker_main(void *arg) {
    worker_arg a = *(worker_arg *)arg;
    free(arg);
    /* A thread starts with its creator's floating-point modes, and a
     * worker may be started from inside a GEMM, which runs with flush-to-
     * zero and denormals-are-zero on (cpu/gemm.c) and turns them off when
     * done. A worker that kept them would flush the subnormal results of
     * every elementwise chunk it ran for good, so that they would depend
     * on which thread ran them: workers start with both off, as a
     * program's threads do. */
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(_mm_getcsr() & ~0x8040u);
#endif
    int w = a.w;
    uint64_t seq = a.seq;
    pool_inside = 1;
    pool_worker = 1;
    sched_probe probe;
    probe_init(&probe);
    probe.publish = 1;
    for (;;) {
        uint64_t s = worker_wait(seq, &probe);
        seq = s >> 16;
        int nt = (int)(s & 0xffff);
        if (w >= nt) continue;
        if (GAD_UNLIKELY(atomic_load_explicit(&pool.hold, memory_order_relaxed))) hold_wait();
        for (int t; (t = claim_index(seq, nt)) >= 0;) {
            pool.fn(pool.ctx, t, nt);
            atomic_fetch_add_explicit(&pool.done, 1, memory_order_release);
        }
    }
    return NULL;
}

/* Starts workers until there are want of them (or starting one fails);
 * returns how many there are. Called only by the thread that holds
 * pool.busy, before it publishes its region. Workers block every signal: the user's
 * handlers run on the user's threads. */
static int pool_grow(int want) {
    if (want > POOL_MAX) want = POOL_MAX;
    int have = atomic_load_explicit(&pool.nworkers, memory_order_acquire);
    if (have >= want) return have;
    pthread_mutex_lock(&pool.mu);
    have = atomic_load(&pool.nworkers);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    int ok = pthread_attr_init(&attr) == 0;
    if (ok) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, (size_t)4 << 20); /* virtual; as glibc, not musl */
    }
    uint64_t seq = atomic_load(&pool.state) >> 16;
    while (ok && have < want) {
        pthread_t th;
        worker_arg *a = malloc(sizeof *a);
        if (!a) break;
        a->w = have + 1;
        a->seq = seq;
        if (pthread_create(&th, &attr, worker_main, a)) {
            free(a);
            break;
        }
        have++;
        atomic_store_explicit(&pool.nworkers, have, memory_order_release);
    }
    if (ok) pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_mutex_unlock(&pool.mu);
    return have;
}

/* In a child after fork() only the forking thread exists: no workers. */
static void pool_atfork_child(void) {
    atomic_store(&pool.nworkers, 0);
    atomic_store(&pool.sleepers, 0);
    atomic_flag_clear(&pool.busy);
    pthread_mutex_init(&pool.mu, NULL);
    pthread_cond_init(&pool.wake, NULL);
}

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static void pool_init(void) { pthread_atfork(NULL, NULL, pool_atfork_child); }

int gad__pool_nested(void) { return pool_inside; }

int gad__pool_contended(void) {
    int f = atomic_load_explicit(&contend_force, memory_order_relaxed);
    if (GAD_UNLIKELY(f >= 0)) return f;
    int64_t u = atomic_load_explicit(&pool.contended_until, memory_order_relaxed);
    return u != 0 && now_ns() < u;
}

int gad__pool_worker(void) { return pool_worker; }

int gad__pool_run(int nt, void (*fn)(void *ctx, int t, int nt), void *ctx) {
    if (nt > 1 && !pool_inside &&
        !atomic_flag_test_and_set_explicit(&pool.busy, memory_order_acquire)) {
        pthread_once(&pool_once, pool_init);
        int have = pool_grow(nt - 1);
        if (nt > have + 1) nt = have + 1;
        if (nt > 1) {
            pool.fn = fn;
            pool.ctx = ctx;
            atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
            atomic_store_explicit(&pool.park, 0, memory_order_relaxed);
            uint64_t seq = (atomic_load_explicit(&pool.state, memory_order_relaxed) >> 16) + 1;
            seq &= ((uint64_t)1 << 48) - 1;
            /* index 0 is the caller's */
            atomic_store_explicit(&pool.claim, seq << 16 | 1, memory_order_release);
            atomic_store(&pool.state, seq << 16 | (uint64_t)nt);
            if (atomic_load(&pool.sleepers) > 0) {
                pthread_mutex_lock(&pool.mu);
                pthread_cond_broadcast(&pool.wake);
                pthread_mutex_unlock(&pool.mu);
            }
            pool_inside = 1;
            fn(ctx, 0, nt);
            int mine = 1; /* then the indices no worker has claimed yet */
            for (int t; (t = claim_index(seq, nt)) >= 0; mine++) fn(ctx, t, nt);
            /* wait for the indices running workers took; let them have
             * this core if one of them is waiting for one */
            for (unsigned i = 1;
                 atomic_load_explicit(&pool.done, memory_order_acquire) < nt - mine; i++)
                if (i % 4096) POOL_PAUSE();
                else sched_yield();
            pool_inside = 0;
        }
        atomic_flag_clear_explicit(&pool.busy, memory_order_release);
        if (nt > 1) return nt;
    }
    fn(ctx, 0, 1);
    return 1;
}

void gad__pool_test_hold(int on) {
    atomic_store_explicit(&pool.hold, on != 0, memory_order_release);
}

void gad__pool_test_contended(int v) {
    atomic_store_explicit(&contend_force, v < 0 ? -1 : v != 0, memory_order_relaxed);
}

int gad__pool_test_probe(int ms) {
    sched_probe p;
    probe_init(&p);
    if (!p.ok) return -1;
    int64_t t0 = now_ns();
    volatile unsigned spin = 0;
    while (now_ns() - t0 < (int64_t)ms * 1000000)
        for (int i = 0; i < 1000; i++) spin = spin + 1;
    p.when = t0 - CONTEND_PERIOD_NS; /* judge now */
    return probe_contended(&p);
}

int gad__pool_test_sleepers(int *workers) {
    *workers = atomic_load(&pool.nworkers);
    return atomic_load(&pool.sleepers);
}

void gad__pool_test_spin_us(long us) {
    atomic_store_explicit(&pool.spin_ns, us < 0 ? -1 : (long long)us * 1000,
                          memory_order_relaxed);
}

void gad__pool_park(void) {
    atomic_store_explicit(&pool.park, 1, memory_order_relaxed);
}
