/* test_gradcheck.c: every op of the registry (src/ops/ops.def) against
 * central finite differences in f64 (gad_gradcheck), on each of its sample
 * cases (broadcasting, size-1 and size-0 dims, rank 0, random shapes) and
 * with its inputs in four layouts (contiguous, transposed storage, strided
 * storage, a broadcast view with stride 0); smooth
 * ops also against finite differences of their first derivatives
 * (gad_gradgradcheck). A new op in ops.def is checked here without a new
 * test: its sample function provides the cases. The composite rows (ops
 * made of other ops, no VJP of their own) are checked as the X rows are,
 * through the nodes they record. */
#include "test.h"

#include "gad_int.h"
#include "ops/ops_int.h"
#include "test_registry.h"

enum { CONTIGUOUS, TRANSPOSED, STRIDED, BROADCAST, NLAYOUTS };
static const char *layout_name[] = {"contiguous", "transposed", "strided", "broadcast"};

/* A leaf with t's values laid out non-contiguously. */
static gad_tensor *relayout(gad_tensor *t, int layout) {
    gad_tensor *c = gad_detach(t);
    int r = gad_rank(c);
    if (layout == TRANSPOSED && r >= 2) {
        int perm[GAD_MAX_RANK];
        for (int i = 0; i < r; i++) perm[i] = r - 1 - i;
        gad_tensor *base = gad_clone(gad_permute(c, perm, r)); /* reversed shape */
        return gad_requires_grad(gad_permute(base, perm, r));
    }
    if (layout == STRIDED && r >= 1) {
        /* every other element of a base twice as long on the last axis */
        int64_t shape[GAD_MAX_RANK];
        memcpy(shape, gad_shape(c), (size_t)r * sizeof *shape);
        shape[r - 1] *= 2;
        gad_tensor *base = gad_zeros(shape, r, gad_dtype(c));
        gad_range rg[GAD_MAX_RANK];
        for (int i = 0; i < r; i++) rg[i] = GAD_ALL;
        rg[r - 1] = GAD_RANGE_STEP(0, GAD_NIL, 2);
        gad_tensor *view = gad_slice(base, rg, r);
        /* write t's values into the strided positions of base */
        int64_t st[GAD_MAX_RANK];
        memcpy(st, gad_strides(view), (size_t)r * sizeof *st);
        gad__copy_strided(c, (char *)gad_data_mut(base), st);
        return gad_requires_grad(gad_slice(base, rg, r));
    }
    if (layout == BROADCAST) {
        /* the first slice along the first axis longer than 1, stretched back
         * to t's shape: a leaf whose elements share storage (stride 0) */
        for (int d = 0; d < r; d++) {
            if (gad_shape(c)[d] <= 1) continue;
            gad_range rg[GAD_MAX_RANK];
            for (int i = 0; i < r; i++) rg[i] = GAD_ALL;
            rg[d] = GAD_RANGE(0, 1);
            gad_tensor *base = gad_clone(gad_slice(c, rg, r));
            return gad_requires_grad(gad_broadcast_to(base, gad_shape(c), r));
        }
    }
    return NULL; /* this layout does not apply to t */
}

static int is_float_leaf(gad_tensor *t) {
    return t && gad_is_leaf(t) && (gad_dtype(t) == GAD_F32 || gad_dtype(t) == GAD_F64);
}

/* A sample without a float leaf (a composite of no gradient: any_all,
 * sinusoidal_positions): its result must not be on the tape. */
static int no_leaf_records_nothing(const gad_op_entry *e, gad_op_sample *s) {
    for (int i = 0; i < s->n; i++)
        if (is_float_leaf(s->in[i])) return 0;
    gad_tensor *y = s->apply(s, s->in, s->n);
    CHECK_MSG(y && !gad_is_tracked(y), "%s %s: %s", e->info.name, s->what,
              y ? "the result is on the tape"
                : (gad_last_error() ? gad_last_error()->text : "NULL"));
    gad_clear_error();
    return 1;
}

