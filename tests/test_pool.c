/* test_pool.c: gad's worker threads (src/core/pool.c) and the parallel
 * loop built on them: every part of a region runs once, on as many threads
 * as asked; a region inside a region, or one asked for while another thread
 * runs one, runs on its caller alone; regions from several threads at once
 * all give the right answer; workers that went to sleep (GAD_SPIN_US) or
 * were parked wake up for the next region; a fork child starts workers of
 * its own. Build with -DGAD_SANITIZE=thread to check for data races. */
#define _GNU_SOURCE /* pthread_setaffinity_np */
#include "test.h"
#include "gad_int.h"

#include <sched.h>

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define POOL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define POOL_TSAN 1
#endif
#endif

#define MAXT 8

typedef struct {
    atomic_int hits[MAXT];
    atomic_int seen_nt;
    pthread_t caller;
    atomic_int on_caller; /* part 0 ran on the calling thread */
    atomic_int inner;     /* what a nested region returned */
    atomic_int outside;   /* parts that found gad__pool_nested() false */
    atomic_int elsewhere; /* parts that ran on another thread than the caller */
} region_log;

static void log_part(void *arg, int t, int nt) {
    region_log *r = arg;
    if (t >= 0 && t < MAXT) atomic_fetch_add(&r->hits[t], 1);
    atomic_store(&r->seen_nt, nt);
    if (t == 0) atomic_store(&r->on_caller, pthread_equal(pthread_self(), r->caller));
    if (!pthread_equal(pthread_self(), r->caller)) atomic_fetch_add(&r->elsewhere, 1);
}

/* Runs a region of nt parts; checks that parts 0..got-1 ran once each, on
 * got threads, part 0 on this thread. Returns got. */
