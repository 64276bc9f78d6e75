// SPDX-License-Identifier: MIT
// What gad.hpp computes: its operators against the C functions they stand
// for (the same bits), the braced-list wrappers, that gad::scope,
// gad::owned and the scalar operators leave no tensor behind, and its two
// error modes: built as test_cpp_hpp_exceptions (gad::check throws
// gad::error) and test_cpp_hpp_status (GAD_HPP_NO_EXCEPTIONS: NULL and the
// thread's error, as in C).
#include "gad.hpp"

#include <cstdio>
#include <cstring>
#include <utility>

static int failures = 0;
#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__,        \
                         __LINE__, #c);                                        \
            failures++;                                                        \
        }                                                                      \
    } while (0)

static int64_t live() {
    gad_mem_stats s;
    gad_mem_stats_get(&s);
    return s.live_tensors;
}

// t's values equal those of the C expression's result, bit for bit.
static bool same(gad_tensor *t, gad_tensor *ref) {
    if (!t || !ref || gad_numel(t) != gad_numel(ref) || gad_rank(t) != gad_rank(ref))
        return false;
    for (int i = 0; i < gad_rank(t); i++)
        if (gad_shape(t)[i] != gad_shape(ref)[i]) return false;
    float a[64], b[64];
    if (gad_numel(t) > 64 || gad_read_f32(t, a, 64) != GAD_OK ||
        gad_read_f32(ref, b, 64) != GAD_OK)
        return false;
    return std::memcmp(a, b, sizeof(float) * static_cast<size_t>(gad_numel(t))) == 0;
}

static bool has_shape(gad_tensor *t, gad::shape s) {
    if (!t || gad_rank(t) != static_cast<int>(s.size())) return false;
    int i = 0;
    for (int64_t d : s)
        if (gad_shape(t)[i++] != d) return false;
    return true;
}

static const float av[] = {1, 2, 3, 4, 5, 6};