TEST(every_op_passes_gradcheck) {
    gad_rng *rng = gad_rng_new(2024);
    int checked_ops = 0, composites = 0;
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        if (!GAD_OP_DIFFERENTIABLE(op)) continue; /* the NOGRAD rows have no gradient */
        const gad_op_entry *e = &gad__ops[op];
        int cases = 0;
        for (int v = 0;; v++) {
            gad_op_sample s;
            if (!test_sample(op, rng, v, &s)) {
                CHECK_OK();
                break;
            }
            cases++;
            if (no_leaf_records_nothing(e, &s)) {
                gad_scope_end();
                continue;
            }
            for (int layout = 0; layout < NLAYOUTS; layout++) {
                gad_tensor *in[12];
                int changed = 0;
                for (int i = 0; i < s.n; i++) {
                    in[i] = s.in[i];
                    if (layout != CONTIGUOUS && is_float_leaf(s.in[i])) {
                        gad_tensor *t = relayout(s.in[i], layout);
                        if (t) {
                            in[i] = t;
                            changed = 1;
                        }
                    }
                }
                if (layout != CONTIGUOUS && !changed) continue;
                /* repeated values make ties, where amax (and sort, topk)
                 * has no derivative, and a standard deviation of 0, where
                 * stddev's square root has none */
                if (layout == BROADCAST && (op == GAD_OP_AMAX || op == GAD_OP_SORT ||
                                            op == GAD_OP_TOPK || op == GAD_OP_MAX_POOL ||
                                            op == GAD_OP_STDDEV))
                    continue;
                gad_gradcheck_result r;
                gad_status st = gad_gradcheck(s.apply, &s, in, s.n, NULL, &r);
                CHECK_MSG(st == GAD_OK && r.passed,
                          "%s %s %s: status %s, worst: input %d element %lld analytic %.10g "
                          "numeric %.10g (%s)",
                          e->info.name, s.what, layout_name[layout], gad_status_str(st),
                          r.input, (long long)r.index, r.analytic, r.numeric,
                          gad_last_error() ? gad_last_error()->text : "");
                gad_clear_error();
                if (s.smooth && (layout == CONTIGUOUS || layout == TRANSPOSED)) {
                    st = gad_gradgradcheck(s.apply, &s, in, s.n, NULL, &r);
                    CHECK_MSG(st == GAD_OK && r.passed,
                              "second order %s %s %s: status %s, worst: input %d element "
                              "%lld analytic %.10g numeric %.10g (%s)",
                              e->info.name, s.what, layout_name[layout], gad_status_str(st),
                              r.input, (long long)r.index, r.analytic, r.numeric,
                              gad_last_error() ? gad_last_error()->text : "");
                    gad_clear_error();
                }
            }
            gad_scope_end();
        }
        /* stop_gradient's zero VJP is checked exactly in test_autodiff */
        if (op != GAD_OP_STOP_GRADIENT) CHECK_MSG(cases > 0, "%s has no sample", e->info.name);
        if (cases && op < GAD_OP_NOGRAD_) checked_ops++;
        if (cases && op >= GAD_OP_COMPOSITE_) composites++;
    }
    printf("  %d of %d ops and %d composites gradient-checked\n", checked_ops, gad_op_count(),
           composites);
    CHECK(checked_ops == gad_op_count() - 1);
    CHECK(composites == GAD_OP_COUNT_ - GAD_OP_COMPOSITE_);
    gad_rng_free(rng);
}

/* Every op's VJP has two paths: a fused first-order one (grad mode off, as
 * the engine runs VJPs without create_graph) and one built from tracked ops
 * (GAD_CREATE_GRAPH, whose results are differentiable again). gradgradcheck
 * checks the second against its own derivative only; here both must give
 * the same first derivatives, so that a wrong create_graph derivative (an
 * elementwise row's dexpr, a fused op's composition) is caught. */
