/* test_half_ops.c: ops on f16 and bf16 inputs (issue 29): every op of the
 * registry (src/ops/ops.def) on its gradcheck samples, with the float
 * inputs rounded to the half dtype, against the same op on those inputs
 * widened to f32 and its result rounded once: the same bits for the ops
 * that compute in one pass (elementwise, reductions, softmax, the fused
 * ops' f32 fallback), within a few half ulps for the composites (which
 * round each step); their VJPs likewise; gradients have the input's
 * dtype. Then end-to-end training of a small bf16 model, the 0-d
 * promotions of the half dtypes, and the bad input. */
#include "test.h"
#include "ops/ops_int.h"
#include "test_registry.h"
#include "half_vec.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static int is_wide_float(gad_tensor *t) {
    return t && (gad_dtype(t) == GAD_F32 || gad_dtype(t) == GAD_F64);
}

/* The half and the widened inputs of a sample: each float input rounded
 * to dt (a leaf stays a leaf: detached, requires_grad) and that widened
 * to f32. Leaves are listed in hl / wl. */
static int make_inputs(const gad_op_sample *s, gad_dtype_t dt, gad_tensor **h, gad_tensor **w,
                       gad_tensor **hl, gad_tensor **wl) {
    int nl = 0;
    for (int i = 0; i < s->n; i++) {
        h[i] = w[i] = s->in[i];
        if (!is_wide_float(s->in[i])) continue;
        int leaf = gad_is_leaf(s->in[i]) && gad_is_tracked(s->in[i]);
        h[i] = gad_detach(gad_cast(s->in[i], dt));
        w[i] = gad_detach(gad_cast(h[i], GAD_F32));
        if (leaf) {
            hl[nl] = gad_requires_grad(h[i]);
            wl[nl++] = gad_requires_grad(w[i]);
        }
    }
    return nl;
}

/* The largest difference between got (dt) and want (f32) rounded to dt,
 * in units of the half's spacing at want's scale (the tensor's largest
 * magnitude, so that values near 0 do not count as large relative
 * errors); 0 when the bits agree. -1 when the shapes or dtypes differ. */
static double half_diff(gad_tensor *got, gad_tensor *want, gad_dtype_t dt, int *bitwise) {
    *bitwise = 0;
    if (!got || !want || gad_numel(got) != gad_numel(want)) return -1;
    /* an f32 result is rounded to dt; any other (f64 from a cast, an
     * index, a mask) must come out as it is */
    int f32 = gad_dtype(want) == GAD_F32;
    if (gad_dtype(got) != (f32 ? dt : gad_dtype(want))) return -1;
    gad_tensor *r = gad_contiguous(f32 ? gad_cast(want, dt) : want);
    gad_tensor *g = gad_contiguous(got);
    size_t bytes = (size_t)gad_numel(g) * gad__dsize(gad_dtype(g));
    if (!r || !g) return -1;
    if (bytes == 0 || !memcmp(gad_data(r), gad_data(g), bytes)) {
        *bitwise = 1;
        return 0;
    }
    if (!f32) return -1;
    int64_t n = gad_numel(g);
    static double a[1 << 16], b[1 << 16];
    if (n > (1 << 16) || gad_read_f64(g, a, n) || gad_read_f64(want, b, n)) return -1;
    double scale = 0, worst = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(b[i]) && fabs(b[i]) > scale) scale = fabs(b[i]);
    double ulp = (scale > 0 ? scale : 1) * (dt == GAD_BF16 ? 0x1p-8 : 0x1p-11);
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i])) continue;
        if (!isfinite(a[i]) || !isfinite(b[i])) {
            if (a[i] != b[i]) return 1e9;
            continue;
        }
        double d = fabs(a[i] - b[i]) / ulp;
        if (d > worst) worst = d;
    }
    return worst;
}

