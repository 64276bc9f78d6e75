/* gpu_bench.c: time a batched matrix product (SPEC 6.14).
 *
 *     A [16,1024,1024] @ B [1024,1024],  a[b][i][j] = (3i + 5j + b) mod 991,
 *                                        b[i][j]    = (7i + 11j) mod 983 (f32)
 *
 * timed over 10 iterations after one warm-up, for each configuration of g's
 * offload (gad_set_offload, SPEC §8): one GPU, all GPUs, CPU+GPU (the CPU
 * takes its share of the batch, the GPUs the rest), and CPU only. The
 * tensors stay on the CPU; offload moves the work. Without a GPU (or in a
 * build without CUDA) the GPU lines say so, the CPU line is measured and
 * the program exits 0. The batch dim of A and the missing one of B
 * broadcast (gad_matmul follows NumPy).
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

/* One configuration: the product timed, and checked against sums in
 * double at a few entries, corners included. 0, or 1 on an error. */
static int run_config(const char *what, gad_tensor *a, gad_tensor *b, int64_t nb, int64_t n) {
    gad_scope_begin();
    gad_tensor *c = gad_matmul(a, b); /* the warm-up; its result is checked below */
    double secs = 0;
    if (c) {
        double t0 = now();
        for (int it = 0; it < ITERS && c; it++) {
            gad_scope_begin();
            if (!gad_matmul(a, b)) c = NULL;
            gad_scope_end();
        }
        secs = (now() - t0) / ITERS;
    }
    const float *cv = c ? gad_data(c) : NULL;
    if (!cv) {
        fprintf(stderr, "gpu_bench: %s: %s\n", what, gad_last_error()->text);
        gad_scope_end();
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
    double gflops = 2.0 * (double)nb * (double)n * (double)n * (double)n / secs * 1e-9;
    printf("%-10s %8.2f ms/iter  %7.1f GFLOP/s  max relative error %.1e\n", what, secs * 1e3,
           gflops, worst);
    if (!(worst < 1e-4)) {
        fprintf(stderr, "gpu_bench: FAILED: %s: the product is wrong\n", what);
        return 1;
    }
    return 0;
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
    int ngpu = gad_device_count(GAD_DEVICE_CUDA), rc = 0;
    if (quick && ngpu > 0) printf("(--quick: below g's crossover, so every line runs on the CPU)\n");
    if (ngpu == 0) {
        printf("one GPU, all GPUs, CPU+GPU: skipped (no CUDA GPU in this build or machine)\n");
    } else {
        gad_device devs[16];
        for (int i = 0; i < ngpu && i < 16; i++) devs[i] = gad_cuda(i);
        gad_set_offload(1);
        gad_set_offload_devices(devs, 1);
        gad_set_offload_cpu_share(0); /* the GPUs alone */
        rc |= run_config("one GPU", a, b, nb, n);
        gad_set_offload_devices(devs, ngpu < 16 ? ngpu : 16);
        rc |= run_config("all GPUs", a, b, nb, n);
        gad_set_offload_cpu_share(-1); /* g's share: 1/(gpus + 1) */
        rc |= run_config("CPU+GPU", a, b, nb, n);
        gad_set_offload(0);
    }
    rc |= run_config("CPU only", a, b, nb, n);
    printf("(%d threads, %s)\n", gad_num_threads(),
           gad_blas_available() ? "CBLAS" : "built-in GEMM");
    gad_release(a), gad_release(b);
    if (rc) return 1;
    printf("ok: every result checked\n");
    return 0;
}
