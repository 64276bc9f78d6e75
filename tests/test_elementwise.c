/* test_elementwise.c: binary ops with broadcasting (add, sub, mul, div,
 * maximum, minimum) and every unary op, on every operand layout, against
 * naive double-precision references (SPEC §3.1, §3.2, §3.3, §7.10). */
#include "test.h"

#include <stdint.h>

/* (test.h has the helpers shared with test_reduce.c: shapes, CHECK_CLOSE
 * and the operand layouts of test_make_view.) */

/* ------------------------------------------------------------ binary ops */

enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MAX, B_MIN, B_COUNT };
static const char *const B_NAME[B_COUNT] = {"add", "sub", "mul", "div",
                                            "maximum", "minimum"};

static gad_tensor *bapply(int op, gad_tensor *a, gad_tensor *b) {
    switch (op) {
    case B_ADD: return gad_add(a, b);
    case B_SUB: return gad_sub(a, b);
    case B_MUL: return gad_mul(a, b);
    case B_DIV: return gad_div(a, b);
    case B_MAX: return gad_maximum(a, b);
    default: return gad_minimum(a, b);
    }
}

/* The exact result in dtype dt: for f32 operands the double result of
 * +, -, *, / rounds to the f32 result (double rounding is innocuous for
 * these), and max/min are exact; NaN propagates from either side. */
static double bref(int op, double a, double b, gad_dtype_t dt) {
    double y;
    switch (op) {
    case B_ADD: y = a + b; break;
    case B_SUB: y = a - b; break;
    case B_MUL: y = a * b; break;
    case B_DIV: y = a / b; break;
    case B_MAX: y = isnan(a) || isnan(b) ? NAN : (a > b ? a : b); break;
    default: y = isnan(a) || isnan(b) ? NAN : (a < b ? a : b); break;
    }
    return dt == GAD_F32 ? (double)(float)y : y;
}

/* NumPy broadcast of two shapes; 0 if incompatible. */
static int bshape(const int64_t *a, int ra, const int64_t *b, int rb,
                  int64_t *out, int *ro) {
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - ra), ib = i - (r - rb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1) out[i] = da;
        else if (da == 1) out[i] = db;
        else return 0;
    }
    *ro = r;
    return 1;
}

/* Element f of an output of shape so, read from an operand of shape s (its
 * row-major values v) that broadcasts to so. */
static double bcast_at(const double *v, const int64_t *s, int r,
                       const int64_t *oidx, int ro) {
    int64_t ii[GAD_MAX_RANK];
    for (int j = 0; j < r; j++) ii[j] = s[j] == 1 ? 0 : oidx[j + ro - r];
    return v[test_flat(ii, s, r)];
}

/* Every binary op on a (shape sa, layout ka) and b (sb, kb) in dtype dt,
 * checked element by element. */
static void check_binary_case(gad_rng *rng, gad_dtype_t dt, const int64_t *sa,
                              int ra, int ka, const int64_t *sb, int rb, int kb) {
    int64_t so[GAD_MAX_RANK] = {0}, oidx[GAD_MAX_RANK] = {0};
    int ro;
    if (!bshape(sa, ra, sb, rb, so, &ro)) {
        CHECK_MSG(0, "bad test case");
        return;
    }
    int64_t n = test_numel(so, ro);
    char sas[128], sbs[128];
    test_shape_str(sas, sizeof sas, sa, ra);
    test_shape_str(sbs, sizeof sbs, sb, rb);
    gad_scope_begin();
    double *va, *vb;
    gad_tensor *a = test_make_view(rng, ka, dt, sa, ra, -2, 2, NULL, &va);
    gad_tensor *b = test_make_view(rng, kb, dt, sb, rb, -2, 2, NULL, &vb);
    double *ref = malloc((size_t)(n ? n : 1) * sizeof *ref);
    for (int op = 0; op < B_COUNT; op++) {
        for (int64_t f = 0; f < n; f++) {
            test_unflat(f, so, ro, oidx);
            ref[f] = bref(op, bcast_at(va, sa, ra, oidx, ro),
                          bcast_at(vb, sb, rb, oidx, ro), dt);
        }
        gad_tensor *y = bapply(op, a, b);
        CHECK_OK();
        CHECK_MSG(test_same_shape(y, so, ro), "%s %s(%s) vs %s(%s): output shape",
                  B_NAME[op], sas, test_layout_name(ka), sbs, test_layout_name(kb));
        CHECK(y && gad_dtype(y) == dt);
        CHECK(y && gad_is_contiguous(y));
        CHECK_CLOSE(y, ref, n, 0, "%s %s %s(%s) , %s(%s)", B_NAME[op],
                    gad_dtype_name(dt), sas, test_layout_name(ka), sbs, test_layout_name(kb));
    }
    free(ref);
    free(va);
    free(vb);
    gad_scope_end();
}

typedef struct shape_pair {
    int ra, rb;
    int64_t a[GAD_MAX_RANK], b[GAD_MAX_RANK];
} shape_pair;

static const shape_pair PAIRS[] = {
    {2, 2, {2, 1}, {1, 3}},
    {3, 3, {3, 4, 5}, {3, 4, 5}},
    {3, 2, {4, 1, 5}, {3, 1}},
    {2, 2, {1, 7}, {6, 1}},
    {3, 3, {5, 1, 1}, {1, 4, 3}},
    {4, 1, {2, 3, 4, 5}, {5}},
    {1, 4, {4}, {3, 1, 2, 4}},
    {0, 2, {0}, {3, 4}},
    {2, 0, {3, 4}, {0}},
    {0, 0, {0}, {0}},
    {1, 0, {6}, {0}},
    {2, 2, {0, 3}, {1, 3}},
    {2, 1, {0, 3}, {3}},
    {2, 2, {2, 0}, {2, 1}},
    {1, 0, {0}, {0}},
    {8, 1, {2, 1, 2, 1, 1, 2, 1, 3}, {3}},
    {8, 8, {1, 2, 1, 2, 1, 1, 2, 1}, {2, 1, 2, 1, 2, 1, 1, 3}},
    {3, 8, {1, 1, 2}, {1, 2, 1, 1, 2, 1, 3, 1}},
};

