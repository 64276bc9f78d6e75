/* gemm_paths.c: two paths of the built-in f32 GEMM timed against each other
 * inside one process, call by call, for choosing the rules of src/cpu/gemm.c
 * on a shared machine: whole processes alternated (bench/ab) drift with the
 * other guests' load by more than a few percent, calls alternated do not.
 *
 *   gemm-paths [--threads N] [--rounds R] [--what panels|small|ceiling] [M N K TA TB]...
 *
 * --what panels: the small-problem path with a row-major op(B) read in place
 * (off) and in panels where gemm.c's rule says (on); small: every product on
 * the packed path (off) and with the small-problem paths (on). Each round
 * times each variant in turn (the median of 11 timings of enough calls for
 * 20 MFLOP), and the figure is the median over the rounds of on/off speed,
 * with its spread. Without shapes: W5's products (2048 x 256 and 512).
 *
 * --what ceiling (one thread; issue 31 asks what holds the packed GEMM
 * short of the FMA peak): each round times, in turn, the register-only FMA
 * loop (fma_peak.h), the packed micro-kernel on panels that stay in L1 (depth
 * 128), the micro-kernel as the packed path's inner loop runs it (one packed
 * A micro-panel against every micro-panel of a full B block, depth kc, from
 * L2), the packed path's two inner loops without the packing (every
 * micro-panel of a packed A block of M rows, from L3 where it outgrows L2,
 * against the B block, into C's tiles), and the product, and prints each as
 * a fraction of the peak of the same round: the kernel's own ceiling, what
 * reading B from L2 costs it, what streaming A and C costs, and what the
 * packing and the edges cost the product (the rest).
 * Without shapes: 1024^3 and 2048^3. */
#include "gad.h"
#include "bench_util.h"
#include "fma_peak.h"
#include "gemm_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* gemm.c's hooks for tests and benchmarks, and its built-in kernels */
int gad__gemm_test_isa(int isa, int small_paths);
void gad__gemm_test_sup_panels(int on);
int gad__sgemm_builtin(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                       const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                       float *C, int64_t ldc);

#define MAXR 64

static void set_variant(int panels, int on) {
    if (panels) {
        gad__gemm_test_isa(0, 1);
        gad__gemm_test_sup_panels(on);
    } else {
        gad__gemm_test_isa(0, on);
        gad__gemm_test_sup_panels(1);
    }
}

/* The median time of one call, over 11 timings of `it` calls each. */
static double time_calls(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *A,
                         const float *B, float *C, int it) {
    double t[11];
    for (int r = 0; r < 11; r++) {
        double t0 = now_s();
        for (int q = 0; q < it; q++)
            gad__sgemm_builtin(ta, tb, M, N, K, 1.0f, A, ta ? M : K, B, tb ? K : N, 0.0f, C, N);
        t[r] = (now_s() - t0) / it;
    }
    qsort(t, 11, sizeof t[0], cmp_double);
    return t[5];
}

/* n rounded up to a multiple of 64 (aligned_alloc's sizes). */
static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

/* --what ceiling for one product (see the top): rounds of the five timings
 * in turn, each round's figures over its own peak; medians over the rounds. */
