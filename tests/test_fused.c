/* test_fused.c: the fused kernels against their unfused compositions and
 * finite differences: SPEC §7.2-7.5, the masked-CE edge cases, second
 * derivatives through fused ops, and their errors. */
#include "test.h"

#include "gad_int.h"
#include "ops/ops_int.h"

/* SPEC 7's rel_err: max |a - n| / max(|a|, |n|, floor) */
static double rel_err(gad_tensor *a, gad_tensor *b, double floor_) {
    int64_t n = gad_numel(a);
    if (n != gad_numel(b)) return INFINITY;
    double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8), worst = 0;
    gad_read_f64(a, x, (size_t)n);
    gad_read_f64(b, y, (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        double s = fmax(fmax(fabs(x[i]), fabs(y[i])), floor_);
        double e = fabs(x[i] - y[i]) / s;
        if (!(e <= worst)) worst = e;
    }
    free(x);
    free(y);
    return worst;
}

/* max |a - b| / max |b| */
static double norm_err(gad_tensor *a, gad_tensor *b) {
    int64_t n = gad_numel(a);
    if (n != gad_numel(b)) return INFINITY;
    double *x = malloc((size_t)(n ? n : 1) * 8), *y = malloc((size_t)(n ? n : 1) * 8);
    gad_read_f64(a, x, (size_t)n);
    gad_read_f64(b, y, (size_t)n);
    double d = 0, m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!(fabs(x[i] - y[i]) <= d)) d = fabs(x[i] - y[i]);
        m = fmax(m, fabs(y[i]));
    }
    free(x);
    free(y);
    return m > 0 ? d / m : d;
}

/* A tensor from a formula of the flat index. */
static gad_tensor *gen(const int64_t *shape, int rank, double (*f)(int64_t, double), double p) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= shape[i];
    float *v = malloc((size_t)(n ? n : 1) * 4);
    for (int64_t i = 0; i < n; i++) v[i] = (float)f(i, p);
    gad_tensor *t = gad_from_f32(v, shape, rank);
    free(v);
    return t;
}

/* ------------------------------------------------- finite differences */

typedef gad_tensor *(*fn_t)(gad_tensor *const *in, void *ctx);

/* The f32 tape gradient of L = sum(w * f(in)) with respect to in[k] against
 * central differences (h = 1e-3) of the same objective computed in f64. */
static double fd_rel_err(fn_t f, void *ctx, gad_tensor *const *in, int n, int k, gad_tensor *w) {
    gad_scope_begin();
    gad_tensor *leaf[12], *in64[12];
    for (int i = 0; i < n; i++) {
        leaf[i] = gad_dtype(in[i]) == GAD_F32 ? gad_requires_grad(gad_clone(in[i])) : in[i];
        in64[i] = gad_dtype(in[i]) == GAD_F32 ? gad_cast(in[i], GAD_F64) : in[i];
    }
    gad_tensor *g;
    CHECK(gad_grad(gad_sum_all(gad_mul(f(leaf, ctx), w)), &leaf[k], 1, &g) == GAD_OK);
    gad_tensor *w64 = gad_cast(w, GAD_F64);
    int64_t m = gad_numel(in[k]);
    double *num = malloc((size_t)(m ? m : 1) * 8);
    for (int64_t j = 0; j < m; j++) {
        double l[2];
        for (int s = 0; s < 2; s++) {
            gad_tensor *args[12];
            memcpy(args, in64, sizeof args);
            args[k] = gad_clone(in64[k]);
            ((double *)gad_data_mut(args[k]))[j] += s ? -1e-3 : 1e-3;
            l[s] = gad_item(gad_sum_all(gad_mul(f(args, ctx), w64)));
        }
        num[j] = (l[0] - l[1]) / 2e-3;
    }
    double e = rel_err(g, gad_from_f64(num, gad_shape(in[k]), gad_rank(in[k])), 1e-3);
    free(num);
    gad_scope_end();
    return e;
}

/* ------------------------------------------------------------ formulas */

