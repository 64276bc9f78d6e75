/* test_nn.c: the neural-network layers, losses and initializers (src/nn):
 * SPEC §3.4 / §4.6 reference values, shapes, gradients against finite
 * differences (f64), statistics of dropout and the initializers, every
 * error case, SPEC §6.6 classify_blobs end to end, and leaks (with and
 * without a scope open at the call site). */
#include "test.h"

#include <stdint.h>

/* ---------------------------------------------------------------- helpers */

static int64_t live_tensors(void) {
    gad_mem_stats ms;
    gad_mem_stats_get(&ms);
    return ms.live_tensors;
}

static gad_tensor *f64v(const double *d, const int64_t *shape, int rank) {
    return gad_from_f64(d, shape, rank);
}

/* A leaf (f64) of the given shape with values from a seeded normal. */
static gad_tensor *leaf64(const int64_t *shape, int rank, uint64_t seed) {
    gad_rng *r = gad_rng_new(seed);
    gad_tensor *t = gad_requires_grad(gad_rng_normal_tensor(r, shape, rank, GAD_F64, 0, 1));
    gad_rng_free(r);
    return t;
}

static gad_tensor *idx64(const int64_t *d, const int64_t *shape, int rank) {
    return gad_from_i64(d, shape, rank);
}

/* Runs gad_gradcheck and reports the worst element on failure. */
#define CHECK_GRADCHECK(fn, ctx, ins, n)                                       \
    do {                                                                       \
        gad_gradcheck_result r_;                                               \
        gad_status st_ = gad_gradcheck((fn), (ctx), (ins), (n), NULL, &r_);   \
        CHECK_MSG(st_ == GAD_OK && r_.passed && r_.checked > 0,                \
                  "%s: status %s, input %d index %lld analytic %.10g numeric " \
                  "%.10g, checked %lld (%s)",                                  \
                  #fn, gad_status_str(st_), r_.input, (long long)r_.index,     \
                  r_.analytic, r_.numeric, (long long)r_.checked,              \
                  gad_last_error() ? gad_last_error()->text : "");             \
        gad_clear_error();                                                     \
    } while (0)

/* The pending error has this kind and op and its message contains `sub`. */
#define CHECK_ERR_MSG(kind_, opname, sub)                                      \
    do {                                                                       \
        const gad_error *e2_ = gad_last_error();                               \
        CHECK_MSG(e2_ && strstr(e2_->message, (sub)) != NULL,                  \
                  "message '%s' lacks '%s'", e2_ ? e2_->message : "(none)",    \
                  (sub));                                                      \
        CHECK_ERR(kind_, opname);                                              \
    } while (0)

/* ----------------------------------------------------------------- linear */

TEST(linear_values) {
    gad_scope_begin();
    const double xv[] = {1, 2, 3, 4, 5, 6};
    const double wv[] = {1, 0, 0, 1, 1, 1};
    const double bv[] = {0.5, -1};
    gad_tensor *x = f64v(xv, (int64_t[]){2, 3}, 2);
    gad_tensor *w = f64v(wv, (int64_t[]){3, 2}, 2);
    gad_tensor *b = f64v(bv, (int64_t[]){2}, 1);
    gad_tensor *y = gad_linear(x, w, NULL);
    CHECK_SHAPE(y, 2, 2);
    CHECK_VALUES(y, 1e-12, 4, 5, 10, 11);
    y = gad_linear(x, w, b);
    CHECK_SHAPE(y, 2, 2);
    CHECK_VALUES(y, 1e-12, 4.5, 4, 10.5, 10);
    /* a 1-D x gives [out] (NumPy's matmul rule, D2) */
    gad_tensor *x1 = f64v(xv, (int64_t[]){3}, 1);
    y = gad_linear(x1, w, b);
    CHECK_SHAPE(y, 2);
    CHECK_VALUES(y, 1e-12, 4.5, 4);
    /* batched x [2,1,3] -> [2,1,2] */
    gad_tensor *x3 = f64v(xv, (int64_t[]){2, 1, 3}, 3);
    y = gad_linear(x3, w, b);
    CHECK_SHAPE(y, 2, 1, 2);
    CHECK_VALUES(y, 1e-12, 4.5, 4, 10.5, 10);
    /* f32 */
    gad_tensor *yf = gad_linear(gad_cast(x, GAD_F32), gad_cast(w, GAD_F32),
                                gad_cast(b, GAD_F32));
    CHECK(gad_dtype(yf) == GAD_F32);
    CHECK_VALUES(yf, 1e-6, 4.5, 4, 10.5, 10);
    /* on the tape when an input is */
    CHECK(!gad_is_tracked(y));
    gad_requires_grad(w);
    CHECK(gad_is_tracked(gad_linear(x, w, NULL)));
    CHECK_OK();
    gad_scope_end();
}

static gad_tensor *fn_linear(void *ctx, gad_tensor *const *in, int n) {
    (void)ctx;
    return gad_linear(in[0], in[1], n > 2 ? in[2] : NULL);
}

TEST(linear_grad) {
    gad_scope_begin();
    gad_tensor *w = leaf64((int64_t[]){3, 4}, 2, 2);
    gad_tensor *b = leaf64((int64_t[]){4}, 1, 3);
    const int64_t shapes[][3] = {{3}, {5, 3}, {2, 5, 3}};
    const int ranks[] = {1, 2, 3};
    for (int s = 0; s < 3; s++) {
        gad_tensor *x = leaf64(shapes[s], ranks[s], 10 + (uint64_t)s);
        gad_tensor *in[3] = {x, w, b};
        CHECK_GRADCHECK(fn_linear, NULL, in, 2); /* without bias */
        CHECK_GRADCHECK(fn_linear, NULL, in, 3); /* with bias */
    }
    /* the bias gradient of sum(linear) is the row count */
    gad_tensor *x = leaf64((int64_t[]){5, 3}, 2, 4);
    gad_tensor *g[1];
    CHECK(gad_grad(gad_sum_all(gad_linear(x, w, b)), &b, 1, g) == GAD_OK);
    CHECK_VALUES(g[0], 1e-12, 5, 5, 5, 5);
    CHECK_OK();
    gad_scope_end();
}

/* the largest |t| (0 for an empty t) */
static double max_abs(gad_tensor *t) {
    gad_tensor *c = gad_contiguous(gad_cast(t, GAD_F64));
    const double *v = c ? gad_data(c) : NULL;
    double m = 0;
    for (int64_t i = 0; v && i < gad_numel(c); i++) m = fmax(m, fabs(v[i]));
    return m;
}

/* x @ w + b then act, as separate tracked ops: what gad_linear_act fuses */
static gad_tensor *linear_then(gad_tensor *x, gad_tensor *w, gad_tensor *b, gad_act act) {
    gad_tensor *y = gad_matmul(x, w);
    if (b) y = gad_add(y, b);
    switch (act) {
    case GAD_ACT_RELU: return gad_relu(y);
    case GAD_ACT_GELU: return gad_gelu(y);
    case GAD_ACT_GELU_ERF: return gad_gelu_erf(y);
    case GAD_ACT_SILU: return gad_silu(y);
    default: return y;
    }
}

/* The fused layer against the composition, f32 and f64, at sizes where the
 * passes split rows over threads and blocks: the forward bit for bit, the
 * gradients of x and w bit for bit (the same products of the same gz), b's
 * within rounding, and every result the same for 1 and 2 threads. */
TEST(linear_act_matches_composition) {
    /* x's shape (rank, dims; the last is in) and out: one block of rows; a
     * few hundred rows (blocks, threads); a batch; one row 20000 wide */
    static const struct {
        int rank;
        int64_t x[3], out;
    } cs[] = {{2, {7, 5}, 3}, {2, {300, 70}, 129}, {3, {6, 50, 33}, 17}, {2, {1, 3}, 20000}};
    int threads = gad_num_threads();
    gad_rng *r = gad_rng_new(31);
    for (int s = 0; s < 4; s++)
        for (int dt = 0; dt < 2; dt++)
            for (int act = GAD_ACT_NONE; act <= GAD_ACT_SILU; act++)
                for (int bias = 0; bias < 2; bias++) {
                    gad_scope_begin();
                    gad_dtype_t d = dt ? GAD_F64 : GAD_F32;
                    int rk = cs[s].rank;
                    int64_t in = cs[s].x[rk - 1], out = cs[s].out, ys[3];
                    memcpy(ys, cs[s].x, sizeof ys);
                    ys[rk - 1] = out;
                    gad_tensor *x = gad_requires_grad(gad_rng_normal_tensor(r, cs[s].x, rk, d, 0, 1));
                    gad_tensor *w = gad_requires_grad(
                        gad_rng_normal_tensor(r, (int64_t[]){in, out}, 2, d, 0, 0.3));
                    gad_tensor *b =
                        bias ? gad_requires_grad(gad_rng_normal_tensor(r, &out, 1, d, 0, 1)) : NULL;
                    gad_tensor *gy = gad_rng_normal_tensor(r, ys, rk, d, 0, 1);
                    gad_tensor *p[3] = {x, w, b}, *gf[2][3], *yf[2], *gu[3];
                    for (int t = 0; t < 2; t++) {
                        gad_set_num_threads(t ? 2 : 1);
                        yf[t] = gad_linear_act(x, w, b, (gad_act)act);
                        CHECK(gad_grad_ex(yf[t], gy, p, bias ? 3 : 2, gf[t], 0) == GAD_OK);
                    }
                    gad_set_num_threads(threads);
                    gad_tensor *yu = linear_then(x, w, b, (gad_act)act);
                    CHECK(gad_grad_ex(yu, gy, p, bias ? 3 : 2, gu, 0) == GAD_OK);
                    CHECK_MSG(test_same_bits(yf[0], yu) && test_same_bits(yf[1], yu),
                              "case %d %s act %d bias %d: forward", s, dt ? "f64" : "f32", act,
                              bias);
                    for (int i = 0; i < 2 + bias; i++) {
                        CHECK_MSG(test_same_bits(gf[0][i], gf[1][i]),
                                  "case %d act %d: gradient %d depends on the threads", s, act, i);
                        double tol = dt ? 1e-12 : 2e-5, scale = max_abs(gu[i]);
                        double err = max_abs(gad_sub(gf[0][i], gu[i]));
                        CHECK_MSG(i == 2 ? err <= tol * (scale + 1) : test_same_bits(gf[0][i], gu[i]),
                                  "case %d %s act %d bias %d: gradient %d off by %g", s,
                                  dt ? "f64" : "f32", act, bias, i, err);
                    }
                    CHECK_OK();
                    gad_scope_end();
                }
    gad_rng_free(r);
}

