/* norm-bench: gad's side of bench/norm_compare.py, the normalization ops of
 * issue 28 timed against PyTorch in the same run. One case per process, 2
 * threads: `norm-bench CASE REPS` prints one line, "CASE median_ms min_ms".
 * The cases, forward + backward (the VJP of a fixed w with respect to x;
 * torch's autograd.grad(y, x, w)), f32, x [32, 64, 56, 56], affine with
 * weight 1 and bias 0 (constants):
 *   bn   batch_norm, training, running statistics updated (momentum 0.1)
 *   gn   group_norm, 8 groups
 *   in   instance_norm, the input's statistics, no running ones */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gad.h"
#include "bench_util.h"



int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "bn") && strcmp(argv[1], "gn") && strcmp(argv[1], "in"))) {
        fprintf(stderr, "usage: norm-bench bn|gn|in [reps]\n");
        return 2;
    }
    const char *c = argv[1];
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    if (reps < 1) reps = 1;
    gad_set_num_threads(2);
    gad_rng *r = gad_rng_new(1);
    int64_t shape[4] = {32, 64, 56, 56}, ch[1] = {64};
    gad_tensor *x = gad_keep(gad_requires_grad(gad_rng_normal_tensor(r, shape, 4, GAD_F32, 0, 1)));
    gad_tensor *w = gad_keep(gad_rng_normal_tensor(r, shape, 4, GAD_F32, 0, 1));
    gad_tensor *weight = gad_keep(gad_full(ch, 1, GAD_F32, 1.0));
    gad_tensor *bias = gad_keep(gad_zeros(ch, 1, GAD_F32));
    gad_tensor *rmean = gad_keep(gad_zeros(ch, 1, GAD_F32));
    gad_tensor *rvar = gad_keep(gad_full(ch, 1, GAD_F32, 1.0));
    double *t = malloc((size_t)(reps + 3) * sizeof *t);
    if (!t) return 1;
    for (int i = 0; i < reps + 3; i++) {
        gad_scope_begin();
        double t0 = now_ms();
        gad_tensor *y = !strcmp(c, "bn") ? gad_batch_norm(x, rmean, rvar, weight, bias, 1, 0.1, 1e-5)
                        : !strcmp(c, "gn") ? gad_group_norm(x, 8, weight, bias, 1e-5)
                                           : gad_instance_norm(x, NULL, NULL, weight, bias, 1, 0.1, 1e-5);
        gad_tensor *g = NULL;
        if (!y || gad_grad_ex(y, w, &x, 1, &g, 0) != GAD_OK) {
            fprintf(stderr, "%s: %s\n", c, gad_last_error() ? gad_last_error()->text : "?");
            return 1;
        }
        t[i < 3 ? 0 : i - 3] = now_ms() - t0;
        gad_scope_end();
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    printf("%s %.3f %.3f\n", c, t[reps / 2], t[0]);
    free(t);
    gad_rng_free(r);
    return 0;
}