/* The ops whose result must be the f32 result's bits rounded once: one
 * pass in f32 (the elementwise rows, the reductions and softmax, the
 * fused ops' f32 fallback, the data movements). The others are
 * composites, which round each step. */
static const char *const op_family[GAD_OP_COUNT_] = {
#define X(ID, name, family, pwords) [GAD_OP_##ID] = #family,
#include "ops/ops.def"
#define NOGRAD(ID, name, family) [GAD_OP_##ID] = #family,
#include "ops/ops.def"
#define COMPOSITE(ID, name, family) [GAD_OP_##ID] = #family,
#include "ops/ops.def"
};

static int must_be_exact(int op) {
    const char *f = op_family[op] ? op_family[op] : "";
    return !strcmp(f, "elementwise") || !strcmp(f, "shape") || op == GAD_OP_SUM ||
           op == GAD_OP_MEAN || op == GAD_OP_AMAX || op == GAD_OP_SOFTMAX ||
           op == GAD_OP_LOG_SOFTMAX || op == GAD_OP_RMS_NORM || op == GAD_OP_MASKED_CE ||
           op == GAD_OP_EMBEDDING_FUSED || op == GAD_OP_GATED_SCAN ||
           op == GAD_OP_HELIX_BLOCK || op == GAD_OP_WHERE || op == GAD_OP_MASKED_FILL;
}

/* Within this many half ulps (of the tensor's scale), composites and
 * gradients (softmax's VJP, y (g - sum(g y)), cancels: 11 ulps seen). */
#define HALF_TOL 16.0

static void every_op_in(gad_dtype_t dt) {
    gad_rng *rng = gad_rng_new(29);
    int exact = 0, close = 0, refused = 0;
    char refused_names[4096] = "";
    for (int op = 1; op < GAD_OP_COUNT_; op++) {
        const gad_op_entry *e = &gad__ops[op];
        if (!e->sample) continue;
        for (int v = 0; v < 2; v++) {
            gad_op_sample s;
            if (!test_sample(op, rng, v, &s)) {
                gad_clear_error();
                break;
            }
            gad_tensor *h[12], *w[12], *hl[12], *wl[12];
            int nl = make_inputs(&s, dt, h, w, hl, wl);
            int any_float = 0;
            for (int i = 0; i < s.n; i++) any_float |= h[i] && gad__is_half(gad_dtype(h[i]));
            if (!any_float) {
                gad_scope_end();
                continue;
            }
            gad_tensor *yw = s.apply(&s, w, s.n);
            gad_clear_error();
            gad_tensor *yh = s.apply(&s, h, s.n);
            if (!yh || !yw) {
                const gad_error *err = gad_last_error();
                CHECK_MSG(!yh && err && (err->kind == GAD_ERR_DTYPE ||
                                         err->kind == GAD_ERR_UNSUPPORTED),
                          "%s %s (%s): f32 %s, half %s", e->info.name, s.what,
                          gad_dtype_name(dt), yw ? "ok" : "failed",
                          err ? err->text : "no error");
                if (!yh && v == 0) {
                    refused++;
                    if (strlen(refused_names) + 40 < sizeof refused_names) {
                        strcat(refused_names, " ");
                        strcat(refused_names, e->info.name);
                    }
                }
                gad_clear_error();
                gad_scope_end();
                break;
            }
            int bitwise;
            double d = half_diff(yh, yw, dt, &bitwise);
            if (must_be_exact(op))
                CHECK_MSG(bitwise, "%s %s (%s): not the f32 result rounded once (%g ulps)",
                          e->info.name, s.what, gad_dtype_name(dt), d);
            else
                CHECK_MSG(d >= 0 && d <= HALF_TOL, "%s %s (%s): %g half ulps from f32",
                          e->info.name, s.what, gad_dtype_name(dt), d);
            if (v == 0) bitwise ? exact++ : close++;
            /* the VJP: L = sum(y * p), p fixed, in both dtypes */
            if (nl > 0 && gad_is_tracked(yh) && gad__is_floating(gad_dtype(yh))) {
                gad_tensor *p = gad_detach(gad_cast(
                    gad_rng_uniform_tensor(rng, gad_shape(yh), gad_rank(yh), GAD_F32, 0.5, 1.5),
                    gad_dtype(yh)));
                gad_tensor *gh[12], *gw[12];
                gad_status a = gad_grad(gad_sum_all(gad_mul(yh, p)), hl, nl, gh);
                gad_status b = gad_grad(gad_sum_all(gad_mul(yw, gad_cast(p, gad_dtype(yw)))), wl,
                                        nl, gw);
                CHECK_MSG(a == GAD_OK && b == GAD_OK, "%s %s (%s) grad: %s", e->info.name, s.what,
                          gad_dtype_name(dt), gad_last_error() ? gad_last_error()->text : "");
                for (int q = 0; a == GAD_OK && b == GAD_OK && q < nl; q++) {
                    if (!gh[q] && !gw[q]) continue;
                    CHECK_MSG(gh[q] && gad_dtype(gh[q]) == dt, "%s %s: gradient %d has dtype %s",
                              e->info.name, s.what, q, gh[q] ? gad_dtype_name(gad_dtype(gh[q])) : "-");
                    double gd = half_diff(gh[q], gw[q], dt, &bitwise);
                    CHECK_MSG(gd >= 0 && gd <= HALF_TOL, "%s %s (%s): gradient %d %g half ulps from f32",
                              e->info.name, s.what, gad_dtype_name(dt), q, gd);
                }
            }
            gad_clear_error();
            gad_scope_end();
        }
    }
    printf("  %s: %d ops bitwise, %d within %g ulps, %d refuse half:%s\n", gad_dtype_name(dt),
           exact, close, HALF_TOL, refused, refused_names);
    gad_rng_free(rng);
}

