/* test_norm.c: batch, group and instance norm (issue 28) beyond the
 * registry's checks: the composites' gradients to second order, the fused
 * kernel against the unfused composition at sizes where it vectorizes and
 * runs on threads, running statistics in place, and their edge cases.
 * PyTorch's values are in test_reference (make_reference.py's block). */
#include "test.h"

#include "gad_int.h"
#include "ops/ops_int.h"

#include <string.h>

static double max_abs_diff(gad_tensor *a, gad_tensor *b) {
    int64_t n = gad_numel(a);
    if (n != gad_numel(b)) return INFINITY;
    double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8), w = 0;
    gad_read_f64(a, x, (size_t)n);
    gad_read_f64(b, y, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(x[i] - y[i]);
        if (!(e <= w)) w = e;
    }
    free(x);
    free(y);
    return w;
}

/* in: x, w, b (f64 leaves); ctx: which */
static gad_tensor *composite(void *ctx, gad_tensor *const *in, int n) {
    (void)n;
    switch (*(int *)ctx) {
    case 0: return gad_group_norm(in[0], 2, in[1], in[2], 1e-5);
    case 1: return gad_group_norm(in[0], 1, NULL, in[2], 1e-3);
    case 2: return gad_instance_norm(in[0], NULL, NULL, in[1], in[2], 1, 0.1, 1e-5);
    default: {
        /* evaluation with constant running statistics */
        int64_t C = gad_shape(in[0])[1];
        gad_tensor *rm = gad_mul_scalar(gad_ones(&C, 1, GAD_F64), 0.25);
        gad_tensor *rv = gad_mul_scalar(gad_ones(&C, 1, GAD_F64), 1.5);
        return gad_instance_norm(in[0], rm, rv, in[1], NULL, 0, 0.1, 1e-5);
    }
    }
}

TEST(group_and_instance_norm_pass_gradcheck) {
    gad_rng *rng = gad_rng_new(28);
    for (int k = 0; k < 4; k++) {
        gad_scope_begin();
        gad_tensor *in[3] = {
            gad_requires_grad(gad_rng_uniform_tensor(rng, (int64_t[]){2, 4, 3}, 3, GAD_F64, -2, 2)),
            gad_requires_grad(gad_rng_uniform_tensor(rng, (int64_t[]){4}, 1, GAD_F64, 0.5, 1.5)),
            gad_requires_grad(gad_rng_uniform_tensor(rng, (int64_t[]){4}, 1, GAD_F64, -1, 1))};
        gad_gradcheck_result r;
        CHECK_MSG(gad_gradcheck(composite, &k, in, 3, NULL, &r) == GAD_OK && r.passed,
                  "case %d: input %d element %lld %.10g vs %.10g", k, r.input,
                  (long long)r.index, r.analytic, r.numeric);
        CHECK_MSG(gad_gradgradcheck(composite, &k, in, 3, NULL, &r) == GAD_OK && r.passed,
                  "case %d second order: input %d element %lld %.10g vs %.10g", k, r.input,
                  (long long)r.index, r.analytic, r.numeric);
        gad_scope_end();
    }
    gad_rng_free(rng);
}

/* The fused node and its VJP against the composition of ordinary ops, in
 * f32 at a size with many channels, long rows and odd tails. */
