/* test_amp.c: mixed precision (issue 29; gad.h "Mixed precision"): f32
 * masters with f16/bf16 working copies (bit for bit against an f32
 * optimizer fed the widened gradients), gradients read from the copies'
 * slots, the loss scaler's rules (PyTorch's GradScaler) and its skipped
 * steps, an f16 gradient that underflows without scaling and survives with
 * it, the errors, and no leaks. */
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static int64_t live_tensors(void) {
    gad_mem_stats s;
    gad_mem_stats_get(&s);
    return s.live_tensors;
}
#define LEAK_BEGIN() const int64_t live0_ = live_tensors()
#define LEAK_END() CHECK_MSG(live_tensors() == live0_, "live tensors %lld, was %lld", \
                             (long long)live_tensors(), (long long)live0_)

#define N 37

/* Same bits: a and b of one dtype and shape. */
static int same_bits(gad_tensor *a, gad_tensor *b) {
    if (gad_dtype(a) != gad_dtype(b) || gad_numel(a) != gad_numel(b)) return 0;
    gad_tensor *ca = gad_contiguous(a), *cb = gad_contiguous(b);
    size_t bytes = (size_t)gad_numel(a) * gad_dtype_size(gad_dtype(a));
    const void *pa = gad_data(ca), *pb = gad_data(cb);
    int same = pa && pb && memcmp(pa, pb, bytes) == 0;
    gad_release(ca);
    gad_release(cb);
    return same;
}

static gad_tensor *randn_leaf(gad_rng *r, double scale) {
    gad_tensor *z = gad_rng_normal_tensor(r, (int64_t[]){N}, 1, GAD_F32, 0, 1);
    gad_tensor *t = gad_mul_scalar(z, scale), *c = gad_clone(t);
    gad_release(z);
    gad_release(t);
    return gad_requires_grad(c);
}

/* Masters with copies of dtype d, fed half gradients, against a twin f32
 * optimizer fed the same gradients widened: the same masters bit for bit,
 * and copies that are the masters rounded. */
static void copies_follow(gad_dtype_t d, int adamw) {
    LEAK_BEGIN();
    gad_rng *r = gad_rng_new(7);
    gad_tensor *m = randn_leaf(r, 1.0);
    gad_tensor *dm = gad_detach(m), *twin = gad_requires_grad(gad_clone(dm));
    gad_release(dm);
    gad_tensor *copy = gad_requires_grad(gad_zeros((int64_t[]){N}, 1, d));
    gad_optim *o = adamw ? gad_adamw_new(&m, 1, &(gad_adamw_opts){.lr = 0.01})
                         : gad_sgd_new(&m, 1, &(gad_sgd_opts){.lr = 0.1, .momentum = 0.9});
    gad_optim *t = adamw ? gad_adamw_new(&twin, 1, &(gad_adamw_opts){.lr = 0.01})
                         : gad_sgd_new(&twin, 1, &(gad_sgd_opts){.lr = 0.1, .momentum = 0.9});
    CHECK(o && t);
    CHECK(gad_optim_set_copies(o, &copy) == GAD_OK);
    gad_tensor *want = gad_cast(m, d);
    CHECK(same_bits(copy, want));
    gad_release(want);
    for (int step = 0; step < 5; step++) {
        gad_tensor *g32 = gad_rng_normal_tensor(r, (int64_t[]){N}, 1, GAD_F32, 0, 1);
        gad_tensor *gh = gad_cast(g32, d), *gw = gad_cast(gh, GAD_F32);
        CHECK(gad_optim_step(o, &gh) == GAD_OK); /* the copy's dtype */
        CHECK(gad_optim_step(t, &gw) == GAD_OK); /* the same values, widened */
        CHECK(same_bits(m, twin));
        want = gad_cast(m, d);
        CHECK(same_bits(copy, want));
        gad_release(want);
        gad_release(g32);
        gad_release(gh);
        gad_release(gw);
    }
    CHECK_OK();
    gad_optim_free(o);
    gad_optim_free(t);
    gad_release(m);
    gad_release(twin);
    gad_release(copy);
    gad_rng_free(r);
    LEAK_END();
}

TEST(copies_follow_masters) {
    copies_follow(GAD_BF16, 1);
    copies_follow(GAD_F16, 1);
    copies_follow(GAD_BF16, 0);
    copies_follow(GAD_F16, 0);
}

/* gad_backward through a copy fills the copy's slot in half; the step with
 * grads NULL reads it, and zero_grad empties it. */