static double act_x(int64_t i, double p) { (void)p; return (double)(i % 9) / 4 - 1; }
static double act_w(int64_t i, double p) { (void)p; return 0.3 + 0.1 * (double)(i % 5); }
static double emb_table(int64_t i, double p) { (void)p; return (double)(i % 5) - 2; }
static double emb_w(int64_t i, double p) { (void)p; return 0.5 + (double)(i % 3); }
static double mce_logit(int64_t i, double p) { (void)p; return (double)(i % 7) - 3; }
static double mce_logit2(int64_t i, double p) { (void)p; return (double)((7 * i) % 13 - 6) * 0.2; }
static double scan_araw(int64_t i, double p) { (void)p; return (double)((37 * i) % 23) / 23 - 0.5; }
static double scan_b(int64_t i, double p) { (void)p; return (double)((17 * i) % 19) / 19 - 0.5; }
static double scan_w(int64_t i, double p) { (void)p; return (double)((13 * i) % 7) / 7 + 0.2; }
static double rms_x(int64_t i, double p) { (void)p; return (double)((29 * i) % 17) / 17 - 0.4; }
static double rms_w(int64_t i, double p) { (void)p; return (double)((11 * i) % 5) / 5 + 0.3; }
static double mk(int64_t i, double s) { return (double)((31 * i + 7 * (int64_t)s) % 17) / 9 - 0.9; }
static double helix_x(int64_t i, double p) { (void)p; return (double)((13 * i) % 11) / 5 - 1; }
static double helix_wt(int64_t i, double p) { (void)p; return 0.5 + 0.1 * (double)(i % 4); }

/* ------------------------------------------------------------- SPEC 7.2 */

static gad_tensor *f_sigmoid(gad_tensor *const *in, void *c) { (void)c; return gad_sigmoid(in[0]); }
static gad_tensor *f_silu(gad_tensor *const *in, void *c) { (void)c; return gad_silu(in[0]); }

TEST(spec_7_2_activations) {
    gad_scope_begin();
    int64_t n = 48;
    gad_tensor *x = gen(&n, 1, act_x, 0), *w = gen(&n, 1, act_w, 0);
    CHECK(fd_rel_err(f_sigmoid, NULL, &x, 1, 0, w) < 2e-2);
    CHECK(fd_rel_err(f_silu, NULL, &x, 1, 0, w) < 2e-2);
    gad_scope_end();
}

/* ------------------------------------------------------------- SPEC 7.3 */

static gad_tensor *f_emb(gad_tensor *const *in, void *c) {
    (void)c;
    return gad_embedding_fused(in[0], in[1]);
}
static gad_tensor *f_mce(gad_tensor *const *in, void *c) {
    (void)c;
    return gad_masked_ce(in[0], in[1], in[2]);
}

TEST(spec_7_3_embedding_fused) {
    gad_scope_begin();
    gad_tensor *table = gen((int64_t[]){8, 4}, 2, emb_table, 0);
    gad_tensor *idx = gad_from_i64((int64_t[]){0, 3, 1, 7, 2, 5}, (int64_t[]){6}, 1);
    gad_tensor *in[2] = {table, idx};
    gad_tensor *wt = gen((int64_t[]){6, 4}, 2, emb_w, 0);
    CHECK(fd_rel_err(f_emb, NULL, in, 2, 0, wt) < 2e-2);
    /* equals its composition, values and gradient */
    CHECK(rel_err(gad_embedding_fused(table, idx), gad__embedding_unfused(table, idx), 1e-4) == 0);
    /* duplicates accumulate; rows nobody picked get zeros */
    gad_tensor *t = gad_requires_grad(gad_clone(table)), *g;
    gad_tensor *dup = gad_from_i64((int64_t[]){2, 2, 5}, (int64_t[]){3}, 1);
    CHECK(gad_grad(gad_sum_all(gad_embedding_fused(t, dup)), &t, 1, &g) == GAD_OK);
    float gv[32];
    gad_read_f32(g, gv, 32);
    CHECK(gv[2 * 4] == 2 && gv[5 * 4 + 3] == 1 && gv[0] == 0 && gv[7 * 4] == 0);
    gad_scope_end();
}

