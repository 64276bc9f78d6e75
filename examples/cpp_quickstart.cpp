// cpp_quickstart.cpp: autodiff.c in C++ with gad.hpp: fit y = 2x + 1.
#include <cmath>
#include <cstdio>

#include "gad.hpp"

int main() try {
    const float xs[] = {0, 1, 2, 3}, ys[] = {1, 3, 5, 7};
    gad::owned x{gad::from_f32(xs, {4})}, y{gad::from_f32(ys, {4})};
    // The parameters: leaves made outside any scope, released by gad::owned.
    gad::owned w{gad::check(gad_requires_grad(gad_scalar_f32(0)))};
    gad::owned b{gad::check(gad_requires_grad(gad_scalar_f32(0)))};
    gad_tensor *params[2] = {w, b};
    gad_sgd_opts opts{}; // no compound literals in C++: name the options
    opts.lr = 0.1;
    gad::unique<gad_optim> sgd{gad::check(gad_sgd_new(params, 2, &opts))};

    for (int step = 0; step <= 300; step++) {
        gad::scope scope; // everything made in this step is freed at its end
        gad::tensor loss = gad::check(gad_mean_all(gad_square(x * w + b - y)));
        gad_tensor *grads[2];
        gad::check(gad_grad(loss, params, 2, grads));
        gad::check(gad_optim_step(sgd.get(), grads));
        if (step % 100 == 0) std::printf("step %3d  loss %.3e\n", step, loss.item());
    }
    double wv = w.item(), bv = b.item();
    std::printf("w = %.4f  b = %.4f\n", wv, bv);
    return std::fabs(wv - 2) < 1e-3 && std::fabs(bv - 1) < 1e-3 ? 0 : 1;
} catch (const gad::error &e) { // what gad::check throws
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
}
