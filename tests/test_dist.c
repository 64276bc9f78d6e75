/* test_dist.c: the distributed API (gad.h, src/dist). ctest runs it as one
 * process (a world of one) and, when gad is built with MPI, under mpirun
 * with 2 and 3 ranks (the 3-rank run with 4 KiB buckets, so that tensors
 * span several buckets and some are larger than one). Every rank computes
 * the single-process reference itself (it can make every rank's inputs)
 * and checks the collective's result against it: exactly for sums of
 * integer-valued floats, within rounding otherwise. The same collectives
 * on tensors of the test device (test_device.h) and, where there is a GPU,
 * of a CUDA device (tests/cuda/check.sh) must give the CPU's results
 * exactly, in place and on their device.
 *
 *   test_dist            the checks below
 *   test_dist --hang S   the last rank sleeps S seconds instead of joining
 *                        an all-reduce; the others must fail with a comm
 *                        error naming it, within the deadline (GAD_DIST_TIMEOUT)
 *   test_dist --kill     the last rank kills itself (SIGKILL) before an
 *                        all-reduce; the same (tests/test_dist_faults.sh)
 *   test_dist --reinit   gad_dist_finalize, then gad_dist_init again: an
 *                        unsupported error under MPI, no abort
 *   test_dist --broken local|midway    a rank fails alone before a
 *                        collective, or every rank's transport fails
 *                        half-way through one: tensors keep their values,
 *                        and every later collective fails on every rank
 *   test_dist --bucket-mismatch        the ranks' bucket sizes differ
 *   test_dist --env      numbers from the environment must be decimal */
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dist/dist_int.h" /* gad__dist_fail_move */
#include "test.h"
#include "test_device.h"

static int R, P; /* this rank, the world's size */

/* Rank r's value i of a test tensor: integers, distinct per rank. */
static double int_value(int r, int64_t i) { return (double)((r + 1) * 1000 + (i % 97) - 40); }
/* Not integers: every sum rounds. */
static double real_value(int r, int64_t i) { return sin(0.37 * (double)i + 1.3 * r) / 3.0; }

static gad_tensor *filled(gad_dtype_t dt, int64_t n, int r, double (*f)(int, int64_t)) {
    gad_tensor *t = gad_zeros((int64_t[]){n}, 1, dt);
    if (!t) return NULL;
    if (n == 0) return t;
    void *p = gad_data_mut(t);
    for (int64_t i = 0; i < n; i++) {
        if (dt == GAD_F32) ((float *)p)[i] = (float)f(r, i);
        else ((double *)p)[i] = f(r, i);
    }
    return t;
}

TEST(world) {
    CHECK(R >= 0 && R < P);
    CHECK(P == 1 || !strcmp(gad_dist_backend(), "mpi") || !strcmp(gad_dist_backend(), "mpi+nccl"));
    CHECK(gad_dist_timeout() > 0);
    CHECK(gad_dist_bucket_bytes() >= 4096);
    CHECK(gad_dist_barrier() == GAD_OK);
    double old = gad_dist_set_timeout(-1); /* ignored */
    CHECK(gad_dist_timeout() == old);
    CHECK(gad_dist_set_timeout(old) == old);
}

/* Sizes around the bucket: empty, small, one bucket (4096 bytes) and more. */
static const int64_t sizes[] = {0, 1, 7, 1024, 1025, 3000, 100};
#define NS ((int)(sizeof sizes / sizeof sizes[0]))

TEST(allreduce_integers_exact) {
    gad_scope_begin();
    gad_tensor *ts[2 * NS];
    for (int k = 0; k < NS; k++) {
        ts[k] = filled(GAD_F32, sizes[k], R, int_value);
        ts[NS + k] = filled(GAD_F64, sizes[k], R, int_value);
    }
    /* a view that shares the first big tensor's storage keeps its values */
    gad_tensor *view = gad_reshape(ts[3], (int64_t[]){32, 32}, 2);
    CHECK(gad_dist_allreduce(ts, 2 * NS, GAD_DIST_SUM) == GAD_OK);
    int bad = 0;
    for (int k = 0; k < 2 * NS; k++) {
        int64_t n = sizes[k % NS];
        for (int64_t i = 0; i < n; i++) {
            double want = 0;
            for (int r = 0; r < P; r++) want += int_value(r, i);
            double got = k < NS ? ((const float *)gad_data(ts[k]))[i] : ((const double *)gad_data(ts[k]))[i];
            if (got != want) bad++;
        }
    }
    CHECK_MSG(bad == 0, "%d elements differ from the exact sum", bad);
    CHECK(((const float *)gad_data(gad_contiguous(view)))[5] == (float)int_value(R, 5));
    /* min and max */
    gad_tensor *a = filled(GAD_F64, 50, R, int_value), *b = filled(GAD_F32, 50, R, int_value);
    CHECK(gad_dist_allreduce(&a, 1, GAD_DIST_MIN) == GAD_OK);
    CHECK(gad_dist_allreduce(&b, 1, GAD_DIST_MAX) == GAD_OK);
    CHECK(((const double *)gad_data(a))[3] == int_value(0, 3));
    CHECK(((const float *)gad_data(b))[3] == (float)int_value(P - 1, 3));
    /* mean: the sum divided by the size, in the dtype */
    gad_tensor *m = filled(GAD_F32, 40, R, int_value);
    CHECK(gad_dist_allreduce(&m, 1, GAD_DIST_MEAN) == GAD_OK);
    float s = 0;
    for (int r = 0; r < P; r++) s += (float)int_value(r, 9);
    CHECK(((const float *)gad_data(m))[9] == s / (float)P);
    gad_scope_end();
}

