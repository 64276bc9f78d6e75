/* test_matmul.c: gad_matmul against a naive triple loop in double.
 *
 * Every case is checked with BLAS on and off (when gad has BLAS) and with 1
 * and 2 threads, for f32 and f64: 2-D products of many sizes (empty ones
 * included), NumPy's 1-D rules (SPEC D2), broadcast batch dims, and
 * operands that are views (transposed, permuted, sliced with positive and
 * negative steps, broadcast with stride 0). Then the errors. */
#include "test.h"

static gad_rng *g_rng;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

/* Uniform values in [-1, 1) of the given shape and float dtype. */
static gad_tensor *rnd(const int64_t *shape, int rank, gad_dtype_t dt) {
    return gad_rng_uniform_tensor(g_rng, shape, rank, dt, -1.0, 1.0);
}
#define RND(dt, ...) \
    rnd((const int64_t[]){__VA_ARGS__}, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (dt))

static double *read_all(gad_tensor *t) {
    int64_t n = gad_numel(t);
    double *p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
    if (n > 0) gad_read_f64(t, p, (size_t)n);
    return p;
}

static void shape_str(char *buf, const int64_t *s, int r) {
    char *p = buf;
    *p++ = '[';
    for (int i = 0; i < r; i++) p += sprintf(p, i ? ",%lld" : "%lld", (long long)s[i]);
    *p++ = ']';
    *p = 0;
}

/* NumPy's matmul in double. Returns the values (row-major) and writes the
 * result shape; *K gets the contraction length. Assumes valid shapes. */
static double *naive_matmul(gad_tensor *a, gad_tensor *b, int64_t *oshape,
                            int *orank, int64_t *Kout) {
    int ra = gad_rank(a), rb = gad_rank(b);
    const int64_t *sa = gad_shape(a), *sb = gad_shape(b);
    int64_t M = ra == 1 ? 1 : sa[ra - 2], K = sa[ra - 1];
    int64_t N = rb == 1 ? 1 : sb[rb - 1];
    int na = ra == 1 ? 0 : ra - 2, nbr = rb == 1 ? 0 : rb - 2;
    int nb = na > nbr ? na : nbr;
    int64_t bs[GAD_MAX_RANK], da[GAD_MAX_RANK], db[GAD_MAX_RANK];
    int64_t nbatch = 1;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - na), ib = i - (nb - nbr);
        da[i] = ia >= 0 ? sa[ia] : 1;
        db[i] = ib >= 0 ? sb[ib] : 1;
        bs[i] = da[i] == 1 ? db[i] : da[i];
        nbatch *= bs[i];
    }
    double *A = read_all(a), *B = read_all(b);
    int64_t nout = nbatch * M * N;
    double *R = calloc((size_t)(nout > 0 ? nout : 1), sizeof *R);
    for (int64_t k = 0; k < nbatch; k++) {
        int64_t rem = k, oa = 0, ob = 0, ma = 1, mb = 1;
        for (int d = nb - 1; d >= 0; d--) {
            int64_t i = rem % bs[d];
            rem /= bs[d];
            oa += (da[d] == 1 ? 0 : i) * ma;
            ob += (db[d] == 1 ? 0 : i) * mb;
            ma *= da[d];
            mb *= db[d];
        }
        const double *Ak = A + oa * M * K, *Bk = B + ob * K * N;
        double *Rk = R + k * M * N;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t p = 0; p < K; p++) s += Ak[i * K + p] * Bk[p * N + j];
                Rk[i * N + j] = s;
            }
    }
    free(A);
    free(B);
    int r = 0;
    for (int i = 0; i < nb; i++) oshape[r++] = bs[i];
    if (ra > 1) oshape[r++] = M;
    if (rb > 1) oshape[r++] = N;
    *orank = r;
    *Kout = K;
    return R;
}

static const int g_threads[2] = {1, 2};

/* Run gad_matmul(a, b) under every configuration and compare with the naive
 * product elementwise. */
static void check_mm_(const char *name, gad_tensor *a, gad_tensor *b,
                      const char *file, int line) {
    test_checks_++;
    if (!a || !b) {
        test_failures_++;
        fprintf(stderr, "%s:%d: [%s] %s: operand is NULL: %s\n", file, line,
                test_current_, name,
                gad_last_error() ? gad_last_error()->text : "");
        gad_clear_error();
        return;
    }
    int64_t oshape[GAD_MAX_RANK];
    int orank;
    int64_t K;
    double *ref = naive_matmul(a, b, oshape, &orank, &K);
    int64_t nout = 1;
    for (int i = 0; i < orank; i++) nout *= oshape[i];
    double tol = gad_dtype(a) == GAD_F32 ? 1e-5 * sqrt((double)(K > 1 ? K : 1))
                                          : 1e-12;
    char sa[128], sb[128], so[128];
    shape_str(sa, gad_shape(a), gad_rank(a));
    shape_str(sb, gad_shape(b), gad_rank(b));
    shape_str(so, oshape, orank);
    int nblas = gad_blas_available() ? 2 : 1;
    double *got = malloc((size_t)(nout > 0 ? nout : 1) * sizeof *got);
    int failed = 0;
    for (int bl = 0; bl < nblas && !failed; bl++) {
        gad_set_blas(bl);
        for (int ti = 0; ti < 2 && !failed; ti++) {
            gad_set_num_threads(g_threads[ti]);
            gad_scope_begin();
            gad_tensor *y = gad_matmul(a, b);
            const char *why = NULL;
            char extra[400] = "";
            if (!y) {
                why = "matmul returned NULL";
                snprintf(extra, sizeof extra, "%s",
                         gad_last_error() ? gad_last_error()->text : "");
            } else if (gad_dtype(y) != gad_dtype(a)) {
                why = "wrong dtype";
            } else if (gad_rank(y) != orank ||
                       (orank && memcmp(gad_shape(y), oshape,
                                        (size_t)orank * sizeof(int64_t)))) {
                why = "wrong shape";
                shape_str(extra, gad_shape(y), gad_rank(y));
            } else {
                if (nout > 0) gad_read_f64(y, got, (size_t)nout);
                for (int64_t i = 0; i < nout; i++) {
                    double s = fabs(ref[i]) > 1 ? fabs(ref[i]) : 1;
                    if (!test_near_(got[i], ref[i], tol * s)) {
                        why = "wrong value";
                        snprintf(extra, sizeof extra,
                                 "element %lld: %.10g, expected %.10g (tol %g)",
                                 (long long)i, got[i], ref[i], tol * s);
                        break;
                    }
                }
            }
            if (why) {
                failed = 1;
                test_failures_++;
                fprintf(stderr,
                        "%s:%d: [%s] %s: %s %s @ %s -> %s (blas %d, threads "
                        "%d): %s %s\n",
                        file, line, test_current_, name,
                        gad_dtype_name(gad_dtype(a)), sa, sb, so, bl,
                        g_threads[ti], why, extra);
            }
            gad_clear_error();
            gad_scope_end();
        }
    }
    gad_set_blas(1);
    gad_set_num_threads(0);
    free(got);
    free(ref);
}
#define CHECK_MM(name, a, b) check_mm_((name), (a), (b), __FILE__, __LINE__)