static void operators_and_lists() {
    gad::scope s;
    gad::tensor a = gad::from_f32(av, {2, 3});
    CHECK(a.rank() == 2 && a.numel() == 6 && a.dtype() == GAD_F32);
    const float bv[] = {2, 4, 8};
    gad::tensor b = gad::from_f32(bv, {3});
    CHECK(same(a + b, gad_add(a, b)));
    CHECK(same(a - b, gad_sub(a, b)));
    CHECK(same(a * b, gad_mul(a, b)));
    CHECK(same(a / b, gad_div(a, b)));
    CHECK(same(-a, gad_neg(a)));
    CHECK(same(a + 0.5, gad_add_scalar(a, 0.5)));
    CHECK(same(0.5 + a, gad_add_scalar(a, 0.5)));
    CHECK(same(a - 0.5, gad_sub(a, gad_scalar_f32(0.5f))));
    CHECK(same(0.5 - a, gad_sub(gad_scalar_f32(0.5f), a)));
    CHECK(same(a * 3.0, gad_mul_scalar(a, 3)));
    CHECK(same(3.0 * a, gad_mul_scalar(a, 3)));
    CHECK(same(a / 3.0, gad_div(a, gad_scalar_f32(3))));
    CHECK(same(3.0 / a, gad_div(gad_scalar_f32(3), a)));
    CHECK(same(a * 2 + 1, gad_add_scalar(gad_mul_scalar(a, 2), 1))); // int literals
    gad_tensor *raw = b;                        // a raw pointer on either side
    CHECK(same(a - raw, gad_sub(a, b)) && same(raw - a, gad_sub(b, a)));
    CHECK(same(raw * a, gad_mul(b, a)));
    const double dv[] = {1, 2};
    gad::tensor d = gad::from_f64(dv, {2});
    CHECK((d / 3.0).dtype() == GAD_F64); // the scalar takes the tensor's dtype
    const int64_t iv[] = {0, 1};
    CHECK(gad::from_i64(iv, {2}).dtype() == GAD_I64);

    CHECK(has_shape(gad::zeros({2, 3}), {2, 3}));
    CHECK(gad::ones({2}, GAD_F64).dtype() == GAD_F64);
    const int64_t two_shape[] = {2};
    CHECK(same(gad::full({2}, GAD_F32, 7), gad_full(two_shape, 1, GAD_F32, 7)));
    CHECK(gad::full({}, GAD_F32, 7).item() == 7); // {} is rank 0
    CHECK(!same(a, a + 1.0));                      // same() can tell
    CHECK(has_shape(gad::randn({4, 1}, 3), {4, 1}));
    CHECK(has_shape(gad::reshape(a, {3, -1}), {3, 2}));
    CHECK(has_shape(gad::view(a, {6}), {6}));
    CHECK(has_shape(gad::broadcast_to(b, {4, 3}), {4, 3}));
    const int perm[] = {1, 0};
    CHECK(same(gad::permute(a, {1, 0}), gad_permute(a, perm, 2)));
    CHECK(same(gad::flip(a, {1, 0}), gad_flip(a, perm, 2)));
    const int64_t sh[] = {1, -3};
    CHECK(same(gad::roll(a, {1, -3}, {1, 0}), gad_roll(a, sh, perm, 2)));
    CHECK(same(gad::roll(a, {-3}), gad_roll(a, sh + 1, nullptr, 1)));
    { /* pooling (issue 28) */
        const int64_t ishape[4] = {1, 1, gad_shape(a)[0], gad_shape(a)[1]};
        gad_tensor *img = gad_reshape(a, ishape, 4);
        gad_pool_opts po{};
        po.kernel[0] = po.kernel[1] = 1;
        CHECK(same(gad::max_pool2d(img, po), gad_max_pool2d(img, &po, nullptr)));
        CHECK(same(gad::avg_pool2d(img, po), gad_avg_pool2d(img, &po)));
        CHECK(same(gad::adaptive_avg_pool2d(img, 1, 1), gad_adaptive_avg_pool2d(img, 1, 1)));
        const int64_t pads[4] = {1, 0, 1, 1}, size[2] = {4, 5}, fsize[2] = {2, 3};
        CHECK(same(gad::pad(img, {1, 0, 1, 1}, GAD_PAD_REPLICATE),
                   gad_pad(img, pads, 4, GAD_PAD_REPLICATE, 0)));
        CHECK(same(gad::interpolate(img, {4, 5}, GAD_INTERP_BILINEAR),
                   gad_interpolate(img, size, nullptr, 2, GAD_INTERP_BILINEAR, 0)));
        CHECK(same(gad::pixel_unshuffle(gad::pixel_shuffle(img, 1), 1), img));
        gad_fold_opts fo{};
        fo.kernel[0] = fo.kernel[1] = 1;
        CHECK(same(gad::fold(gad::unfold(img, fo), {fsize[0], fsize[1]}, fo),
                   gad_fold(gad_unfold(img, &fo), fsize, &fo)));
    }
    /* convolution: the options builder against a filled gad_conv_opts */
    gad::tensor cx = gad::randn({1, 4, 3, 3}, 3), cw = gad::randn({6, 2, 3, 3}, 4);
    gad::tensor cb = gad::randn({6}, 5);
    gad_conv_opts co = gad_conv_opts();
    co.stride[0] = 2, co.padding[0] = 1, co.padding[1] = 1, co.groups = 2;
    CHECK(same(gad::conv2d(cx, cw, cb, gad::conv_opts().stride({2, 1}).padding({1, 1}).groups(2)),
               gad_conv2d(cx, cw, cb, &co)));
    gad_conv_opts cs = gad_conv_opts();
    cs.padding_mode = GAD_CONV_PAD_SAME;
    CHECK(same(gad::conv2d(cx, gad::randn({3, 4, 2, 2}, 6), nullptr, gad::conv_opts().same()),
               gad_conv2d(cx, gad::randn({3, 4, 2, 2}, 6), nullptr, &cs)));
    gad_conv_opts ct = gad_conv_opts();
    ct.stride[0] = ct.stride[1] = 2, ct.output_padding[0] = 1;
    CHECK(same(gad::conv_transpose2d(cx, gad::randn({4, 1, 2, 2}, 7), nullptr,
                                     gad::conv_opts().stride({2, 2}).output_padding({1})),
               gad_conv_transpose2d(cx, gad::randn({4, 1, 2, 2}, 7), nullptr, &ct)));
    const int ax0[] = {0}, axl[] = {-1};
    CHECK(same(gad::sum(a, {0}), gad_sum(a, ax0, 1, 0)));
    CHECK(same(gad::mean(a, {-1}, true), gad_mean(a, axl, 1, 1)));
    CHECK(has_shape(gad::mean(a, {-1}, true), {2, 1}));
    gad::tensor m = gad_gt_scalar(a, 2.5);
    CHECK(same(gad::any(m, {0}), gad_any(m, ax0, 1, 0)));
    CHECK(same(gad::all(m, {-1}, true), gad_all(m, axl, 1, 1)));
    CHECK(has_shape(gad::all(m, {-1}, true), {2, 1}) && gad::all(m, {-1}).dtype() == GAD_BOOL);
    CHECK(same(gad::variance(a, {0}), gad_variance(a, ax0, 1, 0)));
    CHECK(same(gad::stddev(a, {0}), gad_stddev(a, ax0, 1, 0)));
    const gad_range r[] = {GAD_ALL, GAD_RANGE_STEP(GAD_NIL, GAD_NIL, -2)};
    CHECK(same(gad::slice(a, {gad::all(), gad::range(gad::nil, gad::nil, -2)}),
               gad_slice(a, r, 2)));
    CHECK(has_shape(gad::slice(a, {gad::range(1, 2)}), {1, 3}));
    gad_tensor *two[] = {a, a};
    CHECK(same(gad::cat({a, a}, 0), gad_cat(two, 2, 0)));
    CHECK(same(gad::stack({a, a}, 1), gad_stack(two, 2, 1)));
    gad_tensor *ix = nullptr; // sort, topk, sample_logits
    gad::values_indices sv = gad::sort(a, -1, true);
    CHECK(same(sv.values, gad_sort(a, -1, 1, &ix)) && same(sv.indices, ix));
    gad::values_indices tk = gad::topk(a, 2, 0, false);
    CHECK(same(tk.values, gad_topk(a, 2, 0, 0, 1, &ix)) && same(tk.indices, ix));
    gad::unique<gad_rng> r1{gad_rng_new(4)}, r2{gad_rng_new(4)};
    gad_sample_opts so = {0.5, 2, 0.9};
    CHECK(same(gad::sample_logits(a, r1.get(), 0.5, 2, 0.9),
               gad_sample_logits(a, &so, r2.get())));
}