/* With x a constant (a first layer's input), NONE and RELU keep x and not
 * w, as gad_matmul does: an optimizer step taken while the graph lives
 * updates w in place instead of copying it first (copy-on-write would
 * protect a saved w). Their second derivatives (taken with tracked ops)
 * match the composition's. */
TEST(linear_act_first_layer) {
    gad_rng *r = gad_rng_new(7);
    for (int act = GAD_ACT_NONE; act <= GAD_ACT_RELU; act++) {
        gad_scope_begin();
        gad_tensor *x = gad_rng_normal_tensor(r, (int64_t[]){4, 3}, 2, GAD_F64, 0, 1);
        gad_tensor *w = gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){3, 5}, 2, GAD_F64, 0, 1));
        gad_tensor *b = gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){5}, 1, GAD_F64, 0, 1));
        gad_tensor *p[2] = {w, b}, *g[2][2], *h[2][2];
        for (int f = 0; f < 2; f++) { /* fused, then the composition */
            gad_tensor *y = f ? linear_then(x, w, b, (gad_act)act) : gad_linear_act(x, w, b, (gad_act)act);
            CHECK(gad_grad_ex(gad_sum_all(gad_mul(y, y)), NULL, p, 2, g[f], GAD_CREATE_GRAPH) == GAD_OK);
            gad_tensor *s = gad_add(gad_sum_all(gad_mul(g[f][0], g[f][0])), gad_sum_all(g[f][1]));
            CHECK(gad_grad(s, p, 2, h[f]) == GAD_OK);
        }
        for (int i = 0; i < 2; i++) {
            CHECK_MSG(max_abs(gad_sub(g[0][i], g[1][i])) < 1e-12, "act %d gradient %d", act, i);
            CHECK_MSG(max_abs(gad_sub(h[0][i], h[1][i])) < 1e-10, "act %d second derivative %d", act, i);
        }
        const void *before = gad_data(w);
        gad_tensor *y = gad_linear_act(x, w, b, (gad_act)act), *gw[2];
        CHECK(gad_grad(gad_sum_all(y), p, 2, gw) == GAD_OK);
        gad_sgd_opts o = {.lr = 0.1};
        gad_optim *opt = gad_sgd_new(p, 2, &o);
        CHECK(opt && gad_optim_step(opt, gw) == GAD_OK);
        CHECK_MSG(gad_data(w) == before, "act %d: the step copied w", act);
        gad_optim_free(opt);
        CHECK_OK();
        gad_scope_end();
    }
    gad_rng_free(r);
}

