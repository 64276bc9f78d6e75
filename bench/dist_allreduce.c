/* dist-allreduce: the cost of gad_dist_average_grads alone, with every rank
 * arriving together (a barrier first), for the model sizes of
 * bench/dist_step.sh. Run it under mpirun; one process is a world of one.
 *
 *   dist-allreduce [FLOATS [REPS]]   default: 1971456 (helix_lm's D=256, L=4), 20
 *
 * Prints one line: ranks, bytes, the mean and the best seconds per call. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gad.h"
#include "bench_util.h"


int main(int argc, char **argv) {
    if (gad_dist_init(&argc, &argv) != GAD_OK) {
        fprintf(stderr, "%s\n", gad_last_error()->text);
        return 1;
    }
    int64_t n = argc > 1 ? atoll(argv[1]) : 1971456;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    if (n < 1 || reps < 1) {
        fprintf(stderr, "usage: dist-allreduce [FLOATS [REPS]]\n");
        return 2;
    }
    gad_tensor *p = gad_requires_grad(gad_zeros((int64_t[]){n}, 1, GAD_F32));
    gad_tensor *g = gad_ones((int64_t[]){n}, 1, GAD_F32);
    double sum = 0, best = 1e30;
    for (int r = -2; r < reps; r++) { /* two calls to warm up */
        if (gad_dist_barrier() != GAD_OK) goto fail;
        double t0 = now_s();
        if (gad_dist_average_grads(&p, &g, 1) != GAD_OK) goto fail;
        double t = now_s() - t0;
        if (r >= 0) {
            sum += t;
            if (t < best) best = t;
        }
    }
    if (gad_dist_rank() == 0)
        printf("dist-allreduce: %d ranks, %lld bytes: mean %.3f ms, best %.3f ms a call\n",
               gad_dist_size(), (long long)(n * 4), 1e3 * sum / reps, 1e3 * best);
    gad_release(p), gad_release(g);
    return gad_dist_finalize() == GAD_OK ? 0 : 1;
fail:
    fprintf(stderr, "%s\n", gad_last_error()->text);
    return 1;
}
