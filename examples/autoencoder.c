/* autoencoder.c: squeeze the 8 rows of the 8x8 identity through a
 * 3-unit bottleneck and back (SPEC 6.4).
 *
 *     z   = tanh(x e)        e: [8, 3], the encoder
 *     rec = sigmoid(z d)     d: [3, 8], the decoder
 *
 * trained by SGD on the mean squared reconstruction error. It shows
 * gad_eye for data and a model with no biases.
 *
 * Success: the loss decreases at every printed step. */
#include <stdio.h>
#include <stdlib.h>

#include "gad.h"

static void check(int ok) {
    if (!ok || gad_last_error()) {
        const gad_error *e = gad_last_error();
        fprintf(stderr, "autoencoder: %s\n", e ? e->text : "unexpected NULL");
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
    gad_tensor *x = gad_eye(8, GAD_F32); /* 8 one-hot rows: input and target */
    gad_tensor *e = weight(8, 3, 3, 0.3);
    gad_tensor *d = weight(3, 8, 4, 0.3);
    gad_tensor *params[2] = {e, d};
    check(x && e && d);

    gad_optim *sgd = gad_sgd_new(params, 2, &(gad_sgd_opts){.lr = 0.25});
    check(sgd != NULL);

    double prev = 0;
    int ok = 1;
    for (int step = 0; step < 120; step++) {
        gad_scope_begin();
        gad_tensor *z = gad_tanh(gad_linear(x, e, NULL));
        gad_tensor *rec = gad_sigmoid(gad_linear(z, d, NULL));
        gad_tensor *loss = gad_mse_loss(rec, x, GAD_REDUCE_MEAN);
        gad_tensor *grads[2];
        check(gad_grad(loss, params, 2, grads) == GAD_OK);
        double l = gad_item(loss);
        if (step % 30 == 0) {
            printf("step %d recon %.5f\n", step, l);
            if (step > 0 && !(l < prev)) ok = 0;
            prev = l;
        }
        check(gad_optim_step(sgd, grads) == GAD_OK);
        gad_scope_end();
    }

    gad_optim_free(sgd);
    gad_release(e), gad_release(d), gad_release(x);

    if (!ok) {
        fprintf(stderr,
                "autoencoder: FAILED: the loss did not decrease at every printed step\n");
        return 1;
    }
    printf("ok: the loss decreased at every printed step (final %.5f)\n", prev);
    return 0;
}
