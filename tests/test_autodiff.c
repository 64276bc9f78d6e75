/* test_autodiff.c: the engine: the seed's own tests, SPEC §7.1, §7.6-7.8,
 * §9.1, higher order (second derivatives, HVP, JVP), no-grad, detach,
 * anomaly mode, the DOT dump, a million-op chain, and the error kinds. */
#include <math.h>

#include "test.h"

static gad_tensor *scalar(float v) { return gad_from_f32(&v, NULL, 0); }
static gad_tensor *leaf(float v) { return gad_requires_grad(scalar(v)); }
static gad_tensor *vec(const float *v, int64_t n) { return gad_from_f32(v, &n, 1); }
static gad_tensor *mat(const float *v, int64_t r, int64_t c) {
    return gad_from_f32(v, (int64_t[]){r, c}, 2);
}
static double g1(gad_tensor *out, gad_tensor *x) {
    gad_tensor *g;
    if (gad_grad(out, &x, 1, &g) != GAD_OK) return NAN;
    return gad_item(g);
}

/* ------------------------------------------------------ the seed's tests */

TEST(mul_grad) {
    gad_scope_begin();
    gad_tensor *a = gad_requires_grad(vec((float[]){2, 3}, 2));
    gad_tensor *b = gad_requires_grad(vec((float[]){4, 5}, 2));
    gad_tensor *g[2];
    CHECK(gad_grad(gad_sum_all(gad_mul(a, b)), (gad_tensor *[]){a, b}, 2, g) == GAD_OK);
    CHECK_VALUES(g[0], 0, 4, 5);
    CHECK_VALUES(g[1], 0, 2, 3);
    gad_scope_end();
}

TEST(relu_zero_subgradient) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(vec((float[]){-1, 0, 2}, 3));
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(gad_relu(x)), &x, 1, &g) == GAD_OK);
    CHECK_VALUES(g, 0, 0, 0, 1);
    gad_scope_end();
}

TEST(diamond_runs_each_vjp_once) {
    gad_scope_begin();
    gad_tensor *x = leaf(2);
    gad_tensor *s = gad_add(x, x);
    CHECK_NEAR(g1(gad_mul(s, s), x), 16, 1e-5);
    gad_scope_end();
}

TEST(grad_is_fresh_across_rebuilt_graphs) {
    gad_scope_begin();
    gad_tensor *x = leaf(3);
    CHECK(g1(gad_mul(x, x), x) == 6);
    CHECK(g1(gad_mul(x, x), x) == 6);
    gad_scope_end();
}

TEST(backward_accumulates_until_zeroed) {
    gad_scope_begin();
    gad_tensor *x = leaf(2);
    CHECK(gad_backward(gad_mul(x, x)) == GAD_OK);
    CHECK(gad_item(gad_leaf_grad(x)) == 4);
    CHECK(gad_backward(gad_mul(x, x)) == GAD_OK);
    CHECK(gad_item(gad_leaf_grad(x)) == 8);
    gad_zero_grad(&x, 1);
    CHECK(gad_leaf_grad(x) == NULL);
    CHECK(gad_backward(gad_mul(x, x)) == GAD_OK);
    CHECK(gad_item(gad_leaf_grad(x)) == 4);
    CHECK_OK();
    gad_scope_end();
}

/* The reverse pass moves references instead of retaining and releasing
 * them: a gradient that a VJP passes on unchanged (add's) takes the place
 * of the one the node received, and a VJP's newest result leaves its scope
 * for the parent's slot. Every case here passes a gradient on as it is, to
 * one parent, to the same parent twice, to two parents, to a leaf's slot,
 * or reads the user's seed; nothing is lost or kept alive. */
TEST(gradients_passed_on_are_moved_not_lost) {
    gad_tensor *x = gad_requires_grad(vec((float[]){1, 2}, 2));
    gad_tensor *w = gad_requires_grad(vec((float[]){3, -1}, 2));
    gad_tensor *c = vec((float[]){10, 20}, 2);
    gad_tensor *seed = vec((float[]){0.5f, 4}, 2);
    gad_scope_begin();
    gad_tensor *g[2];
    /* add(x, x): the same parent twice */
    CHECK(gad_grad_ex(gad_add(x, x), seed, &x, 1, g, 0) == GAD_OK);
    CHECK_VALUES(g[0], 0, 1, 8);
    /* add(add(x, w), x): the seed to two parents, then x's twice */
    CHECK(gad_grad_ex(gad_add(gad_add(x, w), x), seed, (gad_tensor *[]){x, w}, 2, g, 0) ==
          GAD_OK);
    CHECK_VALUES(g[0], 0, 1, 8);
    CHECK_VALUES(g[1], 0, 0.5, 4);
    /* the seed straight into a leaf's slot, twice: it accumulates, the
     * seed itself unchanged */
    gad_tensor *y = gad_add(x, c);
    CHECK(gad_grad_ex(y, seed, &x, 1, g, 0) == GAD_OK);
    CHECK_VALUES(g[0], 0, 0.5, 4);
    CHECK(gad_backward(gad_sum_all(gad_add(x, c))) == GAD_OK);
    CHECK(gad_backward(gad_sum_all(gad_add(gad_mul(x, c), x))) == GAD_OK);
    CHECK_VALUES(gad_leaf_grad(x), 0, 12.5, 26); /* grad_ex left the seed there */
    CHECK_VALUES(seed, 0, 0.5, 4);
    /* under create_graph: d/dx of d/dx sum(x*x + x) = 2 */
    gad_tensor *s = gad_sum_all(gad_add(gad_mul(x, x), x));
    CHECK(gad_grad_ex(s, NULL, &x, 1, g, GAD_CREATE_GRAPH) == GAD_OK);
    CHECK_VALUES(g[0], 0, 3, 5);
    gad_tensor *h;
    CHECK(gad_grad(gad_sum_all(g[0]), &x, 1, &h) == GAD_OK);
    CHECK_VALUES(h, 0, 2, 2);
    CHECK_OK();
    gad_scope_end();
    gad_zero_grad(&x, 1);
    gad_release(x), gad_release(w), gad_release(c), gad_release(seed);
    gad_mem_stats ms;
    gad_mem_stats_get(&ms);
    CHECK(ms.live_tensors == 0);
}

TEST(grad_clears_every_reachable_leaf_and_sums_shared_dag) {
    gad_scope_begin();
    gad_tensor *x = leaf(2), *y = leaf(3), *u = leaf(5);
    CHECK(gad_backward(gad_mul(u, u)) == GAD_OK);
    CHECK(gad_item(gad_leaf_grad(u)) == 10);
    gad_tensor *shared = gad_add(x, y);
    gad_tensor *out = gad_add(gad_mul(shared, shared), u);
    gad_tensor *g[2];
    CHECK(gad_grad(out, (gad_tensor *[]){x, y}, 2, g) == GAD_OK);
    CHECK(gad_item(g[0]) == 10);
    CHECK(gad_item(g[1]) == 10);
    /* reached but not requested: holds only this call's gradient */
    CHECK(gad_item(gad_leaf_grad(u)) == 1);
    gad_scope_end();
}

