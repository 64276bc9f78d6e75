/* test_optim.c: SGD, AdamW, gradient clipping and the learning-rate
 * schedule (SPEC §5, D7): reference values, hand-computed double
 * references, in-place updates with copy-on-write, state round trips,
 * every error case, leaks, and a small model that trains. */
#include "test.h"

#include <stdint.h>

#define PI 3.14159265358979323846

/* ---------------------------------------------------------------- helpers */

static int64_t live_tensors(void) {
    gad_mem_stats s;
    gad_mem_stats_get(&s);
    return s.live_tensors;
}

/* Every test checks that it leaves no tensor alive. */
#define LEAK_BEGIN() const int64_t live0_ = live_tensors()
#define LEAK_END() CHECK_MSG(live_tensors() == live0_, "live tensors %lld, was %lld", \
                             (long long)live_tensors(), (long long)live0_)

/* A 1-D f32 or f64 leaf (owned by the caller: no scope is open). */
static gad_tensor *leaf32(const float *v, int64_t n) {
    return gad_requires_grad(gad_from_f32(v, &n, 1));
}
static gad_tensor *leaf64(const double *v, int64_t n) {
    return gad_requires_grad(gad_from_f64(v, &n, 1));
}

static void read32(gad_tensor *t, float *out, size_t n) {
    CHECK(gad_read_f32(t, out, n) == GAD_OK);
}
static void read64(gad_tensor *t, double *out, size_t n) {
    CHECK(gad_read_f64(t, out, n) == GAD_OK);
}

/* The pending error's message contains s. */
static int msg_has(const char *s) {
    const gad_error *e = gad_last_error();
    return e && strstr(e->message, s) != NULL;
}

/* -------------------------------------------------- SPEC §5 reference values */

TEST(sgd_reference) {
    LEAK_BEGIN();
    const float pv[2] = {1, -2}, gv[2] = {0.5f, 0.5f};
    gad_tensor *p = leaf32(pv, 2);
    gad_optim *opt = gad_sgd_new(&p, 1, &(gad_sgd_opts){.lr = 0.1});
    CHECK(opt != NULL);
    int64_t two = 2;
    gad_tensor *g = gad_from_f32(gv, &two, 1);
    CHECK(gad_optim_step(opt, &g) == GAD_OK);
    float got[2];
    read32(p, got, 2);
    CHECK(got[0] == 0.95f && got[1] == -2.05f);
    CHECK_VALUES(p, 1e-7, 0.95, -2.05);
    CHECK(gad_optim_steps(opt) == 1);
    CHECK(gad_optim_lr(opt) == 0.1);
    CHECK_OK();
    gad_release(g);
    gad_optim_free(opt);
    gad_release(p);
    LEAK_END();
}

TEST(adamw_reference) {
    LEAK_BEGIN();
    const float pv[2] = {1, -2}, gv[2] = {0.5f, 0.5f};
    gad_tensor *p = leaf32(pv, 2);
    gad_adamw_opts o = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                        .weight_decay = 0.01};
    gad_optim *opt = gad_adamw_new(&p, 1, &o);
    CHECK(opt != NULL);
    int64_t two = 2;
    gad_tensor *g = gad_from_f32(gv, &two, 1);
    CHECK(gad_optim_step(opt, &g) == GAD_OK);
    CHECK_VALUES(p, 1e-7, 0.899, -2.098);
    float got[2];
    read32(p, got, 2);
    CHECK(got[0] == 0.899f && got[1] == -2.098f);
    CHECK(gad_optim_step(opt, &g) == GAD_OK);
    CHECK_VALUES(p, 1e-7, 0.79810095, -2.1959019);
    read32(p, got, 2);
    CHECK(got[0] == 0.79810095f && got[1] == -2.1959019f);
    CHECK(gad_optim_steps(opt) == 2);
    CHECK_OK();
    gad_release(g);
    gad_optim_free(opt);
    gad_release(p);
    LEAK_END();
}

/* ----------------------------------------- SGD against a double reference */

/* Reference SGD in double: PyTorch's update with dampening 0. */
static void sgd_ref(double *p, double *buf, int *have, const double *g, int n,
                    double lr, double mu, int nesterov, double wd) {
    for (int i = 0; i < n; i++) {
        double d = g[i] + wd * p[i];
        if (mu != 0) {
            buf[i] = *have ? mu * buf[i] + d : d;
            d = nesterov ? d + mu * buf[i] : buf[i];
        }
        p[i] -= lr * d;
    }
    *have = 1;
}

static void sgd_case(double lr, double mu, int nesterov, double wd) {
    LEAK_BEGIN();
    enum { N = 5, STEPS = 6 };
    double p0[N] = {0.3, -1.2, 2.5, 0.0, -0.7};
    double ref[N], buf[N];
    int have = 0;
    memcpy(ref, p0, sizeof ref);
    gad_tensor *p = leaf64(p0, N);
    float p0f[N];
    for (int i = 0; i < N; i++) p0f[i] = (float)p0[i];
    gad_tensor *q = leaf32(p0f, N); /* the same run in f32 */
    gad_tensor *params[2] = {p, q};
    gad_sgd_opts o = {.lr = lr, .momentum = mu, .nesterov = nesterov,
                      .weight_decay = wd};
    gad_optim *opt = gad_sgd_new(params, 2, &o);
    CHECK(opt != NULL);
    for (int s = 0; s < STEPS; s++) {
        double g[N];
        float gf[N];
        for (int i = 0; i < N; i++) {
            g[i] = sin(1.0 + s * 0.7 + i) * (i + 1) * 0.5;
            gf[i] = (float)g[i];
        }
        gad_scope_begin();
        int64_t n = N;
        gad_tensor *grads[2] = {gad_from_f64(g, &n, 1), gad_from_f32(gf, &n, 1)};
        CHECK(gad_optim_step(opt, grads) == GAD_OK);
        gad_scope_end();
        sgd_ref(ref, buf, &have, g, N, lr, mu, nesterov, wd);
    }
    double got[N], gotf[N];
    read64(p, got, N);
    read64(q, gotf, N);
    for (int i = 0; i < N; i++) {
        CHECK_NEAR(got[i], ref[i], 1e-13);
        CHECK_NEAR(gotf[i], ref[i], 1e-5);
    }
    CHECK(gad_optim_steps(opt) == STEPS);
    CHECK_OK();
    gad_optim_free(opt);
    gad_release(p);
    gad_release(q);
    LEAK_END();
}

TEST(sgd_plain_and_decay) {
    sgd_case(0.05, 0, 0, 0);
    sgd_case(0.05, 0, 0, 0.1);
}

TEST(sgd_momentum) {
    sgd_case(0.05, 0.9, 0, 0);
    sgd_case(0.02, 0.5, 0, 0.01);
}

TEST(sgd_nesterov) {
    sgd_case(0.05, 0.9, 1, 0);
    sgd_case(0.03, 0.8, 1, 0.05);
}

TEST(sgd_default_lr) {
    LEAK_BEGIN();
    const double pv[1] = {1};
    gad_tensor *p = leaf64(pv, 1);
    gad_optim *opt = gad_sgd_new(&p, 1, NULL);
    CHECK(gad_optim_lr(opt) == 0.01);
    gad_tensor *g = gad_full_like(p, 2.0);
    CHECK(gad_optim_step(opt, &g) == GAD_OK);
    CHECK_VALUES(p, 0, 1 - 0.01 * 2);
    gad_release(g);
    gad_optim_free(opt);
    gad_release(p);
    CHECK_OK();
    LEAK_END();
}

/* ---------------------------------------- AdamW against a double reference */

static void adamw_ref(double *p, double *m, double *v, const double *g, int n,
                      int64_t t, double lr, double b1, double b2, double eps,
                      double wd) {
    double bc1 = 1 - pow(b1, (double)t), bc2 = 1 - pow(b2, (double)t);
    for (int i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * (g[i] * g[i]);
        double mh = m[i] / bc1, vh = v[i] / bc2;
        p[i] = p[i] * (1 - lr * wd) - lr * (mh / (sqrt(vh) + eps));
    }
}

static void adamw_case(const gad_adamw_opts *o, double lr, double b1,
                       double b2, double eps, double wd) {
    LEAK_BEGIN();
    enum { N = 4, STEPS = 5 };
    double p0[N] = {0.5, -1.5, 3.0, 0.01};
    double ref[N], m[N] = {0}, v[N] = {0};
    memcpy(ref, p0, sizeof ref);
    gad_tensor *p = leaf64(p0, N);
    float p0f[N];
    for (int i = 0; i < N; i++) p0f[i] = (float)p0[i];
    gad_tensor *q = leaf32(p0f, N);
    gad_tensor *params[2] = {p, q};
    gad_optim *opt = gad_adamw_new(params, 2, o);
    CHECK(opt != NULL);
    CHECK(gad_optim_lr(opt) == lr);
    for (int s = 1; s <= STEPS; s++) {
        double g[N];
        float gf[N];
        for (int i = 0; i < N; i++) {
            g[i] = cos(0.3 * s + i) * (i + 1);
            gf[i] = (float)g[i];
        }
        gad_scope_begin();
        int64_t n = N;
        gad_tensor *grads[2] = {gad_from_f64(g, &n, 1), gad_from_f32(gf, &n, 1)};
        CHECK(gad_optim_step(opt, grads) == GAD_OK);
        gad_scope_end();
        adamw_ref(ref, m, v, g, N, s, lr, b1, b2, eps, wd);
    }
    double got[N], gotf[N];
    read64(p, got, N);
    read64(q, gotf, N);
    for (int i = 0; i < N; i++) {
        CHECK_NEAR(got[i], ref[i], 1e-14);
        CHECK_NEAR(gotf[i], ref[i], 2e-6);
    }
    CHECK_OK();
    gad_optim_free(opt);
    gad_release(p);
    gad_release(q);
    LEAK_END();
}