TEST(allreduce_reals_within_rounding) {
    gad_scope_begin();
    gad_tensor *ts[2] = {filled(GAD_F32, 5000, R, real_value), filled(GAD_F64, 333, R, real_value)};
    CHECK(gad_dist_allreduce(ts, 2, GAD_DIST_MEAN) == GAD_OK);
    double worst32 = 0, worst64 = 0;
    for (int64_t i = 0; i < 5000; i++) {
        double want = 0;
        for (int r = 0; r < P; r++) want += (double)(float)real_value(r, i);
        want /= P;
        double e = fabs(((const float *)gad_data(ts[0]))[i] - want);
        if (e > worst32) worst32 = e;
    }
    for (int64_t i = 0; i < 333; i++) {
        double want = 0;
        for (int r = 0; r < P; r++) want += real_value(r, i);
        want /= P;
        double e = fabs(((const double *)gad_data(ts[1]))[i] - want);
        if (e > worst64) worst64 = e;
    }
    CHECK_MSG(worst32 <= 4e-7, "f32 mean off by %g", worst32);
    CHECK_MSG(worst64 <= 1e-15, "f64 mean off by %g", worst64);
    /* scalars */
    double v[3] = {R + 0.5, -R, 1.0 / 3.0};
    CHECK(gad_dist_allreduce_f64(v, 3, GAD_DIST_SUM) == GAD_OK);
    CHECK(v[0] == P * (P - 1) / 2.0 + 0.5 * P);
    CHECK(v[1] == -P * (P - 1) / 2.0);
    CHECK(fabs(v[2] - P / 3.0) < 1e-15);
    double w[2] = {R, R};
    CHECK(gad_dist_allreduce_f64(w, 1, GAD_DIST_MAX) == GAD_OK && w[0] == P - 1);
    CHECK(gad_dist_allreduce_f64(w + 1, 1, GAD_DIST_MEAN) == GAD_OK && w[1] == (P - 1) / 2.0);
    gad_scope_end();
}

TEST(broadcast_from_a_root) {
    gad_scope_begin();
    int root = P - 1;
    gad_tensor *ts[NS + 1];
    for (int k = 0; k < NS; k++) ts[k] = filled(k % 2 ? GAD_F64 : GAD_F32, sizes[k], R, real_value);
    int64_t iv[3] = {R, -7, INT64_MAX - R};
    ts[NS] = gad_from_i64(iv, (int64_t[]){3}, 1);
    gad_tensor *snap = gad_detach(ts[5]); /* shares the storage: keeps this rank's values */
    CHECK(gad_dist_broadcast(ts, NS + 1, root) == GAD_OK);
    int bad = 0;
    for (int k = 0; k < NS; k++)
        for (int64_t i = 0; i < sizes[k]; i++) {
            double got = k % 2 ? ((const double *)gad_data(ts[k]))[i] : ((const float *)gad_data(ts[k]))[i];
            double want = k % 2 ? real_value(root, i) : (double)(float)real_value(root, i);
            if (got != want) bad++;
        }
    CHECK_MSG(bad == 0, "%d elements are not the root's", bad);
    const int64_t *g = gad_data(ts[NS]);
    CHECK(g[0] == root && g[1] == -7 && g[2] == INT64_MAX - root);
    CHECK(((const double *)gad_data(snap))[11] == real_value(R, 11));
    /* a root that is not a rank: every rank says so (the signature carries it) */
    CHECK(gad_dist_broadcast(ts, 1, P) == GAD_ERR_DOMAIN);
    CHECK(gad_last_error() && strstr(gad_last_error()->message, "root"));
    gad_clear_error();
    gad_scope_end();
}

/* A linear model y = x w + b, w [3,2], b [2], on 12 rows: the loss is the
 * mean over rows of a per-row loss, so the average over ranks of the
 * gradients on equal shards is the gradient on all rows. */
#define ROWS 12
static void data_rows(int64_t lo, int64_t hi, float *x, float *y) {
    for (int64_t i = lo; i < hi; i++) {
        for (int j = 0; j < 3; j++) x[(i - lo) * 3 + j] = (float)sin(0.7 * (double)(i * 3 + j));
        for (int j = 0; j < 2; j++) y[(i - lo) * 2 + j] = (float)cos(0.3 * (double)(i * 2 + j));
    }
}
static gad_tensor *lin_loss(gad_tensor *w, gad_tensor *b, int64_t lo, int64_t hi) {
    float x[ROWS * 3], y[ROWS * 2];
    data_rows(lo, hi, x, y);
    gad_tensor *xt = gad_from_f32(x, (int64_t[]){hi - lo, 3}, 2);
    gad_tensor *yt = gad_from_f32(y, (int64_t[]){hi - lo, 2}, 2);
    gad_tensor *d = gad_sub(gad_tanh(gad_add(gad_matmul(xt, w), b)), yt);
    return gad_mean_all(gad_square(d));
}

