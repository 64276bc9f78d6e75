/* test_reduce.c: sum and mean over every subset of axes, amax, argmax,
 * variance, stddev, logsumexp, softmax and log_softmax on every operand
 * layout, against naive double-precision loops (SPEC §3.2, §3.3, §3.4,
 * §7.10). */
#include "test.h"

#include <stdint.h>

/* ------------------------------------------------------------------ helpers */
/* (test.h has the helpers shared with test_elementwise.c: shapes,
 * CHECK_CLOSE and the operand layouts of test_make_view.) */

/* A base for test_make_view: instead of uniform [lo, hi), small integers in
 * [-2, 3] (many ties) with about 12% NaN and 6% -inf mixed in. */
static gad_tensor *special_base(gad_rng *rng, gad_dtype_t dt, const int64_t *b,
                                int rb) {
    gad_tensor *u = gad_rng_uniform_tensor(rng, b, rb, GAD_F64, 0, 1);
    double *v = test_read_all(u);
    int64_t n = test_numel(b, rb);
    for (int64_t i = 0; i < n; i++)
        v[i] = v[i] < 0.12 ? NAN
               : v[i] < 0.18 ? -INFINITY
                             : floor((v[i] - 0.18) / 0.82 * 6) - 2;
    gad_tensor *t = gad_cast(gad_from_f64(v, b, rb), dt);
    free(v);
    return t;
}

/* ---------------------------------------------------- naive references */

/* Shape of x reduced over mask (keepdims or not). */
static int red_shape(const int64_t *s, int r, unsigned mask, int keep,
                     int64_t *out) {
    int k = 0;
    for (int d = 0; d < r; d++) {
        if (mask & (1u << d)) {
            if (keep) out[k++] = 1;
        } else {
            out[k++] = s[d];
        }
    }
    return k;
}

/* Sums (and sums of |x|) of v (row-major, shape s) over mask, into arrays
 * of the kept shape's size; returns the number of reduced elements. */
static int64_t naive_sum(const double *v, const int64_t *s, int r,
                         unsigned mask, double *sum, double *abssum) {
    int64_t ks[GAD_MAX_RANK] = {0}, idx[GAD_MAX_RANK] = {0}, ki[GAD_MAX_RANK] = {0};
    int kr = red_shape(s, r, mask, 0, ks);
    int64_t nout = test_numel(ks, kr), n = test_numel(s, r), cnt = 1;
    for (int d = 0; d < r; d++)
        if (mask & (1u << d)) cnt *= s[d];
    for (int64_t o = 0; o < nout; o++) sum[o] = abssum[o] = 0;
    for (int64_t f = 0; f < n; f++) {
        test_unflat(f, s, r, idx);
        int k = 0;
        for (int d = 0; d < r; d++)
            if (!(mask & (1u << d))) ki[k++] = idx[d];
        int64_t o = test_flat(ki, ks, kr);
        sum[o] += v[f];
        abssum[o] += fabs(v[f]);
    }
    return cnt;
}

/* One-axis view of a row-major shape: element (o, i, j) of [outer, n, inner]. */
typedef struct axv {
    int64_t outer, n, inner;
} axv;

static axv axis_view(const int64_t *s, int r, int a) {
    axv v = {1, s[a], 1};
    for (int d = 0; d < a; d++) v.outer *= s[d];
    for (int d = a + 1; d < r; d++) v.inner *= s[d];
    return v;
}

#define AT(v, w, o, i, j) ((v)[((o) * (w).n + (i)) * (w).inner + (j)])

/* Mask of the axes in a list given as in the header (negatives allowed). */
static int axes_from_mask(unsigned mask, int r, int variant, int *axes) {
    int n = 0;
    for (int d = 0; d < r; d++)
        if (mask & (1u << d)) axes[n++] = (variant & (1 << d)) ? d - r : d;
    if (variant & 1) /* reversed order */
        for (int i = 0; i < n / 2; i++) {
            int t = axes[i];
            axes[i] = axes[n - 1 - i];
            axes[n - 1 - i] = t;
        }
    return n;
}

static const int64_t SHAPES[][5] = {
    /* rank, dims */
    {1, 7}, {1, 1}, {2, 5, 6}, {2, 1, 9}, {3, 3, 4, 5}, {3, 3, 1, 4},
    {3, 4, 0, 3}, {4, 2, 3, 4, 5}, {4, 2, 1, 3, 1}, {4, 3, 2, 1, 4},
};
#define N_SHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

static double tol_sum(gad_dtype_t dt) { return dt == GAD_F32 ? 1e-6 : 1e-13; }

/* ----------------------------------------------------------- sum, mean */

TEST(sum_mean_every_subset) {
    gad_rng *rng = gad_rng_new(2024);
    int variant = 0;
    for (int si = 0; si < N_SHAPES; si++) {
        int r = (int)SHAPES[si][0];
        const int64_t *s = &SHAPES[si][1];
        char ss[64];
        test_shape_str(ss, sizeof ss, s, r);
        for (int dt = GAD_F32; dt <= GAD_F64; dt++)
            for (int k = 0; k < TEST_L_COUNT; k++) {
                gad_scope_begin();
                double *v;
                gad_tensor *x = test_make_view(rng, k, (gad_dtype_t)dt, s, r, -1, 1, NULL, &v);
                /* room for any reduced shape (an empty x can reduce to a
                 * non-empty result) */
                int64_t room = 1;
                for (int d = 0; d < r; d++) room *= s[d] ? s[d] : 1;
                double *sum = malloc((size_t)room * sizeof *sum);
                double *abss = malloc((size_t)room * sizeof *abss);
                double *ref = malloc((size_t)room * sizeof *ref);
                for (unsigned mask = 0; mask < (1u << r); mask++) {
                    int64_t cnt = naive_sum(v, s, r, mask, sum, abss);
                    int64_t ks[GAD_MAX_RANK];
                    int kr = red_shape(s, r, mask, 0, ks);
                    int64_t nout = test_numel(ks, kr);
                    for (int keep = 0; keep <= 1; keep++) {
                        int axes[GAD_MAX_RANK];
                        int na = axes_from_mask(mask, r, variant++, axes);
                        int64_t os[GAD_MAX_RANK];
                        int orank = red_shape(s, r, mask, keep, os);
                        for (int mean = 0; mean <= 1; mean++) {
                            gad_tensor *y = mean ? gad_mean(x, axes, na, keep)
                                                 : gad_sum(x, axes, na, keep);
                            CHECK_OK();
                            CHECK_MSG(test_same_shape(y, os, orank),
                                      "%s %s mask %u keep %d: shape", mean ? "mean" : "sum",
                                      ss, mask, keep);
                            CHECK(y && (int)gad_dtype(y) == dt);
                            for (int64_t o = 0; o < nout; o++)
                                ref[o] = mean ? sum[o] / (double)cnt : sum[o];
                            /* tolerance relative to the sum of |x| */
                            double amax_ = 0;
                            for (int64_t o = 0; o < nout; o++)
                                if (abss[o] > amax_) amax_ = abss[o];
                            if (mean && cnt) amax_ /= (double)cnt;
                            CHECK_CLOSE(y, ref, nout, tol_sum((gad_dtype_t)dt) * (amax_ > 1 ? amax_ : 1),
                                        "%s %s %s(%s) axes mask %u keep %d",
                                        mean ? "mean" : "sum", gad_dtype_name((gad_dtype_t)dt),
                                        ss, test_layout_name(k), mask, keep);
                        }
                    }
                }
                /* sum_all / mean_all are rank 0 */
                unsigned all = (1u << r) - 1;
                int64_t cnt = naive_sum(v, s, r, all, sum, abss);
                gad_tensor *ya = gad_sum_all(x), *ym = gad_mean_all(x);
                CHECK(ya && gad_rank(ya) == 0 && ym && gad_rank(ym) == 0);
                double t = tol_sum((gad_dtype_t)dt) * (abss[0] > 1 ? abss[0] : 1);
                CHECK_MSG(test_close(gad_item(ya), sum[0], t), "sum_all %s %s", ss,
                          test_layout_name(k));
                CHECK_MSG(test_close(gad_item(ym), cnt ? sum[0] / (double)cnt : NAN, t),
                          "mean_all %s %s", ss, test_layout_name(k));
                free(sum);
                free(abss);
                free(ref);
                free(v);
                gad_scope_end();
            }
    }
    gad_rng_free(rng);
}

