/* test_sort.c: sort, argsort, topk, argmin, cumsum and cumprod against
 * brute force on every path of their kernels (insertion and radix sorts,
 * the top-k heap and full sort, lanes of the running sums), cumprod's
 * gradient with zeros against its definition, and the sampling ops:
 * multinomial and gad_sample_logits checked by a chi-square goodness-of-fit
 * test at a fixed seed, the top-k / top-p masks exactly, draws the same for
 * a seed on one thread and on two; the i64 and bool paths (sort, argsort,
 * topk, argmin, argmax, cumsum, cumprod, clamp_tensor) exactly against
 * integer references. (Gradients: the registry's gradcheck; values
 * against PyTorch: test_reference.) */
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

/* PyTorch's order: NaN above everything, -0 equal to +0. */
static int before(double a, double b, int desc) {
    if (desc) {
        if (isnan(a)) return !isnan(b);
        return !isnan(b) && a > b;
    }
    if (isnan(a)) return 0;
    return isnan(b) || a < b;
}

/* A stable insertion sort of positions 0..n-1 of v (stride s). */
static void ref_argsort(const double *v, int64_t n, int64_t s, int desc, int64_t *ix) {
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i;
        while (j > 0 && before(v[i * s], v[ix[j - 1] * s], desc)) {
            ix[j] = ix[j - 1];
            j--;
        }
        ix[j] = i;
    }
}

/* Values from a small set (ties), with NaN, +-0 and +-inf among them. */
static gad_tensor *tie_values(gad_rng *r, const int64_t *shape, int rank, gad_dtype_t dt) {
    static const double pool[] = {NAN, -0.0, 0.0, INFINITY, -INFINITY, 1.5, -2.25, 3, 1e-30, -7};
    int64_t n = test_numel(shape, rank);
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = gad_rng_next(r);
        v[i] = u % 3 ? (double)(int64_t)(u >> 40) / 1024.0 - 8000 : pool[(u >> 8) % 10];
    }
    gad_tensor *t = gad_cast(gad_from_f64(v, shape, rank), dt);
    free(v);
    return t;
}

/* x seen as [outer, n, inner] around axis */
static void dims3(const int64_t *s, int rank, int axis, int64_t *o, int64_t *n, int64_t *in) {
    *o = *in = 1;
    for (int d = 0; d < axis; d++) *o *= s[d];
    for (int d = axis + 1; d < rank; d++) *in *= s[d];
    *n = s[axis];
}

static int same_value(double a, double b) {
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

/* ---------------------------------------------------------------- sort */

typedef struct shape_case {
    int rank;
    int64_t s[3];
} shape_case;

static const shape_case sort_shapes[] = {
    {1, {40}}, {1, {1000}}, {3, {3, 70, 5}}, {2, {64, 300}}, {2, {5, 1}}, {1, {49}}};

TEST(sort_matches_a_stable_reference) {
    gad_rng *r = gad_rng_new(1);
    int cases = 0;
    for (size_t c = 0; c < sizeof sort_shapes / sizeof sort_shapes[0]; c++)
        for (int dt = 0; dt < 2; dt++)
            for (int axis = 0; axis < sort_shapes[c].rank; axis++)
                for (int desc = 0; desc < 2; desc++) {
                    gad_scope_begin();
                    const int64_t *s = sort_shapes[c].s;
                    int rank = sort_shapes[c].rank;
                    gad_tensor *x = tie_values(r, s, rank, dt ? GAD_F64 : GAD_F32), *ix;
                    gad_tensor *v = gad_sort(x, axis - rank, desc, &ix);
                    gad_tensor *ia = gad_argsort(x, axis, desc);
                    CHECK_MSG(v && ix && ia, "sort: %s",
                              gad_last_error() ? gad_last_error()->text : "");
                    if (!v || !ix || !ia) {
                        gad_scope_end();
                        continue;
                    }
                    double *xv = test_read_all(x), *vv = test_read_all(v);
                    double *iv = test_read_all(ix), *av = test_read_all(ia);
                    int64_t o, n, in, bad = 0;
                    dims3(s, rank, axis, &o, &n, &in);
                    int64_t *want = malloc((size_t)n * sizeof *want);
                    for (int64_t p = 0; p < o * in; p++) {
                        int64_t base = (p / in) * n * in + p % in;
                        ref_argsort(xv + base, n, in, desc, want);
                        for (int64_t i = 0; i < n; i++) {
                            int64_t k = base + i * in;
                            bad += iv[k] != (double)want[i] || av[k] != (double)want[i] ||
                                   !same_value(vv[k], xv[base + want[i] * in]);
                        }
                    }
                    CHECK_MSG(bad == 0, "sort shape #%zu %s axis %d desc %d: %lld wrong", c,
                              dt ? "f64" : "f32", axis, desc, (long long)bad);
                    free(want);
                    free(xv), free(vv), free(iv), free(av);
                    cases++;
                    gad_scope_end();
                }
    CHECK(cases == 40);
    gad_rng_free(r);
}

/* One long f32 row (the packed radix sort at full size): in order, stable,
 * a permutation, the values x's; the same bits on one thread. */
TEST(one_long_row) {
    int64_t n = TEST_SANITIZED ? 140000 : 600000;
    gad_rng *r = gad_rng_new(4);
    for (int desc = 0; desc < 2; desc++) {
        gad_scope_begin();
        gad_tensor *x = tie_values(r, &n, 1, GAD_F32), *ix, *ix1;
        gad_tensor *v = gad_sort(x, 0, desc, &ix);
        gad_set_num_threads(1);
        gad_tensor *v1 = gad_sort(x, 0, desc, &ix1);
        gad_set_num_threads(0);
        double *xv = test_read_all(x), *vv = test_read_all(v), *iv = test_read_all(ix);
        double *vv1 = test_read_all(v1), *iv1 = test_read_all(ix1);
        char *seen = calloc((size_t)n, 1);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t q = (int64_t)iv[i];
            bad += q < 0 || q >= n || seen[q] || !same_value(vv[i], xv[q]) ||
                   iv1[i] != iv[i] || !same_value(vv1[i], vv[i]);
            if (q >= 0 && q < n) seen[q] = 1;
            if (i > 0) {
                double a = vv[i - 1], b = vv[i];
                int tie = (isnan(a) && isnan(b)) || a == b;
                bad += before(b, a, desc) || (tie && iv[i - 1] > iv[i]);
            }
        }
        CHECK_MSG(bad == 0, "one row of %lld, desc %d: %lld wrong", (long long)n, desc,
                  (long long)bad);
        free(seen), free(xv), free(vv), free(iv), free(vv1), free(iv1);
        gad_scope_end();
    }
    gad_rng_free(r);
}

