/* test_vmath.c: the accuracy of the f32 math kernels (cpu/vmath_ext.h, as
 * the public ops run them): each against libm's double result rounded to
 * float, over a sweep of the whole float range (every 509th bit pattern:
 * both signs, subnormals, huge arguments, infinities, NaNs), dense values
 * where the functions bend, and the special values (an infinite or zero
 * result, NaN and the sign of zero must match exactly). The distance is
 * in ulps from the correctly rounded result (the distance of the two floats
 * in the order of their bit patterns); the limit is 2. Under sanitizers the
 * sweep is thinned (every 65521st pattern, smaller grids). Prints the
 * largest distance per function (docs/vmath.md keeps the figures). */
#include "test.h"

#define MAX_ULP 2

static float f_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* a float's place in the order of all floats (-0 and +0 both 0) */
static int64_t ord(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i < 0 ? -(int64_t)(i & 0x7fffffff) : i;
}

/* ulps between got and the rounded reference; NaN against a number, or a
 * zero of the wrong sign, counts as a huge distance */
static int64_t dist(float got, double ref) {
    float r = (float)ref;
    if (r != r || got != got) return (r != r) == (got != got) ? 0 : INT32_MAX;
    if (r == 0 && got == 0 && signbit(r) != signbit(got)) return INT32_MAX;
    int64_t d = ord(got) - ord(r);
    return d < 0 ? -d : d;
}

/* an infinity or a zero on either side: those must match exactly */
static int special_result(float got, double ref) {
    float r = (float)ref;
    return isinf(got) || isinf(r) || got == 0 || r == 0;
}

static const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f,
                                 0.5f, -0.5f, 2.0f, -2.0f, 3.0f, -3.0f, 1e-45f, -1e-45f,
                                 1.17549435e-38f, -1.17549435e-38f, 3.40282347e38f,
                                 -3.40282347e38f, 4194304.0f, -4194304.0f, 4194305.0f,
                                 1.5707964f, 3.1415927f, 88.7f, -103.9f, 10.05f, 1e-8f};
#define NSPECIAL ((int64_t)(sizeof specials / sizeof specials[0]))

/* The inputs of the unary sweep: the specials, then every step-th bit
 * pattern, then dense values in [-12, 12). */
static float *unary_inputs(int64_t *n) {
    const uint64_t step = TEST_SANITIZED ? 65521 : 509;
    const int64_t dense = TEST_SANITIZED ? 4096 : 1 << 20;
    int64_t cap = NSPECIAL + (int64_t)((1ull << 32) / step) + 1 + dense, k = 0;
    float *x = malloc((size_t)cap * sizeof *x);
    if (!x) return NULL;
    for (int64_t i = 0; i < NSPECIAL; i++) x[k++] = specials[i];
    for (uint64_t b = 0; b < (1ull << 32); b += step) x[k++] = f_of((uint32_t)b);
    for (int64_t i = 0; i < dense; i++) x[k++] = -12.0f + 24.0f * (float)i / (float)dense;
    *n = k;
    return x;
}

typedef gad_tensor *(*op1)(gad_tensor *);
typedef double (*ref1)(double);

static double r_rsqrt(double x) { return 1.0 / sqrt(x); }
static double r_recip(double x) { return 1.0 / x; }
/* elu(-0) and selu(-0) are +0, as PyTorch's */
static double r_selu(double x) {
    return x == 0 ? 0 : 1.0507009873554804934193349852946 *
           (x > 0 ? x : 1.6732632423543772848170429916717 * expm1(x));
}
static double r_elu(double x) { return x > 0 ? x : x == 0 ? 0 : expm1(x); }
static double r_mish(double x) { return x * tanh(log1p(exp(x))); }
static double r_gelu_erf(double x) { return 0.5 * x * erfc(-x * 0.7071067811865476); }
static double r_hardtanh(double x) { return x < -1 ? -1 : x > 1 ? 1 : x; }
/* the hard ones in float arithmetic, as PyTorch computes them (hardswish
 * of a huge x is inf there: x * 6 overflows before the division) */