static int run_logged(int nt) {
    region_log r = {.caller = pthread_self()};
    int got = gad__pool_run(nt, log_part, &r);
    CHECK(got >= 1 && got <= nt);
    CHECK(atomic_load(&r.seen_nt) == got);
    CHECK(atomic_load(&r.on_caller) == 1);
    for (int t = 0; t < MAXT; t++)
        CHECK_MSG(atomic_load(&r.hits[t]) == (t < got), "nt %d got %d: part %d ran %d times",
                  nt, got, t, atomic_load(&r.hits[t]));
    return got;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

TEST(every_part_runs_once) {
    for (int nt = 1; nt <= 5; nt++)
        for (int rep = 0; rep < 50; rep++) CHECK(run_logged(nt) == nt);
    /* fewer threads than workers: the others sit the region out */
    for (int rep = 0; rep < 50; rep++) CHECK(run_logged(2) == 2);
    CHECK(!gad__pool_nested());
}

/* Runs on workers: records in atomics (the CHECK counters are not). */
static void nested_part(void *arg, int t, int nt) {
    region_log *outer = arg;
    (void)nt;
    if (!gad__pool_nested()) atomic_fetch_add(&outer->outside, 1);
    if (t == 0) { /* on the caller */
        region_log r = {.caller = pthread_self()};
        atomic_store(&outer->inner, gad__pool_run(3, log_part, &r));
        CHECK(atomic_load(&r.hits[0]) == 1 && atomic_load(&r.hits[1]) == 0);
        CHECK(atomic_load(&r.on_caller) == 1);
    }
}

TEST(nested_region_runs_on_caller) {
    region_log r = {.caller = pthread_self()};
    CHECK(gad__pool_run(2, nested_part, &r) == 2);
    CHECK(atomic_load(&r.inner) == 1);
    CHECK(atomic_load(&r.outside) == 0);
    CHECK(!gad__pool_nested());
}

/* parallel_for: every index of [0, n) in exactly one chunk, chunks at
 * least grain long (but the whole range when shorter) */
typedef struct {
    int64_t n, grain;
    unsigned char *mark;
    atomic_int bad;
} cover;

static void cover_range(void *arg, int64_t lo, int64_t hi) {
    cover *c = arg;
    if (lo < 0 || hi > c->n || lo >= hi || (hi - lo < c->grain && hi - lo != c->n))
        atomic_store(&c->bad, 1);
    for (int64_t i = lo; i < hi && i >= 0 && i < c->n; i++) c->mark[i]++;
}

TEST(parallel_for_covers_the_range) {
    static const int64_t ns[] = {0, 1, 7, 64, 1000, 4097, 100000};
    static const int64_t grains[] = {1, 3, 64, 5000};
    for (int threads = 1; threads <= 3; threads++) {
        gad_set_num_threads(threads);
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (size_t j = 0; j < sizeof grains / sizeof grains[0]; j++) {
                cover c = {ns[i], grains[j], calloc((size_t)ns[i] + 1, 1), 0};
                gad__parallel_for(c.n, c.grain, cover_range, &c);
                int once = 1;
                for (int64_t k = 0; k < c.n; k++) once &= c.mark[k] == 1;
                CHECK_MSG(once && !atomic_load(&c.bad), "n %lld grain %lld threads %d",
                          (long long)c.n, (long long)c.grain, threads);
                free(c.mark);
            }
    }
    gad_set_num_threads(0);
}

/* A sum over a parallel loop, in per-chunk partial sums. */
typedef struct {
    const int64_t *v;
    _Atomic int64_t sum;
} sum_ctx;

static void sum_range(void *arg, int64_t lo, int64_t hi) {
    sum_ctx *c = arg;
    int64_t s = 0;
    for (int64_t i = lo; i < hi; i++) s += c->v[i];
    atomic_fetch_add(&c->sum, s);
}

#define NV 20000
static int64_t values[NV];

static void *caller_main(void *arg) {
    atomic_int *bad = arg;
    for (int rep = 0; rep < 300; rep++) {
        sum_ctx c = {values, 0};
        gad__parallel_for(NV, 100 + rep % 7, sum_range, &c);
        if (atomic_load(&c.sum) != (int64_t)NV * (NV - 1) / 2) atomic_store(bad, 1);
    }
    return NULL;
}

TEST(regions_from_several_threads) {
    for (int i = 0; i < NV; i++) values[i] = i;
    gad_set_num_threads(2);
    enum { NCALLERS = 4 };
    pthread_t th[NCALLERS];
    atomic_int bad = 0;
    int started = 0;
    for (int i = 0; i < NCALLERS; i++) started += pthread_create(&th[i], NULL, caller_main, &bad) == 0;
    CHECK(started == NCALLERS);
    caller_main(&bad);
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    CHECK(atomic_load(&bad) == 0);
    gad_set_num_threads(0);
}

TEST(sleeping_and_parked_workers_wake) {
    /* the tests run with GAD_SPIN_US=5 (ctest): pauses from 0 to 2 ms put
     * the workers to sleep at every point of their wait */
    static const long pauses[] = {0, 1, 3, 6, 10, 30, 100, 400, 2000};
    for (int rep = 0; rep < 4; rep++)
        for (size_t i = 0; i < sizeof pauses / sizeof pauses[0]; i++) {
            sleep_us(pauses[i]);
            CHECK(run_logged(3) == 3);
            gad__pool_park();
            CHECK(run_logged(2) == 2);
        }
}

/* Polls for up to ms milliseconds until all started workers sleep (want 1)
 * or until at least one is awake (want 0); returns whether it happened. */
static int workers_reach(int want_all_asleep, int ms) {
    for (int i = 0; i < ms; i++) {
        int started, asleep = gad__pool_test_sleepers(&started);
        if (want_all_asleep ? asleep == started : asleep < started) return 1;
        sleep_us(1000);
    }
    return 0;
}

/* A worker whose core is contended sleeps at once after a region instead
 * of spinning (the verdict forced here; the probe itself is the next
 * test). With a spin of a second, all workers asleep within half of it
 * can only come from that rule. */
TEST(contended_workers_sleep_at_once) {
    gad_set_num_threads(3);
    gad__pool_test_spin_us(1000000);
    gad__pool_test_contended(0);
    CHECK(run_logged(3) == 3);
    CHECK_MSG(workers_reach(0, 500), "no worker spinning after a quiet region");
    gad__pool_test_contended(1);
    for (int rep = 0; rep < 3; rep++) {
        CHECK(run_logged(3) == 3);
        CHECK_MSG(workers_reach(1, 500), "workers still spinning on a contended core");
    }
    /* and a region still finishes on sleeping workers' wake-up */
    CHECK(run_logged(3) == 3);
    gad__pool_test_contended(-1);
    gad__pool_test_spin_us(-1);
    gad__pool_park();
    gad_set_num_threads(0);
}

static void *compete(void *arg) {
    atomic_int *stop = arg;
    while (!atomic_load_explicit(stop, memory_order_relaxed)) {
    }
    return NULL;
}

/* The probe the workers use: a thread that shares its CPU with a spinning
 * thread waits to run about half of the time, and is judged contended.
 * (The quiet verdict is not checked: other tests may run beside this one.) */
TEST(probe_sees_a_shared_cpu) {
#ifdef __linux__
    cpu_set_t was, one;
    if (pthread_getaffinity_np(pthread_self(), sizeof was, &was)) return;
    int cpu = -1;
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
        if (CPU_ISSET(c, &was)) cpu = c;
    CHECK(cpu >= 0);
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    CHECK(pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0);
    int alone = gad__pool_test_probe(20);
    CHECK(alone == -1 || alone == 0 || alone == 1);
    if (alone >= 0) {
        atomic_int stop = 0;
        pthread_t th;
        pthread_attr_t at;
        int made = 0;
        if (pthread_attr_init(&at) == 0) {
            made = pthread_attr_setaffinity_np(&at, sizeof one, &one) == 0 &&
                   pthread_create(&th, &at, compete, &stop) == 0;
            pthread_attr_destroy(&at);
        }
        CHECK_MSG(made, "could not start a thread on CPU %d", cpu);
        if (made) {
            int shared = gad__pool_test_probe(60);
            atomic_store(&stop, 1);
            pthread_join(th, NULL);
            CHECK_MSG(shared == 1, "probe on a CPU shared with a spinning thread: %d", shared);
        }
    }
    CHECK(pthread_setaffinity_np(pthread_self(), sizeof was, &was) == 0);
#endif
}

/* Workers the OS has not scheduled (held before they claim a part) hold
 * nobody up: the caller claims their parts and the region ends without
 * them (if it waited for them, this test would hang); the parallel loop's
 * sums are the same bits. Lifted, the workers find nothing left of the
 * old regions and take part in the next ones. */
/* gad's threaded kernels on fixed data: a GEMM, an elementwise op and a
 * reduction, summed (the same bits whoever ran each part). */
static double sum_of(int64_t n) {
    gad_scope_begin();
    int64_t k = 96, m = n / k;
    gad_tensor *a = gad_randn((int64_t[]){m, k}, 2, 7);
    gad_tensor *b = gad_randn((int64_t[]){k, k}, 2, 8);
    gad_tensor *y = gad_sum_all(gad_exp(gad_tanh(gad_matmul(a, b))));
    double v = NAN;
    if (!y || gad_read_f64(y, &v, 1) != GAD_OK) v = NAN;
    gad_scope_end();
    return v;
}

TEST(regions_finish_without_their_workers) {
    gad_set_num_threads(4);
    double quiet = sum_of(1 << 16);
    gad__pool_test_hold(1);
    for (int rep = 0; rep < 20; rep++) {
        region_log r = {.caller = pthread_self()};
        int got = gad__pool_run(4, log_part, &r);
        CHECK(got >= 1 && got <= 4);
        for (int t = 0; t < MAXT; t++) CHECK(atomic_load(&r.hits[t]) == (t < got));
        CHECK_MSG(atomic_load(&r.elsewhere) == 0, "%d parts ran on held workers",
                  atomic_load(&r.elsewhere));
        CHECK(sum_of(1 << 16) == quiet);
    }
    gad__pool_test_hold(0);
    for (int rep = 0; rep < 20; rep++) CHECK(run_logged(4) >= 1);
    CHECK(sum_of(1 << 16) == quiet);
    gad_set_num_threads(0);
}

TEST(fork_child_starts_its_own_workers) {
#ifdef POOL_TSAN
    /* ThreadSanitizer does not allow a multi-threaded process's child to
     * start threads (die_after_fork); the other builds run this. */
    printf("     (not under ThreadSanitizer)\n");
#else
    CHECK(run_logged(3) == 3);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int ok = 1;
        for (int rep = 0; rep < 20; rep++) {
            region_log r = {.caller = pthread_self()};
            ok &= gad__pool_run(3, log_part, &r) == 3;
            ok &= atomic_load(&r.hits[0]) == 1 && atomic_load(&r.hits[1]) == 1 &&
                  atomic_load(&r.hits[2]) == 1;
        }
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(run_logged(3) == 3);
#endif
}

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
static atomic_uint worker_csr_or; /* the MXCSR bits the workers' parts saw */
static void csr_part(void *arg, int t, int nt) {
    (void)nt;
    if (t > 0 && !pthread_equal(pthread_self(), *(pthread_t *)arg))
        atomic_fetch_or(&worker_csr_or, _mm_getcsr());
}
#endif

/* Workers started while their creator ran with flush-to-zero and
 * denormals-are-zero on (a GEMM starts them so when it is the process's
 * first parallel work) start with both off: they would otherwise flush the
 * subnormal results of every chunk they ran afterwards, so that an
 * elementwise op's bits depended on which thread ran it. The first test:
 * the workers must not exist yet. */
TEST(workers_start_without_flush_modes) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u);
    pthread_t me = pthread_self();
    for (int i = 0; i < 20; i++) gad__pool_run(4, csr_part, &me);
    _mm_setcsr(saved);
    CHECK((atomic_load(&worker_csr_or) & 0x8040u) == 0);
    /* and what a user sees: subnormal products on every thread */
    gad_set_num_threads(2);
    int64_t n = 1 << 18;
    gad_tensor *x = gad_full((int64_t[]){n}, 1, GAD_F32, 1e-20);
    gad_tensor *y = gad_mul(x, x); /* 1e-40: subnormal in f32 */
    const float *v = y ? gad_data(y) : NULL;
    int64_t zeros = 0;
    for (int64_t i = 0; v && i < n; i++) zeros += v[i] == 0;
    CHECK(v && zeros == 0);
    gad_release(x), gad_release(y);
    gad_set_num_threads(0);