TEST(adamw_defaults) {
    /* NULL opts and an all-zero struct both take lr 1e-3, 0.9/0.999, 1e-8,
     * wd 0.01 */
    adamw_case(NULL, 1e-3, 0.9, 0.999, 1e-8, 0.01);
    adamw_case(&(gad_adamw_opts){0}, 1e-3, 0.9, 0.999, 1e-8, 0.01);
    /* one field set, the rest defaulted */
    adamw_case(&(gad_adamw_opts){.lr = 0.05}, 0.05, 0.9, 0.999, 1e-8, 0.01);
    /* no_weight_decay wins over a weight_decay value */
    adamw_case(&(gad_adamw_opts){.lr = 0.05, .weight_decay = 0.3,
                                 .no_weight_decay = 1},
               0.05, 0.9, 0.999, 1e-8, 0);
}

TEST(adamw_f64_custom) {
    adamw_case(&(gad_adamw_opts){.lr = 0.02, .beta1 = 0.8, .beta2 = 0.95,
                                 .eps = 1e-6, .weight_decay = 0.1},
               0.02, 0.8, 0.95, 1e-6, 0.1);
}

/* A tensor large enough for the threaded path: every element matches the
 * scalar formula in f32 (the same operations in the same order). */
TEST(adamw_large_f32) {
    LEAK_BEGIN();
    enum { N = 200003 };
    float *p0 = malloc(N * sizeof *p0), *g = malloc(N * sizeof *g);
    float *m = calloc(N, sizeof *m), *v = calloc(N, sizeof *v);
    float *got = malloc(N * sizeof *got);
    for (int i = 0; i < N; i++) {
        p0[i] = (float)sin(i * 0.001);
        g[i] = (float)cos(i * 0.37) * 0.1f;
    }
    int64_t n = N;
    gad_tensor *p = gad_requires_grad(gad_from_f32(p0, &n, 1));
    gad_tensor *gt = gad_from_f32(g, &n, 1);
    gad_adamw_opts o = {.lr = 0.01, .weight_decay = 0.05};
    gad_optim *opt = gad_adamw_new(&p, 1, &o);
    for (int t = 1; t <= 3; t++) {
        CHECK(gad_optim_step(opt, &gt) == GAD_OK);
        float bc1 = (float)(1 - pow(0.9, t)), bc2 = (float)(1 - pow(0.999, t));
        float b1 = 0.9f, omb1 = (float)(1 - 0.9), b2 = 0.999f,
              omb2 = (float)(1 - 0.999);
        float decay = (float)(1 - 0.01 * 0.05), lr = 0.01f, eps = 1e-8f;
        for (int i = 0; i < N; i++) {
            volatile float mi = b1 * m[i] + omb1 * g[i];
            volatile float vi = b2 * v[i] + omb2 * (g[i] * g[i]);
            m[i] = mi;
            v[i] = vi;
            volatile float mh = m[i] / bc1, vh = v[i] / bc2;
            volatile float den = sqrtf(vh) + eps;
            volatile float upd = lr * (mh / den);
            volatile float dec = p0[i] * decay;
            p0[i] = dec - upd;
        }
    }
    read32(p, got, N);
    int bad = 0;
    for (int i = 0; i < N; i++) bad += got[i] != p0[i];
    CHECK_MSG(bad == 0, "%d elements differ", bad);
    gad_optim_free(opt);
    gad_release(gt);
    gad_release(p);
    free(p0), free(g), free(m), free(v), free(got);
    CHECK_OK();
    LEAK_END();
}

/* ------------------------------------- bit for bit, on every build */

/* optim.h promises that an update is the same bits on every build, FMA
 * hardware and -march=native included: the kernels and the coefficients
 * are compiled with -ffp-contract=off. The references below are scalar
 * loops that round every operation in the parameter's type, in the order
 * optim.h gives. For them to mean anything, this file is compiled with
 * -ffp-contract=off as well (tests/CMakeLists.txt), rather than written with
 * a volatile temporary per operation: the references then read as the
 * formulas, and a volatile per statement is easy to get wrong (it does not
 * split an a * b + c inside one statement, which the compiler may still
 * fuse). reference_not_contracted checks that the flag is there. */

/* An a * b + c whose fused result differs from the rounded one: the
 * compiler would fuse it (at -march=native with -ffp-contract=fast) unless
 * this file is compiled without contraction. */
TEST(reference_not_contracted) {
    volatile double va = 1.0 + 0x1p-30, vb = 1.0 - 0x1p-30, vc = -1.0;
    volatile float fa = 1.0f + 0x1p-13f, fb = 1.0f - 0x1p-13f, fc = -1.0f;
    double a = va, b = vb, c = vc;
    float x = fa, y = fb, z = fc;
    double d = a * b + c;
    float f = x * y + z;
    /* a b = 1 - 2^-60 rounds to 1 in double; 1 - 2^-26 rounds to 1 in
     * float: the unfused sums are exactly 0 */
    CHECK_MSG(d == 0, "double a * b + c = %a: fused", d);
    CHECK_MSG(f == 0, "float a * b + c = %a: fused", (double)f);
}

/* The scalar references, one definition for float and double. The
 * coefficients are computed in double and rounded once to T, as
 * src/optim/optim.c computes them and the kernels round them. */
#define OPTIM_REF(T, SFX, SQRT)                                                \
    static void sgd_bits_ref_##SFX(T *p, T *b, const T *g, int64_t n,          \
                                   int first, double lr_, double mu_,         \
                                   double wd_) {                               \
        const T lr = (T)lr_, mu = (T)mu_, wd = (T)wd_;                         \
        for (int64_t i = 0; i < n; i++) {                                      \
            T gi = g[i] + wd * p[i];                                           \
            b[i] = first ? gi : mu * b[i] + gi;                                \
            T d = gi + mu * b[i]; /* Nesterov */                               \
            p[i] = p[i] - lr * d;                                              \
        }                                                                      \
    }                                                                          \
    static void adamw_bits_ref_##SFX(T *p, T *m, T *v, const T *g, int64_t n, \
                                     int64_t t, double lr_, double b1_,       \
                                     double b2_, double eps_, double wd_) {    \
        const T b1 = (T)b1_, omb1 = (T)(1.0 - b1_), b2 = (T)b2_;               \
        const T omb2 = (T)(1.0 - b2_);                                         \
        const T bc1 = (T)(1.0 - pow(b1_, (double)t));                          \
        const T bc2 = (T)(1.0 - pow(b2_, (double)t));                          \
        const T lr = (T)lr_, eps = (T)eps_, decay = (T)(1.0 - lr_ * wd_);      \
        for (int64_t i = 0; i < n; i++) {                                      \
            m[i] = b1 * m[i] + omb1 * g[i];                                    \
            v[i] = b2 * v[i] + omb2 * (g[i] * g[i]);                           \
            T mh = m[i] / bc1, vh = v[i] / bc2;                                \
            p[i] = p[i] * decay - lr * (mh / (SQRT(vh) + eps));                \
        }                                                                      \
    }

OPTIM_REF(float, f32, sqrtf)
OPTIM_REF(double, f64, sqrt)

/* SGD (momentum 0.9, Nesterov, weight decay 0.01) and AdamW (weight decay
 * 0.05) for STEPS steps of n elements of dtype dt with nt threads: the
 * parameters, the momentum buffer and m and v equal the references' bit
 * for bit. Gradients change every step. */