TEST(create_graph_gradients_equal_plain_ones) {
    gad_rng *rng = gad_rng_new(2025);
    int checked = 0;
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        if (!GAD_OP_DIFFERENTIABLE(op)) continue;
        const gad_op_entry *e = &gad__ops[op];
        for (int v = 0;; v++) {
            gad_op_sample s;
            if (!test_sample(op, rng, v, &s)) break;
            gad_tensor *leaves[12], *g1[12], *g2[12];
            int nl = 0;
            for (int i = 0; i < s.n; i++)
                if (is_float_leaf(s.in[i])) leaves[nl++] = s.in[i];
            gad_tensor *y = s.apply(&s, s.in, s.n);
            if (!y || nl == 0 || !gad_is_tracked(y)) {
                gad_clear_error();
                gad_scope_end();
                continue;
            }
            /* a projection, so that every output element has a weight */
            gad_tensor *w = gad_rng_uniform_tensor(rng, gad_shape(y), gad_rank(y), gad_dtype(y),
                                                   0.5, 1.5);
            gad_tensor *L = gad_sum_all(gad_mul(y, w));
            gad_status a = gad_grad_ex(L, NULL, leaves, nl, g1, 0);
            gad_status b = gad_grad_ex(L, NULL, leaves, nl, g2, GAD_CREATE_GRAPH);
            CHECK_MSG(a == GAD_OK && b == GAD_OK, "%s %s: %s", e->info.name, s.what,
                      gad_last_error() ? gad_last_error()->text : "");
            for (int q = 0; a == GAD_OK && b == GAD_OK && q < nl; q++) {
                static double x1[4096], x2[4096];
                int64_t k = gad_numel(g1[q]);
                if (k > 4096 || gad_read_f64(g1[q], x1, 4096) || gad_read_f64(g2[q], x2, 4096))
                    continue;
                double tol = gad_dtype(g1[q]) == GAD_F32 ? 1e-5 : 1e-10;
                for (int64_t j = 0; j < k; j++) {
                    double d = fabs(x1[j] - x2[j]), m = fabs(x1[j]) > 1 ? fabs(x1[j]) : 1;
                    if (!(d <= tol * m)) {
                        CHECK_MSG(0, "%s %s: input %d element %lld: plain %.17g, create_graph %.17g",
                                  e->info.name, s.what, q, (long long)j, x1[j], x2[j]);
                        break;
                    }
                }
            }
            checked++;
            gad_clear_error();
            gad_scope_end();
        }
    }
    printf("  %d samples: create_graph first derivatives equal the fused ones\n", checked);
    CHECK(checked > 200);
    gad_rng_free(rng);
}

/* The ops without a gradient (ops.def's NOGRAD rows) have no VJP, record
 * no node even when their float inputs require grad, and have samples. */
TEST(no_gradient_ops_record_nothing) {
    gad_rng *rng = gad_rng_new(2026);
    int ops = 0;
    for (int op = GAD_OP_NOGRAD_; op < GAD_OP_COMPOSITE_; op++) {
        const gad_op_entry *e = &gad__ops[op];
        CHECK_MSG(e->info.vjp == NULL && e->info.pwords == 0, "%s has a VJP", e->info.name);
        int cases = 0;
        for (int v = 0;; v++) {
            gad_op_sample s;
            if (!test_sample(op, rng, v, &s)) break;
            cases++;
            gad_tensor *in[12];
            for (int i = 0; i < s.n; i++) {
                in[i] = s.in[i];
                CHECK_MSG(!s.in[i] || !gad_is_leaf(s.in[i]), "%s %s: input %d is a leaf",
                          e->info.name, s.what, i);
                if (s.in[i] && gad__is_float(gad_dtype(s.in[i])))
                    in[i] = gad_requires_grad(gad_clone(s.in[i]));
            }
            gad_tensor *y = s.apply(&s, in, s.n);
            CHECK_MSG(y && !gad_is_tracked(y), "%s %s: %s", e->info.name, s.what,
                      y ? "the result is on the tape"
                        : (gad_last_error() ? gad_last_error()->text : "NULL"));
            gad_clear_error();
            gad_scope_end();
        }
        CHECK_MSG(cases > 0, "%s has no sample", e->info.name);
        ops++;
    }
    printf("  %d ops without a gradient record nothing\n", ops);
    CHECK(ops >= 1);
    /* the composites record only the nodes of the ops they call */
    for (int op = GAD_OP_COMPOSITE_; op < GAD_OP_COUNT_; op++)
        CHECK_MSG(gad__ops[op].info.vjp == NULL && gad__ops[op].info.pwords == 0,
                  "composite %s has a VJP", gad__ops[op].info.name);
    gad_rng_free(rng);
}

/* Chains of the view helpers and the _all reductions, and gad_view, which
 * has no row (its input must be contiguous, which the layouts above are
 * not); each helper has a COMPOSITE row of its own (ops.def). */
