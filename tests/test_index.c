/* test_index.c: gather, scatter_add, take, cat and stack against naive loops
 * (gad.h "Indexing and joining", SPEC §3.2, D5, D8).
 *
 * Operands come as contiguous tensors and as views (permuted, stepped,
 * reversed, broadcast with stride 0, transposed); indices are random with
 * negative values; every error case of the header is checked with its kind,
 * the op's name and, for index errors, the offending index and its bound. */
#include "test.h"

static gad_rng *g_rng;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

#define NARGS(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SHP(...) ((const int64_t[]){__VA_ARGS__})

static gad_tensor *F(gad_dtype_t dt, const double *v, const int64_t *shape, int rank) {
    return gad_cast(gad_from_f64(v, shape, rank), dt);
}
#define FV(dt, vals, ...) F((dt), (const double[])vals, SHP(__VA_ARGS__), NARGS(__VA_ARGS__))
#define IV(vals, ...) gad_from_i64((const int64_t[])vals, SHP(__VA_ARGS__), NARGS(__VA_ARGS__))
#define L(...) {__VA_ARGS__}

static int64_t numel_of(const int64_t *s, int r) {
    int64_t n = 1;
    for (int i = 0; i < r; i++) n *= s[i];
    return n;
}

static void unravel(int64_t pos, const int64_t *s, int r, int64_t *idx) {
    for (int i = r - 1; i >= 0; i--) {
        idx[i] = s[i] ? pos % s[i] : 0;
        pos = s[i] ? pos / s[i] : 0;
    }
}

static int64_t ravel(const int64_t *idx, const int64_t *s, int r) {
    int64_t p = 0;
    for (int i = 0; i < r; i++) p = p * s[i] + idx[i];
    return p;
}

static double *readf(gad_tensor *t) {
    int64_t n = gad_numel(t);
    double *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (n > 0) gad_read_f64(t, p, (size_t)n);
    return p;
}

static int64_t *readi(gad_tensor *t) {
    int64_t n = gad_numel(t);
    int64_t *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (n > 0) gad_read_i64(t, p, (size_t)n);
    return p;
}

static int same_shape(gad_tensor *t, const int64_t *s, int r) {
    return t && gad_rank(t) == r &&
           (r == 0 || memcmp(gad_shape(t), s, (size_t)r * sizeof(int64_t)) == 0);
}

static void shape_str(char *buf, const int64_t *s, int r) {
    char *p = buf;
    *p++ = '[';
    for (int i = 0; i < r; i++) p += sprintf(p, i ? ",%lld" : "%lld", (long long)s[i]);
    *p++ = ']';
    *p = 0;
}

/* A fresh random tensor: floats uniform in [-1, 1), i64 in [lo, hi). */
static gad_tensor *fresh(const int64_t *shape, int rank, gad_dtype_t dt,
                         int64_t lo, int64_t hi) {
    if (dt == GAD_I64) return gad_rng_int_tensor(g_rng, shape, rank, lo, hi);
    return gad_rng_uniform_tensor(g_rng, shape, rank, dt, -1.0, 1.0);
}

#define NKINDS 6
/* A tensor of the given logical shape made in one of NKINDS ways:
 * 0 contiguous, 1 axes reversed then permuted back, 2 every axis stepped by
 * 2, 3 every (non-empty) axis reversed, 4 the first axis > 1 broadcast from
 * size 1 (stride 0), 5 the last two axes transposed back. */
static gad_tensor *make(const int64_t *shape, int rank, gad_dtype_t dt, int kind,
                        int64_t lo, int64_t hi) {
    int64_t big[GAD_MAX_RANK];
    gad_range r[GAD_MAX_RANK];
    int perm[GAD_MAX_RANK];
    switch (rank == 0 ? 0 : kind) {
    case 1:
        for (int i = 0; i < rank; i++) {
            big[i] = shape[rank - 1 - i];
            perm[i] = rank - 1 - i;
        }
        return gad_permute(fresh(big, rank, dt, lo, hi), perm, rank);
    case 2:
        for (int i = 0; i < rank; i++) {
            big[i] = 2 * shape[i] + 1;
            r[i] = GAD_RANGE_STEP(1, GAD_NIL, 2);
        }
        return gad_slice(fresh(big, rank, dt, lo, hi), r, rank);
    case 3:
        for (int i = 0; i < rank; i++)
            r[i] = shape[i] > 0 ? GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1) : GAD_ALL;
        return gad_slice(fresh(shape, rank, dt, lo, hi), r, rank);
    case 4:
        memcpy(big, shape, (size_t)rank * sizeof *big);
        for (int i = 0; i < rank; i++)
            if (big[i] > 1) {
                big[i] = 1;
                break;
            }
        return gad_broadcast_to(fresh(big, rank, dt, lo, hi), shape, rank);
    case 5:
        if (rank >= 2) {
            memcpy(big, shape, (size_t)rank * sizeof *big);
            big[rank - 2] = shape[rank - 1];
            big[rank - 1] = shape[rank - 2];
            return gad_transpose(fresh(big, rank, dt, lo, hi));
        }
        return fresh(shape, rank, dt, lo, hi);
    default:
        return fresh(shape, rank, dt, lo, hi);
    }
}

static int msg_has(const char *s) {
    const gad_error *e = gad_last_error();
    return e && strstr(e->message, s) != NULL;
}

/* The pending error is an index error of op naming index value i and the
 * bound d; clears it. */
#define CHECK_INDEX_ERR(opname, i, d)                                          \
    do {                                                                       \
        char bi_[32], bd_[32];                                                 \
        snprintf(bi_, sizeof bi_, "%lld", (long long)(i));                     \
        snprintf(bd_, sizeof bd_, "%lld", (long long)(d));                     \
        CHECK_MSG(msg_has(bi_) && msg_has(bd_), "message should name %s and %s: %s", \
                  bi_, bd_, gad_last_error() ? gad_last_error()->text : "none"); \
        CHECK_ERR(GAD_ERR_INDEX, opname);                                      \
    } while (0)

/* Compare t with ref (row-major doubles), exactly or within tol. */
static int cmp_f_(gad_tensor *t, const double *ref, const int64_t *s, int r,
                  gad_dtype_t dt, double tol, const char *what, const char *file,
                  int line) {
    char b1[128], b2[128];
    test_checks_++;
    if (!t) {
        test_failures_++;
        fprintf(stderr, "%s:%d: [%s] %s: NULL: %s\n", file, line, test_current_,
                what, gad_last_error() ? gad_last_error()->text : "");
        gad_clear_error();
        return 0;
    }
    if (!same_shape(t, s, r) || gad_dtype(t) != dt) {
        test_failures_++;
        shape_str(b1, gad_shape(t), gad_rank(t));
        shape_str(b2, s, r);
        fprintf(stderr, "%s:%d: [%s] %s: got %s %s, expected %s %s\n", file, line,
                test_current_, what, gad_dtype_name(gad_dtype(t)), b1,
                gad_dtype_name(dt), b2);
        return 0;
    }
    int64_t n = numel_of(s, r);
    double *got = readf(t);
    int ok = 1;
    for (int64_t i = 0; i < n; i++) {
        double sc = fabs(ref[i]) > 1 ? fabs(ref[i]) : 1;
        if (!test_near_(got[i], ref[i], tol * sc)) {
            shape_str(b1, s, r);
            fprintf(stderr, "%s:%d: [%s] %s %s: element %lld: %.10g, expected %.10g\n",
                    file, line, test_current_, what, b1, (long long)i, got[i], ref[i]);
            ok = 0;
            break;
        }
    }
    free(got);
    if (!ok) test_failures_++;
    return ok;
}
#define CMP_F(t, ref, s, r, dt, tol, what) \
    cmp_f_((t), (ref), (s), (r), (dt), (tol), (what), __FILE__, __LINE__)