TEST(spec_7_3_masked_ce) {
    gad_scope_begin();
    gad_tensor *logits = gen((int64_t[]){5, 6}, 2, mce_logit, 0);
    gad_tensor *t = gad_from_i64((int64_t[]){0, 2, 5, 1, 4}, (int64_t[]){5}, 1);
    gad_tensor *mask = gad_from_f32((float[]){1, 0, 1, 1, 0}, (int64_t[]){5}, 1);
    gad_tensor *in[3] = {logits, t, mask}, *one = gad_ones(NULL, 0, GAD_F32);
    CHECK(fd_rel_err(f_mce, NULL, in, 3, 0, one) < 2e-2);
    gad_tensor *l = gad_requires_grad(gad_clone(logits)), *g;
    gad_tensor *loss = gad_masked_ce(l, t, mask);
    CHECK(gad_rank(loss) == 0);
    CHECK(rel_err(loss, gad__masked_ce_unfused(logits, t, mask), 1e-4) < 1e-6);
    CHECK(gad_grad(loss, &l, 1, &g) == GAD_OK);
    float gv[30];
    gad_read_f32(g, gv, 30);
    for (int j = 0; j < 6; j++) CHECK(gv[6 + j] == 0.0f && gv[24 + j] == 0.0f); /* exact */
    gad_scope_end();
}

TEST(spec_7_3_masked_ce_signed_weights) {
    gad_scope_begin();
    gad_tensor *logits = gen((int64_t[]){4, 5}, 2, mce_logit2, 0);
    gad_tensor *t = gad_from_i64((int64_t[]){0, 3, 1, 4}, (int64_t[]){4}, 1);
    gad_tensor *mask = gad_from_f32((float[]){1, -0.75f, 0, 0.4f}, (int64_t[]){4}, 1);
    gad_tensor *in[3] = {logits, t, mask}, *one = gad_ones(NULL, 0, GAD_F32);
    CHECK(fd_rel_err(f_mce, NULL, in, 3, 0, one) < 2e-2);
    gad_tensor *l = gad_requires_grad(gad_clone(logits)), *g;
    CHECK(gad_grad(gad_masked_ce(l, t, mask), &l, 1, &g) == GAD_OK);
    float gv[20], big = 0;
    gad_read_f32(g, gv, 20);
    for (int j = 0; j < 5; j++) {
        big = fmaxf(big, fabsf(gv[5 + j]));
        CHECK(gv[10 + j] == 0.0f);
    }
    CHECK(big > 1e-4f); /* the negative-weight row is not skipped */
    /* normalized by sum |w| = 2.15: compare with the composition */
    gad_tensor *l2 = gad_requires_grad(gad_clone(logits)), *g2;
    CHECK(gad_grad(gad__masked_ce_unfused(l2, t, mask), &l2, 1, &g2) == GAD_OK);
    CHECK(rel_err(g, g2, 1e-4) < 1e-5);
    gad_scope_end();
}

/* SPEC 4.3's edge case, where gad differs (D5): a weighted row's target
 * out of range is an index error; an unweighted row's is never read. */
TEST(masked_ce_targets) {
    gad_scope_begin();
    gad_tensor *logits = gad_from_f32((float[]){1, 2, 3, 0, 0, 0}, (int64_t[]){2, 3}, 2);
    gad_tensor *t = gad_from_i64((int64_t[]){2, 7}, (int64_t[]){2}, 1);
    CHECK(gad_masked_ce(logits, t, gad_from_f32((float[]){1, 1}, (int64_t[]){2}, 1)) == NULL);
    CHECK(strstr(gad_last_error()->message, "7") != NULL);
    CHECK_ERR(GAD_ERR_INDEX, "masked_ce");
    gad_tensor *l = gad_masked_ce(logits, t, gad_from_f32((float[]){1, 0}, (int64_t[]){2}, 1));
    CHECK_NEAR(gad_item(l), 0.40760595, 1e-6); /* -log softmax([1,2,3])[2] */
    /* all weights zero: loss 0 and a zero gradient */
    gad_tensor *lz = gad_requires_grad(gad_clone(logits)), *g;
    gad_tensor *z = gad_masked_ce(lz, t, gad_zeros((int64_t[]){2}, 1, GAD_F32));
    CHECK(gad_item(z) == 0);
    CHECK(gad_grad(z, &lz, 1, &g) == GAD_OK);
    CHECK_VALUES(g, 0, 0, 0, 0, 0, 0, 0);
    gad_scope_end();
}