TEST(grad_returns_zero_for_a_stale_disconnected_input) {
    gad_scope_begin();
    gad_tensor *c = leaf(2), *d = leaf(4);
    CHECK(gad_backward(gad_mul(d, d)) == GAD_OK);
    gad_tensor *g[2];
    CHECK(gad_grad(gad_mul(c, c), (gad_tensor *[]){c, d}, 2, g) == GAD_OK);
    CHECK(gad_item(g[0]) == 4);
    CHECK(gad_item(g[1]) == 0);
    CHECK(gad_leaf_grad(d) == NULL);
    CHECK_OK();
    gad_scope_end();
}

/* In-place update of a persistent leaf between two fresh grads: the secant
 * of the convex quadratic is +0.0525; accumulation would give -0.4725. */
TEST(fresh_grad_has_positive_convex_same_batch_secant) {
    gad_tensor *p = gad_requires_grad(vec((float[]){1, -2, 0.5f}, 3));
    float p0[3], p1[3], g0[3], gv1[3];
    gad_read_f32(p, p0, 3);
    gad_scope_begin();
    gad_tensor *g;
    CHECK(gad_grad(gad_mul_scalar(gad_sum_all(gad_mul(p, p)), 0.5), &p, 1, &g) == GAD_OK);
    gad_read_f32(g, g0, 3);
    gad_scope_end();
    float *w = gad_data_mut(p);
    CHECK(w != NULL);
    for (int i = 0; i < 3; i++) w[i] -= 0.1f * g0[i];
    CHECK(gad_is_leaf(p));
    gad_read_f32(p, p1, 3);
    gad_scope_begin();
    CHECK(gad_grad(gad_mul_scalar(gad_sum_all(gad_mul(p, p)), 0.5), &p, 1, &g) == GAD_OK);
    gad_read_f32(g, gv1, 3);
    gad_scope_end();
    float secant = 0;
    for (int i = 0; i < 3; i++) secant += (p1[i] - p0[i]) * (gv1[i] - g0[i]);
    CHECK(secant > 0);
    CHECK_NEAR(secant, 0.0525, 1e-5);
    gad_release(p);
}

TEST(stop_gradient_zeros) {
    gad_scope_begin();
    gad_tensor *x = leaf(3);
    gad_tensor *y = gad_stop_gradient(x);
    CHECK(gad_is_tracked(y)); /* unlike detach, it stays on the tape */
    CHECK(g1(y, x) == 0);
    /* SPEC 7.1 stop_gradient_zero: y = stop(x) * stop(x) */
    gad_tensor *v = gad_requires_grad(vec((float[]){1.5f, -0.5f}, 2));
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(gad_mul(gad_stop_gradient(v), gad_stop_gradient(v))), &v, 1,
                   &g) == GAD_OK);
    CHECK_VALUES(g, 0, 0, 0);
    gad_scope_end();
}

/* ------------------------------------------------------------- SPEC §7.1 */

/* Gradient of sum(f(x)) against central differences with h = 1e-3 in f32,
 * passing when |a - n| <= tol + 0.05 |n| (SPEC 7.1's rule). */
typedef gad_tensor *(*unary_fn)(gad_tensor *);
static void check_sum_grad(gad_tensor *(*f)(gad_tensor *, void *), void *ctx,
                           const float *xv, int64_t n, double tol) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_from_f32(xv, &n, 1));
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(f(x, ctx)), &x, 1, &g) == GAD_OK);
    float ga[16];
    gad_read_f32(g, ga, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        float xp[16], xm[16];
        memcpy(xp, xv, (size_t)n * 4);
        memcpy(xm, xv, (size_t)n * 4);
        xp[i] += 1e-3f;
        xm[i] -= 1e-3f;
        double lp = gad_item(gad_sum_all(f(gad_from_f32(xp, &n, 1), ctx)));
        double lm = gad_item(gad_sum_all(f(gad_from_f32(xm, &n, 1), ctx)));
        double num = (lp - lm) / 2e-3;
        CHECK_MSG(fabs(ga[i] - num) <= tol + 0.05 * fabs(num), "element %lld: %g vs %g",
                  (long long)i, ga[i], num);
    }
    gad_scope_end();
}

static gad_tensor *call_unary(gad_tensor *x, void *fn) { return ((unary_fn)fn)(x); }
static gad_tensor *leaky01(gad_tensor *x) { return gad_leaky_relu(x, 0.1); }

TEST(spec_7_1_unary_grads) {
    const float a[] = {0.3f, -0.2f, 0.8f, 1.1f}, pos[] = {0.4f, 1.0f, 2.2f, 3.0f},
                k[] = {0.4f, -1.0f, 2.2f, -0.3f};
    unary_fn smooth[] = {gad_exp, gad_tanh, gad_sigmoid, gad_softplus};
    for (int i = 0; i < 4; i++) check_sum_grad(call_unary, (void *)smooth[i], a, 4, 2e-2);
    check_sum_grad(call_unary, (void *)gad_silu, a, 4, 3e-2);
    check_sum_grad(call_unary, (void *)gad_sqrt, pos, 4, 2e-2);
    check_sum_grad(call_unary, (void *)gad_log, pos, 4, 2e-2);
    check_sum_grad(call_unary, (void *)gad_abs, k, 4, 2e-2);
    check_sum_grad(call_unary, (void *)leaky01, k, 4, 2e-2);
}

static gad_tensor *relu2(gad_tensor *x, void *c) {
    (void)c;
    return gad_relu(gad_reshape(x, (int64_t[]){2, 2}, 2));
}
static gad_tensor *sum_last(gad_tensor *x, void *c) {
    (void)c;
    return gad_sum(gad_reshape(x, (int64_t[]){2, 2}, 2), (int[]){-1}, 1, 0);
}
static gad_tensor *mean0(gad_tensor *x, void *c) {
    (void)c;
    return gad_mean(gad_reshape(x, (int64_t[]){2, 2}, 2), (int[]){0}, 1, 0);
}
static gad_tensor *neg1(gad_tensor *x, void *c) {
    (void)c;
    return gad_neg(x);
}
static gad_tensor *matmul_fixed(gad_tensor *x, void *c) {
    (void)c;
    return gad_matmul(gad_reshape(x, (int64_t[]){2, 2}, 2),
                      mat((float[]){1, 0.2f, 0, 0.5f}, 2, 2));
}
static gad_tensor *linear_fixed(gad_tensor *x, void *c) {
    (void)c;
    gad_tensor *w = mat((float[]){0.5f, -0.2f, 0.1f, 0.3f}, 2, 2);
    gad_tensor *b = vec((float[]){0.1f, -0.1f}, 2);
    return gad_add(gad_matmul(gad_reshape(x, (int64_t[]){2, 2}, 2), w), b);
}
static gad_tensor *div_fixed(gad_tensor *x, void *c) {
    (void)c;
    return gad_div(x, vec((float[]){1, 2, 0.5f, 1.5f}, 4));
}
static gad_tensor *mul_fixed(gad_tensor *x, void *c) {
    (void)c;
    return gad_mul(x, vec((float[]){1, -0.5f, 0.3f, 2}, 4));
}
static gad_tensor *transpose2(gad_tensor *x, void *c) {
    (void)c;
    return gad_mul(gad_transpose(gad_reshape(x, (int64_t[]){2, 2}, 2)),
                   mat((float[]){1, 2, 3, 4}, 2, 2));
}
static gad_tensor *cat_case(gad_tensor *x, void *c) {
    (void)c;
    gad_tensor *parts[2] = {gad_reshape(x, (int64_t[]){1, 2}, 2), mat((float[]){5, 6}, 1, 2)};
    return gad_mul(gad_cat(parts, 2, 0), mat((float[]){1, 2, 3, 4}, 2, 2));
}
static gad_tensor *stack_case(gad_tensor *x, void *c) {
    (void)c;
    gad_tensor *parts[2] = {x, vec((float[]){3, 4}, 2)};
    return gad_mul(gad_stack(parts, 2, 0), mat((float[]){1, 2, 3, 4}, 2, 2));
}
static gad_tensor *take_case(gad_tensor *x, void *c) {
    (void)c;
    gad_tensor *idx = gad_from_i64((int64_t[]){1, 0}, (int64_t[]){2}, 1);
    return gad_mul(gad_take(gad_reshape(x, (int64_t[]){2, 2}, 2), 1, idx),
                   vec((float[]){2, -3}, 2));
}
static gad_tensor *gather_case(gad_tensor *x, void *c) {
    (void)c;
    gad_tensor *idx = gad_from_i64((int64_t[]){1, 0, 1, 1}, (int64_t[]){2, 2}, 2);
    return gad_mul(gad_gather(gad_reshape(x, (int64_t[]){2, 2}, 2), 1, idx),
                   mat((float[]){1, 2, 3, 4}, 2, 2));
}
static gad_tensor *amax_case(gad_tensor *x, void *c) {
    (void)c;
    return gad_amax(x, 0, 0);
}