static const gad_dtype_t g_dts[2] = {GAD_F32, GAD_F64};

static gad_tensor *T(gad_tensor *t) { return gad_transpose(t); }

/* A [rows, cols] operand built in one of four ways: 0 plain, 1 as a
 * transposed view, 2 as a view with step 2 on both axes, 3 reversed on both
 * axes (negative steps). */
static gad_tensor *mat(int64_t rows, int64_t cols, gad_dtype_t dt, int kind) {
    switch (kind) {
    case 1:
        return T(rnd((int64_t[]){cols, rows}, 2, dt));
    case 2: {
        gad_tensor *big = rnd((int64_t[]){2 * rows + 1, 2 * cols + 1}, 2, dt);
        gad_range r[2] = {GAD_RANGE_STEP(1, 2 * rows + 1, 2),
                          GAD_RANGE_STEP(0, 2 * cols, 2)};
        return gad_slice(big, r, 2);
    }
    case 3: {
        gad_tensor *big = rnd((int64_t[]){rows, cols}, 2, dt);
        gad_range r[2] = {GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1),
                          GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1)};
        return gad_slice(big, r, 2);
    }
    default:
        return rnd((int64_t[]){rows, cols}, 2, dt);
    }
}

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */
/* ------------------------------------------------------------------------ */

TEST(config_blas_threads) {
    int avail = gad_blas_available();
    CHECK(avail == 0 || avail == 1);
    int prev = gad_set_blas(1);
    (void)prev;
    if (avail) {
        CHECK(gad_set_blas(0) == 1);
        CHECK(gad_set_blas(1) == 0);
        CHECK(gad_set_blas(1) == 1);
    } else {
        CHECK(gad_set_blas(1) == 0);
        CHECK(gad_set_blas(0) == 0);
    }
    gad_set_num_threads(1);
    CHECK(gad_num_threads() == 1);
    gad_set_num_threads(0);
    CHECK(gad_num_threads() >= 1);
    CHECK_OK();
}

/* ------------------------------------------------------------------------ */
/* Fixed values                                                              */
/* ------------------------------------------------------------------------ */