static void bits_case(gad_dtype_t dt, int64_t n, int nt) {
    enum { STEPS = 4 };
    const double lr = 0.05, mu = 0.9, wd = 0.01;
    const double alr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, awd = 0.05;
    int f32 = dt == GAD_F32;
    size_t es = f32 ? sizeof(float) : sizeof(double), bytes = (size_t)n * es;
    /* reference arrays: p and b (SGD), q, m and v (AdamW), g, and a
     * buffer for what gad holds */
    char *rp = malloc(bytes), *rb = calloc((size_t)n, es);
    char *rq = malloc(bytes), *rm = calloc((size_t)n, es);
    char *rv = calloc((size_t)n, es), *rg = malloc(bytes), *got = malloc(bytes);
    for (int64_t i = 0; i < n; i++) {
        double x = sin(0.001 * (double)i + 0.3) * 2;
        if (f32) ((float *)rp)[i] = ((float *)rq)[i] = (float)x;
        else ((double *)rp)[i] = ((double *)rq)[i] = x;
    }
    gad_tensor *p = gad_requires_grad(f32 ? gad_from_f32((float *)rp, &n, 1)
                                          : gad_from_f64((double *)rp, &n, 1));
    gad_tensor *q = gad_requires_grad(f32 ? gad_from_f32((float *)rq, &n, 1)
                                          : gad_from_f64((double *)rq, &n, 1));
    gad_optim *sgd = gad_sgd_new(&p, 1, &(gad_sgd_opts){.lr = lr, .momentum = mu,
                                                        .nesterov = 1,
                                                        .weight_decay = wd});
    gad_optim *adamw = gad_adamw_new(&q, 1, &(gad_adamw_opts){.lr = alr, .beta1 = b1,
                                                              .beta2 = b2, .eps = eps,
                                                              .weight_decay = awd});
    CHECK(sgd && adamw);
    int old = gad_num_threads();
    gad_set_num_threads(nt);
    for (int s = 1; s <= STEPS; s++) {
        for (int64_t i = 0; i < n; i++) {
            double x = cos(0.37 * (double)i + 0.9 * s) * 0.1 * s;
            if (f32) ((float *)rg)[i] = (float)x;
            else ((double *)rg)[i] = x;
        }
        gad_scope_begin();
        gad_tensor *g = f32 ? gad_from_f32((float *)rg, &n, 1)
                            : gad_from_f64((double *)rg, &n, 1);
        CHECK(gad_optim_step(sgd, &g) == GAD_OK);
        CHECK(gad_optim_step(adamw, &g) == GAD_OK);
        gad_scope_end();
        if (f32) {
            sgd_bits_ref_f32((float *)rp, (float *)rb, (float *)rg, n, s == 1,
                             lr, mu, wd);
            adamw_bits_ref_f32((float *)rq, (float *)rm, (float *)rv,
                               (float *)rg, n, s, alr, b1, b2, eps, awd);
        } else {
            sgd_bits_ref_f64((double *)rp, (double *)rb, (double *)rg, n,
                             s == 1, lr, mu, wd);
            adamw_bits_ref_f64((double *)rq, (double *)rm, (double *)rv,
                               (double *)rg, n, s, alr, b1, b2, eps, awd);
        }
    }
    gad_set_num_threads(old);
    /* what gad holds, against each reference array */
    const char *names[4] = {"sgd p", "momentum.0", "m.0", "v.0"};
    const char *want[4] = {rp, rb, rm, rv};
    gad_tensor *have[4] = {p, NULL, NULL, NULL};
    const char *sn[3];
    gad_tensor *st[3];
    CHECK(gad_optim_state(sgd, sn, st, 3) == 2 && strcmp(sn[1], "momentum.0") == 0);
    have[1] = st[1];
    gad_release(st[0]);
    CHECK(gad_optim_state(adamw, sn, st, 3) == 3 && strcmp(sn[1], "m.0") == 0 &&
          strcmp(sn[2], "v.0") == 0);
    have[2] = st[1];
    have[3] = st[2];
    gad_release(st[0]);
    for (int k = 0; k < 4; k++) {
        gad_status rs = f32 ? gad_read_f32(have[k], (float *)got, (size_t)n)
                            : gad_read_f64(have[k], (double *)got, (size_t)n);
        CHECK(rs == GAD_OK);
        int64_t bad = 0, first_bad = -1;
        for (int64_t i = 0; i < n; i++)
            if (memcmp(got + (size_t)i * es, want[k] + (size_t)i * es, es) != 0) {
                if (first_bad < 0) first_bad = i;
                bad++;
            }
        CHECK_MSG(bad == 0, "%s, %s, n = %lld, %d threads: %lld elements differ "
                  "(first %lld)", names[k], f32 ? "f32" : "f64", (long long)n, nt,
                  (long long)bad, (long long)first_bad);
    }
    /* the AdamW parameter too */
    CHECK(f32 ? gad_read_f32(q, (float *)got, (size_t)n) == GAD_OK
              : gad_read_f64(q, (double *)got, (size_t)n) == GAD_OK);
    CHECK_MSG(memcmp(got, rq, bytes) == 0, "adamw p, %s, n = %lld, %d threads",
              f32 ? "f32" : "f64", (long long)n, nt);
    for (int k = 1; k < 4; k++) gad_release(have[k]);
    gad_optim_free(sgd);
    gad_optim_free(adamw);
    gad_release(p);
    gad_release(q);
    free(rp), free(rb), free(rq), free(rm), free(rv), free(rg), free(got);
}

/* Sizes below and above the kernels' threading threshold (65536 elements,
 * GAD_OPTIM_PAR_MIN in src/cpu/optim.h), on one thread and on three. */
TEST(updates_bit_exact) {
    LEAK_BEGIN();
    const int64_t sizes[3] = {7, 1003, 2 * 65536 + 17};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 3; k++)
            for (int nt = 1; nt <= 3; nt += 2)
                bits_case(d ? GAD_F64 : GAD_F32, sizes[k], nt);
    CHECK_OK();
    LEAK_END();
}

/* The multi-tensor update: 40 f32 parameters of 1 to ~9000 elements
 * (together past the threading threshold) in two groups of different lr
 * and weight decay, stepped in one call each time. Every other parameter is
 * shared with a detached view when the step comes, as a graph shares it,
 * so it is updated out of place while the view keeps the old values. The
 * parameters and the state equal the scalar references bit for bit, on one
 * thread and on three. */
static void multi_case(int adamw, int nt) {
    enum { NP = 40, STEPS = 3 };
    const double lr[2] = {0.03, 0.01}, wd[2] = {0.02, 0};
    int64_t sz[NP];
    float *rp[NP], *r1[NP], *r2[NP], *rg[NP];
    gad_tensor *p[NP];
    for (int k = 0; k < NP; k++) {
        sz[k] = 1 + (int64_t)k * k * 37 % 9000;
        rp[k] = malloc((size_t)sz[k] * sizeof(float));
        r1[k] = calloc((size_t)sz[k], sizeof(float));
        r2[k] = calloc((size_t)sz[k], sizeof(float));
        rg[k] = malloc((size_t)sz[k] * sizeof(float));
        for (int64_t i = 0; i < sz[k]; i++) rp[k][i] = (float)sin(0.01 * (double)i + k);
        p[k] = leaf32(rp[k], sz[k]);
    }
    gad_param_group groups[2] = {{.params = p, .n = NP / 2, .lr = lr[0], .weight_decay = wd[0]},
                                 {.params = p + NP / 2, .n = NP / 2, .lr = lr[1],
                                  .no_weight_decay = 1}};
    gad_optim *opt =
        adamw ? gad_adamw_new_groups(groups, 2, &(gad_adamw_opts){.beta1 = 0.8, .beta2 = 0.99})
              : gad_sgd_new_groups(groups, 2, &(gad_sgd_opts){.momentum = 0.9, .nesterov = 1});
    CHECK(opt != NULL);
    int old = gad_num_threads();
    gad_set_num_threads(nt);
    for (int s = 1; s <= STEPS; s++) {
        gad_scope_begin();
        gad_tensor *g[NP], *view[NP] = {0};
        for (int k = 0; k < NP; k++) {
            for (int64_t i = 0; i < sz[k]; i++)
                rg[k][i] = (float)(cos(0.37 * (double)i + 0.9 * s + k) * 0.1 * s);
            g[k] = gad_from_f32(rg[k], &sz[k], 1);
            if (k % 2) view[k] = gad_detach(p[k]); /* shares p[k]'s storage */
        }
        CHECK(gad_optim_step(opt, g) == GAD_OK);
        int bad_view = -1;
        for (int k = 0; k < NP; k++) {
            float *got = malloc((size_t)sz[k] * sizeof(float));
            if (view[k]) { /* the old values, untouched */
                read32(view[k], got, (size_t)sz[k]);
                if (memcmp(got, rp[k], (size_t)sz[k] * sizeof(float)) != 0 && bad_view < 0)
                    bad_view = k;
            }
            free(got);
            int h = k >= NP / 2;
            if (adamw)
                adamw_bits_ref_f32(rp[k], r1[k], r2[k], rg[k], sz[k], s, lr[h], 0.8, 0.99,
                                   1e-8, wd[h]);
            else
                sgd_bits_ref_f32(rp[k], r1[k], rg[k], sz[k], s == 1, lr[h], 0.9, wd[h]);
        }
        CHECK_MSG(bad_view < 0, "step %d: the view of params[%d] changed", s, bad_view);
        gad_scope_end();
    }
    gad_set_num_threads(old);
    const char *names[3 * NP + 1];
    gad_tensor *st[3 * NP + 1];
    int ns = gad_optim_state(opt, names, st, 3 * NP + 1);
    CHECK(ns == (adamw ? 2 * NP + 1 : NP + 1));
    for (int k = 0; k < NP; k++) {
        float *got = malloc((size_t)sz[k] * sizeof(float));
        size_t bytes = (size_t)sz[k] * sizeof(float);
        read32(p[k], got, (size_t)sz[k]);
        CHECK_MSG(memcmp(got, rp[k], bytes) == 0, "%s params[%d] (%lld elements), %d threads",
                  adamw ? "adamw" : "sgd", k, (long long)sz[k], nt);
        int j = adamw ? 1 + 2 * k : 1 + k; /* "m.<k>" and "v.<k>", or "momentum.<k>" */
        read32(st[j], got, (size_t)sz[k]);
        CHECK_MSG(memcmp(got, r1[k], bytes) == 0, "%s, %d threads", names[j], nt);
        if (adamw) {
            read32(st[j + 1], got, (size_t)sz[k]);
            CHECK_MSG(memcmp(got, r2[k], bytes) == 0, "%s, %d threads", names[j + 1], nt);
        }
        free(got);
    }
    for (int i = 0; i < ns; i++) gad_release(st[i]);
    gad_optim_free(opt);
    for (int k = 0; k < NP; k++) {
        gad_release(p[k]);
        free(rp[k]), free(r1[k]), free(r2[k]), free(rg[k]);
    }
}

TEST(multi_tensor_update_bit_exact) {
    LEAK_BEGIN();
    for (int adamw = 0; adamw < 2; adamw++)
        for (int nt = 1; nt <= 3; nt += 2) multi_case(adamw, nt);
    CHECK_OK();
    LEAK_END();
}

/* --------------------------------------------- in place, copy-on-write */

TEST(in_place_keeps_identity) {
    LEAK_BEGIN();
    const float pv[3] = {1, 2, 3};
    gad_tensor *p = leaf32(pv, 3);
    gad_tensor *before = p;
    /* a gradient in the slot, from backward */
    gad_scope_begin();
    CHECK(gad_backward(gad_sum_all(gad_mul(p, p))) == GAD_OK);
    gad_scope_end();
    gad_optim *opt = gad_adamw_new(&p, 1, NULL);
    CHECK(gad_optim_step(opt, NULL) == GAD_OK);
    CHECK(p == before);
    CHECK(gad_is_leaf(p));
    CHECK(gad_is_contiguous(p));
    /* the slot survives the step */
    gad_scope_begin();
    gad_tensor *g = gad_leaf_grad(p);
    CHECK_VALUES(g, 0, 2, 4, 6);
    gad_scope_end();
    gad_optim_free(opt);
    gad_release(p);
    CHECK_OK();
    LEAK_END();
}

