/* half-bench: gad's side of bench/half_compare.py (issue 29): ops on bf16
 * (or f16) tensors against the same ops in f32, and PyTorch's bf16, timed
 * in the same run. One case per process, 2 threads: `half-bench OP DTYPE
 * REPS` prints one line, "OP DTYPE median_ms min_ms". OP is add (x + y),
 * gelu (tanh form), softmax (along rows of 1024) or sum (all elements), on
 * 16M (2^24) elements with a new output each call; DTYPE f32, bf16 or f16. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gad.h"
#include "bench_util.h"



int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: half-bench add|gelu|softmax|sum f32|bf16|f16 [reps]\n");
        return 2;
    }
    const char *op = argv[1], *dn = argv[2];
    gad_dtype_t dt = !strcmp(dn, "bf16") ? GAD_BF16 : !strcmp(dn, "f16") ? GAD_F16 : GAD_F32;
    int reps = argc > 3 ? atoi(argv[3]) : 10;
    if (reps < 1) reps = 1;
    gad_set_num_threads(2);
    gad_rng *r = gad_rng_new(1);
    int64_t shape[2] = {16384, 1024};
    gad_tensor *x = gad_keep(gad_cast(gad_rng_normal_tensor(r, shape, 2, GAD_F32, 0, 1), dt));
    gad_tensor *y = gad_keep(gad_cast(gad_rng_normal_tensor(r, shape, 2, GAD_F32, 0, 1), dt));
    double *t = malloc((size_t)(reps + 3) * sizeof *t);
    if (!t || !x || !y) return 1;
    for (int i = 0; i < reps + 3; i++) {
        gad_scope_begin();
        double t0 = now_ms();
        gad_tensor *z = !strcmp(op, "add")    ? gad_add(x, y)
                        : !strcmp(op, "gelu") ? gad_gelu(x)
                        : !strcmp(op, "softmax") ? gad_softmax(x, 1)
                                                 : gad_sum_all(x);
        if (!z) {
            fprintf(stderr, "%s: %s\n", op, gad_last_error() ? gad_last_error()->text : "?");
            return 1;
        }
        t[i < 3 ? 0 : i - 3] = now_ms() - t0;
        gad_scope_end();
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    printf("%s %s %.3f %.3f\n", op, dn, t[reps / 2], t[0]);
    free(t);
    gad_rng_free(r);
    return 0;
}