/* topk's k best are sort's first k (stable: ties to the lower position),
 * on the heap path (16 k <= n) and the full sort. */
TEST(topk_is_the_head_of_a_stable_sort) {
    gad_rng *r = gad_rng_new(2);
    static const int64_t ks[] = {1, 3, 20, 70, 300};
    for (size_t c = 0; c < sizeof sort_shapes / sizeof sort_shapes[0]; c++)
        for (int dt = 0; dt < 2; dt++)
            for (int axis = 0; axis < sort_shapes[c].rank; axis++)
                for (int largest = 0; largest < 2; largest++)
                    for (size_t kk = 0; kk < sizeof ks / sizeof ks[0]; kk++) {
                        const int64_t *s = sort_shapes[c].s;
                        int rank = sort_shapes[c].rank;
                        int64_t k = ks[kk], o, n, in;
                        dims3(s, rank, axis, &o, &n, &in);
                        if (k > n) continue;
                        gad_scope_begin();
                        gad_tensor *x = tie_values(r, s, rank, dt ? GAD_F64 : GAD_F32), *ti, *si;
                        gad_tensor *tv = gad_topk(x, k, axis, largest, 1, &ti);
                        gad_tensor *sv = gad_sort(x, axis, largest, &si);
                        gad_range rg[3] = {GAD_ALL, GAD_ALL, GAD_ALL};
                        rg[axis] = GAD_RANGE(0, k);
                        gad_tensor *hv = gad_slice(sv, rg, rank), *hi = gad_slice(si, rg, rank);
                        double *a = test_read_all(tv), *b = test_read_all(hv);
                        double *ai = test_read_all(ti), *bi = test_read_all(hi);
                        int64_t m = gad_numel(hv), bad = gad_numel(tv) != m;
                        for (int64_t i = 0; !bad && i < m; i++)
                            bad += !same_value(a[i], b[i]) || ai[i] != bi[i];
                        CHECK_MSG(bad == 0, "topk shape #%zu %s axis %d k %lld largest %d", c,
                                  dt ? "f64" : "f32", axis, (long long)k, largest);
                        free(a), free(b), free(ai), free(bi);
                        gad_scope_end();
                    }
    gad_rng_free(r);
}

TEST(argmin_first_minimum_or_first_nan) {
    gad_rng *r = gad_rng_new(3);
    int64_t s[3] = {4, 33, 70};
    for (int dt = 0; dt < 2; dt++)
        for (int axis = 0; axis < 3; axis++) {
            gad_scope_begin();
            gad_tensor *x = tie_values(r, s, 3, dt ? GAD_F64 : GAD_F32);
            gad_tensor *y = gad_argmin(x, axis, 0);
            double *xv = test_read_all(x), *yv = test_read_all(y);
            int64_t o, n, in, bad = 0;
            dims3(s, 3, axis, &o, &n, &in);
            for (int64_t p = 0; p < o * in; p++) {
                int64_t base = (p / in) * n * in + p % in, best = 0;
                for (int64_t i = 1; i < n && !isnan(xv[base + best * in]); i++) {
                    double v = xv[base + i * in];
                    if (isnan(v) || v < xv[base + best * in]) best = i;
                }
                bad += yv[p] != (double)best;
            }
            CHECK_MSG(bad == 0, "argmin %s axis %d: %lld wrong", dt ? "f64" : "f32", axis,
                      (long long)bad);
            free(xv), free(yv);
            gad_scope_end();
        }
    gad_rng_free(r);
}

/* ------------------------------------------------------- cumsum, cumprod */

