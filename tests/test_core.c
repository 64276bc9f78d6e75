/* test_core.c: constructors, accessors, the random generators, cast, reads,
 * copy-on-write, the printer, scopes and reference counts, the allocator
 * hook (counting and failing allocators), errors and run-time settings.
 *
 * Reference values come from SPEC §1.8 (randn, arange), §1.9 (cast) and
 * §7.10 (the g-core inline tests); the rest is checked against the contract
 * in gad.h, with expected values computed independently here. */
#include "test.h"

#include <float.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

#define SHP(...) ((const int64_t[]){__VA_ARGS__})
#define NDIM(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

static gad_mem_stats stats(void) {
    gad_mem_stats s;
    gad_mem_stats_get(&s);
    return s;
}

/* Live tensors and storages are back at a baseline. */
#define CHECK_LIVE(base)                                                       \
    do {                                                                       \
        gad_mem_stats now_ = stats();                                          \
        CHECK_MSG(now_.live_tensors == (base).live_tensors &&                  \
                      now_.live_storages == (base).live_storages,              \
                  "live tensors %lld (base %lld), storages %lld (base %lld)",  \
                  (long long)now_.live_tensors,                                \
                  (long long)(base).live_tensors,                              \
                  (long long)now_.live_storages,                               \
                  (long long)(base).live_storages);                            \
    } while (0)

/* Bitwise equality of two floats (so that 0.70000005f is told from 0.7f). */
static int same_f32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static double at(gad_tensor *t, int64_t i) {
    int64_t n = gad_numel(t);
    if (!t || i >= n) return NAN;
    double *p = malloc((size_t)n * sizeof *p);
    gad_read_f64(t, p, (size_t)n);
    double v = p[i];
    free(p);
    return v;
}

/* The error text has the documented form. */
static int text_ok(const gad_error *e) {
    char want[400];
    snprintf(want, sizeof want, "%s error in %s: %s", gad_status_str(e->kind),
             e->op, e->message);
    return strcmp(want, e->text) == 0;
}

/* ------------------------------------------------------------------------ */
/* Constructors                                                              */
/* ------------------------------------------------------------------------ */