/* A mask computed on the tape from the logits themselves (the fuzzer's
 * case: per-row losses as weights) gets no gradient, with GAD_CREATE_GRAPH
 * (the composed VJP) as without (the fused one): the logits' gradient is
 * that of a constant mask of the same values, and the mask's is zero. */
TEST(masked_ce_tracked_mask) {
    gad_scope_begin();
    gad_tensor *logits = gen((int64_t[]){4, 3}, 2, mce_logit2, 0);
    gad_tensor *t = gad_from_i64((int64_t[]){2, 1, 0, 1}, (int64_t[]){4}, 1);
    gad_tensor *l = gad_requires_grad(gad_clone(logits));
    gad_tensor *mask = gad_sum(gad_exp(l), (int[]){1}, 1, 0); /* on the tape, [4] */
    gad_tensor *cmask = gad_detach(mask), *gc, *g[2];
    CHECK(gad_grad(gad_masked_ce(l, t, cmask), &l, 1, &gc) == GAD_OK);
    for (int cg = 0; cg < 2; cg++) {
        gad_tensor *loss = gad_masked_ce(l, t, mask);
        CHECK(gad_is_tracked(loss));
        gad_tensor *wrt[2] = {l, mask};
        CHECK(gad_grad_ex(loss, NULL, wrt, 2, g, cg ? GAD_CREATE_GRAPH : 0) == GAD_OK);
        CHECK(rel_err(g[0], gc, 1e-6) < 1e-6);
        CHECK(g[1] == NULL || gad_item(gad_sum_all(gad_abs(g[1]))) == 0);
    }
    gad_scope_end();
}

/* The loss is the exact log-softmax (SPEC D23): a target 100 nats below
 * the row's maximum costs 100, where g's clamp of p at 1e-30 gave 69.08;
 * -inf on the target costs +inf, as PyTorch's; the fused gradient, the one
 * under GAD_CREATE_GRAPH (the composition) and gad_cross_entropy (Mean and
 * Sum, which run masked_ce) and cross_entropy_ex agree there. */
TEST(masked_ce_exact_log_softmax) {
    gad_scope_begin();
    for (int dt = 0; dt < 2; dt++) {
        gad_tensor *x = gad_cast(gad_from_f64((double[]){0, 100, -3, 2, 1, 0.5}, (int64_t[]){2, 3}, 2),
                                 dt ? GAD_F64 : GAD_F32);
        gad_tensor *t = gad_from_i64((int64_t[]){0, 2}, (int64_t[]){2}, 1);
        gad_tensor *m = gad_cast(gad_from_f64((double[]){1, 1}, (int64_t[]){2}, 1), gad_dtype(x));
        /* row 0: 100 + log(1 + e^-100 + e^-103), 100 in double; row 1:
         * log(e^2 + e^1 + e^0.5) - 0.5 */
        double r1 = log(exp(2.0) + exp(1.0) + exp(0.5)) - 0.5, want = (100 + r1) / 2;
        CHECK_NEAR(gad_item(gad_masked_ce(x, t, m)), want, dt ? 1e-12 : 1e-4);
        CHECK_NEAR(gad_item(gad_cross_entropy(x, t, GAD_REDUCE_MEAN)), want, dt ? 1e-12 : 1e-4);
        CHECK_NEAR(gad_item(gad_cross_entropy(x, t, GAD_REDUCE_SUM)), 2 * want, dt ? 1e-12 : 2e-4);
        CHECK_NEAR(gad_item(gad_cross_entropy_ex(x, t, NULL, -100, GAD_REDUCE_MEAN, 0)), want,
                   dt ? 1e-12 : 1e-4);
        gad_tensor *l = gad_requires_grad(gad_clone(x)), *g[2];
        for (int cg = 0; cg < 2; cg++)
            CHECK(gad_grad_ex(gad_masked_ce(l, t, m), NULL, &l, 1, &g[cg],
                              cg ? GAD_CREATE_GRAPH : 0) == GAD_OK);
        CHECK(rel_err(g[0], g[1], 1e-6) < (dt ? 1e-12 : 1e-6));
        CHECK_NEAR(gad_item(gad_select(gad_flatten(g[0]), 0, 0)), -0.5, 1e-6); /* (p - 1) / 2 */
        gad_tensor *xi = gad_cast(gad_from_f64((double[]){-INFINITY, 0}, (int64_t[]){1, 2}, 2),
                                  gad_dtype(x));
        gad_tensor *one = gad_cast(gad_from_f64((double[]){1}, (int64_t[]){1}, 1), gad_dtype(x));
        double inf = gad_item(gad_masked_ce(xi, gad_from_i64((int64_t[]){0}, (int64_t[]){1}, 1), one));
        CHECK(isinf(inf) && inf > 0);
    }
    CHECK_OK();
    gad_scope_end();
}