TEST(spec_7_1_binary_reduce_matmul_shape_index) {
    const float a[] = {0.5f, -0.25f, 0.75f, 1.0f};
    check_sum_grad(relu2, NULL, a, 4, 2e-2);
    check_sum_grad(sum_last, NULL, a, 4, 1e-3);
    check_sum_grad(mean0, NULL, a, 4, 1e-3);
    check_sum_grad(neg1, NULL, a, 4, 1e-3);
    const float x[] = {0.2f, 0.4f, -0.1f, 0.3f};
    check_sum_grad(matmul_fixed, NULL, x, 4, 3e-2);
    check_sum_grad(linear_fixed, NULL, x, 4, 3e-2);
    const float d[] = {0.5f, 1.5f, 2.0f, 0.8f};
    check_sum_grad(div_fixed, NULL, d, 4, 3e-2);
    check_sum_grad(mul_fixed, NULL, d, 4, 2e-2);
    check_sum_grad(transpose2, NULL, (float[]){1, 2, 3, 4}, 4, 1e-3);
    check_sum_grad(cat_case, NULL, (float[]){1, 2}, 2, 1e-3);
    check_sum_grad(stack_case, NULL, (float[]){1, 2}, 2, 1e-3);
    const float t[] = {0.2f, 0.4f, 0.6f, 0.8f};
    check_sum_grad(take_case, NULL, t, 4, 1e-3);
    check_sum_grad(gather_case, NULL, t, 4, 1e-3);
    check_sum_grad(amax_case, NULL, (float[]){1, 3, 2, 0.5f}, 4, 1e-3);
}

/* The nn embedding of SPEC 7.1 (rows picked by index) is a gather on the
 * tape here: table [3,2], idx [0,2,1]. */
TEST(spec_7_1_embedding_rows) {
    gad_scope_begin();
    gad_tensor *w = gad_requires_grad(mat((float[]){0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, 3, 2));
    gad_tensor *idx = gad_from_i64((int64_t[]){0, 0, 2, 2, 1, 1}, (int64_t[]){3, 2}, 2);
    gad_tensor *rows = gad_gather(w, 0, idx);
    gad_tensor *wt = mat((float[]){1, 2, 3, 4, 5, 6}, 3, 2);
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(gad_mul(rows, wt)), &w, 1, &g) == GAD_OK);
    CHECK_VALUES(g, 0, 1, 2, 5, 6, 3, 4);
    gad_scope_end();
}

/* ------------------------------------------------------------- SPEC §7.6 */

TEST(spec_7_6_ops_suite) {
    gad_scope_begin();
    /* unary_roundtrip_and_grad */
    gad_tensor *x = gad_requires_grad(vec((float[]){0.2f, 0.5f, 1.5f}, 3));
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(gad_exp(x)), &x, 1, &g) == GAD_OK);
    float gv[3];
    gad_read_f32(g, gv, 3);
    CHECK_NEAR(gv[0], expf(0.2f), 1e-5);
    CHECK_NEAR(gv[1], expf(0.5f), 1e-5);
    CHECK_NEAR(gv[2], expf(1.5f), 1e-5);
    CHECK(gad_abs(x) && gad_log(x) && gad_softplus(x) && gad_leaky_relu(x, 0.01) &&
          gad_clamp(x, -1, 1));
    /* cat_and_amax */
    gad_tensor *parts[2] = {vec((float[]){1, 2}, 2), vec((float[]){3, 4}, 2)};
    gad_tensor *c = gad_cat(parts, 2, 0);
    CHECK_VALUES(c, 0, 1, 2, 3, 4);
    CHECK(gad_item(gad_amax(c, 0, 0)) == 4);
    CHECK(gad_amax(gad_zeros((int64_t[]){0}, 1, GAD_F32), 0, 0) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "amax");
    /* arange_eye_randn */
    CHECK_VALUES(gad_arange(0, 4, 1, GAD_F32), 0, 0, 1, 2, 3);
    CHECK_VALUES(gad_eye(2, GAD_F32), 0, 1, 0, 0, 1);
    CHECK(gad_numel(gad_randn((int64_t[]){8}, 1, 42)) == 8);
    /* gelu_grad_finite: [-1, 0, 1] -> [-0.0830, 0.5, 1.0830] */
    gad_tensor *xg = gad_requires_grad(vec((float[]){-1, 0, 1}, 3));
    CHECK(gad_grad(gad_sum_all(gad_gelu(xg)), &xg, 1, &g) == GAD_OK);
    CHECK_VALUES(g, 1e-4, -0.0830, 0.5, 1.0830);
    gad_scope_end();
}

/* cross_entropy_descends, with cross-entropy written from log_softmax and
 * take: SGD 0.2 for 20 steps lowers the loss. */
TEST(spec_7_6_cross_entropy_descends) {
    gad_tensor *w = gad_requires_grad(
        mat((float[]){0.2f, 0, -0.1f, 0.1f, 0.05f, 0, -0.2f, 0.1f, 0.15f}, 3, 3));
    gad_tensor *x = mat((float[]){0.1f, -0.2f, 0.3f, 0, 0.4f, -0.1f}, 2, 3);
    gad_tensor *t = gad_from_i64((int64_t[]){0, 2}, (int64_t[]){2}, 1);
    double first = 0, last = 0;
    for (int step = 0; step < 20; step++) {
        gad_scope_begin();
        gad_tensor *lp = gad_log_softmax(gad_matmul(x, w), -1);
        gad_tensor *loss = gad_neg(gad_mean_all(gad_take(lp, 1, t)));
        double l = gad_item(loss);
        if (step == 0) first = l;
        last = l;
        gad_tensor *g;
        CHECK(gad_grad(loss, &w, 1, &g) == GAD_OK);
        float gv[9], *p = gad_data_mut(w);
        gad_read_f32(g, gv, 9);
        for (int i = 0; i < 9; i++) p[i] -= 0.2f * gv[i];
        gad_scope_end();
    }
    CHECK(last < first);
    gad_release(w);
    gad_release(x);
    gad_release(t);
}