TEST(cumsum_cumprod_match_running_loops) {
    int64_t s[3] = {3, 5, 130}; /* inner 130: two full lanes and a part */
    for (int dt = 0; dt < 2; dt++)
        for (int axis = 0; axis < 3; axis++)
            for (int prod = 0; prod < 2; prod++) {
                gad_scope_begin();
                int64_t n_all = test_numel(s, 3);
                double *xv = malloc((size_t)n_all * sizeof *xv);
                for (int64_t i = 0; i < n_all; i++)
                    xv[i] = prod ? (i % 7 == 3 ? 0.0 : 0.5 + (double)(i % 5) / 4)
                                 : (double)(i % 11) / 3 - 1.5;
                gad_tensor *x = gad_cast(gad_from_f64(xv, s, 3), dt ? GAD_F64 : GAD_F32);
                gad_tensor *y = prod ? gad_cumprod(x, axis) : gad_cumsum(x, axis);
                double *yv = test_read_all(y);
                int64_t o, n, in, bad = 0;
                dims3(s, 3, axis, &o, &n, &in);
                double tol = dt ? 1e-12 : 1e-6;
                for (int64_t p = 0; p < o * in; p++) {
                    int64_t base = (p / in) * n * in + p % in;
                    double acc = prod ? 1 : 0;
                    for (int64_t i = 0; i < n; i++) {
                        double xi = dt ? xv[base + i * in] : (double)(float)xv[base + i * in];
                        acc = prod ? acc * xi : acc + xi;
                        bad += !(fabs(yv[base + i * in] - acc) <= tol * (1 + fabs(acc)));
                    }
                }
                CHECK_MSG(bad == 0, "%s %s axis %d: %lld wrong", prod ? "cumprod" : "cumsum",
                          dt ? "f64" : "f32", axis, (long long)bad);
                free(xv), free(yv);
                gad_scope_end();
            }
}

/* ------------------------------------------------------- integer dtypes */

/* n i64 values from a small set (ties) with the extremes among them (kind
 * 0), ids in [-4096, 4096) (kind 1: keys spanning less than 2^32, the
 * packed radix sort), or bools (kind 2: 0 and 1). */
static int64_t *int_values(gad_rng *r, int64_t n, int kind) {
    static const int64_t pool[] = {INT64_MIN, INT64_MAX, -1, 0, 1, 256, -256, (int64_t)1 << 40};
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = gad_rng_next(r);
        v[i] = kind == 2 ? (int64_t)(u >> 7 & 1)
               : kind == 1 ? (int64_t)(u >> 51) - 4096
               : u % 3     ? (int64_t)(u >> 50) - 8000
                           : pool[(u >> 8) % 8];
    }
    return v;
}

static gad_tensor *int_tensor(const int64_t *v, const int64_t *s, int rank, int boolean) {
    gad_tensor *t = gad_from_i64(v, s, rank);
    return boolean ? gad_cast(t, GAD_BOOL) : t;
}

/* t's elements as i64 (a bool's as 0 and 1), exactly. */
static int64_t *read_ints(gad_tensor *t) {
    int64_t n = gad_numel(t);
    int64_t *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    gad_tensor *c = gad_dtype(t) == GAD_I64 ? t : gad_cast(t, GAD_I64);
    if (!c || gad_read_i64(c, v, (size_t)n) != GAD_OK) memset(v, 0xff, (size_t)n * sizeof *v);
    return v;
}

/* A stable insertion sort of positions 0..n-1 of integers v (stride s). */
static void ref_argsort_int(const int64_t *v, int64_t n, int64_t s, int desc, int64_t *ix) {
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i;
        while (j > 0 && (desc ? v[i * s] > v[ix[j - 1] * s] : v[i * s] < v[ix[j - 1] * s])) {
            ix[j] = ix[j - 1];
            j--;
        }
        ix[j] = i;
    }
}

/* sort and argsort of i64 and bool, and topk of i64, against a stable
 * reference on every kernel path (insertion, radix, heap); bool's topk,
 * argmin and argmax are refused, as PyTorch refuses them. */