TEST(small_exact_values) {
    gad_scope_begin();
    /* [2,3] @ [3,2] */
    gad_tensor *a = gad_from_f32((float[]){1, 2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2);
    gad_tensor *b = gad_from_f32((float[]){7, 8, 9, 10, 11, 12}, (int64_t[]){3, 2}, 2);
    gad_tensor *y = gad_matmul(a, b);
    CHECK_SHAPE(y, 2, 2);
    CHECK(gad_dtype(y) == GAD_F32);
    CHECK_VALUES(y, 0, 58, 64, 139, 154);
    /* SPEC §7.10: [1,2,3] @ [4,5,6] = 32 with shape [] */
    gad_tensor *u = gad_from_f64((double[]){1, 2, 3}, (int64_t[]){3}, 1);
    gad_tensor *v = gad_from_f64((double[]){4, 5, 6}, (int64_t[]){3}, 1);
    gad_tensor *d = gad_matmul(u, v);
    CHECK(d && gad_rank(d) == 0);
    CHECK(gad_dtype(d) == GAD_F64);
    CHECK_NEAR(gad_item(d), 32.0, 0);
    gad_tensor *uf = gad_from_f32((float[]){1, 2, 3}, (int64_t[]){3}, 1);
    gad_tensor *vf = gad_from_f32((float[]){4, 5, 6}, (int64_t[]){3}, 1);
    gad_tensor *df = gad_matmul(uf, vf);
    CHECK(df && gad_rank(df) == 0);
    CHECK_NEAR(gad_item(df), 32.0, 0);
    /* SPEC §7.10: [2,4] @ transpose([2,4]) has shape [2,2] */
    gad_tensor *m = gad_from_f32((float[]){1, 2, 3, 4, 5, 6, 7, 8}, (int64_t[]){2, 4}, 2);
    gad_tensor *mm = gad_matmul(m, gad_transpose(m));
    CHECK_SHAPE(mm, 2, 2);
    CHECK_VALUES(mm, 0, 30, 70, 70, 174);
    /* [m,k] @ [k] -> [m]; [k] @ [k,n] -> [n] (NumPy, not g's [1,n]) */
    gad_tensor *mv = gad_matmul(a, gad_from_f32((float[]){1, 0, -1}, (int64_t[]){3}, 1));
    CHECK_SHAPE(mv, 2);
    CHECK_VALUES(mv, 0, -2, -2);
    gad_tensor *vm = gad_matmul(gad_from_f32((float[]){1, -1, 2}, (int64_t[]){3}, 1), b);
    CHECK_SHAPE(vm, 2);
    CHECK_VALUES(vm, 0, 20, 22);
    /* [k] @ [k,1] -> [1] */
    gad_tensor *vc = gad_matmul(gad_from_f32((float[]){1, -1, 2}, (int64_t[]){3}, 1),
                                gad_from_f32((float[]){3, 4, 5}, (int64_t[]){3, 1}, 2));
    CHECK_SHAPE(vc, 1);
    CHECK_VALUES(vc, 0, 9);
    /* [1,k] @ [k] -> [1] */
    gad_tensor *rv = gad_matmul(gad_from_f32((float[]){1, -1, 2}, (int64_t[]){1, 3}, 2),
                                gad_from_f32((float[]){3, 4, 5}, (int64_t[]){3}, 1));
    CHECK_SHAPE(rv, 1);
    CHECK_VALUES(rv, 0, 9);
    /* 1xK @ Kx1 -> [1,1] */
    gad_tensor *oo = gad_matmul(gad_from_f32((float[]){1, -1, 2}, (int64_t[]){1, 3}, 2),
                                gad_from_f32((float[]){3, 4, 5}, (int64_t[]){3, 1}, 2));
    CHECK_SHAPE(oo, 1, 1);
    CHECK_VALUES(oo, 0, 9);
    /* identity */
    gad_tensor *e = gad_matmul(gad_eye(3, GAD_F64), gad_cast(b, GAD_F64));
    CHECK_SHAPE(e, 3, 2);
    CHECK_VALUES(e, 0, 7, 8, 9, 10, 11, 12);
    /* the inputs are unchanged */
    CHECK_VALUES(a, 0, 1, 2, 3, 4, 5, 6);
    CHECK_VALUES(b, 0, 7, 8, 9, 10, 11, 12);
    CHECK_OK();
    gad_scope_end();
}

/* SPEC §3.2: [2,1,2,3] @ [3,3,2] -> [2,3,2,2], checked by hand. */
TEST(spec_batch_broadcast_example) {
    gad_scope_begin();
    double av[12], bv[18];
    for (int i = 0; i < 12; i++) av[i] = i + 1;
    for (int i = 0; i < 18; i++) bv[i] = (i % 5) - 2;
    gad_tensor *a = gad_from_f64(av, (int64_t[]){2, 1, 2, 3}, 4);
    gad_tensor *b = gad_from_f64(bv, (int64_t[]){3, 3, 2}, 3);
    gad_tensor *y = gad_matmul(a, b);
    CHECK_SHAPE(y, 2, 3, 2, 2);
    double want[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int m = 0; m < 2; m++)
                for (int n = 0; n < 2; n++) {
                    double s = 0;
                    for (int k = 0; k < 3; k++)
                        s += av[i * 6 + m * 3 + k] * bv[j * 6 + k * 2 + n];
                    want[((i * 3 + j) * 2 + m) * 2 + n] = s;
                }
    test_checks_++;
    if (!test_values_(y, want, 24, 0, __FILE__, __LINE__)) test_failures_++;
    for (int d = 0; d < 2; d++) {
        gad_tensor *af = gad_cast(a, d ? GAD_F64 : GAD_F32);
        gad_tensor *bf = gad_cast(b, d ? GAD_F64 : GAD_F32);
        CHECK_MM("spec [2,1,2,3]@[3,3,2]", af, bf);
    }
    CHECK_OK();
    gad_scope_end();
}

/* ------------------------------------------------------------------------ */
/* 2-D                                                                       */
/* ------------------------------------------------------------------------ */

static const int64_t g_sizes[] = {1, 3, 7, 17, 33, 65, 129};
#define NSIZES ((int)(sizeof g_sizes / sizeof g_sizes[0]))

TEST(mm_2d_all_sizes) {
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < NSIZES; i++)
            for (int j = 0; j < NSIZES; j++)
                for (int k = 0; k < NSIZES; k++) {
                    /* every size combination in the plain layout; a quarter
                     * of them again with a rotating view layout */
                    gad_scope_begin();
                    int64_t M = g_sizes[i], N = g_sizes[j], K = g_sizes[k];
                    CHECK_MM("2d plain", mat(M, K, g_dts[t], 0), mat(K, N, g_dts[t], 0));
                    if ((i + j + k) % 4 == t) {
                        int ka = (i + 2 * j + k) % 4, kb = (i + j + 3 * k + 1) % 4;
                        CHECK_MM("2d views", mat(M, K, g_dts[t], ka),
                                 mat(K, N, g_dts[t], kb));
                    }
                    gad_scope_end();
                }
}

TEST(mm_2d_transposed_layouts) {
    static const int64_t sz[] = {1, 7, 33, 129};
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                for (int k = 0; k < 4; k++)
                    for (int ka = 0; ka < 2; ka++)
                        for (int kb = 0; kb < 2; kb++) {
                            gad_scope_begin();
                            CHECK_MM("2d transposed", mat(sz[i], sz[k], g_dts[t], ka),
                                     mat(sz[k], sz[j], g_dts[t], kb));
                            gad_scope_end();
                        }
}

TEST(mm_2d_large) {
    static const int64_t shapes[][3] = {
        {300, 250, 200}, {257, 300, 64}, {513, 17, 100}, {17, 513, 100},
        {64, 64, 16},    {200, 1, 300},  {1, 200, 300},  {128, 128, 128},
        {96, 97, 95},    {33, 400, 129}};
    for (int t = 0; t < 2; t++)
        for (int s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++) {
            gad_scope_begin();
            int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            CHECK_MM("2d large", mat(M, K, g_dts[t], 0), mat(K, N, g_dts[t], 0));
            gad_scope_end();
        }
    /* 300x200 @ 200x250 with each operand transposed, sliced, reversed */
    for (int t = 0; t < 2; t++)
        for (int ka = 0; ka < 4; ka++) {
            gad_scope_begin();
            CHECK_MM("2d large views", mat(300, 200, g_dts[t], ka),
                     mat(200, 250, g_dts[t], (ka + 1) % 4));
            gad_scope_end();
        }
}

