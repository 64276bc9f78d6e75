/* mlp.c: a tiny multi-layer perceptron (3 -> 4 ReLU -> 1) fitted to two
 * points by plain SGD (SPEC 6.1).
 *
 * It shows the usual shape of a training loop in gad:
 *   - the parameters live in a named set (gad_params), which owns them;
 *   - each step opens a scope, runs the forward pass, asks for the
 *     gradients of the set and hands them to an optimizer made over the
 *     set, which updates the parameters in place;
 *   - gad_scope_end frees everything the step made.
 *
 * Success: the loss at step 40 is below 1e-4. */
#include <stdio.h>
#include <stdlib.h>

#include "gad.h"

/* Stop with gad's error message if an op failed (rule 3 of gad.h: a failing
 * op returns NULL and records the first error of the thread). */
static void check(int ok) {
    if (!ok || gad_last_error()) {
        const gad_error *e = gad_last_error();
        fprintf(stderr, "mlp: %s\n", e ? e->text : "unexpected NULL");
        exit(1);
    }
}

int main(void) {
    /* The data: two inputs of 3 features and their targets. */
    const float xs[] = {0.2f, -0.1f, 0.4f, 0.3f, 0.1f, -0.2f};
    const float ys[] = {0.5f, -0.25f};
    gad_tensor *x = gad_from_f32(xs, (int64_t[]){2, 3}, 2);
    gad_tensor *y = gad_from_f32(ys, (int64_t[]){2, 1}, 2);

    /* Weights are [in, out] (gad_linear computes x @ w + b), drawn with the
     * bit-exact gad_randn so that this run starts where g's does; biases
     * start at zero. Made in a scope: once it ends, the set holds them. */
    gad_params *ps = gad_params_new();
    gad_scope_begin();
    gad_tensor *w1 = gad_params_add(ps, "l1.w", gad_randn((int64_t[]){3, 4}, 2, 1));
    gad_tensor *b1 = gad_params_add(ps, "l1.b", gad_zeros((int64_t[]){4}, 1, GAD_F32));
    gad_tensor *w2 = gad_params_add(ps, "l2.w", gad_randn((int64_t[]){4, 1}, 2, 2));
    gad_tensor *b2 = gad_params_add(ps, "l2.b", gad_zeros((int64_t[]){1}, 1, GAD_F32));
    gad_scope_end();
    check(x && y && w1 && b1 && w2 && b2);

    gad_optim *sgd = gad_sgd_new_params(ps, NULL, 0, &(gad_sgd_opts){.lr = 0.05});
    check(sgd != NULL);

    double loss_at_40 = -1;
    for (int step = 0; step < 50; step++) {
        gad_scope_begin();
        gad_tensor *h = gad_relu(gad_linear(x, w1, b1));
        gad_tensor *pred = gad_linear(h, w2, b2);
        gad_tensor *loss = gad_mse_loss(pred, y, GAD_REDUCE_MEAN);
        gad_tensor *grads[4]; /* one per parameter of the set, in its order */
        check(gad_params_grad(ps, loss, grads) == GAD_OK);
        /* The loss printed at step s is the one before step s's update. */
        double l = gad_item(loss);
        if (step % 10 == 0) printf("step %d loss %.6e\n", step, l);
        if (step == 40) loss_at_40 = l;
        check(gad_optim_step(sgd, grads) == GAD_OK);
        gad_scope_end();
    }

    gad_optim_free(sgd);
    gad_params_free(ps); /* releases the parameters */
    gad_release(x), gad_release(y);

    if (!(loss_at_40 < 1e-4)) {
        fprintf(stderr, "mlp: FAILED: loss at step 40 is %.6e, not below 1e-4\n",
                loss_at_40);
        return 1;
    }
    printf("ok: loss at step 40 = %.3e < 1e-4\n", loss_at_40);
    return 0;
}