TEST(int_sort_topk_match_a_stable_reference) {
    gad_rng *r = gad_rng_new(11);
    static const int64_t ks[] = {1, 3, 70};
    int cases = 0;
    for (size_t c = 0; c < sizeof sort_shapes / sizeof sort_shapes[0]; c++)
        for (int kind = 0; kind < 3; kind++)
            for (int axis = 0; axis < sort_shapes[c].rank; axis++)
                for (int desc = 0; desc < 2; desc++) {
                    int boolean = kind == 2;
                    gad_scope_begin();
                    const int64_t *s = sort_shapes[c].s;
                    int rank = sort_shapes[c].rank;
                    int64_t o, n, in, bad = 0, all = test_numel(s, rank);
                    dims3(s, rank, axis, &o, &n, &in);
                    int64_t *xv = int_values(r, all, kind);
                    gad_tensor *x = int_tensor(xv, s, rank, boolean), *ix;
                    gad_tensor *v = gad_sort(x, axis, desc, &ix);
                    gad_tensor *ia = gad_argsort(x, axis - rank, desc);
                    CHECK_MSG(v && ix && ia && gad_dtype(v) == gad_dtype(x) &&
                                  gad_dtype(ix) == GAD_I64 && gad_dtype(ia) == GAD_I64,
                              "int sort: %s", gad_last_error() ? gad_last_error()->text : "");
                    if (!v || !ix || !ia) {
                        free(xv);
                        gad_scope_end();
                        continue;
                    }
                    int64_t *vv = read_ints(v), *iv = read_ints(ix), *av = read_ints(ia);
                    int64_t *want = malloc((size_t)(n ? n : 1) * sizeof *want);
                    for (int64_t p = 0; p < o * in; p++) {
                        int64_t base = (p / in) * n * in + p % in;
                        ref_argsort_int(xv + base, n, in, desc, want);
                        for (int64_t i = 0; i < n; i++) {
                            int64_t q = base + i * in;
                            bad += iv[q] != want[i] || av[q] != want[i] ||
                                   vv[q] != xv[base + want[i] * in];
                        }
                    }
                    CHECK_MSG(bad == 0, "sort shape #%zu kind %d axis %d desc %d: %lld wrong", c,
                              kind, axis, desc, (long long)bad);
                    free(vv), free(iv), free(av);
                    for (size_t kk = 0; !boolean && kk < sizeof ks / sizeof ks[0]; kk++) {
                        int64_t k = ks[kk];
                        if (k > n) continue;
                        gad_tensor *ti, *tv = gad_topk(x, k, axis, desc, 1, &ti);
                        CHECK_MSG(tv && gad_dtype(tv) == GAD_I64, "topk i64: %s",
                                  gad_last_error() ? gad_last_error()->text : "");
                        if (!tv) continue;
                        int64_t *a = read_ints(tv), *ai = read_ints(ti), tb = 0;
                        for (int64_t p = 0; p < o * in; p++) {
                            int64_t base = (p / in) * n * in + p % in;
                            int64_t kb = (p / in) * k * in + p % in;
                            ref_argsort_int(xv + base, n, in, desc, want);
                            for (int64_t i = 0; i < k; i++)
                                tb += ai[kb + i * in] != want[i] ||
                                      a[kb + i * in] != xv[base + want[i] * in];
                        }
                        CHECK_MSG(tb == 0, "topk i64 shape #%zu axis %d k %lld largest %d", c,
                                  axis, (long long)k, desc);
                        free(a), free(ai);
                    }
                    if (boolean && c == 0 && axis == 0 && desc == 0) {
                        gad_tensor *ti;
                        CHECK(!gad_topk(x, 1, 0, 1, 1, &ti) && !ti);
                        CHECK_ERR(GAD_ERR_DTYPE, "topk");
                        CHECK(!gad_argmin(x, 0, 0));
                        CHECK_ERR(GAD_ERR_DTYPE, "argmin");
                        CHECK(!gad_argmax(x, 0, 0));
                        CHECK_ERR(GAD_ERR_DTYPE, "argmax");
                    }
                    free(want), free(xv);
                    cases++;
                    gad_scope_end();
                }
    CHECK(cases == 60);
    gad_rng_free(r);
}

/* argmin and argmax of i64: the first extreme along each axis. */
TEST(int_argmin_argmax_first_extreme) {
    gad_rng *r = gad_rng_new(12);
    int64_t s[3] = {4, 33, 70};
    int64_t *xv = int_values(r, test_numel(s, 3), 0);
    for (int axis = 0; axis < 3; axis++)
        for (int largest = 0; largest < 2; largest++) {
            gad_scope_begin();
            gad_tensor *x = gad_from_i64(xv, s, 3);
            gad_tensor *y = largest ? gad_argmax(x, axis, 1) : gad_argmin(x, axis - 3, 0);
            CHECK_MSG(y && gad_dtype(y) == GAD_I64 && gad_rank(y) == 3 - !largest, "%s: %s",
                      largest ? "argmax" : "argmin",
                      gad_last_error() ? gad_last_error()->text : "");
            if (!y) {
                gad_scope_end();
                continue;
            }
            int64_t *yv = read_ints(y), o, n, in, bad = 0;
            dims3(s, 3, axis, &o, &n, &in);
            for (int64_t p = 0; p < o * in; p++) {
                int64_t base = (p / in) * n * in + p % in, best = 0;
                for (int64_t i = 1; i < n; i++) {
                    int64_t v = xv[base + i * in], b = xv[base + best * in];
                    if (largest ? v > b : v < b) best = i;
                }
                bad += yv[p] != best;
            }
            CHECK_MSG(bad == 0, "%s i64 axis %d: %lld wrong", largest ? "argmax" : "argmin",
                      axis, (long long)bad);
            free(yv);
            gad_scope_end();
        }
    free(xv);
    gad_rng_free(r);
}

/* cumsum and cumprod of i64 and bool give i64 (PyTorch's), the running
 * values wrapping around as two's complement (computed here in uint64_t);
 * the lanes of every axis, with products long enough to overflow. */