/* ------------------------------------------------------------- SPEC §7.7 */

TEST(spec_7_7_pc_weight_grad_ignores_inference_path) {
    gad_scope_begin();
    gad_tensor *pre = mat((float[]){0.2f, -0.1f, 0.3f}, 1, 3);
    gad_tensor *w = gad_requires_grad(mat((float[]){0.4f, -0.2f, 0.1f}, 3, 1));
    gad_tensor *x = gad_zeros((int64_t[]){1, 1}, 2, GAD_F32);
    for (int i = 0; i < 4; i++)
        x = gad_sub(x, gad_mul_scalar(gad_sub(x, gad_tanh(gad_matmul(pre, gad_detach(w)))), 0.2));
    gad_tensor *e = gad_sum_all(gad_square(gad_sub(gad_stop_gradient(x), gad_tanh(gad_matmul(pre, w)))));
    gad_tensor *g;
    CHECK(gad_grad(e, &w, 1, &g) == GAD_OK);
    CHECK_SHAPE(g, 3, 1);
    float gv[3];
    gad_read_f32(g, gv, 3);
    /* with x held constant: dE/dw = -2 (x - t) (1 - t^2) pre^T, t = tanh(pre w) */
    double pw = 0.2 * 0.4 + 0.1 * 0.2 + 0.3 * 0.1, tt = tanh(pw);
    double xv = 0;
    for (int i = 0; i < 4; i++) xv -= 0.2 * (xv - tanh(pw));
    const double pr[3] = {0.2, -0.1, 0.3};
    for (int i = 0; i < 3; i++) {
        CHECK(isfinite(gv[i]));
        CHECK_NEAR(gv[i], -2 * (xv - tt) * (1 - tt * tt) * pr[i], 1e-6);
    }
    /* stop_gradient_blocks_activity_path */
    gad_tensor *a = leaf(1.5f);
    CHECK(g1(gad_square(gad_stop_gradient(a)), a) == 0);
    gad_scope_end();
}

/* ------------------------------------------------------------- SPEC §7.8 */

TEST(spec_7_8_relu_mlp_trains) {
    gad_tensor *x = mat((float[]){0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f}, 2, 3);
    gad_tensor *y = mat((float[]){0.2f, -0.1f, 0, 0.5f}, 2, 2);
    gad_tensor *p[4] = {
        gad_requires_grad(mat((float[]){0.2f, -0.1f, 0.05f, 0.1f, 0, -0.2f}, 3, 2)),
        gad_requires_grad(gad_zeros((int64_t[]){2}, 1, GAD_F32)),
        gad_requires_grad(mat((float[]){0.3f, -0.2f, 0.1f, 0.25f}, 2, 2)),
        gad_requires_grad(gad_zeros((int64_t[]){2}, 1, GAD_F32))};
    double loss0 = NAN, last = NAN;
    for (int step = 0; step < 25; step++) {
        gad_scope_begin();
        gad_tensor *h = gad_relu(gad_add(gad_matmul(x, p[0]), p[1]));
        gad_tensor *out = gad_add(gad_matmul(h, p[2]), p[3]);
        gad_tensor *loss = gad_mean_all(gad_square(gad_sub(out, y)));
        last = gad_item(loss);
        if (step == 0) loss0 = last;
        gad_tensor *g[4];
        CHECK(gad_grad(loss, p, 4, g) == GAD_OK);
        for (int k = 0; k < 4; k++) {
            float gv[6], *w = gad_data_mut(p[k]);
            gad_read_f32(g[k], gv, 6);
            for (int64_t i = 0; i < gad_numel(p[k]); i++) w[i] -= 0.05f * gv[i];
        }
        gad_scope_end();
    }
    CHECK(isfinite(loss0));
    CHECK(last < loss0);
    for (int k = 0; k < 4; k++) gad_release(p[k]);
    gad_release(x);
    gad_release(y);
}

/* ------------------------------------------------------------- SPEC §9.1 */

TEST(spec_9_1_reduced_axes_reinserted) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_ones((int64_t[]){2, 3}, 2, GAD_F32));
    gad_tensor *w = vec((float[]){1, 2, 3}, 3);
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(gad_mul(gad_mean(x, (int[]){0}, 1, 0), w)), &x, 1, &g) ==
          GAD_OK);
    CHECK_VALUES(g, 1e-7, 0.5, 1, 1.5, 0.5, 1, 1.5);
    CHECK(gad_grad(gad_sum_all(gad_mul(gad_sum(x, (int[]){0}, 1, 0), w)), &x, 1, &g) ==
          GAD_OK);
    CHECK_VALUES(g, 0, 1, 2, 3, 1, 2, 3);
    gad_scope_end();
}

/* Views are on the tape (SPEC D1): a slice gets zeros outside its region,
 * an unsqueezed or broadcast view routes to its source. */
TEST(views_are_differentiable) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_arange(0, 6, 1, GAD_F32));
    gad_tensor *g;
    gad_range r = GAD_RANGE_STEP(1, 6, 2);
    CHECK(gad_grad(gad_sum_all(gad_slice(x, &r, 1)), &x, 1, &g) == GAD_OK);
    CHECK_VALUES(g, 0, 0, 1, 0, 1, 0, 1);
    gad_tensor *u = gad_unsqueeze(x, 0);
    CHECK(gad_is_tracked(u) && !gad_is_leaf(u));
    gad_tensor *b = gad_broadcast_to(u, (int64_t[]){3, 6}, 2);
    CHECK(gad_grad(gad_sum_all(b), &x, 1, &g) == GAD_OK);
    CHECK_VALUES(g, 0, 3, 3, 3, 3, 3, 3);
    CHECK(gad_grad(gad_sum_all(gad_mul(gad_select(gad_reshape(x, (int64_t[]){2, 3}, 2), 1, -1),
                                       vec((float[]){2, 5}, 2))),
                   &x, 1, &g) == GAD_OK);
    CHECK_VALUES(g, 0, 0, 0, 2, 0, 0, 5);
    /* a leaf slot holds a packed tensor even when the gradient was a view */
    CHECK(gad_is_contiguous(g));
    gad_scope_end();
}

/* --------------------------------------------------------- higher order */

typedef struct second {
    const char *name;
    unary_fn f;
    double (*d2)(double);
    double lo, hi;
} second;

static double d2_tanh(double x) { double t = tanh(x); return -2 * t * (1 - t * t); }
static double d2_exp(double x) { return exp(x); }
static double d2_log(double x) { return -1 / (x * x); }
static double d2_sqrt(double x) { return -0.25 * pow(x, -1.5); }
static double sig(double x) { return 1 / (1 + exp(-x)); }
static double d2_sigmoid(double x) { double s = sig(x); return s * (1 - s) * (1 - 2 * s); }
static double d2_silu(double x) { double s = sig(x); return s * (1 - s) * (2 + x * (1 - 2 * s)); }
static double d2_softplus(double x) { double s = sig(x); return s * (1 - s); }
static double d2_square(double x) { (void)x; return 2; }
static double d2_neg(double x) { (void)x; return 0; }
static double d2_gelu(double x) {
    const double k = 0.7978845608028654, c = 0.044715;
    double u = k * (x + c * x * x * x), t = tanh(u);
    double u1 = k * (1 + 3 * c * x * x), u2 = 6 * k * c * x;
    return (1 - t * t) * u1 + 0.5 * x * (1 - t * t) * (u2 - 2 * t * u1 * u1);
}
static gad_tensor *pow25(gad_tensor *x) { return gad_pow_scalar(x, 2.5); }
static double d2_pow25(double x) { return 2.5 * 1.5 * pow(x, 0.5); }
static gad_tensor *muls(gad_tensor *x) { return gad_mul_scalar(x, -3); }

