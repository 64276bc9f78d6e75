/* math-bench: gad's side of bench/math_compare (issue 27's math ops): one
 * op over n f32 elements, a new output each call, after warm-up; prints
 * one JSON line per op with the median, min and max ms over the calls.
 *   math-bench [n] [reps] op...     (ops: sin erf gelu_erf exp2 log1p ...)
 * Inputs: 2 * randn, except log1p's: uniform in [-0.99, 3). Threads: 2, or
 * $MATH_BENCH_THREADS. cpu_ms: the process's CPU time per call (mean), less
 * sensitive than the wall clock to a loaded host. */
#include "gad.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>




static gad_tensor *run(const char *op, gad_tensor *x) {
    if (!strcmp(op, "sin")) return gad_sin(x);
    if (!strcmp(op, "cos")) return gad_cos(x);
    if (!strcmp(op, "erf")) return gad_erf(x);
    if (!strcmp(op, "gelu_erf")) return gad_gelu_erf(x);
    if (!strcmp(op, "gelu_tanh")) return gad_gelu(x);
    if (!strcmp(op, "exp2")) return gad_exp2(x);
    if (!strcmp(op, "log1p")) return gad_log1p(x);
    if (!strcmp(op, "expm1")) return gad_expm1(x);
    if (!strcmp(op, "rsqrt")) return gad_rsqrt(x);
    if (!strcmp(op, "mish")) return gad_mish(x);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: math-bench n reps op...\n");
        return 2;
    }
    int64_t n = atoll(argv[1]);
    int reps = atoi(argv[2]);
    const char *th = getenv("MATH_BENCH_THREADS");
    gad_set_num_threads(th ? atoi(th) : 2);
    gad_tensor *g = gad_randn(&n, 1, 1);
    gad_tensor *x = gad_mul_scalar(g, 2.0);
    gad_rng *r = gad_rng_new(2);
    gad_tensor *u = gad_rng_uniform_tensor(r, &n, 1, GAD_F32, -0.99, 3.0);
    if (!x || !u) return 1;
    double *t = malloc((size_t)reps * sizeof *t);
    for (int k = 3; k < argc; k++) {
        const char *op = argv[k];
        gad_tensor *in = !strcmp(op, "log1p") ? u : x;
        for (int w = 0; w < 3; w++) { /* warm-up */
            gad_scope_begin();
            if (!run(op, in)) return 1;
            gad_scope_end();
        }
        double c0 = cpu_now_s();
        for (int i = 0; i < reps; i++) {
            gad_scope_begin();
            double t0 = now_s();
            gad_tensor *y = run(op, in);
            t[i] = (now_s() - t0) * 1e3;
            gad_scope_end();
            if (!y) return 1;
        }
        double cpu = (cpu_now_s() - c0) * 1e3 / reps;
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        printf("{\"side\": \"gad\", \"op\": \"%s\", \"n\": %lld, \"median_ms\": %.3f, "
               "\"min_ms\": %.3f, \"max_ms\": %.3f, \"cpu_ms\": %.3f}\n",
               op, (long long)n, t[reps / 2], t[0], t[reps - 1], cpu);
        fflush(stdout);
    }
    free(t);
    gad_rng_free(r);
    return 0;
}