TEST(int_cumsum_cumprod_wrap_as_int64) {
    gad_rng *r = gad_rng_new(13);
    int64_t s[3] = {3, 5, 130};
    int64_t all = test_numel(s, 3);
    for (int boolean = 0; boolean < 2; boolean++)
        for (int prod = 0; prod < 2; prod++) {
            int64_t *xv = int_values(r, all, 2 * boolean);
            if (prod && !boolean) /* small factors: overflow after some 40 steps */
                for (int64_t i = 0; i < all; i++) xv[i] = (xv[i] & 7) - 3;
            for (int axis = 0; axis < 3; axis++) {
                gad_scope_begin();
                gad_tensor *x = int_tensor(xv, s, 3, boolean);
                gad_tensor *y = prod ? gad_cumprod(x, axis) : gad_cumsum(x, axis);
                CHECK_MSG(y && gad_dtype(y) == GAD_I64, "%s %s: %s",
                          prod ? "cumprod" : "cumsum", boolean ? "bool" : "i64",
                          gad_last_error() ? gad_last_error()->text : "");
                if (!y) {
                    gad_scope_end();
                    continue;
                }
                int64_t *yv = read_ints(y), o, n, in, bad = 0;
                dims3(s, 3, axis, &o, &n, &in);
                for (int64_t p = 0; p < o * in; p++) {
                    int64_t base = (p / in) * n * in + p % in;
                    uint64_t acc = prod ? 1 : 0;
                    for (int64_t i = 0; i < n; i++) {
                        uint64_t xi = (uint64_t)xv[base + i * in];
                        acc = prod ? acc * xi : acc + xi;
                        bad += (uint64_t)yv[base + i * in] != acc;
                    }
                }
                CHECK_MSG(bad == 0, "%s %s axis %d: %lld wrong", prod ? "cumprod" : "cumsum",
                          boolean ? "bool" : "i64", axis, (long long)bad);
                free(yv);
                gad_scope_end();
            }
            free(xv);
        }
    gad_rng_free(r);
}

/* clamp_tensor of i64 by broadcast i64 bounds, one or both, against
 * min(max(x, lo), hi); bool refused (PyTorch's clamp takes none). */
TEST(int_clamp_tensor) {
    gad_rng *r = gad_rng_new(14);
    int64_t sx[2] = {6, 35}, sl[2] = {1, 35}, sh[2] = {6, 1};
    int64_t *xv = int_values(r, 6 * 35, 0), *lv = int_values(r, 35, 0), *hv = int_values(r, 6, 0);
    for (int which = 1; which < 4; which++) { /* 1: lo, 2: hi, 3: both */
        gad_scope_begin();
        gad_tensor *x = gad_from_i64(xv, sx, 2);
        gad_tensor *lo = which & 1 ? gad_from_i64(lv, sl, 2) : NULL;
        gad_tensor *hi = which & 2 ? gad_from_i64(hv, sh, 2) : NULL;
        gad_tensor *y = gad_clamp_tensor(x, lo, hi);
        CHECK_MSG(y && gad_dtype(y) == GAD_I64, "clamp_tensor i64: %s",
                  gad_last_error() ? gad_last_error()->text : "");
        if (y) {
            int64_t *yv = read_ints(y), bad = 0;
            for (int64_t i = 0; i < 6; i++)
                for (int64_t j = 0; j < 35; j++) {
                    int64_t want = xv[i * 35 + j];
                    if (lo && want < lv[j]) want = lv[j];
                    if (hi && want > hv[i]) want = hv[i];
                    bad += yv[i * 35 + j] != want;
                }
            CHECK_MSG(bad == 0, "clamp_tensor i64 bounds %d: %lld wrong", which, (long long)bad);
            free(yv);
        }
        gad_scope_end();
    }
    gad_scope_begin();
    gad_tensor *b = gad_cast(gad_from_i64(xv, sx, 2), GAD_BOOL);
    CHECK(!gad_clamp_tensor(b, b, NULL));
    CHECK_ERR(GAD_ERR_DTYPE, "clamp_tensor");
    gad_scope_end();
    free(xv), free(lv), free(hv);
    gad_rng_free(r);
}

/* gx_k = sum_{i >= k} gy_i prod_{j <= i, j != k} x_j, by its definition,
 * with one, two and three zeros in a row, both with and without
 * GAD_CREATE_GRAPH (the kernel, and the tracked gated-scan form). */
TEST(cumprod_gradient_with_zeros) {
    enum { R = 4, N = 7 };
    static const double x0[R][N] = {{0.5, -1.25, 0, 2, 0.75, 1.5, -0.5},
                                    {0, 1.5, 0.5, 0, 2, -1, 0.25},
                                    {1.5, 0, 0, 0.5, -2, 1, 0},
                                    {1.25, -0.5, 2, 0.75, 1.5, -1, 0.5}};
    double gyv[R * N];
    for (int i = 0; i < R * N; i++) gyv[i] = 0.25 * (i % 9) - 1;
    for (int create = 0; create < 2; create++) {
        gad_scope_begin();
        int64_t s[2] = {R, N};
        gad_tensor *x = gad_requires_grad(gad_from_f64(&x0[0][0], s, 2));
        gad_tensor *gy = gad_from_f64(gyv, s, 2), *gx = NULL;
        gad_tensor *y = gad_cumprod(x, 1);
        CHECK(gad_grad_ex(y, gy, &x, 1, &gx, create ? GAD_CREATE_GRAPH : 0) == GAD_OK);
        double *g = test_read_all(gx);
        int bad = 0;
        for (int r = 0; r < R; r++)
            for (int k = 0; k < N; k++) {
                double want = 0;
                for (int i = k; i < N; i++) {
                    double p = gyv[r * N + i];
                    for (int j = 0; j <= i; j++)
                        if (j != k) p *= x0[r][j];
                    want += p;
                }
                bad += !(fabs(g[r * N + k] - want) <= 1e-12 * (1 + fabs(want)));
            }
        CHECK_MSG(bad == 0, "cumprod gradient (create_graph %d): %d wrong", create, bad);
        free(g);
        /* an empty axis, and an axis of one: gx = gy */
        int64_t e[2] = {3, 0}, o1[2] = {3, 1};
        gad_tensor *xe = gad_requires_grad(gad_zeros(e, 2, GAD_F64)), *ge = NULL;
        gad_tensor *x1 = gad_requires_grad(gad_full(o1, 2, GAD_F64, 2)), *g1 = NULL;
        CHECK(gad_grad_ex(gad_cumprod(xe, 1), gad_zeros(e, 2, GAD_F64), &xe, 1, &ge,
                          create ? GAD_CREATE_GRAPH : 0) == GAD_OK &&
              gad_numel(ge) == 0);
        CHECK(gad_grad_ex(gad_cumprod(x1, 1), gad_full(o1, 2, GAD_F64, 5), &x1, 1, &g1,
                          create ? GAD_CREATE_GRAPH : 0) == GAD_OK);
        CHECK_VALUES(g1, 0, 5, 5, 5);
        gad_scope_end();
    }
}