// The math ops' PyTorch defaults and pow's three forms.
static void math_defaults() {
    gad::scope s;
    const float xv[] = {-2.5f, -0.5f, 0.25f, 1.5f};
    gad::tensor x = gad::from_f32(xv, {4});
    CHECK(same(gad::gelu_ex(x), gad_gelu_erf(x)));
    CHECK(same(gad::gelu_ex(x, "tanh"), gad_gelu(x)));
    CHECK(same(gad::elu(x), gad_elu(x, 1.0)));
    CHECK(same(gad::hardtanh(x), gad_hardtanh(x, -1, 1)));
    CHECK(same(gad::pow(x, x), gad_pow(x, x)));
    CHECK(same(gad::pow(x, 2.0), gad_pow_scalar(x, 2.0)));
    CHECK(same(gad::pow(2.0, x), gad_exp2(x)));
}

extern "C" int gad_test_register_device(void); // test_device_shim.c

// The scalar operators make their rank-0 tensor on t's device and in t's
// dtype, whatever the thread's default device is, and leave the default
// as it was; each gives what the C expression on t's device gives.
static void scalars_follow_the_device() {
    int td = gad_test_register_device();
    CHECK(td > 0);
    if (td <= 0) return;
    gad::scope s;
    gad::tensor a = gad::from_f32(av, {2, 3});
    gad::tensor t{gad_to_device(a, td)};
    CHECK(gad_device_of(t) == td && gad_default_device() == GAD_CPU);
    gad::tensor cpu_of[] = {gad::tensor{gad_to_device(t / 2.0, GAD_CPU)},
                            gad::tensor{gad_to_device(2.0 - t, GAD_CPU)},
                            gad::tensor{gad_to_device(2.0 / t, GAD_CPU)},
                            gad::tensor{gad_to_device(t * 2.0, GAD_CPU)},
                            gad::tensor{gad_to_device(t + 2.0, GAD_CPU)},
                            gad::tensor{gad_to_device(t - 2.0, GAD_CPU)}};
    CHECK(same(cpu_of[0], gad_div(a, gad_scalar_f32(2))));
    CHECK(same(cpu_of[1], gad_sub(gad_scalar_f32(2), a)));
    CHECK(same(cpu_of[2], gad_div(gad_scalar_f32(2), a)));
    CHECK(same(cpu_of[3], gad_mul_scalar(a, 2)));
    CHECK(same(cpu_of[4], gad_add_scalar(a, 2)));
    CHECK(same(cpu_of[5], gad_add_scalar(a, -2)));
    CHECK(gad_default_device() == GAD_CPU);
    // the other way round: a CPU tensor while the default is the device
    gad_set_default_device(td);
    CHECK(same(a / 2.0, gad_div(a, gad::tensor{gad_to_device(gad_scalar_f32(2), GAD_CPU)})));
    CHECK(gad_device_of(2.0 - a) == GAD_CPU && gad_default_device() == td);
    gad_set_default_device(GAD_CPU);
    // and the dtype: an f64 tensor on the device
    const double dv[] = {1, 2};
    gad::tensor d{gad_to_device(gad::from_f64(dv, {2}), td)};
    gad::tensor q = 1.0 / d;
    CHECK(q.dtype() == GAD_F64 && gad_device_of(q) == td);
}