static int ceiling(int64_t M, int64_t N, int64_t K, int ta, int tb, int rounds) {
#ifdef BENCH_FMA_PEAK
    const gemm_sdesc *d = gad__gemm_sdesc();
    int lanes = bench_fma_lanes();
    if (!lanes) {
        printf("ceiling: this CPU has no FMA vectors to measure the peak with\n");
        return 0;
    }
    const int64_t mr = d->mr, nr = d->nr, kc = d->kc, nsl = d->ncb / nr, kl1 = 128;
    float *A = malloc((size_t)(M * K) * sizeof(float)), *B = malloc((size_t)(K * N) * sizeof(float));
    float *C = malloc((size_t)(M * N) * sizeof(float));
    const int64_t mrows = M / mr * mr; /* the loops' A block: M rows, whole micro-panels */
    const int64_t pan = (mrows > mr ? mrows : mr) * kc; /* pa's elements */
    float *pa = aligned_alloc(64, round64((size_t)pan * sizeof(float)));
    float *pb = aligned_alloc(64, round64((size_t)(nsl * nr * kc) * sizeof(float)));
    float *c = aligned_alloc(64, round64((size_t)(mr * nr) * sizeof(float)));
    if (!A || !B || !C || !pa || !pb || !c) {
        fprintf(stderr, "gemm-paths: out of memory at %lld x %lld x %lld\n", (long long)M,
                (long long)N, (long long)K);
        free(A), free(B), free(C), free(pa), free(pb), free(c);
        return 1;
    }
    for (int64_t i = 0; i < M * K; i++) A[i] = (float)(i % 7) * 0.1f;
    for (int64_t i = 0; i < K * N; i++) B[i] = (float)(i % 5) * 0.1f;
    memset(C, 0, (size_t)(M * N) * sizeof(float)); /* its pages, before the timings */
    for (int64_t i = 0; i < pan; i++) pa[i] = (float)(i % 3) * 0.1f;
    for (int64_t i = 0; i < nsl * nr * kc; i++) pb[i] = (float)(i % 11) * 0.01f;
    const int64_t piters = 1 << 21, l1calls = 20000, l2passes = 400;
    const double pflop = 24.0 * lanes * (double)piters;
    /* the loops' columns of C: the B block's, or as many of them as C has */
    const int64_t lsl = N / nr < nsl ? N / nr : nsl, lpasses = 3;
    const double fl[5] = {pflop, 2.0 * mr * nr * kl1 * l1calls, 2.0 * mr * nr * kc * nsl * l2passes,
                          2.0 * (double)mrows * (double)(lsl * nr) * kc * lpasses,
                          2.0 * (double)M * (double)N * (double)K};
    int it = (int)(3e9 / fl[4]) + 1; /* a few tenths of a second of products */
    double f[5][MAXR];
    volatile float sink = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        sink = bench_fma_loop(lanes, piters);
        double tp = now_s() - t0;
        t0 = now_s();
        for (int64_t q = 0; q < l1calls; q++) d->kern(kl1, pa, pb, c, nr, 1.0f, 0.0f);
        double t1 = now_s() - t0;
        t0 = now_s();
        for (int64_t p = 0; p < l2passes; p++)
            for (int64_t j = 0; j < nsl; j++) d->kern(kc, pa, pb + j * nr * kc, c, nr, 1.0f, 0.0f);
        double t2 = now_s() - t0;
        t0 = now_s();
        for (int64_t p = 0; p < lpasses; p++)
            for (int64_t i = 0; i < mrows; i += mr)
                for (int64_t j = 0; j < lsl; j++)
                    d->kern(kc, pa + i * kc, pb + j * nr * kc, C + i * N + j * nr, N, 1.0f, 1.0f);
        double tl = now_s() - t0;
        t0 = now_s();
        for (int q = 0; q < it; q++)
            gad__sgemm_builtin(ta, tb, M, N, K, 1.0f, A, ta ? M : K, B, tb ? K : N, 0.0f, C, N);
        double t3 = (now_s() - t0) / it;
        double peak = pflop / tp;
        f[0][r] = peak * 1e-9;
        f[1][r] = fl[1] / t1 / peak;
        f[2][r] = fl[2] / t2 / peak;
        f[3][r] = fl[3] / tl / peak;
        f[4][r] = fl[4] / t3 / peak;
    }
    (void)sink;
    for (int k = 0; k < 5; k++) qsort(f[k], (size_t)rounds, sizeof(double), cmp_double);
    int h = rounds / 2;
    printf("%lld x %lld x %lld ta %d tb %d (%s kernel %lldx%lld, kc %lld, B block %lld columns): "
           "peak %.1f GFLOP/s; of it: kernel in L1 %.3f (%.3f-%.3f), kernel over a B block in L2 "
           "%.3f (%.3f-%.3f), loops without packing %.3f (%.3f-%.3f), product %.3f (%.3f-%.3f)\n",
           (long long)M, (long long)N, (long long)K, ta, tb, d->name, (long long)mr,
           (long long)nr, (long long)kc, (long long)(nsl * nr), f[0][h], f[1][h], f[1][0],
           f[1][rounds - 1], f[2][h], f[2][0], f[2][rounds - 1], f[3][h], f[3][0],
           f[3][rounds - 1], f[4][h], f[4][0], f[4][rounds - 1]);
    free(A), free(B), free(C), free(pa), free(pb), free(c);
#else
    (void)M, (void)N, (void)K, (void)ta, (void)tb, (void)rounds;
    printf("ceiling: measured on x86-64 only\n");
#endif
    return 0;
}