/* ------------------------------------------------------------ sampling */

/* The chi-square statistic's critical values at p = 0.001 (the upper
 * tail), for 1..15 degrees of freedom: the quantile 1 - 0.001 of the
 * chi-square distribution, computed by bisection of torch.special.gammaincc
 * and equal to the printed tables to 3 decimals. A correct sampler fails a
 * check with probability 0.001; the seeds are fixed, so a run is
 * reproducible. */
static const double chi2_crit_001[16] = {0,      10.828, 13.816, 16.266, 18.467, 20.515,
                                         22.458, 24.322, 26.124, 27.877, 29.588, 31.264,
                                         32.909, 34.528, 36.123, 37.697};

/* sum (observed - expected)^2 / expected over the cells with p > 0; any
 * draw of a cell with p = 0 makes it infinite. *df = those cells - 1. */
static double chi2(const int64_t *count, const double *p, int cells, int64_t total, int *df) {
    double stat = 0;
    *df = -1;
    for (int c = 0; c < cells; c++) {
        if (p[c] == 0) {
            if (count[c]) return INFINITY;
            continue;
        }
        double e = p[c] * (double)total;
        stat += (count[c] - e) * (count[c] - e) / e;
        ++*df;
    }
    printf("  chi-square %.3f with %d df (critical at p = 0.001: %.3f)\n", stat, *df,
           chi2_crit_001[*df > 0 && *df < 16 ? *df : 0]);
    return stat;
}

#define DRAWS (TEST_SANITIZED ? 4000 : 40000)

TEST(multinomial_with_replacement_fits_the_weights) {
    gad_scope_begin();
    static const float w[2][6] = {{1, 2, 3, 4, 0, 10}, {5, 0, 1, 1, 1, 2}};
    gad_rng *r = gad_rng_new(270);
    int64_t s[2] = {2, 6};
    gad_tensor *wt = gad_from_f32(&w[0][0], s, 2);
    gad_tensor *d = gad_multinomial(wt, DRAWS, 1, r);
    CHECK_SHAPE(d, 2, DRAWS);
    double *dv = test_read_all(d);
    for (int row = 0; row < 2; row++) {
        int64_t count[6] = {0};
        double p[6], tot = 0;
        for (int c = 0; c < 6; c++) tot += w[row][c];
        for (int c = 0; c < 6; c++) p[c] = w[row][c] / tot;
        for (int i = 0; i < DRAWS; i++) count[(int)dv[row * DRAWS + i]]++;
        int df;
        double st = chi2(count, p, 6, DRAWS, &df);
        CHECK_MSG(st < chi2_crit_001[df], "row %d: chi-square %.3f with %d df (critical %.3f)",
                  row, st, df, chi2_crit_001[df]);
    }
    free(dv);
    gad_rng_free(r);
    gad_scope_end();
}

/* Two draws without replacement from {1, 2, 3, 4}: the ordered pair (i, j)
 * has probability w_i / S * w_j / (S - w_i); 12 cells, 11 df. One draw per
 * row of a batch of identical rows, each on its own stream. */
TEST(multinomial_without_replacement_fits_sequential_draws) {
    gad_scope_begin();
    static const double w[4] = {1, 2, 3, 4};
    enum { ROWS = DRAWS };
    float *wv = malloc(ROWS * 4 * sizeof *wv);
    for (int i = 0; i < ROWS * 4; i++) wv[i] = (float)w[i % 4];
    gad_rng *r = gad_rng_new(271);
    int64_t s[2] = {ROWS, 4};
    gad_tensor *d = gad_multinomial(gad_from_f32(wv, s, 2), 2, 0, r);
    double *dv = test_read_all(d);
    int64_t count[16] = {0};
    double p[16] = {0};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (i != j) p[i * 4 + j] = w[i] / 10 * w[j] / (10 - w[i]);
    int same = 0;
    for (int k = 0; k < ROWS; k++) {
        int a = (int)dv[2 * k], b = (int)dv[2 * k + 1];
        same += a == b;
        count[a * 4 + b]++;
    }
    int df;
    double st = chi2(count, p, 16, ROWS, &df);
    CHECK(same == 0 && df == 11);
    CHECK_MSG(st < chi2_crit_001[df], "chi-square %.3f with %d df (critical %.3f)", st, df,
              chi2_crit_001[df]);
    /* n = K: every row a permutation */
    gad_tensor *all = gad_multinomial(gad_from_f32(wv, s, 2), 4, 0, r);
    double *av = test_read_all(all);
    int bad = 0;
    for (int k = 0; k < ROWS; k++) {
        int seen = 0;
        for (int i = 0; i < 4; i++) seen |= 1 << (int)av[4 * k + i];
        bad += seen != 15;
    }
    CHECK(bad == 0);
    free(av), free(dv), free(wv);
    gad_rng_free(r);
    gad_scope_end();
}