TEST(average_grads_equal_the_full_batch) {
    if (ROWS % P != 0) { /* 12 rows split over 1, 2, 3, 4 or 6 ranks */
        printf("(skipped: %d ranks do not divide %d rows)\n", P, ROWS);
        return;
    }
    float w0[6] = {0.1f, -0.2f, 0.3f, 0.05f, -0.4f, 0.25f}, b0[2] = {0.01f, -0.03f};
    gad_tensor *w = gad_requires_grad(gad_from_f32(w0, (int64_t[]){3, 2}, 2));
    gad_tensor *b = gad_requires_grad(gad_from_f32(b0, (int64_t[]){2}, 1));
    gad_tensor *params[2] = {w, b};
    gad_scope_begin();
    gad_tensor *full[2], *mine[2];
    CHECK(gad_grad(lin_loss(w, b, 0, ROWS), params, 2, full) == GAD_OK);
    int64_t per = ROWS / P;
    CHECK(gad_grad(lin_loss(w, b, R * per, (R + 1) * per), params, 2, mine) == GAD_OK);
    CHECK(gad_dist_average_grads(params, mine, 2) == GAD_OK);
    for (int k = 0; k < 2; k++) {
        float a[6], c[6];
        int64_t n = gad_numel(full[k]);
        gad_read_f32(full[k], a, 6);
        gad_read_f32(mine[k], c, 6);
        for (int64_t i = 0; i < n; i++)
            CHECK_MSG(fabs(a[i] - c[i]) <= 1e-6 * (fabs(a[i]) + 1e-3), "grad %d[%lld]: %g vs %g",
                      k, (long long)i, c[i], a[i]);
    }
    /* the same through the leaves' slots (gad_backward), f64 parameters */
    gad_tensor *w64 = gad_requires_grad(gad_cast(gad_detach(w), GAD_F64));
    gad_tensor *z = gad_requires_grad(gad_zeros((int64_t[]){4}, 1, GAD_F32)); /* no slot */
    gad_tensor *ps[3] = {w64, z, b};
    gad_zero_grad(ps, 3);
    float xr[3];
    for (int j = 0; j < 3; j++) xr[j] = (float)(R + 1) * (float)(j + 1); /* integers */
    gad_tensor *xt = gad_cast(gad_from_f32(xr, (int64_t[]){1, 3}, 2), GAD_F64);
    CHECK(gad_backward(gad_sum_all(gad_matmul(xt, w64))) == GAD_OK);
    CHECK(gad_backward(gad_sum_all(gad_mul(b, gad_scalar_f32((float)R)))) == GAD_OK);
    CHECK(gad_dist_average_grads(ps, NULL, 3) == GAD_OK);
    CHECK(!gad_leaf_has_grad(z));
    double gw[6];
    gad_read_f64(gad_leaf_grad(w64), gw, 6);
    double sx = 0; /* d/dw sum(x w) = x^T 1: row j is x_j, averaged over ranks */
    for (int r = 0; r < P; r++) sx += (double)(r + 1);
    CHECK(gw[0] == sx / P && gw[1] == sx / P && gw[4] == 3 * sx / P);
    float gb[2];
    gad_read_f32(gad_leaf_grad(b), gb, 2);
    CHECK(gb[0] == (float)(P - 1) / 2.0f && gb[1] == gb[0]);
    gad_scope_end();
    gad_release(w), gad_release(b), gad_release(w64), gad_release(z);
}

TEST(mismatch_is_an_error_on_every_rank) {
    if (P == 1) return; /* one rank always agrees with itself */
    gad_scope_begin();
    /* the last rank has a different shape */
    gad_tensor *t = gad_zeros((int64_t[]){R == P - 1 ? 5 : 4}, 1, GAD_F32);
    gad_status s = gad_dist_allreduce(&t, 1, GAD_DIST_SUM);
    CHECK(s == GAD_ERR_SHAPE);
    CHECK_MSG(gad_last_error() && strstr(gad_last_error()->message, "disagree"), "%s",
              gad_last_error() ? gad_last_error()->text : "no error");
    if (gad_last_error()) printf("  (rank %d: %s)\n", R, gad_last_error()->text);
    gad_clear_error();
    /* one rank passes fewer gradients: caught at the first reduction */
    gad_tensor *p1 = gad_requires_grad(gad_zeros((int64_t[]){3}, 1, GAD_F32));
    gad_tensor *p2 = gad_requires_grad(gad_zeros((int64_t[]){2, 2}, 1 + 1, GAD_F32));
    gad_tensor *ps[2] = {p1, p2};
    gad_tensor *gs[2] = {gad_ones((int64_t[]){3}, 1, GAD_F32), gad_ones((int64_t[]){2, 2}, 2, GAD_F32)};
    s = gad_dist_average_grads(ps, gs, R == 0 ? 1 : 2);
    CHECK(s == GAD_ERR_SHAPE);
    CHECK(gad_last_error() && strstr(gad_last_error()->message, "rank 0: dist_average_grads"));
    gad_clear_error();
    /* the same count and sizes, other shapes: [4] vs [2,2] */
    gad_tensor *q = R == 0 ? gad_zeros((int64_t[]){4}, 1, GAD_F32) : gad_zeros((int64_t[]){2, 2}, 2, GAD_F32);
    s = gad_dist_allreduce(&q, 1, GAD_DIST_SUM);
    CHECK(s == GAD_ERR_SHAPE && strstr(gad_last_error()->message, "different dtypes or shapes"));
    gad_clear_error();
    /* different collectives: a broadcast against an all-reduce */
    s = R == 0 ? gad_dist_broadcast(&t, 1, 0) : gad_dist_allreduce(&t, 1, GAD_DIST_SUM);
    CHECK(s == GAD_ERR_SHAPE && strstr(gad_last_error()->message, "dist_broadcast"));
    gad_clear_error();
    /* (a rank that fails alone before the collective breaks the world:
     * test_dist --broken, run by test_dist_faults.sh) */
    /* the world still works after all that: the checks ran before any data moved */
    double one = 1;
    CHECK(gad_dist_allreduce_f64(&one, 1, GAD_DIST_SUM) == GAD_OK && one == P);
    gad_scope_end();
    gad_release(p1), gad_release(p2);
}