TEST(binary_all_layouts) {
    gad_rng *rng = gad_rng_new(1234);
    for (size_t p = 0; p < sizeof PAIRS / sizeof PAIRS[0]; p++) {
        const shape_pair *sp = &PAIRS[p];
        int big = sp->ra > 4 || sp->rb > 4;
        for (int dt = GAD_F32; dt <= GAD_F64; dt++)
            for (int ka = 0; ka < TEST_L_COUNT; ka++)
                for (int kb = 0; kb < TEST_L_COUNT; kb++) {
                    /* rank 8: every layout against a contiguous operand
                     * and against itself (keeps the run short) */
                    if (big && ka != kb && ka != TEST_L_CONTIG && kb != TEST_L_CONTIG)
                        continue;
                    check_binary_case(rng, (gad_dtype_t)dt, sp->a, sp->ra, ka,
                                      sp->b, sp->rb, kb);
                    check_binary_case(rng, (gad_dtype_t)dt, sp->b, sp->rb, ka,
                                      sp->a, sp->ra, kb);
                }
    }
    gad_rng_free(rng);
}

/* SPEC §7.10: [[1],[2]] + [[10,20,30]] = [[11,21,31],[12,22,32]]. */
TEST(binary_spec_example) {
    gad_scope_begin();
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        const double a[] = {1, 2}, b[] = {10, 20, 30};
        int64_t sa[] = {2, 1}, sb[] = {1, 3};
        gad_tensor *ta = gad_cast(gad_from_f64(a, sa, 2), (gad_dtype_t)dt);
        gad_tensor *tb = gad_cast(gad_from_f64(b, sb, 2), (gad_dtype_t)dt);
        gad_tensor *y = gad_add(ta, tb);
        CHECK_SHAPE(y, 2, 3);
        CHECK_VALUES(y, 0, 11, 21, 31, 12, 22, 32);
        y = gad_sub(tb, ta);
        CHECK_SHAPE(y, 2, 3);
        CHECK_VALUES(y, 0, 9, 19, 29, 8, 18, 28);
        y = gad_mul(ta, tb);
        CHECK_VALUES(y, 0, 10, 20, 30, 20, 40, 60);
        y = gad_div(tb, ta);
        CHECK_VALUES(y, 0, 10, 20, 30, 5, 10, 15);
        /* rank 0 with rank 0 */
        y = gad_mul(gad_scalar(3, (gad_dtype_t)dt), gad_scalar(-2.5, (gad_dtype_t)dt));
        CHECK(y && gad_rank(y) == 0);
        CHECK_NEAR(gad_item(y), -7.5, 0);
        /* rank 0 with rank 2, both orders */
        y = gad_sub(gad_scalar(1, (gad_dtype_t)dt), tb);
        CHECK_SHAPE(y, 1, 3);
        CHECK_VALUES(y, 0, -9, -19, -29);
        y = gad_div(ta, gad_scalar(4, (gad_dtype_t)dt));
        CHECK_SHAPE(y, 2, 1);
        CHECK_VALUES(y, 0, 0.25, 0.5);
    }
    CHECK_OK();
    gad_scope_end();
}

/* 0-sized dims: 0 against 1 gives 0, 0 against 3 is an error. */
TEST(binary_empty) {
    gad_scope_begin();
    int64_t s03[] = {0, 3}, s13[] = {1, 3}, s23[] = {2, 3}, s0[] = {0}, s3[] = {3};
    gad_tensor *y = gad_add(gad_zeros(s03, 2, GAD_F32), gad_ones(s13, 2, GAD_F32));
    CHECK_SHAPE(y, 0, 3);
    CHECK(gad_numel(y) == 0);
    y = gad_mul(gad_scalar_f64(2), gad_zeros(s0, 1, GAD_F64));
    CHECK_SHAPE(y, 0);
    CHECK_OK();
    y = gad_add(gad_zeros(s0, 1, GAD_F32), gad_ones(s3, 1, GAD_F32));
    CHECK(y == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "add");
    y = gad_maximum(gad_zeros(s03, 2, GAD_F64), gad_ones(s23, 2, GAD_F64));
    CHECK(y == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "maximum");
    gad_scope_end();
}

/* Dtype rule: same float dtype on both sides; shape errors name both. */
TEST(binary_errors) {
    gad_scope_begin();
    int64_t s23[] = {2, 3}, s32[] = {3, 2};
    gad_tensor *f32 = gad_ones(s23, 2, GAD_F32), *f64 = gad_ones(s23, 2, GAD_F64);
    gad_tensor *i64 = gad_ones(s23, 2, GAD_I64);
    for (int op = 0; op < B_COUNT; op++) {
        CHECK(bapply(op, f32, f64) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, B_NAME[op]);
        CHECK(bapply(op, f64, f32) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, B_NAME[op]);
        CHECK(bapply(op, i64, i64) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, B_NAME[op]);
        CHECK(bapply(op, i64, f32) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, B_NAME[op]);
        CHECK(bapply(op, f32, gad_ones(s32, 2, GAD_F32)) == NULL);
        const gad_error *e = gad_last_error();
        CHECK(e && e->kind == GAD_ERR_SHAPE && strcmp(e->op, B_NAME[op]) == 0);
        CHECK_MSG(e && strstr(e->message, "[2,3]") && strstr(e->message, "[3,2]"),
                  "message names both shapes: %s", e ? e->message : "none");
        gad_clear_error();
        /* a NULL operand: NULL and a domain error */
        CHECK(bapply(op, NULL, f32) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, B_NAME[op]);
        CHECK(bapply(op, f32, NULL) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, B_NAME[op]);
    }
    /* the first error is kept through a chain of ops */
    gad_tensor *y = gad_mul(gad_add(f32, f64), f32);
    CHECK(y == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "add");
    gad_scope_end();
}

/* IEEE: x/0 = +-inf, 0/0 = NaN; maximum/minimum propagate NaN and are exact
 * where (a + b +- |a - b|) / 2 would round or overflow. No error. */