/* ------------------------------------------------------------- SPEC 7.4 */

static gad_tensor *f_scan_sig(gad_tensor *const *in, void *c) {
    (void)c;
    return gad_gated_scan(gad_sigmoid(in[0]), in[1]);
}
static gad_tensor *f_rms(gad_tensor *const *in, void *c) {
    (void)c;
    return gad_rms_norm(in[0], 1e-5);
}

TEST(spec_7_4_scan_and_rms) {
    gad_scope_begin();
    int64_t s[3] = {2, 5, 3};
    gad_tensor *araw = gen(s, 3, scan_araw, 0), *b = gen(s, 3, scan_b, 0), *w = gen(s, 3, scan_w, 0);
    gad_tensor *in[2] = {araw, b};
    CHECK(fd_rel_err(f_scan_sig, NULL, in, 2, 0, w) < 2e-2);
    CHECK(fd_rel_err(f_scan_sig, NULL, in, 2, 1, w) < 2e-2);
    gad_tensor *x = gen((int64_t[]){3, 6}, 2, rms_x, 0), *wr = gen((int64_t[]){3, 6}, 2, rms_w, 0);
    CHECK(fd_rel_err(f_rms, NULL, &x, 1, 0, wr) < 2e-2);
    CHECK_VALUES(gad_rms_norm(gad_from_f32((float[]){3, 4}, (int64_t[]){1, 2}, 2), 0), 1e-7,
                 0.84852815, 1.1313709);
    CHECK(rel_err(gad_rms_norm(x, 1e-5), gad__rms_norm_unfused(x, 1e-5), 1e-4) < 1e-6);
    gad_scope_end();
}

static double rec_a(int64_t i, double p) { (void)p; return 0.3 + 0.1 * (double)(i % 5); }
static double rec_b(int64_t i, double p) { (void)p; return 0.2 * (double)(i % 7) - 0.5; }

TEST(spec_7_4_explicit_recurrence) {
    gad_scope_begin();
    int64_t s[3] = {2, 4, 3};
    gad_tensor *a = gen(s, 3, rec_a, 0), *b = gen(s, 3, rec_b, 0);
    float h[24];
    gad_read_f32(gad_gated_scan(a, b), h, 24);
    for (int bi = 0; bi < 2; bi++)
        for (int d = 0; d < 3; d++) {
            double prev = 0;
            for (int t = 0; t < 4; t++) {
                int64_t i = (bi * 4 + t) * 3 + d;
                prev = (double)(float)rec_a(i, 0) * prev + (double)(float)rec_b(i, 0);
                CHECK_NEAR(h[i], prev, 1e-6);
            }
        }
    CHECK(rel_err(gad_gated_scan(a, b), gad__gated_scan_unfused(a, b), 1e-4) < 1e-6);
    gad_scope_end();
}

/* ------------------------------------------------------------- SPEC 7.5 */

typedef struct helix_case {
    gad_tensor *x;
    gad_helix_weights w;
} helix_case;

static helix_case helix_7_5(void) {
    helix_case c;
    c.x = gen((int64_t[]){2, 5, 8}, 3, helix_x, 0);
    c.w.wa = gen((int64_t[]){9, 8}, 2, mk, 1);
    c.w.wb = gen((int64_t[]){8, 8}, 2, mk, 2);
    c.w.wo = gen((int64_t[]){8, 8}, 2, mk, 3);
    c.w.wf1 = gen((int64_t[]){8, 16}, 2, mk, 4);
    c.w.wf2 = gen((int64_t[]){16, 8}, 2, mk, 5);
    c.w.g1 = gen((int64_t[]){8}, 1, mk, 6);
    c.w.g2 = gen((int64_t[]){8}, 1, mk, 7);
    c.w.g3 = gen((int64_t[]){8}, 1, mk, 8);
    c.w.g4 = gen((int64_t[]){8}, 1, mk, 9);
    return c;
}