TEST(bad_arguments) {
    /* the same on every rank, so that every rank joins (and all fail) */
    CHECK(gad_dist_allreduce(NULL, 1, GAD_DIST_SUM) == GAD_ERR_DOMAIN);
    gad_clear_error();
    CHECK(gad_dist_allreduce_f64(NULL, 2, GAD_DIST_SUM) == GAD_ERR_DOMAIN);
    gad_clear_error();
    gad_scope_begin();
    gad_tensor *t = gad_zeros((int64_t[]){2}, 1, GAD_F32);
    CHECK(gad_dist_allreduce(&t, 1, (gad_dist_op)9) == GAD_ERR_DOMAIN);
    gad_clear_error();
    gad_tensor *tracked = gad_mul(gad_requires_grad(gad_zeros((int64_t[]){2}, 1, GAD_F32)), t);
    CHECK(gad_dist_allreduce(&tracked, 1, GAD_DIST_SUM) == GAD_ERR_NOT_UNIQUE);
    gad_clear_error();
    gad_tensor *p = gad_requires_grad(gad_zeros((int64_t[]){2}, 1, GAD_F32));
    gad_tensor *g = gad_zeros((int64_t[]){3}, 1, GAD_F32);
    CHECK(gad_dist_average_grads(&p, &g, 1) == GAD_ERR_SHAPE);
    gad_clear_error();
    gad_scope_end();
    gad_release(p);
}

TEST(stats_count_the_collectives) {
    gad_dist_stats a, b;
    gad_dist_stats_reset();
    gad_dist_stats_get(&a);
    CHECK(a.calls == 0 && a.bytes == 0 && a.seconds == 0);
    gad_scope_begin();
    gad_tensor *t = gad_zeros((int64_t[]){1000}, 1, GAD_F32);
    CHECK(gad_dist_allreduce(&t, 1, GAD_DIST_SUM) == GAD_OK);
    gad_scope_end();
    gad_dist_stats_get(&b);
    CHECK(b.calls == 1);
    CHECK(b.bytes == (P > 1 ? 4000 : 0));
    CHECK(b.seconds >= 0);
}

/* MIN and MAX keep a NaN of any rank (MPI's own would drop it on some
 * orders): rank 0 has NaN at element 1, the last rank at element 2. */
TEST(min_max_propagate_nan) {
    gad_scope_begin();
    const gad_dist_op ops[2] = {GAD_DIST_MIN, GAD_DIST_MAX};
    const gad_dtype_t dts[2] = {GAD_F32, GAD_F64};
    for (int o = 0; o < 2; o++)
        for (int d = 0; d < 2; d++) {
            gad_tensor *t = filled(dts[d], 5, R, int_value);
            void *q = gad_data_mut(t);
            for (int i = 1; i < 3; i++) {
                if (!((i == 1 && R == 0) || (i == 2 && R == P - 1))) continue;
                if (dts[d] == GAD_F32) ((float *)q)[i] = NAN;
                else ((double *)q)[i] = NAN;
            }
            CHECK(gad_dist_allreduce(&t, 1, ops[o]) == GAD_OK);
            double got[5];
            CHECK(gad_read_f64(t, got, 5) == GAD_OK);
            CHECK_MSG(isnan(got[1]) && isnan(got[2]), "%s %s: [%g %g %g]",
                      o ? "max" : "min", gad_dtype_name(dts[d]), got[0], got[1], got[2]);
            /* the others: the min or max over the ranks */
            double want = int_value(o ? P - 1 : 0, 0);
            CHECK(got[0] == want);
        }
    gad_scope_end();
}

/* ------------------------------------------------------ device tensors */

/* The devices whose tensors the collectives must take: the test device
 * (test_device.h: separate memory reached through its back end's copies)
 * and, where there is one, a CUDA GPU (rank r on GPU r mod count; with
 * gad's NCCL transport there when it is built with it, else through host
 * copies). */
static gad_device devs[2];
static int ndevs;

/* t's n elements as doubles, through gad_read_f64 (which copies to the host). */
static void read_back(gad_tensor *t, double *out, int64_t n) {
    if (n > 0 && gad_read_f64(t, out, (size_t)n) != GAD_OK) memset(out, 0, sizeof *out * (size_t)n);
}

/* t's element i (NaN when t cannot be read). */
static double elem(gad_tensor *t, int64_t i) {
    int64_t n = gad_numel(t);
    double *x = malloc(sizeof *x * (size_t)(n + 1)), v = NAN;
    if (x && i < n && gad_read_f64(t, x, (size_t)n) == GAD_OK) v = x[i];
    free(x);
    return v;
}

/* a and b (a on the CPU, b on dev): the same dtype, shape and values, b
 * still on dev. The number of elements that differ (-1: not comparable). */
