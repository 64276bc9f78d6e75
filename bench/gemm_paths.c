/* gemm_paths.c: two paths of the built-in f32 GEMM timed against each other
 * inside one process, call by call, for choosing the rules of src/cpu/gemm.c
 * on a shared machine: whole processes alternated (bench/ab) drift with the
 * other guests' load by more than a few percent, calls alternated do not.
 *
 *   gemm-paths [--threads N] [--rounds R] [--what panels|small] [M N K TA TB]...
 *
 * --what panels: the small-problem path with a row-major op(B) read in place
 * (off) and in panels where gemm.c's rule says (on); small: every product on
 * the packed path (off) and with the small-problem paths (on). Each round
 * times each variant in turn (the median of 11 timings of enough calls for
 * 20 MFLOP), and the figure is the median over the rounds of on/off speed,
 * with its spread. Without shapes: W5's products (2048 x 256 and 512). */
#include "gad.h"
#include "bench_util.h"

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

int main(int argc, char **argv) {
    int threads = 1, rounds = 9, panels = 1, nshape = 0;
    int64_t sh[32][5];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--what") && i + 1 < argc) {
            i++;
            panels = !strcmp(argv[i], "panels");
            if (!panels && strcmp(argv[i], "small")) goto usage;
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
    fprintf(stderr, "usage: gemm-paths [--threads N] [--rounds R (1-%d)] [--what panels|small] "
                    "[M N K TA TB]...\n", MAXR);
    return 2;
}