TEST(spec_7_5_helix_block) {
    gad_scope_begin();
    helix_case c = helix_7_5();
    CHECK_SHAPE(c.w.g1, 8);
    gad_tensor *yf = gad_helix_block(c.x, &c.w, 1e-5);
    gad_tensor *yu = gad__helix_block_unfused(c.x, &c.w, 1e-5);
    CHECK(yf && yu);
    CHECK_MSG(rel_err(yf, yu, 1e-4) < 1e-5, "values: rel_err %g", rel_err(yf, yu, 1e-4));
    /* all ten gradients of sum(wt * y) against the composed graph */
    gad_tensor *wt = gen((int64_t[]){2, 5, 8}, 3, helix_wt, 0);
    gad_tensor *const raw[10] = {c.x, c.w.wa, c.w.wb, c.w.wo, c.w.wf1,
                                 c.w.wf2, c.w.g1, c.w.g2, c.w.g3, c.w.g4};
    gad_tensor *lf[10], *lu[10], *gf[10], *gu[10];
    for (int i = 0; i < 10; i++) {
        lf[i] = gad_requires_grad(gad_clone(raw[i]));
        lu[i] = gad_requires_grad(gad_clone(raw[i]));
    }
    gad_helix_weights wf = {lf[1], lf[2], lf[3], lf[4], lf[5], lf[6], lf[7], lf[8], lf[9]};
    gad_helix_weights wu = {lu[1], lu[2], lu[3], lu[4], lu[5], lu[6], lu[7], lu[8], lu[9]};
    CHECK(gad_grad(gad_sum_all(gad_mul(gad_helix_block(lf[0], &wf, 1e-5), wt)), lf, 10, gf) ==
          GAD_OK);
    CHECK(gad_grad(gad_sum_all(gad_mul(gad__helix_block_unfused(lu[0], &wu, 1e-5), wt)), lu,
                   10, gu) == GAD_OK);
    double worst = 0;
    for (int i = 0; i < 10; i++) {
        double e = rel_err(gf[i], gu[i], 1e-4);
        CHECK_MSG(e < 2e-3, "gradient %d: rel_err %g", i, e);
        worst = fmax(worst, e);
    }
    printf("  helix block: worst gradient rel_err %.2e (bound 2e-3)\n", worst);
    gad_scope_end();
}

/* GAD_MATMUL_MEDIUM reaches the products inside the fused block: its
 * output and gradients stay within bf16's rounding of the f32 block's (the
 * operands of each product rounded to 8 bits), the fused block and its
 * composition still agree (both take the same products), and where the
 * CPU has fast bf16 units the values differ from f32's; elsewhere they are
 * the same bits. */
TEST(helix_block_matmul_medium) {
    gad_scope_begin();
    helix_case c = helix_7_5();
    gad_tensor *yh = gad_contiguous(gad_helix_block(c.x, &c.w, 1e-5));
    gad_tensor *xl = gad_requires_grad(gad_clone(c.x)), *gh, *gm;
    CHECK(gad_grad(gad_sum_all(gad_helix_block(xl, &c.w, 1e-5)), &xl, 1, &gh) == GAD_OK);
    gad_set_matmul_precision(GAD_MATMUL_MEDIUM);
    gad_tensor *ym = gad_contiguous(gad_helix_block(c.x, &c.w, 1e-5));
    gad_tensor *yu = gad__helix_block_unfused(c.x, &c.w, 1e-5);
    CHECK(gad_grad(gad_sum_all(gad_helix_block(xl, &c.w, 1e-5)), &xl, 1, &gm) == GAD_OK);
    gad_set_matmul_precision(GAD_MATMUL_HIGHEST);
    CHECK(ym && yu);
    /* normwise: max |a - b| / max |b| (an element that cancels to near 0
     * keeps the absolute error of its terms) */
    double eu = norm_err(ym, yu), e = norm_err(ym, yh), eg = norm_err(gm, gh);
    CHECK_MSG(eu < 2e-2, "fused and composed: %g", eu);
    CHECK_MSG(e < 2e-2 && eg < 2e-2, "medium against f32: y %g, dx %g", e, eg);
    if (gad_matmul_medium_native())
        CHECK(e > 0);
    else
        CHECK(e == 0 && eg == 0);
    printf("  helix block, GAD_MATMUL_MEDIUM (%s): normwise y %.2e, dx %.2e\n",
           gad_matmul_medium_native() ? "bf16 products" : "f32 products", e, eg);
    gad_scope_end();
}

