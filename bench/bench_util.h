/* bench_util.h: the clocks and the sort order that the benchmark programs
 * share (include it after the program's feature-test macros). */
#ifndef GAD_BENCH_UTIL_H
#define GAD_BENCH_UTIL_H

#include <time.h>

static inline double bench_clock_s(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Wall-clock time (monotonic) in seconds and in milliseconds, and the
 * process's CPU time in seconds. */
static inline double now_s(void) { return bench_clock_s(CLOCK_MONOTONIC); }
static inline double now_ms(void) { return 1e3 * now_s(); }
static inline double cpu_now_s(void) { return bench_clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/* qsort's comparison for doubles, ascending. */
static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
