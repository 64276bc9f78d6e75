/* adamw_sine.c: fit y = sin(x) on [-pi, pi) with a 1 -> 32 tanh -> 32 tanh
 * -> 1 network and the AdamW optimizer (SPEC 6.2).
 *
 * It shows gad_adamw_new with explicit hyperparameters. Note that a 0 field
 * of gad_adamw_opts means "the default", so weight decay 0 is asked for
 * with no_weight_decay = 1.
 *
 * Success: the mean squared error at step 160 is below 1e-3. (AdamW
 * oscillates, so the loss is not monotone; only that step is judged.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gad.h"

#define N 64 /* sample points */

static void check(int ok) {
    if (!ok || gad_last_error()) {
        const gad_error *e = gad_last_error();
        fprintf(stderr, "adamw_sine: %s\n", e ? e->text : "unexpected NULL");
        exit(1);
    }
}

/* A weight [in, out]: randn with a fixed seed, times a scale, made a leaf.
 * Made outside any scope, so the caller owns it. */
static gad_tensor *weight(int64_t in, int64_t out, uint64_t seed, double scale) {
    gad_scope_begin();
    gad_tensor *w =
        gad_keep(gad_mul_scalar(gad_randn((int64_t[]){in, out}, 2, seed), scale));
    gad_scope_end();
    return gad_requires_grad(w);
}

static gad_tensor *bias(int64_t out) {
    return gad_requires_grad(gad_zeros((int64_t[]){out}, 1, GAD_F32));
}

int main(void) {
    /* x_i = -pi + 2 pi i / 64, as a column [64, 1]; y = sin x. */
    const double pi = 3.14159265358979323846;
    float xs[N], ys[N];
    for (int i = 0; i < N; i++) {
        xs[i] = (float)(-pi + 2 * pi * i / N);
        ys[i] = (float)sin(xs[i]);
    }
    gad_tensor *x = gad_from_f32(xs, (int64_t[]){N, 1}, 2);
    gad_tensor *y = gad_from_f32(ys, (int64_t[]){N, 1}, 2);

    gad_tensor *w1 = weight(1, 32, 1, 0.4), *b1 = bias(32);
    gad_tensor *w2 = weight(32, 32, 2, 0.2), *b2 = bias(32);
    gad_tensor *w3 = weight(32, 1, 3, 0.2), *b3 = bias(1);
    gad_tensor *params[6] = {w1, b1, w2, b2, w3, b3};
    check(x && y && w1 && b1 && w2 && b2 && w3 && b3);

    gad_adamw_opts opts = {
        .lr = 0.01, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .no_weight_decay = 1};
    gad_optim *adamw = gad_adamw_new(params, 6, &opts);
    check(adamw != NULL);

    double mse_at_160 = -1;
    for (int step = 0; step < 200; step++) {
        gad_scope_begin();
        gad_tensor *h1 = gad_tanh(gad_linear(x, w1, b1));
        gad_tensor *h2 = gad_tanh(gad_linear(h1, w2, b2));
        gad_tensor *pred = gad_linear(h2, w3, b3);
        gad_tensor *loss = gad_mse_loss(pred, y, GAD_REDUCE_MEAN);
        gad_tensor *grads[6];
        check(gad_grad(loss, params, 6, grads) == GAD_OK);
        double mse = gad_item(loss); /* before this step's update */
        if (step % 40 == 0) printf("step %d mse %.5f\n", step, mse);
        if (step == 160) mse_at_160 = mse;
        check(gad_optim_step(adamw, grads) == GAD_OK);
        gad_scope_end();
    }

    gad_optim_free(adamw);
    for (int i = 0; i < 6; i++) gad_release(params[i]);
    gad_release(x), gad_release(y);

    if (!(mse_at_160 < 1e-3)) {
        fprintf(stderr, "adamw_sine: FAILED: mse at step 160 is %.5f, not below 1e-3\n",
                mse_at_160);
        return 1;
    }
    printf("ok: mse at step 160 = %.3e < 1e-3\n", mse_at_160);
    return 0;
}