/* A broadcast (stride-0) axis is reduced without being copied out: the
 * sum of a [2^25, 2^25] view of one element (2^50 elements, 4 PiB packed)
 * is 2^50 times it. Views that broadcast some axes give what their packed
 * copies give (the values here are exact in any order). */
TEST(sum_of_broadcast_views) {
    gad_scope_begin();
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        gad_dtype_t d = (gad_dtype_t)dt;
        const int64_t huge[2] = {INT64_C(1) << 25, INT64_C(1) << 25};
        gad_tensor *b = gad_broadcast_to(gad_scalar(0.75, d), huge, 2);
        CHECK_VALUES(gad_sum_all(b), 0, 0.75 * 0x1p50);
        CHECK_VALUES(gad_mean_all(b), 0, 0.75);
        /* one axis reduced, the other kept: [2^45, 3] and [3, 2^45] */
        gad_tensor *one = gad_scalar(0.75, d);
        gad_tensor *tall = gad_broadcast_to(one, (const int64_t[]){INT64_C(1) << 45, 3}, 2);
        gad_tensor *wide = gad_broadcast_to(one, (const int64_t[]){3, INT64_C(1) << 45}, 2);
        CHECK_VALUES(gad_sum(tall, (const int[]){0}, 1, 0), 0, 0.75 * 0x1p45, 0.75 * 0x1p45,
                     0.75 * 0x1p45);
        gad_tensor *c = gad_mean(wide, (const int[]){1}, 1, 1);
        CHECK(c && gad_rank(c) == 2 && gad_shape(c)[0] == 3 && gad_shape(c)[1] == 1);
        CHECK_VALUES(c, 0, 0.75, 0.75, 0.75);
        CHECK_OK();
        /* [3] broadcast to [4,2,3] (axes 0 and 1 stride 0), and a [2,1,3]
         * one broadcast to [2,4,3], over every subset of axes */
        const double v[6] = {0.25, -1.5, 2, 4.75, 8, -0.5};
        gad_tensor *x3 = gad_cast(gad_from_f64(v, (const int64_t[]){3}, 1), d);
        gad_tensor *x213 = gad_cast(gad_from_f64(v, (const int64_t[]){2, 1, 3}, 3), d);
        gad_tensor *views[2] = {gad_broadcast_to(x3, (const int64_t[]){4, 2, 3}, 3),
                                gad_broadcast_to(x213, (const int64_t[]){2, 4, 3}, 3)};
        for (int k = 0; k < 2; k++) {
            gad_tensor *packed = gad_clone(views[k]);
            for (unsigned mask = 0; mask < 8; mask++) {
                int axes[3], na = 0;
                for (int a = 0; a < 3; a++)
                    if (mask >> a & 1) axes[na++] = a;
                for (int keep = 0; keep <= 1; keep++)
                    for (int mean = 0; mean <= 1; mean++) {
                        gad_tensor *y = mean ? gad_mean(views[k], axes, na, keep)
                                             : gad_sum(views[k], axes, na, keep);
                        gad_tensor *w = mean ? gad_mean(packed, axes, na, keep)
                                             : gad_sum(packed, axes, na, keep);
                        int same = y && w && gad_rank(y) == gad_rank(w) &&
                                   gad_numel(y) == gad_numel(w) &&
                                   memcmp(gad_shape(y), gad_shape(w),
                                          (size_t)gad_rank(w) * sizeof(int64_t)) == 0 &&
                                   memcmp(gad_data(y), gad_data(w),
                                          (size_t)gad_numel(w) * gad_dtype_size(d)) == 0;
                        CHECK_MSG(same, "%s view %d mask %u keep %d %s",
                                  mean ? "mean" : "sum", k, mask, keep, gad_dtype_name(d));
                    }
            }
            CHECK_VALUES(gad_sum_all(views[k]), 0, k ? 4 * 13.0 : 8 * 0.75);
        }
        /* the gradient of a broadcast leaf's sum: as before */
        gad_tensor *leaf = gad_requires_grad(gad_cast(gad_from_f64(v, (const int64_t[]){3}, 1), d));
        gad_tensor *g = NULL;
        CHECK(gad_grad(gad_sum_all(gad_broadcast_to(leaf, (const int64_t[]){5, 3}, 2)), &leaf, 1,
                       &g) == GAD_OK);
        CHECK_VALUES(g, 0, 5, 5, 5);
        CHECK_OK();
    }
    gad_scope_end();
}