static int64_t differ(gad_tensor *a, gad_tensor *b, gad_device dev) {
    if (gad_device_of(b) != dev || gad_dtype(a) != gad_dtype(b) || gad_numel(a) != gad_numel(b))
        return -1;
    int64_t n = gad_numel(a), bad = 0;
    double *x = malloc(sizeof *x * (size_t)(n + 1)), *y = malloc(sizeof *y * (size_t)(n + 1));
    if (!x || !y) {
        free(x), free(y);
        return -1;
    }
    read_back(a, x, n);
    read_back(b, y, n);
    for (int64_t i = 0; i < n; i++) bad += x[i] != y[i];
    free(x), free(y);
    return bad;
}

/* The tensors of allreduce_integers_exact on dev: each reduction must give
 * the CPU's collective's values exactly (and so the exact single-process
 * sums), in place: the same tensor, on dev, of its dtype. */
static void device_allreduce(gad_device dev) {
    static const gad_dist_op ops[] = {GAD_DIST_SUM, GAD_DIST_MEAN, GAD_DIST_MIN, GAD_DIST_MAX};
    for (int o = 0; o < 4; o++) {
        gad_scope_begin();
        gad_tensor *c[2 * NS], *d[2 * NS], *same[2 * NS];
        for (int k = 0; k < 2 * NS; k++) {
            c[k] = filled(k < NS ? GAD_F32 : GAD_F64, sizes[k % NS], R, int_value);
            same[k] = d[k] = gad_to_device(c[k], dev);
        }
        /* a view that shares a device tensor's storage keeps its values */
        gad_tensor *view = gad_reshape(d[3], (int64_t[]){32, 32}, 2);
        CHECK(gad_dist_allreduce(c, 2 * NS, ops[o]) == GAD_OK);
        gad_status st = gad_dist_allreduce(d, 2 * NS, ops[o]);
        CHECK_MSG(st == GAD_OK, "%s: %s", gad_device_name(dev),
                  gad_last_error() ? gad_last_error()->text : gad_status_str(st));
        for (int k = 0; k < 2 * NS; k++) {
            int64_t bad = differ(c[k], d[k], dev);
            CHECK_MSG(bad == 0 && d[k] == same[k], "%s, op %d, tensor %d: %lld elements differ",
                      gad_device_name(dev), (int)ops[o], k, (long long)bad);
        }
        CHECK(elem(view, 5) == (float)int_value(R, 5) && gad_device_of(view) == dev);
        if (ops[o] == GAD_DIST_SUM) { /* the exact sum, as on the CPU */
            double want = 0;
            for (int r = 0; r < P; r++) want += int_value(r, 7);
            CHECK(elem(d[NS + 5], 7) == want);
        }
        gad_scope_end();
    }
}

TEST(device_tensors_allreduce) {
    for (int i = 0; i < ndevs; i++) device_allreduce(devs[i]);
}

TEST(device_tensors_mixed_with_host_tensors) {
    /* host and device tensors in one call, f32 and f64: each gets the CPU's */
    for (int i = 0; i < ndevs; i++) {
        gad_scope_begin();
        gad_tensor *c[4], *m[4];
        for (int k = 0; k < 4; k++) {
            c[k] = filled(k % 2 ? GAD_F64 : GAD_F32, 300 + 700 * k, R, int_value);
            m[k] = k < 2 ? gad_to_device(c[k], devs[i]) : gad_clone(c[k]);
        }
        CHECK(gad_dist_allreduce(c, 4, GAD_DIST_SUM) == GAD_OK);
        CHECK(gad_dist_allreduce(m, 4, GAD_DIST_SUM) == GAD_OK);
        for (int k = 0; k < 4; k++)
            CHECK(differ(c[k], m[k], k < 2 ? devs[i] : GAD_CPU) == 0);
        gad_scope_end();
    }
    /* the ranks' tensors on different devices (odd ranks' on the test
     * device, large enough for several buckets at np 3): the host path
     * makes the same transport calls on every rank */
    gad_scope_begin();
    gad_tensor *c = filled(GAD_F32, 5000, R, int_value), *m = gad_clone(c);
    if (R % 2) m = gad_to_device(m, TD);
    CHECK(gad_dist_allreduce(&c, 1, GAD_DIST_SUM) == GAD_OK);
    CHECK(gad_dist_allreduce(&m, 1, GAD_DIST_SUM) == GAD_OK);
    CHECK(differ(c, m, R % 2 ? TD : GAD_CPU) == 0);
    gad_scope_end();
}

TEST(device_tensors_are_copied_once_per_tensor) {
    /* the test device counts its copies: three small tensors are packed
     * into one bucket, one copy each way per tensor (not per element); a
     * world of one moves nothing */
    gad_scope_begin();
    gad_tensor *t[3];
    for (int k = 0; k < 3; k++) t[k] = gad_to_device(filled(GAD_F32, 10, R, int_value), TD);
    long long th = atomic_load(&td_to_host), fh = atomic_load(&td_from_host);
    CHECK(gad_dist_allreduce(t, 3, GAD_DIST_SUM) == GAD_OK);
    CHECK(atomic_load(&td_to_host) - th == (P > 1 ? 3 : 0));
    CHECK(atomic_load(&td_from_host) - fh == (P > 1 ? 3 : 0));
    gad_scope_end();
}