/* The fused backward and the composition's backward agree in f64 to
 * rounding, and a second derivative through the fused op (create_graph)
 * equals the composition's. */
TEST(helix_block_f64_and_second_order) {
    gad_scope_begin();
    helix_case c = helix_7_5();
    gad_tensor *in[10] = {c.x, c.w.wa, c.w.wb, c.w.wo, c.w.wf1, c.w.wf2, c.w.g1, c.w.g2, c.w.g3, c.w.g4};
    gad_tensor *lf[10], *lu[10], *v[10];
    gad_rng *r = gad_rng_new(3);
    for (int i = 0; i < 10; i++) {
        lf[i] = gad_requires_grad(gad_cast(in[i], GAD_F64));
        lu[i] = gad_requires_grad(gad_cast(in[i], GAD_F64));
        v[i] = gad_rng_normal_tensor(r, gad_shape(in[i]), gad_rank(in[i]), GAD_F64, 0, 1);
    }
    gad_rng_free(r);
    gad_helix_weights wf = {lf[1], lf[2], lf[3], lf[4], lf[5], lf[6], lf[7], lf[8], lf[9]};
    gad_helix_weights wu = {lu[1], lu[2], lu[3], lu[4], lu[5], lu[6], lu[7], lu[8], lu[9]};
    gad_tensor *gf[10], *gu[10], *hf[10], *hu[10];
    CHECK(gad_grad(gad_sum_all(gad_square(gad_helix_block(lf[0], &wf, 1e-5))), lf, 10, gf) == GAD_OK);
    CHECK(gad_grad(gad_sum_all(gad_square(gad__helix_block_unfused(lu[0], &wu, 1e-5))), lu, 10, gu) ==
          GAD_OK);
    for (int i = 0; i < 10; i++) CHECK_MSG(rel_err(gf[i], gu[i], 1e-6) < 1e-10, "f64 gradient %d", i);
    CHECK(gad_hvp(gad_sum_all(gad_square(gad_helix_block(lf[0], &wf, 1e-5))), lf, v, 10, hf) == GAD_OK);
    CHECK(gad_hvp(gad_sum_all(gad_square(gad__helix_block_unfused(lu[0], &wu, 1e-5))), lu, v, 10,
                  hu) == GAD_OK);
    for (int i = 0; i < 10; i++) CHECK_MSG(rel_err(hf[i], hu[i], 1e-6) < 1e-9, "HVP %d", i);
    gad_scope_end();
}

/* Big enough for the threaded paths; bit-identical for 1 and 2 threads. */
TEST(threads_do_not_change_results) {
    gad_scope_begin();
    gad_rng *r = gad_rng_new(9);
    int64_t D = 32, s[3] = {4, 33, D};
    gad_tensor *x = gad_rng_normal_tensor(r, s, 3, GAD_F32, 0, 1);
    helix_case c = helix_7_5();
    (void)c;
    gad_helix_weights w = {
        gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){D + 1, D}, 2, GAD_F32, 0, 0.2)),
        gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){D, D}, 2, GAD_F32, 0, 0.2)),
        gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){D, D}, 2, GAD_F32, 0, 0.2)),
        gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){D, 2 * D}, 2, GAD_F32, 0, 0.2)),
        gad_requires_grad(gad_rng_normal_tensor(r, (int64_t[]){2 * D, D}, 2, GAD_F32, 0, 0.2)),
        gad_requires_grad(gad_ones(&D, 1, GAD_F32)), gad_requires_grad(gad_ones(&D, 1, GAD_F32)),
        gad_requires_grad(gad_ones(&D, 1, GAD_F32)), gad_requires_grad(gad_ones(&D, 1, GAD_F32))};
    gad_rng_free(r);
    gad_tensor *params[9] = {w.wa, w.wb, w.wo, w.wf1, w.wf2, w.g1, w.g2, w.g3, w.g4};
    gad_tensor *g1[9], *g2[9];
    int old = gad_num_threads();
    gad_set_num_threads(1);
    CHECK(gad_grad(gad_sum_all(gad_square(gad_helix_block(x, &w, 1e-5))), params, 9, g1) == GAD_OK);
    gad_set_num_threads(2);
    CHECK(gad_grad(gad_sum_all(gad_square(gad_helix_block(x, &w, 1e-5))), params, 9, g2) == GAD_OK);
    gad_set_num_threads(old);
    for (int i = 0; i < 9; i++) CHECK_MSG(rel_err(g1[i], g2[i], 1e-30) == 0, "gradient %d", i);
    gad_scope_end();
}