/* SPEC §7.10 empty reductions; rank 0; n = 0 axes is the identity. */
TEST(sum_mean_empty_and_rank0) {
    gad_scope_begin();
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        gad_dtype_t d = (gad_dtype_t)dt;
        int64_t s203[] = {2, 0, 3}, s20[] = {2, 0}, s03[] = {0, 3};
        int ax1 = 1, ax0 = 0;
        gad_tensor *y = gad_sum(gad_zeros(s203, 3, d), &ax1, 1, 0);
        CHECK_SHAPE(y, 2, 3);
        CHECK_VALUES(y, 0, 0, 0, 0, 0, 0, 0);
        y = gad_sum(gad_zeros(s203, 3, d), &ax1, 1, 1);
        CHECK_SHAPE(y, 2, 1, 3);
        CHECK_VALUES(y, 0, 0, 0, 0, 0, 0, 0);
        y = gad_mean(gad_zeros(s20, 2, d), &ax1, 1, 0);
        CHECK_SHAPE(y, 2);
        CHECK_VALUES(y, 0, NAN, NAN);
        y = gad_mean(gad_zeros(s03, 2, d), &ax0, 1, 0);
        CHECK_SHAPE(y, 3);
        CHECK_VALUES(y, 0, NAN, NAN, NAN);
        y = gad_mean(gad_zeros(s03, 2, d), &ax1, 1, 0);
        CHECK_SHAPE(y, 0);
        y = gad_sum_all(gad_zeros(s203, 3, d));
        CHECK(y && gad_rank(y) == 0);
        CHECK(gad_item(y) == 0);
        y = gad_mean_all(gad_zeros(s203, 3, d));
        CHECK(y && gad_rank(y) == 0);
        CHECK(isnan(gad_item(y)));
        CHECK_OK();

        /* rank 0: no axis, identity; sum_all of a scalar */
        gad_tensor *sc = gad_scalar(-2.5, d);
        y = gad_sum(sc, NULL, 0, 0);
        CHECK(y && gad_rank(y) == 0 && gad_item(y) == -2.5);
        y = gad_mean(sc, NULL, 0, 1);
        CHECK(y && gad_rank(y) == 0 && gad_item(y) == -2.5);
        CHECK(gad_item(gad_sum_all(sc)) == -2.5);
        CHECK(gad_item(gad_mean_all(sc)) == -2.5);
        CHECK_OK();
        CHECK(gad_sum(sc, &ax0, 1, 0) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "sum");
        int axm1 = -1;
        CHECK(gad_mean(sc, &axm1, 1, 1) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "mean");

        /* n = 0 on rank 3: the identity, keepdims or not */
        const double vals[] = {1, -2, 3.5, 4, 5, -6.25};
        int64_t s123[] = {1, 2, 3};
        gad_tensor *x = gad_cast(gad_from_f64(vals, s123, 3), d);
        for (int keep = 0; keep <= 1; keep++) {
            y = gad_sum(x, NULL, 0, keep);
            CHECK_SHAPE(y, 1, 2, 3);
            CHECK_VALUES(y, 0, 1, -2, 3.5, 4, 5, -6.25);
            y = gad_mean(gad_transpose(x), NULL, 0, keep);
            CHECK_SHAPE(y, 1, 3, 2);
            CHECK_VALUES(y, 0, 1, 4, -2, 5, 3.5, -6.25);
        }
        /* a worked example */
        int a01[] = {0, 1}, am1[] = {-1};
        CHECK_VALUES(gad_sum(x, a01, 2, 0), 0, 5, 3, -2.75);
        CHECK_VALUES(gad_mean(x, am1, 1, 0), 1e-7, 2.5 / 3, 2.75 / 3);
        CHECK_SHAPE(gad_mean(x, am1, 1, 1), 1, 2, 1);
        CHECK_OK();
    }
    gad_scope_end();
}

