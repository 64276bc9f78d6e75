/* gpu_bench.c: time a batched matrix product (SPEC 6.14).
 *
 *     A [16,1024,1024] @ B [1024,1024],  a[b][i][j] = (3i + 5j + b) mod 991,
 *                                        b[i][j]    = (7i + 11j) mod 983 (f32)
 *
 * timed over 10 iterations after one warm-up, for each configuration: one
 * GPU, all GPUs, CPU+GPU, and CPU only. This build of gad has no GPU
 * backend, so only the CPU line is measured; the GPU configurations are
 * reported as skipped and the program exits 0. The batch dim of A and the
 * missing one of B broadcast (gad_matmul follows NumPy).
 *
 * A few entries of the result are checked against a direct sum in double,
 * so that a fast but wrong product does not pass.
 *
 * Usage: gpu_bench [--quick]   (--quick: A [2,256,256] @ B [256,256]) */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gad.h"

#define ITERS 10

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float a_val(int64_t b, int64_t i, int64_t j) {
    return (float)((3 * i + 5 * j + b) % 991);
}
static float b_val(int64_t i, int64_t j) {
    return (float)((7 * i + 11 * j) % 983);
}

/* The operands as tensors the caller owns (NULL on a memory error). */
static gad_tensor *make_a(int64_t nb, int64_t n) {
    float *buf = malloc((size_t)(nb * n * n) * sizeof(float));
    if (!buf) return NULL;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) buf[(b * n + i) * n + j] = a_val(b, i, j);
    gad_tensor *t = gad_from_f32(buf, (int64_t[]){nb, n, n}, 3);
    free(buf);
    return t;
}

static gad_tensor *make_b(int64_t n) {
    float *buf = malloc((size_t)(n * n) * sizeof(float));
    if (!buf) return NULL;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) buf[i * n + j] = b_val(i, j);
    gad_tensor *t = gad_from_f32(buf, (int64_t[]){n, n}, 2);
    free(buf);
    return t;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const int64_t nb = quick ? 2 : 16, n = quick ? 256 : 1024;

    gad_tensor *a = make_a(nb, n), *b = make_b(n);
    if (!a || !b) {
        fprintf(stderr, "gpu_bench: %s\n",
                gad_last_error() ? gad_last_error()->text : "out of memory");
        return 1;
    }
    printf("matmul [%lld,%lld,%lld] @ [%lld,%lld] f32, %d iterations after 1 warm-up\n",
           (long long)nb, (long long)n, (long long)n, (long long)n, (long long)n, ITERS);

    /* No GPU backend in this build: say so for the three GPU configurations. */
    printf("one GPU, all GPUs, CPU+GPU: skipped (no GPU backend in this build)\n");

    /* CPU only. Each product gets its own scope, so it is freed right away. */
    gad_scope_begin();
    gad_tensor *c = gad_matmul(a, b); /* the warm-up; its result is checked below */
    if (!c) {
        fprintf(stderr, "gpu_bench: %s\n", gad_last_error()->text);
        return 1;
    }
    double t0 = now();
    for (int it = 0; it < ITERS; it++) {
        gad_scope_begin();
        gad_tensor *r = gad_matmul(a, b);
        gad_scope_end();
        if (!r) {
            fprintf(stderr, "gpu_bench: %s\n", gad_last_error()->text);
            return 1;
        }
    }
    double secs = (now() - t0) / ITERS;
    double gflops = 2.0 * (double)nb * (double)n * (double)n * (double)n / secs * 1e-9;
    printf("CPU only: %8.2f ms/iter  %7.1f GFLOP/s  (%d threads, %s)\n", secs * 1e3,
           gflops, gad_num_threads(), gad_blas_available() ? "CBLAS" : "built-in GEMM");

    /* Spot-check some entries, corners included, against sums in double. */
    const float *cv = gad_data(c);
    if (!cv) {
        fprintf(stderr, "gpu_bench: %s\n", gad_last_error()->text);
        return 1;
    }
    const int64_t picks[][3] = {
        {0, 0, 0}, {nb - 1, n - 1, n - 1}, {nb / 2, 17, n - 3}, {1, n / 3, 5}};
    double worst = 0;
    for (int p = 0; p < 4; p++) {
        int64_t bb = picks[p][0], i = picks[p][1], j = picks[p][2];
        double want = 0;
        for (int64_t k = 0; k < n; k++) want += (double)a_val(bb, i, k) * b_val(k, j);
        double got = cv[(bb * n + i) * n + j];
        worst = fmax(worst, fabs(got - want) / fmax(fabs(want), 1));
    }
    gad_scope_end();
    gad_release(a), gad_release(b);

    if (!(worst < 1e-4)) {
        fprintf(stderr, "gpu_bench: FAILED: the product is wrong (relative error %.2e)\n",
                worst);
        return 1;
    }
    printf("ok: result checked (max relative error %.1e)\n", worst);
    return 0;
}
