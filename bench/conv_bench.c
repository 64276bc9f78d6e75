/* conv_bench.c: gad's side of the convolution benchmark (issue 28;
 * bench/conv_compare.py alternates it with PyTorch): forward + backward (the
 * input's and the weight's gradients, seeded with a fixed random tensor) of
 * one f32 convolution, batch 32, 64 -> 64 channels, 56x56, no bias:
 *   conv3x3    3x3, stride 1, padding 1
 *   depthwise  3x3, stride 1, padding 1, groups 64
 *   conv1x1    1x1
 * Also "fwd-<case>" for the forward alone, "gx-<case>" and "gw-<case>" for
 * the forward and one gradient (x's or w's). Prints one JSON line: median,
 * min and max milliseconds per call over the timed calls, and the median
 * CPU time of the process per call (all threads: on a loaded host, where
 * the wall time mostly measures the neighbours, the work done).
 *   gad-conv-bench CASE [REPS] [THREADS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gad.h"
#include "bench_util.h"




int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "conv3x3";
    int reps = argc > 2 ? atoi(argv[2]) : 10, threads = argc > 3 ? atoi(argv[3]) : 2;
    int fwd_only = !strncmp(c, "fwd-", 4);
    int gx_only = !strncmp(c, "gx-", 3), gw_only = !strncmp(c, "gw-", 3);
    const char *k = fwd_only ? c + 4 : gx_only || gw_only ? c + 3 : c;
    int64_t N = 32, C = 64, H = 56, W = 56;
    int depthwise = !strcmp(k, "depthwise"), one = !strcmp(k, "conv1x1");
    if (!depthwise && !one && strcmp(k, "conv3x3")) {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    gad_set_num_threads(threads);
    int64_t ks = one ? 1 : 3;
    int64_t xs[4] = {N, C, H, W}, ws[4] = {C, depthwise ? 1 : C, ks, ks};
    gad_tensor *x32 = gad_requires_grad(gad_randn(xs, 4, 1));
    gad_tensor *w32 = gad_requires_grad(gad_mul_scalar(gad_randn(ws, 4, 2), 0.05));
    gad_tensor *s32 = gad_randn(xs, 4, 3);
    gad_conv_opts o = {.padding = {one ? 0 : 1, one ? 0 : 1}, .groups = depthwise ? C : 1};
    double t[200], cpu[200];
    if (reps > 200) reps = 200;
    for (int i = -2; i < reps; i++) {
        gad_scope_begin();
        double t0 = now_s(), c0 = cpu_now_s();
        gad_tensor *y = gad_conv2d(x32, w32, NULL, &o);
        if (!fwd_only) {
            gad_tensor *in[2] = {gw_only ? w32 : x32, w32}, *g[2];
            if (gad_grad_ex(y, s32, in, gx_only || gw_only ? 1 : 2, g, 0) != GAD_OK) y = NULL;
        }
        double dt = now_s() - t0, dc = cpu_now_s() - c0;
        if (!y) {
            fprintf(stderr, "%s\n", gad_last_error() ? gad_last_error()->text : "failed");
            return 1;
        }
        gad_scope_end();
        if (i >= 0) t[i] = dt, cpu[i] = dc;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    qsort(cpu, (size_t)reps, sizeof *cpu, cmp_double);
    printf("{\"impl\": \"gad\", \"case\": \"%s\", \"median_ms\": %.3f, \"min_ms\": %.3f, "
           "\"max_ms\": %.3f, \"cpu_ms\": %.3f, \"threads\": %d}\n",
           c, 1e3 * t[reps / 2], 1e3 * t[0], 1e3 * t[reps - 1], 1e3 * cpu[reps / 2], threads);
    return 0;
}