TEST(sum_mean_errors) {
    gad_scope_begin();
    int64_t s[] = {2, 3, 4};
    gad_tensor *x = gad_ones(s, 3, GAD_F32);
    const int dup1[] = {0, 0}, dup2[] = {1, -2}, dup3[] = {2, 0, -1};
    const int oor1[] = {3}, oor2[] = {-4}, oor3[] = {0, 7};
    const int *bad[] = {dup1, dup2, dup3, oor1, oor2, oor3};
    const int nbad[] = {2, 2, 3, 1, 1, 2};
    for (int i = 0; i < 6; i++)
        for (int keep = 0; keep <= 1; keep++) {
            CHECK(gad_sum(x, bad[i], nbad[i], keep) == NULL);
            CHECK_ERR(GAD_ERR_SHAPE, "sum");
            CHECK(gad_mean(x, bad[i], nbad[i], keep) == NULL);
            CHECK_ERR(GAD_ERR_SHAPE, "mean");
            CHECK(gad_variance(x, bad[i], nbad[i], keep) == NULL);
            CHECK_ERR(GAD_ERR_SHAPE, "variance");
            CHECK(gad_stddev(x, bad[i], nbad[i], keep) == NULL);
            CHECK(gad_last_error() && gad_last_error()->kind == GAD_ERR_SHAPE);
            gad_clear_error();
        }
    /* stddev's own errors name stddev (the op the caller called) */
    CHECK(gad_stddev(x, dup1, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "stddev");
    const gad_error *e;
    CHECK(gad_sum(x, dup1, 2, 0) == NULL);
    e = gad_last_error();
    CHECK_MSG(e && strstr(e->message, "duplicate"), "message: %s", e ? e->message : "");
    gad_clear_error();

    gad_tensor *i = gad_ones(s, 3, GAD_I64);
    int ax = 0;
    CHECK(gad_sum(i, &ax, 1, 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "sum");
    CHECK(gad_mean(i, &ax, 1, 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "mean");
    CHECK(gad_sum_all(i) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "sum_all");
    CHECK(gad_mean_all(i) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "mean_all");
    CHECK(gad_variance(i, &ax, 1, 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "variance");
    CHECK(gad_stddev(i, &ax, 1, 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "stddev");
    CHECK(gad_sum(NULL, &ax, 1, 0) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "sum");
    CHECK(gad_sum_all(NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "sum_all");
    gad_scope_end();
}

/* >= 1M elements: full sum, sum over axis 0 and over the last axis, on
 * contiguous and strided inputs, bit-identical for 1, 2 and 3 threads. */
TEST(sum_large_threads) {
    gad_rng *rng = gad_rng_new(31337);
    int64_t s[] = {1031, 1021}; /* 1052651 elements */
    int64_t n = test_numel(s, 2);
    CHECK(n >= 1000000);
    const int kinds[] = {TEST_L_CONTIG, TEST_L_PERM, TEST_L_NEGSLICE};
    double *sum = malloc((size_t)n * sizeof *sum), *abss = malloc((size_t)n * sizeof *abss);
    for (int dt = GAD_F32; dt <= GAD_F64; dt++)
        for (int kc = 0; kc < 3; kc++) {
            if (kinds[kc] == TEST_L_NEGSLICE && dt == GAD_F64) continue;
            gad_scope_begin();
            double *v;
            gad_tensor *x = test_make_view(rng, kinds[kc], (gad_dtype_t)dt, s, 2, -1, 1.5, NULL,
                                           &v);
            const unsigned masks[] = {3, 1, 2};
            for (int mi = 0; mi < 3; mi++) {
                unsigned mask = masks[mi];
                int64_t cnt = naive_sum(v, s, 2, mask, sum, abss);
                int axes[2], na = 0;
                if (mask & 1) axes[na++] = 0;
                if (mask & 2) axes[na++] = -1;
                int64_t nout = mask == 3 ? 1 : mask == 1 ? s[1] : s[0];
                double worst = 0;
                for (int64_t o = 0; o < nout; o++) worst = abss[o] > worst ? abss[o] : worst;
                for (int mean = 0; mean <= 1; mean++) {
                    gad_tensor *y[3];
                    for (int th = 1; th <= 3; th++) {
                        gad_set_num_threads(th);
                        y[th - 1] = mask == 3 ? (mean ? gad_mean_all(x) : gad_sum_all(x))
                                  : mean ? gad_mean(x, axes, na, 0) : gad_sum(x, axes, na, 0);
                    }
                    gad_set_num_threads(0);
                    CHECK_OK();
                    double *ref = malloc((size_t)nout * sizeof *ref);
                    for (int64_t o = 0; o < nout; o++)
                        ref[o] = mean ? sum[o] / (double)cnt : sum[o];
                    double scale = mean ? worst / (double)cnt : worst;
                    CHECK_CLOSE(y[1], ref, nout, tol_sum((gad_dtype_t)dt) * (scale > 1 ? scale : 1),
                                "large %s %s %s mask %u", mean ? "mean" : "sum",
                                gad_dtype_name((gad_dtype_t)dt), test_layout_name(kinds[kc]), mask);
                    CHECK_MSG(test_same_bits(y[0], y[1]) && test_same_bits(y[0], y[2]),
                              "large %s mask %u %s: 1/2/3 threads differ",
                              mean ? "mean" : "sum", mask, test_layout_name(kinds[kc]));
                    free(ref);
                }
            }
            free(v);
            gad_scope_end();
        }
    /* a rank-3 case with interleaved kept and reduced axes */
    gad_scope_begin();
    int64_t s3[] = {64, 129, 130};
    double *v;
    gad_tensor *x = test_make_view(rng, TEST_L_CONTIG, GAD_F32, s3, 3, -1, 1, NULL, &v);
    const int ax02[] = {0, 2}, ax1[] = {1};
    const int *al[] = {ax02, ax1};
    const unsigned ml[] = {5, 2};
    for (int c = 0; c < 2; c++) {
        gad_tensor *y[2];
        for (int th = 1; th <= 2; th++) {
            gad_set_num_threads(th);
            y[th - 1] = gad_sum(x, al[c], c == 0 ? 2 : 1, 1);
        }
        gad_set_num_threads(0);
        naive_sum(v, s3, 3, ml[c], sum, abss);
        int64_t nout = gad_numel(y[0]);
        double worst = 0;
        for (int64_t o = 0; o < nout; o++) worst = abss[o] > worst ? abss[o] : worst;
        CHECK_CLOSE(y[1], sum, nout, 1e-6 * worst, "rank-3 large mask %u", ml[c]);
        CHECK(test_same_bits(y[0], y[1]));
    }
    free(v);
    gad_scope_end();
    free(sum);
    free(abss);
    gad_rng_free(rng);
}

/* ------------------------------------------------------- amax and argmax */

static void naive_amax(const double *v, axv w, double *mx, int64_t *arg) {
    for (int64_t o = 0; o < w.outer; o++)
        for (int64_t j = 0; j < w.inner; j++) {
            double m = -INFINITY;
            int64_t best = -1;
            for (int64_t i = 0; i < w.n; i++) {
                double e = AT(v, w, o, i, j);
                if (isnan(e)) continue;
                if (best < 0 || e > m) {
                    m = e;
                    best = i;
                }
            }
            mx[o * w.inner + j] = m;
            arg[o * w.inner + j] = best < 0 ? 0 : best;
        }
}

TEST(amax_argmax_every_axis) {
    gad_rng *rng = gad_rng_new(8);
    for (int si = 0; si < N_SHAPES; si++) {
        int r = (int)SHAPES[si][0];
        const int64_t *s = &SHAPES[si][1];
        char ss[64];
        test_shape_str(ss, sizeof ss, s, r);
        for (int dt = GAD_F32; dt <= GAD_F64; dt++)
            for (int k = 0; k < TEST_L_COUNT; k++)
                for (int special = 0; special <= 1; special++) {
                    gad_scope_begin();
                    double *v;
                    gad_tensor *x = test_make_view(rng, k, (gad_dtype_t)dt, s, r, -5, 5,
                                                   special ? special_base : NULL, &v);
                    for (int a = -r; a < r; a++) {
                        int an = a < 0 ? a + r : a;
                        axv w = axis_view(s, r, an);
                        int64_t nout = w.outer * w.inner;
                        for (int keep = 0; keep <= 1; keep++) {
                            int64_t os[GAD_MAX_RANK];
                            int orank = red_shape(s, r, 1u << an, keep, os);
                            gad_tensor *ym = gad_amax(x, a, keep);
                            gad_tensor *yi = gad_argmax(x, a, keep);
                            if (w.n == 0) { /* an empty axis has no identity */
                                CHECK(ym == NULL);
                                CHECK_ERR(GAD_ERR_SHAPE, "amax");
                                CHECK(yi == NULL);
                                CHECK(gad_argmax(x, a, keep) == NULL);
                                CHECK_ERR(GAD_ERR_SHAPE, "argmax");
                                continue;
                            }
                            CHECK_OK();
                            double *mx = malloc((size_t)(nout + 1) * sizeof *mx);
                            int64_t *arg = malloc((size_t)(nout + 1) * sizeof *arg);
                            naive_amax(v, w, mx, arg);
                            CHECK_MSG(test_same_shape(ym, os, orank) &&
                                          test_same_shape(yi, os, orank),
                                      "amax/argmax %s axis %d keep %d shape", ss, a, keep);
                            CHECK(ym && (int)gad_dtype(ym) == dt);
                            CHECK(yi && gad_dtype(yi) == GAD_I64);
                            CHECK_CLOSE(ym, mx, nout, 0, "amax %s %s(%s%s) axis %d keep %d",
                                        gad_dtype_name((gad_dtype_t)dt), ss, test_layout_name(k),
                                        special ? ", NaN/-inf/ties" : "", a, keep);
                            int64_t *got = malloc((size_t)(nout + 1) * sizeof *got);
                            if (yi) gad_read_i64(yi, got, (size_t)nout);
                            int bad = 0;
                            for (int64_t o = 0; yi && o < nout; o++) bad += got[o] != arg[o];
                            CHECK_MSG(yi && bad == 0, "argmax %s %s(%s%s) axis %d: %d wrong",
                                      gad_dtype_name((gad_dtype_t)dt), ss, test_layout_name(k),
                                      special ? ", NaN/-inf/ties" : "", a, bad);
                            free(got);
                            free(mx);
                            free(arg);
                        }
                    }
                    free(v);
                    gad_scope_end();
                }
    }
    gad_rng_free(rng);
}

TEST(amax_argmax_cases) {
    gad_scope_begin();
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        gad_dtype_t d = (gad_dtype_t)dt;
        int64_t s3[] = {3};
        const double a[] = {1, NAN, 0.5};
        gad_tensor *t = gad_cast(gad_from_f64(a, s3, 1), d);
        gad_tensor *y = gad_amax(t, 0, 0);
        CHECK(y && gad_rank(y) == 0);
        CHECK(gad_item(y) == 1);
        CHECK(gad_item(gad_argmax(t, -1, 0)) == 0);
        y = gad_amax(t, 0, 1);
        CHECK_SHAPE(y, 1);

        int64_t s34[] = {3, 4};
        const double b[] = {NAN, NAN, NAN, NAN,          /* all NaN */
                            2, 7, 7, NAN,                /* tie: first */
                            -INFINITY, NAN, -INFINITY, -INFINITY};
        t = gad_cast(gad_from_f64(b, s34, 2), d);
        CHECK_VALUES(gad_amax(t, 1, 0), 0, -INFINITY, 7, -INFINITY);
        y = gad_argmax(t, 1, 0);
        CHECK(y && gad_dtype(y) == GAD_I64);
        CHECK_SHAPE(y, 3);
        CHECK_VALUES(y, 0, 0, 1, 0);
        y = gad_argmax(t, 1, 1);
        CHECK_SHAPE(y, 3, 1);
        CHECK_VALUES(y, 0, 0, 1, 0);
        CHECK_VALUES(gad_amax(t, 0, 0), 0, 2, 7, 7, -INFINITY);
        CHECK_VALUES(gad_argmax(t, 0, 0), 0, 1, 1, 1, 2);
        y = gad_amax(t, -2, 1);
        CHECK_SHAPE(y, 1, 4);
        /* NaN never wins even when it comes first */
        const double c[] = {NAN, -5, -3, -3};
        int64_t s4[] = {4};
        t = gad_cast(gad_from_f64(c, s4, 1), d);
        CHECK(gad_item(gad_argmax(t, 0, 0)) == 2);
        CHECK(gad_item(gad_amax(t, 0, 0)) == -3);
        /* +inf wins */
        const double e[] = {1, INFINITY, NAN, 3};
        t = gad_cast(gad_from_f64(e, s4, 1), d);
        CHECK(gad_item(gad_argmax(t, 0, 0)) == 1);
        CHECK(gad_item(gad_amax(t, 0, 0)) == INFINITY);
        CHECK_OK();

        /* errors */
        int64_t s30[] = {3, 0};
        gad_tensor *z = gad_zeros(s30, 2, d);
        CHECK(gad_amax(z, 1, 0) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "amax");
        CHECK(gad_argmax(z, -1, 0) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "argmax");
        y = gad_amax(z, 0, 0); /* the other axis is fine: shape [0] */
        CHECK_SHAPE(y, 0);
        CHECK_OK();
        CHECK(gad_amax(gad_scalar(1, d), 0, 0) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "amax");
        CHECK(gad_argmax(gad_scalar(1, d), 0, 0) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "argmax");
        CHECK(gad_amax(gad_scalar(1, d), -1, 1) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "amax");
        CHECK(gad_amax(t, 1, 0) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "amax");
        CHECK(gad_amax(t, -2, 0) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "amax");
    }
    int64_t s2[] = {2, 2};
    CHECK(gad_amax(gad_ones(s2, 2, GAD_I64), 0, 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "amax");
    CHECK(gad_amax(NULL, 0, 0) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "amax");
    gad_scope_end();
}

/* ---------------------------------------------------- variance, stddev */

TEST(variance_stddev) {
    gad_scope_begin();
    const double v4[] = {1, 2, 3, 4};
    int64_t s22[] = {2, 2};
    int ax0 = 0;
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        gad_tensor *x = gad_cast(gad_from_f64(v4, s22, 2), (gad_dtype_t)dt);
        int all[] = {0, 1};
        gad_tensor *y = gad_variance(x, all, 2, 0);
        CHECK(y && gad_rank(y) == 0);
        CHECK_NEAR(gad_item(y), 1.25, 1e-7);
        y = gad_stddev(x, &ax0, 1, 1);
        CHECK_SHAPE(y, 1, 2);
        CHECK_VALUES(y, 1e-7, 1, 1);
        y = gad_stddev(x, all, 2, 1);
        CHECK_SHAPE(y, 1, 1);
        CHECK_VALUES(y, 1e-7, sqrt(1.25));
        /* n = 0: no axis reduced, every deviation is 0 */
        CHECK_VALUES(gad_variance(x, NULL, 0, 0), 0, 0, 0, 0, 0);
        CHECK_VALUES(gad_stddev(x, NULL, 0, 1), 0, 0, 0, 0, 0);
        /* a constant slice has variance exactly 0 */
        CHECK_VALUES(gad_variance(gad_full(s22, 2, (gad_dtype_t)dt, 0.1), all, 2, 0), 0, 0);
    }
    CHECK_OK();
    gad_scope_end();

    gad_rng *rng = gad_rng_new(4242);
    for (int si = 0; si < N_SHAPES; si++) {
        int r = (int)SHAPES[si][0];
        const int64_t *s = &SHAPES[si][1];
        if (test_numel(s, r) == 0) continue;
        char ss[64];
        test_shape_str(ss, sizeof ss, s, r);
        for (int dt = GAD_F32; dt <= GAD_F64; dt++)
            for (int k = 0; k < TEST_L_COUNT; k++) {
                gad_scope_begin();
                double *v;
                gad_tensor *x = test_make_view(rng, k, (gad_dtype_t)dt, s, r, -2, 3, NULL, &v);
                int64_t nx = test_numel(s, r);
                double *mu = malloc((size_t)nx * sizeof *mu), *abss = malloc((size_t)nx * sizeof *abss);
                double *var = malloc((size_t)nx * sizeof *var), *sd = malloc((size_t)nx * sizeof *sd);
                double *dev = malloc((size_t)nx * sizeof *dev);
                for (unsigned mask = 0; mask < (1u << r); mask++) {
                    int64_t ks[GAD_MAX_RANK], idx[GAD_MAX_RANK], ki[GAD_MAX_RANK];
                    int kr = red_shape(s, r, mask, 0, ks);
                    int64_t nout = test_numel(ks, kr);
                    /* two passes: the mean, then the mean squared deviation */
                    int64_t cnt = naive_sum(v, s, r, mask, mu, abss);
                    for (int64_t o = 0; o < nout; o++) mu[o] /= (double)cnt;
                    for (int64_t f = 0; f < nx; f++) {
                        test_unflat(f, s, r, idx);
                        int kk = 0;
                        for (int d = 0; d < r; d++)
                            if (!(mask & (1u << d))) ki[kk++] = idx[d];
                        double e = v[f] - mu[test_flat(ki, ks, kr)];
                        dev[f] = e * e;
                    }
                    naive_sum(dev, s, r, mask, var, abss);
                    for (int64_t o = 0; o < nout; o++) {
                        var[o] /= (double)cnt;
                        sd[o] = sqrt(var[o]);
                    }
                    for (int keep = 0; keep <= 1; keep++) {
                        int axes[GAD_MAX_RANK];
                        int na = axes_from_mask(mask, r, (int)mask * 3 + keep, axes);
                        int64_t os[GAD_MAX_RANK];
                        int orank = red_shape(s, r, mask, keep, os);
                        gad_tensor *yv = gad_variance(x, axes, na, keep);
                        gad_tensor *ys = gad_stddev(x, axes, na, keep);
                        CHECK_OK();
                        CHECK_MSG(test_same_shape(yv, os, orank) && test_same_shape(ys, os, orank),
                                  "variance %s mask %u keep %d shape", ss, mask, keep);
                        double tol = dt == GAD_F32 ? 2e-6 : 1e-13;
                        CHECK_CLOSE(yv, var, nout, tol, "variance %s %s(%s) mask %u keep %d",
                                    gad_dtype_name((gad_dtype_t)dt), ss, test_layout_name(k),
                                    mask, keep);
                        CHECK_CLOSE(ys, sd, nout, dt == GAD_F32 ? 2e-6 : 1e-12,
                                    "stddev %s %s(%s) mask %u keep %d",
                                    gad_dtype_name((gad_dtype_t)dt), ss, test_layout_name(k),
                                    mask, keep);
                    }
                }
                free(mu);
                free(abss);
                free(var);
                free(sd);
                free(dev);
                free(v);
                gad_scope_end();
            }
    }
    gad_rng_free(rng);
}

/* ------------------------------------------------------------ logsumexp */

/* Stable naive logsumexp of slice (o, j). */
static double naive_lse(const double *v, axv w, int64_t o, int64_t j) {
    double m = -INFINITY;
    for (int64_t i = 0; i < w.n; i++) {
        double e = AT(v, w, o, i, j);
        if (e > m) m = e;
    }
    if (m == -INFINITY) return -INFINITY;
    double s = 0;
    for (int64_t i = 0; i < w.n; i++) s += exp(AT(v, w, o, i, j) - m);
    return m + log(s);
}

TEST(logsumexp_cases) {
    gad_scope_begin();
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        gad_dtype_t d = (gad_dtype_t)dt;
        const double a[] = {1, 2, 3, 4};
        int64_t s22[] = {2, 2};
        gad_tensor *x = gad_cast(gad_from_f64(a, s22, 2), d);
        gad_tensor *y = gad_logsumexp(x, -1, 0);
        CHECK_SHAPE(y, 2);
        CHECK_VALUES(y, 2e-7, 2.3132617, 4.3132615);
        y = gad_logsumexp(x, 1, 1);
        CHECK_SHAPE(y, 2, 1);
        CHECK_VALUES(y, 2e-7, 2.3132617, 4.3132615);
        y = gad_logsumexp(x, 0, 0);
        CHECK_VALUES(y, 2e-7, 3 + log1p(exp(-2)), 4 + log1p(exp(-2)));
        /* large values do not overflow, tiny ones do not underflow */
        const double big[] = {1000, 1000, -1000, -1000, 1000, -INFINITY,
                              -INFINITY, -INFINITY, 88, 89};
        int64_t s52[] = {5, 2};
        x = gad_cast(gad_from_f64(big, s52, 2), d);
        y = gad_logsumexp(x, 1, 0);
        CHECK_VALUES(y, dt == GAD_F32 ? 1e-4 : 1e-12, 1000 + log(2), -1000 + log(2),
                     1000, -INFINITY, 89 + log1p(exp(-1)));
        /* rank 1 to rank 0 */
        int64_t s3[] = {3};
        const double c[] = {-INFINITY, 0, -INFINITY};
        y = gad_logsumexp(gad_cast(gad_from_f64(c, s3, 1), d), 0, 0);
        CHECK(y && gad_rank(y) == 0);
        CHECK(gad_item(y) == 0);
        CHECK_OK();
        /* over an empty axis: log(0) = -inf, as torch.logsumexp; its
         * gradient is an empty tensor */
        int64_t s20[] = {2, 0};
        gad_tensor *z = gad_requires_grad(gad_zeros(s20, 2, d));
        y = gad_logsumexp(z, 1, 0);
        CHECK_SHAPE(y, 2);
        CHECK_VALUES(y, 0, -INFINITY, -INFINITY);
        CHECK_SHAPE(gad_logsumexp(z, -1, 1), 2, 1);
        CHECK_VALUES(gad_logsumexp(z, -1, 1), 0, -INFINITY, -INFINITY);
        gad_tensor *gz = NULL;
        CHECK(y && gad_grad(gad_sum_all(y), &z, 1, &gz) == GAD_OK);
        CHECK_SHAPE(gz, 2, 0);
        CHECK_OK();
        /* errors */
        CHECK(gad_logsumexp(gad_scalar(1, d), 0, 0) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "logsumexp");
        CHECK(gad_logsumexp(x, 2, 0) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "logsumexp");
        CHECK_SHAPE(gad_logsumexp(gad_zeros(s20, 2, d), 0, 0), 0);
        CHECK_OK();
    }
    int64_t s2[] = {2};
    CHECK(gad_logsumexp(gad_ones(s2, 1, GAD_I64), 0, 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "logsumexp");
    gad_scope_end();
}

TEST(logsumexp_every_axis) {
    gad_rng *rng = gad_rng_new(55);
    for (int si = 0; si < N_SHAPES; si++) {
        int r = (int)SHAPES[si][0];
        const int64_t *s = &SHAPES[si][1];
        char ss[64];
        test_shape_str(ss, sizeof ss, s, r);
        for (int dt = GAD_F32; dt <= GAD_F64; dt++)
            for (int k = 0; k < TEST_L_COUNT; k++)
                for (int scale = 0; scale <= 1; scale++) {
                    gad_scope_begin();
                    double *v;
                    double lo = scale ? 500 : -4, hi = scale ? 1200 : 4;
                    gad_tensor *x = test_make_view(rng, k, (gad_dtype_t)dt, s, r, lo, hi, NULL, &v);
                    for (int a = -r; a < r; a++) {
                        int an = a < 0 ? a + r : a;
                        axv w = axis_view(s, r, an);
                        if (w.n == 0) continue;
                        int64_t nout = w.outer * w.inner;
                        double *ref = malloc((size_t)(nout + 1) * sizeof *ref);
                        for (int64_t o = 0; o < w.outer; o++)
                            for (int64_t j = 0; j < w.inner; j++)
                                ref[o * w.inner + j] = naive_lse(v, w, o, j);
                        for (int keep = 0; keep <= 1; keep++) {
                            int64_t os[GAD_MAX_RANK];
                            int orank = red_shape(s, r, 1u << an, keep, os);
                            gad_tensor *y = gad_logsumexp(x, a, keep);
                            CHECK_OK();
                            CHECK_MSG(test_same_shape(y, os, orank), "logsumexp %s axis %d keep %d",
                                      ss, a, keep);
                            CHECK_CLOSE(y, ref, nout, dt == GAD_F32 ? 1e-6 : 1e-14,
                                        "logsumexp %s %s(%s) on [%g,%g) axis %d keep %d",
                                        gad_dtype_name((gad_dtype_t)dt), ss, test_layout_name(k),
                                        lo, hi, a, keep);
                        }
                        free(ref);
                    }
                    free(v);
                    gad_scope_end();
                }
    }
    gad_rng_free(rng);
}

/* -------------------------------------------------- softmax, log_softmax */

static void naive_softmax(const double *v, axv w, double *p, double *lp) {
    for (int64_t o = 0; o < w.outer; o++)
        for (int64_t j = 0; j < w.inner; j++) {
            double m = -INFINITY;
            for (int64_t i = 0; i < w.n; i++)
                if (AT(v, w, o, i, j) > m) m = AT(v, w, o, i, j);
            double s = 0;
            for (int64_t i = 0; i < w.n; i++) s += exp(AT(v, w, o, i, j) - m);
            for (int64_t i = 0; i < w.n; i++) {
                double e = AT(v, w, o, i, j) - m;
                AT(p, w, o, i, j) = exp(e) / s;
                AT(lp, w, o, i, j) = e - log(s);
            }
        }
}

TEST(softmax_every_axis) {
    gad_rng *rng = gad_rng_new(606);
    for (int si = 0; si < N_SHAPES; si++) {
        int r = (int)SHAPES[si][0];
        const int64_t *s = &SHAPES[si][1];
        char ss[64];
        test_shape_str(ss, sizeof ss, s, r);
        int64_t nx = test_numel(s, r);
        for (int dt = GAD_F32; dt <= GAD_F64; dt++)
            for (int k = 0; k < TEST_L_COUNT; k++) {
                gad_scope_begin();
                double *v;
                gad_tensor *x = test_make_view(rng, k, (gad_dtype_t)dt, s, r, -4, 4, NULL, &v);
                double *p = malloc((size_t)(nx + 1) * sizeof *p);
                double *lp = malloc((size_t)(nx + 1) * sizeof *lp);
                for (int a = -r; a < r; a++) {
                    int an = a < 0 ? a + r : a;
                    axv w = axis_view(s, r, an);
                    gad_tensor *ys = gad_softmax(x, a), *yl = gad_log_softmax(x, a);
                    if (w.n == 0) {
                        CHECK(ys == NULL && yl == NULL);
                        CHECK_ERR(GAD_ERR_SHAPE, "softmax");
                        CHECK(gad_log_softmax(x, a) == NULL);
                        CHECK_ERR(GAD_ERR_SHAPE, "log_softmax");
                        continue;
                    }
                    CHECK_OK();
                    naive_softmax(v, w, p, lp);
                    CHECK_MSG(test_same_shape(ys, s, r) && test_same_shape(yl, s, r),
                              "softmax %s axis %d shape", ss, a);
                    CHECK(ys && (int)gad_dtype(ys) == dt && gad_is_contiguous(ys));
                    double tol = dt == GAD_F32 ? 1e-6 : 1e-14;
                    CHECK_CLOSE(ys, p, nx, tol, "softmax %s %s(%s) axis %d",
                                gad_dtype_name((gad_dtype_t)dt), ss, test_layout_name(k), a);
                    CHECK_CLOSE(yl, lp, nx, tol, "log_softmax %s %s(%s) axis %d",
                                gad_dtype_name((gad_dtype_t)dt), ss, test_layout_name(k), a);
                    /* every slice sums to 1 */
                    gad_tensor *tot = gad_sum(ys, &a, 1, 0);
                    int64_t no = w.outer * w.inner;
                    double *ones = malloc((size_t)(no + 1) * sizeof *ones);
                    for (int64_t o = 0; o < no; o++) ones[o] = 1;
                    CHECK_CLOSE(tot, ones, no, dt == GAD_F32 ? 1e-6 : 1e-14,
                                "softmax %s axis %d sums to 1", ss, a);
                    free(ones);
                    /* log_softmax = log(softmax) */
                    double *lg = malloc((size_t)(nx + 1) * sizeof *lg);
                    gad_read_f64(gad_log(ys), lg, (size_t)nx);
                    CHECK_CLOSE(yl, lg, nx, dt == GAD_F32 ? 2e-6 : 1e-13,
                                "log_softmax = log(softmax) %s axis %d", ss, a);
                    free(lg);
                }
                free(p);
                free(lp);
                free(v);
                gad_scope_end();
            }
    }
    gad_rng_free(rng);
}

TEST(softmax_cases) {
    gad_scope_begin();
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        gad_dtype_t d = (gad_dtype_t)dt;
        /* large magnitudes stay finite */
        const double a[] = {1000, 999, -1000, -1000, -999, -1000};
        int64_t s23[] = {2, 3};
        gad_tensor *x = gad_cast(gad_from_f64(a, s23, 2), d);
        double e1 = exp(-1);
        CHECK_VALUES(gad_softmax(x, 1), 1e-7, 1 / (1 + e1), e1 / (1 + e1), 0,
                     1 / (2 + exp(1)), exp(1) / (2 + exp(1)), 1 / (2 + exp(1)));
        CHECK_VALUES(gad_log_softmax(x, 1), dt == GAD_F32 ? 1e-4 : 1e-12,
                     -log1p(e1), -1 - log1p(e1), -2000 - log1p(e1),
                     -log(2 + exp(1)), 1 - log(2 + exp(1)), -log(2 + exp(1)));
        CHECK_VALUES(gad_softmax(x, 0), 1e-7, 1, 1, 0.5, 0, 0, 0.5);
        const double b[] = {1000, 1000};
        int64_t s2[] = {2};
        gad_tensor *xb = gad_cast(gad_from_f64(b, s2, 1), d);
        CHECK_VALUES(gad_log_softmax(xb, 0), 1e-7, -log(2), -log(2));
        CHECK_VALUES(gad_softmax(xb, -1), 1e-7, 0.5, 0.5);
        /* -inf entries get probability 0 */
        const double c[] = {0, -INFINITY, 1, -INFINITY, -INFINITY, 5};
        x = gad_cast(gad_from_f64(c, s23, 2), d);
        double e = exp(1);
        CHECK_VALUES(gad_softmax(x, 1), 1e-7, 1 / (1 + e), 0, e / (1 + e), 0, 0, 1);
        CHECK_VALUES(gad_log_softmax(x, -1), 1e-6, -log1p(e), -INFINITY,
                     1 - log1p(e), -INFINITY, -INFINITY, 0);
        /* a NaN poisons its own slice only (as in NumPy and PyTorch) */
        const double nn[] = {1, NAN, 2, 0, 0, 0};
        x = gad_cast(gad_from_f64(nn, s23, 2), d);
        CHECK_VALUES(gad_softmax(x, 1), 1e-7, NAN, NAN, NAN, 1. / 3, 1. / 3, 1. / 3);
        CHECK_VALUES(gad_log_softmax(x, 1), 1e-6, NAN, NAN, NAN, -log(3), -log(3), -log(3));
        CHECK_VALUES(gad_logsumexp(x, 1, 0), 1e-6, NAN, log(3));
        CHECK_VALUES(gad_softmax(x, 0), 1e-7, 1 / (1 + exp(-1)), NAN, 1 / (1 + exp(-2)),
                     1 / (1 + e), NAN, 1 / (1 + exp(2)));
        /* +inf: PyTorch's softmax is exp(x - max) * (1 / sum) with the max
         * subtracted (aten/src/ATen/native/cpu/SoftMaxKernel.cpp), so
         * softmax([inf, 0]) is [exp(nan), exp(-inf)] * (1 / nan) =
         * [nan, 0 * nan] = [nan, nan] (pytorch issue 6864; jax gives the
         * same). SciPy's [nan, 0] comes from exp(x - logsumexp(x)) instead,
         * which gad does not follow. log_softmax is [nan, nan] too. */
        const double pinf[] = {INFINITY, 0, 0, INFINITY};
        x = gad_cast(gad_from_f64(pinf, s2, 1), d);
        CHECK_VALUES(gad_softmax(x, 0), 0, NAN, NAN);
        CHECK_VALUES(gad_log_softmax(x, 0), 0, NAN, NAN);
        int64_t s22[] = {2, 2};
        x = gad_cast(gad_from_f64(pinf, s22, 2), d);
        CHECK_VALUES(gad_softmax(x, 1), 0, NAN, NAN, NAN, NAN);
        CHECK_VALUES(gad_softmax(x, 0), 0, NAN, NAN, NAN, NAN);
        CHECK_OK();
        /* errors */
        int64_t s30[] = {3, 0};
        gad_tensor *z = gad_zeros(s30, 2, d);
        CHECK(gad_softmax(z, 1) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "softmax");
        CHECK(gad_log_softmax(z, -1) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "log_softmax");
        CHECK_SHAPE(gad_softmax(z, 0), 3, 0);
        CHECK_OK();
        CHECK(gad_softmax(x, 2) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "softmax");
        CHECK(gad_log_softmax(x, -3) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "log_softmax");
        CHECK(gad_softmax(gad_scalar(1, d), 0) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "softmax");
    }
    int64_t s2[] = {2};
    CHECK(gad_softmax(gad_ones(s2, 1, GAD_I64), 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "softmax");
    CHECK(gad_log_softmax(gad_ones(s2, 1, GAD_I64), 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "log_softmax");
    CHECK(gad_softmax(NULL, 0) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "softmax");
    gad_scope_end();
}

/* Large softmax / amax / logsumexp: same bits for 1 and 2 threads. */
TEST(axis_ops_large_threads) {
    gad_rng *rng = gad_rng_new(12);
    int64_t s[] = {517, 411};
    int64_t n = test_numel(s, 2);
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        gad_scope_begin();
        double *v;
        gad_tensor *x = test_make_view(rng, TEST_L_PERM, (gad_dtype_t)dt, s, 2, -6, 6, NULL, &v);
        double *p = malloc((size_t)n * sizeof *p), *lp = malloc((size_t)n * sizeof *lp);
        for (int a = 0; a < 2; a++) {
            gad_tensor *y1[4], *y2[4];
            for (int th = 1; th <= 2; th++) {
                gad_tensor **y = th == 1 ? y1 : y2;
                gad_set_num_threads(th);
                y[0] = gad_softmax(x, a);
                y[1] = gad_log_softmax(x, a);
                y[2] = gad_amax(x, a, 0);
                y[3] = gad_logsumexp(x, a, 1);
            }
            gad_set_num_threads(0);
            for (int i = 0; i < 4; i++)
                CHECK_MSG(test_same_bits(y1[i], y2[i]), "axis op %d axis %d: threads differ", i, a);
            naive_softmax(v, axis_view(s, 2, a), p, lp);
            CHECK_CLOSE(y2[0], p, n, dt == GAD_F32 ? 1e-6 : 1e-14, "large softmax axis %d", a);
            CHECK_CLOSE(y2[1], lp, n, dt == GAD_F32 ? 1e-6 : 1e-14, "large log_softmax axis %d", a);
        }
        free(p);
        free(lp);
        free(v);
        gad_scope_end();
    }
    gad_rng_free(rng);
}

int main(void) {
    gad_mem_stats m0, m1;
    gad_mem_stats_get(&m0);
    RUN(sum_mean_every_subset);
    RUN(sum_mean_empty_and_rank0);
    RUN(sum_mean_errors);
    RUN(sum_of_broadcast_views);
    RUN(sum_large_threads);
    RUN(amax_argmax_every_axis);
    RUN(amax_argmax_cases);
    RUN(variance_stddev);
    RUN(logsumexp_cases);
    RUN(logsumexp_every_axis);
    RUN(softmax_every_axis);
    RUN(softmax_cases);
    RUN(axis_ops_large_threads);
    gad_mem_stats_get(&m1);
    CHECK(gad_scope_depth() == 0);
    CHECK_MSG(m1.live_tensors == m0.live_tensors && m1.live_storages == m0.live_storages,
              "leaked %lld tensors, %lld storages",
              (long long)(m1.live_tensors - m0.live_tensors),
              (long long)(m1.live_storages - m0.live_storages));
    return test_summary();
}