TEST(fused_batch_norm_matches_the_composition) {
    gad_rng *rng = gad_rng_new(5);
    static const int64_t shapes[][4] = {{8, 16, 9, 7}, {32, 24, 1, 1}, {3, 5, 33, 1}};
    for (int v = 0; v < 3; v++) {
        for (int train = 0; train <= 1; train++) {
            gad_scope_begin();
            int64_t C = shapes[v][1];
            gad_tensor *x = gad_requires_grad(
                gad_add_scalar(gad_rng_normal_tensor(rng, shapes[v], 4, GAD_F32, 0, 2), 3));
            gad_tensor *w = gad_requires_grad(gad_rng_uniform_tensor(rng, &C, 1, GAD_F32, 0.5, 1.5));
            gad_tensor *b = gad_requires_grad(gad_rng_uniform_tensor(rng, &C, 1, GAD_F32, -1, 1));
            gad_tensor *rm = gad_rng_uniform_tensor(rng, &C, 1, GAD_F32, -1, 1);
            gad_tensor *rv = gad_rng_uniform_tensor(rng, &C, 1, GAD_F32, 0.5, 2);
            gad_tensor *mean = gad_contiguous(rm);
            gad_tensor *invstd = gad_pow_scalar(gad_add_scalar(rv, 1e-5), -0.5);
            gad_tensor *y1 = gad_batch_norm(x, train ? NULL : rm, train ? NULL : rv, w, b, train,
                                            0.1, 1e-5);
            gad_tensor *y2 = gad__batch_norm_unfused(x, w, b, mean, invstd, train, 1e-5);
            CHECK(y1 && y2);
            CHECK_MSG(max_abs_diff(y1, y2) < 2e-5, "shape %d train %d forward: %g", v, train,
                      max_abs_diff(y1, y2));
            gad_tensor *gw = gad_rng_normal_tensor(rng, shapes[v], 4, GAD_F32, 0, 1);
            gad_tensor *g1[3], *g2[3];
            CHECK(gad_grad(gad_sum_all(gad_mul(y1, gw)), (gad_tensor *[]){x, w, b}, 3, g1) == GAD_OK);
            CHECK(gad_grad(gad_sum_all(gad_mul(y2, gw)), (gad_tensor *[]){x, w, b}, 3, g2) == GAD_OK);
            for (int i = 0; i < 3; i++) {
                double scale = 1 + (i ? sqrt((double)gad_numel(x) / (double)C) : 0);
                CHECK_MSG(max_abs_diff(g1[i], g2[i]) < 5e-5 * scale, "shape %d train %d grad %d: %g",
                          v, train, i, max_abs_diff(g1[i], g2[i]));
            }
            gad_scope_end();
        }
    }
    gad_rng_free(rng);
}

/* Running statistics: updated in place in training only, the unbiased
 * variance, copy-on-write (an alias taken before keeps the old values). */
TEST(running_statistics_update_in_place) {
    gad_scope_begin();
    double xv[8] = {1, 2, 3, 4, 5, 6, 7, 8}; /* [4, 2]: channel 0 1 3 5 7, channel 1 2 4 6 8 */
    gad_tensor *x = gad_from_f64(xv, (int64_t[]){4, 2}, 2);
    gad_tensor *rm = gad_zeros((int64_t[]){2}, 1, GAD_F64), *rv = gad_ones((int64_t[]){2}, 1, GAD_F64);
    gad_tensor *before = gad_detach(rm);
    CHECK(gad_batch_norm(x, rm, rv, NULL, NULL, 1, 0.5, 0) != NULL);
    double m[2], v[2], b0[2];
    gad_read_f64(rm, m, 2);
    gad_read_f64(rv, v, 2);
    gad_read_f64(before, b0, 2);
    /* mean 4, 5; unbiased var 20/3 */
    CHECK(fabs(m[0] - 2) < 1e-12 && fabs(m[1] - 2.5) < 1e-12);
    CHECK(fabs(v[0] - (0.5 + 10.0 / 3)) < 1e-12 && fabs(v[1] - v[0]) < 1e-12);
    CHECK(b0[0] == 0 && b0[1] == 0);
    /* evaluation changes nothing */
    CHECK(gad_batch_norm(x, rm, rv, NULL, NULL, 0, 0.5, 0) != NULL);
    double m2[2];
    gad_read_f64(rm, m2, 2);
    CHECK(m2[0] == m[0] && m2[1] == m[1]);
    /* an empty batch leaves them as they were and gives an empty result */
    gad_tensor *e = gad_batch_norm(gad_zeros((int64_t[]){0, 2}, 2, GAD_F64), rm, rv, NULL, NULL, 1,
                                   0.5, 1e-5);
    CHECK(e && gad_numel(e) == 0);
    gad_read_f64(rm, m2, 2);
    CHECK(m2[0] == m[0] && m2[1] == m[1]);
    gad_scope_end();
}

/* A constant channel normalises to 0 (eps > 0), never NaN; a channel with
 * a huge mean and a small spread keeps its variance (the shifted sums). */
TEST(batch_statistics_are_stable) {
    gad_scope_begin();
    float v[2 * 2 * 3] = {5, 5, 5, 1e4f + 1, 1e4f + 2, 1e4f + 3,
                          5, 5, 5, 1e4f + 1, 1e4f + 2, 1e4f + 3};
    gad_tensor *x = gad_from_f32(v, (int64_t[]){2, 2, 3}, 3);
    gad_tensor *rm = gad_zeros((int64_t[]){2}, 1, GAD_F32), *rv = gad_zeros((int64_t[]){2}, 1, GAD_F32);
    gad_tensor *y = gad_batch_norm(x, rm, rv, NULL, NULL, 1, 1.0, 1e-5);
    float o[12], r[2];
    gad_read_f32(y, o, 12);
    CHECK_MSG(o[0] == 0 && o[1] == 0, "%g %g", o[0], o[1]);
    /* channel 1: values 1, 2, 3 (twice) around 1e4: var 2/3, normalised +-1.2247 */
    CHECK_MSG(fabsf(o[3] + 1.2247357f) < 1e-5f && fabsf(o[5] - 1.2247357f) < 1e-5f, "%g %g", o[3],
              o[5]);
    gad_read_f32(rv, r, 2);
    CHECK_MSG(fabsf(r[1] - 0.8f) < 1e-5f, "unbiased var %g", r[1]); /* 4/5 */
    gad_scope_end();
}