// gad::unique has a deleter for every type with a _free (compile_headers.sh
// checks the list against gad.h); each frees what it holds.
static void unique_objects() {
    const int64_t base = live();
    {
        gad::unique<gad_rng> r{gad_rng_new(1)};
        gad::unique<gad_params> ps{gad_params_new()};
        gad::unique<gad_sampler> sm{gad_sampler_new(10, 2, 1, nullptr)};
        CHECK(r && ps && sm);
    }
    CHECK(live() == base);
}

static void ownership() {
    const int64_t base = live();
    operators_and_lists();
    CHECK(live() == base); // the scope freed all of it
    {
        gad::owned x{gad::from_f32(av, {2, 3})};
        {
            // No scope open: each result is the caller's, and the rank-0
            // tensors the scalar operators make are gone already.
            gad::owned q{x / 2.0}, r{2.0 - x}, p{1.0 / x};
            CHECK(live() == base + 4);
            gad::owned q2 = q;              // a copy retains
            gad::owned q3 = std::move(q2);  // a move transfers
            CHECK(q3.get() == q.get() && q2.get() == nullptr);
            CHECK(live() == base + 4);
        }
        CHECK(live() == base + 1);
        gad_release(gad::owned{gad_retain(x)}.release());
        CHECK(live() == base + 1);
    }
    CHECK(live() == base);
    {
        gad::scope outer;
        gad_tensor *kept;
        {
            gad::scope inner;
            kept = gad_keep(gad::zeros({3}) / 2.0);
        }
        CHECK(kept && live() == base + 1); // handed to the outer scope
        gad::no_grad ng;
        CHECK(!gad_grad_enabled());
    }
    CHECK(gad_grad_enabled());
    CHECK(live() == base);
}