TEST(mm_empty) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_dts[t];
        gad_scope_begin();
        /* K = 0 gives zeros */
        gad_tensor *a = RND(dt, 3, 0), *b = RND(dt, 0, 4);
        gad_tensor *y = gad_matmul(a, b);
        CHECK_SHAPE(y, 3, 4);
        CHECK_VALUES(y, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        CHECK_MM("K=0", a, b);
        CHECK_MM("K=0 big", RND(dt, 100, 0), RND(dt, 0, 90));
        CHECK_MM("K=0 transposed", T(RND(dt, 0, 70)), T(RND(dt, 80, 0)));
        gad_tensor *d = gad_matmul(RND(dt, 0), RND(dt, 0));
        CHECK(d && gad_rank(d) == 0);
        CHECK_NEAR(gad_item(d), 0.0, 0);
        CHECK_MM("[0]@[0]", RND(dt, 0), RND(dt, 0));
        CHECK_MM("[0]@[0,5]", RND(dt, 0), RND(dt, 0, 5));
        CHECK_MM("[4,0]@[0]", RND(dt, 4, 0), RND(dt, 0));
        CHECK_MM("batched K=0", RND(dt, 2, 3, 0), RND(dt, 0, 4));
        CHECK_MM("batched K=0 b", RND(dt, 2, 3, 0), RND(dt, 2, 0, 4));
        /* M or N = 0 gives an empty result */
        gad_tensor *e = gad_matmul(RND(dt, 0, 5), RND(dt, 5, 4));
        CHECK_SHAPE(e, 0, 4);
        CHECK(gad_numel(e) == 0);
        e = gad_matmul(RND(dt, 3, 5), RND(dt, 5, 0));
        CHECK_SHAPE(e, 3, 0);
        e = gad_matmul(RND(dt, 0, 5), RND(dt, 5, 0));
        CHECK_SHAPE(e, 0, 0);
        e = gad_matmul(RND(dt, 0, 5), RND(dt, 5));
        CHECK_SHAPE(e, 0);
        e = gad_matmul(RND(dt, 5), RND(dt, 5, 0));
        CHECK_SHAPE(e, 0);
        e = gad_matmul(RND(dt, 0, 3, 5), RND(dt, 5, 4));
        CHECK_SHAPE(e, 0, 3, 4);
        e = gad_matmul(RND(dt, 2, 1, 3, 5), RND(dt, 0, 5, 4));
        CHECK_SHAPE(e, 2, 0, 3, 4);
        e = gad_matmul(RND(dt, 0, 0), RND(dt, 0, 0));
        CHECK_SHAPE(e, 0, 0);
        CHECK_MM("M=0", RND(dt, 0, 5), RND(dt, 5, 4));
        CHECK_MM("N=0", RND(dt, 3, 5), RND(dt, 5, 0));
        CHECK_MM("B=0", RND(dt, 0, 3, 5), RND(dt, 5, 4));
        CHECK_MM("M=0 large K", RND(dt, 0, 300), RND(dt, 300, 100));
        CHECK_OK();
        gad_scope_end();
    }
}

/* ------------------------------------------------------------------------ */
/* 1-D rules (SPEC D2)                                                       */
/* ------------------------------------------------------------------------ */

TEST(mm_1d_rules) {
    static const int64_t sz[] = {1, 2, 3, 17, 65, 300};
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_dts[t];
        for (int i = 0; i < 6; i++) {
            int64_t k = sz[i], m = sz[(i + 2) % 6], n = sz[(i + 4) % 6];
            gad_scope_begin();
            /* shapes asserted literally, values by the naive loop */
            gad_tensor *y = gad_matmul(RND(dt, k), RND(dt, k));
            CHECK(y && gad_rank(y) == 0);
            y = gad_matmul(RND(dt, m, k), RND(dt, k));
            CHECK_SHAPE(y, m);
            y = gad_matmul(RND(dt, k), RND(dt, k, n));
            CHECK_SHAPE(y, n);
            y = gad_matmul(RND(dt, k), RND(dt, 3, k, n));
            CHECK_SHAPE(y, 3, n);
            y = gad_matmul(RND(dt, 3, m, k), RND(dt, k));
            CHECK_SHAPE(y, 3, m);
            y = gad_matmul(RND(dt, k), RND(dt, 2, 1, k, n));
            CHECK_SHAPE(y, 2, 1, n);
            y = gad_matmul(RND(dt, 2, 3, m, k), RND(dt, k));
            CHECK_SHAPE(y, 2, 3, m);
            CHECK_OK();
            CHECK_MM("[k]@[k]", RND(dt, k), RND(dt, k));
            CHECK_MM("[m,k]@[k]", RND(dt, m, k), RND(dt, k));
            CHECK_MM("[k]@[k,n]", RND(dt, k), RND(dt, k, n));
            CHECK_MM("[k]@[B,k,n]", RND(dt, k), RND(dt, 3, k, n));
            CHECK_MM("[B,m,k]@[k]", RND(dt, 3, m, k), RND(dt, k));
            CHECK_MM("[k]@[2,3,1,k,n]", RND(dt, k), RND(dt, 2, 3, 1, k, n));
            CHECK_MM("[2,1,3,m,k]@[k]", RND(dt, 2, 1, 3, m, k), RND(dt, k));
            CHECK_MM("[k]@T[n,k]", RND(dt, k), T(RND(dt, n, k)));
            CHECK_MM("T[k,m]@[k]", T(RND(dt, k, m)), RND(dt, k));
            gad_scope_end();
        }
    }
}

/* 1-D operands that are views: step 2, negative step, stride 0. */
TEST(mm_1d_views) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_dts[t];
        static const int64_t sz[] = {1, 5, 40, 200};
        for (int i = 0; i < 4; i++) {
            int64_t k = sz[i];
            gad_scope_begin();
            gad_tensor *step2 = gad_slice(RND(dt, 2 * k), &GAD_RANGE_STEP(GAD_NIL, GAD_NIL, 2), 1);
            gad_tensor *rev = gad_slice(RND(dt, k), &GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1), 1);
            gad_tensor *rev3 = gad_slice(RND(dt, 3 * k), &GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -3), 1);
            gad_tensor *bc = gad_broadcast_to(RND(dt, 1), (int64_t[]){k}, 1);
            gad_tensor *col = gad_select(RND(dt, k, 3), 1, 1); /* stride 3 */
            CHECK(step2 && gad_strides(step2)[0] == 2);
            CHECK(bc && (k == 1 || gad_strides(bc)[0] == 0));
            gad_tensor *ones[] = {step2, rev, rev3, bc, col};
            for (int u = 0; u < 5; u++) {
                CHECK_MM("view[k]@[k]", ones[u], RND(dt, k));
                CHECK_MM("[k]@view[k]", RND(dt, k), ones[u]);
                CHECK_MM("view[k]@view[k]", ones[u], ones[(u + 1) % 5]);
                CHECK_MM("[m,k]@view[k]", RND(dt, 7, k), ones[u]);
                CHECK_MM("view[k]@[k,n]", ones[u], RND(dt, k, 66));
                CHECK_MM("view[k]@[B,k,n]", ones[u], RND(dt, 2, k, 9));
                CHECK_MM("[B,m,k]@view[k]", RND(dt, 2, 70, k), ones[u]);
                CHECK_MM("T[k,m]@view[k]", T(RND(dt, k, 65)), ones[u]);
            }
            gad_scope_end();
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Batches                                                                   */
/* ------------------------------------------------------------------------ */