/* ---- group norm's fused node (norm.group_fwd, group_bwd) */

/* The fused node and its VJP against the composition of ordinary ops
 * (gad__group_norm_unfused: the math the op had as a composite), in f32
 * and f64, at odd shapes: one value per channel (S = 1, rank 2), one
 * channel per group, long rows with tails, one group. */
TEST(fused_group_norm_matches_the_composition) {
    gad_rng *rng = gad_rng_new(7);
    static const int64_t shapes[][4] = {{3, 6, 1, 1}, {4, 6, 1, 1}, {2, 4, 5, 3}, {2, 4, 1031, 1},
                                        {5, 8, 9, 7}, {3, 5, 4, 4}, {1, 3, 2, 1}};
    static const int ranks[] = {3, 2, 4, 3, 4, 4, 3};
    static const int64_t groups[] = {3, 2, 4, 2, 2, 1, 3};
    int nv = TEST_SANITIZED ? 5 : 7;
    for (int v = 0; v < nv; v++) {
        for (int dt = 0; dt < 2; dt++) {
            for (int aff = 0; aff < 4; aff += 3) {
                gad_scope_begin();
                gad_dtype_t d = dt ? GAD_F64 : GAD_F32;
                int64_t C = shapes[v][1];
                gad_tensor *x = gad_requires_grad(gad_add_scalar(
                    gad_rng_normal_tensor(rng, shapes[v], ranks[v], d, 0, 2), 3));
                gad_tensor *w =
                    aff ? gad_requires_grad(gad_rng_uniform_tensor(rng, &C, 1, d, 0.5, 1.5)) : NULL;
                gad_tensor *b =
                    aff ? gad_requires_grad(gad_rng_uniform_tensor(rng, &C, 1, d, -1, 1)) : NULL;
                gad_tensor *y1 = gad_group_norm(x, groups[v], w, b, 1e-5);
                gad_tensor *y2 = gad__group_norm_unfused(x, w, b, groups[v], 1e-5);
                CHECK(y1 && y2);
                double tol = dt ? 1e-12 : 2e-5;
                CHECK_MSG(max_abs_diff(y1, y2) < tol, "shape %d %s aff %d forward: %g", v,
                          dt ? "f64" : "f32", aff, max_abs_diff(y1, y2));
                gad_tensor *gw = gad_rng_normal_tensor(rng, shapes[v], ranks[v], d, 0, 1);
                gad_tensor *in[3] = {x, w, b}, *g1[3], *g2[3];
                int ni = aff ? 3 : 1;
                CHECK(gad_grad(gad_sum_all(gad_mul(y1, gw)), in, ni, g1) == GAD_OK);
                CHECK(gad_grad(gad_sum_all(gad_mul(y2, gw)), in, ni, g2) == GAD_OK);
                for (int i = 0; i < ni; i++) {
                    double scale = 1 + (i ? sqrt((double)gad_numel(x) / (double)C) : 0);
                    CHECK_MSG(max_abs_diff(g1[i], g2[i]) < (dt ? 1e-11 : 5e-5) * scale,
                              "shape %d %s grad %d: %g", v, dt ? "f64" : "f32", i,
                              max_abs_diff(g1[i], g2[i]));
                }
                gad_scope_end();
            }
        }
    }
    gad_rng_free(rng);
}

/* The same bits on 1, 2 and 3 threads: each (n, g) block is one task and
 * dw, db add the blocks' sums over n in order. */
