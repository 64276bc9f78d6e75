/* w1_chain.c: W1's chain alone, one line per repetition with the cost of
 * each phase, for profiling the per-op path (perf, valgrind's callgrind)
 * rather than for the comparison, which gad-bench does.
 *
 *     w1-chain [NOPS [REPS [CACHE_MIB]]]   defaults: 1000 ops, 5 repetitions,
 *                                          gad's cache limit (1 GiB; 0 keeps it)
 *
 * Each repetition builds the chain (mul by a constant, add a constant, tanh,
 * in turn, on 16 f32 elements that require grad), differentiates it with
 * gad_grad_ex and ends the scope that owns it, and prints the ns per op of
 * the forward pass, the backward pass and the freeing. A GiB of cache holds
 * the graph of about 1.5 million of these ops; past that, freeing returns
 * the rest to malloc and the next graph takes it back object by object, so
 * CACHE_MIB raises the limit to time the graph alone. */
#include "gad.h"
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>


int main(int argc, char **argv) {
    long nops = argc > 1 ? atol(argv[1]) : 1000, reps = argc > 2 ? atol(argv[2]) : 5;
    long cache_mib = argc > 3 ? atol(argv[3]) : 0;
    if (nops < 1 || reps < 1 || cache_mib < 0) {
        fprintf(stderr, "usage: w1-chain [NOPS [REPS [CACHE_MIB]]] (NOPS, REPS >= 1)\n");
        return 2;
    }
    if (cache_mib > 0) gad_set_cache_limit((size_t)cache_mib << 20);
    int64_t n = 16;
    gad_rng *r = gad_rng_new(0);
    gad_tensor *x = gad_requires_grad(gad_rng_normal_tensor(r, &n, 1, GAD_F32, 0, 1));
    gad_tensor *cm = gad_full(&n, 1, GAD_F32, 0.9), *ca = gad_full(&n, 1, GAD_F32, 0.1);
    gad_rng_free(r);
    if (!x || !cm || !ca) {
        fprintf(stderr, "w1-chain: %s\n", gad_last_error()->text);
        return 1;
    }
    for (long rep = 0; rep < reps; rep++) {
        double t0 = now_s();
        gad_scope_begin();
        gad_tensor *v = x, *g = NULL;
        for (long i = 0; i < nops; i++)
            v = i % 3 == 0 ? gad_mul(v, cm) : i % 3 == 1 ? gad_add(v, ca) : gad_tanh(v);
        double t1 = now_s();
        gad_status st = gad_grad_ex(v, gad_ones(&n, 1, GAD_F32), &x, 1, &g, 0);
        double t2 = now_s();
        gad_scope_end();
        double t3 = now_s();
        if (st != GAD_OK) {
            fprintf(stderr, "w1-chain: %s\n", gad_last_error()->text);
            return 1;
        }
        double k = 1e9 / (double)nops;
        printf("fwd %.1f bwd %.1f free %.1f total %.1f ns/op\n", (t1 - t0) * k,
               (t2 - t1) * k, (t3 - t2) * k, (t3 - t0) * k);
    }
    gad_release(x);
    gad_release(cm);
    gad_release(ca);
    return 0;
}