TEST(mm_batched) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_dts[t];
        gad_scope_begin();
        CHECK_MM("[A,B,m,k]@[A,B,k,n]", RND(dt, 4, 5, 6, 7), RND(dt, 4, 5, 7, 3));
        CHECK_MM("[B,m,k]@[B,k,n] b", RND(dt, 4, 5, 6), RND(dt, 4, 6, 7));
        CHECK_MM("[B,M,K]@[K,N]", RND(dt, 6, 17, 33), RND(dt, 33, 9));
        CHECK_MM("[B,M,K]@[K,N] blas-size", RND(dt, 4, 64, 96), RND(dt, 96, 128));
        CHECK_MM("[B,M,K]@[K,N] 1 row", RND(dt, 70, 1, 20), RND(dt, 20, 70));
        CHECK_MM("[K,N] batch a 2 levels", RND(dt, 2, 3, 30, 20), RND(dt, 20, 80));
        CHECK_MM("[M,K]@[B,K,N]", RND(dt, 5, 6), RND(dt, 3, 6, 7));
        CHECK_MM("[M,K]@[B,K,N] big", RND(dt, 130, 70), RND(dt, 3, 70, 100));
        CHECK_MM("[B,M,K]@[B,K,N] big", RND(dt, 2, 130, 140), RND(dt, 2, 140, 150));
        CHECK_MM("many small batches", RND(dt, 64, 3, 4), RND(dt, 64, 4, 5));
        CHECK_MM("spec shape", RND(dt, 2, 1, 2, 3), RND(dt, 3, 3, 2));
        CHECK_MM("batch 1 on a", RND(dt, 1, 5, 6), RND(dt, 4, 6, 7));
        CHECK_MM("batch 1 on b", RND(dt, 4, 5, 6), RND(dt, 1, 6, 7));
        CHECK_MM("batch 1 both sides", RND(dt, 3, 1, 5, 6), RND(dt, 1, 4, 6, 7));
        CHECK_MM("batch 1 all", RND(dt, 1, 1, 5, 6), RND(dt, 1, 6, 7));
        CHECK_MM("rank 4 vs 2", RND(dt, 2, 3, 4, 5), RND(dt, 5, 6));
        CHECK_MM("rank 2 vs 4", RND(dt, 4, 5), RND(dt, 2, 3, 5, 6));
        CHECK_MM("[K] vs rank 4", RND(dt, 5), RND(dt, 2, 3, 5, 6));
        CHECK_MM("rank 4 vs [K]", RND(dt, 2, 3, 4, 5), RND(dt, 5));
        CHECK_MM("rank 4 vs 3 broadcast", RND(dt, 2, 1, 4, 5), RND(dt, 3, 5, 6));
        CHECK_MM("rank 3 vs 4 broadcast", RND(dt, 3, 4, 5), RND(dt, 2, 1, 5, 6));
        CHECK_MM("rank 8", RND(dt, 2, 1, 2, 1, 1, 2, 3, 4), RND(dt, 1, 2, 1, 2, 1, 4, 2));
        CHECK_MM("rank 8 vs [K]", RND(dt, 1, 2, 1, 2, 1, 2, 3, 4), RND(dt, 4));
        CHECK_MM("[K] vs rank 8", RND(dt, 4), RND(dt, 1, 2, 1, 2, 1, 2, 4, 3));
        CHECK_MM("batched 1xK@Kx1", RND(dt, 5, 1, 9), RND(dt, 5, 9, 1));
        /* shapes spelled out */
        gad_tensor *y = gad_matmul(RND(dt, 2, 1, 4, 5), RND(dt, 3, 5, 6));
        CHECK_SHAPE(y, 2, 3, 4, 6);
        y = gad_matmul(RND(dt, 4, 5), RND(dt, 2, 3, 5, 6));
        CHECK_SHAPE(y, 2, 3, 4, 6);
        y = gad_matmul(RND(dt, 5), RND(dt, 2, 3, 5, 6));
        CHECK_SHAPE(y, 2, 3, 6);
        y = gad_matmul(RND(dt, 2, 3, 4, 5), RND(dt, 5));
        CHECK_SHAPE(y, 2, 3, 4);
        CHECK_OK();
        gad_scope_end();
    }
}