TEST(second_derivatives_of_smooth_unary_ops) {
    const second ops[] = {
        {"tanh", gad_tanh, d2_tanh, -2, 2},        {"exp", gad_exp, d2_exp, -2, 2},
        {"log", gad_log, d2_log, 0.3, 3},          {"sqrt", gad_sqrt, d2_sqrt, 0.3, 3},
        {"sigmoid", gad_sigmoid, d2_sigmoid, -3, 3}, {"silu", gad_silu, d2_silu, -3, 3},
        {"gelu", gad_gelu, d2_gelu, -3, 3},        {"softplus", gad_softplus, d2_softplus, -3, 3},
        {"square", gad_square, d2_square, -2, 2},  {"neg", gad_neg, d2_neg, -2, 2},
        {"pow2.5", pow25, d2_pow25, 0.3, 3},       {"mul_scalar", muls, d2_neg, -2, 2},
    };
    gad_rng *r = gad_rng_new(11);
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        gad_scope_begin();
        gad_tensor *x = gad_requires_grad(
            gad_rng_uniform_tensor(r, (int64_t[]){7}, 1, GAD_F64, ops[k].lo, ops[k].hi));
        gad_tensor *g, *h;
        CHECK(gad_grad_ex(gad_sum_all(ops[k].f(x)), NULL, &x, 1, &g, GAD_CREATE_GRAPH) == GAD_OK);
        gad_status st = gad_grad(gad_sum_all(g), &x, 1, &h);
        CHECK_MSG(st == GAD_OK, "%s: %s", ops[k].name,
                  gad_last_error() ? gad_last_error()->text : "");
        double xv[7], hv[7];
        gad_read_f64(x, xv, 7);
        gad_read_f64(h, hv, 7);
        for (int i = 0; i < 7; i++)
            CHECK_MSG(fabs(hv[i] - ops[k].d2(xv[i])) <= 1e-12 * (1 + fabs(hv[i])),
                      "%s''(%g) = %.15g, closed form %.15g", ops[k].name, xv[i], hv[i],
                      ops[k].d2(xv[i]));
        gad_scope_end();
    }
    gad_rng_free(r);
}

/* A tanh MLP's loss, f64, for the HVP test. */
static gad_tensor *mlp_loss(gad_tensor *w1, gad_tensor *w2, gad_tensor *x, gad_tensor *y) {
    gad_tensor *out = gad_matmul(gad_tanh(gad_matmul(x, w1)), w2);
    return gad_mean_all(gad_square(gad_sub(out, y)));
}

TEST(mlp_hessian_vector_product_matches_finite_differences) {
    gad_rng *r = gad_rng_new(5);
    gad_scope_begin();
    gad_tensor *x = gad_rng_normal_tensor(r, (int64_t[]){6, 4}, 2, GAD_F64, 0, 1);
    gad_tensor *y = gad_rng_normal_tensor(r, (int64_t[]){6, 2}, 2, GAD_F64, 0, 1);
    gad_tensor *w[2] = {
        gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){4, 5}, 2, GAD_F64, 0, 0.5)),
        gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){5, 2}, 2, GAD_F64, 0, 0.5))};
    gad_tensor *v[2] = {gad_rng_normal_tensor(r, (int64_t[]){4, 5}, 2, GAD_F64, 0, 1),
                        gad_rng_normal_tensor(r, (int64_t[]){5, 2}, 2, GAD_F64, 0, 1)};
    gad_tensor *hv[2];
    CHECK(gad_hvp(mlp_loss(w[0], w[1], x, y), w, v, 2, hv) == GAD_OK);
    /* (grad(w + e v) - grad(w - e v)) / 2e */
    const double e = 1e-5;
    gad_tensor *gp[2], *gm[2];
    gad_tensor *wp[2], *wm[2];
    for (int k = 0; k < 2; k++) {
        wp[k] = gad_requires_grad(gad_add(gad_detach(w[k]), gad_mul_scalar(v[k], e)));
        wm[k] = gad_requires_grad(gad_sub(gad_detach(w[k]), gad_mul_scalar(v[k], e)));
    }
    CHECK(gad_grad(mlp_loss(wp[0], wp[1], x, y), wp, 2, gp) == GAD_OK);
    CHECK(gad_grad(mlp_loss(wm[0], wm[1], x, y), wm, 2, gm) == GAD_OK);
    for (int k = 0; k < 2; k++) {
        gad_tensor *fd = gad_mul_scalar(gad_sub(gp[k], gm[k]), 1 / (2 * e));
        double a[20], b[20];
        gad_read_f64(hv[k], a, 20);
        gad_read_f64(fd, b, 20);
        for (int64_t i = 0; i < gad_numel(fd); i++) CHECK_NEAR(a[i], b[i], 1e-7);
    }
    gad_scope_end();
    gad_rng_free(r);
}

TEST(jvp_matches_finite_differences) {
    gad_rng *r = gad_rng_new(6);
    gad_scope_begin();
    gad_tensor *x = gad_rng_normal_tensor(r, (int64_t[]){3, 4}, 2, GAD_F64, 0, 1);
    gad_tensor *w = gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){4, 2}, 2, GAD_F64, 0, 1));
    gad_tensor *v = gad_rng_normal_tensor(r, (int64_t[]){4, 2}, 2, GAD_F64, 0, 1);
    gad_tensor *jv;
    CHECK(gad_jvp(gad_tanh(gad_matmul(x, w)), &w, &v, 1, &jv) == GAD_OK);
    CHECK_SHAPE(jv, 3, 2);
    const double e = 1e-6;
    gad_tensor *fp = gad_tanh(gad_matmul(x, gad_add(gad_detach(w), gad_mul_scalar(v, e))));
    gad_tensor *fm = gad_tanh(gad_matmul(x, gad_sub(gad_detach(w), gad_mul_scalar(v, e))));
    double a[6], b[6];
    gad_read_f64(jv, a, 6);
    gad_read_f64(gad_mul_scalar(gad_sub(fp, fm), 1 / (2 * e)), b, 6);
    for (int i = 0; i < 6; i++) CHECK_NEAR(a[i], b[i], 1e-8);
    gad_scope_end();
    gad_rng_free(r);
}

/* grad of grad through a shared graph: d/dx of (d/dx x^2 y) = 2y, and the
 * mixed derivative w.r.t. y is 2x. */
TEST(grad_of_grad_mixed) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_scalar_f64(3)), *y = gad_requires_grad(gad_scalar_f64(5));
    gad_tensor *g;
    CHECK(gad_grad_ex(gad_mul(gad_square(x), y), NULL, &x, 1, &g, GAD_CREATE_GRAPH) == GAD_OK);
    CHECK(gad_item(g) == 30);
    CHECK(gad_is_tracked(g));
    gad_tensor *h[2];
    CHECK(gad_grad(g, (gad_tensor *[]){x, y}, 2, h) == GAD_OK);
    CHECK(gad_item(h[0]) == 10);
    CHECK(gad_item(h[1]) == 6);
    /* without create_graph the gradient is a constant */
    CHECK(gad_grad(gad_mul(gad_square(x), y), &x, 1, &g) == GAD_OK);
    CHECK(!gad_is_tracked(g));
    gad_scope_end();
    gad_mem_stats ms;
    gad_mem_stats_get(&ms);
    CHECK(ms.live_tensors == 0); /* no cycle between a leaf and its gradient */
}