TEST(step_reads_copy_slots) {
    LEAK_BEGIN();
    gad_rng *r = gad_rng_new(3);
    gad_tensor *m = randn_leaf(r, 1.0), *dm = gad_detach(m),
               *copy = gad_requires_grad(gad_cast(dm, GAD_BF16));
    gad_release(dm);
    gad_optim *o = gad_sgd_new(&m, 1, &(gad_sgd_opts){.lr = 0.5});
    CHECK(gad_optim_set_copies(o, &copy) == GAD_OK);
    float before[N], after[N], c[N];
    CHECK(gad_read_f32(m, before, N) == GAD_OK);
    gad_scope_begin();
    for (int i = 0; i < N; i++) c[i] = (float)(i - 18) * 0.25f;
    gad_tensor *ct = gad_from_f32(c, (int64_t[]){N}, 1);
    gad_tensor *loss = gad_sum_all(gad_mul(gad_cast(copy, GAD_F32), ct));
    CHECK(gad_backward(loss) == GAD_OK);
    CHECK(gad_leaf_has_grad(copy) && !gad_leaf_has_grad(m));
    CHECK(gad_dtype(gad_leaf_grad(copy)) == GAD_BF16);
    gad_scope_end();
    CHECK(gad_optim_step(o, NULL) == GAD_OK);
    CHECK(gad_read_f32(m, after, N) == GAD_OK);
    for (int i = 0; i < N; i++) /* c is exact in bf16: p - 0.5 c */
        CHECK(after[i] == before[i] - 0.5f * c[i]);
    gad_optim_zero_grad(o);
    CHECK(!gad_leaf_has_grad(copy));
    /* an empty slot skips the parameter */
    CHECK(gad_optim_step(o, NULL) == GAD_OK);
    float again[N];
    CHECK(gad_read_f32(m, again, N) == GAD_OK);
    CHECK(memcmp(again, after, sizeof after) == 0);
    CHECK_OK();
    gad_optim_free(o);
    gad_release(m);
    gad_release(copy);
    gad_rng_free(r);
    LEAK_END();
}

/* Copy-on-write: a graph that read the copy keeps the old values. */
TEST(copy_written_in_place) {
    LEAK_BEGIN();
    float v[3] = {1, 2, 3};
    gad_tensor *m = gad_requires_grad(gad_from_f32(v, (int64_t[]){3}, 1));
    gad_tensor *copy = gad_requires_grad(gad_zeros((int64_t[]){3}, 1, GAD_BF16));
    gad_optim *o = gad_sgd_new(&m, 1, &(gad_sgd_opts){.lr = 1});
    CHECK(gad_optim_set_copies(o, &copy) == GAD_OK);
    gad_tensor *view = gad_view(copy, (int64_t[]){3, 1}, 2); /* shares the old values */
    gad_tensor *g = gad_ones((int64_t[]){3}, 1, GAD_BF16);
    gad_tensor *same = copy;
    CHECK(gad_optim_step(o, &g) == GAD_OK);
    CHECK(copy == same && gad_is_leaf(copy));
    CHECK_VALUES(copy, 0, 0.0, 1.0, 2.0);
    CHECK_VALUES(view, 0, 1.0, 2.0, 3.0);
    CHECK_OK();
    gad_release(view);
    gad_release(g);
    gad_optim_free(o);
    gad_release(m);
    gad_release(copy);
    LEAK_END();
}