TEST(copy_on_write_protects_graph) {
    LEAK_BEGIN();
    const double pv[3] = {1, -2, 3};
    gad_tensor *p = leaf64(pv, 3);
    /* a graph that saved p: d/dp sum(p * p * c) = 2 p c */
    gad_scope_begin();
    gad_tensor *y = gad_sum_all(gad_mul(gad_mul(p, p), gad_full_like(p, 0.5)));
    gad_tensor *snap = gad_detach(p); /* a view of the old values */
    gad_optim *opt = gad_sgd_new(&p, 1, &(gad_sgd_opts){.lr = 0.5});
    gad_tensor *g = gad_full_like(p, 1.0);
    CHECK(gad_optim_step(opt, &g) == GAD_OK);
    CHECK_VALUES(p, 0, 0.5, -2.5, 2.5);
    CHECK_VALUES(snap, 0, 1, -2, 3);
    gad_tensor *gr = NULL;
    CHECK(gad_grad(y, &p, 1, &gr) == GAD_OK);
    CHECK_VALUES(gr, 0, 1, -2, 3); /* the gradient at the old values */
    /* a new graph sees the new values */
    gad_tensor *y2 = gad_sum_all(gad_mul(gad_mul(p, p), gad_full_like(p, 0.5)));
    CHECK(gad_grad(y2, &p, 1, &gr) == GAD_OK);
    CHECK_VALUES(gr, 0, 0.5, -2.5, 2.5);
    gad_scope_end();
    gad_optim_free(opt);
    gad_release(p);
    CHECK_OK();
    LEAK_END();
}

/* A parameter handed to step as (another parameter's) gradient is read
 * before anything is written. */
TEST(gradient_aliasing_a_parameter) {
    LEAK_BEGIN();
    const double av[2] = {1, 2}, bv[2] = {10, 20};
    gad_tensor *a = leaf64(av, 2), *b = leaf64(bv, 2);
    gad_tensor *params[2] = {a, b};
    gad_optim *opt = gad_sgd_new(params, 2, &(gad_sgd_opts){.lr = 0.1});
    gad_tensor *grads[2] = {b, a}; /* a's gradient is b and b's is a */
    CHECK(gad_optim_step(opt, grads) == GAD_OK);
    CHECK_VALUES(a, 1e-15, 1 - 0.1 * 10, 2 - 0.1 * 20);
    CHECK_VALUES(b, 1e-15, 10 - 0.1 * 1, 20 - 0.1 * 2);
    gad_tensor *self[2] = {a, b}; /* each its own gradient */
    CHECK(gad_optim_step(opt, self) == GAD_OK);
    CHECK_VALUES(a, 1e-15, 0 * 0.9, 0 * 0.9);
    CHECK_VALUES(b, 1e-15, 9.9 * 0.9, 19.8 * 0.9);
    gad_optim_free(opt);
    gad_release(a);
    gad_release(b);
    CHECK_OK();
    LEAK_END();
}

/* A non-contiguous parameter (a leaf made from a transposed view) is
 * updated in row-major order of its own shape. */
TEST(non_contiguous_parameter) {
    LEAK_BEGIN();
    const float v[6] = {1, 2, 3, 4, 5, 6};
    const int64_t s[2] = {2, 3};
    gad_tensor *base = gad_from_f32(v, s, 2);
    gad_tensor *p = gad_requires_grad(gad_transpose(base)); /* [3,2] */
    CHECK(!gad_is_contiguous(p));
    const float gv[6] = {1, 1, 1, 1, 1, 1};
    const int64_t gs[2] = {3, 2};
    gad_tensor *g = gad_from_f32(gv, gs, 2);
    gad_optim *opt = gad_sgd_new(&p, 1, &(gad_sgd_opts){.lr = 1});
    CHECK(gad_optim_step(opt, &g) == GAD_OK);
    CHECK_SHAPE(p, 3, 2);
    CHECK_VALUES(p, 0, 0, 3, 1, 4, 2, 5);
    CHECK_VALUES(base, 0, 1, 2, 3, 4, 5, 6); /* the source is untouched */
    gad_optim_free(opt);
    gad_release(g);
    gad_release(p);
    gad_release(base);
    CHECK_OK();
    LEAK_END();
}

/* ------------------------------------------------ backward + slots path */

TEST(step_with_leaf_slots) {
    LEAK_BEGIN();
    const double av[2] = {1, -1}, bv[1] = {5};
    gad_tensor *a = leaf64(av, 2), *b = leaf64(bv, 1);
    gad_tensor *params[2] = {a, b};
    gad_optim *opt = gad_sgd_new(params, 2, &(gad_sgd_opts){.lr = 0.25});
    /* only a gets a gradient: b's slot stays empty and b is skipped */
    gad_scope_begin();
    CHECK(gad_backward(gad_sum_all(gad_square(a))) == GAD_OK);
    gad_scope_end();
    CHECK(gad_optim_step(opt, NULL) == GAD_OK);
    CHECK_VALUES(a, 0, 0.5, -0.5);
    CHECK_VALUES(b, 0, 5);
    CHECK(gad_optim_steps(opt) == 1);
    /* zero_grad empties both slots; a step then changes nothing */
    gad_optim_zero_grad(opt);
    gad_scope_begin();
    CHECK(gad_leaf_grad(a) == NULL);
    CHECK(gad_leaf_grad(b) == NULL);
    gad_scope_end();
    CHECK(gad_optim_step(opt, NULL) == GAD_OK);
    CHECK_VALUES(a, 0, 0.5, -0.5);
    CHECK(gad_optim_steps(opt) == 2); /* a call counts even if it skips all */
    /* backward accumulates until zero_grad */
    gad_scope_begin();
    CHECK(gad_backward(gad_sum_all(gad_mul(a, gad_full_like(a, 3.0)))) == GAD_OK);
    CHECK(gad_backward(gad_sum_all(gad_mul(b, gad_full_like(b, 2.0)))) == GAD_OK);
    CHECK(gad_backward(gad_sum_all(gad_mul(b, gad_full_like(b, 2.0)))) == GAD_OK);
    gad_scope_end();
    CHECK(gad_optim_step(opt, NULL) == GAD_OK);
    CHECK_VALUES(a, 0, 0.5 - 0.75, -0.5 - 0.75);
    CHECK_VALUES(b, 0, 5 - 1);
    gad_optim_zero_grad(opt);
    gad_optim_free(opt);
    gad_release(a);
    gad_release(b);
    CHECK_OK();
    LEAK_END();
}

TEST(set_lr_and_steps) {
    LEAK_BEGIN();
    const double pv[1] = {0};
    gad_tensor *p = leaf64(pv, 1);
    gad_tensor *g = gad_full_like(p, 1.0);
    gad_optim *opt = gad_sgd_new(&p, 1, &(gad_sgd_opts){.lr = 0.1});
    CHECK(gad_optim_steps(opt) == 0);
    CHECK(gad_optim_step(opt, &g) == GAD_OK);
    gad_optim_set_lr(opt, 0.5);
    CHECK(gad_optim_lr(opt) == 0.5);
    CHECK(gad_optim_step(opt, &g) == GAD_OK);
    CHECK_VALUES(p, 1e-15, -0.6);
    gad_optim_set_lr(opt, 0); /* a zero rate is allowed and freezes */
    CHECK(gad_optim_step(opt, &g) == GAD_OK);
    CHECK_VALUES(p, 1e-15, -0.6);
    CHECK(gad_optim_steps(opt) == 3);
    CHECK_OK();
    gad_optim_set_lr(opt, -1);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_set_lr");
    gad_optim_set_lr(opt, NAN);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_set_lr");
    CHECK(gad_optim_lr(opt) == 0);
    gad_optim_free(opt);
    gad_release(g);
    gad_release(p);
    LEAK_END();
}

/* --------------------------------------------------------- state */

/* A fresh copy of a leaf: same values, its own storage and slot. */
static gad_tensor *leaf_copy(gad_tensor *p) {
    gad_no_grad_begin();
    gad_tensor *c = gad_clone(p);
    gad_no_grad_end();
    return gad_requires_grad(c);
}

/* Two parameters of dtype dt: [2,3] and [3]. */
static void make_params(gad_tensor **ps, gad_dtype_t dt) {
    const double a[6] = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, b[3] = {1, 2, 3};
    const int64_t s[2] = {2, 3}, s1 = 3;
    gad_tensor *ta = gad_from_f64(a, s, 2), *tb = gad_from_f64(b, &s1, 1);
    ps[0] = gad_requires_grad(gad_cast(ta, dt));
    ps[1] = gad_requires_grad(gad_cast(tb, dt));
    gad_release(ta);
    gad_release(tb);
}

/* Fill the slots with step s's gradients by backward: sum(p * c_s) has
 * gradient c_s. params[1] gets none at s == 0, so an SGD buffer for it
 * appears only from step 1. */
static void fill_slots(gad_tensor **ps, int s) {
    gad_zero_grad(ps, 2);
    gad_scope_begin();
    for (int k = 0; k < 2; k++) {
        if (k == 1 && s == 0) continue;
        int64_t n = gad_numel(ps[k]);
        double c[8];
        for (int i = 0; i < n; i++) c[i] = sin(1.7 * s + 0.9 * i + k) * (k + 1);
        gad_tensor *ct = gad_reshape(gad_cast(gad_from_f64(c, &n, 1),
                                              gad_dtype(ps[k])),
                                     gad_shape(ps[k]), gad_rank(ps[k]));
        CHECK(gad_backward(gad_sum_all(gad_mul(ps[k], ct))) == GAD_OK);
    }
    gad_scope_end();
}

static int same_values(gad_tensor *a, gad_tensor *b) {
    double x[8], y[8];
    size_t n = (size_t)gad_numel(a);
    if (n != (size_t)gad_numel(b) || n > 8) return 0;
    gad_read_f64(a, x, n);
    gad_read_f64(b, y, n);
    return memcmp(x, y, n * sizeof *x) == 0;
}