TEST(device_tensors_broadcast) {
    for (int i = 0; i < ndevs; i++) {
        gad_device dev = devs[i];
        gad_scope_begin();
        int root = P - 1;
        gad_tensor *c[NS + 1], *d[NS + 1];
        for (int k = 0; k < NS; k++) {
            c[k] = filled(k % 2 ? GAD_F64 : GAD_F32, sizes[k], R, real_value);
            d[k] = gad_to_device(c[k], dev);
        }
        int64_t iv[3] = {R, -7, 123456789 - R}; /* i64 values a double holds */
        c[NS] = gad_from_i64(iv, (int64_t[]){3}, 1);
        d[NS] = gad_to_device(c[NS], dev);
        gad_tensor *snap = gad_detach(d[5]); /* shares the storage: keeps this rank's values */
        CHECK(gad_dist_broadcast(c, NS + 1, root) == GAD_OK);
        CHECK(gad_dist_broadcast(d, NS + 1, root) == GAD_OK);
        int bad = 0;
        for (int k = 0; k <= NS; k++) bad += differ(c[k], d[k], dev) != 0;
        CHECK_MSG(bad == 0, "%s: %d tensors are not the root's", gad_device_name(dev), bad);
        CHECK(elem(snap, 11) == real_value(R, 11));
        gad_scope_end();
    }
}

TEST(device_tensors_average_grads) {
    for (int i = 0; i < ndevs; i++) {
        gad_device dev = devs[i];
        gad_scope_begin();
        /* explicit gradients (integers), f32 and f64 */
        gad_tensor *pc[2], *pd[2], *gc[2], *gd[2];
        for (int k = 0; k < 2; k++) {
            gad_dtype_t dt = k ? GAD_F64 : GAD_F32;
            pc[k] = gad_requires_grad(gad_zeros((int64_t[]){50 + k}, 1, dt));
            pd[k] = gad_requires_grad(gad_to_device(gad_zeros((int64_t[]){50 + k}, 1, dt), dev));
            gc[k] = filled(dt, 50 + k, R, int_value);
            gd[k] = gad_to_device(gc[k], dev);
        }
        CHECK(gad_dist_average_grads(pc, gc, 2) == GAD_OK);
        CHECK(gad_dist_average_grads(pd, gd, 2) == GAD_OK);
        for (int k = 0; k < 2; k++) CHECK(differ(gc[k], gd[k], dev) == 0);
        /* the leaves' slots, filled by gad_backward on the device */
        gad_zero_grad(pd, 2);
        gad_zero_grad(pc, 2);
        for (int k = 0; k < 2; k++) {
            CHECK(gad_backward(gad_sum_all(gad_mul(pc[k], gc[k]))) == GAD_OK);
            CHECK(gad_backward(gad_sum_all(gad_mul(pd[k], gd[k]))) == GAD_OK);
        }
        CHECK(gad_dist_average_grads(pc, NULL, 2) == GAD_OK);
        CHECK(gad_dist_average_grads(pd, NULL, 2) == GAD_OK);
        for (int k = 0; k < 2; k++) {
            gad_tensor *g = gad_leaf_grad(pd[k]);
            CHECK(g && differ(gad_leaf_grad(pc[k]), g, dev) == 0);
        }
        gad_scope_end();
        gad_release(pc[0]), gad_release(pc[1]), gad_release(pd[0]), gad_release(pd[1]);
    }
}

