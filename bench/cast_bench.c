/* cast-bench: gad's side of bench/cast_compare.py, the half conversions
 * of issue 29 timed against PyTorch's .to() in the same run. One case per
 * process, 2 threads: `cast-bench CASE REPS [PATH]` prints one line,
 * "CASE median_ms min_ms path". Cases, 16M (2^24) contiguous elements, a
 * new output each call:
 *   f32-bf16  gad_cast f32 -> bf16     bf16-f32  gad_cast bf16 -> f32
 *   f32-f16   gad_cast f32 -> f16      f16-f32   gad_cast f16 -> f32
 * PATH "portable" forces the AVX-512F integer path (not public: the
 * benchmark links the static library and its test hook). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gad.h"
#include "bench_util.h"

int gad__half_vec_force(int level);
const char *gad__half_vec_path(int to_bf16);



int main(int argc, char **argv) {
    static const char *cases[] = {"f32-bf16", "bf16-f32", "f32-f16", "f16-f32"};
    int c = -1;
    for (int i = 0; argc > 1 && i < 4; i++)
        if (!strcmp(argv[1], cases[i])) c = i;
    if (c < 0) {
        fprintf(stderr, "usage: cast-bench f32-bf16|bf16-f32|f32-f16|f16-f32 [reps] [portable]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 10;
    if (reps < 1) reps = 1;
    if (argc > 3 && !strcmp(argv[3], "portable")) gad__half_vec_force(1);
    gad_set_num_threads(2);
    gad_rng *r = gad_rng_new(1);
    int64_t shape[1] = {(int64_t)1 << 24};
    gad_tensor *x = gad_keep(gad_rng_normal_tensor(r, shape, 1, GAD_F32, 0, 1));
    gad_dtype_t half = c < 2 ? GAD_BF16 : GAD_F16;
    if (c % 2) { /* from the half */
        gad_tensor *h = gad_keep(gad_cast(x, half));
        gad_release(x);
        x = h;
    }
    gad_dtype_t to = c % 2 ? GAD_F32 : half;
    double *t = malloc((size_t)(reps + 3) * sizeof *t);
    for (int i = 0; i < reps + 3; i++) {
        double t0 = now_ms();
        gad_tensor *y = gad_cast(x, to);
        if (!y) {
            fprintf(stderr, "cast-bench: %s\n", gad_last_error()->message);
            return 1;
        }
        gad_release(y);
        t[i < 3 ? 0 : i - 3] = now_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    printf("%s %.3f %.3f %s\n", cases[c], t[reps / 2], t[0], gad__half_vec_path(half == GAD_BF16));
    gad_release(x);
    gad_rng_free(r);
    free(t);
    return 0;
}