/* ------------------------------------------------------ modes and tools */

TEST(no_grad_and_detach) {
    gad_scope_begin();
    gad_tensor *x = leaf(2);
    CHECK(gad_grad_enabled());
    gad_no_grad_begin();
    gad_no_grad_begin();
    CHECK(!gad_grad_enabled());
    CHECK(!gad_is_tracked(gad_mul(x, x)));
    gad_no_grad_end();
    CHECK(!gad_is_tracked(gad_mul(x, x)));
    gad_no_grad_end();
    CHECK(gad_grad_enabled());
    CHECK(gad_is_tracked(gad_mul(x, x)));
    gad_tensor *d = gad_detach(x);
    CHECK(!gad_is_tracked(d) && gad_item(d) == 2);
    CHECK(g1(gad_mul(d, x), x) == 2); /* d is a constant */
    gad_no_grad_end();                /* unbalanced end: harmless */
    CHECK(gad_grad_enabled());
    gad_scope_end();
}

TEST(anomaly_mode_names_the_op) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(vec((float[]){1, 2}, 2));
    gad_tensor *z = gad_sum_all(gad_log(gad_mul_scalar(x, 0))); /* log(0) */
    gad_tensor *g;
    CHECK(gad_set_anomaly(1) == 0);
    CHECK(gad_grad(z, &x, 1, &g) == GAD_ERR_DOMAIN);
    const gad_error *e = gad_last_error();
    CHECK(e && strcmp(e->op, "log") == 0 && strstr(e->message, "mul_scalar"));
    gad_clear_error();
    CHECK(gad_set_anomaly(0) == 1);
    CHECK(gad_grad(z, &x, 1, &g) == GAD_OK); /* off: NaN/Inf flow through */
    /* half gradients too (their exponent bits, not isfinite on a float):
     * sqrt'(0) = Inf in bf16 and f16; a finite one passes */
    for (int d = 0; d < 2; d++) {
        gad_dtype_t dt = d ? GAD_F16 : GAD_BF16;
        gad_tensor *h = gad_requires_grad(gad_cast(vec((float[]){0, 4}, 2), dt));
        gad_tensor *hf = gad_requires_grad(gad_cast(vec((float[]){1, 4}, 2), dt));
        CHECK(gad_set_anomaly(1) == 0);
        CHECK(gad_grad(gad_sum_all(gad_sqrt(h)), &h, 1, &g) == GAD_ERR_DOMAIN);
        e = gad_last_error();
        CHECK(e && strcmp(e->op, "sqrt") == 0 && strstr(e->message, "NaN or Inf"));
        gad_clear_error();
        CHECK(gad_grad(gad_sum_all(gad_sqrt(hf)), &hf, 1, &g) == GAD_OK);
        CHECK(gad_dtype(g) == dt && gad_item(gad_select(g, 0, 1)) == 0.25);
        CHECK(gad_set_anomaly(0) == 1);
        CHECK(gad_grad(gad_sum_all(gad_sqrt(h)), &h, 1, &g) == GAD_OK);
    }
    gad_scope_end();
}

TEST(graph_dot_lists_ops_and_leaves) {
    gad_scope_begin();
    gad_tensor *a = leaf(1), *b = leaf(2);
    gad_tensor *y = gad_tanh(gad_add(gad_mul(a, b), a));
    FILE *f = tmpfile();
    CHECK(f != NULL);
    CHECK(gad_graph_dot(y, f) == GAD_OK);
    rewind(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    CHECK(strstr(buf, "digraph") && strstr(buf, "tanh") && strstr(buf, "add") &&
          strstr(buf, "mul"));
    int leaves = 0, edges = 0;
    for (char *p = buf; (p = strstr(p, "label=\"leaf")); p++) leaves++;
    for (char *p = buf; (p = strstr(p, "->")); p++) edges++;
    CHECK(leaves == 2);
    CHECK(edges == 5); /* a,b -> mul; mul,a -> add; add -> tanh */
    gad_scope_end();
}

/* A chain of a million ops differentiates without stack growth, and frees
 * without recursion. */
/* A wide graph: 300 leaves, each scaled, summed by a balanced tree. The
 * pass's queue then holds over a hundred nodes of one level at once and it
 * reaches more leaves than it keeps inline: every leaf gets exactly its own
 * factor, each VJP running once. */
TEST(wide_tree_of_leaves) {
    gad_scope_begin();
    enum { N = 300 };
    gad_tensor *x[N], *t[N], *g[N];
    for (int i = 0; i < N; i++) {
        x[i] = gad_requires_grad(gad_scalar_f64(1.0 + i));
        t[i] = gad_mul_scalar(gad_square(x[i]), i % 7 + 1); /* (i%7+1) x^2 */
    }
    for (int n = N; n > 1;) { /* pairs, an odd one carried up */
        int m = 0;
        for (int i = 0; i + 1 < n; i += 2) t[m++] = gad_add(t[i], t[i + 1]);
        if (n & 1) t[m++] = t[n - 1];
        n = m;
    }
    CHECK(gad_grad(t[0], x, N, g) == GAD_OK);
    for (int i = 0; i < N; i++)
        CHECK_MSG(gad_item(g[i]) == 2.0 * (i % 7 + 1) * (1.0 + i), "leaf %d: %g", i,
                  gad_item(g[i]));
    gad_scope_end();
}

TEST(million_op_chain) {
    gad_tensor *x = gad_requires_grad(gad_scalar_f32(1));
    gad_tensor *y = gad_retain(x);
    const int n = 1000000;
    for (int i = 0; i < n; i++) {
        gad_tensor *next = (i & 1) ? gad_add_scalar(y, 0.5) : gad_mul_scalar(y, 1.0);
        gad_release(y);
        y = next;
        if (!y) break;
    }
    CHECK(y != NULL);
    CHECK_NEAR(gad_item(y), 1 + 0.5 * (n / 2), 1e-3);
    gad_tensor *g;
    CHECK(gad_grad(y, &x, 1, &g) == GAD_OK);
    CHECK(gad_item(g) == 1);
    gad_release(g);
    gad_release(y); /* frees a million nodes, iteratively */
    gad_release(x);
    gad_mem_stats ms;
    gad_mem_stats_get(&ms);
    CHECK(ms.live_tensors == 0);
}

/* ------------------------------------------------------------ error kinds */

TEST(engine_errors) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(vec((float[]){1, 2}, 2));
    gad_tensor *g[1] = {(gad_tensor *)1};
    CHECK(gad_grad(gad_mul(x, x), &x, 1, g) == GAD_ERR_SHAPE); /* not a scalar */
    CHECK(g[0] == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "grad");
    CHECK(gad_backward(gad_mul(x, x)) == GAD_ERR_SHAPE);
    CHECK_ERR(GAD_ERR_SHAPE, "backward");
    gad_tensor *nonleaf = gad_mul(x, x);
    /* hvp takes leaves only (grad takes any tensor on the tape) */
    gad_tensor *hv1;
    CHECK(gad_hvp(gad_sum_all(nonleaf), &nonleaf, &x, 1, &hv1) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "hvp");
    gad_tensor *c = vec((float[]){1}, 1);
    CHECK(gad_grad(gad_sum_all(x), &c, 1, g) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "grad");
    gad_tensor *i = gad_argmax(x, 0, 0); /* an i64 output */
    CHECK(gad_grad(i, &x, 1, g) == GAD_ERR_DTYPE);
    CHECK_ERR(GAD_ERR_DTYPE, "grad");
    CHECK(gad_requires_grad(gad_from_i64((int64_t[]){1}, (int64_t[]){1}, 1)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "requires_grad");
    CHECK(gad_grad(NULL, &x, 1, g) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "grad");
    CHECK(gad_leaf_grad(nonleaf) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "leaf_grad");
    /* writing into the output of a tracked op: not-unique */
    CHECK(gad_data_mut(nonleaf) == NULL);
    CHECK_ERR(GAD_ERR_NOT_UNIQUE, "data_mut");
    CHECK(gad_data_mut(gad_detach(nonleaf)) != NULL);
    /* a seed must match the output */
    CHECK(gad_grad_ex(nonleaf, gad_ones((int64_t[]){3}, 1, GAD_F32), &x, 1, g, 0) ==
          GAD_ERR_SHAPE);
    CHECK_ERR(GAD_ERR_SHAPE, "grad");
    /* hvp and jvp check their vectors */
    gad_tensor *hv;
    CHECK(gad_hvp(gad_sum_all(nonleaf), &x, (gad_tensor *[]){c}, 1, &hv) == GAD_ERR_SHAPE);
    CHECK_ERR(GAD_ERR_SHAPE, "hvp");
    gad_scope_end();
}

/* Fuzz finding: hvp and jvp with inputs of different float dtypes (a loss
 * of an f32 and an f64 leaf) gave GAD_OK with a dtype error pending. The
 * products are summed in f64: d2/dx2 (x^2 y) v = 2 y v, d2/dxdy = 2 x. */
TEST(hvp_jvp_mixed_dtypes) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_scalar_f32(3));
    gad_tensor *y = gad_requires_grad(gad_scalar_f64(5));
    gad_tensor *in[2] = {x, y};
    gad_tensor *loss = gad_mul(gad_cast(gad_square(x), GAD_F64), y);
    gad_tensor *v[2] = {gad_scalar_f32(1), gad_scalar_f64(10)};
    gad_tensor *hv[2];
    CHECK(gad_hvp(loss, in, v, 2, hv) == GAD_OK);
    CHECK_OK();
    /* H = [[2y, 2x], [2x, 0]] = [[10, 6], [6, 0]]; H v = [10 + 60, 6] */
    CHECK(hv[0] && gad_dtype(hv[0]) == GAD_F32 && hv[1] && gad_dtype(hv[1]) == GAD_F64);
    if (hv[0] && hv[1]) {
        CHECK_NEAR(gad_item(hv[0]), 70, 1e-4);
        CHECK_NEAR(gad_item(hv[1]), 6, 1e-12);
    }
    gad_tensor *jv;
    CHECK(gad_jvp(loss, in, v, 2, &jv) == GAD_OK);
    CHECK_OK();
    /* J = [2xy, x^2] = [30, 9]; J v = 30 + 90 */
    if (jv) CHECK_NEAR(gad_item(jv), 120, 1e-9);
    gad_scope_end();
}