TEST(copies_errors) {
    LEAK_BEGIN();
    gad_tensor *m[2] = {gad_requires_grad(gad_zeros((int64_t[]){3}, 1, GAD_F32)),
                        gad_requires_grad(gad_zeros((int64_t[]){2}, 1, GAD_F32))};
    gad_optim *o = gad_adamw_new(m, 2, NULL);
    gad_tensor *ok = gad_requires_grad(gad_zeros((int64_t[]){3}, 1, GAD_F16));
    gad_tensor *wrong = gad_requires_grad(gad_zeros((int64_t[]){4}, 1, GAD_F16));
    gad_tensor *notleaf = gad_zeros((int64_t[]){2}, 1, GAD_F16);
    gad_tensor *ints = gad_requires_grad(gad_zeros((int64_t[]){2}, 1, GAD_F32));
    gad_tensor *i64 = gad_zeros((int64_t[]){2}, 1, GAD_I64);
    CHECK(gad_optim_set_copies(o, (gad_tensor *[]){ok, wrong}) == GAD_ERR_SHAPE);
    CHECK_ERR(GAD_ERR_SHAPE, "optim_set_copies");
    CHECK(gad_optim_set_copies(o, (gad_tensor *[]){ok, notleaf}) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_set_copies");
    CHECK(gad_optim_set_copies(o, (gad_tensor *[]){m[0], NULL}) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_set_copies");
    CHECK(gad_optim_set_copies(o, (gad_tensor *[]){NULL, i64}) != GAD_OK);
    gad_clear_error();
    CHECK(gad_optim_set_copies(NULL, (gad_tensor *[]){ok, NULL}) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "optim_set_copies");
    /* a failed call changed nothing: no copies, the masters' slots read */
    CHECK(gad_optim_step(o, NULL) == GAD_OK);
    CHECK(gad_optim_set_copies(o, (gad_tensor *[]){ok, ints}) == GAD_OK);
    CHECK(gad_optim_set_copies(o, NULL) == GAD_OK);
    /* a gradient of neither dtype */
    CHECK(gad_optim_set_copies(o, (gad_tensor *[]){ok, NULL}) == GAD_OK);
    gad_tensor *g64[2] = {gad_zeros((int64_t[]){3}, 1, GAD_F64), gad_zeros((int64_t[]){2}, 1, GAD_F32)};
    CHECK(gad_optim_step(o, g64) == GAD_ERR_DTYPE);
    CHECK_ERR(GAD_ERR_DTYPE, "optim_step");
    CHECK(gad_optim_steps(o) == 1);
    CHECK_OK();
    gad_release(g64[0]);
    gad_release(g64[1]);
    gad_optim_free(o);
    for (int i = 0; i < 2; i++) gad_release(m[i]);
    gad_release(ok);
    gad_release(wrong);
    gad_release(notleaf);
    gad_release(ints);
    gad_release(i64);
    LEAK_END();
}

/* PyTorch's GradScaler rules: backoff on an overflow, growth after
 * growth_interval good steps in a row. */
TEST(scaler_rules) {
    LEAK_BEGIN();
    gad_grad_scaler *s = gad_grad_scaler_new(NULL);
    CHECK(gad_grad_scaler_scale_value(s) == 65536.0);
    gad_grad_scaler_free(s);
    s = gad_grad_scaler_new(&(gad_grad_scaler_opts){.init_scale = 8, .growth_interval = 3});
    CHECK(gad_grad_scaler_update(s, 1) == GAD_OK && gad_grad_scaler_scale_value(s) == 8);
    CHECK(gad_grad_scaler_update(s, 1) == GAD_OK && gad_grad_scaler_scale_value(s) == 8);
    CHECK(gad_grad_scaler_update(s, 1) == GAD_OK && gad_grad_scaler_scale_value(s) == 16);
    CHECK(gad_grad_scaler_update(s, 1) == GAD_OK && gad_grad_scaler_update(s, 1) == GAD_OK);
    CHECK(gad_grad_scaler_update(s, 0) == GAD_OK && gad_grad_scaler_scale_value(s) == 8);
    double sc;
    int64_t good;
    CHECK(gad_grad_scaler_state(s, &sc, &good) == GAD_OK && sc == 8 && good == 0);
    CHECK(gad_grad_scaler_load_state(s, 32, 2) == GAD_OK);
    CHECK(gad_grad_scaler_update(s, 1) == GAD_OK && gad_grad_scaler_scale_value(s) == 64);
    CHECK(gad_grad_scaler_load_state(s, INFINITY, 0) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "grad_scaler_load_state");
    CHECK(gad_grad_scaler_load_state(s, 1, -1) == GAD_ERR_DOMAIN);
    gad_clear_error();
    /* a scale that would overflow is kept */
    CHECK(gad_grad_scaler_load_state(s, 1e308, 2) == GAD_OK);
    CHECK(gad_grad_scaler_update(s, 1) == GAD_OK && gad_grad_scaler_scale_value(s) == 1e308);
    gad_grad_scaler_free(s);
    CHECK(gad_grad_scaler_new(&(gad_grad_scaler_opts){.init_scale = -1}) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "grad_scaler_new");
    CHECK(gad_grad_scaler_new(&(gad_grad_scaler_opts){.growth_factor = 0.5}) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "grad_scaler_new");
    CHECK(gad_grad_scaler_new(&(gad_grad_scaler_opts){.backoff_factor = 1}) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "grad_scaler_new");
    CHECK(gad_grad_scaler_new(&(gad_grad_scaler_opts){.growth_interval = -2}) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "grad_scaler_new");
    CHECK(isnan(gad_grad_scaler_scale_value(NULL)));
    CHECK_ERR(GAD_ERR_DOMAIN, "grad_scaler_scale_value");
    gad_grad_scaler_free(NULL);
    CHECK_OK();
    LEAK_END();
}

/* An f16 gradient of 1e-9 underflows to 0 unscaled; scaled by 65536 it is
 * 6.6e-5 in f16, and the unscaled f32 gradient is 1e-9 to f16's precision.
 * An overflowing step is skipped and leaves the optimizer untouched. */
TEST(scaler_f16_underflow_and_skip) {
    LEAK_BEGIN();
    float v[4] = {0.5f, -1, 2, 0.25f};
    gad_tensor *m = gad_requires_grad(gad_from_f32(v, (int64_t[]){4}, 1));
    gad_tensor *dm = gad_detach(m), *copy = gad_requires_grad(gad_cast(dm, GAD_F16));
    gad_release(dm);
    gad_optim *o = gad_sgd_new(&m, 1, &(gad_sgd_opts){.lr = 1e6});
    gad_grad_scaler *s = gad_grad_scaler_new(NULL);
    CHECK(gad_optim_set_copies(o, &copy) == GAD_OK);
    gad_scope_begin();
    /* without scaling */
    gad_tensor *loss = gad_mul_scalar(gad_sum_all(gad_cast(copy, GAD_F32)), 1e-9);
    gad_tensor *g = NULL;
    CHECK(gad_grad(loss, &copy, 1, &g) == GAD_OK);
    float gv[4];
    CHECK(gad_read_f32(g, gv, 4) == GAD_OK && gv[0] == 0 && gv[3] == 0);
    /* with */
    gad_tensor *sl = gad_grad_scaler_scale(s, loss);
    CHECK(gad_dtype(sl) == GAD_F32);
    CHECK(gad_grad(sl, &copy, 1, &g) == GAD_OK);
    CHECK(gad_dtype(g) == GAD_F16);
    gad_tensor *un[1];
    CHECK(gad_grad_scaler_unscale(s, &g, un, 1) == 1);
    CHECK(gad_dtype(un[0]) == GAD_F32);
    CHECK(gad_read_f32(un[0], gv, 4) == GAD_OK);
    for (int i = 0; i < 4; i++) CHECK(fabs(gv[i] - 1e-9) < 1e-9 * 1e-3);
    int stepped = -1;
    CHECK(gad_grad_scaler_step(s, o, &g, &stepped) == GAD_OK && stepped == 1);
    CHECK(gad_optim_steps(o) == 1 && gad_grad_scaler_scale_value(s) == 65536);
    float mv[4];
    CHECK(gad_read_f32(m, mv, 4) == GAD_OK);
    for (int i = 0; i < 4; i++) CHECK(fabs(mv[i] - (v[i] - 1e-3)) < 1e-6);
    /* an overflow: skipped, scale halved, nothing changed */
    gad_tensor *inf = gad_full((int64_t[]){4}, 1, GAD_F16, INFINITY);
    CHECK(gad_grad_scaler_step(s, o, &inf, &stepped) == GAD_OK && stepped == 0);
    CHECK(gad_optim_steps(o) == 1 && gad_grad_scaler_scale_value(s) == 32768);
    float mv2[4];
    CHECK(gad_read_f32(m, mv2, 4) == GAD_OK && memcmp(mv, mv2, sizeof mv) == 0);
    /* from the slots: backward of the scaled loss */
    gad_optim_zero_grad(o);
    CHECK(gad_backward(gad_grad_scaler_scale(s, loss)) == GAD_OK);
    CHECK(gad_grad_scaler_step(s, o, NULL, &stepped) == GAD_OK && stepped == 1);
    CHECK(gad_optim_steps(o) == 2);
    gad_scope_end();
    /* errors */
    gad_tensor *ig = gad_zeros((int64_t[]){4}, 1, GAD_I64);
    gad_tensor *out[1];
    CHECK(gad_grad_scaler_unscale(s, &ig, out, 1) == -1 && out[0] == NULL);
    CHECK_ERR(GAD_ERR_DTYPE, "grad_scaler_unscale");
    CHECK(gad_grad_scaler_step(NULL, o, NULL, NULL) == GAD_ERR_DOMAIN);
    CHECK_ERR(GAD_ERR_DOMAIN, "grad_scaler_step");
    CHECK(gad_grad_scaler_scale(s, NULL) == NULL);
    CHECK_ERR(GAD_ERR_DOMAIN, "grad_scaler_scale");
    CHECK_OK();
    gad_release(ig);
    gad_grad_scaler_free(s);
    gad_optim_free(o);
    gad_release(m);
    gad_release(copy);
    LEAK_END();
}

int main(void) {
    RUN(copies_follow_masters);
    RUN(step_reads_copy_slots);
    RUN(copy_written_in_place);
    RUN(copies_errors);
    RUN(scaler_rules);
    RUN(scaler_f16_underflow_and_skip);
    return test_summary();
}