TEST(binary_ieee) {
    gad_scope_begin();
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        int64_t s[] = {6};
        const double a[] = {1, -1, 0, -0.0, INFINITY, NAN};
        const double z[] = {0, 0, 0, 0, 0, 0};
        gad_tensor *ta = gad_cast(gad_from_f64(a, s, 1), (gad_dtype_t)dt);
        gad_tensor *tz = gad_cast(gad_from_f64(z, s, 1), (gad_dtype_t)dt);
        CHECK_VALUES(gad_div(ta, tz), 0, INFINITY, -INFINITY, NAN, NAN, INFINITY, NAN);
        CHECK_VALUES(gad_div(tz, ta), 0, 0, -0.0, NAN, NAN, 0, NAN);
        CHECK_OK();

        const double big = dt == GAD_F32 ? 3e38 : 1e308;
        int64_t s9[] = {9};
        const double x[] = {1, NAN, NAN, INFINITY, -INFINITY, big, 0.1, 1, 1e-30};
        const double w[] = {NAN, 2, NAN, -INFINITY, -INFINITY, -big, 0.3, 1, 3};
        gad_tensor *tx = gad_cast(gad_from_f64(x, s9, 1), (gad_dtype_t)dt);
        gad_tensor *tw = gad_cast(gad_from_f64(w, s9, 1), (gad_dtype_t)dt);
        double xv[9], wv[9], mx[9], mn[9];
        gad_read_f64(tx, xv, 9);
        gad_read_f64(tw, wv, 9);
        for (int i = 0; i < 9; i++) {
            mx[i] = bref(B_MAX, xv[i], wv[i], (gad_dtype_t)dt);
            mn[i] = bref(B_MIN, xv[i], wv[i], (gad_dtype_t)dt);
        }
        CHECK_CLOSE(gad_maximum(tx, tw), mx, 9, 0, "maximum specials %d", dt);
        CHECK_CLOSE(gad_maximum(tw, tx), mx, 9, 0, "maximum specials swapped %d", dt);
        CHECK_CLOSE(gad_minimum(tx, tw), mn, 9, 0, "minimum specials %d", dt);
        CHECK_CLOSE(gad_minimum(tw, tx), mn, 9, 0, "minimum specials swapped %d", dt);
        CHECK_VALUES(gad_maximum(tx, tw), 0, NAN, NAN, NAN, INFINITY, -INFINITY,
                     xv[5], wv[6], 1, 3);
        CHECK_VALUES(gad_minimum(tx, tw), 0, NAN, NAN, NAN, -INFINITY, -INFINITY,
                     wv[5], xv[6], 1, xv[8]);
        CHECK_OK();
    }
    gad_scope_end();
}

/* >= 100k elements so that the threaded path runs; results are
 * bit-identical for 1, 2 and 3 threads. */
TEST(binary_large_threads) {
    gad_rng *rng = gad_rng_new(99);
    int64_t so[] = {301, 401};
    int64_t n = test_numel(so, 2);
    CHECK(n >= 100000);
    const int kinds[][2] = {{TEST_L_CONTIG, TEST_L_CONTIG}, {TEST_L_PERM, TEST_L_BCAST},
                            {TEST_L_NEGSLICE, TEST_L_CONTIG}, {TEST_L_SLICE, TEST_L_UNSQ}};
    for (int dt = GAD_F32; dt <= GAD_F64; dt++)
        for (size_t kc = 0; kc < sizeof kinds / sizeof kinds[0]; kc++) {
            gad_scope_begin();
            double *va, *vb;
            gad_tensor *a = test_make_view(rng, kinds[kc][0], (gad_dtype_t)dt, so, 2, -3, 3,
                                           NULL, &va);
            gad_tensor *b = test_make_view(rng, kinds[kc][1], (gad_dtype_t)dt, so, 2, -3, 3,
                                           NULL, &vb);
            double *ref = malloc((size_t)n * sizeof *ref);
            for (int op = 0; op < B_COUNT; op++) {
                for (int64_t f = 0; f < n; f++) ref[f] = bref(op, va[f], vb[f], (gad_dtype_t)dt);
                gad_set_num_threads(1);
                gad_tensor *y1 = bapply(op, a, b);
                gad_set_num_threads(2);
                CHECK(gad_num_threads() >= 1);
                gad_tensor *y2 = bapply(op, a, b);
                gad_set_num_threads(3);
                gad_tensor *y3 = bapply(op, a, b);
                gad_set_num_threads(0);
                CHECK_CLOSE(y2, ref, n, 0, "large %s %s %s,%s", B_NAME[op],
                            gad_dtype_name((gad_dtype_t)dt), test_layout_name(kinds[kc][0]),
                            test_layout_name(kinds[kc][1]));
                CHECK_MSG(test_same_bits(y1, y2) && test_same_bits(y1, y3),
                          "large %s: 1/2/3 threads differ", B_NAME[op]);
            }
            /* broadcast of a row and a column into the large shape */
            int64_t sc[] = {301, 1}, sr[] = {401};
            double *vc, *vr;
            gad_tensor *c = test_make_view(rng, TEST_L_SLICE, (gad_dtype_t)dt, sc, 2, -3, 3,
                                           NULL, &vc);
            gad_tensor *r = test_make_view(rng, TEST_L_NEGSLICE, (gad_dtype_t)dt, sr, 1, -3, 3,
                                           NULL, &vr);
            for (int64_t f = 0; f < n; f++)
                ref[f] = bref(B_MUL, vc[f / 401], vr[f % 401], (gad_dtype_t)dt);
            gad_set_num_threads(1);
            gad_tensor *y1 = gad_mul(c, r);
            gad_set_num_threads(2);
            gad_tensor *y2 = gad_mul(c, r);
            gad_set_num_threads(0);
            CHECK_CLOSE(y2, ref, n, 0, "large outer product %d", dt);
            CHECK(test_same_bits(y1, y2));
            free(vc);
            free(vr);
            free(ref);
            free(va);
            free(vb);
            gad_scope_end();
        }
    gad_rng_free(rng);
}

/* ------------------------------------------------------------- unary ops */

enum {
    U_NEG, U_SQUARE, U_RELU, U_TANH, U_EXP, U_LOG, U_SQRT, U_ABS, U_SIGN,
    U_SIGMOID, U_SILU, U_GELU, U_SOFTPLUS, U_LEAKY, U_CLAMP, U_MULS, U_ADDS,
    U_POW
};