typedef gad_optim *(*make_optim_fn)(gad_tensor **ps);

static gad_optim *make_adamw(gad_tensor **ps) {
    return gad_adamw_new(ps, 2, &(gad_adamw_opts){.lr = 0.05, .weight_decay = 0.1});
}
static gad_optim *make_sgd_mom(gad_tensor **ps) {
    return gad_sgd_new(ps, 2, &(gad_sgd_opts){.lr = 0.1, .momentum = 0.9,
                                              .nesterov = 1, .weight_decay = 0.01});
}

static void state_round_trip(make_optim_fn make, gad_dtype_t dt,
                             int expect_count) {
    LEAK_BEGIN();
    gad_tensor *pa[2], *pb[2];
    make_params(pa, dt);
    gad_optim *a = make(pa);
    for (int s = 0; s < 3; s++) {
        fill_slots(pa, s);
        CHECK(gad_optim_step(a, NULL) == GAD_OK);
    }
    int count = gad_optim_state(a, NULL, NULL, 0);
    CHECK(count == expect_count);
    const char *names[8];
    gad_tensor *ts[8];
    CHECK(gad_optim_state(a, names, ts, 8) == count);
    CHECK(strcmp(names[0], "step") == 0);
    CHECK(gad_dtype(ts[0]) == GAD_I64 && gad_rank(ts[0]) == 0);
    CHECK(gad_item(ts[0]) == 3);
    /* snapshots of the state, to check they never change */
    gad_tensor *copies[8];
    for (int k = 0; k < count; k++) copies[k] = gad_clone(ts[k]);

    /* a second optimizer over copies of the parameters, given a's state */
    pb[0] = leaf_copy(pa[0]);
    pb[1] = leaf_copy(pa[1]);
    gad_optim *b = make(pb);
    CHECK(gad_optim_load_state(b, names, ts, count) == GAD_OK);
    CHECK(gad_optim_steps(b) == 3);
    CHECK(gad_optim_state(b, NULL, NULL, 0) == count);
    for (int s = 3; s < 6; s++) {
        fill_slots(pa, s);
        fill_slots(pb, s);
        CHECK(gad_optim_step(a, NULL) == GAD_OK);
        CHECK(gad_optim_step(b, NULL) == GAD_OK);
        CHECK(same_values(pa[0], pb[0]));
        CHECK(same_values(pa[1], pb[1]));
    }
    for (int k = 0; k < count; k++) CHECK(same_values(ts[k], copies[k]));
    /* the states agree again, name by name */
    const char *na[8], *nb[8];
    gad_tensor *ta[8], *tb[8];
    CHECK(gad_optim_state(a, na, ta, 8) == count);
    CHECK(gad_optim_state(b, nb, tb, 8) == count);
    for (int k = 0; k < count; k++) {
        CHECK(strcmp(na[k], nb[k]) == 0);
        CHECK(same_values(ta[k], tb[k]));
        gad_release(ta[k]);
        gad_release(tb[k]);
    }
    CHECK(gad_optim_steps(a) == 6 && gad_optim_steps(b) == 6);
    for (int k = 0; k < count; k++) {
        gad_release(ts[k]);
        gad_release(copies[k]);
    }
    gad_zero_grad(pa, 2);
    gad_zero_grad(pb, 2);
    gad_optim_free(a);
    gad_optim_free(b);
    for (int k = 0; k < 2; k++) {
        gad_release(pa[k]);
        gad_release(pb[k]);
    }
    CHECK_OK();
    LEAK_END();
}

TEST(state_round_trip_adamw) {
    state_round_trip(make_adamw, GAD_F32, 5); /* step, m.0, v.0, m.1, v.1 */
    state_round_trip(make_adamw, GAD_F64, 5);
}

TEST(state_round_trip_sgd) {
    state_round_trip(make_sgd_mom, GAD_F32, 3); /* step, momentum.0, .1 */
    state_round_trip(make_sgd_mom, GAD_F64, 3);
}

TEST(state_names_and_cap) {
    LEAK_BEGIN();
    gad_tensor *ps[2];
    make_params(ps, GAD_F32);
    gad_optim *sgd = make_sgd_mom(ps);
    const char *names[4];
    gad_tensor *ts[4];
    /* no buffer before the first update */
    CHECK(gad_optim_state(sgd, NULL, NULL, 0) == 1);
    fill_slots(ps, 0); /* only params[0] has a gradient */
    CHECK(gad_optim_step(sgd, NULL) == GAD_OK);
    CHECK(gad_optim_state(sgd, names, ts, 4) == 2);
    CHECK(strcmp(names[0], "step") == 0 && strcmp(names[1], "momentum.0") == 0);
    CHECK_SHAPE(ts[1], 2, 3);
    gad_release(ts[0]);
    gad_release(ts[1]);
    gad_optim *adam = make_adamw(ps);
    /* cap 2 of 5 fills the first two and returns the count */
    ts[2] = NULL;
    CHECK(gad_optim_state(adam, names, ts, 2) == 5);
    CHECK(strcmp(names[0], "step") == 0 && strcmp(names[1], "m.0") == 0);
    CHECK(ts[2] == NULL);
    gad_release(ts[0]);
    gad_release(ts[1]);
    CHECK(gad_optim_state(adam, names, ts, 4) == 5);
    CHECK(strcmp(names[2], "v.0") == 0 && strcmp(names[3], "m.1") == 0);
    for (int k = 0; k < 4; k++) gad_release(ts[k]);
    /* in a scope, the scope owns them */
    gad_scope_begin();
    CHECK(gad_optim_state(adam, names, ts, 4) == 5);
    gad_scope_end();
    CHECK_OK();
    gad_zero_grad(ps, 2);
    gad_optim_free(sgd);
    gad_optim_free(adam);
    gad_release(ps[0]);
    gad_release(ps[1]);
    LEAK_END();
}

/* Try a load; it must fail with kind in op optim_load_state and leave the
 * optimizer as it was. */
#define CHECK_LOAD_FAILS(opt, names, ts, n, kind)                              \
    do {                                                                       \
        CHECK(gad_optim_load_state((opt), (names), (ts), (n)) == (kind));      \
        CHECK_ERR((kind), "optim_load_state");                                 \
    } while (0)