TEST(group_norm_is_bitwise_independent_of_threads) {
    int saved = gad_num_threads();
    gad_rng *rng = gad_rng_new(11);
    int64_t shape[4] = {8, 16, 32, 33}, C = 16;
    if (TEST_SANITIZED) shape[2] = 8;
    int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
    for (int inst = 0; inst <= 1; inst++) {
        gad_scope_begin();
        gad_tensor *x = gad_requires_grad(gad_rng_normal_tensor(rng, shape, 4, GAD_F32, 1, 2));
        gad_tensor *w = gad_requires_grad(gad_rng_uniform_tensor(rng, &C, 1, GAD_F32, 0.5, 1.5));
        gad_tensor *b = gad_requires_grad(gad_rng_uniform_tensor(rng, &C, 1, GAD_F32, -1, 1));
        gad_tensor *gw = gad_rng_normal_tensor(rng, shape, 4, GAD_F32, 0, 1);
        float *ref[4] = {0}, *got = malloc((size_t)n * sizeof *got);
        int64_t len[4] = {n, n, C, C};
        for (int t = 1; t <= 3; t++) {
            gad_set_num_threads(t);
            gad_scope_begin();
            gad_tensor *y = inst ? gad_instance_norm(x, NULL, NULL, w, b, 1, 0.1, 1e-5)
                                 : gad_group_norm(x, 4, w, b, 1e-5);
            gad_tensor *g[3], *in[3] = {x, w, b};
            CHECK(y && gad_grad(gad_sum_all(gad_mul(y, gw)), in, 3, g) == GAD_OK);
            gad_tensor *out[4] = {y, g[0], g[1], g[2]};
            for (int k = 0; k < 4; k++) {
                float *dst = t == 1 ? (ref[k] = malloc((size_t)len[k] * sizeof *got)) : got;
                gad_read_f32(out[k], dst, (size_t)len[k]);
                if (t > 1)
                    CHECK_MSG(!memcmp(ref[k], got, (size_t)len[k] * sizeof *got),
                              "%s output %d differs on %d threads", inst ? "instance" : "group",
                              k, t);
            }
            gad_scope_end();
        }
        for (int k = 0; k < 4; k++) free(ref[k]);
        free(got);
        gad_scope_end();
    }
    gad_set_num_threads(saved);
    gad_rng_free(rng);
}

/* A NaN or an Inf makes its own group's outputs NaN (as PyTorch) and
 * leaves the other groups' finite; the same for dx. */
TEST(group_norm_propagates_nan_and_inf_within_the_group) {
    gad_scope_begin();
    float v[2 * 4 * 3];
    for (int i = 0; i < 24; i++) v[i] = (float)((i * 7) % 5) - 2;
    v[1] = NAN;       /* sample 0, group 0 */
    v[18] = INFINITY; /* sample 1, group 1 */
    gad_tensor *x = gad_requires_grad(gad_from_f32(v, (int64_t[]){2, 4, 3}, 3));
    gad_tensor *y = gad_group_norm(x, 2, NULL, NULL, 1e-5);
    gad_tensor *g[1];
    CHECK(y && gad_grad(gad_sum_all(gad_mul(y, y)), &x, 1, g) == GAD_OK);
    float o[24], d[24];
    gad_read_f32(y, o, 24);
    gad_read_f32(g[0], d, 24);
    for (int i = 0; i < 24; i++) {
        int bad = i < 6 || i >= 18; /* (0, 0) and (1, 1): 6 values each */
        CHECK_MSG(bad ? isnan(o[i]) : isfinite(o[i]), "y[%d] = %g", i, o[i]);
        CHECK_MSG(bad ? isnan(d[i]) : isfinite(d[i]), "dx[%d] = %g", i, d[i]);
    }
    gad_scope_end();
}

/* No values: an empty batch or empty rows give an empty y, an empty dx and
 * zero dw, db. */
TEST(group_norm_of_nothing) {
    static const int64_t shapes[][3] = {{0, 4, 3}, {2, 4, 0}};
    for (int v = 0; v < 2; v++) {
        gad_scope_begin();
        int64_t C = 4;
        gad_tensor *x = gad_requires_grad(gad_zeros(shapes[v], 3, GAD_F32));
        gad_tensor *w = gad_requires_grad(gad_ones(&C, 1, GAD_F32));
        gad_tensor *b = gad_requires_grad(gad_ones(&C, 1, GAD_F32));
        gad_tensor *y = gad_group_norm(x, 2, w, b, 1e-5);
        CHECK(y && gad_numel(y) == 0 && gad_shape(y)[0] == shapes[v][0]);
        gad_tensor *in[3] = {x, w, b}, *g[3];
        CHECK(gad_grad(gad_sum_all(y), in, 3, g) == GAD_OK);
        CHECK(g[0] && gad_numel(g[0]) == 0);
        float z[8];
        gad_read_f32(g[1], z, 4);
        gad_read_f32(g[2], z + 4, 4);
        for (int i = 0; i < 8; i++) CHECK_MSG(z[i] == 0, "shape %d: %g", v, z[i]);
        gad_scope_end();
    }
}