TEST(mm_batched_views) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_dts[t];
        gad_scope_begin();
        /* transposed batches */
        CHECK_MM("T batched a", T(RND(dt, 3, 6, 5)), RND(dt, 3, 6, 7));
        CHECK_MM("T batched b", RND(dt, 3, 5, 6), T(RND(dt, 3, 7, 6)));
        CHECK_MM("T batched both big", T(RND(dt, 2, 100, 90)), T(RND(dt, 2, 80, 100)));
        CHECK_MM("T batched a @ 2d", T(RND(dt, 4, 20, 30)), RND(dt, 20, 70));
        CHECK_MM("T batched a @ 2d big", T(RND(dt, 4, 96, 64)), RND(dt, 96, 128));
        /* permuted: [K,B,M] -> [B,M,K] and [N,K,B] -> [B,K,N] */
        gad_tensor *pa = gad_permute(RND(dt, 6, 3, 5), (int[]){1, 2, 0}, 3);
        gad_tensor *pb = gad_permute(RND(dt, 7, 6, 3), (int[]){2, 1, 0}, 3);
        CHECK_SHAPE(pa, 3, 5, 6);
        CHECK_SHAPE(pb, 3, 6, 7);
        CHECK_MM("permuted", pa, pb);
        CHECK_MM("permuted a", pa, RND(dt, 6, 7));
        gad_tensor *pc = gad_permute(RND(dt, 70, 4, 80), (int[]){1, 0, 2}, 3);
        CHECK_MM("permuted batch-middle a", pc, RND(dt, 80, 90));
        gad_tensor *pd = gad_permute(RND(dt, 5, 2, 3, 4), (int[]){1, -1, 0, 2}, 4);
        CHECK_SHAPE(pd, 2, 4, 5, 3);
        CHECK_MM("permuted rank 4", pd, RND(dt, 3, 6));
        /* sliced with steps, on the matrix and on the batch axis */
        gad_range r3[3] = {GAD_RANGE_STEP(GAD_NIL, GAD_NIL, 2), GAD_RANGE_STEP(1, GAD_NIL, 2),
                           GAD_RANGE_STEP(GAD_NIL, GAD_NIL, 3)};
        gad_tensor *sa = gad_slice(RND(dt, 7, 11, 15), r3, 3); /* [4,5,5] */
        CHECK_SHAPE(sa, 4, 5, 5);
        CHECK_MM("stepped", sa, RND(dt, 4, 5, 6));
        CHECK_MM("stepped @ 2d", sa, RND(dt, 5, 6));
        gad_range rb[1] = {GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -2)};
        gad_tensor *sb = gad_slice(RND(dt, 8, 6, 7), rb, 1); /* batch reversed, step -2 */
        CHECK_SHAPE(sb, 4, 6, 7);
        CHECK_MM("negative batch step b", RND(dt, 4, 5, 6), sb);
        CHECK_MM("negative batch step a", gad_slice(RND(dt, 6, 5, 6), rb, 1), RND(dt, 6, 7));
        gad_range rneg[3] = {GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1),
                             GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1),
                             GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -2)};
        CHECK_MM("all negative steps", gad_slice(RND(dt, 3, 9, 20), rneg, 3),
                 gad_slice(RND(dt, 3, 10, 5), rneg, 3));
        /* columns of a padded a: row stride larger than K (one big GEMM) */
        gad_range rc[3] = {GAD_ALL, GAD_ALL, GAD_RANGE(0, 20)};
        CHECK_MM("padded rows a @ 2d", gad_slice(RND(dt, 5, 30, 23), rc, 3), RND(dt, 20, 70));
        CHECK_MM("padded rows a @ 2d big", gad_slice(RND(dt, 3, 64, 100), rc, 3), RND(dt, 20, 128));
        gad_range rr[2] = {GAD_ALL, GAD_RANGE(1, 31)};
        CHECK_MM("padded batch a @ 2d", gad_slice(RND(dt, 5, 33, 20), rr, 2), RND(dt, 20, 70));
        gad_range rd[3] = {GAD_ALL, GAD_RANGE(2, 70), GAD_RANGE(3, 103)};
        CHECK_MM("padded both big", gad_slice(RND(dt, 2, 72, 110), rd, 3),
                 gad_slice(RND(dt, 2, 110, 90), (gad_range[]){GAD_ALL, GAD_RANGE(5, 105), GAD_RANGE(1, 81)}, 3));
        /* broadcast views (stride 0) */
        gad_tensor *ba = gad_broadcast_to(RND(dt, 1, 6), (int64_t[]){5, 6}, 2);
        gad_tensor *bb = gad_broadcast_to(RND(dt, 6, 1), (int64_t[]){6, 7}, 2);
        CHECK(ba && gad_strides(ba)[0] == 0);
        CHECK(bb && gad_strides(bb)[1] == 0);
        CHECK_MM("broadcast rows a", ba, RND(dt, 6, 7));
        CHECK_MM("broadcast cols b", RND(dt, 5, 6), bb);
        CHECK_MM("broadcast both", ba, bb);
        CHECK_MM("broadcast cols a", gad_broadcast_to(RND(dt, 70, 1), (int64_t[]){70, 100}, 2),
                 RND(dt, 100, 80));
        CHECK_MM("broadcast rows b", RND(dt, 70, 100),
                 gad_broadcast_to(RND(dt, 1, 80), (int64_t[]){100, 80}, 2));
        CHECK_MM("broadcast scalar matrix", gad_broadcast_to(RND(dt, 1, 1), (int64_t[]){4, 5}, 2),
                 RND(dt, 5, 3));
        CHECK_MM("broadcast batch a", gad_broadcast_to(RND(dt, 1, 5, 6), (int64_t[]){3, 5, 6}, 3),
                 RND(dt, 3, 6, 7));
        CHECK_MM("broadcast batch b", RND(dt, 3, 5, 6),
                 gad_broadcast_to(RND(dt, 6, 7), (int64_t[]){3, 6, 7}, 3));
        CHECK_MM("broadcast batch a @ 2d", gad_broadcast_to(RND(dt, 20, 30), (int64_t[]){4, 20, 30}, 3),
                 RND(dt, 30, 90));
        CHECK_MM("broadcast batch b big", RND(dt, 2, 80, 70),
                 gad_broadcast_to(RND(dt, 70, 90), (int64_t[]){2, 70, 90}, 3));
        CHECK_MM("unsqueeze a", gad_unsqueeze(RND(dt, 5, 6), 0), RND(dt, 4, 6, 7));
        CHECK_MM("unsqueeze b", RND(dt, 4, 5, 6), gad_unsqueeze(RND(dt, 6, 7), 0));
        CHECK_MM("unsqueeze matrix dims", gad_unsqueeze(RND(dt, 6), 0), gad_unsqueeze(RND(dt, 6), 1));
        CHECK_MM("unsqueeze batched row", gad_unsqueeze(RND(dt, 3, 6), 1), RND(dt, 3, 6, 4));
        CHECK_MM("unsqueeze batched col", RND(dt, 3, 2, 6), gad_unsqueeze(RND(dt, 3, 6), -1));
        CHECK_OK();
        gad_scope_end();
    }
}