TEST(from_data_copies) {
    gad_scope_begin();
    float f[6] = {1, 2, 3, 4, 5, 6};
    double d[6] = {1.5, -2.5, 3, 4, 5, 6.25};
    int64_t k[6] = {INT64_MIN, -1, 0, 1, 2, INT64_MAX};
    gad_tensor *a = gad_from_f32(f, SHP(2, 3), 2);
    gad_tensor *b = gad_from_f64(d, SHP(3, 2), 2);
    gad_tensor *c = gad_from_i64(k, SHP(6), 1);
    /* the source arrays can change afterwards: the tensors own copies */
    f[0] = 100;
    d[0] = 100;
    k[2] = 100;
    CHECK_VALUES(a, 0, 1, 2, 3, 4, 5, 6);
    CHECK_VALUES(b, 0, 1.5, -2.5, 3, 4, 5, 6.25);
    int64_t got[6];
    CHECK(gad_read_i64(c, got, 6) == GAD_OK);
    CHECK(got[0] == INT64_MIN && got[1] == -1 && got[2] == 0 &&
          got[5] == INT64_MAX);
    CHECK(gad_dtype(a) == GAD_F32 && gad_dtype(b) == GAD_F64 &&
          gad_dtype(c) == GAD_I64);
    CHECK_SHAPE(a, 2, 3);
    CHECK_SHAPE(b, 3, 2);
    CHECK_SHAPE(c, 6);
    CHECK(gad_numel(a) == 6 && gad_rank(a) == 2);
    CHECK(gad_strides(a)[0] == 3 && gad_strides(a)[1] == 1);
    CHECK(gad_is_contiguous(a) && gad_is_contiguous(b) && gad_is_contiguous(c));
    CHECK(gad_is_unique(a));
    CHECK(gad_dim(a, 0) == 2 && gad_dim(a, 1) == 3 && gad_dim(a, -1) == 3 &&
          gad_dim(a, -2) == 2);
    CHECK_OK();
    CHECK(gad_dim(a, 2) == -1);
    CHECK_ERR(GAD_ERR_SHAPE, "dim");
    CHECK(gad_dim(a, -3) == -1);
    CHECK_ERR(GAD_ERR_SHAPE, "dim");

    /* no elements: data may be NULL */
    gad_tensor *e = gad_from_f32(NULL, SHP(0, 3), 2);
    CHECK(e && gad_numel(e) == 0);
    CHECK_SHAPE(e, 0, 3);
    CHECK_OK();
    /* elements but NULL data */
    CHECK(gad_from_f64(NULL, SHP(2), 1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "from_f64");
    /* bad shapes */
    CHECK(gad_from_f32(f, SHP(2, -3), 2) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "from_f32");
    CHECK(gad_from_i64(k, SHP(1, 1, 1, 1, 1, 1, 1, 1, 1), 9) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "from_i64");
    CHECK(gad_from_f32(f, SHP(1), -1) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "from_f32");
    CHECK(gad_from_f32(f, NULL, 2) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "from_f32");
    /* an element count that overflows */
    CHECK(gad_zeros(SHP(INT64_C(1) << 40, INT64_C(1) << 40), 2, GAD_F32) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "zeros");
    /* ... but a zero dim makes any other dim fine */
    gad_tensor *z = gad_zeros(SHP(INT64_C(1) << 40, 0), 2, GAD_F32);
    CHECK(z && gad_numel(z) == 0);
    CHECK_OK();
    /* rank 8 is the most */
    gad_tensor *r8 = gad_ones(SHP(1, 2, 1, 2, 1, 2, 1, 2), 8, GAD_F64);
    CHECK(r8 && gad_rank(r8) == 8 && gad_numel(r8) == 16);
    CHECK_OK();
    gad_scope_end();
}

TEST(rank0_from) {
    gad_scope_begin();
    /* SPEC 7.10: a rank-0 from_slice gives item 3.0 and rank 0 */
    float three = 3.0f;
    gad_tensor *s = gad_from_f32(&three, NULL, 0);
    CHECK(s && gad_rank(s) == 0 && gad_numel(s) == 1);
    CHECK(gad_item(s) == 3.0);
    CHECK(gad_is_contiguous(s));
    double dv = -0.25;
    CHECK(gad_item(gad_from_f64(&dv, NULL, 0)) == -0.25);
    int64_t iv = -7;
    CHECK(gad_item(gad_from_i64(&iv, SHP(1), 0)) == -7.0);
    CHECK_OK();
    gad_scope_end();
}

TEST(zeros_ones_full) {
    gad_scope_begin();
    for (int dt = 0; dt < 3; dt++) {
        gad_tensor *z = gad_zeros(SHP(2, 3), 2, (gad_dtype_t)dt);
        gad_tensor *o = gad_ones(SHP(2, 3), 2, (gad_dtype_t)dt);
        gad_tensor *f = gad_full(SHP(3), 1, (gad_dtype_t)dt, -2.75);
        CHECK((int)gad_dtype(z) == dt && (int)gad_dtype(o) == dt && (int)gad_dtype(f) == dt);
        CHECK_VALUES(z, 0, 0, 0, 0, 0, 0, 0);
        CHECK_VALUES(o, 0, 1, 1, 1, 1, 1, 1);
        if (dt == GAD_I64) CHECK_VALUES(f, 0, -2, -2, -2); /* toward zero */
        else CHECK_VALUES(f, 0, -2.75, -2.75, -2.75);
        /* rank 0 */
        gad_tensor *z0 = gad_zeros(NULL, 0, (gad_dtype_t)dt);
        gad_tensor *o0 = gad_ones(NULL, 0, (gad_dtype_t)dt);
        gad_tensor *f0 = gad_full(NULL, 0, (gad_dtype_t)dt, 9.5);
        CHECK(gad_rank(z0) == 0 && gad_rank(o0) == 0 && gad_rank(f0) == 0);
        CHECK(gad_item(z0) == 0 && gad_item(o0) == 1);
        CHECK(gad_item(f0) == (dt == GAD_I64 ? 9.0 : 9.5));
        gad_tensor *s = gad_scalar(2.9, (gad_dtype_t)dt);
        CHECK(s && gad_rank(s) == 0 && (int)gad_dtype(s) == dt);
        CHECK(gad_item(s) == (dt == GAD_I64 ? 2.0 : dt == GAD_F32 ? (double)2.9f : 2.9));
        /* empty */
        gad_tensor *e = gad_full(SHP(4, 0), 2, (gad_dtype_t)dt, 1.0);
        CHECK(e && gad_numel(e) == 0);
        CHECK_SHAPE(e, 4, 0);
    }
    CHECK_OK();
    /* i64 full: truncation toward zero, large values, non-finite values */
    int64_t v[2];
    gad_read_i64(gad_full(SHP(2), 1, GAD_I64, -9.99), v, 2);
    CHECK(v[0] == -9 && v[1] == -9);
    gad_read_i64(gad_full(SHP(2), 1, GAD_I64, 4611686018427387904.0), v, 2);
    CHECK(v[0] == INT64_C(4611686018427387904));
    CHECK(gad_full(SHP(2), 1, GAD_I64, NAN) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "full");
    CHECK(gad_full(SHP(2), 1, GAD_I64, INFINITY) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "full");
    /* out of the i64 range: an error, or saturation as gad_cast does */
    gad_tensor *big = gad_full(SHP(2), 1, GAD_I64, 1e19);
    if (big) {
        gad_read_i64(big, v, 2);
        CHECK(v[0] == INT64_MAX);
    } else {
        CHECK_ERR(GAD_ERR_DOMAIN, "full");
    }
    /* floats take any value, -0 keeps its sign */
    gad_tensor *nz = gad_full(SHP(2), 1, GAD_F32, -0.0);
    CHECK(signbit(at(nz, 1)) && at(nz, 1) == 0);
    CHECK(isnan(at(gad_full(SHP(1), 1, GAD_F64, NAN), 0)));
    CHECK(isinf(at(gad_full(SHP(1), 1, GAD_F32, -INFINITY), 0)));
    gad_tensor *sf = gad_scalar_f32(0.1f);
    gad_tensor *sd = gad_scalar_f64(0.1);
    CHECK(gad_dtype(sf) == GAD_F32 && gad_item(sf) == (double)0.1f);
    CHECK(gad_dtype(sd) == GAD_F64 && gad_item(sd) == 0.1);
    CHECK_OK();
    /* an invalid dtype */
    CHECK(gad_zeros(SHP(2), 1, (gad_dtype_t)8) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "zeros");
    CHECK(gad_ones(SHP(-1), 1, GAD_F32) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "ones");
    gad_scope_end();
}

TEST(like_constructors) {
    gad_scope_begin();
    gad_tensor *base = gad_arange(0, 6, 1, GAD_F64);
    gad_tensor *t = gad_transpose(gad_reshape(base, SHP(2, 3), 2)); /* view */
    gad_tensor *z = gad_zeros_like(t);
    gad_tensor *f = gad_full_like(t, 4.5);
    CHECK_SHAPE(z, 3, 2);
    CHECK_SHAPE(f, 3, 2);
    CHECK(gad_dtype(z) == GAD_F64 && gad_dtype(f) == GAD_F64);
    CHECK(gad_is_contiguous(z) && gad_is_contiguous(f));
    CHECK_VALUES(z, 0, 0, 0, 0, 0, 0, 0);
    CHECK_VALUES(f, 0, 4.5, 4.5, 4.5, 4.5, 4.5, 4.5);
    gad_tensor *ti = gad_arange(0, 3, 1, GAD_I64);
    gad_tensor *fi = gad_full_like(ti, 7.8);
    CHECK(gad_dtype(fi) == GAD_I64);
    CHECK_VALUES(fi, 0, 7, 7, 7);
    gad_tensor *z0 = gad_zeros_like(gad_scalar_f32(5));
    CHECK(z0 && gad_rank(z0) == 0 && gad_item(z0) == 0);
    CHECK_OK();
    CHECK(gad_zeros_like(NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "zeros_like");
    CHECK(gad_full_like(NULL, 1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "full_like");
    CHECK(gad_full_like(ti, NAN) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "full_like");
    gad_scope_end();
}

TEST(arange_values) {
    gad_scope_begin();
    /* SPEC §1.8 reference, bit-exact */
    const float ref[10] = {0.0f,  0.1f,  0.2f,        0.3f,       0.4f,
                           0.5f,  0.6f,  0.70000005f, 0.8000001f, 0.9000001f};
    gad_tensor *a = gad_arange(0, 1, 0.1, GAD_F32);
    CHECK_SHAPE(a, 10);
    CHECK(gad_dtype(a) == GAD_F32);
    float got[10] = {0};
    CHECK(gad_read_f32(a, got, 10) == GAD_OK);
    for (int i = 0; i < 10; i++)
        CHECK_MSG(same_f32(got[i], ref[i]), "i=%d %.9g vs %.9g", i, got[i], ref[i]);
    CHECK(!same_f32(got[7], 0.7f)); /* really the g value, not 0.7 */
    const float *raw = gad_data(a);
    CHECK(raw && same_f32(raw[9], 0.9000001f));

    /* f64: repeated addition in double, so 0.1 summed 10 times is still < 1
     * and gives an 11th element (the documented recurrence) */
    gad_tensor *d = gad_arange(0, 1, 0.1, GAD_F64);
    int nd = 0;
    double x = 0, want[16];
    for (x = 0; x < 1 && nd < 16; x += 0.1) want[nd++] = x;
    CHECK(gad_numel(d) == nd);
    for (int i = 0; i < nd && i < gad_numel(d); i++) CHECK(at(d, i) == want[i]);

    /* negative steps: emit while x > end */
    CHECK_VALUES(gad_arange(5, 0, -1, GAD_F32), 0, 5, 4, 3, 2, 1);
    CHECK_VALUES(gad_arange(1, -1, -0.5, GAD_F64), 0, 1, 0.5, 0, -0.5);
    gad_tensor *fr = gad_arange(1, 0, -0.1, GAD_F32);
    {
        float y = 1.0f;
        int n = 0;
        int ok = 1;
        for (; y > 0.0f; y += -0.1f, n++)
            if (n < gad_numel(fr) && !same_f32((float)at(fr, n), y)) ok = 0;
        CHECK(ok && gad_numel(fr) == n);
    }
    /* empty ranges */
    gad_tensor *e1 = gad_arange(5, 0, 1, GAD_F32);
    gad_tensor *e2 = gad_arange(0, 5, -1, GAD_F64);
    gad_tensor *e3 = gad_arange(2, 2, 1, GAD_I64);
    CHECK_SHAPE(e1, 0);
    CHECK_SHAPE(e2, 0);
    CHECK_SHAPE(e3, 0);
    /* i64: arguments truncated first */
    gad_tensor *i = gad_arange(0, 10, 3, GAD_I64);
    CHECK(gad_dtype(i) == GAD_I64);
    CHECK_VALUES(i, 0, 0, 3, 6, 9);
    CHECK_VALUES(gad_arange(10, 0, -3, GAD_I64), 0, 10, 7, 4, 1);
    CHECK_VALUES(gad_arange(0.9, 5.9, 1.9, GAD_I64), 0, 0, 1, 2, 3, 4);
    CHECK_VALUES(gad_arange(-3, 3, 2, GAD_I64), 0, -3, -1, 1);
    CHECK_VALUES(gad_arange(-2.5, 1, 1, GAD_F32), 0, -2.5, -1.5, -0.5, 0.5);
    CHECK_OK();
    /* errors */
    CHECK(gad_arange(0, 1, 0, GAD_F32) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "arange");
    CHECK(gad_arange(0, 1, 0, GAD_I64) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "arange");
    CHECK(gad_arange(0, 5, 0.5, GAD_I64) == NULL); /* step truncates to 0 */
    CHECK_ERR(GAD_ERR_SHAPE, "arange");
    CHECK(gad_arange(0, 1, NAN, GAD_F64) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "arange");
    CHECK(gad_arange(0, INFINITY, 1, GAD_F64) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "arange");
    CHECK(gad_arange(NAN, 1, 1, GAD_F32) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "arange");
    CHECK(gad_arange(0, 1e30, 1, GAD_F32) == NULL); /* far too many */
    CHECK_ERR(GAD_ERR_SHAPE, "arange");
    gad_scope_end();
}

TEST(linspace_values) {
    gad_scope_begin();
    gad_tensor *z = gad_linspace(0, 1, 0, GAD_F32);
    CHECK_SHAPE(z, 0);
    gad_tensor *one = gad_linspace(2.5, 7, 1, GAD_F64);
    CHECK_SHAPE(one, 1);
    CHECK_VALUES(one, 0, 2.5);
    gad_tensor *l = gad_linspace(0, 1, 5, GAD_F32);
    CHECK(gad_dtype(l) == GAD_F32);
    CHECK_VALUES(l, 0, 0, 0.25, 0.5, 0.75, 1);
    CHECK_VALUES(gad_linspace(3, -1, 5, GAD_F64), 0, 3, 2, 1, 0, -1);
    CHECK_VALUES(gad_linspace(1, 1, 3, GAD_F64), 0, 1, 1, 1);
    /* computed in the dtype: element i = s + (e - s) * i / (n - 1) */
    const int n = 101;
    gad_tensor *lf = gad_linspace(-1.3, 2.7, n, GAD_F32);
    gad_tensor *ld = gad_linspace(-1.3, 2.7, n, GAD_F64);
    float *pf = malloc(n * sizeof *pf);
    double *pd = malloc(n * sizeof *pd);
    CHECK(gad_read_f32(lf, pf, n) == GAD_OK);
    CHECK(gad_read_f64(ld, pd, n) == GAD_OK);
    int okf = 1, okd = 1;
    for (int i = 0; i < n; i++) {
        float s = -1.3f, e = 2.7f;
        float wf = s + (e - s) * (float)i / (float)(n - 1);
        double wd = -1.3 + (2.7 - -1.3) * (double)i / (double)(n - 1);
        if (!same_f32(pf[i], wf)) okf = 0;
        if (pd[i] != wd) okd = 0;
    }
    CHECK(okf && okd);
    CHECK(same_f32(pf[0], -1.3f) && fabsf(pf[n - 1] - 2.7f) <= 4 * FLT_EPSILON);
    CHECK(pd[0] == -1.3 && fabs(pd[n - 1] - 2.7) <= 4 * DBL_EPSILON);
    free(pf);
    free(pd);
    CHECK_OK();
    CHECK(gad_linspace(0, 1, -1, GAD_F32) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "linspace");
    CHECK(gad_linspace(0, 1, 3, GAD_I64) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "linspace");
    gad_scope_end();
}

TEST(eye_all_dtypes) {
    gad_scope_begin();
    for (int dt = 0; dt < 3; dt++) {
        gad_tensor *e = gad_eye(3, (gad_dtype_t)dt);
        CHECK((int)gad_dtype(e) == dt);
        CHECK_SHAPE(e, 3, 3);
        CHECK_VALUES(e, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1);
        gad_tensor *e1 = gad_eye(1, (gad_dtype_t)dt);
        CHECK_SHAPE(e1, 1, 1);
        CHECK_VALUES(e1, 0, 1);
        gad_tensor *e0 = gad_eye(0, (gad_dtype_t)dt);
        CHECK_SHAPE(e0, 0, 0);
    }
    gad_tensor *big = gad_eye(17, GAD_F64);
    double *p = malloc(17 * 17 * sizeof *p);
    gad_read_f64(big, p, 17 * 17);
    int ok = 1;
    for (int i = 0; i < 17; i++)
        for (int j = 0; j < 17; j++)
            if (p[i * 17 + j] != (i == j)) ok = 0;
    CHECK(ok);
    free(p);
    CHECK_OK();
    CHECK(gad_eye(-1, GAD_F32) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "eye");
    CHECK(gad_eye(2, (gad_dtype_t)-1) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "eye");
    gad_scope_end();
}

/* ------------------------------------------------------------------------ */
/* randn (SPEC §1.8)                                                         */
/* ------------------------------------------------------------------------ */

/* An independent xorshift64* + Box-Muller, as SPEC §1.8 words it. */
static double ref_xs(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    *s *= UINT64_C(0x2545F4914F6CDD1D);
    return (double)(*s >> 11) / 9007199254740992.0;
}

static void ref_randn(uint64_t seed, float *out, int n) {
    uint64_t s = seed | 1;
    for (int i = 0; i < n; i += 2) {
        double u1 = ref_xs(&s), u2 = ref_xs(&s);
        if (u1 < 1e-12) u1 = 1e-12;
        double r = sqrt(-2.0 * log(u1)), th = 2.0 * 3.14159265358979323846 * u2;
        out[i] = (float)(r * cos(th));
        if (i + 1 < n) out[i + 1] = (float)(r * sin(th));
    }
}

TEST(randn_reference) {
    gad_scope_begin();
    const float r42[8] = {0.916825f,   0.34023616f, -0.36147842f, -0.24668743f,
                          -1.2811565f, 0.16779281f, -0.4033337f,  -0.20236266f};
    const float r1[12] = {1.0140375f,   1.2295135f,  1.6220806f,  -0.6647121f,
                          -0.54126215f, 1.5731026f,  -0.29376808f, 0.63738775f,
                          1.041082f,    -1.2385998f, 0.7789065f,  0.67703575f};
    float got[12];
    gad_tensor *a = gad_randn(SHP(8), 1, 42);
    CHECK(gad_dtype(a) == GAD_F32);
    CHECK_SHAPE(a, 8);
    CHECK(gad_read_f32(a, got, 8) == GAD_OK);
    for (int i = 0; i < 8; i++)
        CHECK_MSG(same_f32(got[i], r42[i]), "seed 42 [%d]: %.9g vs %.9g", i,
                  got[i], r42[i]);
    for (uint64_t seed = 0; seed <= 1; seed++) {
        gad_tensor *b = gad_randn(SHP(3, 4), 2, seed);
        CHECK_SHAPE(b, 3, 4);
        CHECK(gad_read_f32(b, got, 12) == GAD_OK);
        for (int i = 0; i < 12; i++)
            CHECK_MSG(same_f32(got[i], r1[i]), "seed %d [%d]: %.9g vs %.9g",
                      (int)seed, i, got[i], r1[i]);
    }
    /* prefixes, odd counts, any shape */
    float longer[1001], shorter[7];
    gad_read_f32(gad_randn(SHP(1001), 1, 123456789), longer, 1001);
    gad_read_f32(gad_randn(SHP(7, 1), 2, 123456789), shorter, 7);
    CHECK(memcmp(longer, shorter, sizeof shorter) == 0);
    float one[1];
    gad_read_f32(gad_randn(NULL, 0, 42), one, 1);
    CHECK(same_f32(one[0], r42[0]));
    /* against the algorithm as the SPEC writes it (a different seed) */
    float ref[1001];
    ref_randn(123456789, ref, 1001);
    int mism = 0;
    for (int i = 0; i < 1001; i++)
        if (fabsf(ref[i] - longer[i]) > 1e-6f * (1 + fabsf(ref[i]))) mism++;
    CHECK_MSG(mism == 0, "%d mismatches", mism);
    /* different seeds give different streams; seed 2 and 3 coincide */
    float s2[4], s3[4], s4[4];
    gad_read_f32(gad_randn(SHP(4), 1, 2), s2, 4);
    gad_read_f32(gad_randn(SHP(4), 1, 3), s3, 4);
    gad_read_f32(gad_randn(SHP(4), 1, 4), s4, 4);
    CHECK(memcmp(s2, s3, sizeof s2) == 0);
    CHECK(memcmp(s2, s4, sizeof s2) != 0);
    gad_tensor *e = gad_randn(SHP(0, 5), 2, 1);
    CHECK(e && gad_numel(e) == 0);
    CHECK_OK();
    CHECK(gad_randn(SHP(-2), 1, 1) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "randn");
    gad_scope_end();
}

/* ------------------------------------------------------------------------ */
/* gad_rng                                                                   */
/* ------------------------------------------------------------------------ */

/* An independent xoshiro256** seeded by splitmix64. */
typedef struct { uint64_t s[4]; } ref_rng;

static uint64_t ref_splitmix(uint64_t *x) {
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void ref_seed(ref_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = ref_splitmix(&seed);
}

static uint64_t ref_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t ref_next(ref_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = ref_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = ref_rotl(s[3], 45);
    return result;
}

TEST(rng_streams) {
    /* the reference itself: splitmix64(0) starts with 0xe220a8397b1dcdaf */
    uint64_t x0 = 0;
    CHECK(ref_splitmix(&x0) == UINT64_C(0xe220a8397b1dcdaf));

    const uint64_t seeds[] = {0, 1, 42, UINT64_MAX};
    for (int si = 0; si < 4; si++) {
        gad_rng *g = gad_rng_new(seeds[si]);
        CHECK(g != NULL);
        ref_rng r;
        ref_seed(&r, seeds[si]);
        int bad = 0;
        for (int i = 0; i < 1000; i++)
            if (gad_rng_next(g) != ref_next(&r)) bad++;
        CHECK_MSG(bad == 0, "seed %llu: %d mismatches", (unsigned long long)seeds[si], bad);
        gad_rng_free(g);
    }
    /* same seed, same stream; reseeding restarts it */
    gad_rng *a = gad_rng_new(7), *b = gad_rng_new(7), *c = gad_rng_new(8);
    uint64_t first[5];
    int same = 1, differ = 0;
    for (int i = 0; i < 5; i++) {
        first[i] = gad_rng_next(a);
        if (first[i] != gad_rng_next(b)) same = 0;
        if (first[i] != gad_rng_next(c)) differ = 1;
    }
    CHECK(same && differ);
    gad_rng_seed(a, 7);
    int again = 1;
    for (int i = 0; i < 5; i++)
        if (gad_rng_next(a) != first[i]) again = 0;
    CHECK(again);
    /* uniform: 53 bits of the next output */
    gad_rng_seed(a, 99);
    ref_rng r;
    ref_seed(&r, 99);
    int ubad = 0;
    for (int i = 0; i < 100; i++) {
        double u = gad_rng_uniform(a);
        if (u != (double)(ref_next(&r) >> 11) / 9007199254740992.0) ubad++;
    }
    CHECK(ubad == 0);
    gad_rng_free(a);
    gad_rng_free(b);
    gad_rng_free(c);
    gad_rng_free(NULL); /* accepted */
    CHECK_OK();
}

TEST(rng_distributions) {
    gad_rng *g = gad_rng_new(2024);
    const int N = 100000;
    /* uniform in [0, 1) */
    double sum = 0, sum2 = 0, mn = 1, mx = 0;
    for (int i = 0; i < N; i++) {
        double u = gad_rng_uniform(g);
        sum += u;
        sum2 += u * u;
        if (u < mn) mn = u;
        if (u > mx) mx = u;
    }
    double mean = sum / N, var = sum2 / N - mean * mean;
    CHECK(mn >= 0 && mx < 1);
    CHECK_NEAR(mean, 0.5, 0.005);
    CHECK_NEAR(var, 1.0 / 12, 0.003);
    /* normal: mean 0, variance 1 */
    sum = sum2 = 0;
    double s3 = 0;
    for (int i = 0; i < N; i++) {
        double z = gad_rng_normal(g);
        sum += z;
        sum2 += z * z;
        s3 += z * z * z;
    }
    mean = sum / N;
    var = sum2 / N - mean * mean;
    CHECK_NEAR(mean, 0, 0.016);
    CHECK_NEAR(var, 1, 0.025);
    CHECK_NEAR(s3 / N, 0, 0.05);
    /* normal pairs: cos then the kept sin; reseeding drops the spare */
    gad_rng_seed(g, 5);
    double z0 = gad_rng_normal(g), z1 = gad_rng_normal(g);
    ref_rng r;
    ref_seed(&r, 5);
    double u1 = (double)(ref_next(&r) >> 11) / 9007199254740992.0;
    double u2 = (double)(ref_next(&r) >> 11) / 9007199254740992.0;
    double rad = sqrt(-2 * log(u1)), th = 2 * 3.14159265358979323846 * u2;
    CHECK_NEAR(z0, rad * cos(th), 1e-12);
    CHECK_NEAR(z1, rad * sin(th), 1e-12);
    (void)gad_rng_normal(g); /* leaves a spare */
    gad_rng_seed(g, 5);
    CHECK(gad_rng_normal(g) == z0);

    /* integers in [lo, hi), every value hit, roughly evenly */
    int counts[7] = {0};
    int out_of_range = 0;
    const int M = 70000;
    for (int i = 0; i < M; i++) {
        int64_t v = gad_rng_int(g, -3, 4);
        if (v < -3 || v >= 4) out_of_range++;
        else counts[v + 3]++;
    }
    CHECK(out_of_range == 0);
    for (int i = 0; i < 7; i++)
        CHECK_MSG(abs(counts[i] - M / 7) < 5 * 93, "value %d: %d", i - 3, counts[i]);
    CHECK(gad_rng_int(g, 5, 5) == 5);
    CHECK(gad_rng_int(g, 5, 2) == 5);
    CHECK(gad_rng_int(g, 9, 10) == 9);
    int wide_ok = 1, neg = 0, pos = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t v = gad_rng_int(g, INT64_MIN, INT64_MAX);
        if (v == INT64_MAX) wide_ok = 0;
        if (v < 0) neg++;
        else pos++;
    }
    CHECK(wide_ok && neg > 400 && pos > 400);
    /* a range that is not a power of two, near the top: no modulo bias */
    int64_t big_lo = 0, big_hi = (INT64_C(1) << 62) + (INT64_C(1) << 61);
    int low_half = 0;
    for (int i = 0; i < 4000; i++) {
        int64_t v = gad_rng_int(g, big_lo, big_hi);
        CHECK(v >= big_lo && v < big_hi);
        if (v < big_hi / 2) low_half++;
    }
    CHECK_MSG(abs(low_half - 2000) < 200, "low half %d", low_half);
    gad_rng_free(g);
}

TEST(rng_tensors) {
    gad_scope_begin();
    gad_rng *g = gad_rng_new(11), *h = gad_rng_new(11);
    /* uniform tensors use the same stream: lo + (hi - lo) * u */
    gad_tensor *u = gad_rng_uniform_tensor(g, SHP(4, 25), 2, GAD_F64, -2, 3);
    CHECK(gad_dtype(u) == GAD_F64);
    CHECK_SHAPE(u, 4, 25);
    double vals[100];
    gad_read_f64(u, vals, 100);
    int bad = 0;
    for (int i = 0; i < 100; i++)
        if (vals[i] != -2 + 5 * gad_rng_uniform(h)) bad++;
    CHECK(bad == 0);
    /* f32 draws stay below hi */
    gad_tensor *uf = gad_rng_uniform_tensor(g, SHP(100000), 1, GAD_F32, 0, 1);
    float *pf = malloc(100000 * sizeof *pf);
    gad_read_f32(uf, pf, 100000);
    int in = 1;
    double m = 0;
    for (int i = 0; i < 100000; i++) {
        if (!(pf[i] >= 0.0f && pf[i] < 1.0f)) in = 0;
        m += pf[i];
    }
    CHECK(in);
    CHECK_NEAR(m / 100000, 0.5, 0.005);
    free(pf);
    /* normal tensors: mean and std */
    gad_tensor *n = gad_rng_normal_tensor(g, SHP(100000), 1, GAD_F64, 3, 2);
    double *pn = malloc(100000 * sizeof *pn), s = 0, s2 = 0;
    gad_read_f64(n, pn, 100000);
    for (int i = 0; i < 100000; i++) {
        s += pn[i];
        s2 += pn[i] * pn[i];
    }
    free(pn);
    double mean = s / 100000, sd = sqrt(s2 / 100000 - mean * mean);
    CHECK_NEAR(mean, 3, 0.03);
    CHECK_NEAR(sd, 2, 0.03);
    gad_tensor *nf = gad_rng_normal_tensor(g, SHP(2, 3), 2, GAD_F32, 0, 0);
    CHECK(gad_dtype(nf) == GAD_F32);
    CHECK_VALUES(nf, 0, 0, 0, 0, 0, 0, 0); /* std 0 */
    /* integer tensors */
    gad_tensor *it = gad_rng_int_tensor(g, SHP(10, 10), 2, 10, 13);
    CHECK(gad_dtype(it) == GAD_I64);
    CHECK_SHAPE(it, 10, 10);
    int64_t iv[100];
    gad_read_i64(it, iv, 100);
    int hit[3] = {0}, inr = 1;
    for (int i = 0; i < 100; i++) {
        if (iv[i] < 10 || iv[i] >= 13) inr = 0;
        else hit[iv[i] - 10] = 1;
    }
    CHECK(inr && hit[0] && hit[1] && hit[2]);
    gad_tensor *r0 = gad_rng_uniform_tensor(g, NULL, 0, GAD_F32, 1, 2);
    CHECK(r0 && gad_rank(r0) == 0 && gad_item(r0) >= 1 && gad_item(r0) < 2);
    CHECK_OK();
    /* errors */
    CHECK(gad_rng_uniform_tensor(NULL, SHP(2), 1, GAD_F32, 0, 1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "rng_uniform");
    CHECK(gad_rng_uniform_tensor(g, SHP(2), 1, GAD_I64, 0, 1) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "rng_uniform");
    CHECK(gad_rng_uniform_tensor(g, SHP(2), 1, GAD_F32, 1, 0) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "rng_uniform");
    CHECK(gad_rng_uniform_tensor(g, SHP(-2), 1, GAD_F32, 0, 1) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "rng_uniform");
    CHECK(gad_rng_normal_tensor(g, SHP(2), 1, GAD_F32, 0, -1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "rng_normal");
    CHECK(gad_rng_normal_tensor(g, SHP(2), 1, GAD_F64, NAN, 1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "rng_normal");
    CHECK(gad_rng_normal_tensor(g, SHP(2), 1, GAD_I64, 0, 1) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "rng_normal");
    CHECK(gad_rng_int_tensor(g, SHP(2), 1, 3, 3) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "rng_int");
    CHECK(gad_rng_int_tensor(NULL, SHP(2), 1, 0, 3) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "rng_int");
    gad_rng_free(g);
    gad_rng_free(h);
    gad_scope_end();
}

/* ------------------------------------------------------------------------ */
/* cast, item, reads                                                         */
/* ------------------------------------------------------------------------ */

TEST(cast_reference) {
    gad_scope_begin();
    /* SPEC §1.9 */
    const float f[5] = {3.7f, -3.7f, NAN, 1e20f, -1e20f};
    const double d[5] = {3.7, -3.7, NAN, 1e20, -1e20};
    const int64_t want[5] = {3, -3, 0, INT64_MAX, INT64_MIN};
    gad_tensor *cf = gad_cast(gad_from_f32(f, SHP(5), 1), GAD_I64);
    gad_tensor *cd = gad_cast(gad_from_f64(d, SHP(5), 1), GAD_I64);
    CHECK(gad_dtype(cf) == GAD_I64 && gad_dtype(cd) == GAD_I64);
    CHECK_SHAPE(cf, 5);
    int64_t gf[5] = {0}, gd[5] = {0};
    CHECK(gad_read_i64(cf, gf, 5) == GAD_OK);
    CHECK(gad_read_i64(cd, gd, 5) == GAD_OK);
    for (int i = 0; i < 5; i++) {
        CHECK_MSG(gf[i] == want[i], "f32 [%d] %lld", i, (long long)gf[i]);
        CHECK_MSG(gd[i] == want[i], "f64 [%d] %lld", i, (long long)gd[i]);
    }
    /* the edges of saturation, infinities, -0.5 */
    const double e[6] = {9223372036854775807.0, -9223372036854775808.0,
                         INFINITY, -INFINITY, -0.5, 9.2233720368547748e18};
    int64_t ge[6];
    gad_read_i64(gad_cast(gad_from_f64(e, SHP(6), 1), GAD_I64), ge, 6);
    CHECK(ge[0] == INT64_MAX && ge[1] == INT64_MIN && ge[2] == INT64_MAX &&
          ge[3] == INT64_MIN && ge[4] == 0 && ge[5] == INT64_C(9223372036854774784));

    /* f32 <-> f64 */
    gad_tensor *t64 = gad_cast(gad_from_f32(f, SHP(5), 1), GAD_F64);
    CHECK(gad_dtype(t64) == GAD_F64);
    CHECK_VALUES(t64, 0, (double)3.7f, (double)-3.7f, NAN, (double)1e20f, (double)-1e20f);
    const double dd[3] = {0.1, 1e300, -1e-300};
    float g32[3];
    gad_tensor *t32 = gad_cast(gad_from_f64(dd, SHP(3), 1), GAD_F32);
    CHECK(gad_dtype(t32) == GAD_F32);
    gad_read_f32(t32, g32, 3);
    CHECK(same_f32(g32[0], 0.1f) && isinf(g32[1]) && g32[2] == 0.0f && signbit(g32[2]));
    /* i64 -> float */
    const int64_t iv[4] = {-5, 0, INT64_C(1) << 53, INT64_MAX};
    gad_tensor *ti = gad_from_i64(iv, SHP(2, 2), 2);
    gad_tensor *i64to32 = gad_cast(ti, GAD_F32), *i64to64 = gad_cast(ti, GAD_F64);
    CHECK_SHAPE(i64to32, 2, 2);
    CHECK_VALUES(i64to64, 0, -5, 0, 9007199254740992.0, 9223372036854775808.0);
    CHECK_VALUES(i64to32, 0, -5, 0, 9007199254740992.0, 9223372036854775808.0);
    /* i64 -> f32 is one correctly rounded conversion (as C and NumPy do),
     * not a double rounding through f64: 2^60 + 2^36 + 1 is above the
     * midpoint of 2^60 and 2^60 + 2^37, so it rounds up */
    const int64_t tricky = (INT64_C(1) << 60) + (INT64_C(1) << 36) + 1;
    float tf;
    gad_read_f32(gad_cast(gad_from_i64(&tricky, NULL, 0), GAD_F32), &tf, 1);
    CHECK_MSG(tf == ldexpf(1, 60) + ldexpf(1, 37), "cast i64->f32: %.9g", tf);
    gad_read_f32(gad_from_i64(&tricky, NULL, 0), &tf, 1);
    CHECK_MSG(tf == ldexpf(1, 60) + ldexpf(1, 37), "read_f32 of i64: %.9g", tf);

    /* same dtype: the same handle, one more reference */
    gad_tensor *same = gad_cast(ti, GAD_I64);
    CHECK(same == ti);
    /* a non-contiguous source */
    gad_tensor *tt = gad_transpose(gad_reshape(gad_arange(0, 6, 1, GAD_F32), SHP(2, 3), 2));
    gad_tensor *ct = gad_cast(tt, GAD_F64);
    CHECK_SHAPE(ct, 3, 2);
    CHECK(gad_is_contiguous(ct));
    CHECK_VALUES(ct, 0, 0, 3, 1, 4, 2, 5);
    /* empty and rank 0 */
    CHECK(gad_numel(gad_cast(gad_zeros(SHP(0, 2), 2, GAD_F32), GAD_I64)) == 0);
    CHECK(gad_item(gad_cast(gad_scalar_f64(-2.5), GAD_I64)) == -2);
    CHECK_OK();
    CHECK(gad_cast(ti, (gad_dtype_t)8) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "cast");
    CHECK(gad_cast(NULL, GAD_F32) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "cast");
    gad_scope_end();

    /* outside a scope the same-dtype cast hands back one more reference */
    gad_mem_stats base = stats();
    gad_tensor *o = gad_zeros(SHP(2), 1, GAD_F32);
    gad_tensor *o2 = gad_cast(o, GAD_F32);
    CHECK(o2 == o);
    gad_release(o);
    CHECK(gad_numel(o2) == 2 && at(o2, 1) == 0); /* still alive */
    gad_release(o2);
    CHECK_LIVE(base);
}

/* The bool dtype (gad.h): one byte, 0 or 1; every dtype casts to it as
 * "nonzero" (NaN is true, as PyTorch) and back to 0/1; constructors,
 * reads, printing and strided copies know it; float ops refuse it. */
TEST(bool_dtype) {
    gad_scope_begin();
    CHECK(strcmp(gad_dtype_name(GAD_BOOL), "bool") == 0 && gad_dtype_size(GAD_BOOL) == 1);
    const uint8_t raw[6] = {0, 1, 7, 0, 255, 1};
    gad_tensor *b = gad_from_bool(raw, SHP(2, 3), 2);
    CHECK(gad_dtype(b) == GAD_BOOL);
    uint8_t got[6];
    CHECK(gad_read_bool(b, got, 6) == GAD_OK);
    const uint8_t want[6] = {0, 1, 1, 0, 1, 1};
    CHECK(memcmp(got, want, 6) == 0);
    /* reads through a transposed view, into every type */
    double dv[6];
    int64_t iv[6];
    CHECK(gad_read_f64(gad_transpose(b), dv, 6) == GAD_OK && dv[0] == 0 && dv[1] == 0 &&
          dv[2] == 1 && dv[3] == 1 && dv[4] == 1 && dv[5] == 1);
    CHECK(gad_read_i64(b, iv, 6) == GAD_OK && iv[2] == 1 && iv[3] == 0);
    gad_tensor *bt = gad_contiguous(gad_transpose(b));
    CHECK(gad_read_bool(bt, got, 6) == GAD_OK && got[0] == 0 && got[1] == 0 && got[2] == 1);
    /* casts: to bool is nonzero, NaN included; from bool 0/1 */
    const float f[6] = {0.0f, -0.0f, NAN, 0.5f, -INFINITY, 1e-40f};
    const int64_t ii[3] = {0, -5, INT64_MIN};
    CHECK(gad_read_bool(gad_cast(gad_from_f32(f, SHP(6), 1), GAD_BOOL), got, 6) == GAD_OK);
    CHECK(got[0] == 0 && got[1] == 0 && got[2] == 1 && got[3] == 1 && got[4] == 1 && got[5] == 1);
    CHECK(gad_read_bool(gad_cast(gad_cast(gad_from_f32(f, SHP(6), 1), GAD_F64), GAD_BOOL),
                        got, 6) == GAD_OK && got[1] == 0 && got[2] == 1 && got[5] == 1);
    CHECK(gad_read_bool(gad_cast(gad_from_i64(ii, SHP(3), 1), GAD_BOOL), got, 3) == GAD_OK &&
          got[0] == 0 && got[1] == 1 && got[2] == 1);
    float fv[6];
    CHECK(gad_read_f32(gad_cast(b, GAD_F32), fv, 6) == GAD_OK && fv[0] == 0 && fv[2] == 1);
    CHECK(gad_read_i64(gad_cast(b, GAD_I64), iv, 6) == GAD_OK && iv[4] == 1 && iv[3] == 0);
    CHECK(gad_read_f64(gad_cast(b, GAD_F64), dv, 6) == GAD_OK && dv[5] == 1);
    CHECK(gad_cast(b, GAD_BOOL) == b);
    /* constructors: nonzero is true */
    CHECK(gad_item(gad_full(SHP(1), 1, GAD_BOOL, NAN)) == 1);
    CHECK(gad_item(gad_full(SHP(1), 1, GAD_BOOL, -0.0)) == 0);
    CHECK(gad_item(gad_sum_all(gad_cast(gad_ones(SHP(3), 1, GAD_BOOL), GAD_F32))) == 3);
    CHECK(gad_item(gad_sum_all(gad_cast(gad_eye(3, GAD_BOOL), GAD_F32))) == 3);
    CHECK(gad_item(gad_scalar(2.5, GAD_BOOL)) == 1);
    /* printing */
    char buf[200];
    gad_snprint(buf, sizeof buf, b);
    CHECK_MSG(strstr(buf, "[False,  True,  True]") && strstr(buf, "dtype=bool"), "%s", buf);
    /* views and index ops that take any dtype */
    const int64_t idx[2] = {2, 0};
    gad_tensor *tk = gad_take(b, 1, gad_from_i64(idx, SHP(2), 1));
    CHECK(gad_read_bool(tk, got, 2) == GAD_OK && got[0] == 1 && got[1] == 0);
    CHECK(gad_read_bool(gad_flip(b, (int[]){1}, 1), got, 6) == GAD_OK && got[0] == 1 &&
          got[2] == 0);
    gad_tensor *two[2] = {b, b};
    CHECK(gad_numel(gad_cat(two, 2, 0)) == 12 && gad_dtype(gad_cat(two, 2, 0)) == GAD_BOOL);
    CHECK_OK();
    /* float ops and gradients refuse it */
    CHECK(gad_add(b, b) == NULL && gad_last_error()->kind == GAD_ERR_DTYPE &&
          strstr(gad_last_error()->message, "bool"));
    gad_clear_error();
    CHECK(gad_requires_grad(b) == NULL && gad_last_error()->kind == GAD_ERR_DTYPE);
    gad_clear_error();
    CHECK(gad_arange(0, 3, 1, GAD_BOOL) == NULL && gad_last_error()->kind == GAD_ERR_DTYPE);
    gad_clear_error();
    /* a 0-d bool with a float tensor follows PyTorch: the float's dtype */
    float one[2] = {1, 2};
    gad_tensor *s = gad_add(gad_from_f32(one, SHP(2), 1), gad_scalar(1, GAD_BOOL));
    CHECK(s && gad_dtype(s) == GAD_F32 && gad_read_f32(s, fv, 2) == GAD_OK && fv[1] == 3);
    gad_scope_end();
    CHECK_OK();
}

TEST(item_and_reads) {
    gad_scope_begin();
    CHECK(gad_item(gad_scalar_f32(1.5f)) == 1.5);
    CHECK(gad_item(gad_ones(SHP(1, 1, 1), 3, GAD_F64)) == 1);
    CHECK(gad_item(gad_full(SHP(1), 1, GAD_I64, -4)) == -4);
    CHECK_OK();
    CHECK(isnan(gad_item(gad_zeros(SHP(2), 1, GAD_F32))));
    CHECK_ERR(GAD_ERR_SHAPE, "item");
    CHECK(isnan(gad_item(gad_zeros(SHP(0), 1, GAD_F32))));
    CHECK_ERR(GAD_ERR_SHAPE, "item");
    CHECK(isnan(gad_item(NULL)));
    CHECK_ERR(GAD_ERR_DOMAIN, "item");
    /* a one-element view far into its storage */
    gad_tensor *v = gad_select(gad_arange(10, 20, 1, GAD_F64), 0, 7);
    CHECK(gad_item(v) == 17);

    /* reads convert */
    const double d[4] = {1.5, -2.75, 1e40, 0.1};
    gad_tensor *t = gad_from_f64(d, SHP(2, 2), 2);
    float f[4];
    int64_t k[4];
    double back[4];
    CHECK(gad_read_f32(t, f, 4) == GAD_OK);
    CHECK(f[0] == 1.5f && f[1] == -2.75f && isinf(f[2]) && same_f32(f[3], 0.1f));
    CHECK(gad_read_i64(t, k, 4) == GAD_OK);
    CHECK(k[0] == 1 && k[1] == -2 && k[2] == INT64_MAX && k[3] == 0);
    CHECK(gad_read_f64(gad_from_i64((const int64_t[]){7, -8}, SHP(2), 1), back, 2) == GAD_OK);
    CHECK(back[0] == 7 && back[1] == -8);
    /* a larger capacity is fine; the rest is untouched */
    double big[6] = {9, 9, 9, 9, 9, 9};
    CHECK(gad_read_f64(t, big, 6) == GAD_OK);
    CHECK(big[1] == -2.75 && big[4] == 9 && big[5] == 9);
    /* non-contiguous: row-major order of the view, every conversion */
    gad_tensor *tr = gad_transpose(t);
    CHECK(gad_read_f64(tr, back, 4) == GAD_OK);
    CHECK(back[0] == 1.5 && back[1] == 1e40 && back[2] == -2.75 && back[3] == 0.1);
    CHECK(gad_read_i64(tr, k, 4) == GAD_OK);
    CHECK(k[0] == 1 && k[1] == INT64_MAX && k[2] == -2 && k[3] == 0);
    CHECK(gad_read_f32(tr, f, 4) == GAD_OK);
    CHECK(f[0] == 1.5f && isinf(f[1]) && f[2] == -2.75f);
    CHECK_OK();
    /* too small a destination */
    CHECK(gad_read_f32(t, f, 3) == GAD_ERR_SHAPE);
    CHECK_ERR(GAD_ERR_SHAPE, "read_f32");
    CHECK(gad_read_f64(t, back, 0) == GAD_ERR_SHAPE);
    CHECK_ERR(GAD_ERR_SHAPE, "read_f64");
    CHECK(gad_read_i64(t, k, 1) == GAD_ERR_SHAPE);
    CHECK_ERR(GAD_ERR_SHAPE, "read_i64");
    /* empty tensors read nothing */
    CHECK(gad_read_f64(gad_zeros(SHP(0), 1, GAD_F64), NULL, 0) == GAD_OK);
    CHECK_OK();
    CHECK(gad_read_f64(NULL, back, 4) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "read_f64");
    gad_scope_end();
}

/* ------------------------------------------------------------------------ */
/* data, data_mut (copy-on-write), uniqueness, contiguous, clone             */
/* ------------------------------------------------------------------------ */

TEST(data_and_cow) {
    gad_scope_begin();
    const float src[6] = {0, 1, 2, 3, 4, 5};
    gad_tensor *base = gad_from_f32(src, SHP(2, 3), 2);
    const float *p = gad_data(base);
    CHECK(p && p[4] == 4);
    CHECK(gad_is_unique(base));
    /* a unique contiguous tensor is written in place */
    float *w = gad_data_mut(base);
    CHECK(w == p);
    w[0] = 10;
    CHECK(at(base, 0) == 10);

    /* make views; the storage is now shared */
    gad_tensor *v = gad_reshape(base, SHP(3, 2), 2);
    gad_tensor *tr = gad_transpose(base);
    gad_tensor *row = gad_select(base, 0, 1);
    CHECK(!gad_is_unique(base) && !gad_is_unique(v) && !gad_is_unique(tr));
    CHECK(gad_data(v) == (const void *)p); /* a view copies nothing */
    CHECK(gad_data(tr) == NULL);           /* not contiguous */
    CHECK_ERR(GAD_ERR_SHAPE, "data");
    CHECK(gad_data(row) == NULL); /* offset 3: not contiguous by definition */
    CHECK_ERR(GAD_ERR_SHAPE, "data");

    /* writing through the base copies it first: the views keep 10,1,...,5 */
    float *wb = gad_data_mut(base);
    CHECK(wb != NULL && wb != p);
    for (int i = 0; i < 6; i++) wb[i] = -1;
    CHECK_VALUES(base, 0, -1, -1, -1, -1, -1, -1);
    CHECK_VALUES(v, 0, 10, 1, 2, 3, 4, 5);
    CHECK_VALUES(tr, 0, 10, 3, 1, 4, 2, 5);
    CHECK_VALUES(row, 0, 3, 4, 5);
    CHECK(gad_is_unique(base));
    CHECK(!gad_is_unique(v)); /* v, tr and row still share the old storage */

    /* writing through a non-contiguous view packs it: base and other views
     * unchanged, the view becomes contiguous with its own values */
    float *wt = gad_data_mut(tr);
    CHECK(wt != NULL);
    CHECK(gad_is_contiguous(tr) && gad_is_unique(tr));
    CHECK_SHAPE(tr, 3, 2);
    CHECK(wt[0] == 10 && wt[1] == 3 && wt[2] == 1);
    wt[1] = 99;
    CHECK_VALUES(tr, 0, 10, 99, 1, 4, 2, 5);
    CHECK_VALUES(v, 0, 10, 1, 2, 3, 4, 5);
    CHECK_VALUES(row, 0, 3, 4, 5);
    CHECK_VALUES(base, 0, -1, -1, -1, -1, -1, -1);

    /* a view at an offset: written privately */
    double *wr = gad_data_mut(gad_cast(row, GAD_F64));
    CHECK(wr && wr[0] == 3);
    float *wrow = gad_data_mut(row);
    CHECK(wrow && wrow[0] == 3 && wrow[2] == 5);
    wrow[0] = 42;
    CHECK_VALUES(row, 0, 42, 4, 5);
    CHECK_VALUES(v, 0, 10, 1, 2, 3, 4, 5);

    /* an alias by reference (same handle, e.g. a same-dtype cast or
     * gad_contiguous of a contiguous tensor) is the same tensor: it keeps
     * its identity, so it sees the write, while a view does not */
    gad_tensor *alias = gad_contiguous(v);
    CHECK(alias == v);
    gad_tensor *view2 = gad_view(v, SHP(6), 1);
    gad_tensor *kept = gad_retain(v);
    float *wv = gad_data_mut(v);
    CHECK(wv != NULL);
    wv[5] = -5;
    CHECK(at(alias, 5) == -5 && at(kept, 5) == -5);
    CHECK_VALUES(view2, 0, 10, 1, 2, 3, 4, 5);
    gad_release(kept);
    /* an i64 tensor too */
    gad_tensor *ib = gad_arange(0, 4, 1, GAD_I64);
    gad_tensor *iv = gad_slice(ib, &GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1), 1);
    int64_t *wi = gad_data_mut(ib);
    CHECK(wi != NULL);
    wi[0] = 100;
    CHECK_VALUES(ib, 0, 100, 1, 2, 3);
    CHECK_VALUES(iv, 0, 3, 2, 1, 0);
    /* a broadcast view (stride 0) is packed too */
    gad_tensor *bc = gad_broadcast_to(gad_arange(1, 3, 1, GAD_F32), SHP(2, 2), 2);
    float *wbc = gad_data_mut(bc);
    CHECK(wbc && wbc[0] == 1 && wbc[1] == 2 && wbc[2] == 1 && wbc[3] == 2);
    wbc[0] = 7;
    CHECK_VALUES(bc, 0, 7, 2, 1, 2);
    /* empty */
    gad_tensor *e = gad_zeros(SHP(0), 1, GAD_F32);
    (void)gad_data_mut(e);
    CHECK_OK();
    CHECK(gad_data_mut(NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "data_mut");
    CHECK(gad_data(NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "data");
    gad_scope_end();
}

TEST(unique_views_lifetime) {
    gad_mem_stats base = stats();
    gad_tensor *t = gad_arange(0, 6, 1, GAD_F32); /* caller-owned */
    CHECK(gad_is_unique(t));
    gad_tensor *v = gad_reshape(t, SHP(2, 3), 2);
    CHECK(!gad_is_unique(t) && !gad_is_unique(v));
    /* SPEC 7.10: after a clone (gad's handle copy is a view), not unique */
    gad_tensor *c = gad_clone(t);
    CHECK(gad_is_unique(c) && c != t);
    /* another reference to the same tensor is not another tensor */
    gad_release(gad_retain(c));
    gad_tensor *c2 = gad_retain(c);
    CHECK(gad_is_unique(c));
    gad_release(c2);
    gad_release(v);
    CHECK(gad_is_unique(t));
    /* a view keeps the storage alive after its source is released */
    gad_tensor *s = gad_slice(t, &GAD_RANGE(2, 5), 1);
    gad_release(t);
    CHECK_VALUES(s, 0, 2, 3, 4);
    CHECK(gad_is_unique(s));
    gad_release(s);
    gad_release(c);
    CHECK_LIVE(base);
    CHECK(!gad_is_unique(NULL));
}

TEST(contiguous_and_clone) {
    gad_scope_begin();
    gad_tensor *a = gad_reshape(gad_arange(0, 12, 1, GAD_F64), SHP(3, 4), 2);
    gad_tensor *c = gad_contiguous(a);
    CHECK(c == a);
    gad_tensor *t = gad_transpose(a);
    CHECK(!gad_is_contiguous(t));
    gad_tensor *tc = gad_contiguous(t);
    CHECK(tc != t && gad_is_contiguous(tc) && gad_is_unique(tc));
    CHECK_SHAPE(tc, 4, 3);
    CHECK(gad_strides(tc)[0] == 3 && gad_strides(tc)[1] == 1);
    CHECK_VALUES(tc, 0, 0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11);
    const double *p = gad_data(tc);
    CHECK(p && p[1] == 4 && p[11] == 11);
    gad_tensor *cl = gad_clone(a);
    CHECK(cl != a && gad_is_unique(cl) && gad_is_contiguous(cl));
    CHECK(gad_data(cl) != gad_data(a));
    CHECK_VALUES(cl, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
    /* a clone of a reversed slice and of a broadcast */
    gad_tensor *rs = gad_slice(a, (const gad_range[]){GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -2),
                                                      GAD_RANGE_STEP(3, 0, -2)}, 2);
    gad_tensor *rc = gad_clone(rs);
    CHECK_SHAPE(rc, 2, 2);
    CHECK_VALUES(rc, 0, 11, 9, 3, 1);
    gad_tensor *bc = gad_clone(gad_broadcast_to(gad_scalar_f32(2), SHP(2, 3), 2));
    CHECK(gad_is_contiguous(bc));
    CHECK_VALUES(bc, 0, 2, 2, 2, 2, 2, 2);
    /* a large transposed copy (exercises the parallel/tiled path) */
    gad_tensor *L = gad_reshape(gad_arange(0, 300 * 400, 1, GAD_F32), SHP(300, 400), 2);
    gad_tensor *Lt = gad_contiguous(gad_transpose(L));
    float *lp = malloc(300 * 400 * sizeof *lp);
    gad_read_f32(Lt, lp, 300 * 400);
    int ok = 1;
    for (int i = 0; i < 400 && ok; i++)
        for (int j = 0; j < 300; j++)
            if (lp[i * 300 + j] != (float)(j * 400 + i)) {
                ok = 0;
                break;
            }
    CHECK(ok);
    free(lp);
    CHECK(gad_is_contiguous(gad_contiguous(gad_scalar_f32(1))));
    CHECK_OK();
    CHECK(gad_contiguous(NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "contiguous");
    CHECK(gad_clone(NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "clone");
    gad_scope_end();
}

/* ------------------------------------------------------------------------ */
/* The printer                                                               */
/* ------------------------------------------------------------------------ */

#define CHECK_PRINT(t, want)                                                   \
    do {                                                                       \
        char pb_[8192];                                                        \
        size_t n_ = gad_snprint(pb_, sizeof pb_, (t));                         \
        CHECK_MSG(strcmp(pb_, (want)) == 0 && n_ == strlen(want),              \
                  "\n got: %s\nwant: %s", pb_, (want));                        \
    } while (0)

TEST(printer) {
    gad_scope_begin();
    CHECK_PRINT(gad_from_f32((const float[]){1, 2, 3, 4}, SHP(2, 2), 2),
                "tensor([[1., 2.],\n        [3., 4.]], dtype=f32)");
    CHECK_PRINT(gad_from_f32((const float[]){-1, 2.5f, 0.1f}, SHP(3), 1),
                "tensor([-1., 2.5, 0.1], dtype=f32)");
    CHECK_PRINT(gad_from_f32((const float[]){-1, 2}, SHP(2), 1),
                "tensor([-1.,  2.], dtype=f32)");
    CHECK_PRINT(gad_from_i64((const int64_t[]){1, -20, 300, 4, 5, 6}, SHP(2, 3), 2),
                "tensor([[  1, -20, 300],\n        [  4,   5,   6]], dtype=i64)");
    /* rank 0 */
    CHECK_PRINT(gad_scalar_f32(3), "tensor(3., dtype=f32)");
    CHECK_PRINT(gad_scalar_f64(0.5), "tensor(0.5, dtype=f64)");
    CHECK_PRINT(gad_scalar(-7, GAD_I64), "tensor(-7, dtype=i64)");
    /* empty */
    CHECK_PRINT(gad_zeros(SHP(0, 3), 2, GAD_F32), "tensor([], shape=[0,3], dtype=f32)");
    CHECK_PRINT(gad_zeros(SHP(0), 1, GAD_I64), "tensor([], shape=[0], dtype=i64)");
    /* f64: the shortest repr that reads back */
    CHECK_PRINT(gad_from_f64((const double[]){0.1, 1.0 / 3}, SHP(2), 1),
                "tensor([               0.1, 0.3333333333333333], dtype=f64)");
    CHECK_PRINT(gad_from_f64((const double[]){NAN, INFINITY, -INFINITY, 1e-5}, SHP(4), 1),
                "tensor([  nan,   inf,  -inf, 1e-05], dtype=f64)");
    /* rank 3: blank line between blocks */
    CHECK_PRINT(gad_reshape(gad_arange(0, 8, 1, GAD_F32), SHP(2, 2, 2), 3),
                "tensor([[[0., 1.],\n         [2., 3.]],\n\n        [[4., 5.],\n"
                "         [6., 7.]]], dtype=f32)");
    /* a view prints in its own order */
    CHECK_PRINT(gad_transpose(gad_from_f32((const float[]){1, 2, 3, 4}, SHP(2, 2), 2)),
                "tensor([[1., 3.],\n        [2., 4.]], dtype=f32)");
    /* integral floats print positionally, like NumPy's "10." and "100."
     * (not "1e+01") */
    CHECK_PRINT(gad_from_f32((const float[]){10, 20, 100}, SHP(3), 1),
                "tensor([ 10.,  20., 100.], dtype=f32)");
    CHECK_PRINT(gad_scalar_f64(1000), "tensor(1000., dtype=f64)");
    /* rows longer than 75 columns wrap, aligned under the first element */
    CHECK_PRINT(gad_arange(0, 30, 1, GAD_I64),
                "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16,\n"
                "        17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29], dtype=i64)");
    /* up to 1000 elements: everything; beyond: the first and last three */
    {
        char *buf = malloc(20000);
        gad_snprint(buf, 20000, gad_arange(0, 1000, 1, GAD_I64));
        CHECK(strstr(buf, "...") == NULL && strstr(buf, "999") != NULL &&
              strstr(buf, " 500,") != NULL);
        free(buf);
    }
    CHECK_PRINT(gad_arange(0, 1001, 1, GAD_I64),
                "tensor([   0,    1,    2, ...,  998,  999, 1000], dtype=i64)");
    CHECK_PRINT(gad_arange(0, 1001, 1, GAD_F32),
                "tensor([   0.,    1.,    2., ...,  998.,  999., 1000.], dtype=f32)");
    CHECK_PRINT(gad_reshape(gad_arange(0, 40 * 40, 1, GAD_I64), SHP(40, 40), 2),
                "tensor([[   0,    1,    2, ...,   37,   38,   39],\n"
                "        [  40,   41,   42, ...,   77,   78,   79],\n"
                "        [  80,   81,   82, ...,  117,  118,  119],\n"
                "        ...,\n"
                "        [1480, 1481, 1482, ..., 1517, 1518, 1519],\n"
                "        [1520, 1521, 1522, ..., 1557, 1558, 1559],\n"
                "        [1560, 1561, 1562, ..., 1597, 1598, 1599]], dtype=i64)");
    /* snprint truncates like snprintf and returns the full length */
    gad_tensor *t = gad_from_f32((const float[]){1, 2}, SHP(2), 1);
    char small[5] = "xxxx";
    CHECK(gad_snprint(small, sizeof small, t) == strlen("tensor([1., 2.], dtype=f32)"));
    CHECK(strcmp(small, "tens") == 0);
    CHECK(gad_snprint(NULL, 0, t) == strlen("tensor([1., 2.], dtype=f32)"));
    char one[1] = {'x'};
    gad_snprint(one, 1, t);
    CHECK(one[0] == 0);
    /* gad_fprint writes the same text and a newline */
    FILE *f = tmpfile();
    if (f) {
        gad_fprint(f, t);
        rewind(f);
        char line[64] = {0};
        CHECK(fgets(line, sizeof line, f) != NULL);
        CHECK(strcmp(line, "tensor([1., 2.], dtype=f32)\n") == 0);
        fclose(f);
    }
    CHECK_OK();
    gad_scope_end();
}

/* ------------------------------------------------------------------------ */
/* SPEC §7.10 g-core                                                          */
/* ------------------------------------------------------------------------ */

TEST(spec_7_10_core) {
    gad_scope_begin();
    /* broadcast [0,3] with [1,3] gives [0,3] */
    gad_tensor *s = gad_add(gad_zeros(SHP(0, 3), 2, GAD_F32), gad_ones(SHP(1, 3), 2, GAD_F32));
    CHECK(s != NULL);
    CHECK_SHAPE(s, 0, 3);
    CHECK_OK();
    /* [2,3] with [3,2] is an error */
    CHECK(gad_add(gad_zeros(SHP(2, 3), 2, GAD_F32), gad_zeros(SHP(3, 2), 2, GAD_F32)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "add");
    /* resolve_reshape([0,3],[0,-1]) and zeros [0,3] reshaped to [0,-1] */
    gad_tensor *r = gad_reshape(gad_zeros(SHP(0, 3), 2, GAD_F32), SHP(0, -1), 2);
    CHECK(r != NULL);
    CHECK_SHAPE(r, 0, 3);
    CHECK_OK();
    /* a rank-0 from_slice gives item 3.0 and rank 0 */
    float v = 3;
    gad_tensor *z = gad_from_f32(&v, NULL, 0);
    CHECK(gad_rank(z) == 0 && gad_item(z) == 3.0);
    /* g-cpu: add [[1],[2]] + [[10,20,30]] */
    gad_tensor *ad = gad_add(gad_from_f32((const float[]){1, 2}, SHP(2, 1), 2),
                             gad_from_f32((const float[]){10, 20, 30}, SHP(1, 3), 2));
    CHECK_SHAPE(ad, 2, 3);
    CHECK_VALUES(ad, 0, 11, 21, 31, 12, 22, 32);
    CHECK_OK();
    gad_scope_end();
}

/* ------------------------------------------------------------------------ */
/* Scopes and reference counts                                               */
/* ------------------------------------------------------------------------ */

TEST(scopes_basic) {
    gad_mem_stats base = stats();
    CHECK(gad_scope_depth() == 0);
    gad_scope_end(); /* no scope: harmless */
    gad_scope_end();
    CHECK(gad_scope_depth() == 0);
    gad_scope_begin();
    CHECK(gad_scope_depth() == 1);
    gad_tensor *a = gad_ones(SHP(3), 1, GAD_F32);
    gad_tensor *b = gad_add(a, a);
    gad_tensor *v = gad_reshape(b, SHP(1, 3), 2);
    CHECK_VALUES(v, 0, 2, 2, 2);
    gad_mem_stats in = stats();
    CHECK(in.live_tensors == base.live_tensors + 3);
    CHECK(in.live_storages == base.live_storages + 2);
    CHECK(in.live_bytes > base.live_bytes);
    gad_scope_end();
    CHECK(gad_scope_depth() == 0);
    CHECK_LIVE(base);
    CHECK(stats().live_bytes == base.live_bytes);
}

TEST(scopes_nested_keep) {
    gad_mem_stats base = stats();
    gad_scope_begin();
    gad_tensor *a = gad_full(SHP(2), 1, GAD_F64, 1.5);
    gad_tensor *kept_outer;
    gad_scope_begin();
    CHECK(gad_scope_depth() == 2);
    gad_tensor *b = gad_add(a, a);
    gad_tensor *c = gad_mul(b, b);
    CHECK(gad_keep(c) == c);
    gad_tensor *d = gad_add(c, c);
    (void)d;
    CHECK(stats().live_tensors == base.live_tensors + 4);
    gad_scope_end();
    /* b and d are gone, c moved to the outer scope */
    CHECK(gad_scope_depth() == 1);
    CHECK(stats().live_tensors == base.live_tensors + 2);
    CHECK_VALUES(c, 0, 9, 9);
    /* three levels: keep at the innermost moves one level only */
    gad_scope_begin();
    gad_scope_begin();
    gad_tensor *e = gad_keep(gad_add(c, a));
    gad_scope_end();
    CHECK(stats().live_tensors == base.live_tensors + 3);
    CHECK_VALUES(e, 0, 10.5, 10.5);
    gad_scope_end(); /* e was owned by this level, now freed */
    CHECK(stats().live_tensors == base.live_tensors + 2);
    /* keep at depth 1 hands the tensor to the caller */
    kept_outer = gad_keep(c);
    gad_scope_end();
    CHECK(gad_scope_depth() == 0);
    CHECK(stats().live_tensors == base.live_tensors + 1);
    CHECK_VALUES(kept_outer, 0, 9, 9);
    gad_release(kept_outer);
    CHECK_LIVE(base);
    /* keep with no scope open does nothing */
    gad_tensor *f = gad_zeros(SHP(1), 1, GAD_F32);
    CHECK(gad_keep(f) == f);
    gad_release(f);
    CHECK_LIVE(base);
    CHECK(gad_keep(NULL) == NULL);
    /* keeping the same tensor twice gives the caller two references */
    gad_scope_begin();
    gad_tensor *g = gad_zeros(SHP(1), 1, GAD_F32);
    gad_keep(g);
    gad_keep(g);
    gad_scope_end();
    CHECK(stats().live_tensors == base.live_tensors + 1);
    gad_release(g);
    CHECK(stats().live_tensors == base.live_tensors + 1);
    gad_release(g);
    CHECK_LIVE(base);
    CHECK_OK();
}

TEST(retain_release) {
    gad_mem_stats base = stats();
    gad_tensor *t = gad_arange(0, 3, 1, GAD_F32);
    CHECK(gad_retain(t) == t);
    gad_release(t);
    CHECK(stats().live_tensors == base.live_tensors + 1);
    CHECK_VALUES(t, 0, 0, 1, 2);
    gad_release(t);
    CHECK_LIVE(base);
    CHECK(gad_retain(NULL) == NULL);
    gad_release(NULL);
    /* a tensor retained inside a scope outlives it */
    gad_scope_begin();
    gad_tensor *u = gad_retain(gad_ones(SHP(2), 1, GAD_F64));
    gad_scope_end();
    CHECK_VALUES(u, 0, 1, 1);
    gad_release(u);
    CHECK_LIVE(base);
}

TEST(scopes_deep_expression) {
    gad_mem_stats base = stats();
    gad_scope_begin();
    gad_tensor *one = gad_ones(SHP(4), 1, GAD_F32);
    gad_tensor *x = gad_zeros(SHP(4), 1, GAD_F32);
    for (int i = 0; i < 1000; i++) x = gad_add(x, one);
    CHECK_VALUES(x, 0, 1000, 1000, 1000, 1000);
    CHECK(stats().live_tensors == base.live_tensors + 1002);
    /* more tensors than the first scope buffer holds */
    gad_tensor *y = x;
    for (int i = 0; i < 3000; i++) y = gad_reshape(gad_add(y, one), SHP(4), 1);
    CHECK_VALUES(y, 0, 4000, 4000, 4000, 4000);
    gad_scope_end();
    CHECK_LIVE(base);
    /* a deep nesting of scopes */
    for (int i = 0; i < 100; i++) {
        gad_scope_begin();
        gad_zeros(SHP(2), 1, GAD_F32);
    }
    CHECK(gad_scope_depth() == 100);
    for (int i = 0; i < 100; i++) gad_scope_end();
    CHECK(gad_scope_depth() == 0);
    CHECK_LIVE(base);
}

/* ------------------------------------------------------------------------ */
/* Allocator hooks                                                           */
/* ------------------------------------------------------------------------ */

typedef struct alloc_ctx {
    long n_alloc, n_free, n_failed;
    long limit;     /* successful allocations allowed; -1: unlimited */
    int fail_next;  /* fail the next allocation only */
    long long bytes;
    int bad_align, bad_size;
} alloc_ctx;

static void *ctx_alloc(void *vctx, size_t size, size_t align) {
    alloc_ctx *c = vctx;
    if (align == 0 || (align & (align - 1)) || align > 4096) c->bad_align++;
    if (c->fail_next || (c->limit >= 0 && c->n_alloc >= c->limit)) {
        c->fail_next = 0;
        c->n_failed++;
        return NULL;
    }
    size_t a = align < 16 ? 16 : align;
    void *p = NULL;
    if (posix_memalign(&p, a, a + size) != 0) return NULL;
    char *q = (char *)p + a;
    ((size_t *)q)[-1] = size;
    ((size_t *)q)[-2] = a;
    c->n_alloc++;
    c->bytes += (long long)size;
    return q;
}

static void ctx_free(void *vctx, void *ptr, size_t size) {
    alloc_ctx *c = vctx;
    if (!ptr) return;
    char *q = ptr;
    if (((size_t *)q)[-1] != size) c->bad_size++;
    size_t a = ((size_t *)q)[-2];
    c->n_free++;
    c->bytes -= (long long)((size_t *)q)[-1];
    free(q - a);
}

static void install(alloc_ctx *c, long limit) {
    memset(c, 0, sizeof *c);
    c->limit = limit;
    gad_cache_trim();
    gad_allocator al = {ctx_alloc, ctx_free, c};
    gad_set_allocator(&al);
}

/* With the caches off, a failed constructor frees its header at once: the
 * message must not read it afterwards (found by fuzz_ops under ASan;
 * tests/fuzz/corpus_ops/regress_from_null_cache_off). */
TEST(constructor_error_caches_off) {
    size_t old = gad_set_cache_limit(0);
    gad_clear_error();
    CHECK(gad_from_f32(NULL, SHP(2, 3), 2) == NULL);
    CHECK(gad_last_error() && strstr(gad_last_error()->text, "6 elements"));
    gad_clear_error();
    gad_set_cache_limit(old);
}

/* A second release of a tensor whose header still waits in the cache is
 * caught: an error, and nothing enters the caches twice (the next two
 * tensors made are distinct and usable). */
TEST(double_release_caught) {
    gad_clear_error();
    gad_tensor *t = gad_full(SHP(4), 1, GAD_F32, 1.0);
    gad_release(t);
    CHECK_OK();
    gad_release(t);
    CHECK(gad_last_error() && gad_last_error()->kind == GAD_ERR_DOMAIN &&
          strstr(gad_last_error()->text, "use of a released tensor"));
    gad_clear_error();
    gad_tensor *a = gad_full(SHP(4), 1, GAD_F32, 2.0);
    gad_tensor *b = gad_full(SHP(4), 1, GAD_F32, 3.0);
    CHECK(a && b && a != b);
    float va[4] = {0}, vb[4] = {0};
    CHECK(gad_read_f32(a, va, 4) == GAD_OK && gad_read_f32(b, vb, 4) == GAD_OK);
    CHECK(va[3] == 2.0f && vb[3] == 3.0f);
    gad_release(a);
    gad_release(b);
    CHECK_OK();
}

/* Headers, nodes and buffers of a released graph wait in the thread's
 * caches: building the same graph again allocates nothing (W1's chain, at a
 * length no count-capped pool would hold), the caches count them in
 * cached_bytes, respect the limit, and trimming gives everything back. */
TEST(caches_hold_a_graph) {
    gad_mem_stats base = stats();
    alloc_ctx c;
    install(&c, -1);
    enum { NOPS = 20000 };
    for (int round = 0; round < 3; round++) {
        long before = c.n_alloc;
        gad_scope_begin();
        gad_tensor *x = gad_requires_grad(gad_full(SHP(16), 1, GAD_F32, 0.5));
        gad_tensor *k = gad_full(SHP(16), 1, GAD_F32, 0.9), *v = x, *g = NULL;
        for (int i = 0; i < NOPS; i++)
            v = i % 3 == 0 ? gad_mul(v, k) : i % 3 == 1 ? gad_add(v, k) : gad_tanh(v);
        CHECK(gad_grad(gad_sum_all(v), &x, 1, &g) == GAD_OK && g != NULL);
        gad_scope_end();
        if (round > 0)
            CHECK_MSG(c.n_alloc == before, "round %d allocated %ld times", round,
                      c.n_alloc - before);
        CHECK(stats().cached_bytes > NOPS * 300); /* a header, node, buffer per op */
    }
    /* a lower limit trims at once and then caps what is kept */
    size_t old = gad_set_cache_limit(1 << 20);
    CHECK(stats().cached_bytes == 0);
    gad_scope_begin();
    gad_tensor *v = gad_requires_grad(gad_full(SHP(16), 1, GAD_F32, 0.5));
    for (int i = 0; i < NOPS; i++) v = gad_tanh(v);
    gad_scope_end();
    CHECK(stats().cached_bytes > 0 && stats().cached_bytes <= 1 << 20);
    gad_set_cache_limit(old);
    gad_cache_trim();
    CHECK(stats().cached_bytes == 0);
    gad_set_allocator(NULL); /* gives the scopes' own arrays back too */
    CHECK(c.n_alloc == c.n_free && c.bytes == 0 && c.bad_size == 0);
    CHECK_LIVE(base);
}

TEST(allocator_counting) {
    gad_mem_stats base = stats();
    alloc_ctx c;
    install(&c, -1);
    gad_tensor *a = gad_randn(SHP(100, 10), 2, 3);
    CHECK(c.n_alloc >= 2); /* at least a header and a storage */
    long after_one = c.n_alloc;
    gad_tensor *at_ = gad_transpose(a);
    gad_tensor *b = gad_matmul(a, at_);
    gad_tensor *s = gad_sum_all(b);
    CHECK(c.n_alloc > after_one);
    CHECK(s && gad_item(s) > 0);
    /* the printer's buffer goes through the hook too */
    long before_print = c.n_alloc;
    char buf[64];
    gad_snprint(buf, sizeof buf, a);
    CHECK(c.n_alloc > before_print);
    gad_rng *r = gad_rng_new(1);
    CHECK(r != NULL);
    gad_rng_free(r);
    gad_release(s);
    gad_release(b);
    gad_release(at_);
    gad_release(a);
    CHECK_LIVE(base);
    /* released memory stays cached until trimmed, then comes back */
    gad_cache_trim();
    CHECK(stats().cached_bytes == 0);
    /* scopes' own buffers are given back when the allocator changes */
    gad_scope_begin();
    gad_zeros(SHP(3), 1, GAD_F32);
    gad_scope_end();
    gad_set_allocator(NULL);
    CHECK_MSG(c.n_alloc == c.n_free, "%ld allocations, %ld frees", c.n_alloc, c.n_free);
    CHECK(c.bytes == 0);
    CHECK(c.bad_align == 0 && c.bad_size == 0);
    CHECK_LIVE(base);
    /* the default allocator works again */
    gad_scope_begin();
    CHECK_VALUES(gad_add(gad_ones(SHP(2), 1, GAD_F32), gad_ones(SHP(2), 1, GAD_F32)), 0, 2, 2);
    gad_scope_end();
    CHECK_OK();
}

static int op_in(const char *op, const char *const *names) {
    for (; *names; names++)
        if (strcmp(op, *names) == 0) return 1;
    return 0;
}

static int g_first_checked; /* the first error of a failing run was checked */
static char g_first_text[320];

/* Run one step of the failing-allocator sequence: a NULL result must come
 * with a memory error named after one of the allowed ops (or, when an error
 * was already pending, with that first error untouched). */
#define STEP(var, expr, ...)                                                   \
    do {                                                                       \
        int pend_ = gad_last_error() != NULL;                                  \
        (var) = (expr);                                                        \
        const gad_error *e_ = gad_last_error();                                \
        if (!(var)) {                                                          \
            CHECK_MSG(e_ != NULL, "NULL without an error: %s", #expr);         \
            if (e_ && !pend_) {                                                \
                static const char *const ok_[] = {__VA_ARGS__, NULL};          \
                CHECK_MSG(e_->kind == GAD_ERR_MEMORY && op_in(e_->op, ok_),    \
                          "%s: %s", #expr, e_->text);                          \
                CHECK(text_ok(e_));                                            \
                snprintf(g_first_text, sizeof g_first_text, "%s", e_->text);   \
                g_first_checked = 1;                                           \
            }                                                                  \
        }                                                                      \
        if (pend_ && e_)                                                       \
            CHECK_MSG(strcmp(e_->text, g_first_text) == 0,                     \
                      "first error overwritten: %s", e_->text);                \
    } while (0)

#define NOPS 24

/* A sequence of constructors and ops, all caller-owned, then released.
 * Returns the number of steps that produced a tensor. */
static int failing_sequence(void) {
    gad_tensor *t[NOPS] = {0};
    int k = 0;
    g_first_checked = 0;
    g_first_text[0] = 0;
    const float src[6] = {1, 2, 3, 4, 5, 6};
    STEP(t[0], gad_from_f32(src, SHP(2, 3), 2), "from_f32");
    STEP(t[1], gad_ones(SHP(3), 1, GAD_F32), "ones");
    STEP(t[2], gad_add(t[0], t[1]), "add");
    STEP(t[3], gad_transpose(t[0]), "transpose", "swapaxes", "permute");
    STEP(t[4], gad_contiguous(t[3]), "contiguous");
    STEP(t[5], gad_reshape(t[3], SHP(6), 1), "reshape");
    STEP(t[6], gad_cast(t[2], GAD_F64), "cast");
    STEP(t[7], gad_matmul(t[0], t[3]), "matmul");
    STEP(t[8], gad_sum_all(t[2]), "sum_all");
    STEP(t[9], gad_randn(SHP(5), 1, 1), "randn");
    STEP(t[10], gad_arange(0, 5, 1, GAD_I64), "arange");
    STEP(t[11], gad_eye(3, GAD_F64), "eye");
    STEP(t[12], gad_linspace(0, 1, 4, GAD_F32), "linspace");
    STEP(t[13], gad_zeros_like(t[0]), "zeros_like");
    STEP(t[14], gad_reshape(t[0], SHP(3, 2), 2), "reshape");
    STEP(t[15], gad_slice(t[0], &GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -1), 1), "slice");
    STEP(t[16], gad_exp(t[15]), "exp");
    STEP(t[17], gad_clone(t[15]), "clone");
    STEP(t[18], gad_variance(t[0], (const int[]){1}, 1, 0), "variance", "mean",
         "sub", "square", "sum", "scope", "scope_begin", "keep");
    STEP(t[19], gad_broadcast_to(t[1], SHP(2, 3), 2), "broadcast_to");
    STEP(t[20], gad_unsqueeze(t[1], 0), "unsqueeze");
    STEP(t[21], gad_select(t[0], 0, 1), "select");
    /* copy-on-write of a shared storage */
    if (t[14]) {
        int pend = gad_last_error() != NULL;
        float *w = gad_data_mut(t[14]);
        if (!w) {
            const gad_error *e = gad_last_error();
            CHECK(e != NULL);
            if (e && !pend) {
                CHECK_MSG(e->kind == GAD_ERR_MEMORY && strcmp(e->op, "data_mut") == 0,
                          "%s", e->text);
                snprintf(g_first_text, sizeof g_first_text, "%s", e->text);
            }
        } else {
            w[0] = 100;
            double v0[6];
            if (t[0]) {
                gad_read_f64(t[0], v0, 6);
                CHECK(v0[0] == 1); /* the source is untouched */
            }
        }
    }
    /* the printer either works or says it ran out of memory */
    if (t[0]) {
        char buf[128];
        gad_snprint(buf, sizeof buf, t[0]);
        CHECK_MSG(strcmp(buf, "tensor([[1., 2., 3.],\n        [4., 5., 6.]], dtype=f32)") == 0 ||
                      strcmp(buf, "tensor(<out of memory>)") == 0,
                  "%s", buf);
    }
    /* a generator */
    {
        int pend = gad_last_error() != NULL;
        gad_rng *r = gad_rng_new(5);
        if (!r && !pend) {
            const gad_error *e = gad_last_error();
            CHECK(e && e->kind == GAD_ERR_MEMORY && strcmp(e->op, "rng_new") == 0);
            if (e) snprintf(g_first_text, sizeof g_first_text, "%s", e->text);
        }
        if (r) {
            STEP(t[22], gad_rng_uniform_tensor(r, SHP(3), 1, GAD_F32, 0, 1), "rng_uniform");
            gad_rng_free(r);
        }
    }
    /* values of what did get made */
    if (t[2]) CHECK_VALUES(t[2], 0, 2, 3, 4, 5, 6, 7);
    if (t[5]) CHECK_VALUES(t[5], 0, 1, 4, 2, 5, 3, 6);
    if (t[7]) CHECK_VALUES(t[7], 1e-4, 14, 32, 32, 77);
    if (t[8]) CHECK_NEAR(gad_item(t[8]), 27, 1e-5);
    if (t[18]) CHECK_VALUES(t[18], 1e-5, 2.0 / 3, 2.0 / 3);
    /* a scope inside the sequence */
    gad_scope_begin();
    gad_tensor *x, *y;
    STEP(x, gad_full(SHP(2), 1, GAD_F32, 2), "full", "scope", "scope_begin");
    STEP(y, gad_mul(x, x), "mul", "scope");
    if (y) STEP(t[23], gad_keep(y), "keep");
    gad_scope_end();
    if (t[23]) CHECK_VALUES(t[23], 0, 4, 4);
    for (int i = 0; i < NOPS; i++) {
        if (t[i]) k++;
        gad_release(t[i]);
    }
    return k;
}

TEST(allocator_failing) {
    gad_mem_stats base = stats();
    alloc_ctx c;
    /* how many allocations the whole sequence takes */
    install(&c, -1);
    int made = failing_sequence();
    CHECK_OK();
    gad_set_allocator(NULL);
    long total = c.n_alloc;
    CHECK(made == NOPS);
    CHECK(c.n_alloc == c.n_free);
    CHECK_LIVE(base);
    CHECK(total > 20);
    for (long k = 0; k <= total + 2; k++) {
        install(&c, k);
        gad_clear_error();
        int got = failing_sequence();
        if (k == 0) CHECK_MSG(got == 0, "k=0: %d tensors", got);
        if (k >= total) CHECK_MSG(got == NOPS, "k=%ld: %d tensors", k, got);
        else CHECK_MSG(gad_last_error() != NULL, "k=%ld: no error", k);
        gad_clear_error();
        gad_set_allocator(NULL);
        CHECK_MSG(c.n_alloc == c.n_free, "k=%ld: %ld allocs, %ld frees", k,
                  c.n_alloc, c.n_free);
        CHECK(c.bad_align == 0 && c.bad_size == 0);
        CHECK_LIVE(base);
    }
    /* everything works after restoring the default */
    gad_scope_begin();
    gad_tensor *a = gad_arange(0, 4, 1, GAD_F32);
    CHECK_VALUES(gad_mul(a, a), 0, 0, 1, 4, 9);
    gad_scope_end();
    CHECK_LIVE(base);
    CHECK_OK();
}

/* A failed gad_scope_begin must not make the matching gad_scope_end close
 * the enclosing scope (the tensors of that scope would be freed while the
 * caller still uses them). */
TEST(allocator_scope_begin_failure) {
    gad_mem_stats base = stats();
    alloc_ctx c;
    install(&c, -1);
    for (int i = 0; i < 16; i++) gad_scope_begin(); /* fills the first mark array */
    gad_tensor *a = gad_full(SHP(2), 1, GAD_F32, 5);
    c.fail_next = 1;
    gad_scope_begin(); /* the 17th needs a larger mark array: fails */
    const gad_error *e = gad_last_error();
    CHECK(e && e->kind == GAD_ERR_MEMORY);
    gad_clear_error();
    gad_tensor *b = gad_add(a, a);
    CHECK_VALUES(b, 0, 10, 10);
    gad_scope_end(); /* the caller's close of the 17th scope */
    CHECK_MSG(gad_scope_depth() == 16, "depth %d after a failed begin and its end",
              gad_scope_depth());
    /* a belongs to scope 16, which is still open */
    CHECK_MSG(stats().live_tensors >= base.live_tensors + 1,
              "a was freed while its scope is open");
    while (gad_scope_depth() > 0) gad_scope_end();
    gad_set_allocator(NULL);
    CHECK(c.n_alloc == c.n_free);
    CHECK_LIVE(base);
    gad_clear_error();
}

/* gad_keep that cannot record its tensor must not leak it. */
TEST(allocator_keep_failure) {
    gad_mem_stats base = stats();
    alloc_ctx c;
    install(&c, -1);
    gad_scope_begin();
    /* fill the scope's first buffer exactly (1024 entries) */
    gad_tensor *last = NULL;
    for (int i = 0; i < 1024; i++) last = gad_scalar_f32((float)i);
    c.fail_next = 1;
    gad_tensor *k = gad_keep(last);
    const gad_error *e = gad_last_error();
    if (k == NULL) CHECK(e && e->kind == GAD_ERR_MEMORY && strcmp(e->op, "keep") == 0);
    gad_clear_error();
    gad_scope_end();
    if (k) gad_release(k);
    long long leaked = stats().live_tensors - base.live_tensors;
    CHECK_MSG(leaked == 0, "%lld tensors leaked by a failed gad_keep", leaked);
    /* repair the leak (while its allocator is installed) so that the
     * remaining tests start clean */
    if (leaked > 0 && !k) gad_release(last);
    gad_set_allocator(NULL);
    CHECK_LIVE(base);
    CHECK_MSG(c.n_alloc == c.n_free, "%ld allocations, %ld frees", c.n_alloc, c.n_free);
    gad_clear_error();
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

TEST(error_names) {
    const char *names[] = {"ok",     "shape",       "dtype",       "index",
                           "domain", "not-unique",  "unsupported", "memory",
                           "io",     "format",      "device",      "comm"};
    const gad_status codes[] = {GAD_OK,           GAD_ERR_SHAPE,      GAD_ERR_DTYPE,
                                GAD_ERR_INDEX,    GAD_ERR_DOMAIN,     GAD_ERR_NOT_UNIQUE,
                                GAD_ERR_UNSUPPORTED, GAD_ERR_MEMORY,  GAD_ERR_IO,
                                GAD_ERR_FORMAT,   GAD_ERR_DEVICE,     GAD_ERR_COMM};
    for (int i = 0; i < 12; i++) CHECK(strcmp(gad_status_str(codes[i]), names[i]) == 0);
    CHECK(GAD_STATUS_COUNT_ == 12);
    CHECK(strcmp(gad_status_str((gad_status)12), "unknown") == 0);
    CHECK(strcmp(gad_status_str((gad_status)-1), "unknown") == 0);
    CHECK(strcmp(gad_dtype_name(GAD_F32), "f32") == 0);
    CHECK(strcmp(gad_dtype_name(GAD_F64), "f64") == 0);
    CHECK(strcmp(gad_dtype_name(GAD_I64), "i64") == 0);
    CHECK(strcmp(gad_dtype_name((gad_dtype_t)8), "?") == 0);
    CHECK(gad_dtype_size(GAD_F32) == 4 && gad_dtype_size(GAD_F64) == 8 &&
          gad_dtype_size(GAD_I64) == 8 && gad_dtype_size((gad_dtype_t)9) == 0);
}

TEST(error_record) {
    gad_scope_begin();
    gad_clear_error();
    CHECK(gad_last_error() == NULL);
    gad_tensor *a = gad_zeros(SHP(2, 3), 2, GAD_F32);
    gad_tensor *b = gad_zeros(SHP(3, 2), 2, GAD_F32);
    CHECK(gad_add(a, b) == NULL);
    const gad_error *e = gad_last_error();
    CHECK(e != NULL);
    if (e) {
        CHECK(e->kind == GAD_ERR_SHAPE);
        CHECK(strcmp(e->op, "add") == 0);
        CHECK_MSG(strstr(e->message, "[2,3]") && strstr(e->message, "[3,2]"), "%s",
                  e->message);
        CHECK(text_ok(e));
        CHECK(strncmp(e->text, "shape error in add: ", 20) == 0);
    }
    /* the first error is kept: a second failure does not overwrite it */
    CHECK(gad_reshape(a, SHP(7), 1) == NULL);
    CHECK(gad_arange(0, 1, 0, GAD_F32) == NULL);
    CHECK(gad_last_error() == e && e->kind == GAD_ERR_SHAPE && strcmp(e->op, "add") == 0);
    /* NULL inputs propagate NULL and keep it */
    CHECK(gad_mul(NULL, a) == NULL);
    CHECK(gad_neg(NULL) == NULL);
    CHECK(gad_reshape(NULL, SHP(6), 1) == NULL);
    CHECK(gad_sum_all(NULL) == NULL);
    CHECK(gad_matmul(a, NULL) == NULL);
    CHECK(gad_cast(NULL, GAD_F64) == NULL);
    CHECK(gad_transpose(NULL) == NULL);
    CHECK(isnan(gad_item(NULL)));
    CHECK_ERR(GAD_ERR_SHAPE, "add");
    CHECK(gad_last_error() == NULL);
    /* an expression checked once at the end */
    gad_tensor *r = gad_exp(gad_mul(gad_add(a, b), a));
    CHECK(r == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "add");
    /* a NULL argument with no pending error is a domain error */
    CHECK(gad_add(NULL, a) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "add");
    CHECK(gad_exp(NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "exp");
    CHECK(gad_reshape(NULL, SHP(1), 1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "reshape");
    CHECK(gad_clone(NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "clone");
    /* dtype and other messages */
    CHECK(gad_add(a, gad_zeros(SHP(2, 3), 2, GAD_F64)) == NULL);
    e = gad_last_error();
    CHECK(e && e->kind == GAD_ERR_DTYPE && strstr(e->message, "f32") &&
          strstr(e->message, "f64") && text_ok(e));
    CHECK_ERR(GAD_ERR_DTYPE, "add");
    CHECK(gad_exp(gad_zeros(SHP(2), 1, GAD_I64)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "exp");
    CHECK(gad_matmul(gad_zeros(SHP(2, 3), 2, GAD_F32), gad_zeros(SHP(2, 3), 2, GAD_F32)) == NULL);
    e = gad_last_error();
    CHECK(e && e->kind == GAD_ERR_SHAPE && strstr(e->message, "[2,3]") && text_ok(e));
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    CHECK(gad_reshape(a, SHP(4, 2), 2) == NULL);
    e = gad_last_error();
    CHECK(e && strstr(e->message, "[2,3]") && strstr(e->message, "[4,2]"));
    CHECK_ERR(GAD_ERR_SHAPE, "reshape");
    /* accessors on NULL record nothing */
    CHECK(gad_rank(NULL) == -1 && (int)gad_dtype(NULL) == -1 && gad_numel(NULL) == 0 &&
          gad_shape(NULL) == NULL && gad_strides(NULL) == NULL &&
          gad_is_contiguous(NULL) == 0);
    CHECK_OK();
    gad_scope_end();
}

TEST(shape_format) {
    char buf[GAD_SHAPE_FORMAT_CAP];
    /* the forms: dims, rank 0, an empty dim, negative dims */
    CHECK(gad_shape_format(buf, sizeof buf, SHP(2, 3), 2) == buf);
    CHECK(strcmp(buf, "[2,3]") == 0);
    CHECK(strcmp(gad_shape_format(buf, sizeof buf, NULL, 0), "[]") == 0);
    CHECK(strcmp(gad_shape_format(buf, sizeof buf, SHP(7), 0), "[]") == 0);
    CHECK(strcmp(gad_shape_format(buf, sizeof buf, SHP(4, 0, 1), 3), "[4,0,1]") == 0);
    CHECK(strcmp(gad_shape_format(buf, sizeof buf, SHP(-1, 5), 2), "[-1,5]") == 0);
    /* a rank outside 0..GAD_MAX_RANK, or a NULL shape, shows the rank only */
    CHECK(strcmp(gad_shape_format(buf, sizeof buf, SHP(1, 1, 1, 1, 1, 1, 1, 1, 1), 9),
                 "[rank 9]") == 0);
    CHECK(strcmp(gad_shape_format(buf, sizeof buf, SHP(1), -1), "[rank -1]") == 0);
    CHECK(strcmp(gad_shape_format(buf, sizeof buf, NULL, 2), "[rank 2]") == 0);
    /* the longest text of all fills GAD_SHAPE_FORMAT_CAP bytes or fewer */
    int64_t most[GAD_MAX_RANK];
    for (int i = 0; i < GAD_MAX_RANK; i++) most[i] = INT64_MIN;
    char want[400] = "[";
    for (int i = 0; i < GAD_MAX_RANK; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", i ? "," : "",
                 (long long)INT64_MIN);
    strcat(want, "]");
    CHECK(strlen(want) + 1 <= GAD_SHAPE_FORMAT_CAP);
    CHECK(strcmp(gad_shape_format(buf, sizeof buf, most, GAD_MAX_RANK), want) == 0);
    CHECK(strcmp(gad_shape_format(buf, sizeof buf, NULL, INT_MIN), "[rank -2147483648]") == 0);
    /* cut to cap - 1 bytes, always NUL-terminated, nothing written past cap */
    for (size_t cap = 1; cap <= 8; cap++) {
        char small[10];
        memset(small, 'x', sizeof small);
        CHECK(gad_shape_format(small, cap, SHP(12, 345), 2) == small);
        CHECK_MSG(strlen(small) == cap - 1 && strncmp(small, "[12,345]", cap - 1) == 0,
                  "cap %zu: \"%s\"", cap, small);
        for (size_t k = cap; k < sizeof small; k++) CHECK(small[k] == 'x');
    }
    char nine[9];
    CHECK(strcmp(gad_shape_format(nine, sizeof nine, SHP(12, 345), 2), "[12,345]") == 0);
    char cut[6]; /* a canary past the cut: bytes beyond cap stay as they were */
    memset(cut, 'x', sizeof cut);
    CHECK(strcmp(gad_shape_format(cut, 4, NULL, 9), "[ra") == 0 && cut[4] == 'x');
    /* a NULL buf or cap 0 writes nothing */
    CHECK(gad_shape_format(NULL, 0, SHP(2, 3), 2) == NULL);
    CHECK(gad_shape_format(NULL, 16, SHP(2, 3), 2) == NULL);
    char none[2] = {'x', 'y'};
    CHECK(gad_shape_format(none, 0, SHP(2, 3), 2) == none && none[0] == 'x' && none[1] == 'y');
    /* error messages show shapes the same way */
    gad_scope_begin();
    CHECK(gad_reshape(gad_zeros(SHP(2, 3), 2, GAD_F32), SHP(4, 2), 2) == NULL);
    const gad_error *e = gad_last_error();
    CHECK(e && strstr(e->message, gad_shape_format(buf, sizeof buf, SHP(2, 3), 2)) &&
          strstr(e->message, gad_shape_format(buf, sizeof buf, SHP(4, 2), 2)));
    gad_clear_error();
    gad_scope_end();
    CHECK_OK();
}

/* ------------------------------------------------------------------------ */
/* Threads: per-thread errors and scopes, shared tensors (header rule 5)     */
/* ------------------------------------------------------------------------ */

typedef struct thr_arg {
    gad_tensor *shared;
    int ok, err_ok;
} thr_arg;

static void *thr_fn(void *p) {
    thr_arg *a = p;
    a->ok = gad_last_error() == NULL && gad_scope_depth() == 0;
    gad_scope_begin();
    for (int i = 0; i < 20000; i++) {
        gad_retain(a->shared);
        gad_release(a->shared);
    }
    double v[4] = {0};
    gad_read_f64(a->shared, v, 4);
    if (v[3] != 3) a->ok = 0;
    gad_tensor *r = gad_reshape(a->shared, SHP(2, 2), 2);
    gad_tensor *x = gad_add(r, gad_transpose(r)); /* [[0,3],[3,6]] */
    if (gad_read_f64(x, v, 4) != GAD_OK || v[1] != 3 || v[2] != 3) a->ok = 0;
    if (gad_reshape(x, SHP(5), 1) != NULL) a->ok = 0;
    const gad_error *e = gad_last_error();
    a->err_ok = e && e->kind == GAD_ERR_SHAPE && strcmp(e->op, "reshape") == 0;
    gad_scope_end();
    gad_clear_error();
    return NULL;
}

TEST(threads) {
    gad_mem_stats base = stats();
    gad_tensor *shared = gad_arange(0, 4, 1, GAD_F64); /* caller-owned */
    /* a pending error on this thread is invisible to the others */
    CHECK(isnan(gad_item(shared)));
    gad_scope_begin();
    thr_arg args[4];
    pthread_t th[4];
    int started = 0;
    for (int i = 0; i < 4; i++) {
        args[i] = (thr_arg){shared, 0, 0};
        if (pthread_create(&th[i], NULL, thr_fn, &args[i]) == 0) started++;
        else break;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    CHECK(started == 4);
    for (int i = 0; i < started; i++) CHECK_MSG(args[i].ok && args[i].err_ok, "thread %d: %d %d", i, args[i].ok, args[i].err_ok);
    CHECK(gad_scope_depth() == 1);
    gad_scope_end();
    /* this thread's first error is still its own */
    CHECK_ERR(GAD_ERR_SHAPE, "item");
    CHECK_VALUES(shared, 0, 0, 1, 2, 3);
    gad_release(shared);
    CHECK_LIVE(base);
}

/* ------------------------------------------------------------------------ */
/* Run-time settings                                                         */
/* ------------------------------------------------------------------------ */

TEST(config) {
    int def = gad_num_threads();
    CHECK(def >= 1);
    gad_set_num_threads(2);
    int two = gad_num_threads();
    CHECK(two == 2 || (two == 1 && def == 1));
    gad_set_num_threads(1);
    CHECK(gad_num_threads() == 1);
    /* results do not depend on the thread count */
    gad_scope_begin();
    gad_tensor *x = gad_reshape(gad_arange(0, 200000, 1, GAD_F64), SHP(400, 500), 2);
    double s1 = gad_item(gad_sum_all(gad_contiguous(gad_transpose(x))));
    gad_set_num_threads(3);
    double s3 = gad_item(gad_sum_all(gad_contiguous(gad_transpose(x))));
    CHECK(s1 == s3 && s1 == 199999.0 * 200000.0 / 2);
    gad_scope_end();
    gad_set_num_threads(0); /* back to the default */
    CHECK(gad_num_threads() == def);
    gad_set_num_threads(-5);
    CHECK(gad_num_threads() == def);

    int avail = gad_blas_available();
#ifdef GAD_HAVE_CBLAS
    CHECK(avail == 1);
#endif
    int prev = gad_set_blas(0);
    if (avail) {
        CHECK(prev == 1);
        CHECK(gad_set_blas(1) == 0);
        CHECK(gad_set_blas(1) == 1);
    } else {
        CHECK(prev == 0);
        CHECK(gad_set_blas(1) == 0);
    }
    CHECK(strcmp(gad_version(), "0.1.0") == 0);
    CHECK(strcmp(gad_version(), GAD_VERSION_STRING) == 0);
    CHECK(GAD_VERSION_MAJOR == 0 && GAD_VERSION_MINOR == 1 && GAD_VERSION_PATCH == 0);
    CHECK(GAD_MAX_RANK == 8);
    size_t old = gad_set_cache_limit(1 << 20);
    CHECK(old == (size_t)1 << 30);
    CHECK(gad_set_cache_limit(old) == 1 << 20);
}

int main(void) {
    gad_mem_stats start = stats();
    RUN(from_data_copies);
    RUN(rank0_from);
    RUN(zeros_ones_full);
    RUN(like_constructors);
    RUN(arange_values);
    RUN(linspace_values);
    RUN(eye_all_dtypes);
    RUN(randn_reference);
    RUN(rng_streams);
    RUN(rng_distributions);
    RUN(rng_tensors);
    RUN(cast_reference);
    RUN(bool_dtype);
    RUN(item_and_reads);
    RUN(data_and_cow);
    RUN(unique_views_lifetime);
    RUN(contiguous_and_clone);
    RUN(printer);
    RUN(spec_7_10_core);
    RUN(scopes_basic);
    RUN(scopes_nested_keep);
    RUN(retain_release);
    RUN(scopes_deep_expression);
    RUN(constructor_error_caches_off);
    RUN(double_release_caught);
    RUN(caches_hold_a_graph);
    RUN(allocator_counting);
    RUN(allocator_failing);
    RUN(allocator_scope_begin_failure);
    RUN(allocator_keep_failure);
    RUN(error_names);
    RUN(error_record);
    RUN(shape_format);
    RUN(threads);
    RUN(config);
    test_current_ = "main";
    CHECK(gad_scope_depth() == 0);
    CHECK_LIVE(start);
    return test_summary();
}