typedef struct uop {
    const char *name; /* the op name errors carry */
    int id;
    double p, q;
    int exact; /* the f32/f64 result is the correctly rounded reference */
    double lo, hi; /* input range */
} uop;

static const uop UOPS[] = {
    {"neg", U_NEG, 0, 0, 1, -4, 4},
    {"square", U_SQUARE, 0, 0, 1, -4, 4},
    {"relu", U_RELU, 0, 0, 1, -4, 4},
    {"tanh", U_TANH, 0, 0, 0, -4, 4},
    {"exp", U_EXP, 0, 0, 0, -6, 6},
    {"log", U_LOG, 0, 0, 0, 0.01, 8},
    {"log", U_LOG, 0, 0, 0, -2, 2}, /* NaN for negatives, no error */
    {"sqrt", U_SQRT, 0, 0, 1, 0, 8},
    {"sqrt", U_SQRT, 0, 0, 1, -2, 2},
    {"abs", U_ABS, 0, 0, 1, -4, 4},
    {"sign", U_SIGN, 0, 0, 1, -4, 4},
    {"sigmoid", U_SIGMOID, 0, 0, 0, -8, 8},
    {"silu", U_SILU, 0, 0, 0, -8, 8},
    {"gelu", U_GELU, 0, 0, 0, -5, 5},
    {"softplus", U_SOFTPLUS, 0, 0, 0, -10, 10},
    {"softplus", U_SOFTPLUS, 0, 0, 0, 15, 25},
    {"leaky_relu", U_LEAKY, 0.1, 0, 1, -4, 4},
    {"leaky_relu", U_LEAKY, 0.01, 0, 1, -4, 4},
    {"clamp", U_CLAMP, -1, 0.5, 1, -4, 4},
    {"clamp", U_CLAMP, 0.3, 0.3, 1, -1, 1},
    {"mul_scalar", U_MULS, 0.1, 0, 1, -4, 4},
    {"mul_scalar", U_MULS, -3, 0, 1, -4, 4},
    {"add_scalar", U_ADDS, 0.1, 0, 1, -4, 4},
    {"add_scalar", U_ADDS, -2.5, 0, 1, -4, 4},
    {"pow_scalar", U_POW, 2, 0, 1, -4, 4},
    {"pow_scalar", U_POW, 0.5, 0, 1, 0, 8},
    {"pow_scalar", U_POW, 3, 0, 0, -3, 3},
    {"pow_scalar", U_POW, -1, 0, 0, 0.1, 4},
    {"pow_scalar", U_POW, -1, 0, 0, -4, -0.1},
    {"pow_scalar", U_POW, 1.5, 0, 0, 0.01, 4},
};
#define N_UOPS ((int)(sizeof UOPS / sizeof UOPS[0]))

static gad_tensor *uapply(const uop *o, gad_tensor *x) {
    switch (o->id) {
    case U_NEG: return gad_neg(x);
    case U_SQUARE: return gad_square(x);
    case U_RELU: return gad_relu(x);
    case U_TANH: return gad_tanh(x);
    case U_EXP: return gad_exp(x);
    case U_LOG: return gad_log(x);
    case U_SQRT: return gad_sqrt(x);
    case U_ABS: return gad_abs(x);
    case U_SIGN: return gad_sign(x);
    case U_SIGMOID: return gad_sigmoid(x);
    case U_SILU: return gad_silu(x);
    case U_GELU: return gad_gelu(x);
    case U_SOFTPLUS: return gad_softplus(x);
    case U_LEAKY: return gad_leaky_relu(x, o->p);
    case U_CLAMP: return gad_clamp(x, o->p, o->q);
    case U_MULS: return gad_mul_scalar(x, o->p);
    case U_ADDS: return gad_add_scalar(x, o->p);
    default: return gad_pow_scalar(x, o->p);
    }
}

/* The reference in double. Scalar parameters are first converted to the
 * tensor's dtype (header: "s converted to x's dtype first"); for the exact
 * ops the double result rounds to the dtype's correctly rounded result. */
static double uref(const uop *o, double x, gad_dtype_t dt) {
    double p = dt == GAD_F32 ? (double)(float)o->p : o->p;
    double q = dt == GAD_F32 ? (double)(float)o->q : o->q;
    double y;
    switch (o->id) {
    case U_NEG: y = -x; break;
    case U_SQUARE: y = x * x; break;
    case U_RELU: y = x > 0 ? x : 0; break;
    case U_TANH: y = tanh(x); break;
    case U_EXP: y = exp(x); break;
    case U_LOG: y = log(x); break;
    case U_SQRT: y = sqrt(x); break;
    case U_ABS: y = fabs(x); break;
    case U_SIGN: y = x > 0 ? 1 : x < 0 ? -1 : 0; break;
    case U_SIGMOID: y = 1 / (1 + exp(-x)); break;
    case U_SILU: y = x / (1 + exp(-x)); break;
    case U_GELU:
        y = 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
        break;
    case U_SOFTPLUS: y = x > 20 ? x : log1p(exp(x)); break;
    case U_LEAKY: y = x >= 0 ? x : p * x; break;
    case U_CLAMP: y = x < p ? p : x > q ? q : x; break;
    case U_MULS: y = x * p; break;
    case U_ADDS: y = x + p; break;
    default:
        y = p == 2 ? x * x : p == 0.5 ? sqrt(x) : pow(x, p);
        break;
    }
    return dt == GAD_F32 ? (double)(float)y : y;
}

static double utol(const uop *o, gad_dtype_t dt) {
    if (o->exact) return 0;
    return dt == GAD_F32 ? 1e-6 : 1e-14;
}

static const char *ulabel(const uop *o, char *buf, size_t cap) {
    snprintf(buf, cap, "%s(%g,%g) on [%g,%g)", o->name, o->p, o->q, o->lo, o->hi);
    return buf;
}