static double r_hardsigmoid(double xd) {
    float x = (float)xd;
    return x + 3.0f < 0 ? 0.0f : x + 3.0f > 6.0f ? 1.0f : (x + 3.0f) / 6.0f;
}
static double r_hardswish(double xd) {
    float x = (float)xd;
    return x * (x + 3.0f < 0 ? 0.0f : x + 3.0f > 6.0f ? 6.0f : x + 3.0f) / 6.0f;
}
static gad_tensor *elu1(gad_tensor *x) { return gad_elu(x, 1.0); }
static gad_tensor *hardtanh1(gad_tensor *x) { return gad_hardtanh(x, -1, 1); }

static const struct {
    const char *name;
    op1 op;
    ref1 ref;
} unary_fns[] = {
    {"sin", gad_sin, sin},
    {"cos", gad_cos, cos},
    {"tan", gad_tan, tan},
    {"asin", gad_asin, asin},
    {"acos", gad_acos, acos},
    {"atan", gad_atan, atan},
    {"erf", gad_erf, erf},
    {"erfc", gad_erfc, erfc},
    {"rsqrt", gad_rsqrt, r_rsqrt},
    {"reciprocal", gad_reciprocal, r_recip},
    {"log1p", gad_log1p, log1p},
    {"expm1", gad_expm1, expm1},
    {"log2", gad_log2, log2},
    {"exp2", gad_exp2, exp2},
    {"elu", elu1, r_elu},
    {"selu", gad_selu, r_selu},
    {"mish", gad_mish, r_mish},
    {"gelu_erf", gad_gelu_erf, r_gelu_erf},
    {"hardtanh", hardtanh1, r_hardtanh},
    {"hardsigmoid", gad_hardsigmoid, r_hardsigmoid},
    {"hardswish", gad_hardswish, r_hardswish},
};

/* Runs op on x (f32), into y. */
static int run1(op1 op, const float *x, int64_t n, float *y) {
    gad_scope_begin();
    gad_tensor *t = gad_from_f32(x, &n, 1);
    gad_tensor *r = t ? op(t) : NULL;
    int ok = r && gad_read_f32(r, y, (size_t)n) == GAD_OK;
    gad_scope_end();
    return ok;
}

TEST(unary_sweep) {
    int64_t n = 0;
    float *x = unary_inputs(&n), *y = malloc((size_t)n * sizeof *y);
    CHECK(x && y);
    if (!x || !y) goto out;
    for (size_t f = 0; f < sizeof unary_fns / sizeof unary_fns[0]; f++) {
        CHECK(run1(unary_fns[f].op, x, n, y));
        int64_t worst = 0;
        float at = 0, got = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t d = dist(y[i], unary_fns[f].ref(x[i]));
            /* special results exactly: infinities and zeros (NaN and the
             * sign of zero are exact everywhere, by dist) */
            if (i < NSPECIAL && d != 0 && special_result(y[i], unary_fns[f].ref(x[i])))
                d = d > MAX_ULP ? d : MAX_ULP + 1;
            if (d > worst) worst = d, at = x[i], got = y[i];
        }
        printf("  %-12s max %lld ulp over %lld values%s\n", unary_fns[f].name,
               (long long)worst, (long long)n, worst ? "" : " (all correctly rounded)");
        CHECK_MSG(worst <= MAX_ULP, "%s(%a) = %a, libm %a", unary_fns[f].name, at, got,
                  unary_fns[f].ref(at));
    }
out:
    free(x);
    free(y);
}

/* The strided and broadcast paths, and the libm lanes of sin/cos/tan beyond
 * 2^22 mixed into a block of ordinary ones, and their gradients there. */