/* The same seed gives the same draws, on one thread and on two; the
 * generator moves on between calls. */
TEST(draws_depend_on_the_seed_alone) {
    gad_scope_begin();
    enum { ROWS = 64, K = 50 };
    float *wv = malloc(ROWS * K * sizeof *wv), lv[ROWS * K];
    for (int i = 0; i < ROWS * K; i++) wv[i] = lv[i] = (float)((i * 37) % 17) / 4;
    int64_t s[2] = {ROWS, K};
    gad_tensor *w = gad_from_f32(wv, s, 2), *l = gad_from_f32(lv, s, 2);
    gad_sample_opts o = {0.8, 20, 0.9};
    double *v[2][3];
    for (int t = 0; t < 2; t++) {
        gad_set_num_threads(t ? 2 : 1);
        gad_rng *r = gad_rng_new(99);
        v[t][0] = test_read_all(gad_multinomial(w, 5, 1, r));
        v[t][1] = test_read_all(gad_multinomial(w, 5, 0, r));
        v[t][2] = test_read_all(gad_sample_logits(l, &o, r));
        gad_rng_free(r);
    }
    gad_set_num_threads(0);
    CHECK(!memcmp(v[0][0], v[1][0], ROWS * 5 * sizeof(double)));
    CHECK(!memcmp(v[0][1], v[1][1], ROWS * 5 * sizeof(double)));
    CHECK(!memcmp(v[0][2], v[1][2], ROWS * sizeof(double)));
    CHECK(memcmp(v[0][0], v[0][1], ROWS * 5 * sizeof(double)) != 0);
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 3; k++) free(v[t][k]);
    free(wv);
    gad_scope_end();
}

/* Which positions of a row the filter keeps (not -inf), as a bit mask. */
static unsigned kept(const float *x, int n, double t, int64_t k, double p) {
    int64_t s = n;
    gad_sample_opts o = {t, k, p};
    gad_scope_begin();
    double *v = test_read_all(gad_logits_filter(gad_from_f32(x, &s, 1), &o));
    unsigned m = 0;
    for (int i = 0; i < n; i++) m |= (unsigned)(v[i] > -INFINITY) << i;
    free(v);
    gad_scope_end();
    return m;
}

TEST(top_k_and_top_p_masks) {
    gad_scope_begin();
    const float a[5] = {1, 5, 3, 5, 2}, b[5] = {1, 5, 3, 3, 2};
    CHECK(kept(a, 5, 1, 2, 0) == 0x0a);    /* the two 5s */
    CHECK(kept(b, 5, 1, 2, 0) == 0x0e);    /* 5 and both 3s: ties with the k-th kept */
    CHECK(kept(b, 5, 1, 1, 0) == 0x02);
    CHECK(kept(b, 5, 1, 0, 0) == 0x1f);    /* no limit */
    CHECK(kept(b, 5, 1, 5, 1) == 0x1f);
    /* probabilities 1/2, 1/4, 1/8, 1/8 (exact in binary) */
    const float c[4] = {(float)log(0.5), (float)log(0.25), (float)log(0.125), (float)log(0.125)};
    CHECK(kept(c, 4, 1, 0, 0.5) == 0x1);   /* 1/2 reaches 0.5 */
    CHECK(kept(c, 4, 1, 0, 0.6) == 0x3);
    CHECK(kept(c, 4, 1, 0, 0.8) == 0xf);   /* the boundary's tie kept */
    CHECK(kept(c, 4, 1, 0, 1e-9) == 0x1);  /* at least the largest */
    /* top_k first, then top_p over the renormalised k: 2/3, 1/3 */
    CHECK(kept(c, 4, 1, 2, 0.6) == 0x1);
    CHECK(kept(c, 4, 1, 2, 0.7) == 0x3);
    /* temperature 2 flattens to 0.38, 0.27, 0.19, 0.19 (logits / 2) */
    CHECK(kept(c, 4, 2, 0, 0.6) == 0x3);
    CHECK(kept(c, 4, 2, 0, 0.7) == 0xf);
    /* the values kept are logits / temperature */
    int64_t s = 4;
    gad_sample_opts o = {2, 0, 0};
    CHECK_VALUES(gad_logits_filter(gad_from_f32(c, &s, 1), &o), 1e-6, log(0.5) / 2,
                 log(0.25) / 2, log(0.125) / 2, log(0.125) / 2);
    gad_scope_end();
}

static int desc_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

/* Random rows (the selections' paths) against the definition computed
 * with a full sort: the k largest, then the shortest prefix reaching p. */