/* instance norm of no channels (x [2, 0, 3]; the fuzzer's case: it divided
 * by zero groups): an empty result, with running statistics of none and
 * under GAD_CREATE_GRAPH too */
TEST(instance_norm_of_no_channels) {
    gad_scope_begin();
    int64_t C = 0;
    gad_tensor *x = gad_requires_grad(gad_zeros((int64_t[]){2, 0, 3}, 3, GAD_F32));
    gad_tensor *w = gad_requires_grad(gad_ones(&C, 1, GAD_F32));
    gad_tensor *rm = gad_zeros(&C, 1, GAD_F32), *rv = gad_ones(&C, 1, GAD_F32);
    for (int run = 0; run < 2; run++) {
        gad_tensor *y = gad_instance_norm(x, run ? rm : NULL, run ? rv : NULL, w, NULL, 1, 0.1,
                                          1e-5);
        CHECK(y && gad_rank(y) == 3 && gad_shape(y)[0] == 2 && gad_numel(y) == 0);
        gad_tensor *g[2];
        CHECK(gad_grad_ex(gad_sum_all(y), NULL, (gad_tensor *[]){x, w}, 2, g, GAD_CREATE_GRAPH) ==
              GAD_OK);
        CHECK(g[0] && gad_numel(g[0]) == 0 && g[1] && gad_numel(g[1]) == 0);
    }
    gad_scope_end();
}

/* f32 group norm against f64 of the same values, large blocks (the f32
 * kernels' chunked float sums) with a mean far from 0 relative to the
 * spread: y, dx, dw, db within float's accuracy. */
TEST(f32_group_norm_is_accurate) {
    gad_rng *rng = gad_rng_new(3);
    int64_t shape[3] = {2, 4, TEST_SANITIZED ? 1000 : 20011}, C = 4;
    gad_scope_begin();
    gad_tensor *x64 = gad_add_scalar(gad_rng_normal_tensor(rng, shape, 3, GAD_F64, 0, 1), 300);
    gad_tensor *w64 = gad_rng_uniform_tensor(rng, &C, 1, GAD_F64, 0.5, 1.5);
    gad_tensor *g64 = gad_rng_normal_tensor(rng, shape, 3, GAD_F64, 0, 1);
    gad_tensor *x32 = gad_requires_grad(gad_cast(x64, GAD_F32));
    gad_tensor *w32 = gad_requires_grad(gad_cast(w64, GAD_F32));
    x64 = gad_requires_grad(gad_cast(x32, GAD_F64)); /* the same values */
    w64 = gad_requires_grad(gad_cast(w32, GAD_F64));
    gad_tensor *y32 = gad_group_norm(x32, 2, w32, NULL, 1e-5);
    gad_tensor *y64 = gad_group_norm(x64, 2, w64, NULL, 1e-5);
    gad_tensor *a[2], *b[2];
    CHECK(gad_grad(gad_sum_all(gad_mul(y32, gad_cast(g64, GAD_F32))), (gad_tensor *[]){x32, w32},
                   2, a) == GAD_OK);
    CHECK(gad_grad(gad_sum_all(gad_mul(y64, g64)), (gad_tensor *[]){x64, w64}, 2, b) == GAD_OK);
    /* x ~ 300, std 1: float's x - mean is good to ulp(300) = 3e-5 */
    CHECK_MSG(max_abs_diff(y32, y64) < 5e-5, "y %g", max_abs_diff(y32, y64));
    CHECK_MSG(max_abs_diff(a[0], b[0]) < 5e-6, "dx %g", max_abs_diff(a[0], b[0]));
    double dws = sqrt((double)shape[0] * (double)shape[2]);
    CHECK_MSG(max_abs_diff(a[1], b[1]) < 3e-5 * dws, "dw %g", max_abs_diff(a[1], b[1]));
    gad_scope_end();
    gad_rng_free(rng);
}

int main(void) {
    RUN(group_and_instance_norm_pass_gradcheck);
    RUN(fused_batch_norm_matches_the_composition);
    RUN(running_statistics_update_in_place);
    RUN(batch_statistics_are_stable);
    RUN(fused_group_norm_matches_the_composition);
    RUN(group_norm_is_bitwise_independent_of_threads);
    RUN(group_norm_propagates_nan_and_inf_within_the_group);
    RUN(group_norm_of_nothing);
    RUN(instance_norm_of_no_channels);
    RUN(f32_group_norm_is_accurate);
    return test_summary();
}