TEST(unary_all_layouts) {
    gad_rng *rng = gad_rng_new(77);
    const int64_t shapes[][3] = {{5, 7, 3}, {2, 9, 1}, {64, 3, 5}};
    for (int u = 0; u < N_UOPS; u++) {
        const uop *o = &UOPS[u];
        char lb[96];
        ulabel(o, lb, sizeof lb);
        for (int dt = GAD_F32; dt <= GAD_F64; dt++)
            for (int k = 0; k < TEST_L_COUNT; k++)
                for (int si = 0; si < 3; si++) {
                    gad_scope_begin();
                    const int64_t *s = shapes[si];
                    double *v;
                    gad_tensor *x = test_make_view(rng, k, (gad_dtype_t)dt, s, 3, o->lo, o->hi,
                                                   NULL, &v);
                    int64_t n = test_numel(s, 3);
                    double *ref = malloc((size_t)n * sizeof *ref);
                    for (int64_t i = 0; i < n; i++) ref[i] = uref(o, v[i], (gad_dtype_t)dt);
                    gad_tensor *y = uapply(o, x);
                    CHECK_OK(); /* NaN results are not errors */
                    CHECK_MSG(test_same_shape(y, s, 3), "%s keeps the shape", lb);
                    CHECK(y && (int)gad_dtype(y) == dt && gad_is_contiguous(y));
                    CHECK_CLOSE(y, ref, n, utol(o, (gad_dtype_t)dt), "%s %s %s", lb,
                                gad_dtype_name((gad_dtype_t)dt), test_layout_name(k));
                    free(ref);
                    free(v);
                    gad_scope_end();
                }
        /* rank 0, an empty tensor, and a non-contiguous empty view */
        for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
            gad_scope_begin();
            double x0 = o->lo + 0.37 * (o->hi - o->lo);
            gad_tensor *y = uapply(o, gad_scalar(x0, (gad_dtype_t)dt));
            CHECK(y && gad_rank(y) == 0);
            double xr = dt == GAD_F32 ? (double)(float)x0 : x0;
            CHECK_MSG(test_close(gad_item(y), uref(o, xr, (gad_dtype_t)dt),
                                 utol(o, (gad_dtype_t)dt)),
                      "%s rank 0", lb);
            int64_t s0[] = {4, 0, 3};
            y = uapply(o, gad_zeros(s0, 3, (gad_dtype_t)dt));
            CHECK_SHAPE(y, 4, 0, 3);
            y = uapply(o, gad_transpose(gad_zeros(s0, 3, (gad_dtype_t)dt)));
            CHECK_SHAPE(y, 4, 3, 0);
            CHECK_OK();
            gad_scope_end();
        }
    }
    gad_rng_free(rng);
}

/* Large inputs (threaded path), contiguous and transposed: bit-identical
 * for 1, 2 and 3 threads, and equal to the reference. */
TEST(unary_large_threads) {
    gad_rng *rng = gad_rng_new(5);
    int64_t s[] = {317, 331}; /* 104927 elements */
    int64_t n = test_numel(s, 2);
    for (int dt = GAD_F32; dt <= GAD_F64; dt++)
        for (int k = 0; k < 3; k++) {
            int kind = k == 0 ? TEST_L_CONTIG : k == 1 ? TEST_L_PERM : TEST_L_NEGSLICE;
            gad_scope_begin();
            double *v;
            gad_tensor *x = test_make_view(rng, kind, (gad_dtype_t)dt, s, 2, -3, 3, NULL, &v);
            double *ref = malloc((size_t)n * sizeof *ref);
            for (int u = 0; u < N_UOPS; u++) {
                const uop *o = &UOPS[u];
                char lb[96];
                ulabel(o, lb, sizeof lb);
                for (int64_t i = 0; i < n; i++) ref[i] = uref(o, v[i], (gad_dtype_t)dt);
                gad_set_num_threads(1);
                gad_tensor *y1 = uapply(o, x);
                gad_set_num_threads(2);
                gad_tensor *y2 = uapply(o, x);
                gad_set_num_threads(3);
                gad_tensor *y3 = uapply(o, x);
                gad_set_num_threads(0);
                gad_clear_error(); /* NaNs from out-of-range inputs: no error */
                CHECK_CLOSE(y2, ref, n, utol(o, (gad_dtype_t)dt), "large %s %s %s",
                            lb, gad_dtype_name((gad_dtype_t)dt), test_layout_name(kind));
                CHECK_MSG(test_same_bits(y1, y2) && test_same_bits(y1, y3),
                          "large %s %s: 1/2/3 threads differ", lb, test_layout_name(kind));
            }
            free(ref);
            free(v);
            gad_scope_end();
        }
    gad_rng_free(rng);
}

/* Outputs of 16 MiB and more are written with streaming stores, a tile at a
 * time (src/cpu/stream.c) or, for f32 add, sub, mul and div of contiguous
 * inputs, straight from the registers, and gelu f32 by its AVX-512 kernel where the
 * CPU has one: the same values as the reference, on any number of threads,
 * for every layout of the inputs (an odd element count, so that chunks and
 * tiles end mid-line). */