static int cmp_i_(gad_tensor *t, const int64_t *ref, const int64_t *s, int r,
                  const char *what, const char *file, int line) {
    char b1[128], b2[128];
    test_checks_++;
    if (!t || !same_shape(t, s, r) || gad_dtype(t) != GAD_I64) {
        test_failures_++;
        b1[0] = 0;
        if (t) shape_str(b1, gad_shape(t), gad_rank(t));
        shape_str(b2, s, r);
        fprintf(stderr, "%s:%d: [%s] %s: got %s %s, expected i64 %s (%s)\n", file,
                line, test_current_, what, t ? gad_dtype_name(gad_dtype(t)) : "NULL",
                b1, b2, gad_last_error() ? gad_last_error()->text : "");
        gad_clear_error();
        return 0;
    }
    int64_t n = numel_of(s, r);
    int64_t *got = readi(t);
    int ok = 1;
    for (int64_t i = 0; i < n; i++)
        if (got[i] != ref[i]) {
            fprintf(stderr, "%s:%d: [%s] %s: element %lld: %lld, expected %lld\n",
                    file, line, test_current_, what, (long long)i,
                    (long long)got[i], (long long)ref[i]);
            ok = 0;
            break;
        }
    free(got);
    if (!ok) test_failures_++;
    return ok;
}
#define CMP_I(t, ref, s, r, what) cmp_i_((t), (ref), (s), (r), (what), __FILE__, __LINE__)

static const gad_dtype_t g_fdts[2] = {GAD_F32, GAD_F64};

/* ------------------------------------------------------------------------ */
/* gather                                                                    */
/* ------------------------------------------------------------------------ */

/* out[i] = x[i with axis replaced by wrap(index[i]); x's size-1 dims at 0] */
static double *ref_gather(gad_tensor *x, int axis, gad_tensor *index) {
    int r = gad_rank(x);
    const int64_t *xs = gad_shape(x), *is = gad_shape(index);
    int a = axis < 0 ? axis + r : axis;
    int64_t n = gad_numel(index), d = xs[a];
    double *X = readf(x), *R = malloc((size_t)(n > 0 ? n : 1) * sizeof *R);
    int64_t *I = readi(index), ii[GAD_MAX_RANK], xi[GAD_MAX_RANK];
    for (int64_t p = 0; p < n; p++) {
        unravel(p, is, r, ii);
        int64_t v = I[p] < 0 ? I[p] + d : I[p];
        for (int k = 0; k < r; k++) xi[k] = k == a ? v : (xs[k] == 1 ? 0 : ii[k]);
        R[p] = X[ravel(xi, xs, r)];
    }
    free(X);
    free(I);
    return R;
}

TEST(gather_values) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_fdts[t];
        gad_scope_begin();
        /* SPEC §7.1: gather(x, 1, [[1,0],[1,1]]) on [[0.2,0.4],[0.6,0.8]] */
        gad_tensor *x = FV(dt, L(0.2, 0.4, 0.6, 0.8), 2, 2);
        gad_tensor *y = gad_gather(x, 1, IV(L(1, 0, 1, 1), 2, 2));
        CHECK_SHAPE(y, 2, 2);
        CHECK(gad_dtype(y) == dt);
        CHECK_VALUES(y, 1e-7, 0.4, 0.2, 0.8, 0.8);
        /* axis 0, negative indices wrap once */
        y = gad_gather(x, 0, IV(L(-1, 0, -2, -1, 1, 1), 3, 2));
        CHECK_SHAPE(y, 3, 2);
        CHECK_VALUES(y, 1e-7, 0.6, 0.4, 0.2, 0.8, 0.6, 0.8);
        y = gad_gather(x, -2, IV(L(1, 0), 1, 2));
        CHECK_SHAPE(y, 1, 2);
        CHECK_VALUES(y, 1e-7, 0.6, 0.4);
        /* 1-D */
        gad_tensor *v = FV(dt, L(10, 11, 12, 13, 14), 5);
        y = gad_gather(v, 0, IV(L(4, -5, 2, 2, -1, 0, 3), 7));
        CHECK_SHAPE(y, 7);
        CHECK_VALUES(y, 0, 14, 10, 12, 12, 14, 10, 13);
        /* an x dim of 1 broadcasts against a longer index dim */
        gad_tensor *row = FV(dt, L(1, 2, 3), 1, 3);
        y = gad_gather(row, 1, IV(L(0, 2, 1), 3, 1));
        CHECK_SHAPE(y, 3, 1);
        CHECK_VALUES(y, 0, 1, 3, 2);
        y = gad_gather(row, 1, IV(L(2, 1, 0, 0, 1, 2), 2, 3));
        CHECK_SHAPE(y, 2, 3);
        CHECK_VALUES(y, 0, 3, 2, 1, 1, 2, 3);
        /* an index dim of 1 against a longer x dim: the output keeps
         * index's shape and reads x's first position there */
        gad_tensor *m = FV(dt, L(1, 2, 3, 4, 5, 6, 7, 8, 9), 3, 3);
        y = gad_gather(m, 1, IV(L(2, 0), 1, 2));
        CHECK_SHAPE(y, 1, 2);
        CHECK_VALUES(y, 0, 3, 1);
        y = gad_gather(m, 0, IV(L(2, 1), 2, 1));
        CHECK_SHAPE(y, 2, 1);
        CHECK_VALUES(y, 0, 7, 4);
        /* an index dim smaller than x's (PyTorch): the first positions */
        y = gad_gather(m, 1, IV(L(2, 1, 0, 0), 2, 2));
        CHECK_SHAPE(y, 2, 2);
        CHECK_VALUES(y, 0, 3, 2, 4, 4);
        y = gad_gather(m, 0, IV(L(2, 0), 1, 2));
        CHECK_SHAPE(y, 1, 2);
        CHECK_VALUES(y, 0, 7, 2);
        gad_tensor *c3 = gad_reshape(gad_arange(0, 24, 1, dt), SHP(2, 3, 4), 3);
        y = gad_gather(c3, 2, IV(L(3, -1, 0, 1), 1, 2, 2));
        CHECK_SHAPE(y, 1, 2, 2);
        CHECK_VALUES(y, 0, 3, 3, 4, 5);
        /* the index along the axis may be longer than x's axis */
        y = gad_gather(m, 1, IV(L(0, 1, 2, 2, 1, 0, 0, 0), 1, 8));
        CHECK_SHAPE(y, 1, 8);
        CHECK_VALUES(y, 0, 1, 2, 3, 3, 2, 1, 1, 1);
        /* empty index gives an empty result of its shape */
        y = gad_gather(m, 1, gad_zeros(SHP(3, 0), 2, GAD_I64));
        CHECK_SHAPE(y, 3, 0);
        y = gad_gather(m, 0, gad_zeros(SHP(0, 3), 2, GAD_I64));
        CHECK_SHAPE(y, 0, 3);
        /* gather from an empty x is fine when the index is empty too */
        y = gad_gather(gad_zeros(SHP(3, 0), 2, dt), 1, gad_zeros(SHP(3, 0), 2, GAD_I64));
        CHECK_SHAPE(y, 3, 0);
        /* x itself is unchanged */
        CHECK_VALUES(m, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
        CHECK_OK();
        gad_scope_end();
    }
}

