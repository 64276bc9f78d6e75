/* dist.c: helix_lm on several processes (dist.h says how a run is split).
 *
 * What stays deterministic: every rank draws the same global batch of step
 * s from (seed, s) (data.c) and takes rows [r B/N, (r+1) B/N); the model
 * starts from rank 0's parameters; gradients are averaged by one MPI
 * all-reduce per 25 MiB bucket (gad_dist_average_grads), whose reduction
 * order is fixed for a given N. So two runs with the same N and --threads
 * give the same bits, and a run on N ranks gives the losses of one process
 * with the same global batch up to rounding (the order of the sums differs). */
#include "dist.h"

#include <stdio.h>
#include <stdlib.h>

#include "signals.h"
#include "util.h"

static char g_prog[48];
static int64_t g_steps;      /* dist_average calls: the steps of this session */
static double g_t0 = -1;     /* dist_setup's clock */

int dist_rank(void) { return gad_dist_rank(); }
int dist_size(void) { return gad_dist_size(); }

int dist_start(config *c) {
    if (gad_dist_init(NULL, NULL) != GAD_OK) return fail_gad("cannot join the MPI world");
    if (gad_dist_rank() != 0) {
        snprintf(g_prog, sizeof g_prog, "%s[rank %d]", lm_name, gad_dist_rank());
        prog = g_prog;
        c->bytes = 0; /* rank 0 samples the text */
        if (!freopen("/dev/null", "w", stdout)) return fail("cannot silence stdout");
    }
    /* mpirun hands the ranks a pseudo-terminal that it copies line by line
     * into its own output: progress lines, not a bar redrawn in place */
    if (gad_dist_size() > 1) c->plain = 1;
    return 0;
}

int dist_end(int rc) {
    if (rc != 0 && rc != 130) return rc; /* do not wait for the others */
    if (gad_dist_size() > 1 && gad_dist_rank() == 0 && g_t0 >= 0) {
        gad_dist_stats st;
        gad_dist_stats_get(&st);
        double el = now_seconds() - g_t0;
        printf("distributed: %d ranks; %.2f s in collectives (%.2f ms a step over %lld steps, "
               "%.1f%% of %.1f s), %.0f bytes reduced a step\n",
               gad_dist_size(), st.seconds,
               g_steps > 0 ? 1e3 * st.seconds / (double)g_steps : 0.0, (long long)g_steps,
               el > 0 ? 100 * st.seconds / el : 0.0, el,
               g_steps > 0 ? (double)st.bytes / (double)g_steps : 0.0);
        fflush(stdout);
    }
    if (gad_dist_finalize() != GAD_OK) {
        fail_gad("leaving the MPI world");
        return 1;
    }
    return rc;
}

int dist_setup(int rc, const config *c, model *m, int64_t resumed_world) {
    int P = gad_dist_size();
    if (P == 1) {
        if (rc == 0 && resumed_world > 1)
            return fail("the checkpoint was trained on %lld ranks, this run has 1: resume it "
                        "with mpirun -np %lld (the global batch and the sums stay the same)",
                        (long long)resumed_world, (long long)resumed_world);
        g_t0 = now_seconds();
        return rc;
    }
    /* every rank learns which ranks failed (their own messages say why) */
    double failed = rc != 0 ? 1 : 0;
    if (gad_dist_allreduce_f64(&failed, 1, GAD_DIST_SUM) != GAD_OK)
        return fail_gad("the ranks cannot agree");
    if (failed > 0) {
        if (rc == 0) fail("%.0f other rank(s) failed to set up: stopping", failed);
        return -1;
    }
    /* the same checks on every rank (same options, same checkpoint) */
    if (resumed_world > 0 && resumed_world != P)
        return fail("the checkpoint was trained on %lld rank%s, this run has %d: resume it with "
                    "mpirun -np %lld",
                    (long long)resumed_world, resumed_world == 1 ? "" : "s", P,
                    (long long)resumed_world);
    if (c->batch % P != 0)
        return fail("--batch %lld cannot be split over %d ranks: the global batch must be a "
                    "multiple of the rank count",
                    (long long)c->batch, P);
    if (gad_dist_broadcast(m->params, m->np, 0) != GAD_OK)
        return fail_gad("cannot broadcast the parameters");
    printf("distributed: %d ranks (%s), global batch %lld = %d x %lld rows, %d thread%s each\n",
           P, gad_dist_backend(), (long long)c->batch, P, (long long)(c->batch / P),
           gad_num_threads(), gad_num_threads() == 1 ? "" : "s");
    fflush(stdout);
    gad_dist_stats_reset();
    g_t0 = now_seconds();
    return 0;
}

void dist_shard(int64_t B, int64_t *first, int64_t *count) {
    int64_t per = B / gad_dist_size();
    *first = per * gad_dist_rank();
    *count = per;
}

int dist_sync(double *seconds) {
    if (gad_dist_size() == 1) return 0;
    double v[2] = {gad_dist_rank() == 0 ? *seconds : 0, g_interrupted ? 1 : 0};
    if (gad_dist_allreduce_f64(v, 2, GAD_DIST_SUM) != GAD_OK)
        return fail_gad("the ranks lost each other");
    *seconds = v[0];
    if (v[1] > 0) g_interrupted = 1;
    return 0;
}

int dist_average(int ok, gad_tensor *const *params, gad_tensor **grads, int n, double *loss) {
    if (gad_dist_size() == 1) return 0;
    if (!ok) { /* NULL gradients: the other ranks learn that this one failed */
        for (int i = 0; i < n; i++) grads[i] = NULL;
        gad_dist_average_grads(params, grads, n);
        return -1;
    }
    g_steps++;
    if (gad_dist_average_grads(params, grads, n) != GAD_OK ||
        gad_dist_allreduce_f64(loss, 1, GAD_DIST_MEAN) != GAD_OK)
        return fail_gad("averaging the gradients over the ranks failed");
    return 0;
}