int main(int argc, char **argv) {
    int threads = 1, rounds = 9, panels = 1, ceil = 0, nshape = 0;
    int64_t sh[32][5];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--what") && i + 1 < argc) {
            i++;
            panels = !strcmp(argv[i], "panels");
            ceil = !strcmp(argv[i], "ceiling");
            if (!panels && !ceil && strcmp(argv[i], "small")) goto usage;
        } else if (i + 4 < argc && nshape < 32) {
            for (int k = 0; k < 5; k++) sh[nshape][k] = atoll(argv[i + k]);
            if (sh[nshape][0] < 1 || sh[nshape][1] < 1 || sh[nshape][2] < 1) goto usage;
            nshape++;
            i += 4;
        } else {
            goto usage;
        }
    }
    if (threads < 1 || rounds < 1 || rounds > MAXR) goto usage;
    if (ceil) {
        static const int64_t sq[][5] = {{1024, 1024, 1024, 0, 0}, {2048, 2048, 2048, 0, 0}};
        if (!nshape) nshape = 2, memcpy(sh, sq, sizeof sq);
        gad_set_num_threads(1);
        printf("# gemm-paths --what ceiling, 1 thread, %d rounds; fractions of the FMA peak "
               "measured in each round\n", rounds);
        for (int s = 0; s < nshape; s++)
            if (ceiling(sh[s][0], sh[s][1], sh[s][2], sh[s][3] != 0, sh[s][4] != 0, rounds))
                return 1;
        return 0;
    }
    if (!nshape) {
        static const int64_t w5[][5] = {{2048, 256, 256, 0, 0}, {2048, 512, 256, 0, 0},
                                        {2048, 256, 512, 0, 0}, {512, 256, 256, 0, 0}};
        nshape = 4;
        memcpy(sh, w5, sizeof w5);
    }
    gad_set_num_threads(threads);
    printf("# gemm-paths --what %s, %d thread(s), %d rounds; speed on/off > 1: on is faster\n",
           panels ? "panels (off: op(B) in place)" : "small (off: packed path only)", threads,
           rounds);
    for (int s = 0; s < nshape; s++) {
        int64_t M = sh[s][0], N = sh[s][1], K = sh[s][2];
        int ta = sh[s][3] != 0, tb = sh[s][4] != 0;
        float *A = malloc((size_t)(M * K) * sizeof(float));
        float *B = malloc((size_t)(K * N) * sizeof(float));
        float *C = malloc((size_t)(M * N) * sizeof(float));
        if (!A || !B || !C) {
            fprintf(stderr, "gemm-paths: out of memory at %lld x %lld x %lld\n", (long long)M,
                    (long long)N, (long long)K);
            return 1;
        }
        for (int64_t i = 0; i < M * K; i++) A[i] = (float)(i % 7) * 0.1f;
        for (int64_t i = 0; i < K * N; i++) B[i] = (float)(i % 5) * 0.1f;
        double flop = 2.0 * (double)M * (double)N * (double)K;
        int it = (int)(2e7 / flop) + 1;
        double t[2][MAXR], ratio[MAXR];
        for (int r = 0; r < rounds; r++)
            for (int v = 0; v < 2; v++) {
                set_variant(panels, v);
                t[v][r] = time_calls(ta, tb, M, N, K, A, B, C, it);
            }
        set_variant(panels, 1);
        for (int r = 0; r < rounds; r++) ratio[r] = t[0][r] / t[1][r];
        qsort(t[0], (size_t)rounds, sizeof(double), cmp_double);
        qsort(t[1], (size_t)rounds, sizeof(double), cmp_double);
        qsort(ratio, (size_t)rounds, sizeof(double), cmp_double);
        printf("%lld x %lld x %lld ta %d tb %d: off %.1f GFLOP/s, on %.1f GFLOP/s, on/off speed "
               "%.3f (%.3f-%.3f)\n",
               (long long)M, (long long)N, (long long)K, ta, tb, flop / t[0][rounds / 2] * 1e-9,
               flop / t[1][rounds / 2] * 1e-9, ratio[rounds / 2], ratio[0], ratio[rounds - 1]);
        free(A);
        free(B);
        free(C);
    }
    return 0;
usage:
    fprintf(stderr, "usage: gemm-paths [--threads N] [--rounds R (1-%d)] [--what panels|small|ceiling] "
                    "[M N K TA TB]...\n", MAXR);
    return 2;
}
