/* autoencoder.c: squeeze the 8 rows of the 8x8 identity through a
 * 3-unit bottleneck and back (SPEC 6.4).
 *
 *     z   = tanh(x e)        e: [8, 3], the encoder
 *     rec = sigmoid(z d)     d: [3, 8], the decoder
 *
 * trained by SGD on the mean squared reconstruction error. It shows
 * gad_eye for data, a model with no biases in a named parameter set, and
 * the accumulating style: gad_backward fills the parameters' gradient
 * slots, the optimizer reads them, gad_optim_zero_grad empties them.
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

/* randn(shape, seed) * scale. */
static gad_tensor *weight(int64_t in, int64_t out, uint64_t seed, double scale) {
    return gad_mul_scalar(gad_randn((int64_t[]){in, out}, 2, seed), scale);
}

int main(void) {
    gad_tensor *x = gad_eye(8, GAD_F32); /* 8 one-hot rows: input and target */
    gad_params *ps = gad_params_new();
    gad_scope_begin(); /* the set keeps what it holds */
    gad_tensor *e = gad_params_add(ps, "encoder", weight(8, 3, 3, 0.3));
    gad_tensor *d = gad_params_add(ps, "decoder", weight(3, 8, 4, 0.3));
    gad_scope_end();
    check(x && e && d);

    gad_optim *sgd = gad_sgd_new_params(ps, NULL, 0, &(gad_sgd_opts){.lr = 0.25});
    check(sgd != NULL);

    double prev = 0;
    int ok = 1;
    for (int step = 0; step < 120; step++) {
        gad_scope_begin();
        gad_tensor *z = gad_tanh(gad_linear(x, e, NULL));
        gad_tensor *rec = gad_sigmoid(gad_linear(z, d, NULL));
        gad_tensor *loss = gad_mse_loss(rec, x, GAD_REDUCE_MEAN);
        check(gad_backward(loss) == GAD_OK); /* into the slots */
        double l = gad_item(loss);
        if (step % 30 == 0) {
            printf("step %d recon %.5f\n", step, l);
            if (step > 0 && !(l < prev)) ok = 0;
            prev = l;
        }
        check(gad_optim_step(sgd, NULL) == GAD_OK); /* NULL: read the slots */
        gad_optim_zero_grad(sgd);
        gad_scope_end();
    }

    gad_optim_free(sgd);
    gad_params_free(ps);
    gad_release(x);

    if (!ok) {
        fprintf(stderr,
                "autoencoder: FAILED: the loss did not decrease at every printed step\n");
        return 1;
    }
    printf("ok: the loss decreased at every printed step (final %.5f)\n", prev);
    return 0;
}