TEST(load_state_rejects) {
    LEAK_BEGIN();
    gad_tensor *pa[2], *pb[2], *pc[2];
    make_params(pa, GAD_F32);
    gad_optim *a = make_adamw(pa);
    fill_slots(pa, 1);
    CHECK(gad_optim_step(a, NULL) == GAD_OK);
    const char *names[5];
    gad_tensor *ts[5];
    CHECK(gad_optim_state(a, names, ts, 5) == 5);

    pb[0] = leaf_copy(pa[0]);
    pb[1] = leaf_copy(pa[1]);
    gad_optim *b = make_adamw(pb);

    gad_scope_begin();
    const char *bad_names[5];
    gad_tensor *bad_ts[5];
    const char *wrong[] = {"x", "m.2", "m.01", "m.", "m.-1", "momentum.0",
                           "v.1x", "M.0", "step "};
    for (size_t w = 0; w < sizeof wrong / sizeof *wrong; w++) {
        memcpy(bad_names, names, sizeof bad_names);
        bad_names[3] = wrong[w];
        CHECK_LOAD_FAILS(b, bad_names, ts, 5, GAD_ERR_FORMAT);
    }
    /* a repeated name */
    memcpy(bad_names, names, sizeof bad_names);
    bad_names[3] = names[1];
    memcpy(bad_ts, ts, sizeof bad_ts);
    bad_ts[3] = ts[1];
    CHECK_LOAD_FAILS(b, bad_names, bad_ts, 5, GAD_ERR_FORMAT);
    /* a missing entry (v.1 is last), and a missing step */
    CHECK_LOAD_FAILS(b, names, ts, 4, GAD_ERR_FORMAT);
    CHECK(gad_optim_load_state(b, names + 1, ts + 1, 4) == GAD_ERR_FORMAT);
    CHECK(msg_has("step"));
    CHECK_ERR(GAD_ERR_FORMAT, "optim_load_state");
    /* wrong shape for m.0 ([2,3] expected) */
    memcpy(bad_ts, ts, sizeof bad_ts);
    const int64_t s32[2] = {3, 2};
    bad_ts[1] = gad_zeros(s32, 2, GAD_F32);
    CHECK(gad_optim_load_state(b, names, bad_ts, 5) == GAD_ERR_SHAPE);
    CHECK(msg_has("m.0") && msg_has("[3,2]") && msg_has("[2,3]"));
    CHECK_ERR(GAD_ERR_SHAPE, "optim_load_state");
    /* wrong dtype */
    bad_ts[1] = gad_cast(ts[1], GAD_F64);
    CHECK_LOAD_FAILS(b, names, bad_ts, 5, GAD_ERR_DTYPE);
    /* step: not i64, not rank 0, negative */
    memcpy(bad_ts, ts, sizeof bad_ts);
    bad_ts[0] = gad_scalar_f32(1);
    CHECK_LOAD_FAILS(b, names, bad_ts, 5, GAD_ERR_DTYPE);
    const int64_t one = 1, neg = -4;
    bad_ts[0] = gad_from_i64(&neg, &one, 1);
    CHECK_LOAD_FAILS(b, names, bad_ts, 5, GAD_ERR_SHAPE);
    bad_ts[0] = gad_from_i64(&neg, NULL, 0);
    CHECK_LOAD_FAILS(b, names, bad_ts, 5, GAD_ERR_FORMAT);
    /* NULL entries and arguments */
    bad_ts[0] = NULL;
    CHECK_LOAD_FAILS(b, names, bad_ts, 5, GAD_ERR_DOMAIN);
    CHECK_LOAD_FAILS(b, NULL, ts, 5, GAD_ERR_DOMAIN);
    CHECK_LOAD_FAILS(b, names, ts, -1, GAD_ERR_DOMAIN);
    CHECK(gad_optim_load_state(NULL, names, ts, 5) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_load_state");
    /* an SGD without momentum has no buffers to load */
    gad_optim *plain = gad_sgd_new(pb, 2, NULL);
    const char *mn[2] = {"step", "momentum.0"};
    gad_tensor *mt[2] = {ts[0], ts[1]};
    CHECK_LOAD_FAILS(plain, mn, mt, 2, GAD_ERR_FORMAT);
    CHECK(gad_optim_load_state(plain, mn, mt, 1) == GAD_OK);
    CHECK(gad_optim_steps(plain) == 1);
    gad_optim_free(plain);
    gad_scope_end();

    /* b is unchanged: it steps exactly as a fresh optimizer does */
    CHECK(gad_optim_steps(b) == 0);
    pc[0] = leaf_copy(pb[0]);
    pc[1] = leaf_copy(pb[1]);
    gad_optim *c = make_adamw(pc);
    fill_slots(pb, 2);
    fill_slots(pc, 2);
    CHECK(gad_optim_step(b, NULL) == GAD_OK);
    CHECK(gad_optim_step(c, NULL) == GAD_OK);
    CHECK(same_values(pb[0], pc[0]) && same_values(pb[1], pc[1]));
    CHECK_OK();

    for (int k = 0; k < 5; k++) gad_release(ts[k]);
    gad_tensor *all[6] = {pa[0], pa[1], pb[0], pb[1], pc[0], pc[1]};
    gad_zero_grad(all, 6);
    gad_optim_free(a);
    gad_optim_free(b);
    gad_optim_free(c);
    for (int k = 0; k < 6; k++) gad_release(all[k]);
    LEAK_END();
}

/* ------------------------------------------------------------ clipping */

TEST(clip_grad_norm_values) {
    LEAK_BEGIN();
    gad_scope_begin();
    const float av[2] = {3, 4};
    const double bv[1] = {12};
    int64_t two = 2, one = 1;
    gad_tensor *g[2] = {gad_from_f32(av, &two, 1), gad_from_f64(bv, &one, 1)};
    gad_tensor *h0 = g[0], *h1 = g[1];
    /* below the limit: nothing changes */
    CHECK_NEAR(gad_clip_grad_norm(g, 2, 13.5), 13, 1e-12);
    CHECK_VALUES(g[0], 0, 3, 4);
    CHECK_VALUES(g[1], 0, 12);
    CHECK_NEAR(gad_clip_grad_norm(g, 2, 13), 13, 1e-12); /* equal: no-op */
    CHECK_VALUES(g[1], 0, 12);
    /* above: scaled by max / (norm + 1e-6), in place */
    double c = 6.5 / (13 + 1e-6);
    CHECK_NEAR(gad_clip_grad_norm(g, 2, 6.5), 13, 1e-12);
    CHECK(g[0] == h0 && g[1] == h1);
    CHECK_VALUES(g[0], 1e-6, 3 * c, 4 * c);
    CHECK_VALUES(g[1], 1e-15, 12 * c);
    CHECK_NEAR(gad_clip_grad_norm(g, 2, 1e9), 13 * c, 1e-5);
    /* an empty list has norm 0 */
    CHECK(gad_clip_grad_norm(NULL, 0, 1) == 0);
    CHECK_OK();
    gad_scope_end();
    LEAK_END();
}

TEST(clip_grad_norm_shared_and_strided) {
    LEAK_BEGIN();
    gad_scope_begin();
    const double v[6] = {1, 2, 3, 4, 5, 6};
    const int64_t s[2] = {2, 3};
    gad_tensor *base = gad_from_f64(v, s, 2);
    gad_tensor *t = gad_transpose(base); /* a strided view sharing storage */
    gad_tensor *g[3] = {t, base, t};     /* t listed twice */
    double norm = sqrt(3 * 91.0);
    CHECK_NEAR(gad_clip_grad_norm(g, 3, 1), norm, 1e-12);
    double c = 1 / (norm + 1e-6);
    /* each tensor scaled once; copy-on-write separated t from base */
    CHECK_VALUES(t, 1e-15, 1 * c, 4 * c, 2 * c, 5 * c, 3 * c, 6 * c);
    CHECK_VALUES(base, 1e-15, 1 * c, 2 * c, 3 * c, 4 * c, 5 * c, 6 * c);
    /* a gradient in a leaf slot, clipped through gad_leaf_grad */
    const double pv[2] = {1, 1};
    int64_t two = 2;
    gad_tensor *p = gad_requires_grad(gad_from_f64(pv, &two, 1));
    CHECK(gad_backward(gad_sum_all(gad_mul(p, gad_full_like(p, 4.0)))) == GAD_OK);
    gad_tensor *lg = gad_leaf_grad(p);
    CHECK_NEAR(gad_clip_grad_norm(&lg, 1, 2), sqrt(32), 1e-12);
    gad_tensor *again = gad_leaf_grad(p);
    double k = 2 / (sqrt(32) + 1e-6);
    CHECK_VALUES(again, 1e-15, 4 * k, 4 * k);
    gad_zero_grad(&p, 1);
    CHECK_OK();
    gad_scope_end();
    LEAK_END();
}

/* A large gradient (the threaded path): the norm matches a plain double
 * sum and does not depend on the number of threads. */
TEST(clip_grad_norm_large) {
    LEAK_BEGIN();
    enum { N = 300007 };
    float *v = malloc(N * sizeof *v);
    double ref = 0;
    for (int i = 0; i < N; i++) {
        v[i] = (float)sin(i * 0.013) * 0.01f;
        ref += (double)v[i] * v[i];
    }
    ref = sqrt(ref);
    int64_t n = N;
    gad_tensor *g = gad_from_f32(v, &n, 1);
    int nt = gad_num_threads();
    gad_set_num_threads(1);
    double one = gad_clip_grad_norm(&g, 1, 1e30);
    gad_set_num_threads(0);
    double all = gad_clip_grad_norm(&g, 1, 1e30);
    gad_set_num_threads(nt);
    CHECK_NEAR(one, ref, 1e-12 * ref);
    CHECK(one == all);
    CHECK_NEAR(gad_clip_grad_norm(&g, 1, ref / 2), ref, 1e-12 * ref);
    double after = gad_clip_grad_norm(&g, 1, 1e30);
    CHECK_NEAR(after, ref / 2, 1e-6 * ref);
    gad_release(g);
    free(v);
    CHECK_OK();
    LEAK_END();
}

/* f16 and bf16 gradients: the norm is the one of their values widened to
 * f32, to the bit, and each is scaled as the widened gradient is, then
 * rounded once; beside f32 gradients, on one thread and on all. */
TEST(clip_grad_norm_half) {
    LEAK_BEGIN();
    static const int64_t sizes[2] = {37, 300007}; /* one block; threaded */
    const gad_dtype_t dts[2] = {GAD_BF16, GAD_F16};
    for (int d = 0; d < 2; d++)
        for (int z = 0; z < 2; z++) {
            gad_scope_begin();
            int64_t n = sizes[z];
            gad_rng *r = gad_rng_new(90 + (uint64_t)(d * 2 + z));
            gad_tensor *h = gad_rng_normal_tensor(r, &n, 1, dts[d], 0, 0.5);
            gad_tensor *f = gad_rng_normal_tensor(r, &n, 1, GAD_F32, 0, 0.5);
            gad_rng_free(r);
            gad_tensor *w = gad_contiguous(gad_cast(h, GAD_F32)); /* widened, exact */
            gad_tensor *f2 = gad_contiguous(gad_mul_scalar(f, 1.0));
            CHECK(w != h && f2 != f);
            /* the norm alone (max_norm above it): the widened list's bits */
            gad_tensor *hl[2] = {h, f}, *wl[2] = {w, f2};
            double nw = gad_clip_grad_norm(wl, 2, 1e30);
            int nt = gad_num_threads();
            gad_set_num_threads(1);
            double n1 = gad_clip_grad_norm(hl, 2, 1e30);
            gad_set_num_threads(0);
            double nall = gad_clip_grad_norm(hl, 2, 1e30);
            gad_set_num_threads(nt);
            CHECK(n1 == nw && nall == nw && isfinite(nw) && nw > 0);
            /* clipped to a tenth: h = round(widened h * (float)c) */
            CHECK(gad_clip_grad_norm(hl, 2, nw / 10) == nw);
            CHECK(gad_clip_grad_norm(wl, 2, nw / 10) == nw);
            gad_tensor *want = gad_contiguous(gad_cast(w, dts[d]));
            CHECK(gad_dtype(h) == dts[d] && gad_numel(h) == n);
            CHECK(!memcmp(gad_data(h), gad_data(want), (size_t)n * 2));
            CHECK(!memcmp(gad_data(f), gad_data(f2), (size_t)n * 4));
            double again = gad_clip_grad_norm(hl, 2, 1e30);
            CHECK_NEAR(again, nw / 10, 1e-2 * nw / 10); /* rounded to half */
            CHECK_OK();
            gad_scope_end();
        }
    LEAK_END();
}

TEST(clip_grad_norm_errors) {
    LEAK_BEGIN();
    gad_scope_begin();
    const int64_t iv[2] = {1, 2};
    int64_t two = 2;
    gad_tensor *f = gad_ones(&two, 1, GAD_F32);
    gad_tensor *i = gad_from_i64(iv, &two, 1);
    gad_tensor *g[2] = {f, NULL};
    CHECK(isnan(gad_clip_grad_norm(g, 2, 1)));
    CHECK(msg_has("grads[1]"));
    CHECK_ERR(GAD_ERR_DOMAIN, "clip_grad_norm");
    g[1] = i;
    CHECK(isnan(gad_clip_grad_norm(g, 2, 1)));
    CHECK(msg_has("i64"));
    CHECK_ERR(GAD_ERR_DTYPE, "clip_grad_norm");
    CHECK(isnan(gad_clip_grad_norm(g, -1, 1)));
    CHECK_ERR(GAD_ERR_DOMAIN, "clip_grad_norm");
    CHECK(isnan(gad_clip_grad_norm(NULL, 2, 1)));
    CHECK_ERR(GAD_ERR_DOMAIN, "clip_grad_norm");
    CHECK(isnan(gad_clip_grad_norm(&f, 1, -1)));
    CHECK_ERR(GAD_ERR_DOMAIN, "clip_grad_norm");
    CHECK(isnan(gad_clip_grad_norm(&f, 1, NAN)));
    CHECK_ERR(GAD_ERR_DOMAIN, "clip_grad_norm");
    CHECK_VALUES(f, 0, 1, 1); /* nothing was scaled */
    /* a non-finite norm is returned and leaves the gradients alone */
    const float nv[2] = {INFINITY, 1};
    gad_tensor *inf = gad_from_f32(nv, &two, 1);
    CHECK(isinf(gad_clip_grad_norm(&inf, 1, 1)));
    CHECK_VALUES(inf, 0, INFINITY, 1);
    CHECK_OK();
    gad_scope_end();
    LEAK_END();
}

/* ------------------------------------------------------------ schedule */

TEST(lr_warmup_cosine) {
    const double base = 1.0, lo = 0.1;
    /* warm-up: base * (step + 1) / warmup */
    CHECK_NEAR(gad_lr_warmup_cosine(0, 10, 110, base, lo), 0.1, 1e-15);
    CHECK_NEAR(gad_lr_warmup_cosine(4, 10, 110, base, lo), 0.5, 1e-15);
    CHECK_NEAR(gad_lr_warmup_cosine(9, 10, 110, base, lo), 1.0, 1e-15);
    /* cosine from base at step warmup to min at total */
    CHECK_NEAR(gad_lr_warmup_cosine(10, 10, 110, base, lo), 1.0, 1e-15);
    CHECK_NEAR(gad_lr_warmup_cosine(60, 10, 110, base, lo), 0.55, 1e-15);
    CHECK_NEAR(gad_lr_warmup_cosine(35, 10, 110, base, lo),
               lo + 0.5 * (base - lo) * (1 + cos(PI / 4)), 1e-15);
    CHECK_NEAR(gad_lr_warmup_cosine(109, 10, 110, base, lo),
               lo + 0.5 * (base - lo) * (1 + cos(PI * 99 / 100)), 1e-15);
    CHECK(gad_lr_warmup_cosine(110, 10, 110, base, lo) == lo);
    CHECK(gad_lr_warmup_cosine(1000, 10, 110, base, lo) == lo);
    /* monotone: up through the warm-up, down after */
    for (int64_t s = 1; s < 120; s++) {
        double a = gad_lr_warmup_cosine(s - 1, 10, 110, base, lo);
        double b = gad_lr_warmup_cosine(s, 10, 110, base, lo);
        CHECK(s < 10 ? b > a : b <= a);
    }
    /* no warm-up: cosine from step 0 */
    CHECK(gad_lr_warmup_cosine(0, 0, 100, 2.0, 0) == 2.0);
    CHECK_NEAR(gad_lr_warmup_cosine(50, 0, 100, 2.0, 0), 1.0, 1e-15);
    CHECK(gad_lr_warmup_cosine(100, 0, 100, 2.0, 0) == 0);
    /* total <= warmup: the warm-up runs, then min_lr */
    CHECK_NEAR(gad_lr_warmup_cosine(4, 10, 5, base, lo), 0.5, 1e-15);
    CHECK(gad_lr_warmup_cosine(10, 10, 5, base, lo) == lo);
    CHECK(gad_lr_warmup_cosine(10, 10, 10, base, lo) == lo);
    /* negative step and warm-up count as 0 */
    CHECK_NEAR(gad_lr_warmup_cosine(-3, 10, 110, base, lo), 0.1, 1e-15);
    CHECK(gad_lr_warmup_cosine(0, -5, 100, 2.0, 0) == 2.0);
    CHECK_OK();
}

/* --------------------------------------------------------------- errors */

TEST(constructor_errors) {
    LEAK_BEGIN();
    const double v[2] = {1, 2};
    int64_t two = 2;
    gad_tensor *p = leaf64(v, 2);
    gad_tensor *nl = gad_from_f64(v, &two, 1); /* not a leaf */
    gad_tensor *i64 = gad_zeros(&two, 1, GAD_I64);
    gad_tensor *ok[1] = {p};

    CHECK(gad_sgd_new(ok, -1, NULL) == NULL);
    CHECK(msg_has("-1"));
    CHECK_ERR(GAD_ERR_DOMAIN, "sgd_new");
    CHECK(gad_adamw_new(NULL, 1, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "adamw_new");
    gad_tensor *withnull[2] = {p, NULL};
    CHECK(gad_sgd_new(withnull, 2, NULL) == NULL);
    CHECK(msg_has("params[1]"));
    CHECK_ERR(GAD_ERR_DOMAIN, "sgd_new");
    gad_tensor *withint[2] = {p, i64};
    CHECK(gad_adamw_new(withint, 2, NULL) == NULL);
    CHECK(msg_has("params[1]") && msg_has("i64"));
    CHECK_ERR(GAD_ERR_DTYPE, "adamw_new");
    CHECK(gad_sgd_new(withint, 2, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "sgd_new");
    gad_tensor *withnl[2] = {p, nl};
    CHECK(gad_sgd_new(withnl, 2, NULL) == NULL);
    CHECK(msg_has("leaf"));
    CHECK_ERR(GAD_ERR_DOMAIN, "sgd_new");
    /* a result of an op is not a leaf either */
    gad_scope_begin();
    gad_tensor *tracked[1] = {gad_mul_scalar(p, 2)};
    CHECK(gad_adamw_new(tracked, 1, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "adamw_new");
    gad_scope_end();
    gad_tensor *twice[2] = {p, p};
    CHECK(gad_sgd_new(twice, 2, NULL) == NULL);
    CHECK(msg_has("params[0] and params[1]"));
    CHECK_ERR(GAD_ERR_DOMAIN, "sgd_new");

    /* bad hyperparameters: a domain error naming the value */
    CHECK(gad_sgd_new(ok, 1, &(gad_sgd_opts){.lr = -0.5}) == NULL);
    CHECK(msg_has("lr = -0.5"));
    CHECK_ERR(GAD_ERR_DOMAIN, "sgd_new");
    CHECK(gad_sgd_new(ok, 1, &(gad_sgd_opts){.momentum = -0.25}) == NULL);
    CHECK(msg_has("momentum = -0.25"));
    CHECK_ERR(GAD_ERR_DOMAIN, "sgd_new");
    CHECK(gad_sgd_new(ok, 1, &(gad_sgd_opts){.nesterov = 1}) == NULL);
    CHECK(msg_has("nesterov"));
    CHECK_ERR(GAD_ERR_DOMAIN, "sgd_new");
    CHECK(gad_sgd_new(ok, 1, &(gad_sgd_opts){.weight_decay = -1}) == NULL);
    CHECK(msg_has("weight_decay = -1"));
    CHECK_ERR(GAD_ERR_DOMAIN, "sgd_new");
    CHECK(gad_sgd_new(ok, 1, &(gad_sgd_opts){.lr = NAN}) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "sgd_new");
    CHECK(gad_adamw_new(ok, 1, &(gad_adamw_opts){.lr = -1}) == NULL);
    CHECK(msg_has("lr = -1"));
    CHECK_ERR(GAD_ERR_DOMAIN, "adamw_new");
    CHECK(gad_adamw_new(ok, 1, &(gad_adamw_opts){.beta1 = 1}) == NULL);
    CHECK(msg_has("beta1 = 1"));
    CHECK_ERR(GAD_ERR_DOMAIN, "adamw_new");
    CHECK(gad_adamw_new(ok, 1, &(gad_adamw_opts){.beta1 = -0.1}) == NULL);
    CHECK(msg_has("beta1 = -0.1"));
    CHECK_ERR(GAD_ERR_DOMAIN, "adamw_new");
    CHECK(gad_adamw_new(ok, 1, &(gad_adamw_opts){.beta2 = 1.5}) == NULL);
    CHECK(msg_has("beta2 = 1.5"));
    CHECK_ERR(GAD_ERR_DOMAIN, "adamw_new");
    CHECK(gad_adamw_new(ok, 1, &(gad_adamw_opts){.eps = -1e-8}) == NULL);
    CHECK(msg_has("eps = -1e-08"));
    CHECK_ERR(GAD_ERR_DOMAIN, "adamw_new");
    CHECK(gad_adamw_new(ok, 1, &(gad_adamw_opts){.weight_decay = -0.01}) == NULL);
    CHECK(msg_has("weight_decay = -0.01"));
    CHECK_ERR(GAD_ERR_DOMAIN, "adamw_new");

    /* the first error of the thread is kept */
    CHECK(gad_sgd_new(ok, -1, NULL) == NULL);
    CHECK(gad_adamw_new(ok, 1, &(gad_adamw_opts){.lr = -1}) == NULL);
    CHECK(msg_has("n = -1"));
    CHECK_ERR(GAD_ERR_DOMAIN, "sgd_new");

    /* an optimizer over no parameters is valid */
    gad_optim *empty = gad_adamw_new(NULL, 0, NULL);
    CHECK(empty != NULL);
    CHECK(gad_optim_step(empty, NULL) == GAD_OK);
    CHECK(gad_optim_steps(empty) == 1);
    gad_optim_free(empty);
    gad_optim_free(NULL);
    CHECK_OK();
    gad_release(p);
    gad_release(nl);
    gad_release(i64);
    LEAK_END();
}

TEST(step_errors) {
    LEAK_BEGIN();
    const float v[6] = {1, 2, 3, 4, 5, 6};
    const int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    int64_t three = 3;
    gad_tensor *p0 = gad_requires_grad(gad_from_f32(v, s23, 2));
    gad_tensor *p1 = leaf32(v, 3);
    gad_tensor *ps[2] = {p0, p1};
    gad_optim *opt = gad_adamw_new(ps, 2, NULL);
    gad_optim *sgd = gad_sgd_new(ps, 2, &(gad_sgd_opts){.momentum = 0.9});
    gad_scope_begin();
    gad_tensor *g0 = gad_ones(s23, 2, GAD_F32), *g1 = gad_ones(&three, 1, GAD_F32);

    gad_tensor *bad_shape[2] = {g0, gad_ones(s32, 2, GAD_F32)};
    CHECK(gad_optim_step(opt, bad_shape) == GAD_ERR_SHAPE);
    CHECK(msg_has("grads[1]") && msg_has("[3,2]") && msg_has("[3]"));
    CHECK_ERR(GAD_ERR_SHAPE, "optim_step");
    gad_tensor *bad_shape0[2] = {gad_ones(s32, 2, GAD_F32), g1};
    CHECK(gad_optim_step(sgd, bad_shape0) == GAD_ERR_SHAPE);
    CHECK(msg_has("[3,2]") && msg_has("[2,3]"));
    CHECK_ERR(GAD_ERR_SHAPE, "optim_step");
    gad_tensor *bad_dtype[2] = {g0, gad_ones(&three, 1, GAD_F64)};
    CHECK(gad_optim_step(opt, bad_dtype) == GAD_ERR_DTYPE);
    CHECK(msg_has("grads[1]") && msg_has("f64") && msg_has("f32"));
    CHECK_ERR(GAD_ERR_DTYPE, "optim_step");
    gad_tensor *bad_int[2] = {g0, gad_zeros(&three, 1, GAD_I64)};
    CHECK(gad_optim_step(sgd, bad_int) == GAD_ERR_DTYPE);
    CHECK_ERR(GAD_ERR_DTYPE, "optim_step");
    gad_tensor *with_null[2] = {g0, NULL};
    CHECK(gad_optim_step(opt, with_null) == GAD_ERR_DOMAIN);
    CHECK(msg_has("grads[1]"));
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_step");
    CHECK(gad_optim_step(NULL, with_null) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_step");
    gad_scope_end();

    /* a failed step changed nothing: no update, no count, no buffer */
    CHECK_VALUES(p0, 0, 1, 2, 3, 4, 5, 6);
    CHECK_VALUES(p1, 0, 1, 2, 3);
    CHECK(gad_optim_steps(opt) == 0 && gad_optim_steps(sgd) == 0);
    CHECK(gad_optim_state(sgd, NULL, NULL, 0) == 1);

    /* the other NULL-optimizer entry points */
    gad_optim_zero_grad(NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_zero_grad");
    CHECK(isnan(gad_optim_lr(NULL)));
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_lr");
    CHECK(gad_optim_steps(NULL) == -1);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_steps");
    gad_optim_set_lr(NULL, 0.1);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_set_lr");
    CHECK(gad_optim_state(NULL, NULL, NULL, 0) == -1);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_state");
    CHECK(gad_optim_state(opt, NULL, NULL, 3) == -1);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_state");
    CHECK(gad_optim_state(opt, NULL, NULL, -1) == -1);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_state");

    gad_optim_free(opt);
    gad_optim_free(sgd);
    gad_release(p0);
    gad_release(p1);
    LEAK_END();
}

/* ------------------------------------------------- a model that trains */

/* SPEC §6.2: fit sin on [-pi, pi) with a 1-32-32-1 tanh MLP and AdamW(lr
 * 0.01, 0.9/0.999, eps 1e-8, wd 0) for 200 steps; mse at step 160 (before
 * its update) must be below 1e-3. use_slots: gad_backward and a step with
 * grads NULL instead of gad_grad. Returns the final loss. */
static double sine_fit(int use_slots, double *mse160) {
    enum { N = 64, H = 32 };
    float xv[N], yv[N];
    for (int i = 0; i < N; i++) {
        double x = -PI + 2 * PI * i / N;
        xv[i] = (float)x;
        yv[i] = (float)sin(x);
    }
    const int64_t sx[2] = {N, 1}, s1[2] = {1, H}, s2[2] = {H, H}, s3[2] = {H, 1};
    const int64_t hb = H, ob = 1;
    gad_tensor *x = gad_from_f32(xv, sx, 2), *y = gad_from_f32(yv, sx, 2);
    gad_tensor *r1 = gad_randn(s1, 2, 1), *r2 = gad_randn(s2, 2, 2),
               *r3 = gad_randn(s3, 2, 3);
    gad_tensor *w[6];
    w[0] = gad_requires_grad(gad_mul_scalar(r1, 0.4));
    w[1] = gad_requires_grad(gad_zeros(&hb, 1, GAD_F32));
    w[2] = gad_requires_grad(gad_mul_scalar(r2, 0.2));
    w[3] = gad_requires_grad(gad_zeros(&hb, 1, GAD_F32));
    w[4] = gad_requires_grad(gad_mul_scalar(r3, 0.2));
    w[5] = gad_requires_grad(gad_zeros(&ob, 1, GAD_F32));
    gad_release(r1), gad_release(r2), gad_release(r3);
    gad_adamw_opts o = {.lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                        .no_weight_decay = 1};
    gad_optim *opt = gad_adamw_new(w, 6, &o);
    CHECK(opt != NULL);
    double mse = NAN;
    for (int step = 0; step < 200; step++) {
        gad_scope_begin();
        gad_tensor *h1 = gad_tanh(gad_add(gad_matmul(x, w[0]), w[1]));
        gad_tensor *h2 = gad_tanh(gad_add(gad_matmul(h1, w[2]), w[3]));
        gad_tensor *out = gad_add(gad_matmul(h2, w[4]), w[5]);
        gad_tensor *loss = gad_mean_all(gad_square(gad_sub(out, y)));
        mse = gad_item(loss);
        if (step == 160) *mse160 = mse;
        if (use_slots) {
            gad_optim_zero_grad(opt);
            CHECK(gad_backward(loss) == GAD_OK);
            CHECK(gad_optim_step(opt, NULL) == GAD_OK);
        } else {
            gad_tensor *g[6];
            CHECK(gad_grad(loss, w, 6, g) == GAD_OK);
            CHECK(gad_optim_step(opt, g) == GAD_OK);
        }
        gad_scope_end();
    }
    gad_optim_zero_grad(opt);
    gad_optim_free(opt);
    for (int k = 0; k < 6; k++) gad_release(w[k]);
    gad_release(x);
    gad_release(y);
    return mse;
}

TEST(adamw_trains_sine) {
    LEAK_BEGIN();
    double m160 = NAN, m160b = NAN;
    double last = sine_fit(0, &m160);
    printf("     sine fit: mse at step 160 %.6f, at step 199 %.6f\n", m160,
           last);
    CHECK_MSG(m160 < 1e-3, "mse at step 160 = %g", m160);
    /* the backward + slots path makes exactly the same updates */
    double lastb = sine_fit(1, &m160b);
    CHECK(m160b == m160 && lastb == last);
    CHECK_OK();
    LEAK_END();
}

TEST(sgd_trains_quadratic) {
    LEAK_BEGIN();
    /* min |p - t|^2 with momentum: converges to t */
    const double pv[3] = {5, -3, 2};
    int64_t three = 3;
    const double tv[3] = {1, 2, 3};
    gad_tensor *p = leaf64(pv, 3), *t = gad_from_f64(tv, &three, 1);
    gad_optim *opt = gad_sgd_new(&p, 1, &(gad_sgd_opts){.lr = 0.05, .momentum = 0.9});
    for (int s = 0; s < 300; s++) {
        gad_scope_begin();
        gad_tensor *loss = gad_sum_all(gad_square(gad_sub(p, t)));
        gad_tensor *g;
        CHECK(gad_grad(loss, &p, 1, &g) == GAD_OK);
        CHECK(gad_optim_step(opt, &g) == GAD_OK);
        gad_scope_end();
    }
    CHECK_VALUES(p, 1e-6, 1, 2, 3);
    gad_optim_free(opt);
    gad_release(p);
    gad_release(t);
    CHECK_OK();
    LEAK_END();
}

int main(void) {
    RUN(sgd_reference);
    RUN(adamw_reference);
    RUN(sgd_plain_and_decay);
    RUN(sgd_momentum);
    RUN(sgd_nesterov);
    RUN(sgd_default_lr);
    RUN(adamw_defaults);
    RUN(adamw_f64_custom);
    RUN(adamw_large_f32);
    RUN(reference_not_contracted);
    RUN(updates_bit_exact);
    RUN(in_place_keeps_identity);
    RUN(copy_on_write_protects_graph);
    RUN(multi_tensor_update_bit_exact);
    RUN(gradient_aliasing_a_parameter);
    RUN(non_contiguous_parameter);
    RUN(step_with_leaf_slots);
    RUN(set_lr_and_steps);
    RUN(state_round_trip_adamw);
    RUN(state_round_trip_sgd);
    RUN(state_names_and_cap);
    RUN(load_state_rejects);
    RUN(clip_grad_norm_values);
    RUN(clip_grad_norm_shared_and_strided);
    RUN(clip_grad_norm_large);
    RUN(clip_grad_norm_half);
    RUN(clip_grad_norm_errors);
    RUN(lr_warmup_cosine);
    RUN(constructor_errors);
    RUN(step_errors);
    RUN(adamw_trains_sine);
    RUN(sgd_trains_quadratic);
    return test_summary();
}