TEST(gather_random) {
    gad_rng *r = gad_rng_new(101);
    for (int it = 0; it < 3000; it++) {
        gad_dtype_t dt = g_fdts[it & 1];
        int rank = (int)gad_rng_int(r, 1, 6);
        int axis = (int)gad_rng_int(r, 0, rank);
        int64_t xs[GAD_MAX_RANK], is[GAD_MAX_RANK];
        for (int k = 0; k < rank; k++) {
            xs[k] = gad_rng_int(r, 1, 5);
            int c = (int)gad_rng_int(r, 0, 4);
            if (k == axis) is[k] = gad_rng_int(r, 0, 6);
            else if (c == 0) is[k] = xs[k];
            else if (c == 1) is[k] = gad_rng_int(r, 0, xs[k] + 1); /* at most x's */
            else if (c == 2) is[k] = 1;
            else {
                xs[k] = 1;
                is[k] = gad_rng_int(r, 1, 5);
            }
        }
        if (it % 50 == 7) { /* one large case */
            xs[axis] = 300;
            is[axis] = 257;
        }
        int ax = gad_rng_int(r, 0, 2) ? axis : axis - rank;
        gad_scope_begin();
        gad_tensor *x = make(xs, rank, dt, (int)gad_rng_int(r, 0, NKINDS), 0, 1);
        gad_tensor *index = make(is, rank, GAD_I64, (int)gad_rng_int(r, 0, NKINDS),
                                 -xs[axis], xs[axis]);
        double *ref = ref_gather(x, ax, index);
        gad_tensor *y = gad_gather(x, ax, index);
        CMP_F(y, ref, is, rank, dt, 0, "gather random");
        free(ref);
        gad_scope_end();
    }
    gad_rng_free(r);
}