TEST(strided_and_big_lanes) {
    enum { N = 4096 };
    static float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (i % 7 == 3) ? 1e30f * (float)(i % 5 + 1) : 0.01f * (float)i;
    gad_scope_begin();
    int64_t shape[2] = {N / 2, 2};
    gad_tensor *t = gad_from_f32(x, shape, 2);
    gad_tensor *tt = gad_transpose(t); /* strided rows */
    gad_tensor *s = gad_contiguous(gad_sin(tt));
    CHECK(s && gad_read_f32(s, y, N) == GAD_OK);
    int64_t worst = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < N / 2; i++) {
            int64_t d = dist(y[j * (N / 2) + i], sin(x[i * 2 + j]));
            worst = d > worst ? d : worst;
        }
    CHECK(worst <= MAX_ULP);
    /* d sin = cos, d cos = -sin at the same points */
    gad_tensor *v = gad_requires_grad(gad_from_f32(x, (int64_t[]){N}, 1)), *gv = NULL;
    gad_tensor *l = gad_sum_all(gad_add(gad_sin(v), gad_cos(v)));
    CHECK(l && gad_grad(l, &v, 1, &gv) == GAD_OK);
    CHECK(gv && gad_read_f32(gv, y, N) == GAD_OK);
    worst = 0;
    for (int i = 0; i < N; i++) {
        double want = cos((double)x[i]) - sin((double)x[i]);
        double err = fabs(y[i] - want);
        if (err > 1e-5 * (1 + fabs(want))) worst++;
    }
    CHECK(worst == 0);
    gad_scope_end();
}

/* pow and atan2 over a grid of pairs (broadcast [n, 1] against [1, n]):
 * the specials crossed with values spread over the range. */
static double r_pow(double a, double b) { return pow(a, b); }

TEST(binary_sweep) {
    const int n = TEST_SANITIZED ? 96 : 1536;
    float *a = malloc((size_t)n * sizeof *a), *y = malloc((size_t)n * n * sizeof *y);
    CHECK(a && y);
    if (!a || !y) goto out;
    gad_rng *r = gad_rng_new(27);
    for (int i = 0; i < n; i++) {
        if (i < NSPECIAL) a[i] = specials[i];
        else if (i % 3 == 0) a[i] = (float)(8 * gad_rng_uniform(r) - 4);
        else if (i % 3 == 1) a[i] = (float)gad_rng_int(r, -40, 41) * 0.5f;
        else { /* any float */
            uint32_t u = (uint32_t)gad_rng_next(r);
            a[i] = f_of(u);
        }
    }
    gad_rng_free(r);
    struct {
        const char *name;
        gad_tensor *(*op)(gad_tensor *, gad_tensor *);
        double (*ref)(double, double);
    } fns[] = {{"pow", gad_pow, r_pow}, {"atan2", gad_atan2, atan2}};
    for (int f = 0; f < 2; f++) {
        gad_scope_begin();
        gad_tensor *ta = gad_from_f32(a, (int64_t[]){n, 1}, 2);
        gad_tensor *tb = gad_from_f32(a, (int64_t[]){1, n}, 2);
        gad_tensor *t = fns[f].op(ta, tb);
        CHECK(t && gad_read_f32(t, y, (size_t)n * n) == GAD_OK);
        gad_scope_end();
        int64_t worst = 0;
        float wa = 0, wb = 0, got = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                int64_t d = dist(y[(int64_t)i * n + j], fns[f].ref(a[i], a[j]));
                if (d != 0 && special_result(y[(int64_t)i * n + j], fns[f].ref(a[i], a[j])))
                    d = d > MAX_ULP ? d : MAX_ULP + 1;
                if (d > worst) worst = d, wa = a[i], wb = a[j], got = y[(int64_t)i * n + j];
            }
        printf("  %-12s max %lld ulp over %lld pairs\n", fns[f].name, (long long)worst,
               (long long)n * n);
        CHECK_MSG(worst <= MAX_ULP, "%s(%a, %a) = %a, libm %a", fns[f].name, wa, wb, got,
                  fns[f].ref(wa, wb));
    }
out:
    free(a);
    free(y);
}

int main(void) {
    RUN(unary_sweep);
    RUN(strided_and_big_lanes);
    RUN(binary_sweep);
    return test_summary();
}