TEST(streamed_outputs) {
    gad_rng *rng = gad_rng_new(17);
    int64_t s[] = {2049, 2053}; /* 4,206,597 elements: 16.8 MB of f32 */
    int64_t n = test_numel(s, 2);
    double *ref = malloc((size_t)n * sizeof *ref);
    CHECK(ref != NULL);
    for (int dt = GAD_F32; ref && dt <= GAD_F64; dt++) {
        gad_scope_begin();
        double *va, *vb;
        gad_tensor *a = test_make_view(rng, TEST_L_CONTIG, (gad_dtype_t)dt, s, 2, -3, 3, NULL, &va);
        gad_tensor *b = test_make_view(rng, TEST_L_PERM, (gad_dtype_t)dt, s, 2, -3, 3, NULL, &vb);
        for (int op = 0; op < B_COUNT; op++) {
            for (int64_t f = 0; f < n; f++) ref[f] = bref(op, va[f], vb[f], (gad_dtype_t)dt);
            gad_scope_begin();
            gad_set_num_threads(1);
            gad_tensor *y1 = bapply(op, a, b);
            gad_set_num_threads(2);
            gad_tensor *y2 = bapply(op, a, b);
            gad_set_num_threads(0);
            CHECK_CLOSE(y2, ref, n, 0, "streamed %s %s", B_NAME[op], gad_dtype_name((gad_dtype_t)dt));
            CHECK_MSG(test_same_bits(y1, y2), "streamed %s: 1/2 threads differ", B_NAME[op]);
            /* both inputs contiguous: f32 add, sub, mul and div stream
             * straight from the registers (stream.c), with the bits of
             * the tiles above, on 1 and 2 threads */
            gad_tensor *bc = gad_contiguous(b);
            gad_set_num_threads(1);
            gad_tensor *y3 = bapply(op, a, bc);
            gad_set_num_threads(2);
            gad_tensor *y4 = bapply(op, a, bc);
            gad_set_num_threads(0);
            CHECK_MSG(test_same_bits(y1, y3) && test_same_bits(y1, y4),
                      "streamed %s %s: contiguous inputs differ from the tiled path", B_NAME[op],
                      gad_dtype_name((gad_dtype_t)dt));
            gad_scope_end();
        }
        /* a broadcast row: one input with stride 0 along the rows */
        gad_tensor *row = gad_select(a, 0, 7); /* shape [2053], broadcast */
        for (int64_t f = 0; f < n; f++)
            ref[f] = bref(B_SUB, va[7 * s[1] + f % s[1]], vb[f], (gad_dtype_t)dt);
        CHECK_CLOSE(gad_sub(row, b), ref, n, 0, "streamed sub of a broadcast row");
        /* unary: streamed a tile at a time (relu, clamp, mul_scalar), by
         * hand-written kernels (gelu), or not at all (tanh); on contiguous
         * and permuted inputs */
        for (int u = 0; u < N_UOPS; u++) {
            const uop *o = &UOPS[u];
            if (o->id != U_RELU && o->id != U_TANH && o->id != U_GELU &&
                o->id != U_CLAMP && o->id != U_MULS)
                continue;
            char lb[96];
            ulabel(o, lb, sizeof lb);
            for (int64_t f = 0; f < n; f++) ref[f] = uref(o, vb[f], (gad_dtype_t)dt);
            gad_scope_begin();
            gad_tensor *y = uapply(o, gad_contiguous(b));
            gad_tensor *yv = uapply(o, b);
            gad_clear_error(); /* NaNs from out-of-range inputs: no error */
            CHECK_CLOSE(y, ref, n, utol(o, (gad_dtype_t)dt), "streamed %s %s", lb,
                        gad_dtype_name((gad_dtype_t)dt));
            CHECK_MSG(test_same_bits(y, yv), "streamed %s: contiguous and strided input differ",
                      lb);
            gad_scope_end();
        }
        /* a gradient kernel with a stride-0 upstream gradient (sum's) */
        gad_tensor *x = gad_requires_grad(gad_contiguous(a)), *g = NULL;
        CHECK(gad_grad(gad_sum_all(gad_tanh(x)), &x, 1, &g) == GAD_OK);
        for (int64_t f = 0; f < n; f++) {
            double t = tanh(va[f]);
            ref[f] = dt == GAD_F32 ? (double)(float)(1 - t * t) : 1 - t * t;
        }
        CHECK_CLOSE(g, ref, n, dt == GAD_F32 ? 1e-6 : 1e-14, "streamed tanh backward");
        free(va);
        free(vb);
        gad_scope_end();
    }
    free(ref);
    gad_rng_free(rng);
}

/* SPEC §3.2 reference values. */
TEST(unary_spec_values) {
    gad_scope_begin();
    int64_t s4[] = {4}, s3[] = {3}, s2[] = {2};
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        gad_dtype_t d = (gad_dtype_t)dt;
        const double g[] = {-1, 0, 1, 3}, si[] = {-1, 0, 1}, sp[] = {20, 20.5};
        CHECK_VALUES(gad_gelu(gad_cast(gad_from_f64(g, s4, 1), d)), 1e-6,
                     -0.158808, 0, 0.841192, 2.9963627);
        CHECK_VALUES(gad_silu(gad_cast(gad_from_f64(si, s3, 1), d)), 1e-7,
                     -0.26894143, 0, 0.7310586);
        /* f32 gives exactly 20 (log1p(e^20) rounds to 20); f64 keeps the 2e-9 */
        CHECK_VALUES(gad_softplus(gad_cast(gad_from_f64(sp, s2, 1), d)), 0,
                     dt == GAD_F32 ? 20 : log1p(exp(20)), 20.5);
        /* just below the switch: log(1 + e^20) */
        CHECK_NEAR(gad_item(gad_softplus(gad_scalar(19.5, d))), log1p(exp(19.5)),
                   dt == GAD_F32 ? 4e-6 : 1e-13);
        CHECK_VALUES(gad_sigmoid(gad_cast(gad_from_f64(si, s3, 1), d)), 1e-7,
                     0.2689414213699951, 0.5, 0.7310585786300049);
        /* relu at [-1, 0, 2] gives [0, 0, 2] */
        const double r[] = {-1, 0, 2};
        CHECK_VALUES(gad_relu(gad_cast(gad_from_f64(r, s3, 1), d)), 0, 0, 0, 2);
    }
    CHECK_OK();
    gad_scope_end();
}