/* Random batched cases with random per-operand views. */
static gad_tensor *rnd_view(const int64_t *shape, int rank, gad_dtype_t dt, int kind) {
    int64_t big[GAD_MAX_RANK];
    gad_range r[GAD_MAX_RANK];
    switch (kind) {
    case 1: /* reversed axes, then permuted back */
    {
        int perm[GAD_MAX_RANK];
        for (int i = 0; i < rank; i++) {
            big[i] = shape[rank - 1 - i];
            perm[i] = rank - 1 - i;
        }
        return gad_permute(rnd(big, rank, dt), perm, rank);
    }
    case 2: /* every axis stepped by 2, from 1 */
        for (int i = 0; i < rank; i++) {
            big[i] = 2 * shape[i] + 1;
            r[i] = GAD_RANGE_STEP(1, GAD_NIL, 2);
        }
        return gad_slice(rnd(big, rank, dt), r, rank);
    case 3: /* every axis reversed (a reverse slice of an empty axis is an
             * index error by SPEC §1.11, so those stay plain) */
        for (int i = 0; i < rank; i++)
            r[i] = shape[i] > 0 ? GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1) : GAD_ALL;
        return gad_slice(rnd(shape, rank, dt), r, rank);
    case 4: /* the first axis of size > 1 broadcast */
        for (int i = 0; i < rank; i++) big[i] = shape[i];
        for (int i = 0; i < rank; i++)
            if (big[i] > 1) {
                big[i] = 1;
                break;
            }
        return gad_broadcast_to(rnd(big, rank, dt), shape, rank);
    default:
        return rnd(shape, rank, dt);
    }
}

TEST(mm_random_batched_views) {
    gad_rng *r = gad_rng_new(77);
    for (int it = 0; it < 300; it++) {
        gad_dtype_t dt = g_dts[it & 1];
        int64_t M = gad_rng_int(r, 1, 12), N = gad_rng_int(r, 1, 12), K = gad_rng_int(r, 0, 12);
        if (it % 25 == 0) {
            M = gad_rng_int(r, 60, 140);
            N = gad_rng_int(r, 60, 140);
            K = gad_rng_int(r, 16, 140);
        }
        int ra = (int)gad_rng_int(r, 1, 5), rb = (int)gad_rng_int(r, 1, 5);
        int nb = (ra > rb ? ra : rb) - 2;
        int64_t bs[GAD_MAX_RANK];
        for (int i = 0; i < nb; i++) bs[i] = gad_rng_int(r, 1, 4);
        int64_t sa[GAD_MAX_RANK], sb[GAD_MAX_RANK];
        if (ra == 1) {
            sa[0] = K;
        } else {
            for (int i = 0; i < ra - 2; i++) {
                int64_t d = bs[nb - (ra - 2) + i];
                sa[i] = gad_rng_int(r, 0, 3) == 0 ? 1 : d;
            }
            sa[ra - 2] = M;
            sa[ra - 1] = K;
        }
        if (rb == 1) {
            sb[0] = K;
        } else {
            for (int i = 0; i < rb - 2; i++) {
                int64_t d = bs[nb - (rb - 2) + i];
                sb[i] = gad_rng_int(r, 0, 3) == 0 ? 1 : d;
            }
            sb[rb - 2] = K;
            sb[rb - 1] = N;
        }
        gad_scope_begin();
        gad_tensor *a = rnd_view(sa, ra, dt, (int)gad_rng_int(r, 0, 5));
        gad_tensor *b = rnd_view(sb, rb, dt, (int)gad_rng_int(r, 0, 5));
        CHECK_MM("random batched views", a, b);
        gad_scope_end();
    }
    gad_rng_free(r);
}

/* Special values go through: an inf or NaN in a row of a spreads to that row
 * only (BLAS off; the built-in kernel must not drop them). */
TEST(mm_nonfinite) {
    for (int t = 0; t < 2; t++) {
        gad_dtype_t dt = g_dts[t];
        gad_scope_begin();
        double av[6] = {1, 2, NAN, 4, 5, 6};
        double bv[6] = {1, 0, 0, 1, INFINITY, 1};
        gad_tensor *a = gad_cast(gad_from_f64(av, (int64_t[]){2, 3}, 2), dt);
        gad_tensor *b = gad_cast(gad_from_f64(bv, (int64_t[]){3, 2}, 2), dt);
        int prev = gad_set_blas(0);
        gad_tensor *y = gad_matmul(a, b);
        gad_set_blas(prev);
        CHECK_SHAPE(y, 2, 2);
        /* row 0: [1 + 0 + NaN*inf, 0 + 2 + NaN] = NaN, NaN;
         * row 1: [4 + 0 + 6*inf, 0 + 5 + 6] = inf, 11 */
        CHECK_VALUES(y, 0, NAN, NAN, INFINITY, 11);
        CHECK_OK();
        gad_scope_end();
    }
}

/* The result buffer may come from gad's cache holding old values (here NaN):
 * the product must overwrite it, K = 0 included. */
