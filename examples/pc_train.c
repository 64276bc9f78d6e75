/* pc_train.c: a two-layer predictive-coding classifier (SPEC 6.9).
 *
 * Each training step has two phases:
 *   1. inference: the hidden activity h relaxes towards the prediction of
 *      the layer below, h <- h - 0.3 (h - tanh(x w1)), with w1 detached, so
 *      that nothing of this loop is on the tape;
 *   2. learning: with hs = stop_gradient(h) held fixed, each layer lowers
 *      its own local prediction error,
 *          E = mean((hs - tanh(x w1))^2) + mean((y - tanh(hs w2))^2),
 *      and one gad_grad gives both weight gradients at once (w1 only sees
 *      the first term, w2 only the second).
 *
 * Success: the energy decreases at every printed step. */
#include <stdio.h>
#include <stdlib.h>

#include "gad.h"

static void check(int ok) {
    if (!ok || gad_last_error()) {
        const gad_error *e = gad_last_error();
        fprintf(stderr, "pc_train: %s\n", e ? e->text : "unexpected NULL");
        exit(1);
    }
}

/* randn(shape, seed) * scale as a leaf the caller owns. */
static gad_tensor *weight(int64_t in, int64_t out, uint64_t seed, double scale) {
    gad_scope_begin();
    gad_tensor *w =
        gad_keep(gad_mul_scalar(gad_randn((int64_t[]){in, out}, 2, seed), scale));
    gad_scope_end();
    return gad_requires_grad(w);
}

int main(void) {
    const float xs[] = {0.9f, 0.1f, 0.05f, 0.1f, 0.85f, 0.1f, 0.05f, 0.1f, 0.9f};
    const float ys[] = {1, 0, 0, 1, 0, 1};
    gad_tensor *x = gad_from_f32(xs, (int64_t[]){3, 3}, 2);
    gad_tensor *y = gad_from_f32(ys, (int64_t[]){3, 2}, 2);
    gad_tensor *w1 = weight(3, 6, 1, 0.3);
    gad_tensor *w2 = weight(6, 2, 2, 0.3);
    gad_tensor *params[2] = {w1, w2};
    check(x && y && w1 && w2);

    gad_optim *sgd = gad_sgd_new(params, 2, &(gad_sgd_opts){.lr = 0.1});
    check(sgd != NULL);

    double prev = 0;
    int ok = 1;
    for (int step = 0; step < 40; step++) {
        gad_scope_begin();
        /* 1. Inference (off the tape). */
        gad_tensor *pred1 = gad_tanh(gad_matmul(x, gad_detach(w1)));
        gad_tensor *h = gad_zeros((int64_t[]){3, 6}, 2, GAD_F32);
        for (int it = 0; it < 8; it++)
            h = gad_sub(h, gad_mul_scalar(gad_sub(h, pred1), 0.3));
        gad_tensor *hs = gad_stop_gradient(h);

        /* 2. Learning: the sum of the two local energies. */
        gad_tensor *e1 =
            gad_mean_all(gad_square(gad_sub(hs, gad_tanh(gad_matmul(x, w1)))));
        gad_tensor *e2 =
            gad_mean_all(gad_square(gad_sub(y, gad_tanh(gad_matmul(hs, w2)))));
        gad_tensor *energy = gad_add(e1, e2);
        gad_tensor *grads[2];
        check(gad_grad(energy, params, 2, grads) == GAD_OK);
        double e = gad_item(energy);
        if (step % 10 == 0) {
            printf("step %d energy %.4f\n", step, e);
            if (step > 0 && !(e < prev)) ok = 0;
            prev = e;
        }
        check(gad_optim_step(sgd, grads) == GAD_OK);
        gad_scope_end();
    }

    gad_optim_free(sgd);
    gad_release(w1), gad_release(w2), gad_release(x), gad_release(y);

    if (!ok) {
        fprintf(stderr,
                "pc_train: FAILED: the energy did not decrease at every printed step\n");
        return 1;
    }
    printf("ok: the energy decreased at every printed step (final %.4f)\n", prev);
    return 0;
}
