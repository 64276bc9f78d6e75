/* pool-bench: gad's side of bench/pool_compare.py, the pooling and image
 * shape ops of issue 28 timed against PyTorch in the same run. One case per
 * process, 2 threads: `pool-bench CASE REPS` prints one line,
 * "CASE median_ms min_ms". The cases (f32, NCHW):
 *   maxpool   max_pool2d 3x3 s2 p1 forward + backward, [32, 64, 112, 112]
 *   avgpool   avg_pool2d 2x2 forward + backward, [32, 64, 112, 112]
 *   gap       adaptive_avg_pool2d to 1x1 forward + backward, [32, 512, 7, 7]
 *   padrefl   pad reflect (1, 1, 1, 1) forward, [32, 64, 56, 56]
 *   unfold    unfold 3x3 p1 forward + backward (= fold), [8, 64, 56, 56]
 *   bilinear  interpolate bilinear to 112x112 forward + backward, [16, 64, 56, 56]
 * Forward + backward: the forward, then the VJP of a fixed w
 * (gad_grad_ex with w as the seed; torch's y.backward(w)). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gad.h"
#include "bench_util.h"



static gad_tensor *input(const int64_t *shape, gad_rng *r) {
    return gad_rng_normal_tensor(r, shape, 4, GAD_F32, 0, 1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: pool-bench maxpool|avgpool|gap|padrefl|unfold|bilinear [reps]\n");
        return 2;
    }
    const char *c = argv[1];
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    gad_set_num_threads(2);
    gad_rng *r = gad_rng_new(1);
    int64_t big[4] = {32, 64, 112, 112}, gap[4] = {32, 512, 7, 7}, pad[4] = {32, 64, 56, 56};
    int64_t unf[4] = {8, 64, 56, 56}, bil[4] = {16, 64, 56, 56};
    const int64_t *shape = !strcmp(c, "gap")        ? gap
                           : !strcmp(c, "padrefl")  ? pad
                           : !strcmp(c, "unfold")   ? unf
                           : !strcmp(c, "bilinear") ? bil
                                                    : big;
    gad_fold_opts fo = {.kernel = {3, 3}, .padding = {1, 1}};
    gad_tensor *x = gad_keep(gad_requires_grad(input(shape, r)));
    gad_pool_opts mp = {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
    gad_pool_opts ap = {.kernel = {2, 2}};
    gad_tensor *w = NULL;
    double *t = malloc((size_t)(reps + 3) * sizeof *t);
    for (int i = 0; i < reps + 3; i++) {
        gad_scope_begin();
        double t0 = now_ms();
        gad_tensor *y = NULL;
        if (!strcmp(c, "maxpool")) y = gad_max_pool2d(x, &mp, NULL);
        else if (!strcmp(c, "avgpool")) y = gad_avg_pool2d(x, &ap);
        else if (!strcmp(c, "gap")) y = gad_adaptive_avg_pool2d(x, 1, 1);
        else if (!strcmp(c, "padrefl"))
            y = gad_pad(gad_detach(x), (const int64_t[]){1, 1, 1, 1}, 4, GAD_PAD_REFLECT, 0);
        else if (!strcmp(c, "unfold")) y = gad_unfold(x, &fo);
        else if (!strcmp(c, "bilinear"))
            y = gad_interpolate(x, (const int64_t[]){112, 112}, NULL, 2, GAD_INTERP_BILINEAR, 0);
        if (!y) {
            fprintf(stderr, "%s: %s\n", c, gad_last_error() ? gad_last_error()->text : "?");
            return 1;
        }
        if (gad_is_tracked(y)) {
            if (!w) w = gad_keep(gad_detach(gad_rng_normal_tensor(r, gad_shape(y), gad_rank(y), GAD_F32, 0, 1)));
            gad_tensor *g = NULL;
            gad_grad_ex(y, w, &x, 1, &g, 0);
        }
        t[i < 3 ? 0 : i - 3] = now_ms() - t0;
        gad_scope_end();
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    printf("%s %.3f %.3f\n", c, t[reps / 2], t[0]);
    free(t);
    return 0;
}