/* With a seed, grad is a vector-Jacobian product of any output. */
TEST(vjp_with_seed) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(vec((float[]){1, 2, 3}, 3));
    gad_tensor *g;
    CHECK(gad_grad_ex(gad_square(x), vec((float[]){1, 10, 100}, 3), &x, 1, &g, 0) == GAD_OK);
    CHECK_VALUES(g, 0, 2, 40, 600);
    gad_scope_end();
}


/* ------------------------------------- gradients with respect to activations */

/* f(h) = sum(tanh(h)^2 * c) for a fixed c, the part of the graph above h. */
static gad_tensor *above_h(gad_tensor *h, gad_tensor *c) {
    return gad_sum_all(gad_mul(gad_square(gad_tanh(h)), c));
}

/* d out / d h for h = x @ w, an activation: the analytic value
 * 2 tanh(h) (1 - tanh(h)^2) c, and central differences of f with h a
 * constant; the leaves' gradients in the same call are those of a call
 * with the leaves alone. */
TEST(grad_wrt_activation_matches_analytic_and_fd) {
    gad_scope_begin();
    const double xv[6] = {0.3, -0.7, 1.1, 0.5, 0.2, -0.4};
    const double wv[6] = {0.9, -0.3, 0.4, 0.8, -0.6, 0.1};
    const double cv[4] = {1.0, -2.0, 0.5, 3.0};
    gad_tensor *x = gad_requires_grad(gad_from_f64(xv, (int64_t[]){2, 3}, 2));
    gad_tensor *w = gad_requires_grad(gad_from_f64(wv, (int64_t[]){3, 2}, 2));
    gad_tensor *c = gad_from_f64(cv, (int64_t[]){2, 2}, 2);
    gad_tensor *h = gad_matmul(x, w);
    gad_tensor *out = above_h(h, c);
    gad_tensor *in[3] = {h, x, w}, *g[3];
    CHECK(gad_grad(out, in, 3, g) == GAD_OK);
    CHECK_OK();
    double hv[4], gh[4];
    CHECK(gad_read_f64(h, hv, 4) == GAD_OK && gad_read_f64(g[0], gh, 4) == GAD_OK);
    CHECK(gad_rank(g[0]) == 2 && gad_dim(g[0], 0) == 2 && gad_dim(g[0], 1) == 2);
    CHECK(gad_dtype(g[0]) == GAD_F64 && gad_is_contiguous(g[0]));
    for (int k = 0; k < 4; k++) {
        double t = tanh(hv[k]);
        CHECK_NEAR(gh[k], 2 * t * (1 - t * t) * cv[k], 1e-12);
        double e = 1e-6, hp[4], hm[4];
        memcpy(hp, hv, sizeof hp), memcpy(hm, hv, sizeof hm);
        hp[k] += e, hm[k] -= e;
        double fp = gad_item(above_h(gad_from_f64(hp, (int64_t[]){2, 2}, 2), c));
        double fm = gad_item(above_h(gad_from_f64(hm, (int64_t[]){2, 2}, 2), c));
        CHECK_NEAR(gh[k], (fp - fm) / (2 * e), 1e-8);
    }
    /* the chain rule through h: dx = gh @ w^T, dw = x^T @ gh, exactly what
     * a call with the leaves alone gives */
    gad_tensor *g2[2];
    CHECK(gad_grad(out, (gad_tensor *[]){x, w}, 2, g2) == GAD_OK);
    double a[6], b[6];
    for (int i = 0; i < 2; i++) {
        CHECK(gad_read_f64(g[1 + i], a, 6) == GAD_OK && gad_read_f64(g2[i], b, 6) == GAD_OK);
        CHECK(memcmp(a, b, sizeof a) == 0);
    }
    double dx[6];
    CHECK(gad_read_f64(g[1], dx, 6) == GAD_OK);
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 3; k++)
            CHECK_NEAR(dx[r * 3 + k], gh[r * 2] * wv[k * 2] + gh[r * 2 + 1] * wv[k * 2 + 1],
                       1e-12);
    gad_scope_end();
}