TEST(masks_match_a_sorted_reference) {
    enum { V = 300 };
    gad_rng *r = gad_rng_new(5);
    static const int64_t ks[] = {0, 1, 7, 50, 299, 300};
    static const double ps[] = {0, 1e-6, 0.3, 0.9, 0.999, 1};
    int bad = 0;
    for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++)
        for (size_t b = 0; b < sizeof ps / sizeof ps[0]; b++) {
            float x[V];
            double srt[V];
            for (int i = 0; i < V; i++) x[i] = (float)(gad_rng_normal(r) * 2);
            for (int i = 0; i < V; i++) srt[i] = x[i];
            qsort(srt, V, sizeof srt[0], desc_d);
            int64_t m = ks[a] > 0 && ks[a] < V ? ks[a] : V; /* no ties: exactly k */
            double thr = srt[m - 1];
            if (ps[b] > 0 && ps[b] < 1) {
                double z = 0, cum = 0;
                for (int64_t i = 0; i < m; i++) z += exp(srt[i] - srt[0]);
                for (int64_t i = 0; i < m; i++) {
                    cum += exp(srt[i] - srt[0]) / z;
                    if (cum >= ps[b]) {
                        thr = srt[i];
                        break;
                    }
                }
            }
            int64_t s = V;
            gad_sample_opts o = {1, ks[a], ps[b]};
            gad_scope_begin();
            double *v = test_read_all(gad_logits_filter(gad_from_f32(x, &s, 1), &o));
            for (int i = 0; i < V; i++) bad += (v[i] > -INFINITY) != (x[i] >= thr);
            free(v);
            gad_scope_end();
        }
    CHECK_MSG(bad == 0, "%d positions kept or dropped wrongly", bad);
    gad_rng_free(r);
}

/* gad_sample_logits at temperature 0.7, top_k 5, top_p 0.9 against the
 * distribution those define, by chi-square over identical rows. */
TEST(sample_logits_fits_the_filtered_softmax) {
    gad_scope_begin();
    enum { V = 8, ROWS = DRAWS };
    static const double lg[V] = {0.3, 2.0, -1.0, 1.2, 1.9, 0.8, -0.4, 1.0};
    const double t = 0.7, top_p = 0.9;
    /* expected: the 5 largest (2.0, 1.9, 1.2, 1.0, 0.8), softmax of lg / t,
     * then the smallest prefix reaching 0.9, renormalised */
    static const int order[5] = {1, 4, 3, 7, 5};
    double p[V] = {0}, z = 0, cum = 0;
    for (int i = 0; i < 5; i++) z += exp(lg[order[i]] / t);
    int keep = 0;
    while (keep < 5 && cum < top_p) cum += exp(lg[order[keep++]] / t) / z;
    double z2 = 0;
    for (int i = 0; i < keep; i++) z2 += exp(lg[order[i]] / t);
    for (int i = 0; i < keep; i++) p[order[i]] = exp(lg[order[i]] / t) / z2;
    float *lv = malloc(ROWS * V * sizeof *lv);
    for (int i = 0; i < ROWS * V; i++) lv[i] = (float)lg[i % V];
    int64_t s[2] = {ROWS, V};
    gad_rng *r = gad_rng_new(272);
    gad_sample_opts o = {t, 5, top_p};
    gad_tensor *d = gad_sample_logits(gad_from_f32(lv, s, 2), &o, r);
    CHECK_SHAPE(d, ROWS);
    double *dv = test_read_all(d);
    int64_t count[V] = {0};
    for (int i = 0; i < ROWS; i++) count[(int)dv[i]]++;
    int df;
    double st = chi2(count, p, V, ROWS, &df);
    CHECK(keep == 4 && df == 3);
    CHECK_MSG(st < chi2_crit_001[df], "chi-square %.3f with %d df (critical %.3f)", st, df,
              chi2_crit_001[df]);
    /* greedy: the argmax of each row, rng unused; 1-D gives a 0-d index */
    gad_sample_opts g = {0, 0, 0};
    int64_t v1 = V;
    gad_tensor *one = gad_sample_logits(gad_from_f32(lv, &v1, 1), &g, NULL);
    CHECK(one && gad_rank(one) == 0 && gad_item(one) == 1);
    free(dv), free(lv);
    gad_rng_free(r);
    gad_scope_end();
}

int main(void) {
    RUN(sort_matches_a_stable_reference);
    RUN(one_long_row);
    RUN(topk_is_the_head_of_a_stable_sort);
    RUN(argmin_first_minimum_or_first_nan);
    RUN(cumsum_cumprod_match_running_loops);
    RUN(cumprod_gradient_with_zeros);
    RUN(int_sort_topk_match_a_stable_reference);
    RUN(int_argmin_argmax_first_extreme);
    RUN(int_cumsum_cumprod_wrap_as_int64);
    RUN(int_clamp_tensor);
    RUN(multinomial_with_replacement_fits_the_weights);
    RUN(multinomial_without_replacement_fits_sequential_draws);
    RUN(draws_depend_on_the_seed_alone);
    RUN(top_k_and_top_p_masks);
    RUN(masks_match_a_sorted_reference);
    RUN(sample_logits_fits_the_filtered_softmax);
    return test_summary();
}