TEST(every_op_bf16) { every_op_in(GAD_BF16); }
TEST(every_op_f16) { every_op_in(GAD_F16); }

/* A small bf16 model trained end to end with elementwise ops and
 * reductions only (a "linear" as broadcast multiply and sum): the loss
 * falls, every gradient is bf16 and within a few ulps of the f32 model's
 * on the same (widened) weights, and gad_backward accumulates into bf16
 * leaf gradients. */
static gad_tensor *mlp_loss(gad_tensor *x, gad_tensor *w1, gad_tensor *w2, gad_tensor *y) {
    /* h[b, j] = gelu(sum_i x[b, i] w1[i, j]); out[b] = sum_j h[b, j] w2[j] */
    gad_tensor *xb = gad_unsqueeze(x, 2);                          /* [B, I, 1] */
    gad_tensor *h = gad_gelu(gad_sum(gad_mul(xb, w1), (int[]){1}, 1, 0)); /* [B, J] */
    gad_tensor *out = gad_sum(gad_mul(h, w2), (int[]){1}, 1, 0);  /* [B] */
    gad_tensor *d = gad_sub(out, y);
    return gad_mean_all(gad_mul(d, d));
}

TEST(bf16_model_trains) {
    gad_scope_begin();
    gad_rng *rng = gad_rng_new(7);
    enum { B = 16, I = 8, J = 12 };
    gad_tensor *x = gad_cast(gad_rng_uniform_tensor(rng, (int64_t[]){B, I}, 2, GAD_F32, -1, 1), GAD_BF16);
    gad_tensor *y = gad_cast(gad_rng_uniform_tensor(rng, (int64_t[]){B}, 1, GAD_F32, -1, 1), GAD_BF16);
    gad_tensor *w[2] = {
        gad_cast(gad_rng_uniform_tensor(rng, (int64_t[]){I, J}, 2, GAD_F32, -0.5, 0.5), GAD_BF16),
        gad_cast(gad_rng_uniform_tensor(rng, (int64_t[]){J}, 1, GAD_F32, -0.5, 0.5), GAD_BF16)};
    for (int i = 0; i < 2; i++) w[i] = gad_requires_grad(gad_detach(w[i]));
    double first = 0, last = 0;
    for (int step = 0; step < 30; step++) {
        gad_scope_begin();
        gad_tensor *L = mlp_loss(x, w[0], w[1], y);
        CHECK(L && gad_dtype(L) == GAD_BF16);
        gad_tensor *g[2];
        CHECK(GAD_OK == gad_grad(L, w, 2, g));
        if (step == 0) {
            first = gad_item(L);
            /* the f32 model on the same values */
            gad_tensor *wf[2], *gf[2];
            for (int i = 0; i < 2; i++) wf[i] = gad_requires_grad(gad_detach(gad_cast(w[i], GAD_F32)));
            gad_tensor *Lf = mlp_loss(gad_cast(x, GAD_F32), wf[0], wf[1], gad_cast(y, GAD_F32));
            CHECK(GAD_OK == gad_grad(Lf, wf, 2, gf));
            for (int i = 0; i < 2; i++) {
                int bitwise;
                CHECK(gad_dtype(g[i]) == GAD_BF16);
                double d = half_diff(g[i], gf[i], GAD_BF16, &bitwise);
                CHECK_MSG(d >= 0 && d <= HALF_TOL, "w%d: gradient %g bf16 ulps from f32", i, d);
            }
        }
        last = gad_item(L);
        for (int i = 0; i < 2; i++) { /* SGD, in bf16 */
            gad_tensor *nw = gad_detach(gad_sub(w[i], gad_mul_scalar(g[i], 0.2)));
            w[i] = gad_requires_grad(nw);
            gad_keep(w[i]);
        }
        gad_scope_end();
    }
    CHECK_MSG(last < 0.7 * first, "loss %g -> %g", first, last);
    /* gad_backward: leaf gradients accumulate, in bf16 */
    CHECK(GAD_OK == gad_backward(mlp_loss(x, w[0], w[1], y)));
    CHECK(GAD_OK == gad_backward(mlp_loss(x, w[0], w[1], y)));
    for (int i = 0; i < 2; i++) {
        gad_tensor *g = gad_leaf_grad(w[i]);
        CHECK(g && gad_dtype(g) == GAD_BF16);
    }
    gad_rng_free(rng);
    gad_scope_end();
}