TEST(mm_dirty_output_buffer) {
    static const int64_t shapes[][3] = {{3, 4, 0}, {100, 90, 0}, {5, 6, 7},
                                        {130, 140, 150}, {64, 64, 16}};
    for (int t = 0; t < 2; t++)
        for (int s = 0; s < 5; s++)
            for (int bl = 0; bl < 2; bl++) {
                int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                gad_scope_begin();
                gad_tensor *a = RND(g_dts[t], M, K), *b = RND(g_dts[t], K, N);
                double *ref = NULL;
                int64_t os[GAD_MAX_RANK], kk;
                int orank;
                ref = naive_matmul(a, b, os, &orank, &kk);
                int prev = gad_set_blas(bl);
                for (int rep = 0; rep < 3; rep++) {
                    gad_scope_begin();
                    for (int j = 0; j < 4; j++)
                        gad_full((int64_t[]){M, N}, 2, g_dts[t], NAN);
                    gad_scope_end();
                    gad_scope_begin();
                    gad_tensor *y = gad_matmul(a, b);
                    CHECK_SHAPE(y, M, N);
                    test_checks_++;
                    if (!test_values_(y, ref, (size_t)(M * N),
                                      g_dts[t] == GAD_F32 ? 1e-4 : 1e-12,
                                      __FILE__, __LINE__))
                        test_failures_++;
                    gad_scope_end();
                }
                gad_set_blas(prev);
                free(ref);
                CHECK_OK();
                gad_scope_end();
            }
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

static int msg_has(const char *s) {
    const gad_error *e = gad_last_error();
    return e && strstr(e->message, s) != NULL;
}

TEST(mm_errors) {
    gad_scope_begin();
    gad_tensor *s = gad_scalar_f32(2), *v = RND(GAD_F32, 3), *m = RND(GAD_F32, 3, 3);
    /* rank 0 */
    CHECK(gad_matmul(s, v) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(v, s) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(s, s) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(m, gad_scalar_f32(1)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    /* inner mismatch: SPEC §7.10 [1,3] @ [2,2] is a shape error naming both */
    CHECK(gad_matmul(RND(GAD_F32, 1, 3), RND(GAD_F32, 2, 2)) == NULL);
    CHECK(msg_has("[1,3]") && msg_has("[2,2]"));
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(RND(GAD_F64, 3), RND(GAD_F64, 4)) == NULL);
    CHECK(msg_has("[3]") && msg_has("[4]"));
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(RND(GAD_F32, 2, 5), RND(GAD_F32, 4)) == NULL);
    CHECK(msg_has("[2,5]") && msg_has("[4]"));
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(RND(GAD_F32, 5), RND(GAD_F32, 4, 5)) == NULL);
    CHECK(msg_has("[5]") && msg_has("[4,5]"));
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(RND(GAD_F32, 2, 3, 4), RND(GAD_F32, 2, 3, 4)) == NULL);
    CHECK(msg_has("[2,3,4]"));
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(RND(GAD_F32, 3, 0), RND(GAD_F32, 1, 3)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    /* a transposed view counts by its logical shape */
    CHECK(gad_matmul(RND(GAD_F32, 2, 4), RND(GAD_F32, 2, 4)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    /* incompatible batch dims */
    CHECK(gad_matmul(RND(GAD_F32, 2, 3, 4), RND(GAD_F32, 3, 4, 5)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(RND(GAD_F64, 2, 2, 3, 4), RND(GAD_F64, 3, 4, 5)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(RND(GAD_F32, 0, 3, 4), RND(GAD_F32, 2, 4, 5)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_matmul(RND(GAD_F32, 4), RND(GAD_F32, 3, 2, 3, 5)) == NULL); /* inner */
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    /* dtypes */
    CHECK(gad_matmul(RND(GAD_F32, 2, 3), RND(GAD_F64, 3, 2)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "matmul");
    CHECK(gad_matmul(RND(GAD_F64, 3), RND(GAD_F32, 3)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "matmul");
    gad_tensor *i1 = gad_from_i64((int64_t[]){1, 2, 3, 4}, (int64_t[]){2, 2}, 2);
    CHECK(gad_matmul(i1, i1) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "matmul");
    CHECK(gad_matmul(RND(GAD_F32, 2, 2), i1) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "matmul");
    CHECK(gad_matmul(i1, RND(GAD_F64, 2, 2)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "matmul");
    CHECK(gad_matmul(gad_from_i64((int64_t[]){1, 2}, (int64_t[]){2}, 1),
                     gad_from_i64((int64_t[]){1, 2}, (int64_t[]){2}, 1)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "matmul");
    /* NULL operands return NULL and keep the first error */
    CHECK(gad_matmul(NULL, m) == NULL);
    CHECK(gad_last_error() != NULL);
    gad_clear_error();
    CHECK(gad_matmul(RND(GAD_F32, 1, 3), RND(GAD_F32, 2, 2)) == NULL);
    CHECK(gad_matmul(NULL, m) == NULL);
    CHECK(gad_matmul(m, NULL) == NULL);
    CHECK(gad_matmul(gad_matmul(m, s), m) == NULL);
    CHECK(msg_has("[1,3]"));
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    /* after errors, a valid product works */
    gad_tensor *ok = gad_matmul(m, v);
    CHECK_SHAPE(ok, 3);
    CHECK_OK();
    gad_scope_end();
}

/* Nothing leaks: a scope of products leaves the live counts unchanged. */
TEST(mm_no_leak) {
    gad_mem_stats before, after;
    gad_mem_stats_get(&before);
    gad_scope_begin();
    for (int t = 0; t < 2; t++) {
        gad_tensor *a = T(RND(g_dts[t], 3, 40, 30));
        gad_tensor *b = gad_slice(RND(g_dts[t], 3, 80, 50), &GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1), 1);
        gad_tensor *y = gad_matmul(a, gad_slice(b, (gad_range[]){GAD_ALL, GAD_RANGE(0, 40)}, 2));
        CHECK_SHAPE(y, 3, 30, 50);
        CHECK(gad_matmul(a, b) == NULL); /* 40 vs 80 */
        CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    }
    gad_scope_end();
    gad_mem_stats_get(&after);
    CHECK(after.live_tensors == before.live_tensors);
    CHECK(after.live_storages == before.live_storages);
    CHECK(after.live_bytes == before.live_bytes);
}

int main(void) {
    g_rng = gad_rng_new(12345);
    RUN(config_blas_threads);
    RUN(small_exact_values);
    RUN(spec_batch_broadcast_example);
    RUN(mm_2d_all_sizes);
    RUN(mm_2d_transposed_layouts);
    RUN(mm_2d_large);
    RUN(mm_empty);
    RUN(mm_1d_rules);
    RUN(mm_1d_views);
    RUN(mm_batched);
    RUN(mm_batched_views);
    RUN(mm_random_batched_views);
    RUN(mm_nonfinite);
    RUN(mm_dirty_output_buffer);
    RUN(mm_errors);
    RUN(mm_no_leak);
    gad_rng_free(g_rng);
    gad_cache_trim();
    return test_summary();
}