/* ------------------------------------------------------------------ errors */

TEST(fused_errors) {
    gad_scope_begin();
    helix_case c = helix_7_5();
    gad_tensor *x2 = gad_reshape(c.x, (int64_t[]){10, 8}, 2);
    CHECK(gad_helix_block(x2, &c.w, 1e-5) == NULL); /* rank < 3: no panic (D6) */
    CHECK_ERR(GAD_ERR_SHAPE, "helix_block");
    gad_helix_weights bad = c.w;
    bad.wa = c.w.wb; /* [8,8], not [9,8] */
    CHECK(gad_helix_block(c.x, &bad, 1e-5) == NULL);
    CHECK(strstr(gad_last_error()->message, "wa") != NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "helix_block");
    bad = c.w;
    bad.g4 = NULL;
    CHECK(gad_helix_block(c.x, &bad, 1e-5) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "helix_block");
    CHECK(gad_helix_block(gad_cast(c.x, GAD_F64), &c.w, 1e-5) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "helix_block");
    CHECK(gad_gated_scan(x2, x2) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "gated_scan");
    CHECK(gad_gated_scan(c.x, gad_transpose(c.x)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "gated_scan");
    CHECK(gad_rms_norm(gad_scalar_f32(1), 1e-5) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "rms_norm");
    CHECK(gad_rms_norm(c.x, -1) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "rms_norm");
    gad_tensor *table = gad_zeros((int64_t[]){4, 2}, 2, GAD_F32);
    CHECK(gad_embedding_fused(table, gad_from_i64((int64_t[]){1, 4}, (int64_t[]){2}, 1)) == NULL);
    CHECK_ERR(GAD_ERR_INDEX, "embedding_fused");
    CHECK(gad_embedding_fused(table, gad_from_i64((int64_t[]){-1}, (int64_t[]){1}, 1)) == NULL);
    CHECK_ERR(GAD_ERR_INDEX, "embedding_fused");
    CHECK(gad_embedding_fused(table, gad_zeros((int64_t[]){2}, 1, GAD_F32)) == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "embedding_fused");
    CHECK(gad_masked_ce(table, gad_from_i64((int64_t[]){0}, (int64_t[]){1}, 1),
                        gad_ones((int64_t[]){4}, 1, GAD_F32)) == NULL);
    CHECK_ERR(GAD_ERR_SHAPE, "masked_ce");
    gad_scope_end();
}

int main(void) {
    RUN(spec_7_2_activations);
    RUN(spec_7_3_embedding_fused);
    RUN(spec_7_3_masked_ce);
    RUN(spec_7_3_masked_ce_signed_weights);
    RUN(masked_ce_targets);
    RUN(masked_ce_tracked_mask);
    RUN(masked_ce_exact_log_softmax);
    RUN(spec_7_4_scan_and_rms);
    RUN(spec_7_4_explicit_recurrence);
    RUN(spec_7_5_helix_block);
    RUN(helix_block_f64_and_second_order);
    RUN(helix_block_matmul_medium);
    RUN(threads_do_not_change_results);
    RUN(fused_errors);
    gad_mem_stats ms;
    gad_mem_stats_get(&ms);
    CHECK(ms.live_tensors == 0);
    return test_summary();
}