/* h = x^2 is an ancestor of another input k = exp(h); out = sum(k h) +
 * sum(x). d out/dk = h (k's direct use); d out/dh = k + h exp(h), the
 * total through both of h's consumers (k among them); d out/dx =
 * 2x d out/dh + 1. Inputs in any order give the same values. */
TEST(grad_wrt_activation_that_is_an_ancestor_of_another_input) {
    gad_scope_begin();
    const double xv[3] = {0.5, -1.0, 2.0};
    gad_tensor *x = gad_requires_grad(gad_from_f64(xv, (int64_t[]){3}, 1));
    gad_tensor *h = gad_square(x);
    gad_tensor *k = gad_exp(h);
    gad_tensor *out = gad_add(gad_sum_all(gad_mul(k, h)), gad_sum_all(x));
    gad_tensor *orders[2][3] = {{h, k, x}, {x, k, h}};
    for (int o = 0; o < 2; o++) {
        gad_tensor *g[3];
        CHECK(gad_grad(out, orders[o], 3, g) == GAD_OK);
        CHECK_OK();
        double gv[3][3];
        for (int i = 0; i < 3; i++) CHECK(gad_read_f64(g[i], gv[i], 3) == GAD_OK);
        for (int j = 0; j < 3; j++) {
            double hh = xv[j] * xv[j], kk = exp(hh), dh = kk + hh * kk;
            for (int i = 0; i < 3; i++) {
                gad_tensor *t = orders[o][i];
                double want = t == h ? dh : t == k ? hh : 2 * xv[j] * dh + 1;
                CHECK_NEAR(gv[i][j], want, 1e-12 * (1 + fabs(want)));
            }
        }
    }
    /* the same tensor twice, and the output itself: its seed */
    gad_tensor *g[3];
    CHECK(gad_grad(out, (gad_tensor *[]){h, out, h}, 3, g) == GAD_OK);
    CHECK(gad_item(g[1]) == 1);
    double a[3], b[3];
    CHECK(gad_read_f64(g[0], a, 3) == GAD_OK && gad_read_f64(g[2], b, 3) == GAD_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
    gad_scope_end();
}

/* A gradient that a VJP hands on as a broadcast view (sum's) comes back
 * packed, and an activation out does not reach gives zeros, as an unused
 * leaf does. */
TEST(grad_wrt_activation_packed_and_unreached) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(mat((float[]){1, 2, 3, 4, 5, 6}, 2, 3));
    gad_tensor *h = gad_mul_scalar(x, 2);
    gad_tensor *unused = gad_neg(x);
    gad_tensor *g[2];
    CHECK(gad_grad(gad_sum_all(h), (gad_tensor *[]){h, unused}, 2, g) == GAD_OK);
    CHECK(gad_is_contiguous(g[0]));
    CHECK_VALUES(g[0], 0, 1, 1, 1, 1, 1, 1);
    CHECK_VALUES(g[1], 0, 0, 0, 0, 0, 0, 0);
    CHECK(gad_rank(g[1]) == 2 && gad_dim(g[1], 1) == 3);
    /* a constant is still refused */
    gad_tensor *c = mat((float[]){1, 2}, 1, 2);
    CHECK(gad_grad(gad_sum_all(h), &c, 1, g) == GAD_ERR_DOMAIN && g[0] == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "grad");
    gad_scope_end();
}

/* create_graph through an activation: h = x^2, out = sum(h^3). g_h = 3 h^2
 * is on the tape; d sum(g_h) / dx = sum 6h * 2x = 12 x^3 and
 * d sum(g_h) / dh = 6 h; the first-order leaf slot holds values only. */
TEST(grad_wrt_activation_create_graph) {
    gad_scope_begin();
    const double xv[3] = {0.5, -1.5, 2.0};
    gad_tensor *x = gad_requires_grad(gad_from_f64(xv, (int64_t[]){3}, 1));
    gad_tensor *h = gad_square(x);
    gad_tensor *out = gad_sum_all(gad_pow_scalar(h, 3));
    gad_tensor *gh;
    CHECK(gad_grad_ex(out, NULL, &h, 1, &gh, GAD_CREATE_GRAPH) == GAD_OK);
    CHECK(gad_is_tracked(gh));
    gad_tensor *s = gad_sum_all(gh);
    gad_tensor *g2[2];
    CHECK(gad_grad(s, (gad_tensor *[]){x, h}, 2, g2) == GAD_OK);
    CHECK_OK();
    double a[3], b[3], v[3];
    CHECK(gad_read_f64(gh, v, 3) == GAD_OK);
    CHECK(gad_read_f64(g2[0], a, 3) == GAD_OK && gad_read_f64(g2[1], b, 3) == GAD_OK);
    for (int j = 0; j < 3; j++) {
        double hh = xv[j] * xv[j];
        CHECK_NEAR(v[j], 3 * hh * hh, 1e-12);
        CHECK_NEAR(a[j], 12 * xv[j] * xv[j] * xv[j], 1e-12);
        CHECK_NEAR(b[j], 6 * hh, 1e-12);
    }
    gad_scope_end();
    gad_mem_stats ms;
    gad_cache_trim();
    gad_mem_stats_get(&ms);
    CHECK(ms.live_tensors == 0); /* no cycle through a captured gradient */
}

int main(void) {
    RUN(mul_grad);
    RUN(relu_zero_subgradient);
    RUN(diamond_runs_each_vjp_once);
    RUN(grad_is_fresh_across_rebuilt_graphs);
    RUN(backward_accumulates_until_zeroed);
    RUN(gradients_passed_on_are_moved_not_lost);
    RUN(grad_clears_every_reachable_leaf_and_sums_shared_dag);
    RUN(grad_returns_zero_for_a_stale_disconnected_input);
    RUN(fresh_grad_has_positive_convex_same_batch_secant);
    RUN(stop_gradient_zeros);
    RUN(spec_7_1_unary_grads);
    RUN(spec_7_1_binary_reduce_matmul_shape_index);
    RUN(spec_7_1_embedding_rows);
    RUN(spec_7_6_ops_suite);
    RUN(spec_7_6_cross_entropy_descends);
    RUN(spec_7_7_pc_weight_grad_ignores_inference_path);
    RUN(spec_7_8_relu_mlp_trains);
    RUN(spec_9_1_reduced_axes_reinserted);
    RUN(views_are_differentiable);
    RUN(second_derivatives_of_smooth_unary_ops);
    RUN(mlp_hessian_vector_product_matches_finite_differences);
    RUN(jvp_matches_finite_differences);
    RUN(grad_of_grad_mixed);
    RUN(no_grad_and_detach);
    RUN(anomaly_mode_names_the_op);
    RUN(graph_dot_lists_ops_and_leaves);
    RUN(million_op_chain);
    RUN(wide_tree_of_leaves);
    RUN(engine_errors);
    RUN(vjp_with_seed);
    RUN(hvp_jvp_mixed_dtypes);
    RUN(grad_wrt_activation_matches_analytic_and_fd);
    RUN(grad_wrt_activation_that_is_an_ancestor_of_another_input);
    RUN(grad_wrt_activation_packed_and_unreached);
    RUN(grad_wrt_activation_create_graph);
    return test_summary();
}