#endif
}

/* cpu/gemm.c (gemm_int.h): how many threads an M x N x K product takes. */
int gad__gemm_threads(int64_t M, int64_t N, int64_t K);

typedef struct {
    pthread_t caller;
    atomic_int elsewhere;  /* chunks run on another thread than the caller */
    atomic_int nchunks;
    int64_t lo[64];
} chunk_log;

static void log_chunk(void *arg, int64_t lo, int64_t hi) {
    chunk_log *c = arg;
    (void)hi;
    if (!pthread_equal(pthread_self(), c->caller)) atomic_fetch_add(&c->elsewhere, 1);
    int k = atomic_fetch_add(&c->nchunks, 1);
    if (k < 64) c->lo[k] = lo;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The chunk starts of a light loop over n with grain g, sorted; returns how
 * many chunks ran on another thread than the caller. */
static int light_chunks(int64_t n, int64_t g, int64_t *starts, int *count) {
    chunk_log c = {.caller = pthread_self()};
    gad__parallel_for_ew(n, g, log_chunk, &c);
    *count = atomic_load(&c.nchunks);
    CHECK(*count >= 1 && *count <= 64);
    if (*count > 64) *count = 64;
    memcpy(starts, c.lo, (size_t)*count * sizeof *starts);
    qsort(starts, (size_t)*count, sizeof *starts, cmp_i64);
    return atomic_load(&c.elsewhere);
}

/* While the workers find their cores contended, work too small to pay for
 * waking one stays on the caller: a product under 3M multiply-adds and a
 * streaming loop under 128K elements a thread (config.c's
 * GAD_CONTENDED_ELEMS), whatever its grain, in the same chunks as a quiet
 * machine's (so the same results); larger work is still split. */
TEST(contended_pool_keeps_small_work_on_the_caller) {
    gad_set_num_threads(2);
    const int two = gad__nthreads() >= 2 ? 2 : 1; /* 1 in a build without threads */
    gad__pool_test_contended(0);
    CHECK(!gad__pool_contended());
    CHECK(gad__gemm_threads(64, 64, 64) == two);
    CHECK(gad__gemm_threads(256, 256, 256) == two);
    /* the elementwise family's grain (15 grains), select's and casts' (7) */
    const int64_t ns[3] = {4 * 1000, 15 * 16384, 7 * 32768}, gs[3] = {1000, 16384, 32768};
    int64_t quiet[3][64], busy[64];
    int nq[3], nb;
    for (int i = 0; i < 3; i++) light_chunks(ns[i], gs[i], quiet[i], &nq[i]);
    double q13 = sum_of(1 << 13), q16 = sum_of(1 << 16);

    gad__pool_test_contended(1);
    CHECK(gad__pool_contended());
    CHECK(gad__gemm_threads(64, 64, 64) == 1);
    CHECK(gad__gemm_threads(144, 144, 144) == 1);
    CHECK(gad__gemm_threads(160, 160, 160) == two);
    CHECK(gad__gemm_threads(2048, 2048, 2048) == two);
    for (int rep = 0; rep < 20; rep++)
        for (int i = 0; i < 3; i++) {
            CHECK_MSG(light_chunks(ns[i], gs[i], busy, &nb) == 0,
                      "a chunk of a loop of %lld ran on a worker under contention",
                      (long long)ns[i]);
            CHECK(nb == nq[i] && !memcmp(busy, quiet[i], (size_t)nb * sizeof *busy));
        }
    /* 256K elements or more are split as before: every chunk once */
    cover c = {1 << 18, 32768, calloc((1 << 18) + 1, 1), 0};
    gad__parallel_for_ew(c.n, c.grain, cover_range, &c);
    int once = 1;
    for (int64_t k = 0; k < c.n; k++) once &= c.mark[k] == 1;
    CHECK(once && !atomic_load(&c.bad));
    free(c.mark);
    CHECK(sum_of(1 << 13) == q13);
    CHECK(sum_of(1 << 16) == q16);

    gad__pool_test_contended(-1);
    gad__pool_park();
    gad_set_num_threads(0);
}

int main(void) {
    RUN(workers_start_without_flush_modes);
    RUN(every_part_runs_once);
    RUN(nested_region_runs_on_caller);
    RUN(parallel_for_covers_the_range);
    RUN(regions_from_several_threads);
    RUN(sleeping_and_parked_workers_wake);
    RUN(contended_workers_sleep_at_once);
    RUN(probe_sees_a_shared_cpu);
    RUN(regions_finish_without_their_workers);
    RUN(contended_pool_keeps_small_work_on_the_caller);
    RUN(fork_child_starts_its_own_workers);
    return test_summary();
}