TEST(gather_errors) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_fdts[t];
        gad_scope_begin();
        gad_tensor *x = fresh(SHP(2, 5), 2, dt, 0, 1);
        /* out of range, for f32 and f64 (SPEC D5): names index and bound */
        CHECK(gad_gather(x, 1, IV(L(0, 7, 1, 2), 2, 2)) == NULL);
        CHECK_INDEX_ERR("gather", 7, 5);
        CHECK(gad_gather(x, 1, IV(L(0, 1, -6, 2), 2, 2)) == NULL);
        CHECK_INDEX_ERR("gather", -6, 5);
        CHECK(gad_gather(x, 1, IV(L(5), 1, 1)) == NULL);
        CHECK_INDEX_ERR("gather", 5, 5);
        CHECK(gad_gather(x, 0, IV(L(0, 1, 2, 0, 1), 1, 5)) == NULL);
        CHECK_INDEX_ERR("gather", 2, 2);
        CHECK(gad_gather(x, -2, IV(L(-3), 1, 1)) == NULL);
        CHECK_INDEX_ERR("gather", -3, 2);
        /* an out-of-range index in a non-contiguous index view */
        gad_tensor *iv = gad_transpose(IV(L(0, 1, 2, 3, 4, 0, 1, 99), 4, 2));
        CHECK(gad_gather(x, 1, iv) == NULL);
        CHECK_INDEX_ERR("gather", 99, 5);
        /* empty x axis: any index is out of range */
        CHECK(gad_gather(gad_zeros(SHP(2, 0), 2, dt), 1, IV(L(0, 0), 2, 1)) == NULL);
        CHECK_INDEX_ERR("gather", 0, 0);
        /* i64 huge values */
        CHECK(gad_gather(x, 1, IV(L(INT64_MAX), 1, 1)) == NULL);
        CHECK_ERR(GAD_ERR_INDEX, "gather");
        CHECK(gad_gather(x, 1, IV(L(INT64_MIN), 1, 1)) == NULL);
        CHECK_ERR(GAD_ERR_INDEX, "gather");
        /* non-i64 index */
        CHECK(gad_gather(x, 1, FV(GAD_F32, L(0, 1), 2, 1)) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, "gather");
        CHECK(gad_gather(x, 1, FV(GAD_F64, L(0, 1), 2, 1)) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, "gather");
        /* i64 data is gathered (forward only; test_data.c checks values) */
        gad_tensor *gi = gad_gather(IV(L(1, 2, 3), 3), 0, IV(L(2), 1));
        CHECK(gi && gad_dtype(gi) == GAD_I64 && !gad_is_tracked(gi) && gad_item(gi) == 3);
        CHECK_OK();
        /* rank mismatch */
        CHECK(gad_gather(x, 1, IV(L(0, 1), 2)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "gather");
        CHECK(gad_gather(x, 1, IV(L(0, 1), 1, 1, 2)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "gather");
        /* an off-axis index dim larger than x's (which is not 1) */
        CHECK(gad_gather(x, 1, IV(L(0, 1, 2, 3, 4, 0), 3, 2)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "gather");
        CHECK(gad_gather(fresh(SHP(3, 4, 5), 3, dt, 0, 1), 2,
                         gad_zeros(SHP(3, 5, 1), 3, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "gather");
        CHECK(gad_gather(fresh(SHP(3, 4, 5), 3, dt, 0, 1), 0,
                         gad_zeros(SHP(1, 4, 6), 3, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "gather");
        /* axis out of range; rank 0 has no axis */
        CHECK(gad_gather(x, 2, IV(L(0, 1), 2, 1)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "gather");
        CHECK(gad_gather(x, -3, IV(L(0, 1), 2, 1)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "gather");
        CHECK(gad_gather(gad_scalar(1, dt), 0, gad_scalar(0, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "gather");
        /* NULL */
        CHECK(gad_gather(NULL, 0, IV(L(0), 1)) == NULL);
        CHECK(gad_last_error() != NULL);
        gad_clear_error();
        CHECK(gad_gather(x, 0, NULL) == NULL);
        CHECK(gad_last_error() != NULL);
        gad_clear_error();
        gad_scope_end();
    }
}

/* ------------------------------------------------------------------------ */
/* scatter_add                                                               */
/* ------------------------------------------------------------------------ */

static double *ref_scatter(gad_tensor *dst, int axis, gad_tensor *index, gad_tensor *src) {
    int r = gad_rank(dst);
    const int64_t *ds = gad_shape(dst), *is = gad_shape(index);
    int a = axis < 0 ? axis + r : axis;
    int64_t n = gad_numel(index), d = ds[a];
    double *R = readf(dst), *S = readf(src);
    int64_t *I = readi(index), ii[GAD_MAX_RANK];
    for (int64_t p = 0; p < n; p++) {
        unravel(p, is, r, ii);
        ii[a] = I[p] < 0 ? I[p] + d : I[p];
        R[ravel(ii, ds, r)] += S[p];
    }
    free(S);
    free(I);
    return R;
}

TEST(scatter_add_values) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_fdts[t];
        gad_scope_begin();
        /* duplicates add; negative indices wrap */
        gad_tensor *dst = gad_zeros(SHP(5), 1, dt);
        gad_tensor *y = gad_scatter_add(dst, 0, IV(L(1, 1, 1, 3, -1), 5),
                                        FV(dt, L(1, 2, 3, 4, 5), 5));
        CHECK_SHAPE(y, 5);
        CHECK(gad_dtype(y) == dt);
        CHECK_VALUES(y, 0, 0, 6, 0, 4, 5);
        CHECK_VALUES(dst, 0, 0, 0, 0, 0, 0);
        /* the result is a copy: dst is unchanged, even when unshared */
        gad_tensor *d2 = FV(dt, L(1, 2, 3, 4, 5, 6), 2, 3);
        y = gad_scatter_add(d2, 1, IV(L(2, 0, -3, -3), 2, 2), FV(dt, L(10, 20, 30, 40), 2, 2));
        CHECK_SHAPE(y, 2, 3);
        CHECK_VALUES(y, 0, 21, 2, 13, 74, 5, 6);
        CHECK_VALUES(d2, 0, 1, 2, 3, 4, 5, 6);
        CHECK(y != d2);
        /* axis 0 with a smaller index off the axis */
        y = gad_scatter_add(d2, 0, IV(L(1, 1, 0), 3, 1), FV(dt, L(1, 2, 4), 3, 1));
        CHECK_VALUES(y, 0, 5, 2, 3, 7, 5, 6);
        y = gad_scatter_add(d2, -2, IV(L(1, 1, 0), 3, 1), FV(dt, L(1, 2, 4), 3, 1));
        CHECK_VALUES(y, 0, 5, 2, 3, 7, 5, 6);
        /* empty index: a plain copy */
        y = gad_scatter_add(d2, 1, gad_zeros(SHP(2, 0), 2, GAD_I64), gad_zeros(SHP(2, 0), 2, dt));
        CHECK_SHAPE(y, 2, 3);
        CHECK_VALUES(y, 0, 1, 2, 3, 4, 5, 6);
        /* a view as dst: the result has dst's logical layout */
        gad_tensor *dv = gad_transpose(d2); /* [[1,4],[2,5],[3,6]] */
        y = gad_scatter_add(dv, 1, IV(L(1, 0, 1), 3, 1), FV(dt, L(100, 200, 300), 3, 1));
        CHECK_SHAPE(y, 3, 2);
        CHECK_VALUES(y, 0, 1, 104, 202, 5, 3, 306);
        CHECK_VALUES(dv, 0, 1, 4, 2, 5, 3, 6);
        CHECK_OK();
        gad_scope_end();
    }
}

TEST(scatter_add_random) {
    gad_rng *r = gad_rng_new(202);
    for (int it = 0; it < 3000; it++) {
        gad_dtype_t dt = g_fdts[it & 1];
        int rank = (int)gad_rng_int(r, 1, 6);
        int axis = (int)gad_rng_int(r, 0, rank);
        int64_t ds[GAD_MAX_RANK], is[GAD_MAX_RANK];
        for (int k = 0; k < rank; k++) {
            ds[k] = gad_rng_int(r, 1, 5);
            is[k] = k == axis ? gad_rng_int(r, 0, 7)
                              : (gad_rng_int(r, 0, 2) ? ds[k] : gad_rng_int(r, 0, ds[k] + 1));
        }
        if (it % 50 == 3) {
            ds[axis] = 40;
            is[axis] = 600; /* many duplicates */
        }
        int ax = gad_rng_int(r, 0, 2) ? axis : axis - rank;
        gad_scope_begin();
        gad_tensor *dst = make(ds, rank, dt, (int)gad_rng_int(r, 0, NKINDS), 0, 1);
        gad_tensor *index = make(is, rank, GAD_I64, (int)gad_rng_int(r, 0, NKINDS),
                                 -ds[axis], ds[axis]);
        gad_tensor *src = make(is, rank, dt, (int)gad_rng_int(r, 0, NKINDS), 0, 1);
        double *before = readf(dst);
        double *ref = ref_scatter(dst, ax, index, src);
        gad_tensor *y = gad_scatter_add(dst, ax, index, src);
        CMP_F(y, ref, ds, rank, dt, dt == GAD_F32 ? 1e-5 : 1e-12, "scatter_add random");
        CMP_F(dst, before, ds, rank, dt, 0, "scatter_add leaves dst unchanged");
        free(ref);
        free(before);
        gad_scope_end();
    }
    gad_rng_free(r);
}

TEST(scatter_add_errors) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_fdts[t], other = g_fdts[1 - t];
        gad_scope_begin();
        gad_tensor *dst = gad_zeros(SHP(3, 4), 2, dt);
        gad_tensor *src = fresh(SHP(3, 2), 2, dt, 0, 1);
        /* out of range for f32 and f64 (SPEC D5) */
        CHECK(gad_scatter_add(dst, 1, IV(L(0, 1, 2, 3, 4, 0), 3, 2), src) == NULL);
        CHECK_INDEX_ERR("scatter_add", 4, 4);
        CHECK(gad_scatter_add(dst, 1, IV(L(0, 1, 2, -5, 0, 0), 3, 2), src) == NULL);
        CHECK_INDEX_ERR("scatter_add", -5, 4);
        CHECK(gad_scatter_add(dst, 0, IV(L(0, 1, 2, 3, 0, 0), 3, 2), src) == NULL);
        CHECK_INDEX_ERR("scatter_add", 3, 3);
        CHECK(gad_scatter_add(dst, 1, IV(L(0, 1, 2, 3, 0, 1000), 3, 2), src) == NULL);
        CHECK_INDEX_ERR("scatter_add", 1000, 4);
        CHECK_VALUES(dst, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        /* index and src shapes differ */
        CHECK(gad_scatter_add(dst, 1, IV(L(0, 1, 2), 3, 1), src) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "scatter_add");
        CHECK(gad_scatter_add(dst, 1, IV(L(0, 1, 2, 3, 0, 1), 2, 3), src) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "scatter_add");
        /* index rank differs from dst's */
        CHECK(gad_scatter_add(dst, 0, IV(L(0, 1), 2), FV(dt, L(1, 2), 2)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "scatter_add");
        /* index off the axis larger than dst */
        CHECK(gad_scatter_add(dst, 1, gad_zeros(SHP(4, 1), 2, GAD_I64),
                              gad_zeros(SHP(4, 1), 2, dt)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "scatter_add");
        /* axis out of range */
        CHECK(gad_scatter_add(dst, 2, IV(L(0, 1, 2, 3, 0, 1), 3, 2), src) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "scatter_add");
        /* dtypes: dst/src mixed, non-i64 index, i64 data */
        CHECK(gad_scatter_add(dst, 1, IV(L(0, 1, 2, 3, 0, 1), 3, 2), gad_cast(src, other)) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, "scatter_add");
        CHECK(gad_scatter_add(dst, 1, gad_zeros(SHP(3, 2), 2, dt), src) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, "scatter_add");
        CHECK(gad_scatter_add(gad_zeros(SHP(3, 4), 2, GAD_I64), 1, gad_zeros(SHP(3, 2), 2, GAD_I64),
                              gad_zeros(SHP(3, 2), 2, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, "scatter_add");
        CHECK(gad_scatter_add(NULL, 0, IV(L(0), 1), src) == NULL);
        CHECK(gad_last_error() != NULL);
        gad_clear_error();
        gad_scope_end();
    }
}

/* ------------------------------------------------------------------------ */
/* take (SPEC D8)                                                            */
/* ------------------------------------------------------------------------ */

static double *ref_take(gad_tensor *x, int axis, gad_tensor *index) {
    int r = gad_rank(x);
    const int64_t *xs = gad_shape(x), *is = gad_shape(index);
    int a = axis < 0 ? axis + r : axis;
    int64_t n = gad_numel(index), d = xs[a];
    double *X = readf(x), *R = malloc((size_t)(n > 0 ? n : 1) * sizeof *R);
    int64_t *I = readi(index), ii[GAD_MAX_RANK], xi[GAD_MAX_RANK];
    for (int64_t p = 0; p < n; p++) {
        unravel(p, is, r - 1, ii);
        for (int k = 0, o = 0; k < r; k++)
            xi[k] = k == a ? (I[p] < 0 ? I[p] + d : I[p]) : ii[o++];
        R[p] = X[ravel(xi, xs, r)];
    }
    free(X);
    free(I);
    return R;
}

TEST(take_values) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_fdts[t];
        gad_scope_begin();
        /* SPEC §7.1: take(x, 1, [1,0]) on [[0.2,0.4],[0.6,0.8]] -> [0.4,0.6] */
        gad_tensor *x = FV(dt, L(0.2, 0.4, 0.6, 0.8), 2, 2);
        gad_tensor *y = gad_take(x, 1, IV(L(1, 0), 2));
        CHECK_SHAPE(y, 2);
        CHECK(gad_dtype(y) == dt);
        CHECK_VALUES(y, 1e-7, 0.4, 0.6);
        y = gad_take(x, -1, IV(L(-1, -2), 2));
        CHECK_VALUES(y, 1e-7, 0.4, 0.6);
        /* axis 0 of a [2,3]: index has shape [3] */
        gad_tensor *m = FV(dt, L(1, 2, 3, 4, 5, 6), 2, 3);
        y = gad_take(m, 0, IV(L(1, 0, -1), 3));
        CHECK_SHAPE(y, 3);
        CHECK_VALUES(y, 0, 4, 2, 6);
        /* rank 1: the index is rank 0 and so is the result */
        y = gad_take(FV(dt, L(7, 8, 9), 3), 0, gad_scalar(-1, GAD_I64));
        CHECK(y && gad_rank(y) == 0);
        CHECK_NEAR(gad_item(y), 9, 0);
        /* rank 3, middle axis */
        double v[24];
        for (int i = 0; i < 24; i++) v[i] = i;
        gad_tensor *c = F(dt, v, SHP(2, 3, 4), 3);
        y = gad_take(c, 1, IV(L(0, 1, 2, -1, 2, 1, 0, 0), 2, 4));
        CHECK_SHAPE(y, 2, 4);
        CHECK_VALUES(y, 0, 0, 5, 10, 11, 20, 17, 14, 15);
        /* transposed x */
        y = gad_take(gad_transpose(m), 1, IV(L(1, 0, 1), 3));
        CHECK_SHAPE(y, 3);
        CHECK_VALUES(y, 0, 4, 2, 6);
        /* empty */
        y = gad_take(gad_zeros(SHP(0, 3), 2, dt), 1, gad_zeros(SHP(0), 1, GAD_I64));
        CHECK_SHAPE(y, 0);
        CHECK_OK();
        gad_scope_end();
    }
}

TEST(take_random) {
    gad_rng *r = gad_rng_new(303);
    for (int it = 0; it < 3000; it++) {
        gad_dtype_t dt = g_fdts[it & 1];
        int rank = (int)gad_rng_int(r, 1, 6);
        int axis = (int)gad_rng_int(r, 0, rank);
        int64_t xs[GAD_MAX_RANK], is[GAD_MAX_RANK];
        for (int k = 0, o = 0; k < rank; k++) {
            xs[k] = gad_rng_int(r, k == axis ? 1 : 0, 5);
            if (it % 9 == 0 && k != axis) xs[k] = gad_rng_int(r, 1, 5);
            if (k != axis) is[o++] = xs[k];
        }
        if (it % 50 == 11) xs[axis] = 500;
        int ax = gad_rng_int(r, 0, 2) ? axis : axis - rank;
        gad_scope_begin();
        gad_tensor *x = make(xs, rank, dt, (int)gad_rng_int(r, 0, NKINDS), 0, 1);
        gad_tensor *index = make(is, rank - 1, GAD_I64, (int)gad_rng_int(r, 0, NKINDS),
                                 -xs[axis], xs[axis]);
        double *ref = ref_take(x, ax, index);
        gad_tensor *y = gad_take(x, ax, index);
        CMP_F(y, ref, is, rank - 1, dt, 0, "take random");
        free(ref);
        gad_scope_end();
    }
    gad_rng_free(r);
}

TEST(take_errors) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_fdts[t];
        gad_scope_begin();
        gad_tensor *x = fresh(SHP(2, 3, 4), 3, dt, 0, 1);
        /* wrong index shape */
        CHECK(gad_take(x, 1, gad_zeros(SHP(2, 3), 2, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "take");
        CHECK(gad_take(x, 1, gad_zeros(SHP(8), 1, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "take");
        CHECK(gad_take(x, 1, gad_zeros(SHP(2, 3, 4), 3, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "take");
        CHECK(gad_take(x, 0, gad_zeros(SHP(4, 3), 2, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "take");
        CHECK(gad_take(fresh(SHP(2, 2), 2, dt, 0, 1), 1, gad_zeros(SHP(1, 2), 2, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "take");
        /* out of range (f32 and f64) */
        gad_tensor *idx = gad_zeros(SHP(2, 4), 2, GAD_I64);
        int64_t *p = gad_data_mut(idx);
        p[5] = 3;
        CHECK(gad_take(x, 1, idx) == NULL);
        CHECK_INDEX_ERR("take", 3, 3);
        p[5] = -4;
        CHECK(gad_take(x, 1, idx) == NULL);
        CHECK_INDEX_ERR("take", -4, 3);
        CHECK(gad_take(x, -1, IV(L(0, 1, 2, 9, 0, 0), 2, 3)) == NULL);
        CHECK_INDEX_ERR("take", 9, 4);
        /* dtype of index; axis out of range */
        CHECK(gad_take(x, 1, gad_zeros(SHP(2, 4), 2, dt)) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, "take");
        CHECK(gad_take(x, 3, gad_zeros(SHP(2, 3), 2, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "take");
        CHECK(gad_take(x, -4, gad_zeros(SHP(3, 4), 2, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "take");
        CHECK(gad_take(gad_scalar(1, dt), 0, gad_scalar(0, GAD_I64)) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, "take");
        gad_scope_end();
    }
}

/* ------------------------------------------------------------------------ */
/* cat and stack                                                             */
/* ------------------------------------------------------------------------ */

/* Check y = cat(ts, axis) (or stack when is_stack) against a naive loop. */
static void check_join_(gad_tensor *y, gad_tensor *const *ts, int n, int axis,
                        int is_stack, const char *what, const char *file, int line) {
    int r = gad_rank(ts[0]);
    int ro = r + (is_stack ? 1 : 0);
    int a = axis < 0 ? axis + ro : axis;
    int64_t os[GAD_MAX_RANK];
    if (is_stack) {
        for (int k = 0, o = 0; k < ro; k++) os[k] = k == a ? n : gad_shape(ts[0])[o++];
    } else {
        memcpy(os, gad_shape(ts[0]), (size_t)r * sizeof *os);
        os[a] = 0;
        for (int i = 0; i < n; i++) os[a] += gad_shape(ts[i])[a];
    }
    int64_t total = numel_of(os, ro);
    gad_dtype_t dt = gad_dtype(ts[0]);
    double *rf = NULL, *pf[64] = {0};
    int64_t *ri = NULL, *pi[64] = {0};
    if (dt == GAD_I64) {
        ri = malloc((size_t)(total > 0 ? total : 1) * sizeof *ri);
        for (int i = 0; i < n; i++) pi[i] = readi(ts[i]);
    } else {
        rf = malloc((size_t)(total > 0 ? total : 1) * sizeof *rf);
        for (int i = 0; i < n; i++) pf[i] = readf(ts[i]);
    }
    int64_t oi[GAD_MAX_RANK], pidx[GAD_MAX_RANK];
    for (int64_t p = 0; p < total; p++) {
        unravel(p, os, ro, oi);
        int piece = 0;
        int64_t pos;
        if (is_stack) {
            piece = (int)oi[a];
            for (int k = 0, o = 0; k < ro; k++)
                if (k != a) pidx[o++] = oi[k];
            pos = ravel(pidx, gad_shape(ts[piece]), r);
        } else {
            memcpy(pidx, oi, (size_t)r * sizeof *pidx);
            while (pidx[a] >= gad_shape(ts[piece])[a]) pidx[a] -= gad_shape(ts[piece++])[a];
            pos = ravel(pidx, gad_shape(ts[piece]), r);
        }
        if (ri) ri[p] = pi[piece][pos];
        else rf[p] = pf[piece][pos];
    }
    if (ri) cmp_i_(y, ri, os, ro, what, file, line);
    else cmp_f_(y, rf, os, ro, dt, 0, what, file, line);
    for (int i = 0; i < n; i++) {
        free(pf[i]);
        free(pi[i]);
    }
    free(rf);
    free(ri);
}
#define CHECK_CAT(y, ts, n, axis, what) check_join_((y), (ts), (n), (axis), 0, (what), __FILE__, __LINE__)
#define CHECK_STACK(y, ts, n, axis, what) check_join_((y), (ts), (n), (axis), 1, (what), __FILE__, __LINE__)

static const gad_dtype_t g_all_dts[3] = {GAD_F32, GAD_F64, GAD_I64};
#define BIG_LO (-(INT64_C(1) << 62))
#define BIG_HI (INT64_C(1) << 62)

TEST(cat_values) {
    gad_scope_begin();
    /* SPEC §7.6: cat([1,2],[3,4]) = [1,2,3,4] */
    gad_tensor *p2[2] = {FV(GAD_F32, L(1, 2), 2), FV(GAD_F32, L(3, 4), 2)};
    gad_tensor *y = gad_cat(p2, 2, 0);
    CHECK_SHAPE(y, 4);
    CHECK(gad_dtype(y) == GAD_F32);
    CHECK_VALUES(y, 0, 1, 2, 3, 4);
    /* SPEC §7.1: cat([reshape([1,2],[1,2]), [[5,6]]], 0) */
    gad_tensor *q[2] = {gad_reshape(FV(GAD_F64, L(1, 2), 2), SHP(1, 2), 2), FV(GAD_F64, L(5, 6), 1, 2)};
    y = gad_cat(q, 2, 0);
    CHECK_SHAPE(y, 2, 2);
    CHECK(gad_dtype(y) == GAD_F64);
    CHECK_VALUES(y, 0, 1, 2, 5, 6);
    y = gad_cat(q, 2, -1);
    CHECK_SHAPE(y, 1, 4);
    CHECK_VALUES(y, 0, 1, 2, 5, 6);
    /* i64 keeps every bit (D8) */
    int64_t big = (INT64_C(1) << 60) + 1;
    gad_tensor *ip[3] = {IV(L(big, -big), 2), IV(L(INT64_MAX), 1), IV(L(INT64_MIN, 3), 2)};
    y = gad_cat(ip, 3, 0);
    CMP_I(y, ((const int64_t[]){big, -big, INT64_MAX, INT64_MIN, 3}), SHP(5), 1, "cat i64");
    /* n = 1 is a copy */
    y = gad_cat(p2, 1, 0);
    CHECK_SHAPE(y, 2);
    CHECK_VALUES(y, 0, 1, 2);
    /* 0-sized pieces */
    gad_tensor *z[4] = {gad_zeros(SHP(0, 3), 2, GAD_F32), FV(GAD_F32, L(1, 2, 3), 1, 3),
                        gad_zeros(SHP(0, 3), 2, GAD_F32), FV(GAD_F32, L(4, 5, 6, 7, 8, 9), 2, 3)};
    y = gad_cat(z, 4, 0);
    CHECK_SHAPE(y, 3, 3);
    CHECK_VALUES(y, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
    y = gad_cat(z, 1, 0);
    CHECK_SHAPE(y, 0, 3);
    gad_tensor *z2[2] = {z[0], z[2]};
    y = gad_cat(z2, 2, 0);
    CHECK_SHAPE(y, 0, 3);
    y = gad_cat(z2, 2, 1);
    CHECK_SHAPE(y, 0, 6);
    /* the inputs are unchanged */
    CHECK_VALUES(p2[0], 0, 1, 2);
    CHECK_VALUES(p2[1], 0, 3, 4);
    CHECK_OK();
    gad_scope_end();
}

TEST(cat_random) {
    gad_rng *r = gad_rng_new(404);
    for (int it = 0; it < 2000; it++) {
        gad_dtype_t dt = g_all_dts[it % 3];
        int rank = (int)gad_rng_int(r, 1, 6);
        int axis = (int)gad_rng_int(r, 0, rank);
        int n = (int)gad_rng_int(r, 1, 6);
        if (it % 60 == 5) n = 40;
        int64_t s[GAD_MAX_RANK];
        for (int k = 0; k < rank; k++) s[k] = gad_rng_int(r, it % 17 == 0 ? 0 : 1, 5);
        int ax = gad_rng_int(r, 0, 2) ? axis : axis - rank;
        gad_scope_begin();
        gad_tensor *ts[64];
        for (int i = 0; i < n; i++) {
            int64_t si[GAD_MAX_RANK];
            memcpy(si, s, sizeof si);
            si[axis] = gad_rng_int(r, 0, 4);
            ts[i] = make(si, rank, dt, (int)gad_rng_int(r, 0, NKINDS), BIG_LO, BIG_HI);
        }
        gad_tensor *y = gad_cat(ts, n, ax);
        CHECK_CAT(y, ts, n, ax, "cat random");
        gad_scope_end();
    }
    gad_rng_free(r);
}

TEST(cat_errors) {
    gad_scope_begin();
    gad_tensor *a = gad_zeros(SHP(2, 3), 2, GAD_F32), *b = gad_zeros(SHP(2, 3), 2, GAD_F64);
    gad_tensor *c = gad_zeros(SHP(2, 3), 2, GAD_I64), *d = gad_zeros(SHP(2, 4), 2, GAD_F32);
    gad_tensor *e = gad_zeros(SHP(2, 3, 1), 3, GAD_F32), *f = gad_zeros(SHP(6), 1, GAD_F32);
    /* n = 0 */
    CHECK(gad_cat((gad_tensor *[]){a}, 0, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    CHECK(gad_cat(NULL, 0, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    /* mixed dtypes */
    CHECK(gad_cat((gad_tensor *[]){a, b}, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "cat");
    CHECK(gad_cat((gad_tensor *[]){c, a}, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "cat");
    CHECK(gad_cat((gad_tensor *[]){a, a, c}, 3, 1) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "cat");
    /* mixed ranks */
    CHECK(gad_cat((gad_tensor *[]){a, e}, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    CHECK(gad_cat((gad_tensor *[]){e, a}, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    CHECK(gad_cat((gad_tensor *[]){f, a}, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    /* off-axis dims differ */
    CHECK(gad_cat((gad_tensor *[]){a, d}, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    CHECK(gad_cat((gad_tensor *[]){a, gad_transpose(a)}, 2, 1) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    /* ... but on the axis they may */
    gad_tensor *y = gad_cat((gad_tensor *[]){a, d}, 2, 1);
    CHECK_SHAPE(y, 2, 7);
    /* axis out of range; rank 0 has no axis */
    CHECK(gad_cat((gad_tensor *[]){a, a}, 2, 2) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    CHECK(gad_cat((gad_tensor *[]){a, a}, 2, -3) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    gad_tensor *s = gad_scalar_f32(1);
    CHECK(gad_cat((gad_tensor *[]){s, s}, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    /* fuzz finding: empty pieces whose sizes along the axis sum past
     * INT64_MAX (each alone is a valid empty tensor) */
    gad_tensor *h = gad_zeros((int64_t[]){0, INT64_MAX / 8 - 1}, 2, GAD_F32);
    CHECK(h != NULL);
    CHECK(gad_cat((gad_tensor *[]){h, h, h, h, h, h, h, h, h}, 9, 1) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cat");
    /* a NULL piece */
    CHECK(gad_cat((gad_tensor *[]){a, NULL}, 2, 0) == NULL);
    CHECK(gad_last_error() != NULL);
    gad_clear_error();
    CHECK_OK();
    gad_scope_end();
}

TEST(stack_values) {
    gad_scope_begin();
    /* SPEC §7.1: stack([x, [3,4]], 0) with x = [1,2] */
    gad_tensor *p[2] = {FV(GAD_F32, L(1, 2), 2), FV(GAD_F32, L(3, 4), 2)};
    gad_tensor *y = gad_stack(p, 2, 0);
    CHECK_SHAPE(y, 2, 2);
    CHECK(gad_dtype(y) == GAD_F32);
    CHECK_VALUES(y, 0, 1, 2, 3, 4);
    y = gad_stack(p, 2, 1);
    CHECK_SHAPE(y, 2, 2);
    CHECK_VALUES(y, 0, 1, 3, 2, 4);
    y = gad_stack(p, 2, -1);
    CHECK_SHAPE(y, 2, 2);
    CHECK_VALUES(y, 0, 1, 3, 2, 4);
    y = gad_stack(p, 2, -2);
    CHECK_VALUES(y, 0, 1, 2, 3, 4);
    /* rank-0 pieces give a vector */
    gad_tensor *s[3] = {gad_scalar_f64(1.5), gad_scalar_f64(-2), gad_scalar_f64(7)};
    y = gad_stack(s, 3, 0);
    CHECK_SHAPE(y, 3);
    CHECK_VALUES(y, 0, 1.5, -2, 7);
    y = gad_stack(s, 3, -1);
    CHECK_SHAPE(y, 3);
    /* i64 (D8) */
    int64_t big = (INT64_C(1) << 61) + 3;
    gad_tensor *ip[2] = {IV(L(big, 1), 2), IV(L(-big, INT64_MIN), 2)};
    y = gad_stack(ip, 2, 1);
    CMP_I(y, ((const int64_t[]){big, -big, 1, INT64_MIN}), SHP(2, 2), 2, "stack i64");
    /* one piece */
    y = gad_stack(p, 1, 0);
    CHECK_SHAPE(y, 1, 2);
    CHECK_VALUES(y, 0, 1, 2);
    /* empty pieces */
    gad_tensor *z[2] = {gad_zeros(SHP(0, 2), 2, GAD_F32), gad_zeros(SHP(0, 2), 2, GAD_F32)};
    y = gad_stack(z, 2, 1);
    CHECK_SHAPE(y, 0, 2, 2);
    CHECK_OK();
    gad_scope_end();
}

TEST(stack_random) {
    gad_rng *r = gad_rng_new(505);
    for (int it = 0; it < 2000; it++) {
        gad_dtype_t dt = g_all_dts[it % 3];
        int rank = (int)gad_rng_int(r, 0, 6);
        int axis = (int)gad_rng_int(r, -(rank + 1), rank + 1); /* [-(r+1), r] */
        int n = (int)gad_rng_int(r, 1, 6);
        if (it % 60 == 5) n = 33; /* more than 16 pieces */
        int64_t s[GAD_MAX_RANK];
        for (int k = 0; k < rank; k++) s[k] = gad_rng_int(r, it % 19 == 0 ? 0 : 1, 5);
        gad_scope_begin();
        gad_tensor *ts[64];
        for (int i = 0; i < n; i++)
            ts[i] = make(s, rank, dt, (int)gad_rng_int(r, 0, NKINDS), BIG_LO, BIG_HI);
        gad_tensor *y = gad_stack(ts, n, axis);
        CHECK_STACK(y, ts, n, axis, "stack random");
        gad_scope_end();
    }
    gad_rng_free(r);
}

TEST(stack_errors) {
    gad_scope_begin();
    gad_tensor *a = gad_zeros(SHP(2, 3), 2, GAD_F32), *b = gad_zeros(SHP(3, 2), 2, GAD_F32);
    gad_tensor *c = gad_zeros(SHP(2, 3), 2, GAD_F64), *e = gad_zeros(SHP(2, 3, 1), 3, GAD_F32);
    /* n = 0 */
    CHECK(gad_stack((gad_tensor *[]){a}, 0, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "stack");
    CHECK(gad_stack(NULL, 0, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "stack");
    /* differing shapes and ranks */
    CHECK(gad_stack((gad_tensor *[]){a, b}, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "stack");
    CHECK(gad_stack((gad_tensor *[]){a, a, e}, 3, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "stack");
    /* axis outside [-(r+1), r] */
    CHECK(gad_stack((gad_tensor *[]){a, a}, 2, 3) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "stack");
    CHECK(gad_stack((gad_tensor *[]){a, a}, 2, -4) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "stack");
    gad_tensor *s = gad_scalar_f32(1);
    CHECK(gad_stack((gad_tensor *[]){s}, 1, 1) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "stack");
    CHECK(gad_stack((gad_tensor *[]){s}, 1, -2) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "stack");
    /* mixed dtypes: a dtype error reported by stack */
    CHECK(gad_stack((gad_tensor *[]){a, c}, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "stack");
    CHECK(gad_stack((gad_tensor *[]){a, gad_zeros(SHP(2, 3), 2, GAD_I64)}, 2, 1) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "stack");
    /* a rank-8 piece cannot gain an axis */
    gad_tensor *r8 = gad_zeros(SHP(1, 1, 1, 1, 1, 1, 1, 2), 8, GAD_F32);
    CHECK(gad_stack((gad_tensor *[]){r8, r8}, 2, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "stack");
    /* a NULL piece */
    CHECK(gad_stack((gad_tensor *[]){a, NULL}, 2, 0) == NULL);
    CHECK(gad_last_error() != NULL);
    gad_clear_error();
    /* still usable afterwards */
    gad_tensor *y = gad_stack((gad_tensor *[]){a, a}, 2, 2);
    CHECK_SHAPE(y, 2, 3, 2);
    CHECK_OK();
    gad_scope_end();
}

/* Large operands (parallel copies) with 1 and 2 threads. */
TEST(index_large) {
    for (int th = 1; th <= 2; th++) {
        gad_set_num_threads(th);
        for (int t = 0; t < 3; t++) {
            gad_dtype_t dt = g_all_dts[t];
            gad_scope_begin();
            gad_tensor *ts[3] = {make(SHP(200, 400), 2, dt, 1, BIG_LO, BIG_HI),
                                 make(SHP(200, 400), 2, dt, 3, BIG_LO, BIG_HI),
                                 make(SHP(200, 400), 2, dt, 0, BIG_LO, BIG_HI)};
            CHECK_CAT(gad_cat(ts, 3, 0), ts, 3, 0, "large cat 0");
            CHECK_CAT(gad_cat(ts, 3, 1), ts, 3, 1, "large cat 1");
            CHECK_STACK(gad_stack(ts, 3, 1), ts, 3, 1, "large stack 1");
            CHECK_STACK(gad_stack(ts, 3, -1), ts, 3, -1, "large stack -1");
            if (dt != GAD_I64) {
                gad_tensor *x = make(SHP(300, 400), 2, dt, 2, 0, 1);
                gad_tensor *ig = make(SHP(300, 500), 2, GAD_I64, 1, -400, 400);
                double *ref = ref_gather(x, 1, ig);
                CMP_F(gad_gather(x, 1, ig), ref, SHP(300, 500), 2, dt, 0, "large gather");
                free(ref);
                gad_tensor *it = make(SHP(300), 1, GAD_I64, 3, -400, 400);
                ref = ref_take(x, -1, it);
                CMP_F(gad_take(x, -1, it), ref, SHP(300), 1, dt, 0, "large take");
                free(ref);
                gad_tensor *is = make(SHP(300, 700), 2, GAD_I64, 5, -400, 400);
                gad_tensor *src = make(SHP(300, 700), 2, dt, 1, 0, 1);
                ref = ref_scatter(x, 1, is, src);
                CMP_F(gad_scatter_add(x, 1, is, src), ref, SHP(300, 400), 2, dt,
                      dt == GAD_F32 ? 1e-5 : 1e-12, "large scatter_add");
                free(ref);
            }
            CHECK_OK();
            gad_scope_end();
        }
    }
    gad_set_num_threads(0);
}

/* Nothing leaks through the error paths or the results. */
TEST(index_no_leak) {
    gad_mem_stats before, after;
    gad_mem_stats_get(&before);
    gad_scope_begin();
    gad_tensor *x = fresh(SHP(3, 4), 2, GAD_F32, 0, 1);
    gad_tensor *bad = gad_transpose(IV(L(0, 1, 9, 2, 3, 0), 2, 3)); /* non-contiguous */
    CHECK(gad_gather(x, 1, bad) == NULL);
    CHECK_ERR(GAD_ERR_INDEX, "gather");
    CHECK(gad_scatter_add(x, 1, bad, gad_zeros(SHP(3, 2), 2, GAD_F32)) == NULL);
    CHECK_ERR(GAD_ERR_INDEX, "scatter_add");
    gad_tensor *y = gad_scatter_add(x, 1, gad_transpose(IV(L(0, 1, 2, 3, 3, 0), 2, 3)),
                                    gad_transpose(fresh(SHP(2, 3), 2, GAD_F32, 0, 1)));
    CHECK_SHAPE(y, 3, 4);
    gad_tensor *many[20];
    for (int i = 0; i < 20; i++) many[i] = gad_transpose(x);
    CHECK_SHAPE(gad_stack(many, 20, 1), 4, 20, 3);
    CHECK_OK();
    gad_scope_end();
    gad_mem_stats_get(&after);
    CHECK(after.live_tensors == before.live_tensors);
    CHECK(after.live_storages == before.live_storages);
    CHECK(after.live_bytes == before.live_bytes);
}

int main(void) {
    g_rng = gad_rng_new(2024);
    RUN(gather_values);
    RUN(gather_random);
    RUN(gather_errors);
    RUN(scatter_add_values);
    RUN(scatter_add_random);
    RUN(scatter_add_errors);
    RUN(take_values);
    RUN(take_random);
    RUN(take_errors);
    RUN(cat_values);
    RUN(cat_random);
    RUN(cat_errors);
    RUN(stack_values);
    RUN(stack_random);
    RUN(stack_errors);
    RUN(index_large);
    RUN(index_no_leak);
    gad_rng_free(g_rng);
    gad_cache_trim();
    return test_summary();
}