static void errors() {
    const int64_t base = live();
#ifndef GAD_HPP_NO_EXCEPTIONS
    bool threw = false;
    try {
        gad::scope s;
        gad::tensor bad = gad::zeros({2, 3}) + gad::zeros({4});
        (void)bad;
    } catch (const gad::error &e) {
        threw = true;
        CHECK(e.kind() == GAD_ERR_SHAPE);
        CHECK(std::strcmp(e.record().op, "add") == 0);
        CHECK(std::strstr(e.what(), "[2,3]") && std::strstr(e.what(), "[4]"));
    }
    CHECK(threw);
    CHECK(gad_last_error() == nullptr); // the error went into the exception
    CHECK(live() == base);              // and the scope freed the operands

    threw = false;
    try {
        gad::scope s;
        gad::check(gad_mean_all(gad_square(gad_reshape(gad::zeros({3}), nullptr, 2))));
    } catch (const gad::error &e) {
        threw = e.kind() == GAD_ERR_DOMAIN || e.kind() == GAD_ERR_SHAPE;
        CHECK(std::strcmp(e.record().op, "reshape") == 0); // the first error
    }
    CHECK(threw);
    threw = false;
    try {
        gad::check(gad_read_f32(nullptr, nullptr, 0));
    } catch (const gad::error &e) {
        threw = e.kind() != GAD_OK;
    }
    CHECK(threw);
    threw = false;
    try {
        gad::check(static_cast<gad_tensor *>(nullptr)); // nothing recorded
    } catch (const gad::error &e) {
        threw = e.kind() == GAD_ERR_DOMAIN && std::strlen(e.what()) > 0;
    }
    CHECK(threw);
    CHECK(gad_last_error() == nullptr);
#else
    {
        gad::scope s;
        gad::tensor bad = gad::zeros({2, 3}) + gad::zeros({4});
        CHECK(bad.get() == nullptr);
        const gad_error *e = gad_last_error();
        CHECK(e && e->kind == GAD_ERR_SHAPE && std::strcmp(e->op, "add") == 0);
        CHECK(gad::check(bad.get()) == nullptr);
        CHECK(gad::check(GAD_ERR_IO) == GAD_ERR_IO);
        gad::tensor worse = bad * 2.0 - 1.0; // NULL passes through
        CHECK(worse.get() == nullptr && gad_last_error()->kind == GAD_ERR_SHAPE);
        gad_clear_error();
    }
    CHECK(live() == base);
#endif
}

// The attention wrappers (issue 27): the C calls' bits, with PyTorch's
// defaults filled in.
static void attention_wrappers() {
    gad::scope s;
    gad::tensor q = gad::full({1, 2, 3, 4}, GAD_F32, 0.5), k = gad::ones({1, 2, 5, 4});
    gad::tensor v = gad::full({1, 2, 5, 4}, GAD_F32, 2.0);
    gad::tensor a = gad::scaled_dot_product_attention(q, k, v, gad::tensor(), true);
    gad::tensor b = gad_scaled_dot_product_attention(q, k, v, nullptr, 1, 0, 0, nullptr);
    CHECK(same(a, b));
    gad::tensor r = gad::rope(q), r2 = gad_rope(q, nullptr, 10000, 0);
    CHECK(same(r, r2));
    CHECK(gad::sinusoidal_positions(3, 4).numel() == 12);
}

/* ---- normalization (issue 28): the wrappers call the C functions with
 * PyTorch's defaults */
static void normalization() {
    gad::scope s;
    const float xs[] = {1, 2, 3, 4, 5, 7, 6, 0};
    gad::tensor x = gad::from_f32(xs, {4, 2});
    gad::tensor rm = gad::zeros({2}), rv = gad::ones({2});
    CHECK(same(gad::batch_norm(x, rm, rv, nullptr, nullptr, true),
               gad_batch_norm(x, nullptr, nullptr, nullptr, nullptr, 1, 0.1, 1e-5)));
    CHECK(same(gad::batch_norm(x, rm, rv), gad_batch_norm(x, rm, rv, nullptr, nullptr, 0, 0.1, 1e-5)));
    gad::tensor x3 = gad::reshape(x, {1, 2, 4});
    CHECK(same(gad::group_norm(x3, 1), gad_group_norm(x3, 1, nullptr, nullptr, 1e-5)));
    CHECK(same(gad::instance_norm(x3), gad_instance_norm(x3, nullptr, nullptr, nullptr, nullptr, 1,
                                                         0.1, 1e-5)));
}

int main() {
    math_defaults();
    ownership();
    attention_wrappers();
    normalization();
    errors();
    scalars_follow_the_device();
    unique_objects();
    if (failures) {
        std::fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
#ifndef GAD_HPP_NO_EXCEPTIONS
    std::puts("gad.hpp (exceptions): ok");
#else
    std::puts("gad.hpp (status codes): ok");
#endif
    return 0;
}