TEST(linear_errors) {
    gad_scope_begin();
    gad_tensor *x = gad_zeros((int64_t[]){2, 3}, 2, GAD_F32);
    gad_tensor *w = gad_zeros((int64_t[]){4, 5}, 2, GAD_F32);
    gad_tensor *w3 = gad_zeros((int64_t[]){3, 5}, 2, GAD_F32);
    CHECK(gad_linear(x, w, NULL) == NULL);
    CHECK_ERR_MSG(GAD_ERR_SHAPE, "linear", "x [2,3] vs w [4,5]");
    CHECK(gad_linear(x, gad_zeros((int64_t[]){3}, 1, GAD_F32), NULL) == NULL);
    CHECK_ERR_MSG(GAD_ERR_SHAPE, "linear", "w [3]");
    CHECK(gad_linear(x, gad_zeros((int64_t[]){1, 3, 5}, 3, GAD_F32), NULL) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "linear");
    CHECK(gad_linear(gad_scalar_f32(1), w3, NULL) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "linear");
    CHECK(gad_linear(x, w3, gad_zeros((int64_t[]){4}, 1, GAD_F32)) == NULL);
    CHECK_ERR_MSG(GAD_ERR_SHAPE, "linear", "b [4]");
    CHECK(gad_linear(x, w3, gad_zeros((int64_t[]){1, 5}, 2, GAD_F32)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "linear");
    CHECK(gad_linear(x, gad_zeros((int64_t[]){3, 5}, 2, GAD_F64), NULL) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "linear");
    CHECK(gad_linear(x, w3, gad_zeros((int64_t[]){5}, 1, GAD_F64)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "linear");
    CHECK(gad_linear(gad_zeros((int64_t[]){2, 3}, 2, GAD_I64),
                     gad_zeros((int64_t[]){3, 5}, 2, GAD_I64), NULL) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "linear");
    CHECK(gad_linear(NULL, w3, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "linear");
    CHECK(gad_linear(x, NULL, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "linear");
    /* a NULL from a failed inner expression keeps the first error */
    CHECK(gad_linear(gad_matmul(x, x), w3, NULL) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "matmul");
    gad_scope_end();
}

/* --------------------------------------------------------------- mse_loss */

TEST(mse_values) {
    gad_scope_begin();
    const double pv[] = {1, 2, 3, 4}, tv[] = {0, 2, 5, 3};
    gad_tensor *p = gad_requires_grad(f64v(pv, (int64_t[]){2, 2}, 2));
    gad_tensor *t = gad_requires_grad(f64v(tv, (int64_t[]){2, 2}, 2));
    gad_tensor *none = gad_mse_loss(p, t, GAD_REDUCE_NONE);
    CHECK_SHAPE(none, 2, 2);
    CHECK_VALUES(none, 0, 1, 0, 4, 1);
    gad_tensor *sum = gad_mse_loss(p, t, GAD_REDUCE_SUM);
    CHECK(gad_rank(sum) == 0);
    CHECK_VALUES(sum, 0, 6);
    gad_tensor *mean = gad_mse_loss(p, t, GAD_REDUCE_MEAN);
    CHECK(gad_rank(mean) == 0);
    CHECK_VALUES(mean, 0, 1.5);
    /* d mean / d pred = 2 d / N; the target is held constant */
    gad_tensor *in[2] = {p, t}, *g[2];
    CHECK(gad_grad(mean, in, 2, g) == GAD_OK);
    CHECK_VALUES(g[0], 1e-15, 0.5, 0, -1, 0.5);
    CHECK_VALUES(g[1], 0, 0, 0, 0, 0);
    /* f32 */
    gad_tensor *m32 = gad_mse_loss(gad_cast(p, GAD_F32), gad_cast(t, GAD_F32),
                                   GAD_REDUCE_MEAN);
    CHECK(gad_dtype(m32) == GAD_F32);
    CHECK_VALUES(m32, 0, 1.5);
    /* rank 0 */
    CHECK_VALUES(gad_mse_loss(gad_scalar_f64(3), gad_scalar_f64(1), GAD_REDUCE_MEAN), 0, 4);
    CHECK_OK();
    gad_scope_end();
}

static gad_tensor *fn_mse(void *ctx, gad_tensor *const *in, int n) {
    (void)n;
    return gad_mse_loss(in[0], in[1], *(const gad_reduction *)ctx);
}

TEST(mse_grad) {
    gad_scope_begin();
    gad_tensor *p = leaf64((int64_t[]){3, 4}, 2, 5);
    gad_tensor *t = gad_detach(leaf64((int64_t[]){3, 4}, 2, 6));
    gad_tensor *in[2] = {p, t};
    const gad_reduction reds[] = {GAD_REDUCE_MEAN, GAD_REDUCE_SUM, GAD_REDUCE_NONE};
    for (int i = 0; i < 3; i++) CHECK_GRADCHECK(fn_mse, (void *)&reds[i], in, 2);
    CHECK_OK();
    gad_scope_end();
}

TEST(mse_errors) {
    gad_scope_begin();
    gad_tensor *a = gad_zeros((int64_t[]){3}, 1, GAD_F32);
    gad_tensor *b = gad_zeros((int64_t[]){3, 1}, 2, GAD_F32);
    /* g broadcast [3] against [3,1] to [3,3]; gad requires equal shapes */
    CHECK(gad_mse_loss(a, b, GAD_REDUCE_MEAN) == NULL);
    CHECK_ERR_MSG(GAD_ERR_SHAPE, "mse_loss", "pred [3] and target [3,1]");
    CHECK(gad_mse_loss(a, gad_zeros((int64_t[]){4}, 1, GAD_F32), GAD_REDUCE_SUM) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "mse_loss");
    CHECK(gad_mse_loss(a, gad_scalar_f32(0), GAD_REDUCE_SUM) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "mse_loss");
    CHECK(gad_mse_loss(a, gad_zeros((int64_t[]){3}, 1, GAD_F64), GAD_REDUCE_MEAN) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "mse_loss");
    CHECK(gad_mse_loss(gad_zeros((int64_t[]){3}, 1, GAD_I64),
                       gad_zeros((int64_t[]){3}, 1, GAD_I64), GAD_REDUCE_MEAN) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "mse_loss");
    CHECK(gad_mse_loss(a, a, (gad_reduction)7) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "mse_loss");
    CHECK(gad_mse_loss(NULL, a, GAD_REDUCE_MEAN) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "mse_loss");
    CHECK(gad_mse_loss(a, NULL, GAD_REDUCE_MEAN) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "mse_loss");
    gad_scope_end();
}

/* ------------------------------------------------ nll_loss, cross_entropy */

static const float ce_logits[] = {1, 2, 3, 0, 0, 0};
static const int64_t ce_targets[] = {2, 0};

TEST(cross_entropy_reference) {
    gad_scope_begin();
    gad_tensor *lg = gad_requires_grad(gad_from_f32(ce_logits, (int64_t[]){2, 3}, 2));
    gad_tensor *t = idx64(ce_targets, (int64_t[]){2}, 1);
    gad_tensor *none = gad_cross_entropy(lg, t, GAD_REDUCE_NONE);
    CHECK_SHAPE(none, 2);
    CHECK_VALUES(none, 1e-6, 0.40760595, 1.0986123);
    gad_tensor *sum = gad_cross_entropy(lg, t, GAD_REDUCE_SUM);
    CHECK(gad_rank(sum) == 0);
    CHECK_VALUES(sum, 1e-6, 1.5062182);
    gad_tensor *mean = gad_cross_entropy(lg, t, GAD_REDUCE_MEAN);
    CHECK(gad_rank(mean) == 0);
    CHECK_VALUES(mean, 1e-6, 0.7531091);
    gad_tensor *g[1];
    CHECK(gad_grad(mean, &lg, 1, g) == GAD_OK);
    CHECK_VALUES(g[0], 1e-6, 0.04501529, 0.122364245, -0.16737953, -0.33333334,
                 0.16666666, 0.16666666);
    /* nll_loss of log_softmax gives the same values */
    gad_tensor *lp = gad_log_softmax(lg, -1);
    CHECK_VALUES(gad_nll_loss(lp, t, GAD_REDUCE_NONE), 1e-6, 0.40760595, 1.0986123);
    CHECK_VALUES(gad_nll_loss(lp, t, GAD_REDUCE_SUM), 1e-6, 1.5062182);
    CHECK_VALUES(gad_nll_loss(lp, t, GAD_REDUCE_MEAN), 1e-6, 0.7531091);
    /* nll's own values: -lp[i, t_i] */
    const double lpv[] = {-1, -2, -3, -4, -5, -6};
    gad_tensor *l2 = gad_requires_grad(f64v(lpv, (int64_t[]){2, 3}, 2));
    const int64_t tv[] = {1, 2};
    gad_tensor *t2 = idx64(tv, (int64_t[]){2}, 1);
    CHECK_VALUES(gad_nll_loss(l2, t2, GAD_REDUCE_NONE), 0, 2, 6);
    gad_tensor *m2 = gad_nll_loss(l2, t2, GAD_REDUCE_MEAN);
    CHECK_VALUES(m2, 0, 4);
    CHECK(gad_grad(m2, &l2, 1, g) == GAD_OK);
    CHECK_VALUES(g[0], 0, 0, -0.5, 0, 0, 0, -0.5);
    /* a non-contiguous targets tensor */
    const int64_t tw[] = {1, 9, 2, 9};
    gad_tensor *ts = gad_select(idx64(tw, (int64_t[]){2, 2}, 2), 1, 0);
    CHECK(!gad_is_contiguous(ts));
    CHECK_VALUES(gad_nll_loss(l2, ts, GAD_REDUCE_NONE), 0, 2, 6);
    /* an empty batch */
    gad_tensor *e = gad_zeros((int64_t[]){0, 3}, 2, GAD_F32);
    gad_tensor *te = gad_zeros((int64_t[]){0}, 1, GAD_I64);
    CHECK_SHAPE(gad_cross_entropy(e, te, GAD_REDUCE_NONE), 0);
    CHECK_VALUES(gad_cross_entropy(e, te, GAD_REDUCE_SUM), 0, 0);
    CHECK_VALUES(gad_cross_entropy(e, te, GAD_REDUCE_MEAN), 0, NAN);
    CHECK_VALUES(gad_nll_loss(gad_zeros((int64_t[]){0, 0}, 2, GAD_F64), te,
                              GAD_REDUCE_MEAN), 0, NAN);
    CHECK_OK();
    gad_scope_end();
}

typedef struct nll_ctx {
    gad_reduction red;
    int ce;
    gad_tensor *targets;
} nll_ctx;

static gad_tensor *fn_nll(void *vctx, gad_tensor *const *in, int n) {
    (void)n;
    nll_ctx *c = vctx;
    return c->ce ? gad_cross_entropy(in[0], c->targets, c->red)
                 : gad_nll_loss(in[0], c->targets, c->red);
}

TEST(nll_ce_grad) {
    gad_scope_begin();
    gad_tensor *x = leaf64((int64_t[]){4, 5}, 2, 7);
    const int64_t tv[] = {0, 4, 2, 2};
    gad_tensor *t = idx64(tv, (int64_t[]){4}, 1);
    const gad_reduction reds[] = {GAD_REDUCE_MEAN, GAD_REDUCE_SUM, GAD_REDUCE_NONE};
    for (int ce = 0; ce < 2; ce++)
        for (int i = 0; i < 3; i++) {
            nll_ctx c = {reds[i], ce, t};
            CHECK_GRADCHECK(fn_nll, &c, &x, 1);
        }
    /* cross-entropy's mean gradient is (softmax - onehot) / B */
    gad_tensor *g[1];
    CHECK(gad_grad(gad_cross_entropy(x, t, GAD_REDUCE_MEAN), &x, 1, g) == GAD_OK);
    gad_tensor *want = gad_mul_scalar(
        gad_sub(gad_softmax(x, -1), gad_cast(gad_one_hot(t, 5), GAD_F64)), 0.25);
    CHECK_NEAR(gad_item(gad_amax(gad_flatten(gad_abs(gad_sub(g[0], want))), 0, 0)),
               0, 1e-12);
    CHECK_OK();
    gad_scope_end();
}

TEST(nll_ce_errors) {
    gad_scope_begin();
    gad_tensor *lg = gad_zeros((int64_t[]){2, 3}, 2, GAD_F32);
    const int64_t bad[] = {0, 3}, neg[] = {-1, 0}, ok[] = {0, 1};
    gad_tensor *tb = idx64(bad, (int64_t[]){2}, 1);
    gad_tensor *tn = idx64(neg, (int64_t[]){2}, 1);
    gad_tensor *t = idx64(ok, (int64_t[]){2}, 1);
    const char *ops[2] = {"nll_loss", "cross_entropy"};
    for (int ce = 0; ce < 2; ce++) {
        gad_tensor *(*f)(gad_tensor *, gad_tensor *, gad_reduction) =
            ce ? gad_cross_entropy : gad_nll_loss;
        const char *op = ops[ce];
        CHECK(f(lg, tb, GAD_REDUCE_MEAN) == NULL);
        CHECK_ERR_MSG(GAD_ERR_INDEX, op, "class 3");
        CHECK(f(lg, tn, GAD_REDUCE_NONE) == NULL);
        CHECK_ERR_MSG(GAD_ERR_INDEX, op, "class -1");
        CHECK(f(lg, tb, GAD_REDUCE_SUM) == NULL);
        CHECK_ERR_MSG(GAD_ERR_INDEX, op, "[0, 3)");
        CHECK(f(lg, gad_cast(t, GAD_F32), GAD_REDUCE_MEAN) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, op);
        CHECK(f(gad_zeros((int64_t[]){2, 3}, 2, GAD_I64), t, GAD_REDUCE_MEAN) == NULL);
        CHECK_ERR(GAD_ERR_DTYPE, op);
        CHECK(f(gad_zeros((int64_t[]){3}, 1, GAD_F32), t, GAD_REDUCE_MEAN) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, op);
        CHECK(f(gad_zeros((int64_t[]){1, 2, 3}, 3, GAD_F32), t, GAD_REDUCE_MEAN) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, op);
        CHECK(f(lg, gad_zeros((int64_t[]){2, 1}, 2, GAD_I64), GAD_REDUCE_MEAN) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, op);
        CHECK(f(lg, gad_zeros((int64_t[]){3}, 1, GAD_I64), GAD_REDUCE_MEAN) == NULL);
        CHECK_ERR_MSG(GAD_ERR_SHAPE, op, "targets [3]");
        CHECK(f(lg, t, (gad_reduction)-1) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, op);
        CHECK(f(NULL, t, GAD_REDUCE_MEAN) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, op);
        CHECK(f(lg, NULL, GAD_REDUCE_MEAN) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, op);
        /* C = 0: every class is out of bounds */
        CHECK(f(gad_zeros((int64_t[]){2, 0}, 2, GAD_F32), t, GAD_REDUCE_MEAN) == NULL);
        CHECK_ERR(GAD_ERR_INDEX, op);
    }
    CHECK(gad_cross_entropy(gad_zeros((int64_t[]){0, 0}, 2, GAD_F32),
                            gad_zeros((int64_t[]){0}, 1, GAD_I64), GAD_REDUCE_MEAN) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "cross_entropy");
    gad_scope_end();
}

/* ------------------------------------------------------------- layer_norm */

static const double ln_x[] = {1, 3, 6, 2, -1, 0.5};
static const double ln_w[] = {1, 2, 3, 4, 5, 6};

TEST(layer_norm_reference) {
    gad_scope_begin();
    gad_tensor *x32 = gad_cast(f64v(ln_x, (int64_t[]){2, 3}, 2), GAD_F32);
    gad_tensor *y = gad_layer_norm(x32, NULL, NULL, 1e-5);
    CHECK_SHAPE(y, 2, 3);
    CHECK(gad_dtype(y) == GAD_F32);
    CHECK_VALUES(y, 2e-6, -1.1355486, -0.1622213, 1.2977697, 1.2247407, -1.2247407, 0);
    /* SPEC D3: the gradient includes the variance path */
    gad_tensor *x = gad_requires_grad(f64v(ln_x, (int64_t[]){2, 3}, 2));
    gad_tensor *w = f64v(ln_w, (int64_t[]){2, 3}, 2);
    gad_tensor *loss = gad_sum_all(gad_mul(w, gad_layer_norm(x, NULL, NULL, 1e-5)));
    gad_tensor *g[1];
    CHECK(gad_grad(loss, &x, 1, g) == GAD_OK);
    CHECK_VALUES(g[0], 1.5e-3, -0.038, 0.065, -0.025, -0.408, -0.408, 0.816);
    /* gain and bias: y * gain + bias */
    const double gv[] = {2, 3, 4}, bv[] = {1, 0, -1};
    gad_tensor *gain = f64v(gv, (int64_t[]){3}, 1), *bias = f64v(bv, (int64_t[]){3}, 1);
    gad_tensor *plain = gad_layer_norm(x, NULL, NULL, 1e-5);
    gad_tensor *aff = gad_layer_norm(x, gain, bias, 1e-5);
    double p[6], a[6];
    gad_read_f64(plain, p, 6);
    gad_read_f64(aff, a, 6);
    for (int i = 0; i < 6; i++) CHECK_NEAR(a[i], p[i] * gv[i % 3] + bv[i % 3], 1e-12);
    gad_read_f64(gad_layer_norm(x, gain, NULL, 1e-5), a, 6);
    for (int i = 0; i < 6; i++) CHECK_NEAR(a[i], p[i] * gv[i % 3], 1e-12);
    gad_read_f64(gad_layer_norm(x, NULL, bias, 1e-5), a, 6);
    for (int i = 0; i < 6; i++) CHECK_NEAR(a[i], p[i] + bv[i % 3], 1e-12);
    /* rank 1, and an eps of 0 */
    const double r1[] = {1, 2, 3};
    CHECK_VALUES(gad_layer_norm(f64v(r1, (int64_t[]){3}, 1), NULL, NULL, 0), 1e-12,
                 -1.224744871391589, 0, 1.224744871391589);
    CHECK_OK();
    gad_scope_end();
}

typedef struct ln_ctx {
    int gain, bias;
} ln_ctx;

static gad_tensor *fn_layer_norm(void *vctx, gad_tensor *const *in, int n) {
    (void)n;
    ln_ctx *c = vctx;
    return gad_layer_norm(in[0], c->gain ? in[1] : NULL, c->bias ? in[2] : NULL, 1e-5);
}

TEST(layer_norm_grad) {
    gad_scope_begin();
    const int64_t shapes[][3] = {{5}, {2, 3}, {2, 3, 4}, {4, 1}};
    const int ranks[] = {1, 2, 3, 2};
    for (int s = 0; s < 4; s++) {
        int64_t d = shapes[s][ranks[s] - 1];
        gad_tensor *x = leaf64(shapes[s], ranks[s], 20 + (uint64_t)s);
        gad_tensor *gain = leaf64(&d, 1, 30 + (uint64_t)s);
        gad_tensor *bias = leaf64(&d, 1, 40 + (uint64_t)s);
        gad_tensor *in[3] = {x, gain, bias};
        for (int m = 0; m < 4; m++) {
            ln_ctx c = {m & 1, m >> 1};
            CHECK_GRADCHECK(fn_layer_norm, &c, in, 3);
        }
    }
    /* the D3 example, by finite differences */
    gad_tensor *x = gad_requires_grad(f64v(ln_x, (int64_t[]){2, 3}, 2));
    ln_ctx c = {0, 0};
    CHECK_GRADCHECK(fn_layer_norm, &c, &x, 1);
    CHECK_OK();
    gad_scope_end();
}

TEST(layer_norm_errors) {
    gad_scope_begin();
    gad_tensor *x = gad_zeros((int64_t[]){2, 3}, 2, GAD_F32);
    CHECK(gad_layer_norm(gad_scalar_f32(1), NULL, NULL, 1e-5) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "layer_norm");
    CHECK(gad_layer_norm(x, gad_zeros((int64_t[]){2}, 1, GAD_F32), NULL, 1e-5) == NULL);
    CHECK_ERR_MSG(GAD_ERR_SHAPE, "layer_norm", "gain [2]");
    CHECK(gad_layer_norm(x, gad_zeros((int64_t[]){1, 3}, 2, GAD_F32), NULL, 1e-5) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "layer_norm");
    CHECK(gad_layer_norm(x, NULL, gad_zeros((int64_t[]){2, 3}, 2, GAD_F32), 1e-5) == NULL);
    CHECK_ERR_MSG(GAD_ERR_SHAPE, "layer_norm", "bias [2,3]");
    CHECK(gad_layer_norm(x, NULL, gad_zeros((int64_t[]){3}, 1, GAD_F64), 1e-5) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "layer_norm");
    CHECK(gad_layer_norm(gad_zeros((int64_t[]){3}, 1, GAD_I64), NULL, NULL, 1e-5) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "layer_norm");
    CHECK(gad_layer_norm(x, NULL, NULL, -1e-5) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "layer_norm");
    CHECK(gad_layer_norm(x, NULL, NULL, NAN) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "layer_norm");
    CHECK(gad_layer_norm(NULL, NULL, NULL, 1e-5) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "layer_norm");
    gad_scope_end();
}

/* -------------------------------------------------------------- embedding */

TEST(embedding_values) {
    gad_scope_begin();
    const double wv[] = {0, 1, 10, 11, 20, 21, 30, 31};
    gad_tensor *w = gad_requires_grad(f64v(wv, (int64_t[]){4, 2}, 2));
    const int64_t iv[] = {3, 0, 1, 1};
    gad_tensor *i22 = idx64(iv, (int64_t[]){2, 2}, 2);
    gad_tensor *y = gad_embedding(w, i22);
    CHECK_SHAPE(y, 2, 2, 2);
    CHECK_VALUES(y, 0, 30, 31, 0, 1, 10, 11, 10, 11);
    CHECK(gad_is_tracked(y));
    /* a rank-0 index gives one row */
    gad_tensor *y0 = gad_embedding(w, gad_from_i64((int64_t[]){2}, NULL, 0));
    CHECK_SHAPE(y0, 2);
    CHECK_VALUES(y0, 0, 20, 21);
    /* f32 weights, a non-contiguous index */
    gad_tensor *it = gad_transpose(i22);
    gad_tensor *yf = gad_embedding(gad_cast(w, GAD_F32), it);
    CHECK(gad_dtype(yf) == GAD_F32);
    CHECK_SHAPE(yf, 2, 2, 2);
    CHECK_VALUES(yf, 0, 30, 31, 10, 11, 0, 1, 10, 11);
    /* empty indices */
    CHECK_SHAPE(gad_embedding(w, gad_zeros((int64_t[]){0, 3}, 2, GAD_I64)), 0, 3, 2);
    /* duplicates accumulate: index 1 twice, 3 once, 0 once, 2 never */
    const double sv[] = {1, 2, 3, 4, 5, 6, 7, 8};
    gad_tensor *s = f64v(sv, (int64_t[]){2, 2, 2}, 3);
    gad_tensor *g[1];
    CHECK(gad_grad(gad_sum_all(gad_mul(y, s)), &w, 1, g) == GAD_OK);
    CHECK_SHAPE(g[0], 4, 2);
    CHECK_VALUES(g[0], 0, 3, 4, 5 + 7, 6 + 8, 0, 0, 1, 2);
    CHECK_OK();
    gad_scope_end();
}

static gad_tensor *fn_embedding(void *ctx, gad_tensor *const *in, int n) {
    (void)n;
    return gad_embedding(in[0], ctx);
}

TEST(embedding_grad) {
    gad_scope_begin();
    gad_tensor *w = leaf64((int64_t[]){5, 3}, 2, 8);
    const int64_t iv[] = {4, 1, 1, 0, 4, 4};
    gad_tensor *idx = idx64(iv, (int64_t[]){3, 2}, 2);
    CHECK_GRADCHECK(fn_embedding, idx, &w, 1);
    CHECK_OK();
    gad_scope_end();
}

TEST(embedding_errors) {
    gad_scope_begin();
    gad_tensor *w = gad_zeros((int64_t[]){4, 2}, 2, GAD_F32);
    const int64_t big[] = {0, 4}, neg[] = {2, -1};
    CHECK(gad_embedding(w, idx64(big, (int64_t[]){2}, 1)) == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "embedding", "index 4 out of bounds [0, 4)");
    CHECK(gad_embedding(w, idx64(neg, (int64_t[]){2}, 1)) == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "embedding", "index -1 out of bounds [0, 4)");
    CHECK(gad_embedding(gad_zeros((int64_t[]){4}, 1, GAD_F32), idx64(big, (int64_t[]){1}, 1)) == NULL);
    CHECK_ERR_MSG(GAD_ERR_SHAPE, "embedding", "weight [4]");
    CHECK(gad_embedding(gad_zeros((int64_t[]){1, 4, 2}, 3, GAD_F32), idx64(big, (int64_t[]){1}, 1)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "embedding");
    CHECK(gad_embedding(w, gad_zeros((int64_t[]){2}, 1, GAD_F32)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "embedding");
    CHECK(gad_embedding(gad_zeros((int64_t[]){4, 2}, 2, GAD_I64), idx64(big, (int64_t[]){1}, 1)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "embedding");
    int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(gad_embedding(w, gad_zeros(s8, 8, GAD_I64)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "embedding");
    CHECK(gad_embedding(NULL, idx64(big, (int64_t[]){1}, 1)) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "embedding");
    CHECK(gad_embedding(w, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "embedding");
    gad_scope_end();
}

/* ---------------------------------------------------------------- one_hot */

TEST(one_hot_values) {
    gad_scope_begin();
    const int64_t iv[] = {2, 0, 1, 2};
    gad_tensor *y = gad_one_hot(idx64(iv, (int64_t[]){2, 2}, 2), 3);
    CHECK_SHAPE(y, 2, 2, 3);
    CHECK(gad_dtype(y) == GAD_F32);
    CHECK(!gad_is_tracked(y));
    CHECK_VALUES(y, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1);
    gad_tensor *y0 = gad_one_hot(gad_from_i64((int64_t[]){1}, NULL, 0), 4);
    CHECK_SHAPE(y0, 4);
    CHECK_VALUES(y0, 0, 0, 1, 0, 0);
    /* a non-contiguous index */
    gad_tensor *yt = gad_one_hot(gad_transpose(idx64(iv, (int64_t[]){2, 2}, 2)), 3);
    CHECK_VALUES(yt, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 0, 1);
    CHECK_SHAPE(gad_one_hot(gad_zeros((int64_t[]){0}, 1, GAD_I64), 0), 0, 0);
    CHECK_SHAPE(gad_one_hot(gad_zeros((int64_t[]){2}, 1, GAD_I64), 1), 2, 1);
    CHECK_OK();
    gad_scope_end();
}

TEST(one_hot_errors) {
    gad_scope_begin();
    const int64_t iv[] = {0, 3}, nv[] = {-1};
    CHECK(gad_one_hot(idx64(iv, (int64_t[]){2}, 1), 3) == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "one_hot", "index 3 out of bounds [0, 3)");
    CHECK(gad_one_hot(idx64(nv, (int64_t[]){1}, 1), 3) == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, "one_hot", "index -1");
    CHECK(gad_one_hot(idx64(iv, (int64_t[]){1}, 1), 0) == NULL);
    CHECK_ERR(GAD_ERR_INDEX, "one_hot");
    CHECK(gad_one_hot(idx64(iv, (int64_t[]){1}, 1), -2) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "one_hot");
    CHECK(gad_one_hot(gad_zeros((int64_t[]){2}, 1, GAD_F32), 3) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "one_hot");
    int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(gad_one_hot(gad_zeros(s8, 8, GAD_I64), 3) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "one_hot");
    CHECK(gad_one_hot(NULL, 3) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "one_hot");
    gad_scope_end();
}

/* ---------------------------------------------------- categorical policy */

TEST(categorical_log_prob_values) {
    gad_scope_begin();
    gad_tensor *lg = gad_requires_grad(gad_from_f32(ce_logits, (int64_t[]){2, 3}, 2));
    gad_tensor *a = idx64(ce_targets, (int64_t[]){2}, 1);
    gad_tensor *lp = gad_categorical_log_prob(lg, a);
    CHECK_SHAPE(lp, 2);
    CHECK_VALUES(lp, 1e-6, -0.40760595, -1.0986123);
    /* SPEC D4, g's top bug: the result is on the tape and its gradient is
     * onehot(a) - softmax, not zero */
    CHECK(gad_is_tracked(lp));
    gad_tensor *g[1];
    CHECK(gad_grad(gad_sum_all(lp), &lg, 1, g) == GAD_OK);
    CHECK_VALUES(g[0], 1e-6, -0.09003057, -0.24472847, 0.33475904, 0.66666667,
                 -0.33333333, -0.33333333);
    /* one action, as the bandit example uses it */
    gad_tensor *l1 = gad_requires_grad(gad_zeros((int64_t[]){1, 5}, 2, GAD_F32));
    gad_tensor *lp1 = gad_categorical_log_prob(l1, gad_from_i64((int64_t[]){2}, (int64_t[]){1}, 1));
    CHECK_SHAPE(lp1, 1);
    CHECK_VALUES(lp1, 1e-6, -log(5.0));
    CHECK(gad_grad(gad_sum_all(lp1), &l1, 1, g) == GAD_OK);
    CHECK_VALUES(g[0], 1e-6, -0.2, -0.2, 0.8, -0.2, -0.2);
    CHECK_OK();
    gad_scope_end();
}

static gad_tensor *fn_log_prob(void *ctx, gad_tensor *const *in, int n) {
    (void)n;
    return gad_categorical_log_prob(in[0], ctx);
}

static gad_tensor *fn_entropy(void *ctx, gad_tensor *const *in, int n) {
    (void)ctx, (void)n;
    return gad_categorical_entropy(in[0]);
}

TEST(categorical_grad) {
    gad_scope_begin();
    gad_tensor *x = leaf64((int64_t[]){3, 4}, 2, 9);
    const int64_t av[] = {3, 0, 3};
    gad_tensor *a = idx64(av, (int64_t[]){3}, 1);
    CHECK_GRADCHECK(fn_log_prob, a, &x, 1);
    gad_tensor *g[1];
    CHECK(gad_grad(gad_sum_all(gad_categorical_log_prob(x, a)), &x, 1, g) == GAD_OK);
    CHECK(gad_item(gad_sum_all(gad_abs(g[0]))) > 0.1);
    CHECK_GRADCHECK(fn_entropy, NULL, &x, 1);
    gad_tensor *x3 = leaf64((int64_t[]){2, 3, 4}, 3, 10);
    CHECK_GRADCHECK(fn_entropy, NULL, &x3, 1);
    CHECK_OK();
    gad_scope_end();
}

TEST(categorical_entropy_values) {
    gad_scope_begin();
    /* uniform logits: log C; a sharp distribution: near 0 */
    gad_tensor *h = gad_categorical_entropy(gad_zeros((int64_t[]){2, 3, 4}, 3, GAD_F32));
    CHECK_SHAPE(h, 2, 3);
    CHECK_VALUES(h, 1e-6, log(4.0), log(4.0), log(4.0), log(4.0), log(4.0), log(4.0));
    gad_tensor *lg = gad_from_f32(ce_logits, (int64_t[]){2, 3}, 2);
    /* softmax([1,2,3]) = [0.09003057, 0.24472847, 0.66524096] */
    double p0 = 0.09003057317038046, p1 = 0.24472847105479764, p2 = 0.6652409557748219;
    double h0 = -(p0 * log(p0) + p1 * log(p1) + p2 * log(p2));
    CHECK_VALUES(gad_categorical_entropy(lg), 1e-6, h0, log(3.0));
    const double sharp[] = {100, 0};
    CHECK_VALUES(gad_categorical_entropy(f64v(sharp, (int64_t[]){2}, 1)), 1e-12, 0);
    gad_tensor *h1 = gad_categorical_entropy(gad_zeros((int64_t[]){3}, 1, GAD_F64));
    CHECK(gad_rank(h1) == 0);
    CHECK_VALUES(h1, 1e-12, log(3.0));
    CHECK_OK();
    gad_scope_end();
}

TEST(categorical_errors) {
    gad_scope_begin();
    gad_tensor *lg = gad_zeros((int64_t[]){2, 3}, 2, GAD_F32);
    const int64_t bad[] = {1, 3}, neg[] = {-1, 0}, ok[] = {0, 2};
    const char *op = "categorical_log_prob";
    CHECK(gad_categorical_log_prob(lg, idx64(bad, (int64_t[]){2}, 1)) == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, op, "action 3 out of bounds [0, 3)");
    CHECK(gad_categorical_log_prob(lg, idx64(neg, (int64_t[]){2}, 1)) == NULL);
    CHECK_ERR_MSG(GAD_ERR_INDEX, op, "action -1");
    CHECK(gad_categorical_log_prob(gad_zeros((int64_t[]){3}, 1, GAD_F32),
                                   idx64(ok, (int64_t[]){1}, 1)) == NULL);
    CHECK_ERR_MSG(GAD_ERR_SHAPE, op, "logits [3]");
    CHECK(gad_categorical_log_prob(lg, idx64(ok, (int64_t[]){1}, 1)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, op);
    CHECK(gad_categorical_log_prob(lg, idx64(ok, (int64_t[]){2, 1}, 2)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, op);
    CHECK(gad_categorical_log_prob(lg, gad_zeros((int64_t[]){2}, 1, GAD_F32)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, op);
    CHECK(gad_categorical_log_prob(gad_zeros((int64_t[]){2, 3}, 2, GAD_I64),
                                   idx64(ok, (int64_t[]){2}, 1)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, op);
    CHECK(gad_categorical_log_prob(gad_zeros((int64_t[]){0, 0}, 2, GAD_F32),
                                   gad_zeros((int64_t[]){0}, 1, GAD_I64)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, op);
    CHECK(gad_categorical_log_prob(NULL, idx64(ok, (int64_t[]){2}, 1)) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, op);
    CHECK(gad_categorical_log_prob(lg, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, op);
    op = "categorical_entropy";
    CHECK(gad_categorical_entropy(gad_scalar_f32(1)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, op);
    CHECK(gad_categorical_entropy(gad_zeros((int64_t[]){2, 0}, 2, GAD_F32)) == NULL);
    CHECK_ERR_MSG(GAD_ERR_SHAPE, op, "logits [2,0]");
    CHECK(gad_categorical_entropy(gad_zeros((int64_t[]){2}, 1, GAD_I64)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, op);
    CHECK(gad_categorical_entropy(NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, op);
    gad_scope_end();
}

/* ----------------------------------------------------------------- whiten */

static gad_tensor *fn_whiten(void *ctx, gad_tensor *const *in, int n) {
    (void)ctx, (void)n;
    return gad_whiten(in[0]);
}

TEST(whiten_values) {
    gad_scope_begin();
    const float v[] = {1, 2, 3, 4};
    gad_tensor *y = gad_whiten(gad_from_f32(v, (int64_t[]){4}, 1));
    CHECK_SHAPE(y, 4);
    CHECK_VALUES(y, 1e-6, -1.3416407, -0.4472136, 0.4472136, 1.3416407);
    /* any shape: over all elements */
    gad_tensor *y2 = gad_whiten(gad_from_f32(v, (int64_t[]){2, 2}, 2));
    CHECK_SHAPE(y2, 2, 2);
    CHECK_VALUES(y2, 1e-6, -1.3416407, -0.4472136, 0.4472136, 1.3416407);
    /* a constant gives zeros (the 1e-8 keeps it finite) */
    CHECK_VALUES(gad_whiten(gad_full((int64_t[]){3}, 1, GAD_F64, 5)), 0, 0, 0, 0);
    gad_tensor *x = leaf64((int64_t[]){3, 5}, 2, 11);
    CHECK_GRADCHECK(fn_whiten, NULL, &x, 1);
    gad_tensor *yw = gad_whiten(x);
    CHECK(gad_is_tracked(yw));
    CHECK_NEAR(gad_item(gad_mean_all(yw)), 0, 1e-12);
    CHECK_NEAR(gad_item(gad_mean_all(gad_square(yw))), 1, 1e-6);
    CHECK(gad_whiten(gad_zeros((int64_t[]){3}, 1, GAD_I64)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "whiten");
    CHECK(gad_whiten(NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "whiten");
    CHECK_OK();
    gad_scope_end();
}

/* ---------------------------------------------------------------- dropout */

TEST(dropout_statistics) {
    gad_scope_begin();
    const int64_t n = 200000;
    const double p = 0.3;
    gad_tensor *x = gad_requires_grad(gad_ones(&n, 1, GAD_F32));
    gad_rng *rng = gad_rng_new(42);
    gad_tensor *y = gad_dropout(x, p, rng, 1);
    CHECK_SHAPE(y, n);
    CHECK(gad_is_tracked(y));
    float *v = malloc((size_t)n * sizeof *v);
    gad_read_f32(y, v, (size_t)n);
    const float scale = (float)(1.0 / (1.0 - p));
    int64_t kept = 0, other = 0;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] == scale) kept++;
        else if (v[i] != 0.0f) other++;
    }
    CHECK(other == 0); /* every kept element scaled exactly by 1/(1-p) */
    /* binomial: sd of the fraction is sqrt(p(1-p)/n) ~ 0.001 */
    CHECK_NEAR((double)kept / (double)n, 1 - p, 0.006);
    /* the mean is preserved in expectation */
    CHECK_NEAR(gad_item(gad_mean_all(y)), 1.0, 0.01);
    /* the gradient is mask / (1 - p): y itself since x is ones */
    gad_tensor *g[1];
    CHECK(gad_grad(gad_sum_all(y), &x, 1, g) == GAD_OK);
    float *gv = malloc((size_t)n * sizeof *gv);
    gad_read_f32(g[0], gv, (size_t)n);
    CHECK(memcmp(gv, v, (size_t)n * sizeof *v) == 0);
    /* the same seed gives the same mask; the stream moves on */
    gad_rng_seed(rng, 42);
    gad_tensor *y2 = gad_dropout(x, p, rng, 1);
    gad_read_f32(y2, gv, (size_t)n);
    CHECK(memcmp(gv, v, (size_t)n * sizeof *v) == 0);
    gad_tensor *y3 = gad_dropout(x, p, rng, 1);
    gad_read_f32(y3, gv, (size_t)n);
    CHECK(memcmp(gv, v, (size_t)n * sizeof *v) != 0);
    free(v);
    free(gv);
    /* values scale exactly in f64 too, with p = 0.5 */
    const double xv[] = {1.5, -2, 3, 0.25, 7, -1, 2, 9};
    gad_tensor *x64 = f64v(xv, (int64_t[]){2, 4}, 2);
    gad_tensor *y64 = gad_dropout(x64, 0.5, rng, 1);
    CHECK_SHAPE(y64, 2, 4);
    double o[8];
    gad_read_f64(y64, o, 8);
    for (int i = 0; i < 8; i++) CHECK(o[i] == 0 || o[i] == 2 * xv[i]);
    gad_rng_free(rng);
    CHECK_OK();
    gad_scope_end();
}

TEST(dropout_eval_and_errors) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_ones((int64_t[]){3, 4}, 2, GAD_F32));
    gad_rng *rng = gad_rng_new(1);
    /* evaluation, and p = 0: x itself, no draw */
    CHECK(gad_dropout(x, 0.5, rng, 0) == x);
    CHECK(gad_dropout(x, 0.5, NULL, 0) == x);
    CHECK(gad_dropout(x, 0, rng, 1) == x);
    gad_tensor *xt = gad_transpose(x); /* not contiguous: still itself */
    CHECK(gad_dropout(xt, 0.2, rng, 0) == xt);
    const double bad[] = {1, 1.5, -0.1, NAN, INFINITY};
    for (int i = 0; i < 5; i++) {
        CHECK(gad_dropout(x, bad[i], rng, 1) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, "dropout");
    }
    CHECK(gad_dropout(x, 1, rng, 0) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "dropout");
    CHECK(gad_dropout(x, 0.5, NULL, 1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "dropout");
    CHECK(gad_dropout(gad_zeros((int64_t[]){3}, 1, GAD_I64), 0.5, rng, 1) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "dropout");
    CHECK(gad_dropout(NULL, 0.5, rng, 1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "dropout");
    gad_rng_free(rng);
    gad_scope_end();
    /* with no scope open, eval mode hands the caller one more reference */
    int64_t base = live_tensors();
    gad_tensor *t = gad_ones((int64_t[]){2}, 1, GAD_F32);
    gad_tensor *u = gad_dropout(t, 0.5, NULL, 0);
    CHECK(u == t);
    gad_release(t);
    CHECK(gad_numel(u) == 2); /* still alive: the reference is the caller's */
    gad_release(u);
    CHECK(live_tensors() == base);
}

/* ----------------------------------------------------------- initializers */

typedef gad_tensor *(*init_fn)(gad_rng *, int64_t, int64_t, double);

static void init_stats(gad_tensor *t, double *mean, double *var, double *maxabs) {
    int64_t n = gad_numel(t);
    float *v = malloc((size_t)n * sizeof *v);
    gad_read_f32(t, v, (size_t)n);
    double s = 0, s2 = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        s += v[i];
        s2 += (double)v[i] * v[i];
        if (fabs(v[i]) > m) m = fabs(v[i]);
    }
    *mean = s / (double)n;
    *var = s2 / (double)n - *mean * *mean;
    *maxabs = m;
    free(v);
}

TEST(initializers) {
    gad_scope_begin();
    const int64_t fi = 512, fo = 512;
    const struct {
        init_fn f;
        const char *op;
        int uniform;
        double gain;
        double bound; /* a for uniform, std for normal */
    } cases[] = {
        {gad_init_xavier_uniform, "init_xavier_uniform", 1, 1.0, sqrt(6.0 / 1024)},
        {gad_init_xavier_uniform, "init_xavier_uniform", 1, 2.0, 2 * sqrt(6.0 / 1024)},
        {gad_init_xavier_normal, "init_xavier_normal", 0, 1.0, sqrt(2.0 / 1024)},
        {gad_init_kaiming_uniform, "init_kaiming_uniform", 1, sqrt(2.0), sqrt(3.0) * sqrt(2.0) / sqrt(512.0)},
        {gad_init_kaiming_normal, "init_kaiming_normal", 0, sqrt(2.0), sqrt(2.0) / sqrt(512.0)},
        {gad_init_kaiming_normal, "init_kaiming_normal", 0, 1.0, 1.0 / sqrt(512.0)},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gad_rng *rng = gad_rng_new(100 + k);
        gad_tensor *w = cases[k].f(rng, fi, fo, cases[k].gain);
        CHECK_SHAPE(w, fi, fo);
        CHECK(gad_dtype(w) == GAD_F32);
        CHECK(!gad_is_tracked(w));
        double mean, var, maxabs;
        init_stats(w, &mean, &var, &maxabs);
        double want = cases[k].uniform ? cases[k].bound * cases[k].bound / 3
                                       : cases[k].bound * cases[k].bound;
        double sd = sqrt(want);
        /* sd of the mean over 262144 draws is sd / 512 */
        CHECK_MSG(fabs(mean) < 5 * sd / 512, "%s mean %g", cases[k].op, mean);
        CHECK_MSG(fabs(var / want - 1) < 0.02, "%s var %g want %g", cases[k].op, var, want);
        if (cases[k].uniform)
            CHECK_MSG(maxabs <= cases[k].bound && maxabs > 0.99 * cases[k].bound,
                      "%s max %g bound %g", cases[k].op, maxabs, cases[k].bound);
        else
            CHECK(maxabs > 3 * sd); /* normal tails exist */
        /* the same seed gives the same weights */
        gad_rng_seed(rng, 100 + k);
        gad_tensor *w2 = cases[k].f(rng, fi, fo, cases[k].gain);
        CHECK(gad_item(gad_sum_all(gad_abs(gad_sub(w, w2)))) == 0);
        /* errors name the initializer */
        CHECK(cases[k].f(rng, 0, fo, 1) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, cases[k].op);
        CHECK(cases[k].f(rng, fi, -3, 1) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, cases[k].op);
        CHECK(cases[k].f(NULL, fi, fo, 1) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, cases[k].op);
        CHECK(cases[k].f(rng, fi, fo, -1) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, cases[k].op);
        CHECK(cases[k].f(rng, fi, fo, NAN) == NULL);
        CHECK_ERR(GAD_ERR_DOMAIN, cases[k].op);
        CHECK(cases[k].f(rng, INT64_MAX / 2, 3, 1) == NULL);
        CHECK_ERR(GAD_ERR_SHAPE, cases[k].op);
        gad_rng_free(rng);
    }
    /* a rectangular layer, and a gain of 0 gives zeros */
    gad_rng *rng = gad_rng_new(5);
    gad_tensor *w = gad_init_xavier_normal(rng, 3, 7, 1);
    CHECK_SHAPE(w, 3, 7);
    CHECK(gad_requires_grad(w) == w && gad_is_leaf(w));
    CHECK_VALUES(gad_sum_all(gad_abs(gad_init_kaiming_uniform(rng, 4, 2, 0))), 0, 0);
    gad_rng_free(rng);
    CHECK_OK();
    gad_scope_end();
}

/* ------------------------------------------------ SPEC §6.6 classify_blobs */

TEST(classify_blobs) {
    float xs[60 * 2];
    int64_t ys[60];
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 20; i++) {
            double nv = (double)((17 * i + 9 * c) % 11) / 11.0 - 0.5;
            xs[(c * 20 + i) * 2] = (float)(c - 1 + 0.3 * nv);
            xs[(c * 20 + i) * 2 + 1] = (float)nv;
            ys[c * 20 + i] = c;
        }
    int64_t base = live_tensors();
    gad_tensor *x = gad_from_f32(xs, (int64_t[]){60, 2}, 2);
    gad_tensor *y = gad_from_i64(ys, (int64_t[]){60}, 1);
    gad_scope_begin();
    gad_tensor *w1 = gad_keep(gad_mul_scalar(gad_randn((int64_t[]){2, 16}, 2, 1), 0.4));
    gad_tensor *w2 = gad_keep(gad_mul_scalar(gad_randn((int64_t[]){16, 3}, 2, 2), 0.4));
    gad_scope_end();
    gad_tensor *b1 = gad_zeros((int64_t[]){16}, 1, GAD_F32);
    gad_tensor *b2 = gad_zeros((int64_t[]){3}, 1, GAD_F32);
    gad_tensor *params[4] = {w1, b1, w2, b2};
    for (int i = 0; i < 4; i++) gad_requires_grad(params[i]);
    int acc40 = -1;
    double loss60 = NAN, loss0 = NAN;
    for (int step = 0; step <= 80; step++) {
        gad_scope_begin();
        gad_tensor *logits = gad_linear(gad_relu(gad_linear(x, w1, b1)), w2, b2);
        gad_tensor *loss = gad_cross_entropy(logits, y, GAD_REDUCE_MEAN);
        int64_t pred[60];
        gad_read_i64(gad_argmax(logits, -1, 0), pred, 60);
        int acc = 0;
        for (int i = 0; i < 60; i++) acc += pred[i] == ys[i];
        double lv = gad_item(loss);
        if (step == 0) loss0 = lv;
        if (step == 40) acc40 = acc;
        if (step == 60) loss60 = lv;
        if (step % 20 == 0) printf("  step %d loss %.4f acc %d/60\n", step, lv, acc);
        if (step < 80) {
            gad_tensor *g[4];
            CHECK(gad_grad(loss, params, 4, g) == GAD_OK);
            for (int k = 0; k < 4; k++) {
                float *p = gad_data_mut(params[k]);
                float gv[64];
                int64_t n = gad_numel(params[k]);
                gad_read_f32(g[k], gv, (size_t)n);
                for (int64_t j = 0; j < n; j++) p[j] -= 0.15f * gv[j];
            }
        }
        gad_scope_end();
    }
    CHECK_MSG(acc40 == 60, "accuracy at step 40: %d/60", acc40);
    CHECK_MSG(loss60 < 0.2, "loss at step 60: %g", loss60);
    CHECK(loss60 < loss0);
    for (int i = 0; i < 4; i++) gad_release(params[i]);
    gad_release(x);
    gad_release(y);
    CHECK(live_tensors() == base);
    CHECK_OK();
}

/* ------------------------------------------------------ NULL propagation */

/* A NULL argument (the result of a failed expression) gives NULL and keeps
 * the first error; with none pending it is a domain error naming the op. */
TEST(null_keeps_first_error) {
    gad_scope_begin();
    gad_tensor *x = gad_ones((int64_t[]){2, 3}, 2, GAD_F32);
    gad_tensor *t = gad_from_i64(ce_targets, (int64_t[]){2}, 1);
    gad_rng *rng = gad_rng_new(1);
    for (int pending = 0; pending < 2; pending++) {
#define NULL_CASE(expr, opname)                                                \
    do {                                                                       \
        if (pending) gad_error_set(GAD_ERR_IO, "first", "the first error");   \
        CHECK((expr) == NULL);                                                 \
        CHECK_ERR(pending ? GAD_ERR_IO : GAD_ERR_DOMAIN, pending ? "first" : (opname)); \
    } while (0)
        NULL_CASE(gad_linear(NULL, x, NULL), "linear");
        NULL_CASE(gad_mse_loss(x, NULL, GAD_REDUCE_MEAN), "mse_loss");
        NULL_CASE(gad_nll_loss(NULL, t, GAD_REDUCE_MEAN), "nll_loss");
        NULL_CASE(gad_cross_entropy(x, NULL, GAD_REDUCE_MEAN), "cross_entropy");
        NULL_CASE(gad_layer_norm(NULL, NULL, NULL, 1e-5), "layer_norm");
        NULL_CASE(gad_embedding(NULL, t), "embedding");
        NULL_CASE(gad_one_hot(NULL, 3), "one_hot");
        NULL_CASE(gad_categorical_log_prob(x, NULL), "categorical_log_prob");
        NULL_CASE(gad_categorical_entropy(NULL), "categorical_entropy");
        NULL_CASE(gad_whiten(NULL), "whiten");
        NULL_CASE(gad_dropout(NULL, 0.5, rng, 1), "dropout");
        NULL_CASE(gad_init_xavier_uniform(NULL, 2, 2, 1), "init_xavier_uniform");
#undef NULL_CASE
    }
    /* a later bad argument does not overwrite the first error either */
    gad_error_set(GAD_ERR_IO, "first", "the first error");
    CHECK(gad_linear(x, x, NULL) == NULL);
    CHECK_ERR(GAD_ERR_IO, "first");
    gad_rng_free(rng);
    gad_scope_end();
}

/* ------------------------------------------------------------------ leaks */

/* Call every layer once with no scope open and release each result: no
 * intermediate may stay alive. */
TEST(no_leaks_without_scope) {
    CHECK(gad_scope_depth() == 0);
    int64_t base = live_tensors();
    gad_tensor *x = gad_requires_grad(gad_from_f32(ce_logits, (int64_t[]){2, 3}, 2));
    gad_tensor *w = gad_requires_grad(gad_ones((int64_t[]){3, 4}, 2, GAD_F32));
    gad_tensor *b = gad_requires_grad(gad_ones((int64_t[]){4}, 1, GAD_F32));
    gad_tensor *gain = gad_ones((int64_t[]){3}, 1, GAD_F32);
    gad_tensor *t = gad_from_i64(ce_targets, (int64_t[]){2}, 1);
    gad_tensor *t22 = gad_from_i64((int64_t[]){0, 1, 2, 1}, (int64_t[]){2, 2}, 2);
    gad_rng *rng = gad_rng_new(3);
    int64_t with_inputs = live_tensors();
    gad_tensor *r[32];
    int n = 0;
    r[n++] = gad_linear(x, w, b);
    r[n++] = gad_linear(x, w, NULL);
    r[n++] = gad_mse_loss(x, x, GAD_REDUCE_MEAN);
    r[n++] = gad_mse_loss(x, x, GAD_REDUCE_NONE);
    r[n++] = gad_nll_loss(x, t, GAD_REDUCE_SUM);
    r[n++] = gad_cross_entropy(x, t, GAD_REDUCE_MEAN);
    r[n++] = gad_cross_entropy(x, t, GAD_REDUCE_NONE);
    r[n++] = gad_layer_norm(x, gain, gain, 1e-5);
    r[n++] = gad_embedding(w, t22);
    r[n++] = gad_one_hot(t22, 3);
    r[n++] = gad_categorical_log_prob(x, t);
    r[n++] = gad_categorical_entropy(x);
    r[n++] = gad_whiten(x);
    r[n++] = gad_dropout(x, 0.5, rng, 1);
    r[n++] = gad_dropout(x, 0.5, rng, 0);
    r[n++] = gad_init_xavier_uniform(rng, 3, 4, 1);
    r[n++] = gad_init_xavier_normal(rng, 3, 4, 1);
    r[n++] = gad_init_kaiming_uniform(rng, 3, 4, 1);
    r[n++] = gad_init_kaiming_normal(rng, 3, 4, 1);
    CHECK_OK();
    for (int i = 0; i < n; i++) CHECK_MSG(r[i] != NULL, "result %d", i);
    CHECK(gad_scope_depth() == 0);
    /* a backward pass through the kept results works */
    gad_tensor *loss = r[5];
    gad_tensor *g = NULL;
    CHECK(gad_grad(loss, &x, 1, &g) == GAD_OK);
    gad_release(g);
    gad_zero_grad(&x, 1); /* the leaf's slot holds a gradient too */
    for (int i = 0; i < n; i++) gad_release(r[i]);
    CHECK_MSG(live_tensors() == with_inputs, "live %lld, expected %lld",
              (long long)live_tensors(), (long long)with_inputs);
    /* error paths leak nothing either */
    gad_tensor *i9 = gad_from_i64((int64_t[]){9}, NULL, 0);
    gad_tensor *t07 = gad_from_i64((int64_t[]){0, 7}, (int64_t[]){2}, 1);
    CHECK(gad_embedding(w, i9) == NULL);
    CHECK_ERR(GAD_ERR_INDEX, "embedding");
    CHECK(gad_cross_entropy(x, t07, GAD_REDUCE_MEAN) == NULL);
    CHECK_ERR(GAD_ERR_INDEX, "cross_entropy");
    CHECK(gad_layer_norm(x, w, NULL, 1e-5) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "layer_norm");
    gad_release(i9), gad_release(t07);
    CHECK(live_tensors() == with_inputs);
    gad_rng_free(rng);
    gad_release(x), gad_release(w), gad_release(b), gad_release(gain);
    gad_release(t), gad_release(t22);
    CHECK_MSG(live_tensors() == base, "live %lld, expected %lld",
              (long long)live_tensors(), (long long)base);
}

/* The same calls inside a scope: everything goes when it ends. */
TEST(no_leaks_in_scope) {
    int64_t base = live_tensors();
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_from_f32(ce_logits, (int64_t[]){2, 3}, 2));
    gad_tensor *w = gad_requires_grad(gad_ones((int64_t[]){3, 4}, 2, GAD_F32));
    gad_tensor *t = gad_from_i64(ce_targets, (int64_t[]){2}, 1);
    gad_rng *rng = gad_rng_new(3);
    gad_tensor *loss = gad_add(gad_cross_entropy(gad_linear(x, w, NULL), t, GAD_REDUCE_MEAN),
                               gad_sum_all(gad_layer_norm(gad_dropout(x, 0.2, rng, 1), NULL, NULL, 1e-5)));
    loss = gad_add(loss, gad_sum_all(gad_categorical_log_prob(x, t)));
    loss = gad_add(loss, gad_sum_all(gad_categorical_entropy(x)));
    loss = gad_add(loss, gad_sum_all(gad_whiten(x)));
    loss = gad_add(loss, gad_sum_all(gad_embedding(w, t)));
    gad_tensor *g[2];
    CHECK(gad_grad(loss, (gad_tensor *[]){x, w}, 2, g) == GAD_OK);
    CHECK(gad_embedding(w, gad_from_i64((int64_t[]){-2}, NULL, 0)) == NULL);
    CHECK_ERR(GAD_ERR_INDEX, "embedding");
    gad_rng_free(rng);
    gad_scope_end();
    CHECK(live_tensors() == base);
}

/* ------------------------------- cross_entropy_ex, bce with logits (issue 27) */
/* Values against PyTorch are tests/test_reference.c's; here: gradchecks in
 * f64 over every option, the fused path against the composed one, and the
 * edge cases. */

typedef struct ce_ex_ctx {
    gad_tensor *target, *weight;
    int64_t ignore;
    gad_reduction red;
    double ls;
    int prob; /* in[1] is a probability target */
} ce_ex_ctx;

static gad_tensor *fn_ce_ex(void *vctx, gad_tensor *const *in, int n) {
    (void)n;
    ce_ex_ctx *c = vctx;
    return gad_cross_entropy_ex(in[0], c->prob ? in[1] : c->target, c->weight, c->ignore, c->red,
                                c->ls);
}

TEST(cross_entropy_ex_grad) {
    gad_scope_begin();
    const gad_reduction reds[] = {GAD_REDUCE_MEAN, GAD_REDUCE_SUM, GAD_REDUCE_NONE};
    const double wv[] = {0.5, 2, 1, 0.25};
    gad_tensor *w = f64v(wv, (int64_t[]){4}, 1);
    const int64_t t2[] = {3, -100, 0, 0, 2}, t3[] = {1, 7, 3, 0, 7, 2};
    for (int i = 0; i < 3; i++)
        for (int hw = 0; hw < 2; hw++)
            for (int s = 0; s < 2; s++) {
                /* [N, C], ignore_index -100 */
                gad_tensor *x = leaf64((int64_t[]){5, 4}, 2, 11);
                ce_ex_ctx c = {idx64(t2, (int64_t[]){5}, 1), hw ? w : NULL, -100, reds[i],
                               s ? 0.3 : 0, 0};
                CHECK_GRADCHECK(fn_ce_ex, &c, &x, 1);
                /* [N, C, d1, d2], ignore_index 7 */
                gad_tensor *x4 = leaf64((int64_t[]){2, 4, 3, 1}, 4, 12);
                ce_ex_ctx c4 = {idx64(t3, (int64_t[]){2, 3, 1}, 3), hw ? w : NULL, 7, reds[i],
                                s ? 0.3 : 0, 0};
                CHECK_GRADCHECK(fn_ce_ex, &c4, &x4, 1);
                /* probabilities [N, C, d], both inputs */
                gad_tensor *xp = leaf64((int64_t[]){2, 4, 3}, 3, 13);
                gad_tensor *in[2] = {xp, gad_requires_grad(gad_softmax(
                                             gad_detach(leaf64((int64_t[]){2, 4, 3}, 3, 14)), 1))};
                ce_ex_ctx cp = {NULL, hw ? w : NULL, -100, reds[i], s ? 0.3 : 0, 1};
                CHECK_GRADCHECK(fn_ce_ex, &cp, in, 2);
            }
    gad_scope_end();
}

TEST(cross_entropy_ex_cases) {
    gad_scope_begin();
    /* the fused path (f32, MEAN) equals the composed one (f64) on [N*T, V] */
    gad_rng *rng = gad_rng_new(5);
    gad_tensor *x = gad_rng_normal_tensor(rng, (int64_t[]){64, 256}, 2, GAD_F32, 0, 2);
    int64_t tv[64];
    for (int i = 0; i < 64; i++) tv[i] = i % 9 == 0 ? -100 : (i * 37) % 256;
    gad_tensor *t = idx64(tv, (int64_t[]){64}, 1);
    gad_tensor *xl = gad_requires_grad(x), *xd = gad_requires_grad(gad_cast(x, GAD_F64));
    gad_tensor *a = gad_cross_entropy_ex(xl, t, NULL, -100, GAD_REDUCE_MEAN, 0);
    gad_tensor *b = gad_cross_entropy_ex(xd, t, NULL, -100, GAD_REDUCE_MEAN, 0);
    CHECK(a && b && fabs(gad_item(a) - gad_item(b)) < 1e-5);
    gad_tensor *ga, *gb;
    CHECK(gad_grad(a, &xl, 1, &ga) == GAD_OK && gad_grad(b, &xd, 1, &gb) == GAD_OK);
    double da[64 * 256], db[64 * 256], worst = 0;
    CHECK(gad_read_f64(ga, da, 64 * 256) == GAD_OK && gad_read_f64(gb, db, 64 * 256) == GAD_OK);
    for (int i = 0; i < 64 * 256; i++) worst = fmax(worst, fabs(da[i] - db[i]));
    CHECK_MSG(worst < 1e-7, "fused against composed gradient: %g", worst);
    for (int j = 0; j < 256; j++) CHECK(da[j] == 0); /* row 0 is ignored */
    /* every target ignored: MEAN is NaN (0 / 0, as PyTorch), SUM 0 */
    const int64_t ig[] = {-100, -100};
    gad_tensor *x2 = gad_zeros((int64_t[]){2, 3}, 2, GAD_F32);
    CHECK(isnan(gad_item(gad_cross_entropy_ex(x2, idx64(ig, (int64_t[]){2}, 1), NULL, -100,
                                              GAD_REDUCE_MEAN, 0))));
    CHECK(gad_item(gad_cross_entropy_ex(x2, idx64(ig, (int64_t[]){2}, 1), NULL, -100,
                                        GAD_REDUCE_SUM, 0.5)) == 0);
    /* uniform logits: the loss is ln C whatever the smoothing */
    const int64_t t1[] = {1, 2};
    CHECK(fabs(gad_item(gad_cross_entropy_ex(x2, idx64(t1, (int64_t[]){2}, 1), NULL, -100,
                                             GAD_REDUCE_MEAN, 0.7)) -
               log(3.0)) < 1e-6);
    /* an empty batch: NONE [0, 2], MEAN NaN */
    gad_tensor *e = gad_zeros((int64_t[]){0, 3, 2}, 3, GAD_F64);
    gad_tensor *te = gad_zeros((int64_t[]){0, 2}, 2, GAD_I64);
    CHECK_SHAPE(gad_cross_entropy_ex(e, te, NULL, -100, GAD_REDUCE_NONE, 0), 0, 2);
    CHECK(isnan(gad_item(gad_cross_entropy_ex(e, te, NULL, -100, GAD_REDUCE_MEAN, 0))));
    /* errors name the op */
    const int64_t bad[] = {1, 3};
    CHECK(!gad_cross_entropy_ex(x2, idx64(bad, (int64_t[]){2}, 1), NULL, -100,
                                GAD_REDUCE_MEAN, 0));
    CHECK_ERR_MSG(GAD_ERR_INDEX, "cross_entropy_ex", "class 3 of row 1");
    CHECK(!gad_cross_entropy_ex(x2, idx64(t1, (int64_t[]){2}, 1), NULL, -100,
                                GAD_REDUCE_MEAN, 1.5));
    CHECK_ERR_MSG(GAD_ERR_DOMAIN, "cross_entropy_ex", "label_smoothing");
    gad_rng_free(rng);
    gad_scope_end();
}

typedef struct bce_ctx {
    gad_reduction red;
    int hw, hp;
} bce_ctx;

static gad_tensor *fn_bce(void *vctx, gad_tensor *const *in, int n) {
    (void)n;
    bce_ctx *c = vctx;
    return gad_binary_cross_entropy_with_logits(in[0], in[1], c->hw ? in[2] : NULL,
                                                c->hp ? in[2 + c->hw] : NULL, c->red);
}

TEST(bce_with_logits) {
    gad_scope_begin();
    const gad_reduction reds[] = {GAD_REDUCE_MEAN, GAD_REDUCE_SUM, GAD_REDUCE_NONE};
    for (int i = 0; i < 3; i++)
        for (int hw = 0; hw < 2; hw++)
            for (int hp = 0; hp < 2; hp++) {
                gad_tensor *in[4];
                int n = 0;
                in[n++] = leaf64((int64_t[]){3, 4}, 2, 21);
                in[n++] = gad_requires_grad(gad_sigmoid(gad_detach(leaf64((int64_t[]){3, 4}, 2, 22))));
                if (hw) in[n++] = gad_requires_grad(gad_add_scalar(gad_square(gad_detach(
                                      leaf64((int64_t[]){3, 1}, 2, 23))), 0.2));
                if (hp) in[n++] = gad_requires_grad(gad_add_scalar(gad_square(gad_detach(
                                      leaf64((int64_t[]){4}, 1, 24))), 0.2));
                bce_ctx c = {reds[i], hw, hp};
                CHECK_GRADCHECK(fn_bce, &c, in, n);
            }
    /* stable far from 0: x = +-1000 give finite values, |x| for the wrong label */
    const double xv[] = {1000, -1000, 1000, -1000}, yv[] = {1, 0, 0, 1};
    gad_tensor *l = gad_binary_cross_entropy_with_logits(
        f64v(xv, (int64_t[]){4}, 1), f64v(yv, (int64_t[]){4}, 1), NULL, NULL, GAD_REDUCE_NONE);
    CHECK_VALUES(l, 1e-12, 0, 0, 1000, 1000);
    /* errors */
    CHECK(!gad_binary_cross_entropy_with_logits(f64v(xv, (int64_t[]){4}, 1),
                                                f64v(yv, (int64_t[]){2, 2}, 2), NULL, NULL,
                                                GAD_REDUCE_MEAN));
    CHECK_ERR_MSG(GAD_ERR_SHAPE, "bce_with_logits", "[2,2]");
    gad_scope_end();
}

int main(void) {
    RUN(linear_values);
    RUN(linear_grad);
    RUN(linear_errors);
    RUN(linear_act_matches_composition);
    RUN(linear_act_first_layer);
    RUN(mse_values);
    RUN(mse_grad);
    RUN(mse_errors);
    RUN(cross_entropy_reference);
    RUN(nll_ce_grad);
    RUN(nll_ce_errors);
    RUN(layer_norm_reference);
    RUN(layer_norm_grad);
    RUN(layer_norm_errors);
    RUN(embedding_values);
    RUN(embedding_grad);
    RUN(embedding_errors);
    RUN(one_hot_values);
    RUN(one_hot_errors);
    RUN(categorical_log_prob_values);
    RUN(categorical_grad);
    RUN(categorical_entropy_values);
    RUN(categorical_errors);
    RUN(whiten_values);
    RUN(dropout_statistics);
    RUN(dropout_eval_and_errors);
    RUN(initializers);
    RUN(cross_entropy_ex_grad);
    RUN(cross_entropy_ex_cases);
    RUN(bce_with_logits);
    RUN(classify_blobs);
    RUN(null_keeps_first_error);
    RUN(no_leaks_without_scope);
    RUN(no_leaks_in_scope);
    return test_summary();
}