TEST(device_tensors_bad_arguments) {
    gad_scope_begin();
    gad_tensor *i64 = gad_to_device(gad_zeros((int64_t[]){4}, 1, GAD_I64), TD);
    CHECK(gad_dist_allreduce(&i64, 1, GAD_DIST_SUM) == GAD_ERR_DOMAIN);
    CHECK(gad_last_error() && strstr(gad_last_error()->message, "i64"));
    gad_clear_error();
    gad_tensor *x = gad_requires_grad(gad_to_device(gad_zeros((int64_t[]){2}, 1, GAD_F32), TD));
    gad_tensor *tracked = gad_mul(x, x);
    CHECK(gad_dist_allreduce(&tracked, 1, GAD_DIST_SUM) == GAD_ERR_NOT_UNIQUE);
    CHECK(gad_last_error() && !strcmp(gad_last_error()->op, "dist_allreduce"));
    gad_clear_error();
    gad_scope_end();
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --hang S / --kill: the last rank does not join; the others must fail. */
static int fault(int kill_it, double hang) {
    double x = 1;
    if (gad_dist_allreduce_f64(&x, 1, GAD_DIST_SUM) != GAD_OK) return 1; /* all here */
    if (R == P - 1) {
        if (kill_it) raise(SIGKILL);
        sleep((unsigned)hang);
        return 0;
    }
    double t0 = now();
    gad_status s = gad_dist_allreduce_f64(&x, 1, GAD_DIST_SUM);
    double el = now() - t0;
    const gad_error *e = gad_last_error();
    printf("rank %d: status %s after %.2f s: %s\n", R, gad_status_str(s), el, e ? e->text : "");
    fflush(stdout);
    char want[64];
    snprintf(want, sizeof want, "no answer from rank(s) %d", P - 1);
    int ok = s == GAD_ERR_COMM && e && strstr(e->message, want) &&
             el < gad_dist_timeout() + 2.5;
    /* the world is broken: later calls fail at once, finalize refuses */
    gad_clear_error();
    ok = ok && gad_dist_barrier() == GAD_ERR_COMM;
    gad_clear_error();
    ok = ok && gad_dist_finalize() == GAD_ERR_COMM;
    printf("rank %d: %s\n", R, ok ? "fault detected as expected" : "FAIL");
    fflush(stdout);
    _exit(ok ? 3 : 1); /* 3: the expected failure (tests/test_dist_faults.sh) */
}

/* --broken local: the last rank fails before an all-reduce (an i64
 * tensor), the others get a comm error naming it. --broken midway: every
 * rank's second host transport call fails (gad__dist_fail_move) in an
 * all-reduce of several buckets; the tensors must hold their old values.
 * Either way the world is broken on every rank from then on: every
 * collective fails at once with a comm error, and so does finalize. */
static int broken(const char *how) {
    gad_scope_begin();
    int ok = 1;
    gad_status s;
    if (!strcmp(how, "local")) {
        gad_tensor *bad = R == P - 1 ? gad_zeros((int64_t[]){4}, 1, GAD_I64)
                                     : gad_zeros((int64_t[]){4}, 1, GAD_F32);
        s = gad_dist_allreduce(&bad, 1, GAD_DIST_SUM);
        const gad_error *e = gad_last_error();
        printf("rank %d: %s\n", R, e ? e->text : "no error");
        if (R == P - 1) ok = s == GAD_ERR_DOMAIN && e && strstr(e->message, "i64");
        else ok = s == GAD_ERR_COMM && e && strstr(e->message, "failed before the collective");
    } else {
        /* 3 tensors of 1500 f32 (6000 bytes each) in 4 KiB buckets: pieces */
        gad_tensor *ts[3];
        for (int i = 0; i < 3; i++) ts[i] = filled(GAD_F32, 1500, R + i, int_value);
        gad__dist_fail_move(2);
        s = gad_dist_allreduce(ts, 3, GAD_DIST_MEAN);
        const gad_error *e = gad_last_error();
        printf("rank %d: %s\n", R, e ? e->text : "no error");
        ok = s == GAD_ERR_COMM;
        int changed = 0;
        for (int i = 0; i < 3; i++) {
            const float *p = gad_data(ts[i]);
            for (int64_t j = 0; j < 1500; j++) changed += p[j] != (float)int_value(R + i, j);
        }
        printf("rank %d: %d elements changed by the failed all-reduce\n", R, changed);
        ok = ok && changed == 0;
    }
    gad_clear_error();
    /* every later collective: a comm error at once, data untouched */
    gad_tensor *t = filled(GAD_F32, 8, R, int_value);
    gad_tensor *p = gad_requires_grad(gad_zeros((int64_t[]){8}, 1, GAD_F32));
    gad_tensor *g = filled(GAD_F32, 8, R, int_value);
    double x = 1;
    gad_status later[5] = {gad_dist_barrier(), gad_dist_allreduce_f64(&x, 1, GAD_DIST_SUM),
                           gad_dist_allreduce(&t, 1, GAD_DIST_SUM), gad_dist_broadcast(&t, 1, 0),
                           gad_dist_average_grads(&p, &g, 1)};
    for (int i = 0; i < 5; i++) {
        if (later[i] != GAD_ERR_COMM) {
            printf("rank %d: collective %d after the failure returned %s\n", R, i,
                   gad_status_str(later[i]));
            ok = 0;
        }
    }
    gad_clear_error();
    ok = ok && x == 1 && ((const float *)gad_data(t))[3] == (float)int_value(R, 3);
    ok = ok && gad_dist_finalize() == GAD_ERR_COMM;
    gad_scope_end();
    printf("rank %d: %s\n", R, ok ? "world broken as expected" : "FAIL");
    fflush(stdout);
    _exit(ok ? 3 : 1); /* 3: the expected failure (tests/test_dist_faults.sh) */
}

/* --bucket-mismatch: rank 0 has 4 KiB buckets, the others 8 KiB (set
 * before gad_dist_init): a shape error naming the setting on every rank
 * before any data move, the tensors unchanged. */
static int bucket_mismatch(void) {
    gad_scope_begin();
    gad_tensor *t = filled(GAD_F32, 3000, R, int_value);
    gad_status s = gad_dist_allreduce(&t, 1, GAD_DIST_MEAN);
    const gad_error *e = gad_last_error();
    printf("rank %d: %s\n", R, e ? e->text : "no error");
    int ok = s == GAD_ERR_SHAPE && e && strstr(e->message, "GAD_DIST_BUCKET_BYTES") &&
             strstr(e->message, "rank 0: 4096");
    int changed = 0;
    for (int64_t j = 0; j < 3000; j++)
        changed += ((const float *)gad_data(t))[j] != (float)int_value(R, j);
    ok = ok && changed == 0;
    gad_clear_error();
    gad_scope_end();
    ok = gad_dist_finalize() == GAD_OK && ok; /* a shape error: the world is whole */
    printf("rank %d: %s\n", R, ok ? "bucket mismatch refused as expected" : "FAIL");
    fflush(stdout);
    return ok ? 0 : 1;
}

/* --env: numbers from the environment are decimal, or a domain error
 * naming the variable (a world of one: nothing else is read first). */
static int env_numbers(void) {
    static const char *bad_t[] = {"0x10", "inf", " 5", "5s", "-1", "0", "nan", "1e999"};
    static const char *bad_b[] = {"0x1000", " 4096", "+4096", "-1", "4096.0", "1024"};
    int ok = 1;
    for (size_t i = 0; i < sizeof bad_t / sizeof *bad_t; i++) {
        setenv("GAD_DIST_TIMEOUT", bad_t[i], 1);
        gad_status s = gad_dist_init(NULL, NULL);
        const gad_error *e = gad_last_error();
        int good = s == GAD_ERR_DOMAIN && e && strstr(e->message, "GAD_DIST_TIMEOUT");
        if (!good) printf("GAD_DIST_TIMEOUT='%s': %s\n", bad_t[i], e ? e->text : "accepted");
        ok &= good;
        gad_clear_error();
    }
    setenv("GAD_DIST_TIMEOUT", "2.5e1", 1);
    for (size_t i = 0; i < sizeof bad_b / sizeof *bad_b; i++) {
        setenv("GAD_DIST_BUCKET_BYTES", bad_b[i], 1);
        gad_status s = gad_dist_init(NULL, NULL);
        const gad_error *e = gad_last_error();
        int good = s == GAD_ERR_DOMAIN && e && strstr(e->message, "GAD_DIST_BUCKET_BYTES");
        if (!good) printf("GAD_DIST_BUCKET_BYTES='%s': %s\n", bad_b[i], e ? e->text : "accepted");
        ok &= good;
        gad_clear_error();
    }
    setenv("GAD_DIST_BUCKET_BYTES", "8192", 1);
    ok &= gad_dist_init(NULL, NULL) == GAD_OK && gad_dist_timeout() == 25 &&
          gad_dist_bucket_bytes() == 8192;
    printf("test_dist --env: %s\n", ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}

/* --reinit: leave the world, then try to join it again. MPI cannot be
 * initialized twice: an unsupported error, not OpenMPI's abort. */
static int reinit(void) {
    gad_status f = gad_dist_finalize();
    gad_status s = gad_dist_init(NULL, NULL);
    const gad_error *e = gad_last_error();
    int mpi = P > 1;
    int ok = f == GAD_OK &&
             (mpi ? s == GAD_ERR_UNSUPPORTED && e && strstr(e->message, "cannot be initialized again")
                  : s == GAD_OK);
    printf("rank %d: finalize %s, init again %s: %s\n", R, gad_status_str(f), gad_status_str(s),
           !ok ? "FAIL" : mpi ? "refused as expected" : "a world of one joins again, as expected");
    if (e) printf("rank %d: %s\n", R, e->text);
    fflush(stdout);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "--env")) return env_numbers();
    if (argc >= 2 && !strcmp(argv[1], "--bucket-mismatch")) {
        /* the launchers' rank variables: gad_dist_init reads the bucket size */
        const char *r = getenv("OMPI_COMM_WORLD_RANK");
        if (!r) r = getenv("PMI_RANK");
        setenv("GAD_DIST_BUCKET_BYTES", r && !strcmp(r, "0") ? "4096" : "8192", 1);
    }
    if (gad_dist_init(&argc, &argv) != GAD_OK) {
        fprintf(stderr, "%s\n", gad_last_error()->text);
        return 1;
    }
    R = gad_dist_rank(), P = gad_dist_size();
    register_test_device();
    if (TD < 0) {
        fprintf(stderr, "cannot register the test device\n");
        return 1;
    }
    devs[ndevs++] = TD;
    int ncuda = gad_device_count(GAD_DEVICE_CUDA);
    if (ncuda > 0) devs[ndevs++] = gad_cuda(R % ncuda);
    if (argc >= 2 && !strcmp(argv[1], "--kill")) return fault(1, 0);
    if (argc >= 3 && !strcmp(argv[1], "--hang")) return fault(0, atof(argv[2]));
    if (argc >= 2 && !strcmp(argv[1], "--reinit")) return reinit();
    if (argc >= 3 && !strcmp(argv[1], "--broken")) return broken(argv[2]);
    if (argc >= 2 && !strcmp(argv[1], "--bucket-mismatch")) return bucket_mismatch();
    if (R != 0) { /* one report: rank 0's (the others' failures go to stderr) */
        if (!freopen("/dev/null", "w", stdout)) return 1;
    }
    printf("test_dist: rank %d of %d (%s), bucket %zu bytes, devices", R, P, gad_dist_backend(),
           gad_dist_bucket_bytes());
    for (int i = 0; i < ndevs; i++) printf(" %s", gad_device_name(devs[i]));
    printf("\n");
    RUN(world);
    RUN(allreduce_integers_exact);
    RUN(allreduce_reals_within_rounding);
    RUN(broadcast_from_a_root);
    RUN(average_grads_equal_the_full_batch);
    RUN(mismatch_is_an_error_on_every_rank);
    RUN(bad_arguments);
    RUN(stats_count_the_collectives);
    RUN(min_max_propagate_nan);
    RUN(device_tensors_allreduce);
    RUN(device_tensors_mixed_with_host_tensors);
    RUN(device_tensors_are_copied_once_per_tensor);
    RUN(device_tensors_broadcast);
    RUN(device_tensors_average_grads);
    RUN(device_tensors_bad_arguments);
    int rc = test_summary();
    /* every rank's verdict, so that one rank's failure fails the run */
    double fails = rc != 0;
    if (gad_dist_allreduce_f64(&fails, 1, GAD_DIST_SUM) != GAD_OK || fails != 0) rc = 1;
    if (gad_dist_finalize() != GAD_OK) rc = 1;
    return rc;
}