/* IEEE specials: no error is recorded. */
TEST(unary_specials) {
    gad_scope_begin();
    int64_t s[] = {7};
    const double x[] = {-1, -0.0, 0, 1, INFINITY, -INFINITY, NAN};
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        gad_tensor *t = gad_cast(gad_from_f64(x, s, 1), (gad_dtype_t)dt);
        CHECK_VALUES(gad_log(t), 0, NAN, -INFINITY, -INFINITY, 0, INFINITY, NAN, NAN);
        CHECK_VALUES(gad_sqrt(t), 0, NAN, 0, 0, 1, INFINITY, NAN, NAN);
        /* sign: NaN -> 0 and -0 -> 0 */
        CHECK_VALUES(gad_sign(t), 0, -1, 0, 0, 1, 1, -1, 0);
        CHECK_VALUES(gad_abs(t), 0, 1, 0, 0, 1, INFINITY, INFINITY, NAN);
        CHECK_VALUES(gad_exp(t), 1e-7, exp(-1), 1, 1, exp(1), INFINITY, 0, NAN);
        CHECK_VALUES(gad_tanh(t), 1e-7, tanh(-1), 0, 0, tanh(1), 1, -1, NAN);
        CHECK_VALUES(gad_sigmoid(t), 1e-7, 1 / (1 + exp(1)), 0.5, 0.5,
                     1 / (1 + exp(-1)), 1, 0, NAN);
        CHECK_VALUES(gad_softplus(t), 1e-7, log1p(exp(-1)), log(2), log(2),
                     log1p(exp(1)), INFINITY, 0, NAN);
        CHECK_VALUES(gad_neg(t), 0, 1, 0, 0, -1, -INFINITY, INFINITY, NAN);
        CHECK_VALUES(gad_square(t), 0, 1, 0, 0, 1, INFINITY, INFINITY, NAN);
        /* clamp (Rust semantics): NaN stays NaN, infinities are clamped */
        CHECK_VALUES(gad_clamp(t, -0.5, 0.5), 0, -0.5, 0, 0, 0.5, 0.5, -0.5, NAN);
        CHECK_VALUES(gad_clamp(t, -INFINITY, INFINITY), 0, -1, 0, 0, 1, INFINITY,
                     -INFINITY, NAN);
        CHECK_VALUES(gad_leaky_relu(t, 0.5), 0, -0.5, 0, 0, 1, INFINITY,
                     -INFINITY, NAN);
        CHECK_VALUES(gad_pow_scalar(t, -1), 0, -1, -INFINITY, INFINITY, 1, 0, -0.0, NAN);
        CHECK_VALUES(gad_pow_scalar(t, 2), 0, 1, 0, 0, 1, INFINITY, INFINITY, NAN);
        CHECK_VALUES(gad_pow_scalar(t, 0.5), 0, NAN, 0, 0, 1, INFINITY, NAN, NAN);
        /* C pow: x^0 = 1 for every x (NaN included), x^1 = x */
        CHECK_VALUES(gad_pow_scalar(t, 0), 0, 1, 1, 1, 1, 1, 1, 1);
        CHECK_VALUES(gad_pow_scalar(t, 1), 0, -1, 0, 0, 1, INFINITY, -INFINITY, NAN);
        CHECK_VALUES(gad_pow_scalar(t, 3), 0, -1, 0, 0, 1, INFINITY, -INFINITY, NAN);
        CHECK_VALUES(gad_mul_scalar(t, 0), 0, 0, 0, 0, 0, NAN, NAN, NAN);
        CHECK_VALUES(gad_add_scalar(t, INFINITY), 0, INFINITY, INFINITY, INFINITY,
                     INFINITY, INFINITY, NAN, NAN);
        CHECK_OK();
        /* sigmoid and silu of large negatives do not produce NaN */
        const double neg[] = {-100, -745, -1e30};
        int64_t s3[] = {3};
        gad_tensor *tn = gad_cast(gad_from_f64(neg, s3, 1), (gad_dtype_t)dt);
        CHECK_VALUES(gad_sigmoid(tn), 1e-30, 0, 0, 0);
        CHECK_VALUES(gad_silu(tn), 1e-30, 0, 0, 0);
        CHECK_VALUES(gad_gelu(tn), 1e-30, 0, 0, 0);
        CHECK_VALUES(gad_softplus(tn), 1e-30, 0, 0, 0);
        CHECK_OK();
    }
    gad_scope_end();
}

/* sign must give exactly 0 at -0 (no negative zero that a later 1/x would
 * expose as -inf) and the other ops of sign's family keep IEEE zero signs. */
TEST(unary_sign_zero) {
    gad_scope_begin();
    for (int dt = GAD_F32; dt <= GAD_F64; dt++) {
        gad_tensor *y = gad_sign(gad_scalar(-0.0, (gad_dtype_t)dt));
        double v = gad_item(y);
        CHECK(v == 0);
        y = gad_sign(gad_scalar(NAN, (gad_dtype_t)dt));
        CHECK(gad_item(y) == 0);
        y = gad_neg(gad_scalar(0.0, (gad_dtype_t)dt));
        CHECK(signbit(gad_item(y)));
        y = gad_abs(gad_scalar(-0.0, (gad_dtype_t)dt));
        CHECK(!signbit(gad_item(y)));
    }
    CHECK_OK();
    gad_scope_end();
}