/* Large operands (threads, streaming stores, tiles' edges), strided and
 * broadcast ones, and special values (NaN, inf, subnormals, values that
 * round past the largest half), on every conversion path this CPU has
 * (half_vec.h's forced ones included): the bits of the f32 op, rounded. */
static void large_case(gad_dtype_t dt, const char *path) {
    gad_scope_begin();
    gad_rng *rng = gad_rng_new(31);
    int64_t shape[2] = {300, 2049}; /* > 2 * EW_GRAIN, odd rows */
    gad_tensor *a = gad_rng_normal_tensor(rng, shape, 2, GAD_F32, 0, 3);
    float *p = gad_data_mut(a);
    const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 0x1p-20f, -0x1p-25f, 1e-40f,
                             70000.0f, 65520.0f, 65519.0f, 3.4e38f, -0.0f};
    for (int i = 0; p && i < (int)(sizeof special / sizeof *special); i++)
        p[i * 977] = special[i];
    gad_tensor *ah = gad_cast(a, dt);
    gad_tensor *bh = gad_cast(gad_rng_normal_tensor(rng, shape, 2, GAD_F32, 1, 2), dt);
    gad_tensor *row = gad_cast(gad_rng_normal_tensor(rng, (int64_t[]){2049}, 1, GAD_F32, 0, 1), dt);
    gad_tensor *at = gad_transpose(ah); /* strided */
    gad_tensor *aw = gad_cast(ah, GAD_F32), *bw = gad_cast(bh, GAD_F32), *rw = gad_cast(row, GAD_F32);
    gad_tensor *atw = gad_transpose(aw);
    struct {
        const char *what;
        gad_tensor *h, *w;
    } c[] = {
        {"add", gad_add(ah, bh), gad_add(aw, bw)},
        {"div broadcast row", gad_div(ah, row), gad_div(aw, rw)},
        /* the 0-d f32 takes the half dtype first (result_type), as in PyTorch */
        {"mul 0-d", gad_mul(ah, gad_scalar_f32(0.1f)),
         gad_mul(aw, gad_cast(gad_cast(gad_scalar_f32(0.1f), dt), GAD_F32))},
        {"gelu", gad_gelu(ah), gad_gelu(aw)},
        {"exp strided", gad_exp(at), gad_exp(atw)},
        {"tanh", gad_tanh(ah), gad_tanh(aw)},
        {"sum axis 0", gad_sum(bh, (int[]){0}, 1, 0), gad_sum(bw, (int[]){0}, 1, 0)},
        {"sum axis 1", gad_sum(bh, (int[]){1}, 1, 0), gad_sum(bw, (int[]){1}, 1, 0)},
        {"sum_all", gad_sum_all(bh), gad_sum_all(bw)},
        {"softmax rows", gad_softmax(bh, 1), gad_softmax(bw, 1)},
        {"log_softmax cols", gad_log_softmax(bh, 0), gad_log_softmax(bw, 0)},
        {"amax", gad_amax(ah, 1, 0), gad_amax(aw, 1, 0)},
        {"rms_norm (blocks of rows)", gad_rms_norm(bh, 1e-5), gad_rms_norm(bw, 1e-5)},
    };
    for (int i = 0; i < (int)(sizeof c / sizeof *c); i++) {
        int bitwise;
        double d = half_diff(c[i].h, c[i].w, dt, &bitwise);
        CHECK_MSG(bitwise, "%s (%s, %s): %g ulps from the f32 result rounded", c[i].what,
                  gad_dtype_name(dt), path, d);
    }
    /* a gradient kernel, on the large tensors (gelu's reads x, exact in
     * both; tanh's would read y, rounded to half in one of them) */
    gad_tensor *x = gad_requires_grad(gad_detach(bh)), *xw = gad_requires_grad(gad_detach(bw));
    gad_tensor *g, *gw;
    CHECK(gad_grad(gad_sum_all(gad_gelu(x)), &x, 1, &g) == GAD_OK);
    CHECK(gad_grad(gad_sum_all(gad_gelu(xw)), &xw, 1, &gw) == GAD_OK);
    int bitwise;
    double d = half_diff(g, gw, dt, &bitwise);
    CHECK_MSG(bitwise, "gelu's gradient (%s, %s): %g ulps", gad_dtype_name(dt), path, d);
    CHECK(gad_grad(gad_sum_all(gad_rms_norm(x, 1e-5)), &x, 1, &g) == GAD_OK);
    CHECK(gad_grad(gad_sum_all(gad_rms_norm(xw, 1e-5)), &xw, 1, &gw) == GAD_OK);
    d = half_diff(g, gw, dt, &bitwise);
    CHECK_MSG(bitwise, "rms_norm's gradient (%s, %s): %g ulps", gad_dtype_name(dt), path, d);
    gad_rng_free(rng);
    gad_scope_end();
}