static gad_tensor *composite(void *ctx, gad_tensor *const *in, int n) {
    (void)n;
    switch (*(int *)ctx) {
    case 7: return gad_flatten(gad_swapaxes(in[0], 0, 2));
    case 8: return gad_squeeze_all(gad_unsqueeze(gad_transpose(in[0]), 0));
    case 9: return gad_view(in[0], (int64_t[]){6, -1}, 2);
    case 10: return gad_contiguous(gad_transpose(in[0]));
    case 11: return gad_mean_all(gad_mul(in[0], in[1]));
    default: return gad_sum_all(gad_sub(in[0], in[1]));
    }
}

TEST(view_helpers_pass_gradcheck) {
    gad_rng *rng = gad_rng_new(7);
    for (int k = 7; k <= 12; k++) {
        gad_scope_begin();
        gad_tensor *in[2];
        for (int i = 0; i < 2; i++)
            in[i] = gad_requires_grad(
                gad_rng_uniform_tensor(rng, (int64_t[]){2, 3, 4}, 3, GAD_F64, -2, 2));
        gad_gradcheck_result r;
        CHECK_MSG(gad_gradcheck(composite, &k, in, 2, NULL, &r) == GAD_OK && r.passed,
                  "composite %d: input %d element %lld %.10g vs %.10g", k, r.input,
                  (long long)r.index, r.analytic, r.numeric);
        CHECK_MSG(gad_gradgradcheck(composite, &k, in, 2, NULL, &r) == GAD_OK && r.passed,
                  "composite %d second order: input %d element %lld %.10g vs %.10g", k,
                  r.input, (long long)r.index, r.analytic, r.numeric);
        gad_scope_end();
    }
    gad_rng_free(rng);
}

/* The checker itself fails a wrong gradient: with stop_gradient in the
 * function, the tape's derivative of x * stop(x) is x, the true one 2x. */
static gad_tensor *wrong(void *ctx, gad_tensor *const *in, int n) {
    (void)ctx, (void)n;
    return gad_mul(in[0], gad_stop_gradient(in[0]));
}
static gad_tensor *right(void *ctx, gad_tensor *const *in, int n) {
    (void)ctx, (void)n;
    return gad_mul(in[0], gad_exp(in[1]));
}

TEST(gradcheck_reports_the_worst_element) {
    gad_scope_begin();
    gad_tensor *x = gad_requires_grad(gad_from_f64((double[]){1, -2, 3}, (int64_t[]){3}, 1));
    gad_gradcheck_result r;
    CHECK(gad_gradcheck(wrong, NULL, &x, 1, NULL, &r) == GAD_OK);
    CHECK(!r.passed);
    CHECK(r.input == 0 && r.index == 2); /* |3 - 6| is the largest miss */
    CHECK_NEAR(r.analytic / r.numeric, 0.5, 1e-6); /* x against 2x */
    CHECK(r.checked == 3);
    /* a constant (non-leaf) input is held fixed and not checked */
    gad_tensor *c = gad_from_f64((double[]){0.5, 0.1, -0.3}, (int64_t[]){3}, 1);
    CHECK(gad_gradcheck(right, NULL, (gad_tensor *[]){x, c}, 2, NULL, &r) == GAD_OK);
    CHECK(r.passed && r.checked == 3);
    CHECK(gad_gradgradcheck(right, NULL, (gad_tensor *[]){x, c}, 2, NULL, &r) == GAD_OK);
    CHECK(r.passed);
    /* f32 inputs get f32 tolerances */
    gad_tensor *xf = gad_requires_grad(gad_cast(gad_detach(x), GAD_F32));
    gad_tensor *cf = gad_cast(c, GAD_F32);
    CHECK(gad_gradcheck(right, NULL, (gad_tensor *[]){xf, cf}, 2, NULL, &r) == GAD_OK);
    CHECK(r.passed);
    /* tight custom tolerances fail the f32 check */
    gad_gradcheck_opts tight = {.eps = 1e-3, .atol = 1e-12, .rtol = 1e-12};
    CHECK(gad_gradcheck(right, NULL, (gad_tensor *[]){xf, cf}, 2, &tight, &r) == GAD_OK);
    CHECK(!r.passed);
    gad_scope_end();
}

int main(void) {
    RUN(create_graph_gradients_equal_plain_ones);
    RUN(every_op_passes_gradcheck);
    RUN(no_gradient_ops_record_nothing);
    RUN(view_helpers_pass_gradcheck);
    RUN(gradcheck_reports_the_worst_element);
    return test_summary();
}
