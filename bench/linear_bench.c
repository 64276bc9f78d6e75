/* linear-bench: gad's side of bench/linear_compare.py, a linear layer with
 * its bias and activation (issue 31), timed against PyTorch in the same
 * run. One case per process: `linear-bench CASE FORM THREADS REPS` prints
 * one line, "CASE FORM median_ms min_ms". Forward + backward of f32
 * y = act(x @ w + b): the VJP of a fixed seed g with respect to x, w and b
 * (torch's autograd.grad(y, (x, w, b), g)). The cases, rows x in -> out:
 *   mlp    128 x 784 -> 512, relu (W4's first layer)
 *   gpt    4096 x 256 -> 1024, gelu (tanh): a small GPT's feed-forward
 *   wide   2048 x 1024 -> 4096, gelu (tanh)
 * FORM: fused (gad_linear_act) or composed (gad_relu / gad_gelu of
 * gad_add(gad_matmul(x, w), b): the ops a user had before). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gad.h"
#include "bench_util.h"



static const struct {
    const char *name;
    int64_t rows, in, out;
    gad_act act;
} cases[] = {{"mlp", 128, 784, 512, GAD_ACT_RELU},
             {"gpt", 4096, 256, 1024, GAD_ACT_GELU},
             {"wide", 2048, 1024, 4096, GAD_ACT_GELU}};

/* One forward and backward of case k. */
static int step(int k, int fused, gad_tensor *const *in, gad_tensor *g) {
    gad_scope_begin();
    gad_tensor *y;
    if (fused) {
        y = gad_linear_act(in[0], in[1], in[2], cases[k].act);
    } else {
        y = gad_add(gad_matmul(in[0], in[1]), in[2]);
        y = cases[k].act == GAD_ACT_RELU ? gad_relu(y) : gad_gelu(y);
    }
    gad_tensor *gr[3];
    gad_status st = gad_grad_ex(y, g, in, 3, gr, 0);
    if (st != GAD_OK) fprintf(stderr, "linear-bench: %s\n", gad_last_error()->message);
    gad_scope_end();
    return st != GAD_OK;
}

int main(int argc, char **argv) {
    int k = -1;
    for (int i = 0; argc > 2 && i < 3; i++)
        if (!strcmp(argv[1], cases[i].name)) k = i;
    if (k < 0 || (strcmp(argv[2], "fused") && strcmp(argv[2], "composed"))) {
        fprintf(stderr, "usage: linear-bench mlp|gpt|wide fused|composed [threads] [reps]\n");
        return 2;
    }
    int fused = !strcmp(argv[2], "fused");
    int threads = argc > 3 ? atoi(argv[3]) : 1, reps = argc > 4 ? atoi(argv[4]) : 20;
    if (reps < 1) reps = 1;
    if (reps > 1000) reps = 1000;
    gad_set_num_threads(threads);
    gad_rng *r = gad_rng_new(1);
    int64_t R = cases[k].rows, I = cases[k].in, O = cases[k].out;
    gad_tensor *x = gad_keep(gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){R, I}, 2, GAD_F32, 0, 1)));
    gad_tensor *w = gad_keep(gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){I, O}, 2, GAD_F32, 0, 0.05)));
    gad_tensor *b = gad_keep(gad_requires_grad(gad_rng_normal_tensor(r, &O, 1, GAD_F32, 0, 1)));
    gad_tensor *g = gad_keep(gad_rng_normal_tensor(r, (int64_t[]){R, O}, 2, GAD_F32, 0, 1));
    gad_rng_free(r);
    gad_tensor *in[3] = {x, w, b};
    /* warm-up: at least 3 calls and 300 ms, so that a short case is not
     * timed on a core still waking up (the first process after torch's
     * timings ran 2x slower at 2 threads without it) */
    double w0 = now_ms();
    for (int i = 0; i < 3 || now_ms() - w0 < 300; i++)
        if (step(k, fused, in, g)) return 1;
    static double t[1000];
    for (int i = 0; i < reps; i++) {
        double t0 = now_ms();
        if (step(k, fused, in, g)) return 1;
        t[i] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    printf("%s %s %.4f %.4f\n", cases[k].name, argv[2], t[reps / 2], t[0]);
    return 0;
}