TEST(large_and_special_on_every_path) {
    static const int levels[] = {GAD_HALF_VEC_AUTO, GAD_HALF_VEC_PORTABLE, GAD_HALF_VEC_SCALAR};
    for (int l = 0; l < 3; l++) {
        int prev = gad__half_vec_force(levels[l]);
        const char *path = gad__half_vec_path(1);
        large_case(GAD_BF16, path);
        large_case(GAD_F16, gad__half_vec_path(0));
        gad__half_vec_force(prev);
    }
}

/* Batch and instance norm of a half x in training update the running
 * statistics in place: half ones to the f32 op's update rounded once, f32
 * ones to the f32 op's update itself; the output is the f32 op's rounded
 * once either way. */
static int same_bits(gad_tensor *a, gad_tensor *b) {
    gad_tensor *ca = gad_contiguous(a), *cb = gad_contiguous(b);
    size_t n = (size_t)gad_numel(ca) * gad__dsize(gad_dtype(ca));
    return ca && cb && gad_dtype(ca) == gad_dtype(cb) && gad_numel(ca) == gad_numel(cb) &&
           (n == 0 || !memcmp(gad_data(ca), gad_data(cb), n));
}

TEST(half_norm_updates_running_statistics) {
    gad_rng *rng = gad_rng_new(31);
    for (int inst = 0; inst < 2; inst++)
        for (int run_half = 0; run_half < 2; run_half++) {
            gad_scope_begin();
            enum { N = 3, C = 4, S = 5 };
            gad_tensor *x = gad_cast(
                gad_rng_uniform_tensor(rng, (int64_t[]){N, C, S}, 3, GAD_F32, -2, 2), GAD_BF16);
            gad_tensor *m0 = gad_rng_uniform_tensor(rng, (int64_t[]){C}, 1, GAD_F32, -1, 1);
            gad_tensor *v0 = gad_rng_uniform_tensor(rng, (int64_t[]){C}, 1, GAD_F32, 0.5, 2);
            if (run_half) {
                m0 = gad_cast(gad_cast(m0, GAD_BF16), GAD_F32);
                v0 = gad_cast(gad_cast(v0, GAD_BF16), GAD_F32);
            }
            /* the reference: the f32 op on the widened x and statistics */
            gad_tensor *wm = gad_clone(m0), *wv = gad_clone(v0);
            gad_tensor *x32 = gad_cast(x, GAD_F32);
            gad_tensor *yw = inst ? gad_instance_norm(x32, wm, wv, NULL, NULL, 1, 0.1, 1e-5)
                                  : gad_batch_norm(x32, wm, wv, NULL, NULL, 1, 0.1, 1e-5);
            gad_dtype_t rdt = run_half ? GAD_BF16 : GAD_F32;
            gad_tensor *hm = gad_contiguous(gad_clone(gad_cast(m0, rdt)));
            gad_tensor *hv = gad_contiguous(gad_clone(gad_cast(v0, rdt)));
            gad_tensor *yh = inst ? gad_instance_norm(x, hm, hv, NULL, NULL, 1, 0.1, 1e-5)
                                  : gad_batch_norm(x, hm, hv, NULL, NULL, 1, 0.1, 1e-5);
            CHECK_MSG(yh && yw && gad_dtype(yh) == GAD_BF16 &&
                          same_bits(yh, gad_cast(yw, GAD_BF16)),
                      "%s, %s running statistics: not the f32 result rounded once: %s",
                      inst ? "instance_norm" : "batch_norm", run_half ? "bf16" : "f32",
                      gad_last_error() ? gad_last_error()->text : "");
            CHECK(gad_dtype(hm) == rdt && gad_dtype(hv) == rdt);
            CHECK_MSG(same_bits(hm, gad_cast(wm, rdt)) && same_bits(hv, gad_cast(wv, rdt)),
                      "%s, %s running statistics: not the f32 update%s",
                      inst ? "instance_norm" : "batch_norm", run_half ? "bf16" : "f32",
                      run_half ? " rounded once" : "");
            CHECK(!same_bits(hm, gad_cast(m0, rdt))); /* it moved */
            gad_scope_end();
        }
    gad_rng_free(rng);
}

int main(void) {
    RUN(large_and_special_on_every_path);
    RUN(every_op_bf16);
    RUN(every_op_f16);
    RUN(bf16_model_trains);
    RUN(half_norm_updates_running_statistics);
    return test_summary();
}