/* clamp's domain errors; float-only rule for every unary op. */
TEST(unary_errors) {
    gad_scope_begin();
    int64_t s[] = {2, 2};
    gad_tensor *x = gad_ones(s, 2, GAD_F32);
    CHECK(gad_clamp(x, 1, 0) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "clamp");
    CHECK(gad_clamp(x, NAN, 1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "clamp");
    CHECK(gad_clamp(x, 0, NAN) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "clamp");
    CHECK(gad_clamp(x, NAN, NAN) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "clamp");
    CHECK(gad_clamp(x, INFINITY, -INFINITY) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "clamp");
    CHECK_VALUES(gad_clamp(x, 2, 2), 0, 2, 2, 2, 2);
    CHECK_OK();

    gad_tensor *i = gad_ones(s, 2, GAD_I64);
    for (int u = 0; u < N_UOPS; u++) {
        CHECK_MSG(uapply(&UOPS[u], i) == NULL, "%s on i64", UOPS[u].name);
        CHECK_ERR(GAD_ERR_DTYPE, UOPS[u].name);
        CHECK_MSG(uapply(&UOPS[u], NULL) == NULL, "%s on NULL", UOPS[u].name);
        CHECK_ERR(GAD_ERR_DOMAIN, UOPS[u].name);
    }
    gad_scope_end();
}

/* The inputs are never written: views of one storage stay intact. */
TEST(inputs_untouched) {
    gad_scope_begin();
    gad_rng *rng = gad_rng_new(3);
    int64_t s[] = {4, 5};
    gad_tensor *a = gad_rng_uniform_tensor(rng, s, 2, GAD_F32, -1, 1);
    double before[20], after[20];
    gad_read_f64(a, before, 20);
    gad_tensor *t = gad_transpose(a);
    gad_tensor *y = gad_add(a, a);
    y = gad_mul(t, t);
    y = gad_exp(t);
    y = gad_maximum(a, gad_scalar_f32(0));
    CHECK(y != NULL);
    gad_read_f64(a, after, 20);
    CHECK(memcmp(before, after, sizeof before) == 0);
    gad_rng_free(rng);
    gad_scope_end();
}

/* ------------------------------------------------ 0-d operands (PyTorch) */

/* ones([3]) ("dim") or a 0-d one ("0d") of the dtype named. */
static gad_tensor *promo_operand(const char *dt, const char *kind) {
    static const char *const names[] = {"f32", "f64", "i64", "f16", "bf16", "i32", "u8"};
    static const gad_dtype_t dts[] = {GAD_F32, GAD_F64, GAD_I64, GAD_F16, GAD_BF16, GAD_I32, GAD_U8};
    gad_dtype_t d = GAD_I64;
    for (int i = 0; i < 7; i++)
        if (!strcmp(dt, names[i])) d = dts[i];
    return strcmp(kind, "0d") ? gad_ones((int64_t[]){3}, 1, d) : gad_scalar(1, d);
}

/* The dtype of every binary elementwise op on every pair of dtypes, each
 * operand dimensioned or 0-d, against the table that
 * tests/reference/make_promotion.py wrote from PyTorch's result_type (with
 * gad's stricter rule for two dimensioned tensors): the result's dtype, its
 * shape, and its values (1 op 1), or a dtype error. */
TEST(promotion_follows_pytorch) {
    FILE *f = fopen(GAD_SOURCE_DIR "/tests/reference/promotion.txt", "r");
    CHECK_MSG(f != NULL, "cannot open tests/reference/promotion.txt");
    if (!f) return;
    gad_tensor *(*const ops[6])(gad_tensor *, gad_tensor *) = {gad_add, gad_sub, gad_mul,
                                                               gad_div, gad_maximum, gad_minimum};
    const double want_value[6] = {2, 0, 1, 1, 1, 1};
    char line[160], a[8], ka[8], b[8], kb[8], r[8];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || sscanf(line, "%7s %7s %7s %7s %7s", a, ka, b, kb, r) != 5) continue;
        rows++;
        for (int o = 0; o < 6; o++) {
            gad_scope_begin();
            gad_tensor *z = ops[o](promo_operand(a, ka), promo_operand(b, kb));
            const gad_error *e = gad_last_error();
            if (!strcmp(r, "dtype")) {
                CHECK_MSG(!z && e && e->kind == GAD_ERR_DTYPE, "op %d: %s %s with %s %s: %s", o,
                          a, ka, b, kb, z ? "no error" : e ? e->text : "no error");
            } else {
                int rank = !strcmp(ka, "0d") && !strcmp(kb, "0d") ? 0 : 1;
                gad_tensor *v = z ? gad_cast(z, GAD_F64) : NULL;
                CHECK_MSG(z && !strcmp(gad_dtype_name(gad_dtype(z)), r) && gad_rank(z) == rank &&
                              v && ((const double *)gad_data(v))[0] == want_value[o],
                          "op %d: %s %s with %s %s: want %s, got %s (%s)", o, a, ka, b, kb, r,
                          z ? gad_dtype_name(gad_dtype(z)) : "NULL", e ? e->text : "");
            }
            gad_clear_error();
            gad_scope_end();
        }
    }
    fclose(f);
    CHECK_MSG(rows == 196, "%d rows in promotion.txt (7 dtypes x 2 kinds, squared: 196)", rows);
}

/* Gradients flow back through the conversion, each in its input's dtype. */
TEST(promotion_gradients) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_from_f32((const float[]){1, 2, 3}, (int64_t[]){3}, 1));
    gad_tensor *s = gad_requires_grad(gad_scalar_f64(2));
    gad_tensor *y = gad_sum_all(gad_mul(x, s));
    CHECK(y && gad_dtype(y) == GAD_F32 && gad_item(y) == 12);
    gad_tensor *in[2] = {x, s}, *g[2] = {NULL, NULL};
    CHECK(gad_grad(y, in, 2, g) == GAD_OK);
    CHECK(g[0] && gad_dtype(g[0]) == GAD_F32 && ((const float *)gad_data(g[0]))[2] == 2);
    CHECK(g[1] && gad_dtype(g[1]) == GAD_F64 && gad_rank(g[1]) == 0 && gad_item(g[1]) == 6);
    /* an i64 tensor with a float 0-d one: the float's dtype (PyTorch) */
    gad_tensor *i = gad_from_i64((const int64_t[]){1, 2}, (int64_t[]){2}, 1);
    gad_tensor *h = gad_mul(i, gad_scalar_f64(0.5));
    CHECK(h && gad_dtype(h) == GAD_F64 && ((const double *)gad_data(h))[1] == 1);
    /* two dimensioned tensors of two dtypes stay an error */
    CHECK(gad_mul(x, gad_from_f64((const double[]){1, 2, 3}, (int64_t[]){3}, 1)) == NULL);
    CHECK(gad_last_error() && gad_last_error()->kind == GAD_ERR_DTYPE);
    gad_clear_error();
    gad_scope_end();
}

int main(void) {
    gad_mem_stats m0, m1;
    gad_mem_stats_get(&m0);
    RUN(binary_spec_example);
    RUN(promotion_follows_pytorch);
    RUN(promotion_gradients);
    RUN(binary_all_layouts);
    RUN(binary_empty);
    RUN(binary_errors);
    RUN(binary_ieee);
    RUN(binary_large_threads);
    RUN(unary_all_layouts);
    RUN(unary_large_threads);
    RUN(streamed_outputs);
    RUN(unary_spec_values);
    RUN(unary_specials);
    RUN(unary_sign_zero);
    RUN(unary_errors);
    RUN(inputs_untouched);
    gad_mem_stats_get(&m1);
    /* every test ran inside a scope: nothing is left alive */
    CHECK(gad_scope_depth() == 0);
    CHECK_MSG(m1.live_tensors == m0.live_tensors && m1.live_storages == m0.live_storages,
              "leaked %lld tensors, %lld storages",
              (long long)(m1.live_tensors - m0.live_tensors),
              (long long)(m1.live_storages - m0.live_storages));
    return test_summary();
}
