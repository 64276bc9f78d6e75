/* linear-layout: the cost of PyTorch's [out, in] weight layout in gad.
 * gad_nn_linear multiplies by a transposed view of its weight (the GEMM
 * reads it in place); this times forward + backward (the weight's and the
 * input's gradients) of that layer against gad_linear with the same
 * weight stored [in, out], alternated in one run, 2 threads, medians.
 * Prints, per size, both medians and whether the weight's gradient came
 * back contiguous (a transposed gradient would be packed when used).
 *   linear-layout [reps] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gad.h"
#include "bench_util.h"



/* one forward + backward; returns ms, or -1 on an error */
static double step(gad_module *m, gad_tensor *w_in_out, gad_tensor *b, gad_tensor *x,
                   int contiguous_check) {
    gad_scope_begin();
    double t0 = now_ms();
    gad_tensor *w = m ? gad_module_tensor(m, "weight") : w_in_out;
    gad_tensor *y = m ? gad_module_forward(m, x) : gad_linear(x, w, b);
    gad_tensor *in[2] = {w, x}, *g[2] = {NULL, NULL};
    gad_status st = y ? gad_grad(gad_sum_all(y), in, 2, g) : GAD_ERR_DOMAIN;
    double t = now_ms() - t0;
    if (st == GAD_OK && contiguous_check)
        printf("  %s: weight gradient %scontiguous\n", m ? "[out, in] view" : "[in, out]",
               gad_is_contiguous(g[0]) ? "" : "NOT ");
    gad_scope_end();
    return st == GAD_OK ? t : -1;
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    if (reps < 3) reps = 3;
    gad_set_num_threads(2);
    static const int64_t sizes[][3] = {{64, 256, 256}, {256, 1024, 1024}, {512, 1024, 4096}};
    gad_rng *rng = gad_rng_new(1);
    for (int s = 0; s < 3; s++) {
        int64_t B = sizes[s][0], in = sizes[s][1], out = sizes[s][2];
        gad_params *ps = gad_params_new();
        gad_nn_ctx c = {ps, rng, GAD_F32};
        gad_module *m = gad_nn_linear(&c, "fc", in, out, 1);
        gad_tensor *w = gad_requires_grad(gad_contiguous(gad_transpose(gad_module_tensor(m, "weight"))));
        gad_tensor *x = gad_requires_grad(gad_rng_normal_tensor(rng, (int64_t[]){B, in}, 2, GAD_F32, 0, 1));
        gad_tensor *b = gad_module_tensor(m, "bias");
        double *ta = malloc((size_t)reps * sizeof *ta), *tb = malloc((size_t)reps * sizeof *tb);
        printf("x [%lld, %lld] -> %lld:\n", (long long)B, (long long)in, (long long)out);
        step(m, NULL, NULL, x, 1), step(NULL, w, b, x, 1);
        for (int i = 0; i < reps; i++) {
            ta[i] = step(m, NULL, NULL, x, 0);
            tb[i] = step(NULL, w, b, x, 0);
        }
        qsort(ta, (size_t)reps, sizeof *ta, cmp_double);
        qsort(tb, (size_t)reps, sizeof *tb, cmp_double);
        printf("  fwd+bwd median: [out, in] view %.3f ms, [in, out] %.3f ms, ratio %.3f\n",
               ta[reps / 2], tb[reps / 2], ta[reps / 2] / tb[reps / 2]);
        free(ta);
        free(tb);
        gad_release(w);
        gad_release(x);
        gad_module_free(m);
        gad_params_free(ps);
    }
    gad_rng_free(rng);
    return 0;
}
