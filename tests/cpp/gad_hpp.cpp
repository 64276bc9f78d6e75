// SPDX-License-Identifier: MIT
// gad.hpp, every part of it instantiated, for tests/cpp/compile_headers.sh
// (with exceptions, and with -fno-exceptions, where gad::check returns its
// argument). tests/cpp/test_hpp.cpp checks what it computes.
#include "gad.hpp"

gad::tensor all_of_it(gad::tensor a, gad::tensor b) {
    gad::scope s;
    gad::no_grad ng;
    const float f[] = {1, 2};
    const double d[] = {1, 2};
    const int64_t i[] = {1, 2};
    gad::tensor t = gad::from_f32(f, {2}) + gad::from_f64(d, {2}) * gad::from_i64(i, {2});
    t = t - gad::zeros({2}) / gad::ones({2}, GAD_F32) + gad::full({2}, GAD_F32, 1.5);
    t = -t + 1.0 + (2.0 + t) - 3.0 + (4.0 - t) * 5.0 + 6.0 * t / 7.0 + 8.0 / t;
    t = gad::reshape(t, {2, -1}) + gad::view(t, {2}) + gad::broadcast_to(t, {3, 2});
    t = gad::permute(t, {1, 0}) + gad::sum(t, {0}) + gad::mean(t, {-1}, true);
    t = gad::variance(t, {0}) + gad::stddev(t, {0}, false) + gad::randn({2}, 7);
    t = gad::slice(t, {gad::range(0, 2), gad::all(), gad::range(gad::nil, gad::nil, -1)});
    t = gad::slice(t, {GAD_RANGE(0, 1), GAD_ALL, GAD_RANGE_STEP(0, 2, 1)});
    t = gad::cat({t, a}, 0) + gad::stack({a, b}, 1);
    gad::check(gad_grad_enabled() ? GAD_OK : GAD_ERR_DOMAIN);
    gad::owned o{gad::check(gad_scalar_f32(1))};
    gad::owned o2 = o;
    gad::owned o3 = static_cast<gad::owned &&>(o2);
    o = o3;
    gad_tensor *raw = o.release();
    gad_release(raw);
    gad::unique<gad_rng> rng{gad::check(gad_rng_new(1))};
    gad::unique<gad_params> ps{gad::check(gad_params_new())};
    double sum = t.item() + t.rank() + static_cast<double>(t.numel()) +
                 static_cast<int>(t.dtype());
    if (sum > 1e300) t.print();
    return gad_keep(t.get());
}

// A raw gad_tensor * on either side, gad::owned, and integer literals:
// none of these may be ambiguous with the built-in pointer operators.
gad::tensor mixed(gad_tensor *raw, gad::tensor t, gad::owned &o) {
    gad::tensor r = raw - t;
    r = t - raw;
    r = raw + t;
    r = t * raw;
    r = raw / t;
    r = o - raw;
    r = raw - o;
    r = o * o - o;
    r = 1 - t;
    r = 0 - t;
    r = t - 0;
    r = t * 0;
    r = 0.0 / t;
    r = 2 * t + 1;
    return (raw == t || t == nullptr || !t) ? r : t;
}

#ifndef GAD_HPP_NO_EXCEPTIONS
const char *what_of(const gad::error &e) { return e.kind() == GAD_OK ? "" : e.what(); }
#endif
